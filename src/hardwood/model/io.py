"""The model file: versioned JSON, fully validated on load.

Numba kernels do no bounds checks, so nothing read from a file reaches a kernel before every
index and length in it has been checked here: a malformed file raises ``ModelFormatError``
(a ``ValueError``) and never crashes the process.

Layout (version 1)::

    {"format": "hardwood", "version": 1,
     "objective": str, "n_outputs": int, "base_score": [float] * n_outputs,
     "features": {"names": [str], "is_categorical": [bool], "categories": [null | [values]],
                  "unseen_left": [bool] (optional; see FeatureInfo.unseen_left),
                  "sparse_missing": bool (optional; see FeatureInfo.sparse_missing),
                  "array_codes": bool (optional; see FeatureInfo.array_codes)},
     "params": {...}, "best_iteration": int | null, "best_score": float | null,
     "evals_result": {data name: {metric: [float] * rounds}} (optional: the learning curves),
     "tree_group": [int] * n_trees,
     "trees": [{"feature": [...], "threshold": [...], "left": [...], "right": [...],
                "default_left": [...], "is_categorical": [...], "cat_offset": [...],
                "value": [...], "gain": [...], "cover": [...], "count": [...],
                "cat_bitsets": [...]}]}

Non-finite floats are written as the strings "nan", "inf" and "-inf".
"""
from __future__ import annotations

import json
import math

import numpy as np

from ..atomic_file import atomic_open

from ..data.convert import FeatureInfo
from ..objectives import OBJECTIVES, outputs_fit
from .tree import TREE_FIELDS, Tree

FORMAT = "hardwood"
VERSION = 1
# the objectives a model file may hold: the registry's names (importers/_build.py reads this)
KNOWN_OBJECTIVES = tuple(OBJECTIVES)


class ModelFormatError(ValueError):
    """A model file or object that is not a valid hardwood model."""


def _enc(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def _encode_floats(values):
    return [_enc(float(v)) for v in values]


_SKIP = object()


def _category_to_json(v, feature):
    if isinstance(v, np.generic):
        v = v.item()
    if not isinstance(v, (str, int, float)):  # bool is an int
        raise ValueError(f"cannot save the model: categorical feature {feature!r} has a category "
                         f"of type {type(v).__name__} ({v!r}); only strings and numbers can be "
                         "saved")
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"cannot save the model: categorical feature {feature!r} has the "
                         f"non-finite category {v!r}")
    return v


def _param_to_json(v):
    """A training parameter as JSON (non-finite floats as strings), or _SKIP."""
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return _enc(v)
    if isinstance(v, (list, tuple)):
        out = [_param_to_json(x) for x in v]
        return _SKIP if any(x is _SKIP for x in out) else out
    return _SKIP


def model_to_dict(model) -> dict:
    trees = []
    for t in model.trees:
        d = t.to_dict()
        d["threshold"] = _encode_floats(t.threshold)
        d["value"] = _encode_floats(t.value)
        d["gain"] = _encode_floats(t.gain)
        d["cover"] = _encode_floats(t.cover)
        trees.append(d)
    cats = []
    for name, c in zip(model.info.names, model.info.categories):
        cats.append(None if c is None else [_category_to_json(v, name) for v in c])
    params = {}
    for k, v in model.params.items():
        v = _param_to_json(v)
        if v is not _SKIP:
            params[str(k)] = v
    return {
        "format": FORMAT,
        "version": VERSION,
        "objective": model.objective,
        "n_outputs": int(model.n_outputs),
        "base_score": _encode_floats(model.base_score),
        "features": _features_to_json(model.info, cats),
        "params": params,
        "best_iteration": None if model.best_iteration is None else int(model.best_iteration),
        "best_score": None if model.best_score is None else _enc(float(model.best_score)),
        **_history_to_json(model),
        "tree_group": [int(v) for v in model.tree_group],
        "trees": trees,
    }


def _history_to_json(model) -> dict:
    """The learning curves, when the model has them. (Not the training profile: its
    timings differ run to run, and two trainings with one seed write the same file.)"""
    out = {}
    if model.evals_result:
        out["evals_result"] = {str(name): {str(m): _encode_floats(np.asarray(v, np.float64))
                                           for m, v in metrics.items()}
                               for name, metrics in model.evals_result.items()}
    return out


