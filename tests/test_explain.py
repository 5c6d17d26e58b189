"""TreeSHAP (``Model.predict(output='contrib' | 'interaction')``, hardwood.explain): equal to
Shapley values computed by brute force over every feature subset on tiny models, additive
(rows sum to the raw margin), and equal to XGBoost's, LightGBM's and shap's own TreeSHAP on
models imported from them."""
import copy
import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import hardwood
from hardwood.data.convert import FeatureInfo
from hardwood.explain import treeshap
from hardwood.model.tree import Tree, bitset_from_mask

warnings.filterwarnings("ignore", category=UserWarning)


# -- the naive twin: Shapley values by brute force over feature subsets ----------------------
def _goes_left(tree, node, x, n_categories):
    """The split rule, restated in Python (as predict.naive.goes_left)."""
    f = tree.feature[node]
    v = x[f]
    if np.isnan(v):
        return bool(tree.default_left[node])
    if tree.is_categorical[node]:
        c = int(v)
        if c < 0 or c >= n_categories[f]:
            return bool(tree.default_left[node])
        word = int(tree.cat_bitsets[tree.cat_offset[node] + (c >> 5)])
        return bool((word >> (c & 31)) & 1)
    return bool(v <= tree.threshold[node])


def _tree_value(tree, node, x, known, n_categories):
    """E[tree(x) | the features in ``known``]: known features follow x, the others every
    child, weighted by cover (the path-dependent value function of TreeSHAP)."""
    if tree.feature[node] < 0:
        return float(tree.value[node])
    left, right = int(tree.left[node]), int(tree.right[node])
    if tree.feature[node] in known:
        child = left if _goes_left(tree, node, x, n_categories) else right
        return _tree_value(tree, child, x, known, n_categories)
    return (tree.cover[left] * _tree_value(tree, left, x, known, n_categories)
            + tree.cover[right] * _tree_value(tree, right, x, known, n_categories)
            ) / tree.cover[node]


def brute_force(model, X, t0=0, t1=None):
    """(contributions, interactions) of the float rows ``X`` (coded as ``model.prepare``
    codes them), shaped (n, outputs, M + 1) and (n, outputs, M + 1, M + 1), from the
    definitions: Shapley values and Shapley interaction indices over all 2**M subsets."""
    t1 = model.num_trees if t1 is None else t1
    M, K = model.n_features, model.n_outputs
    n_cats = model.info.n_categories
    subsets = list(itertools.chain.from_iterable(
        itertools.combinations(range(M), r) for r in range(M + 1)))
    phi = np.zeros((X.shape[0], K, M + 1))
    inter = np.zeros((X.shape[0], K, M + 1, M + 1))
    for r, x in enumerate(X):
        v = np.zeros((K, 2 ** M))
        for s in subsets:
            mask = sum(1 << j for j in s)
            v[:, mask] = model.base_score
            for t in range(t0, t1):
                v[model.tree_group[t], mask] += _tree_value(model.trees[t], 0, x, set(s),
                                                            n_cats)
        for mask in range(2 ** M):
            size = bin(mask).count("1")
            for i in range(M):
                if mask >> i & 1:
                    continue
                w = math.factorial(size) * math.factorial(M - size - 1) / math.factorial(M)
                phi[r, :, i] += w * (v[:, mask | 1 << i] - v[:, mask])
                for j in range(M):
                    if j == i or mask >> j & 1:
                        continue
                    w2 = (math.factorial(size) * math.factorial(M - size - 2)
                          / (2 * math.factorial(M - 1)))
                    inter[r, :, i, j] += w2 * (v[:, mask | 1 << i | 1 << j] - v[:, mask | 1 << i]
                                               - v[:, mask | 1 << j] + v[:, mask])
        phi[r, :, M] = v[:, 0]
        for i in range(M):
            inter[r, :, i, i] = phi[r, :, i] - inter[r, :, i].sum(axis=1)
        inter[r, :, M, M] = v[:, 0]
    return phi, inter


