"""Hostile input (issue 12): the defects a newcomer's probe found, one test each.

Importer defects are tested in test_importers.py and test_import_fuzz.py, the CLI's in
test_cli.py, the kernel cache folder's in test_cache_dir.py. The rules these tests hold are
listed in docs/checks.md ("What hardwood checks")."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest

import hardwood
from hardwood import (GBDTClassifier, GBDTRegressor, RandomForestClassifier,
                      RandomForestRegressor)

RUNTIMES = ["naive", "struct", "struct+", "pred", "vpred", "quickscorer", "codegen", "auto"]


@pytest.fixture(scope="module")
def reg():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) + rng.normal(scale=0.1, size=1500)
    return hardwood.train({"max_depth": 4}, hardwood.Dataset(X, y), num_boost_round=6), X


def _huge(A):
    """±inf replaced by the largest finite values of A's dtype."""
    big = np.finfo(A.dtype).max
    return np.where(np.isposinf(A), big, np.where(np.isneginf(A), -big, A)).astype(A.dtype)


# -- 2, 15: estimators refuse objectives of the other kind --------------------------------------
def test_classifier_refuses_regression_objectives():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(120, 3)), np.array(["a", "b", "c"])[rng.integers(0, 3, 120)]
    for obj in ("reg:squarederror", "reg:absoluteerror", "regression", "reg:pseudohubererror"):
        with pytest.raises(ValueError, match="GBDTClassifier trains classification objectives"):
            GBDTClassifier(objective=obj, n_estimators=2).fit(X, y)
    for obj in ("binary:logistic", "multi:softprob", "multiclass"):
        with pytest.raises(ValueError, match="GBDTRegressor trains regression objectives"):
            GBDTRegressor(objective=obj, n_estimators=2).fit(X, rng.random(120))


def test_classifier_binary_objective_on_three_classes_says_what_to_do():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(120, 3)), rng.integers(0, 3, 120)
    with pytest.raises(ValueError, match="is for two classes, but y has 3") as e:
        GBDTClassifier(objective="binary:logistic", n_estimators=2).fit(X, y)
    assert "use GBDTClassifier" not in str(e.value)
    clf = GBDTClassifier(objective="multi:softprob", n_estimators=2).fit(X, y)
    assert clf.predict_proba(X).shape == (120, 3)


# -- 3: column names ---------------------------------------------------------------------------
def test_permuted_default_names_are_refused(reg):
    m, X = reg
    df = pd.DataFrame(X, columns=["f0", "f1", "f2", "f3"])
    np.testing.assert_array_equal(m.predict(df), m.predict(X))  # the training order: fine
    for rt in (None, "auto", "vpred"):
        with pytest.raises(ValueError, match="column 'f3' is at position 0"):
            m.predict(df[["f3", "f2", "f1", "f0"]], runtime=rt)
        with pytest.raises(ValueError, match="position"):
            m.predict(df[["f0", "f1", "f3", "f2"]], runtime=rt)


