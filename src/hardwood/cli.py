"""The ``hardwood`` command line: ``train``, ``predict``, ``demo``, ``report`` (a model's HTML
page, ``hardwood.report``) and ``simulate`` (the Booster accelerator model, ``hardwood.accel``).

    hardwood train --data train.csv --label y [--param k=v ...] [--rounds N]
                   [--valid valid.csv] [--early-stopping N] --out model.json
    hardwood train --data rank.train --format libsvm --param objective=rank:ndcg
                   [--group FILE | --qid-column COL] [--valid-group FILE] --out model.json
    hardwood predict --model model.json --data test.csv [--label y]
                     [--output value|raw|leaf] [--group FILE | --qid-column COL] --out preds.csv
    hardwood demo [--rows N] [--threads N]
    hardwood report --model model.json [--data test.csv --label y] --out report.html
    hardwood simulate --preset paper [--json] [--plot DIR] | --data FILE ...

Bad files or arguments print one line, ``hardwood: error: ...``, on stderr and exit with
status 2 (never a traceback). ``python -m hardwood ...`` runs the same program.

Column types (CSV): a column is numeric when every cell parses as a number (empty cells and
pandas' NA tokens such as ``NA``, ``N/A``, ``nan``, ``null`` are missing values) and
categorical when no cell does. A column that mixes the two is an error naming the file, the
column and the first odd cells (data row and file line), so a typo never turns a numeric
column into categories; ``train --categorical COL,...`` declares columns categorical
whatever they hold. ``predict`` (and ``--valid``) read columns with the model's types: a
numeric feature's cell that is not a number is an error naming the cell.

Ranking (``objective=rank:ndcg``, ``rank:pairwise``, ``lambdarank``): the query groups of
``--data`` (and ``--valid``) come from ``--group FILE`` (``--valid-group FILE``), a file of
query sizes, one a line; else ``--qid-column COL`` (CSV/Parquet); else a LibSVM file's own
``qid:``; else ``<data>.query`` beside the data file (LightGBM's layout). Groups that do not
fit the rows, or a ``--group`` file or ``<data>.query`` that disagrees with the file's own
``qid:``, are an error naming the files. ``predict`` of a ranking model finds the queries
the same way (``--group``, ``--qid-column``) and prints NDCG@1, 3, 10 and MAP@10 against the
labels; without queries it writes the scores and says why it printed none.
"""
from __future__ import annotations

import argparse
import json
import numbers
import os
import re
import sys
import time

import numpy as np
from tqdm import tqdm

from .data.readers import ColumnTypeError, detect_format, read_table, read_table_with_queries
from .objectives import ALIASES, DEFAULT_OBJECTIVE, is_ranking, names, objective_class
from .train.callback import TrainingCallback

EXIT_USAGE = 2
OUTPUTS = ("value", "raw", "leaf")
_ROUND_KEYS = ("num_boost_round", "n_estimators", "num_iterations", "num_rounds", "num_round",
               "num_trees")
_ES_KEYS = ("early_stopping_rounds", "early_stopping_round", "early_stopping")


