"""Rows' starting margins: XGBoost's ``base_margin`` and LightGBM's ``init_score`` on a
Dataset (an exposure offset in a Poisson model, a previous model's margins), and
``Model.predict(..., base_margin=)``. Before session 26 hardwood had neither (probes 42, 48)."""
import numpy as np
import pytest

import hardwood as hw

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, size=(n, 4)).astype(float)
    exposure = rng.uniform(0.5, 3.0, n)
    y = rng.poisson(exposure * np.exp(0.3 * X[:, 0] - 0.2 * X[:, 1])).astype(float)
    return X, y, np.log(exposure)


@pytest.mark.parametrize("objective", ["count:poisson", "reg:squarederror", "binary:logistic"])
def test_base_margin_trains_and_predicts_as_xgboost(objective):
    """The rows start from their base_margin in place of the base score (which XGBoost
    still estimates from the labels, for rows without one); a validation set starts from its
    own; ``predict(X, base_margin=)`` adds them as XGBoost's DMatrix does."""
    X, y, offset = _data()
    if objective == "binary:logistic":
        y = (y > 2).astype(float)
    tr, va = slice(0, 1500), slice(1500, None)
    dtr = xgb.DMatrix(X[tr], y[tr], base_margin=offset[tr])
    dva = xgb.DMatrix(X[va], y[va], base_margin=offset[va])
    evals_x, evals_h = {}, {}
    bx = xgb.train({"objective": objective, "max_depth": 3, "nthread": 1}, dtr, 6,
                   evals=[(dva, "v")], evals_result=evals_x, verbose_eval=False)
    train_set = hw.Dataset(X[tr], y[tr], base_margin=offset[tr])
    valid = hw.Dataset(X[va], y[va], base_margin=offset[va], reference=train_set)
    model = hw.train({"objective": objective, "max_depth": 3}, train_set, 6,
                     valid_sets=[valid], valid_names=["v"], evals_result=evals_h)
    np.testing.assert_allclose(model.predict(X[va], base_margin=offset[va]), bx.predict(dva),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.predict(X[va]), bx.predict(xgb.DMatrix(X[va])),
                               rtol=1e-5, atol=1e-6)
    metric = list(evals_x["v"])[0]
    np.testing.assert_allclose(evals_h["v"][metric], evals_x["v"][metric], rtol=1e-5)
    raw = model.predict(X[va], output="raw", base_margin=offset[va])
    np.testing.assert_allclose(raw, bx.predict(dva, output_margin=True), atol=2e-6)
    contrib = model.predict(X[va], output="contrib", base_margin=offset[va])
    np.testing.assert_allclose(contrib.sum(axis=1), raw, atol=1e-9)


@pytest.mark.parametrize("objective", ["poisson", "regression", "binary", "multiclass"])
def test_init_score_trains_as_lightgbm(objective):
    """LightGBM's init_score: no boost from the average (the base score is 0), and its
    multi-class init_score a flat array, class by class."""
    X, y, offset = _data()
    params = {"objective": objective, "num_leaves": 8}
    init = offset
    if objective == "binary":
        y = (y > 2).astype(float)
    if objective == "multiclass":
        y = np.minimum(y, 2.0)
        params["num_class"] = 3
        init = np.concatenate([offset, -offset, 0.5 * offset])
    booster = lgb.train({**params, "verbose": -1, "num_threads": 1},
                        lgb.Dataset(X, y, init_score=init), 6)
    model = hw.train(params, hw.Dataset(X, y, init_score=init), 6)
    np.testing.assert_allclose(model.predict(X, output="raw"),
                               booster.predict(X, raw_score=True), atol=1e-9)
    assert np.all(np.asarray(model.base_score) == 0.0)


