"""LambdaMART against LightGBM's and XGBoost's (issue 15): test NDCG@{1,3,10} and training
time on a synthetic MSLR-shaped set, and on the shared LETOR data when it is there.

    python benchmarks/rank_vs_peers.py [--queries 1000 --docs 100 --features 136 --rounds 100
                                        --repeats 3 --threads 2]
    python benchmarks/rank_vs_peers.py --study [--rounds 500]   # the prediction study

Synthetic set: ``queries`` queries of ``docs`` rows (100,000 rows by default), 136 features,
relevance grades 0-4 from a noisy nonlinear score of a few features and a per-query shift
(MSLR-WEB's shape; its grade shares roughly 52/32/13/2/1%); a test set of a fifth as many
queries drawn alike. Models, 100 trees, lr 0.1:

* hardwood ``rank:ndcg`` with 63 leaves (lossguide) against LightGBM's ``LGBMRanker``
  (lambdarank, num_leaves 63);
* hardwood ``rank:ndcg`` with depth 6 against XGBoost's ``rank:ndcg`` (hist, depth 6);
* hardwood with XGBoost's step ("XGB's step"): XGBoost doubles each pair's hessian, so its
  model of lr 0.1, lambda 1, min_child_weight 1 is hardwood's of lr 0.05, reg_lambda 0.5,
  min_child_weight 0.5, with XGBoost's top-k of 32 pairs (``tests/test_ranking.py`` checks
  that the two then grow the same trees).

Every library is imported and every kernel warmed before any timer; fits are interleaved
(hardwood, LightGBM, XGBoost, again) and the medians printed with their spread. Goal:
NDCG@10 within 0.01 of the peer's.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import hardwood
from hardwood.ranking import group_ptr, ranking_metric

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")


def synthetic(n_queries, docs, d, seed):
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, d)).astype(np.float32)
    shift = np.repeat(rng.normal(scale=0.5, size=n_queries), docs)
    w = rng.normal(size=8)
    score = (X[:, :8] @ w / 3 + np.sin(2 * X[:, 8]) + 0.5 * X[:, 9] * X[:, 10] + shift
             + rng.normal(scale=0.7, size=n))
    y = np.digitize(score, np.quantile(score, [0.52, 0.84, 0.97, 0.99])).astype(np.float64)
    return X, y, np.full(n_queries, docs)


def letor():
    from sklearn.datasets import load_svmlight_file

    if not os.path.exists(os.path.join(DATA, "rank.train")):
        return None
    Xtr, ytr = load_svmlight_file(os.path.join(DATA, "rank.train"))
    Xte, yte = load_svmlight_file(os.path.join(DATA, "rank.test"), n_features=Xtr.shape[1])
    gtr = np.loadtxt(os.path.join(DATA, "rank.train.query"), dtype=int)
    gte = np.loadtxt(os.path.join(DATA, "rank.test.query"), dtype=int)
    return Xtr.toarray(), ytr, gtr, Xte.toarray(), yte, gte


def fitters(rounds, threads):
    import lightgbm as lgb
    import xgboost as xgb

    def hw_leaves(X, y, g):
        return hardwood.GBDTRanker(n_estimators=rounds, learning_rate=0.1, max_leaves=63,
                                   grow_policy="lossguide", max_depth=0, min_child_weight=1e-3,
                                   reg_lambda=0.0, n_jobs=threads).fit(X, y, group=g)

    def hw_depth(X, y, g):
        return hardwood.GBDTRanker(n_estimators=rounds, learning_rate=0.1, max_depth=6,
                                   n_jobs=threads).fit(X, y, group=g)

    def hw_xgb_step(X, y, g):  # XGBoost's model: its hessian is doubled, so half of each
        return hardwood.GBDTRanker(n_estimators=rounds, learning_rate=0.05, max_depth=6,
                                   reg_lambda=0.5, min_child_weight=0.5,
                                   lambdarank_truncation_level=32, n_jobs=threads).fit(X, y, group=g)

    def lightgbm(X, y, g):
        return lgb.LGBMRanker(n_estimators=rounds, learning_rate=0.1, num_leaves=63,
                              verbose=-1, n_jobs=threads).fit(X, y, group=g)

    def xgboost(X, y, g):
        return xgb.XGBRanker(n_estimators=rounds, learning_rate=0.1, max_depth=6,
                             objective="rank:ndcg", tree_method="hist",
                             n_jobs=threads).fit(X, y, group=g)

    return {"hardwood 63 leaves": hw_leaves, "LightGBM 63 leaves": lightgbm,
            "hardwood depth 6": hw_depth, "XGBoost depth 6": xgboost,
            "hardwood, XGB's step": hw_xgb_step}


def compare(name, data, rounds, repeats, threads):
    Xtr, ytr, gtr, Xte, yte, gte = data
    fits = fitters(rounds, threads)
    ptr = group_ptr(len(yte), gte)
    times = {k: [] for k in fits}
    ndcg = {}
    for _ in range(repeats):
        for k, fit in fits.items():
            t0 = time.perf_counter()
            model = fit(Xtr, ytr, gtr)
            times[k].append(time.perf_counter() - t0)
            p = model.predict(Xte)
            ndcg[k] = [ranking_metric(f"ndcg@{c}", yte, p, ptr) for c in (1, 3, 10)]
    print(f"\n{name}: {len(ytr):,} training rows in {len(gtr)} queries, {Xtr.shape[1]} features,"
          f" {rounds} trees, {threads} threads; fit seconds: median (min-max) of {repeats}")
    print(f"  {'model':<22}{'fit s':>8}{'':>16}{'NDCG@1':>9}{'NDCG@3':>9}{'NDCG@10':>9}")
    for k in fits:
        t = times[k]
        print(f"  {k:<22}{statistics.median(t):8.2f}  ({min(t):.2f}-{max(t):.2f})"
              f"{ndcg[k][0]:9.4f}{ndcg[k][1]:9.4f}{ndcg[k][2]:9.4f}")
    for ours, peer in (("hardwood 63 leaves", "LightGBM 63 leaves"),
                       ("hardwood depth 6", "XGBoost depth 6"),
                       ("hardwood, XGB's step", "XGBoost depth 6")):
        print(f"  {ours} / {peer}: time {statistics.median(times[ours]) / statistics.median(times[peer]):.2f}x,"
              f" NDCG@10 {ndcg[ours][2] - ndcg[peer][2]:+.4f} (goal within 0.01)")


def prediction_study(data, rounds, threads, runtimes=("naive", "struct+", "pred", "vpred",
                                                       "codegen", "auto")):
    """The prediction paper's Table 3 models: LambdaMART on the LETOR data with 10-70 leaves
    per tree; their NDCG@{1,3,10}, average tree depth, and each runtime's time per row on the
    test set (median of 5 calls, after a first call that compiles), and the seconds
    ``codegen`` took to generate and compile its code (about 1.5 s per tree of 70 leaves:
    leave it out with ``--runtimes`` for 500 trees)."""
    Xtr, ytr, gtr, Xte, yte, gte = data
    ptr = group_ptr(len(yte), gte)
    Xbig = np.tile(Xte, (max(1, 100_000 // len(Xte)), 1))
    print(f"\nprediction study: LambdaMART, {rounds} trees, lr 0.1 on rank.train; times on "
          f"{len(Xbig):,} rows (rank.test tiled), {threads} threads, ns per row (median of 5)")
    print(f"  {'leaves':>6}{'depth':>7}{'NDCG@1':>8}{'NDCG@3':>8}{'NDCG@10':>8}"
          + "".join(f"{r:>9}" for r in runtimes) + "  compile s")
    for leaves in (10, 30, 50, 70):
        model = hardwood.train({"objective": "rank:ndcg", "learning_rate": 0.1,
                                "grow_policy": "lossguide", "max_leaves": leaves,
                                "max_depth": 0, "min_child_weight": 1e-3, "reg_lambda": 0.0,
                                "n_jobs": threads},
                               hardwood.Dataset(Xtr, ytr, group=gtr), rounds)
        p = model.predict(Xte)
        nd = [ranking_metric(f"ndcg@{c}", yte, p, ptr) for c in (1, 3, 10)]
        depth = np.mean([t.depth() for t in model.trees])
        cells, compile_s = [], {}
        for r in runtimes:
            t0 = time.perf_counter()
            c = hardwood.compile(model, r)
            c.predict(Xbig[:1])
            compile_s[r] = time.perf_counter() - t0
            out = c.predict(Xbig)
            assert np.allclose(out, model.predict(Xbig), rtol=1e-6, atol=1e-9), r
            ts = []
            for _ in range(5):
                t0 = time.perf_counter()
                c.predict(Xbig)
                ts.append(time.perf_counter() - t0)
            cells.append(statistics.median(ts) / len(Xbig) * 1e9)
        print(f"  {leaves:>6}{depth:7.1f}" + "".join(f"{v:8.4f}" for v in nd)
              + "".join(f"{v:9.1f}" for v in cells)
              + "  " + ", ".join(f"{r} {compile_s[r]:.1f}" for r in runtimes
                                 if compile_s[r] >= 1.0), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--study", action="store_true",
                    help="only the prediction study (LambdaMART with 10-70 leaves on LETOR)")
    ap.add_argument("--runtimes", default="naive,struct+,pred,vpred,codegen,auto",
                    help="the prediction study's runtimes, comma-separated")
    args = ap.parse_args()
    if args.study:
        real = letor()
        if real is None:
            raise SystemExit("the prediction study needs ../shared/data/rank.train")
        prediction_study(real, args.rounds, args.threads, tuple(args.runtimes.split(",")))
        return
    Xtr, ytr, gtr = synthetic(args.queries, args.docs, args.features, 0)
    Xte, yte, gte = synthetic(max(args.queries // 5, 1), args.docs, args.features, 1)
    # warm-up: every library's and every kernel's first call outside the timers
    small = (Xtr[:2000], ytr[:2000], np.full(20, 100))
    for fit in fitters(3, args.threads).values():
        fit(*small)
    real = letor()
    if real is not None:
        compare("shared LETOR data (rank.train / rank.test)", real, args.rounds, args.repeats,
                args.threads)
    compare("synthetic MSLR-shaped", (Xtr, ytr, gtr, Xte, yte, gte), args.rounds, args.repeats,
            args.threads)


if __name__ == "__main__":
    main()
