"""LightGBM models (Booster, the scikit-learn wrappers, the text model file) → hardwood.

LightGBM sends ``x <= threshold`` left in float64, as hardwood does. Missing values:

* missing type NaN: NaN follows the default direction;
* missing type None: NaN is read as 0.0, so it goes where 0.0 goes;
* missing type Zero: NaN and every x in [-1e-35, 1e-35] follow the default direction. When the
  plain rule would send that zero band elsewhere, the node becomes two hardwood nodes (a split
  at the band's edge, then the original split on each side), copying the subtree below.

Categorical splits hold the categories that go left as a bitset; NaN, negative and unknown
categories go right.

Cover: the model file records each node's sample count (``internal_count``, ``leaf_count``),
the weight of LightGBM's own TreeSHAP (``pred_contrib``); it becomes both ``count`` and
``cover``.

Random forests (``boosting='rf'``, marked by the bare ``average_output`` line of the model
text) predict the objective's transform of the *mean* of their iterations (per class).
hardwood predicts the transform of a sum of leaves, so every leaf value is scaled by
``1 / n_iter`` (``n_iter`` the number of iterations in the file, kept in
``params['lightgbm_average_output']``): ``predict(X)`` equals LightGBM's ``predict(X)`` to
rounding, and hardwood's raw margin is that mean. (LightGBM's ``raw_score=True`` and
``pred_contrib=True`` on a forest give the plain *sum* of the trees, ``n_iter`` times
hardwood's ``output="raw"`` and ``output="contrib"``.) A partial
``iteration_range`` on such a model is refused, as on hardwood's own forests: it would sum
the chosen iterations with the weight ``1 / n_iter``, a fraction of their mean, where
LightGBM's ``num_iteration=k`` divides by ``k``. To get LightGBM's prediction for the first
``k`` iterations, import ``booster.model_to_string(num_iteration=k)``.

``predict(X, output="leaf")`` gives hardwood's node ids (XGBoost's ``pred_leaf`` convention),
not LightGBM's leaf indices: the importer numbers each tree's nodes breadth first from the
root (``_build.TreeBuilder``), so a leaf's id is its place in that order, with no simple
relation to LightGBM's index (leaves 1, 2, 4 of a 7-leaf tree are nodes 5, 11, 10). Both
number each tree's leaves one to one, which is what leaf embeddings need.
"""
from __future__ import annotations

import json
import math
import os
import re

import numpy as np

from ..objectives import lightgbm_flavoured
from ._build import (MAX_CATEGORIES, MAX_FEATURES, MAX_NODES_PER_TREE, MAX_OUTPUTS, TreeBuilder,
                     check_bitset_words, check_categories, check_size, fail, feature_info,
                     make_model, reading)

LIB = "LightGBM"
ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold (a float widened to double)


def _zero_band(thr):
    """The threshold that sends values as LightGBM's prediction does, which reads every
    ``|x| <= ZERO`` as 0.0 (its row readers drop them as zeros): its usual split between the
    negatives and zero, at ``float32(-1e-35)``, sent ``x`` equal to it left, where LightGBM
    reads 0.0 and goes right (2.94 against 2.44 on a probe's model)."""
    if -ZERO <= thr < 0.0:
        return float(np.nextafter(-ZERO, -np.inf))
    if 0.0 <= thr < ZERO:
        return ZERO
    return thr

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
    try:
        if isinstance(obj, (bytes, bytearray, memoryview)):
            obj = bytes(obj).decode("utf-8")  # bytes are the model itself, never a path
        elif isinstance(obj, str) and "\n" not in obj:
            with open(obj, "r", encoding="utf-8") as fh:  # a path
                obj = fh.read()
        elif isinstance(obj, os.PathLike):
            with open(obj, "r", encoding="utf-8") as fh:
                obj = fh.read()
    except UnicodeDecodeError as e:
        fail(LIB, f"the model text is not valid UTF-8 ({e})")
    if isinstance(obj, str):
        return obj.replace("\r\n", "\n")
    if type(obj).__module__.startswith("lightgbm") and hasattr(obj, "fit"):
        fail(LIB, f"the {type(obj).__name__} is not fitted: call its fit method first")
    fail(LIB, f"cannot read a model from a {type(obj).__name__}")


