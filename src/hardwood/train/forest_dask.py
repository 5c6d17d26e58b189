"""Growing random-forest trees over Dask partitions: ``hardwood.dask``'s histogram mode, for
data that do not fit on one worker (the row work is ``backends/dask_forest.py``).

CudaTree's hybrid growth (``forest_grower.py``), across machines. A batch of trees grows
level by level, all its trees at once:

* **large nodes** (at least ``small_rows`` rows) are split from histograms: every partition
  builds the totals and the histograms of every large node of the level over the node's
  candidate features (①), the partitions' arrays are summed by a binary tree of Dask tasks in
  partition order, and the client finds the splits (②, ``forest_engine.SplitSearch``, the
  single machine's code); the partitions split their rows (③) as the next level's first
  task. One round trip per level (and one more for the rare node whose first features were
  all constant);
* **small nodes**: their rows (bins, labels, weights) are gathered to one task, which grows
  the node's subtree with the single-machine grower from the node's depth and key
  (``grow_nodes``); the client grafts the subtrees into the trees.

A node's features come from its key (its path from the root), its rows are in the same order
as on one machine (partitions in order, each in its own order), and the bootstrap counts are
drawn by each partition for its own rows from the same generator: so the trees are the single
machine's, node for node, up to the rounding of float sums of non-integer weights or
regression targets taken in another order.
"""
from __future__ import annotations

import logging
import time
from dataclasses import replace

import numpy as np

from ..backends import forest_cpu as K
from ..backends.dask import Per, submit_each, sum_in_order
from ..backends.dask_forest import labels_part, node_rows, node_stats, split_rows, start_rows
from ..backends.forest_engine import SplitSearch, is_leaf
from ..parallel import threads
from .forest_grower import GrowData, NodeBuilder, TreeParams, finish_tree, grow_nodes

LOG = logging.getLogger("hardwood.dask")
ROWS_BUDGET = 512 << 20  # bytes of row numbers and weights a partition keeps per batch
SUBTREE_BYTES = 256 << 20  # a small node's gathered bins stay under this


