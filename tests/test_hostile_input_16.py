"""Session 26's probe of the training API's plumbing (probe 48): early stopping, callbacks and
continued training against XGBoost 3.2 and LightGBM 4.7. Each test says what hardwood did
before."""
import warnings

import numpy as np
import pytest

import hardwood as hw
from containers import CONTAINERS, container_of


def _data(n=3000, seed=0, low=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(low, low + 10, size=(n, 4)).astype(float)
    y = X[:, 0] * 0.5 - (X[:, 1] > 4) * 2 + X[:, 2] * X[:, 3] * 0.05 + rng.normal(0, 1, n)
    return X, y


def _rmse(model, X, y):
    return float(np.sqrt(np.mean((model.predict(X) - y) ** 2)))


def test_a_callback_after_early_stopping_predicts_with_every_round():
    """``EarlyStopping`` wrote its best round onto the round's model, which the callbacks
    after it got: their ``predict`` stopped at the best round (an RMSE of 0.99977 where the
    log said 1.0039-1.0112). XGBoost's callbacks predict with every tree so far."""
    X, y = _data()
    tr, va = hw.Dataset(X[:2000], y[:2000]), None
    va = hw.Dataset(X[2000:], y[2000:], reference=tr)
    seen = []

    def record(model, epoch, log):
        seen.append((model.num_boosted_rounds, _rmse(model, X[2000:], y[2000:]),
                     log["a"]["rmse"][-1]))

    model = hw.train({"max_depth": 4, "eta": 0.8}, tr, 40, valid_sets=[va], valid_names=["a"],
                     callbacks=[hw.EarlyStopping(2, "rmse", "a"), record])
    assert model.best_iteration is not None and model.best_iteration < len(seen) - 1
    for rounds, predicted, logged in seen:
        assert predicted == pytest.approx(logged, rel=1e-9)
    assert model.num_boosted_rounds == len(seen)
    np.testing.assert_allclose(_rmse(model, X[2000:], y[2000:]),
                               seen[model.best_iteration][2], rtol=1e-9)


def test_an_early_stopping_callback_reused_starts_afresh():
    """A reused ``EarlyStopping`` kept the last training's best score: the second training
    stopped at round 25 with best 21 where a fresh one went to 116 (LightGBM resets its
    callback)."""
    X, y = _data()
    tr = hw.Dataset(X[:2000], y[:2000])
    va = hw.Dataset(X[2000:], y[2000:], reference=tr)
    stop = hw.EarlyStopping(3, "rmse", "a")
    for eta in (0.8, 0.1):
        reused = hw.train({"max_depth": 3, "eta": eta}, tr, 200, valid_sets=[va],
                          valid_names=["a"], callbacks=[stop])
        fresh = hw.train({"max_depth": 3, "eta": eta}, tr, 200, valid_sets=[va],
                         valid_names=["a"], callbacks=[hw.EarlyStopping(3, "rmse", "a")])
        assert reused.best_iteration == fresh.best_iteration
        assert reused.num_boosted_rounds == fresh.num_boosted_rounds


def test_early_stopping_watches_a_custom_metric():
    """``EarlyStopping(3, 'mymae', 'a')`` with ``custom_metric`` was refused before training
    ("add it to eval_metric", which refuses custom names); XGBoost's stops on it."""
    xgb = pytest.importorskip("xgboost")
    X, y = _data()
    tr = hw.Dataset(X[:2000], y[:2000])
    va = hw.Dataset(X[2000:], y[2000:], reference=tr)

    def mymae(predt, data):
        return "mymae", float(np.mean(np.abs(predt - data.get_label())))

    model = hw.train({"max_depth": 4, "eta": 0.8}, tr, 60, valid_sets=[va], valid_names=["a"],
                     custom_metric=mymae, callbacks=[hw.EarlyStopping(3, "mymae", "a")])
    dtr = xgb.DMatrix(X[:2000], y[:2000])
    dva = xgb.DMatrix(X[2000:], y[2000:])
    ref = xgb.train({"max_depth": 4, "eta": 0.8, "nthread": 1}, dtr, 60, evals=[(dva, "a")],
                    custom_metric=mymae, verbose_eval=False,
                    callbacks=[xgb.callback.EarlyStopping(rounds=3, metric_name="mymae",
                                                          data_name="a")])
    assert model.best_iteration == ref.best_iteration
    with pytest.raises(ValueError, match="'nosuch'"):
        hw.train({"max_depth": 2}, tr, 3, valid_sets=[va], valid_names=["a"],
                 custom_metric=mymae, callbacks=[hw.EarlyStopping(3, "nosuch", "a")])


def test_continuing_an_early_stopped_model_under_lightgbms_names():
    """The model predicts with its rounds up to ``best_iteration``, but training continued
    from all of them: 0.449 off LightGBM's continued model, which continues from its best
    trees. Under XGBoost's names every round is kept, as XGBoost's, with a warning."""
    lgb = pytest.importorskip("lightgbm")
    X, y = _data(4000, low=1)
    Xt, yt, Xa, ya = X[:2000], y[:2000], X[2000:3000], y[2000:3000]
    params = {"objective": "regression", "num_leaves": 8, "learning_rate": 0.6}
    lt = lgb.Dataset(Xt, yt, free_raw_data=False)
    stopped = lgb.train({**params, "verbose": -1, "num_threads": 1}, lt, 100,
                        valid_sets=[lgb.Dataset(Xa, ya, reference=lt)],
                        callbacks=[lgb.early_stopping(3, verbose=False)])
    more = lgb.train({**params, "verbose": -1, "num_threads": 1}, lgb.Dataset(Xt, yt), 5,
                     init_model=stopped)
    tr = hw.Dataset(Xt, yt)
    model = hw.train(params, tr, 100, valid_sets=[hw.Dataset(Xa, ya, reference=tr)],
                     early_stopping_rounds=3)
    assert model.best_iteration + 1 < model.num_boosted_rounds  # (rounds past the best)
    ours = hw.train(params, tr, 5, init_model=model)
    assert ours.num_boosted_rounds == model.best_iteration + 1 + 5 == more.num_trees()
    np.testing.assert_allclose(ours.predict(X[3000:]), more.predict(X[3000:]), atol=1e-6)
    xgb_names = {"max_depth": 3, "eta": 0.6}
    model = hw.train(xgb_names, tr, 100, valid_sets=[hw.Dataset(Xa, ya, reference=tr)],
                     early_stopping_rounds=3)
    assert model.best_iteration + 1 < model.num_boosted_rounds
    with pytest.warns(UserWarning, match=r"init_model=model\[:"):
        ours = hw.train(xgb_names, tr, 2, init_model=model)
    assert ours.num_boosted_rounds == model.num_boosted_rounds + 2


@pytest.mark.parametrize("case", ["zeros", "negative", "nan", "missing_rule", "binary"])
def test_a_model_grown_by_lightgbms_rules_continues_on_its_own_dataset(case):
    """LightGBM's thresholds next to 0.0 (+-1e-35) lie inside hardwood's bin of 0.0, and
    continuing such a model on the Dataset it was trained on was refused ("splits feature 0
    at 1e-35, inside a bin of this Dataset"; Dask's recovery by ``init_model`` too). Five
    rounds and five more now give the ten-round model exactly."""
    rng = np.random.default_rng(0)
    X = rng.integers(-5 if case == "negative" else 0, 10, size=(2000, 3)).astype(float)
    y = X[:, 0] * 0.5 - (X[:, 1] > 4) * 2 + rng.normal(0, 1, 2000)
    params = {"objective": "regression", "num_leaves": 8}
    if case == "nan":
        X = X + 1.0  # (positive values: the missing values alone go left, at +1e-35)
        X[rng.random(2000) < 0.2, 0] = np.nan
    if case == "missing_rule":
        params = {"max_depth": 3, "missing_rule": "lightgbm"}
    if case == "binary":
        params = {"objective": "binary", "num_leaves": 8}
        y = (y > np.median(y)).astype(float)
    ds = hw.Dataset(X, y)
    once = hw.train(params, ds, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        twice = hw.train(params, ds, 5, init_model=hw.train(params, ds, 5))
    np.testing.assert_array_equal(twice.predict(X), once.predict(X))
    if case == "zeros":
        assert any(abs(t) == 1e-35 or abs(t) == np.float32(1e-35)
                   for tree in once.trees for t in tree.threshold[tree.feature >= 0])


# -- probe 50: models edited or built in memory -----------------------------------------------
def _small_model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    y = X[:, 0] + rng.normal(size=500) * 0.1
    return hw.train({"max_depth": 3}, hw.Dataset(X, y), 3), X


@pytest.mark.parametrize("edit,match", [
    (lambda t: ("left", 10**6), "child index outside"),
    (lambda t: ("left", 0), "cycle"),
    (lambda t: ("feature", 40), r"feature holds an index outside \[-1, 3\)"),
    (lambda t: ("value", None), "value has length"),
])
@pytest.mark.parametrize("how", ["predict", "contrib", "compile", "struct+"])
def test_a_tree_edited_in_memory_is_checked_before_any_kernel_reads_it(edit, match, how):
    """Only a loaded file's trees were checked (``validate_tree``): a child index set past a
    tree's end in memory was a segfault, a child pointing back an endless ``predict``, a
    split on a feature the model lacks garbage that changed from run to run, a shortened
    ``value`` array NaN or 1e293. ``Tree.freeze`` invites assigning new arrays."""
    model, X = _small_model()
    t = model.trees[0]
    name, v = edit(t)
    if v is None:
        t.value = t.value[:3].copy()
    else:
        a = getattr(t, name).copy()
        a[0] = v
        setattr(t, name, a)
    with pytest.raises(ValueError, match=match):
        if how == "predict":
            model.predict(X[:5])
        elif how == "contrib":
            model.predict(X[:5], output="contrib")
        elif how == "compile":
            hw.compile(model)
        else:
            model.predict(X[:5], runtime="struct+")


def test_a_model_built_from_bad_trees_or_outputs_is_named():
    """``hw.Model`` over a tree splitting feature 40 of 3 predicted garbage; one base score
    for a three-class model was spread over the classes; a binary objective on three
    outputs predicted rows that do not sum to 1 (``hw.load`` refuses each)."""
    from hardwood.model.tree import TREE_FIELDS, Tree

    model, X = _small_model()
    t = model.trees[0]
    arrays = {k: getattr(t, k).copy() for k in (*TREE_FIELDS, "cat_bitsets")}
    arrays["feature"][0] = 40
    bad = hw.Model([Tree.from_arrays(**arrays), *model.trees[1:]], model.tree_group,
                   model.base_score, model.objective, model.n_outputs, model.info)
    with pytest.raises(ValueError, match="feature holds an index outside"):
        bad.predict(X[:5])
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    multi = hw.train({"objective": "multi:softprob", "max_depth": 3}, hw.Dataset(X, y), 3)
    expected = multi.predict(X[:3])
    multi.base_score = np.array([0.7])
    with pytest.raises(ValueError, match="1 numbers for the model's 3 outputs"):
        multi.predict(X[:3])
    multi.base_score = np.zeros(3)
    multi.objective = "binary:logistic"
    with pytest.raises(ValueError, match="does not fit the model's 3 outputs"):
        multi.predict(X[:3])
    multi.objective = "multi:softprob"  # (whole again: it predicts)
    np.testing.assert_allclose(multi.predict(X[:3]).sum(axis=1), 1.0)
    assert multi.predict(X[:3]).shape == expected.shape


def test_lightgbms_metric_none_keeps_the_custom_metrics_only():
    """``metric='None'`` (LightGBM's way to score by ``feval`` alone) was refused as an
    unknown metric."""
    lgb = pytest.importorskip("lightgbm")
    X, y = _data(1000)
    ds = hw.Dataset(X, y)

    def feval(pred, data):
        return "mae2", float(np.mean(np.abs(pred - data.get_label()))), False

    ours, theirs = {}, {}
    for none in ("None", "none", "na", "custom"):
        hw.train({"metric": none, "num_leaves": 8}, ds, 4, valid_sets=[ds], valid_names=["t"],
                 feval=feval, evals_result=ours)
        lgb.train({"metric": none, "num_leaves": 8, "verbose": -1, "num_threads": 1},
                  lgb.Dataset(X, y), 4, valid_sets=[lgb.Dataset(X, y)], valid_names=["t"],
                  feval=feval, callbacks=[lgb.record_evaluation(theirs)])
        assert list(ours["t"]) == list(theirs["t"]) == ["mae2"]
        np.testing.assert_allclose(ours["t"]["mae2"], theirs["t"]["mae2"], rtol=1e-6)
    hw.train({"metric": "None"}, ds, 2, valid_sets=[ds], valid_names=["t"], evals_result=ours)
    assert ours == {"t": {}}
    with pytest.raises(ValueError, match="needs a metric to watch"):
        hw.train({"metric": "None"}, ds, 2, valid_sets=[ds], early_stopping_rounds=2)


@pytest.mark.parametrize("name,value,match", [
    ("class_weight", "balanced", "compute_sample_weight"),
    ("warm_start", True, "init_model=estimator.model_"),
    ("enable_categorical", True, "'category' columns are categorical"),
    ("missing", -999, "NaN is the missing value")])
def test_the_estimators_name_what_to_do_for_the_peers_parameters(name, value, match):
    """``class_weight`` was answered "did you mean 'scale_pos_weight', 'min_child_weight'?",
    ``warm_start`` "did you mean 'random_state'?" (probes 48, 49)."""
    with pytest.raises(TypeError, match=match) as err:
        hw.GBDTClassifier(**{name: value})
    assert "did you mean" not in str(err.value)


@pytest.mark.parametrize("lib", ["xgboost-json", "xgboost-ubj", "lightgbm"])
def test_the_cli_predicts_with_xgboost_and_lightgbm_model_files(lib, tmp_path):
    """``hardwood predict --model model.json`` refused XGBoost's and LightGBM's files with a
    pointer to ``hardwood.import_model``, which a command-line user cannot call (probe 50).
    It imports them now, and predicts what the library does."""
    pd = pytest.importorskip("pandas")
    from hardwood.cli import main

    X, y = _data(500)
    y = (y > np.median(y)).astype(float)
    cols = [f"f{j}" for j in range(X.shape[1])]
    data = tmp_path / "d.csv"
    pd.DataFrame(X, columns=cols).to_csv(data, index=False)
    if lib == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        booster = lgb.train({"objective": "binary", "num_leaves": 8, "verbose": -1},
                            lgb.Dataset(pd.DataFrame(X, columns=cols), y), 5)
        path = tmp_path / "m.txt"
        booster.save_model(str(path))
        want = booster.predict(pd.DataFrame(X, columns=cols))
    else:
        xgb = pytest.importorskip("xgboost")
        booster = xgb.train({"objective": "binary:logistic", "max_depth": 3},
                            xgb.DMatrix(X, y, feature_names=cols), 5)
        path = tmp_path / ("m.json" if lib == "xgboost-json" else "m.ubj")
        booster.save_model(str(path))
        want = booster.predict(xgb.DMatrix(X, feature_names=cols))
    out = tmp_path / "p.csv"
    assert main(["predict", "--model", str(path), "--data", str(data), "--out", str(out)]) == 0
    got = pd.read_csv(out)["value"].to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_a_model_file_with_a_split_on_a_feature_without_categories_is_refused(tmp_path):
    """A categorical split on a feature whose category list was emptied loaded, every value
    read as unseen (1.75 off); an averaging count of 0 passed as "absent" (probe 50)."""
    import json

    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"c": pd.Categorical(rng.choice(list("abcdef"), 600)),
                      "x": rng.integers(0, 5, 600).astype(float)})
    y = (X["c"].cat.codes.to_numpy() % 2) * 2.0 + X["x"] + rng.normal(0, 0.1, 600)
    model = hw.train({"max_depth": 3}, hw.Dataset(X, y), 3)
    path = tmp_path / "m.json"
    model.save(path)
    d = json.loads(path.read_text())
    assert any(any(t["is_categorical"]) for t in d["trees"])
    d["features"]["categories"][0] = []
    path.write_text(json.dumps(d))
    with pytest.raises(hw.ModelFormatError, match="category list is empty"):
        hw.load(path)
    model.save(path)
    d = json.loads(path.read_text())
    d["params"]["sklearn_average_output"] = 0
    path.write_text(json.dumps(d))
    with pytest.raises(hw.ModelFormatError, match="positive tree count"):
        hw.load(path)


