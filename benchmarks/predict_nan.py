"""Prediction with missing values (issue 20): one row and batches, on XGBoost models trained
with and without missing values, against XGBoost's ``inplace_predict``; ``runtime="auto"``.

    flock /tmp/hardwood-cpu.lock python benchmarks/predict_nan.py [--rows 500000] [--repeat 3]

Models: 500 trees of depth 6 on the 28-feature Higgs-shaped set of ``predict_peers.py``, one
trained on rows without NaN ("clean"), one on the same rows with 2% of the values set to NaN
("nan"). Each model is scored on:

* one row, without and with a NaN, float32 and float64 (median of ``--calls`` calls through
  ``hardwood.compile(model).predict(row)``, ``--repeat`` repeats, interleaved with XGBoost's
  own one-row call);
* a batch of ``--rows`` rows without NaN, and one with 2% NaN values, against
  ``Booster.inplace_predict`` (``nthread`` = ``--threads``), in ``--repeat`` interleaved
  rounds: the median ratio and its spread.

Fairness: every library is imported and every kernel warmed before any timer; Numba's and
XGBoost's threads are set to ``--threads`` for the whole run (and OMP_NUM_THREADS before
import); hardwood's output is asserted to equal XGBoost's own prediction (float tolerance:
XGBoost sums in float32) on every timed input before timing. Only the default ``auto`` runtime
is timed.

To time the code an AVX2-only CPU gets on a machine with AVX-512, give Numba another target
and a cache of its own (see benchmarks/README.md, "Prediction with missing values and on AVX2")::

    NUMBA_CPU_NAME=znver2 NUMBA_CPU_FEATURES=<host features, avx512* off> \\
    NUMBA_CACHE_DIR=/tmp/avx2/numba HARDWOOD_CACHE_DIR=/tmp/avx2/hw python benchmarks/predict_nan.py

``--model-dir`` keeps the trained models between runs.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--train-rows", type=int, default=200_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--nan-frac", type=float, default=0.02)
    ap.add_argument("--model-dir", default=None, help="keep/reuse the trained models here")
    ap.add_argument("--no-batch", action="store_true")
    ap.add_argument("--no-row", action="store_true")
    return ap.parse_args()


def with_nan(X, frac, seed):
    X = X.copy()
    X[np.random.default_rng(seed).random(X.shape) < frac] = np.nan
    return X


def train(xgb, X, y, threads, path):
    if path and os.path.exists(path):
        b = xgb.Booster()
        b.load_model(path)
        return b
    b = xgb.train({"max_depth": 6, "eta": 0.1, "objective": "binary:logistic",
                   "tree_method": "hist", "nthread": threads}, xgb.DMatrix(X, y), 500)
    if path:
        b.save_model(path)
    return b


def latency_us(fn, n):
    """Median wall time of one call in µs, over n calls after 100 warm-up calls."""
    for _ in range(100):
        fn()
    ts = np.empty(n)
    for k in range(n):
        t = time.perf_counter_ns()
        fn()
        ts[k] = time.perf_counter_ns() - t
    return float(np.median(ts)) / 1e3


def spread(v):
    v = np.asarray(v, float)
    return f"median {np.median(v):.2f} (min {v.min():.2f}, max {v.max():.2f})"


def main():
    args = parse()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    sys.path.insert(0, HERE)
    import numba
    import xgboost as xgb

    import hardwood
    from predict_peers import higgs_like
    numba.set_num_threads(args.threads)
    print(f"numba {numba.__version__} target {numba.config.CPU_NAME or 'host'}, "
          f"xgboost {xgb.__version__}, {args.threads} threads")

    X, y = higgs_like(args.train_rows, seed=0)
    models = {}
    for name, Xt in (("clean", X), ("nan", with_nan(X, args.nan_frac, 1))):
        path = os.path.join(args.model_dir, f"xgb_{name}.json") if args.model_dir else None
        if path:
            os.makedirs(args.model_dir, exist_ok=True)
        b = train(xgb, Xt, y, args.threads, path)
        b.set_param({"nthread": args.threads})
        m = hardwood.import_model(b)
        models[name] = (b, m, hardwood.compile(m))  # runtime="auto"

    Xb, _ = higgs_like(args.rows, seed=7)
    batches = {"no NaN": Xb, f"{args.nan_frac:.0%} NaN": with_nan(Xb, args.nan_frac, 8)}
    row = np.ascontiguousarray(Xb[:1])
    row_nan = row.copy()
    row_nan[0, [3, 21]] = np.nan
    rows = {"f32 row": row, "f32 row, NaN": row_nan,
            "f64 row": row.astype(np.float64), "f64 row, NaN": row_nan.astype(np.float64)}

    # correctness against XGBoost's own predictions, and warming, before any timer
    for name, (b, m, c) in models.items():
        for lab, Z in list(batches.items()) + list(rows.items()):
            ref = b.inplace_predict(Z)
            got = c.predict(Z)
            assert np.allclose(got, ref, rtol=1e-5, atol=1e-6), (name, lab,
                                                                 np.abs(got - ref).max())
        for r in rows.values():
            c.predict(r)
        print(f"model {name}: auto takes {c.choose(1)} for one row, {c.choose(args.rows)} for "
              f"{args.rows:,} rows; outputs equal XGBoost's (rtol 1e-5)")

    if not args.no_row:
        print(f"\n-- one row: median of {args.calls} calls, {args.repeat} repeats "
              "(hardwood.compile(model).predict(row))")
        res = {}
        for _ in range(args.repeat):
            for name, (b, m, c) in models.items():
                for lab, r in rows.items():
                    res.setdefault((name, lab, "hardwood auto"), []).append(
                        latency_us(lambda: c.predict(r), args.calls))
                    res.setdefault((name, lab, "xgboost inplace_predict"), []).append(
                        latency_us(lambda: b.inplace_predict(r), max(args.calls // 10, 100)))
        for (name, lab, who), v in res.items():
            print(f"  model {name:5s} {lab:12s} {who:24s} "
                  + ", ".join(f"{t:.2f}" for t in v) + f" us  ({spread(v)})")

    if not args.no_batch:
        print(f"\n-- batch: {args.rows:,} rows, {args.threads} threads, {args.repeat} "
              "interleaved rounds (seconds; ratio = xgboost / hardwood time)")
        out = np.empty((args.rows, 1))
        times = {}
        for _ in range(args.repeat):
            for name, (b, m, c) in models.items():
                for lab, Z in batches.items():
                    t = time.perf_counter()
                    c.predict(Z, out=out)
                    times.setdefault((name, lab, "hw"), []).append(time.perf_counter() - t)
                    t = time.perf_counter()
                    b.inplace_predict(Z)
                    times.setdefault((name, lab, "xgb"), []).append(time.perf_counter() - t)
        for name in models:
            for lab in batches:
                hw, xg = times[(name, lab, "hw")], times[(name, lab, "xgb")]
                ratios = [a / h for a, h in zip(xg, hw)]
                print(f"  model {name:5s} {lab:8s} hardwood auto "
                      f"{args.rows / np.median(hw) / 1e6:5.2f} M rows/s, xgboost "
                      f"{args.rows / np.median(xg) / 1e6:5.2f} M rows/s; ratio per round "
                      + ", ".join(f"{r:.2f}" for r in ratios) + f" ({spread(ratios)})")


if __name__ == "__main__":
    main()
