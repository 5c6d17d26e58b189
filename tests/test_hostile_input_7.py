"""The command line, file reading and Dask, tried as a new user would (session 17): each test
names what hardwood did before."""
import warnings

import numpy as np
import pandas as pd
import pytest

from hardwood.cli import main
from hardwood.data.readers import read_table


def _binary_files(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(int)
    cols = {"a": X[:, 0], "b": X[:, 1], "c": X[:, 2]}
    train = str(tmp_path / "train.csv")
    signed = str(tmp_path / "signed.csv")
    pd.DataFrame({**cols, "y": y}).to_csv(train, index=False)
    pd.DataFrame({**cols, "y": 2 * y - 1}).to_csv(signed, index=False)
    return train, signed


def test_predict_does_not_score_labels_outside_the_objectives_range(tmp_path, capsys):
    """``hardwood predict --label`` of a binary:logistic model against -1/+1 labels printed
    logloss -1.17 (and an AUC over labels it cannot read); ``report`` tabled the same."""
    train, signed = _binary_files(tmp_path)
    model = str(tmp_path / "m.json")
    assert main(["train", "--data", train, "--label", "y", "-p", "objective=binary:logistic",
                 "--rounds", "5", "-q", "--out", model]) == 0
    capsys.readouterr()
    assert main(["predict", "-m", model, "--data", signed, "--label", "y", "--out",
                 str(tmp_path / "p.csv")]) == 0
    out = capsys.readouterr().out
    assert "logloss" not in out and "auc" not in out
    assert "not scored: binary:logistic needs labels in [0, 1], found -1" in out
    assert main(["predict", "-m", model, "--data", train, "--label", "y", "--out",
                 str(tmp_path / "q.csv")]) == 0
    assert "logloss 0." in capsys.readouterr().out  # labels in range: scored
    html = str(tmp_path / "r.html")
    assert main(["report", "-m", model, "--data", signed, "--label", "y", "--out", html]) == 0
    text = open(html).read()
    assert "needs labels in [0, 1], found -1" in text and ">logloss<" not in text


def test_score_model_refuses_class_codes_past_the_models_classes():
    import hardwood
    from hardwood.metrics import score_model

    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)
    model = hardwood.train({"objective": "multi:softprob", "num_class": 3},
                           hardwood.Dataset(X, y), num_boost_round=2)
    scores, problem = score_model(model, y, model.predict(X))
    assert problem is None and [m for m, _ in scores] == ["mlogloss", "merror"]
    scores, problem = score_model(model, y + 1, model.predict(X))
    assert scores == [] and "integer labels in [0, num_class=3), found 3" in problem


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_duplicate_column_names_are_refused(tmp_path, fmt):
    """pandas renames a CSV header's second ``y`` to ``y.1``, which was trained as a feature
    without a word; from_files on a Parquet file with a repeated name raised a bare KeyError."""
    import hardwood

    path = str(tmp_path / f"dup.{fmt}")
    if fmt == "csv":
        with open(path, "w") as fh:
            fh.write("y,a,y,b\n" + "".join(f"{i % 2},{i},{i % 3},{i * 2}\n" for i in range(20)))
        with pytest.raises(ValueError, match=r"duplicate column names: \['y'\]"):
            read_table(path, label="y")
    else:
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        v = np.arange(20.0)
        pq.write_table(pa.Table.from_arrays([pa.array(v), pa.array(v * 2), pa.array(v % 2)],
                                            names=["a", "a", "y"]), path)
    with pytest.raises(ValueError, match="duplicate column names"):
        hardwood.Dataset.from_files(path, label="y", cache_dir=str(tmp_path / "cache"))


