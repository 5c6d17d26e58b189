"""Numba CPU kernels for random forests (CudaTree's hybrid growth, on CPU threads).

Histogram statistics channels (DESIGN.md): one weighted count per class for classification,
``(w, w*y, w*y^2)`` for regression; every histogram also keeps the unweighted row count of
each bin (for ``min_samples_leaf`` and to know which bins a node touches).

Two kinds of kernels, one split rule (:func:`scan_feature` is shared by both):

* **depth-first, data parallel** (``df_*``): one big node at a time; its rows are cut into
  fixed-size blocks, every (feature, block) pair accumulates a private histogram in parallel,
  and blocks are summed per feature in block order. The partition is a parallel stable
  partition over the same blocks.
* **breadth-first, task parallel** (:func:`bf_level`): a whole level of small nodes per call;
  each thread takes whole nodes and does everything for them serially (totals, feature
  sampling, per-feature sparse histograms, split scan, in-place stable partition).

Results never depend on the thread count: blocks are fixed by the node size, nodes are
independent, and a node's random features come from a counter-based hash of its path key
(so depth-first, breadth-first and hybrid growth build the same tree).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ._intrinsics import prefetch

GINI, ENTROPY, SQUARED = 0, 1, 2
CRITERIA = {"gini": GINI, "entropy": ENTROPY, "log_loss": ENTROPY, "squared_error": SQUARED,
            "friedman_mse": SQUARED}
EPSILON = float(np.finfo(np.float64).eps)
LN2 = math.log(2.0)
BLOCK = 8192
MAX_BLOCK_BYTES = 64 << 20
PREFETCH_AHEAD = 16
FEATURE_PREFETCH_AHEAD = 4  # rows (of up to BATCH features each)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


# -- counter-based randomness --------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def mix64(z):
    """splitmix64's finaliser (a bijection on uint64)."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def child_key(key, side):
    """Key of a node's child (side 0 left, 1 right): a node's features depend on its path."""
    return mix64(key + _GOLDEN * np.uint64(side + 1))


@njit(cache=True, nogil=True, inline="always")
def perm_step(perm, swaps, k, key):
    """Step ``k`` of a Fisher-Yates shuffle of ``perm`` driven by ``key``; returns perm[k]."""
    d = perm.shape[0]
    v = mix64(key + _GOLDEN * np.uint64(k + 1))
    j = k + np.int64(v % np.uint64(d - k))
    t = perm[k]
    perm[k] = perm[j]
    perm[j] = t
    swaps[k] = j
    return perm[k]


@njit(cache=True, nogil=True, inline="always")
def perm_undo(perm, swaps, k):
    for t in range(k - 1, -1, -1):
        j = swaps[t]
        x = perm[t]
        perm[t] = perm[j]
        perm[j] = x


@njit(cache=True, nogil=True)
def perm_prefix(key, d, k):
    """The first ``k`` features a node with ``key`` draws (the order of :func:`bf_level`)."""
    perm = np.arange(d)
    swaps = np.empty(d, dtype=np.int64)
    out = np.empty(k, dtype=np.int64)
    for i in range(k):
        out[i] = perm_step(perm, swaps, i, key)
    return out


# -- impurity criteria -----------------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def side_weight(S, C, crit):
    if crit == SQUARED:
        return S[0]
    W = 0.0
    for k in range(C):
        W += S[k]
    return W


@njit(cache=True, nogil=True, inline="always")
def proxy(S, C, crit):
    """The part of a child's weighted impurity that a split maximises: minus W*impurity up
    to terms that do not depend on the split (sum c^2/W; sum c log c - W log W; S^2/W)."""
    if crit == SQUARED:
        return S[1] * S[1] / S[0]
    W = 0.0
    acc = 0.0
    if crit == GINI:
        for k in range(C):
            c = S[k]
            W += c
            acc += c * c
        return acc / W
    for k in range(C):
        c = S[k]
        W += c
        if c > 0.0:
            acc += c * math.log(c)
    return acc - W * math.log(W)


@njit(cache=True, nogil=True)
def impurity(S, C, crit):
    """Impurity of a node with statistics ``S`` (gini; entropy in bits; variance)."""
    if crit == SQUARED:
        W = S[0]
        m = S[1] / W
        return S[2] / W - m * m
    W = side_weight(S, C, crit)
    acc = 0.0
    if crit == GINI:
        for k in range(C):
            p = S[k] / W
            acc += p * p
        return 1.0 - acc
    for k in range(C):
        if S[k] > 0.0:
            p = S[k] / W
            acc -= p * math.log(p)
    return acc / LN2


