"""RandomForestClassifier / RandomForestRegressor: scikit-learn checks, semantics, accuracy."""
from __future__ import annotations

import os
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits, make_classification, make_friedman1
from sklearn.model_selection import train_test_split
from sklearn.utils.estimator_checks import parametrize_with_checks

import hardwood as hw
from hardwood.forest import RandomForestClassifier, RandomForestRegressor

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")

# scikit-learn declares the same two checks as expected failures for its own forests: with
# bootstrap=True a weight of k draws a row with probability k/sum(w) among n draws, which is
# not the same random sample as k copies among n + k - 1 draws. The equivalence does hold
# without bootstrap; test_weights_equal_repeated_rows_without_bootstrap checks it.
_XFAIL = {
    "check_sample_weight_equivalence_on_dense_data":
        "bootstrap draws are not equivalent to repeated rows (as in scikit-learn)",
    "check_sample_weight_equivalence_on_sparse_data":
        "bootstrap draws are not equivalent to repeated rows (as in scikit-learn)",
}


@parametrize_with_checks([RandomForestClassifier(n_estimators=5),
                          RandomForestRegressor(n_estimators=5)],
                         expected_failed_checks=lambda est: _XFAIL)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def clf_data():
    X, y = make_classification(1500, 12, n_informative=6, n_classes=3, random_state=0)
    return train_test_split(X, y, random_state=0)


def test_model_format_roundtrip_predicts_the_same(clf_data, tmp_path):
    Xtr, Xte, ytr, _ = clf_data
    Xtr = Xtr.copy()
    Xtr[::9, 3] = np.nan
    m = RandomForestClassifier(n_estimators=7, random_state=1).fit(Xtr, ytr)
    proba = m.predict_proba(Xte)
    model = m.model_
    assert model.num_trees == 7 * 3 and model.n_outputs == 3
    np.testing.assert_allclose(model.predict(Xte), proba, atol=1e-12)
    path = tmp_path / "forest.json"
    model.save(path)
    loaded = hw.load(str(path))
    np.testing.assert_allclose(loaded.predict(Xte), proba, atol=1e-12)
    Xn = Xte.copy()
    Xn[::4, 3] = np.nan
    np.testing.assert_allclose(model.predict(Xn), m.predict_proba(Xn), atol=1e-12)
    # leaves: the Model's leaf output equals apply() for each estimator's first class tree
    np.testing.assert_array_equal(model.predict(Xte, output="leaf")[:, ::3], m.apply(Xte))
    r = RandomForestRegressor(n_estimators=4, random_state=0).fit(Xtr, ytr.astype(float))
    np.testing.assert_allclose(r.model_.predict(Xte), r.predict(Xte), rtol=1e-12)
    np.testing.assert_allclose(hw.load(r.model_.to_json()).predict(Xte), r.predict(Xte),
                               rtol=1e-12)


def _mean_of_trees(forest, X):
    """The reference: each row walks each estimator's tree (numpy, NaN by default_left) to
    its leaf; returns the leaves (pre-order node ids) and the mean of their leaf values."""
    n = X.shape[0]
    leaves = np.empty((n, len(forest.trees)), np.int64)
    total = np.zeros((n, forest.n_outputs))
    for k, t in enumerate(forest.trees):
        node = np.zeros(n, np.int64)
        while True:
            idx = np.flatnonzero(t.feature[node] >= 0)
            if idx.size == 0:
                break
            at = node[idx]
            v = X[idx, t.feature[at]]
            go_left = np.where(np.isnan(v), t.default_left[at], v <= t.threshold[at])
            node[idx] = np.where(go_left, t.left[at], t.right[at])
        leaves[:, k] = node
        total += t.value[node]
    return leaves, total / len(forest.trees)


def _hostile_frame(rng, n):
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                       "c": pd.Categorical(rng.choice(["red", "green", "blue", "grey"], n)),
                       "d": rng.normal(size=n)})
    df.loc[::7, "a"] = np.nan
    df.loc[::11, "c"] = np.nan
    return df