def test_a_header_with_an_empty_name_is_still_read(tmp_path):
    path = str(tmp_path / "t.csv")
    with open(path, "w") as fh:
        fh.write("y,a,b,\n" + "".join(f"{i % 2},{i},{i % 3},\n" for i in range(10)))
    X, y, names = read_table(path, label="y")
    assert names[:2] == ["a", "b"] and y.shape == (10,)


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=":0")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_dask_binary_classifier_predict_proba_on_a_dataframe(client):
    """A binary DaskGBDTClassifier trained on a dask DataFrame could not predict_proba it:
    ``da.stack`` refused the unknown row counts of a DataFrame's prediction."""
    dd = pytest.importorskip("dask.dataframe")
    from hardwood import dask as hd

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    y = pd.Series((X["a"] > 0).astype(int))
    dX, dy = dd.from_pandas(X, npartitions=2), dd.from_pandas(y, npartitions=2)
    est = hd.DaskGBDTClassifier(n_estimators=4, max_depth=2)
    est.client = client
    est.fit(dX, dy)
    proba = est.predict_proba(dX).compute()
    assert proba.shape == (300, 2)
    np.testing.assert_allclose(proba[:, 0] + proba[:, 1], 1.0)
    np.testing.assert_allclose(proba[:, 1], est.model_.predict(X), rtol=1e-12)
    np.testing.assert_array_equal(est.predict(dX).compute(), (proba[:, 1] > 0.5).astype(int))


@pytest.mark.parametrize("name, mode", [("DaskGBDTRegressor", None),
                                        ("DaskRandomForestRegressor", "tree"),
                                        ("DaskRandomForestRegressor", "histogram")])
def test_dask_estimators_keep_the_column_names(client, name, mode):
    """The Dask forests' tree-parallel mode fitted each share on a bare matrix: the forest was
    named f0..f2, so a DataFrame with its columns in another order was read by position (a
    warning, and wrong predictions). No Dask estimator set ``feature_names_in_``."""
    dd = pytest.importorskip("dask.dataframe")
    from hardwood import dask as hd

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    y = pd.Series(X["a"] * 2 + X["b"])
    dX, dy = dd.from_pandas(X, npartitions=2), dd.from_pandas(y, npartitions=2)
    est = getattr(hd, name)(n_estimators=4, max_depth=3)
    est.client = client
    if mode is not None:
        est.mode = mode
    est.fit(dX, dy)
    assert list(est.feature_names_in_) == ["a", "b", "c"] and est.n_features_in_ == 3
    with pytest.raises(ValueError, match="different order"):
        est.predict(dd.from_pandas(X[["c", "a", "b"]], npartitions=2)).compute()


def _queries(seed=0, n_queries=40):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 30, size=n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 4))
    y = np.clip((X[:, 0] + rng.normal(size=n)).round() + 1, 0, 4)
    return X, y, sizes, np.concatenate([[0], np.cumsum(sizes)]), rng


def test_weighted_ranking_metrics_match_lightgbm_and_xgboost():
    """Ranking metrics ignored a validation set's weights, where LightGBM weights each query
    by the mean of its rows' weights and XGBoost by its per-query weight."""
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    from hardwood.metrics import get_metric

    X, y, sizes, ptr, rng = _queries()
    w = rng.uniform(0.2, 3, size=y.size)
    res = {}
    tr = lgb.Dataset(X, y, group=sizes)
    b = lgb.train({"objective": "lambdarank", "metric": "ndcg", "eval_at": [10],
                   "num_threads": 1, "verbose": -1}, tr, 1,
                  valid_sets=[lgb.Dataset(X, y, group=sizes, weight=w, reference=tr)],
                  callbacks=[lgb.record_evaluation(res)])
    ours = get_metric("ndcg@10")(y, b.predict(X), w, group=ptr)
    assert ours == pytest.approx(res["valid_0"]["ndcg@10"][-1], rel=1e-8)
    assert ours != pytest.approx(get_metric("ndcg@10")(y, b.predict(X), None, group=ptr),
                                 rel=1e-6)  # the weights count

    per_query = rng.uniform(0.2, 3, size=sizes.size)
    dm = xgb.DMatrix(X, y, group=sizes)
    dm.set_weight(per_query)
    bx = xgb.train({"objective": "rank:ndcg", "eval_metric": "ndcg@10", "nthread": 1}, dm, 2)
    theirs = float(bx.eval(dm).split(":")[-1])
    ours = get_metric("ndcg@10")(y, bx.predict(dm), np.repeat(per_query, sizes), group=ptr)
    assert ours == pytest.approx(theirs, rel=1e-8)