# -- probe 52 --------------------------------------------------------------------------------
@pytest.mark.parametrize("container", CONTAINERS)
@pytest.mark.parametrize("values", ["zero", "straddle"])
def test_validation_scores_under_lightgbms_rule_are_those_of_predict(container, values,
                                                                     monkeypatch):
    """LightGBM's thresholds next to 0.0 (+-1e-35) lie inside hardwood's bin of the values
    around 0.0; a validation value of 0.3 in a bin of 0.0 up to 0.5 was scored by its bin
    (left, with 0.0) where ``predict`` sends it right: RMSE 0.035 logged against 1.632
    predicted, and early stopping at round 3 where LightGBM stopped at 43."""
    rng = np.random.default_rng(20)
    n = 1000
    if values == "zero":
        X = rng.integers(-4, 5, (n, 3)).astype(float)
        X[rng.random((n, 3)) < 0.5] = 0
    else:  # no 0.0 in training: the edge between -1 and 1 moves to +-1e-35
        X = rng.choice([-2.0, -1.0, 1.0, 2.0], size=(n, 3))
    y = X[:, 0] * 2 + X[:, 1] + rng.normal(0, 0.1, n)
    Xv = rng.choice([0.3, 0.1, 2e-35, 0.49, -0.3, -0.49, 0.0, 1.0, -1.0], size=(300, 3))
    yv = rng.normal(0, 1, 300)
    conv = container_of(container, monkeypatch)
    tr = hw.Dataset(conv(X), y)
    va = hw.Dataset(conv(Xv), yv, reference=tr)
    params = {"objective": "regression", "num_leaves": 15, "min_data_in_leaf": 5}
    model = hw.train(params, tr, 20, valid_sets=[va], valid_names=["v"])
    assert any(abs(t) == np.float32(1e-35) for tree in model.trees
               for t in tree.threshold[tree.feature >= 0])
    for rounds in (1, 5, 20):
        pred = model[:rounds].predict(conv(Xv))
        np.testing.assert_allclose(model.evals_result["v"]["rmse"][rounds - 1],
                                   np.sqrt(np.mean((pred - yv) ** 2)), rtol=1e-12)
    xgb_rule = hw.train({**params, "missing_rule": "xgboost"}, tr, 5, valid_sets=[va],
                        valid_names=["v"])
    np.testing.assert_allclose(xgb_rule.evals_result["v"]["rmse"][-1],
                               np.sqrt(np.mean((xgb_rule.predict(conv(Xv)) - yv) ** 2)),
                               rtol=1e-12)


