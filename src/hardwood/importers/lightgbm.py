"""LightGBM models (Booster, the scikit-learn wrappers, the text model file) → hardwood.

LightGBM sends ``x <= threshold`` left in float64, as hardwood does. Missing values:

* missing type NaN: NaN follows the default direction;
* missing type None: NaN is read as 0.0, so it goes where 0.0 goes;
* missing type Zero: NaN and every x in [-1e-35, 1e-35] follow the default direction. When the
  plain rule would send that zero band elsewhere, the node becomes two hardwood nodes (a split
  at the band's edge, then the original split on each side), copying the subtree below.

Categorical splits hold the categories that go left as a bitset; NaN, negative and unknown
categories go right.

Random forests (``boosting='rf'``, marked by the bare ``average_output`` line of the model
text) predict the objective's transform of the *mean* of their iterations (per class).
hardwood predicts the transform of a sum of leaves, so every leaf value is scaled by
``1 / n_iter`` (``n_iter`` the number of iterations in the file, kept in
``params['lightgbm_average_output']``): ``predict(X)`` equals LightGBM's ``predict(X)`` to
rounding, and hardwood's raw margin is that mean. (LightGBM's ``raw_score=True`` on a forest
gives the plain *sum* of the trees, ``n_iter`` times hardwood's raw margin.) An
``iteration_range`` on such a model sums the chosen iterations with that same weight
``1 / n_iter``, whereas LightGBM's ``num_iteration=k`` on a forest divides by ``k``; to get
LightGBM's prediction for the first ``k`` iterations, import
``booster.model_to_string(num_iteration=k)`` instead.
"""
from __future__ import annotations

import json
import os

import numpy as np

from ._build import TreeBuilder, fail, feature_info, make_model

LIB = "LightGBM"
ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold (a float widened to double)

_OBJ = {
    "regression": "reg:squarederror", "regression_l2": "reg:squarederror",
    "l2": "reg:squarederror", "mean_squared_error": "reg:squarederror",
    "regression_l1": "reg:absoluteerror", "l1": "reg:absoluteerror",
    "huber": "reg:pseudohubererror", "fair": "reg:squarederror",
    "quantile": "reg:quantileerror", "mape": "reg:squarederror",
    "binary": "binary:logistic", "multiclass": "multi:softprob",
    "multiclassova": "multiclassova", "poisson": "count:poisson", "gamma": "reg:gamma",
    "tweedie": "reg:tweedie", "lambdarank": "rank:ndcg", "rank_xendcg": "rank:ndcg",
    "cross_entropy": "reg:logistic", "xentropy": "reg:logistic",
    "cross_entropy_lambda": "cross_entropy_lambda", "xentlambda": "cross_entropy_lambda",
}


def model_text(obj) -> str:
    if hasattr(obj, "booster_"):
        obj = obj.booster_
    if type(obj).__name__ == "Booster" and hasattr(obj, "model_to_string"):
        return obj.model_to_string(num_iteration=-1)
    if isinstance(obj, (bytes, bytearray)):
        obj = bytes(obj).decode("utf-8")
    if isinstance(obj, str) and (obj.startswith("tree\n") or "\nTree=" in obj):
        return obj
    if isinstance(obj, (str, os.PathLike)):
        with open(obj, "r", encoding="utf-8") as fh:
            return fh.read()
    fail(LIB, f"cannot read a model from a {type(obj).__name__}")


def _parse(text):
    """(header dict, [tree dicts], pandas_categorical or None)."""
    lines = text.splitlines()
    header, trees = {}, []
    cur = header
    pandas_cat = None
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if line.startswith("Tree="):
            cur = {"Tree": line[5:]}
            trees.append(cur)
            continue
        if line == "end of trees":
            cur = None
            continue
        if line.startswith("pandas_categorical:"):
            try:
                pandas_cat = json.loads(line[len("pandas_categorical:"):])
            except json.JSONDecodeError:
                fail(LIB, "the pandas_categorical line is not valid JSON")
            continue
        if cur is None or not line:
            continue
        if "=" not in line:
            if cur is header:  # a bare flag such as ``average_output`` (random forests)
                header[line] = ""
            continue
        k, v = line.split("=", 1)
        cur[k] = v
    return header, trees, pandas_cat


