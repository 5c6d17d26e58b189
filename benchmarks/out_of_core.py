"""Out-of-core training, the out-of-core paper's Table 2 on the CPU: time and test AUC of
in-core training, out-of-core streaming (every level reads every page) and out-of-core
sampled (each round's sample gathered into memory) with mvs at f = 1.0, 0.5, 0.3, 0.1 and
goss and uniform at f = 0.1.

    python benchmarks/out_of_core.py [--rows 1000000 --features 28 --rounds 100 --depth 6]
        [--seeds 5] [--only-sampled]

The data is Higgs-shaped ``make_classification``; the training rows reach hardwood through
``Dataset.from_batches`` (batches of 100,000 rows, pages of 32 MiB in a temporary folder).
Every fit runs in this process after a warm-up (kernels compiled), one run each: the
figures are one run, not medians. Goals (issue 13): mvs at f = 0.3 within 0.002 AUC of
in-core; mvs at f = 0.1 better than uniform at f = 0.1. With ``--seeds N`` the three f = 0.1
samplers are also trained with N other sampling seeds (the same data), and their mean test
AUC, spread and how often mvs beats uniform are printed: one run's AUC differences at
f = 0.1 are of the order of the seed-to-seed spread.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np

os.environ.setdefault("HARDWOOD_FUSED", "1")  # the fused grower in core, compiled at warm-up

import hardwood  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--page-mib", type=float, default=32)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--skip-streaming", action="store_true")
    ap.add_argument("--only-sampled", action="store_true",
                    help="only the f = 0.1 samplers over --seeds (and in-core)")
    ap.add_argument("--seeds", type=int, default=0)
    args = ap.parse_args()

    n_test = max(args.rows // 10, 1000)
    X, y = make_classification(args.rows + n_test, args.features, n_informative=14,
                               n_redundant=6, flip_y=0.05, class_sep=0.6, random_state=0)
    X = X.astype(np.float32)
    Xtr, ytr, Xte, yte = X[:args.rows], y[:args.rows], X[args.rows:], y[args.rows:]

    def batches():
        for a in range(0, args.rows, args.batch):
            yield Xtr[a:a + args.batch], ytr[a:a + args.batch]

    base = {"objective": "binary:logistic", "learning_rate": 0.1, "max_depth": args.depth}
    folder = tempfile.mkdtemp(prefix="hardwood-ooc-")
    try:
        small = hardwood.Dataset(Xtr[:5000], ytr[:5000])
        for f in ("uniform", "mvs", "goss"):  # warm-up: every kernel compiled
            hardwood.train({**base, "sampling_method": f, "subsample": 0.5}, small, 3)
        t0 = time.perf_counter()
        disk = hardwood.Dataset.from_batches(batches, os.path.join(folder, "pages"),
                                             page_bytes=int(args.page_mib * 2**20))
        t_build = time.perf_counter() - t0
        pages = len(disk.pages_on_disk[0])
        print(f"{args.rows:,} x {args.features}, {args.rounds} rounds, depth {args.depth}, "
              f"lr 0.1; "
              f"from_batches: {t_build:.1f} s, {pages} pages, sketch error "
              f"{disk.sketch_error:.2g} of the rows")
        print(f"{'mode':<28}{'time s':>8}{'s/round':>9}{'test AUC':>10}{'vs in-core':>12}")
        t0 = time.perf_counter()
        core = hardwood.train(base, hardwood.Dataset(Xtr, ytr), args.rounds)
        t_core = time.perf_counter() - t0
        auc_core = roc_auc_score(yte, core.predict(Xte))
        print(f"{'in-core':<28}{t_core:8.1f}{t_core / args.rounds:9.3f}{auc_core:10.4f}")
        tenth = [(f"out-of-core {m} f=0.1", {"sampling_method": m, "subsample": 0.1})
                 for m in ("mvs", "goss", "uniform")]
        runs = [] if args.skip_streaming or args.only_sampled else \
            [("out-of-core streaming", {})]
        if not args.only_sampled:
            runs += [(f"out-of-core mvs f={f}", {"sampling_method": "mvs", "subsample": f})
                     for f in (1.0, 0.5, 0.3)]
        runs += tenth
        for name, extra in runs:
            t0 = time.perf_counter()
            m = hardwood.train({**base, **extra}, disk, args.rounds)
            t = time.perf_counter() - t0
            auc = roc_auc_score(yte, m.predict(Xte))
            print(f"{name:<28}{t:8.1f}{t / args.rounds:9.3f}{auc:10.4f}{auc - auc_core:+12.4f}",
                  flush=True)
        if args.seeds:
            aucs = {name: [] for name, _ in tenth}
            for seed in range(1, args.seeds + 1):  # interleaved: one seed, every sampler
                for name, extra in tenth:
                    m = hardwood.train({**base, **extra, "random_state": seed}, disk,
                                       args.rounds)
                    aucs[name].append(roc_auc_score(yte, m.predict(Xte)))
            print(f"f = 0.1 over {args.seeds} sampling seeds: mean test AUC (min-max)")
            for name, v in aucs.items():
                print(f"{name:<28}{np.mean(v):10.4f} ({min(v):.4f}-{max(v):.4f})"
                      f"{np.mean(v) - auc_core:+12.4f}")
            wins = sum(a > b for a, b in zip(aucs["out-of-core mvs f=0.1"],
                                             aucs["out-of-core uniform f=0.1"]))
            print(f"mvs beats uniform in {wins} of {args.seeds} seeds", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
