"""The objective registry (hardwood.objectives): one entry per objective, read by model files,
the output transforms, metrics, the CLI, the training parameters and the estimators."""
import ast
import inspect

import numpy as np
import pytest

import hardwood
from hardwood import metrics as M
from hardwood import objectives as O
from hardwood.cli import main
from hardwood.data.convert import FeatureInfo
from hardwood.importers import lightgbm as lgb_importer
from hardwood.importers import sklearn as sk_importer
from hardwood.importers import xgboost as xgb_importer
from hardwood.model.io import (KNOWN_OBJECTIVES, ModelFormatError, load_model, model_from_dict,
                               model_to_dict, model_to_json)
from hardwood.model.model import Model
from hardwood.model.tree import Tree
from hardwood.predict import transform as T

TASKS = ("regression", "binary", "multiclass", "ranking")
CODES = (T.IDENTITY, T.SIGMOID, T.SOFTMAX, T.EXP, T.HINGE, T.ARGMAX, T.SOFTPLUS,
         T.PROBABILITY)
ALL = list(O.OBJECTIVES)
TRAINABLE = O.names(trainable=True)
PREDICT_ONLY = O.names(trainable=False)
# imported models' objectives that hardwood predicts (see the importers)
IMPORTED = ["reg:logistic", "multiclassova", "binary:hinge", "multi:softmax",
            "cross_entropy_lambda", "multi:proba"]
# imported models' objectives that hardwood trains too (since session 26)
IMPORTED_TRAINED = ["count:poisson", "reg:gamma", "reg:tweedie"]


# -- the entries ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
def test_every_entry_is_complete(name):
    o = O.OBJECTIVES[name]
    assert o.name == name
    assert o.task in TASKS
    assert o.outputs in ("one", "per_class", "any")
    assert o.transform_code in CODES
    assert o.trainable == (name in TRAINABLE)


def test_trainable_and_predict_only_objectives():
    assert set(TRAINABLE) == {"reg:squarederror", "reg:absoluteerror", "reg:pseudohubererror",
                              "count:poisson", "reg:gamma", "reg:tweedie",
                              "reg:quantileerror",
                              "binary:logistic", "multi:softprob", "rank:ndcg",
                              "rank:pairwise"}
    assert set(IMPORTED) <= set(PREDICT_ONLY)
    assert set(IMPORTED_TRAINED) <= set(TRAINABLE)
    assert set(TRAINABLE) | set(PREDICT_ONLY) == set(ALL)


@pytest.mark.parametrize("name", TRAINABLE)
def test_every_trainable_name_resolves(name):
    assert O.objective_class(name) is O.OBJECTIVES[name]


@pytest.mark.parametrize("alias", sorted(O.ALIASES))
def test_every_alias_resolves_to_a_trainable_objective(alias):
    cls = O.objective_class(alias)
    assert cls.name == O.ALIASES[alias] and cls.trainable


@pytest.mark.parametrize("name", [n for n in PREDICT_ONLY if n not in O.ALIASES])
def test_predict_only_objectives_cannot_be_trained(name):
    with pytest.raises(ValueError, match="cannot train"):
        O.objective_class(name)
    X, y = np.random.default_rng(0).normal(size=(50, 2)), np.arange(50) % 2
    with pytest.raises(ValueError, match="cannot train"):
        hardwood.train({"objective": name}, hardwood.Dataset(X, y.astype(float)), 2)


def test_unknown_objective_names_the_trainable_ones():
    with pytest.raises(ValueError, match="unknown objective 'nonsense'.*binary:logistic"):
        O.objective_class("nonsense")


def test_multi_softmax_trains_softprob_but_a_file_of_it_predicts_the_class():
    assert O.objective_class("multi:softmax").name == "multi:softprob"
    assert O.OBJECTIVES["multi:softmax"].transform_code == T.ARGMAX


@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
def test_default_objective_of_each_task(task):
    o = O.OBJECTIVES[O.DEFAULT_OBJECTIVE[task]]
    assert o.trainable and o.task == task
    assert O.names(task=task, trainable=True)[0] == o.name


