"""The ordered-key walk of vpred (issue 20, ``pred.key_walk_source``): float keys, the node
layout, and the walk against the float walk and the naive walk, bit for bit."""
import os
import sys

import numpy as np
import pytest
from numba import njit

import hardwood
from hardwood.backends._intrinsics import key_lanes, order_key
from hardwood.data.convert import FeatureInfo
from hardwood.model.model import Model
from hardwood.predict import dispatch, pred, pred_runtime

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # the random trees live in test_predict_runtimes.py, next to this file
    sys.path.insert(0, HERE)

from test_predict_runtimes import _random_tree  # noqa: E402

SPECIAL = [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 1.5, np.nextafter(1.0, 2.0),
           np.finfo(np.float32).max, -np.finfo(np.float32).max, np.finfo(np.float32).tiny,
           1e-45, -1e-45, np.finfo(np.float64).max, -np.finfo(np.float64).max, 5e-324,
           -5e-324, 1e300, -1e300]


def _values(dt, rng):
    with np.errstate(over="ignore"):
        v = np.concatenate([np.asarray(SPECIAL, np.float64).astype(dt),
                            rng.normal(size=200).astype(dt),
                            (rng.normal(size=100) * 1e30).astype(dt)])
    return v


@njit
def _keys(a, out):
    for i in range(a.size):
        out[i] = order_key(a[i])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_order_keys_sort_as_the_floats(dt):
    """x <= t  <=>  key(x) <= key(t) for every pair of non-NaN floats (both zeros, both
    infinities, subnormals, the limits); the kernels' order_key equals pred.order_keys."""
    v = _values(dt, np.random.default_rng(0))
    k = pred.order_keys(v)
    assert k.dtype == (np.uint32 if dt == np.float32 else np.uint64)
    np.testing.assert_array_equal(v[:, None] <= v[None, :], k[:, None] <= k[None, :])
    got = np.empty_like(k)
    _keys(v, got)
    np.testing.assert_array_equal(got, k)


def test_key_arrays_layout():
    """Tree k's node j (1-based) at item j of its stretch: float32 records key | offset << 32
    (2**D items a tree), float64 keys and, 2**D items further, offsets (2 * 2**D a tree)."""
    D, T = 3, 4
    NI, NL = 7, 8
    rng = np.random.default_rng(1)
    featu = rng.integers(0, 300, size=T * NI).astype(np.uint16)
    thr64 = rng.normal(size=T * NI)
    thr32 = pred.floor32(thr64)
    rec32, rec64 = pred.key_arrays(featu, thr32, thr64, D)
    assert rec32.dtype == rec64.dtype == np.uint64
    assert rec32.size == T * NL and rec64.size == 2 * T * NL
    for k in range(T):
        for j in range(1, NL):
            i = k * NI + j - 1
            r = int(rec32[k * NL + j])
            assert r & 0xFFFFFFFF == int(pred.order_keys(thr32[i:i + 1])[0])
            assert r >> 32 == featu[i]
            assert rec64[k * 2 * NL + j] == pred.order_keys(thr64[i:i + 1])[0]
            assert rec64[k * 2 * NL + NL + j] == featu[i]


@njit
def _lanes12(tk, xq):
    return key_lanes(tk, xq, 12, 3)


@njit
def _lanes13(tk, xq):  # more lanes than registers: the plain code
    return key_lanes(tk, xq, 13, 3)


