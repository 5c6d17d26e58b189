"""Numba threads, and Python threads that call hardwood's parallel kernels.

Numba runs ``parallel=True`` kernels on a *threading layer*: TBB, OpenMP, or its own
``workqueue`` when neither is installed (or when ``NUMBA_THREADING_LAYER=workqueue``). The
workqueue layer aborts the whole process (SIGABRT) when two Python threads launch parallel
kernels at the same time. So hardwood asks once which layer runs, and under workqueue:

* every entry point that may launch a parallel kernel (training, binning, batch prediction,
  forests) holds one process-wide lock (:func:`guard`), so that concurrent calls from Python
  threads run one after the other instead of killing the process;
* forests grow their trees on one Python thread (:func:`concurrent_launches`).

TBB and OpenMP are thread-safe: there, concurrent calls run concurrently and the guard is a
no-op. One row through a compiled runtime's one-row kernel never launches a parallel kernel
and takes no lock.
"""
from __future__ import annotations

import contextlib
import threading

import numba

THREAD_SAFE_LAYERS = ("tbb", "omp")

_LOCK = threading.RLock()
_NO_LOCK = contextlib.nullcontext()
_guard = None


def layer() -> str:
    """The name of Numba's threading layer ('tbb', 'omp', 'workqueue'), started if need be."""
    try:
        return numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet: start the layer
        pass
    with _LOCK:
        try:
            from numba.np.ufunc.parallel import _launch_threads
            _launch_threads()
            return numba.threading_layer()
        except Exception:  # pragma: no cover - an unknown Numba: assume the worst
            return "unknown"


def concurrent_launches() -> bool:
    """Whether several Python threads may launch parallel kernels at once."""
    return layer() in THREAD_SAFE_LAYERS


def guard():
    """A context manager that serialises parallel launches where the layer needs it (a
    re-entrant process-wide lock under workqueue; a no-op under TBB and OpenMP)."""
    global _guard
    g = _guard
    if g is None:
        g = _guard = _NO_LOCK if concurrent_launches() else _LOCK
    return g


@contextlib.contextmanager
def threads(n_jobs):
    """Run the block with ``n_jobs`` Numba threads (None or -1: all cores; -2: all but one),
    under :func:`guard`. Yields the thread count. Numba's thread count is per Python thread."""
    limit = numba.config.NUMBA_NUM_THREADS
    if n_jobs is None or n_jobs == -1:
        n = limit
    elif n_jobs < 0:
        n = max(1, limit + 1 + n_jobs)
    else:
        n = min(int(n_jobs), limit)
    n = max(1, n)
    with guard():
        old = numba.get_num_threads()
        numba.set_num_threads(n)
        try:
            yield n
        finally:
            numba.set_num_threads(old)
