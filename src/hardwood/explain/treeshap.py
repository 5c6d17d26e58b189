"""Exact path-dependent TreeSHAP: SHAP values and SHAP interaction values of a tree ensemble.

The algorithm is Lundberg et al.'s polynomial-time TreeSHAP ("Consistent individualized
feature attribution for tree ensembles", 2018; Nature Machine Intelligence 2020, Algorithms 2
and 3), computed leaf by leaf as GPUTreeShap does (Mitchell et al. 2022): each leaf's path is a
product game over its distinct features (``paths``'s docstring), whose Shapley values EXTEND and
UNWIND give in O(u^2) for u path elements. Two things make it fast on a CPU:

1. Most leaves use a table instead of EXTEND/UNWIND (as Fast TreeSHAP v2, Yang 2021). For a
   row, let ``Q`` be the path elements the row satisfies (``o_j = 1``) and ``Z(A)`` the product
   of ``z_j`` over ``A``. The leaf's share of element ``i`` is::

       i not in Q:   -value * Z(P - Q) * H(Q)                      = -G(Q)
       i in Q:        value * Z(P - Q) * (1 - z_i) * H(Q - {i})    = G(Q - {i}) * (1 - z_i) / z_i

   with ``H(A) = sum over S in A of |S|! (u - |S| - 1)! / u! * Z(A - S)`` and
   ``G(A) = value * Z(P - A) * H(A)``, which depend on the leaf only. ``G`` over every subset of
   the path is computed once per model, so a row costs O(u) per leaf. Leaves with more than
   ``MAX_TABLE_SIZE`` elements, past the table budget, or with a zero fraction of 0 (the
   division) take EXTEND/UNWIND.
2. The kernel runs rows in blocks, and within a block tree by tree, so that one tree's paths
   and tables stay in cache while the block's rows use them. Each row makes one top-down pass
   per tree that marks, for every node, the path elements the row left the path at; in a tree
   without categorical splits that pass has no branch on the data (``goes_left_numeric``).

SHAP interaction values follow Lundberg et al. (2020, eq. 4) as XGBoost computes them:
``phi[i, j] = (phi_j given i present - phi_j given i absent) / 2``. For one leaf that is
``(o_i - z_i) / 2`` times the Shapley value of ``j`` in the leaf's game without ``i``, computed
with EXTEND/UNWIND; the diagonal is ``phi_i - sum over j != i of phi[i, j]``.

The bias column holds the model's base score plus each tree's expected value under cover,
as XGBoost's ``pred_contribs`` does; each row sums to the raw margin.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..predict.naive import goes_left, goes_left_numeric
from .paths import TreePaths, tree_paths

MAX_TABLE_SIZE = 12  # a leaf's table holds 2**u numbers
TABLE_BUDGET = 1 << 23  # numbers in all the tables of a model (64 MiB)
ROW_BLOCK = 64  # rows that share one pass over the trees


class Walk(NamedTuple):
    """What the row's way down a tree needs: the packed forest's split arrays."""
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    default_left: np.ndarray
    is_categorical: np.ndarray
    cat_offset: np.ndarray
    bitsets: np.ndarray
    n_categories: np.ndarray
    roots: np.ndarray
    tree_group: np.ndarray
    tree_categorical: np.ndarray  # bool per tree: has a categorical split


class Leaves(NamedTuple):
    """The paths (``paths.TreePaths``) and their tables, as the kernels read them."""
    node_slot: np.ndarray
    order: np.ndarray
    order_start: np.ndarray
    leaf_start: np.ndarray
    leaf_node: np.ndarray
    leaf_value: np.ndarray
    leaf_size: np.ndarray
    leaf_feature: np.ndarray
    leaf_zero: np.ndarray
    table_start: np.ndarray  # int64 per leaf: its table in ``table``, or -1 (EXTEND/UNWIND)
    table: np.ndarray  # float64: G(A) for each subset A of a leaf's elements (a bitmask)
    leaf_ratio: np.ndarray  # float64 (n_leaves, max_size): (1 - z) / z where the leaf has a table


@dataclass
class ShapData:
    """A model's paths and tables, built once (``prepare``) and kept on the model."""
    paths: TreePaths
    walk: Walk
    leaves: Leaves

    @property
    def n_words(self) -> int:
        return (self.paths.max_size + 63) // 64


