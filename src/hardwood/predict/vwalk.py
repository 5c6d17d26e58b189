"""VPred for trees that padding does not suit: deep or unbalanced trees (LightGBM's leaf-wise
trees reach depth 20-40 with a few hundred leaves; padding them to full depth is impossible or
wasteful).

The walk keeps vpred's branch-free, ``v``-rows-interleaved step but follows child links
instead of ``2i + 1``/``2i + 2``::

    i = child[2 * i + (x[feature[i]] <= threshold[i] | (isnan(x) & default_left[i]))]

Each tree's internal nodes are numbered breadth-first from 0, its leaves after them, so a row
has reached a leaf once its index is ``>= m`` (the tree's internal-node count). A leaf links to
itself through both child slots (slot 1: the test held, slot 0: it did not) (threshold +inf, feature 0), so a lane that is done keeps
stepping in place while the others go on; the ``v`` lanes stop together when the smallest index
is a leaf. A tree costs ``v`` times the longest path among the ``v`` rows, not its depth.

The block drivers, the NaN-free walk and the float32 thresholds are pred's
(:func:`hardwood.predict.pred.block_driver_source`).
"""
from __future__ import annotations

from functools import partial

import numpy as np
from numba import njit

from ._cache import load_source
from .pred import (HEADER, floor32, lane_step, block_driver_source, lanes_tail,
                   lanes_rows, node_slices, root_test, walk_head)
from .treeshape import bfs_order

_ARGS = "ch, feat, thr, flags, catoff, bits, ncat, info, leafval, leafid, out, lout, want_leaf"


class WalkLayout:
    """The trees ``sel`` (indices into ``trees``) packed for the walk of ``V`` lanes: per tree
    ``info[k] = (node offset, internal-node count m, leaf offset, output group, column)``;
    a feature ``f`` is stored as ``position[f] * V`` (its place among the used features),
    or with ``dual`` (``U`` used features, the kernels' ``dual`` walk, see
    ``pred.transposed_block``) as ``(U + position[f]) * V`` at a numerical split whose missing
    values go left.
    ``width`` > 1: each tree of ``sel`` heads a run of ``width`` trees that share its splits,
    as in ``pred.PredLayout``; ``leafval`` is then 2-D, one column per tree of the run."""

    def __init__(self, trees, tree_group, sel, t0, V, feat_dtype, position, width=1, dual=0):
        W = int(width)
        sizes = [trees[t].n_nodes for t in sel]
        total = int(sum(sizes))
        feat = np.zeros(total, feat_dtype)
        thr = np.full(total, np.inf)
        flags = np.ones(total, np.uint8)  # leaves: default-left, so NaN also stays in place
        catoff = np.zeros(total, np.int64)
        ch = np.zeros(2 * total, np.int32)
        n_leaves = [int(np.sum(trees[t].feature < 0)) for t in sel]
        leafval = np.zeros((sum(n_leaves), W) if W > 1 else sum(n_leaves), np.float64)
        leafid = np.zeros(sum(n_leaves), np.int32)
        info = np.zeros((len(sel), 5), np.int64)
        bits, nb_bits, pos, lpos = [], 0, 0, 0
        for k, t in enumerate(sel):
            tr = trees[t]
            m, nl = _fill_tree(tr.feature, tr.threshold, tr.left, tr.right, tr.default_left,
                               tr.is_categorical, tr.cat_offset, position, int(dual), V,
                               pos, nb_bits,
                               lpos, feat, thr, flags, catoff, ch, leafid)
            leaves = leafid[lpos:lpos + nl]
            if W > 1:
                for u in range(W):
                    leafval[lpos:lpos + nl, u] = trees[t + u].value[leaves]
            else:
                leafval[lpos:lpos + nl] = tr.value[leaves]
            info[k] = (pos, m, lpos, int(tree_group[t]), t - t0)
            bits.append(tr.cat_bitsets)
            nb_bits += tr.cat_bitsets.size
            pos += tr.n_nodes
            lpos += nl
        self.arrays = {"ch": ch, "feat": feat, "thr64": thr, "thr32": floor32(thr),
                       "flags": flags, "catoff": catoff, "info": info, "leafval": leafval,
                       "leafid": leafid}
        self.has_cat = any(trees[t].is_categorical.any() for t in sel)
        self.bitsets = (np.concatenate(bits).astype(np.uint32) if nb_bits
                        else np.zeros(1, np.uint32))


