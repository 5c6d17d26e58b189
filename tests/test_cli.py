"""The ``hardwood`` command line, run in-process through ``hardwood.cli.main``."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import hardwood
from hardwood.cli import main, parse_params, parse_value
from hardwood.data.readers import read_table


def _csv_data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = rng.normal(size=n)
    color = rng.choice(["red", "green", "blue"], size=n)
    logit = 2 * a - b + np.where(color == "red", 1.5, -0.5)
    y = (logit + rng.normal(scale=0.3, size=n) > 0).astype(int)
    return a, b, color, y


def write_csv(path, n=300, seed=0, missing_every=17):
    a, b, color, y = _csv_data(n, seed)
    with open(path, "w") as fh:
        fh.write("a,color,b,label\n")
        for i in range(n):
            av = "" if i % missing_every == 0 else f"{a[i]:.6f}"
            fh.write(f"{av},{color[i]},{b[i]:.6f},{y[i]}\n")
    return str(path)


def write_libsvm(path, n=200, seed=0):
    rng = np.random.default_rng(seed)
    with open(path, "w") as fh:
        for _ in range(n):
            x = rng.random(5)
            feats = " ".join(f"{j + 1}:{v:.5f}" for j, v in enumerate(x) if v > 0.1)
            fh.write(f"{x[0] + 2 * x[2]:.5f} {feats}\n")
    return str(path)


def read_preds(path):
    with open(path) as fh:
        header = fh.readline().strip().split(",")
    return header, np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


def run_error(argv, capsys):
    """Run argv; it must fail with exit status 2 and one 'hardwood: error:' line."""
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("hardwood: error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A small CSV, a model trained on it with the CLI, and the training file's path."""
    pytest.importorskip("pandas")
    d = tmp_path_factory.mktemp("cli")
    data = write_csv(d / "train.csv")
    model = str(d / "model.json")
    rc = main(["train", "--data", data, "--label", "label", "--param", "objective=binary:logistic",
               "--param", "max_depth=3", "--param", "learning_rate=0.5", "--rounds", "8",
               "--out", model, "--quiet"])
    assert rc == 0
    return d, data, model


# -- parameter parsing --------------------------------------------------------------------
@pytest.mark.parametrize("text,value", [("3", 3), ("-2", -2), ("0.25", 0.25), ("1e-3", 1e-3),
                                        ("true", True), ("False", False), ("none", None),
                                        ("binary:logistic", "binary:logistic"),
                                        ("auc,logloss", ["auc", "logloss"])])
def test_parse_value(text, value):
    assert parse_value(text) == value
    assert type(parse_value(text)) is type(value)


def test_parse_params():
    assert parse_params(["a=1", "b = x", "c=1.5"]) == {"a": 1, "b": "x", "c": 1.5}
    assert parse_params(["eval_metric=auc"]) == {"eval_metric": "auc"}


# -- train and predict ------------------------------------------------------------------------
def test_train_writes_a_loadable_model(trained, capsys):
    d, data, model_path = trained
    model = hardwood.load(model_path)
    assert model.num_boosted_rounds == 8
    assert model.feature_names == ["a", "color", "b"]
    assert model.info.is_categorical.tolist() == [False, True, False]
    assert sorted(model.info.categories[1]) == ["blue", "green", "red"]
    assert model.objective == "binary:logistic"


@pytest.mark.parametrize("output", ["value", "raw", "leaf"])
def test_predict_matches_model_predict(trained, output, capsys):
    d, data, model_path = trained
    out = str(d / f"preds_{output}.csv")
    rc = main(["predict", "--model", model_path, "--data", data, "--label", "label",
               "--output", output, "--out", out])
    assert rc == 0
    header, got = read_preds(out)
    model = hardwood.load(model_path)
    X, _, _ = read_table(data, label="label")
    want = model.predict(X, output=output)
    want = want.reshape(want.shape[0], -1)
    assert got.shape == want.shape == (300, 8 if output == "leaf" else 1)
    if output == "leaf":
        assert header == [f"leaf_{t}" for t in range(8)]
        np.testing.assert_array_equal(got, want)
    else:
        assert header == [output]
        np.testing.assert_allclose(got, want, rtol=0, atol=0)  # written with full precision
    summary = capsys.readouterr().out
    assert "predicted 300 rows" in summary
    if output == "value":
        assert "logloss" in summary and "auc" in summary


