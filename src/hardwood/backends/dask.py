"""Dask pages: each partition of a Dask collection is a page, where it lives (DESIGN.md, "One
learner over pages"). The tree learner (``train/learner.py``) runs on the client, unchanged;
this module does its row work on the workers through Dask's own task graph (no socket, port
or collective of its own):

* every partition's state is a Dask future: its binned rows (``BinnedPart``, made where the
  partition lives), its labels and weights, its margins, its g and h, and the current tree's
  rows and node segments (``RowState``);
* every step derives a new future from the previous ones (a pure task: inputs are never
  changed), so a worker that dies takes nothing with it that the scheduler cannot recompute
  from the lineage, deterministically, on another worker;
* ① each partition's histograms of the nodes, then a sum over a binary tree of fixed shape
  in page order ((0+1)+(2+3))+... : the same floats whatever the workers or the timing;
  only the smaller children are asked for (the learner subtracts the rest);
* ② runs on the client (shared code), ③ and ⑤ are tasks on the partitions.

``DaskPages`` implements ``Pages``' calls (``backends/pages.py``) plus the margins calls of
``CudaPages`` (``bind_margins``, ``gradients``, ...): g, h and the margins never leave the
workers; the client holds the labels (for the base score and the checks) and gets back one
histogram array per level and two row counts per split. ``log`` records each level's bytes
and the time from submitting its tasks to holding its reduced histograms.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass

import numpy as np

from ..data.convert import to_float_matrix
from ..data.sketch import QuantileSketch
from ..objectives import get_objective
from ..parallel import threads
from .cpu import CPUBackend, choose_lanes, predict_binned_rows

LOG = logging.getLogger("hardwood.dask")


# -- worker side: pure functions of their arguments -------------------------------------------
@dataclass
class BinnedPart:
    """One partition's bins, row- and column-major, and its histogram lanes."""
    bins_row: np.ndarray
    bins_col: np.ndarray
    lanes: int

    @property
    def n(self):
        return int(self.bins_row.shape[0])

    def backend(self, offsets):
        return CPUBackend(self.bins_row, self.bins_col, offsets, self.lanes)


@dataclass
class RowState:
    """One partition's rows of the current tree (its own row numbers) and each node's
    segment of them."""
    rows: np.ndarray
    seg: dict


def part_matrix(X, info, what):
    """A partition as hardwood's float matrix, checked against the training columns (an
    empty partition: its column count)."""
    if X.shape[0] == 0:
        d = len(info.names)
        if len(X.shape) != 2 or X.shape[1] != d:
            raise ValueError(f"{what} has shape {X.shape}; the training has {d} columns")
        return np.zeros((0, d), dtype=np.float32)
    return to_float_matrix(X, info=info, what=what)[0]


def part_length(X):
    return int(X.shape[0])


def sketch_part(X, w, info, size, index, take=None):
    """One quantile sketch per field over the partition (``data/sketch.py``), or over
    ``take`` of its rows drawn without replacement (seeded by the partition's index)."""
    mat = part_matrix(X, info, f"X partition {index}")
    w = None if w is None else np.asarray(w, dtype=np.float64)
    if take is not None and take < mat.shape[0]:
        rows = np.sort(np.random.default_rng([17, int(index)]).choice(mat.shape[0], int(take),
                                                                      replace=False))
        mat = mat[rows]
        w = None if w is None else w[rows]
    out = [QuantileSketch(size) for _ in range(mat.shape[1])]
    for j, sk in enumerate(out):
        sk.push(mat[:, j], w)
    return out


def bin_part(X, bin_mapper, info, index):
    """The partition binned with the broadcast edges (where it lives)."""
    mat = part_matrix(X, info, f"X partition {index}")
    with threads(1):
        bins_row, bins_col = bin_mapper.transform(mat)
    return BinnedPart(bins_row, bins_col, choose_lanes(bins_row))


def vector_part(v, n, what):
    """A label or weight partition as float64, of the partition's length."""
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    if v.shape[0] != n:
        raise ValueError(f"{what} has {v.shape[0]} rows, X's partition has {n}")
    return v


def margins_part(base, n):
    return np.repeat(np.asarray(base, dtype=np.float64)[:, None], n, axis=1)


def gradients_part(margins, y, w, objective):
    K, n = margins.shape
    g = np.empty((K, n), dtype=np.float32)
    h = np.empty((K, n), dtype=np.float32)
    if n:
        with threads(1):
            objective.gradients(margins, y, w, g, h)
    return g, h


def scale_part(grads, rows, weight):
    """The sampled rows' g and h times their unbiasing weights (a new pair)."""
    g, h = grads[0].copy(), grads[1].copy()
    g[:, rows] *= weight
    h[:, rows] *= weight
    return g, h


