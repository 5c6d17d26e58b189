"""``missing_rule``: where splits send the missing values. XGBoost's rule (the default) sends
them where the gain is larger, and right at a node without any. Under LightGBM's growth
(``num_leaves``) they follow LightGBM's rule (``backends/split.LGB_MISSING``): its reverse
scan (missing left) first at every node, and a field without missing values in training
reads them as 0.0. Before session 25 hardwood applied XGBoost's rule under LightGBM's names
too: 5,365 of 20,000 new rows with missing values predicted otherwise than LightGBM (up to
16 apart), and ``min_data_in_leaf`` counted rows where LightGBM does not (0.34 off its
probabilities with weights)."""
from __future__ import annotations

import numpy as np
import pytest

import hardwood as hw


def _data(seed=0, n=3000, d=5, nan_fields=(0, 1), binary=False):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 13, size=(n, d)).astype(float)  # few values: the same bins in both
    y = np.sin(X[:, 0]) + (X[:, 1] > 6) * X[:, 2] + 0.5 * X[:, 3] + rng.normal(0, .3, n)
    for j in nan_fields:
        X[rng.random(n) < 0.1, j] = np.nan
    if binary:
        y = (y > np.median(y)).astype(float)
    return X, y


def _new_rows(seed, d=5):
    rng = np.random.default_rng(seed)
    G = rng.integers(0, 13, size=(20000, d)).astype(float)
    G[rng.random(G.shape) < 0.15] = np.nan
    return G


def _pair(lgb, params, X, y, w=None, rounds=10):
    theirs = lgb.train(dict(params, verbose=-1, num_threads=1, min_data_in_bin=1),
                       lgb.Dataset(X, y, weight=w, params={"max_bin": 255,
                                                           "min_data_in_bin": 1}), rounds)
    ours = hw.train(params, hw.Dataset(X, y, weight=w, max_bin=255), rounds)
    return ours, theirs


@pytest.mark.parametrize("nan_fields", [(0, 1), ()])
def test_new_rows_with_missing_values_go_where_lightgbms_go(nan_fields):
    lgb = pytest.importorskip("lightgbm")
    X, y = _data(nan_fields=nan_fields)
    params = dict(objective="regression", num_leaves=31, learning_rate=0.3, lambda_l2=1.0,
                  min_data_in_leaf=0, max_bin=255)
    ours, theirs = _pair(lgb, params, X, y)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-6)
    G = _new_rows(1)
    np.testing.assert_allclose(ours.predict(G), theirs.predict(G), rtol=0, atol=1e-6)
    assert ours.params["missing_rule"] == "lightgbm"


def test_a_field_without_missing_values_reads_them_as_zero():
    """LightGBM's missing_type None: a missing value at prediction is 0.0."""
    X, y = _data(nan_fields=(0,))
    m = hw.train({"objective": "regression", "num_leaves": 31}, hw.Dataset(X, y), 10)
    G = _new_rows(2)
    G[:, 0] = np.nan_to_num(G[:, 0], nan=4.0)  # field 0 had missing values: not this rule
    zero = np.where(np.isnan(G), 0.0, G)
    np.testing.assert_array_equal(m.predict(G), m.predict(zero))
    xgb_rule = hw.train({"objective": "regression", "num_leaves": 31, "missing_rule": "xgboost"},
                        hw.Dataset(X, y), 10)
    assert not np.array_equal(xgb_rule.predict(G), xgb_rule.predict(zero))


@pytest.mark.parametrize("binary,weighted,leaves", [(False, True, 31), (True, False, 31),
                                                    (True, True, 31), (True, True, 255)])
def test_min_data_in_leaf_counts_as_lightgbms_where_hessians_differ(binary, weighted, leaves):
    """LightGBM's forward scan of a field with missing values counts the rows left of a
    threshold as the node's rest where it leaves its bin 0 out of the histograms
    (``LGB_MISSING_BIN0``), and a field without any it scans in reverse only."""
    lgb = pytest.importorskip("lightgbm")
    X, y = _data(seed=3, binary=binary)
    w = np.random.default_rng(4).uniform(0.2, 3, len(y)) if weighted else None
    params = dict(objective="binary" if binary else "regression", num_leaves=leaves,
                  learning_rate=0.3, lambda_l2=1.0, max_bin=255,
                  min_data_in_leaf=5 if leaves == 255 else 20)
    ours, theirs = _pair(lgb, params, X, y, w, rounds=30)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-6)


