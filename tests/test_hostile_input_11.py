"""Inputs and parameters tried as a new user would (session 21): each test names what
hardwood did before."""
import numpy as np
import pytest

import hardwood as hw


@pytest.mark.parametrize("estimator", ["GBDTRegressor", "RandomForestRegressor",
                                       "GBDTClassifier", "RandomForestClassifier"])
def test_estimators_refuse_masked_labels_and_weights(estimator):
    """The estimators passed a masked ``y`` or ``sample_weight`` to scikit-learn's checks,
    which drop the mask: they trained on the values under it, where ``hw.train`` refuses
    them. They now refuse them too, and an unmasked masked array still fits."""
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=200)
    if "Classifier" in estimator:
        y = (y > 0).astype(int)
    some = np.zeros(200, bool)
    some[[3, 50]] = True
    est = getattr(hw, estimator)(n_estimators=3)
    with pytest.raises(ValueError, match="y is a masked array with 2 masked"):
        est.fit(X, np.ma.masked_array(y, mask=some))
    with pytest.raises(ValueError, match="sample_weight is a masked array with 2 masked"):
        est.fit(X, y, sample_weight=np.ma.masked_array(np.ones(200), mask=some))
    est.fit(X, np.ma.masked_array(y), sample_weight=np.ma.masked_array(np.ones(200)))
    assert est.predict(X).shape == (200,)


def test_predicting_no_rows_of_an_object_array():
    """A (0, n) object array raised numpy's "cannot reshape array of size 0" from the
    string check, where a numeric one returns 0 predictions."""
    X = np.random.default_rng(1).normal(size=(100, 3))
    model = hw.train({"max_depth": 2}, hw.Dataset(X, X[:, 0]), 2)
    assert model.predict(np.empty((0, 3), dtype=object)).shape == (0,)
    with pytest.raises(ValueError, match="has 4 features"):
        model.predict(np.empty((0, 4), dtype=object))
