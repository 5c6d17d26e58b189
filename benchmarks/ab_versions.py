"""Training time of one hardwood version on a few parameter sets: run it once per version,
interleaved, to compare versions (A/B) on the same data and machine.

    git archive <commit> src | tar -x -C /tmp/before        # each version's sources
    for i in 1 2 3 4 5; do for v in /tmp/before /tmp/after; do
      PYTHONPATH=$v/src flock /tmp/hardwood-cpu.lock python benchmarks/ab_versions.py \\
          higgs,lgb0,lgb20; done; done

Prints one JSON line: seconds per case for 100 rounds on 300,000 x 28 (make_classification,
cached in /tmp), after a 2-round warm-up (Numba compiles there); ``null`` where the version
refuses the case's parameters. Quote medians of the interleaved runs with their spread.
"""
import json
import os
import sys
import time

import numpy as np

import hardwood as hw

CASES = {
    "higgs": {"objective": "binary:logistic", "max_depth": 6, "learning_rate": 0.1},
    "leafwise": {"objective": "binary:logistic", "grow_policy": "lossguide", "max_leaves": 255,
                 "max_depth": 0, "min_child_weight": 100.0, "learning_rate": 0.1},
    # LightGBM's names: its growth, missing rule and defaults
    "lgb0": {"objective": "binary", "num_leaves": 255, "min_data_in_leaf": 0},
    "lgb20": {"objective": "binary", "num_leaves": 255, "min_data_in_leaf": 20},
    "lgb20x": {"objective": "binary", "num_leaves": 255, "min_data_in_leaf": 20,
               "missing_rule": "xgboost"},
}


def data(path="/tmp/hardwood-ab-300k.npz"):
    if not os.path.exists(path):
        from sklearn.datasets import make_classification

        X, y = make_classification(n_samples=300_000, n_features=28, n_informative=14,
                                   n_redundant=6, flip_y=0.05, class_sep=0.6, random_state=0)
        np.savez(path, X=X.astype(np.float32), y=y.astype(np.float32))
    d = np.load(path)
    return d["X"], d["y"]


def main(names, threads=2):
    X, y = data()
    ds = hw.Dataset(X, y)
    out = {}
    for name in names:
        params = dict(CASES[name], n_jobs=threads)
        try:
            hw.train(params, ds, 2)
        except ValueError:
            out[name] = None
            continue
        t = time.perf_counter()
        hw.train(params, ds, 100)
        out[name] = round(time.perf_counter() - t, 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1].split(",") if len(sys.argv) > 1 else list(CASES))
