"""Session 27's fixes, each found by a probe run as a new user would. Each test says what
hardwood did before."""
import warnings

import numpy as np
import pytest

import hardwood as hw
from containers import CONTAINERS, container_of


# -- session 26's note: LightGBM's split of the missing values alone -------------------------
@pytest.mark.parametrize("container", CONTAINERS)
@pytest.mark.parametrize("values", ["positive", "straddle"])
def test_validation_values_near_zero_are_scored_as_predict_routes_them(container, values,
                                                                       monkeypatch):
    """Under LightGBM's rule, a field whose training values are all >= 1, with some missing,
    gets LightGBM's split of the missing values alone at +1e-35, which sends every value
    <= 1e-35 left with them. A validation value of 0.0 or -0.5 was scored by its bin (that
    of 1.0: right): RMSE 1.54 logged where ``predict`` gave 5.33, and early stopping at
    round 43 where LightGBM stopped at 1. A field of -2, -1, 1, 2 with missing values has
    its edge between -1 and 1 at -1e-35 or +1e-35, so a validation 0.0 goes by that
    threshold, not by the sign it lacks."""
    rng = np.random.default_rng(3)
    n = 2000
    if values == "positive":
        X = rng.integers(1, 10, size=(n, 3)).astype(float)
        Xv = rng.choice([0.0, -0.5, 1e-36, -1e-36, 2.0, 5.0, np.nan], size=(300, 3))
    else:
        X = rng.choice([-2.0, -1.0, 1.0, 2.0], size=(n, 3))
        Xv = rng.choice([0.0, 1e-36, -1e-36, 0.3, -0.3, 1.0, np.nan], size=(300, 3))
    X[rng.random((n, 3)) < 0.2] = np.nan
    y = np.nan_to_num(X[:, 0], nan=20.0) * 0.5 + np.nan_to_num(X[:, 1], nan=-3.0) \
        + rng.normal(0, 1, n)
    yv = np.nan_to_num(Xv[:, 0], nan=20.0) * 0.5
    conv = container_of(container, monkeypatch)
    tr = hw.Dataset(conv(X), y)
    va = hw.Dataset(conv(Xv), yv, reference=tr)
    params = {"objective": "regression", "num_leaves": 8, "metric": "rmse"}
    model = hw.train(params, tr, 10, valid_sets=[va], valid_names=["v"])
    assert any(abs(t) == np.float32(1e-35) for tree in model.trees
               for t in tree.threshold[tree.feature >= 0])
    for rounds in (1, 4, 10):
        pred = model[:rounds].predict(conv(Xv))
        np.testing.assert_allclose(model.evals_result["v"]["rmse"][rounds - 1],
                                   np.sqrt(np.mean((pred - yv) ** 2)), rtol=1e-12)


