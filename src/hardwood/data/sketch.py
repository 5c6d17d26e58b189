"""A mergeable streaming quantile sketch: the weighted quantile sketch of XGBoost (Chen and
Guestrin 2016, appendix A), for binning data that arrives in batches (out of core, on several
workers).

A *summary* keeps sorted values ``x_i`` with, for each, bounds on the weight of the data
below and up to it: ``rmin_i <= W(< x_i)``, ``rmax_i >= W(<= x_i)``, and its own weight
``w_i``. A summary is *eps-approximate* when, for neighbours, the weight it cannot place
between them is small: ``(rmax_{i+1} - w_{i+1}) - (rmin_i + w_i) <= eps * W``. Then:

* a batch gives an exact summary (eps = 0);
* merging two summaries gives one of the larger eps of the two (``merge``);
* pruning to ``b + 1`` values adds ``1 / b`` (``prune``).

:class:`QuantileSketch` keeps one summary per level, like a binary counter: a batch enters
at level 0, and two summaries of one level merge and prune into the next. After ``m``
batches the summary is ``(ceil(log2 m) + 1) / b``-approximate (``error_bound``). The
summary's values, weighted by the rank mass each one stands for, go through the in-core rule
of ``binning._numeric_edges``. So an exact summary (few distinct values, or data never
pruned) gives the in-core edges of all the rows, and a pruned one gives edges whose ranks are
within ``edge_error_bound * W`` of them: one more ``1 / b``, since an edge can only fall on
one of the summary's values, which a prune leaves up to ``W / b`` apart (the edges of one
pruned batch were 1.6 ``error_bound * W`` off, which ``Dataset.sketch_error`` reported).
"""
from __future__ import annotations

import math

import numpy as np


class Summary:
    """Sorted values with rank bounds (see the module docstring); ``total``: the weight of
    the data it summarises."""

    __slots__ = ("value", "rmin", "rmax", "w", "total")

    def __init__(self, value, rmin, rmax, w, total):
        self.value, self.rmin, self.rmax, self.w = value, rmin, rmax, w
        self.total = float(total)

    @classmethod
    def exact(cls, values, weights=None):
        """The exact summary of ``values`` (NaN, and rows of weight <= 0, left out)."""
        values = np.asarray(values, dtype=np.float64)
        ok = ~np.isnan(values)
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            ok &= weights > 0
        v = values[ok]
        w = np.ones(v.size) if weights is None else weights[ok]
        if v.size == 0:
            return cls(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), 0.0)
        order = np.argsort(v, kind="stable")
        v, w = v[order], w[order]
        flag = np.empty(v.size, dtype=bool)
        flag[0] = True
        np.not_equal(v[1:], v[:-1], out=flag[1:])
        starts = np.flatnonzero(flag)
        wsum = np.add.reduceat(w, starts)
        cum = np.cumsum(wsum)
        return cls(v[starts], cum - wsum, cum, wsum, cum[-1])

    def __len__(self):
        return self.value.size

    def _bounds_at(self, x):
        """(rmin, rmax, w) of this summary at the values ``x`` (sorted), present or not."""
        n = self.value.size
        if n == 0:
            z = np.zeros(x.size)
            return z, z.copy(), z.copy()
        i = np.searchsorted(self.value, x)
        present = (i < n) & (self.value[np.minimum(i, n - 1)] == x)
        ic = np.minimum(i, n - 1)
        prev = i - 1
        rmin_absent = np.where(prev >= 0, self.rmin[np.maximum(prev, 0)]
                               + self.w[np.maximum(prev, 0)], 0.0)
        rmax_absent = np.where(i < n, self.rmax[ic] - self.w[ic], self.total)
        rmin = np.where(present, self.rmin[ic], rmin_absent)
        rmax = np.where(present, self.rmax[ic], rmax_absent)
        w = np.where(present, self.w[ic], 0.0)
        return rmin, rmax, w


def merge(a: Summary, b: Summary) -> Summary:
    """The summary of the union of the data of ``a`` and ``b``."""
    x = np.union1d(a.value, b.value)
    ra, xa, wa = a._bounds_at(x)
    rb, xb, wb = b._bounds_at(x)
    return Summary(x, ra + rb, xa + xb, wa + wb, a.total + b.total)