def test_other_names_on_an_unnamed_model_warn_and_read_by_position(reg):
    m, X = reg
    with pytest.warns(UserWarning, match="trained without names"):
        p = m.predict(pd.DataFrame(X, columns=list("abcd")))
    np.testing.assert_array_equal(p, m.predict(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pandas' default columns, in order: no warning
        np.testing.assert_array_equal(m.predict(pd.DataFrame(X)), p)
    with pytest.raises(ValueError, match="column '3' is at position 0"):
        m.predict(pd.DataFrame(X)[[3, 2, 1, 0]])


def test_named_model_refuses_reordered_columns():
    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.normal(size=(200, 3)), columns=["x", "y", "z"])
    m = hardwood.train({"max_depth": 2}, hardwood.Dataset(df, df.x * 2), num_boost_round=2)
    with pytest.raises(ValueError, match="different order"):
        m.predict(df[["z", "y", "x"]])
    with pytest.raises(ValueError, match="missing"):
        m.predict(df.rename(columns={"x": "w"}))


# -- 4: category types -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def int_categories():
    rng = np.random.default_rng(4)
    c = rng.integers(1, 4, 300)
    df = pd.DataFrame({"c": pd.Categorical(c), "x": rng.normal(size=300)})
    m = hardwood.train({"max_depth": 2, "max_cat_to_onehot": 1}, hardwood.Dataset(df, c * 1.0),
                       num_boost_round=3)
    return m, df


@pytest.mark.parametrize("column", [pd.Categorical(["1", "2", "3"] * 3),
                                    pd.Series(["1", "2", "3"] * 3)])
def test_category_type_mismatch_is_an_error(int_categories, column):
    m, _ = int_categories
    bad = pd.DataFrame({"c": column, "x": np.zeros(9)})
    for rt in (None, "auto"):
        with pytest.raises(TypeError, match="holds strings .* model's categories are numbers"):
            m.predict(bad, runtime=rt)


def test_mostly_unseen_categories_warn(int_categories):
    m, df = int_categories
    with pytest.warns(UserWarning, match="3 of 4 values of categorical column 'c'"):
        m.predict(pd.DataFrame({"c": pd.Categorical([7, 8, 9, 1]), "x": np.zeros(4)}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.predict(df)  # all seen: no warning


def test_fractional_category_codes_are_an_error(int_categories):
    """XGBoost and LightGBM truncate 2.5 to category 2; matched by value it would be an unseen
    category. Either way the answer would differ silently from a peer's, so it is refused."""
    m, _ = int_categories
    X = np.array([[1.0, 0.0], [2.5, 0.0]])
    for rt in (None, "auto"):
        with pytest.raises(ValueError, match="categorical feature 'c' holds the fractional "
                                             "value 2.5"):
            m.predict(X, runtime=rt)
    m.predict(np.array([[1.0, 0.0], [2.0, 0.0], [np.nan, 0.0]]))  # integer codes and NaN


# -- 6, 16: parameters and overflow ------------------------------------------------------------
@pytest.mark.parametrize("params, match", [
    ({"learning_rate": float("inf")}, "learning_rate.*finite"),
    ({"reg_lambda": float("nan")}, "reg_lambda.*finite"),
    ({"gamma": float("inf")}, "gamma.*finite"),
    ({"base_score": "x"}, "base_score"),
    ({"base_score": float("inf")}, "base_score.*finite"),
])
def test_parameters_must_be_finite_and_named(params, match):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 2))
    with pytest.raises((ValueError, TypeError), match=match):
        hardwood.train(params, hardwood.Dataset(X, X[:, 0]), num_boost_round=1)


@pytest.mark.parametrize("scale", [1e300, 1e308])
def test_overflowing_labels_stop_training_with_a_clear_error(scale):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 2))
    y = np.where(X[:, 0] > 0, scale, 0.0)
    with pytest.raises(FloatingPointError, match="not finite|non-finite|diverged"):
        hardwood.train({}, hardwood.Dataset(X, y), num_boost_round=3)


def test_save_refuses_a_model_that_would_not_load(reg, tmp_path):
    m, _ = reg
    import copy
    bad = copy.deepcopy(m)
    bad.trees[0].value[bad.trees[0].feature < 0] = np.nan
    path = tmp_path / "bad.json"
    with pytest.raises(ValueError, match="would not load back"):
        bad.save(path)
    assert not path.exists()
    m.save(path)
    np.testing.assert_array_equal(hardwood.load(path).predict(reg[1]), m.predict(reg[1]))


