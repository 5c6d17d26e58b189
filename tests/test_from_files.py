"""``Dataset.from_files`` (issue 13): Parquet row groups, CSV and LibSVM streamed into pages
on disk; every bad file is named, with its row group or rows."""
import os

import numpy as np
import pandas as pd
import pytest

import hardwood
from hardwood.train import grower as grower_mod

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _frame(n=6_000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), 2)  # few distinct values: exact sketches
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) + rng.normal(size=n) > 0)
    df = pd.DataFrame(X, columns=[f"c{j}" for j in range(d)])
    df["y"] = y.astype(np.float64)
    return df


def _parts(df, folder, kind, n_parts=3, row_group_size=700):
    paths = []
    for k, part in enumerate(np.array_split(np.arange(len(df)), n_parts)):
        p = os.path.join(folder, f"part-{k}.{kind}")
        chunk = df.iloc[part]
        if kind == "parquet":
            pq.write_table(pa.Table.from_pandas(chunk, preserve_index=False), p,
                           row_group_size=row_group_size)
        else:
            chunk.to_csv(p, index=False)
        paths.append(p)
    return paths


def _same_model_as_in_core(ds, X, y, monkeypatch):
    core = hardwood.Dataset(X, y)
    for a, b in zip(ds.bin_mapper.upper_edges, core.bin_mapper.upper_edges):
        np.testing.assert_array_equal(a, b)
    monkeypatch.setattr(grower_mod, "FUSED", False)
    p = {"objective": "binary:logistic", "max_depth": 3, "learning_rate": 0.3}
    np.testing.assert_allclose(hardwood.train(p, ds, num_boost_round=4).predict(X),
                               hardwood.train(p, core, num_boost_round=4).predict(X),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_files_give_the_in_core_bins_and_model(tmp_path, monkeypatch, kind):
    df = _frame()
    paths = _parts(df, str(tmp_path), kind)
    ds = hardwood.Dataset.from_files(os.path.join(str(tmp_path), f"part-*.{kind}"), label="y",
                                     cache_dir=str(tmp_path / "cache"), page_bytes=20_000,
                                     batch_rows=900)
    assert ds.n_rows == len(df) and ds.info.names == ["c0", "c1", "c2", "c3"]
    assert ds.sketch_error == 0.0 and len(ds.pages_on_disk[0]) > 1
    np.testing.assert_array_equal(ds.label, df["y"].to_numpy())
    X = df.drop(columns="y").to_numpy()
    _same_model_as_in_core(ds, X, df["y"].to_numpy(), monkeypatch)
    again = hardwood.Dataset.from_files(paths, label="y", cache_dir=str(tmp_path / "cache"),
                                        page_bytes=20_000, batch_rows=900)
    assert again.pages_on_disk == ds.pages_on_disk  # the cache is reused


def test_libsvm_files(tmp_path, monkeypatch):
    from sklearn.datasets import dump_svmlight_file

    df = _frame(n=3_000)
    X = np.nan_to_num(df.drop(columns="y").to_numpy())  # LibSVM: absent means zero
    y = df["y"].to_numpy()
    dump_svmlight_file(X[:1_700], y[:1_700], str(tmp_path / "a.svm"))  # 0-based ids
    dump_svmlight_file(X[1_700:], y[1_700:], str(tmp_path / "b.svm"))
    ds = hardwood.Dataset.from_files([str(tmp_path / "a.svm"), str(tmp_path / "b.svm")],
                                     label=None, cache_dir=str(tmp_path / "c"), batch_rows=500)
    assert ds.info.names == ["f0", "f1", "f2", "f3"] and ds.n_rows == 3_000
    _same_model_as_in_core(ds, X, y, monkeypatch)


def test_weight_column(tmp_path):
    df = _frame(n=2_000)
    df["w"] = np.linspace(0.5, 2.0, len(df))
    paths = _parts(df, str(tmp_path), "parquet")
    ds = hardwood.Dataset.from_files(paths, label="y", weight="w", cache_dir=str(tmp_path / "c"))
    np.testing.assert_array_equal(ds.weight, df["w"].to_numpy())
    assert ds.info.names == ["c0", "c1", "c2", "c3"]


def _bad_parquet_cases(tmp_path):
    df = _frame(n=1_500)
    good = _parts(df, str(tmp_path), "parquet")
    cases = {}
    p = str(tmp_path / "nolabel.parquet")
    pq.write_table(pa.Table.from_pandas(df.drop(columns="y"), preserve_index=False), p)
    cases["no label"] = ([good[0], p], r"label column 'y' is not in '.*nolabel.parquet'")
    p = str(tmp_path / "typed.parquet")
    t = df.copy()
    t["c1"] = t["c1"].astype(str)
    pq.write_table(pa.Table.from_pandas(t, preserve_index=False), p)
    cases["type change"] = ([good[0], p],
                            r"column 'c1' is double in '.*part-0.parquet' but \w*string in "
                            r"'.*typed.parquet'")
    p = str(tmp_path / "junk.parquet")
    with open(p, "wb") as fh:
        fh.write(b"this is not parquet" * 10)
    cases["unreadable"] = ([p], r"cannot read '.*junk.parquet' as Parquet")
    p = str(tmp_path / "other.parquet")
    pq.write_table(pa.Table.from_pandas(df.drop(columns="c2"), preserve_index=False), p)
    cases["other columns"] = ([good[0], p], r"other feature columns .*missing \['c2'\]")
    # a row group whose bytes are damaged: the file opens, the row group fails
    p = str(tmp_path / "damaged.parquet")
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), p, row_group_size=500,
                   compression="snappy")
    meta = pq.ParquetFile(p).metadata
    col = meta.row_group(1).column(0)
    start = col.dictionary_page_offset or col.data_page_offset
    with open(p, "r+b") as fh:
        fh.seek(start + 8)
        fh.write(os.urandom(64))
    cases["damaged row group"] = ([p], r"damaged.parquet', row group 1")
    return cases