def default_small_rows(n_rows, n_features, n_workers):
    """Nodes with fewer rows grow where their rows are gathered: about a quarter of a
    worker's share of the rows, within 4,096 rows and ``SUBTREE_BYTES`` of bins."""
    share = n_rows // max(1, 4 * n_workers)
    return int(max(4096, min(share, SUBTREE_BYTES // max(1, n_features))))


def grow_subtrees(meta, data, tp, *parts):
    """Each node's subtree (a trimmed NodeBuilder), grown from its rows gathered from every
    partition (``parts``: one list of ``node_rows`` per partition, in partition order).
    ``meta``: (key, depth, root weight of its tree) of each node; ``data``: the GrowData
    without rows (its bin mapper's arrays, task and classes)."""
    out = []
    for k, (key, depth, w_root) in enumerate(meta):
        bins_row = np.ascontiguousarray(np.concatenate([p[k][0] for p in parts]))
        rows_data = replace(data, bins_col=np.ascontiguousarray(bins_row.T), bins_row=bins_row,
                            yk=np.concatenate([p[k][1] for p in parts]),
                            yv=np.concatenate([p[k][2] for p in parts]))
        w = np.concatenate([p[k][3] for p in parts])
        rows = np.arange(bins_row.shape[0], dtype=np.int32)
        with threads(1):
            b = grow_nodes(rows_data, tp, rows, w, np.uint64(key), depth0=int(depth),
                           w_root=float(w_root))
        out.append(b.trimmed())
    return out


class DaskForestGrower:
    """Grows a forest's trees over binned partitions (``backends.dask.BinnedPart`` futures)
    and their label futures; see the module docstring.

    ``meta``: a GrowData without rows (the bin mapper's arrays, the task, the classes);
    ``sizes``: the partitions' row counts; ``tag``: names the tasks (concurrent fits never
    share a key). ``log`` gets one dict per round trip: nodes, bytes summed, seconds."""

    def __init__(self, client, parts, labels, sizes, meta: GrowData, tp: TreeParams, tag,
                 small_rows=None):
        self.client, self.parts, self.meta, self.tp, self.tag = client, list(parts), meta, tp, tag
        self.sizes = [int(s) for s in sizes]
        self.lo = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self.n = int(self.lo[-1])
        self.P = len(self.parts)
        self.log = []
        self._step = 0
        self.n_workers = max(1, len(client.scheduler_info()["workers"]))
        self.small = int(small_rows if small_rows is not None else
                         default_small_rows(self.n, meta.bins_col.shape[0], self.n_workers))
        self.labels = self._each("labels", labels_part, Per(labels), bool(meta.is_reg))

    def _each(self, what, fn, *args, n=None):
        self._step += 1
        return submit_each(self.client, f"hardwood-forest-{what}-{self.tag}-{self._step}", fn,
                           *args, n=self.P if n is None else n)

    def batch_size(self, n_trees):
        biggest = max(self.sizes) if self.sizes else 1
        return int(max(1, min(n_trees, 32, ROWS_BUDGET // max(1, 12 * biggest))))

    def grow(self, slots, weights=None):
        """Grow one batch of trees; returns their TreeArrays. ``slots``: per tree ``(seed,
        tree index, how)``: ``how`` is ``n_boot`` for a uniform bootstrap (the partitions
        draw it), ``'ones'`` for every row once, or ``'given'`` for the tree's weights in
        ``weights`` (per tree, a list of each partition's slice)."""
        meta, tp, C = self.meta, self.tp, self.meta.C
        per_part = [[None if weights is None or how != "given" else weights[s][p]
                     for s, (_, _, how) in enumerate(slots)] for p in range(self.P)]
        states = self._each("start", start_rows, Per(self.sizes), Per(self.lo[:-1].tolist()),
                            self.n, list(slots), Per(per_part))
        trees = []  # per tree: [builder, root weight]
        for seed, t, _ in slots:
            b = NodeBuilder(64, C)
            b.add(0, 0, 0, K.root_key(seed, t))
            trees.append([b, 0.0])
        frontier = [(s, 0) for s in range(len(slots))]
        splits, drop, grafts = [], [], []
        while frontier:
            states, found = self._search(states, trees, frontier, splits, drop)
            splits, drop, small, frontier = [], [], [], []
            for (s, i), (T, n, search, counts) in found.items():
                b = trees[s][0]
                res = None if search is None else search.result(T, C, tp, trees[s][1])
                if res is None:
                    drop.append((s, i))
                    continue
                f, bbin, dl, gain, nxt = res
                b.feature[i], b.sbin[i], b.dl[i], b.gain[i], b.snext[i] = f, bbin, dl, gain, nxt
                cnt, miss = counts[f], int(meta.nv[f])
                n_left = int(cnt[:bbin + 1].sum() + (cnt[miss] if dl else 0))
                L, R = (int(c[0]) for c in b.add_children(np.array([i]), np.array([n_left])))
                b.begin[L], b.end[L], b.begin[R], b.end[R] = 0, n_left, 0, n - n_left
                splits.append((s, i, f, bbin, miss, dl, L, R))
                for c, m in ((L, n_left), (R, n - n_left)):
                    (small if m < self.small else frontier).append((s, c))
            if small:  # split now: the small nodes' rows leave for their subtrees
                states = self._each("split", split_rows, Per(self.parts), Per(states), splits,
                                    drop)
                splits, drop = [], list(small)
                grafts += self._subtrees(states, trees, small)
        for group, fut in grafts:
            for (s, i), sub in zip(group, fut.result()):
                trees[s][0].graft(i, sub)
        return [finish_tree(b, meta, tp.criterion) for b, _ in trees]

    def _search(self, states, trees, frontier, splits, drop):
        """① and ② of a level: for each frontier node (slot, id): (totals, rows, its
        SplitSearch or None for a leaf, row counts per bin of each searched feature). The
        level's first task applies the last level's splits."""
        meta, tp, C = self.meta, self.tp, self.meta.C
        maxbins, n_feat = meta.maxbins, meta.bins_col.shape[0]
        if splits or drop:
            states = self._each("split", split_rows, Per(self.parts), Per(states), splits, drop)
        found = {}
        pending = []
        for s, i in frontier:
            b = trees[s][0]
            search = SplitSearch(b.key[i], n_feat, tp.mtry)
            at_depth = int(b.depth[i]) >= tp.max_depth  # a leaf: its totals only
            pending.append(((s, i), search, np.zeros(0, np.int64) if at_depth
                            else search.next_features()))
        first = True
        while pending:
            flat = self._stats(states, [(s, i, feats) for (s, i), _, feats in pending])
            at, more = 0, []
            for (s, i), search, feats in pending:
                nf = len(feats)
                n = int(flat[at])
                T = flat[at + 1:at + 1 + C]
                at += 1 + C
                stat = flat[at:at + nf * maxbins * C].reshape(nf, maxbins, C)
                at += nf * maxbins * C
                cnt = flat[at:at + nf * maxbins].reshape(nf, maxbins).astype(np.int64)
                at += nf * maxbins
                if i == 0:  # the tree's weight, which min_weight_fraction_leaf is of
                    trees[s][1] = float(K.side_weight(T, C, tp.criterion))
                if first:
                    b = trees[s][0]
                    b.tot[i] = T
                    b.begin[i], b.end[i] = 0, n
                    if nf == 0 or is_leaf(T, n, int(b.depth[i]), C, tp, trees[s][1]):
                        found[(s, i)] = (T, n, None, None)
                        continue
                    found[(s, i)] = (T, n, search, {})
                T, n, _, counts = found[(s, i)]
                search.scan(stat, cnt, feats, meta.nv, T, n, C, tp, trees[s][1])
                for j, f in enumerate(feats):
                    counts[int(f)] = cnt[j]
                nxt = search.next_features()
                if nxt is not None:
                    more.append(((s, i), search, nxt))
            pending, first = more, False
        return states, found

    def _stats(self, states, requests):
        """The partitions' ``node_stats`` of ``requests``, summed in partition order."""
        t0 = time.perf_counter()
        meta = self.meta
        level = self._each("stats", node_stats, Per(self.parts), Per(self.labels), Per(states),
                           requests, meta.C, meta.maxbins, bool(meta.is_reg))
        out = sum_in_order(level, self._each).result()
        seconds = time.perf_counter() - t0
        moved = int(out.nbytes) * self.P
        self.log.append({"nodes": len(requests), "bytes": moved, "seconds": seconds})
        LOG.debug("forest statistics of %d nodes over %d partitions: %d bytes, %.4f s",
                  len(requests), self.P, moved, seconds)
        return out

    def _subtrees(self, states, trees, small):
        """Submit the small nodes' subtrees: the nodes in groups of about equal rows, one
        task per group (and one row-gathering task per group and partition). Returns
        (group, future) pairs."""
        order = sorted(small, key=lambda si: -int(trees[si[0]][0].end[si[1]]))
        n_groups = min(len(order), 2 * self.n_workers)
        groups, load = [[] for _ in range(n_groups)], np.zeros(n_groups)
        for s, i in order:  # the largest first, each to the lightest group
            g = int(np.argmin(load))
            groups[g].append((s, i))
            load[g] += int(trees[s][0].end[i])
        out = []
        for group in groups:
            rows = self._each("rows", node_rows, Per(self.parts), Per(self.labels),
                              Per(states), group)
            meta = [(int(trees[s][0].key[i]), int(trees[s][0].depth[i]), trees[s][1])
                    for s, i in group]
            self._step += 1
            fut = self.client.submit(grow_subtrees, meta, self.meta, self.tp, *rows,
                                     key=f"hardwood-forest-subtrees-{self.tag}-{self._step}")
            out.append((group, fut))
        return out
