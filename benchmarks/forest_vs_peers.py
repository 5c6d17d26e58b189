"""Random-forest training speed and accuracy: hardwood against scikit-learn's
RandomForestClassifier, LightGBM (boosting='rf') and XGBoost (XGBRFClassifier), in one run,
on the same data and thread count; hardwood's three growth schemes (pure depth-first, pure
breadth-first, hybrid) on the same forest.

Times include binning (hardwood, LightGBM, XGBoost build their binned matrices inside the
timed fit) and exclude JIT compilation: hardwood is warmed on a small set first.

    python benchmarks/forest_vs_peers.py                  # covertype-shaped 200k x 54, 7 classes
    python benchmarks/forest_vs_peers.py --quick          # 40k rows, 30 trees
    python benchmarks/forest_vs_peers.py --set wide       # 50k x 3072, 10 classes
    python benchmarks/forest_vs_peers.py --growth         # depth-first / breadth-first / hybrid

Prediction (``--predict``): a classifier and a regressor (``max_features='sqrt'``, target
``y + 0.25 * x0``) are fitted once, then ``predict_proba`` / ``predict`` on the test rows are
timed in ``--repeat`` interleaved rounds against scikit-learn's forests (fitted with the same
parameters) and, with ``--before SRC``, against another hardwood source tree (for instance
the commit before a change: ``git archive <commit> src | tar -x -C /tmp/before``), which
predicts with the same fitted forests in a worker process (its ``src`` on ``PYTHONPATH``; the
forests travel by pickle) and must give the same outputs to 1e-12. The first call after
fitting is timed apart (it builds ``model_`` and compiles its runtime).

    python benchmarks/forest_vs_peers.py --predict --before /tmp/before/src --peers sklearn
    python benchmarks/forest_vs_peers.py --predict --set wide --before /tmp/before/src
    python benchmarks/forest_vs_peers.py --predict --quick --predict-rows 1 --repeat 300

Issue 20 (``--suite``): every case below, hardwood against scikit-learn, in ``--rounds``
interleaved rounds (each library once a round, in alternating order); medians with the
min-max spread, the time ratio taken per round. Every library is imported and hardwood's
kernels are warmed on each case's own dtypes and both of its parallel paths (trees in
parallel: at least two trees per thread; threads inside one tree: fewer trees, on enough
rows that breadth-first levels take the parallel kernel) before any timer starts. The
thread limit (``--threads``: NUMBA_NUM_THREADS and OMP_NUM_THREADS, set before any import,
and ``n_jobs``) covers the whole timed fit, binning included. Round ``r`` fits both
libraries with ``random_state = seed + r``: the scores are medians over as many forests
(one forest's accuracy moves by about ±0.005 from seed to seed on these sets), and
``--score-seeds K`` adds K more seeds' scores (untimed fits) to the medians.

    python benchmarks/forest_vs_peers.py --suite                  # all cases, 3 rounds
    python benchmarks/forest_vs_peers.py --suite --cases deep,reg20 --rounds 5
    python benchmarks/forest_vs_peers.py --suite --scale 0.2      # smaller sets, for development
"""
from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import subprocess
import sys
import tempfile
import time

import numpy as np


def _classification(n_train, n_test, seed, **kw):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n_train + n_test, random_state=seed, **kw)
    X = X.astype(np.float32)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def make_covertype_like(n_train, seed=0):
    return _classification(n_train, 50_000, seed, n_features=54, n_informative=24,
                           n_redundant=10, n_classes=7, n_clusters_per_class=3, class_sep=1.0,
                           flip_y=0.02)


def make_wide(n_train, seed=0):
    return _classification(n_train, 10_000, seed, n_features=3072, n_informative=64,
                           n_redundant=64, n_classes=10, n_clusters_per_class=2, class_sep=1.0)


