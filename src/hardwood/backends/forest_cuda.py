"""numba-cuda backend for random forests.

Only the availability check is written: the hybrid-growth kernels (CudaTree) for the GPU are
still to come, so growing on device="cuda" raises NotImplementedError.
"""
from __future__ import annotations


def cuda_available():
    """(ok, reason): whether numba-cuda can run kernels here (a GPU, or the simulator)."""
    try:
        from numba import cuda
    except Exception as e:  # pragma: no cover - numba without its CUDA target
        return False, f"numba-cuda is not importable ({e})"
    try:
        if cuda.is_available():
            return True, ""
    except Exception as e:  # pragma: no cover
        return False, f"CUDA is not usable ({e})"
    return False, "no CUDA GPU or driver was found (NUMBA_ENABLE_CUDASIM=1 runs the simulator)"


def grow_tree_cuda(data, params, rows, w, key, growth="hybrid", crossover=None):
    """Grow one tree on the GPU. The numba-cuda kernels are not written yet: this raises."""
    raise NotImplementedError("device='cuda' random forests are not implemented yet in this "
                              "hardwood version; use device='cpu'")