@pytest.mark.parametrize("name", TRAINABLE)
def test_every_trainable_objective_has_gradients_a_metric_and_a_transform(name):
    cls = O.OBJECTIVES[name]
    assert cls.gradients is not O.Objective.gradients
    assert (cls.default_metric in M.METRICS or M.is_ranking(cls.default_metric)
            # (metrics of a parameter: tweedie's power, the quantile)
            or cls.default_metric in ("tweedie-nloglik@1.5", M.QUANTILE))
    M.get_metric(cls.default_metric, {"quantile_alpha": 0.3})
    M.check_metric_for_objective(cls.default_metric, name)
    assert M.metrics_for_objective(name)[0] == cls.default_metric
    for m in M.metrics_for_objective(name):
        M.check_metric_for_objective(m, name)
    K = 3 if cls.outputs == "per_class" else 1
    obj = O.get_objective(name, {"num_class": K, "huber_slope": 1.0, "quantile_alpha": 0.3})
    assert obj.n_outputs == K
    rng = np.random.default_rng(1)
    y = (np.arange(20) % K).astype(np.float64) if K > 1 else (np.arange(20) % 2).astype(float)
    if cls.transform_code == T.EXP:  # counts and positive amounts (reg:gamma: above 0)
        y = y + 1.0
    obj.check_labels(y)
    pred = rng.normal(size=(K, 20))
    g, h = np.zeros((K, 20)), np.zeros((K, 20))
    if cls.task == "ranking":  # two queries of 10 rows
        obj.set_queries(np.array([0, 10, 20]))
    obj.gradients(pred, y, None, g, h)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h)) and np.all(h > 0)
    assert np.any(g != 0)


@pytest.mark.parametrize("name", PREDICT_ONLY)
def test_predict_only_objectives_have_no_metric(name):
    assert O.OBJECTIVES[name].default_metric is None
    assert M.metrics_for_objective(name) == ()


def test_metrics_refuse_an_objective_of_another_task():
    with pytest.raises(ValueError, match="needs objective 'binary:logistic'"):
        M.check_metric_for_objective("auc", "reg:squarederror")
    with pytest.raises(ValueError, match="needs objective 'multi:softprob'"):
        M.check_metric_for_objective("mlogloss", "binary")
    M.check_metric_for_objective("rmse", "binary:logistic")  # scores any prediction


# -- one transform: Model.predict and the compiled runtimes give the same floats --------------
def _lookup_tree(values):
    """A balanced tree over feature 0 (len(values) a power of two) whose leaf ``r``, reached by
    x = r, holds values[r]. Nodes are numbered breadth-first, so the children of the k-th
    internal node are 2k + 1 and 2k + 2."""
    feature, threshold, value = [], [], []
    queue = [(0, len(values))]
    while queue:
        lo, hi = queue.pop(0)
        if hi - lo == 1:
            feature.append(-1), threshold.append(0.0), value.append(values[lo])
        else:
            mid = (lo + hi) // 2
            feature.append(0), threshold.append(mid - 0.5), value.append(0.0)
            queue += [(lo, mid), (mid, hi)]
    n = len(feature)
    k = np.cumsum(np.array(feature) >= 0) - 1  # rank of each internal node
    left = np.where(np.array(feature) >= 0, 2 * k + 1, -1)
    return Tree.from_arrays(feature=feature, threshold=threshold, left=left,
                            right=np.where(left >= 0, left + 1, -1),
                            default_left=np.zeros(n, bool), is_categorical=np.zeros(n, bool),
                            cat_offset=np.full(n, -1), value=value, gain=np.zeros(n),
                            cover=np.zeros(n), count=np.zeros(n))


N_ROWS = 64


def _margins(K, seed):
    """Random margins with extreme ones (+-1e3, +-40, ties), NaN-free."""
    rng = np.random.default_rng(seed)
    m = rng.normal(scale=4.0, size=(N_ROWS, K))
    m[:8] = rng.choice([-1e3, 1e3, -40.0, 40.0, 0.0], size=(8, K))
    m[8] = m[8, 0]  # a tie between the outputs
    return m


def _model(objective, margins):
    K = margins.shape[1]
    trees = [_lookup_tree(margins[:, k]) for k in range(K)]
    info = FeatureInfo(names=["x"], is_categorical=np.zeros(1, bool), categories=[None])
    return Model(trees, np.arange(K), np.zeros(K), objective, K, info)


def _n_outputs(name):
    return 1 if O.OBJECTIVES[name].outputs == "one" else 4


@pytest.mark.parametrize("name", ALL)
def test_transform_margin_is_the_runtime_kernel(name):
    margins = _margins(_n_outputs(name), seed=2)
    got = O.transform_margin(name, margins)
    ref = margins.copy()
    code = O.transform_code(name)
    T.transform_inplace(code, ref)
    ref = ref[:, 0] if ref.shape[1] == 1 or code == T.ARGMAX else ref
    assert got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)
    assert not np.isnan(got).any()
    np.testing.assert_array_equal(margins, _margins(_n_outputs(name), seed=2))  # untouched


