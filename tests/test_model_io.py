"""The model file: round trips, and validation of everything a Numba kernel would index.

The fuzz test runs in this process on purpose: a model that got past validation and then
crashed a kernel would take pytest down with it (pytest's faulthandler prints the fatal
error), so a crash cannot pass unnoticed. Out-of-bounds *reads* need not crash, so every
model that loads is also walked by a bounds-checked pure-Python predictor, which must agree
with the kernel. tests/test_model_file_fuzz.py runs a fixed-seed fuzz of the same kind in
child processes (memory limit, timeout), so it stands on its own and names a crashing file.
"""
import copy
import json
import math
import pickle
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hardwood
from hardwood import ModelFormatError
from hardwood.model.io import VERSION
from hardwood.predict.naive import predict_leaf, predict_raw


# -- models ----------------------------------------------------------------------------------
def _numeric_model(objective="reg:squarederror", rounds=5, seed=0, **params):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 4))
    X[rng.random(X.shape) < 0.15] = np.nan
    z = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) - np.isnan(X[:, 2])
    if objective == "binary:logistic":
        y = (z > 0).astype(float)
    elif objective == "multi:softprob":
        y = np.digitize(z, [-0.5, 0.5]).astype(float)
    else:
        y = z + rng.normal(scale=0.1, size=300)
    p = {"objective": objective, "max_depth": 3, **params}
    return hardwood.train(p, hardwood.Dataset(X, y), num_boost_round=rounds), X


def _categorical_frame(n, seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "x": rng.normal(size=n),
        "color": pd.Categorical(rng.choice(["red", "green", "blue", "inf", "nan", "1"], n)),
        "code": pd.Categorical(rng.choice([3, 1, 2, 7], n), categories=[7, 3, 1, 2]),
        "many": pd.Categorical(rng.choice([f"c{i}" for i in range(40)], n)),
    })
    df.loc[::9, "color"] = np.nan
    df.loc[::13, "x"] = np.nan
    return df


def _categorical_model(rounds=5, objective="reg:squarederror"):
    df = _categorical_frame(400, 1)
    c = df["color"].astype(str)
    y = (c.isin(["red", "inf"]).astype(float) * 2 + np.asarray(df["code"]).astype(float)
         + df["many"].cat.codes % 3 + np.nan_to_num(df["x"].to_numpy()))
    if objective == "binary:logistic":
        y = (y > np.median(y)).astype(float)
    m = hardwood.train({"objective": objective, "max_depth": 3, "max_cat_to_onehot": 2},
                       hardwood.Dataset(df, y), num_boost_round=rounds)
    return m, df


@pytest.fixture(scope="module")
def models():
    out = {
        "reg": _numeric_model(),
        "binary": _numeric_model("binary:logistic"),
        "multi": _numeric_model("multi:softprob"),
        "cat": _categorical_model(),
    }
    assert any(t.is_categorical.any() for t in out["cat"][0].trees), "no categorical split"
    return out


def _same_predictions(m1, m2, X):
    for output in ("value", "raw", "leaf"):
        np.testing.assert_array_equal(m1.predict(X, output=output), m2.predict(X, output=output))


# -- round trips -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["reg", "binary", "multi", "cat"])
def test_round_trip_file_text_bytes(models, name, tmp_path):
    m, X = models[name]
    path = tmp_path / "model.json"
    m.save(path)
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind
    loaded = [hardwood.load(path), hardwood.load(str(path)), hardwood.load(m.to_json()),
              hardwood.load(path.read_bytes())]
    for m2 in loaded:
        _same_predictions(m, m2, X)
        assert m2.objective == m.objective and m2.n_outputs == m.n_outputs
        assert m2.feature_names == m.feature_names
        assert m2.info.categories == m.info.categories
        np.testing.assert_array_equal(m2.tree_group, m.tree_group)
        assert m2.to_json() == m.to_json()  # saving is idempotent
    if name == "multi":
        assert m.predict(X).shape == (X.shape[0], 3)
        np.testing.assert_allclose(m.predict(X).sum(axis=1), 1.0)