def run_hardwood(Xtr, ytr, Xte, yte, trees, threads, seed, growth="hybrid", device="cpu",
                 tree_parallel=None):
    import hardwood as hw

    m = hw.RandomForestClassifier(n_estimators=trees, max_features="sqrt", n_jobs=threads,
                                  random_state=seed, device=device)
    m._growth = growth
    m._tree_parallel = tree_parallel
    t0 = time.perf_counter()
    m.fit(Xtr, ytr)
    t = time.perf_counter() - t0
    return t, float((m.predict(Xte) == yte).mean())


def run_sklearn(Xtr, ytr, Xte, yte, trees, threads, seed):
    from sklearn.ensemble import RandomForestClassifier

    m = RandomForestClassifier(n_estimators=trees, max_features="sqrt", n_jobs=threads,
                               random_state=seed)
    t0 = time.perf_counter()
    m.fit(Xtr, ytr)
    t = time.perf_counter() - t0
    return t, float((m.predict(Xte) == yte).mean())


def run_lightgbm(Xtr, ytr, Xte, yte, trees, threads, seed):
    import lightgbm as lgb

    d = Xtr.shape[1]
    m = lgb.LGBMClassifier(boosting_type="rf", n_estimators=trees, num_leaves=4096,
                           max_depth=-1, min_child_samples=1, min_child_weight=0.0,
                           subsample=0.632, subsample_freq=1,
                           feature_fraction_bynode=max(1, int(math.sqrt(d))) / d,
                           reg_lambda=0.0, n_jobs=threads, random_state=seed, verbose=-1)
    t0 = time.perf_counter()
    m.fit(Xtr, ytr)
    t = time.perf_counter() - t0
    return t, float((m.predict(Xte) == yte).mean())


def run_xgboost(Xtr, ytr, Xte, yte, trees, threads, seed):
    import xgboost as xgb

    d = Xtr.shape[1]
    m = xgb.XGBRFClassifier(n_estimators=trees, max_depth=20, subsample=0.632,
                            colsample_bynode=max(1, int(math.sqrt(d))) / d, min_child_weight=0,
                            reg_lambda=1e-6, tree_method="hist", n_jobs=threads,
                            random_state=seed)
    t0 = time.perf_counter()
    m.fit(Xtr, ytr)
    t = time.perf_counter() - t0
    return t, float((m.predict(Xte) == yte).mean())


# -- prediction ---------------------------------------------------------------------------------
def _predict_call(est):
    """What is timed: predict_proba for a classifier, predict for a regressor."""
    return est.predict_proba if hasattr(est, "predict_proba") else est.predict


def _time_call(fn, X):
    t = time.perf_counter()
    out = fn(X)
    return time.perf_counter() - t, out


def worker():
    """``--worker``: answers one JSON command per stdin line (load, first, time, quit) with
    one JSON line, predicting with the hardwood found on PYTHONPATH."""
    import hardwood
    ests = X = None
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "load":
            wX, wy, _, _ = make_covertype_like(2000, 1)  # JIT warm-up
            for cls in (hardwood.RandomForestClassifier, hardwood.RandomForestRegressor):
                w = cls(n_estimators=2, random_state=0).fit(wX, wy)
                for rows in (wX, wX[:1]):
                    _predict_call(w)(rows)
            with open(cmd["path"], "rb") as fh:
                ests = pickle.load(fh)
            X = np.load(cmd["x"])
            res = {"hardwood": os.path.dirname(hardwood.__file__)}
        elif cmd["cmd"] == "first":
            sec, out = _time_call(_predict_call(ests[cmd["name"]]), X)
            np.save(cmd["out"], out)
            res = {"seconds": sec}
        elif cmd["cmd"] == "time":
            res = {"seconds": _time_call(_predict_call(ests[cmd["name"]]), X)[0]}
        else:
            break
        print(json.dumps(res), flush=True)