def test_estimators_predict_the_mean_of_their_trees():
    """predict/predict_proba/apply go through model_'s compiled runtime: the mean of the
    estimators' leaf values (to 1e-12: model_'s trees hold value / n_estimators, summed) and
    their pre-order leaf ids, with NaN, +-inf, unseen and missing categories, float32 and
    read-only input."""
    from hardwood.data.convert import to_float_matrix

    rng = np.random.default_rng(21)
    df = _hostile_frame(rng, 800)
    code = df.c.cat.codes.to_numpy()
    yc = np.where(code == 0, 2, (df.b > 0.3).to_numpy().astype(int))
    yr = np.nan_to_num(df.a.to_numpy()) + 2 * (code == 1) + rng.normal(scale=0.1, size=800)
    test = _hostile_frame(rng, 500)
    test.loc[::5, "b"] = np.inf
    test.loc[3::5, "b"] = -np.inf
    test.loc[::9, "d"] = np.nan
    test.loc[::13, "a"] = -np.inf
    test["c"] = test.c.cat.add_categories(["violet"])
    test.loc[::17, "c"] = "violet"  # a category not seen in training: default direction
    num = df[["a", "b", "d"]].to_numpy()
    num_test = test[["a", "b", "d"]].to_numpy()
    ro = num_test.copy()
    ro.setflags(write=False)
    cases = [
        (RandomForestClassifier(n_estimators=12, random_state=0), df, yc, [test]),
        (RandomForestRegressor(n_estimators=9, random_state=0, max_features=0.5), df, yr,
         [test]),
        (RandomForestClassifier(n_estimators=10, random_state=1, max_depth=4), num, yc,
         [num_test, num_test.astype(np.float32), ro, num_test[:1]]),
        (RandomForestRegressor(n_estimators=7, random_state=1), num, yr,
         [num_test, num_test.astype(np.float32), ro, num_test[:1]]),
    ]
    for est, X, y, tests in cases:
        est.fit(X, y)
        for Xt in tests:
            mat = to_float_matrix(Xt, info=est.forest_.info, allow_inf=True)[0]
            leaves, mean = _mean_of_trees(est.forest_, np.asarray(mat, np.float64))
            got = est.apply(Xt)
            assert got.dtype == np.int64
            np.testing.assert_array_equal(got, leaves)
            if isinstance(est, RandomForestClassifier):
                proba = est.predict_proba(Xt)
                assert proba.shape == mean.shape
                np.testing.assert_allclose(proba, mean, rtol=0, atol=1e-12)
                pred = est.predict(Xt)
                np.testing.assert_array_equal(pred, est.classes_[np.argmax(proba, axis=1)])
                top = np.sort(mean, axis=1)
                clear = top[:, -1] - top[:, -2] > 1e-9  # no tie within rounding
                np.testing.assert_array_equal(pred[clear],
                                              est.classes_[np.argmax(mean, axis=1)][clear])
            else:
                pred = est.predict(Xt)
                assert pred.shape == (mat.shape[0],)
                np.testing.assert_allclose(pred, mean[:, 0], rtol=0, atol=1e-12)


def test_predictions_follow_the_forest_after_warm_start(clf_data):
    """The compiled runtime is kept on model_, which is rebuilt when the forest changes."""
    Xtr, Xte, ytr, _ = clf_data
    m = RandomForestClassifier(n_estimators=3, random_state=2, warm_start=True).fit(Xtr, ytr)
    first = m.predict_proba(Xte)
    model = m.model_
    assert m.model_ is model  # cached
    m.set_params(n_estimators=8).fit(Xtr, ytr)
    assert m.model_ is not model and m.model_.num_trees == 8 * 3
    _, mean = _mean_of_trees(m.forest_, Xte)
    np.testing.assert_allclose(m.predict_proba(Xte), mean, rtol=0, atol=1e-12)
    assert m.apply(Xte).shape == (Xte.shape[0], 8)
    assert not np.allclose(m.predict_proba(Xte), first)
    e = pickle.loads(pickle.dumps(m))  # the compiled runtime is not pickled; rebuilt on use
    np.testing.assert_array_equal(e.predict_proba(Xte), m.predict_proba(Xte))


