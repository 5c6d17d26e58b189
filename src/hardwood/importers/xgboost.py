"""XGBoost models (Booster, the scikit-learn wrappers, JSON and UBJ files) → hardwood.

Split rule: XGBoost sends ``float32(x) < t`` left (``t`` a float32), hardwood sends
``x <= threshold`` left. With ``s = nextafter(t, -inf)`` in float32 the rule is
``float32(x) <= s``, and :func:`float32_boundary` turns that into one float64 threshold that is
exact for float32 *and* float64 inputs. Categorical splits list the categories that go
*right*; hardwood stores the complement (the categories that go left) as a bitset.

XGBoost sends a category that is in no split's list left, also one its training never saw
(beyond every category its splits name, or not among its stored categories), while a missing
value follows the split's default direction. The imported model does the same: its features
get an unseen-category code (``FeatureInfo.unseen_left``) that every split sends left.
Differences left: XGBoost truncates a fractional category value to an integer (2.5 is
category 2), where hardwood matches categories by value (2.5 is unseen, so it goes left); and
XGBoost >= 3.1 raises on an unseen category of a model that stores string categories, where
the imported model sends it left.

The reading is as strict as XGBoost's own loader (JSON integers where it wants integers,
floats where it wants numbers, string parameters, 0/1 flags, a UBJ tree's arrays all typed
with XGBoost's types or all untyped), so that what XGBoost refuses hardwood refuses too, with
a message naming the field.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import re
import struct

import numpy as np

from ..objectives import outputs_fit, xgboost_logit
from ._build import (MAX_CATEGORIES, MAX_FEATURES, MAX_NODES_PER_TREE, MAX_OUTPUTS, TreeBuilder,
                     check_bitset_words, check_categories, check_size, fail, feature_info,
                     float32_boundary, make_model, reading)

LIB = "XGBoost"

_OBJ = {  # XGBoost objective -> (hardwood objective, base_score -> margin)
    "reg:squarederror": ("reg:squarederror", "identity"),
    "reg:linear": ("reg:squarederror", "identity"),
    "reg:squaredlogerror": ("reg:squaredlogerror", "identity"),
    "reg:pseudohubererror": ("reg:pseudohubererror", "identity"),
    "reg:absoluteerror": ("reg:absoluteerror", "identity"),
    "reg:quantileerror": ("reg:quantileerror", "identity"),
    "reg:logistic": ("reg:logistic", "logit"),
    "binary:logistic": ("binary:logistic", "logit"),
    "binary:logitraw": ("binary:logitraw", "identity"),
    "binary:hinge": ("binary:hinge", "identity"),
    "count:poisson": ("count:poisson", "log"),
    "reg:gamma": ("reg:gamma", "log"),
    "reg:tweedie": ("reg:tweedie", "log"),
    "survival:cox": ("survival:cox", "log"),
    "rank:pairwise": ("rank:pairwise", "identity"),
    "rank:ndcg": ("rank:ndcg", "identity"),
    "rank:map": ("rank:map", "identity"),
    "multi:softprob": ("multi:softprob", "identity"),
    "multi:softmax": ("multi:softmax", "identity"),
}


# -- UBJSON (XGBoost's binary model format) ----------------------------------------------------
_UBJ_NUM = {b"i": ">b", b"U": ">B", b"I": ">h", b"l": ">i", b"L": ">q", b"d": ">f", b"D": ">d"}
_UBJ_NP = {b"i": ">i1", b"U": ">u1", b"I": ">i2", b"l": ">i4", b"L": ">i8", b"d": ">f4",
           b"D": ">f8"}


class _TypedArray(list):
    """A UBJ typed array (``[$d#...``), its element marker kept: XGBoost requires them."""

    def __init__(self, values, typ):
        super().__init__(values)
        self.ubj_type = typ


# the element type XGBoost's UBJ loader requires of a tree's typed arrays (it reads a tree's
# arrays either all typed, with exactly these types, or all untyped)
_UBJ_TREE_TYPES = {
    "split_conditions": (b"d",), "loss_changes": (b"d",), "sum_hessian": (b"d",),
    "base_weights": (b"d",), "left_children": (b"l",), "right_children": (b"l",),
    "parents": (b"l",), "split_indices": (b"l", b"L"), "default_left": (b"U",),
    "split_type": (b"U",), "categories": (b"l",), "categories_nodes": (b"l",),
    "categories_segments": (b"L",), "categories_sizes": (b"L",)}
_UBJ_NAMES = {b"i": "int8", b"U": "uint8", b"I": "int16", b"l": "int32", b"L": "int64",
              b"d": "float32", b"D": "float64", None: "untyped"}


class _UBJ:
    def __init__(self, data: bytes):
        self.b = memoryview(data)
        self.p = 0
        self.depth = 0

    def _take(self, n):
        if self.p + n > len(self.b):
            fail(LIB, "the UBJ data is truncated")
        out = self.b[self.p:self.p + n]
        self.p += n
        return out

    def _marker(self):
        m = bytes(self._take(1))
        while m == b"N":  # no-op
            m = bytes(self._take(1))
        return m

    def _num(self, m):
        fmt = _UBJ_NUM[m]
        return struct.unpack(fmt, self._take(struct.calcsize(fmt)))[0]

    def _length(self):
        m = self._marker()
        if m not in _UBJ_NUM or m in (b"d", b"D"):
            fail(LIB, "bad UBJ length")
        n = self._num(m)
        if n < 0 or n > len(self.b):
            fail(LIB, "a UBJ length is out of range")
        return n

    def _string(self):
        return bytes(self._take(self._length())).decode("utf-8", errors="strict")

    def value(self, m=None):
        m = self._marker() if m is None else m
        if m in _UBJ_NUM:
            return self._num(m)
        if m == b"S":
            return self._string()
        if m == b"C":
            return bytes(self._take(1)).decode("latin-1")
        if m == b"T":
            return True
        if m == b"F":
            return False
        if m == b"Z":
            return None
        if m in (b"[", b"{"):
            self.depth += 1
            if self.depth > 64:
                fail(LIB, "the UBJ data is nested too deeply")
            out = self._array() if m == b"[" else self._object()
            self.depth -= 1
            return out
        fail(LIB, f"unknown UBJ marker {m!r} at byte {self.p - 1}")

    def _container_header(self):
        typ = count = None
        if bytes(self.b[self.p:self.p + 1]) == b"$":
            self.p += 1
            typ = bytes(self._take(1))
        if bytes(self.b[self.p:self.p + 1]) == b"#":
            self.p += 1
            count = self._length()
        if typ is not None and count is None:
            fail(LIB, "a typed UBJ container lacks its count")
        if typ is not None and typ not in _UBJ_NUM and typ not in (b"S", b"C"):
            # elements of no size (null, true, false, no-op) or containers: XGBoost writes only
            # typed arrays of numbers, and a count of empty elements would cost no bytes
            fail(LIB, f"a typed UBJ container of {typ!r} is not supported")
        return typ, count

    def _array(self):
        typ, count = self._container_header()
        if typ in _UBJ_NP:
            dt = np.dtype(_UBJ_NP[typ])
            raw = self._take(count * dt.itemsize)
            return _TypedArray(np.frombuffer(raw, dtype=dt).astype(dt.newbyteorder("=")).tolist(),
                               typ)
        out = []
        if count is not None:
            for _ in range(count):
                out.append(self.value(typ))
            return out
        while True:
            m = self._marker()
            if m == b"]":
                return out
            out.append(self.value(m))

    def _object(self):
        typ, count = self._container_header()
        out = {}
        if count is not None:
            for _ in range(count):
                k = self._string()
                out[k] = self.value(typ)
            return out
        while True:
            if bytes(self.b[self.p:self.p + 1]) == b"}":
                self.p += 1
                return out
            k = self._string()
            out[k] = self.value()


def load_ubj(data: bytes) -> dict:
    try:
        return _UBJ(bytes(data)).value()
    except (struct.error, UnicodeDecodeError, OverflowError, ValueError) as e:
        if type(e).__name__ == "ImportModelError":
            raise
        fail(LIB, f"the UBJ data is malformed ({e})")


# -- entry points -------------------------------------------------------------------------------
def model_dict(obj) -> dict:
    """The model as XGBoost's JSON dict, from a Booster, an XGBModel, a path, bytes, JSON text
    or a dict."""
    if isinstance(obj, dict):
        return obj
    if hasattr(obj, "get_booster"):
        obj = obj.get_booster()
    if type(obj).__name__ == "Booster" and hasattr(obj, "save_raw"):
        return json.loads(bytes(obj.save_raw("json")).decode("utf-8"))
    if isinstance(obj, str) and obj.lstrip().startswith("{"):
        obj = obj.encode("utf-8")  # JSON text, not a path
    elif isinstance(obj, (str, os.PathLike)):
        with open(obj, "rb") as fh:
            obj = fh.read()
    if isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        head = data.lstrip()[:2]
        if head[:1] == b"{" and head[1:2] in (b'"', b"}", b" ", b"\n", b"\r", b"\t"):
            try:
                return json.loads(data.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
                fail(LIB, f"not valid JSON ({e})")
        return load_ubj(data)
    fail(LIB, f"cannot read a model from a {type(obj).__name__}")


# -- typed reading: XGBoost's own loader is strict about JSON types (an integer where it
# expects a number, a number where it expects an integer, a string, null or a list in an
# array of numbers are all errors), and so is this one, with messages naming the field -------
def _get(d, *keys):
    cur = d
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            fail(LIB, f"the model lacks {'/'.join(keys)}")
        cur = cur[k]
    return cur


def _dict(v, what):
    if not isinstance(v, dict):
        fail(LIB, f"{what} is not a JSON object (got {type(v).__name__})")
    return v


def _str(v, what):
    if not isinstance(v, str):
        fail(LIB, f"{what} is not a string (got {v!r:.60})")
    return v


def _types_of(a):
    return set(map(type, a))


def _json_array(v, what, n, kind, noun):
    """A list of JSON values all of type ``kind`` (and length ``n`` if given)."""
    if not isinstance(v, list):
        fail(LIB, f"{what} is not an array (got {type(v).__name__})")
    if n is not None and len(v) != n:
        fail(LIB, f"{what} has length {len(v)}, expected {n}")
    if v and not _types_of(v) <= {kind}:
        bad = next(x for x in v if type(x) is not kind)
        fail(LIB, f"{what} holds {bad!r:.40}, not {noun}")
    return v


def _int_array(v, what, n=None):
    """A list of JSON integers (bool excluded) as int64."""
    v = _json_array(v, what, n, int, "an integer")
    try:
        return np.array(v, dtype=np.int64)
    except OverflowError:
        fail(LIB, f"{what} holds an integer outside int64")


def _float_array(v, what, n=None):
    """A list of JSON numbers written as floats (XGBoost refuses integers there)."""
    return np.array(_json_array(v, what, n, float, "a floating-point number"), dtype=np.float64)


def _flag_array(v, what, n, booleans):
    """0/1 per node (and false/true where XGBoost takes them: ``booleans``); any other value
    is refused (XGBoost reads -1, 2 or 0.5 inconsistently, or refuses them)."""
    if not isinstance(v, list):
        fail(LIB, f"{what} is not an array (got {type(v).__name__})")
    if len(v) != n:
        fail(LIB, f"{what} has length {len(v)}, expected {n}")
    types = {int, bool} if booleans else {int}
    if v and not (_types_of(v) <= types and set(v) <= {0, 1}):
        bad = next(x for x in v if type(x) not in types or x not in (0, 1))
        fail(LIB, f"{what} holds {bad!r:.40}; only "
                  f"{'0 and 1 (or false and true)' if booleans else '0 and 1'} are allowed")
    return np.array(v, dtype=bool)


_INT = re.compile(r"[+-]?[0-9]+")


def _ndcg_linear_gain(learner) -> bool:
    """Whether the ranker scores NDCG with the grades as gains (``ndcg_exp_gain``: '0')."""
    obj = learner.get("objective")
    lp = obj.get("lambdarank_param") if isinstance(obj, dict) else None
    flag = lp.get("ndcg_exp_gain", "1") if isinstance(lp, dict) else "1"
    if flag not in ("0", "1", "false", "true"):
        fail(LIB, f"learner/objective/lambdarank_param/ndcg_exp_gain is {flag!r:.40}, not 0 "
                  "or 1")
    return flag in ("0", "false")


def _quantile_alphas(learner, K):
    """reg:quantileerror's quantiles (``quantile_loss_param/quantile_alpha``: "0.5" or
    "[1E-1,5E-1,9E-1]"), one per output: a float for one, a list for several."""
    obj = learner.get("objective")
    qp = obj.get("quantile_loss_param") if isinstance(obj, dict) else None
    raw = qp.get("quantile_alpha", "0.5") if isinstance(qp, dict) else "0.5"
    text = _str(raw, "learner/objective/quantile_loss_param/quantile_alpha").strip()
    try:
        alphas = [float(v) for v in text.strip("[]").split(",")]
    except ValueError:
        fail(LIB, f"quantile_alpha {text!r:.60} is not a number or a list of numbers")
    if len(alphas) != K or not all(0.0 < a < 1.0 for a in alphas):
        fail(LIB, f"quantile_alpha {text!r:.60} does not give one quantile in (0, 1) for each "
                  f"of the model's {K} output(s)")
    return alphas if K > 1 else alphas[0]


def _param_int(params, key, default, what, cap):
    """An integer parameter that XGBoost stores as a string ("3")."""
    if key not in params:
        return default
    v = _str(params[key], what)
    if not _INT.fullmatch(v.strip()):
        fail(LIB, f"{what} is not an integer: {v!r:.40}")
    return check_size(LIB, what, int(v), cap)


def _base_score(v, what):
    """base_score: a string holding a number or a bracketed list of numbers."""
    v = _str(v, what).strip()
    items = v[1:-1].split(",") if v.startswith("[") and v.endswith("]") else [v]
    try:
        out = [float(x) for x in items if x.strip()]
    except ValueError:
        fail(LIB, f"{what} is not a number or a list of numbers: {v!r:.60}")
    return np.asarray(out, dtype=np.float64)


_FEATURE_TYPES = {"q", "float", "int", "i", "c"}  # quantitative/float/int/indicator/categorical


def _categories_of(cats, n_features):
    """Training categories per feature stored by XGBoost ≥ 3 (``cats``), else None."""
    out = [None] * n_features
    if cats is None:
        return out
    _dict(cats, "gradient_booster/model/cats")
    enc = cats.get("enc", [])
    if not isinstance(enc, list):
        fail(LIB, "gradient_booster/model/cats/enc is not an array")
    if not enc:
        return out
    if len(enc) != n_features:
        fail(LIB, f"gradient_booster/model/cats/enc has {len(enc)} entries for {n_features} "
                  "features")
    for j, e in enumerate(enc):
        what = f"gradient_booster/model/cats/enc[{j}]"
        _dict(e, what)
        values = e.get("values", [])
        offsets = e.get("offsets", [])
        if not isinstance(values, list) or not isinstance(offsets, list):
            fail(LIB, f"{what}: values and offsets must be arrays")
        if offsets:  # strings: UTF-8 bytes, offsets[i] .. offsets[i + 1] per category
            off = _int_array(offsets, f"{what}/offsets")
            raw = _int_array(values, f"{what}/values")
            if (off[0] != 0 or off[-1] != raw.size or np.any(np.diff(off) < 0)):
                fail(LIB, f"{what}/offsets do not split the {raw.size} bytes of values")
            if raw.size and (raw.min() < 0 or raw.max() > 255):
                fail(LIB, f"{what}/values holds a byte outside [0, 255]")
            b = raw.astype(np.uint8).tobytes()
            try:
                names = [b[off[i]:off[i + 1]].decode("utf-8") for i in range(off.size - 1)]
            except UnicodeDecodeError:
                fail(LIB, f"{what}/values is not valid UTF-8")
            out[j] = names
        elif values:  # numbers
            if not _types_of(values) <= {int, float}:
                fail(LIB, f"{what}/values holds something that is not a number")
            if not all(math.isfinite(v) for v in values):
                fail(LIB, f"{what}/values holds a value that is not finite")
            out[j] = list(values)
        if out[j] is not None and len(set(out[j])) != len(out[j]):
            fail(LIB, f"{what} lists a category twice")
    return out


# -- entry points -------------------------------------------------------------------------------
def import_xgboost(obj):
    missing = getattr(obj, "missing", None) if hasattr(obj, "get_booster") else None
    if isinstance(missing, numbers.Real) and not math.isnan(missing):
        # its predict reads the sentinel as missing; hardwood read it as a number (8.6 off)
        fail(LIB, f"the estimator reads {missing!r} as a missing value (missing={missing!r}), "
                  "where hardwood's missing value is NaN: replace it by NaN in the data, then "
                  "import the estimator with missing=np.nan (est.set_params(missing=np.nan)) "
                  "or its booster (est.get_booster())")
    d = model_dict(obj)
    with reading(LIB) as where:
        model = _import(d, where)
    if hasattr(obj, "get_booster"):
        # a scikit-learn estimator (XGBRegressor, ...) that stopped early predicts with the
        # rounds up to its best one, as its own predict does (every tree gave 1.5 off); a
        # Booster, or a model file, predicts with every tree, as XGBoost's Booster does
        try:
            best = obj.best_iteration
        except AttributeError:  # it did not stop early
            best = None
        if best is not None:
            model.best_iteration = int(best)
            model.best_score = getattr(obj, "best_score", None)
    return model


def _import(d, where):
    _dict(d, "the model")
    learner = _dict(_get(d, "learner"), "learner")
    gb = _dict(_get(learner, "gradient_booster"), "learner/gradient_booster")
    name = gb.get("name")
    if name == "dart":
        fail(LIB, "DART boosters are not supported (their tree weights depend on dropout); "
                  "train with booster='gbtree'")
    if name != "gbtree":
        fail(LIB, f"booster {name!r:.60} is not supported (only 'gbtree')")
    where.at = "learner/learner_model_param"
    mparam = _dict(_get(learner, "learner_model_param"), "learner/learner_model_param")
    n_features = _param_int(mparam, "num_feature", 0, "learner_model_param/num_feature",
                            MAX_FEATURES)
    num_class = _param_int(mparam, "num_class", 0, "learner_model_param/num_class", MAX_OUTPUTS)
    num_target = _param_int(mparam, "num_target", 1, "learner_model_param/num_target",
                            MAX_OUTPUTS)
    if n_features < 1:
        fail(LIB, "the model has no features (learner_model_param/num_feature)")
    obj_name = _str(_get(learner, "objective", "name"), "learner/objective/name")
    if obj_name not in _OBJ:
        fail(LIB, f"objective {obj_name!r:.60} is not supported")
    objective, base_link = _OBJ[obj_name]
    multi = objective in ("multi:softprob", "multi:softmax")
    if multi and num_class < 2:
        fail(LIB, f"{obj_name} needs num_class >= 2 (learner_model_param/num_class)")
    if not multi and num_class > 1:
        fail(LIB, f"num_class={num_class} does not fit objective {obj_name}")
    K = num_class if multi else 1
    if num_target > 1:
        # one tree a target a round (multi_strategy='one_output_per_tree', tree_info names the
        # target), as a model of several quantiles (quantile_alpha a list): hardwood's
        # outputs; vector leaves are refused below
        if multi or not outputs_fit(objective, num_target):
            fail(LIB, f"multi-target models (num_target={num_target}) of {obj_name} are not "
                      "supported: hardwood's models of one objective with several outputs "
                      "are those of reg:quantileerror with several quantiles")
        K = num_target
    # XGBoost refuses a model without base_score (no default of 0.5 here either)
    base = _base_score(_get(mparam, "base_score"), "learner_model_param/base_score")
    if base.size == 1:
        base = np.repeat(base, K)
    if base.size != K:
        fail(LIB, f"base_score has {base.size} values for {K} outputs")
    base = base.astype(np.float32).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if base_link == "logit":  # (XGBoost bounds it, then takes the logit in float32)
            base = np.where((base >= 0) & (base <= 1), xgboost_logit(base), np.nan)
        elif base_link == "log":
            base = np.log(base)
    if not np.all(np.isfinite(base)):
        fail(LIB, "base_score is outside the objective's range")
    base = base.astype(np.float32).astype(np.float64)

    where.at = "learner/feature_names"
    names = learner.get("feature_names") or []
    types = learner.get("feature_types") or []
    if not isinstance(names, list) or not all(isinstance(s, str) for s in names):
        fail(LIB, "learner/feature_names is not an array of strings")
    if not isinstance(types, list) or not all(isinstance(s, str) for s in types):
        fail(LIB, "learner/feature_types is not an array of strings")
    if names and len(names) != n_features:
        fail(LIB, f"learner/feature_names has {len(names)} names for num_feature={n_features}")
    if types and len(types) != n_features:
        fail(LIB, f"learner/feature_types has {len(types)} types for num_feature={n_features}")
    if set(types) - _FEATURE_TYPES:
        fail(LIB, f"learner/feature_types holds {sorted(set(types) - _FEATURE_TYPES)[0]!r:.40}, "
                  f"not one of {sorted(_FEATURE_TYPES)}")
    names = names or [f"f{i}" for i in range(n_features)]
    types = types or ["float"] * n_features
    is_cat = np.array([t == "c" for t in types], dtype=bool)

    where.at = "gradient_booster/model"
    model = _dict(_get(gb, "model"), "gradient_booster/model")
    trees_d = _get(model, "trees")
    if not isinstance(trees_d, list):
        fail(LIB, "gradient_booster/model/trees is not an array")
    tree_info = _int_array(_get(model, "tree_info"), "gradient_booster/model/tree_info",
                           len(trees_d))
    if tree_info.size and (tree_info.min() < 0 or tree_info.max() >= K):
        ti = int(np.flatnonzero((tree_info < 0) | (tree_info >= K))[0])
        fail(LIB, f"tree {ti} adds to output {int(tree_info[ti])}, outside [0, {K}) "
                  "(gradient_booster/model/tree_info)")
    # vector leaves first (multi_strategy='multi_output_tree'): one tree a round for all the
    # classes was refused as a num_parallel_tree that does not divide the trees
    # (a tree_param that is not a dict fails in _read_tree, which reads the rest)
    for ti, t in enumerate(trees_d):
        tp = t.get("tree_param") if isinstance(t, dict) else None
        what = f"trees[{ti}]/tree_param/size_leaf_vector"
        if isinstance(tp, dict) and _param_int(tp, "size_leaf_vector", 1, what, 1 << 62) > 1:
            fail(LIB, "vector-leaf trees (multi_strategy='multi_output_tree', "
                      f"size_leaf_vector={tp['size_leaf_vector']}) are not supported: train "
                      "with multi_strategy='one_output_per_tree'")
    gparam = model.get("gbtree_model_param")
    parallel = 1
    if gparam is not None:
        _dict(gparam, "gradient_booster/model/gbtree_model_param")
        n = _param_int(gparam, "num_trees", len(trees_d), "gbtree_model_param/num_trees",
                       1 << 62)
        if n != len(trees_d):
            fail(LIB, f"gbtree_model_param/num_trees={n} but the model holds {len(trees_d)} "
                      "trees")
        # a round of a boosted forest (num_parallel_tree > 1, XGBRF*) is that many trees per
        # output: iteration_range and best_iteration count rounds (they counted trees)
        parallel = _param_int(gparam, "num_parallel_tree", 1,
                              "gbtree_model_param/num_parallel_tree", 1 << 30)
        if parallel < 1 or len(trees_d) % (parallel * K):
            fail(LIB, f"gbtree_model_param/num_parallel_tree={parallel} does not divide the "
                      f"{len(trees_d)} trees into rounds of {K} output(s)")
    where.at = "gradient_booster/model/cats"
    stored = _categories_of(model.get("cats"), n_features)

    # every tree's arrays, checked; then the category count per categorical feature: stored
    # training categories, else the largest category a split names (+1)
    parsed = []
    max_cat = np.zeros(n_features, dtype=np.int64)
    for ti, t in enumerate(trees_d):
        where.at = f"trees[{ti}]"
        p = _read_tree(t, ti, n_features, is_cat)
        for f, vals in p["cat_sets"].values():
            if vals.size:
                max_cat[f] = max(max_cat[f], int(vals.max()) + 1)
        parsed.append(p)
    categories = []
    for j in range(n_features):
        if not is_cat[j]:
            categories.append(None)
        elif stored[j] is not None:
            if max_cat[j] > len(stored[j]):
                fail(LIB, f"feature {names[j]!r}: a split names a category beyond the "
                          f"{len(stored[j])} stored categories")
            categories.append(stored[j])
        else:
            categories.append(range(int(max_cat[j])))
    where.at = "the features"
    info = feature_info(names, is_cat, categories, unseen_left=True, sparse_missing=True,
                        array_codes=any(s is not None for s in stored))
    n_cats = info.n_categories  # each categorical feature's categories + its unseen code
    check_categories(LIB, n_cats, names)
    check_bitset_words(LIB, [f for p in parsed for f, _ in p["cat_sets"].values()], n_cats)

    trees = []
    for ti, p in enumerate(parsed):
        where.at = f"trees[{ti}]"
        trees.append(_convert_tree(p, ti, n_cats))
    params = {"imported_from": "xgboost", "xgboost_objective": obj_name,
              "xgboost_version": ".".join(map(str, d.get("version", [])))}
    if objective == "reg:quantileerror":
        where.at = "learner/objective/quantile_loss_param"
        params["quantile_alpha"] = _quantile_alphas(learner, K)
    if parallel > 1:
        params["num_parallel_tree"] = parallel
    if objective == "rank:ndcg" and _ndcg_linear_gain(learner):
        # ndcg_exp_gain=False scores a grade g by g (hardwood's metrics took 2^g - 1: an
        # imported model's ndcg@10 0.982 against XGBoost's 0.988)
        params["label_gain"] = [float(g) for g in range(31)]  # grades 0..30, as ranking.py
    where.at = "the model"
    return make_model(LIB, trees, tree_info.tolist(), base, objective, K, info, params)


def _read_tree(t, ti, n_features, is_cat):
    """One tree's arrays, type- and range-checked."""
    w = f"trees[{ti}]"
    _dict(t, w)
    typed = {k: getattr(t[k], "ubj_type", None) for k in _UBJ_TREE_TYPES
             if isinstance(t.get(k), list)}
    if any(typed.values()):  # from UBJ: typed arrays, all of them of XGBoost's types
        bad = next((k for k, v in typed.items() if v not in _UBJ_TREE_TYPES[k]), None)
        if bad:
            fail(LIB, f"{w}/{bad} is a UBJ array of {_UBJ_NAMES.get(typed[bad], typed[bad])}; "
                      "XGBoost reads a tree's arrays all untyped or all typed as "
                      f"{'/'.join(_UBJ_NAMES[x] for x in _UBJ_TREE_TYPES[bad])} for {bad}")
    if "id" in t and (type(t["id"]) is not int or t["id"] != ti):
        fail(LIB, f"{w}/id is {t['id']!r:.40}, expected {ti}")
    tp = _dict(_get(t, "tree_param"), f"{w}/tree_param")  # (size_leaf_vector: checked above)
    n = _param_int(tp, "num_nodes", None, f"{w}/tree_param/num_nodes", MAX_NODES_PER_TREE)
    if n is None:
        fail(LIB, f"{w}/tree_param lacks num_nodes")
    if n == 0:
        fail(LIB, f"tree {ti} has no nodes")
    left = _get(t, "left_children")
    if isinstance(left, list) and len(left) != n:
        fail(LIB, f"{w}/left_children has {len(left)} nodes but {w}/tree_param/num_nodes is {n}")
    p = {"n": n}
    for key in ("left_children", "right_children", "split_indices"):
        p[key] = _int_array(_get(t, key), f"{w}/{key}", n)
    p["split_conditions"] = _float_array(_get(t, "split_conditions"), f"{w}/split_conditions", n)
    p["default_left"] = _flag_array(_get(t, "default_left"), f"{w}/default_left", n, True)
    # XGBoost < 1.5 wrote no split_type nor categories: all splits numeric
    p["split_type"] = (_flag_array(t["split_type"], f"{w}/split_type", n, False)
                       if "split_type" in t
                       else np.zeros(n, dtype=bool))
    for key in ("loss_changes", "sum_hessian"):  # statistics: optional, checked when present
        p[key] = _float_array(t[key], f"{w}/{key}", n) if key in t else np.zeros(n)
    left, right, feat = p["left_children"], p["right_children"], p["split_indices"]
    internal = left != -1
    bad = internal & ((left < 0) | (left >= n) | (right < 0) | (right >= n))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        fail(LIB, f"tree {ti}: node {i} has a child ({int(left[i])}, {int(right[i])}) outside "
                  f"[0, {n}) (left_children/right_children)")
    bad = internal & ((feat < 0) | (feat >= n_features))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        fail(LIB, f"tree {ti}: node {i} splits on feature {int(feat[i])}, outside "
                  f"[0, {n_features}) (split_indices)")
    cat_nodes = np.flatnonzero(internal & p["split_type"])
    if np.any(~is_cat[feat[cat_nodes]]):
        i = int(cat_nodes[np.flatnonzero(~is_cat[feat[cat_nodes]])[0]])
        fail(LIB, f"tree {ti}: categorical split on numeric feature {int(feat[i])} at node {i} "
                  "(split_type, feature_types)")
    num_nodes = np.flatnonzero(internal & ~p["split_type"])
    if np.any(is_cat[feat[num_nodes]]):
        i = int(num_nodes[np.flatnonzero(is_cat[feat[num_nodes]])[0]])
        fail(LIB, f"tree {ti}: numeric split on categorical feature {int(feat[i])} at node {i} "
                  "(split_type, feature_types)")
    # categorical splits: categories_nodes lists them in order; categories_segments/sizes cut
    # categories (the codes that go right) into one set per node
    cat_sets = {}
    if cat_nodes.size or any(t.get(k) for k in ("categories_nodes", "categories")):
        nodes = _int_array(_get(t, "categories_nodes"), f"{w}/categories_nodes")
        seg = _int_array(_get(t, "categories_segments"), f"{w}/categories_segments", nodes.size)
        size = _int_array(_get(t, "categories_sizes"), f"{w}/categories_sizes", nodes.size)
        cats = _int_array(_get(t, "categories"), f"{w}/categories")
        if not np.array_equal(nodes, cat_nodes):
            fail(LIB, f"tree {ti}: categories_nodes {nodes.tolist()[:8]} does not list the "
                      f"categorical splits {cat_nodes.tolist()[:8]} (split_type)")
        if (np.any(size < 0) or np.any(seg != np.concatenate([[0], np.cumsum(size)[:-1]]))
                or int(size.sum()) != cats.size):
            fail(LIB, f"tree {ti}: categories_segments/categories_sizes do not cut the "
                      f"{cats.size} categories")
        if cats.size and (cats.min() < 0 or cats.max() >= MAX_CATEGORIES):
            fail(LIB, f"tree {ti}: categories holds a category outside [0, {MAX_CATEGORIES})")
        for k, i in enumerate(nodes.tolist()):
            cat_sets[i] = (int(feat[i]), cats[seg[k]:seg[k] + size[k]])
    p["cat_sets"] = cat_sets
    return p


def _convert_tree(p, ti, n_cats):
    n = p["n"]
    left, right, feat = p["left_children"], p["right_children"], p["split_indices"]
    cond, dl = p["split_conditions"], p["default_left"]
    gain, hess = p["loss_changes"], p["sum_hessian"]
    with np.errstate(over="ignore"):
        cond32 = cond.astype(np.float32)
    b = TreeBuilder(LIB)
    b.reserve(n)
    for i in range(n):
        lc, rc = int(left[i]), int(right[i])
        if lc == -1:
            v = float(cond32[i])
            if not math.isfinite(v):
                fail(LIB, f"tree {ti}: leaf {i} has a non-finite value (split_conditions)")
            b.set_leaf(i, v, cover=float(hess[i]))
            continue
        f = int(feat[i])
        if i in p["cat_sets"]:
            right_set = p["cat_sets"][i][1]
            mask = np.ones(int(n_cats[f]), dtype=bool)  # not in the set -> left
            mask[right_set[right_set < mask.size]] = False
            b.set_split(i, f, 0.0, bool(dl[i]), lc, rc, cat_left=mask, gain=float(gain[i]),
                        cover=float(hess[i]))
        else:
            c = cond32[i]
            if np.isnan(c):
                fail(LIB, f"tree {ti}: node {i} has a NaN threshold (split_conditions)")
            if c == -np.inf:  # x < -inf holds for no x: hardwood's x <= t cannot say that
                fail(LIB, f"tree {ti}: node {i} splits at -inf (split_conditions)")
            thr = float32_boundary(np.nextafter(c, np.float32(-np.inf)))
            b.set_split(i, f, thr, bool(dl[i]), lc, rc, gain=float(gain[i]),
                        cover=float(hess[i]))
    # XGBoost's node ids: its pred_leaf numbers a lossguide tree's leaves by them (in the
    # order of growth), where breadth-first numbering gave other ids for the same leaves
    return b.finish(0, n_cats, keep_ids=True)