def test_training_scores_a_weighted_ranking_validation_set_with_its_weights():
    import hardwood

    X, y, sizes, ptr, rng = _queries(1)
    w = rng.uniform(0.2, 3, size=y.size)
    train = hardwood.Dataset(X, y, group=sizes)
    valid = hardwood.Dataset(X, y, group=sizes, weight=w, reference=train)
    model = hardwood.train({"objective": "rank:ndcg", "eval_metric": "ndcg@5", "max_depth": 3},
                           train, num_boost_round=3, valid_sets=[valid], valid_names=["v"])
    from hardwood.metrics import get_metric
    expected = get_metric("ndcg@5")(y, model.predict(X), w, group=ptr)
    assert model.evals_result["v"]["ndcg@5"][-1] == pytest.approx(expected, rel=1e-12)


# -- forests and boosting parameters against scikit-learn, XGBoost and LightGBM (probe 7) --
def _forest_data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + rng.normal(0, 0.3, n)
    return X, y


def _leaves(forest):
    return [int((np.asarray(t.feature) < 0).sum()) for t in forest.forest_.trees]


def test_forest_min_weight_fraction_leaf_is_of_each_trees_weight():
    """The bound was fraction x the sum of the user's weights: a constant weight of 100 (under
    bootstrap, scikit-learn's trees weigh their draw counts) left every tree a single leaf,
    R^2 0; class weights were left out without bootstrap."""
    from sklearn.ensemble import RandomForestClassifier as SKC

    from hardwood import RandomForestClassifier, RandomForestRegressor

    X, y = _forest_data()
    kw = dict(n_estimators=8, random_state=0, min_weight_fraction_leaf=0.01)
    plain = _leaves(RandomForestRegressor(**kw).fit(X, y))
    for scale in (100.0, 0.01):
        scaled = _leaves(RandomForestRegressor(**kw).fit(X, y, sample_weight=np.full(2000, scale)))
        assert scaled == plain, scale
    # without bootstrap, on exact bins, the trees are scikit-learn's: class weights count in
    # the tree's weight
    rng = np.random.default_rng(1)
    X = rng.integers(0, 40, size=(2000, 4)).astype(float)
    yc = (X[:, 0] + rng.normal(0, 8, 2000) > 20).astype(int)
    kw = dict(n_estimators=3, bootstrap=False, max_features=None, random_state=0,
              min_weight_fraction_leaf=0.05, class_weight={0: 10.0, 1: 10.0})
    ours = _leaves(RandomForestClassifier(**kw).fit(X, yc))
    assert ours == [t.get_n_leaves() for t in SKC(**kw).fit(X, yc).estimators_]
    # (the splits may differ where two features tie; equal class weights change nothing)
    assert ours == _leaves(RandomForestClassifier(**{**kw, "class_weight": None}).fit(X, yc))


def test_forest_balanced_class_weight_counts_classes_by_sample_weight():
    """'balanced' counted rows, where scikit-learn counts the classes' sample weights: with the
    positives weighing 10x, hardwood's class weights were [0.80, 1.33] for scikit-learn's
    [3.53, 0.58] (P(y=1) 0.956 where scikit-learn's stump gives 0.801)."""
    from sklearn.ensemble import RandomForestClassifier as SKC

    from hardwood import RandomForestClassifier

    rng = np.random.default_rng(0)
    X = rng.integers(0, 40, size=(2000, 4)).astype(float)
    y = (X[:, 0] + rng.normal(0, 8, 2000) > 25).astype(int)
    sw = np.where(y == 1, 10.0, 1.0)
    for cw in ("balanced", "balanced_subsample"):
        kw = dict(n_estimators=1, bootstrap=False, max_features=None, max_depth=2,
                  random_state=0, class_weight=cw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # balanced_subsample without bootstrap
            ours = RandomForestClassifier(**kw).fit(X, y, sample_weight=sw)
        theirs = SKC(**kw).fit(X, y, sample_weight=sw)
        np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-12)


