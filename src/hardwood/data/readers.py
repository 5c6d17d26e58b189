"""Read training and prediction data from files: CSV/TSV (pandas), Parquet (pyarrow) and
LibSVM (scikit-learn's parser, returned as a scipy CSR matrix).

One entry point, :func:`read_table`, returns ``(X, y, feature_names)``:

- CSV/TSV/TXT and Parquet give a pandas DataFrame whose string columns are ``category``
  columns (``hardwood.Dataset`` treats those as categorical features); the label column,
  chosen by name or by index, is taken out of it.
- A CSV column's type follows one rule (see :func:`read_csv`): it is numeric when every
  cell that is not missing parses as a number, categorical when no cell does, and a column
  that mixes numbers and text is an error (:class:`ColumnTypeError`) naming the first odd
  cells, unless it is declared categorical. So a numeric column with a typo never turns
  silently into categories. Columns declared numeric (a model's numeric features, when
  predicting) must parse in every cell.
- LibSVM (``label idx:val ...``) gives a scipy CSR matrix; the label is always the first
  field of a line. Feature ids become the columns, and the names ``f<id>`` keep the file's
  ids (``f1, f2, ...`` for a 1-based file, ``f0, f1, ...`` for a 0-based one).

Ranking data (query groups) comes from :func:`read_table_with_queries`, which returns
``(X, y, feature_names, queries)``; ``read_table`` stays ``(X, y, feature_names)`` and never
looks at queries. ``queries`` is a :class:`Queries` (``group`` sizes or per-row ``qid``s;
``Dataset(X, y, **queries.dataset_kwargs())``), or None when the file has none. They come
from, first to last:

- ``group_file``: a LightGBM-style query file, one integer a line, the size of each run of
  consecutive rows (:func:`read_group_file`); sizes that do not add up to the rows are an
  error naming the file;
- ``qid_column`` (CSV/Parquet): that column is taken out of the features as the query ids;
- a LibSVM file's own ``qid:N`` tokens (:func:`libsvm_qids`); a file with ``qid:`` on some
  data lines and not on others is an error naming the file and the first odd line;
- ``<data file>.query`` beside the data file (``rank.train`` + ``rank.train.query``), found by
  :func:`query_file_beside`. When a LibSVM file has its own qids too, the two must agree.

Errors are ``FileNotFoundError`` (no such file) or ``ValueError`` naming the path and the
problem; a missing optional reader (pandas, pyarrow) raises ``ImportError`` saying what to
install.
"""
from __future__ import annotations

import csv
import numbers
import os
import re
import warnings
from typing import NamedTuple

import numpy as np

from .convert import MAX_FEATURES

FORMATS = ("csv", "parquet", "libsvm")
_EXTENSIONS = {
    ".csv": "csv", ".tsv": "csv", ".txt": "csv",
    ".parquet": "parquet", ".pq": "parquet",
    ".svm": "libsvm", ".libsvm": "libsvm", ".svmlight": "libsvm",
}
_FMT_ALIASES = {"csv": "csv", "tsv": "csv", "txt": "csv", "text": "csv",
                "parquet": "parquet", "pq": "parquet",
                "libsvm": "libsvm", "svm": "libsvm", "svmlight": "libsvm"}
_COMPRESSION = (".gz", ".bz2", ".xz", ".zst", ".zip")
_SNIFF_DELIMITERS = ",\t;| "


# -- format and file checks ----------------------------------------------------------------
def split_ext(path: str):
    """Lower-case data extension of ``path`` (compression suffix removed) and that suffix."""
    base = os.path.basename(path).lower()
    comp = ""
    for c in _COMPRESSION:
        if base.endswith(c):
            comp, base = c, base[: -len(c)]
            break
    return os.path.splitext(base)[1], comp


def detect_format(path, fmt=None) -> str:
    """``'csv'``, ``'parquet'`` or ``'libsvm'``: from ``fmt`` when given, else from the
    file's extension."""
    path = os.fspath(path)
    if fmt is not None:
        if not isinstance(fmt, str) or fmt.lower() not in _FMT_ALIASES:
            raise ValueError(f"unknown data format {fmt!r} for {path!r}; expected one of "
                             f"{sorted(set(_FMT_ALIASES))}")
        return _FMT_ALIASES[fmt.lower()]
    ext, _ = split_ext(path)
    if ext not in _EXTENSIONS:
        known = ", ".join(sorted(_EXTENSIONS))
        raise ValueError(f"cannot tell the format of {path!r} from its extension "
                         f"{ext or '(none)'!r}; use one of {known}, or give the format "
                         "explicitly (csv, parquet or libsvm)")
    return _EXTENSIONS[ext]


def check_file(path: str):
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such data file: {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"{path!r} is a directory, not a data file")
    if os.path.getsize(path) == 0:
        raise ValueError(f"data file {path!r} is empty")


def need(module: str, what: str, extra: str):
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(f"reading {what} files needs {module}; install it with "
                          f"`pip install {module}` (or `pip install hardwood[{extra}]`)") from None


# -- column types (CSV and Parquet) ------------------------------------------------------
# pandas' default missing-value tokens (``na_values``): such a cell is a missing value, not text
_NA_TOKENS = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                        "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                        "nan", "null"})
_SHOW_CELLS = 3