def test_early_stopping_near_zero_stops_where_lightgbm_does():
    """The probe's case, end to end: early stopping watched the bins' scores and stopped at
    round 43; LightGBM, whose logged scores are its predictions', stops at round 1."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(1)
    n = 2000
    X = rng.integers(1, 10, size=(n, 3)).astype(float)
    X[rng.random((n, 3)) < 0.2] = np.nan
    y = np.nan_to_num(X[:, 0], nan=20.0) * 0.5 + rng.normal(0, 1, n)
    Xv = rng.choice([0.0, -0.5, 2.0, 5.0, np.nan], size=(300, 3))
    yv = np.nan_to_num(Xv[:, 0], nan=20.0) * 0.5
    params = {"objective": "regression", "num_leaves": 8, "metric": "rmse"}
    tr = hw.Dataset(X, y)
    model = hw.train(params, tr, 200, valid_sets=[hw.Dataset(Xv, yv, reference=tr)],
                     early_stopping_rounds=5)
    peer = lgb.train({**params, "verbose": -1, "num_threads": 1}, lgb.Dataset(X, y), 200,
                     valid_sets=[lgb.Dataset(Xv, yv)],
                     callbacks=[lgb.early_stopping(5, verbose=False)])
    assert model.best_iteration + 1 == peer.best_iteration
    np.testing.assert_allclose(model.predict(Xv), peer.predict(Xv), atol=1e-6)


# -- session 26's note: init_model with a Dataset's init_score -------------------------------
def test_under_lightgbms_names_init_model_overrides_the_init_score():
    """LightGBM replaces a Dataset's ``init_score`` by the init model's predictions when
    training continues (it warns); hardwood added both, 0.14 off LightGBM's continued model.
    XGBoost's ``base_margin`` stays under the continued trees, as before."""
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.integers(0, 10, size=(n, 3)).astype(float)
    off = rng.normal(0, 1, n)
    y = X[:, 0] * 0.5 + off + rng.normal(0, 1, n)
    P = {"objective": "regression", "num_leaves": 8}
    first = hw.train(P, hw.Dataset(X, y, init_score=off), 5)
    with pytest.warns(UserWarning, match="init_score is overridden"):
        cont = hw.train(P, hw.Dataset(X, y, init_score=off), 5, init_model=first)
    plain = hw.train(P, hw.Dataset(X, y), 5, init_model=first)
    np.testing.assert_array_equal(cont.predict(X, output="raw"), plain.predict(X, output="raw"))
    lgb = pytest.importorskip("lightgbm")
    q = {**P, "verbose": -1, "num_threads": 1}
    l1 = lgb.train(q, lgb.Dataset(X, y, init_score=off), 5)
    l2 = lgb.train(q, lgb.Dataset(X, y, init_score=off), 5, init_model=l1)
    np.testing.assert_allclose(cont.predict(X, output="raw"), l2.predict(X, raw_score=True),
                               atol=1e-6)
    # XGBoost's names: the margins stay, the init model's trees add to them
    xp = {"objective": "reg:squarederror", "max_depth": 3}
    x1 = hw.train(xp, hw.Dataset(X, y, base_margin=off), 5)
    x2 = hw.train(xp, hw.Dataset(X, y, base_margin=off), 5, init_model=x1)
    x2_plain = hw.train(xp, hw.Dataset(X, y), 5, init_model=x1)
    assert np.abs(x2.predict(X) - x2_plain.predict(X)).max() > 0.1


# -- probe 54: LightGBM's objective names alone -----------------------------------------------
@pytest.mark.parametrize("objective", ["regression", "binary", "lambdarank"])
def test_lightgbms_objective_names_alone_bring_lightgbms_growth(objective):
    """``{"objective": "binary"}`` (LightGBM's name, nothing else) grew XGBoost's depth-6
    trees at a learning rate of 0.3: 2.2 off LightGBM's margins after 10 rounds (1.49 for
    ``lambdarank``). It now brings LightGBM's growth and defaults (31 leaves), as
    ``num_leaves`` does; ``max_leaves`` or ``grow_policy`` keep XGBoost's."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.integers(0, 10, size=(n, 4)).astype(float)
    y = X[:, 0] * 0.5 - (X[:, 1] > 4) * 2 + X[:, 2] * X[:, 3] * 0.05 + rng.normal(0, 1, n)
    y = {"binary": (y > 1).astype(float), "lambdarank": np.clip(np.round(y), 0, 4)}.get(
        objective, y)
    kw = {"group": [100] * 30} if objective == "lambdarank" else {}
    model = hw.train({"objective": objective}, hw.Dataset(X, y, **kw), 10)
    peer = lgb.train({"objective": objective, "verbose": -1, "num_threads": 1},
                     lgb.Dataset(X, y, **kw), 10)
    # (lambdarank: LightGBM's sigmoid table, not copied, drifts by 1e-5 in 10 rounds)
    np.testing.assert_allclose(model.predict(X, output="raw"), peer.predict(X, raw_score=True),
                               atol=1e-4 if objective == "lambdarank" else 1e-6)
    for xgb_growth in ({"max_leaves": 0}, {"grow_policy": "depthwise"}):
        other = hw.train({"objective": objective, **xgb_growth}, hw.Dataset(X, y, **kw), 10)
        assert other.params["max_depth"] == 6
        assert np.abs(other.predict(X, output="raw") - peer.predict(X, raw_score=True)).max() > 0.1


# -- probe 57: forests --------------------------------------------------------------------------
def test_a_forest_predicts_float32_rows_as_their_float64():
    """A node whose rows lack some values put its threshold at the mean of the two bin edges
    around the gap: on a grid of 0.1 exactly on a training value, whose float32 went the
    other way (688 of 2,000 rows changed, by up to 0.167). The threshold is now an edge, which
    lies between training values; scikit-learn's forests give the same predictions too."""
    rng = np.random.default_rng(0)
    X = np.round(rng.integers(0, 30, size=(2000, 4)) * 0.1, 1)
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + rng.normal(0, 0.1, 2000)
    reg = hw.RandomForestRegressor(n_estimators=20, random_state=0).fit(X, y)
    np.testing.assert_array_equal(reg.predict(X), reg.predict(X.astype(np.float32)))
    clf = hw.RandomForestClassifier(n_estimators=20, random_state=0).fit(X, y > np.median(y))
    np.testing.assert_array_equal(clf.predict_proba(X), clf.predict_proba(X.astype(np.float32)))


