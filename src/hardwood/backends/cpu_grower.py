"""The CPU fast path: one whole tree grown inside a single Numba function.

The Python ``Grower`` (train/grower.py) drives any backend one level or one node at a time;
for the CPU backend that Python work per node dominates once trees have hundreds of leaves
(lossguide, deep trees). This module grows the same tree with no Python per node: the
growth policy, histogram pool, split finding (②), partition (③) and histogram building (①)
all run in Numba. Big nodes use the block-parallel ``prange`` kernels of ``cpu.py``; a single
small node (lossguide) uses serial twins to avoid the cost of a parallel launch.

The Python grower with the reference backend is this function's naive twin: the tests check
that both grow identical trees.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .split import categorical_left_set, find_best_splits_counted, node_feature_masks
from ._intrinsics import cycles
from .cpu import (SERIAL_ROWS, hist_blocks, hist_serial, make_blocks,
                  partition_blocks, partition_serial, reduce_into, block_rows)


@njit(cache=True, nogil=True)
def _build_hists(B, g, h, rows, begins, ends, offsets, pool2d, dst, lanes):
    """Histograms of the segments into pool rows ``dst``."""
    n_seg = begins.shape[0]
    if n_seg == 1 and ends[0] - begins[0] <= SERIAL_ROWS:
        hist_serial(B, g, h, rows, begins[0], ends[0], offsets, pool2d[dst[0]])
        return
    blk_seg, blk_begin, blk_end, first = make_blocks(begins, ends, block_rows(begins, ends))
    # a node of one block (in one lane) is summed straight into its pool row: the same sums
    # (a reduction of one block adds it to 0.0), without a block buffer to clear and copy
    target = np.empty(blk_begin.shape[0], dtype=np.int64)
    n_multi = 0
    n_buf = 0
    for s in range(n_seg):
        if first[s + 1] - first[s] == 1 and lanes == 1:
            target[first[s]] = dst[s]
        else:
            n_multi += 1
            for k in range(first[s], first[s + 1]):
                n_buf += 1
                target[k] = -n_buf
    blocks = np.empty((n_buf, lanes * pool2d.shape[1]))
    hist_blocks(B, g, h, rows, blk_begin, blk_end, offsets, blocks, pool2d, target, lanes)
    if n_multi == 0:
        return
    m_first = np.zeros(n_multi + 1, dtype=np.int64)
    m_dst = np.empty(n_multi, dtype=np.int64)
    i = 0
    for s in range(n_seg):
        if not (first[s + 1] - first[s] == 1 and lanes == 1):
            m_first[i + 1] = m_first[i] + first[s + 1] - first[s]
            m_dst[i] = dst[s]
            i += 1
    reduce_into(blocks, m_first, pool2d, m_dst, lanes)


@njit(cache=True, nogil=True)
def _partition(Bcol, rows, tmp, begins, ends, features, tables):
    n_seg = begins.shape[0]
    mids = np.empty(n_seg, dtype=np.int64)
    if n_seg == 1 and ends[0] - begins[0] <= SERIAL_ROWS:
        mids[0] = partition_serial(Bcol, rows, tmp, begins[0], ends[0], features[0], tables[0])
        return mids
    blk_seg, blk_begin, blk_end, first = make_blocks(begins, ends, block_rows(begins, ends))
    partition_blocks(Bcol, rows, tmp, blk_seg, blk_begin, blk_end, begins, first,
                      features, tables, mids)
    return mids


@njit(parallel=True, cache=True, nogil=True)
def _subtract(pool2d, big, small):
    """pool[big[i]] -= pool[small[i]] (parent histogram becomes the larger child's)."""
    n = big.shape[0]
    width = pool2d.shape[1]
    n_chunks = (width + 4095) // 4096
    for t in prange(n * n_chunks):
        i = t // n_chunks
        c0 = (t % n_chunks) * 4096
        c1 = min(width, c0 + 4096)
        a = pool2d[big[i]][c0:c1]  # slices from 0: no wraparound check per cell
        s = pool2d[small[i]][c0:c1]
        for c in range(c1 - c0):
            a[c] -= s[c]


@njit(cache=True, nogil=True)
def grow_tree(B, Bcol, g, h, rows, tmp, offsets, n_value_bins, is_cat, tree_mask,
              keys, k_bynode, lam, alpha, mcw, gamma, max_onehot, max_thr, lossguide,
              max_depth, max_leaves, cap, n_slots, total_bins, max_field_bins, prof, lanes,
              root, drop_unsplittable, gain_floor, min_count, missing_rules):
    """Grow one tree over ``rows`` (reordered in place). Returns the node arrays
    (feature, code, default_left, left, right, begin, end, G, H, gain, tables).
    ``prof[0..2]`` accumulate CPU cycles spent in ① histograms, ② split finding, ③ partition.
    ``root``: the root's histogram, flat (g, h) pairs, when the caller built it (the roots of
    a multiclass round, ``cpu.class_root_histograms``), else empty. ``drop_unsplittable``:
    LightGBM's rule, a numeric field without a split above ``gamma`` in a node is not scanned
    in its subtree (``Grower``); a split's gain must exceed ``gain_floor`` too.
    ``min_count`` > 0: LightGBM's ``min_data_in_leaf`` (``split._scan_numeric_short``).
    ``missing_rules``: each field's missing rule (``split.XGB_MISSING``, ...)."""
    feature = np.full(cap, -1, dtype=np.int64)
    code = np.zeros(cap, dtype=np.int64)
    dl = np.zeros(cap, dtype=np.bool_)
    left = np.full(cap, -1, dtype=np.int64)
    right = np.full(cap, -1, dtype=np.int64)
    begin = np.zeros(cap, dtype=np.int64)
    end = np.zeros(cap, dtype=np.int64)
    G = np.zeros(cap)
    H = np.zeros(cap)
    depth = np.zeros(cap, dtype=np.int64)
    gain = np.zeros(cap)
    slot = np.full(cap, -1, dtype=np.int64)
    tables = np.zeros((cap, max_field_bins), dtype=np.uint8)
    c_gain = np.full(cap, -np.inf)
    c_feat = np.zeros(cap, dtype=np.int64)
    c_code = np.zeros(cap, dtype=np.int64)
    c_dl = np.zeros(cap, dtype=np.bool_)
    c_GL = np.zeros(cap)
    c_HL = np.zeros(cap)
    pool = np.empty((n_slots, total_bins, 2))
    pool2d = pool.reshape((n_slots, 2 * total_bins))
    free = np.arange(n_slots - 1, -1, -1).astype(np.int64)
    n_free = n_slots
    min_gain = max(gamma, 0.0)
    # the fields each node may still split on (LightGBM's is_splittable): only where dropped
    splittable = np.ones((cap if drop_unsplittable else 0, offsets.shape[0]), dtype=np.bool_)

    n = rows.shape[0]
    begin[0] = 0
    end[0] = n
    n_free -= 1
    slot[0] = free[n_free]
    c0 = cycles()
    if root.shape[0] > 0:
        pool2d[slot[0]] = root
    else:
        _build_hists(B, g, h, rows, np.zeros(1, np.int64), np.full(1, n, np.int64), offsets,
                     pool2d, slot[:1].copy(), lanes)
    prof[0] += cycles() - c0
    G0 = 0.0
    H0 = 0.0
    for b in range(offsets[0], offsets[0] + n_value_bins[0] + 1):
        G0 += pool[slot[0], b, 0]
        H0 += pool[slot[0], b, 1]
    G[0] = G0
    H[0] = H0
    n_nodes = 1
    n_leaves = 1

    # candidates: nodes whose best split is known and may be applied
    open_ids = np.empty(cap, dtype=np.int64)
    n_open = 0

    c0 = cycles()
    _evaluate(np.zeros(1, dtype=np.int64), pool, slot, G, H, tree_mask, keys, k_bynode, offsets,
              n_value_bins, is_cat, lam, alpha, mcw, max_onehot, max_thr, c_gain, c_feat, c_code,
              c_dl, c_GL, c_HL, splittable, min_gain, begin, end, min_count, missing_rules)
    prof[1] += cycles() - c0
    open_ids[0] = 0
    n_open = 1

    while n_open > 0 and (max_leaves <= 0 or n_leaves < max_leaves):
        # choose the nodes to split now
        if lossguide:
            best = -1
            for t in range(n_open):
                i = open_ids[t]
                if c_gain[i] > min_gain and c_gain[i] > gain_floor:
                    if best < 0 or c_gain[i] > c_gain[best] or (c_gain[i] == c_gain[best] and i < best):
                        best = i
            if best < 0:
                break
            chosen = np.full(1, best, dtype=np.int64)
            k = 0
            for t in range(n_open):
                if open_ids[t] != best:
                    open_ids[k] = open_ids[t]
                    k += 1
            n_open = k
        else:
            cnt = 0
            for t in range(n_open):
                i = open_ids[t]
                if c_gain[i] > min_gain and c_gain[i] > gain_floor:
                    cnt += 1
            chosen = np.empty(cnt, dtype=np.int64)
            cnt = 0
            for t in range(n_open):
                i = open_ids[t]
                if c_gain[i] > min_gain and c_gain[i] > gain_floor:
                    chosen[cnt] = i
                    cnt += 1
                else:  # becomes a leaf: its histogram is no longer needed
                    free[n_free] = slot[i]
                    n_free += 1
                    slot[i] = -1
            if max_leaves > 0 and cnt > max_leaves - n_leaves:
                # the level's first nodes (ids ascend) while leaves remain, as XGBoost's
                # depthwise driver takes them; the others become leaves
                room = max_leaves - n_leaves
                for i in chosen[room:]:
                    free[n_free] = slot[i]
                    n_free += 1
                    slot[i] = -1
                chosen = chosen[:room]
            n_open = 0
            if chosen.shape[0] == 0:
                break
        m = chosen.shape[0]
        n_leaves += m
        # ③ partition the chosen nodes
        seg_b = np.empty(m, dtype=np.int64)
        seg_e = np.empty(m, dtype=np.int64)
        feats = np.empty(m, dtype=np.int64)
        tbl = np.zeros((m, max_field_bins), dtype=np.uint8)
        for t in range(m):
            i = chosen[t]
            f = c_feat[i]
            nv = n_value_bins[f]
            if is_cat[f]:
                mask = categorical_left_set(pool[slot[i]], offsets[f], nv, lam, alpha, mcw,
                                            c_code[i])
                for c in range(nv):
                    tbl[t, c] = mask[c]
            else:
                for c in range(c_code[i] + 1):
                    tbl[t, c] = 1
            tbl[t, nv] = 1 if c_dl[i] else 0
            tables[i] = tbl[t]
            seg_b[t] = begin[i]
            seg_e[t] = end[i]
            feats[t] = f
            feature[i] = f
            code[i] = c_code[i]
            dl[i] = c_dl[i]
            gain[i] = c_gain[i]
        c0 = cycles()
        mids = _partition(Bcol, rows, tmp, seg_b, seg_e, feats, tbl)
        prof[2] += cycles() - c0
        # children
        child_depth = depth[chosen[0]] + 1
        more = (max_depth <= 0 or child_depth < max_depth) and (max_leaves <= 0 or n_leaves < max_leaves)
        small_b = np.empty(m, dtype=np.int64)
        small_e = np.empty(m, dtype=np.int64)
        small_slot = np.empty(m, dtype=np.int64)
        big_slot = np.empty(m, dtype=np.int64)
        new_ids = np.empty(2 * m, dtype=np.int64)
        for t in range(m):
            i = chosen[t]
            l = n_nodes
            r = n_nodes + 1
            n_nodes += 2
            left[i] = l
            right[i] = r
            begin[l] = begin[i]
            end[l] = mids[t]
            begin[r] = mids[t]
            end[r] = end[i]
            G[l] = c_GL[i]
            H[l] = c_HL[i]
            G[r] = G[i] - c_GL[i]
            H[r] = H[i] - c_HL[i]
            depth[l] = depth[i] + 1
            depth[r] = depth[i] + 1
            if drop_unsplittable:
                splittable[l] = splittable[i]
                splittable[r] = splittable[i]
            new_ids[2 * t] = l
            new_ids[2 * t + 1] = r
            if more:
                left_small = (end[l] - begin[l]) <= (end[r] - begin[r])
                sm = l if left_small else r
                bg = r if left_small else l
                if n_free == 0:  # Numba checks no bounds: never take a slot that is not there
                    raise RuntimeError("grow_tree: the histogram pool is too small")
                n_free -= 1
                slot[sm] = free[n_free]
                slot[bg] = slot[i]
                small_b[t] = begin[sm]
                small_e[t] = end[sm]
                small_slot[t] = slot[sm]
                big_slot[t] = slot[bg]
            else:
                free[n_free] = slot[i]
                n_free += 1
            slot[i] = -1
        if not more:
            if lossguide:
                continue
            break
        # ① the smaller children; the larger ones by subtraction
        c0 = cycles()
        _build_hists(B, g, h, rows, small_b, small_e, offsets, pool2d, small_slot, lanes)
        _subtract(pool2d, big_slot, small_slot)
        c1 = cycles()
        prof[0] += c1 - c0
        # ② their best splits
        _evaluate(new_ids, pool, slot, G, H, tree_mask, keys, k_bynode, offsets, n_value_bins,
                  is_cat, lam, alpha, mcw, max_onehot, max_thr, c_gain, c_feat, c_code, c_dl,
                  c_GL, c_HL, splittable, min_gain, begin, end, min_count, missing_rules)
        prof[1] += cycles() - c1
        for t in range(2 * m):
            open_ids[n_open] = new_ids[t]
            n_open += 1
    return (feature[:n_nodes], code[:n_nodes], dl[:n_nodes], left[:n_nodes], right[:n_nodes],
            begin[:n_nodes], end[:n_nodes], G[:n_nodes], H[:n_nodes], gain[:n_nodes],
            tables[:n_nodes])


@njit(cache=True, nogil=True)
def _evaluate(ids, pool, slot, G, H, tree_mask, keys, k_bynode, offsets, n_value_bins, is_cat,
              lam, alpha, mcw, max_onehot, max_thr, c_gain, c_feat, c_code, c_dl, c_GL, c_HL,
              splittable, min_gain, begin, end, min_count, missing_rules):
    """② for the nodes ``ids``; where ``splittable`` has rows (LightGBM's rule), each node
    scans the fields still splittable there and drops its fields of no gain above
    ``min_gain`` (``drop_unsplittable``)."""
    masks = node_feature_masks(ids, tree_mask, keys, k_bynode)
    drop = splittable.shape[0] > 0
    if drop:
        for t in range(ids.shape[0]):
            masks[t] &= splittable[ids[t]]
    # (the nodes' rows, read only under min_data_in_leaf)
    counts = ((end[ids] - begin[ids]).astype(np.float64) if min_count > 0.0
              else np.empty(0))
    gain, feat, code, dl, GL, HL, f_gain = find_best_splits_counted(
        pool, slot[ids], G[ids], H[ids], masks, offsets, n_value_bins, is_cat,
        lam, alpha, mcw, max_onehot, max_thr, counts, min_count, missing_rules)
    if drop:
        for t in range(ids.shape[0]):
            for j in range(offsets.shape[0]):
                if masks[t, j] and not f_gain[t, j] > min_gain:
                    splittable[ids[t], j] = False
    for t in range(ids.shape[0]):
        i = ids[t]
        c_gain[i] = gain[t]
        c_feat[i] = feat[t]
        c_code[i] = code[t]
        c_dl[i] = dl[t]
        c_GL[i] = GL[t]
        c_HL[i] = HL[t]
