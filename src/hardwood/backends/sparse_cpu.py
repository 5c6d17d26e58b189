"""The Numba CPU backend over sparse bins (``data/sparse.py``, issue 18): steps ① ③ ⑤ whose
cost follows the non-zeros, not rows x columns.

The bins are CSR: each row's entries off their field's *default bin* (the bin of 0.0).

① ``build_histograms``: each block of a node's rows adds every row's (g, h) to the bins of
  its stored entries only, and to the node's totals. A field's default bin is never
  accumulated: its sums are the node's totals minus the field's other bins
  (``_fill_node``), as LightGBM and XGBoost recover their zero bin. A node's first
  block sums straight into its histogram, the others into scratch added after in block
  order, so the sums do not depend on the thread count; the blocks go to the threads in
  runs of about equal rows.
③ ``partition``: each block of a node's rows finds its rows' bins of the node's split field
  in the field's column (a CSC copy of the entries, made once): the column entries between
  the block's least and greatest row mark, in a bitmap over the rows, the rows whose bin
  goes the other way from the field's default bin; then the stable two-pass partition of
  ``cpu.py`` (its ``split_offsets`` and ``copy_back_range``) with no branch per row. Cost:
  the nodes' rows plus the column entries in their ranges, read in order.
⑤ ``add_leaf_values`` touches no bins (``cpu.py``'s kernel); ``predict_binned`` walks the tree
  finding a row's bin of a field by binary search in its entries (fields ascend in a row).

There is no fused grower over sparse bins: the grower takes the tree learner over pages
(``train/learner.py``). The trees equal those of the dense bins of the same matrix, up to the
rounding of the histogram sums (``tests/test_sparse.py``).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ..data.sparse import column_runs
from ..parallel import CHUNKS_PER_THREAD, chunks, run_ranges
from ._intrinsics import add_pair, prefetch
from .base import Backend
from .cpu import (PREFETCH_AHEAD, REDUCE_CHUNK, add_values_blocks, block_rows, copy_back_range,
                  make_blocks, predict_binned_rows, split_offsets)


@njit(cache=True, nogil=True, inline="always")
def bin_of(indptr, indices, bins, default_bin, r, f):
    """Row ``r``'s bin of field ``f``: its stored entry's, else the field's default bin."""
    a = indptr[r]
    z = indptr[r + 1]
    while a < z:
        m = (a + z) >> 1
        if indices[m] < f:
            a = m + 1
        else:
            z = m
    if a < indptr[r + 1] and indices[a] == f:
        return np.int64(bins[a])
    return default_bin[f]


# the slots fit uint16 up to this many histogram bins: ① then reads half the bytes (the
# root's read of a 5.7M-entry slot array, back from memory every tree: 9.1 -> 6.7 ms)
U16_SLOT_BINS = 1 << 16


def slots_of(indices, bins, offsets, total_bins):
    """Each stored entry's histogram slot: its field's offset plus its bin (uint16 where
    ``total_bins`` allows, else int32)."""
    dtype = np.uint16 if total_bins <= U16_SLOT_BINS else np.int32
    out = np.empty(indices.shape[0], dtype=dtype)
    run_ranges(_slots_range, indices.shape[0], indices, bins, offsets, out)
    return out


@njit(cache=True, nogil=True)
def _slots_range(e0, e1, indices, bins, offsets, out):
    idx = indices[e0:e1]  # slices from 0: no wraparound check per entry
    bb = bins[e0:e1]
    dst = out[e0:e1]
    for e in range(e1 - e0):
        dst[e] = offsets[np.uint64(idx[e])] + np.int64(bb[e])


@njit(cache=True, nogil=True, inline="always")
def _add_row(hb, indptr, slots, g, h, r):
    """Row r's (g, h) at its stored entries' slots of the flat histogram ``hb``; returns
    (g, h) as float64. ``r`` and the entries' positions are unsigned: a signed index costs
    Numba a wraparound check per read (① 21.7 -> 16.4 ms a tree, with ``rows`` read as a
    slice from 0 in ``sparse_hist_range``)."""
    gr = np.float64(g[r])
    hr = np.float64(h[r])
    for e in range(np.uint64(indptr[r]), np.uint64(indptr[r + np.uint64(1)])):
        add_pair(hb, np.uint64(2) * np.uint64(slots[e]), gr, hr)
    return gr, hr


