"""``hardwood.train``: the boosting loop (DESIGN.md's step pipeline), evaluation, callbacks
and early stopping."""
from __future__ import annotations

import time

import numpy as np

from .. import metrics as M
from ..backends.base import make_backend
from ..backends.cpu import fill_row_ids
from ..data.dataset import Dataset
from ..model.model import Model
from ..objectives import get_objective, objective_class
from ..parallel import threads
from .callback import CallbackContainer, EarlyStopping, EvaluationPrinter
from .grower import Grower, GrowParams, Profile
from .params import MAX_CLASSES, resolve_params


def _classes_from_labels(y):
    """The class count of multiclass labels given without ``num_class``: the labels must be
    the codes 0..K-1, every one of them present (a gap or a huge label is a mistake far more
    often than a class with no rows; pass ``num_class`` for that)."""
    if np.any(y != np.floor(y)) or np.any(y < 0):
        raise ValueError("multi:softprob needs integer labels 0..num_class-1; use "
                         "GBDTClassifier to encode arbitrary labels")
    top = float(y.max())
    if top >= MAX_CLASSES:
        raise ValueError(f"multi:softprob labels must be the class codes 0..K-1; the largest "
                         f"label is {top:g} (at most {MAX_CLASSES} classes)")
    present = np.unique(y)
    K = int(top) + 1
    if present.size != K and present.size > 1:  # one class: the objective says so
        absent = np.setdiff1d(np.arange(K), present)
        raise ValueError(f"multi:softprob labels must be the class codes 0..K-1, each present: "
                         f"the labels run to {K - 1} but {absent.size} codes are absent (e.g. "
                         f"{absent[:5].tolist()}). Encode the labels as 0..K-1 (GBDTClassifier "
                         "does it), or pass num_class if some classes truly have no rows")
    return max(K, 2)


def _check_valid_sets(train_set, valid_sets, valid_names):
    if isinstance(valid_sets, Dataset):
        valid_sets = [valid_sets]
    valid_sets = list(valid_sets or [])
    if isinstance(valid_names, str):
        valid_names = [valid_names]
    valid_names = list(valid_names or [])
    if valid_names and len(valid_names) != len(valid_sets):
        raise ValueError(f"valid_names has {len(valid_names)} names for {len(valid_sets)} valid_sets")
    if not valid_names:
        valid_names = ["train" if v is train_set else f"valid_{i}" for i, v in enumerate(valid_sets)]
    for v, name in zip(valid_sets, valid_names):
        if not isinstance(v, Dataset):
            raise TypeError(f"valid set {name!r} must be a hardwood.Dataset")
        if v.label is None:
            raise ValueError(f"valid set {name!r} has no labels")
        if v is not train_set and v.bin_mapper is not train_set.bin_mapper:
            if v.n_features != train_set.n_features or v.feature_names != train_set.feature_names:
                raise ValueError(f"valid set {name!r} has different columns from the training "
                                 f"set ({v.n_features} vs {train_set.n_features} features)")
            raise ValueError(f"valid set {name!r} was binned on its own; build it with "
                             "hardwood.Dataset(X, y, reference=train_set)")
    return valid_sets, valid_names


