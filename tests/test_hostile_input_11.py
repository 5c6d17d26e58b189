"""Inputs and parameters tried as a new user would (session 21): each test names what
hardwood did before."""
import numpy as np
import pytest

import hardwood as hw


@pytest.mark.parametrize("estimator", ["GBDTRegressor", "RandomForestRegressor",
                                       "GBDTClassifier", "RandomForestClassifier"])
def test_estimators_refuse_masked_labels_and_weights(estimator):
    """The estimators passed a masked ``y`` or ``sample_weight`` to scikit-learn's checks,
    which drop the mask: they trained on the values under it, where ``hw.train`` refuses
    them. They now refuse them too, and an unmasked masked array still fits."""
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=200)
    if "Classifier" in estimator:
        y = (y > 0).astype(int)
    some = np.zeros(200, bool)
    some[[3, 50]] = True
    est = getattr(hw, estimator)(n_estimators=3)
    with pytest.raises(ValueError, match="y is a masked array with 2 masked"):
        est.fit(X, np.ma.masked_array(y, mask=some))
    with pytest.raises(ValueError, match="sample_weight is a masked array with 2 masked"):
        est.fit(X, y, sample_weight=np.ma.masked_array(np.ones(200), mask=some))
    est.fit(X, np.ma.masked_array(y), sample_weight=np.ma.masked_array(np.ones(200)))
    assert est.predict(X).shape == (200,)


def test_predicting_no_rows_of_an_object_array():
    """A (0, n) object array raised numpy's "cannot reshape array of size 0" from the
    string check, where a numeric one returns 0 predictions."""
    X = np.random.default_rng(1).normal(size=(100, 3))
    model = hw.train({"max_depth": 2}, hw.Dataset(X, X[:, 0]), 2)
    assert model.predict(np.empty((0, 3), dtype=object)).shape == (0,)
    with pytest.raises(ValueError, match="has 4 features"):
        model.predict(np.empty((0, 4), dtype=object))