@njit(cache=True, nogil=True, inline="always")
def _q(x, crit):
    """Per-class term of the proxy: x^2 (gini) or x log x (entropy)."""
    if crit == GINI:
        return x * x
    return x * math.log(x) if x > 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def _side_proxy(q, W, crit):
    if crit == GINI:
        return q / W
    return q - W * math.log(W)


@njit(cache=True, nogil=True)
def scan_feature(stat, cnt, blist, nb, miss, T, n_tot, C, crit, msl, mwl, best, L, R, L2):
    """Best split of one feature from its histogram. ``blist[:nb]``: the node's non-empty
    value bins in ascending order; ``miss``: the missing bin. Candidates are tried bin by
    bin, missing values right then left; a candidate replaces ``best`` only when strictly
    better; ``bnext`` is the first non-empty value bin right of the split (-1: none), so
    the raw threshold can sit mid-gap as scikit-learn's does. Classification keeps the per-side sums q = sum_k term(c_k) up to date bin by
    bin (only the classes present in a bin change), so a candidate costs O(1).
    Returns (best, bin, next bin, default_left, found)."""
    nm = cnt[miss]
    bbin = -1
    bnext = -1
    bdl = False
    found = False
    nL = 0
    if crit == SQUARED:
        T0 = T[0]
        T1 = T[1]
        M0 = stat[miss, 0]
        M1 = stat[miss, 1]
        S0 = 0.0
        S1 = 0.0
        for i in range(nb):
            b = blist[i]
            nL += cnt[b]
            S0 += stat[b, 0]
            S1 += stat[b, 1]
            nR = n_tot - nL
            if nL >= msl and nR >= msl:
                WL = S0
                WR = T0 - S0
                if WL >= mwl and WR >= mwl and WL > 0.0 and WR > 0.0:
                    R1 = T1 - S1
                    g = S1 * S1 / WL + R1 * R1 / WR
                    if g > best:
                        best = g
                        bbin = b
                        bnext = blist[i + 1] if i + 1 < nb else -1
                        bdl = nm == 0 and nL > nR
                        found = True
            if nm > 0:
                nL2 = nL + nm
                nR = n_tot - nL2
                if nL2 >= msl and nR >= msl:
                    WL = S0 + M0
                    WR = T0 - WL
                    if WL >= mwl and WR >= mwl and WL > 0.0 and WR > 0.0:
                        A1 = S1 + M1
                        R1 = T1 - A1
                        g = A1 * A1 / WL + R1 * R1 / WR
                        if g > best:
                            best = g
                            bbin = b
                            bnext = blist[i + 1] if i + 1 < nb else -1
                            bdl = True
                            found = True
        return best, bbin, bnext, bdl, found
    WT = 0.0
    qR = 0.0
    for c in range(C):
        L[c] = 0.0
        R[c] = T[c]
        WT += T[c]
        qR += _q(T[c], crit)
    qL = 0.0
    WL = 0.0
    WM = 0.0
    for c in range(C):
        WM += stat[miss, c]
    for i in range(nb):
        b = blist[i]
        nL += cnt[b]
        if crit == GINI:  # branch-free: a class absent from the bin adds exactly 0
            for c in range(C):
                s = stat[b, c]
                lo = L[c]
                ln = lo + s
                ro = R[c]
                rn = T[c] - ln
                qL += ln * ln - lo * lo
                qR += rn * rn - ro * ro
                L[c] = ln
                R[c] = rn
                WL += s
        else:
            for c in range(C):
                s = stat[b, c]
                if s != 0.0:
                    lo = L[c]
                    ln = lo + s
                    ro = R[c]
                    rn = T[c] - ln
                    qL += _q(ln, crit) - _q(lo, crit)
                    qR += _q(rn, crit) - _q(ro, crit)
                    L[c] = ln
                    R[c] = rn
                    WL += s
        nR = n_tot - nL
        if nL >= msl and nR >= msl:
            WR = WT - WL
            if WL >= mwl and WR >= mwl and WL > 0.0 and WR > 0.0:
                g = _side_proxy(qL, WL, crit) + _side_proxy(qR, WR, crit)
                if g > best:
                    best = g
                    bbin = b
                    bnext = blist[i + 1] if i + 1 < nb else -1
                    bdl = nm == 0 and nL > nR
                    found = True
        if nm > 0:
            nL2 = nL + nm
            nR = n_tot - nL2
            if nL2 >= msl and nR >= msl:
                qL2 = qL
                qR2 = qR
                for c in range(C):
                    s = stat[miss, c]
                    if s != 0.0:
                        ln = L[c] + s
                        rn = T[c] - ln
                        qL2 += _q(ln, crit) - _q(L[c], crit)
                        qR2 += _q(rn, crit) - _q(R[c], crit)
                WL2 = WL + WM
                WR = WT - WL2
                if WL2 >= mwl and WR >= mwl and WL2 > 0.0 and WR > 0.0:
                    g = _side_proxy(qL2, WL2, crit) + _side_proxy(qR2, WR, crit)
                    if g > best:
                        best = g
                        bbin = b
                        bnext = blist[i + 1] if i + 1 < nb else -1
                        bdl = True
                        found = True
    return best, bbin, bnext, bdl, found


