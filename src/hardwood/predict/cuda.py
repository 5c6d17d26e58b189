"""CUDA predictor kernels: one thread per row, walking the Struct+ layout (as flat arrays); the
runtime is ``cuda_runtime.CudaRuntime``. Without a GPU :func:`device_kernels` raises a clear error,
unless the CUDA simulator is on (``NUMBA_ENABLE_CUDASIM=1``), where the tests run it on tiny
inputs."""
from __future__ import annotations

from . import struct as _struct

try:  # a module global, so that the CUDA simulator can swap it in the kernels' globals
    from numba import cuda
except Exception:  # pragma: no cover
    cuda = None

_KERNELS = None


def device_kernels():
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