def prepare(forest, cover) -> ShapData:
    """Paths and tables of a ``PackedForest`` with node covers ``cover``; ``ValueError`` if a
    cover cannot weight TreeSHAP (``paths.tree_paths``)."""
    paths = tree_paths(forest, cover)
    table_start, table, ratio = _tables(paths)
    n_nodes = forest.feature.shape[0]
    tree_categorical = (np.add.reduceat(forest.is_categorical.astype(np.int64), forest.roots) > 0
                        if n_nodes else np.zeros(0, dtype=bool))
    walk = Walk(forest.feature, forest.threshold, forest.left, forest.right,
                forest.default_left, forest.is_categorical, forest.cat_offset, forest.bitsets,
                forest.n_categories, forest.roots, forest.tree_group, tree_categorical)
    p = paths
    leaves = Leaves(p.node_slot, p.order, p.order_start, p.leaf_start, p.leaf_node,
                    p.leaf_value, p.leaf_size, p.leaf_feature, p.leaf_zero, table_start, table,
                    ratio)
    return ShapData(paths=paths, walk=walk, leaves=leaves)


def _tables(paths: TreePaths):
    """The tables of the leaves up to the largest size cap (<= MAX_TABLE_SIZE) whose tables fit
    TABLE_BUDGET, save those with a zero fraction of 0: (table_start, table, ratio)."""
    size = paths.leaf_size.astype(np.int64)
    zero = paths.leaf_zero
    usable = (size > 0) & np.all(zero > 0.0, axis=1)  # unused elements hold 1
    n_of_size = np.bincount(size[usable], minlength=MAX_TABLE_SIZE + 1)[:MAX_TABLE_SIZE + 1]
    cost = np.cumsum(n_of_size * (1 << np.arange(MAX_TABLE_SIZE + 1, dtype=np.int64)))
    cap = int(np.flatnonzero(cost <= TABLE_BUDGET).max(initial=0))
    has_table = usable & (size <= cap)
    table_start = np.full(size.shape[0], -1, dtype=np.int64)
    lengths = np.where(has_table, 1 << np.minimum(size, 62), 0)
    table_start[has_table] = (np.cumsum(lengths) - lengths)[has_table]
    table = np.empty(int(lengths.sum()), dtype=np.float64)
    _fill_tables(paths.leaf_size, zero, paths.leaf_value, table_start, table)
    ratio = np.zeros_like(zero)
    ratio[has_table] = (1.0 - zero[has_table]) / zero[has_table]  # unused elements: 0
    return table_start, table, ratio


@njit(cache=True, nogil=True)
def _fill_tables(leaf_size, leaf_zero, leaf_value, table_start, table):
    """OUT ``table``: for each leaf with a table and each subset ``A`` of its ``u`` elements,
    ``G(A) = value * Z(P - A) * H(A)``, ``H(A) = sum_k w(k) e_{|A|-k}(z_A)`` where ``e_m`` is
    the elementary symmetric polynomial of degree m of the zero fractions in ``A`` (the sum over
    the subsets ``S`` of size ``k`` of ``Z(A - S)``) and ``w(k) = k! (u-k-1)! / u!``, the
    Shapley weight of a coalition of ``k`` among ``u`` players. (``A`` = every element is never
    looked up.)"""
    max_size = leaf_zero.shape[1]
    e = np.empty(max_size + 1, dtype=np.float64)
    w = np.empty(max_size + 1, dtype=np.float64)
    for leaf in range(leaf_size.shape[0]):
        start = table_start[leaf]
        if start < 0:
            continue
        u = leaf_size[leaf]
        w[0] = 1.0 / u
        for k in range(u - 1):
            w[k + 1] = w[k] * (k + 1) / (u - 1 - k)
        w[u] = 0.0
        for subset in range(1 << u):
            e[0] = 1.0
            m = 0
            zero_rest = 1.0  # Z(P - A)
            for k in range(u):
                z = leaf_zero[leaf, k]
                if (subset >> k) & 1:
                    m += 1
                    e[m] = 0.0
                    for j in range(m, 0, -1):
                        e[j] += z * e[j - 1]
                else:
                    zero_rest *= z
            h = 0.0
            for k in range(m + 1):
                h += w[k] * e[m - k]
            table[start + subset] = leaf_value[leaf] * zero_rest * h