def test_a_scikit_learn_forests_parameters_are_taken():
    """A scikit-learn forest's ``get_params()`` was refused with Python's bare "unexpected
    keyword argument 'ccp_alpha'" though its values (``ccp_alpha=0.0``,
    ``monotonic_cst=None``) change nothing; ``criterion='friedman_mse'``, scikit-learn's other
    name of the squared error's splits, was refused. Values hardwood has no method for are
    named."""
    ensemble = pytest.importorskip("sklearn.ensemble")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] + rng.normal(0, 0.1, 300)
    for ours, theirs, target in ((hw.RandomForestRegressor, ensemble.RandomForestRegressor, y),
                                 (hw.RandomForestClassifier, ensemble.RandomForestClassifier,
                                  y > 0)):
        params = theirs(n_estimators=5).get_params()
        model = ours(**params).fit(X, target)
        assert model.get_params()["ccp_alpha"] == 0.0
        with pytest.raises(ValueError, match="do not prune by cost-complexity"):
            ours(n_estimators=5, ccp_alpha=0.01).fit(X, target)
        with pytest.raises(ValueError, match="monotonic_cst"):
            ours(n_estimators=5, monotonic_cst=[1, 0, 0, 0]).fit(X, target)
        ours(n_estimators=5, monotonic_cst=[0, 0, 0, 0]).fit(X, target)
        with pytest.raises(ValueError, match="monotonic_cst has 3 values for 4 features"):
            ours(n_estimators=5, monotonic_cst=[0, 0, 0]).fit(X, target)
    a = hw.RandomForestRegressor(n_estimators=5, criterion="friedman_mse", random_state=0)
    b = hw.RandomForestRegressor(n_estimators=5, random_state=0)
    np.testing.assert_array_equal(a.fit(X, y).predict(X), b.fit(X, y).predict(X))


# -- probe 55: out-of-core and Dask --------------------------------------------------------------
def test_a_dataset_from_batches_has_no_starting_margins(tmp_path):
    """``get_base_margin()`` and ``get_init_score()`` of a ``from_batches`` set raised
    ``AttributeError`` (in memory: None), so a custom metric written for XGBoost that reads
    them failed on batches only; an estimator given margins with such a set was told to give
    them when building it, which ``from_batches`` cannot."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(600, 3))
    y = X[:, 0] * 3 + X[:, 1]
    pages = hw.Dataset.from_batches(lambda: iter([(X[:300], y[:300]), (X[300:], y[300:])]),
                                    cache_dir=str(tmp_path / "pages"))
    assert pages.get_base_margin() is None and pages.get_init_score() is None
    seen = []

    def metric(pred, data):
        seen.append(data.get_base_margin())
        return "zero", 0.0

    hw.train({}, pages, 2, evals=[(pages, "train")], custom_metric=metric)
    assert seen == [None, None]
    with pytest.raises(ValueError, match="from_batches takes them in its batches"):
        hw.GBDTRegressor(n_estimators=2).fit(pages, base_margin=np.zeros(600))


@pytest.mark.parametrize("objective", ["reg:squarederror", "multi:softprob", "poisson"])
def test_batches_carry_starting_margins(objective, tmp_path):
    """``from_batches`` took no starting margins (probe 55): batches of
    ``(X, y, weight, base_margin)`` now carry them, and train the in-memory set's model."""
    rng = np.random.default_rng(4)
    n = 900
    X = rng.integers(0, 8, size=(n, 3)).astype(float)
    params = {"objective": objective, "max_depth": 3}
    if objective == "multi:softprob":
        y = (X[:, 0] % 3).astype(float)
        m = rng.normal(0, 0.5, size=(n, 3))
        params["num_class"] = 3
    elif objective == "poisson":
        y = rng.poisson(np.exp(0.2 * X[:, 0])).astype(float)
        m = rng.normal(0, 0.3, n)
        params = {"objective": "poisson", "num_leaves": 8}
    else:
        y = X[:, 0] + rng.normal(0, 0.5, n)
        m = rng.normal(0, 1, n)
    w = rng.uniform(0.5, 2, n)
    parts = [slice(0, 300), slice(300, 650), slice(650, n)]
    pages = hw.Dataset.from_batches(lambda: iter([(X[s], y[s], w[s], m[s]) for s in parts]),
                                    cache_dir=str(tmp_path / "pages"))
    np.testing.assert_array_equal(pages.get_base_margin(), np.reshape(m, (n, -1)))
    ours = hw.train(params, pages, 5)
    whole = hw.train(params, hw.Dataset(X, y, weight=w, base_margin=m), 5)
    np.testing.assert_allclose(ours.predict(X, base_margin=m), whole.predict(X, base_margin=m),
                               rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="give a base_margin in every batch or in none"):
        hw.Dataset.from_batches(lambda: iter([(X[:300], y[:300], None, m[:300]),
                                              (X[300:], y[300:])]),
                                cache_dir=str(tmp_path / "bad"))


