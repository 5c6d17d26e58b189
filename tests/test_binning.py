"""Quantile binning (BinMapper): the bin contract of DESIGN.md."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hardwood
from hardwood import Dataset
from hardwood.data import binning
from hardwood.data.binning import SAMPLE_ROWS, BinMapper


def _fit(X, max_bin=256, cat=None, n_cat=None, **kw):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    d = X.shape[1]
    is_cat = np.zeros(d, bool) if cat is None else np.asarray(cat)
    n_cat = np.zeros(d, np.int32) if n_cat is None else np.asarray(n_cat)
    return BinMapper(max_bin=max_bin, **kw).fit(X, is_cat, n_cat), X


def _check_contract(bm, X):
    """x falls in bin b iff upper_edges[b-1] < x <= upper_edges[b]; NaN in the missing bin."""
    rows, cols = bm.transform(X)
    np.testing.assert_array_equal(rows.T, cols)
    for j in range(X.shape[1]):
        if bm.is_categorical[j]:
            continue
        e = np.asarray(bm.upper_edges[j])
        assert e[-1] == np.inf
        assert np.all(np.diff(e) > 0), "edges strictly increasing"
        assert bm.n_value_bins[j] == e.size <= bm.max_bin - 1
        assert bm.n_bins[j] == e.size + 1 and bm.missing_bin[j] == e.size
        x = X[:, j]
        b = rows[:, j].astype(np.int64)
        nan = np.isnan(x)
        assert np.all(b[nan] == bm.missing_bin[j])
        xb, bb = x[~nan], b[~nan]
        assert np.all(bb < e.size)
        assert np.all(xb <= e[bb])
        lower = np.where(bb > 0, e[np.maximum(bb - 1, 0)], -np.inf)
        assert np.all(lower < xb)
        # the split 'bin <= k' is the raw rule 'x <= upper_edges[k]', for every k
        for k in range(min(e.size, 40)):
            np.testing.assert_array_equal(bb <= k, xb <= e[k])
    return rows


def test_dtype_uint8_and_uint16():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 2))
    bm, X = _fit(X, max_bin=256)
    assert bm.dtype == np.uint8 and bm.n_bins.max() <= 256
    rows = _check_contract(bm, X)
    assert rows.dtype == np.uint8
    bm, X = _fit(X, max_bin=1024)
    assert bm.n_bins.max() > 256 and bm.dtype == np.uint16
    assert _check_contract(bm, X).dtype == np.uint16
    # one bin per category (the default, as XGBoost's): a field with more than 255
    # categories needs uint16 at max_bin=256
    Xc = np.column_stack([rng.normal(size=1000), np.arange(1000) % 300])
    for ds in (Dataset(Xc, rng.normal(size=1000), categorical_features=[1]),
               Dataset(Xc, rng.normal(size=1000), categorical_features=[1],
                       group_categories=False)):
        assert ds.bins_row.dtype == np.uint16 and ds.bin_mapper.n_bins[1] == 301
        np.testing.assert_array_equal(ds.bins_row[:, 1], np.arange(1000) % 300)
        np.testing.assert_array_equal(ds.bins_row.T, ds.bins_col)
    # grouped (an opt-in): the 254 most frequent categories and one shared bin stay uint8
    ds = Dataset(Xc, rng.normal(size=1000), categorical_features=[1], group_categories=True)
    assert ds.bins_row.dtype == np.uint8 and ds.bin_mapper.n_bins[1] == 256
    np.testing.assert_array_equal(ds.bins_row.T, ds.bins_col)


def test_rare_categories_share_one_bin():
    """More categories than max_bin - 1: the most frequent keep their own bins (in order of
    frequency, ties by code), the rest share bin max_bin - 2; NaN and unknown codes are missing."""
    rng = np.random.default_rng(11)
    K = 40
    p = 1.0 / np.arange(1, K + 1) ** 1.2
    codes = rng.permutation(K)[rng.choice(K, size=5000, p=p / p.sum())].astype(np.float64)
    X = np.column_stack([codes, rng.normal(size=5000)])
    X[::50, 0] = np.nan
    ds = Dataset(X, categorical_features=[0], max_bin=16, group_categories=True)
    bm = ds.bin_mapper
    assert bm.n_value_bins[0] == 15 and bm.missing_bin[0] == 15
    seen = X[:, 0][~np.isnan(X[:, 0])].astype(np.int64)
    count = np.bincount(seen, minlength=K)
    order = np.lexsort((np.arange(K), -count))
    cb = bm.category_bins(0)
    assert cb.shape == (K,)
    np.testing.assert_array_equal(cb[order[:14]], np.arange(14))
    assert np.all(cb[order[14:]] == 14)
    b = ds.bins_row[:, 0]
    ok = ~np.isnan(X[:, 0])
    np.testing.assert_array_equal(b[ok], cb[X[ok, 0].astype(np.int64)])
    assert np.all(b[~ok] == 15)
    rows, _ = bm.transform(np.array([[np.nan, 0.0], [K + 3.0, 0.0], [-1.0, 0.0]]))
    assert rows[:, 0].tolist() == [15, 15, 15]


def test_grouped_categories_reproduce_training_predictions():
    """Splits over grouped category bins become category sets in the model: the raw rows give
    the training-time (binned) predictions, and rare categories of one bin predict alike."""
    rng = np.random.default_rng(12)
    K, n = 400, 20000
    p = 1.0 / np.arange(1, K + 1) ** 1.1
    codes = rng.choice(K, size=n, p=p / p.sum())
    effect = rng.normal(size=K)
    X = np.column_stack([codes.astype(np.float64), rng.normal(size=n)])
    X[::37, 0] = np.nan
    y = effect[codes] + 0.5 * X[:, 1] + rng.normal(scale=0.1, size=n)
    ds = Dataset(X, y, categorical_features=[0], group_categories=True)
    assert ds.bins_row.dtype == np.uint8
    m = hardwood.train({"objective": "reg:squarederror", "max_depth": 4, "eval_metric": "rmse",
                        "max_cat_to_onehot": 1}, ds, num_boost_round=8, valid_sets=[ds],
                       valid_names=["train"])
    assert any(t.is_categorical.any() for t in m.trees)
    rmse = np.sqrt(np.mean((m.predict(X) - y) ** 2))
    np.testing.assert_allclose(rmse, m.evals_result["train"]["rmse"][-1], rtol=1e-9)
    cb = ds.bin_mapper.category_bins(0)
    rare = np.flatnonzero(cb == cb.max())
    assert rare.size > 2
    Z = np.column_stack([rare.astype(np.float64), np.zeros(rare.size)])
    pr = m.predict(Z)
    np.testing.assert_array_equal(pr, np.full(rare.size, pr[0]))


def test_max_bin_65536_fits_uint16():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(70000, 1))
    ds = Dataset(X, max_bin=65536)
    assert ds.bins_row.dtype == np.uint16
    assert ds.bin_mapper.n_bins[0] <= 65536
    assert int(ds.bins_row.max()) < ds.bin_mapper.n_bins[0]
    # bins are monotone in x, with nothing wrapped around
    order = np.argsort(X[:, 0])
    assert np.all(np.diff(ds.bins_row[order, 0].astype(np.int64)) >= 0)


def test_few_distinct_values_get_one_bin_each():
    vals = np.array([-3.5, 0.0, 1e-300, 2.0, 7.25, 1e12])
    rng = np.random.default_rng(2)
    x = rng.choice(vals, 1000)
    x[::13] = np.nan
    bm, X = _fit(x, max_bin=16)
    assert bm.n_value_bins[0] == len(vals)
    rows = _check_contract(bm, X)
    for k, v in enumerate(vals):
        assert np.all(rows[x == v, 0] == k)
    # exactly max_bin - 1 distinct values still get one bin each
    bm, X = _fit(np.arange(15.0), max_bin=16)
    assert bm.n_value_bins[0] == 15
    np.testing.assert_array_equal(bm.transform(X)[0][:, 0], np.arange(15))


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_adjacent_doubles_are_separated():
    a = 1.0
    b = np.nextafter(a, 2.0)
    c = np.nextafter(b, 2.0)
    bm, X = _fit(np.array([a, b, c, a, b, c]), max_bin=8)
    rows = _check_contract(bm, X)
    assert rows[:3, 0].tolist() == [0, 1, 2]
    bm, X = _fit(np.array([-np.finfo(float).max, np.finfo(float).max, 0.0]), max_bin=8)
    assert _check_contract(bm, X)[:, 0].tolist() == [0, 2, 1]
    bm, X = _fit(np.array([1.7e308, 1e308, 0.0]), max_bin=8)
    assert _check_contract(bm, X)[:, 0].tolist() == [2, 1, 0]


def test_huge_negative_values_get_their_own_bins():
    bm, X = _fit(np.array([-1.7e308, -1e308, 0.0]), max_bin=8)
    assert _check_contract(bm, X)[:, 0].tolist() == [0, 1, 2]


def test_constant_and_all_missing_columns():
    n = 100
    X = np.column_stack([np.full(n, 3.0), np.full(n, np.nan), np.arange(n, dtype=float)])
    bm, X = _fit(X)
    assert bm.n_value_bins[:2].tolist() == [1, 1]
    rows = _check_contract(bm, X)
    assert np.all(rows[:, 0] == 0) and np.all(rows[:, 1] == bm.missing_bin[1])
    # training on them works (no split possible on the constant ones)
    y = (np.arange(n) > 50).astype(float)
    m = hardwood.train({"objective": "binary:logistic", "max_depth": 3}, Dataset(X, y),
                       num_boost_round=3)
    for t in m.trees:
        assert set(t.feature[t.feature >= 0].tolist()) <= {2}
    Xc = np.full((50, 2), 1.0)
    m = hardwood.train({"objective": "reg:squarederror"}, Dataset(Xc, np.arange(50.0)),
                       num_boost_round=2)
    np.testing.assert_allclose(m.predict(Xc), m.predict(Xc)[0])


def test_quantile_bins_are_balanced():
    rng = np.random.default_rng(3)
    x = rng.exponential(size=50_000)
    max_bin = 64
    bm, X = _fit(x, max_bin=max_bin)
    rows = _check_contract(bm, X)
    counts = np.bincount(rows[:, 0], minlength=bm.n_value_bins[0])
    assert bm.n_value_bins[0] >= max_bin - 3
    ideal = x.size / (max_bin - 1)
    assert counts.max() < 1.6 * ideal and counts.min() > 0.4 * ideal


def test_quantiles_from_a_sample(monkeypatch):
    assert SAMPLE_ROWS == 200_000
    seen = []
    orig = binning._numeric_edges

    def spy(values, max_value_bins, *args, **kw):
        seen.append(values.size)
        return orig(values, max_value_bins, *args, **kw)

    monkeypatch.setattr(binning, "_numeric_edges", spy)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(5000, 2))
    bm, X = _fit(X, sample_rows=1000)
    assert seen == [1000, 1000]
    _check_contract(bm, X)  # every row, sampled or not, obeys the edges
    seen.clear()
    big = rng.normal(size=(SAMPLE_ROWS + 20_000, 1)).astype(np.float32)
    ds = Dataset(big)
    assert seen == [SAMPLE_ROWS]
    e = ds.bin_mapper.upper_edges[0]
    b = ds.bins_row[:, 0].astype(np.int64)
    assert np.all(big[:, 0] <= e[b])
    # the sample is reproducible
    seen.clear()
    np.testing.assert_array_equal(Dataset(big).bins_row, ds.bins_row)


def test_float32_values_against_float64_edges():
    rng = np.random.default_rng(5)
    x32 = (rng.normal(size=3000) * 1000).astype(np.float32)
    ds = Dataset(x32.reshape(-1, 1))
    e = np.asarray(ds.bin_mapper.upper_edges[0])
    b = ds.bins_row[:, 0].astype(np.int64)
    x = x32.astype(np.float64)
    assert np.all(x <= e[b])
    assert np.all(np.where(b > 0, e[np.maximum(b - 1, 0)], -np.inf) < x)


def test_categorical_fields_and_missing():
    X = np.array([[0.0], [1.0], [2.0], [np.nan], [1.0]])
    ds = Dataset(X, categorical_features=[0])
    assert ds.bin_mapper.n_value_bins[0] == 3 and ds.bin_mapper.missing_bin[0] == 3
    assert ds.bins_row[:, 0].tolist() == [0, 1, 2, 3, 1]
    assert ds.bin_mapper.offsets.tolist() == [0, 4]


def test_offsets_group_fields():
    rng = np.random.default_rng(6)
    X = np.column_stack([rng.normal(size=500), rng.integers(0, 3, 500), np.zeros(500)])
    ds = Dataset(X, categorical_features=[1], max_bin=32)
    bm = ds.bin_mapper
    assert bm.offsets[0] == 0 and np.all(np.diff(bm.offsets) == bm.n_bins)
    assert bm.total_bins == int(bm.n_bins.sum())
    assert bm.n_bins.tolist() == [32, 4, 2]


def test_split_thresholds_reproduce_training_predictions():
    """A split on bin b is the raw rule x <= upper_edges[b]: predicting the raw training
    rows gives the training-time (binned) predictions."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(2000, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:, 3] = np.round(X[:, 3] * 2)  # few distinct values
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 3]) + rng.normal(scale=0.1, size=2000)
    ds = Dataset(X, y, max_bin=32)
    m = hardwood.train({"objective": "reg:squarederror", "max_depth": 4,
                        "eval_metric": "rmse"}, ds, num_boost_round=5, valid_sets=[ds],
                       valid_names=["train"])
    rmse = np.sqrt(np.mean((m.predict(X) - y) ** 2))
    np.testing.assert_allclose(rmse, m.evals_result["train"]["rmse"][-1], rtol=1e-9)


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(x=hnp.arrays(np.float64, st.integers(1, 300),
                    elements=st.one_of(finite, st.just(np.nan), st.sampled_from([0.0, -0.0, 1.0]))),
       max_bin=st.integers(3, 40))  # (2 is refused: one value bin, no split)
