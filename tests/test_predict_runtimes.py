"""Prediction runtimes (hardwood.compile): every runtime equals the naive walk.

Models: trained by hardwood (numeric with NaN, multiclass, categorical), and random trees built
directly from arrays (balanced and unbalanced, NaN default directions both ways)."""
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from cuda_simulator import PRELUDE

import hardwood
from hardwood.model.model import Model
from hardwood.model.tree import Tree
from hardwood.data.convert import FeatureInfo
from hardwood.predict import dispatch

RUNTIMES = ["naive", "struct", "struct+", "pred", "vpred", "codegen", "auto"]


def _numeric(objective="reg:squarederror", rounds=6, depth=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.15] = np.nan
    z = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) - np.isnan(X[:, 2])
    if objective == "binary:logistic":
        y = (z > 0).astype(float)
    elif objective == "multi:softprob":
        y = np.digitize(z, [-0.5, 0.5]).astype(float)
    else:
        y = z + rng.normal(scale=0.1, size=400)
    p = {"objective": objective, "max_depth": depth}
    if objective == "multi:softprob":
        p["num_class"] = 3
    return hardwood.train(p, hardwood.Dataset(X, y), num_boost_round=rounds), X


def _categorical():
    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame({"x": rng.normal(size=n),
                       "c": pd.Categorical(rng.choice([f"k{i}" for i in range(40)], n))})
    df.loc[::9, "c"] = np.nan
    df.loc[::13, "x"] = np.nan
    y = df["c"].cat.codes.to_numpy() % 3 + np.nan_to_num(df["x"].to_numpy())
    m = hardwood.train({"objective": "reg:squarederror", "max_depth": 3, "max_cat_to_onehot": 2},
                       hardwood.Dataset(df, y), num_boost_round=5)
    assert any(t.is_categorical.any() for t in m.trees)
    return m, df


def _random_tree(rng, n_features, depth, balanced, thresholds=None, p_leaf=0.3):
    """A random numeric tree, its nodes numbered breadth-first; ``thresholds``: the values to
    draw thresholds from (None: normal draws); ``p_leaf``: the chance that an inner node of an
    unbalanced tree stops early."""
    feature, threshold, left, right, dl, value = [], [], [], [], [], []

    def new():
        for a in (feature, threshold, left, right, dl, value):
            a.append(0)
        return len(feature) - 1

    root = new()
    frontier = [(root, 0)]
    while frontier:  # breadth-first: children get larger ids than their parents
        i, d = frontier.pop(0)
        if d == depth or (not balanced and d > 0 and rng.random() < p_leaf):
            feature[i], left[i], right[i] = -1, -1, -1
            value[i] = float(rng.normal())
            continue
        feature[i] = int(rng.integers(n_features))
        threshold[i] = float(rng.normal() if thresholds is None else rng.choice(thresholds))
        dl[i] = bool(rng.random() < 0.5)
        left[i], right[i] = new(), new()
        frontier += [(left[i], d + 1), (right[i], d + 1)]
    n = len(feature)
    return Tree.from_arrays(feature=feature, threshold=threshold, left=left, right=right,
                            default_left=dl, is_categorical=np.zeros(n, bool),
                            cat_offset=np.full(n, -1), value=value, gain=np.zeros(n),
                            cover=np.zeros(n), count=np.zeros(n))


def _random_model(seed, n_trees=12, n_features=7, depth=5, balanced=False):
    rng = np.random.default_rng(seed)
    trees = [_random_tree(rng, n_features, int(rng.integers(0, depth + 1)) if not balanced
                          else depth, balanced) for _ in range(n_trees)]
    info = FeatureInfo(names=[f"f{j}" for j in range(n_features)],
                       is_categorical=np.zeros(n_features, bool), categories=[None] * n_features)
    m = Model(trees, np.zeros(n_trees, np.int32), [0.25], "reg:squarederror", 1, info)
    X = rng.normal(size=(300, n_features))
    X[rng.random(X.shape) < 0.2] = np.nan
    return m, X


@pytest.fixture(scope="module")
def models():
    return {"reg": _numeric(), "binary": _numeric("binary:logistic"),
            "multi": _numeric("multi:softprob", rounds=3), "cat": _categorical(),
            "random": _random_model(1), "balanced": _random_model(2, balanced=True)}


def _assert_output(got, ref, output):
    """Leaf ids exactly, values to 1e-12."""
    if output == "leaf":
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def _check(compiled, m, X):
    for output in ("raw", "value", "leaf"):
        for sub in (X, X[:1], X[:5]):
            got = compiled.predict(sub, output=output)
            ref = m.predict(sub, output=output, runtime="naive")
            _assert_output(got, ref, output)
            if output != "leaf":
                assert got.shape == ref.shape


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name", ["reg", "binary", "multi", "cat", "random", "balanced"])
def test_runtime_equals_naive(models, runtime, name):
    m, X = models[name]
    c = hardwood.compile(m, runtime)
    assert c.compile_seconds >= 0
    _check(c, m, X)
    if isinstance(X, np.ndarray):  # the other float width
        other = X.astype(np.float64 if X.dtype == np.float32 else np.float32)
        _check(c, m, other)


@pytest.mark.parametrize("v", [1, 2, 4, 16])
def test_vpred_every_v(models, v):
    m, X = models["random"]
    _check(hardwood.compile(m, "vpred", v=v), m, X)


