"""An objective given as a Python function: XGBoost's ``obj=`` and LightGBM's callable
``objective``.

Each round calls ``f(margins, dataset)``: ``margins`` the training rows' raw scores, shape
``(n,)``, and ``dataset`` the training ``hardwood.Dataset`` (``get_label()``,
``get_weight()``); it returns ``(grad, hess)``, each of shape ``(n,)``: the loss's first and
second derivatives in each row's margin. Sample weights are the function's to apply, as in
both peers. The trees are grown from them as from a built-in objective's.

The model predicts the raw margins (``output='value'`` is ``'raw'``): apply the loss's link
yourself, as with XGBoost and LightGBM. Its file holds objective ``reg:squarederror`` (whose
transform is the identity), as XGBoost's does. The starting margin is ``base_score`` if given,
else XGBoost's 0.5 under ``obj=`` and LightGBM's 0 under a callable ``objective``.
One output only for now: a custom multiclass objective (``num_class``) is refused.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..objectives import SquaredError


@contextmanager
def labels_read_only(dataset):
    """The Dataset's labels and weights read-only while a user's function (``obj=``,
    ``feval=``) runs: ``get_label()`` hands out the training labels themselves, and a function
    that wrote into them (``y -= 1``) changed the data later rounds train and score on,
    without a word. The flags are restored after."""
    arrays = [a for a in (dataset.label, dataset.weight)
              if isinstance(a, np.ndarray) and a.flags.writeable]
    for a in arrays:
        a.flags.writeable = False
    try:
        yield
    finally:
        for a in arrays:
            a.flags.writeable = True


class CustomObjective(SquaredError):
    """``SquaredError``'s model (identity transform, its name in files) with the user's
    gradients."""

    def __init__(self, fn, dataset, params, keyword):
        super().__init__(params)
        self.fn, self.dataset, self.keyword = fn, dataset, keyword

    def base_score(self, y, w):  # (a user's base_score goes through margin_from_user)
        return np.array([0.5 if self.keyword == "obj" else 0.0])

    def gradients(self, pred, y, w, g, h, parallel=False):
        n = y.shape[0]
        with labels_read_only(self.dataset):
            got = self.fn(pred[0].copy(), self.dataset)
        if not (isinstance(got, tuple) and len(got) == 2):
            raise TypeError(f"the custom objective ({self.keyword}=) must return (grad, hess), "
                            f"got {type(got).__name__}")
        for name, arr, out in (("grad", got[0], g), ("hess", got[1], h)):
            a = np.asarray(arr, dtype=np.float64)
            if a.shape not in ((n,), (n, 1)):
                raise ValueError(f"the custom objective's {name} has shape {a.shape}; expected "
                                 f"({n},), one value per training row")
            bad = ~np.isfinite(a.reshape(n))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"the custom objective's {name} holds {int(bad.sum())} "
                                 f"non-finite values, the first at row {i} ({a.reshape(n)[i]})")
            if name == "hess" and np.any(a < 0):
                i = int(np.flatnonzero(a.reshape(n) < 0)[0])
                raise ValueError(f"the custom objective's hess is negative at row {i} "
                                 f"({a.reshape(n)[i]}): the leaves' Newton steps need "
                                 "hessians >= 0")
            with np.errstate(over="ignore"):
                out[0] = a.reshape(n)
            if not np.all(np.isfinite(out[0])):
                raise ValueError(f"the custom objective's {name} exceeds float32's range, "
                                 "which the gradients are kept in")
