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

GNU OpenMP is not fork-safe: in a child that ``fork()`` made after the parent ran a parallel
kernel, Numba kills the process on its first parallel launch ("Terminating: fork() called
from a process already using GNU OpenMP"), and a ``multiprocessing`` fork pool then waits
forever for its worker. There :func:`guard` raises a ``RuntimeError`` that says to start the
workers with 'spawn' or 'forkserver' (or joblib's loky, scikit-learn's ``n_jobs``), which
travels back to the parent as an error.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba

THREAD_SAFE_LAYERS = ("tbb", "omp")

_LOCK = threading.RLock()
_NO_LOCK = contextlib.nullcontext()
_guard = None
_pool = None  # the Python threads of run_ranges, and how many
_pool_workers = 0
CHUNKS_PER_THREAD = 4  # run_ranges' ranges per thread, taken in turn


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


_forked_after_gnu_omp = False  # this process was forked after GNU OpenMP had started


def _gnu_omp_started() -> bool:
    try:
        if numba.threading_layer() != "omp":  # ValueError: no parallel kernel ran yet
            return False
        from numba.np.ufunc import omppool
        return getattr(omppool, "openmp_vendor", "GNU") == "GNU"
    except Exception:
        return False


def _after_fork_in_child():
    global _forked_after_gnu_omp, _pool, _pool_workers
    _forked_after_gnu_omp = _forked_after_gnu_omp or _gnu_omp_started()
    _pool, _pool_workers = None, 0  # the parent's pool threads do not exist here


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def guard():
    """A context manager that serialises parallel launches where the layer needs it (a
    re-entrant process-wide lock under workqueue; a no-op under TBB and OpenMP). In a
    process forked after GNU OpenMP started, where a parallel launch would kill it, it
    raises ``RuntimeError`` instead."""
    if _forked_after_gnu_omp:
        raise RuntimeError(
            "hardwood cannot run in a process forked after it ran in the parent: Numba's "
            "OpenMP threads (GNU OpenMP) do not survive fork(), and the process would be "
            "killed. Start worker processes with multiprocessing's 'spawn' or 'forkserver' "
            "(multiprocessing.get_context('spawn')), or use joblib (loky) or scikit-learn's "
            "n_jobs, which do")
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


def chunks(n):
    """How many ranges a ``prange`` twin of a range kernel cuts ``n`` tasks into:
    CHUNKS_PER_THREAD per Numba thread, at most one per task. A twin is
    ``for q in prange(c): kernel(n * q // c, n * (q + 1) // c, *args)``: the same kernel, the
    same disjoint outputs, so the same result as ``run_ranges(kernel, n, *args)``."""
    return max(1, min(int(n), int(numba.get_num_threads()) * CHUNKS_PER_THREAD))


def run_ranges(kernel, n, *args):
    """``kernel(lo, hi, *args)`` over the tasks ``0 .. n - 1``, cut into CHUNKS_PER_THREAD
    contiguous ranges per Numba thread (``numba.get_num_threads()``) that the caller's thread
    and Python pool threads take in turn, each the next one free, until none is left; returns
    when every range has run. ``kernel`` is a serial Numba function compiled with
    ``nogil=True`` whose tasks write disjoint outputs, so the result does not depend on the
    cut or on which thread ran what. An error in any range is raised here, after the others.

    Why ranges taken in turn, not one per thread: a pool thread starts 0.1-0.4 ms after it
    is asked (a sparse level's histogram kernel waited 0.13 s in all for it over 50 trees),
    and two threads of one machine need not run at one speed; with one range each, the
    caller then waited for the other a third of the histogram kernel's time. A range costs a
    kernel call (about 2 us). The caller waits for the ranges the pool threads took, not for
    the threads: a launch whose ranges the caller ran alone (work shorter than a pool
    thread's wake-up) returns at once (2 threads, an empty kernel: 300-380 -> 10 us), and the
    late pool thread finds no range left.

    Why not ``prange``: a ``parallel=True`` kernel compiles its loop body a second time, and
    Numba's parallel passes cost 1-2 s more per kernel on a fresh machine; a serial kernel
    run this way compiles once. Serial kernels launch no parallel work, so the workqueue
    layer's one-launch-at-a-time rule does not apply. The price: a pool thread takes the GIL
    to start each range, 40-80 us a launch on a 2-core VM, and a launch of under a
    millisecond barely gets a second core. The training loops whose launches are many and
    short use ``prange`` twins of their heavy kernels instead (``chunks``): the fused
    grower, and the learner over sparse bins (``Grower.launches_prange``)."""
    global _pool, _pool_workers
    k = min(int(numba.get_num_threads()), int(n))
    if k <= 1:
        if n > 0:
            kernel(0, n, *args)
        return
    if _pool_workers < k - 1:
        with _LOCK:
            if _pool_workers < k - 1:
                workers = max(k, numba.config.NUMBA_NUM_THREADS) - 1
                _pool = ThreadPoolExecutor(workers, thread_name_prefix="hardwood")
                _pool_workers = workers
    c = min(int(n), k * CHUNKS_PER_THREAD)
    cuts = [n * i // c for i in range(c + 1)]
    taken = itertools.count()  # next() is atomic under the GIL
    finished = itertools.count(1)
    done = threading.Event()
    errors = []

    def work():
        for i in taken:
            if i >= c:
                return
            try:
                kernel(cuts[i], cuts[i + 1], *args)
            except BaseException as e:  # raised by the caller, once every range has run
                errors.append(e)
            if next(finished) == c:
                done.set()

    pool = _pool
    for _ in range(1, k):
        pool.submit(work)
    work()
    done.wait()
    if errors:
        raise errors[0]
