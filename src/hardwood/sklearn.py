"""scikit-learn estimators over ``hardwood.train``: :class:`GBDTRegressor` and
:class:`GBDTClassifier`.

They follow scikit-learn's conventions (constructor parameters stored as given and checked in
``fit``; fitted attributes end in ``_``) and pass ``sklearn.utils.estimator_checks``.

``GBDTRegressor(objective=f)`` takes a loss of your own, ``f(y_true, y_pred) -> (grad, hess)``
in the raw margins ``y_pred``, as XGBoost's and LightGBM's estimators; its model then predicts
raw margins from a start of 0, LightGBM's (XGBoost's estimator starts at 0.5: give
``base_score=0.5`` for its model), and the sample weights scale the gradients unless ``f``
takes them (``sample_weight=`` or a third argument).
``eval_metric`` takes metric names and functions ``f(y_true, y_pred)`` (with
``sample_weight=`` or a third argument, the eval set's weights are passed), as XGBoost's and
LightGBM's estimators: a function returns the value (named by the function; early stopping
maximises it where XGBoost's rule by the name says so, ``auc...``, ``ndcg...``, and minimises
it otherwise) or LightGBM's ``(name, value, is_higher_better)``.
``monotone_constraints`` and ``interaction_constraints`` are ``train``'s (by feature index, or
by name: a DataFrame's columns).

Data handling:

- numpy arrays, array-likes and scipy sparse matrices go through scikit-learn's
  ``validate_data`` (float32/float64, NaN allowed as missing; infinities rejected in training
  data, and taken as values beyond every threshold in data to predict on).
- pandas DataFrames are handed to :class:`hardwood.Dataset` unchanged, so that ``category``
  columns stay categorical; scikit-learn's feature-name and feature-count checks still apply.
- Rows whose ``sample_weight`` is 0 are dropped before binning, so that a weight of 0 is
  exactly the same as leaving the row out (and an integer weight ``k`` the same as ``k``
  copies of the row).
- A :class:`hardwood.Dataset` (in memory, or on pages from ``Dataset.from_batches`` /
  ``Dataset.from_files``) is trained as it is: ``fit(dataset)``, its labels and weights with
  it. Its bins and categories are the Dataset's (``max_bin`` and ``categorical_features``
  are not applied again).
"""
from __future__ import annotations

import copy
import difflib
import inspect
import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_array,
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from .data.convert import as_pandas_if_named_table, check_sparse_structure, reject_masked
from .data.binning import check_max_bin
from .data.dataset import Dataset, start_margins
from .model.model import IMPORTANCE_KINDS
from .objectives import DEFAULT_OBJECTIVE, lightgbm_flavoured, objective_class
from .train.engine import train
from .train.params import ALIASES, DEFAULTS, FOREIGN_HINTS

__all__ = ["GBDTRegressor", "GBDTClassifier", "GBDTRanker"]

_CHECK_X = dict(accept_sparse=["csr", "csc", "coo"], dtype=[np.float64, np.float32],
                ensure_all_finite="allow-nan")
# data to predict on may hold ±inf: an ordinary value beyond every threshold, as on every
# prediction path (hardwood.data.convert)
_CHECK_PREDICT_X = dict(_CHECK_X, ensure_all_finite=False)


def _is_dataframe(X) -> bool:
    return type(X).__module__.startswith("pandas") and type(X).__name__ == "DataFrame"


def _take_rows(X, mask):
    if _is_dataframe(X):
        return X.iloc[np.flatnonzero(mask)]
    if hasattr(X, "tocsr") and not isinstance(X, np.ndarray):
        return X.tocsr()[np.flatnonzero(mask)]
    return X[mask]


