"""Random-forest training speed and accuracy: hardwood against scikit-learn's
RandomForestClassifier, LightGBM (boosting='rf') and XGBoost (XGBRFClassifier), in one run,
on the same data and thread count; hardwood's three growth schemes (pure depth-first, pure
breadth-first, hybrid) on the same forest.

Times include binning (hardwood, LightGBM, XGBoost build their binned matrices inside the
timed fit) and exclude JIT compilation: hardwood is warmed on a small set first.

    python benchmarks/forest_vs_peers.py                  # covertype-shaped 200k x 54, 7 classes
    python benchmarks/forest_vs_peers.py --quick          # 40k rows, 30 trees
    python benchmarks/forest_vs_peers.py --set wide       # 50k x 3072, 10 classes
    python benchmarks/forest_vs_peers.py --growth         # depth-first / breadth-first / hybrid
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np


def make_covertype_like(n_train, seed=0):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n_train + 50_000, n_features=54, n_informative=24,
                               n_redundant=10, n_classes=7, n_clusters_per_class=3,
                               class_sep=1.0, flip_y=0.02, random_state=seed)
    X = X.astype(np.float32)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def make_wide(n_train, seed=0):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n_train + 10_000, n_features=3072, n_informative=64,
                               n_redundant=64, n_classes=10, n_clusters_per_class=2,
                               class_sep=1.0, random_state=seed)
    X = X.astype(np.float32)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def run_hardwood(Xtr, ytr, Xte, yte, trees, threads, seed, growth="hybrid", device="cpu",
                 tree_parallel=None):
    import hardwood as hw

    m = hw.RandomForestClassifier(n_estimators=trees, max_features="sqrt", n_jobs=threads,
                                  random_state=seed, device=device)
    m._growth = growth
    m._tree_parallel = tree_parallel
    t0 = time.perf_counter()
    m.fit(Xtr, ytr)
    t = time.perf_counter() - t0
    return t, float((m.predict(Xte) == yte).mean())


def run_sklearn(Xtr, ytr, Xte, yte, trees, threads, seed):
    from sklearn.ensemble import RandomForestClassifier

    m = RandomForestClassifier(n_estimators=trees, max_features="sqrt", n_jobs=threads,
                               random_state=seed)
    t0 = time.perf_counter()
    m.fit(Xtr, ytr)
    t = time.perf_counter() - t0
    return t, float((m.predict(Xte) == yte).mean())


def run_lightgbm(Xtr, ytr, Xte, yte, trees, threads, seed):
    import lightgbm as lgb

    d = Xtr.shape[1]
    m = lgb.LGBMClassifier(boosting_type="rf", n_estimators=trees, num_leaves=4096,
                           max_depth=-1, min_child_samples=1, min_child_weight=0.0,
                           subsample=0.632, subsample_freq=1,
                           feature_fraction_bynode=max(1, int(math.sqrt(d))) / d,
                           reg_lambda=0.0, n_jobs=threads, random_state=seed, verbose=-1)
    t0 = time.perf_counter()
    m.fit(Xtr, ytr)
    t = time.perf_counter() - t0
    return t, float((m.predict(Xte) == yte).mean())


def run_xgboost(Xtr, ytr, Xte, yte, trees, threads, seed):
    import xgboost as xgb

    d = Xtr.shape[1]
    m = xgb.XGBRFClassifier(n_estimators=trees, max_depth=20, subsample=0.632,
                            colsample_bynode=max(1, int(math.sqrt(d))) / d, min_child_weight=0,
                            reg_lambda=1e-6, tree_method="hist", n_jobs=threads,
                            random_state=seed)
    t0 = time.perf_counter()
    m.fit(Xtr, ytr)
    t = time.perf_counter() - t0
    return t, float((m.predict(Xte) == yte).mean())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=["covertype", "wide"], default="covertype")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--trees", type=int, default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="fewer rows and trees")
    ap.add_argument("--growth", action="store_true",
                    help="also time pure depth-first and pure breadth-first growth")
    ap.add_argument("--peers", default="sklearn,lightgbm,xgboost",
                    help="comma-separated peers to run (sklearn, lightgbm, xgboost, or none)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="hardwood's device (cuda: on a machine with a GPU)")
    a = ap.parse_args(argv)
    if a.set == "covertype":
        rows = a.rows or (40_000 if a.quick else 200_000)
        trees = a.trees or (30 if a.quick else 100)
        Xtr, ytr, Xte, yte = make_covertype_like(rows, a.seed)
    else:
        rows = a.rows or (10_000 if a.quick else 50_000)
        trees = a.trees or (10 if a.quick else 30)
        Xtr, ytr, Xte, yte = make_wide(rows, a.seed)
    print(f"set={a.set} rows={Xtr.shape[0]} features={Xtr.shape[1]} classes={len(np.unique(ytr))}"
          f" trees={trees} threads={a.threads} max_features=sqrt")

    wX, wy, _, _ = make_covertype_like(2000, 1)  # JIT warm-up
    run_hardwood(wX, wy, wX[:10], wy[:10], 2, a.threads, 0, device=a.device)

    results = {}
    t, acc = run_hardwood(Xtr, ytr, Xte, yte, trees, a.threads, a.seed, device=a.device)
    results["hardwood"] = (t, acc)
    print(f"hardwood (default: hybrid, trees in parallel, {a.device})  {t:8.2f} s  "
          f"accuracy {acc:.4f}", flush=True)
    if a.growth:  # the growth schemes inside a tree, every thread on one tree at a time
        for g in ("hybrid", "breadthfirst", "depthfirst"):
            t, acc = run_hardwood(Xtr, ytr, Xte, yte, trees, a.threads, a.seed, growth=g,
                                  device=a.device, tree_parallel=False)
            results[f"hardwood-{g}"] = (t, acc)
            print(f"hardwood ({g:12s}, threads in one tree)  {t:8.2f} s  accuracy {acc:.4f}  "
                  f"time / default {t / results['hardwood'][0]:.2f}", flush=True)
    runners = {"sklearn": run_sklearn, "lightgbm": run_lightgbm, "xgboost": run_xgboost}
    for name in [p for p in a.peers.split(",") if p in runners]:
        t, acc = runners[name](Xtr, ytr, Xte, yte, trees, a.threads, a.seed)
        results[name] = (t, acc)
        h = results["hardwood"]
        print(f"{name:24s} {t:8.2f} s  accuracy {acc:.4f}  hardwood/{name} time ratio "
              f"{h[0] / t:.3f}  accuracy diff {100 * (h[1] - acc):+.2f} points", flush=True)
    return results


if __name__ == "__main__":
    main()
