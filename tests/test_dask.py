"""hardwood.dask (issue 17) on a real distributed.LocalCluster of 2 worker processes, each
with a nanny and one thread: the distributed model equals single-machine training on the
concatenated data (same trees; 1, 2 and 7 partitions, uneven and empty ones), a worker killed
with SIGKILL mid-training changes nothing, failures past Dask's retry allowance raise an error
carrying the last complete model (and init_model continues from it), two concurrent trainings
on one client both finish, partitions that do not align are refused."""
import os
import signal
import sys
import threading

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")

import hardwood  # noqa: E402
import hardwood.dask as hd  # noqa: E402

N, D = 600, 5
PARAMS = {"max_depth": 3, "learning_rate": 0.3, "random_state": 0}
ROUNDS = 6


def _cluster_client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", worker_dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def client():
    yield from _cluster_client()


@pytest.fixture
def own_client():
    """A cluster of its own, for a test that kills workers: the nanny's restart of a killed
    worker took over 60 s once under the suite's load, and the module's shared cluster must
    not depend on it."""
    yield from _cluster_client()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, D))
    X[rng.random(X.shape) < 0.05] = np.nan
    x0, x1 = np.nan_to_num(X[:, 0]), np.nan_to_num(X[:, 1])
    y = x0 + 0.5 * x1 ** 2 + rng.normal(scale=0.1, size=N)
    yb = (x0 + x1 > 0).astype(np.float64)
    yc = np.digitize(x0, [-0.5, 0.5]).astype(np.float64)
    w = rng.integers(1, 4, size=N).astype(np.float64)
    return X, y, yb, yc, w


def _same_model(a, b, atol=1e-9):
    assert len(a.trees) == len(b.trees)
    for s, t in zip(a.trees, b.trees):
        for name in ("feature", "left", "right", "default_left"):
            np.testing.assert_array_equal(getattr(s, name), getattr(t, name))
        np.testing.assert_array_equal(s.threshold, t.threshold)
        np.testing.assert_allclose(s.value, t.value, rtol=0, atol=atol)
    np.testing.assert_allclose(a.base_score, b.base_score, rtol=0, atol=1e-12)


def _dask(v, chunks):
    return da.from_array(v, chunks=(chunks,) + v.shape[1:])


