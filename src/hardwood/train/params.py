"""Training parameters: XGBoost names, LightGBM aliases, defaults and validation."""
from __future__ import annotations

import difflib
import json
import math
import numbers
import warnings

from ..objectives import DEFAULT_OBJECTIVE, objective_class
from . import sampling

DEFAULTS = {
    "objective": DEFAULT_OBJECTIVE["regression"],  # a name or alias of hardwood.objectives
    "learning_rate": 0.3,
    "max_depth": None,  # 6; 0 (no limit) for lossguide brought by LightGBM's num_leaves
    "max_leaves": 0,
    "grow_policy": "depthwise",
    "min_child_weight": 1.0,
    "reg_lambda": 1.0,
    "reg_alpha": 0.0,
    "gamma": 0.0,
    "max_bin": None,  # taken from the Dataset
    "subsample": 1.0,
    "sampling_method": "uniform",  # uniform, goss or mvs (train/sampling.py)
    "top_rate": None,  # goss: the share of rows of largest gradients kept
    "other_rate": None,  # goss: the share drawn from the others
    "colsample_bytree": 1.0,
    "colsample_bynode": 1.0,
    # internal: how a column sample's fraction becomes a count: "down" (XGBoost), or
    # "nearest" under LightGBM's feature_fraction names (train/grower.features_drawn)
    "colsample_rounding": "down",
    "max_cat_to_onehot": 4,
    "max_cat_threshold": 64,
    # -1/0/+1 per feature (a list, XGBoost's string "(1,0,-1)", or {feature name: c});
    # resolved against the training features by resolve_monotone
    "monotone_constraints": None,
    # sets of features that may split on one path (lists of indices or names, or XGBoost's
    # string "[[0,1],[2,3]]"); resolved by resolve_interactions
    "interaction_constraints": None,
    # LightGBM's growth: a field without a split above gamma in a node is not scanned
    # in its subtree (LightGBM's is_splittable), splits need a gain above 0 (XGBoost's:
    # 1e-6), and a tree that cannot split adds nothing (train/booster.Booster.update). None:
    # on where LightGBM's num_leaves is given (train/grower.GrowParams)
    "drop_unsplittable": None,
    # LightGBM's least rows of a child (its estimate from the hessians); 0: none
    "min_data_in_leaf": 0,
    # where splits send the missing values: "xgboost" (where the gain is larger; right at a
    # node without any) or "lightgbm" (its reverse scan first: left at a node without any;
    # a field without any in training reads them as 0). None: "lightgbm" where LightGBM's
    # num_leaves is given (backends/split.XGB_MISSING, LGB_MISSING)
    "missing_rule": None,
    "base_score": None,  # estimated from the labels
    "random_state": 0,
    "n_jobs": None,  # all cores
    "eval_metric": None,
    "eval_at": None,  # LightGBM's cutoffs of 'ndcg' and 'map' (1-5 under its 'lambdarank')
    "num_class": None,
    "huber_slope": 1.0,
    # a cap on each leaf's weight before the learning rate (XGBoost's and LightGBM's); 0: none.
    # XGBoost's count:poisson takes 0.7, for its trees and its hessian (resolve_params)
    "max_delta_step": 0.0,
    # LightGBM's poisson: its hessian's scale is exp of it (XGBoost's: max_delta_step's)
    "poisson_max_delta_step": 0.7,
    "tweedie_variance_power": 1.5,  # reg:tweedie, in [1, 2)
    # reg:quantileerror's quantile, in (0, 1) (XGBoost's name; LightGBM's quantile: alpha)
    "quantile_alpha": None,
    "scale_pos_weight": 1.0,  # binary: the positive rows' gradients scaled (not the base score)
    "is_unbalance": False,  # binary, LightGBM's: the smaller class's gradients scaled up
    # internal: objectives.class_scales fixed from all the labels (hardwood.dask sets it)
    "class_scale": None,
    "sigmoid": 1.0,  # rank:ndcg / rank:pairwise (hardwood.ranking): the RankNet slope
    "lambdarank_truncation_level": 30,  # rank:ndcg: pairs with a row ranked above this
    "lambdarank_norm": True,  # rank:ndcg: LightGBM's normalisation of each query's lambdas
    "label_gain": None,  # rank:ndcg: the gain of each relevance grade (default 2^label - 1)
    "verbose": False,
    "device": "cpu",
    "backend": None,  # internal: 'cpu' or 'reference' (the naive twins)
    # internal: rows' starting margins (base_margin / init_score) add to the base score, as
    # LightGBM's (set under its names by train/booster.py), or replace it, as XGBoost's
    "margins_add_to_base": False,
    "pages": None,  # internal: the in-core rows cut into pages (a count, or row-id cuts), or
                    # {"dir": folder, "page_bytes": n}: the bins written to pages on disk
}

# the parameters of one objective: (what it is, the objective); given to another, an error
OBJECTIVE_PARAMS = {"huber_slope": ("the delta of", "reg:pseudohubererror"),
                    "poisson_max_delta_step": ("the hessian offset of", "count:poisson"),
                    "tweedie_variance_power": ("the variance power of", "reg:tweedie"),
                    "quantile_alpha": ("the quantile of", "reg:quantileerror")}

# LightGBM's defaults that are not XGBoost's, taken where num_leaves brings LightGBM's growth
# (and its missing rule, "missing_rule", whose scans count min_data_in_leaf as LightGBM's)
LIGHTGBM_DEFAULTS = {"learning_rate": 0.1, "reg_lambda": 0.0, "min_child_weight": 1e-3,
                     "min_data_in_leaf": 20}

