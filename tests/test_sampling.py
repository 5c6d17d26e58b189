"""Row sampling per round (train/sampling.py): uniform, GOSS and MVS, on in-core data sets."""
import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score

import hardwood
from hardwood.train import sampling
from hardwood.train.params import resolve_params


@pytest.mark.parametrize("f", [0.05, 0.1, 0.3, 0.7])
def test_mvs_threshold_gives_the_asked_expected_count(f):
    rng = np.random.default_rng(1)
    score = np.abs(rng.standard_cauchy(20_000))  # heavy tails: many rows capped at p = 1
    k = f * score.size
    mu = sampling.mvs_threshold(score, k)
    p = np.minimum(1.0, score / mu)
    assert p.sum() == pytest.approx(k, rel=1e-9)
    assert np.all((score > mu) == (p == 1.0))


def _gradients(n=5000, K=1, seed=0):
    rng = np.random.default_rng(seed)
    g = (rng.standard_t(3, size=(K, n))).astype(np.float32)
    h = rng.uniform(0.05, 1.0, size=(K, n)).astype(np.float32)
    return g, h


@pytest.mark.parametrize("method", ["mvs", "goss"])
@pytest.mark.parametrize("K", [1, 3])
def test_weighted_sample_sums_are_unbiased(method, K):
    """The weighted sums of a round's sample estimate the sums over every row."""
    g, h = _gradients(K=K)
    full_g, full_h = g.sum(axis=1), h.sum(axis=1)
    est_g, est_h, counts = [], [], []
    for r in range(300):
        rows, w = sampling.draw(method, g, h, np.random.default_rng(r), 0.3, 0.2, 0.1,
                                round_=100, learning_rate=0.1)
        assert np.all(np.diff(rows) > 0)
        est_g.append((g[:, rows] * w).sum(axis=1))
        est_h.append((h[:, rows] * w).sum(axis=1))
        counts.append(rows.size)
    se_g = np.std(est_g, axis=0) / np.sqrt(len(est_g))
    se_h = np.std(est_h, axis=0) / np.sqrt(len(est_h))
    assert np.all(np.abs(np.mean(est_g, axis=0) - full_g) < 5 * se_g + 1e-6)
    assert np.all(np.abs(np.mean(est_h, axis=0) - full_h) < 5 * se_h + 1e-6)
    assert np.mean(counts) == pytest.approx(0.3 * g.shape[1], rel=0.03)


def test_goss_keeps_the_largest_gradients_and_weights_the_rest():
    g, h = _gradients(n=4000)
    rows, w = sampling.draw("goss", g, h, np.random.default_rng(0), 1.0, 0.2, 0.1, round_=50,
                            learning_rate=0.1)
    score = np.abs(g[0].astype(np.float64) * h[0])
    top = np.argsort(-score)[:800]
    assert np.isin(top, rows).all()
    top_w = w[np.isin(rows, top)]
    assert np.all(top_w == 1.0)
    assert np.allclose(w[~np.isin(rows, top)], (1 - 0.2) / 0.1)
    # as LightGBM, the first 1 / learning_rate rounds take every row
    assert sampling.draw("goss", g, h, np.random.default_rng(0), 1.0, 0.2, 0.1, round_=9,
                         learning_rate=0.1) == (None, None)


def test_uniform_and_mvs_at_rate_one_sample_nothing():
    g, h = _gradients()
    for m in ("uniform", "mvs"):
        assert sampling.draw(m, g, h, np.random.default_rng(0), 1.0) == (None, None)


@pytest.mark.parametrize("params,method,rates", [
    ({"sampling_method": "gradient_based", "subsample": 0.2}, "mvs", (None, None)),
    ({"data_sample_strategy": "goss"}, "goss", (0.2, 0.1)),
    ({"data_sample_strategy": "bagging", "subsample": 0.5}, "uniform", (None, None)),
    ({"sampling_method": "goss", "subsample": 0.3}, "goss", (0.2, 0.1)),
    ({"sampling_method": "GOSS", "top_rate": 0.3, "other_rate": 0.2}, "goss", (0.3, 0.2)),
])
def test_sampling_parameter_names(params, method, rates):
    p = resolve_params(params)
    assert p["sampling_method"] == method
    assert (p["top_rate"], p["other_rate"]) == pytest.approx(rates) if rates[0] else \
        (p["top_rate"], p["other_rate"]) == rates