def test_from_files_reads_parquet_decimals_and_wide_integers_as_read_table(tmp_path):
    """``Dataset.from_files`` refused a Parquet ``decimal128`` column ("reads numeric columns
    only ... encode them as numbers") and failed on int64 beyond 2**53 (pyarrow's "not in
    range"), where ``read_table`` reads both as float64. Both readers now agree."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import decimal

    from hardwood.data.readers import read_table

    rng = np.random.default_rng(3)
    cents = rng.integers(0, 10**6, size=40)
    amounts = [decimal.Decimal(int(c)) / 100 for c in cents]
    table = pa.table({"amount": pa.array(amounts, pa.decimal128(12, 2)),
                      "id": pa.array(2**60 + np.arange(40) * 2**12, pa.int64()),
                      "y": rng.normal(size=40)})
    pq.write_table(table, tmp_path / "t.parquet")
    X, y, _ = read_table(str(tmp_path / "t.parquet"), label="y")
    ds = hw.Dataset.from_files(str(tmp_path / "t.parquet"), label="y",
                               cache_dir=str(tmp_path / "c"))
    ref = hw.Dataset(X, y)
    np.testing.assert_array_equal(X["amount"].to_numpy(), [float(a) for a in amounts])
    model = hw.train({"max_depth": 2, "min_child_weight": 0}, ref, 2)
    assert model.predict(X).shape == (40,)
    assert ds.n_rows == 40 and ds.feature_names == ["amount", "id"]


def test_from_files_names_a_bad_label_by_its_row_in_the_file(tmp_path):
    """A text label in the second batch of a CSV file was reported by its row within the
    batch ("row 3 (line 7)" for the file's data row 6)."""
    pytest.importorskip("pandas")
    (tmp_path / "x.csv").write_text("a,b,y\n" + "1,2,0\n" * 5 + "1,2,yes\n")
    with pytest.raises(ValueError, match=r"row 6 \(line 7\) holds 'yes'"):
        hw.Dataset.from_files(str(tmp_path / "x.csv"), label="y", batch_rows=3,
                              cache_dir=str(tmp_path / "c"))


def test_libsvm_multi_label_line_is_named(tmp_path):
    """A multi-label LibSVM line (``1,2 1:0.5``) passed the line check and failed in the
    parser with "could not convert string to float: b'1,2'" and no line number."""
    from hardwood.data.readers import read_libsvm

    (tmp_path / "m.svm").write_text("1 1:0.5\n1,2 1:0.5 2:1\n0 2:3\n")
    with pytest.raises(ValueError, match="line 2: the label '1,2' is a multi-label"):
        read_libsvm(str(tmp_path / "m.svm"))
    with pytest.raises(ValueError, match="line 2: the label '1,2' is a multi-label"):
        hw.Dataset.from_files(str(tmp_path / "m.svm"), label=None,
                              cache_dir=str(tmp_path / "c"))


def test_parquet_with_a_repeated_column_name(tmp_path):
    """Two Parquet columns of one name gave pyarrow's "Multiple matches for FieldRef",
    listing its internal fields, through ``read_table``; ``from_files`` already named them."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from hardwood.data.readers import read_table

    pq.write_table(pa.Table.from_arrays([pa.array([1.0, 2.0]), pa.array([3.0, 4.0]),
                                         pa.array([0, 1])], names=["a", "a", "y"]),
                   tmp_path / "d.parquet")
    with pytest.raises(ValueError, match=r"duplicate column names: \['a'\]"):
        read_table(str(tmp_path / "d.parquet"), label="y")


def test_numbers_in_another_notation_warn_when_read_as_categories(tmp_path):
    """Decimal commas, percentages, currency and hexadecimal made a column categorical
    without a word (pandas reads them as text too): every value unseen in training then
    predicts as missing. Reading them now warns; real text and declared columns do not."""
    pytest.importorskip("pandas")
    from hardwood.data.readers import read_csv

    (tmp_path / "semi.txt").write_text("a;b;y\n1,5;2,0;0\n3,5;4,0;1\n2,5;1,0;0\n")
    (tmp_path / "pct.csv").write_text("a,c,y\n10%,red,0\n20%,blue,1\n")
    with pytest.warns(UserWarning, match="look like numbers") as seen:
        read_csv(tmp_path / "semi.txt", label="y")
    assert [str(w.message)[:8] for w in seen] == ["column '", "column '"]
    assert "'1,5', '3,5', '2,5'" in str(seen[0].message)
    with pytest.warns(UserWarning, match="'a' .* look like numbers") as seen:
        read_csv(tmp_path / "pct.csv", label="y")
    assert not any("'c'" in str(w.message) for w in seen)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_csv(tmp_path / "pct.csv", label="y", categorical=["a"])


def test_cli_reads_another_separator(tmp_path, capsys):
    """The command line had no ``--sep``: a ';'-separated file named .csv could not be read
    ("label column 'y' is not in ... (columns: 'a;b;y')"). It now takes ``--sep``, and the
    error says which separator the header seems to use."""
    pytest.importorskip("pandas")
    from hardwood.cli import main

    rng = np.random.default_rng(4)
    rows = ["a;b;y"] + [f"{a:.3f};{b:.3f};{a + b:.3f}" for a, b in rng.random((200, 2))]
    (tmp_path / "semi.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "comma.csv").write_text("\n".join(r.replace(";", ",") for r in rows) + "\n")
    model, out = str(tmp_path / "m.json"), str(tmp_path / "p.csv")
    assert main(["train", "--data", str(tmp_path / "semi.csv"), "--label", "y", "--sep", ";",
                 "--rounds", "3", "--out", model, "-q"]) == 0
    assert main(["predict", "--model", model, "--data", str(tmp_path / "semi.csv"), "--sep",
                 ";", "--label", "y", "--out", out]) == 0
    assert main(["predict", "--model", model, "--data", str(tmp_path / "comma.csv"), "--out",
                 str(tmp_path / "q.csv")]) == 0
    assert (tmp_path / "p.csv").read_text() == (tmp_path / "q.csv").read_text()
    capsys.readouterr()
    assert main(["predict", "--model", model, "--data", str(tmp_path / "semi.csv"),
                 "--label", "y", "--out", out]) != 0
    assert "seems to be separated by ';'" in capsys.readouterr().err
    assert main(["predict", "--model", model, "--data", str(tmp_path / "semi.csv"), "--sep",
                 ";;", "--out", out]) != 0
    assert "--sep ';;': give one character" in capsys.readouterr().err


def test_cli_label_that_names_a_feature(tmp_path, capsys):
    """``hardwood predict --label a``, with ``a`` a feature of the model, took it out of the
    features and then said "X columns differ from the training columns (missing ['a'])"."""
    pytest.importorskip("pandas")
    from hardwood.cli import main

    rng = np.random.default_rng(5)
    rows = ["a,b,y"] + [f"{a:.3f},{b:.3f},{a - b:.3f}" for a, b in rng.random((100, 2))]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    model = str(tmp_path / "m.json")
    assert main(["train", "--data", str(tmp_path / "d.csv"), "--label", "y", "--rounds", "2",
                 "--out", model, "-q"]) == 0
    capsys.readouterr()
    assert main(["predict", "--model", model, "--data", str(tmp_path / "d.csv"), "--label",
                 "a", "--out", str(tmp_path / "p.csv")]) != 0
    assert "--label 'a' names one of the model's features" in capsys.readouterr().err


def _binary_data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 5)), 1)  # < 256 values a feature: XGBoost's bins
    y = (X[:, 0] + rng.normal(size=n) > 1.2).astype(float)
    return X, y, rng.uniform(0.5, 2.0, n)


@pytest.mark.parametrize("spw", [3.0, 0.4])
def test_scale_pos_weight_trains_the_peers_models(spw):
    """``scale_pos_weight`` was refused, with advice (weight the positive rows) that gave
    another model than XGBoost's: XGBoost's base score takes the scale (one Newton step from
    margin 0), LightGBM's does not. Under each library's objective name hardwood now trains
    that library's model."""
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    X, y, w = _binary_data()
    params = {"scale_pos_weight": spw, "max_depth": 3, "learning_rate": 0.3}
    ours = hw.train(dict(params, objective="binary:logistic"), hw.Dataset(X, y, weight=w), 8)
    theirs = xgb.train(dict(params, objective="binary:logistic", tree_method="hist",
                            max_bin=256), xgb.DMatrix(X, y, weight=w), 8)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(xgb.DMatrix(X)), atol=1e-6)
    lgb_params = {"objective": "binary", "scale_pos_weight": spw, "num_leaves": 4,
                  "max_depth": 2, "learning_rate": 0.3, "lambda_l2": 1.0,
                  "min_sum_hessian_in_leaf": 1e-3, "min_data_in_leaf": 1}
    ours = hw.train(lgb_params, hw.Dataset(X, y, weight=w), 8)
    theirs = lgb.train(dict(lgb_params, min_data_in_bin=1, verbose=-1),
                       lgb.Dataset(X, y, weight=w), 8)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-6)
    assert abs(ours.base_score[0] - np.log(np.average(y, weights=w)
                                           / (1 - np.average(y, weights=w)))) < 1e-12