CHUNKS = [(600,), (300, 300), (100, 0, 50, 200, 1, 149, 100)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("chunks", CHUNKS, ids=["1", "2", "7-uneven-empty"])
def test_equals_single_machine(client, data, chunks, caplog):
    import logging

    X, y, *_ = data
    ref = hardwood.train(PARAMS, hardwood.Dataset(X, y), num_boost_round=ROUNDS)
    with caplog.at_level(logging.DEBUG, logger="hardwood.dask"):
        m = hd.train(client, PARAMS, _dask(X, chunks), _dask(y, chunks),
                     num_boost_round=ROUNDS)
    steps = [r.getMessage() for r in caplog.records if r.name == "hardwood.dask"]
    assert len(steps) == m.training_profile["dask_levels"]  # one line per level: bytes, s
    assert all(" bytes, " in s and s.endswith(" s") for s in steps)
    assert isinstance(m, hardwood.Model)
    _same_model(m, ref)
    np.testing.assert_allclose(m.predict(X), ref.predict(X), rtol=0, atol=1e-6)
    prof = m.training_profile
    assert prof["dask_levels"] >= ROUNDS and prof["dask_bytes"] > 0


@pytest.mark.timeout(120)
def test_lightgbm_missing_rule_equals_single_machine(client, data):
    """Under LightGBM's growth each field's missing rule comes from every row's bins
    (``DaskPages.bin_counts``, on the workers): the single machine's trees, a field without
    missing values (read as 0.0) and ``min_data_in_leaf`` (LightGBM's row counts) included."""
    X, y, *_ = data
    X = X.copy()
    X[:, 1] = np.nan_to_num(X[:, 1])
    params = {"objective": "regression", "num_leaves": 8, "min_data_in_leaf": 15}
    ref = hardwood.train(params, hardwood.Dataset(X, y), num_boost_round=ROUNDS)
    m = hd.train(client, params, _dask(X, (300, 300)), _dask(y, (300, 300)),
                 num_boost_round=ROUNDS)
    _same_model(m, ref)
    assert m.params["missing_rule"] == "lightgbm"


@pytest.mark.timeout(120)
def test_exact_partitions_merge_exactly(client, data):
    """Partitions whose sketches are exact (at most ``sketch_size + 1`` values each) bin as
    the concatenated data: their union, past ``sketch_size + 1`` values, was pruned, and the
    model parted from the single-machine one (0.8 on 4 partitions of 750 rows, session 21's
    probe)."""
    X, y, *_ = data
    ref = hardwood.train(PARAMS, hardwood.Dataset(X, y), num_boost_round=ROUNDS)
    m = hd.train(client, PARAMS, _dask(X, (300, 300)), _dask(y, (300, 300)),
                 num_boost_round=ROUNDS, sketch_size=400)
    _same_model(m, ref)


@pytest.mark.timeout(120)
def test_is_unbalance_counts_all_the_labels(client, data):
    """LightGBM's ``is_unbalance`` scales the smaller class by the ratio of the class counts:
    each worker counted its own partition's (0.004 off the in-memory model where the
    partitions' class mixes differ; a partition of one class was not scaled at all)."""
    X, _, yb, *_ = data
    order = np.argsort(-yb, kind="stable")  # the positives first: partitions of one class
    X, yb = X[order], yb[order]
    P = dict(PARAMS, objective="binary", is_unbalance=True)
    ref = hardwood.train(P, hardwood.Dataset(X, yb), num_boost_round=ROUNDS)
    m = hd.train(client, P, _dask(X, (200, 200, 200)), _dask(yb, (200, 200, 200)),
                 num_boost_round=ROUNDS)
    _same_model(m, ref)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_classification_weights_and_sampling(client, data, task):
    """Logistic with weights, softmax with row sampling and column sampling per tree and per
    node: the same random draws as the single machine, the same trees."""
    X, _, yb, yc, w = data
    chunks = (100, 0, 250, 250)
    if task == "binary":
        params = dict(PARAMS, objective="binary:logistic")
        y, weight = yb, w
    else:
        params = dict(PARAMS, objective="multi:softprob", subsample=0.7,
                      colsample_bytree=0.8, colsample_bynode=0.8)
        y, weight = yc, None
    ref = hardwood.train(params, hardwood.Dataset(X, y, weight=weight), num_boost_round=4)
    m = hd.train(client, params, _dask(X, chunks), _dask(y, chunks),
                 weight=None if weight is None else _dask(weight, chunks), num_boost_round=4)
    _same_model(m, ref)
    np.testing.assert_allclose(m.predict(X), ref.predict(X), rtol=0, atol=1e-6)


@pytest.mark.timeout(120)
def test_dataframe_valid_sets_and_lazy_predict(client, data):
    import pandas as pd

    X, y, *_ = data
    names = [f"f{j}" for j in range(D)]
    df = pd.DataFrame(X, columns=names)
    Xd = dd.from_pandas(df, npartitions=3)
    yd = dd.from_pandas(pd.Series(y), npartitions=3)
    Xv, yv = X[:100], y[:100]
    ref_ds = hardwood.Dataset(df, y)
    ref = hardwood.train(PARAMS, ref_ds, num_boost_round=ROUNDS,
                         valid_sets=[ref_ds, hardwood.Dataset(Xv, yv, reference=ref_ds)],
                         valid_names=["train", "v"])
    m = hd.train(client, PARAMS, Xd, yd, num_boost_round=ROUNDS,
                 valid_sets=[(Xd, yd), (_dask(Xv, (50, 50)), _dask(yv, (50, 50)))],
                 valid_names=["train", "v"])
    _same_model(m, ref)
    assert m.feature_names == names
    for name in ("train", "v"):
        np.testing.assert_allclose(m.evals_result[name]["rmse"], ref.evals_result[name]["rmse"],
                                   rtol=1e-9)
    lazy = hd.predict(client, m, Xd)
    assert isinstance(lazy, dd.Series)
    np.testing.assert_allclose(lazy.compute().to_numpy(), ref.predict(df), rtol=0, atol=1e-6)
    arr = hd.predict(client, m, _dask(X, (200, 0, 400)))
    assert isinstance(arr, da.Array) and arr.shape == (N,)
    np.testing.assert_allclose(arr.compute(), ref.predict(X), rtol=0, atol=1e-6)


@pytest.mark.timeout(60)
def test_partitions_that_do_not_align(client, data):
    import pandas as pd

    X, y, *_ = data
    with pytest.raises(ValueError, match="do not align: partition 0 of X has 300 rows"):
        hd.train(client, PARAMS, _dask(X, (300, 300)), _dask(y, (200, 400)), num_boost_round=1)
    with pytest.raises(ValueError, match="do not align: X has 2 partitions, y has 3"):
        hd.train(client, PARAMS, _dask(X, (300, 300)), _dask(y, (200, 200, 200)),
                 num_boost_round=1)
    with pytest.raises(ValueError, match="do not align: X has 2 partitions, weight has 1"):
        hd.train(client, PARAMS, _dask(X, (300, 300)), _dask(y, (300, 300)),
                 weight=_dask(np.ones(N), (600,)), num_boost_round=1)
    bad = y.copy()
    bad[450] = np.nan  # a missing label is refused, as a Dataset refuses it
    with pytest.raises(ValueError, match="label contains NaN or infinite values"):
        hd.train(client, PARAMS, _dask(X, (300, 300)), _dask(bad, (300, 300)),
                 num_boost_round=1)
    # unknown partition lengths: counted on the workers
    Xd = dd.from_pandas(pd.DataFrame(X), npartitions=2)
    yd = dd.from_pandas(pd.Series(y), npartitions=2)
    yd = yd[yd > yd.min()]  # one row fewer in one partition
    with pytest.raises(ValueError, match="do not align: partition"):
        hd.train(client, PARAMS, Xd, yd, num_boost_round=1)
    with pytest.raises(TypeError, match="dask.array or dask.dataframe"):
        hd.train(client, PARAMS, X, _dask(y, (600,)), num_boost_round=1)
    with pytest.raises(ValueError, match="does not train objective"):
        hd.train(client, dict(PARAMS, objective="reg:absoluteerror"), _dask(X, (600,)),
                 _dask(y, (600,)), num_boost_round=1)


class _KillAtRound(hardwood.TrainingCallback):
    """SIGKILLs one worker process after round ``at``."""

    def __init__(self, client, at):
        self.client, self.at, self.killed = client, at, None

    def after_iteration(self, model, epoch, evals_log):
        if epoch == self.at and self.killed is None:
            pids = self.client.run(os.getpid)
            addr = sorted(pids)[0]
            os.kill(pids[addr], signal.SIGKILL)
            self.killed = pids[addr]
        return False


@pytest.mark.timeout(240)
def test_worker_killed_mid_training(own_client, data):
    client = own_client
    X, y, *_ = data
    chunks = (150, 150, 150, 150)
    ref = hd.train(client, PARAMS, _dask(X, chunks), _dask(y, chunks), num_boost_round=ROUNDS)
    kill = _KillAtRound(client, 3)
    m = hd.train(client, PARAMS, _dask(X, chunks), _dask(y, chunks), num_boost_round=ROUNDS,
                 callbacks=[kill])
    assert kill.killed is not None
    _same_model(m, ref, atol=0)
    client.wait_for_workers(2, timeout=150)
    assert kill.killed not in client.run(os.getpid).values()  # the nanny started a new one


class _KillOnHistogram(distributed.WorkerPlugin):
    """Kills its worker whenever a histogram task of hardwood starts there: every retry
    dies too."""

    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "executing" and "hardwood-hist-" in str(key):
            os.kill(os.getpid(), signal.SIGKILL)


class _ArmAtRound(hardwood.TrainingCallback):
    def __init__(self, client, at):
        self.client, self.at = client, at

    def after_iteration(self, model, epoch, evals_log):
        if epoch == self.at:
            self.client.register_plugin(_KillOnHistogram(), name="hardwood-test-kill")
        return False


def _unregister(client, name):
    """Remove a worker plugin; a worker it is killing may close the broadcast: again."""
    import time

    for _ in range(20):
        try:
            client.unregister_worker_plugin(name)
            return
        except ValueError:  # no longer registered
            return
        except (OSError, distributed.comm.core.CommClosedError):
            time.sleep(0.5)
    raise AssertionError(f"worker plugin {name!r} could not be removed")


@pytest.mark.timeout(330)
def test_failures_past_the_retries_raise_with_the_last_model(own_client, data):
    import cloudpickle

    client = own_client
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    X, y, *_ = data
    chunks = (300, 300)
    ref = hd.train(client, PARAMS, _dask(X, chunks), _dask(y, chunks), num_boost_round=ROUNDS)
    scheduler = client.cluster.scheduler
    allowed = scheduler.allowed_failures
    scheduler.allowed_failures = 0
    try:
        with pytest.raises(hd.DaskTrainingError, match="last complete model") as err:
            hd.train(client, PARAMS, _dask(X, chunks), _dask(y, chunks),
                     num_boost_round=ROUNDS, callbacks=[_ArmAtRound(client, 2)])
    finally:
        _unregister(client, "hardwood-test-kill")
        scheduler.allowed_failures = allowed
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    client.wait_for_workers(1, timeout=150)  # resumed training needs a worker
    last = err.value.model
    assert last is not None and len(last.trees) == 3  # rounds 0, 1, 2 complete
    _same_model(last, ref.__class__(ref.trees[:3], ref.tree_group[:3], ref.base_score,
                                    ref.objective, ref.n_outputs, ref.info))
    resumed = hd.train(client, PARAMS, _dask(X, chunks), _dask(y, chunks),
                       num_boost_round=ROUNDS - 3, init_model=last)
    _same_model(resumed, ref, atol=0)


@pytest.mark.timeout(120)
def test_two_concurrent_trainings(client, data):
    X, y, yb, *_ = data
    jobs = {"reg": (PARAMS, y, (200, 400)),
            "bin": (dict(PARAMS, objective="binary:logistic", max_depth=2), yb, (100, 250, 250))}
    refs = {k: hardwood.train(p, hardwood.Dataset(X, t), num_boost_round=ROUNDS)
            for k, (p, t, _) in jobs.items()}
    out, errors = {}, []

    def run(k):
        p, t, ch = jobs[k]
        try:
            out[k] = hd.train(client, p, _dask(X, ch), _dask(t, ch), num_boost_round=ROUNDS)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(100)
    assert not errors, errors
    for k in jobs:
        _same_model(out[k], refs[k])


@pytest.mark.timeout(120)
def test_gbdt_estimators(client, data):
    X, y, _, yc, _ = data
    labels = np.array([3, 5, 9])[yc.astype(int)]
    chunks = (250, 0, 350)
    reg = hd.DaskGBDTRegressor(n_estimators=4, max_depth=3)
    reg.client = client
    reg.fit(_dask(X, chunks), _dask(y, chunks))
    ref = hardwood.GBDTRegressor(n_estimators=4, max_depth=3).fit(X, y)
    out = reg.predict(_dask(X, chunks))
    assert isinstance(out, da.Array)
    np.testing.assert_allclose(out.compute(), ref.predict(X), rtol=0, atol=1e-6)
    clf = hd.DaskGBDTClassifier(n_estimators=3, max_depth=3)
    clf.client = client
    clf.fit(_dask(X, chunks), _dask(labels, chunks))
    ref = hardwood.GBDTClassifier(n_estimators=3, max_depth=3).fit(X, labels)
    np.testing.assert_array_equal(clf.classes_, [3, 5, 9])
    np.testing.assert_allclose(clf.predict_proba(_dask(X, chunks)).compute(),
                               ref.predict_proba(X), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(clf.predict(_dask(X, chunks)).compute(), ref.predict(X))


@pytest.mark.timeout(120)
def test_dask_estimators_check_what_the_in_memory_ones_check(client, data):
    """Session 24 (probe 37): ``categorical_features`` and metric functions in ``eval_metric``
    were dropped without a word (a categorical column trained as numbers; early stopping
    followed rmse); ``objective='multi:softmax'`` crashed ``predict_proba`` in a worker;
    ``DaskGBDTRegressor`` trained ``binary:logistic``; ``score`` failed on a dask DataFrame
    (unknown chunk sizes) and ``best_score_`` was never set."""
    import pandas as pd

    X, y, _, yc, _ = data
    dX, dy, dyc = _dask(X, 300), _dask(y, 300), _dask(yc, 300)

    def fitted(est, *args, **kw):
        est.client = client
        return est.fit(*args, **kw)

    with pytest.raises(ValueError, match="takes no categorical_features"):
        fitted(hd.DaskGBDTRegressor(n_estimators=2, categorical_features=[0]), dX, dy)
    with pytest.raises(ValueError, match="metric names, not functions"):
        fitted(hd.DaskGBDTRegressor(n_estimators=2, eval_metric=lambda t, p: 0.0), dX, dy,
               eval_set=[(dX, dy)])
    with pytest.raises(ValueError, match="takes no objective function"):
        fitted(hd.DaskGBDTRegressor(n_estimators=2, objective=lambda p, d: (p, p)), dX, dy)
    with pytest.raises(ValueError, match="is a binary objective"):
        fitted(hd.DaskGBDTRegressor(n_estimators=2, objective="binary:logistic"), dX, dy)
    with pytest.raises(ValueError, match="is for two classes"):
        fitted(hd.DaskGBDTClassifier(n_estimators=2, objective="binary:logistic"), dX, dyc)
    softmax = fitted(hd.DaskGBDTClassifier(n_estimators=2, max_depth=3,
                                           objective="multi:softmax"), dX, dyc)
    ref = hardwood.GBDTClassifier(n_estimators=2, max_depth=3, objective="multi:softmax")
    ref.fit(X, yc)
    np.testing.assert_allclose(softmax.predict_proba(dX).compute(), ref.predict_proba(X),
                               rtol=0, atol=1e-6)
    frame = dd.from_pandas(pd.DataFrame(X, columns=[f"c{j}" for j in range(D)]),
                           npartitions=2)
    labels = dd.from_pandas(pd.Series(yc), npartitions=2)
    assert softmax.score(frame, labels) == pytest.approx(ref.score(X, yc))
    held = (X[:200] + 0.1, y[:200])
    reg = fitted(hd.DaskGBDTRegressor(n_estimators=20, max_depth=3, early_stopping_rounds=2),
                 dX, dy, eval_set=[held])
    assert reg.best_score_ == reg.model_.best_score
    assert reg.score(dX, dy) == pytest.approx(
        hardwood.GBDTRegressor(n_estimators=20, max_depth=3, early_stopping_rounds=2)
        .fit(X, y, eval_set=[held]).score(X, y), abs=1e-9)


@pytest.mark.timeout(120)
def test_estimators_pickle_without_their_client_and_take_a_random_state(client, data):
    """A fitted Dask estimator whose ``client`` was set could not be pickled (the live
    connection went with it; XGBoost's drop it); the Dask forests failed on a
    ``np.random.RandomState`` (in both modes), which the in-memory forest takes; and the
    estimators' early stopping without ``eval_set`` named ``valid_sets``."""
    import pickle

    X, y, *_ = data
    X = np.nan_to_num(X)
    chunks = (300, 300)
    reg = hd.DaskGBDTRegressor(n_estimators=2, max_depth=2)
    reg.client = client
    reg.fit(_dask(X, chunks), _dask(y, chunks))
    back = pickle.loads(pickle.dumps(reg))
    assert back.client is None and reg.client is client
    np.testing.assert_array_equal(back.model_.predict(X), reg.model_.predict(X))
    for mode in ["tree", "histogram"]:
        forest = hd.DaskRandomForestRegressor(n_estimators=2, max_depth=3,
                                              random_state=np.random.RandomState(3))
        forest.client, forest.mode = client, mode
        forest.fit(_dask(X, chunks), _dask(y, chunks))
        assert forest.predict(_dask(X, chunks)).compute().shape == (600,)
        pickle.loads(pickle.dumps(forest))
    with pytest.raises(ValueError, match="pass eval_set to fit"):
        hd.DaskGBDTRegressor(n_estimators=2, early_stopping_rounds=1).fit(
            _dask(X, chunks), _dask(y, chunks))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_forests_tree_parallel(client, data, kind):
    """Each worker grows its share of the trees over the whole data: the forest equals the
    single-machine forest, tree for tree."""
    X, y, _, yc, w = data
    X = np.nan_to_num(X)
    chunks = (100, 0, 500)
    if kind == "classifier":
        est, ref = hd.DaskRandomForestClassifier, hardwood.RandomForestClassifier
        target = np.array(["a", "b", "c"])[yc.astype(int)]
    else:
        est, ref = hd.DaskRandomForestRegressor, hardwood.RandomForestRegressor
        target = y
    params = dict(n_estimators=5, max_depth=5, random_state=3)
    m = est(**params)
    m.client = client
    m.fit(_dask(X, chunks), _dask(target, chunks), sample_weight=_dask(w, chunks))
    r = ref(**params).fit(X, target, sample_weight=w)
    assert m.mode_ == "tree"
    assert len(m.forest_.trees) == len(r.forest_.trees) == 5
    for a, b in zip(m.forest_.trees, r.forest_.trees):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.threshold, b.threshold)
    if kind == "classifier":
        np.testing.assert_array_equal(m.classes_, r.classes_)
        np.testing.assert_allclose(m.predict_proba(_dask(X, chunks)).compute(),
                                   r.predict_proba(X), rtol=0, atol=1e-12)
        np.testing.assert_array_equal(m.predict(_dask(X, chunks)).compute(), r.predict(X))
    else:
        np.testing.assert_allclose(m.predict(_dask(X, chunks)).compute(), r.predict(X),
                                   rtol=0, atol=1e-12)


def _same_forest(a, b):
    assert len(a.forest_.trees) == len(b.forest_.trees)
    for s, t in zip(a.forest_.trees, b.forest_.trees):
        for name in ("feature", "sbin", "left", "right", "default_left", "count"):
            np.testing.assert_array_equal(getattr(s, name), getattr(t, name))
        np.testing.assert_array_equal(s.threshold, t.threshold)
        np.testing.assert_allclose(s.value, t.value, rtol=0, atol=1e-12)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", ["classifier", "regressor", "weighted"])
def test_forests_histogram_mode(client, data, case):
    """Histogram mode: the partitions never move; large nodes split from histograms summed
    over them, small ones (here under 120 rows) grow where their rows are gathered. The
    forest equals the single-machine forest, node for node, on uneven and empty partitions:
    uniform bootstrap drawn by each partition (classifier, regressor), and weighted draws by
    the client (sample weights and class weights) with max_features=1.0 and a depth limit."""
    X, y, _, yc, w = data
    chunks = (100, 0, 50, 200, 1, 249)
    params = dict(n_estimators=4, random_state=5, min_samples_leaf=2)
    kw = {}
    if case == "regressor":
        # targets on a grid of 1/4: every sum is exact, in any order (other floats give
        # the same trees up to the rounding of sums taken in another order)
        est, ref = hd.DaskRandomForestRegressor, hardwood.RandomForestRegressor
        target = np.round(y * 4) / 4
    else:
        est, ref = hd.DaskRandomForestClassifier, hardwood.RandomForestClassifier
        target = np.array(["a", "b", "c"])[yc.astype(int)]
    if case == "weighted":
        params.update(max_features=1.0, max_depth=6, class_weight={"b": 2.0})
        kw = dict(sample_weight=w)
    m = est(**params)
    # the regressor grows every node from histograms (no node is small)
    m.client, m.mode, m._small_rows = client, "histogram", 1 if case == "regressor" else 120
    m.fit(_dask(X, chunks), _dask(target, chunks),
          **{k: _dask(v, chunks) for k, v in kw.items()})
    r = ref(**params).fit(X, target, **kw)
    assert m.mode_ == "histogram"
    assert any(t.n_nodes > 1 for t in m.forest_.trees)
    assert len(m.dask_log_) > 1 and all(e["bytes"] > 0 for e in m.dask_log_)
    _same_forest(m, r)
    Xd = _dask(X, chunks)
    if case == "regressor":
        np.testing.assert_allclose(m.predict(Xd).compute(), r.predict(X), rtol=0, atol=1e-9)
    else:
        np.testing.assert_allclose(m.predict_proba(Xd).compute(), r.predict_proba(X),
                                   rtol=0, atol=1e-12)


class _KillOnceOnForestStats(distributed.WorkerPlugin):
    """Kills its worker when the third histogram task of a forest level starts there, once
    (a marker file remembers it across the restarted process)."""

    def __init__(self, marker):
        self.marker, self.seen = marker, 0

    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "executing" and "hardwood-forest-stats-" in str(key):
            self.seen += 1
            if self.seen == 3 and not os.path.exists(self.marker):
                open(self.marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.timeout(240)
def test_forest_histogram_mode_survives_a_killed_worker(own_client, data, tmp_path):
    """A worker SIGKILLed in the middle of a histogram-mode forest: its partitions' state is
    recomputed from the lineage, and the forest is the uninterrupted one."""
    import cloudpickle

    client = own_client
    X, _, _, yc, _ = data
    chunks = (150, 150, 150, 150)
    params = dict(n_estimators=3, random_state=1)
    ref = hardwood.RandomForestClassifier(**params).fit(X, yc)
    marker = str(tmp_path / "killed")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        client.register_plugin(_KillOnceOnForestStats(marker), name="hardwood-test-kill-once")
        m = hd.DaskRandomForestClassifier(**params)
        m.client, m.mode, m._small_rows = client, "histogram", 100
        m.fit(_dask(X, chunks), _dask(yc, chunks))
    finally:
        _unregister(client, "hardwood-test-kill-once")
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert os.path.exists(marker)
    _same_forest(m, ref)


@pytest.mark.timeout(30)
def test_forest_mode_follows_the_workers_memory(client):
    limit = min(w["memory_limit"] for w in client.scheduler_info()["workers"].values())
    assert hd.forest_mode(client, 1000, 28) == "tree"
    assert hd.forest_mode(client, int(limit // 10), 28) == "histogram"


@pytest.mark.timeout(60)
def test_goss_and_init_model_margins(client, data):
    """GOSS reads g and h on the client (gathered from the workers); init_model's margins are
    computed on the workers' bins."""
    X, y, *_ = data
    params = dict(PARAMS, sampling_method="goss", top_rate=0.3, other_rate=0.2)
    ds = hardwood.Dataset(X, y)
    first = hardwood.train(params, ds, num_boost_round=2)
    ref = hardwood.train(params, ds, num_boost_round=3, init_model=first)
    m = hd.train(client, params, _dask(X, (350, 250)), _dask(y, (350, 250)),
                 num_boost_round=3, init_model=first)
    _same_model(m, ref)


def test_an_unweighted_validation_pair_of_weighted_training_data_is_scored_unweighted(client):
    """``train(..., weight=w, valid_sets=[(X, y)])`` scored the pair with the training
    weights (the training set itself was reused, and named 'train'); the in-memory path
    scores it unweighted."""
    import dask.array as da

    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(4000, 4)), 1)
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=4000) > 0).astype(float)
    w = np.where(X[:, 2] > 0, 5.0, 0.2)
    dX, dy, dw = (da.from_array(X, chunks=(2000, 4)), da.from_array(y, chunks=2000),
                  da.from_array(w, chunks=2000))
    p = {"objective": "binary:logistic", "max_depth": 3, "eval_metric": "logloss"}
    model = hd.train(client, p, dX, dy, weight=dw, num_boost_round=3, valid_sets=[(dX, dy)])
    train = hardwood.Dataset(X, y, weight=w)
    plain = hardwood.train(p, train, 3, valid_sets=[hardwood.Dataset(X, y, reference=train)])
    np.testing.assert_allclose(model.evals_result["valid_0"]["logloss"],
                               plain.evals_result["valid_0"]["logloss"], rtol=1e-9)
    weighted = hd.train(client, p, dX, dy, weight=dw, num_boost_round=3,
                        valid_sets=[(dX, dy, dw)])
    assert list(weighted.evals_result) == ["train"]  # the training set itself, its weights
    assert weighted.evals_result["train"]["logloss"] != model.evals_result["valid_0"]["logloss"]


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic"])
def test_starting_margins_train_the_single_machine_model(client, data, objective):
    """``base_margin`` (probe 55: refused before) goes to each partition as its slice; the
    model equals single-machine training on a Dataset with those margins, and a validation
    tuple's margins are scored as ``predict(base_margin=)``."""
    X, y, yb, _, _ = data
    target = yb if objective == "binary:logistic" else y
    m = np.random.default_rng(3).normal(0, 0.5, N)
    params = dict(PARAMS, objective=objective)
    chunks = (200, 150, 250)
    model = hd.train(client, params, da.from_array(X, chunks=(chunks, D)),
                     da.from_array(target, chunks=(chunks,)), num_boost_round=ROUNDS,
                     base_margin=da.from_array(m, chunks=(chunks,)),
                     valid_sets=[(X[:300], target[:300], None, m[:300])])
    whole = hardwood.train(params, hardwood.Dataset(X, target, base_margin=m), ROUNDS)
    np.testing.assert_allclose(model.predict(X, base_margin=m), whole.predict(X, base_margin=m),
                               rtol=1e-9, atol=1e-12)
    pred = model.predict(X[:300], base_margin=m[:300])
    t = target[:300]
    if objective == "binary:logistic":
        want = -np.mean(t * np.log(pred) + (1 - t) * np.log(1 - pred))
        logged = model.evals_result["valid_0"]["logloss"][-1]
    else:
        want = np.sqrt(np.mean((pred - t) ** 2))
        logged = model.evals_result["valid_0"]["rmse"][-1]
    np.testing.assert_allclose(logged, want, rtol=1e-6)


