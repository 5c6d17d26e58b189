"""Hostile input, fourth round: what a user of XGBoost, LightGBM or scikit-learn would pass,
and what hardwood did with it without a word (docs/checks.md)."""
import warnings

import numpy as np
import pandas as pd
import pytest

import hardwood as hw
from hardwood import GBDTRegressor, RandomForestClassifier


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, X[:, 0] + 0.1 * rng.normal(size=n)


# -- weights beyond float32 --------------------------------------------------------------------
def test_weights_beyond_float32_are_refused_not_trained_into_the_base_score():
    # g x w is float32: a weight of 1e40 made every gradient infinite, every gain NaN, and
    # training returned root-only trees (the base score), with numpy warnings only
    X, y = _data()
    w = np.ones(len(y))
    w[7] = 1e40
    with pytest.raises(ValueError, match=r"exceed float32's range.*1e\+40 at row 7"):
        hw.train({}, hw.Dataset(X, y, weight=w), 2)
    with pytest.raises(ValueError, match="float32's range"):
        GBDTRegressor(n_estimators=2).fit(X, y, sample_weight=np.full(len(y), 1e300))
    train = hw.Dataset(X, y)
    with pytest.raises(ValueError, match="valid set 'valid_0'.*float32's range"):
        hw.train({}, train, 2, valid_sets=[hw.Dataset(X, y, weight=w, reference=train)])
    # weights within range train as before, and the same model at any common scale
    a = hw.train({"reg_lambda": 0.0, "min_child_weight": 0.0}, hw.Dataset(X, y), 3)
    b = hw.train({"reg_lambda": 0.0, "min_child_weight": 0.0},
                 hw.Dataset(X, y, weight=np.full(len(y), 1e30)), 3)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-5, atol=1e-6)


def test_divergence_from_large_weights_names_the_weights():
    X, y = _data()
    with pytest.raises(FloatingPointError, match=r"weights up to 1e\+37.*Scale the labels, "
                                                 r"the weights"):
        hw.train({}, hw.Dataset(X, y * 100, weight=np.full(len(y), 1e37)), 2)


# -- LightGBM's verbose=-1 ---------------------------------------------------------------------
def test_negative_verbose_is_silent(capsys):
    # verbose=-1 is how LightGBM users silence training; bool(-1) printed the profile
    X, y = _data()
    hw.train({"verbose": -1}, hw.Dataset(X, y), 2)
    GBDTRegressor(n_estimators=2, verbose=-1).fit(X, y)
    hw.train({"verbosity": 0}, hw.Dataset(X, y), 2)
    assert capsys.readouterr().out == ""
    hw.train({"verbose": 1}, hw.Dataset(X, y), 2)
    assert "[hardwood] training" in capsys.readouterr().out


# -- LightGBM's "huber" ------------------------------------------------------------------------
def test_lightgbm_huber_objective_is_not_taken_for_pseudo_huber():
    # "huber" was an alias of reg:pseudohubererror; LightGBM's huber is the Huber loss (unit
    # hessian): with LightGBM's lambda_l2=0 the Pseudo-Huber leaves diverged (MAE 985 vs 0.28)
    X, y = _data()
    with pytest.raises(ValueError, match="LightGBM's 'huber' is the Huber loss.*"
                                         "reg:pseudohubererror"):
        hw.train({"objective": "huber"}, hw.Dataset(X, y), 2)
    with pytest.raises(ValueError, match="reg:pseudohubererror"):
        GBDTRegressor(objective="huber", n_estimators=2).fit(X, y)
    m = hw.train({"objective": "reg:pseudohubererror"}, hw.Dataset(X, y), 2)
    assert m.objective == "reg:pseudohubererror"


# -- feature_names beside a DataFrame's columns --------------------------------------------------
def test_feature_names_that_differ_from_a_frames_columns_are_refused():
    # they were ignored: the model kept the columns' names, and a frame of the given names
    # was refused at predict time
    X, y = _data()
    df = pd.DataFrame(X, columns=list("abcd"))
    with pytest.raises(ValueError, match=r"feature_names \['w', 'x', 'y', 'z'\] differ from "
                                         r"X's column names \['a', 'b', 'c', 'd'\]"):
        hw.Dataset(df, y, feature_names=list("wxyz"))
    ds = hw.Dataset(df, y, feature_names=list("abcd"))  # the same names: fine
    assert ds.feature_names == list("abcd")
    m = hw.train({}, hw.Dataset(X, y, feature_names=list("wxyz")), 2)  # numpy: the names
    assert m.feature_names == list("wxyz")
    np.testing.assert_array_equal(m.predict(pd.DataFrame(X, columns=list("wxyz"))),
                                  m.predict(X))


