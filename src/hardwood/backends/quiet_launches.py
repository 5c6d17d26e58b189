"""numba-cuda warns at every launch of fewer than 128 blocks that the GPU will be under-used.
Small grids are normal in tree building (a node of a few hundred rows, a level of a few
nodes) and a fit makes thousands of them, so the CUDA backends' methods launch without it.
No numba.cuda import here: the prediction runtime imports this before it loads numba-cuda."""
from __future__ import annotations

import functools
import warnings

from numba.core.errors import NumbaPerformanceWarning


def launches_quietly(method):
    """``method`` with numba-cuda's low-occupancy warning off for its duration."""
    @functools.wraps(method)
    def quiet(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Grid size",
                                    category=NumbaPerformanceWarning)
            return method(*args, **kwargs)
    return quiet
