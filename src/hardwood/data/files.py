"""``Dataset.from_files``: batches streamed from data files, for ``Dataset.from_batches``.

Each format is read a piece at a time, never whole:

- Parquet: one row group at a time (pyarrow), only the columns needed;
- CSV/TSV: ``batch_rows`` rows at a time (pandas), every feature cell a number or missing,
  by the rule of :func:`readers.read_csv` for a column declared numeric;
- LibSVM: ``batch_rows`` lines at a time (scikit-learn's parser). A first scan over the
  lines finds the feature count and whether ids start at 0, so every batch has the same
  columns.

All files must hold the same feature columns, in the same order, with the same kind of type
(numeric). Every error names the file, and the row group (Parquet) or the rows (CSV,
LibSVM) at fault. Features are numeric only, as in ``from_batches``.
"""
from __future__ import annotations

import glob
import io
import os

import numpy as np

from .readers import (ColumnTypeError, check_distinct_names, check_file, check_header_names,
                      decimal_as_float64, detect_format, find_bad_libsvm_line, finish_frame,
                      libsvm_line_problem, line_locator, need, separator_hint, sniff_delimiter,
                      split_ext, without_extra_fields)

BATCH_ROWS = 100_000  # CSV rows and LibSVM lines per batch


def expand_paths(paths) -> list:
    """A path, a glob pattern or a list of them -> the list of files, in order; an empty
    list, or a pattern that matches nothing, is an error."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    try:
        paths = list(paths)
    except TypeError:
        raise TypeError(f"paths must be a path, a glob pattern or a list of paths, got "
                        f"{type(paths).__name__}") from None
    if not paths:
        raise ValueError("from_files got an empty list of files")
    out = []
    for p in paths:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(f"paths must hold file paths, got {type(p).__name__}")
        p = os.fspath(p)
        if glob.has_magic(p):
            hits = sorted(glob.glob(p))
            if not hits:
                raise FileNotFoundError(f"no data file matches {p!r}")
            out.extend(hits)
        else:
            out.append(p)
    for p in out:
        check_file(p)
    return out


class FileBatches:
    """A callable for ``from_batches``: each call gives a fresh iterator of ``(X, y[, w])``
    batches from ``paths``; ``where(i)`` names the file and part that batch ``i`` came from."""

    def __init__(self, paths, label, fmt=None, weight=None, batch_rows=BATCH_ROWS):
        self.paths = expand_paths(paths)
        kinds = {detect_format(p, fmt) for p in self.paths}
        if len(kinds) > 1:
            raise ValueError(f"from_files got files of several formats ({sorted(kinds)}); "
                             "give files of one format")
        self.kind = kinds.pop()
        if isinstance(batch_rows, bool) or not isinstance(batch_rows, (int, np.integer)) \
                or batch_rows < 1:
            raise ValueError(f"batch_rows must be a positive integer, got {batch_rows!r}")
        self.batch_rows = int(batch_rows)
        self.label, self.weight = label, weight
        self.names = None  # the feature columns, from the first file
        self._types = None  # Parquet: their types in the first file
        self.parts = []  # per batch: "file, part"
        if self.kind == "libsvm":
            if weight is not None:
                raise ValueError("a LibSVM file has no weight column; weight= does not apply")
            self._libsvm_layout()
        elif not isinstance(label, str):
            raise ValueError(f"from_files needs label= the name of the label column of the "
                             f"{self.kind.upper()} files, got {label!r}")
        elif weight is not None and weight == label:
            # (accepted: 0/1 labels weighed their negative rows 0 without a word)
            raise ValueError(f"weight= names the label column {label!r}; name the column of "
                             "the rows' weights, or leave weight= out")
        elif self.kind == "parquet":
            self._parquet_columns(self.paths[0], self._parquet_file(self.paths[0]).schema_arrow)
        else:
            self._csv_header(self.paths[0])

    def where(self, i) -> str:
        return self.parts[i] if 0 <= i < len(self.parts) else f"batch {i}"

    def __call__(self):
        self.parts = []
        read = {"parquet": self._parquet, "csv": self._csv, "libsvm": self._libsvm}[self.kind]
        for path in self.paths:
            yield from read(path)

    # -- Parquet ---------------------------------------------------------------------------
    def _parquet(self, path):
        need("pyarrow", "Parquet", "arrow")
        import pyarrow as pa

        pf = self._parquet_file(path)
        columns = self._parquet_columns(path, pf.schema_arrow)
        for g in range(pf.num_row_groups):
            where = f"{path!r}, row group {g}"
            try:
                table = pf.read_row_group(g, columns=columns)
            except (pa.ArrowException, OSError) as e:
                raise ValueError(f"cannot read {where}: {' '.join(str(e).split())}") from None
            if table.num_rows == 0:
                continue
            d = len(self.names)
            X = np.empty((table.num_rows, d), dtype=self._parquet_dtype(table, columns[:d]))
            for j in range(d):  # column by column into one matrix: no float64 copies
                X[:, j] = self._column(table.column(columns[j]), columns[j], where, X.dtype)
            y = self._column(table.column(self.label), self.label, where, np.float64)
            if np.isnan(y).any():
                r = int(np.flatnonzero(np.isnan(y))[0])
                raise ValueError(f"label column {self.label!r} in {where} has a missing value "
                                 f"(row {r} of the row group)")
            self.parts.append(where)
            if self.weight is None:
                yield X, y
            else:
                yield X, y, self._column(table.column(self.weight), self.weight, where,
                                         np.float64)

    @staticmethod
    def _parquet_dtype(table, names):
        """float32 when every feature column converts to it exactly, else float64 (as an
        in-memory matrix of those columns would be kept)."""
        import pyarrow as pa

        narrow = (pa.float32(), pa.float16(), pa.int8(), pa.int16(), pa.uint8(), pa.uint16(),
                  pa.bool_(), pa.null())
        return np.float32 if all(table.schema.field(c).type in narrow for c in names) \
            else np.float64

    @staticmethod
    def _parquet_file(path):
        need("pyarrow", "Parquet", "arrow")
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(path)
        except (pa.ArrowException, OSError) as e:
            raise ValueError(f"cannot read {path!r} as Parquet: {' '.join(str(e).split())}") \
                from None

    def _parquet_columns(self, path, schema):
        import pyarrow as pa

        names = list(schema.names)
        features = self._features_among(path, names)
        types = {c: schema.field(c).type for c in names}
        for c in features + [self.label] + ([self.weight] if self.weight else []):
            t = types[c]
            if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
                    or pa.types.is_boolean(t) or pa.types.is_null(t)):
                if self._types is not None and c in self._types:
                    raise ValueError(f"column {c!r} is {self._types[c]} in {self.paths[0]!r} "
                                     f"but {t} in {path!r}; a column must keep its type "
                                     "across files")
                raise ValueError(f"column {c!r} in {path!r} has type {t}: from_files reads "
                                 "numeric columns only (categorical features are not "
                                 "supported out of core yet; encode them as numbers)")
        if self._types is None:
            self._types = {c: types[c] for c in features}
        return features + [self.label] + ([self.weight] if self.weight else [])

    @staticmethod
    def _column(chunked, name, where, dtype):
        import pyarrow as pa

        try:  # nulls -> NaN; decimals and integers beyond 2**53 rounded, as read_table does
            if pa.types.is_decimal(chunked.type):
                chunked = decimal_as_float64(chunked)
            return chunked.cast(pa.from_numpy_dtype(dtype), safe=False).to_numpy()
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise ValueError(f"column {name!r} in {where} cannot be read as numbers: {e}") \
                from None

    # -- CSV -------------------------------------------------------------------------------
    @staticmethod
    def _csv_options(path):
        ext, comp = split_ext(path)
        sep = {".csv": ",", ".tsv": "\t"}.get(ext) or sniff_delimiter(path, comp)
        kw = dict(sep=sep, header=0, index_col=False)  # (see readers.read_csv)
        if sep == r"\s+":
            kw["engine"] = "python"
        return kw, comp

    def _csv_header(self, path):
        """The feature columns of a CSV file's header (the label and weight named there)."""
        pd = need("pandas", "CSV", "pandas")
        kw, _ = self._csv_options(path)
        try:
            check_header_names(path, kw)
            cols = [str(c) for c in pd.read_csv(path, nrows=0, **kw).columns]
        except pd.errors.EmptyDataError:
            raise ValueError(f"data file {path!r} is empty (no columns to read)") from None
        except (pd.errors.ParserError, UnicodeDecodeError) as e:
            raise ValueError(f"cannot parse the header of {path!r}: "
                             f"{' '.join(str(e).split())}") from None
        self._features_among(path, cols)

    def _features_among(self, path, cols):
        """The feature columns among a file's ``cols``: all but the label and the weight,
        which must be there; the same in every file."""
        check_distinct_names(path, cols)
        for what, col in (("label", self.label), ("weight", self.weight)):
            if col is not None and col not in cols:
                shown = ", ".join(map(repr, cols[:10])) + (", ..." if len(cols) > 10 else "")
                raise ValueError(f"{what} column {col!r} is not in {path!r} (columns: {shown})"
                                 + separator_hint(cols))
        names = [c for c in cols if c not in (self.label, self.weight)]
        if not names:
            raise ValueError(f"{path!r} has no feature columns besides the label")
        if self.names is None:
            self.names = names
        if names != self.names:
            missing = [c for c in self.names if c not in names]
            extra = [c for c in names if c not in self.names]
            raise ValueError(f"{path!r} has other feature columns than {self.paths[0]!r}"
                             + (f": missing {missing[:5]}" if missing else "")
                             + (f", extra {extra[:5]}" if extra else "")
                             + ("" if missing or extra else ": another order"))
        return names

    def _csv(self, path):
        pd = need("pandas", "CSV", "pandas")
        self._csv_header(path)
        kw, comp = self._csv_options(path)
        sep = kw["sep"]
        locate = line_locator(path, comp, sep, True)
        start = 0
        try:  # (closed on every way out: an error left the file open)
            with pd.read_csv(path, chunksize=self.batch_rows, **kw) as reader:
                chunks = iter(reader)
                while True:
                    chunk = without_extra_fields(lambda: next(chunks, None), path)
                    if chunk is None:
                        break
                    if chunk.shape[0] == 0:  # a header without rows: skipped, as a Parquet
                        continue             # file of no rows
                    yield self._csv_batch(path, chunk, start, locate)
                    start += chunk.shape[0]
        except pd.errors.EmptyDataError:
            raise ValueError(f"data file {path!r} is empty (no columns to read)") from None
        except (pd.errors.ParserError, UnicodeDecodeError) as e:
            raise ValueError(f"cannot parse {path!r} as delimited text (separator {sep!r}): "
                             f"{' '.join(str(e).split())}") from None

    def _csv_batch(self, path, chunk, start, locate):
        where = f"{path!r}, rows {start + 1}-{start + chunk.shape[0]}"
        chunk.columns = [str(c) for c in chunk.columns]
        w = None
        if self.weight is not None:
            w = chunk.pop(self.weight)
        def shifted(rows):  # the chunk's rows -> the file's lines
            found = locate([r + start for r in rows]) if locate is not None else {}
            return {r: found[r + start] for r in rows if r + start in found}

        try:
            X, y, _ = finish_frame(chunk, self.label, path, numeric=self.names, infer=False,
                                    locate=shifted, first_row=start)
            if w is not None:
                w, _, _ = finish_frame(w.to_frame(), None, path, numeric=[self.weight])
                w = w.iloc[:, 0].to_numpy(dtype=np.float64)
        except ColumnTypeError as e:
            cells = [(row + start, line, text) for row, line, text in e.cells]
            raise ColumnTypeError(e.path, e.column, cells, e.n_odd, e.n_numbers, e.n_text,
                                  True) from None
        except ValueError as e:
            raise ValueError(f"{e} ({where})") from None
        self.parts.append(where)
        X = X.to_numpy(dtype=np.float64, na_value=np.nan)
        return (X, y) if w is None else (X, y, w)

    # -- LibSVM ----------------------------------------------------------------------------
    def _libsvm_layout(self):
        """First scan: the largest feature id and whether any line uses id 0."""
        from sklearn.datasets import load_svmlight_file

        max_id, zero = -1, False
        for path in self.paths:
            for start, text in self._line_blocks(path):
                try:
                    X, _ = load_svmlight_file(io.BytesIO(text), zero_based=True)
                except (ValueError, IndexError, TypeError, OverflowError) as e:
                    self._libsvm_error(path, start, text, e)
                if X.nnz:
                    max_id = max(max_id, int(X.indices.max()))
                    zero = zero or int(X.indices.min()) == 0
        if max_id < 0:
            raise ValueError(f"the LibSVM files {self.paths[:3]} have no features")
        self.zero_based = zero
        n = max_id + 1 if zero else max_id
        offset = 0 if zero else 1
        self.names = [f"f{j + offset}" for j in range(n)]

    def _libsvm(self, path):
        from sklearn.datasets import load_svmlight_file

        n = len(self.names)
        for start, text in self._line_blocks(path):
            try:
                X, y = load_svmlight_file(io.BytesIO(text), zero_based=self.zero_based,
                                          n_features=n)
            except (ValueError, IndexError, TypeError, OverflowError) as e:
                self._libsvm_error(path, start, text, e)
            if X.shape[0] == 0:
                continue
            last = start + text.count(b"\n") - 1
            self.parts.append(f"{path!r}, lines {start}-{last}")
            yield X.tocsr(), np.asarray(y, dtype=np.float64)

    def _line_blocks(self, path):
        """(first line number, bytes of up to batch_rows lines) of a LibSVM file."""
        import gzip
        import bz2
        import lzma

        opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(split_ext(path)[1],
                                                                           open)
        try:
            with opener(path, "rb") as fh:
                start, lines = 1, []
                for line in fh:
                    lines.append(line if line.endswith(b"\n") else line + b"\n")
                    if len(lines) == self.batch_rows:
                        yield start, b"".join(lines)
                        start, lines = start + len(lines), []
                if lines:
                    yield start, b"".join(lines)
        except (OSError, EOFError) as e:
            raise ValueError(f"cannot read {path!r}: {e}") from None

    @staticmethod
    def _libsvm_error(path, start, text, err):
        for k, line in enumerate(text.decode("utf-8", "replace").splitlines()):
            problem = libsvm_line_problem(line)
            if problem:
                raise ValueError(f"malformed LibSVM file {path!r}: line {start + k}: {problem}") \
                    from None
        where = find_bad_libsvm_line(path)
        detail = f"line {where[0]}: {where[1]}" if where else " ".join(str(err).split())
        raise ValueError(f"malformed LibSVM file {path!r}: {detail}") from None