def test_is_unbalance_and_scale_pos_weight_checks():
    """LightGBM's ``is_unbalance`` weighs the smaller class by the count ratio (it was an
    unknown parameter); given with ``scale_pos_weight``, or either on an objective without
    classes, is an error."""
    lgb = pytest.importorskip("lightgbm")
    X, y, w = _binary_data(seed=1)
    params = {"objective": "binary", "is_unbalance": True, "num_leaves": 4, "max_depth": 2,
              "learning_rate": 0.3, "lambda_l2": 1.0, "min_sum_hessian_in_leaf": 1e-3,
              "min_data_in_leaf": 1}
    ours = hw.train(params, hw.Dataset(X, y, weight=w), 8)
    theirs = lgb.train(dict(params, min_data_in_bin=1, verbose=-1),
                       lgb.Dataset(X, y, weight=w), 8)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-6)
    ds = hw.Dataset(X, y)
    with pytest.raises(ValueError, match="not both"):
        hw.train({"objective": "binary", "is_unbalance": True, "scale_pos_weight": 2}, ds, 1)
    with pytest.raises(ValueError, match="'reg:squarederror' has no positive class"):
        hw.train({"scale_pos_weight": 2}, ds, 1)
    with pytest.raises(ValueError, match="'multi:softprob' has no positive class"):
        hw.GBDTClassifier(n_estimators=2, scale_pos_weight=2).fit(
            X, np.digitize(X[:, 0], [-0.5, 0.5]))
    clf = hw.GBDTClassifier(n_estimators=4, max_depth=3, scale_pos_weight=3.0).fit(X, y)
    direct = hw.train({"objective": "binary:logistic", "scale_pos_weight": 3.0, "max_depth": 3},
                      ds, 4)
    np.testing.assert_array_equal(clf.predict_proba(X)[:, 1], direct.predict(X))