class _GBDTBase(BaseEstimator):
    """Shared parameters, validation and training of the hardwood estimators."""

    _keeps_rows = False  # True: rows of weight 0 stay (a ranker's queries are row runs)

    def __new__(cls, *args, **kwargs):
        # (before __init__ binds them: its signature is scikit-learn's list of parameters)
        _refuse_foreign_names(cls, kwargs)
        return super().__new__(cls)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # the class's signature stays __init__'s (inspect reads __new__'s, (*args, **kwargs))
        cls.__signature__ = _constructor_signature(cls)

    def __init__(self, n_estimators=100, learning_rate=0.3, max_depth=None, max_leaves=0,
                 grow_policy="depthwise", min_child_weight=1.0, reg_lambda=1.0, reg_alpha=0.0,
                 gamma=0.0, max_bin=256, subsample=1.0, colsample_bytree=1.0,
                 colsample_bynode=1.0, max_cat_to_onehot=4, objective=None, eval_metric=None,
                 early_stopping_rounds=None, base_score=None, categorical_features=None,
                 n_jobs=None, random_state=None, verbose=False, sampling_method="uniform",
                 top_rate=None, other_rate=None, device="cpu", importance_type="total_gain",
                 scale_pos_weight=1.0, monotone_constraints=None, interaction_constraints=None,
                 min_child_samples=0, max_cat_threshold=64, max_delta_step=None,
                 tweedie_variance_power=None, quantile_alpha=None):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.max_leaves = max_leaves
        self.grow_policy = grow_policy
        self.min_child_weight = min_child_weight
        self.reg_lambda = reg_lambda
        self.reg_alpha = reg_alpha
        self.gamma = gamma
        self.max_bin = max_bin
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.colsample_bynode = colsample_bynode
        self.max_cat_to_onehot = max_cat_to_onehot
        self.max_cat_threshold = max_cat_threshold
        self.objective = objective
        self.eval_metric = eval_metric
        self.early_stopping_rounds = early_stopping_rounds
        self.base_score = base_score
        self.categorical_features = categorical_features
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.sampling_method = sampling_method
        self.top_rate = top_rate
        self.other_rate = other_rate
        self.device = device
        self.importance_type = importance_type
        self.scale_pos_weight = scale_pos_weight
        self.min_child_samples = min_child_samples
        self.monotone_constraints = monotone_constraints
        self.interaction_constraints = interaction_constraints
        self.max_delta_step = max_delta_step  # None: the objective's (count:poisson: 0.7)
        self.tweedie_variance_power = tweedie_variance_power  # None: reg:tweedie's 1.5
        self.quantile_alpha = quantile_alpha  # reg:quantileerror's quantile

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN is a missing value, routed by default_left
        tags.input_tags.sparse = True
        return tags

    # -- parameters -------------------------------------------------------------------
    def _seed(self) -> int:
        rs = self.random_state
        if rs is None:
            return 0  # deterministic by default, as XGBoost and LightGBM
        if isinstance(rs, numbers.Integral) and not isinstance(rs, bool):
            return int(rs)
        return int(check_random_state(rs).randint(np.iinfo(np.int32).max))

    def _train_params(self, objective) -> dict:
        if (not isinstance(self.n_estimators, numbers.Integral) or isinstance(self.n_estimators, bool)
                or self.n_estimators < 1):
            raise ValueError(f"n_estimators must be a positive integer, got {self.n_estimators!r}")
        check_max_bin(self.max_bin)
        self._importance_kind()
        es = self.early_stopping_rounds
        if es is not None and (not isinstance(es, numbers.Integral) or isinstance(es, bool)
                               or es < 1):
            # (checked before eval_set: 0 without one was "needs a validation set")
            raise ValueError(f"early_stopping_rounds must be a positive integer, got {es!r}")
        p = {
            "objective": _estimator_objective(objective) if callable(objective) else objective,
            "learning_rate": self.learning_rate,
            "max_depth": self.max_depth,
            "max_leaves": self.max_leaves,
            "grow_policy": self.grow_policy,
            "min_child_weight": self.min_child_weight,
            "reg_lambda": self.reg_lambda,
            "reg_alpha": self.reg_alpha,
            "gamma": self.gamma,
            "max_bin": int(self.max_bin),
            "subsample": self.subsample,
            "sampling_method": self.sampling_method,
            "top_rate": self.top_rate,
            "other_rate": self.other_rate,
            "colsample_bytree": self.colsample_bytree,
            "colsample_bynode": self.colsample_bynode,
            "max_cat_to_onehot": self.max_cat_to_onehot,
            "max_cat_threshold": self.max_cat_threshold,
            "random_state": self._seed(),
            "n_jobs": self.n_jobs,
            "verbose": self.verbose,
            "device": self.device,
            "scale_pos_weight": self.scale_pos_weight,
            "min_data_in_leaf": self.min_child_samples,
        }
        named = [m for m in metric_list(self.eval_metric) if not callable(m)]
        if named:
            p["eval_metric"] = named
        if self.base_score is not None:
            p["base_score"] = self.base_score
        for k in ("monotone_constraints", "interaction_constraints",  # (by index or name)
                  "max_delta_step", "tweedie_variance_power", "quantile_alpha"):
            if getattr(self, k) is not None:
                p[k] = getattr(self, k)
        return p

    # -- data -------------------------------------------------------------------------
    def _validate_fit_data(self, X, y, sample_weight, y_numeric, drop_zero_weight=True):
        """``drop_zero_weight=False``: the caller drops the rows of weight 0 itself
        (:meth:`_drop_zero_weight_rows`), after reading what it needs of all the labels."""
        if isinstance(X, Dataset):
            return self._dataset_fit_data(X, y, sample_weight)
        reject_masked(y, "y")  # (scikit-learn's checks would use the values under the mask)
        reject_masked(sample_weight, "sample_weight")
        check_sparse_structure(X)  # (before scikit-learn's checks convert it)
        X = as_pandas_if_named_table(X)  # (an Arrow table's names and dictionary columns)
        if _is_dataframe(X):
            # keep the DataFrame (its category columns) for hardwood.Dataset; validate y, then
            # record the feature names and count
            y = validate_data(self, y=y, y_numeric=y_numeric)
            X = validate_data(self, X, skip_check_array=True, reset=True)
            check_consistent_length(X, y)
        else:
            X, y = validate_data(self, X, y, y_numeric=y_numeric, **_CHECK_X)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                 ensure_non_negative=True)
            if not (sample_weight > 0).any():
                raise ValueError("Sample weights must contain at least one non-zero number.")
            if drop_zero_weight:
                X, y, sample_weight, _ = self._drop_zero_weight_rows(X, y, sample_weight)
        return X, y, sample_weight

    def _drop_zero_weight_rows(self, X, y, sample_weight, margins=None):
        """Leave out the rows of weight 0 (a weight of 0 is the same as leaving the row out,
        as scikit-learn's checks ask), but under LightGBM's objective names or
        ``min_child_samples``: LightGBM counts such rows (its L1 leaves' weighted medians,
        its ``min_data_in_leaf``), so leaving them out trained another model than LightGBM's
        (0.075 off in probability, ``binary`` with ``min_child_samples=20``)."""
        if (sample_weight is None or self._keeps_rows or isinstance(X, Dataset)
                or lightgbm_flavoured(self.objective) or self.min_child_samples):
            return X, y, sample_weight, margins
        keep = sample_weight > 0
        if keep.all():
            return X, y, sample_weight, margins
        return (_take_rows(X, keep), y[keep], sample_weight[keep],
                None if margins is None else margins[keep])

    def _dataset_fit_data(self, ds, y, sample_weight):
        """A Dataset brings its labels and weights; the estimator records its features."""
        if y is not None or sample_weight is not None:
            raise ValueError("fit(dataset) takes the labels and weights the hardwood.Dataset "
                             "holds; give them when building the Dataset, not to fit")
        if ds.label is None:
            raise ValueError("the hardwood.Dataset passed to fit has no labels")
        if ds.reference is not None:
            raise ValueError("fit got a validation Dataset (built with reference=); pass the "
                             "training set")
        self.n_features_in_ = ds.n_features
        names = list(ds.info.names)
        if names != [f"f{j}" for j in range(ds.n_features)]:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return ds, np.asarray(ds.label), None

    def _validate_predict_X(self, X):
        check_is_fitted(self)
        check_sparse_structure(X)
        X = as_pandas_if_named_table(X)
        if _is_dataframe(X):
            return validate_data(self, X, skip_check_array=True, reset=False)
        return validate_data(self, X, reset=False, **_CHECK_PREDICT_X)

    def _validate_eval_X(self, X):
        check_sparse_structure(X, "eval_set X")
        X = as_pandas_if_named_table(X)
        if _is_dataframe(X):
            return X
        return check_array(X, estimator=self, input_name="eval_set X", **_CHECK_X)

    def _encode_eval_y(self, y):
        return y

    def _fit(self, X, y, sample_weight, eval_set, sample_weight_eval_set, verbose, objective,
             extra_params=None, queries=None, eval_queries=None, margins=None,
             eval_margins=None):
        """``queries``: the training rows' query groups (``{"group": ...}`` or
        ``{"qid": ...}``, rankers); ``eval_queries``: one such dict per eval_set pair.
        ``margins``, ``eval_margins``: the rows' starting margins (``base_margin``), of the
        training rows and of each eval_set pair (None: none)."""
        params = self._train_params(objective)
        if extra_params:
            params.update(extra_params)
        if isinstance(X, Dataset):  # y: its labels, encoded by a classifier
            train_set = X
            # its bins are the Dataset's, as the module says: the estimator's max_bin=256
            # (a default the user never chose) refused a Dataset of another max_bin
            params["max_bin"] = X.max_bin
            if y is not X.label:
                train_set = copy.copy(X)
                train_set.label = np.asarray(y, dtype=np.float64)
        else:
            train_set = Dataset(X, y, weight=sample_weight,
                                categorical_features=self.categorical_features,
                                max_bin=int(self.max_bin), random_state=params["random_state"],
                                base_margin=margins, **(queries or {}))
        valid_sets, valid_names = [], []
        if eval_set is None and sample_weight_eval_set is not None:  # it was ignored
            raise ValueError("sample_weight_eval_set needs eval_set: it weighs the rows of "
                             "eval_set's pairs")
        if eval_set is None and eval_margins is not None:  # (it was ignored)
            raise ValueError("base_margin_eval_set needs eval_set: it holds the starting "
                             "margins of eval_set's pairs")
        if eval_set is not None:
            if isinstance(eval_set, tuple) and len(eval_set) == 2 and not isinstance(eval_set[0], tuple):
                eval_set = [eval_set]
            eval_set = list(eval_set)
            margin_key = "base_margin" if eval_margins is None else eval_margins[1]
            eval_margins = _per_pair(None if eval_margins is None else eval_margins[0],
                                     len(eval_set), "base_margin_eval_set")
            if sample_weight_eval_set is not None:
                sample_weight_eval_set = list(sample_weight_eval_set)
                if len(sample_weight_eval_set) != len(eval_set):
                    raise ValueError(f"sample_weight_eval_set has {len(sample_weight_eval_set)} "
                                     f"entries for {len(eval_set)} eval_set pairs")
            for i, pair in enumerate(eval_set):
                try:
                    Xv, yv = pair
                except (TypeError, ValueError):
                    raise TypeError("eval_set must be a list of (X, y) pairs") from None
                Xv = self._validate_eval_X(Xv)
                yv = self._encode_eval_y(column_or_1d(np.asarray(yv)))
                check_consistent_length(Xv, yv)
                wv = None if sample_weight_eval_set is None else sample_weight_eval_set[i]
                if wv is not None:
                    wv = _check_sample_weight(wv, Xv, dtype=np.float64, ensure_non_negative=True)
                valid_sets.append(Dataset(Xv, yv, weight=wv, reference=train_set,
                                          **{margin_key: eval_margins[i]},
                                          **(eval_queries[i] if eval_queries else {})))
                valid_names.append(f"validation_{i}")
        if self.early_stopping_rounds is not None and not valid_sets:
            raise ValueError("early_stopping_rounds needs a validation set: pass eval_set to fit")
        funcs = [m for m in metric_list(self.eval_metric) if callable(m)]
        model = train(params, train_set, num_boost_round=int(self.n_estimators),
                      valid_sets=valid_sets, valid_names=valid_names,
                      early_stopping_rounds=self.early_stopping_rounds, verbose_eval=verbose,
                      feval=[_estimator_metric(f) for f in funcs] or None)
        self.model_ = model
        self.evals_result_ = model.evals_result
        self.best_iteration_ = (model.best_iteration
                                if self.early_stopping_rounds is not None else None)
        self.best_score_ = (model.best_score  # (XGBoost's best_score; LightGBM's best_score_)
                            if self.early_stopping_rounds is not None else None)
        return self

    @property
    def feature_importances_(self):
        """The features' importances of kind ``importance_type``, summing to 1 (all 0 for a
        model without a split): 'total_gain' (the default, scikit-learn's gradient boosting's
        measure), 'gain' (the mean gain of a feature's splits: XGBoost's default), 'weight'
        (the number of splits: LightGBM's default 'split'), 'cover', 'total_cover'."""
        check_is_fitted(self, "model_")
        kind = self._importance_kind()
        imp = np.asarray(self.model_.feature_importances(kind), dtype=np.float64)
        total = imp.sum()
        return imp / total if total > 0 else np.zeros_like(imp)

    def _importance_kind(self):
        """``importance_type`` as a kind of ``Model.feature_importances``: LightGBM's 'split'
        is 'weight', XGBoost's None its default 'gain'. Checked by ``fit`` too: a bad value
        was found only when ``feature_importances_`` was read, after training."""
        kind = {"split": "weight", None: "gain"}.get(self.importance_type, self.importance_type)
        if kind not in IMPORTANCE_KINDS:
            raise ValueError(f"importance_type must be one of {list(IMPORTANCE_KINDS)} (or "
                             f"LightGBM's 'split', or None: XGBoost's 'gain'), got "
                             f"{self.importance_type!r}")
        return kind

    # -- shared outputs ---------------------------------------------------------------
    def apply(self, X):
        """Leaf index of every tree for each row: shape (n_samples, n_trees)."""
        X = self._validate_predict_X(X)
        return self.model_.predict(X, output="leaf")