# -- probe 56: explanations ----------------------------------------------------------------------
def test_importances_take_lightgbms_split_and_the_plots_count_the_predicting_rounds():
    """``Model.feature_importances('split')`` (LightGBM's name) was refused where
    ``plot_importance`` and the estimators took it. ``plot_importance`` takes
    ``iteration_range``, and the HTML report counts an early-stopped model's importances over
    the rounds it predicts with, as its SHAP summary: it counted every round beside it."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from hardwood import plot
    from hardwood.report import _importance_section

    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 5))
    y = X[:, 0] + 0.3 * X[:, 1] + rng.normal(0, 1, 3000)
    tr = hw.Dataset(X[:2000], y[:2000])
    model = hw.train({"max_depth": 3}, tr, 200,
                     valid_sets=[hw.Dataset(X[2000:], y[2000:], reference=tr)],
                     early_stopping_rounds=3)
    best = model.best_iteration + 1
    assert best < model.num_boosted_rounds
    np.testing.assert_array_equal(model.feature_importances("split"),
                                  model.feature_importances("weight"))
    ranged = model.feature_importances("weight", (0, best))
    assert not np.array_equal(ranged, model.feature_importances("weight"))
    ax = plot.plot_importance(model, "split", iteration_range=(0, best))
    np.testing.assert_allclose(sorted(b.get_width() for b in ax.patches),
                               sorted(ranged[ranged > 0]))
    html = _importance_section(model)
    assert f"Over rounds 1-{best}" in html
    assert f">{int(ranged.max())}<" in html


def test_leaf_output_checks_its_base_margin():
    """``predict(output='leaf', base_margin=...)`` took margins of the wrong length without a
    word; every other output named them."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    model = hw.train({"max_depth": 2}, hw.Dataset(X, X[:, 0]), 3)
    leaves = model.predict(X, output="leaf", base_margin=np.zeros(200))
    np.testing.assert_array_equal(leaves, model.predict(X, output="leaf"))
    with pytest.raises(ValueError, match="base_margin"):
        model.predict(X, output="leaf", base_margin=np.zeros(7))


def test_a_quantile_models_trees_are_titled_by_their_quantile():
    """``plot_tree`` titled the trees of a multi-quantile model "(class 1)"."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from hardwood import plot

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + rng.normal(size=300)
    model = hw.train({"objective": "reg:quantileerror", "quantile_alpha": [0.1, 0.5, 0.9],
                      "max_depth": 2}, hw.Dataset(X, y), 2)
    assert "(quantile 0.5)" in plot.plot_tree(model, 1).get_title()
    assert "(quantile 0.9)" in plot.plot_tree(hw.load(model.to_json()), 5).get_title()


def test_xgboosts_multi_quantile_model_imports():
    """XGBoost's model of several quantiles (``quantile_alpha`` a list: ``num_target`` 3, one
    tree a quantile a round) was refused as multi-target, though hardwood trains the same
    model; other multi-target models stay named."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    y = X[:, 0] + rng.normal(size=500)
    peer = xgb.train({"objective": "reg:quantileerror", "quantile_alpha": [0.1, 0.5, 0.9],
                      "max_depth": 3}, xgb.DMatrix(X, y), 5)
    model = hw.import_model(peer)
    assert model.n_outputs == 3 and model.params["quantile_alpha"] == [0.1, 0.5, 0.9]
    dm = xgb.DMatrix(X)
    np.testing.assert_allclose(model.predict(X), peer.predict(dm), atol=1e-5)
    np.testing.assert_allclose(model.predict(X, output="contrib"),
                               peer.predict(dm, pred_contribs=True), atol=1e-5)
    np.testing.assert_array_equal(hw.load(model.to_json()).predict(X), model.predict(X))
    two = xgb.train({"objective": "reg:squarederror", "max_depth": 2},
                    xgb.DMatrix(X, np.c_[y, -y]), 2)
    with pytest.raises(hw.ModelFormatError, match="num_target=2"):
        hw.import_model(two)


