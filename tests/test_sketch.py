"""The mergeable streaming quantile sketch (data/sketch.py): its rank bounds hold, its error
stays within the proven bound, and its bins match in-core binning within that bound."""
import numpy as np
import pytest

from hardwood.data.binning import _numeric_edges
from hardwood.data.sketch import QuantileSketch, Summary, merge, prune

N = 120_000


def _data(kind, rng):
    if kind == "normal":
        return rng.normal(size=N)
    if kind == "lognormal":
        return rng.lognormal(0, 2, size=N)
    if kind == "spike":  # a third of the rows on one value
        return np.where(rng.random(N) < 0.3, 0.0, rng.exponential(size=N))
    if kind == "few":
        return rng.integers(0, 300, size=N).astype(float)
    raise ValueError(kind)


def _sketch(x, size=512, batch=7_000, w=None):
    sk = QuantileSketch(size)
    for a in range(0, x.size, batch):
        sk.push(x[a:a + batch], None if w is None else w[a:a + batch])
    return sk


def _check_bounds(s: Summary, x, w, eps):
    """rmin <= W(< v) and rmax >= W(<= v) for every kept value; neighbours within eps W."""
    order = np.argsort(x)
    xs, cw = x[order], np.cumsum(w[order])
    below = np.where(np.searchsorted(xs, s.value, "left") > 0,
                     cw[np.maximum(np.searchsorted(xs, s.value, "left") - 1, 0)], 0.0)
    upto = cw[np.searchsorted(xs, s.value, "right") - 1]
    tol = 1e-9 * s.total
    assert np.all(s.rmin <= below + tol) and np.all(s.rmax >= upto - tol)
    gaps = (s.rmax[1:] - s.w[1:]) - (s.rmin[:-1] + s.w[:-1])
    assert gaps.max() <= eps * s.total + tol


@pytest.mark.parametrize("kind", ["normal", "lognormal", "spike", "few"])
def test_the_sketch_keeps_its_error_bound(kind):
    rng = np.random.default_rng(3)
    x = _data(kind, rng)
    sk = _sketch(x)
    eps = sk.error_bound()
    if kind == "few":
        assert eps == 0.0  # 300 values never need pruning: the summary is exact
    else:
        assert 0 < eps <= 6 / 512
    _check_bounds(sk.summary(), x, np.ones(N), eps)


def _edge_ranks(edges, x):
    return np.searchsorted(np.sort(x), edges[:-1], side="right")


@pytest.mark.parametrize("kind", ["normal", "lognormal", "spike", "few"])
def test_bins_match_in_core_binning_within_the_bound(kind):
    rng = np.random.default_rng(4)
    x = _data(kind, rng)
    sk = _sketch(x)
    v, m = sk.weighted_values()
    got = _numeric_edges(v, 255, weights=m)
    want = _numeric_edges(x, 255)
    assert got.size == want.size
    diff = np.abs(_edge_ranks(got, x) - _edge_ranks(want, x))
    if sk.error_bound() == 0:
        np.testing.assert_array_equal(got, want)  # exact: the in-core edges of all rows
    else:
        assert diff.max() <= sk.edge_error_bound() * N


def test_sketches_merge_across_workers():
    rng = np.random.default_rng(5)
    x = _data("lognormal", rng)
    halves = [_sketch(x[: N // 2]), _sketch(x[N // 2:])]
    merged = halves[0].merge(halves[1])
    assert merged.batches == -(-(N // 2) // 7000) * 2
    eps = merged.error_bound()
    _check_bounds(merged.summary(), x, np.ones(N), eps)
    v, m = merged.weighted_values()
    diff = np.abs(_edge_ranks(_numeric_edges(v, 64, weights=m), x)
                  - _edge_ranks(_numeric_edges(x, 64), x))
    assert diff.max() <= merged.edge_error_bound() * N


def test_weights_count_as_repeated_rows():
    rng = np.random.default_rng(6)
    x = rng.integers(0, 50, size=5000).astype(float)
    w = rng.integers(1, 4, size=5000).astype(float)
    a = _sketch(x, w=w, batch=900).summary()
    b = Summary.exact(np.repeat(x, w.astype(int)))
    np.testing.assert_array_equal(a.value, b.value)
    np.testing.assert_allclose(a.rmin, b.rmin)
    np.testing.assert_allclose(a.rmax, b.rmax)


def test_nan_empty_and_bad_sizes():
    sk = QuantileSketch(16)
    sk.push(np.array([np.nan, np.nan]))
    assert len(sk.summary()) == 0
    sk.push(np.array([3.0, np.nan, 1.0]))
    np.testing.assert_array_equal(sk.summary().value, [1.0, 3.0])
    with pytest.raises(ValueError, match="size >= 2"):
        QuantileSketch(1)
    with pytest.raises(ValueError, match="do not merge"):
        QuantileSketch(16).merge(QuantileSketch(32))


def test_prune_keeps_the_ends_and_at_most_b_plus_one_values():
    s = Summary.exact(np.random.default_rng(7).normal(size=10_000))
    p = prune(s, 100)
    assert len(p) <= 101
    assert p.value[0] == s.value[0] and p.value[-1] == s.value[-1]
    m = merge(p, Summary.exact([]))
    np.testing.assert_array_equal(m.value, p.value)


@pytest.mark.parametrize("batches", [1, 2, 16])
def test_one_pruned_batch_gives_edges_within_the_edge_bound(batches):
    """An edge can only fall on one of the summary's values, which a prune leaves up to W / b
    apart: the edges of a single pruned batch were 1.6 error_bound x W off the in-core ones,
    and Dataset.sketch_error reported error_bound. edge_error_bound adds that 1 / b."""
    x = np.random.default_rng(0).normal(size=60_000)
    sk = _sketch(x, size=2048, batch=-(-x.size // batches))
    v, m = sk.weighted_values()
    diff = np.abs(_edge_ranks(_numeric_edges(v, 255, weights=m), x)
                  - _edge_ranks(_numeric_edges(x, 255), x))
    assert sk.error_bound() > 0
    assert diff.max() <= sk.edge_error_bound() * x.size
    assert sk.edge_error_bound() == sk.error_bound() + 1 / 2048
