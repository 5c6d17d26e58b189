"""hardwood.Booster (one round per update) and continued training (init_model), issue 21:
training 50 rounds, saving, then continuing 50 gives the model that 100 rounds give, bit for
bit; callbacks see snapshots."""
import numpy as np
import pandas as pd
import pytest

import hardwood


def _data(objective, seed=0, n=2000):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.1] = np.nan
    z = np.nan_to_num(X[:, 0]) - 0.5 * np.nan_to_num(X[:, 1]) + rng.normal(scale=0.5, size=n)
    if objective == "binary:logistic":
        y = (z > 0).astype(float)
    elif objective == "multi:softprob":
        y = np.digitize(z, [-0.7, 0.7]).astype(float)
    else:
        y = z
    return X, y


def _same_trees(a, b):
    assert len(a.trees) == len(b.trees)
    np.testing.assert_array_equal(a.tree_group, b.tree_group)
    for s, t in zip(a.trees, b.trees):
        for name in ("feature", "threshold", "left", "right", "default_left", "value", "cover",
                     "is_categorical", "cat_bitsets"):
            np.testing.assert_array_equal(getattr(s, name), getattr(t, name), err_msg=name)


CASES = [
    ("reg:squarederror", {}),
    ("binary:logistic", {"subsample": 0.7, "colsample_bytree": 0.6, "colsample_bynode": 0.7}),
    ("multi:softprob", {"num_class": 3, "colsample_bynode": 0.5}),
    ("reg:absoluteerror", {"subsample": 0.8}),  # leaves refit from residuals
    ("binary:logistic", {"grow_policy": "lossguide", "max_leaves": 12}),
    ("reg:squarederror", {"grow_policy": "lossguide", "max_depth": 0}),  # unbounded: Python grower
]


@pytest.mark.parametrize("objective, extra", CASES)
def test_continued_training_equals_one_long_run(objective, extra, tmp_path):
    X, y = _data(objective)
    ds = hardwood.Dataset(X, y)
    p = {"objective": objective, "max_depth": 4, "learning_rate": 0.3, **extra}
    whole = hardwood.train(p, ds, num_boost_round=12)
    first = hardwood.train(p, ds, num_boost_round=6)
    first.save(tmp_path / "m.json")
    for init in (tmp_path / "m.json", str(tmp_path / "m.json"), first):
        cont = hardwood.train(p, ds, num_boost_round=6, init_model=init)
        _same_trees(cont, whole)
        np.testing.assert_array_equal(cont.predict(X), whole.predict(X))
    # in three steps, through the Booster itself
    bst = hardwood.Booster(p, ds, init_model=hardwood.train(p, ds, num_boost_round=4))
    for _ in range(8):
        bst.update()
    _same_trees(bst.model(), whole)


def test_continued_training_with_categories_and_validation(tmp_path):
    rng = np.random.default_rng(1)
    n = 1500
    df = pd.DataFrame({"x": rng.normal(size=n),
                       "c": pd.Categorical(rng.choice([f"k{i}" for i in range(12)], n))})
    y = df.c.cat.codes.to_numpy() % 3 + df.x.to_numpy() + rng.normal(scale=0.3, size=n)
    ds = hardwood.Dataset(df.iloc[:1000], y[:1000])
    dv = hardwood.Dataset(df.iloc[1000:], y[1000:], reference=ds)
    p = {"max_depth": 3, "max_cat_to_onehot": 2}
    whole = hardwood.train(p, ds, 10, valid_sets=[dv], valid_names=["v"])
    first = hardwood.train(p, ds, 4, valid_sets=[dv], valid_names=["v"])
    cont = hardwood.train(p, ds, 6, valid_sets=[dv], valid_names=["v"], init_model=first)
    _same_trees(cont, whole)
    # the validation margins continue from the init model: the same scores as the long run
    np.testing.assert_array_equal(cont.evals_result["v"]["rmse"],
                                  whole.evals_result["v"]["rmse"][4:])


