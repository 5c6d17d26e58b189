"""Shared helpers of the importers: a tree builder that renumbers nodes breadth-first (the
loader wants every child id greater than its parent's), exact threshold conversion, and the
final validation of every imported model with ``model.io.validate_tree``."""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..data.convert import FeatureInfo
from ..model.io import KNOWN_OBJECTIVES, ModelFormatError, validate_tree
from ..model.model import Model
from ..model.tree import Tree

# Caps on the sizes a model file states, checked before anything of that size is allocated (a
# malformed or hostile file must give an ImportModelError, not exhaust the memory):
MAX_NODES_PER_TREE = 1 << 22
#: category codes of a feature lie in [0, MAX_CATEGORIES) (XGBoost's own limit, 2**24: the
#: integers a float32 holds exactly), and all the categorical features together hold at most
#: MAX_CATEGORIES categories
MAX_CATEGORIES = 1 << 24
#: features of a model (num_feature, max_feature_idx + 1)
MAX_FEATURES = 1 << 22
#: outputs of a model (classes, trees per iteration)
MAX_OUTPUTS = 1 << 16
#: 32-bit words of all the categorical splits' bitsets of a model (256 MiB); each categorical
#: split holds ceil(categories of its feature / 32) words
MAX_BITSET_WORDS = 1 << 26


class ImportModelError(ModelFormatError):
    """A peer model that cannot be imported (malformed, or a feature hardwood lacks)."""


def fail(lib, msg, cause=None):
    raise ImportModelError(f"cannot import the {lib} model: {msg}") from cause


def check_size(lib, what, value, cap, low=0):
    """``value`` (an int read from the file) must lie in [low, cap]."""
    if not low <= value <= cap:
        fail(lib, f"{what}={value} is outside [{low}, {cap}]")
    return value


def check_categories(lib, n_categories, names=None):
    """Category counts per feature: each and their total at most MAX_CATEGORIES."""
    n = np.asarray(n_categories, dtype=np.int64)
    if n.size and n.max() > MAX_CATEGORIES:
        j = int(np.argmax(n))
        name = f" {names[j]!r}" if names is not None else f" {j}"
        fail(lib, f"feature{name} has {int(n[j])} categories, more than {MAX_CATEGORIES}")
    if int(n.sum()) > MAX_CATEGORIES:
        fail(lib, f"the categorical features have {int(n.sum())} categories in all, more than "
                  f"{MAX_CATEGORIES}")


