"""Metrics given as Python functions: XGBoost's ``custom_metric`` and LightGBM's ``feval``.

Each is called after every round on each validation set as ``f(pred, dataset)``: ``pred`` the
prediction the built-in metrics score (probabilities for classification; shape ``(n,)``, or
``(n, K)`` for K outputs) and ``dataset`` the ``hardwood.Dataset`` (``get_label()``,
``get_weight()``). It returns ``(name, value)`` (XGBoost's form) or ``(name, value,
is_higher_better)`` (LightGBM's), or a list of them. The values join ``evals_result`` after the
built-in metrics; early stopping follows the last one, maximised when ``maximize=True``
(XGBoost's ``train`` keyword), when its function says it is higher-better (LightGBM's), or,
given neither, when XGBoost's rule by the name says so (``auc...``, ``ndcg...``: see
``xgboost_maximises``).
"""
from __future__ import annotations

import numbers

from .custom_objective import labels_read_only


class CustomMetrics:
    """The functions, checked when given; ``scores`` calls them, ``maximize_of`` tells early
    stopping which way a metric goes."""

    def __init__(self, custom_metric=None, feval=None, maximize=None):
        if custom_metric is not None and feval is not None:
            raise ValueError("give custom_metric= (XGBoost's keyword) or feval= (LightGBM's), "
                             "not both")
        given = custom_metric if custom_metric is not None else feval
        what = "custom_metric" if custom_metric is not None else "feval"
        fns = [] if given is None else [given] if callable(given) else given
        if not isinstance(fns, (list, tuple)) or not all(callable(f) for f in fns):
            raise TypeError(f"{what} must be a function f(pred, dataset) or a list of them, "
                            f"got {given!r:.80}")
        if maximize is not None and not isinstance(maximize, bool):
            raise TypeError(f"maximize must be True, False or None, got {maximize!r}")
        self.fns, self.what, self.maximize = list(fns), what, maximize
        self.higher = {}  # name -> larger is better, from LightGBM's third value
        self.names = set()  # the names they returned

    def __bool__(self):
        return bool(self.fns)

    def scores(self, pred, dataset, set_name, builtin):
        """``[(name, value)]`` of every function on one set; ``builtin``: the names the
        built-in metrics score there (a custom one may not take them)."""
        out = []
        for f in self.fns:
            with labels_read_only(dataset):
                got = f(pred, dataset)
            for item in got if isinstance(got, list) else [got]:
                out.append(self._item(item, set_name, builtin, [n for n, _ in out]))
        return out

    def _item(self, item, set_name, builtin, seen):
        ok = (isinstance(item, tuple) and len(item) in (2, 3) and isinstance(item[0], str)
              and isinstance(item[1], numbers.Real) and not isinstance(item[1], bool))
        if not ok:
            raise TypeError(f"{self.what} must return (name, value) or (name, value, "
                            f"is_higher_better), or a list of them; on {set_name!r} it "
                            f"returned {item!r:.80}")
        name, value = item[0], float(item[1])
        if name in builtin or name in seen:
            raise ValueError(f"{self.what} scores {name!r} on {set_name!r}, a name "
                             + ("a built-in metric scores there" if name in builtin
                                else "it returned twice") + ": name it otherwise")
        self.names.add(name)
        if len(item) == 3:
            self.higher[name] = bool(item[2])
        return name, value

    def maximize_of(self, name, builtin_rule):
        """Whether early stopping maximises ``name``: ``maximize`` when given (XGBoost applies
        it to whatever metric it watches), else LightGBM's third value for a custom name,
        else XGBoost's rule by the name (``xgboost_maximises``); ``builtin_rule(name)`` for
        the others."""
        if self.maximize is not None:
            return self.maximize
        if name in self.names:
            return self.higher.get(name, xgboost_maximises(name))
        return builtin_rule(name)


# XGBoost's early stopping, given no ``maximize``, maximises a metric whose name starts so
# (its custom metrics too): a function named ``auc`` was minimised here, and the estimator kept
# round 0 (holdout AUC 0.863, where XGBoost kept round 92 and 0.942)
XGBOOST_MAXIMISED = ("auc", "aucpr", "pre", "map", "ndcg")


def xgboost_maximises(name) -> bool:
    return name != "mape" and name.startswith(XGBOOST_MAXIMISED)