@pytest.mark.parametrize("name", ALL)
def test_model_predict_equals_compiled_runtimes_bit_for_bit(name):
    margins = _margins(_n_outputs(name), seed=3)
    m = _model(name, margins)
    X = np.arange(N_ROWS, dtype=np.float64).reshape(-1, 1)
    raw = m.predict(X, output="raw")
    np.testing.assert_array_equal(raw.reshape(N_ROWS, -1), margins)
    ref = m.predict(X)  # objectives.transform_margin
    assert not np.isnan(ref).any()
    for rt in ("naive", "pred"):
        c = hardwood.compile(m, rt)
        assert (c._one is not None) == (rt == "pred")
        got = c.predict(X)  # the batch path
        assert got.shape == ref.shape and got.dtype == ref.dtype
        np.testing.assert_array_equal(got, ref)
        for i in (0, 3, 8, 20):  # the one-row kernels
            np.testing.assert_array_equal(c.predict(X[i:i + 1]), ref[i:i + 1])


def test_transforms_of_the_imported_objectives():
    """Each code's meaning, on values where the answer is exact."""
    z = np.array([[0.0], [1e3], [-1e3]])
    np.testing.assert_array_equal(O.transform_margin("reg:logistic", z), [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(O.transform_margin("count:poisson", z[[0, 2]]), [1.0, 0.0])
    np.testing.assert_array_equal(O.transform_margin("binary:hinge", z), [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(O.transform_margin("cross_entropy_lambda", z[[0]]),
                                  [np.log(2.0)])
    z3 = np.array([[1.0, 3.0, 2.0], [5.0, 5.0, -1.0]])
    np.testing.assert_array_equal(O.transform_margin("multi:softmax", z3), [1.0, 0.0])
    np.testing.assert_array_equal(O.transform_margin("multi:proba", z3), np.clip(z3, 0, 1))
    np.testing.assert_allclose(O.transform_margin("multi:softprob", z3).sum(axis=1), 1.0)
    np.testing.assert_array_equal(O.transform_margin("reg:squarederror", z), z[:, 0])


# -- model files ---------------------------------------------------------------------------------
def test_io_knows_exactly_the_registered_names():
    assert set(KNOWN_OBJECTIVES) == set(ALL)


@pytest.mark.parametrize("name", ALL)
def test_a_model_file_of_every_registered_objective_loads(name):
    m = _model(name, _margins(_n_outputs(name), seed=4))
    back = load_model(model_to_json(m))
    assert back.objective == name and back.n_outputs == m.n_outputs
    X = np.arange(N_ROWS, dtype=np.float64).reshape(-1, 1)
    np.testing.assert_array_equal(back.predict(X), m.predict(X))


@pytest.mark.parametrize("name", ["no:such", "multiclass", "softmax", "regression",
                                  "Binary:Logistic", ""])
def test_a_model_file_of_an_unregistered_objective_is_refused(name):
    """Aliases are for training: a file holds the canonical name."""
    d = model_to_dict(_model("reg:squarederror", _margins(1, seed=5)))
    d["objective"] = name
    with pytest.raises(ModelFormatError, match=r"unknown objective .*reg:squarederror"):
        model_from_dict(d)


@pytest.mark.parametrize("name", ALL)
def test_a_model_file_whose_outputs_do_not_fit_its_objective_is_refused(name):
    outputs = O.OBJECTIVES[name].outputs
    for K in (1, 3):
        d = model_to_dict(_model(name, _margins(K, seed=6)))
        if outputs == "any" or (outputs == "per_class") == (K > 1):
            assert model_from_dict(d).n_outputs == K
        else:
            with pytest.raises(ModelFormatError, match="does not fit objective"):
                model_from_dict(d)


# -- the importers emit registered names only ---------------------------------------------------
def _strings(node):
    """String constants of an expression, without the keys of dict literals (peer names)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Dict):
        for v in node.values:
            yield from _strings(v)
    else:
        for child in ast.iter_child_nodes(node):
            yield from _strings(child)


def _emitted_by_source(module):
    """Objective names written in an importer's code: assigned to ``objective``, compared with
    it, or passed to ``make_model``."""
    found = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "objective"
                                                for t in node.targets):
            found |= set(_strings(node.value))
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) \
                and node.left.id == "objective":
            for c in node.comparators:
                found |= set(_strings(c))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "make_model":
            args = node.args[4:5] + [k.value for k in node.keywords if k.arg == "objective"]
            for a in args:
                found |= set(_strings(a))
    return found


def test_every_objective_an_importer_can_emit_is_registered():
    emitted = {v[0] for v in xgb_importer._OBJ.values()}
    emitted |= set(lgb_importer._OBJ.values()) | set(sk_importer._HGB_LOSS.values())
    for module in (xgb_importer, lgb_importer, sk_importer):
        emitted |= _emitted_by_source(module)
    assert set(IMPORTED) | set(IMPORTED_TRAINED) <= emitted  # the scan finds them
    assert emitted - set(ALL) == set()


# -- the CLI -------------------------------------------------------------------------------------
def test_cli_help_lists_the_registered_objectives(capsys):
    assert main(["train", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for name in TRAINABLE + list(O.ALIASES):
        assert name in out
    for name in PREDICT_ONLY:
        if name not in O.ALIASES:
            assert name not in out