_INT = re.compile(r"[+-]?[0-9]+")


def _int(s, what):
    """An integer header or tree field, written in decimal (LightGBM writes nothing else)."""
    s = s.strip()
    if not _INT.fullmatch(s):
        fail(LIB, f"{what} is not an integer: {s!r:.40}")
    return int(s)


def _parse(text):
    """(header dict, [tree dicts], pandas_categorical or None, [bytes of each tree's block]).

    The text is split at ``\\n`` as LightGBM does. ``tree_sizes`` in the header, when
    present, must give the length in bytes of every tree's block (from its ``Tree=`` line to
    the next one, or to ``end of trees``): LightGBM finds its trees by those lengths and
    refuses (or misreads) a model whose lengths are stale."""
    header, trees = {}, []
    cur = header
    pandas_cat = None
    starts, end_at, pos = [], None, 0
    for raw in text.split("\n"):
        at, pos = pos, pos + len(raw.encode("utf-8")) + 1
        line = raw.strip()
        if line.startswith("Tree=") and cur is not None:
            cur = {"Tree": line[5:]}
            trees.append(cur)
            starts.append(at)
            continue
        if line == "end of trees":
            if cur is None:
                fail(LIB, "the model has two 'end of trees' lines")
            cur = None
            end_at = at
            continue
        if line.startswith("pandas_categorical:"):
            try:
                pandas_cat = json.loads(line[len("pandas_categorical:"):])
            except (json.JSONDecodeError, RecursionError):
                fail(LIB, "the pandas_categorical line is not valid JSON")
            continue
        if cur is None or not line:
            continue
        if "=" not in line:
            if cur is header:  # a bare flag such as ``average_output`` (random forests)
                header[line] = ""
            continue
        k, v = line.split("=", 1)
        if k in cur:
            where = "the header" if cur is header else f"tree {len(trees) - 1}"
            fail(LIB, f"{where} holds {k}= twice")
        cur[k] = v
    if trees and end_at is None:
        fail(LIB, "the model text lacks its 'end of trees' line (truncated?)")
    if pandas_cat is not None and not (
            isinstance(pandas_cat, list) and all(isinstance(c, list) for c in pandas_cat)):
        fail(LIB, "pandas_categorical is not a list of category lists")
    blocks = [b - a for a, b in zip(starts, starts[1:] + [end_at])]
    return header, trees, pandas_cat, blocks


def _check_tree_sizes(header, got):
    """Checked after the trees, so that a malformed tree is reported as such first."""
    if "tree_sizes" not in header:
        return
    sizes = [_int(s, "tree_sizes") for s in header["tree_sizes"].split()]
    if sizes != got:
        bad = next((i for i, (s, g) in enumerate(zip(sizes, got)) if s != g),
                   min(len(sizes), len(got)))
        fail(LIB, f"tree_sizes does not match the trees (tree {bad}: "
                  f"{sizes[bad] if bad < len(sizes) else 'no size'} bytes stated, "
                  f"{got[bad] if bad < len(got) else 'no tree'} found); LightGBM finds its "
                  "trees by these sizes, so an edited model needs them recomputed")


def _arr(t, key, dtype, n, ti):
    if n == 0:
        if t.get(key, "").strip():
            fail(LIB, f"tree {ti}: {key} has values, expected none")
        return np.zeros(0, dtype=np.float64 if dtype is float else np.int64)
    if key not in t:
        fail(LIB, f"tree {ti} lacks {key}")
    v = t[key]
    # numpy parses like Python's int()/float(), which also take '_' and non-ASCII digits:
    # LightGBM does not, so neither does this
    if not v.isascii() or "_" in v:
        fail(LIB, f"tree {ti}: {key} holds something that is not a number")
    try:
        a = np.array(v.split(), dtype=np.float64 if dtype is float else np.int64)
    except (ValueError, OverflowError):
        fail(LIB, f"tree {ti}: {key} holds something that is not a number")
    if a.shape != (n,):
        fail(LIB, f"tree {ti}: {key} has {a.size} values, expected {n}")
    return a