def both_classes(p):
    """(rows, 2) probabilities of a binary model's positive-class probabilities ``p``."""
    return np.stack([1.0 - p, p], axis=1)


def metric_list(eval_metric):
    """``eval_metric`` as a list: names and functions (None: none)."""
    if eval_metric is None:
        return []
    if isinstance(eval_metric, str) or callable(eval_metric):
        return [eval_metric]
    return list(eval_metric)


def _estimator_metric(f):
    """A function of the estimators' ``eval_metric``, ``f(y_true, y_pred)`` (or with
    ``sample_weight``), as ``train``'s ``feval``: XGBoost's form returns the value (named by
    the function, maximised where XGBoost's name rule says so: ``auc...``, ``ndcg...``),
    LightGBM's ``(name, value, is_higher_better)``. ``y_pred`` is
    what ``predict`` gives (a classifier's probabilities), ``y_true`` the encoded labels."""
    name = getattr(f, "__name__", type(f).__name__)
    call = _weighted_call(f)

    def feval(pred, data):
        got = call(data.get_label(), pred, data.get_weight())
        if isinstance(got, tuple):
            return got
        if not isinstance(got, numbers.Real) or isinstance(got, bool):
            raise TypeError(f"eval_metric {name!r} must return a number, or LightGBM's "
                            f"(name, value, is_higher_better), got {got!r:.80}")
        return name, float(got)
    return feval


