"""Inputs and parameters tried as a new user would (session 22): each test names what
hardwood did before."""
import numpy as np
import pytest

import hardwood as hw
from hardwood.predict import naive


def _classes(seed=0, n=600, k=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5]) if k == 3
         else (X[:, 0] > 0).astype(int))
    return X, y


def test_continuing_under_the_other_librarys_name_of_a_loss_is_refused():
    """Continuing multi:softprob's trees with LightGBM's 'multiclass' (another hessian), or
    the reverse, mixed two losses: 0.19 off either library's model, without a word. Names
    of one loss still continue each other, and so do 'binary' and 'binary:logistic' (they
    differ in the base score only, which the continued model keeps)."""
    X, y = _classes()
    data = hw.Dataset(X, y)
    for first, then in (("multi:softprob", "multiclass"), ("multiclass", "multi:softprob"),
                        ("softmax", "multi:softmax")):
        m = hw.train({"objective": first, "num_class": 3, "max_depth": 2}, data, 2)
        with pytest.raises(ValueError, match="define that loss differently"):
            hw.train({"objective": then, "num_class": 3, "max_depth": 2}, data, 2,
                     init_model=m)
    m = hw.train({"objective": "multiclass", "num_class": 3, "max_depth": 2}, data, 2)
    more = hw.train({"objective": "softmax", "num_class": 3, "max_depth": 2}, data, 2,
                    init_model=m)
    whole = hw.train({"objective": "multiclass", "num_class": 3, "max_depth": 2}, data, 4)
    np.testing.assert_array_equal(more.predict(X), whole.predict(X))
    Xb, yb = _classes(k=2)
    both = hw.Dataset(Xb, yb)
    m = hw.train({"objective": "binary", "max_depth": 2}, both, 2)
    hw.train({"objective": "binary:logistic", "max_depth": 2}, both, 2, init_model=m)
    m = hw.train({"objective": "reg:absoluteerror", "max_depth": 2}, both, 2)
    with pytest.raises(ValueError, match="define that loss differently"):
        hw.train({"objective": "l1", "max_depth": 2}, both, 2, init_model=m)


def test_continuing_a_saved_model_reads_its_objectives_name(tmp_path):
    """The check reads the name the model was trained under from its saved params."""
    X, y = _classes()
    data = hw.Dataset(X, y)
    path = tmp_path / "m.json"
    hw.train({"objective": "multiclass", "num_class": 3, "max_depth": 2}, data, 2).save(path)
    with pytest.raises(ValueError, match="'multiclass'.*'multi:softprob'"):
        hw.train({"objective": "multi:softprob", "num_class": 3}, data, 2,
                 init_model=str(path))


def test_num_leaves_zero_is_refused():
    """LightGBM's num_leaves=0 trained trees without any limit (346 nodes in a round on
    3,000 rows): max_leaves=0 with the depth limit LightGBM's name lifts. LightGBM refuses
    it."""
    X, y = _classes(k=2)
    with pytest.raises(ValueError, match="num_leaves must be >= 2"):
        hw.train({"objective": "binary", "num_leaves": 0}, hw.Dataset(X, y), 1)
    hw.train({"objective": "binary", "max_leaves": 0, "max_depth": 3}, hw.Dataset(X, y), 1)


def test_estimator_fits_a_dataset_of_its_own_max_bin():
    """``fit(hw.Dataset(X, y, max_bin=64))`` failed with "build the Dataset with
    max_bin=256", the estimator's default, though the module says a Dataset's bins are its
    own. It trains on them: the model of ``max_bin=64``."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(800, 3))
    y = X[:, 0] + np.sin(3 * X[:, 1])
    est = hw.GBDTRegressor(n_estimators=5, max_depth=3).fit(hw.Dataset(X, y, max_bin=64))
    ref = hw.GBDTRegressor(n_estimators=5, max_depth=3, max_bin=64).fit(X, y)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))


def test_categorical_continuation_error_names_reference():
    """Rows lacking a category of the model's training could not continue it, and the error
    did not say that ``reference=`` builds them with the training data's categories."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    c = pd.Categorical(rng.integers(0, 5, 500), categories=range(5))
    df = pd.DataFrame({"c": c, "x": rng.normal(size=500)})
    y = df["c"].cat.codes.to_numpy() % 2 + df["x"].to_numpy()
    full = hw.Dataset(df, y)
    m = hw.train({"max_depth": 3}, full, 2)
    part = df["c"].cat.codes.to_numpy() < 4
    with pytest.raises(ValueError, match="reference="):
        hw.train({"max_depth": 3}, hw.Dataset(df[part], y[part]), 2, init_model=m)
    more = hw.train({"max_depth": 3}, hw.Dataset(df[part], y[part], reference=full), 2,
                    init_model=m)
    assert more.num_trees == 4