# -- EXTEND / UNWIND (Lundberg et al., Algorithm 2), over one leaf's path -----------------
# A path of ``depth`` elements lives in positions 1..depth of ``zero``, ``one``, ``weight``;
# position 0 is the empty root element (zero = one = 1), as in the paper and in XGBoost.

@njit(cache=True, nogil=True, inline="always")
def _extend(zero, one, weight, depth, z, o):
    """Append the element (z, o) at position ``depth`` (IN/OUT: zero, one, weight)."""
    zero[depth] = z
    one[depth] = o
    weight[depth] = 1.0 if depth == 0 else 0.0
    for i in range(depth - 1, -1, -1):
        weight[i + 1] += o * weight[i] * (i + 1) / (depth + 1)
        weight[i] = z * weight[i] * (depth - i) / (depth + 1)


@njit(cache=True, nogil=True, inline="always")
def _unwound_sum(zero, one, weight, depth, k):
    """The total permutation weight of the path without element ``k`` (Algorithm 2's
    UNWIND, summed)."""
    o = one[k]
    z = zero[k]
    next_one = weight[depth]
    total = 0.0
    for i in range(depth - 1, -1, -1):
        if o != 0.0:
            tmp = next_one * (depth + 1) / ((i + 1) * o)
            total += tmp
            next_one = weight[i] - tmp * z * (depth - i) / (depth + 1)
        elif z != 0.0:
            total += weight[i] / z / ((depth - i) / (depth + 1))
    return total


@njit(cache=True, nogil=True, inline="always")
def _satisfied(departed, node, k):
    """o_k of a row: 1.0 unless the row left the path at a split on element ``k``."""
    return 0.0 if (departed[node, k >> 6] >> np.uint64(k & 63)) & np.uint64(1) else 1.0


# The row loops call the inline functions below themselves: an inline function called from
# another inline function stays a call, which costs more than the work it does.

@njit(cache=True, nogil=True, inline="always")
def _mark_departures_numeric(x, t, walk, leaves, departed):
    """OUT ``departed[node - root]``: bit k set where the row leaves the path to ``node`` at a
    split on the path's element k (one pass over tree t's splits, parents first). For a tree
    of numeric splits whose paths fit one word: no branch on the data."""
    root = walk.roots[t]
    departed[0, 0] = 0
    for k in range(leaves.order_start[t], leaves.order_start[t + 1]):
        node = leaves.order[k]
        left = np.uint64(goes_left_numeric(x[walk.feature[node]], walk.threshold[node],
                                           walk.default_left[node]))
        here = departed[node - root, 0]
        bit = np.uint64(1) << np.uint64(leaves.node_slot[node])
        departed[walk.left[node] - root, 0] = here | (bit & (left - np.uint64(1)))
        departed[walk.right[node] - root, 0] = here | (bit & (np.uint64(0) - left))


@njit(cache=True, nogil=True, inline="always")
def _mark_departures_any(x, t, walk, leaves, departed):
    """:func:`_mark_departures_numeric` for any tree (categorical splits, long paths)."""
    root = walk.roots[t]
    n_words = departed.shape[1]
    for w in range(n_words):
        departed[0, w] = 0
    for k in range(leaves.order_start[t], leaves.order_start[t + 1]):
        node = leaves.order[k]
        if goes_left(x, node, walk.feature, walk.threshold, walk.default_left,
                     walk.is_categorical, walk.cat_offset, walk.bitsets, walk.n_categories):
            hot = walk.left[node] - root
            cold = walk.right[node] - root
        else:
            hot = walk.right[node] - root
            cold = walk.left[node] - root
        here = node - root
        for w in range(n_words):
            departed[hot, w] = departed[here, w]
            departed[cold, w] = departed[here, w]
        slot = leaves.node_slot[node]
        departed[cold, slot >> 6] |= np.uint64(1) << np.uint64(slot & 63)


