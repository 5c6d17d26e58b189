"""``hardwood.train``: a short loop over a :class:`~hardwood.train.booster.Booster` (one round
per ``update()``), with evaluation, callbacks and early stopping."""
from __future__ import annotations

import time
import warnings

import numpy as np

from .. import metrics as M
from ..data.dataset import Dataset
from ..model.model import Model
from .booster import Booster
from .callback import CallbackContainer, EarlyStopping, EvaluationPrinter
from .custom_metric import CustomMetrics


def train(params, train_set: Dataset, num_boost_round=100, valid_sets=(), valid_names=(),
          early_stopping_rounds=None, callbacks=(), verbose_eval=False,
          init_model=None, *, evals=None, evals_result=None, xgb_model=None,
          custom_metric=None, feval=None, maximize=None, obj=None) -> Model:
    """Train a gradient-boosted tree model.

    Parameters follow XGBoost's names (LightGBM aliases accepted); see
    ``hardwood.train.params.DEFAULTS``. Early stopping watches the last metric of the last
    validation set, and the model's ``best_iteration`` records the best round.
    ``init_model`` (a Model, or the path of a saved one) continues training from its trees:
    ``num_boost_round`` more rounds are added to them (see :class:`hardwood.Booster`).
    Callbacks receive a snapshot of the model after each round (their own Model: a
    callback that predicts, or keeps it, never sees later rounds change it).

    XGBoost's keywords are taken too: ``evals`` (``(Dataset, name)`` pairs: the validation
    sets and their names), ``evals_result`` (a dict that is filled with the scores, as the
    model's ``evals_result``) and ``xgb_model`` (``init_model``).

    Metrics of your own: ``custom_metric=f`` (XGBoost's) or ``feval=f`` (LightGBM's; or a
    list), ``f(pred, dataset)`` returning ``(name, value)`` or ``(name, value,
    is_higher_better)``, or a list of them, scored after the built-in metrics on each
    validation set (``hardwood/train/custom_metric.py``). ``maximize=True`` makes early
    stopping maximise the metric it watches, as XGBoost's.

    An objective of your own: ``obj=f`` (XGBoost's) or ``params['objective'] = f``
    (LightGBM's), ``f(margins, dataset) -> (grad, hess)`` per training row; the model then
    predicts raw margins (``hardwood/train/custom_objective.py``).
    """
    if evals is not None:
        if valid_sets or valid_names:
            raise ValueError("give the validation sets once: evals=[(Dataset, name), ...] "
                             "(XGBoost's) or valid_sets=/valid_names= (LightGBM's)")
        pairs = [tuple(e) if isinstance(e, (tuple, list)) else e for e in evals]
        if not all(isinstance(e, tuple) and len(e) == 2 and isinstance(e[1], str)
                   for e in pairs):
            raise TypeError("evals must be a list of (Dataset, name) pairs, as XGBoost's: "
                            f"got {evals!r:.100}")
        valid_sets, valid_names = [e[0] for e in pairs], [e[1] for e in pairs]
    if xgb_model is not None:
        if init_model is not None:
            raise ValueError("give the model to continue once: init_model= or xgb_model=")
        init_model = xgb_model
    if evals_result is not None and not isinstance(evals_result, dict):
        raise TypeError(f"evals_result must be a dict to fill, got {type(evals_result).__name__}")
    if not isinstance(num_boost_round, (int, np.integer)) or num_boost_round < 1:
        raise ValueError(f"num_boost_round must be a positive integer, got {num_boost_round!r}")
    if early_stopping_rounds is not None:
        if not isinstance(early_stopping_rounds, (int, np.integer)) or early_stopping_rounds < 1:
            raise ValueError("early_stopping_rounds must be a positive integer")
    custom = CustomMetrics(custom_metric, feval, maximize)
    custom_objective = None
    if isinstance(params, dict) and callable(params.get("objective")):
        if obj is not None:
            raise ValueError("give the custom objective once: obj= (XGBoost's keyword) or "
                             "params['objective'] (LightGBM's)")
        custom_objective = (params["objective"], "objective")
        params = {k: v for k, v in params.items() if k != "objective"}
    elif obj is not None:
        if not callable(obj):
            raise TypeError(f"obj must be a function f(margins, dataset) -> (grad, hess), "
                            f"got {obj!r:.80}")
        custom_objective = (obj, "obj")
    bst = Booster(params, train_set, valid_sets, valid_names, init_model=init_model,
                  custom_objective=custom_objective)
    bst.custom_metrics = custom
    model = train_booster(bst, num_boost_round, early_stopping_rounds, callbacks, verbose_eval)
    if evals_result is not None:
        evals_result.clear()
        evals_result.update(model.evals_result)
    return model


