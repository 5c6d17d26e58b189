"""Training speed: hardwood against XGBoost (hist), LightGBM and scikit-learn's
HistGradientBoosting, in one run, on the same data and thread count.

Every (case, library, threads) fit runs in its own worker process on data generated once
and saved to disk, so each library starts from the same memory baseline. Times include
binning (Dataset / DMatrix construction). Every library is imported and warmed in the
worker on a small set first, and each worker runs with the thread count as its limit
(OMP_NUM_THREADS and NUMBA_NUM_THREADS), binning included. Peak RSS is the worker's high-water mark during the fit, above its
baseline (data loaded, warm-up done).

    python benchmarks/train_vs_peers.py                       # every case, 2 and 1 threads
    python benchmarks/train_vs_peers.py --cases higgs --threads 2 --peers xgboost,lightgbm,sklearn-hgb
    python benchmarks/train_vs_peers.py --scale 0.2 --repeat 3   # quicker, smaller sets
    python benchmarks/train_vs_peers.py --cold                # also the cold-start compile time
    python benchmarks/train_vs_peers.py --cases monotone,interaction  # constrained (not default)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# case -> (rows, task, shared parameters)
CASES = {
    "higgs": dict(rows=1_000_000, task="binary", depth=6, lr=0.1, rounds=100),
    "leafwise": dict(rows=1_000_000, task="binary", depth=0, lr=0.1, rounds=100,
                     leaves=255, mcw=100.0),
    "wide": dict(rows=200_000, task="binary", depth=6, lr=0.1, rounds=100, features=500),
    "regression": dict(rows=1_000_000, task="regression", depth=8, lr=0.1, rounds=100),
    "categorical": dict(rows=1_000_000, task="binary", depth=6, lr=0.1, rounds=100,
                        categorical=True),
    # issue 18: many classes, and sparse CSR input
    "multiclass": dict(rows=200_000, task="multiclass", classes=8, depth=6, lr=0.1, rounds=50,
                       features=40),
    "sparse": dict(rows=300_000, task="binary", depth=6, lr=0.1, rounds=50, features=2_000,
                   density=0.01),
    "sparse-wide": dict(rows=1_000_000, task="binary", depth=6, lr=0.1, rounds=50,
                        features=10_000, density=0.001),
    # constrained trees (they grow on the tree learner, not the fused kernel): the Higgs-shaped
    # set, monotone in 6 of its 28 features, or splits within 4 sets of 7 features
    "monotone": dict(rows=1_000_000, task="binary", depth=6, lr=0.1, rounds=100,
                     monotone=[1, -1, 1, -1, 1, -1] + [0] * 22),
    "interaction": dict(rows=1_000_000, task="binary", depth=6, lr=0.1, rounds=100,
                        interactions=[list(range(k, k + 7)) for k in range(0, 28, 7)]),
}
CONSTRAINED = ("monotone", "interaction")
DEFAULT_CASES = tuple(c for c in CASES if c not in CONSTRAINED)


# -- data ---------------------------------------------------------------------------------
def make_higgs_like(n_rows, n_features=28, seed=0):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n_rows, n_features=n_features, n_informative=14,
                               n_redundant=6, flip_y=0.05, class_sep=0.6, random_state=seed)
    return X.astype(np.float32), y.astype(np.float32)


def make_wide(n_rows, n_features=500, seed=0):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n_rows, n_features=n_features, n_informative=50,
                               n_redundant=50, flip_y=0.05, random_state=seed)
    return X.astype(np.float32), y.astype(np.float32)


def make_regression_set(n_rows, seed=0):
    from sklearn.datasets import make_regression

    X, y = make_regression(n_samples=n_rows, n_features=28, n_informative=14, noise=20.0,
                           random_state=seed)
    # a nonlinear target, so that deeper trees matter
    y = y + 30 * np.sin(X[:, 0]) * X[:, 1]
    return X.astype(np.float32), y.astype(np.float32)


def make_multiclass(n_rows, n_features=40, n_classes=8, seed=0):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n_rows, n_features=n_features, n_informative=20,
                               n_redundant=10, n_classes=n_classes, n_clusters_per_class=2,
                               flip_y=0.02, random_state=seed)
    return X.astype(np.float32), y.astype(np.float32)


def make_sparse(n_rows, n_features, density, seed=0):
    """CSR rows of a click/text-like shape: each row has Poisson(density x features) non-zeros
    in columns drawn with Zipf-like popularity (a few columns common, most rare), half the
    columns binary indicators and half positive counts; the label a noisy linear function of
    them. Returns the CSR parts (data, indices, indptr) and the labels."""
    rng = np.random.default_rng(seed)
    per_row = rng.poisson(density * n_features, size=n_rows)
    popularity = 1.0 / np.arange(1, n_features + 1) ** 0.8
    popularity /= popularity.sum()
    cols = rng.choice(n_features, size=int(per_row.sum()), p=rng.permutation(popularity))
    rows = np.repeat(np.arange(n_rows), per_row)
    order = np.lexsort((cols, rows))  # sorted within each row; drop repeated columns
    rows, cols = rows[order], cols[order]
    keep = np.ones(rows.size, dtype=bool)
    keep[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    rows, cols = rows[keep], cols[keep]
    counts = rng.geometric(0.4, size=cols.size).astype(np.float32)
    data = np.where(cols % 2 == 0, np.float32(1.0), counts)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    w = rng.normal(size=n_features) * (rng.random(n_features) < 0.2)
    logit = np.bincount(rows, weights=w[cols] * np.log1p(data), minlength=n_rows)
    y = (logit + rng.logistic(size=n_rows) * 0.5 > np.median(logit)).astype(np.float32)
    return data, cols.astype(np.int32), indptr, y


def make_categorical(n_rows, seed=0):
    """8 categorical fields of 20..1000 categories drawn Zipf-like, plus 4 numeric."""
    rng = np.random.default_rng(seed)
    sizes = [20, 50, 100, 200, 300, 500, 700, 1000]
    codes = []
    logit = np.zeros(n_rows)
    for k in sizes:
        p = 1.0 / np.arange(1, k + 1) ** 1.1
        p /= p.sum()
        c = rng.choice(k, size=n_rows, p=p)
        effect = rng.standard_normal(k) * 0.8
        logit += effect[c]
        codes.append(c.astype(np.int32))
    num = rng.standard_normal((n_rows, 4)).astype(np.float32)
    logit += num[:, 0] - 0.5 * num[:, 1] * num[:, 2]
    y = (logit + rng.logistic(size=n_rows) > 0).astype(np.float32)
    return np.stack(codes, axis=1), num, y


def generate(case, scale, cache_dir):
    spec = CASES[case]
    n = int(spec["rows"] * scale)
    n_test = max(n // 5, 1000)
    path = os.path.join(cache_dir, f"{case}-{n}.npz")
    if os.path.exists(path):
        return path
    if case == "categorical":
        codes, num, y = make_categorical(n + n_test)
        np.savez(path, codes=codes, num=num, y=y, n_train=n)
        return path
    if case.startswith("sparse"):
        data, indices, indptr, y = make_sparse(n + n_test, spec["features"], spec["density"])
        np.savez(path, data=data, indices=indices, indptr=indptr, y=y, n_train=n,
                 n_features=spec["features"])
        return path
    if case == "multiclass":
        X, y = make_multiclass(n + n_test, spec["features"], spec["classes"])
    elif case == "wide":
        X, y = make_wide(n + n_test)
    elif case == "regression":
        X, y = make_regression_set(n + n_test)
    else:
        X, y = make_higgs_like(n + n_test)
    np.savez(path, X=X, y=y, n_train=n)
    return path


def load(path):
    d = np.load(path)
    n = int(d["n_train"])
    if "codes" in d:
        import pandas as pd

        codes, num, y = d["codes"], d["num"], d["y"]
        cols = {f"c{j}": pd.Categorical.from_codes(codes[:, j], categories=np.arange(codes[:, j].max() + 1))
                for j in range(codes.shape[1])}
        cols.update({f"x{j}": num[:, j] for j in range(num.shape[1])})
        X = pd.DataFrame(cols)
        raw_bytes = n * X.shape[1] * 4
        return X.iloc[:n], y[:n], X.iloc[n:], y[n:], raw_bytes
    if "indptr" in d:
        from scipy.sparse import csr_matrix

        y = d["y"]
        X = csr_matrix((d["data"], d["indices"], d["indptr"]),
                       shape=(y.size, int(d["n_features"])))
        Xtr = X[:n]
        return Xtr, y[:n], X[n:], y[n:], Xtr.data.nbytes + Xtr.indices.nbytes
    X, y = d["X"], d["y"]
    return X[:n], y[:n], X[n:], y[n:], X[:n].nbytes


# -- one fit per library --------------------------------------------------------------------
def fit_hardwood(Xtr, ytr, spec, threads):
    import hardwood as hw

    params = {"objective": XGB_OBJECTIVE[spec["task"]],
              "learning_rate": spec["lr"], "reg_lambda": 1.0, "n_jobs": threads,
              "min_child_weight": spec.get("mcw", 1.0), "max_depth": spec["depth"]}
    if spec["task"] == "multiclass":
        params["num_class"] = spec["classes"]
    if spec.get("leaves"):
        params.update(grow_policy="lossguide", max_leaves=spec["leaves"])
    if spec.get("categorical"):
        params["max_cat_to_onehot"] = 1
    if spec.get("monotone"):
        params["monotone_constraints"] = spec["monotone"]
    if spec.get("interactions"):
        params["interaction_constraints"] = spec["interactions"]
    ds = hw.Dataset(Xtr, ytr, max_bin=256)
    m = hw.train(params, ds, num_boost_round=spec["rounds"])
    if hasattr(Xtr, "tocsr"):  # predict densifies its rows: a sparse test set in slices
        return m, (lambda X: np.concatenate([m.predict(X[i:i + 8192])
                                             for i in range(0, X.shape[0], 8192)])), \
            m.training_profile
    return m, (lambda X: m.predict(X)), m.training_profile


def fit_xgboost(Xtr, ytr, spec, threads):
    import xgboost as xgb

    params = {"objective": XGB_OBJECTIVE[spec["task"]], "tree_method": "hist", "max_depth": spec["depth"], "eta": spec["lr"], "max_bin": 256,
              "nthread": threads, "lambda": 1.0, "min_child_weight": spec.get("mcw", 1.0)}
    if spec.get("leaves"):
        params.update(grow_policy="lossguide", max_leaves=spec["leaves"])
    if spec.get("categorical"):
        params["max_cat_to_onehot"] = 1
    if spec["task"] == "multiclass":
        params["num_class"] = spec["classes"]
    if spec.get("monotone"):
        params["monotone_constraints"] = "(" + ",".join(map(str, spec["monotone"])) + ")"
    if spec.get("interactions"):
        params["interaction_constraints"] = str(spec["interactions"])
    d = xgb.DMatrix(Xtr, ytr, nthread=threads, enable_categorical=bool(spec.get("categorical")))
    b = xgb.train(params, d, num_boost_round=spec["rounds"])
    return b, (lambda X: b.predict(xgb.DMatrix(X, enable_categorical=bool(spec.get("categorical")),
                                                nthread=threads))), None


def fit_lightgbm(Xtr, ytr, spec, threads):
    import lightgbm as lgb

    leaves = spec.get("leaves") or 2 ** spec["depth"]
    params = {"objective": {"binary": "binary", "regression": "regression",
                            "multiclass": "multiclass"}[spec["task"]],
              "max_depth": spec["depth"] if spec["depth"] > 0 else -1, "num_leaves": leaves,
              "learning_rate": spec["lr"], "num_threads": threads, "lambda_l2": 1.0,
              "verbose": -1, "min_sum_hessian_in_leaf": spec.get("mcw", 1.0), "max_bin": 255,
              "min_data_in_leaf": 20}
    if spec["task"] == "multiclass":
        params["num_class"] = spec["classes"]
    if spec.get("monotone"):
        params["monotone_constraints"] = spec["monotone"]
    if spec.get("interactions"):
        params["interaction_constraints"] = spec["interactions"]
    d = lgb.Dataset(Xtr, ytr, params={"max_bin": 255, "verbose": -1})
    b = lgb.train(params, d, num_boost_round=spec["rounds"])
    return b, (lambda X: b.predict(X, num_threads=threads)), None


def fit_sklearn(Xtr, ytr, spec, threads):
    from threadpoolctl import threadpool_limits
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    cls = (HistGradientBoostingRegressor if spec["task"] == "regression"
           else HistGradientBoostingClassifier)
    kw = dict(max_iter=spec["rounds"], learning_rate=spec["lr"], max_bins=255,
              early_stopping=False, l2_regularization=1.0)
    if spec.get("leaves"):
        kw.update(max_leaf_nodes=spec["leaves"], max_depth=None)
    else:
        kw.update(max_leaf_nodes=None, max_depth=spec["depth"])
    if spec.get("categorical"):
        kw["categorical_features"] = "from_dtype"
    if spec.get("monotone"):
        kw["monotonic_cst"] = spec["monotone"]
    if spec.get("interactions"):
        kw["interaction_cst"] = spec["interactions"]
    m = cls(**kw)
    with threadpool_limits(threads):
        m.fit(Xtr, ytr)
    pred = {"binary": lambda X: m.predict_proba(X)[:, 1], "multiclass": m.predict_proba,
            "regression": m.predict}[spec["task"]]
    return m, pred, None


XGB_OBJECTIVE = {"binary": "binary:logistic", "regression": "reg:squarederror",
                 "multiclass": "multi:softprob"}

FITTERS = {"hardwood": fit_hardwood, "xgboost": fit_xgboost, "lightgbm": fit_lightgbm,
           "sklearn-hgb": fit_sklearn}


def _rss_reset():
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _rss_kb(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def worker(args):
    """Run one fit; print a JSON line."""
    spec = CASES[args.case]
    Xtr, ytr, Xte, yte, raw_bytes = load(args.data)
    # every library is imported and warmed on a slice before the timer: its import, hardwood's
    # JIT (from the disk cache), the peers' own first-call costs
    warm_spec = dict(spec, rounds=2)
    FITTERS[args.library](Xtr[:4000], ytr[:4000], warm_spec, args.threads)
    if args.library == "hardwood":
        from hardwood.data.dataset import CHUNK_ROWS

        # a DataFrame this long is binned in chunks by other kernels: load those too
        warm_rows = 2 * CHUNK_ROWS + 1
        if hasattr(Xtr, "iloc") and Xtr.shape[0] > warm_rows:
            fit_hardwood(Xtr[:warm_rows], ytr[:warm_rows], dict(warm_spec, rounds=1), args.threads)
    base = _rss_kb("VmRSS:")
    _rss_reset()
    t0 = time.perf_counter()
    _, predict, profile = FITTERS[args.library](Xtr, ytr, spec, args.threads)
    seconds = time.perf_counter() - t0
    peak = _rss_kb("VmHWM:")
    p = predict(Xte)
    if spec["task"] == "binary":
        from sklearn.metrics import roc_auc_score
        metric = float(roc_auc_score(yte, p))
    elif spec["task"] == "multiclass":
        metric = float(np.mean(np.asarray(p).reshape(len(yte), -1).argmax(1) == yte))
    else:
        metric = float(np.sqrt(np.mean((p - yte) ** 2)))
    print(json.dumps({"seconds": seconds, "metric": metric, "peak_mb": (peak - base) / 1024,
                      "raw_mb": raw_bytes / 2**20, "profile": profile}))


def run_worker(case, library, threads, data):
    # HARDWOOD_FUSED=1: the fused grower from the warm-up on, compiled there if need be (the
    # default, "auto", takes the learner until it is compiled: the timed fit would compile)
    # the thread limit covers the whole timed region, binning included, for every library
    # (NUMBA_NUM_THREADS: hardwood's Dataset bins with every Numba thread)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), NUMBA_NUM_THREADS=str(threads),
               HARDWOOD_FUSED="1")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", "--case", case,
                          "--library", library, "--threads", str(threads), "--data", data],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{library} on {case} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def cold_start(threads):
    """import + first fit (20 trees, 1,000 rows) in a fresh process: with an empty Numba
    cache (cold) and again with the cache it left (warm)."""
    code = ("import time; t=time.perf_counter(); import numpy as np, hardwood as hw;"
            "X=np.random.default_rng(0).random((1000, 28)).astype(np.float32);"
            "y=(X[:,0]>0.5).astype(np.float32);"
            "hw.train({'objective':'binary:logistic','n_jobs':%d}, hw.Dataset(X,y), 20);"
            "print(time.perf_counter()-t)" % threads)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        cold = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        warm = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(cold.stdout.split()[-1]), float(warm.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES),
                    help=f"comma-separated, of {', '.join(CASES)}")
    ap.add_argument("--threads", default="2,1", help="comma-separated thread counts")
    ap.add_argument("--peers", default="xgboost,lightgbm")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of each case's rows")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of fits (libraries interleaved); the median per library is shown")
    ap.add_argument("--cold", action="store_true", help="also measure the cold-start compile time")
    ap.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "hardwood-bench"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--library", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.threads = int(args.threads)
        return worker(args)

    os.makedirs(args.cache_dir, exist_ok=True)
    libs = ["hardwood"] + [p for p in args.peers.split(",") if p]
    print(f"{'case':<12}{'thr':>4}  {'library':<12}{'time s':>8}{'metric':>9}{'peak MB':>9}"
          f"{'/raw X':>8}{'hw/peer':>9}")
    summary = []
    for case in args.cases.split(","):
        data = generate(case, args.scale, args.cache_dir)
        metric_name = {"regression": "RMSE", "binary": "AUC",
                       "multiclass": "accuracy"}[CASES[case]["task"]]
        case_libs = [lib for lib in libs  # scikit-learn's HGB takes no sparse input
                     if not (lib == "sklearn-hgb" and case.startswith("sparse"))]
        for threads in (int(t) for t in args.threads.split(",")):
            # rounds of one fit per library, interleaved, so that a change in the machine's
            # load during the run hits every library alike; medians per library
            runs = {lib: [] for lib in case_libs}
            for _ in range(args.repeat):
                for lib in case_libs:
                    runs[lib].append(run_worker(case, lib, threads, data))
            res = {lib: dict(r[-1], seconds=statistics.median(x["seconds"] for x in r))
                   for lib, r in runs.items()}
            hw_t = res["hardwood"]["seconds"]
            for lib in case_libs:
                r = res[lib]
                ratio = "" if lib == "hardwood" else f"{hw_t / r['seconds']:.2f}"
                print(f"{case:<12}{threads:>4}  {lib:<12}{r['seconds']:>8.2f}{r['metric']:>9.4f}"
                      f"{r['peak_mb']:>9.0f}{r['peak_mb'] / r['raw_mb']:>8.2f}{ratio:>9}", flush=True)
            peers = [lib for lib in ("xgboost", "lightgbm") if lib in res]
            if peers:
                best = min(peers, key=lambda l: res[l]["seconds"])
                d_metric = res["hardwood"]["metric"] - res[best]["metric"]
                summary.append((case, threads, hw_t / res[best]["seconds"], best, d_metric, metric_name))
            if args.repeat > 1:  # the spread of the interleaved rounds
                print(f"{'':<18}spread (min-max s): " + ", ".join(
                    f"{lib} {min(x['seconds'] for x in r):.2f}-{max(x['seconds'] for x in r):.2f}"
                    for lib, r in runs.items()), flush=True)
            prof = res["hardwood"].get("profile")
            if prof:
                from hardwood.train.engine import format_profile
                print(f"{'':<18}{format_profile(prof)}", flush=True)
    print(f"\n{'case':<12}{'thr':>4}  {'hardwood / faster peer':>24}  {'(peer)':<10} metric diff")
    for case, threads, ratio, best, dm, name in summary:
        print(f"{case:<12}{threads:>4}  {ratio:>24.2f}  {best:<10} {name} {dm:+.4f}")
    if args.cold:
        c, w = cold_start(int(args.threads.split(",")[0]))
        print(f"\nimport + first fit of 20 trees on 1,000 rows: {c:.1f}s with an empty Numba cache, "
              f"{w:.2f}s with a warm cache")


if __name__ == "__main__":
    main()