def import_lightgbm(obj):
    text = model_text(obj)
    with reading(LIB) as where:
        model = _import(text, where)
    booster = getattr(obj, "booster_", obj)
    best = getattr(booster, "best_iteration", 0) if type(booster).__name__ == "Booster" else 0
    if isinstance(best, int) and best > 0 and "lightgbm_average_output" not in model.params:
        # a Booster that stopped early and kept every tree (keep_training_booster=True):
        # LightGBM's predict uses its best_iteration iterations (hardwood used every tree,
        # 1.37 off); hardwood's best_iteration counts from 0
        model.best_iteration = min(best, model.num_boosted_rounds) - 1
    return model


def _import(text, where):
    where.at = "the model text"
    header, trees_d, pandas_cat, blocks = _parse(text)
    if not trees_d:
        fail(LIB, "the model has no trees (or is not a LightGBM text model)")
    where.at = "the header"
    if "max_feature_idx" not in header:
        fail(LIB, "the header lacks max_feature_idx")
    n_features = _int(header["max_feature_idx"], "max_feature_idx") + 1
    check_size(LIB, "max_feature_idx + 1", n_features, MAX_FEATURES, low=1)
    K = _int(header.get("num_tree_per_iteration", header.get("num_class", "1")),
             "num_tree_per_iteration")
    check_size(LIB, "num_tree_per_iteration", K, MAX_OUTPUTS, low=1)
    if "num_class" in header and _int(header["num_class"], "num_class") != K:
        fail(LIB, f"num_class={header['num_class'].strip()} differs from "
                  f"num_tree_per_iteration={K}")
    obj_line = header.get("objective", "regression").split()
    obj_name = obj_line[0] if obj_line else "regression"
    opts = {}
    for o in obj_line[1:]:
        if ":" in o:
            k, v = o.split(":", 1)
            opts[k] = v
    if "sqrt" in obj_line[1:]:
        fail(LIB, "objective option 'sqrt' (reg_sqrt) is not supported")
    if obj_name not in _OBJ:
        fail(LIB, f"objective {obj_name!r:.60} is not supported")
    if obj_name in ("binary", "multiclassova") and opts.get("sigmoid", "1") not in ("1", "1.0"):
        fail(LIB, f"objective {obj_name} with sigmoid={opts['sigmoid']!r:.40} is not supported "
                  "(only sigmoid:1)")
    if "num_class" in opts and opts["num_class"] != str(K):
        fail(LIB, f"the objective's num_class:{opts['num_class']:.40} differs from "
                  f"num_tree_per_iteration={K}")
    objective = _OBJ[obj_name]
    if (objective in ("multi:softprob", "multiclassova")) != (K > 1):
        fail(LIB, f"objective {obj_name!r} does not fit {K} trees per iteration")
    names = header.get("feature_names", "").split() or [f"Column_{j}" for j in range(n_features)]
    infos = header.get("feature_infos", "").split()
    if len(names) != n_features or (infos and len(infos) != n_features):
        fail(LIB, f"feature_names ({len(names)}) / feature_infos ({len(infos)}) do not match "
                  f"max_feature_idx + 1 = {n_features}")
    is_cat = np.zeros(n_features, dtype=bool)
    # categories: pandas_categorical (DataFrame input) or the integer codes themselves
    max_code = np.zeros(n_features, dtype=np.int64)
    for j, s in enumerate(infos):
        if s != "none" and not s.startswith("["):
            is_cat[j] = True
            codes = [_int(v, f"feature_infos[{j}]") for v in s.split(":")]
            top = max(codes)
            if top >= MAX_CATEGORIES:
                fail(LIB, f"feature_infos[{j}] names category {top}, beyond the largest "
                          f"supported code {MAX_CATEGORIES - 1}")
            max_code[j] = max(top + 1, 0)
    parsed = []
    cat_split_features = []
    for ti, t in enumerate(trees_d):
        where.at = f"tree {ti}"
        p = _read_tree(t, ti, n_features, is_cat, max_code)
        cat_split_features += p["cat_features"]
        parsed.append(p)
    where.at = "pandas_categorical"
    if pandas_cat == []:
        # a frame without 'category' columns (integer columns named in categorical_feature,
        # LightGBM's common case): the features' codes are the integers themselves
        pandas_cat = None
    if pandas_cat is not None and (
            len(pandas_cat) != int(is_cat.sum())
            # (a category column's codes stay below its count of categories: a feature coded
            # past its list is an integer column the list is not of)
            or any(max_code[j] > len(c) for j, c in zip(np.flatnonzero(is_cat), pandas_cat))):
        # LightGBM lists the categories of every pandas 'category' column of its training
        # frame, whichever it trained as categorical; the file does not say which columns
        # those were, so the lists cannot be given to the right features
        fail(LIB, f"pandas_categorical lists the categories of {len(pandas_cat)} pandas "
                  f"'category' columns, which do not line up with the model's "
                  f"{int(is_cat.sum())} categorical features: its categorical_feature named columns of another dtype, or left "
                  "category columns numeric (ordered ones, under 'auto'), and the file does "
                  "not record which columns the lists belong to. Train with "
                  "categorical_feature equal to the frame's 'category' columns (convert the "
                  "others to 'category' dtype first)")
    counts = np.where(is_cat, max_code, 0)
    if pandas_cat is not None:
        counts[is_cat] = np.maximum(counts[is_cat], [len(c) for c in pandas_cat])
    check_categories(LIB, counts, names)
    check_bitset_words(LIB, cat_split_features, counts)
    categories = [None] * n_features
    for k, j in enumerate(np.flatnonzero(is_cat)):
        if pandas_cat is not None:
            categories[j] = list(pandas_cat[k])
        else:
            categories[j] = range(int(max_code[j]))
    where.at = "the features"
    info = feature_info(names, is_cat, categories, array_codes=pandas_cat is not None)
    n_cats = info.n_categories
    if len(parsed) % K:
        fail(LIB, f"the model has {len(parsed)} trees, not a whole number of iterations of "
                  f"num_tree_per_iteration={K} trees")
    # random forests (boosting=rf) predict the mean of their iterations: scale every leaf by
    # 1 / n_iter so that hardwood's sum of leaves is that mean (see the module docstring)
    average = "average_output" in header
    n_iter = len(parsed) // K
    scale = 1.0 / n_iter if average else 1.0
    trees = []
    for ti, p in enumerate(parsed):
        where.at = f"tree {ti}"
        trees.append(_convert_tree(p, ti, n_cats, scale))
    where.at = "tree_sizes"
    _check_tree_sizes(header, blocks)
    groups = [ti % K for ti in range(len(trees))]
    params = {"imported_from": "lightgbm", "lightgbm_objective": " ".join(obj_line)}
    if lightgbm_flavoured(obj_name):
        # its own loss (Poisson's leaves without XGBoost's cap, L1's medians, the softmax's
        # hessian): a continuation with LightGBM's name trains it (count:poisson was named,
        # and continuing with 'poisson' refused)
        params["objective"] = obj_name
    # the loss's parameter, from the parameters section (a continuation keeps it)
    key, name = {"reg:tweedie": ("tweedie_variance_power", "tweedie_variance_power"),
                 "reg:quantileerror": ("alpha", "quantile_alpha")}.get(objective, (None, None))
    value = None if key is None else _parameter(text, key)
    if value is not None:
        params[name] = value
    if objective == "rank:ndcg":
        gain = _label_gain(text)
        if gain is not None:  # the gains its NDCG was scored with (2^g - 1 by default)
            params["label_gain"] = gain
    if average:
        params["lightgbm_average_output"] = n_iter
    where.at = "the model"
    return make_model(LIB, trees, groups, np.zeros(K), objective, K, info, params)