@njit(cache=True, nogil=True)
def sparse_hist_range(t0, t1, cuts, indptr, slots, g, h, rows, blk_seg, blk_begin, blk_end,
                      seg_first, out, extra, totals, offsets_full, default_bin):
    """Tasks ``t0 .. t1 - 1``, task t being blocks ``cuts[t] .. cuts[t + 1] - 1``: the (g, h)
    of block k's rows at their stored entries' slots, into its node's histogram ``out[s]``
    for a node's first block, else into ``extra[k - s - 1]`` (flat histograms), and their
    sums into totals[k]. The entries of a row a few rows ahead are prefetched: the node's
    rows are scattered over the matrix. A block of consecutive rows (the root's: the rows of
    a node are distinct and ascend) is read straight, without the row list or prefetches,
    which cost it a third of its time. A node of one block (most nodes below the root) gets
    its default bins here, while its histogram is in cache (``_fill_node``): a launch of
    ``fill_default_bins`` a level, reading the histograms back, cost about as much."""
    for k in range(cuts[t0], cuts[t1]):
        s = blk_seg[k]
        hb = out[s] if k == seg_first[s] else extra[k - s - 1]
        hb[:] = 0.0
        G = 0.0
        H = 0.0
        p0 = blk_begin[k]
        p1 = blk_end[k]
        if p1 > p0 and np.int64(rows[p1 - 1]) - np.int64(rows[p0]) == p1 - 1 - p0:
            for r in range(np.uint64(rows[p0]), np.uint64(rows[p1 - 1]) + np.uint64(1)):
                gr, hr = _add_row(hb, indptr, slots, g, h, r)
                G += gr
                H += hr
        else:
            rr = rows[p0:p1]
            m = p1 - p0
            for i in range(m):
                if i + 2 * PREFETCH_AHEAD < m:
                    prefetch(indptr, np.int64(rr[i + 2 * PREFETCH_AHEAD]))
                if i + PREFETCH_AHEAD < m:
                    q = np.uint64(rr[i + PREFETCH_AHEAD])
                    prefetch(slots, indptr[q])
                    prefetch(slots, indptr[q + np.uint64(1)] - 1)
                    prefetch(g, q)
                    prefetch(h, q)
                r = np.uint64(rr[i])
                gr, hr = _add_row(hb, indptr, slots, g, h, r)
                G += gr
                H += hr
        totals[k, 0] = G
        totals[k, 1] = H
        if seg_first[s + 1] - seg_first[s] == 1:
            _fill_node(hb, G, H, offsets_full, default_bin)


@njit(cache=True, nogil=True)
def add_blocks_range(t0, t1, out, extra, seg_first, n_chunks):
    """Tasks ``t0 .. t1 - 1``: ``out[s] += extra[k - s - 1]`` for node s's blocks k after its
    first, in block order, over chunk ``t % n_chunks`` of the cells of node ``t // n_chunks``:
    each cell's sum is ((b0 + b1) + b2) + ..., as ``cpu.reduce_range`` adds them."""
    width = out.shape[1]
    for t in range(t0, t1):
        s = t // n_chunks
        c0 = (t % n_chunks) * REDUCE_CHUNK
        c1 = min(width, c0 + REDUCE_CHUNK)
        row = out[s][c0:c1]  # slices from 0: no wraparound check per cell
        for k in range(seg_first[s] + 1, seg_first[s + 1]):
            x = extra[k - s - 1][c0:c1]
            for c in range(c1 - c0):
                row[c] += x[c]


def balanced_cuts(blk_begin, blk_end, n_tasks):
    """Cut the blocks into ``n_tasks`` runs of about equal rows (``run_ranges`` cuts by
    count: a level's blocks differ in size): ``cuts`` (int64, n_tasks + 1)."""
    nb = blk_begin.shape[0]
    if nb == 0:
        return np.zeros(n_tasks + 1, dtype=np.int64)
    cum = np.cumsum(blk_end - blk_begin)
    marks = cum[-1] * np.arange(1, n_tasks) / n_tasks
    inner = np.searchsorted(cum, marks, side="left") + 1
    return np.concatenate(([0], np.minimum(inner, nb), [nb])).astype(np.int64)


@njit(cache=True, nogil=True, inline="always")
def _fill_node(row, G, H, offsets_full, default_bin):
    """Set each field's default bin of the flat histogram ``row`` ((g, h) pairs; the default
    bin holds 0 before) to the node's sums (G, H) minus the field's other bins."""
    for j in range(default_bin.shape[0]):
        sg = 0.0
        sh = 0.0
        field = row[2 * offsets_full[j]:2 * offsets_full[j + 1]]  # from 0: no wraparound
        for b in range(field.shape[0] >> 1):                     # check per read
            sg += field[2 * b]
            sh += field[2 * b + 1]
        field[2 * default_bin[j]] = G - sg
        field[2 * default_bin[j] + 1] = H - sh