# -- models ----------------------------------------------------------------------------------
def _hand_model():
    """One tree that repeats a feature on a path, has a leaf of cover 0 and a categorical
    split (codes 0 and 2 of 3 go left), and a one-leaf tree::

        0: x0 <= 0.5 (NaN left)
          1: x2 in {0, 2} (NaN right)     2: x0 <= 1.5 (NaN right)
            3: 1.0   4: x1 <= 0 (NaN left)  5: -2.0   6: 3.0 (cover 0)
                       7: 0.5   8: -1.0
    """
    feature = [0, 2, 0, -1, 1, -1, -1, -1, -1]
    left = [1, 3, 5, -1, 7, -1, -1, -1, -1]
    right = [2, 4, 6, -1, 8, -1, -1, -1, -1]
    is_cat = [False, True, False, False, False, False, False, False, False]
    words = bitset_from_mask(np.array([True, False, True]))
    tree = Tree.from_arrays(
        feature=feature, threshold=[0.5, 0, 1.5, 0, 0, 0, 0, 0, 0], left=left, right=right,
        default_left=[True, False, False, False, True, False, False, False, False],
        is_categorical=is_cat, cat_offset=[-1, 0, -1, -1, -1, -1, -1, -1, -1],
        value=[0, 0, 0, 1.0, 0, -2.0, 3.0, 0.5, -1.0], gain=np.zeros(9),
        cover=[10, 6, 4, 2, 4, 4, 0, 1, 3], count=np.zeros(9), cat_bitsets=words)
    stump = Tree.from_arrays(feature=[-1], threshold=[0], left=[-1], right=[-1],
                             default_left=[False], is_categorical=[False], cat_offset=[-1],
                             value=[0.25], gain=[0], cover=[7], count=[7])
    info = FeatureInfo(names=["a", "b", "c"], is_categorical=np.array([False, False, True]),
                       categories=[None, None, [0, 1, 2]])
    return hardwood.Model([tree, stump], [0, 0], [0.5], "reg:squarederror", 1, info)


def _hand_rows():
    return np.array([[0.0, -1.0, 0.0], [0.0, 1.0, 1.0], [0.0, np.nan, 2.0], [np.nan, 1.0, 5.0],
                     [1.0, 0.0, np.nan], [2.0, 0.0, 0.0], [np.nan, np.nan, np.nan],
                     [0.5, 0.0, -1.0]])


def _numeric_data(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[rng.random(X.shape) < 0.15] = np.nan
    z = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) * np.nan_to_num(X[:, 2])
    return X, z - np.isnan(X[:, 3]) + rng.normal(scale=0.1, size=n)


def _hardwood_model(objective, rounds=4, depth=3):
    X, z = _numeric_data()
    if objective == "binary:logistic":
        y = (z > 0).astype(float)
    elif objective == "multi:softprob":
        y = np.digitize(z, [-0.5, 0.5]).astype(float)
    else:
        y = z
    params = {"objective": objective, "max_depth": depth}
    if objective == "multi:softprob":
        params["num_class"] = 3
    return hardwood.train(params, hardwood.Dataset(X, y), num_boost_round=rounds), X


def _categorical_frame(n=300, seed=1):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "x": rng.normal(size=n),
        "color": pd.Categorical(rng.choice(["red", "green", "blue", "grey"], n)),
        "y": rng.normal(size=n),
    })
    df.loc[::9, "color"] = np.nan
    df.loc[::13, "x"] = np.nan
    c = df["color"].astype(str)
    target = (c.isin(["red", "blue"]).astype(float) * 2 + np.nan_to_num(df["x"].to_numpy())
              + df["y"] * (c == "green"))
    return df, target.to_numpy()


def _categorical_model():
    df, y = _categorical_frame()
    m = hardwood.train({"objective": "reg:squarederror", "max_depth": 3,
                        "max_cat_to_onehot": 1}, hardwood.Dataset(df, y), num_boost_round=3)
    assert any(t.is_categorical.any() for t in m.trees), "no categorical split"
    return m, df


@pytest.fixture(params=["table", "extend"])
def leaf_rule(request, monkeypatch):
    """Run a test with each leaf's Shapley values from its table, then by EXTEND/UNWIND."""
    if request.param == "extend":
        monkeypatch.setattr(treeshap, "MAX_TABLE_SIZE", 0)
    return request.param


def _explain(model, X, output, iteration_range=None):
    """``model.predict(X, output)``, its paths and tables built afresh (under the leaf rule)."""
    model = copy.copy(model)  # a copy holds no cache (Model.__getstate__)
    return model.predict(X, output=output, iteration_range=iteration_range)


# -- brute force -----------------------------------------------------------------------------
def test_the_hand_model_is_what_its_picture_says():
    m = _hand_model()
    leaves = m.predict(_hand_rows(), output="leaf")[:, 0]
    np.testing.assert_array_equal(leaves, [3, 8, 3, 8, 5, 6, 7, 7])