ALIASES = {
    "eta": "learning_rate", "shrinkage_rate": "learning_rate",
    "lambda": "reg_lambda", "lambda_l2": "reg_lambda",
    "alpha": "reg_alpha", "lambda_l1": "reg_alpha",
    "min_split_loss": "gamma", "min_gain_to_split": "gamma", "min_split_gain": "gamma",
    "num_leaves": "max_leaves",
    "min_sum_hessian_in_leaf": "min_child_weight", "min_sum_hessian": "min_child_weight",
    "bagging_fraction": "subsample", "data_sample_strategy": "sampling_method",
    "feature_fraction": "colsample_bytree", "feature_fraction_bynode": "colsample_bynode",
    "seed": "random_state", "random_seed": "random_state",
    "unbalance": "is_unbalance", "unbalanced_sets": "is_unbalance",
    "nthread": "n_jobs", "num_threads": "n_jobs", "n_threads": "n_jobs",
    "metric": "eval_metric", "num_classes": "num_class",
    "ndcg_eval_at": "eval_at", "ndcg_at": "eval_at", "map_eval_at": "eval_at", "map_at": "eval_at",
    "verbosity": "verbose", "max_bins": "max_bin",
    # XGBoost's name of the top-k truncation of its default lambdarank_pair_method 'topk'
    "lambdarank_num_pair_per_sample": "lambdarank_truncation_level",
    "max_tree_output": "max_delta_step", "max_leaf_output": "max_delta_step",
    "monotone_constraint": "monotone_constraints", "mc": "monotone_constraints",
    "min_child_samples": "min_data_in_leaf", "min_data_per_leaf": "min_data_in_leaf",
    "min_data": "min_data_in_leaf",
    # LightGBM's method and penalty of its monotone constraints: checked, then dropped
    # (hardwood's is its default 'basic' method without a penalty: _check_ignored)
    "monotone_constraints_method": None, "monotone_constraining_method": None,
    "mc_method": None, "monotone_penalty": None, "monotone_splits_penalty": None,
    "ms_penalty": None, "mc_penalty": None,
    "tree_method": None,  # accepted and ignored: hardwood always trains on histograms
    # XGBoost's and LightGBM's names of gradient-boosted trees, their default: accepted
    "booster": None, "boosting": None, "boosting_type": None,
}

# tree_method values of XGBoost: hardwood trains on histograms whichever is named (as
# XGBoost's "auto" and "hist"); "exact" and "approx" warn that the trees are not theirs, and
# another value is an error, as XGBoost's ("bogus" was taken without a word)
TREE_METHODS = ("auto", "hist", "approx", "exact")


MISSING_RULES = ("xgboost", "lightgbm")
# LightGBM's metric names for "no built-in metric" (custom metrics only); the first stands
# for them all in resolved parameters
NO_METRIC = ("None", "none", "null", "na", "custom")
MONOTONE_METHODS = ("monotone_constraints_method", "monotone_constraining_method", "mc_method")


def _check_ignored(k, v):
    if k in MONOTONE_METHODS and v != "basic":
        raise ValueError(f"{k}={v!r} is not supported: hardwood constrains monotone fields "
                         "by LightGBM's default method, 'basic' (XGBoost's)")
    if k in ("monotone_penalty", "monotone_splits_penalty", "ms_penalty", "mc_penalty") and (
            not isinstance(v, numbers.Real) or v != 0):
        raise ValueError(f"{k}={v!r} is not supported: hardwood has no penalty on monotone "
                         "splits (LightGBM's default, 0)")
    if k in ("booster", "boosting", "boosting_type"):
        if isinstance(v, str) and v.lower() == "goss":
            raise ValueError(f"{k}='goss' (LightGBM's older spelling) is "
                             "sampling_method='goss' in hardwood")
        if not (isinstance(v, str) and v.lower() in ("gbtree", "gbdt")):
            raise ValueError(f"{k}={v!r} is not supported: hardwood trains gradient-boosted "
                             "trees ('gbtree', 'gbdt'); its random forests are "
                             "hardwood.RandomForestClassifier/Regressor")
    if k == "tree_method":
        if v == "gpu_hist":  # (it trained on the CPU without a word; XGBoost 3 refuses it)
            raise ValueError("tree_method='gpu_hist' is XGBoost's old spelling of GPU "
                             "training, which XGBoost 3 refuses too: give device='cuda' "
                             "(tree_method='hist' or none)")
        if not isinstance(v, str) or v not in TREE_METHODS:
            raise ValueError(f"tree_method must be one of {list(TREE_METHODS)}, got {v!r}")
        if v in ("exact", "approx"):
            warnings.warn(f"tree_method={v!r}: hardwood trains on histograms (XGBoost's "
                          "'hist'), so the trees are those of tree_method='hist'", UserWarning,
                          stacklevel=4)


GROW_POLICIES = ("depthwise", "lossguide")
MAX_CLASSES = 1 << 20  # num_class, given or read from the labels


