"""Fuzz the XGBoost and LightGBM importers (issue 12).

Small models are trained here (a categorical feature, missing values, multiclass, a LightGBM
random forest), serialised (XGBoost JSON and UBJ, LightGBM text) and mutated with a fixed
seed: structured mutations (a value replaced by -1, 1e9, 2**31, NaN, inf, "x", null, [], {} or
a very long list; a key deleted; a list truncated; two arrays swapped; counts such as
num_nodes, num_leaves, num_cat, num_class or max_feature_idx changed; a tree dropped or
repeated) and byte-level ones (truncation, a flipped byte, a spliced chunk).

Each mutated model is imported and predicted in a subprocess under an address-space limit and
a per-case alarm, many cases to a subprocess. The allowed outcomes of a case:

* hardwood refuses it with an ImportModelError; or
* hardwood imports it and predicts what the native library predicts for the same mutated model
  (loaded in the native library in the same subprocess), to 1e-6; or
* the native library refuses (or crashes on, or hangs on) the mutated model, and hardwood's
  prediction is the unmutated model's. Sound because it means the mutation touched nothing
  that hardwood reads into a prediction: hardwood is lenient by design only about fields that
  do not change predictions (statistics such as sum_hessian, an absent iteration_indptr) where
  XGBoost insists on them; everything that decides a prediction it checks at least as strictly
  as the native library. A mutation that changes the prediction and that the native library
  refuses must be refused by hardwood too.

Anything else (another exception, a crash, a timeout, a MemoryError, a different prediction)
fails the test, naming the case. A case that kills its subprocess is re-run alone to confirm.
"""
import base64
import copy
import json
import math
import os
import random
import struct
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")

SEED = int(os.environ.get("HARDWOOD_FUZZ_SEED", 12))  # another seed: explore more cases
CASES_PER_FORMAT = int(os.environ.get("HARDWOOD_FUZZ_CASES", 120))
BATCH = 40  # cases per subprocess
MEMORY_LIMIT = 3 << 30  # RLIMIT_AS of a subprocess (numba, XGBoost and LightGBM need ~1.1 GiB)
CASE_SECONDS = 60  # SIGALRM per case (generous: the first case may compile kernels)
NATIVE_SECONDS = 10  # SIGALRM for the native library (LightGBM loops forever on a cycle)
# HARDWOOD_FUZZ_NATIVE_ALL=1: ask the native library about the cases hardwood refuses too
# (not needed to judge them: slower, for the figures only)
NATIVE_ALL = os.environ.get("HARDWOOD_FUZZ_NATIVE_ALL") == "1"
REPORT = os.environ.get("HARDWOOD_FUZZ_REPORT")  # a file to append every case's outcome to
LONG = 100_000  # length of the "very long list" replacement
# few threads and malloc arenas in a subprocess, so that the address-space limit does not
# depend on the machine's core count (each thread's arena reserves 64 MiB)
WORKER_ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2",
              "NUMBA_NUM_THREADS": "2"}

INTERESTING = [-1, 0, 1, 2, 1e9, 2 ** 31, 2 ** 63, -2 ** 31, float("nan"), float("inf"),
               float("-inf"), 0.5, 1e-45, 1e39, "x", "", "1", None, True, False, [], {},
               "LONG"]
INTERESTING_FLOATS = [0.5, -1.0, 0.0, -0.0, 1e9, 1e-45, 1e39, -1e39, float("nan"),
                      float("inf"), float("-inf")]
INTERESTING_INTS = [-1, 0, 1, 2, 3, 2 ** 31, -2 ** 31]
INTERESTING_COUNTS = [-1, 0, 1, 2, 3, 1000000000, 2147483648, 2 ** 40, "+1", "-1"]
INTERESTING_TOKENS = ["-1", "0", "1", "2", "1000000000", "2147483648", "nan", "inf", "-inf",
                      "x", "", "1.5", "1e309", "-0", "0x10", "4294967296"]


# -- the models ----------------------------------------------------------------------------------
def _X(kind):
    """The rows predicted: numeric columns with NaN and zeros, a categorical column of codes
    (seen, unseen, NaN; negative ones for LightGBM, which sends them right)."""
    rng = np.random.default_rng(3)
    X = np.c_[rng.normal(size=(48, 2)), rng.integers(0, 8, 48)].astype(np.float64)
    X[::5, 0] = np.nan
    X[1::7, 1] = 0.0
    X[2::6, 2] = np.nan
    X[3, 2], X[4, 2] = 50, 9
    if kind == "lightgbm":
        X[5, 2] = -1
        X[6, 0], X[7, 1] = np.inf, -np.inf
    return X