@pytest.mark.parametrize("kdt", [np.uint32, np.uint64])
def test_key_lanes_equal_the_heap_walk(kdt):
    """key_lanes (the assembly on x86-64 up to 12 lanes, the plain code beyond) equals a
    Python walk of the heap, j = 2j + (key[j] < x), in both layouts."""
    rng = np.random.default_rng(2)
    D, NL, F, V = 3, 8, 5, 13
    keys = rng.integers(0, 50, size=NL).astype(np.uint64)
    offs = rng.integers(0, F, size=NL).astype(np.uint64) * V
    if kdt == np.uint32:
        tk = keys | (offs << np.uint64(32))
    else:
        tk = np.concatenate([keys, offs])
    for _ in range(20):
        xq = rng.integers(0, 50, size=F * V).astype(kdt)
        want = []
        for lane in range(V):
            j = 1
            for _ in range(D):
                j = 2 * j + int(keys[j] < xq[int(offs[j]) + lane])
            want.append(j)
        assert list(_lanes13(tk, xq)) == want
        # 12 lanes over the same block (offsets are u * 13: lanes 0..11 of it)
        assert list(_lanes12(tk, xq)) == want[:12]


def _model(seed, depth, n_trees=9, n_features=6, K=1, balanced=True):
    rng = np.random.default_rng(seed)
    thresholds = np.concatenate([rng.normal(size=40), SPECIAL])
    trees = [_random_tree(rng, n_features, depth, balanced, thresholds, p_leaf=0.25)
             for _ in range(n_trees * K)]
    info = FeatureInfo(names=[f"f{j}" for j in range(n_features)],
                       is_categorical=np.zeros(n_features, bool), categories=[None] * n_features)
    groups = np.arange(n_trees * K, dtype=np.int32) % K
    objective = "multi:softprob" if K > 1 else "reg:squarederror"
    m = Model(trees, groups, [0.25] * K, objective, K, info)
    X = rng.choice(np.concatenate([rng.normal(size=50), SPECIAL, [np.nan] * 10]),
                   size=(517, n_features))
    X[:, 0] = rng.normal(size=517)
    return m, X


@pytest.mark.parametrize("depth", [1, 2, 6, 9])
@pytest.mark.parametrize("K", [1, 3])
def test_keyed_walk_equals_the_float_walk_and_the_naive_walk(monkeypatch, depth, K):
    """Random padded models (thresholds at both zeros, the infinities, the float32 and
    float64 limits, subnormals; NaN going either way), rows of those values and NaN, in both
    float widths, in lane counts 1-32 (up to 12 in assembly on x86-64) and numbers of rows
    that leave partial groups and blocks (depth 9: unbalanced trees, some on the unpadded
    walk): raw values and leaf ids equal the float walk's and (one pass) the naive walk's,
    bit for bit."""
    m, X = _model(depth * 10 + K, depth, K=K, balanced=depth != 9)
    naive = hardwood.compile(m, "naive")
    monkeypatch.setattr(pred_runtime, "DIRECT_FACTOR", 0)  # the block copy, however few trees
    monkeypatch.setattr(pred_runtime.PredRuntime, "_keyed", False)
    flt = hardwood.compile(m, "vpred")
    assert not flt.keyed
    monkeypatch.setattr(pred_runtime.PredRuntime, "_keyed", True)
    for v in (None, 1, 16, 32):
        c = hardwood.compile(m, "vpred", v=v)
        assert c.keyed and any(p[2] == "keyed" for p in c.passes)
        with np.errstate(over="ignore"):
            x32 = X.astype(np.float32)
        for x in (X, x32, X[:13], X[:96], X[:97], X[:300]):
            for output in ("raw", "leaf"):
                got = c.predict(x, output=output)
                ref = naive.predict(x, output=output)
                if len(c.passes) == 1 or output == "leaf":
                    np.testing.assert_array_equal(got, ref)
                else:  # several passes add in another order (base.py)
                    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
                np.testing.assert_array_equal(got, flt.predict(x, output=output))


def test_auto_takes_the_keyed_walk_for_a_numerical_model():
    """auto's batch runtime (vpred) walks a numerical model's padded trees on ordered keys."""
    m, X = _model(5, 4, n_trees=40)
    a = hardwood.compile(m, "auto")
    a.predict(X)
    assert a._get(X.shape[0]).keyed
    np.testing.assert_array_equal(a.predict(X), hardwood.compile(m, "naive").predict(X))
    assert dispatch.PredRuntime._keyed
