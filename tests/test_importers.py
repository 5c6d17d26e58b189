"""Importers: XGBoost, LightGBM and scikit-learn models give the native library's predictions
(raw and transformed) to 1e-6, and malformed or unsupported models are refused clearly."""
import copy
import json
import os
import warnings

import numpy as np
import pandas as pd
import pytest

import hardwood
from hardwood import ModelFormatError, import_model

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")
warnings.filterwarnings("ignore", category=UserWarning)

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")


def close(got, ref, rtol=1e-6):
    """Equal to ``rtol`` relative to each value, with the output's mean magnitude as the floor
    (XGBoost sums in float32, hardwood in float64)."""
    got, ref = np.asarray(got, float), np.asarray(ref, float)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    scale = np.mean(np.abs(ref)) + 1e-12
    err = np.max(np.abs(got - ref) / (np.abs(ref) + scale))
    assert err < rtol, err


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 + np.isnan(X[:, 2])
    return X, y


def _labels(y, kind):
    if kind == "binary":
        return (y > 1).astype(float)
    if kind == "multi":
        return np.digitize(y, [0.5, 1.5]).astype(float)
    if kind == "count":
        return np.round(np.exp(y / 3))
    return y


def _check_all_runtimes(m, X, ref_raw):
    from hardwood.predict.quickscorer import unsupported_reason
    runtimes = ["struct+", "vpred"]
    if unsupported_reason(m.trees) is None:  # numeric splits, at most 64 leaves a tree
        runtimes.append("quickscorer")
    for rt in runtimes:
        close(m.predict(X, output="raw", runtime=rt), ref_raw)


# -- XGBoost -------------------------------------------------------------------------------------
@pytest.mark.parametrize("objective,kind", [("reg:squarederror", "reg"),
                                            ("binary:logistic", "binary"),
                                            ("multi:softprob", "multi"),
                                            ("multi:softmax", "multi"),
                                            ("count:poisson", "count"),
                                            ("reg:logistic", "binary")])
def test_xgboost_parity(data, objective, kind, tmp_path):
    X, y = data
    p = {"objective": objective, "max_depth": 4, "nthread": 1}
    if kind == "multi":
        p["num_class"] = 3
    bst = xgb.train(p, xgb.DMatrix(X, _labels(y, kind)), 15)
    ref_raw = bst.predict(xgb.DMatrix(X), output_margin=True)
    ref = bst.predict(xgb.DMatrix(X))
    bst.save_model(tmp_path / "m.json")
    bst.save_model(tmp_path / "m.ubj")
    sources = [bst, str(tmp_path / "m.json"), tmp_path / "m.ubj", bytes(bst.save_raw("ubj")),
               json.loads(bst.save_raw("json"))]
    for src in sources:
        m = import_model(src)
        for Xd in (X, X.astype(np.float64)):
            close(m.predict(Xd, output="raw"), ref_raw)
            close(m.predict(Xd), ref)
    _check_all_runtimes(m, X, ref_raw)


def test_xgboost_sklearn_wrapper_and_exact_thresholds():
    """Rows equal to a split value (and one float32 ulp around it) go where XGBoost sends them."""
    rng = np.random.default_rng(1)
    X = np.round(rng.normal(size=(800, 3)), 1).astype(np.float32)
    y = X[:, 0] + (X[:, 1] > 0.2)
    reg = xgb.XGBRegressor(n_estimators=10, max_depth=3, n_jobs=1).fit(X, y)
    m = import_model(reg)
    conds = []
    for t in json.loads(reg.get_booster().save_raw("json"))["learner"]["gradient_booster"][
            "model"]["trees"]:
        conds += [c for c, l in zip(t["split_conditions"], t["left_children"]) if l != -1]
    c = np.array(conds, dtype=np.float32)
    probe = np.concatenate([c, np.nextafter(c, np.float32(np.inf)),
                            np.nextafter(c, np.float32(-np.inf))])
    P = np.tile(probe[:, None], (1, 3)).astype(np.float32)
    close(m.predict(P), reg.predict(P))
    # float64 rows between two float32 values round like XGBoost's float32 cast
    P64 = P.astype(np.float64) + rng.uniform(-1e-8, 1e-8, size=P.shape)
    close(m.predict(P64), reg.get_booster().inplace_predict(P64))


