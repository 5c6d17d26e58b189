"""Fast kernels against their naive twins (backends/reference.py)."""
import numpy as np
import pytest

import hardwood as hw
from hardwood.backends.cpu import CPUBackend
from hardwood.backends.reference import (ReferenceBackend, categorical_split_naive,
                                         histogram_naive, numeric_split_naive)
from hardwood.model.tree import BinnedTree
from hardwood.backends.split import categorical_left_set, find_best_splits


def _binned(n, d, n_bins, seed, dtype=np.uint8):
    rng = np.random.default_rng(seed)
    nb = rng.integers(2, n_bins + 1, size=d)
    B = np.stack([rng.integers(0, k, size=n) for k in nb], axis=1).astype(dtype)
    offsets = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(nb, out=offsets[1:])
    return B, np.ascontiguousarray(B.T), offsets, rng


@pytest.mark.parametrize("dtype,d", [(np.uint8, 7), (np.uint16, 7), (np.uint8, 150)])
def test_histogram_matches_naive(dtype, d):
    """d=150 fields of up to 256 bins exceed the cache budget: the feature-blocked path."""
    B, BC, offsets, rng = _binned(40_000 if d < 100 else 6_000, d,
                                  300 if dtype == np.uint16 else 256, 0, dtype)
    g = rng.standard_normal(B.shape[0]).astype(np.float32)
    h = rng.random(B.shape[0]).astype(np.float32)
    n = B.shape[0]
    rows = np.sort(rng.choice(n, n * 3 // 4, replace=False)).astype(np.int32)
    cut = [0, 100, n // 2, n * 5 // 8, n * 5 // 8]
    begins, ends = cut[:-1], cut[1:]  # the last node is empty
    fast = CPUBackend(B, BC, offsets).build_histograms(rows, begins, ends, g, h)
    for i, (b, e) in enumerate(zip(begins, ends)):
        ref = histogram_naive(B, offsets[:-1], rows[b:e], g, h, int(offsets[-1]))
        np.testing.assert_allclose(fast[i], ref, rtol=1e-10, atol=1e-9)


def test_partition_matches_naive():
    B, BC, offsets, rng = _binned(50_000, 5, 64, 1)
    rows = np.sort(rng.choice(B.shape[0], 45_000, replace=False)).astype(np.int32)
    begins, ends = [0, 17, 30_000], [17, 30_000, 45_000]
    feats = [0, 3, 4]
    tables = rng.integers(0, 2, size=(3, 64)).astype(np.uint8)
    fast_rows = rows.copy()
    mids = CPUBackend(B, BC, offsets).partition(fast_rows, begins, ends, feats, tables)
    ref_rows = rows.copy()
    ref_mids = ReferenceBackend(B, BC, offsets).partition(ref_rows, begins, ends, feats, tables)
    np.testing.assert_array_equal(mids, ref_mids)
    np.testing.assert_array_equal(fast_rows, ref_rows)
    # stable: each side stays ascending
    for b, m, e in zip(begins, mids, ends):
        assert np.all(np.diff(fast_rows[b:m]) > 0) and np.all(np.diff(fast_rows[m:e]) > 0)


def test_leaf_update_and_binned_predict_match_naive():
    B, BC, offsets, rng = _binned(5_000, 4, 16, 2)
    # a 3-node tree on feature 2: bins 0..5 left
    table = np.zeros(17, dtype=np.uint8)
    table[:6] = 1
    t = BinnedTree(feature=np.array([2, -1, -1]), table_offset=np.array([0, 0, 0]), table=table,
                   left=np.array([1, -1, -1]), right=np.array([2, -1, -1]),
                   value=np.array([0.0, -1.5, 2.5]))
    fast = np.zeros(B.shape[0])
    CPUBackend(B, BC, offsets).predict_binned(B, t, fast)
    ref = np.zeros(B.shape[0])
    ReferenceBackend(B, BC, offsets).predict_binned(B, t, ref)
    np.testing.assert_array_equal(fast, ref)
    np.testing.assert_array_equal(fast, np.where(B[:, 2] <= 5, -1.5, 2.5))
    rows = np.arange(B.shape[0], dtype=np.int32)
    pred = np.zeros(B.shape[0])
    CPUBackend(B, BC, offsets).add_leaf_values(rows, [0, 10], [10, 5_000], [1.0, 2.0], pred)
    assert pred[:10].sum() == 10 and pred[10:].sum() == 2 * 4_990


@pytest.mark.parametrize("lam,alpha,mcw", [(1.0, 0.0, 1.0), (0.0, 0.5, 0.0), (5.0, 0.0, 10.0)])
def test_numeric_split_matches_brute_force(lam, alpha, mcw):
    rng = np.random.default_rng(3)
    d = 6
    nv = rng.integers(1, 20, size=d)
    n_bins = nv + 1
    offsets = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(n_bins, out=offsets[1:])
    for trial in range(20):
        hist = np.zeros((offsets[-1], 2))
        hist[:, 0] = rng.standard_normal(offsets[-1]) * 5
        hist[:, 1] = rng.random(offsets[-1]) * 4 * (rng.random(offsets[-1]) > 0.2)
        hist[hist[:, 1] == 0, 0] = 0
        G = hist[offsets[0]:offsets[1], 0].sum()
        H = hist[offsets[0]:offsets[1], 1].sum()
        # every field must describe the same rows: rescale fields to equal totals
        for j in range(1, d):
            sl = slice(offsets[j], offsets[j + 1])
            s = hist[sl, 1].sum()
            if s == 0:
                hist[offsets[j], 1] = H
                hist[offsets[j], 0] = G
            else:
                hist[sl, 1] *= H / s
                hist[sl, 0] += (G - hist[sl, 0].sum()) * hist[sl, 1] / H
        mask = np.ones((1, d), dtype=np.bool_)
        gain, feat, code, dl, GL, HL = find_best_splits(
            hist[None], np.array([G]), np.array([H]), mask, offsets[:-1], nv.astype(np.int64),
            np.zeros(d, dtype=np.bool_), lam, alpha, mcw, 4, 64)
        best = max((numeric_split_naive(hist, offsets[j], nv[j], lam, alpha, mcw) + (j,)
                    for j in range(d)), key=lambda t: t[0])
        if not np.isfinite(best[0]):
            assert not np.isfinite(gain[0])
            continue
        assert gain[0] == pytest.approx(best[0], rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("K", [3, 6])
def test_categorical_split_is_optimal_for_small_fields(K):
    """With lambda = 0 sorting by G/H finds the best partition (Fisher); compare with all subsets."""
    rng = np.random.default_rng(4)
    for trial in range(30):
        hist = np.zeros((K + 1, 2))
        hist[:, 1] = rng.random(K + 1) * 3 + 0.1
        hist[:, 0] = rng.standard_normal(K + 1) * 3
        G, H = hist[:, 0].sum(), hist[:, 1].sum()
        gain, feat, code, dl, GL, HL = find_best_splits(
            hist[None], np.array([G]), np.array([H]), np.ones((1, 1), np.bool_),
            np.array([0]), np.array([K]), np.array([True]), 0.0, 0.0, 0.0, 1, 64)
        ref = categorical_split_naive(hist, 0, K, 0.0, 0.0, 0.0)
        assert gain[0] == pytest.approx(ref, rel=1e-9)
        left = categorical_left_set(hist, 0, K, 0.0, 0.0, 0.0, code[0])
        L = hist[:K][left].sum(axis=0) + (hist[K] if dl[0] else 0)
        assert L[0] == pytest.approx(GL[0]) and L[1] == pytest.approx(HL[0])


@pytest.mark.parametrize("policy", ["depthwise", "lossguide"])
def test_training_with_naive_twins_gives_the_same_model(policy):
    rng = np.random.default_rng(5)
    X = rng.standard_normal((600, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 4] = rng.integers(0, 7, 600)
    y = (np.nan_to_num(X[:, 0]) + (X[:, 4] % 3 == 0) + 0.3 * rng.standard_normal(600) > 0.5).astype(float)
    ds = hw.Dataset(X, y, categorical_features=[4])
    params = {"objective": "binary:logistic", "max_depth": 4, "grow_policy": policy,
              "max_leaves": 12 if policy == "lossguide" else 0, "max_cat_to_onehot": 2}
    fast = hw.train(dict(params, backend="cpu"), ds, 8)
    slow = hw.train(dict(params, backend="reference"), ds, 8)
    for a, b in zip(fast.trees, slow.trees):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_allclose(a.value, b.value, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fast.predict(X), slow.predict(X), rtol=1e-9)


@pytest.mark.parametrize("lanes", [1, 2])
def test_pooled_histograms_with_lanes_match_naive(lanes):
    from hardwood.backends.cpu_grower import _build_hists

    B, BC, offsets, rng = _binned(50_000, 6, 40, 6)
    B[rng.random(B.shape[0]) < 0.4, 2] = 0  # a dominant bin, the case lanes exist for
    g = rng.standard_normal(B.shape[0]).astype(np.float32)
    h = rng.random(B.shape[0]).astype(np.float32)
    rows = np.arange(B.shape[0], dtype=np.int32)
    tb = int(offsets[-1])
    pool = np.full((3, 2 * tb), np.nan)
    begins, ends = np.array([0, 30_000]), np.array([30_000, 50_000])
    _build_hists(B, g, h, rows, begins, ends, offsets[:-1], pool, np.array([2, 0]), lanes)
    for s, slot in enumerate([2, 0]):
        ref = histogram_naive(B, offsets[:-1], rows[begins[s]:ends[s]], g, h, tb)
        np.testing.assert_allclose(pool[slot].reshape(tb, 2), ref, rtol=1e-10, atol=1e-9)


def test_lanes_are_chosen_for_dominant_bins():
    from hardwood.backends.cpu import choose_lanes

    rng = np.random.default_rng(7)
    uniform = rng.integers(0, 255, size=(10_000, 4)).astype(np.uint8)
    assert choose_lanes(uniform) == 1
    skewed = uniform.copy()
    skewed[: 3_000, 1] = 7
    assert choose_lanes(skewed) == 2


def test_exp_fast_is_within_about_one_ulp_of_math_exp():
    from numba import njit

    from hardwood.backends._intrinsics import exp_fast

    @njit
    def apply(x, out):
        for i in range(x.shape[0]):
            out[i] = exp_fast(x[i])

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-708, 709, 200_000), rng.uniform(-30, 30, 200_000),
                        rng.standard_normal(50_000) * 1e-6, [0.0, -0.0, 1.0, -1.0, 708.9, -707.9]])
    out = np.empty_like(x)
    apply(x, out)
    ref = np.exp(x)
    assert np.max(np.abs(out - ref) / ref) < 2.5e-16
    apply(np.array([-1e4, 1e4, -np.inf, np.inf]), out[:4])  # clamped, no overflow or zero
    assert out[0] == out[2] and out[1] == out[3]
    np.testing.assert_allclose(out[:2], np.exp([-708.0, 709.0]), rtol=2.5e-16)


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_logistic_gradients_match_the_libm_sigmoid(weighted, parallel):
    from hardwood.objectives import get_objective

    rng = np.random.default_rng(1)
    n = 50_000
    pred = rng.standard_normal((1, n)) * 4
    y = (rng.random(n) < 0.4).astype(np.float64)
    w = rng.random(n) * 3 if weighted else None
    g = np.empty((1, n), dtype=np.float32)
    h = np.empty((1, n), dtype=np.float32)
    get_objective("binary:logistic", {}).gradients(pred, y, w, g, h, parallel=parallel)
    p = 1.0 / (1.0 + np.exp(-pred[0]))
    ww = w if weighted else 1.0
    np.testing.assert_array_equal(g[0], ((p - y) * ww).astype(np.float32))
    np.testing.assert_array_equal(h[0], (np.maximum(p * (1 - p), 1e-16) * ww).astype(np.float32))


@pytest.mark.parametrize("name", ["reg:squarederror", "reg:absoluteerror",
                                  "reg:pseudohubererror"])
@pytest.mark.parametrize("weighted", [False, True])
def test_regression_gradients_in_both_launches(name, weighted):
    """The regression gradients equal numpy's formulas, in the ``prange`` kernel (after the
    fused grower) and in the range kernel on Python threads (after the learner); n not a
    multiple of either's block, exact zeros of the residual included."""
    from hardwood.objectives import get_objective

    rng = np.random.default_rng(3)
    n = 40_003
    pred = rng.standard_normal((1, n)) * 2
    y = rng.standard_normal(n).astype(np.float32)
    y[:50] = pred[0, :50]
    w = rng.random(n) * 3 if weighted else None
    ww = w if weighted else 1.0
    r = pred[0] - y
    slope = 1.7
    want = {"reg:squarederror": (r * ww, np.ones(n) * ww),
            "reg:absoluteerror": (np.sign(r) * ww, np.ones(n) * ww),
            "reg:pseudohubererror": (r / np.sqrt(1 + (r / slope) ** 2) * ww,
                                     ww / (1 + (r / slope) ** 2) ** 1.5)}[name]
    obj = get_objective(name, {"huber_slope": slope})
    for parallel in (False, True):
        g = np.full((1, n), np.nan, dtype=np.float32)
        h = np.full((1, n), np.nan, dtype=np.float32)
        obj.gradients(pred, y, w, g, h, parallel=parallel)
        np.testing.assert_allclose(g[0], want[0], rtol=2e-7, atol=1e-12)
        np.testing.assert_allclose(h[0], want[1], rtol=2e-7, atol=1e-12)


@pytest.mark.parametrize("n_classes,dtype,d,n,dominant", [
    (2, np.uint8, 6, 2_000, False),      # one block (at most SERIAL_ROWS rows), one lane
    (3, np.uint8, 6, 50_000, True),      # blocks in two lanes, a padded class group
    (8, np.uint16, 5, 40_000, False),    # two class groups, 16-bit bins
    (5, np.uint8, 150, 6_000, False),    # fields in several groups (CLASS_HIST_BYTES)
])
@pytest.mark.parametrize("parallel", [False, True])
def test_class_root_histograms_are_each_class_own_bit_for_bit(n_classes, dtype, d, n, dominant,
                                                             parallel):
    """The K roots of a multiclass round in one pass equal K passes of ``build_histograms``
    exactly (the same blocks, lanes and order of addition), and the naive twin up to
    rounding."""
    from hardwood.backends.cpu import CLASS_HIST_BYTES, CLASS_GROUP

    B, BC, offsets, rng = _binned(n, d, 600 if dtype == np.uint16 else 256, 8, dtype)
    if dominant:
        B[rng.random(n) < 0.4, 1] = 0
    be = CPUBackend(B, BC, offsets)
    if dominant:
        assert be.lanes == 2
    if d == 150:  # the block buffer holds fewer bins than the fields have
        assert int(offsets[-1]) * 16 * CLASS_GROUP > CLASS_HIST_BYTES
    g = rng.standard_normal((n_classes, n)).astype(np.float32)
    h = rng.random((n_classes, n)).astype(np.float32)
    rows = np.sort(rng.choice(n, n * 3 // 4, replace=False)).astype(np.int32)
    roots = be.class_root_histograms(rows, g, h, parallel=parallel)
    tb = int(offsets[-1])
    assert roots.shape == (n_classes, 2 * tb)
    for k in range(n_classes):
        own = be.build_histograms(rows, [0], [rows.size], g[k], h[k])
        np.testing.assert_array_equal(roots[k], own.reshape(-1), err_msg=f"class {k}")
        ref = histogram_naive(B, offsets[:-1], rows, g[k], h[k], tb)
        np.testing.assert_allclose(roots[k].reshape(tb, 2), ref, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("name", ["multi:softprob", "multiclass"])
@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_softmax_gradients_match_the_libm_softmax(weighted, parallel, name):
    """The blocked softmax gradients (``exp_fast``) equal the row-at-a-time loop with libm's
    exp that they replaced: each exp kept as float32 until the sum (over the classes in
    order) is known; n not a multiple of the block."""
    from hardwood.objectives import get_objective

    rng = np.random.default_rng(2)
    K, n = 5, 20_001
    pred = rng.standard_normal((K, n)) * 3
    y = rng.integers(0, K, n).astype(np.float32)
    w = rng.random(n) * 3 if weighted else None
    g = np.empty((K, n), dtype=np.float32)
    h = np.empty((K, n), dtype=np.float32)
    get_objective(name, {"num_class": K, "objective": name}).gradients(pred, y, w, g, h,
                                                                    parallel=parallel)
    factor = 2.0 if name == "multi:softprob" else K / (K - 1)  # XGBoost's, LightGBM's
    e = np.exp(pred - pred.max(axis=0))
    s = np.zeros(n)
    for k in range(K):
        s += e[k]
    p = e.astype(np.float32).astype(np.float64) / s
    t = (np.arange(K)[:, None] == y[None, :].astype(np.int64)).astype(np.float64)
    ww = w if weighted else 1.0
    np.testing.assert_array_equal(g, ((p - t) * ww).astype(np.float32))
    np.testing.assert_array_equal(h, (np.maximum(factor * p * (1 - p), 1e-16) * ww)
                                  .astype(np.float32))


@pytest.mark.parametrize("lanes", [1, 2])
def test_fused_histograms_of_one_block_nodes_equal_the_learners(lanes):
    """The fused grower sums a node of one block (one lane) straight into its pool row and
    reduces the others' blocks: the sums equal the learner backend's, which reduces every
    block, bit for bit (mixed nodes: empty, one block, several blocks)."""
    from hardwood.backends.cpu_grower import _build_hists

    B, BC, offsets, rng = _binned(60_000, 5, 60, 9)
    g = rng.standard_normal(B.shape[0]).astype(np.float32)
    h = rng.random(B.shape[0]).astype(np.float32)
    rows = np.sort(rng.choice(B.shape[0], 55_000, replace=False)).astype(np.int32)
    begins = np.array([0, 10, 10, 3_000, 20_000])
    ends = np.array([10, 10, 3_000, 20_000, 55_000])
    tb = int(offsets[-1])
    pool = np.full((6, 2 * tb), np.nan)
    dst = np.array([5, 0, 3, 1, 4])
    _build_hists(B, g, h, rows, begins, ends, offsets[:-1], pool, dst, lanes)
    be = CPUBackend(B, BC, offsets, lanes=lanes)
    own = be.build_histograms(rows, begins, ends, g, h)
    for s, slot in enumerate(dst):
        np.testing.assert_array_equal(pool[slot], own[s].reshape(-1), err_msg=f"node {s}")
