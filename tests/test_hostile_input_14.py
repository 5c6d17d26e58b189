"""Hostile and unusual input, round 14 (session 24: probes 35-40). Each test's docstring says
what hardwood did before."""
import numpy as np
import pytest

import hardwood as hw

sp = pytest.importorskip("scipy.sparse")


@pytest.mark.parametrize("runtime", ["naive", "struct+", "vpred", "codegen"])
@pytest.mark.parametrize("objective", ["reg:squarederror", "multi:softmax", "multi:softprob"])
def test_compiled_models_predict_wide_sparse_matrices_in_blocks_of_rows(monkeypatch, runtime,
                                                                       objective):
    """``hw.compile(model).predict`` made the whole sparse matrix dense at once (``Model.predict``
    did so too until session 23): 5,000 x 200,000 took 8.4 GB. It now takes a block of rows
    at a time, into ``out`` where given, every output the same as the dense matrix's."""
    from hardwood.data import convert

    rng = np.random.default_rng(3)
    n, d, nnz = 400, 60, 3000
    X = sp.csr_matrix((rng.random(nnz), (rng.integers(0, n, nnz), rng.integers(0, d, nnz))),
                      shape=(n, d))
    y = np.asarray(X[:, :5].sum(axis=1)).ravel()
    params = {"max_depth": 3, "objective": objective}
    if objective.startswith("multi"):
        params["num_class"] = 3
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    m = hw.train(params, hw.Dataset(X, y), num_boost_round=4)
    c = hw.compile(m, runtime=runtime)
    whole = {out: c.predict(X.toarray(), output=out) for out in ("value", "raw", "leaf")}
    monkeypatch.setattr(convert, "SPARSE_BLOCK_CELLS", 7 * d)  # blocks of 7 rows
    for output, expected in whole.items():
        for S in (X, X.tocsc()):
            got = c.predict(S, output=output)
            assert got.shape == expected.shape
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
        out = (np.empty(expected.shape, np.int32) if output == "leaf"
               else np.empty((n, m.n_outputs)))
        got = c.predict(X, output=output, out=out)
        assert got.shape == expected.shape and np.shares_memory(got, out)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="out must be"):
        c.predict(X, output="raw", out=np.empty((n - 1, m.n_outputs)))


@pytest.mark.parametrize("base_score", [1e-9, 5e-7, 0.3, 0.9999999, 1 - 1e-12])
def test_logistic_base_scores_are_bounded_as_xgboost_bounds_them(base_score):
    """XGBoost bounds a logistic ``base_score`` to [1e-6, 1 - 1e-6] and takes its logit in
    float32. hardwood took the value as given, in training and in imported models: margins
    6.9 below XGBoost's at 1e-9, and 2.4 above it at 0.9999999 (probabilities 1000x off)."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(9)
    X = rng.integers(-20, 20, size=(2000, 4)).astype(float)  # identical bins in both
    y = ((X[:, 0] + X[:, 1] ** 2 / 20) > 1).astype(float)
    params = {"objective": "binary:logistic", "base_score": base_score, "max_depth": 3}
    b = xgb.train(params, xgb.DMatrix(X, y), 3)
    expected = b.predict(xgb.DMatrix(X), output_margin=True)
    imported = hw.import_model(b)
    trained = hw.train(params, hw.Dataset(X, y), 3)
    np.testing.assert_allclose(imported.predict(X, output="raw"), expected, rtol=0, atol=2e-6)
    np.testing.assert_allclose(trained.predict(X, output="raw"), expected, rtol=0, atol=2e-6)


def test_ranker_fit_on_a_dataset_takes_its_queries_and_refuses_others():
    """``GBDTRanker.fit(dataset, None, group=B)`` required ``group=`` and then trained on the
    Dataset's own queries, ignoring ``B`` (even a malformed one); ``fit(dataset)`` was a
    TypeError. The Dataset's queries are now used, and queries given beside them refused."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = rng.integers(0, 4, 300).astype(float)
    ds = hw.Dataset(X, y, group=[100, 100, 100])
    a = hw.GBDTRanker(n_estimators=5).fit(ds)
    b = hw.GBDTRanker(n_estimators=5).fit(X, y, group=[100, 100, 100])
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    for queries in ({"group": [150, 150]}, {"qid": np.repeat([0, 1, 2], 100)}):
        with pytest.raises(ValueError, match="carries its own queries"):
            hw.GBDTRanker().fit(ds, **queries)
    with pytest.raises(ValueError, match="without queries"):
        hw.GBDTRanker().fit(hw.Dataset(X, y))
    with pytest.raises(ValueError, match="needs y"):
        hw.GBDTRanker().fit(X, group=[100, 100, 100])
    np.testing.assert_array_equal(ds.get_group(), [100, 100, 100])  # LightGBM's sizes
    assert hw.Dataset(X, y).get_group() is None


