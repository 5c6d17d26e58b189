"""hardwood.data.readers: CSV/TSV/TXT (pandas), Parquet (pyarrow) and LibSVM files."""
import gzip

import numpy as np
import pytest

from hardwood.data.readers import detect_format, read_table

CSV = "a,b,c,y\n1,x,2.5,0\n2,y,,1\n3,x,1.0,0\n4,z,0.5,1\n"


def _write(path, text):
    path.write_text(text)
    return str(path)


# -- format detection ------------------------------------------------------------------------
@pytest.mark.parametrize("name,fmt", [("a.csv", "csv"), ("a.TSV", "csv"), ("a.txt", "csv"),
                                      ("a.parquet", "parquet"), ("a.pq", "parquet"),
                                      ("a.svm", "libsvm"), ("a.libsvm", "libsvm"),
                                      ("a.svmlight", "libsvm"), ("a.csv.gz", "csv"),
                                      ("a.svm.bz2", "libsvm")])
def test_detect_format_from_extension(name, fmt):
    assert detect_format(name) == fmt


def test_detect_format_explicit_and_unknown():
    assert detect_format("data.train", "libsvm") == "libsvm"
    assert detect_format("data.train", "TSV") == "csv"
    with pytest.raises(ValueError, match=r"data\.train.*extension"):
        detect_format("data.train")
    with pytest.raises(ValueError, match="unknown data format 'xlsx'"):
        detect_format("a.csv", "xlsx")


