"""Turn user feature matrices (numpy, pandas, scipy CSR, lists) into one float matrix.

Every model-facing path (training, validation, prediction) goes through
:func:`to_float_matrix`, so that categorical columns are coded the same way everywhere:
a categorical value becomes the index of its category in the training set's category list,
and NaN marks a missing value *or a category that training never saw* (both follow the
split's default direction). Models imported from XGBoost send an unseen category left at
every split, as XGBoost does: their ``FeatureInfo.unseen_left`` gives such a feature one more
code, ``len(categories)``, which every split on it sends left.

The input rules (``docs/checks.md``, "What hardwood checks"):

* ±inf: training data refuses it (use NaN for missing values); data to predict on takes it in
  numeric features as an ordinary value beyond every threshold (``+inf`` goes right of every
  finite threshold, ``-inf`` left), as every compiled runtime does; in a categorical feature it
  is an error.
* Column names: a frame to predict on must have the training columns in the training order.
  A model trained without names (``f0``, ``f1``, ... by default) reads a frame's columns by
  position, with a warning (none for pandas' default columns 0, 1, ...), unless a column
  carries one of those default names, or a position number, at another position, which is an
  error (it would be read as another feature).
* Categories: values are matched to the training categories by value. A column whose values
  are of another kind (strings against numbers) is an error; a column whose values are mostly
  unseen gets a warning (unseen values are treated as missing).
"""
from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, field

import numpy as np

try:  # scipy is a hard dependency, but keep the import local to the check
    import scipy.sparse as _sp
except ImportError:  # pragma: no cover
    _sp = None


@dataclass
class FeatureInfo:
    """What the training matrix looked like: names, which fields are categorical, and the
    category values of each categorical field (in code order)."""

    names: list
    is_categorical: np.ndarray  # bool per field
    categories: list = field(default_factory=list)  # per field: None or a list of values
    # bool per field, or None (all False): a category training never saw gets its own code,
    # len(categories[j]), which every split sends left (XGBoost's rule), instead of NaN
    unseen_left: np.ndarray | None = None
    # whether the entries a scipy sparse matrix leaves out are missing values (XGBoost's rule,
    # for its imported models) rather than zeros (hardwood's, LightGBM's and scikit-learn's)
    sparse_missing: bool = False
    # whether a numeric array's categorical columns hold the category codes (positions in
    # ``categories``), as XGBoost and LightGBM read them for a model trained on pandas
    # categories, rather than the category values (a frame's are matched by value either way)
    array_codes: bool = False

    @property
    def n_features(self) -> int:
        return len(self.names)

    @property
    def n_categories(self) -> np.ndarray:
        """Codes per field: its categories, and the unseen-category code where it has one."""
        n = np.array([0 if c is None else len(c) for c in self.categories], dtype=np.int32)
        if self.unseen_left is not None:
            n += np.asarray(self.unseen_left, dtype=bool) & np.asarray(self.is_categorical, bool)
        return n

    def unseen_code(self, j) -> float:
        """The code of a category feature ``j`` never saw: NaN (missing), or its own code."""
        if self.unseen_left is not None and self.unseen_left[j]:
            return float(len(self.categories[j]))
        return np.nan


def _is_pandas_df(X) -> bool:
    mod = type(X).__module__
    return mod.startswith("pandas") and type(X).__name__ == "DataFrame"


def as_pandas_if_named_table(X):
    """A pyarrow ``Table``/``RecordBatch`` or a polars ``DataFrame`` as a pandas DataFrame
    (dictionary columns become ``category`` columns); anything else as it is. Read through
    ``np.asarray`` they lost their column names: a model took them by position, so a table
    of the training columns in another order predicted silently from the wrong features.
    A numpy masked array comes back as a plain array with NaN in its masked cells
    (:func:`masked_as_nan`), since every path starts here."""
    if isinstance(X, np.ma.MaskedArray):
        return masked_as_nan(X)
    t = type(X)
    mod, name = t.__module__, t.__name__
    if mod.startswith("pyarrow") and name in ("Table", "RecordBatch"):
        return _arrow_as_pandas(X)
    if mod.startswith("polars") and name == "DataFrame":
        return X.to_pandas()
    if _is_pandas_df(X):
        return _arrow_dictionaries_as_categories(X)
    return X


def _arrow_as_pandas(table):
    """An Arrow table as a pandas frame whose columns hardwood reads as pandas' own would be:
    booleans with nulls as pandas' nullable ``boolean`` (``to_pandas`` made them object
    columns, refused with advice about categories) and decimals as float64 (refused too),
    as XGBoost and LightGBM read that table."""
    import pandas as pd
    import pyarrow as pa

    cols = {i: table.column(i).cast(pa.float64())
            for i, column_type in enumerate(table.schema.types)
            if pa.types.is_decimal(column_type)}
    for i, col in cols.items():
        table = table.set_column(i, table.schema.field(i).name, col)
    return table.to_pandas(types_mapper={pa.bool_(): pd.BooleanDtype()}.get)


