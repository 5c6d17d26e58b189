"""Hostile and unusual input, round 15 (session 25: probes 42-46). Each test's docstring says
what hardwood did before."""
import numpy as np
import pytest

import hardwood as hw


@pytest.mark.parametrize("max_bin", [16, 64])
def test_max_bin_keeps_every_category_as_xgboost(max_bin):
    """``max_bin`` bounded a categorical field's categories too: a field of 100 categories kept
    its ``max_bin - 2`` most frequent and shared one bin among the rest, without a word (test
    RMSE 0.894 at max_bin=16, XGBoost 0.0064). XGBoost's max_bin bins numeric features only;
    hardwood's now too, and its trees are XGBoost's."""
    pd = pytest.importorskip("pandas")
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(16)
    n, K = 5000, 100
    c = rng.integers(0, K, n)
    eff = rng.normal(size=K)
    y = eff[c] + rng.normal(size=n) * 0.1
    X = pd.DataFrame({"c": pd.Categorical(c, categories=range(K)),
                      "x": rng.integers(0, 8, n).astype(float)})
    params = {"max_depth": 4, "max_cat_to_onehot": 1}
    ours = hw.train(params, hw.Dataset(X, y, max_bin=max_bin), 10)
    theirs = xgb.train(dict(params, tree_method="hist", max_bin=max_bin),
                       xgb.DMatrix(X, y, enable_categorical=True), 10)
    assert ours.trees[0].n_leaves > 1
    np.testing.assert_allclose(ours.predict(X), theirs.predict(xgb.DMatrix(X, enable_categorical=True)),
                               rtol=0, atol=1e-5)
    grouped = hw.Dataset(X, y, max_bin=max_bin, group_categories=True)  # the opt-in
    assert grouped.bin_mapper.n_value_bins[0] == max_bin - 1


@pytest.mark.parametrize("by", [["a"], [0]])
def test_lightgbm_models_of_integer_columns_named_categorical_import(by):
    """LightGBM's common categorical model, a frame of integer columns with
    ``categorical_feature=``, records ``pandas_categorical:[]``; hardwood refused it as
    category lists that do not line up (since session 24). An empty list is no list."""
    pd = pytest.importorskip("pandas")
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(18)
    n = 2000
    X = pd.DataFrame({"a": rng.integers(0, 20, n), "x": rng.normal(size=n)})
    y = np.sin(X["a"].to_numpy()) + X["x"].to_numpy()
    b = lgb.train({"objective": "regression", "verbose": -1},
                  lgb.Dataset(X, y, categorical_feature=by), 10)
    assert b.pandas_categorical == []
    m = hw.import_model(b)
    np.testing.assert_allclose(m.predict(X), b.predict(X), rtol=0, atol=1e-9)
    np.testing.assert_allclose(m.predict(X.to_numpy(dtype=float)), b.predict(X), rtol=0,
                               atol=1e-9)


