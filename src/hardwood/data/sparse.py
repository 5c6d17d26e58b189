"""Sparse binned data: CSR input binned straight from its non-zeros (issue 18).

A numeric field's *default bin* is the bin of 0.0. A sparse matrix's absent entries are
zeros, so they all fall in it; the layout keeps only the entries whose bin differs from
their field's default bin, as CSR:

* ``indptr`` (int64, n_rows + 1): row ``r``'s entries are ``indptr[r] .. indptr[r + 1] - 1``;
* ``indices`` (int32): their fields, ascending within a row (the partition finds a row's bin
  of one field by binary search);
* ``bins`` (uint8 or uint16, as the dense matrices): their bins (the missing bin for an
  explicit NaN);
* ``default_bin`` (int64, one per field).

No dense float matrix and no dense bin matrix is ever made: memory follows the non-zeros.
The bins are those the dense path gives the same matrix (``BinMapper.transform`` of
``X.toarray()``): the edges come from each column's non-zeros plus its count of zeros
(``binning.edges_from_counts``, the rule of the dense path), over the same row sample, and
each entry is binned by the dense path's kernel (``binning.bin_numeric``). With sample
weights the edges equal the dense ones up to the rounding of the weight sums.

Categorical fields are not binned sparse: a Dataset with one takes the dense path.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit

from ..parallel import guard, run_ranges
from .binning import (bin_numeric, bin_value, cut_indices_jit, near_zero_flat,
                      near_zero_stats)

SPARSE_DENSITY = 0.1  # sparse="auto": a scipy sparse matrix at most this dense is binned sparse
SMALL_FIELD_EDGES = 32  # fields with at most this many edges are binned by a plain search


class SparseBins:
    """The non-default bins of a matrix, by row (see the module docstring)."""

    def __init__(self, indptr, indices, bins, default_bin, n_features):
        self.indptr = indptr
        self.indices = indices
        self.bins = bins
        self.default_bin = default_bin
        self.n_rows = indptr.shape[0] - 1
        self.n_features = int(n_features)
        self.shape = (self.n_rows, self.n_features)
        self.dtype = bins.dtype
        n = self.n_rows
        if (indptr[0] != 0 or indptr[-1] != indices.shape[0] or indices.shape != bins.shape
                or default_bin.shape != (self.n_features,)
                or (n and np.any(np.diff(indptr) < 0))
                or (indices.size and (indices.min() < 0 or indices.max() >= self.n_features))):
            raise ValueError("inconsistent sparse bins")

    def check(self, n_bins):
        """Raise unless every bin (stored and default) lies in its field's ``n_bins`` and
        each row's fields ascend (the kernels over these bins do no bounds checks)."""
        n_bins = np.ascontiguousarray(n_bins, dtype=np.int64)
        if n_bins.shape != (self.n_features,):
            raise ValueError("the bin counts do not match the sparse bins' fields")
        if np.any(self.default_bin < 0) or np.any(self.default_bin >= n_bins):
            raise ValueError("a default bin lies outside its field's bins")
        bad = _first_bad_entry(self.indptr, self.indices, self.bins, n_bins)
        if bad >= 0:
            raise ValueError(f"sparse bins: entry {bad} is out of its field's bins or out of "
                             "order in its row")

    @property
    def nnz(self):
        return int(self.indices.shape[0])

    @property
    def nbytes(self):
        return self.indptr.nbytes + self.indices.nbytes + self.bins.nbytes

    def to_dense(self):
        """(row-major (n, d), column-major (d, n)) bins: what the dense path would hold.
        Costs rows x columns: for the code that needs dense bins (forests, pages on disk)."""
        rows = np.empty(self.shape, dtype=self.dtype)
        rows[:] = self.default_bin.astype(self.dtype)[None, :]
        r = np.repeat(np.arange(self.n_rows), np.diff(self.indptr))
        rows[r, self.indices] = self.bins
        return rows, np.ascontiguousarray(rows.T)

    def rows_dense(self, rows):
        """The dense bins (len(rows), d) of some rows (tests, naive twins)."""
        out = np.empty((len(rows), self.n_features), dtype=self.dtype)
        out[:] = self.default_bin.astype(self.dtype)[None, :]
        for k, r in enumerate(rows):
            a, b = self.indptr[r], self.indptr[r + 1]
            out[k, self.indices[a:b]] = self.bins[a:b]
        return out