def test_round_trip_categorical_unseen_and_reordered(models):
    m, df = models["cat"]
    m2 = hardwood.load(m.to_json())
    new = _categorical_frame(50, 7)
    # a frame whose categories are listed in another order, with an unseen category
    new["color"] = new["color"].cat.add_categories(["purple"]).cat.reorder_categories(
        ["purple", "nan", "red", "1", "inf", "blue", "green"])
    new.loc[::5, "color"] = "purple"
    _same_predictions(m, m2, new)
    as_str = new.copy()
    as_str["color"] = new["color"].astype(object)
    np.testing.assert_array_equal(m2.predict(as_str), m.predict(new))
    # 'purple' (unseen) predicts like a missing value
    miss = new.copy()
    miss.loc[::5, "color"] = np.nan
    np.testing.assert_array_equal(m2.predict(miss), m2.predict(new))
    # string categories that spell numbers or non-finite floats stay strings
    assert "inf" in m2.info.categories[1] and "nan" in m2.info.categories[1]
    assert all(isinstance(v, str) for v in m2.info.categories[1])
    assert m2.info.categories[2] == [7, 3, 1, 2]


def test_round_trip_early_stopping_and_params():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3))
    y = X[:, 0] + rng.normal(scale=1.0, size=400)
    dtr = hardwood.Dataset(X[:300], y[:300])
    dva = hardwood.Dataset(X[300:], y[300:], reference=dtr)
    m = hardwood.train({"objective": "reg:squarederror", "max_depth": 6, "learning_rate": 0.8},
                       dtr, num_boost_round=40, valid_sets=[dva], early_stopping_rounds=2)
    assert m.best_iteration is not None and m.best_iteration < 39
    m.params["weird"] = float("inf")
    m.params["np_int"] = np.int64(3)
    m.params["obj"] = object()  # not JSON: skipped
    m2 = hardwood.load(m.to_json())
    assert m2.best_iteration == m.best_iteration
    assert m2.best_score == pytest.approx(m.best_score)
    assert m2.params["weird"] == float("inf") and m2.params["np_int"] == 3
    assert "obj" not in m2.params
    _same_predictions(m, m2, X)
    np.testing.assert_array_equal(m2.predict(X, iteration_range=(0, 3)),
                                  m.predict(X, iteration_range=(0, 3)))


@pytest.mark.parametrize("name", ["reg", "multi", "cat"])
def test_pickle_round_trip(models, name):
    m, X = models[name]
    m.predict(X)  # fills the packed cache, which must not be pickled
    m2 = pickle.loads(pickle.dumps(m))
    assert m2._packed is None
    _same_predictions(m, m2, X)


def test_save_rejects_unsavable_categories(tmp_path):
    df = pd.DataFrame({"t": pd.Categorical(pd.to_datetime(["2020-01-01", "2021-01-01"] * 20)),
                       "x": np.arange(40.0)})
    m = hardwood.train({"objective": "reg:squarederror"}, hardwood.Dataset(df, np.arange(40.0)),
                       num_boost_round=1)
    with pytest.raises(ValueError, match="category of type Timestamp"):
        m.save(tmp_path / "m.json")
    assert list(tmp_path.iterdir()) == []


def test_round_trip_bool_and_float_categories():
    rng = np.random.default_rng(8)
    df = pd.DataFrame({"b": pd.Categorical(rng.integers(0, 2, 200).astype(bool)),
                       "f": pd.Categorical(rng.choice([0.5, 1.5, 2.5], 200))})
    y = df["b"].astype(float).to_numpy() * 3 + (df["f"].astype(float).to_numpy() == 1.5)
    m = hardwood.train({"objective": "reg:squarederror", "max_depth": 2},
                       hardwood.Dataset(df, y), num_boost_round=3)
    m2 = hardwood.load(m.to_json())
    assert m2.info.categories == [[False, True], [0.5, 1.5, 2.5]]
    _same_predictions(m, m2, df)
    # numbers match the categories by value (True == 1)
    X = np.column_stack([df["b"].astype(float), df["f"].astype(float)])
    np.testing.assert_array_equal(m2.predict(X), m.predict(df))


def test_predict_wrong_number_of_features_after_load(models):
    m, X = models["reg"]
    m2 = hardwood.load(m.to_json())
    with pytest.raises(ValueError, match="features"):
        m2.predict(X[:, :3])
    with pytest.raises(ValueError, match="features"):
        m2.predict(np.zeros((2, 5)))


