"""Rows in pages: where the learner's steps ① ③ ⑤ run (DESIGN.md, "One learner over pages").

The tree learner (``train/learner.py``) never sees rows. It names nodes, and a ``Pages`` object
does the row work where the rows live:

* ``start(rows)``: the tree's rows (global row ids, ascending) become node 0;
* ``histograms(nodes)``: ① each page's partial histograms of the nodes, reduced by summing
  them in page order (deterministic), as a float64 array (len(nodes), total_bins, 2);
* ``partition(nodes, features, tables, lefts, rights)``: ③ each page splits its rows of each
  node, stably, into the two children; returns the children's global row counts;
* ``add_leaf_values(leaves, values, pred)``: ⑤ ``pred[rows of leaf i] += values[i]``;
* ``leaf_rows(leaf)``: the global row ids of a leaf (leaves refit from residuals).

``RowPages`` cuts an in-memory Dataset's rows into pages (by row-id ranges; a page may be
empty) and runs a row backend (``cpu``: Numba, ``reference``: the naive twins) on each page's
own row array and node segments. One page is in-core training; several are the test that
out-of-core pages, GPU pages and Dask workers can plug in here: they implement the same five
calls with the reduction of their home (a device sum, an all-reduce).
"""
from __future__ import annotations

import numpy as np


class _Page:
    """One page's rows (global ids) and each node's segment of them."""

    def __init__(self, rows):
        self.rows = rows
        self.seg = {0: (0, rows.shape[0])}


class RowPages:
    """In-memory rows cut into pages at the row ids ``cuts`` (``cuts[0] = 0``, ascending,
    ``cuts[-1] = n_rows``), each page worked by ``backend`` (a ``backends.base.Backend``)."""

    def __init__(self, backend, n_rows, cuts=None):
        self.backend = backend
        self.n_rows = int(n_rows)
        if cuts is None:
            cuts = [0, self.n_rows]
        cuts = np.asarray(cuts, dtype=np.int64)
        if cuts[0] != 0 or cuts[-1] != self.n_rows or np.any(np.diff(cuts) < 0):
            raise ValueError(f"page cuts must rise from 0 to {self.n_rows}, got {cuts.tolist()}")
        self.cuts = cuts
        self.pages = []

    @classmethod
    def even(cls, backend, n_rows, n_pages):
        """``n_pages`` pages of about equal row-id ranges."""
        return cls(backend, n_rows, np.linspace(0, n_rows, int(n_pages) + 1).astype(np.int64))

    @property
    def n_pages(self):
        return self.cuts.size - 1

    def start(self, rows):
        """Node 0 holds ``rows`` (global ids, ascending): each page takes those in its range.
        Returns the global row count of node 0."""
        at = np.searchsorted(rows, self.cuts)
        self.pages = [_Page(rows[at[p]:at[p + 1]]) for p in range(self.n_pages)]
        return int(rows.shape[0])

    def count(self, node):
        return sum(e - b for b, e in (pg.seg[node] for pg in self.pages))

    # ① ------------------------------------------------------------------------------------
    def histograms(self, nodes, g, h):
        """Each page's histograms of ``nodes``, summed in page order."""
        out = None
        for pg in self.pages:
            begins = [pg.seg[i][0] for i in nodes]
            ends = [pg.seg[i][1] for i in nodes]
            part = self.backend.build_histograms(pg.rows, begins, ends, g, h)
            if out is None:
                out = part
            else:
                out += part
        return out

    # ③ ------------------------------------------------------------------------------------
    def partition(self, nodes, features, tables, lefts, rights):
        """Split each node's rows of every page into its children; returns the global row
        counts (left, right) of each split."""
        n_left = np.zeros(len(nodes), dtype=np.int64)
        n_right = np.zeros(len(nodes), dtype=np.int64)
        for pg in self.pages:
            begins = [pg.seg[i][0] for i in nodes]
            ends = [pg.seg[i][1] for i in nodes]
            mids = self.backend.partition(pg.rows, begins, ends, features, tables)
            for k, i in enumerate(nodes):
                b, e = pg.seg.pop(i)
                mid = int(mids[k])
                pg.seg[lefts[k]] = (b, mid)
                pg.seg[rights[k]] = (mid, e)
                n_left[k] += mid - b
                n_right[k] += e - mid
        return n_left, n_right

    # ⑤ ------------------------------------------------------------------------------------
    def add_leaf_values(self, leaves, values, pred):
        for pg in self.pages:
            begins = [pg.seg[i][0] for i in leaves]
            ends = [pg.seg[i][1] for i in leaves]
            self.backend.add_leaf_values(pg.rows, begins, ends, values, pred)

    def leaf_rows(self, leaf):
        parts = [pg.rows[slice(*pg.seg[leaf])] for pg in self.pages]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
