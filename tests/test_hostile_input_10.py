"""Inputs and parameters tried as a new user would (session 20): each test names what
hardwood did before."""
import numpy as np
import pytest

import hardwood as hw
from hardwood.objectives import _lightgbm_median

RUNTIMES = ["naive", "struct", "struct+", "pred", "vpred", "codegen", "auto"]


@pytest.mark.parametrize("objective, n_class", [("binary:logistic", 0),
                                                ("multi:softprob", 3)])
def test_predicting_no_rows_gives_no_predictions(objective, n_class):
    """``Model.predict`` and every compiled runtime refused a matrix of 0 rows ("X is
    empty"), where XGBoost and LightGBM return an empty array: a batch job's empty last
    chunk failed. Each output keeps its width, and a wrong column count is still refused."""
    pd = pytest.importorskip("pandas")
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = np.digitize(X[:, 0], [-0.5, 0.5]) if n_class else (X[:, 0] > 0)
    params = {"objective": objective, "max_depth": 3}
    if n_class:
        params["num_class"] = n_class
    model = hw.train(params, hw.Dataset(X, y.astype(float)), 3)
    none = np.zeros((0, 3))
    for output in ["value", "raw", "leaf", "contrib", "interaction"]:
        got, two = model.predict(none, output=output), model.predict(X[:2], output=output)
        assert got.shape == (0,) + two.shape[1:], output
    for runtime in RUNTIMES:
        compiled = hw.compile(model, runtime=runtime)
        for output in ["value", "raw", "leaf"]:
            got = compiled.predict(none.astype(np.float32), output=output)
            assert got.shape == (0,) + compiled.predict(X[:2], output=output).shape[1:]
    for empty in [pd.DataFrame(none), sp.csr_matrix(none)]:
        assert model.predict(empty).shape[0] == 0
    with pytest.raises(ValueError, match="has 5 features"):
        model.predict(np.zeros((0, 5)))
    with pytest.raises(ValueError, match="X is empty"):  # training still needs rows
        hw.Dataset(none, np.zeros(0))


def test_no_rows_of_a_categorical_frame():
    """A frame of 0 rows with the training's category column predicts nothing, through
    the reference walk, codegen and SHAP."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.normal(size=300),
                       "c": pd.Categorical(rng.choice(["x", "y", "z"], 300))})
    y = df["a"] + (df["c"] == "y")
    model = hw.train({"max_depth": 3}, hw.Dataset(df, y), 3)
    assert model.predict(df.iloc[:0]).shape == (0,)
    assert hw.compile(model, "codegen").predict(df.iloc[:0]).shape == (0,)
    assert model.predict(df.iloc[:0], output="contrib").shape == (0, 3)


def test_dataset_takes_label_as_xgboost_and_lightgbm_do():
    """``hw.Dataset(X, label=y)`` (the keyword of XGBoost's ``DMatrix`` and LightGBM's
    ``Dataset``) raised "unexpected keyword argument 'label'"."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 2))
    y = X[:, 0] * 2
    by_label = hw.train({"max_depth": 2}, hw.Dataset(X, label=y), 3)
    by_y = hw.train({"max_depth": 2}, hw.Dataset(X, y), 3)
    np.testing.assert_array_equal(by_label.predict(X), by_y.predict(X))
    with pytest.raises(ValueError, match="not both"):
        hw.Dataset(X, y, label=y)


@pytest.mark.parametrize("values, weights, expected", [
    ([1, 2, 3, 4, 5], None, 3.0), ([1, 2, 3, 4], None, 2.5),
    ([1, 2, 3, 4, 5], [1, 1, 1, 1, 1], 2.5), ([1, 2, 3, 4], [2, 2, 2, 3], 2.25),
    ([1, 2, 3, 4], [0.1, 0.1, 0.1, 0.2], 2.0), ([1, 2, 3], [10, 1, 1], 1.0),
    ([1, 2, 3], [1, 1, 10], 3.0), ([1, 2, 3, 4, 5], [1, 1.2, 0.5, 0.5, 0.5], 1 + 0.85 / 1.2),
    ([10, 20, 30, 40, 50], [1, 5, 1, 1, 1], 17.0)])