@njit(cache=True, nogil=True, inline="always")
def _leaf_by_table(leaves, leaf, departed, node, phi):
    """Add one leaf's SHAP values to ``phi`` from its table."""
    u = leaves.leaf_size[leaf]
    satisfied = ((1 << u) - 1) & ~np.int64(departed[node, 0])  # Q, as a bitmask
    start = leaves.table_start[leaf]
    absent = leaves.table[start + satisfied]
    for k in range(u):
        f = leaves.leaf_feature[leaf, k]
        if (satisfied >> k) & 1:
            phi[f] += leaves.leaf_ratio[leaf, k] * leaves.table[start + (satisfied ^ (1 << k))]
        else:
            phi[f] -= absent


@njit(cache=True, nogil=True)  # not inlined: the rare path stays out of the hot loop
def _leaf_by_extend(leaves, leaf, departed, node, phi, zero, one, weight):
    """Add one leaf's SHAP values to ``phi`` by EXTEND/UNWIND (scratch: zero, one, weight)."""
    u = leaves.leaf_size[leaf]
    _extend(zero, one, weight, 0, 1.0, 1.0)
    for k in range(u):
        _extend(zero, one, weight, k + 1, leaves.leaf_zero[leaf, k],
                _satisfied(departed, node, k))
    value = leaves.leaf_value[leaf]
    for k in range(u):
        w = _unwound_sum(zero, one, weight, u, k + 1)
        phi[leaves.leaf_feature[leaf, k]] += w * (one[k + 1] - zero[k + 1]) * value


@njit(cache=True, nogil=True)
def _contributions_rows(X, lo, hi, t0, t1, walk, leaves, max_nodes, n_words, out):
    """SHAP values of rows lo..hi over trees t0..t1, added to ``out[row, group, feature]``
    (OUT). Trees outside, rows inside: one tree's data serves the whole block."""
    max_size = leaves.leaf_feature.shape[1]
    departed = np.empty((max_nodes, n_words), dtype=np.uint64)
    zero = np.empty(max_size + 1, dtype=np.float64)
    one = np.empty(max_size + 1, dtype=np.float64)
    weight = np.empty(max_size + 1, dtype=np.float64)
    for t in range(t0, t1):
        root = walk.roots[t]
        group = walk.tree_group[t]
        numeric = n_words == 1 and not walk.tree_categorical[t]
        for i in range(lo, hi):
            if numeric:
                _mark_departures_numeric(X[i], t, walk, leaves, departed)
            else:
                _mark_departures_any(X[i], t, walk, leaves, departed)
            phi = out[i, group]
            for leaf in range(leaves.leaf_start[t], leaves.leaf_start[t + 1]):
                node = leaves.leaf_node[leaf] - root
                if leaves.table_start[leaf] >= 0:
                    _leaf_by_table(leaves, leaf, departed, node, phi)
                else:
                    _leaf_by_extend(leaves, leaf, departed, node, phi, zero, one, weight)


@njit(parallel=True, cache=True, nogil=True)
def contributions_kernel(X, t0, t1, walk, leaves, max_nodes, n_words, out):
    """IN X (n, features), trees t0..t1; OUT out (n, outputs, features + 1), zeroed by the
    caller: SHAP values per row, in blocks of ROW_BLOCK rows over the threads."""
    n = X.shape[0]
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    for b in prange(n_blocks):
        _contributions_rows(X, b * ROW_BLOCK, min(n, (b + 1) * ROW_BLOCK), t0, t1, walk,
                            leaves, max_nodes, n_words, out)


