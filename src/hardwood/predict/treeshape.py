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
def _bfs(feature, left, right):
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
    return _bfs(tree.feature, tree.left, tree.right)