def _parameter(text, key):
    """A number of the model's parameters section (``[key: value]``), or None."""
    found = re.findall(rf"^\[{key}: ([^\]\n]*)\]\r?$", text, re.M)
    if len(found) != 1:
        return None
    try:
        value = float(found[0])
    except ValueError:
        fail(LIB, f"parameter {key} {found[0]!r:.40} is not a number")
    if not math.isfinite(value):
        fail(LIB, f"parameter {key} {found[0]!r:.40} is not finite")
    return value


def _label_gain(text):
    """The ``label_gain`` of the model's parameters section, or None: a ranker's NDCG gains
    per grade, which ``score_ranking`` and the report score with (an imported
    ``label_gain=[0, 1, 2, 3, 4]`` was scored with 2^g - 1: ndcg@10 0.975 against
    LightGBM's 0.986)."""
    found = re.findall(r"^\[label_gain: ([^\]\n]*)\]\r?$", text, re.M)
    if not found:
        return None
    if len(found) > 1:
        fail(LIB, "the parameters hold label_gain twice")
    if not found[0].strip():  # written empty: LightGBM's default, 2^g - 1
        return None
    try:
        gain = [float(g) for g in found[0].split(",")]
    except ValueError:
        fail(LIB, f"label_gain {found[0]!r:.60} is not a list of numbers")
    if not gain or len(gain) > 10_000 or not all(math.isfinite(g) and g >= 0 for g in gain):
        fail(LIB, f"label_gain {found[0]!r:.60} is not a list of finite gains >= 0")
    return gain