@njit(cache=True, nogil=True)
def parent_proxy(T, C, crit):
    """The proxy of the unsplit node, in the same arithmetic as :func:`scan_feature`."""
    if crit == SQUARED:
        return T[1] * T[1] / T[0]
    q = 0.0
    W = 0.0
    for c in range(C):
        W += T[c]
        q += _q(T[c], crit)
    return _side_proxy(q, W, crit)


@njit(cache=True, nogil=True, inline="always")
def _add_row(stat, b, r, w, yk, yv, is_reg):
    wr = w[r]
    if is_reg:
        y = yv[r]
        stat[b, 0] += wr
        stat[b, 1] += wr * y
        stat[b, 2] += wr * y * y
    else:
        stat[b, yk[r]] += wr


@njit(cache=True, nogil=True, inline="always")
def _sort_touched(tq, cq, u, top):
    """Sort the ``u`` touched bins ``tq[:u]`` of a histogram with row counts ``cq`` (bins
    ``0 .. top``): insertion sort for a few, else one pass over the counts, which lists the
    same bins in order (cheaper than sorting once a node touches more than a few dozen)."""
    if u <= 24:
        for i in range(1, u):
            x = tq[i]
            j = i - 1
            while j >= 0 and tq[j] > x:
                tq[j + 1] = tq[j]
                j -= 1
            tq[j + 1] = x
        return
    m = 0
    for b in range(top + 1):
        if cq[b] > 0:
            tq[m] = b
            m += 1


@njit(cache=True, nogil=True)
def node_is_leaf(n, W, imp, depth, max_depth, mss, msl, mwl):
    return (depth >= max_depth or n < mss or n < 2 * msl or W < 2.0 * mwl
            or imp <= EPSILON)


# -- breadth-first: many small nodes per call, one thread per node -------------------------
BATCH = 16  # features histogrammed per row-major pass


