"""The numba-cuda random-forest backend: same trees as the CPU backend under the simulator,
and kernels that compile for a real GPU (PTX) where the CUDA compiler libraries are present."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from cuda_simulator import PRELUDE

numba_cuda = pytest.importorskip("numba.cuda", reason="numba-cuda is not installed")

_SIM_SCRIPT = r"""
import numpy as np
from sklearn.datasets import make_classification
from hardwood import RandomForestClassifier, RandomForestRegressor
from hardwood.backends import forest_cpu as K
from hardwood.train.forest_grower import grow_tree_cuda
from hardwood.data.dataset import Dataset
from hardwood.train.forest_grower import GrowData, TreeParams, grow_tree

FIELDS = ("feature", "sbin", "left", "right", "default_left", "count", "value", "gain",
          "threshold")


def same(a, b):
    for f in FIELDS:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f


X, y = make_classification(120, 6, n_informative=4, n_classes=3, random_state=0)
X[::7, 1] = np.nan  # missing values: learned default directions
X[:, 5] = np.round(X[:, 5])  # few distinct values: empty bins, constant nodes
ds = Dataset(X, max_bin=16)
cls = GrowData.from_dataset(ds, y, False, 3)
yr = np.round(3 * X[:, 0] + np.nan_to_num(X[:, 1])) + (y == 2)  # integer target: exact sums
reg = GrowData.from_dataset(ds, yr, True, 1)
rng = np.random.default_rng(0)
cnt = np.bincount(rng.integers(0, 120, 120), minlength=120)
w = cnt.astype(float)
rows = np.flatnonzero(w > 0).astype(np.int32)
cases = [
    (cls, TreeParams(criterion=K.GINI, mtry=3), "hybrid", 50),
    (cls, TreeParams(criterion=K.ENTROPY, mtry=2, min_samples_leaf=3), "depthfirst", None),
    (reg, TreeParams(criterion=K.SQUARED, mtry=4, max_depth=5), "breadthfirst", None),
    (cls, TreeParams(criterion=K.GINI, mtry=3, max_leaf_nodes=6), "hybrid", None),
]
for data, p, growth, cross in cases:
    a = grow_tree(data, p, rows.copy(), w, np.uint64(11), growth=growth, crossover=cross)
    b = grow_tree_cuda(data, p, rows.copy(), w, np.uint64(11), growth=growth, crossover=cross)
    assert a.n_nodes > 5, a.n_nodes
    same(a, b)
    print("tree", growth, a.n_nodes, "nodes: same")

Xs, ys = X[:60], y[:60]
kw = dict(n_estimators=2, max_depth=3, random_state=3)
c_cpu = RandomForestClassifier(**kw).fit(Xs, ys)
c_gpu = RandomForestClassifier(device="cuda", **kw).fit(Xs, ys)
assert np.array_equal(c_cpu.predict_proba(X), c_gpu.predict_proba(X))
r_cpu = RandomForestRegressor(**kw).fit(Xs, yr[:60])
r_gpu = RandomForestRegressor(device="cuda", **kw).fit(Xs, yr[:60])
assert np.array_equal(r_cpu.predict(X), r_gpu.predict(X))
print("SIM-OK")
"""


def test_cuda_forest_matches_cpu_under_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-c", PRELUDE + _SIM_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=900)
    assert "SIM-OK" in r.stdout, r.stdout + r.stderr


def compile_to_ptx(monkeypatch, module, launches):
    """Type-check and compile each kernel of ``module`` named in ``launches`` (name -> example
    arguments) for a real GPU (compute capability 8.0) without one: the simulator runs
    Python, so only this catches code numba-cuda cannot compile. Skips where the CUDA compiler
    libraries are not installed."""
    from numba import cuda, typeof

    if cuda.is_available() and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        pytest.skip("the simulator is on in this process")
    try:
        from numba.cuda.cudadrv import nvrtc  # noqa: F401

        cuda.compile_ptx(lambda a: None, "void(float64[:])", cc=(8, 0))
    except Exception as e:
        pytest.skip(f"the CUDA compiler libraries are not installed ({type(e).__name__})")
    import numba.cuda.dispatcher as disp

    class _Device:
        compute_capability = (8, 0)

    # device functions are compiled for "the current device": give them one
    monkeypatch.setattr(disp, "get_current_device", lambda: _Device())
    for name, args in launches.items():
        ptx, _ = cuda.compile_ptx(getattr(module, name).py_func,
                                  tuple(typeof(a) for a in args), cc=(8, 0))
        assert ".entry" in ptx, name


def test_cuda_forest_kernels_compile_to_ptx(monkeypatch):
    from hardwood.backends import forest_cuda as F

    n, d, C, nb = 64, 5, 3, 17
    bc = np.zeros((d, n), np.uint8)
    br = np.zeros((n, d), np.uint16)
    rows = np.zeros(n, np.int32)
    w, yk, yv = np.zeros(n), np.zeros(n, np.int64), np.zeros(n)
    i, x = np.int64(1), 1.0
    ints = lambda *s: np.zeros(s, np.int64)  # noqa: E731
    launches = {
        "hist": (bc, rows, i, i, ints(2), w, yk, yv, False, i, i, np.zeros((2, nb, C)),
                 ints(2, nb), True),
        "flag_count": (bc, rows, i, i, i, i, i, False, np.zeros(n, np.int32), ints(3)),
        "scatter": (rows, i, i, np.zeros(n, np.int32), ints(3), ints(3), rows),
        "copy_back": (rows, rows, i, i),
        "bf_level": (br, rows, rows, w, yk, yv, False, i, ints(d), ints(4), ints(4), ints(4),
                     np.zeros(4, np.uint64), i, i, i, i, x, i, x, x, np.zeros((2, nb, C)),
                     ints(2, nb), ints(2, nb), ints(2, d), ints(2, d), np.zeros((2, 3, C)),
                     np.zeros((4, C)), ints(4), ints(4), ints(4), np.zeros(4, np.bool_),
                     np.zeros(4), ints(4)),
    }
    compile_to_ptx(monkeypatch, F, launches)