@pytest.mark.parametrize("runtime", ["pred", "vpred"])
def test_pred_blocks_with_and_without_nan(runtime):
    """Blocks of rows with no NaN take a walk with no default-direction test: rows with NaN
    in a few blocks only (and NaN in a feature no split uses) give the naive walk's output."""
    m, _ = _random_model(7, n_trees=9, n_features=6, depth=6, balanced=True)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1000, 7))[:, :6].copy()
    X[130:140, 2] = np.nan  # block 1 of 128 rows
    X[700, :] = np.nan
    used = np.unique(np.concatenate([t.feature[t.feature >= 0] for t in m.trees]))
    unused = [f for f in range(6) if f not in used]
    if unused:
        X[300:310, unused[0]] = np.nan
    c = hardwood.compile(m, runtime)
    for x in (X, X.astype(np.float32), X[:200]):
        for output in ("raw", "leaf"):
            np.testing.assert_array_equal(c.predict(x, output=output),
                                          m.predict(x, output=output, runtime="naive"))


@pytest.mark.parametrize("walk", ["auto", "all"])
@pytest.mark.parametrize("direct", [False, True])
@pytest.mark.parametrize("name", ["reg", "multi", "cat", "random"])
def test_rows_read_in_place_or_copied(models, monkeypatch, name, direct, walk):
    """Both ways of reading a block's rows (the transposed copy of the used features, or the
    rows in place for short walks) give the naive walk's output, padded and unpadded."""
    from hardwood.predict import pred_runtime
    monkeypatch.setattr(pred_runtime, "DIRECT_FACTOR", 10 ** 9 if direct else 0)
    monkeypatch.setattr(dispatch.PredRuntime, "_walk", walk)
    m, X = models[name]
    c = hardwood.compile(m, "vpred", v=4)
    assert c.direct is direct
    _check(c, m, X)


@pytest.mark.parametrize("walk", ["auto", "all"])
def test_wide_rows_few_used_features(monkeypatch, walk):
    """Only the features the splits use are copied into a block's transposed rows: a model
    that tests 3 of 2,000 features gives the naive walk's output (NaN in used and unused
    features), and its layout indexes the 3 (plus feature 0, the padding's dummy feature)."""
    from hardwood.predict import dispatch
    monkeypatch.setattr(dispatch.PredRuntime, "_walk", walk)
    m, _ = _random_model(9, n_trees=6, n_features=3, depth=4, balanced=True)
    wide = [5, 1234, 1999]
    trees = []
    for t in m.trees:
        f = t.feature.copy()
        f[f >= 0] = np.asarray(wide)[f[f >= 0]]
        trees.append(Tree.from_arrays(feature=f, threshold=t.threshold, left=t.left,
                                      right=t.right, default_left=t.default_left,
                                      is_categorical=t.is_categorical, cat_offset=t.cat_offset,
                                      value=t.value, gain=t.gain, cover=t.cover, count=t.count))
    info = FeatureInfo(names=[f"f{j}" for j in range(2000)], is_categorical=np.zeros(2000, bool),
                       categories=[None] * 2000)
    wm = Model(trees, np.zeros(len(trees), np.int32), [0.25], "reg:squarederror", 1, info)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 2000))
    X[rng.random(X.shape) < 0.1] = np.nan
    c = hardwood.compile(wm, "vpred", v=4)
    assert c.used.tolist() == [0] + wide
    for x in (X, X[:3], X.astype(np.float32)):
        for output in ("raw", "leaf"):
            np.testing.assert_array_equal(c.predict(x, output=output),
                                          wm.predict(x, output=output, runtime="naive"))
    for r in range(12):  # one row: the one-row kernel's copy of a row too wide for the stack
        row = np.ascontiguousarray(X[r:r + 1])
        np.testing.assert_array_equal(c.predict(row), wm.predict(row, runtime="naive"))


def test_thresholds_at_float32_boundaries():
    """Row values equal to, and one ulp around, each threshold (float32 and float64)."""
    m, _ = _random_model(5, n_trees=4, n_features=3, depth=3, balanced=True)
    thr = np.concatenate([t.threshold[t.feature >= 0] for t in m.trees])
    vals = np.concatenate([thr, np.nextafter(thr, np.inf), np.nextafter(thr, -np.inf),
                           thr.astype(np.float32).astype(np.float64)])
    X = np.tile(vals[:, None], (1, 3))
    for rt in ("struct+", "pred", "vpred", "quickscorer", "codegen"):
        c = hardwood.compile(m, rt)
        for x in (X, X.astype(np.float32), X[:7], X[:1]):
            np.testing.assert_array_equal(c.predict(x, output="leaf"),
                                          m.predict(x, output="leaf", runtime="naive"))


@pytest.mark.parametrize("name", ["reg", "binary", "multi", "random", "balanced"])
def test_quickscorer_equals_naive(models, name):
    """QuickScorer gives the naive walk's floats bit for bit (the same leaf values added in the
    same tree order): NaN both default ways, several outputs, trees of depth 0 to 5, both
    input widths, batches (lane groups of 16 or 8 rows with a ragged tail, serial and
    parallel) and single rows (the one-row kernel)."""
    m, X = models[name]
    c = hardwood.compile(m, "quickscorer")
    naive = hardwood.compile(m, "naive")
    for x in (X, X.astype(np.float64 if X.dtype == np.float32 else np.float32)):
        for sub in (x, x[:1], x[:5], x[:13], x[:40], x[3:260]):
            for output in ("raw", "value", "leaf"):
                np.testing.assert_array_equal(c.predict(sub, output=output),
                                              naive.predict(sub, output=output))


