"""Reports of ranking models, XGBoost's training keywords and forest probabilities, tried as a
new user would (session 18): each test names what hardwood did before."""
import os
import re

import numpy as np
import pytest

import hardwood as hw
from hardwood.cli import main


def _ranking_data(n_queries=30, size=20, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * size
    X = rng.normal(size=(n, 5))
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=n) + 1), 0, 3)
    return X, y, np.full(n_queries, size)


def _table_value(page, metric):
    m = re.search(rf"{re.escape(metric)}</td><td class=num>([0-9.eE+-]+)<", page)
    return None if m is None else float(m.group(1))


def test_report_scores_a_ranking_model_over_its_queries(tmp_path, capsys):
    """``write_report`` had no ``group``/``qid``: a ranking model's report showed no metric,
    and its note blamed the labels ("none of objective rank:ndcg applies to these labels").
    ``hardwood report`` had no ``--group``/``--qid-column`` and ignored a file's qid:."""
    pytest.importorskip("matplotlib")
    from hardwood import report
    from hardwood.ranking import ranking_metric

    X, y, group = _ranking_data()
    model = hw.train({"objective": "rank:ndcg", "max_depth": 3},
                     hw.Dataset(X, y, group=group), num_boost_round=5)
    ptr = np.concatenate([[0], np.cumsum(group)])
    p = model.predict(X)
    page = report.build_report(model, X, y, group=group)
    for metric in ("ndcg@1", "ndcg@3", "ndcg@10", "map@10"):
        assert _table_value(page, metric) == pytest.approx(ranking_metric(metric, y, p, ptr),
                                                           abs=1e-6)
    assert "in 30 queries" in page
    qid = np.repeat(np.arange(30), 20)
    assert _table_value(report.build_report(model, X, y, qid=qid), "ndcg@10") == \
        _table_value(page, "ndcg@10")
    bare = report.build_report(model, X, y)
    assert "a ranking model is scored over queries" in bare and "ndcg@1<" not in bare
    with pytest.raises(ValueError, match="add up to 10 rows, but the data has 600"):
        report.build_report(model, X, y, group=[10])
    regression = hw.train({"objective": "reg:squarederror"}, hw.Dataset(X, y), 2)
    with pytest.raises(ValueError, match="ranking model only"):
        report.build_report(regression, X, y, group=group)

    # the command line: the file's own qid:, or --group
    model_file, data = str(tmp_path / "rank.json"), str(tmp_path / "rank.libsvm")
    bare = str(tmp_path / "bare.libsvm")  # no qid:
    model.save(model_file)
    with open(data, "w") as fh, open(bare, "w") as fb:
        for i in range(X.shape[0]):
            feats = " ".join(f"{j}:{float(X[i, j])!r}" for j in range(X.shape[1]))
            fh.write(f"{int(y[i])} qid:{i // 20} {feats}\n")
            fb.write(f"{int(y[i])} {feats}\n")
    out = str(tmp_path / "r.html")
    assert main(["report", "-m", model_file, "--data", data, "--out", out]) == 0
    with open(out, encoding="utf-8") as fh:
        assert _table_value(fh.read(), "ndcg@10") == _table_value(page, "ndcg@10")
    sizes = str(tmp_path / "sizes.txt")
    with open(sizes, "w") as fh:
        fh.write("300\n300\n")
    assert main(["report", "-m", model_file, "--data", bare, "--group", sizes,
                 "--out", out]) == 0
    two = np.array([0, 300, 600])
    with open(out, encoding="utf-8") as fh:
        assert _table_value(fh.read(), "ndcg@10") == pytest.approx(
            ranking_metric("ndcg@10", y, p, two), abs=1e-6)
    capsys.readouterr()
    with open(sizes, "w") as fh:
        fh.write("300\n")
    assert main(["report", "-m", model_file, "--data", bare, "--group", sizes,
                 "--out", out]) != 0
    assert "add up to 300 rows, but the data has 600" in capsys.readouterr().err


