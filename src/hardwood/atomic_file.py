"""Files written whole or not at all: model files, reports, pages, the kernel cache.

Each write goes to a temporary file of its own beside the target, then replaces the target
in one step (``os.replace``), so a reader never sees half a file and a failed write leaves the
old one. The temporary name is unique to the call, not only to the process: threads of one
process writing one path at once shared ``{path}.tmp{pid}``, and one thread's replace took
the file from under another (``FileNotFoundError`` in 1-3 of 4 threads predicting through a
new codegen kernel, or saving one model).
"""
from __future__ import annotations

import contextlib
import os
import uuid

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def unique_sibling(path, tag="tmp") -> str:
    """A name beside ``path`` that no other call uses: ``{path}.{tag}{pid}-{random}``."""
    return f"{os.fspath(path)}.{tag}{os.getpid()}-{uuid.uuid4().hex[:12]}"


@contextlib.contextmanager
def atomic_open(path, mode="wb", private=False, encoding=None):
    """``open(path, mode)`` that writes a temporary file of its own and moves it onto
    ``path`` when the block ends without an error (removed otherwise). ``private``: mode
    0o600 (the kernel cache); else the umask's, as ``open``."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files: mode 'w' or 'wb', got {mode!r}")
    tmp = unique_sibling(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW,
                 0o600 if private else 0o666)
    try:
        if private and hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)  # whatever the umask
        with os.fdopen(fd, mode, encoding=encoding) as fh:
            fd = None
            yield fh
        os.replace(tmp, path)
    except BaseException:
        if fd is not None:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