def test_same_seed_same_forest_at_any_n_jobs_and_warm_start(clf_data):
    Xtr, Xte, ytr, _ = clf_data
    a = RandomForestClassifier(n_estimators=10, random_state=3, n_jobs=1).fit(Xtr, ytr)
    b = RandomForestClassifier(n_estimators=10, random_state=3, n_jobs=2).fit(Xtr, ytr)
    np.testing.assert_array_equal(a.predict_proba(Xte), b.predict_proba(Xte))
    np.testing.assert_array_equal(a.apply(Xte), b.apply(Xte))
    c = RandomForestClassifier(n_estimators=4, random_state=3, warm_start=True).fit(Xtr, ytr)
    c.set_params(n_estimators=10).fit(Xtr, ytr)
    np.testing.assert_allclose(c.predict_proba(Xte), a.predict_proba(Xte), atol=1e-15)
    with pytest.warns(UserWarning, match="without increasing"):
        c.fit(Xtr, ytr)
    with pytest.raises(ValueError, match="n_estimators"):
        c.set_params(n_estimators=3).fit(Xtr, ytr)
    d = RandomForestClassifier(n_estimators=10, random_state=4).fit(Xtr, ytr)
    assert not np.array_equal(d.predict_proba(Xte), a.predict_proba(Xte))
    e = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(e.predict_proba(Xte), a.predict_proba(Xte))


def test_trees_in_parallel_equal_threads_in_one_tree(clf_data):
    """Whole trees on concurrent threads, or every thread inside one tree: the same forest
    (out-of-bag results included, which are added in tree order)."""
    Xtr, Xte, ytr, _ = clf_data
    fits = []
    for tp in (False, True):
        m = RandomForestClassifier(n_estimators=24, random_state=5, n_jobs=2, oob_score=True)
        m._tree_parallel = tp
        fits.append(m.fit(Xtr, ytr))
    a, b = fits
    np.testing.assert_array_equal(a.predict_proba(Xte), b.predict_proba(Xte))
    np.testing.assert_array_equal(a.oob_decision_function_, b.oob_decision_function_)
    assert a.oob_score_ == b.oob_score_


def test_n_jobs_bounds_binning(clf_data, monkeypatch):
    """n_jobs limits the whole fit: the binning of the training matrix runs with that many
    Numba threads (it sizes its thread pool from them), not with every core."""
    import numba

    import hardwood.forest as F

    seen = []

    class Spy(F.Dataset):
        def __init__(self, *a, **k):
            seen.append(numba.get_num_threads())
            super().__init__(*a, **k)

    monkeypatch.setattr(F, "Dataset", Spy)
    Xtr, _, ytr, _ = clf_data
    RandomForestClassifier(n_estimators=2, n_jobs=1, random_state=0).fit(Xtr, ytr)
    assert seen == [1]


def test_oob_matches_out_of_bag_trees(clf_data):
    Xtr, Xte, ytr, yte = clf_data
    m = RandomForestClassifier(n_estimators=25, random_state=0, oob_score=True).fit(Xtr, ytr)
    # recompute from the raw-threshold trees and the bootstrap counts
    from hardwood.train.forest import SamplingPlan
    plan = SamplingPlan(len(ytr), True, len(ytr), None)
    leaves = m.apply(Xtr)
    s = np.zeros((len(ytr), 3))
    c = np.zeros(len(ytr))
    for t, tree in enumerate(m.estimators_):
        _, _, counts = plan.tree_weights(m._seed, t)
        oob = counts == 0
        s[oob] += tree.value[leaves[oob, t]]
        c[oob] += 1
    np.testing.assert_allclose(m.oob_decision_function_, s / c[:, None], atol=1e-12)
    assert m.oob_score_ == pytest.approx(np.mean(np.argmax(s, 1) == ytr))
    assert abs(m.oob_score_ - m.score(Xte, yte)) < 0.05
    r = RandomForestRegressor(n_estimators=25, random_state=0, oob_score=True).fit(
        Xtr, ytr.astype(float))
    assert r.oob_prediction_.shape == (len(ytr),) and 0.3 < r.oob_score_ < 1
    with pytest.raises(ValueError, match="bootstrap"):
        RandomForestClassifier(bootstrap=False, oob_score=True).fit(Xtr, ytr)