def _train_data(n=500):
    rng = np.random.default_rng(5)
    X = np.c_[rng.normal(size=(n, 2)), rng.integers(0, 8, n)]
    X[rng.random(n) < 0.1, 0] = np.nan
    y = np.nan_to_num(X[:, 0]) + 2.5 * np.isin(X[:, 2], [1, 4, 6]) + 0.5 * (X[:, 1] > 0.3)
    return X, y


def _xgb_models():
    X, y = _train_data()
    ft = ["q", "q", "c"]
    out = []
    for p, label, rounds in [
            ({"max_depth": 3, "max_cat_to_onehot": 1}, y, 4),
            ({"max_depth": 2, "objective": "multi:softprob", "num_class": 3},
             np.digitize(y, [0.5, 2.0]), 2)]:
        p = {"nthread": 1, **p}
        out.append(xgb.train(p, xgb.DMatrix(X, label, feature_types=ft,
                                            enable_categorical=True), rounds))
    return out


def _lgb_models():
    X, y = _train_data()
    base = {"verbose": -1, "num_threads": 1, "num_leaves": 6, "min_data_per_group": 5,
            "cat_smooth": 1, "min_data_in_leaf": 5}
    out = []
    for p, label, rounds in [
            ({}, y, 4),
            ({"objective": "multiclass", "num_class": 3}, np.digitize(y, [0.5, 2.0]), 2),
            ({"objective": "binary", "boosting": "rf", "bagging_freq": 1,
              "bagging_fraction": 0.6}, (y > 1).astype(float), 3),
            ({"zero_as_missing": True}, y, 2)]:
        out.append(lgb.train({**base, **p}, lgb.Dataset(X, label, categorical_feature=[2]),
                             rounds))
    return out


# -- UBJSON as XGBoost writes it (typed arrays kept, so that an unmutated model re-encodes to
# the same bytes) -----------------------------------------------------------------------------
_NUM = {b"i": ">b", b"U": ">B", b"I": ">h", b"l": ">i", b"L": ">q", b"d": ">f", b"D": ">d"}
_NP = {b"i": ">i1", b"U": ">u1", b"I": ">i2", b"l": ">i4", b"L": ">i8", b"d": ">f4",
       b"D": ">f8"}
_RANGE = {b"i": (-128, 127), b"U": (0, 255), b"I": (-2 ** 15, 2 ** 15 - 1),
          b"l": (-2 ** 31, 2 ** 31 - 1), b"L": (-2 ** 63, 2 ** 63 - 1)}


class Typed(list):
    """A UBJ array with its element type (``[$t#n``), or counted without one (``[#n``)."""
    typ = None
    counted = False


def ubj_decode(data):
    pos = [0]

    def take(n):
        out = data[pos[0]:pos[0] + n]
        pos[0] += n
        return out

    def num(m):
        fmt = _NUM[m]
        return struct.unpack(fmt, take(struct.calcsize(fmt)))[0]

    def length():
        return num(take(1))

    def value(m=None):
        m = take(1) if m is None else m
        if m in _NUM:
            return num(m)
        if m == b"S":
            return take(length()).decode()
        if m in (b"T", b"F"):
            return m == b"T"
        if m == b"Z":
            return None
        if m == b"[":
            out = Typed()
            if data[pos[0]:pos[0] + 1] == b"$":
                take(1)
                out.typ = take(1)
            if data[pos[0]:pos[0] + 1] == b"#":
                take(1)
                out.counted = True
                n = length()
                if out.typ in _NP:
                    dt = np.dtype(_NP[out.typ])
                    out.extend(np.frombuffer(take(n * dt.itemsize), dtype=dt).tolist())
                else:
                    out.extend(value(out.typ) for _ in range(n))
                return out
            while data[pos[0]:pos[0] + 1] != b"]":
                out.append(value())
            take(1)
            return out
        assert m == b"{", m
        out = {}
        while data[pos[0]:pos[0] + 1] != b"}":
            k = take(length()).decode()
            out[k] = value()
        take(1)
        return out

    return value()


def _f32_exact(v):
    with np.errstate(over="ignore"):
        return math.isnan(v) or float(np.float32(v)) == v


