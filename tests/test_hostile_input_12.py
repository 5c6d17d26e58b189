"""Inputs and parameters tried as a new user would (session 22): each test names what
hardwood did before."""
import os

import numpy as np
import pytest

import hardwood as hw
from hardwood.predict import naive


def _classes(seed=0, n=600, k=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5]) if k == 3
         else (X[:, 0] > 0).astype(int))
    return X, y


def test_continuing_under_the_other_librarys_name_of_a_loss_is_refused():
    """Continuing multi:softprob's trees with LightGBM's 'multiclass' (another hessian), or
    the reverse, mixed two losses: 0.19 off either library's model, without a word. Names
    of one loss still continue each other, and so do 'binary' and 'binary:logistic' (they
    differ in the base score only, which the continued model keeps)."""
    X, y = _classes()
    data = hw.Dataset(X, y)
    for first, then in (("multi:softprob", "multiclass"), ("multiclass", "multi:softprob"),
                        ("softmax", "multi:softmax")):
        m = hw.train({"objective": first, "num_class": 3, "max_depth": 2}, data, 2)
        with pytest.raises(ValueError, match="define that loss differently"):
            hw.train({"objective": then, "num_class": 3, "max_depth": 2}, data, 2,
                     init_model=m)
    m = hw.train({"objective": "multiclass", "num_class": 3, "max_depth": 2}, data, 2)
    more = hw.train({"objective": "softmax", "num_class": 3, "max_depth": 2}, data, 2,
                    init_model=m)
    whole = hw.train({"objective": "multiclass", "num_class": 3, "max_depth": 2}, data, 4)
    np.testing.assert_array_equal(more.predict(X), whole.predict(X))
    Xb, yb = _classes(k=2)
    both = hw.Dataset(Xb, yb)
    m = hw.train({"objective": "binary", "max_depth": 2}, both, 2)
    hw.train({"objective": "binary:logistic", "max_depth": 2}, both, 2, init_model=m)
    m = hw.train({"objective": "reg:absoluteerror", "max_depth": 2}, both, 2)
    with pytest.raises(ValueError, match="define that loss differently"):
        hw.train({"objective": "l1", "max_depth": 2}, both, 2, init_model=m)


def test_continuing_a_saved_model_reads_its_objectives_name(tmp_path):
    """The check reads the name the model was trained under from its saved params."""
    X, y = _classes()
    data = hw.Dataset(X, y)
    path = tmp_path / "m.json"
    hw.train({"objective": "multiclass", "num_class": 3, "max_depth": 2}, data, 2).save(path)
    with pytest.raises(ValueError, match="'multiclass'.*'multi:softprob'"):
        hw.train({"objective": "multi:softprob", "num_class": 3}, data, 2,
                 init_model=str(path))


def test_num_leaves_zero_is_refused():
    """LightGBM's num_leaves=0 trained trees without any limit (346 nodes in a round on
    3,000 rows): max_leaves=0 with the depth limit LightGBM's name lifts. LightGBM refuses
    it."""
    X, y = _classes(k=2)
    with pytest.raises(ValueError, match="num_leaves must be >= 2"):
        hw.train({"objective": "binary", "num_leaves": 0}, hw.Dataset(X, y), 1)
    hw.train({"objective": "binary", "max_leaves": 0, "max_depth": 3}, hw.Dataset(X, y), 1)


def test_estimator_fits_a_dataset_of_its_own_max_bin():
    """``fit(hw.Dataset(X, y, max_bin=64))`` failed with "build the Dataset with
    max_bin=256", the estimator's default, though the module says a Dataset's bins are its
    own. It trains on them: the model of ``max_bin=64``."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(800, 3))
    y = X[:, 0] + np.sin(3 * X[:, 1])
    est = hw.GBDTRegressor(n_estimators=5, max_depth=3).fit(hw.Dataset(X, y, max_bin=64))
    ref = hw.GBDTRegressor(n_estimators=5, max_depth=3, max_bin=64).fit(X, y)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))


def test_categorical_continuation_error_names_reference():
    """Rows lacking a category of the model's training could not continue it, and the error
    did not say that ``reference=`` builds them with the training data's categories."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    c = pd.Categorical(rng.integers(0, 5, 500), categories=range(5))
    df = pd.DataFrame({"c": c, "x": rng.normal(size=500)})
    y = df["c"].cat.codes.to_numpy() % 2 + df["x"].to_numpy()
    full = hw.Dataset(df, y)
    m = hw.train({"max_depth": 3}, full, 2)
    part = df["c"].cat.codes.to_numpy() < 4
    with pytest.raises(ValueError, match="reference="):
        hw.train({"max_depth": 3}, hw.Dataset(df[part], y[part]), 2, init_model=m)
    more = hw.train({"max_depth": 3}, hw.Dataset(df[part], y[part], reference=full), 2,
                    init_model=m)
    assert more.num_trees == 4