def test_lightgbm_median_rule(values, weights, expected):
    """LightGBM 4.7's medians, as its own single-leaf models gave them (its Python package
    keeps the weights of a list, so that all-ones list is weighted); the entry with weights
    1, 1.2, 0.5 ... is 1 + (1.85 - 1) / 1.2."""
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    assert _lightgbm_median(np.asarray(values, dtype=np.float64), w) == pytest.approx(expected)


@pytest.mark.parametrize("weights", [None, "uniform", "ones"])
def test_l1_under_lightgbm_names_is_lightgbm_model(weights):
    """``objective='l1'`` (LightGBM's name) refit its leaves with XGBoost's weighted median:
    with weights, 1.4 off LightGBM's model after 20 rounds from the first round on. It now
    takes LightGBM's rule, and an all-ones weight array is unweighted, as LightGBM's Python
    package makes it; ``reg:absoluteerror`` keeps XGBoost's."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    n, depth, rounds = 2000, 3, 12
    X = rng.integers(0, 12, size=(n, 6)).astype(np.float64)
    y = X[:, 0] - 0.6 * X[:, 1] + 0.4 * X[:, 2] * (X[:, 3] > 5) + rng.normal(scale=2, size=n)
    y = y.astype(np.float32).astype(np.float64)  # LightGBM's labels are float32
    w = {None: None, "ones": np.ones(n),
         "uniform": rng.uniform(0.5, 2.0, n).astype(np.float32).astype(np.float64)}[weights]
    booster = lgb.train({"objective": "l1", "num_leaves": 2 ** depth, "max_depth": depth,
                         "learning_rate": 0.3, "lambda_l2": 1.0, "min_data_in_leaf": 0,
                         "min_sum_hessian_in_leaf": 1e-3, "verbose": -1, "num_threads": 1},
                        lgb.Dataset(X, y, weight=w), rounds)
    # (LightGBM's objective name brings LightGBM's growth and defaults, its min_data_in_leaf
    # of 20 among them: given as the LightGBM model's)
    params = {"objective": "l1", "max_depth": depth, "learning_rate": 0.3, "reg_lambda": 1.0,
              "min_child_weight": 1e-3, "min_data_in_leaf": 0}
    model = hw.train(params, hw.Dataset(X, y, weight=w), rounds)
    np.testing.assert_allclose(model.predict(X, output="raw"), booster.predict(X, raw_score=True),
                               atol=1e-6)
    if weights == "uniform":
        xgb_rule = hw.train(dict(params, objective="reg:absoluteerror"),
                            hw.Dataset(X, y, weight=w), rounds)
        assert np.abs(xgb_rule.predict(X) - booster.predict(X)).max() > 0.1


def test_wide_values_keep_their_precision_in_every_container():
    """Values that float32 cannot hold (1e8 + U(0, 100): float32's spacing there is 8) went
    through float32 when they came as a pandas integer column (Int64, Arrow int64 too), a
    big-endian ``'>f8'`` or ``longdouble`` array, or an integer sparse matrix: a float64
    model predicted 2.8 off on them, and training on them gave a model 2.4 off. Only numpy
    float64 and integer arrays kept them. Every container now gives the float64 answer."""
    pd = pytest.importorskip("pandas")
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(3)
    ints = (1e8 + rng.integers(0, 100, size=(600, 3))).astype(np.int64)
    X = ints.astype(np.float64)
    y = np.sin(X[:, 0] / 7.0) + (X[:, 1] % 10 > 4)
    model = hw.train({"max_depth": 4}, hw.Dataset(X, y), 8)
    want = model.predict(X)
    containers = {
        "int64 frame": pd.DataFrame(ints), "Int64 frame": pd.DataFrame(ints).astype("Int64"),
        ">f8": X.astype(">f8"), "longdouble": X.astype(np.longdouble),
        "int64 csr": sp.csr_matrix(ints)}
    try:
        containers["Arrow int64 frame"] = pd.DataFrame(ints).astype("int64[pyarrow]")
    except (ImportError, TypeError):
        pass
    for name, Z in containers.items():
        np.testing.assert_array_equal(model.predict(Z), want, err_msg=name)
        np.testing.assert_array_equal(hw.compile(model, "vpred").predict(Z), want, err_msg=name)
        if name.endswith("frame"):
            Z = Z.set_axis([f"f{j}" for j in range(3)], axis=1)  # the model's names
        trained = hw.train({"max_depth": 4}, hw.Dataset(Z, y), 8)
        np.testing.assert_array_equal(trained.predict(X), want, err_msg=f"trained on {name}")


def test_forest_sends_missing_values_right_at_a_tie_as_scikit_learn():
    """A split trained without missing values sends NaN to the child with more rows; with
    as many rows on both sides hardwood sent it left, scikit-learn right
    (``missing_go_to_left = n_left > n_right``)."""
    from sklearn.ensemble import RandomForestRegressor as SkForest

    X = np.arange(10, dtype=np.float64).reshape(-1, 1)
    y = np.r_[np.zeros(5), np.ones(5) * 10.0]
    kw = dict(n_estimators=1, bootstrap=False, max_depth=1, max_features=None, random_state=0)
    ours = hw.RandomForestRegressor(**kw).fit(X, y)
    theirs = SkForest(**kw).fit(X, y)
    nan = np.array([[np.nan]])
    assert ours.predict(nan)[0] == theirs.predict(nan)[0] == 10.0
    X7 = np.r_[X, [[10.0]]]  # 5 rows left, 6 right; and 6 left, 5 right
    for Xs, ys in [(X7, np.r_[y, 10.0]), (np.r_[[[-1.0]], X], np.r_[0.0, y])]:
        ours = hw.RandomForestRegressor(**kw).fit(Xs, ys)
        assert ours.predict(nan)[0] == SkForest(**kw).fit(Xs, ys).predict(nan)[0]


def _train_in_child(X, y):
    return hw.train({"max_depth": 2}, hw.Dataset(X, y), 2).predict(X[:2])


def test_fork_after_gnu_openmp_is_a_clear_error_not_a_hang():
    """A ``multiprocessing`` fork pool whose parent had trained killed its workers on their
    first parallel kernel (GNU OpenMP does not survive fork), and ``Pool.map`` waited
    forever. The workers now raise an error that says to use 'spawn' or 'forkserver', and
    the parent gets it."""
    import multiprocessing as mp

    from hardwood import parallel

    if not hasattr(__import__("os"), "fork"):
        pytest.skip("no fork() here")
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] + rng.normal(scale=0.1, size=300)
    hw.train({"max_depth": 2}, hw.Dataset(X, y), 2)  # parallel kernels run in this process
    if not parallel._gnu_omp_started():
        pytest.skip("Numba's threading layer here is not GNU OpenMP")
    with mp.get_context("fork").Pool(1) as pool:
        with pytest.raises(RuntimeError, match="'spawn' or 'forkserver'"):
            pool.apply_async(_train_in_child, (X, y)).get(timeout=120)


def test_threads_writing_one_file_at_once(tmp_path, monkeypatch):
    """Threads of one process shared the temporary name ``{path}.tmp{pid}`` of an atomic
    write: four threads saving one model path, or predicting through a codegen kernel not
    yet in the cache, failed with ``FileNotFoundError`` in 1-3 of 4 (the others' replace
    had taken the file). Each write now has a temporary file of its own."""
    from concurrent.futures import ThreadPoolExecutor
    import threading

    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(tmp_path / "cache"))
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(float)
    model = hw.train({"objective": "binary:logistic", "max_depth": 2}, hw.Dataset(X, y), 3)
    want = model.predict(X)
    path = tmp_path / "model.json"
    barrier = threading.Barrier(4)

    def save(_):
        barrier.wait()
        model.save(path)

    def predict(_):
        barrier.wait()
        return model.predict(X, runtime="codegen")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(save, range(4)))
        got = list(pool.map(predict, range(4)))
    np.testing.assert_array_equal(hw.load(path).predict(X), want)
    for g in got:
        np.testing.assert_allclose(g, want, rtol=1e-6)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "model.json"]  # no leftovers


def test_masked_cells_are_missing_values():
    """A numpy masked array was read through ``np.asarray``: the values under the mask were
    used (predictions 9.5 off those with NaN in the masked cells), and masked labels or
    weights counted as given. Masked cells of X are now missing values on every path, and
    masked labels or weights are an error."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(800, 3))
    y = 3 * X[:, 0] + X[:, 1]
    mask = np.zeros_like(X, dtype=bool)
    mask[:400, 0] = True
    Xm, Xn = np.ma.masked_array(X, mask=mask), np.where(mask, np.nan, X)
    model = hw.train({"max_depth": 3}, hw.Dataset(Xn, y), 6)
    want = model.predict(Xn)
    np.testing.assert_array_equal(hw.train({"max_depth": 3}, hw.Dataset(Xm, y), 6).predict(Xn),
                                  want)
    np.testing.assert_array_equal(model.predict(Xm), want)
    np.testing.assert_array_equal(hw.compile(model, "vpred").predict(Xm), want)
    est = hw.GBDTRegressor(n_estimators=6, max_depth=3)
    np.testing.assert_array_equal(est.fit(Xm, y).predict(Xm), est.fit(Xn, y).predict(Xn))
    some = np.arange(800) < 3
    with pytest.raises(ValueError, match="label is a masked array with 3 masked"):
        hw.Dataset(X, np.ma.masked_array(y, mask=some))
    with pytest.raises(ValueError, match="weight is a masked array"):
        hw.Dataset(X, y, weight=np.ma.masked_array(np.ones(800), mask=some))
    assert hw.Dataset(X, np.ma.masked_array(y)).n_rows == 800  # nothing masked: fine


def test_complex_frame_column_is_refused():
    """A complex column of a frame trained on its real part (numpy's cast warned only);
    a complex array was already refused, as LightGBM refuses the frame."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(7)
    df = pd.DataFrame({"z": rng.normal(size=50) + 1j, "b": rng.normal(size=50)})
    with pytest.raises(TypeError, match="'z' has dtype complex128"):
        hw.Dataset(df, np.zeros(50))


def test_tree_group_is_read_only():
    """The caches know ``tree_group`` by identity: swapping two outputs in place left the
    compiled runtime predicting the old order (0.66 off ``Model.predict``). It is now
    read-only, as the trees' arrays; assigning a new array is seen by the caches."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 3))
    y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)
    model = hw.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2},
                     hw.Dataset(X, y), 3)
    with pytest.raises(ValueError, match="read-only"):
        model.tree_group[0] = 1
    model.predict(X, runtime="struct+")
    swapped = np.array(model.tree_group)
    swapped[model.tree_group == 0], swapped[model.tree_group == 1] = 1, 0
    model.tree_group = swapped
    np.testing.assert_allclose(model.predict(X, runtime="struct+"), model.predict(X), rtol=1e-6)


