"""Training callbacks, XGBoost style: subclass ``TrainingCallback`` and return True from
``before_iteration``/``after_iteration`` to stop training; ``after_training`` may return the
model ``train`` returns. A plain callable ``f(model, iteration, evals_result)`` is run after
each iteration (True stops)."""
from __future__ import annotations

import math
import warnings


class TrainingCallback:
    def before_training(self, model):
        return model

    def after_training(self, model):
        return model

    def before_iteration(self, model, epoch: int, evals_log: dict) -> bool:
        return False

    def after_iteration(self, model, epoch: int, evals_log: dict) -> bool:
        return False


class _FunctionCallback(TrainingCallback):
    def __init__(self, fn):
        self.fn = fn

    def after_iteration(self, model, epoch, evals_log):
        return bool(self.fn(model, epoch, evals_log))


class CallbackContainer:
    def __init__(self, callbacks):
        self.callbacks = []
        for cb in callbacks:
            lib = (getattr(type(cb), "__module__", "") or "").split(".")[0]
            if lib in ("lightgbm", "xgboost") and not isinstance(cb, TrainingCallback):
                # (they failed inside the loop: "takes 2 positional arguments but 4 were given")
                raise TypeError(
                    f"callback {cb!r} is {'LightGBM' if lib == 'lightgbm' else 'XGBoost'}'s, "
                    "which hardwood cannot call: use early_stopping_rounds= or "
                    "hardwood.EarlyStopping(rounds, metric, data_name), "
                    "verbose_eval= to print the scores, and evals_result= or the model's "
                    "evals_result to record them")
            if isinstance(cb, TrainingCallback):
                self.callbacks.append(cb)
            elif callable(cb):
                self.callbacks.append(_FunctionCallback(cb))
            else:
                raise TypeError(f"callback {cb!r} is neither a TrainingCallback nor callable")

    def before_training(self, model):
        """A callback returns the model it was given (or None): hardwood grows its trees
        from the data and ``init_model``, not from a model a callback hands back."""
        for cb in self.callbacks:
            out = cb.before_training(model)
            if out is not None and out is not model:
                raise ValueError(f"{type(cb).__name__}.before_training returned another model, "
                                 "which hardwood cannot train on from there: return the model "
                                 "it was given (or None), and pass a model to continue as "
                                 "init_model")

    def after_training(self, model):
        """The model each callback returns, in turn, as XGBoost's: a callback may trim or
        replace the model ``train`` returns (the returns were dropped). None keeps it."""
        from ..model.model import Model

        for cb in self.callbacks:
            out = cb.after_training(model)
            if out is None:
                continue
            if not isinstance(out, Model):
                raise TypeError(f"{type(cb).__name__}.after_training returned "
                                f"{type(out).__name__}, not a hardwood Model (or None)")
            model = out
        return model

    def before_iteration(self, model, epoch, log):
        return any([bool(cb.before_iteration(model, epoch, log)) for cb in self.callbacks])

    def after_iteration(self, model, epoch, log):
        return any([bool(cb.after_iteration(model, epoch, log)) for cb in self.callbacks])


class EarlyStopping(TrainingCallback):
    """Stop when ``metric`` on ``data_name`` has not improved for ``rounds`` rounds; the model
    ``hardwood.train`` returns then records the best round (``best_iteration``,
    ``best_score``), and predicts with the rounds up to it, as with ``early_stopping_rounds``.
    ``maximize=None`` (the default, as XGBoost's): larger is better for auc and the ranking
    metrics, smaller for the others (it minimised every metric: on auc it kept the worst
    round)."""

    def __init__(self, rounds, metric, data_name, maximize=None):
        from .. import metrics

        self.rounds = rounds
        self.metric = metric
        self.data_name = data_name
        self.maximize = metrics.higher_is_better(metric) if maximize is None else bool(maximize)
        self.best_iteration = None
        self.best_score = None
        self._warned_nan = False

    def before_training(self, model):
        """A new training: the best round so far is forgotten (an EarlyStopping reused over
        trainings kept the last one's, and stopped the next at a round of its own)."""
        self.best_iteration = None
        self.best_score = None
        self._warned_nan = False
        if model is not None:
            self._check(model.evals_result, metric=not self.metrics_pending)
        return model

    # set by hardwood.train before training where custom metrics (custom_metric, feval) are
    # given: their names are known from the first round on, and the metric is checked then
    metrics_pending = False

    def _check(self, evals_log, metric=True):
        """A ValueError naming what is evaluated when the set or metric watched is not (a bare
        KeyError from the loop, 'validation_0', before)."""
        if self.data_name not in evals_log:
            raise ValueError(f"EarlyStopping watches data set {self.data_name!r}, but training "
                             f"evaluates {list(evals_log) or 'none (give valid_sets=)'}")
        if metric and self.metric not in evals_log[self.data_name]:
            raise ValueError(f"EarlyStopping watches metric {self.metric!r}, but training "
                             f"scores {list(evals_log[self.data_name])} on {self.data_name!r} "
                             "(add it to eval_metric, or score it by custom_metric)")

    def after_iteration(self, model, epoch, evals_log):
        self._check(evals_log)
        score = evals_log[self.data_name][self.metric][-1]
        if math.isnan(score):
            if not self._warned_nan:  # as XGBoost, a NaN never improves; it stopped training
                self._warned_nan = True  # early with no word (auc of a one-class set)
                warnings.warn(f"early stopping watches {self.metric!r} on {self.data_name!r}, "
                              f"which is NaN at round {epoch} (auc of a set of one class, "
                              "say); a NaN never counts as an improvement, so training may "
                              "stop early and keep only the rounds before it", RuntimeWarning)
            better = self.best_score is None
        elif self.best_score is None or math.isnan(self.best_score):
            better = True
        else:
            better = score > self.best_score if self.maximize else score < self.best_score
        if better:
            self.best_score = score
            self.best_iteration = epoch
        # (the best round is not written on ``model``: the callbacks after this one predict
        # with it, and a Model's best_iteration cuts its predictions there; hardwood.train
        # writes it on the model it returns)
        return epoch - self.best_iteration >= self.rounds


class EvaluationPrinter(TrainingCallback):
    """``verbose_eval``: the scores every ``period`` rounds and of the last round, as
    XGBoost's monitor (the last round was left out); nothing without sets to score (it
    printed an empty line a round)."""

    def __init__(self, period=1):
        self.period = max(1, period)
        self._unprinted = None

    def after_iteration(self, model, epoch, evals_log):
        parts = [f"{name}-{m}:{vals[-1]:.5f}" for name, ms in evals_log.items()
                 for m, vals in ms.items() if vals]
        line = f"[{epoch}]\t" + "\t".join(parts) if parts else None
        if epoch % self.period == 0:
            if line is not None:
                print(line, flush=True)
            line = None
        self._unprinted = line
        return False

    def after_training(self, model):
        if self._unprinted is not None:
            print(self._unprinted, flush=True)
            self._unprinted = None
        return model