# -- early stopping on a NaN metric ------------------------------------------------------------
def test_early_stopping_on_a_nan_metric_warns():
    # auc of a one-class validation set is NaN every round: as XGBoost, training stops after
    # early_stopping_rounds and keeps round 0 only; it did so without a word
    X, y = _data()
    yb = (y > 0).astype(float)
    train = hw.Dataset(X, yb)
    one = hw.Dataset(X[yb == 1], yb[yb == 1], reference=train)
    with pytest.warns(RuntimeWarning, match="early stopping watches 'auc' on 'valid_0', which is "
                                            "NaN at round 0"):
        m = hw.train({"objective": "binary:logistic", "eval_metric": "auc"}, train, 20,
                     valid_sets=[one], early_stopping_rounds=3)
    assert m.best_iteration == 0
    with warnings.catch_warnings():  # a finite metric: no warning
        warnings.simplefilter("error")
        hw.train({"objective": "binary:logistic"}, train, 5, valid_sets=[one],
                 early_stopping_rounds=3)


# -- forests: a fractional max_samples of small weights ----------------------------------------
def test_forest_fractional_max_samples_of_small_weights_warns():
    # n_boot = max_samples x sum of weights (scikit-learn's rule): weights below 1 left a few
    # rows per tree; scikit-learn warns, hardwood said nothing
    X, y = _data()
    yc = (y > 0).astype(int)
    w = np.random.default_rng(3).random(len(y)) * 0.01
    with pytest.warns(UserWarning, match=r"low number \(\d\) of bootstrap samples"):
        RandomForestClassifier(n_estimators=3, max_samples=0.5, random_state=0).fit(
            X, yc, sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RandomForestClassifier(n_estimators=3, max_samples=0.5, random_state=0).fit(
            X, yc, sample_weight=w * 100)


def test_forest_fractional_max_samples_counts_equal_weights_too():
    # n_boot = max_samples x sum of weights also when the weights are all equal (they draw
    # like no weights): constant weights 2 drew max_samples x n rows, half of scikit-learn's
    X, y = _data()
    yc = (y > 0).astype(int)
    n = len(y)
    kw = dict(n_estimators=4, random_state=0, min_samples_leaf=3)
    a = RandomForestClassifier(max_samples=0.5, **kw).fit(X, yc, sample_weight=np.full(n, 2.0))
    b = RandomForestClassifier(max_samples=1.0, **kw).fit(X, yc)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    c = RandomForestClassifier(max_samples=0.5, **kw).fit(X, yc)
    assert not np.array_equal(a.predict_proba(X), c.predict_proba(X))


# -- a compiled runtime's out= of the shape predict returns ------------------------------------
@pytest.mark.parametrize("runtime", ["naive", "struct+", "vpred", "codegen", "auto"])
def test_compiled_predict_takes_a_1d_out_for_one_output(runtime):
    # predict returns (n,) for one output, but out= had to be (n, 1)
    X, y = _data()
    m = hw.train({"objective": "binary:logistic"}, hw.Dataset(X, (y > 0).astype(float)), 3)
    rt = hw.compile(m, runtime=runtime)
    for output in ("value", "raw"):
        out = np.full(len(y), np.nan)
        res = rt.predict(X, output=output, out=out)
        assert res is out
        np.testing.assert_array_equal(out, m.predict(X, output=output, runtime=runtime))
    one = np.empty(1)
    assert rt.predict(X[:1], out=one) is one and one[0] == m.predict(X[:1])[0]
    with pytest.raises(ValueError, match=r"shape \(400, 1\) or \(400,\)"):
        rt.predict(X, out=np.empty(len(y) + 1))
    with pytest.raises(ValueError, match=r"shape \(400, 1\) or \(400,\)"):
        rt.predict(X, out=np.empty(2 * len(y))[::2])
    mc = hw.train({"objective": "multi:softprob"}, hw.Dataset(X, np.digitize(y, [-.5, .5])), 2)
    with pytest.raises(ValueError, match=r"shape \(400, 3\)$"):  # several outputs: (n, K)
        hw.compile(mc, runtime=runtime).predict(X, out=np.empty(len(y)))


# -- Arrow tables keep their column names ------------------------------------------------------
def test_arrow_tables_are_read_by_column_name():
    # np.asarray(table) dropped the names: a model of a frame predicted a table of its columns
    # in another order by position (differences of 11 on this data), and a model trained on
    # a table had no names
    import pyarrow as pa

    X, y = _data()
    df = pd.DataFrame(X, columns=list("abcd"))
    table = pa.Table.from_pandas(df)
    swapped = table.select(["d", "c", "b", "a"])
    for train_on in (df, table):
        m = hw.train({}, hw.Dataset(train_on, y), 3)
        assert m.feature_names == list("abcd")
        np.testing.assert_array_equal(m.predict(table), m.predict(df))
        np.testing.assert_array_equal(m.predict(table.to_batches()[0]), m.predict(df))
        with pytest.raises(ValueError, match="different order"):
            m.predict(swapped)
        with pytest.raises(ValueError, match="different order"):
            hw.compile(m, runtime="auto").predict(swapped)
    # a dictionary column is a categorical feature, matched by value
    codes = np.random.default_rng(5).integers(0, 3, len(y))
    cats = np.array(["x", "y", "z"])[codes]
    t = pa.table({"c": pa.array(cats).dictionary_encode(), "v": X[:, 1]})
    m = hw.train({}, hw.Dataset(t, codes.astype(float)), 5)
    assert m.info.is_categorical.tolist() == [True, False]
    frame = pd.DataFrame({"c": pd.Categorical(cats, categories=["z", "y", "x"]), "v": X[:, 1]})
    np.testing.assert_array_equal(m.predict(t), m.predict(frame))


def test_a_categorical_mask_of_the_wrong_length_says_so():
    X, y = _data()
    Xc = np.c_[np.abs(np.round(X[:, :2])), X[:, 2:]]
    with pytest.raises(ValueError, match="boolean mask of length 2, but X has 4 features"):
        hw.Dataset(Xc, y, categorical_features=[True, False])
    with pytest.raises(TypeError, match="mixes booleans and indices"):
        hw.Dataset(Xc, y, categorical_features=[True, 1])
    mask = hw.Dataset(Xc, y, categorical_features=np.array([True, False, False, False]))
    assert mask.info.is_categorical.tolist() == [True, False, False, False]


# -- a part of a random forest -----------------------------------------------------------------
def test_part_of_a_forest_is_refused_not_predicted_as_a_fraction_of_its_mean():
    # a forest's leaves hold value / n_estimators: iteration_range=(0, 5) of 10 trees predicted
    # half the mean (a regression of mean 50 gave 25; class probabilities summed to 0.5)
    from sklearn.ensemble import RandomForestRegressor as SkForest

    from hardwood import RandomForestRegressor

    X, y = _data()
    y = y * 10 + 50
    rf = RandomForestRegressor(n_estimators=10, random_state=0).fit(X, y)
    sk = hw.import_model(SkForest(n_estimators=10, random_state=0).fit(X, y))
    for m in (rf.model_, sk):
        full = m.predict(X)
        assert abs(full.mean() - y.mean()) < 1.0
        for rng in [(0, 5), (2, 10), (3, 4)]:
            with pytest.raises(ValueError, match="part of a random forest of 10 trees"):
                m.predict(X, iteration_range=rng)
            with pytest.raises(ValueError, match="part of a random forest"):
                hw.compile(m, runtime="auto", iteration_range=rng)
            with pytest.raises(ValueError, match="part of a random forest"):
                m.predict(X[:3], output="contrib", iteration_range=rng)
        for whole in [(0, 10), (0, 0)]:
            np.testing.assert_array_equal(m.predict(X, iteration_range=whole), full)
        np.testing.assert_array_equal(m.predict(X, iteration_range=(4, 4)), 0.0)  # empty
    boosted = hw.train({}, hw.Dataset(X, y), 10)  # a boosted model's rounds are parts of a sum
    assert boosted.predict(X, iteration_range=(0, 5)).shape == (len(y),)


@pytest.mark.parametrize("K,onehot", [(3, 3), (3, 4), (4, 4), (4, 5), (5, 4), (5, 6)])
def test_max_cat_to_onehot_follows_xgboost(K, onehot):
    """XGBoost splits one category off when the field has fewer than max_cat_to_onehot
    categories; hardwood compared the node's non-empty categories with <=, so K = 4 with the
    default 4 went one-hot in hardwood and by partition in XGBoost (0.29 apart)."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(K)
    n = 5000
    c = rng.integers(0, K, n)
    x = rng.integers(0, 10, n).astype(float)
    y = rng.normal(size=K)[c] * 2 + 0.3 * x + rng.normal(size=n) * 0.2
    df = pd.DataFrame({"c": pd.Categorical(c, categories=range(K)), "x": x})
    p = {"max_depth": 3, "learning_rate": 0.5, "reg_lambda": 1.0, "base_score": 0.0,
         "max_cat_to_onehot": onehot}
    ours = hw.train(p, hw.Dataset(df, y), num_boost_round=5).predict(df)
    theirs = xgb.train(dict(p, tree_method="hist", max_cat_threshold=64, nthread=1),
                       xgb.DMatrix(df, y, enable_categorical=True), 5)
    np.testing.assert_allclose(ours, theirs.predict(xgb.DMatrix(df, enable_categorical=True)),
                               atol=1e-5)