def test_weights_equal_repeated_rows_without_bootstrap(clf_data):
    Xtr, Xte, ytr, _ = clf_data
    w = np.random.default_rng(0).integers(0, 3, len(ytr))
    kw = dict(n_estimators=5, bootstrap=False, random_state=0, max_features=4)
    a = RandomForestClassifier(**kw).fit(Xtr, ytr, sample_weight=w)
    b = RandomForestClassifier(**kw).fit(np.repeat(Xtr, w, axis=0), np.repeat(ytr, w))
    np.testing.assert_allclose(a.predict_proba(Xte), b.predict_proba(Xte), atol=1e-12)


def test_class_weight(clf_data):
    Xtr, Xte, ytr, _ = clf_data
    keep = (ytr != 2) | (np.arange(len(ytr)) % 8 == 0)  # class 2 is rare
    X, y = Xtr[keep], ytr[keep]
    base = RandomForestClassifier(n_estimators=20, random_state=0, bootstrap=False).fit(X, y)
    ones = RandomForestClassifier(n_estimators=20, random_state=0, bootstrap=False,
                                  class_weight={0: 1, 1: 1, 2: 1}).fit(X, y)
    np.testing.assert_array_equal(base.predict_proba(Xte), ones.predict_proba(Xte))
    bal = RandomForestClassifier(n_estimators=20, random_state=0, bootstrap=False,
                                 class_weight="balanced", max_depth=4).fit(X, y)
    unb = RandomForestClassifier(n_estimators=20, random_state=0, bootstrap=False,
                                 max_depth=4).fit(X, y)
    assert (bal.predict(Xte) == 2).sum() > (unb.predict(Xte) == 2).sum()
    sub = RandomForestClassifier(n_estimators=20, random_state=0, max_depth=4,
                                 class_weight="balanced_subsample").fit(X, y)
    assert (sub.predict(Xte) == 2).sum() > (unb.predict(Xte) == 2).sum()
    with pytest.raises(ValueError, match="class_weight"):
        RandomForestClassifier(class_weight={7: 2.0}).fit(X, y)


def test_parameters_reach_the_trees(clf_data):
    Xtr, _, ytr, _ = clf_data
    m = RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0).fit(Xtr, ytr)
    assert max(t.n_nodes for t in m.estimators_) <= 15
    m = RandomForestClassifier(n_estimators=3, max_leaf_nodes=9, random_state=0).fit(Xtr, ytr)
    assert all((t.feature < 0).sum() <= 9 for t in m.estimators_)
    m = RandomForestClassifier(n_estimators=3, min_samples_leaf=20, random_state=0).fit(Xtr, ytr)
    assert all(t.count[t.feature < 0].min() >= 20 for t in m.estimators_)
    m = RandomForestClassifier(n_estimators=3, max_samples=100, random_state=0).fit(Xtr, ytr)
    assert all(t.weight[0] == 100 for t in m.estimators_)
    m = RandomForestClassifier(n_estimators=3, max_features=1, random_state=0,
                               criterion="log_loss", max_bin=16).fit(Xtr, ytr)
    assert m.score(Xtr, ytr) > 0.8
    for bad in (dict(max_features="half"), dict(criterion="mse"), dict(max_bin=1),
                dict(n_estimators=0), dict(min_samples_leaf=0), dict(max_samples=1.5)):
        with pytest.raises(ValueError):
            RandomForestClassifier(**bad).fit(Xtr, ytr)


