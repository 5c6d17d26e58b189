"""Struct and Struct+ predictors (Asadi et al., §3): an array of node structs, walked with
branches.

* ``struct``: 24-byte nodes ``(threshold, feature, left, right, flags)`` in the model's own
  node order, trees one after another.
* ``struct+``: 16-byte nodes ``(threshold, feature|flags, left)`` laid out breadth-first per tree,
  siblings adjacent (``right = left + 1``), all trees contiguous.

A leaf holds its value in the threshold slot and its node id (in the model's tree) in ``left``.
Both walk blocks of rows tree by tree (a tree's nodes stay in cache while a block of rows
passes through it).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .treeshape import breadth_first

NODE = np.dtype([("thr", np.float64), ("feat", np.int32), ("left", np.int32),
                 ("right", np.int32), ("flags", np.int32)], align=True)
NODE_PLUS = np.dtype([("thr", np.float64), ("feat", np.int32), ("left", np.int32)], align=True)
DL_BIT = 1 << 30
CAT_BIT = 1 << 29
FEAT_MASK = CAT_BIT - 1
BLOCK = 64


def _tree_order(t, bfs):
    return breadth_first(t) if bfs else np.arange(t.n_nodes)


def build(trees, t0, t1, bfs):
    """Pack trees ``t0 .. t1-1``; returns (nodes, catoff, bitsets, roots)."""
    sizes = [trees[t].n_nodes for t in range(t0, t1)]
    total = int(sum(sizes))
    nodes = np.zeros(total, dtype=NODE_PLUS if bfs else NODE)
    catoff = np.full(total, -1, dtype=np.int64)
    roots = np.zeros(t1 - t0, dtype=np.int64)
    bits, nb = [], 0
    pos = 0
    for k, t in enumerate(trees[t0:t1]):
        order = _tree_order(t, bfs)
        new = np.empty(t.n_nodes, dtype=np.int64)
        new[order] = np.arange(order.size) + pos
        roots[k] = pos
        internal = t.feature[order] >= 0
        sl = slice(pos, pos + order.size)
        nodes["thr"][sl] = np.where(internal, t.threshold[order], t.value[order])
        f = t.feature[order].astype(np.int64)
        dl = t.default_left[order]
        cat = t.is_categorical[order]
        if bfs:
            code = f | np.where(dl, DL_BIT, 0) | np.where(cat, CAT_BIT, 0)
            nodes["feat"][sl] = np.where(internal, code, -1)
            left = np.where(internal, new[np.maximum(t.left[order], 0)], order)
            nodes["left"][sl] = left
        else:
            nodes["feat"][sl] = f
            nodes["left"][sl] = np.where(internal, new[np.maximum(t.left[order], 0)], order)
            nodes["right"][sl] = np.where(internal, new[np.maximum(t.right[order], 0)], -1)
            nodes["flags"][sl] = dl.astype(np.int32) | (cat.astype(np.int32) << 1)
        co = t.cat_offset[order]
        catoff[sl] = np.where(cat, co + nb, -1)
        bits.append(t.cat_bitsets)
        nb += t.cat_bitsets.size
        pos += order.size
    if bfs:  # siblings must be adjacent
        intl = nodes["feat"] >= 0
        assert np.all(nodes["left"][intl] > np.arange(total)[intl])
    bitsets = np.concatenate(bits).astype(np.uint32) if bits else np.zeros(0, np.uint32)
    if bitsets.size == 0:
        bitsets = np.zeros(1, np.uint32)
    return nodes, catoff, bitsets, roots


@njit(cache=True, nogil=True, inline="always")
def cat_left(v, off, f, bits, ncat, dl):
    if v != v:
        return dl
    c = np.int64(v)
    if c < 0 or c >= ncat[f]:
        return dl
    return (bits[off + (c >> 5)] >> np.uint32(c & 31)) & np.uint32(1) == 1


@njit(cache=True, nogil=True, inline="always")
def _walk_plus(X, r, node, nodes, catoff, bits, ncat):
    while True:
        ff = nodes[node].feat
        if ff < 0:
            return node
        f = ff & FEAT_MASK
        v = X[r, f]
        # Branches, as the paper's Struct+ (predication is ``pred``'s job): lossguide and
        # lopsided trees send most rows one way, where a predicted branch lets the next
        # node's load start early and a select would wait for the comparison.
        left = nodes[node].left
        if ff & CAT_BIT:
            if cat_left(v, catoff[node], f, bits, ncat, (ff & DL_BIT) != 0):
                node = left
            else:
                node = left + 1
        elif v <= nodes[node].thr:
            node = left
        elif v != v and (ff & DL_BIT) != 0:
            node = left
        else:
            node = left + 1


@njit(cache=True, nogil=True, inline="always")
def _walk(X, r, node, nodes, catoff, bits, ncat):
    while True:
        f = nodes[node].feat
        if f < 0:
            return node
        v = X[r, f]
        fl = nodes[node].flags
        if fl & 2:
            go_left = cat_left(v, catoff[node], f, bits, ncat, (fl & 1) != 0)
        elif v <= nodes[node].thr:
            go_left = True
        elif v != v:
            go_left = (fl & 1) != 0
        else:
            go_left = False
        if go_left:
            node = nodes[node].left
        else:
            node = nodes[node].right


def _make_runners(walk):
    # the leaf and the value loops apart and inlined: one loop with a ``want_leaf`` test
    # inside, in a function of its own per block, ran the LambdaMART study ~1.5x slower
    @njit(cache=True, nogil=True, inline="always")
    def block_values(X, r0, r1, nodes, catoff, bits, ncat, roots, groups, out):
        for k in range(roots.shape[0]):
            root = roots[k]
            g = groups[k]
            for r in range(r0, r1):
                out[r, g] += nodes[walk(X, r, root, nodes, catoff, bits, ncat)].thr

    @njit(cache=True, nogil=True, inline="always")
    def block_leaves(X, r0, r1, nodes, catoff, bits, ncat, roots, lout):
        for k in range(roots.shape[0]):
            root = roots[k]
            for r in range(r0, r1):
                lout[r, k] = nodes[walk(X, r, root, nodes, catoff, bits, ncat)].left

    @njit(cache=True, nogil=True, parallel=True)
    def run_parallel(X, nodes, catoff, bits, ncat, roots, groups, out, lout, want_leaf):
        n = X.shape[0]
        nb = (n + BLOCK - 1) // BLOCK
        for b in prange(nb):
            r0 = b * BLOCK
            r1 = min(n, r0 + BLOCK)
            if want_leaf:
                block_leaves(X, r0, r1, nodes, catoff, bits, ncat, roots, lout)
            else:
                block_values(X, r0, r1, nodes, catoff, bits, ncat, roots, groups, out)

    @njit(cache=True, nogil=True)
    def run_serial(X, nodes, catoff, bits, ncat, roots, groups, out, lout, want_leaf):
        n = X.shape[0]
        for r0 in range(0, n, BLOCK):
            r1 = min(n, r0 + BLOCK)
            if want_leaf:
                block_leaves(X, r0, r1, nodes, catoff, bits, ncat, roots, lout)
            else:
                block_values(X, r0, r1, nodes, catoff, bits, ncat, roots, groups, out)

    return run_parallel, run_serial


run_parallel, run_serial = _make_runners(_walk)
run_parallel_plus, run_serial_plus = _make_runners(_walk_plus)
