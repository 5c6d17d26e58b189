"""Learning to rank: query groups, LambdaMART gradients and the ranking metrics.

Rows come in queries: ``group`` gives their sizes (consecutive rows, LightGBM's and
XGBoost's ``group=``), or ``qid`` one query id per row (each query's rows contiguous). Inside
hardwood a query set is ``ptr``, int64 boundaries: query ``q`` is rows ``ptr[q]:ptr[q + 1]``.

Gradients (one query at a time, rows ranked by their current scores, ties in row order):

* ``rank:ndcg`` (LambdaMART; Burges 2010, as LightGBM's ``lambdarank``): for each pair of
  rows with different labels, one of them ranked within ``lambdarank_truncation_level``, the
  RankNet gradient ``sigmoid * rho`` (``rho = 1 / (1 + exp(sigmoid * (s_hi - s_lo)))``) is
  weighted by the pair's |delta NDCG| (the gain difference, ``label_gain[label]``, times the
  difference of the two positions' discounts ``1 / log2(2 + rank)``, over the query's ideal
  DCG at the truncation level); the hessian is ``sigmoid^2 * rho * (1 - rho) * |delta NDCG|``.
  ``lambdarank_norm`` (default on, as LightGBM) divides each pair's weight by
  ``0.01 + |s_hi - s_lo|`` when the query's scores are not all equal, and scales the query's
  gradients by ``log2(1 + L) / L`` (``L``: the sum of its |lambda|).
* ``rank:pairwise`` (RankNet): every pair with different labels, weight 1, no truncation.

Metrics: ``ndcg@k``, ``map@k`` and ``pre@k`` (``k`` omitted: every position), the mean over
queries. Convention for a query with no relevant row (every label 0): NDCG 1 (its ideal DCG
is 0, any order is ideal: LightGBM's and XGBoost's default), MAP 1 and precision 0.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .backends.split import stable_argsort
from .parallel import run_ranges

DEFAULT_TRUNCATION = 30  # LightGBM's lambdarank_truncation_level
MAX_LABEL = 30  # labels are integers 0..30 (label_gain 2^30 - 1 still fits a double exactly)


# -- query groups ---------------------------------------------------------------------------
def group_ptr(n_rows, group=None, qid=None, what="group"):
    """The query boundaries of ``n_rows`` rows from ``group`` sizes or per-row ``qid``s
    (exactly one of them); an error names what does not add up."""
    if (group is None) == (qid is None):
        raise ValueError("give the queries as group= (sizes) or as qid= (one id per row), "
                         "exactly one of them")
    if group is not None:
        sizes = np.asarray(group)
        if sizes.ndim != 1 or sizes.size == 0 or sizes.dtype.kind not in "iuf":
            raise ValueError(f"{what} must be a 1-d array of query sizes, got {sizes!r:.80}")
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(sizes) | (sizes != np.floor(sizes)) | (sizes < 1) \
                if sizes.dtype.kind == "f" else sizes < 1
        if np.any(bad):
            raise ValueError(f"{what} holds a size that is not a positive integer "
                             f"(first: {sizes[bad][0].item()!r})")
        if np.any(sizes > n_rows):  # before the sum, which could wrap around in int64
            raise ValueError(f"{what} holds a query of {sizes[sizes > n_rows][0].item()!r} rows, but "
                             f"the data has {n_rows}")
        sizes = sizes.astype(np.int64)
        if int(sizes.sum()) != n_rows:
            raise ValueError(f"{what} sizes add up to {int(sizes.sum())} rows, but the data "
                             f"has {n_rows}")
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    q = np.asarray(qid)
    if q.ndim != 1 or q.shape[0] != n_rows:
        raise ValueError(f"qid must hold one query id per row ({n_rows}), got shape {q.shape}")
    if n_rows == 0:
        raise ValueError("no rows")
    if q.dtype.kind == "f" and np.isnan(q).any():  # NaN != NaN: each row would be a query
        raise ValueError(f"qid has a missing value (first at row "
                         f"{int(np.flatnonzero(np.isnan(q))[0])}); every row needs its query")
    starts = np.concatenate([[0], np.flatnonzero(q[1:] != q[:-1]) + 1])
    ids = q[starts]
    # (a set: np.unique sorts, a bare TypeError on ids of mixed types)
    if len(set(ids.tolist())) != ids.size:  # some query in two runs: name the first
        seen = set()
        for k, v in enumerate(ids.tolist()):
            if v in seen:
                first = int(np.flatnonzero(q == v)[0])
                raise ValueError(f"qid {v!r} appears in rows that are not contiguous (rows "
                                 f"{first} and {int(starts[k])}); sort the rows by query")
            seen.add(v)
    return np.concatenate([starts, [n_rows]]).astype(np.int64)


def label_gains(params, y):
    """The gain of each label: ``label_gain`` as given, else 2^label - 1 for every grade
    0..30 (not only up to the training labels' largest, so that a validation set may hold a
    higher grade, as in both peers)."""
    top = int(y.max()) if y.size else 0
    gain = params.get("label_gain")
    if gain is None:
        return np.array([2.0 ** i - 1.0 for i in range(MAX_LABEL + 1)])
    gain = np.asarray(gain, dtype=np.float64)
    if gain.ndim != 1 or gain.size <= top:
        raise ValueError(f"label_gain has {gain.size} entries, but the labels go up to {top}")
    if not np.all(np.isfinite(gain)) or np.any(gain < 0):
        bad = int(np.flatnonzero(~np.isfinite(gain) | (gain < 0))[0])
        raise ValueError(f"label_gain must hold finite gains >= 0; grade {bad}'s is "
                         f"{gain[bad]!r}")
    return gain


def check_ranking_labels(y, what="ranking", label_gain=None):
    """Labels are integer grades 0..30, or 0..len(label_gain) - 1 when ``label_gain`` is
    given (as LightGBM allows)."""
    top = MAX_LABEL if label_gain is None else len(label_gain) - 1
    if np.any(y != np.floor(y)) or np.any(y < 0) or np.any(y > top):
        bad = float(y[(y != np.floor(y)) | (y < 0) | (y > top)][0])
        raise ValueError(f"{what} labels must be integer relevance grades 0..{top}"
                         + ("" if label_gain is None else " (label_gain's grades)")
                         + f", found {bad!r}")


# -- gradients ---------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _ideal_dcg(labels, gain, k):
    order = stable_argsort(-labels)
    dcg = 0.0
    for r in range(min(k, labels.shape[0])):
        dcg += gain[int(labels[order[r]])] / math.log2(2.0 + r)
    return dcg


@njit(parallel=True, cache=True, nogil=True)
def ideal_dcgs(y, ptr, gain, k):
    """Each query's ideal DCG at ``k``: the labels do not change between rounds, so the
    trainer computes these once."""
    nq = ptr.shape[0] - 1
    out = np.empty(nq)
    for q in prange(nq):
        out[q] = _ideal_dcg(y[ptr[q]:ptr[q + 1]], gain, k)
    return out


def lambda_gradients(score, y, w, weighted, ptr, gain, best_dcg, sigmoid, truncation, ndcg,
                     norm, g, h, parallel=False):
    """g, h of every row, one query at a time (see the module docstring); ``ndcg`` False is
    RankNet (rank:pairwise). Row weights multiply a row's g and h. ``best_dcg``: each
    query's ideal DCG at ``truncation`` (``ideal_dcgs``; unused by RankNet). ``parallel``:
    in one ``prange`` kernel (after the fused grower), else on the Python threads (after the
    tree learner; see ``hardwood.objectives``)."""
    args = (score, y, w, weighted, ptr, gain, best_dcg, sigmoid, truncation, ndcg, norm, g, h)
    if parallel:
        _lambda_queries(*args)
    else:
        run_ranges(_lambda_range, ptr.shape[0] - 1, *args)


@njit(parallel=True, cache=True, nogil=True)
def _lambda_queries(score, y, w, weighted, ptr, gain, best_dcg, sigmoid, truncation, ndcg,
                    norm, g, h):
    """``_lambda_range`` over every query, in a ``prange``."""
    for q in prange(ptr.shape[0] - 1):
        _lambda_range(q, q + 1, score, y, w, weighted, ptr, gain, best_dcg, sigmoid, truncation,
                      ndcg, norm, g, h)


@njit(cache=True, nogil=True)
def _lambda_range(q0, q1, score, y, w, weighted, ptr, gain, best_dcg, sigmoid, truncation,
                  ndcg, norm, g, h):
    """The g, h of the rows of queries ``q0 .. q1 - 1``."""
    for q in range(q0, q1):
        b, e = ptr[q], ptr[q + 1]
        m = e - b
        for i in range(b, e):
            g[i] = 0.0
            h[i] = 0.0
        if m < 2:
            continue
        s = score[b:e]
        lab = y[b:e]
        order = stable_argsort(-s)  # ranks by score, ties in row order
        lam = np.zeros(m)
        hes = np.zeros(m)
        inv_max = 1.0
        trunc = m
        if ndcg:
            trunc = min(truncation, m)
            best = best_dcg[q]
            if best <= 0.0:
                continue  # no relevant row: every order is ideal
            inv_max = 1.0 / best
        spread = s[order[0]] != s[order[m - 1]]
        disc = np.empty(m)  # each position's discount, once per query
        for r in range(m):
            disc[r] = 1.0 / math.log2(2.0 + r)
        total = 0.0
        for i in range(min(trunc, m - 1) if ndcg else m - 1):
            for j in range(i + 1, m):
                a, c = order[i], order[j]
                if lab[a] == lab[c]:
                    continue
                if lab[a] > lab[c]:
                    hi, lo, r_hi, r_lo = a, c, i, j
                else:
                    hi, lo, r_hi, r_lo = c, a, j, i
                ds = s[hi] - s[lo]
                weight = 1.0
                if ndcg:
                    gap = gain[int(lab[hi])] - gain[int(lab[lo])]
                    weight = gap * abs(disc[r_hi] - disc[r_lo]) * inv_max
                    if norm and spread:
                        weight /= 0.01 + abs(ds)
                rho = 1.0 / (1.0 + math.exp(sigmoid * ds))
                pl = -sigmoid * rho * weight
                ph = sigmoid * sigmoid * rho * (1.0 - rho) * weight
                lam[hi] += pl
                lam[lo] -= pl
                hes[hi] += ph
                hes[lo] += ph
                total -= 2.0 * pl
        scale = 1.0
        if ndcg and norm and total > 0.0:
            scale = math.log2(1.0 + total) / total
        for i in range(m):
            wi = w[b + i] if weighted else 1.0
            g[b + i] = lam[i] * scale * wi
            h[b + i] = max(hes[i] * scale, 1e-16) * wi


# -- metrics -----------------------------------------------------------------------------------
@njit(parallel=True, cache=True, nogil=True)
def _per_query(y, p, ptr, gain, k, kind):
    """Each query's NDCG@k (kind 0), AP@k (1) or precision@k (2); k <= 0: every position."""
    nq = ptr.shape[0] - 1
    out = np.empty(nq)
    for q in prange(nq):
        b, e = ptr[q], ptr[q + 1]
        m = e - b
        kk = m if k <= 0 else min(k, m)
        lab = y[b:e]
        order = stable_argsort(-p[b:e])
        if kind == 0:
            best = _ideal_dcg(lab, gain, kk)
            if best <= 0.0:
                out[q] = 1.0
                continue
            dcg = 0.0
            for r in range(kk):
                dcg += gain[int(lab[order[r]])] / math.log2(2.0 + r)
            out[q] = dcg / best
        elif kind == 1:
            hits, s = 0, 0.0
            n_rel = 0
            for i in range(m):
                if lab[i] > 0:
                    n_rel += 1
            for r in range(kk):
                if lab[order[r]] > 0:
                    hits += 1
                    s += hits / (r + 1.0)
            out[q] = 1.0 if n_rel == 0 else s / min(n_rel, kk)
        else:
            hits = 0
            for r in range(kk):
                if lab[order[r]] > 0:
                    hits += 1
            out[q] = hits / max(kk, 1)
    return out