def _arrow_dictionaries_as_categories(df):
    """A frame whose pyarrow dictionary columns (``pd.ArrowDtype(pa.dictionary(...))``) are
    ``category`` columns, as an Arrow table's become: they were refused as "not numeric"
    (pandas' own ``astype('category')`` fails on them when they hold nulls)."""
    import pandas as pd

    cols = [c for c, dt in zip(df.columns, df.dtypes)
            if isinstance(dt, pd.ArrowDtype) and dt.pyarrow_dtype.__class__.__name__ ==
            "DictionaryType"]
    if not cols:
        return df
    import pyarrow as pa

    df = df.copy(deep=False)
    for c in cols:
        cat = pa.chunked_array(df[c].array.__arrow_array__()).to_pandas()
        df[c] = pd.Series(cat.array, index=df.index)
    return df


def _resolve_categorical(categorical_features, names, n_features):
    mask = np.zeros(n_features, dtype=bool)
    if categorical_features is None or (isinstance(categorical_features, str)
                                        and categorical_features == "from_dtype"
                                        and "from_dtype" not in names):
        return mask  # scikit-learn's spelling of what hardwood does: category columns
    if isinstance(categorical_features, (str, numbers.Integral)):
        categorical_features = [categorical_features]
    cf = list(categorical_features)
    if cf and all(isinstance(v, (bool, np.bool_)) for v in cf):
        if len(cf) != n_features:  # (it was called a mix of booleans and indices)
            raise ValueError(f"categorical_features is a boolean mask of length {len(cf)}, but "
                             f"X has {n_features} features")
        return np.asarray(cf, dtype=bool)
    for v in cf:
        if isinstance(v, (bool, np.bool_)):
            raise TypeError("categorical_features mixes booleans and indices; pass a boolean "
                            f"mask of length {n_features} or a list of indices/names")
        if isinstance(v, numbers.Integral):
            if not -n_features <= v < n_features:
                raise ValueError(f"categorical_features index {v} is out of range for "
                                 f"{n_features} features")
            mask[int(v)] = True
        elif isinstance(v, str):
            if v not in names:
                raise ValueError(f"categorical_features names unknown column {v!r}")
            mask[names.index(v)] = True
        else:
            raise TypeError(f"categorical_features entries must be int or str, got {type(v).__name__}")
    return mask


def _numeric_category_table(cats):
    """(sorted float values, their codes) of the numeric entries of a category list."""
    if isinstance(cats, np.ndarray) and cats.dtype.kind in "iuf":
        vals = cats.astype(np.float64).reshape(-1)
        keep = ~np.isnan(vals)
        codes = np.flatnonzero(keep).astype(np.float64)
        vals = vals[keep]
        order = np.argsort(vals, kind="stable")
        return vals[order], codes[order]
    vals, codes = [], []
    for i, v in enumerate(cats if cats is not None else ()):
        if isinstance(v, (numbers.Integral, numbers.Real, np.bool_)):  # bool counts as 0/1
            fv = float(v)
            if fv == fv:
                vals.append(fv)
                codes.append(i)
    vals = np.asarray(vals, dtype=np.float64)
    codes = np.asarray(codes, dtype=np.float64)
    order = np.argsort(vals, kind="stable")
    return vals[order], codes[order]


def _codes_as_given(col: np.ndarray, n_categories, colname) -> np.ndarray:
    """Category codes given as numbers (an imported model trained on pandas categories, read
    as its library reads an array): integers in [0, n_categories) stay, others are unseen
    (NaN); a fractional code is an error."""
    col = np.asarray(col, dtype=np.float64)
    ok = ~np.isnan(col)
    v = col[ok]
    frac = v != np.floor(v)
    if frac.any():
        raise ValueError(f"categorical feature {colname!r} holds the fractional value "
                         f"{float(v[frac][0])!r}; an array gives this model's categories as "
                         "integer codes (positions in its categories), or NaN for missing")
    out = np.full(col.shape[0], np.nan, dtype=np.float64)
    out[ok] = np.where((v >= 0) & (v < n_categories), v, np.nan)
    return out


