"""The scikit-learn estimators: sklearn's estimator checks and behavioural tests."""
import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils.estimator_checks import parametrize_with_checks

import hardwood
from hardwood.sklearn import GBDTClassifier, GBDTRegressor


@parametrize_with_checks([GBDTRegressor(n_estimators=10), GBDTClassifier(n_estimators=10)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _regression(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 2 * X[:, 0] - X[:, 1] ** 2 + 0.1 * rng.normal(size=n)
    return X, y


def _blobs(n=300, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n)
    X = rng.normal(size=(n, 4)) + 3.0 * y[:, None]
    return X, y


def test_lazy_export():
    assert hardwood.GBDTRegressor is GBDTRegressor
    assert hardwood.GBDTClassifier is GBDTClassifier


def test_regressor_fits_and_scores():
    X, y = _regression()
    est = GBDTRegressor(n_estimators=30).fit(X, y)
    assert est.n_features_in_ == 5
    assert est.predict(X).shape == (300,)
    assert est.score(X, y) == pytest.approx(r2_score(y, est.predict(X)))
    assert est.score(X, y) > 0.9
    assert isinstance(est.model_, hardwood.Model)
    assert est.best_iteration_ is None
    assert est.feature_importances_.shape == (5,)
    assert est.feature_importances_.sum() == pytest.approx(1.0)
    assert np.argmax(est.feature_importances_) in (0, 1)


def test_feature_importances_zero_without_splits():
    X = np.random.default_rng(0).normal(size=(50, 3))
    y = np.ones(50)
    est = GBDTRegressor(n_estimators=3).fit(X, y)
    np.testing.assert_array_equal(est.feature_importances_, np.zeros(3))


@pytest.mark.parametrize("labels", [["cat", "dog"], ["a", "b", "c"], [-1, 7], [1.0, 2.0, 5.0]])
def test_classifier_label_roundtrip(labels):
    X, yi = _blobs(k=len(labels))
    y = np.asarray(labels, dtype=object if isinstance(labels[0], str) else None)[yi]
    est = GBDTClassifier(n_estimators=10).fit(X, y)
    assert list(est.classes_) == sorted(labels)
    assert est.n_classes_ == len(labels)
    pred = est.predict(X)
    assert set(pred) <= set(labels)
    assert accuracy_score(y, pred) > 0.9
    proba = est.predict_proba(X)
    assert proba.shape == (len(X), len(labels))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(pred, est.classes_[proba.argmax(axis=1)])
    dec = est.decision_function(X)
    assert dec.shape == ((len(X),) if len(labels) == 2 else (len(X), len(labels)))


def test_classifier_single_class_raises():
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="one class"):
        GBDTClassifier(n_estimators=2).fit(X, np.full(20, "only"))


@pytest.mark.parametrize("kind", ["numpy", "pandas", "sparse"])
def test_zero_weight_rows_are_left_out(kind):
    import scipy.sparse as sp
    X, y = _regression(n=200)
    w = np.ones(200)
    w[::3] = 0
    wrap = {"numpy": np.asarray, "pandas": lambda a: pd.DataFrame(a, columns=list("abcde")),
            "sparse": sp.csr_matrix}[kind]
    a = GBDTRegressor(n_estimators=5).fit(wrap(X), y, sample_weight=w)
    b = GBDTRegressor(n_estimators=5).fit(wrap(X[w > 0]), y[w > 0])
    np.testing.assert_allclose(a.predict(wrap(X)), b.predict(wrap(X)))


@pytest.mark.parametrize("Est,data", [(GBDTRegressor, _regression), (GBDTClassifier, _blobs)])
def test_eval_set_early_stopping(Est, data):
    X, y = data(n=600, seed=1)
    Xtr, ytr, Xva, yva = X[:400], y[:400], X[400:], y[400:]
    est = Est(n_estimators=200, learning_rate=0.5, early_stopping_rounds=3)
    est.fit(Xtr, ytr, eval_set=[(Xtr, ytr), (Xva, yva)])
    assert est.best_iteration_ is not None
    assert 0 <= est.best_iteration_ < 200
    assert set(est.evals_result_) == {"validation_0", "validation_1"}
    metric = "rmse" if Est is GBDTRegressor else "mlogloss"
    hist = est.evals_result_["validation_1"][metric]
    assert len(hist) < 200  # stopped early
    assert est.best_iteration_ == int(np.argmin(hist))
    assert est.model_.best_iteration == est.best_iteration_


def test_eval_set_weights_and_metric():
    X, y = _blobs(n=400, k=2)
    est = GBDTClassifier(n_estimators=5, eval_metric=["error", "logloss"])
    est.fit(X[:300], y[:300], eval_set=[(X[300:], y[300:])],
            sample_weight_eval_set=[np.ones(100)])
    assert set(est.evals_result_["validation_0"]) == {"error", "logloss"}
    assert len(est.evals_result_["validation_0"]["logloss"]) == 5
    assert est.best_iteration_ is None


def test_eval_set_meta_needs_eval_set():
    """sample_weight_eval_set without eval_set was ignored; XGBoost refuses it too."""
    X, y = _blobs(n=100, k=2)
    with pytest.raises(ValueError, match="sample_weight_eval_set needs eval_set"):
        GBDTClassifier(n_estimators=2).fit(X, y, sample_weight_eval_set=[np.ones(100)])
    with pytest.raises(ValueError, match="sample_weight_eval_set needs eval_set"):
        GBDTRegressor(n_estimators=2).fit(X, y.astype(float),
                                          sample_weight_eval_set=[np.ones(100)])


def test_early_stopping_needs_eval_set():
    X, y = _regression(n=50)
    with pytest.raises(ValueError, match="eval_set"):
        GBDTRegressor(n_estimators=5, early_stopping_rounds=2).fit(X, y)


def test_eval_set_unseen_label_raises():
    X, y = _blobs(n=100, k=2)
    with pytest.raises(ValueError, match="not seen"):
        GBDTClassifier(n_estimators=2).fit(X, y, eval_set=[(X, y + 5)])


@pytest.mark.parametrize("Est,data", [(GBDTRegressor, _regression), (GBDTClassifier, _blobs)])
def test_pickle_roundtrip(Est, data):
    X, y = data(n=200)
    est = Est(n_estimators=8).fit(X, y)
    est.predict(X)  # builds the model's packed cache, which must not break pickling
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est.predict(X), est2.predict(X))
    if Est is GBDTClassifier:
        np.testing.assert_array_equal(est.predict_proba(X), est2.predict_proba(X))
        np.testing.assert_array_equal(est.classes_, est2.classes_)


def test_pandas_category_column():
    rng = np.random.default_rng(0)
    n = 400
    color = rng.choice(["red", "green", "blue", "black", "white", "pink"], size=n)
    effect = {"red": 3.0, "green": -2.0, "blue": 0.0, "black": 1.0, "white": -1.0, "pink": 2.0}
    df = pd.DataFrame({"x": rng.normal(size=n), "color": pd.Categorical(color)})
    y = df["x"].to_numpy() + np.array([effect[c] for c in color])
    est = GBDTRegressor(n_estimators=30).fit(df, y)
    assert list(est.feature_names_in_) == ["x", "color"]
    assert est.n_features_in_ == 2
    assert est.model_.info.is_categorical.tolist() == [False, True]
    assert est.score(df, y) > 0.9
    # the categories are found by value, not by code: a frame with a different category order
    df2 = df.copy()
    df2["color"] = df2["color"].cat.reorder_categories(sorted(effect, reverse=True))
    np.testing.assert_allclose(est.predict(df2), est.predict(df))
    # a category column of strings as a classification target works too
    clf = GBDTClassifier(n_estimators=10).fit(df, pd.Series(color).map(
        lambda c: "warm" if c in ("red", "pink") else "other"))
    assert set(clf.classes_) == {"warm", "other"}
    assert clf.score(df, np.where(np.isin(color, ["red", "pink"]), "warm", "other")) > 0.95


def test_dataframe_without_string_columns_has_no_feature_names():
    X, y = _regression(n=100, d=3)
    est = GBDTRegressor(n_estimators=3).fit(pd.DataFrame(X), y)
    assert not hasattr(est, "feature_names_in_")
    np.testing.assert_allclose(est.predict(X), est.predict(pd.DataFrame(X)))


def test_categorical_features_param_numpy():
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 8, size=500).astype(np.float64)
    X = np.column_stack([codes, rng.normal(size=500)])
    y = np.where(np.isin(codes, [1, 4, 6]), 5.0, 0.0) + 0.1 * X[:, 1]
    est = GBDTRegressor(n_estimators=10, categorical_features=[0]).fit(X, y)
    assert est.model_.info.is_categorical.tolist() == [True, False]
    assert est.score(X, y) > 0.95