@njit(cache=True, nogil=True)
def fill_default_bins(t0, t1, nodes, hist, seg_first, totals, offsets_full, default_bin):
    """Nodes ``nodes[t0 .. t1 - 1]`` (those of several blocks: ``sparse_hist_range`` fills
    a node of one block itself): the node's sums are its blocks' totals (in block order);
    each field's default bin of ``hist[s]`` is set from them (``_fill_node``)."""
    for t in range(t0, t1):
        s = nodes[t]
        G = 0.0
        H = 0.0
        for k in range(seg_first[s], seg_first[s + 1]):
            G += totals[k, 0]
            H += totals[k, 1]
        _fill_node(hist[s], G, H, offsets_full, default_bin)


def csc_of(indptr, indices, bins, n_features):
    """The stored entries by field (CSC, rows ascending): (colptr, colrow, colbin), by
    ``data.sparse.column_runs``' counting sort on the threads (0.20 -> 0.09 s on 10M
    entries, two threads)."""
    rows = np.arange(indptr.shape[0] - 1, dtype=np.int64)
    colptr, cuts, fill = column_runs(indptr, indices, rows, n_features)
    colrow = np.empty(indices.shape[0], dtype=np.int32)
    colbin = np.empty(indices.shape[0], dtype=bins.dtype)
    run_ranges(_fill_columns_range, cuts.size - 1, cuts, rows, indptr, indices, bins, fill,
               colrow, colbin)
    return colptr, colrow, colbin


@njit(cache=True, nogil=True)
def _fill_columns_range(t0, t1, cuts, rows, indptr, indices, bins, fill, colrow, colbin):
    """Runs ``t0 .. t1 - 1`` of ``column_runs``: each entry's row and bin, in column order."""
    for t in range(t0, t1):
        at = fill[t]
        for i in range(cuts[t], cuts[t + 1]):
            r = rows[i]
            a = indptr[r]
            z = indptr[r + 1]
            idx = indices[a:z]  # slices from 0, unsigned positions: no wraparound checks
            bb = bins[a:z]
            for e in range(z - a):
                j = np.uint64(idx[e])
                q = np.uint64(at[j])
                colrow[q] = r
                colbin[q] = bb[e]
                at[j] += 1


@njit(cache=True, nogil=True, inline="always")
def lower_bound(a, lo, hi, x):
    """The first position in ``a[lo:hi]`` (ascending) whose value is >= ``x`` (``hi`` if none)."""
    while lo < hi:
        m = (lo + hi) >> 1
        if a[m] < x:
            lo = m + 1
        else:
            hi = m
    return lo


@njit(cache=True, nogil=True)
def sparse_split_range(k0, k1, colptr, colrow, colbin, default_bin, rows, tmp, blk_seg,
                       blk_begin, blk_end, seg_feature, left_table, counts, n_rows):
    """Pass 1 of the stable partition (``cpu.split_block_range``) over blocks ``k0 .. k1 - 1``.
    A row without an entry of its node's split field goes the default bin's way. For each
    block, the field's entries whose rows lie between the block's least and greatest row
    (two binary searches in the column) set a bit per row in a bitmap of this call's own
    where their bin goes the other way; then each row of the block goes the default bin's
    way, flipped by its bit, with no branch; then the bitmap's words in that range are
    cleared. Cost: the block's rows plus those column entries, read in order (a merge of
    rows and column took a mispredicted branch a row, twice the time).
    ``counts[k]``: block k's left rows."""
    words = np.zeros((n_rows >> 6) + 1, dtype=np.uint64)
    one = np.uint64(1)
    for k in range(k0, k1):
        s = blk_seg[k]
        f = seg_feature[s]
        b0 = blk_begin[k]
        b1 = blk_end[k]
        counts[k] = 0
        if b1 <= b0:
            continue
        rr = rows[b0:b1]  # slices read from 0: no wraparound check per read (8.2 -> 5.7 ms
        m = b1 - b0       # a tree of 300,000 rows)
        rmin = np.int64(rr[0])
        rmax = rmin
        for i in range(1, m):  # rows ascend within a node, but any order is right
            r = np.int64(rr[i])
            rmin = min(rmin, r)
            rmax = max(rmax, r)
        lt = left_table[s]
        dl = np.uint64(lt[default_bin[f]])
        e0 = lower_bound(colrow, colptr[f], colptr[f + 1], rmin)
        e1 = lower_bound(colrow, e0, colptr[f + 1], rmax + 1)
        cr = colrow[e0:e1]
        cb = colbin[e0:e1]
        for i in range(e1 - e0):
            r = np.uint64(cr[i])
            flip = np.uint64(lt[np.uint64(cb[i])]) ^ dl
            words[r >> np.uint64(6)] |= flip << (r & np.uint64(63))
        lo = np.uint64(b0)
        hi = np.uint64(b1 - 1)
        for i in range(m):
            r = rr[i]
            ru = np.uint64(r)
            fl = dl ^ ((words[ru >> np.uint64(6)] >> (ru & np.uint64(63))) & one)
            tmp[lo] = r
            tmp[hi] = r
            lo += fl
            hi -= one - fl
        for w in range(rmin >> 6, (rmax >> 6) + 1):
            words[w] = 0
        counts[k] = np.int64(lo) - b0


