"""Monotone and interaction constraints (``monotone_constraints``, ``interaction_constraints``):
XGBoost's trees on the same parameters, the promised shape of the model, and clear errors."""
import json

import numpy as np
import pytest

import hardwood as hw

xgb = pytest.importorskip("xgboost")


def _data(seed=0, n=1500, d=5, objective="reg:squarederror"):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 16, size=(n, d)).astype(float)  # few values: both libraries bin alike
    X[rng.random(n) < 0.1, 1] = np.nan
    X[rng.random(n) < 0.03, 0] = np.nan
    s = (np.sin(np.nan_to_num(X[:, 0]) / 3) + 0.3 * np.nan_to_num(X[:, 1], nan=5)
         - 0.2 * X[:, 2] + 0.1 * X[:, 4] * X[:, 3] / 8 + rng.normal(0, 0.5, n))
    if objective == "binary:logistic":
        return X, (s > np.median(s)).astype(float)
    return X, s


def _xgb_margins(params, X, y, rounds):
    xp = dict(params, tree_method="hist")
    if "monotone_constraints" in xp:
        xp["monotone_constraints"] = "(" + ",".join(map(str, xp["monotone_constraints"])) + ")"
    if "interaction_constraints" in xp:
        xp["interaction_constraints"] = json.dumps(xp["interaction_constraints"])
    b = xgb.train(xp, xgb.DMatrix(X, y), rounds)
    return b.predict(xgb.DMatrix(X), output_margin=True)


@pytest.mark.parametrize("objective,policy,mc", [
    ("reg:squarederror", "depthwise", [1, -1, 1, 0, 0]),
    ("binary:logistic", "lossguide", [0, 0, 0, -1, 1]),
    ("reg:squarederror", "lossguide", [-1, 1, 0, 0, -1]),
])
def test_monotone_constraints_grow_xgboosts_trees(objective, policy, mc):
    """The same trees as XGBoost's ``monotone_constraints`` (its TreeEvaluator: weights held
    within bounds cut at the children's mean weight), NaN and lossguide included; among them
    splits with the missing values alone left, whose threshold is -inf."""
    X, y = _data(1, objective=objective)
    params = dict(objective=objective, max_depth=5 if policy == "depthwise" else 0,
                  grow_policy=policy, max_bin=32, learning_rate=0.3, monotone_constraints=mc,
                  min_child_weight=2.0)
    if policy == "lossguide":
        params["max_leaves"] = 24
    m = hw.train(params, hw.Dataset(X, y, max_bin=32), num_boost_round=15)
    np.testing.assert_allclose(m.predict(X, output="raw"), _xgb_margins(params, X, y, 15),
                               atol=2e-5)


def _steps(model, X, j, values):
    """Predictions of ``X`` with feature ``j`` set to each of ``values``: (len(values), rows)."""
    out = []
    for v in values:
        Z = X.copy()
        Z[:, j] = v
        out.append(model.predict(Z, output="raw").reshape(len(Z), -1))
    return np.stack(out)


@pytest.mark.parametrize("params", [
    dict(objective="reg:squarederror", reg_alpha=2.0, max_depth=6),
    dict(objective="multi:softprob", num_class=3, grow_policy="lossguide", max_leaves=16),
    dict(objective="regression", num_leaves=15, lambda_l1=1.0),
])
def test_monotone_models_are_monotone(params):
    """Whatever the objective, the regularisation and the growth, the model moves with each
    constrained feature only the promised way, for every row (the others held fixed)."""
    X, y = _data(2)
    if params["objective"] == "multi:softprob":
        y = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(float)
    mc = [1, -1, 0, 1, 0]
    m = hw.train(dict(params, monotone_constraints=mc), hw.Dataset(X, y), num_boost_round=12)
    rows = X[:300]
    for j, c in enumerate(mc):
        if c:
            steps = np.diff(_steps(m, rows, j, np.arange(-1, 17, 0.5)), axis=0) * c
            assert steps.min() >= -1e-12, (j, steps.min())
    # the constraint binds: feature 1 raises y, and held decreasing it no longer can
    free = hw.train(params, hw.Dataset(X, y), num_boost_round=12)
    assert np.diff(_steps(free, rows, 1, np.arange(0, 16)), axis=0).max() > 0.01


