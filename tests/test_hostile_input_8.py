"""Reports of ranking models, XGBoost's training keywords and forest probabilities, tried as a
new user would (session 18): each test names what hardwood did before."""
import os
import re

import numpy as np
import pytest

import hardwood as hw
from hardwood.cli import main


@pytest.mark.parametrize("runtime", ["naive", "struct", "pred", "vpred"])
def test_forest_model_probabilities_are_clipped_in_every_runtime(runtime):
    """A forest's probabilities are sums of fraction / n_estimators: the estimators clipped
    them, but its Model (``forest_.to_model()``, a saved forest) and the compiled runtimes
    returned 1.0000000000000013, which scikit-learn's log_loss refuses."""
    from hardwood import RandomForestClassifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 10))
    y = np.digitize(X[:, 0] + rng.normal(0, 0.7, 3000), [-1, 0.7])
    rf = RandomForestClassifier(n_estimators=60, random_state=0).fit(X[:2000], y[:2000])
    model = rf.forest_.to_model()
    raw = model.predict(X[2000:], output="raw")
    assert raw.max() > 1.0  # the case: a rounding past 1 in the sum
    expected = np.clip(raw, 0.0, 1.0)
    np.testing.assert_array_equal(model.predict(X[2000:]), expected)
    rt = hw.compile(model, runtime=runtime)
    np.testing.assert_array_equal(rt.predict(X[2000:]), expected)
    top = int(np.argmax(raw.max(axis=1)))
    np.testing.assert_array_equal(rt.predict(X[2000 + top:2001 + top]), expected[top:top + 1])
    np.testing.assert_array_equal(rf.predict_proba(X[2000:]), expected)


def test_generated_kernels_are_renamed_when_the_hardwood_code_they_import_changes(
        monkeypatch, tmp_path):
    """Generated kernels were named by the hash of their text alone, and Numba checks only
    a kernel file's own stamp: after an upgrade that changed ``transform_inplace``, the
    one-row ``pred`` kernel (same text) kept the old transform's machine code from the
    cache folder, and returned unclipped forest probabilities."""
    from hardwood.predict import _cache

    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(_cache, "_DIRS", {})
    monkeypatch.setattr(_cache, "_LOADED", {})
    source = ("from hardwood.predict.struct import cat_left\n"
              f"TOKEN = {tmp_path.name!r}\n")
    stamp = _cache.library_stamp(source)
    # the imported module, and the hardwood modules it imports in turn
    assert [line.split(":")[0] for line in stamp.splitlines()] == [
        "hardwood.predict.struct", "hardwood.predict.treeshape"]
    first = _cache.load_source("stamp", source)
    assert first.TOKEN == tmp_path.name
    stamps = dict(_cache._STAMPS)
    name, imports = stamps["hardwood.predict.treeshape"]
    monkeypatch.setitem(_cache._STAMPS, "hardwood.predict.treeshape",
                        (name + "-upgraded", imports))
    second = _cache.load_source("stamp", source)
    assert second.__name__ != first.__name__  # a new file: no stale machine code
    assert os.path.isfile(second.__file__) and os.path.isfile(first.__file__)