class CLIError(Exception):
    """A usage error: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line instead of argparse's usage block
        raise CLIError(f"{message} (see '{self.prog} --help')")


# -- small helpers ---------------------------------------------------------------------------
def parse_value(text: str):
    """A ``--param`` value: bool, None, int, float, a comma-separated list, or the string."""
    s = text.strip()
    if s.startswith("["):  # a list: interaction_constraints=[[0,1],[2,3]] or [[x0,x1],[x2]]
        for text in (s, re.sub(r"(?<![\w\"])([A-Za-z_][\w.]*)", r'"\1"', s)):
            try:
                return json.loads(text)
            except ValueError:
                pass
        raise CLIError(f"--param value {s!r} starts a list but is not one: write it as "
                       "JSON, such as [[0,1],[2,3]] or [[\"x0\",\"x1\"],[\"x2\"]]")
    if s.startswith("("):  # XGBoost's tuple string: monotone_constraints=(1,0,-1)
        return s
    if "," in s:
        return [parse_value(part) for part in s.split(",") if part.strip()]
    low = s.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null"):
        return None
    if re.fullmatch(r"[+-]?\d+", s):
        return int(s)
    try:
        return float(s)
    except ValueError:
        return s


def parse_params(items) -> dict:
    params = {}
    for item in items or []:
        if "=" not in item:
            raise CLIError(f"--param expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        key = key.strip()
        if not key:
            raise CLIError(f"--param expects key=value, got {item!r}")
        if key in params:
            raise CLIError(f"parameter {key!r} is given twice")
        params[key] = parse_value(value)
    return params


def _pop_int(params, keys, what):
    found = [k for k in keys if k in params]
    if len(found) > 1:
        raise CLIError(f"parameters {found} are the same setting; give one")
    if not found:
        return None
    v = params.pop(found[0])
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise CLIError(f"parameter {found[0]!r} ({what}) must be a positive integer, got {v!r}")
    return v


def _one_line(exc) -> str:
    msg = " ".join(str(exc).split())
    if isinstance(exc, FileNotFoundError) and exc.filename and not msg:
        msg = f"no such file: {exc.filename!r}"
    return msg or type(exc).__name__


def _fmt_metric(v) -> str:
    return f"{v:.6g}"


def _libsvm_base(info):
    """0/1-based feature ids for reading LibSVM data for a model whose feature names are
    ``f<id>`` (as ``read_libsvm`` names them); 'auto' when the names do not tell."""
    names = list(info.names)
    for base in (0, 1):
        if names == [f"f{j + base}" for j in range(len(names))]:
            return base == 0
    return "auto"


def _categorical_list(text):
    """The column names of ``--categorical a,b,c``."""
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def _read(path, label, fmt, *, no_header=False, sep=None, info=None, categorical=None,
          numeric=None, hint=True, queries=None, header=False):
    """read_table with the CLI's options, as ``(X, y, names, queries)``. ``queries``: None
    (not looked for; the 4th value is None) or the options of read_table_with_queries
    (``qid_column``, ``group_file``); ``info`` (a model's or training set's features)
    fixes the LibSVM feature count and id base, and the type of each CSV/Parquet feature
    column (its numeric columns must hold numbers in every cell; other columns are not
    checked). Without ``info``, CSV columns follow read_csv's rule: numeric when every
    cell is a number, categorical when none is, an error when the two mix, unless the
    column is in ``categorical`` (``--categorical``). ``numeric``: more columns that must
    be numbers (the weight column). ``hint``: whether an error may advise ``--categorical``
    (not for predict, whose model fixes the types). ``sep``: ``--sep`` (None: sniffed)."""
    kind = detect_format(path, fmt)
    kw = {}
    if kind == "csv" and no_header:
        if header:
            raise CLIError("give --header or --no-header, not both")
        kw["header"] = False
    elif kind == "csv" and header:
        kw["header"] = True
    if sep is not None:
        if kind != "csv":
            raise CLIError(f"--sep is for delimited text files; {path!r} is read as {kind}")
        kw["sep"] = _separator(sep)
    if kind == "libsvm" and info is not None:
        kw["n_features"] = info.n_features
        kw["zero_based"] = _libsvm_base(info)
    if kind in ("csv", "parquet"):
        cat = list(categorical or [])
        num = list(numeric or [])
        if info is not None:
            cat += [n for n, c in zip(info.names, info.is_categorical) if c]
            num += [n for n, c in zip(info.names, info.is_categorical) if not c]
            if kind == "csv":
                kw["infer"] = False
        kw["categorical"], kw["numeric"] = cat, num
    try:
        if queries is None:
            return (*read_table(path, label=label, fmt=fmt, **kw), None)
        return read_table_with_queries(path, label=label, fmt=fmt, **queries, **kw)
    except ColumnTypeError as e:
        if not hint or e.column in (numeric or []):  # the model's numeric feature, the weight
            raise ValueError(e.describe(hint="")) from None
        declared = list(categorical or []) + [e.column]
        raise ValueError(e.describe(hint="--categorical " + ",".join(declared))) from None


def _separator(sep):
    """``--sep``: one character, or ``tab``/``\\t`` or ``whitespace`` (runs of spaces and
    tabs)."""
    named = {"tab": "\t", "\\t": "\t", "whitespace": r"\s+"}
    sep = named.get(sep.lower() if len(sep) > 1 else sep, sep)
    if len(sep) != 1 and sep != r"\s+":
        raise CLIError(f"--sep {sep!r}: give one character (such as ';' or '|'), 'tab' or "
                       "'whitespace'")
    if sep in "\"\r\n":
        raise CLIError(f"--sep {sep!r} cannot separate fields")
    return sep


def add_text_arguments(parser, no_header_help="CSV without a header row"):
    """``--no-header`` and ``--sep``: how a delimited text file is read."""
    parser.add_argument("--no-header", action="store_true", help=no_header_help)
    parser.add_argument("--header", action="store_true",
                        help="the first line is the header even if it holds only numbers "
                             "(such a line is refused as data otherwise)")
    parser.add_argument("--sep", metavar="CHAR",
                        help="field separator of a text file: one character, 'tab' or "
                             "'whitespace' (default: ',' for .csv, tab for .tsv, sniffed for "
                             "other names)")


def _align(X, info, path, no_header=False):
    """Make a DataFrame fit the features of ``info``: select and order the training columns
    by name (extra columns are dropped) and give categorical columns matching types. A file
    without a header has no names to select by: its columns must be the model's features."""
    if not (type(X).__module__.startswith("pandas") and hasattr(X, "columns")):
        return X
    import pandas as pd

    names = list(info.names)
    cols = [str(c) for c in X.columns]
    if no_header and len(cols) != len(names):
        # the columns were named f0, f1, ... by position: picking the model's names among
        # them read a label column left in the file as feature f0 and dropped the last one
        raise ValueError(f"{path!r} has {len(cols)} columns and no header, but the model has "
                         f"{len(names)} features; name the label column with --label (a "
                         "column index), or remove the columns that are not features")
    if no_header and cols != names:
        # by position, as the docstring says: a model trained on a file with a header
        # refused its own data without one ("expected ['a', 'b'], got ['f0', 'f1']")
        X = X.set_axis(names, axis=1)
        cols = names
    if cols != names and set(names) <= set(cols):
        X = X[names]
    elif cols != names and len(cols) != len(names):
        missing = [n for n in names if n not in cols]
        raise ValueError(f"{path!r} has {len(cols)} feature columns, but the model has "
                         f"{len(names)}" + (f"; missing: {missing[:5]}" if missing else ""))
    X = X.copy()
    for j, c in enumerate(X.columns):
        if not info.is_categorical[j]:
            continue
        cats = info.categories[j] or []
        s = X[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            continue
        if cats and all(isinstance(v, str) for v in cats):
            # the training column held strings; here it was read as numbers (or all empty)
            values = s.astype(object).where(s.notna(), None)
            X[c] = pd.Categorical([None if v is None else _as_label(v) for v in values])
    for j, c in enumerate(X.columns):
        cats = info.categories[j] if info.is_categorical[j] else None
        s = X[c]
        if (cats and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in cats)
                and isinstance(s.dtype, pd.CategoricalDtype)
                and any(isinstance(v, str) for v in s.cat.categories)):
            # the training column held numbers (codes); here some cell is text, so the column
            # was read as text: match its numbers by value, the text is an unseen category
            parsed = pd.to_numeric(pd.Series(s.cat.categories, dtype=object).str.strip(),
                                   errors="coerce")
            new = [v if np.isnan(p) else (int(p) if float(p).is_integer() else float(p))
                   for v, p in zip(s.cat.categories, parsed)]
            values = [None if code < 0 else new[code] for code in s.cat.codes]
            X[c] = pd.Categorical(values, categories=list(dict.fromkeys(new)))
    return X


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError, TypeError):
        return os.path.abspath(a) == os.path.abspath(b)