def test_monotone_constraints_forms_and_errors():
    X, y = _data(3, n=400)
    ds = hw.Dataset(X, y, feature_names=list("abcde"))
    base = hw.train({"monotone_constraints": [1, 0, -1, 0, 0]}, ds, num_boost_round=3)
    for form in ("(1,0,-1,0,0)", "[1, 0, -1, 0, 0]", {"a": 1, "c": -1}, np.array([1, 0, -1, 0, 0]),
                 np.sign([2.0, 0.0, -3.0, 0.0, 0.0])):
        m = hw.train({"monotone_constraints": form}, ds, num_boost_round=3)
        np.testing.assert_array_equal(m.predict(X), base.predict(X))
    # LightGBM's alias and its default method
    m = hw.train({"monotone_constraint": [1, 0, -1, 0, 0], "monotone_constraints_method": "basic"},
                 ds, num_boost_round=3)
    np.testing.assert_array_equal(m.predict(X), base.predict(X))
    bad = [({"monotone_constraints": [1, 0, -1]}, "3 entries, but the data has 5 features"),
           ({"monotone_constraints": [2, 0, 0, 0, 0]}, "-1 \\(decreasing\\), 0"),
           ({"monotone_constraints": {"z": 1}}, "features the data does not have"),
           ({"monotone_constraints": "(1,x)"}, "must list -1, 0 or 1"),
           ({"monotone_constraints": [1, 0, 0, 0, 0], "mc_method": "advanced"}, "'basic'"),
           ({"monotone_constraints": [1, 0, 0, 0, 0], "monotone_penalty": 2.0}, "no penalty"),
           ({"monotone_constraints": [1, 0, 0, 0, 0], "objective": "reg:absoluteerror"},
            "refit to the residuals' median")]
    for params, message in bad:
        with pytest.raises(ValueError, match=message):
            hw.train(params, ds, num_boost_round=1)


def test_monotone_constraint_on_a_category_is_refused():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.random(200), "c": pd.Categorical(rng.choice(list("pqr"), 200))})
    with pytest.raises(ValueError, match="categorical features \\['c'\\]"):
        hw.train({"monotone_constraints": [0, 1]}, hw.Dataset(df, rng.random(200)), 1)


def test_constraints_survive_save_and_retraining(tmp_path):
    X, y = _data(4, n=600)
    params = {"monotone_constraints": [1, 0, -1, 0, 0], "interaction_constraints": [[0, 1], [2, 3]],
              "max_depth": 4}
    m = hw.train(params, hw.Dataset(X, y), num_boost_round=5)
    m.save(tmp_path / "m.json")
    loaded = hw.load(tmp_path / "m.json")
    assert loaded.params["monotone_constraints"] == [1, 0, -1, 0, 0]
    assert loaded.params["interaction_constraints"] == [[0, 1], [2, 3]]
    again = hw.train(loaded.params, hw.Dataset(X, y), num_boost_round=5)
    np.testing.assert_array_equal(again.predict(X), m.predict(X))


def _paths(tree):
    """The sets of features split on along each root-to-leaf path."""
    out = []

    def walk(i, used):
        if tree.feature[i] < 0:
            out.append(used)
            return
        used = used | {int(tree.feature[i])}
        walk(tree.left[i], used)
        walk(tree.right[i], used)
    walk(0, frozenset())
    return out


@pytest.mark.parametrize("ic,policy", [([[0, 1], [2, 3, 4]], "depthwise"),
                                       ([[0, 2], [1, 2, 3]], "lossguide"),
                                       ([[1, 4]], "depthwise")])
def test_interaction_constraints_grow_xgboosts_trees(ic, policy):
    """XGBoost's rule: a node may split on the features above it and on every set that holds
    them all; the root on any feature (a feature of no set then stays alone on its path)."""
    X, y = _data(5)
    params = dict(max_depth=5 if policy == "depthwise" else 0, grow_policy=policy, max_bin=32,
                  interaction_constraints=ic)
    if policy == "lossguide":
        params["max_leaves"] = 24
    m = hw.train(params, hw.Dataset(X, y, max_bin=32), num_boost_round=10)
    np.testing.assert_allclose(m.predict(X, output="raw"), _xgb_margins(params, X, y, 10),
                               atol=2e-5)
    for t in m.trees:
        for used in _paths(t):
            assert len(used) <= 1 or any(used <= set(g) for g in ic), (used, ic)