def test_predict_model_is_good_and_label_column_optional(trained, tmp_path):
    d, data, model_path = trained
    test = write_csv(tmp_path / "test.csv", n=200, seed=1)
    out = str(tmp_path / "p.csv")
    # without --label, the extra label column is dropped by name
    assert main(["predict", "--model", model_path, "--data", test, "--out", out]) == 0
    _, p = read_preds(out)
    y = np.loadtxt(test, delimiter=",", skiprows=1, usecols=3)
    assert np.mean((p[:, 0] > 0.5) == y) > 0.85


def test_predict_columns_in_another_order(trained, tmp_path):
    pd = pytest.importorskip("pandas")
    d, data, model_path = trained
    df = pd.read_csv(data)
    shuffled = str(tmp_path / "shuffled.csv")
    df[["label", "b", "color", "a"]].to_csv(shuffled, index=False)
    o1, o2 = str(tmp_path / "p1.csv"), str(tmp_path / "p2.csv")
    assert main(["predict", "-m", model_path, "--data", data, "--label", "label", "-o", o1]) == 0
    assert main(["predict", "-m", model_path, "--data", shuffled, "--label", "label", "-o", o2]) == 0
    np.testing.assert_array_equal(read_preds(o1)[1], read_preds(o2)[1])


def test_predict_to_stdout(trained, capsys):
    d, data, model_path = trained
    assert main(["predict", "-m", model_path, "--data", data, "--out", "-"]) == 0
    cap = capsys.readouterr()
    lines = cap.out.splitlines()
    assert lines[0] == "value" and len(lines) == 301
    assert "written to stdout" in cap.err


def test_train_progress_bar_and_summary(tmp_path, capsys):
    pytest.importorskip("pandas")
    data = write_csv(tmp_path / "d.csv")
    rc = main(["train", "--data", data, "--label", "label", "-p", "objective=binary:logistic",
               "--rounds", "3", "--out", str(tmp_path / "m.json")])
    assert rc == 0
    cap = capsys.readouterr()
    assert "3/3" in cap.err and "round" in cap.err  # tqdm on stderr
    assert "trained 3 rounds" in cap.out and "train-logloss" in cap.out
    rc = main(["train", "--data", data, "--label", "label", "-p", "objective=binary:logistic",
               "--rounds", "3", "--out", str(tmp_path / "m.json"), "--quiet"])
    assert rc == 0
    cap = capsys.readouterr()
    assert cap.err == ""
    assert "trained 3 rounds" in cap.out


def test_train_with_valid_and_early_stopping(tmp_path, capsys):
    pytest.importorskip("pandas")
    data = write_csv(tmp_path / "train.csv", n=300, seed=0)
    valid = write_csv(tmp_path / "valid.csv", n=150, seed=3)
    out = str(tmp_path / "m.json")
    rc = main(["train", "--data", data, "--label", "label", "--valid", valid,
               "-p", "objective=binary:logistic", "-p", "eval_metric=logloss,auc",
               "-p", "learning_rate=1.0", "-p", "max_depth=6", "-p", "min_child_weight=0",
               "--rounds", "200", "--early-stopping", "3", "--out", out, "-q"])
    assert rc == 0
    summary = capsys.readouterr().out
    assert "valid-auc" in summary and "train-logloss" in summary and "best round" in summary
    model = hardwood.load(out)
    assert model.num_boosted_rounds < 200
    assert model.best_iteration is not None


