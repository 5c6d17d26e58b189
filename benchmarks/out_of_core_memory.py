"""Out-of-core training's memory, the out-of-core paper's Table 1 on the CPU (issue 13).

    python benchmarks/out_of_core_memory.py parquet [--rows 3000000 --features 40 --rounds 60]
    python benchmarks/out_of_core_memory.py budget [--budget-mib 256 --features 28]

``parquet``: Parquet parts of a Higgs-shaped ``make_classification`` set (float32, row
groups of 100,000 rows) are trained three ways, each in a fresh child process:
in-core (the parts read with pandas into one matrix), in-core with mvs f = 0.1, and out of
core from the files (``Dataset.from_files``) with mvs f = 0.1. Each child first warms up
(imports, kernels compiled on a small set of the same shape), then resets its peak RSS
(``/proc/self/clear_refs``) and records its RSS as the baseline; the *extra* peak RSS is the
peak above that baseline, over reading the data and training. Goals: out of core, extra
peak RSS <= 35% of the raw float32 data, and test AUC within 0.003 of in-core training.

``budget``: the paper's Table 1: under a memory budget (extra peak RSS), the largest number
of rows each mode trains: in-core, out-of-core streaming and out-of-core mvs f = 0.1. The
extra peak is measured at two sizes per mode, then at the sizes where a line through the two
largest measured points meets 97% of the budget (secant steps, ``--steps``): the largest
size measured within the budget is reported (a measured run, not an extrapolation).

One run each; timings are one run, not medians (memory, not speed, is the figure here).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

MODES = {
    "incore": ({}, False),
    "incore_mvs": ({"sampling_method": "mvs", "subsample": 0.1}, False),
    "streaming": ({}, True),
    "mvs": ({"sampling_method": "mvs", "subsample": 0.1}, True),
}
BASE = {"objective": "binary:logistic", "learning_rate": 0.1, "max_depth": 6}


def _status(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def _reset_peak():
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # VmHWM := VmRSS


# -- data --------------------------------------------------------------------------------
def write_parts(folder, rows, n_test, features, part_rows=250_000, seed=0):
    """Parquet parts of the training rows, and one test part; float32 columns f0.., y."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from sklearn.datasets import make_classification

    X, y = make_classification(rows + n_test, features, n_informative=features // 2,
                               n_redundant=features // 5, flip_y=0.05, class_sep=0.6,
                               random_state=seed)
    X = X.astype(np.float32)
    names = [f"f{j}" for j in range(features)]

    def write(path, a, b):
        cols = {n: X[a:b, j] for j, n in enumerate(names)}
        cols["y"] = y[a:b].astype(np.float32)
        pq.write_table(pa.table(cols), path, row_group_size=100_000)

    os.makedirs(folder, exist_ok=True)
    for k, a in enumerate(range(0, rows, part_rows)):
        write(os.path.join(folder, f"train-{k:04d}.parquet"), a, min(a + part_rows, rows))
    write(os.path.join(folder, "test.parquet"), rows, rows + n_test)


def _read_parts(paths):
    import pyarrow.parquet as pq

    tables = [pq.read_table(p) for p in paths]
    names = [c for c in tables[0].column_names if c != "y"]
    X = np.empty((sum(t.num_rows for t in tables), len(names)), dtype=np.float32)
    y = np.empty(X.shape[0])
    a = 0
    for t in tables:
        for j, c in enumerate(names):
            X[a:a + t.num_rows, j] = t.column(c).to_numpy()
        y[a:a + t.num_rows] = t.column("y").to_numpy()
        a += t.num_rows
    return X, y


# -- one measured training, in a fresh process --------------------------------------------
def child(args):
    import hardwood

    extra, on_disk = MODES[args.mode]
    params = {**BASE, **extra}
    parts = sorted(glob.glob(os.path.join(args.data, "train-*.parquet")))
    # warm-up on the same columns: imports, kernels compiled (in-core and on pages)
    Xs, ys = _read_parts(parts[:1])
    Xs, ys = Xs[:20_000], ys[:20_000]
    warm = hardwood.Dataset(Xs, ys)
    hardwood.train(params, warm, num_boost_round=2)
    if on_disk:
        wdir = tempfile.mkdtemp(prefix="hardwood-warm-")
        wd = hardwood.Dataset.from_batches(lambda: iter([(Xs, ys)]), wdir)
        hardwood.train(params, wd, num_boost_round=2)
        shutil.rmtree(wdir, ignore_errors=True)
    del Xs, ys, warm
    _reset_peak()
    baseline = _status("VmRSS")
    t0 = time.perf_counter()
    if on_disk:
        ds = hardwood.Dataset.from_files(parts, label="y", cache_dir=args.cache)
    else:
        X, y = _read_parts(parts)
        ds = hardwood.Dataset(X, y)
        del X, y
    t_data = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = hardwood.train(params, ds, num_boost_round=args.rounds)
    t_train = time.perf_counter() - t0
    peak = _status("VmHWM")
    model.save(args.model)
    with open(args.out, "w") as fh:
        json.dump({"mode": args.mode, "rows": ds.n_rows, "features": ds.n_features,
                   "baseline": baseline, "peak": peak, "extra": peak - baseline,
                   "data_s": t_data, "train_s": t_train, "rounds": args.rounds}, fh)


