"""``hardwood simulate``: the Booster accelerator model from the command line.

    hardwood simulate --preset paper [--json] [--plot DIR] [--datasets iot,higgs,...]
                      [--traced-rows N] [--traced-rounds N]
    hardwood simulate --data FILE --label COL [--param k=v ...] [--rounds N]
                      [--rows N] [--trees N] [--json] [--plot DIR]
    hardwood simulate --constants

``--preset paper`` traces the five stand-ins of the paper's Table III and prints Figs. 6-13
as tables beside the paper's numbers; ``--data`` traces a training on the user's file with
the user's parameters and models it at ``--rows`` rows and ``--trees`` trees (default: the
file's rows and ``--rounds``). ``--json`` ends the output with one JSON line.
"""
from __future__ import annotations

import sys

PRESETS = ("paper",)


def add_parser(sub):
    s = sub.add_parser(
        "simulate", help="model training on the Booster accelerator (the paper's experiment)",
        description="Trace a real hardwood training and model its time on the Booster "
                    "accelerator, an Ideal 32-core, an Ideal GPU and the inter-record design "
                    "(He, Vijaykumar, Thottethodi). --preset paper runs the paper's experiment "
                    "on synthetic stand-ins of its five data sets; --data FILE runs the model "
                    "on your own data.")
    s.add_argument("--preset", metavar="NAME", help="'paper': the paper's experiment")
    s.add_argument("--data", metavar="FILE", help="your own data (CSV, Parquet or LibSVM)")
    s.add_argument("--label", metavar="COL", help="label column of --data")
    s.add_argument("--format", metavar="FMT", help="format of --data (default: the extension)")
    s.add_argument("--categorical", metavar="COLS", help="comma-separated categorical columns")
    s.add_argument("--param", "-p", action="append", default=[], metavar="KEY=VALUE",
                   help="a training parameter for --data (XGBoost names)")
    s.add_argument("--rounds", type=int, default=50, metavar="N",
                   help="--data: rounds traced (default 50)")
    s.add_argument("--rows", type=int, default=None, metavar="N",
                   help="--data: rows to model (default: the file's rows)")
    s.add_argument("--trees", type=int, default=None, metavar="N",
                   help="--data: trees to model (default: --rounds x outputs)")
    s.add_argument("--datasets", metavar="NAMES",
                   help="--preset paper: a comma-separated subset of iot,higgs,allstate,"
                        "mq2008,flight")
    s.add_argument("--traced-rows", type=int, default=50_000, metavar="N",
                   help="--preset paper: rows of each stand-in trained for real (default "
                        "50000)")
    s.add_argument("--traced-rounds", type=int, default=100, metavar="N",
                   help="--preset paper: trees traced per stand-in (default 100)")
    s.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (default 0)")
    s.add_argument("--no-column-format", action="store_true",
                   help="Booster without the redundant column-major format")
    s.add_argument("--naive-packing", action="store_true",
                   help="Booster with naive packing of bins into SRAMs (not group-by-field)")
    s.add_argument("--no-double-buffer", action="store_true",
                   help="memory and compute time add up instead of overlapping")
    s.add_argument("--ideal-cycles-per-op", type=float, default=None, metavar="C",
                   help="cycles an ideal machine spends per field update, predicate and "
                        "vertex (default 8, as a BU)")
    s.add_argument("--host-split-seconds", type=float, default=None, metavar="S",
                   help="host time of step ② per tree (default: hardwood's measured time "
                        "spread over 32 host cores)")
    s.add_argument("--json", action="store_true", help="end with one JSON line")
    s.add_argument("--plot", metavar="DIR", help="write the figures as PNG files in DIR")
    s.add_argument("--constants", action="store_true",
                   help="print the model's constants with their sources and exit")
    s.set_defaults(func=run)
    return s


def _config(args):
    from .model import Config

    kw = {"group_by_field": not args.naive_packing, "column_format": not args.no_column_format,
          "double_buffer": not args.no_double_buffer,
          "host_split_seconds": args.host_split_seconds}
    if args.ideal_cycles_per_op is not None:
        if not args.ideal_cycles_per_op > 0:
            raise ValueError("--ideal-cycles-per-op must be positive")
        kw["ideal_cycles_per_op"] = args.ideal_cycles_per_op
    return Config(**kw)


def _positive(name, v):
    if v is not None and v < 1:
        raise ValueError(f"{name} must be a positive integer, got {v}")


def run(args) -> int:
    from ..cli import CLIError
    from . import constants, report
    from .presets import PAPER

    if args.constants:
        print(constants.table_markdown())
        return 0
    if (args.preset is None) == (args.data is None):
        raise CLIError("simulate takes one of --preset paper or --data FILE")
    for name in ("rounds", "rows", "trees", "traced_rows", "traced_rounds"):
        _positive("--" + name.replace("_", "-"), getattr(args, name))
    cfg = _config(args)
    log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if args.json else print
    if args.preset is not None:
        if args.preset not in PRESETS:
            raise CLIError(f"unknown preset {args.preset!r}; choose from {', '.join(PRESETS)}")
        keys = tuple(PAPER)
        if args.datasets:
            keys = tuple(k.strip().lower() for k in args.datasets.split(",") if k.strip())
            bad = [k for k in keys if k not in PAPER]
            if bad or not keys:
                raise CLIError(f"unknown data set(s) {bad}; choose from {', '.join(PAPER)}")
        summary = report.run_experiment(keys, args.traced_rows, args.traced_rounds, args.seed,
                                        cfg, log)
    else:
        summary = _run_data(args, cfg)
    print(report.tables(summary), flush=True)
    if args.plot:
        for p in report.plots(summary, args.plot):
            log(f"wrote {p}")
    if args.json:
        print(report.json_line(summary), flush=True)
    return 0


def _run_data(args, cfg):
    from ..cli import CLIError, parse_params
    from ..data.dataset import Dataset
    from ..data.readers import read_table
    from . import report
    from .trace import record_trace

    if args.label is None and not str(args.data).lower().endswith(
            (".svm", ".libsvm", ".svmlight", ".svm.gz", ".libsvm.gz")):
        raise CLIError("--data needs --label COL (the label column)")
    kw = {}
    cats = [c.strip() for c in (args.categorical or "").split(",") if c.strip()]
    if cats:
        kw["categorical"] = cats
    X, y, _ = read_table(args.data, args.label, args.format, **kw)
    if y is None:
        raise CLIError(f"{args.data}: no label column")
    params = parse_params(args.param)
    params.setdefault("max_depth", 6)
    ds = Dataset(X, y, max_bin=int(params.pop("max_bin", 256)))
    trace = record_trace(ds, params, args.rounds)
    rows = args.rows or ds.n_rows
    trees = args.trees or trace.n_trees
    entry = report.summarise(str(args.data), trace, rows, trees, cfg)
    return report.finish([entry], cfg)
