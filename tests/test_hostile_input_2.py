"""Hostile input, second probe: silent wrong answers, unclear crashes and overwritten files a
newcomer who knows XGBoost, LightGBM and scikit-learn found. One small test per defect; the
rules they hold are listed in docs/checks.md."""
import os

import numpy as np
import pytest

import hardwood
from hardwood.cli import main
from hardwood.data.readers import read_libsvm


def _csv(path, n=60, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    with open(path, "w") as fh:
        fh.write("a,b,y\n")
        for i in range(n):
            fh.write(f"{a[i]:.5f},{b[i]:.5f},{2 * a[i] - b[i]:.5f}\n")
    return str(path)


def _cli_error(argv, capsys):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err
    return err


# -- the command line never writes its output over one of its inputs ---------------------------
def test_cli_refuses_to_write_over_its_own_input_files(tmp_path, capsys):
    data = _csv(tmp_path / "d.csv")
    valid = _csv(tmp_path / "v.csv", seed=1)
    model = str(tmp_path / "m.json")
    assert main(["train", "--data", data, "--label", "y", "--rounds", "2", "--out", model,
                 "-q"]) == 0
    capsys.readouterr()
    files = {p: open(p, "rb").read() for p in (data, valid, model)}
    for argv in (["train", "--data", data, "--label", "y", "--rounds", "2", "--out", data],
                 ["train", "--data", data, "--label", "y", "--rounds", "2", "--valid", valid,
                  "--out", valid],
                 ["predict", "-m", model, "--data", data, "--out", data],
                 ["predict", "-m", model, "--data", data, "--out", model],
                 # the same file under another spelling of its path
                 ["predict", "-m", model, "--data", data,
                  "--out", os.path.join(str(tmp_path), ".", "d.csv")]):
        err = _cli_error(argv + ["-q"] if argv[0] == "train" else argv, capsys)
        assert "is also an input" in err, err
    for p, content in files.items():  # nothing was overwritten
        assert open(p, "rb").read() == content, p


def test_report_refuses_to_write_over_its_model(tmp_path, capsys):
    data = _csv(tmp_path / "d.csv")
    model = str(tmp_path / "m.json")
    assert main(["train", "--data", data, "--label", "y", "--rounds", "2", "--out", model,
                 "-q"]) == 0
    capsys.readouterr()
    before = open(model, "rb").read()
    for out in (model, data):
        err = _cli_error(["report", "--model", model, "--data", data, "--label", "y",
                          "--out", out], capsys)
        assert "is also an input" in err, err
    assert open(model, "rb").read() == before


# -- a LibSVM feature id beyond int32 is a clear error, not an OverflowError traceback ---------
def test_libsvm_feature_id_beyond_int32_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "big.svm"
    path.write_text("1 1:0.5 4000000000:1\n0 2:1\n")
    with pytest.raises(ValueError, match=r"big\.svm.*line 1.*feature index 4000000000"):
        read_libsvm(str(path))
    err = _cli_error(["train", "--data", str(path), "--rounds", "2",
                      "--out", str(tmp_path / "m.json"), "-q"], capsys)
    assert "4000000000" in err


# -- a compiled runtime's out= must not share memory with X --------------------------------
def test_compiled_predict_refuses_an_out_that_aliases_X():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 1))
    model = hardwood.train({"max_depth": 2}, hardwood.Dataset(X, X[:, 0] ** 2),
                           num_boost_round=2)
    for runtime in ("naive", "pred"):
        c = hardwood.compile(model, runtime)
        Xc = X.copy()
        with pytest.raises(ValueError, match="out shares memory with X"):
            c.predict(Xc, output="raw", out=Xc)
        assert np.array_equal(Xc, X)  # X untouched
        out = np.empty((200, 1))
        np.testing.assert_array_equal(c.predict(X, output="raw", out=out),
                                      model.predict(X, output="raw"))