@pytest.mark.parametrize("objective,extra", [("l1", {}), ("binary", {"min_child_samples": 20})])
def test_estimators_keep_rows_of_weight_zero_under_lightgbms_names(objective, extra):
    """The estimators left out rows of weight 0 (as scikit-learn's checks ask). LightGBM counts
    them (its L1 leaves' weighted medians, its min_data_in_leaf): under its names the
    estimators trained another model than LightGBM's, 0.021 off for ``l1`` and 0.075 in
    probability for ``binary`` with ``min_child_samples=20``, where ``hardwood.train`` agreed."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.integers(0, 8, size=(n, 5)).astype(float)
    f = X[:, 0] - 0.5 * X[:, 1] + 0.3 * X[:, 2] * X[:, 3] / 4
    if objective == "binary":
        y = (f + rng.logistic(0, 1, n) > np.median(f)).astype(float)
    else:
        y = f + rng.normal(0, 1, n)
    w = np.round(rng.uniform(0.1, 3, n))
    w[::3] = 0.0
    shape = dict(learning_rate=0.3, n_estimators=10, reg_lambda=0.0, min_child_weight=1e-3)
    Est = hw.GBDTClassifier if objective == "binary" else hw.GBDTRegressor
    ours = Est(objective=objective, max_leaves=8, grow_policy="lossguide", max_depth=0,
               **shape, **extra).fit(X, y, sample_weight=w)
    Theirs = lgb.LGBMClassifier if objective == "binary" else lgb.LGBMRegressor
    theirs = Theirs(objective=objective, num_leaves=8, verbose=-1,
                    min_child_samples=extra.get("min_child_samples", 0),
                    **shape).fit(X, y, sample_weight=w)
    if objective == "binary":
        np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=0,
                                   atol=1e-6)
    else:
        np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-6)


@pytest.mark.parametrize("params", [{"objective": "binary", "num_leaves": 8},
                                    {"objective": "regression", "num_leaves": 8},
                                    {"objective": "binary", "max_depth": 3}])
def test_shap_values_under_lightgbms_names_are_lightgbms(params):
    """TreeSHAP weighs each path by its nodes' covers: hardwood's were hessian sums
    (XGBoost's) under LightGBM's names too, where LightGBM's are row counts. The trees were
    LightGBM's, the contributions 0.014 off LightGBM's (0.24 weighted binary, 0.39 weighted
    regression)."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.integers(0, 8, size=(n, 5)).astype(float)
    f = X[:, 0] - 0.5 * X[:, 1] + 0.3 * X[:, 2] * X[:, 3] / 4
    y = ((f + rng.logistic(0, 1, n) > np.median(f)).astype(float)
         if params["objective"] == "binary" else f + rng.normal(0, 1, n))
    w = np.where(X[:, 1] > 4, 10.0, 0.5)
    shared = dict(params, learning_rate=0.1, min_data_in_leaf=0, lambda_l2=0.0,
                  min_sum_hessian_in_leaf=1e-3)
    if "max_depth" in params:  # LightGBM's leaves of a depth-3 tree: its depthwise tree here
        shared["num_leaves"] = 8
    ours = hw.train(shared, hw.Dataset(X, y, weight=w), 10)
    theirs = lgb.train(dict(shared, verbose=-1, max_bin=255), lgb.Dataset(X, y, weight=w), 10)
    np.testing.assert_allclose(ours.predict(X, output="raw"), theirs.predict(X, raw_score=True),
                               rtol=0, atol=1e-6)  # (float32 gradients)
    np.testing.assert_allclose(ours.predict(X, output="contrib"),
                               theirs.predict(X, pred_contrib=True), rtol=0, atol=1e-6)


@pytest.mark.parametrize("objective", ["multiclass", "binary"])
def test_trees_that_cannot_split_add_nothing_under_lightgbms_growth(objective):
    """LightGBM adds nothing for a tree that cannot split (a constant tree of 0); hardwood added
    its one leaf's Newton step, XGBoost's way: once a class stopped splitting, 0.077 off
    LightGBM's multi-class probabilities. Under XGBoost's names the step stays."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.integers(0, 8, size=(n, 6)).astype(float)
    f = X[:, 0] * 0.7 - X[:, 1] * 0.4 + (X[:, 2] > 3) * 2 + X[:, 3] * X[:, 4] * 0.05
    y = f + rng.normal(0, 1.0, n)
    if objective == "binary":  # one strong split, then noise
        X = rng.integers(0, 4, size=(n, 3)).astype(float)
        y = ((X[:, 0] >= 2) ^ (rng.random(n) < 0.2)).astype(float)
        p = {"objective": "binary", "num_leaves": 4, "min_gain_to_split": 30.0}
    else:
        y = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(float)
        p = {"objective": "multiclass", "num_class": 3, "num_leaves": 15,
             "min_gain_to_split": 3.0}
    p["min_data_in_leaf"] = 0
    ours = hw.train(p, hw.Dataset(X, y), 30)
    theirs = lgb.train(dict(p, verbose=-1, min_data_in_bin=1, num_threads=1),
                       lgb.Dataset(X, y), 30)
    one = [t for t in ours.trees if t.n_leaves == 1]
    assert one and all(t.value[0] == 0.0 for t in one)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-6)
    xgb_named = hw.train({"objective": "binary:logistic", "max_depth": 1, "gamma": 1e9},
                         hw.Dataset(X, (y > 0).astype(float)), 2)
    assert all(t.n_leaves == 1 and t.value[0] != 0.0 for t in xgb_named.trees)


def test_feature_fraction_draws_from_the_features_lightgbm_keeps():
    """LightGBM drops constant (and pre-filtered) features before its column sampling;
    hardwood's ``feature_fraction`` drew from every column: with 4 useful and 6 constant
    columns at 0.2, 45% of its trees were one leaf (LightGBM's: none). XGBoost's
    ``colsample_bytree`` still draws from all, as XGBoost."""
    rng = np.random.default_rng(0)
    n = 2000
    X = np.zeros((n, 10))
    X[:, :4] = rng.integers(0, 8, size=(n, 4))
    X[:, 4:] = 3.0
    y = X[:, 0] - X[:, 1] + 0.5 * X[:, 2] * X[:, 3] + rng.normal(0, 1, n)
    ds = hw.Dataset(X, y)
    lgb_named = hw.train({"objective": "regression", "num_leaves": 15,
                          "feature_fraction": 0.2}, ds, 40)
    assert all(t.n_leaves > 1 for t in lgb_named.trees)
    bynode = hw.train({"objective": "regression", "num_leaves": 15,
                       "feature_fraction_bynode": 0.2}, ds, 20)
    assert np.mean([t.n_leaves for t in bynode.trees]) == 15
    xgb_named = hw.train({"max_depth": 3, "colsample_bytree": 0.2}, ds, 40)
    assert any(t.n_leaves == 1 for t in xgb_named.trees)


def test_custom_metric_under_multi_softmax_gets_the_predicted_classes():
    """XGBoost hands a ``custom_metric`` under ``multi:softmax`` the predicted classes (what its
    model predicts); hardwood handed it the (n, K) probabilities, and an accuracy metric
    written for XGBoost failed on the shapes."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, (2000, 3)).astype(float)
    y = np.digitize(X[:, 0] + rng.normal(0, 1, 2000), [1.5, 3.5]).astype(float)

    def accuracy(pred, d):
        assert pred.shape == y.shape
        return "acc", float(np.mean(pred == d.get_label()))

    p = {"objective": "multi:softmax", "num_class": 3, "max_depth": 3, "base_score": 0.0}
    theirs, ours = {}, {}
    d = xgb.DMatrix(X, label=y)
    xgb.train(p, d, 3, evals=[(d, "t")], evals_result=theirs, custom_metric=accuracy,
              verbose_eval=False)
    dh = hw.Dataset(X, y)
    m = hw.train(p, dh, 3, evals=[(dh, "t")], evals_result=ours, custom_metric=accuracy)
    np.testing.assert_allclose(ours["t"]["acc"], theirs["t"]["acc"], rtol=0, atol=1e-12)
    assert ours["t"]["acc"][-1] == float(np.mean(m.predict(X) == y))


def test_estimators_take_max_cat_threshold_and_name_lightgbms_categorical_parameters():
    """The estimators had no ``max_cat_threshold`` (XGBRegressor has; ``hardwood.train``
    too), and ``GBDTRegressor(max_cat_threshold=...)`` suggested ``max_cat_to_onehot``.
    LightGBM's ``min_data_per_group`` was offered ``min_data_per_leaf``, another quantity."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    n, K = 2000, 30
    c = rng.integers(0, K, n)
    X = pd.DataFrame({"c": pd.Categorical(c), "x": rng.normal(size=n)})
    y = rng.normal(size=K)[c] + X["x"].to_numpy()
    est = hw.GBDTRegressor(n_estimators=5, max_cat_threshold=2, max_cat_to_onehot=1).fit(X, y)
    assert est.get_params()["max_cat_threshold"] == 2
    ref = hw.train({"max_cat_threshold": 2, "max_cat_to_onehot": 1}, hw.Dataset(X, y), 5)
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=0, atol=1e-12)
    loose = hw.train({"max_cat_to_onehot": 1}, hw.Dataset(X, y), 5)
    assert not np.allclose(loose.predict(X), ref.predict(X))
    for name in ("min_data_per_group", "cat_smooth", "cat_l2"):
        with pytest.raises(ValueError, match="categorical splits are XGBoost's"):
            hw.train({name: 1}, hw.Dataset(X, y), 1)
    with pytest.raises(ValueError, match="RandomForest"):
        hw.train({"num_parallel_tree": 3}, hw.Dataset(X, y), 1)
    with pytest.raises(ValueError, match="it is the Dataset's"):
        hw.train({"group_categories": True}, hw.Dataset(X, y), 1)


def test_training_weights_below_float32s_range_are_refused():
    """Weights below float32's least normal number (the gradients' type) passed the
    non-negative check and trained a constant model without a word (1e-40: zero in float32)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    y = X[:, 0] + rng.normal(size=500)
    with pytest.raises(ValueError, match="below float32's smallest normal number"):
        hw.train({}, hw.Dataset(X, y, weight=np.full(500, 1e-40)), 2)
    w = np.full(500, 1e-40)
    w[::2] = 0.0
    with pytest.raises(ValueError, match="the first 1e-40 at row 1"):
        hw.train({}, hw.Dataset(X, y, weight=w), 2)
    with pytest.warns(UserWarning, match="scale them up"):  # small, normal: the warning
        hw.train({}, hw.Dataset(X, y, weight=np.full(500, 1e-30)), 2)
    train = hw.Dataset(X, y)
    valid = hw.Dataset(X, y, weight=np.full(500, 1e-40), reference=train)  # (float64 metrics)
    hw.train({}, train, 2, valid_sets=[valid])


@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_base_scores_are_xgboosts(weighted):
    """XGBoost (>= 3.1) starts multi:softprob from the centred logs of the classes' shares;
    hardwood started from 0: 0.066 off XGBClassifier's probabilities after 5 rounds, on
    otherwise identical trees."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.integers(0, 10, size=(n, 5)).astype(float)
    z = X[:, 0] - 0.6 * X[:, 1] + rng.normal(0, 2, n)
    y = np.digitize(z, np.quantile(z, [0.15, 0.5, 0.8])).astype(float)
    w = rng.uniform(0.5, 2, n) if weighted else None
    theirs = xgb.XGBClassifier(n_estimators=5, max_depth=3).fit(X, y, sample_weight=w)
    ours = hw.GBDTClassifier(n_estimators=5, max_depth=3).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=0,
                               atol=1e-6)
    share = np.bincount(y.astype(int), weights=w, minlength=4)
    logs = np.log(share / share.sum())
    np.testing.assert_allclose(ours.model_.base_score, logs - logs.mean(), rtol=0, atol=1e-5)


def test_huber_slope_with_another_objective_is_named():
    """``huber_slope`` was taken and ignored by every objective but reg:pseudohubererror
    (XGBoost warns); num_class, sigmoid and scale_pos_weight were already refused there."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + rng.normal(size=300)
    ds = hw.Dataset(X, y)
    for objective in ("reg:squarederror", "reg:absoluteerror"):
        with pytest.raises(ValueError, match="huber_slope=2.0 is the delta"):
            hw.train({"objective": objective, "huber_slope": 2.0}, ds, 1)
    a = hw.train({"objective": "reg:pseudohubererror", "huber_slope": 2.0}, ds, 3)
    b = hw.train({"objective": "reg:pseudohubererror"}, ds, 3)
    assert not np.allclose(a.predict(X), b.predict(X))
