"""Calibrate the depth-first / breadth-first crossover of hybrid forest growth (CudaTree §3.1).

For a grid of synthetic data sets (rows x classes x features) a small forest is grown with
each crossover value of a grid; the fastest crossover of each set is the target of an
ordinary-least-squares fit

    crossover = a + b * classes + c * rows + d * features_per_split

whose coefficients go into ``hardwood.train.forest_grower.CROSSOVER_COEF`` (CPU) or
``hardwood.backends.forest_cuda.GPU_CROSSOVER_COEF`` (``--device cuda``, on a machine with a
GPU). Prints a markdown table of the measurements and the fitted formula (for
benchmarks/README.md).

    python benchmarks/calibrate_forest_crossover.py            # 27 sets, 2 threads
    python benchmarks/calibrate_forest_crossover.py --quick    # 8 sets
    python benchmarks/calibrate_forest_crossover.py --device cuda
"""
from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np


def grow_time(data, tp, rows, w, keys, crossover, repeat, device="cpu"):
    if device == "cuda":
        from hardwood.train.forest_grower import grow_tree_cuda as grow_tree
    else:
        from hardwood.train.forest_grower import grow_tree

    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for key in keys:
            grow_tree(data, tp, rows.copy(), w, key, growth="hybrid", crossover=crossover)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trees", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    a = ap.parse_args(argv)

    import numba
    from sklearn.datasets import make_classification

    from hardwood.backends import forest_cpu as K
    from hardwood.data.dataset import Dataset
    from hardwood.train.forest_grower import GrowData, TreeParams

    numba.set_num_threads(min(a.threads, numba.config.NUMBA_NUM_THREADS))
    if a.quick:
        grid_rows, grid_classes, grid_features = (20_000, 80_000), (2, 20), (16, 256)
    else:
        grid_rows, grid_classes, grid_features = (20_000, 60_000, 150_000), (2, 10, 50), \
            (16, 64, 256)
    # pure depth-first (crossover 0) is several times slower: benchmarks/forest_vs_peers.py
    # --growth measures it; the grid holds finite crossovers and pure breadth-first
    crossovers = [500, 1000, 2000, 4000, 8000, 16000, 32000, 10**9]
    records = []
    print("| rows | classes | features | mtry | " + " | ".join(
        "BF only" if c == 10**9 else str(c) for c in crossovers)
        + " | best |")
    print("|" + "---|" * (len(crossovers) + 5))
    warm = True
    for n, k, d in itertools.product(grid_rows, grid_classes, grid_features):
        X, y = make_classification(n, d, n_informative=min(d, 12), n_redundant=0,
                                   n_classes=k, n_clusters_per_class=1, flip_y=0.05,
                                   random_state=n + k + d)
        ds = Dataset(X.astype(np.float32))
        data = GrowData.from_dataset(ds, y, False, k)
        mtry = max(1, int(math.sqrt(d)))
        tp = TreeParams(criterion=K.GINI, mtry=mtry)
        rng = np.random.default_rng(0)
        cnt = np.bincount(rng.integers(0, n, n), minlength=n)
        rows = np.flatnonzero(cnt > 0).astype(np.int32)
        w = cnt.astype(np.float64)
        keys = [K.root_key(0, t) for t in range(a.trees)]
        if warm:
            grow_time(data, tp, rows, w, keys[:1], 1000, 1, a.device)
            warm = False
        times = [grow_time(data, tp, rows, w, keys, c, a.repeat, a.device)
                 for c in crossovers]
        # targets: the fastest finite crossover (the pure schemes are shown for reference)
        inner = times[:-1]
        best = crossovers[:-1][int(np.argmin(inner))]
        records.append((n, k, mtry, best))
        print(f"| {n} | {k} | {d} | {mtry} | " + " | ".join(f"{t:.2f}" for t in times)
              + f" | {best} |", flush=True)
    A = np.array([[1.0, k, n, m] for n, k, m, _ in records])
    b = np.array([r[3] for r in records], dtype=np.float64)
    coef, *_ = np.linalg.lstsq(A, b, rcond=None)
    print()
    print(f"crossover = {coef[0]:.1f} + {coef[1]:.3f} * classes + {coef[2]:.5f} * rows + "
          f"{coef[3]:.3f} * features_per_split")
    print(f"CROSSOVER_COEF = ({coef[0]:.1f}, {coef[1]:.4f}, {coef[2]:.6f}, {coef[3]:.4f})")
    return coef, records


if __name__ == "__main__":
    main()