def _code_values(col: np.ndarray, cats, colname) -> np.ndarray:
    """Map raw categorical values (floats) to codes into ``cats`` *by value* (``cats`` may be
    in any order and may mix numbers and strings; only its numbers can match); unseen or
    NaN -> NaN."""
    col = np.asarray(col, dtype=np.float64)
    out = np.full(col.shape[0], np.nan, dtype=np.float64)
    ok = ~np.isnan(col)
    vals, codes = _numeric_category_table(cats)
    if vals.size == 0:
        if cats is not None and len(cats) and ok.any():
            raise TypeError(f"categorical feature {colname!r} has non-numeric categories "
                            f"(e.g. {cats[0]!r}) but numbers were given; pass it as a pandas "
                            "'category' (or string) column")
        return out
    v = col[ok]
    frac = v != np.floor(v)
    if frac.any() and np.all(vals == np.floor(vals)):
        raise ValueError(f"categorical feature {colname!r} holds the fractional value "
                         f"{float(v[frac][0])!r}, but its categories are integer codes; XGBoost and "
                         "LightGBM would truncate it to a code, hardwood matches categories by "
                         "value: pass integer codes (or NaN for missing)")
    pos = np.minimum(np.searchsorted(vals, v), vals.size - 1)
    hit = vals[pos] == v
    out[ok] = np.where(hit, codes[pos], np.nan)
    return out


def _check_categorical_numeric(col, colname):
    v = col[~np.isnan(col)]
    if v.size and (np.any(v < 0) or np.any(v != np.floor(v))):
        raise ValueError(f"categorical feature {colname!r} must hold non-negative integer "
                         "codes (or NaN for missing) when given as a numeric array")
    if v.size and np.any(v > 2**31 - 1):
        raise ValueError(f"categorical feature {colname!r} has codes too large for int32")


#: features of a training matrix (and of an imported model): each feature costs a bin mapper,
#: a name and histogram slots, so a column count in the hundreds of millions (a LibSVM file's
#: largest feature id, say) would exhaust the memory before training began
MAX_FEATURES = 1 << 22


def check_feature_count(n_features, what):
    if n_features > MAX_FEATURES:
        raise ValueError(f"{what} has {n_features} features (columns); hardwood trains on at "
                         f"most {MAX_FEATURES} (2**22). Renumber sparse feature ids densely, "
                         "or hash them into fewer columns")


def _default_names(n_features):
    return [f"f{i}" for i in range(n_features)]


def unnamed(names) -> bool:
    """Whether ``names`` are those of a matrix without column names: hardwood's and
    XGBoost's f0, f1, ..., or LightGBM's Column_0, Column_1, ..."""
    names = list(names)
    return names in (_default_names(len(names)), [f"Column_{j}" for j in range(len(names))])


def _training_names(feature_names, n_features):
    """The training matrix's feature names: the given ones (as strings), else f0, f1, ..."""
    check_feature_count(n_features, "X")
    names = list(feature_names) if feature_names is not None else _default_names(n_features)
    if len(names) != n_features:
        raise ValueError(f"feature_names has {len(names)} names for {n_features} features")
    names = [str(n) for n in names]
    if len(set(names)) != len(names):
        raise ValueError("feature_names holds duplicate names")
    return names


def _reject_strings_in_object_array(arr, what):
    """Numpy object arrays may hold numbers and None (missing), never strings."""
    if arr.size == 0:  # (no values; a (0, n) array cannot be reshaped to (0, -1))
        return
    flat = arr.reshape(arr.shape[0], -1) if arr.ndim >= 2 else arr.reshape(-1, 1)
    for j in range(flat.shape[1]):
        for v in flat[:, j]:
            if isinstance(v, (str, bytes, np.str_, np.bytes_)):
                col = f", column {j}" if arr.ndim >= 2 else ""
                raise TypeError(f"{what} has non-numeric (object) values such as {v!r}{col}; "
                                "encode strings as pandas 'category' columns or numbers")


def needs_float64(values, dtype=None) -> bool:
    """Whether numeric ``values`` (an array, or a sparse matrix's stored values) lose
    precision in float32: floats wider than 4 bytes, of either byte order (a big-endian
    ``'>f8'`` array is not ``np.float64`` and was read as float32: 2.4 off the model's own
    predictions), and integers beyond ±2**24 (codes 16777217 and 16777216 became one
    category; timestamps ~1.6e9 moved across thresholds, 2.2 off), in numpy arrays, frame
    columns and sparse matrices alike. ``dtype``: the values' own type where ``values`` are a
    float64 copy of them, NaN for missing (a frame column's ``to_numpy``)."""
    dtype = values.dtype if dtype is None else dtype
    kind, size = getattr(dtype, "kind", "f"), getattr(dtype, "itemsize", 8)
    if kind == "f":
        return size > 4
    if kind in "iu" and size > 2 and values.size:
        if values.dtype.kind == "f":
            values = values[~np.isnan(values)]
            if not values.size:
                return False
        return bool(values.max() > 2**24 or values.min() < -2**24)
    return False


