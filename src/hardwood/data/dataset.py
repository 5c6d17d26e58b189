"""``hardwood.Dataset``: user data, checked, binned once, kept in both row- and column-major order."""
from __future__ import annotations

import numpy as np

from .binning import MAX_BINS, BinMapper, at_zero_risk, check_max_bin
from .convert import (FeatureInfo, as_pandas_if_named_table, checked_csr, to_csr,
                      to_float_matrix, to_vector)
from .sparse import bin_sparse, fit_sparse, wants_sparse

CHUNK_ROWS = 65536  # DataFrames and sparse matrices are converted this many rows at a time


def _release_freed_memory():
    """Hand the heap's free memory back to the system (glibc only; elsewhere a no-op).
    Converting a DataFrame chunk by chunk frees many mid-sized blocks that glibc keeps;
    without this they stay resident through the whole fit (categorical benchmark: the fit's
    peak 93 -> 85 MB for 46 MB of raw X)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _rows(X, idx_or_slice):
    return X.iloc[idx_or_slice] if hasattr(X, "iloc") else X[idx_or_slice]


def _without_unused_categories(X):
    """A training frame whose category columns drop the categories no row holds (a frame cut
    from a larger one keeps its dtype's categories). Such a category is unseen, so predicting
    treats it as missing, as for integer codes: it was a category of its own, with no rows,
    sent by each split wherever the sort of the categories put it (-2.16, the value of
    another category, where missing values got -0.66). Over the whole frame, before any
    chunk is converted: a chunk holds some of the categories only."""
    if not (type(X).__module__.startswith("pandas") and type(X).__name__ == "DataFrame"):
        return X
    import pandas as pd

    out = None
    for j in range(X.shape[1]):
        s = X.iloc[:, j]
        if not isinstance(s.dtype, pd.CategoricalDtype):
            continue
        codes = s.cat.codes.to_numpy()
        k = len(s.cat.categories)
        if np.bincount(codes[codes >= 0], minlength=k).astype(bool).all():
            continue
        if out is None:
            out = X.copy(deep=False)
        out.isetitem(j, s.cat.remove_unused_categories())
    return X if out is None else out


def _chunkable(X, categorical_features):
    """Large DataFrames / sparse matrices are converted in row chunks, so that no float copy
    of the whole matrix is ever made. That needs every categorical column's categories
    without a full pass: true for pandas 'category' columns only."""
    if categorical_features is not None or X is None or not hasattr(X, "shape"):
        return False
    if len(X.shape) != 2 or X.shape[0] <= 2 * CHUNK_ROWS:
        return False
    mod = type(X).__module__
    if mod.startswith("pandas") and type(X).__name__ == "DataFrame":
        return True
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover
        return False
    return sp.issparse(X)


class _ZeroSide:
    """The entries of a matrix (dense, in chunks, or CSR) at ``binning.at_zero_risk``:
    (rows, fields, values)."""

    def __init__(self, bm):
        self.lo, self.hi, self.near = bm.zero_risk_interval()
        self.found = []

    def add_dense(self, mat, row0):
        fields = np.flatnonzero(~np.isnan(self.lo))
        if fields.size == 0:
            return
        sub = mat[:, fields]
        r, c = np.nonzero(at_zero_risk(sub, self.lo[fields], self.hi[fields],
                                       self.near[fields]))
        self.found.append((r + row0, fields[c], sub[r, c].astype(np.float64)))

    def add_csr(self, mat):
        rows = np.repeat(np.arange(mat.shape[0]), np.diff(mat.indptr))
        fields = np.asarray(mat.indices, dtype=np.int64)
        values = np.asarray(mat.data, dtype=np.float64)
        k = np.flatnonzero(at_zero_risk(values, self.lo[fields], self.hi[fields],
                                        self.near[fields]))
        self.found.append((rows[k], fields[k], values[k]))

    def entries(self):
        """(rows, fields, values), or None where there are none."""
        found = [f for f in self.found if f[0].size]
        if not found:
            return None
        return tuple(np.concatenate(parts) for parts in zip(*found))


def start_margins(m, n_rows, what):
    """Each row's starting margins (XGBoost's ``base_margin``, LightGBM's ``init_score``) as
    float64 (n_rows, n_outputs), or None: a vector of one per row, a matrix of one column per
    output, or a flat array of n_rows x n_outputs: row by row as XGBoost reads a flat
    ``base_margin``, output by output as LightGBM reads a flat ``init_score`` (``what``
    names which; hardwood read both LightGBM's way: 0.83 off in probability)."""
    if m is None:
        return None
    if hasattr(m, "to_numpy"):
        m = m.to_numpy(dtype=np.float64, na_value=np.nan)
    arr = np.asarray(m)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim == 1:
        if n_rows == 0 or arr.size == 0 or arr.size % n_rows:
            raise ValueError(f"{what} has {arr.size} values for {n_rows} rows: give one per "
                             "row, or one per row and output")
        lightgbm = "init_score" in what
        arr = arr.reshape(-1, n_rows).T if lightgbm else arr.reshape(n_rows, -1)
    elif arr.ndim != 2 or arr.shape[0] != n_rows:
        raise ValueError(f"{what} has shape {arr.shape}; expected ({n_rows},) or "
                         f"({n_rows}, n_outputs)")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ValueError(f"{what} holds NaN or infinite values (row {i} first)")
    return np.ascontiguousarray(arr)


class Dataset:
    """Training or validation data.

    Parameters
    ----------
    X : numpy array (float32/float64), pandas DataFrame or scipy sparse matrix
        Features, NaN for missing. ``category`` columns of a DataFrame are categorical.
        Absent entries of a sparse matrix are zeros (as in scipy), not missing.
    y : array-like, optional
        Labels; ``label=`` (XGBoost's ``DMatrix`` and LightGBM's ``Dataset`` keyword) is the
        same.
    weight : array-like, optional
        Non-negative sample weights.
    categorical_features : list of int or str, or a boolean mask, optional
        Extra categorical columns (numeric arrays must hold non-negative integer codes).
    max_bin : int
        Most bins per field, the missing bin included (256 keeps bins in uint8).
    reference : Dataset, optional
        A training set whose bins (and category maps) this set reuses; use it for
        validation sets.
    feature_names : list of str, optional
    group, qid : array-like, optional
        Query groups for ranking objectives: the sizes of consecutive queries (``group``),
        or one query id per row (``qid``; each query's rows contiguous).
    group_categories : bool
        False (default): one bin per category, whatever their number and ``max_bin``, as
        XGBoost's categorical features (bins become uint16 past 255 categories). True: a
        categorical field with more categories than ``max_bin - 1`` keeps its
        ``max_bin - 2`` most frequent categories as bins and shares one bin among the others
        (bins stay uint8 at the default ``max_bin``; the others cannot be told apart).
    drop_unused_categories : bool
        True (default): a category of a frame's dtype that no row holds is dropped, so that
        predicting treats it as unseen (missing), as for integer codes. False keeps the
        dtype's categories and their codes (the forests, which split codes as ordered
        numbers and must code every ``warm_start`` fit alike).
    feature_info : FeatureInfo, optional
        Code ``X`` as this earlier fit's features (names, categories by value; a category
        it never saw is missing), but learn new bins: a forest's ``warm_start`` fit, whose
        old trees split the codes of its first fit (a frame whose category dtype listed
        other categories read them through other codes: accuracy 0.95 fell to 0.34).
    sparse : "auto", True or False
        How a scipy sparse matrix without categorical features is binned: straight from its
        non-zeros into ``sparse_bins`` (``data/sparse.py``; memory follows the non-zeros,
        and training's histograms cost the non-zeros, not rows x columns), or densely.
        "auto": sparse when at most ``sparse.SPARSE_DENSITY`` (10%) of the cells are stored.
        Both give the same bins; dense input ignores it.
    """

    pages_on_disk = None  # (page paths, key) for a set from_batches built; None in memory
    group = None  # query boundaries for ranking (set from group= or qid=)
    sketch_error = 0.0  # the bins' rank error, as a share of the rows (from_batches)
    sparse_bins = None  # data.sparse.SparseBins of a set binned sparse; None: dense bins
    # the rows' starting margins (n_rows, n_outputs), None where none were given (sets built
    # without __init__, from_batches' and Dask's, had no such attribute: get_base_margin
    # raised AttributeError there)
    base_margin = None
    zero_side = None  # (_ZeroSide.entries: a validation set's values next to 0.0)
    _bins_row = _bins_col = None

    @property
    def bins_row(self):
        """Row-major bins (n_rows, n_features). A set binned sparse makes them on first use
        (rows x columns of memory: for the code that needs dense bins, such as forests)."""
        if self._bins_row is None and self.sparse_bins is not None:
            self._bins_row, self._bins_col = self.sparse_bins.to_dense()
        return self._bins_row

    @bins_row.setter
    def bins_row(self, value):
        self._bins_row = value

    @property
    def bins_col(self):
        """Column-major bins (n_features, n_rows); see ``bins_row``."""
        if self._bins_col is None and self.sparse_bins is not None:
            self._bins_row, self._bins_col = self.sparse_bins.to_dense()
        return self._bins_col

    @bins_col.setter
    def bins_col(self, value):
        self._bins_col = value

    @classmethod
    def from_batches(cls, make_batches, cache_dir, max_bin=256, page_bytes=32 << 20,
                     sketch_size=2048, feature_names=None):
        """A training set read from batches, binned into pages on disk (out of core).

        ``make_batches()`` returns a fresh iterator of ``(X, y)``, ``(X, y, weight)`` or
        ``(X, y, weight, base_margin)`` batches (``weight`` may be None; ``base_margin``:
        the rows' starting margins, as ``Dataset(base_margin=)`` takes them); it is called
        twice, and must give the same data both times. Pass 1 feeds a streaming quantile
        sketch per field (``sketch_size`` values per summary: the bins' rank error is at
        most ``(log2(batches) + 1) / sketch_size`` of the rows, reported as
        ``sketch_error``). Pass 2 writes binned pages of about ``page_bytes`` into
        ``cache_dir``; a cache built from the same data and parameters is reused, any other
        rebuilt. Labels, weights, margins, gradients and predictions stay in memory: a few
        floats per row. Numeric features only, for now. See ``data/batches.py``."""
        from .batches import from_batches

        return from_batches(cls, make_batches, cache_dir, max_bin=max_bin,
                            page_bytes=page_bytes, sketch_size=sketch_size,
                            feature_names=feature_names)

    @classmethod
    def from_files(cls, paths, label, cache_dir, weight=None, fmt=None, max_bin=256,
                   page_bytes=32 << 20, sketch_size=2048, batch_rows=100_000):
        """A training set streamed from data files into pages on disk (out of core), as
        :meth:`from_batches` does, without holding any file whole in memory.

        paths : a file, a glob pattern (``"parts/*.parquet"``) or a list of them; Parquet
            (read one row group at a time), CSV/TSV or LibSVM (``batch_rows`` rows at a
            time), all of one format (``fmt``: None reads it from the extensions).
        label : the label column (Parquet, CSV); a LibSVM line's label is its first field,
            so ``label`` is ignored there. ``weight``: an optional weight column.
        Every file must hold the same numeric feature columns in the same order; an error
        names the file and the row group (Parquet) or rows (CSV, LibSVM) at fault. See
        ``data/files.py``."""
        from .batches import from_batches
        from .files import FileBatches

        batches = FileBatches(paths, label, fmt=fmt, weight=weight, batch_rows=batch_rows)
        return from_batches(cls, batches, cache_dir, max_bin=max_bin, page_bytes=page_bytes,
                            sketch_size=sketch_size, feature_names=batches.names,
                            where=batches.where)

    def __init__(self, X, y=None, weight=None, categorical_features=None, max_bin=256,
                 reference: "Dataset | None" = None, feature_names=None, random_state=0,
                 group_categories=False, group=None, qid=None, sparse="auto",
                 drop_unused_categories=True, feature_info=None, *, label=None,
                 base_margin=None, init_score=None):
        if label is not None:
            if y is not None:
                raise ValueError("give y or label (the same thing), not both")
            y = label
        if reference is not None and not isinstance(reference, Dataset):
            raise TypeError("reference must be a hardwood.Dataset")
        if reference is not None and feature_info is not None:
            raise ValueError("give reference or feature_info, not both")
        if feature_info is not None and not isinstance(feature_info, FeatureInfo):
            raise TypeError("feature_info must be a FeatureInfo (a Dataset's or a model's "
                            f".info), got {type(feature_info).__name__}")
        X = as_pandas_if_named_table(X)  # (Arrow, polars: their column names kept)
        if reference is None:
            check_max_bin(max_bin)
        info = reference.info if reference is not None else feature_info
        what = "validation X" if reference is not None else "X"
        if info is None and drop_unused_categories:
            X = _without_unused_categories(X)
        is_sparse = wants_sparse(X, categorical_features, info, sparse)
        if is_sparse:  # binned from the non-zeros: no dense copy (data/sparse.py)
            chunked = False
            mat, info = to_csr(X, info=info, feature_names=feature_names, what=what)
        else:
            chunked = _chunkable(X, categorical_features)
            if chunked and not hasattr(X, "iloc"):  # sparse: its structure checked before
                X = checked_csr(X, what)            # any row slice of it is taken
            first = _rows(X, slice(0, CHUNK_ROWS)) if chunked else X
            mat, info = to_float_matrix(first, categorical_features=categorical_features,
                                        info=info, feature_names=feature_names, what=what)
        if reference is not None and feature_names is not None:
            if [str(n) for n in feature_names] != list(info.names):
                raise ValueError("feature_names differ from the reference Dataset's feature names")
        n_cat = info.n_categories
        if reference is None and n_cat.size and n_cat.max() > MAX_BINS - 1:
            j = int(np.argmax(n_cat))
            raise ValueError(f"categorical feature {info.names[j]!r} has {int(n_cat[j])} "
                             f"categories; at most {MAX_BINS - 1} are supported")
        self.info: FeatureInfo = info
        self.n_rows, self.n_features = (X.shape[0], mat.shape[1]) if chunked else mat.shape
        self.label = to_vector(y, self.n_rows, "label")
        self.group = None  # query boundaries (ranking): query q is rows group[q]:group[q + 1]
        if group is not None or qid is not None:
            from ..ranking import group_ptr

            self.group = group_ptr(self.n_rows, group, qid)
        if weight is not None:
            n_queries = None if self.group is None else self.group.size - 1
            if (hasattr(weight, "__len__") and len(weight) == n_queries
                    and n_queries != self.n_rows):
                # (XGBoost's DMatrix takes one weight per query; the shape error named neither)
                raise ValueError(f"weight has {n_queries} values, one per query; a Dataset "
                                 f"takes one weight per row ({self.n_rows}): repeat each "
                                 "query's weight over its rows, e.g. np.repeat(weights, group)")
            w = to_vector(weight, self.n_rows, "weight")
            if np.any(w < 0):
                i = int(np.flatnonzero(w < 0)[0])
                raise ValueError(f"weight must be non-negative; found a negative weight "
                                 f"({w[i]:g} at index {i})")
            if not np.any(w > 0):
                raise ValueError("weight is zero for every row")
            self.weight = w
        else:
            self.weight = None
        if base_margin is not None and init_score is not None:
            raise ValueError("give base_margin (XGBoost's name) or init_score (LightGBM's), "
                             "not both: they are the same thing")
        self.base_margin = start_margins(
            base_margin if init_score is None else init_score, self.n_rows,
            "base_margin" if init_score is None else "init_score")
        if reference is not None:
            self.bin_mapper = reference.bin_mapper
        else:
            self.bin_mapper = BinMapper(max_bin=max_bin, random_state=random_state,
                                        group_categories=group_categories)
            if is_sparse:
                fit_sparse(self.bin_mapper, mat, weight=self.weight)
            elif chunked:  # the mapper's own row sample, converted alone
                sample = self.bin_mapper.sample_rows_of(self.n_rows)
                smat, _ = to_float_matrix(_rows(X, sample), info=info, what=what)
                sw = None if self.weight is None else self.weight[sample]
                self.bin_mapper.fit(smat, info.is_categorical, info.n_categories, weight=sw,
                                    presampled=True)
                del smat
            else:
                self.bin_mapper.fit(mat, info.is_categorical, info.n_categories, weight=self.weight)
        self.max_bin = self.bin_mapper.max_bin
        # a validation set's values near 0.0 that share a bin with LightGBM's edges there
        # (train/booster.py routes them by those edges, where a model has them)
        side = _ZeroSide(self.bin_mapper) if reference is not None else None
        if is_sparse:
            self.sparse_bins = bin_sparse(self.bin_mapper, mat)
            if side is not None:
                side.add_csr(mat)
        elif not chunked:
            self.bins_row, self.bins_col = self.bin_mapper.transform(mat)
            if side is not None:
                side.add_dense(mat, 0)
        else:
            bm = self.bin_mapper
            self.bins_row = np.empty((self.n_rows, self.n_features), dtype=bm.dtype)
            self.bins_col = np.empty((self.n_features, self.n_rows), dtype=bm.dtype)
            for a in range(0, self.n_rows, CHUNK_ROWS):
                b = min(self.n_rows, a + CHUNK_ROWS)
                if a > 0:
                    mat, _ = to_float_matrix(_rows(X, slice(a, b)), info=info,
                                             what=f"{what} (rows {a}..{b - 1})")
                cols = np.empty((self.n_features, b - a), dtype=bm.dtype)
                bm.transform_into(mat, self.bins_row[a:b], cols)
                self.bins_col[:, a:b] = cols
                if side is not None:
                    side.add_dense(mat, a)
            del mat
        self.zero_side = None if side is None else side.entries()
        _release_freed_memory()
        self.reference = reference

    @property
    def feature_names(self):
        return list(self.info.names)

    @property
    def num_data(self) -> int:
        return self.n_rows

    @property
    def num_feature(self) -> int:
        return self.n_features

    def get_label(self):
        return self.label

    def get_weight(self):
        return self.weight

    def get_base_margin(self):
        """The rows' starting margins, (n_rows, n_outputs), or None."""
        return self.base_margin

    def get_init_score(self):
        """LightGBM's: the starting margins flat, output by output ((n_rows,) for one), or
        None."""
        m = self.base_margin
        return None if m is None else np.ascontiguousarray(m.T).ravel()

    def get_group(self):
        """The query sizes (LightGBM's ``Dataset.get_group``), or None without queries.
        ``group`` itself holds the query boundaries: query ``q`` is rows
        ``group[q]:group[q + 1]``."""
        return None if self.group is None else np.diff(self.group)

    def __repr__(self):
        n_cat = int(self.info.is_categorical.sum())
        return (f"<hardwood.Dataset {self.n_rows} rows x {self.n_features} features"
                f" ({n_cat} categorical), max_bin={self.max_bin}>")
