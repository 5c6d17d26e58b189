"""Cold start: import, a first fit and a predict in a fresh process with empty kernel caches,
and the compile footprint behind it (which Numba kernels compiled, how many signatures, the
seconds each took).

    python benchmarks/cold_start.py [--rows 50000 --features 20 --trees 20 --depth 6]
                                    [--warm] [--top 25]

Each measurement runs in a child process with NUMBA_CACHE_DIR and HARDWOOD_CACHE_DIR set to
fresh empty folders (``--warm``: a second child reuses the first one's folders, which is a
user's second run). Issue 21's goal: the whole cold run within 20 s on the 2-core machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from numba.core import event
recording = event.install_recorder("numba:compile")
rec = recording.__enter__()
import numpy as np
import hardwood
t_import = time.perf_counter() - t0
rows, features, trees, depth = map(int, sys.argv[1:5])
rng = np.random.default_rng(0)
X = rng.normal(size=(rows, features)).astype(np.float32)
y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=rows) > 0).astype(np.float64)
t1 = time.perf_counter()
m = hardwood.train({"objective": "binary:logistic", "max_depth": depth}, hardwood.Dataset(X, y),
                   num_boost_round=trees)
t_fit = time.perf_counter() - t1
t2 = time.perf_counter()
p = m.predict(X)
t_predict = time.perf_counter() - t2
t3 = time.perf_counter()
p2 = hardwood.compile(m, "auto").predict(X)
t_auto = time.perf_counter() - t3
assert np.allclose(p, p2)
recording.__exit__(None, None, None)
# compile events: start/end pairs per dispatcher and signature
start, per = {}, {}
for ts, ev in rec.buffer:
    disp = ev.data["dispatcher"]
    key = f"{disp.py_func.__module__}.{disp.py_func.__qualname__}"
    sig = (id(disp), str(ev.data["args"]))
    if ev.is_start:
        start[sig] = ts
    else:
        n, s = per.get(key, (0, 0.0))
        per[key] = (n + 1, s + ts - start.pop(sig, ts))
print(json.dumps({"import": t_import, "fit": t_fit, "predict": t_predict, "compile_auto": t_auto,
                  "total": time.perf_counter() - t0, "kernels": per}))
"""


def run(args, cache_root):
    env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(cache_root, "numba"),
               HARDWOOD_CACHE_DIR=os.path.join(cache_root, "hardwood"))
    r = subprocess.run([sys.executable, "-c", CHILD, str(args.rows), str(args.features),
                        str(args.trees), str(args.depth)], env=env, capture_output=True,
                       text=True)
    if r.returncode:
        sys.exit(f"the child failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def show(label, res, top):
    print(f"{label}: total {res['total']:.1f} s (import {res['import']:.1f}, fit "
          f"{res['fit']:.1f}, Model.predict {res['predict']:.1f}, compile('auto') + predict "
          f"{res['compile_auto']:.1f})")
    kernels = sorted(res["kernels"].items(), key=lambda kv: -kv[1][1])
    total = sum(s for _, (_, s) in kernels)
    n_sig = sum(n for _, (n, _) in kernels)
    print(f"  compiled: {len(kernels)} kernels, {n_sig} signatures, {total:.1f} s "
          "(nested compiles are counted in their callers too)")
    for name, (n, s) in kernels[:top]:
        print(f"  {s:6.2f} s  {n:3d} sig  {name}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--warm", action="store_true", help="also a second run on the same caches")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hardwood-cold-") as root:
        show("cold (empty caches)", run(args, root), args.top)
        if args.warm:
            show("warm (caches of the cold run)", run(args, root), args.top)


if __name__ == "__main__":
    main()