def test_quickscorer_masks_of_64_leaf_trees_and_nan_blocks():
    """Trees of exactly 64 leaves (the width of a bitvector) and unbalanced ones; NaN in a few
    lane groups only, in a whole row, in an unused feature; infinities."""
    m, _ = _random_model(11, n_trees=7, n_features=6, depth=6, balanced=True)
    u, _ = _random_model(12, n_trees=9, n_features=6, depth=6)
    assert max(t.n_leaves for t in m.trees) == 64
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 6))
    X[130:140, 2] = np.nan
    X[333, :] = np.nan
    X[400:402, 1] = np.inf
    X[410:413, 4] = -np.inf
    for model in (m, u):
        c, naive = hardwood.compile(model, "quickscorer"), hardwood.compile(model, "naive")
        for x in (X, X.astype(np.float32), X[128:150]):
            for output in ("raw", "leaf"):
                np.testing.assert_array_equal(c.predict(x, output=output),
                                              naive.predict(x, output=output))


def test_quickscorer_refuses_what_it_cannot_run(models):
    m, _ = models["cat"]
    with pytest.raises(ValueError, match="categorical"):
        hardwood.compile(m, "quickscorer")
    big, _ = _random_model(13, n_trees=2, n_features=4, depth=7, balanced=True)
    with pytest.raises(ValueError, match="128 leaves"):
        hardwood.compile(big, "quickscorer")


def test_model_predict_runtime_argument(models):
    m, X = models["multi"]
    for rt in ("auto", "vpred", "struct+"):
        np.testing.assert_allclose(m.predict(X, runtime=rt), m.predict(X, runtime="naive"),
                                   rtol=1e-12)
    np.testing.assert_allclose(m.predict(X, runtime="auto", iteration_range=(0, 2)),
                               m.predict(X, iteration_range=(0, 2), runtime="naive"), rtol=1e-12)


def test_feature_count_mismatch_is_an_error(models):
    m, X = models["reg"]
    for rt in ("struct+", "vpred", "quickscorer", "auto"):
        c = hardwood.compile(m, rt)
        with pytest.raises(ValueError, match="features"):
            c.predict(X[:, :4])
        with pytest.raises(ValueError, match="features"):
            c.predict(np.zeros((1, 9), np.float32))


def test_bad_arguments(models):
    m, X = models["reg"]
    with pytest.raises(ValueError, match="runtime"):
        hardwood.compile(m, "fastest")
    with pytest.raises(ValueError, match="v must be"):
        hardwood.compile(m, "vpred", v=3)
    with pytest.raises(ValueError, match="output"):
        hardwood.compile(m, "struct+").predict(X, output="proba")
    with pytest.raises(TypeError):
        hardwood.compile("not a model")


def _chain_model(rng, depth=20):
    """One tree: a chain of ``depth`` splits on feature 0 (deeper than pred can pad)."""
    n = 2 * depth + 1
    feature = np.array([0] * depth + [-1] * (depth + 1))
    left = np.array([-1] * n)
    right = np.array([-1] * n)
    for i in range(depth):  # node i sends x <= t to leaf depth + i, the rest down the chain
        left[i] = depth + i if i < depth - 1 else n - 2
        right[i] = i + 1 if i < depth - 1 else n - 1
    tree = Tree.from_arrays(feature=feature, threshold=rng.normal(size=n), left=left,
                            right=right, default_left=rng.random(n) < 0.5,
                            is_categorical=np.zeros(n, bool), cat_offset=np.full(n, -1),
                            value=rng.normal(size=n), gain=np.zeros(n), cover=np.zeros(n),
                            count=np.zeros(n))
    from hardwood.model.io import validate_tree
    validate_tree(tree, 1, np.zeros(1, np.int64), np.zeros(1, bool), "chain")  # a real tree
    info = FeatureInfo(names=["a"], is_categorical=np.zeros(1, bool), categories=[None])
    return Model([tree], [0], [0.0], "reg:squarederror", 1, info)


def test_deep_unbalanced_tree_takes_the_unpadded_walk():
    """A tree deeper than pred can pad (depth 20) runs on vwalk's unpadded walk, for pred, vpred
    and auto, with and without NaN, on the serial and the parallel path."""
    rng = np.random.default_rng(0)
    m = _chain_model(rng)
    X = rng.normal(size=(700, 1))
    X[::7] = np.nan
    for rt in ("pred", "vpred", "auto"):
        c = hardwood.compile(m, rt)
        if rt != "auto":
            assert c.walked == 1
        for x in (X, X[:40], X[:1], X[1:2], np.ascontiguousarray(X[100:400]).astype(np.float32)):
            for output in ("raw", "value", "leaf"):
                np.testing.assert_array_equal(c.predict(x, output=output),
                                              m.predict(x, output=output, runtime="naive"))


@pytest.mark.parametrize("v", [1, 4, 16])
@pytest.mark.parametrize("name", ["reg", "multi", "cat", "random", "balanced"])
def test_unpadded_walk_equals_naive(models, monkeypatch, name, v):
    """Every tree forced onto the unpadded walk (it is otherwise taken by deep or unbalanced
    trees only)."""
    from hardwood.predict import dispatch
    monkeypatch.setattr(dispatch.PredRuntime, "_walk", "all")
    m, X = models[name]
    c = hardwood.compile(m, "vpred", v=v)
    assert c.walked == len(m.trees)
    _check(c, m, X)
    if isinstance(X, np.ndarray):
        _check(c, m, X.astype(np.float32))