def to_float_matrix(X, *, categorical_features=None, info: FeatureInfo | None = None,
                    feature_names=None, dtype=np.float32, what="X", allow_inf=False,
                    allow_no_rows=False):
    """Return ``(matrix, info)``.

    With ``info=None`` the categories are learnt from ``X`` (training); otherwise ``X`` is
    checked against ``info`` (same columns) and coded with its categories, *by value*:
    a category training never saw becomes NaN (missing).
    The matrix is C-contiguous, float32 (float64 when the input holds float64 values or
    categorical codes), NaN for missing. ``±inf`` raises, unless ``allow_inf`` (data to predict
    on), where it stays in numeric features and raises only in categorical ones.
    ``allow_no_rows`` (data to predict on, ``info`` given) takes a matrix of 0 rows and the
    model's columns, as XGBoost and LightGBM do: a batch job's empty last chunk.
    """
    if allow_no_rows and info is None:
        raise ValueError("allow_no_rows needs info: training data must have rows")
    if X is None:
        raise TypeError(f"{what} must be a matrix, got None")
    if type(X).__name__ == "Dataset" and type(X).__module__.startswith("hardwood."):
        # (it was read as an object array: "X has non-numeric (object) values")
        raise TypeError(f"{what} must be the rows' feature values (a numpy array, DataFrame, "
                        "sparse matrix...), not a hardwood.Dataset: it holds their bins; "
                        "pass the matrix it was built from")
    X = as_pandas_if_named_table(X)
    if _is_pandas_df(X):
        if info is None and feature_names is not None:
            # a frame's features are named by its columns; other names were ignored silently
            # (XGBoost and LightGBM take them), and a later frame of those names was refused
            given = [str(n) for n in feature_names]
            cols = [str(c) for c in X.columns]
            if given != cols:
                raise ValueError(f"feature_names {given[:10]} differ from {what}'s column names "
                                 f"{cols[:10]}: a DataFrame's features are named by its columns; "
                                 "rename the columns (X.columns = names) instead")
        mat, names, is_cat, cats = _from_pandas(X, categorical_features, info, dtype, what,
                                                allow_no_rows)
    else:
        if _sp is not None and _sp.issparse(X):
            X = checked_csr(X, what, allow_no_rows)
            keep64 = dtype == np.float64 or needs_float64(X.data)
            if info is not None and info.sparse_missing:  # absent: NaN; stored zeros stay 0
                if not X.has_canonical_format:
                    X = X.copy()
                    X.sum_duplicates()
                mat = np.full(X.shape, np.nan, dtype=np.float64 if keep64 else np.float32)
                rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
                mat[rows, X.indices] = X.data
            else:
                mat = X.toarray().astype(np.float64 if keep64 else np.float32, copy=False)
        else:
            if isinstance(X, (str, bytes)):
                raise TypeError(f"{what} must be a matrix, got {type(X).__name__}")
            arr = np.asarray(X)  # (a masked array was unmasked by as_pandas_if_named_table)
            if arr.dtype == object:
                _reject_strings_in_object_array(arr, what)
                try:
                    arr = arr.astype(np.float64)
                except (TypeError, ValueError):
                    raise TypeError(f"{what} has non-numeric (object) values; encode strings as "
                                    "pandas 'category' columns or numbers") from None
            if arr.dtype.kind in "USa":
                raise TypeError(f"{what} holds strings (dtype {arr.dtype}); encode them as pandas "
                                "'category' columns or numbers")
            if arr.dtype.kind not in "biuf":
                raise TypeError(f"{what} must be numeric, got dtype {arr.dtype}")
            if arr.ndim == 1:
                raise ValueError(f"{what} must be 2-dimensional (n_samples, n_features), got a "
                                 f"1-d array of shape {arr.shape}; use X.reshape(1, -1) for one sample, or "
                                 "X.reshape(-1, 1) for one feature")
            if arr.ndim != 2:
                raise ValueError(f"{what} must be 2-dimensional, got shape {arr.shape}")
            mat = arr
        if (mat.shape[0] == 0 and not allow_no_rows) or mat.shape[1] == 0:
            raise ValueError(f"{what} is empty: shape {mat.shape}")
        n_features = mat.shape[1]
        if info is None:
            names = _training_names(feature_names, n_features)
            is_cat = _resolve_categorical(categorical_features, names, n_features)
        else:
            if n_features != info.n_features:
                raise ValueError(f"{what} has {n_features} features, but the model/training data "
                                 f"has {info.n_features}")
            names = info.names
            is_cat = info.is_categorical
        work_dtype = np.float64 if (dtype == np.float64 or needs_float64(mat)) else np.float32
        mat = np.ascontiguousarray(mat, dtype=work_dtype)
        cats = [None] * n_features
        if is_cat.any():
            mat = mat.astype(np.float64) if mat.dtype != np.float64 else mat.copy()
            for j in np.flatnonzero(is_cat):
                col = mat[:, j]
                if np.isinf(col).any():
                    break  # reported by _check_finite below, with its position
                if info is None:
                    _check_categorical_numeric(col, names[j])
                    c = np.unique(col[~np.isnan(col)])
                    cats[j] = [int(v) for v in c]  # plain ints: JSON-able, sorted
                else:
                    c = info.categories[j]
                    cats[j] = c
                coded = (_codes_as_given(col, len(c), names[j])
                         if info is not None and info.array_codes else
                         _code_values(col, c, names[j]))
                if info is not None:
                    coded = _code_unseen(col, coded, info, j, what)
                mat[:, j] = coded
    if info is not None:
        cats = info.categories
    _check_finite(mat, what, is_cat if allow_inf else None)
    if info is None:
        info = FeatureInfo(names=list(map(str, names)), is_categorical=np.asarray(is_cat, bool),
                           categories=cats)
    return mat, info


