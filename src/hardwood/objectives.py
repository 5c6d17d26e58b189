"""Objectives: the registry of every objective hardwood knows, and the gradients, hessians
(step ⑤'s gradient update) and base scores of those it trains. Margins and gradients are stored
output-major: shape (n_outputs, n_rows).

The registry is ``OBJECTIVES`` (canonical name -> ``Objective`` subclass) and ``ALIASES``
(training alias -> canonical name). Each class says what the other modules need to know of an
objective: its name (also its name in model files), task, outputs, output transform and
default metric; model files, the prediction runtimes, metrics, the CLI, the training
parameters and the estimators read them here. Objectives of imported models that hardwood
predicts but does not train (``trainable = False``) are registered too, without gradients."""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from . import ranking
from .parallel import run_ranges
from .backends._intrinsics import exp_fast
from .predict.transform import (ARGMAX, EXP, HINGE, IDENTITY, PROBABILITY, SIGMOID, SOFTMAX,
                                SOFTPLUS, transform_inplace)


@njit(cache=True, nogil=True, inline="always")
def _weight(w, weighted, i):
    # ``weighted`` is loop-invariant: LLVM unswitches the loop, and both copies vectorise
    return w[i] if weighted else 1.0


# The gradient kernels are serial kernels over a range of rows. The tree learner's rounds run
# them on the threads by ``parallel.run_ranges``, as its own kernels: after a ``prange``
# kernel, Numba's OpenMP workers spin for some milliseconds, and the learner's first kernel
# of the round (the root's histogram, on Python threads) ran at one core's speed beside them
# (sparse root: 7 -> 12 ms). After the fused grower (``prange`` kernels) it is the other way
# round, so there one ``prange`` kernel runs them over blocks of rows (``_grad_blocks``).
# Each kernel loops over its slices from 0, so that the index is known not negative and the
# loop vectorises (``range(i0, i1)`` over the whole arrays kept a negative-index check per
# row: 4.5x slower).
@njit(cache=True, nogil=True, inline="always")
def _rows(i0, i1, pred, y, w, weighted, g, h):
    """The slices ``i0:i1`` of a gradient kernel's arrays (``w`` only if ``weighted``)."""
    return pred[i0:i1], y[i0:i1], (w[i0:i1] if weighted else w), g[i0:i1], h[i0:i1]


@njit(cache=True, nogil=True, error_model="numpy")
def _grad_squared(i0, i1, pred, y, w, weighted, g, h):
    pred, y, w, g, h = _rows(i0, i1, pred, y, w, weighted, g, h)
    for i in range(y.shape[0]):
        wi = _weight(w, weighted, i)
        g[i] = (pred[i] - y[i]) * wi
        h[i] = wi


@njit(cache=True, nogil=True, error_model="numpy")
def _grad_absolute(i0, i1, pred, y, w, weighted, g, h):
    pred, y, w, g, h = _rows(i0, i1, pred, y, w, weighted, g, h)
    for i in range(y.shape[0]):
        wi = _weight(w, weighted, i)
        r = pred[i] - y[i]
        g[i] = (1.0 if r > 0 else (-1.0 if r < 0 else 0.0)) * wi
        h[i] = wi


@njit(cache=True, nogil=True, error_model="numpy")
def _grad_huber(i0, i1, pred, y, w, weighted, slope, g, h):
    pred, y, w, g, h = _rows(i0, i1, pred, y, w, weighted, g, h)
    for i in range(y.shape[0]):
        wi = _weight(w, weighted, i)
        r = pred[i] - y[i]
        z = 1.0 + (r / slope) ** 2
        s = math.sqrt(z)
        g[i] = r / s * wi
        h[i] = wi / (z * s)


@njit(cache=True, nogil=True, error_model="numpy")
def _grad_logistic(i0, i1, pred, y, w, weighted, g, h):
    """Sigmoid through ``exp_fast`` (vectorised; within one ulp of ``math.exp``, and the
    float32 gradients come out the same): 4.7 -> 1.1 ms per 1M rows (2 threads)."""
    pred, y, w, g, h = _rows(i0, i1, pred, y, w, weighted, g, h)
    for i in range(y.shape[0]):
        wi = _weight(w, weighted, i)
        p = 1.0 / (1.0 + exp_fast(-pred[i]))
        g[i] = (p - y[i]) * wi
        h[i] = max(p * (1.0 - p), 1e-16) * wi


# The log-link losses of counts and positive amounts (as XGBoost's and LightGBM's, which agree
# on them): the margin is the log of the prediction.
@njit(cache=True, nogil=True, error_model="numpy")
def _grad_poisson(i0, i1, pred, y, w, weighted, hess_scale, g, h):
    """Poisson: g = exp(f) - y, h = exp(f) * ``hess_scale`` (exp of ``poisson_max_delta_step``,
    which keeps the first steps from a margin far below a row's log count short)."""
    pred, y, w, g, h = _rows(i0, i1, pred, y, w, weighted, g, h)
    for i in range(y.shape[0]):
        wi = _weight(w, weighted, i)
        e = exp_fast(pred[i])
        g[i] = (e - y[i]) * wi
        h[i] = e * hess_scale * wi


@njit(cache=True, nogil=True, error_model="numpy")
def _grad_gamma(i0, i1, pred, y, w, weighted, g, h):
    """Gamma (deviance, log link): g = 1 - y exp(-f), h = y exp(-f)."""
    pred, y, w, g, h = _rows(i0, i1, pred, y, w, weighted, g, h)
    for i in range(y.shape[0]):
        wi = _weight(w, weighted, i)
        r = y[i] * exp_fast(-pred[i])
        g[i] = (1.0 - r) * wi
        h[i] = r * wi