def _history_from_json(d) -> dict:
    """The learning curves of a model file, checked (optional)."""
    evals = d.get("evals_result", {})
    if not isinstance(evals, dict) or not all(isinstance(v, dict) for v in evals.values()):
        _fail("evals_result must map data names to objects of metric curves")
    curves = {}
    for name, metrics in evals.items():
        curves[name] = {}
        for m, values in metrics.items():
            if not isinstance(values, list):
                _fail(f"evals_result[{_short(name)}][{_short(m)}] must be a list of numbers")
            curves[name][m] = [_dec_float(v, f"evals_result[{_short(name)}][{_short(m)}]")
                               for v in values]
    return curves


def model_to_json(model) -> str:
    """The model's JSON text, checked as ``save_model`` checks it: ``to_json`` wrote text that
    ``load`` refused (uint64 categories of 2^63 and above) where ``save`` refused it."""
    return json.dumps(_loadable_dict(model, "write"), separators=(",", ":"), allow_nan=False)


def _loadable_dict(model, verb):
    doc = model_to_dict(model)
    try:  # never write what load would refuse
        model_from_dict(doc)
    except ModelFormatError as e:
        raise ValueError(f"cannot {verb} this model: the file would not load back ({e})") from None
    return doc


def save_model(model, path):
    text = json.dumps(_loadable_dict(model, "save"), separators=(",", ":"), allow_nan=False)
    with atomic_open(path, "w", encoding="utf-8") as fh:  # never half a model file
        fh.write(text)


# -- loading -----------------------------------------------------------------------------
def _fail(msg):
    raise ModelFormatError(f"invalid hardwood model: {msg}")


def _get(d, key, types, where):
    if not isinstance(d, dict):
        _fail(f"{where} must be an object")
    if key not in d:
        _fail(f"{where} lacks the field {key!r}")
    v = d[key]
    if not isinstance(v, types) or (isinstance(v, bool) and bool not in (types if isinstance(types, tuple) else (types,))):
        _fail(f"{where}.{key} has the wrong type ({type(v).__name__})")
    return v


def _dec_float(v, where):
    if isinstance(v, bool):
        _fail(f"{where} holds a boolean where a number belongs")
    if isinstance(v, (int, float)):
        try:
            return float(v)
        except OverflowError:
            _fail(f"{where} holds an integer too large for a float")
    if v == "nan":
        return float("nan")
    if v == "inf":
        return float("inf")
    if v == "-inf":
        return float("-inf")
    _fail(f"{where} holds {_short(v)} where a number belongs")


def _float_array(values, where):
    if not isinstance(values, list):
        _fail(f"{where} must be a list")
    return np.array([_dec_float(v, where) for v in values], dtype=np.float64).reshape(-1)


def _int_array(values, where, lo, hi):
    """A list of JSON integers in [lo, hi] (checked before any conversion, so that a huge
    integer cannot overflow) as int64."""
    if not isinstance(values, list):
        _fail(f"{where} must be a list")
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool):
            _fail(f"{where} holds {_short(v)} where an integer belongs")
        if not lo <= v <= hi:
            _fail(f"{where} holds {_short(v)}, outside [{lo}, {hi}]")
    return np.array(values, dtype=np.int64) if values else np.zeros(0, dtype=np.int64)


def _short(v):
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**30:
        return f"an integer of {v.bit_length()} bits"
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _bool_array(values, where):
    if not isinstance(values, list) or not all(isinstance(v, bool) for v in values):
        _fail(f"{where} must be a list of booleans")
    return np.array(values, dtype=bool)