def test_clone_and_get_params():
    est = GBDTClassifier(n_estimators=7, learning_rate=0.1, max_depth=3, random_state=5,
                         eval_metric="logloss")
    params = est.get_params()
    assert params["n_estimators"] == 7 and params["max_depth"] == 3
    assert params["random_state"] == 5 and params["objective"] is None
    c = clone(est)
    assert c is not est and c.get_params() == params
    c.set_params(n_estimators=3)
    assert c.n_estimators == 3 and est.n_estimators == 7
    X, y = _blobs(n=100, k=2)
    est.fit(X, y)
    assert not hasattr(clone(est), "model_")
    defaults = GBDTRegressor().get_params()
    assert defaults["n_estimators"] == 100 and defaults["learning_rate"] == 0.3
    assert defaults["objective"] is None and defaults["max_bin"] == 256


def test_params_reach_the_trainer():
    X, y = _regression(n=200)
    est = GBDTRegressor(n_estimators=4, max_depth=2, learning_rate=0.1, reg_lambda=2.0,
                        objective="reg:absoluteerror", random_state=3).fit(X, y)
    p = est.model_.params
    assert p["max_depth"] == 2 and p["learning_rate"] == 0.1 and p["reg_lambda"] == 2.0
    assert p["objective"] == "reg:absoluteerror" and p["random_state"] == 3
    assert est.model_.num_boosted_rounds == 4
    for t in est.model_.trees:
        assert t.feature.size <= 7  # depth 2