def test_bin_contract_property(x, max_bin):
    bm, X = _fit(x, max_bin=max_bin)
    rows = _check_contract(bm, X)
    b = rows[:, 0].astype(np.int64)
    ok = ~np.isnan(x)
    # monotone: larger values never get smaller bins
    order = np.argsort(x[ok], kind="stable")
    assert np.all(np.diff(b[ok][order]) >= 0)
    # few distinct values -> one bin per value
    u = np.unique(x[ok])
    if 0 < u.size <= max_bin - 1:
        assert bm.n_value_bins[0] == u.size
        assert np.unique(b[ok]).size == u.size


@settings(max_examples=60, deadline=None)
@given(x=hnp.arrays(np.float32, st.integers(1, 200),
                    elements=st.floats(width=32, allow_nan=False, allow_infinity=False)))
def test_bin_contract_property_float32(x):
    bm = BinMapper(max_bin=8).fit(x.reshape(-1, 1), np.zeros(1, bool), np.zeros(1, np.int32))
    rows, _ = bm.transform(x.reshape(-1, 1))
    e = np.asarray(bm.upper_edges[0])
    b = rows[:, 0].astype(np.int64)
    xd = x.astype(np.float64)
    assert np.all(xd <= e[b])
    assert np.all(np.where(b > 0, e[np.maximum(b - 1, 0)], -np.inf) < xd)


