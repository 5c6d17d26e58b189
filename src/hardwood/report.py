"""A model report: one self-contained HTML page (inline CSS, plots as base64 PNG, no script
and no network) that says what a model is and how it behaves.

    hardwood report --model model.json [--data test.csv --label y] --out report.html

or, from Python, ``write_report(model, "report.html", X=X_test, y=y_test)``. The page holds:
the parameters and the model's shape (trees, depths, leaves); the feature importances; the
learning curves and the training profile (steps ①②③⑤) when they were recorded; the
prediction runtime that ``runtime='auto'`` picks and its measured throughput; and, given data,
the metrics and a SHAP summary. A model file keeps the learning curves but not the training
profile (its timings would make two files of one seed differ); where a model has either
missing, the page says so rather than leaving it out silently.
"""
from __future__ import annotations

import base64
import datetime
import html
import io
import os
import time

import numpy as np

from .atomic_file import atomic_open

from . import plot as hwplot

SHAP_ROWS = 1000  # rows explained for the SHAP summary (a random sample of bigger data)
BATCH_ROWS = 10_000  # rows per batch when measuring throughput
ONE_ROW_CALLS = 200
IMPORTANCE_ROWS = 20  # features in the importance plots and table
TREE_PLOT_LEAVES = 32  # the first tree is drawn when it has at most this many leaves
PROFILE_STEPS = (("histogram", "① histograms"), ("split", "② split finding"),
                 ("partition", "③ partition"), ("update", "⑤ update"), ("other", "other"))
DPI = 110

CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#222;margin:0;
background:#f6f7f9}
main{max-width:1080px;margin:0 auto;padding:24px 28px 48px;background:#fff;
box-shadow:0 0 12px rgba(0,0,0,.06)}
h1{font-size:1.6em;margin:.2em 0 .1em}h2{font-size:1.2em;margin:1.8em 0 .6em;
border-bottom:2px solid #e3e7ee;padding-bottom:.25em}
.sub{color:#666;margin:0 0 1em}
table{border-collapse:collapse;margin:.4em 0 1em;font-size:.92em}
td,th{padding:3px 12px 3px 0;text-align:left;vertical-align:top}
th{color:#555;font-weight:600;border-bottom:1px solid #ddd}
tr:nth-child(even) td{background:#fafbfc}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.grid{display:flex;flex-wrap:wrap;gap:8px 36px;align-items:flex-start}
img{max-width:100%;height:auto;display:block;margin:.4em 0}
.note{background:#fff8e6;border-left:4px solid #e0b040;padding:8px 12px;margin:.6em 0}
code{background:#f0f2f5;padding:1px 4px;border-radius:3px}
"""


# -- pieces of the page -------------------------------------------------------------------
def _esc(v) -> str:
    return html.escape(str(v), quote=True)


def _num(v, digits=4) -> str:
    if isinstance(v, (bool, np.bool_)) or v is None:
        return str(v)
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    v = float(v)
    return f"{v:,.0f}" if abs(v) >= 1e5 else f"{v:.{digits}g}"


def _table(rows, header=None, numeric=()):
    """An HTML table of ``rows`` (cells already text); columns in ``numeric`` align right."""
    out = ["<table>"]
    if header:
        out.append("<tr>" + "".join(f"<th>{_esc(h)}</th>" for h in header) + "</tr>")
    for row in rows:
        out.append("<tr>" + "".join(
            f"<td class=num>{_esc(c)}</td>" if k in numeric else f"<td>{_esc(c)}</td>"
            for k, c in enumerate(row)) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _note(text):
    return f"<p class=note>{text}</p>"


def _figure(figsize):
    """A matplotlib Figure outside pyplot (no global state, no GUI backend)."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize, layout="constrained")


def _img(fig, alt):
    """The figure as an inline base64 PNG."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{data}">'


# -- sections -----------------------------------------------------------------------------
def _shape_rows(model):
    trees = model.trees
    depths = np.array([t.depth() for t in trees]) if trees else np.zeros(1, int)
    leaves = np.array([t.n_leaves for t in trees]) if trees else np.zeros(1, int)
    n_cat = int(np.count_nonzero(model.info.is_categorical))

    def spread(a):
        return f"{int(a.min())} / {np.median(a):g} / {int(a.max())}"

    rows = [("objective", model.objective),
            ("outputs", model.n_outputs),
            ("boosting rounds", model.num_boosted_rounds),
            ("trees", model.num_trees),
            ("features", f"{model.n_features} ({model.n_features - n_cat} numeric, "
                         f"{n_cat} categorical)"),
            ("leaves (total)", _num(int(leaves.sum()))),
            ("leaves per tree (min / median / max)", spread(leaves)),
            ("depth per tree (min / median / max)", spread(depths)),
            ("base score", ", ".join(_num(v, 6) for v in model.base_score))]
    if model.best_iteration is not None:
        rows.append(("best iteration (early stopping)", model.best_iteration + 1))
        if model.best_score is not None:
            rows.append(("best score", _num(model.best_score, 6)))
    return [(k, str(v)) for k, v in rows]


def _params_section(model):
    params = [(k, v) for k, v in model.params.items() if v is not None]
    if not params:
        return _note("No training parameters are recorded in this model (an imported model "
                     "keeps none).")
    return _table([(k, ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v))
                   for k, v in params], header=("parameter", "value"))


def _importance_section(model):
    # the rounds predict uses (up to best_iteration), those of the SHAP summary: the
    # importances counted every round of an early-stopped model, the summary its best ones
    rounds = (None if model.best_iteration is None
              else (0, min(model.best_iteration + 1, model.num_boosted_rounds)))
    gain = model.feature_importances("gain", rounds)
    if not np.any(model.feature_importances("weight", rounds) > 0):
        return _note("The trees have no splits, so no feature has any importance.")
    fig = _figure((11, max(2.6, 0.3 * min(IMPORTANCE_ROWS, np.count_nonzero(gain)) + 1.4)))
    ax_gain, ax_split = fig.subplots(1, 2)
    hwplot.plot_importance(model, "gain", ax=ax_gain, max_num_features=IMPORTANCE_ROWS,
                           title="Gain", iteration_range=rounds)
    hwplot.plot_importance(model, "split", ax=ax_split, max_num_features=IMPORTANCE_ROWS,
                           title="Splits", ylabel="", iteration_range=rounds)
    kinds = ("gain", "total_gain", "weight", "cover")
    imp = {k: model.feature_importances(k, rounds) for k in kinds}
    order = np.argsort(-imp["total_gain"], kind="stable")[:IMPORTANCE_ROWS]
    rows = [(model.feature_names[j], *(_num(imp[k][j]) for k in kinds)) for j in order
            if imp["weight"][j] > 0]
    counted = ("" if rounds is None else _note(
        f"Over rounds 1-{rounds[1]}, those the model predicts with (early stopping)."))
    return (counted + _img(fig, "feature importance: gain and splits")
            + _table(rows, header=("feature", "mean gain", "total gain", "splits", "mean cover"),
                     numeric=(1, 2, 3, 4)))


def _curves_section(model):
    curves = {name: ms for name, ms in (model.evals_result or {}).items()
              if any(len(v) for v in ms.values())}
    if not curves:
        return _note("Learning curves: not recorded (this model holds no evaluation history; "
                     "<code>hardwood.train</code> records one for its <code>valid_sets</code>, "
                     "and the model file keeps it).")
    metrics = list(dict.fromkeys(m for ms in curves.values() for m in ms))
    fig = _figure((min(5.2 * len(metrics), 15.6), 3.6))
    axes = np.atleast_1d(fig.subplots(1, len(metrics)))
    for ax, m in zip(axes, metrics):
        hwplot.plot_metric(curves, m, ax=ax, best_iteration=model.best_iteration)
    return _img(fig, "learning curves")


def _profile_section(model):
    prof = model.training_profile or {}
    if not prof:
        return _note("Training profile: not recorded (this model holds none; the Model "
                     "that <code>hardwood.train</code> returns has it, a model file does "
                     "not keep it).")
    total = float(prof.get("total", 0.0)) or 1e-12
    steps = [(label, float(prof.get(key, 0.0))) for key, label in PROFILE_STEPS]
    rows = [(label, f"{s:.3f}", f"{100 * s / total:.1f}%") for label, s in steps]
    rows.append(("total", f"{total:.3f}", "100%"))
    for key in ("h2d_bytes", "d2h_bytes"):
        if key in prof:
            rows.append((key.replace("_bytes", " MiB").replace("2", "→"),
                         f"{prof[key] / 2**20:.1f}", ""))
    fig = _figure((7, 2.6))
    ax = fig.subplots()
    labels = [label for label, _ in steps][::-1]
    ax.barh(labels, [s for _, s in steps][::-1], color=hwplot.BAR_COLOR, height=0.6)
    ax.set_xlabel("seconds")
    ax.set_title(f"Training time by step ({total:.3f} s in all)")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ('<div class=grid>' + _table(rows, header=("step", "seconds", "share"),
                                        numeric=(1, 2))
            + _img(fig, "training profile") + "</div>")


def synthetic_rows(model, n, seed=0):
    """``n`` rows for timing when no data is given: each numeric feature drawn between its
    smallest and largest split threshold (widened by a tenth each way), each categorical one
    among its categories (a DataFrame then; pandas is needed)."""
    rng = np.random.default_rng(seed)
    d = model.n_features
    lo, hi = np.full(d, np.inf), np.full(d, -np.inf)
    for t in model.trees:
        num = (t.feature >= 0) & ~t.is_categorical
        if num.any():
            f, thr = t.feature[num], t.threshold[num]
            np.minimum.at(lo, f, thr)
            np.maximum.at(hi, f, thr)
    unused = ~np.isfinite(lo) | ~np.isfinite(hi)
    lo[unused], hi[unused] = 0.0, 1.0
    pad = 0.1 * (hi - lo) + 1e-3
    X = rng.uniform(lo - pad, hi + pad, size=(n, d))
    if not np.any(model.info.is_categorical):
        return X
    import pandas as pd

    cols = {}
    for j, name in enumerate(model.feature_names):
        cats = model.info.categories[j]
        if model.info.is_categorical[j]:
            cols[name] = pd.Categorical.from_codes(rng.integers(0, max(len(cats), 1), n)
                                                   if cats else np.full(n, -1), cats or [])
        else:
            cols[name] = X[:, j]
    return pd.DataFrame(cols)


def _median_seconds(f, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def measure_runtime(model, X=None, batch_rows=BATCH_ROWS, one_row_calls=ONE_ROW_CALLS):
    """What ``runtime='auto'`` picks for a batch and for one row, and the measured
    throughput (median of repeated runs after a warm-up call) on ``X`` (tiled or cut to
    ``batch_rows`` rows) or on :func:`synthetic_rows`. Returns a dict."""
    import numba

    from .predict.base import compile as compile_runtime

    if not model.trees:
        raise ValueError("the model has no trees")
    source = "the given data"
    if X is None:
        X, source = synthetic_rows(model, batch_rows), "synthetic rows (no data given)"
    n = X.shape[0]  # (len() of a sparse matrix is an error)
    if n == 0:
        raise ValueError("no rows to time prediction on")
    take = np.arange(batch_rows) % n
    if hasattr(X, "iloc"):
        X = X.iloc[take]
    elif hasattr(X, "tocsr"):  # a scipy sparse matrix (a LibSVM file): its rows, densified
        X = X.tocsr()[take].toarray()
    else:
        X = np.asarray(X)[take]
    one = X.iloc[:1] if hasattr(X, "iloc") else X[:1]
    t0 = time.perf_counter()
    rt = compile_runtime(model, "auto")
    rt.predict(X)
    rt.predict(one)
    warm = time.perf_counter() - t0
    batch_s = _median_seconds(lambda: rt.predict(X), 5)
    one_s = _median_seconds(lambda: rt.predict(one), one_row_calls)
    return {"batch_runtime": rt.choose(batch_rows), "one_row_runtime": rt.choose(1),
            "batch_rows": batch_rows, "rows_per_second": batch_rows / batch_s,
            "batch_seconds": batch_s, "one_row_microseconds": one_s * 1e6,
            "compile_seconds": warm, "threads": numba.get_num_threads(), "source": source,
            "row_kind": "DataFrame" if hasattr(X, "iloc") else "NumPy"}


def _runtime_section(model, X):
    try:
        r = measure_runtime(model, X)
    except (ValueError, ImportError) as e:  # no trees; categorical features without pandas
        return _note(f"Prediction runtime: not measured ({_esc(e)}).")
    rows = [("auto picks, for a batch", r["batch_runtime"]),
            ("auto picks, for one row", r["one_row_runtime"]),
            (f"throughput, batch of {r['batch_rows']:,} rows",
             f"{r['rows_per_second']:,.0f} rows/s ({r['batch_seconds'] * 1e3:.2f} ms a batch)"),
            (f"latency, one row (a {r['row_kind']} row, conversion included)",
             f"{r['one_row_microseconds']:.1f} µs"),
            ("threads", r["threads"]),
            ("measured on", r["source"]),
            ("first calls (layout and compilation)", f"{r['compile_seconds']:.2f} s")]
    return (_table([(k, str(v)) for k, v in rows])
            + "<p class=sub>Medians of 5 batches and of "
              f"{ONE_ROW_CALLS} one-row calls, after a warm-up call, on this machine.</p>")


def _metrics_rows(model, pred, y, ptr):
    """``(rows, problem)``: the metric table's rows, or why the labels cannot be scored.
    ``ptr``: the query boundaries of a ranking model's data (None: not given)."""
    from .metrics import score_model, score_ranking
    from .objectives import is_ranking

    try:
        y = np.asarray(y, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        return [], "the labels are not numbers"
    if is_ranking(model.objective):
        if ptr is None:
            return [], ("a ranking model is scored over queries: give them (group= or qid=; "
                        "--group FILE or --qid-column COL)")
        scores, problem = score_ranking(model, y, pred, ptr)
    else:
        scores, problem = score_model(model, y, pred)
    return [(m, _num(v, 6)) for m, v in scores], problem


def _data_section(model, X, y, data_name, shap_rows, ptr=None):
    n = X.shape[0]  # (len() of a sparse matrix is an error)
    queries = "" if ptr is None else f" in {len(ptr) - 1:,} queries"
    parts = [f"<p class=sub>{_esc(data_name)}: {n:,} rows{queries}.</p>"]
    if y is None:
        parts.append(_note("Metrics: no labels given (<code>--label COL</code>)."))
    else:
        rows, problem = _metrics_rows(model, model.predict(X), y, ptr)
        if rows:
            parts.append(_table(rows, header=("metric", "value"), numeric=(1,)))
        elif problem is not None:
            parts.append(_note(f"Metrics: none; {_esc(problem)}."))
        else:
            parts.append(_note(f"Metrics: none of objective {_esc(model.objective)} "
                               "applies to these labels (or hardwood defines none for it)."))
    if n > shap_rows:
        pick = np.sort(np.random.default_rng(0).choice(n, shap_rows, replace=False))
        # (a sparse matrix by its own row indexing: np.asarray made it a 0-d object array)
        Xs = (X.iloc[pick] if hasattr(X, "iloc") else X.tocsr()[pick] if hasattr(X, "tocsr")
              else np.asarray(X)[pick])
        parts.append(f"<p class=sub>SHAP values of {shap_rows:,} rows drawn at random.</p>")
    else:
        Xs = X
    try:
        model.shap_data()  # a model without cover cannot be explained: say why
    except ValueError as e:
        parts.append(_note(f"SHAP summary: not available ({_esc(e)})."))
        return "".join(parts)
    classes = range(model.n_outputs) if model.n_outputs <= 3 else range(1)
    for k in classes:
        fig = _figure((8.5, max(2.8, 0.4 * min(20, model.n_features) + 1.6)))
        hwplot.plot_shap_summary(model, Xs, ax=fig.subplots(),
                                 class_index=k if model.n_outputs > 1 else None)
        parts.append(_img(fig, f"SHAP summary{'' if model.n_outputs == 1 else f' class {k}'}"))
    if model.n_outputs > len(classes):
        parts.append(f"<p class=sub>Class 0 of {model.n_outputs} shown.</p>")
    return "".join(parts)


def _tree_section(model):
    if not model.trees or model.trees[0].n_leaves > TREE_PLOT_LEAVES:
        return ""
    t = model.trees[0]
    fig = _figure((min(max(6.0, 1.5 * t.n_leaves), 16.0), min(1.2 * (t.depth() + 1), 9.0)))
    hwplot.plot_tree(model, 0, ax=fig.subplots(), fontsize=8)
    return "<h2>The first tree</h2>" + _img(fig, "tree 0")


def _class_codes(classes, y):
    """A classifier estimator's labels ``y`` as the codes of its model (their index in
    ``classes``): labels {1, 2} or 'no'/'yes' were scored as they were, "not in [0, 1]".
    A label outside ``classes`` is a ValueError naming it."""
    y = np.asarray(y).reshape(-1)
    classes = np.asarray(classes)
    idx = np.searchsorted(classes, y)
    idx = np.clip(idx, 0, len(classes) - 1)
    unknown = classes[idx] != y
    if np.any(unknown):
        raise ValueError(f"y holds {y[unknown][0]!r}, which is not one of the classifier's "
                         f"classes_ {classes.tolist()[:10]}")
    return idx.astype(np.float64)


def build_report(model, X=None, y=None, *, group=None, qid=None, model_name=None,
                 data_name=None, shap_rows=SHAP_ROWS) -> str:
    """The report's HTML text (see the module's docstring). ``X``, ``y``: data to score and
    explain (``y`` may be None). ``group`` (query sizes) or ``qid`` (one id per row): the
    queries of a ranking model's data, which its metrics are taken over."""
    if y is not None and getattr(model, "classes_", None) is not None:
        y = _class_codes(model.classes_, y)  # an estimator's labels, as its predict gives them
    model = hwplot.as_model(model)
    hwplot.require_matplotlib()
    if y is not None and X is None:
        raise ValueError("labels without data: give X as well as y")
    from .data.convert import as_pandas_if_named_table

    X = as_pandas_if_named_table(X)  # an Arrow table's rows are sampled by name, not position
    if X is not None and X.shape[0] == 0:  # (it was "X has no rows to explain", or a
        # ZeroDivisionError from the metrics)
        raise ValueError("X has no rows: give data to score and explain, or leave X out for "
                         "a report of the model alone")
    if X is not None and y is not None and X.shape[0] != len(np.asarray(y).reshape(-1)):
        raise ValueError(f"X has {X.shape[0]} rows but y has {len(np.asarray(y).reshape(-1))}")
    ptr = None
    if group is not None or qid is not None:
        from .objectives import is_ranking
        from .ranking import group_ptr

        if X is None:
            raise ValueError("queries (group=, qid=) without data: give X as well")
        if not is_ranking(model.objective):
            raise ValueError("queries (group=, qid=) score a ranking model only; this "
                             f"model's objective is {model.objective!r}")
        ptr = group_ptr(X.shape[0], group, qid)
    from . import __version__

    if X is not None:
        model.prepare(X)  # a wrong feature count or a bad column fails here, before the work
    title = model_name or "hardwood model"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = [f"<h1>{_esc(title)}</h1>",
            f"<p class=sub>{_esc(model.objective)} · {model.num_trees:,} trees · "
            f"{model.n_features} features · hardwood {_esc(__version__)} · {stamp}</p>",
            "<h2>Model</h2><div class=grid>",
            _table(_shape_rows(model), header=("shape", "")),
            "<div>" + _params_section(model) + "</div></div>",
            "<h2>Feature importance</h2>", _importance_section(model),
            "<h2>Learning curves</h2>", _curves_section(model),
            "<h2>Training profile</h2>", _profile_section(model),
            "<h2>Prediction runtime</h2>", _runtime_section(model, X)]
    if X is not None:
        body += ["<h2>On the data</h2>",
                 _data_section(model, X, y, data_name or "the given data", shap_rows, ptr)]
    body.append(_tree_section(model))
    return ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            '<meta name=viewport content="width=device-width,initial-scale=1">'
            f"<title>{_esc(title)}</title><style>{CSS}</style></head><body><main>"
            + "".join(body) + "</main></body></html>\n")


def write_report(model, out, X=None, y=None, **kwargs):
    """Write :func:`build_report`'s page to ``out`` (written whole, or not at all)."""
    text = build_report(model, X, y, **kwargs)
    with atomic_open(out, "w", encoding="utf-8") as fh:
        fh.write(text)
    return out


# -- the command line -------------------------------------------------------------------
def add_parser(sub):
    """The ``hardwood report`` subcommand, on the CLI's subparsers."""
    r = sub.add_parser("report", help="write an HTML report of a saved model",
                       description="Write one self-contained HTML page about a saved model: "
                                   "its parameters and shape, feature importance, the "
                                   "prediction runtime 'auto' picks and its measured "
                                   "throughput and, given data, its metrics and a SHAP "
                                   f"summary. Needs matplotlib ({hwplot.INSTALL_HINT}).")
    r.add_argument("--model", "-m", required=True, metavar="FILE", help="model file: hardwood JSON, or an XGBoost (JSON, UBJ) or LightGBM (text) model, imported")
    r.add_argument("--data", metavar="FILE", help="data to score and explain (optional)")
    r.add_argument("--label", metavar="COL", help="label column of --data (for the metrics)")
    r.add_argument("--format", metavar="FMT",
                   help="data format: csv, parquet or libsvm (default: from the extension)")
    from .cli import add_query_arguments, add_text_arguments

    add_text_arguments(r)
    add_query_arguments(r)
    r.add_argument("--shap-rows", type=int, default=SHAP_ROWS, metavar="N",
                   help=f"rows explained in the SHAP summary (default {SHAP_ROWS})")
    r.add_argument("--threads", type=int, default=None, metavar="N",
                   help="threads (default: all cores)")
    r.add_argument("--out", "-o", required=True, metavar="FILE", help="HTML file to write")
    r.set_defaults(func=run)
    return r


def run(args) -> int:
    from .cli import CLIError, check_out_not_input, load_any_model, read_for_model
    from .parallel import threads

    out = args.out
    if out == "-" or os.path.isdir(out):
        raise CLIError(f"--out {out!r}: give a file name for the report")
    check_out_not_input(out, [("--model", args.model), ("--data", args.data),
                              ("--group", args.group)])
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise CLIError(f"cannot write the report to {out!r}: its directory does not exist")
    if args.label is not None and args.data is None:
        raise CLIError("--label needs --data")
    if args.shap_rows < 1:
        raise CLIError(f"--shap-rows must be a positive integer, got {args.shap_rows}")
    if args.threads is not None and args.threads == 0:
        raise CLIError("--threads must be a positive number (or -1 for all cores)")
    hwplot.require_matplotlib()  # before reading anything
    if (args.group or args.qid_column) and args.data is None:
        raise CLIError("--group and --qid-column need --data")
    model = load_any_model(args.model)
    X = y = queries = None
    if args.data is not None:
        X, y, queries = read_for_model(args.data, args.label, args.format, model,
                                       no_header=args.no_header, sep=args.sep,
                                       group_file=args.group, qid_column=args.qid_column,
                                       header=args.header)
    if queries is not None:
        queries.boundaries(X.shape[0])  # sizes that do not add up: an error naming the file
    t0 = time.perf_counter()
    with threads(args.threads):
        write_report(model, out, X, y, **({} if queries is None else queries.dataset_kwargs()),
                     model_name=os.path.basename(args.model),
                     data_name=None if args.data is None else os.path.basename(args.data),
                     shap_rows=args.shap_rows)
    print(f"hardwood: report of {args.model} written to {out} "
          f"({time.perf_counter() - t0:.1f}s)", flush=True)
    return 0