def test_train_takes_xgboosts_evals_evals_result_and_xgb_model():
    """``hardwood.train(..., evals=[(dtrain, 'train'), (dvalid, 'eval')])``, XGBoost's
    keywords, was a bare TypeError ("unexpected keyword argument 'evals'")."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 4))
    y = (X[:, 0] + rng.normal(size=1200) > 0).astype(float)
    dtrain = hw.Dataset(X[:900], y[:900])
    dvalid = hw.Dataset(X[900:], y[900:], reference=dtrain)
    params = {"objective": "binary:logistic", "eval_metric": "logloss", "max_depth": 3}
    result = {"stale": 1}
    model = hw.train(params, dtrain, 6, evals=[(dtrain, "train"), (dvalid, "eval")],
                     evals_result=result)
    same = hw.train(params, dtrain, 6, valid_sets=[dtrain, dvalid],
                    valid_names=["train", "eval"])
    assert result == same.evals_result == model.evals_result
    assert list(result) == ["train", "eval"] and len(result["eval"]["logloss"]) == 6
    more = hw.train(params, dtrain, 3, xgb_model=model)
    assert more.num_trees == 9
    np.testing.assert_array_equal(more[:6].predict(X), model.predict(X))
    for bad in ([dvalid], [(dvalid, 1)], [(dvalid,)]):
        with pytest.raises(TypeError, match=r"list of \(Dataset, name\) pairs"):
            hw.train(params, dtrain, 2, evals=bad)
    with pytest.raises(ValueError, match="validation sets once"):
        hw.train(params, dtrain, 2, evals=[(dvalid, "v")], valid_sets=[dvalid])
    with pytest.raises(ValueError, match="once: init_model= or xgb_model="):
        hw.train(params, dtrain, 2, init_model=model, xgb_model=model)
    with pytest.raises(TypeError, match="evals_result must be a dict"):
        hw.train(params, dtrain, 2, evals_result=[])


def test_forest_model_probabilities_are_clipped_in_every_runtime():
    """A forest's probabilities are sums of fraction / n_estimators: the estimators clipped
    them, but its Model (``forest_.to_model()``, a saved forest) and the compiled runtimes
    returned 1.0000000000000013, which scikit-learn's log_loss refuses."""
    from hardwood import RandomForestClassifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 10))
    y = np.digitize(X[:, 0] + rng.normal(0, 0.7, 3000), [-1, 0.7])
    rf = RandomForestClassifier(n_estimators=60, random_state=0).fit(X[:2000], y[:2000])
    model = rf.forest_.to_model()
    raw = model.predict(X[2000:], output="raw")
    assert raw.max() > 1.0  # the case: a rounding past 1 in the sum
    expected = np.clip(raw, 0.0, 1.0)
    np.testing.assert_array_equal(model.predict(X[2000:]), expected)
    np.testing.assert_array_equal(rf.predict_proba(X[2000:]), expected)
    top = int(np.argmax(raw.max(axis=1)))
    for runtime in ("naive", "struct", "pred", "vpred"):
        rt = hw.compile(model, runtime=runtime)
        np.testing.assert_array_equal(rt.predict(X[2000:]), expected, err_msg=runtime)
        np.testing.assert_array_equal(rt.predict(X[2000 + top:2001 + top]),
                                      expected[top:top + 1], err_msg=runtime)


def test_generated_kernels_are_renamed_when_the_hardwood_code_they_import_changes(
        monkeypatch, tmp_path):
    """Generated kernels were named by the hash of their text alone, and Numba checks only
    a kernel file's own stamp: after an upgrade that changed ``transform_inplace``, the
    one-row ``pred`` kernel (same text) kept the old transform's machine code from the
    cache folder, and returned unclipped forest probabilities."""
    from hardwood.predict import _cache

    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_cache, "_DIRS", {})
    monkeypatch.setattr(_cache, "_LOADED", {})
    source = ("from hardwood.predict.struct import cat_left\n"
              f"TOKEN = {tmp_path.name!r}\n")
    stamp = _cache.library_stamp(source)
    # the imported module, and the hardwood modules it imports in turn
    assert [line.split(":")[0] for line in stamp.splitlines()] == [
        "hardwood.predict.struct", "hardwood.predict.treeshape"]
    first = _cache.load_source("stamp", source)
    assert first.TOKEN == tmp_path.name
    stamps = dict(_cache._STAMPS)
    name, imports = stamps["hardwood.predict.treeshape"]
    monkeypatch.setitem(_cache._STAMPS, "hardwood.predict.treeshape",
                        (name + "-upgraded", imports))
    second = _cache.load_source("stamp", source)
    assert second.__name__ != first.__name__  # a new file: no stale machine code
    assert os.path.isfile(second.__file__) and os.path.isfile(first.__file__)