def validate_tree(t: Tree, n_features, n_categories, is_cat_feature, where):
    """Check one tree's structure: lengths, indices, acyclicity, thresholds and bitsets."""
    n = t.feature.shape[0]
    if n == 0:
        _fail(f"{where} has no nodes")
    for name in TREE_FIELDS:
        if getattr(t, name).shape != (n,):
            _fail(f"{where}.{name} has length {getattr(t, name).shape[0]}, expected {n}")
    feat = t.feature.astype(np.int64)
    if feat.min() < -1 or feat.max() >= n_features:
        _fail(f"{where}.feature holds an index outside [-1, {n_features})")
    internal = feat >= 0
    ids = np.arange(n)
    for side in ("left", "right"):
        c = getattr(t, side).astype(np.int64)[internal]
        if c.size and (c.min() < 0 or c.max() >= n):
            _fail(f"{where}.{side} holds a child index outside [0, {n})")
        # children come after their parent: no cycles, no self loops
        if np.any(c <= ids[internal]):
            _fail(f"{where}.{side} points back to an earlier node (a cycle)")
    children = np.concatenate([t.left[internal], t.right[internal]]).astype(np.int64)
    if np.unique(children).size != children.size or np.any(children == 0):
        _fail(f"{where} has a node with more than one parent")
    if children.size != n - 1:
        _fail(f"{where} has nodes unreachable from the root")
    is_cat = t.is_categorical
    if np.any(is_cat & ~internal):
        _fail(f"{where} marks a leaf as categorical")
    if np.any(is_cat & internal & ~is_cat_feature[np.maximum(feat, 0)]):
        _fail(f"{where} has a categorical split on a numeric feature")
    num = internal & ~is_cat
    if np.any(np.isnan(t.threshold[num])):
        _fail(f"{where}.threshold is NaN at a numeric split")
    if not np.all(np.isfinite(t.value[~internal])):
        _fail(f"{where}.value is not finite at a leaf")
    nb = t.cat_bitsets.shape[0]
    cat_nodes = np.flatnonzero(is_cat)
    if cat_nodes.size:
        empty = np.asarray(n_categories, dtype=np.int64)[feat[cat_nodes]] == 0
        if empty.any():  # (every value unseen: the split's categories were lost)
            _fail(f"{where} splits categorical feature {int(feat[cat_nodes][empty][0])}, "
                  "whose category list is empty")
        # the predictor reads words cat_offset .. cat_offset + ceil(K / 32) - 1 of the bitsets
        words = np.maximum((np.asarray(n_categories, dtype=np.int64)[feat[cat_nodes]] + 31) // 32, 1)
        off = t.cat_offset[cat_nodes].astype(np.int64)
        bad = (off < 0) | (off + words > nb)
        if bad.any():
            _fail(f"{where}.cat_offset[{int(cat_nodes[np.argmax(bad)])}] points outside the "
                  f"tree's bitsets ({nb} words)")


def _features_to_json(info, cats):
    d = {"names": list(info.names),
         "is_categorical": [bool(b) for b in info.is_categorical],
         "categories": cats}
    if info.unseen_left is not None:
        d["unseen_left"] = [bool(b) for b in info.unseen_left]
    if info.sparse_missing:
        d["sparse_missing"] = True
    if info.array_codes:
        d["array_codes"] = True
    return d


def _feature_info(fd):
    names = _get(fd, "names", list, "features")
    if not all(isinstance(s, str) for s in names):
        _fail("features.names must be strings")
    if len(set(names)) != len(names):
        _fail("features.names holds duplicate names")
    is_cat = _bool_array(_get(fd, "is_categorical", list, "features"), "features.is_categorical")
    cats = _get(fd, "categories", list, "features")
    if not (len(names) == is_cat.size == len(cats)):
        _fail("features.names, is_categorical and categories differ in length")
    if not names:
        _fail("the model has no features")
    categories = []
    for j, c in enumerate(cats):
        if is_cat[j]:
            if not isinstance(c, list):
                _fail(f"features.categories[{j}] must list the categories of a categorical feature")
            seen = set()
            for v in c:
                if not isinstance(v, (str, int, float)):  # bool is an int
                    _fail(f"features.categories[{j}] holds {_short(v)}; categories are strings "
                          "or numbers")
                if isinstance(v, int) and not -2**63 <= v < 2**63:
                    _fail(f"features.categories[{j}] holds an integer out of range")
                if isinstance(v, float) and not math.isfinite(v):
                    _fail(f"features.categories[{j}] holds a non-finite number")
                if v in seen:
                    _fail(f"features.categories[{j}] lists {_short(v)} twice")
                seen.add(v)
            categories.append(list(c))
        else:
            if c is not None:
                _fail(f"features.categories[{j}] must be null for a numeric feature")
            categories.append(None)
    unseen_left = None
    if fd.get("unseen_left") is not None:
        unseen_left = _bool_array(_get(fd, "unseen_left", list, "features"),
                                  "features.unseen_left")
        if unseen_left.size != len(names):
            _fail("features.unseen_left and features.names differ in length")
        if (unseen_left & ~is_cat).any():
            _fail("features.unseen_left marks a numeric feature")
    flags = {}
    for flag in ("sparse_missing", "array_codes"):
        flags[flag] = fd.get(flag, False)
        if not isinstance(flags[flag], bool):
            _fail(f"features.{flag} must be true or false, got {_short(flags[flag])}")
    return FeatureInfo(names=names, is_categorical=is_cat, categories=categories,
                       unseen_left=unseen_left, **flags)


def model_from_dict(d: dict):
    from .model import Model

    if not isinstance(d, dict):
        _fail("the top level must be a JSON object")
    if d.get("format") != FORMAT:
        hint = ("; this is an XGBoost model: read it with hardwood.import_model"
                if "learner" in d and "format" not in d else "")
        _fail(f"'format' is {_short(d.get('format'))}, expected {FORMAT!r}{hint}")
    version = d.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        _fail("'version' must be an integer")
    if version > VERSION:
        raise ModelFormatError(f"model file version {version} is newer than this hardwood "
                               f"understands ({VERSION}); upgrade hardwood")
    if version < 1:
        _fail(f"unknown version {version}")
    objective = _get(d, "objective", str, "model")
    if objective not in OBJECTIVES:
        _fail(f"unknown objective {_short(objective)}; hardwood knows {', '.join(OBJECTIVES)}")
    n_outputs = _get(d, "n_outputs", int, "model")
    if n_outputs < 1 or n_outputs > 1_000_000:
        _fail(f"n_outputs {n_outputs} is out of range")
    if not outputs_fit(objective, n_outputs):
        _fail(f"n_outputs {n_outputs} does not fit objective {objective!r}")
    base = _float_array(_get(d, "base_score", list, "model"), "base_score")
    if base.shape != (n_outputs,) or not np.all(np.isfinite(base)):
        _fail("base_score must hold one finite number per output")
    info = _feature_info(_get(d, "features", dict, "model"))
    n_features = info.n_features
    n_categories = info.n_categories
    trees_d = _get(d, "trees", list, "model")
    group = _int_array(_get(d, "tree_group", list, "model"), "tree_group", 0, n_outputs - 1)
    if group.size != len(trees_d):
        _fail(f"tree_group has {group.size} entries for {len(trees_d)} trees")
    trees = []
    for i, td in enumerate(trees_d):
        where = f"trees[{i}]"
        if not isinstance(td, dict):
            _fail(f"{where} must be an object")
        arrays = {}
        for name, dtype in TREE_FIELDS.items():
            raw = _get(td, name, list, where)
            if dtype is np.bool_:
                arrays[name] = _bool_array(raw, f"{where}.{name}")
            elif np.issubdtype(dtype, np.integer):
                arrays[name] = _int_array(raw, f"{where}.{name}", -2**31, 2**31 - 1)
            else:
                arrays[name] = _float_array(raw, f"{where}.{name}")
        arrays["cat_bitsets"] = _int_array(_get(td, "cat_bitsets", list, where),
                                           f"{where}.cat_bitsets", 0, 2**32 - 1)
        with np.errstate(over="ignore"):  # gain is float32: a huge gain becomes inf, harmlessly
            arrays["gain"] = arrays["gain"].astype(np.float32)
        tree = Tree.from_arrays(**arrays)
        validate_tree(tree, n_features, n_categories, info.is_categorical, where)
        # a leaf's child fields mean nothing (validate_tree reads an internal node's only), but
        # the struct runtimes lay the children out from them: garbage there failed with a bare
        # IndexError; a leaf's are -1
        leaf = tree.feature < 0
        tree.left[leaf] = -1
        tree.right[leaf] = -1
        trees.append(tree)
    best_it = d.get("best_iteration")
    best_score = d.get("best_score")
    if best_score is not None:
        best_score = _dec_float(best_score, "best_score")
    params = d.get("params", {})
    if not isinstance(params, dict):
        _fail("params must be an object")
    params = {k: (_dec_float(v, "params") if v in ("nan", "inf", "-inf") else v)
              for k, v in params.items()}
    per = params.get("num_parallel_tree", 1)  # trees per output a round (imported XGBoost)
    if (not isinstance(per, int) or isinstance(per, bool) or per < 1
            or len(trees) % (per * max(n_outputs, 1))):
        _fail("params.num_parallel_tree must be a positive integer that divides the trees "
              "into rounds")
    round_size = per * max(n_outputs, 1)
    blocks = np.sort(group.reshape(-1, round_size), axis=1)
    if blocks.size and not (blocks == np.repeat(np.arange(max(n_outputs, 1)), per)).all():
        # slicing, iteration_range and best_iteration take each run of round_size trees as a
        # round: trees stored class by class loaded and predicted, but model[:1] took the wrong
        # trees (0.196 off)
        _fail(f"tree_group must give each round's trees together, {round_size} a round with "
              "each output's in it (trees stored output by output are not rounds)")
    for k in ("sklearn_average_output", "lightgbm_average_output"):
        v = params.get(k)
        if not (v is None or v is False) and not (  # (0 == False: not absent)
                isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
                and v > 0):
            _fail(f"params.{k} must be a positive tree count, got {v!r}")
    rounds = len(trees) // round_size
    if best_it is not None and (not isinstance(best_it, int) or isinstance(best_it, bool)
                                or not 0 <= best_it < max(1, rounds)):
        _fail("best_iteration is out of range")
    return Model(trees, group, base, objective, n_outputs, info, params=params,
                 best_iteration=best_it, best_score=best_score,
                 evals_result=_history_from_json(d))


def load_model(path_or_text):
    """Load a model saved by ``Model.save`` (a path, or the JSON text itself)."""
    if isinstance(path_or_text, (bytes, bytearray, memoryview)):
        _refuse_xgboost_ubj(bytes(path_or_text[:64]))
        try:
            text = bytes(path_or_text).decode("utf-8", errors="strict")
        except UnicodeDecodeError:
            _fail("the data is not UTF-8 JSON text")
    elif isinstance(path_or_text, str) and path_or_text.lstrip().startswith("{"):
        text = path_or_text
    else:
        try:
            with open(path_or_text, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            raise FileNotFoundError(f"no model file at {path_or_text!r}") from None
        _refuse_xgboost_ubj(raw)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            _fail("the file is not UTF-8 JSON text")
    try:
        d = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        if text.startswith("tree\n") or text.startswith("tree\r\n"):
            raise ModelFormatError("invalid hardwood model: this is a LightGBM text model; "
                                   "read it with hardwood.import_model") from None
        raise ModelFormatError(f"invalid hardwood model: not valid JSON ({e.msg} at line "
                               f"{e.lineno}, column {e.colno}); the file may be truncated") from None
    except RecursionError:
        _fail("JSON nested too deeply")
    except ValueError as e:  # e.g. an integer literal with too many digits
        _fail(f"not valid JSON ({e})")
    try:
        return model_from_dict(d)
    except RecursionError:
        _fail("JSON nested too deeply")


def _refuse_xgboost_ubj(head):
    """XGBoost's binary (UBJSON) model files open with ``{``, a length marker and its length,
    then the key ``learner``."""
    if head[:1] == b"{" and head[1:2] in (b"i", b"U", b"I", b"l", b"L") and b"learner" in head[:64]:
        raise ModelFormatError("invalid hardwood model: this is an XGBoost model in its binary "
                               "(UBJ) format; read it with hardwood.import_model")


def _reject_constant(name):
    # the writer spells non-finite floats as strings; bare NaN/Infinity is not JSON
    raise ValueError(f"{name} is not valid JSON (write non-finite numbers as strings)")