def test_starting_margins_are_checked():
    X, y, offset = _data(300)
    with pytest.raises(ValueError, match="not both"):
        hw.Dataset(X, y, base_margin=offset, init_score=offset)
    bad = offset.copy()
    bad[5] = np.nan
    with pytest.raises(ValueError, match="row 5"):
        hw.Dataset(X, y, base_margin=bad)
    with pytest.raises(ValueError, match="299 values for 300 rows"):
        hw.Dataset(X, y, base_margin=offset[:-1])
    with pytest.raises(ValueError, match="2 column"):
        hw.train({}, hw.Dataset(X, y, base_margin=np.c_[offset, offset]), 1)
    model = hw.train({"max_depth": 2}, hw.Dataset(X, y, base_margin=offset), 2)
    with pytest.raises(ValueError, match="base_margin"):
        model.predict(X, base_margin=offset[:10])
    ds = hw.Dataset(X, y, base_margin=offset)
    assert ds.get_base_margin().shape == (300, 1)
    np.testing.assert_array_equal(ds.get_init_score(), offset)  # (LightGBM's: flat)
    # a model continued from init_model starts from the margins and the init model's trees
    once = hw.train({"max_depth": 2}, ds, 4)
    twice = hw.train({"max_depth": 2}, ds, 2, init_model=hw.train({"max_depth": 2}, ds, 2))
    np.testing.assert_array_equal(twice.predict(X, base_margin=offset),
                                  once.predict(X, base_margin=offset))


def test_the_estimators_take_starting_margins_as_xgboost_and_lightgbm():
    """``fit(base_margin=, base_margin_eval_set=)`` and ``predict(X, base_margin=)`` as
    XGBRegressor/XGBClassifier; ``init_score=``/``eval_init_score=`` as LightGBM's."""
    X, y, offset = _data()
    est = hw.GBDTRegressor(objective="count:poisson", n_estimators=5, max_depth=3)
    est.fit(X[:1500], y[:1500], base_margin=offset[:1500], eval_set=[(X[1500:], y[1500:])],
            base_margin_eval_set=[offset[1500:]])
    ref = xgb.XGBRegressor(objective="count:poisson", n_estimators=5, max_depth=3,
                           learning_rate=0.3, n_jobs=1)
    ref.fit(X[:1500], y[:1500], base_margin=offset[:1500], eval_set=[(X[1500:], y[1500:])],
            base_margin_eval_set=[offset[1500:]], verbose=False)
    np.testing.assert_allclose(est.predict(X[1500:], base_margin=offset[1500:]),
                               ref.predict(X[1500:], base_margin=offset[1500:]), rtol=1e-5)
    np.testing.assert_allclose(est.evals_result_["validation_0"]["poisson-nloglik"],
                               ref.evals_result()["validation_0"]["poisson-nloglik"], rtol=1e-5)
    yb = (y > 2).astype(int)
    clf = hw.GBDTClassifier(n_estimators=5, max_depth=3).fit(X, yb, base_margin=offset)
    ref = xgb.XGBClassifier(n_estimators=5, max_depth=3, learning_rate=0.3, n_jobs=1)
    ref.fit(X, yb, base_margin=offset)
    np.testing.assert_allclose(clf.predict_proba(X, base_margin=offset),
                               ref.predict_proba(X, base_margin=offset), atol=1e-6)
    w = np.where(np.arange(X.shape[0]) % 7 == 0, 0.0, 1.0)  # rows of weight 0 are left out
    hw.GBDTRegressor(n_estimators=2).fit(X, y, sample_weight=w, init_score=offset)
    with pytest.raises(ValueError, match="not both"):
        hw.GBDTRegressor(n_estimators=2).fit(X, y, base_margin=offset, init_score=offset)