# -- CSV ------------------------------------------------------------------------------------
def test_csv_label_by_name_and_string_column_is_category(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y, names = read_table(_write(tmp_path / "d.csv", CSV), label="y")
    assert names == ["a", "b", "c"]
    np.testing.assert_array_equal(y, [0, 1, 0, 1])
    assert y.dtype == np.float64
    assert isinstance(X["b"].dtype, pd.CategoricalDtype)
    assert sorted(X["b"].cat.categories) == ["x", "y", "z"]
    assert np.isnan(X["c"].iloc[1])
    assert "y" not in X.columns


@pytest.mark.parametrize("label", [3, -1, "3", "-1"])
def test_csv_label_by_index(tmp_path, label):
    pytest.importorskip("pandas")
    X, y, names = read_table(_write(tmp_path / "d.csv", CSV), label=label)
    assert names == ["a", "b", "c"]
    np.testing.assert_array_equal(y, [0, 1, 0, 1])


def test_csv_without_label(tmp_path):
    pytest.importorskip("pandas")
    X, y, names = read_table(_write(tmp_path / "d.csv", CSV))
    assert y is None and names == ["a", "b", "c", "y"]


def test_tsv_and_sniffed_txt(tmp_path):
    pytest.importorskip("pandas")
    X, y, names = read_table(_write(tmp_path / "d.tsv", "p\tq\tlab\n1\t2\t0\n3\t4\t1\n"), "lab")
    assert names == ["p", "q"] and X.shape == (2, 2)
    X, y, names = read_table(_write(tmp_path / "d.txt", "p;q;lab\n1;2;0\n3;4;1\n5;6;0\n"), "lab")
    assert names == ["p", "q"]
    np.testing.assert_array_equal(X["q"], [2, 4, 6])
    X, y, names = read_table(_write(tmp_path / "w.txt", "p q lab\n1  2 0\n3 4  1\n5 6 0\n"), "lab")
    assert names == ["p", "q"]
    np.testing.assert_array_equal(y, [0, 1, 0])


def test_csv_no_header_label_by_index(tmp_path):
    pytest.importorskip("pandas")
    path = _write(tmp_path / "d.data", "0\t1.5\ta\n1\t2.5\tb\n")
    X, y, names = read_table(path, label=0, fmt="tsv", header=False)
    assert names == ["f0", "f1"]
    np.testing.assert_array_equal(y, [0, 1])
    with pytest.raises(ValueError, match="without a header"):
        read_table(path, label="y", fmt="csv", header=False)


def test_csv_gzip(tmp_path):
    pytest.importorskip("pandas")
    path = tmp_path / "d.csv.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(CSV)
    X, y, names = read_table(str(path), "y")
    assert X.shape == (4, 3)


def test_csv_errors(tmp_path):
    pytest.importorskip("pandas")
    good = _write(tmp_path / "d.csv", CSV)
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        read_table(str(tmp_path / "nope.csv"), "y")
    with pytest.raises(ValueError, match=r"label column 'target' is not in .*d\.csv"):
        read_table(good, "target")
    with pytest.raises(ValueError, match="index 9 is out of range"):
        read_table(good, 9)
    with pytest.raises(ValueError, match="'b'.*not numeric"):
        read_table(good, "b")
    with pytest.raises(ValueError, match="empty"):
        read_table(_write(tmp_path / "e.csv", ""), "y")
    with pytest.raises(ValueError, match="no data rows"):
        read_table(_write(tmp_path / "h.csv", "a,b,y\n"), "y")
    with pytest.raises(ValueError, match="missing value"):
        read_table(_write(tmp_path / "n.csv", "a,y\n1,0\n2,\n"), "y")
    with pytest.raises(ValueError, match="no feature columns"):
        read_table(_write(tmp_path / "o.csv", "y\n1\n0\n"), "y")
    with pytest.raises(ValueError, match="directory"):
        read_table(str(tmp_path), "y", fmt="csv")
    with pytest.raises(ValueError, match="cannot parse"):
        read_table(_write(tmp_path / "r.csv", 'a,y\n1,0\n"2,1\n'), "y")


# -- Parquet ----------------------------------------------------------------------------------
def test_parquet_roundtrip(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    df = pd.DataFrame({"num": [1.0, 2.0, np.nan], "s": ["u", None, "v"], "t": [1, 0, 1]})
    path = str(tmp_path / "d.parquet")
    df.to_parquet(path)
    X, y, names = read_table(path, label="t")
    assert names == ["num", "s"]
    np.testing.assert_array_equal(y, [1, 0, 1])
    assert isinstance(X["s"].dtype, pd.CategoricalDtype)
    assert X["s"].isna().tolist() == [False, True, False]
    X2, y2, _ = read_table(path, label=-1)
    np.testing.assert_array_equal(y2, y)


def test_parquet_errors(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = str(tmp_path / "d.pq")
    pd.DataFrame({"a": [1, 2], "t": [0, 1]}).to_parquet(path)
    with pytest.raises(ValueError, match="label column 'y' is not in"):
        read_table(path, "y")
    bad = _write(tmp_path / "bad.parquet", "this is not parquet")
    with pytest.raises(ValueError, match=r"cannot read .*bad\.parquet.* as Parquet"):
        read_table(bad, "t")
    empty = str(tmp_path / "empty.parquet")
    pd.DataFrame({"a": pd.Series([], dtype=float), "t": pd.Series([], dtype=float)}).to_parquet(empty)
    with pytest.raises(ValueError, match="no data rows"):
        read_table(empty, "t")


# -- LibSVM -----------------------------------------------------------------------------------
def test_libsvm_one_based(tmp_path):
    path = _write(tmp_path / "d.svm", "1 1:2 3:4\n0 2:1.5 # a comment\n1 qid:3 3:-1e-3\n")
    X, y, names = read_table(path)
    assert X.format == "csr"
    np.testing.assert_array_equal(X.toarray(), [[2, 0, 4], [0, 1.5, 0], [0, 0, -1e-3]])
    np.testing.assert_array_equal(y, [1, 0, 1])
    assert names == ["f1", "f2", "f3"]


def test_libsvm_zero_based_and_n_features(tmp_path):
    path = _write(tmp_path / "d.libsvm", "1 0:2 2:4\n0 1:1\n")
    X, y, names = read_table(path)
    np.testing.assert_array_equal(X.toarray(), [[2, 0, 4], [0, 1, 0]])
    assert names == ["f0", "f1", "f2"]
    X, _, names = read_table(path, n_features=5)
    assert X.shape == (2, 5) and names[-1] == "f4"
    with pytest.raises(ValueError, match="feature id 2.*only 2 features"):
        read_table(path, n_features=2)
    one = _write(tmp_path / "o.svm", "1 1:2\n")
    X, _, names = read_table(one, zero_based=True)
    assert X.shape == (1, 2) and names == ["f0", "f1"]
    with pytest.raises(ValueError, match="id 0"):
        read_table(path, zero_based=False)


def test_libsvm_gzip(tmp_path):
    path = tmp_path / "d.svm.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("1 1:2 3:4\n0 2:1\n")
    X, y, _ = read_table(str(path))
    assert X.shape == (2, 3)


@pytest.mark.parametrize("text,line,problem", [
    ("1 1:2\n0 2:1 3\n", 2, "'3' is not an index:value pair"),
    ("1 1:2\nabc 2:1\n", 2, "label 'abc'"),
    ("1 1:x\n", 1, "'1:x' is not"),
    ("1 3:2 1:4\n", 1, "sorted"),
    ("1 -1:3\n", 1, "'-1:3'"),
])
def test_libsvm_malformed_names_the_line(tmp_path, text, line, problem):
    path = _write(tmp_path / "bad.svm", text)
    with pytest.raises(ValueError, match="malformed LibSVM file") as e:
        read_table(path)
    assert f"line {line}" in str(e.value) and problem in str(e.value)
    assert "bad.svm" in str(e.value)


def test_libsvm_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such data file"):
        read_table(str(tmp_path / "x.svm"))
    with pytest.raises(ValueError, match="empty"):
        read_table(_write(tmp_path / "e.svm", ""))
    with pytest.raises(ValueError, match="no data lines"):
        read_table(_write(tmp_path / "c.svm", "# only a comment\n"))
    with pytest.raises(ValueError, match="label is always the first field"):
        read_table(_write(tmp_path / "d.svm", "1 1:2\n"), label="y")


def test_libsvm_trains(tmp_path):
    import hardwood

    rng = np.random.default_rng(0)
    lines = []
    for _ in range(200):
        x = rng.random(4)
        lines.append(f"{int(x[0] > 0.5)} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(x)))
    X, y, names = read_table(_write(tmp_path / "d.svm", "\n".join(lines) + "\n"))
    ds = hardwood.Dataset(X, y, feature_names=names)
    model = hardwood.train({"objective": "binary:logistic", "max_depth": 2}, ds, 5)
    assert model.feature_names == ["f1", "f2", "f3", "f4"]
    assert np.mean((model.predict(X) > 0.5) == y) > 0.95