def test_early_stopping_counts_rounds_of_the_whole_model():
    X, y = _data("binary:logistic", seed=2)
    ds, dv = hardwood.Dataset(X[:1500], y[:1500]), None
    dv = hardwood.Dataset(X[1500:], y[1500:], reference=ds)
    p = {"objective": "binary:logistic", "max_depth": 3, "learning_rate": 0.5}
    whole = hardwood.train(p, ds, 60, valid_sets=[dv], early_stopping_rounds=5)
    first = hardwood.train(p, ds, 3)
    cont = hardwood.train(p, ds, 57, valid_sets=[dv], early_stopping_rounds=5, init_model=first)
    assert cont.best_iteration == whole.best_iteration
    np.testing.assert_array_equal(cont.predict(X), whole.predict(X))


def test_booster_update_eval_and_snapshots():
    X, y = _data("reg:squarederror", seed=3)
    ds = hardwood.Dataset(X, y)
    bst = hardwood.Booster({"max_depth": 3}, ds, valid_sets=[ds], valid_names=["train"])
    assert bst.rounds == 0 and bst.model().num_trees == 0
    scores = []
    for _ in range(5):
        bst.update()
        scores.append(bst.eval()["train"]["rmse"])
    assert bst.rounds == 5 and scores == sorted(scores, reverse=True)
    snap = bst.model()
    before = snap.predict(X)
    bst.update()
    assert snap.num_trees == 5 and bst.model().num_trees == 6
    np.testing.assert_array_equal(snap.predict(X), before)
    ref = hardwood.train({"max_depth": 3}, ds, 6)
    _same_trees(bst.model(), ref)


def test_callbacks_see_snapshots_that_later_rounds_never_change():
    X, y = _data("reg:squarederror", seed=4)
    kept = {}

    def keep(model, it, log):
        kept[it] = (model, model.predict(X[:100], runtime="auto"))
        model.trees.clear()  # a callback that damages its snapshot does not damage training
        return False

    m = hardwood.train({"max_depth": 3}, hardwood.Dataset(X, y), 6, callbacks=[keep])
    assert m.num_trees == 6
    ref = hardwood.train({"max_depth": 3}, hardwood.Dataset(X, y), 6)
    _same_trees(m, ref)
    for it, (snap, p) in kept.items():
        np.testing.assert_allclose(p, ref.predict(X[:100], iteration_range=(0, it + 1)),
                                   rtol=1e-12)


def test_init_model_mismatches_are_refused():
    X, y = _data("reg:squarederror", seed=5)
    ds = hardwood.Dataset(X, y)
    m = hardwood.train({"max_depth": 3}, ds, 3)
    with pytest.raises(ValueError, match="objective"):
        hardwood.train({"objective": "reg:absoluteerror"}, ds, 2, init_model=m)
    with pytest.raises(ValueError, match="features"):
        hardwood.train({}, hardwood.Dataset(X[:, :4], y), 2, init_model=m)
    # a model whose splits fall inside the bins of another Dataset
    other = hardwood.Dataset(X[:200] * 1.37, y[:200])
    with pytest.raises(ValueError, match="inside a bin"):
        hardwood.train({}, other, 2, init_model=m)
    with pytest.raises(TypeError, match="init_model"):
        hardwood.train({}, ds, 2, init_model=42)


def test_init_model_keeps_its_base_score_and_refuses_another():
    """Continued training starts from the init model's base score: a different base_score
    is refused (XGBoost takes the new one, and the old trees then predict other values than
    they were fit to; hardwood ignored it silently), the same one is accepted."""
    X, y = _data("binary:logistic", seed=6)
    ds = hardwood.Dataset(X, y)
    p = {"objective": "binary:logistic", "max_depth": 3, "base_score": 0.3}
    m = hardwood.train(p, ds, 3)
    with pytest.raises(ValueError, match=r"base_score=0\.9 differs from init_model"):
        hardwood.train(dict(p, base_score=0.9), ds, 2, init_model=m)
    again = hardwood.train(p, ds, 2, init_model=m)  # the same parameters: accepted
    assert again.num_trees == 5
    np.testing.assert_allclose(again.base_score, m.base_score)
    plain = hardwood.train({k: v for k, v in p.items() if k != "base_score"}, ds, 2,
                           init_model=m)
    _same_trees(plain, again)