def test_feature_importances_find_informative_features():
    X, y = make_classification(2000, 10, n_informative=3, n_redundant=0, shuffle=False,
                               random_state=0)
    m = RandomForestClassifier(n_estimators=30, random_state=0).fit(X, y)
    imp = m.feature_importances_
    assert imp.sum() == pytest.approx(1.0)
    assert set(np.argsort(imp)[-3:]) == {0, 1, 2}


def test_cuda_device_without_gpu_raises_clearly(clf_data):
    from numba import cuda
    if cuda.is_available():
        pytest.skip("a GPU (or the CUDA simulator) is available here")
    Xtr, _, ytr, _ = clf_data
    with pytest.raises(RuntimeError, match="device='cuda'"):
        RandomForestClassifier(n_estimators=2, device="cuda").fit(Xtr, ytr)
    with pytest.raises(ValueError, match="device"):
        RandomForestClassifier(n_estimators=2, device="tpu").fit(Xtr, ytr)


# -- accuracy against scikit-learn (same parameters, mean of 3 seeds) ----------------------------
def _mean_scores(make_ours, make_theirs, Xtr, ytr, Xte, yte, seeds=(0, 1, 2)):
    ours = np.mean([make_ours(s).fit(Xtr, ytr).score(Xte, yte) for s in seeds])
    theirs = np.mean([make_theirs(s).fit(Xtr, ytr).score(Xte, yte) for s in seeds])
    return ours, theirs


def test_accuracy_digits_like_sklearn():
    from sklearn.ensemble import RandomForestClassifier as SkRF
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=0)
    ours, theirs = _mean_scores(lambda s: RandomForestClassifier(100, random_state=s),
                                lambda s: SkRF(100, random_state=s, n_jobs=2),
                                Xtr, ytr, Xte, yte)
    assert ours >= theirs - 0.005, (ours, theirs)


def test_accuracy_covertype_shaped_like_sklearn():
    from sklearn.ensemble import RandomForestClassifier as SkRF
    X, y = make_classification(250_000, 54, n_informative=24, n_redundant=10, n_classes=7,
                               n_clusters_per_class=3, flip_y=0.02, random_state=0)
    X = X.astype(np.float32)
    Xtr, ytr, Xte, yte = X[:200_000], y[:200_000], X[200_000:], y[200_000:]
    kw = dict(n_estimators=8, max_features="sqrt", n_jobs=2)
    ours, theirs = _mean_scores(lambda s: RandomForestClassifier(random_state=s, **kw),
                                lambda s: SkRF(random_state=s, **kw), Xtr, ytr, Xte, yte)
    assert ours >= theirs - 0.005, (ours, theirs)


@pytest.mark.skipif(not os.path.exists(os.path.join(SHARED, "multiclass.train")),
                    reason="../shared/data is absent")
def test_accuracy_shared_multiclass_like_sklearn():
    from sklearn.ensemble import RandomForestClassifier as SkRF
    tr = np.loadtxt(os.path.join(SHARED, "multiclass.train"), delimiter="\t")
    te = np.loadtxt(os.path.join(SHARED, "multiclass.test"), delimiter="\t")
    ours, theirs = _mean_scores(lambda s: RandomForestClassifier(200, random_state=s),
                                lambda s: SkRF(200, random_state=s, n_jobs=2),
                                tr[:, 1:], tr[:, 0], te[:, 1:], te[:, 0])
    assert ours >= theirs - 0.005, (ours, theirs)


def test_r2_like_sklearn():
    from sklearn.ensemble import RandomForestRegressor as SkRF
    X, y = make_friedman1(6000, 10, noise=1.0, random_state=0)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=0)
    ours, theirs = _mean_scores(lambda s: RandomForestRegressor(50, random_state=s),
                                lambda s: SkRF(50, random_state=s, n_jobs=2),
                                Xtr, ytr, Xte, yte)
    assert ours >= theirs - 0.005, (ours, theirs)
