"""Step ②: the best split of each node from its histogram (shared host code).

Gain is XGBoost's: ``score(L) + score(R) - score(parent)`` with
``score(G, H) = T(G)^2 / (H + lambda)`` and ``T`` the L1 soft threshold by ``alpha``.
A split needs both children to carry hessian >= ``min_child_weight`` and a gain above
``gamma``. For every split both places of the missing bin are tried, in the order of the
field's missing rule (``XGB_MISSING``, ``LGB_MISSING`` or a bin, ``missing_rules``).

Categorical fields (group by field: one histogram slot per category, one for missing):

* fewer than ``max_cat_to_onehot`` categories in the field (XGBoost's rule, over all the
  field's categories, not the node's non-empty ones): one category vs the rest, the missing
  values with either;
* otherwise XGBoost's partition search: all the field's categories (those without rows in
  the node too) sorted by their leaf weight (0 below ``min_child_weight``, rounded to float32
  as XGBoost's), and each prefix and each suffix of that order, of fewer than
  ``min(max_cat_threshold, categories)`` categories, vs the rest and the missing values.
  A node's categories all on one side and its missing values alone on the other is one of
  them, when the node lacks a category: leaving the empty categories out, hardwood never
  formed it and kept a split of half the gain.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..parallel import chunks, run_ranges

MIN_HESS = 1e-8
RT_EPS = 1e-6

# A numeric field's missing rule, ``missing_rules[j]`` (``Grower.missing_rules``):
# XGBoost's: the missing values go where the gain is larger, right on a tie and at a node
# without missing values (its forward scan, then its backward scan where the node has them)
XGB_MISSING = -2
# LightGBM's, for a field with missing values in the training data (its missing_type NaN):
# at every node, its reverse scan (missing values left, the highest of tied thresholds)
# first, then its forward scan (missing right), which must beat it
LGB_MISSING = -1
# the same where LightGBM leaves the field's bin 0 out of its histograms (its most frequent
# bin, offset 1): its forward scan counts the rows left of a threshold as the rest of the
# node's, not as the sum of the bins below it (the rounding of the estimates differs)
LGB_MISSING_BIN0 = -3
# each of the two where the field's values are all above 0: LightGBM's bin 0 is then its
# empty bin of 0.0, and its reverse scan's last threshold (that bin, the missing values
# left) sends them alone left, with every value <= 1e-35 (``ZERO_EDGE``) at prediction
LGB_MISSING_ZERO = -4
LGB_MISSING_BIN0_ZERO = -5
# LightGBM's kZeroThreshold, the upper edge of its bin of 0.0: a float, widened to double in
# its thresholds (1e-35 itself sent -1e-35 the other way)
ZERO_EDGE = float(np.float32(1e-35))
# k >= 0: LightGBM's for a field without any (its missing_type None): the reverse scan
# alone, and a missing value reads as 0.0, whose value bin is k: it goes where k goes


@njit(cache=True, nogil=True)
def stable_argsort(keys):
    """``np.argsort(keys, kind="mergesort")`` for keys without NaN: ascending, ties in index
    order. A bottom-up merge sort of its own: Numba's compiles in about 2 s on a fresh machine,
    this one in a tenth of that."""
    n = keys.shape[0]
    a = np.empty(n, dtype=np.int64)
    for i in range(n):
        a[i] = i
    b = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j < hi and (i >= mid or keys[a[j]] < keys[a[i]]):
                    b[k] = a[j]
                    j += 1
                else:
                    b[k] = a[i]
                    i += 1
        a, b = b, a
        width *= 2
    return a


@njit(cache=True, nogil=True)
def node_feature_masks(ids, tree_mask, keys, k_bynode):
    """``colsample_bynode``: row ``i`` marks the ``k_bynode`` features of ``tree_mask`` with the
    smallest ``keys[ids[i]]`` (every feature of the tree when there are no more)."""
    d = tree_mask.shape[0]
    masks = np.zeros((ids.shape[0], d), dtype=np.bool_)
    avail = np.flatnonzero(tree_mask)
    for i in range(ids.shape[0]):
        if k_bynode >= avail.shape[0]:
            for j in avail:
                masks[i, j] = True
        else:
            order = stable_argsort(keys[ids[i]][avail])
            for t in range(k_bynode):
                masks[i, avail[order[t]]] = True
    return masks


@njit(cache=True, nogil=True, inline="always")
def _t(G, alpha):
    if alpha == 0.0:  # the default: no branch on G's sign, which ② mispredicted half the
        return G      # time (a third of its time on sparse-wide); the same t * t
    if G > alpha:
        return G - alpha
    if G < -alpha:
        return G + alpha
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def score(G, H, lam, alpha):
    t = _t(G, alpha)
    return t * t / (H + lam)


@njit(cache=True, nogil=True, inline="always")
def _split_gain(GL, HL, G, H, lam, alpha, min_h, parent):
    """Gain of sending (GL, HL) left and the rest right; -inf when a child is too light."""
    HR = H - HL
    if HL >= min_h and HR >= min_h:
        return score(GL, HL, lam, alpha) + score(G - GL, HR, lam, alpha) - parent
    return -np.inf


@njit(cache=True, nogil=True)
def leaf_weight(G, H, lam, alpha):
    return -_t(G, alpha) / (H + lam)


# -- monotone constraints (XGBoost's TreeEvaluator, LightGBM's "basic" method) -----------------
# Each node holds bounds [lo, hi] on its weight (the root none). Under constraints every
# weight is held within its node's bounds, and a gain is that of the held weights
# (``score_given_weight``). A split on a field of constraint +1 (-1) needs the left weight
# <= (>=) the right one; its children take the parent's bounds, cut at the mean of their two
# weights (``child_bounds``).


@njit(cache=True, nogil=True, inline="always")
def bounded_weight(G, H, lam, alpha, mcw, lo, hi):
    """A node's weight held within [lo, hi]; 0 below ``min_child_weight``, as XGBoost's."""
    if H < mcw or H <= 0.0:
        return 0.0
    w = -_t(G, alpha) / (H + lam)
    if w < lo:
        return lo
    if w > hi:
        return hi
    return w


@njit(cache=True, nogil=True, inline="always")
def score_given_weight(G, H, lam, alpha, w, lgb=False):
    """The loss reduction of weight ``w``, ``-(2 G w + (H + lambda) w^2 + 2 alpha |w|)``
    (XGBoost's since 3.4), or LightGBM's ``-(2 T(G) w + (H + lambda) w^2)`` where ``lgb``:
    ``score`` at the unheld weight either way, less where ``w`` is held."""
    if H <= 0.0:
        return 0.0
    if lgb:
        return -(2.0 * _t(G, alpha) * w + (H + lam) * w * w)
    return -(2.0 * G * w + (H + lam) * w * w + 2.0 * alpha * abs(w))


@njit(cache=True, nogil=True, inline="always")
def _bounded_split_gain(GL, HL, G, H, lam, alpha, min_h, parent, lo, hi, mono, lgb):
    """``_split_gain`` under monotone constraints: the children's weights held within the
    node's bounds, and -inf where they break the field's constraint ``mono``."""
    HR = H - HL
    if not (HL >= min_h and HR >= min_h):
        return -np.inf
    GR = G - GL
    wl = bounded_weight(GL, HL, lam, alpha, min_h, lo, hi)
    wr = bounded_weight(GR, HR, lam, alpha, min_h, lo, hi)
    if (mono > 0 and wl > wr) or (mono < 0 and wl < wr):
        return -np.inf
    return (score_given_weight(GL, HL, lam, alpha, wl, lgb)
            + score_given_weight(GR, HR, lam, alpha, wr, lgb) - parent)


@njit(cache=True, nogil=True, inline="always")
def row_estimate(h, cf):
    """LightGBM's row count of a bin of hessian ``h`` in a node of ``cf`` rows per unit of
    hessian (``RoundInt(h * cnt_factor)``): its ``min_data_in_leaf`` counts these."""
    return np.floor(h * cf + 0.5)


@njit(cache=True, nogil=True, inline="always")
def too_few_rows(n_left, n_rows, min_count):
    """Whether a child of ``n_left`` rows, or its sibling of the rest, is below
    ``min_data_in_leaf``."""
    return n_left < min_count or n_rows - n_left < min_count


@njit(cache=True, nogil=True, inline="always")
def rows_of_values(hf, nv, cf):
    """The rows of a field's value bins (``hf[:nv]``), as LightGBM counts them."""
    n = 0.0
    for b in range(nv):
        n += row_estimate(hf[b, 1], cf)
    return n


@njit(cache=True, nogil=True, inline="always")
def rest_of_rows(Hm, cf, rule):
    """-1, or under ``LGB_MISSING_BIN0`` the rows LightGBM's forward scan takes from the
    node's to count those left of a threshold: the missing bin's (``counted_threshold``)."""
    return (row_estimate(Hm, cf) if rule == LGB_MISSING_BIN0 or rule == LGB_MISSING_BIN0_ZERO
            else -1.0)


@njit(cache=True, nogil=True, inline="always")
def missing_alone_left(rule):
    """Whether a scan tries the missing values alone left (code -1, threshold ``ZERO_EDGE``),
    LightGBM's reverse scan's last threshold where its bin 0 is an empty bin of 0.0."""
    return rule == LGB_MISSING_ZERO or rule == LGB_MISSING_BIN0_ZERO


@njit(cache=True, nogil=True, inline="always")
def counted_threshold(h, cf, CL, n_values, n_rows, min_count, with_missing, lightgbm, n_rest):
    """A numeric scan's count after the bin of hessian ``h`` (``CL``: the rows counted below
    it so far): (the new ``CL``, whether the threshold may send the missing values right,
    whether left), LightGBM's forward and reverse counts (``_scan_numeric_bounded``); the
    forward count is the rest of the rows but the values above and ``n_rest`` where that
    is >= 0 (``rest_of_rows``). Under XGBoost's missing rule (not ``lightgbm``), a node
    without missing values takes either count: it does not know LightGBM's scans."""
    CL += row_estimate(h, cf)
    rest = n_rows - (n_values - CL)
    left_ok = not too_few_rows(rest, n_rows, min_count)
    forward_left = CL if n_rest < 0.0 else rest - n_rest
    right_ok = not too_few_rows(forward_left, n_rows, min_count) or (
        left_ok and not with_missing and not lightgbm)
    return CL, right_ok, left_ok


@njit(cache=True, nogil=True, inline="always")
def missing_left_wins(best1, best, rule):
    """Whether a scan's best threshold with the missing values left (gain ``best1``) is
    taken over its best with them right (``best``): under XGBoost's rule if it beats it
    (its backward scan comes second), under LightGBM's unless beaten (its reverse first)."""
    if rule == XGB_MISSING:
        return _beats(best1, best)
    return best1 > -np.inf and not _beats(best, best1)


@njit(cache=True, nogil=True, inline="always")
def missing_left(code, rule):
    """The default direction of a threshold ``code`` taken from the scan that sends the
    missing values left: left, but for a field without any under LightGBM's rule, where
    they read as 0.0 (value bin ``rule``): left if that bin is."""
    return rule < 0 or rule <= code


def child_bounds(GL, HL, G, H, lam, alpha, mcw, lo, hi, mono):
    """((lo, hi) of the left child, (lo, hi) of the right) of a node of bounds [lo, hi] split
    on a field of constraint ``mono`` with (GL, HL) left: the parent's bounds, cut at the mean
    of the children's held weights (XGBoost's ``AddSplit``, LightGBM's basic method)."""
    if mono == 0:
        return (lo, hi), (lo, hi)
    wl = bounded_weight(GL, HL, lam, alpha, mcw, lo, hi)
    wr = bounded_weight(G - GL, H - HL, lam, alpha, mcw, lo, hi)
    mid = (wl + wr) / 2.0
    if mono > 0:
        return (lo, mid), (mid, hi)
    return (mid, hi), (lo, mid)


@njit(cache=True, nogil=True, error_model="numpy")
def _gains(GLs, HLs, Gm, Hm, G, H, lam, alpha, min_h, parent, out):
    """out[b] = ``_split_gain`` of sending bins <= b (plus the missing bin's (Gm, Hm)) left.
    A loop of its own, without Python's division checks, so that the divisions vectorise."""
    for b in range(GLs.shape[0]):
        out[b] = _split_gain(GLs[b] + Gm, HLs[b] + Hm, G, H, lam, alpha, min_h, parent)


# a field of at most this many value bins is scanned in one pass (``_scan_numeric_short``):
# the buffers of the vectorised scan cost an allocation, more than a few bins' gains
SHORT_FIELD_BINS = 32
# Gains within this relative distance are a tie. A bin that holds none of a node's rows
# should tie with the bin before it, but a histogram made by subtraction (parent minus
# sibling) leaves a residue of a few ulps in it, and the tie went to whichever bin the
# rounding favoured: a threshold inside the node's gap that XGBoost does not choose.
TIE = 1e-9


@njit(cache=True, nogil=True, inline="always")
def _beats(g, best):
    """Whether gain ``g`` is better than ``best`` by more than a tie (``TIE``)."""
    return g > best and (best == -np.inf or g - best > TIE * abs(best))


@njit(cache=True, nogil=True, inline="always")
def _ties_or_beats(g, best):
    """Whether gain ``g`` is at least a tie with ``best`` (``TIE``), and a valid gain."""
    return g > -np.inf and (best == -np.inf or g >= best - TIE * abs(best))


@njit(cache=True, nogil=True, error_model="numpy")
def _scan_numeric_short(hist, off, nv, G, H, lam, alpha, mcw, parent, cf=0.0, n_rows=0.0,
                        min_count=0.0, rule=XGB_MISSING):
    """``_scan_numeric`` in one pass and no buffer, for a field of few bins (one-hot, counts,
    most sparse fields): the same sums, gains and order of comparison, so the same answer.
    ``min_count`` > 0: LightGBM's ``min_data_in_leaf`` over the node's ``n_rows``, counted
    as in ``_scan_numeric_bounded``. ``rule``: the field's missing rule."""
    hf = hist[off:off + nv + 1]  # read from 0: no wraparound check per bin (see cannot_split)
    Gm = hf[nv, 0]
    Hm = hf[nv, 1]
    min_h = max(mcw, MIN_HESS)
    lightgbm = rule != XGB_MISSING
    with_missing = Hm > 0.0 or lightgbm  # (scan the thresholds that send them left)
    forward = rule < 0  # (LightGBM's scans a field without missing values in reverse only)
    counted = min_count > 0.0
    n_values = rows_of_values(hf, nv, cf) if counted else 0.0
    n_rest = rest_of_rows(Hm, cf, rule) if counted else 0.0
    CL = 0.0
    right_ok = True
    left_ok = True
    GL = 0.0
    HL = 0.0
    best = -np.inf  # missing right: the first best bin
    best_bin = -1
    best_GL = 0.0
    best_HL = 0.0
    best1 = -np.inf  # missing left: the last best bin
    best1_bin = -1
    best1_GL = 0.0
    best1_HL = 0.0
    if missing_alone_left(rule):
        g1 = _split_gain(Gm, Hm, G, H, lam, alpha, min_h, parent)
        if counted and too_few_rows(n_rows - n_values, n_rows, min_count):
            g1 = -np.inf
        if _ties_or_beats(g1, best1):
            best1 = g1
            best1_GL = Gm
            best1_HL = Hm
    # (no missing values here: both places of the missing bin have the same gains, once)
    same = Gm == 0.0 and Hm == 0.0
    for b in range(nv):
        GL += hf[b, 0]
        HL += hf[b, 1]
        g = _split_gain(GL + 0.0, HL + 0.0, G, H, lam, alpha, min_h, parent)
        if counted:
            CL, right_ok, left_ok = counted_threshold(hf[b, 1], cf, CL, n_values, n_rows,
                                                      min_count, with_missing, lightgbm,
                                                      n_rest)
        g0 = g if right_ok and forward else -np.inf
        if _beats(g0, best):
            best = g0
            best_bin = b
            best_GL = GL
            best_HL = HL
        if with_missing:
            g1 = g if same else _split_gain(GL + Gm, HL + Hm, G, H, lam, alpha, min_h, parent)
            if not left_ok:
                g1 = -np.inf
            if _ties_or_beats(g1, best1):
                best1 = max(g1, best1)
                best1_bin = b
                best1_GL = GL + Gm
                best1_HL = HL + Hm
    if missing_left_wins(best1, best, rule):
        return best1, best1_bin, missing_left(best1_bin, rule), best1_GL, best1_HL
    return best, best_bin, False, best_GL, best_HL


@njit(cache=True, nogil=True)
def _scan_numeric(hist, off, nv, G, H, lam, alpha, mcw, parent, cf=0.0, n_rows=0.0,
                  min_count=0.0, rule=XGB_MISSING):
    """Best threshold of a numeric field: prefix sums, then every bin's gain (missing right,
    and missing left where the node has missing values), then the best in XGBoost's order:
    missing right by ascending bin, then missing left by descending bin, a later candidate
    winning only by a greater gain (beyond ``TIE``). Where a node leaves bins empty, tied
    thresholds send its missing values left at the highest of them, as XGBoost's backward
    scan does (hardwood took the lowest: rows in the gap went the other way, 1.1 apart in
    prediction). ``min_count`` > 0 (LightGBM's ``min_data_in_leaf``): the one-pass scan,
    which counts the rows. ``rule``: the field's missing rule (``XGB_MISSING``: as above;
    LightGBM's: missing left first, at every node, ``missing_left_wins``)."""
    if nv <= SHORT_FIELD_BINS or min_count > 0.0 or missing_alone_left(rule):
        return _scan_numeric_short(hist, off, nv, G, H, lam, alpha, mcw, parent, cf, n_rows,
                                   min_count, rule)
    hf = hist[off:off + nv + 1]
    Gm = hf[nv, 0]
    Hm = hf[nv, 1]
    min_h = max(mcw, MIN_HESS)
    buf = np.empty((4, nv))
    GLs = buf[0]
    HLs = buf[1]
    GL = 0.0
    HL = 0.0
    for b in range(nv):
        GL += hf[b, 0]
        HL += hf[b, 1]
        GLs[b] = GL
        HLs[b] = HL
    g0 = buf[2]
    g1 = buf[3]
    _gains(GLs, HLs, 0.0, 0.0, G, H, lam, alpha, min_h, parent, g0)
    with_missing = Hm > 0.0 or rule != XGB_MISSING
    if with_missing and Gm == 0.0 and Hm == 0.0:
        g1 = g0  # (no missing values here: the same gains)
    elif with_missing:
        _gains(GLs, HLs, Gm, Hm, G, H, lam, alpha, min_h, parent, g1)
    best = -np.inf
    best_bin = -1
    dl = False
    if rule < 0:  # (LightGBM's scans a field without missing values in reverse only)
        for b in range(nv):
            if _beats(g0[b], best):
                best = g0[b]
                best_bin = b
    if with_missing:
        best1 = -np.inf
        best1_bin = -1
        for b in range(nv):
            if _ties_or_beats(g1[b], best1):
                best1 = max(g1[b], best1)
                best1_bin = b
        if missing_left_wins(best1, best, rule):
            best = best1
            best_bin = best1_bin
            dl = missing_left(best_bin, rule)
            return best, best_bin, dl, GLs[best_bin] + Gm, HLs[best_bin] + Hm
    if best_bin < 0:
        return best, best_bin, dl, 0.0, 0.0
    return best, best_bin, dl, GLs[best_bin], HLs[best_bin]


@njit(cache=True, nogil=True)
def _scan_numeric_bounded(hf, nv, G, H, lam, alpha, mcw, parent, lo, hi, mono, lgb, cf=0.0,
                          n_rows=0.0, min_count=0.0, rule=XGB_MISSING):
    """``_scan_numeric_short`` under monotone constraints (``_bounded_split_gain``), for a field
    of any number of bins ``hf`` (its histogram from 0): the same candidates in the same
    order, so the same ties, and one more: code -1 with the missing values left (nothing
    else goes left; its threshold is -inf).

    ``min_count`` > 0: LightGBM's ``min_data_in_leaf``, both children at least that many rows
    of the node's ``n_rows``, counted as LightGBM counts them (``row_estimate`` of each bin,
    ``cf`` rows per unit of hessian): the side it accumulates is the values above the
    threshold where the missing values go left (its reverse scan), the values below it
    where they go right (its forward scan); the other side is the rest of the rows. Where
    the node has no missing values a threshold passes if either count does, as LightGBM's
    two scans of a field with missing values elsewhere find it (the counts differ by the
    rounding). A field without any missing values LightGBM scans in reverse only: with
    unequal hessians hardwood can take a threshold there that LightGBM refuses, unless the
    field's missing ``rule`` is LightGBM's, which scans as it does (code -1 then only where
    LightGBM's bin 0 is an empty bin of 0.0, ``missing_alone_left``; elsewhere its partition
    is LightGBM's forward scan's last threshold)."""
    Gm = hf[nv, 0]
    Hm = hf[nv, 1]
    min_h = max(mcw, MIN_HESS)
    lightgbm = rule != XGB_MISSING
    with_missing = Hm > 0.0 or lightgbm
    forward = rule < 0
    counted = min_count > 0.0
    n_values = rows_of_values(hf, nv, cf) if counted else 0.0
    n_rest = rest_of_rows(Hm, cf, rule) if counted else 0.0
    CL = 0.0
    right_ok = True
    left_ok = True
    GL = 0.0
    HL = 0.0
    best = -np.inf
    best_bin = -1
    best_GL = 0.0
    best_HL = 0.0
    best1 = -np.inf
    best1_bin = -1
    best1_GL = 0.0
    best1_HL = 0.0
    if Hm > 0.0 and (not lightgbm or missing_alone_left(rule)):
        # the missing values alone left, every value right (bin -1: XGBoost's threshold below
        # the field's least value): the same rows as every value left and the missing right,
        # but under a constraint the order of the two weights decides, so both are candidates
        g1 = _bounded_split_gain(Gm, Hm, G, H, lam, alpha, min_h, parent, lo, hi, mono, lgb)
        if counted and too_few_rows(n_rows - n_values, n_rows, min_count):
            g1 = -np.inf
        if _ties_or_beats(g1, best1):
            best1 = g1
            best1_GL = Gm
            best1_HL = Hm
    for b in range(nv):
        GL += hf[b, 0]
        HL += hf[b, 1]
        g0 = _bounded_split_gain(GL, HL, G, H, lam, alpha, min_h, parent, lo, hi, mono, lgb)
        if counted:
            CL, right_ok, left_ok = counted_threshold(hf[b, 1], cf, CL, n_values, n_rows,
                                                      min_count, with_missing, lightgbm,
                                                      n_rest)
        if not right_ok or not forward:
            g0 = -np.inf
        if _beats(g0, best):
            best = g0
            best_bin = b
            best_GL = GL
            best_HL = HL
        if with_missing:
            g1 = _bounded_split_gain(GL + Gm, HL + Hm, G, H, lam, alpha, min_h, parent, lo, hi,
                                     mono, lgb)
            if not left_ok:
                g1 = -np.inf
            if _ties_or_beats(g1, best1):
                best1 = max(g1, best1)
                best1_bin = b
                best1_GL = GL + Gm
                best1_HL = HL + Hm
    if missing_left_wins(best1, best, rule):
        return best1, best1_bin, missing_left(best1_bin, rule), best1_GL, best1_HL
    return best, best_bin, False, best_GL, best_HL


@njit(cache=True, nogil=True, inline="always")
def cannot_split(hist, off, nv, H, mcw):
    """Whether ``_scan_numeric`` of this numeric field surely finds no valid split (gain
    -inf), read from its bins: no missing hessian, and at most one value bin of non-zero
    hessian, which leaves less than the minimum hessian (``H`` minus it) to the other side.
    Every threshold then puts an exact 0 (the bins before that one) or that bin's hessian
    left, as the scan's prefix sums do. A sparse field without entries in a node (its rows
    all in the default bin) is such a field: ② skips it. The field's bins are read as a
    slice from 0, which Numba indexes without a wraparound check (``hist[off + b]`` took
    one per read: ② 11.7 -> 9.0 ms a tree on the sparse benchmark, one thread)."""
    hf = hist[off:off + nv + 1]
    if hf[nv, 1] > 0.0:
        return False
    n = 0
    hb = 0.0
    for b in range(nv):
        x = hf[b, 1]
        if x != 0.0:
            if n == 1:
                return False  # two bins with hessian (most fields: at the first two)
            n = 1
            hb = x
    if n == 0:
        return True
    return not (H - hb >= max(mcw, MIN_HESS))


@njit(cache=True, nogil=True)
def _category_order(hist, off, K, lam, alpha, mcw):
    """The field's K categories sorted by their leaf weight, ascending and stable: XGBoost's
    ``CalcWeightCat`` (0 where the hessian is below ``min_child_weight`` or none, rounded to
    float32), so that the orders and their ties are XGBoost's."""
    keys = np.empty(K, dtype=np.float64)
    for c in range(K):
        H = hist[off + c, 1]
        if H < mcw or H <= 0.0:
            keys[c] = 0.0
        else:
            keys[c] = np.float32(-_t(hist[off + c, 0], alpha) / (H + lam))
    return stable_argsort(keys)


@njit(cache=True, nogil=True)
def _scan_categorical(hist, off, K, G, H, lam, alpha, mcw, parent, max_onehot, max_thr,
                      bounded=False, lo=-np.inf, hi=np.inf, lgb=False, cf=0.0, n_rows=0.0,
                      min_count=0.0):
    """Returns (gain, code, default_left, GL, HL); ``code`` encodes the left set:
    ``-(c+1)`` one-hot on category c, ``+k`` the first k sorted categories,
    ``K + k`` the last k sorted categories (see ``categorical_left_set``). The candidates
    and the order they are tried in are XGBoost's (``EnumerateOneHot``, ``EnumeratePart``),
    so that its ties break alike. ``bounded``: under monotone constraints, gains of the
    children's weights held within the node's bounds ``lo``, ``hi`` (``_bounded_split_gain``;
    a categorical field is never constrained itself). ``min_count`` > 0: both children at
    least that many rows of ``n_rows``, the left one counted (``row_estimate``)."""
    Gm = hist[off + K, 0]
    Hm = hist[off + K, 1]
    min_h = max(mcw, MIN_HESS)
    counted = min_count > 0.0
    best = -np.inf
    best_code = 0
    best_dl = False
    best_GL = 0.0
    best_HL = 0.0
    if K == 0:
        return best, best_code, best_dl, best_GL, best_HL
    if K < max_onehot:
        for c in range(K):  # category c alone, then with the missing values
            for dl in range(2):
                if dl == 1 and Hm <= 0.0:
                    continue
                GL = hist[off + c, 0] + Gm * dl
                HL = hist[off + c, 1] + Hm * dl
                gain = (_bounded_split_gain(GL, HL, G, H, lam, alpha, min_h, parent, lo, hi, 0, lgb)
                        if bounded else _split_gain(GL, HL, G, H, lam, alpha, min_h, parent))
                if counted and too_few_rows(row_estimate(hist[off + c, 1], cf)
                                            + dl * row_estimate(Hm, cf), n_rows, min_count):
                    gain = -np.inf
                if gain > best:
                    best = gain
                    best_code = -(c + 1)
                    best_dl = dl == 1
                    best_GL = GL
                    best_HL = HL
        return best, best_code, best_dl, best_GL, best_HL
    # XGBoost walks min(max_cat_threshold, K) sorted categories from either end and splits
    # before each but the last: the walked categories on one side, the rest and the
    # missing values on the other (hardwood at k once grew XGBoost's trees at k + 1)
    cats = _category_order(hist, off, K, lam, alpha, mcw)
    limit = min(max_thr, K) - 1
    for direction in range(2):
        GL = 0.0
        HL = 0.0
        CL = 0.0
        for k in range(1, limit + 1):
            c = cats[k - 1] if direction == 0 else cats[K - k]
            GL += hist[off + c, 0]
            HL += hist[off + c, 1]
            gain = (_bounded_split_gain(GL, HL, G, H, lam, alpha, min_h, parent, lo, hi, 0, lgb)
                    if bounded else _split_gain(GL, HL, G, H, lam, alpha, min_h, parent))
            if counted:
                CL += row_estimate(hist[off + c, 1], cf)
                if too_few_rows(CL, n_rows, min_count):
                    gain = -np.inf
            if gain > best:
                best = gain
                best_code = k if direction == 0 else K + k
                best_dl = False
                best_GL = GL
                best_HL = HL
    return best, best_code, best_dl, best_GL, best_HL


@njit(cache=True, nogil=True)
def categorical_left_set(hist, off, K, lam, alpha, mcw, code):
    """Boolean mask over the K categories that go left, decoded from ``code``."""
    left = np.zeros(K, dtype=np.bool_)
    if code < 0:
        left[-code - 1] = True
        return left
    cats = _category_order(hist, off, K, lam, alpha, mcw)
    if code <= K:
        for i in range(code):
            left[cats[i]] = True
    else:
        k = code - K
        for i in range(k):
            left[cats[K - 1 - i]] = True
    return left


PARALLEL_SPLIT_BINS = 2048  # bins to scan; a parallel launch costs about 1-2 us


@njit(cache=True, nogil=True)
def _scan_one(t, d, pool, slots, node_G, node_H, feat_mask, offsets, n_value_bins, is_cat,
              lam, alpha, mcw, max_onehot, max_thr, counts, min_count, rules, f_gain, f_code,
              f_dl, f_GL, f_HL):
    s = t // d
    j = t % d
    if not feat_mask[s, j]:
        return
    G = node_G[s]
    H = node_H[s]
    parent = score(G, H, lam, alpha)
    n_rows = counts[s] if min_count > 0.0 else 0.0
    cf = n_rows / (H + 2e-15)  # (LightGBM's cnt_factor: its hessian sum + 2 kEpsilon)
    if is_cat[j]:
        gain, code, dl, GL, HL = _scan_categorical(pool[slots[s]], offsets[j], n_value_bins[j], G, H,
                                                   lam, alpha, mcw, parent, max_onehot, max_thr,
                                                   False, -np.inf, np.inf, False, cf, n_rows,
                                                   min_count)
    else:
        gain, code, dl, GL, HL = _scan_numeric(pool[slots[s]], offsets[j], n_value_bins[j], G, H,
                                               lam, alpha, mcw, parent, cf, n_rows, min_count,
                                               rules[j])
    f_gain[s, j] = gain
    f_code[s, j] = code
    f_dl[s, j] = dl
    f_GL[s, j] = GL
    f_HL[s, j] = HL


@njit(cache=True, nogil=True)
def scan_range(t0, t1, d, pool, slots, node_G, node_H, feat_mask, offsets, n_value_bins,
               is_cat, lam, alpha, mcw, max_onehot, max_thr, counts, min_count, rules, f_gain,
               f_code, f_dl, f_GL, f_HL):
    """Tasks ``t0 .. t1 - 1``, task t being node ``t // d``'s field ``t % d``; node ``s`` has
    ``counts[s]`` rows, read where ``min_count`` (LightGBM's ``min_data_in_leaf``) > 0;
    field ``j`` the missing rule ``rules[j]`` (``XGB_MISSING``, ...)."""
    for t in range(t0, t1):
        _scan_one(t, d, pool, slots, node_G, node_H, feat_mask, offsets, n_value_bins, is_cat,
                  lam, alpha, mcw, max_onehot, max_thr, counts, min_count, rules, f_gain, f_code,
                  f_dl, f_GL, f_HL)


@njit(cache=True, nogil=True)
def scan_numeric_range(t0, t1, d, pool, slots, node_G, node_H, feat_mask, offsets,
                       n_value_bins, is_cat, lam, alpha, mcw, max_onehot, max_thr, counts,
                       min_count, rules, f_gain, f_code, f_dl, f_GL, f_HL):
    """``scan_range`` where no field is categorical: the same answers, without compiling the
    categorical scan (``is_cat``, ``max_onehot`` and ``max_thr`` are not read). Node by
    node: its histogram, sums and score are read once for its run of fields (per field,
    they cost a fifth of the time of sparse nodes, whose fields mostly cannot split)."""
    t = t0
    while t < t1:
        s = t // d
        j0 = t - s * d
        j1 = min(d, j0 + (t1 - t))
        G = node_G[s]
        H = node_H[s]
        parent = score(G, H, lam, alpha)
        n_rows = counts[s] if min_count > 0.0 else 0.0
        cf = n_rows / (H + 2e-15)
        hist = pool[slots[s]]
        for j in range(j0, j1):
            if not feat_mask[s, j]:
                continue
            nv = n_value_bins[j]
            hf = hist[offsets[j]:offsets[j] + nv + 1]  # the field's bins, sliced once
            if cannot_split(hf, 0, nv, H, mcw):
                continue  # its gain stays -inf, the scan's answer
            if nv <= SHORT_FIELD_BINS or min_count > 0.0:
                gain, code, dl, GL, HL = _scan_numeric_short(hf, 0, nv, G, H, lam, alpha, mcw,
                                                             parent, cf, n_rows, min_count,
                                                             rules[j])
            else:
                gain, code, dl, GL, HL = _scan_numeric(hf, 0, nv, G, H, lam, alpha, mcw, parent,
                                                       0.0, 0.0, 0.0, rules[j])
            f_gain[s, j] = gain
            f_code[s, j] = code
            f_dl[s, j] = dl
            f_GL[s, j] = GL
            f_HL[s, j] = HL
        t += j1 - j0


@njit(cache=True, nogil=True)
def scan_bounded_range(t0, t1, d, pool, slots, node_G, node_H, feat_mask, offsets,
                       n_value_bins, is_cat, lam, alpha, mcw, max_onehot, max_thr, counts,
                       min_count, rules, lower, upper, mono, lgb, step, f_gain, f_code, f_dl,
                       f_GL, f_HL):
    """``scan_range`` under monotone constraints: node ``s`` has bounds ``lower[s]``,
    ``upper[s]`` on its weight, field ``j`` the constraint ``mono[j]`` (-1, 0, +1). ``lgb``:
    LightGBM's basic method, whose parent term is the score unheld by the constraints
    (held within +-``step``, LightGBM's ``max_delta_step``, where that is > 0) and whose
    children's L1 term is ``T(G) w`` (XGBoost's: the parent's weight held within its bounds
    too, and ``G w + alpha |w|``). ``min_count`` > 0: LightGBM's ``min_data_in_leaf``,
    node ``s`` having ``counts[s]`` rows."""
    for t in range(t0, t1):
        s = t // d
        j = t % d
        if not feat_mask[s, j]:
            continue
        G = node_G[s]
        H = node_H[s]
        lo = lower[s]
        hi = upper[s]
        if not lgb:
            parent = score_given_weight(G, H, lam, alpha,
                                        bounded_weight(G, H, lam, alpha, mcw, lo, hi))
        elif step > 0.0:
            parent = score_given_weight(G, H, lam, alpha,
                                        bounded_weight(G, H, lam, alpha, 0.0, -step, step), lgb)
        else:
            parent = score(G, H, lam, alpha)
        n_rows = counts[s] if min_count > 0.0 else 0.0
        cf = n_rows / (H + 2e-15)  # (LightGBM's cnt_factor: its hessian sum + 2 kEpsilon)
        hist = pool[slots[s]]
        nv = n_value_bins[j]
        if is_cat[j]:
            gain, code, dl, GL, HL = _scan_categorical(hist, offsets[j], nv, G, H, lam, alpha,
                                                       mcw, parent, max_onehot, max_thr, True,
                                                       lo, hi, lgb, cf, n_rows, min_count)
        else:
            hf = hist[offsets[j]:offsets[j] + nv + 1]
            gain, code, dl, GL, HL = _scan_numeric_bounded(hf, nv, G, H, lam, alpha, mcw, parent,
                                                           lo, hi, mono[j], lgb, cf, n_rows,
                                                           min_count, rules[j])
        f_gain[s, j] = gain
        f_code[s, j] = code
        f_dl[s, j] = dl
        f_GL[s, j] = GL
        f_HL[s, j] = HL


@njit(parallel=True, cache=True, nogil=True)
def _scan_parallel(d, pool, slots, node_G, node_H, feat_mask, offsets, n_value_bins, is_cat,
                   lam, alpha, mcw, max_onehot, max_thr, counts, min_count, rules, f_gain,
                   f_code, f_dl, f_GL, f_HL):
    for t in prange(slots.shape[0] * d):
        tt = np.int64(t)
        scan_range(tt, tt + 1, d, pool, slots, node_G, node_H, feat_mask, offsets, n_value_bins,
                   is_cat, lam, alpha, mcw, max_onehot, max_thr, counts, min_count, rules,
                   f_gain, f_code, f_dl, f_GL, f_HL)


@njit(cache=True, nogil=True)
def best_of_fields(f_gain, f_code, f_dl, f_GL, f_HL):
    """Each node's best field (the first of the largest gain): arrays (gain, feature, code,
    default_left, GL, HL)."""
    n_nodes, d = f_gain.shape
    gain = np.full(n_nodes, -np.inf)
    feature = np.full(n_nodes, -1, dtype=np.int64)
    code = np.zeros(n_nodes, dtype=np.int64)
    dl = np.zeros(n_nodes, dtype=np.bool_)
    GL = np.zeros(n_nodes)
    HL = np.zeros(n_nodes)
    for s in range(n_nodes):
        for j in range(d):
            if f_gain[s, j] > gain[s]:
                gain[s] = f_gain[s, j]
                feature[s] = j
                code[s] = f_code[s, j]
                dl[s] = f_dl[s, j]
                GL[s] = f_GL[s, j]
                HL[s] = f_HL[s, j]
    return gain, feature, code, dl, GL, HL


@njit(cache=True, nogil=True)
def find_best_splits_pooled(pool, slots, node_G, node_H, feat_mask, offsets, n_value_bins,
                            is_cat, lam, alpha, mcw, max_onehot, max_thr):
    """``find_best_splits_counted`` without a least row count, under XGBoost's missing rule."""
    return find_best_splits_counted(pool, slots, node_G, node_H, feat_mask, offsets,
                                    n_value_bins, is_cat, lam, alpha, mcw, max_onehot, max_thr,
                                    np.zeros(slots.shape[0]), 0.0,
                                    np.full(offsets.shape[0], XGB_MISSING, dtype=np.int64))


@njit(cache=True, nogil=True)
def find_best_splits_counted(pool, slots, node_G, node_H, feat_mask, offsets, n_value_bins,
                             is_cat, lam, alpha, mcw, max_onehot, max_thr, counts, min_count,
                             rules):
    """Best split of every node, node ``s`` having histogram ``pool[slots[s]]`` and
    feature mask ``feat_mask[s]``: arrays (gain, feature, code, default_left, GL, HL), and
    each node's best gain per field ((n_nodes, d), -inf where none or not scanned).

    ``code`` is the split bin for numeric fields (bins <= code go left) and the encoded left
    set of ``_scan_categorical`` for categorical ones. ``gain`` is -inf where no split is valid.
    ``min_count`` > 0: LightGBM's ``min_data_in_leaf``, node ``s`` having ``counts[s]`` rows.
    ``rules``: each field's missing rule (``XGB_MISSING``, ...).
    Called from inside the fused grower; the learner calls ``find_best_splits``.
    """
    n_nodes = slots.shape[0]
    d = offsets.shape[0]
    f_gain = np.full((n_nodes, d), -np.inf)
    f_code = np.zeros((n_nodes, d), dtype=np.int64)
    f_dl = np.zeros((n_nodes, d), dtype=np.bool_)
    f_GL = np.zeros((n_nodes, d))
    f_HL = np.zeros((n_nodes, d))
    if n_nodes * offsets[d - 1] < PARALLEL_SPLIT_BINS:  # a launch costs more than the scan
        scan_range(np.int64(0), n_nodes * d, d, pool, slots, node_G, node_H, feat_mask, offsets,
                   n_value_bins, is_cat, lam, alpha, mcw, max_onehot, max_thr, counts,
                   min_count, rules, f_gain, f_code, f_dl, f_GL, f_HL)
    else:
        _scan_parallel(d, pool, slots, node_G, node_H, feat_mask, offsets, n_value_bins, is_cat,
                       lam, alpha, mcw, max_onehot, max_thr, counts, min_count, rules, f_gain,
                       f_code, f_dl, f_GL, f_HL)
    gain, feature, code, dl, GL, HL = best_of_fields(f_gain, f_code, f_dl, f_GL, f_HL)
    return gain, feature, code, dl, GL, HL, f_gain


def find_best_splits(hists, node_G, node_H, feat_mask, offsets, n_value_bins, is_cat,
                     lam, alpha, mcw, max_onehot, max_thr, slots=None, parallel=False,
                     monotone=None, field_gains=False, counts=None, min_count=0,
                     missing_rules=None):
    """``find_best_splits_pooled`` from the host, node ``s`` having histogram ``hists[s]``
    ((n_nodes, total_bins, 2)), or ``hists[slots[s]]`` where ``slots`` is given; the scans
    run on Python threads (``parallel.run_ranges``), so that the learner compiles no
    ``prange`` kernel; ``parallel``: as one ``prange`` kernel instead (numeric fields), where
    the training loop's other kernels launch so (``Grower.launches_prange``).
    ``monotone``: (lower, upper, mono, lgb, step) under monotone constraints or a cap on the
    weights: the nodes' bounds on their weights, the fields' constraints, whether LightGBM's
    rule and its ``max_delta_step`` (``scan_bounded_range``). ``counts``, ``min_count``: the nodes' rows and LightGBM's
    ``min_data_in_leaf`` (0: none). ``missing_rules``: each field's missing rule (None: all
    ``XGB_MISSING``). ``field_gains``: return each node's best gain per field too, as a
    seventh array ((n_nodes, d))."""
    slots = (np.arange(hists.shape[0]) if slots is None
             else np.ascontiguousarray(slots, dtype=np.int64))
    n_nodes, d = slots.shape[0], offsets.shape[0]
    f_gain = np.full((n_nodes, d), -np.inf)
    f_code = np.zeros((n_nodes, d), dtype=np.int64)
    f_dl = np.zeros((n_nodes, d), dtype=np.bool_)
    f_GL = np.zeros((n_nodes, d))
    f_HL = np.zeros((n_nodes, d))
    counts = (np.zeros(n_nodes) if counts is None
              else np.ascontiguousarray(counts, dtype=np.float64))
    rules = (np.full(d, XGB_MISSING, dtype=np.int64) if missing_rules is None
             else np.ascontiguousarray(missing_rules, dtype=np.int64))
    args = (d, hists, slots, np.asarray(node_G, dtype=np.float64),
            np.asarray(node_H, dtype=np.float64), feat_mask, offsets, n_value_bins, is_cat,
            float(lam), float(alpha), float(mcw), int(max_onehot), int(max_thr), counts,
            float(min_count), rules, f_gain, f_code, f_dl, f_GL, f_HL)
    scan = scan_range if is_cat.any() else scan_numeric_range
    if monotone is not None:
        lower, upper, mono, lgb, step = monotone
        args = args[:17] + (np.asarray(lower, dtype=np.float64),
                            np.asarray(upper, dtype=np.float64),
                            np.asarray(mono, dtype=np.int64), bool(lgb), float(step)) + args[17:]
        scan = scan_bounded_range
        parallel = False
    if n_nodes * offsets[d - 1] < PARALLEL_SPLIT_BINS:
        scan(0, n_nodes * d, *args)
    elif parallel and scan is scan_numeric_range:  # (categorical fields: never sparse)
        _scan_numeric_twin(n_nodes * d, chunks(n_nodes * d), *args)
    else:
        run_ranges(scan, n_nodes * d, *args)
    best = best_of_fields(f_gain, f_code, f_dl, f_GL, f_HL)
    return best + (f_gain,) if field_gains else best


SUBTRACT_CHUNK = 4096  # histogram cells of one subtraction task


@njit(cache=True, nogil=True)
def subtract_range(t0, t1, parents, parent_rows, small, pairs, out, n_chunks):
    """Tasks ``t0 .. t1 - 1`` of ``out[k] = parents[parent_rows[i]] - small[k]`` for
    ``k = pairs[i]``, task t being pair ``t // n_chunks``'s cells of chunk ``t % n_chunks``
    (rows flat)."""
    width = small.shape[1]
    for t in range(t0, t1):
        i = t // n_chunks
        c0 = (t % n_chunks) * SUBTRACT_CHUNK
        c1 = min(width, c0 + SUBTRACT_CHUNK)
        k = pairs[i]
        a = parents[parent_rows[i]][c0:c1]  # slices from 0: no wraparound check per cell
        b = small[k][c0:c1]
        o = out[k][c0:c1]
        for c in range(c1 - c0):
            o[c] = a[c] - b[c]


def subtract_histograms(parents, parent_rows, small, pairs, out, parallel=False):
    """``out[pairs[i]] = parents[parent_rows[i]] - small[pairs[i]]`` (the larger children's
    histograms from their parents' and the smaller children's, as numpy's ``a - b`` gives
    them), on Python threads, or as one ``prange`` kernel where ``parallel``. Arrays
    (n, total_bins, 2) float64, C order."""
    n = len(pairs)
    if n == 0:
        return
    flat = small.reshape(small.shape[0], -1)
    n_chunks = (flat.shape[1] + SUBTRACT_CHUNK - 1) // SUBTRACT_CHUNK
    args = (parents.reshape(parents.shape[0], -1), np.asarray(parent_rows, dtype=np.int64), flat,
            np.asarray(pairs, dtype=np.int64), out.reshape(out.shape[0], -1), n_chunks)
    if parallel:
        _subtract_twin(n * n_chunks, chunks(n * n_chunks), *args)
    else:
        run_ranges(subtract_range, n * n_chunks, *args)


# prange twins of the range kernels (``parallel.chunks``)
@njit(parallel=True, cache=True, nogil=True)
def _scan_numeric_twin(n, c, *args):
    for q in prange(c):
        scan_numeric_range(n * q // c, n * (q + 1) // c, *args)


@njit(parallel=True, cache=True, nogil=True)
def _subtract_twin(n, c, *args):
    for q in prange(c):
        subtract_range(n * q // c, n * (q + 1) // c, *args)