@njit(cache=True, nogil=True)
def _bf_nodes(i0, i1, bins_row, rows, tmp, w, yk, yv, is_reg, C, nv, node_begin, node_end,
              node_depth, node_key, mtry, max_depth, mss, msl, mwl, crit, min_dec, w_root,
              stat, cnt, touched, ucnt, fs, yl, wl, vl, perm, swaps, L, R, L2,
              out_tot, out_feat, out_bin, out_next, out_dl, out_gain, out_mid, packed, tb, tw,
              tk, tv):
    """Nodes ``i0 .. i1 - 1`` of a breadth-first level, one after the other (one call for
    the run: a call per node, with its forty array arguments, cost more than a small node's
    whole split search). ``packed``: ``bins_row``, ``w``, ``yk`` and ``yv``
    are records in the positions of ``rows`` (row ``rows[p]``'s at ``p``; see
    :func:`pack_rows`), read in order and moved with the rows by the partition (``tb``,
    ``tw``, ``tk``, ``tv``: their scratch); otherwise they are indexed by row number."""
    flat = bins_row.reshape(bins_row.shape[0] * bins_row.shape[1])
    d = bins_row.shape[1]
    # rows past two cache lines: the gather below prefetches a row's first and last bytes,
    # which leaves the lines between them to the histogram pass
    spread = not packed and d > 128
    for i in range(i0, i1):
        b0 = node_begin[i]
        b1 = node_end[i]
        n = b1 - b0
        T = out_tot[i]
        for c in range(C):
            T[c] = 0.0
        # one gather of each row's label and weight into node-local arrays; prefetching the
        # rows' bins here brings them into cache for the histogram and partition passes below
        for j in range(n):
            if not packed and j + PREFETCH_AHEAD < n:
                ra = rows[b0 + j + PREFETCH_AHEAD]
                prefetch(w, ra)
                if is_reg:
                    prefetch(yv, ra)
                else:
                    prefetch(yk, ra)
                prefetch(flat, ra * d)
                prefetch(flat, ra * d + d - 1)
            r = b0 + j if packed else rows[b0 + j]
            wr = w[r]
            wl[j] = wr
            if is_reg:
                y = yv[r]
                vl[j] = y
                T[0] += wr
                T[1] += wr * y
                T[2] += wr * y * y
            else:
                k = yk[r]
                yl[j] = k
                T[k] += wr
        out_feat[i] = -1
        out_mid[i] = b1
        W = side_weight(T, C, crit)
        if node_is_leaf(n, W, impurity(T, C, crit), node_depth[i], max_depth, mss, msl, mwl):
            continue
        key = node_key[i]
        best = -np.inf
        bf = -1
        bbin = -1
        bnext = -1
        bdl = False
        nonconst = 0
        k = 0  # features used
        kd = 0  # features drawn
        # scikit-learn's rule: draw mtry features, constant ones included, and go on drawing
        # until a non-constant feature has been seen. Features are drawn in batches; every
        # batch is histogrammed in one row-major pass (one cache line per row, not one per
        # feature), then scanned in draw order.
        while k < d and (k < mtry or nonconst == 0):
            want = mtry - k if k < mtry else 1
            m = min(want, BATCH, d - k)
            for q in range(m):
                fs[q] = perm_step(perm, swaps, kd + q, key)
                ucnt[q] = 0
            for j in range(n):
                r = b0 + j if packed else rows[b0 + j]
                if spread and j + FEATURE_PREFETCH_AHEAD < n:
                    # a wide row's drawn features lie on as many cache lines: ask for a later
                    # row's lines now (the histogram's reads are latency-bound there)
                    ra = rows[b0 + j + FEATURE_PREFETCH_AHEAD] * d
                    for q in range(m):
                        prefetch(flat, ra + fs[q])
                for q in range(m):
                    bn = np.int64(bins_row[r, fs[q]])
                    # branch-free: the bin is written at the list's end every time, and the
                    # end moves only when the bin is new (touched has a spare slot)
                    c0 = cnt[q, bn]
                    touched[q, ucnt[q]] = bn
                    ucnt[q] += c0 == 0
                    cnt[q, bn] = c0 + 1
                    if is_reg:
                        wr = wl[j]
                        y = vl[j]
                        stat[q, bn, 0] += wr
                        stat[q, bn, 1] += wr * y
                        stat[q, bn, 2] += wr * y * y
                    else:
                        stat[q, bn, yl[j]] += wl[j]
            for q in range(m):
                u = ucnt[q]
                if k < mtry or nonconst == 0:
                    k += 1
                    if u > 1:
                        nonconst += 1
                        tq = touched[q]
                        f = fs[q]
                        miss = np.int64(nv[f])
                        _sort_touched(tq, cnt[q], u, miss)
                        nb = u - 1 if tq[u - 1] == miss else u
                        g, gb, gn, gdl, found = scan_feature(stat[q], cnt[q], tq, nb, miss, T, n, C,
                                                             crit, msl, mwl, best, L, R, L2)
                        if found:
                            best = g
                            bf = f
                            bbin = gb
                            bnext = gn
                            bdl = gdl
                for t in range(u):
                    bn = touched[q, t]
                    cnt[q, bn] = 0
                    for c in range(C):
                        stat[q, bn, c] = 0.0
            kd += m
        perm_undo(perm, swaps, kd)  # every draw, those past the stopping point included
        if bf < 0:
            continue
        gain = best - parent_proxy(T, C, crit)
        if crit == ENTROPY:
            gain /= LN2
        if gain / w_root + EPSILON < min_dec:
            continue
        out_feat[i] = bf
        out_bin[i] = bbin
        out_next[i] = bnext
        out_dl[i] = bdl
        out_gain[i] = gain
        # stable in-place partition through tmp[b0:b1] (a left row moves to lp <= p, already
        # read; the right ones wait in tmp), the packed records with their rows
        miss = nv[bf]
        lp = b0
        nr = 0
        for p in range(b0, b1):
            r = rows[p]
            bn = bins_row[p, bf] if packed else bins_row[r, bf]
            if bn <= bbin or (bdl and bn == miss):
                rows[lp] = r
                if packed:
                    _move_record(bins_row, w, yk, yv, p, bins_row, w, yk, yv, lp, d, is_reg)
                lp += 1
            else:
                tmp[b0 + nr] = r
                if packed:
                    _move_record(bins_row, w, yk, yv, p, tb, tw, tk, tv, b0 + nr, d, is_reg)
                nr += 1
        for q in range(nr):
            rows[lp + q] = tmp[b0 + q]
            if packed:
                _move_record(tb, tw, tk, tv, b0 + q, bins_row, w, yk, yv, lp + q, d, is_reg)
        out_mid[i] = lp


