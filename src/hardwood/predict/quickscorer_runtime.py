"""``quickscorer``: ``predict.quickscorer`` as a runtime. QuickScorer is patented
(US 11,106,685): it runs only when a user names it, never through ``auto``
(``auto.PATENTED``)."""
from __future__ import annotations

import threading

import numpy as np

from . import pred as _pred
from . import quickscorer as _qs
from .base import SERIAL_ROWS, CompiledModel, register


@register
class QuickScorerRuntime(CompiledModel):
    """QuickScorer (Lucchese et al. 2015) over 16 or 8 rows in SIMD lanes: per feature, the
    nodes a row fails, found by one threshold-sorted scan, AND their masks into a bitvector
    per tree (trees of at most 64 leaves, numeric splits). One row takes the one-row kernel,
    whose bitvectors live in scratch made at compile time, so that it allocates nothing but
    its output (another thread calling at the same time gets its own)."""

    runtime = "quickscorer"
    binds_one_row = True

    def _build(self):
        reason = _qs.unsupported_reason(self.model.trees[self.t0:self.t1])
        if reason:
            raise ValueError(f"runtime 'quickscorer' cannot run this model: {reason}")
        self.layout = _qs.QSLayout(self.model.trees, self.model.tree_group, self.t0, self.t1)
        self._mod = _qs.kernels(self.layout.V)
        # one row: the layout in one byte array and a kernel of five arguments
        self._lock = threading.Lock()
        self._one_kernel = _qs.one_row_kernel(self.layout.width)
        self._one_scratch = np.empty((self.t1 - self.t0) * 8, np.uint8)
        self._bind_one_row(self._one_row, _qs.one_row_blob(self.layout, self.base))

    def _one_row(self, X, blob, out, code):
        """``one(X, blob, out, code)`` for the one-row path."""
        if self._lock.acquire(blocking=False):
            try:
                self._one_kernel(X, blob, self._one_scratch, out, code)
            finally:
                self._lock.release()
        else:
            self._one_kernel(X, blob, np.empty(self._one_scratch.size, np.uint8), out, code)

    def _go(self, X, out, lout, want_leaf):
        args = self.layout.args(X.dtype == np.float32)
        if X.shape[0] >= SERIAL_ROWS:
            self._mod.run_parallel(X, _pred.BLOCK_ROWS, *args, out, lout, want_leaf)
        else:
            self._mod.run_serial(X, *args, out, lout, want_leaf)

    def _raw(self, X, out):
        self._go(X, out, self._no_lout, False)

    def _leaf(self, X, lout):
        self._go(X, self._no_out, lout, True)