def test_query_sizes_that_overflow_are_refused_not_a_segfault():
    """``group=[2**63 - 1, 2**63 - 1, 102]`` on 100 rows summed to 100 in int64 and passed;
    training then read past its arrays (SIGSEGV). ``[inf, 50]`` added up to a nonsense
    total."""
    from hardwood.ranking import group_ptr

    X = np.random.default_rng(0).normal(size=(100, 3))
    y = np.random.default_rng(1).integers(0, 3, 100).astype(float)
    for group in ([2**63 - 1, 2**63 - 1, 102], [2**62] * 4 + [100],
                  np.array([2**64 - 1], dtype=np.uint64)):
        with pytest.raises(ValueError, match="holds a query of .* rows, but the data has 100"):
            hw.Dataset(X, y, group=group)
        with pytest.raises(ValueError, match="holds a query of"):
            hw.GBDTRanker(n_estimators=2).fit(X, y, group=group)
    for group in ([np.inf, 50], [np.nan, 100], [50.5, 49.5]):
        with pytest.raises(ValueError, match="not a positive integer"):
            group_ptr(100, group)
    np.testing.assert_array_equal(group_ptr(100, [60.0, 40.0]), [0, 60, 100])


def test_missing_left_split_takes_the_highest_tied_threshold_as_xgboost():
    """In a node whose rows leave bins empty, every threshold in the gap has the same gain.
    For a split that sends missing values left, hardwood took the lowest of them and XGBoost
    (scanning backwards) the highest: training rows went alike, but new rows in the gap
    went the other way (5.0 against XGBoost's 0.0)."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    n = 2000
    f0 = rng.integers(0, 2, n).astype(float)
    f1 = rng.integers(0, 10, n).astype(float)
    high = f0 == 1
    gap = high & (f1 >= 3) & (f1 <= 6)  # rows of f0 == 1 hold no 3..6
    f1[gap] = rng.choice([0, 1, 2, 7, 8, 9], size=int(gap.sum()))
    f1[high & (rng.random(n) < 0.2)] = np.nan  # missing values behave as the low values
    y = np.where(high, np.where(np.isnan(f1) | (f1 <= 2), 0.0, 5.0),
                 -20.0 + 0.01 * np.nan_to_num(f1))
    X = np.column_stack([f0, f1])
    params = {"objective": "reg:squarederror", "max_depth": 2, "learning_rate": 1.0,
              "reg_lambda": 0.0, "base_score": 0.0}
    ours = hw.train(params, hw.Dataset(X, y), 1)
    theirs = xgb.train({**params, "tree_method": "hist"}, xgb.DMatrix(X, y), 1)
    query = np.array([[1.0, 3.0], [1.0, 4.0], [1.0, 6.0], [1.0, np.nan], [1.0, 7.0]])
    np.testing.assert_allclose(ours.predict(query), theirs.predict(xgb.DMatrix(query)),
                               atol=1e-5)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(xgb.DMatrix(X)), atol=1e-5)


def test_weighted_ndcg_counts_queries_without_a_relevant_row_as_the_peers():
    """A weighted query without a relevant row scored NDCG 1 times its weight; XGBoost and
    LightGBM add 1 unweighted (and still divide by every weight): ndcg@3 0.647955 where
    both peers gave 0.607880."""
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    from hardwood.ranking import ranking_metric

    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 25, size=60)
    n = int(sizes.sum())
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    y = (rng.integers(0, 4, size=n) > 1).astype(float)
    p = rng.normal(size=n).round(1)  # ties too
    X = rng.normal(size=(n, 3))
    qw = rng.uniform(0.1, 5, size=60)
    w = np.repeat(qw, sizes)
    assert sum(y[a:b].max() == 0 for a, b in zip(ptr[:-1], ptr[1:])) >= 2  # the case
    for name in ("ndcg@3", "ndcg", "map@5"):
        d = xgb.DMatrix(X, y, base_margin=p, weight=qw)
        d.set_group(sizes)
        theirs = float(xgb.train({"objective": "rank:ndcg", "eval_metric": name}, d, 0)
                       .eval(d).split(":")[-1])
        assert ranking_metric(name, y, p, ptr, w=w) == pytest.approx(theirs, abs=2e-6), name
    res = {}
    data = lgb.Dataset(X, y, group=sizes, init_score=p, weight=w)
    lgb.train({"objective": "lambdarank", "metric": "ndcg", "eval_at": [3],
               "learning_rate": 1e-12, "min_data_in_leaf": 10**6, "verbose": -1}, data, 1,
              valid_sets=[lgb.Dataset(X, y, group=sizes, init_score=p, weight=w)],
              valid_names=["t"], callbacks=[lgb.record_evaluation(res)])
    assert ranking_metric("ndcg@3", y, p, ptr, w=w) == pytest.approx(res["t"]["ndcg@3"][0],
                                                                      abs=1e-9)


def test_validation_grades_above_the_training_grades_are_scored():
    """Training grades 0..2 and a validation set with grade 3, no label_gain given: "valid
    set 'valid_0' has label 3, beyond label_gain's 3 grades" (both peers train and score
    it: their default gains cover grades 0..30)."""
    from hardwood.ranking import ranking_metric

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(400, 4)), rng.integers(0, 3, 400).astype(float)
    Xv, yv = rng.normal(size=(200, 4)), rng.integers(0, 4, 200).astype(float)
    train = hw.Dataset(X, y, group=[20] * 20)
    model = hw.train({"objective": "rank:ndcg", "eval_metric": "ndcg@10"}, train, 3,
                     valid_sets=[hw.Dataset(Xv, yv, group=[20] * 10, reference=train)])
    expected = ranking_metric("ndcg@10", yv, model.predict(Xv), np.arange(0, 201, 20))
    assert model.evals_result["valid_0"]["ndcg@10"][-1] == pytest.approx(expected, rel=1e-12)
    ranker = hw.GBDTRanker(n_estimators=3).fit(X, y, group=[20] * 20, eval_set=[(Xv, yv)],
                                              eval_group=[[20] * 10])
    (scores,) = ranker.evals_result_["validation_0"].values()
    assert len(scores) == 3 and np.all(np.isfinite(scores))
    with pytest.raises(ValueError, match="label_gain"):  # a gain table given is the limit
        hw.train({"objective": "rank:ndcg", "label_gain": [0, 1, 3]}, train, 2,
                 valid_sets=[hw.Dataset(Xv, yv, group=[20] * 10, reference=train)])


def test_lossguide_keeps_xgboosts_depth_of_6_unless_num_leaves_brings_lightgbms():
    """``grow_policy='lossguide'`` without ``max_depth`` grew trees of depth 18 where
    XGBoost keeps its default depth of 6: predictions 0.56 apart."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(3000, 6)), 1)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=3000) > 0).astype(float)
    params = {"objective": "binary:logistic", "grow_policy": "lossguide", "max_leaves": 64}
    ours = hw.train(params, hw.Dataset(X, y), 8)
    theirs = xgb.train({**params, "tree_method": "hist"}, xgb.DMatrix(X, y), 8)
    assert ours.params["max_depth"] == 6 and max(t.depth() for t in ours.trees) == 6
    np.testing.assert_allclose(ours.predict(X), theirs.predict(xgb.DMatrix(X)), atol=1e-5)
    lightgbm = hw.train({"objective": "binary", "num_leaves": 64}, hw.Dataset(X, y), 2)
    assert lightgbm.params["max_depth"] == 0  # LightGBM's max_depth=-1
    unbounded = hw.train({**params, "max_depth": 0}, hw.Dataset(X, y), 2)
    assert max(t.depth() for t in unbounded.trees) > 6


