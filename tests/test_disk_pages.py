"""Binned pages on disk (data/page_file.py) and the learner streaming them
(backends/pages.DiskPages): the trees of in-core training, and a clear error for every bad
page."""
import os

import numpy as np
import pytest

import hardwood
from hardwood.data.page_file import (FORMAT_VERSION, PageError, read_header, read_page,
                                     write_page, write_pages)
from hardwood.train import grower as grower_mod

KEY = bytes(range(32))


def _bins(n=500, d=7, dtype=np.uint8, seed=0):
    return np.random.default_rng(seed).integers(0, 200, size=(n, d)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_a_page_reads_back_in_both_layouts(tmp_path, dtype):
    B = _bins(dtype=dtype)
    path = str(tmp_path / "p.hwp")
    write_page(path, B, 1000, KEY)
    rows, cols, first = read_page(path, KEY)
    assert first == 1000 and rows.dtype == dtype
    np.testing.assert_array_equal(rows, B)
    np.testing.assert_array_equal(cols, B.T)
    assert rows.flags.writeable and cols.flags.c_contiguous
    assert read_header(path)[1:4] == (500, 7, 1000)


def _corrupt(path, at, value):
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(value)


@pytest.mark.parametrize("damage,match", [
    (lambda p: _corrupt(p, 0, b"XXXX"), "not a hardwood page"),
    (lambda p: _corrupt(p, 8, (FORMAT_VERSION + 1).to_bytes(4, "little")), "format version"),
    (lambda p: _corrupt(p, 12, (9).to_bytes(4, "little")), "unknown dtype"),
    (lambda p: _corrupt(p, 200, b"\xff\x00\xff"), "checksum"),
    (lambda p: os.truncate(p, os.path.getsize(p) - 10), "truncated"),
    (lambda p: os.truncate(p, 50), "truncated"),
    (lambda p: open(p, "ab").write(b"extra"), "truncated or padded"),
    (lambda p: _corrupt(p, 16, (10 ** 9).to_bytes(8, "little")), "does not hold"),
])
def test_a_bad_page_is_refused_by_name(tmp_path, damage, match):
    path = str(tmp_path / "p.hwp")
    write_page(path, _bins(), 0, KEY)
    damage(path)
    with pytest.raises(PageError, match=match) as e:
        read_page(path, KEY)
    assert "p.hwp" in str(e.value)


def test_a_page_of_other_data_is_refused(tmp_path):
    path = str(tmp_path / "p.hwp")
    write_page(path, _bins(), 0, KEY)
    with pytest.raises(PageError, match="other data"):
        read_page(path, bytes(32))
    with pytest.raises(PageError, match="cannot be read"):
        read_page(str(tmp_path / "missing.hwp"))


def test_pages_are_cut_by_bytes(tmp_path):
    B = _bins(n=1000, d=5)
    paths = write_pages(B, str(tmp_path), page_bytes=2 * 5 * 300, key=KEY)
    assert [read_header(p)[1] for p in paths] == [300, 300, 300, 100]
    got = np.vstack([read_page(p, KEY)[0] for p in paths])
    np.testing.assert_array_equal(got, B)


def _data(seed=0, n=6000):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) - 0.5 * np.nan_to_num(X[:, 1]) + rng.normal(scale=0.3, size=n)
    return X, y


