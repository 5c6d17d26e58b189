"""Naive twins of the CPU kernels, in plain numpy. Slow and obvious: tests compare the fast
kernels with these, and ``train(..., backend='reference')`` trains with them end to end."""
from __future__ import annotations

import numpy as np

from .base import Backend


def histogram_naive(bins_row, offsets, rows, g, h, total_bins):
    hist = np.zeros((total_bins, 2), dtype=np.float64)
    for r in rows:
        for j in range(bins_row.shape[1]):
            slot = offsets[j] + int(bins_row[r, j])
            hist[slot, 0] += float(g[r])
            hist[slot, 1] += float(h[r])
    return hist


def partition_naive(bins_col, rows, feature, left_table):
    goes_left = np.array([bool(left_table[int(bins_col[feature, r])]) for r in rows], dtype=bool)
    return np.concatenate([rows[goes_left], rows[~goes_left]]).astype(rows.dtype), int(goes_left.sum())


class ReferenceBackend(Backend):
    name = "reference"

    def __init__(self, bins_row, bins_col, offsets):
        self.bins_row = bins_row
        self.bins_col = bins_col
        self.offsets = np.asarray(offsets[:-1], dtype=np.int64)
        self.total_bins = int(offsets[-1])

    def build_histograms(self, rows, begins, ends, g, h):
        return np.stack([histogram_naive(self.bins_row, self.offsets, rows[b:e], g, h,
                                         self.total_bins) for b, e in zip(begins, ends)])

    def partition(self, rows, begins, ends, features, left_tables):
        mids = np.empty(len(begins), dtype=np.int64)
        for i, (b, e) in enumerate(zip(begins, ends)):
            new, n_left = partition_naive(self.bins_col, rows[b:e], int(features[i]), left_tables[i])
            rows[b:e] = new
            mids[i] = b + n_left
        return mids

    def add_leaf_values(self, rows, begins, ends, values, pred):
        for b, e, v in zip(begins, ends, values):
            pred[rows[b:e]] += v

    def predict_binned(self, bins_row, binned_tree, pred):
        t = binned_tree
        for i in range(bins_row.shape[0]):
            node = 0
            while t.feature[node] >= 0:
                b = int(bins_row[i, t.feature[node]])
                node = t.left[node] if t.table[t.table_offset[node] + b] else t.right[node]
            pred[i] += t.value[node]


def sparse_bin_naive(sb, r, f):
    """Row ``r``'s bin of field ``f`` in the ``SparseBins`` ``sb``: its stored entry's, else
    the field's default bin (a linear scan of the row)."""
    for e in range(int(sb.indptr[r]), int(sb.indptr[r + 1])):
        if int(sb.indices[e]) == f:
            return int(sb.bins[e])
    return int(sb.default_bin[f])


class SparseReferenceBackend(ReferenceBackend):
    """The naive twin over sparse bins (``data/sparse.py``): every bin of every row of a
    node is accumulated, the default bins included, as for dense bins; no totals, no
    subtraction, no binary search."""

    def __init__(self, sparse_bins, offsets):
        self.sb = sparse_bins
        self.bins_row = sparse_bins
        self.bins_col = None
        self.offsets = np.asarray(offsets[:-1], dtype=np.int64)
        self.total_bins = int(offsets[-1])

    def build_histograms(self, rows, begins, ends, g, h):
        out = []
        for b, e in zip(begins, ends):
            seg = rows[b:e]
            dense = self.sb.rows_dense(seg)  # the node's rows only
            out.append(histogram_naive(dense, self.offsets, np.arange(seg.size), g[seg], h[seg],
                                       self.total_bins))
        return np.stack(out) if out else np.zeros((0, self.total_bins, 2))

    def partition(self, rows, begins, ends, features, left_tables):
        mids = np.empty(len(begins), dtype=np.int64)
        for i, (b, e) in enumerate(zip(begins, ends)):
            seg = rows[b:e]
            f = int(features[i])
            goes_left = np.array([bool(left_tables[i][sparse_bin_naive(self.sb, int(r), f)])
                                  for r in seg], dtype=bool)
            rows[b:e] = np.concatenate([seg[goes_left], seg[~goes_left]])
            mids[i] = b + int(goes_left.sum())
        return mids

    def predict_binned(self, bins_row, binned_tree, pred):
        if isinstance(bins_row, np.ndarray):
            return super().predict_binned(bins_row, binned_tree, pred)
        t = binned_tree
        for i in range(bins_row.n_rows):
            node = 0
            while t.feature[node] >= 0:
                b = sparse_bin_naive(bins_row, i, int(t.feature[node]))
                node = t.left[node] if t.table[t.table_offset[node] + b] else t.right[node]
            pred[i] += t.value[node]


def _score_naive(G, H, lam, alpha):
    t = np.sign(G) * max(abs(G) - alpha, 0.0)
    return t * t / (H + lam)


def numeric_split_naive(hist, off, nv, lam, alpha, mcw):
    """Best (gain, bin, default_left) over every threshold and both missing directions,
    by brute force; bins <= bin go left."""
    G = hist[off:off + nv + 1, 0].sum()
    H = hist[off:off + nv + 1, 1].sum()
    parent = _score_naive(G, H, lam, alpha)
    miss = hist[off + nv]
    best = (-np.inf, -1, False)
    for b in range(nv):
        left = hist[off:off + b + 1].sum(axis=0)
        for dl in (False, True):
            L = left + miss if dl else left
            R = np.array([G, H]) - L
            if L[1] >= max(mcw, 1e-8) and R[1] >= max(mcw, 1e-8):
                gain = _score_naive(L[0], L[1], lam, alpha) + _score_naive(R[0], R[1], lam, alpha) - parent
                if gain > best[0] + 1e-12:
                    best = (gain, b, dl)
    return best


def categorical_split_naive(hist, off, K, lam, alpha, mcw):
    """Best gain over every subset of the non-empty categories going left (small K only)."""
    G = hist[off:off + K + 1, 0].sum()
    H = hist[off:off + K + 1, 1].sum()
    parent = _score_naive(G, H, lam, alpha)
    cats = [c for c in range(K) if hist[off + c, 1] > 0]
    miss = hist[off + K]
    best = -np.inf
    for bits in range(1, 2 ** len(cats) - 1):
        left = sum(hist[off + c] for i, c in enumerate(cats) if bits >> i & 1)
        for dl in (False, True):
            L = left + miss if dl else left
            R = np.array([G, H]) - L
            if L[1] >= max(mcw, 1e-8) and R[1] >= max(mcw, 1e-8):
                best = max(best, _score_naive(L[0], L[1], lam, alpha)
                           + _score_naive(R[0], R[1], lam, alpha) - parent)
    return best