# -- 7: ±inf, the same rule on every path ------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_inf_is_an_ordinary_value_on_every_path(reg, dtype):
    m, X = reg
    rng = np.random.default_rng(7)
    A = X[:600].astype(dtype)
    A[rng.random(A.shape) < 0.15] = np.inf
    A[rng.random(A.shape) < 0.15] = -np.inf
    ref = m.predict(_huge(A))
    np.testing.assert_array_equal(m.predict(A), ref)
    np.testing.assert_array_equal(m.predict(pd.DataFrame(A)), ref)
    for rt in RUNTIMES:
        c = hardwood.compile(m, rt)
        for rows in (A, A[:1], A[:7]):
            np.testing.assert_allclose(c.predict(rows), m.predict(_huge(rows)), rtol=1e-12,
                                       err_msg=rt)
    est = GBDTRegressor(n_estimators=3).fit(X, np.nan_to_num(X[:, 0]))
    np.testing.assert_array_equal(est.predict(A.astype(np.float64)),
                                  est.predict(_huge(A.astype(np.float64))))


def test_inf_in_a_categorical_feature_or_training_data_is_an_error(int_categories):
    m, df = int_categories
    bad = df.copy()
    bad["c"] = bad["c"].astype(float)
    bad.loc[3, "c"] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        m.predict(bad)
    X = np.ones((10, 2))
    X[2, 1] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        hardwood.Dataset(X, np.ones(10))


def test_forests_take_inf_as_the_boosted_models_do():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 3))
    rf = RandomForestRegressor(n_estimators=4, random_state=0).fit(X, X[:, 0])
    A = X.copy()
    A[::7, 0], A[::5, 1] = np.inf, -np.inf
    np.testing.assert_array_equal(rf.predict(A), rf.predict(_huge(A)))
    np.testing.assert_allclose(rf.model_.predict(A), rf.predict(A), rtol=1e-12)


# -- 9: read-only and memory-mapped input ------------------------------------------------------
def _read_only_variants(X, tmp_path):
    ro = X.copy()
    ro.setflags(write=False)
    path = tmp_path / "X.npy"
    np.save(path, X)
    mm = np.load(path, mmap_mode="r")
    ro32 = X.astype(np.float32)
    ro32.setflags(write=False)
    return [ro, mm, ro32, ro[:1], ro[:5], mm[:300]]


def test_read_only_and_memory_mapped_input_on_every_runtime(reg, tmp_path):
    m, X = reg
    for A in _read_only_variants(X, tmp_path):
        assert not A.flags.writeable
        ref = m.predict(np.array(A))
        np.testing.assert_array_equal(m.predict(A), ref)
        for rt in RUNTIMES:
            c = hardwood.compile(m, rt)
            for output in ("value", "leaf"):
                np.testing.assert_allclose(c.predict(A, output=output),
                                           m.predict(np.array(A), output=output, runtime="naive"),
                                           rtol=1e-12,
                                           err_msg=f"{rt} {A.shape} {A.dtype}")


def test_read_only_input_trains_and_forests(reg, tmp_path):
    _, X = reg
    y = np.nan_to_num(X[:, 0])
    ro_y = y.copy()
    ro_y.setflags(write=False)
    for A in _read_only_variants(X, tmp_path)[:3]:
        m = hardwood.train({"max_depth": 3}, hardwood.Dataset(A, ro_y), num_boost_round=2)
        assert np.all(np.isfinite(m.predict(A)))
        rf = RandomForestClassifier(n_estimators=3, random_state=0).fit(A, ro_y > 0)
        assert rf.predict_proba(A).shape == (X.shape[0], 2)


# -- 11: multiclass labels ---------------------------------------------------------------------
@pytest.mark.parametrize("labels, match", [
    ([3, 7, 100], "codes are absent"),
    ([0, 1, 1e9], "largest label is 1e\\+09"),
    ([0, 1, 2.5], "integer labels"),
    ([0, 1, -1], "integer labels"),
])
def test_multiclass_labels_must_be_codes(labels, match):
    rng = np.random.default_rng(9)
    y = np.array(labels * 20, dtype=float)
    X = rng.normal(size=(y.size, 2))
    with pytest.raises(ValueError, match=match):
        hardwood.train({"objective": "multi:softprob"}, hardwood.Dataset(X, y), 2)


