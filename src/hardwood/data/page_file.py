"""Binned pages on disk: one file per page, checked on every read.

A page holds a run of rows of the binned matrix twice, row-major (n, d) for histograms and
column-major (d, n) for the partition (the Booster paper's redundant layouts), after a
header::

    magic  b"HWPAGE\\x00\\x01"      8 bytes
    format version                 uint32 (FORMAT_VERSION)
    dtype code                     uint32 (1: uint8, 2: uint16)
    rows, columns, first row       3 x uint64
    payload bytes                  uint64
    payload checksum               32 bytes (BLAKE2b-256 of the payload)
    key                            32 bytes (what the pages were built from: see PageSet)

A file that is truncated, altered, of another format or built from other data raises
:class:`PageError` naming the file and what is wrong; nothing is read past a bad header.
"""
from __future__ import annotations

import hashlib
import os
import struct

import numpy as np

MAGIC = b"HWPAGE\x00\x01"
FORMAT_VERSION = 1
_HEAD = struct.Struct("<8sII4Q32s32s")
_DTYPES = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16)}
_CODES = {v: k for k, v in _DTYPES.items()}


class PageError(ValueError):
    """A page file that cannot be used: corrupt, truncated, or from other data."""


def _digest(*parts) -> bytes:
    h = hashlib.blake2b(digest_size=32)
    for p in parts:
        h.update(p)
    return h.digest()


def write_page(path, bins_row: np.ndarray, first_row: int, key: bytes):
    """Write rows ``first_row ..`` of a binned matrix (``bins_row``: (n, d) uint8/uint16) to
    ``path``, atomically (a temporary file renamed)."""
    bins_row = np.ascontiguousarray(bins_row)
    if bins_row.dtype not in _CODES or bins_row.ndim != 2:
        raise TypeError(f"a page holds a 2-D uint8 or uint16 matrix, got {bins_row.dtype} "
                        f"{bins_row.shape}")
    payload = bins_row.tobytes() + np.ascontiguousarray(bins_row.T).tobytes()
    n, d = bins_row.shape
    head = _HEAD.pack(MAGIC, FORMAT_VERSION, _CODES[bins_row.dtype], n, d, int(first_row),
                      len(payload), _digest(payload), key)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as fh:
        fh.write(head)
        fh.write(payload)
    os.replace(tmp, path)


def _head(path):
    """The parsed header of ``path`` and the file's length."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_HEAD.size)
            size = os.fstat(fh.fileno()).st_size
    except OSError as e:
        raise PageError(f"page {path!r} cannot be read: {e.strerror or e}") from None
    return _parse(path, raw), size


def read_header(path):
    """(dtype, rows, columns, first row, key) of the page file ``path``."""
    return _head(path)[0][:5]


def page_ok(path, key: bytes) -> bool:
    """Whether ``path`` holds a page of this format, built with ``key``, of the length its
    header gives (the checksum is checked when the page is read)."""
    try:
        (*_, got_key, payload, _), size = _head(path)
    except PageError:
        return False
    return got_key == key and size == _HEAD.size + payload


def _parse(path, raw):
    if len(raw) < _HEAD.size:
        raise PageError(f"page {path!r} is truncated: {len(raw)} bytes, shorter than its "
                        f"{_HEAD.size}-byte header")
    magic, version, code, n, d, first, size, digest, key = _HEAD.unpack(raw[:_HEAD.size])
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
    return dtype, int(n), int(d), int(first), key, int(size), digest


def read_page(path, key: bytes | None = None):
    """(bins_row (n, d), bins_col (d, n), first row) of the page file ``path``, checked: its
    header, its length, its checksum and, when given, the ``key`` it was built with."""
    try:
        with open(path, "rb") as fh:
            buf = np.empty(os.fstat(fh.fileno()).st_size, dtype=np.uint8)  # writable arrays:
            got = fh.readinto(buf)  # Numba types read-only ones apart (new compilations)
    except OSError as e:
        raise PageError(f"page {path!r} cannot be read: {e.strerror or e}") from None
    raw = buf[:got]
    dtype, n, d, first, got_key, size, digest = _parse(path, raw[:_HEAD.size].tobytes())
    if key is not None and got_key != key:
        raise PageError(f"page {path!r} was built from other data or other parameters")
    payload = raw[_HEAD.size:]
    if payload.size != size:
        raise PageError(f"page {path!r} is truncated or padded: {payload.size} payload bytes, "
                        f"its header says {size}")
    if _digest(memoryview(payload)) != digest:
        raise PageError(f"page {path!r} is corrupted (checksum mismatch)")
    half = size // 2
    rows = payload[:half].view(dtype).reshape(n, d)
    cols = payload[half:].view(dtype).reshape(d, n)
    return rows, cols, first


class PageWriter:
    """Rows of a binned matrix, added in runs of any length (``add``), cut into pages of
    about ``page_bytes`` (both layouts counted) written to ``folder`` as ``page-000000.hwp``,
    ...; ``close()`` returns their file names in row order (one page at least)."""

    def __init__(self, folder, page_bytes: int, key: bytes, n_fields: int, dtype):
        self.folder, self.key = folder, key
        self.step = max(1, int(page_bytes) // max(1, 2 * n_fields * np.dtype(dtype).itemsize))
        self.n_fields, self.dtype = n_fields, np.dtype(dtype)
        self.names, self.buf, self.held, self.first = [], [], 0, 0
        os.makedirs(folder, exist_ok=True)

    def add(self, rows):
        at = 0
        while at < rows.shape[0]:
            take = min(self.step - self.held, rows.shape[0] - at)
            self.buf.append(rows[at:at + take])
            self.held += take
            at += take
            if self.held == self.step:
                self._flush()

    def _flush(self):
        name = f"page-{len(self.names):06d}.hwp"
        rows = (np.concatenate(self.buf) if self.buf
                else np.zeros((0, self.n_fields), dtype=self.dtype))
        write_page(os.path.join(self.folder, name), rows, self.first, self.key)
        self.names.append(name)
        self.first += self.held
        self.buf, self.held = [], 0

    def close(self):
        if self.held or not self.names:
            self._flush()
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
