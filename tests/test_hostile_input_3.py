"""Hostile input, third probe: silent wrong answers, crashes and unclear errors a newcomer who
knows XGBoost, LightGBM and scikit-learn found. One small test per defect; the rules they hold
are listed in docs/checks.md."""
import numpy as np
import pytest

import hardwood


def _xy(n=300, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, X[:, 0]


# -- a class whose rows all weigh 0 keeps its column -------------------------------------------
def test_classifier_keeps_a_class_whose_rows_all_weigh_zero():
    """The class was dropped: predict_proba had K-1 columns and classes_ lacked it, where
    scikit-learn and XGBoost keep it (classes_ come from all the labels)."""
    X, x0 = _xy()
    y = np.array(["a", "b", "c"])[np.digitize(x0, [-0.5, 0.5])]
    w = (y != "b").astype(float)
    clf = hardwood.GBDTClassifier(n_estimators=20).fit(X, y, sample_weight=w)
    assert clf.classes_.tolist() == ["a", "b", "c"]
    proba = clf.predict_proba(X)
    assert proba.shape == (300, 3)
    assert proba[:, 1].max() < 0.05  # a class never seen with weight is improbable
    assert set(clf.predict(X)) <= {"a", "c"}
    # still: fewer than two classes with weight is an error
    with pytest.raises(ValueError, match="only one class: 'a'"):
        hardwood.GBDTClassifier(n_estimators=2).fit(X, y, sample_weight=(y == "a") * 1.0)


# -- binning a column of -inf and +inf ---------------------------------------------------------
def test_bin_edges_of_minus_and_plus_inf_are_not_nan():
    """-inf next to +inf gave a NaN edge (their midpoint), which no value is <=: the two
    values fell in one bin, and the threshold saved was NaN."""
    from hardwood.data.binning import BinMapper, edges_from_counts

    e = edges_from_counts(np.array([-np.inf, np.inf]), None, 255)
    assert not np.isnan(e).any() and e[0] < np.inf
    x = np.array([-np.inf, np.inf, -np.inf, np.inf])[:, None]
    bm = BinMapper(max_bin=16).fit(x, np.zeros(1, bool), np.zeros(1, np.int64))
    bins = bm.transform(x)[0]
    assert bins[0, 0] != bins[1, 0] and bins[0, 0] == bins[2, 0]
    for b in range(len(bm.upper_edges[0]) - 1):
        assert not np.isnan(bm.threshold(0, b))


# -- a LibSVM feature id near 1e8 --------------------------------------------------------------
def test_libsvm_huge_feature_id_is_a_clear_error(tmp_path):
    """A feature id of 1e8 made a column for every id up to it: 7 GB of names in the reader,
    then a MemoryError (or the process killed) binning 1e8 fields."""
    import scipy.sparse as sp

    from hardwood.data.readers import read_libsvm

    path = tmp_path / "hashed.svm"
    path.write_text("1 1:0.5 3:1\n# a comment\n0 2:1 100000000:1\n")
    with pytest.raises(ValueError, match=r"hashed\.svm.*feature id 100000000 \(data line 2\).*"
                                         r"at most 4194304"):
        read_libsvm(str(path))
    # a matrix that wide is refused before anything per column is made
    X = sp.csr_matrix((np.ones(2), np.array([0, 99_999_999]), np.array([0, 1, 2])),
                      shape=(2, 100_000_000))
    with pytest.raises(ValueError, match="X has 100000000 features.*at most 4194304"):
        hardwood.Dataset(X, np.array([0.0, 1.0]))


# -- forests: class_weight values ------------------------------------------------------------
@pytest.mark.parametrize("bootstrap", [True, False])
def test_forest_class_weight_must_be_finite_non_negative_and_leave_a_weight(bootstrap):
    """A negative or NaN class weight trained silently without bootstrap (every prediction one
    class) and failed in numpy's draw with it ("Probabilities are not non-negative"); +inf gave
    NaN probabilities; weights that zero every row grew trees as if there were no weights."""
    X, x0 = _xy()
    y = (x0 > 0).astype(int)
    for bad in (-1.0, np.nan, np.inf, None, "2"):
        with pytest.raises(ValueError, match=r"class_weight\[0\] must be a finite number >= 0"):
            hardwood.RandomForestClassifier(n_estimators=2, class_weight={0: bad},
                                            bootstrap=bootstrap).fit(X, y)
    for cw, sw in (({0: 0, 1: 0}, None), ({0: 0}, (y == 0) * 1.0)):
        with pytest.raises(ValueError, match="gives every row weight 0"):
            hardwood.RandomForestClassifier(n_estimators=2, class_weight=cw,
                                            bootstrap=bootstrap).fit(X, y, sample_weight=sw)
    p = hardwood.RandomForestClassifier(n_estimators=5, class_weight={0: 0.0, 1: 2},
                                        bootstrap=bootstrap).fit(X, y).predict_proba(X)
    assert np.isfinite(p).all() and p[:, 0].max() == 0.0  # class 0 never counts


# -- a model edited after predicting ---------------------------------------------------------
@pytest.mark.parametrize("runtime", [None, "pred", "auto"])
def test_edited_model_never_predicts_from_a_stale_cache(runtime):
    """Model.predict kept its packed trees and compiled runtimes keyed by the tree list, its
    length and its last tree: a tree put in another's place, a tree's arrays changed in place,
    or (runtime=...) a new base_score or objective were silently ignored."""
    import copy
    import pickle

    X, x0 = _xy()
    model = hardwood.train({"max_depth": 2}, hardwood.Dataset(X, x0), num_boost_round=4)

    def fresh(m):  # the same model, without caches (a pickle drops them)
        return pickle.loads(pickle.dumps(m))

    m = copy.deepcopy(model)
    before = m.predict(X, runtime=runtime)
    m.base_score = m.base_score + 10
    np.testing.assert_allclose(m.predict(X, runtime=runtime), before + 10)
    m.objective = "binary:logistic"
    np.testing.assert_allclose(m.predict(X, runtime=runtime), 1 / (1 + np.exp(-before - 10)),
                               rtol=1e-6)
    m = copy.deepcopy(model)
    m.predict(X, runtime=runtime)
    m.trees[0] = m.trees[1]  # another tree in the list's place
    np.testing.assert_allclose(m.predict(X, runtime=runtime), fresh(m).predict(X), atol=1e-6)
    # a tree's arrays: changed in place is an error (the model packed them); replaced is seen
    with pytest.raises(ValueError, match="read-only"):
        m.trees[2].value[:] = 0.0
    m.trees[2].value = np.zeros_like(m.trees[2].value)
    np.testing.assert_allclose(m.predict(X, runtime=runtime), fresh(m).predict(X), atol=1e-6)
    np.testing.assert_allclose(m.predict(X, output="contrib").sum(axis=1),
                               m.predict(X, output="raw"), atol=1e-5)


# -- Dask estimators: labels and feature counts ------------------------------------------------
def test_dask_classifier_labels_and_predict_width():
    """DaskGBDTClassifier coded an eval_set label unseen in training as its neighbour in the
    sorted classes ('ab' between 'a' and 'b' scored as 'b'); a NaN label became a class of its
    own in both Dask classifiers; Dask predict on the wrong column count failed only at
    compute, in a worker's traceback."""
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    import hardwood.dask as hd

    X, x0 = _xy(n=200)
    y = np.where(x0 > 0, "b", "a")
    dX, dy = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=":0"):
        yv = da.from_array(np.where(x0[:50] > 0, "ab", "a"), chunks=50)
        with pytest.raises(ValueError, match=r"eval_set 0 labels \['ab'\] were not seen"):
            hd.DaskGBDTClassifier(n_estimators=2).fit(dX, dy, eval_set=[(dX[:50], yv)])
        yn = (x0 > 0).astype(float)
        yn[3] = np.nan
        for est in (hd.DaskGBDTClassifier(n_estimators=2),
                    hd.DaskRandomForestClassifier(n_estimators=2)):
            with pytest.raises(ValueError, match="y contains NaN"):
                est.fit(dX, da.from_array(yn, chunks=100))
        reg = hd.DaskGBDTRegressor(n_estimators=2).fit(dX, da.from_array(x0, chunks=100))
        with pytest.raises(ValueError, match="X has 2 features, but the model/training data "
                                             "has 3"):
            reg.predict(dX[:, :2])  # at once, not at compute
        assert reg.predict(dX).compute().shape == (200,)


