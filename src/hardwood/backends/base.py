"""The backend interface: the data-heavy steps ① ③ ⑤ of the training loop (DESIGN.md).

A grower owns the tree logic and calls a backend for every pass over rows:

* ``build_histograms(rows, begins, ends, g, h)`` -> float64 array (n_nodes, total_bins, 2)
  of per-bin (sum g, sum h) for the rows ``rows[begins[i]:ends[i]]`` of each node.
* ``partition(rows, begins, ends, features, left_tables)`` -> mids; reorders each node's
  segment stably so rows going left come first; ``left_tables[i, bin]`` says whether a row
  whose bin in ``features[i]`` is ``bin`` goes left (the missing bin included).
* ``add_leaf_values(rows, begins, ends, values, pred)``: ``pred[rows[begins[i]:ends[i]]] +=
  values[i]``.
* ``predict_binned(bins_row, binned_tree, pred)``: route every row of a binned matrix
  through a tree and add its leaf value to ``pred``.
* ``fill_row_ids(rows, parallel)``: ``rows[:] = 0, 1, ..., n - 1`` (the rows of an unsampled
  tree); ``parallel``: the fused grower grows the trees, so a ``prange`` kernel may do it.

``prange_launches``: whether the backend's own kernels launch as ``prange`` kernels (``sparse``
does); then the learner's ② and the kernels around the trees launch that way too (one kind of
launch per training loop: see ``sparse_cpu``'s twins).

A backend may also offer ``grow_fused(...)``: a whole tree in one call on one in-core page
(``cpu`` does, with ``backends/cpu_grower.py``); the grower uses it where it applies.

Step ② (split finding) is shared code in ``hardwood.backends.split``: the learner calls it
from the host, the fused CPU grower from inside its kernel.
"""
from __future__ import annotations

import numpy as np


class Backend:
    name = "abstract"
    prange_launches = False

    def build_histograms(self, rows, begins, ends, g, h):  # pragma: no cover - interface
        raise NotImplementedError

    def partition(self, rows, begins, ends, features, left_tables):  # pragma: no cover
        raise NotImplementedError

    def add_leaf_values(self, rows, begins, ends, values, pred):  # pragma: no cover
        raise NotImplementedError

    def predict_binned(self, bins_row, binned_tree, pred):  # pragma: no cover
        raise NotImplementedError

    def fill_row_ids(self, rows, parallel=False):
        rows[:] = np.arange(rows.shape[0], dtype=rows.dtype)


def make_backend(name, dataset):
    """Backend ``name`` over the binned matrices of ``dataset``."""
    if getattr(dataset, "sparse_bins", None) is not None and name in ("cpu", "reference"):
        if name == "cpu":  # binned sparse (data/sparse.py): kernels over the non-zeros
            from .sparse_cpu import SparseCPUBackend
            return SparseCPUBackend(dataset.sparse_bins, dataset.bin_mapper.offsets)
        from .reference import SparseReferenceBackend
        return SparseReferenceBackend(dataset.sparse_bins, dataset.bin_mapper.offsets)
    if name == "cpu":
        from .cpu import CPUBackend
        return CPUBackend(dataset.bins_row, dataset.bins_col, dataset.bin_mapper.offsets)
    if name == "reference":
        from .reference import ReferenceBackend
        return ReferenceBackend(dataset.bins_row, dataset.bins_col, dataset.bin_mapper.offsets)
    if name == "cuda":
        raise ValueError("device='cuda' is not available yet in hardwood's boosting trainer; "
                         "use device='cpu'")
    raise ValueError(f"unknown backend {name!r}; expected 'cpu'")