def test_forest_probabilities_stay_within_0_and_1():
    """The leaves hold fraction / n_estimators, and their sum reached 1.0000000000000013:
    scikit-learn's log_loss refused the probabilities."""
    from sklearn.metrics import log_loss

    from hardwood import RandomForestClassifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 10))
    y = np.digitize(X[:, 0] + rng.normal(0, 0.7, 3000), [-1, 0.7])
    p = RandomForestClassifier(n_estimators=60, random_state=0).fit(X[:2000], y[:2000]) \
        .predict_proba(X[2000:])
    assert p.max() <= 1.0 and p.min() >= 0.0
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert np.isfinite(log_loss(y[2000:], p))


def test_lightgbm_num_leaves_grows_leaf_wise_as_lightgbm():
    """``num_leaves`` (LightGBM's name) trained depthwise trees of depth 6, 0.45 off
    LightGBM's predictions; it now brings leaf-wise growth, unless grow_policy is given."""
    lgb = pytest.importorskip("lightgbm")
    import hardwood

    rng = np.random.default_rng(0)
    X = rng.integers(0, 60, size=(3000, 6)).astype(np.float64)
    y = ((X[:, 0] - 30) / 10 + np.sin(X[:, 1] / 8) - ((X[:, 2] - 30) / 20) ** 2
         + rng.normal(0, 0.5, 3000))
    params = dict(objective="regression", num_leaves=15, learning_rate=0.2,
                  min_sum_hessian_in_leaf=1.0, lambda_l2=1.0)
    peer = lgb.train({**params, "verbose": -1, "num_threads": 1, "min_data_in_leaf": 1,
                      "min_data_in_bin": 1}, lgb.Dataset(X, y), 10)
    ours = hardwood.train(params, hardwood.Dataset(X, y), 10)
    assert ours.params["grow_policy"] == "lossguide"
    np.testing.assert_allclose(ours.predict(X), peer.predict(X), atol=1e-6)
    depthwise = hardwood.train({**params, "grow_policy": "depthwise"}, hardwood.Dataset(X, y), 1)
    assert depthwise.params["grow_policy"] == "depthwise"


def test_estimator_importance_type():
    """feature_importances_ was always the normalised total gain; XGBoost's estimators default
    to the mean gain ('gain') and LightGBM's to split counts: importance_type picks."""
    import hardwood

    X, y = _forest_data(600)
    est = hardwood.GBDTRegressor(n_estimators=5, max_depth=3).fit(X, y)
    for kind in ("total_gain", "gain", "weight", "cover", "total_cover"):
        est.set_params(importance_type=kind)
        raw = np.asarray(est.model_.feature_importances(kind), dtype=float)
        np.testing.assert_allclose(est.feature_importances_, raw / raw.sum())
    est.set_params(importance_type="split")
    raw = np.asarray(est.model_.feature_importances("weight"), dtype=float)
    np.testing.assert_allclose(est.feature_importances_, raw / raw.sum())
    est.set_params(importance_type="bogus")
    with pytest.raises(ValueError, match="importance_type must be one of"):
        est.feature_importances_


# -- categorical features against XGBoost (probe 8) --
def test_a_dtype_category_without_training_rows_is_missing():
    """A category of the frame's dtype that no training row holds (a frame cut from a larger
    one) was a category of its own, sent wherever the sort put it (-2.16, another category's
    value, where missing values got -0.66); integer codes treated it as missing."""
    import hardwood

    rng = np.random.default_rng(0)
    cats = list("ABCDEFGHIJ")
    c = rng.choice([k for k in cats if k != "E"], 3000).astype(object)
    effect = dict(zip(cats, rng.normal(size=10) * 2))
    y = np.array([effect[k] for k in c]) + rng.normal(size=3000) * 0.3
    c[rng.random(3000) < 0.05] = None
    frame = pd.DataFrame({"c": pd.Categorical(c, categories=cats)})
    params = {"max_depth": 3, "learning_rate": 0.3}
    model = hardwood.train(params, hardwood.Dataset(frame, y), 10)
    assert "E" not in model.info.categories[0]
    test = pd.DataFrame({"c": pd.Categorical(["E", None], categories=cats)})
    with pytest.warns(UserWarning, match="categories training never saw"):
        e, nan = model.predict(test)
    assert e == nan
    codes = frame["c"].cat.codes.to_numpy().astype(float)
    codes[codes < 0] = np.nan
    by_codes = hardwood.train(params, hardwood.Dataset(codes[:, None], y,
                                                       categorical_features=[0]), 10)
    np.testing.assert_allclose(model.predict(frame), by_codes.predict(codes[:, None]),
                               rtol=1e-12)


