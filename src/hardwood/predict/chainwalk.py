"""The chained walk: VPred's interleaved lanes (Asadi et al., §3) for unpadded trees, with no
lane waiting for another.

In ``predict.vwalk`` the ``v`` lanes walk one tree together, so each tree costs ``v`` times the
longest of their ``v`` paths; on leaf-wise trees (LightGBM, LambdaMART) the longest of 8 paths
is far above the mean. Here all the walked trees are chained into one graph: an edge into a
leaf leads to the next tree's root and carries the leaf's value, the last tree's leaf edges
lead to a sink that loops on itself. One step of a lane is::

    k = 2 * i + (x[feature[i]] <= threshold[i])
    i = child[k]
    acc += edge_value[k]

so a lane goes from tree to tree on its own, and the lanes stop together only once, when all
have reached the sink: a row costs the sum of its paths, and ``v`` rows the longest of ``v``
such sums, which differ little. Leaves cost no step at all (an edge into a leaf is the last
step in its tree). Each lane adds the leaf values to its row's output in the model's tree
order, as the naive walk does, so the sums are the same floats. Rows with NaN walk like the
others (``pred.transposed_block``'s dual copy: a default-left split reads the copy where NaN
is -inf, or key 0).

The trees are cut into chunks of about ``CHUNK_NODES`` nodes, each chunk ending in a sink of
its own, and a block's rows walk one chunk after the other (VPred's tree blocking: the chunk's
nodes stay in the cache while the block's rows go through it). A node is one 32-byte record
(for float32 rows: the ordered key of the threshold, ``_intrinsics.order_key``, the feature and
the two children as uint32, then the two edge values; the rows' block copy holds keys), and
every index is unsigned: Numba then emits no negative-index fix-up, which cut a step by a third.

It serves models of one output without categorical splits, for their raw scores; the
per-tree leaf ids (``output='leaf'``) come from ``predict.vwalk``, which keeps its trees apart.
This is the interleaving the issue names ("VPred-style interleaving across rows"): no
bitvectors, no feature-ordered node lists (QuickScorer's patented traversal is not used).
"""
from __future__ import annotations

import numpy as np

from ._cache import load_source
from .pred import HEADER, feat_dtype, floor32, order_keys
from .vwalk import min_of_lanes

UNROLL = 2  # steps of every lane between two checks for the sink
CHUNK_NODES = 2048  # nodes of a chunk of trees (64 KiB of records): see ChainLayout