def _estimator_objective(f):
    """An ``objective`` function of the estimators, ``f(y_true, y_pred) -> (grad, hess)``
    (XGBoost's and LightGBM's form; ``y_pred`` the raw margins), as ``train``'s callable
    objective. The sample weights go to ``f`` where it takes them (``sample_weight=`` or a
    third argument), else they scale its grad and hess: a weighted pointwise loss (as
    LightGBM 3 did; LightGBM 4 ignores the weights of a two-argument function without a word,
    XGBoost refuses them)."""
    call = _weighted_call(f)

    def objective(margin, data):
        w = data.get_weight()
        if w is None or call.takes_weights:
            return call(data.get_label(), margin, w)
        g, h = f(data.get_label(), margin)
        return np.asarray(g) * w, np.asarray(h) * w
    return objective


def _weighted_call(f):
    """``call(y_true, y_pred, w)``: ``f`` with the weights ``w`` where it takes them, by
    ``sample_weight=`` (XGBoost's and scikit-learn's keyword) or as a third positional
    argument (LightGBM's form), else (or for ``w`` None) ``f(y_true, y_pred)``;
    ``call.takes_weights`` says which."""
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        params = []
    keyword = any(q.name == "sample_weight" for q in params)
    positional = [q for q in params if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)]
    third = not keyword and (len(positional) >= 3
                             or any(q.kind == q.VAR_POSITIONAL for q in params))

    def call(y, pred, w):
        if w is None or not (keyword or third):
            return f(y, pred)
        return f(y, pred, sample_weight=w) if keyword else f(y, pred, w)
    call.takes_weights = keyword or third
    return call


def _constructor_signature(cls):
    sig = inspect.signature(cls.__init__)
    return sig.replace(parameters=[p for n, p in sig.parameters.items() if n != "self"])


# the peers' estimator parameters that hardwood's estimators do not take, and what to do
# instead (difflib offered random_state for warm_start, scale_pos_weight for class_weight)
ESTIMATOR_HINTS = {
    "class_weight": "weigh the classes through fit's sample_weight, e.g. "
                    "sklearn.utils.class_weight.compute_sample_weight('balanced', y); "
                    "scale_pos_weight weighs the positive class of a binary problem",
    "warm_start": "the estimators train from scratch; continue a model with "
                  "hardwood.train(params, dataset, n, init_model=estimator.model_)",
    "enable_categorical": "pandas 'category' columns are categorical features without it "
                          "(or name columns by categorical_features=)",
    "missing": "NaN is the missing value, always; replace another marker by NaN first",
}