def test_sigmoid_outside_ranking_is_refused_not_ignored():
    """LightGBM's ``sigmoid`` with ``objective='binary'`` scales its logistic (predictions
    0.045 apart at 3.0); hardwood read it for ranking only and trained slope 1 silently."""
    X = np.random.default_rng(0).normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(float)
    with pytest.raises(ValueError, match="sigmoid=3.0 is the slope of the ranking"):
        hw.train({"objective": "binary", "sigmoid": 3.0}, hw.Dataset(X, y), 2)
    hw.train({"objective": "binary", "sigmoid": 1.0}, hw.Dataset(X, y), 2)  # the default
    hw.train({"objective": "rank:ndcg", "sigmoid": 3.0}, hw.Dataset(X, y, group=[100, 100]), 2)


def test_plots_say_what_they_draw():
    """plot_tree drew an XGBoost import's split ``x < 1`` (stored as x <= 0.99999997) as
    "f0 ≤ 1": a row of 1 went left in the picture and right in the model. class_index=1.7
    or '1' drew class 1; np.int64 counts were refused while True was taken as 1;
    show_info=None and precision=-1 were bare errors; dataset_names='valid_0' was read as
    its letters."""
    pytest.importorskip("matplotlib")
    xgb = pytest.importorskip("xgboost")
    import matplotlib
    matplotlib.use("Agg")
    from hardwood import plot

    X = np.repeat([[0.0], [1.0], [2.0]], 50, axis=0)
    y = np.r_[np.zeros(50), np.ones(50), np.ones(50)] * 10
    model = hw.import_model(xgb.train({"max_depth": 1, "base_score": 0},
                                      xgb.DMatrix(X, y), 1))
    labels = [t.get_text() for t in plot.plot_tree(model, 0).texts]
    assert "f0 < 1" in labels and model.predict(np.array([[1.0]]))[0] > 1  # right: 'no'
    own = hw.train({"max_depth": 1, "base_score": 0}, hw.Dataset(X, y), 1)
    assert "f0 ≤ 0.5" in [t.get_text() for t in plot.plot_tree(own, 0, show_info=None).texts]
    with pytest.raises(ValueError, match="precision must be an integer >= 0"):
        plot.plot_tree(own, 0, precision=-1)

    rng = np.random.default_rng(0)
    Xm = rng.normal(size=(300, 4))
    multi = hw.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2},
                     hw.Dataset(Xm, rng.integers(0, 3, 300).astype(float)), 2)
    for bad in (1.7, "1", True):
        with pytest.raises(ValueError, match="class_index"):
            plot.plot_shap_summary(multi, Xm, class_index=bad)
    plot.plot_shap_summary(multi, Xm, class_index=np.int64(1), max_display=np.int64(2))
    plot.plot_importance(multi, max_num_features=np.int64(2))
    with pytest.raises(ValueError, match="max_num_features must be a positive integer"):
        plot.plot_importance(multi, max_num_features=True)
    curves = {"valid_0": {"rmse": [3.0, 2.0]}, "train": {"rmse": [2.5, 1.0]}}
    ax = plot.plot_metric(curves, dataset_names="valid_0")
    assert [line.get_label() for line in ax.get_lines()] == ["valid_0"]
    with pytest.raises(TypeError, match="maps each data set to its metrics' curves"):
        plot.plot_metric({"valid_0": [1, 2, 3]})