def check_out_not_input(path, inputs):
    """Refuse an output path that names one of the command's input files (``inputs``:
    ``(option, path)`` pairs, a path None when not given): writing there would destroy the
    input (a typo such as ``--out train.csv``)."""
    if path == "-":
        return
    for option, src in inputs:
        if src is not None and _same_file(path, src):
            raise CLIError(f"--out {path!r} is also an input ({option}); writing there would "
                           "overwrite it: give another file name")


def _check_out(path, what, inputs=()):
    """Fail before the work when the output cannot be written, or would overwrite one of the
    input files (``inputs``, see check_out_not_input)."""
    if path == "-":
        if what == "model":
            raise CLIError("the model must go to a file (--out model.json), not to stdout")
        return
    check_out_not_input(path, inputs)
    if os.path.isdir(path):
        raise CLIError(f"--out {path!r} is a directory; give a file name for the {what}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CLIError(f"cannot write the {what} to {path!r}: the directory {parent!r} does not "
                       "exist")


def _as_label(v):
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _split_weight(X, weight, path):
    if weight is None:
        return X, None
    if not hasattr(X, "columns"):
        raise CLIError(f"--weight needs a CSV/Parquet file with named columns; {path!r} is not")
    cols = [str(c) for c in X.columns]
    if weight not in cols:
        raise ValueError(f"weight column {weight!r} is not in {path!r}")
    w = X[weight]
    X = X.drop(columns=weight)
    try:
        w = w.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        raise ValueError(f"weight column {weight!r} in {path!r} is not numeric") from None
    return X, w


