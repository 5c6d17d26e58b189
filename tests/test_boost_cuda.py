"""device='cuda' boosting (backends/cuda.py): the same trees as the CPU under numba-cuda's
simulator, bitwise-identical models run after run, and clear errors where it cannot run.
The simulator runs in a child process (NUMBA_ENABLE_CUDASIM must be set before numba is
imported); a test on a real GPU runs when one is present."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from cuda_simulator import PRELUDE

import hardwood

pytest.importorskip("numba.cuda", reason="numba-cuda is not installed")

_SIM_SCRIPT = r"""
import numpy as np
import hardwood
from hardwood.backends.cuda import field_groups, fixed_point_scale, pack_ellpack
from hardwood.train import grower as G

G.FUSED = False  # the CPU's learner path: the same host code for ② on both devices
# a grid's y and z sizes are at most 65535 on a GPU (the simulator does not check): with a
# limit of 2, every launch indexed by node or output runs in slices, as a level of more than
# 65535 nodes does on a GPU
from hardwood.backends import cuda as C
C.MAX_GRID_YZ = 2
assert C._grid_slices(5) == [(0, 2), (2, 4), (4, 5)]


def same_trees(a, b, what):
    assert len(a.trees) == len(b.trees), what
    for ta, tb in zip(a.trees, b.trees):
        for f in ("feature", "left", "right", "default_left", "is_categorical", "cat_bitsets"):
            assert np.array_equal(getattr(ta, f), getattr(tb, f)), (what, f)
        assert np.array_equal(ta.threshold, tb.threshold, equal_nan=True), what
        np.testing.assert_allclose(ta.value, tb.value, rtol=1e-9, atol=1e-12, err_msg=what)


