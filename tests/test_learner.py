"""The tree learner over pages (issue 21): the fused one-call CPU grower and the learner build
the same trees bit for bit, for every growth policy and sampling parameter; k pages (k = 1, 2,
7, empty pages included) build the trees of one page."""
import numpy as np
import pandas as pd
import pytest

import hardwood
from hardwood.train import grower as grower_mod

FIELDS = ("feature", "threshold", "left", "right", "default_left", "is_categorical",
          "cat_bitsets")


def _data(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 5)), columns=[f"x{j}" for j in range(5)])
    X = X.mask(rng.random(X.shape) < 0.08)
    X["c"] = pd.Categorical(rng.choice([f"k{i}" for i in range(9)], n))
    z = (np.nan_to_num(X.x0.to_numpy()) - 0.7 * np.nan_to_num(X.x1.to_numpy())
         + (X.c.cat.codes.to_numpy() % 3) + rng.normal(scale=0.4, size=n))
    return X, z


def _assert_same(a, b, exact=True):
    assert len(a.trees) == len(b.trees)
    for i, (s, t) in enumerate(zip(a.trees, b.trees)):
        for name in FIELDS:
            np.testing.assert_array_equal(getattr(s, name), getattr(t, name),
                                          err_msg=f"tree {i} {name}")
        for name in ("value", "cover", "gain"):
            if exact:
                np.testing.assert_array_equal(getattr(s, name), getattr(t, name),
                                              err_msg=f"tree {i} {name}")
            else:
                np.testing.assert_allclose(getattr(s, name), getattr(t, name), rtol=1e-9,
                                           atol=1e-9, err_msg=f"tree {i} {name}")


SAMPLING = [{}, {"subsample": 0.7}, {"colsample_bytree": 0.6}, {"colsample_bynode": 0.5},
            {"subsample": 0.8, "colsample_bytree": 0.8, "colsample_bynode": 0.6}]
POLICIES = [{"max_depth": 5}, {"max_depth": 4, "max_leaves": 9},
            {"grow_policy": "lossguide", "max_leaves": 15},
            {"grow_policy": "lossguide", "max_leaves": 24, "max_depth": 4}]


def _train(params, X, y, rounds=4, objective="reg:squarederror"):
    if objective == "multi:softprob":
        y = np.digitize(y, np.quantile(y, [0.33, 0.66])).astype(float)
    p = {"objective": objective, "random_state": 3, "max_cat_to_onehot": 2, **params}
    return hardwood.train(p, hardwood.Dataset(X, y), num_boost_round=rounds)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("sampling", SAMPLING)
def test_fused_grower_and_learner_build_the_same_trees(policy, sampling, monkeypatch):
    X, y = _data()
    monkeypatch.setattr(grower_mod, "FUSED", True)
    fused = _train({**policy, **sampling}, X, y)
    monkeypatch.setattr(grower_mod, "FUSED", False)
    learner = _train({**policy, **sampling}, X, y)
    _assert_same(fused, learner, exact=True)


def test_fused_and_learner_multiclass(monkeypatch):
    X, y = _data(1)
    p = {"max_depth": 4, "colsample_bynode": 0.6, "subsample": 0.8}
    monkeypatch.setattr(grower_mod, "FUSED", True)
    fused = _train(p, X, y, objective="multi:softprob")
    monkeypatch.setattr(grower_mod, "FUSED", False)
    _assert_same(fused, _train(p, X, y, objective="multi:softprob"), exact=True)


@pytest.mark.parametrize("params", [
    {"grow_policy": "lossguide", "max_depth": 0},
    {"grow_policy": "lossguide", "max_depth": 0, "colsample_bynode": 0.6, "subsample": 0.8},
    {"grow_policy": "lossguide", "max_depth": 30, "min_child_weight": 5},
])
def test_unbounded_lossguide_fused_regrows_to_the_learners_tree(params, monkeypatch):
    """Unbounded lossguide runs the fused grower with room for 8 leaves, then 32, 128...
    (regrown from the same rows): the tree is the learner's, bit for bit."""
    X, y = _data(5, n=1200)
    monkeypatch.setattr(grower_mod, "UNBOUNDED_FIRST_LEAVES", 8)
    monkeypatch.setattr(grower_mod, "FUSED", True)
    fused = _train(params, X, y, rounds=3)
    assert max(t.n_leaves for t in fused.trees) > 32  # regrown at least twice
    monkeypatch.setattr(grower_mod, "FUSED", False)
    _assert_same(fused, _train(params, X, y, rounds=3), exact=True)
    monkeypatch.setattr(grower_mod, "FUSED", True)
    monkeypatch.setattr(grower_mod, "UNBOUNDED_POOL_BYTES", 1)  # too big: the learner
    _assert_same(fused, _train(params, X, y, rounds=3), exact=True)