class ColumnTypeError(ValueError):
    """A column whose cells do not fit one type: a numeric column (declared, or numeric in
    most cells) with text in some cells, or a text column with a few numbers.

    Attributes: ``path``, ``column``, ``cells`` (the first odd cells as ``(row, line,
    text)``: ``row`` counts data rows from 1, ``line`` is the file's line or None),
    ``n_odd`` (how many odd cells), ``n_numbers`` and ``n_text`` (cells of each kind) and
    ``declared`` (True when the column was declared numeric). :meth:`describe` words the
    error with another hint on how to declare the column categorical (the CLI's
    ``--categorical``)."""

    def __init__(self, path, column, cells, n_odd, n_numbers, n_text, declared):
        self.path, self.column, self.cells = path, column, list(cells)
        self.n_odd, self.n_numbers, self.n_text = n_odd, n_numbers, n_text
        self.declared = declared
        super().__init__(self.describe())

    def _cells_text(self):
        shown = ", ".join(f"row {row}" + (f" (line {line})" if line is not None else "")
                          + f" {text!r}" for row, line, text in self.cells)
        if self.n_odd > len(self.cells):
            shown += f", ... ({self.n_odd} in all)"
        return shown

    def describe(self, hint=None) -> str:
        """The message; ``hint`` says how to declare the column categorical (default:
        ``categorical=[<column>]``, read_table's option, except for a column declared
        numeric; ``''``: no such advice)."""
        col, path = self.column, self.path
        fix = "fix the cells (an empty cell is a missing value)"
        if self.declared:
            kind = "this cell is not a number" if self.n_odd == 1 else "these cells are not numbers"
            declare = f"declare the column categorical ({hint})" if hint else ""
            return (f"column {col!r} in {path!r} must be numeric, but {kind}: "
                    f"{self._cells_text()}; {fix}" + (f", or {declare}" if declare else ""))
        hint = f"categorical=[{col!r}]" if hint is None else hint
        declare = f"declare the column categorical ({hint}) to read every value as a category"
        if self.n_numbers >= self.n_text:
            return (f"column {col!r} in {path!r} holds numbers in {self.n_numbers} cells but "
                    f"text in {self.n_text}: {self._cells_text()}; {fix}"
                    + (f", or {declare}" if hint else ""))
        return (f"column {col!r} in {path!r} holds text in {self.n_text} cells but numbers "
                f"in {self.n_numbers}: {self._cells_text()}; "
                + (f"{declare}, or fix those cells" if hint else "fix those cells"))


def _parse_cells(s):
    """Parse the cells of a text column. Returns (values as float64 with NaN for missing or
    unparsable, mask of cells that are text, count of number cells, mask of cells that are
    missing-value tokens with spaces around them), or None when the column holds something
    other than strings, numbers and booleans (lists): left alone. Booleans are 1 and 0: a
    True/False column with one empty cell (object dtype in pandas) became categorical, and a
    model trained without the gap refused it."""
    import numbers as _n

    pd = need("pandas", "CSV/Parquet", "pandas")
    if isinstance(s.dtype, pd.CategoricalDtype):
        s = s.astype(object)
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    u = np.asarray(uniques, dtype=object)
    kinds = np.zeros(len(u), dtype=np.int8)  # 0 number, 1 missing token, 2 text
    strs = []
    for i, v in enumerate(u):
        if isinstance(v, str):
            if v.strip() in _NA_TOKENS:
                kinds[i] = 1
            else:
                strs.append(i)
        elif not isinstance(v, (_n.Real, np.bool_)):  # True/False: numbers 1/0, as pandas
            return None                             # reads a column of them without gaps
    vals = np.full(len(u), np.nan)
    for i, v in enumerate(u):
        if not isinstance(v, str):
            vals[i] = float(v)
    if strs:
        idx = np.asarray(strs)
        parsed = pd.to_numeric(pd.Series(u[idx], dtype=object).str.strip(), errors="coerce")
        parsed = np.asarray(parsed, dtype=np.float64)
        vals[idx] = parsed
        kinds[idx[np.isnan(parsed)]] = 2
    have = codes >= 0
    row_kind = np.full(codes.shape[0], 1, dtype=np.int8)
    row_kind[have] = kinds[codes[have]]
    out = np.full(codes.shape[0], np.nan)
    num = row_kind == 0
    out[num] = vals[codes[num]]
    return out, row_kind == 2, int(num.sum()), have & (row_kind == 1)


def _type_columns(df, path, *, categorical=None, numeric=None, infer=True, locate=None):
    """Give the text columns of ``df`` their type by the rule of :func:`read_csv`; raises
    ColumnTypeError for a column that mixes numbers and text. ``locate(rows)`` maps 0-based
    data rows to file lines (or None)."""
    pd = need("pandas", "CSV/Parquet", "pandas")
    declared_cat = {str(c) for c in (categorical or ())}
    declared_num = {str(c) for c in (numeric or ())}
    for c in list(df.columns):
        if c in declared_cat:
            continue
        s = df[c]
        if not (s.dtype == object or pd.api.types.is_string_dtype(s.dtype)
                or isinstance(s.dtype, pd.CategoricalDtype)):
            continue  # numbers (or booleans) already
        is_declared = c in declared_num
        if not is_declared and (not infer or isinstance(s.dtype, pd.CategoricalDtype)):
            continue
        parsed = _parse_cells(s)
        if parsed is None:
            continue
        values, text, n_numbers, tokens = parsed
        n_text = int(text.sum())
        if n_text == 0:
            df[c] = values  # every cell is a number or missing
            continue
        if n_numbers == 0 and not is_declared:  # a text column: categorical
            if tokens.any():  # ' NA ', ' ': missing values, as in a numeric column
                df[c] = s.astype(object).where(~tokens, None)
            _warn_if_numbers_in_text(s[text], c, path)
            continue
        odd = text if (is_declared or n_numbers >= n_text) else ~text & ~np.isnan(values)
        rows = np.flatnonzero(odd)[:_SHOW_CELLS]
        lines = locate([int(r) for r in rows]) if locate is not None else {}
        cells = [(int(r) + 1, lines.get(int(r)), str(s.iloc[int(r)])) for r in rows]
        raise ColumnTypeError(path, c, cells, int(odd.sum()), n_numbers, n_text, is_declared)
    return df