def test_train_predict_parquet(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    a, b, color, y = _csv_data(200)
    df = pd.DataFrame({"a": a, "color": color, "b": b, "y": y})
    path = str(tmp_path / "d.parquet")
    df.to_parquet(path)
    model, out = str(tmp_path / "m.json"), str(tmp_path / "p.csv")
    assert main(["train", "--data", path, "--label", "y", "-p", "objective=binary:logistic",
                 "--rounds", "5", "--out", model, "-q"]) == 0
    assert main(["predict", "--model", model, "--data", path, "--label", "y", "--out", out]) == 0
    X, _, _ = read_table(path, label="y")
    np.testing.assert_array_equal(read_preds(out)[1][:, 0], hardwood.load(model).predict(X))


def test_train_predict_libsvm(tmp_path):
    path = write_libsvm(tmp_path / "d.svm")
    model, out = str(tmp_path / "m.json"), str(tmp_path / "p.csv")
    assert main(["train", "--data", path, "-p", "max_depth=3", "--rounds", "10",
                 "--out", model, "-q"]) == 0
    m = hardwood.load(model)
    assert m.feature_names == ["f1", "f2", "f3", "f4", "f5"]
    # a test file that never uses the last feature still has the model's 5 columns
    test = tmp_path / "t.svm"
    test.write_text("0 1:0.5 3:0.25\n0 2:0.9\n")
    assert main(["predict", "--model", model, "--data", str(test), "--out", out]) == 0
    X = np.array([[0.5, 0, 0.25, 0, 0], [0, 0.9, 0, 0, 0]])
    np.testing.assert_allclose(read_preds(out)[1][:, 0], m.predict(X), rtol=1e-12)


def test_train_multiclass_no_header_tsv(tmp_path):
    pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = np.argmax(X, axis=1)
    path = tmp_path / "m.data"
    np.savetxt(path, np.column_stack([y, X]), delimiter="\t", fmt="%.5f")
    model, out = str(tmp_path / "m.json"), str(tmp_path / "p.csv")
    common = ["--data", str(path), "--format", "tsv", "--no-header", "--label", "0"]
    assert main(["train", *common, "-p", "objective=multi:softprob", "--rounds", "5",
                 "--out", model, "-q"]) == 0
    assert main(["predict", "--model", model, *common, "--out", out]) == 0
    header, p = read_preds(out)
    assert header == ["value_0", "value_1", "value_2"]
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-9)
    assert np.mean(p.argmax(axis=1) == y) > 0.8


def test_predict_categorical_column_read_as_numbers(trained, tmp_path):
    """A string column that is empty in the prediction file is still categorical."""
    d, data, model_path = trained
    f = tmp_path / "t.csv"
    f.write_text("a,color,b\n0.5,,1.0\n-1.0,,0.0\n")
    out = str(tmp_path / "p.csv")
    assert main(["predict", "--model", model_path, "--data", str(f), "--out", out]) == 0
    assert read_preds(out)[1].shape == (2, 1)


def test_train_weight_categorical_and_rounds_param(tmp_path, capsys):
    pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 200
    code = rng.integers(0, 4, size=n)
    x = rng.normal(size=n)
    y = (code == 2).astype(float) + 0.1 * x
    w = rng.random(n) + 0.5
    f = tmp_path / "w.csv"
    with open(f, "w") as fh:
        fh.write("code,x,w,y\n")
        for i in range(n):
            fh.write(f"{code[i]},{x[i]:.6f},{w[i]:.6f},{y[i]:.6f}\n")
    out = str(tmp_path / "m.json")
    assert main(["train", "--data", str(f), "--label", "y", "--weight", "w", "--categorical",
                 "code", "-p", "n_estimators=4", "-p", "max_depth=2", "--out", out, "-q"]) == 0
    assert "trained 4 rounds" in capsys.readouterr().out
    m = hardwood.load(out)
    assert m.feature_names == ["code", "x"]
    assert m.info.is_categorical.tolist() == [True, False]
    assert "weight column 'nope'" in run_error(
        ["train", "--data", str(f), "--label", "y", "--weight", "nope", "--out", out], capsys)
    assert "same setting" in run_error(
        ["train", "--data", str(f), "--label", "y", "-p", "n_estimators=4", "-p",
         "num_boost_round=3", "--out", out], capsys)


# -- errors: one line, exit status 2 ---------------------------------------------------------
def test_error_missing_data_file(tmp_path, capsys):
    msg = run_error(["train", "--data", str(tmp_path / "nope.csv"), "--label", "y",
                     "--out", str(tmp_path / "m.json")], capsys)
    assert "nope.csv" in msg


def test_error_bad_label(trained, capsys):
    d, data, _ = trained
    msg = run_error(["train", "--data", data, "--label", "target", "--out", str(d / "x.json")],
                    capsys)
    assert "label column 'target' is not in" in msg


def test_error_missing_label_option(trained, capsys):
    d, data, _ = trained
    assert "--label" in run_error(["train", "--data", data, "--out", str(d / "x.json")], capsys)


@pytest.mark.parametrize("param,needle", [("foo=1", "unknown parameter 'foo'"),
                                          ("max_depth", "key=value"),
                                          ("max_depth=deep", "max_depth"),
                                          ("learning_rate=-1", "learning_rate"),
                                          ("objective=nonsense", "nonsense")])
