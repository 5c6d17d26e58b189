"""Checks the rule behind ``runtime='auto'`` (``predict.dispatch.choose``) on models of
several shapes: XGBoost depth-wise trees (full, 16 and 64 leaves) and LightGBM leaf-wise
trees (15, 31 and 63 leaves), 500 trees each on the 28-feature Higgs-shaped set of
``predict_peers.py``. vpred and QuickScorer are timed in interleaved rounds on the same rows
(batch and one row); the script prints each one's time, the rule's cost estimates, its pick
and whether the pick was the fastest of its candidates. QuickScorer is patented, so ``auto``
never picks it: its time and estimate are printed for users who name it.

    flock /tmp/hardwood-cpu.lock python benchmarks/predict_auto_rule.py [--rows 200000]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def one_row(fn, n=2000):
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import numba
    numba.set_num_threads(args.threads)
    import lightgbm as lgb
    import xgboost as xgb

    import hardwood
    from hardwood.predict import dispatch
    from predict_peers import higgs_like, interleaved_rounds

    Xtr, ytr = higgs_like(100_000, 1)
    X, _ = higgs_like(args.rows, 2)
    row = np.ascontiguousarray(X[:1])
    models = []
    for depth in (4, 6):
        bst = xgb.train({"max_depth": depth, "eta": 0.1, "objective": "binary:logistic",
                         "nthread": args.threads, "tree_method": "hist"},
                        xgb.DMatrix(Xtr, ytr), 500)
        models.append((f"XGBoost depth {depth}", hardwood.import_model(bst)))
    for leaves in (15, 31, 63):
        b = lgb.train({"num_leaves": leaves, "objective": "binary", "verbose": -1,
                       "num_threads": args.threads}, lgb.Dataset(Xtr, ytr), 500)
        models.append((f"LightGBM {leaves} leaves", hardwood.import_model(b)))
    print(f"{args.rows:,} rows x 28 features, {args.threads} threads; medians of "
          f"{args.repeat} interleaved rounds (batch) and of 2000 calls (one row)")
    print("| model | rows | vpred | quickscorer | naive | rule's estimates (ns/row or us) | "
          "auto picks | fastest |")
    print("|---|---|---|---|---|---|---|---|")
    for name, m in models:
        auto = hardwood.compile(m, "auto")
        rts = {rt: hardwood.compile(m, rt) for rt in ("vpred", "quickscorer")}
        out = np.empty((X.shape[0], 1))
        for rt in rts.values():  # vpred's passes (by depth group) may round differently
            assert np.allclose(rt.predict(X[:3000], output="raw"),
                               m.predict(X[:3000], output="raw"), rtol=1e-12, atol=1e-12)
        batch = {k: float(np.median(v)) for k, v in interleaved_rounds(
            {k: (lambda c=c: c.predict(X, output="raw", out=out)) for k, c in rts.items()},
            args.repeat).items()}
        rts1 = dict(rts, naive=hardwood.compile(m, "naive"))  # auto's third one-row choice
        single = {k: one_row(lambda c=c: c.predict(row)) for k, c in rts1.items()}
        for n, tm, unit, scale in ((X.shape[0], batch, "ns/row", 1e9 / X.shape[0]),
                                   (1, single, "us", 1e6)):
            est = dispatch.costs(n, auto.shape, patented=True)  # auto never picks quickscorer
            pick = auto.choose(n)
            # auto's candidates only: it never picks the patented QuickScorer (timed beside)
            fast = min((k for k in tm if k not in dispatch.PATENTED), key=tm.get)
            cells = [f"{tm[k] * scale:.1f} {unit}" if k in tm else "—"
                     for k in ("vpred", "quickscorer", "naive")]
            rule = ", ".join(f"{k} {v * (1 if n > 1 else 1e-3):.0f}" for k, v in est.items())
            print(f"| {name} | {n:,} | {' | '.join(cells)} | {rule} | {pick} | "
                  f"{fast}{' ✓' if pick == fast else ' ✗'} |")


if __name__ == "__main__":
    main()