def wants_sparse(X, categorical_features, info, sparse):
    """Whether ``X`` is binned sparse: a scipy sparse matrix without categorical fields, and
    ``sparse`` True, or "auto" with a density (stored entries / cells) of at most
    SPARSE_DENSITY."""
    if sparse not in ("auto", True, False):
        raise ValueError(f"sparse must be 'auto', True or False, got {sparse!r}")
    if sparse is False or categorical_features is not None:
        return False
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover
        return False
    if not sp.issparse(X) or len(X.shape) != 2:
        return False
    if info is not None and np.any(info.is_categorical):
        return False
    n, d = X.shape
    if n == 0 or d == 0:
        return False
    return sparse is True or X.nnz <= SPARSE_DENSITY * n * d


def fit_sparse(bin_mapper, X, weight=None):
    """Learn ``bin_mapper``'s numeric bins from a CSR matrix (values float32 or float64),
    over the rows ``bin_mapper.sample_rows_of`` picks, as ``BinMapper.fit`` does on its
    dense copy. The sampled entries are gathered by column and each column's edges found
    in a kernel (``_column_edges_range``: each column's distinct values and counts, its
    zeros merged in, then ``binning.edges_from_counts``'s arithmetic in the same order),
    columns spread over the threads: a Python loop over the columns took 0.15 ms a column."""
    n, d = X.shape
    sample = bin_mapper.sample_rows_of(n)
    weighted = weight is not None
    wpos = (np.where(np.asarray(weight, dtype=np.float64) > 0, weight, 0.0) if weighted
            else np.zeros(0))
    wtotal = float(wpos[sample].sum()) if weighted else 0.0
    indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(X.indices, dtype=np.int32)
    colptr, cuts, fill = column_runs(indptr, indices, sample.astype(np.int64), d)
    vals = np.empty(int(colptr[-1]), dtype=np.float64)
    wts = np.empty(int(colptr[-1]) if weighted else 0, dtype=np.float64)
    with guard():
        run_ranges(_fill_values_range, cuts.size - 1, cuts, sample.astype(np.int64), indptr,
                   indices, X.data, wpos, weighted, fill, vals, wts)
    mvb = bin_mapper.max_bin - 1
    cap = np.minimum(np.diff(colptr) + 1, mvb) + 1  # edges a column can have
    cap_off = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(cap, out=cap_off[1:])
    out = np.empty(int(cap_off[-1]), dtype=np.float64)
    n_out = np.empty(d, dtype=np.int64)
    with guard():
        run_ranges(_column_edges_range, d, colptr, vals, wts, weighted, float(sample.size),
                   wtotal, mvb, cap_off, out, n_out)
    edges = [out[cap_off[j]:cap_off[j] + n_out[j]].copy() for j in range(d)]
    bin_mapper.fit_edges(edges, plain_search_edges=SMALL_FIELD_EDGES)
    _note_values_near_zero(bin_mapper, vals, np.diff(colptr), sample.size)
    return bin_mapper


def _note_values_near_zero(bin_mapper, vals, per_column, n_sampled):
    """``BinMapper.set_near_zero`` of the sampled columns (``vals``: their stored values,
    column after column, ``per_column`` of each): a column with fewer stored values than
    sampled rows holds zeros."""
    d = per_column.size
    stats, zero = near_zero_stats(d)
    near_zero_flat(vals, np.repeat(np.arange(d, dtype=np.int64), per_column), stats, zero)
    implicit = per_column < n_sampled
    zero |= implicit
    stats[0] = np.where(implicit, np.minimum(stats[0], 0.0), stats[0])
    bin_mapper.set_near_zero(stats, zero)


def column_runs(indptr, indices, rows, d):
    """The counting pass of a sort of the stored entries of ``rows`` (ascending row ids) by
    column, rows ascending within a column, on the threads: ``(colptr, cuts, fill)``, the
    rows cut into runs ``rows[cuts[t]:cuts[t + 1]]`` and ``fill[t, j]`` where run t's first
    entry of column j goes (after the earlier runs'). Each caller's kernel then writes its
    own payload there (``_fill_values_range``; ``sparse_cpu.csc_of``)."""
    n = rows.shape[0]
    k = max(1, min(numba.get_num_threads(), n))
    cuts = np.linspace(0, n, k + 1).astype(np.int64)
    counts = np.zeros((k, d), dtype=np.int64)
    run_ranges(_count_columns_range, k, cuts, rows, indptr, indices, counts)
    colptr = np.zeros(d + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=0), out=colptr[1:])
    fill = colptr[None, :-1] + np.cumsum(counts, axis=0) - counts
    return colptr, cuts, fill