@pytest.mark.parametrize("fraction, xgboost, lightgbm", [(0.25, 2, 3), (0.75, 7, 8),
                                                         (0.95, 9, 10), (0.04, 1, 1)])
def test_feature_fraction_counts_features_as_lightgbm(fraction, xgboost, lightgbm):
    """LightGBM's ``feature_fraction`` was XGBoost's ``colsample_bytree``, which rounds the
    count down: 0.25 of 10 features kept 2 where LightGBM keeps 3 (it rounds to nearest)."""
    from hardwood.train.grower import features_drawn

    assert features_drawn(fraction, 10, "down") == xgboost
    assert features_drawn(fraction, 10, "nearest") == lightgbm
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 10))
    ds = hw.Dataset(X, X @ rng.normal(size=10))
    for name, count in [("colsample_bytree", xgboost), ("feature_fraction", lightgbm)]:
        model = hw.train({name: fraction, "max_depth": 6, "min_child_weight": 0}, ds, 30)
        used = [set(t.feature[t.feature >= 0].tolist()) for t in model.trees]
        assert max(len(u) for u in used) == count, name


def test_each_class_tree_draws_its_own_features():
    """With several classes the column sample was drawn once a round, shared by the round's
    class trees (20 of 20 rounds alike); XGBoost and LightGBM draw one per tree."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 12))
    y = np.digitize(X[:, :6].sum(axis=1), [-1.0, 1.0]).astype(float)
    model = hw.train({"objective": "multi:softprob", "num_class": 3, "colsample_bytree": 0.34,
                      "max_depth": 4, "min_child_weight": 0}, hw.Dataset(X, y), 10)
    used = [frozenset(t.feature[t.feature >= 0].tolist()) for t in model.trees]
    rounds = [used[3 * r:3 * r + 3] for r in range(10)]
    assert sum(len(set(r)) == 1 for r in rounds) < 5


def test_after_training_may_return_another_model():
    """What a callback's ``after_training`` returned was dropped (a callback trimming the
    model to 3 rounds still gave 10), where XGBoost returns it; ``before_training``
    returning another model is an error, not a silent no-op."""
    X, y, _ = _binary_data(n=300)
    ds = hw.Dataset(X, y)

    class Trim(hw.TrainingCallback):
        def after_training(self, model):
            return model[:3]

    class Nothing(hw.TrainingCallback):
        def after_training(self, model):
            pass

    model = hw.train({"objective": "binary:logistic"}, ds, 10, callbacks=[Nothing(), Trim()])
    assert len(model.trees) == 3
    np.testing.assert_array_equal(model.predict(X),
                                  hw.train({"objective": "binary:logistic"}, ds, 3).predict(X))

    class Swap(hw.TrainingCallback):
        def before_training(self, model):
            return hw.train({}, ds, 1)

    with pytest.raises(ValueError, match="before_training returned another model"):
        hw.train({"objective": "binary:logistic"}, ds, 2, callbacks=[Swap()])


def test_gpu_hist_is_not_cpu_training_in_silence():
    """``tree_method='gpu_hist'`` trained on the CPU without a word: a user porting XGBoost
    GPU code believed it ran on a GPU. XGBoost 3 refuses it; so does hardwood, naming
    ``device='cuda'``."""
    X = np.random.default_rng(6).normal(size=(100, 3))
    with pytest.raises(ValueError, match="device='cuda'"):
        hw.train({"tree_method": "gpu_hist"}, hw.Dataset(X, X[:, 0]), 1)


def test_imported_scikit_learn_trees_carry_their_gains():
    """Imported scikit-learn trees had every split's gain 0: their gain importances were all
    zero without a warning, and ``plot_importance`` and the report failed ("the model's
    trees have no splits"). A split's gain is now its weighted impurity decrease, so the
    importances are scikit-learn's ``feature_importances_``."""
    pytest.importorskip("sklearn")
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestRegressor
    from sklearn.tree import DecisionTreeRegressor

    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 4))
    y = 2 * X[:, 0] + X[:, 1] + 0.1 * rng.normal(size=400)
    for est, tol in [(DecisionTreeRegressor(max_depth=4).fit(X, y), 1e-12),
                     (GradientBoostingClassifier(n_estimators=5).fit(X, y > 0), 1e-12),
                     (RandomForestRegressor(5, max_depth=4, random_state=0).fit(X, y), 0.02)]:
        gains = np.asarray(hw.import_model(est).feature_importances("total_gain"), float)
        np.testing.assert_allclose(gains / gains.sum(), est.feature_importances_, atol=tol)