def test_bin_mapper_rejects_bad_max_bin():
    with pytest.raises(ValueError, match="max_bin"):
        BinMapper(max_bin=1)
    with pytest.raises(ValueError, match="features"):
        bm, _ = _fit(np.ones((5, 2)))
        bm.transform(np.ones((5, 3)))


def _naive_bins(bm, X):
    """The naive twin of ``BinMapper.transform``: one ``np.searchsorted`` per field (the first
    upper edge >= x), NaN in the missing bin, category codes through ``category_bins``
    (truncated toward zero, as ``int()``; a code outside ``0..K-1`` is missing)."""
    n, d = X.shape
    out = np.empty((n, d), np.int64)
    for j in range(d):
        x = X[:, j].astype(np.float64)
        nan = np.isnan(x)
        if bm.is_categorical[j]:
            cb = bm.category_bins(j)
            c = np.where(nan, -1.0, x).astype(np.int64)
            ok = (c >= 0) & (c < cb.size)
            out[:, j] = np.where(ok, cb[np.where(ok, c, 0)], bm.missing_bin[j])
        else:
            b = np.searchsorted(np.asarray(bm.upper_edges[j]), x, side="left")
            out[:, j] = np.where(nan, bm.missing_bin[j], b)
    return out


def _mixed_matrix(n, d, seed):
    """Normal, skewed (many edges in one cell of the grid), few-valued, constant, all-NaN
    and categorical fields, with NaN; the second half of the rows (not fitted) holds +-inf
    and values outside the fitted range."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 1::5] = rng.lognormal(sigma=3.0, size=(n, len(range(1, d, 5))))
    X[:, 2::5] = np.round(X[:, 2::5])
    X[:, 3::9] = 4.0
    X[:, 4::11] = np.nan
    X[rng.random(X.shape) < 0.03] = np.nan
    rest = X[n // 2:]  # rows outside the fit (training data holds no infinities)
    rest[rng.random(rest.shape) < 0.002] = np.inf
    rest[rng.random(rest.shape) < 0.002] = -np.inf
    cat = np.zeros(d, bool)
    cat[5::7] = True
    X[:, cat] = rng.integers(-2, 9, size=(n, int(cat.sum()))) + rng.choice([0.0, 0.5], (n, 1))
    return X, cat


@pytest.mark.parametrize("shape", [(700, 150), (binning.BIN_ROWS + 300, 3), (5, 1)])
@pytest.mark.parametrize("max_bin", [256, 1024])
def test_tiled_binning_equals_naive_twin(shape, max_bin):
    """The tiled kernel (blocks of fields over tiles of rows; the cell grid with its
    branch-free bracket) gives the naive twin's bin for every cell: wide and narrow,
    C- and F-ordered, float32 and float64, with NaN, infinities and categories; on 1 or 2
    threads."""
    from hardwood.parallel import threads

    X, cat = _mixed_matrix(*shape, seed=shape[1])
    n_cat = np.where(cat, 7, 0).astype(np.int32)
    fit_rows = X[: max(1, shape[0] // 2)]
    for dtype in (np.float64, np.float32):
        bm = BinMapper(max_bin=max_bin).fit(fit_rows.astype(dtype), cat, n_cat)
        want = _naive_bins(bm, X.astype(dtype))
        for order in "CF":
            Xa = np.asarray(X, dtype=dtype, order=order)
            for k in (1, 2):
                with threads(k):
                    rows, cols = bm.transform(Xa)
                assert rows.dtype == bm.dtype and cols.shape == (shape[1], shape[0])
                np.testing.assert_array_equal(rows, want)
                np.testing.assert_array_equal(cols, want.T)


def _naive_edges(values, max_value_bins):
    """The naive twin of the unweighted ``_numeric_edges``: ``np.sort``, distinct values by
    comparing neighbours, and their cumulative counts."""
    v = np.sort(values[~np.isnan(values)]).astype(np.float64)
    if v.size == 0:
        return np.array([np.inf])
    starts = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
    cum = np.append(starts[1:], v.size).astype(np.float64)
    return binning.edges_from_counts(v[starts], cum, max_value_bins)


def test_radix_sorted_edges_equal_naive_twin():
    """The radix sort gives np.sort's array bit for bit (the sign of zero too: values holding
    both 0.0 and -0.0 go to np.sort), and the edges are the naive twin's, bit for bit."""
    rng = np.random.default_rng(13)
    tiny = np.finfo(np.float64).smallest_subnormal
    arrays = [rng.normal(size=3000), rng.lognormal(sigma=4.0, size=2000),
              np.round(rng.normal(size=1000) * 2), rng.choice([0.0, -0.0, 1.0, -2.5], 500),
              rng.choice([-0.0, 3.0], 300), np.array([np.inf, -np.inf, tiny, -tiny, 0.0, 1e308]),
              np.array([7.0]), np.array([np.nan, np.nan]), np.array([])]
    arrays[0][::17] = np.nan
    for a in arrays:
        for dtype in (np.float64, np.float32):
            with np.errstate(over="ignore"):
                v = a.astype(dtype)
            ok = v[~np.isnan(v)]
            np.testing.assert_array_equal(binning._sorted_values(ok).view(np.uint8),
                                          np.sort(ok).view(np.uint8))
            for max_value_bins in (255, 15, 1):
                want = _naive_edges(v, max_value_bins)
                got = binning._numeric_edges(v, max_value_bins)
                np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def _naive_cut_indices(cum, max_value_bins):
    """The naive twin of ``binning.cut_indices`` (and ``cut_indices_jit``): the water level ``cap`` found by bisection
    (the capped weights fill ``max_value_bins`` bins of ``cap``), then np.unique of the
    quantile cuts of the capped weights."""
    counts = np.diff(cum, prepend=0.0)
    lo, hi = 0.0, cum[-1] / max_value_bins
    if counts.max() > hi:
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if np.minimum(counts, mid).sum() > mid * max_value_bins else (lo, mid)
        cum = np.cumsum(np.minimum(counts, hi))
        slack = 1e-9 * cum[-1]  # a target on a capped value's end (give or take) is its
    else:
        slack = 0.0
    targets = cum[-1] * np.arange(1, max_value_bins) / max_value_bins
    return np.unique(np.minimum(np.searchsorted(cum, targets - slack), len(cum) - 2))