def test_unbounded_lossguide_multiclass_with_node_sampling(monkeypatch):
    X, y = _data(6, n=900)
    p = {"grow_policy": "lossguide", "max_depth": 0, "colsample_bynode": 0.5}
    monkeypatch.setattr(grower_mod, "UNBOUNDED_FIRST_LEAVES", 4)
    monkeypatch.setattr(grower_mod, "FUSED", True)
    fused = _train(p, X, y, rounds=2, objective="multi:softprob")
    monkeypatch.setattr(grower_mod, "FUSED", False)
    _assert_same(fused, _train(p, X, y, rounds=2, objective="multi:softprob"), exact=True)


@pytest.mark.parametrize("policy", [{"max_depth": 6}, {"grow_policy": "lossguide",
                                                      "max_leaves": 31}])
def test_fused_and_learner_agree_on_many_blocks_and_two_lanes(policy, monkeypatch):
    """Nodes of more than SERIAL_ROWS rows are cut into blocks and, where a bin holds many rows,
    summed in two lanes: the learner's backend cuts and sums as the fused grower does. (It
    once cut by BLOCK alone, in one lane. float64 sums of float32 gradients are mostly exact,
    so this data did not show it, but other orders of addition may round otherwise.)"""
    from hardwood.backends.cpu import choose_lanes

    rng = np.random.default_rng(11)
    n = 70_000
    X = rng.normal(size=(n, 6))
    X[rng.random(n) < 0.3, 1] = np.nan  # a dominant (missing) bin: two lanes
    y = X[:, 0] + np.nan_to_num(X[:, 1]) * X[:, 2] + rng.normal(scale=0.5, size=n)
    ds = hardwood.Dataset(X, y)
    assert choose_lanes(ds.bins_row) == 2
    p = {"objective": "reg:squarederror", "subsample": 0.9, **policy}
    monkeypatch.setattr(grower_mod, "FUSED", True)
    fused = hardwood.train(p, ds, num_boost_round=3)
    monkeypatch.setattr(grower_mod, "FUSED", False)
    _assert_same(fused, hardwood.train(p, ds, num_boost_round=3), exact=True)


def test_auto_takes_the_fused_grower_once_compiled_or_worth_compiling(monkeypatch):
    """FUSED="auto": the learner while the fused kernel is not compiled, the fused grower once
    it is, or once the learner's time would pass TIER_UP_SECONDS; the trees are the same."""
    X, y = _data(7, n=1000)
    calls = []
    from hardwood.backends.cpu import CPUBackend

    real = CPUBackend.grow_fused

    def counting(self, *a, **k):
        calls.append(1)
        return real(self, *a, **k)

    monkeypatch.setattr(CPUBackend, "grow_fused", counting)
    monkeypatch.setattr(grower_mod, "FUSED", "auto")
    monkeypatch.setattr(CPUBackend, "fused_compiled", lambda self, *a: False)
    monkeypatch.setattr(grower_mod, "CLOCK", grower_mod.LearnerClock(None))
    learner = _train({"max_depth": 3}, X, y, rounds=3)
    assert calls == []  # not compiled, little work: the learner
    monkeypatch.setattr(grower_mod, "TIER_UP_SECONDS", 0.0)
    tiered = _train({"max_depth": 3}, X, y, rounds=3)
    assert len(calls) == 3
    _assert_same(learner, tiered, exact=True)
    monkeypatch.setattr(grower_mod, "TIER_UP_SECONDS", 1e9)
    monkeypatch.setattr(CPUBackend, "fused_compiled", lambda self, *a: True)
    _train({"max_depth": 3}, X, y, rounds=3)
    assert len(calls) == 6  # compiled: the fused grower from the first tree


def test_learner_clock_adds_up_over_processes(tmp_path, monkeypatch):
    """The learner's seconds persist in the cache folder, so that many short trainings reach
    the tier-up as one long one does; a corrupt or hostile file counts as zero."""
    monkeypatch.setenv("HARDWOOD_CACHE_DIR", str(tmp_path / "cache"))
    a = grower_mod.LearnerClock()
    a.add(0.3)
    assert a.total() == pytest.approx(0.3)  # not saved yet
    a.add(0.4)  # 0.7 s unsaved: written
    b = grower_mod.LearnerClock()  # a later process
    assert b.total() == pytest.approx(0.7)
    b.add(1.0)
    assert grower_mod.LearnerClock().total() == pytest.approx(1.7)
    for junk in ("nan", "-5", "inf", "1e400", "hello"):
        (tmp_path / "cache" / "learner_seconds").write_text(junk)
        assert grower_mod.LearnerClock().total() == 0.0