@njit(cache=True, nogil=True, error_model="numpy")
def _grad_tweedie(i0, i1, pred, y, w, weighted, rho, g, h):
    """Tweedie of variance power ``rho`` in [1, 2): g = -y exp((1-rho) f) + exp((2-rho) f),
    h = -y (1-rho) exp((1-rho) f) + (2-rho) exp((2-rho) f)."""
    pred, y, w, g, h = _rows(i0, i1, pred, y, w, weighted, g, h)
    for i in range(y.shape[0]):
        wi = _weight(w, weighted, i)
        e1 = exp_fast((1.0 - rho) * pred[i])
        e2 = exp_fast((2.0 - rho) * pred[i])
        g[i] = (e2 - y[i] * e1) * wi
        h[i] = ((2.0 - rho) * e2 - y[i] * (1.0 - rho) * e1) * wi


@njit(cache=True, nogil=True, error_model="numpy")
def _grad_quantile(i0, i1, pred, y, w, weighted, alpha, g, h):
    """The pinball loss of quantile ``alpha``: g = 1 - alpha where the prediction is at or
    above the label, -alpha below it; h = 1 (the leaves are refit to the residuals'
    quantile)."""
    pred, y, w, g, h = _rows(i0, i1, pred, y, w, weighted, g, h)
    for i in range(y.shape[0]):
        wi = _weight(w, weighted, i)
        g[i] = ((1.0 - alpha) if pred[i] - y[i] >= 0 else -alpha) * wi
        h[i] = wi


_NO_WEIGHTS = np.ones(1)


def _weight_args(w):
    """(array, weighted) for the gradient kernels; ``w`` is None for unit weights."""
    return (_NO_WEIGHTS, False) if w is None else (w, True)


SOFTMAX_ROWS = 512  # rows of one task of the softmax gradients


@njit(cache=True, nogil=True, error_model="numpy")
def _grad_softmax(b0, b1, pred, y, w, weighted, hess_factor, g, h):
    """Softmax gradients of blocks ``b0 .. b1 - 1`` of SOFTMAX_ROWS rows (hessian
    ``hess_factor`` p (1 - p): see ``Softmax``), a block at a time, each step a loop along
    the rows of one class (contiguous in the (K, n) arrays), so that it vectorises: the exps through
    ``exp_fast`` (within one ulp of ``math.exp``; the float32 gradients come out the same, as
    the logistic's). Each exp is kept in g (float32) until the sum is known, and the sum is
    taken over the classes in order, as the row-at-a-time loop did: 10 -> 2.5 ms a round of
    8 classes x 200,000 rows (2 threads)."""
    K, n = pred.shape
    for b in range(b0, b1):
        i0 = b * SOFTMAX_ROWS
        m_rows = min(n, i0 + SOFTMAX_ROWS) - i0
        m = np.empty(SOFTMAX_ROWS)
        s = np.zeros(SOFTMAX_ROWS)
        p0 = pred[0, i0:i0 + m_rows]
        for i in range(m_rows):
            m[i] = p0[i]
        for k in range(1, K):
            pk = pred[k, i0:i0 + m_rows]
            for i in range(m_rows):
                m[i] = max(m[i], pk[i])
        for k in range(K):
            pk = pred[k, i0:i0 + m_rows]
            gk = g[k, i0:i0 + m_rows]
            for i in range(m_rows):
                e = exp_fast(pk[i] - m[i])
                gk[i] = e
                s[i] += e
        yb = y[i0:i0 + m_rows]
        for k in range(K):
            gk = g[k, i0:i0 + m_rows]
            hk = h[k, i0:i0 + m_rows]
            for i in range(m_rows):
                wi = _weight(w, weighted, i0 + i)
                p = gk[i] / s[i]
                t = 1.0 if k == np.int64(yb[i]) else 0.0
                gk[i] = (p - t) * wi
                hk[i] = max(hess_factor * p * (1.0 - p), 1e-16) * wi


# the one-output kernels of _grad_range
SQUARED, ABSOLUTE, HUBER, LOGISTIC, POISSON, GAMMA, TWEEDIE, QUANTILE = range(8)
GRAD_BLOCK = 16384  # rows of one task of _grad_blocks


@njit(cache=True, nogil=True, error_model="numpy")
def _grad_range(i0, i1, kind, pred, y, w, weighted, param, g, h):
    """Rows ``i0 .. i1 - 1`` of the one-output gradient kernel ``kind``; ``param`` is the
    kernel's own number, where it takes one (Huber's slope, Poisson's hessian scale,
    Tweedie's variance power, the quantile). The log-link and quantile kinds are
    ``_grad_range_more``'s: one dispatcher of all eight compiled them all on a first fit of
    any (2.5 s more cold start)."""
    if kind == SQUARED:
        _grad_squared(i0, i1, pred, y, w, weighted, g, h)
    elif kind == ABSOLUTE:
        _grad_absolute(i0, i1, pred, y, w, weighted, g, h)
    elif kind == HUBER:
        _grad_huber(i0, i1, pred, y, w, weighted, param, g, h)
    else:
        _grad_logistic(i0, i1, pred, y, w, weighted, g, h)