def test_multiclass_with_num_class_allows_absent_classes():
    rng = np.random.default_rng(10)
    y = np.array([0, 1, 3] * 20, dtype=float)
    X = rng.normal(size=(y.size, 2))
    m = hardwood.train({"objective": "multi:softprob", "num_class": 4}, hardwood.Dataset(X, y), 2)
    assert m.predict(X).shape == (60, 4)
    with pytest.raises(ValueError, match="num_class"):
        hardwood.train({"objective": "multi:softprob", "num_class": 3}, hardwood.Dataset(X, y), 2)
    with pytest.raises(ValueError, match="num_class"):
        hardwood.train({"objective": "multi:softprob", "num_class": 10**9},
                       hardwood.Dataset(X, y), 2)


# -- 12: concurrent predict under Numba's workqueue layer --------------------------------------
_CONCURRENT = textwrap.dedent("""
    import threading
    import numba
    import numpy as np
    import hardwood
    from hardwood import RandomForestClassifier
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5))
    y = X[:, 0] + rng.normal(size=3000)
    m = hardwood.train({"max_depth": 4}, hardwood.Dataset(X, y), num_boost_round=4)
    ref = m.predict(X)
    compiled = [hardwood.compile(m, rt) for rt in ("auto", "naive", "struct+")]
    rf = RandomForestClassifier(n_estimators=8, random_state=0).fit(X, y > 0)
    rf_ref = rf.predict_proba(X)
    bad = []

    def work(i):
        for r in range(4):
            for c in compiled:
                bad.append(not np.allclose(c.predict(X), ref))
            bad.append(not np.allclose(m.predict(X), ref))
            bad.append(not np.allclose(rf.predict_proba(X), rf_ref))
            if r == i % 4:
                m2 = hardwood.train({"max_depth": 4}, hardwood.Dataset(X, y), num_boost_round=4)
                bad.append(not np.allclose(m2.predict(X), ref))
                rf2 = RandomForestClassifier(n_estimators=8, random_state=0).fit(X, y > 0)
                bad.append(not np.allclose(rf2.predict_proba(X), rf_ref))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("LAYER", numba.threading_layer(), "BAD", sum(bad), "OF", len(bad))
""")


@pytest.mark.parametrize("layer", ["workqueue", "default"])
def test_concurrent_calls_from_python_threads(layer):
    """Under workqueue (Numba's fallback without OpenMP or TBB) concurrent parallel launches
    used to abort the process (SIGABRT); hardwood now serialises them there."""
    env = dict(os.environ, NUMBA_THREADING_LAYER=layer)
    r = subprocess.run([sys.executable, "-c", _CONCURRENT], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert "BAD 0 OF" in r.stdout, r.stdout
    if layer == "workqueue":
        assert "LAYER workqueue" in r.stdout


# -- 14: iteration_range -----------------------------------------------------------------------
@pytest.mark.parametrize("objective", ["reg:squarederror", "multi:softprob"])
def test_empty_iteration_range_on_every_runtime(objective):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 3))
    y = rng.integers(0, 3, 400).astype(float) if objective == "multi:softprob" else X[:, 0]
    m = hardwood.train({"objective": objective, "max_depth": 3}, hardwood.Dataset(X, y), 4)
    for rt in RUNTIMES:
        c = hardwood.compile(m, rt, iteration_range=(2, 2))
        for rows in (X, X[:1]):
            for output in ("value", "raw", "leaf"):
                got = c.predict(rows, output=output)
                ref = m.predict(rows, output=output, iteration_range=(2, 2), runtime="naive")
                assert got.shape == ref.shape, (rt, output)
                np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg=rt)


@pytest.mark.parametrize("bad", [(1.5, 3), (0, 2.0), (True, 2), ("0", 2)])
def test_iteration_range_must_be_integers(reg, bad):
    m, X = reg
    with pytest.raises(TypeError, match="integers"):
        m.predict(X, iteration_range=bad)
    with pytest.raises(TypeError, match="integers"):
        hardwood.compile(m, "vpred", iteration_range=bad)


