"""QuickScorer: prediction feature by feature, with a bitvector per tree, over ``V`` rows in
SIMD lanes (Lucchese et al., *QuickScorer*, SIGIR 2015, and its vectorised form, *Exploiting
CPU SIMD extensions to speed-up document scoring with tree ensembles*, SIGIR 2016).

Number each tree's leaves from left to right. A node whose test fails for a row (``x > t``:
the row goes right) rules out every leaf of its left subtree; its *mask* is all ones but those
leaves' bits. AND-ing the masks of all failing nodes into a bitvector that starts all ones
leaves the row's exit leaf as the lowest set bit (every leaf left of it is ruled out by the
node where the row's path turned right; no node on the path rules it out).

The failing nodes are found without walking: every internal node of every tree is listed by
feature, sorted by threshold, so the nodes a row fails on feature ``f`` are the prefix of
``f``'s list with ``t < x[f]``. The scan stops at the first threshold at or above the largest
of the ``V`` rows' values; each node it visits updates the ``V`` rows' bitvectors of its tree
in one vector compare-and-AND (``_intrinsics.and_lanes_lt``), the lanes whose value is not above
the threshold keeping theirs. The cost is a row's count of failing nodes (about a third of
all nodes on a LambdaMART model) instead of its path length, and it has no data-dependent
branch but the end of each feature's scan.

NaN: the compare fails, so the row goes left; a block of rows with a NaN then applies, per NaN
value, the masks of that feature's default-right nodes (a list of its own). Thresholds are
kept in float64 and, for float32 input, rounded down to float32 (exact: ``x > t`` ⇔
``x > float32_floor(t)`` for float32 ``x``). Leaf values are added in tree order, as the naive
walk adds them, so the sums are the naive walk's, bit for bit.

The bitvectors are 32 bits wide when every tree has at most 32 leaves (LightGBM's default
31), so that a 512-bit vector holds 16 rows' bitvectors of a tree, else 64 bits and 8 rows.
A lane group short of rows repeats its last row; one row has a kernel of its own (at the end
of this file).

Limits: trees of at most 64 leaves (one 64-bit word) and no categorical splits;
:func:`unsupported_reason` says why a model does not qualify.
"""
from __future__ import annotations

import numpy as np

from ._cache import load_source
from .pred import HEADER_WORDS, floor32, pack_blob

MAX_LEAVES = 64
# rows per lane group, by bitvector width: one 512-bit vector of bitvectors (4 and 16 lanes of
# 64 bits were slower than 8 on the LambdaMART model; benchmarks/README.md)
V_BATCH = {32: 16, 64: 8}
MIN_BATCH = min(V_BATCH.values())  # auto costs fewer rows than this as single rows


def unsupported_reason(trees):
    """Why QuickScorer cannot run these trees, or None."""
    for k, t in enumerate(trees):
        if t.is_categorical.any():
            return f"tree {k} has a categorical split (QuickScorer handles numeric splits only)"
        nl = t.n_leaves
        if nl > MAX_LEAVES:
            return (f"tree {k} has {nl} leaves (QuickScorer's bitvectors hold at most "
                    f"{MAX_LEAVES})")
    return None


def _left_masks(tree):
    """The tree's leaves in left-to-right order, and per internal node the mask that clears
    the bits of its left subtree's leaves (leaf ``i`` is bit ``i``)."""
    n = tree.n_nodes
    feature, left, right = tree.feature, tree.left, tree.right
    pre, stack = [], [0]
    seen = np.zeros(n, bool)
    while stack:  # pre-order, left first: the leaves come out left to right
        i = stack.pop()
        if seen[i]:  # models are validated when loaded; this guards hand-made ones
            raise ValueError(f"QuickScorer needs trees, but node {i} has two parents")
        seen[i] = True
        pre.append(i)
        if feature[i] >= 0:
            stack.append(int(right[i]))
            stack.append(int(left[i]))
    first = np.zeros(n, np.int64)
    count = np.zeros(n, np.int64)
    leaves = [i for i in pre if feature[i] < 0]
    first[leaves] = np.arange(len(leaves))
    count[leaves] = 1
    masks = {}
    for i in reversed(pre):  # children before parents
        if feature[i] >= 0:
            lo, hi = int(left[i]), int(right[i])
            first[i], count[i] = first[lo], count[lo] + count[hi]
            masks[i] = ~(((1 << int(count[lo])) - 1) << int(first[lo]))
    return np.array(leaves, np.int64), masks