def run_child(mode, data, rounds, work):
    out = os.path.join(work, f"{mode}.json")
    model = os.path.join(work, f"{mode}.model.json")
    cache = os.path.join(work, f"cache-{mode}")
    cmd = [sys.executable, os.path.abspath(__file__), "_child", "--mode", mode, "--data", data,
           "--rounds", str(rounds), "--out", out, "--model", model, "--cache", cache]
    subprocess.run(cmd, check=True)
    shutil.rmtree(cache, ignore_errors=True)
    with open(out) as fh:
        res = json.load(fh)
    res["model"] = model
    return res


def _auc(model_path, data):
    import hardwood
    from sklearn.metrics import roc_auc_score

    Xt, yt = _read_parts([os.path.join(data, "test.parquet")])
    return roc_auc_score(yt, hardwood.load(model_path).predict(Xt))


def _mib(b):
    return b / 2**20


# -- the two measurements -------------------------------------------------------------------
def parquet(args):
    work = tempfile.mkdtemp(prefix="hardwood-ooc-mem-")
    try:
        data = os.path.join(work, "data")
        write_parts(data, args.rows, max(args.rows // 10, 1000), args.features)
        raw = args.rows * args.features * 4
        print(f"{args.rows:,} x {args.features} float32 = {_mib(raw):.0f} MiB raw, "
              f"{args.rounds} rounds, depth 6, lr 0.1")
        print(f"{'mode':<12} {'extra peak MiB':>15} {'% of raw':>9} {'data s':>7} "
              f"{'s/round':>8} {'test AUC':>9}")
        rows = {}
        for mode in ("incore", "incore_mvs", "mvs"):
            r = run_child(mode, data, args.rounds, work)
            r["auc"] = _auc(r["model"], data)
            rows[mode] = r
            print(f"{mode:<12} {_mib(r['extra']):>15.0f} {100 * r['extra'] / raw:>8.1f}% "
                  f"{r['data_s']:>7.1f} {r['train_s'] / r['rounds']:>8.3f} {r['auc']:>9.4f}",
                  flush=True)
        m, c = rows["mvs"], rows["incore"]
        print(f"out of core mvs 0.1: extra peak {100 * m['extra'] / raw:.1f}% of raw "
              f"(goal <= 35%), AUC {m['auc'] - c['auc']:+.4f} vs in-core (goal within "
              f"0.003), {m['train_s'] / c['train_s']:.2f}x in-core's training time")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def budget(args):
    work = tempfile.mkdtemp(prefix="hardwood-ooc-budget-")
    budget_b = args.budget_mib * 2**20
    print(f"budget: {args.budget_mib} MiB of extra peak RSS; {args.features} features, "
          f"{args.rounds} rounds, depth 6")

    def measure(mode, n):
        data = os.path.join(work, f"data-{n}")
        if not os.path.isdir(data):
            write_parts(data, n, 1000, args.features)
        r = run_child(mode, data, args.rounds, work)
        print(f"  {mode:<10} {n:>11,} rows: extra peak {_mib(r['extra']):6.0f} MiB, "
              f"{r['train_s'] / r['rounds']:.2f} s/round", flush=True)
        return r["extra"]

    try:
        for mode in ("incore", "streaming", "mvs"):
            pts = [(n, measure(mode, n)) for n in (int(v) for v in args.sizes.split(","))]
            for _ in range(args.steps):  # secant steps on extra(rows) = budget
                (n0, e0), (n1, e1) = sorted(pts)[-2:]
                per_row = (e1 - e0) / (n1 - n0) if e1 > e0 else e1 / n1
                n = int(n1 + (budget_b * 0.97 - e1) / per_row) // 10_000 * 10_000
                if n <= 0 or any(abs(n - m) < 10_000 for m, _ in pts):
                    break
                pts.append((n, measure(mode, n)))
                shutil.rmtree(os.path.join(work, f"data-{n}"), ignore_errors=True)
            ok = [(n, e) for n, e in pts if e <= budget_b]
            n, e = max(ok) if ok else (0, 0)
            print(f"{mode:<10} largest checked within {args.budget_mib} MiB: {n:,} rows "
                  f"(extra peak {_mib(e):.0f} MiB)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("parquet")
    p.add_argument("--rows", type=int, default=3_000_000)
    p.add_argument("--features", type=int, default=40)
    p.add_argument("--rounds", type=int, default=60)
    b = sub.add_parser("budget")
    b.add_argument("--budget-mib", type=int, default=256)
    b.add_argument("--features", type=int, default=28)
    b.add_argument("--rounds", type=int, default=5)
    b.add_argument("--sizes", default="500000,2000000")
    b.add_argument("--steps", type=int, default=3)
    c = sub.add_parser("_child")
    for k in ("--mode", "--data", "--out", "--model", "--cache"):
        c.add_argument(k, required=True)
    c.add_argument("--rounds", type=int, required=True)
    args = ap.parse_args()
    {"parquet": parquet, "budget": budget, "_child": child}[args.cmd](args)


if __name__ == "__main__":
    main()