# -- targeted corruptions ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def base(models):
    """The categorical model as a dict, with the ids of a few interesting nodes."""
    m, _ = models["cat"]
    d = json.loads(m.to_json())
    t = None
    for i, td in enumerate(d["trees"]):
        num = [f >= 0 and not c and not d["features"]["is_categorical"][f]
               for f, c in zip(td["feature"], td["is_categorical"])]
        if any(td["is_categorical"]) and any(num) and len(td["feature"]) >= 7:
            t = i
            break
    assert t is not None
    td = d["trees"][t]
    feat = td["feature"]
    internal = [i for i, f in enumerate(feat) if f >= 0]
    info = {
        "t": t,
        "n_nodes": len(feat),
        "internal": internal,
        "leaf": next(i for i, f in enumerate(feat) if f < 0),
        "cat_node": next(i for i in internal if td["is_categorical"][i]),
        "num_node": next((i for i in internal if not td["is_categorical"][i]
                          and d["features"]["is_categorical"][feat[i]] is False), None),
        "inner2": next(i for i in internal if i != 0),  # an internal node other than the root
    }
    assert info["num_node"] is not None
    return d, info


def _mutated(base, fn):
    d, info = base
    d = copy.deepcopy(d)
    fn(d, d["trees"][info["t"]], info)
    return json.dumps(d)