@njit(cache=True, nogil=True)
def _count_columns_range(t0, t1, cuts, rows, indptr, indices, counts):
    for t in range(t0, t1):
        cnt = counts[t]
        for i in range(cuts[t], cuts[t + 1]):
            r = rows[i]
            idx = indices[indptr[r]:indptr[r + 1]]  # from 0: no wraparound check per entry
            for e in range(idx.shape[0]):
                cnt[np.uint64(idx[e])] += 1


@njit(cache=True, nogil=True)
def _fill_values_range(t0, t1, cuts, rows, indptr, indices, data, wpos, weighted, fill, vals,
                       wts):
    """Runs ``t0 .. t1 - 1`` of ``column_runs``: the values (float64) of their rows' entries,
    and the rows' weights ``wpos`` where ``weighted``, in column order."""
    for t in range(t0, t1):
        at = fill[t]
        for i in range(cuts[t], cuts[t + 1]):
            r = rows[i]
            a = indptr[r]
            z = indptr[r + 1]
            idx = indices[a:z]  # slices from 0, unsigned positions: no wraparound checks
            val = data[a:z]
            for e in range(z - a):
                j = np.uint64(idx[e])
                q = np.uint64(at[j])
                vals[q] = np.float64(val[e])
                if weighted:
                    wts[q] = wpos[r]
                at[j] += 1


@njit(cache=True, nogil=True)
def _column_edges_range(j0, j1, colptr, vals, wts, weighted, ns, wtotal, mvb, cap_off, out,
                        n_out):
    """Columns ``j0 .. j1 - 1``: the upper edges ``edges_from_counts`` gives for the
    distinct values of the column's non-NaN entries (with positive weight) and its zeros
    (``ns`` rows, or ``wtotal`` weight, less its entries'), into ``out[cap_off[j]:]``,
    their count into ``n_out[j]``."""
    for j in range(j0, j1):
        a = colptr[j]
        b = colptr[j + 1]
        v = np.empty(b - a, dtype=np.float64)
        w = np.empty(b - a, dtype=np.float64)
        m = 0
        stored_w = 0.0
        for e in range(a, b):
            x = vals[e]
            if weighted:
                stored_w += wts[e]
                if np.isnan(x) or not wts[e] > 0:
                    continue
                w[m] = wts[e]
            elif np.isnan(x):
                continue
            v[m] = x
            m += 1
        v = v[:m]
        if weighted:
            order = np.argsort(v, kind="mergesort")
            v = v[order]
            w = w[:m][order]
        else:
            v = np.sort(v)
        zeros = 0.0
        if b - a < ns:
            zeros = (wtotal - stored_w) if weighted else ns - (b - a)
        # distinct values and their counts (weights), the zeros merged in
        uniq = np.empty(m + 1, dtype=np.float64)
        count = np.empty(m + 1, dtype=np.float64)
        k = 0
        for i in range(m):
            c = w[i] if weighted else 1.0
            if i > 0 and v[i] == v[i - 1]:
                count[k - 1] += c
            else:
                uniq[k] = v[i]
                count[k] = c
                k += 1
        if zeros > 0:
            at = 0
            while at < k and uniq[at] < 0.0:
                at += 1
            if at < k and uniq[at] == 0.0:
                count[at] += zeros
            else:
                for i in range(k, at, -1):
                    uniq[i] = uniq[i - 1]
                    count[i] = count[i - 1]
                uniq[at] = 0.0
                count[at] = zeros
                k += 1
        o = cap_off[j]
        n_out[j] = _edges_of_counts(uniq[:k], count[:k], mvb, out[o:cap_off[j + 1]])


@njit(cache=True, nogil=True)
def _edges_of_counts(uniq, count, mvb, out):
    """``binning.edges_from_counts(uniq, cumsum(count), mvb)`` into ``out``; returns how
    many edges (the last +inf)."""
    k = uniq.shape[0]
    if k == 0:
        out[0] = np.inf
        return 1
    n = 0
    if k <= mvb:
        for i in range(k - 1):
            out[n] = _midpoint(uniq[i], uniq[i + 1])
            n += 1
    else:
        for idx in cut_indices_jit(np.cumsum(count), mvb):
            out[n] = _midpoint(uniq[idx], uniq[idx + 1])
            n += 1
    out[n] = np.inf
    return n + 1


