"""Evaluation metrics (weighted). Each takes labels, the transformed prediction
(probabilities for classification) and weights, and returns a float; ``HIGHER_IS_BETTER``
tells early stopping which way to go."""
from __future__ import annotations

import numpy as np

from .objectives import (OBJECTIVES, metric_label_problem, names, objective_class,
                         tweedie_metric)
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


# The metrics of counts and positive amounts (count:poisson, reg:gamma, reg:tweedie), by
# XGBoost's names and rules (float32 rows, as XGBoost's) and by LightGBM's. Each takes the
# predictions (exp of the margins), not the margins.
def _f32(y, p):
    return np.asarray(y, dtype=np.float32), np.asarray(p, dtype=np.float32)


def _mean(rows, w):
    """The weighted mean of float32 ``rows``, summed in float64 (as XGBoost's)."""
    return float(np.average(rows.astype(np.float64), weights=w))


def poisson_nloglik(y, p, w):
    """XGBoost's: lgamma(y + 1) + p - y log p, with p at least 1e-16."""
    from scipy.special import gammaln  # (on first use: not at hardwood's import)

    y, p = _f32(y, p)
    p = np.maximum(p, np.float32(1e-16))
    return _mean(gammaln(y + np.float32(1)).astype(np.float32) + p - np.log(p) * y, w)


def gamma_nloglik(y, p, w):
    """XGBoost's (dispersion 1): y / p + log p, with p at least 1e-6."""
    y, p = _f32(y, p)
    p = np.maximum(p, np.float32(1e-6))
    return _mean(y / p + np.log(p), w)


def gamma_deviance(y, p, w):
    """XGBoost's: 2 (log(p / y) + y / p - 1), each taken 1e-6 up."""
    y, p = _f32(y, p)
    p, y = p + np.float32(1e-6), y + np.float32(1e-6)
    return 2.0 * _mean(np.log(p / y) + y / p - np.float32(1), w)


def _tweedie_rows(y, p, rho):
    """Each row's Tweedie negative log-likelihood of power ``rho``, in the inputs' float
    type: -y p^(1-rho) / (1-rho) + p^(2-rho) / (2-rho)."""
    a = y * np.exp((1 - rho) * np.log(p)) / (1 - rho)
    b = np.exp((2 - rho) * np.log(p)) / (2 - rho)
    return b - a


def tweedie_nloglik(rho):
    """XGBoost's ``tweedie-nloglik@rho``, in float32 rows."""
    def metric(y, p, w):
        y, p = _f32(y, p)
        return _mean(_tweedie_rows(y, p, np.float32(rho)), w)
    return metric


def lightgbm_poisson(y, p, w):
    """LightGBM's 'poisson': p - y log p, with p at least 1e-10 (no log(y!) term)."""
    p = np.maximum(p, float(np.float32(1e-10)))
    return float(np.average(p - y * np.log(p), weights=w))


def _safe_log(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf)


def lightgbm_tweedie(rho):
    """LightGBM's 'tweedie' of power ``rho``: XGBoost's formula in float64, the predictions
    clipped at 1e-10."""
    def metric(y, p, w):
        p = np.maximum(p, float(np.float32(1e-10)))
        return float(np.average(_tweedie_rows(y, p, rho), weights=w))
    return metric


def lightgbm_gamma(y, p, w):
    """LightGBM's 'gamma' (dispersion 1): its terms log y - log y cancel, y / p + log p."""
    _positive(y, "gamma")
    return float(np.average(y / p - _safe_log(1.0 / p), weights=w))


def lightgbm_gamma_deviance(y, p, w):
    """LightGBM's 'gamma_deviance': twice the sum of r - log r - 1, r = y / (p + 1e-9), over
    every row, not its mean (LightGBM's own rule, kept)."""
    _positive(y, "gamma_deviance")
    r = y / (p + 1e-9)
    w = np.ones_like(r) if w is None else w
    return float(2.0 * np.sum((r - _safe_log(r) - 1.0) * w))


def quantile(alphas):
    """The pinball loss of the quantiles ``alphas`` (XGBoost's and LightGBM's ``quantile``):
    alpha (y - p) where y >= p, (1 - alpha) (p - y) below; with several quantiles (one
    prediction column each), their mean, as XGBoost's."""
    a = np.asarray(alphas, dtype=np.float64)

    def metric(y, p, w):
        p = np.asarray(p, dtype=np.float64).reshape(y.shape[0], -1)
        d = y[:, None] - p
        loss = np.where(d >= 0, a * d, (a - 1.0) * d).mean(axis=1)
        return float(np.average(loss, weights=w))
    return metric


def _positive(y, name):
    if np.any(y <= 0):
        raise ValueError(f"metric {name!r} needs labels above 0 (LightGBM's rule)")


METRICS = {"rmse": rmse, "mae": mae, "logloss": logloss, "auc": auc, "error": error,
           "mlogloss": mlogloss, "merror": merror, "poisson-nloglik": poisson_nloglik,
           "gamma-nloglik": gamma_nloglik, "gamma-deviance": gamma_deviance,
           "poisson": lightgbm_poisson, "gamma": lightgbm_gamma,
           "gamma_deviance": lightgbm_gamma_deviance}
