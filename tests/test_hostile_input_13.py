"""Hostile and unusual input, round 13 (session 23: probes 29-32). Each test's docstring says
what hardwood did before."""
import numpy as np
import pytest

import hardwood as hw

sp = pytest.importorskip("scipy.sparse")


def _malformed(X, kind):
    if kind == "csc row past the rows":
        S = sp.csc_matrix(X)
        S.indices[3] = 10**6
    elif kind == "csc indptr past the entries":
        S = sp.csc_matrix(X)
        S.indptr[-1] = S.nnz + 500
    elif kind == "csc negative row":
        S = sp.csc_matrix(X)
        S.indices[3] = -3
    elif kind == "coo row past the rows":
        S = sp.coo_matrix(X)
        S.row[3] = 10**7
    else:  # a coo_array's negative column
        S = sp.coo_array(X)
        S.coords[1][3] = -1
    return S


@pytest.mark.parametrize("kind", ["csc row past the rows", "csc indptr past the entries",
                                  "csc negative row", "coo row past the rows",
                                  "coo_array negative column"])
def test_malformed_csc_and_coo_are_refused_before_any_conversion(kind):
    """A CSC or COO matrix whose indices point outside it crashed the interpreter
    (segmentation fault) in ``Dataset``, ``predict`` and the estimators' ``fit``, or, with a
    negative row index, was taken and wrote outside the matrix: scipy's conversion to CSR (and
    scikit-learn's checks, which convert first) index by them unchecked. CSR was refused."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 6))
    X[rng.random((300, 6)) < 0.8] = 0
    y = X[:, 0]
    model = hw.train({}, hw.Dataset(X, y), num_boost_round=2)
    est = hw.GBDTRegressor(n_estimators=2).fit(X, y)
    forest = hw.RandomForestRegressor(n_estimators=2).fit(X, y)
    calls = [lambda S: hw.Dataset(S, y), model.predict,
             lambda S: hw.GBDTRegressor(n_estimators=2).fit(S, y), est.predict,
             lambda S: hw.RandomForestRegressor(n_estimators=2).fit(S, y), forest.predict,
             lambda S: est.fit(X, y, eval_set=[(S, y)])]
    for call in calls:
        with pytest.raises(ValueError, match="malformed sparse matrix"):
            call(_malformed(X, kind))


def test_an_eval_metric_function_named_auc_is_maximised():
    """An estimator's ``eval_metric`` function named ``auc`` was minimised by early stopping:
    hardwood kept round 0 (holdout AUC 0.863), where XGBoost, which maximises metrics named
    auc/aucpr/pre/map/ndcg, kept round 92 (0.942). The same holds for ``train``'s
    ``custom_metric`` without ``maximize=``, as in XGBoost."""
    from sklearn.datasets import make_classification
    from sklearn.metrics import roc_auc_score

    X, y = make_classification(1500, 8, n_informative=4, flip_y=0.1, random_state=0)
    Xt, yt, Xv, yv = X[:1000], y[:1000], X[1000:], y[1000:]

    def auc(y_true, y_pred):
        return roc_auc_score(y_true, y_pred)

    kw = dict(n_estimators=60, learning_rate=0.1, max_depth=3, early_stopping_rounds=5)
    named = hw.GBDTClassifier(**kw, eval_metric=auc).fit(Xt, yt, eval_set=[(Xv, yv)])
    builtin = hw.GBDTClassifier(**kw, eval_metric="auc").fit(Xt, yt, eval_set=[(Xv, yv)])
    assert named.best_iteration_ == builtin.best_iteration_ > 5
    curve = named.evals_result_["validation_0"]["auc"]
    assert named.best_score_ == pytest.approx(max(curve))

    train = hw.Dataset(Xt, yt)
    valid = hw.Dataset(Xv, yv, reference=train)
    params = {"objective": "binary:logistic", "learning_rate": 0.1, "max_depth": 3}
    m = hw.train(params, train, 60, valid_sets=[valid], early_stopping_rounds=5,
                 custom_metric=lambda p, d: ("auc_valid", roc_auc_score(d.get_label(), p)))
    assert m.best_iteration == builtin.best_iteration_
    # a name XGBoost minimises, and maximize= over the name, as XGBoost
    low = hw.train(params, train, 60, valid_sets=[valid], early_stopping_rounds=5,
                   custom_metric=lambda p, d: ("mape", roc_auc_score(d.get_label(), p)))
    assert low.best_iteration < m.best_iteration
    forced = hw.train(params, train, 60, valid_sets=[valid], early_stopping_rounds=5,
                      custom_metric=lambda p, d: ("mape", roc_auc_score(d.get_label(), p)),
                      maximize=True)
    assert forced.best_iteration == m.best_iteration