def _forest(seed, n_trees=60, n_features=6, K=1, cat=False):
    """A trained model and its rows coded for the walk: K outputs (multiclass) or a
    categorical feature (one output), with NaN in the numeric features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3000, n_features))
    X[rng.random(X.shape) < 0.05] = np.nan
    if cat:
        X[:, 0] = rng.integers(0, 12, 3000)
        pd = pytest.importorskip("pandas")
        df = pd.DataFrame(X, columns=[f"f{j}" for j in range(n_features)])
        df["f0"] = pd.Categorical(X[:, 0].astype(int))
        data = hw.Dataset(df, rng.normal(size=3000) + (X[:, 0] % 3))
    else:
        y = rng.integers(0, K, 3000) if K > 1 else np.nan_to_num(X[:, 0]) + rng.normal(size=3000)
        data = hw.Dataset(X, y)
    params = {"max_depth": 5, "objective": "multi:softprob" if K > 1 else "reg:squarederror"}
    if K > 1:
        params["num_class"] = K
    m = hw.train(params, data, n_trees // K)
    return m, m.prepare(df if cat else X)


@pytest.mark.parametrize("K,cat", [(1, False), (3, False), (1, True)])
def test_blocked_reference_walk_equals_the_row_by_row_walk(K, cat):
    """The parallel reference walk takes blocks of rows through each tree in turn (it took
    each row through every tree, 2.3-3.8x slower than XGBoost's predict on 1,000-100,000
    rows): the margins and leaf ids equal the one-row-at-a-time walk's bit for bit, on row
    counts that leave a partial block."""
    m, mat = _forest(K * 10 + cat, K=K, cat=cat)
    f = m.packed()
    args = (f.feature, f.threshold, f.left, f.right, f.default_left, f.is_categorical,
            f.cat_offset)
    for n in (naive.BLOCK_ROWS - 1, naive.BLOCK_ROWS * 7 + 5, mat.shape[0]):
        x = np.ascontiguousarray(mat[:n])
        for t0, t1 in ((0, m.num_trees), (K, m.num_trees - K)):
            outs = [np.zeros((n, m.n_outputs)) for _ in range(2)]
            for run, out in zip((naive.predict_raw_kernel, naive.predict_raw_serial), outs):
                run(x, t0, t1, *args, f.value, f.bitsets, f.roots, f.tree_group,
                    f.n_categories, out)
            np.testing.assert_array_equal(outs[0], outs[1])
            leaves = [np.zeros((n, t1 - t0), np.int32) for _ in range(2)]
            for run, out in zip((naive.predict_leaf_kernel, naive.predict_leaf_serial), leaves):
                run(x, t0, t1, *args, f.bitsets, f.roots, f.n_categories, out)
            np.testing.assert_array_equal(leaves[0], leaves[1])
    assert m.predict(mat[:5], output="raw").shape[0] == 5  # the serial route of predict


def test_model_predict_keeps_a_bounded_number_of_layouts():
    """``Model.predict(runtime=...)`` kept a compiled layout per tree range for the model's
    life: a loop over ``iteration_range`` (staged predictions) kept them all. It keeps the
    last ``COMPILED_KEPT``, and each still predicts as the reference walk."""
    from hardwood.model.model import COMPILED_KEPT
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 3))
    m = hw.train({"max_depth": 2}, hw.Dataset(X, X[:, 0]), COMPILED_KEPT + 6)
    for i in range(1, m.num_trees + 1):
        np.testing.assert_allclose(m.predict(X, iteration_range=(0, i), runtime="auto"),
                                   m.predict(X, iteration_range=(0, i), runtime="naive"),
                                   rtol=1e-12)
    assert len(m._compiled.layouts) == COMPILED_KEPT
    assert ("auto", (0, m.num_trees)) in m._compiled.layouts


def test_model_predict_lays_out_the_model_for_big_batches(monkeypatch):
    """``Model.predict``'s default took every batch through the reference walk, 2-3x slower
    than XGBoost's predict on 1,000-100,000 rows of a 100-500-tree model (the ``auto``
    runtime: 4-7x faster than XGBoost). Once the rows × trees walked in a tree range reach
    ``AUTO_MIN_WORK``, over one call or several, it lays the model out for ``auto`` and
    predicts every batch of that range there; before, the reference walk. Outputs equal the
    reference walk's to float rounding."""
    from hardwood.model import model as model_module
    rng = np.random.default_rng(6)
    X = rng.normal(size=(400, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + X[:, 1] > 0).astype(int)
    m = hw.train({"objective": "binary:logistic", "max_depth": 3}, hw.Dataset(X, y), 10)
    monkeypatch.setattr(model_module, "AUTO_MIN_WORK", 3000)
    ref = {out: m.predict(X, output=out, runtime="naive") for out in ("value", "raw", "leaf")}
    np.testing.assert_array_equal(m.predict(X[:99]), ref["value"][:99])
    assert ("auto", (0, 10)) not in m._compiled.layouts  # 990 rows x trees: the walk
    for out in ("value", "raw", "leaf"):
        np.testing.assert_allclose(m.predict(X, output=out), ref[out], rtol=1e-12)
    assert ("auto", (0, 10)) in m._compiled.layouts
    np.testing.assert_allclose(m.predict(X[:1]), ref["value"][:1], rtol=1e-12)  # laid out
    first = m.predict(X, iteration_range=(0, 5))  # another range: its own count
    assert ("auto", (0, 5)) not in m._compiled.layouts  # 2,000: the walk
    m.predict(X[:250], iteration_range=(0, 5))  # 3,250 in all: laid out
    assert ("auto", (0, 5)) in m._compiled.layouts
    np.testing.assert_allclose(first, m.predict(X, iteration_range=(0, 5), runtime="naive"),
                               rtol=1e-12)


def test_lightgbm_zero_band_thresholds_route_as_lightgbm():
    """LightGBM reads every |x| <= 1e-35 as 0.0 when predicting. Its usual split between the
    negatives and zero sits at float32(-1e-35), and an x equal to it went left in every
    runtime, where LightGBM goes right (2.94 against 2.44 on a probe's model)."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(7)
    x = np.where(rng.random(400) < 0.5, 0.0, -rng.random(400))
    X = np.c_[x, rng.normal(size=400)]
    y = (x < 0) * 5.0 + rng.normal(size=400) * 0.1
    b = lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 2},
                  lgb.Dataset(X, y), 1)
    z = float(np.float32(1e-35))
    band = [-z, np.nextafter(-z, 0), -1e-36, -0.0, 0.0, 1e-36, z, np.nextafter(-z, -1), -1e-30,
            np.nextafter(z, 1)]
    T = np.c_[band, np.zeros(len(band))]
    m = hw.import_model(b)
    want = b.predict(T)
    for rt in ("naive", "vpred", "struct+"):
        np.testing.assert_allclose(m.predict(T, runtime=rt), want, rtol=1e-12, err_msg=rt)
    np.testing.assert_allclose(m.predict(X), b.predict(X), rtol=1e-12)


def test_codegen_refuses_trees_python_cannot_nest():
    """``codegen`` allowed depth 200, and depth 99 failed with a bare IndentationError from
    the generated file (Python nests at most 100 blocks). It names the depth now, and the
    other runtimes predict the tree."""
    from hardwood.data.convert import FeatureInfo
    from hardwood.model.model import Model
    from hardwood.model.tree import Tree
    from hardwood.predict import codegen
    depth = 99  # the shallowest that Python's 100 nested blocks cannot hold
    assert codegen.MAX_DEPTH < depth
    n = 2 * depth + 1  # a chain: node 2k splits, its left child 2k+1 is a leaf
    feature = np.full(n, -1, np.int32)
    left = np.full(n, -1, np.int64)
    right = np.full(n, -1, np.int64)
    threshold = np.zeros(n)
    for k in range(depth):
        i = 2 * k
        feature[i], threshold[i] = 0, -float(k)
        left[i], right[i] = i + 1, i + 2
    tree = Tree.from_arrays(feature=feature, threshold=threshold, left=left, right=right,
                            default_left=np.zeros(n, bool), is_categorical=np.zeros(n, bool),
                            cat_offset=np.full(n, -1, np.int64),
                            value=np.arange(n, dtype=np.float64), gain=np.zeros(n),
                            cover=np.ones(n), count=np.ones(n, np.int64))
    info = FeatureInfo(names=["f0"], is_categorical=np.zeros(1, bool), categories=[None])
    m = Model([tree], np.zeros(1, np.int32), [0.0], "reg:squarederror", 1, info)
    with pytest.raises(ValueError, match=f"depth {depth}"):
        hw.compile(m, "codegen")
    X = -np.arange(depth + 1, dtype=np.float64)[:, None] + 0.5
    np.testing.assert_array_equal(hw.compile(m, "vpred").predict(X), m.predict(X, runtime="naive"))


def _rounded(n=6000, d=4, seed=8):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), 1).astype(np.float32)
    return X, (X[:, 0] + rng.normal(size=n) > 0).astype(np.float64)


def _make(X, y, step=2000):
    def make():
        for a in range(0, len(y), step):
            yield X[a:a + step], y[a:a + step]
    return make


def test_a_corrupted_page_is_rebuilt_not_reused(tmp_path):
    """A page with one byte changed (its length kept) passed the reuse check, which read
    the header only: every later Dataset took the cache, and every training failed on the
    checksum. The reuse check reads the checksums, so the cache is rebuilt."""
    X, y = _rounded()
    folder = str(tmp_path / "cache")
    a = hw.Dataset.from_batches(_make(X, y), folder, page_bytes=20_000)
    ref = hw.train({"max_depth": 3}, a, 3).predict(X)
    page = a.pages_on_disk[0][1]
    with open(page, "r+b") as fh:
        fh.seek(os.path.getsize(page) - 10)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0xFF]))
    b = hw.Dataset.from_batches(_make(X, y), folder, page_bytes=20_000)
    np.testing.assert_array_equal(hw.train({"max_depth": 3}, b, 3).predict(X), ref)


def test_a_cache_dir_rebuilt_by_another_dataset_is_named(tmp_path):
    """Two Datasets of other data in one cache_dir: the second rewrites the first one's
    pages, and training the first failed with "was built from other data or other
    parameters", which did not name the cause."""
    X, y = _rounded()
    folder = str(tmp_path / "cache")
    first = hw.Dataset.from_batches(_make(X, y), folder, page_bytes=20_000)
    hw.Dataset.from_batches(_make(X + 1, y), folder, page_bytes=20_000)
    with pytest.raises(ValueError, match="give each Dataset its own cache_dir"):
        hw.train({"max_depth": 2}, first, 1)


def test_predicting_a_dataset_is_named():
    """``model.predict(hw.Dataset(...))`` said "X has non-numeric (object) values"."""
    X, y = _rounded(n=300)
    data = hw.Dataset(X, y)
    m = hw.train({"max_depth": 2}, data, 2)
    for run in (lambda: m.predict(data), lambda: hw.compile(m, "vpred").predict(data)):
        with pytest.raises(TypeError, match="not a hardwood.Dataset"):
            run()


def test_from_files_refuses_the_label_as_weight(tmp_path):
    """``from_files(weight=<the label column>)`` was taken: 0/1 labels weighed every negative
    row 0."""
    pd = pytest.importorskip("pandas")
    X, y = _rounded(n=200)
    path = tmp_path / "d.csv"
    pd.DataFrame({"a": X[:, 0], "y": y}).to_csv(path, index=False)
    with pytest.raises(ValueError, match="weight= names the label column 'y'"):
        hw.Dataset.from_files(str(path), label="y", weight="y", cache_dir=str(tmp_path / "c"))


def _queries(seed=9, n_q=30, size=20):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_q * size, 5))
    y = np.clip(np.round(X[:, 0] + rng.normal(size=n_q * size) * 0.5 + 2), 0, 4)
    return X, y.astype(int), np.full(n_q, size)