def test_xgboost_categorical(data):
    X, _ = data
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"a": X[:, 0], "b": X[:, 1],
                       "c": pd.Categorical(rng.choice(list("pqrstuvw"), X.shape[0]))})
    df.loc[::11, "c"] = np.nan
    y = np.nan_to_num(X[:, 0]) + df["c"].isin(list("pqs")) * 2
    for onehot in (1, 16):
        bst = xgb.train({"max_depth": 4, "max_cat_to_onehot": onehot, "nthread": 1},
                        xgb.DMatrix(df, y, enable_categorical=True), 10)
        m = import_model(bst)
        assert any(t.is_categorical.any() for t in m.trees)
        ref = bst.predict(xgb.DMatrix(df, enable_categorical=True), output_margin=True)
        close(m.predict(df, output="raw"), ref)
        _check_all_runtimes(m, df, ref)


def _xgb_json(data):
    X, y = data
    bst = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 3)
    return json.loads(bst.save_raw("json"))


def _tree0(d):
    return d["learner"]["gradient_booster"]["model"]["trees"][0]


@pytest.mark.parametrize("corrupt,msg", [
    (lambda t: t["left_children"].__setitem__(0, 999), "outside"),
    (lambda t: t["left_children"].__setitem__(1, 0), "twice|cycle"),
    (lambda t: t["split_indices"].__setitem__(0, 99), "feature"),
    (lambda t: t["split_conditions"].pop(), "length"),
    (lambda t: t["split_conditions"].__setitem__(0, float("nan")), "NaN"),
])
def test_xgboost_malformed_refused(data, corrupt, msg):
    d = _xgb_json(data)
    corrupt(_tree0(d))
    with pytest.raises(ModelFormatError, match=msg):
        import_model(d)


def test_xgboost_unsupported_refused(data):
    X, y = data
    d = _xgb_json(data)
    d2 = copy.deepcopy(d)
    d2["learner"]["objective"]["name"] = "survival:cox"
    with pytest.raises(ModelFormatError, match="objective"):
        import_model(d2)
    dart = xgb.train({"booster": "dart", "max_depth": 2, "nthread": 1}, xgb.DMatrix(X, y), 2)
    with pytest.raises(ModelFormatError, match="DART"):
        import_model(dart)
    with pytest.raises(ModelFormatError):
        import_model(b"\x00\x01garbage")


# -- LightGBM ------------------------------------------------------------------------------------
@pytest.mark.parametrize("objective,kind", [("regression", "reg"), ("binary", "binary"),
                                            ("multiclass", "multi"), ("multiclassova", "multi"),
                                            ("poisson", "count"), ("cross_entropy", "binary")])
def test_lightgbm_parity(data, objective, kind, tmp_path):
    X, y = data
    p = {"objective": objective, "verbose": -1, "num_leaves": 15, "num_threads": 1}
    if kind == "multi":
        p["num_class"] = 3
    b = lgb.train(p, lgb.Dataset(X, _labels(y, kind)), 15)
    b.save_model(tmp_path / "m.txt")
    for src in (b, str(tmp_path / "m.txt"), b.model_to_string()):
        m = import_model(src)
        close(m.predict(X, output="raw"), b.predict(X, raw_score=True), rtol=1e-12)
        close(m.predict(X), b.predict(X), rtol=1e-12)
    _check_all_runtimes(m, X, b.predict(X, raw_score=True))


@pytest.mark.parametrize("objective,kind", [("regression", "reg"), ("binary", "binary"),
                                            ("multiclass", "multi")])
def test_lightgbm_random_forest_average_output(data, objective, kind):
    """boosting='rf' predicts the transform of the mean of the iterations (the bare
    ``average_output`` header line), not of their sum (issue 12, defect 1). LightGBM's
    raw_score on a forest is the plain sum; hardwood's raw margin is the mean."""
    X, y = data
    p = {"boosting": "rf", "bagging_freq": 1, "bagging_fraction": 0.5, "objective": objective,
         "verbose": -1, "num_leaves": 15, "num_threads": 1}
    if kind == "multi":
        p["num_class"] = 3
    b = lgb.train(p, lgb.Dataset(X, _labels(y, kind)), 10)
    assert "\naverage_output\n" in b.model_to_string()
    for src in (b, b.model_to_string()):
        m = import_model(src)
        assert m.params["lightgbm_average_output"] == 10
        close(m.predict(X), b.predict(X))
        close(m.predict(X, output="raw"), b.predict(X, raw_score=True) / 10)
    _check_all_runtimes(m, X, b.predict(X, raw_score=True) / 10)
    # the first k iterations of a forest: import LightGBM's text for num_iteration=k
    m3 = import_model(b.model_to_string(num_iteration=3))
    close(m3.predict(X), b.predict(X, num_iteration=3))
    # a partial iteration_range sums those iterations with the whole forest's weight 1/10
    close(m.predict(X, output="raw", iteration_range=(0, 3)),
          b.predict(X, raw_score=True, num_iteration=3) / 10)


