"""Quantile binning: float features -> small integer bins (the BinMapper of DESIGN.md).

Layout of one field's bins:

* numeric field with ``k`` value bins: bins ``0..k-1`` hold values, bin ``k`` is missing (NaN).
  Value ``x`` falls in the first bin ``b`` with ``x <= upper_edges[b]``; the last upper edge
  is ``+inf``. A split "bin <= b goes left" is therefore the raw rule ``x <= upper_edges[b]``.
  A field with at most ``max_bin - 1`` distinct values gets one bin per value; a field with
  more gets ``max_bin - 1`` bins cut at quantiles, each edge the midpoint of the distinct
  values it separates (``cut_indices``: a value heavier than a bin's share gets a bin of its
  own, and the other values share the other bins).
* categorical field with ``K`` categories (codes ``0..K-1``): bin ``c`` is category ``c``,
  bin ``K`` is missing (NaN, or a code outside ``0..K-1``), whatever ``max_bin`` (XGBoost's
  rule: it bins numeric features). With ``group_categories`` (an opt-in), a field with more
  categories than ``max_bin - 1`` keeps its ``max_bin - 2`` most frequent categories (in the
  binning sample) as bins ``0..max_bin - 3``, in order of frequency, and puts all the others
  in one shared bin ``max_bin - 2``; bin ``max_bin - 1`` is missing. ``category_bins(j)`` maps codes to bins, so a split over bins
  becomes a set of categories.

All fields of a node share one histogram (group by field): field ``j`` owns the slots
``offsets[j] .. offsets[j] + n_bins[j] - 1``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..parallel import guard, run_ranges

SAMPLE_ROWS = 200_000


def _numeric_edges(values: np.ndarray, max_value_bins: int, weights=None) -> np.ndarray:
    """Upper edges (float64, last = inf) of at most ``max_value_bins`` quantile bins
    (weighted quantiles when ``weights`` is given: a row of weight 2 counts as two rows)."""
    ok = ~np.isnan(values)
    if weights is not None:
        ok &= weights > 0
    v = values[ok]
    if v.size == 0:
        return np.array([np.inf])
    if weights is None:
        uniq, cum = _runs(_sorted_values(v))
        return edges_from_counts(uniq, cum, max_value_bins)
    order = np.argsort(v, kind="stable")
    v = v[order].astype(np.float64)
    w = weights[ok][order]
    flag = np.empty(v.size, dtype=bool)
    flag[0] = True
    np.not_equal(v[1:], v[:-1], out=flag[1:])
    starts = np.flatnonzero(flag)
    uniq = v[starts]
    if uniq.size <= max_value_bins:
        return edges_from_counts(uniq, None, max_value_bins)
    # each value's weight summed on its own: differences of one running sum lose the light
    # rows' weight next to heavy ones (1 beside 1e17 is below an ulp), and the cuts of
    # weights 1 and 1e17 collapsed to one (RMSE 1.99 where XGBoost's was 0.34)
    counts = np.add.reduceat(w.astype(np.float64), starts)
    return edges_from_counts(uniq, np.cumsum(counts), max_value_bins, counts)


@njit(cache=True, nogil=True)
def _runs(v):
    """The distinct values (float64) of sorted values ``v`` (the first of each run of equal
    ones) and ``cum``: the count of values up to and with each (float64), in one pass."""
    n = v.size
    uniq = np.empty(n, np.float64)
    cum = np.empty(n, np.float64)
    k = 0
    for i in range(n):
        if i == 0 or v[i] != v[i - 1]:
            if k > 0:
                cum[k - 1] = i
            uniq[k] = v[i]
            k += 1
    if k > 0:
        cum[k - 1] = n
    return uniq[:k], cum[:k]


MAX_BINS = 65536  # bins of a field, the missing bin included, must fit uint16


def check_max_bin(max_bin):
    """``max_bin`` as an int in [3, MAX_BINS], or a named error. It counts the missing
    values' bin: 2 left one value bin per numeric feature, so no split, and a constant model
    without a word (XGBoost and LightGBM split at their max_bin=2)."""
    if (not isinstance(max_bin, (int, np.integer)) or isinstance(max_bin, (bool, np.bool_))
            or not 3 <= max_bin <= MAX_BINS):
        raise ValueError(f"max_bin must be an integer in [3, {MAX_BINS}] (it counts the "
                         "missing values' bin: 2 leaves one value bin per feature, which no "
                         f"split can cut; bins are stored as uint8 or uint16), got {max_bin!r}")
    return int(max_bin)


# LightGBM's edges next to 0.0 (backends/split.ZERO_EDGE, float32(1e-35) widened)
ZERO_RISK = float(np.float32(1e-35))


def at_zero_risk(values, lo, hi, near):
    """Where ``values`` lie in their field's ``zero_risk_interval`` (``lo``, ``hi``,
    ``near``, broadcast against them): farther than 1e-35 from 0.0, or nearer where
    ``near``."""
    with np.errstate(invalid="ignore"):
        return (values > lo) & (values <= hi) & ((np.abs(values) > ZERO_RISK) | near)

EDGE_FIELDS = 16  # fields copied into contiguous rows at a time to find their edges


def _edges_of_fields(Xs, fields, max_value_bins, weights, near_zero=None):
    """``_numeric_edges`` of the columns ``fields`` of ``Xs``, on all Numba threads (the sort
    and the copies release the GIL). Columns are copied EDGE_FIELDS at a time into contiguous
    rows: one column of a wide C-ordered matrix is one value per cache line. ``near_zero``:
    ``near_zero_stats``' accumulators, filled from the same contiguous rows (``_near_zero_of``;
    a pass over the matrix, row by row with the field's accumulators in memory, took 1.3 s of
    a 2.0 s fit at 200,000 x 500)."""
    from concurrent.futures import ThreadPoolExecutor

    import numba

    n_threads = numba.get_num_threads()
    size = max(1, min(EDGE_FIELDS, -(-len(fields) // n_threads)))  # every thread busy

    def block(k):
        cols = fields[k:k + size]
        if Xs.flags.c_contiguous:
            rows = np.empty((len(cols), Xs.shape[0]), Xs.dtype)
            _gather_columns(Xs, np.asarray(cols, dtype=np.int64), rows)
        else:
            rows = np.ascontiguousarray(Xs[:, cols].T)
        if near_zero is not None:
            stats, zero = near_zero
            for i, j in enumerate(cols):
                stats[0, j], stats[1, j], stats[2, j], zero[j] = _near_zero_of(rows[i])
        return [_numeric_edges(rows[i], max_value_bins, weights) for i in range(len(cols))]

    starts = range(0, len(fields), size)
    with ThreadPoolExecutor(max(1, min(n_threads, len(starts)))) as ex:
        return [e for found in ex.map(block, starts) for e in found]


@njit(cache=True, nogil=True)
def _gather_columns(X, cols, out):
    """``out[k] = X[:, cols[k]]`` for a C-ordered ``X``, in one pass over its rows (numpy's
    transposing copy is slower)."""
    for i in range(X.shape[0]):
        for k in range(cols.size):
            out[k, i] = X[i, cols[k]]


def _sorted_values(v):
    """``np.sort(v)`` of NaN-free float32/float64 values, by ``_radix_sort`` (faster: see
    benchmarks/README.md, wide binning). Values that compare equal have the same bits,
    except 0.0 and -0.0, whose order within their run ``np.sort`` leaves to its algorithm (the
    first of a run is the distinct value kept): values holding both are sorted by ``np.sort``."""
    if v.dtype not in (np.float32, np.float64):
        return np.sort(v)
    s = np.array(v, copy=True, order="C")
    if _radix_sort(s.view(np.uint32 if s.dtype == np.float32 else np.uint64)):
        return np.sort(v)
    return s


RADIX_BITS = 11


@njit(cache=True, nogil=True)
def _radix_sort(keys):
    """Sorts the IEEE bits of NaN-free floats (a uint32 or uint64 view) in place, in the
    order of their values: an LSD radix sort of RADIX_BITS-bit digits, skipping digits that
    every key shares. Returns whether the values held both 0.0 and -0.0."""
    n = keys.size
    if n == 0:
        return False
    n_bits = keys.itemsize * 8
    sign = np.uint64(1) << np.uint64(n_bits - 1)
    full = sign | (sign - np.uint64(1))
    pos0 = neg0 = False
    for i in range(n):  # order-preserving keys: negatives flipped, positives' sign bit set
        u = np.uint64(keys[i])
        pos0 |= u == 0
        neg0 |= u == sign
        keys[i] = (u ^ full) if u & sign else (u | sign)
    n_pass = (n_bits + RADIX_BITS - 1) // RADIX_BITS
    mask = np.uint64((1 << RADIX_BITS) - 1)
    counts = np.zeros((n_pass, 1 << RADIX_BITS), np.int64)
    for i in range(n):
        u = np.uint64(keys[i])
        for p in range(n_pass):
            counts[p, (u >> np.uint64(p * RADIX_BITS)) & mask] += 1
    src = keys
    dst = np.empty_like(keys)
    for p in range(n_pass):
        shift = np.uint64(p * RADIX_BITS)
        if counts[p, (np.uint64(keys[0]) >> shift) & mask] == n:
            continue  # one digit for every key: the order stays
        total = 0
        for b in range(1 << RADIX_BITS):
            c = counts[p, b]
            counts[p, b] = total
            total += c
        for i in range(n):
            u = src[i]
            b = (np.uint64(u) >> shift) & mask
            dst[counts[p, b]] = u
            counts[p, b] += 1
        src, dst = dst, src
    for i in range(n):
        u = np.uint64(src[i])
        keys[i] = (u ^ sign) if u & sign else (u ^ full)
    return pos0 and neg0


def edges_from_counts(uniq, cum, max_value_bins, counts=None):
    """The upper edges of ``_numeric_edges`` from a field's distinct values ``uniq`` (float64,
    ascending) and ``cum[i]``: the rows (or weight) up to and with ``uniq[i]`` (unused when
    ``uniq`` fits in ``max_value_bins``); ``counts``: each value's own, where the caller has
    them exactly (else ``cum``'s differences). A sparse column gives them from its non-zeros
    and its count of zeros, without the dense column (``data/sparse.py``)."""
    if uniq.size == 0:
        return np.array([np.inf])
    if uniq.size <= max_value_bins:
        cut_after = np.arange(uniq.size - 1)
    else:
        cut_after = cut_indices(np.asarray(cum, dtype=np.float64), max_value_bins, counts)
    lo, hi = uniq[cut_after], uniq[cut_after + 1]
    with np.errstate(invalid="ignore"):  # -inf next to +inf: their midpoint is NaN
        edges = np.maximum(lo * 0.5 + hi * 0.5, lo)  # halves first: no overflow near +-DBL_MAX
    # midpoint rounding can land on the upper value for adjacent doubles, and -inf's and
    # +inf's midpoint is NaN: then use the lower
    edges = np.where((edges >= hi) | np.isnan(edges), lo, edges)
    return np.append(edges, np.inf)


def _water_level(counts, total, max_value_bins):
    """``(h, cap)``: the ``h`` values heavier than a bin's share, taken heaviest first, each
    in a bin of its own, and the level ``cap`` at which the capped weights fill the other
    ``max_value_bins - h`` bins (see :func:`cut_indices_jit`). The weight left after the
    heaviest is summed from the lightest up: the total less the heaviest cancelled to 0 or
    below where they dwarf the rest (weights 1 and 1e17), and a level of 0 collapsed every
    cut into one. Where nothing is left, the level is the lightest heavy value's weight."""
    cap = total / max_value_bins
    heavy = -np.sort(-counts)
    rest = np.cumsum(heavy[::-1])[::-1]  # rest[h]: the weight of all but the h heaviest
    h = 0
    while h < max_value_bins - 1 and heavy[h] > cap:
        h += 1
        cap = rest[h] / (max_value_bins - h)
    if not cap > 0.0 and h > 0:
        cap = heavy[h - 1]
    return h, cap


_water_level_jit = njit(cache=True, nogil=True)(_water_level)


def cut_indices(cum, max_value_bins, counts=None):
    """:func:`cut_indices_jit` in numpy, for the dense fields, which call it from Python: the
    same arithmetic in the same order, so the same cuts, without compiling the kernel and
    Numba's sort (3.7 s of a cold first fit; the sparse binning kernel calls the jitted one).
    ``counts``: each value's weight, where the caller summed them exactly."""
    k = cum.shape[0]
    total = cum[-1]
    cap = total / max_value_bins
    if counts is None:
        counts = np.diff(cum, prepend=0.0)
        counts[0] = cum[0]
    h = 0
    if counts.max() > cap:
        h, cap = _water_level(counts, total, max_value_bins)
    slack = 0.0
    if h > 0:
        cum = np.cumsum(np.minimum(counts, cap))
        total = cum[-1]
        slack = total * 1e-9
    targets = total * np.arange(1, max_value_bins) / max_value_bins - slack
    idx = np.minimum(np.searchsorted(cum, targets), k - 2)
    return idx[np.r_[True, idx[1:] > idx[:-1]]] if idx.size else idx


@njit(cache=True, nogil=True)
def cut_indices_jit(cum, max_value_bins):
    """Where ``edges_from_counts`` cuts a field of more than ``max_value_bins`` distinct
    values: ascending indices ``i`` (an edge between distinct values ``i`` and ``i + 1``),
    from ``cum``, the rows (or weight) up to and with each distinct value.

    The cuts are quantiles: the distinct value whose cumulative weight first reaches each of
    the targets ``t * total / max_value_bins``. A value heavier than one bin's share took
    several targets, which made one cut, so a field with heavy values (the zeros of a sparse
    column, integer codes) lost bins: 256 distinct values kept 242 of 255, a column of 40 %
    zeros 156. So the weights are capped first, at the level ``cap`` where the capped weights
    fill ``max_value_bins`` bins of ``cap`` each (water filling): a heavy value then spans
    one target, and gets its own bin, and the others share the remaining bins by quantiles.
    A field without a value over ``total / max_value_bins`` keeps its plain quantile cuts."""
    k = cum.shape[0]
    total = cum[-1]
    cap = total / max_value_bins
    counts = np.empty(k, dtype=np.float64)
    counts[0] = cum[0]
    top = cum[0]
    for i in range(1, k):
        counts[i] = cum[i] - cum[i - 1]
        top = max(top, counts[i])
    h = 0
    if top > cap:  # (sorting every field's counts cost a third of its edges' time)
        h, cap = _water_level_jit(counts, total, max_value_bins)
    slack = 0.0
    if h > 0:
        capped = np.empty(k, dtype=np.float64)
        run = 0.0
        for i in range(k):
            run += min(counts[i], cap)
            capped[i] = run
        cum = capped
        total = run
        # a capped value ends on a target, give or take rounding: the target is its
        # (else two targets could fall in the next value, and a bin be lost)
        slack = total * 1e-9
    cuts = np.empty(max_value_bins - 1, dtype=np.int64)
    n = 0
    last = -1
    for t in range(1, max_value_bins):
        i = min(np.searchsorted(cum, total * t / max_value_bins - slack), k - 2)
        if i > last:  # targets ascend, and so do their indices: this is np.unique
            cuts[n] = i
            n += 1
            last = i
    return cuts[:n]


class BinMapper:
    """Learns per-field bins from (a sample of) the training matrix and applies them."""

    def __init__(self, max_bin: int = 256, sample_rows: int = SAMPLE_ROWS, random_state: int = 0,
                 group_categories: bool = False):
        self.max_bin = check_max_bin(max_bin)
        self.sample_rows = int(sample_rows)
        self.random_state = random_state
        self.group_categories = bool(group_categories)

    def sample_rows_of(self, n):
        """The rows (sorted) whose values set the bins of an ``n``-row matrix."""
        if n <= self.sample_rows:
            return np.arange(n)
        rng = np.random.default_rng(self.random_state)
        return np.sort(rng.choice(n, self.sample_rows, replace=False))

    def fit(self, X: np.ndarray, is_categorical: np.ndarray, n_categories: np.ndarray,
            weight=None, presampled=False):
        """Learn the bins from ``X`` (or from ``sample_rows_of(len(X))`` of its rows;
        ``presampled=True`` says ``X`` already is that sample)."""
        n, d = X.shape
        ws = weight
        if n > self.sample_rows and not presampled:
            sample = self.sample_rows_of(n)
            Xs = X[sample]
            ws = None if weight is None else weight[sample]
        else:
            Xs = X
        max_value_bins = self.max_bin - 1  # one slot is the missing bin
        n_value = np.empty(d, dtype=np.int32)
        edges = [np.empty(0)] * d
        cat_maps = [np.zeros(0, np.int32)] * d
        for j in range(d):
            if is_categorical[j]:
                if n_categories[j] > 65535:
                    raise ValueError(f"categorical feature {j} has {n_categories[j]} categories; "
                                     "at most 65535 are supported")
                K = int(n_categories[j])
                n_value[j] = max(K, 1)
                cat_maps[j] = np.arange(K, dtype=np.int32)
                if self.group_categories and K > max_value_bins:
                    cat_maps[j] = _grouped_categories(Xs[:, j], K, max_value_bins, ws)
                    n_value[j] = max_value_bins
        numeric = [j for j in range(d) if not is_categorical[j]]
        stats, zero = near_zero_stats(d)
        for j, e in zip(numeric, _edges_of_fields(Xs, numeric, max_value_bins, ws,
                                                  (stats, zero))):
            n_value[j] = e.size
            edges[j] = e
        self._set_bins(edges, n_value, cat_maps, is_categorical)
        return self.set_near_zero(stats, zero)

    def fit_sketches(self, sketches):
        """Learn the bins of numeric fields from one ``data.sketch.QuantileSketch`` each
        (the streaming pass over data that does not fit in memory): the in-core edge rule
        over each sketch's values, weighted by the rank mass they stand for."""
        d = len(sketches)
        edges, n_value = [], np.empty(d, dtype=np.int32)
        values = []
        for j, sk in enumerate(sketches):
            v, m = sk.weighted_values()
            edges.append(_numeric_edges(v, self.max_bin - 1, m))
            n_value[j] = edges[-1].size
            values.append(v)
        self._set_bins(edges, n_value, [np.zeros(0, np.int32)] * d, np.zeros(d, bool))
        stats, zero = near_zero_stats(d)
        for j, v in enumerate(values):
            near_zero_flat(np.asarray(v, dtype=np.float64), np.full(v.size, j, np.int64),
                           stats, zero)
        return self.set_near_zero(stats, zero)

    def fit_edges(self, edges, plain_search_edges=0):
        """Numeric fields only, with the given upper edges (one float64 array per field,
        the last +inf): the sparse path's own fit (``data/sparse.py``). Fields of at most
        ``plain_search_edges`` edges get no cell table (their rows of it stay untouched
        zeros, pages never made resident): ``bin_numeric`` searches them whole."""
        d = len(edges)
        n_value = np.array([e.size for e in edges], dtype=np.int32)
        return self._set_bins(edges, n_value, [np.zeros(0, np.int32)] * d, np.zeros(d, bool),
                              plain_search_edges)

    def cell_tables(self):
        """(lo, scale, start, stop) of ``_cell_tables``: what ``bin_numeric`` searches."""
        if not hasattr(self, "_cells"):  # mappers pickled before the cell tables existed
            self._cells = _cell_tables(self.upper_edges, self.is_categorical)
        return self._cells

    def _set_bins(self, edges, n_value, cat_maps, is_categorical, plain_search_edges=0):
        d = len(edges)
        # each numeric field's least value, greatest value < 0, least value > 0 in the
        # binning sample (NaN: unknown, or none) and whether 0.0 is one of its values: where
        # LightGBM's bin of 0.0 lies (train/grower.use_lightgbm_missing)
        self.lowest = np.full(d, np.nan)
        self.below_zero = np.full(d, np.nan)
        self.above_zero = np.full(d, np.nan)
        self.has_zero = np.zeros(d, dtype=bool)
        self.is_categorical = np.asarray(is_categorical, dtype=bool)
        self.n_value_bins = n_value
        self.missing_bin = n_value.copy()  # missing bin follows the value bins
        self.n_bins = n_value + 1
        self.offsets = np.zeros(d + 1, dtype=np.int64)
        np.cumsum(self.n_bins, out=self.offsets[1:])
        self.upper_edges = edges
        self.edge_offsets = np.zeros(d + 1, dtype=np.int64)
        np.cumsum([e.size for e in edges], out=self.edge_offsets[1:])
        self.edges_flat = np.concatenate(edges) if edges else np.empty(0)
        self.dtype = np.uint8 if self.n_bins.max() <= 256 else np.uint16
        self._cells = _cell_tables(edges, is_categorical, plain_search_edges)
        self.cat_map_flat, self.cat_offsets = _flatten(cat_maps)
        return self

    def set_near_zero(self, stats, zero):
        """Record each field's values around 0.0 from ``near_zero_stats``' arrays, filled
        (``lowest``, ``below_zero``, ``above_zero``; NaN where none)."""
        lowest, below, above = (np.where(np.isfinite(r), r, np.nan) for r in stats)
        self.lowest, self.below_zero, self.above_zero, self.has_zero = lowest, below, above, zero
        return self

    def category_bins(self, field: int) -> np.ndarray:
        """The bin of each category code ``0..K-1`` of a categorical field."""
        flat, off = self._maps()
        return flat[off[field]:off[field + 1]]

    def _maps(self):
        if not hasattr(self, "cat_map_flat"):  # mappers pickled before categories were grouped
            d = self.n_bins.size
            self.cat_map_flat, self.cat_offsets = _flatten(
                [np.arange(self.n_value_bins[j] if self.is_categorical[j] else 0)
                 for j in range(d)])
        return self.cat_map_flat, self.cat_offsets

    @property
    def total_bins(self) -> int:
        return int(self.offsets[-1])

    def zero_risk_interval(self):
        """(lo, hi, near) per field: values in (lo, hi] share a bin with a point of +-1e-35,
        LightGBM's edges next to 0.0 (``ZERO_RISK``): a validation value there, 0.3 in a bin
        of 0.0 up to 0.5 say, is routed by such a threshold otherwise than its bin says
        (``Dataset.zero_side``, ``at_zero_risk``). NaN for categorical fields. ``near``: the
        fields whose values within 1e-35 of 0.0 are at risk too, those whose training values
        (known, ``lowest``) lack 0.0: 0.0 itself shares a bin with other values there, and
        LightGBM's threshold of +1e-35 that sends the missing values alone left, where the
        values are all above 0, sends it left with them."""
        d = self.n_bins.size
        lo, hi = np.full(d, np.nan), np.full(d, np.nan)
        for j, e in enumerate(self.upper_edges):
            if self.is_categorical[j] or e.size == 0:
                continue
            b_lo = int(np.searchsorted(e, -ZERO_RISK, side="left"))
            b_hi = int(np.searchsorted(e, ZERO_RISK, side="left"))
            lo[j] = e[b_lo - 1] if b_lo > 0 else -np.inf
            hi[j] = e[min(b_hi, e.size - 1)]
        near = ~np.asarray(self.has_zero, dtype=bool) & ~np.isnan(self.lowest)
        return lo, hi, near


    def transform(self, X: np.ndarray):
        """Return (row-major bins (n, d), column-major bins (d, n))."""
        n, d = X.shape
        rows = np.empty((n, d), dtype=self.dtype)
        cols = np.empty((d, n), dtype=self.dtype)
        self.transform_into(X, rows, cols)
        return rows, cols

    def transform_into(self, X: np.ndarray, rows: np.ndarray, cols: np.ndarray):
        """Bin ``X`` into the given row-major (n, d) and column-major (d, n) arrays."""
        if X.shape[1] != self.n_bins.size:
            raise ValueError(f"X has {X.shape[1]} features, the bin mapper was fit on {self.n_bins.size}")
        if not hasattr(self, "_cells"):  # mappers pickled before the cell tables existed
            self._cells = _cell_tables(self.upper_edges, self.is_categorical)
        n, d = X.shape
        tasks = -(-n // BIN_ROWS) * -(-d // BIN_FIELDS)
        with guard():
            run_ranges(_bin_tiles, tasks, X, self.edges_flat, self.edge_offsets,
                       self.is_categorical, self.n_value_bins, *self._maps(), *self._cells,
                       rows, cols)

    def threshold(self, field: int, bin_: int) -> float:
        return float(self.upper_edges[field][bin_])

    # -- (de)serialisation for the model file ------------------------------------------
    def to_dict(self):
        return {
            "max_bin": self.max_bin,
            "is_categorical": self.is_categorical.tolist(),
            "n_value_bins": self.n_value_bins.tolist(),
            "upper_edges": [[float(x) for x in e] for e in self.upper_edges],
            "category_bins": [self.category_bins(j).tolist() if self.is_categorical[j] else None
                              for j in range(self.n_bins.size)],
        }


@njit(cache=True, nogil=True)
def bin_value(x, edges, lo, n_edges):
    # first edge >= x (edges sorted ascending, last is +inf); branch-free steps, so the
    # loop's length depends only on n_edges and mispredictions vanish
    base = 0
    n = n_edges
    while n > 1:
        half = n >> 1
        base += half * (edges[lo + base + half - 1] < x)
        n -= half
    return base + (edges[lo + base] < x)


def near_zero_stats(d):
    """Empty accumulators of each field's values around 0.0 for ``_near_zero_of`` and
    ``near_zero_flat``: (3, d) rows least value, greatest value < 0, least value > 0 (inf or
    -inf where none yet), and whether 0.0 is a value."""
    stats = np.empty((3, d))
    stats[0] = np.inf
    stats[1] = -np.inf
    stats[2] = np.inf
    return stats, np.zeros(d, dtype=np.bool_)


@njit(cache=True, nogil=True, inline="always")
def _near_zero_add(v, j, stats, zero):
    if v != v:  # NaN: missing
        return
    if v < stats[0, j]:
        stats[0, j] = v
    if v < 0.0:
        if v > stats[1, j]:
            stats[1, j] = v
    elif v > 0.0:
        if v < stats[2, j]:
            stats[2, j] = v
    else:
        zero[j] = True


@njit(cache=True, nogil=True)
def _near_zero_of(v):
    """``near_zero_stats``' entries of one field from its values ``v`` (contiguous): least
    value, greatest value < 0, least value > 0 (inf, -inf, inf where none), whether 0.0 is
    one; NaN skipped (its comparisons are false)."""
    lowest, below, above, zero = np.inf, -np.inf, np.inf, False
    for x in v:
        lowest = min(lowest, x) if x == x else lowest
        if x < 0.0:
            below = max(below, x)
        elif x > 0.0:
            above = min(above, x)
        elif x == 0.0:
            zero = True
    return lowest, below, above, zero


@njit(cache=True, nogil=True)
def near_zero_flat(values, fields, stats, zero):
    """``near_zero_stats`` over values of the fields ``fields`` (one per value)."""
    for k in range(values.shape[0]):
        _near_zero_add(values[k], fields[k], stats, zero)


def _flatten(maps):
    """Per-field code -> bin maps as one int32 array and the offsets of each field's map."""
    offsets = np.zeros(len(maps) + 1, dtype=np.int64)
    np.cumsum([m.size for m in maps], out=offsets[1:])
    flat = np.concatenate(maps) if maps else np.zeros(0)
    return flat.astype(np.int32), offsets


def _grouped_categories(codes, K, n_bins, weights=None):
    """Bins of the codes ``0..K-1`` of a field with more categories than ``n_bins``: the
    ``n_bins - 1`` most frequent (by count, or weight) get bins ``0..n_bins - 2`` in that order
    (ties: the smaller code first), every other code shares bin ``n_bins - 1``."""
    ok = ~np.isnan(codes)
    c = codes[ok].astype(np.int64)
    w = None if weights is None else weights[ok]
    inside = (c >= 0) & (c < K)
    count = np.bincount(c[inside], weights=None if w is None else w[inside], minlength=K)
    keep = np.lexsort((np.arange(K), -count))[:n_bins - 1]
    out = np.full(K, n_bins - 1, dtype=np.int32)
    out[keep] = np.arange(keep.size, dtype=np.int32)
    return out


N_CELLS = 1024


def _cell_tables(edges, is_categorical, plain_search_edges=0):
    """A uniform grid of ``N_CELLS`` cells over each numeric field's finite edges, with the
    range of bins each cell can hold: binning a value then searches only that range
    (usually one or two bins) instead of all of them."""
    d = len(edges)
    lo = np.zeros(d)
    scale = np.zeros(d)
    start = np.zeros((d, N_CELLS), dtype=np.int32)
    stop = np.zeros((d, N_CELLS), dtype=np.int32)
    for j, e in enumerate(edges):
        if is_categorical[j] or e.size < 3 or e.size <= plain_search_edges:
            continue
        a, b = float(e[0]), float(e[-2])  # first and last finite edges
        width = b - a
        if not (np.isfinite(width) and width > 0):
            continue
        lo[j] = a
        scale[j] = N_CELLS / width
        bounds = a + np.arange(N_CELLS + 1) * (width / N_CELLS)
        idx = np.searchsorted(e, bounds, side="left")
        start[j] = idx[:-1]
        stop[j] = np.minimum(idx[1:], e.size - 1)
    return lo, scale, start, stop


@njit(cache=True, nogil=True)
def _bin_in_range(x, edges, off, a, z):
    """First index i in [a, z] with edges[off + i] >= x (edges[off + z] >= x holds)."""
    while z - a > 4:
        m = (a + z) >> 1
        if edges[off + m] < x:
            a = m + 1
        else:
            z = m
    while edges[off + a] < x:
        a += 1
    return a


@njit(cache=True, nogil=True, inline="always")
def _bin_in_cells(x, j, edges, off, ne, lo_j, scale_j, start, stop):
    """``bin_numeric`` of a field with a cell table (``scale[j] > 0``): the cell's bracket of
    bins, checked; a bracket of one or two bins (nearly all of them at 255 bins and 1024
    cells) is settled by one comparison without a branch."""
    n_cells = start.shape[1]
    t = (x - lo_j) * scale_j
    if t <= 0.0:
        cell = 0
    elif t >= n_cells:
        cell = n_cells - 1
    else:
        cell = int(t)
    a = start[j, cell]
    z = stop[j, cell]
    # the grid is a hint: check the bracket, else search everything
    if (a > 0 and edges[off + a - 1] >= x) or edges[off + z] < x:
        return bin_value(x, edges, off, ne)
    if z - a <= 1:
        return a + (edges[off + a] < x)
    return _bin_in_range(x, edges, off, a, z)


@njit(cache=True, nogil=True, inline="always")
def bin_numeric(x, j, edges, edge_offsets, lo, scale, start, stop):
    """The bin of a non-NaN value ``x`` of numeric field ``j`` (see ``_cell_tables``)."""
    off = edge_offsets[j]
    ne = edge_offsets[j + 1] - off
    if scale[j] > 0.0:
        return _bin_in_cells(x, j, edges, off, ne, lo[j], scale[j], start, stop)
    return bin_value(x, edges, off, ne)


# Dense binning runs in tiles: BIN_FIELDS fields x BIN_TILE rows at a time, field by field.
# A field's cell table and edges (~10 KB) stay in L1 over the tile's rows, the tile's rows of
# X in L2 over its fields, and their pages in the TLB. (Row by row over every field, a wide
# matrix's tables missed the caches at nearly every value: benchmarks/README.md, wide
# binning.) A task is BIN_ROWS rows of one block of fields, so that wide matrices split into
# many tasks too.
BIN_FIELDS = 16
BIN_TILE = 512
BIN_ROWS = 16384


@njit(cache=True, nogil=True)
def _bin_tiles(t0, t1, X, edges, edge_offsets, is_cat, n_value, cat_map, cat_off, lo, scale,
               start, stop, rows, cols):
    """Tasks ``t0 .. t1 - 1`` (task ``t``: rows block ``t // n_field_blocks``, fields block
    ``t % n_field_blocks``) of ``X`` into ``rows`` (n, d) and ``cols`` (d, n)."""
    n, d = X.shape
    n_fb = (d + BIN_FIELDS - 1) // BIN_FIELDS
    for t in range(t0, t1):
        f0 = (t % n_fb) * BIN_FIELDS
        f1 = min(d, f0 + BIN_FIELDS)
        r0 = (t // n_fb) * BIN_ROWS
        r1 = min(n, r0 + BIN_ROWS)
        for i0 in range(r0, r1, BIN_TILE):
            i1 = min(r1, i0 + BIN_TILE)
            for j in range(f0, f1):
                # one loop per kind of field: no per-value test of the field's kind
                miss = n_value[j]
                off = edge_offsets[j]
                ne = edge_offsets[j + 1] - off
                if is_cat[j]:
                    K = cat_off[j + 1] - cat_off[j]
                    for i in range(i0, i1):
                        x = X[i, j]
                        b = miss
                        if not np.isnan(x):
                            c = int(x)
                            if c >= 0 and c < K:
                                b = cat_map[cat_off[j] + c]
                        rows[i, j] = b
                        cols[j, i] = b
                elif scale[j] > 0.0:
                    lo_j = lo[j]
                    scale_j = scale[j]
                    for i in range(i0, i1):
                        x = X[i, j]
                        if np.isnan(x):
                            b = miss
                        else:
                            b = _bin_in_cells(x, j, edges, off, ne, lo_j, scale_j, start, stop)
                        rows[i, j] = b
                        cols[j, i] = b
                else:
                    for i in range(i0, i1):
                        x = X[i, j]
                        b = miss if np.isnan(x) else bin_value(x, edges, off, ne)
                        rows[i, j] = b
                        cols[j, i] = b
