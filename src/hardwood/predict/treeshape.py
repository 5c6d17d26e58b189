"""Per-tree shape, for the runtimes' layouts: each node's depth and the breadth-first node
order, as Numba kernels (a Python loop over the nodes took seconds on a forest of a few
million nodes, most of ``compile``'s time).

Both read a tree as the model holds it (validated when built, loaded or imported): a parent's
id is below its children's, as ``Tree.node_depths`` assumes too.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _depths(feature, left, right):
    depth = np.zeros(feature.shape[0], np.int64)
    for i in range(feature.shape[0]):
        if feature[i] >= 0:
            depth[left[i]] = depth[i] + 1
            depth[right[i]] = depth[i] + 1
    return depth


@njit(cache=True, nogil=True)
def bfs_order(feature, left, right):
    n = feature.shape[0]
    order = np.empty(n, np.int64)
    order[0] = 0
    m, k = 1, 0
    while k < m:
        i = order[k]
        k += 1
        if feature[i] >= 0:
            if m + 2 > n:
                raise ValueError("a tree's children links do not form a tree")
            order[m] = left[i]
            order[m + 1] = right[i]
            m += 2
    return order[:m]


def node_depths(tree) -> np.ndarray:
    """Each node's depth (the root's is 0): ``Tree.node_depths``, compiled."""
    return _depths(tree.feature, tree.left, tree.right)


def depth(tree) -> int:
    """The tree's depth: ``Tree.depth``, compiled."""
    return int(node_depths(tree).max()) if tree.n_nodes else 0


def breadth_first(tree) -> np.ndarray:
    """The node ids reachable from the root, breadth-first, left child first (int64)."""
    return bfs_order(tree.feature, tree.left, tree.right)


_SPLIT_FIELDS = ("feature", "threshold", "left", "right", "default_left", "is_categorical",
                 "cat_offset", "cat_bitsets")


def same_splits(a, b) -> bool:
    """Whether trees ``a`` and ``b`` have the same nodes, splits and children (their leaf
    values may differ), so that every row reaches the same leaf id in both."""
    for name in _SPLIT_FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if x is not y and not (x.shape == y.shape and np.array_equal(x, y, equal_nan=True)):
            return False
    return True


def shared_structure(trees, tree_group, t0, t1, width) -> bool:
    """Whether trees ``t0 .. t1-1`` come in runs of ``width`` trees that share their splits
    (:func:`same_splits`) and add to outputs ``g, g + 1, .., g + width - 1``: a forest's
    per-class trees (``Forest.to_model``, imported scikit-learn forests). One walk of a run's
    first tree then gives the leaf of all of them."""
    width = int(width)
    if width < 2 or t1 <= t0 or (t1 - t0) % width:
        return False
    for h in range(t0, t1, width):
        g = int(tree_group[h])
        for u in range(1, width):
            if int(tree_group[h + u]) != g + u or not same_splits(trees[h], trees[h + u]):
                return False
    return True