class ChainLayout:
    """The walked trees of a ``vwalk.WalkLayout`` chained, in chunks: per node its feature,
    threshold, and per edge (``2 * node + taken``) the next node and the value added (a
    leaf's, where the edge enters a leaf; else 0). Chunk ``k``'s nodes run from
    ``starts[k]`` to its sink ``sinks[k]`` (its largest index), where its lanes stop."""

    def __init__(self, w, v_walk, V):
        """``w``: the walk layout of at least one tree, its features stored for ``v_walk``
        lanes; this walk's are stored for ``V``."""
        a = w.arrays
        info = a["info"]
        pos, m, lpos = info[:, 0], info[:, 1], info[:, 2]
        # a tree that is one leaf gets one node whose two edges carry its value, so that
        # every row adds the trees' values in the model's order, as the naive walk does
        mc = np.maximum(m, 1)
        # the trees in chunks of about CHUNK_NODES nodes, each ending in a sink of its own
        chunk = np.zeros(len(m), np.int64)
        k = filled = 0
        for t, size in enumerate(mc):
            if filled and filled + size > CHUNK_NODES:
                k, filled = k + 1, 0
            chunk[t], filled = k, filled + size
        io = np.concatenate([[0], np.cumsum(mc)[:-1]]).astype(np.int64) + chunk  # first node
        last = np.r_[chunk[1:] != chunk[:-1], True]  # the last tree of its chunk
        self.sinks = io[last] + mc[last]
        self.starts = np.r_[0, self.sinks[:-1] + 1].astype(np.int64)
        N = int(self.sinks[-1]) + 1
        next_root = np.where(last, self.sinks[chunk], np.r_[io[1:], 0])
        tree = np.repeat(np.arange(len(m)), mc)  # each real node's tree
        local = np.arange(tree.size) - np.repeat(np.cumsum(mc) - mc, mc)
        node = io[tree] + local  # its place in the chain
        stump = m[tree] == 0
        old = np.where(stump, 0, pos[tree] + local)  # its index in the walk layout
        self.ch = np.repeat(np.arange(N), 2)  # a sink links to itself
        self.ev = np.zeros(2 * N, np.float64)
        for s in (0, 1):
            c = np.where(stump, m[tree], a["ch"][2 * old + s].astype(np.int64))  # local child
            leaf = c >= m[tree]
            self.ch[2 * node + s] = np.where(leaf, next_root[tree], io[tree] + c)
            at = np.where(leaf, lpos[tree] + c - m[tree], 0)
            self.ev[2 * node + s] = np.where(leaf, a["leafval"][at], 0.0)
        self.feat = np.zeros(N, np.int64)
        self.feat[node] = np.where(stump, 0, a["feat"][old].astype(np.int64) // v_walk * V)
        self.thr64 = np.full(N, np.inf)
        self.thr64[node] = np.where(stump, np.inf, a["thr64"][old])
        self.V = V
        self.group = int(info[0, 3])
        self._arrays = {}

    def arrays(self, narrow):
        """The kernel's node arrays for float32 (``narrow``) or float64 rows, laid out on
        first use: one 32-byte record a node, so that a step reads one cache line. ``rec``
        (float64 items, 4 a node) holds the edge values in items 2-3, its int32 or uint32 view
        ``links`` the children in items 2-3 (of 8); for float32 rows ``links`` also holds the
        ordered key of the threshold rounded down to float32 (item 0) and the feature (item 1);
        for float64 rows ``rec`` holds the threshold in item 0 and the features are apart
        (1-2 bytes a node): (rec, links) or (rec, links, feat)."""
        got = self._arrays.get(narrow)
        if got is None:
            rec = np.zeros(self.thr64.size * 4, np.float64)
            rec.reshape(-1, 4)[:, 2:] = self.ev.reshape(-1, 2)
            links = rec.view(np.uint32 if narrow else np.int32).reshape(-1, 8)
            links[:, 2:4] = self.ch.reshape(-1, 2)
            if narrow:
                links[:, 0] = order_keys(floor32(self.thr64))
                links[:, 1] = self.feat
                got = (rec, links.reshape(-1))
            else:
                rec.reshape(-1, 4)[:, 0] = self.thr64
                got = (rec, links.reshape(-1),
                       self.feat.astype(feat_dtype(int(self.feat.max()) + self.V)))
            self._arrays[narrow] = got
        return got


def source(V, narrow):
    """The module of the chained walk of ``V`` lanes for float32 (``narrow``) or float64 rows:
    ``run_parallel`` / ``run_serial`` over blocks of rows, each block copied feature-major
    (the dual copy) with its last group of lanes padded by repeating the block's last row."""
    args = f"rec, links, {'' if narrow else 'feat, '}starts, sinks, g, out"
    L = [HEADER.format(V=V, CAT=False).replace("hardwood.predict.pred:",
                                               "hardwood.predict.chainwalk:"),
         "from hardwood.backends._intrinsics import order_key",
         "@njit(cache=True, nogil=True)",
         f"def walk_block(X, r0, r1, used, {args}):",
         "    F = used.shape[0]",
         "    H = F // 2",
         f"    nq = (r1 - r0 + {V - 1}) // {V}",
         f"    xs = np.empty(nq * {V} * F, {'np.uint32' if narrow else 'X.dtype'})",
         "    ninf = X.dtype.type(-np.inf)",
         "    for q in range(nq):",
         f"        base = q * {V} * F",
         f"        for lane in range({V}):",
         f"            xr = X[min(r0 + q * {V} + lane, r1 - 1)]",
         "            for u in range(H):",
         "                a = xr[used[u]]"]
    if narrow:  # ordered keys; NaN: the largest key (goes right), in the copy key 0 (left)
        L += ["                kk = order_key(a) if a == a else np.uint32(0xFFFFFFFF)",
              f"                xs[base + u * {V} + lane] = kk",
              f"                xs[base + (u + H) * {V} + lane] = kk if a == a else np.uint32(0)"]
    else:
        L += [f"                xs[base + u * {V} + lane] = a",
              f"                xs[base + (u + H) * {V} + lane] = a if a == a else ninf"]
    L += ["    F1 = np.uint64(1)",
         "    F2 = np.uint64(2)",
         "    F4 = np.uint64(4)",
         "    F8 = np.uint64(8)",
         "    for k in range(starts.shape[0]):  # the chunks of trees, each over the block's rows",
         "        start = np.uint64(starts[k])",
         "        usink = np.uint64(sinks[k])",
         "        for q in range(nq):",
         f"            xq = xs[q * {V} * F:]"]
    L += [f"            i{lane} = start" for lane in range(V)]
    L += [f"            r = r0 + q * {V}"]
    # each lane adds to its row's output as it stands, tree after tree: the naive walk's sums
    L += [f"            a{lane} = out[r + {lane}, g] if r + {lane} < r1 else 0.0"
          for lane in range(V)]
    L += ["            while True:"]
    for _ in range(UNROLL):
        for lane in range(V):
            f = f"links[i{lane} * F8 + F1]" if narrow else f"feat[i{lane}]"
            t = f"links[i{lane} * F8]" if narrow else f"rec[i{lane} * F4]"
            L += [f"                c{lane} = np.uint64("
                  f"xq[np.uint64({f}) + np.uint64({lane})] <= {t})",
                  f"                a{lane} += rec[i{lane} * F4 + F2 + c{lane}]",
                  f"                i{lane} = np.uint64(links[i{lane} * F8 + F2 + c{lane}])"]
    L += [f"                if {min_of_lanes(V)} == usink:",
          "                    break"]
    for lane in range(V):
        L += [f"            if r + {lane} < r1:", f"                out[r + {lane}, g] = a{lane}"]
    L += ["",
          "@njit(cache=True, nogil=True, parallel=True)",
          f"def run_parallel(X, block, used, {args}):",
          "    n = X.shape[0]",
          "    nblk = (n + block - 1) // block",
          "    for b in prange(nblk):",
          "        r0 = b * block",
          f"        walk_block(X, r0, min(n, r0 + block), used, {args})",
          "",
          "@njit(cache=True, nogil=True)",
          f"def run_serial(X, block, used, {args}):",
          "    n = X.shape[0]",
          "    for r0 in range(0, n, block):",
          f"        walk_block(X, r0, min(n, r0 + block), used, {args})",
          ""]
    return "\n".join(L) + "\n"


def kernels(V, narrow):
    """The chained walk's module of ``V`` lanes for float32 (``narrow``) or float64 rows."""
    return load_source(f"chain_v{V}_{'f32' if narrow else 'f64'}", source(V, narrow))