@pytest.mark.parametrize("runtime", ["auto", "quickscorer"])
def test_single_row_allocates_only_the_output_and_never_revalidates(models, monkeypatch, runtime):
    m, X = models["reg"]
    row = np.ascontiguousarray(X[:1])
    c = hardwood.compile(m, runtime)
    ref = m.predict(row, runtime="naive")
    c.predict(row)
    import hardwood.model.io as io

    def boom(*a, **k):
        raise AssertionError("the model was validated again")

    monkeypatch.setattr(io, "validate_tree", boom)
    monkeypatch.setattr(m, "prepare", boom)
    monkeypatch.setattr(m, "packed", boom)
    out = np.empty((1, 1))
    tracemalloc.start()
    for _ in range(20):
        c.predict(row)
        c.predict(row, out=out)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # the output (8 bytes + the array header) and a view of it; nothing in proportion to the model
    assert peak < 2000, peak
    np.testing.assert_allclose(c.predict(row, out=out), ref, rtol=1e-12)


def _softmax_model(models):
    m, X = models["multi"]
    return Model(m.trees, m.tree_group, m.base_score, "multi:softmax", m.n_outputs, m.info), X


def _rows(X, n=60):
    """Single rows of X (NaN in some of them, none in others), in each float width."""
    if isinstance(X, pd.DataFrame):
        return [X.iloc[i:i + 1] for i in range(min(n, len(X)))]
    rows = []
    for i in range(min(n, len(X))):
        for dt in (np.float32, np.float64):
            rows.append(np.ascontiguousarray(X[i:i + 1], dtype=dt))
    return rows


@pytest.mark.parametrize("name", ["reg", "binary", "multi", "softmax", "cat", "random",
                                  "balanced"])
def test_single_row_path_equals_naive_exactly(models, name):
    """The one-row kernels (pred, vpred, auto; QuickScorer's) give the naive runtime's floats
    bit for bit: NaN and default directions, categorical splits, several outputs, an argmax
    objective, trees of mixed depths (some of depth 0), both input widths, with and without
    out=."""
    m, X = _softmax_model(models) if name == "softmax" else models[name]
    naive = hardwood.compile(m, "naive")
    K = max(m.n_outputs, 1)
    nan_rows = 0
    for rt in ("pred", "vpred", "auto") + (("quickscorer",) if name != "cat" else ()):
        c = hardwood.compile(m, rt)
        assert c._one is not None, rt  # the model has a one-row kernel
        assert (c._fast is None) == (name == "cat")
        for row in _rows(X):
            nan_rows += int(np.asarray(pd.isna(row)).any())
            for output in ("value", "raw"):
                ref = naive.predict(row, output=output)
                got = c.predict(row, output=output)
                assert got.shape == ref.shape and got.dtype == ref.dtype
                np.testing.assert_array_equal(got, ref)
                out = np.empty((1, K))
                np.testing.assert_array_equal(c.predict(row, output=output, out=out), ref)
            np.testing.assert_array_equal(c.predict(row, output="leaf"),
                                          naive.predict(row, output="leaf"))
    assert nan_rows > 0


def test_single_row_fast_path_does_not_touch_the_model(models, monkeypatch):
    """A one-row call goes straight to the bound kernel: no model validation, no layout, no
    input conversion, no batch path."""
    m, X = models["binary"]
    ref = {dt: hardwood.compile(m, "naive").predict(np.ascontiguousarray(X[:1], dt))
           for dt in (np.float32, np.float64)}
    compiled = [hardwood.compile(m, rt) for rt in ("pred", "vpred", "auto", "quickscorer")]
    import hardwood.model.io as io
    from hardwood.predict import pred as pred_mod
    from hardwood.predict import quickscorer as qs_mod

    def boom(*a, **k):
        raise AssertionError("a single-row call re-validated or re-laid-out the model")

    monkeypatch.setattr(io, "validate_tree", boom)
    for name in ("prepare", "packed", "tree_range"):
        monkeypatch.setattr(m, name, boom)
    for name in ("PredLayout", "OneRowLayout", "one_row_unsupported_reason", "kernels",
                 "one_row_kernel", "pack_blob"):
        monkeypatch.setattr(pred_mod, name, boom)
    for name in ("QSLayout", "kernels", "one_row_kernel", "one_row_blob", "unsupported_reason"):
        monkeypatch.setattr(qs_mod, name, boom)
    for cls in (dispatch.CompiledModel, dispatch.PredRuntime, dispatch.VPredRuntime,
                dispatch.AutoRuntime, dispatch.QuickScorerRuntime):
        for name in ("_matrix", "_predict", "_raw", "_leaf", "_build", "_get"):
            monkeypatch.setattr(cls, name, boom, raising=False)
    for c in compiled:
        calls = []
        kernel = c._one
        monkeypatch.setattr(c, "_one", lambda *a, _k=kernel: (calls.append(1), _k(*a))[1])
        for dt in (np.float32, np.float64):
            row = np.ascontiguousarray(X[:1], dt)
            np.testing.assert_array_equal(c.predict(row), ref[dt])
        assert len(calls) == 2, c.runtime


