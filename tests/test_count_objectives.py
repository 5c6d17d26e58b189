"""The losses of counts and positive amounts (count:poisson, reg:gamma, reg:tweedie; LightGBM's
poisson, gamma, tweedie), their metrics, and XGBoost's max_delta_step, against XGBoost and
LightGBM on the same parameters. Before session 26 hardwood predicted these objectives for
imported models but refused to train them ("hardwood cannot train objective ..."), and
refused max_delta_step."""
import warnings

import numpy as np
import pytest

import hardwood as hw

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")

LIGHTGBM_NAME = {"count:poisson": "poisson", "reg:gamma": "gamma", "reg:tweedie": "tweedie"}


def _data(n=2000, seed=0):
    """Integer features (every library bins them alike) and labels of each objective."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, size=(n, 4)).astype(float)
    mu = np.exp(0.3 * X[:, 0] - 0.2 * X[:, 1] + 0.1 * X[:, 2])
    labels = {"count:poisson": rng.poisson(mu).astype(float),
              "reg:gamma": rng.gamma(2.0, mu / 2.0),
              "reg:tweedie": np.where(rng.random(n) < 0.4, 0.0, rng.gamma(2.0, mu))}
    return X, labels, rng.uniform(0.5, 2.0, n)


@pytest.mark.parametrize("objective", ["count:poisson", "reg:gamma", "reg:tweedie"])
@pytest.mark.parametrize("weighted", [False, True])
def test_xgboost_names_train_xgboosts_model(objective, weighted):
    """Predictions and the default metric of each round equal XGBoost's (float32: 1e-6).
    count:poisson takes XGBoost's max_delta_step of 0.7 for its trees as well as its hessian:
    without the cap on the leaves, the weighted model was 0.096 off XGBoost's."""
    X, labels, w = _data()
    y, w = labels[objective], (w if weighted else None)
    evals_x, evals_h = {}, {}
    bx = xgb.train({"objective": objective, "max_depth": 3, "eta": 0.3, "nthread": 1},
                   xgb.DMatrix(X, y, weight=w), 8, evals=[(xgb.DMatrix(X, y, weight=w), "t")],
                   evals_result=evals_x, verbose_eval=False)
    ds = hw.Dataset(X, y, weight=w)
    model = hw.train({"objective": objective, "max_depth": 3, "eta": 0.3}, ds, 8,
                     valid_sets=[ds], valid_names=["t"], evals_result=evals_h)
    np.testing.assert_allclose(model.predict(X), bx.predict(xgb.DMatrix(X)), rtol=2e-6)
    assert list(evals_h["t"]) == list(evals_x["t"])  # the default metric, by XGBoost's name
    name = list(evals_x["t"])[0]
    np.testing.assert_allclose(evals_h["t"][name], evals_x["t"][name], rtol=1e-6)


@pytest.mark.parametrize("objective", ["count:poisson", "reg:gamma", "reg:tweedie"])
@pytest.mark.parametrize("weighted", [False, True])
def test_lightgbm_names_train_lightgbms_model(objective, weighted):
    """Under LightGBM's names (no cap on Poisson's leaves, its float64 base score) the
    predictions equal LightGBM's, and its metrics by its names equal its own."""
    X, labels, w = _data()
    y, w = labels[objective], (w if weighted else None)
    name = LIGHTGBM_NAME[objective]
    metrics = {"poisson": ["poisson"], "gamma": ["gamma", "gamma_deviance"],
               "tweedie": ["tweedie"]}[name]
    params = {"objective": name, "num_leaves": 8, "max_depth": 3, "learning_rate": 0.3}
    evals_l = {}
    bl = lgb.train({**params, "verbose": -1, "num_threads": 1, "metric": metrics},
                   lgb.Dataset(X, y, weight=w), 8, valid_sets=[lgb.Dataset(X, y, weight=w)],
                   valid_names=["t"], callbacks=[lgb.record_evaluation(evals_l)])
    ds = hw.Dataset(X, y, weight=w)
    evals_h, evals_d = {}, {}
    model = hw.train({**params, "metric": metrics}, ds, 8, valid_sets=[ds], valid_names=["t"],
                     evals_result=evals_h)
    np.testing.assert_allclose(model.predict(X), bl.predict(X), rtol=1e-7)
    for m in metrics:
        np.testing.assert_allclose(evals_h["t"][m], evals_l["t"][m], rtol=1e-7)
    # with no metric named, LightGBM's own by the objective's name (XGBoost's before)
    hw.train(params, ds, 2, valid_sets=[ds], valid_names=["t"], evals_result=evals_d)
    assert list(evals_d["t"]) == [name]


