"""Prediction throughput and latency: hardwood runtimes against XGBoost / LightGBM, TL2cgen and
lleaves on the same model (imported), same rows, same threads. Prints hardwood/peer ratios.

    flock /tmp/hardwood-cpu.lock python benchmarks/predict_peers.py [--quick] [--threads 2]

Models: XGBoost 500 trees depth 6 on a 28-feature Higgs-shaped set (scored on 1M rows);
LightGBM 255 leaves; LightGBM LambdaMART on ../shared/data/rank.train (skipped if absent).

Peers besides the training libraries:

* TL2cgen (``pip install tl2cgen==1.0.0``, in the ``bench`` extra): the model turned into C by
  ``tl2cgen.export_lib(..., toolchain="gcc")``, for XGBoost and LightGBM. Its compile time is
  reported; the timed call includes building the ``tl2cgen.DMatrix`` (no copy for float32).
* lleaves 1.3.0 (LightGBM only) needs llvmlite < 0.45, which Numba 0.68 cannot share, so it runs
  in its own virtualenv, ``benchmarks/.venv-lleaves`` (git-ignored), which this script creates on
  first use (``--lleaves-venv`` to use another; by hand: ``python3 -m venv
  benchmarks/.venv-lleaves && benchmarks/.venv-lleaves/bin/pip install lleaves==1.3.0
  "llvmlite<0.45"``). It is called through ``benchmarks/lleaves_worker.py`` in a subprocess on
  the saved LightGBM model file, on float64 rows (its dtype); its compile time is reported
  separately.

A peer that cannot run is reported with the reason and left out of the ratios.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def higgs_like(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 28)).astype(np.float32)
    X[:, 21:] = np.abs(X[:, 21:]) + 0.5 * np.abs(X[:, :7])  # positive "high-level" features
    z = X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + 0.5 * X[:, 21] - 0.3 * X[:, 25] ** 2
    y = (z + rng.logistic(size=n) * 0.5 > 0).astype(np.float32)
    return X, y


def latency(fn, n=5000):
    """Median wall time of one call in µs, over n calls after 100 warm-up calls."""
    for _ in range(100):
        fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t)
    return float(np.median(ts)) / 1e3


# -- TL2cgen -------------------------------------------------------------------------------------
def tl2cgen_build(kind, booster, workdir, threads, name):
    """(predictor for batches, predictor with one thread, compile seconds) or (None, reason)."""
    try:
        import tl2cgen
        import treelite
    except ImportError as e:
        return None, f"not installed ({e}); pip install tl2cgen==1.0.0 (the 'bench' extra)"
    if shutil.which("gcc") is None:
        return None, "gcc not found"
    try:
        tm = (treelite.frontend.from_xgboost(booster) if kind == "xgboost"
              else treelite.frontend.from_lightgbm(booster))
        lib = os.path.join(workdir, f"{name}.so")
        t = time.perf_counter()
        tl2cgen.export_lib(tm, toolchain="gcc", libpath=lib,
                           params={"parallel_comp": max(threads, 1)}, nthread=threads)
        ct = time.perf_counter() - t
        return (tl2cgen.Predictor(lib, nthread=threads), tl2cgen.Predictor(lib, nthread=1), ct), None
    except Exception as e:  # noqa: BLE001 - report, do not crash
        return None, f"failed: {type(e).__name__}: {e}"


def tl2cgen_predict(pred, X):
    import tl2cgen
    return pred.predict(tl2cgen.DMatrix(X, dtype="float32"), pred_margin=True)


# -- lleaves (own virtualenv, subprocess) --------------------------------------------------------
def lleaves_python(venv, allow_create):
    """Path of the lleaves venv's python, creating the venv if asked; or (None, reason)."""
    py = os.path.join(venv, "bin", "python")
    check = [py, "-c", "import lleaves, llvmlite; print(llvmlite.__version__)"]
    if os.path.exists(py):
        r = subprocess.run(check, capture_output=True, text=True)
        if r.returncode == 0:
            return py, None
        if not allow_create:
            return None, f"{venv} has no working lleaves: {r.stderr.strip().splitlines()[-1:]}"
    elif not allow_create:
        return None, f"{venv} does not exist (run without --no-lleaves-setup to create it)"
    print(f"  creating {venv} for lleaves (lleaves==1.3.0, llvmlite<0.45) ...", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True, capture_output=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "lleaves==1.3.0", "llvmlite<0.45",
                        "numpy"], check=True, capture_output=True, text=True)
    except (subprocess.CalledProcessError, OSError) as e:
        err = getattr(e, "stderr", "") or str(e)
        return None, f"could not create {venv}: {str(err).strip().splitlines()[-1:]}"
    r = subprocess.run(check, capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"lleaves does not import in {venv}: {r.stderr.strip().splitlines()[-1:]}"
    return py, None


def lleaves_run(py, booster, X, ref, workdir, name, threads, repeat, lat_n, single_compile,
                timeout):
    """Results dict of lleaves_worker.py, or (None, reason)."""
    if py is None:
        return None
    model_file = os.path.join(workdir, f"{name}.txt")
    booster.save_model(model_file)
    xp, rp = os.path.join(workdir, f"{name}_X.npy"), os.path.join(workdir, f"{name}_ref.npy")
    np.save(xp, np.ascontiguousarray(X, dtype=np.float64))
    np.save(rp, np.asarray(ref, dtype=np.float64))
    cmd = [py, os.path.join(HERE, "lleaves_worker.py"), model_file, xp, rp, str(threads),
           str(repeat), str(lat_n), "1" if single_compile else "0"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {timeout:.0f} s (--lleaves-timeout), still compiling or "
                         "predicting"}
    finally:
        os.remove(xp)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:]
        return {"error": f"worker failed: {tail}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


# -- one model ----------------------------------------------------------------------------------
def interleaved_rounds(fns, repeat):
    """Seconds of each callable in ``repeat`` rounds, each round calling every one once."""
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    return times


def run_model(title, model, X, peers, repeat, runtimes, external=None, notes=()):
    """peers: name -> callable; external: name -> seconds (timed elsewhere). The peers and the
    hardwood runtimes are timed in ``repeat`` interleaved rounds (each runs once a round), so
    that a change in the machine's load touches them alike, after each peer's output was checked
    against hardwood's ``auto``; the median of the rounds with their spread, and the median
    over rounds of each round's ratio."""
    import hardwood
    print(f"\n== {title}: {model.num_trees} trees, {X.shape[0]:,} rows x {X.shape[1]} features")
    for n in notes:
        print(f"  {n}")
    ref = model.predict(X[:2000], output="raw")
    fns, info = dict(peers), {}
    for rt in runtimes:
        t = time.perf_counter()
        try:
            c = hardwood.compile(model, rt)
        except ValueError as e:
            print(f"  hardwood {rt:19s} skipped: {e}")
            continue
        ct = time.perf_counter() - t
        got = c.predict(X[:2000], output="raw")
        assert np.allclose(got, ref, rtol=1e-9, atol=1e-9), rt
        out = np.empty((X.shape[0], model.n_outputs))
        fns[rt] = lambda c=c, out=out: c.predict(X, output="raw", out=out)
        extra = ""
        if rt == "vpred":
            extra = (f" (v={sorted({g['v'] for g in c.layout.groups})}, "
                     f"{len(c.layout.groups)} padded depth passes")
            if c.walked:
                extra += f"; {c.walked} trees on the unpadded walk, v={c.walk_v}"
            extra += ")"
        if rt == "auto":
            extra = f" (picks {c.choose(X.shape[0])})"
        info[rt] = f"  compile {ct:.2f} s{extra}"
    # every peer run once before any timer (its warm-up) and its own margins checked against
    # hardwood's default runtime (float tolerance: XGBoost and TL2cgen sum in float32)
    if "auto" in info:
        mine = fns["auto"]().reshape(X.shape[0], -1)
        for name, fn in peers.items():
            theirs = np.asarray(fn(), np.float64).reshape(X.shape[0], -1)
            err = float(np.abs(theirs - mine).max())
            assert np.allclose(theirs, mine, rtol=1e-4, atol=1e-4), (name, err)
            print(f"  {name}: margins equal hardwood auto's (max |diff| {err:.1e})")
    times = interleaved_rounds(fns, repeat)
    # headline: the median of the rounds, with the spread (min-max) beside it
    res = {k: float(np.median(v)) for k, v in times.items()}
    spread = {k: f" (rounds {X.shape[0] / max(v) / 1e6:.2f}-{X.shape[0] / min(v) / 1e6:.2f})"
              for k, v in times.items()}
    for name in peers:
        print(f"  {name:28s} {res[name]:8.3f} s  {X.shape[0] / res[name] / 1e6:7.2f} M rows/s"
              f"{spread[name]}")
    for name, sec in (external or {}).items():
        res[name] = sec
        print(f"  {name:28s} {res[name]:8.3f} s  {X.shape[0] / res[name] / 1e6:7.2f} M rows/s")
    for rt in info:
        print(f"  hardwood {rt:19s} {res[rt]:8.3f} s  {X.shape[0] / res[rt] / 1e6:7.2f} M rows/s"
              f"{spread[rt]}{info[rt]}")
    done = list(info)
    hw = min(res[r] for r in done)
    best_hw = min(done, key=lambda r: res[r])
    others = [p for p in res if p not in runtimes]
    for p in sorted(others, key=lambda p: res[p]):
        line = (f"  ratio best hardwood ({best_hw}, {X.shape[0] / hw / 1e6:.2f} M rows/s) / {p}: "
                f"{res[p] / hw:.2f}x throughput")
        if p in times and "auto" in times:
            per_round = sorted(a / b for a, b in zip(times[p], times["auto"]))
            line += (f"; auto / {p} per round: "
                     + ", ".join(f"{r:.2f}" for r in per_round)
                     + f" (median {float(np.median(per_round)):.2f})")
        print(line)
    return res


def single_row(title, model, row, peers, runtimes, lat_n, external=None):
    """Median single-row latency of each peer and hardwood runtime; checks each runtime's row
    against the naive runtime (bit for bit)."""
    import hardwood
    print(f"  single-row latency, {title} (median of {lat_n} calls):")
    lat = {}
    for name, fn in peers.items():
        lat[name] = latency(fn, lat_n)
    lat.update(external or {})
    naive = hardwood.compile(model, "naive")
    ref = naive.predict(row)
    K = max(model.n_outputs, 1)
    for rt in runtimes:
        try:
            c = hardwood.compile(model, rt)
        except ValueError as e:
            print(f"    hardwood {rt}: skipped ({e})")
            continue
        assert np.array_equal(c.predict(row), ref), rt
        lat[f"hardwood {rt}"] = latency(lambda: c.predict(row), lat_n)
        if rt in ("vpred", "auto"):
            o = np.empty((1, K))
            lat[f"hardwood {rt} (out=)"] = latency(lambda: c.predict(row, out=o), lat_n)
    model.predict(row, runtime="auto")
    lat["hardwood Model.predict(runtime='auto')"] = latency(
        lambda: model.predict(row, runtime="auto"), lat_n)
    for k, v in lat.items():
        print(f"    {k:40s} {v:9.2f} us")
    hw = {k: v for k, v in lat.items() if k.startswith("hardwood ") and "(out=)" not in k
          and "Model.predict" not in k}
    best = min(hw, key=hw.get)
    for p in sorted((p for p in lat if not p.startswith("hardwood")), key=lat.get):
        print(f"    ratio {p} / {best}: {lat[p] / hw[best]:.1f}x")
    t = time.perf_counter()
    hardwood.compile(model, "auto").predict(row)
    print(f"  compile default runtime (auto) + first row: {time.perf_counter() - t:.3f} s")
    return lat


def lambdamart_model(path, threads):
    """The LambdaMART benchmark's model: LightGBM lambdarank, 500 trees of 31 leaves, on the
    LibSVM file ``path`` (and its ``.query``); returns (booster, its rows as float32)."""
    import lightgbm as lgb
    from sklearn.datasets import load_svmlight_file

    Xr, yr = load_svmlight_file(path)
    Xr = np.ascontiguousarray(Xr.toarray(), dtype=np.float32)
    q = np.loadtxt(path + ".query", dtype=np.int64)
    return lgb.train({"objective": "lambdarank", "num_leaves": 31, "verbose": -1,
                      "num_threads": threads, "min_data_in_leaf": 20},
                     lgb.Dataset(Xr, yr, group=q), 500), Xr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="200k rows, fewer repeats")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--latency-n", type=int, default=5000, help="calls per latency median")
    ap.add_argument("--no-tl2cgen", action="store_true")
    ap.add_argument("--no-codegen", action="store_true",
                    help="skip hardwood's codegen runtime in the full run (its Numba compile of "
                    "500 trees takes ~10 minutes)")
    ap.add_argument("--no-lleaves", action="store_true")
    ap.add_argument("--no-lleaves-setup", action="store_true",
                    help="do not create the lleaves virtualenv when it is missing")
    ap.add_argument("--lleaves-venv", default=os.path.join(HERE, ".venv-lleaves"))
    ap.add_argument("--lleaves-big", action="store_true",
                    help="also run lleaves on the 255-leaf model (its compile takes very long)")
    ap.add_argument("--lleaves-timeout", type=float, default=1200,
                    help="seconds allowed to the lleaves subprocess per model")
    ap.add_argument("--lleaves-single-compile", action="store_true",
                    help="time lleaves' single row on a second compilation without cache "
                    "blocking (doubles its compile time)")
    ap.add_argument("--repeat", type=int, default=None,
                    help="interleaved timing rounds (default 3; 2 with --quick)")
    ap.add_argument("--runtimes", default="naive,struct+,pred,vpred,quickscorer,auto",
                    help="hardwood runtimes to time, comma-separated")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import numba
    numba.set_num_threads(args.threads)
    import hardwood
    import lightgbm as lgb
    import xgboost as xgb

    n_score = 200_000 if args.quick else 1_000_000
    repeat = args.repeat or (2 if args.quick else 3)
    lat_n = args.latency_n
    runtimes = [r for r in args.runtimes.split(",") if r]
    work = tempfile.mkdtemp(prefix="hardwood-peers-")
    lle_py, lle_reason = (None, "--no-lleaves") if args.no_lleaves else \
        lleaves_python(args.lleaves_venv, not args.no_lleaves_setup)
    try:
        # 1. XGBoost 500 trees depth 6
        Xtr, ytr = higgs_like(100_000, 1)
        X, _ = higgs_like(n_score, 2)
        bst = xgb.train({"max_depth": 6, "eta": 0.1, "objective": "binary:logistic",
                         "nthread": args.threads, "tree_method": "hist"},
                        xgb.DMatrix(Xtr, ytr), 500)
        m = hardwood.import_model(bst)
        row = np.ascontiguousarray(X[:1])
        peers = {"xgboost inplace_predict": lambda: bst.inplace_predict(X, predict_type="margin")}
        lat_peers = {"xgboost inplace_predict": lambda: bst.inplace_predict(row)}
        notes = []
        tl = None if args.no_tl2cgen else tl2cgen_build("xgboost", bst, work, args.threads, "xgb")
        if tl and tl[0]:
            pb, p1, ct = tl[0]
            err = np.abs(tl2cgen_predict(pb, X[:2000]).reshape(-1)
                         - m.predict(X[:2000], output="raw")).max()
            notes.append(f"tl2cgen export_lib (gcc): {ct:.1f} s; max |margin - hardwood| "
                         f"{err:.1e} (float32 sums)")
            peers["tl2cgen (gcc)"] = lambda: tl2cgen_predict(pb, X)
            lat_peers["tl2cgen (gcc, 1 thread)"] = lambda: tl2cgen_predict(p1, row)
        elif tl:
            notes.append(f"tl2cgen: {tl[1]}")
        notes.append("lleaves: reads LightGBM models only (not compared on XGBoost)")
        run_model("XGBoost 500 x depth 6 (Higgs-shaped)", m, X, peers, repeat,
                  runtimes + (["codegen"] if not (args.quick or args.no_codegen) else []),
                  notes=notes)
        single_row("XGBoost 500 x depth 6", m, row, lat_peers,
                   ["naive", "struct+", "pred", "vpred", "quickscorer", "auto"], lat_n)

        # 2. LightGBM 255 leaves
        lb = lgb.train({"num_leaves": 255, "objective": "binary", "verbose": -1,
                        "num_threads": args.threads, "learning_rate": 0.1},
                       lgb.Dataset(Xtr, ytr), 200 if args.quick else 500)
        lightgbm_model("LightGBM 255 leaves", lb, X, args, repeat, runtimes, work, lle_py,
                       lle_reason, lat_n, "lgb255", big=True)

        # 3. LambdaMART on rank.train
        path = os.path.join(HERE, "..", "..", "shared", "data", "rank.train")
        if os.path.exists(path) and os.path.exists(path + ".query"):
            rk, Xr = lambdamart_model(path, args.threads)
            Xs = np.ascontiguousarray(np.tile(Xr, (max(1, n_score // Xr.shape[0] // 4), 1)))
            lightgbm_model("LightGBM LambdaMART (rank.train)", rk, Xs, args, repeat, runtimes,
                           work, lle_py, lle_reason, lat_n // 5, "rank")
        else:
            print("\n== LambdaMART: ../shared/data/rank.train not found, skipped")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def lightgbm_model(title, booster, X, args, repeat, runtimes, work, lle_py, lle_reason, lat_n,
                   name, big=False):
    import hardwood
    m = hardwood.import_model(booster)
    th = args.threads
    peers = {"lightgbm predict": lambda: booster.predict(X, raw_score=True, num_threads=th)}
    row = np.ascontiguousarray(X[:1])
    lat_peers = {"lightgbm predict (1 thread)":
                 lambda: booster.predict(row, raw_score=True, num_threads=1)}
    notes, external, ext_lat = [], {}, {}
    tl = None if args.no_tl2cgen else tl2cgen_build("lightgbm", booster, work, th, name)
    if tl and tl[0]:
        pb, p1, ct = tl[0]
        err = np.abs(tl2cgen_predict(pb, X[:2000]).reshape(-1)
                     - m.predict(X[:2000], output="raw")).max()
        notes.append(f"tl2cgen export_lib (gcc): {ct:.1f} s; max |margin - hardwood| {err:.1e}")
        peers["tl2cgen (gcc)"] = lambda: tl2cgen_predict(pb, X)
        lat_peers["tl2cgen (gcc, 1 thread)"] = lambda: tl2cgen_predict(p1, row)
    elif tl:
        notes.append(f"tl2cgen: {tl[1]}")
    if lle_py is None:
        notes.append(f"lleaves: not run ({lle_reason})")
    elif big and not args.lleaves_big:
        notes.append("lleaves: not run (compiling this 255-leaf model did not finish in 14 min "
                     "on the 2-core machine; --lleaves-big to try)")
    else:
        ref = booster.predict(X[:2000], raw_score=True, num_threads=th)
        r = lleaves_run(lle_py, booster, X, ref, work, name, th, repeat, max(lat_n, 1),
                        args.lleaves_single_compile, args.lleaves_timeout)
        if "error" in r:
            notes.append(f"lleaves: {r['error']}")
        else:
            single = (f", {r['compile_single_s']:.1f} s (single-row model, no cache blocking)"
                      if "compile_single_s" in r else "")
            notes.append(f"lleaves compile: {r['compile_s']:.1f} s{single}; max |margin - "
                         f"lightgbm| {r['max_abs_err']:.1e}; {r['versions']}")
            external["lleaves (subprocess)"] = r["batch_s"]
            ext_lat["lleaves (n_jobs=1)"] = r["latency_us"]
    run_model(title, m, X, peers, repeat, runtimes, external=external, notes=notes)
    if lat_n:
        single_row(title, m, row, lat_peers, ["naive", "struct+", "quickscorer", "auto"], lat_n,
                   ext_lat)


if __name__ == "__main__":
    main()
