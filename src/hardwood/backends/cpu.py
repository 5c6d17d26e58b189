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
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from .split import RT_EPS
from ..parallel import run_ranges
from ._intrinsics import add_pair, prefetch
from .base import Backend
from .jit_cache import is_compiled

BLOCK = 16384
PREFETCH_AHEAD = 16  # rows


@njit(cache=True, nogil=True)
def make_blocks(begins, ends, block):
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


# A lone node (lossguide) of at most SERIAL_ROWS rows runs on one thread; up to BLOCK rows it
# is cut into two equal blocks so that two cores work. Block sizes depend on the node size
# only, so the sums (and the trees) do not depend on the thread count. The fused grower and
# the learner's backend cut blocks alike, so that they add the same numbers in the same order.
SERIAL_ROWS = 3072


@njit(cache=True, nogil=True)
def block_rows(begins, ends):
    """Rows per block. A lone node is cut into an even number of equal blocks (at most
    BLOCK rows each), so that two cores finish together: 40,000 rows as 16384 + 16384 +
    7232 kept one core idle for a third of the time."""
    if begins.shape[0] == 1:
        size = ends[0] - begins[0]
        nb = (size + BLOCK - 1) // BLOCK
        nb += nb & 1
        return max(1, (size + nb - 1) // nb)
    return BLOCK


HIST_CACHE_BINS = 16384  # bins per pass: (g, h) float64 pairs of 256 KiB stay in L2


@njit(cache=True, nogil=True)
def feature_groups(offsets, total_bins):
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


@njit(cache=True, nogil=True)
def hist_block_range(k0, k1, B, g, h, rows, blk_begin, blk_end, offsets, groups, out, lanes):
    """Blocks ``k0 .. k1 - 1``: block k's rows into out[k] (``lanes`` copies of a flat
    histogram each)."""
    for k in range(k0, k1):
        hb = out[k]
        hb[:] = 0.0
        hist_rows(B, g, h, rows, blk_begin[k], blk_end[k], offsets, groups, hb, lanes)


@njit(parallel=True, cache=True, nogil=True)
def hist_blocks(B, g, h, rows, blk_begin, blk_end, offsets, blocks, pool2d, target, lanes):
    """Every block's histogram (``hist_block_range`` in parallel, for the fused grower): block
    k into ``pool2d[target[k]]`` where ``target[k] >= 0`` (the only block of its node, one
    lane: its sums are the node's, with no buffer to clear and sum), else into
    ``blocks[-target[k] - 1]`` (``lanes`` copies)."""
    groups = feature_groups(offsets, pool2d.shape[1] // 2)
    for k in prange(blk_begin.shape[0]):
        kk = np.int64(k)
        t = target[kk]
        hb = pool2d[t] if t >= 0 else blocks[-t - 1]
        hb[:] = 0.0
        hist_rows(B, g, h, rows, blk_begin[kk], blk_end[kk], offsets, groups, hb,
                  np.int64(1) if t >= 0 else lanes)


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


REDUCE_CHUNK = 1024  # bins of one reduction task


@njit(cache=True, nogil=True)
def reduce_range(t0, t1, blocks, seg_first, pool2d, dst, lanes):
    """Tasks ``t0 .. t1 - 1`` of ``pool2d[dst[s]] = the sum of segment s's blocks (and of
    their lanes)``, task t being segment ``t // n_chunks``'s bins of chunk ``t % n_chunks``."""
    width = pool2d.shape[1]
    n_chunks = (width + REDUCE_CHUNK - 1) // REDUCE_CHUNK
    acc = np.empty(REDUCE_CHUNK)
    for t in range(t0, t1):
        s = t // n_chunks
        c0 = (t % n_chunks) * REDUCE_CHUNK
        m = min(width, c0 + REDUCE_CHUNK) - c0
        row = pool2d[dst[s]]
        # each bin's sum over the blocks in block order, lanes inner; the chunk's bins side
        # by side, so that the loads run along each block (vectorised) and not across them
        acc[:m] = 0.0
        for k in range(seg_first[s], seg_first[s + 1]):
            for lane in range(lanes):
                at = lane * width + c0
                line = blocks[k][at:at + m]  # from 0: no wraparound check per cell
                for c in range(m):
                    acc[c] += line[c]
        for c in range(m):  # (a slice assignment compiled Numba's shape-error message: 3 s)
            row[c0 + c] = acc[c]


def reduce_tasks(seg_first, width):
    return (seg_first.shape[0] - 1) * ((width + REDUCE_CHUNK - 1) // REDUCE_CHUNK)


@njit(parallel=True, cache=True, nogil=True)
def reduce_into(blocks, seg_first, pool2d, dst, lanes):
    """``reduce_range`` over every task, in parallel (for the fused grower)."""
    width = pool2d.shape[1]
    n = (seg_first.shape[0] - 1) * ((width + REDUCE_CHUNK - 1) // REDUCE_CHUNK)
    for t in prange(n):
        tt = np.int64(t)
        reduce_range(tt, tt + 1, blocks, seg_first, pool2d, dst, lanes)


@njit(cache=True, nogil=True)
def hist_serial(B, g, h, rows, b, e, offsets, out):
    out[:] = 0.0
    hist_rows(B, g, h, rows, b, e, offsets, feature_groups(offsets, out.shape[0] // 2), out,
              np.int64(1))


# The roots of a multiclass round's trees (issue 18). The K trees of a round start from the
# same rows, so their K root histograms come from one pass over those rows: each row's bins
# read once for CLASS_GROUP classes at a time, whose (g, h) pairs of one bin fill one 64-byte
# line, added with one vector add. The rows are cut into the blocks (and lanes) that one
# tree's root cuts (``_build_hists``), and each block's sums are summed in block order: every
# class's bins are the very floats its own pass adds, so the trees do not change. A block
# keeps the bins of a group of fields at a time, at most CLASS_HIST_BYTES, so that it stays
# in a core's cache and the memory stays bounded however wide the rows are.
# Measured (200,000 x 40, 8 classes, one thread): 40 ms against 53 ms for eight passes.

CLASS_GROUP = 4  # classes per pass: 4 (g, h) pairs, one 64-byte line per bin
CLASS_HIST_BYTES = 768 << 10  # a block's buffer of one pass (a core's L2 is 1 MiB here)
CLASS_CHUNK = 64  # rows whose (g, h) are gathered together before their bins are added


@intrinsic
def add_line(typingctx, arr, idx, src, sidx):
    """``arr[idx:idx + 8] += src[sidx:sidx + 8]`` as one ``<8 x double>`` load, add and store
    (each lane the scalar add: the same sums), no negative-index fix-up (both runs must be in
    range): ``add_pair`` for CLASS_GROUP classes' pairs of one bin."""
    if (not isinstance(arr, types.Array) or arr.ndim != 1 or arr.dtype != types.float64
            or not isinstance(src, types.Array) or src.ndim != 1
            or src.dtype != types.float64 or not isinstance(idx, types.Integer)
            or not isinstance(sidx, types.Integer)):
        return None
    sig = types.void(arr, idx, src, sidx)

    def codegen(context, builder, signature, args):
        aty, _, sty, _ = signature.args
        a = context.make_array(aty)(context, builder, args[0])
        b = context.make_array(sty)(context, builder, args[2])
        ap = cgutils.get_item_pointer(context, builder, aty, a, [args[1]], wraparound=False)
        bp = cgutils.get_item_pointer(context, builder, sty, b, [args[3]], wraparound=False)
        vty = ir.VectorType(ir.DoubleType(), 2 * CLASS_GROUP)
        avp = builder.bitcast(ap, vty.as_pointer())
        bv = builder.load(builder.bitcast(bp, vty.as_pointer()), align=8)
        builder.store(builder.fadd(builder.load(avp, align=8), bv), avp, align=8)
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True)
def class_field_groups(offsets, total_bins, lanes):
    """Consecutive fields whose bins fill at most CLASS_HIST_BYTES of a block's buffer (one
    field at least): boundaries ``starts`` (``starts[-1] = d``)."""
    d = offsets.shape[0]
    cap = max(1, CLASS_HIST_BYTES // (16 * CLASS_GROUP * lanes))
    starts = [0]
    for j in range(1, d):
        if offsets[j] - offsets[starts[-1]] >= cap:
            starts.append(j)
    starts.append(d)
    return np.array(starts, dtype=np.int64)


@njit(cache=True, nogil=True)
def class_hist_range(k0, k1, B, g, h, rows, blk_begin, blk_end, offsets, j0, j1, c0, out,
                     lanes):
    """Blocks ``k0 .. k1 - 1`` of fields ``j0 .. j1 - 1`` and classes ``c0 ..`` (CLASS_GROUP of
    them at most): ``out[k]`` = ``lanes`` copies of (bin of the group, class, g|h), bins
    counted from field ``j0``'s first (rows on 64-byte lines: see ``aligned_buffer``)."""
    c1 = min(g.shape[0], c0 + CLASS_GROUP)
    w = 2 * CLASS_GROUP
    d = B.shape[1]
    Bf = B.reshape(-1)
    b0 = offsets[j0]
    lane_width = out.shape[1] // lanes
    v = np.zeros(CLASS_CHUNK * w)  # the padding classes of the last group add zeros
    for k in range(k0, k1):
        hb = out[k]
        hb[:] = 0.0
        for q0 in range(blk_begin[k], blk_end[k], CLASS_CHUNK):
            q1 = min(q0 + CLASS_CHUNK, blk_end[k])
            for p in range(q0, q1):
                r = rows[p]
                o = (p - q0) * w
                for c in range(c0, c1):
                    v[o + 2 * (c - c0)] = np.float64(g[c, r])
                    v[o + 2 * (c - c0) + 1] = np.float64(h[c, r])
            for p in range(q0, q1):
                row = np.uint64(rows[p]) * np.uint64(d)
                o = (p - q0) * w
                base = np.uint64((p & (lanes - 1)) * lane_width)
                for j in range(j0, j1):
                    uj = np.uint64(j)
                    at = base + np.uint64(w) * np.uint64(offsets[uj] - b0 + np.int64(Bf[row + uj]))
                    add_line(hb, at, v, o)


@njit(cache=True, nogil=True)
def class_reduce_range(t0, t1, blocks, lanes, b0, c0, out):
    """Tasks ``t0 .. t1 - 1``: task t sums bins ``t * REDUCE_CHUNK ..`` of the group over the
    blocks (in block order, lanes inner, as ``reduce_range``) into ``out[c]``'s bins from
    ``b0``, for the classes ``c0 ..`` of the pass."""
    c1 = min(out.shape[0], c0 + CLASS_GROUP)
    w = 2 * CLASS_GROUP
    width = blocks.shape[1] // lanes
    n_bins = width // w
    acc = np.empty(w)
    for t in range(t0, t1):
        lo = t * REDUCE_CHUNK
        hi = min(n_bins, lo + REDUCE_CHUNK)
        for b in range(lo, hi):
            acc[:] = 0.0
            for k in range(blocks.shape[0]):  # a bin's line of each block, in block order
                for lane in range(lanes):
                    at = lane * width + b * w
                    for c in range(w):
                        acc[c] += blocks[k, at + c]
            for c in range(2 * (c1 - c0)):
                out[c0 + (c >> 1), 2 * (b0 + b) + (c & 1)] = acc[c]


@njit(cache=True, nogil=True)
def aligned_buffer(size):
    """``size`` float64 starting on a 64-byte line: block histograms of a multiple of 8
    doubles cut from it start on lines too, so ``add_line`` never splits one."""
    buf = np.empty(size + 8)
    skip = ((64 - buf.ctypes.data % 64) % 64) // 8
    return buf[skip:skip + size]


@njit(cache=True, nogil=True)
def _group_bins(offsets, total_bins, groups, gi):
    end = offsets[groups[gi + 1]] if groups[gi + 1] < offsets.shape[0] else total_bins
    return offsets[groups[gi]], end - offsets[groups[gi]]


def class_root_blocks(n, lanes):
    """(blk_begin, blk_end, lanes) of one tree's root over ``n`` rows, as ``_build_hists``
    cuts it (a root of at most SERIAL_ROWS rows: one block, one lane)."""
    begins, ends = np.zeros(1, dtype=np.int64), np.full(1, n, dtype=np.int64)
    if n <= SERIAL_ROWS:
        return begins, ends, 1
    _, blk_begin, blk_end, _ = make_blocks(begins, ends, block_rows(begins, ends))
    return blk_begin, blk_end, lanes


@njit(parallel=True, cache=True, nogil=True)
def class_hists_parallel(B, g, h, rows, blk_begin, blk_end, offsets, groups, total_bins, out,
                         lanes):
    """``class_hist_range`` and ``class_reduce_range`` of every pass, in parallel (the fused
    grower's path: no Python-thread launch between OpenMP kernels)."""
    nb = blk_begin.shape[0]
    w = 2 * CLASS_GROUP
    widest = 0
    for gi in range(groups.shape[0] - 1):
        widest = max(widest, _group_bins(offsets, total_bins, groups, gi)[1])
    buf = aligned_buffer(nb * lanes * widest * w)
    for c0 in range(0, g.shape[0], CLASS_GROUP):
        for gi in range(groups.shape[0] - 1):
            j0 = groups[gi]
            j1 = groups[gi + 1]
            b0, n_bins = _group_bins(offsets, total_bins, groups, gi)
            blocks = buf[:nb * lanes * n_bins * w].reshape((nb, lanes * n_bins * w))
            for k in prange(nb):
                kk = np.int64(k)
                class_hist_range(kk, kk + 1, B, g, h, rows, blk_begin, blk_end, offsets, j0,
                                 j1, c0, blocks, lanes)
            for t in prange((n_bins + REDUCE_CHUNK - 1) // REDUCE_CHUNK):
                tt = np.int64(t)
                class_reduce_range(tt, tt + 1, blocks, lanes, b0, c0, out)


@njit(cache=True, nogil=True)
def partition_serial(Bcol, rows, tmp, b, e, feature, table):
    """Left rows compacted in place, right rows through ``tmp``. Unsigned indices and no
    software prefetch (one lookup per row leaves the out-of-order core enough loads in
    flight): 4.1 -> 2.2 ns per row on 3,000 rows of 1M."""
    col = Bcol[feature]
    lp = np.uint64(b)
    rp = np.uint64(b)
    for p in range(b, e):
        r = rows[p]
        f = np.uint64(table[np.uint64(col[np.uint64(r)])])
        rows[lp] = r  # branch-free: lp <= p, and a right row's copy is overwritten later
        tmp[rp] = r
        lp += f
        rp += np.uint64(1) - f
    for k in range(rp - np.uint64(b)):
        rows[lp + k] = tmp[np.uint64(b) + k]
    return np.int64(lp)


# Stable partition of every segment by its split, in two passes over blocks and a serial
# step between them (``partition_blocks`` runs them in parallel):
# 1. each block writes its rows into its own range of ``tmp``: left rows forwards from the
#    start, right rows backwards from the end. Every row is stored at both ends and only one
#    pointer moves, so there is no branch on the (unpredictable) direction;
# 2. blocks copy their two runs back into ``rows`` at the segment's left and right offsets
#    (the right run read backwards, so both children stay in ascending row order).
# 2.85 -> 1.85 ns per row (1M rows, 2 threads) against flags + scatter + copy-back.

@njit(cache=True, nogil=True)
def split_block_range(k0, k1, Bcol, rows, tmp, blk_seg, blk_begin, blk_end, seg_feature,
                      left_table, counts):
    """Pass 1 over blocks ``k0 .. k1 - 1``; ``counts[k]``: block k's left rows."""
    for k in range(k0, k1):
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


@njit(cache=True, nogil=True)
def split_offsets(blk_begin, blk_end, seg_begin, seg_first, counts, mids):
    """Where each block's left and right runs go: (left_pos, right_pos); ``mids[s]``: the
    first right row of segment s."""
    nb = blk_begin.shape[0]
    left_pos = np.empty(nb, dtype=np.int64)
    right_pos = np.empty(nb, dtype=np.int64)
    for s in range(seg_begin.shape[0]):
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
    return left_pos, right_pos


@njit(cache=True, nogil=True)
def copy_back_range(k0, k1, rows, tmp, blk_begin, blk_end, counts, left_pos, right_pos):
    """Pass 2 over blocks ``k0 .. k1 - 1``. The loops index slices from 0: an index that
    Numba cannot prove non-negative costs a wraparound check per element, which kept these
    copies from vectorising (3.3 -> 0.8 ms a tree of 300,000 rows)."""
    for k in range(k0, k1):
        b = blk_begin[k]
        e = blk_end[k]
        n_left = counts[k]
        n_right = e - b - n_left
        dst = rows[left_pos[k]:left_pos[k] + n_left]
        src = tmp[b:b + n_left]
        for i in range(n_left):
            dst[i] = src[i]
        dst = rows[right_pos[k]:right_pos[k] + n_right]
        src = tmp[b + n_left:e]
        for i in range(n_right):
            dst[i] = src[n_right - 1 - i]


@njit(parallel=True, cache=True, nogil=True)
def partition_blocks(Bcol, rows, tmp, blk_seg, blk_begin, blk_end, seg_begin, seg_first,
                      seg_feature, left_table, mids):
    """The stable partition's passes, in parallel (for the fused grower)."""
    nb = blk_begin.shape[0]
    counts = np.zeros(nb, dtype=np.int64)
    for k in prange(nb):
        kk = np.int64(k)
        split_block_range(kk, kk + 1, Bcol, rows, tmp, blk_seg, blk_begin, blk_end,
                          seg_feature, left_table, counts)
    left_pos, right_pos = split_offsets(blk_begin, blk_end, seg_begin, seg_first, counts, mids)
    for k in prange(nb):
        kk = np.int64(k)
        copy_back_range(kk, kk + 1, rows, tmp, blk_begin, blk_end, counts, left_pos, right_pos)


@njit(cache=True, nogil=True)
def add_values_range(k0, k1, rows, blk_seg, blk_begin, blk_end, seg_value, pred):
    for k in range(k0, k1):
        v = seg_value[blk_seg[k]]
        rr = rows[blk_begin[k]:blk_end[k]]
        for i in range(rr.shape[0]):
            pred[np.uint64(rr[i])] += v  # unsigned: no wraparound check (as copy_back_range)


@njit(parallel=True, cache=True, nogil=True)
def add_values_blocks(rows, blk_seg, blk_begin, blk_end, seg_value, pred):
    """``add_values_range`` over every block, in parallel (after the fused grower: a launch
    on Python threads right after its OpenMP kernels shares the cores with their spin-wait,
    about 1.4 ms more per tree on 800,000 rows)."""
    for k in prange(blk_begin.shape[0]):
        kk = np.int64(k)
        add_values_range(kk, kk + 1, rows, blk_seg, blk_begin, blk_end, seg_value, pred)


@njit(parallel=True, cache=True, nogil=True)
def fill_row_ids(rows):
    """rows[i] = i, in place (a tree over every row starts from this order; one thread copies
    800,000 ids in 0.4 ms, a tenth of a tree of higgs)."""
    for i in prange(rows.shape[0]):
        rows[i] = i


@njit(cache=True, nogil=True)
def predict_binned_range(i0, i1, B, feature, table_offset, table, left, right, value, pred):
    """Rows ``i0 .. i1 - 1`` of the binned matrix ``B`` through one tree: ``pred[i] +=`` its
    leaf's value."""
    for i in range(i0, i1):
        node = 0
        while feature[node] >= 0:
            if table[table_offset[node] + B[i, feature[node]]]:
                node = left[node]
            else:
                node = right[node]
        pred[i] += value[node]


def predict_binned_rows(bins_row, binned_tree, pred):
    """``pred[i] +=`` the leaf value of row i of ``bins_row`` in ``binned_tree``."""
    t = binned_tree
    run_ranges(predict_binned_range, bins_row.shape[0], bins_row, t.feature, t.table_offset,
               t.table, t.left, t.right, t.value, pred)


@njit(cache=True, nogil=True)
def predict_binned_by_value_range(i0, i1, B, raw, column, feature, table_offset, table, left,
                                  right, threshold, value, pred):
    """``predict_binned_range``, but at a field ``f`` with ``column[f] >= 0`` a row whose
    ``raw[i, column[f]]`` is a number goes by it (``x <= threshold``), not by its bin."""
    for i in range(i0, i1):
        node = 0
        while feature[node] >= 0:
            f = feature[node]
            c = column[f]
            if c >= 0 and not np.isnan(raw[i, c]):
                go_left = raw[i, c] <= threshold[node]
            else:
                go_left = table[table_offset[node] + B[i, f]] != 0
            node = left[node] if go_left else right[node]
        pred[i] += value[node]


def predict_binned_rows_by_value(bins_row, raw, column, binned_tree, threshold, pred):
    """``predict_binned_rows``, each row going by its value at the fields of ``column``
    where ``raw`` has one (NaN: by its bin), against ``threshold``, the tree's."""
    t = binned_tree
    run_ranges(predict_binned_by_value_range, bins_row.shape[0], bins_row, raw, column,
               t.feature, t.table_offset, t.table, t.left, t.right,
               np.ascontiguousarray(threshold, dtype=np.float64), t.value, pred)


_NO_ROOT = np.zeros(0)  # grow_tree builds the root's histogram itself


def _segments(begins, ends):
    return np.asarray(begins, dtype=np.int64), np.asarray(ends, dtype=np.int64)


class CPUBackend(Backend):
    """Numba kernels over the in-memory binned matrices."""

    name = "cpu"

    def __init__(self, bins_row: np.ndarray, bins_col: np.ndarray, offsets: np.ndarray,
                 lanes=None):
        self.bins_row = bins_row
        self.bins_col = bins_col
        self.offsets = np.ascontiguousarray(offsets[:-1], dtype=np.int64)
        self.total_bins = int(offsets[-1])
        self._tmp = np.empty(bins_row.shape[0], dtype=np.int32)
        self.lanes = choose_lanes(bins_row) if lanes is None else int(lanes)
        self._groups = feature_groups(self.offsets, self.total_bins)

    # ① ------------------------------------------------------------------------------
    def build_histograms(self, rows, begins, ends, g, h):
        """Blocks cut and summed as the fused grower's ``_build_hists`` does (same sums)."""
        begins, ends = _segments(begins, ends)
        out = np.empty((begins.size, 2 * self.total_bins), dtype=np.float64)
        if begins.size == 1 and ends[0] - begins[0] <= SERIAL_ROWS:
            hist_serial(self.bins_row, g, h, rows, begins[0], ends[0], self.offsets, out[0])
        else:
            blk_seg, blk_begin, blk_end, first = make_blocks(begins, ends,
                                                              block_rows(begins, ends))
            lanes = self.lanes
            blocks = np.empty((blk_begin.size, lanes * 2 * self.total_bins), dtype=np.float64)
            run_ranges(hist_block_range, blk_begin.size, self.bins_row, g, h, rows, blk_begin,
                       blk_end, self.offsets, self._groups, blocks, lanes)
            run_ranges(reduce_range, reduce_tasks(first, out.shape[1]), blocks, first, out,
                       np.arange(begins.size), lanes)
        return out.reshape(begins.size, self.total_bins, 2)

    def class_root_histograms(self, rows, g, h, parallel=False):
        """① The root histograms of K trees over the same ``rows`` under ``g[k], h[k]``
        ((K, n) arrays), in one pass: (K, 2 * total_bins) float64, row k equal to
        ``build_histograms(rows, [0], [n], g[k], h[k])``'s bit for bit. ``parallel``: one
        ``prange`` kernel (after the fused grower), else serial kernels on Python threads."""
        out = np.empty((g.shape[0], 2 * self.total_bins), dtype=np.float64)
        blk_begin, blk_end, lanes = class_root_blocks(rows.shape[0], self.lanes)
        groups = class_field_groups(self.offsets, self.total_bins, lanes)
        if parallel:
            class_hists_parallel(self.bins_row, g, h, rows, blk_begin, blk_end, self.offsets,
                                 groups, self.total_bins, out, lanes)
            return out
        spans = [_group_bins(self.offsets, self.total_bins, groups, gi)
                 for gi in range(groups.size - 1)]
        w = 2 * CLASS_GROUP
        nb = blk_begin.size
        buf = aligned_buffer(nb * lanes * max(n_bins for _, n_bins in spans) * w)
        for c0 in range(0, g.shape[0], CLASS_GROUP):
            for gi, (b0, n_bins) in enumerate(spans):
                blocks = buf[:nb * lanes * n_bins * w].reshape(nb, lanes * n_bins * w)
                run_ranges(class_hist_range, blk_begin.size, self.bins_row, g, h, rows,
                           blk_begin, blk_end, self.offsets, groups[gi], groups[gi + 1], c0,
                           blocks, lanes)
                run_ranges(class_reduce_range, -(-n_bins // REDUCE_CHUNK), blocks, lanes, b0,
                           c0, out)
        return out

    # ③ ------------------------------------------------------------------------------
    def partition(self, rows, begins, ends, features, left_tables):
        begins, ends = _segments(begins, ends)
        features = np.asarray(features, dtype=np.int64)
        if begins.size == 1 and ends[0] - begins[0] <= SERIAL_ROWS:
            mid = partition_serial(self.bins_col, rows, self._tmp, begins[0], ends[0],
                                    features[0], left_tables[0])
            return np.full(1, mid, dtype=np.int64)
        blk_seg, blk_begin, blk_end, first = make_blocks(begins, ends, block_rows(begins, ends))
        counts = np.empty(blk_begin.size, dtype=np.int64)
        run_ranges(split_block_range, blk_begin.size, self.bins_col, rows, self._tmp, blk_seg,
                   blk_begin, blk_end, features, left_tables, counts)
        mids = np.empty(begins.size, dtype=np.int64)
        left_pos, right_pos = split_offsets(blk_begin, blk_end, begins, first, counts, mids)
        run_ranges(copy_back_range, blk_begin.size, rows, self._tmp, blk_begin, blk_end, counts,
                   left_pos, right_pos)
        return mids

    # ⑤ ------------------------------------------------------------------------------
    def add_leaf_values(self, rows, begins, ends, values, pred):
        begins, ends = _segments(begins, ends)
        blk_seg, blk_begin, blk_end, _ = make_blocks(begins, ends, BLOCK)
        run_ranges(add_values_range, blk_begin.size, rows, blk_seg, blk_begin, blk_end,
                   np.asarray(values, dtype=np.float64), pred)

    def add_fused_leaf_values(self, rows, begins, ends, values, pred):
        """``add_leaf_values`` for the leaves of ``grow_fused``, with a ``prange`` kernel."""
        begins, ends = _segments(begins, ends)
        blk_seg, blk_begin, blk_end, _ = make_blocks(begins, ends, BLOCK)
        add_values_blocks(rows, blk_seg, blk_begin, blk_end, np.asarray(values, dtype=np.float64),
                          pred)

    def predict_binned(self, bins_row, binned_tree, pred):
        predict_binned_rows(bins_row, binned_tree, pred)

    def fill_row_ids(self, rows, parallel=False):
        if parallel:  # after the fused grower's prange kernels
            fill_row_ids(rows)
        else:
            super().fill_row_ids(rows)

    # the fused one-call grower (backends/cpu_grower.py): one in-core page only ----------
    def grow_fused(self, rows, g, h, layout, tree_mask, keys, k_bynode, p, max_leaves, cap,
                   n_slots, cycles, root=None):
        """One whole tree in one Numba call: the node arrays of ``Grower.finish_arrays``.
        ``layout``: (field offsets, value bins per field, is categorical, widest field,
        missing rule per field);
        ``p``: GrowParams; ``cycles[0..2]`` accumulate the cycles of ① ② ③; ``root``: the
        root's histogram (flat (g, h) pairs) if already built."""
        from .cpu_grower import grow_tree

        return grow_tree(*self._fused_args(rows, g, h, layout, tree_mask, keys, k_bynode, p,
                                           max_leaves, cap, n_slots, cycles, root))

    def fused_compiled(self, *args):
        """Whether ``grow_fused(*args)`` would run without compiling (``jit_cache``)."""
        from .cpu_grower import grow_tree

        return is_compiled(grow_tree, self._fused_args(*args))

    def _fused_args(self, rows, g, h, layout, tree_mask, keys, k_bynode, p, max_leaves, cap,
                    n_slots, cycles, root=None):
        offsets, n_value_bins, is_cat, max_field_bins, missing_rules = layout
        return (self.bins_row, self.bins_col, g, h, rows, self._tmp, offsets, n_value_bins,
                is_cat, tree_mask, keys, k_bynode, float(p.reg_lambda), float(p.reg_alpha),
                float(p.min_child_weight), float(p.gamma), int(p.max_cat_to_onehot),
                int(p.max_cat_threshold), p.grow_policy == "lossguide", int(p.max_depth),
                int(max_leaves), cap, n_slots, self.total_bins, max_field_bins, cycles,
                self.lanes, _NO_ROOT if root is None else root, bool(p.drop_unsplittable),
                0.0 if p.drop_unsplittable else RT_EPS, float(p.min_data_in_leaf),
                missing_rules)