# numbers in a notation that does not parse: 1,5 (a decimal comma), 12%, $1 200, 0x1F
_NUMBER_LIKE = re.compile(r"\s*[+-]?[$€£¥]?\s*\d(?:[\d.,' ]*\d)?\s*%?\s*|\s*[+-]?0[xX][0-9a-fA-F]+\s*")


def _warn_if_numbers_in_text(cells, column, path):
    """A column of text cells becomes categorical, and each value unseen in training is then
    a missing value. Say so when the cells look like numbers in a notation that does not
    parse (decimal commas, percentages, currency, hexadecimal): pandas reads them as text
    too, without a word."""
    values = cells.astype(str)
    looks = values.map(lambda v: _NUMBER_LIKE.fullmatch(v) is not None)
    if len(values) and looks.mean() >= 0.9:
        shown = ", ".join(repr(v) for v in values[looks].unique()[:3])
        warnings.warn(f"column {column!r} in {path!r} is read as categorical, but its cells "
                      f"look like numbers ({shown}): convert them to numbers (a decimal comma, "
                      "'%', a currency sign or '0x' does not parse), or declare the column "
                      "categorical", UserWarning, stacklevel=4)


# -- label handling (CSV and Parquet) ----------------------------------------------------
def _label_position(columns: list, label, path: str) -> int:
    """Index of the label column: ``label`` is a column name, or an integer index
    (negative counts from the end). A string that names no column but reads as an integer
    is taken as an index (so ``--label 0`` works for files without a header)."""
    n = len(columns)
    if isinstance(label, bool) or not isinstance(label, (str, numbers.Integral)):
        raise TypeError(f"label must be a column name (str) or index (int), got {label!r}")
    if isinstance(label, str):
        if label in columns:
            return columns.index(label)
        if re.fullmatch(r"[+-]?\d+", label.strip()):
            label = int(label)
        else:
            shown = ", ".join(map(repr, columns[:10])) + (", ..." if n > 10 else "")
            raise ValueError(f"label column {label!r} is not in {path!r} (columns: {shown})"
                             + separator_hint(columns))
    idx = int(label)
    if not -n <= idx < n:
        raise ValueError(f"label column index {idx} is out of range for {path!r}, which has "
                         f"{n} columns")
    return idx % n


def finish_frame(df, label, path: str, *, categorical=None, numeric=None, infer=False,
                  locate=None, feature_names=None, first_row=0):
    """Take the label out, type the text columns (:func:`_type_columns`), string columns ->
    category. ``feature_names(n)``: names for the feature columns (a file without a header).
    ``first_row``: the file's data row of ``df``'s first row (a batch of a larger file), for
    the row numbers in errors. Returns (X, y, names)."""
    pd = need("pandas", "CSV/Parquet", "pandas")
    if df.shape[1] == 0:
        raise ValueError(f"data file {path!r} has no columns")
    if df.shape[0] == 0:
        raise ValueError(f"data file {path!r} has a header but no data rows")
    df.columns = [str(c) for c in df.columns]
    names = list(df.columns)
    check_distinct_names(path, names)
    y = None
    if label is not None:
        j = _label_position(names, label, path)
        col = df.iloc[:, j]
        name = names[j]
        if isinstance(col.dtype, pd.CategoricalDtype) or not (
                pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype)):
            parsed = _parse_cells(col)
            if parsed is None or parsed[1].any():
                where = ""
                if parsed is not None:
                    r = int(np.flatnonzero(parsed[1])[0])
                    where = f": {_row_and_line(r, first_row, locate)} holds {str(col.iloc[r])!r}"
                raise ValueError(f"label column {name!r} in {path!r} is not numeric (dtype "
                                 f"{col.dtype}){where}; encode the labels as numbers (0/1 for "
                                 "binary, 0..K-1 for multiclass)")
            y = parsed[0]
        else:
            y = col.to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isnan(y).any():
            r = int(np.flatnonzero(np.isnan(y))[0])
            raise ValueError(f"label column {name!r} in {path!r} has a missing value (first at "
                             f"data {_row_and_line(r, first_row, locate)})")
        df = df.drop(columns=name)
        if df.shape[1] == 0:
            raise ValueError(f"data file {path!r} has no feature columns besides the label "
                             f"{name!r}")
    if feature_names is not None:
        df.columns = feature_names(df.shape[1])
    df = _type_columns(df, path, categorical=categorical, numeric=numeric, infer=infer,
                       locate=locate)
    for c in df.columns:
        s = df[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            continue
        if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            try:
                df[c] = s.astype("category")
            except TypeError:  # unhashable or mixed objects
                raise ValueError(f"column {c!r} in {path!r} holds values that are neither "
                                 "numbers nor strings") from None
    return df, y, [str(c) for c in df.columns]


def _row_and_line(r, first_row, locate):
    """'row N (line L)' for row ``r`` of a frame whose first row is the file's data row
    ``first_row``: ``locate(rows)`` maps the frame's rows to the file's lines."""
    line = (locate([r]) if locate is not None else {}).get(r)
    return f"row {first_row + r + 1}" + (f" (line {line})" if line is not None else "")


# -- CSV -----------------------------------------------------------------------------
def _open_text(path: str, compression: str):
    """Open a (possibly gzip/bz2/xz-compressed) file as text, or None for other compressions;
    a UTF-8 byte-order mark is dropped (a LibSVM file's first label read as '\\ufeff1')."""
    if compression == ".gz":
        import gzip
        return gzip.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="")
    if compression == ".bz2":
        import bz2
        return bz2.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="")
    if compression == ".xz":
        import lzma
        return lzma.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="")
    if compression:
        return None
    return open(path, "r", encoding="utf-8-sig", errors="replace", newline="")