def _read_tree(t, ti, n_features, is_cat, max_code):
    """One tree's fields, checked; raises ``max_code`` to the categories its bitsets name."""
    if t["Tree"].strip() != str(ti):
        fail(LIB, f"tree {ti} is headed Tree={t['Tree'].strip()!r:.40}")
    if t.get("is_linear", "0").strip() not in ("0", "1"):
        fail(LIB, f"tree {ti}: is_linear is {t['is_linear']!r:.40}, not 0 or 1")
    if t.get("is_linear", "0").strip() == "1":
        fail(LIB, "linear trees (linear_tree=True) are not supported: their leaves hold "
                  "linear models, which hardwood's constant leaves cannot represent")
    if "num_leaves" not in t:
        fail(LIB, f"tree {ti} lacks num_leaves")
    n_leaves = _int(t["num_leaves"], f"tree {ti}: num_leaves")
    check_size(LIB, f"tree {ti}: num_leaves", n_leaves, MAX_NODES_PER_TREE // 2, low=1)
    m = n_leaves - 1
    n_cat = _int(t.get("num_cat", "0"), f"tree {ti}: num_cat")
    check_size(LIB, f"tree {ti}: num_cat", n_cat, m)
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
        "cat_words": {},
        "cat_features": [],
    }
    dt = p["decision_type"]
    if np.any((dt < 0) | (dt > 15) | ((dt >> 2) & 3 == 3)):
        k = int(np.flatnonzero((dt < 0) | (dt > 15) | ((dt >> 2) & 3 == 3))[0])
        fail(LIB, f"tree {ti}: node {k} has decision_type {int(dt[k])}, not a valid "
                  "combination of categorical/default-left/missing-type bits")
    f_all = p["split_feature"]
    if m and (f_all.min() < 0 or f_all.max() >= n_features):
        k = int(np.flatnonzero((f_all < 0) | (f_all >= n_features))[0])
        fail(LIB, f"tree {ti}: node {k} splits on feature {int(f_all[k])}, outside "
                  f"[0, {n_features}) (split_feature)")
    cat_nodes = np.flatnonzero(dt & 1)
    num_on_cat = np.flatnonzero(((dt & 1) == 0) & is_cat[f_all]) if m else []
    if len(num_on_cat):
        k = int(num_on_cat[0])
        fail(LIB, f"tree {ti}: numeric split on categorical feature {int(f_all[k])} at node {k} "
                  "(decision_type, feature_infos)")
    if cat_nodes.size and not n_cat:
        fail(LIB, f"tree {ti} has categorical splits but num_cat=0")
    if n_cat:
        cb = _arr(t, "cat_boundaries", int, n_cat + 1, ti)
        if cb[0] != 0 or np.any(np.diff(cb) < 0):
            fail(LIB, f"tree {ti}: cat_boundaries is not increasing from 0")
        cat_thr = _arr(t, "cat_threshold", int, int(cb[-1]), ti)
        if np.any(cat_thr < 0) or np.any(cat_thr >= 2 ** 32):
            fail(LIB, f"tree {ti}: cat_threshold holds a value outside uint32")
        for k in cat_nodes.tolist():
            f = int(f_all[k])
            ci = p["threshold"][k]
            if not is_cat[f]:
                fail(LIB, f"tree {ti}: categorical split on numeric feature {f} at node {k} "
                          "(decision_type, feature_infos)")
            if not (0 <= ci < n_cat) or ci != int(ci):
                fail(LIB, f"tree {ti}: categorical node {k} names bitset {ci}, outside "
                          f"[0, {n_cat}) (threshold, num_cat)")
            words = cat_thr[cb[int(ci)]:cb[int(ci) + 1]]
            nz = np.flatnonzero(words)
            top = 0 if nz.size == 0 else int(nz[-1]) * 32 + int(words[nz[-1]]).bit_length()
            if top > MAX_CATEGORIES:
                fail(LIB, f"tree {ti}: categorical node {k} sends category {top - 1} left, "
                          f"beyond the largest supported code {MAX_CATEGORIES - 1}")
            max_code[f] = max(max_code[f], top)
            p["cat_words"][k] = words.astype(np.uint32)
            p["cat_features"].append(f)
    elif any(t.get(key, "").strip() for key in ("cat_boundaries", "cat_threshold")):
        fail(LIB, f"tree {ti} has cat_boundaries/cat_threshold but num_cat=0")
    return p


