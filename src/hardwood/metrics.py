"""Evaluation metrics (weighted). Each takes labels, the transformed prediction
(probabilities for classification) and weights, and returns a float; ``HIGHER_IS_BETTER``
tells early stopping which way to go."""
from __future__ import annotations

import numpy as np

from .objectives import OBJECTIVES, metric_label_problem, names, objective_class
from .ranking import parse_ranking_metric, ranking_metric

EPS = 1e-15


def rmse(y, p, w):
    return float(np.sqrt(np.average((p - y) ** 2, weights=w)))


def mae(y, p, w):
    return float(np.average(np.abs(p - y), weights=w))


def logloss(y, p, w):
    p = np.clip(p, EPS, 1 - EPS)
    return float(np.average(-(y * np.log(p) + (1 - y) * np.log(1 - p)), weights=w))


def error(y, p, w):
    """XGBoost's binary error: a row predicted positive (p > 0.5) errs by 1 - y, one predicted
    negative by y, so that a soft label y in [0, 1] counts as y positives and 1 - y negatives
    (as logloss and auc count it); with 0/1 labels, the share of wrong rows. Rounding the
    label at 0.5 gave 0.156 where XGBoost's error was 0.275 on the same model."""
    return float(np.average(np.where(p > 0.5, 1.0 - y, y), weights=w))


def auc(y, p, w):
    """Weighted ROC AUC with ties counted as half."""
    order = np.argsort(p, kind="mergesort")
    p, y, w = p[order], y[order], w[order]
    pos = w * y
    neg = w * (1 - y)
    # group ties
    boundaries = np.flatnonzero(np.diff(p)) + 1
    starts = np.concatenate([[0], boundaries])
    gpos = np.add.reduceat(pos, starts)
    gneg = np.add.reduceat(neg, starts)
    cum_neg_before = np.concatenate([[0.0], np.cumsum(gneg)[:-1]])
    total_pos, total_neg = gpos.sum(), gneg.sum()
    if total_pos <= 0 or total_neg <= 0:
        return float("nan")
    return float(np.sum(gpos * (cum_neg_before + 0.5 * gneg)) / (total_pos * total_neg))


def mlogloss(y, p, w):
    idx = y.astype(np.int64)
    pr = np.clip(p[np.arange(y.shape[0]), idx], EPS, 1.0)
    return float(np.average(-np.log(pr), weights=w))


def merror(y, p, w):
    return float(np.average(np.argmax(p, axis=1) != y.astype(np.int64), weights=w))


METRICS = {"rmse": rmse, "mae": mae, "logloss": logloss, "auc": auc, "error": error,
           "mlogloss": mlogloss, "merror": merror}
HIGHER_IS_BETTER = {"auc"}
# LightGBM's names of the same metrics, named in the error for an unknown metric (its 'l2'
# is the mean squared error, which hardwood scores as its root)
LIGHTGBM_METRICS = {"l2": "'rmse', its root", "l2_root": "'rmse'",
                    "root_mean_squared_error": "'rmse'", "l1": "'mae'",
                    "mean_absolute_error": "'mae'", "binary_logloss": "'logloss'",
                    "binary_error": "'error'", "multi_logloss": "'mlogloss'",
                    "multi_error": "'merror'"}
# the task (objectives.Objective.task) whose predictions a metric scores: a binary or multiclass
# metric needs an objective of its task; rmse and mae score any prediction
TASK = {"rmse": "regression", "mae": "regression", "logloss": "binary", "auc": "binary",
        "error": "binary", "mlogloss": "multiclass", "merror": "multiclass"}


def get_metric(name):
    """The metric ``name``: a function (y, pred, w) -> float; a ranking metric ('ndcg@10',
    'map@5', 'pre@3', 'ndcg', ...: ``hardwood.ranking``) takes the queries too, ``group=``."""
    if isinstance(name, str) and parse_ranking_metric(name) is not None:
        def metric(y, p, w, group=None, gain=None):
            if group is None:
                raise ValueError(f"eval_metric {name!r} needs query groups: build the Dataset "
                                 "with group= or qid=")
            return ranking_metric(name, y, p, group, gain, w)
        return metric
    if name not in METRICS:
        hint = LIGHTGBM_METRICS.get(name)
        hint = f" (for LightGBM's {name!r}, use {hint})" if hint else ""
        raise ValueError(f"unknown eval_metric {name!r}{hint}; expected one of "
                         f"{sorted(METRICS)} or a ranking metric (ndcg, map, pre, with an "
                         "optional @k)")
    return METRICS[name]


def is_ranking(name) -> bool:
    return isinstance(name, str) and parse_ranking_metric(name) is not None


def higher_is_better(name) -> bool:
    return name in HIGHER_IS_BETTER or is_ranking(name)


def check_metric_for_objective(name, objective_name):
    """Refuse a metric that cannot score the trained objective's predictions."""
    task = "ranking" if is_ranking(name) else TASK.get(name)
    if task == "regression" and objective_class(objective_name).task == "multiclass":
        # one prediction per row against the (n, K) class probabilities
        raise ValueError(f"eval_metric {name!r} scores one prediction per row, but "
                         f"{objective_name!r} predicts a probability per class; use 'mlogloss' "
                         "or 'merror'")
    if task in ("binary", "multiclass", "ranking") and \
            objective_class(objective_name).task != task:
        wanted = " or ".join(map(repr, names(task=task, trainable=True)))
        raise ValueError(f"eval_metric {name!r} needs objective {wanted}, "
                         f"not {objective_name!r}")


def metrics_for_objective(objective_name):
    """The metrics that score a model of this objective (its default metric first); none for
    an objective hardwood does not train (its predictions may not be what they score)."""
    o = OBJECTIVES.get(objective_name)
    if o is None or not o.trainable:
        return ()
    return (o.default_metric,) + tuple(m for m, t in TASK.items()
                                       if t == o.task and m != o.default_metric)


def score_model(model, y, pred):
    """``(scores, problem)``: the ``(metric, value)`` pairs of a model's predictions ``pred``
    against labels ``y`` (unweighted, ranking metrics left out: they need queries), or no
    scores and why, when the labels lie outside what the objective's metrics read (a binary
    model against -1/+1 labels printed a negative logloss)."""
    problem = metric_label_problem(model.objective, model.n_outputs, y)
    if problem is not None:
        return [], problem
    w = np.ones(y.shape[0])
    return [(m, get_metric(m)(y, pred, w)) for m in metrics_for_objective(model.objective)
            if not is_ranking(m)], None


RANKING_REPORT_METRICS = ("ndcg@1", "ndcg@3", "ndcg@10", "map@10")


def score_ranking(model, y, pred, ptr):
    """``(scores, problem)`` of a ranking model's predictions ``pred`` over the queries
    ``ptr`` (boundaries): NDCG@1, 3, 10 and MAP@10 with the model's ``label_gain``, or no
    scores and why, when the labels are not the graded relevance the model was trained on."""
    from .ranking import check_ranking_labels, label_gains, ranking_metric

    try:
        check_ranking_labels(y, "ranking", model.params.get("label_gain"))
    except ValueError as e:
        return [], str(e)
    gain = label_gains(model.params, y)
    return [(m, ranking_metric(m, y, pred, ptr, gain)) for m in RANKING_REPORT_METRICS], None
