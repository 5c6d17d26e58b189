"""Evaluation metrics (weighted). Each takes labels, the transformed prediction
(probabilities for classification) and weights, and returns a float; ``HIGHER_IS_BETTER``
tells early stopping which way to go."""
from __future__ import annotations

import numpy as np

EPS = 1e-15


def rmse(y, p, w):
    return float(np.sqrt(np.average((p - y) ** 2, weights=w)))


def mae(y, p, w):
    return float(np.average(np.abs(p - y), weights=w))


def logloss(y, p, w):
    p = np.clip(p, EPS, 1 - EPS)
    return float(np.average(-(y * np.log(p) + (1 - y) * np.log(1 - p)), weights=w))


def error(y, p, w):
    return float(np.average((p > 0.5) != (y > 0.5), weights=w))


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


METRICS = {"rmse": rmse, "mae": mae, "logloss": logloss, "error": error, "auc": auc,
           "mlogloss": mlogloss, "merror": merror}
HIGHER_IS_BETTER = {"auc"}
BINARY = {"logloss", "error", "auc"}
MULTICLASS = {"mlogloss", "merror"}


def get_metric(name):
    if name not in METRICS:
        raise ValueError(f"unknown eval_metric {name!r}; expected one of {sorted(METRICS)}")
    return METRICS[name]


def check_metric_for_objective(name, objective_name):
    if name in BINARY and objective_name != "binary:logistic":
        raise ValueError(f"eval_metric {name!r} needs objective 'binary:logistic', "
                         f"not {objective_name!r}")
    if name in MULTICLASS and objective_name != "multi:softprob":
        raise ValueError(f"eval_metric {name!r} needs objective 'multi:softprob', "
                         f"not {objective_name!r}")
