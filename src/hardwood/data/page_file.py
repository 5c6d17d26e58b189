"""Binned pages on disk: one file per page, checked on every read.

A page holds a run of rows of the binned matrix twice, row-major (n, d) for histograms and
column-major (d, n) for the partition (the Booster paper's redundant layouts), after a
header::

    magic  b"HWPAGE\\x00\\x01"      8 bytes
    format version                 uint32 (FORMAT_VERSION)
    dtype code                     uint32 (1: uint8, 2: uint16)
    rows, columns, first row       3 x uint64
    payload bytes                  uint64
    row-major checksum             32 bytes (BLAKE2b-256 of the row-major half)
    column-major checksum          32 bytes (BLAKE2b-256 of the column-major half)
    key                            32 bytes (what the pages were built from: see PageSet)

Each layout has its own checksum, so a pass that needs only the row-major bins (the update
of every row's prediction, the gather of a sample) reads and checks only that half.

A file that is truncated, altered, of another format or built from other data raises
:class:`PageError` naming the file and what is wrong; nothing is read past a bad header.
"""
from __future__ import annotations

import hashlib
import os
import struct

import numpy as np

from ..atomic_file import atomic_open

MAGIC = b"HWPAGE\x00\x01"
FORMAT_VERSION = 2  # 2: a checksum per layout
_HEAD = struct.Struct("<8sII4Q32s32s32s")
_DTYPES = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16)}
_CODES = {v: k for k, v in _DTYPES.items()}


class PageError(ValueError):
    """A page file that cannot be used: corrupt, truncated, or from other data."""


def _digest(*parts) -> bytes:
    h = hashlib.blake2b(digest_size=32)
    for p in parts:
        h.update(p)
    return h.digest()


def write_page(path, bins_row: np.ndarray, first_row: int, key: bytes, bins_col=None):
    """Write rows ``first_row ..`` of a binned matrix (``bins_row``: (n, d) uint8/uint16;
    ``bins_col``: the same bins column-major (d, n), made here when None) to ``path``,
    atomically (a temporary file renamed). Both layouts are written from where they lie:
    no copy of the page is made."""
    bins_row = np.ascontiguousarray(bins_row)
    if bins_row.dtype not in _CODES or bins_row.ndim != 2:
        raise TypeError(f"a page holds a 2-D uint8 or uint16 matrix, got {bins_row.dtype} "
                        f"{bins_row.shape}")
    n, d = bins_row.shape
    bins_col = (np.ascontiguousarray(bins_row.T) if bins_col is None
                else np.ascontiguousarray(bins_col, dtype=bins_row.dtype))
    if bins_col.shape != (d, n):
        raise ValueError(f"bins_col has shape {bins_col.shape}, expected {(d, n)}")
    parts = [memoryview(bins_row).cast("B"), memoryview(bins_col).cast("B")]
    head = _HEAD.pack(MAGIC, FORMAT_VERSION, _CODES[bins_row.dtype], n, d, int(first_row),
                      sum(p.nbytes for p in parts), _digest(parts[0]), _digest(parts[1]), key)
    try:
        with atomic_open(path, "wb") as fh:
            fh.write(head)
            for p in parts:
                fh.write(p)
    except OSError as e:  # (disk full: a bare "No space left on device", naming no file)
        raise OSError(e.errno, f"cannot write page {path!r}: {e.strerror or e}; free space "
                               "there or give the Dataset another cache_dir") from None