def _convert_tree(p, ti, n_cats, scale):
    leaf_value = p["leaf_value"] * scale
    n_leaves = leaf_value.size
    if not np.all(np.isfinite(leaf_value)):
        fail(LIB, f"tree {ti} has a non-finite leaf value")
    b = TreeBuilder(LIB)
    m = n_leaves - 1
    if m == 0:
        b.reserve(1)
        b.set_leaf(0, leaf_value[0], count=int(p["leaf_count"][0]),
                   cover=float(p["leaf_count"][0]))
        return b.finish(0, n_cats)
    # internal node k -> builder id k; leaf l -> builder id m + l
    b.reserve(m + n_leaves)
    for leaf in range(n_leaves):
        b.set_leaf(m + leaf, leaf_value[leaf], count=int(p["leaf_count"][leaf]),
                   cover=float(p["leaf_count"][leaf]))

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

    # the structure first: every node reached once from the root (depths for the fixups)
    depth = np.full(m + n_leaves, -1, dtype=np.int64)
    depth[0] = 0
    stack = [0]
    while stack:
        k = stack.pop()
        for c in (child(p["left_child"][k]), child(p["right_child"][k])):
            if depth[c] >= 0:
                fail(LIB, f"tree {ti}: node {c} is reached twice (a cycle or a shared node)")
            depth[c] = depth[k] + 1
            if c < m:
                stack.append(c)
    fixups = []
    for k in np.flatnonzero(depth[:m] >= 0).tolist():
        f = int(p["split_feature"][k])
        dt = int(p["decision_type"][k])
        lc, rc = child(p["left_child"][k]), child(p["right_child"][k])
        gain, count = float(p["split_gain"][k]), int(p["internal_count"][k])
        if dt & 1:
            b.set_split(k, f, 0.0, False, lc, rc, cat_words=p["cat_words"][k], gain=gain,
                        count=count, cover=count)
            continue
        thr = float(p["threshold"][k])
        if np.isnan(thr):
            fail(LIB, f"tree {ti}: node {k} has a NaN threshold")
        default_left = bool(dt & 2)
        missing = (dt >> 2) & 3
        if missing != 1:
            thr = _zero_band(thr)
        if missing == 0:  # None: NaN -> 0.0
            b.set_split(k, f, thr, 0.0 <= thr, lc, rc, gain=gain, count=count, cover=count)
        elif missing == 2:  # NaN
            b.set_split(k, f, thr, default_left, lc, rc, gain=gain, count=count, cover=count)
        else:  # Zero: NaN and [-ZERO, ZERO] -> default side
            if default_left and thr >= ZERO:
                b.set_split(k, f, thr, True, lc, rc, gain=gain, count=count, cover=count)
            elif default_left and thr >= -ZERO:
                b.set_split(k, f, ZERO, True, lc, rc, gain=gain, count=count, cover=count)
            elif not default_left and thr < -ZERO:
                b.set_split(k, f, thr, False, lc, rc, gain=gain, count=count, cover=count)
            elif not default_left and thr < ZERO:
                b.set_split(k, f, float(np.nextafter(-ZERO, -np.inf)), False, lc, rc,
                            gain=gain, count=count, cover=count)
            else:
                fixups.append((k, f, thr, default_left, lc, rc, gain, count))
    # expand the deepest first, so that copies hold finished subtrees
    fixups.sort(key=lambda fx: -depth[fx[0]])
    if fixups:  # each copies both subtrees below it: count the nodes before building them
        fix = {fx[0] for fx in fixups}
        size = np.ones(m + n_leaves, dtype=object)
        for k in sorted(np.flatnonzero(depth[:m] >= 0).tolist(), key=lambda k: -depth[k]):
            below = size[child(p["left_child"][k])] + size[child(p["right_child"][k])]
            size[k] = 3 + 2 * below if k in fix else 1 + below
        if size[0] > MAX_NODES_PER_TREE:
            fail(LIB, f"tree {ti}: its zero-as-missing splits expand it to {size[0]} nodes, more "
                      f"than {MAX_NODES_PER_TREE}")
    for k, f, thr, default_left, lc, rc, gain, count in fixups:
        lc2, rc2 = b.copy_subtree(lc), b.copy_subtree(rc)
        # Cover (the sample count, which TreeSHAP weights by): the two halves share the
        # node's count, each subtree below scaled alike, so that every split keeps LightGBM's
        # ratios and each original leaf its weight, split between its two copies.
        for c in (lc, rc, lc2, rc2):
            b.scale_cover(c, 0.5)
        half = dict(gain=gain, count=count, cover=count / 2)
        if default_left:  # thr < -ZERO: (-inf, thr] L, (thr, -ZERO) R, band+NaN L, (ZERO, inf) R
            lo = b.split(f, thr, False, lc, rc, **half)
            hi = b.split(f, ZERO, True, lc2, rc2, **half)
            b.set_split(k, f, float(np.nextafter(-ZERO, -np.inf)), False, lo, hi, gain=gain,
                        count=count, cover=count)
        else:  # thr >= ZERO: (-inf, -ZERO) L, band+NaN R, (ZERO, thr] L, (thr, inf) R
            lo = b.split(f, float(np.nextafter(-ZERO, -np.inf)), False, lc, rc, **half)
            hi = b.split(f, thr, False, lc2, rc2, **half)
            b.set_split(k, f, ZERO, False, lo, hi, gain=gain, count=count, cover=count)
    return b.finish(0, n_cats)
