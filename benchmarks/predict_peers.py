"""Prediction throughput and latency: hardwood runtimes against XGBoost / LightGBM on the same
model (imported), same rows, same threads, in one process. Prints hardwood/peer ratios.

    flock /tmp/hardwood-cpu.lock python benchmarks/predict_peers.py [--quick] [--threads 2]

Models: XGBoost 500 trees depth 6 on a 28-feature Higgs-shaped set (scored on 1M rows);
LightGBM 255 leaves; LightGBM LambdaMART on ../shared/data/rank.train (skipped if absent).
TL2cgen and lleaves are compared only when importable.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def higgs_like(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 28)).astype(np.float32)
    X[:, 21:] = np.abs(X[:, 21:]) + 0.5 * np.abs(X[:, :7])  # positive "high-level" features
    z = X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + 0.5 * X[:, 21] - 0.3 * X[:, 25] ** 2
    y = (z + rng.logistic(size=n) * 0.5 > 0).astype(np.float32)
    return X, y


def best_of(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def latency(fn, n=2000):
    fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t)
    return float(np.median(ts)) / 1e3  # µs


def run_model(title, model, X, peers, repeat, runtimes):
    import hardwood
    print(f"\n== {title}: {model.num_trees} trees, {X.shape[0]:,} rows x {X.shape[1]} features")
    res = {}
    for name, fn in peers.items():
        res[name] = best_of(fn, repeat)
        print(f"  {name:28s} {res[name]:8.3f} s  {X.shape[0] / res[name] / 1e6:7.2f} M rows/s")
    ref = model.predict(X[:2000], output="raw")
    for rt in runtimes:
        t = time.perf_counter()
        try:
            c = hardwood.compile(model, rt)
        except ValueError as e:
            print(f"  hardwood {rt:19s} skipped: {e}")
            continue
        ct = time.perf_counter() - t
        got = c.predict(X[:2000], output="raw")
        assert np.allclose(got, ref, rtol=1e-9, atol=1e-9), rt
        out = np.empty((X.shape[0], model.n_outputs))
        res[rt] = best_of(lambda: c.predict(X, output="raw", out=out), repeat)
        extra = (f" (v={sorted({g['v'] for g in c.layout.groups})}, "
                 f"{len(c.layout.groups)} depth passes)") if rt == "vpred" else ""
        print(f"  hardwood {rt:19s} {res[rt]:8.3f} s  {X.shape[0] / res[rt] / 1e6:7.2f} M rows/s"
              f"  compile {ct:.2f} s{extra}")
    done = [r for r in runtimes if r in res]
    hw = min(res[r] for r in done)
    best_hw = min(done, key=lambda r: res[r])
    peer_best = min(peers, key=lambda p: res[p]) if peers else None
    if peer_best:
        print(f"  ratio best hardwood ({best_hw}) / fastest peer ({peer_best}): "
              f"{res[peer_best] / hw:.2f}x throughput")
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="200k rows, fewer repeats")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import numba
    numba.set_num_threads(args.threads)
    import hardwood
    import lightgbm as lgb
    import xgboost as xgb

    n_score = 200_000 if args.quick else 1_000_000
    repeat = 2 if args.quick else 3
    runtimes = ["naive", "struct+", "pred", "vpred", "auto"]

    # 1. XGBoost 500 trees depth 6
    Xtr, ytr = higgs_like(100_000, 1)
    X, _ = higgs_like(n_score, 2)
    bst = xgb.train({"max_depth": 6, "eta": 0.1, "objective": "binary:logistic",
                     "nthread": args.threads, "tree_method": "hist"},
                    xgb.DMatrix(Xtr, ytr), 500)
    m = hardwood.import_model(bst)
    peers = {"xgboost inplace_predict": lambda: bst.inplace_predict(X, predict_type="margin")}
    run_model("XGBoost 500 x depth 6 (Higgs-shaped)", m, X, peers, repeat,
              runtimes + (["codegen"] if not args.quick else []))
    # single-row latency
    row = np.ascontiguousarray(X[:1])
    lat = {"xgboost inplace_predict": latency(lambda: bst.inplace_predict(row))}
    for rt in ("struct+", "vpred", "auto"):
        c = hardwood.compile(m, rt)
        lat[f"hardwood {rt}"] = latency(lambda: c.predict(row))
        o = np.empty((1, 1))
        lat[f"hardwood {rt} (out=)"] = latency(lambda: c.predict(row, out=o))
    lat["hardwood Model.predict(runtime='auto')"] = latency(lambda: m.predict(row, runtime="auto"))
    print("  single-row latency (median):")
    for k, v in lat.items():
        print(f"    {k:40s} {v:8.2f} us")
    t = time.perf_counter()
    hardwood.compile(m, "auto").predict(row)
    print(f"  compile default runtime (auto) + first row: {time.perf_counter() - t:.3f} s")

    # 2. LightGBM 255 leaves
    lb = lgb.train({"num_leaves": 255, "objective": "binary", "verbose": -1,
                    "num_threads": args.threads, "learning_rate": 0.1},
                   lgb.Dataset(Xtr, ytr), 200 if args.quick else 500)
    m2 = hardwood.import_model(lb)
    peers = {"lightgbm predict": lambda: lb.predict(X, raw_score=True, num_threads=args.threads)}
    run_model("LightGBM 255 leaves", m2, X, peers, repeat, runtimes)

    # 3. LambdaMART on rank.train
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "shared", "data", "rank.train")
    if os.path.exists(path) and os.path.exists(path + ".query"):
        from sklearn.datasets import load_svmlight_file
        Xr, yr = load_svmlight_file(path)
        Xr = np.ascontiguousarray(Xr.toarray(), dtype=np.float32)
        q = np.loadtxt(path + ".query", dtype=np.int64)
        rk = lgb.train({"objective": "lambdarank", "num_leaves": 31, "verbose": -1,
                        "num_threads": args.threads, "min_data_in_leaf": 20},
                       lgb.Dataset(Xr, yr, group=q), 500)
        m3 = hardwood.import_model(rk)
        Xs = np.ascontiguousarray(np.tile(Xr, (max(1, n_score // Xr.shape[0] // 4), 1)))
        peers = {"lightgbm predict": lambda: rk.predict(Xs, num_threads=args.threads)}
        run_model("LightGBM LambdaMART (rank.train)", m3, Xs, peers, repeat, runtimes)
    else:
        print("\n== LambdaMART: ../shared/data/rank.train not found, skipped")

    for mod in ("tl2cgen", "lleaves"):
        try:
            __import__(mod)
            print(f"\n{mod} is importable but not wired into this script")
        except ImportError:
            print(f"\n{mod}: not installed (not compared)")


if __name__ == "__main__":
    main()
