"""Random-forest kernels against their naive twin, growth schemes against each other."""
from __future__ import annotations

import numba
import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from hardwood.backends import forest_cpu as K
from hardwood.data.dataset import Dataset
from hardwood.train import forest_grower as G

FIELDS = ("feature", "sbin", "left", "right", "default_left", "count")


def _same(a, b):
    for f in FIELDS:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    np.testing.assert_allclose(a.value, b.value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.gain, b.gain, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a.weight, b.weight)
    np.testing.assert_allclose(a.threshold, b.threshold)


def _class_data(n=500, d=9, k=3, max_bin=24, seed=0, nan=True):
    X, y = make_classification(n, d, n_informative=5, n_classes=k, random_state=seed)
    if nan:
        X[::6, 2] = np.nan
        X[::11, 4] = np.nan
    X[:, 7] = np.round(X[:, 7])  # few distinct values: many empty bins and constant nodes
    ds = Dataset(X, max_bin=max_bin)
    return G.GrowData.from_dataset(ds, y, False, k)


def _bootstrap(n, seed):
    cnt = np.bincount(np.random.default_rng(seed).integers(0, n, n), minlength=n)
    return np.flatnonzero(cnt > 0).astype(np.int32), cnt.astype(np.float64)


CLASS_CASES = [
    dict(criterion=K.GINI, mtry=3),
    dict(criterion=K.ENTROPY, mtry=2, min_samples_leaf=3),
    dict(criterion=K.GINI, mtry=9, max_depth=4, min_samples_split=10),
    dict(criterion=K.GINI, mtry=3, min_impurity_decrease=0.002),
    dict(criterion=K.ENTROPY, mtry=3, min_weight_fraction_leaf=0.008),  # 4 of 500
    dict(criterion=K.GINI, mtry=3, max_leaf_nodes=17),
]


@pytest.fixture(params=["packed", "by-row"])
def breadth_first_records(request, monkeypatch):
    """Both ways breadth-first levels read rows: packed records moved with the rows (narrow
    data) and reads through the row numbers (wide data)."""
    from hardwood.backends import forest_engine

    if request.param == "by-row":
        monkeypatch.setattr(forest_engine, "PACK_MAX_FIELDS", 0)
    return request.param


@pytest.mark.parametrize("case", CLASS_CASES)
def test_classification_tree_matches_naive_twin(case, breadth_first_records):
    data = _class_data()
    rows, w = _bootstrap(500, 1)
    p = G.TreeParams(**case)
    key = K.root_key(7, 3)
    naive = G.grow_tree_naive(data, p, rows, w, key)
    assert naive.n_nodes > 5
    for growth in G.GROWTH:
        tree = G.grow_tree(data, p, rows.copy(), w, key, growth=growth, crossover=90)
        _same(tree, naive)


@pytest.mark.parametrize("case", [dict(mtry=2), dict(mtry=8, min_samples_leaf=4, max_depth=6),
                                  dict(mtry=3, max_leaf_nodes=12)])
def test_regression_tree_matches_naive_twin(case, breadth_first_records):
    X, y = make_regression(400, 8, noise=5.0, random_state=2)
    X[::5, 1] = np.nan
    data = G.GrowData.from_dataset(Dataset(X, max_bin=20), y, True, 1)
    p = G.TreeParams(criterion=K.SQUARED, **case)
    rows = np.arange(400, dtype=np.int32)
    w = np.random.default_rng(0).integers(1, 4, 400).astype(np.float64)
    key = K.root_key(1, 0)
    naive = G.grow_tree_naive(data, p, rows, w, key)
    for growth in G.GROWTH:
        _same(G.grow_tree(data, p, rows.copy(), w, key, growth=growth, crossover=70), naive)
    # leaves hold the weighted mean of their rows
    leaf = naive.feature < 0
    assert np.all(np.isfinite(naive.value[leaf]))


@pytest.mark.parametrize("is_reg", [False, True])
def test_breadth_first_nodes_touching_many_bins_match_naive_twin(is_reg):
    # breadth-first nodes list the bins they touch in order by insertion sort up to 24 bins
    # and by a pass over the counts beyond: both must give the naive twin's tree
    n = 900
    if is_reg:
        X, y = make_regression(n, 6, noise=5.0, random_state=3)
        p = G.TreeParams(criterion=K.SQUARED, mtry=3)
    else:
        X, y = make_classification(n, 6, n_informative=4, n_classes=3, random_state=3)
        p = G.TreeParams(criterion=K.ENTROPY, mtry=3)
    X[::7, 0] = np.nan
    data = G.GrowData.from_dataset(Dataset(X, max_bin=120), y, is_reg, 1 if is_reg else 3)
    rows, w = _bootstrap(n, 5)
    key = K.root_key(3, 1)
    naive = G.grow_tree_naive(data, p, rows, w, key)
    tree = G.grow_tree(data, p, rows.copy(), w, key, growth="breadthfirst")
    _same(tree, naive)
    assert int(tree.count[0]) > 24 * 4  # the root alone touches far more than 24 bins


def test_trees_do_not_depend_on_thread_count():
    data = _class_data(n=3000, max_bin=64, nan=False)
    rows, w = _bootstrap(3000, 4)
    p = G.TreeParams(criterion=K.GINI, mtry=3)
    old = numba.get_num_threads()
    try:
        out = []
        for t in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(t)
            out.append(G.grow_tree(data, p, rows.copy(), w, K.root_key(0, 0), crossover=400))
    finally:
        numba.set_num_threads(old)
    _same(out[0], out[1])