def prune(s: Summary, b: int) -> Summary:
    """At most ``b + 1`` values of ``s``: for each rank ``d = k W / b`` the value the query
    rule picks (the appendix's ``g(Q, d)``); the error grows by ``1 / b``."""
    n = len(s)
    if n <= b + 1:
        return s
    d = s.total * np.arange(b + 1) / b
    mid = 0.5 * (s.rmin + s.rmax)
    i = np.searchsorted(mid, d, side="right") - 1  # mid_i <= d < mid_{i+1}
    inner = (i >= 0) & (i < n - 1)
    ii = np.clip(i, 0, n - 2)
    take_next = 2 * d >= s.rmin[ii] + s.w[ii] + s.rmax[ii + 1] - s.w[ii + 1]
    pick = np.where(inner, ii + take_next, np.where(i < 0, 0, n - 1))
    keep = np.unique(pick)
    return Summary(s.value[keep], s.rmin[keep], s.rmax[keep], s.w[keep], s.total)


class QuantileSketch:
    """The sketch of one numeric field, fed batch by batch (``push``) and mergeable with
    another (``merge``): summaries of at most ``size + 1`` values per level."""

    def __init__(self, size: int = 2048):
        if int(size) < 2:
            raise ValueError(f"a sketch needs a size >= 2, got {size!r}")
        self.size = int(size)
        self.levels: list = []
        self.batches = 0
        self.pruned = False

    def push(self, values, weights=None):
        """Add a batch of values (NaN ignored; ``weights``: one per value)."""
        self._carry(self._prune(Summary.exact(values, weights)), 0)
        self.batches += 1

    def _prune(self, s):
        out = prune(s, self.size)
        self.pruned |= len(out) < len(s)
        return out

    def _carry(self, s, level):
        while True:
            if level == len(self.levels):
                self.levels.append(None)
            if self.levels[level] is None:
                self.levels[level] = s
                return
            s = self._prune(merge(self.levels[level], s))
            self.levels[level] = None
            level += 1

    def merge(self, other: "QuantileSketch"):
        """Add the data of ``other`` (a sketch of the same field and size). Two exact
        sketches merge into an exact one, of more than ``size + 1`` values if need be: the
        partitions of a Dask collection, each exact, bin as the concatenated data would (the
        union was pruned past ``size + 1`` values, and the Dask model parted from the
        in-memory one by 0.8 on 4 partitions of 750 rows)."""
        if other.size != self.size:
            raise ValueError(f"sketches of sizes {self.size} and {other.size} do not merge")
        if not (self.pruned or other.pruned):
            whole = merge(self.summary(), other.summary())
            self.levels = [whole] if len(whole) else []
        else:
            for level, s in enumerate(other.levels):
                if s is not None:
                    self._carry(s, level)
        self.batches += other.batches
        self.pruned |= other.pruned
        return self

    def summary(self) -> Summary:
        out = Summary.exact([])
        for s in self.levels:
            if s is not None:
                out = merge(out, s)
        return out

    def error_bound(self) -> float:
        """eps of ``summary()``: 0 while nothing was pruned; else 1/size for the prune of a
        batch, one more per level it climbed (at most log2 of the batches), and the final
        merge adds none."""
        if not self.pruned:
            return 0.0
        return (math.ceil(math.log2(max(self.batches, 1))) + 1) / self.size

    def edge_error_bound(self) -> float:
        """The rank error of the bin edges drawn from ``summary()``, as a share of the weight:
        ``error_bound`` and one more ``1 / size`` (the summary's values are up to
        ``W / size`` apart, and an edge falls on one of them); 0 while nothing was pruned."""
        if not self.pruned:
            return 0.0
        return self.error_bound() + 1.0 / self.size

    def weighted_values(self):
        """(values, weights): the summary's values, each weighted by the rank mass it stands
        for (its own weight when the summary is exact)."""
        s = self.summary()
        if len(s) == 0:
            return s.value, s.value
        upper = 0.5 * (s.rmin + s.w + s.rmax)  # the estimated weight up to and with x_i
        upper = np.maximum.accumulate(np.clip(upper, 0.0, s.total))
        mass = np.diff(np.concatenate([[0.0], upper]))
        return s.value, mass