TWEEDIE = "tweedie-nloglik"  # its variance power follows an @: tweedie-nloglik@1.5
QUANTILE = "quantile"  # its quantile is the training's quantile_alpha
LIGHTGBM_TWEEDIE = "tweedie"  # its power is the training's tweedie_variance_power
# the metrics reported for every model of their task (the others are chosen by name)
GENERAL = ("rmse", "mae", "logloss", "auc", "error", "mlogloss", "merror")
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
        "error": "binary", "mlogloss": "multiclass", "merror": "multiclass",
        QUANTILE: "regression", LIGHTGBM_TWEEDIE: "regression",
        **{m: "regression" for m in METRICS if m not in GENERAL}}


def _tweedie_power(name):
    """The variance power of ``tweedie-nloglik@rho``, or None for another name."""
    if not (isinstance(name, str) and name.startswith(TWEEDIE)):
        return None
    rho = name[len(TWEEDIE):]
    try:
        value = float(rho[1:]) if rho.startswith("@") else None
    except ValueError:
        value = None
    if value is None or not 1.0 <= value < 2.0:
        raise ValueError(f"eval_metric {name!r}: write it {TWEEDIE}@rho, with the variance "
                         "power rho in [1, 2) (as XGBoost's)")
    return value


def get_metric(name, params=None):
    """The metric ``name``: a function (y, pred, w) -> float; a ranking metric ('ndcg@10',
    'map@5', 'pre@3', 'ndcg', ...: ``hardwood.ranking``) takes the queries too, ``group=``.
    ``params``: the training's, where 'quantile' reads its ``quantile_alpha``."""
    if name == QUANTILE:
        alpha = (params or {}).get("quantile_alpha")
        if alpha is None:
            raise ValueError("eval_metric 'quantile' scores the quantile of the training's "
                             "quantile_alpha (objective 'reg:quantileerror' or 'quantile')")
        lightgbm = str(params.get("objective", "")).lower() == "quantile"
        alphas = alpha if isinstance(alpha, (list, tuple)) else [alpha]
        return quantile([float(a) if lightgbm else float(np.float32(a))  # (XGBoost's)
                         for a in alphas])
    if isinstance(name, str) and parse_ranking_metric(name) is not None:
        def metric(y, p, w, group=None, gain=None):
            if group is None:
                raise ValueError(f"eval_metric {name!r} needs query groups: build the Dataset "
                                 "with group= or qid=")
            return ranking_metric(name, y, p, group, gain, w)
        return metric
    rho = _tweedie_power(name)
    if rho is not None:
        return tweedie_nloglik(rho)
    if name == LIGHTGBM_TWEEDIE:
        return lightgbm_tweedie(float((params or {}).get("tweedie_variance_power") or 1.5))
    if name not in METRICS:
        hint = LIGHTGBM_METRICS.get(name)
        hint = f" (for LightGBM's {name!r}, use {hint})" if hint else ""
        known = sorted(METRICS) + [QUANTILE, LIGHTGBM_TWEEDIE, TWEEDIE + "@rho"]
        raise ValueError(f"unknown eval_metric {name!r}{hint}; expected one of {known} or a "
                         "ranking metric (ndcg, map, pre, with an optional @k)")
    return METRICS[name]


def is_ranking(name) -> bool:
    return isinstance(name, str) and parse_ranking_metric(name) is not None


def higher_is_better(name) -> bool:
    return name in HIGHER_IS_BETTER or is_ranking(name)


def check_metric_for_objective(name, objective_name):
    """Refuse a metric that cannot score the trained objective's predictions."""
    task = ("ranking" if is_ranking(name) else
            "regression" if _tweedie_power(name) is not None else TASK.get(name))
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


def metrics_for_objective(objective_name, params=None):
    """The metrics that score a model of this objective (its default metric first; with
    the model's ``params``, that of its parameters: ``tweedie-nloglik@1.2`` for a power of
    1.2, reported as @1.5 before); none for an objective hardwood does not train (its
    predictions may not be what they score)."""
    o = OBJECTIVES.get(objective_name)
    if o is None or not o.trainable:
        return ()
    default = o.default_metric
    if params and objective_name == "reg:tweedie":
        default = tweedie_metric(params.get("tweedie_variance_power") or 1.5,
                                 str(params.get("objective", "")).lower() == "tweedie")
    if params and isinstance(params.get("quantile_alpha"), (list, tuple)):
        return (default,)  # (one column per quantile: rmse and mae score one)
    return (default,) + tuple(m for m in GENERAL if TASK[m] == o.task and m != default)


def score_model(model, y, pred):
    """``(scores, problem)``: the ``(metric, value)`` pairs of a model's predictions ``pred``
    against labels ``y`` (unweighted, ranking metrics left out: they need queries), or no
    scores and why, when the labels lie outside what the objective's metrics read (a binary
    model against -1/+1 labels printed a negative logloss)."""
    problem = metric_label_problem(model.objective, model.n_outputs, y)
    if problem is not None:
        return [], problem
    w = np.ones(y.shape[0])
    return [(m, get_metric(m, model.params)(y, pred, w))
            for m in metrics_for_objective(model.objective, model.params)
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