def _int_marker(v):
    for m in (b"i", b"U", b"I", b"l", b"L"):
        lo, hi = _RANGE[m]
        if lo <= v <= hi:
            return m
    return None


def ubj_encode(v):
    if v is None:
        return b"Z"
    if v is True or v is False:
        return b"T" if v else b"F"
    if isinstance(v, int):
        m = _int_marker(v)
        if m is None:  # beyond int64: as a (high-precision) number string XGBoost refuses
            s = str(v).encode()
            return b"H" + ubj_encode(len(s)) + s
        return m + struct.pack(_NUM[m], v)
    if isinstance(v, float):
        return b"d" + struct.pack(">f", v) if _f32_exact(v) else b"D" + struct.pack(">d", v)
    if isinstance(v, str):
        s = v.encode()
        return b"S" + b"L" + struct.pack(">q", len(s)) + s
    if isinstance(v, dict):
        return b"{" + b"".join(b"L" + struct.pack(">q", len(k.encode())) + k.encode()
                               + ubj_encode(x) for k, x in v.items()) + b"}"
    assert isinstance(v, list)
    typ = getattr(v, "typ", None)
    if typ in _NP and _fits(v, typ):
        return (b"[$" + typ + b"#L" + struct.pack(">q", len(v))
                + np.asarray(v, dtype=np.dtype(_NP[typ])).tobytes())
    if getattr(v, "counted", False) or typ is not None:
        return b"[#L" + struct.pack(">q", len(v)) + b"".join(map(ubj_encode, v))
    return b"[" + b"".join(map(ubj_encode, v)) + b"]"


def _fits(v, typ):
    if typ in (b"d", b"D"):
        return all(type(x) is float and (typ == b"D" or _f32_exact(x)) for x in v)
    lo, hi = _RANGE[typ]
    return all(type(x) is int and lo <= x <= hi for x in v)


# -- mutations -----------------------------------------------------------------------------------
def _interesting(rng, like=None):
    v = rng.choice(INTERESTING)
    if v == "LONG":
        return [like if like is not None and not isinstance(like, (list, dict)) else 0] * LONG
    return copy.deepcopy(v)