def test_imported_xgboost_models_read_absent_sparse_entries_as_missing(tmp_path):
    """XGBoost reads the entries a CSR matrix leaves out as missing values; an imported
    XGBoost model read them as zeros, 1.35 off XGBoost's predictions on 1898 of 3000 rows.
    hardwood's own models (and LightGBM's, scikit-learn's) keep reading them as zeros."""
    xgb = pytest.importorskip("xgboost")
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 10))
    X[rng.random(X.shape) < 0.6] = 0.0
    y = (X[:, 0] > 0) + (X[:, 1] == 0) * 1.0 + rng.normal(scale=0.1, size=3000)
    Xs = sp.csr_matrix(X)
    booster = xgb.train({"max_depth": 4, "tree_method": "hist"}, xgb.DMatrix(Xs, y), 10)
    theirs = booster.predict(xgb.DMatrix(Xs))
    model = hw.import_model(booster)
    np.testing.assert_allclose(model.predict(Xs), theirs, atol=1e-5)
    np.testing.assert_allclose(hw.compile(model, runtime="struct").predict(Xs), theirs,
                               atol=1e-5)
    path = str(tmp_path / "m.json")
    model.save(path)
    np.testing.assert_allclose(hw.load(path).predict(Xs), theirs, atol=1e-5)
    row = X[:1].copy()  # a stored zero is a value, not a missing one, in both
    cols = np.flatnonzero(row[0])
    stored = sp.csr_matrix((np.r_[row[0, cols], 0.0], (np.zeros(cols.size + 1, int),
                                                       np.r_[cols, 1])), shape=row.shape)
    expected = np.where(row == 0, np.nan, row)
    expected[0, 1] = 0.0
    np.testing.assert_array_equal(model.predict(stored), model.predict(expected))
    assert not np.allclose(model.predict(Xs), model.predict(X))  # dense zeros are values
    own = hw.train({"max_depth": 4}, hw.Dataset(Xs, y), 5)
    np.testing.assert_array_equal(own.predict(Xs), own.predict(X))  # absent = 0 here


