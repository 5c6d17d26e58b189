"""hardwood.data.readers: CSV/TSV/TXT (pandas), Parquet (pyarrow) and LibSVM files."""
import gzip

import numpy as np
import pytest

from hardwood.data.readers import ColumnTypeError, detect_format, read_table

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
    with pytest.raises(ValueError, match="missing value .*data row 2"):  # 1-based, as qid's
        read_table(_write(tmp_path / "n.csv", "a,y\n1,0\n2,\n"), "y")
    with pytest.raises(ValueError, match="no feature columns"):
        read_table(_write(tmp_path / "o.csv", "y\n1\n0\n"), "y")
    with pytest.raises(ValueError, match="directory"):
        read_table(str(tmp_path), "y", fmt="csv")
    with pytest.raises(ValueError, match="cannot parse"):
        read_table(_write(tmp_path / "r.csv", 'a,y\n1,0\n"2,1\n'), "y")


# -- CSV column types: numbers, text, and the cells that mix them ---------------------------
def test_csv_typo_in_numeric_column_names_the_cell(tmp_path):
    pd = pytest.importorskip("pandas")
    # a blank line and a quoted field over two lines: the line numbers still fit the file
    text = ('a,b,y\n1.5,p,0\n\n2.5,"q\nr",1\noops,p,0\n3,s,1\n4,p,0\n1.2.3,s,1\n'
            + "".join(f"{k},p,0\n" for k in range(5, 20)))
    path = _write(tmp_path / "d.csv", text)
    with pytest.raises(ColumnTypeError) as ei:
        read_table(path, "y")
    e = ei.value
    assert isinstance(e, ValueError)
    assert e.column == "a" and e.path == path and not e.declared
    assert e.cells == [(3, 6, "oops"), (6, 9, "1.2.3")]
    assert e.n_odd == 2 and e.n_text == 2 and e.n_numbers == 19
    msg = str(e)
    assert "column 'a'" in msg and "d.csv" in msg
    assert "row 3 (line 6) 'oops'" in msg and "row 6 (line 9) '1.2.3'" in msg
    assert "categorical=['a']" in msg
    assert "--categorical a" in e.describe(hint="--categorical a")
    # declared categorical: every value is a category
    X, y, _ = read_table(path, "y", categorical=["a"])
    assert isinstance(X["a"].dtype, pd.CategoricalDtype)
    assert {"oops", "1.2.3", "1.5"} <= set(X["a"].cat.categories)
    # the same file gzip-compressed names the same lines
    gz = tmp_path / "d.csv.gz"
    with gzip.open(gz, "wt") as fh:
        fh.write(text)
    with pytest.raises(ColumnTypeError, match=r"row 3 \(line 6\) 'oops'"):
        read_table(str(gz), "y")


def test_csv_column_rule_numbers_text_and_missing_tokens(tmp_path):
    pd = pytest.importorskip("pandas")
    path = _write(tmp_path / "d.csv", "n,t,m,y\n1, NA ,x,0\n2,u,,1\n, nan ,y,0\n"
                                      " 4 ,null,z,1\n")
    X, y, names = read_table(path, "y")
    # every cell a number or a missing token: numeric (whitespace around NA tokens too)
    assert X["n"].dtype == np.float64
    np.testing.assert_array_equal(X["n"].to_numpy(), [1, 2, np.nan, 4])
    # no cell a number: categorical
    assert isinstance(X["t"].dtype, pd.CategoricalDtype)
    assert list(X["t"].cat.categories) == ["u"]
    assert isinstance(X["m"].dtype, pd.CategoricalDtype)
    # a mostly-text column with a number in it is an error too (the number is the odd cell)
    many = _write(tmp_path / "s.csv", "size,y\n" + "S,0\nM,1\nL,0\n" * 4 + "10,1\n")
    with pytest.raises(ColumnTypeError, match=r"text in 12 cells but numbers in 1: "
                                              r"row 13 \(line 14\) '10'"):
        read_table(many, "y")


def test_csv_declared_numeric_and_infer_off(tmp_path):
    pd = pytest.importorskip("pandas")
    path = _write(tmp_path / "d.csv", "a,t,y\n1,u,0\nx,v,1\n3,5,0\n")
    with pytest.raises(ColumnTypeError, match=r"'a'.*must be numeric.*row 2 \(line 3\) 'x'"):
        read_table(path, "y", numeric=["a"], infer=False)
    with pytest.raises(ColumnTypeError, match=r"column 't'.*must be numeric.*\(3 in all\)|"
                                              r"column 't'.*these cells are not numbers"):
        read_table(path, "y", numeric=["t"], categorical=["a"])
    # infer=False: undeclared columns are left as read (text -> category)
    X, _, _ = read_table(path, "y", infer=False)
    assert isinstance(X["a"].dtype, pd.CategoricalDtype)
    # a column of numbers read as text (a DtypeWarning mix, a quoted number) is numeric
    X, _, _ = read_table(_write(tmp_path / "q.csv", 'a,y\n"1",0\n" 2 ",1\n'), "y",
                         numeric=["a"])
    np.testing.assert_array_equal(X["a"].to_numpy(), [1.0, 2.0])


def test_csv_no_header_typo_uses_feature_names(tmp_path):
    pytest.importorskip("pandas")
    path = _write(tmp_path / "d.data", "0\t1.5\ta\n1\toops\tb\n0\t2.5\ta\n")
    with pytest.raises(ColumnTypeError, match=r"column 'f0'.*row 2 \(line 2\) 'oops'"):
        read_table(path, label=0, fmt="tsv", header=False)
    X, _, names = read_table(path, label=0, fmt="tsv", header=False, categorical=["f0"])
    assert names == ["f0", "f1"]


def test_csv_label_typo_names_the_cell(tmp_path):
    pytest.importorskip("pandas")
    path = _write(tmp_path / "d.csv", "a,y\n1,0\n2,1\n3,one\n")
    with pytest.raises(ValueError, match=r"label column 'y'.*not numeric.*row 3 \(line 4\) "
                                         r"holds 'one'"):
        read_table(path, "y")


def test_parquet_declared_numeric_strings(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = str(tmp_path / "d.parquet")
    pd.DataFrame({"a": ["1.5", "2", None], "b": ["1", "oops", "3"], "t": [1, 0, 1]}).to_parquet(path)
    X, _, _ = read_table(path, "t")  # the file's types: strings are categories
    assert isinstance(X["a"].dtype, pd.CategoricalDtype)
    X, _, _ = read_table(path, "t", numeric=["a"])
    np.testing.assert_array_equal(X["a"].to_numpy(), [1.5, 2.0, np.nan])
    with pytest.raises(ColumnTypeError, match=r"'b'.*must be numeric.*row 2 'oops'"):
        read_table(path, "t", numeric=["b"])


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