def sniff_delimiter(path: str, compression: str) -> str:
    fh = _open_text(path, compression)
    if fh is None:  # .zst/.zip: leave it to pandas' default
        return ","
    with fh:
        sample = fh.read(64 * 1024)
    lines = [ln for ln in sample.splitlines() if ln.strip()][:50]
    if len(sample) == 64 * 1024 and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut short
    if not lines:
        return ","
    try:
        d = csv.Sniffer().sniff("\n".join(lines), delimiters=_SNIFF_DELIMITERS).delimiter
        return r"\s+" if d == " " else d
    except csv.Error:
        pass
    # fall back: the candidate that splits every line into the same number (> 1) of fields
    for d in "\t,;|":
        counts = {ln.count(d) for ln in lines}
        if len(counts) == 1 and counts.pop() > 0:
            return d
    if all(len(ln.split()) == len(lines[0].split()) > 1 for ln in lines):
        return r"\s+"
    return ","


def line_locator(path: str, compression: str, sep: str, header: bool):
    """A function mapping 0-based data rows to the file's 1-based line numbers (for error
    messages), or None when the file cannot be reread as text. Blank lines are skipped as
    pandas skips them; a quoted field may span lines (the line is where the row starts)."""
    if compression not in ("", ".gz", ".bz2", ".xz"):
        return None

    def locate(rows):
        want = set(rows)
        found = {}
        if not want:
            return found
        try:
            fh = _open_text(path, compression)
            with fh:
                if len(sep) == 1:
                    reader = csv.reader(fh, delimiter=sep)
                    records = ((r, reader.line_num) for r in reader)
                else:  # whitespace-separated: no quoting, one record per line
                    records = ((ln.split(), i) for i, ln in enumerate(fh, 1))
                last_end, k = 0, -1 if header else 0
                for rec, end in records:
                    start = last_end + 1
                    last_end = end
                    if not any(f.strip() for f in rec) and len(rec) <= 1:
                        continue  # a blank line
                    if k >= 0 and k in want:
                        found[k] = start
                        if len(found) == len(want):
                            break
                    k += 1
        except (OSError, EOFError, ValueError, csv.Error):
            return {}
        return found

    return locate


def separator_hint(columns) -> str:
    """Advice for a header read as one column that holds another separator (a
    ``;``-separated file named .csv)."""
    if len(columns) == 1:
        for sep, name in ((";", "';'"), ("\t", "'tab'"), ("|", "'|'")):
            if sep in columns[0]:
                return (f"; its header seems to be separated by {name}: give sep={sep!r} "
                        f"(--sep {name} on the command line), or name the file .txt to have "
                        "its separator detected")
    return ""