@pytest.mark.parametrize("params", [
    {"max_depth": 5},
    {"grow_policy": "lossguide", "max_leaves": 20, "colsample_bynode": 0.7},
    {"max_depth": 4, "sampling_method": "mvs", "subsample": 0.4},
    {"max_depth": 4, "subsample": 0.6, "objective": "reg:absoluteerror"},
    {"max_depth": 3, "sampling_method": "goss", "subsample": 0.3, "colsample_bynode": 0.5,
     "learning_rate": 0.5},
])
def test_streamed_pages_build_the_in_core_trees(tmp_path, params, monkeypatch):
    """Without sampling each level streams the pages from disk (the paper's Algorithm 6); with
    it, each round's sample is gathered into one in-memory page (Algorithm 7). Either way the
    model equals in-core training on the same bins (to rounding: sums in page order)."""
    X, y = _data()
    ds = hardwood.Dataset(X, y)
    p = {"objective": "reg:squarederror", "learning_rate": 0.3, "random_state": 5, **params}
    monkeypatch.setattr(grower_mod, "FUSED", False)
    core = hardwood.train(p, ds, num_boost_round=4)
    disk = hardwood.train({**p, "pages": {"dir": str(tmp_path), "page_bytes": 2 * 6 * 700}},
                          ds, num_boost_round=4)
    assert len(os.listdir(tmp_path)) == 9  # 6000 rows, 700 a page
    for a, b in zip(core.trees, disk.trees):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.threshold, b.threshold)
        np.testing.assert_allclose(a.value, b.value, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(core.predict(X), disk.predict(X), rtol=1e-9, atol=1e-9)


def test_a_sampled_round_reads_the_pages_twice_and_multiclass_gathers_once(tmp_path,
                                                                          monkeypatch):
    X, y = _data(3)
    y = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(float)
    ds = hardwood.Dataset(X, y)
    p = {"objective": "multi:softprob", "max_depth": 3, "sampling_method": "mvs",
         "subsample": 0.3, "random_state": 2}
    monkeypatch.setattr(grower_mod, "FUSED", False)
    core = hardwood.train(p, ds, num_boost_round=3)
    from hardwood.backends.pages import DiskPages

    reads = []
    real = DiskPages._load

    def counting(self, i, cols=True):
        reads.append(cols)
        return real(self, i, cols)

    monkeypatch.setattr(DiskPages, "_load", counting)
    disk = hardwood.train({**p, "pages": {"dir": str(tmp_path), "page_bytes": 2 * 6 * 1500}},
                          ds, num_boost_round=3)
    n_pages = len(os.listdir(tmp_path))
    # per round: one gather (the round's three trees share it), one update pass per tree
    assert len(reads) == 3 * (n_pages + 3 * n_pages)
    assert not any(reads)  # the gather and the updates read the row-major halves only
    np.testing.assert_allclose(core.predict(X), disk.predict(X), rtol=1e-9, atol=1e-9)


def test_disk_pages_never_take_the_fused_grower(tmp_path, monkeypatch):
    X, y = _data(1, n=2000)
    monkeypatch.setattr(grower_mod, "FUSED", True)
    from hardwood.backends.cpu import CPUBackend

    def boom(*a, **k):
        raise AssertionError("the fused grower ran on pages on disk")

    monkeypatch.setattr(CPUBackend, "grow_fused", boom)
    hardwood.train({"max_depth": 3, "pages": {"dir": str(tmp_path)}}, hardwood.Dataset(X, y), 2)


def test_bad_disk_page_spec_is_refused(tmp_path):
    X, y = _data(2, n=300)
    with pytest.raises(ValueError, match="pages on disk take"):
        hardwood.train({"pages": {"folder": str(tmp_path)}}, hardwood.Dataset(X, y), 1)


def test_the_row_major_half_reads_alone_and_each_half_is_checked(tmp_path):
    B = _bins()
    path = str(tmp_path / "p.hwp")
    write_page(path, B, 0, KEY)
    rows, cols, _ = read_page(path, KEY, cols=False)
    np.testing.assert_array_equal(rows, B)
    assert cols is None
    half = B.nbytes
    head = os.path.getsize(path) - 2 * half
    _corrupt(path, head + half + 5, b"\x7f")  # damage the column-major half only
    read_page(path, KEY, cols=False)  # the row-major half is intact
    with pytest.raises(PageError, match="checksum mismatch in its column-major bins"):
        read_page(path, KEY)
