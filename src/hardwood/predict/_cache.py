"""Generated kernel sources: written once into a cache folder and imported from there, so
that Numba's ``cache=True`` can keep their machine code on disk between processes.

The folder is ``$HARDWOOD_CACHE_DIR`` if set, else ``~/.cache/hardwood``; the sources go to
its ``kernels`` subfolder (Numba's machine code to ``kernels/__pycache__``). A file is named
by the hash of its source and of the sources of the hardwood modules it imports, with their
own hardwood imports: a change of the generator never reuses stale code, and neither does a
new hardwood whose generated text is the same. Numba compiles the imported
functions into the kernel's machine code but checks only the kernel file's own stamp, so
without them an upgrade that changed ``transform_inplace`` kept the old transform.

Nothing is imported from a folder that someone else could write to: the folder, ``kernels``
and ``kernels/__pycache__`` (where Numba keeps pickled index files, which it unpickles) must
be directories owned by the current user and not writable by group or others. Folders this
module creates get mode 0o700 (whatever the umask) and files 0o600. When the configured
folder fails a check (or cannot be written), hardwood warns once (:class:`CacheWarning`) and
falls back to ``<tempdir>/hardwood-cache-<uid>`` when that passes the same checks, else to a
fresh private folder (``tempfile.mkdtemp``, removed at exit, so nothing is cached between
processes). The code that runs is always the generated source held in memory: the file is
written for Numba's cache (and tracebacks) and is only used when it is a regular file owned
by the user, not writable by group or others, holding exactly that source; otherwise it is
rewritten first.
"""
from __future__ import annotations

import ast
import atexit
import hashlib
import importlib.util
import os
import re
import shutil
import stat
import sys
import tempfile
import warnings

from ..atomic_file import atomic_open, unique_sibling

_LOADED = {}
_STAMPS = {}  # module name -> its stamp and the hardwood modules it imports
_DIRS = {}  # (HARDWOOD_CACHE_DIR, home, uid) -> (kernels folder, its owner's uid)
_WARNED = []
_POSIX = hasattr(os, "getuid")


class CacheWarning(UserWarning):
    """The kernel cache folder could not be used safely; hardwood uses another one."""


def _uid():
    return os.getuid() if _POSIX else None


def _unsafe_dir(path, uid):
    """Why ``path`` may not hold code that we run, or None when it may: a directory owned
    by ``uid``, not writable by group or others."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"cannot inspect it ({e.strerror or e})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if not _POSIX:
        return None
    if st.st_uid != uid:
        return f"it is owned by uid {st.st_uid}, not by the current user (uid {uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"it is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}; "
                "remove it, and hardwood makes it again with mode 700)")
    return None


def _private_dir(path):
    """Create ``path`` (and its parents) when it does not exist, the last level with mode
    0o700 whatever the umask."""
    if os.path.lexists(path):
        return
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:  # made meanwhile (another process): checked like any other
        return
    os.chmod(path, 0o700)


def _prepare(base, uid):
    """Make ``base``, ``base/kernels`` and ``base/kernels/__pycache__`` (mode 0o700 when
    created here) and check them; returns (kernels folder, None) or (None, why not)."""
    try:
        _private_dir(base)
    except OSError as e:
        return None, f"cannot create {base!r} ({e.strerror or e})"
    # from here on the resolved path: a link (say in the shared temp folder) that someone
    # swaps after the checks cannot redirect us
    base = os.path.realpath(base)
    kernels = os.path.join(base, "kernels")
    pycache = os.path.join(kernels, "__pycache__")
    for d in (base, kernels, pycache):
        try:
            _private_dir(d)
        except OSError as e:
            return None, f"cannot create {d!r} ({e.strerror or e})"
        why = _unsafe_dir(d, uid)
        if why:
            return None, f"{d!r} is unsafe: {why}"
    probe = unique_sibling(os.path.join(pycache, ".probe"), "")  # (threads: one each)
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        return None, f"{base!r} is not writable ({e.strerror or e})"
    return kernels, None


def _warn_once(msg):
    if not _WARNED:
        _WARNED.append(msg)
        warnings.warn(msg, CacheWarning, stacklevel=4)


def _configured_dir():
    return os.environ.get("HARDWOOD_CACHE_DIR") or os.path.join(os.path.expanduser("~"),
                                                                ".cache", "hardwood")


def _kernel_dir():
    """(the kernels folder to use, the uid that must own what is in it)."""
    uid = _uid()
    key = (os.environ.get("HARDWOOD_CACHE_DIR"), os.path.expanduser("~"), uid)
    got = _DIRS.get(key)
    if got is not None and _unsafe_dir(got[0], got[1]) is None:
        return got
    base = _configured_dir()
    kernels, why = _prepare(base, uid)
    if kernels is None:
        shared = os.path.join(tempfile.gettempdir(), f"hardwood-cache-{uid if _POSIX else 0}")
        kernels, why2 = (None, None) if os.path.abspath(shared) == os.path.abspath(base) \
            else _prepare(shared, uid)
        if kernels is not None:
            _warn_once(f"hardwood: not using the kernel cache folder {base!r}: {why}; using "
                       f"{shared!r} instead")
        else:
            priv = tempfile.mkdtemp(prefix="hardwood-cache-")
            atexit.register(shutil.rmtree, priv, ignore_errors=True)
            owner = os.stat(priv).st_uid if _POSIX else None  # ours: mkdtemp just made it
            kernels, why3 = _prepare(priv, owner)
            if kernels is None:
                raise OSError(f"hardwood: no safe folder for generated kernels: {why3}")
            _warn_once(f"hardwood: not using the kernel cache folder {base!r}: {why}"
                       + (f"; nor {shared!r}: {why2}" if why2 else "")
                       + f"; compiling in the private folder {priv!r} (removed at exit, so "
                         "kernels are not cached between runs)")
            uid = owner
    _DIRS[key] = (kernels, uid)
    return kernels, uid


def cache_dir() -> str:
    """The folder holding the ``kernels`` subfolder in use (checked as the module docstring
    says; a fallback folder when the configured one is unsafe)."""
    return os.path.dirname(_kernel_dir()[0])


def _file_ok(path, data: bytes, uid) -> bool:
    """``path`` is a regular file (not a link) owned by ``uid``, not writable by group or
    others, holding exactly ``data``."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    if _POSIX and (st.st_uid != uid or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(len(data) + 1) == data
    except OSError:
        return False