def _xgb_categorical(xgb, df, y, params, rounds):
    booster = xgb.train({**params, "eta": params["learning_rate"], "tree_method": "hist",
                         "nthread": 1}, xgb.DMatrix(df, y, enable_categorical=True), rounds)
    return booster.predict(xgb.DMatrix(df, enable_categorical=True))


def test_partition_splits_can_send_the_missing_values_alone():
    """XGBoost's partition search walks all the field's categories, those without rows in the
    node too, so a node's categories can all go one way and its missing values the other;
    hardwood left the empty categories out and kept a split of half the gain (train RMSE
    0.82 against XGBoost's 0.10)."""
    xgb = pytest.importorskip("xgboost")
    import hardwood

    rng = np.random.default_rng(0)
    cats = list("ABCDEFGHIJ")
    c = rng.choice(cats, 2000).astype(object)
    y = np.where(np.isin(c, list("ABCDEFG")), 0.0, 5.0)
    missing = (rng.random(2000) < 0.1) & np.isin(c, list("HIJ"))
    c[missing] = None
    y[missing] = 10.0
    y = y + rng.normal(size=2000) * 0.1
    df = pd.DataFrame({"c": pd.Categorical(c, categories=cats)})
    params = {"max_depth": 2, "learning_rate": 1.0, "max_cat_to_onehot": 4,
              "base_score": float(y.mean())}
    ours = hardwood.train(params, hardwood.Dataset(df, y), 1).predict(df)
    np.testing.assert_allclose(ours, _xgb_categorical(xgb, df, y, params, 1), atol=1e-5)
    assert np.sqrt(np.mean((ours - y) ** 2)) < 0.2


def test_categorical_trees_follow_xgboost_round_after_round():
    """With 5% missing values, hardwood's trees left XGBoost's at round 12 (a node of 409 rows
    split with gain 0.95 where XGBoost sent its missing values alone, gain 1.93)."""
    xgb = pytest.importorskip("xgboost")
    import hardwood

    rng = np.random.default_rng(4)
    cats = list("ABCDEFGHIJ")
    c1, c2 = rng.choice(cats, 4000), rng.choice(["x", "y", "z"], 4000)
    effect = dict(zip(cats, rng.normal(size=10)))
    num = rng.normal(size=4000)
    y = (np.array([effect[c] for c in c1]) + (c2 == "y") + num * 0.5
         + rng.normal(size=4000) * 0.3)
    df = pd.DataFrame({"c1": pd.Categorical(c1, categories=cats), "c2": pd.Categorical(c2)})
    df.loc[rng.random(4000) < 0.05, "c1"] = np.nan
    params = {"max_depth": 3, "learning_rate": 0.3, "max_cat_to_onehot": 4,
              "base_score": float(y.mean())}
    ours = hardwood.train(params, hardwood.Dataset(df, y), 20).predict(df)
    np.testing.assert_allclose(ours, _xgb_categorical(xgb, df, y, params, 20), atol=1e-5)


def test_goss_with_lightgbm_bagging_is_refused_as_lightgbm_does():
    """LightGBM refuses bagging under GOSS; hardwood took bagging_fraction as subsample and
    GOSS's rates as two thirds and one third of it, without a word."""
    import importlib

    resolve = importlib.import_module("hardwood.train.params").resolve_params
    with pytest.raises(ValueError, match="'goss' does not bag"):
        resolve({"data_sample_strategy": "goss", "bagging_fraction": 0.5, "bagging_freq": 1})
    for extra in ({}, {"bagging_freq": 0}):  # no bagging: LightGBM's GOSS rates
        p = resolve({"data_sample_strategy": "goss", "bagging_fraction": 0.5, **extra})
        assert (p["subsample"], p["top_rate"], p["other_rate"]) == (1.0, 0.2, 0.1)