def test_heavy_values_hand_their_quantile_cuts_to_other_bins():
    """A value heavier than 1/255 of the rows took several quantile targets, which made one
    cut: 256 distinct values kept 242 of 255 value bins, and a column of 40 % zeros 156.
    They keep 255 now (XGBoost: 256 and 158; LightGBM's greedy bins: 247 and 255), the cuts
    equal the naive twin's (the water level found by bisection: the same cuts, or one off
    where a target falls within rounding of a value's edge), and a field without heavy
    values keeps its plain quantile cuts."""
    rng = np.random.default_rng(0)
    n = 20000
    cols = {"zeros": np.where(rng.random(n) < 0.4, 0.0, rng.normal(size=n)),
            "256 values": rng.integers(0, 256, n).astype(float),
            "300 values": rng.integers(0, 300, n).astype(float),
            "skewed": np.round(rng.exponential(size=n) ** 2 * 30),
            "continuous": rng.normal(size=n)}
    for name, v in cols.items():
        uniq, counts = np.unique(v, return_counts=True)
        cum = np.cumsum(counts).astype(np.float64)
        for mvb in (255, 63, 2):
            edges = binning._numeric_edges(v, mvb)
            assert edges.size == min(uniq.size, mvb), (name, mvb, edges.size)
            if uniq.size > mvb:
                got = binning.cut_indices(cum, mvb)
                # the dense fields' numpy version and the sparse kernel's jitted one agree
                np.testing.assert_array_equal(binning.cut_indices_jit(cum, mvb), got)
                want = _naive_cut_indices(cum, mvb)
                assert got.size == want.size and np.abs(got - want).max() <= 1, (name, mvb)
                assert np.mean(got == want) > 0.95, (name, mvb)
                lo, hi = uniq[got], uniq[got + 1]
                np.testing.assert_array_equal(edges[:-1], lo * 0.5 + hi * 0.5)
        if name == "continuous":  # no value takes two targets: the plain quantile cuts
            want = np.searchsorted(cum, cum[-1] * np.arange(1, 255) / 255)
            np.testing.assert_array_equal(binning.cut_indices(cum, 255), want)
    # weighted rows: a row of weight 2 counts as two rows
    v = cols["256 values"]
    w = rng.integers(1, 4, n).astype(np.float64)
    assert binning._numeric_edges(v, 255, w).size == 255
    assert binning._numeric_edges(np.repeat(v, w.astype(int)), 255).size == 255


def test_cut_indices_numpy_and_jitted_agree_exactly():
    """The dense binning calls ``cut_indices`` (numpy: no kernel to compile on a first fit),
    the sparse kernel ``cut_indices_jit``: the same cuts on weighted, tied and heavy fields."""
    rng = np.random.default_rng(11)
    for trial in range(60):
        k = int(rng.integers(3, 3000))
        counts = [rng.random(k), rng.integers(1, 5, k).astype(float),
                  np.where(rng.random(k) < 0.02, 1000.0, 1.0)][trial % 3]
        cum = np.cumsum(counts)
        for mvb in (1, 2, 7, 63, 255):
            if k > mvb:
                np.testing.assert_array_equal(binning.cut_indices(cum, mvb),
                                              binning.cut_indices_jit(cum, mvb))