def test_interaction_constraints_by_name_and_lightgbm_root_rule():
    X, y = _data(6, n=800)
    names = list("abcde")
    ds = hw.Dataset(X, y, feature_names=names)
    by_index = hw.train({"interaction_constraints": [[0, 1], [2, 3]]}, ds, num_boost_round=4)
    by_name = hw.train({"interaction_constraints": [["a", "b"], ["c", "d"]]}, ds, 4)
    as_text = hw.train({"interaction_constraints": "[[0, 1], [2, 3]]"}, ds, 4)
    as_arrays = hw.train({"interaction_constraints": [np.array([0, 1]), np.array([2, 3])]}, ds, 4)
    np.testing.assert_array_equal(as_arrays.predict(X), by_index.predict(X))
    np.testing.assert_array_equal(by_name.predict(X), by_index.predict(X))
    np.testing.assert_array_equal(as_text.predict(X), by_index.predict(X))
    # feature 4 ('e', y's strongest) is in no set: XGBoost's rule splits on it alone,
    # LightGBM's never
    strong_e = hw.Dataset(X, y + X[:, 4], feature_names=names)
    sets = {"interaction_constraints": [[0], [1]]}
    xgb_rule = hw.train(dict(sets, max_depth=3), strong_e, 10)
    lgb_rule = hw.train(dict(sets, objective="regression", num_leaves=8), strong_e, 10)
    used = lambda m: {int(f) for t in m.trees for f in t.feature if f >= 0}  # noqa: E731
    assert 4 in used(xgb_rule) and used(lgb_rule) <= {0, 1}
    for params, message in [({"interaction_constraints": [[0, 9]]}, "has 5 features"),
                            ({"interaction_constraints": [["a", "z"]]}, "feature 'z'"),
                            ({"interaction_constraints": [0, 1]}, "list of feature lists"),
                            ({"interaction_constraints": "[[0, 1"}, "list of feature lists")]:
        with pytest.raises(ValueError, match=message):
            hw.train(params, ds, 1)


def test_constrained_trees_equal_on_the_reference_backend():
    """Constrained trees grow on the learner, whichever backend runs its row work."""
    X, y = _data(7, n=700)
    params = {"monotone_constraints": [1, 0, -1, 0, 0], "interaction_constraints": [[0, 1, 2]],
              "max_depth": 4}
    a = hw.train(params, hw.Dataset(X, y), num_boost_round=4)
    b = hw.train(dict(params, backend="reference"), hw.Dataset(X, y), num_boost_round=4)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=0, atol=1e-12)


def test_estimators_take_the_constraints():
    pd = pytest.importorskip("pandas")
    from sklearn.base import clone

    X, y = _data(8, n=800)
    df = pd.DataFrame(X, columns=list("abcde"))
    est = hw.GBDTRegressor(n_estimators=5, max_depth=4, monotone_constraints={"a": 1, "c": -1},
                           interaction_constraints=[["a", "b"], ["c", "d", "e"]])
    est.fit(df, y)
    m = hw.train({"max_depth": 4, "monotone_constraints": [1, 0, -1, 0, 0],
                  "interaction_constraints": [[0, 1], [2, 3, 4]]}, hw.Dataset(X, y), 5)
    np.testing.assert_allclose(est.predict(df), m.predict(X), rtol=1e-12)
    assert clone(est).get_params()["monotone_constraints"] == {"a": 1, "c": -1}
    clf = hw.GBDTClassifier(n_estimators=3, monotone_constraints=[1, 0, 0, 0, 0])
    assert clf.fit(X, y > np.median(y)).model_.params["monotone_constraints"] == [1, 0, 0, 0, 0]


@pytest.mark.parametrize("objective,extra", [("regression", {}), ("binary", {}),
                                             ("regression", {"lambda_l1": 3.0}),
                                             ("regression", {"min_gain_to_split": 2.0})])