CORRUPTIONS = {
    # feature ids
    "feature >= n_features": (lambda d, td, i: td["feature"].__setitem__(0, 4),
                              r"feature holds an index outside"),
    "feature < -1": (lambda d, td, i: td["feature"].__setitem__(i["leaf"], -2),
                     r"feature holds an index outside"),
    "feature huge": (lambda d, td, i: td["feature"].__setitem__(0, 10**30), r"outside"),
    "feature float": (lambda d, td, i: td["feature"].__setitem__(0, 1.0), r"where an integer"),
    "feature bool": (lambda d, td, i: td["feature"].__setitem__(0, True), r"where an integer"),
    "feature string": (lambda d, td, i: td["feature"].__setitem__(0, "0"), r"where an integer"),
    # children
    "left out of range": (lambda d, td, i: td["left"].__setitem__(0, i["n_nodes"]),
                          r"left holds a child index outside"),
    "right negative": (lambda d, td, i: td["right"].__setitem__(0, -1),
                       r"right holds a child index outside"),
    "self loop": (lambda d, td, i: td["left"].__setitem__(i["inner2"], i["inner2"]),
                  r"points back"),
    "back edge to root": (lambda d, td, i: td["right"].__setitem__(i["inner2"], 0),
                          r"points back"),
    "two parents": (lambda d, td, i: td["right"].__setitem__(0, td["left"][0]),
                    r"more than one parent"),
    "internal node made a leaf": (lambda d, td, i: td["feature"].__setitem__(i["inner2"], -1),
                                  r"unreachable"),
    # lengths
    "short threshold": (lambda d, td, i: td["threshold"].pop(), r"threshold has length"),
    "long value": (lambda d, td, i: td["value"].append(0.0), r"value has length"),
    "short count": (lambda d, td, i: td["count"].pop(), r"count has length"),
    "short default_left": (lambda d, td, i: td["default_left"].pop(), r"default_left has length"),
    "empty tree": (lambda d, td, i: [td[k].clear() for k in td], r"no nodes"),
    "missing field": (lambda d, td, i: td.pop("cover"), r"lacks the field 'cover'"),
    "field not a list": (lambda d, td, i: td.__setitem__("left", 3), r"wrong type"),
    "tree not an object": (lambda d, td, i: d["trees"].__setitem__(i["t"], [1]),
                           r"must be an object"),
    # values
    "NaN threshold at numeric split": (
        lambda d, td, i: td["threshold"].__setitem__(i["num_node"], "nan"), r"threshold is NaN"),
    "threshold junk": (lambda d, td, i: td["threshold"].__setitem__(0, "1.5"),
                       r"where a number belongs"),
    "threshold bool": (lambda d, td, i: td["threshold"].__setitem__(0, False),
                       r"boolean where a number belongs"),
    "threshold huge int": (lambda d, td, i: td["threshold"].__setitem__(0, 10**400),
                           r"too large for a float"),
    "NaN leaf value": (lambda d, td, i: td["value"].__setitem__(i["leaf"], "nan"),
                       r"value is not finite at a leaf"),
    "inf leaf value": (lambda d, td, i: td["value"].__setitem__(i["leaf"], "-inf"),
                       r"value is not finite at a leaf"),
    "default_left not bool": (lambda d, td, i: td["default_left"].__setitem__(0, 1),
                              r"list of booleans"),
    # categorical splits
    "cat_offset past bitsets": (
        lambda d, td, i: td["cat_offset"].__setitem__(i["cat_node"], len(td["cat_bitsets"])),
        r"cat_offset\[\d+\] points outside"),
    "cat_offset negative": (lambda d, td, i: td["cat_offset"].__setitem__(i["cat_node"], -1),
                            r"cat_offset\[\d+\] points outside"),
    "bitsets too short": (lambda d, td, i: td.__setitem__("cat_bitsets", []),
                          r"points outside"),
    "bitset word too big": (lambda d, td, i: td["cat_bitsets"].__setitem__(0, 2**32),
                            r"cat_bitsets holds"),
    "bitset word negative": (lambda d, td, i: td["cat_bitsets"].__setitem__(0, -1),
                             r"cat_bitsets holds"),
    "categorical split on numeric feature": (
        lambda d, td, i: td["is_categorical"].__setitem__(i["num_node"], True),
        r"categorical split on a numeric feature|points outside"),
    "categorical leaf": (lambda d, td, i: td["is_categorical"].__setitem__(i["leaf"], True),
                         r"marks a leaf as categorical"),
    "more categories than the bitsets cover": (
        lambda d, td, i: d["features"]["categories"][td["feature"][i["cat_node"]]].extend(
            [f"extra{k}" for k in range(200)]),
        r"points outside"),
    # tree_group
    "tree_group out of range": (lambda d, td, i: d["tree_group"].__setitem__(0, 1),
                                r"tree_group holds 1, outside \[0, 0\]"),
    "tree_group negative": (lambda d, td, i: d["tree_group"].__setitem__(0, -1),
                            r"tree_group holds -1"),
    "tree_group too short": (lambda d, td, i: d["tree_group"].pop(), r"tree_group has"),
    "tree_group not ints": (lambda d, td, i: d["tree_group"].__setitem__(0, "0"),
                            r"where an integer"),
    # header
    "base_score too long": (lambda d, td, i: d["base_score"].append(0.0), r"base_score"),
    "base_score empty": (lambda d, td, i: d.__setitem__("base_score", []), r"base_score"),
    "base_score NaN": (lambda d, td, i: d["base_score"].__setitem__(0, "nan"), r"base_score"),
    "base_score not a list": (lambda d, td, i: d.__setitem__("base_score", 0.5), r"base_score"),
    "format unknown": (lambda d, td, i: d.__setitem__("format", "xgboost"), r"'format' is"),
    "format missing": (lambda d, td, i: d.pop("format"), r"'format' is None"),
    "version newer": (lambda d, td, i: d.__setitem__("version", VERSION + 1), r"newer"),
    "version zero": (lambda d, td, i: d.__setitem__("version", 0), r"unknown version"),
    "version string": (lambda d, td, i: d.__setitem__("version", "1"), r"'version' must be"),
    "version bool": (lambda d, td, i: d.__setitem__("version", True), r"'version' must be"),
    "objective unknown": (lambda d, td, i: d.__setitem__("objective", "no:such-objective"),
                          r"unknown objective"),
    "n_outputs vs objective": (lambda d, td, i: d.__setitem__("n_outputs", 2),
                               r"does not fit objective"),
    "n_outputs zero": (lambda d, td, i: d.__setitem__("n_outputs", 0), r"out of range"),
    "best_iteration out of range": (lambda d, td, i: d.__setitem__("best_iteration", 99),
                                    r"best_iteration"),
    "best_iteration negative": (lambda d, td, i: d.__setitem__("best_iteration", -1),
                                r"best_iteration"),
    "params not an object": (lambda d, td, i: d.__setitem__("params", [1]), r"params"),
    # features
    "feature names not str": (lambda d, td, i: d["features"]["names"].__setitem__(0, 1),
                              r"names must be strings"),
    "feature names duplicate": (
        lambda d, td, i: d["features"]["names"].__setitem__(1, d["features"]["names"][0]),
        r"duplicate"),
    "feature lists differ in length": (lambda d, td, i: d["features"]["names"].append("zz"),
                                       r"differ in length"),
    "no features": (lambda d, td, i: d.__setitem__("features", {"names": [], "is_categorical": [],
                                                                "categories": []}),
                    r"no features|outside"),
    "numeric feature with categories": (
        lambda d, td, i: d["features"]["categories"].__setitem__(0, ["a"]), r"must be null"),
    "categorical feature without categories": (
        lambda d, td, i: d["features"]["categories"].__setitem__(1, None), r"must list"),
    "category of bad type": (lambda d, td, i: d["features"]["categories"][1].append({"a": 1}),
                             r"categories are strings or numbers"),
    "category null": (lambda d, td, i: d["features"]["categories"][1].append(None),
                      r"categories are strings or numbers"),
    "category duplicated": (lambda d, td, i: d["features"]["categories"][2].append(7),
                            r"lists 7 twice"),
    "category non-finite": (lambda d, td, i: d["features"]["categories"][2].append(1e400),
                            r"non-finite"),
    "is_categorical flipped": (
        lambda d, td, i: d["features"]["is_categorical"].__setitem__(1, False), r"must be null"),
}


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_corruption_rejected(base, case):
    fn, pattern = CORRUPTIONS[case]
    text = _mutated(base, fn)
    with pytest.raises(ModelFormatError, match=pattern):
        hardwood.load(text)