def masked_as_nan(X):
    """A numpy masked array's masked cells are missing values: ``np.asarray`` (and
    scikit-learn's ``check_array``) read the values under the mask, 9.5 off the predictions
    with NaN there."""
    if X.dtype.kind not in "biuf" or not np.ma.is_masked(X):
        return np.asarray(X)
    return np.ma.filled(X.astype(np.float64), np.nan)


def check_sparse_structure(X, what="X"):
    """Refuse a scipy sparse matrix whose index arrays point outside it, before anything
    converts it: scipy's conversions (CSC or COO to CSR, ``toarray``, scikit-learn's
    ``check_array``) index by them without bounds checks, and a CSC row index past the rows,
    a negative one or an ``indptr`` past the entries crashed the interpreter or wrote into
    memory that was not the matrix's. CSR, CSC and BSR get scipy's full check in their own
    format, COO a range check of its coordinates; other formats hold no raw indices."""
    if not _sp.issparse(X):
        return
    if len(X.shape) != 2:  # (a 1-d sparse array: a bare IndexError further on)
        raise ValueError(f"{what} is a {len(X.shape)}-d sparse array; a matrix of rows x "
                         "features is needed (one row: reshape it to (1, n_features))")
    try:
        if X.format in ("csr", "csc", "bsr"):
            X.check_format(full_check=True)
        elif X.format == "coo":
            n = X.data.shape[0]
            for axis, (idx, size) in enumerate(zip((X.row, X.col), X.shape)):
                if idx.shape[0] != n:
                    raise ValueError(f"{idx.shape[0]} {('row', 'column')[axis]} indices for "
                                     f"{n} values")
                if n and (int(idx.min()) < 0 or int(idx.max()) >= size):
                    raise ValueError(f"a {('row', 'column')[axis]} index outside 0..{size - 1}")
    except ValueError as e:
        raise ValueError(f"{what} is a malformed sparse matrix ({X.format}): {e}") from None


# a sparse matrix to predict is made dense this many cells (float32: 64 MB) at a time
SPARSE_BLOCK_CELLS = 1 << 24


