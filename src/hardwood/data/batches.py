"""``Dataset.from_batches``: a training set that does not fit in memory, read in two passes
over batches (the out-of-core paper's quantisation):

1. every batch goes into one streaming quantile sketch per field (``data/sketch.py``); the
   labels, weights and starting margins are kept (O(rows) floats, as the gradients and
   predictions later);
2. every batch is binned with the bins the sketches give and written into binned pages of
   about ``page_bytes`` in ``cache_dir`` (``data/page_file.py``), with a manifest. A cache
   built from the same data and parameters (the same key) is reused; any other is rebuilt.

Training streams the pages (``backends/pages.DiskPages``). Numeric features only, for now.
"""
from __future__ import annotations

import hashlib
import json
import numbers
import os
import warnings

import numpy as np

from ..atomic_file import atomic_open

from .binning import BinMapper, check_max_bin
from .convert import to_float_matrix, to_vector
from .dataset import start_margins
from .page_file import FORMAT_VERSION, PageWriter, page_ok
from .sketch import QuantileSketch

MANIFEST = "manifest.json"


BATCH_FORMS = "(X, y), (X, y, weight) or (X, y, weight, base_margin)"


def _batches(make_batches):
    it = make_batches()
    if it is None or not hasattr(it, "__iter__"):
        raise TypeError(f"make_batches must return an iterable of {BATCH_FORMS} batches, got "
                        f"{type(it).__name__}")
    for i, batch in enumerate(it):
        if not isinstance(batch, (tuple, list)) or len(batch) not in (2, 3, 4):
            raise ValueError(f"batch {i}: expected {BATCH_FORMS}, got {type(batch).__name__}"
                             + (f" of length {len(batch)}" if hasattr(batch, '__len__') else ""))
        X, y = batch[0], batch[1]
        w = batch[2] if len(batch) >= 3 else None
        margin = batch[3] if len(batch) == 4 else None
        shape = getattr(X, "shape", None)
        if shape is not None and len(shape) == 2 and shape[0] == 0:
            if y is not None and np.size(y) != 0:
                raise ValueError(f"batch {i}: X has no rows but y has {np.size(y)} values")
            continue  # a batch of no rows (a filtered chunk, an empty file): nothing to read
        yield i, X, y, w, margin


def _matrix(name, X, info, feature_names):
    mat, info2 = to_float_matrix(X, info=info, feature_names=feature_names if info is None
                                 else None, what=f"{name}'s X")
    if np.any(info2.is_categorical):
        raise NotImplementedError(f"{name}: categorical features are not supported by "
                                  "Dataset.from_batches yet; encode them as numbers")
    return mat, info2


def _batch_name(where):
    """Batch i's name in messages: ``where(i)`` (a file and its part) or "batch i"."""
    return (lambda i: f"batch {i}") if where is None else where