@njit(cache=True, nogil=True, error_model="numpy")
def _grad_range_more(i0, i1, kind, pred, y, w, weighted, param, g, h):
    """``_grad_range`` of the kinds POISSON, GAMMA, TWEEDIE, QUANTILE."""
    if kind == POISSON:
        _grad_poisson(i0, i1, pred, y, w, weighted, param, g, h)
    elif kind == GAMMA:
        _grad_gamma(i0, i1, pred, y, w, weighted, g, h)
    elif kind == TWEEDIE:
        _grad_tweedie(i0, i1, pred, y, w, weighted, param, g, h)
    else:
        _grad_quantile(i0, i1, pred, y, w, weighted, param, g, h)


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def _grad_blocks(kind, pred, y, w, weighted, param, g, h):
    """``_grad_range`` over every row, in a ``prange`` over blocks of rows."""
    n = y.shape[0]
    for b in prange((n + GRAD_BLOCK - 1) // GRAD_BLOCK):
        _grad_range(b * GRAD_BLOCK, min(n, (b + 1) * GRAD_BLOCK), kind, pred, y, w, weighted,
                    param, g, h)


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def _grad_blocks_more(kind, pred, y, w, weighted, param, g, h):
    """``_grad_range_more`` over every row, in a ``prange`` over blocks of rows."""
    n = y.shape[0]
    for b in prange((n + GRAD_BLOCK - 1) // GRAD_BLOCK):
        _grad_range_more(b * GRAD_BLOCK, min(n, (b + 1) * GRAD_BLOCK), kind, pred, y, w,
                         weighted, param, g, h)


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def _softmax_blocks(pred, y, w, weighted, hess_factor, g, h):
    """``_grad_softmax`` over every block of rows, in a ``prange``."""
    for b in prange((y.shape[0] + SOFTMAX_ROWS - 1) // SOFTMAX_ROWS):
        _grad_softmax(b, b + 1, pred, y, w, weighted, hess_factor, g, h)


_KERNELS = {SQUARED: _grad_squared, ABSOLUTE: _grad_absolute, LOGISTIC: _grad_logistic,
            GAMMA: _grad_gamma}
_KERNELS_OF_A_PARAM = {HUBER: _grad_huber, POISSON: _grad_poisson, TWEEDIE: _grad_tweedie,
                       QUANTILE: _grad_quantile}


def _one_output(kind, pred, y, w, g, h, parallel, param=0.0):
    """g, h of every row by the kernel ``kind``: in one ``prange`` kernel if ``parallel``,
    else on the threads by ``run_ranges``. The serial route calls the kind's own kernel, not
    ``_grad_range``: that compiled all four kernels on a first fit (2.8 s cold, of which the
    one in use took 0.4-0.8 s)."""
    pred, weighted_args, param = pred[0], _weight_args(w), float(param)
    if parallel:
        blocks = _grad_blocks_more if kind >= POISSON else _grad_blocks
        blocks(kind, pred, y, *weighted_args, param, g[0], h[0])
    elif kind in _KERNELS_OF_A_PARAM:
        run_ranges(_KERNELS_OF_A_PARAM[kind], y.shape[0], pred, y, *weighted_args, param,
                   g[0], h[0])
    else:
        run_ranges(_KERNELS[kind], y.shape[0], pred, y, *weighted_args, g[0], h[0])


def _xgboost_quantile(values, weights, alpha):
    """Quantile ``alpha`` of ``values`` by XGBoost's rule: without sample weights (None),
    linear interpolation at ``alpha (n + 1)`` (its ``common::Quantile``, numpy's 'weibull');
    with weights, the first value whose cumulative weight reaches ``alpha`` of the total
    (``common::WeightedQuantile``, no interpolation)."""
    if alpha == 0.5:
        return _weighted_median(values, weights)
    if weights is None:
        return float(np.quantile(values, alpha, method="weibull")) if values.size else 0.0
    order = np.argsort(values, kind="mergesort")
    v = values[order]
    cw = np.cumsum(weights[order])
    if cw[-1] <= 0:
        return 0.0
    return float(v[min(int(np.searchsorted(cw, alpha * cw[-1])), v.size - 1)])


def _weighted_median(values, weights):
    """The median of ``values``: without sample weights (``weights`` None) the midpoint of
    the two middle values for an even count, as XGBoost's unweighted quantile (``np.median``;
    the lower one gave an L1 leaf of -0.029 where XGBoost's was +0.025); with weights, even
    all equal ones, the first value whose cumulative weight reaches half the total, as
    XGBoost's weighted quantile (the midpoint was 1.52 off XGBoost's model after 10 rounds
    with ``weight=ones``)."""
    if weights is None:
        return float(np.median(values)) if values.size else 0.0
    order = np.argsort(values, kind="mergesort")
    v = values[order]
    cw = np.cumsum(weights[order])
    if cw[-1] <= 0:
        return 0.0
    return float(v[np.searchsorted(cw, 0.5 * cw[-1])])



def xgboost_logit(p):
    """The margins of logistic base scores ``p`` (in [0, 1]) as XGBoost makes them: bounded
    to [1e-6, 1 - 1e-6], then ``-log(1/p - 1)``, in float32. Taken as given, 1e-9 started
    6.9 below XGBoost's margin, and 0.9999999 2.4 above it."""
    eps = np.float32(1e-6)
    p = np.clip(np.asarray(p, dtype=np.float32), eps, np.float32(1) - eps)
    return (-np.log(np.float32(1) / p - np.float32(1))).astype(np.float64)

class Objective:
    """A registered objective. The class attributes describe it; a trainable one implements
    the methods below too (training makes an instance)."""
    name = ""  # canonical name, also the name written in model files
    task = "regression"  # or "binary", "multiclass", "ranking": which estimators may train it
    # a model's outputs: "one"; "per_class" (two or more); "any" (one per class, even one class)
    outputs = "one"
    transform_code = IDENTITY  # the output transform (hardwood.predict.transform)
    trainable = True  # False: an imported models' objective, predicted but not trained
    default_metric = "rmse"  # None where not trainable
    n_outputs = 1
    refit_leaves = False  # leaf values recomputed from residuals after growth

    def weighs(self, w):
        """Whether the leaves' refit (``refit_leaves``) takes the sample weights ``w``."""
        return w is not None

    def __init__(self, params):
        self.params = params

    def _named_as(self, names) -> bool:
        """Whether training named this objective by one of ``names`` (LightGBM's names,
        under which it trains as LightGBM does)."""
        objective = self.params.get("objective")
        return isinstance(objective, str) and objective.lower() in names

    def check_labels(self, y):
        pass

    def base_score(self, y, w):
        """Intercept in margin space."""
        return np.zeros(self.n_outputs)

    def margin_from_user(self, base_score):
        return np.full(self.n_outputs, float(base_score))

    def gradient_weight(self, y, w):
        """The weights the gradients take: the sample weights ``w`` (None: unit weights),
        which the binary objective scales by ``scale_pos_weight`` on positive rows."""
        return w

    def gradients(self, pred, y, w, g, h, parallel=False):
        """g, h of every row (``w``: sample weights, None for unit weights). ``parallel``:
        in a ``prange`` kernel (after the fused grower), else in serial kernels on Python
        threads (after the tree learner); the same values either way."""
        raise NotImplementedError

    def transform(self, margin):
        """Margin (n_rows, n_outputs) -> prediction ``output='value'``."""
        return transform_margin(self.name, margin)


class SquaredError(Objective):
    name = "reg:squarederror"

    def base_score(self, y, w):
        return np.array([np.average(y, weights=w)])

    def gradients(self, pred, y, w, g, h, parallel=False):
        _one_output(SQUARED, pred, y, w, g, h, parallel)


def _lightgbm_median(values, weights):
    return _lightgbm_quantile(values, weights, 0.5)


def _lightgbm_quantile(values, weights, alpha):
    """Quantile ``alpha`` by LightGBM's rule (4.7, its medians measured against it; its
    quantiles, ``alpha`` in float32, against its ``quantile`` objective): without weights,
    linear interpolation at ``alpha (n - 1)`` (``np.quantile``; ``np.median`` for 0.5); with
    weights (taken as float32, as LightGBM stores them), over the values sorted with their
    cumulative weights ``cw``: the first value whose ``cw`` passes ``alpha`` of the total
    (``half`` below), or the first or last value where that is one; otherwise, between that
    value ``b`` and the one before it ``a``, ``a + (half - cw[a]) / w[b] * (b - a)`` where
    ``b`` weighs at least 1, else ``a``. (1..5 with weights 1 gives a median of 2.5, where
    XGBoost's rule gives 3.)"""
    n = values.size
    if weights is None or n <= 1:
        if n == 1:
            return float(values[0])
        if alpha == 0.5:
            return _weighted_median(values, None)
        return float(np.quantile(values, alpha)) if n else 0.0
    order = np.argsort(values, kind="mergesort")
    v = values[order]
    cw = np.cumsum(weights[order].astype(np.float32).astype(np.float64))
    half = cw[-1] * alpha
    pos = min(int(np.searchsorted(cw, half, side="right")), n - 1)
    if pos == 0 or pos == n - 1:
        return float(v[pos])
    a, b = float(v[pos - 1]), float(v[pos])
    step = cw[pos] - cw[pos - 1]
    return a + (half - cw[pos - 1]) / step * (b - a) if step >= 1.0 else a


# LightGBM's names of the L1 objective: under them it takes LightGBM's medians
LIGHTGBM_L1 = ("l1", "regression_l1", "mean_absolute_error", "mae")


class AbsoluteError(Objective):
    """The absolute error; its leaves are refit to the median of their residuals. Under
    XGBoost's name (``reg:absoluteerror``) with XGBoost's medians, under LightGBM's (``l1``,
    ``regression_l1``, ``mae``) with LightGBM's (``_lightgbm_median``; its base score in
    float32, as LightGBM's labels): XGBoost's rule made a leaf of 5 rows 0.25 off LightGBM's,
    and with weights every leaf could differ."""
    name = "reg:absoluteerror"
    default_metric = "mae"
    refit_leaves = True

    def __init__(self, params):
        super().__init__(params)
        self.lightgbm = self._named_as(LIGHTGBM_L1)
        self._median = _lightgbm_median if self.lightgbm else _weighted_median

    def weighs(self, w):
        """Whether the medians take the sample weights ``w``: any weights under XGBoost's
        name; under LightGBM's, not weights that are all 1, which LightGBM's Python package
        drops (a numpy array of ones trains LightGBM's unweighted model)."""
        return w is not None and not (self.lightgbm and np.all(w == 1.0))

    def base_score(self, y, w):
        m = self._median(y, w if self.weighs(w) else None)
        return np.array([float(np.float32(m)) if self.lightgbm else m])  # LightGBM's float32

    def gradients(self, pred, y, w, g, h, parallel=False):
        _one_output(ABSOLUTE, pred, y, w, g, h, parallel)

    def leaf_value(self, residual, weight, k=0):
        """The optimum of a leaf of output ``k`` over its residuals."""
        return self._median(residual, weight)


class Quantile(AbsoluteError):
    """The pinball loss of the quantiles ``quantile_alpha`` (XGBoost's ``reg:quantileerror``,
    which needs it, one output per quantile of a list; LightGBM's ``quantile``, whose
    ``alpha`` it is, 0.9 by default), taken in float32 as both libraries take them. As the
    absolute error (its 0.5 up to a factor), its leaves are refit to the quantile of their
    residuals, and each output starts from the labels' quantile, by the rule of the library
    whose name trained it (``_xgboost_quantile``, ``_lightgbm_quantile``)."""
    name = "reg:quantileerror"
    default_metric = "quantile"
    outputs = "any"  # one per quantile

    def __init__(self, params):
        Objective.__init__(self, params)
        self.lightgbm = self._named_as(("quantile",))
        alpha = params.get("quantile_alpha")  # (LightGBM's 0.9 set by train.params)
        if alpha is None:
            raise ValueError("objective 'reg:quantileerror' needs quantile_alpha, the "
                             "quantile in (0, 1), as XGBoost's ('quantile', LightGBM's name, "
                             "takes alpha, 0.9 by default)")
        alphas = alpha if isinstance(alpha, (list, tuple)) else [alpha]
        self.alphas = [float(np.float32(a)) for a in alphas]
        self.n_outputs = len(self.alphas)
        self._rule = _lightgbm_quantile if self.lightgbm else _xgboost_quantile

    def base_score(self, y, w):
        ws = w if self.weighs(w) else None
        q = [self._rule(y, ws, a) for a in self.alphas]
        return np.array([float(np.float32(v)) for v in q] if self.lightgbm else q)

    def gradients(self, pred, y, w, g, h, parallel=False):
        for k, alpha in enumerate(self.alphas):
            _one_output(QUANTILE, pred[k:k + 1], y, w, g[k:k + 1], h[k:k + 1], parallel, alpha)

    def leaf_value(self, residual, weight, k=0):
        return self._rule(residual, weight, self.alphas[k])


class PseudoHuber(Objective):
    name = "reg:pseudohubererror"
    default_metric = "mae"

    def base_score(self, y, w):
        return np.array([_weighted_median(y, w)])

    def gradients(self, pred, y, w, g, h, parallel=False):
        _one_output(HUBER, pred, y, w, g, h, parallel, self.params.get("huber_slope", 1.0))


class _LogLink(Objective):
    """The losses of counts and positive amounts, whose margin is the log of the prediction
    (``count:poisson``, ``reg:gamma``, ``reg:tweedie``; LightGBM's ``poisson``, ``gamma``,
    ``tweedie``). Both libraries start from the log of the (weighted) label mean: XGBoost
    in float32 (its base score is stored as the mean), LightGBM in float64. Labels are
    checked by the rule of the library whose name trained them: XGBoost's gamma needs
    positive labels, LightGBM's (and both Poisson and Tweedie) non-negative ones with a
    positive sum."""
    transform_code = EXP
    kind = None  # the gradient kernel of _grad_range
    positive_labels = False  # XGBoost's name: labels > 0, not >= 0
    lightgbm_names = ()

    def __init__(self, params):
        super().__init__(params)
        # the name training gave (the booster then keeps the canonical one in the params:
        # LightGBM's 'tweedie' was named 'reg:tweedie' in its label errors)
        self.given_name = params.get("objective", self.name)
        self.lightgbm = self._named_as(self.lightgbm_names)
        if self.lightgbm:  # LightGBM's metric of its own name (poisson, gamma, tweedie)
            self.default_metric = self.lightgbm_names[0]

    def check_labels(self, y):
        if self.positive_labels and not self.lightgbm:
            bad, wanted = y <= 0, "positive labels (> 0)"
        else:
            bad, wanted = y < 0, "labels >= 0"
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"objective {self.given_name!r} needs "
                             f"{wanted}, found {float(y[i]):g} at row {i}")
        if not np.any(y > 0):
            raise ValueError(f"objective {self.given_name!r} needs "
                             "some label above 0: every label is 0, whose log (the base "
                             "score) is -inf")

    def base_score(self, y, w):
        mean = float(np.average(y, weights=w))
        if not mean > 0.0:  # (labels above 0 all of weight 0: log(0) was a bare domain error)
            raise ValueError(f"objective {self.given_name!r} starts "
                             "from the log of the labels' weighted mean, which is 0: every "
                             "row with a label above 0 has weight 0")
        if self.lightgbm:
            return np.array([math.log(mean)])
        return np.array([float(np.log(np.float32(mean)))])

    def margin_from_user(self, base_score):
        m = float(base_score)
        if not m > 0.0:
            raise ValueError(f"base_score for {self.name} is a mean of the labels, above 0 "
                             f"(its log is the margin), got {m}")
        return np.array([float(np.log(np.float32(m)))])

    def param(self):
        """The kernel's number (``_grad_range``'s ``param``)."""
        return 0.0

    def gradients(self, pred, y, w, g, h, parallel=False):
        _one_output(self.kind, pred, y, w, g, h, parallel, self.param())


class Poisson(_LogLink):
    """Poisson regression of counts: its hessian is scaled by exp(``poisson_max_delta_step``)
    (0.7: XGBoost's ``max_delta_step`` of count:poisson, LightGBM's
    ``poisson_max_delta_step``)."""
    name = "count:poisson"
    default_metric = "poisson-nloglik"
    kind = POISSON
    lightgbm_names = ("poisson",)

    def param(self):
        return math.exp(float(self.params.get("poisson_max_delta_step", 0.7)))


class Gamma(_LogLink):
    """Gamma regression (the gamma deviance with a log link)."""
    name = "reg:gamma"
    default_metric = "gamma-deviance"  # XGBoost 3's
    kind = GAMMA
    positive_labels = True
    lightgbm_names = ("gamma",)


def tweedie_metric(rho, lightgbm=False):
    """The default metric of ``reg:tweedie`` of power ``rho``: XGBoost's
    ``tweedie-nloglik@rho``, or LightGBM's ``tweedie`` under its name."""
    return "tweedie" if lightgbm else f"tweedie-nloglik@{float(rho)!r}"


class Tweedie(_LogLink):
    """Tweedie regression of variance power ``tweedie_variance_power`` (1.5; in [1, 2)):
    amounts with a mass at 0, such as insurance claims. Its default metric carries the power,
    as XGBoost's (``tweedie-nloglik@1.5``)."""
    name = "reg:tweedie"
    default_metric = "tweedie-nloglik@1.5"
    kind = TWEEDIE
    lightgbm_names = ("tweedie",)

    def __init__(self, params):
        super().__init__(params)
        # (the power as Python writes it back: 1.9999999 as ':g' wrote it, '@2', was refused)
        self.default_metric = tweedie_metric(self.param(), self.lightgbm)

    def param(self):
        return float(self.params.get("tweedie_variance_power", 1.5))


def class_scales(y, scale_pos_weight=1.0, is_unbalance=False):
    """(negative, positive): the factors of the binary classes' weights in the gradients.
    ``scale_pos_weight`` (XGBoost's and LightGBM's) scales the rows of label 1;
    ``is_unbalance`` (LightGBM's) the smaller class's by the ratio of the counts of all the
    labels ``y``."""
    scale = [1.0, float(scale_pos_weight)]
    n_pos = int(np.count_nonzero(y == 1))
    n_neg = y.shape[0] - n_pos
    if is_unbalance and n_pos and n_neg:
        scale[int(n_pos < n_neg)] = max(n_pos, n_neg) / min(n_pos, n_neg)
    return scale


class BinaryLogistic(Objective):
    """The logistic loss. With ``scale_pos_weight``, its base score follows the library whose
    name trained it: under XGBoost's (``binary:logistic``) one Newton step from margin 0 over
    the scaled weights, as XGBoost's; under LightGBM's (``binary``) the weighted label mean,
    which ignores the scale, as LightGBM's."""
    name = "binary:logistic"
    task = "binary"
    transform_code = SIGMOID
    default_metric = "logloss"

    def __init__(self, params):
        super().__init__(params)
        self.lightgbm = self._named_as(("binary",))

    def check_labels(self, y):
        if np.any((y < 0) | (y > 1)):
            raise ValueError(f"{self.name} needs labels in [0, 1]; for other label values "
                             "use GBDTClassifier, which encodes them")
        if np.all(y == y[0]):
            raise ValueError(f"{self.name} needs both classes in the labels; found a single "
                             f"class ({y[0]:g})")

    def base_score(self, y, w):
        if self.params.get("scale_pos_weight", 1.0) != 1.0 and not self.lightgbm:
            scaled = self.gradient_weight(y, w)  # -sum(g) / sum(h) at margin 0
            return np.array([4.0 * float(np.sum(scaled * (y - 0.5)) / np.sum(scaled))])
        p = float(np.clip(np.average(y, weights=w), 1e-6, 1 - 1e-6))
        return np.array([math.log(p / (1 - p))])

    def margin_from_user(self, base_score):
        p = float(base_score)
        if not 0.0 < p < 1.0:
            raise ValueError(f"base_score for {self.name} is a probability in (0, 1), got {p}")
        return xgboost_logit(np.array([p]))

    def gradient_weight(self, y, w):
        """The sample weights times :func:`class_scales` (``params['class_scale']`` where
        it was fixed from all the labels: a Dask worker sees its partition's only). The
        scaled weights are kept for the next round."""
        p = self.params
        if p.get("scale_pos_weight", 1.0) == 1.0 and not p.get("is_unbalance", False):
            return w
        kept = getattr(self, "_scaled", None)
        if kept is not None and kept[0] is y and kept[1] is w:
            return kept[2]
        scale = np.asarray(p.get("class_scale") or class_scales(
            y, p.get("scale_pos_weight", 1.0), p.get("is_unbalance", False)))
        scaled = np.ones(y.shape[0]) if w is None else np.array(w, dtype=np.float64)
        scaled *= scale[(y == 1).astype(np.intp)]
        self._scaled = (y, w, scaled)
        return scaled

    def gradients(self, pred, y, w, g, h, parallel=False):
        _one_output(LOGISTIC, pred, y, self.gradient_weight(y, w), g, h, parallel)


# LightGBM's names of the softmax objective: under them it trains as LightGBM does
LIGHTGBM_SOFTMAX = ("multiclass", "softmax")


class Softmax(Objective):
    """Softmax over ``num_class`` outputs. Under XGBoost's names (``multi:softprob``,
    ``multi:softmax``) as XGBoost: hessian 2 p (1 - p), base scores 0. Under LightGBM's
    (``multiclass``, ``softmax``) as LightGBM: hessian K / (K - 1) p (1 - p), so leaves step
    2 (K - 1) / K times further (8 classes: 1.75x; at 50 rounds of the multiclass benchmark,
    accuracy 0.7316 as XGBoost's model, 0.7742 as LightGBM's 0.7755), and base scores the
    log of the classes' (weighted) shares. XGBoost's base scores (>= 3.1) are those logs
    centred, in float32 (``base_score``); hardwood's were 0, 0.066 off XGBClassifier's
    probabilities after 5 rounds."""
    name = "multi:softprob"
    task = "multiclass"
    outputs = "per_class"
    transform_code = SOFTMAX
    default_metric = "mlogloss"

    def __init__(self, params):
        super().__init__(params)
        K = self.n_outputs = int(params["num_class"])
        self.lightgbm = self._named_as(LIGHTGBM_SOFTMAX)
        self.hess_factor = K / (K - 1.0) if self.lightgbm else 2.0

    def check_labels(self, y):
        K = self.n_outputs
        if np.any(y != np.floor(y)) or np.any(y < 0) or np.any(y >= K):
            raise ValueError(f"{self.name} needs integer labels in [0, num_class={K}); use "
                             "GBDTClassifier to encode arbitrary labels")
        if np.all(y == y[0]):
            raise ValueError(f"{self.name} needs at least two classes; found a single class "
                             f"({y[0]:g})")

    def base_score(self, y, w):
        share = np.bincount(y.astype(np.int64), weights=None if w is None else
                            np.broadcast_to(w, y.shape), minlength=self.n_outputs)
        share = share / share.sum()
        if self.lightgbm:
            return np.log(np.maximum(share, 1e-15))  # LightGBM's kEpsilon
        # XGBoost's InitEstimation: ln(share + kRtEps) - their mean, in float32
        logs = np.log(share.astype(np.float32) + np.float32(1e-6))
        return (logs - np.mean(logs, dtype=np.float32)).astype(np.float64)

    def gradients(self, pred, y, w, g, h, parallel=False):
        args = (pred, y, *_weight_args(w), self.hess_factor, g, h)
        if parallel:
            _softmax_blocks(*args)
        else:
            run_ranges(_grad_softmax, -(-y.shape[0] // SOFTMAX_ROWS), *args)


class _Ranking(Objective):
    """LambdaMART (rank:ndcg) and RankNet (rank:pairwise) over query groups
    (``hardwood.ranking``); the Booster hands the training set's queries to ``set_queries``."""
    task = "ranking"
    default_metric = "ndcg@10"
    ndcg = True

    def __init__(self, params):
        super().__init__(params)
        self.ptr = None
        self.sigmoid = float(params.get("sigmoid", 1.0))
        self.truncation = int(params.get("lambdarank_truncation_level",
                                         ranking.DEFAULT_TRUNCATION))
        self.norm = bool(params.get("lambdarank_norm", True))
        if not self.sigmoid > 0 or not math.isfinite(self.sigmoid):
            raise ValueError(f"sigmoid must be a positive number, got {self.sigmoid!r}")
        if self.truncation < 1:
            raise ValueError(f"lambdarank_truncation_level must be >= 1, got {self.truncation}")
        # a level past any query's length keeps every position (2**70 was a bare
        # OverflowError in the kernels)
        self.truncation = min(self.truncation, 2**31 - 1)

    def check_labels(self, y):
        ranking.check_ranking_labels(y, self.name, self.params.get("label_gain"))
        self.gain = ranking.label_gains(self.params, y)

    def set_queries(self, ptr):
        self.ptr = ptr
        self._best_dcg = None  # each query's ideal DCG, at the first gradients

    def gradients(self, pred, y, w, g, h, parallel=False):
        if self._best_dcg is None:
            self._best_dcg = ranking.ideal_dcgs(y, self.ptr, self.gain, self.truncation)
        ranking.lambda_gradients(pred[0], y, *_weight_args(w), self.ptr, self.gain,
                                 self._best_dcg, self.sigmoid, self.truncation, self.ndcg,
                                 self.norm, g[0], h[0], parallel=parallel)


class RankNDCG(_Ranking):
    name = "rank:ndcg"


class RankPairwise(_Ranking):
    name = "rank:pairwise"
    ndcg = False


class PredictOnly(Objective):
    """An objective of imported models (XGBoost, LightGBM, scikit-learn) that hardwood predicts
    (its output transform) but does not train: no gradients, no default metric."""
    trainable = False
    default_metric = None

    def __init__(self, params):
        raise ValueError(f"hardwood cannot train objective {self.name!r}")


def _predict_only(name, task, transform_code, outputs="one"):
    return type(name, (PredictOnly,), {"name": name, "task": task, "outputs": outputs,
                                      "transform_code": transform_code})


OBJECTIVES = {o.name: o for o in (
    SquaredError, AbsoluteError, Quantile, PseudoHuber, Poisson, Gamma, Tweedie,
    BinaryLogistic, Softmax, RankNDCG, RankPairwise,
    _predict_only("reg:squaredlogerror", "regression", IDENTITY),
    _predict_only("reg:logistic", "regression", SIGMOID),
    _predict_only("survival:cox", "regression", EXP),  # (XGBoost's: hazard ratios exp(margin))
    _predict_only("cross_entropy_lambda", "regression", SOFTPLUS),
    _predict_only("binary:logitraw", "binary", IDENTITY),
    _predict_only("binary:hinge", "binary", HINGE),
    _predict_only("multi:softmax", "multiclass", ARGMAX, "per_class"),
    _predict_only("multiclassova", "multiclass", SIGMOID, "per_class"),
    _predict_only("multi:proba", "multiclass", PROBABILITY, "any"),  # forests' probabilities
    _predict_only("rank:map", "ranking", IDENTITY),
)}
# Training aliases (XGBoost, LightGBM and scikit-learn names); model files hold canonical names
# only. Training "multi:softmax" trains multi:softprob's trees into a model of objective
# multi:softmax, which predicts the class index, as XGBoost's does (the estimators train
# multi:softprob for it: their predict_proba needs the probabilities).
ALIASES = {
    "regression": "reg:squarederror", "squared_error": "reg:squarederror", "l2": "reg:squarederror",
    "regression_l2": "reg:squarederror", "mse": "reg:squarederror",
    "mean_squared_error": "reg:squarederror",
    "reg:linear": "reg:squarederror", "mae": "reg:absoluteerror", "l1": "reg:absoluteerror",
    "absolute_error": "reg:absoluteerror", "regression_l1": "reg:absoluteerror",
    "mean_absolute_error": "reg:absoluteerror",
    "binary": "binary:logistic", "multiclass": "multi:softprob", "softmax": "multi:softprob",
    "multi:softmax": "multi:softprob", "lambdarank": "rank:ndcg",
    "poisson": "count:poisson", "gamma": "reg:gamma", "tweedie": "reg:tweedie",
    "quantile": "reg:quantileerror",
}
# what each task trains when no objective is given (training parameters, estimators)
DEFAULT_OBJECTIVE = {o.task: o.name for o in (SquaredError, BinaryLogistic, Softmax, RankNDCG)}


def names(task=None, trainable=None):
    """Canonical names of the registered objectives, optionally of one task, trainable or not."""
    return [o.name for o in OBJECTIVES.values()
            if task in (None, o.task) and trainable in (None, o.trainable)]


def is_ranking(name) -> bool:
    """Whether ``name`` (a model's objective or an alias) is a ranking objective."""
    return isinstance(name, str) and ALIASES.get(name, name) in names(task="ranking")


# names of other libraries' objectives that hardwood does not train, with what to use instead
_NOT_ALIASES = {
    # LightGBM's "huber" is the Huber loss (delta alpha=0.9, unit hessian); it was an alias of
    # XGBoost's Pseudo-Huber, whose hessian vanishes on large residuals: with LightGBM's
    # lambda_l2=0 its leaves diverged (a mean absolute error of 985 against LightGBM's 0.28)
    "huber": "LightGBM's 'huber' is the Huber loss, which hardwood does not train; "
             "'reg:pseudohubererror' is XGBoost's Pseudo-Huber loss (its delta is huber_slope, "
             "and it needs reg_lambda > 0 where residuals are large)",
}


def objective_class(name):
    """The trainable objective class of a name or alias (``type[Objective]``)."""
    if isinstance(name, str) and name in _NOT_ALIASES:
        raise ValueError(f"objective {name!r}: {_NOT_ALIASES[name]}")
    key = ALIASES.get(name, name) if isinstance(name, str) else None
    if key not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; expected one of "
                         f"{sorted(names(trainable=True))} or an alias "
                         f"({', '.join(sorted(ALIASES))})")
    if not OBJECTIVES[key].trainable:
        raise ValueError(f"objective {name!r} is predicted for imported models but hardwood "
                         f"cannot train it; expected one of {sorted(names(trainable=True))}")
    return OBJECTIVES[key]


def lightgbm_flavoured(name) -> bool:
    """Whether ``name`` is LightGBM's for an objective it trains otherwise than XGBoost (L1's
    leaf medians, binary's base score, softmax's hessian, Poisson's trees without XGBoost's
    cap on the leaves: ``Objective._named_as``, ``train.params._xgboost_poisson_step``)."""
    return (isinstance(name, str)
            and name.lower() in LIGHTGBM_L1 + ("binary", "poisson", "quantile")
            + LIGHTGBM_SOFTMAX)


def trains_as(name):
    """The loss an objective name grows its trees by: its class's name, and whether it is
    LightGBM's flavour of it. (LightGBM's ``binary`` differs in the base score only, which
    a continued model keeps: the same loss here.)"""
    return (objective_class(name).name,
            lightgbm_flavoured(name) and name.lower() != "binary")


def get_objective(name, params) -> Objective:
    return objective_class(name)(params)


def metric_label_problem(objective_name, n_outputs, y):
    """Why labels ``y`` cannot be scored by the metrics of a model of this objective, or None:
    a binary label beyond [0, 1] gives a negative logloss and an AUC above 1, a class code
    >= the model's classes indexes past its outputs. One class is enough here: training's
    "two classes at least" rule does not apply to the data a model is scored on."""
    o = OBJECTIVES.get(objective_name)
    task = None if o is None else o.task
    if task == "binary":
        bad = (y < 0) | (y > 1)
        wanted = "labels in [0, 1]"
    elif task == "multiclass":
        bad = (y != np.floor(y)) | (y < 0) | (y >= n_outputs)
        wanted = f"integer labels in [0, num_class={n_outputs})"
    else:
        return None
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    return f"{objective_name} needs {wanted}, found {float(y[i]):g} at row {i}"


def outputs_fit(objective_name, n_outputs) -> bool:
    """Whether a model of this objective (a registered name) may have ``n_outputs``: one,
    one per class (two or more), or any count (``Objective.outputs``)."""
    outputs = OBJECTIVES[objective_name].outputs
    return outputs == "any" or (outputs == "per_class") == (n_outputs > 1)


def transform_code(objective_name):
    """The output transform code of a model's objective (its canonical name); the identity
    for a name hardwood does not know (a Model built by hand; model files are checked)."""
    o = OBJECTIVES.get(objective_name) if isinstance(objective_name, str) else None
    return IDENTITY if o is None else o.transform_code


def transform_margin(objective_name: str, margin: np.ndarray) -> np.ndarray:
    """``output='value'`` from a model's margins (n_rows, n_outputs), through the compiled
    runtimes' kernel so that both give the same floats. One column (a single output, or the
    class index of an argmax) comes back as a vector."""
    code = transform_code(objective_name)
    if code != IDENTITY:
        margin = np.array(margin, dtype=np.float64, order="C")  # a copy: transformed in place
        transform_inplace(code, margin)
    return margin[:, 0] if margin.shape[1] == 1 or code == ARGMAX else margin