def read_csv(path, label=None, *, header=None, sep=None, categorical=None, numeric=None,
             infer=True):
    """Read a delimited text file with pandas. ``sep=None``: ',' for .csv, tab for .tsv,
    sniffed otherwise. ``header=None`` (the default): the first line is a header row, and
    one that holds nothing but numbers is refused as data (a file without a header lost its
    first row to it, and its features were named by its numbers); ``True``: the first line
    is the header whatever it holds; ``False``: no header row, the columns are named
    ``f0, f1, ...`` (after taking out the label column, which is then chosen by index).

    Column types (``infer=True``, the default) follow one rule, so that a typo never turns a
    numeric column into categories:

    - a column is **numeric** when every cell parses as a number; empty cells and pandas'
      missing-value tokens (``NA``, ``N/A``, ``nan``, ``null``, ...) are missing values;
    - a column is **categorical** (a pandas ``category``) when no cell parses as a number;
    - a column that mixes numbers and text raises :class:`ColumnTypeError` (a ValueError)
      naming the file, the column and the first odd cells (data row counted from 1, and
      the file's line), whichever kind is the minority.

    categorical : column names declared categorical: read as categories whatever the cells
        hold (a column of numbers stays numbers, which ``hardwood.Dataset`` then treats as
        category codes when told ``categorical_features``).
    numeric : column names that must be numeric: any cell that is not a number or missing
        raises ColumnTypeError.
    infer : False: columns in neither list are not checked (text stays categories), as
        for a model's extra columns at prediction time.
    """
    pd = need("pandas", "CSV", "pandas")
    path = os.fspath(path)
    check_file(path)
    ext, comp = split_ext(path)
    if sep is None:
        sep = {".csv": ",", ".tsv": "\t"}.get(ext) or sniff_delimiter(path, comp)
    # index_col=False: a line that ends with the separator (one field more than the header)
    # made pandas take the first column as the row index, every column shifted one place
    # left: the label read as a feature, the last feature all NaN
    kw = dict(sep=sep, header=None if header is False else 0, index_col=False)
    if sep == r"\s+":
        kw["engine"] = "python"
    else:  # type each column from all its cells at once, not chunk by chunk (a chunk of
        kw["low_memory"] = False  # numbers and a chunk with text would mix ints and strings)
    try:
        df = without_extra_fields(lambda: pd.read_csv(path, **kw), path)
    except pd.errors.EmptyDataError:
        raise ValueError(f"data file {path!r} is empty (no columns to read)") from None
    except ExtraFieldsError:
        raise
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        msg = " ".join(str(e).split())
        raise ValueError(f"cannot parse {path!r} as delimited text (separator {sep!r}): {msg}") from None
    if header is None or header:
        check_header_names(path, kw, numbers_refused=header is None)
    else:
        df.columns = [str(i) for i in range(df.shape[1])]
        if label is not None and isinstance(label, str) and not re.fullmatch(r"[+-]?\d+", label.strip()):
            raise ValueError(f"label {label!r} is a column name, but {path!r} is read without a "
                             "header row; give the label column's index")
    names = (lambda n: [f"f{i}" for i in range(n)]) if header is False else None
    X, y, _ = finish_frame(df, label, path, categorical=categorical, numeric=numeric,
                            infer=infer, locate=line_locator(path, comp, sep, header is not False),
                            feature_names=names)
    return X, y, list(X.columns)


class ExtraFieldsError(ValueError):
    """Lines of a delimited file have more fields than its header."""


def without_extra_fields(read, path):
    """``read()`` (a pandas CSV read, or one chunk of it) with pandas' "length of header
    does not match" warning as an error: under ``index_col=False``, lines with non-empty
    fields beyond the header's were read without them, so every line of ``a,b,y`` written
    as ``5,258,0.822,0.330`` (a thousands separator) trained on label 0.822 and dropped
    0.330, with one warning. (An empty last field, a line ending with the separator, is
    read as such without the warning.)"""
    pd = need("pandas", "CSV", "pandas")
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            return read()
        except pd.errors.ParserWarning as e:
            raise ExtraFieldsError(
                f"cannot parse {path!r}: lines have more fields than its header ("
                f"{' '.join(str(e).split())[:120]}); a value may hold the separator unquoted "
                "(a thousands separator such as 5,258, or a decimal comma)") from None


def check_header_names(path, kw, numbers_refused=False):
    """Refuse a CSV header that names a column twice: pandas renames the second one (``y``
    -> ``y.1``), which was then trained as a feature without a word. ``kw``: the file's
    ``pandas.read_csv`` options. Empty names are left to pandas (``Unnamed: 3``).
    ``numbers_refused``: refuse a header of numbers only, a first row of data."""
    pd = need("pandas", "CSV", "pandas")
    head = pd.read_csv(path, **{**kw, "header": None, "nrows": 1, "dtype": str,
                                "keep_default_na": False})
    names = [str(c) for c in head.iloc[0].tolist()] if head.shape[0] else []
    if numbers_refused and names and all(_is_number(c) for c in names):
        raise ValueError(f"the first line of {path!r} holds only numbers ({', '.join(names[:4])}"
                         f"{', ...' if len(names) > 4 else ''}): it is a row of data, not a "
                         "header. Read the file without a header (header=False, --no-header "
                         "on the command line; the label is then a column index), or "
                         "header=True (--header) if those numbers are the column names")
    check_distinct_names(path, [c for c in names if c != ""])


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() != ""


def check_distinct_names(path, names):
    dup = sorted({c for c in names if names.count(c) > 1})
    if dup:
        raise ValueError(f"data file {path!r} has duplicate column names: {dup[:5]}; give each "
                         "column its own name")


