"""Output transforms of the compiled runtimes, applied in place to a (rows, outputs) margin.

``TRANSFORM`` maps an objective to a code; code 0 is the identity. The same Numba function
serves the batch path (``dispatch``) and the generated one-row kernels (``pred``), so both give
the same floats as the naive runtime.
"""
from __future__ import annotations

import numpy as np
from numba import njit

TRANSFORM = {"binary:logistic": 1, "reg:logistic": 1, "multiclassova": 1, "multi:softprob": 2,
             "count:poisson": 3, "reg:gamma": 3, "reg:tweedie": 3, "binary:hinge": 4,
             "multi:softmax": 5, "cross_entropy_lambda": 6}
ARGMAX = 5  # the code whose output is one column (the class index)


@njit(cache=True, nogil=True)
def transform_inplace(code, m):
    n, K = m.shape
    for i in range(n):
        if code == 1:
            for k in range(K):
                m[i, k] = 1.0 / (1.0 + np.exp(-m[i, k]))
        elif code == 2:
            mx = m[i, 0]
            for k in range(1, K):
                mx = max(mx, m[i, k])
            s = 0.0
            for k in range(K):
                m[i, k] = np.exp(m[i, k] - mx)
                s += m[i, k]
            for k in range(K):
                m[i, k] = m[i, k] / s
        elif code == 3:
            m[i, 0] = np.exp(m[i, 0])
        elif code == 4:
            m[i, 0] = 1.0 if m[i, 0] > 0 else 0.0
        elif code == 5:
            best = 0
            for k in range(1, K):
                if m[i, k] > m[i, best]:
                    best = k
            m[i, 0] = best
        elif code == 6:
            m[i, 0] = np.log1p(np.exp(m[i, 0]))
