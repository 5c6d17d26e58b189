"""Quantile regression: XGBoost's reg:quantileerror (quantile_alpha) and LightGBM's quantile
(alpha), against both libraries on the same parameters. Before session 26 hardwood predicted
reg:quantileerror for imported models but refused to train it."""
import numpy as np
import pytest

import hardwood as hw
from hardwood.objectives import _lightgbm_median, _lightgbm_quantile, _weighted_median, \
    _xgboost_quantile

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")


def _data(n=2500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, size=(n, 4)).astype(float)
    y = X[:, 0] * 2 - X[:, 1] + rng.normal(0, 1 + X[:, 2], n)
    w = rng.uniform(0.5, 2.0, n)
    # (float32 values: LightGBM keeps labels and weights so)
    return X, y.astype(np.float32).astype(float), w.astype(np.float32).astype(float)


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("weighted", [False, True])
def test_xgboost_name_trains_xgboosts_model(alpha, weighted):
    """XGBoost's gradients, its quantiles of the labels (base score) and of each leaf's
    residuals (unweighted: interpolated at alpha (n + 1); weighted: a step), float32: 2e-6."""
    X, y, w = _data()
    w = w if weighted else None
    params = {"objective": "reg:quantileerror", "quantile_alpha": alpha, "max_depth": 3}
    dx = xgb.DMatrix(X, y, weight=w)
    evals_x, evals_h = {}, {}
    bx = xgb.train({**params, "nthread": 1}, dx, 8, evals=[(dx, "t")], evals_result=evals_x,
                   verbose_eval=False)
    ds = hw.Dataset(X, y, weight=w)
    model = hw.train(params, ds, 8, valid_sets=[ds], valid_names=["t"], evals_result=evals_h)
    np.testing.assert_allclose(model.predict(X), bx.predict(dx), atol=3e-6)
    np.testing.assert_allclose(evals_h["t"]["quantile"], evals_x["t"]["quantile"], rtol=1e-6)


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("weighted", [False, True])
def test_lightgbm_name_trains_lightgbms_model(alpha, weighted):
    """LightGBM's ``quantile`` takes ``alpha`` (its Huber/quantile parameter) and its own
    percentiles: its predictions and its metric exactly."""
    X, y, w = _data()
    w = w if weighted else None
    params = {"objective": "quantile", "alpha": alpha, "num_leaves": 8, "max_depth": 3,
              "learning_rate": 0.3}
    evals_l, evals_h = {}, {}
    bl = lgb.train({**params, "verbose": -1, "num_threads": 1, "metric": "quantile"},
                   lgb.Dataset(X, y, weight=w), 8, valid_sets=[lgb.Dataset(X, y, weight=w)],
                   valid_names=["t"], callbacks=[lgb.record_evaluation(evals_l)])
    ds = hw.Dataset(X, y, weight=w)
    model = hw.train({**params, "metric": "quantile"}, ds, 8, valid_sets=[ds],
                     valid_names=["t"], evals_result=evals_h)
    np.testing.assert_allclose(model.predict(X), bl.predict(X), atol=1e-9)
    np.testing.assert_allclose(evals_h["t"]["quantile"], evals_l["t"]["quantile"], rtol=1e-12)


def test_lightgbms_default_quantile_is_0_9():
    X, y, _ = _data(800)
    bl = lgb.train({"objective": "quantile", "num_leaves": 6, "verbose": -1, "num_threads": 1},
                   lgb.Dataset(X, y), 4)
    model = hw.train({"objective": "quantile", "num_leaves": 6}, hw.Dataset(X, y), 4)
    np.testing.assert_allclose(model.predict(X), bl.predict(X), atol=1e-9)
    assert np.mean(y <= model.predict(X)) > 0.75  # (4 rounds from the 0.9 quantile)


def test_the_median_is_the_quantile_one_half():
    """The absolute error's medians are these quantiles at 0.5, under each library's rule."""
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 9))
        v = rng.normal(size=n)
        w = rng.choice([0.5, 1.0, 2.0, 3.0], n)
        for weights in (None, w):
            assert _xgboost_quantile(v, weights, 0.5) == _weighted_median(v, weights)
            assert _lightgbm_quantile(v, weights, 0.5) == _lightgbm_median(v, weights)
    v = np.arange(1.0, 11.0)
    assert _xgboost_quantile(v, None, 0.25) == pytest.approx(2.75)  # alpha (n + 1) = 2.75
    assert _lightgbm_quantile(v, None, 0.25) == pytest.approx(3.25)  # alpha (n - 1) = 2.25
    assert _xgboost_quantile(v, np.ones(10), 0.25) == 3.0  # the first to reach 2.5 of 10