def test_single_row_fast_path_checks_the_row(models):
    m, X = models["reg"]
    c = hardwood.compile(m, "vpred")
    with pytest.raises(ValueError, match="features"):
        c.predict(np.zeros((1, 4), np.float32))
    with pytest.raises(ValueError, match="output"):
        c.predict(np.ascontiguousarray(X[:1]), output="proba")
    # non-contiguous, other dtypes and lists take the checked path and give the same result
    ref = c.predict(np.ascontiguousarray(X[:1], np.float64))
    wide = np.repeat(np.ascontiguousarray(X[:1], np.float64), 2, axis=1)[:, ::2]
    assert not wide.flags.c_contiguous
    for row in (wide, X[:1].astype(np.float16).astype(np.float64), X[:1].tolist()):
        np.testing.assert_array_equal(c.predict(row), ref)


def test_auto_rule_documented():
    """The rule picks what benchmarks/predict_auto_rule.py measured fastest on these shapes
    among the runtimes it may pick: never the patented QuickScorer, even where it is the
    fastest (the shallow and the leaf-wise models below)."""
    S = dispatch.ModelShape
    xgb6 = S(3000, 0, 0, 3000, 28538, 64)  # XGBoost 500 x depth 6
    xgb4 = S(2000, 0, 0, 2000, 7500, 32)  # XGBoost 500 x depth 4
    lgb31 = S(0, 5558, 1196, 1196, 15000, 32)  # LightGBM 31 leaves, 28 features
    lgb63 = S(0, 7182, 1463, 1463, 31000, 64)
    rank = S(84, 5913, 3490, 3503, 15000, 32)  # LambdaMART on rank.train
    lgb255 = S(0, 500 * 21.7, 500 * 5.6, 500 * 5.6, None, 64, "255 leaves")
    picks = {(xgb6, 10**6): "vpred", (xgb6, 1): "vpred", (xgb4, 10**6): "vpred",
             (xgb4, 1): "vpred", (lgb31, 10**6): "vpred", (lgb31, 1): "struct+",
             (lgb63, 10**6): "vpred", (lgb63, 1): "struct+", (rank, 10**6): "vpred",
             (rank, 1): "struct+", (lgb255, 10**6): "vpred", (lgb255, 1): "struct+"}
    for (shape, n), want in picks.items():
        assert dispatch.choose(n, shape) == want, (vars(shape), n)
        assert "quickscorer" not in dispatch.costs(n, shape)
    # the estimates still say where QuickScorer would win, for users who name it
    assert dispatch.costs(10**6, rank, patented=True)["quickscorer"] < \
        dispatch.costs(10**6, rank)["vpred"]
    assert dispatch.PATENTED == {"quickscorer"}
    assert dispatch.tuned_v(28, 6) in (1, 2, 4, 8, 16, 32)


def test_auto_never_runs_quickscorer(models, monkeypatch):
    """QuickScorer is patented: ``auto`` never builds it, for any batch size, on any model."""
    def boom(*a, **k):
        raise AssertionError("auto compiled the patented QuickScorer runtime")

    monkeypatch.setattr(dispatch.QuickScorerRuntime, "_build", boom)
    for name in ("reg", "binary", "multi", "balanced"):
        m, X = models[name]
        a = hardwood.compile(m, "auto")
        for n in (1, 3, 40, 300):
            rows = np.ascontiguousarray(X[:n])
            np.testing.assert_allclose(a.predict(rows), m.predict(rows, runtime="naive"), rtol=1e-12)
            assert a.choose(n) != "quickscorer"


def test_auto_shape_of_a_model(models):
    m, _ = models["cat"]
    a = hardwood.compile(m, "auto")
    assert "categorical" in a.shape.quickscorer_reason and a.shape.qs_nodes is None
    m, _ = models["random"]
    shape = hardwood.compile(m, "auto").shape
    depths = [t.depth() for t in m.trees]
    assert shape.padded_levels + shape.walked_levels == sum(depths)
    assert 0 < shape.paths <= sum(depths)
    assert shape.qs_nodes == sum(int((t.feature >= 0).sum()) for t in m.trees)


_CUDA_SCRIPT = r"""
import numpy as np, hardwood
from hardwood.model.model import Model
rng = np.random.default_rng(0)
X = rng.normal(size=(200, 4)).astype(np.float32)
X[rng.random(X.shape) < 0.2] = np.nan
y = np.nan_to_num(X[:, 0]) + np.isnan(X[:, 1])
m = hardwood.train({"max_depth": 3}, hardwood.Dataset(X, y), num_boost_round=3)
c = hardwood.compile(m, "cuda")
for out in ("raw", "value", "leaf"):
    got, ref = c.predict(X[:20], output=out), m.predict(X[:20], output=out, runtime="naive")
    assert np.allclose(got, ref, rtol=1e-12, atol=1e-12), (out, got, ref)
print("CUDA-OK")
"""


def test_cuda_runtime_under_simulator():
    try:
        import numba.cuda  # noqa: F401
    except Exception:  # pragma: no cover
        pytest.skip("numba-cuda is not installed")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", PRELUDE + _CUDA_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=300)
    assert "CUDA-OK" in r.stdout, r.stdout + r.stderr


def test_tree_shape_kernels_equal_the_python_loops(models):
    """predict.treeshape's compiled depth and breadth-first order equal Tree.node_depths and
    the breadth-first loop they replace in the layouts."""
    from hardwood.predict import treeshape

    def bfs(t):
        order, k = [0], 0
        while k < len(order):
            i = order[k]
            k += 1
            if t.feature[i] >= 0:
                order += [int(t.left[i]), int(t.right[i])]
        return order

    trees = [t for name in ("reg", "multi", "cat", "random") for t in models[name][0].trees]
    trees += _random_model(5, n_trees=20, depth=9)[0].trees
    for t in trees:
        np.testing.assert_array_equal(treeshape.node_depths(t), t.node_depths())
        assert treeshape.depth(t) == t.depth()
        np.testing.assert_array_equal(treeshape.breadth_first(t), bfs(t))