def test_leaves_are_pure_when_grown_out():
    data = _class_data(n=800, max_bin=256, nan=False)
    rows, w = _bootstrap(800, 2)
    tree = G.grow_tree(data, G.TreeParams(criterion=K.GINI, mtry=9), rows.copy(), w,
                       K.root_key(0, 1))
    leaf = tree.feature < 0
    # every leaf is pure or holds rows that no binned split separates
    assert np.mean(tree.value[leaf].max(axis=1) == 1.0) > 0.97
    assert tree.count[0] == rows.size and tree.weight[0] == w[rows].sum()


def test_feature_draws_are_a_permutation_and_prefix_stable():
    key = K.root_key(3, 5)
    full = K.perm_prefix(key, 40, 40)
    assert sorted(full.tolist()) == list(range(40))
    assert np.array_equal(K.perm_prefix(key, 40, 7), full[:7])
    other = K.perm_prefix(K.child_keys(np.array([key], dtype=np.uint64), 0)[0], 40, 40)
    assert not np.array_equal(other, full)


def test_criteria_proxies_match_impurity_decrease():
    T = np.array([5.0, 3.0, 2.0])
    Lc = np.array([4.0, 1.0, 0.0])
    Rc = T - Lc
    for crit in (K.GINI, K.ENTROPY):
        dec = (T.sum() * K.impurity(T, 3, crit) - Lc.sum() * K.impurity(Lc, 3, crit)
               - Rc.sum() * K.impurity(Rc, 3, crit))
        gain = K.proxy(Lc, 3, crit) + K.proxy(Rc, 3, crit) - K.parent_proxy(T, 3, crit)
        if crit == K.ENTROPY:
            gain /= K.LN2
        assert gain == pytest.approx(dec, rel=1e-12)
    S = np.array([4.0, 10.0, 30.0])  # w, wy, wy^2
    assert K.impurity(S, 3, K.SQUARED) == pytest.approx(30 / 4 - (10 / 4) ** 2)


def test_preorder_numbering_children_after_parent():
    data = _class_data(n=300)
    rows, w = _bootstrap(300, 0)
    t = G.grow_tree(data, G.TreeParams(criterion=K.GINI, mtry=3), rows.copy(), w,
                    K.root_key(0, 0))
    internal = np.flatnonzero(t.feature >= 0)
    assert np.all(t.left[internal] == internal + 1)
    assert np.all(t.right[internal] > t.left[internal])


def test_bootstrap_counts_of_slices_are_the_whole_draw():
    """A tree's bootstrap drawn in chunks equals one draw of all its indices, and the counts
    of any cut of the rows (hardwood.dask's partitions draw their own) put together are the
    whole counts."""
    n, n_boot = 10_007, 9_000
    whole = K.bootstrap_counts(3, 7, n, n_boot)
    rng = np.random.default_rng(np.random.SeedSequence([3, 7]))
    np.testing.assert_array_equal(whole, np.bincount(rng.integers(0, n, n_boot), minlength=n))
    cuts = [0, 1, 1, 2_500, 9_999, n]
    parts = [K.bootstrap_counts(3, 7, n, n_boot, a, b) for a, b in zip(cuts, cuts[1:])]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    old = K.BOOTSTRAP_CHUNK
    try:  # chunks smaller than the draw: the same generator stream
        K.BOOTSTRAP_CHUNK = 1_001
        np.testing.assert_array_equal(K.bootstrap_counts(3, 7, n, n_boot), whole)
    finally:
        K.BOOTSTRAP_CHUNK = old


def test_node_builder_grows_and_grafts_a_subtree():
    """A tree grown whole equals its top grown alone with one node's subtree grown from that
    node's rows (depth and root weight passed on) and grafted in: what hardwood.dask's
    histogram mode does with a small node."""
    X, y = make_classification(600, 6, n_informative=4, n_classes=3, random_state=2)
    ds = Dataset(X, max_bin=32, group_categories=False)
    data = G.GrowData.from_dataset(ds, y, False, 3)
    p = G.TreeParams(criterion=K.GINI, mtry=3)
    rows = np.arange(600, dtype=np.int32)
    w = np.ones(600)
    key = K.root_key(1, 0)
    whole = G.finish_tree(G.grow_nodes(data, p, rows.copy(), w, key, crossover=0), data,
                          K.GINI)
    top = G.grow_nodes(data, G.TreeParams(criterion=K.GINI, mtry=3, max_depth=1), rows.copy(),
                       w, key, crossover=0)
    assert top.n == 3
    f = top.feature[0]
    go = data.bins_col[f] <= top.sbin[0]
    if top.dl[0]:
        go |= data.bins_col[f] == data.nv[f]
    for child, side in ((1, go), (2, ~go)):
        sub = G.grow_nodes(data, p, rows[side].copy(), w, top.key[child], depth0=1,
                           w_root=600.0)
        top.graft(child, sub.trimmed())
    grafted = G.finish_tree(top, data, K.GINI)
    for name in ("feature", "sbin", "left", "right", "count"):
        np.testing.assert_array_equal(getattr(grafted, name), getattr(whole, name))
    np.testing.assert_allclose(grafted.value, whole.value, rtol=0, atol=0)
