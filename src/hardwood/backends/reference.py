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
