"""CUDA predictor: a numba-cuda kernel, one thread per row, walking the Struct+ layout (as
flat arrays). Without a GPU it raises a clear error, unless the CUDA simulator is on
(``NUMBA_ENABLE_CUDASIM=1``), where the tests run it on tiny inputs."""
from __future__ import annotations

import numpy as np

from . import struct as _struct
from .dispatch import CompiledModel

try:  # a module global, so that the CUDA simulator can swap it in the kernels' globals
    from numba import cuda
except Exception:  # pragma: no cover
    cuda = None

_KERNELS = None


def _kernels():
    global _KERNELS
    if _KERNELS is not None:
        return _KERNELS
    if cuda is None:  # pragma: no cover
        raise RuntimeError("runtime 'cuda' needs numba-cuda")
    if not cuda.is_available():
        raise RuntimeError("runtime 'cuda' needs an NVIDIA GPU (none found); set "
                           "NUMBA_ENABLE_CUDASIM=1 to run the CUDA simulator")
    DL, CAT, MASK = _struct.DL_BIT, _struct.CAT_BIT, _struct.FEAT_MASK

    @cuda.jit(device=True)
    def walk(X, r, node, thr, feat, left, catoff, bits, ncat):
        while True:
            ff = feat[node]
            if ff < 0:
                return node
            f = ff & MASK
            v = X[r, f]
            dl = (ff & DL) != 0
            if ff & CAT:
                if v != v:
                    go_left = dl
                else:
                    c = int(v)
                    if c < 0 or c >= ncat[f]:
                        go_left = dl
                    else:
                        go_left = ((bits[catoff[node] + (c >> 5)] >> (c & 31)) & 1) == 1
            elif v <= thr[node]:
                go_left = True
            elif v != v:
                go_left = dl
            else:
                go_left = False
            node = left[node] + (0 if go_left else 1)

    @cuda.jit
    def raw(X, thr, feat, left, catoff, bits, ncat, roots, groups, out):
        r = cuda.grid(1)
        if r < X.shape[0]:
            for k in range(roots.shape[0]):
                leaf = walk(X, r, roots[k], thr, feat, left, catoff, bits, ncat)
                out[r, groups[k]] += thr[leaf]

    @cuda.jit
    def leaf(X, thr, feat, left, catoff, bits, ncat, roots, lout):
        r = cuda.grid(1)
        if r < X.shape[0]:
            for k in range(roots.shape[0]):
                lf = walk(X, r, roots[k], thr, feat, left, catoff, bits, ncat)
                lout[r, k] = left[lf]

    _KERNELS = (cuda, raw, leaf)
    return _KERNELS


class CudaRuntime(CompiledModel):
    runtime = "cuda"
    threads = 128

    def _build(self):
        cuda, self._kraw, self._kleaf = _kernels()
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

    def _raw(self, X, out):
        cuda = self._cuda
        dX, dout = cuda.to_device(X), cuda.to_device(out)
        self._kraw[self._blocks(X.shape[0]), self.threads](dX, *self._d, self._roots,
                                                           self._groups, dout)
        out[:] = dout.copy_to_host()

    def _leaf(self, X, lout):
        cuda = self._cuda
        dX, dl = cuda.to_device(X), cuda.to_device(lout)
        self._kleaf[self._blocks(X.shape[0]), self.threads](dX, *self._d, self._roots, dl)
        lout[:] = dl.copy_to_host()