def test_model_format_error_is_value_error():
    assert issubclass(ModelFormatError, ValueError)
    with pytest.raises(ValueError):
        hardwood.load("{}")


@pytest.mark.parametrize("text, pattern", [
    ("", "not valid JSON"),
    ("[1, 2]", "top level"),
    ("null", "top level"),
    ('"a string"', "top level"),
    ('{"format": "hardwood", "version": 1, "x": NaN}', "not valid JSON"),
    ('{"format": "hardwood", "version": 1, "x": Infinity}', "not valid JSON"),
    ('{"format": "hardwood", "version": 1', "truncated"),
    ('{"format": "hardwood", "version": ' + "9" * 5000 + "}", "not valid JSON"),
    ("[" * 200_000 + "]" * 200_000, "nested too deeply|not valid JSON"),
    ('{"format": "hardwood", "version": 1}', "lacks the field"),
])
def test_malformed_text(text, pattern):
    with pytest.raises(ModelFormatError, match=pattern):
        hardwood.load(text.encode())


def test_non_utf8(models, tmp_path):
    m, _ = models["reg"]
    raw = m.to_json().encode()
    bad = raw.replace(b'"f0"', b'"f\xff0"', 1)
    assert bad != raw
    p = tmp_path / "bad.json"
    p.write_bytes(bad)
    with pytest.raises(ModelFormatError, match="UTF-8"):
        hardwood.load(p)
    with pytest.raises(ModelFormatError, match="UTF-8"):
        hardwood.load(bad)
    p.write_bytes(m.to_json().encode("utf-16"))
    with pytest.raises(ModelFormatError):
        hardwood.load(p)
    with pytest.raises(FileNotFoundError):
        hardwood.load(tmp_path / "absent.json")


@pytest.fixture(scope="module")
def small_model():
    """A small model with numeric and categorical splits (its file is ~1.5 kB)."""
    rng = np.random.default_rng(11)
    df = pd.DataFrame({"a": rng.normal(size=200),
                       "b": pd.Categorical(rng.choice(["p", "q", "r", "s", "t"], 200))})
    df.loc[::7, "a"] = np.nan
    y = df["a"].fillna(0).to_numpy() + df["b"].isin(["p", "s"]).to_numpy() * 2.0
    m = hardwood.train({"objective": "reg:squarederror", "max_depth": 2,
                        "max_cat_to_onehot": 1}, hardwood.Dataset(df, y), num_boost_round=2)
    m.params = {}
    assert any(t.is_categorical.any() for t in m.trees)
    return m, df