@pytest.mark.parametrize("params,match", [
    ({"sampling_method": "stratified"}, "sampling_method must be one of"),
    ({"sampling_method": 3}, "must be a string"),
    ({"sampling_method": "mvs", "top_rate": 0.2}, "apply to sampling_method='goss'"),
    ({"sampling_method": "goss", "subsample": 0.5, "top_rate": 0.2}, "either subsample"),
    ({"sampling_method": "goss", "top_rate": 0.7, "other_rate": 0.5}, "top_rate \\+ other_rate"),
    ({"sampling_method": "goss", "other_rate": 0.0}, "other_rate"),
])
def test_bad_sampling_parameters_are_refused(params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        resolve_params(params)


def _split(seed=0, n=24_000):
    X, y = make_classification(n, 20, n_informative=10, flip_y=0.05, class_sep=0.6,
                               random_state=seed)
    X = X.astype(np.float32)
    k = n * 3 // 4
    return hardwood.Dataset(X[:k], y[:k]), X[k:], y[k:]


def _auc(params, ds, Xte, yte, rounds=120):
    p = {"objective": "binary:logistic", "learning_rate": 0.1, "max_depth": 5, **params}
    m = hardwood.train(p, ds, num_boost_round=rounds)
    return roc_auc_score(yte, m.predict(Xte)), m


def test_mvs_keeps_accuracy_where_uniform_loses_it():
    ds, Xte, yte = _split()
    full, _ = _auc({}, ds, Xte, yte)
    mvs, _ = _auc({"sampling_method": "mvs", "subsample": 0.1}, ds, Xte, yte)
    uni, _ = _auc({"sampling_method": "uniform", "subsample": 0.1}, ds, Xte, yte)
    goss, _ = _auc({"sampling_method": "goss", "subsample": 0.3}, ds, Xte, yte)
    assert mvs > uni
    assert mvs > full - 0.01
    assert goss > full - 0.01


@pytest.mark.parametrize("method", ["mvs", "goss"])
def test_sampled_training_continues_bit_for_bit(method, tmp_path):
    """Each round's draw comes from (seed, round), so 3 + 3 rounds through init_model equal
    6 rounds."""
    ds, Xte, _ = _split(1, n=6000)
    p = {"objective": "binary:logistic", "sampling_method": method, "subsample": 0.3,
         "learning_rate": 0.5, "max_depth": 4}
    whole = hardwood.train(p, ds, num_boost_round=6)
    first = hardwood.train(p, ds, num_boost_round=3)
    path = tmp_path / "m.json"
    first.save(str(path))
    more = hardwood.train(p, ds, num_boost_round=3, init_model=str(path))
    np.testing.assert_array_equal(whole.predict(Xte), more.predict(Xte))


def test_estimators_take_the_sampling_parameters():
    ds, Xte, yte = _split(2, n=4000)
    X = np.vstack([Xte, Xte])
    y = np.concatenate([yte, yte])
    clf = hardwood.GBDTClassifier(n_estimators=20, sampling_method="goss", top_rate=0.3,
                                  other_rate=0.2, learning_rate=0.2).fit(X, y)
    assert clf.predict_proba(Xte).shape == (len(yte), 2)
    assert clf.get_params()["sampling_method"] == "goss"


def test_sampled_refit_objectives_train():
    """reg:absoluteerror refits leaves to the weighted median of the sample's residuals."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(5000, 6))
    y = X[:, 0] * 3 + rng.standard_t(2, size=5000)
    ds = hardwood.Dataset(X, y)
    base = {"objective": "reg:absoluteerror", "learning_rate": 0.3, "max_depth": 4}
    full = hardwood.train(base, ds, num_boost_round=30)
    mvs = hardwood.train({**base, "sampling_method": "mvs", "subsample": 0.3}, ds,
                         num_boost_round=30)
    mae = [np.mean(np.abs(m.predict(X) - y)) for m in (full, mvs)]
    assert mae[1] < 1.1 * mae[0]


def test_lightgbm_bagging_follows_bagging_freq():
    """LightGBM bags only when bagging_freq > 0: bagging_fraction alone, or bagging_freq=0,
    draws no sample (it bagged every round before, a model LightGBM would not train);
    bagging_freq=1 is subsample; more than 1 is refused, not ignored."""
    assert resolve_params({"bagging_fraction": 0.5, "bagging_freq": 1})["subsample"] == 0.5
    assert resolve_params({"bagging_fraction": 0.5, "bagging_freq": 0})["subsample"] == 1.0
    assert resolve_params({"subsample": 0.5, "bagging_freq": 0})["subsample"] == 1.0
    assert resolve_params({"subsample": 0.5})["subsample"] == 0.5  # XGBoost's name: as ever
    with pytest.warns(UserWarning, match="bagging_fraction without bagging_freq"):
        assert resolve_params({"bagging_fraction": 0.5})["subsample"] == 1.0
    for bad, match in (({"bagging_freq": 3, "bagging_fraction": 0.5}, "not supported"),
                       ({"bagging_freq": -1}, "integer >= 0"), ({"bagging_freq": 1.5}, "integer")):
        with pytest.raises(ValueError, match=match):
            resolve_params(bad)
    # the trained models: bagging_fraction alone equals no sampling, bagging_freq=1 subsamples
    X, y = make_classification(2000, 8, random_state=0)
    ds = hardwood.Dataset(X, y)
    base = {"objective": "binary:logistic", "max_depth": 3}
    full = hardwood.train(base, ds, 5).predict(X)
    with pytest.warns(UserWarning):
        alone = hardwood.train({**base, "bagging_fraction": 0.5}, ds, 5).predict(X)
    bagged = hardwood.train({**base, "bagging_fraction": 0.5, "bagging_freq": 1}, ds, 5)
    np.testing.assert_array_equal(alone, full)
    np.testing.assert_array_equal(
        bagged.predict(X), hardwood.train({**base, "subsample": 0.5}, ds, 5).predict(X))
    assert not np.array_equal(bagged.predict(X), full)