def test_plot_tree_of_a_forest_draws_the_trees_own_leaves():
    """``plot_tree`` of a random forest drew each leaf divided by the tree count (-0.134 for
    a leaf of -1.34 in a forest of 10), as the forest stores it; scikit-learn and LightGBM
    draw the tree's own value."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import hardwood.plot as hwplot

    rng = np.random.default_rng(8)
    X = np.round(rng.normal(size=(600, 4)), 1)
    forest = hw.RandomForestRegressor(n_estimators=10, max_depth=2, random_state=0).fit(
        X, X[:, 0] + X[:, 1] * X[:, 2])
    ax = hwplot.plot_tree(forest, 0, precision=4)
    drawn = sorted(float(t.get_text().split()[1]) for t in ax.texts
                   if t.get_text().startswith("leaf"))
    tree = forest.estimators_[0]
    own = np.sort(np.asarray(tree.value)[tree.feature < 0].ravel())
    np.testing.assert_allclose(drawn, own, rtol=1e-3)  # (4 significant digits drawn)
    assert hw.train({}, hw.Dataset(X, X[:, 0]), 1).leaf_value_scale() == 1.0


def test_report_on_many_sparse_rows_and_on_no_rows():
    """``build_report`` (and ``hardwood report --data file.svm``) failed with an IndexError
    on a sparse matrix of more rows than the SHAP sample; on 0 rows it said "X has no rows
    to explain", or raised a ZeroDivisionError from the metrics with labels."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    sp = pytest.importorskip("scipy.sparse")
    from hardwood.report import build_report

    rng = np.random.default_rng(9)
    X = np.round(rng.normal(size=(300, 4)), 1)
    X[np.abs(X) < 0.5] = 0
    y = X[:, 0] + X[:, 1]
    model = hw.train({"max_depth": 3}, hw.Dataset(X, y), 3)
    assert "SHAP values of 100 rows" in build_report(model, sp.csr_matrix(X), y, shap_rows=100)
    for args in [(X[:0],), (X[:0], y[:0])]:
        with pytest.raises(ValueError, match="X has no rows"):
            build_report(model, *args)