def _shared_splits_model(base, X, W=3, seed=0, objective="multi:softprob"):
    """``base``'s trees, each repeated ``W`` times with its own leaf values and outputs
    0 .. W-1 (a forest's per-class trees share their splits the same way)."""
    rng = np.random.default_rng(seed)
    trees, group = [], []
    for t in base.trees:
        for k in range(W):
            arrays = {f: getattr(t, f) for f in ("feature", "threshold", "left", "right",
                                                 "default_left", "is_categorical",
                                                 "cat_offset", "gain", "cover", "count",
                                                 "cat_bitsets")}
            # copies, not views: sharing is recognised by content, as in a loaded model
            arrays = {f: np.array(a) for f, a in arrays.items()}
            trees.append(Tree.from_arrays(value=rng.normal(size=t.n_nodes), **arrays))
            group.append(k)
    m = Model(trees, np.asarray(group, np.int32), rng.normal(size=W), objective, W, base.info)
    return m, X


@pytest.fixture(scope="module")
def shared_models(models):
    return {"random": _shared_splits_model(*_random_model(11, n_trees=10, depth=9)),
            "balanced": _shared_splits_model(*_random_model(12, balanced=True), W=2),
            "cat": _shared_splits_model(*models["cat"], W=4),
            "forest": _shared_splits_model(*_random_model(13, depth=12), W=5,
                                           objective="multi:proba")}


@pytest.mark.parametrize("walk", ["auto", "all", "none"])
@pytest.mark.parametrize("name", ["random", "balanced", "cat", "forest"])
def test_trees_sharing_their_splits_walk_once(shared_models, monkeypatch, name, walk):
    """Runs of class trees with the same splits (forests) are walked once by pred/vpred/auto,
    the leaf adding one value per tree: the naive walk's output, leaf ids included, padded and
    unpadded, with NaN, in both float widths."""
    monkeypatch.setattr(dispatch.PredRuntime, "_walk", walk)
    m, X = shared_models[name]
    for runtime in ("pred", "vpred", "auto"):
        c = hardwood.compile(m, runtime)
        if runtime != "auto":
            assert c.width == m.n_outputs
        _check(c, m, X)
        if isinstance(X, np.ndarray):
            _check(c, m, X.astype(np.float32))
            for n in (7, 300):  # serial and parallel blocks, rows left over after the lanes
                sub = np.ascontiguousarray(X[:n])
                np.testing.assert_array_equal(c.predict(sub, output="leaf"),
                                              m.predict(sub, output="leaf", runtime="naive"))


def test_shared_splits_are_recognised_by_content():
    from hardwood.predict import treeshape
    m, X = _shared_splits_model(*_random_model(14, n_trees=4), W=3)
    assert treeshape.shared_structure(m.trees, m.tree_group, 0, len(m.trees), 3)
    assert not treeshape.shared_structure(m.trees, m.tree_group, 0, len(m.trees), 1)
    assert not treeshape.shared_structure(m.trees, m.tree_group, 0, len(m.trees) - 1, 3)
    group = m.tree_group.copy()
    group[[0, 1]] = group[[1, 0]]  # outputs out of order: no run
    assert not treeshape.shared_structure(m.trees, group, 0, len(m.trees), 3)
    t = m.trees[4]
    if np.any(t.feature >= 0):
        thr = t.threshold.copy()
        thr[np.flatnonzero(t.feature >= 0)[0]] += 1.0  # one split differs: no run
        trees = list(m.trees)
        trees[4] = Tree.from_arrays(**{**{f: getattr(t, f) for f in (
            "feature", "left", "right", "default_left", "is_categorical", "cat_offset",
            "value", "gain", "cover", "count", "cat_bitsets")}, "threshold": thr})
        assert not treeshape.shared_structure(trees, m.tree_group, 0, len(trees), 3)
        m2 = Model(trees, m.tree_group, m.base_score, m.objective, 3, m.info)
        c = hardwood.compile(m2, "vpred")
        assert c.width == 1
        _check(c, m2, X)


def test_auto_one_row_with_shared_walks():
    """One row of a model whose trees take the unpadded walk goes to the struct+ walk (the
    naive walk's path over 16-byte nodes), unless one of vpred's walks serves several trees
    (a forest's class trees)."""
    S = dispatch.ModelShape
    forest = dict(padded_levels=0, walked_levels=30 * 7 * 28, walked_paths=30 * 7 * 20,
                  paths=30 * 7 * 20, qs_nodes=None)
    assert dispatch.choose(1, S(**forest)) == "struct+"
    assert dispatch.choose(1, S(**forest, width=7)) == "vpred"
    assert dispatch.choose(10**5, S(**forest, width=7)) == "vpred"


@pytest.mark.parametrize("direct", [False, True])
def test_big_trees_walk_in_big_blocks(shared_models, monkeypatch, direct):
    """Big trees (forests) take the unpadded walk in blocks of about one row per node; the
    output is the naive walk's for any row count (blocks cut to two a thread, rows left
    over after the lanes), read in place or copied."""
    from hardwood.predict import pred_runtime
    monkeypatch.setattr(pred_runtime, "WALK_BIG_TREE", 1)
    monkeypatch.setattr(dispatch.PredRuntime, "block", 8)  # the test's trees are small
    monkeypatch.setattr(pred_runtime, "DIRECT_FACTOR", 10 ** 9 if direct else 0)
    monkeypatch.setattr(dispatch.PredRuntime, "_walk", "all")
    for name in ("forest", "random"):
        m, X = shared_models[name]
        big = np.concatenate([X] * 4)  # 1,200 rows: parallel blocks
        c = hardwood.compile(m, "vpred")
        assert c.walk_block > c.block
        for rows in (big, big[:601], big[:300], big[:7]):
            for output in ("raw", "leaf"):
                _assert_output(c.predict(rows, output=output), m.predict(rows, output=output),
                               output)