def train_booster(bst: Booster, num_boost_round=100, early_stopping_rounds=None, callbacks=(),
                  verbose_eval=False) -> Model:
    """``train``'s loop over a Booster built by the caller (``hardwood.dask`` builds one over
    its workers' pages): rounds, evaluation, callbacks, early stopping; returns the Model."""
    if early_stopping_rounds is not None and not bst.valid_sets:
        raise ValueError("early_stopping_rounds needs at least one set in valid_sets")
    if early_stopping_rounds is not None and not bst.metric_names and not bst.custom_metrics:
        raise ValueError("early_stopping_rounds needs a metric to watch, but metric='None' "
                         "turns the built-in ones off: give a custom_metric (feval) too")
    cbs = CallbackContainer(list(callbacks or []))
    if verbose_eval:
        period = 1 if verbose_eval is True else int(verbose_eval)
        cbs.callbacks.append(EvaluationPrinter(period))
    es = None
    if early_stopping_rounds is not None:
        if bst.valid_sets[-1] is bst.train_set:
            # XGBoost watches the last set whatever it is; LightGBM skips the training set
            warnings.warn(f"early stopping watches the last set of valid_sets, "
                          f"{bst.valid_names[-1]!r}, which is the training set: its score only "
                          "improves, so training will not stop early. Put a held-out set "
                          "last", UserWarning, stacklevel=3)
        if not bst.custom_metrics:  # (else once the first round names their metrics)
            es = _early_stopping(bst, early_stopping_rounds, bst.metric_names[-1])
            cbs.callbacks.append(es)
    evals_result = {name: {m: [] for m in bst.metric_names} for name in bst.valid_names}
    t_start = time.perf_counter()
    watched = bool(cbs.callbacks) or early_stopping_rounds is not None
    for cb in cbs.callbacks:
        if isinstance(cb, EarlyStopping):  # (custom metrics are named by the first round)
            cb.metrics_pending = bool(bst.custom_metrics)
    cbs.before_training(bst.model(evals_result) if watched else None)
    bst.expect_rounds(num_boost_round)
    for it in range(bst.rounds, bst.rounds + int(num_boost_round)):
        if watched and cbs.before_iteration(bst.model(evals_result), it, evals_result):
            break
        bst.update()
        for name, scores in bst.eval().items():
            for m, v in scores.items():
                evals_result[name].setdefault(m, []).append(v)
        if early_stopping_rounds is not None and es is None:  # custom metrics: the last
            es = _early_stopping(bst, early_stopping_rounds,
                                 list(evals_result[bst.valid_names[-1]])[-1])
            cbs.callbacks.append(es)
        if watched and cbs.after_iteration(bst.model(evals_result), it, evals_result):
            break
    # the best round of the built-in early stopping, else of an EarlyStopping the caller
    # passed
    stoppers = [es] if es is not None else [cb for cb in cbs.callbacks
                                            if isinstance(cb, EarlyStopping)]
    for stop in stoppers[-1:]:
        if stop.best_iteration is not None:
            bst.best_iteration, bst.best_score = stop.best_iteration, stop.best_score
    model = bst.model(evals_result)
    if watched:
        model = cbs.after_training(model)
    model.training_profile = bst.training_profile(time.perf_counter() - t_start)
    if bst.params["verbose"]:
        print(format_profile(model.training_profile))
    return model


def _early_stopping(bst, rounds, metric):
    """Early stopping on ``metric`` of the last validation set."""
    maximize = bst.custom_metrics.maximize_of(metric, M.higher_is_better)
    return EarlyStopping(int(rounds), metric, bst.valid_names[-1], maximize=maximize)


def format_profile(prof) -> str:
    total = prof.get("total", 0.0) or 1e-12
    parts = [f"{name} {prof[key]:.3f}s ({100 * prof[key] / total:.0f}%)"
             for key, name in (("histogram", "① histogram"), ("split", "② split"),
                               ("partition", "③ partition"), ("update", "⑤ update"),
                               ("other", "other"))]
    if "h2d_bytes" in prof:
        parts.append(f"host->device {prof['h2d_bytes'] / 2**20:.1f} MiB, device->host "
                     f"{prof['d2h_bytes'] / 2**20:.1f} MiB")
    return f"[hardwood] training {total:.3f}s: " + ", ".join(parts)


