"""Hostile input, third probe: silent wrong answers, crashes and unclear errors a newcomer who
knows XGBoost, LightGBM and scikit-learn found. One small test per defect; the rules they hold
are listed in docs/checks.md."""
import numpy as np
import pytest

import hardwood


def _xy(n=300, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, X[:, 0]


# -- a class whose rows all weigh 0 keeps its column -------------------------------------------
def test_classifier_keeps_a_class_whose_rows_all_weigh_zero():
    """The class was dropped: predict_proba had K-1 columns and classes_ lacked it, where
    scikit-learn and XGBoost keep it (classes_ come from all the labels)."""
    X, x0 = _xy()
    y = np.array(["a", "b", "c"])[np.digitize(x0, [-0.5, 0.5])]
    w = (y != "b").astype(float)
    clf = hardwood.GBDTClassifier(n_estimators=20).fit(X, y, sample_weight=w)
    assert clf.classes_.tolist() == ["a", "b", "c"]
    proba = clf.predict_proba(X)
    assert proba.shape == (300, 3)
    assert proba[:, 1].max() < 0.05  # a class never seen with weight is improbable
    assert set(clf.predict(X)) <= {"a", "c"}
    # still: fewer than two classes with weight is an error
    with pytest.raises(ValueError, match="only one class: 'a'"):
        hardwood.GBDTClassifier(n_estimators=2).fit(X, y, sample_weight=(y == "a") * 1.0)