@njit(cache=True, nogil=True, inline="always")
def _move_record(sb, sw, sk, sv, a, db, dw, dk, dv, z, d, is_reg):
    """Copy packed record ``a`` of (sb, sw, sk, sv) to position ``z`` of (db, dw, dk, dv)."""
    for f in range(d):
        db[z, f] = sb[a, f]
    dw[z] = sw[a]
    if is_reg:
        dv[z] = sv[a]
    else:
        dk[z] = sk[a]


@njit(parallel=True, cache=True, nogil=True)
def pack_rows(bins_row, rows, w, yk, yv, is_reg):
    """Each position's record: the bins, weight and label of row ``rows[p]`` at ``p`` (the
    breadth-first levels then read a node's rows in order, not scattered over the data);
    returns them with scratch of the same shapes for the partitions."""
    m = rows.shape[0]
    d = bins_row.shape[1]
    pb = np.empty((m, d), dtype=bins_row.dtype)
    pw = np.empty(m)
    pk = np.empty(m if not is_reg else 0, dtype=np.int64)
    pv = np.empty(m if is_reg else 0)
    for p in prange(m):
        _move_record(bins_row, w, yk, yv, rows[p], pb, pw, pk, pv, p, d, is_reg)
    return (pb, pw, pk, pv, np.empty_like(pb), np.empty_like(pw), np.empty_like(pk),
            np.empty_like(pv))


@njit(cache=True, nogil=True)
def _bf_chunk(ch, bins_row, rows, tmp, w, yk, yv, is_reg, C, nv, maxbins, maxn, node_begin,
              node_end, node_depth, node_key, mtry, max_depth, mss, msl, mwl, crit, min_dec,
              w_root, n_chunks, out_tot, out_feat, out_bin, out_next, out_dl, out_gain,
              out_mid, packed, tb, tw, tk, tv):
    n_nodes = node_begin.shape[0]
    d = bins_row.shape[1]
    stat = np.zeros((BATCH, maxbins, C))
    cnt = np.zeros((BATCH, maxbins), dtype=np.int64)
    touched = np.empty((BATCH, maxbins + 1), dtype=np.int64)
    ucnt = np.zeros(BATCH, dtype=np.int64)
    fs = np.zeros(BATCH, dtype=np.int64)
    yl = np.zeros(maxn, dtype=np.int64)
    wl = np.zeros(maxn)
    vl = np.zeros(maxn)
    perm = np.arange(d)
    swaps = np.zeros(d, dtype=np.int64)
    L = np.empty(C)
    R = np.empty(C)
    L2 = np.empty(C)
    # a contiguous run of the frontier's nodes: their rows (and packed records) are
    # contiguous too
    _bf_nodes(n_nodes * ch // n_chunks, n_nodes * (ch + 1) // n_chunks, bins_row, rows, tmp,
              w, yk, yv, is_reg, C, nv, node_begin, node_end, node_depth, node_key, mtry,
              max_depth, mss, msl, mwl, crit, min_dec, w_root, stat, cnt, touched, ucnt, fs,
              yl, wl, vl, perm, swaps, L, R, L2, out_tot, out_feat, out_bin, out_next, out_dl,
              out_gain, out_mid, packed, tb, tw, tk, tv)