def train(params, train_set: Dataset, num_boost_round=100, valid_sets=(), valid_names=(),
          early_stopping_rounds=None, callbacks=(), verbose_eval=False) -> Model:
    """Train a gradient-boosted tree model.

    Parameters follow XGBoost's names (LightGBM aliases accepted); see
    ``hardwood.train.params.DEFAULTS``. Early stopping watches the last metric of the last
    validation set, and the model's ``best_iteration`` records the best round.
    """
    p = resolve_params(params)
    if not isinstance(train_set, Dataset):
        raise TypeError(f"train_set must be a hardwood.Dataset, got {type(train_set).__name__}")
    if train_set.label is None:
        raise ValueError("train_set has no labels (pass y= to hardwood.Dataset)")
    if not isinstance(num_boost_round, (int, np.integer)) or num_boost_round < 1:
        raise ValueError(f"num_boost_round must be a positive integer, got {num_boost_round!r}")
    if p["max_bin"] is not None and p["max_bin"] != train_set.max_bin:
        raise ValueError(f"params max_bin={p['max_bin']} differs from the Dataset's max_bin="
                         f"{train_set.max_bin}; build the Dataset with max_bin={p['max_bin']}")
    if early_stopping_rounds is not None:
        if not isinstance(early_stopping_rounds, (int, np.integer)) or early_stopping_rounds < 1:
            raise ValueError("early_stopping_rounds must be a positive integer")
    valid_sets, valid_names = _check_valid_sets(train_set, valid_sets, valid_names)
    if early_stopping_rounds is not None and not valid_sets:
        raise ValueError("early_stopping_rounds needs at least one set in valid_sets")

    y = train_set.label
    n = train_set.n_rows
    if objective_class(p["objective"]).task == "multiclass" and p["num_class"] is None:
        p["num_class"] = _classes_from_labels(y)
    obj = get_objective(p["objective"], p)
    p["objective"] = obj.name
    obj.check_labels(y)
    K = obj.n_outputs
    # unit weights as a read-only stride-0 view (no n-sized array) for the Python-side uses;
    # the gradient kernels take train_set.weight itself (None: a flag, so their loops vectorise)
    w = train_set.weight if train_set.weight is not None else np.broadcast_to(np.float64(1.0), (n,))
    base = obj.base_score(y, w) if p["base_score"] is None else obj.margin_from_user(p["base_score"])
    if not np.all(np.isfinite(base)):
        raise FloatingPointError(f"the base score (the labels' mean or median) is not finite: "
                                 f"labels range from {float(y.min()):g} to {float(y.max()):g}; "
                                 "scale the labels")

    metric_names = p["eval_metric"] or [obj.default_metric]
    for m in metric_names:
        M.get_metric(m)
        M.check_metric_for_objective(m, obj.name)
    if obj.name == "multi:softprob":  # a label >= num_class would index past the outputs
        for v in valid_sets:
            if v is not train_set:
                obj.check_labels(v.label)

    profile = Profile()
    cbs = CallbackContainer(list(callbacks or []))
    if verbose_eval:
        period = 1 if verbose_eval is True else int(verbose_eval)
        cbs.callbacks.append(EvaluationPrinter(period))
    es = None
    if early_stopping_rounds is not None:
        es = EarlyStopping(int(early_stopping_rounds), metric_names[-1], valid_names[-1],
                           maximize=metric_names[-1] in M.HIGHER_IS_BETTER)
        cbs.callbacks.append(es)

    rng = np.random.default_rng(p["random_state"])
    gp = GrowParams(**{k: p[k] for k in GrowParams.__dataclass_fields__})
    t_start = time.perf_counter()
    with threads(p["n_jobs"]):
        backend = make_backend(p["backend"], train_set)
        grower = Grower(backend, train_set.bin_mapper, gp, profile, rng)
        pred = np.empty((K, n))
        pred[:] = base[:, None]
        g = np.empty((K, n), dtype=np.float32)
        h = np.empty((K, n), dtype=np.float32)
        valid_pred = []
        for v in valid_sets:
            vp = np.empty((K, v.n_rows))
            vp[:] = base[:, None]
            valid_pred.append(vp)
        trees, groups = [], []
        evals_result = {name: {m: [] for m in metric_names} for name in valid_names}
        d = train_set.n_features
        all_rows = None  # the row ids of an unsampled tree, refilled in place for each tree
        model = Model([], [], base, obj.name, K, train_set.info, params=p)
        cbs.before_training(model)
        for it in range(int(num_boost_round)):
            if cbs.before_iteration(model, it, evals_result):
                break
            t0 = time.perf_counter()
            obj.gradients(pred, y, train_set.weight, g, h)
            t0 = profile.add("update", t0)
            if p["subsample"] < 1.0:
                rows = np.flatnonzero(rng.random(n) < p["subsample"]).astype(np.int32)
                if rows.size == 0:
                    rows = np.zeros(1, dtype=np.int32)
            else:
                if all_rows is None:
                    all_rows = np.empty(n, dtype=np.int32)
                fill_row_ids(all_rows)
                rows = all_rows
            sampled = rows.size < n
            if p["colsample_bytree"] < 1.0:
                k = max(1, int(p["colsample_bytree"] * d))
                tree_mask = np.zeros(d, dtype=np.bool_)
                tree_mask[rng.choice(d, k, replace=False)] = True
            else:
                tree_mask = np.ones(d, dtype=np.bool_)
            t0 = profile.add("other", t0)
            for k in range(K):
                tree_rows = rows if k == K - 1 else rows.copy()
                tree, binned, (lb, le, leaves) = grower.grow(tree_rows, g[k], h[k], tree_mask)
                t0 = time.perf_counter()
                if obj.refit_leaves:
                    _refit_leaves(obj, tree, binned, tree_rows, lb, le, leaves, y, pred[k], w,
                                  p["learning_rate"])
                if sampled:
                    backend.predict_binned(train_set.bins_row, binned, pred[k])
                else:
                    backend.add_leaf_values(tree_rows, lb, le, binned.value[leaves], pred[k])
                for v, vp in zip(valid_sets, valid_pred):
                    if v is train_set:
                        continue
                    backend.predict_binned(v.bins_row, binned, vp[k])
                profile.add("update", t0)
                if not np.all(np.isfinite(tree.value)):
                    raise FloatingPointError(_non_finite_message(it, k, y, p))
                trees.append(tree)
                groups.append(k)
            model.trees = trees
            model.tree_group = np.asarray(groups, dtype=np.int32)
            t0 = time.perf_counter()
            for v, vp, name in zip(valid_sets, valid_pred, valid_names):
                margin = (pred if v is train_set else vp).T
                out = obj.transform(margin)
                vw = v.weight if v.weight is not None else np.ones(v.n_rows)
                for m in metric_names:
                    evals_result[name][m].append(M.get_metric(m)(v.label, out, vw))
            profile.add("other", t0)
            if cbs.after_iteration(model, it, evals_result):
                break
        cbs.after_training(model)
    total = time.perf_counter() - t_start
    prof = dict(profile.seconds)
    prof["total"] = total
    prof["other"] = max(0.0, total - sum(v for k, v in prof.items() if k not in ("other", "total")))
    model.trees = trees
    model.tree_group = np.asarray(groups, dtype=np.int32)
    model.evals_result = evals_result
    model.training_profile = prof
    if es is not None and es.best_iteration is not None:
        model.best_iteration = es.best_iteration
        model.best_score = es.best_score
    model._packed = None
    if p["verbose"]:
        print(format_profile(prof))
    return model


