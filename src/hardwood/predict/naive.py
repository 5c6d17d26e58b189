"""The reference predictor: every row walks every tree. A Numba kernel, parallel over rows.

It works on a :class:`PackedForest`: all trees' node arrays concatenated, child indices made
absolute. Categorical values arrive as category codes (see ``data.convert``); a code at or
beyond the field's category count, or NaN, follows the default direction.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange


@dataclass
class PackedForest:
    feature: np.ndarray  # int32
    threshold: np.ndarray  # float64
    left: np.ndarray  # int32 (absolute)
    right: np.ndarray  # int32 (absolute)
    default_left: np.ndarray  # bool
    is_categorical: np.ndarray  # bool
    cat_offset: np.ndarray  # int64 (absolute into bitsets)
    value: np.ndarray  # float64
    bitsets: np.ndarray  # uint32
    roots: np.ndarray  # int64, first node of each tree
    tree_group: np.ndarray  # int32, output each tree adds to
    n_categories: np.ndarray  # int64 per feature


def pack(trees, tree_group, n_categories) -> PackedForest:
    sizes = np.array([t.n_nodes for t in trees], dtype=np.int64)
    roots = np.zeros(len(trees), dtype=np.int64)
    if len(trees):
        roots[1:] = np.cumsum(sizes)[:-1]
    wsizes = np.array([t.cat_bitsets.size for t in trees], dtype=np.int64)
    woff = np.zeros(len(trees), dtype=np.int64)
    if len(trees):
        woff[1:] = np.cumsum(wsizes)[:-1]

    def cat(name, dtype):
        if not trees:
            return np.zeros(0, dtype=dtype)
        return np.concatenate([getattr(t, name) for t in trees], dtype=dtype,
                              casting="unsafe")

    feature = cat("feature", np.int32)
    left = cat("left", np.int64)
    right = cat("right", np.int64)
    cat_offset = cat("cat_offset", np.int64)
    _absolute(feature, left, right, cat_offset, roots, woff)
    return PackedForest(
        feature=feature, threshold=cat("threshold", np.float64),
        left=left.astype(np.int32), right=right.astype(np.int32),
        default_left=cat("default_left", np.bool_),
        is_categorical=cat("is_categorical", np.bool_), cat_offset=cat_offset,
        value=cat("value", np.float64), bitsets=cat("cat_bitsets", np.uint32),
        roots=roots, tree_group=np.asarray(tree_group, dtype=np.int32),
        n_categories=np.asarray(n_categories, dtype=np.int64))


@njit(cache=True, nogil=True)
def _absolute(feature, left, right, cat_offset, roots, woff):
    """In place: child links made absolute (-1 at leaves), bitset offsets too (-1 where none),
    tree ``k``'s nodes starting at ``roots[k]``, its bitset words at ``woff[k]``."""
    n = feature.shape[0]
    for k in range(roots.shape[0]):
        end = roots[k + 1] if k + 1 < roots.shape[0] else n
        for i in range(roots[k], end):
            if feature[i] >= 0:
                left[i] += roots[k]
                right[i] += roots[k]
            else:
                left[i] = -1
                right[i] = -1
            cat_offset[i] = cat_offset[i] + woff[k] if cat_offset[i] >= 0 else -1


@njit(cache=True, nogil=True, inline="always")
def goes_left(x, node, feature, threshold, default_left, is_cat, cat_offset, bitsets,
              n_categories):
    """Whether row ``x`` goes left at internal node ``node``: the split rule of every walk.
    NaN follows the default direction; a categorical code goes left when its bit is set, and
    a code below 0 or at or beyond the field's category count follows the default direction;
    a number goes left when ``x <= threshold``."""
    f = feature[node]
    v = x[f]
    if np.isnan(v):
        return default_left[node]
    if is_cat[node]:
        c = np.int64(v)
        if c < 0 or c >= n_categories[f]:
            return default_left[node]
        return (bitsets[cat_offset[node] + (c >> 5)] >> np.uint32(c & 31)) & np.uint32(1) == 1
    return v <= threshold[node]


@njit(cache=True, nogil=True, inline="always")
def goes_left_numeric(v, threshold, default_left):
    """:func:`goes_left` at a numeric split, given the row's value ``v``, without branches
    (NaN compares false and takes ``default_left``): for loops that visit every split, where a
    branch on the data is mispredicted half the time."""
    return (v <= threshold) | (np.isnan(v) & default_left)