def test_an_imported_lightgbm_model_keeps_its_loss_and_unnamed_features_continue():
    """An imported LightGBM ``poisson`` model named XGBoost's ``count:poisson`` as its
    training objective, so continuing it with LightGBM's ``poisson`` was refused with advice
    to take XGBoost's capped loss; its Tweedie power and quantile were not read. A model of
    LightGBM's unnamed columns (Column_0, ...) could not continue on a numpy Dataset (f0, ...),
    though ``predict`` reads both by position."""
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = rng.poisson(np.exp(0.4 * X[:, 0])).astype(float)
    params = {"verbose": -1, "num_threads": 1, "num_leaves": 7}
    imported = {name: hw.import_model(lgb.train({**params, "objective": name, **extra},
                                                lgb.Dataset(X, y), 3))
                for name, extra in (("poisson", {}), ("tweedie", {"tweedie_variance_power": 1.3}),
                                    ("quantile", {"alpha": 0.3}))}
    assert imported["poisson"].params["objective"] == "poisson"
    assert imported["tweedie"].params["tweedie_variance_power"] == 1.3
    assert imported["quantile"].params["quantile_alpha"] == 0.3
    names = [f"Column_{j}" for j in range(3)]
    first = hw.train({"objective": "poisson", "num_leaves": 7},
                     hw.Dataset(pd.DataFrame(X, columns=names), y), 3)
    cont = hw.train({"objective": "poisson", "num_leaves": 7}, hw.Dataset(X, y), 3,
                    init_model=first)
    whole = hw.train({"objective": "poisson", "num_leaves": 7}, hw.Dataset(X, y), 6)
    np.testing.assert_allclose(cont.predict(X), whole.predict(X), rtol=1e-12)


def test_label_errors_name_the_objective_as_given():
    """LightGBM's ``tweedie`` and ``gamma`` were named ``reg:tweedie`` and ``reg:gamma`` in
    their label errors (probe 55)."""
    X = np.random.default_rng(0).normal(size=(50, 2))
    for name in ("tweedie", "gamma", "reg:tweedie"):
        with pytest.raises(ValueError, match=f"objective '{name}' needs labels >= 0"):
            hw.train({"objective": name}, hw.Dataset(X, X[:, 0]), 1)


# -- probe 58: this session's changes ------------------------------------------------------------
def test_a_lightgbm_rule_model_continued_under_xgboosts_is_scored_as_predict():
    """A model of LightGBM's rule (thresholds of ±1e-35) continued under XGBoost's growth
    scored its validation rows by their bins: RMSE 1.2555 logged, 1.2786 predicted."""
    rng = np.random.default_rng(1)
    n = 800
    X = rng.integers(1, 6, size=(n, 2)).astype(float)
    X[rng.random((n, 2)) < 0.2] = np.nan
    X[rng.random((n, 2)) < 0.2] = 0.0
    y = np.where(np.isnan(X[:, 0]), 6.0, np.nan_to_num(X[:, 0])) + rng.normal(size=n) * 0.3
    Xv = rng.integers(-2, 6, size=(300, 2)).astype(float) * 0.5
    Xv[rng.random((300, 2)) < 0.1] = np.nan
    Xv[rng.random((300, 2)) < 0.2] = 1e-36
    yv = np.where(np.isnan(Xv[:, 0]), 6.0, np.nan_to_num(Xv[:, 0])) + rng.normal(size=300) * 0.3
    ds = hw.Dataset(X, y)
    dv = hw.Dataset(Xv, yv, reference=ds)
    first = hw.train({"objective": "regression"}, ds, 5)
    assert any(np.any(np.abs(t.threshold[t.feature >= 0]) == np.float32(1e-35))
               for t in first.trees)
    for second in ({"objective": "regression", "max_leaves": 0},
                   {"objective": "reg:squarederror"}, {"objective": "regression"}):
        model = hw.train(second, ds, 3, init_model=first, valid_sets=[dv], valid_names=["v"])
        for r in range(3):
            pred = model.predict(Xv, iteration_range=(0, 6 + r))
            np.testing.assert_allclose(model.evals_result["v"]["rmse"][r],
                                       np.sqrt(np.mean((yv - pred) ** 2)), rtol=1e-12)


