"""Behaviour of hardwood.train: objectives, policies, sampling, callbacks, early stopping."""
import numpy as np
import pytest

import hardwood as hw


def _data(n=3000, d=8, seed=0, task="binary"):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(np.float32)
    z = X[:, 0] + 0.5 * X[:, 1] ** 2 - X[:, 2] * X[:, 3] + 0.3 * rng.standard_normal(n)
    if task == "binary":
        y = (z > np.median(z)).astype(float)
    elif task == "multi":
        y = np.digitize(z, np.quantile(z, [0.33, 0.66])).astype(float)
    else:
        y = z * 10
    return X, y


@pytest.mark.parametrize("objective,metric", [
    ("reg:squarederror", "rmse"), ("reg:absoluteerror", "mae"),
    ("reg:pseudohubererror", "mae"), ("binary:logistic", "logloss"), ("multi:softprob", "mlogloss")])
def test_objectives_reduce_their_metric(objective, metric):
    task = {"binary:logistic": "binary", "multi:softprob": "multi"}.get(objective, "reg")
    X, y = _data(task=task)
    ds = hw.Dataset(X, y)
    params = {"objective": objective, "max_depth": 4}
    if objective == "reg:pseudohubererror":
        params["huber_slope"] = 5.0
    m = hw.train(params, ds, 30, valid_sets=[ds], valid_names=["train"])
    curve = m.evals_result["train"][metric]
    assert len(curve) == 30
    assert curve[-1] < curve[0] * 0.8
    out = m.predict(X)
    if objective == "multi:softprob":
        assert out.shape == (len(X), 3)
        np.testing.assert_allclose(out.sum(axis=1), 1.0)
        assert m.num_trees == 90  # one tree per class per round
    else:
        assert out.shape == (len(X),)


def test_absoluteerror_leaves_are_medians():
    X, y = _data(task="reg")
    m = hw.train({"objective": "reg:absoluteerror", "max_depth": 1, "learning_rate": 1.0},
                 hw.Dataset(X, y), 1)
    leaf = m.predict(X, output="leaf")[:, 0]
    base = np.median(y)
    for l in np.unique(leaf):
        sel = leaf == l
        expected = np.median(y[sel] - base)
        assert m.trees[0].value[l] == pytest.approx(expected, abs=np.ptp(y) * 1e-3)


def test_same_seed_gives_identical_model_and_different_seed_differs():
    X, y = _data()
    ds = hw.Dataset(X, y)
    p = {"objective": "binary:logistic", "subsample": 0.7, "colsample_bytree": 0.6,
         "colsample_bynode": 0.7, "random_state": 7}
    a = hw.train(p, ds, 10).to_json()
    b = hw.train(p, ds, 10).to_json()
    c = hw.train(dict(p, random_state=8), ds, 10).to_json()
    assert a == b
    assert a != c


def test_thread_count_does_not_change_the_model():
    X, y = _data(n=40_000)
    ds = hw.Dataset(X, y)
    a = hw.train({"objective": "binary:logistic", "n_jobs": 1}, ds, 5)
    b = hw.train({"objective": "binary:logistic", "n_jobs": 2}, ds, 5)
    assert [t.to_dict() for t in a.trees] == [t.to_dict() for t in b.trees]


def test_depthwise_respects_max_depth_and_lossguide_max_leaves():
    X, y = _data(n=5000)
    ds = hw.Dataset(X, y)
    m = hw.train({"objective": "binary:logistic", "max_depth": 3}, ds, 5)
    assert all(t.depth() <= 3 for t in m.trees)
    m = hw.train({"objective": "binary:logistic", "grow_policy": "lossguide", "max_leaves": 10,
                  "min_child_weight": 0}, ds, 5)
    assert all(t.n_leaves <= 10 for t in m.trees)
    assert max(t.n_leaves for t in m.trees) == 10


def test_colsample_bytree_uses_only_sampled_features_per_tree():
    X, y = _data(d=10)
    m = hw.train({"objective": "binary:logistic", "colsample_bytree": 0.2}, hw.Dataset(X, y), 10)
    for t in m.trees:
        assert len(set(t.feature[t.feature >= 0].tolist())) <= 2