class Before:
    """A worker process predicting with the hardwood sources at ``src``."""

    def __init__(self, src, threads):
        env = dict(os.environ, PYTHONPATH=os.path.abspath(src), NUMBA_NUM_THREADS=str(threads),
                   OMP_NUM_THREADS=str(threads))
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env)

    def ask(self, **cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        self.p.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
        self.p.stdin.close()
        self.p.wait()


def _spread(v):
    v = np.asarray(v)
    if np.median(v) < 0.01:
        v = v * 1e6
        return f"median {np.median(v):7.1f} us (min {v.min():.1f}, max {v.max():.1f})"
    return f"median {np.median(v):7.3f} s (min {v.min():.3f}, max {v.max():.3f})"


def predict_main(a, Xtr, ytr, Xte, trees):
    import numba
    from sklearn.ensemble import RandomForestClassifier as SkC
    from sklearn.ensemble import RandomForestRegressor as SkR

    import hardwood as hw

    numba.set_num_threads(a.threads)
    ytr_r = ytr + 0.25 * Xtr[:, 0]
    kw = dict(n_estimators=trees, max_features="sqrt", n_jobs=a.threads, random_state=a.seed)
    wX, wy, _, _ = make_covertype_like(2000, 1)  # JIT warm-up (kernels of both paths)
    for cls in (hw.RandomForestClassifier, hw.RandomForestRegressor):
        w = cls(**dict(kw, n_estimators=2)).fit(wX, wy)
        for rows in (wX, wX[:1]):
            _predict_call(w)(rows)
    ests = {"classifier": hw.RandomForestClassifier(**kw),
            "regressor": hw.RandomForestRegressor(**kw)}
    for name, est in ests.items():
        t = time.perf_counter()
        est.fit(Xtr, ytr if name == "classifier" else ytr_r)
        nodes = sum(tr.n_nodes for tr in est.estimators_)
        print(f"hardwood {name}: fit {time.perf_counter() - t:.1f} s, {nodes:,} nodes",
              flush=True)
    tmp = tempfile.mkdtemp(prefix="forest-predict-")
    before = None
    if a.before:
        with open(os.path.join(tmp, "forests.pkl"), "wb") as fh:
            pickle.dump(ests, fh, protocol=pickle.HIGHEST_PROTOCOL)
        np.save(os.path.join(tmp, "X.npy"), Xte)
        before = Before(a.before, a.threads)
        src = before.ask(cmd="load", path=os.path.join(tmp, "forests.pkl"),
                         x=os.path.join(tmp, "X.npy"))["hardwood"]
        print(f"before: hardwood from {src}")
    fns = {}
    for name, est in ests.items():
        sec, out = _time_call(_predict_call(est), Xte)
        line = f"first call after fit, {name}: hardwood {sec:.3f} s"
        if before is not None:
            path = os.path.join(tmp, f"{name}.npy")
            old = before.ask(cmd="first", name=name, out=path)["seconds"]
            diff = float(np.max(np.abs(np.load(path) - out)))
            assert diff <= 1e-12, (name, diff)
            line += f", before {old:.3f} s (outputs equal to {diff:.1e})"
            fns[("before", name)] = lambda name=name: before.ask(cmd="time", name=name)["seconds"]
        print(line, flush=True)
        fns[("hardwood", name)] = lambda est=est: _time_call(_predict_call(est), Xte)[0]
    if "sklearn" in a.peers.split(","):
        for name, cls in (("classifier", SkC), ("regressor", SkR)):
            t = time.perf_counter()
            sk = cls(**kw).fit(Xtr, ytr if name == "classifier" else ytr_r)
            print(f"sklearn {name}: fit {time.perf_counter() - t:.1f} s", flush=True)
            _predict_call(sk)(Xte)
            fns[("sklearn", name)] = lambda sk=sk: _time_call(_predict_call(sk), Xte)[0]
    times = {k: [] for k in fns}
    for _ in range(a.repeat):  # interleaved: each runs once a round
        for k, fn in fns.items():
            times[k].append(fn())
    print(f"\n{Xte.shape[0]:,} rows, {a.threads} threads, {a.repeat} interleaved rounds")
    for name in ests:
        for who in ("hardwood", "before", "sklearn"):
            if (who, name) in times:
                print(f"  {name:10s} {who:8s} {_spread(times[(who, name)])}")
        h = np.asarray(times[("hardwood", name)])
        for who in ("before", "sklearn"):
            if (who, name) in times:
                r = h / np.asarray(times[(who, name)])
                print(f"  {name:10s} hardwood/{who} time ratio: median {np.median(r):.3f} "
                      f"(min {r.min():.3f}, max {r.max():.3f})")
    if before is not None:
        before.close()
    return times


# -- issue 20: the suite of cases, medians of interleaved rounds ------------------------------
def make_deep(n_train, seed=0):
    """Deep trees: many informative features and clusters per class (fully grown trees have
    tens of thousands of leaves)."""
    return _classification(n_train, 25_000, seed, n_features=54, n_informative=40,
                           n_redundant=6, n_classes=7, n_clusters_per_class=8, class_sep=1.5,
                           flip_y=0.01)


def _regression(make, n_train, seed, **kw):
    X, y = make(n_samples=n_train + 25_000, random_state=seed, **kw)
    X = X.astype(np.float32)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def make_reg20(n_train, seed=0):
    """Regression, 20 features (Friedman #1: 5 informative, 15 noise)."""
    from sklearn.datasets import make_friedman1

    return _regression(make_friedman1, n_train, seed, n_features=20, noise=1.0)


def make_reglow(n_train, seed=0):
    """Regression, low-dimensional: Friedman #2 (4 features)."""
    from sklearn.datasets import make_friedman2

    return _regression(make_friedman2, n_train, seed, noise=20.0)


def make_bagging(n_train, seed=0):
    return _classification(n_train, 10_000, seed, n_features=100, n_informative=30,
                           n_redundant=20, n_classes=5, n_clusters_per_class=3, class_sep=1.0,
                           flip_y=0.02)


# name: (maker, train rows, trees, max_features, regression)
CASES = {
    "covertype": (make_covertype_like, 200_000, 30, "sqrt", False),
    "wide": (make_wide, 50_000, 10, "sqrt", False),
    "deep": (make_deep, 100_000, 30, "sqrt", False),
    "reg20": (make_reg20, 200_000, 10, 1.0, True),
    "reglow": (make_reglow, 200_000, 20, 1.0, True),
    "bagging": (make_bagging, 50_000, 10, 1.0, False),
}


def _estimators(reg, trees, mf, threads, seed):
    from sklearn.ensemble import RandomForestClassifier as SkC
    from sklearn.ensemble import RandomForestRegressor as SkR

    import hardwood as hw

    kw = dict(n_estimators=trees, max_features=mf, n_jobs=threads, random_state=seed)
    if reg:
        return hw.RandomForestRegressor(**kw), SkR(**kw)
    return hw.RandomForestClassifier(**kw), SkC(**kw)


def _fit_score(est, Xtr, ytr, Xte, yte, reg):
    from sklearn.metrics import r2_score

    t0 = time.perf_counter()
    est.fit(Xtr, ytr)
    t = time.perf_counter() - t0
    p = est.predict(Xte)
    score = float(r2_score(yte, p)) if reg else float((p == yte).mean())
    return t, score, est


def warm_hardwood(Xtr, ytr, reg, mf, threads):
    """Compile every kernel a timed fit of this case can reach, on its dtypes: trees in
    parallel (2 trees per thread, each on one Numba thread) and threads inside one tree (2
    trees), both with a crossover of 2,000 rows on 40k rows, so that depth-first nodes, the
    parallel breadth-first kernel (levels over >= SERIAL_WORK rows) and the serial one all
    run. (A default fit of a small warm-up set grows every node breadth-first.)"""
    n = min(40_000, Xtr.shape[0])
    for trees, tp in ((2 * threads, None), (2, False)):
        est, _ = _estimators(reg, trees, mf, threads, 1)
        est._tree_parallel = tp
        est._crossover = 2_000
        est.fit(Xtr[:n], ytr[:n])
        est.predict(Xtr[:100])


def suite(a):
    cases = list(CASES) if a.cases == "all" else a.cases.split(",")
    import numba  # noqa: F401  (imported before any timer)
    import sklearn.ensemble  # noqa: F401

    import hardwood  # noqa: F401

    import warnings
    warnings.filterwarnings("ignore", message=".*sklearn.utils.parallel.delayed")
    rows_out = []
    for name in cases:
        maker, rows, trees, mf, reg = CASES[name]
        rows = max(2_000, int(rows * a.scale))
        trees = a.trees or trees
        Xtr, ytr, Xte, yte = maker(rows, a.seed)
        print(f"\n== {name}: {Xtr.shape[0]:,} x {Xtr.shape[1]}"
              f"{'' if reg else f' x {len(np.unique(ytr))} classes'}, {trees} trees, "
              f"max_features={mf}, {a.threads} threads", flush=True)
        warm_hardwood(Xtr, ytr, reg, mf, a.threads)
        _, sk = _estimators(reg, 2, mf, a.threads, 1)  # scikit-learn's first fit, untimed
        sk.fit(Xtr[:2000], ytr[:2000])
        res = {"hardwood": [], "sklearn": []}
        nodes = 0
        for r in range(a.rounds):
            order = ("hardwood", "sklearn") if r % 2 == 0 else ("sklearn", "hardwood")
            for who in order:
                hw_est, sk_est = _estimators(reg, trees, mf, a.threads, a.seed + r)
                est = hw_est if who == "hardwood" else sk_est
                t, score, est = _fit_score(est, Xtr, ytr, Xte, yte, reg)
                res[who].append((t, score))
                if who == "hardwood":
                    nodes = sum(tr.n_nodes for tr in est.estimators_)
                print(f"  round {r}: {who:8s} {t:8.2f} s  {'R2' if reg else 'acc'} "
                      f"{score:.4f}", flush=True)
                del est, hw_est, sk_est
        for r in range(a.rounds, a.rounds + a.score_seeds):  # scores only, untimed
            for who in ("hardwood", "sklearn"):
                est = _estimators(reg, trees, mf, a.threads, a.seed + r)[who == "sklearn"]
                _, score, _ = _fit_score(est, Xtr, ytr, Xte, yte, reg)
                res[who + " scores"] = res.get(who + " scores", []) + [score]
                print(f"  seed {a.seed + r} (untimed): {who:8s} {'R2' if reg else 'acc'} "
                      f"{score:.4f}", flush=True)
        h = np.array([t for t, _ in res["hardwood"]])
        s = np.array([t for t, _ in res["sklearn"]])
        ratio = h / s
        hs = float(np.median([x for _, x in res["hardwood"]] + res.get("hardwood scores", [])))
        ss = float(np.median([x for _, x in res["sklearn"]] + res.get("sklearn scores", [])))
        print(f"  hardwood {_spread(h)}  sklearn {_spread(s)}")
        print(f"  ratio median {np.median(ratio):.3f} (min {ratio.min():.3f}, max "
              f"{ratio.max():.3f});  {'R2' if reg else 'accuracy'} hardwood {hs:.4f} sklearn "
              f"{ss:.4f} (diff {hs - ss:+.4f});  hardwood nodes/tree {nodes / trees:,.0f}",
              flush=True)
        rows_out.append((name, Xtr.shape, trees, mf, h, s, ratio, hs, ss))
    print("\n| case | hardwood s | sklearn s | ratio | score hardwood / sklearn |")
    print("|---|---|---|---|---|")
    for name, shp, trees, mf, h, s, ratio, hs, ss in rows_out:
        print(f"| {name} {shp[0]:,} x {shp[1]}, {trees} trees, mf={mf} | "
              f"{np.median(h):.2f} ({h.min():.2f}-{h.max():.2f}) | "
              f"{np.median(s):.2f} ({s.min():.2f}-{s.max():.2f}) | "
              f"{np.median(ratio):.3f} ({ratio.min():.3f}-{ratio.max():.3f}) | "
              f"{hs:.4f} / {ss:.4f} ({hs - ss:+.4f}) |")
    return rows_out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=["covertype", "wide"], default="covertype")
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--trees", type=int, default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="fewer rows and trees")
    ap.add_argument("--growth", action="store_true",
                    help="also time pure depth-first and pure breadth-first growth")
    ap.add_argument("--peers", default="sklearn,lightgbm,xgboost",
                    help="comma-separated peers to run (sklearn, lightgbm, xgboost, or none)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="hardwood's device (cuda: on a machine with a GPU)")
    ap.add_argument("--predict", action="store_true",
                    help="time prediction (classifier and regressor) instead of training")
    ap.add_argument("--before", default=None,
                    help="with --predict: another hardwood 'src' folder to time beside this one")
    ap.add_argument("--repeat", type=int, default=7, help="with --predict: interleaved rounds")
    ap.add_argument("--predict-rows", type=int, default=None,
                    help="with --predict: time the first N test rows (1: one-row latency)")
    ap.add_argument("--suite", action="store_true",
                    help="issue 20's cases against scikit-learn, interleaved rounds")
    ap.add_argument("--cases", default="all", help=f"with --suite: all or some of {list(CASES)}")
    ap.add_argument("--score-seeds", type=int, default=0,
                    help="with --suite: more seeds' scores (untimed) in the score medians")
    ap.add_argument("--rounds", type=int, default=3, help="with --suite: interleaved rounds")
    ap.add_argument("--scale", type=float, default=1.0, help="with --suite: row scale")
    a = ap.parse_args(argv)
    if a.suite:
        return suite(a)
    if a.set == "covertype":
        rows = a.rows or (40_000 if a.quick else 200_000)
        trees = a.trees or (30 if a.quick else 100)
        Xtr, ytr, Xte, yte = make_covertype_like(rows, a.seed)
    else:
        rows = a.rows or (10_000 if a.quick else 50_000)
        trees = a.trees or (10 if a.quick else 30)
        Xtr, ytr, Xte, yte = make_wide(rows, a.seed)
    print(f"set={a.set} rows={Xtr.shape[0]} features={Xtr.shape[1]} classes={len(np.unique(ytr))}"
          f" trees={trees} threads={a.threads} max_features=sqrt")
    if a.predict:
        if a.predict_rows:
            Xte = np.ascontiguousarray(Xte[:a.predict_rows])
        return predict_main(a, Xtr, ytr, Xte, trees)

    wX, wy, _, _ = make_covertype_like(2000, 1)  # JIT warm-up
    run_hardwood(wX, wy, wX[:10], wy[:10], 2, a.threads, 0, device=a.device)

    results = {}
    t, acc = run_hardwood(Xtr, ytr, Xte, yte, trees, a.threads, a.seed, device=a.device)
    results["hardwood"] = (t, acc)
    print(f"hardwood (default: hybrid, trees in parallel, {a.device})  {t:8.2f} s  "
          f"accuracy {acc:.4f}", flush=True)
    if a.growth:  # the growth schemes inside a tree, every thread on one tree at a time
        for g in ("hybrid", "breadthfirst", "depthfirst"):
            t, acc = run_hardwood(Xtr, ytr, Xte, yte, trees, a.threads, a.seed, growth=g,
                                  device=a.device, tree_parallel=False)
            results[f"hardwood-{g}"] = (t, acc)
            print(f"hardwood ({g:12s}, threads in one tree)  {t:8.2f} s  accuracy {acc:.4f}  "
                  f"time / default {t / results['hardwood'][0]:.2f}", flush=True)
    runners = {"sklearn": run_sklearn, "lightgbm": run_lightgbm, "xgboost": run_xgboost}
    for name in [p for p in a.peers.split(",") if p in runners]:
        t, acc = runners[name](Xtr, ytr, Xte, yte, trees, a.threads, a.seed)
        results[name] = (t, acc)
        h = results["hardwood"]
        print(f"{name:24s} {t:8.2f} s  accuracy {acc:.4f}  hardwood/{name} time ratio "
              f"{h[0] / t:.3f}  accuracy diff {100 * (h[1] - acc):+.2f} points", flush=True)
    return results


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        if "--suite" in sys.argv:  # the thread limit, before numba or sklearn is imported
            _thr = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "2"
            os.environ["NUMBA_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = _thr
        main()