def _refuse_foreign_names(cls, kwargs):
    """A TypeError for keyword arguments the estimator class does not take, saying what it
    takes instead where the name is XGBoost's or LightGBM's (``GBDTClassifier(num_leaves=31)``
    got Python's bare "unexpected keyword argument", where ``hardwood.train`` explains)."""
    params = inspect.signature(cls.__init__).parameters
    own = [k for k in params if k != "self"]
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        # a user's subclass whose __init__ passes **kwargs on: its bases' names are its own
        own += [k for c in cls.__mro__[1:] if "__init__" in vars(c) and issubclass(c, _GBDTBase)
                for k in inspect.signature(c.__init__).parameters]
    foreign = [k for k in kwargs if k not in own]
    if not foreign:
        return
    name = cls.__name__
    k = foreign[0]
    target = ALIASES.get(k, k if k in DEFAULTS else None)
    target = {"min_data_in_leaf": "min_child_samples"}.get(target, target)  # (LGBMRegressor's)
    if k in ALIASES and target is None:  # tree_method, booster, boosting_type
        why = (f"{name} always trains gradient-boosted trees on histograms: leave {k} out")
    elif target in own:
        why = f"{k} is {target} here: {name}({target}=...)"
        if k == "num_leaves":
            why += (" with grow_policy='lossguide' (leaf-wise growth, under XGBoost's rules; "
                    "for LightGBM's model, hardwood.train({'num_leaves': ...}) brings its "
                    "rules and defaults)")
    elif k in ESTIMATOR_HINTS:
        why = ESTIMATOR_HINTS[k]
    elif k in FOREIGN_HINTS:
        why = FOREIGN_HINTS[k]
    else:
        close = difflib.get_close_matches(k, own, n=3)
        why = f"did you mean {', '.join(map(repr, close))}?" if close else (
            f"hardwood.train takes more parameters than {name} does")
    raise TypeError(f"{name} got an unexpected keyword argument {k!r}; {why}")


def objective_for(estimator, objective, tasks):
    """``objective`` checked against the estimator's tasks ('regression', 'binary',
    'multiclass'): a classifier never trains a regression objective, nor the reverse."""
    if callable(objective):
        if "regression" not in tasks:
            raise ValueError(f"{type(estimator).__name__} takes no objective function: "
                             "GBDTRegressor does (its model predicts raw margins), or train "
                             "one with hardwood.train(..., obj=f)")
        return objective
    task = objective_class(objective).task
    if task not in tasks:
        kind = ("classification" if "binary" in tasks else
                "ranking" if "ranking" in tasks else "regression")
        use = {"regression": "GBDTRegressor", "ranking": "GBDTRanker"}.get(task,
                                                                         "GBDTClassifier")
        raise ValueError(f"{type(estimator).__name__} trains {kind} objectives; "
                         f"objective={objective!r} is a {task} objective. Use {use} for it, "
                         "or leave objective unset")
    return objective


class GBDTRegressor(RegressorMixin, _GBDTBase):
    """Gradient-boosted trees for regression (scikit-learn API).

    ``objective`` defaults to ``'reg:squarederror'``; any regression objective of
    ``hardwood.objectives`` (``names('regression', trainable=True)``) may be given. See
    :func:`hardwood.train` for the meaning of the other parameters (XGBoost names).
    """

    def fit(self, X, y=None, sample_weight=None, eval_set=None, sample_weight_eval_set=None,
            verbose=False, base_margin=None, base_margin_eval_set=None, init_score=None,
            eval_init_score=None):
        """Fit the model. ``eval_set`` is a list of (X, y) pairs evaluated each round (and
        watched by ``early_stopping_rounds``: the last metric of the last pair). ``X`` may
        be a ``hardwood.Dataset`` (``y`` and ``sample_weight`` then come from it).
        ``base_margin`` (XGBoost's; LightGBM's ``init_score``): the rows' starting margins,
        and ``base_margin_eval_set`` (``eval_init_score``) those of each eval_set pair (see
        ``hardwood.Dataset``)."""
        objective = self.objective
        if objective is None:
            objective = DEFAULT_OBJECTIVE["regression"]
        objective_for(self, objective, ("regression",))
        margins, eval_margins = _margins_given(base_margin, init_score, base_margin_eval_set,
                                               eval_init_score)
        X, y, sample_weight = self._validate_fit_data(X, y, sample_weight, y_numeric=True,
                                                      drop_zero_weight=False)
        X, y, sample_weight, margins = self._drop_zero_weight_rows(X, y, sample_weight,
                                                                   _rows_of(margins[0], X,
                                                                            margins[1]))
        return self._fit(X, y, sample_weight, eval_set, sample_weight_eval_set, verbose,
                         objective, margins=margins, eval_margins=eval_margins)

    def predict(self, X, base_margin=None):
        """Predicted values, shape (n_samples,); ``base_margin``: the rows' starting margins,
        where the model was trained with them."""
        X = self._validate_predict_X(X)
        return np.asarray(self.model_.predict(X, base_margin=base_margin), dtype=np.float64)


