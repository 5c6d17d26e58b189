"""Random forests over Dask partitions, the row work (``hardwood.dask``'s histogram mode; the
driver is ``train/forest_dask.py``). Every function runs on the worker that holds a partition,
as a pure task of its arguments (a lost worker's state is recomputed from the lineage, as in
``backends/dask.py``):

* :func:`start_rows`: a batch of trees' rows and weights on the partition: each tree's
  bootstrap counts of the partition's rows, drawn there (``forest_cpu.bootstrap_counts``:
  the same counts as one machine draws), or weights the client sent;
* :func:`node_stats`: ① the totals and the histograms (weighted class counts, or
  ``(w, w*y, w*y^2)``, and row counts) of the requested nodes over their candidate
  features, by ``forest_cpu``'s kernels, flattened into one float64 array (so that the
  partitions' arrays add up by a Dask tree reduction);
* :func:`split_rows`: ③ the nodes' rows split stably by the client's splits;
* :func:`node_rows`: a small node's rows (bins, labels, weights), for its subtree to grow
  where they are gathered.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..parallel import threads
from . import forest_cpu as K


@dataclass
class ForestRows:
    """One partition's rows of a batch of trees: per tree (its slot in the batch) the rows of
    positive weight, as the partition's own row numbers in node order, and the weights of all
    its rows; ``seg`` maps (slot, node) to the node's slice of the slot's rows."""
    rows: list
    w: list
    seg: dict


def labels_part(y, is_reg):
    """(class index int64, target float64) of a label partition, as the forest kernels take
    them (the other one zeros)."""
    y = np.asarray(y, dtype=np.float64)
    if is_reg:
        return np.zeros(y.shape[0], dtype=np.int64), y
    return y.astype(np.int64), np.zeros(y.shape[0])


def start_rows(n, lo, n_total, slots, weights):
    """Node 0 of every tree of a batch, on the partition of rows ``lo:lo+n`` of ``n_total``.
    ``slots``: per tree ``(seed, tree index, how)``: ``how`` is ``n_boot`` for a uniform
    bootstrap, drawn here; ``'ones'`` for every row once; ``'given'`` for the tree's weights
    in ``weights`` (the same slot: this partition's slice of weights the client drew)."""
    rows, ws, seg = [], [], {}
    for s, (seed, t, how) in enumerate(slots):
        if how == "given":
            w = np.asarray(weights[s], dtype=np.float64)
        elif how == "ones":
            w = np.ones(n)
        else:
            w = K.bootstrap_counts(seed, t, n_total, int(how), lo, lo + n).astype(np.float64)
        r = np.flatnonzero(w > 0).astype(np.int32)
        rows.append(r)
        ws.append(w)
        seg[(s, 0)] = (0, int(r.shape[0]))
    return ForestRows(rows, ws, seg)


def node_stats(part, labels, state, requests, C, maxbins, is_reg):
    """① For each request ``(slot, node, features)``: the node's rows here, its totals (C),
    its histograms (len(features), maxbins, C) and row counts (len(features), maxbins),
    flattened in that order, all requests one after the other."""
    yk, yv = labels
    out = []
    with threads(1):
        for s, node, feats in requests:
            b, e = state.seg[(s, node)]
            rows, w = state.rows[s], state.w[s]
            out.append(np.array([e - b], dtype=np.float64))
            out.append(K.df_totals(rows, b, e, w, yk, yv, is_reg, C, 1))
            if len(feats):
                stat, cnt = K.df_hist(part.bins_col, rows, b, e, np.asarray(feats, np.int64), w,
                                      yk, yv, is_reg, C, maxbins, 1)
                out.append(stat.ravel())
                out.append(cnt.ravel().astype(np.float64))
    return np.concatenate(out) if out else np.zeros(0)


def split_rows(part, state, splits, drop):
    """③ A new ForestRows: for each split ``(slot, node, feature, bin, missing bin,
    default_left, left id, right id)`` the node's rows, stably split (rows with bin <= the
    split's, and the missing bin when it goes left, first); the nodes of ``drop`` (leaves,
    and small nodes whose rows went to their subtree) are forgotten."""
    rows, seg = list(state.rows), dict(state.seg)
    copied = set()
    for s, node, f, sbin, miss, dl, left, right in splits:
        if s not in copied:  # a task never changes its inputs
            rows[s] = rows[s].copy()
            copied.add(s)
        b, e = seg.pop((s, node))
        r = rows[s][b:e]
        bn = part.bins_col[f, r]
        go = bn <= sbin
        if dl:
            go |= bn == miss
        mid = b + int(np.count_nonzero(go))
        rows[s][b:e] = np.concatenate([r[go], r[~go]])
        seg[(s, left)] = (b, mid)
        seg[(s, right)] = (mid, e)
    for key in drop:
        seg.pop(key, None)
    return ForestRows(rows, state.w, seg)


def node_rows(part, labels, state, nodes):
    """For each ``(slot, node)``: (bins (rows, fields), class index, target, weight) of the
    node's rows here, in node order."""
    yk, yv = labels
    out = []
    for s, node in nodes:
        b, e = state.seg[(s, node)]
        r = state.rows[s][b:e]
        out.append((part.bins_row[r], yk[r], yv[r], state.w[s][r]))
    return out