def test_arrow_tables_of_nullable_booleans_and_decimals_train_as_their_frames():
    """A pyarrow Table with a bool column holding nulls, or a decimal column, was refused
    (with advice about categories), where its pandas frame trains, as do XGBoost and
    LightGBM on that Table (probe 52)."""
    import decimal

    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    n = 200
    a = [None if rng.random() < 0.2 else bool(rng.integers(0, 2)) for _ in range(n)]
    b = rng.integers(-3, 4, n)
    y = np.array([3.0 if v is None else 2.0 * v for v in a]) + b + rng.normal(0, 0.1, n)
    table = pa.table({"a": pa.array(a), "b": pa.array(b)})
    frame = pd.DataFrame({"a": pd.array(a, dtype="boolean"), "b": b})
    params = {"max_depth": 3}
    want = hw.train(params, hw.Dataset(frame, y), 5)
    got = hw.train(params, hw.Dataset(table, y), 5)
    np.testing.assert_array_equal(got.predict(table), want.predict(frame))
    dec = pa.table({"a": pa.array([decimal.Decimal(int(v)) for v in b],
                                  pa.decimal128(10, 2)), "b": pa.array(b)})
    want = hw.train(params, hw.Dataset(pd.DataFrame({"a": b.astype(float), "b": b}), y), 5)
    got = hw.train(params, hw.Dataset(dec, y), 5)
    np.testing.assert_array_equal(got.predict(dec), want.predict(
        pd.DataFrame({"a": b.astype(float), "b": b})))