@pytest.mark.parametrize("objective", ["binary:logistic", "reg:squarederror"])
@pytest.mark.parametrize("extra", [{}, {"monotone_constraints": "(1,-1,0,0,0)"},
                                   {"grow_policy": "lossguide", "max_leaves": 8,
                                    "max_depth": 0}], ids=["depthwise", "monotone", "lossguide"])
def test_max_delta_step_caps_the_leaves_as_xgboost(objective, extra):
    """XGBoost's max_delta_step holds each leaf's weight within +-max_delta_step (before the
    learning rate), and splits are chosen by the held weights' gains (it was refused)."""
    rng = np.random.default_rng(1)
    n = 3000
    X = rng.integers(0, 6, size=(n, 5)).astype(float)
    X[rng.random(n) < 0.1, 3] = np.nan
    y = ((X[:, 0] + rng.normal(0, 1, n) > 4.5).astype(float) if objective == "binary:logistic"
         else X[:, 0] * 3 - X[:, 1] + rng.normal(0, 1, n))
    params = {"objective": objective, "max_depth": 3, "eta": 0.3, "max_delta_step": 0.5, **extra}
    bx = xgb.train({**params, "nthread": 1}, xgb.DMatrix(X, y), 6)
    model = hw.train(params, hw.Dataset(X, y), 6)
    want = bx.predict(xgb.DMatrix(X), output_margin=True)
    np.testing.assert_allclose(model.predict(X, output="raw"), want, atol=2e-6)
    free = hw.train({**params, "max_delta_step": 0.0}, hw.Dataset(X, y), 6)
    assert np.abs(free.predict(X, output="raw") - want).max() > 0.01  # the cap mattered
    leaves = [v for t in model.trees for v in t.value[t.left < 0]]
    assert np.abs(leaves).max() <= 0.5 * 0.3 + 1e-12


@pytest.mark.parametrize("objective", ["binary", "poisson"])
@pytest.mark.parametrize("extra", [{}, {"monotone_constraints": [1, -1, 0, 0, 0]},
                                   {"lambda_l1": 0.5}], ids=["plain", "monotone", "l1"])
def test_max_delta_step_under_lightgbms_names_is_lightgbms(objective, extra):
    """Under LightGBM's names its own cap: the children's outputs held within
    +-max_delta_step and the parent's score held too, whatever the monotone constraints
    (hardwood held the parent by them only, and refused the cap there before)."""
    rng = np.random.default_rng(1)
    n = 3000
    X = rng.integers(0, 8, size=(n, 5)).astype(float)
    X[rng.random(n) < 0.1, 3] = np.nan
    y = ((X[:, 0] + rng.normal(0, 1, n) > 4.5).astype(float) if objective == "binary"
         else np.floor(np.exp(X[:, 0] / 3)))
    params = {"objective": objective, "num_leaves": 12, "learning_rate": 0.3,
              "max_delta_step": 0.4, **extra}
    bl = lgb.train({**params, "verbose": -1, "num_threads": 1}, lgb.Dataset(X, y), 8)
    model = hw.train(params, hw.Dataset(X, y), 8)
    np.testing.assert_allclose(model.predict(X, output="raw"), bl.predict(X, raw_score=True),
                               atol=1e-9)
    free = hw.train({**params, "max_delta_step": 0.0}, hw.Dataset(X, y), 8)
    assert np.abs(free.predict(X, output="raw") - bl.predict(X, raw_score=True)).max() > 0.01


def test_max_delta_step_on_categorical_fields():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    n = 3000
    X = pd.DataFrame({"a": pd.Categorical(rng.integers(0, 8, n)),
                      "b": rng.integers(0, 6, n).astype(float)})
    y = (X["a"].cat.codes.to_numpy() % 3) * 2.0 + X["b"] + rng.normal(0, 1, n)
    for onehot in (2, 16):
        params = {"max_depth": 3, "eta": 0.3, "max_delta_step": 0.5, "max_cat_to_onehot": onehot}
        bx = xgb.train({**params, "nthread": 1}, xgb.DMatrix(X, y, enable_categorical=True), 6)
        model = hw.train(params, hw.Dataset(X, y), 6)
        np.testing.assert_allclose(model.predict(X),
                                   bx.predict(xgb.DMatrix(X, enable_categorical=True)),
                                   atol=2e-6)


