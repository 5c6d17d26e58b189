"""numba-cuda backend for random forests (placeholder until the kernels land)."""
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
