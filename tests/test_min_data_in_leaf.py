"""LightGBM's ``min_data_in_leaf`` (aliases ``min_child_samples``, ``min_data_per_leaf``,
``min_data``): both children of a split hold at least that many rows, counted from the
hessians as LightGBM counts them (``backends/split._scan_numeric_bounded``). It was refused
("hardwood has no least row count per leaf") until session 24."""
import numpy as np
import pytest

import hardwood as hw


def _data(n=3000, seed=0, nan=0.05):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 30, size=(n, 5)).astype(float)  # LightGBM's bins are hardwood's
    X[rng.random(X.shape) < nan] = np.nan
    Z = np.nan_to_num(X)
    y = np.sin(Z[:, 0] / 3) + Z[:, 1] / 10 * (Z[:, 2] > 15) + rng.normal(0, .3, n)
    return X, y


@pytest.mark.parametrize("min_data", [5, 20, 100])
def test_equals_lightgbms_trees_for_squared_error(min_data):
    """Where every row's hessian is equal, LightGBM's estimated counts are the rows
    themselves: its trees, to float rounding, over 30 rounds with missing values."""
    lgb = pytest.importorskip("lightgbm")
    X, y = _data()
    params = {"objective": "regression", "num_leaves": 31, "min_data_in_leaf": min_data}
    b = lgb.train(dict(params, verbose=-1, max_bin=255),
                  lgb.Dataset(X, y, params={"max_bin": 255}), 30)
    m = hw.train(params, hw.Dataset(X, y, max_bin=255), 30)
    np.testing.assert_allclose(m.predict(X), b.predict(X), rtol=0, atol=1e-6)


@pytest.mark.parametrize("params", [{"max_depth": 6},
                                    {"num_leaves": 31, "objective": "regression"},
                                    {"max_depth": 4, "monotone_constraints": [1, 0, 0, 0, 0]}])
def test_every_leaf_holds_the_least_rows_and_a_loose_bound_changes_nothing(params):
    X, y = _data(seed=1)
    ds = hw.Dataset(X, y)
    free = hw.train(dict(params, min_data_in_leaf=0), ds, 10)  # (num_leaves brings 20)
    loose = hw.train(dict(params, min_data_in_leaf=1), ds, 10)
    np.testing.assert_array_equal(loose.predict(X), free.predict(X))
    for k in (50, 300):
        m = hw.train(dict(params, min_child_samples=k), ds, 10)
        assert min(int(t.count[t.feature < 0].min()) for t in m.trees) >= k
        assert any(t.n_leaves > 1 for t in m.trees)


def test_estimators_take_min_child_samples_and_bad_values_are_named():
    X, y = _data(n=800, seed=2)
    est = hw.GBDTRegressor(n_estimators=5, min_child_samples=120).fit(X, y)
    assert min(int(t.count[t.feature < 0].min()) for t in est.model_.trees) >= 120
    assert est.model_.params["min_data_in_leaf"] == 120
    for bad in (-1, 2.5, "20"):
        with pytest.raises((ValueError, TypeError), match="min_data_in_leaf"):
            hw.train({"min_data_in_leaf": bad}, hw.Dataset(X, y), 2)


@pytest.mark.parametrize("params", [
    {"num_leaves": 31, "objective": "regression", "min_data_in_leaf": 50},
    {"max_depth": 6, "objective": "binary:logistic", "min_data_in_leaf": 30},
    {"num_leaves": 63, "objective": "binary", "min_data_in_leaf": 20, "reg_alpha": 0.5},
    {"max_depth": 4, "min_data_in_leaf": 40, "monotone_constraints": [1, 0, 0, 0, 0]}])
def test_the_fused_kernel_and_the_learner_grow_the_same_trees(params, monkeypatch):
    """The fused kernel counts rows as the tree learner does (its naive twin here)."""
    from hardwood.train import grower

    X, y = _data(n=4000, seed=3)
    if "binary" in params.get("objective", ""):
        y = (y > np.median(y)).astype(float)
    ds = hw.Dataset(X, y)
    monkeypatch.setattr(grower, "FUSED", True)  # (where the tree may take it: unconstrained)
    fused = hw.train(params, ds, 12)
    monkeypatch.setattr(grower, "FUSED", False)
    learner = hw.train(params, ds, 12)
    np.testing.assert_array_equal(fused.predict(X), learner.predict(X))
    for a, b in zip(fused.trees, learner.trees):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.threshold, b.threshold)