def test_lightgbm_names_train_lightgbms_basic_monotone_method(objective, extra):
    """Under LightGBM's names the monotone gains are its basic method's: the parent's score
    unheld and ``T(G) w`` for L1 (XGBoost's held the parent's weight and took
    ``G w + alpha |w|``): 0.31-0.91 off LightGBM after 15 rounds, now 1e-6."""
    lgb = pytest.importorskip("lightgbm")
    X, y = _data(9, objective="binary:logistic" if objective == "binary" else "x")
    mc = [1, 1, -1, 0, 0]
    params = dict(objective=objective, num_leaves=15, learning_rate=0.3, max_bin=32,
                  lambda_l2=1.0, min_sum_hessian_in_leaf=1.0, monotone_constraints=mc,
                  min_data_in_leaf=0, **extra)
    theirs = lgb.train(dict(params, min_data_in_bin=1, verbose=-1,
                            num_threads=1, monotone_constraints_method="basic"),
                       lgb.Dataset(X, y, params={"max_bin": 32, "min_data_in_bin": 1}),
                       num_boost_round=10)
    ours = hw.train(params, hw.Dataset(X, y, max_bin=32), num_boost_round=10)
    np.testing.assert_allclose(ours.predict(X, output="raw"), theirs.predict(X, raw_score=True),
                               atol=1e-6)


def test_empty_constraints_constrain_nothing_and_empty_slots_are_errors():
    """``interaction_constraints=[]`` (or ``[[]]``) under LightGBM's names allowed no feature
    at the root: a constant model, where LightGBM reads it as no constraint. A monotone string
    with an empty slot, "(1,,-1)", dropped it and moved the later constraints one feature
    left; XGBoost refuses it."""
    X, y = _data(10, n=600)
    ds = hw.Dataset(X, y)
    free = hw.train({"objective": "regression", "num_leaves": 8}, ds, 3)
    for empty in ([], [[]], "[]"):
        m = hw.train({"objective": "regression", "num_leaves": 8,
                      "interaction_constraints": empty}, ds, 3)
        np.testing.assert_array_equal(m.predict(X), free.predict(X))
    for empty in ("()", []):
        m = hw.train({"objective": "regression", "num_leaves": 8, "monotone_constraints": empty},
                     ds, 3)
        np.testing.assert_array_equal(m.predict(X), free.predict(X))
    with pytest.raises(ValueError, match="must list -1, 0 or 1"):
        hw.train({"monotone_constraints": "(1,,-1,0,0)"}, ds, 1)


def test_num_leaves_brings_lightgbms_interaction_rule_without_an_objective():
    """LightGBM's growth (``num_leaves``) with the default objective took XGBoost's rule and
    split the root on features of no set (5.15 off LightGBM)."""
    X, y = _data(11, n=800)
    m = hw.train({"num_leaves": 8, "interaction_constraints": [[0, 1]]}, hw.Dataset(X, y), 5)
    assert {int(f) for t in m.trees for f in t.feature if f >= 0} <= {0, 1}


def test_continued_training_keeps_the_init_models_constraints():
    """Continuing a monotone model with params that name no constraints grew unconstrained
    trees: the model broke its promise without a word. The init model's constraints now carry
    over, as in XGBoost's continuation; naming them (``[]`` included) sets the new trees'."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2000, 3))
    y = np.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2] + rng.normal(0, 0.3, 2000)
    ds = hw.Dataset(X, y)
    first = hw.train({"max_depth": 4, "monotone_constraints": [1, 0, 0],
                      "interaction_constraints": [[0], [1, 2]]}, ds, 3)
    carried = hw.train({"max_depth": 4}, ds, 12, init_model=first)
    named = hw.train({"max_depth": 4, "monotone_constraints": [1, 0, 0],
                      "interaction_constraints": [[0], [1, 2]]}, ds, 12, init_model=first)
    np.testing.assert_array_equal(carried.predict(X), named.predict(X))
    grid = np.repeat(X[:200], 50, axis=0)
    grid[:, 0] = np.tile(np.linspace(-3, 3, 50), 200)
    assert (np.diff(carried.predict(grid).reshape(200, 50), axis=1) >= -1e-12).all()
    for t in carried.trees:  # feature 0 never shares a path with 1 or 2
        assert not (0 in set(t.feature) and ({1, 2} & set(t.feature)))
    assert carried.params["monotone_constraints"] == [1, 0, 0]
    unconstrained = hw.train({"max_depth": 4, "monotone_constraints": [],
                              "interaction_constraints": []}, ds, 12, init_model=first)
    assert (np.diff(unconstrained.predict(grid).reshape(200, 50), axis=1) < -1e-6).any()