def test_gamma_and_min_child_weight_prune():
    X, y = _data()
    ds = hw.Dataset(X, y)
    big = hw.train({"objective": "binary:logistic"}, ds, 3)
    gamma = hw.train({"objective": "binary:logistic", "gamma": 50.0}, ds, 3)
    mcw = hw.train({"objective": "binary:logistic", "min_child_weight": 200.0}, ds, 3)
    assert sum(t.n_leaves for t in gamma.trees) < sum(t.n_leaves for t in big.trees)
    assert all(c >= 200.0 for t in mcw.trees for c in t.cover[t.feature < 0])


def test_missing_values_learn_a_direction():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((4000, 2)).astype(np.float32)
    y = (X[:, 0] > 0).astype(float)
    miss = rng.random(4000) < 0.3
    X[miss, 0] = np.nan
    y[miss] = 1.0  # missing means positive
    m = hw.train({"objective": "binary:logistic", "max_depth": 2}, hw.Dataset(X, y), 20)
    p = m.predict(np.array([[np.nan, 0.0], [-2.0, 0.0]], dtype=np.float32))
    assert p[0] > 0.9 and p[1] < 0.1


def test_categorical_split_groups_categories():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    n = 6000
    cat = rng.integers(0, 12, n)
    good = np.isin(cat, [1, 4, 7, 10])
    y = (good ^ (rng.random(n) < 0.05)).astype(float)
    df = pd.DataFrame({"c": pd.Categorical([f"k{v}" for v in cat]), "x": rng.standard_normal(n)})
    m = hw.train({"objective": "binary:logistic", "max_depth": 1, "max_cat_to_onehot": 4},
                 hw.Dataset(df, y), 1)
    t = m.trees[0]
    assert t.is_categorical[0] and t.feature[0] == 0
    acc = ((m.predict(df) > 0.5) == good).mean()
    assert acc > 0.99  # one split separates the four good categories


def test_early_stopping_and_best_iteration():
    X, y = _data(n=4000)
    dtr = hw.Dataset(X[:2000], y[:2000])
    dva = hw.Dataset(X[2000:], y[2000:], reference=dtr)
    m = hw.train({"objective": "binary:logistic", "learning_rate": 0.5, "max_depth": 8,
                  "min_child_weight": 0}, dtr, 500, valid_sets=[dtr, dva], valid_names=["tr", "va"],
                 early_stopping_rounds=5)
    curve = m.evals_result["va"]["logloss"]
    assert m.best_iteration == int(np.argmin(curve))
    assert len(curve) == m.best_iteration + 6
    assert m.best_score == pytest.approx(min(curve))
    full = m.predict(X[2000:], iteration_range=(0, m.num_boosted_rounds))
    best = m.predict(X[2000:])
    assert not np.allclose(full, best)
    np.testing.assert_allclose(best, m.predict(X[2000:], iteration_range=(0, m.best_iteration + 1)))


def test_callbacks_can_stop_training_and_see_the_log():
    X, y = _data()
    ds = hw.Dataset(X, y)
    seen = []

    class StopAt3(hw.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            seen.append((epoch, len(evals_log["d"]["auc"])))
            return epoch == 2

    m = hw.train({"objective": "binary:logistic", "eval_metric": ["logloss", "auc"]}, ds, 10,
                 valid_sets=[ds], valid_names=["d"], callbacks=[StopAt3()])
    assert m.num_boosted_rounds == 3
    assert seen == [(0, 1), (1, 2), (2, 3)]
    calls = []
    hw.train({"objective": "binary:logistic"}, ds, 4, callbacks=[lambda m, e, log: calls.append(e)])
    assert calls == [0, 1, 2, 3]


def test_training_profile_and_verbose(capsys):
    X, y = _data()
    m = hw.train({"objective": "binary:logistic", "verbose": True}, hw.Dataset(X, y), 3)
    prof = m.training_profile
    for key in ("histogram", "split", "partition", "update", "other", "total"):
        assert prof[key] >= 0
    assert sum(prof[k] for k in ("histogram", "split", "partition", "update", "other")) == pytest.approx(prof["total"], rel=1e-6)
    assert "① histogram" in capsys.readouterr().out


def test_weights_equal_repeated_rows():
    X, y = _data(n=500)
    w = np.random.default_rng(3).integers(1, 4, 500).astype(float)
    a = hw.train({"objective": "binary:logistic", "max_depth": 3}, hw.Dataset(X, y, weight=w), 5)
    Xr, yr = np.repeat(X, w.astype(int), axis=0), np.repeat(y, w.astype(int))
    b = hw.train({"objective": "binary:logistic", "max_depth": 3}, hw.Dataset(Xr, yr), 5)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-6)