# -- validation labels -------------------------------------------------------------------------
def _xy(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X[:, 0]


def test_binary_validation_labels_outside_0_1_are_an_error():
    # they gave a logloss below 0 and an AUC of 10.7, and early stopping followed them
    X, x0 = _xy()
    train_set = hardwood.Dataset(X, (x0 > 0).astype(float))
    for bad in (np.where(x0 > 0, 2.0, 0.0), (x0 > 0) - 0.5):
        valid = hardwood.Dataset(X, bad, reference=train_set)
        with pytest.raises(ValueError, match=r"valid set 'valid_0'.*labels in \[0, 1\]"):
            hardwood.train({"objective": "binary:logistic", "eval_metric": "auc"}, train_set,
                           num_boost_round=2, valid_sets=[valid])


def test_validation_set_of_one_class_is_accepted():
    # a legitimate validation set (one class only) was refused: "needs at least two classes"
    X, x0 = _xy()
    y3 = np.digitize(x0, [-0.5, 0.5]).astype(float)
    train_set = hardwood.Dataset(X, y3)
    one = hardwood.Dataset(X[:20], np.zeros(20), reference=train_set)
    m = hardwood.train({"objective": "multi:softprob"}, train_set, num_boost_round=2,
                       valid_sets=[one])
    assert len(m.evals_result["valid_0"]["mlogloss"]) == 2
    yb = (x0 > 0).astype(float)
    train_b = hardwood.Dataset(X, yb)
    m = hardwood.train({"objective": "binary:logistic"}, train_b, num_boost_round=2,
                       valid_sets=[hardwood.Dataset(X[:20], np.ones(20), reference=train_b)])
    assert len(m.evals_result["valid_0"]["logloss"]) == 2
    # a class code past num_class is still refused
    with pytest.raises(ValueError, match=r"valid set 'valid_0'.*\[0, num_class=3\)"):
        hardwood.train({"objective": "multi:softprob"}, train_set, num_boost_round=2,
                       valid_sets=[hardwood.Dataset(X[:20], np.full(20, 3.0),
                                                    reference=train_set)])


def test_regression_metric_on_multiclass_is_refused_up_front():
    # rmse/mae met the (n, K) probabilities after the first round: a numpy broadcast error
    X, x0 = _xy()
    y3 = np.digitize(x0, [-0.5, 0.5]).astype(float)
    train_set = hardwood.Dataset(X, y3)
    for metric in ("rmse", "mae"):
        with pytest.raises(ValueError, match=f"eval_metric '{metric}'.*multi:softprob"):
            hardwood.train({"objective": "multi:softprob", "eval_metric": metric}, train_set,
                           num_boost_round=2, valid_sets=[train_set])


# -- hardwood.load on a peer's model file says to import it ------------------------------------
def test_load_of_an_xgboost_or_lightgbm_file_says_to_import_it(tmp_path):
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    X, y = _xy()
    xgb.train({"max_depth": 2}, xgb.DMatrix(X, y), 2).save_model(str(tmp_path / "x.json"))
    lgb.train({"verbose": -1}, lgb.Dataset(X, y), 2).save_model(str(tmp_path / "l.txt"))
    for name, lib in (("x.json", "XGBoost"), ("l.txt", "LightGBM")):
        with pytest.raises(hardwood.ModelFormatError, match=f"{lib}.*hardwood.import_model"):
            hardwood.load(str(tmp_path / name))
        assert isinstance(hardwood.import_model(str(tmp_path / name)), hardwood.Model)


# -- frame columns: dates are refused, pandas sparse columns are read ------------------------
def test_date_columns_are_refused_and_sparse_columns_read():
    import pandas as pd
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=100), "b": rng.normal(size=100)})
    model = hardwood.train({"max_depth": 2}, hardwood.Dataset(df, df.a * 2), num_boost_round=2)
    dates = df.assign(b=pd.date_range("2000", periods=100, tz="UTC"))
    # a date column was read as nanoseconds since 1970: a silent wrong prediction
    for bad in (dates, df.assign(b=pd.to_timedelta(np.arange(100), unit="s"))):
        with pytest.raises(TypeError, match="column 'b' has dtype .*not numeric"):
            model.predict(bad)
        with pytest.raises(TypeError, match="column 'b' has dtype .*not numeric"):
            hardwood.Dataset(bad, df.a)
    # pandas sparse columns: an AttributeError ('SparseDtype' has no itemsize)
    sparse = df.astype(pd.SparseDtype(float, 0.0))
    np.testing.assert_array_equal(model.predict(sparse), model.predict(df))
    m2 = hardwood.train({"max_depth": 2}, hardwood.Dataset(sparse, df.a * 2), num_boost_round=2)
    np.testing.assert_array_equal(m2.predict(df), model.predict(df))


def test_forest_max_features_past_the_features_is_an_error():
    """An integer max_features larger than the feature count was quietly capped; scikit-learn
    refuses it (the user meant another data set or another count)."""
    X = np.random.default_rng(0).normal(size=(40, 4))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match=r"max_features must be in \(0, n_features=4\]"):
        hardwood.RandomForestClassifier(n_estimators=2, max_features=10).fit(X, y)
    hardwood.RandomForestClassifier(n_estimators=2, max_features=4).fit(X, y)


def test_vpred_width_must_be_one_of_the_widths():
    """compile(..., v=0 / 2.5 / True) was taken as tuned, 2 or 1 without a word."""
    X = np.random.default_rng(0).normal(size=(100, 3))
    m = hardwood.train({"max_depth": 2}, hardwood.Dataset(X, X[:, 0]), 2)
    for v in (0, 2.5, True, 3, "4"):
        with pytest.raises(ValueError, match="v must be None"):
            hardwood.compile(m, runtime="vpred", v=v)
    np.testing.assert_allclose(hardwood.compile(m, runtime="vpred", v=4).predict(X),
                               m.predict(X), rtol=0, atol=1e-6)


@pytest.mark.parametrize("runtime", ["auto", "naive", "struct+", "pred", "vpred", "codegen"])
def test_compiled_runtimes_pickle(runtime):
    """A compiled runtime pickles (it raised "cannot pickle 'module' object"): as its model,
    runtime, trees and vpred's width, compiled again on load."""
    import pickle

    X = np.random.default_rng(0).normal(size=(200, 4))
    m = hardwood.train({"max_depth": 3, "objective": "binary:logistic"},
                       hardwood.Dataset(X, (X[:, 0] > 0).astype(float)), 4)
    kw = {"v": 4, "iteration_range": (1, 3)} if runtime == "vpred" else {}
    c = hardwood.compile(m, runtime=runtime, **kw)
    back = pickle.loads(pickle.dumps(c))
    assert back.runtime == runtime and (back.t0, back.t1) == (c.t0, c.t1)
    np.testing.assert_array_equal(back.predict(X), c.predict(X))
    if runtime == "vpred":
        assert back.v == 4
