"""LambdaMART prediction, hardwood ``auto`` against lleaves, in interleaved rounds (issue 20:
``auto`` >= 2x lleaves' throughput without the patented QuickScorer).

    python benchmarks/lambdamart_vs_lleaves.py [--rounds 7 --threads 2]

The model is ``predict_peers.py``'s: LightGBM lambdarank, 500 trees of 31 leaves, on
``../shared/data/rank.train`` (300 features), scored on its rows tiled to 249,415. lleaves
runs in its own environment (``benchmarks/.venv-lleaves``, made by ``predict_peers.py``), in
a subprocess per round that loads its compiled model from a cache file (compiled once,
before the rounds). Each round takes, for each library, the best of ``--repeat`` batch calls
at ``--threads`` threads, hardwood's first then lleaves'; the per-round ratios and their median
are printed. hardwood's scores are checked against LightGBM's before any timing, lleaves'
inside its worker.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lleaves-venv", default=os.path.join(HERE, ".venv-lleaves"))
    a = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    import numba
    from predict_peers import lambdamart_model

    import hardwood

    numba.set_num_threads(a.threads)
    path = os.path.join(HERE, "..", "..", "shared", "data", "rank.train")
    py = os.path.join(a.lleaves_venv, "bin", "python")
    if not (os.path.exists(path) and os.path.exists(py)):
        raise SystemExit(f"needs {path} and {py} (python benchmarks/predict_peers.py makes it)")
    booster, Xr = lambdamart_model(path, a.threads)
    X = np.ascontiguousarray(np.tile(Xr, (83, 1)))
    ref = booster.predict(X, raw_score=True, num_threads=a.threads)
    c = hardwood.compile(hardwood.import_model(booster), "auto")
    got = c.predict(X, output="raw")
    assert np.allclose(got, ref, rtol=1e-9, atol=1e-9), np.abs(got - ref).max()
    with tempfile.TemporaryDirectory() as work:
        model, xp, rp = (os.path.join(work, f) for f in ("m.txt", "X.npy", "ref.npy"))
        booster.save_model(model)
        np.save(xp, X.astype(np.float64))  # lleaves' own dtype: it copies nothing
        np.save(rp, ref)
        cache = os.path.join(work, "lleaves.so")

        def lleaves():
            cmd = [py, os.path.join(HERE, "lleaves_worker.py"), model, xp, rp, str(a.threads),
                   str(a.repeat), "1", "0", cache]
            r = subprocess.run(cmd, capture_output=True, text=True, check=True)
            res = json.loads(r.stdout.strip().splitlines()[-1])
            assert res["max_abs_err"] < 1e-9, res
            return res

        t = time.perf_counter()
        first = lleaves()  # compiles into the cache
        print(f"lleaves {first['versions']}: compile {time.perf_counter() - t:.1f} s; hardwood "
              f"auto picks {c.choose(X.shape[0])}; {X.shape[0]:,} rows x {X.shape[1]}, "
              f"{a.threads} threads, best of {a.repeat} a round")
        ratios, hw_rates, ll_rates = [], [], []
        for k in range(a.rounds):
            best = min(_timed(lambda: c.predict(X, output="raw")) for _ in range(a.repeat))
            ll = lleaves()["batch_s"]
            hw_rates.append(X.shape[0] / best / 1e6)
            ll_rates.append(X.shape[0] / ll / 1e6)
            ratios.append(ll / best)
            print(f"  round {k + 1}: hardwood {hw_rates[-1]:.3f}, lleaves {ll_rates[-1]:.3f} "
                  f"M rows/s: {ratios[-1]:.2f}x", flush=True)
    print(f"median: hardwood {statistics.median(hw_rates):.3f}, lleaves "
          f"{statistics.median(ll_rates):.3f} M rows/s; ratio per round median "
          f"{statistics.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f})")


def _timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