def test_training_names_what_it_cannot_take_from_the_peers():
    """hw.EarlyStopping on a set or metric that is not evaluated raised a bare KeyError from
    the loop ('validation_0'); LightGBM's callbacks failed inside it ("takes 2 positional
    arguments but 4 were given"); min_data_in_leaf (a row count) suggested
    min_sum_hessian_in_leaf (it is LightGBM's row count since session 24; scikit-learn's
    min_samples_leaf points to it), num_iterations suggested num_threads, and LightGBM's
    subsample_freq (bagging_freq) was refused."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(float)
    train = hw.Dataset(X[:300], y[:300])
    valid = hw.Dataset(X[300:], y[300:], reference=train)
    params = {"objective": "binary:logistic", "max_depth": 2}
    cases = [(hw.EarlyStopping(3, "logloss", "validation_0"), [valid],
              r"data set 'validation_0', but training evaluates \['valid_0'\]"),
             (hw.EarlyStopping(3, "auc", "valid_0"), [valid],
              r"metric 'auc', but training scores \['logloss'\]"),
             (hw.EarlyStopping(3, "logloss", "valid_0"), [], "none")]
    for stop, sets, message in cases:
        with pytest.raises(ValueError, match=message):
            hw.train(params, train, 5, valid_sets=sets, callbacks=[stop])
    for foreign in (lgb.early_stopping(3), lgb.log_evaluation(1), lgb.record_evaluation({})):
        with pytest.raises(TypeError, match="LightGBM's, which hardwood cannot call"):
            hw.train(params, train, 2, valid_sets=[valid], callbacks=[foreign])
    for name, message in (("min_samples_leaf", "hardwood's min_data_in_leaf"),
                          ("num_iterations", "num_boost_round")):
        with pytest.raises(ValueError, match=message):
            hw.train({**params, name: 20}, train, 2)
    for name in ("min_data_in_leaf", "min_child_samples"):  # taken since session 24
        m = hw.train({**params, name: 20}, train, 2)
        assert min(int(t.count[t.feature < 0].min()) for t in m.trees) >= 20
    lightgbm_style = hw.train({**params, "subsample": 0.5, "subsample_freq": 1}, train, 3)
    np.testing.assert_array_equal(lightgbm_style.predict(X),
                                  hw.train({**params, "subsample": 0.5}, train, 3).predict(X))
    no_bagging = hw.train({**params, "subsample": 0.5, "subsample_freq": 0}, train, 3)
    np.testing.assert_array_equal(no_bagging.predict(X), hw.train(params, train, 3).predict(X))


def test_the_booster_performance_model_checks_its_inputs():
    """``hardwood.accel``: rows=-100 and trees=-3 gave speedups, rows=0 a bare
    ZeroDivisionError, NaN a table of NaN; ideal_cycles_per_op=0 and host_split_seconds=-1
    or inf were taken (negative step times); GOSS and LightGBM's bagging were traced until a
    bare AttributeError ('TracePages' has no 'gather')."""
    from hardwood.accel import model as M
    from hardwood.accel.trace import record_trace

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    y = (X[:, 0] > 0).astype(float)
    ds = hw.Dataset(X, y)
    trace = record_trace(ds, {"objective": "binary:logistic", "max_depth": 3}, 2)
    assert M.simulate(trace, rows=1000, trees=10)["speedup"]["booster"] > 0
    for kw in ({"rows": -100}, {"rows": 0}, {"rows": 2.5}, {"rows": float("nan")},
               {"trees": -3}, {"trees": 0}, {"trees": True}):
        with pytest.raises(ValueError, match="must be a positive integer"):
            M.simulate(trace, **kw)
    for kw in ({"ideal_cycles_per_op": 0}, {"ideal_cycles_per_op": -8},
               {"ideal_cycles_per_op": float("inf")}, {"host_split_seconds": -1},
               {"host_split_seconds": float("inf")}, {"host_split_seconds": float("nan")}):
        with pytest.raises(ValueError, match="must be a finite number"):
            M.Config(**kw)
    for rounds in (0, -2, 1.5):
        with pytest.raises(ValueError, match="rounds must be a positive integer"):
            record_trace(ds, {}, rounds)
    for params in ({"sampling_method": "goss"}, {"bagging_fraction": 0.5, "bagging_freq": 1},
                   {"data_sample_strategy": "goss"}):
        with pytest.raises(ValueError, match="simulate traces unsampled training"):
            record_trace(ds, params, 8)


def test_libsvm_query_ids_are_read_or_refused_never_dropped(tmp_path, capsys):
    """``qid:1.5`` or ``qid:abc`` were dropped (then "no qid:"), a qid past int64 was a bare
    OverflowError, a qid after a feature an error without its line; ``--group FILE`` replaced
    a file's own qid: silently (60 queries trained as 2), where a disagreeing
    ``<data>.query`` was an error."""
    from hardwood.data.readers import libsvm_qids

    path = tmp_path / "t.svm"
    for token, message in (("qid:1.5", "is not a query id"), ("qid:abc", "is not a query id"),
                           ("qid:99999999999999999999", "is not a query id")):
        path.write_text(f"1 {token} 0:1 1:2\n0 {token} 0:2 1:1\n")
        with pytest.raises(ValueError, match=f"line 1: '{re.escape(token)}' {message}"):
            libsvm_qids(str(path))
    path.write_text("1 qid:-3 0:1 1:2\n0 qid:-3 0:2 1:1\n1 qid:4 0:1 1:1\n")
    np.testing.assert_array_equal(libsvm_qids(str(path)), [-3, -3, 4])
    path.write_text("1 0:1 qid:1 1:2\n0 qid:1 0:2 1:1\n")
    assert main(["train", "--data", str(path), "--format", "libsvm", "-p",
                 "objective=rank:ndcg", "--rounds", "2", "-q",
                 "--out", str(tmp_path / "m.json")]) != 0
    assert "line 1: 'qid:1' comes after a feature" in capsys.readouterr().err

    X, y, _ = _ranking_data(n_queries=6, size=10)
    with open(path, "w") as fh:
        for i in range(X.shape[0]):
            feats = " ".join(f"{j}:{float(X[i, j])!r}" for j in range(X.shape[1]))
            fh.write(f"{int(y[i])} qid:{i // 10} {feats}\n")
    sizes = tmp_path / "sizes.txt"
    sizes.write_text("30\n30\n")
    assert main(["train", "--data", str(path), "--format", "libsvm", "--group", str(sizes),
                 "-p", "objective=rank:ndcg", "--rounds", "2", "-q",
                 "--out", str(tmp_path / "m.json")]) != 0
    assert "disagree" in capsys.readouterr().err
    sizes.write_text("10\n" * 6)  # the same queries: taken
    assert main(["train", "--data", str(path), "--format", "libsvm", "--group", str(sizes),
                 "-p", "objective=rank:ndcg", "--rounds", "2", "-q",
                 "--out", str(tmp_path / "m.json")]) == 0


def test_ranking_out_of_core_and_huge_truncation_say_what_they_do(tmp_path):
    """``Dataset.from_files`` of a LibSVM file with qid: read no queries, and ranking then
    advised group=/qid=, which from_files does not take; lambdarank_truncation_level=2**70
    was a bare OverflowError."""
    X, y, group = _ranking_data(n_queries=6, size=10)
    path = tmp_path / "r.svm"
    with open(path, "w") as fh:
        for i in range(X.shape[0]):
            feats = " ".join(f"{j}:{float(X[i, j])!r}" for j in range(X.shape[1]))
            fh.write(f"{int(y[i])} qid:{i // 10} {feats}\n")
    pages = hw.Dataset.from_files(str(path), None, cache_dir=str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="rank:ndcg out of core is not supported yet"):
        hw.train({"objective": "rank:ndcg"}, pages, 2)
    data = hw.Dataset(X, y, group=group)
    huge = hw.train({"objective": "rank:ndcg", "lambdarank_truncation_level": 2**70}, data, 3)
    whole = hw.train({"objective": "rank:ndcg", "lambdarank_truncation_level": 10}, data, 3)
    np.testing.assert_array_equal(huge.predict(X), whole.predict(X))  # queries of 10 rows


def test_report_of_a_classifier_scores_its_own_labels():
    """``write_report(GBDTClassifier().fit(X, y), ..., X, y)`` with labels {1, 2} or
    'no'/'yes' said "binary:logistic needs labels in [0, 1], found 2" (or "the labels are
    not numbers"): the estimator's classes_ code them, as its predict decodes them."""
    pytest.importorskip("matplotlib")
    from sklearn.metrics import log_loss

    from hardwood import report

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    for y in (np.where(X[:, 0] > 0, 2, 1), np.where(X[:, 0] > 0, "yes", "no")):
        clf = hw.GBDTClassifier(n_estimators=5, max_depth=2).fit(X, y)
        page = report.build_report(clf, X, y)
        assert _table_value(page, "logloss") == pytest.approx(
            log_loss(y, clf.predict_proba(X), labels=clf.classes_), abs=1e-6)
    with pytest.raises(ValueError, match="not one of the classifier's classes_"):
        report.build_report(clf, X, np.where(X[:, 0] > 0, "yes", "maybe"))


def test_xgboosts_minus_metric_variant_is_named():
    """'ndcg@3-' (XGBoost's variant) was refused with "the cutoff after '@' must be a
    positive integer"."""
    from hardwood.ranking import parse_ranking_metric

    with pytest.raises(ValueError, match="XGBoost's '-' variant .* give 'ndcg@3'"):
        parse_ranking_metric("ndcg@3-")
    with pytest.raises(ValueError, match="must be a positive integer"):
        parse_ranking_metric("map@x")


def test_imports_predict_as_the_peers_own_predict():
    """A LightGBM Booster that stopped early and kept its trees (keep_training_booster=True)
    predicts with its best_iteration; hardwood used every tree (1.37 off). An XGBoost
    estimator with missing=-999 reads -999 as missing; hardwood read it as a number (8.6
    off): it is refused, with what to do."""
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    from hardwood.importers import ImportModelError

    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(3000, 5)), rng.normal(size=(1000, 5))
    y, yv = X[:, 0] + 2.0 * rng.normal(size=3000), Xv[:, 0] + 2.0 * rng.normal(size=1000)
    train = lgb.Dataset(X, y)
    booster = lgb.train({"learning_rate": 0.3, "num_leaves": 63, "verbose": -1}, train, 300,
                        valid_sets=[lgb.Dataset(Xv, yv, reference=train)],
                        callbacks=[lgb.early_stopping(5, verbose=False)],
                        keep_training_booster=True)
    assert 0 < booster.best_iteration < booster.num_trees()  # the case
    np.testing.assert_allclose(hw.import_model(booster).predict(Xv), booster.predict(Xv),
                               atol=1e-9)
    est = xgb.XGBRegressor(n_estimators=5, missing=-999.0).fit(X, y)
    with pytest.raises(ImportModelError, match=r"reads -999.0 as a missing value"):
        hw.import_model(est)
    est.set_params(missing=np.nan)
    np.testing.assert_allclose(hw.import_model(est).predict(X), est.predict(X), atol=1e-5)