def test_codes_out_of_range_follow_the_default_as_in_predict(leaf_rule):
    """Codes at or beyond the category count, or negative, never come out of ``prepare``
    (unseen values become NaN), but the kernel follows the walk's rule for them too."""
    m = copy.copy(_hand_model())
    rows = np.array([[0.0, 1.0, 5.0], [0.5, 0.0, -1.0], [0.0, 1.0, 3.0]])
    phi, inter = brute_force(m, rows)
    data = m.shap_data()
    np.testing.assert_allclose(treeshap.contributions(data, rows, 0, 2, m.base_score, 1),
                               phi[:, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(treeshap.interactions(data, rows, 0, 2, m.base_score, 1),
                               inter[:, 0], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("make", ["hand", "numeric", "categorical"])
def test_equal_to_brute_force(make, leaf_rule):
    if make == "hand":
        m, X = _hand_model(), _hand_rows()
    elif make == "numeric":
        m, X = _hardwood_model("reg:squarederror", rounds=3)
        X = X[:25]
    else:
        m, df = _categorical_model()
        X = df.iloc[:25]
    phi, inter = brute_force(m, m.prepare(X))
    np.testing.assert_allclose(_explain(m, X, "contrib"), phi[:, 0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_explain(m, X, "interaction"), inter[:, 0], rtol=1e-9,
                               atol=1e-12)


def test_equal_to_brute_force_multiclass_over_an_iteration_range(leaf_rule):
    m, X = _hardwood_model("multi:softprob", rounds=4)
    X = X[:15]
    phi, inter = brute_force(m, m.prepare(X), 3, 9)  # rounds 1 and 2, three trees each
    got = _explain(m, X, "contrib", iteration_range=(1, 3))
    assert got.shape == (15, 3, 5)
    np.testing.assert_allclose(got, phi, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_explain(m, X, "interaction", iteration_range=(1, 3)), inter,
                               rtol=1e-9, atol=1e-12)


# -- additivity ------------------------------------------------------------------------------
def _assert_additive(m, X, **kw):
    raw = m.predict(X, output="raw", **kw)
    contrib = m.predict(X, output="contrib", **kw)
    assert contrib.shape == raw.shape + (m.n_features + 1,)
    np.testing.assert_allclose(contrib.sum(axis=-1), raw, rtol=1e-6, atol=1e-9)
    inter = m.predict(X, output="interaction", **kw)
    assert inter.shape == contrib.shape + (m.n_features + 1,)
    np.testing.assert_allclose(inter.sum(axis=-1), contrib, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(inter, np.swapaxes(inter, -1, -2), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic",
                                       "multi:softprob"])
def test_rows_sum_to_the_raw_margin(objective, leaf_rule):
    m, X = _hardwood_model(objective, rounds=6, depth=4)
    m = copy.copy(m)  # paths and tables built under the leaf rule
    _assert_additive(m, X[:100])
    _assert_additive(m, X[:100], iteration_range=(2, 5))


def test_best_iteration_is_respected():
    m, X = _hardwood_model("reg:squarederror", rounds=6)
    m.best_iteration = 2
    np.testing.assert_allclose(m.predict(X, output="contrib").sum(axis=1),
                               m.predict(X, output="raw"), rtol=1e-6)
    m.best_iteration = None
    full = m.predict(X, output="contrib")
    np.testing.assert_allclose(full.sum(axis=1), m.predict(X, output="raw"), rtol=1e-6)


@pytest.mark.parametrize("estimator", ["RandomForestRegressor", "RandomForestClassifier"])
def test_forests_keep_cover_and_are_additive(estimator):
    X, z = _numeric_data(200)
    y = z if estimator.endswith("Regressor") else (z > 0).astype(int)
    est = getattr(hardwood, estimator)(n_estimators=5, max_depth=5, random_state=0).fit(X, y)
    _assert_additive(est.model_, X[:50])


# -- the peers' own TreeSHAP -----------------------------------------------------------------
xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic",
                                       "multi:softprob"])
def test_equal_to_xgboost(objective):
    X, z = _numeric_data(400, 5)
    params = {"objective": objective, "max_depth": 4, "nthread": 1, "base_score": 0.3}
    if objective == "binary:logistic":
        y = (z > 0).astype(float)
    elif objective == "multi:softprob":
        y, params["num_class"] = np.digitize(z, [-0.5, 0.5]).astype(float), 3
        del params["base_score"]
    else:
        y = z
    bst = xgb.train(params, xgb.DMatrix(X, y), 8)
    m = hardwood.import_model(bst)
    d = xgb.DMatrix(X[:60])
    ref = bst.predict(d, pred_contribs=True)
    got = m.predict(X[:60], output="contrib")
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5)
    ref = bst.predict(d, pred_interactions=True)
    got = m.predict(X[:60], output="interaction")
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5)


