"""scikit-learn trees and ensembles → hardwood.

* ``DecisionTree*``, ``ExtraTree*``, ``RandomForest*``, ``ExtraTrees*`` and
  ``GradientBoosting*`` compare ``float32(x) <= threshold`` (they cast X to float32): the
  threshold becomes the float64 boundary of that rule (exact for float32 and float64 input).
  Classifiers' ``value`` output is ``predict_proba`` (objective ``multi:proba``: the raw
  output, one column per class, is the probability itself).
* ``HistGradientBoosting*`` compare in float64; categorical features (ordinal-encoded by the
  estimator) keep the estimator's category lists, so pandas input is coded the same way.

Cover (TreeSHAP's weight): the trees' ``weighted_n_node_samples``; ``HistGradientBoosting*``
nodes keep only a sample count, which becomes the cover. A split's gain: its weighted impurity
decrease (scikit-learn's importance measure), or the ``HistGradientBoosting*`` node's gain.
``total_gain`` sums them over the trees, where scikit-learn's ``feature_importances_``
normalises each tree's first.
"""
from __future__ import annotations

import numpy as np

from ._build import TreeBuilder, fail, feature_info, float32_boundary, float32_floor, make_model

LIB = "scikit-learn"


def _names(est, n):
    names = getattr(est, "feature_names_in_", None)
    return [str(s) for s in names] if names is not None else [f"f{i}" for i in range(n)]


def _numeric_info(est, n):
    return feature_info(_names(est, n), np.zeros(n, bool), [None] * n)


def _tree_arrays(tree, n_features, what):
    t = tree.tree_ if hasattr(tree, "tree_") else tree
    if t.n_outputs != 1:
        fail(LIB, f"{what}: multi-output trees (n_outputs={t.n_outputs}) are not supported")
    left, right = t.children_left, t.children_right
    n = t.node_count
    feat = t.feature
    if left.shape != (n,) or right.shape != (n,) or feat.shape != (n,):
        fail(LIB, f"{what}: the tree arrays differ in length")
    internal = left >= 0
    if np.any(internal & ((left >= n) | (right < 0) | (right >= n))):
        fail(LIB, f"{what}: a split names a child outside [0, {n})")
    if np.any(internal & ((feat < 0) | (feat >= n_features))):
        fail(LIB, f"{what}: a split names a feature outside [0, {n_features})")
    mgl = getattr(t, "missing_go_to_left", None)
    if mgl is None:
        mgl = np.zeros(n, dtype=np.uint8)
    return t, left, right, feat, internal, np.asarray(mgl).astype(bool)


def _convert_float32_tree(tree, leaf_values, n_features, what):
    """A scikit-learn ``Tree`` with one value per leaf (``leaf_values``, indexed by node)."""
    t, left, right, feat, internal, mgl = _tree_arrays(tree, n_features, what)
    n = t.node_count
    b = TreeBuilder(LIB)
    b.reserve(n)
    thr = t.threshold
    cover = t.weighted_n_node_samples
    count = t.n_node_samples
    # a split's gain: its weighted impurity decrease, scikit-learn's importance measure (the
    # gains were 0: gain importances all zero, and no report could be drawn)
    weighted = cover * t.impurity
    gain = np.zeros(n)
    gain[internal] = (weighted[internal] - weighted[left[internal]]
                      - weighted[right[internal]])
    for i in range(n):
        if not internal[i]:
            v = float(leaf_values[i])
            if not np.isfinite(v):
                fail(LIB, f"{what}: leaf {i} has a non-finite value")
            b.set_leaf(i, v, cover=float(cover[i]), count=int(count[i]))
        else:
            if np.isnan(thr[i]):
                fail(LIB, f"{what}: node {i} has a NaN threshold")
            b.set_split(i, int(feat[i]), float32_boundary(float32_floor(thr[i])), bool(mgl[i]),
                        int(left[i]), int(right[i]), gain=float(gain[i]), cover=float(cover[i]),
                        count=int(count[i]))
    return b.finish(0, np.zeros(n_features, dtype=np.int64))


def _leaf_table(tree):
    return tree.tree_.value[:, 0, :]