# the layout helpers
B = np.random.default_rng(1).integers(0, 13, size=(7, 9)).astype(np.uint8)
words, bits, per = pack_ellpack(B, np.full(9, 13))
assert bits == 4 and per == 8 and words.shape == (7, 2)
for j in range(9):
    assert np.array_equal((words[:, j // per] >> (bits * (j % per))) & 15, B[:, j])
groups, shared = field_groups(np.array([0, 3, 6, 10, 30, 31]), limit=8)
assert groups.tolist() == [[0, 2, 0, 6], [2, 3, 6, 10], [3, 4, 10, 30], [4, 5, 30, 31]]
assert shared == [True, True, False, True]  # the 20-bin field alone, in global memory
assert fixed_point_scale(np.array([0.0]), 10) == 1.0
s = fixed_point_scale(np.array([-3.0, 1.0]), 1000)
assert 1000 * 3.0 * s < 2.0 ** 62

rng = np.random.default_rng(0)
n = 112
X = rng.normal(size=(n, 5))
X[rng.random((n, 5)) < 0.1] = np.nan  # missing values: learned default directions
X[:, 4] = rng.integers(0, 6, n)
y = np.nan_to_num(X[:, 0]) + (X[:, 4] == 2) * 1.5 + rng.normal(size=n) * 0.1
ds = hardwood.Dataset(X, y, categorical_features=[4], max_bin=32)
yb = (y > np.median(y)).astype(float)
dsb = hardwood.Dataset(X, yb, categorical_features=[4], max_bin=32)
ym = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(float)
dsm = hardwood.Dataset(X, ym, categorical_features=[4], max_bin=32)
cases = [
    ("regression", {"max_depth": 3, "max_cat_to_onehot": 1}, ds),
    ("binary", {"objective": "binary:logistic", "max_depth": 3}, dsb),
    ("multiclass", {"objective": "multi:softprob", "num_class": 3, "max_depth": 2}, dsm),
    # LightGBM's softmax (its hessian factor K / (K - 1)), on the device too
    ("multiclass, LightGBM's name", {"objective": "multiclass", "num_class": 3,
                                     "max_depth": 2}, dsm),
    ("lossguide, sampled", {"grow_policy": "lossguide", "max_leaves": 6, "subsample": 0.6,
                            "max_depth": 0}, ds),
    ("absolute error", {"objective": "reg:absoluteerror", "max_depth": 2}, ds),
    ("weighted, goss, eval on the training set", {"max_depth": 3, "sampling_method": "goss",
                                                  "subsample": 0.5, "learning_rate": 1.0},
     hardwood.Dataset(X, y, weight=np.linspace(0.5, 2, n), categorical_features=[4],
                      max_bin=32)),
    # LightGBM's growth, missing rule and row counts: its rule reads every row's bins once
    # (a histogram of unit weights, on the device), a field without missing values too
    ("LightGBM's missing rule", {"objective": "regression", "num_leaves": 6,
                                 "min_data_in_leaf": 5},
     hardwood.Dataset(np.where(np.arange(5) == 3, np.nan_to_num(X), X), y,
                      categorical_features=[4], max_bin=32)),
]
from hardwood.train.booster import Booster
# margins, g and h on the device where it computes the objective's gradients
assert Booster({"device": "cuda"}, ds)._dev
assert Booster({"device": "cuda", "objective": "multi:softprob"}, dsm)._dev
assert Booster({"device": "cuda", "objective": "multiclass"}, dsm)._dev
assert not Booster({"device": "cuda", "objective": "reg:absoluteerror"}, ds)._dev
for what, p, data in cases:
    rounds = 1 if what.startswith("multiclass") else 2
    a = hardwood.train(p, data, rounds, valid_sets=[data])
    b = hardwood.train({**p, "device": "cuda"}, data, rounds, valid_sets=[data])
    same_trees(a, b, what)
    for name, curve in a.evals_result["train"].items():  # the margins came back for these
        np.testing.assert_allclose(b.evals_result["train"][name], curve, rtol=1e-9)
    prof = b.training_profile
    assert prof["h2d_bytes"] > 0 and prof["d2h_bytes"] > 0, prof
    print("same trees:", what)
# out of core on the GPU: each round's sample, gathered from the pages on disk, grows on the
# device (the pages stream on the CPU for the update); without sampling, every level streams
# every page through the device
import tempfile
Xf = np.round(X[:, :4], 1).astype(np.float32)  # few values: exact sketches, in-core bins
disk = hardwood.Dataset.from_batches(lambda: iter([(Xf[:80], y[:80]), (Xf[80:], y[80:])]),
                                     tempfile.mkdtemp(), page_bytes=600)
assert len(disk.pages_on_disk[0]) > 1
for p in ({"max_depth": 2, "sampling_method": "mvs", "subsample": 0.5},  # Algorithm 7
          {"max_depth": 2}):  # streaming (Algorithm 6): each page goes up at every level
    a = hardwood.train(p, disk, 2)
    b = hardwood.train({**p, "device": "cuda"}, disk, 2)
    same_trees(a, b, f"out of core {p}")
    assert b.training_profile["h2d_bytes"] > 0
print("same trees: out of core, sampled and streaming")
c = hardwood.train({**cases[0][1], "device": "cuda"}, ds, 2)
assert hardwood.train({**cases[0][1], "device": "cuda"}, ds, 2).trees[-1].value.tobytes() \
    == c.trees[-1].value.tobytes()
print("bitwise run after run")
est = hardwood.GBDTRegressor(n_estimators=2, max_depth=2, device="cuda").fit(X[:, :4], y)
ref = hardwood.GBDTRegressor(n_estimators=2, max_depth=2).fit(X[:, :4], y)
np.testing.assert_allclose(est.predict(X[:, :4]), ref.predict(X[:, :4]), rtol=1e-9)
print("estimator ok")
"""


def _run(script, env_extra, timeout=600):
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_cuda_boosting_equals_cpu_under_the_simulator():
    p = _run(PRELUDE + _SIM_SCRIPT, {"NUMBA_ENABLE_CUDASIM": "1"})
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    assert "bitwise run after run" in p.stdout and "estimator ok" in p.stdout


def test_cuda_without_a_gpu_is_a_clear_error():
    from hardwood.backends.forest_cuda import cuda_available

    if cuda_available()[0]:
        pytest.skip("a GPU (or the simulator) is present")
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(RuntimeError, match="device='cuda': no CUDA GPU"):
        hardwood.train({"device": "cuda"}, hardwood.Dataset(X, X[:, 0]), 1)


def test_cuda_on_pages_on_disk_without_a_gpu_is_a_clear_error(tmp_path):
    from hardwood.backends.forest_cuda import cuda_available

    if cuda_available()[0]:
        pytest.skip("a GPU (or the simulator) is present")
    X = np.random.default_rng(0).normal(size=(200, 3)).astype(np.float32)
    ds = hardwood.Dataset.from_batches(lambda: iter([(X, X[:, 0])]), str(tmp_path))
    with pytest.raises(RuntimeError, match="device='cuda': no CUDA GPU"):
        hardwood.train({"device": "cuda", "sampling_method": "mvs", "subsample": 0.5}, ds, 1)


_GPU_SCRIPT = r"""
import numpy as np
import hardwood
from sklearn.datasets import make_classification
X, y = make_classification(1_000_000, 28, n_informative=14, random_state=0)
ds = hardwood.Dataset(X.astype(np.float32), y)
p = {"objective": "binary:logistic", "max_depth": 6, "learning_rate": 0.1}
a = hardwood.train(p, ds, 20)
b = hardwood.train({**p, "device": "cuda"}, ds, 20)
same = sum(np.array_equal(s.feature, t.feature) for s, t in zip(a.trees, b.trees))
d = np.abs(a.predict(X[:20000]) - b.predict(X[:20000])).max()
print("trees with the same splits:", same, "of", len(a.trees), "max |p_cpu - p_gpu|:", d)
assert same >= len(a.trees) - 2 and d < 1e-3
"""


def test_cuda_boosting_on_a_real_gpu():
    from numba import cuda

    try:
        if not cuda.is_available() or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
            pytest.skip("no CUDA GPU")
    except Exception:  # pragma: no cover
        pytest.skip("CUDA is not usable")
    p = _run(_GPU_SCRIPT, {}, timeout=1200)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]


def test_cuda_boosting_kernels_compile_to_ptx(monkeypatch):
    """Every kernel of backends/cuda.py compiles for a real GPU (where the CUDA compiler
    libraries are installed; test_forest_cuda.compile_to_ptx)."""
    sys.path.insert(0, os.path.dirname(__file__))
    from test_forest_cuda import compile_to_ptx

    from hardwood.backends import cuda as C

    n, k, nb = 64, 3, 5
    words = np.zeros((n, 2), np.uint32)
    rows = np.zeros(n, np.int32)
    ints = lambda *s: np.zeros(s, np.int64)  # noqa: E731
    f32 = lambda *s: np.zeros(s, np.float32)  # noqa: E731
    f64 = lambda *s: np.zeros(s, np.float64)  # noqa: E731
    i, x = np.int64(1), 1.0
    launches = {
        "quantise": (f32(n), f32(n), x, x, ints(n), ints(n)),
        "hist_group": (words, rows, ints(k), ints(k), ints(n), ints(n), ints(2, 4), ints(9),
                       i, i, True, ints(k, 40, 2)),
        "flag_left": (words, rows, ints(k), ints(k), ints(k), np.zeros((k, 16), np.uint8), i,
                      i, np.zeros(n, np.uint8), ints(k, nb)),
        "scatter_nodes": (rows, ints(k), ints(k), np.zeros(n, np.uint8), ints(k, nb),
                          ints(k, nb), rows),
        "copy_nodes": (rows, rows, ints(k), ints(k)),
        "leaf_delta": (rows, ints(k), ints(k), f64(k), f64(n)),
        "tree_delta": (words, i, i, ints(7), ints(7), np.zeros(40, np.uint8), ints(7), ints(7),
                       f64(7), f64(n)),
        "absmax": (f32(n), f64(1)),
        "add_delta": (f64(n), f64(n)),
        "scale_rows": (f32(2, n), f32(2, n), rows, f32(n)),
        "grad_squared": (f64(1, n), f64(n), f64(n), False, f32(1, n), f32(1, n)),
        "grad_logistic": (f64(1, n), f64(n), f64(n), True, f32(1, n), f32(1, n)),
        "grad_softmax": (f64(3, n), f64(n), f64(n), False, f32(3, n), f32(3, n)),
        "fill_zero": (ints(n),),
        "iota": (rows, i),
    }
    compile_to_ptx(monkeypatch, C, launches)


def test_the_cuda_backends_launch_without_low_occupancy_warnings():
    """A fit makes thousands of small launches: numba-cuda's 'Grid size N will likely result
    in GPU under-utilization' printed 258 times in one test run on an H100. The backends'
    launching methods silence that warning alone."""
    import warnings

    from numba.core.errors import NumbaPerformanceWarning

    from hardwood.backends import cuda as C
    from hardwood.backends import forest_cuda as F
    from hardwood.backends.quiet_launches import launches_quietly
    from hardwood.predict.cuda_runtime import CudaRuntime

    @launches_quietly
    def launch():
        warnings.warn(NumbaPerformanceWarning("Grid size 3 will likely result in GPU "
                                              "under-utilization due to low occupancy."))
        warnings.warn(NumbaPerformanceWarning("Host array used in CUDA kernel will have to "
                                              "be transferred to device."))

    with pytest.warns(NumbaPerformanceWarning) as caught:
        launch()
    assert [str(w.message)[:10] for w in caught] == ["Host array"]
    for cls, names in ((C.CudaPages, ("gradients", "scale_sample", "start", "histograms",
                                      "partition", "add_leaf_values", "predict_binned")),
                       (F.CudaEngine, ("hist", "totals", "partition", "level")),
                       (CudaRuntime, ("_raw", "_leaf"))):
        for name in names:
            assert hasattr(getattr(cls, name), "__wrapped__"), (cls.__name__, name)