def test_lazy_predict_takes_starting_margins(client, data):
    """``hardwood.dask.predict`` took no ``base_margin`` (the model's base score would have
    stood where XGBoost's rule replaces it); a Dask array of X's rows, or a Series of a
    frame's partitions, now gives ``Model.predict(base_margin=)``'s values."""
    X, y, _, yc, _ = data
    m = np.random.default_rng(5).normal(0, 0.5, N)
    model = hardwood.train(dict(PARAMS), hardwood.Dataset(X, y, base_margin=m), ROUNDS)
    want = model.predict(X, base_margin=m)
    dx = da.from_array(X, chunks=((200, 150, 250), D))
    got = hd.predict(client, model, dx, base_margin=da.from_array(m, chunks=100)).compute()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(hd.predict(client, model, dx, base_margin=m).compute(), want,
                               rtol=1e-12)
    pd = pytest.importorskip("pandas")
    frame = dd.from_pandas(pd.DataFrame(X, columns=[f"f{j}" for j in range(D)]), npartitions=3)
    margins = dd.from_pandas(pd.Series(m), npartitions=3)
    np.testing.assert_allclose(hd.predict(client, model, frame, base_margin=margins)
                               .compute().to_numpy(), want, rtol=1e-12)
    multi = hardwood.train(dict(PARAMS, objective="multi:softprob", num_class=3),
                           hardwood.Dataset(X, yc, base_margin=np.c_[m, -m, m]), ROUNDS)
    np.testing.assert_allclose(
        hd.predict(client, multi, dx, base_margin=np.c_[m, -m, m]).compute(),
        multi.predict(X, base_margin=np.c_[m, -m, m]), rtol=1e-12)
    with pytest.raises(ValueError, match="base_margin has 7 rows"):
        hd.predict(client, model, dx, base_margin=np.zeros(7))