# -- a compiled runtime's out= -------------------------------------------------------------------
@pytest.mark.parametrize("runtime", ["naive", "pred", "vpred", "quickscorer", "codegen"])
def test_compiled_predict_refuses_a_read_only_out(runtime):
    """A read-only out= reached the kernels: a Numba TypingError (one row, pred/vpred/
    quickscorer) or numpy's "assignment destination is read-only"."""
    X, x0 = _xy()
    c = hardwood.compile(hardwood.train({"max_depth": 2}, hardwood.Dataset(X, x0), 3), runtime)
    for rows in (X, X[:1]):
        out = np.zeros((len(rows), 1))
        out.flags.writeable = False
        with pytest.raises(ValueError, match="out must be a writeable numpy array, got a "
                                             "read-only array"):
            c.predict(rows, output="raw", out=out)
    with pytest.raises(ValueError, match="got list"):
        c.predict(X[:2], output="raw", out=[[0.0], [0.0]])
    out = np.zeros((1, 1))
    assert c.predict(X[:1], output="raw", out=out)[0] == out[0, 0] != 0.0


# -- GBDTRanker: the queries given twice ---------------------------------------------------------
def test_ranker_refuses_group_and_qid_together():
    """group= won and qid= was ignored without a word (hardwood.Dataset refuses both)."""
    X, x0 = _xy()
    y = np.digitize(x0, [-0.5, 0.5])
    with pytest.raises(ValueError, match="not both"):
        hardwood.GBDTRanker(n_estimators=2).fit(X, y, group=[150, 150], qid=np.arange(300))
    with pytest.raises(ValueError, match="eval_group or eval_qid, not both"):
        hardwood.GBDTRanker(n_estimators=2).fit(X, y, group=[150, 150], eval_set=[(X, y)],
                                                eval_group=[[300]], eval_qid=[np.zeros(300)])
    hardwood.GBDTRanker(n_estimators=2).fit(X, y, qid=np.repeat([0, 1], 150))