def _decision_tree(est, kind):
    n = est.n_features_in_
    if kind == "classifier":
        return _forest([est], est, "classifier", average=False)
    tree = _convert_float32_tree(est, _leaf_table(est)[:, 0], n, "tree")
    return make_model(LIB, [tree], [0], [0.0], "reg:squarederror", 1, _numeric_info(est, n),
                      {"imported_from": "sklearn", "estimator": type(est).__name__})


def _forest(estimators, est, kind, average=True):
    n = est.n_features_in_
    n_est = len(estimators)
    scale = 1.0 / n_est if average else 1.0
    trees, groups = [], []
    if kind == "classifier":
        n_classes = getattr(est, "n_classes_", None)
        if not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
            fail(LIB, "multi-output classifiers (or a single class) are not supported")
        for k, e in enumerate(estimators):
            v = _leaf_table(e)
            s = v.sum(axis=1)
            s[s == 0] = 1.0
            proba = v / s[:, None]
            for c in range(n_classes):
                trees.append(_convert_float32_tree(e, proba[:, c] * scale, n, f"tree {k}"))
                groups.append(c)
        return make_model(LIB, trees, groups, np.zeros(n_classes), "multi:proba", n_classes,
                          _numeric_info(est, n), _forest_params(est, n_est, average))
    for k, e in enumerate(estimators):
        trees.append(_convert_float32_tree(e, _leaf_table(e)[:, 0] * scale, n, f"tree {k}"))
        groups.append(0)
    return make_model(LIB, trees, groups, [0.0], "reg:squarederror", 1, _numeric_info(est, n),
                      _forest_params(est, n_est, average))


def _forest_params(est, n_est, average):
    """The model's params; an averaged forest's leaves are shares of its mean (1 / n_est),
    which ``Model.tree_range`` reads to refuse a part of the trees."""
    p = {"imported_from": "sklearn", "estimator": type(est).__name__}
    if average:
        p["sklearn_average_output"] = n_est
    return p


def _gradient_boosting(est, kind):
    n = est.n_features_in_
    init = est.init_
    if not (init == "zero" or type(init).__name__ in ("DummyRegressor", "DummyClassifier")):
        fail(LIB, f"GradientBoosting with a custom init estimator ({type(init).__name__}) "
                  "is not supported: its prediction is not a constant")
    loss = est.loss
    stages = est.estimators_
    K = stages.shape[1]
    if kind == "classifier":
        if loss != "log_loss":
            fail(LIB, f"GradientBoostingClassifier loss {loss!r} is not supported (only "
                      "'log_loss')")
        objective = "binary:logistic" if K == 1 else "multi:softprob"
    else:
        objective = {"squared_error": "reg:squarederror", "absolute_error": "reg:absoluteerror",
                     "huber": "reg:pseudohubererror", "quantile": "reg:quantileerror"}.get(loss)
        if objective is None:
            fail(LIB, f"GradientBoostingRegressor loss {loss!r} is not supported")
    base = np.asarray(est._raw_predict_init(np.zeros((1, n), dtype=np.float32)),
                      dtype=np.float64).reshape(-1)
    lr = est.learning_rate
    trees, groups = [], []
    for s in range(stages.shape[0]):
        for k in range(K):
            e = stages[s, k]
            trees.append(_convert_float32_tree(e, lr * _leaf_table(e)[:, 0], n, f"stage {s}"))
            groups.append(k)
    return make_model(LIB, trees, groups, base, objective, K, _numeric_info(est, n),
                      {"imported_from": "sklearn", "estimator": type(est).__name__})


_HGB_LOSS = {"HalfSquaredError": "reg:squarederror", "AbsoluteError": "reg:absoluteerror",
             "PinballLoss": "reg:quantileerror", "HuberLoss": "reg:pseudohubererror",
             "HalfPoissonLoss": "count:poisson", "HalfGammaLoss": "reg:gamma",
             "HalfBinomialLoss": "binary:logistic", "HalfMultinomialLoss": "multi:softprob"}


