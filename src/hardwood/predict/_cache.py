"""Generated kernel sources: written once into a cache folder and imported from there, so
that Numba's ``cache=True`` can keep their machine code on disk between processes.

The folder is ``$HARDWOOD_CACHE_DIR`` if set, else ``~/.cache/hardwood`` (or a temporary folder
when that is not writable). A file is named by the hash of its source, so a change of the
generator never reuses stale code.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile

_LOADED = {}


def cache_dir() -> str:
    d = os.environ.get("HARDWOOD_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                             "hardwood")
    try:
        os.makedirs(d, exist_ok=True)
        probe = os.path.join(d, f".probe{os.getpid()}")
        with open(probe, "w"):
            pass
        os.remove(probe)
        return d
    except OSError:
        d = os.path.join(tempfile.gettempdir(), f"hardwood-cache-{os.getuid() if hasattr(os, 'getuid') else 0}")
        os.makedirs(d, exist_ok=True)
        return d


def load_source(prefix: str, source: str):
    """Import ``source`` as a module kept under the cache folder; returns the module."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    name = f"_hardwood_gen_{prefix}_{digest}"
    mod = _LOADED.get(name)
    if mod is not None:
        return mod
    sub = os.path.join(cache_dir(), "kernels")
    os.makedirs(sub, exist_ok=True)
    path = os.path.join(sub, name + ".py")
    if not os.path.exists(path):
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    _LOADED[name] = mod
    return mod
