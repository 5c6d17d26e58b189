"""The ``booster`` backend: the row work of a real training, traced for the accelerator model.

DESIGN.md's ``booster`` backend "runs the cpu steps for correctness and counts the memory
traffic and cycles". It is split in two. This module is the counting half: ``TracePages``
wraps the pages a training really uses (``backends/pages.py``), passes every call through
unchanged, and records what each call did, per tree and per node:

* ① ``histograms(nodes)``: the rows binned at each node (the root, then only the smaller
  child of each split: the subtraction trick), and how many distinct blocks of ``k``
  consecutive rows they touch (``BLOCK_SPANS``; a row-major record packed ``k`` to a memory
  block, or a column entry of ``64 / k`` bytes);
* ③ ``partition(nodes, features, ...)``: the rows partitioned at each node and the field its
  predicate reads, with the same block counts;
* ⑤ ``add_leaf_values(leaves, ...)``: the rows that reach each leaf, the leaf's depth and the
  distinct fields on its path (from the partitions that made it);
* the host seconds of each passed-through call, measured apart from the tracing itself.

The cost half (the accelerator's and the ideal machines' times) is ``hardwood.accel``, which
reads a finished trace. Nothing here runs unless a training is given ``TracePages``; the
wrapped pages never see the wrapper.
"""
from __future__ import annotations

import time

import numpy as np

# rows per memory block for which the distinct blocks touched are counted: a 64-byte block
# holds 64 one-byte column entries, 8 (g, h) pairs of float32, or k records of 64/k bytes
BLOCK_SPANS = (1, 2, 4, 8, 16, 32, 64)


def distinct_blocks(rows, spans=BLOCK_SPANS):
    """For each ``k`` in ``spans``: the distinct values of ``rows // k`` (``rows`` ascending,
    as every node's rows are: partitions are stable and a tree starts from ascending ids)."""
    rows = np.asarray(rows, dtype=np.int64)
    out = np.zeros(len(spans), dtype=np.int64)
    if rows.size == 0:
        return out
    for i, k in enumerate(spans):
        q = rows // k
        out[i] = 1 + int(np.count_nonzero(q[1:] != q[:-1]))
    return out


class TreeTrace:
    """What the row steps of one tree did (lists, one entry per node or leaf)."""

    def __init__(self, n_rows):
        self.n_rows = int(n_rows)            # rows of the tree (node 0)
        self.hist_rows = []                  # ① rows binned, one entry per node histogrammed
        self.hist_blocks = []                # ① distinct blocks (len(BLOCK_SPANS),) per node
        self.hist_depth = []                 # ① the node's depth
        self.part_rows = []                  # ③ rows partitioned, per split node
        self.part_field = []                 # ③ the field the predicate reads
        self.part_blocks = []                # ③ distinct blocks per split node
        self.part_depth = []
        self.leaf_rows = []                  # ⑤ rows reaching each leaf
        self.leaf_depth = []                 # ⑤ the leaf's depth (predicates on the path)
        self.leaf_fields = []                # ⑤ distinct fields on the leaf's path
        self.hist_calls = 0                  # ① calls (a level's, or a leaf's, smaller children)

    @property
    def fields(self):
        """The distinct fields the tree's predicates read."""
        return sorted(set(int(f) for f in self.part_field))

    @property
    def nodes_scanned(self):
        """Nodes whose histograms ② scans: the root, and both children of every node whose
        smaller child was binned (the larger one's histogram comes by subtraction)."""
        return 1 + 2 * (len(self.hist_rows) - 1) if self.hist_rows else 0


class TracePages:
    """Pages that pass every call to ``inner`` and record each tree's row work (see the
    module's docstring). ``in_core`` is False, so that the grower takes the learner over
    pages, which builds the same trees as the fused grower, bit for bit, and calls every
    step here. A sampled round would compact its sample into other pages, untraced: the
    trace is for unsampled training (``subsample=1``)."""

    in_core = False

    def __init__(self, inner):
        self.inner = inner
        self.trees = []
        self.host = {"histogram": 0.0, "partition": 0.0, "update": 0.0}
        self.overhead = {"histogram": 0.0, "partition": 0.0, "update": 0.0}
        self._depth = {}
        self._path = {}

    @property
    def n_pages(self):
        return self.inner.n_pages

    @property
    def n_rows(self):
        return self.inner.n_rows

    def _node_rows(self, node):
        """The global row ids of ``node`` (ascending)."""
        return self.inner.leaf_rows(int(node))

    def start(self, rows):
        n = self.inner.start(rows)
        self.trees.append(TreeTrace(n))
        self._depth = {0: 0}
        self._path = {0: ()}
        return n

    def _pass(self, step, t0, call, *args):
        """``call(*args)`` on the wrapped pages, its seconds added to ``step``'s host time
        and the tracing's own seconds since ``t0`` to ``step``'s overhead."""
        t1 = time.perf_counter()
        out = call(*args)
        self.host[step] += time.perf_counter() - t1
        self.overhead[step] += t1 - t0
        return out

    def count(self, node):
        return self.inner.count(node)

    # ① ------------------------------------------------------------------------------------
    def histograms(self, nodes, g, h):
        t0 = time.perf_counter()
        tr = self.trees[-1]
        tr.hist_calls += 1
        for i in nodes:
            rows = self._node_rows(i)
            tr.hist_rows.append(int(rows.size))
            tr.hist_blocks.append(distinct_blocks(rows))
            tr.hist_depth.append(self._depth[int(i)])
        return self._pass("histogram", t0, self.inner.histograms, nodes, g, h)

    # ③ ------------------------------------------------------------------------------------
    def partition(self, nodes, features, tables, lefts, rights):
        t0 = time.perf_counter()
        tr = self.trees[-1]
        for k, i in enumerate(nodes):
            i = int(i)
            rows = self._node_rows(i)
            f = int(features[k])
            tr.part_rows.append(int(rows.size))
            tr.part_field.append(f)
            tr.part_blocks.append(distinct_blocks(rows))
            tr.part_depth.append(self._depth[i])
            path = self._path[i] + (f,)
            for c in (int(lefts[k]), int(rights[k])):
                self._depth[c] = self._depth[i] + 1
                self._path[c] = path
        return self._pass("partition", t0, self.inner.partition, nodes, features, tables,
                          lefts, rights)

    # ⑤ ------------------------------------------------------------------------------------
    def add_leaf_values(self, leaves, values, pred):
        t0 = time.perf_counter()
        tr = self.trees[-1]
        for leaf in leaves:
            leaf = int(leaf)
            tr.leaf_rows.append(int(self.inner.count(leaf)))
            tr.leaf_depth.append(self._depth.get(leaf, 0))
            tr.leaf_fields.append(len(set(self._path.get(leaf, ()))))
        return self._pass("update", t0, self.inner.add_leaf_values, leaves, values, pred)

    def leaf_rows(self, leaf):
        return self.inner.leaf_rows(leaf)

    def predict_binned(self, binned_tree, pred):
        return self.inner.predict_binned(binned_tree, pred)