class QSLayout:
    """The trees ``trees[t0:t1]`` laid out for QuickScorer.

    Per used feature ``u`` (``used[u]`` is its column), the nodes ``starts[u]:starts[u+1]``
    sorted by threshold: ``thr64``/``thr32``, ``tree`` (the tree's index) and ``mask``; the
    default-right nodes, for NaN, at ``nan_starts[u]:nan_starts[u+1]`` of
    ``nan_tree``/``nan_mask``. Per tree: ``lbase`` (its first leaf in ``leafval``/``leafid``,
    left to right) and ``groups`` (its output). The bitvectors are 32 bits wide when no tree
    has more than 32 leaves (twice the rows per vector), else 64: ``width``, and ``V``, the
    rows per lane group. The batch kernels find a tree's V bitvectors at its index times V
    (``tree_v``/``nan_tree_v``)."""

    def __init__(self, trees, tree_group, t0, t1):
        self.width = 32 if all(trees[t].n_leaves <= 32 for t in range(t0, t1)) else 64
        self.V = V_BATCH[self.width]
        mdt = np.uint32 if self.width == 32 else np.uint64
        full = (1 << self.width) - 1
        recs_f, recs_t, recs_k, recs_m, recs_dl = [], [], [], [], []
        leafval, leafid, lbase, pos = [], [], [], 0
        for k, t in enumerate(range(t0, t1)):
            tr = trees[t]
            leaves, masks = _left_masks(tr)
            nodes = np.array(sorted(masks), np.int64)
            recs_f.append(tr.feature[nodes].astype(np.int64))
            recs_t.append(tr.threshold[nodes].astype(np.float64))
            recs_k.append(np.full(nodes.size, k, np.int64))
            recs_m.append(np.array([masks[i] & full for i in nodes], mdt))
            recs_dl.append(tr.default_left[nodes].astype(bool))
            leafval.append(tr.value[leaves])
            leafid.append(leaves)
            lbase.append(pos)
            pos += leaves.size
        feat = np.concatenate(recs_f) if recs_f else np.zeros(0, np.int64)
        thr = np.concatenate(recs_t) if recs_t else np.zeros(0)
        tree = np.concatenate(recs_k) if recs_k else np.zeros(0, np.int64)
        mask = np.concatenate(recs_m) if recs_m else np.zeros(0, mdt)
        dleft = np.concatenate(recs_dl) if recs_dl else np.zeros(0, bool)
        order = np.lexsort((thr, feat))
        feat, thr, tree, mask, dleft = (a[order] for a in (feat, thr, tree, mask, dleft))
        self.used = np.unique(feat).astype(np.int64)
        self.starts = np.searchsorted(feat, np.append(self.used, np.iinfo(np.int64).max)
                                      ).astype(np.int64)
        self.thr64 = np.ascontiguousarray(thr)
        self.thr32 = floor32(thr)
        self.tree = tree
        self.mask = mask
        nr = ~dleft
        self.nan_starts = np.searchsorted(feat[nr], np.append(self.used, np.iinfo(np.int64).max)
                                          ).astype(np.int64)
        self.nan_tree = np.ascontiguousarray(tree[nr])
        self.nan_mask = np.ascontiguousarray(mask[nr])
        self.leafval = (np.concatenate(leafval) if leafval else np.zeros(0)).astype(np.float64)
        self.leafid = (np.concatenate(leafid) if leafid else np.zeros(0)).astype(np.int32)
        self.lbase = np.array(lbase, np.int64)
        self.groups = np.ascontiguousarray(tree_group[t0:t1], np.int64)
        if (t1 - t0) * self.V >= 2**32:
            raise ValueError(f"QuickScorer takes fewer than {2**32 // self.V} trees")
        self.tree_v = (self.tree * self.V).astype(np.uint32)
        self.nan_tree_v = (self.nan_tree * self.V).astype(np.uint32)

    def args(self, f32):
        """The batch kernels' arguments for float32 (``f32``) or float64 rows."""
        return (self.used, self.starts, self.thr32 if f32 else self.thr64, self.tree_v,
                self.mask, self.nan_starts, self.nan_tree_v, self.nan_mask, self.lbase,
                self.groups, self.leafval, self.leafid)


