"""Runs inside the lleaves virtualenv (benchmarks/.venv-lleaves: lleaves 1.3.0 needs
llvmlite < 0.45, which the main environment's Numba cannot use). Called by predict_peers.py:

    python lleaves_worker.py MODEL.txt X.npy REF.npy THREADS REPEAT LATENCY_N [SINGLE_COMPILE
                             [CACHE]]

Compiles the LightGBM model file with lleaves (raw scores, double precision), checks the
margins against REF.npy (LightGBM's own), times batch prediction (best of REPEAT) with THREADS
threads and the median single-row latency with n_jobs=1. With SINGLE_COMPILE=1 the latency is
taken on a second compilation with cache blocking off (as lleaves' documentation advises for
single rows; it doubles the compile time, which for 255-leaf trees is minutes), else on the
batch compilation. CACHE: a file for lleaves' compiled model (written on the first call,
loaded on the next: rounds interleaved with other libraries need not recompile). Prints one
JSON line.
"""
import json
import sys
import time

import numpy as np


def main():
    model_file, x_path, ref_path = sys.argv[1:4]
    threads, repeat, lat_n = (int(a) for a in sys.argv[4:7])
    import lleaves

    X = np.load(x_path)  # float64: lleaves' own dtype, so predict copies nothing
    ref = np.load(ref_path)
    res = {}
    t = time.perf_counter()
    m = lleaves.Model(model_file=model_file)
    cache = sys.argv[8] if len(sys.argv) > 8 else None
    m.compile(cache=cache, raw_score=True)
    res["compile_s"] = time.perf_counter() - t
    got = m.predict(X[:2000], n_jobs=threads)
    res["max_abs_err"] = float(np.max(np.abs(got.reshape(-1) - ref[:2000].reshape(-1))))
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        m.predict(X, n_jobs=threads)
        best = min(best, time.perf_counter() - t)
    res["batch_s"] = best
    m1 = m
    if len(sys.argv) > 7 and sys.argv[7] == "1":
        t = time.perf_counter()
        m1 = lleaves.Model(model_file=model_file)
        m1.compile(raw_score=True, fblocksize=m1.num_trees())
        res["compile_single_s"] = time.perf_counter() - t
    row = np.ascontiguousarray(X[:1])
    m1.predict(row, n_jobs=1)
    ts = []
    for _ in range(lat_n):
        t = time.perf_counter_ns()
        m1.predict(row, n_jobs=1)
        ts.append(time.perf_counter_ns() - t)
    res["latency_us"] = float(np.median(ts)) / 1e3
    from importlib.metadata import version
    res["versions"] = {"lleaves": version("lleaves"),
                       "llvmlite": version("llvmlite")}
    print(json.dumps(res))


if __name__ == "__main__":
    main()
