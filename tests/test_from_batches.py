"""``Dataset.from_batches`` (issue 13): two passes over batches, a sketch per field, binned
pages in a cache folder that is reused only for the same data and parameters."""
import os

import numpy as np
import pandas as pd
import pytest

import hardwood
from hardwood.data.batches import MANIFEST
from hardwood.train import grower as grower_mod


def _data(n=20_000, d=5, seed=0, decimals=2):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), decimals)  # few distinct values: exact sketches
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) + rng.normal(size=n) > 0)
    return X.astype(np.float32), y.astype(np.float64)


def _maker(X, y, step=3_000, w=None):
    def make():
        for a in range(0, len(y), step):
            yield (X[a:a + step], y[a:a + step]) if w is None else \
                (X[a:a + step], y[a:a + step], w[a:a + step])
    return make


def test_exact_sketches_give_the_in_core_bins_and_model(tmp_path, monkeypatch):
    X, y = _data()
    ds = hardwood.Dataset.from_batches(_maker(X, y), str(tmp_path), page_bytes=40_000)
    core = hardwood.Dataset(X, y)
    assert ds.sketch_error == 0.0 and ds.n_rows == len(y) and ds.bins_row is None
    for a, b in zip(ds.bin_mapper.upper_edges, core.bin_mapper.upper_edges):
        np.testing.assert_array_equal(a, b)
    assert len(ds.pages_on_disk[0]) == -(-len(y) // (40_000 // 10))
    p = {"objective": "binary:logistic", "max_depth": 4, "learning_rate": 0.3}
    monkeypatch.setattr(grower_mod, "FUSED", False)
    on_disk = hardwood.train(p, ds, num_boost_round=5)
    in_core = hardwood.train(p, core, num_boost_round=5)
    np.testing.assert_allclose(on_disk.predict(X), in_core.predict(X), rtol=1e-9, atol=1e-9)
    valid = hardwood.Dataset(X[:500], y[:500], reference=ds)  # validation sets use its bins
    m = hardwood.train(p, ds, num_boost_round=2, valid_sets=[valid], valid_names=["v"])
    assert "v" in m.evals_result


def test_weights_and_sampling_on_pages(tmp_path):
    X, y = _data(n=8_000, decimals=6, seed=1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=len(y))
    ds = hardwood.Dataset.from_batches(_maker(X, y, w=w), str(tmp_path), page_bytes=30_000,
                                       sketch_size=256)
    assert 0 < ds.sketch_error < 0.05  # 8,000 distinct values in summaries of 256
    np.testing.assert_array_equal(ds.weight, w)
    m = hardwood.train({"objective": "binary:logistic", "sampling_method": "mvs",
                        "subsample": 0.5}, ds, num_boost_round=5)
    assert np.all(np.isfinite(m.predict(X)))


def test_the_cache_is_reused_only_for_the_same_data(tmp_path):
    X, y = _data(n=6_000)
    folder = str(tmp_path)
    a = hardwood.Dataset.from_batches(_maker(X, y), folder, page_bytes=20_000)
    stamps = {p: os.stat(p).st_mtime_ns for p in a.pages_on_disk[0]}
    b = hardwood.Dataset.from_batches(_maker(X, y), folder, page_bytes=20_000)
    assert b.pages_on_disk == a.pages_on_disk
    assert {p: os.stat(p).st_mtime_ns for p in b.pages_on_disk[0]} == stamps  # not rewritten
    X2 = X.copy()
    X2[:, 0] += 1.0  # other data: other bins, another key
    c = hardwood.Dataset.from_batches(_maker(X2, y[:]), folder, page_bytes=20_000)
    assert c.pages_on_disk[1] != a.pages_on_disk[1]
    d = hardwood.Dataset.from_batches(_maker(X, y), folder, page_bytes=50_000)  # other pages
    assert len(d.pages_on_disk[0]) < len(a.pages_on_disk[0])
    assert sorted(os.listdir(folder)) == sorted([MANIFEST] + [os.path.basename(p) for p in
                                                              d.pages_on_disk[0]])
    # a truncated page is not reused: the cache is rebuilt
    os.truncate(d.pages_on_disk[0][0], 100)
    e = hardwood.Dataset.from_batches(_maker(X, y), folder, page_bytes=50_000)
    assert os.path.getsize(e.pages_on_disk[0][0]) > 100
    # a page corrupted after the check is refused when read, by name
    with open(e.pages_on_disk[0][1], "r+b") as fh:
        fh.seek(500)
        fh.write(b"\xff\xfe\xfd")
    with pytest.raises(ValueError, match="page-000001.hwp.*checksum"):
        hardwood.train({"max_depth": 2}, e, num_boost_round=1)


@pytest.mark.parametrize("make,match", [
    (lambda: 5, "iterable"),
    (lambda: iter([np.zeros((3, 2))]), "batch 0: expected"),
    (lambda: iter([(np.zeros((3, 2)), np.zeros(3)), (np.zeros((3, 3)), np.zeros(3))]),
     "batch 1"),
    (lambda: iter([(np.zeros((3, 2)), np.zeros(4))]), "batch 0"),
    (lambda: iter([(np.zeros((3, 2)), None)]), "batch 0"),
    (lambda: iter([]), "no rows"),
    (lambda: iter([(np.zeros((3, 2)), np.zeros(3), np.full(3, -1.0))]), "non-negative"),
    (lambda: iter([(np.zeros((3, 2)), np.zeros(3), np.ones(3)), (np.zeros((3, 2)), np.zeros(3))]),
     "every batch or in none"),
])
def test_bad_batches_are_named(tmp_path, make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        hardwood.Dataset.from_batches(make, str(tmp_path))


def test_other_refusals(tmp_path):
    with pytest.raises(TypeError, match="callable"):
        hardwood.Dataset.from_batches([(np.zeros((3, 2)), np.zeros(3))], str(tmp_path))
    df = pd.DataFrame({"a": pd.Categorical(["x", "y", "x"]), "b": [1.0, 2.0, 3.0]})
    with pytest.raises(NotImplementedError, match="categorical"):
        hardwood.Dataset.from_batches(lambda: iter([(df, np.zeros(3))]), str(tmp_path))
    calls = []

    def changing():  # the second pass gives other batches
        calls.append(1)
        n = 4 if len(calls) == 1 else 5
        yield np.arange(2 * n, dtype=float).reshape(n, 2), np.zeros(n)

    with pytest.raises(ValueError, match="same data each time"):
        hardwood.Dataset.from_batches(changing, str(tmp_path))
    X, y = _data(n=300)
    ds = hardwood.Dataset.from_batches(_maker(X, y), str(tmp_path / "ok"))
    with pytest.raises(ValueError, match="pages parameter"):
        hardwood.train({"pages": 2}, ds, num_boost_round=1)


def test_a_second_pass_with_other_values_is_refused(tmp_path):
    calls = []

    def drifting():  # the same shapes, other values the second time
        calls.append(1)
        yield np.full((4, 2), float(len(calls))), np.zeros(4)

    with pytest.raises(ValueError, match="other feature values than the first"):
        hardwood.Dataset.from_batches(drifting, str(tmp_path))
    assert not os.path.exists(os.path.join(str(tmp_path), MANIFEST))  # no cache to reuse