@pytest.mark.parametrize("params", [{"zero_as_missing": True}, {"use_missing": False}])
def test_lightgbm_missing_modes(data, params):
    X, y = data
    rng = np.random.default_rng(4)
    Xz = X.copy()
    Xz[rng.random(X.shape) < 0.2] = 0.0
    Xz[:20, :] = np.float32(1e-36)  # inside LightGBM's zero band
    b = lgb.train({"verbose": -1, "num_leaves": 15, "num_threads": 1, **params},
                  lgb.Dataset(Xz, y), 15)
    m = import_model(b)
    close(m.predict(Xz, output="raw"), b.predict(Xz, raw_score=True), rtol=1e-12)


def test_lightgbm_categorical_pandas_and_numpy(data):
    X, _ = data
    rng = np.random.default_rng(5)
    n = X.shape[0]
    df = pd.DataFrame({"a": X[:, 0], "c": pd.Categorical(rng.choice(list("pqrstuvw"), n))})
    y = np.nan_to_num(X[:, 0]) + df["c"].isin(list("pqs")) * 2
    b = lgb.train({"verbose": -1, "num_leaves": 15, "min_data_per_group": 5, "num_threads": 1},
                  lgb.Dataset(df, y), 15)
    m = import_model(b)
    assert any(t.is_categorical.any() for t in m.trees)
    close(m.predict(df, output="raw"), b.predict(df, raw_score=True), rtol=1e-12)
    Xn = np.c_[X[:, :2], rng.integers(0, 10, n)].astype(np.float64)
    Xn[::13, 2] = np.nan
    yn = np.nan_to_num(Xn[:, 0]) + np.isin(Xn[:, 2], [1, 3, 5]) * 2
    b = lgb.train({"verbose": -1, "num_leaves": 15, "min_data_per_group": 5, "num_threads": 1},
                  lgb.Dataset(Xn, yn, categorical_feature=[2]), 15)
    m = import_model(b)
    Xt = Xn.copy()
    Xt[:5, 2] = [-1, 12, 50, np.nan, 3]  # negative, unseen, missing: all go right
    ref = b.predict(Xt, raw_score=True)
    close(m.predict(Xt, output="raw"), ref, rtol=1e-12)
    _check_all_runtimes(m, Xt, ref)


def test_lightgbm_refusals(data):
    X, y = data
    b = lgb.train({"verbose": -1, "num_leaves": 7, "linear_tree": True, "num_threads": 1},
                  lgb.Dataset(X, y), 3)
    with pytest.raises(ModelFormatError, match="linear trees"):
        import_model(b)
    b = lgb.train({"verbose": -1, "num_leaves": 7, "num_threads": 1}, lgb.Dataset(X, y), 3)
    text = b.model_to_string()
    lines = text.split("\n")
    i = next(k for k, s in enumerate(lines) if s.startswith("left_child="))
    vals = lines[i].split("=")[1].split()
    vals[0] = "77"
    bad = "\n".join(lines[:i] + ["left_child=" + " ".join(vals)] + lines[i + 1:])
    with pytest.raises(ModelFormatError, match="outside"):
        import_model(bad)
    bad = text.replace("objective=regression", "objective=custom")
    with pytest.raises(ModelFormatError, match="objective"):
        import_model(bad)


@pytest.mark.skipif(not os.path.exists(os.path.join(DATA, "rank.train")),
                    reason="../shared/data is absent")
def test_lightgbm_lambdarank():
    from sklearn.datasets import load_svmlight_file
    X, y = load_svmlight_file(os.path.join(DATA, "rank.train"))
    X = X.toarray()
    q = np.loadtxt(os.path.join(DATA, "rank.train.query"), dtype=np.int64)
    b = lgb.train({"objective": "lambdarank", "verbose": -1, "num_leaves": 15,
                   "num_threads": 1}, lgb.Dataset(X, y, group=q), 20)
    m = import_model(b)
    assert m.objective == "rank:ndcg"
    ref = b.predict(X)
    close(m.predict(X), ref, rtol=1e-12)
    close(m.predict(X, runtime="auto"), ref, rtol=1e-12)


