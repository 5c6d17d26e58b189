"""The Numba CPU backend: steps ① histograms, ③ partition and ⑤ update.

Rows of the tree live in one ``rows`` array (int32), partitioned so that every node owns a
contiguous segment ``rows[begin:end]``; a stable partition keeps each segment in ascending
row order, so gathers from the binned matrices walk memory forwards.

Work is cut into fixed-size blocks of rows (``BLOCK`` rows, never more than one node per
block) and blocks run in parallel. Each block accumulates a private histogram; blocks are
then summed per node in block order, so results do not depend on the thread count.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._intrinsics import add_pair, prefetch
from .base import Backend

BLOCK = 16384
PREFETCH_AHEAD = 16  # rows


@njit(cache=True, nogil=True)
def _make_blocks(begins, ends, block):
    """Cut segments (int64 ``begins``/``ends``) into blocks of at most ``block`` rows, one
    block at least per segment: returns (blk_seg, blk_begin, blk_end, seg_first_block)."""
    n_seg = begins.shape[0]
    first = np.zeros(n_seg + 1, dtype=np.int64)
    for s in range(n_seg):
        size = ends[s] - begins[s]
        nb = (size + block - 1) // block
        first[s + 1] = first[s] + max(nb, 1)
    total = first[n_seg]
    blk_seg = np.empty(total, dtype=np.int64)
    blk_begin = np.empty(total, dtype=np.int64)
    blk_end = np.empty(total, dtype=np.int64)
    for s in range(n_seg):
        for k in range(first[s], first[s + 1]):
            blk_seg[k] = s
            b = begins[s] + (k - first[s]) * block
            blk_begin[k] = b
            blk_end[k] = min(b + block, ends[s])
    return blk_seg, blk_begin, blk_end, first


def _segment_blocks(begins, ends):
    """``_make_blocks`` of BLOCK rows for the Python grower's segment lists."""
    return _make_blocks(np.asarray(begins, dtype=np.int64), np.asarray(ends, dtype=np.int64),
                        BLOCK)


HIST_CACHE_BINS = 16384  # bins per pass: (g, h) float64 pairs of 256 KiB stay in L2