def start_part(n, rows):
    """Node 0 of a tree: every row (``rows`` None) or the given ones."""
    rows = np.arange(n, dtype=np.int32) if rows is None else np.asarray(rows, dtype=np.int32)
    return RowState(rows, {0: (0, int(rows.shape[0]))})


def hist_part(part, state, grads, k, nodes, offsets):
    """① This partition's histograms of ``nodes`` (float64 (len(nodes), bins, 2))."""
    total = int(offsets[-1])
    begins = [state.seg[i][0] for i in nodes]
    ends = [state.seg[i][1] for i in nodes]
    if sum(e - b for b, e in zip(begins, ends)) == 0:
        return np.zeros((len(nodes), total, 2))
    with threads(1):
        return part.backend(offsets).build_histograms(state.rows, begins, ends, grads[0][k],
                                                      grads[1][k])


def sum_pair(a, b):
    return a + b


def bin_counts_part(part, offsets):
    """This partition's rows in each bin (float64, total bins)."""
    n = part.n
    if n == 0:
        return np.zeros(int(offsets[-1]))
    ones = np.ones(n, dtype=np.float32)
    with threads(1):
        hist = part.backend(offsets).build_histograms(np.arange(n, dtype=np.int32), [0], [n],
                                                      ones, ones)
    return np.asarray(hist, dtype=np.float64).reshape(-1, 2)[:, 1]


def partition_part(part, state, nodes, features, tables, lefts, rights, offsets):
    """③ A new RowState: each node's rows split stably into its two children."""
    rows, seg = state.rows.copy(), dict(state.seg)
    begins = [seg[i][0] for i in nodes]
    ends = [seg[i][1] for i in nodes]
    if sum(e - b for b, e in zip(begins, ends)) == 0:
        mids = np.asarray(begins, dtype=np.int64)
    else:
        with threads(1):
            mids = part.backend(offsets).partition(rows, begins, ends, features, tables)
    for k, i in enumerate(nodes):
        b, e = seg.pop(i)
        mid = int(mids[k])
        seg[lefts[k]], seg[rights[k]] = (b, mid), (mid, e)
    return RowState(rows, seg)


def count_part(part, state, nodes, features, tables):
    """The row counts (left, right) that ``partition_part`` will give each node: a plain
    count, so that the client has them without waiting for the rows to move."""
    n_left = np.zeros(len(nodes), dtype=np.int64)
    n_right = np.zeros(len(nodes), dtype=np.int64)
    for k, i in enumerate(nodes):
        b, e = state.seg[i]
        if e > b:
            n_left[k] = int(np.count_nonzero(tables[k][part.bins_col[features[k],
                                                                     state.rows[b:e]]]))
        n_right[k] = e - b - n_left[k]
    return n_left, n_right


def leaves_part(part, margins, state, k, leaves, values, offsets):
    """⑤ New margins: output ``k`` of each leaf's rows plus the leaf's value."""
    out = margins.copy()
    begins = [state.seg[i][0] for i in leaves]
    ends = [state.seg[i][1] for i in leaves]
    if state.rows.shape[0]:
        with threads(1):
            part.backend(offsets).add_leaf_values(state.rows, begins, ends, values, out[k])
    return out


def predict_part(part, margins, k, binned_tree):
    """New margins: output ``k`` plus the tree's leaf value of every row."""
    out = margins.copy()
    if part.n:
        with threads(1):
            predict_binned_rows(part.bins_row, binned_tree, out[k])
    return out


def tree_delta_part(part, binned_tree):
    """Each row's leaf value in the tree (the margins of ``init_model``'s trees)."""
    out = np.zeros(part.n)
    if part.n:
        with threads(1):
            predict_binned_rows(part.bins_row, binned_tree, out)
    return out


# -- client side -------------------------------------------------------------------------
class Per(list):
    """An argument with one item per partition (:func:`submit_each`)."""


def submit_each(client, name, fn, *args, n, priority=0):
    """``n`` tasks ``fn(*args)``, each with item ``p`` of every ``Per`` argument (other
    arguments go to every task as they are), named ``name-p``: one message to the scheduler
    for them all."""
    cols = [a if isinstance(a, Per) else [a] * n for a in args]
    return client.map(fn, *cols, key=[f"{name}-{p}" for p in range(n)], priority=priority)


def sum_in_order(level, each):
    """The sum of the futures ``level`` over a binary tree of fixed shape, in their order
    ((0+1)+(2+3))+...: the same floats whatever the workers or the timing. ``each(what, fn,
    *args, n=...)`` submits the sum tasks (:func:`submit_each` under the caller's names)."""
    depth = 0
    while len(level) > 1:
        depth += 1
        half = len(level) // 2
        sums = each(f"sum{depth}", sum_pair, Per(level[0:2 * half:2]),
                    Per(level[1:2 * half:2]), n=half)
        level = sums + level[2 * half:]
    return level[0]