@njit(cache=True, nogil=True)
def sparse_predict_range(i0, i1, indptr, indices, bins, default_bin, feature, table_offset,
                         table, left, right, value, pred):
    """Rows ``i0 .. i1 - 1`` through one binned tree: ``pred[i] +=`` its leaf's value."""
    for i in range(i0, i1):
        node = 0
        while feature[node] >= 0:
            b = bin_of(indptr, indices, bins, default_bin, np.int64(i), feature[node])
            if table[table_offset[node] + b]:
                node = left[node]
            else:
                node = right[node]
        pred[i] += value[node]


def predict_sparse_rows(sb, binned_tree, pred):
    """``pred[i] +=`` the leaf value of row i of the ``SparseBins`` ``sb``."""
    t = binned_tree
    run_ranges(sparse_predict_range, sb.n_rows, sb.indptr, sb.indices, sb.bins, sb.default_bin,
               t.feature, t.table_offset, t.table, t.left, t.right, t.value, pred)


def predict_binned_any(bins, binned_tree, pred):
    """``pred[i] +=`` row i's leaf value, for dense bins (n, d) or ``SparseBins``."""
    if isinstance(bins, np.ndarray):
        predict_binned_rows(bins, binned_tree, pred)
    else:
        predict_sparse_rows(bins, binned_tree, pred)


# The training loop's launches: the heavy range kernels above through their ``prange`` twins
# (see ``parallel.chunks``), one OpenMP/TBB launch each; the light ones (the blocks' sums,
# the default bins of nodes of several blocks, the copy-back) as one call on the caller's
# thread. Numba's workers spin between launches and start at once; ``run_ranges``' Python
# threads wait for the GIL at every launch, which on a 2-core VM cost 40-80 us a launch and
# left a 0.5 ms kernel on one core (a sparse level's launches are 0.1-2 ms). Mixing the two
# kinds is slower than either: the learner asks ② and the subtraction for ``prange``
# launches too, and the Booster the gradients (``Grower.launches_prange``). Each twin costs
# about 1 s of compilation, once (Numba's cache).

