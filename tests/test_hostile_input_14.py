"""Hostile and unusual input, round 14 (session 24: probes 35-40). Each test's docstring says
what hardwood did before."""
import numpy as np
import pytest

import hardwood as hw

sp = pytest.importorskip("scipy.sparse")


@pytest.mark.parametrize("runtime", ["naive", "struct+", "vpred", "codegen"])
@pytest.mark.parametrize("objective", ["reg:squarederror", "multi:softmax", "multi:softprob"])
def test_compiled_models_predict_wide_sparse_matrices_in_blocks_of_rows(monkeypatch, runtime,
                                                                       objective):
    """``hw.compile(model).predict`` made the whole sparse matrix dense at once (``Model.predict``
    did so too until session 23): 5,000 x 200,000 took 8.4 GB. It now takes a block of rows
    at a time, into ``out`` where given, every output the same as the dense matrix's."""
    from hardwood.data import convert

    rng = np.random.default_rng(3)
    n, d, nnz = 400, 60, 3000
    X = sp.csr_matrix((rng.random(nnz), (rng.integers(0, n, nnz), rng.integers(0, d, nnz))),
                      shape=(n, d))
    y = np.asarray(X[:, :5].sum(axis=1)).ravel()
    params = {"max_depth": 3, "objective": objective}
    if objective.startswith("multi"):
        params["num_class"] = 3
        y = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    m = hw.train(params, hw.Dataset(X, y), num_boost_round=4)
    c = hw.compile(m, runtime=runtime)
    whole = {out: c.predict(X.toarray(), output=out) for out in ("value", "raw", "leaf")}
    monkeypatch.setattr(convert, "SPARSE_BLOCK_CELLS", 7 * d)  # blocks of 7 rows
    for output, expected in whole.items():
        for S in (X, X.tocsc()):
            got = c.predict(S, output=output)
            assert got.shape == expected.shape
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
        out = (np.empty(expected.shape, np.int32) if output == "leaf"
               else np.empty((n, m.n_outputs)))
        got = c.predict(X, output=output, out=out)
        assert got.shape == expected.shape and np.shares_memory(got, out)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="out must be"):
        c.predict(X, output="raw", out=np.empty((n - 1, m.n_outputs)))