def _slots(obj, out, depth=0):
    """Every (container, key) of a decoded JSON model."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((obj, k))
            _slots(v, out, depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append((obj, i))
            _slots(v, out, depth + 1)
    return out


_PREDICTIVE = ["left_children", "right_children", "split_indices", "split_conditions",
               "default_left", "split_type", "categories", "categories_nodes"]
_COUNT_PATHS = [("learner", "learner_model_param", "num_feature"),
                ("learner", "learner_model_param", "num_class"),
                ("learner", "learner_model_param", "num_target"),
                ("learner", "gradient_booster", "model", "gbtree_model_param", "num_trees")]


def mutate_dict(d, rng):
    """A structured mutation of an XGBoost model (decoded JSON/UBJ), in place; its name."""
    trees = d["learner"]["gradient_booster"]["model"]["trees"]
    op = rng.choices(["replace", "value", "delete", "truncate", "swap", "count", "nudge",
                      "long", "tree"], [24, 20, 8, 8, 8, 12, 10, 5, 5])[0]
    slots = _slots(d, [])
    if op == "value":  # a number in an array replaced by another of the same JSON type
        t = rng.choice(trees)
        n = len(t["left_children"])
        if rng.random() < 0.7:  # a plausible value in an array that decides a prediction
            key = rng.choice([k for k in _PREDICTIVE if t.get(k)])
            c = t[key]
            k = rng.randrange(len(c))
            if key in ("default_left", "split_type"):
                c[k] = 1 - c[k]
            elif key == "split_conditions":
                c[k] = rng.choice(INTERESTING_FLOATS + [float(np.float32(rng.gauss(0, 1)))] * 4)
            elif key == "split_indices":
                c[k] = rng.randrange(3)
            elif key in ("left_children", "right_children") and rng.random() < 0.5:
                t["left_children"][k], t["right_children"][k] = \
                    t["right_children"][k], t["left_children"][k]
                return f"value: swap the children of node {k}"
            else:
                c[k] = rng.randrange(-1, n) if key != "categories" else rng.randrange(10)
            return f"value {key}[{k}]={c[k]!r}"
        c = rng.choice([v for v in t.values() if isinstance(v, list) and v])
        k = rng.randrange(len(c))
        if type(c[k]) is float:
            c[k] = rng.choice(INTERESTING_FLOATS + [rng.choice(c)])
        else:
            c[k] = rng.choice(INTERESTING_INTS + [len(c) - 1, rng.choice(c)])
        return f"value {c[k]!r}"
    if op == "replace":
        c, k = rng.choice(slots)
        c[k] = _interesting(rng, c[k])
        return f"replace {k!r}"
    if op == "delete":
        c, k = rng.choice([s for s in slots if isinstance(s[0], dict)])
        del c[k]
        return f"delete {k!r}"
    if op == "truncate":
        lists = [(c, k) for c, k in slots if isinstance(c[k], list) and c[k]]
        c, k = rng.choice(lists)
        del c[k][rng.randrange(len(c[k])):]
        return f"truncate {k!r}"
    if op == "swap":
        t = rng.choice(trees)
        keys = [k for k, v in t.items() if isinstance(v, list)]
        a, b = rng.sample(keys, 2)
        t[a], t[b] = t[b], t[a]
        return f"swap {a} {b}"
    if op == "count":
        if rng.random() < 0.5:
            c, k = rng.choice(trees)["tree_param"], "num_nodes"
        else:
            path = rng.choice(_COUNT_PATHS)
            c = d
            for p in path[:-1]:
                c = c[p]
            k = path[-1]
        old = int(c[k])
        v = rng.choice(INTERESTING_COUNTS + [old - 1, old + 1, old + 1])
        c[k] = str(v) if rng.random() < 0.85 else (v if isinstance(v, int) else 1)
        return f"count {k}={c[k]!r}"
    if op == "nudge":
        nums = [(c, k) for c, k in slots
                if type(c[k]) in (int, float) and not isinstance(c, dict)]
        c, k = rng.choice(nums)
        c[k] = c[k] + rng.choice([-1, 1]) if type(c[k]) is int else -c[k]
        return "nudge"
    if op == "long":
        lists = [(c, k) for c, k in slots if isinstance(c[k], list) and c[k]]
        c, k = rng.choice(lists)
        typ = getattr(c[k], "typ", None)
        c[k] = Typed([c[k][0]] * LONG)
        c[k].typ, c[k].counted = typ, True
        return f"long {k!r}"
    # tree: drop one, or repeat one (with or without its tree_info entry)
    model = d["learner"]["gradient_booster"]["model"]
    i = rng.randrange(len(trees))
    if rng.random() < 0.5:
        del trees[i]
        if rng.random() < 0.7:
            del model["tree_info"][i]
        return "drop tree"
    trees.append(copy.deepcopy(trees[i]))
    trees[-1]["id"] = len(trees) - 1
    if rng.random() < 0.7:
        model["tree_info"].append(model["tree_info"][i])
    return "repeat tree"


def mutate_bytes(data, rng, donor):
    op = rng.choice(["truncate", "flip", "flip", "splice", "cut"])
    n = len(data)
    if op == "truncate":
        return data[:rng.randrange(n)], "bytes truncate"
    if op == "flip":
        i = rng.randrange(n)
        b = rng.choice([data[i] ^ (1 << rng.randrange(8)), rng.randrange(256)])
        return data[:i] + bytes([b]) + data[i + 1:], "bytes flip"
    if op == "cut":
        i = rng.randrange(n)
        return data[:i] + data[i + rng.randrange(1, 64):], "bytes cut"
    i, j = rng.randrange(n), rng.randrange(len(donor))
    return data[:i] + donor[j:j + rng.randrange(1, 200)] + data[i:], "bytes splice"


_FLOATS = ["0.5", "-1", "0", "-0", "1e300", "-1e300", "1e-35", "-1e-35", "1.0000000180025095e-35",
           "nan", "inf", "-inf"]
_LGB_VALUES = {"threshold": _FLOATS + ["0", "1", "2"], "leaf_value": _FLOATS,
               "split_feature": ["0", "1", "2", "3", "-1"],
               "decision_type": [str(v) for v in range(16)] + ["-1", "16"],
               "left_child": ["-1", "-2", "-3", "0", "1", "2", "3", "-100"],
               "right_child": ["-1", "-2", "-3", "0", "1", "2", "3", "-100"],
               "cat_threshold": ["0", "1", "2", "255", "4294967295", "4294967296", "-1"],
               "cat_boundaries": ["0", "1", "2", "3"]}
_LGB_COUNTS = ["num_leaves", "num_cat", "max_feature_idx", "num_class",
               "num_tree_per_iteration", "cat_boundaries", "left_child", "right_child"]


def fix_tree_sizes(text):
    """Recompute tree_sizes, as LightGBM finds its trees by them."""
    lines = text.split("\n")
    starts, end, pos = [], None, 0
    for line in lines:
        if line.startswith("Tree="):
            starts.append(pos)
        if line == "end of trees" and end is None:
            end = pos
        pos += len(line.encode()) + 1
    if end is None:
        return text
    sizes = [b - a for a, b in zip(starts, starts[1:] + [end])]
    return "\n".join("tree_sizes=" + " ".join(map(str, sizes)) if line.startswith("tree_sizes=")
                     else line for line in lines)


def mutate_text(text, rng):
    """A structured mutation of a LightGBM model text; (new text, its name)."""
    head, rest = text.split("\nTree=", 1)
    body, tail = ("Tree=" + rest).split("end of trees", 1)
    blocks = ["Tree=" + b for b in body.split("Tree=")[1:]]
    op = rng.choices(["replace", "value", "delete", "truncate", "swap", "count", "nudge",
                      "long", "tree", "flag", "infos"], [20, 24, 6, 6, 6, 14, 10, 4, 4, 3, 3])[0]
    if op == "tree":
        i = rng.randrange(len(blocks))
        if rng.random() < 0.5:
            del blocks[i]
            name = "drop tree"
        else:
            blocks.append(blocks[i])
            name = "repeat tree"
        if rng.random() < 0.7:  # renumber
            blocks = [f"Tree={k}\n" + b.split("\n", 1)[1] for k, b in enumerate(blocks)]
        return head + "\n" + "".join(blocks) + "end of trees" + tail, name
    if op == "flag":
        if "\naverage_output\n" in head:
            return text.replace("\naverage_output\n", "\n", 1), "drop average_output"
        return text.replace("\nfeature_names=", "\naverage_output\nfeature_names=", 1), \
            "add average_output"
    lines = text.split("\n")
    end = lines.index("end of trees")
    kv = [i for i in range(end) if "=" in lines[i] and not lines[i].startswith("Tree=")]
    if op == "value":  # a token of a field that decides a prediction, by one of its kind
        i = rng.choice([i for i in kv if lines[i].split("=", 1)[0] in _LGB_VALUES])
        k, v = lines[i].split("=", 1)
        toks = v.split(" ")
        j = rng.randrange(len(toks))
        toks[j] = rng.choice(_LGB_VALUES[k] + [rng.choice(toks)])
        lines[i] = k + "=" + " ".join(toks)
        return "\n".join(lines), f"value {k}[{j}]={toks[j]}"
    if op == "infos":
        i = next(i for i in kv if lines[i].startswith("feature_infos="))
        toks = lines[i].split("=", 1)[1].split(" ")
        j = rng.randrange(len(toks))
        toks[j] = rng.choice(["1000000000", "0:1:1000000000", "-5", "none", "0:1:2",
                              "[0:1]", "x", "16777216"])
        lines[i] = "feature_infos=" + " ".join(toks)
        return "\n".join(lines), f"feature_infos[{j}]={toks[j]}"
    if op == "count":
        cands = [i for i in kv if lines[i].split("=", 1)[0] in _LGB_COUNTS]
        i = rng.choice(cands)
        k, v = lines[i].split("=", 1)
        toks = v.split(" ")
        j = rng.randrange(len(toks))
        try:
            old = int(toks[j])
        except ValueError:
            old = 0
        toks[j] = str(rng.choice(INTERESTING_COUNTS + [old - 1, old + 1, old + 1]))
        lines[i] = k + "=" + " ".join(toks)
        return "\n".join(lines), f"count {k}[{j}]={toks[j]}"
    i = rng.choice(kv)
    k, v = lines[i].split("=", 1)
    toks = v.split(" ")
    j = rng.randrange(len(toks))
    if op == "replace":
        toks[j] = rng.choice(INTERESTING_TOKENS)
        name = f"replace {k}[{j}]={toks[j]!r}"
    elif op == "delete":
        del lines[i]
        return "\n".join(lines), f"delete {k}"
    elif op == "truncate":
        del toks[j:]
        name = f"truncate {k}"
    elif op == "swap":
        block = [x for x in kv if abs(x - i) < 20 and x != i]
        i2 = rng.choice(block)
        k2, v2 = lines[i2].split("=", 1)
        lines[i], lines[i2] = k + "=" + v2, k2 + "=" + v
        return "\n".join(lines), f"swap {k} {k2}"
    elif op == "nudge":
        try:
            toks[j] = str(int(toks[j]) + rng.choice([-1, 1]))
        except ValueError:
            toks[j] = "-" + toks[j] if not toks[j].startswith("-") else toks[j][1:]
        name = f"nudge {k}[{j}]"
    else:  # long
        toks = [toks[0]] * LONG
        name = f"long {k}"
    lines[i] = k + "=" + " ".join(toks)
    return "\n".join(lines), name


def make_cases(fmt, payloads, rng):
    """(name, base model index, mutated bytes) for one format."""
    cases = [(f"identity {b}", b, p) for b, p in enumerate(payloads)]
    donor = b"".join(payloads)
    while len(cases) < CASES_PER_FORMAT:
        b = rng.randrange(len(payloads))
        data = payloads[b]
        if rng.random() < 0.25:
            data, name = mutate_bytes(data, rng, donor)
            if fmt == "lightgbm" and rng.random() < 0.5:
                try:
                    data = fix_tree_sizes(data.decode()).encode()
                    name += " (sizes fixed)"
                except UnicodeDecodeError:
                    pass
        elif fmt == "lightgbm":
            text, name = mutate_text(data.decode(), rng)
            if rng.random() < 0.85:
                text = fix_tree_sizes(text)
            else:
                name += " (sizes stale)"
            data = text.encode()
        else:
            d = ubj_decode(data) if fmt == "ubj" else json.loads(data)
            name = mutate_dict(d, rng)
            data = ubj_encode(d) if fmt == "ubj" else json.dumps(d).encode()
        cases.append((f"{fmt} #{len(cases)} on model {b}: {name}", b, data))
    return cases


# -- the subprocess ------------------------------------------------------------------------------
WORKER = r'''
import base64, json, resource, signal, sys, traceback, warnings
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
job = json.load(open(sys.argv[1]))
warnings.filterwarnings("ignore")
import numpy as np
import hardwood
from hardwood.importers import ImportModelError
fmt, X = job["format"], np.array(job["X"], dtype=np.float64)
native_all = job["native_all"]
if fmt == "lightgbm":
    import lightgbm as lgb
else:
    import xgboost as xgb

def emit(rec):
    sys.stdout.write(json.dumps(rec) + "\n")
    sys.stdout.flush()

def arr(a):
    return np.asarray(a, dtype=np.float64).tolist()

def native(data, Xc):
    if fmt == "lightgbm":
        b = lgb.Booster(model_str=data.decode("utf-8"), params={"num_threads": 1})
        return b.predict(Xc, num_threads=1), b.predict(Xc, raw_score=True, num_threads=1)
    b = xgb.Booster(model_file=bytearray(data))
    b.set_param({"nthread": 1})
    dm = xgb.DMatrix(Xc, feature_names=b.feature_names, feature_types=b.feature_types,
                     enable_categorical=True)
    return b.predict(dm), b.predict(dm, output_margin=True)

def hw(data):
    """hardwood's import and prediction; the rows as predicted; the rows to compare."""
    m = hardwood.import_model(data, format="lightgbm" if fmt == "lightgbm" else "xgboost")
    avg = m.params.get("lightgbm_average_output")
    # a categorical column holds codes: a mutation that makes a numeric column categorical
    # leaves fractions and inf in it, which hardwood refuses as data (by design): those
    # become NaN, for the native library too
    Xc = X.copy()
    rows = np.ones(len(X), dtype=bool)
    for j in np.flatnonzero(m.info.is_categorical):
        col = Xc[:, j]
        col[~np.isfinite(col) | (col != np.floor(col))] = np.nan
        if fmt == "xgboost":
            # XGBoost sends a category beyond those its splits name left, hardwood treats it
            # as missing (the default direction): compared where no such category occurs
            rows &= np.isnan(col) | ((col >= 0) & (col < m.info.n_categories[j]))
    return m.predict(Xc), m.predict(Xc, output="raw"), avg, Xc, rows