@njit(parallel=True, cache=True, nogil=True)
def _hist_twin(n, c, *args):
    for q in prange(c):
        sparse_hist_range(n * q // c, n * (q + 1) // c, *args)


@njit(parallel=True, cache=True, nogil=True)
def _split_twin(n, c, *args):
    for q in prange(c):
        sparse_split_range(n * q // c, n * (q + 1) // c, *args)


# a block's histogram is zeroed and summed once: a block holds at least this many stored
# entries per histogram slot (on average), so that this stays a small share of its work
# (sparse-wide, 70,000 bins of 16 bytes: a root of 62 blocks spent as long zeroing and
# adding its blocks' histograms as summing its entries)
ENTRIES_PER_SLOT = 16


class SparseCPUBackend(Backend):
    """Numba kernels over one ``SparseBins`` (every row of the training set)."""

    name = "cpu"
    prange_launches = True  # the twins above

    def __init__(self, sparse_bins, offsets):
        sb = sparse_bins
        self.sb = sb
        self.bins_row = sb  # what RowPages.predict_binned hands back to predict_binned
        self.offsets_full = np.ascontiguousarray(offsets, dtype=np.int64)
        self.offsets = np.ascontiguousarray(offsets[:-1], dtype=np.int64)
        self.total_bins = int(offsets[-1])
        if self.offsets.shape[0] != sb.n_features:
            raise ValueError("the bin offsets do not match the sparse bins' fields")
        sb.check(np.diff(self.offsets_full))  # the kernels do no bounds checks
        self._tmp = np.empty(sb.n_rows, dtype=np.int32)
        self._buf = np.empty(0, dtype=np.float64)
        self.lanes = 1
        # ③ reads a split field's bins from its column: the entries by field (rows ascending)
        self._csc = csc_of(sb.indptr, sb.indices, sb.bins, sb.n_features)
        if self.total_bins >= 2**31:
            raise ValueError("too many bins for the sparse backend's int32 slots")
        self._slots = slots_of(sb.indices, sb.bins, self.offsets, self.total_bins)  # ①'s
        per_row = max(sb.nnz / max(sb.n_rows, 1), 1e-3)
        self.min_block = int(min(1 << 22, np.ceil(ENTRIES_PER_SLOT * self.total_bins / per_row)))

    def _scratch(self, size):
        """A reused float64 buffer of ``size`` (a fresh one each call costs page faults)."""
        if self._buf.size < size:
            self._buf = np.empty(size, dtype=np.float64)
        return self._buf[:size]

    def _blocks(self, begins, ends):
        block = max(int(block_rows(begins, ends)), self.min_block)
        if begins.shape[0] == 1:  # a lone node: an even number of equal blocks (two cores)
            size = int(ends[0] - begins[0])
            nb = -(-size // block)
            nb += nb & 1
            block = max(1, -(-size // nb))
        return make_blocks(begins, ends, block)

    def _check(self, rows, begins, ends):
        if begins.size and (begins.min() < 0 or ends.max() > rows.shape[0]
                            or np.any(ends < begins)):
            raise ValueError("node segments outside the rows")

    # ① ------------------------------------------------------------------------------
    def build_histograms(self, rows, begins, ends, g, h):
        begins = np.asarray(begins, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        self._check(rows, begins, ends)
        if g.shape[0] < self.sb.n_rows or h.shape[0] < self.sb.n_rows:
            raise ValueError("g and h need one value per row")
        sb = self.sb
        width = 2 * self.total_bins
        blk_seg, blk_begin, blk_end, first = self._blocks(begins, ends)
        nb = blk_begin.size
        n = begins.size
        totals = np.empty((nb, 2), dtype=np.float64)
        out = np.empty((n, width), dtype=np.float64)
        # a node's first block straight into its histogram, the others into scratch rows
        # added to it after (in block order: the sums of a zeroed buffer of all blocks)
        extra = self._scratch(max(nb - n, 1) * width).reshape(max(nb - n, 1), width)
        n_tasks = min(nb, numba.get_num_threads() * CHUNKS_PER_THREAD)  # runs of equal rows
        _hist_twin(n_tasks, n_tasks, balanced_cuts(blk_begin, blk_end, n_tasks), sb.indptr,
                   self._slots, g, h, rows, blk_seg, blk_begin, blk_end, first, out, extra,
                   totals, self.offsets_full, sb.default_bin)
        if nb > n:
            n_chunks = (width + REDUCE_CHUNK - 1) // REDUCE_CHUNK
            add_blocks_range(0, n * n_chunks, out, extra, first, n_chunks)
            several = np.flatnonzero(np.diff(first) > 1)  # nodes the histogram kernel left
            fill_default_bins(0, several.size, several, out, first, totals, self.offsets_full,
                              sb.default_bin)
        return out.reshape(begins.size, self.total_bins, 2)

    # ③ ------------------------------------------------------------------------------
    def partition(self, rows, begins, ends, features, left_tables):
        begins = np.asarray(begins, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        self._check(rows, begins, ends)
        features = np.asarray(features, dtype=np.int64)
        if features.size and (features.min() < 0 or features.max() >= self.sb.n_features):
            raise ValueError("split feature out of range")
        blk_seg, blk_begin, blk_end, first = make_blocks(begins, ends, block_rows(begins, ends))
        counts = np.empty(blk_begin.size, dtype=np.int64)
        colptr, colrow, colbin = self._csc
        nb = blk_begin.size
        _split_twin(nb, chunks(nb), colptr, colrow, colbin, self.sb.default_bin, rows, self._tmp,
                    blk_seg, blk_begin, blk_end, features, left_tables, counts, self.sb.n_rows)
        mids = np.empty(begins.size, dtype=np.int64)
        left_pos, right_pos = split_offsets(blk_begin, blk_end, begins, first, counts, mids)
        copy_back_range(0, nb, rows, self._tmp, blk_begin, blk_end, counts, left_pos, right_pos)
        return mids

    # ⑤ ------------------------------------------------------------------------------
    def add_leaf_values(self, rows, begins, ends, values, pred):
        begins = np.asarray(begins, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        blk_seg, blk_begin, blk_end, _ = make_blocks(begins, ends, 16384)
        add_values_blocks(rows, blk_seg, blk_begin, blk_end, np.asarray(values, dtype=np.float64),
                          pred)

    def predict_binned(self, bins_row, binned_tree, pred):
        predict_binned_any(bins_row, binned_tree, pred)