@njit(cache=True, nogil=True, inline="always")
def _midpoint(lo, hi):
    """``edges_from_counts``'s edge between distinct values ``lo < hi``."""
    e = lo * 0.5 + hi * 0.5
    if not np.isnan(e) and e < lo:
        e = lo
    if np.isnan(e) or e >= hi:
        return lo
    return e


def bin_sparse(bin_mapper, X):
    """``SparseBins`` of a CSR matrix (canonical: sorted indices, no duplicates) with the
    mapper's numeric bins."""
    bm = bin_mapper
    n, d = X.shape
    if d != bm.n_bins.size:
        raise ValueError(f"X has {d} features, the bin mapper was fit on {bm.n_bins.size}")
    if np.any(bm.is_categorical):
        raise ValueError("sparse binning takes numeric fields only")
    default_bin = np.array([np.searchsorted(e, 0.0, side="left") for e in bm.upper_edges],
                           dtype=np.int64)
    lo, scale, start, stop = bm.cell_tables()
    indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(X.indices, dtype=np.int32)
    tmp = np.empty(indices.shape[0], dtype=bm.dtype)
    kept = np.empty(n, dtype=np.int64)
    n_value = np.ascontiguousarray(bm.n_value_bins, dtype=np.int64)
    with guard():
        run_ranges(_bin_entries, n, indptr, indices, X.data, bm.edges_flat, bm.edge_offsets,
                   n_value, lo, scale, start, stop, default_bin, tmp, kept)
    new_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(kept, out=new_ptr[1:])
    new_idx = np.empty(int(new_ptr[-1]), dtype=np.int32)
    new_bins = np.empty(int(new_ptr[-1]), dtype=bm.dtype)
    with guard():
        run_ranges(_compact_entries, n, indptr, indices, tmp, default_bin, new_ptr, new_idx,
                   new_bins)
    return SparseBins(new_ptr, new_idx, new_bins, default_bin, d)


@njit(cache=True, nogil=True)
def _bin_entries(r0, r1, indptr, indices, data, edges, edge_offsets, n_value, lo, scale, start,
                 stop, default_bin, out, kept):
    """Rows ``r0 .. r1 - 1``: each stored entry's bin into ``out``; ``kept[r]``: row r's
    entries off their field's default bin."""
    for r in range(r0, r1):
        c = 0
        a = indptr[r]
        z = indptr[r + 1]
        idx = indices[a:z]  # slices from 0: no wraparound check per entry
        val = data[a:z]
        dst = out[a:z]
        for e in range(z - a):
            j = idx[e]
            uj = np.uint64(j)
            x = val[e]
            ne = edge_offsets[uj + np.uint64(1)] - edge_offsets[uj]
            if np.isnan(x):
                b = n_value[uj]
            elif ne <= SMALL_FIELD_EDGES:  # a short search beats a cell table's cache miss
                b = bin_value(x, edges, edge_offsets[uj], ne)
            else:
                b = bin_numeric(x, j, edges, edge_offsets, lo, scale, start, stop)
            dst[e] = b
            c += b != default_bin[uj]
        kept[r] = c


@njit(cache=True, nogil=True)
def _compact_entries(r0, r1, indptr, indices, tmp, default_bin, new_ptr, new_idx, new_bins):
    for r in range(r0, r1):
        p = np.uint64(new_ptr[r])
        a = indptr[r]
        z = indptr[r + 1]
        idx = indices[a:z]  # slices from 0: no wraparound check per entry
        bins = tmp[a:z]
        for e in range(z - a):
            j = idx[e]
            if bins[e] != default_bin[np.uint64(j)]:
                new_idx[p] = j
                new_bins[p] = bins[e]
                p += np.uint64(1)


@njit(cache=True, nogil=True)
def _first_bad_entry(indptr, indices, bins, n_bins):
    """The first entry whose field is out of range or not above its row's previous one, or
    whose bin is out of its field's bins; -1 if none."""
    d = n_bins.shape[0]
    for r in range(indptr.shape[0] - 1):
        prev = -1
        for e in range(indptr[r], indptr[r + 1]):
            j = indices[e]
            if j <= prev or j >= d or np.int64(bins[e]) >= n_bins[j]:
                return e
            prev = j
    return -1