def test_flat_margins_follow_each_librarys_order_and_the_ranker_takes_them():
    """A flat n x K ``base_margin`` is read row by row, as XGBoost reads it, and a flat
    ``init_score`` output by output, as LightGBM; both were read LightGBM's way (0.83 off in
    probability under XGBoost's name). ``base_margin_eval_set`` without ``eval_set`` is an
    error (it was ignored). GBDTRanker takes the margins too (probe 53)."""
    X, y, offset = _data()
    y3 = np.minimum(y, 2.0)
    m = np.stack([offset, -offset, 0.5 * offset], axis=1)
    by_rows = hw.Dataset(X, y3, base_margin=m.ravel()).base_margin
    by_outputs = hw.Dataset(X, y3, init_score=m.T.ravel()).base_margin
    np.testing.assert_array_equal(by_rows, m)
    np.testing.assert_array_equal(by_outputs, m)
    np.testing.assert_array_equal(hw.Dataset(X, y3, base_margin=m).get_init_score(),
                                  m.T.ravel())
    dx = xgb.DMatrix(X, y3, base_margin=m.ravel())
    bx = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 3,
                    "nthread": 1}, dx, 4)
    model = hw.train({"objective": "multi:softprob", "max_depth": 3},
                     hw.Dataset(X, y3, base_margin=m.ravel()), 4)
    np.testing.assert_allclose(model.predict(X, base_margin=m.ravel()), bx.predict(dx),
                               atol=1e-6)
    with pytest.raises(ValueError, match="needs eval_set"):
        hw.GBDTRegressor(n_estimators=2).fit(X, y, base_margin_eval_set=[offset])
    group = np.full(X.shape[0] // 20, 20)
    ranker = hw.GBDTRanker(n_estimators=3, max_depth=3).fit(X, y, group=group,
                                                             base_margin=offset)
    ref = hw.train({"objective": "rank:ndcg", "max_depth": 3},
                   hw.Dataset(X, y, group=group, base_margin=offset), 3)
    np.testing.assert_array_equal(ranker.predict(X, base_margin=offset),
                                  ref.predict(X, base_margin=offset))


def test_under_lightgbms_names_margins_add_to_the_base_score():
    """LightGBM keeps the label average in its first tree, so a validation set's init_score
    adds to it; hardwood replaced it (XGBoost's rule), and scored RMSE 7.42 where LightGBM
    scored 1.88 with a training set without init_score (probe 53). XGBoost's names keep
    XGBoost's rule."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 10, size=(2000, 3)).astype(float)
    y = X[:, 0] * 0.5 + 5 + rng.normal(0, 1, 2000)
    off = rng.normal(0, 1, 2000)
    tr, va = slice(0, 1500), slice(1500, None)
    evals_l = {}
    booster = lgb.train({"objective": "regression", "num_leaves": 8, "verbose": -1,
                         "num_threads": 1, "metric": "rmse"}, lgb.Dataset(X[tr], y[tr]), 3,
                        valid_sets=[lgb.Dataset(X[va], y[va], init_score=off[va])],
                        valid_names=["v"], callbacks=[lgb.record_evaluation(evals_l)])
    train_set = hw.Dataset(X[tr], y[tr])
    model = hw.train({"objective": "regression", "num_leaves": 8}, train_set, 3,
                     valid_sets=[hw.Dataset(X[va], y[va], init_score=off[va],
                                            reference=train_set)], valid_names=["v"])
    np.testing.assert_allclose(model.evals_result["v"]["rmse"], evals_l["v"]["rmse"],
                               rtol=1e-8)
    np.testing.assert_allclose(model.predict(X[va], base_margin=off[va]),
                               booster.predict(X[va]) + off[va], atol=1e-8)
    evals_x = {}
    xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X[tr], y[tr]), 3,
              evals=[(xgb.DMatrix(X[va], y[va], base_margin=off[va]), "v")],
              evals_result=evals_x, verbose_eval=False)
    model = hw.train({"max_depth": 3}, train_set, 3, valid_sets=[
        hw.Dataset(X[va], y[va], base_margin=off[va], reference=train_set)], valid_names=["v"])
    np.testing.assert_allclose(model.evals_result["v"]["rmse"], evals_x["v"]["rmse"],
                               rtol=1e-6)
