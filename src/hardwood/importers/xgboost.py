"""XGBoost models (Booster, the scikit-learn wrappers, JSON and UBJ files) → hardwood.

Split rule: XGBoost sends ``float32(x) < t`` left (``t`` a float32), hardwood sends
``x <= threshold`` left. With ``s = nextafter(t, -inf)`` in float32 the rule is
``float32(x) <= s``, and :func:`float32_boundary` turns that into one float64 threshold that is
exact for float32 *and* float64 inputs. Categorical splits list the categories that go
*right*; hardwood stores the complement (the categories that go left) as a bitset.
"""
from __future__ import annotations

import json
import math
import os
import struct

import numpy as np

from ._build import TreeBuilder, fail, feature_info, float32_boundary, make_model

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
        return typ, count

    def _array(self):
        typ, count = self._container_header()
        if typ in _UBJ_NP:
            dt = np.dtype(_UBJ_NP[typ])
            raw = self._take(count * dt.itemsize)
            return np.frombuffer(raw, dtype=dt).astype(dt.newbyteorder("=")).tolist()
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
    """The model as XGBoost's JSON dict, from a Booster, an XGBModel, a path, bytes or a dict."""
    if isinstance(obj, dict):
        return obj
    if hasattr(obj, "get_booster"):
        obj = obj.get_booster()
    if type(obj).__name__ == "Booster" and hasattr(obj, "save_raw"):
        return json.loads(bytes(obj.save_raw("json")).decode("utf-8"))
    if isinstance(obj, (str, os.PathLike)):
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


def _num(v, what):
    if isinstance(v, str):
        v = v.strip()
        if v.startswith("[") and v.endswith("]"):
            return [_num(x, what) for x in v[1:-1].split(",") if x.strip()]
    try:
        return float(v)
    except (TypeError, ValueError):
        fail(LIB, f"{what} is not a number: {v!r}")


def _get(d, *keys):
    cur = d
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            fail(LIB, f"the model lacks {'/'.join(keys)}")
        cur = cur[k]
    return cur


def _categories_of(cats, n_features):
    """Training categories per feature stored by XGBoost ≥ 3 (``cats``), else None."""
    out = [None] * n_features
    if not isinstance(cats, dict) or not cats.get("enc"):
        return out
    enc = cats["enc"]
    if len(enc) != n_features:
        return out
    for j, e in enumerate(enc):
        if not isinstance(e, dict):
            continue
        values = e.get("values") or []
        offsets = e.get("offsets") or []
        if offsets:
            raw = bytes(int(v) & 0xFF for v in values)
            out[j] = [raw[offsets[i]:offsets[i + 1]].decode("utf-8", errors="replace")
                      for i in range(len(offsets) - 1)]
        elif values:
            out[j] = [v for v in values]
    return out


