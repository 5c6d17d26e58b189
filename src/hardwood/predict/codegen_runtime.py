"""``codegen``: the generated if-else code of ``predict.codegen`` as a runtime (cached on
disk; ``compile_seconds`` reports the time taken). Leaf indices come from the Struct+ walk."""
from __future__ import annotations

import warnings

import numpy as np

from . import codegen
from .base import SERIAL_ROWS, CompiledModel, register
from .struct_runtime import StructPlusRuntime


@register
class CodegenRuntime(CompiledModel):
    runtime = "codegen"

    def _build(self):
        trees = self.model.trees[self.t0:self.t1]
        reason = codegen.unsupported_reason(trees)
        if reason:
            raise ValueError(f"runtime 'codegen' cannot run this model: {reason}")
        self.mod = codegen.build_module(self.model.trees, self.model.tree_group, self.t0, self.t1)
        slow = codegen.slow_compile_warning(trees)
        if slow and self.mod.__dict__.pop("_hardwood_new_source", False):
            warnings.warn(slow, UserWarning, stacklevel=4)
        bits = [t.cat_bitsets for t in trees]
        self.bits = np.concatenate(bits).astype(np.uint32) if sum(b.size for b in bits) else \
            np.zeros(1, np.uint32)
        self._leafrt = None

    def _raw(self, X, out):
        fn = self.mod.run_serial if X.shape[0] < SERIAL_ROWS else self.mod.run_parallel
        fn(X, self.bits, self.ncat, out)

    def _leaf(self, X, lout):
        if self._leafrt is None:
            self._leafrt = StructPlusRuntime(self.model, tree_range=(self.t0, self.t1))
        self._leafrt._leaf(X, lout)