def test_error_bad_param(trained, capsys, param, needle):
    d, data, _ = trained
    msg = run_error(["train", "--data", data, "--label", "label", "--param", param,
                     "--out", str(d / "x.json"), "-q"], capsys)
    assert needle in msg


def test_error_bad_arguments(trained, capsys):
    d, data, model = trained
    assert "choose a command" in run_error([], capsys)
    assert "required" in run_error(["train", "--label", "y"], capsys)
    assert "invalid choice" in run_error(["predict", "-m", model, "--data", data, "--output",
                                          "probs", "--out", "p.csv"], capsys)
    assert "invalid int" in run_error(["train", "--data", data, "--label", "label",
                                       "--rounds", "many", "--out", "m.json"], capsys)
    assert "--valid" in run_error(["train", "--data", data, "--label", "label",
                                   "--early-stopping", "3", "--out", str(d / "x.json")], capsys)
    assert "unrecognized" in run_error(["demo", "--bogus"], capsys)
    assert "does not exist" in run_error(["train", "--data", data, "--label", "label",
                                          "--out", str(d / "no" / "m.json")], capsys)
    assert "unknown data format" in run_error(["train", "--data", data, "--label", "label",
                                               "--format", "xls", "--out", "m.json"], capsys)


def test_error_corrupted_model(trained, tmp_path, capsys):
    d, data, model_path = trained
    out = str(tmp_path / "p.csv")
    text = open(model_path).read()
    truncated = tmp_path / "truncated.json"
    truncated.write_text(text[: len(text) // 2])
    assert "not valid JSON" in run_error(["predict", "--model", str(truncated), "--data", data,
                                          "--out", out], capsys)
    doc = json.loads(text)
    doc["trees"][0]["left"][0] = 10 ** 6
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(doc))
    assert "invalid hardwood model" in run_error(["predict", "--model", str(broken), "--data",
                                                  data, "--out", out], capsys)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert "invalid hardwood model" in run_error(["predict", "--model", str(binary), "--data",
                                                  data, "--out", out], capsys)
    assert "no model file" in run_error(["predict", "--model", str(tmp_path / "none.json"),
                                         "--data", data, "--out", out], capsys)
    assert not os.path.exists(out)


def test_error_predict_data_that_does_not_fit(trained, tmp_path, capsys):
    d, data, model_path = trained
    f = tmp_path / "few.csv"
    f.write_text("a,b\n1,2\n")
    msg = run_error(["predict", "--model", model_path, "--data", str(f), "--out",
                     str(tmp_path / "p.csv")], capsys)
    assert "few.csv" in msg and "color" in msg


def test_error_malformed_libsvm(tmp_path, capsys):
    f = tmp_path / "bad.svm"
    f.write_text("1 1:0.5\n0 2:abc\n")
    msg = run_error(["train", "--data", str(f), "--out", str(tmp_path / "m.json")], capsys)
    assert "bad.svm" in msg and "line 2" in msg


def test_error_empty_file(tmp_path, capsys):
    f = tmp_path / "empty.csv"
    f.write_text("")
    msg = run_error(["train", "--data", str(f), "--label", "y", "--out",
                     str(tmp_path / "m.json")], capsys)
    assert "empty" in msg


# -- demo and the module entry point --------------------------------------------------------
def test_demo_tiny(capsys):
    assert main(["demo", "--rows", "2000", "--rounds", "10", "--threads", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "training" in out and "prediction" in out
    auc = float(out.split("test AUC")[1].split()[0])
    acc = float(out.split("test accuracy")[1].split()[0])
    assert auc > 0.8 and acc > 0.7


def test_help_and_version(capsys):
    assert main(["--help"]) == 0
    assert "train" in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert hardwood.__version__ in capsys.readouterr().out


def test_python_dash_m(tmp_path):
    r = subprocess.run([sys.executable, "-m", "hardwood", "predict", "--model",
                        str(tmp_path / "none.json"), "--data", "x.csv", "--out", "p.csv"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2
    assert r.stderr.startswith("hardwood: error: ") and "Traceback" not in r.stderr


NO_PANDAS = """
import sys
BLOCKED = {"pandas", "pyarrow", "xgboost", "lightgbm", "polars"}
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError("blocked " + name)
sys.meta_path.insert(0, Block())
from hardwood.cli import main
rc = main(["demo", "--rows", "1000", "--rounds", "3", "--threads", "1", "--quiet"])
assert not [k for k in sys.modules if k.split(".")[0] in BLOCKED]
rc2 = main(["train", "--data", sys.argv[1], "--label", "y", "--out", sys.argv[2]])
sys.exit(rc * 10 + rc2)
"""


def test_demo_needs_only_declared_dependencies(tmp_path):
    """demo runs without pandas/pyarrow; reading CSV then says what to install."""
    csv = tmp_path / "d.csv"
    csv.write_text("a,y\n1,0\n2,1\n")
    r = subprocess.run([sys.executable, "-c", NO_PANDAS, str(csv), str(tmp_path / "m.json")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2, r.stderr  # demo 0, train 2
    assert "test AUC" in r.stdout
    assert "hardwood: error: reading CSV files needs pandas" in r.stderr


# -- column types: a typo in a numeric column is an error naming the cell (issue 12, item 5) --
def _with_cell(src, dst, row, col, text):
    """Copy the CSV ``src`` to ``dst`` with the cell at data row ``row`` (1-based) of
    column ``col`` replaced by ``text``."""
    lines = open(src).read().splitlines()
    j = lines[0].split(",").index(col)
    cells = lines[row].split(",")
    cells[j] = text
    lines[row] = ",".join(cells)
    dst.write_text("\n".join(lines) + "\n")
    return str(dst)


def test_train_typo_in_numeric_column_is_an_error_naming_the_cell(tmp_path, capsys):
    pytest.importorskip("pandas")
    clean = write_csv(tmp_path / "clean.csv")
    data = _with_cell(clean, tmp_path / "typo.csv", 42, "b", "oops")
    out = str(tmp_path / "m.json")
    train = ["train", "--data", data, "--label", "label", "--rounds", "2", "--out", out, "-q"]
    msg = run_error(train, capsys)
    assert "typo.csv" in msg and "column 'b'" in msg and "'oops'" in msg
    assert "row 42 (line 43)" in msg  # data row and file line (the header is line 1)
    assert "--categorical b" in msg
    assert not os.path.exists(out)
    # two typos: both named; the user's own --categorical list is kept in the advice
    data2 = _with_cell(data, tmp_path / "typo2.csv", 100, "b", "1.5.2")
    msg = run_error(train[:2] + [data2] + train[3:] + ["--categorical", "color"], capsys)
    assert "row 42 (line 43) 'oops'" in msg and "row 100 (line 101) '1.5.2'" in msg
    assert "--categorical color,b" in msg
    # declared categorical, the column is read as categories
    assert main(train + ["--categorical", "b"]) == 0
    m = hardwood.load(out)
    assert m.info.is_categorical.tolist() == [False, True, True]
    assert "oops" in m.info.categories[2]


def test_train_mostly_text_column_with_a_number_is_an_error(tmp_path, capsys):
    pytest.importorskip("pandas")
    data = _with_cell(write_csv(tmp_path / "clean.csv"), tmp_path / "d.csv", 7, "color", "12")
    out = str(tmp_path / "m.json")
    train = ["train", "--data", data, "--label", "label", "--rounds", "2", "--out", out, "-q"]
    msg = run_error(train, capsys)
    assert "column 'color'" in msg and "row 7 (line 8) '12'" in msg
    assert "--categorical color" in msg
    assert main(train + ["--categorical", "color"]) == 0
    assert "12" in hardwood.load(out).info.categories[1]


def test_train_missing_value_tokens_are_not_typos(tmp_path):
    pytest.importorskip("pandas")
    data = write_csv(tmp_path / "d.csv")
    for row, token in [(3, "NA"), (5, "N/A"), (9, "nan"), (11, "null"), (13, " ")]:
        data = _with_cell(data, tmp_path / "d.csv", row, "b", token)
    out = str(tmp_path / "m.json")
    assert main(["train", "--data", data, "--label", "label", "--rounds", "2", "--out", out,
                 "-q"]) == 0
    assert hardwood.load(out).info.is_categorical.tolist() == [False, True, False]


def test_train_typo_in_weight_or_valid_is_an_error_naming_the_cell(tmp_path, capsys):
    pytest.importorskip("pandas")
    data = write_csv(tmp_path / "train.csv")
    valid = _with_cell(write_csv(tmp_path / "v.csv", n=100, seed=2), tmp_path / "valid.csv",
                       20, "a", "1.5e")
    out = str(tmp_path / "m.json")
    msg = run_error(["train", "--data", data, "--label", "label", "--valid", valid,
                     "--rounds", "2", "--out", out, "-q"], capsys)
    assert "valid.csv" in msg and "column 'a'" in msg and "must be numeric" in msg
    assert "row 20 (line 21) '1.5e'" in msg
    assert not os.path.exists(out)
    weighted = _with_cell(data, tmp_path / "w.csv", 5, "b", "heavy")
    msg = run_error(["train", "--data", weighted, "--label", "label", "--weight", "b",
                     "--rounds", "2", "--out", out, "-q"], capsys)
    assert "column 'b'" in msg and "row 5 (line 6) 'heavy'" in msg
    assert "--categorical" not in msg


def test_predict_typo_in_numeric_column_is_an_error_naming_the_cell(trained, tmp_path, capsys):
    d, data, model_path = trained
    test = _with_cell(write_csv(tmp_path / "t.csv", n=50, seed=4), tmp_path / "typo.csv",
                      17, "b", "oops")
    out = str(tmp_path / "p.csv")
    msg = run_error(["predict", "--model", model_path, "--data", test, "--out", out], capsys)
    assert "typo.csv" in msg and "column 'b'" in msg and "must be numeric" in msg
    assert "row 17 (line 18) 'oops'" in msg
    assert "--categorical" not in msg  # the model fixes the types
    assert not os.path.exists(out)
    # an extra column the model does not use is not checked
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(tmp_path / "t.csv")
    df["note"] = ["x"] * 49 + ["3"]
    extra = str(tmp_path / "extra.csv")
    df.to_csv(extra, index=False)
    assert main(["predict", "--model", model_path, "--data", extra, "--out", out]) == 0


def test_predict_text_in_categorical_code_column_keeps_the_numbers(tmp_path):
    """A model trained with --categorical on integer codes: a text cell at predict time is
    an unseen category (missing), and the other rows still match their codes."""
    pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    n = 300
    code = rng.integers(0, 4, size=n)
    x = rng.normal(size=n)
    y = 3.0 * (code == 2) + (code == 1) + 0.1 * x
    f = tmp_path / "c.csv"
    f.write_text("code,x,y\n" + "".join(f"{code[i]},{x[i]:.6f},{y[i]:.6f}\n" for i in range(n)))
    model = str(tmp_path / "m.json")
    assert main(["train", "--data", str(f), "--label", "y", "--categorical", "code",
                 "--rounds", "5", "-p", "max_depth=2", "--out", model, "-q"]) == 0
    typo = _with_cell(str(f), tmp_path / "typo.csv", 4, "code", "oops")
    p1, p2 = str(tmp_path / "p1.csv"), str(tmp_path / "p2.csv")
    assert main(["predict", "--model", model, "--data", str(f), "--out", p1]) == 0
    assert main(["predict", "--model", model, "--data", typo, "--out", p2]) == 0
    clean, got = read_preds(p1)[1][:, 0], read_preds(p2)[1][:, 0]
    keep = np.arange(n) != 3
    np.testing.assert_array_equal(got[keep], clean[keep])
    m = hardwood.load(model)
    X = np.column_stack([code.astype(float), x])
    X[3, 0] = np.nan
    np.testing.assert_allclose(got, m.predict(X), rtol=1e-6)


def test_train_help_documents_the_column_type_rule(capsys):
    assert main(["train", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--categorical" in out and "mixes numbers and text" in out


def test_predict_label_scores_with_the_objectives_metrics(trained, tmp_path, capsys):
    """predict --label prints the metrics of the model's objective from the registry (default
    metric first); a predict-only objective of imported models gets none."""
    from hardwood import metrics

    d, data, model_path = trained
    out = str(tmp_path / "p.csv")
    assert main(["predict", "--model", model_path, "--data", data, "--label", "label",
                 "--out", out]) == 0
    summary = capsys.readouterr().out
    names = metrics.metrics_for_objective("binary:logistic")
    assert names == ("logloss", "auc", "error")
    at = [summary.index(f"; {m} ") for m in names]
    assert at == sorted(at)
    with open(model_path) as fh:
        doc = json.load(fh)
    doc["objective"] = "reg:logistic"  # an imported model's objective, predicted not trained
    other = tmp_path / "imported.json"
    other.write_text(json.dumps(doc))
    assert main(["predict", "--model", str(other), "--data", data, "--label", "label",
                 "--out", out]) == 0
    summary = capsys.readouterr().out
    assert "predicted 300 rows" in summary and not any(f"; {m} " in summary
                                                       for m in metrics.METRICS)