def check_bitset_words(lib, split_features, n_categories):
    """The bitsets of categorical splits on ``split_features`` fit in MAX_BITSET_WORDS."""
    f = np.asarray(split_features, dtype=np.int64)
    if f.size == 0:
        return
    words = np.maximum((np.asarray(n_categories, dtype=np.int64)[f] + 31) // 32, 1)
    if int(words.sum()) > MAX_BITSET_WORDS:
        fail(lib, f"the {f.size} categorical splits need {int(words.sum())} bitset words, more "
                  f"than {MAX_BITSET_WORDS}")


class Where:
    """The part of the model being read, for the messages of :func:`reading`."""

    def __init__(self, at="the model"):
        self.at = at


@contextmanager
def reading(lib):
    """Safety net around an importer's parsing: an exception that no check foresaw still
    becomes an ImportModelError naming the library and the part being read (``where.at``).
    The importers validate at the boundary with their own messages; this only catches what
    slips through. MemoryError passes unchanged: sizes are capped before allocating."""
    where = Where()
    try:
        yield where
    except (ImportModelError, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001 - turned into a clear error below
        fail(lib, f"{where.at} is malformed ({type(e).__name__}: {e})", cause=e)


def bool_words(mask) -> np.ndarray:
    """A bool mask as little-endian bitset words (bit c of word c // 32 is ``mask[c]``)."""
    mask = np.asarray(mask, dtype=bool).reshape(-1)
    n_words = max(1, (mask.size + 31) // 32)
    padded = np.zeros(n_words * 32, dtype=bool)
    padded[:mask.size] = mask
    return np.packbits(padded, bitorder="little").view("<u4").astype(np.uint32)


def float32_boundary(s32) -> float:
    """The float64 ``b`` with ``x <= b`` ⇔ ``float32(x) <= s32`` for every float64 ``x``
    (round to nearest even), which also gives ``x <= b`` ⇔ ``x <= s32`` for float32 ``x``.

    Peers that compare in float32 (XGBoost, scikit-learn's trees) thus agree with hardwood's
    ``x <= threshold`` for float32 and float64 inputs alike."""
    s = np.float32(s32)
    if np.isnan(s):
        return float("nan")
    if np.isinf(s):
        return float(s)  # +inf: everything left; -inf: only -inf (float32(x) = -inf) left
    up = np.nextafter(s, np.float32(np.inf))
    if np.isinf(up):
        # above the largest float32: float32(x) overflows to inf at 2**128 - 2**103
        return float(np.nextafter(np.float64(2.0 ** 128 - 2.0 ** 103), -np.inf))
    mid = (np.float64(s) + np.float64(up)) / 2.0  # exact in float64
    s_even = (int(np.array(s, dtype=np.float32).view(np.uint32)) & 1) == 0
    if s == 0 and up > 0:
        s_even = True  # ±0 has an even mantissa
    return float(mid if s_even else np.nextafter(mid, -np.inf))


def float32_floor(t64) -> np.float32:
    """The largest float32 not above ``t64``."""
    s = np.float32(t64)
    if np.float64(s) > t64:
        s = np.nextafter(s, np.float32(-np.inf))
    return s


class TreeBuilder:
    """Nodes in any order (children may come before or after their parents); ``finish``
    renumbers them breadth-first from the root and checks that they form a tree."""

    def __init__(self, lib):
        self.lib = lib
        self.feature, self.threshold, self.left, self.right = [], [], [], []
        self.default_left, self.cat_left, self.value = [], [], []
        self.gain, self.cover, self.count = [], [], []

    def _new(self):
        for a in (self.feature, self.threshold, self.left, self.right, self.default_left,
                  self.cat_left, self.value, self.gain, self.cover, self.count):
            a.append(None)
        if len(self.feature) > MAX_NODES_PER_TREE:
            fail(self.lib, f"a tree has more than {MAX_NODES_PER_TREE} nodes")
        return len(self.feature) - 1

    def reserve(self, n):
        first = len(self.feature)
        for _ in range(n):
            self._new()
        return first

    def set_leaf(self, i, value, cover=0.0, count=0):
        self.feature[i] = -1
        self.threshold[i] = 0.0
        self.left[i] = self.right[i] = -1
        self.default_left[i] = False
        self.value[i] = float(value)
        self.gain[i] = 0.0
        self.cover[i] = float(cover)
        self.count[i] = int(count)

    def set_split(self, i, feature, threshold, default_left, left, right, *, cat_left=None,
                  cat_words=None, gain=0.0, cover=0.0, count=0):
        """A categorical split gives the category codes that go left, either as ``cat_left``
        (a bool mask over the codes) or as ``cat_words`` (the same as bitset words, see
        :func:`bool_words`); codes beyond the feature's category count are dropped."""
        if cat_left is not None:
            cat_words = bool_words(cat_left)
        self.feature[i] = int(feature)
        self.threshold[i] = float(threshold) if cat_words is None else 0.0
        self.left[i] = int(left)
        self.right[i] = int(right)
        self.default_left[i] = bool(default_left)
        self.cat_left[i] = None if cat_words is None else np.asarray(cat_words, dtype=np.uint32)
        self.value[i] = 0.0
        self.gain[i] = float(gain) if np.isfinite(gain) else 0.0
        self.cover[i] = float(cover)
        self.count[i] = int(count)

    def leaf(self, value, **kw):
        i = self._new()
        self.set_leaf(i, value, **kw)
        return i

    def split(self, *args, **kw):
        i = self._new()
        self.set_split(i, *args, **kw)
        return i

    def copy_subtree(self, root):
        """A fresh copy of the subtree under ``root``; returns the copy's root."""
        mapping = {}
        stack = [root]
        order = []
        while stack:
            i = stack.pop()
            if i in mapping:
                fail(self.lib, "a tree has a cycle or a shared node")
            if self.feature[i] is None:
                fail(self.lib, f"node {i} of a tree is referenced but never defined")
            mapping[i] = self._new()
            order.append(i)
            if self.feature[i] is not None and self.feature[i] >= 0:
                stack += [self.left[i], self.right[i]]
        for i in order:
            j = mapping[i]
            if self.feature[i] < 0:
                self.set_leaf(j, self.value[i], cover=self.cover[i], count=self.count[i])
            else:
                self.set_split(j, self.feature[i], self.threshold[i], self.default_left[i],
                               mapping[self.left[i]], mapping[self.right[i]],
                               cat_words=self.cat_left[i], gain=self.gain[i],
                               cover=self.cover[i], count=self.count[i])
        return mapping[root]

    def scale_cover(self, root, factor):
        """Multiply the cover of every node under ``root`` (itself included) by ``factor``."""
        stack = [root]
        while stack:
            i = stack.pop()
            self.cover[i] *= factor
            if self.feature[i] >= 0:
                stack += [self.left[i], self.right[i]]

    def finish(self, root, n_categories, keep_ids=False) -> Tree:
        """The checked tree, its nodes numbered breadth first; ``keep_ids``: numbered as the
        source numbers them where they can be (the root 0, every node reached, children
        after their parent), so that leaf ids (``output='leaf'``) are the source's."""
        n = len(self.feature)
        if not 0 <= root < n:
            fail(self.lib, "a tree has no root node")
        order = [root]
        seen = np.zeros(n, dtype=bool)
        seen[root] = True
        k = 0
        while k < len(order):
            i = order[k]
            k += 1
            f = self.feature[i]
            if f is None:
                fail(self.lib, f"node {i} of a tree is referenced but never defined")
            if f >= 0:
                for c in (self.left[i], self.right[i]):
                    if not 0 <= c < n:
                        fail(self.lib, f"node {i} has a child index {c} outside [0, {n})")
                    if seen[c]:
                        fail(self.lib, f"node {c} is reached twice (a cycle or a shared node)")
                    seen[c] = True
                    order.append(c)
        if keep_ids and root == 0 and len(order) == n and all(
                self.left[i] > i and self.right[i] > i for i in order if self.feature[i] >= 0):
            order = list(range(n))
        new_id = np.full(n, -1, dtype=np.int64)
        new_id[order] = np.arange(len(order))
        m = len(order)
        arr = {name: [] for name in ("feature", "threshold", "left", "right", "default_left",
                                     "is_categorical", "cat_offset", "value", "gain", "cover",
                                     "count")}
        words = []
        n_words = 0
        for i in order:
            f = self.feature[i]
            internal = f >= 0
            mask = self.cat_left[i] if internal else None  # bitset words, or None
            arr["feature"].append(f)
            arr["threshold"].append(self.threshold[i])
            arr["left"].append(int(new_id[self.left[i]]) if internal else -1)
            arr["right"].append(int(new_id[self.right[i]]) if internal else -1)
            arr["default_left"].append(self.default_left[i])
            arr["is_categorical"].append(mask is not None)
            if mask is not None:
                k_f = int(n_categories[f])
                w = np.zeros(max(1, (k_f + 31) // 32), dtype=np.uint32)
                nw = min(w.size, mask.size)
                w[:nw] = mask[:nw]
                if k_f % 32:  # drop the codes >= k_f
                    w[k_f // 32] &= np.uint32((1 << (k_f % 32)) - 1)
                elif k_f == 0:
                    w[0] = 0
                arr["cat_offset"].append(n_words)
                words.append(w)
                n_words += w.size
            else:
                arr["cat_offset"].append(-1)
            arr["value"].append(self.value[i])
            arr["gain"].append(self.gain[i])
            arr["cover"].append(self.cover[i])
            arr["count"].append(self.count[i])
        bits = np.concatenate(words) if words else np.zeros(0, dtype=np.uint32)
        del m
        return Tree.from_arrays(**arr, cat_bitsets=bits)


def make_model(lib, trees, tree_group, base_score, objective, n_outputs, info: FeatureInfo,
               params=None):
    """Build the Model and validate every tree as the model-file loader would."""
    if objective not in KNOWN_OBJECTIVES:
        fail(lib, f"objective {objective!r} has no hardwood equivalent")
    base = np.asarray(base_score, dtype=np.float64).reshape(-1)
    if base.shape != (n_outputs,) or not np.all(np.isfinite(base)):
        fail(lib, f"the base score {base.tolist()} does not give one finite number per output")
    if not trees:
        fail(lib, "the model has no trees")
    for i, t in enumerate(trees):
        try:
            validate_tree(t, info.n_features, info.n_categories, info.is_categorical,
                          f"trees[{i}]")
        except ModelFormatError as e:
            fail(lib, str(e))
    group = np.asarray(tree_group, dtype=np.int32)
    if group.shape != (len(trees),) or group.min() < 0 or group.max() >= n_outputs:
        fail(lib, "the tree-to-output map is out of range")
    return Model(trees, group, base, objective, n_outputs, info, params=dict(params or {}))


def feature_info(names, is_cat, categories, unseen_left=False, sparse_missing=False,
                 array_codes=False):
    """``unseen_left``: the library sends a category its training never saw left at every
    split (XGBoost), rather than down the missing-value branch. ``sparse_missing``: the
    library reads the entries a sparse matrix leaves out as missing values (XGBoost).
    ``array_codes``: the categories are a pandas frame's, and the library reads a numeric
    array's categorical columns as their codes (XGBoost, LightGBM)."""
    is_cat = np.asarray(is_cat, dtype=bool)
    cats = [list(c) if is_cat[j] else None for j, c in enumerate(categories)]
    names = [str(s) for s in names]
    if len(set(names)) != len(names):
        names = [f"f{i}" for i in range(len(names))]
    return FeatureInfo(names=names, is_categorical=is_cat, categories=cats,
                       unseen_left=is_cat.copy() if unseen_left and is_cat.any() else None,
                       sparse_missing=bool(sparse_missing), array_codes=bool(array_codes))