class _Handle:
    """What ``DeviceRow`` wraps for the Booster: the margins, g or h, kept on the workers."""

    def __init__(self, name):
        self.name = name


class DaskPages:
    """The partitions of a Dask collection as the learner's pages (see the module docstring).

    ``client``: a ``distributed.Client``; ``parts``: one future of a ``BinnedPart`` per
    partition, in order; ``labels``, ``weights``: one future per partition (weights: None, or
    None futures); ``sizes``: the partitions' row counts; ``offsets``: the bin mapper's field
    offsets. ``tag``: names this training's tasks (two trainings on one client never share a
    key)."""

    in_core = True  # every row stays in the workers' memory: a sampled round grows there
    margin_objectives = None  # set by hardwood.dask: the objectives computed on the workers

    def __init__(self, client, parts, labels, weights, sizes, offsets, tag=None):
        self.client = client
        self.parts = list(parts)
        self.labels = list(labels)
        self.weights = list(weights) if weights is not None else [None] * len(self.parts)
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.cuts = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self.n_rows = int(self.cuts[-1])
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.tag = tag or uuid.uuid4().hex[:12]
        self.objective, self.params = None, {}
        self.pred, self.g, self.h = _Handle("margins"), _Handle("g"), _Handle("h")
        self._margins = self._grads = self._states = None
        self._counts = {}
        self._step = 0
        self.log = []  # one dict per histogram step: nodes, bytes, seconds
        self.transfers = {"dask_levels": 0, "dask_bytes": 0, "dask_reduce_s": 0.0}

    @property
    def n_pages(self):
        return len(self.parts)

    # -- tasks ---------------------------------------------------------------------------
    def _each(self, what, fn, *args, n=None, priority=0):
        """One task per partition (or ``n`` tasks): ``fn(*args)`` with each ``Per``
        argument's item ``p``; other arguments go to every task as they are. One message to
        the scheduler for them all."""
        self._step += 1
        return submit_each(self.client, f"hardwood-{what}-{self.tag}-{self._step}", fn, *args,
                           n=self.n_pages if n is None else n, priority=priority)

    def _local(self, rows):
        """Global ascending row ids -> one array of local ids per partition."""
        rows = np.asarray(rows, dtype=np.int64)
        at = np.searchsorted(rows, self.cuts)
        return [(rows[at[p]:at[p + 1]] - self.cuts[p]).astype(np.int32)
                for p in range(self.n_pages)], at

    # -- margins and gradients on the workers (the Booster's device calls) -----------------
    def bind_margins(self, objective, label, weight, pred):
        """The margins (``pred``, (K, n)) on the workers for the Booster's objective (an
        ``Objective``; built again by name with ``self.params``, the training's resolved
        parameters). Uniform
        margins (no init_model) go as one column; others as each partition's slice, once."""
        del label, weight  # the workers hold their own partitions' labels and weights
        params = dict(self.params)
        if pred.shape[0] > 1:
            params["num_class"] = int(pred.shape[0])
        self.objective = get_objective(objective.name, params)
        if pred.shape[1] == 0 or np.all(pred == pred[:, :1]):
            base = pred[:, 0].copy() if pred.shape[1] else np.zeros(pred.shape[0])
            self._margins = self._each("margins", margins_part, base, Per(self.sizes.tolist()))
        else:
            # each slice travels inside its task (not scattered): the scheduler can redo it
            self._margins = self._each("margins", np.array, Per([
                np.ascontiguousarray(pred[:, self.cuts[p]:self.cuts[p + 1]])
                for p in range(self.n_pages)]))

    def gradients(self):
        self._grads = self._each("gradients", gradients_part, Per(self._margins),
                                 Per(self.labels), Per(self.weights), self.objective)

    def gradients_to_host(self, g, h):
        for p, (gp, hp) in enumerate(self.client.gather(self._grads)):
            g[:, self.cuts[p]:self.cuts[p + 1]] = gp
            h[:, self.cuts[p]:self.cuts[p + 1]] = hp

    def margins_to_host(self, pred):
        for p, m in enumerate(self.client.gather(self._margins)):
            pred[:, self.cuts[p]:self.cuts[p + 1]] = m

    def scale_sample(self, rows, weight):
        local, at = self._local(rows)
        weight = np.asarray(weight)
        self._grads = self._each("scale", scale_part, Per(self._grads), Per(local),
                                 Per(weight[at[p]:at[p + 1]] for p in range(self.n_pages)))

    # -- the learner's calls -----------------------------------------------------------------
    def start(self, rows):
        rows = np.asarray(rows)
        if rows.shape[0] == self.n_rows:  # every row: nothing to send
            local = [None] * self.n_pages
        else:
            local, _ = self._local(np.sort(rows))
        self._states = self._each("start", start_part, Per(self.sizes.tolist()), Per(local))
        self._counts = {0: int(rows.shape[0])}
        return int(rows.shape[0])

    def count(self, node):
        return self._counts[node]

    def bin_counts(self):
        """The rows in each bin over every partition (``Grower.use_lightgbm_missing``)."""
        level = self._each("bin-counts", bin_counts_part, Per(self.parts), self.offsets)
        return sum_in_order(level, self._each).result()

    def histograms(self, nodes, g, h):
        """① Each partition's histograms of ``nodes``, summed over a binary tree in page
        order, gathered on the client."""
        if getattr(g, "array", None) is not self.g:
            raise TypeError("DaskPages computes g and h on the workers; the Booster passes "
                            "DeviceRow handles")
        t0 = time.perf_counter()
        nodes = [int(i) for i in nodes]
        level = self._each("hist", hist_part, Per(self.parts), Per(self._states),
                           Per(self._grads), int(g.k), nodes, self.offsets)
        out = sum_in_order(level, self._each).result()
        seconds = time.perf_counter() - t0
        # bytes: one histogram per sum task (the input from another worker) and the total
        # to the client, P in all: the count when partitions are spread one to a worker (a
        # sum whose inputs share a worker copies none; one placed on neither copies two)
        moved = out.nbytes * self.n_pages
        self.log.append({"nodes": len(nodes), "bytes": int(moved), "seconds": seconds})
        self.transfers["dask_levels"] += 1
        self.transfers["dask_bytes"] += int(moved)
        self.transfers["dask_reduce_s"] += seconds
        LOG.debug("histograms of %d nodes over %d partitions: %d bytes, %.4f s", len(nodes),
                  self.n_pages, moved, seconds)
        return out

    def partition(self, nodes, features, tables, lefts, rights):
        """③ Every partition splits its rows of each node; the global counts come back.
        The counts are counted beside the partition, first (a higher priority), from the
        rows before it: one round trip, not a partition and then a count."""
        nodes = [int(i) for i in nodes]
        features = np.asarray(features, dtype=np.int64)
        tables = np.asarray(tables)
        counted = self._each("count", count_part, Per(self.parts), Per(self._states), nodes,
                             features, tables, priority=1)
        self._states = self._each("partition", partition_part, Per(self.parts),
                                  Per(self._states), nodes, features, tables,
                                  [int(i) for i in lefts], [int(i) for i in rights],
                                  self.offsets)
        counts = self.client.gather(counted)
        n_left = np.sum([c[0] for c in counts], axis=0).astype(np.int64)
        n_right = np.sum([c[1] for c in counts], axis=0).astype(np.int64)
        for k in range(len(nodes)):
            self._counts[int(lefts[k])] = int(n_left[k])
            self._counts[int(rights[k])] = int(n_right[k])
        return n_left, n_right

    def add_leaf_values(self, leaves, values, pred):
        """⑤ The tree's leaf values added to the margins of output ``pred.k``."""
        self._check_margins(pred)
        self._margins = self._each("leaves", leaves_part, Per(self.parts), Per(self._margins),
                                   Per(self._states), int(pred.k), [int(i) for i in leaves],
                                   np.asarray(values, dtype=np.float64), self.offsets)
        self._states = None  # the tree is done: its row states may go

    def leaf_rows(self, leaf):
        raise NotImplementedError("hardwood.dask does not refit leaves from residuals "
                                  "(reg:absoluteerror); use another objective")

    def predict_binned(self, binned_tree, pred):
        """``pred += `` each row's leaf value: on the workers' margins (a DeviceRow handle of
        a sampled round), or into a host array (init_model's trees, before bind_margins)."""
        if isinstance(pred, np.ndarray):
            deltas = self.client.gather(self._each("init", tree_delta_part, Per(self.parts),
                                                   binned_tree))
            for p, d in enumerate(deltas):
                pred[self.cuts[p]:self.cuts[p + 1]] += d
            return
        self._check_margins(pred)
        self._margins = self._each("predict", predict_part, Per(self.parts), Per(self._margins),
                                   int(pred.k), binned_tree)

    def _check_margins(self, pred):
        if getattr(pred, "array", None) is not self.pred:
            raise TypeError("DaskPages keeps the margins on the workers; the Booster passes "
                            "DeviceRow handles")

    def release(self):
        """Drop every future (the workers free the training's state)."""
        self._margins = self._grads = self._states = None
        self.parts = self.labels = self.weights = []