def _ranking_queries(args, ranking):
    """The query options of the training and the validation file (None: not ranking)."""
    given = [flag for flag, v in (("--group", args.group), ("--qid-column", args.qid_column),
                                  ("--valid-group", args.valid_group)) if v]
    if not ranking:
        if given:
            raise CLIError(f"query groups ({', '.join(given)}) apply to a ranking objective "
                           f"only ({', '.join(names(task='ranking', trainable=True))})")
        return None, None
    if args.group and args.qid_column:
        raise CLIError("give the queries once: --group FILE or --qid-column COL")
    if args.valid_group and not args.valid:
        raise CLIError("--valid-group needs a validation file (--valid FILE)")
    return (dict(group_file=args.group, qid_column=args.qid_column),
            dict(group_file=args.valid_group, qid_column=args.qid_column))


def _need_queries(queries, path):
    """The Dataset's group=/qid= of a ranking file; a CLIError when none were found."""
    if queries is None:
        raise CLIError(f"a ranking objective needs the query groups of {path!r}: give "
                       f"--group FILE (query sizes, one a line), --qid-column COL (CSV/"
                       f"Parquet), qid: in a LibSVM file, or put them in {path + '.query'!r}")
    return queries.dataset_kwargs()


class TqdmCallback(TrainingCallback):
    """Advances a tqdm progress bar (on stderr) once per boosting round and shows the
    latest evaluation results."""

    def __init__(self, total, desc="training", disable=False, file=None):
        self.total = total
        self.desc = desc
        self.disable = disable
        self.file = file
        self.bar = None

    def before_training(self, model):
        self.bar = tqdm(total=self.total, desc=self.desc, unit="round", disable=self.disable,
                        file=self.file if self.file is not None else sys.stderr,
                        dynamic_ncols=True)
        return model

    def after_iteration(self, model, epoch, evals_log):
        if self.bar is not None:
            post = {f"{name}-{m}": _fmt_metric(vals[-1])
                    for name, ms in evals_log.items() for m, vals in ms.items() if vals}
            if post:
                self.bar.set_postfix(post, refresh=False)
            self.bar.update(1)
        return False

    def after_training(self, model):
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        return model