def test_batches_and_files_of_no_rows_are_skipped(tmp_path):
    """A batch of no rows stopped from_batches ("batch 1's X is empty"), and a CSV file of a
    header alone stopped from_files, where a Parquet file of no rows was skipped."""
    import hardwood

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = X[:, 0]
    with_empty = hardwood.Dataset.from_batches(
        lambda: iter([(X[:100], y[:100]), (X[:0], y[:0]), (X[100:], y[100:])]),
        str(tmp_path / "a"))
    whole = hardwood.Dataset.from_batches(lambda: iter([(X, y)]), str(tmp_path / "b"))
    np.testing.assert_array_equal(hardwood.train({}, with_empty, 3).predict(X),
                                  hardwood.train({}, whole, 3).predict(X))
    with pytest.raises(ValueError, match="X has no rows but y has 2 values"):
        hardwood.Dataset.from_batches(lambda: iter([(X, y), (X[:0], y[:2])]),
                                      str(tmp_path / "c"))
    pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y}).to_csv(
        tmp_path / "p1.csv", index=False)
    (tmp_path / "p2.csv").write_text("a,b,c,y\n")
    ds = hardwood.Dataset.from_files(str(tmp_path / "p*.csv"), "y", str(tmp_path / "d"))
    assert ds.n_rows == 300


def test_models_slice_by_rounds_as_xgboost_boosters():
    """``model[0:3]`` failed ("'Model' object is not subscriptable"), where XGBoost's
    ``booster[0:3]`` gives a booster of those rounds."""
    xgb = pytest.importorskip("xgboost")
    import hardwood

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    y = (X[:, 0] > 0).astype(float)
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1},
                        xgb.DMatrix(X, y), 8)
    model = hardwood.import_model(booster)
    for s in (slice(2, 5), slice(0, 8, 2), slice(1, 7, 3), 3):
        np.testing.assert_allclose(model[s].predict(X), booster[s].predict(xgb.DMatrix(X)),
                                   atol=1e-6)
    yc = np.digitize(X[:, 1], [-0.5, 0.5]).astype(float)
    multi = hardwood.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2},
                           hardwood.Dataset(X, yc), 6)
    part = multi[1:4]
    assert part.num_boosted_rounds == 3 and part.num_trees == 9
    np.testing.assert_array_equal(part.predict(X), multi.predict(X, iteration_range=(1, 4)))
    np.testing.assert_array_equal(multi[-1].predict(X), multi.predict(X, iteration_range=(5, 6)))
    for bad, err in ((slice(5, 2), ValueError), (slice(0, 3, -1), ValueError), (10, IndexError),
                     ("a", TypeError)):
        with pytest.raises(err):
            model[bad]
    forest = hardwood.RandomForestRegressor(n_estimators=4, random_state=0).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="fraction of the forest's mean"):
        forest.forest_.to_model()[0:2]


def test_forests_keep_the_dtype_categories_across_warm_start_fits():
    """Forests split category codes as ordered numbers, so every warm_start fit must code a
    frame alike: they keep the dtype's categories, those without rows too (boosting's
    Dataset drops those, test_a_dtype_category_without_training_rows_is_missing)."""
    from hardwood import RandomForestRegressor

    rng = np.random.default_rng(0)
    cats = list("ABCD")
    c = rng.choice(cats, 400)
    y = np.array([cats.index(v) for v in c], dtype=float)
    X = pd.DataFrame({"c": pd.Categorical(c, categories=cats), "x": rng.normal(size=400)})
    forest = RandomForestRegressor(n_estimators=3, random_state=0, warm_start=True).fit(X, y)
    first = forest.predict(X)
    no_b = X[X["c"] != "B"]
    forest.set_params(n_estimators=6).fit(no_b, y[(X["c"] != "B").to_numpy()])
    assert list(forest.forest_.info.categories[0]) == cats
    # the new trees read C and D with the codes the old ones were grown on
    np.testing.assert_allclose(forest.predict(X[X["c"] == "D"]), 3.0, atol=0.3)
    assert np.isfinite(first).all()