def _non_finite_message(it, k, y, p):
    return (f"training diverged: round {it} (output {k}) produced a non-finite leaf value "
            f"(labels range from {float(y.min()):g} to {float(y.max()):g}; gradients are float32, "
            f"so labels beyond about 1e38, or a learning_rate of {p['learning_rate']:g}, can "
            "overflow). Scale the labels or lower learning_rate; no model was returned")


def format_profile(prof) -> str:
    total = prof.get("total", 0.0) or 1e-12
    parts = [f"{name} {prof[key]:.3f}s ({100 * prof[key] / total:.0f}%)"
             for key, name in (("histogram", "① histogram"), ("split", "② split"),
                               ("partition", "③ partition"), ("update", "⑤ update"),
                               ("other", "other"))]
    return f"[hardwood] training {total:.3f}s: " + ", ".join(parts)


def _refit_leaves(obj, tree, binned, rows, lb, le, leaves, y, pred_k, w, lr):
    """Leaf value = learning_rate x objective's optimum over the leaf's residuals
    (the weighted median for reg:absoluteerror)."""
    for b, e, leaf in zip(lb, le, leaves):
        r = rows[b:e]
        if r.size == 0:
            continue
        v = lr * obj.leaf_value(y[r] - pred_k[r], w[r])
        tree.value[leaf] = v
        binned.value[leaf] = v