def sparse_row_blocks(X):
    """``(csr, rows per block)`` where ``X`` is a scipy sparse matrix too large to make dense
    at once (``SPARSE_BLOCK_CELLS``), its structure checked; else None. Prediction takes
    such a matrix a block of rows at a time: the whole at once took 8.4 GB for
    5,000 x 200,000 with 0.8 MB stored."""
    if _sp is None or not _sp.issparse(X) or X.ndim != 2:
        return None
    block = max(1, SPARSE_BLOCK_CELLS // max(X.shape[1], 1))
    if X.shape[0] <= block:
        return None
    return checked_csr(X), block


def checked_csr(X, what="X", allow_no_rows=False):
    """A scipy sparse matrix as CSR, its structure checked (column indices within the shape,
    ``indptr`` rising from 0 to nnz: scipy's full check; our kernels and scipy's own
    conversions index by them without bounds checks), not empty, numeric."""
    check_sparse_structure(X, what)
    X = _sp.csr_matrix(X)
    try:
        X.check_format(full_check=True)
    except ValueError as e:
        raise ValueError(f"{what} is a malformed sparse matrix: {e}") from None
    if (X.shape[0] == 0 and not allow_no_rows) or X.shape[1] == 0:
        raise ValueError(f"{what} is empty: shape {X.shape}")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be numeric, got a sparse matrix of dtype {X.dtype}")
    return X


def to_csr(X, *, info: FeatureInfo | None = None, feature_names=None, what="X"):
    """``(csr, info)`` for the sparse path (``data/sparse.py``): a canonical CSR matrix
    (sorted indices, no duplicate entries; the caller's matrix is never changed) of float32
    values (float64 when ``X`` holds float64), checked as ``to_float_matrix`` checks its
    dense copy: numeric, not empty, no ±inf, the names and feature count of ``info``."""
    X = checked_csr(X, what)
    n_features = X.shape[1]
    if info is None:
        names = _training_names(feature_names, n_features)
        info = FeatureInfo(names=names, is_categorical=np.zeros(n_features, dtype=bool),
                           categories=[None] * n_features)
    elif n_features != info.n_features:
        raise ValueError(f"{what} has {n_features} features, but the model/training data "
                         f"has {info.n_features}")
    dtype = np.float64 if needs_float64(X.data) else np.float32
    if not X.has_canonical_format or X.data.dtype != dtype:
        X = X.astype(dtype, copy=True)  # a copy of our own: canonicalise it in place
        X.sum_duplicates()
    bad = np.isinf(X.data)
    if bad.any():
        e = int(np.flatnonzero(bad)[0])
        r = int(np.searchsorted(X.indptr, e, side="right") - 1)
        raise ValueError(f"{what} contains infinite values (first at row {r}, column "
                         f"{int(X.indices[e])}); use NaN for missing values")
    return X, info


def _check_finite(mat, what, only=None):
    """NaN is fine (missing); infinities are not, in every column or (``only``: a boolean
    mask) in the masked columns."""
    if mat.dtype.kind != "f":
        return
    if only is None:
        bad = np.isinf(mat)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise ValueError(f"{what} contains infinite values (first at row {r}, column {c}); "
                             "use NaN for missing values")
        return
    for j in np.flatnonzero(only):
        bad = np.isinf(mat[:, j])
        if bad.any():
            raise ValueError(f"{what} contains an infinite value in categorical column {j} "
                             f"(first at row {int(np.flatnonzero(bad)[0])}); categories are "
                             "codes or values, and NaN marks a missing one")


# a categorical column to predict on whose known (non-missing) values are mostly categories
# training never saw gets a warning: they are all treated as missing
UNSEEN_WARN_FRACTION = 0.5


def _code_unseen(raw, coded, info, j, what):
    """Give the categories training never saw (``raw`` known, ``coded`` NaN) the feature's
    unseen-category code, and warn when they are most of the column's known values."""
    known = ~np.isnan(raw)
    unseen = known & np.isnan(coded)
    n, n_unseen = int(known.sum()), int(np.count_nonzero(unseen))
    code = info.unseen_code(j)
    if n_unseen and code == code:
        coded[unseen] = code
    if n and n_unseen > UNSEEN_WARN_FRACTION * n:
        fate = ("sent left at every split, as XGBoost does" if code == code
                else "treated as missing values")
        warnings.warn(f"{what}: {n_unseen} of {n} values of categorical column "
                      f"{info.names[j]!r} are categories training never saw; they are {fate}",
                      UserWarning, stacklevel=4)
    return coded


def _category_kind(values):
    """'number', 'string' or None (empty or mixed) for a list of category values."""
    kinds = {"string" if isinstance(v, (str, bytes)) else
             "number" if isinstance(v, (numbers.Number, np.bool_)) else "other" for v in values}
    return kinds.pop() if len(kinds) == 1 else None


def _check_names(names, info, what):
    """A frame's column names against the training names (see the module docstring)."""
    if names == list(info.names):
        return
    if [n.replace(" ", "_") for n in names] == list(info.names):
        return  # LightGBM stores "sq ft" as "sq_ft" (and reads frames by position)
    # trained without names: hardwood's and XGBoost's f0.., LightGBM's Column_0..
    if not unnamed(info.names) or len(info.names) != len(names):
        missing = [n for n in info.names if n not in names]
        raise ValueError(f"{what} columns differ from the training columns"
                         + (f" (missing {missing[:5]})" if missing else " (different order)")
                         + f": expected {list(info.names)[:8]}, got {names[:8]}")
    # trained without names: read by position, unless a column bears a default name, or
    # pandas' default name (its position), that belongs to another position
    # (DataFrame(X, columns=['f0', 'f1'])[['f1', 'f0']], or DataFrame(X)[[1, 0]])
    positional = [str(j) for j in range(len(names))]
    if names == positional:
        return  # pandas' default columns, in order
    pos = {n: j for j, n in enumerate(info.names)}
    pos.update({n: j for j, n in enumerate(positional)})
    moved = [(n, j) for j, n in enumerate(names) if n in pos and pos[n] != j]
    if moved:
        n, j = moved[0]
        raise ValueError(f"{what} column {n!r} is at position {j}, but the model's feature {n!r} "
                         f"is at position {pos[n]} (the model was trained without column names, "
                         f"so its features are known by position: {info.names[0]}.."
                         f"{info.names[-1]}); put "
                         "the columns in the training order")
    warnings.warn(f"{what} has column names, but the model was trained without names: its "
                  f"{len(names)} columns are read by position", UserWarning, stacklevel=4)


def _is_stringish(dtype) -> bool:
    import pandas as pd
    return dtype == object or pd.api.types.is_string_dtype(dtype)


def _from_pandas(df, categorical_features, info, dtype, what, allow_no_rows=False):
    import pandas as pd

    if (df.shape[0] == 0 and not allow_no_rows) or df.shape[1] == 0:
        raise ValueError(f"{what} is empty: shape {df.shape}")
    names = [str(c) for c in df.columns]
    n_features = len(names)
    if len(set(names)) != n_features:
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"{what} has duplicate column names {dup[:5]}")
    if info is not None:
        if n_features != info.n_features:
            raise ValueError(f"{what} has {n_features} columns, but the model/training data has "
                             f"{info.n_features}")
        _check_names(names, info, what)
        is_cat = np.asarray(info.is_categorical, dtype=bool)
    else:
        is_cat = _resolve_categorical(categorical_features, names, n_features)
        for j, dt in enumerate(df.dtypes):
            if isinstance(dt, pd.CategoricalDtype):
                is_cat[j] = True
    need64 = dtype == np.float64
    # the numeric columns of plain numpy dtypes, read in (at most) two copies, one of those
    # float32 holds exactly and one of the others: a column at a time through df.iloc took
    # 0.07 ms each (a 1-row frame of 100 columns: 6.8 ms to read)
    dtypes = list(df.dtypes)
    plain = [j for j in range(n_features) if not is_cat[j] and isinstance(dtypes[j], np.dtype)
             and dtypes[j].kind in "fiub"]
    narrow = [j for j in plain if dtypes[j].itemsize <= (4 if dtypes[j].kind == "f" else 2)]
    cols, blocks = {}, []
    for group, kind in ((narrow, np.float32), (sorted(set(plain) - set(narrow)), np.float64)):
        if group:
            block = (df if len(group) == n_features else df.iloc[:, group]).to_numpy(
                dtype=kind)
            blocks.append(block)
            for k, j in enumerate(group):
                cols[j] = block[:, k]
                need64 = need64 or needs_float64(cols[j], dtypes[j])
    cats = [None] * n_features
    for j in range(n_features):
        if j in cols:
            continue
        s = df.iloc[:, j]
        if is_cat[j]:
            if _is_stringish(s.dtype) and not isinstance(s.dtype, pd.CategoricalDtype):
                bad = [v for v in s.dropna().unique()[:50]
                       if not isinstance(v, (str, bytes, numbers.Number))]
                if bad:
                    raise TypeError(f"categorical column {names[j]!r} holds values of type "
                                    f"{type(bad[0]).__name__}; use strings or numbers")
                s = s.astype("category")
            if isinstance(s.dtype, pd.CategoricalDtype):
                values = list(s.cat.categories)
                codes = s.cat.codes.to_numpy().astype(np.int64)
                if info is None:
                    cats[j] = [v.item() if isinstance(v, np.generic) else v for v in values]
                    col = np.where(codes < 0, np.nan, codes.astype(np.float64))
                else:
                    train_vals = info.categories[j] or []
                    kind, train_kind = _category_kind(values), _category_kind(train_vals)
                    if kind and train_kind and kind != train_kind:
                        raise TypeError(
                            f"categorical column {names[j]!r} holds {kind}s (e.g. "
                            f"{values[0]!r}), but the model's categories are {train_kind}s (e.g. "
                            f"{train_vals[0]!r}); no value would match. Convert the column to "
                            "the training type")
                    lookup = {}
                    for i, v in enumerate(train_vals):
                        lookup.setdefault(v, i)
                    remap = np.array([lookup.get(v, np.nan) for v in values] + [np.nan],
                                     dtype=np.float64)
                    col = remap[np.where(codes < 0, len(values), codes)]
                    col = _code_unseen(np.where(codes < 0, np.nan, 0.0), col, info, j, what)
            else:
                try:
                    raw = s.to_numpy(dtype=np.float64, na_value=np.nan)
                except (TypeError, ValueError):
                    raise TypeError(f"categorical column {names[j]!r} has dtype {s.dtype}; use "
                                    "integer codes, strings or a 'category' column") from None
                if np.isinf(raw).any():
                    r = int(np.flatnonzero(np.isinf(raw))[0])
                    raise ValueError(f"{what} contains infinite values (first at row {r}, "
                                     f"column {j}); use NaN for missing values")
                if info is None:
                    _check_categorical_numeric(raw, names[j])
                    u = np.unique(raw[~np.isnan(raw)])
                    cats[j] = [int(v) for v in u]
                    col = _code_values(raw, cats[j], names[j])
                else:
                    col = _code_values(raw, info.categories[j], names[j])
                    col = _code_unseen(raw, col, info, j, what)
            n_cat_j = len((info.categories[j] if info is not None else cats[j]) or ()) + 1
            need64 = need64 or n_cat_j > 2**24
        else:
            if isinstance(s.dtype, pd.CategoricalDtype):
                raise TypeError(f"column {names[j]!r} is categorical here but was numeric in training")
            if _is_stringish(s.dtype):
                vals = s.dropna().iloc[:50]
                if len(vals) and all(isinstance(v, numbers.Number) and not isinstance(v, bool)
                                     for v in vals):
                    raise TypeError(f"column {names[j]!r} holds numbers in a column of dtype "
                                    f"{s.dtype}; convert it with .astype(float) (or "
                                    ".astype('category') for a categorical feature)")
                raise TypeError(f"column {names[j]!r} has dtype {s.dtype}, which is not numeric; "
                                "convert it with .astype('category') to use it as a categorical feature")
            if isinstance(s.dtype, pd.SparseDtype):  # pandas sparse: its values, densified
                s = s.sparse.to_dense()
            if getattr(s.dtype, "kind", "") == "c":  # numpy's cast drops the imaginary part
                raise TypeError(f"column {names[j]!r} has dtype {s.dtype}: complex numbers are "
                                "not features; split them into real columns")
            if s.dtype.kind in "mM":
                # XGBoost and LightGBM refuse them too; read as numbers they would be
                # nanoseconds since 1970, far beyond every threshold learnt on other numbers
                raise TypeError(f"column {names[j]!r} has dtype {s.dtype}, which is not numeric; "
                                "convert dates and durations to numbers yourself")
            try:
                col = s.to_numpy(dtype=np.float64, na_value=np.nan)
            except (TypeError, ValueError):
                raise TypeError(f"column {names[j]!r} has dtype {s.dtype}, which is not numeric") from None
            need64 = need64 or needs_float64(col, s.dtype)  # (nullable, Arrow dtypes: kinds)
        cols[j] = col
    out_dtype = np.float64 if need64 else np.float32
    if len(blocks) == 1 and len(plain) == n_features and blocks[0].dtype == out_dtype:
        # (a copy: to_numpy may return a view of the frame's own values)
        mat = np.array(blocks[0], order="C")
        return mat, names, is_cat, info.categories if info is not None else cats
    mat = np.empty((df.shape[0], n_features), dtype=out_dtype)
    for j in range(n_features):
        mat[:, j] = cols[j]
    if info is not None:
        cats = info.categories
    return mat, names, is_cat, cats


