"""The containers a matrix reaches a Dataset in, for tests that must hold in each: dense
numpy, scipy CSR, and a pandas frame read in chunks (``Dataset``'s chunked conversion, made
to cut a small frame by lowering ``CHUNK_ROWS``)."""
import pytest

CONTAINERS = ["dense", "csr", "chunked"]


def container_of(name, monkeypatch, columns=("a", "b", "c")):
    """A function that puts a numpy matrix in container ``name`` (skipping the test where
    the container's library is absent)."""
    if name == "dense":
        return lambda a: a
    if name == "csr":
        return pytest.importorskip("scipy.sparse").csr_matrix
    import hardwood.data.dataset as dataset_module

    pd = pytest.importorskip("pandas")
    monkeypatch.setattr(dataset_module, "CHUNK_ROWS", 64)
    return lambda a: pd.DataFrame(a, columns=list(columns))