def _num(p, key, lo=None, hi=None, lo_open=False, integer=False):
    v = p[key]
    ok_type = isinstance(v, numbers.Integral) if integer else isinstance(v, numbers.Real)
    if not ok_type or isinstance(v, bool):
        raise TypeError(f"parameter {key!r} must be {'an integer' if integer else 'a number'}, got {v!r}")
    if not math.isfinite(v):
        raise ValueError(f"parameter {key!r} must be a finite number, got {v!r}")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise ValueError(f"parameter {key!r} must be {'>' if lo_open else '>='} {lo}, got {v}")
    if hi is not None and v > hi:
        raise ValueError(f"parameter {key!r} must be <= {hi}, got {v}")
    p[key] = int(v) if integer else float(v)


def _check_sampling(p):
    method = p["sampling_method"]
    if not isinstance(method, str):
        raise TypeError(f"sampling_method must be a string, got {method!r}")
    method = sampling.ALIASES.get(method.lower(), method.lower())
    if method not in sampling.METHODS:
        names = sampling.METHODS + tuple(sampling.ALIASES)
        raise ValueError(f"sampling_method must be one of {names}, got {p['sampling_method']!r}")
    p["sampling_method"] = method
    given = [k for k in ("top_rate", "other_rate") if p[k] is not None]
    for k in given:
        _num(p, k, 0, 1, lo_open=True)
    if given and method != "goss":
        raise ValueError(f"{' and '.join(given)} apply to sampling_method='goss' only "
                         f"(sampling_method is {method!r})")
    if method == "goss":
        if given and p["subsample"] < 1.0:
            raise ValueError("with sampling_method='goss' give either subsample or "
                             "top_rate/other_rate, not both")
        a, b = sampling.goss_rates(p["subsample"], p["top_rate"], p["other_rate"])
        if b <= 0 or a + b > 1.0 or a >= 1.0:
            raise ValueError(f"goss needs top_rate + other_rate <= 1 and other_rate > 0, got "
                             f"top_rate={a}, other_rate={b}")
        p["top_rate"], p["other_rate"] = a, b


# objective names that are LightGBM's own (not XGBoost's or scikit-learn's): under them,
# ``alpha`` is LightGBM's Huber/quantile parameter, not XGBoost's L1 regularisation
LIGHTGBM_OBJECTIVES = {"regression", "regression_l2", "l2", "mse", "mean_squared_error",
                       "regression_l1", "l1", "mean_absolute_error", "mae", "binary", "multiclass",
                       "softmax", "lambdarank", "poisson", "gamma", "tweedie", "quantile"}


def _lightgbm_alpha(params):
    """``alpha`` is XGBoost's L1 regularisation (``reg_alpha``), but LightGBM's Huber and
    quantile parameter (default 0.9), unused by its other objectives. A LightGBM parameter
    dict (its objective names) passing ``alpha`` trained with an L1 penalty of 0.9: 1.6 off
    LightGBM's model. Under LightGBM's objective names it is ignored, with a warning."""
    obj = params.get("objective")
    if "alpha" not in params or not (isinstance(obj, str) and obj.lower() in LIGHTGBM_OBJECTIVES):
        return params
    if obj.lower() == "quantile":  # its quantile
        if "quantile_alpha" in params:
            raise ValueError("parameters 'alpha' (LightGBM's quantile) and 'quantile_alpha' "
                             "are the same setting under objective 'quantile'; give one")
        return {("quantile_alpha" if k == "alpha" else k): v for k, v in params.items()}
    warnings.warn(f"alpha is LightGBM's Huber/quantile parameter under its objective names, "
                  f"and objective {obj!r} does not use it: ignored (L1 regularisation is "
                  "reg_alpha, or lambda_l1)", UserWarning, stacklevel=4)
    return {k: v for k, v in params.items() if k != "alpha"}


def _lightgbm_bagging(params):
    """LightGBM's bagging: ``bagging_fraction`` (hardwood's ``subsample``) draws rows only when
    ``bagging_freq`` > 0, a new sample every ``bagging_freq`` rounds. Hardwood draws one every
    round, so ``bagging_freq=1`` is ``subsample``; ``bagging_freq=0``, or ``bagging_fraction``
    without ``bagging_freq``, means no bagging, as in LightGBM (the latter with a warning: it
    bagged every round before); more than 1 is refused. ``params`` without ``bagging_freq``."""
    if "subsample_freq" in params:  # LightGBM's estimators' names: subsample is its fraction
        params = dict(params)
        if "bagging_freq" in params:
            raise ValueError("parameters 'bagging_freq' and 'subsample_freq' are the same "
                             "setting; give one")
        params["bagging_freq"] = params.pop("subsample_freq")
        if "subsample" in params and "bagging_fraction" not in params:
            params["bagging_fraction"] = params.pop("subsample")
    if "bagging_freq" not in params and "bagging_fraction" not in params:
        return params
    params = dict(params)
    freq = params.pop("bagging_freq", None)
    if freq is not None:
        if not isinstance(freq, numbers.Integral) or isinstance(freq, bool) or freq < 0:
            raise ValueError(f"bagging_freq must be an integer >= 0, got {freq!r}")
        if freq > 1:
            raise ValueError(f"bagging_freq={freq} (one sample kept for {freq} rounds) is not "
                             "supported: give 1 (a new sample every round, as subsample) or 0 "
                             "(no bagging)")
    method = params.get("sampling_method", params.get("data_sample_strategy", "uniform"))
    method = sampling.ALIASES.get(str(method).lower(), str(method).lower())
    if method == "goss" and "bagging_fraction" in params:
        # LightGBM refuses to bag under GOSS ("Cannot use bagging in GOSS"), and ignores the
        # fraction without bagging_freq; the fraction became subsample here, and GOSS's
        # rates two thirds and one third of it, without a word
        fraction = params["bagging_fraction"]
        if freq and isinstance(fraction, numbers.Real) and fraction < 1.0:
            raise ValueError("sampling_method='goss' does not bag, as in LightGBM: drop "
                             "bagging_fraction and bagging_freq, and give GOSS's top_rate "
                             "and other_rate (or subsample) instead")
        params.pop("bagging_fraction")
        return params
    if method != "uniform" or freq == 1:
        return params
    fraction = params.get("bagging_fraction", params.get("subsample", 1.0))
    if freq is None:  # bagging_fraction alone
        if isinstance(fraction, numbers.Real) and fraction < 1.0:
            warnings.warn("bagging_fraction without bagging_freq: no bagging, as in LightGBM "
                          "(it bags only when bagging_freq > 0); give bagging_freq=1 for a new "
                          "sample every round", UserWarning, stacklevel=6)
        params.pop("bagging_fraction")
    else:  # bagging_freq=0: LightGBM's names for the fraction are both off
        params.pop("bagging_fraction", None)
        params.pop("subsample", None)
    return params


