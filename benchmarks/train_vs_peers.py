"""Training speed: hardwood against XGBoost (hist), LightGBM and scikit-learn's
HistGradientBoosting, in one run, on the same data and thread count.

Times include binning (Dataset / DMatrix construction) and exclude JIT compilation: hardwood
is warmed on a small set first. The cold start (first fit with an empty Numba cache) is
measured in a subprocess with a fresh cache directory when ``--cold`` is given.

    python benchmarks/train_vs_peers.py                 # Higgs-shaped 1M x 28, 2 threads
    python benchmarks/train_vs_peers.py --rows 200000 --repeat 3 --cold
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def make_higgs_like(n_rows, n_features=28, seed=0):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n_rows, n_features=n_features, n_informative=14,
                               n_redundant=6, flip_y=0.05, class_sep=0.6, random_state=seed)
    return X.astype(np.float32), y.astype(np.float32)


def auc(y, p):
    from sklearn.metrics import roc_auc_score
    return roc_auc_score(y, p)


def run_hardwood(Xtr, ytr, Xte, cfg, threads):
    import hardwood as hw

    t0 = time.perf_counter()
    ds = hw.Dataset(Xtr, ytr, max_bin=cfg["max_bin"])
    params = {"objective": "binary:logistic", "max_depth": cfg["max_depth"],
              "learning_rate": cfg["lr"], "reg_lambda": 1.0, "n_jobs": threads,
              "min_child_weight": 1.0}
    model = hw.train(params, ds, num_boost_round=cfg["rounds"])
    t = time.perf_counter() - t0
    return t, model.predict(Xte), model.training_profile


def run_xgboost(Xtr, ytr, Xte, cfg, threads):
    import xgboost as xgb

    t0 = time.perf_counter()
    d = xgb.DMatrix(Xtr, ytr, nthread=threads)
    params = {"objective": "binary:logistic", "tree_method": "hist", "max_depth": cfg["max_depth"],
              "eta": cfg["lr"], "max_bin": cfg["max_bin"], "nthread": threads, "lambda": 1.0}
    b = xgb.train(params, d, num_boost_round=cfg["rounds"])
    t = time.perf_counter() - t0
    return t, b.inplace_predict(Xte), None


def run_lightgbm(Xtr, ytr, Xte, cfg, threads):
    import lightgbm as lgb

    t0 = time.perf_counter()
    d = lgb.Dataset(Xtr, ytr, params={"max_bin": cfg["max_bin"] - 1, "verbose": -1})
    params = {"objective": "binary", "max_depth": cfg["max_depth"],
              "num_leaves": 2 ** cfg["max_depth"], "learning_rate": cfg["lr"],
              "num_threads": threads, "lambda_l2": 1.0, "verbose": -1,
              "min_sum_hessian_in_leaf": 1.0, "max_bin": cfg["max_bin"] - 1}
    b = lgb.train(params, d, num_boost_round=cfg["rounds"])
    t = time.perf_counter() - t0
    return t, b.predict(Xte), None


def run_sklearn(Xtr, ytr, Xte, cfg, threads):
    from threadpoolctl import threadpool_limits
    from sklearn.ensemble import HistGradientBoostingClassifier

    with threadpool_limits(threads):
        t0 = time.perf_counter()
        m = HistGradientBoostingClassifier(max_iter=cfg["rounds"], max_depth=cfg["max_depth"],
                                           learning_rate=cfg["lr"], max_bins=cfg["max_bin"] - 1,
                                           max_leaf_nodes=None, early_stopping=False,
                                           l2_regularization=1.0)
        m.fit(Xtr, ytr)
        t = time.perf_counter() - t0
        return t, m.predict_proba(Xte)[:, 1], None


PEERS = {"xgboost": run_xgboost, "lightgbm": run_lightgbm, "sklearn-hgb": run_sklearn}


def cold_start(threads):
    """First fit (20 trees, 1,000 rows) in a fresh process with an empty Numba cache."""
    code = ("import time; t=time.perf_counter(); import numpy as np, hardwood as hw;"
            "t1=time.perf_counter();"
            "X=np.random.default_rng(0).random((1000, 28)).astype(np.float32);"
            "y=(X[:,0]>0.5).astype(np.float32);"
            "hw.train({'objective':'binary:logistic','n_jobs':%d}, hw.Dataset(X,y), 20);"
            "print(t1-t, time.perf_counter()-t)" % threads)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        cold = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        warm = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    c_imp, c_tot = map(float, cold.stdout.split())
    w_imp, w_tot = map(float, warm.stdout.split())
    return c_tot, w_tot


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=1, help="runs per library; the median is shown")
    ap.add_argument("--peers", default="xgboost,lightgbm,sklearn-hgb")
    ap.add_argument("--cold", action="store_true", help="also measure the cold-start compile time")
    args = ap.parse_args()
    cfg = {"max_depth": args.depth, "rounds": args.rounds, "lr": args.lr, "max_bin": 256}

    n_test = max(args.rows // 5, 1000)
    X, y = make_higgs_like(args.rows + n_test)
    Xtr, ytr, Xte, yte = X[:args.rows], y[:args.rows], X[args.rows:], y[args.rows:]
    print(f"data: make_classification {args.rows:,} x {X.shape[1]} float32 (test {n_test:,}); "
          f"depth {args.depth}, {args.rounds} trees, lr {args.lr}, 256 bins, {args.threads} threads")

    # warm the JIT (and the disk cache) on a small set
    run_hardwood(Xtr[:5000], ytr[:5000], Xte[:100], dict(cfg, rounds=2), args.threads)

    results = {}
    names = ["hardwood"] + [p for p in args.peers.split(",") if p]
    for name in names:
        fn = run_hardwood if name == "hardwood" else PEERS[name]
        try:
            times, last = [], None
            for _ in range(args.repeat):
                t, pred, prof = fn(Xtr, ytr, Xte, cfg, args.threads)
                times.append(t)
                last = (pred, prof)
            results[name] = (statistics.median(times), auc(yte, last[0]), last[1])
        except ImportError as e:
            print(f"{name}: not installed ({e})")
    hw_t, hw_auc, prof = results["hardwood"]
    print(f"\n{'library':<14}{'time (s)':>10}{'test AUC':>10}{'hardwood/peer':>15}")
    for name, (t, a, _) in results.items():
        ratio = "" if name == "hardwood" else f"{hw_t / t:.2f}"
        print(f"{name:<14}{t:>10.2f}{a:>10.4f}{ratio:>15}")
    fastest = min((t for n, (t, a, _) in results.items() if n in ("xgboost", "lightgbm")), default=None)
    if fastest:
        print(f"\nratio hardwood / faster of XGBoost and LightGBM: {hw_t / fastest:.2f}")
    if prof:
        from hardwood.train.engine import format_profile
        print(format_profile(prof))
    if args.cold:
        c, w = cold_start(args.threads)
        print(f"cold start (empty Numba cache) import + first fit of 20 trees on 1,000 rows: {c:.1f}s;"
              f" with a warm cache: {w:.2f}s")


if __name__ == "__main__":
    main()