@pytest.mark.parametrize("case", ["no label", "type change", "unreadable", "other columns",
                                  "damaged row group"])
def test_bad_parquet_files_are_named(tmp_path, case):
    paths, match = _bad_parquet_cases(tmp_path)[case]
    with pytest.raises(ValueError, match=match):
        hardwood.Dataset.from_files(paths, label="y", cache_dir=str(tmp_path / "cache"))


def test_bad_csv_and_libsvm_files_are_named(tmp_path):
    df = _frame(n=1_200)
    good = _parts(df, str(tmp_path), "csv", n_parts=2)
    bad = str(tmp_path / "bad.csv")
    t = df.astype(object)
    t.iloc[1_000, 2] = "oops"
    t.to_csv(bad, index=False)
    with pytest.raises(ValueError, match=r"column 'c2' in '.*bad.csv' must be numeric.*row "
                                         r"1001 \(line 1002\) 'oops'"):
        hardwood.Dataset.from_files([good[0], bad], label="y", cache_dir=str(tmp_path / "c"),
                                    batch_rows=300)
    with pytest.raises(ValueError, match=r"label column 'target' is not in '.*part-0.csv'"):
        hardwood.Dataset.from_files(good, label="target", cache_dir=str(tmp_path / "c"))
    svm = tmp_path / "bad.svm"
    svm.write_text("1 1:0.5 2:1.0\n0 1:0.25\n1 2:x\n")
    with pytest.raises(ValueError, match=r"malformed LibSVM file '.*bad.svm': line 3"):
        hardwood.Dataset.from_files(str(svm), label=None, cache_dir=str(tmp_path / "c"))


def test_file_lists_are_checked(tmp_path):
    with pytest.raises(ValueError, match="empty list of files"):
        hardwood.Dataset.from_files([], label="y", cache_dir=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no data file matches"):
        hardwood.Dataset.from_files(str(tmp_path / "*.parquet"), label="y",
                                    cache_dir=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no such data file"):
        hardwood.Dataset.from_files([str(tmp_path / "absent.csv")], label="y",
                                    cache_dir=str(tmp_path))
    df = _frame(n=500)
    a = _parts(df, str(tmp_path), "csv", n_parts=1)[0]
    b = _parts(df, str(tmp_path), "parquet", n_parts=1)[0]
    with pytest.raises(ValueError, match="several formats"):
        hardwood.Dataset.from_files([a, b], label="y", cache_dir=str(tmp_path))


def test_a_cache_of_other_values_with_the_same_bins_is_rebuilt(tmp_path):
    """Bins and sizes alone do not identify the data: a value that moves within its bin
    keeps the bins but may change a page (here, a value moves across a bin edge while the
    edges stay), so the key holds a digest of the values."""
    df = _frame(n=2_000)
    paths = _parts(df, str(tmp_path), "parquet")
    a = hardwood.Dataset.from_files(paths, label="y", cache_dir=str(tmp_path / "c"))
    c0 = df["c0"].to_numpy()
    i = 0 if not np.isnan(c0[0]) else 1
    j = int(np.flatnonzero(~np.isnan(c0) & (c0 != c0[i]))[0])
    swapped = df.copy()
    swapped.loc[[i, j], "c0"] = c0[[j, i]]  # the same values, in other rows: the same bins
    paths = _parts(swapped, str(tmp_path), "parquet")
    b = hardwood.Dataset.from_files(paths, label="y", cache_dir=str(tmp_path / "c"))
    assert [list(e) for e in b.bin_mapper.upper_edges] == \
        [list(e) for e in a.bin_mapper.upper_edges]
    assert b.pages_on_disk[1] != a.pages_on_disk[1]  # another key: the pages were rewritten


def test_estimators_fit_a_dataset_on_pages(tmp_path, monkeypatch):
    """The estimators train a paged Dataset as they train arrays: the same model as
    ``hardwood.train`` on it, labels encoded by the classifier, feature names kept."""
    df = _frame(n=3_000)
    df["y"] = np.where(df["y"] > 0, 7.0, 3.0)  # labels other than 0/1: encoded by classes_
    paths = _parts(df, str(tmp_path), "parquet")
    ds = hardwood.Dataset.from_files(paths, label="y", cache_dir=str(tmp_path / "c"))
    X = df.drop(columns="y")
    clf = hardwood.GBDTClassifier(n_estimators=5, max_depth=3).fit(ds)
    assert clf.classes_.tolist() == [3.0, 7.0] and clf.n_features_in_ == 4
    assert clf.feature_names_in_.tolist() == ["c0", "c1", "c2", "c3"]
    core = hardwood.GBDTClassifier(n_estimators=5, max_depth=3).fit(X, df["y"])
    np.testing.assert_allclose(clf.predict_proba(X), core.predict_proba(X), atol=1e-9)
    assert np.array_equal(ds.label, df["y"].to_numpy())  # the Dataset keeps its own labels
    reg = hardwood.GBDTRegressor(n_estimators=5, max_depth=3,
                                 sampling_method="mvs", subsample=0.5).fit(
        ds, eval_set=[(X.iloc[:500], df["y"].iloc[:500])])
    assert np.all(np.isfinite(reg.predict(X))) and "validation_0" in reg.evals_result_
    with pytest.raises(ValueError, match="labels and weights the hardwood.Dataset holds"):
        hardwood.GBDTRegressor().fit(ds, df["y"])