def _head(path):
    """The parsed header of ``path`` and the file's length."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_HEAD.size)
            size = os.fstat(fh.fileno()).st_size
    except OSError as e:
        raise PageError(f"page {path!r} cannot be read: {e.strerror or e}") from None
    return _parse(path, raw), size


def stale_page(path, missing=False):
    """The PageError of a page that is not the one a Dataset wrote (``missing``: gone)."""
    what = "is gone" if missing else "was built from other data or other parameters"
    return PageError(f"page {path!r} {what}: another Dataset has rebuilt its cache_dir since "
                     "(give each Dataset its own cache_dir), or the folder was changed by hand")


def read_header(path):
    """(dtype, rows, columns, first row, key) of the page file ``path``."""
    return _head(path)[0][:5]


def page_ok(path, key: bytes) -> bool:
    """Whether ``path`` holds a page of this format, built with ``key``, whole: the length
    its header gives and both checksums (a cache whose page only had a byte changed was
    taken again by every later Dataset, and every training failed on it)."""
    try:
        read_page(path, key)
    except PageError:
        return False
    return True


def _parse(path, raw):
    if len(raw) < _HEAD.size:
        raise PageError(f"page {path!r} is truncated: {len(raw)} bytes, shorter than its "
                        f"{_HEAD.size}-byte header")
    magic, version, code, n, d, first, size, d_rows, d_cols, key = _HEAD.unpack(
        raw[:_HEAD.size])
    if magic != MAGIC:
        raise PageError(f"{path!r} is not a hardwood page (bad magic {magic!r})")
    if version != FORMAT_VERSION:
        raise PageError(f"page {path!r} has format version {version}; this hardwood reads "
                        f"version {FORMAT_VERSION} (rebuild the page cache)")
    if code not in _DTYPES:
        raise PageError(f"page {path!r} has an unknown dtype code {code}")
    dtype = _DTYPES[code]
    if size != 2 * n * d * dtype.itemsize:
        raise PageError(f"page {path!r}: payload of {size} bytes does not hold 2 x {n} x {d} "
                        f"{dtype} bins")
    return dtype, int(n), int(d), int(first), key, int(size), (d_rows, d_cols)


def read_page(path, key: bytes | None = None, cols: bool = True):
    """(bins_row (n, d), bins_col (d, n), first row) of the page file ``path``, checked: its
    header, its length, the checksum of each layout read and, when given, the ``key`` it was
    built with. ``cols=False`` reads only the row-major half (``bins_col`` is None)."""
    try:
        with open(path, "rb") as fh:
            size_on_disk = os.fstat(fh.fileno()).st_size
            head = fh.read(_HEAD.size)
            dtype, n, d, first, got_key, size, digests = _parse(path, head)
            if key is not None and got_key != key:
                raise stale_page(path)
            if size_on_disk - _HEAD.size != size:
                raise PageError(f"page {path!r} is truncated or padded: "
                                f"{size_on_disk - _HEAD.size} payload bytes, its header says "
                                f"{size}")
            half = size // 2
            # writable arrays: Numba types read-only ones apart (new compilations)
            buf = np.empty(size if cols else half, dtype=np.uint8)
            got = fh.readinto(buf)
    except OSError as e:
        raise PageError(f"page {path!r} cannot be read: {e.strerror or e}") from None
    if got != buf.size:
        raise PageError(f"page {path!r} is truncated: {got} of {buf.size} payload bytes read")
    for part, digest, name in ((buf[:half], digests[0], "row-major"),
                               (buf[half:], digests[1], "column-major")):
        if part.size and _digest(memoryview(part)) != digest:
            raise PageError(f"page {path!r} is corrupted (checksum mismatch in its {name} "
                            "bins); build the Dataset again: a cache with a corrupted page "
                            "is rebuilt")
    rows = buf[:half].view(dtype).reshape(n, d)
    return rows, (buf[half:].view(dtype).reshape(d, n) if cols else None), first


class PageWriter:
    """Rows of a binned matrix, added in runs of any length (``add``), cut into pages of
    about ``page_bytes`` (both layouts counted) written to ``folder`` as ``page-000000.hwp``,
    ...; ``close()`` returns their file names in row order (one page at least). The rows
    are copied into one page-sized buffer per layout, so a page costs its own bytes in
    memory while it fills, and no more when it is written."""

    def __init__(self, folder, page_bytes: int, key: bytes, n_fields: int, dtype):
        self.folder, self.key = folder, key
        self.step = max(1, int(page_bytes) // max(1, 2 * n_fields * np.dtype(dtype).itemsize))
        self.n_fields, self.dtype = n_fields, np.dtype(dtype)
        self.names, self.held, self.first = [], 0, 0
        self._rows = self._cols = None  # the page being filled, allocated at the first add
        os.makedirs(folder, exist_ok=True)

    def add(self, rows, cols=None):
        """Append ``rows`` ((m, d) bins; ``cols``, their (d, m) column-major copy, if the
        caller has it)."""
        if self._rows is None:
            self._rows = np.empty((self.step, self.n_fields), dtype=self.dtype)
            self._cols = np.empty((self.n_fields, self.step), dtype=self.dtype)
        at = 0
        while at < rows.shape[0]:
            take = min(self.step - self.held, rows.shape[0] - at)
            self._rows[self.held:self.held + take] = rows[at:at + take]
            self._cols[:, self.held:self.held + take] = (
                rows[at:at + take].T if cols is None else cols[:, at:at + take])
            self.held += take
            at += take
            if self.held == self.step:
                self._flush()

    def _flush(self):
        name = f"page-{len(self.names):06d}.hwp"
        if self._rows is None:  # no rows at all: one empty page
            rows = np.zeros((0, self.n_fields), dtype=self.dtype)
            cols = np.zeros((self.n_fields, 0), dtype=self.dtype)
        else:
            rows, cols = self._rows[:self.held], self._cols[:, :self.held]
        write_page(os.path.join(self.folder, name), rows, self.first, self.key, cols)
        self.names.append(name)
        self.first += self.held
        self.held = 0

    def close(self):
        if self.held or not self.names:
            self._flush()
        self._rows = self._cols = None
        return self.names

    @property
    def rows_written(self):
        return self.first + self.held


def write_pages(bins_row: np.ndarray, folder, page_bytes: int, key: bytes):
    """Cut a binned matrix into pages of about ``page_bytes`` (``PageWriter``); returns their
    paths in row order."""
    w = PageWriter(folder, page_bytes, key, bins_row.shape[1], bins_row.dtype)
    w.add(bins_row)
    return [os.path.join(folder, name) for name in w.close()]