class GBDTClassifier(ClassifierMixin, _GBDTBase):
    """Gradient-boosted trees for classification (scikit-learn API).

    Labels may be of any type (strings, integers, floats); they are encoded with a
    ``LabelEncoder``. Two classes train ``'binary:logistic'``, more train ``'multi:softprob'``
    (one tree per class per round).
    """

    def fit(self, X, y=None, sample_weight=None, eval_set=None, sample_weight_eval_set=None,
            verbose=False, base_margin=None, base_margin_eval_set=None, init_score=None,
            eval_init_score=None):
        """Fit the model. ``eval_set`` is a list of (X, y) pairs, with labels among the
        training labels, evaluated each round (and watched by ``early_stopping_rounds``).
        ``X`` may be a ``hardwood.Dataset`` (``y`` and ``sample_weight`` then come from
        it). ``base_margin`` (``init_score``), ``base_margin_eval_set``
        (``eval_init_score``): starting margins, as ``GBDTRegressor.fit``'s."""
        if self.objective is not None:
            objective_for(self, self.objective, ("binary", "multiclass"))
        margins, eval_margins = _margins_given(base_margin, init_score, base_margin_eval_set,
                                               eval_init_score)
        X, y, sample_weight = self._validate_fit_data(X, y, sample_weight, y_numeric=False,
                                                      drop_zero_weight=False)
        check_classification_targets(y)
        margins = _rows_of(margins[0], X, margins[1])
        # classes_ come from all the labels, as scikit-learn's and XGBoost's: a class whose rows
        # all weigh 0 keeps its column in predict_proba (of probability near 0)
        le = LabelEncoder()
        y_enc = le.fit_transform(y)
        classes = le.classes_
        weighed = classes if sample_weight is None else np.unique(y[sample_weight > 0])
        if len(weighed) < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes in the "
                             f"data (with non-zero weight), but the data contains only one class:"
                             f" {weighed.tolist()[0]!r}")
        X, y_enc, sample_weight, margins = self._drop_zero_weight_rows(X, y_enc, sample_weight,
                                                                       margins)
        self._label_encoder = le
        self.classes_ = classes
        self.n_classes_ = len(classes)
        extra = {}
        if self.objective is None:
            objective = DEFAULT_OBJECTIVE["binary" if self.n_classes_ == 2 else "multiclass"]
        else:  # multi:softmax's model predicts the class: softprob's trees give predict_proba
            objective = "multi:softprob" if self.objective == "multi:softmax" else self.objective
        task = objective_class(objective).task
        if task == "binary" and self.n_classes_ > 2:
            raise ValueError(f"objective={objective!r} is for two classes, but y has "
                             f"{self.n_classes_} ({classes.tolist()[:10]}); use "
                             f"objective={DEFAULT_OBJECTIVE['multiclass']!r}, or leave "
                             "objective unset")
        if task == "multiclass":
            extra["num_class"] = self.n_classes_
        return self._fit(X, y_enc.astype(np.float64), sample_weight, eval_set,
                         sample_weight_eval_set, verbose, objective, extra, margins=margins,
                         eval_margins=eval_margins)

    def _encode_eval_y(self, y):
        unknown = np.setdiff1d(np.unique(y), self.classes_)
        if unknown.size:
            raise ValueError(f"eval_set labels {unknown[:5].tolist()} were not seen in training "
                             f"(classes: {self.classes_.tolist()[:10]})")
        return self._label_encoder.transform(y).astype(np.float64)

    def decision_function(self, X, base_margin=None):
        """Raw margins: shape (n_samples,) for two classes, (n_samples, n_classes) otherwise.
        Two classes trained with a softmax objective (``multi:softprob``) give the margin of
        the second class over the first (the log-odds of ``predict_proba[:, 1]``), the shape
        scikit-learn's scorers and calibrators read (two columns made roc_auc NaN)."""
        X = self._validate_predict_X(X)
        raw = np.asarray(self.model_.predict(X, output="raw", base_margin=base_margin),
                         dtype=np.float64)
        if raw.ndim == 2 and raw.shape[1] == 2 and len(self.classes_) == 2:
            return raw[:, 1] - raw[:, 0]
        return raw

    def predict_proba(self, X, base_margin=None):
        """Class probabilities, shape (n_samples, n_classes), columns in ``classes_`` order;
        ``base_margin``: the rows' starting margins, where the model was trained with them."""
        X = self._validate_predict_X(X)
        p = np.asarray(self.model_.predict(X, base_margin=base_margin), dtype=np.float64)
        return both_classes(p) if p.ndim == 1 else p

    def predict(self, X, base_margin=None):
        """Most probable class of each row (labels as in ``classes_``)."""
        proba = self.predict_proba(X, base_margin=base_margin)
        return self.classes_[np.argmax(proba, axis=1)]


def _margins_given(base_margin, init_score, eval_base_margin, eval_init_score):
    """(the training rows' starting margins, the eval pairs'), by XGBoost's names or
    LightGBM's, not both."""
    if base_margin is not None and init_score is not None:
        raise ValueError("give base_margin (XGBoost's name) or init_score (LightGBM's), not "
                         "both: they are the same thing")
    if eval_base_margin is not None and eval_init_score is not None:
        raise ValueError("give base_margin_eval_set (XGBoost's name) or eval_init_score "
                         "(LightGBM's), not both")
    return ((base_margin, "base_margin") if init_score is None else (init_score, "init_score"),
            None if eval_base_margin is None and eval_init_score is None else
            (eval_base_margin, "base_margin") if eval_init_score is None else
            (eval_init_score, "init_score"))


def _rows_of(margins, X, what="base_margin"):
    """``margins`` as an array of one row per row of ``X`` (``start_margins``: a flat array
    row by row under XGBoost's name, output by output under LightGBM's ``init_score``)."""
    if margins is None:
        return None
    if isinstance(X, Dataset):
        how = ("from_batches takes them in its batches, (X, y, weight, base_margin)"
               if X.pages_on_disk is not None else "give base_margin= when building it")
        raise ValueError(f"fit(dataset) takes the starting margins the hardwood.Dataset "
                         f"holds: {how}")
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    return start_margins(margins, n, what)


def _per_pair(margins, n_pairs, what):
    """One entry (or None) per eval_set pair."""
    if margins is None:
        return [None] * n_pairs
    margins = list(margins)
    if len(margins) != n_pairs:
        raise ValueError(f"{what} has {len(margins)} entries for {n_pairs} eval_set pairs")
    return margins


