"""Where device='cuda' boosting spends its time: each step of ``backends/cuda.CudaPages``
(① histograms, ③ partition, ⑤ leaf values, gradients) timed with a device synchronise on
either side, and the host's share (② split finding and the learner's bookkeeping) as the
rest of the fit.

    python benchmarks/gpu_profile_steps.py [--rows 1000000 --rounds 20 --depth 8]

The synchronising timers serialise host and device, so the total is a little above a plain
fit's; the split between the steps is what this is for.
"""
from __future__ import annotations

import argparse
import collections
import functools
import os
import sys
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--depth", type=int, default=8)
    args = ap.parse_args()
    from numba import cuda

    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" or not cuda.is_available():
        print("no CUDA GPU here: this profile needs a real one", file=sys.stderr)
        sys.exit(2)
    import hardwood
    from hardwood.backends import cuda as C
    from sklearn.datasets import make_classification

    spent, calls = collections.defaultdict(float), collections.Counter()

    def timed(name, f):
        @functools.wraps(f)
        def wrapper(*a, **k):
            cuda.synchronize()
            t0 = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                cuda.synchronize()
                spent[name] += time.perf_counter() - t0
                calls[name] += 1
        return wrapper

    for name in ("histograms", "partition", "add_leaf_values", "gradients", "predict_binned",
                 "start", "bind_margins", "__init__"):
        setattr(C.CudaPages, name, timed(name, getattr(C.CudaPages, name)))
    X, y = make_classification(args.rows, args.features, n_informative=args.features // 2,
                               random_state=0)
    ds = hardwood.Dataset(X.astype(np.float32), y)
    p = {"objective": "binary:logistic", "max_depth": args.depth, "device": "cuda"}
    hardwood.train(p, hardwood.Dataset(X[:5000].astype(np.float32), y[:5000]), 2)  # compile
    spent.clear()
    calls.clear()
    t0 = time.perf_counter()
    m = hardwood.train(p, ds, args.rounds)
    total = time.perf_counter() - t0
    print(f"{args.rows:,} x {args.features}, {args.rounds} rounds, depth {args.depth}: "
          f"fit {total:.2f} s")
    for name, s in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<16} {s:7.3f} s  {100 * s / total:5.1f}%  {calls[name]:6d} calls  "
              f"{1e3 * s / calls[name]:8.3f} ms/call")
    rest = total - sum(spent.values())
    print(f"  {'host (② etc.)':<16} {rest:7.3f} s  {100 * rest / total:5.1f}%")
    print("  transfers:", {k: v for k, v in m.training_profile.items() if "bytes" in k})


if __name__ == "__main__":
    main()
