"""Row sampling, once per round: which rows the round's trees see, and the weight that keeps
their gradient sums unbiased.

* ``uniform`` (XGBoost's default, LightGBM's bagging): each row with probability ``subsample``,
  unweighted.
* ``goss`` (LightGBM's Gradient-based One-Side Sampling, Ke et al. 2017): the ``top_rate``
  share of rows of largest ``|g * h|`` (summed over outputs) is kept; each other row is drawn
  with probability ``other_rate / (1 - top_rate)`` and weighted ``(1 - top_rate) /
  other_rate``. As in LightGBM, the first ``1 / learning_rate`` rounds use every row.
* ``mvs`` (Minimal Variance Sampling, Ibragimov and Gusev 2019; XGBoost's ``gradient_based``):
  row ``i`` is drawn with probability ``p_i = min(1, s_i / mu)``, ``s_i = sqrt(sum_k g_ik^2 +
  MVS_LAMBDA * sum_k h_ik^2)``, ``mu`` set so that the probabilities add up to ``subsample *
  n``; a drawn row is weighted ``1 / p_i``. The out-of-core paper draws its in-memory sample
  this way.

A weight multiplies the row's gradient and hessian for the round's trees, so that histogram
sums, leaf values and ``min_child_weight`` see the expected sums of all rows.
"""
from __future__ import annotations

import numpy as np

METHODS = ("uniform", "goss", "mvs")
ALIASES = {"gradient_based": "mvs", "bagging": "uniform"}  # XGBoost's, LightGBM's names
MVS_LAMBDA = 0.1  # the hessian's share of the MVS score, as XGBoost's gradient_based sampling


def goss_rates(subsample, top_rate, other_rate):
    """(top_rate, other_rate) of GOSS: as given, else two thirds and one third of ``subsample``
    (LightGBM's 0.2 and 0.1 when ``subsample`` is 1)."""
    if top_rate is None and other_rate is None:
        if subsample >= 1.0:
            return 0.2, 0.1
        return 2.0 * subsample / 3.0, subsample / 3.0
    return (0.2 if top_rate is None else top_rate), (0.1 if other_rate is None else other_rate)


def draw(method, g, h, rng, subsample, top_rate=0.2, other_rate=0.1, round_=0,
         learning_rate=0.3):
    """The rows of one round (int32, ascending) and their weights (float32, one per row drawn;
    None: unweighted), or (None, None) for every row unweighted. ``g``, ``h``: (K, n)."""
    n = g.shape[1]
    if method == "uniform":
        if subsample >= 1.0:
            return None, None
        rows = np.flatnonzero(rng.random(n) < subsample).astype(np.int32)
        return _at_least_one(rows), None
    if method == "goss":
        if round_ < int(1.0 / learning_rate):
            return None, None
        return _goss(g, h, rng, top_rate, other_rate)
    if method == "mvs":
        if subsample >= 1.0:
            return None, None
        return _mvs(g, h, rng, subsample)
    raise ValueError(f"sampling_method must be one of {METHODS}, got {method!r}")


def _at_least_one(rows):
    return rows if rows.size else np.zeros(1, dtype=np.int32)


def _goss(g, h, rng, a, b):
    n = g.shape[1]
    score = np.abs(g.astype(np.float64) * h).sum(axis=0)
    n_top = int(a * n)
    keep = np.zeros(n, dtype=bool)
    if n_top > 0:  # the n_top largest scores (O(n); the same rows for the same scores)
        keep[np.argpartition(-score, n_top - 1)[:n_top]] = True
    rest = ~keep
    drawn = rest & (rng.random(n) < b / (1.0 - a))
    rows = np.flatnonzero(keep | drawn).astype(np.int32)
    weight = np.where(drawn[rows], (1.0 - a) / b, 1.0).astype(np.float32)
    if rows.size == 0:
        return np.zeros(1, dtype=np.int32), np.ones(1, dtype=np.float32)
    return rows, weight


def mvs_threshold(score, k):
    """``mu`` with ``sum(min(1, score / mu)) == k`` (0 < k < the number of positive scores).
    Rows whose score passes ``mu`` are kept for sure; the others share what is left of ``k``.
    From ``mu = sum / k``, the rows above ``mu`` are capped and ``mu`` is set again from the
    rest; ``mu`` only falls, so the capped set only grows, and it stops when no new row
    passes (a few passes over the rows, no sort)."""
    total = float(score.sum())
    c, s_c = 0, 0.0
    while True:
        mu = (total - s_c) / (k - c)
        above = score > mu
        n_above = int(np.count_nonzero(above))
        if n_above == c:
            return mu
        c = n_above
        s_c = float(score[above].sum())


# rows per block of the MVS draw: its float64 temporaries stay a few MB however many rows
# there are (out of core, the sample is drawn over every row)
BLOCK = 1 << 18


def _mvs(g, h, rng, f):
    n = g.shape[1]
    score = np.empty(n)
    for a in range(0, n, BLOCK):
        gb = g[:, a:a + BLOCK].astype(np.float64)
        hb = h[:, a:a + BLOCK].astype(np.float64)
        score[a:a + BLOCK] = np.sqrt((gb * gb).sum(axis=0) + MVS_LAMBDA * (hb * hb).sum(axis=0))
    k = f * n
    positive = int(np.count_nonzero(score > 0))
    if positive <= k:  # every row with a gradient fits: every row, unweighted
        return None, None
    mu = mvs_threshold(score, k)
    rows, weights = [], []
    for a in range(0, n, BLOCK):  # the same random numbers as one rng.random(n)
        p = np.minimum(1.0, score[a:a + BLOCK] / mu)
        drawn = np.flatnonzero(rng.random(p.size) < p)
        rows.append((drawn + a).astype(np.int32))
        weights.append((1.0 / p[drawn]).astype(np.float32))
    rows, weights = np.concatenate(rows), np.concatenate(weights)
    if rows.size == 0:
        i = int(np.argmax(score))
        return np.array([i], dtype=np.int32), np.array([max(1.0, mu / score[i])], dtype=np.float32)
    return rows, weights