def _arr(t, key, dtype, n, ti):
    if n == 0:
        return np.zeros(0, dtype=dtype)
    if key not in t:
        fail(LIB, f"tree {ti} lacks {key}")
    try:
        a = np.array(t[key].split(), dtype=np.float64 if dtype is float else np.int64)
    except ValueError:
        fail(LIB, f"tree {ti}: {key} holds something that is not a number")
    if a.shape != (n,):
        fail(LIB, f"tree {ti}: {key} has {a.size} values, expected {n}")
    return a


def import_lightgbm(obj):
    text = model_text(obj)
    header, trees_d, pandas_cat = _parse(text)
    if not trees_d:
        fail(LIB, "the model has no trees (or is not a LightGBM text model)")
    try:
        K = int(header.get("num_tree_per_iteration", header.get("num_class", "1")))
        n_features = int(header["max_feature_idx"]) + 1
    except (KeyError, ValueError):
        fail(LIB, "the header lacks num_tree_per_iteration / max_feature_idx")
    if K < 1 or n_features < 1:
        fail(LIB, "num_tree_per_iteration and max_feature_idx must be positive")
    obj_line = header.get("objective", "regression").split()
    obj_name = obj_line[0] if obj_line else "regression"
    opts = dict(o.split(":", 1) for o in obj_line[1:] if ":" in o)
    if "sqrt" in obj_line[1:]:
        fail(LIB, "objective option 'sqrt' (reg_sqrt) is not supported")
    if obj_name not in _OBJ:
        fail(LIB, f"objective {obj_name!r} is not supported")
    if obj_name in ("binary", "multiclassova") and float(opts.get("sigmoid", "1")) != 1.0:
        fail(LIB, f"objective {obj_name} with sigmoid={opts['sigmoid']} is not supported "
                  "(only sigmoid:1)")
    objective = _OBJ[obj_name]
    if (objective in ("multi:softprob", "multiclassova")) != (K > 1):
        fail(LIB, f"objective {obj_name!r} does not fit {K} trees per iteration")
    names = header.get("feature_names", "").split() or [f"Column_{j}" for j in range(n_features)]
    infos = header.get("feature_infos", "").split()
    if len(names) != n_features or (infos and len(infos) != n_features):
        fail(LIB, "feature_names/feature_infos do not match max_feature_idx")
    is_cat = np.zeros(n_features, dtype=bool)
    cat_values = [None] * n_features
    for j, s in enumerate(infos):
        if s != "none" and not s.startswith("["):
            is_cat[j] = True
            try:
                cat_values[j] = [int(v) for v in s.split(":")]
            except ValueError:
                fail(LIB, f"feature_infos[{j}] is not a list of categories")
    # categories: pandas_categorical (DataFrame input) or the integer codes themselves
    max_code = np.zeros(n_features, dtype=np.int64)
    for j in np.flatnonzero(is_cat):
        if cat_values[j]:
            max_code[j] = max(max(cat_values[j]) + 1, 0)
    parsed = []
    for ti, t in enumerate(trees_d):
        if t.get("is_linear", "0").strip() == "1":
            fail(LIB, "linear trees (linear_tree=True) are not supported: their leaves hold "
                      "linear models, which hardwood's constant leaves cannot represent")
        try:
            n_leaves = int(t["num_leaves"])
            n_cat = int(t.get("num_cat", "0"))
        except (KeyError, ValueError):
            fail(LIB, f"tree {ti} lacks num_leaves")
        if n_leaves < 1 or n_cat < 0:
            fail(LIB, f"tree {ti} has num_leaves={n_leaves}")
        m = n_leaves - 1
        p = {
            "leaf_value": _arr(t, "leaf_value", float, n_leaves, ti),
            "split_feature": _arr(t, "split_feature", int, m, ti),
            "threshold": _arr(t, "threshold", float, m, ti),
            "decision_type": _arr(t, "decision_type", int, m, ti),
            "left_child": _arr(t, "left_child", int, m, ti),
            "right_child": _arr(t, "right_child", int, m, ti),
            "split_gain": _arr(t, "split_gain", float, m, ti) if "split_gain" in t else np.zeros(m),
            "internal_count": (_arr(t, "internal_count", int, m, ti) if "internal_count" in t
                               else np.zeros(m, np.int64)),
            "leaf_count": (_arr(t, "leaf_count", int, n_leaves, ti) if "leaf_count" in t
                           else np.zeros(n_leaves, np.int64)),
            "n_cat": n_cat,
        }
        if n_cat:
            p["cat_boundaries"] = _arr(t, "cat_boundaries", int, n_cat + 1, ti)
            nb = int(p["cat_boundaries"][-1])
            p["cat_threshold"] = _arr(t, "cat_threshold", int, nb, ti)
            cb = p["cat_boundaries"]
            if cb[0] != 0 or np.any(np.diff(cb) < 0):
                fail(LIB, f"tree {ti}: cat_boundaries is not increasing from 0")
            if np.any(p["cat_threshold"] < 0) or np.any(p["cat_threshold"] >= 2 ** 32):
                fail(LIB, f"tree {ti}: cat_threshold holds a value outside uint32")
            for k in range(m):
                if p["decision_type"][k] & 1:
                    f = int(p["split_feature"][k])
                    ci = p["threshold"][k]
                    if not (0 <= f < n_features) or not (0 <= ci < n_cat) or ci != int(ci):
                        fail(LIB, f"tree {ti}: categorical node {k} is out of range")
                    words = p["cat_threshold"][cb[int(ci)]:cb[int(ci) + 1]]
                    top = 0
                    for w_i, w in enumerate(words):
                        if w:
                            top = w_i * 32 + int(w).bit_length()
                    max_code[f] = max(max_code[f], top)
        parsed.append(p)
    if pandas_cat is not None and len(pandas_cat) != int(is_cat.sum()):
        fail(LIB, f"pandas_categorical lists {len(pandas_cat)} columns but the model has "
                  f"{int(is_cat.sum())} categorical features")
    categories = [None] * n_features
    for k, j in enumerate(np.flatnonzero(is_cat)):
        if pandas_cat is not None:
            categories[j] = list(pandas_cat[k])
            if max_code[j] > len(categories[j]):
                # codes beyond the pandas categories can only be reached by non-pandas input
                categories[j] = categories[j] + list(range(len(categories[j]), int(max_code[j])))
        else:
            categories[j] = list(range(int(max_code[j])))
    info = feature_info(names, is_cat, categories)
    n_cats = info.n_categories
    if len(parsed) % K:
        fail(LIB, f"the model has {len(parsed)} trees, not a whole number of iterations of "
                  f"num_tree_per_iteration={K} trees")
    # random forests (boosting=rf) predict the mean of their iterations: scale every leaf by
    # 1 / n_iter so that hardwood's sum of leaves is that mean (see the module docstring)
    average = "average_output" in header
    n_iter = len(parsed) // K
    scale = 1.0 / n_iter if average else 1.0
    trees = [_convert_tree(p, ti, n_features, is_cat, n_cats, scale)
             for ti, p in enumerate(parsed)]
    groups = [ti % K for ti in range(len(trees))]
    params = {"imported_from": "lightgbm", "lightgbm_objective": " ".join(obj_line)}
    if average:
        params["lightgbm_average_output"] = n_iter
    return make_model(LIB, trees, groups, np.zeros(K), objective, K, info, params)