def test_lightgbm_model_without_names_reads_a_default_frame_by_position():
    """A LightGBM model trained on a numpy array (features Column_0..) refused
    pd.DataFrame(X), which LightGBM reads by position; hardwood's own f0.. models took it."""
    lgb = pytest.importorskip("lightgbm")
    import pandas as pd

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    booster = lgb.train({"verbose": -1}, lgb.Dataset(X, X[:, 0] + X[:, 1]), 5)
    model = hw.import_model(booster)
    assert model.feature_names[0] == "Column_0"
    np.testing.assert_allclose(model.predict(pd.DataFrame(X)), booster.predict(X), atol=1e-9)
    with pytest.raises(ValueError, match=r"column '1' is at position 0.*Column_0..Column_3"):
        model.predict(pd.DataFrame(X)[[1, 0, 2, 3]])


@pytest.mark.parametrize("lib", ["lightgbm", "xgboost"])
def test_imported_pandas_categories_read_an_array_as_codes_as_the_peers(lib):
    """A peer model trained on a pandas category column of ratings [1..5] reads a numeric
    array's column as the category codes (0..4), as both peers do; hardwood read it as the
    ratings, every row one category off (4.7 from LightGBM's predictions, 7.1 from
    XGBoost's), with no warning."""
    peer = pytest.importorskip(lib)
    import pandas as pd

    rng = np.random.default_rng(11)
    ratings = [1, 2, 3, 4, 5]
    df = pd.DataFrame({"a": rng.normal(size=2000),
                       "c": pd.Categorical(rng.choice(ratings, 2000), categories=ratings)})
    codes = df["c"].cat.codes.to_numpy()
    y = df["a"] + np.array([0.0, 3.0, -2.0, 5.0, 1.0])[codes]
    if lib == "lightgbm":
        est = peer.LGBMRegressor(n_estimators=10, verbose=-1, min_child_samples=5).fit(df, y)
    else:
        est = peer.XGBRegressor(n_estimators=10, enable_categorical=True,
                                tree_method="hist").fit(df, y)
    model = hw.import_model(est)
    X = np.c_[df["a"].to_numpy(), codes].astype(float)
    theirs = est.predict(df)
    np.testing.assert_allclose(model.predict(X), theirs, atol=1e-5)
    np.testing.assert_allclose(model.predict(df), theirs, atol=1e-5)  # a frame: by value
    X[0, 1] = 7.0  # no such code: unseen
    model.predict(X)
    X[0, 1] = 1.5
    with pytest.raises(ValueError, match="fractional value 1.5"):
        model.predict(X)
