"""The command line, file reading and Dask, tried as a new user would (session 16): each test
names what hardwood did before."""
import numpy as np
import pandas as pd
import pytest

from hardwood.cli import main
from hardwood.data.readers import read_table


def _write(path, lines):
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def test_csv_lines_ending_with_the_separator_keep_their_columns(tmp_path):
    """Lines with one field more than the header (a trailing comma) made pandas take the first
    column as the row index: the label was read as the first feature's values and the last
    feature was all NaN, in read_table, the CLI and Dataset.from_files."""
    import hardwood

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    y = (X[:, 0] > 0).astype(int)
    rows = [f"{y[i]},{float(X[i, 0])!r},{float(X[i, 1])!r}" for i in range(50)]
    path = str(tmp_path / "trailing.csv")
    _write(path, ["y,a,b"] + [r + "," for r in rows])
    Xr, yr, _ = read_table(path, label="y")
    np.testing.assert_array_equal(yr, y)
    np.testing.assert_allclose(np.asarray(Xr[["a", "b"]], dtype=float), X)
    ds = hardwood.Dataset.from_files(path, label="y", cache_dir=str(tmp_path / "cache"))
    np.testing.assert_array_equal(np.asarray(ds.label), y)


def test_predict_without_header_refuses_a_column_count_other_than_the_features(tmp_path,
                                                                             capsys):
    """``hardwood predict --no-header`` on a file that still held its label column, without
    ``--label``, read the label as feature f0 and dropped the last feature (exit 0)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    data = str(tmp_path / "train.csv")
    pd.DataFrame({"y": y, "a": X[:, 0], "b": X[:, 1], "c": X[:, 2]}).to_csv(
        data, index=False, header=False)
    model = str(tmp_path / "m.json")
    assert main(["train", "--data", data, "--no-header", "--label", "0", "-p",
                 "objective=binary:logistic", "--rounds", "3", "-q", "--out", model]) == 0
    out = str(tmp_path / "p.csv")
    assert main(["predict", "-m", model, "--data", data, "--no-header", "--label", "0",
                 "--out", out]) == 0
    capsys.readouterr()
    rc = main(["predict", "-m", model, "--data", data, "--no-header", "--out",
               str(tmp_path / "q.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "4 columns and no header" in err and "--label" in err


def test_report_takes_libsvm_data(tmp_path):
    """``hardwood report --data FILE.svm`` failed on every LibSVM file ("sparse array length
    is ambiguous"): the report timed its runtime on len(X) of a sparse matrix."""
    rng = np.random.default_rng(0)
    lines = []
    for i in range(120):
        x = rng.normal(size=3)
        lines.append(f"{int(x[0] > 0)} " + " ".join(f"{j + 1}:{x[j]:.4f}" for j in range(3)))
    data = str(tmp_path / "d.svm")
    _write(data, lines)
    model = str(tmp_path / "m.json")
    assert main(["train", "--data", data, "-p", "objective=binary:logistic", "--rounds", "3",
                 "-q", "--out", model]) == 0
    assert main(["report", "-m", model, "--data", data, "--out",
                 str(tmp_path / "r.html")]) == 0


def test_dask_labels_as_a_series():
    """A Dask Series of labels (``ddf["label"]``) crashed the Dask classifiers: newer Dask
    Series have ``columns`` too, and ``y[y.columns[0]]`` of one failed."""
    dd = pytest.importorskip("dask.dataframe")
    from hardwood import dask as hd

    y = pd.Series(np.array([2.0, 0.0, 1.0, 2.0, 1.0, 0.0]), name="label")
    ys = dd.from_pandas(y, npartitions=2)
    np.testing.assert_array_equal(hd._unique_labels(ys, "y"), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(hd._encode(ys, np.array([0.0, 1.0, 2.0])).compute(),
                                  y.to_numpy())
    frame = dd.from_pandas(y.to_frame(), npartitions=2)
    np.testing.assert_array_equal(hd._unique_labels(frame, "y"), [0.0, 1.0, 2.0])


def test_parquet_decimal_columns_are_numbers(tmp_path):
    """A decimal128 column (SQL and Spark exports of amounts) was read as a categorical
    feature: new amounts were unseen categories, treated as missing (test RMSE 1.6 against
    0.075 as floats), and ``hardwood train`` failed only when saving."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from decimal import Decimal

    rng = np.random.default_rng(0)
    amount = np.round(rng.uniform(0, 100, 300), 2)
    y = amount / 10 + rng.normal(size=300) * 0.05
    table = pa.table({"y": y, "amount": pa.array([Decimal(f"{a:.2f}") for a in amount],
                                                 type=pa.decimal128(10, 2))})
    path = str(tmp_path / "d.parquet")
    pq.write_table(table, path)
    X, yr, _ = read_table(path, label="y")
    assert X["amount"].dtype == np.float64
    np.testing.assert_allclose(X["amount"].to_numpy(), amount)
    # declared categorical, it stays as the file has it
    Xc, _, _ = read_table(path, label="y", categorical=["amount"])
    assert Xc["amount"].dtype != np.float64
