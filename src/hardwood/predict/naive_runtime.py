"""``naive``: the reference walk (``predict.naive``) as a compiled runtime."""
from __future__ import annotations

from .base import SERIAL_ROWS, CompiledModel, register
from .naive import (predict_leaf_kernel, predict_leaf_serial, predict_raw_kernel,
                    predict_raw_serial)


@register
class NaiveRuntime(CompiledModel):
    """Every row walks every tree, one node at a time, over the model's packed arrays (on
    one thread below ``SERIAL_ROWS`` rows, as the other runtimes)."""

    runtime = "naive"

    def _build(self):
        self.f = self.model.packed()

    def _raw(self, X, out):
        f = self.f
        fn = predict_raw_serial if X.shape[0] < SERIAL_ROWS else predict_raw_kernel
        fn(X, self.t0, self.t1, f.feature, f.threshold, f.left, f.right, f.default_left,
           f.is_categorical, f.cat_offset, f.value, f.bitsets, f.roots, f.tree_group,
           f.n_categories, out)

    def _leaf(self, X, lout):
        f = self.f
        fn = predict_leaf_serial if X.shape[0] < SERIAL_ROWS else predict_leaf_kernel
        fn(X, self.t0, self.t1, f.feature, f.threshold, f.left, f.right, f.default_left,
           f.is_categorical, f.cat_offset, f.bitsets, f.roots, f.n_categories, lout)