def test_jit_cache_sees_a_compiled_kernel():
    """``is_compiled`` answers from this Numba's dispatcher: a kernel just compiled is, new
    argument types are not (a Numba whose internals moved would fail here, not silently)."""
    from numba import njit

    from hardwood.backends.jit_cache import is_compiled

    @njit
    def twice(a):
        return a * 2

    assert not is_compiled(twice, (np.zeros(3),))
    twice(np.zeros(3))
    assert is_compiled(twice, (np.zeros(3),))
    assert not is_compiled(twice, (np.zeros(3, dtype=np.int32),))


def _cuts(n, k):
    if k == "empty":  # seven pages, two of them empty
        return [0, 0, 400, 400, 1100, 2000, 2999, n]
    return k


@pytest.mark.parametrize("backend", ["cpu", "reference"])
@pytest.mark.parametrize("pages", [2, 7, "empty"])
@pytest.mark.parametrize("policy", [{"max_depth": 4, "colsample_bynode": 0.7},
                                    {"grow_policy": "lossguide", "max_leaves": 12,
                                     "subsample": 0.8},
                                    {"grow_policy": "lossguide", "max_depth": 5}])
def test_pages_build_the_trees_of_one_page(backend, pages, policy):
    X, y = _data(2, n=3000 if backend == "cpu" else 800)
    n = len(y)
    if backend == "reference" and pages == "empty":
        pages = [0, 0, 100, 100, 300, 500, 799, n]
    rounds = 3 if backend == "cpu" else 2
    one = _train({**policy, "backend": backend, "pages": 1}, X, y, rounds)
    many = _train({**policy, "backend": backend, "pages": _cuts(n, pages)}, X, y, rounds)
    _assert_same(one, many, exact=False)
    np.testing.assert_allclose(one.predict(X), many.predict(X), rtol=1e-9, atol=1e-9)


def test_refit_leaves_over_pages():
    X, y = _data(3, n=1500)
    p = {"objective": "reg:absoluteerror", "max_depth": 3}
    one = _train(p, X, y, objective="reg:absoluteerror")
    many = _train({**p, "pages": [0, 0, 700, 1500]}, X, y, objective="reg:absoluteerror")
    _assert_same(one, many, exact=False)


def test_bad_page_cuts_are_refused():
    X, y = _data(4, n=200)
    with pytest.raises(ValueError, match="page cuts"):
        _train({"pages": [0, 300, 100]}, X, y, 1)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("params", [{"max_depth": 5},
                                    {"max_depth": 4, "subsample": 0.7, "colsample_bynode": 0.6},
                                    {"grow_policy": "lossguide", "max_leaves": 12},
                                    {"sampling_method": "goss", "max_depth": 4}])
def test_multiclass_roots_in_one_pass_change_no_tree(params, fused, monkeypatch):
    """The roots of a round's K trees built in one pass (``Grower.class_roots``) give the
    trees that each tree's own root histogram gives, bit for bit, on both growers."""
    X, y = _data(2, n=6000)
    monkeypatch.setattr(grower_mod, "FUSED", fused)
    calls = []
    real = grower_mod.Grower.class_roots

    def counting(self, *a):
        out = real(self, *a)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(grower_mod.Grower, "class_roots", counting)
    shared = _train(params, X, y, rounds=3, objective="multi:softprob")
    assert calls == [True] * 3
    monkeypatch.setattr(grower_mod.Grower, "class_roots", lambda self, *a: None)
    _assert_same(shared, _train(params, X, y, rounds=3, objective="multi:softprob"),
                 exact=True)


def test_histogram_pool_reuses_the_best_fitting_array_and_never_a_taken_one():
    from hardwood.train.learner import _HistPool

    pool = _HistPool()
    small, big = pool.take((1, 10, 2)), pool.take((4, 10, 2))
    pool.give([small, big])
    again = pool.take((2, 10, 2))  # the best fit: the 80-cell array, not the 20
    assert again.shape == (2, 10, 2) and np.shares_memory(again, big)
    other = pool.take((2, 10, 2))  # the 20-cell one is too small: a new array
    assert not np.shares_memory(other, big) and not np.shares_memory(other, small)
    pool.give([again])
    assert np.shares_memory(pool.take((4, 10, 2)), big)  # the whole array comes back