def test_base_score_and_outputs():
    X, y = _data()
    m = hw.train({"objective": "binary:logistic", "base_score": 0.5}, hw.Dataset(X, y), 5)
    raw = m.predict(X, output="raw")
    np.testing.assert_allclose(m.predict(X), 1 / (1 + np.exp(-raw)))
    leaves = m.predict(X, output="leaf")
    assert leaves.shape == (len(X), 5)
    manual = np.zeros(len(X))
    for t, tree in enumerate(m.trees):
        manual += tree.value[leaves[:, t]]
    np.testing.assert_allclose(raw, manual)  # base margin of 0.5 is 0


def test_feature_importances():
    X, y = _data()
    m = hw.train({"objective": "binary:logistic"}, hw.Dataset(X, y), 10)
    for kind in ("gain", "weight", "cover", "total_gain", "total_cover"):
        imp = m.feature_importances(kind)
        assert imp.shape == (X.shape[1],) and np.all(imp >= 0)
    assert m.feature_importances("weight").sum() == sum((t.feature >= 0).sum() for t in m.trees)
    assert np.argmax(m.feature_importances("total_gain")) in (0, 1, 2, 3)
    with pytest.raises(ValueError, match="kind"):
        m.feature_importances("nope")


@pytest.mark.parametrize("params,match", [
    ({"learning_rate": 0}, "learning_rate"), ({"max_depht": 3}, "max_depth"),
    ({"grow_policy": "best"}, "grow_policy"), ({"subsample": 1.5}, "subsample"),
    ({"objective": "rank:foo"}, "objective"), ({"eval_metric": "nope"}, "eval_metric"),
    ({"max_bin": 64}, "max_bin"), ({"device": "tpu"}, "device must be .cpu. or .cuda."),
    ({"objective": "reg:squarederror", "eval_metric": "auc"}, "auc")])
def test_bad_params_name_the_problem(params, match):
    X, y = _data(n=200)
    with pytest.raises((ValueError, TypeError), match=match):
        hw.train(params, hw.Dataset(X, y), 2)


def test_label_errors():
    X, y = _data(n=200)
    with pytest.raises(ValueError, match="single class"):
        hw.train({"objective": "binary:logistic"}, hw.Dataset(X, np.ones(200)), 2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        hw.train({"objective": "binary:logistic"}, hw.Dataset(X, y * 3), 2)
    with pytest.raises(ValueError, match="no labels"):
        hw.train({}, hw.Dataset(X), 2)
    with pytest.raises(ValueError, match="early_stopping_rounds"):
        hw.train({}, hw.Dataset(X, y), 2, early_stopping_rounds=2)


def test_multi_softmax_predicts_the_class_index_as_xgboost_does(tmp_path):
    """objective='multi:softmax' trains multi:softprob's trees into a model that predicts the
    class index (XGBoost's meaning, and an imported multi:softmax model's): it used to predict
    the probabilities, an (n, K) array where XGBoost users expect a vector of classes."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    ds = hw.Dataset(X, y)
    p = {"objective": "multi:softmax", "num_class": 3, "max_depth": 3}
    soft = hw.train(p, ds, 6)
    prob = hw.train({**p, "objective": "multi:softprob"}, ds, 6)
    assert soft.objective == "multi:softmax"
    np.testing.assert_array_equal(soft.predict(X), np.argmax(prob.predict(X), axis=1))
    np.testing.assert_array_equal(soft.predict(X, output="raw"), prob.predict(X, output="raw"))
    more = hw.train(p, ds, 2, init_model=soft)  # continues, either way round
    assert len(more.trees) == 24 and more.objective == "multi:softmax"
    assert hw.train({**p, "objective": "multi:softprob"}, ds, 2, init_model=soft).trees
    path = str(tmp_path / "m.json")
    soft.save(path)
    np.testing.assert_array_equal(hw.load(path).predict(X), soft.predict(X))
    clf = hw.GBDTClassifier(objective="multi:softmax", n_estimators=6, max_depth=3)
    proba = clf.fit(X, y).predict_proba(X)  # the estimator keeps its probabilities
    assert proba.shape == (400, 3) and np.allclose(proba.sum(axis=1), 1.0)