def import_xgboost(obj):
    d = model_dict(obj)
    learner = _get(d, "learner")
    gb = _get(learner, "gradient_booster")
    name = gb.get("name")
    if name == "dart":
        fail(LIB, "DART boosters are not supported (their tree weights depend on dropout); "
                  "train with booster='gbtree'")
    if name != "gbtree":
        fail(LIB, f"booster {name!r} is not supported (only 'gbtree')")
    mparam = _get(learner, "learner_model_param")
    n_features = int(_num(mparam.get("num_feature", 0), "num_feature"))
    num_class = int(_num(mparam.get("num_class", 0), "num_class"))
    num_target = int(_num(mparam.get("num_target", 1), "num_target"))
    if num_target > 1:
        fail(LIB, f"multi-target models (num_target={num_target}) are not supported")
    if n_features < 1:
        fail(LIB, "the model has no features")
    obj_name = _get(learner, "objective", "name")
    if obj_name not in _OBJ:
        fail(LIB, f"objective {obj_name!r} is not supported")
    objective, base_link = _OBJ[obj_name]
    K = max(num_class, 1)
    if objective in ("multi:softprob", "multi:softmax") and K < 2:
        fail(LIB, f"{obj_name} needs num_class >= 2")
    if objective not in ("multi:softprob", "multi:softmax"):
        K = 1
    base = _num(mparam.get("base_score", "0.5"), "base_score")
    base = np.atleast_1d(np.asarray(base, dtype=np.float64))
    if base.size == 1:
        base = np.repeat(base, K)
    if base.size != K:
        fail(LIB, f"base_score has {base.size} values for {K} outputs")
    base = base.astype(np.float32).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if base_link == "logit":
            base = np.log(base / (1.0 - base))
        elif base_link == "log":
            base = np.log(base)
    if not np.all(np.isfinite(base)):
        fail(LIB, "base_score is outside the objective's range")
    base = base.astype(np.float32).astype(np.float64)

    names = learner.get("feature_names") or [f"f{i}" for i in range(n_features)]
    types = learner.get("feature_types") or ["float"] * n_features
    if len(names) != n_features or len(types) != n_features:
        fail(LIB, "feature_names/feature_types do not match num_feature")
    is_cat = np.array([t == "c" for t in types], dtype=bool)

    model = _get(gb, "model")
    trees_d = _get(model, "trees")
    tree_info = model.get("tree_info", [0] * len(trees_d))
    if len(tree_info) != len(trees_d):
        fail(LIB, "tree_info and trees differ in length")
    stored = _categories_of(model.get("cats"), n_features)
    # category count per categorical feature: stored training categories, else the largest
    # category a split names (+1)
    max_cat = np.zeros(n_features, dtype=np.int64)
    for t in trees_d:
        cn = t.get("categories_nodes") or []
        if not cn:
            continue
        seg = t["categories_segments"]
        size = t["categories_sizes"]
        cats = t["categories"]
        feats = t["split_indices"]
        for k, nid in enumerate(cn):
            if not (0 <= nid < len(feats)) or not (0 <= feats[nid] < n_features):
                fail(LIB, "a categorical split names a node or feature out of range")
            vals = cats[seg[k]:seg[k] + size[k]]
            if vals:
                if min(vals) < 0 or max(vals) >= 1 << 24:
                    fail(LIB, "a categorical split names a category out of range")
                max_cat[feats[nid]] = max(max_cat[feats[nid]], max(vals) + 1)
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
            categories.append(list(range(int(max_cat[j]))))
    info = feature_info(names, is_cat, categories)
    n_cats = info.n_categories

    trees, groups = [], []
    for ti, t in enumerate(trees_d):
        tp = t.get("tree_param", {})
        if int(_num(tp.get("size_leaf_vector", 1), "size_leaf_vector")) > 1:
            fail(LIB, "vector-leaf trees are not supported")
        trees.append(_convert_tree(t, ti, n_features, is_cat, n_cats))
        g = int(tree_info[ti])
        if not 0 <= g < K:
            fail(LIB, f"tree {ti} adds to output {g}, outside [0, {K})")
        groups.append(g)
    params = {"imported_from": "xgboost", "xgboost_objective": obj_name,
              "xgboost_version": ".".join(map(str, d.get("version", [])))}
    return make_model(LIB, trees, groups, base, objective, K, info, params)


def _convert_tree(t, ti, n_features, is_cat, n_cats):
    left = t["left_children"]
    right = t["right_children"]
    feat = t["split_indices"]
    cond = t["split_conditions"]
    dl = t["default_left"]
    n = len(left)
    for name in ("right_children", "split_indices", "split_conditions", "default_left"):
        if len(t[name]) != n:
            fail(LIB, f"tree {ti}: {name} has length {len(t[name])}, expected {n}")
    if n == 0:
        fail(LIB, f"tree {ti} has no nodes")
    stype = t.get("split_type") or [0] * n
    gain = t.get("loss_changes") or [0.0] * n
    hess = t.get("sum_hessian") or [0.0] * n
    cat_of = {}
    for k, nid in enumerate(t.get("categories_nodes") or []):
        s = t["categories_segments"][k]
        cat_of[nid] = t["categories"][s:s + t["categories_sizes"][k]]
    b = TreeBuilder(LIB)
    b.reserve(n)
    for i in range(n):
        lc, rc = int(left[i]), int(right[i])
        if lc == -1:
            v = float(np.float32(cond[i]))
            if not math.isfinite(v):
                fail(LIB, f"tree {ti}: leaf {i} has a non-finite value")
            b.set_leaf(i, v, cover=float(hess[i]))
            continue
        f = int(feat[i])
        if not 0 <= f < n_features:
            fail(LIB, f"tree {ti}: node {i} splits on feature {f}, outside [0, {n_features})")
        if not (0 <= lc < n and 0 <= rc < n):
            fail(LIB, f"tree {ti}: node {i} has a child outside [0, {n})")
        if int(stype[i]) == 1:
            if not is_cat[f]:
                fail(LIB, f"tree {ti}: categorical split on numeric feature {f}")
            right_set = np.asarray(cat_of.get(i, []), dtype=np.int64)
            mask = np.ones(int(n_cats[f]), dtype=bool)  # not in the set -> left
            mask[right_set[right_set < mask.size]] = False
            b.set_split(i, f, 0.0, bool(dl[i]), lc, rc, cat_left=mask, gain=float(gain[i]),
                        cover=float(hess[i]))
        else:
            c = np.float32(cond[i])
            if np.isnan(c):
                fail(LIB, f"tree {ti}: node {i} has a NaN threshold")
            thr = float32_boundary(np.nextafter(c, np.float32(-np.inf)))
            b.set_split(i, f, thr, bool(dl[i]), lc, rc, gain=float(gain[i]),
                        cover=float(hess[i]))
    return b.finish(0, n_cats)
