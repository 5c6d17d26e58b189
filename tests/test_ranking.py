"""Learning to rank (hardwood.ranking, issue 15): query groups, LambdaMART and RankNet
gradients, the ranking metrics, GBDTRanker, and parity with LightGBM's LGBMRanker on the
shared LETOR-style data (skipped when ../shared/data is absent)."""
import itertools
import math
import os

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import hardwood
from hardwood.ranking import group_ptr, ideal_dcgs, lambda_gradients, ranking_metric

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")


def _queries(n_queries=40, seed=0, d=6):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 15, n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, d))
    rel = X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n)
    y = np.digitize(rel, [0.0, 1.0, 2.0]).astype(float)  # grades 0..3
    return X, y, sizes


# -- groups ----------------------------------------------------------------------------------
def test_groups_and_qids_give_the_same_boundaries_and_bad_ones_are_named():
    assert group_ptr(6, group=[2, 3, 1]).tolist() == [0, 2, 5, 6]
    assert group_ptr(6, qid=[7, 7, 3, 3, 3, 9]).tolist() == [0, 2, 5, 6]
    with pytest.raises(ValueError, match="add up to 5 rows, but the data has 6"):
        group_ptr(6, group=[2, 3])
    with pytest.raises(ValueError, match="not a positive integer"):
        group_ptr(6, group=[3, 0, 3])
    with pytest.raises(ValueError, match="qid 7 appears in rows that are not contiguous"):
        group_ptr(5, qid=[7, 7, 3, 7, 3])
    with pytest.raises(ValueError, match="qid has a missing value .first at row 2"):
        group_ptr(4, qid=[1.0, 1.0, np.nan, np.nan])
    with pytest.raises(ValueError, match="exactly one of them"):
        group_ptr(6, group=[6], qid=np.zeros(6))
    X, y, sizes = _queries()
    with pytest.raises(ValueError, match="rank:ndcg needs query groups"):
        hardwood.train({"objective": "rank:ndcg"}, hardwood.Dataset(X, y), 1)
    with pytest.raises(ValueError, match="integer relevance grades"):
        hardwood.train({"objective": "rank:ndcg"}, hardwood.Dataset(X, y + 0.5, group=sizes), 1)


# -- gradients -------------------------------------------------------------------------------
def _naive_lambdas(s, y, gain, sigmoid, trunc, ndcg, norm):
    """One query's lambdas, pair by pair, straight from the definition."""
    m = len(s)
    order = sorted(range(m), key=lambda i: (-s[i], i))
    rank = {r: k for k, r in enumerate(order)}
    g, h = np.zeros(m), np.zeros(m)
    ideal = sorted(y, reverse=True)
    best = sum(gain[int(v)] / math.log2(2 + k) for k, v in enumerate(ideal[:trunc]))
    if ndcg and best <= 0:
        return g, h
    spread = max(s) != min(s)
    total = 0.0
    for a, c in itertools.combinations(range(m), 2):
        if y[a] == y[c]:
            continue
        hi, lo = (a, c) if y[a] > y[c] else (c, a)
        if ndcg and min(rank[hi], rank[lo]) >= trunc:
            continue
        ds = s[hi] - s[lo]
        wt = 1.0
        if ndcg:
            wt = ((gain[int(y[hi])] - gain[int(y[lo])])
                  * abs(1 / math.log2(2 + rank[hi]) - 1 / math.log2(2 + rank[lo])) / best)
            if norm and spread:
                wt /= 0.01 + abs(ds)
        rho = 1 / (1 + math.exp(sigmoid * ds))
        g[hi] -= sigmoid * rho * wt
        g[lo] += sigmoid * rho * wt
        h[hi] += sigmoid ** 2 * rho * (1 - rho) * wt
        h[lo] += sigmoid ** 2 * rho * (1 - rho) * wt
        total += 2 * sigmoid * rho * wt
    if ndcg and norm and total > 0:
        g *= math.log2(1 + total) / total
        h *= math.log2(1 + total) / total
    return g, np.maximum(h, 1e-16)


@pytest.mark.parametrize("parallel", [False, True])  # run_ranges, or one prange kernel
@pytest.mark.parametrize("ndcg,norm,trunc", [(True, True, 30), (True, False, 3),
                                             (False, False, 30)])
