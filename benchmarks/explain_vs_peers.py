"""TreeSHAP contributions: hardwood's ``Model.predict(X, output="contrib")`` against XGBoost's
CPU ``Booster.predict(DMatrix, pred_contribs=True)`` on the same model (imported), same rows,
same threads.

    flock /tmp/hardwood-cpu.lock python benchmarks/explain_vs_peers.py [--rows 100000]
        [--rounds 5] [--threads 2] [--trees 500] [--depth 6] [--no-cold]

Model: XGBoost, ``--trees`` trees of depth ``--depth`` on a 28-feature Higgs-shaped set
(``make_classification``), trained on 50,000 rows. Every library is imported and hardwood's
kernels are compiled before any timer starts; hardwood's values are checked against XGBoost's
(within 1e-5: XGBoost computes in float32) on the first 5,000 rows before timing, and on all
the rows of the first round after it. Rounds are interleaved (hardwood, then XGBoost, each
round); the script prints medians with min and max, and the ratio XGBoost / hardwood.

The timed hardwood call includes its input conversion (``Model.prepare``); XGBoost's excludes
building the ``DMatrix``. Building hardwood's paths and tables (once per model, kept on it) is
reported apart. Cold start: a child process with an empty Numba cache times the first
``output="contrib"`` call on a small model (the compile), then a second child the same call
with that cache (``--no-cold`` skips it).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

COLD_CHILD = r"""
import time
t0 = time.perf_counter()
import numpy as np, xgboost as xgb, hardwood
from sklearn.datasets import make_classification
X, y = make_classification(n_samples=2000, n_features=28, n_informative=20, random_state=0)
bst = xgb.train({"objective": "binary:logistic", "max_depth": 6, "nthread": 2},
                xgb.DMatrix(X, y), 20)
m = hardwood.import_model(bst)
m.predict(X[:10], output="raw")  # the input conversion and the walk, compiled apart
t1 = time.perf_counter()
m.predict(X[:100], output="contrib")
t2 = time.perf_counter()
m.predict(X[:100], output="interaction")
t3 = time.perf_counter()
print(f"{t2 - t1:.2f} {t3 - t2:.2f}")
"""


def higgs_shaped(n, seed=0):
    from sklearn.datasets import make_classification
    X, y = make_classification(n_samples=n, n_features=28, n_informative=20, n_redundant=4,
                               flip_y=0.05, random_state=seed)
    return X.astype(np.float32), y.astype(np.float32)


def cold_start():
    """Seconds of the first 'contrib' and 'interaction' calls with an empty, then a filled,
    Numba cache (each in a fresh child process)."""
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, NUMBA_NUM_THREADS="2")
        for label in ("empty cache", "filled cache"):
            r = subprocess.run([sys.executable, "-c", COLD_CHILD], env=env, capture_output=True,
                               text=True)
            if r.returncode:
                sys.exit(f"the cold-start child failed:\n{r.stderr[-3000:]}")
            out[label] = [float(v) for v in r.stdout.split()[-2:]]
    return out


def spread(v):
    v = np.asarray(v)
    return f"median {np.median(v):7.2f} s (min {v.min():.2f}, max {v.max():.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=100_000, help="rows explained per call")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-start children")
    a = ap.parse_args()

    os.environ.setdefault("NUMBA_NUM_THREADS", str(a.threads))
    import numba
    import xgboost as xgb

    import hardwood
    numba.set_num_threads(a.threads)

    cold = None if a.no_cold else cold_start()

    X, y = higgs_shaped(50_000 + a.rows)
    Xtr, ytr, Xte = X[:50_000], y[:50_000], X[50_000:]
    t = time.perf_counter()
    bst = xgb.train({"objective": "binary:logistic", "max_depth": a.depth, "eta": 0.1,
                     "tree_method": "hist", "nthread": a.threads},
                    xgb.DMatrix(Xtr, ytr, nthread=a.threads), a.trees)
    print(f"XGBoost {xgb.__version__}: {a.trees} trees of depth {a.depth} trained in "
          f"{time.perf_counter() - t:.1f} s")
    model = hardwood.import_model(bst)
    dte = xgb.DMatrix(Xte, nthread=a.threads)

    t = time.perf_counter()
    model.shap_data()
    print(f"hardwood: paths and tables built in {time.perf_counter() - t:.2f} s (once per model)")
    model.predict(Xte[:100], output="contrib")  # compiled (or loaded) before any timer

    # the same values before timing
    check = 5000
    hw = model.predict(Xte[:check], output="contrib")
    ref = bst.predict(xgb.DMatrix(Xte[:check], nthread=a.threads), pred_contribs=True)
    diff = np.abs(hw - ref).max()
    print(f"check on {check:,} rows: max |hardwood - XGBoost| = {diff:.2e}")
    if not np.allclose(hw, ref, rtol=1e-5, atol=1e-5):
        sys.exit("hardwood's contributions differ from XGBoost's")

    times = {"hardwood": [], "xgboost": []}
    for r in range(a.rounds):
        t = time.perf_counter()
        hw = model.predict(Xte, output="contrib")
        times["hardwood"].append(time.perf_counter() - t)
        t = time.perf_counter()
        ref = bst.predict(dte, pred_contribs=True)
        times["xgboost"].append(time.perf_counter() - t)
        if r == 0:
            print(f"all {a.rows:,} rows: max |hardwood - XGBoost| = {np.abs(hw - ref).max():.2e}"
                  f", rows sum to the raw margin within "
                  f"{np.abs(hw.sum(1) - model.predict(Xte, output='raw')).max():.1e}")
        print(f"  round {r + 1}: hardwood {times['hardwood'][-1]:.2f} s, "
              f"XGBoost {times['xgboost'][-1]:.2f} s", flush=True)

    print(f"\n{a.rows:,} rows x {Xte.shape[1]} features, {a.trees} trees of depth {a.depth}, "
          f"{a.threads} threads, {a.rounds} interleaved rounds")
    for who in ("hardwood", "xgboost"):
        print(f"  {who:9s} {spread(times[who])}")
    ratio = np.asarray(times["xgboost"]) / np.asarray(times["hardwood"])
    print(f"  XGBoost / hardwood time: median {np.median(ratio):.2f}x "
          f"(min {ratio.min():.2f}, max {ratio.max():.2f}); goal >= 1.5x")
    if cold:
        e, f = cold["empty cache"], cold["filled cache"]
        print(f"cold start (first call, 20-tree model): contrib {e[0]:.1f} s, interaction "
              f"{e[1]:.1f} s with an empty Numba cache; {f[0]:.1f} s and {f[1]:.1f} s with it "
              "filled")


if __name__ == "__main__":
    main()