@njit(cache=True, nogil=True, inline="always")
def _leaf_of(x, node, feature, threshold, left, right, default_left, is_cat, cat_offset,
             bitsets, n_categories):
    while feature[node] >= 0:
        if goes_left(x, node, feature, threshold, default_left, is_cat, cat_offset, bitsets,
                     n_categories):
            node = left[node]
        else:
            node = right[node]
    return node


# rows the parallel walks take through each tree in turn (as XGBoost's blocks of 64): a tree's
# nodes stay in cache for the block, where a row taken through every tree in turn reads the
# whole model once per row. Each row still adds its trees in order: the same sums, bit for bit.
BLOCK_ROWS = 64
SERIAL_ROWS = 256  # below this many rows the kernels run on one thread (no thread start-up)


@njit(parallel=True, cache=True, nogil=True)
def predict_raw_kernel(X, t0, t1, feature, threshold, left, right, default_left, is_cat,
                       cat_offset, value, bitsets, roots, tree_group, n_categories, out):
    n = X.shape[0]
    for b in prange((n + BLOCK_ROWS - 1) // BLOCK_ROWS):
        lo = b * BLOCK_ROWS
        hi = min(lo + BLOCK_ROWS, n)
        for t in range(t0, t1):
            g = tree_group[t]
            for i in range(lo, hi):
                leaf = _leaf_of(X[i], roots[t], feature, threshold, left, right, default_left,
                                is_cat, cat_offset, bitsets, n_categories)
                out[i, g] += value[leaf]


@njit(parallel=True, cache=True, nogil=True)
def predict_leaf_kernel(X, t0, t1, feature, threshold, left, right, default_left, is_cat,
                        cat_offset, bitsets, roots, n_categories, out):
    n = X.shape[0]
    for b in prange((n + BLOCK_ROWS - 1) // BLOCK_ROWS):
        lo = b * BLOCK_ROWS
        hi = min(lo + BLOCK_ROWS, n)
        for t in range(t0, t1):
            for i in range(lo, hi):
                leaf = _leaf_of(X[i], roots[t], feature, threshold, left, right, default_left,
                                is_cat, cat_offset, bitsets, n_categories)
                out[i, t - t0] = leaf - roots[t]


@njit(cache=True, nogil=True)
def predict_raw_serial(X, t0, t1, feature, threshold, left, right, default_left, is_cat,
                       cat_offset, value, bitsets, roots, tree_group, n_categories, out):
    """:func:`predict_raw_kernel` on one thread (a few rows: no thread start-up)."""
    for i in range(X.shape[0]):
        x = X[i]
        for t in range(t0, t1):
            leaf = _leaf_of(x, roots[t], feature, threshold, left, right, default_left,
                            is_cat, cat_offset, bitsets, n_categories)
            out[i, tree_group[t]] += value[leaf]


@njit(cache=True, nogil=True)
def predict_leaf_serial(X, t0, t1, feature, threshold, left, right, default_left, is_cat,
                        cat_offset, bitsets, roots, n_categories, out):
    """:func:`predict_leaf_kernel` on one thread."""
    for i in range(X.shape[0]):
        x = X[i]
        for t in range(t0, t1):
            leaf = _leaf_of(x, roots[t], feature, threshold, left, right, default_left,
                            is_cat, cat_offset, bitsets, n_categories)
            out[i, t - t0] = leaf - roots[t]


def predict_raw(forest: PackedForest, X, t0, t1, base_margin, n_outputs):
    """The margins of ``X``'s rows: on one thread below ``SERIAL_ROWS`` rows, else the
    parallel walk."""
    out = np.empty((X.shape[0], n_outputs), dtype=np.float64)
    out[:] = base_margin[None, :]
    f = forest
    run = predict_raw_serial if X.shape[0] < SERIAL_ROWS else predict_raw_kernel
    run(X, t0, t1, f.feature, f.threshold, f.left, f.right, f.default_left, f.is_categorical,
        f.cat_offset, f.value, f.bitsets, f.roots, f.tree_group, f.n_categories, out)
    return out


def predict_leaf(forest: PackedForest, X, t0, t1):
    """Each row's leaf id (within its tree) in trees ``t0 .. t1-1``, as :func:`predict_raw`."""
    out = np.empty((X.shape[0], t1 - t0), dtype=np.int32)
    f = forest
    run = predict_leaf_serial if X.shape[0] < SERIAL_ROWS else predict_leaf_kernel
    run(X, t0, t1, f.feature, f.threshold, f.left, f.right, f.default_left, f.is_categorical,
        f.cat_offset, f.bitsets, f.roots, f.n_categories, out)
    return out