def test_lambda_gradients_equal_the_pairwise_definition(ndcg, norm, trunc, parallel):
    _, y, sizes = _queries(n_queries=12, seed=3)
    ptr = group_ptr(len(y), sizes)
    rng = np.random.default_rng(1)
    s = np.round(rng.normal(size=len(y)), 1)  # ties in the scores: ranked in row order
    gain = np.array([0.0, 1.0, 3.0, 7.0])
    g = np.empty(len(y), dtype=np.float32)
    h = np.empty(len(y), dtype=np.float32)
    lambda_gradients(s, y, np.ones(1), False, ptr, gain, ideal_dcgs(y, ptr, gain, trunc), 1.5,
                     trunc, ndcg, norm, g, h, parallel=parallel)
    for q in range(len(sizes)):
        b, e = ptr[q], ptr[q + 1]
        ng, nh = _naive_lambdas(s[b:e], y[b:e], gain, 1.5, trunc, ndcg, norm)
        np.testing.assert_allclose(g[b:e], ng, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(h[b:e], nh, rtol=1e-5, atol=1e-7)


# -- metrics ----------------------------------------------------------------------------------
def test_ndcg_equals_scikit_learns_where_the_conventions_meet():
    from sklearn.metrics import ndcg_score

    _, y, sizes = _queries(n_queries=30, seed=5)
    ptr = group_ptr(len(y), sizes)
    p = np.random.default_rng(2).normal(size=len(y))  # no ties
    keep = [q for q in range(len(sizes)) if y[ptr[q]:ptr[q + 1]].max() > 0]
    lin = np.arange(4, dtype=float)  # scikit-learn's gain is the label itself
    for k in (1, 3, 10, None):
        ours = [ranking_metric(f"ndcg@{k}" if k else "ndcg", y[ptr[q]:ptr[q + 1]],
                               p[ptr[q]:ptr[q + 1]], [0, ptr[q + 1] - ptr[q]], gain=lin)
                for q in keep]
        theirs = [ndcg_score([y[ptr[q]:ptr[q + 1]]], [p[ptr[q]:ptr[q + 1]]], k=k) for q in keep]
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    # a query with no relevant row scores 1 (LightGBM's and XGBoost's convention)
    assert ranking_metric("ndcg@5", np.zeros(4), np.arange(4.0), [0, 4]) == 1.0
    assert ranking_metric("map@5", np.zeros(4), np.arange(4.0), [0, 4]) == 1.0
    assert ranking_metric("pre@2", np.array([0, 0, 1, 0.0]), np.arange(4.0), [0, 4]) == 0.5


# -- training ----------------------------------------------------------------------------------
def test_lambdamart_learns_and_the_ranker_estimator_matches_train():
    X, y, sizes = _queries(n_queries=60)
    Xv, yv, sv = _queries(n_queries=20, seed=9)
    p = {"objective": "rank:ndcg", "max_depth": 4, "learning_rate": 0.2}
    ds = hardwood.Dataset(X, y, group=sizes)
    dv = hardwood.Dataset(Xv, yv, group=sv, reference=ds)
    m = hardwood.train(p, ds, 30, valid_sets=[dv], valid_names=["v"])
    curve = m.evals_result["v"]["ndcg@10"]
    assert curve[-1] > curve[0] + 0.05 and curve[-1] > 0.8
    r = hardwood.GBDTRanker(n_estimators=30, max_depth=4, learning_rate=0.2).fit(
        X, y, group=sizes, eval_set=[(Xv, yv)], eval_group=[sv])
    np.testing.assert_allclose(r.predict(Xv), m.predict(Xv), rtol=1e-12)
    qid = np.repeat(np.arange(len(sizes)) * 3 + 1, sizes)
    r2 = hardwood.GBDTRanker(n_estimators=30, max_depth=4, learning_rate=0.2).fit(X, y, qid=qid)
    np.testing.assert_allclose(r2.predict(Xv), m.predict(Xv), rtol=1e-12)
    pw = hardwood.train({**p, "objective": "rank:pairwise"}, ds, 30, valid_sets=[dv],
                        valid_names=["v"])
    assert pw.evals_result["v"]["ndcg@10"][-1] > 0.8
    with pytest.raises(ValueError, match="needs the queries"):
        hardwood.GBDTRanker().fit(X, y)
    with pytest.raises(ValueError, match="eval_group and eval_qid need eval_set"):
        hardwood.GBDTRanker().fit(X, y, group=sizes, eval_group=[sv])  # was ignored
    with pytest.raises(ValueError, match="eval_group and eval_qid need eval_set"):
        hardwood.GBDTRanker().fit(X, y, group=sizes, eval_qid=[np.zeros(len(yv))])
    with pytest.raises(ValueError, match="GBDTRanker trains ranking objectives"):
        hardwood.GBDTRanker(objective="binary:logistic").fit(X, y, group=sizes)


def _letor():
    from sklearn.datasets import load_svmlight_file

    if not os.path.exists(os.path.join(DATA, "rank.train")):
        pytest.skip("../shared/data is absent")
    Xtr, ytr = load_svmlight_file(os.path.join(DATA, "rank.train"))
    Xte, yte = load_svmlight_file(os.path.join(DATA, "rank.test"), n_features=Xtr.shape[1])
    gtr = np.loadtxt(os.path.join(DATA, "rank.train.query"), dtype=int)
    gte = np.loadtxt(os.path.join(DATA, "rank.test.query"), dtype=int)
    return Xtr.toarray(), ytr, gtr, Xte.toarray(), yte, gte


def test_ndcg_at_10_within_0_01_of_lightgbm_on_the_letor_data():
    lgb = pytest.importorskip("lightgbm")
    Xtr, ytr, gtr, Xte, yte, gte = _letor()
    ours = hardwood.GBDTRanker(n_estimators=100, learning_rate=0.1, max_leaves=63,
                               grow_policy="lossguide", max_depth=0, min_child_weight=1e-3,
                               reg_lambda=0.0).fit(Xtr, ytr, group=gtr)
    peer = lgb.LGBMRanker(n_estimators=100, learning_rate=0.1, num_leaves=63, verbose=-1,
                          n_jobs=2).fit(Xtr, ytr, group=gtr)
    ptr = group_ptr(len(yte), gte)
    a = ranking_metric("ndcg@10", yte, ours.predict(Xte), ptr)
    b = ranking_metric("ndcg@10", yte, peer.predict(Xte), ptr)
    assert abs(a - b) < 0.01, (a, b)
    # our metric is LightGBM's own: its ndcg@10 on its model
    peer2 = lgb.train({"objective": "lambdarank", "num_leaves": 63, "learning_rate": 0.1,
                       "verbose": -1, "metric": "ndcg", "eval_at": [10], "num_threads": 2},
                      lgb.Dataset(Xtr, ytr, group=gtr), 20,
                      valid_sets=[lgb.Dataset(Xte, yte, group=gte)],
                      callbacks=[lgb.record_evaluation(rec := {})])
    np.testing.assert_allclose(ranking_metric("ndcg@10", yte, peer2.predict(Xte), ptr),
                               rec["valid_0"]["ndcg@10"][-1], rtol=1e-6)



def test_xgboost_rank_ndcg_is_our_model_at_half_its_step():
    """XGBoost's rank:ndcg doubles each pair's hessian (LightGBM's and ours do not), so its
    model of (learning_rate, reg_lambda, min_child_weight) is ours of half of each, with
    XGBoost's top-k of 32 pairs. On features of a dozen values (the same bins in both) the
    two libraries then grow the same trees: predictions equal to float32 rounding."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(3)
    nq, docs = 80, 25
    X = rng.integers(0, 12, size=(nq * docs, 8)).astype(np.float64)
    score = X[:, 0] - 0.5 * X[:, 1] + 0.3 * X[:, 2] * (X[:, 3] > 5) + rng.normal(scale=2,
                                                                                size=len(X))
    y = np.digitize(score, np.quantile(score, [0.5, 0.8, 0.95])).astype(np.float64)
    g = np.full(nq, docs)
    peer = xgb.XGBRanker(n_estimators=10, learning_rate=0.1, max_depth=3, reg_lambda=1.0,
                         min_child_weight=1.0, objective="rank:ndcg", tree_method="hist",
                         base_score=0.0, n_jobs=1).fit(X, y, group=g)
    ours = hardwood.GBDTRanker(n_estimators=10, learning_rate=0.05, max_depth=3,
                               reg_lambda=0.5, min_child_weight=0.5,
                               lambdarank_truncation_level=32, n_jobs=1).fit(X, y, group=g)
    np.testing.assert_allclose(ours.predict(X), peer.predict(X), rtol=0, atol=1e-6)
    # XGBoost's name of the truncation level is an alias of ours
    same = hardwood.train({"objective": "rank:ndcg", "learning_rate": 0.05, "max_depth": 3,
                           "reg_lambda": 0.5, "min_child_weight": 0.5,
                           "lambdarank_num_pair_per_sample": 32, "n_jobs": 1},
                          hardwood.Dataset(X, y, group=g), num_boost_round=10)
    np.testing.assert_array_equal(same.predict(X), ours.predict(X))
    # the estimator passes its LambdaMART parameters on
    short = hardwood.GBDTRanker(n_estimators=3, lambdarank_truncation_level=2, n_jobs=1)
    assert short.get_params()["lambdarank_truncation_level"] == 2
    assert not np.array_equal(short.fit(X, y, group=g).predict(X),
                              hardwood.GBDTRanker(n_estimators=3, n_jobs=1)
                              .fit(X, y, group=g).predict(X))

# -- scikit-learn's estimator checks ---------------------------------------------------------
class _OneQueryRanker(hardwood.GBDTRanker):
    """GBDTRanker for scikit-learn's generic checks, which fit ``(X, y)`` alone: without
    ``group``/``qid`` all rows form one query (GBDTRanker itself requires the queries, as
    LightGBM's and XGBoost's rankers do). Everything else is GBDTRanker's own code."""

    def fit(self, X, y, group=None, qid=None, sample_weight=None, **kwargs):
        if group is None and qid is None:
            group = [X.shape[0] if hasattr(X, "shape") else np.asarray(X).shape[0]]
        return super().fit(X, y, group=group, qid=qid, sample_weight=sample_weight, **kwargs)

    def score(self, X, y, group=None, qid=None, sample_weight=None):
        if group is None and qid is None:
            group = [X.shape[0] if hasattr(X, "shape") else np.asarray(X).shape[0]]
        return super().score(X, y, group=group, qid=qid, sample_weight=sample_weight)


_NOT_FOR_RANKING = {
    check: "a row's weight scales its lambda gradients; repeating the row adds pairs within "
           "its query and changes the query's ideal DCG, so weights are not repetitions"
    for check in ("check_sample_weight_equivalence_on_dense_data",
                  "check_sample_weight_equivalence_on_sparse_data")}


@parametrize_with_checks([_OneQueryRanker(n_estimators=5)],
                         expected_failed_checks=lambda est: _NOT_FOR_RANKING)
def test_ranker_passes_the_estimator_checks_that_apply_to_rankers(estimator, check):
    check(estimator)


def test_ranker_requires_its_queries():
    X, y, _ = _queries(5)
    with pytest.raises(ValueError, match="needs the queries"):
        hardwood.GBDTRanker(n_estimators=2).fit(X, y)


def test_label_gain_sets_the_highest_grade():
    """Grades past 30 are allowed when label_gain covers them (as LightGBM allows); the
    error names label_gain's range otherwise."""
    rng = np.random.default_rng(0)
    X = rng.random((300, 4))
    y = np.floor(X[:, 0] * 100.999)  # grades 0..100
    gain = np.arange(101.0)
    ours = hardwood.GBDTRanker(n_estimators=5, label_gain=list(gain), n_jobs=1)
    ours.fit(X, y, group=[150, 150])
    p = ours.predict(X)
    assert np.corrcoef(p, y)[0, 1] > 0.8
    with pytest.raises(ValueError, match=r"grades 0\.\.30, found \d+\.0$"):
        hardwood.GBDTRanker(n_estimators=2, n_jobs=1).fit(X, y, group=[150, 150])
    with pytest.raises(ValueError, match=r"grades 0\.\.50 \(label_gain's grades\), found"):
        hardwood.GBDTRanker(n_estimators=2, label_gain=list(gain[:51]), n_jobs=1).fit(
            X, y, group=[150, 150])
    for bad in (np.nan, np.inf, -1.0):  # a NaN gain trained to a "diverged" error
        g = gain.copy()
        g[7] = bad
        with pytest.raises(ValueError, match=r"finite gains >= 0; grade 7's is"):
            hardwood.GBDTRanker(n_estimators=2, label_gain=list(g), n_jobs=1).fit(
                X, y, group=[150, 150])
