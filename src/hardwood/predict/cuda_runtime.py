"""``cuda``: the numba-cuda kernels of ``predict.cuda`` as a runtime. numba-cuda is imported
when a model is first compiled for it, not when hardwood is."""
from __future__ import annotations

import numpy as np

from ..backends.quiet_launches import launches_quietly
from . import struct as _struct
from .base import CompiledModel, register


@register
class CudaRuntime(CompiledModel):
    """One GPU thread per row (needs a GPU or the CUDA simulator)."""

    runtime = "cuda"
    threads = 128

    def _build(self):
        from .cuda import device_kernels
        cuda, self._kraw, self._kleaf = device_kernels()
        nodes, catoff, bits, roots = _struct.build(self.model.trees, self.t0, self.t1, True)
        self._d = [cuda.to_device(np.ascontiguousarray(a)) for a in
                   (nodes["thr"], nodes["feat"], nodes["left"], catoff, bits, self.ncat)]
        self._roots = cuda.to_device(roots)
        self._groups = cuda.to_device(
            np.ascontiguousarray(self.model.tree_group[self.t0:self.t1], np.int64))
        self._cuda = cuda

    def _warm(self):
        pass

    def _blocks(self, n):
        return (n + self.threads - 1) // self.threads

    @launches_quietly
    def _raw(self, X, out):
        if X.shape[0] == 0:  # a launch of 0 blocks is a CUDA error
            return
        cuda = self._cuda
        dX, dout = cuda.to_device(X), cuda.to_device(out)
        self._kraw[self._blocks(X.shape[0]), self.threads](dX, *self._d, self._roots,
                                                           self._groups, dout)
        out[:] = dout.copy_to_host()

    @launches_quietly
    def _leaf(self, X, lout):
        if X.shape[0] == 0:
            return
        cuda = self._cuda
        dX, dl = cuda.to_device(X), cuda.to_device(lout)
        self._kleaf[self._blocks(X.shape[0]), self.threads](dX, *self._d, self._roots, dl)
        lout[:] = dl.copy_to_host()