def test_xgboosts_sampling_names_under_lightgbms_objective_names_are_lightgbms():
    """Under LightGBM's objective names (its growth), ``subsample`` sampled every round where
    LightGBM, for which it is ``bagging_fraction``, samples none without ``bagging_freq``
    (0.55 apart); ``colsample_bytree`` rounded the feature count down, LightGBM's
    ``feature_fraction`` to nearest. LightGBM's ``min_split_gain``, ``num_leaf``, ``max_leaf``
    and ``max_leaf_nodes`` were unknown parameters."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.integers(0, 10, size=(n, 3)).astype(float)
    y = X[:, 0] * 0.5 - (X[:, 1] > 4) * 2 + X[:, 2] * 0.3 + rng.normal(0, 1, n)
    peer_params = {"verbose": -1, "num_threads": 1, "objective": "regression"}
    for extra in ({"subsample": 0.5}, {"colsample_bytree": 0.5, "seed": 3},
                  {"max_leaf": 7, "min_split_gain": 0.5}, {"num_leaf": 5},
                  {"max_leaf_nodes": 9}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = hw.train({"objective": "regression", **extra}, hw.Dataset(X, y), 5)
        peer = lgb.train({**peer_params, **extra}, lgb.Dataset(X, y), 5)
        if "colsample_bytree" in extra:  # (which features: each library's own draw)
            assert all(len(set(t.feature[t.feature >= 0])) <= 2 for t in ours.trees)
            assert max(len(set(t.feature[t.feature >= 0])) for t in ours.trees) == 2
            continue
        np.testing.assert_allclose(ours.predict(X), peer.predict(X), atol=1e-6)
    with pytest.warns(UserWarning, match="subsample is LightGBM's bagging_fraction"):
        hw.train({"objective": "regression", "subsample": 0.5}, hw.Dataset(X, y), 1)
    # beside LightGBM's estimators' subsample_freq (probe 60); under XGBoost's growth, the
    # estimators' among them, XGBoost's meaning (probe 61: the estimators could not sample)
    from hardwood.train.params import resolve_params
    p = resolve_params({"objective": "regression", "max_leaves": 7, "subsample": 0.3})
    assert p["subsample"] == 0.3
    est = hw.GBDTRegressor(objective="regression", subsample=0.3, n_estimators=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.fit(X, y)
    assert est.model_.params["subsample"] == 0.3
    p = resolve_params({"objective": "regression", "subsample": 0.5, "subsample_freq": 1,
                        "colsample_bytree": 0.5})
    assert (p["subsample"], p["colsample_bytree"], p["colsample_rounding"]) == (0.5, 0.5,
                                                                                 "nearest")
    with pytest.raises(ValueError, match="'num_leaf' and 'num_leaves' are the same setting"):
        hw.train({"num_leaf": 5, "num_leaves": 7}, hw.Dataset(X, y), 1)


# -- probe 59: extreme shapes and values ---------------------------------------------------------
@pytest.mark.parametrize("heavy_weight", [1e17, 1e30])
def test_light_rows_beside_heavy_ones_keep_the_bins(heavy_weight):
    """Weights of 1 and 1e17 on alternate rows collapsed every feature to 2 bins: each
    value's weight came from differences of one running sum, where 1 beside 1e17 is below
    an ulp, and the water level cancelled to 0. The boosted model and the forest were
    constant (RMSE 1.99 on the heavy rows where XGBoost's was 0.34, scikit-learn's forest
    0.03)."""
    from hardwood.data.binning import _numeric_edges

    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] * 2 + rng.normal(size=300) * 0.1
    heavy = np.arange(300) % 2 == 1
    w = np.where(heavy, heavy_weight, 1.0)
    ds = hw.Dataset(X, y, weight=w)
    assert ds.bin_mapper.n_value_bins.tolist() == [255] * 4
    # the 150 heavy values are cut apart, each from the next
    edges = _numeric_edges(X[:, 0], 255, w)
    hv = np.sort(X[heavy, 0])
    assert np.all(np.diff(np.searchsorted(edges, hv)) > 0)
    rmse = lambda p: float(np.sqrt(np.mean((p - y)[heavy] ** 2)))  # noqa: E731
    with pytest.warns(UserWarning, match="weights span more than 1e\\+15"):
        model = hw.train({}, ds, 5)
    assert rmse(model.predict(X)) < 0.5
    forest = hw.RandomForestRegressor(n_estimators=10, random_state=0).fit(X, y, sample_weight=w)
    assert rmse(forest.predict(X)) < 0.1


def test_max_bin_of_two_is_named():
    """``max_bin=2`` (which counts the missing values' bin) left one value bin per feature:
    no split, and a constant model without a word (RMSE 2.04 where XGBoost's was 1.17)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 5))
    y = X[:, 0] * 2
    for make in (lambda: hw.Dataset(X, y, max_bin=2),
                 lambda: hw.train({"max_bin": 2}, hw.Dataset(X, y), 1),
                 lambda: hw.GBDTRegressor(max_bin=2, n_estimators=2).fit(X, y),
                 lambda: hw.RandomForestRegressor(max_bin=2, n_estimators=2).fit(X, y)):
        with pytest.raises(ValueError, match=r"max_bin.*3.*missing values' bin|'max_bin' must be >= 3"):
            make()
    model = hw.train({}, hw.Dataset(X, y, max_bin=3), 3)
    assert np.unique(model.predict(X)).size > 1


def test_continuing_a_depthwise_model_under_a_lightgbm_objective_name_warns():
    """A model saved before LightGBM's objective names brought its growth ({"objective":
    "binary"}: XGBoost's depth-wise trees) continued under the same params added leaf-wise
    trees at another learning rate without a word (probe 58)."""
    X = np.random.default_rng(0).normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(float)
    old = hw.train({"objective": "binary", "grow_policy": "depthwise"}, hw.Dataset(X, y), 2)
    with pytest.warns(UserWarning, match="init_model grew XGBoost's depth-wise trees"):
        hw.train({"objective": "binary"}, hw.Dataset(X, y), 2, init_model=old)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hw.train({"objective": "binary", "grow_policy": "depthwise"}, hw.Dataset(X, y), 2,
                 init_model=old)


def test_weights_beyond_float64s_span_warn():
    """Three rows of weight 1e16 among 4,000 of weight 1: a node of light rows only got its
    gradient sums as its parent's less its sibling's, nothing but rounding, and leaves of
    1e33 without a word (probe 60; XGBoost's model stays sane). A warning now names the
    span; 1e15 still trains well and quietly."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(4000, 2))
    y = X @ np.array([1.0, -2.0])
    w = np.ones(4000)
    w[:3] = 1e16
    with pytest.warns(UserWarning, match="cannot hold the light rows"):
        hw.train({"max_depth": 4}, hw.Dataset(X, y, weight=w), 2)
    w[:3] = 1e15
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = hw.train({"max_depth": 4}, hw.Dataset(X, y, weight=w), 30)
    assert np.sqrt(np.mean((model.predict(X) - y)[3:] ** 2)) < 0.5


@pytest.mark.parametrize("objective", ["poisson", "multiclass"])
def test_an_imported_lightgbm_model_continues_as_lightgbms(objective):
    """LightGBM writes its thresholds one ulp above the midpoints (20.500000000000004), so
    every imported LightGBM model was refused as splitting inside a bin of the Dataset, even
    on the data it was trained on (probe 60). A threshold within a few ulps of an edge is now
    that edge; the continued model is LightGBM's continued model."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 40, size=(2000, 4)).astype(float)
    y = np.abs(X[:, 0] / 10 + rng.normal(size=2000)).round()
    params = {"objective": objective, "verbose": -1, "min_data_in_bin": 1, "num_threads": 1}
    if objective == "multiclass":
        y, params["num_class"] = y % 3, 3
    first = lgb.train(params, lgb.Dataset(X, y), 10)
    peer = lgb.train(params, lgb.Dataset(X, y), 10, init_model=first)
    ours = hw.train({"objective": objective}, hw.Dataset(X, y), 10,
                    init_model=hw.import_model(first))
    np.testing.assert_allclose(ours.predict(X), peer.predict(X), atol=1e-7)