def from_batches(cls, make_batches, cache_dir, max_bin=256, page_bytes=32 << 20,
                 sketch_size=2048, feature_names=None, where=None):
    """See ``Dataset.from_batches``; ``where(i)`` names batch i in messages (from_files)."""
    name = _batch_name(where)
    if not callable(make_batches):
        raise TypeError("make_batches must be a callable that returns a fresh iterator of "
                        "batches each time (the data is read twice)")
    check_max_bin(max_bin)
    if not isinstance(cache_dir, (str, os.PathLike)):
        raise TypeError(f"cache_dir must be the path of a folder for the binned pages, got "
                        f"{cache_dir!r:.60}")
    if (isinstance(page_bytes, bool) or not isinstance(page_bytes, numbers.Real)
            or not float(page_bytes).is_integer() or page_bytes < 1):
        # (0.5 said "must be positive, got 0.5")
        raise ValueError(f"page_bytes must be a whole number of bytes >= 1, got "
                         f"{page_bytes!r:.60}")
    page_bytes = int(page_bytes)
    # pass 1: sketches, labels, weights
    info, sketches, labels, weights, margins, sizes = None, None, [], [], [], []
    data_digest = hashlib.blake2b(digest_size=32)  # the features: a cache of other data is
    for i, X, y, w, m in _batches(make_batches):   # never taken, even with the same bins
        mat, info = _matrix(name(i), X, info, feature_names)
        n = mat.shape[0]
        if sketches is None:
            sketches = [QuantileSketch(sketch_size) for _ in range(mat.shape[1])]
        yv = to_vector(y, n, f"{name(i)}'s label", allow_none=False)
        wv = None if w is None else to_vector(w, n, f"{name(i)}'s weight")
        if wv is not None and np.any(wv < 0):
            raise ValueError(f"{name(i)}: weight must be non-negative")
        if weights and (wv is None) != (weights[0] is None):
            raise ValueError(f"{name(i)}: give a weight in every batch or in none")
        mv = start_margins(m, n, f"{name(i)}'s base_margin")
        if margins and (mv is None) != (margins[0] is None):
            raise ValueError(f"{name(i)}: give a base_margin in every batch or in none")
        if mv is not None and margins and mv.shape[1] != margins[0].shape[1]:
            raise ValueError(f"{name(i)}'s base_margin has {mv.shape[1]} column(s), the first "
                             f"batch's {margins[0].shape[1]}")
        for j, sk in enumerate(sketches):
            sk.push(mat[:, j], wv)
        data_digest.update(np.ascontiguousarray(mat).view(np.uint8))
        labels.append(yv)
        weights.append(wv)
        margins.append(mv)
        sizes.append(n)
    if sketches is None or sum(sizes) == 0:
        raise ValueError("make_batches gave no rows")
    if weights[0] is not None and not any(np.any(w > 0) for w in weights):
        # as hardwood.Dataset: training met it as a ZeroDivisionError from numpy
        raise ValueError("weight is zero for every row")
    bm = BinMapper(max_bin=max_bin).fit_sketches(sketches)
    n_rows = int(sum(sizes))
    digest = data_digest.hexdigest()
    key = hashlib.blake2b(json.dumps([FORMAT_VERSION, bm.to_dict(), n_rows, len(sketches),
                                      int(page_bytes), sizes, digest]).encode(),
                          digest_size=32).digest()
    paths = _cached_pages(cache_dir, key) or _write_pages(make_batches, bm, info, cache_dir,
                                                          page_bytes, key, sizes, name, digest)
    ds = cls.__new__(cls)
    ds.info = info
    ds.n_rows, ds.n_features = n_rows, len(sketches)
    ds.label = np.concatenate(labels)
    ds.weight = None if weights[0] is None else np.concatenate(weights)
    ds.base_margin = None if margins[0] is None else np.concatenate(margins)
    ds.bin_mapper = bm
    ds.max_bin = bm.max_bin
    ds.bins_row = ds.bins_col = None
    ds.reference = None
    ds.pages_on_disk = (paths, key)
    ds.sketch_error = max(sk.edge_error_bound() for sk in sketches)
    return ds


def _cached_pages(cache_dir, key):
    """The page paths of a cache built with ``key``, or None (absent, other key, bad page)."""
    try:
        with open(os.path.join(cache_dir, MANIFEST)) as fh:
            man = json.load(fh)
        if man.get("key") != key.hex():
            return None
        paths = [os.path.join(cache_dir, name) for name in man["pages"]]
        if not all(page_ok(p, key) for p in paths):
            return None
        return paths
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_pages(make_batches, bm, info, cache_dir, page_bytes, key, sizes, name, digest):
    if os.path.exists(cache_dir) and not os.path.isdir(cache_dir):
        raise ValueError(f"cache_dir {os.fspath(cache_dir)!r} is a file; give a folder")
    os.makedirs(cache_dir, exist_ok=True)
    try:  # the old manifest first: a cache half rewritten is never taken for a whole one
        os.remove(os.path.join(cache_dir, MANIFEST))
    except FileNotFoundError:
        pass
    pages = PageWriter(cache_dir, page_bytes, key, bm.n_bins.size, bm.dtype)
    second = hashlib.blake2b(digest_size=32)
    with warnings.catch_warnings():  # pass 1 gave the batches' warnings already
        warnings.simplefilter("ignore")
        for k, (i, X, *_) in enumerate(_batches(make_batches)):
            mat, _ = _matrix(name(i), X, info, None)
            if k >= len(sizes) or mat.shape[0] != sizes[k]:
                raise ValueError(f"{name(i)}: the second pass over make_batches gave other "
                                 "batches than the first (it must give the same data each "
                                 "time)")
            second.update(np.ascontiguousarray(mat).view(np.uint8))
            pages.add(*bm.transform(mat))
    if pages.rows_written != sum(sizes):
        raise ValueError("the second pass over make_batches gave fewer rows than the first")
    if second.hexdigest() != digest:
        raise ValueError("the second pass over make_batches gave other feature values than "
                         "the first (it must give the same data each time)")
    names = pages.close()
    for stale in os.listdir(cache_dir):
        if stale.startswith("page-") and stale.endswith(".hwp") and stale not in names:
            os.remove(os.path.join(cache_dir, stale))
    with atomic_open(os.path.join(cache_dir, MANIFEST), "w") as fh:
        json.dump({"key": key.hex(), "pages": names}, fh)
    return [os.path.join(cache_dir, n) for n in names]
