"""Random forests with scikit-learn's API: :class:`RandomForestClassifier` and
:class:`RandomForestRegressor`.

Parameters have scikit-learn's names and defaults, plus ``max_bin`` (splits are searched over
quantile bins, as in the boosting trainer) and ``device`` ('cpu' or 'cuda'). Trees grow with
CudaTree's hybrid scheme (see :mod:`hardwood.train.forest_grower`).

Differences from scikit-learn:

* splits are between bins (at most ``max_bin - 1`` per feature, the missing bin apart), as
  in LightGBM's and XGBoost's forests; scikit-learn splits between any two values. On most
  data the two score alike, but a target that changes many times along one feature loses
  to the bins (y = sin(200 x) on 20k rows: R² 0.947 at the default 256, 0.9986 at
  ``max_bin=4096``, scikit-learn's 0.9976): raise ``max_bin`` there (bins take 2 bytes
  above 256);
* ``estimators_`` are hardwood's tree arrays (``feature``, ``threshold``, ``left``,
  ``right``, ``value``), not scikit-learn trees with their own ``predict``; ``apply``
  gives each row's leaf in every tree;
* not taken: ``ccp_alpha``, ``monotonic_cst``, the regression criteria other than
  ``squared_error``, ``max_samples`` beyond the row count; ``verbose`` is accepted and
  prints nothing;
* ``random_state=None`` draws a fresh seed each fit, as scikit-learn; an integer gives the same
  forest at any ``n_jobs``;
* ``n_jobs=None`` uses every core (hardwood's convention), ``-1`` too;
* pandas ``category`` columns are accepted: a categorical feature is split on its category
  codes as ordered numbers (one bin per code), and its values are matched to the training
  categories when predicting, as the boosting estimators do.

The fitted forest converts to a :class:`hardwood.Model` (``model_``) that saves and loads;
``predict``, ``predict_proba`` and ``apply`` predict through it with ``runtime='auto'`` (one
prediction path for boosted models and forests; the compiled runtime is cached on ``model_``,
which is rebuilt when the forest changes, as after a ``warm_start`` fit).
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import accuracy_score, r2_score
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_consistent_length,
    check_is_fitted,
    validate_data,
)

from .backends import forest_cpu as K
from .data.convert import (as_pandas_if_named_table, check_sparse_structure, reject_masked,
                           to_float_matrix)
from .data.binning import check_max_bin
from .data.dataset import Dataset
from .parallel import threads
from .train.forest import Forest, SamplingPlan, check_device, grow_forest
from .train.forest_grower import GrowData, TreeParams

__all__ = ["RandomForestClassifier", "RandomForestRegressor"]

_CHECK_X = dict(accept_sparse=["csr", "csc", "coo"], dtype=[np.float64, np.float32],
                ensure_all_finite="allow-nan")


def _is_dataframe(X) -> bool:
    return type(X).__module__.startswith("pandas") and type(X).__name__ == "DataFrame"


def _validate(est, X, y=None, *, fitting, reset=True, **kw):
    """scikit-learn's checks, except that a DataFrame stays a DataFrame (its category
    columns are coded by hardwood.Dataset, not refused by check_array), that data to
    predict on (not ``fitting``) may hold ±inf, as on every prediction path, and that masked
    labels are refused (scikit-learn's checks would train on the values under the mask)."""
    X = as_pandas_if_named_table(X)  # (an Arrow table's names and dictionary columns)
    reject_masked(y, "y")
    check_sparse_structure(X)  # (before scikit-learn's checks convert it)
    if not _is_dataframe(X):
        if not fitting:
            return validate_data(est, X, reset=reset, **dict(_CHECK_X, ensure_all_finite=False))
        return validate_data(est, X, y, reset=reset, **kw, **_CHECK_X)
    if not fitting:
        return validate_data(est, X, skip_check_array=True, reset=reset)
    names = getattr(est, "feature_names_in_", None)
    y = validate_data(est, y=y, **kw)  # (this forgets the fitted feature names: with no X,
    if names is not None and not reset:  # it takes them to be none; a warm start keeps them)
        est.feature_names_in_ = names
    X = validate_data(est, X, skip_check_array=True, reset=reset)
    check_consistent_length(X, y)
    return X, y


def _checked_weight(sample_weight, X):
    """scikit-learn's weight checks, after refusing a masked array (they drop the mask)."""
    reject_masked(sample_weight, "sample_weight")
    w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    with np.errstate(over="ignore"):
        total = float(np.sum(w))
    if not np.isfinite(total):
        # (two weights of 1e308 trained a forest predicting NaN, with numpy's warnings only)
        raise ValueError(f"sample_weight sums to {total}: weights this large overflow the "
                         "sums the splits are scored by; scale them down (only their ratios "
                         "matter)")
    return w


def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def _is_real(v):
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


class _ForestBase(BaseEstimator):
    _criteria = ()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        return tags

    # -- parameters -----------------------------------------------------------------------
    def _check_params(self, n_features):
        def bad(name, allowed):
            raise ValueError(f"{name} must be {allowed}, got {getattr(self, name)!r}")

        if not _is_int(self.n_estimators) or self.n_estimators < 1:
            bad("n_estimators", "an integer >= 1")
        if self.criterion not in self._criteria:
            bad("criterion", f"one of {self._criteria}")
        if self.max_depth is not None and (not _is_int(self.max_depth) or self.max_depth < 1):
            bad("max_depth", "None or an integer >= 1")
        mss = self.min_samples_split
        if _is_int(mss):
            if mss < 2:
                bad("min_samples_split", "an integer >= 2 or a float in (0, 1]")
        elif _is_real(mss) and 0.0 < mss <= 1.0:
            pass
        else:
            bad("min_samples_split", "an integer >= 2 or a float in (0, 1]")
        msl = self.min_samples_leaf
        if not ((_is_int(msl) and msl >= 1) or (_is_real(msl) and not _is_int(msl)
                                                 and 0.0 < msl < 1.0)):
            bad("min_samples_leaf", "an integer >= 1 or a float in (0, 1)")
        if not _is_real(self.min_weight_fraction_leaf) or not 0 <= self.min_weight_fraction_leaf <= 0.5:
            bad("min_weight_fraction_leaf", "a float in [0, 0.5]")
        if not _is_real(self.min_impurity_decrease) or self.min_impurity_decrease < 0:
            bad("min_impurity_decrease", "a float >= 0")
        if self.max_leaf_nodes is not None and (not _is_int(self.max_leaf_nodes)
                                                or self.max_leaf_nodes < 2):
            bad("max_leaf_nodes", "None or an integer >= 2")
        mf = self.max_features
        if mf is None:
            mtry = n_features
        elif isinstance(mf, str):
            if mf == "sqrt":
                mtry = max(1, int(math.sqrt(n_features)))
            elif mf == "log2":
                mtry = max(1, int(math.log2(n_features)))
            else:
                bad("max_features", "'sqrt', 'log2', None, an integer >= 1 or a float in (0, 1]")
        elif _is_int(mf) and mf >= 1:
            if mf > n_features:  # as scikit-learn: a count past the features is a mistake
                raise ValueError(f"max_features must be in (0, n_features={n_features}], got "
                                 f"{mf!r}")
            mtry = int(mf)
        elif _is_real(mf) and not _is_int(mf) and 0.0 < mf <= 1.0:
            mtry = max(1, int(mf * n_features))
        else:
            bad("max_features", "'sqrt', 'log2', None, an integer >= 1 or a float in (0, 1]")
        if not isinstance(self.bootstrap, (bool, np.bool_)):
            bad("bootstrap", "a bool")
        if not (isinstance(self.oob_score, (bool, np.bool_)) or callable(self.oob_score)):
            bad("oob_score", "a bool or a callable(y_true, y_pred)")
        ms = self.max_samples
        if ms is not None and not ((_is_int(ms) and ms >= 1) or (_is_real(ms) and 0.0 < ms <= 1.0)):
            bad("max_samples", "None, an integer >= 1 or a float in (0, 1]")
        if not self.bootstrap and ms is not None:
            raise ValueError("max_samples cannot be set when bootstrap=False; set "
                             "bootstrap=True or max_samples=None")
        if not self.bootstrap and self.oob_score:
            raise ValueError("Out of bag estimation only available if bootstrap=True")
        if self.n_jobs is not None and (not _is_int(self.n_jobs) or self.n_jobs == 0):
            bad("n_jobs", "None, -1 or a non-zero integer")
        check_max_bin(self.max_bin)
        if not isinstance(self.warm_start, (bool, np.bool_)):
            bad("warm_start", "a bool")
        # scikit-learn's parameters hardwood's forests have no method for: their defaults
        # (a scikit-learn forest's get_params()) are taken, other values named
        if not _is_real(self.ccp_alpha) or self.ccp_alpha < 0:
            bad("ccp_alpha", "a float >= 0")
        if self.ccp_alpha > 0:
            raise ValueError(f"ccp_alpha={self.ccp_alpha!r}: hardwood's forests do not prune "
                             "by cost-complexity; limit the trees with max_leaf_nodes, "
                             "min_impurity_decrease or min_samples_leaf instead")
        cst = self.monotonic_cst
        if cst is not None and np.shape(cst) != (n_features,):
            raise ValueError(f"monotonic_cst has {np.size(cst)} values for {n_features} "
                             "features: give one per feature, as scikit-learn")
        if cst is not None and np.any(np.asarray(cst) != 0):
            raise ValueError("monotonic_cst: hardwood's forests do not take monotonic "
                             "constraints yet; GBDTRegressor and GBDTClassifier do "
                             "(monotone_constraints)")
        check_device(self.device)
        return mtry

    def _tree_params(self, n_rows, mtry):
        mss = self.min_samples_split
        mss = mss if _is_int(mss) else max(2, int(math.ceil(mss * n_rows)))
        msl = self.min_samples_leaf
        msl = msl if _is_int(msl) else max(1, int(math.ceil(msl * n_rows)))
        return TreeParams(
            criterion=K.CRITERIA[self.criterion], mtry=int(mtry),
            max_depth=2**31 - 1 if self.max_depth is None else int(self.max_depth),
            min_samples_split=int(mss), min_samples_leaf=int(msl),
            min_weight_fraction_leaf=float(self.min_weight_fraction_leaf),
            min_impurity_decrease=float(self.min_impurity_decrease),
            max_leaf_nodes=0 if self.max_leaf_nodes is None else int(self.max_leaf_nodes))

    # -- fitting -----------------------------------------------------------------------------
    def sampling_plan(self, n, sample_weight, row_class_weight, balanced_subsample, y_class,
                      n_outputs, is_reg):
        """How the trees draw their rows (``train.forest.SamplingPlan``) for ``n`` rows with
        these (checked) weights; ``hardwood.dask`` draws by the same plan."""
        rw = sample_weight
        if row_class_weight is not None:
            rw = row_class_weight if rw is None else rw * row_class_weight
            if not np.any(rw > 0):  # (all equal, they would draw like no weights below)
                raise ValueError("class_weight (with sample_weight) gives every row weight 0; "
                                 "at least one class present in y needs a positive weight")
        # a fractional max_samples' base (scikit-learn's): the rows, or the weights' sum
        w_total = None if rw is None else float(rw.sum())
        if rw is not None and np.all(rw == rw[0]):
            rw = None  # equal weights draw like no weights (so sample_weight=ones == None)
        if self.bootstrap:
            ms = self.max_samples
            if ms is None:
                n_boot = n
            elif _is_int(ms):
                if ms > n:
                    raise ValueError(f"max_samples must be <= n_samples={n}, got {ms}")
                n_boot = int(ms)
            else:
                tot = n if w_total is None else w_total
                n_boot = max(int(ms * tot), 1)
                if n_boot < max(10, n ** (1 / 3)):  # scikit-learn's warning: weights that sum
                    # to little (all below 1, say) left a few rows per tree with no word
                    what = (f"the number of samples is {n}" if w_total is None else
                            f"the total sum of sample weights is {tot:g}")
                    warnings.warn(f"Using the fractional value max_samples={ms} when {what} "
                                  f"results in a low number ({n_boot}) of bootstrap samples. "
                                  "We recommend passing `max_samples` as an integer instead.",
                                  UserWarning)
        else:
            n_boot = n
        plan = SamplingPlan(n, bool(self.bootstrap), n_boot,
                            None if rw is None else np.asarray(rw, dtype=np.float64),
                            balanced_subsample, y_class, n_outputs if not is_reg else 0)
        if not self.bootstrap and sample_weight is not None:
            plan.row_weight = sample_weight if row_class_weight is None else (
                sample_weight * row_class_weight)
        elif not self.bootstrap and row_class_weight is not None:
            plan.row_weight = row_class_weight
        return plan

    def _fit_forest(self, X, y_fit, sample_weight, row_class_weight, balanced_subsample,
                    y_class, n_outputs, is_reg):
        n, d = X.shape
        mtry = self._check_params(d)
        if sample_weight is not None:
            sample_weight = _checked_weight(sample_weight, X)
            if not np.any(sample_weight > 0):
                raise ValueError("Sample weights must contain at least one non-zero number.")
        plan = self.sampling_plan(n, sample_weight, row_class_weight, balanced_subsample,
                                  y_class, n_outputs, is_reg)

        if not self.warm_start or not hasattr(self, "forest_"):
            rs = self.random_state
            self._seed = (int(rs) if _is_int(rs) else
                          int(check_random_state(rs).randint(np.iinfo(np.int32).max)))
            old = []
        else:
            old = list(self.forest_.trees)
            if self.n_estimators < len(old):
                raise ValueError(f"n_estimators={self.n_estimators} must be larger or equal to "
                                 f"len(estimators_)={len(old)} when warm_start==True")
            if self.n_estimators == len(old):
                warnings.warn("Warm-start fitting without increasing n_estimators does not fit "
                              "new trees.", UserWarning)
                self._oob = None
                return self
        # n_jobs bounds the whole fit, binning included (binning runs on numba's threads)
        with threads(self.n_jobs):
            # forests split category codes as ordered numbers: one bin per code, in code order
            # a warm start codes X as the first fit did: its trees split those codes
            ds = Dataset(X, weight=sample_weight, max_bin=int(self.max_bin),
                         group_categories=False, drop_unused_categories=False,
                         feature_info=self.forest_.info if old else None)
        data = GrowData.from_dataset(ds, y_fit, is_reg, n_outputs)
        tp = self._tree_params(n, mtry)
        oob = None
        if self.oob_score:
            oob = (np.zeros((n, n_outputs if not is_reg else 1)), np.zeros(n, dtype=np.int64))
        growth = getattr(self, "_growth", "hybrid")
        crossover = getattr(self, "_crossover", None)
        Xraw = None
        if oob is not None:  # coded as the forest splits it (category codes for a frame)
            Xraw = (to_float_matrix(X, info=ds.info)[0] if _is_dataframe(X) else
                    X.toarray() if hasattr(X, "toarray") else np.asarray(X))
            if Xraw.dtype not in (np.float32, np.float64):
                Xraw = Xraw.astype(np.float64)
            Xraw = np.ascontiguousarray(Xraw)
        # hardwood.dask's tree-parallel mode: each worker grows its share of the trees (a
        # tree's draws depend on the seed and its index only: the forest is the same)
        tree_ids = getattr(self, "_tree_ids", None)
        if tree_ids is None:
            tree_ids = range(len(old), self.n_estimators)
        with threads(self.n_jobs):
            new = grow_forest(data, tp, plan, self._seed, tree_ids,
                              device=self.device, growth=growth, crossover=crossover, oob=oob,
                              X=Xraw, tree_parallel=getattr(self, "_tree_parallel", None))
            if oob is not None and old:  # out-of-bag over every tree, old ones included
                from .train.forest import add_oob
                for t, tree in enumerate(old):
                    _, _, counts = plan.tree_weights(self._seed, t)
                    add_oob(Xraw, tree, np.flatnonzero(counts == 0), oob)
        self.forest_ = Forest(old + new, n_outputs=n_outputs if not is_reg else 1,
                              is_reg=is_reg, info=ds.info)
        self.n_features_in_ = d
        self.feature_importances_ = self.forest_.feature_importances()
        self._oob = oob
        return self

    @property
    def estimators_(self):
        """The fitted trees (pre-order node arrays)."""
        check_is_fitted(self, "forest_")
        return self.forest_.trees

    @property
    def model_(self):
        """The forest as a :class:`hardwood.Model` (built on first use, and again when the
        forest changes)."""
        check_is_fitted(self, "forest_")
        # kept on the forest, not in the estimator's __dict__: predicting leaves the fitted
        # estimator as it was (scikit-learn's check_dict_unchanged)
        return self.forest_.model(self._model_params)

    def _model_params(self):
        return {k: v for k, v in self.get_params().items()
                if v is None or isinstance(v, (int, float, str, bool))}

    def _validate_X(self, X):
        check_is_fitted(self, "forest_")
        return _validate(self, X, fitting=False, reset=False)

    def _predict_model(self, X, output):
        """``model_``'s prediction of the checked rows ``X`` through the ``auto`` runtime
        (compiled on the first call and kept on ``model_``)."""
        return self.model_.predict(X, output=output, runtime="auto")

    def apply(self, X):
        """Leaf index (pre-order node id) of every tree for each row: (n_samples, n_trees)."""
        X = self._validate_X(X)
        leaves = self._predict_model(X, "leaf")
        # model_ holds one tree per class per estimator, all with the estimator's node ids
        step = self.forest_.n_outputs
        return leaves[:, ::step].astype(np.int64)


class RandomForestClassifier(ClassifierMixin, _ForestBase):
    """A random forest classifier (scikit-learn API, hybrid growth after CudaTree)."""

    _criteria = ("gini", "entropy", "log_loss")

    def __init__(self, n_estimators=100, *, criterion="gini", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features="sqrt", max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap=True, oob_score=False, n_jobs=None, random_state=None, verbose=0,
                 warm_start=False, class_weight=None, ccp_alpha=0.0, max_samples=None,
                 monotonic_cst=None, max_bin=256, device="cpu"):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.ccp_alpha = ccp_alpha
        self.max_samples = max_samples
        self.monotonic_cst = monotonic_cst
        self.max_bin = max_bin
        self.device = device

    def row_class_weights(self, y_enc, sample_weight=None):
        """(each row's class weight or None, whether 'balanced_subsample') of the encoded
        labels ``y_enc`` under ``class_weight``. 'balanced' counts the classes by
        ``sample_weight`` (checked), as scikit-learn does: counting rows gave a class
        weighted 10x the weights of the other."""
        Kc = self.n_classes_
        cw = self.class_weight
        row_cw = None
        subsample = False
        if cw is None:
            pass
        elif isinstance(cw, str):
            if cw == "balanced_subsample" and not self.bootstrap:
                warnings.warn("class_weight='balanced_subsample' without bootstrap is the "
                              "same as class_weight='balanced'", UserWarning)
                cw = "balanced"
            if cw == "balanced":
                present = np.count_nonzero(np.bincount(y_enc, minlength=Kc))
                counts = np.bincount(y_enc, weights=sample_weight, minlength=Kc)
                total = counts.sum()
                per = np.divide(total, present * counts, out=np.zeros(Kc), where=counts > 0)
                row_cw = per[y_enc]
            elif cw == "balanced_subsample":
                subsample = True
            else:
                raise ValueError("class_weight must be None, 'balanced', 'balanced_subsample' "
                                 f"or a dict {{label: weight}}, got {cw!r}")
        elif isinstance(cw, dict):
            per = np.ones(Kc)
            for lab, val in cw.items():
                hit = np.flatnonzero(self.classes_ == lab)
                if hit.size == 0:
                    raise ValueError(f"class_weight names label {lab!r}, which is not among the "
                                     f"classes {self.classes_.tolist()[:10]}")
                if (not isinstance(val, numbers.Real) or isinstance(val, (bool, np.bool_))
                        or not np.isfinite(val) or val < 0):
                    raise ValueError(f"class_weight[{lab!r}] must be a finite number >= 0, got "
                                     f"{val!r}")
                per[hit[0]] = float(val)
            row_cw = per[y_enc]
        else:
            raise ValueError("class_weight must be None, 'balanced', 'balanced_subsample' or a "
                             f"dict {{label: weight}}, got {cw!r}")
        return row_cw, subsample

    def fit(self, X, y, sample_weight=None):
        """Grow the forest from X (n_samples, n_features) and labels y."""
        first = not (self.warm_start and hasattr(self, "forest_"))
        X, y = _validate(self, X, y, fitting=True, reset=first)
        check_classification_targets(y)
        if first:
            le = LabelEncoder()
            y_enc = le.fit_transform(y)
            self.classes_ = le.classes_
            self.n_classes_ = len(le.classes_)
        else:
            unknown = np.setdiff1d(np.unique(y), self.classes_)
            if unknown.size:
                raise ValueError(f"warm_start: y has labels {unknown[:5].tolist()} not seen in "
                                 "the first fit")
            y_enc = np.searchsorted(self.classes_, y)
        Kc = self.n_classes_
        if sample_weight is not None:
            sample_weight = _checked_weight(sample_weight, X)
        row_cw, subsample = self.row_class_weights(y_enc, sample_weight)
        self._fit_forest(X, y_enc, sample_weight, row_cw, subsample, y_enc.astype(np.int64),
                         Kc, False)
        oob = self.__dict__.pop("_oob", None)
        if self.oob_score and oob is not None:
            s, c = oob
            if np.any(c == 0):
                warnings.warn("Some inputs do not have OOB scores. This probably means too few "
                              "trees were used to compute any reliable OOB estimates.",
                              UserWarning)
            self.oob_decision_function_ = s / np.maximum(c, 1)[:, None]
            pred = np.argmax(self.oob_decision_function_, axis=1)
            scorer = self.oob_score if callable(self.oob_score) else accuracy_score
            self.oob_score_ = float(scorer(y_enc, pred))
        return self

    def predict_proba(self, X):
        """Mean of the trees' class fractions: (n_samples, n_classes), ``classes_`` order."""
        X = self._validate_X(X)
        proba = self._predict_model(X, "value")  # (clipped to [0, 1]: multi:proba's transform)
        return proba.reshape(proba.shape[0], self.n_classes_)

    def predict_log_proba(self, X):
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """The class of largest mean probability."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


class RandomForestRegressor(RegressorMixin, _ForestBase):
    """A random forest regressor (scikit-learn API, hybrid growth after CudaTree)."""

    # ('friedman_mse': scikit-learn's other name of the same splits, deprecated in 1.9)
    _criteria = ("squared_error", "friedman_mse")

    def __init__(self, n_estimators=100, *, criterion="squared_error", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features=1.0, max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap=True, oob_score=False, n_jobs=None, random_state=None, verbose=0,
                 warm_start=False, ccp_alpha=0.0, max_samples=None, monotonic_cst=None,
                 max_bin=256, device="cpu"):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.ccp_alpha = ccp_alpha
        self.max_samples = max_samples
        self.monotonic_cst = monotonic_cst
        self.max_bin = max_bin
        self.device = device

    def fit(self, X, y, sample_weight=None):
        """Grow the forest from X (n_samples, n_features) and targets y."""
        first = not (self.warm_start and hasattr(self, "forest_"))
        X, y = _validate(self, X, y, fitting=True, reset=first, y_numeric=True)
        y = np.asarray(y, dtype=np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinity")
        self._fit_forest(X, y, sample_weight, None, False, None, 1, True)
        oob = self.__dict__.pop("_oob", None)
        if self.oob_score and oob is not None:
            s, c = oob
            if np.any(c == 0):
                warnings.warn("Some inputs do not have OOB scores. This probably means too few "
                              "trees were used to compute any reliable OOB estimates.",
                              UserWarning)
            self.oob_prediction_ = s[:, 0] / np.maximum(c, 1)
            scorer = self.oob_score if callable(self.oob_score) else r2_score
            self.oob_score_ = float(scorer(y, self.oob_prediction_))
        return self

    def predict(self, X):
        """Mean of the trees' leaf means, shape (n_samples,)."""
        X = self._validate_X(X)
        return self._predict_model(X, "value")
