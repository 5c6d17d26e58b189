"""hardwood.dask (issue 17) on one machine: a LocalCluster of 2 single-threaded worker
processes, 2,000,000 x 28 (a HIGGS-shaped synthetic binary task), against single-process
hardwood with 2 threads and against xgboost.dask on the same cluster.

Each timed fit includes binning (hardwood.dask: the sketches and the binning on the workers;
single process: the Dataset; xgboost.dask: the DaskDMatrix). The data is generated on the
workers (persisted there) and, for the single process, gathered once into memory. Every
library is warmed on a small set first (the workers load hardwood's compiled kernels). The
three fits run in interleaved rounds; medians with the spread (min-max) are printed, with
the ratios hardwood.dask / single process and hardwood.dask / xgboost.dask.

Also printed, from hardwood.dask's training profile: the bytes moved per tree (histograms
through the reduction tree and to the client: an upper bound, as a sum whose inputs sit on
one worker copies nothing), the histogram levels and the mean time of a level's histogram
step (submit to reduced result on the client); and, on a 2,000-row set of the same shape,
the same per-level time, which is then all latency (the scheduler's round trips), and the
per-level time of the partition step.

    flock /tmp/hardwood-cpu.lock .venv/bin/python benchmarks/dask_scaling.py
    python benchmarks/dask_scaling.py --rows 200000 --rounds 10 --repeat 1   # a quick look

``--forests``: random forests instead (``--trees`` trees, ``--forest-depth``, sqrt features):
hardwood.dask's two modes (tree-parallel: the data whole on each worker; histogram: the
partitions never move) against single-process ``hardwood.RandomForestClassifier(n_jobs=2)``,
interleaved; accuracy on the training rows, and the histogram mode's round trips and bytes.

    flock /tmp/hardwood-cpu.lock .venv/bin/python benchmarks/dask_scaling.py --forests \
        --rows 500000 --trees 10
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # the workers' xgboost: one thread each

import numpy as np  # noqa: E402


def make_data(rows, features, chunks, seed=0):
    import dask.array as da

    rs = da.random.RandomState(seed)
    X = rs.normal(size=(rows, features), chunks=(chunks, features)).astype(np.float32)

    def label(b):
        z = (b[:, 0] * b[:, 1] + np.sin(b[:, 2]) + 0.5 * b[:, 3] ** 2 - 0.5 + b[:, 4:8].sum(1)
             * 0.3)
        p = 1.0 / (1.0 + np.exp(-z))
        u = np.random.default_rng(int(abs(b[0, 0]) * 1e6)).random(b.shape[0])
        return (u < p).astype(np.float32)

    y = X.map_blocks(label, drop_axis=1, dtype=np.float32)
    return X, y


def auc(y, p):
    order = np.argsort(p, kind="stable")
    r = np.empty(len(p))
    r[order] = np.arange(1, len(p) + 1)
    pos = y == 1
    return float((r[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum()))


def spread(v):
    return f"{statistics.median(v):.2f} s ({min(v):.2f}-{max(v):.2f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--forests", action="store_true")
    ap.add_argument("--trees", type=int, default=10)
    ap.add_argument("--forest-depth", type=int, default=None)
    args = ap.parse_args()
    if args.forests:
        return forests(args)

    import xgboost as xgb
    import xgboost.dask  # noqa: F401  (xgb.dask)
    from distributed import Client, LocalCluster

    import hardwood
    import hardwood.dask as hd
    from hardwood.parallel import threads

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", worker_dashboard_address=None)
    client = Client(cluster)
    params = {"objective": "binary:logistic", "max_depth": args.depth, "learning_rate": 0.1,
              "max_bin": 256}
    xparams = {"objective": "binary:logistic", "max_depth": args.depth, "eta": 0.1,
               "max_bin": 256, "tree_method": "hist", "nthread": 1}

    # warm every library (the workers compile or load hardwood's kernels)
    Xs, ys = make_data(4000, args.features, 1000, seed=1)
    Xs, ys = client.persist([Xs, ys])
    hd.train(client, params, Xs, ys, num_boost_round=2)
    xgb.dask.train(client, xparams, xgb.dask.DaskDMatrix(client, Xs, ys), num_boost_round=2)
    xs_np, ys_np = Xs.compute(), ys.compute()
    with threads(2):
        hardwood.train(dict(params, n_jobs=2), hardwood.Dataset(xs_np, ys_np),
                       num_boost_round=2)

    # latency: a tiny set of the same shape (per-level time is then the round trips)
    Xt, yt = make_data(2000, args.features, -(-2000 // args.partitions), seed=2)
    Xt, yt = client.persist([Xt, yt])
    m = hd.train(client, params, Xt, yt, num_boost_round=args.rounds)
    tiny = m.training_profile
    # latency against the depth of the reduction tree: the tiny set in 2, 4, 8 partitions
    slope = []
    for parts in (2, 4, 8):
        Xl, yl = client.persist(list(make_data(2000, args.features, -(-2000 // parts), seed=2)))
        pr = hd.train(client, params, Xl, yl, num_boost_round=args.rounds).training_profile
        slope.append((parts, 1e3 * pr["dask_reduce_s"] / pr["dask_levels"],
                      1e3 * pr["partition"] / pr["dask_levels"]))
    tiny_level = tiny["dask_reduce_s"] / tiny["dask_levels"]
    tiny_part = tiny["partition"] / tiny["dask_levels"]

    X, y = make_data(args.rows, args.features, -(-args.rows // args.partitions))
    X, y = client.persist([X, y])
    t0 = time.perf_counter()
    X_np, y_np = X.compute(), y.compute()
    print(f"data: {args.rows} x {args.features} float32 in {args.partitions} partitions "
          f"(gathered for the single process in {time.perf_counter() - t0:.1f} s)")

    def run_dask():
        t = time.perf_counter()
        model = hd.train(client, params, X, y, num_boost_round=args.rounds)
        return time.perf_counter() - t, model

    def run_single():
        t = time.perf_counter()
        with threads(2):
            model = hardwood.train(dict(params, n_jobs=2), hardwood.Dataset(X_np, y_np),
                                   num_boost_round=args.rounds)
        return time.perf_counter() - t, model

    def run_xgb():
        t = time.perf_counter()
        out = xgb.dask.train(client, xparams, xgb.dask.DaskDMatrix(client, X, y),
                             num_boost_round=args.rounds)
        return time.perf_counter() - t, out["booster"]

    times = {"hardwood.dask": [], "hardwood 2 threads": [], "xgboost.dask": []}
    models = {}
    for r in range(args.repeat):
        for name, fn in (("hardwood.dask", run_dask), ("hardwood 2 threads", run_single),
                         ("xgboost.dask", run_xgb)):
            s, models[name] = fn()
            times[name].append(s)
            print(f"  round {r}: {name} {s:.2f} s", flush=True)

    # the models agree (AUC on the training rows, first 200,000)
    k = min(200_000, args.rows)
    a_d = auc(y_np[:k], models["hardwood.dask"].predict(X_np[:k]))
    a_s = auc(y_np[:k], models["hardwood 2 threads"].predict(X_np[:k]))
    a_x = auc(y_np[:k], models["xgboost.dask"].inplace_predict(X_np[:k]))
    print(f"AUC (first {k} rows): hardwood.dask {a_d:.4f}, hardwood {a_s:.4f}, "
          f"xgboost.dask {a_x:.4f}")
    assert abs(a_d - a_s) < 0.005 and abs(a_d - a_x) < 0.005, "the models disagree"

    print(f"\n{args.rounds} rounds, depth {args.depth}, 2 workers x 1 thread; medians of "
          f"{args.repeat} interleaved rounds (min-max):")
    for name, v in times.items():
        print(f"  {name:20s} {spread(v)}")
    md = statistics.median(times["hardwood.dask"])
    print(f"  hardwood.dask / hardwood 2 threads = "
          f"{md / statistics.median(times['hardwood 2 threads']):.2f}")
    print(f"  hardwood.dask / xgboost.dask       = "
          f"{md / statistics.median(times['xgboost.dask']):.2f}")
    prof = models["hardwood.dask"].training_profile
    trees = len(models["hardwood.dask"].trees)
    levels = prof["dask_levels"]
    print(f"\nhardwood.dask profile (last fit): {levels} histogram steps, "
          f"{prof['dask_bytes'] / trees / 2**20:.2f} MiB of histograms per tree, "
          f"histogram step {1e3 * prof['dask_reduce_s'] / levels:.1f} ms, partition step "
          f"{1e3 * prof['partition'] / levels:.1f} ms (mean per level), total "
          f"{prof['total']:.2f} s")
    per = 1e3 / tiny["dask_levels"]
    print(f"tiny set (2,000 rows, {args.partitions} partitions, {tiny['dask_levels']} steps), "
          f"per level: histogram step {per * tiny['dask_reduce_s']:.1f} ms, partition step "
          f"{per * tiny['partition']:.1f} ms (both latency), split finding "
          f"{per * tiny['split']:.1f} ms")
    print("tiny set, per level, against the partitions: " + ", ".join(
        f"{k}: histogram {h:.1f} ms, partition {q:.1f} ms" for k, h, q in slope))
    rest = prof["total"] - prof["dask_reduce_s"] - prof["partition"] - prof["split"]
    print(f"big set, last fit: split finding {1e3 * prof['split'] / levels:.1f} ms per level; "
          f"gradients, leaf values and the rest {rest:.2f} s; before the first round "
          f"(sketches, binning, labels) {times['hardwood.dask'][-1] - prof['total']:.2f} s")
    client.close()
    cluster.close()


def forests(args):
    from distributed import Client, LocalCluster

    import hardwood
    import hardwood.dask as hd
    from hardwood.parallel import threads

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", worker_dashboard_address=None)
    client = Client(cluster)
    params = dict(n_estimators=args.trees, max_depth=args.forest_depth, random_state=0)

    def dask_fit(mode, X, y, small=None):
        m = hd.DaskRandomForestClassifier(**params)
        m.client, m.mode = client, mode
        if small is not None:
            m._small_rows = small
        return m.fit(X, y)

    # warm: both modes on a small set (the histogram mode's levels and its subtrees), and
    # the single process's paths (trees in parallel, threads in one tree)
    Xs, ys = client.persist(list(make_data(20_000, args.features, 5_000, seed=1)))
    dask_fit("tree", Xs, ys)
    dask_fit("histogram", Xs, ys, small=4096)
    xs_np, ys_np = Xs.compute(), ys.compute()
    with threads(2):
        for k in (1, 4):
            hardwood.RandomForestClassifier(n_estimators=k, random_state=0,
                                            n_jobs=2).fit(xs_np, ys_np)

    X, y = make_data(args.rows, args.features, -(-args.rows // args.partitions))
    X, y = client.persist([X, y])
    X_np, y_np = X.compute(), y.compute()
    print(f"data: {args.rows} x {args.features} float32 in {args.partitions} partitions; "
          f"{args.trees} trees, max_depth {args.forest_depth}, sqrt features")

    def run(name):
        t = time.perf_counter()
        if name == "single process":
            with threads(2):
                m = hardwood.RandomForestClassifier(**params, n_jobs=2).fit(X_np, y_np)
        else:
            m = dask_fit(name.split()[0], X, y)
        return time.perf_counter() - t, m

    names = ("tree mode", "histogram mode", "single process")
    times = {k: [] for k in names}
    models = {}
    for r in range(args.repeat):
        for name in names:
            s, models[name] = run(name)
            times[name].append(s)
            print(f"  round {r}: {name} {s:.2f} s", flush=True)
    k = min(200_000, args.rows)
    for name in names:
        m = models[name]  # every forest's model, in memory (a Dask model's predict is lazy)
        p = np.asarray(m.model_.predict(X_np[:k]))
        p = np.stack([1.0 - p, p], axis=1) if p.ndim == 1 else p
        acc = float(np.mean(m.classes_[np.argmax(p, axis=1)] == y_np[:k]))
        print(f"  {name:16s} {spread(times[name])}   training accuracy (first {k}) {acc:.4f}")
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"  histogram / single process = {med['histogram mode'] / med['single process']:.2f}, "
          f"tree / single process = {med['tree mode'] / med['single process']:.2f}")
    log = models["histogram mode"].dask_log_
    print(f"histogram mode (last fit): {len(log)} round trips, "
          f"{sum(e['bytes'] for e in log) / args.trees / 2**20:.2f} MiB of histograms per "
          f"tree, {1e3 * statistics.mean(e['seconds'] for e in log):.1f} ms per round trip "
          f"(mean), nodes per round trip up to {max(e['nodes'] for e in log)}")
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