@njit(cache=True, nogil=True)
def _fill_tree(feature, threshold, left, right, default_left, is_cat, cat_offset, position,
               dual, V, pos, nb_bits, lpos, feat, thr, flags, catoff, ch, leafid):
    """Lay one tree out at node ``pos`` and leaf ``lpos`` (see the module docstring): its
    internal nodes numbered breadth-first from 0, its leaves after them, each leaf linked to
    itself; ``dual`` > 0: the used-feature count U of the dual walk (see
    :class:`WalkLayout`). Returns (internal-node count, leaf count)."""
    order = bfs_order(feature, left, right)
    new = np.empty(feature.shape[0], np.int64)
    m = 0
    for i in order:
        if feature[i] >= 0:
            m += 1
    a, b = 0, m
    for i in order:
        if feature[i] >= 0:
            new[i] = a
            a += 1
        else:
            new[i] = b
            b += 1
    for i in order:
        j = pos + new[i]
        if feature[i] >= 0:
            u = position[feature[i]]
            if dual > 0 and default_left[i] and not is_cat[i]:
                u += dual  # the copy that holds -inf for NaN (pred.transposed_block)
            feat[j] = u * V  # see pred.lane_step
            thr[j] = threshold[i]
            flags[j] = (1 if default_left[i] else 0) | (2 if is_cat[i] else 0)
            catoff[j] = cat_offset[i] + nb_bits if is_cat[i] else 0
            ch[2 * j] = new[right[i]]  # slot 0: goes right (test false)
            ch[2 * j + 1] = new[left[i]]
        else:
            ch[2 * j] = new[i]  # a leaf links to itself (thr +inf, flags default-left)
            ch[2 * j + 1] = new[i]
            leafid[lpos + new[i] - m] = i
    return m, b - m


def _step(lane, mode, indent, V=None, direct=False):
    return lane_step(lane, mode, indent, "{i} = np.int64(hk[2 * {j} + np.uint64({c})])", V,
                      direct)


def min_of_lanes(V):
    """The smallest lane index, as a balanced tree of min()."""
    names = [f"i{lane}" for lane in range(V)]
    while len(names) > 1:
        nxt = [f"min({names[a]}, {names[a + 1]})" for a in range(0, len(names) - 1, 2)]
        names = nxt + ([names[-1]] if len(names) % 2 else [])
    return names[0]


def _walk(name, V, mode, direct=False, multi=False):
    L = walk_head(name, _ARGS, V, direct, multi, mode == "dual") + [
         "    for k in range(info.shape[0]):",
         "        nb = info[k, 0]",
         "        m = info[k, 1]",
         "        lb = info[k, 2] - m",
         "        g = info[k, 3]",
         "        col = info[k, 4]"] + node_slices("") + [
         "        hk = ch[2 * nb:]",
         "        f0 = fk[0]",  # the root, read once for all lanes (a leaf when m == 0)
         "        t0 = tk[0]",
         "        d0 = (ok[0] & 1) != 0",
         "        r = r0",
         f"        while r + {V} <= r1:"] + lanes_rows(V, direct)
    for lane in range(V):
        L.append(f"            i{lane} = 0" if mode == "cat" else
                 f"            i{lane} = np.int64(hk[np.uint64({root_test(lane, mode, direct)})])")
    L.append("            lo = 0" if mode == "cat" else f"            lo = {min_of_lanes(V)}")
    L.append("            while lo < m:  # until every lane has reached a leaf")
    for lane in range(V):
        L += _step(lane, mode, "                ", V, direct)
    L.append(f"                lo = {min_of_lanes(V)}")
    L += lanes_tail(V, "leafid", "leafval", "lb + {i}", "while i0 < m:",
                    _step(0, mode, "                "), multi)
    return L


def _source(V, cat, multi=False, direct=False):
    L = [HEADER.format(V=V, CAT=cat).replace("hardwood.predict.pred:",
                                               "hardwood.predict.vwalk:")]
    L += block_driver_source(partial(_walk, multi=True) if multi else _walk, V, cat, _ARGS,
                             direct)
    return "\n".join(L) + "\n"


def kernels(V, cat, multi=False, direct=False):
    """The generated module of ``V`` lanes; ``multi``: for 2-D ``leafval`` (see
    :class:`WalkLayout`'s ``width``); ``direct``: rows read in place (see
    ``pred.block_driver_source``)."""
    tag = f"v{V}_{'c' if cat else 'n'}{'_m' if multi else ''}{'_d' if direct else ''}"
    return load_source(f"vwalk_{tag}", _source(V, bool(cat), bool(multi), bool(direct)))