def test_packed_forest_equals_the_numpy_packing(models, shared_models):
    """naive.pack (links made absolute by a kernel) equals the plain numpy packing."""
    from hardwood.predict.naive import pack

    def numpy_pack(trees):
        sizes = np.array([t.n_nodes for t in trees])
        roots = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        woff = np.concatenate([[0], np.cumsum([t.cat_bitsets.size for t in trees])[:-1]])
        node_tree = np.repeat(np.arange(len(trees)), sizes)
        cat = lambda name: np.concatenate([getattr(t, name) for t in trees])  # noqa: E731
        internal = cat("feature") >= 0
        co = cat("cat_offset").astype(np.int64)
        return {"left": np.where(internal, cat("left") + roots[node_tree], -1),
                "right": np.where(internal, cat("right") + roots[node_tree], -1),
                "cat_offset": np.where(co >= 0, co + woff[node_tree], -1),
                "feature": cat("feature"), "threshold": cat("threshold"),
                "value": cat("value"), "default_left": cat("default_left"),
                "is_categorical": cat("is_categorical"), "bitsets": cat("cat_bitsets"),
                "roots": roots}

    for m, _ in list(models.values()) + list(shared_models.values()):
        got = pack(m.trees, m.tree_group, m.info.n_categories)
        for name, ref in numpy_pack(m.trees).items():
            np.testing.assert_array_equal(getattr(got, name), ref, err_msg=name)
        assert got.left.dtype == got.right.dtype == np.int32
        assert got.cat_offset.dtype == np.int64 and got.feature.dtype == np.int32