def test_equal_to_xgboost_with_a_categorical_feature():
    df, y = _categorical_frame(400)
    bst = xgb.train({"max_depth": 3, "tree_method": "hist", "max_cat_to_onehot": 1,
                     "nthread": 1}, xgb.DMatrix(df, y, enable_categorical=True), 8)
    m = hardwood.import_model(bst)
    assert any(t.is_categorical.any() for t in m.trees)
    d = xgb.DMatrix(df.iloc[:60], enable_categorical=True)
    np.testing.assert_allclose(m.predict(df.iloc[:60], output="contrib"),
                               bst.predict(d, pred_contribs=True), rtol=0, atol=1e-5)
    np.testing.assert_allclose(m.predict(df.iloc[:60], output="interaction"),
                               bst.predict(d, pred_interactions=True), rtol=0, atol=1e-5)


@pytest.mark.parametrize("params", [{"objective": "binary"},
                                    {"objective": "regression", "zero_as_missing": True},
                                    {"objective": "multiclass", "num_class": 3}],
                         ids=["binary", "zero_as_missing", "multiclass"])
def test_equal_to_lightgbm(params):
    X, z = _numeric_data(400, 5)
    X[::7, 1] = 0.0
    if params["objective"] == "binary":
        y = (z > 0).astype(float)
    elif params["objective"] == "multiclass":
        y = np.digitize(z, [-0.5, 0.5]).astype(float)
    else:
        y = z
    bst = lgb.train({**params, "num_leaves": 8, "min_data_in_leaf": 5, "verbose": -1,
                     "num_threads": 1}, lgb.Dataset(X, y), 8)
    m = hardwood.import_model(bst)
    ref = bst.predict(X[:60], pred_contrib=True)
    got = m.predict(X[:60], output="contrib")
    if m.n_outputs > 1:  # LightGBM puts the classes side by side
        ref = ref.reshape(60, m.n_outputs, -1)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5)


def test_equal_to_shap_on_a_scikit_learn_forest():
    shap = pytest.importorskip("shap")
    from sklearn.ensemble import RandomForestRegressor
    X, y = _numeric_data(300, 4)
    X = np.nan_to_num(X)  # scikit-learn's forests take NaN, shap's tree walk does not
    rf = RandomForestRegressor(n_estimators=5, max_depth=6, random_state=0).fit(X, y)
    m = hardwood.import_model(rf)
    explainer = shap.TreeExplainer(rf)
    ref = explainer.shap_values(X[:50])
    got = m.predict(X[:50], output="contrib")
    np.testing.assert_allclose(got[:, :-1], ref, rtol=0, atol=1e-5)
    np.testing.assert_allclose(got[:, -1], np.ravel(explainer.expected_value)[0], atol=1e-5)


# -- bad input -------------------------------------------------------------------------------
def test_a_feature_count_mismatch_is_a_clear_error():
    m, X = _hardwood_model("reg:squarederror", rounds=2)
    with pytest.raises(ValueError, match="4"):
        m.predict(X[:, :3], output="contrib")
    with pytest.raises(ValueError, match="4"):
        m.predict(np.hstack([X, X]), output="interaction")


@pytest.mark.parametrize("bad", [0.0, np.nan, -1.0])
def test_a_model_without_cover_names_the_reason(bad):
    m, X = _hardwood_model("reg:squarederror", rounds=2)
    trees = [copy.deepcopy(t) for t in m.trees]
    trees[1].cover[0] = bad
    broken = hardwood.Model(trees, m.tree_group, m.base_score, m.objective, m.n_outputs,
                            m.info)
    with pytest.raises(ValueError, match=r"cover.*node 0 of tree 1"):
        broken.predict(X, output="contrib")
    with pytest.raises(ValueError, match="cover"):
        broken.predict(X, output="interaction")
    np.testing.assert_allclose(broken.predict(X, output="raw"), m.predict(X, output="raw"))


def test_an_unknown_output_is_still_refused():
    m, X = _hardwood_model("reg:squarederror", rounds=1)
    with pytest.raises(ValueError, match="contrib"):
        m.predict(X, output="shap")