@njit(cache=True, nogil=True)
def _feature_groups(offsets, total_bins):
    """Split the fields into consecutive groups of at most HIST_CACHE_BINS bins."""
    d = offsets.shape[0]
    starts = [0]
    for j in range(1, d):
        if offsets[j] - offsets[starts[-1]] > HIST_CACHE_BINS:
            starts.append(j)
    starts.append(d)
    return np.array(starts, dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def _hist_pass(Bf, d, g, h, rows, p0, p1, offsets, j0, j1, hb, lanes, lane_width):
    """Rows p0..p1 of fields j0..j1 into ``hb``: each row's (g, h) pair is added to one bin
    per field with ``add_pair``, indices unsigned (1.1 -> 0.72 ns per update against two
    scalar adds with signed indices, 1M x 28 bins)."""
    ud = np.uint64(d)
    for p in range(p0, p1):
        if p + PREFETCH_AHEAD < p1:
            q = np.int64(rows[p + PREFETCH_AHEAD])
            prefetch(Bf, q * d + j0)
            prefetch(Bf, q * d + j1 - 1)
            prefetch(g, q)
            prefetch(h, q)
        r = np.uint64(rows[p])
        gr = np.float64(g[r])
        hr = np.float64(h[r])
        row = r * ud
        base = np.uint64((p & (lanes - 1)) * lane_width)
        for j in range(j0, j1):
            uj = np.uint64(j)
            add_pair(hb, base + np.uint64(2) * (np.uint64(offsets[uj]) + np.uint64(Bf[row + uj])),
                     gr, hr)


@njit(cache=True, nogil=True)
def hist_rows(B, g, h, rows, p0, p1, offsets, groups, hb, lanes=1):
    """Accumulate rows[p0:p1] into the flat (g, h) histogram ``hb``: row-wise when the
    histogram fits in cache, otherwise one pass per group of fields (feature-blocked).

    With ``lanes=2`` ``hb`` holds two copies and consecutive rows alternate between them:
    when one bin takes a large share of the rows (a dominant category) back-to-back
    updates of the same slot would otherwise wait on each other. The caller sums the lanes.
    """
    d = B.shape[1]
    Bf = B.reshape(-1)
    lane_width = hb.shape[0] // lanes
    if groups.shape[0] == 2:
        # every field in one pass, bounds from B's shape rather than from ``groups``: the
        # compiler handles that loop much better (1.4 -> 1.1 ns per update, 1M x 28 bins)
        _hist_pass(Bf, d, g, h, rows, p0, p1, offsets, 0, d, hb, lanes, lane_width)
        return
    for gi in range(groups.shape[0] - 1):
        _hist_pass(Bf, d, g, h, rows, p0, p1, offsets, groups[gi], groups[gi + 1], hb, lanes,
                   lane_width)


@njit(parallel=True, cache=True, nogil=True)
def _hist_blocks(B, g, h, rows, blk_begin, blk_end, offsets, out, lanes=1):
    """Block k's rows into out[k] (``lanes`` copies of a flat histogram each)."""
    nb = blk_begin.shape[0]
    groups = _feature_groups(offsets, out.shape[1] // (2 * lanes))
    for k in prange(nb):
        hb = out[k]
        hb[:] = 0.0
        hist_rows(B, g, h, rows, blk_begin[k], blk_end[k], offsets, groups, hb, lanes)


def choose_lanes(bins_row, sample=20_000, share=0.05):
    """2 when some bin holds more than ``share`` of a sample of rows (see ``hist_rows``)."""
    n, d = bins_row.shape
    if n == 0:
        return 1
    step = max(1, n // sample)
    s = bins_row[::step]
    for j in range(d):
        counts = np.bincount(s[:, j])
        if counts.max() > share * s.shape[0] and counts.size > 2:
            return 2
    return 1


@njit(parallel=True, cache=True, nogil=True)
def _reduce_into(blocks, seg_first, pool2d, dst, lanes):
    """pool2d[dst[s]] = the sum of segment s's blocks (and of their lanes)."""
    n_seg = seg_first.shape[0] - 1
    width = pool2d.shape[1]
    n_chunks = (width + 1023) // 1024
    for t in prange(n_seg * n_chunks):
        s = t // n_chunks
        c0 = (t % n_chunks) * 1024
        c1 = min(width, c0 + 1024)
        row = pool2d[dst[s]]
        for c in range(c0, c1):
            acc = 0.0
            for k in range(seg_first[s], seg_first[s + 1]):
                for lane in range(lanes):
                    acc += blocks[k, lane * width + c]
            row[c] = acc


@njit(parallel=True, cache=True, nogil=True)
def _partition_blocks(Bcol, rows, tmp, blk_seg, blk_begin, blk_end, seg_begin, seg_first,
                      seg_feature, left_table, mids):
    """Stable partition of every segment by its split, in two parallel passes.

    1. Each block writes its rows into its own range of ``tmp``: left rows forwards from the
       start, right rows backwards from the end. Every row is stored at both ends and only
       one pointer moves, so there is no branch on the (unpredictable) direction.
    2. Blocks copy their two runs back into ``rows`` at the segment's left and right offsets
       (the right run read backwards, so both children stay in ascending row order).

    2.85 -> 1.85 ns per row (1M rows, 2 threads) against flags + scatter + copy-back.
    """
    nb = blk_begin.shape[0]
    n_seg = seg_begin.shape[0]
    counts = np.zeros(nb, dtype=np.int64)
    for k in prange(nb):
        s = blk_seg[k]
        col = Bcol[seg_feature[s]]
        lo = np.uint64(blk_begin[k])
        hi = np.uint64(blk_end[k] - 1)
        for p in range(blk_begin[k], blk_end[k]):
            r = rows[p]
            f = np.uint64(left_table[s, np.uint64(col[np.uint64(r)])])
            tmp[lo] = r
            tmp[hi] = r
            lo += f
            hi -= np.uint64(1) - f
        counts[k] = np.int64(lo) - blk_begin[k]
    left_pos = np.empty(nb, dtype=np.int64)
    right_pos = np.empty(nb, dtype=np.int64)
    for s in range(n_seg):
        tot = 0
        for k in range(seg_first[s], seg_first[s + 1]):
            tot += counts[k]
        lp = seg_begin[s]
        rp = seg_begin[s] + tot
        mids[s] = rp
        for k in range(seg_first[s], seg_first[s + 1]):
            left_pos[k] = lp
            right_pos[k] = rp
            lp += counts[k]
            rp += (blk_end[k] - blk_begin[k]) - counts[k]
    for k in prange(nb):
        b = blk_begin[k]
        e = blk_end[k]
        n_left = counts[k]
        lp = left_pos[k]
        for i in range(n_left):
            rows[lp + i] = tmp[b + i]
        rp = right_pos[k]
        for i in range(e - b - n_left):
            rows[rp + i] = tmp[e - 1 - i]


@njit(parallel=True, cache=True, nogil=True)
def fill_row_ids(rows):
    """rows[i] = i, in place (a tree over every row starts from this order)."""
    for i in prange(rows.shape[0]):
        rows[i] = i


@njit(parallel=True, cache=True, nogil=True)
def _add_segment_values(rows, blk_seg, blk_begin, blk_end, seg_value, pred):
    for k in prange(blk_begin.shape[0]):
        v = seg_value[blk_seg[k]]
        for p in range(blk_begin[k], blk_end[k]):
            pred[rows[p]] += v


@njit(parallel=True, cache=True, nogil=True)
def _predict_binned(B, feature, table_offset, table, left, right, value, pred):
    n = B.shape[0]
    for i in prange(n):
        node = 0
        while feature[node] >= 0:
            if table[table_offset[node] + B[i, feature[node]]]:
                node = left[node]
            else:
                node = right[node]
        pred[i] += value[node]


class CPUBackend(Backend):
    """Numba kernels over the in-memory binned matrices."""

    name = "cpu"

    def __init__(self, bins_row: np.ndarray, bins_col: np.ndarray, offsets: np.ndarray):
        self.bins_row = bins_row
        self.bins_col = bins_col
        self.offsets = np.ascontiguousarray(offsets[:-1], dtype=np.int64)
        self.total_bins = int(offsets[-1])
        self._tmp = np.empty(bins_row.shape[0], dtype=np.int32)
        self.lanes = choose_lanes(bins_row)

    # ① ------------------------------------------------------------------------------
    def build_histograms(self, rows, begins, ends, g, h):
        blk_seg, blk_begin, blk_end, first = _segment_blocks(begins, ends)
        blocks = np.empty((blk_begin.size, 2 * self.total_bins), dtype=np.float64)
        _hist_blocks(self.bins_row, g, h, rows, blk_begin, blk_end, self.offsets, blocks)
        out = np.empty((len(begins), 2 * self.total_bins), dtype=np.float64)
        _reduce_into(blocks, first, out, np.arange(len(begins)), 1)
        return out.reshape(len(begins), self.total_bins, 2)

    # ③ ------------------------------------------------------------------------------
    def partition(self, rows, begins, ends, features, left_tables):
        blk_seg, blk_begin, blk_end, first = _segment_blocks(begins, ends)
        mids = np.empty(len(begins), dtype=np.int64)
        _partition_blocks(self.bins_col, rows, self._tmp, blk_seg, blk_begin, blk_end,
                          np.asarray(begins, dtype=np.int64), first,
                          np.asarray(features, dtype=np.int64), left_tables, mids)
        return mids

    # ⑤ ------------------------------------------------------------------------------
    def add_leaf_values(self, rows, begins, ends, values, pred):
        blk_seg, blk_begin, blk_end, _ = _segment_blocks(begins, ends)
        _add_segment_values(rows, blk_seg, blk_begin, blk_end,
                            np.asarray(values, dtype=np.float64), pred)

    def predict_binned(self, bins_row, binned_tree, pred):
        t = binned_tree
        _predict_binned(bins_row, t.feature, t.table_offset, t.table, t.left, t.right,
                        t.value, pred)

    def fill_row_ids(self, rows):
        fill_row_ids(rows)

    # the fused one-call grower (backends/cpu_grower.py): one in-core page only ----------
    def grow_fused(self, rows, g, h, layout, tree_mask, keys, k_bynode, p, max_leaves, cap,
                   n_slots, cycles):
        """One whole tree in one Numba call: the node arrays of ``Grower.finish_arrays``.
        ``layout``: (field offsets, value bins per field, is categorical, widest field);
        ``p``: GrowParams; ``cycles[0..2]`` accumulate the cycles of ① ② ③."""
        from .cpu_grower import grow_tree

        offsets, n_value_bins, is_cat, max_field_bins = layout
        return grow_tree(self.bins_row, self.bins_col, g, h, rows, self._tmp, offsets,
                         n_value_bins, is_cat, tree_mask, keys, k_bynode,
                         float(p.reg_lambda), float(p.reg_alpha), float(p.min_child_weight),
                         float(p.gamma), int(p.max_cat_to_onehot), int(p.max_cat_threshold),
                         p.grow_policy == "lossguide", int(p.max_depth), int(max_leaves), cap,
                         n_slots, self.total_bins, max_field_bins, cycles, self.lanes)
