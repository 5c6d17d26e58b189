"""Each leaf's root-to-leaf path, in the form TreeSHAP needs, computed once per model.

Path-dependent TreeSHAP (Lundberg et al., "Consistent individualized feature attribution for
tree ensembles", 2018; Nature Machine Intelligence 2020) sees a tree as a sum of leaves. For a
leaf ``l`` whose path splits on the distinct features ``P_l`` (its *path elements*), each
element ``j`` has

* a zero fraction ``z_j``: the product, over the path's splits on ``j``, of
  ``cover(child on the path) / cover(split)``, the share of training data that follows the path
  there; cover is the training hessian sum (boosting) or the sample count (forests, LightGBM);
* a one fraction ``o_j`` (per row): 1 if the row follows the path at every split on ``j``.

The leaf contributes ``value * prod(o_j if j in S else z_j)`` to the value of a coalition ``S``,
and SHAP values are the Shapley values of that sum of product games. Everything here but
``o_j`` is a property of the model, so it is computed once (:func:`tree_paths`):

* ``node_slot[i]``: the position of internal node ``i``'s feature among the distinct features of
  the path from the root to ``i`` (first seen, first numbered). Positions are the same for every
  leaf under ``i``, so one top-down pass per row marks, for every node, the path elements the row
  leaves the path at (``treeshap``'s masks);
* per leaf: its node, value, element count ``u``, features, zero fractions;
* per tree: its internal nodes in pre-order (parents before children) and its expected value
  ``sum_l value_l * prod_j z_j`` (the SHAP bias).

Every split's cover must be a positive finite number and every node's a finite number >= 0;
otherwise :func:`tree_paths` raises ``ValueError`` naming the first tree and node.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit


@dataclass
class TreePaths:
    node_slot: np.ndarray  # int32 per node (absolute, as in PackedForest): -1 at leaves
    order: np.ndarray  # int32: each tree's internal nodes, parents first
    order_start: np.ndarray  # int64 (n_trees + 1): tree t's nodes are order[start[t]:start[t+1]]
    leaf_start: np.ndarray  # int64 (n_trees + 1): tree t's leaves are leaf_start[t]..[t+1]
    leaf_node: np.ndarray  # int64 per leaf (absolute node)
    leaf_value: np.ndarray  # float64 per leaf
    leaf_size: np.ndarray  # int32 per leaf: its path elements (distinct features)
    leaf_feature: np.ndarray  # int32 (n_leaves, max_size): element k's feature
    leaf_zero: np.ndarray  # float64 (n_leaves, max_size): element k's zero fraction
    expected: np.ndarray  # float64 per tree: the mean leaf value under cover
    max_nodes: int  # the most nodes in one tree
    max_size: int  # the most path elements of one leaf (>= 1)


def tree_paths(forest, cover) -> TreePaths:
    """The paths of every tree of a ``PackedForest`` whose node covers are ``cover`` (float64,
    the trees' ``cover`` arrays concatenated in the same order)."""
    n_nodes = forest.feature.shape[0]
    n_trees = forest.roots.shape[0]
    sizes = np.diff(np.append(forest.roots, n_nodes))
    is_leaf = forest.feature < 0
    n_leaves = int(is_leaf.sum())
    leaf_start = np.zeros(n_trees + 1, dtype=np.int64)
    leaf_start[1:] = np.cumsum(np.add.reduceat(is_leaf.astype(np.int64), forest.roots)
                               if n_trees else [])
    order_start = np.zeros(n_trees + 1, dtype=np.int64)
    order_start[1:] = np.cumsum(sizes) - leaf_start[1:]
    bad = _check_cover(forest.feature, cover)
    if bad >= 0:
        t = int(np.searchsorted(forest.roots, bad, side="right") - 1)
        raise ValueError(
            f"output='contrib'/'interaction' needs each node's cover (its training hessian sum "
            f"or sample count), which weights TreeSHAP's paths; node {bad - int(forest.roots[t])}"
            f" of tree {t} has cover {cover[bad]!r} (a split needs a positive cover, a leaf one "
            f">= 0). This model does not keep cover: retrain it, or import it from a model "
            f"that records per-node hessian sums or sample counts")
    depth_cap = int(sizes.max()) if n_trees else 1
    max_size = max(1, _max_path_size(forest.feature, forest.left, forest.right, forest.roots,
                                     depth_cap))
    node_slot = np.full(n_nodes, -1, dtype=np.int32)
    order = np.empty(n_nodes - n_leaves, dtype=np.int32)
    leaf_node = np.empty(n_leaves, dtype=np.int64)
    leaf_size = np.zeros(n_leaves, dtype=np.int32)
    leaf_feature = np.zeros((n_leaves, max_size), dtype=np.int32)
    leaf_zero = np.ones((n_leaves, max_size), dtype=np.float64)
    expected = np.zeros(n_trees, dtype=np.float64)
    _fill_paths(forest.feature, forest.left, forest.right, forest.value, cover, forest.roots,
                order_start, leaf_start, depth_cap, node_slot, order, leaf_node, leaf_size,
                leaf_feature, leaf_zero, expected)
    return TreePaths(node_slot=node_slot, order=order, order_start=order_start,
                     leaf_start=leaf_start, leaf_node=leaf_node,
                     leaf_value=forest.value[leaf_node].astype(np.float64),
                     leaf_size=leaf_size, leaf_feature=leaf_feature, leaf_zero=leaf_zero,
                     expected=expected, max_nodes=int(sizes.max()) if n_trees else 1,
                     max_size=max_size)


@njit(cache=True, nogil=True)
def _check_cover(feature, cover):
    """The first node whose cover TreeSHAP cannot use, or -1: a split's must be finite and
    positive (it divides), a leaf's finite and >= 0."""
    for i in range(feature.shape[0]):
        c = cover[i]
        if not np.isfinite(c) or c < 0.0 or (feature[i] >= 0 and c <= 0.0):
            return i
    return -1


@njit(cache=True, nogil=True)
def _max_path_size(feature, left, right, roots, depth_cap):
    """The most distinct features on one root-to-leaf path of any tree."""
    best = 0
    stack = np.empty(depth_cap + 1, dtype=np.int64)
    depth = np.empty(depth_cap + 1, dtype=np.int64)
    path_feature = np.empty(depth_cap + 1, dtype=np.int64)
    n_unique = np.zeros(depth_cap + 2, dtype=np.int64)  # n_unique[d + 1]: through depth d
    for t in range(roots.shape[0]):
        top = 0
        stack[0] = roots[t]
        depth[0] = 0
        while top >= 0:
            node = stack[top]
            d = depth[top]
            top -= 1
            u = n_unique[d]
            f = feature[node]
            if f < 0:
                best = max(best, u)
                continue
            seen = False
            for k in range(u):
                if path_feature[k] == f:
                    seen = True
            if not seen:
                path_feature[u] = f
                u += 1
            n_unique[d + 1] = u
            for child in (right[node], left[node]):
                top += 1
                stack[top] = child
                depth[top] = d + 1
    return best


@njit(cache=True, nogil=True)
def _fill_paths(feature, left, right, value, cover, roots, order_start, leaf_start, depth_cap,
                node_slot, order, leaf_node, leaf_size, leaf_feature, leaf_zero, expected):
    """One depth-first walk per tree (OUT: every argument after ``depth_cap``).

    The walk keeps the current path: ``path_node[d]`` the node at depth ``d``, and the distinct
    features of the path down to depth ``d`` in ``path_feature[:n_unique[d + 1]]``. A node
    writes only at positions >= its parent's count, so a walk that comes back up to a sibling
    finds its ancestors' state intact."""
    stack = np.empty(depth_cap + 1, dtype=np.int64)
    depth = np.empty(depth_cap + 1, dtype=np.int64)
    path_node = np.empty(depth_cap + 1, dtype=np.int64)
    path_feature = np.empty(depth_cap + 1, dtype=np.int64)
    n_unique = np.zeros(depth_cap + 2, dtype=np.int64)
    for t in range(roots.shape[0]):
        n_order = order_start[t]
        n_leaf = leaf_start[t]
        top = 0
        stack[0] = roots[t]
        depth[0] = 0
        while top >= 0:
            node = stack[top]
            d = depth[top]
            top -= 1
            path_node[d] = node
            u = n_unique[d]
            f = feature[node]
            if f < 0:
                leaf_node[n_leaf] = node
                leaf_size[n_leaf] = u
                for k in range(u):
                    leaf_feature[n_leaf, k] = path_feature[k]
                weight = 1.0  # the product of every split's fraction on the path
                for a in range(d):
                    parent = path_node[a]
                    fraction = cover[path_node[a + 1]] / cover[parent]
                    leaf_zero[n_leaf, node_slot[parent]] *= fraction
                    weight *= fraction
                expected[t] += weight * value[node]
                n_leaf += 1
                continue
            slot = u
            for k in range(u):
                if path_feature[k] == f:
                    slot = k
            if slot == u:
                path_feature[u] = f
                u += 1
            n_unique[d + 1] = u
            node_slot[node] = slot
            order[n_order] = node
            n_order += 1
            for child in (right[node], left[node]):
                top += 1
                stack[top] = child
                depth[top] = d + 1