def test_imported_rankers_score_ndcg_with_their_gains():
    """An imported LightGBM ranker of ``label_gain=[0, 1, 2, 3, 4]``, or an XGBoost one of
    ``ndcg_exp_gain=False``, was scored (``score_ranking``, the report) with 2^g - 1: ndcg@10
    0.975 against LightGBM's own 0.986. The importers keep the gains."""
    from hardwood.metrics import score_ranking
    from hardwood.ranking import ranking_metric
    X, y, sizes = _queries()
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    lgb = pytest.importorskip("lightgbm")
    b = lgb.train({"objective": "lambdarank", "label_gain": [0, 1, 2, 3, 4], "verbose": -1,
                   "num_leaves": 7, "eval_at": [10], "metric": "ndcg"},
                  lgb.Dataset(X, y, group=sizes), 5)
    m = hw.import_model(b)
    assert m.params["label_gain"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    scores = dict(score_ranking(m, y.astype(float), m.predict(X), ptr)[0])
    linear = ranking_metric("ndcg@10", y.astype(float), b.predict(X), ptr, np.arange(5.0))
    np.testing.assert_allclose(scores["ndcg@10"], linear, rtol=1e-12)
    default = hw.import_model(lgb.train({"objective": "lambdarank", "verbose": -1},
                                        lgb.Dataset(X, y, group=sizes), 2))
    assert "label_gain" not in default.params  # written empty: 2^g - 1, hardwood's default
    xgb = pytest.importorskip("xgboost")
    for exp_gain, gain in ((False, [0.0, 1.0, 2.0]), (True, None)):
        bx = xgb.train({"objective": "rank:ndcg", "ndcg_exp_gain": exp_gain, "max_depth": 3},
                       xgb.DMatrix(X, y, group=sizes), 3)
        mx = hw.import_model(bx)
        got = mx.params.get("label_gain")
        assert (got is None) if gain is None else got[:3] == gain


@pytest.mark.parametrize("objective,param,value", [
    ("rank:pairwise", "lambdarank_truncation_level", 5),
    ("rank:pairwise", "lambdarank_num_pair_per_sample", 2),
    ("rank:pairwise", "lambdarank_norm", False),
    ("reg:squarederror", "lambdarank_truncation_level", 5),
    ("reg:squarederror", "label_gain", [0, 1, 2, 3, 4]),
])
def test_lambdarank_parameters_where_nothing_reads_them_are_refused(objective, param, value):
    """``rank:pairwise`` (RankNet here) and the non-ranking objectives took LambdaMART's
    parameters and ignored them; XGBoost's rank:pairwise honours them (0.7-1.5 off)."""
    X, y, sizes = _queries()
    data = hw.Dataset(X, y, group=sizes) if objective.startswith("rank") else hw.Dataset(X, y)
    with pytest.raises(ValueError, match=param if param != "lambdarank_num_pair_per_sample"
                       else "lambdarank_truncation_level"):
        hw.train({"objective": objective, param: value}, data, 1)
    hw.train({"objective": "rank:pairwise", "label_gain": [0, 1, 2, 3, 4]},
             hw.Dataset(X, y, group=sizes), 1)  # the NDCG metric's gains: read


def test_lightgbm_ndcg_is_scored_at_its_cutoffs():
    """Under LightGBM's 'lambdarank', metric 'ndcg' gave one full-list NDCG (XGBoost's
    meaning: 0.989 where LightGBM reports ndcg@5 0.978), and ``eval_at`` was an unknown
    parameter. LightGBM scores 'ndcg' and 'map' at each cutoff of eval_at (1-5 by default);
    the values equal LightGBM's own."""
    lgb = pytest.importorskip("lightgbm")
    X, y, sizes = _queries(seed=10)
    Xv, yv, sv = _queries(seed=11)
    params = {"objective": "lambdarank", "num_leaves": 7, "learning_rate": 0.1,
              "verbose": -1}
    train = hw.Dataset(X, y, group=sizes)
    valid = hw.Dataset(Xv, yv, group=sv, reference=train)
    for extra, keys in (({}, [f"ndcg@{k}" for k in range(1, 6)]),
                        ({"metric": "ndcg", "eval_at": [3, 10]}, ["ndcg@3", "ndcg@10"]),
                        ({"metric": ["map", "ndcg@2"], "ndcg_eval_at": 4}, ["map@4", "ndcg@2"])):
        m = hw.train({**params, **extra}, train, 3, valid_sets=[valid], valid_names=["v"])
        assert list(m.evals_result["v"]) == keys
    res = {}
    b = lgb.train({**params, "metric": "ndcg", "eval_at": [1, 3]},
                  lgb.Dataset(X, y, group=sizes), 3,
                  valid_sets=[lgb.Dataset(Xv, yv, group=sv)], valid_names=["v"],
                  callbacks=[lgb.record_evaluation(res)])
    from hardwood.metrics import get_metric
    ptr = np.concatenate([[0], np.cumsum(sv)])
    for k in (1, 3):  # hardwood's ndcg@k of LightGBM's predictions: LightGBM's value
        got = get_metric(f"ndcg@{k}")(yv.astype(float), b.predict(Xv), np.ones(len(yv)),
                                      group=ptr)
        assert abs(got - res["v"][f"ndcg@{k}"][-1]) < 1e-9
    again = hw.train(m.params, train, 3, valid_sets=[valid], valid_names=["v"])
    assert list(again.evals_result["v"]) == ["map@4", "ndcg@2"]  # a model's params retrain
    with pytest.raises(ValueError, match="eval_at must be positive"):
        hw.train({**params, "eval_at": [0]}, train, 1)
    with pytest.raises(ValueError, match="does not score"):
        hw.train({"eval_at": 3}, hw.Dataset(X, y), 1)
    xgb_named = hw.train({"objective": "rank:ndcg", "eval_metric": "ndcg"}, train, 2,
                         valid_sets=[valid], valid_names=["v"])
    assert list(xgb_named.evals_result["v"]) == ["ndcg"]  # XGBoost's meaning, unchanged


def test_custom_metrics_score_each_round_and_steer_early_stopping():
    """``custom_metric=`` (XGBoost) and ``feval=`` (LightGBM) were unknown keywords. A
    function of (pred, dataset) now scores each validation set after the built-in metrics;
    early stopping follows the last one, maximised under LightGBM's third value or
    ``maximize=True``, as the peers do."""
    rng = np.random.default_rng(12)
    X = rng.normal(size=(1200, 4))
    y = (X[:, 0] + rng.normal(size=1200) > 0).astype(float)
    train, valid = hw.Dataset(X[:800], y[:800]), None
    valid = hw.Dataset(X[800:], y[800:], reference=train)
    seen = []

    def accuracy(pred, data):  # XGBoost's form
        seen.append(pred.shape)
        return "acc", float(np.mean((pred > 0.5) == data.get_label()))

    p = {"objective": "binary:logistic", "max_depth": 3, "learning_rate": 0.3}
    m = hw.train(p, train, 6, evals=[(valid, "v")], custom_metric=accuracy)
    assert list(m.evals_result["v"]) == ["logloss", "acc"] and len(m.evals_result["v"]["acc"]) == 6
    ref = m.predict(X[800:])
    np.testing.assert_allclose(m.evals_result["v"]["acc"][-1],
                               np.mean((ref > 0.5) == y[800:]), rtol=1e-12)
    assert seen[0] == (400,)

    def worse_each_round(pred, data):  # LightGBM's form, higher is better
        return [("falls", -float(len(seen2))), ("rises", float(len(seen2)), True)]
    seen2 = []

    def counting(pred, data):
        seen2.append(1)
        return worse_each_round(pred, data)
    m = hw.train(p, train, 20, valid_sets=[valid], valid_names=["v"], feval=counting,
                 early_stopping_rounds=2)
    assert m.num_boosted_rounds == 20  # 'rises' (the last) improves every round
    m = hw.train(p, train, 20, valid_sets=[valid], valid_names=["v"],
                 feval=lambda pr, d: ("falls", -float(len(seen2.append(1) or seen2)), True),
                 early_stopping_rounds=2)
    assert m.best_iteration == 0 and m.num_boosted_rounds == 3  # stops 2 rounds after
    m = hw.train(p, train, 20, evals=[(valid, "v")], early_stopping_rounds=2, maximize=True,
                 custom_metric=lambda pr, d: ("down", -float(len(seen2.append(1) or seen2))))
    assert m.best_iteration == 0  # maximize=True: every later round is worse
    for bad, match in ((lambda pr, d: 0.5, "must return"),
                       (lambda pr, d: ("logloss", 0.5), "built-in metric")):
        with pytest.raises((TypeError, ValueError), match=match):
            hw.train(p, train, 1, evals=[(valid, "v")], custom_metric=bad)
    with pytest.raises(ValueError, match="not both"):
        hw.train(p, train, 1, evals=[(valid, "v")], custom_metric=accuracy, feval=accuracy)


def test_custom_objectives_train_as_the_peers():
    """``obj=`` (XGBoost) and a callable ``objective`` (LightGBM) were refused. A function of
    (margins, dataset) -> (grad, hess) now grows the trees: the squared error's gives the
    built-in model, a logistic loss's equals XGBoost's ``obj=`` model (margins, from its base
    0.5), and bad returns are named."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(13)
    X = np.round(rng.normal(size=(1500, 4)), 1)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=1500) > 0).astype(float)
    data = hw.Dataset(X, y)
    p = {"max_depth": 3, "learning_rate": 0.3, "reg_lambda": 1.0}

    def squared(margin, d):
        return margin - d.get_label(), np.ones_like(margin)

    built_in = hw.train({**p, "base_score": 0.25}, data, 5)
    mine = hw.train({**p, "base_score": 0.25}, data, 5, obj=squared)
    np.testing.assert_allclose(mine.predict(X), built_in.predict(X), rtol=1e-6, atol=1e-6)
    lightgbm_style = hw.train({**p, "objective": squared}, data, 5)
    assert lightgbm_style.base_score[0] == 0.0 and mine.base_score[0] == 0.25

    def logistic(margin, d):
        prob = 1.0 / (1.0 + np.exp(-margin))
        return prob - d.get_label(), prob * (1.0 - prob)

    ours = hw.train(p, data, 5, obj=logistic)
    theirs = xgb.train({**p, "tree_method": "hist", "max_bin": 256}, xgb.DMatrix(X, y), 5,
                       obj=logistic)
    assert ours.base_score[0] == 0.5
    np.testing.assert_allclose(ours.predict(X), theirs.predict(xgb.DMatrix(X)), atol=1e-5)
    for bad, match in ((lambda m, d: m, "must return"),
                       (lambda m, d: (m[:5], m[:5]), "shape"),
                       (lambda m, d: (m, -np.ones_like(m)), "hess is negative"),
                       (lambda m, d: (m * np.nan, m), "non-finite")):
        with pytest.raises((TypeError, ValueError), match=match):
            hw.train(p, data, 1, obj=bad)
    with pytest.raises(ValueError, match="one output of raw margins"):
        hw.train({**p, "objective": "binary:logistic"}, data, 1, obj=logistic)
    with pytest.raises(ValueError, match="once"):
        hw.train({**p, "objective": squared}, data, 1, obj=squared)


def test_estimators_take_eval_metric_functions():
    """The estimators' ``eval_metric`` took names only; a function (XGBoost's and
    LightGBM's scikit-learn estimators take ``f(y_true, y_pred)``) was refused as "must be a
    metric name". It is scored on each eval set, after the named metrics, and early stopping
    follows it (minimised, or as LightGBM's third value says)."""
    from sklearn.metrics import mean_absolute_error
    rng = np.random.default_rng(14)
    X = rng.normal(size=(900, 3))
    y = X[:, 0] + rng.normal(size=900) * 0.5
    w = rng.uniform(0.5, 2.0, size=300)
    est = hw.GBDTRegressor(n_estimators=8, max_depth=3,
                           eval_metric=["rmse", mean_absolute_error])
    est.fit(X[:600], y[:600], eval_set=[(X[600:], y[600:])], sample_weight_eval_set=[w])
    scores = est.evals_result_["validation_0"]
    assert list(scores) == ["rmse", "mean_absolute_error"]
    np.testing.assert_allclose(scores["mean_absolute_error"][-1],
                               mean_absolute_error(y[600:], est.predict(X[600:]),
                                                   sample_weight=w), rtol=1e-6)

    def r2_lightgbm_style(y_true, y_pred):
        residual = np.sum((y_true - y_pred) ** 2)
        return "r2", 1 - residual / np.sum((y_true - y_true.mean()) ** 2), True
    est = hw.GBDTRegressor(n_estimators=30, max_depth=3, learning_rate=0.5,
                           eval_metric=r2_lightgbm_style, early_stopping_rounds=3)
    est.fit(X[:600], y[:600], eval_set=[(X[600:], y[600:])])
    r2 = est.evals_result_["validation_0"]["r2"]
    assert est.best_iteration_ == int(np.argmax(r2))  # maximised
    clf = hw.GBDTClassifier(n_estimators=4, max_depth=2,
                            eval_metric=lambda t, p: float(np.mean((p > 0.5) == t)))
    clf.fit(X[:600], y[:600] > 0, eval_set=[(X[600:], y[600:] > 0)])
    assert list(clf.evals_result_["validation_0"]) == ["logloss", "<lambda>"]
    with pytest.raises(TypeError, match="must return a number"):
        hw.GBDTRegressor(n_estimators=2, eval_metric=lambda t, p: "x").fit(
            X[:600], y[:600], eval_set=[(X[600:], y[600:])])


def test_regressor_takes_an_objective_function():
    """``GBDTRegressor(objective=f)`` failed with "unknown objective <function ...>"; XGBoost's
    and LightGBM's estimators take ``f(y_true, y_pred) -> (grad, hess)``. The squared error's
    gives the built-in model from the same start; weights scale the gradients unless ``f``
    takes them; the classifier says where a loss function goes."""
    rng = np.random.default_rng(15)
    X = rng.normal(size=(800, 3))
    y = X[:, 0] + rng.normal(size=800) * 0.3
    w = rng.uniform(0.5, 2.0, size=800)

    def squared(y_true, y_pred):
        return y_pred - y_true, np.ones_like(y_pred)

    def squared_weighted(y_true, y_pred, sample_weight):
        return (y_pred - y_true) * sample_weight, sample_weight

    kw = {"n_estimators": 5, "max_depth": 3, "base_score": 0.0}
    built_in = hw.GBDTRegressor(**kw).fit(X, y, sample_weight=w)
    for f in (squared, squared_weighted):
        mine = hw.GBDTRegressor(objective=f, **kw).fit(X, y, sample_weight=w)
        np.testing.assert_allclose(mine.predict(X), built_in.predict(X), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="GBDTRegressor does"):
        hw.GBDTClassifier(objective=squared).fit(X, y > 0)


def test_from_batches_names_a_bad_cache_dir_and_page_size(tmp_path):
    """``cache_dir=None`` was a bare TypeError from ``os.makedirs``, and ``page_bytes=0.5``
    said "must be positive, got 0.5"."""
    X, y = _rounded(n=300)
    with pytest.raises(TypeError, match="cache_dir must be the path of a folder"):
        hw.Dataset.from_batches(_make(X, y), None)
    for bad in (0.5, 0, True, "1"):
        with pytest.raises(ValueError, match="page_bytes must be a whole number"):
            hw.Dataset.from_batches(_make(X, y), str(tmp_path), page_bytes=bad)
    data = hw.Dataset.from_batches(_make(X, y), str(tmp_path), page_bytes=20_000.0)
    assert data.n_rows == 300


def test_estimators_record_the_best_score():
    """After early stopping the estimators kept ``best_iteration_`` but not the score
    (XGBoost's ``best_score``, LightGBM's ``best_score_``)."""
    X, y, sizes = _queries(seed=16)
    Xv, yv, sv = _queries(seed=17)
    rk = hw.GBDTRanker(n_estimators=30, early_stopping_rounds=2, learning_rate=0.5)
    rk.fit(X, y, group=sizes, eval_set=[(Xv, yv)], eval_group=[sv])
    scores = rk.evals_result_["validation_0"]["ndcg@10"]
    assert rk.best_score_ == max(scores) == scores[rk.best_iteration_]
    assert hw.GBDTRegressor(n_estimators=2).fit(X, y).best_score_ is None


def test_custom_functions_cannot_change_the_training_labels():
    """A custom objective or metric is handed the Dataset; ``get_label()`` returned the
    training labels themselves, so a function that wrote into them (``y -= 1``) changed the
    data the next rounds train and score on, without a word. They are read-only while it
    runs, and writable again after."""
    rng = np.random.default_rng(18)
    X = rng.normal(size=(300, 3))
    y = X[:, 0].copy()
    data = hw.Dataset(X, y, weight=np.ones(300))

    def writes(margin, d):
        labels = d.get_label()
        labels -= 1.0
        return margin - labels, np.ones_like(margin)
    with pytest.raises(ValueError, match="read-only"):
        hw.train({"max_depth": 2}, data, 2, obj=writes)
    np.testing.assert_array_equal(data.get_label(), y)

    def metric_writes(pred, d):
        d.get_weight()[:] = 0.0
        return "x", 0.0
    with pytest.raises(ValueError, match="read-only"):
        hw.train({"max_depth": 2}, data, 1, evals=[(data, "t")], custom_metric=metric_writes)
    assert np.all(data.get_weight() == 1.0)
    assert data.get_label().flags.writeable and data.get_weight().flags.writeable
