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


class CPUEngine:
    """The per-node work of the forest grower on the CPU: depth-first (data parallel) work on
    single nodes, and breadth-first steps over a frontier of small ones."""

    def __init__(self, data, p, rows, w, w_root):
        self.data, self.p, self.rows, self.w, self.w_root = data, p, rows, w, w_root
        self.tmp = np.empty_like(rows)
        self.flags = np.empty(rows.shape[0], dtype=np.bool_)

    def totals(self, b0, b1):
        d = self.data
        nblk = K.n_blocks(b1 - b0, 1, 1, d.C)
        return K.df_totals(self.rows, b0, b1, self.w, d.yk, d.yv, d.is_reg, d.C, nblk)

    def find_split(self, b0, b1, depth, key, T):
        """(feature, bin, default_left, gain) of the best split, or None for a leaf."""
        d, p = self.data, self.p
        C, crit = d.C, p.criterion
        n = b1 - b0
        W = K.side_weight(T, C, crit)
        if K.node_is_leaf(n, W, K.impurity(T, C, crit), depth, p.max_depth,
                          p.min_samples_split, p.min_samples_leaf, p.min_weight_leaf):
            return None
        n_feat = d.bins_col.shape[0]
        best, bf, bbin, bnext, bdl = -np.inf, -1, -1, -1, False
        drawn = nonconst = 0
        while (drawn < p.mtry or nonconst == 0) and drawn < n_feat:
            want = p.mtry - drawn if drawn < p.mtry else 4
            want = min(want, n_feat - drawn)
            feats = K.perm_prefix(key, n_feat, drawn + want)[drawn:]
            stat, cnt = self.hist(b0, b1, feats)
            best, bf, bbin, bnext, bdl, drawn, nonconst = K.df_scan(
                stat, cnt, feats, d.nv, T, n, C, crit, p.min_samples_leaf, p.min_weight_leaf,
                p.mtry, drawn, nonconst, best, bf, bbin, bnext, bdl)
        if bf < 0:
            return None
        gain = best - K.parent_proxy(T, C, crit)
        if crit == K.ENTROPY:
            gain /= K.LN2
        if gain / self.w_root + K.EPSILON < p.min_impurity_decrease:
            return None
        return int(bf), int(bbin), bool(bdl), float(gain), int(bnext)

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
        kern(d.bins_row, self.rows, self.tmp, self.w, d.yk, d.yv, d.is_reg, d.C, d.nv,
             d.maxbins, maxn, begin, end, depth, key, p.mtry, p.max_depth,
             p.min_samples_split, p.min_samples_leaf, p.min_weight_leaf, p.criterion,
             p.min_impurity_decrease, self.w_root, n_chunks(s), *out)


def n_threads():
    import numba
    return numba.get_num_threads()


def n_chunks(n_nodes):
    return int(min(n_nodes, 8 * n_threads()))