def test_continuing_an_imported_model_says_why_it_cannot():
    """Continuing an imported XGBoost model on the very data it was trained on was refused
    with advice to build the Dataset from that data, which it already was: the model splits
    at XGBoost's bin edges, not hardwood's. The error now says so."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(9)
    X = rng.normal(size=(2000, 3))
    y = X[:, 0] + X[:, 1] ** 2 + rng.normal(scale=0.1, size=2000)
    booster = xgb.train({"max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 5)
    with pytest.raises(ValueError, match="continue training it in that library"):
        hw.train({"max_depth": 3}, hw.Dataset(X, y), 2, init_model=hw.import_model(booster))


def test_csv_lines_with_more_fields_than_the_header_are_an_error(tmp_path):
    """Every line of ``a,b,y`` written as ``5,258,0.822,0.330`` (a thousands separator)
    trained on label 0.822 with the real label dropped, pandas' one warning aside, through
    ``read_csv`` (the command line) and ``Dataset.from_files``. Now an error that names the
    likely cause; a line that ends with the separator (an empty extra field) still reads."""
    pytest.importorskip("pandas")
    from hardwood.data.readers import read_csv

    extra = tmp_path / "extra.csv"
    extra.write_text("a,b,y\n5,258,0.822,0.330\n6,100,0.5,0.7\n")
    trailing = tmp_path / "trailing.csv"
    trailing.write_text("a,b,y\n1,2,0,\n3,4,1,\n")
    with pytest.raises(ValueError, match="more fields than its header.*thousands separator"):
        read_csv(extra, label="y")
    with pytest.raises(ValueError, match="more fields than its header"):
        hw.Dataset.from_files(str(extra), label="y", cache_dir=str(tmp_path / "c1"))
    X, y, _ = read_csv(trailing, label="y")
    assert X.values.tolist() == [[1, 2], [3, 4]] and list(y) == [0.0, 1.0]
    assert hw.Dataset.from_files(str(trailing), label="y",
                                 cache_dir=str(tmp_path / "c2")).n_rows == 2


def test_cli_predicts_a_headerless_file_by_position(tmp_path):
    """``hardwood predict --no-header`` refused a headerless file for a model trained on a
    file with a header ("expected ['a', 'b', 'c'], got ['f0', 'f1', 'f2']"), though its
    columns are read by position."""
    pd = pytest.importorskip("pandas")
    from hardwood.cli import main

    rng = np.random.default_rng(10)
    df = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    df["y"] = df["a"] + df["b"]
    df.to_csv(tmp_path / "train.csv", index=False)
    df[["a", "b", "c"]].to_csv(tmp_path / "test.csv", index=False)
    df[["a", "b", "c"]].to_csv(tmp_path / "test_nh.csv", index=False, header=False)
    model = str(tmp_path / "m.json")
    assert main(["train", "--data", str(tmp_path / "train.csv"), "--label", "y", "--rounds", "3",
                 "--out", model, "-q"]) == 0
    for data, extra in [("test.csv", []), ("test_nh.csv", ["--no-header"])]:
        assert main(["predict", "--model", model, "--data", str(tmp_path / data), "--out",
                     str(tmp_path / (data + ".out"))] + extra) == 0
    assert ((tmp_path / "test.csv.out").read_text()
            == (tmp_path / "test_nh.csv.out").read_text())


def test_parquet_dates_are_refused_as_timestamps_are(tmp_path):
    """A Parquet ``date32`` column became a categorical feature, one category per date, so
    every later date was an unseen one (missing); the CLI failed only when saving the model.
    It is now refused before training, as timestamps were (and as XGBoost and LightGBM)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import datetime

    from hardwood.data.readers import read_table

    days = [datetime.date(2020, 1, 1) + datetime.timedelta(int(d)) for d in range(50)]
    pq.write_table(pa.table({"d": pa.array(days), "x": np.arange(50.0), "y": np.arange(50.0)}),
                   tmp_path / "dates.parquet")
    X, y, _ = read_table(str(tmp_path / "dates.parquet"), label="y")
    with pytest.raises(TypeError, match="'d' has dtype datetime64"):
        hw.Dataset(X, y)


