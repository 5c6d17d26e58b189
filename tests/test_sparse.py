"""Sparse input binned from its non-zeros (data/sparse.py) and trained by the sparse CPU
backend (backends/sparse_cpu.py): the same bins, and the same trees, as its dense copy."""
import numpy as np
import pytest
import scipy.sparse as sp

import hardwood as hw
from hardwood import Dataset
from hardwood.backends.reference import ReferenceBackend, SparseReferenceBackend
from hardwood.backends.sparse_cpu import SparseCPUBackend
from hardwood.data.binning import BinMapper
from hardwood.data.sparse import SparseBins, fit_sparse


def _matrix(n, d, density, seed, nan=0.01, float64=False):
    """A dense matrix with ``density`` non-zeros (some integer-valued columns), NaNs, and its
    CSR copy holding explicit zeros as well."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, ::3] = np.round(X[:, ::3] * 2)  # few distinct values: zeros inside the bins' range
    X[rng.random((n, d)) > density] = 0.0
    X[rng.random((n, d)) < nan] = np.nan
    if not float64:
        X = X.astype(np.float32)
    r, c = np.nonzero(np.nan_to_num(X, nan=1.0))
    # explicit zeros: stored entries of value 0
    zr, zc = np.nonzero(np.nan_to_num(X, nan=1.0) == 0)
    pick = rng.choice(zr.size, 20, replace=False)
    r, c = np.concatenate([r, zr[pick]]), np.concatenate([c, zc[pick]])
    C = sp.csr_matrix((X[r, c], (r, c)), shape=(n, d))
    return X, C


@pytest.mark.parametrize("density", [0.01, 0.05, 0.3])
def test_bins_equal_the_dense_path(density):
    X, C = _matrix(800, 25, density, seed=int(density * 100))
    assert C.nnz > np.count_nonzero(np.nan_to_num(X, nan=1.0))  # explicit zeros are stored
    y = np.arange(800.0)
    s, d = Dataset(C, y, sparse=True), Dataset(X, y)
    assert s.sparse_bins is not None and s._bins_row is None
    for j in range(X.shape[1]):
        np.testing.assert_array_equal(s.bin_mapper.upper_edges[j], d.bin_mapper.upper_edges[j])
    # no stored entry sits in its field's default bin: memory follows the non-zeros
    sb = s.sparse_bins
    assert np.all(sb.bins != sb.default_bin[sb.indices])
    np.testing.assert_array_equal(s.bins_row, d.bins_row)
    np.testing.assert_array_equal(s.bins_col, d.bins_col)


def test_bins_equal_over_a_row_sample_float64_and_integer_weights():
    X, C = _matrix(3000, 12, 0.2, seed=4, float64=True)
    w = np.random.default_rng(0).integers(0, 4, 3000).astype(np.float64)
    for weight in (None, w):
        a = fit_sparse(BinMapper(max_bin=16, sample_rows=700), C, weight)
        b = BinMapper(max_bin=16, sample_rows=700).fit(X, np.zeros(12, bool), np.zeros(12),
                                                       weight=weight)
        for j in range(12):
            np.testing.assert_array_equal(a.upper_edges[j], b.upper_edges[j])


def test_column_edges_kernel_equals_edges_from_counts():
    """The kernel behind fit_sparse (``_edges_of_counts``) against its numpy twin
    ``binning.edges_from_counts`` on edge cases: few or many distinct values, infinities,
    adjacent doubles, huge magnitudes, uneven counts."""
    from hardwood.data.binning import edges_from_counts
    from hardwood.data.sparse import _edges_of_counts

    rng = np.random.default_rng(3)
    cases = [np.zeros(0), np.array([0.0]), np.array([-np.inf, np.inf]),
             np.array([1.0, np.nextafter(1.0, 2.0)]), np.array([-1e308, 1e308]),
             np.array([-np.inf, -1.0, 0.0, 5.0, np.inf]),
             np.unique(rng.normal(size=40)), np.unique(np.round(rng.normal(size=5000), 3)),
             np.unique(rng.integers(-50, 50, 300)).astype(np.float64)]
    for uniq in cases:
        for counts in (np.ones(uniq.size), rng.integers(1, 1000, uniq.size).astype(float),
                       rng.random(uniq.size) * 3):
            for mvb in (1, 3, 15, 255):
                want = edges_from_counts(uniq, np.cumsum(counts), mvb)
                out = np.empty(uniq.size + 2)
                k = _edges_of_counts(uniq, counts, mvb, out)
                np.testing.assert_array_equal(out[:k], want)


def test_bins_of_awkward_columns_equal_the_dense_path():
    """Columns every entry stored, NaN-or-zero, negative only, one value, more distinct
    values than bins; weights real-valued with zeros; float32 and float64."""
    rng = np.random.default_rng(11)
    n = 1500

    def some(p, values):
        return np.where(rng.random(n) < p, values, 0.0)

    X = np.stack([rng.normal(size=n),                       # every entry stored
                  some(0.3, np.nan),                         # NaN or zero
                  some(0.2, -rng.exponential(size=n)),       # negative only
                  some(0.1, 7.0),                            # one value
                  some(0.5, rng.normal(size=n)),             # many distinct values
                  some(0.1, np.round(rng.normal(size=n)))], axis=1)
    w = np.where(rng.random(n) < 0.1, 0.0, rng.random(n) * 2)
    for dtype in (np.float32, np.float64):
        Xd = X.astype(dtype)
        Cd = sp.csr_matrix(Xd)
        for weight in (None, w):
            a = fit_sparse(BinMapper(max_bin=32, sample_rows=1000), Cd, weight)
            b = BinMapper(max_bin=32, sample_rows=1000).fit(Xd, np.zeros(6, bool), np.zeros(6),
                                                            weight=weight)
            for j in range(6):
                np.testing.assert_allclose(a.upper_edges[j], b.upper_edges[j], rtol=1e-12)


def test_auto_takes_sparse_below_the_density_and_checks_input():
    X, C = _matrix(300, 10, 0.05, seed=1)
    y = np.zeros(300)
    assert Dataset(C, y).sparse_bins is not None  # auto, 5% dense
    Xd, Cd = _matrix(300, 10, 0.9, seed=1)
    assert Dataset(Cd, y).sparse_bins is None  # auto, dense enough for the dense path
    assert Dataset(C, y, sparse=False).sparse_bins is None
    Ck = C.copy()
    Ck.data = np.abs(np.round(Ck.data))
    assert Dataset(Ck, y, categorical_features=[0]).sparse_bins is None  # categories: dense
    bad = C.copy()
    bad.data[3] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        Dataset(bad, y)
    with pytest.raises(ValueError, match="sparse must be"):
        Dataset(C, y, sparse="yes")
    with pytest.raises(ValueError, match="out of its field"):
        SparseBins(np.array([0, 2]), np.array([1, 0], np.int32), np.zeros(2, np.uint8),
                   np.zeros(2, np.int64), 2).check(np.array([3, 3]))


def _same_trees(m1, m2):
    assert len(m1.trees) == len(m2.trees)
    for t1, t2 in zip(m1.trees, m2.trees):
        for a in ("feature", "left", "right", "default_left", "count"):
            np.testing.assert_array_equal(getattr(t1, a), getattr(t2, a), err_msg=a)
        np.testing.assert_array_equal(t1.threshold, t2.threshold)
        np.testing.assert_allclose(t1.value, t2.value, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(t1.cover, t2.cover, rtol=1e-9)


@pytest.mark.parametrize("density", [0.01, 0.08, 0.3])
@pytest.mark.parametrize("objective", ["binary:logistic", "reg:squarederror"])
@pytest.mark.parametrize("policy", ["depthwise", "lossguide"])
def test_same_trees_from_csr_as_from_its_dense_copy(density, objective, policy):
    X, C = _matrix(1500, 30, density, seed=7)
    Z = np.nan_to_num(X)
    rng = np.random.default_rng(3)
    score = Z[:, 0] + Z[:, 1] - Z[:, 2] * Z[:, 4] + 0.3 * rng.normal(size=1500)
    y = (score > np.median(score)).astype(float) if objective == "binary:logistic" else score
    p = {"objective": objective, "max_depth": 4 if policy == "depthwise" else 0,
         "grow_policy": policy, "max_leaves": 12 if policy == "lossguide" else 0,
         "learning_rate": 0.3}
    dense = hw.train(p, Dataset(X, y), num_boost_round=6)
    sparse = hw.train(p, Dataset(C, y, sparse=True), num_boost_round=6)
    _same_trees(sparse, dense)
    np.testing.assert_allclose(sparse.predict(C), dense.predict(X), rtol=1e-6, atol=1e-9)
    if density == 0.08 and policy == "depthwise":  # the naive twin, end to end
        naive = hw.train(dict(p, backend="reference"), Dataset(C, y, sparse=True), 3)
        _same_trees(naive, hw.train(p, Dataset(X, y), num_boost_round=3))


def test_sampled_rounds_and_sparse_validation_sets():
    X, C = _matrix(2000, 20, 0.1, seed=9)
    Z = np.nan_to_num(X)
    y = (Z[:, 0] - Z[:, 3] > 0).astype(float)
    p = {"objective": "binary:logistic", "max_depth": 3, "subsample": 0.7,
         "colsample_bynode": 0.6, "eval_metric": ["logloss"]}
    ds, dd = Dataset(C, y, sparse=True), Dataset(X, y)
    vs, vd = (Dataset(C[:500], y[:500], reference=ds, sparse=True),
              Dataset(X[:500], y[:500], reference=dd))
    ms = hw.train(p, ds, 5, valid_sets=[vs], valid_names=["v"])
    md = hw.train(p, dd, 5, valid_sets=[vd], valid_names=["v"])
    _same_trees(ms, md)
    assert vs.sparse_bins is not None and vs._bins_row is None  # never densified
    assert ds._bins_row is None
    np.testing.assert_allclose(ms.evals_result["v"]["logloss"], md.evals_result["v"]["logloss"],
                               rtol=1e-9)


def test_kernels_match_the_naive_twin():
    X, C = _matrix(5000, 40, 0.05, seed=11)
    ds = Dataset(C, np.zeros(5000), sparse=True, max_bin=32)
    off = ds.bin_mapper.offsets
    fast = SparseCPUBackend(ds.sparse_bins, off)
    twin = SparseReferenceBackend(ds.sparse_bins, off)
    dense = ReferenceBackend(ds.bins_row, ds.bins_col, off)
    rng = np.random.default_rng(0)
    g = rng.normal(size=5000).astype(np.float32)
    h = rng.random(5000).astype(np.float32)
    rows = np.sort(rng.choice(5000, 4200, replace=False)).astype(np.int32)
    begins, ends = [0, 100, 3000], [100, 3000, 4200]
    hf = fast.build_histograms(rows, begins, ends, g, h)
    np.testing.assert_allclose(hf, twin.build_histograms(rows, begins, ends, g, h),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(hf, dense.build_histograms(rows, begins, ends, g, h),
                               rtol=1e-9, atol=1e-9)
    # blocks of consecutive rows (the root; a node of a run of rows) take a path of their
    # own: the same sums as the twin's
    every = np.arange(5000, dtype=np.int32)
    run = np.concatenate([np.arange(1000, 2500), [2501, 2600]]).astype(np.int32)
    for r_, b_, e_ in ((every, [0], [5000]), (run, [0, 1500], [1500, 1502]),
                       (run, [0], [1502])):
        np.testing.assert_allclose(fast.build_histograms(r_, b_, e_, g, h),
                                   twin.build_histograms(r_, b_, e_, g, h), rtol=1e-9, atol=1e-9)
    feats = np.array([0, 5, 17])
    tables = (rng.random((3, int(ds.bin_mapper.n_bins.max()))) < 0.5).astype(np.uint8)
    r1, r2 = rows.copy(), rows.copy()
    m1 = fast.partition(r1, begins, ends, feats, tables)
    m2 = twin.partition(r2, begins, ends, feats, tables)
    np.testing.assert_array_equal(m1, m2)
    np.testing.assert_array_equal(r1, r2)
    # ③ merges ascending rows with the split column; rows in any order are still right, and
    # a popular field (long column) as much as a rare one
    nnz_of = np.bincount(ds.sparse_bins.indices, minlength=40)
    feats = np.array([int(nnz_of.argmax()), int(nnz_of.argmin()), 3])
    for order in (rows.copy(), rng.permutation(rows)):
        r1, r2 = order.copy(), order.copy()
        np.testing.assert_array_equal(fast.partition(r1, begins, ends, feats, tables),
                                      twin.partition(r2, begins, ends, feats, tables))
        np.testing.assert_array_equal(r1, r2)
    with pytest.raises(ValueError, match="outside"):
        fast.build_histograms(rows, [0], [rows.size + 1], g, h)
    with pytest.raises(ValueError, match="feature out of range"):
        fast.partition(rows.copy(), [0], [10], [40], tables[:1])
    # binned prediction over sparse bins: the twin's and the dense bins' walk
    m = hw.train({"objective": "reg:squarederror", "max_depth": 4},
                 Dataset(C, np.nan_to_num(X[:, 1]), sparse=True, max_bin=32), 2)
    from hardwood.train.booster import bin_tree

    bt = bin_tree(m.trees[0], ds)
    pf, pt, pd_ = np.zeros(5000), np.zeros(5000), np.zeros(5000)
    fast.predict_binned(ds.sparse_bins, bt, pf)
    twin.predict_binned(ds.sparse_bins, bt, pt)
    dense.predict_binned(ds.bins_row, bt, pd_)
    np.testing.assert_array_equal(pf, pt)
    np.testing.assert_array_equal(pf, pd_)


def test_slots_of_either_width_give_the_same_histograms(monkeypatch):
    """① reads uint16 slots where the bins allow, int32 beyond: the same sums either way."""
    import hardwood.backends.sparse_cpu as sc

    X, C = _matrix(3000, 30, 0.05, seed=12)
    ds = Dataset(C, np.zeros(3000), sparse=True, max_bin=32)
    off = ds.bin_mapper.offsets
    narrow = SparseCPUBackend(ds.sparse_bins, off)
    monkeypatch.setattr(sc, "U16_SLOT_BINS", 0)
    wide = SparseCPUBackend(ds.sparse_bins, off)
    assert narrow._slots.dtype == np.uint16 and wide._slots.dtype == np.int32
    np.testing.assert_array_equal(narrow._slots, wide._slots)
    rng = np.random.default_rng(1)
    g = rng.normal(size=3000).astype(np.float32)
    h = rng.random(3000).astype(np.float32)
    rows = np.sort(rng.choice(3000, 2500, replace=False)).astype(np.int32)
    for b, e in (([0], [2500]), ([0, 700], [700, 2500])):
        np.testing.assert_array_equal(narrow.build_histograms(rows, b, e, g, h),
                                      wide.build_histograms(rows, b, e, g, h))


def test_memory_follows_the_non_zeros():
    import tracemalloc

    n, d = 200_000, 5_000  # dense bins alone would take 2 x 1 GB
    rng = np.random.default_rng(0)
    nnz = 400_000
    C = sp.csr_matrix((rng.random(nnz).astype(np.float32),
                       (rng.integers(0, n, nnz), rng.integers(0, d, nnz))), shape=(n, d))
    y = (rng.random(n) < 0.5).astype(float)
    tracemalloc.start()
    try:
        ds = Dataset(C, y)
        hw.train({"objective": "binary:logistic", "max_depth": 3}, ds, 2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ds.sparse_bins is not None and ds._bins_row is None
    # what remains is per field (cell tables, edges) and per bin (histograms), not per cell
    assert peak < 200 << 20, peak / 2**20


def test_pages_continued_training_and_dense_consumers():
    """Several in-core pages and init_model over sparse bins give the one-page trees; code
    that needs dense bins (pages on disk, forests) gets them made from the sparse ones."""
    import tempfile

    X, C = _matrix(1200, 20, 0.05, seed=13, nan=0.0)
    Z = np.nan_to_num(X)
    y = (Z[:, 0] + Z[:, 1] > 0).astype(float)
    p = {"objective": "binary:logistic", "max_depth": 3}
    one = hw.train(p, Dataset(C, y), 4)
    _same_trees(hw.train(dict(p, pages=3), Dataset(C, y), 4), one)
    half = hw.train(p, Dataset(C, y), 2)
    np.testing.assert_allclose(hw.train(p, Dataset(C, y), 2, init_model=half).predict(X),
                               one.predict(X), rtol=1e-9)
    with tempfile.TemporaryDirectory() as d:
        _same_trees(hw.train(dict(p, pages={"dir": d}), Dataset(C, y), 4), one)
    from hardwood.forest import RandomForestClassifier

    f = RandomForestClassifier(n_estimators=3, random_state=0).fit(C, y)
    np.testing.assert_array_equal(f.predict(C), f.predict(X))


def test_split_scan_skips_only_fields_that_cannot_split():
    """② skips a field when ``cannot_split`` says so: then the full scan's gain is -inf, on
    fields of 0, 1 or 2 bins with hessian, with and without missing values, and a node
    hessian equal to the bin's, a rounding off it, or well above it."""
    from hardwood.backends.split import _scan_numeric, cannot_split, find_best_splits, score

    rng = np.random.default_rng(5)
    skipped = 0
    for trial in range(3000):
        nv = int(rng.integers(1, 9))
        hist = np.zeros((nv + 1, 2))
        for b in rng.choice(nv, size=min(nv, int(rng.integers(0, 3))), replace=False):
            hist[b] = rng.normal(), rng.choice([0.5, 1e-9, 3.0])
        if rng.random() < 0.2:
            hist[nv] = rng.normal(), rng.random()
        H = hist[:, 1].sum() + rng.choice([0.0, 1e-12, -1e-12, 0.7])
        G = hist[:, 0].sum()
        mcw = float(rng.choice([0.0, 1e-3, 1.0]))
        if cannot_split(hist, 0, nv, H, mcw):
            skipped += 1
            gain = _scan_numeric(hist, 0, nv, G, H, 1.0, 0.0, mcw, score(G, H, 1.0, 0.0))[0]
            assert gain == -np.inf, (hist, H, mcw)
    assert skipped > 300
    # the whole ②: the learner's scan (with the skip) against the fused grower's (without)
    from hardwood.backends.split import find_best_splits_pooled

    X, C = _matrix(3000, 30, 0.03, seed=2)
    ds = Dataset(C, np.zeros(3000), sparse=True, max_bin=16)
    be = SparseCPUBackend(ds.sparse_bins, ds.bin_mapper.offsets)
    g = rng.normal(size=3000).astype(np.float32)
    h = rng.random(3000).astype(np.float32)
    rows = np.arange(3000, dtype=np.int32)
    begins, ends = np.arange(0, 3000, 100), np.arange(100, 3001, 100)
    hists = be.build_histograms(rows, begins, ends, g, h)
    bm = ds.bin_mapper
    args = (np.asarray([np.float64(g[b:e].sum(dtype=np.float64)) for b, e in zip(begins, ends)]),
            hists[:, bm.offsets[0]:bm.offsets[1], 1].sum(axis=1),
            np.ones((30, 30), dtype=bool), np.ascontiguousarray(bm.offsets[:-1], dtype=np.int64),
            np.ascontiguousarray(bm.n_value_bins, dtype=np.int64), np.zeros(30, dtype=bool),
            1.0, 0.0, 1e-3, 4, 64)
    a = find_best_splits(hists, *args)
    b = find_best_splits_pooled(hists, np.arange(30), *args)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