def test_quantile_parameters_are_checked():
    X, y, _ = _data(300)
    ds = hw.Dataset(X, y)
    with pytest.raises(ValueError, match="needs quantile_alpha"):
        hw.train({"objective": "reg:quantileerror"}, ds, 1)
    for bad in (0.0, 1.0, 1.5, -0.2, "0.5", [0.3, 0.3], [], [0.2, 1.0]):
        with pytest.raises(ValueError, match="quantile_alpha"):
            hw.train({"objective": "reg:quantileerror", "quantile_alpha": bad}, ds, 1)
    with pytest.raises(ValueError, match="the quantile of reg:quantileerror"):
        hw.train({"objective": "reg:absoluteerror", "quantile_alpha": 0.3}, ds, 1)
    with pytest.raises(ValueError, match="same setting"):
        hw.train({"objective": "quantile", "alpha": 0.3, "quantile_alpha": 0.3}, ds, 1)
    with pytest.raises(ValueError, match="eval_metric 'quantile'"):
        hw.train({"eval_metric": "quantile"}, ds, 1, valid_sets=[ds])
    with pytest.raises(ValueError, match="monotone_constraints"):
        hw.train({"objective": "reg:quantileerror", "quantile_alpha": 0.3,
                  "monotone_constraints": [1, 0, 0, 0]}, ds, 1)
    one = hw.train({"objective": "reg:quantileerror", "quantile_alpha": [0.3],
                    "max_depth": 2}, ds, 2)
    two = hw.train({"objective": "reg:quantileerror", "quantile_alpha": 0.3,
                    "max_depth": 2}, ds, 2)
    np.testing.assert_array_equal(one.predict(X), two.predict(X))


def test_models_save_and_retrain_from_their_params(tmp_path):
    X, y, w = _data(600)
    for params in ({"objective": "reg:quantileerror", "quantile_alpha": 0.2, "max_depth": 3},
                   {"objective": "quantile", "alpha": 0.8, "num_leaves": 6}):
        model = hw.train(params, hw.Dataset(X, y, weight=w), 3)
        model.save(tmp_path / "m.json")
        back = hw.load(tmp_path / "m.json")
        np.testing.assert_array_equal(back.predict(X), model.predict(X))
        again = hw.train(back.params, hw.Dataset(X, y, weight=w), 3)
        np.testing.assert_array_equal(again.predict(X), model.predict(X))


def test_the_estimator_trains_it_as_xgbregressor():
    X, y, _ = _data()
    est = hw.GBDTRegressor(objective="reg:quantileerror", quantile_alpha=0.75, n_estimators=5,
                           max_depth=3).fit(X, y)
    ref = xgb.XGBRegressor(objective="reg:quantileerror", quantile_alpha=0.75, n_estimators=5,
                           max_depth=3, learning_rate=0.3, n_jobs=1).fit(X, y)
    np.testing.assert_allclose(est.predict(X), ref.predict(X), atol=3e-6)


@pytest.mark.parametrize("weighted", [False, True])
def test_a_list_of_quantiles_trains_one_output_each_as_xgboost(weighted, tmp_path):
    """XGBoost's ``quantile_alpha=[0.1, 0.5, 0.9]`` trains one tree per quantile a round and
    predicts a column each; its metric is the mean pinball loss (it was refused)."""
    from hardwood.metrics import score_model

    X, y, w = _data()
    w = w if weighted else None
    params = {"objective": "reg:quantileerror", "quantile_alpha": [0.1, 0.5, 0.9],
              "max_depth": 3}
    dx = xgb.DMatrix(X, y, weight=w)
    evals_x, evals_h = {}, {}
    bx = xgb.train({**params, "nthread": 1}, dx, 6, evals=[(dx, "t")], evals_result=evals_x,
                   verbose_eval=False)
    ds = hw.Dataset(X, y, weight=w)
    model = hw.train(params, ds, 6, valid_sets=[ds], valid_names=["t"], evals_result=evals_h)
    pred = model.predict(X)
    assert pred.shape == (X.shape[0], 3)
    np.testing.assert_allclose(pred, bx.predict(dx), atol=3e-6)
    np.testing.assert_allclose(evals_h["t"]["quantile"], evals_x["t"]["quantile"], rtol=1e-6)
    assert np.all(np.diff(pred.mean(axis=0)) > 0)  # the quantiles in order
    model.save(tmp_path / "m.json")
    np.testing.assert_array_equal(hw.load(tmp_path / "m.json").predict(X), pred)
    scores, _ = score_model(model, y, pred)
    assert [m for m, _ in scores] == ["quantile"]
