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

import os

import numpy as np


class DeviceRow:
    """Output ``k``'s row of a (K, n) array that lives where the pages keep it (margins, g or
    h on the GPU, ``CudaPages``, or on the Dask workers, ``DaskPages``): what the Booster
    passes to such pages where the host path passes a row of its own array."""

    def __init__(self, array, k):
        self.array, self.k = array, int(k)

    @property
    def row(self):
        return self.array[self.k]


class _Page:
    """One page's rows (global ids) and each node's segment of them."""

    def __init__(self, rows):
        self.rows = rows
        self.seg = {0: (0, rows.shape[0])}


class RowPages:
    """In-memory rows cut into pages at the row ids ``cuts`` (``cuts[0] = 0``, ascending,
    ``cuts[-1] = n_rows``), each page worked by ``backend`` (a ``backends.base.Backend``)."""

    in_core = True  # the rows live in the backend's in-memory matrices (the fused grower may
                    # grow a one-page tree there)

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
        self.pages = [_Page(self._page_rows(rows[at[p]:at[p + 1]], p))
                      for p in range(self.n_pages)]
        return int(rows.shape[0])

    def _page_rows(self, rows, p):
        """Page ``p``'s rows as its backend numbers them (here: global ids)."""
        return rows

    def _global(self, rows, p):
        """The global ids of rows of page ``p`` as its backend numbers them."""
        return rows

    def _each(self):
        """(page, its backend, the page's first and last global row + 1) in page order; the
        backend numbers the page's rows from the first (here: every page sees all rows)."""
        for pg in self.pages:
            yield pg, self.backend, 0, self.n_rows

    def count(self, node):
        return sum(e - b for b, e in (pg.seg[node] for pg in self.pages))

    # ① ------------------------------------------------------------------------------------
    def histograms(self, nodes, g, h):
        """Each page's histograms of ``nodes``, summed in page order."""
        out = None
        for pg, be, lo, hi in self._each():
            begins = [pg.seg[i][0] for i in nodes]
            ends = [pg.seg[i][1] for i in nodes]
            part = be.build_histograms(pg.rows, begins, ends, g[lo:hi], h[lo:hi])
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
        for pg, be, _, _ in self._each():
            begins = [pg.seg[i][0] for i in nodes]
            ends = [pg.seg[i][1] for i in nodes]
            mids = be.partition(pg.rows, begins, ends, features, tables)
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
        for pg, be, lo, hi in self._each():
            begins = [pg.seg[i][0] for i in leaves]
            ends = [pg.seg[i][1] for i in leaves]
            be.add_leaf_values(pg.rows, begins, ends, values, pred[lo:hi])

    def leaf_rows(self, leaf):
        parts = [self._global(pg.rows[slice(*pg.seg[leaf])], p)
                 for p, pg in enumerate(self.pages)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)

    def predict_binned(self, binned_tree, pred):
        """``pred[i] +=`` row i's leaf value in ``binned_tree``, for every row (the update
        of a round that grew its trees on a sample)."""
        self.backend.predict_binned(self.backend.bins_row, binned_tree, pred)


class DiskPages(RowPages):
    """Rows in binned page files (``data/page_file.py``), one page in memory at a time: each
    call streams the pages in order, reading the next page on a background thread while the
    current one is worked. A page's rows are numbered from 0 for its own backend
    (``make_backend(bins_row, bins_col)``); ``g``, ``h`` and the predictions stay in memory
    for every row (O(rows) floats). The streaming mode of the out-of-core paper (its
    Algorithm 6): each level of a tree reads every page once, and the trees equal in-core
    training on the same bins (up to the rounding of the page-order sums, as ``RowPages``)."""

    in_core = False

    def __init__(self, make_backend, paths, key):
        from ..data.page_file import read_header, stale_page

        heads = []
        for path in paths:  # (keys first: a rebuilt folder's pages misread as out of order)
            if not os.path.exists(path):
                raise stale_page(path, missing=True)
            heads.append(read_header(path))
            if key is not None and heads[-1][4] != key:
                raise stale_page(path)
        cuts = [0]
        for (_, n, _, first, _), path in zip(heads, paths):
            if first != cuts[-1]:
                raise ValueError(f"page {path!r} starts at row {first}; the pages before it "
                                 f"end at row {cuts[-1]}")
            cuts.append(first + n)
        super().__init__(None, cuts[-1], cuts)
        self.paths, self.key, self.make_backend = list(paths), key, make_backend
        self.dtype, self.n_fields = (heads[0][0], heads[0][2]) if heads else (np.uint8, 0)
        self._lanes = {}

    def _page_rows(self, rows, p):
        return (rows - self.cuts[p]).astype(np.int32)

    def _global(self, rows, p):
        return rows.astype(np.int64) + self.cuts[p]

    def _load(self, p, cols=True):
        """(bins_row, bins_col) of page ``p``, checked (``data.page_file.read_page``);
        ``cols=False``: the row-major half only (bins_col None)."""
        from ..data.page_file import read_page

        return read_page(self.paths[p], self.key, cols=cols)[:2]

    def _loaded(self, which=None, cols=True):
        """(page index, bins_row, bins_col) of the pages ``which`` (default all) in order,
        the next one read on a background thread while the caller works on this one."""
        from concurrent.futures import ThreadPoolExecutor

        which = list(range(self.n_pages)) if which is None else list(which)
        with ThreadPoolExecutor(1, thread_name_prefix="hardwood-page") as io:
            ahead = io.submit(self._load, which[0], cols) if which else None
            for i, p in enumerate(which):
                bins_row, bins_col = ahead.result()
                ahead = None  # this page's arrays are the caller's alone
                if i + 1 < len(which):
                    ahead = io.submit(self._load, which[i + 1], cols)
                yield p, bins_row, bins_col
                del bins_row, bins_col

    def _backend(self, p, bins_row, bins_col):
        be = self.make_backend(bins_row, bins_col, self._lanes.get(p))
        self._lanes[p] = be.lanes
        return be

    def _each(self):
        for p, bins_row, bins_col in self._loaded(range(len(self.pages))):
            yield (self.pages[p], self._backend(p, bins_row, bins_col), int(self.cuts[p]),
                   int(self.cuts[p + 1]))

    def gather(self, rows):
        """The bins of ``rows`` (global ids, ascending) from the pages that hold them, in one
        in-memory pair (bins_row (m, d), bins_col (d, m)): the sample of a round, compacted
        (the out-of-core paper's Algorithm 7). One pass over the pages."""
        rows = np.asarray(rows, dtype=np.int64)
        at = np.searchsorted(rows, self.cuts)
        out_row = np.empty((rows.size, self.n_fields), dtype=self.dtype)
        holding = [p for p in range(self.n_pages) if at[p] < at[p + 1]]
        for p, bins_row, _ in self._loaded(holding, cols=False):  # the row-major halves
            a, b = int(at[p]), int(at[p + 1])
            out_row[a:b] = bins_row[rows[a:b] - self.cuts[p]]
        return out_row, np.ascontiguousarray(out_row.T)

    def predict_binned(self, binned_tree, pred):
        for p, bins_row, bins_col in self._loaded(cols=False):
            self._backend(p, bins_row, bins_col).predict_binned(
                bins_row, binned_tree, pred[self.cuts[p]:self.cuts[p + 1]])