def _forest(seed, n_trees=60, n_features=6, K=1, cat=False):
    """A trained model and its rows coded for the walk: K outputs (multiclass) or a
    categorical feature (one output), with NaN in the numeric features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3000, n_features))
    X[rng.random(X.shape) < 0.05] = np.nan
    if cat:
        X[:, 0] = rng.integers(0, 12, 3000)
        pd = pytest.importorskip("pandas")
        df = pd.DataFrame(X, columns=[f"f{j}" for j in range(n_features)])
        df["f0"] = pd.Categorical(X[:, 0].astype(int))
        data = hw.Dataset(df, rng.normal(size=3000) + (X[:, 0] % 3))
    else:
        y = rng.integers(0, K, 3000) if K > 1 else np.nan_to_num(X[:, 0]) + rng.normal(size=3000)
        data = hw.Dataset(X, y)
    params = {"max_depth": 5, "objective": "multi:softprob" if K > 1 else "reg:squarederror"}
    if K > 1:
        params["num_class"] = K
    m = hw.train(params, data, n_trees // K)
    return m, m.prepare(df if cat else X)


@pytest.mark.parametrize("K,cat", [(1, False), (3, False), (1, True)])
def test_blocked_reference_walk_equals_the_row_by_row_walk(K, cat):
    """The parallel reference walk takes blocks of rows through each tree in turn (it took
    each row through every tree, 2.3-3.8x slower than XGBoost's predict on 1,000-100,000
    rows): the margins and leaf ids equal the one-row-at-a-time walk's bit for bit, on row
    counts that leave a partial block."""
    m, mat = _forest(K * 10 + cat, K=K, cat=cat)
    f = m.packed()
    args = (f.feature, f.threshold, f.left, f.right, f.default_left, f.is_categorical,
            f.cat_offset)
    for n in (naive.BLOCK_ROWS - 1, naive.BLOCK_ROWS * 7 + 5, mat.shape[0]):
        x = np.ascontiguousarray(mat[:n])
        for t0, t1 in ((0, m.num_trees), (K, m.num_trees - K)):
            outs = [np.zeros((n, m.n_outputs)) for _ in range(2)]
            for run, out in zip((naive.predict_raw_kernel, naive.predict_raw_serial), outs):
                run(x, t0, t1, *args, f.value, f.bitsets, f.roots, f.tree_group,
                    f.n_categories, out)
            np.testing.assert_array_equal(outs[0], outs[1])
            leaves = [np.zeros((n, t1 - t0), np.int32) for _ in range(2)]
            for run, out in zip((naive.predict_leaf_kernel, naive.predict_leaf_serial), leaves):
                run(x, t0, t1, *args, f.bitsets, f.roots, f.n_categories, out)
            np.testing.assert_array_equal(leaves[0], leaves[1])
    assert m.predict(mat[:5], output="raw").shape[0] == 5  # the serial route of predict


def test_model_predict_keeps_a_bounded_number_of_layouts():
    """``Model.predict(runtime=...)`` kept a compiled layout per tree range for the model's
    life: a loop over ``iteration_range`` (staged predictions) kept them all. It keeps the
    last ``COMPILED_KEPT``, and each still predicts as the reference walk."""
    from hardwood.model.model import COMPILED_KEPT
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 3))
    m = hw.train({"max_depth": 2}, hw.Dataset(X, X[:, 0]), COMPILED_KEPT + 6)
    for i in range(1, m.num_trees + 1):
        np.testing.assert_allclose(m.predict(X, iteration_range=(0, i), runtime="auto"),
                                   m.predict(X, iteration_range=(0, i), runtime="naive"),
                                   rtol=1e-12)
    assert len(m._compiled.layouts) == COMPILED_KEPT
    assert ("auto", (0, m.num_trees)) in m._compiled.layouts


def test_model_predict_lays_out_the_model_for_big_batches(monkeypatch):
    """``Model.predict``'s default took every batch through the reference walk, 2-3x slower
    than XGBoost's predict on 1,000-100,000 rows of a 100-500-tree model (the ``auto``
    runtime: 4-7x faster than XGBoost). Once the rows × trees walked in a tree range reach
    ``AUTO_MIN_WORK``, over one call or several, it lays the model out for ``auto`` and
    predicts every batch of that range there; before, the reference walk. Outputs equal the
    reference walk's to float rounding."""
    from hardwood.model import model as model_module
    rng = np.random.default_rng(6)
    X = rng.normal(size=(400, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + X[:, 1] > 0).astype(int)
    m = hw.train({"objective": "binary:logistic", "max_depth": 3}, hw.Dataset(X, y), 10)
    monkeypatch.setattr(model_module, "AUTO_MIN_WORK", 3000)
    ref = {out: m.predict(X, output=out, runtime="naive") for out in ("value", "raw", "leaf")}
    np.testing.assert_array_equal(m.predict(X[:99]), ref["value"][:99])
    assert ("auto", (0, 10)) not in m._compiled.layouts  # 990 rows x trees: the walk
    for out in ("value", "raw", "leaf"):
        np.testing.assert_allclose(m.predict(X, output=out), ref[out], rtol=1e-12)
    assert ("auto", (0, 10)) in m._compiled.layouts
    np.testing.assert_allclose(m.predict(X[:1]), ref["value"][:1], rtol=1e-12)  # laid out
    first = m.predict(X, iteration_range=(0, 5))  # another range: its own count
    assert ("auto", (0, 5)) not in m._compiled.layouts  # 2,000: the walk
    m.predict(X[:250], iteration_range=(0, 5))  # 3,250 in all: laid out
    assert ("auto", (0, 5)) in m._compiled.layouts
    np.testing.assert_allclose(first, m.predict(X, iteration_range=(0, 5), runtime="naive"),
                               rtol=1e-12)