_SOURCE = '''"""Generated by hardwood.predict.quickscorer: V={V}. Do not edit."""
import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros
from hardwood.backends._intrinsics import and_lanes_lt

VL = {V}
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
ONE = np.uint64(1)


@njit(cache=True, nogil=True, inline="never")
def scan_feature(bv, xs, xo, hi, thr, tree, mask, p, e):
    """The nodes of one feature (p .. e-1, sorted by threshold) that some lane fails: a
    function of its own, so that its loop keeps every value in a register."""
    while p < e and thr[p] < hi:
        and_lanes_lt(bv, np.uint64(tree[p]), xs, xo, thr[p], mask[p], VL)
        p += ONE


@njit(cache=True, nogil=True)
def rows_block(X, r0, r1, used, starts, thr, tree, mask, nan_starts, nan_tree, nan_mask,
               lbase, groups, leafval, leafid, out, lout, want_leaf):
    F = used.shape[0]
    T = lbase.shape[0]
    K = out.shape[1]
    xs = np.empty(F * VL, X.dtype)  # the lane group's rows, feature-major
    bv = np.empty(T * VL, mask.dtype)  # its bitvectors, tree-major
    acc = np.empty(K * VL)  # its sums
    for q in range(r0, r1, VL):
        # the VL rows feature-major, lanes side by side (rows past r1 repeat the last one)
        nan = False
        for lane in range(VL):
            x = X[min(q + lane, r1 - 1)]
            for u in range(F):
                v = x[used[u]]
                xs[u * VL + lane] = v
                nan |= v != v
        bv[:] = ALL
        for u in range(F):
            xo = np.uint64(u * VL)
            hi = xs[xo]  # the largest value of the lanes (NaN only if all are NaN)
            for lane in range(1, VL):
                v = xs[xo + lane]
                if v > hi or hi != hi:
                    hi = v
            scan_feature(bv, xs, xo, hi, thr, tree, mask, np.uint64(starts[u]),
                         np.uint64(starts[u + 1]))
        if nan:  # NaN went left above; its default-right nodes send it right
            for u in range(F):
                for lane in range(VL):
                    v = xs[u * VL + lane]
                    if v != v:
                        for p in range(nan_starts[u], nan_starts[u + 1]):
                            bv[np.uint64(nan_tree[p]) + lane] &= nan_mask[p]
        m = min(VL, r1 - q)
        if want_leaf:
            for t in range(T):
                for lane in range(m):
                    lout[q + lane, t] = leafid[lbase[t] + trailing_zeros(bv[t * VL + lane])]
        else:  # the sums in registers, lanes side by side, added to in tree order
            for g in range(K):
                for lane in range(VL):
                    acc[g * VL + lane] = out[min(q + lane, r1 - 1), g]
            for t in range(T):
                lb = lbase[t]
                ao = np.uint64(groups[t] * VL)
                bo = np.uint64(t * VL)
                for lane in range(VL):
                    acc[ao + lane] += leafval[lb + trailing_zeros(bv[bo + lane])]
            for g in range(K):
                for lane in range(m):
                    out[q + lane, g] = acc[g * VL + lane]


@njit(cache=True, nogil=True, parallel=True)
def run_parallel(X, block, used, starts, thr, tree, mask, nan_starts, nan_tree, nan_mask,
                 lbase, groups, leafval, leafid, out, lout, want_leaf):
    n = X.shape[0]
    nblk = (n + block - 1) // block
    for b in prange(nblk):
        r0 = b * block
        rows_block(X, r0, min(n, r0 + block), used, starts, thr, tree, mask, nan_starts,
                   nan_tree, nan_mask, lbase, groups, leafval, leafid, out, lout, want_leaf)


@njit(cache=True, nogil=True)
def run_serial(X, used, starts, thr, tree, mask, nan_starts, nan_tree, nan_mask, lbase,
               groups, leafval, leafid, out, lout, want_leaf):
    rows_block(X, 0, X.shape[0], used, starts, thr, tree, mask, nan_starts, nan_tree,
               nan_mask, lbase, groups, leafval, leafid, out, lout, want_leaf)
'''