# -- commands -----------------------------------------------------------------------------
def cmd_train(args) -> int:
    import hardwood

    _check_out(args.out, "model", [("--data", args.data), ("--valid", args.valid),
                                    ("--group", args.group), ("--valid-group", args.valid_group)])
    params = parse_params(args.param)
    rounds = _pop_int(params, _ROUND_KEYS, "the number of rounds")
    if args.rounds is not None:
        if rounds is not None:
            raise CLIError("give the number of rounds once (--rounds or --param)")
        rounds = args.rounds
    rounds = 100 if rounds is None else rounds
    if rounds < 1:
        raise CLIError(f"--rounds must be a positive integer, got {rounds}")
    es = _pop_int(params, _ES_KEYS, "early stopping rounds")
    if args.early_stopping is not None:
        if es is not None:
            raise CLIError("give early stopping once (--early-stopping or --param)")
        es = args.early_stopping
    if es is not None and es < 1:
        raise CLIError(f"--early-stopping must be a positive integer, got {es}")
    if es is not None and not args.valid:
        raise CLIError("--early-stopping needs a validation file (--valid FILE)")
    if args.threads is not None:
        if any(k in params for k in ("n_jobs", "nthread", "num_threads", "n_threads")):
            raise CLIError("give the number of threads once (--threads or --param n_jobs=)")
        params["n_jobs"] = args.threads
    # check the parameters before reading any data
    from .train.params import ALIASES, resolve_params
    ranking = objective_class(resolve_params(params)["objective"]).task == "ranking"
    train_queries, valid_queries = _ranking_queries(args, ranking)
    max_bin = 256
    for k, v in params.items():
        if ALIASES.get(k, k) == "max_bin" and v is not None:
            max_bin = v

    kind = detect_format(args.data, args.format)
    if args.label is None and kind != "libsvm":
        raise CLIError("train needs --label COL (the label column's name or index)")
    t_read = time.perf_counter()
    cat = _categorical_list(args.categorical) or None
    weight = [args.weight] if args.weight else None
    X, y, names, queries = _read(args.data, args.label, args.format, no_header=args.no_header,
                                 sep=args.sep, categorical=cat, numeric=weight,
                                 queries=train_queries, header=args.header)
    X, w = _split_weight(X, args.weight, args.data)
    if y is None:
        raise CLIError(f"{args.data!r} has no label column")
    fn = names if kind == "libsvm" else None
    groups = _need_queries(queries, args.data) if ranking else {}
    train_set = hardwood.Dataset(X, y, weight=w, categorical_features=cat, max_bin=max_bin,
                                 feature_names=fn, **groups)
    valid_sets, valid_names = [train_set], ["train"]
    if args.valid:
        Xv, yv, _, queries = _read(args.valid, args.label, args.valid_format or args.format,
                                   no_header=args.no_header, sep=args.sep, info=train_set.info,
                                   numeric=weight, queries=valid_queries, header=args.header)
        Xv, wv = _split_weight(Xv, args.weight, args.valid)
        if yv is None:
            raise CLIError(f"{args.valid!r} has no label column")
        Xv = _align(Xv, train_set.info, args.valid, args.no_header)
        groups = _need_queries(queries, args.valid) if ranking else {}
        valid_sets.append(hardwood.Dataset(Xv, yv, weight=wv, reference=train_set, **groups))
        valid_names.append("valid")
    t_read = time.perf_counter() - t_read

    bar = TqdmCallback(rounds, desc="hardwood train", disable=args.quiet)
    t0 = time.perf_counter()
    model = hardwood.train(params, train_set, num_boost_round=rounds, valid_sets=valid_sets,
                           valid_names=valid_names, early_stopping_rounds=es, callbacks=[bar])
    t_train = time.perf_counter() - t0
    try:
        model.save(args.out)
    except OSError as e:
        raise OSError(f"cannot write the model to {args.out!r}: {e.strerror or e}") from None

    done = model.num_boosted_rounds
    n_queries = "" if train_set.group is None else f", {len(train_set.group) - 1} queries"
    parts = [f"trained {done} round{'s' if done != 1 else ''} in {t_train:.2f}s "
             f"({train_set.n_rows} rows x {train_set.n_features} features{n_queries}; "
             f"data {t_read:.2f}s)"]
    best = model.best_iteration
    at = best if best is not None else done - 1
    for name in valid_names:
        for m, vals in model.evals_result.get(name, {}).items():
            if vals:
                parts.append(f"{name}-{m} {_fmt_metric(vals[min(at, len(vals) - 1)])}")
    if best is not None:
        parts.append(f"best round {best + 1}")
    print("hardwood: " + "; ".join(parts) + f"; model written to {args.out}", flush=True)
    return 0


def _write_predictions(out, pred, output):
    pred = np.asarray(pred)
    if pred.ndim == 1:
        pred = pred[:, None]
    if output == "leaf":
        header = [f"leaf_{t}" for t in range(pred.shape[1])]
        fmt = "%d"
    else:
        header = [output] if pred.shape[1] == 1 else [f"{output}_{k}" for k in range(pred.shape[1])]
        fmt = "%.17g"
    kw = dict(delimiter=",", header=",".join(header), comments="", fmt=fmt)
    if out == "-":
        np.savetxt(sys.stdout, pred, **kw)
        sys.stdout.flush()
        return
    try:
        np.savetxt(out, pred, **kw)
    except OSError as e:
        raise OSError(f"cannot write the predictions to {out!r}: {e.strerror or e}") from None


def read_for_model(path, label, fmt, model, no_header=False, group_file=None,
                   qid_column=None, sep=None, header=False):
    """``(X, y, queries)`` of a data file read for a saved ``model``: columns typed,
    selected and ordered as its features. A ranking model's ``queries`` (a ``Queries``, or
    None when the file has none) come from ``group_file``, ``qid_column``, the file's
    ``qid:`` or ``<data>.query``; for another model they are None, and the two options an
    error."""
    if isinstance(label, str) and label in model.info.names:
        # (it was "X columns differ from the training columns (missing ['x0'])")
        raise CLIError(f"--label {label!r} names one of the model's features; give the label "
                       "column, or leave --label out to predict without scoring")
    X, y, _, queries = _read(path, label, fmt, no_header=no_header, sep=sep, info=model.info,
                             hint=False, header=header,
                             queries=_query_options(model.objective, group_file, qid_column))
    return _align(X, model.info, path, no_header), y, queries