def test_the_dask_estimators_take_starting_margins(client, data):
    """``DaskGBDTRegressor.fit(base_margin=)`` was a bare ``TypeError`` (probe 61); the
    estimators' fit and predict now take them, as ``hardwood.dask.train`` and ``predict``."""
    X, y, yb, _, _ = data
    m = np.random.default_rng(9).normal(0, 0.5, N)
    dx = da.from_array(X, chunks=((300, 300), D))
    dm = da.from_array(m, chunks=((300, 300),))
    reg = hd.DaskGBDTRegressor(n_estimators=ROUNDS, max_depth=3)
    reg.client = client
    reg.fit(dx, da.from_array(y, chunks=((300, 300),)), base_margin=dm)
    whole = hardwood.train({"max_depth": 3, "learning_rate": 0.3},
                           hardwood.Dataset(X, y, base_margin=m), ROUNDS)
    np.testing.assert_allclose(reg.predict(dx, base_margin=dm).compute(),
                               whole.predict(X, base_margin=m), rtol=1e-9)
    clf = hd.DaskGBDTClassifier(n_estimators=ROUNDS, max_depth=3)
    clf.client = client
    clf.fit(dx, da.from_array(yb, chunks=((300, 300),)), base_margin=dm)
    p = clf.predict_proba(dx, base_margin=dm).compute()
    np.testing.assert_allclose(p[:, 1], clf.model_.predict(X, base_margin=m), rtol=1e-9)
    assert not np.allclose(p, clf.predict_proba(dx).compute())