# -- Parquet --------------------------------------------------------------------------
def read_parquet(path, label=None, *, categorical=None, numeric=None):
    """Read a Parquet file with pyarrow (into pandas). Column types are the file's (string
    columns become categories); a column in ``numeric`` that holds strings must parse as
    numbers in every cell (else :class:`ColumnTypeError`), one in ``categorical`` is left
    as it is."""
    need("pandas", "Parquet", "pandas")
    need("pyarrow", "Parquet", "arrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.fspath(path)
    check_file(path)
    try:
        with pq.ParquetFile(path) as pf:  # (one open: the footer's names, then the columns)
            # (two columns of one name: pyarrow's own error listed its internal fields)
            check_distinct_names(path, pf.schema_arrow.names)
            table = pf.read()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
        msg = " ".join(str(e).split())
        raise ValueError(f"cannot read {path!r} as Parquet: {msg}") from None
    # decimal columns (SQL and Spark exports of amounts) are numbers: read as float64 they
    # are features; to_pandas gave Decimal objects, which became categories (a new amount
    # was an unseen category, treated as missing)
    declared = {str(c) for c in (categorical or [])}
    for i, field in enumerate(table.schema):
        if pa.types.is_decimal(field.type) and field.name not in declared:
            table = table.set_column(i, field.name, decimal_as_float64(table.column(i)))
    try:
        # dates as datetime64, refused as timestamps are: as date objects they became
        # categories, one per date, and every later date was an unseen one (missing)
        df = table.to_pandas(date_as_object=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError) as e:
        raise ValueError(f"cannot convert Parquet file {path!r} to a table of features: {e}") from None
    return finish_frame(df, label, path, categorical=categorical, numeric=numeric, infer=False)


def decimal_as_float64(column):
    """An Arrow decimal column as float64, each value the double nearest to it, as
    ``float(Decimal)`` and a CSV reader give (Arrow's own cast gave 2927.2000000000003 for
    2927.20): the unscaled integer, exact below 10**15, divided by 10**scale in one
    correctly rounded division. Wider decimals take Arrow's cast."""
    import pyarrow as pa
    import pyarrow.compute as pc

    scale = column.type.scale
    if column.type.precision > 15 or not 0 <= scale <= 22:
        return column.cast(pa.float64(), safe=False)
    unscaled = pc.multiply(column, 10**scale).cast(pa.int64()).to_numpy(zero_copy_only=False)
    return pa.array(unscaled / 10.0**scale, from_pandas=True)  # (nulls: NaN -> null)


# -- LibSVM -----------------------------------------------------------------------------
_NUM = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)"
_PAIR = re.compile(r"(\d+):(" + _NUM + r")", re.IGNORECASE)
_QID = re.compile(r"qid:[+-]?\d+")
_LABEL = re.compile(r"(?:" + _NUM + r")(?:,(?:" + _NUM + r"))*", re.IGNORECASE)


MAX_LIBSVM_ID = 2**31 - 1  # scikit-learn's LibSVM parser holds feature ids in a C int


def libsvm_line_problem(line: str):
    """Why a LibSVM line is malformed, or None."""
    body = line.split("#", 1)[0].strip()
    if not body:
        return None
    tokens = body.split()
    if not _LABEL.fullmatch(tokens[0]):
        return f"the label {tokens[0]!r} is not a number"
    if "," in tokens[0]:
        return (f"the label {tokens[0]!r} is a multi-label line's list of labels; each row "
                "takes one label")
    last = -1
    for tok in tokens[1:]:
        if tok.startswith("qid:"):
            if not _QID.fullmatch(tok):
                return f"{tok!r} is not a query id (qid:INTEGER)"
            if last >= 0:
                return f"{tok!r} comes after a feature: a line's qid: follows its label"
            continue
        m = _PAIR.fullmatch(tok)
        if m is None:
            return f"{tok!r} is not an index:value pair"
        idx = int(m.group(1))
        if idx > MAX_LIBSVM_ID:
            return (f"feature index {idx} is beyond the largest supported index "
                    f"{MAX_LIBSVM_ID}")
        if idx <= last:
            return f"feature index {idx} is not above the previous index {last} (indices must be sorted and unique)"
        last = idx
    return None


def find_bad_libsvm_line(path: str):
    """(line number, problem) of the first malformed line, or None."""
    try:
        fh = _open_text(path, split_ext(path)[1])
        if fh is None:
            return None
        with fh:
            for i, line in enumerate(fh, 1):
                problem = libsvm_line_problem(line)
                if problem:
                    return i, problem
    except (OSError, EOFError, ValueError):  # only used to improve an error message
        return None
    return None


def read_libsvm(path, label=None, *, n_features=None, zero_based="auto", dtype=np.float64):
    """Read a LibSVM/SVMlight file (``label idx:val ... [# comment]``; ``qid:`` is skipped
    here, :func:`libsvm_qids` reads it).

    zero_based : True (ids start at 0), False (ids start at 1, the LibSVM convention) or
        'auto' (0-based when some line uses id 0).
    n_features : the number of columns to return (a model's feature count); ids beyond it
        raise.
    Returns ``(X_csr, y, names)`` where ``names[j] == f"f{id}"`` for column ``j``.
    """
    from sklearn.datasets import load_svmlight_file

    path = os.fspath(path)
    check_file(path)
    if label not in (None, 0, "0"):
        raise ValueError(f"{path!r} is a LibSVM file, whose label is always the first field of "
                         f"a line; label={label!r} does not apply")
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    try:
        with open(path, "rb") as fh:
            if fh.read(3) == b"\xef\xbb\xbf" and not split_ext(path)[1]:
                X, y = load_svmlight_file(fh, zero_based=True, dtype=dtype)  # past the BOM
            else:
                X, y = load_svmlight_file(path, zero_based=True, dtype=dtype)
    except (ValueError, IndexError, TypeError, OverflowError) as e:
        # OverflowError: a feature index beyond int32 (scikit-learn's parser)
        where = find_bad_libsvm_line(path)
        detail = f"line {where[0]}: {where[1]}" if where else " ".join(str(e).split())
        raise ValueError(f"malformed LibSVM file {path!r}: {detail}") from None
    if X.shape[0] == 0:
        raise ValueError(f"LibSVM file {path!r} has no data lines")
    X = X.tocsr()
    if X.shape[1] > MAX_FEATURES + 1:  # before the names (one per column) are made
        e = int(np.argmax(X.indices))
        row = int(np.searchsorted(X.indptr, e, side="right"))
        raise ValueError(f"LibSVM file {path!r} uses feature id {int(X.indices[e])} (data line "
                         f"{row}): hardwood trains on at most {MAX_FEATURES} (2**22) features, "
                         "and a file has a column for every id up to its largest. Renumber the "
                         "ids densely, or hash them into fewer")
    if zero_based == "auto":
        zero_based = bool(X.nnz) and int(X.indices.min()) == 0
    if not zero_based:
        if X.nnz and int(X.indices.min()) == 0:
            raise ValueError(f"LibSVM file {path!r} uses feature id 0, but was read as 1-based")
        X = X[:, 1:] if X.shape[1] > 1 else X[:, :0]
    offset = 0 if zero_based else 1
    if n_features is not None:
        n_features = int(n_features)
        if X.shape[1] > n_features:
            max_id = int(X.indices.max()) + offset if X.nnz else X.shape[1] - 1 + offset
            raise ValueError(f"LibSVM file {path!r} uses feature id {max_id}, but only "
                             f"{n_features} features are expected (ids {offset}.."
                             f"{n_features - 1 + offset})")
        if X.shape[1] < n_features:
            import scipy.sparse as sp
            X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
    if X.shape[1] == 0:
        raise ValueError(f"LibSVM file {path!r} has no features")
    names = [f"f{j + offset}" for j in range(X.shape[1])]
    return X, np.asarray(y, dtype=np.float64), names