def _check_row_weights(X, group, qid, sample_weight):
    """XGBRanker takes one weight per query; hardwood's are per row: say so, where the
    weights are as many as the queries and not as the rows (scikit-learn's shape error
    named neither)."""
    if sample_weight is None or not hasattr(sample_weight, "__len__"):
        return
    n_rows = X.shape[0] if hasattr(X, "shape") else len(X)
    if group is not None:
        n_queries = len(group)
    else:
        q = np.asarray(qid).reshape(-1)
        n_queries = int(np.count_nonzero(q[1:] != q[:-1])) + 1 if q.size else 0
    if len(sample_weight) != n_rows and len(sample_weight) == n_queries:
        raise ValueError(f"sample_weight has {len(sample_weight)} values, one per query; "
                         f"GBDTRanker takes one weight per row ({n_rows}): repeat each "
                         "query's weight over its rows, e.g. np.repeat(weights, group)")


class GBDTRanker(_GBDTBase):
    """Gradient-boosted trees for learning to rank (scikit-learn API): LambdaMART
    (``objective='rank:ndcg'``, the default) or RankNet (``'rank:pairwise'``).

    ``fit(X, y, group=sizes)`` or ``fit(X, y, qid=ids)``: ``y`` holds integer relevance grades
    (0..30), the rows of a query are consecutive. ``predict`` returns scores (higher ranks
    first). The LambdaMART parameters are LightGBM's: ``lambdarank_truncation_level`` (pairs
    need a row ranked within it; XGBoost's ``lambdarank_num_pair_per_sample`` of its default
    ``topk`` method), ``lambdarank_norm``, ``label_gain`` (default 2^grade - 1) and ``sigmoid``
    (see :mod:`hardwood.ranking`). The default metric is ``ndcg@10``. Rows of weight 0 stay (a
    query is a run of rows).

    The gradients are LightGBM's. XGBoost's ``rank:ndcg`` doubles each pair's hessian, so its
    Newton steps are half as long: XGBoost's model of ``learning_rate``, ``reg_lambda``,
    ``min_child_weight`` is hardwood's of half of each, with ``lambdarank_truncation_level=32``
    (``benchmarks/rank_vs_peers.py``, ``tests/test_ranking.py``); its ``gamma`` is hardwood's
    ``2 * gamma``, and its query weights are rescaled to mean 1 (LightGBM's and hardwood's
    are used as given).

    ``fit`` requires the queries, so scikit-learn's generic estimator checks run with all rows
    as one query (``tests/test_ranking.py``); all pass but the two that take a row's weight
    for its repetition, which ranking cannot honour (a repeated row adds pairs and changes its
    query's ideal DCG; a weight scales the row's lambda gradients).
    """

    _keeps_rows = True

    def __init__(self, n_estimators=100, learning_rate=0.3, max_depth=None, max_leaves=0,
                 grow_policy="depthwise", min_child_weight=1.0, reg_lambda=1.0, reg_alpha=0.0,
                 gamma=0.0, max_bin=256, subsample=1.0, colsample_bytree=1.0,
                 colsample_bynode=1.0, max_cat_to_onehot=4, objective=None, eval_metric=None,
                 early_stopping_rounds=None, base_score=None, categorical_features=None,
                 n_jobs=None, random_state=None, verbose=False, sampling_method="uniform",
                 top_rate=None, other_rate=None, device="cpu", importance_type="total_gain",
                 scale_pos_weight=1.0, monotone_constraints=None, interaction_constraints=None,
                 lambdarank_truncation_level=30, lambdarank_norm=True, label_gain=None,
                 sigmoid=1.0, min_child_samples=0, max_cat_threshold=64, max_delta_step=None,
                 tweedie_variance_power=None, quantile_alpha=None):
        # every parameter spelled out: scikit-learn reads get_params from this signature
        super().__init__(
            n_estimators=n_estimators, learning_rate=learning_rate, max_depth=max_depth,
            max_leaves=max_leaves, grow_policy=grow_policy, min_child_weight=min_child_weight,
            reg_lambda=reg_lambda, reg_alpha=reg_alpha, gamma=gamma, max_bin=max_bin,
            subsample=subsample, colsample_bytree=colsample_bytree,
            colsample_bynode=colsample_bynode, max_cat_to_onehot=max_cat_to_onehot,
            objective=objective, eval_metric=eval_metric,
            early_stopping_rounds=early_stopping_rounds, base_score=base_score,
            categorical_features=categorical_features, n_jobs=n_jobs,
            random_state=random_state, verbose=verbose, sampling_method=sampling_method,
            top_rate=top_rate, other_rate=other_rate, device=device,
            importance_type=importance_type, scale_pos_weight=scale_pos_weight,
            monotone_constraints=monotone_constraints,
            interaction_constraints=interaction_constraints, min_child_samples=min_child_samples,
            max_cat_threshold=max_cat_threshold, max_delta_step=max_delta_step,
            tweedie_variance_power=tweedie_variance_power, quantile_alpha=quantile_alpha)
        self.lambdarank_truncation_level = lambdarank_truncation_level
        self.lambdarank_norm = lambdarank_norm
        self.label_gain = label_gain
        self.sigmoid = sigmoid

    def _train_params(self, objective) -> dict:
        p = super()._train_params(objective)
        p.update(lambdarank_truncation_level=self.lambdarank_truncation_level,
                 lambdarank_norm=self.lambdarank_norm, sigmoid=self.sigmoid)
        if self.label_gain is not None:
            p["label_gain"] = self.label_gain
        return p

    def fit(self, X, y=None, group=None, qid=None, sample_weight=None, eval_set=None,
            eval_group=None, eval_qid=None, verbose=False, sample_weight_eval_set=None,
            base_margin=None, base_margin_eval_set=None, init_score=None,
            eval_init_score=None):
        """Fit the ranker. ``eval_set``: (X, y) pairs, each with its ``eval_group[i]`` sizes
        or ``eval_qid[i]`` ids. ``X`` may be a ``hardwood.Dataset`` built with its queries
        (``y``, ``sample_weight`` and the queries then come from it), or a DataFrame with a
        ``qid`` column, taken as the query ids (and not as a feature) where neither
        ``group`` nor ``qid`` is given, as XGBRanker does. ``base_margin`` (``init_score``)
        and ``base_margin_eval_set`` (``eval_init_score``): starting margins, as
        ``GBDTRegressor.fit``'s."""
        objective = self.objective or DEFAULT_OBJECTIVE["ranking"]
        objective_for(self, objective, ("ranking",))
        margins, eval_margins = _margins_given(base_margin, init_score, base_margin_eval_set,
                                               eval_init_score)
        if _is_dataframe(X) and "qid" in X.columns:
            # (it was trained on as a feature: 11% of the importance, and predictions on
            # new queries moved by 0.79 with the ids alone)
            if qid is not None:
                raise ValueError("X has a 'qid' column and qid= is given too: give the query "
                                 "ids once")
            if group is None:
                qid = X["qid"]
                X = X.drop(columns="qid")
        if isinstance(X, Dataset):
            # (group= beside a Dataset was required, then ignored for the Dataset's own)
            if group is not None or qid is not None:
                raise ValueError("X is a hardwood.Dataset, which carries its own queries: "
                                 "build it with group= or qid= and leave them out of fit")
            if X.group is None:
                raise ValueError("X is a hardwood.Dataset without queries: build it with "
                                 "hardwood.Dataset(X, y, group=sizes) or qid=ids")
        elif group is None and qid is None:
            raise ValueError("GBDTRanker.fit needs the queries: group= (sizes of consecutive "
                             "queries) or qid= (one query id per row)")
        elif y is None:
            raise ValueError("GBDTRanker.fit needs y, the relevance grades of the rows")
        if not isinstance(X, Dataset):
            _check_row_weights(X, group, qid, sample_weight)
        X, y, sample_weight = self._validate_fit_data(X, y, sample_weight, y_numeric=True)
        if group is not None and qid is not None:  # qid was ignored
            raise ValueError("GBDTRanker.fit takes the queries as group= (sizes) or as qid= "
                             "(one id per row), not both")
        queries = ({"group": group} if group is not None
                   else {"qid": qid} if qid is not None else None)
        eval_queries = None
        if eval_set is None and (eval_group is not None or eval_qid is not None):
            raise ValueError("eval_group and eval_qid need eval_set: they give the queries "
                             "of eval_set's pairs")  # they were ignored
        if eval_set is not None:
            pairs = [eval_set] if (isinstance(eval_set, tuple) and len(eval_set) == 2
                                   and not isinstance(eval_set[0], tuple)) else list(eval_set)
            if eval_group is not None and eval_qid is not None:
                raise ValueError("give eval_group or eval_qid, not both")
            given = eval_group if eval_group is not None else eval_qid
            if given is None or len(given) != len(pairs):
                raise ValueError(f"eval_set has {len(pairs)} pairs: give eval_group (or "
                                 "eval_qid) with one entry per pair")
            key = "group" if eval_group is not None else "qid"
            eval_queries = [{key: v} for v in given]
            eval_set = pairs
        return self._fit(X, y, sample_weight, eval_set, sample_weight_eval_set, verbose,
                         objective, queries=queries, eval_queries=eval_queries,
                         margins=_rows_of(margins[0], X, margins[1]),
                         eval_margins=eval_margins)

    def predict(self, X, base_margin=None):
        """Ranking scores, shape (n_samples,): sort a query's rows by them, highest first;
        ``base_margin``: the rows' starting margins, where the model was trained with them.
        A ``qid`` column of a DataFrame is left out, as in ``fit``."""
        if (_is_dataframe(X) and "qid" in X.columns
                and "qid" not in getattr(self, "feature_names_in_", ())):
            X = X.drop(columns="qid")
        X = self._validate_predict_X(X)
        return np.asarray(self.model_.predict(X, base_margin=base_margin), dtype=np.float64)

    def score(self, X, y, group=None, qid=None, sample_weight=None):
        """The mean NDCG@10 over the queries of ``X`` (``group=`` sizes or ``qid=`` ids, as
        in ``fit``), with the model's ``label_gain``: what ``GridSearchCV`` maximises when
        given no ``scoring`` (route the queries to it with ``set_score_request(qid=True)``
        under scikit-learn's metadata routing). XGBRanker scores its last eval metric."""
        from .ranking import check_ranking_labels, group_ptr, label_gains, ranking_metric

        if group is None and qid is None:
            raise ValueError("GBDTRanker.score needs the queries: group= (sizes of consecutive "
                             "queries) or qid= (one query id per row); under GridSearchCV, "
                             "route them with set_score_request(qid=True) and "
                             "sklearn.set_config(enable_metadata_routing=True)")
        pred = self.predict(X)
        y = np.asarray(y, dtype=np.float64).ravel()
        check_consistent_length(pred, y)  # (a short y was scored over the rows it had)
        ptr = group_ptr(len(pred), group, qid)
        params = self.model_.params
        check_ranking_labels(y, "GBDTRanker.score", params.get("label_gain"))
        w = None if sample_weight is None else _check_sample_weight(
            sample_weight, pred, dtype=np.float64, ensure_non_negative=True)  # (NaN scored NaN)
        return float(ranking_metric("ndcg@10", y, pred, ptr, label_gains(params, y), w))