def test_ranking_names_and_query_inputs_get_errors_that_name_them():
    """``eval_metric='ndcg@³'`` passed ``str.isdigit`` to a bare ``int()`` error, a cutoff past
    int32 overflowed in the kernel, qids of mixed types were a bare TypeError from
    ``np.unique``, and one weight per query in a Dataset got a shape error naming neither."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = rng.integers(0, 3, 60).astype(float)
    ds = hw.Dataset(X, y, group=[20, 20, 20])
    for name in ["ndcg@\u00b3", "ndcg@\u0663", "ndcg@99999999999999999999", "map@0"]:
        with pytest.raises(ValueError, match="cutoff after '@' must be a positive integer"):
            hw.train({"objective": "rank:ndcg", "eval_metric": name}, ds, 1, valid_sets=[ds])
    mixed = hw.Dataset(X, y, qid=np.array([1] * 20 + ["1"] * 20 + [2.0] * 20, dtype=object))
    np.testing.assert_array_equal(mixed.get_group(), [20, 20, 20])
    with pytest.raises(ValueError, match="not contiguous"):
        hw.Dataset(X, y, qid=np.array([1] * 20 + ["a"] * 20 + [1] * 20, dtype=object))
    with pytest.raises(ValueError, match="one per query"):
        hw.Dataset(X, y, group=[20, 20, 20], weight=[1.0, 2.0, 3.0])


@pytest.mark.parametrize("categorical_feature", [["a", "b"], ["b"], []])
def test_lightgbm_category_lists_that_do_not_line_up_are_refused_with_the_cause(
        categorical_feature):
    """LightGBM lists the categories of every pandas 'category' column of its training
    frame, whichever it trained as categorical. With ``categorical_feature`` naming an int
    column, or leaving the category column numeric, the import failed with a message blaming
    the valid model, or (``["b"]``) gave column ``b`` the categories of column ``a``. Both are
    now refused with the cause and the way round it."""
    lgb = pytest.importorskip("lightgbm")
    pd = pytest.importorskip("pandas")
    from hardwood.importers import ImportModelError

    rng = np.random.default_rng(3)
    n = 600
    df = pd.DataFrame({"a": pd.Categorical(rng.choice(list("pqrstu"), n)),
                       "b": rng.integers(0, 8, n), "c": rng.normal(size=n)})
    y = df["a"].cat.codes * 1.0 + np.sin(df["b"] * 1.3) * 2 + df["c"]
    bst = lgb.train({"verbose": -1, "min_data_per_group": 5, "cat_smooth": 1},
                    lgb.Dataset(df, y, categorical_feature=categorical_feature), 5)
    with pytest.raises(ImportModelError, match="do not line up.*categorical_feature equal"):
        hw.import_model(bst)


def test_cli_refuses_a_header_of_numbers_and_takes_constraint_strings(tmp_path, capsys):
    """A CSV without a header, given without ``--no-header``, lost its first row to the
    header (2499 of 2500 rows trained, features named by its numbers). ``--param`` split
    XGBoost's ``(1,0,-1)`` and ``[[0,1],[2,3]]`` on their commas, so interaction constraints
    could not be given at all. Labels of 1e308 and ``device=cuda`` without a GPU printed
    tracebacks (exit 1)."""
    pytest.importorskip("pandas")
    from hardwood.cli import main

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=300)
    raw = tmp_path / "raw.csv"
    np.savetxt(raw, np.column_stack([X, y]), delimiter=",")
    named = tmp_path / "named.csv"
    np.savetxt(named, np.column_stack([X, y]), delimiter=",", header="x0,x1,x2,x3,y",
               comments="")

    def run(*argv):
        rc = main(list(argv))
        got = capsys.readouterr()
        return rc, got.out + got.err

    rc, err = run("train", "--data", str(raw), "--label", "4", "--out", str(tmp_path / "a.json"))
    assert rc == 2 and "holds only numbers" in err and "--no-header" in err
    rc, err = run("train", "--data", str(raw), "--label", "4", "--no-header",
                  "--out", str(tmp_path / "a.json"))
    assert rc == 0 and "300 rows" in err
    rc, err = run("train", "--data", str(raw), "--label", "4", "--header",
                  "--out", str(tmp_path / "b.json"))
    assert rc == 0 and "299 rows" in err  # asked for: the first line names the columns
    for param in ("monotone_constraints=(1,-1,0,0)",
                  "interaction_constraints=[[0,1],[2,3]]",
                  "interaction_constraints=[[x0,x1],[x2,x3]]"):
        out = tmp_path / "c.json"
        rc, err = run("train", "--data", str(named), "--label", "y", "-q", "--rounds", "5",
                      "--param", param, "--out", str(out))
        assert rc == 0, err
        m = hw.load(str(out))
        key, _ = param.split("=", 1)
        expected = {"monotone_constraints": [1, -1, 0, 0],
                    "interaction_constraints": [[0, 1], [2, 3]]}[key]
        assert m.params[key] == expected
    huge = tmp_path / "huge.csv"
    np.savetxt(huge, np.column_stack([X, np.where(y > 0, 1e308, -1e308)]), delimiter=",",
               header="x0,x1,x2,x3,y", comments="")
    rc, err = run("train", "--data", str(huge), "--label", "y", "--out", str(tmp_path / "h.json"))
    assert rc == 2 and "Traceback" not in err and "not finite" in err


@pytest.mark.parametrize("bootstrap", [False, True])
def test_forest_weights_whose_sum_overflows_are_refused(bootstrap):
    """Two sample weights of 1e308 (each finite, their sum not) trained a forest that
    predicted NaN, with numpy's overflow warnings only; with bootstrap the error was numpy's
    "probabilities do not sum to 1"."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = X[:, 0] + rng.normal(size=200)
    w = np.ones(200)
    w[:2] = 1e308
    for est, target in ((hw.RandomForestRegressor, y), (hw.RandomForestClassifier, y > 0)):
        with pytest.raises(ValueError, match="sample_weight sums to inf"):
            est(n_estimators=3, bootstrap=bootstrap, random_state=0).fit(X, target,
                                                                          sample_weight=w)