def _write(path, data: bytes):
    """Write ``data`` to ``path`` atomically, mode 0o600."""
    with atomic_open(path, "wb", private=True) as fh:
        fh.write(data)


def _clean_numba_cache(pycache, name, uid):
    """Remove the files of module ``name`` in ``pycache`` (Numba's index and machine code,
    which Numba unpickles) that are not regular files owned by ``uid`` and not writable by
    group or others, so that nothing planted there is ever loaded."""
    if not _POSIX:
        return
    try:
        entries = [e for e in os.scandir(pycache) if e.name.startswith(name + ".")]
    except OSError:
        return
    for e in entries:
        try:
            st = os.lstat(e.path)
            if (stat.S_ISREG(st.st_mode) and st.st_uid == uid
                    and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
                continue
            os.remove(e.path)
        except OSError:
            raise OSError(f"hardwood: cannot remove the unsafe cache file {e.path!r}") from None


def _module_stamp(name):
    """``(stamp, imports)`` of hardwood module ``name``: the hash of its source, and the
    hardwood modules it imports (absolute or relative imports, read from that source)."""
    got = _STAMPS.get(name)
    if got is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        path = spec.origin if spec is not None else None
        if path is None or not os.path.isfile(path):  # a name, not a module (from . import f)
            _STAMPS[name] = ("", [])
            return _STAMPS[name]
        with open(path, "rb") as fh:
            text = fh.read()
        tree = ast.parse(text, path)
        package = name if os.path.basename(path) == "__init__.py" else name.rpartition(".")[0]
        imports = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1]
                                    + ([base] if base else []))
                if base.split(".")[0] == "hardwood":
                    imports.add(base)
                    if node.module is None:  # from . import x: x may be a module
                        imports.update(f"{base}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                imports.update(a.name for a in node.names if a.name.split(".")[0] == "hardwood")
        got = _STAMPS[name] = (f"{name}:{hashlib.sha256(text).hexdigest()[:24]}",
                               sorted(imports))
    return got


def library_stamp(source: str) -> str:
    """The stamps of the hardwood modules that ``source`` imports, with all the hardwood
    modules those import in turn: what Numba compiles into a generated kernel."""
    todo = re.findall(r"^\s*from\s+(hardwood(?:\.\w+)*)\s+import", source, re.M)
    seen, stamps = set(), []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        stamp, imports = _module_stamp(name)
        if stamp:
            stamps.append(stamp)
        todo.extend(imports)
    return "\n".join(sorted(stamps))


def load_source(prefix: str, source: str):
    """Import ``source`` as a module kept under the cache folder; returns the module."""
    h = hashlib.sha256(source.encode())
    stamp = library_stamp(source)
    if stamp:  # (a source importing nothing of hardwood is named by its text alone)
        h.update(b"\0" + stamp.encode())
    digest = h.hexdigest()[:24]
    name = f"_hardwood_gen_{prefix}_{digest}"
    mod = _LOADED.get(name)
    if mod is not None:
        return mod
    kernels, uid = _kernel_dir()
    path = os.path.join(kernels, name + ".py")
    data = source.encode("utf-8")
    written = not _file_ok(path, data, uid)
    if written:
        _write(path, data)
        if not _file_ok(path, data, uid):
            raise OSError(f"hardwood: cannot write the generated kernel {path!r} safely")
    _clean_numba_cache(os.path.join(kernels, "__pycache__"), name, uid)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        # run the source we generated, never what the file holds (checked above anyway)
        exec(compile(source, path, "exec"), mod.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    # whether the source is new on disk (its kernels compile on first call): a caller that
    # warns of a long compile pops it, so that it warns once
    mod._hardwood_new_source = written
    _LOADED[name] = mod
    return mod


def read_state(name: str):
    """The text of the small state file ``name`` in the cache folder (``write_state``), or
    None when it is missing or fails the checks of a generated source (a regular file owned
    by the user, not writable by group or others)."""
    try:
        kernels, uid = _kernel_dir()
        path = os.path.join(os.path.dirname(kernels), name)
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
            return None
        if _POSIX and (st.st_uid != uid or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
            return None
        with open(path, "rb") as fh:
            return fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return None


def write_state(name: str, text: str):
    """Keep ``text`` in the state file ``name`` of the cache folder (written atomically, mode
    0o600); a folder that cannot be written is skipped silently (the state is a hint)."""
    try:
        kernels, _ = _kernel_dir()
        _write(os.path.join(os.path.dirname(kernels), name), text.encode("utf-8"))
    except OSError:
        pass