def _hist_gradient_boosting(est, kind):
    n = est.n_features_in_
    loss = type(est._loss).__name__
    objective = _HGB_LOSS.get(loss)
    if objective is None:
        fail(LIB, f"HistGradientBoosting loss {loss} is not supported")
    K = est.n_trees_per_iteration_
    if (objective == "multi:softprob") != (K > 1):
        fail(LIB, f"loss {loss} does not fit {K} trees per iteration")
    base = np.asarray(est._baseline_prediction, dtype=np.float64).reshape(-1)
    # feature index in the estimator's preprocessed matrix -> original column
    is_cat = np.zeros(n, dtype=bool)
    categories = [None] * n
    pre = getattr(est, "_preprocessor", None)
    if pre is not None:
        mask = np.asarray(est.is_categorical_, dtype=bool)
        perm = np.concatenate([np.flatnonzero(mask), np.flatnonzero(~mask)])
        enc = pre.named_transformers_["encoder"]
        for j, cats in zip(np.flatnonzero(mask), enc.categories_):
            cats = list(cats)
            if cats and isinstance(cats[-1], float) and np.isnan(cats[-1]):
                cats = cats[:-1]
            is_cat[j] = True
            categories[j] = [c.item() if isinstance(c, np.generic) else c for c in cats]
    else:
        perm = np.arange(n)
    info = feature_info(_names(est, n), is_cat, categories)
    n_cats = info.n_categories
    trees, groups = [], []
    for it, preds in enumerate(est._predictors):
        for k, pr in enumerate(preds):
            trees.append(_convert_hgb_tree(pr, perm, n, n_cats, f"iteration {it}"))
            groups.append(k)
    return make_model(LIB, trees, groups, base, objective, K, info,
                      {"imported_from": "sklearn", "estimator": type(est).__name__})


def _convert_hgb_tree(pred, perm, n_features, n_cats, what):
    nodes = pred.nodes
    m = nodes.shape[0]
    bits = np.asarray(pred.raw_left_cat_bitsets)
    b = TreeBuilder(LIB)
    b.reserve(m)
    for i in range(m):
        nd = nodes[i]
        if nd["is_leaf"]:
            b.set_leaf(i, float(nd["value"]), count=int(nd["count"]), cover=float(nd["count"]))
            continue
        p = int(nd["feature_idx"])
        if not 0 <= p < n_features:
            fail(LIB, f"{what}: node {i} splits on feature {p}, outside [0, {n_features})")
        f = int(perm[p])
        lc, rc = int(nd["left"]), int(nd["right"])
        mgl = bool(nd["missing_go_to_left"])
        if nd["is_categorical"]:
            bi = int(nd["bitset_idx"])
            if not 0 <= bi < bits.shape[0]:
                fail(LIB, f"{what}: node {i} names a bitset out of range")
            kc = int(n_cats[f])
            codes = np.arange(min(kc, bits.shape[1] * 32))
            mask = np.zeros(kc, dtype=bool)
            mask[codes] = (bits[bi, codes >> 5] >> (codes & 31).astype(np.uint32)) & 1 == 1
            b.set_split(i, f, 0.0, mgl, lc, rc, cat_left=mask, gain=float(nd["gain"]),
                        count=int(nd["count"]), cover=float(nd["count"]))
        else:
            thr = float(nd["num_threshold"])
            if np.isnan(thr):
                fail(LIB, f"{what}: node {i} has a NaN threshold")
            b.set_split(i, f, thr, mgl, lc, rc, gain=float(nd["gain"]), count=int(nd["count"]),
                        cover=float(nd["count"]))
    return b.finish(0, n_cats)


def import_sklearn(est):
    name = type(est).__name__
    if not hasattr(est, "n_features_in_"):
        fail(LIB, f"{name} is not fitted")
    if name in ("DecisionTreeRegressor", "ExtraTreeRegressor"):
        return _decision_tree(est, "regressor")
    if name in ("DecisionTreeClassifier", "ExtraTreeClassifier"):
        return _decision_tree(est, "classifier")
    if name in ("RandomForestRegressor", "ExtraTreesRegressor"):
        return _forest(est.estimators_, est, "regressor")
    if name in ("RandomForestClassifier", "ExtraTreesClassifier"):
        return _forest(est.estimators_, est, "classifier")
    if name == "GradientBoostingRegressor":
        return _gradient_boosting(est, "regressor")
    if name == "GradientBoostingClassifier":
        return _gradient_boosting(est, "classifier")
    if name == "HistGradientBoostingRegressor":
        return _hist_gradient_boosting(est, "regressor")
    if name == "HistGradientBoostingClassifier":
        return _hist_gradient_boosting(est, "classifier")
    fail(LIB, f"estimator {name} is not supported")
