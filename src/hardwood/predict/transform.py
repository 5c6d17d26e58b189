"""Output transforms, applied in place to a (rows, outputs) margin.

Each objective of the registry (``hardwood.objectives``) names one of the codes below; code 0
is the identity. This one Numba function serves ``Model.predict`` (through
``objectives.transform_margin``), the compiled runtimes' batch path (``dispatch``) and their
generated one-row kernels (``pred``, ``quickscorer``), so every path gives the same floats.
"""
from __future__ import annotations

import numpy as np
from numba import njit

IDENTITY = 0
SIGMOID = 1  # every output
SOFTMAX = 2  # over the outputs of a row
EXP = 3
HINGE = 4  # 1.0 where the margin is > 0, else 0.0
ARGMAX = 5  # the class index, written to column 0: the output is one column
SOFTPLUS = 6  # log(1 + exp(margin))
PROBABILITY = 7  # every output clipped to [0, 1]: a forest's sum of fraction / n_trees


@njit(cache=True, nogil=True)
def transform_inplace(code, m):
    n, K = m.shape
    for i in range(n):
        if code == SIGMOID:
            for k in range(K):
                m[i, k] = 1.0 / (1.0 + np.exp(-m[i, k]))
        elif code == SOFTMAX:
            mx = m[i, 0]
            for k in range(1, K):
                mx = max(mx, m[i, k])
            s = 0.0
            for k in range(K):
                m[i, k] = np.exp(m[i, k] - mx)
                s += m[i, k]
            for k in range(K):
                m[i, k] = m[i, k] / s
        elif code == EXP:
            m[i, 0] = np.exp(m[i, 0])
        elif code == HINGE:
            m[i, 0] = 1.0 if m[i, 0] > 0 else 0.0
        elif code == ARGMAX:
            best = 0
            for k in range(1, K):
                if m[i, k] > m[i, best]:
                    best = k
            m[i, 0] = best
        elif code == SOFTPLUS:
            m[i, 0] = np.log1p(np.exp(m[i, 0]))
        elif code == PROBABILITY:  # (1.0000000000000013 from a sum of fractions)
            for k in range(K):
                m[i, k] = min(max(m[i, k], 0.0), 1.0)