def test_imported_xgboost_lossguide_keeps_its_leaf_ids_and_vector_leaves_are_named():
    """An imported XGBoost lossguide tree was renumbered breadth first, so ``output='leaf'``
    gave other ids than XGBoost's ``pred_leaf`` for the same leaves ([24, 24, 7, 32, 42]
    against [18, 18, 7, 26, 40]); and a ``multi_output_tree`` softmax model was refused as
    a ``num_parallel_tree`` that "does not divide" its trees."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(10)
    X = rng.normal(size=(600, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) ** 2 + np.nan_to_num(X[:, 1])
    bst = xgb.train({"tree_method": "hist", "grow_policy": "lossguide", "max_leaves": 12,
                     "max_depth": 0}, xgb.DMatrix(X, y), 4)
    model = hw.import_model(bst)
    theirs = bst.predict(xgb.DMatrix(X), pred_leaf=True)
    np.testing.assert_array_equal(model.predict(X, output="leaf"), theirs)
    for runtime in ["naive", "struct", "vpred"]:  # (pred, codegen: same, by hand)
        compiled = hw.compile(model, runtime=runtime)
        np.testing.assert_array_equal(compiled.predict(X, output="leaf"), theirs)
        np.testing.assert_allclose(compiled.predict(X), bst.predict(xgb.DMatrix(X)), atol=1e-5)
    vector = xgb.train({"tree_method": "hist", "multi_strategy": "multi_output_tree",
                        "objective": "multi:softprob", "num_class": 3},
                       xgb.DMatrix(X, np.digitize(y, [0.5, 1.5])), 2)
    with pytest.raises(ValueError, match="vector-leaf trees"):
        hw.import_model(vector)


def test_verbose_eval_prints_the_last_round_and_no_empty_lines(capsys):
    """``verbose_eval=5`` left out the last round, which XGBoost prints; with no set to
    score, ``verbose_eval=True`` printed an empty ``[0]`` line a round."""
    X, y, _ = _binary_data(n=300)
    ds = hw.Dataset(X, y)
    hw.train({"objective": "binary:logistic"}, ds, 12, valid_sets=[ds], verbose_eval=5)
    rounds = [line.split("]")[0] + "]" for line in capsys.readouterr().out.splitlines()]
    assert rounds == ["[0]", "[5]", "[10]", "[11]"]
    hw.train({"objective": "binary:logistic"}, ds, 3, verbose_eval=True)
    assert capsys.readouterr().out == ""


def test_import_format_that_names_another_library(tmp_path):
    """``import_model(lightgbm_booster, format='sklearn')`` said the Booster "is not
    fitted", and a LightGBM text file under ``format='xgboost'`` had an "unknown UBJ marker
    b't'"; both now say which library the model is from."""
    lgb = pytest.importorskip("lightgbm")
    X = np.random.default_rng(11).normal(size=(200, 3))
    bst = lgb.train({"verbose": -1, "num_leaves": 4}, lgb.Dataset(X, X[:, 0]), 2)
    with pytest.raises(ValueError, match="this is a LightGBM model.*format='lightgbm'"):
        hw.import_model(bst, format="sklearn")
    bst.save_model(str(tmp_path / "m.txt"))
    with pytest.raises(ValueError, match="this is a LightGBM model"):
        hw.import_model(str(tmp_path / "m.txt"), format="xgboost")
    np.testing.assert_allclose(hw.import_model(str(tmp_path / "m.txt"), format="lightgbm")
                               .predict(X), bst.predict(X), atol=1e-12)


def test_frames_read_in_blocks_as_column_by_column():
    """A frame's numeric columns are read in (at most) two blocks, not a column at a time
    through ``df.iloc`` (0.07 ms a column: a 1-row frame of 100 columns took 7 ms to
    predict). The values, the matrix's dtype and its independence from the frame are those
    of the column-by-column read."""
    pd = pytest.importorskip("pandas")
    from hardwood.data.convert import to_float_matrix

    rng = np.random.default_rng(12)
    n = 50
    big = 2**40 + rng.integers(0, 1000, n)
    df = pd.DataFrame({"f32": rng.normal(size=n).astype(np.float32),
                       "i8": rng.integers(-100, 100, n).astype(np.int8),
                       "u16": rng.integers(0, 60000, n).astype(np.uint16),
                       "flag": rng.random(n) < 0.5,
                       "nullable": pd.array(np.where(rng.random(n) < 0.2, None,
                                                     rng.integers(0, 9, n)), dtype="Int64"),
                       "cat": pd.Categorical(rng.choice(["a", "b"], n))})
    narrow, info = to_float_matrix(df)
    assert narrow.dtype == np.float32 and narrow.flags.c_contiguous
    expected = np.column_stack([df[c].to_numpy(dtype=np.float64, na_value=np.nan)
                                for c in ["f32", "i8", "u16", "flag", "nullable"]])
    np.testing.assert_array_equal(narrow[:, :5], expected)
    np.testing.assert_array_equal(narrow[:, 5], df["cat"].cat.codes)
    wide = df.assign(big=big, f64=rng.normal(size=n))
    mat, _ = to_float_matrix(wide)
    assert mat.dtype == np.float64
    np.testing.assert_array_equal(mat[:, 6], big.astype(np.float64))
    np.testing.assert_array_equal(mat[:, 7], wide["f64"].to_numpy())
    only64 = pd.DataFrame(rng.normal(size=(1, 4)), columns=list("abcd"))
    one, _ = to_float_matrix(only64)
    assert one.dtype == np.float64 and not np.shares_memory(one, only64.to_numpy())
    model = hw.train({"max_depth": 2}, hw.Dataset(df, rng.normal(size=n)), 2)
    np.testing.assert_array_equal(model.predict(df.iloc[:1]), model.predict(df)[:1])