@pytest.mark.parametrize("params", [
    {"objective": "regression", "num_leaves": 31},
    {"objective": "binary", "num_leaves": 15, "min_data_in_leaf": 40},
    {"objective": "regression", "num_leaves": 31, "monotone_constraints": [1, 0, 0, 0, 0]},
    {"objective": "regression", "max_depth": 4, "missing_rule": "lightgbm",
     "max_bin": 64}])
def test_the_fused_kernel_and_the_learner_apply_the_rule_alike(params, monkeypatch):
    from hardwood.train import grower

    X, y = _data(seed=5, binary=params["objective"] == "binary", nan_fields=(0, 2))
    X[:, 3] = X[:, 3] * 7.3 - 20  # many values, some below 0: the bin of 0.0 is not bin 0
    out = []
    for fused in (True, False):
        monkeypatch.setattr(grower, "FUSED", fused)
        out.append(hw.train(params, hw.Dataset(X, y, max_bin=params.get("max_bin", 256)), 8))
    for a, b in zip(out[0].trees, out[1].trees):
        for name in ("feature", "left", "right", "default_left"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        np.testing.assert_array_equal(a.threshold, b.threshold)
        np.testing.assert_allclose(a.value, b.value, rtol=0, atol=1e-12)


def test_a_bad_missing_rule_is_named():
    X, y = _data(n=300)
    with pytest.raises(ValueError, match="missing_rule must be one of"):
        hw.train({"missing_rule": "left"}, hw.Dataset(X, y), 1)


@pytest.mark.parametrize("vals", [[7.0], [1.0, 2.0, 3.0], [-3.0], [-3.0, 1.0],
                                  [-4.0, -2.0, 1.0, 2.0], [-2.0, 0.0, 2.0]])
@pytest.mark.parametrize("with_nan", [True, False])
def test_thresholds_next_to_zero_are_lightgbms(vals, with_nan):
    """LightGBM gives 0.0 a bin of its own, edges -1e-35 and +1e-35, even where no value is
    0.0: a split of the missing values against every value sent new values below a positive
    field's least (or above a negative field's greatest) with the values, where LightGBM
    sends them with the missing ones (4,000 of 20,000 new rows, up to 8 apart); a missing
    value read as 0.0 between a negative and a positive value went right, LightGBM's left;
    new values between the midpoint and 0.0 went the other way (probe 46)."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.integers(0, 13, size=(n, 2)).astype(float)
    X[:, 1] = rng.choice(vals, n)
    if with_nan:
        X[rng.random(n) < 0.5, 1] = np.nan
    y = np.isnan(X[:, 1]) * 3.0 + np.nan_to_num(X[:, 1]) + rng.normal(0, .1, n)
    p = dict(objective="regression", num_leaves=4, learning_rate=0.3, min_data_in_leaf=20)
    theirs = lgb.train(dict(p, verbose=-1, min_data_in_bin=1), lgb.Dataset(X, y), 3)
    ours = hw.train(p, hw.Dataset(X, y), 3)
    G = np.array([[1, v] for v in (-5.0, -1.0, -0.3, -1e-35, 0.0, 1e-35, 1.1e-35, 0.3, 0.5,
                                   1.0, 3.0, 7.0, np.nan)])  # (LightGBM's edges: float32)
    np.testing.assert_allclose(ours.predict(G), theirs.predict(G), rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-6)


def test_a_positive_field_whose_least_value_holds_most_rows_scans_as_lightgbms():
    """Where a field with missing values has only values above 0, LightGBM's bin 0 is its
    empty bin of 0.0, and its most frequent bin the least value's when that holds 70% of the
    rows: hardwood took its own bin 0 (that value's) for LightGBM's, counted
    min_data_in_leaf by the other scan's rule, and the training rows' probabilities were
    0.037 off LightGBM's with its defaults alone (probe 46)."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(1)
    n = 3000
    X = rng.integers(0, 13, size=(n, 3)).astype(float)
    X[:, 0] = np.where(rng.random(n) < 0.8, 1.0, rng.integers(2, 6, n))
    X[rng.random(n) < 0.1, 0] = np.nan
    y = ((X[:, 1] > 6) ^ (np.nan_to_num(X[:, 0]) > 2) ^ (rng.random(n) < 0.2)).astype(float)
    p = {"objective": "binary", "num_leaves": 31}
    theirs = lgb.train(dict(p, verbose=-1, min_data_in_bin=1), lgb.Dataset(X, y), 30)
    ours = hw.train(p, hw.Dataset(X, y), 30)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-6)


def test_out_of_core_sampled_rounds_keep_lightgbms_edges(tmp_path):
    """A round's sample compacted out of core grows on a grower of its own: it takes the
    training rows' missing rules and LightGBM's edges next to 0.0, and its trees are the
    in-memory training's."""
    rng = np.random.default_rng(0)
    n = 4000
    X = rng.integers(-3, 4, size=(n, 3)).astype(float)
    X[X == 0] = 1.0  # no 0.0: a threshold between -1 and 1 is LightGBM's +-1e-35
    X[rng.random(n) < 0.1, 1] = np.nan
    y = (X[:, 0] > 0) * 2.0 + np.nan_to_num(X[:, 1]) + rng.normal(0, .3, n)
    p = {"objective": "regression", "num_leaves": 8, "sampling_method": "goss",
         "top_rate": 0.3, "other_rate": 0.2, "learning_rate": 0.5}  # (GOSS from round 2)
    mem = hw.train(p, hw.Dataset(X, y), 6)
    disk = hw.Dataset.from_batches(lambda: iter([(X[:2000], y[:2000]), (X[2000:], y[2000:])]),
                                   str(tmp_path), page_bytes=4000)
    assert len(disk.pages_on_disk[0]) > 1
    ooc = hw.train(p, disk, 6)
    for a, b in zip(mem.trees, ooc.trees):
        np.testing.assert_array_equal(a.threshold, b.threshold)
        np.testing.assert_array_equal(a.default_left, b.default_left)
    edge = np.float32(1e-35)  # (LightGBM's float, widened)
    assert any(np.any(np.abs(t.threshold[t.feature == 0]) == edge) for t in ooc.trees)
    G = np.array([[0.0, np.nan, 0.0], [-0.5, 0.0, 0.5], [0.5, -0.5, 0.0]])
    np.testing.assert_array_equal(mem.predict(G), ooc.predict(G))


def test_sparse_matrices_take_lightgbms_rule_and_edges():
    """A matrix binned sparse (``sparse=True``) records its values around 0.0 too (its
    absent entries are zeros): a missing value read as 0.0 on a field with negative values
    went to hardwood's lowest bin, and thresholds next to 0.0 were midpoints."""
    sp = pytest.importorskip("scipy.sparse")
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    n = 3000
    D = rng.integers(-4, 5, size=(n, 3)).astype(float)
    D[rng.random(D.shape) < 0.5] = 0.0
    y = (D[:, 0] > 0) * 2 + D[:, 1] * 0.5 + rng.normal(0, .2, n)
    X = sp.csr_matrix(D)
    p = {"objective": "regression", "num_leaves": 8}
    theirs = lgb.train(dict(p, verbose=-1, min_data_in_bin=1), lgb.Dataset(X, y), 5)
    ds = hw.Dataset(X, y, sparse=True)
    assert ds.sparse_bins is not None
    ours = hw.train(p, ds, 5)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-6)
    G = np.array([[np.nan, 1, 1], [1, np.nan, 1], [-0.5, 0.5, np.nan], [0.3, -0.3, 0],
                  [-1e-35, 1e-35, 0.0]])
    np.testing.assert_allclose(ours.predict(G), theirs.predict(G), rtol=0, atol=1e-6)
