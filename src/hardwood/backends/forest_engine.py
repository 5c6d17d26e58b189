"""The CPU engine of the random-forest grower (``train/forest_grower.py``): the work on one
node or one frontier of nodes, run by the Numba kernels of ``forest_cpu.py``. The CUDA
backend's engine (``forest_cuda.CudaEngine``) has the same methods.

``data`` is a ``forest_grower.GrowData``, ``p`` a ``forest_grower.TreeParams``.
"""
from __future__ import annotations

import numba
import numpy as np

from . import forest_cpu as K

SERIAL_WORK = 16384  # a breadth-first step over fewer rows runs on one thread
# Breadth-first levels read packed records (each row's bins, weight and label, moved with
# the rows by the partitions) when a row has at most this many fields: in order, not
# scattered; past it, moving the records costs more than the scattered reads it saves
PACK_MAX_FIELDS = 64


class CPUEngine:
    """The per-node work of the forest grower on the CPU: depth-first (data parallel) work on
    single nodes, and breadth-first steps over a frontier of small ones."""

    def __init__(self, data, p, rows, w, w_root):
        self.data, self.p, self.rows, self.w, self.w_root = data, p, rows, w, w_root
        self.tmp = np.empty_like(rows)
        self.flags = np.empty(rows.shape[0], dtype=np.bool_)
        self.records = None  # what breadth-first levels read: made by the first one

    def totals(self, b0, b1):
        d = self.data
        nblk = K.n_blocks(b1 - b0, 1, 1, d.C)
        return K.df_totals(self.rows, b0, b1, self.w, d.yk, d.yv, d.is_reg, d.C, nblk)

    def find_split(self, b0, b1, depth, key, T):
        """(feature, bin, default_left, gain, next bin) of the best split, or None for a
        leaf."""
        d, p = self.data, self.p
        n = b1 - b0
        if is_leaf(T, n, depth, d.C, p, self.w_root):
            return None
        search = SplitSearch(key, d.bins_col.shape[0], p.mtry)
        feats = search.next_features()
        while feats is not None:
            stat, cnt = self.hist(b0, b1, feats)
            search.scan(stat, cnt, feats, d.nv, T, n, d.C, p, self.w_root)
            feats = search.next_features()
        return search.result(T, d.C, p, self.w_root)

    def hist(self, b0, b1, feats):
        """(stat (n_feat, maxbins, C), cnt (n_feat, maxbins)) of rows[b0:b1] over ``feats``."""
        d = self.data
        nblk = K.n_blocks(b1 - b0, feats.shape[0], d.maxbins, d.C)
        return K.df_hist(d.bins_col, self.rows, b0, b1, feats, self.w, d.yk, d.yv, d.is_reg,
                         d.C, d.maxbins, nblk)

    def partition(self, b0, b1, f, bbin, dl):
        d = self.data
        nblk = K.n_blocks(b1 - b0, 1, 1, 1)
        return K.df_partition(d.bins_col, self.rows, self.tmp, self.flags, b0, b1, f, bbin,
                              int(d.nv[f]), dl, nblk)

    def level(self, begin, end, depth, key, out):
        """Breadth-first step over a frontier of small nodes (one thread per node); fills
        ``out`` = (tot, feat, bin, next, default_left, gain, mid)."""
        d, p = self.data, self.p
        s = begin.shape[0]
        work = int((end - begin).sum())
        kern = K.bf_level if (work >= SERIAL_WORK and n_threads() > 1) else K.bf_level_serial
        maxn = int((end - begin).max())
        if self.records is None:
            self.records = self._records()
        packed, (bins, w, yk, yv, *scratch) = self.records
        kern(bins, self.rows, self.tmp, w, yk, yv, d.is_reg, d.C, d.nv,
             d.maxbins, maxn, begin, end, depth, key, p.mtry, p.max_depth,
             p.min_samples_split, p.min_samples_leaf, p.min_weight_leaf(self.w_root),
             p.criterion, p.min_impurity_decrease, self.w_root, n_chunks(s), *out, packed,
             *scratch)

    def _records(self):
        """(packed, (bins, w, yk, yv, and the partitions' scratch of the same types)):
        ``forest_cpu.pack_rows``' records for rows of at most PACK_MAX_FIELDS fields, else
        the data itself, read through the row numbers (with empty scratch)."""
        d = self.data
        if d.bins_row.shape[1] <= PACK_MAX_FIELDS:
            return True, K.pack_rows(d.bins_row, self.rows, self.w, d.yk, d.yv, d.is_reg)
        return False, (d.bins_row, self.w, d.yk, d.yv, np.zeros((0, 0), d.bins_row.dtype),
                       np.zeros(0), np.zeros(0, np.int64), np.zeros(0))


def is_leaf(T, n, depth, C, p, w_root):
    """Whether a node of ``n`` rows and statistics ``T`` at ``depth``, in a tree whose root
    weighs ``w_root``, stays a leaf before any split is searched (depth, sizes, weight,
    purity)."""
    return K.node_is_leaf(n, K.side_weight(T, C, p.criterion), K.impurity(T, C, p.criterion),
                          depth, p.max_depth, p.min_samples_split, p.min_samples_leaf,
                          p.min_weight_leaf(w_root))


class SplitSearch:
    """One node's search for its split, a batch of candidate features at a time: the first
    ``mtry`` features of the node's permutation (drawn from its key), then 4 more at a time
    while none of those drawn was non-constant (scikit-learn's rule). The CPU engine asks for
    each batch's histograms at once; ``hardwood.dask``'s histogram mode asks for a whole
    level's batches in one round trip. ``p``: a ``forest_grower.TreeParams``."""

    def __init__(self, key, n_feat, mtry):
        self.key, self.n_feat, self.mtry = key, int(n_feat), int(mtry)
        self.best, self.bf, self.bbin, self.bnext, self.bdl = -np.inf, -1, -1, -1, False
        self.drawn = self.nonconst = 0

    def next_features(self):
        """The next batch of candidate features (int64), or None when the search is over."""
        drawn, mtry = self.drawn, self.mtry
        if not ((drawn < mtry or self.nonconst == 0) and drawn < self.n_feat):
            return None
        want = min(mtry - drawn if drawn < mtry else 4, self.n_feat - drawn)
        return K.perm_prefix(self.key, self.n_feat, drawn + want)[drawn:]

    def scan(self, stat, cnt, feats, nv, T, n, C, p, w_root):
        """Scan a batch's histograms (stat (len(feats), bins, C), cnt (len(feats), bins))."""
        (self.best, self.bf, self.bbin, self.bnext, self.bdl, self.drawn,
         self.nonconst) = K.df_scan(stat, cnt, feats, nv, T, n, C, p.criterion,
                                    p.min_samples_leaf, p.min_weight_leaf(w_root), p.mtry,
                                    self.drawn, self.nonconst, self.best, self.bf, self.bbin,
                                    self.bnext, self.bdl)

    def result(self, T, C, p, w_root):
        """(feature, bin, default_left, gain, next bin), or None: no split, or one whose
        weighted impurity decrease (over the root's weight ``w_root``) is too small."""
        if self.bf < 0:
            return None
        gain = self.best - K.parent_proxy(T, C, p.criterion)
        if p.criterion == K.ENTROPY:
            gain /= K.LN2
        if gain / w_root + K.EPSILON < p.min_impurity_decrease:
            return None
        return int(self.bf), int(self.bbin), bool(self.bdl), float(gain), int(self.bnext)


def n_threads():
    import numba
    return numba.get_num_threads()


def n_chunks(n_nodes):
    return int(min(n_nodes, 8 * n_threads()))