# -- query groups (ranking) ------------------------------------------------------------
def libsvm_qids(path):
    """The ``qid:N`` of each data line of a LibSVM file (int64), or None when no line has
    one. Blank and comment-only lines are not rows (as for the data); a file with ``qid:`` on
    some data lines and not on others raises ValueError naming the first odd line."""
    path = os.fspath(path)
    fh = _open_text(path, split_ext(path)[1])
    if fh is None:
        raise ValueError(f"cannot read the qids of {path!r}: its compression is not supported "
                         "here; decompress it first")
    qids, first_with, first_without = [], None, None
    with fh:
        for i, line in enumerate(fh, 1):
            body = line.split("#", 1)[0].split()
            if not body:
                continue
            qid = next((tok[4:] for tok in body[1:] if tok.startswith("qid:")), None)
            if qid is not None and not (re.fullmatch(r"[+-]?\d+", qid)
                                        and -2**63 <= int(qid) < 2**63):
                # (qid:-3, qid:1.5 and qid:abc were dropped, and the file had "no qid:")
                raise ValueError(f"LibSVM file {path!r}, line {i}: 'qid:{qid[:30]}' is not a "
                                 "query id (an integer of at most 64 bits)")
            if qid is None:
                first_without = first_without or i
            else:
                first_with = first_with or i
                qids.append(int(qid))
            if first_with and first_without:
                raise ValueError(f"LibSVM file {path!r} gives qid: on some lines but not on "
                                 f"others (line {first_with} has one, line {first_without} "
                                 "has none); give every line its query or none")
    return np.asarray(qids, dtype=np.int64) if first_with else None


class Queries(NamedTuple):
    """The query groups of a data file: ``group`` (sizes of consecutive queries) or ``qid``
    (one id per row), the other None; ``source`` says where they came from."""
    group: np.ndarray | None
    qid: np.ndarray | None
    source: str

    def dataset_kwargs(self) -> dict:
        """``group=`` or ``qid=`` for ``hardwood.Dataset``."""
        return {"group": self.group} if self.group is not None else {"qid": self.qid}

    def boundaries(self, n_rows) -> np.ndarray:
        """Query boundaries over ``n_rows`` rows; a ValueError names the source."""
        from ..ranking import group_ptr

        try:
            return group_ptr(n_rows, self.group, self.qid, what="query")
        except ValueError as e:
            raise ValueError(f"bad query groups in {self.source}: {e}") from None


def query_file_beside(path):
    """``<path>.query`` (LightGBM's query file of a data file) when it exists, else None."""
    candidate = os.fspath(path) + ".query"
    return candidate if os.path.isfile(candidate) else None


def read_group_file(path):
    """The query sizes of a LightGBM-style query file: one positive integer a line (blank
    lines skipped). Errors name the file and the line."""
    path = os.fspath(path)
    check_file(path)
    sizes = []
    with open(path, "r", encoding="utf-8-sig", errors="replace") as fh:
        for i, line in enumerate(fh, 1):
            text = line.strip()
            if not text:
                continue
            if not re.fullmatch(r"\+?\d+", text) or int(text) == 0:
                raise ValueError(f"query file {path!r}, line {i}: {text[:40]!r} is not a "
                                 "positive integer (a query's number of rows)")
            sizes.append(int(text))
    if not sizes:
        raise ValueError(f"query file {path!r} holds no query sizes")
    return np.asarray(sizes, dtype=np.int64)


def take_qid_column(X, qid_column, path):
    """Split the column ``qid_column`` off a DataFrame: (features, qids as a numpy array)."""
    if not hasattr(X, "columns"):
        raise ValueError(f"qid_column={qid_column!r} needs a CSV/Parquet file with named "
                         f"columns; {path!r} is not (a LibSVM file gives qid: in its lines)")
    name = str(qid_column)
    if name not in [str(c) for c in X.columns]:
        raise ValueError(f"query id column {name!r} is not among the feature columns of "
                         f"{path!r}")
    qid = X[name]
    if qid.isna().any():
        row = int(np.flatnonzero(qid.isna().to_numpy())[0])
        raise ValueError(f"query id column {name!r} in {path!r} has a missing value (first "
                         f"at data row {row + 1})")
    X = X.drop(columns=name)
    if X.shape[1] == 0:
        raise ValueError(f"data file {path!r} has no feature columns besides the label and "
                         f"the query ids {name!r}")
    return X, qid.to_numpy()