def _query_options(objective, group_file, qid_column):
    """read_table_with_queries' options for a saved model's data: where a ranking model's
    queries are looked for; None for another model (which must not be given any)."""
    ranking = is_ranking(objective)
    if group_file or qid_column:
        if not ranking:
            raise CLIError("query groups (--group, --qid-column) score a ranking model only; "
                           f"this model's objective is {objective!r}")
        if group_file and qid_column:
            raise CLIError("give the queries once: --group FILE or --qid-column COL")
    return dict(group_file=group_file, qid_column=qid_column) if ranking else None


def add_query_arguments(parser):
    """``--group`` and ``--qid-column``: the queries a saved ranking model is scored over
    (``predict``, ``report``)."""
    parser.add_argument("--group", metavar="FILE",
                        help="ranking: the query sizes of --data, one a line, to score NDCG "
                             "and MAP against --label (default: the file's qid:, else "
                             "<data>.query)")
    parser.add_argument("--qid-column", metavar="COL",
                        help="ranking: the CSV/Parquet column of query ids (taken out of the "
                             "features)")


def load_any_model(path):
    """A hardwood model file, or an XGBoost (JSON, UBJ) or LightGBM (text) model file through
    ``hardwood.import_model``: ``hardwood predict`` refused those with a pointer to a Python
    function a command-line user cannot call."""
    import hardwood
    from .model.io import ModelFormatError

    try:
        return hardwood.load(path)
    except ModelFormatError as e:
        if "hardwood.import_model" not in str(e):
            raise
    return hardwood.import_model(path)


def cmd_predict(args) -> int:
    from .parallel import threads

    if args.threads is not None and args.threads == 0:
        raise CLIError("--threads must be a positive number (or -1 for all cores)")
    _check_out(args.out, "predictions", [("--model", args.model), ("--data", args.data),
                                          ("--group", args.group)])
    model = load_any_model(args.model)
    X, y, found = read_for_model(args.data, args.label, args.format, model,
                                 no_header=args.no_header, group_file=args.group,
                                 qid_column=args.qid_column, sep=args.sep, header=args.header)
    t0 = time.perf_counter()
    with threads(args.threads):
        pred = model.predict(X, output=args.output)
    t_pred = time.perf_counter() - t0
    _write_predictions(args.out, pred, args.output)
    n = pred.shape[0]
    parts = [f"predicted {n} rows in {t_pred:.3f}s ({args.output})"]
    scored = args.label is not None or detect_format(args.data, args.format) == "libsvm"
    if y is not None and scored and args.output == "value":
        from .metrics import score_model
        if is_ranking(model.objective):
            parts += _ranking_scores(model, y, pred, found, args.data)
        scores, problem = score_model(model, y, pred)
        parts += [f"{m} {_fmt_metric(v)}" for m, v in scores]
        if problem is not None:
            parts.append(f"not scored: {problem} in {args.data!r}")
    where = "stdout" if args.out == "-" else args.out
    print("hardwood: " + "; ".join(parts) + f"; written to {where}",
          file=sys.stderr if args.out == "-" else sys.stdout, flush=True)
    return 0


def _ranking_scores(model, y, pred, queries, path):
    """``hardwood predict``'s scores of a ranking model: NDCG@1, 3, 10 and MAP@10 over the
    file's queries, with the model's ``label_gain``; a hint when the queries are unknown."""
    from .metrics import score_ranking

    if queries is None:
        return [f"no ranking scores: {path!r} has no query groups (give --group FILE or "
                f"--qid-column COL, qid: in a LibSVM file, or {path + '.query'!r})"]
    ptr = queries.boundaries(y.shape[0])
    scores, problem = score_ranking(model, y, pred, ptr)
    if problem is not None:
        return [f"not scored: {problem} in {path!r}"]
    return [f"{m} {_fmt_metric(v)}" for m, v in scores] + [f"{len(ptr) - 1} queries"]