def test_random_state_instance_and_determinism():
    X, y = _regression(n=200)
    kw = dict(n_estimators=5, subsample=0.7, colsample_bytree=0.6)
    a = GBDTRegressor(random_state=1, **kw).fit(X, y).predict(X)
    b = GBDTRegressor(random_state=1, **kw).fit(X, y).predict(X)
    np.testing.assert_array_equal(a, b)
    GBDTRegressor(random_state=np.random.RandomState(0), **kw).fit(X, y)


def test_invalid_params_raise_in_fit():
    X, y = _regression(n=50)
    GBDTRegressor(n_estimators=0)  # no validation in __init__
    with pytest.raises(ValueError, match="n_estimators"):
        GBDTRegressor(n_estimators=0).fit(X, y)
    with pytest.raises(ValueError, match="grow_policy"):
        GBDTRegressor(grow_policy="bogus").fit(X, y)


def test_sparse_input_matches_dense():
    sp = pytest.importorskip("scipy.sparse")
    X, y = _regression(n=200)
    X[np.abs(X) < 0.5] = 0.0
    dense = GBDTRegressor(n_estimators=5).fit(X, y)
    sparse = GBDTRegressor(n_estimators=5).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(dense.predict(X), sparse.predict(sp.csr_matrix(X)))


@pytest.mark.parametrize("est", [GBDTRegressor(n_estimators=5), GBDTClassifier(n_estimators=5)],
                         ids=["regressor", "classifier"])
def test_dataframe_column_names_consistency(est):
    # not among parametrize_with_checks' checks; DataFrames take their own path in fit/predict
    from sklearn.utils.estimator_checks import check_dataframe_column_names_consistency
    check_dataframe_column_names_consistency(type(est).__name__, est)


def test_nan_is_missing_inf_raises_in_fit_and_is_a_value_in_predict():
    """Issue 12, item 7: one rule for ±inf on every prediction path (docs/checks.md)."""
    X, y = _regression(n=200)
    X[::7, 0] = np.nan
    est = GBDTRegressor(n_estimators=5).fit(X, y)
    assert np.all(np.isfinite(est.predict(X)))
    X[0, 1], X[1, 2] = np.inf, -np.inf
    huge = np.nan_to_num(X, nan=np.nan, posinf=np.finfo(np.float64).max,
                         neginf=-np.finfo(np.float64).max)
    np.testing.assert_array_equal(est.predict(X), est.predict(huge))
    with pytest.raises(ValueError, match="infinity"):
        GBDTRegressor(n_estimators=5).fit(X, y)


@pytest.mark.parametrize("est,objective", [(GBDTRegressor, "survival:cox"),
                                           (GBDTClassifier, "multiclassova"),
                                           (GBDTClassifier, "binary:hinge")])
def test_a_predict_only_objective_is_refused(est, objective):
    """Objectives of imported models are in the registry, but cannot be trained."""
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="cannot train"):
        est(objective=objective, n_estimators=2).fit(X, y)


@pytest.mark.parametrize("n_classes,objective", [(2, "binary:logistic"), (3, "multi:softprob")])
def test_default_objectives_come_from_the_registry(n_classes, objective):
    from hardwood.objectives import DEFAULT_OBJECTIVE

    X = np.random.default_rng(0).normal(size=(60, 3))
    y = np.arange(60) % n_classes
    clf = GBDTClassifier(n_estimators=2).fit(X, y)
    assert clf.model_.objective == objective
    assert objective == DEFAULT_OBJECTIVE["binary" if n_classes == 2 else "multiclass"]
    reg = GBDTRegressor(n_estimators=2).fit(X, y.astype(float))
    assert reg.model_.objective == DEFAULT_OBJECTIVE["regression"] == "reg:squarederror"
