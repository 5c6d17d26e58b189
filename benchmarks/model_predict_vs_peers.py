"""``Model.predict`` with its defaults (no ``compile``) against the peers' own predict, on the
same model: an XGBoost model imported into hardwood (``inplace_predict``), and a LightGBM one
(``Booster.predict``). Medians of interleaved rounds, with the 25-75% spread of the ratio.

    flock /tmp/hardwood-cpu.lock python benchmarks/model_predict_vs_peers.py [--quick] [--threads 2]

Per model and batch size it reports:

* ``first``: the first ``Model.predict`` call on a fresh model object (the reference walk, or
  the walk plus laying the model out for ``auto`` once the batch reaches
  ``model.AUTO_MIN_WORK`` rows × trees);
* ``default``: later calls (the ``auto`` runtime once the model is laid out);
* ``naive``: ``runtime='naive'``, the reference walk on every call.

Outputs are checked against the peer's before any timing.
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def _median_ratio(ours, theirs):
    r = np.asarray(ours) / np.asarray(theirs)
    return np.median(r), np.percentile(r, 25), np.percentile(r, 75)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller models and fewer rounds")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()

    import lightgbm as lgb  # every library imported before any timer starts
    import numba
    import xgboost as xgb

    import hardwood as hw

    numba.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    n_train = 20_000 if args.quick else 50_000
    X = rng.normal(size=(n_train, 28)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n_train) > 0).astype(np.float64)
    rounds = (100, 300) if args.quick else (100, 500)
    models = []
    for r in rounds:
        b = xgb.train({"objective": "binary:logistic", "max_depth": 6, "nthread": args.threads},
                      xgb.DMatrix(X, y), r)
        models.append((f"XGBoost {r} x depth 6", b, lambda b, Z: b.inplace_predict(Z)))
    lb = lgb.train({"objective": "binary", "num_leaves": 63, "verbose": -1,
                    "num_threads": args.threads}, lgb.Dataset(X, y), rounds[0])
    models.append((f"LightGBM {rounds[0]} x 63 leaves", lb, lambda b, Z: b.predict(Z)))
    sizes = (1, 1_000, 10_000 if args.quick else 100_000)
    print(f"threads {args.threads}, {args.rounds} interleaved rounds; ratios hardwood / peer "
          "(median [25%-75%])")
    for name, peer, peer_predict in models:
        model = hw.import_model(peer)  # for runtime='naive'
        for n in sizes:
            Z = rng.normal(size=(n, 28)).astype(np.float32)
            want = peer_predict(peer, Z)
            got = hw.import_model(peer).predict(Z)
            if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
                raise SystemExit(f"{name}: hardwood differs from the peer by "
                                 f"{np.abs(got - want).max():.3g} on {n} rows")
            times = {"first": [], "default": [], "naive": [], "peer": []}
            for _ in range(args.rounds):
                fresh = hw.import_model(peer)  # no layout yet
                t = time.perf_counter()
                fresh.predict(Z)
                times["first"].append(time.perf_counter() - t)
                for key, call in (("default", lambda: fresh.predict(Z)),
                                  ("naive", lambda: model.predict(Z, runtime="naive")),
                                  ("peer", lambda: peer_predict(peer, Z))):
                    t = time.perf_counter()
                    call()
                    times[key].append(time.perf_counter() - t)
            peer_ms = np.median(times["peer"]) * 1e3
            cells = []
            for key in ("first", "default", "naive"):
                med, lo, hi = _median_ratio(times[key], times["peer"])
                cells.append(f"{key} {np.median(times[key]) * 1e3:.3f} ms "
                             f"({med:.2f} [{lo:.2f}-{hi:.2f}])")
            print(f"{name}, {n} rows: peer {peer_ms:.3f} ms; " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