def test_labels_are_checked_by_each_librarys_rule():
    X, labels, _ = _data(300)
    y = labels["reg:gamma"]  # (all above 0)
    for objective in ("count:poisson", "poisson", "reg:tweedie", "tweedie", "reg:gamma"):
        with pytest.raises(ValueError, match="at row 7"):
            bad = y.copy()
            bad[7] = -1.0
            hw.train({"objective": objective}, hw.Dataset(X, bad), 1)
        with pytest.raises(ValueError, match="positive labels" if objective == "reg:gamma"
                           else "every label is 0"):
            hw.train({"objective": objective}, hw.Dataset(X, np.zeros_like(y)), 1)
    zero = labels["reg:gamma"].copy()
    zero[3] = 0.0
    with pytest.raises(ValueError, match=r"positive labels \(> 0\), found 0 at row 3"):
        hw.train({"objective": "reg:gamma"}, hw.Dataset(X, zero), 1)
    # LightGBM's gamma takes a label of 0 (its hessian there is 0), as LightGBM does
    bl = lgb.train({"objective": "gamma", "num_leaves": 4, "verbose": -1, "num_threads": 1,
                    "metric": "None"},  # (its gamma metric refuses a label of 0)
                   lgb.Dataset(X, zero), 3)
    model = hw.train({"objective": "gamma", "num_leaves": 4}, hw.Dataset(X, zero), 3)
    np.testing.assert_allclose(model.predict(X), bl.predict(X), rtol=1e-7)


def test_parameters_of_these_objectives_are_checked():
    X, labels, _ = _data(300)
    ds = hw.Dataset(X, labels["reg:tweedie"])
    for power in (0.5, 2.0, 2.5):
        with pytest.raises(ValueError, match="tweedie_variance_power"):
            hw.train({"objective": "reg:tweedie", "tweedie_variance_power": power}, ds, 1)
    with pytest.raises(ValueError, match="is the variance power of reg:tweedie"):
        hw.train({"objective": "reg:gamma", "tweedie_variance_power": 1.2}, ds, 1)
    with pytest.raises(ValueError, match="is the hessian offset of count:poisson"):
        hw.train({"poisson_max_delta_step": 0.3}, ds, 1)
    with pytest.raises(ValueError, match="max_delta_step"):
        hw.train({"max_delta_step": -1.0}, ds, 1)
    with pytest.raises(ValueError, match="tweedie-nloglik@rho"):
        hw.train({"objective": "reg:tweedie", "eval_metric": "tweedie-nloglik"}, ds, 1)
    with pytest.raises(ValueError, match="tweedie-nloglik@rho"):
        hw.train({"objective": "reg:tweedie", "eval_metric": "tweedie-nloglik@2.5"}, ds, 1)
    with pytest.raises(ValueError, match="above 0"):
        hw.train({"objective": "reg:tweedie", "base_score": 0.0}, ds, 1)


def test_tweedie_power_and_poisson_step_reach_the_gradients():
    """The power names the default metric too, as XGBoost's; max_delta_step given to
    count:poisson is its hessian's offset as well as the leaves' cap (XGBoost's one
    parameter), where LightGBM's poisson_max_delta_step is its hessian's alone."""
    X, labels, _ = _data()
    y = labels["reg:tweedie"]
    evals_x, evals_h = {}, {}
    params = {"objective": "reg:tweedie", "tweedie_variance_power": 1.2, "max_depth": 3}
    dx = xgb.DMatrix(X, y)
    bx = xgb.train({**params, "nthread": 1}, dx, 5, evals=[(dx, "t")], evals_result=evals_x,
                   verbose_eval=False)
    ds = hw.Dataset(X, y)
    model = hw.train(params, ds, 5, valid_sets=[ds], valid_names=["t"], evals_result=evals_h)
    assert list(evals_h["t"]) == list(evals_x["t"]) == ["tweedie-nloglik@1.2"]
    np.testing.assert_allclose(model.predict(X), bx.predict(dx), rtol=2e-6)
    y = labels["count:poisson"]
    dx = xgb.DMatrix(X, y)
    for step in (0.3, 0.0):
        params = {"objective": "count:poisson", "max_delta_step": step, "max_depth": 3}
        bx = xgb.train({**params, "nthread": 1}, dx, 5)
        model = hw.train(params, hw.Dataset(X, y), 5)
        np.testing.assert_allclose(model.predict(X), bx.predict(dx), rtol=2e-6)
    params = {"objective": "poisson", "poisson_max_delta_step": 0.2, "num_leaves": 6}
    bl = lgb.train({**params, "verbose": -1, "num_threads": 1}, lgb.Dataset(X, y), 5)
    model = hw.train(params, hw.Dataset(X, y), 5)
    np.testing.assert_allclose(model.predict(X), bl.predict(X), rtol=1e-7)