def test_csv_true_false_column_with_a_gap_stays_numeric(tmp_path):
    """A True/False column is numeric, but one empty cell made it categorical: a model
    trained on the full column refused the file ("categorical here but was numeric")."""
    pytest.importorskip("pandas")
    from hardwood.data.readers import read_table

    (tmp_path / "full.csv").write_text("flag,x\nTrue,1\nFalse,2\nTrue,3\n")
    (tmp_path / "gap.csv").write_text("flag,x\n,1\nFalse,2\nTrue,3\n")
    full, _, _ = read_table(str(tmp_path / "full.csv"))
    gap, _, _ = read_table(str(tmp_path / "gap.csv"))
    assert gap["flag"].dtype == np.float64
    np.testing.assert_array_equal(gap["flag"].to_numpy(), [np.nan, 0.0, 1.0])
    assert full["flag"].dtype == bool


def test_libsvm_file_with_a_byte_order_mark_reads(tmp_path):
    """A LibSVM file saved with a UTF-8 byte-order mark failed on its first label
    ("the label '\\ufeff1' is not a number"); the mark is now skipped, as the CSV reader
    already did."""
    from hardwood.data.readers import read_libsvm

    plain = tmp_path / "plain.svm"
    plain.write_bytes(b"1 1:0.5 2:1\n0 1:1.5 3:2\n")
    marked = tmp_path / "marked.svm"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    X1, y1, n1 = read_libsvm(str(plain))
    X2, y2, n2 = read_libsvm(str(marked))
    np.testing.assert_array_equal(X1.toarray(), X2.toarray())
    np.testing.assert_array_equal(y1, y2)
    assert n1 == n2
