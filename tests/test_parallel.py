"""parallel.run_ranges: every task runs exactly once, whatever the thread count and however
the ranges fall to the threads; an error in any range reaches the caller."""
import numba
import numpy as np
import pytest
from numba import njit

from hardwood.parallel import CHUNKS_PER_THREAD, run_ranges


@njit(nogil=True)
def _visit(t0, t1, counts):
    for t in range(t0, t1):
        counts[t] += 1


@njit(nogil=True)
def _fail_at(t0, t1, bad):
    for t in range(t0, t1):
        if t == bad:
            raise ValueError("task failed")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 8, 9, 100, 1001])
def test_every_task_runs_once(threads, n):
    old = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        counts = np.zeros(n, dtype=np.int64)
        ranges = []

        def kernel(t0, t1, counts):
            ranges.append((t0, t1))  # atomic under the GIL
            _visit(t0, t1, counts)

        run_ranges(kernel, n, counts)
        np.testing.assert_array_equal(counts, np.ones(n, dtype=np.int64))
        k = min(numba.get_num_threads(), n)
        # contiguous ranges, at most CHUNKS_PER_THREAD per thread (one when serial)
        assert len(ranges) <= (min(n, k * CHUNKS_PER_THREAD) if k > 1 else min(n, 1))
        assert all(t0 < t1 for t0, t1 in ranges)
    finally:
        numba.set_num_threads(old)


def test_an_error_in_any_range_reaches_the_caller():
    for bad in (0, 50, 99):
        with pytest.raises(ValueError, match="task failed"):
            run_ranges(_fail_at, 100, bad)