# other libraries' names with no hardwood parameter, and what to use (difflib's guesses named
# other quantities: min_data_in_leaf, a row count, suggested min_sum_hessian_in_leaf)
_ROUNDS = ("the number of rounds is num_boost_round= of hardwood.train (n_estimators= of the "
           "estimators)")
_ROWS = ("scikit-learn's min_samples_leaf counts a leaf's rows; hardwood's min_data_in_leaf "
         "(LightGBM's) counts them from the hessians as LightGBM does, the same rows where "
         "every row's hessian is equal (squared error); min_child_weight bounds the hessian "
         "sum")
FOREIGN_HINTS = {
    "min_samples_leaf": _ROWS,
    "num_iterations": _ROUNDS, "num_iteration": _ROUNDS, "n_iter": _ROUNDS,
    "num_round": _ROUNDS, "num_rounds": _ROUNDS, "num_boost_round": _ROUNDS,
    "n_estimators": _ROUNDS, "num_trees": _ROUNDS,
    "early_stopping_rounds": "pass it to hardwood.train(..., early_stopping_rounds=n) (or to "
                             "the estimator's constructor), with a set in valid_sets",
    "early_stopping_round": "pass early_stopping_rounds=n to hardwood.train (or to the "
                            "estimator's constructor), with a set in valid_sets",
    "pos_bagging_fraction": "hardwood has no per-class bagging (LightGBM's "
                            "pos_bagging_fraction)",
    # LightGBM's categorical method, which hardwood does not have (its categorical splits
    # are XGBoost's; difflib offered min_data_per_leaf for min_data_per_group)
    "cat_smooth": "hardwood's categorical splits are XGBoost's (max_cat_to_onehot, "
                  "max_cat_threshold); it does not have LightGBM's cat_smooth",
    "cat_l2": "hardwood's categorical splits are XGBoost's (max_cat_to_onehot, "
              "max_cat_threshold); it does not have LightGBM's cat_l2",
    "min_data_per_group": "hardwood's categorical splits are XGBoost's (max_cat_to_onehot, "
                          "max_cat_threshold); it does not have LightGBM's min_data_per_group",
    "path_smooth": "hardwood has no path smoothing (LightGBM's path_smooth)",
    # (difflib offered lambdarank_norm, which also drops the per-pair 0.01 + |ds| division,
    # XGBoost's separate lambdarank_score_normalization: another model than XGBoost's)
    "lambdarank_normalization": "hardwood's rank:ndcg is LightGBM's LambdaMART; its "
                                "lambdarank_norm=False drops both LightGBM's query "
                                "normalisation and the per-pair 0.01 + |ds| division, so no "
                                "setting gives XGBoost's lambdarank_normalization alone (see "
                                "README, ranking)",
    "lambdarank_score_normalization": "hardwood's rank:ndcg is LightGBM's LambdaMART; see "
                                      "lambdarank_norm (README, ranking)",
    "boost_from_average": "hardwood starts from the labels' average (or the objective's "
                          "own start), LightGBM's boost_from_average=True; give base_score= "
                          "for another start, or base_margin= on the Dataset for each row's",
    # (difflib offered min_data_in_leaf, a limit on the leaves, not on the bins)
    "min_data_in_bin": "hardwood's bins hold every distinct value up to max_bin (LightGBM's "
                       "min_data_in_bin=1); LightGBM's default 3 merges values of fewer rows, "
                       "so its trees can differ where values are rare",
    "extra_trees": "hardwood's boosted trees take the best threshold (LightGBM's extra_trees "
                   "draws one at random); hardwood.RandomForestRegressor/Classifier grow "
                   "forests",
    "linear_tree": "hardwood's leaves are constants (LightGBM's linear_tree is not "
                   "implemented)",
    "num_parallel_tree": "hardwood grows one tree per output a round; for random forests use "
                         "hardwood.RandomForestRegressor / RandomForestClassifier",
    "group_categories": "it is the Dataset's: hardwood.Dataset(X, y, group_categories=True)",
}


