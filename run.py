#!/usr/bin/env python3
"""Bootstrap and run hardwood with nothing but python3.

    python3 run.py demo      # install into .venv, then train and predict on the built-in data
    python3 run.py test      # install into .venv (with test extras), then run the test suite
    python3 run.py bench     # the training benchmark against XGBoost/LightGBM/scikit-learn

Extra arguments are passed on (to `hardwood demo`, to pytest, or to the benchmark). The tests
run in two processes (pytest-xdist, whole files to each: module fixtures such as the Dask
cluster start once), unless the arguments name their own `-n`/`--numprocesses`.
"""
import hashlib
import os
import subprocess
import sys
import venv

ROOT = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(ROOT, ".venv")
BIN = os.path.join(VENV, "Scripts" if os.name == "nt" else "bin")
PY = os.path.join(BIN, "python")


def sh(*cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def ensure_env(extras):
    if sys.version_info < (3, 10):
        sys.exit(f"hardwood needs Python >= 3.10; this is {sys.version.split()[0]}")
    if not os.path.exists(PY):
        try:
            venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
        except Exception as e:  # Debian/Ubuntu ship venv's pip separately
            sys.exit(f"could not create a virtual environment in {VENV} ({e}); "
                     "install your distribution's python3-venv package and try again")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        digest = hashlib.sha256(fh.read() + extras.encode()).hexdigest()
    stamp = os.path.join(VENV, f".hardwood-installed-{extras or 'base'}")
    if os.path.exists(stamp) and open(stamp).read() == digest:
        return
    sh(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    target = f".[{extras}]" if extras else "."
    # (pip's byte-compiling is half of the install, but keep it: with PYTHONDONTWRITEBYTECODE
    # set (as on the dev machine), every process compiled its imports from source: the suite's
    # subprocess fuzzers took 2-3x longer: 11 min 27 s in all against 11 min 05 s)
    sh(PY, "-m", "pip", "install", "--quiet", "-e", target, cwd=ROOT)
    with open(stamp, "w") as fh:
        fh.write(digest)


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else "demo"
    rest = sys.argv[2:]
    if cmd == "demo":
        ensure_env("")
        sh(os.path.join(BIN, "hardwood"), "demo", *rest)
    elif cmd == "test":
        ensure_env("test")
        own = any(a.startswith(("-n", "--numprocesses")) for a in rest)
        workers = [] if own else ["-n", str(min(2, os.cpu_count() or 1)), "--dist", "loadfile"]
        # bytecode caches on, even where PYTHONDONTWRITEBYTECODE is set (as on the dev machine):
        # the suite starts many Python processes (two workers, the fuzzers' subprocesses),
        # and each compiled hardwood's sources again (~0.5 s an import)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        sh(PY, "-m", "pytest", "-q", *workers, *rest, cwd=ROOT, env=env)
    elif cmd == "bench":
        ensure_env("bench")
        sh(PY, os.path.join(ROOT, "benchmarks", "train_vs_peers.py"), *rest)
    else:
        sys.exit(f"unknown command {cmd!r}; use demo, test or bench")


if __name__ == "__main__":
    try:
        main()
    except subprocess.CalledProcessError as e:
        sys.exit(e.returncode)