# -- Dataset.from_batches: weights all zero ------------------------------------------------------
def test_from_batches_refuses_weights_that_are_all_zero(tmp_path):
    """hardwood.Dataset refuses them; from_batches took them, and training then failed with
    numpy's ZeroDivisionError ("Weights sum to zero")."""
    X, x0 = _xy()
    batches = [(X[:150], x0[:150], np.zeros(150)), (X[150:], x0[150:], np.zeros(150))]
    with pytest.raises(ValueError, match="weight is zero for every row"):
        hardwood.Dataset.from_batches(lambda: iter(batches), str(tmp_path))
    batches[1] = (X[150:], x0[150:], np.ones(150))
    ds = hardwood.Dataset.from_batches(lambda: iter(batches), str(tmp_path))
    assert hardwood.train({"max_depth": 2}, ds, num_boost_round=2).num_trees == 2


def test_eval_metric_must_be_names():
    """eval_metric=5 gave "TypeError: 'int' object is not iterable"; a dict was read as its
    keys."""
    X, x0 = _xy()
    ds = hardwood.Dataset(X, x0)
    for bad in (5, {"rmse": 1}, ["rmse", 2], np.float64(1.0)):
        with pytest.raises(TypeError, match="eval_metric must be a metric name or a list"):
            hardwood.train({"eval_metric": bad}, ds, num_boost_round=1, valid_sets=[ds])
    m = hardwood.train({"eval_metric": ("rmse", "mae")}, ds, num_boost_round=1,
                       valid_sets=[hardwood.Dataset(X, x0, reference=ds)])
    assert set(m.evals_result["valid_0"]) == {"rmse", "mae"}


def test_valid_names_distinct_and_num_class_only_for_multiclass():
    """Two valid sets of one name: the second's scores overwrote the first's in evals_result,
    and early stopping followed the mix. num_class with a regression or binary objective was
    ignored without a word (LightGBM refuses it)."""
    X, x0 = _xy()
    ds = hardwood.Dataset(X, x0)
    v1, v2 = (hardwood.Dataset(X[:100], x0[:100] + s, reference=ds) for s in (0.0, 100.0))
    with pytest.raises(ValueError, match="valid_names must be distinct; 'a' names two"):
        hardwood.train({}, ds, 3, valid_sets=[v1, v2], valid_names=["a", "a"])
    with pytest.raises(TypeError, match="valid_names must be strings"):
        hardwood.train({}, ds, 3, valid_sets=[v1, v2], valid_names=[0, 1])
    m = hardwood.train({}, ds, 3, valid_sets=[v1, v2], valid_names=["a", "b"])
    assert m.evals_result["a"]["rmse"][-1] < 10 < m.evals_result["b"]["rmse"][-1]
    for objective, y in (("reg:squarederror", x0), ("binary:logistic", (x0 > 0) * 1.0)):
        with pytest.raises(ValueError, match="num_class=3 applies to multiclass objectives"):
            hardwood.train({"objective": objective, "num_class": 3}, hardwood.Dataset(X, y), 2)