def test_one_dimensional_sparse_arrays_and_min_data_in_bin_are_named():
    """A 1-d scipy sparse array got a bare IndexError; ``min_data_in_bin`` (LightGBM's) was
    answered "did you mean 'min_data_in_leaf'?" (probe 52)."""
    sp = pytest.importorskip("scipy.sparse")
    X, y = _data(300)
    model = hw.train({"max_depth": 2}, hw.Dataset(X, y), 2)
    one = sp.coo_array(X[0])
    for call in (lambda: model.predict(one), lambda: hw.compile(model).predict(one),
                 lambda: hw.Dataset(one)):
        with pytest.raises(ValueError, match="1-d sparse array"):
            call()
    with pytest.raises(ValueError, match="min_data_in_bin=1") as err:
        hw.train({"min_data_in_bin": 3}, hw.Dataset(X, y), 1)
    assert "did you mean" not in str(err.value)


# -- probe 54: ranking -----------------------------------------------------------------------
def test_continued_ranking_keeps_its_parameters():
    """Continuing a rank:ndcg model without naming its truncation, gains, sigmoid or
    normalisation again trained the new rounds at the defaults: 0.78-0.80 off the model
    trained in one go (XGBoost keeps its booster's)."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, size=(1200, 4)).astype(float)
    y = np.minimum((X[:, 0] + rng.integers(0, 3, 1200)) // 2, 4).astype(float)
    group = np.full(60, 20)
    ds = hw.Dataset(X, y, group=group)
    params = {"objective": "rank:ndcg", "max_depth": 3, "lambdarank_truncation_level": 5,
              "label_gain": [0, 1, 3, 7, 30], "sigmoid": 2.0, "lambdarank_norm": False}
    once = hw.train(params, ds, 6)
    more = hw.train({"objective": "rank:ndcg", "max_depth": 3}, ds, 3,
                    init_model=hw.train(params, ds, 3))
    np.testing.assert_array_equal(more.predict(X), once.predict(X))


def test_a_qid_column_of_a_frame_is_the_queries_not_a_feature():
    """``GBDTRanker.fit(df, y)`` with a ``qid`` column trained on the ids as a feature (11%
    of the importance; predictions on new queries moved by 0.79 with them); XGBRanker takes
    the column as the queries."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, size=(600, 3)).astype(float)
    y = np.minimum(X[:, 0] // 2 + rng.integers(0, 2, 600), 3).astype(float)
    qid = np.repeat(np.arange(30), 20)
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(qid=qid)
    ranker = hw.GBDTRanker(n_estimators=4, max_depth=3).fit(df, y)
    assert list(ranker.feature_names_in_) == ["a", "b", "c"]
    ref = hw.GBDTRanker(n_estimators=4, max_depth=3).fit(df[["a", "b", "c"]], y, qid=qid)
    np.testing.assert_array_equal(ranker.predict(df), ref.predict(df[["a", "b", "c"]]))
    np.testing.assert_array_equal(ranker.predict(df.assign(qid=0)), ranker.predict(df))
    with pytest.raises(ValueError, match="'qid' column"):
        hw.GBDTRanker(n_estimators=2).fit(df, y, qid=qid)


def test_small_names_of_the_peers_are_understood():
    """``metric=""`` is LightGBM's default metric (it was refused); ``boost_from_average``
    and XGBoost's ``ndcg-`` get named errors (a bare TypeError for the latter; probes 53,
    54)."""
    from hardwood.ranking import ranking_metric

    X, y = _data(300)
    ds = hw.Dataset(X, y)
    model = hw.train({"metric": ""}, ds, 2, valid_sets=[ds], valid_names=["t"])
    assert list(model.evals_result["t"]) == ["rmse"]
    with pytest.raises(ValueError, match="boost_from_average=True"):
        hw.train({"boost_from_average": False}, ds, 1)
    with pytest.raises(ValueError, match="'-' variant"):
        ranking_metric("ndcg-", np.array([1.0, 0.0]), np.array([0.2, 0.1]), np.array([0, 2]))


def test_xgboosts_lambdarank_normalisations_are_named():
    """``lambdarank_normalization`` was answered "did you mean 'lambdarank_norm'?", which
    gives another model than XGBoost's (probe 54)."""
    X, y = _data(200)
    ds = hw.Dataset(X, np.minimum(np.abs(y).round(), 3), group=[100, 100])
    for name in ("lambdarank_normalization", "lambdarank_score_normalization"):
        with pytest.raises(ValueError, match="LightGBM's LambdaMART") as err:
            hw.train({"objective": "rank:ndcg", name: False}, ds, 1)
        assert "did you mean" not in str(err.value)