def test_continued_training_keeps_the_objectives_parameters():
    """A reg:tweedie model of power 1.3 continued without naming it trained the new rounds
    at 1.5 (0.77 off XGBoost's, which keeps its booster's); a quantile model needed its
    quantile_alpha again (probe 51). The power names the scores of a saved model too
    (``hardwood predict`` reported tweedie-nloglik@1.5 for a model of 1.2)."""
    from hardwood.metrics import score_model

    X, labels, _ = _data()
    y = labels["reg:tweedie"]
    params = {"objective": "reg:tweedie", "tweedie_variance_power": 1.3, "max_depth": 3}
    once = hw.train(params, hw.Dataset(X, y), 6)
    first = hw.train(params, hw.Dataset(X, y), 3)
    more = hw.train({"objective": "reg:tweedie", "max_depth": 3}, hw.Dataset(X, y), 3,
                    init_model=first)
    np.testing.assert_array_equal(more.predict(X), once.predict(X))
    scores, _ = score_model(once, y, once.predict(X))
    assert scores[0][0] == "tweedie-nloglik@1.3"
    q = {"objective": "reg:quantileerror", "quantile_alpha": 0.2, "max_depth": 3}
    once = hw.train(q, hw.Dataset(X, y), 4)
    more = hw.train({"objective": "reg:quantileerror", "max_depth": 3}, hw.Dataset(X, y), 2,
                    init_model=hw.train(q, hw.Dataset(X, y), 2))
    np.testing.assert_array_equal(more.predict(X), once.predict(X))
    for power in (1.9999999, 1.0000001):  # (':g' wrote 1.9999999 as @2, then refused it)
        ds = hw.Dataset(X, y)
        model = hw.train({"objective": "reg:tweedie", "tweedie_variance_power": power}, ds, 1,
                         valid_sets=[ds], valid_names=["t"])
        assert list(model.evals_result["t"]) == [f"tweedie-nloglik@{power!r}"]
    w = np.where(y > 0, 0.0, 1.0)
    for objective in ("reg:tweedie", "tweedie"):
        with pytest.raises(ValueError, match="every row with a label above 0 has weight 0"):
            hw.train({"objective": objective}, hw.Dataset(X, y, weight=w), 1)


def test_models_save_compile_and_retrain_from_their_params(tmp_path):
    X, labels, w = _data(800)
    for objective in ("count:poisson", "poisson", "reg:gamma", "reg:tweedie"):
        y = labels["count:poisson" if objective == "poisson" else objective]
        params = {"objective": objective, "max_depth": 3}
        model = hw.train(params, hw.Dataset(X, y, weight=w), 4)
        path = tmp_path / "m.json"
        model.save(path)
        back = hw.load(path)
        np.testing.assert_array_equal(back.predict(X), model.predict(X))
        np.testing.assert_allclose(hw.compile(model).predict(X), model.predict(X), rtol=1e-12)
        again = hw.train(model.params, hw.Dataset(X, y, weight=w), 4)
        np.testing.assert_array_equal(again.predict(X), model.predict(X))


def test_estimators_train_them_with_xgboosts_parameters():
    X, labels, _ = _data()
    y = labels["reg:tweedie"]
    est = hw.GBDTRegressor(objective="reg:tweedie", tweedie_variance_power=1.3, n_estimators=5,
                           max_depth=3).fit(X, y)
    ref = xgb.XGBRegressor(objective="reg:tweedie", tweedie_variance_power=1.3,
                           n_estimators=5, max_depth=3, learning_rate=0.3, n_jobs=1).fit(X, y)
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=2e-6)
    y = labels["count:poisson"]
    est = hw.GBDTRegressor(objective="count:poisson", n_estimators=5, max_depth=3).fit(X, y)
    ref = xgb.XGBRegressor(objective="count:poisson", n_estimators=5, max_depth=3,
                           learning_rate=0.3, n_jobs=1).fit(X, y)
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=2e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hw.GBDTRegressor(objective="poisson", n_estimators=2).fit(X, y)  # sklearn's HGB name
    with pytest.raises(ValueError, match="labels >= 0"):
        hw.GBDTRegressor(objective="count:poisson", n_estimators=2).fit(X, -y - 1)
