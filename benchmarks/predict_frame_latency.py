"""Prediction latency on pandas DataFrames: one XGBoost model (imported into hardwood) predicted
by hardwood (``Model.predict`` and ``compile(model, "auto")``), XGBoost (``inplace_predict``)
and LightGBM (a model of the same shape, imported too) on frames of 1 and 1,000 rows, 10 and 100
numeric columns. Prints median µs per call (with the
spread over rounds) and the hardwood/peer ratios. The rounds interleave the libraries.

    flock /tmp/hardwood-cpu.lock python benchmarks/predict_frame_latency.py [--rounds 5]

What it measures is mostly the frame's conversion: a column at a time through ``df.iloc``
cost hardwood 0.07 ms a column before session 21.
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def per_call_us(fn, calls):
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import lightgbm as lgb
    import pandas as pd
    import xgboost as xgb

    import hardwood as hw
    from hardwood.parallel import threads

    with threads(args.threads):
        run(args, hw, lgb, pd, xgb)


def run(args, hw, lgb, pd, xgb):
    rng = np.random.default_rng(0)
    print(f"threads {args.threads}; median µs per call (min-max over {args.rounds} rounds)")
    for d in (10, 100):
        X = rng.normal(size=(5000, d))
        y = X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=5000) * 0.1
        cols = [f"c{j}" for j in range(d)]
        frame = pd.DataFrame(X, columns=cols)
        bst = xgb.train({"max_depth": 6, "nthread": args.threads}, xgb.DMatrix(frame, y), 100)
        lgbm = lgb.train({"num_leaves": 63, "verbose": -1, "num_threads": args.threads},
                         lgb.Dataset(frame, y), 100)
        from_xgb, from_lgb = hw.import_model(bst), hw.import_model(lgbm)
        auto_xgb, auto_lgb = hw.compile(from_xgb, "auto"), hw.compile(from_lgb, "auto")
        for rows in (1, 1000):
            f = frame.iloc[:rows]
            # the outputs first: equal to the peers' own
            np.testing.assert_allclose(from_xgb.predict(f), bst.inplace_predict(f), atol=1e-5)
            np.testing.assert_allclose(from_lgb.predict(f), lgbm.predict(f), atol=1e-9)
            calls = 400 if rows == 1 else 40
            np.testing.assert_allclose(auto_xgb.predict(f), bst.inplace_predict(f), atol=1e-5)
            np.testing.assert_allclose(auto_lgb.predict(f), lgbm.predict(f), atol=1e-9)
            runs = {"hardwood (XGBoost model)": lambda: from_xgb.predict(f),
                    "  compile(auto)": lambda: auto_xgb.predict(f),
                    "XGBoost inplace_predict": lambda: bst.inplace_predict(f),
                    "hardwood (LightGBM model)": lambda: from_lgb.predict(f),
                    "  compile(auto) ": lambda: auto_lgb.predict(f),
                    "LightGBM predict": lambda: lgbm.predict(f, num_threads=args.threads)}
            times = {k: [] for k in runs}
            for _ in range(args.rounds):
                for k, fn in runs.items():
                    fn()
                    times[k].append(per_call_us(fn, calls))
            med = {k: float(np.median(v)) for k, v in times.items()}
            print(f"\n{rows} row(s) x {d} columns")
            for k, v in times.items():
                print(f"  {k:28s} {med[k]:9.1f}  ({min(v):.1f}-{max(v):.1f})")
            for model, auto, peer in (("hardwood (XGBoost model)", "  compile(auto)",
                                       "XGBoost inplace_predict"),
                                      ("hardwood (LightGBM model)", "  compile(auto) ",
                                       "LightGBM predict")):
                print(f"  {peer}: ratio Model.predict/peer {med[model] / med[peer]:.2f}, "
                      f"compile(auto)/peer {med[auto] / med[peer]:.2f}")


if __name__ == "__main__":
    main()