@njit(parallel=True, cache=True, nogil=True)
def bf_level(bins_row, rows, tmp, w, yk, yv, is_reg, C, nv, maxbins, maxn, node_begin,
             node_end, node_depth, node_key, mtry, max_depth, mss, msl, mwl, crit, min_dec,
             w_root, n_chunks, out_tot, out_feat, out_bin, out_next, out_dl, out_gain,
             out_mid, packed, tb, tw, tk, tv):
    """Process every node of a frontier (one thread per node, in chunks of nodes): totals,
    leaf tests, split search and in-place partition of the node's rows. ``maxn``: the
    largest node's row count. ``packed``: see :func:`_bf_nodes`."""
    for ch in prange(n_chunks):
        _bf_chunk(ch, bins_row, rows, tmp, w, yk, yv, is_reg, C, nv, maxbins, maxn,
                  node_begin, node_end, node_depth, node_key, mtry, max_depth, mss, msl, mwl,
                  crit, min_dec, w_root, n_chunks, out_tot, out_feat, out_bin, out_next,
                  out_dl, out_gain, out_mid, packed, tb, tw, tk, tv)


@njit(cache=True, nogil=True)
def bf_level_serial(bins_row, rows, tmp, w, yk, yv, is_reg, C, nv, maxbins, maxn, node_begin,
                    node_end, node_depth, node_key, mtry, max_depth, mss, msl, mwl, crit,
                    min_dec, w_root, n_chunks, out_tot, out_feat, out_bin, out_next, out_dl,
                    out_gain, out_mid, packed, tb, tw, tk, tv):
    """:func:`bf_level` on one thread (small frontiers: no thread start-up)."""
    _bf_chunk(0, bins_row, rows, tmp, w, yk, yv, is_reg, C, nv, maxbins, maxn, node_begin,
              node_end, node_depth, node_key, mtry, max_depth, mss, msl, mwl, crit, min_dec,
              w_root, 1, out_tot, out_feat, out_bin, out_next, out_dl, out_gain, out_mid,
              packed, tb, tw, tk, tv)