# -- scikit-learn ----------------------------------------------------------------------------------
def _sk_cases():
    from sklearn import ensemble as E
    from sklearn import tree as T
    return [(T.DecisionTreeRegressor(max_depth=6), "reg"),
            (T.DecisionTreeClassifier(max_depth=5), "multi"),
            (E.RandomForestRegressor(10, max_depth=6, random_state=0), "reg"),
            (E.RandomForestClassifier(10, max_depth=5, random_state=0), "multi"),
            (E.ExtraTreesRegressor(8, random_state=0), "reg"),
            (E.ExtraTreesClassifier(8, max_depth=5, random_state=0), "binary"),
            (E.HistGradientBoostingRegressor(max_iter=15), "reg"),
            (E.HistGradientBoostingClassifier(max_iter=8), "multi"),
            (E.HistGradientBoostingClassifier(max_iter=8), "binary")]


@pytest.mark.parametrize("case", range(9))
def test_sklearn_parity(data, case):
    X, y = data
    est, kind = _sk_cases()[case]
    est.fit(X[:600], _labels(y[:600], kind))
    m = import_model(est)
    for Xd in (X, X.astype(np.float64)):
        ref = est.predict_proba(Xd) if hasattr(est, "predict_proba") else est.predict(Xd)
        if ref.ndim == 2 and m.n_outputs == 1:
            ref = ref[:, 1]
        close(m.predict(Xd), ref, rtol=1e-12)
    close(m.predict(X, runtime="auto"), ref, rtol=1e-12)


@pytest.mark.parametrize("kind", ["reg", "binary", "multi"])
def test_sklearn_gradient_boosting(data, kind):
    from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
    X, y = data
    X = np.nan_to_num(X)
    est = (GradientBoostingRegressor if kind == "reg" else GradientBoostingClassifier)(
        n_estimators=10, max_depth=3)
    est.fit(X[:600], _labels(y[:600], kind))
    m = import_model(est)
    if kind == "reg":
        close(m.predict(X.astype(np.float64)), est.predict(X), rtol=1e-12)
    else:
        close(m.predict(X, output="raw"), est.decision_function(X), rtol=1e-12)
        ref = est.predict_proba(X)
        close(m.predict(X), ref[:, 1] if kind == "binary" else ref, rtol=1e-12)


def test_sklearn_hist_gradient_boosting_categorical(data):
    from sklearn.ensemble import HistGradientBoostingRegressor
    X, _ = data
    rng = np.random.default_rng(6)
    df = pd.DataFrame({"a": X[:, 0], "c": pd.Categorical(rng.choice(list("pqrstuvw"), len(X))),
                       "b": X[:, 1]})
    df.loc[::7, "c"] = np.nan
    y = np.nan_to_num(X[:, 0]) + df["c"].isin(list("pqs")) * 2
    h = HistGradientBoostingRegressor(max_iter=15, categorical_features="from_dtype").fit(df, y)
    m = import_model(h)
    assert any(t.is_categorical.any() for t in m.trees)
    close(m.predict(df), h.predict(df), rtol=1e-12)
    close(m.predict(df, runtime="auto"), h.predict(df), rtol=1e-12)


def test_sklearn_refusals(data):
    from sklearn.tree import DecisionTreeRegressor
    X, y = data
    with pytest.raises(ModelFormatError, match="not fitted"):
        import_model(DecisionTreeRegressor())
    est = DecisionTreeRegressor(max_depth=2).fit(X, np.c_[y, y])
    with pytest.raises(ModelFormatError, match="multi-output"):
        import_model(est)


def test_imported_model_feature_mismatch_and_save_round_trip(data, tmp_path):
    X, y = data
    bst = xgb.train({"max_depth": 3, "nthread": 1, "objective": "binary:logistic"},
                    xgb.DMatrix(X, _labels(y, "binary")), 5)
    m = import_model(bst)
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :3])
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :3], runtime="auto")
    m.save(tmp_path / "hw.json")
    m2 = hardwood.load(tmp_path / "hw.json")
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))