# warm up (compiles hardwood's kernels on the very first run; cached on disk after)
hw(base64.b64decode(job["warmup"]))
for i, case in enumerate(job["cases"]):
    data = base64.b64decode(case)
    signal.alarm(int(sys.argv[3]))
    Xc = X
    try:
        value, raw, avg, Xc, rows = hw(data)
        emit({"i": i, "stage": "hw", "ok": True, "value": arr(value), "raw": arr(raw),
              "avg": avg, "rows": rows.tolist()})
    except ImportModelError as e:
        emit({"i": i, "stage": "hw", "ok": False, "refused": str(e)[:300]})
        if not native_all:
            signal.alarm(0)
            continue
    except BaseException as e:
        emit({"i": i, "stage": "hw", "ok": False, "error": type(e).__name__,
              "trace": traceback.format_exc()[-1500:]})
        signal.alarm(0)
        continue
    signal.alarm(int(sys.argv[4]))
    try:
        value, raw = native(data, Xc)
        emit({"i": i, "stage": "native", "ok": True, "value": arr(value), "raw": arr(raw)})
    except BaseException as e:
        emit({"i": i, "stage": "native", "ok": False, "error": f"{type(e).__name__}: {e}"[:300]})
    signal.alarm(0)
'''


def run_batch(fmt, cases, warmup, tmpdir, tag):
    """Run ``cases`` (bytes) in subprocesses; {index: {"hw": rec, "native": rec or None,
    "died": why or None}}. A subprocess that dies is restarted after the case it died in."""
    results, start = {}, 0
    while start < len(cases):
        job = os.path.join(tmpdir, f"{tag}-{start}.json")
        with open(job, "w") as fh:
            json.dump({"format": "lightgbm" if fmt == "lightgbm" else "xgboost",
                       "X": _X(fmt if fmt == "lightgbm" else "xgboost").tolist(),
                       "warmup": base64.b64encode(warmup).decode(),
                       "native_all": NATIVE_ALL,
                       "cases": [base64.b64encode(c).decode() for c in cases[start:]]}, fh)
        try:
            p = subprocess.run([sys.executable, "-c", WORKER, job, str(MEMORY_LIMIT),
                                str(CASE_SECONDS), str(NATIVE_SECONDS)], capture_output=True,
                               encoding="utf-8", errors="replace", env=WORKER_ENV,
                               timeout=120 + CASE_SECONDS * 2 + 2 * (len(cases) - start))
            out, rc, err = p.stdout, p.returncode, p.stderr
        except subprocess.TimeoutExpired as e:
            out, rc, err = (e.stdout or b"").decode("utf-8", "replace"), "timeout", ""
        last = start - 1
        for line in out.splitlines():
            if not line.startswith("{"):
                continue
            rec = json.loads(line)
            i = start + rec["i"]
            results.setdefault(i, {"hw": None, "native": None, "died": None})
            results[i][rec["stage"]] = rec
            last = i
        if rc == 0:
            break
        if last < start and not out:
            raise AssertionError(f"the fuzz subprocess failed before any case (rc={rc}):\n"
                                 f"{err[-3000:]}")
        # the process died in case `dead`: after hardwood's record (the native library died)
        # or before it (hardwood died)
        dead = last if last >= start and results[last]["native"] is None and (
            results[last]["hw"]["ok"] or NATIVE_ALL) else last + 1
        results.setdefault(dead, {"hw": None, "native": None, "died": None})
        results[dead]["died"] = f"rc={rc} {err[-600:]}"
        start = dead + 1
    return results


def close(got, ref, rtol=1e-6):
    got, ref = np.asarray(got, float), np.asarray(ref, float)
    if got.shape != ref.shape:
        return False
    if not np.array_equal(np.isnan(got), np.isnan(ref)):
        return False
    ok = ~np.isnan(ref)
    if not ok.any():
        return True
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.mean(np.abs(ref[ok])) + 1e-12
        if not np.isfinite(scale):
            return np.array_equal(got[ok], ref[ok])
        err = np.abs(got[ok] - ref[ok]) / (np.abs(ref[ok]) + scale)
    return bool(np.all(err < rtol))


def _same(hw, value, raw):
    rows = np.asarray(hw.get("rows", [True] * len(value)), dtype=bool)
    if not close(np.asarray(hw["value"])[rows], np.asarray(value)[rows]):
        return False
    # LightGBM's raw_score on a random forest is the sum of the trees, hardwood's the mean
    return hw.get("avg") is not None or close(np.asarray(hw["raw"])[rows],
                                                np.asarray(raw)[rows])


def judge(name, res, original):
    """The outcome of one case: a category, or a failure message."""
    hw, nat, died = res["hw"], res["native"], res["died"]
    if hw is None:
        return None, f"{name}: hardwood died or hung ({died})"
    if not hw["ok"]:
        if "refused" in hw:
            return "refused", None
        return None, f"{name}: {hw['error']} instead of ImportModelError\n{hw['trace']}"
    if nat is not None and nat["ok"]:
        if _same(hw, nat["value"], nat["raw"]):
            return "matched", None
        return None, (f"{name}: hardwood predicts {np.round(hw['value'][:6], 6)}, the native "
                      f"library {np.round(nat['value'][:6], 6)}")
    # the native library refused, crashed or hung: hardwood must predict the unmutated model
    if _same(hw, *original):
        return "native refused, hardwood unaffected", None
    why = nat["error"] if nat is not None else f"died: {died}"
    return None, (f"{name}: the native library refuses it ({why[:200]}) but hardwood imports "
                  f"it, predicting {np.round(hw['value'][:6], 6)} instead of the unmutated "
                  f"model's {np.round(original[0][:6], 6)}")


def _native_predictions(fmt, models):
    X = _X("lightgbm" if fmt == "lightgbm" else "xgboost")
    out = []
    for b in models:
        if fmt == "lightgbm":
            out.append((b.predict(X), b.predict(X, raw_score=True)))
        else:
            dm = xgb.DMatrix(X, feature_types=b.feature_types, enable_categorical=True)
            out.append((b.predict(dm), b.predict(dm, output_margin=True)))
    return out


@pytest.mark.parametrize("fmt", ["json", "ubj", "lightgbm"])
def test_import_fuzz(fmt, tmp_path):
    rng = random.Random(f"{SEED}-{fmt}")
    if fmt == "lightgbm":
        models = _lgb_models()
        payloads = [b.model_to_string().encode() for b in models]
    else:
        models = _xgb_models()
        payloads = [bytes(b.save_raw(fmt)) for b in models]
        if fmt == "ubj":  # the encoder is faithful: the unmutated models re-encode exactly
            assert all(ubj_encode(ubj_decode(p)) == p for p in payloads)
    originals = _native_predictions(fmt, models)
    cases = make_cases(fmt, payloads, rng)
    chunks = [list(range(k, min(k + BATCH, len(cases)))) for k in range(0, len(cases), BATCH)]
    with ThreadPoolExecutor(2) as pool:
        parts = list(pool.map(
            lambda ch: (ch, run_batch(fmt, [cases[i][2] for i in ch], payloads[0],
                                      str(tmp_path), f"b{ch[0]}")), chunks))
    results = {}
    for ch, res in parts:
        for k, r in res.items():
            results[ch[k]] = r
    # a case that killed its subprocess: run it alone to confirm (not an effect of the others)
    for i, r in list(results.items()):
        if r["died"] is not None and (r["hw"] is None or r["native"] is None):
            alone = run_batch(fmt, [cases[i][2]], payloads[0], str(tmp_path), f"alone{i}")
            results[i] = alone.get(0, {"hw": None, "native": None, "died": "no output"})
    counts, failures = {}, []
    for i, (name, base, _) in enumerate(cases):
        res = results.get(i, {"hw": None, "native": None, "died": "no record"})
        kind, failure = judge(name, res, originals[base])
        if name.startswith("identity") and kind != "matched":
            failure = f"{name}: the unmutated model gives {kind}, not the native prediction"
        if failure:
            failures.append(failure)
        else:
            counts[kind] = counts.get(kind, 0) + 1
        if REPORT:
            nat = res["native"]
            with open(REPORT, "a") as fh:
                fh.write(json.dumps({
                    "case": name, "kind": kind, "failure": failure,
                    "hw": (res["hw"] or {}).get("refused") or (res["hw"] or {}).get("ok"),
                    "native": None if nat is None else (nat.get("error") or "ok"),
                    "native_same_as_original": None if nat is None or not nat["ok"] else
                    _same(nat, *originals[base])}) + "\n")
    summary = f"{fmt}: {len(cases)} cases, {counts}"
    print(summary)
    assert not failures, summary + "\n" + "\n\n".join(failures)
    assert len(results) == len(cases)
    assert counts.get("refused", 0) >= 0.2 * len(cases), summary
    assert counts.get("matched", 0) >= 0.15 * len(cases), summary  # the predict path ran