# -- 17: forests on category columns -----------------------------------------------------------
def test_forests_take_category_columns():
    rng = np.random.default_rng(12)
    n = 400
    df = pd.DataFrame({"x": rng.normal(size=n),
                       "c": pd.Categorical(rng.choice(["red", "green", "blue"], n))})
    y = (df.c == "red").to_numpy() | (df.x > 1).to_numpy()
    rf = RandomForestClassifier(n_estimators=10, random_state=0, oob_score=True).fit(df, y)
    assert rf.score(df, y) > 0.95
    assert rf.oob_score_ > 0.9
    np.testing.assert_allclose(rf.model_.predict(df)[:, 1], rf.predict_proba(df)[:, 1],
                               rtol=1e-12)
    # the categories are matched by value, so another category order predicts the same
    other = df.assign(c=df.c.cat.reorder_categories(["red", "blue", "green"]))
    np.testing.assert_array_equal(rf.predict_proba(other), rf.predict_proba(df))
    reg = RandomForestRegressor(n_estimators=5, random_state=0).fit(df, df.x)
    assert reg.score(df, df.x) > 0.8
    with pytest.raises(TypeError, match="categorical"):
        rf.predict(df.assign(c=rng.normal(size=n)))


# -- model caches never serve stale trees (issue 21; it crashed: a packed copy made in a
#    callback sent the naive kernel past the end of its arrays on a later round) --------------
def test_predicting_in_a_callback_never_leaves_stale_caches():
    rng = np.random.default_rng(13)
    X, Xv = rng.normal(size=(600, 4)), rng.normal(size=(300, 4))
    y, yv = X[:, 0] + rng.normal(size=600), Xv[:, 0]
    seen = {}

    def cb(model, it, log):
        if it in (1, 4, 6):
            seen[it] = [model.predict(X[:50])] + [model.predict(X[:50], runtime=rt)
                                                  for rt in ("auto", "naive", "struct+")]
            assert len(model.trees) == it + 1
        return False

    train = hardwood.Dataset(X, y)
    m = hardwood.train({"max_depth": 3}, train, num_boost_round=8, callbacks=[cb])
    fresh = hardwood.train({"max_depth": 3}, train, num_boost_round=8)
    for it, preds in seen.items():
        for p in preds:
            np.testing.assert_allclose(p, fresh.predict(X[:50], iteration_range=(0, it + 1)),
                                       rtol=1e-12)
    for rt in (None, "auto", "vpred", "naive"):
        np.testing.assert_allclose(m.predict(X, runtime=rt), fresh.predict(X), rtol=1e-12)
    # a new best_iteration, or new trees, change what a cached runtime must use
    full = m.predict(X, runtime="auto")
    m.best_iteration = 2
    np.testing.assert_allclose(m.predict(X, runtime="auto"), m.predict(X), rtol=1e-12)
    assert not np.allclose(m.predict(X), full)
    m.best_iteration = None
    m.trees = m.trees[:3]
    m.tree_group = m.tree_group[:3]
    np.testing.assert_allclose(m.predict(X, runtime="auto"), fresh.predict(X, iteration_range=(0, 3)),
                               rtol=1e-12)


@pytest.mark.parametrize("sparse", ["auto", False])
@pytest.mark.parametrize("break_it", ["column index", "indptr"])
def test_a_malformed_sparse_matrix_is_refused_not_read_out_of_bounds(sparse, break_it):
    import scipy.sparse as sp

    X = sp.random(300, 20, density=0.05, format="csr", random_state=0)
    y = np.arange(300) % 2
    model = hardwood.train({"max_depth": 2}, hardwood.Dataset(X, y), 2)
    bad = sp.csr_matrix((X.data.copy(), X.indices.copy(), X.indptr.copy()), shape=X.shape)
    if break_it == "column index":
        bad.indices[3] = 10**6
    else:
        bad.indptr[5] = 10**7
    with pytest.raises(ValueError, match="malformed sparse matrix"):
        hardwood.Dataset(bad, y, sparse=sparse)
    with pytest.raises(ValueError, match="malformed sparse matrix"):
        model.predict(bad)