def _check_quantile_alpha(p):
    """Quantiles in (0, 1): a number, or XGBoost's list (one output per quantile);
    LightGBM's 0.9 under its name 'quantile'."""
    a = p["quantile_alpha"]
    if a is None:
        objective = p["objective"]
        if isinstance(objective, str) and objective.lower() == "quantile":
            p["quantile_alpha"] = 0.9  # LightGBM's default alpha
        return
    values = list(a) if isinstance(a, (list, tuple)) else [a]
    if not values or not all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                             and 0.0 < v < 1.0 for v in values):
        raise ValueError(f"quantile_alpha must be a number in (0, 1), or a list of them (one "
                         f"output each), got {a!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"quantile_alpha={a!r} names a quantile twice")
    p["quantile_alpha"] = float(values[0]) if len(values) == 1 else [float(v) for v in values]


def _xgboost_poisson_step(p, params, seen):
    """XGBoost's count:poisson (not LightGBM's ``poisson``) takes ``max_delta_step`` for its
    hessian's offset and for its trees' cap on a leaf's weight, both 0.7 where not given
    (XGBoost's learner sets the trees' so). Without the cap, a weighted Poisson model was
    0.096 (relative) off XGBoost's predictions after 10 rounds."""
    objective = params.get("objective")
    if not (isinstance(objective, str) and objective == "count:poisson"):
        return
    if "max_delta_step" not in seen:
        p["max_delta_step"] = 0.7
    elif "poisson_max_delta_step" not in seen:
        p["poisson_max_delta_step"] = p["max_delta_step"]


LIGHTGBM_EVAL_AT = [1, 2, 3, 4, 5]


def _ranking_cutoffs(p, params):
    """The metrics with LightGBM's ``eval_at`` applied: its 'ndcg' and 'map' are scored at
    each cutoff (by default 1-5 under its objective name 'lambdarank', whose default metric is
    'ndcg'), where XGBoost's bare 'ndcg' scores the whole list. Under 'lambdarank', 'ndcg'
    reported one full-list NDCG (0.989 where LightGBM reports ndcg@5 0.978) and early
    stopping followed it; it follows the last cutoff's now."""
    at = p["eval_at"]
    objective = params.get("objective")
    lightgbm = isinstance(objective, str) and objective.lower() == "lambdarank"
    if at is None and not lightgbm:
        return p["eval_metric"]
    if at is not None:
        at = [at] if isinstance(at, numbers.Integral) else at
        if (not isinstance(at, (list, tuple)) or not at
                or not all(isinstance(k, numbers.Integral) and not isinstance(k, bool) and k >= 1
                           for k in at)):
            raise ValueError(f"eval_at must be positive cutoffs (an integer or a list of "
                             f"them), got {p['eval_at']!r}")
        if objective_class(p["objective"]).task != "ranking":
            raise ValueError(f"eval_at gives the cutoffs of the ranking metrics 'ndcg' and "
                             f"'map', which {p['objective']!r} does not score")
    metrics = p["eval_metric"] if p["eval_metric"] is not None else ["ndcg"]
    cut = [int(k) for k in (at or LIGHTGBM_EVAL_AT)]
    out = []
    for m in metrics:
        out += [f"{m}@{k}" for k in cut] if m in ("ndcg", "map") else [m]
    if at is not None and out == metrics:
        raise ValueError(f"eval_at gives the cutoffs of 'ndcg' and 'map', but eval_metric is "
                         f"{metrics!r}")
    return out


def _check_monotone(mc):
    """``monotone_constraints`` in one of its forms, checked: None, a list of -1/0/+1, or a
    dict {feature name: -1/0/+1}. XGBoost's string form "(1,0,-1)" becomes a list."""
    if mc is None:
        return None
    if isinstance(mc, str):
        text = mc.strip()
        if text[:1] in "([" and text[-1:] in ")]":
            text = text[1:-1]
        try:  # (an empty slot, "(1,,-1)", is an error: dropped, it moved the later ones)
            mc = [int(x) for x in text.split(",")] if text.strip() else []
        except ValueError:
            raise ValueError(f"monotone_constraints must list -1, 0 or 1 per feature, as "
                             f"\"(1,0,-1)\", got {mc!r}") from None
    if hasattr(mc, "tolist") and not isinstance(mc, dict):  # numpy arrays, pandas Series
        mc = mc.tolist()
    items = list(mc.items()) if isinstance(mc, dict) else None
    values = [v for _, v in items] if items is not None else mc
    if items is not None and not all(isinstance(k, str) for k, _ in items):
        raise TypeError("monotone_constraints as a dict maps feature names to -1, 0 or 1; "
                        f"got keys {[k for k, _ in items if not isinstance(k, str)][:3]!r}")
    if not isinstance(values, (list, tuple)) or not all(  # (floats too: np.sign's 1.0)
            isinstance(v, numbers.Real) and not isinstance(v, bool) and v in (-1, 0, 1)
            for v in values):
        raise ValueError("monotone_constraints must give -1 (decreasing), 0 (none) or 1 "
                         f"(increasing) per feature, got {mc!r}")
    if not values:  # "()", [] or {}: no constraint, as XGBoost and LightGBM read them
        return None
    return {k: int(v) for k, v in items} if items is not None else [int(v) for v in values]


def resolve_monotone(mc, names, is_categorical):
    """The checked ``monotone_constraints`` (``_check_monotone``) as one int per training
    feature, or None when none is constrained. A list needs one entry per feature (XGBoost
    fills a short one with zeros, which hid a feature left out); a dict names features."""
    if mc is None:
        return None
    d = len(names)
    if isinstance(mc, dict):
        unknown = [k for k in mc if k not in names]
        if unknown:
            raise ValueError(f"monotone_constraints names features the data does not have: "
                             f"{unknown[:5]!r}")
        out = [mc.get(name, 0) for name in names]
    else:
        if len(mc) != d:
            raise ValueError(f"monotone_constraints has {len(mc)} entries, but the data has "
                             f"{d} features: give one per feature (0: none), or a dict "
                             "{feature name: -1 or 1}")
        out = list(mc)
    cat = [names[j] for j in range(d) if out[j] != 0 and is_categorical[j]]
    if cat:
        raise ValueError(f"monotone_constraints on categorical features {cat[:5]!r}: a "
                         "category has no order to be monotone in")
    return out if any(out) else None


def _check_interactions(ic):
    """``interaction_constraints`` checked: None, or a list of feature sets, each a list of
    indices or names; XGBoost's string form "[[0,1],[2,3]]" is read as JSON."""
    if ic is None:
        return None
    if isinstance(ic, str):
        try:
            ic = json.loads(ic.replace("(", "[").replace(")", "]"))
        except ValueError:
            raise ValueError(f"interaction_constraints must be a list of feature lists, as "
                             f"\"[[0,1],[2,3]]\", got {ic!r}") from None
    if isinstance(ic, (list, tuple)):  # groups as numpy arrays: lists
        ic = [g.tolist() if hasattr(g, "tolist") and getattr(g, "ndim", 0) == 1 else g
              for g in ic]
    ok = isinstance(ic, (list, tuple)) and all(
        isinstance(group, (list, tuple, set, frozenset)) and all(
            isinstance(f, str) or (isinstance(f, numbers.Integral) and not isinstance(f, bool)
                                   and f >= 0) for f in group) for group in ic)
    if not ok:
        raise ValueError("interaction_constraints must be a list of feature lists (indices "
                         f"or names), as [[0, 1], [2, 3]], got {ic!r}")
    # empty sets constrain nothing, and no set at all is no constraint (LightGBM's reading;
    # under its rule an empty list allowed no feature, and the model was its base score)
    out = [[f if isinstance(f, str) else int(f) for f in group] for group in ic]
    out = [group for group in out if group]
    return out or None


def resolve_interactions(ic, names):
    """The checked ``interaction_constraints`` as feature index lists, or None. Names are
    looked up in ``names``; an index must be below their count."""
    if ic is None:
        return None
    d = len(names)
    where = {name: j for j, name in enumerate(names)}
    out = []
    for group in ic:
        idx = []
        for f in group:
            if isinstance(f, str):
                if f not in where:
                    raise ValueError(f"interaction_constraints names feature {f!r}, which the "
                                     "data does not have")
                f = where[f]
            elif f >= d:
                raise ValueError(f"interaction_constraints names feature {f}, but the data has "
                                 f"{d} features (indices 0-{d - 1})")
            idx.append(f)
        out.append(sorted(set(idx)))
    return out


def resolve_params(params) -> dict:
    """Defaults + user params (aliases mapped), validated. Raises on unknown names; an error
    about a value names the parameter as the user gave it (``min_data=2.5`` was reported as
    ``min_data_in_leaf``)."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    try:
        return _resolve(params)
    except (TypeError, ValueError) as e:
        for given in params:
            key = ALIASES.get(given)
            if key and f"parameter {key!r}" in str(e):
                raise type(e)(str(e).replace(f"parameter {key!r}",
                                             f"parameter {given!r} ({key})")) from None
        raise


def _lightgbm_growth(params):
    """Whether ``params`` bring LightGBM's growth and defaults: they name ``num_leaves``, or
    one of LightGBM's own objectives and no leaf limit or growth policy of XGBoost's (then
    LightGBM's 31 leaves). ``{"objective": "binary"}`` grew XGBoost's depth-6 trees at a
    learning rate of 0.3, 2.2 off LightGBM's margins after 10 rounds (``lambdarank``: 1.49)."""
    if "num_leaves" in params:
        return True
    obj = params.get("objective")
    return (isinstance(obj, str) and obj.lower() in LIGHTGBM_OBJECTIVES
            and not any(ALIASES.get(k, k) in ("max_leaves", "grow_policy") for k in params))


# LightGBM's other names of its leaf limit: each brings its growth, as num_leaves does
LIGHTGBM_LEAF_NAMES = ("num_leaf", "max_leaf", "max_leaf_nodes")
# XGBoost's sampling names that LightGBM takes as aliases of its own: under its objective
# names they mean LightGBM's (subsample bags only with bagging_freq; colsample_bytree rounds
# the feature count to nearest): {"objective": "regression", "subsample": 0.5} sampled every
# round, where LightGBM samples none, 0.55 apart
LIGHTGBM_SAMPLING_ALIASES = {"subsample": "bagging_fraction",
                             "colsample_bytree": "feature_fraction",
                             "colsample_bynode": "feature_fraction_bynode"}


def _lightgbm_leaf_names(params):
    """``params`` with LightGBM's other names of ``num_leaves`` as ``num_leaves``."""
    given = [k for k in LIGHTGBM_LEAF_NAMES + ("num_leaves",) if k in params]
    if not given or given == ["num_leaves"]:
        return params
    if len(given) > 1:
        raise ValueError(f"parameters {given[0]!r} and {given[1]!r} are the same setting "
                         "(LightGBM's num_leaves); give one")
    params = dict(params)
    params["num_leaves"] = params.pop(given[0])
    return params


def _lightgbm_sampling_names(params):
    """Under LightGBM's objective names with LightGBM's growth (not under ``num_leaves``
    alone, whose dicts kept XGBoost's meaning before; not under XGBoost's growth, the
    estimators' among them: GBDTRegressor(objective='regression', subsample=0.3) could not
    sample at all, its bagging_freq refused), XGBoost's sampling names as LightGBM reads
    them."""
    obj = params.get("objective")
    if not (isinstance(obj, str) and obj.lower() in LIGHTGBM_OBJECTIVES):
        return params
    moved = {k: v for k, v in LIGHTGBM_SAMPLING_ALIASES.items() if k in params}
    if "subsample_freq" in params:  # (LightGBM's estimators' names: _lightgbm_bagging's)
        moved.pop("subsample", None)
    if not moved:
        return params
    for k, v in moved.items():
        if v in params:
            raise ValueError(f"parameters {k!r} and {v!r} are the same setting under "
                             "LightGBM's objective names; give one")
    fraction = params.get("subsample")
    if ("subsample" in moved and "bagging_freq" not in params
            and isinstance(fraction, numbers.Real) and fraction < 1.0):
        warnings.warn(f"subsample is LightGBM's bagging_fraction under its objective name "
                      f"{obj!r}: no bagging without bagging_freq, as in LightGBM; give "
                      "bagging_freq=1 for a new sample every round", UserWarning, stacklevel=6)
        params = {k: v for k, v in params.items() if k != "subsample"}
        moved.pop("subsample")
    return {moved.get(k, k): v for k, v in params.items()}


def _resolve(params):
    params = _lightgbm_leaf_names(params)
    if _lightgbm_growth(params):  # (XGBoost's growth, the estimators': XGBoost's meaning)
        params = _lightgbm_sampling_names(params)
    params = _lightgbm_bagging(_lightgbm_alpha(params))
    if "num_leaves" not in params and _lightgbm_growth(params):
        params = {**params, "num_leaves": 31}  # (LightGBM's default)
    p = dict(DEFAULTS)
    if "num_leaves" in params and "grow_policy" not in params:
        # LightGBM's name of the leaf limit brings LightGBM's growth, leaf-wise without a depth
        # limit: it trained depthwise trees of depth 6 (0.45 off LightGBM's predictions)
        p["grow_policy"] = "lossguide"
    seen = {}
    for k, v in params.items():
        key = ALIASES.get(k, k)
        if k in ALIASES and ALIASES[k] is None:
            _check_ignored(k, v)
            continue
        if key not in DEFAULTS and k in FOREIGN_HINTS:
            raise ValueError(f"unknown parameter {k!r}: {FOREIGN_HINTS[k]}")
        if key not in DEFAULTS:
            close = difflib.get_close_matches(k, list(DEFAULTS) + list(ALIASES), n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise ValueError(f"unknown parameter {k!r}{hint}")
        if key in seen and seen[key] != k:
            raise ValueError(f"parameters {seen[key]!r} and {k!r} are the same setting; give one")
        seen[key] = k
        if getattr(v, "ndim", 0) >= 1 and hasattr(v, "tolist"):
            # numpy arrays (label_gain, eval_at, constraints) as lists: compared with ``!=``
            # they raised numpy's "truth value of an array is ambiguous", and a saved model
            # dropped them from its params
            v = v.tolist()
        p[key] = v
        if k in ("feature_fraction", "feature_fraction_bynode"):
            p["colsample_rounding"] = "nearest"
    if "num_leaves" in params:
        # LightGBM's growth takes LightGBM's defaults where they differ from XGBoost's:
        # {"objective": "binary", "num_leaves": 15} trained with reg_lambda=1 and
        # min_child_weight=1 (0.178 off LightGBM's probabilities after 30 rounds)
        for key, value in LIGHTGBM_DEFAULTS.items():
            if key not in seen:
                p[key] = value
    _num(p, "learning_rate", 0, lo_open=True)
    _num(p, "reg_lambda", 0)
    _num(p, "reg_alpha", 0)
    _num(p, "gamma", 0)
    _num(p, "min_child_weight", 0)
    _num(p, "subsample", 0, 1, lo_open=True)
    _check_sampling(p)
    _num(p, "colsample_bytree", 0, 1, lo_open=True)
    _num(p, "colsample_bynode", 0, 1, lo_open=True)
    if p["colsample_rounding"] not in ("down", "nearest"):
        raise ValueError("colsample_rounding must be 'down' or 'nearest', got "
                         f"{p['colsample_rounding']!r}")
    _num(p, "max_cat_to_onehot", 1, integer=True)
    _num(p, "max_cat_threshold", 1, integer=True)
    _num(p, "huber_slope", 0, lo_open=True)
    _num(p, "max_delta_step", 0)
    _check_quantile_alpha(p)
    _num(p, "poisson_max_delta_step", 0)
    _xgboost_poisson_step(p, params, seen)
    _num(p, "tweedie_variance_power", 1, 2)
    if p["tweedie_variance_power"] == 2:  # (the gamma loss: XGBoost and LightGBM refuse it)
        raise ValueError("parameter 'tweedie_variance_power' must be in [1, 2), got 2.0; "
                         "a power of 2 is the gamma loss, objective 'reg:gamma'")
    _num(p, "scale_pos_weight", 0, lo_open=True)
    if not isinstance(p["is_unbalance"], bool):
        raise TypeError(f"parameter 'is_unbalance' must be True or False, got "
                        f"{p['is_unbalance']!r}")
    if p["is_unbalance"] and p["scale_pos_weight"] != 1.0:
        raise ValueError("give is_unbalance or scale_pos_weight, not both (as LightGBM)")
    cs = p["class_scale"]
    if cs is not None and not (isinstance(cs, (list, tuple)) and len(cs) == 2 and all(
            isinstance(v, numbers.Real) and math.isfinite(v) and v > 0 for v in cs)):
        raise ValueError(f"class_scale must be two positive numbers, got {cs!r}")
    _num(p, "sigmoid", 0, lo_open=True)
    _num(p, "lambdarank_truncation_level", 1, integer=True)
    if not isinstance(p["lambdarank_norm"], bool):
        raise TypeError(f"parameter 'lambdarank_norm' must be True or False, got "
                        f"{p['lambdarank_norm']!r}")
    _num(p, "max_leaves", 0, integer=True)
    _num(p, "min_data_in_leaf", 0, integer=True)
    if p["drop_unsplittable"] is None:
        p["drop_unsplittable"] = "num_leaves" in params
    if p["missing_rule"] is None:
        p["missing_rule"] = "lightgbm" if "num_leaves" in params else "xgboost"
    if p["missing_rule"] not in MISSING_RULES:
        raise ValueError(f"missing_rule must be one of {MISSING_RULES}, got "
                         f"{p['missing_rule']!r}")
    if not isinstance(p["drop_unsplittable"], bool):
        raise TypeError(f"parameter 'drop_unsplittable' must be True or False, got "
                        f"{p['drop_unsplittable']!r}")
    if p["grow_policy"] not in GROW_POLICIES:
        raise ValueError(f"grow_policy must be one of {GROW_POLICIES}, got {p['grow_policy']!r}")
    if p["max_depth"] is None:
        # XGBoost's 6 whatever the growth (lossguide trees of depth 18 were 0.56 off XGBoost's);
        # LightGBM's num_leaves brings LightGBM's max_depth=-1, no limit
        lightgbm = "num_leaves" in params and p["grow_policy"] == "lossguide"
        p["max_depth"] = 0 if lightgbm else 6
    if p["max_depth"] == -1:  # LightGBM's "no limit"
        p["max_depth"] = 0
    _num(p, "max_depth", 0, integer=True)
    if p["grow_policy"] == "depthwise" and p["max_depth"] == 0 and p["max_leaves"] == 0:
        raise ValueError("grow_policy='depthwise' needs max_depth > 0 or max_leaves > 0")
    if p["max_leaves"] == 1:
        raise ValueError("max_leaves must be 0 (no limit) or >= 2")
    if p["max_leaves"] == 0 and any(ALIASES.get(k) == "max_leaves" and k != "max_leaves"
                                    for k in params):
        # LightGBM refuses num_leaves=0; taken as XGBoost's max_leaves=0 with LightGBM's
        # depth, it grew trees without any limit
        raise ValueError("num_leaves must be >= 2 (LightGBM's rule); for no leaf limit, "
                         "give XGBoost's max_leaves=0 with a max_depth")
    if p["max_bin"] is not None:
        _num(p, "max_bin", 3, integer=True)  # (binning.check_max_bin: 2 leaves no split)
    if p["n_jobs"] is not None:
        _num(p, "n_jobs", integer=True)
        if p["n_jobs"] == 0:
            raise ValueError("n_jobs must be a positive number of threads, or -1/None for all cores")
    if p["random_state"] is None:
        p["random_state"] = 0
    _num(p, "random_state", 0, integer=True)
    if p["num_class"] is not None:
        _num(p, "num_class", 2, MAX_CLASSES, integer=True)
    if p["base_score"] is not None:  # a number (a probability for a binary objective)
        _num(p, "base_score")
    if p["device"] not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {p['device']!r}")
    if p["backend"] is None:
        p["backend"] = "cpu"
    if p["backend"] not in ("cpu", "reference"):
        raise ValueError(f"backend must be 'cpu' or 'reference', got {p['backend']!r}")
    if not isinstance(p["margins_add_to_base"], bool):
        raise TypeError("parameter 'margins_add_to_base' must be True or False")
    if p["pages"] is not None and not isinstance(p["pages"], (list, tuple, dict)):
        _num(p, "pages", 1, integer=True)
    if p["eval_metric"] == "":  # LightGBM's: the objective's default metric
        p["eval_metric"] = None
    if isinstance(p["eval_metric"], str) and p["eval_metric"].lower() in NO_METRIC:
        p["eval_metric"] = [NO_METRIC[0]]  # (LightGBM's: only the custom metrics, if any)
    if isinstance(p["eval_metric"], str):
        p["eval_metric"] = [p["eval_metric"]]
    elif p["eval_metric"] is not None:
        m = p["eval_metric"]
        if (not isinstance(m, (list, tuple))
                or not all(isinstance(name, str) for name in m)):
            raise TypeError(f"eval_metric must be a metric name or a list of them, got {m!r}")
        p["eval_metric"] = list(m)
    p["monotone_constraints"] = _check_monotone(p["monotone_constraints"])
    p["interaction_constraints"] = _check_interactions(p["interaction_constraints"])
    p["eval_metric"] = _ranking_cutoffs(p, params)
    p["eval_at"] = None  # applied: resolving the result again (a model's params) keeps it
    # LightGBM's verbose=-1 (and XGBoost's verbosity=0) mean silence: a negative level printed
    # the training profile
    v = p["verbose"]
    p["verbose"] = bool(v) and not (isinstance(v, numbers.Real) and v < 0)
    return p
