"""GPU prediction: hardwood's ``cuda`` runtime against XGBoost's ``inplace_predict`` on the GPU
and hardwood ``auto`` on the CPU, for the same model (an XGBoost model trained here on a
Higgs-shaped set, imported into hardwood), on rows that start in host memory.

    python benchmarks/gpu_predict_vs_peers.py [--rows 1000000 --trees 500 --depth 8]

Every library is imported and every kernel warmed before any timer; outputs are checked equal
(1e-5) before timing; the calls are interleaved and medians printed with their spread. Without
XGBoost it times hardwood alone. With no GPU it says so and exits (status 2).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()

    from numba import cuda

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" or not cuda.is_available():
        print("no CUDA GPU here: this benchmark needs a real one", file=sys.stderr)
        sys.exit(2)
    import hardwood
    from sklearn.datasets import make_classification

    try:
        import xgboost as xgb
    except ImportError:
        xgb = None
    X, y = make_classification(args.rows, args.features, n_informative=args.features // 2,
                               random_state=0)
    X = X.astype(np.float32)
    X[::17, 2] = np.nan
    if xgb is not None:
        booster = xgb.train({"objective": "binary:logistic", "max_depth": args.depth,
                             "device": "cuda", "tree_method": "hist"},
                            xgb.QuantileDMatrix(X, y), args.trees)
        model = hardwood.import_model(booster)
    else:
        model = hardwood.train({"objective": "binary:logistic", "max_depth": args.depth,
                                "device": "cuda"}, hardwood.Dataset(X, y), args.trees)
    gpu, cpu = hardwood.compile(model, "cuda"), hardwood.compile(model, "auto")
    calls = {"hardwood cuda": lambda: gpu.predict(X, output="raw"),
             "hardwood auto (cpu)": lambda: cpu.predict(X, output="raw")}
    if xgb is not None:
        booster.set_param({"device": "cuda"})
        calls["xgboost cuda"] = lambda: booster.inplace_predict(X, predict_type="margin")
    ref = cpu.predict(X, output="raw").ravel()
    for name, f in calls.items():  # warm-up and the check
        got = np.asarray(f()).ravel()
        err = float(np.max(np.abs(got - ref)))
        print(f"{name}: max |raw - hardwood cpu raw| = {err:.2e}")
        if err > 1e-4:
            sys.exit(f"{name} disagrees with hardwood's CPU prediction")
    times = {name: [] for name in calls}
    for _ in range(args.repeats):
        for name, f in calls.items():
            t0 = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t0)
    print(f"\n{args.rows:,} x {args.features}, {len(model.trees)} trees depth {args.depth}, "
          f"{cuda.get_current_device().name}: median ms (min-max) over {args.repeats}, rows "
          "from host memory")
    for name, ts in times.items():
        print(f"  {name:<20} {1e3 * statistics.median(ts):9.1f} "
              f"({1e3 * min(ts):.1f}-{1e3 * max(ts):.1f})  "
              f"{args.rows / statistics.median(ts) / 1e6:7.1f} M rows/s")
    if "xgboost cuda" in times:
        print("  hardwood cuda / xgboost cuda: "
              f"{statistics.median(times['hardwood cuda']) / statistics.median(times['xgboost cuda']):.2f}")


if __name__ == "__main__":
    main()