def reject_masked(v, what):
    """Labels and weights have no missing values, so a masked array of them is refused:
    ``np.asarray`` (and scikit-learn's checks) would use the values under its mask."""
    if isinstance(v, np.ma.MaskedArray) and np.ma.is_masked(v):
        raise ValueError(f"{what} is a masked array with {int(np.ma.count_masked(v))} masked "
                         f"entries; {what} has no missing values: drop those rows, or fill them")


def to_vector(y, n_rows, what, *, allow_none=True):
    """Labels or weights as a 1-d float64 array of length ``n_rows``."""
    if y is None:
        if allow_none:
            return None
        raise ValueError(f"{what} is required")
    if hasattr(y, "to_numpy") and not (_sp is not None and _sp.issparse(y)):
        try:  # pandas: nullable dtypes -> NaN (reported below as missing)
            y = y.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            y = y.to_numpy()
    if _sp is not None and _sp.issparse(y):
        y = y.toarray()
    if isinstance(y, (str, bytes)):
        raise TypeError(f"{what} must be numeric, got {type(y).__name__}")
    reject_masked(y, what)
    arr = np.asarray(y)
    if arr.dtype == object:
        _reject_strings_in_object_array(arr, what)
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{what} must be numeric") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be numeric, got dtype {arr.dtype}")
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{what} must be 1-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n_rows:
        raise ValueError(f"{what} has {arr.shape[0]} entries but X has {n_rows} rows")
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        kind = "NaN" if np.isnan(arr[i]) else "infinite"
        raise ValueError(f"{what} contains NaN or infinite values ({int(bad.sum())} of them; "
                         f"the first, at index {i}, is {kind})")
    return arr