def kernels(V):
    return load_source(f"quickscorer_v{V}", _SOURCE.format(V=V))


# -- one row: the whole layout in one byte array (pred.pack_blob) -------------------------------
# ``one(X, blob, scratch, out, code)`` scores row 0 of X: per used feature a scalar scan (each
# node it visits fails the row), NaN through the default-right lists, the leaf values added to
# the base score in tree order, then the transform ``code``. ``scratch`` holds the T
# bitvectors. Five arguments: Numba's dispatcher costs about 0.1 us per array argument, and
# the batch kernels take twenty.

def one_row_blob(layout, base):
    """The layout's arrays for one row (a tree's bitvector at its index) in one byte array."""
    sections = [layout.used, layout.starts, layout.thr32, layout.thr64,
                layout.tree.astype(np.uint32), layout.mask, layout.nan_starts,
                layout.nan_tree.astype(np.uint32), layout.nan_mask, layout.lbase,
                layout.groups, layout.leafval, np.ascontiguousarray(base, np.float64)]
    return pack_blob([layout.lbase.size, layout.used.size, np.asarray(base).size], sections)


_ONE_SOURCE = '''"""Generated by hardwood.predict.quickscorer (one row): {MASK} bitvectors. Do not edit."""
import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros
from hardwood.predict.transform import transform_inplace

ALL = np.{MASK}({ALL})


@njit(cache=True, nogil=True)
def one(X, blob, scratch, out, code):
    h = blob[:{HW}].view(np.int64)
    T = h[0]
    F = h[1]
    K = h[2]
    used = blob[h[3]:h[4]].view(np.int64)
    starts = blob[h[5]:h[6]].view(np.int64)
    if X.itemsize == 4:  # float32 rows: thresholds rounded down to float32 (exact)
        thr = blob[h[7]:h[8]].view(X.dtype)
    else:
        thr = blob[h[9]:h[10]].view(X.dtype)
    tree = blob[h[11]:h[12]].view(np.uint32)
    mask = blob[h[13]:h[14]].view(np.{MASK})
    nan_starts = blob[h[15]:h[16]].view(np.int64)
    nan_tree = blob[h[17]:h[18]].view(np.uint32)
    nan_mask = blob[h[19]:h[20]].view(np.{MASK})
    lbase = blob[h[21]:h[22]].view(np.int64)
    groups = blob[h[23]:h[24]].view(np.int64)
    leafval = blob[h[25]:h[26]].view(np.float64)
    base = blob[h[27]:h[28]].view(np.float64)
    bv = scratch[:T * mask.itemsize].view(np.{MASK})
    bv[:] = ALL
    x = X[0]
    for u in range(F):
        v = x[used[u]]
        if v != v:  # NaN: the default-right nodes send it right
            for p in range(nan_starts[u], nan_starts[u + 1]):
                bv[np.uint64(nan_tree[p])] &= nan_mask[p]
        else:
            p = np.uint64(starts[u])
            e = np.uint64(starts[u + 1])
            while p < e and thr[p] < v:
                bv[np.uint64(tree[p])] &= mask[p]
                p += np.uint64(1)
    acc = out.reshape((1, out.size))
    for k in range(K):
        acc[0, k] = base[k]
    for t in range(T):
        acc[0, groups[t]] += leafval[lbase[t] + trailing_zeros(bv[t])]
    if code != 0:
        transform_inplace(code, acc)
'''


def one_row_kernel(width):
    mask = "uint32" if width == 32 else "uint64"
    return load_source(f"quickscorer_one_{mask}",
                       _ONE_SOURCE.format(MASK=mask, HW=HEADER_WORDS * 8,
                                          ALL=hex((1 << width) - 1))).one