def cmd_demo(args) -> int:
    import hardwood
    from sklearn.datasets import make_classification
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    from .parallel import threads

    if args.rows < 100:
        raise CLIError(f"--rows must be at least 100, got {args.rows}")
    if args.features < 2:
        raise CLIError(f"--features must be at least 2, got {args.features}")
    if args.rounds < 1:
        raise CLIError(f"--rounds must be a positive integer, got {args.rounds}")
    if args.threads is not None and args.threads == 0:
        raise CLIError("--threads must be a positive number (or -1 for all cores)")
    objective = DEFAULT_OBJECTIVE["binary"]
    params = {"objective": objective, "max_depth": 6, "learning_rate": 0.3,
              "eval_metric": ["logloss", "auc"], "n_jobs": args.threads,
              "random_state": args.seed}
    t0 = time.perf_counter()
    n_inf = max(2, min(args.features, args.features // 2 + 1))
    X, y = make_classification(n_samples=args.rows, n_features=args.features,
                               n_informative=n_inf, n_redundant=min(2, args.features - n_inf),
                               flip_y=0.02, class_sep=1.0, random_state=args.seed)
    X = X.astype(np.float32)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=args.seed,
                                              stratify=y)
    t_data = time.perf_counter() - t0
    with threads(args.threads) as n_threads:  # the number the kernels will use
        pass
    print(f"hardwood demo: {args.rows:,} x {args.features} synthetic binary classification "
          f"(make_classification, float32), 80/20 split; {objective}, depth 6, "
          f"{args.rounds} rounds, {n_threads} threads", flush=True)
    print(f"  data           {t_data:8.3f} s", flush=True)

    # compile the Numba kernels first (cached on disk afterwards), so the timings below
    # measure training and prediction, not compilation
    t0 = time.perf_counter()
    k = min(len(y_tr), 2000)
    warm = hardwood.train(params, hardwood.Dataset(X_tr[:k], y_tr[:k]), num_boost_round=2)
    with threads(args.threads):
        warm.predict(X_te[:100])
    t_warm = time.perf_counter() - t0
    print(f"  JIT warm-up    {t_warm:8.3f} s (Numba compiles on first use, cached afterwards)",
          flush=True)

    t0 = time.perf_counter()
    train_set = hardwood.Dataset(X_tr, y_tr)
    t_bin = time.perf_counter() - t0
    bar = TqdmCallback(args.rounds, desc="hardwood demo", disable=args.quiet)
    t0 = time.perf_counter()
    model = hardwood.train(params, train_set, num_boost_round=args.rounds, callbacks=[bar])
    t_train = time.perf_counter() - t0
    t0 = time.perf_counter()
    with threads(args.threads):
        p = model.predict(X_te)
    t_pred = time.perf_counter() - t0
    auc = roc_auc_score(y_te, p)
    acc = float(np.mean((p > 0.5) == (y_te > 0.5)))
    print(f"  binning        {t_bin:8.3f} s ({len(y_tr):,} training rows)")
    print(f"  training       {t_train:8.3f} s ({model.num_boosted_rounds} rounds)")
    print(f"  prediction     {t_pred:8.3f} s ({len(y_te):,} test rows)")
    print(f"  test AUC       {auc:8.4f}")
    print(f"  test accuracy  {acc:8.4f}", flush=True)
    return 0


# -- parser and entry point -----------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(prog="hardwood", description="Fast gradient-boosted trees.")
    parser.add_argument("--version", action="version", version=f"hardwood {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{train,predict,demo,report,simulate}")

    fmt_help = "data format: csv (also tsv/txt), parquet or libsvm (default: from the extension)"

    t = sub.add_parser("train", help="train a model on a data file",
                       description="Train a gradient-boosted tree model on a CSV, Parquet or "
                                   "LibSVM file and save it as JSON. A CSV column is numeric "
                                   "when every cell is a number (empty cells and NA tokens are "
                                   "missing values), categorical when no cell is; a column "
                                   "that mixes numbers and text is an error naming the first "
                                   "odd cells, unless given to --categorical.")
    t.add_argument("--data", required=True, metavar="FILE", help="training data")
    t.add_argument("--label", metavar="COL",
                   help="label column: name or index (not needed for LibSVM)")
    t.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="a training parameter (XGBoost names), e.g. objective="
                        f"{DEFAULT_OBJECTIVE['binary']}; repeat for more; a comma makes a list "
                        "(eval_metric=auc,logloss). Objectives: "
                        f"{', '.join(names(trainable=True))}, or an alias ({', '.join(ALIASES)})")
    t.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="boosting rounds (default 100)")
    t.add_argument("--valid", metavar="FILE", help="validation data (same columns)")
    t.add_argument("--valid-format", metavar="FMT", help="format of --valid (default: --format)")
    t.add_argument("--early-stopping", type=int, default=None, metavar="N",
                   help="stop when the validation metric has not improved for N rounds")
    t.add_argument("--weight", metavar="COL", help="sample-weight column (CSV/Parquet)")
    t.add_argument("--categorical", metavar="COLS",
                   help="comma-separated columns to use as categorical features, whatever "
                        "their cells hold. Otherwise a CSV column is numeric when every cell "
                        "is a number (empty cells, NA, N/A, nan, null are missing values), "
                        "categorical when no cell is, and an error naming the cells when it "
                        "mixes numbers and text (a typo in a numeric column is never turned "
                        "into categories); Parquet columns keep the file's types")
    t.add_argument("--group", metavar="FILE",
                   help="ranking: the query sizes of --data, one integer a line (LightGBM's "
                        ".query file); by default a LibSVM file's own qid:, else "
                        "<data>.query beside the data file")
    t.add_argument("--valid-group", metavar="FILE",
                   help="ranking: the query sizes of --valid (default: its qid: or "
                        "<valid>.query)")
    t.add_argument("--qid-column", metavar="COL",
                   help="ranking: the column of query ids (CSV/Parquet; each query's rows "
                        "consecutive), taken out of the features, in --data and --valid")
    t.add_argument("--format", metavar="FMT", help=fmt_help)
    add_text_arguments(t, "CSV without a header row (columns are then chosen by index)")
    t.add_argument("--threads", type=int, default=None, metavar="N",
                   help="threads (default: all cores)")
    t.add_argument("--out", "-o", required=True, metavar="FILE", help="model file to write (JSON)")
    t.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_train)

    p = sub.add_parser("predict", help="predict with a saved model",
                       description="Predict the rows of a data file with a saved model and "
                                   "write the predictions as CSV. Columns take the model's "
                                   "types: a cell of a numeric feature that is not a number "
                                   "(nor empty, nor an NA token) is an error naming the cell; "
                                   "an unseen value of a categorical feature counts as "
                                   "missing.")
    p.add_argument("--model", "-m", required=True, metavar="FILE", help="model file: hardwood JSON, or an XGBoost (JSON, UBJ) or LightGBM (text) model, imported")
    p.add_argument("--data", required=True, metavar="FILE", help="data to predict")
    p.add_argument("--label", metavar="COL",
                   help="label column to leave out of the features (and to score against)")
    p.add_argument("--output", choices=OUTPUTS, default="value",
                   help="value (probabilities/predictions), raw (margins) or leaf (leaf ids)")
    p.add_argument("--format", metavar="FMT", help=fmt_help)
    add_text_arguments(p)
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="threads (default: all cores)")
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="CSV file for the predictions ('-' for stdout)")
    add_query_arguments(p)
    p.set_defaults(func=cmd_predict)

    d = sub.add_parser("demo", help="train and predict on built-in synthetic data",
                       description="Train and predict on a synthetic binary classification "
                                   "set (scikit-learn's make_classification) and print the "
                                   "timings, the test AUC and the accuracy.")
    d.add_argument("--rows", type=int, default=200_000, metavar="N", help="rows (default 200000)")
    d.add_argument("--features", type=int, default=28, metavar="N", help="features (default 28)")
    d.add_argument("--rounds", type=int, default=100, metavar="N", help="rounds (default 100)")
    d.add_argument("--threads", type=int, default=None, metavar="N",
                   help="threads (default: all cores)")
    d.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (default 0)")
    d.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    d.set_defaults(func=cmd_demo)

    from . import report
    report.add_parser(sub)
    from .accel import cli as accel_cli
    accel_cli.add_parser(sub)  # hardwood simulate (issue 16)
    return parser


def _error(msg) -> int:
    print(f"hardwood: error: {msg}", file=sys.stderr, flush=True)
    return EXIT_USAGE


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0, or 2 for bad files/arguments)."""
    from .model.io import ModelFormatError

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except CLIError as e:
        return _error(e)
    except SystemExit as e:  # --help, --version
        return e.code if isinstance(e.code, int) else 0
    if not getattr(args, "command", None):
        return _error("choose a command: train, predict, demo, report or simulate "
                      "(see 'hardwood --help')")
    try:
        return args.func(args)
    except CLIError as e:
        return _error(e)
    except BrokenPipeError:  # e.g. `hardwood predict ... --out - | head`
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141
    except (ModelFormatError, ValueError, TypeError, FileNotFoundError, OSError, ImportError,
            ArithmeticError, RuntimeError) as e:  # (labels of 1e308; device='cuda', no GPU)
        return _error(_one_line(e))
    except KeyboardInterrupt:
        print("hardwood: interrupted", file=sys.stderr, flush=True)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