@njit(cache=True, nogil=True)
def _interactions_rows(X, lo, hi, t0, t1, walk, leaves, max_nodes, n_words, out):
    """SHAP interaction values of rows lo..hi, added to ``out[row, group]`` (OUT, a matrix
    (features + 1)^2): off the diagonal per leaf, then the diagonal from the row's SHAP values."""
    n_out = out.shape[1]
    n_features = out.shape[2] - 1
    max_size = leaves.leaf_feature.shape[1]
    departed = np.empty((max_nodes, n_words), dtype=np.uint64)
    zero = np.empty(max_size + 1, dtype=np.float64)
    one = np.empty(max_size + 1, dtype=np.float64)
    weight = np.empty(max_size + 1, dtype=np.float64)
    phi = np.zeros((hi - lo, n_out, n_features + 1), dtype=np.float64)
    for t in range(t0, t1):
        root = walk.roots[t]
        group = walk.tree_group[t]
        numeric = n_words == 1 and not walk.tree_categorical[t]
        for i in range(lo, hi):
            if numeric:
                _mark_departures_numeric(X[i], t, walk, leaves, departed)
            else:
                _mark_departures_any(X[i], t, walk, leaves, departed)
            inter = out[i, group]
            for leaf in range(leaves.leaf_start[t], leaves.leaf_start[t + 1]):
                u = leaves.leaf_size[leaf]
                if u == 0:
                    continue
                node = leaves.leaf_node[leaf] - root
                if leaves.table_start[leaf] >= 0:
                    _leaf_by_table(leaves, leaf, departed, node, phi[i - lo, group])
                else:
                    _leaf_by_extend(leaves, leaf, departed, node, phi[i - lo, group], zero,
                                    one, weight)
                value = leaves.leaf_value[leaf]
                for c in range(u):  # condition on element c: the game without it
                    z_c = leaves.leaf_zero[leaf, c]
                    scale = 0.5 * (_satisfied(departed, node, c) - z_c) * value
                    if scale == 0.0:
                        continue
                    _extend(zero, one, weight, 0, 1.0, 1.0)
                    depth = 0
                    for k in range(u):
                        if k != c:
                            depth += 1
                            _extend(zero, one, weight, depth, leaves.leaf_zero[leaf, k],
                                    _satisfied(departed, node, k))
                    f_c = leaves.leaf_feature[leaf, c]
                    depth = 0
                    for k in range(u):
                        if k != c:
                            depth += 1
                            w = _unwound_sum(zero, one, weight, u - 1, depth)
                            inter[f_c, leaves.leaf_feature[leaf, k]] += (
                                scale * w * (one[depth] - zero[depth]))
    for i in range(lo, hi):
        for g in range(n_out):
            for f in range(n_features):
                off = 0.0
                for j in range(n_features + 1):
                    if j != f:
                        off += out[i, g, f, j]
                out[i, g, f, f] = phi[i - lo, g, f] - off


@njit(parallel=True, cache=True, nogil=True)
def interactions_kernel(X, t0, t1, walk, leaves, max_nodes, n_words, out):
    """IN X (n, features), trees t0..t1; OUT out (n, outputs, features + 1, features + 1),
    zeroed by the caller: SHAP interaction values per row, the bias cell left to the caller."""
    n = X.shape[0]
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    for b in prange(n_blocks):
        _interactions_rows(X, b * ROW_BLOCK, min(n, (b + 1) * ROW_BLOCK), t0, t1, walk,
                           leaves, max_nodes, n_words, out)


def _bias(data: ShapData, t0, t1, base_score, n_outputs):
    """The expected value per output: base score plus each chosen tree's mean under cover."""
    bias = np.array(base_score, dtype=np.float64).reshape(n_outputs)
    np.add.at(bias, data.walk.tree_group[t0:t1], data.paths.expected[t0:t1])
    return bias


def contributions(data: ShapData, X, t0, t1, base_score, n_outputs):
    """SHAP values of the rows of float matrix ``X`` over trees t0..t1: shape (n, features + 1)
    for one output, (n, outputs, features + 1) for several; the last column is the bias."""
    n, d = X.shape
    out = np.zeros((n, n_outputs, d + 1), dtype=np.float64)
    contributions_kernel(X, t0, t1, data.walk, data.leaves, data.paths.max_nodes,
                         data.n_words, out)
    out[:, :, d] += _bias(data, t0, t1, base_score, n_outputs)
    return out[:, 0] if n_outputs == 1 else out


def interactions(data: ShapData, X, t0, t1, base_score, n_outputs):
    """SHAP interaction values: shape (n, features + 1, features + 1) for one output,
    (n, outputs, features + 1, features + 1) for several; each row of a matrix sums to that
    feature's SHAP value, and the bias sits at [features, features]."""
    n, d = X.shape
    out = np.zeros((n, n_outputs, d + 1, d + 1), dtype=np.float64)
    interactions_kernel(X, t0, t1, data.walk, data.leaves, data.paths.max_nodes,
                        data.n_words, out)
    out[:, :, d, d] += _bias(data, t0, t1, base_score, n_outputs)
    return out[:, 0] if n_outputs == 1 else out