def test_every_prefix_is_rejected(small_model, tmp_path):
    m, _ = small_model
    raw = m.to_json().encode()
    hardwood.load(raw)
    p = tmp_path / "prefix.json"
    for k in range(len(raw)):
        with pytest.raises(ModelFormatError):
            hardwood.load(raw[:k])
        if k % 7 == 0 or k > len(raw) - 20:
            p.write_bytes(raw[:k])
            with pytest.raises(ModelFormatError):
                hardwood.load(p)


# -- fuzzing -------------------------------------------------------------------------------------
def safe_predict_raw(model, mat):
    """The naive walk in plain Python with every index checked: the reference for what the
    kernel may touch. Raises AssertionError on any out-of-range access."""
    n, d = mat.shape
    K = model.n_outputs
    assert model.base_score.shape == (K,)
    out = np.empty((n, K))
    out[:] = model.base_score
    ncat = model.info.n_categories
    assert len(model.trees) == model.tree_group.shape[0]
    for t, g in zip(model.trees, model.tree_group):
        assert 0 <= g < K
        nn = t.n_nodes
        for name in ("threshold", "left", "right", "default_left", "is_categorical",
                     "cat_offset", "value"):
            assert getattr(t, name).shape == (nn,)
        nb = t.cat_bitsets.shape[0]
        for i in range(n):
            node, steps = 0, 0
            while True:
                assert 0 <= node < nn
                f = int(t.feature[node])
                if f < 0:
                    break
                assert f < d
                v = mat[i, f]
                if math.isnan(v):
                    go_left = bool(t.default_left[node])
                elif t.is_categorical[node]:
                    c = int(v)
                    if c < 0 or c >= ncat[f]:
                        go_left = bool(t.default_left[node])
                    else:
                        w = int(t.cat_offset[node]) + (c >> 5)
                        assert 0 <= w < nb
                        go_left = bool((int(t.cat_bitsets[w]) >> (c & 31)) & 1)
                else:
                    go_left = bool(v <= t.threshold[node])
                node = int(t.left[node] if go_left else t.right[node])
                steps += 1
                assert steps <= nn
            out[i, g] += t.value[node]
    return out


def _random_input(model, rng, n=12):
    """A DataFrame for the model's features (NaNs, unseen categories) and a matrix of raw
    codes (out-of-range codes too) for the kernel itself."""
    cols = {}
    mat = np.empty((n, model.n_features))
    for j, name in enumerate(model.feature_names):
        if model.info.is_categorical[j]:
            cats = list(model.info.categories[j])
            pool = cats + ["__unseen__", 123456, None]
            cols[name] = pd.Series([pool[k] for k in rng.integers(0, len(pool), n)],
                                   dtype=object)
            k = max(len(cats), 1)
            mat[:, j] = rng.integers(-3, k + 40, n)
        else:
            cols[name] = rng.normal(scale=3, size=n)
            mat[:, j] = rng.normal(scale=3, size=n)
        cols_nan = rng.random(n) < 0.25
        if model.info.is_categorical[j]:
            cols[name][cols_nan] = None
        else:
            cols[name][cols_nan] = np.nan
        mat[rng.random(n) < 0.25, j] = np.nan
    mat[0, :] = 1e30  # huge values (and huge codes)
    return pd.DataFrame(cols), mat


def exercise(model, seed=0):
    """Use a model that loaded: everything must run, and the kernel must agree with the
    bounds-checked walk."""
    rng = np.random.default_rng(seed)
    df, mat = _random_input(model, rng)
    K = model.n_outputs
    t1 = len(model.trees)
    raw = model.predict(df, output="raw")
    model.predict(df)
    leaves = model.predict(df, output="leaf", iteration_range=(0, model.num_boosted_rounds))
    assert leaves.shape[0] == len(df)
    forest = model.packed()
    coded = model.prepare(df)
    np.testing.assert_array_equal(predict_raw(forest, coded, 0, t1, model.base_score, K),
                                  safe_predict_raw(model, coded))
    np.testing.assert_array_equal(predict_raw(forest, mat, 0, t1, model.base_score, K),
                                  safe_predict_raw(model, mat))
    predict_leaf(forest, mat, 0, t1)
    model.feature_importances("gain")
    # a model that loads saves again, and the copy predicts the same
    again = hardwood.load(model.to_json())
    np.testing.assert_array_equal(again.predict(df, output="raw"), raw)