# -- depth-first: one big node, parallel over its rows -------------------------------------
def n_blocks(n, n_feat, maxbins, C):
    """Blocks of a node of ``n`` rows: fixed by the sizes only (never by the thread count)."""
    nblk = max(1, -(-n // BLOCK))
    cap = max(1, MAX_BLOCK_BYTES // max(1, n_feat * maxbins * (C + 1) * 8))
    return int(min(nblk, cap))


@njit(parallel=True, cache=True, nogil=True)
def df_totals(rows, b0, b1, w, yk, yv, is_reg, C, nblk):
    n = b1 - b0
    part = np.zeros((nblk, C))
    for k in prange(nblk):
        p0 = b0 + (n * k) // nblk
        p1 = b0 + (n * (k + 1)) // nblk
        S = part[k]
        for p in range(p0, p1):
            r = rows[p]
            wr = w[r]
            if is_reg:
                y = yv[r]
                S[0] += wr
                S[1] += wr * y
                S[2] += wr * y * y
            else:
                S[yk[r]] += wr
    T = np.zeros(C)
    for k in range(nblk):
        for c in range(C):
            T[c] += part[k, c]
    return T


@njit(parallel=True, cache=True, nogil=True)
def df_hist(bins_col, rows, b0, b1, feats, w, yk, yv, is_reg, C, maxbins, nblk):
    """Histograms (n_feat, maxbins, C) and row counts (n_feat, maxbins) of one node over the
    features ``feats``; parallel over (feature, block) pairs, blocks summed in order."""
    nf = feats.shape[0]
    n = b1 - b0
    pst = np.zeros((nf * nblk, maxbins, C))
    pcn = np.zeros((nf * nblk, maxbins), dtype=np.int64)
    for t in prange(nf * nblk):
        j = t // nblk
        k = t % nblk
        p0 = b0 + (n * k) // nblk
        p1 = b0 + (n * (k + 1)) // nblk
        col = bins_col[feats[j]]
        st = pst[t]
        cn = pcn[t]
        for p in range(p0, p1):
            if p + PREFETCH_AHEAD < p1:
                prefetch(col, rows[p + PREFETCH_AHEAD])
            r = rows[p]
            bn = np.int64(col[r])
            cn[bn] += 1
            _add_row(st, bn, r, w, yk, yv, is_reg)
    stat = np.zeros((nf, maxbins, C))
    cnt = np.zeros((nf, maxbins), dtype=np.int64)
    for j in prange(nf):
        for k in range(nblk):
            t = j * nblk + k
            for b in range(maxbins):
                cnt[j, b] += pcn[t, b]
                for c in range(C):
                    stat[j, b, c] += pst[t, b, c]
    return stat, cnt


@njit(cache=True, nogil=True)
def df_scan(stat, cnt, feats, nv, T, n_tot, C, crit, msl, mwl, mtry, drawn, nonconst, best, bf,
            bbin, bnext, bdl):
    """Scan the features of a depth-first node in draw order, as :func:`bf_level` does: stop
    once ``mtry`` features are drawn and one of them was not constant. Returns (best,
    feature, bin, next bin, default_left, drawn, nonconst)."""
    blist = np.empty(stat.shape[1], dtype=np.int64)
    L = np.empty(C)
    R = np.empty(C)
    L2 = np.empty(C)
    for j in range(feats.shape[0]):
        if drawn >= mtry and nonconst > 0:
            break
        drawn += 1
        f = feats[j]
        miss = np.int64(nv[f])
        nb = 0
        for b in range(miss):
            if cnt[j, b] > 0:
                blist[nb] = b
                nb += 1
        u = nb + (1 if cnt[j, miss] > 0 else 0)
        if u <= 1:
            continue
        nonconst += 1
        g, gb, gn, gdl, found = scan_feature(stat[j], cnt[j], blist, nb, miss, T, n_tot, C,
                                             crit, msl, mwl, best, L, R, L2)
        if found:
            best = g
            bf = f
            bbin = gb
            bnext = gn
            bdl = gdl
    return best, bf, bbin, bnext, bdl, drawn, nonconst


@njit(parallel=True, cache=True, nogil=True)
def df_partition(bins_col, rows, tmp, flags, b0, b1, f, bbin, miss, dl, nblk):
    """Stable parallel partition of rows[b0:b1]: rows going left first. Returns the middle."""
    n = b1 - b0
    col = bins_col[f]
    counts = np.zeros(nblk, dtype=np.int64)
    for k in prange(nblk):
        p0 = b0 + (n * k) // nblk
        p1 = b0 + (n * (k + 1)) // nblk
        c = 0
        for p in range(p0, p1):
            bn = col[rows[p]]
            fl = bn <= bbin or (dl and bn == miss)
            flags[p] = fl
            c += fl
        counts[k] = c
    lpos = np.empty(nblk, dtype=np.int64)
    rpos = np.empty(nblk, dtype=np.int64)
    tot = 0
    for k in range(nblk):
        tot += counts[k]
    lp = b0
    rp = b0 + tot
    for k in range(nblk):
        p0 = b0 + (n * k) // nblk
        p1 = b0 + (n * (k + 1)) // nblk
        lpos[k] = lp
        rpos[k] = rp
        lp += counts[k]
        rp += (p1 - p0) - counts[k]
    for k in prange(nblk):
        p0 = b0 + (n * k) // nblk
        p1 = b0 + (n * (k + 1)) // nblk
        a = lpos[k]
        z = rpos[k]
        for p in range(p0, p1):
            if flags[p]:
                tmp[a] = rows[p]
                a += 1
            else:
                tmp[z] = rows[p]
                z += 1
    for k in prange(nblk):
        p0 = b0 + (n * k) // nblk
        p1 = b0 + (n * (k + 1)) // nblk
        for p in range(p0, p1):
            rows[p] = tmp[p]
    return b0 + tot


# -- finishing a tree ------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def preorder(left, right, feature):
    """Canonical node order (pre-order, left first): old id of each new id, and new ids."""
    n = feature.shape[0]
    order = np.empty(n, dtype=np.int64)
    new_id = np.empty(n, dtype=np.int64)
    stack = np.empty(n + 1, dtype=np.int64)
    top = 0
    stack[0] = 0
    top = 1
    m = 0
    while top > 0:
        top -= 1
        v = stack[top]
        new_id[v] = m
        order[m] = v
        m += 1
        if feature[v] >= 0:
            stack[top] = right[v]
            stack[top + 1] = left[v]
            top += 2
    return order[:m], new_id


@njit(cache=True, nogil=True)
def preorder_arrays(left, right, feature, sbin, snext, dl, gain, begin, end, tot):
    """A grown tree's node arrays (ids in creation order) in :func:`preorder`: (feature,
    left, right, split bin (-1 at leaves) as int32, next bin, default_left and gain (False
    and 0 at leaves), row count, statistics), in one pass."""
    order, new_id = preorder(left, right, feature)
    m = order.shape[0]
    C = tot.shape[1]
    o_feat = np.empty(m, dtype=np.int32)
    o_left = np.full(m, -1, dtype=np.int32)
    o_right = np.full(m, -1, dtype=np.int32)
    o_sbin = np.full(m, -1, dtype=np.int32)
    o_next = np.full(m, -1, dtype=np.int64)
    o_dl = np.zeros(m, dtype=np.bool_)
    o_gain = np.zeros(m)
    o_count = np.empty(m, dtype=np.int64)
    o_tot = np.empty((m, C))
    for v in range(m):  # reads in creation order, writes scattered (every node is reached)
        i = new_id[v]
        f = feature[v]
        o_feat[i] = f
        o_count[i] = end[v] - begin[v]
        for c in range(C):
            o_tot[i, c] = tot[v, c]
        if f >= 0:
            o_left[i] = new_id[left[v]]
            o_right[i] = new_id[right[v]]
            o_sbin[i] = sbin[v]
            o_next[i] = snext[v]
            o_dl[i] = dl[v]
            o_gain[i] = gain[v]
    return o_feat, o_left, o_right, o_sbin, o_next, o_dl, o_gain, o_count, o_tot


@njit(cache=True, nogil=True)
def child_keys(keys, side):
    out = np.empty(keys.shape[0], dtype=np.uint64)
    for i in range(keys.shape[0]):
        out[i] = child_key(keys[i], side)
    return out


def root_key(seed: int, tree_index: int) -> np.uint64:
    """Key of a tree's root: a hash of (random_state, tree index)."""
    a = np.array([(int(seed) * 0x2545F4914F6CDD1D + int(tree_index) + 1) & (2**64 - 1)],
                 dtype=np.uint64)
    return child_keys(child_keys(a, 0), 1)[0]


BOOTSTRAP_CHUNK = 1 << 20  # draws per call of the generator


def bootstrap_counts(seed: int, t: int, n: int, n_boot: int, lo: int = 0,
                     hi: int | None = None):
    """Tree ``t``'s uniform bootstrap: how many of its ``n_boot`` draws with replacement from
    ``n`` rows fell on each row of ``lo:hi`` (int64). The draws are made in chunks of
    ``BOOTSTRAP_CHUNK``, so a slice costs O(n_boot) time but O(chunk + slice) memory, and
    the slices of any cut of the rows, put together, are the whole forest's counts:
    ``hardwood.dask``'s partitions draw their own."""
    hi = n if hi is None else int(hi)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(t)]))
    counts = np.zeros(hi - lo, dtype=np.int64)
    left = int(n_boot)
    while left > 0:
        idx = rng.integers(0, n, min(BOOTSTRAP_CHUNK, left))
        left -= idx.shape[0]
        if lo > 0 or hi < n:
            idx = idx[(idx >= lo) & (idx < hi)] - lo
        counts += np.bincount(idx, minlength=hi - lo)
    return counts


# -- out-of-bag prediction (forests predict through hardwood's runtimes: Forest.to_model) ---
@njit(cache=True, nogil=True, inline="always")
def _leaf_raw(x, root, feature, threshold, left, right, default_left):
    node = root
    while feature[node] >= 0:
        v = x[feature[node]]
        if np.isnan(v):
            go = default_left[node]
        else:
            go = v <= threshold[node]
        node = left[node] if go else right[node]
    return node


@njit(parallel=True, cache=True, nogil=True)
def oob_accumulate_raw(X, oob_rows, feature, threshold, left, right, default_left, value, out,
                       n_pred):
    """Route the out-of-bag rows of the raw matrix through one tree; add its leaf values."""
    K = value.shape[1]
    for q in prange(oob_rows.shape[0]):
        i = oob_rows[q]
        node = _leaf_raw(X[i], 0, feature, threshold, left, right, default_left)
        for k in range(K):
            out[i, k] += value[node, k]
        n_pred[i] += 1
