"""``struct`` and ``struct+``: the node-struct layouts of ``predict.struct`` as runtimes."""
from __future__ import annotations

import numpy as np

from . import struct as _struct
from .base import SERIAL_ROWS, CompiledModel, register


@register
class StructRuntime(CompiledModel):
    """``struct``: an array of 24-byte node structs in the model's node order, walked with
    branches."""

    runtime = "struct"
    bfs = False

    def _build(self):
        trees = self.model.trees
        self.nodes, self.catoff, self.bits, self.roots = _struct.build(trees, self.t0, self.t1,
                                                                       self.bfs)
        self.groups = np.ascontiguousarray(self.model.tree_group[self.t0:self.t1], np.int64)

    def _go(self, X, out, lout, want_leaf):
        if self.bfs:
            fn = _struct.run_serial_plus if X.shape[0] < SERIAL_ROWS else _struct.run_parallel_plus
        else:
            fn = _struct.run_serial if X.shape[0] < SERIAL_ROWS else _struct.run_parallel
        fn(X, self.nodes, self.catoff, self.bits, self.ncat, self.roots, self.groups,
           out, lout, want_leaf)

    def _raw(self, X, out):
        self._go(X, out, self._no_lout, False)

    def _leaf(self, X, lout):
        self._go(X, self._no_out, lout, True)


@register
class StructPlusRuntime(StructRuntime):
    """``struct+``: 16-byte node structs, breadth-first per tree, siblings adjacent, all
    contiguous."""

    runtime = "struct+"
    bfs = True
