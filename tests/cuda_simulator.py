"""The prelude of the scripts that run kernels under numba-cuda's simulator (in a child
process, with ``NUMBA_ENABLE_CUDASIM=1``).

The simulator runs each CUDA thread as a Python thread; a block's threads meet at
``syncthreads`` while the block's manager polls them, holding the GIL. Python's default switch
interval (5 ms) made each meeting wait milliseconds, so the parity tests took minutes. A short
interval makes them 2-3x faster, and makes threads interleave far more often, which is what a
test of kernels should want.

It also exposed a race in the simulator itself: ``cuda.shared.array`` looks the block's array
up and creates it when missing without a lock, so two threads of a block could each create
their own "shared" array and read the other's garbage (an index of 1,076,635,217 in
``scatter_nodes``, about one run in six). The prelude replaces that method by one that looks
up and creates under a lock, keyed as the simulator keys it (the calling line); the kernels
are unchanged.
"""

PRELUDE = r"""
import sys
import threading

import numpy as _np
from numba.core import types as _types
from numba.cuda.simulator import kernelapi as _kernelapi
from numba.np import numpy_support as _numpy_support

sys.setswitchinterval(2e-5)
_shared_lock = threading.Lock()
_shared_array = _kernelapi.FakeCUDAShared.array


def _locked_shared_array(self, shape, dtype, alignment=None):
    if alignment is not None or shape == 0:  # errors and dynamic shared memory: unchanged
        return _shared_array(self, shape, dtype, alignment)
    if isinstance(dtype, _types.Type):
        dtype = _numpy_support.as_dtype(dtype)
    caller = sys._getframe(1)
    key = (caller.f_code.co_filename, caller.f_lineno)
    with _shared_lock:
        res = self._allocations.get(key)
        if res is None:
            res = self._allocations[key] = _np.empty(shape, dtype)
    return res


_kernelapi.FakeCUDAShared.array = _locked_shared_array
"""