def parse_ranking_metric(name):
    """('ndcg' | 'map' | 'pre', k) for 'ndcg', 'ndcg@10', ...; None for another name."""
    base, _, at = name.partition("@")
    if base in ("ndcg-", "map-", "pre-"):  # (a bare TypeError from ranking_metric)
        raise ValueError(f"eval_metric {name!r}: XGBoost's '-' variant (a query without a "
                         "relevant row scores 0) is not supported; give "
                         f"'{base[:-1]}' (see hardwood.ranking for its rule)")
    if base not in ("ndcg", "map", "pre"):
        return None
    if at:
        if at.endswith("-") and at[:-1].isascii() and at[:-1].isdigit():  # 'ndcg@3-'
            raise ValueError(f"eval_metric {name!r}: XGBoost's '-' variant (a query without "
                             "a relevant row scores 0) is not supported; give "
                             f"'{base}@{at[:-1]}' (see hardwood.ranking for its rule)")
        # (ASCII digits: '³' passed isdigit() to a bare int() error; a cutoff past int32 was
        # an OverflowError in the kernel)
        if not (at.isascii() and at.isdigit()) or not 1 <= int(at) < 2 ** 31:
            raise ValueError(f"eval_metric {name!r}: the cutoff after '@' must be a positive "
                             "integer")
        return base, int(at)
    return base, 0