@pytest.mark.parametrize("objective", ["regression", "binary"])
def test_num_leaves_brings_lightgbms_defaults(objective):
    """``{"objective": "binary", "num_leaves": 15}`` trained with XGBoost's defaults
    (``learning_rate`` 0.3, ``reg_lambda`` 1, ``min_child_weight`` 1): 0.88 off LightGBM's
    regression after 30 rounds, 0.178 in probability. ``num_leaves`` now brings LightGBM's
    defaults, each unless given, ``min_data_in_leaf``'s 20 too (session 25: LightGBM's
    missing rule, which its counts need), so that the dict alone trains LightGBM's model."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 30, size=(3000, 5)).astype(float)  # identical bins in both
    y = np.sin(X[:, 0] / 3) + X[:, 1] / 10 * (X[:, 2] > 15) + rng.normal(0, .3, 3000)
    if objective == "binary":
        y = (y > np.median(y)).astype(float)
    params = {"objective": objective, "num_leaves": 15}
    b = lgb.train(dict(params, verbose=-1, max_bin=255),
                  lgb.Dataset(X, y, params={"max_bin": 255}), 30)
    m = hw.train(params, hw.Dataset(X, y, max_bin=255), 30)
    np.testing.assert_allclose(m.predict(X), b.predict(X), rtol=0, atol=1e-6)
    assert (m.params["learning_rate"], m.params["reg_lambda"], m.params["min_child_weight"],
            m.params["min_data_in_leaf"]) == (0.1, 0.0, 1e-3, 20)
    given = hw.train(dict(params, learning_rate=0.3, lambda_l2=1.0, min_child_weight=1.0,
                          min_child_samples=5), hw.Dataset(X, y, max_bin=255), 2)
    assert (given.params["learning_rate"], given.params["reg_lambda"],
            given.params["min_child_weight"], given.params["min_data_in_leaf"]) \
        == (0.3, 1.0, 1.0, 5)


def test_estimators_name_what_they_take_for_the_peers_parameter_names():
    """``GBDTClassifier(num_leaves=31)`` was Python's bare "unexpected keyword argument",
    where ``hardwood.train`` explains the same names. The estimators keep scikit-learn's
    explicit signatures (get_params, clone, pickling unchanged)."""
    import inspect
    import pickle

    from sklearn.base import clone

    cases = {"num_leaves": "max_leaves here", "lambda_l2": "reg_lambda here",
             "seed": "random_state here", "tree_method": "leave tree_method out",
             "min_data_in_leaf": "min_child_samples here", "n_estimator": "'n_estimators'"}
    for cls in (hw.GBDTRegressor, hw.GBDTClassifier, hw.GBDTRanker):
        for k, hint in cases.items():
            with pytest.raises(TypeError, match=f"unexpected keyword argument '{k}'.*{hint}"):
                cls(**{k: 1})
        est = cls(max_leaves=7, learning_rate=0.2)
        assert "max_leaves" in inspect.signature(cls).parameters
        assert clone(est).get_params() == est.get_params()
        assert pickle.loads(pickle.dumps(est)).get_params() == est.get_params()


def _chain_model(depth, d=100, seed=8):
    """One tree whose left spine splits on ``depth`` distinct features (probe 35's)."""
    from hardwood.model.tree import Tree

    rng = np.random.default_rng(seed)
    n = 2 * depth + 1
    feature = -np.ones(n, int)
    thr = np.zeros(n)
    left = -np.ones(n, int)
    right = -np.ones(n, int)
    value = np.zeros(n)
    cover = np.zeros(n)
    c = 1e6
    feats = rng.permutation(d)[:depth]
    for k in range(depth):
        feature[2 * k], thr[2 * k] = feats[k], rng.normal() * 0.3
        left[2 * k], right[2 * k] = 2 * k + 2, 2 * k + 1
        cover[2 * k] = c
        cr = c * rng.uniform(0.05, 0.5)
        cover[2 * k + 1], value[2 * k + 1] = cr, rng.normal()
        c -= cr
    cover[n - 1], value[n - 1] = c, rng.normal()
    tree = Tree.from_arrays(feature=feature, threshold=thr, left=left, right=right,
                            default_left=np.ones(n, bool), is_categorical=np.zeros(n, bool),
                            cat_offset=-np.ones(n, int), value=value, gain=np.ones(n),
                            cover=cover, count=cover.astype(int))
    X = rng.normal(size=(200, d)) * 0.3 - 0.5
    info = hw.train({"max_depth": 1}, hw.Dataset(X, rng.normal(size=200)), 1).info
    X[:, feats[:min(60, depth)]] -= 1.0  # rows deep down the spine
    return hw.Model([tree], np.zeros(1, dtype=np.int32), np.zeros(1), "reg:squarederror", 1,
                    info), X


def test_shap_values_that_do_not_add_up_on_very_long_paths_warn():
    """TreeSHAP's recursion loses float64 precision on paths of more than about 60
    features (the shap package's alike): at 90 a row's contributions summed to 6.04 where
    its margin was 1.57, without a word. Such rows now warn; shorter paths stay silent."""
    import warnings

    deep, X = _chain_model(90)
    with pytest.warns(RuntimeWarning, match="do not add up to their margin"):
        deep.predict(X, output="contrib")
    with pytest.warns(RuntimeWarning, match="do not add up to their margin"):
        deep.predict(X[:3], output="interaction")
    shallow, X = _chain_model(30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        contrib = shallow.predict(X, output="contrib")
    np.testing.assert_allclose(contrib.sum(axis=1), shallow.predict(X, output="raw"),
                               rtol=0, atol=1e-9)


def test_feature_importances_take_an_iteration_range():
    """Importances counted every tree, with no way to ask for the best rounds only:
    LightGBM's ``feature_importance`` counts up to its best iteration, so an imported
    LightGBM model kept past it gave other split counts than LightGBM's."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    y = X[:, 0] + X[:, 1] ** 2 + rng.normal(0, 0.1, 500)
    m = hw.train({"max_depth": 3}, hw.Dataset(X, y), 10)
    first = hw.train({"max_depth": 3}, hw.Dataset(X, y), 4)
    for kind in ("weight", "gain", "total_cover"):
        np.testing.assert_allclose(m.feature_importances(kind, iteration_range=(0, 4)),
                                   first.feature_importances(kind))
    np.testing.assert_array_equal(m.feature_importances("weight", iteration_range=(0, 0)),
                                  m.feature_importances("weight"))
    with pytest.raises(ValueError, match="outside the model's 10 rounds"):
        m.feature_importances("weight", iteration_range=(0, 11))


def test_page_caches_rebuilt_or_full_or_files_get_errors_that_name_the_cause(tmp_path,
                                                                              monkeypatch):
    """A Dataset whose cache_dir another Dataset rebuilt with fewer rows or other page sizes
    failed with "page ... starts at row 500; the pages before it end at row 5000" or "No
    such file or directory"; a full disk was a bare "No space left on device"; a cache_dir
    that is a file a bare FileExistsError."""
    import errno

    from hardwood.data import page_file

    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(6000, 4)), 2)
    y = X[:, 0] + rng.normal(scale=.1, size=6000)

    def batches(n, step=1000):
        return lambda: ((X[a:min(a + step, n)], y[a:min(a + step, n)]) for a in range(0, n, step))

    folder = tmp_path / "cache"
    first = hw.Dataset.from_batches(batches(6000), folder, page_bytes=20000)
    hw.Dataset.from_batches(batches(2000), folder, page_bytes=20000)  # fewer rows, same folder
    with pytest.raises(ValueError, match="another Dataset has rebuilt its cache_dir"):
        hw.train({"max_depth": 2}, first, 2)
    again = hw.Dataset.from_batches(batches(6000), folder, page_bytes=20000)
    hw.Dataset.from_batches(batches(6000), folder, page_bytes=200000)  # fewer, larger pages
    with pytest.raises(ValueError, match="another Dataset has rebuilt its cache_dir"):
        hw.train({"max_depth": 2}, again, 2)
    third = hw.Dataset.from_batches(batches(6000), folder, page_bytes=20000)
    (folder / "page-000002.hwp").unlink()
    with pytest.raises(ValueError, match="is gone: another Dataset has rebuilt"):
        hw.train({"max_depth": 2}, third, 2)
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(ValueError, match="is a file; give a folder"):
        hw.Dataset.from_batches(batches(2000), a_file)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(page_file, "atomic_open", full)
    with pytest.raises(OSError, match="cannot write page .*No space left.*another cache_dir"):
        hw.Dataset.from_batches(batches(2000), tmp_path / "full")


def test_estimators_check_early_stopping_rounds_before_asking_for_eval_set():
    """``GBDTClassifier(early_stopping_rounds=0)`` without ``eval_set`` said it "needs a
    validation set", hiding that 0 is no count of rounds (with one: "must be a positive
    integer")."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    for es in (0, -2, 2.5):
        for eval_set in (None, [(X, y)]):
            with pytest.raises(ValueError, match="early_stopping_rounds must be a positive"):
                hw.GBDTClassifier(n_estimators=3, early_stopping_rounds=es).fit(
                    X, y, eval_set=eval_set)


def test_xgboost_cox_models_are_imported():
    """XGBoost's ``survival:cox`` models were refused by the importer; they predict the
    hazard ratio exp(margin), from a base score on the log scale."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    t = rng.exponential(np.exp(-np.nan_to_num(X[:, 0])))
    y = np.where(rng.random(1000) < 0.3, -t, t)  # negative: censored
    b = xgb.train({"objective": "survival:cox", "max_depth": 3}, xgb.DMatrix(X, y), 20)
    m = hw.import_model(b)
    assert m.objective == "survival:cox"
    np.testing.assert_allclose(m.predict(X, output="raw"),
                               b.predict(xgb.DMatrix(X), output_margin=True), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(m.predict(X), b.predict(xgb.DMatrix(X)), rtol=1e-5)
    with pytest.raises(ValueError, match="cannot train"):
        hw.train({"objective": "survival:cox"}, hw.Dataset(X, np.abs(y)), 2)


def test_a_subclass_passing_kwargs_on_takes_its_bases_names():
    """Probe 41: a user's subclass whose ``__init__`` passes ``**kwargs`` to the estimator's
    could not be built once unknown names were checked before ``__init__``
    (``My(foo=2, n_estimators=3)``: "unexpected keyword argument 'n_estimators'")."""
    class My(hw.GBDTRegressor):
        def __init__(self, foo=1, **kwargs):
            super().__init__(**kwargs)
            self.foo = foo

    est = My(foo=2, n_estimators=3, max_leaves=4)
    assert (est.foo, est.n_estimators, est.max_leaves) == (2, 3, 4)
    with pytest.raises(TypeError, match="'num_leaves'; num_leaves is max_leaves here"):
        My(num_leaves=3)


def test_errors_about_a_value_name_the_alias_the_user_gave():
    """``{"min_data": 2.5}`` was reported as "parameter 'min_data_in_leaf' must be an
    integer", a name the user never wrote (probe 41); ``eta=inf`` as 'learning_rate'."""
    rng = np.random.default_rng(0)
    ds = hw.Dataset(rng.random((50, 2)), rng.random(50))
    for params, message in (({"min_data": 2.5}, r"'min_data' \(min_data_in_leaf\)"),
                            ({"eta": float("inf")}, r"'eta' \(learning_rate\) must be a finite"),
                            ({"lambda_l2": -1}, r"'lambda_l2' \(reg_lambda\) must be >= 0"),
                            ({"learning_rate": -1}, r"'learning_rate' must be > 0")):
        with pytest.raises((TypeError, ValueError), match=message):
            hw.train(params, ds, 1)