def test_auto_lays_out_the_struct_walk_on_the_first_single_row(models, shared_models):
    """auto compiles its batch runtime with the model; where one row goes to the struct+ walk
    (no one-row kernel to bind), its layout is made on the first call of a few rows, and it
    gives the naive walk's output."""
    seen = 0
    deep = _random_model(15, n_trees=8, depth=12)  # unbalanced and deep: the unpadded walk
    for m, X in list(models.values()) + list(shared_models.values()) + [deep]:
        a = hardwood.compile(m, "auto")
        assert "vpred" in a._rt
        if a.choose(1) != "struct+":
            continue
        seen += 1
        assert "struct+" not in a._rt
        for rows in (X[:1], X[:3]):
            np.testing.assert_allclose(a.predict(rows, output="raw"),
                                       m.predict(rows, output="raw", runtime="naive"),
                                       rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(a.predict(rows, output="leaf"),
                                          m.predict(rows, output="leaf", runtime="naive"))
        assert "struct+" in a._rt
    assert seen


@pytest.mark.parametrize("walk", ["auto", "all"])
def test_nan_and_infinities_take_their_default_way_without_a_test(monkeypatch, walk):
    """The dual copy of a block's rows, and of one row (``pred.transposed_block``): NaN reaches
    a default-left split as -inf and a default-right split as NaN, so rows with NaN take the
    plain walk. Splits of both default directions at thresholds of -inf, +inf and the float
    limits, rows holding NaN, -inf and +inf (in lanes and in the rows left over after the
    lanes), in both float widths, batch and one row: the naive walk's output, bit for bit."""
    monkeypatch.setattr(dispatch.PredRuntime, "_walk", walk)
    rng = np.random.default_rng(11)
    m, _ = _random_model(5, n_trees=10, n_features=5, depth=4, balanced=walk == "auto")
    specials = [-np.inf, np.inf, np.finfo(np.float64).max, -np.finfo(np.float32).max]
    for t in m.trees:
        for i in np.flatnonzero(t.feature >= 0)[::2]:
            t.threshold[i] = specials[int(rng.integers(len(specials)))]
    X = rng.normal(size=(301, 5))
    X[rng.random(X.shape) < 0.25] = np.nan
    X[rng.random(X.shape) < 0.1] = -np.inf
    X[rng.random(X.shape) < 0.1] = np.inf
    naive = hardwood.compile(m, "naive")
    for rt in ("pred", "vpred", "auto"):
        c = hardwood.compile(m, rt)
        if rt != "auto":
            assert c.dual and not c.direct
            assert c.walked == (len(m.trees) if walk == "all" else 0)
        for x in (X, X.astype(np.float32), X[:13], X[:300]):
            for output in ("raw", "leaf"):
                np.testing.assert_array_equal(c.predict(x, output=output),
                                              naive.predict(x, output=output))
        for r in range(0, 301, 7):
            for dt in (np.float64, np.float32):
                row = np.ascontiguousarray(X[r:r + 1], dtype=dt)
                np.testing.assert_array_equal(c.predict(row), naive.predict(row))


def test_float64_row_rounded_to_float32_reads_float32_thresholds():
    """One float64 row of a model whose thresholds are float32 boundaries (XGBoost's, as
    imported) is rounded to float32 and reads the float32 thresholds: exact for values at,
    just above and just below a threshold and the float32 midpoints, beyond float32's range,
    infinite and NaN, both default ways. A model with another threshold (-inf, or any float64)
    keeps the float64 thresholds."""
    from hardwood.importers._build import float32_boundary
    from hardwood.predict.pred import rounds_to_float32
    rng = np.random.default_rng(12)
    m, _ = _random_model(6, n_trees=8, n_features=4, depth=4, balanced=True)
    f32max = np.finfo(np.float32).max
    for t in m.trees:
        inner = np.flatnonzero(t.feature >= 0)
        s32 = t.threshold[inner].astype(np.float32)
        s32[1::4] = [(np.inf, f32max, -f32max, 0.0)[k % 4] for k in range(len(s32[1::4]))]
        t.threshold[inner] = [float32_boundary(v) for v in s32]
    thr = np.concatenate([t.threshold[t.feature >= 0] for t in m.trees])
    assert rounds_to_float32(thr)
    assert not rounds_to_float32([-np.inf]) and not rounds_to_float32([0.1])
    with np.errstate(over="ignore"):
        s32 = thr.astype(np.float32)
        cands = np.concatenate([thr, np.nextafter(thr, np.inf), np.nextafter(thr, -np.inf),
                                s32, np.nextafter(s32, np.float32(np.inf)),
                                [1e300, -1e300, 2.0 ** 128, np.nan, np.inf, -np.inf, 0.0, -0.0]])
    c = hardwood.compile(m, "vpred")
    assert c.one_row.round32
    naive = hardwood.compile(m, "naive")
    for _ in range(400):
        row = rng.choice(cands, size=(1, 4))
        np.testing.assert_array_equal(c.predict(row), naive.predict(row))


@pytest.mark.parametrize("v,chunk", [(4, 2048), (8, 2048), (8, 40)])
def test_chained_walk_equals_the_naive_walk(monkeypatch, v, chunk):
    """predict.chainwalk (one-output numerical models' unpadded trees): the same floats as
    the naive walk (leaf values added in tree order), with one-leaf trees among the others,
    NaN, both float widths, partial lane groups, parallel blocks and the trees in one or
    several chunks; leaf ids from vwalk."""
    from hardwood.predict import chainwalk, dispatch, pred_runtime
    monkeypatch.setattr(dispatch.PredRuntime, "_walk", "all")
    monkeypatch.setattr(pred_runtime, "CHAIN_V", v)
    monkeypatch.setattr(chainwalk, "CHUNK_NODES", chunk)
    m, X = _random_model(5, n_trees=40, n_features=6, depth=7)
    assert any(t.n_nodes == 1 for t in m.trees) and any(t.n_nodes > 20 for t in m.trees)
    c = hardwood.compile(m, "vpred", v=v)
    assert [p[2] for p in c.passes] == ["chain", "leaf"]
    assert (len(c.passes[0][1].starts) > 3) is (chunk < 100)
    big = np.concatenate([X] * 4)  # more rows than SERIAL_ROWS: the parallel driver
    for x in (X, X[:v + 3], X[:1], big, big.astype(np.float32)):
        for output in ("raw", "leaf"):
            np.testing.assert_array_equal(c.predict(x, output=output),
                                          m.predict(x, output=output, runtime="naive"))


def test_chained_walk_only_where_it_serves(models, monkeypatch):
    """Several outputs, categorical splits, rows read in place (no block copy), or trees past
    CHAIN_MAX_NODES internal nodes keep vwalk's walk for raw scores too."""
    from hardwood.predict import dispatch, pred_runtime
    monkeypatch.setattr(dispatch.PredRuntime, "_walk", "all")
    for name in ("multi", "cat", "random"):  # "random": 12 small trees, read in place
        c = hardwood.compile(models[name][0], "vpred", v=4)
        assert "chain" not in [p[2] for p in c.passes], name
    m, X = _random_model(5, n_trees=40, n_features=6, depth=7)
    assert "chain" in [p[2] for p in hardwood.compile(m, "vpred", v=4).passes]
    monkeypatch.setattr(pred_runtime, "CHAIN_MAX_NODES", 1)
    c = hardwood.compile(m, "vpred", v=4)
    assert "chain" not in [p[2] for p in c.passes]
    np.testing.assert_array_equal(c.predict(X), m.predict(X))


def test_chained_walk_on_hostile_rows(monkeypatch):
    """The chained walk on rows of +-inf, -0.0 and +0.0, values exactly on thresholds, and
    read-only, Fortran-ordered and float32 arrays: the naive walk's floats (its float32 rows
    compare ordered keys, so -0.0 and +0.0 and the infinities must order as floats do)."""
    from hardwood.predict import dispatch
    monkeypatch.setattr(dispatch.PredRuntime, "_walk", "all")
    m, X = _random_model(5, n_trees=40, n_features=6, depth=7)
    c = hardwood.compile(m, "vpred")
    assert [p[2] for p in c.passes] == ["chain", "leaf"]
    rng = np.random.default_rng(0)
    X = X.copy()
    for value in (np.inf, -np.inf, -0.0, 0.0):
        X[rng.random(X.shape) < 0.1] = value
    thr = np.concatenate([t.threshold[t.feature >= 0] for t in m.trees])
    X[:50, 0] = rng.choice(thr, 50)  # exactly on thresholds
    for x in (X, X.astype(np.float32), np.asfortranarray(X)):
        x = x.copy(order="K")
        x.setflags(write=False)
        np.testing.assert_array_equal(c.predict(x, output="raw"), m.predict(x, output="raw"))