def _convert_tree(p, ti, n_features, is_cat, n_cats, scale):
    leaf_value = p["leaf_value"] * scale
    n_leaves = leaf_value.size
    if not np.all(np.isfinite(leaf_value)):
        fail(LIB, f"tree {ti} has a non-finite leaf value")
    b = TreeBuilder(LIB)
    m = n_leaves - 1
    if m == 0:
        b.reserve(1)
        b.set_leaf(0, leaf_value[0], count=int(p["leaf_count"][0]))
        return b.finish(0, n_cats)
    # internal node k -> builder id k; leaf l -> builder id m + l
    b.reserve(m + n_leaves)
    for leaf in range(n_leaves):
        b.set_leaf(m + leaf, leaf_value[leaf], count=int(p["leaf_count"][leaf]))

    def child(c):
        c = int(c)
        if c >= 0:
            if c >= m:
                fail(LIB, f"tree {ti}: a child index {c} is outside [0, {m})")
            return c
        leaf = ~c
        if leaf >= n_leaves:
            fail(LIB, f"tree {ti}: a leaf index {leaf} is outside [0, {n_leaves})")
        return m + leaf

    fixups = []
    for k in range(m):
        f = int(p["split_feature"][k])
        if not 0 <= f < n_features:
            fail(LIB, f"tree {ti}: node {k} splits on feature {f}, outside [0, {n_features})")
        dt = int(p["decision_type"][k])
        lc, rc = child(p["left_child"][k]), child(p["right_child"][k])
        gain, count = float(p["split_gain"][k]), int(p["internal_count"][k])
        if dt & 1:
            if not is_cat[f]:
                fail(LIB, f"tree {ti}: categorical split on numeric feature {f}")
            cb = p["cat_boundaries"]
            ci = int(p["threshold"][k])
            words = p["cat_threshold"][cb[ci]:cb[ci + 1]]
            mask = np.zeros(int(n_cats[f]), dtype=bool)
            for c in range(min(mask.size, words.size * 32)):
                mask[c] = (int(words[c >> 5]) >> (c & 31)) & 1 == 1
            b.set_split(k, f, 0.0, False, lc, rc, cat_left=mask, gain=gain, count=count)
            continue
        thr = float(p["threshold"][k])
        if np.isnan(thr):
            fail(LIB, f"tree {ti}: node {k} has a NaN threshold")
        default_left = bool(dt & 2)
        missing = (dt >> 2) & 3
        if missing == 0:  # None: NaN -> 0.0
            b.set_split(k, f, thr, 0.0 <= thr, lc, rc, gain=gain, count=count)
        elif missing == 2:  # NaN
            b.set_split(k, f, thr, default_left, lc, rc, gain=gain, count=count)
        elif missing == 1:  # Zero: NaN and [-ZERO, ZERO] -> default side
            if default_left and thr >= ZERO:
                b.set_split(k, f, thr, True, lc, rc, gain=gain, count=count)
            elif default_left and thr >= -ZERO:
                b.set_split(k, f, ZERO, True, lc, rc, gain=gain, count=count)
            elif not default_left and thr < -ZERO:
                b.set_split(k, f, thr, False, lc, rc, gain=gain, count=count)
            elif not default_left and thr < ZERO:
                b.set_split(k, f, float(np.nextafter(-ZERO, -np.inf)), False, lc, rc,
                            gain=gain, count=count)
            else:
                fixups.append((k, f, thr, default_left, lc, rc, gain, count))
        else:
            fail(LIB, f"tree {ti}: node {k} has an unknown missing type {missing}")
    if fixups:  # expand the deepest first, so that copies hold finished subtrees
        depth = np.zeros(m + n_leaves, dtype=np.int64)
        for k in range(m):  # parents come before children in LightGBM's numbering
            for c in (child(p["left_child"][k]), child(p["right_child"][k])):
                depth[c] = max(depth[c], depth[k] + 1)
        fixups.sort(key=lambda fx: -depth[fx[0]])
    for k, f, thr, default_left, lc, rc, gain, count in fixups:
        lc2, rc2 = b.copy_subtree(lc), b.copy_subtree(rc)
        if default_left:  # thr < -ZERO: (-inf, thr] L, (thr, -ZERO) R, band+NaN L, (ZERO, inf) R
            lo = b.split(f, thr, False, lc, rc, gain=gain, count=count)
            hi = b.split(f, ZERO, True, lc2, rc2, gain=gain, count=count)
            b.set_split(k, f, float(np.nextafter(-ZERO, -np.inf)), False, lo, hi, gain=gain,
                        count=count)
        else:  # thr >= ZERO: (-inf, -ZERO) L, band+NaN R, (ZERO, thr] L, (thr, inf) R
            lo = b.split(f, float(np.nextafter(-ZERO, -np.inf)), False, lc, rc, gain=gain,
                         count=count)
            hi = b.split(f, thr, False, lc2, rc2, gain=gain, count=count)
            b.set_split(k, f, ZERO, False, lo, hi, gain=gain, count=count)
    return b.finish(0, n_cats)