# -- forests: a warm start checks the frame's column names -----------------------------------
def test_forest_warm_start_checks_the_column_names():
    """Validating y forgot the fitted feature names, so a warm start on a frame with renamed
    or reordered columns grew its new trees on them with only a warning, and the forest lost
    feature_names_in_."""
    import pandas as pd

    X, x0 = _xy()
    df = pd.DataFrame(X, columns=list("abc"))
    for bad in (df.rename(columns={"a": "z"}), df[["c", "b", "a"]]):
        rf = hardwood.RandomForestRegressor(n_estimators=2, warm_start=True).fit(df, x0)
        rf.n_estimators = 4
        with pytest.raises(ValueError, match="feature names should match"):
            rf.fit(bad, x0)
    rf = hardwood.RandomForestRegressor(n_estimators=2, warm_start=True).fit(df, x0)
    rf.n_estimators = 4
    rf.fit(df, x0)
    assert len(rf.forest_.trees) == 4 and rf.feature_names_in_.tolist() == ["a", "b", "c"]


def test_model_cache_key_is_constant_time_and_sees_list_edits():
    """The caches' key counts the tree list's edits instead of comparing every tree at every
    call (one row through Model.predict paid 3x for a 500-tree model): every way of changing
    the list still drops the cache, and a list that no longer matches tree_group is an error
    (a tree appended without its group corrupted memory)."""
    from hardwood.model.model import TreeList

    rng = np.random.default_rng(0)
    X = rng.random((200, 3))
    y = X[:, 0] + rng.random(200) * 0.1

    def model():
        m = hardwood.train({"max_depth": 2}, hardwood.Dataset(X, y), num_boost_round=6)
        m.predict(X)  # caches filled
        m.predict(X, runtime="auto")
        return m

    def fresh(m):  # the same trees in a model with no caches
        return hardwood.Model(list(m.trees), np.zeros(len(m.trees), dtype=np.int32),
                              m.base_score, m.objective, m.n_outputs, m.info)

    m = model()
    assert isinstance(m.trees, TreeList)
    assert len(m._trees_version()) == 6  # no tree in the key: O(1) in the number of trees
    for edit in (lambda t: t.__setitem__(0, t[1]), lambda t: t.reverse(),
                 lambda t: t.sort(key=lambda tree: tree.n_nodes)):
        m = model()
        edit(m.trees)
        for runtime in (None, "auto"):
            np.testing.assert_allclose(m.predict(X, runtime=runtime),
                                       fresh(m).predict(X), rtol=1e-6)
    for edit in (lambda t: t.pop(), lambda t: t.append(t[0]), lambda t: t.insert(0, t[-1]),
                 lambda t: t.__delitem__(slice(0, 2)), lambda t: t.extend(t[:1])):
        m = model()
        edit(m.trees)
        for runtime in (None, "auto"):
            with pytest.raises(ValueError, match="tree_group"):
                m.predict(X, runtime=runtime)
        with pytest.raises(ValueError, match="tree_group"):
            hardwood.compile(m)
        m.tree_group = np.zeros(len(m.trees), dtype=np.int32)
        np.testing.assert_allclose(m.predict(X, runtime="auto"), fresh(m).predict(X),
                                   rtol=1e-6)
    m = model()
    m.trees = list(m.trees)[:3]  # a plain list assigned: a TreeList, counted from here
    m.tree_group = m.tree_group[:3]
    assert isinstance(m.trees, TreeList)
    np.testing.assert_allclose(m.predict(X), fresh(m).predict(X))
    with pytest.raises(TypeError, match=r"compile\(estimator\.model_\)"):
        hardwood.compile(hardwood.GBDTRegressor(n_estimators=2).fit(X, y))
