"""On a real NVIDIA GPU (skipped without one, and under the simulator): random forests grown
with device='cuda' equal the CPU's, the 'cuda' prediction runtime equals Model.predict, and
boosting with device='cuda' is bitwise-identical run after run. The simulator tests
(test_forest_cuda, test_boost_cuda, test_predict_runtimes) cover the same code on tiny data;
these run it compiled, on sizes where every kernel launches many blocks."""
from __future__ import annotations

import os

import numpy as np
import pytest

import hardwood

numba_cuda = pytest.importorskip("numba.cuda", reason="numba-cuda is not installed")


@pytest.fixture(scope="module", autouse=True)
def _real_gpu():
    try:
        if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" or not numba_cuda.is_available():
            pytest.skip("no CUDA GPU (or the simulator is on)")
    except Exception as e:  # pragma: no cover - a broken driver
        pytest.skip(f"CUDA is not usable ({type(e).__name__})")


def _classification(n, d, classes, seed=0):
    from sklearn.datasets import make_classification

    X, y = make_classification(n, d, n_informative=d // 2, n_classes=classes,
                               random_state=seed)
    X[::11, 1] = np.nan  # missing values: learned default directions
    X[:, 3] = np.round(X[:, 3])  # few distinct values
    return X, y


def test_forest_on_the_gpu_equals_the_cpu():
    from hardwood import RandomForestClassifier, RandomForestRegressor

    X, y = _classification(40_000, 12, 3)
    kw = dict(n_estimators=4, max_depth=12, random_state=5)
    a = RandomForestClassifier(**kw).fit(X, y)
    b = RandomForestClassifier(device="cuda", **kw).fit(X, y)
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
    yr = np.round(3 * X[:, 0] + np.nan_to_num(X[:, 1])) + (y == 2)  # integer sums are exact
    a = RandomForestRegressor(**kw).fit(X, yr)
    b = RandomForestRegressor(device="cuda", **kw).fit(X, yr)
    assert np.array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("objective,classes", [("reg:squarederror", 0), ("binary:logistic", 2),
                                               ("multi:softprob", 3)])
def test_cuda_runtime_on_the_gpu_equals_model_predict(objective, classes):
    X, y = _classification(60_000, 10, max(classes, 2), seed=1)
    if classes == 0:
        y = X[:, 0] * 2 + np.nan_to_num(X[:, 1])
    X[:, 3] = np.floor(np.abs(X[:, 3])) % 5  # a categorical field
    params = {"objective": objective, "max_depth": 6, "learning_rate": 0.3}
    if classes > 2:
        params["num_class"] = classes
    m = hardwood.train(params, hardwood.Dataset(X, y, categorical_features=[3]), 20)
    c = hardwood.compile(m, "cuda")
    for out in ("raw", "value", "leaf"):
        np.testing.assert_allclose(c.predict(X, output=out),
                                   m.predict(X, output=out, runtime="naive"),
                                   rtol=1e-6, atol=1e-6, err_msg=out)


def test_boosting_on_the_gpu_is_bitwise_identical_run_after_run():
    X, y = _classification(200_000, 16, 2, seed=2)
    ds = hardwood.Dataset(X.astype(np.float32), y)
    p = {"objective": "binary:logistic", "max_depth": 8, "learning_rate": 0.1,
         "device": "cuda"}
    a, b = hardwood.train(p, ds, 10), hardwood.train(p, ds, 10)
    for s, t in zip(a.trees, b.trees):
        assert s.value.tobytes() == t.value.tobytes()
        assert np.array_equal(s.feature, t.feature)
    assert a.training_profile["h2d_bytes"] > 0