def ranking_metric(name, y, p, ptr, gain=None, w=None):
    """The mean over queries of metric ``name`` (see the module docstring). Row weights
    ``w`` weight each query by the mean of its rows' weights, as LightGBM does; with one
    weight per query repeated over its rows, that is XGBoost's per-query weight. Both peers
    score weighted validation sets this way, NDCG's queries without a relevant row included:
    each adds its score of 1 unweighted to the sum, which is divided by all the weights."""
    base, k = parse_ranking_metric(name)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if gain is None:
        gain = np.array([2.0 ** i - 1.0 for i in range(int(y.max()) + 1 if y.size else 1)])
    per = _per_query(y, np.ascontiguousarray(p, dtype=np.float64).reshape(-1),
                     np.asarray(ptr, dtype=np.int64), np.asarray(gain, dtype=np.float64), k,
                     {"ndcg": 0, "map": 1, "pre": 2}[base])
    if not per.size:
        return float("nan")
    if w is None:
        return float(per.mean())
    ptr = np.asarray(ptr, dtype=np.int64)
    sizes = np.diff(ptr)
    sums = np.zeros(per.size)
    rows = sizes > 0  # (reduceat of an empty query would read the next one's first row)
    sums[rows] = np.add.reduceat(np.asarray(w, dtype=np.float64), ptr[:-1][rows])
    qw = np.divide(sums, sizes, out=np.zeros(per.size), where=rows)
    total = qw.sum()
    if base == "ndcg":  # a query without a relevant row adds 1, unweighted, as both peers
        top = np.zeros(per.size)
        top[rows] = np.maximum.reduceat(np.asarray(gain)[y.astype(np.int64)], ptr[:-1][rows])
        qw = np.where(top > 0.0, qw, 1.0)
    return float(per @ qw / total) if total > 0 else float("nan")