def _queries_in_file(path, kind, X, qid_column):
    """(features, Queries or None) from a qid column or a LibSVM file's qid: tokens."""
    if qid_column is not None:
        X, qid = take_qid_column(X, qid_column, path)
        return X, Queries(None, qid, f"column {str(qid_column)!r} of {path!r}")
    if kind == "libsvm":
        qid = libsvm_qids(path)
        if qid is not None:
            return X, Queries(None, qid, f"the qid: of {path!r}")
    return X, None


def _queries_beside(path, n_rows, found):
    """Queries from ``<path>.query``, when it exists; when the file gave queries of its own
    (``found``), the two must describe the same boundaries."""
    side = query_file_beside(path)
    if side is None:
        return found
    beside = Queries(read_group_file(side), None, f"query file {side!r}")
    ptr = beside.boundaries(n_rows)
    if found is not None and not np.array_equal(ptr, found.boundaries(n_rows)):
        raise ValueError(f"the queries of {found.source} and of {beside.source} disagree; "
                         "remove one of them")
    return found or beside


# -- entry point --------------------------------------------------------------------------
def read_table(path, label=None, fmt=None, **kwargs):
    """Read a data file; returns ``(X, y, feature_names)``.

    path : a .csv/.tsv/.txt (delimiter sniffed for .txt), .parquet/.pq or
        .svm/.libsvm/.svmlight file (optionally .gz/.bz2/.xz compressed), or any name with
        ``fmt`` given.
    label : the label column's name or index (CSV/Parquet); None for no label (``y`` is
        None). LibSVM files always carry the label first.
    fmt : 'csv' (also 'tsv', 'txt'), 'parquet' or 'libsvm'; None: from the extension.
    kwargs : passed to the reader (``header``/``sep``/``categorical``/``numeric``/``infer``
        for CSV, ``categorical``/``numeric`` for Parquet; ``n_features``/``zero_based`` for
        LibSVM).

    X is a pandas DataFrame (string columns as 'category') for CSV/Parquet, a scipy CSR
    matrix for LibSVM. A CSV column that mixes numbers and text raises
    :class:`ColumnTypeError` unless declared ``categorical`` (see :func:`read_csv`).
    """
    if path is None:
        raise TypeError("path must be a file path, got None")
    path = os.fspath(path)
    kind = detect_format(path, fmt)
    if kind == "csv":
        return read_csv(path, label, **kwargs)
    if kind == "parquet":
        extra = sorted(set(kwargs) - {"categorical", "numeric"})
        if extra:
            raise TypeError(f"unexpected options for a Parquet file: {extra}")
        return read_parquet(path, label, **kwargs)
    return read_libsvm(path, label, **kwargs)


def read_table_with_queries(path, label=None, fmt=None, *, qid_column=None, group_file=None,
                            **kwargs):
    """:func:`read_table` for ranking data: ``(X, y, feature_names, queries)``, with
    ``queries`` a :class:`Queries` (checked against the rows) or None when none is found.

    group_file : a query file of sizes (one integer a line); it comes before
        ``<path>.query``, and a LibSVM file's own qids must describe the same queries.
    qid_column : (CSV/Parquet) the column of query ids, taken out of the features; it may
        not be the label column.
    Otherwise a LibSVM file's ``qid:`` tokens, or ``<path>.query`` beside the file."""
    if group_file is not None and qid_column is not None:
        raise ValueError("give the queries as a query file or as a qid column, not both")
    if qid_column is not None and label is not None and str(qid_column) == str(label):
        raise ValueError(f"the query id column {qid_column!r} is also the label column")
    path = os.fspath(path)
    kind = detect_format(path, fmt)
    if qid_column is not None and kind == "libsvm":
        raise ValueError(f"qid_column={qid_column!r} does not apply to the LibSVM file "
                         f"{path!r}, which gives its queries as qid: in its lines")
    if qid_column is not None:  # leave the ids as they are, whatever they hold
        kwargs["categorical"] = list(kwargs.get("categorical") or ()) + [str(qid_column)]
    X, y, names = read_table(path, label, fmt, **kwargs)
    if group_file is not None:
        source = f"query file {os.fspath(group_file)!r}"
        queries = Queries(read_group_file(group_file), None, source)
        _, own = _queries_in_file(path, kind, X, None)  # a LibSVM file's qid: must agree
        if own is not None and not np.array_equal(queries.boundaries(X.shape[0]),
                                                  own.boundaries(X.shape[0])):
            raise ValueError(f"the queries of {source} and of {own.source} disagree (it "
                             "replaced them silently); remove one of them")
    else:
        X, queries = _queries_in_file(path, kind, X, qid_column)
        queries = _queries_beside(path, X.shape[0], queries)
    if queries is not None:
        queries.boundaries(X.shape[0])
    if qid_column is not None:
        names = [str(c) for c in X.columns]
    return X, y, names, queries