def try_load(blob):
    """Load or raise ModelFormatError; a model that loads is exercised. Anything else fails."""
    if isinstance(blob, str):
        blob = blob.encode()  # a str that is not an object would be taken for a path
    try:
        m = hardwood.load(blob)
    except ModelFormatError:
        return False
    exercise(m)
    return True


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _get_at(obj, path):
    for k in path:
        obj = obj[k]
    return obj


INTERESTING = [0, 1, -1, -2, 2, 3, 5, 6, 7, 8, 31, 32, 33, 64, 2**31 - 1, 2**31, -2**31 - 1,
               2**32, 2**63, 10**30, 0.5, -0.0, 1e308, -1e308, 1e-320, "nan", "inf", "-inf",
               True, False, None, "", "x", "hardwood", [], {}, [0], [1, 2], [[]], {"a": 1},
               [True], ["nan"], [-1], [0, 0, 0, 0, 0, 0, 0, 0]]


@st.composite
def json_mutation(draw, doc):
    """One mutation of a JSON document: (kind, path, payload)."""
    paths = list(_paths(doc))
    kind = draw(st.sampled_from(["replace", "replace", "replace", "tweak", "delete", "insert",
                                 "copy", "copy"]))
    path = paths[draw(st.integers(0, len(paths) - 1))]
    if kind == "replace":
        payload = draw(st.one_of(st.sampled_from(INTERESTING),
                                 st.integers(-10, 300), st.floats(allow_nan=False)))
    elif kind == "copy":
        payload = paths[draw(st.integers(0, len(paths) - 1))]
    else:
        payload = draw(st.integers(-3, 3))
    return kind, path, payload


def apply_mutation(doc, mutation):
    kind, path, payload = mutation
    doc = copy.deepcopy(doc)
    if not path:
        if kind == "replace":
            return payload
        return doc
    parent = _get_at(doc, path[:-1])
    key = path[-1]
    cur = parent[key]
    if kind == "replace":
        parent[key] = copy.deepcopy(payload)
    elif kind == "tweak":  # nudge a number (off-by-one indices, lengths) or flip a boolean
        if isinstance(cur, bool):
            parent[key] = not cur
        elif isinstance(cur, int):
            parent[key] = cur + (payload or 1)
        elif isinstance(cur, float):
            parent[key] = cur * (payload or 2)
        elif isinstance(cur, list) and cur:
            del cur[payload % len(cur)]
    elif kind == "delete":
        del parent[key]
    elif kind == "insert":
        if isinstance(cur, list):
            cur.insert(payload % (len(cur) + 1), copy.deepcopy(cur[0]) if cur else 0)
        elif isinstance(parent, list):
            parent.insert(key, copy.deepcopy(cur))
    elif kind == "copy":  # splice another part of the document in here
        parent[key] = copy.deepcopy(_get_at(doc, payload))
    return doc


@st.composite
def text_mutation(draw, n):
    kind = draw(st.sampled_from(["truncate", "splice", "flip", "delete"]))
    a = draw(st.integers(0, n))
    b = draw(st.integers(0, n))
    byte = draw(st.integers(0, 255))
    return kind, a, b, byte


def apply_text_mutation(raw, m):
    kind, a, b, byte = m
    lo, hi = min(a, b), max(a, b)
    if kind == "truncate":
        return raw[:a]
    if kind == "splice":  # duplicate a span somewhere else
        return raw[:a] + raw[lo:hi][:200] + raw[a:]
    if kind == "delete":
        return raw[:lo] + raw[hi:]
    if a < len(raw):
        return raw[:a] + bytes([byte]) + raw[a + 1:]
    return raw


@pytest.fixture(scope="module")
def fuzz_bases(small_model, models):
    m, _ = small_model
    multi, _ = _numeric_model("multi:softprob", rounds=1, seed=3, max_depth=2)
    multi.params = {}
    docs = [json.loads(m.to_json()), json.loads(multi.to_json())]
    for doc in docs:
        exercise(hardwood.load(json.dumps(doc)))  # the unmutated models are valid
    return docs


FUZZ_STATS = {"loads": 0, "loaded": 0}


