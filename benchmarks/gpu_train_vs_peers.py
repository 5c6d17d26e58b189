"""GPU boosting against XGBoost's (issue 14): hardwood ``device="cuda"`` vs XGBoost
``device="cuda"`` vs hardwood on the CPU, on Higgs-shaped ``make_classification`` sets.

    python benchmarks/gpu_train_vs_peers.py [--rows 1000000,10000000 --rounds 100 --repeats 3]

Every library is imported and every kernel warmed (a small fit of each) before any timer;
the fits are interleaved (hardwood cuda, XGBoost cuda, hardwood cpu, then again) and the
medians printed with their spread, with test AUC (the three must agree within 0.005) and
the ratio to XGBoost. hardwood's bytes copied between host and device per round come from
its ``training_profile``. Goal on a GPU: <= 0.5x XGBoost's time on 10,000,000 x 28.

With no GPU it says so and exits (status 2); the simulator (NUMBA_ENABLE_CUDASIM=1) is far
too slow for these sizes.
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
    ap.add_argument("--rows", default="1000000,10000000")
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-cpu", action="store_true", help="leave hardwood cpu out")
    args = ap.parse_args()

    from numba import cuda

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" or not cuda.is_available():
        print("no CUDA GPU here (numba.cuda.is_available() is False, or the simulator is on): "
              "this benchmark needs a real GPU", file=sys.stderr)
        sys.exit(2)
    import hardwood

    try:
        import xgboost as xgb
    except ImportError:  # hardwood cuda against hardwood cpu alone
        print("xgboost is not installed: timing hardwood alone", file=sys.stderr)
        xgb = None
    from sklearn.datasets import make_classification
    from sklearn.metrics import roc_auc_score

    dev = cuda.get_current_device()
    print(f"device: {dev.name.decode() if isinstance(dev.name, bytes) else dev.name}; "
          f"xgboost {xgb.__version__ if xgb else '(none)'}, hardwood {hardwood.__version__}")
    base = {"objective": "binary:logistic", "learning_rate": 0.1, "max_depth": args.depth,
            "max_bin": 256}
    # warm-up: every kernel of every library compiled before any timer
    Xw, yw = make_classification(20_000, args.features, random_state=1)
    dw = hardwood.Dataset(Xw.astype(np.float32), yw)
    for device in ("cuda", "cpu"):
        hardwood.train({**base, "device": device}, dw, 3)
    if xgb is not None:
        xgb.train({**base, "device": "cuda", "tree_method": "hist"}, xgb.DMatrix(Xw, yw), 3)

    for n in (int(v) for v in args.rows.split(",")):
        n_test = max(n // 20, 1000)
        X, y = make_classification(n + n_test, args.features, n_informative=args.features // 2,
                                   n_redundant=args.features // 5, flip_y=0.05,
                                   class_sep=0.6, random_state=0)
        X = X.astype(np.float32)
        Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
        ds = hardwood.Dataset(Xtr, ytr)
        names = ["hardwood cuda", "xgboost cuda", "hardwood cpu"]
        if xgb is not None:
            dx = xgb.QuantileDMatrix(Xtr, ytr, max_bin=256)
        else:
            names.remove("xgboost cuda")
        if args.no_cpu:
            names.remove("hardwood cpu")
        times = {name: [] for name in names}
        auc, transfers = {}, None
        for _ in range(args.repeats):
            for name in times:
                t0 = time.perf_counter()  # training only
                if name.startswith("hardwood"):
                    m = hardwood.train({**base, "device": name.split()[1]}, ds, args.rounds)
                    times[name].append(time.perf_counter() - t0)
                    pred = m.predict(Xte)
                    if name == "hardwood cuda":
                        transfers = m.training_profile
                else:
                    b = xgb.train({**base, "device": "cuda", "tree_method": "hist"}, dx,
                                  args.rounds)
                    times[name].append(time.perf_counter() - t0)
                    pred = b.inplace_predict(Xte)
                auc[name] = roc_auc_score(yte, pred)
        print(f"\n{n:,} x {args.features}, {args.rounds} rounds, depth {args.depth}: "
              f"median s (min-max) over {args.repeats}, test AUC")
        for name, ts in times.items():
            print(f"  {name:<14} {statistics.median(ts):8.2f} ({min(ts):.2f}-{max(ts):.2f})"
                  f"  AUC {auc[name]:.4f}")
        for peer in ("xgboost cuda", "hardwood cpu"):
            if peer in times:
                ratio = statistics.median(times["hardwood cuda"]) / statistics.median(
                    times[peer])
                print(f"  hardwood cuda / {peer}: {ratio:.2f}"
                      + (" (goal <= 0.5 at 10M rows)" if peer.startswith("xgb") else ""))
        if max(auc.values()) - min(auc.values()) > 0.005:
            print("  WARNING: the test AUCs differ by more than 0.005")
        if transfers:
            print(f"  hardwood host->device {transfers['h2d_bytes'] / args.rounds / 2**20:.1f} "
                  f"MiB/round, device->host {transfers['d2h_bytes'] / args.rounds / 2**20:.1f} "
                  "MiB/round")


if __name__ == "__main__":
    main()