@settings(max_examples=600, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_model_file(fuzz_bases, data):
    doc = fuzz_bases[data.draw(st.integers(0, len(fuzz_bases) - 1))]
    muts = [data.draw(json_mutation(doc)) for _ in range(6)]
    # each mutation alone, then all of them stacked up
    cur = doc
    for mut in muts:
        FUZZ_STATS["loads"] += 2
        FUZZ_STATS["loaded"] += try_load(json.dumps(apply_mutation(doc, mut)).encode())
        try:
            cur = apply_mutation(cur, mut)
        except (KeyError, IndexError, TypeError):
            pass  # the path vanished under an earlier mutation
        FUZZ_STATS["loaded"] += try_load(json.dumps(cur))
    raw = json.dumps(cur if isinstance(cur, dict) else doc).encode()
    for _ in range(3):
        raw = apply_text_mutation(raw, data.draw(text_mutation(len(raw))))
        FUZZ_STATS["loads"] += 1
        FUZZ_STATS["loaded"] += try_load(raw)


def test_fuzz_coverage():
    """The fuzz test ran thousands of loads, and some mutated models were valid (so the
    predict path was exercised, not only the error path)."""
    print(FUZZ_STATS)
    if FUZZ_STATS["loads"] == 0:
        pytest.skip("test_fuzz_model_file (hypothesis) did not run earlier in this session, so "
                    "there are no figures to check; tests/test_model_file_fuzz.py is the "
                    "self-contained fuzz, with its own coverage figures")
    assert FUZZ_STATS["loads"] >= 2000, FUZZ_STATS
    assert FUZZ_STATS["loaded"] >= 50, FUZZ_STATS


def test_random_byte_fuzz(small_model):
    """A plain seeded loop on top of hypothesis: random single-value edits of every path."""
    m, _ = small_model
    doc = json.loads(m.to_json())
    paths = list(_paths(doc))
    rng = random.Random(1234)
    loaded = 0
    for path in paths:
        for _ in range(3):
            mut = ("replace", path, rng.choice(INTERESTING))
            loaded += try_load(json.dumps(apply_mutation(doc, mut)))
        loaded += try_load(json.dumps(apply_mutation(doc, ("tweak", path, rng.choice([-1, 1])))))
    assert loaded > 0


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 100, 1000])
def test_category_bitsets_match_bit_by_bit_construction(n):
    from hardwood.model.tree import bitset_from_mask, mask_from_bitset

    mask = np.random.default_rng(n).random(n) < 0.4
    expected = np.zeros(max(1, (n + 31) // 32), dtype=np.uint32)
    for c in np.flatnonzero(mask):
        expected[c >> 5] |= np.uint32(1 << (c & 31))
    words = bitset_from_mask(mask)
    assert words.dtype == np.uint32
    np.testing.assert_array_equal(words, expected)
    np.testing.assert_array_equal(mask_from_bitset(words, n), mask)


# -- learning curves ------------------------------------------------------------------------
def test_learning_curves_survive_the_file_and_the_file_is_deterministic(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    y = X[:, 0] + rng.normal(scale=0.3, size=400)
    dtrain = hardwood.Dataset(X[:300], y[:300])
    dvalid = hardwood.Dataset(X[300:], y[300:], reference=dtrain)
    model = hardwood.train({"max_depth": 2, "eval_metric": ["rmse", "mae"]}, dtrain, 6,
                           valid_sets=[dvalid], valid_names=["valid"])
    assert model.evals_result["valid"]["rmse"] and model.training_profile
    path = tmp_path / "m.json"
    model.save(path)
    back = hardwood.load(path)
    assert back.evals_result == {k: {m: [float(v) for v in c] for m, c in d.items()}
                                 for k, d in model.evals_result.items()}
    # the profile's timings stay out of the file: one seed, one file
    assert back.training_profile == {}
    assert back.to_json() == model.to_json()


@pytest.mark.parametrize("value,message", [
    ([1, 2], "evals_result must map"),
    ({"valid": {"rmse": "x"}}, "must be a list of numbers"),
    ({"valid": {"rmse": [0.5, "high"]}}, "where a number belongs"),
])
def test_bad_learning_curves_name_the_field(value, message):
    doc = json.loads(_numeric_model()[0].to_json())
    doc["evals_result"] = value
    with pytest.raises(ModelFormatError, match=message):
        hardwood.load(json.dumps(doc))
