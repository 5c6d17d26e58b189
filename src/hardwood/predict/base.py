"""``hardwood.compile(model, runtime=...)``: the compiled-model base class and the registry of
prediction runtimes.

Each runtime (Asadi, Lin, de Vries, *Runtime Optimizations for Prediction with Tree-Based
Models*) is a :class:`CompiledModel` subclass in a module of its own, next to its kernels, and
registers itself under its name with :func:`register`:

======================  =======================================================================
naive_runtime.py        ``naive``: the reference walk
struct_runtime.py       ``struct``, ``struct+``: arrays of node structs, walked with branches
pred_runtime.py         ``pred``, ``vpred``: padded trees, branch-free, rows in lanes; deep or
                        unbalanced trees take the unpadded walk of ``predict.vwalk``
quickscorer_runtime.py  ``quickscorer``: patented (US 11,106,685), run only when named
codegen_runtime.py      ``codegen``: generated if-else code
cuda_runtime.py         ``cuda``: a numba-cuda kernel (imports numba-cuda on first use)
auto.py                 ``auto``: picks a runtime per call by a cost model (never a patented one)
======================  =======================================================================

:data:`RUNTIME_MODULES` lists those modules in the order their names are shown; they are
imported by the first :func:`compile` and by ``predict.dispatch`` (none imports numba-cuda or
builds a kernel at import).

Every runtime gives the naive walk's output up to float rounding: they add the same leaf
values, and all but pred/vpred in tree order, so their sums are identical. pred/vpred add one
pass (a depth group, or the walked trees) at a time, so where a model has several, the last
bits may differ (1e-14 on a LightGBM model). ``predict`` checks only
the input: the model was checked when it was built, loaded or imported, and its layout is
fixed at compile time. For a C-contiguous float32/float64 matrix of a model without
categorical features, the only allocation is the output (pass ``out=`` to avoid even that).

One row (the latency path): ``pred``, ``vpred`` and ``auto`` (when it picks vpred) bind, at
compile time, a one-row kernel and the model packed into one byte array
(``pred.OneRowLayout``). A row of shape ``(1, n_features)``, float32 or float64, C-contiguous, is
checked by shape, dtype and layout only and goes to that kernel in one Numba call, which
allocates nothing (the output is allocated by ``predict``, or passed as ``out=``; models of
more than 128 features allocate a copy of the row). Rows with NaN take the same walk as rows
without (``pred.transposed_block``: default-left splits read a copy of the row with -inf for
NaN). Its sums are
the naive walk's, bit for bit. Other single rows (lists, frames, category columns) are
converted first and then take the same kernel.
"""
from __future__ import annotations

import importlib
import time

import numpy as np

from ..data.convert import sparse_row_blocks
from ..parallel import guard
from ..objectives import transform_code
from .naive import SERIAL_ROWS  # noqa: F401  (below it the kernels run on one thread)
from .transform import ARGMAX, transform_inplace

OUTPUTS = ("value", "raw", "leaf")

# the modules whose runtimes register themselves, in the order their names are listed
RUNTIME_MODULES = ("naive_runtime", "struct_runtime", "pred_runtime", "quickscorer_runtime",
                   "codegen_runtime", "cuda_runtime", "auto")
REGISTRY: dict = {}  # runtime name -> CompiledModel subclass


def register(cls):
    """Class decorator: ``compile(model, cls.runtime)`` builds a ``cls``."""
    name = cls.runtime
    old = REGISTRY.get(name)
    if old is not None and old is not cls and old.__qualname__ != cls.__qualname__:
        raise ValueError(f"runtime {name!r} is already registered by {old.__module__}")
    REGISTRY[name] = cls
    return cls


def _load_runtimes():
    for name in RUNTIME_MODULES:
        importlib.import_module(f"{__package__}.{name}")


def runtime_names():
    """The registered runtimes' names, in :data:`RUNTIME_MODULES` order (then any registered
    from elsewhere)."""
    _load_runtimes()
    order = {f"{__package__}.{m}": k for k, m in enumerate(RUNTIME_MODULES)}
    return tuple(sorted(REGISTRY, key=lambda n: order.get(REGISTRY[n].__module__,
                                                            len(order))))


def make(model, runtime, iteration_range=None, v=None, tree_range=None):
    """The runtime ``runtime`` of ``model`` (no argument checks: see :func:`compile`)."""
    cls = REGISTRY.get(runtime) if isinstance(runtime, str) else None
    if cls is None:
        _load_runtimes()
        cls = REGISTRY.get(runtime) if isinstance(runtime, str) else None
        if cls is None:
            raise ValueError(f"runtime must be one of {runtime_names()}, got {runtime!r}")
    kw = {"iteration_range": iteration_range, "tree_range": tree_range}
    if v is not None:
        kw["v"] = v
    return cls(model, **kw)


def compile(model, runtime="auto", *, v=None, iteration_range=None):
    """Lay ``model`` out for ``runtime`` and compile its kernels; returns an object with
    ``predict(X, output='value'|'raw'|'leaf', out=None)``, ``runtime`` and
    ``compile_seconds``. ``v``: vpred's interleave width (None: tuned)."""
    from ..model.model import Model
    if not isinstance(model, Model):
        if type(model).__module__.startswith("hardwood"):  # one of hardwood's estimators
            raise TypeError(f"compile needs a hardwood.Model, got a {type(model).__name__}: "
                            "pass its fitted model, compile(estimator.model_)")
        raise TypeError(f"compile needs a hardwood.Model, got {type(model).__name__}; "
                        "use hardwood.import_model for XGBoost/LightGBM/scikit-learn models")
    if v is not None and runtime != "vpred":
        raise ValueError("v applies to runtime='vpred' only")
    if not model.trees:
        raise ValueError("the model has no trees")
    model.check_structure()
    return make(model, runtime, iteration_range, v)


# -- the compiled model -------------------------------------------------------------------------
class CompiledModel:
    """A model laid out for one runtime. ``predict(X, output='value'|'raw'|'leaf', out=None)``."""

    runtime = "?"
    compile_seconds = 0.0
    binds_one_row = False  # whether it may bind a one-row kernel (_bind_one_row)

    def __init__(self, model, iteration_range=None, tree_range=None):
        t0 = time.perf_counter()
        self.model = model
        self.t0, self.t1 = tree_range if tree_range else model.tree_range(iteration_range)
        self.n_features = model.n_features
        self.n_outputs = max(int(model.n_outputs), 1)
        self.objective = model.objective
        self.base = np.ascontiguousarray(model.base_score, dtype=np.float64)
        self.has_cat_features = bool(np.any(model.info.is_categorical))
        self.ncat = np.ascontiguousarray(model.info.n_categories, dtype=np.int64)
        self._no_out = np.zeros((0, self.n_outputs), np.float64)
        self._no_lout = np.zeros((0, 0), np.int32)
        self._code = transform_code(self.objective)
        self._row_shape = (1, self.n_features)
        self.empty = self.t1 == self.t0  # an empty iteration_range: the base score alone
        if self.empty:
            self._raw = self._leaf = _add_nothing
        else:
            self._build()
        self.build_seconds = time.perf_counter() - t0
        with guard():  # warming runs the parallel kernels (hardwood.parallel)
            self._warm()
        self.compile_seconds = time.perf_counter() - t0

    def __reduce__(self):
        """Pickled as what it was compiled from (the model, the runtime, the trees, vpred's
        width); unpickling compiles again, from Numba's cache where it can: kernels and
        generated code do not pickle."""
        v = getattr(self, "v", 0) or None
        return make, (self.model, self.runtime, None, v, (self.t0, self.t1))

    def __repr__(self):
        return (f"<hardwood compiled model runtime={self.runtime!r} trees={self.t1 - self.t0} "
                f"compile_seconds={self.compile_seconds:.3f}>")

    # subclasses: _build(), _raw(X, out) (adds leaf values to out), _leaf(X, lout)
    def _build(self):
        pass

    def _warm(self):
        # the kernels for the input dtype prepare() gives (float64 codes for categorical
        # features), on the one-row, serial and parallel paths
        dt = np.float64 if self.has_cat_features else np.float32
        for n in (1, 8, SERIAL_ROWS + 1):
            self._raw(np.zeros((n, self.n_features), dt), np.zeros((n, self.n_outputs)))
        # the one-row kernel (pred.OneRowLayout) is compiled on the first one-row call, not
        # here: it takes Numba a few seconds to build the first time on a machine (then it
        # loads from the disk cache), a cost batch-only users should not pay

    def _matrix(self, X):
        if (type(X) is np.ndarray and X.ndim == 2 and not self.has_cat_features
                and (X.dtype == np.float32 or X.dtype == np.float64)
                and X.flags.c_contiguous and X.shape[0] > 0):
            if X.shape[1] != self.n_features:
                raise ValueError(f"X has {X.shape[1]} features, but the model has "
                                 f"{self.n_features}")
            return X
        return self.model.prepare(X)

    # the one-row kernel ``one(X, blob, out, code)`` of pred.OneRowLayout, where a runtime has one
    # (it writes the K outputs of row 0 to out; see pred.OneRowLayout); _fast: output -> (shape of
    # the fresh output, transform code, columns returned or 0 for all) for rows that need no
    # conversion
    _one = None
    _one_blob = None
    _fast = None

    def _bind_one_row(self, kernel, blob):
        self._one, self._one_blob = kernel, blob
        if kernel is None or self.has_cat_features:  # category columns need model.prepare
            self._fast = None
            return
        K = self.n_outputs
        if K == 1:
            self._fast = {"raw": (1, 0, 0), "value": (1, self._code, 0)}
        else:
            self._fast = {"raw": ((1, K), 0, 0),
                          "value": (K, ARGMAX, 1) if self._code == ARGMAX
                          else ((1, K), self._code, 0)}

    def predict(self, X, output="value", out=None):
        fast = self._fast
        if (fast is not None and out is None and type(X) is np.ndarray
                and X.shape == self._row_shape):
            # one row of floats, C-contiguous: checked by shape, dtype and layout only; the
            # model was checked when it was built and its layout is fixed
            dt = X.dtype
            how = fast.get(output) if (dt is _F32 or dt is _F64) and X.flags.c_contiguous else None
            if how is not None:
                res = np.empty(how[0])
                self._one(X, self._one_blob, res, how[1])
                return res[:how[2]] if how[2] else res
        return self._predict(X, output, out)

    def _predict(self, X, output, out):
        blocks = sparse_row_blocks(X)
        if blocks is not None:  # a wide sparse matrix: a block of rows made dense at a time
            X, block = blocks
            n = X.shape[0]
            if out is not None:
                self._check_out(out, output, n)
            parts = [self._predict(X[a:a + block], output,
                                   None if out is None else out[a:a + block])
                     for a in range(0, n, block)]
            if out is None:
                return np.concatenate(parts, axis=0)
            return out[:, 0] if out.ndim == 2 and self._single(output) else out
        with guard():  # a parallel kernel may run (hardwood.parallel)
            return self._predict_batch(X, output, out)

    def _check_out(self, out, output, n):
        """``out`` as the kernels write it for ``n`` rows (an (n,) array of one output as
        (n, 1)), or a ValueError naming what is wrong with it."""
        if not (isinstance(out, np.ndarray) and out.flags.writeable):
            # a read-only out met the kernels as a Numba TypingError
            raise ValueError("out must be a writeable numpy array, got "
                             + ("a read-only array" if isinstance(out, np.ndarray)
                                else type(out).__name__))
        if output == "leaf":
            shape = (n, self.t1 - self.t0)
            if out.shape != shape or out.dtype != np.int32 or not out.flags.c_contiguous:
                raise ValueError(f"out must be a C-contiguous int32 array of shape {shape}")
            return out
        K = self.n_outputs
        if K == 1 and out.shape == (n,):
            # the shape predict returns for one output; (n, 1) only was taken
            out = out.reshape(n, 1) if out.flags.c_contiguous else out
        if out.shape != (n, K) or out.dtype != np.float64 or not out.flags.c_contiguous:
            shapes = f"{(n, K)}" + (f" or {(n,)}" if K == 1 else "")
            raise ValueError(f"out must be a C-contiguous float64 array of shape {shapes}")
        return out

    def _predict_batch(self, X, output, out):
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
        mat = self._matrix(X)
        n = mat.shape[0]
        given = out
        if out is not None:
            out = self._check_out(out, output, n)
            if np.may_share_memory(out, mat):
                # the kernels write out (base score first) while they read X
                raise ValueError("out shares memory with X: predicting into it would "
                                 "overwrite the rows being read; give out a buffer of its own")
        if output == "leaf":
            if out is None:
                out = np.empty((n, self.t1 - self.t0), dtype=np.int32)
            self._leaf(mat, out)
            return out
        K = self.n_outputs
        if out is None:
            out = np.empty((n, K), dtype=np.float64)
        if (n == 1 and self._one is not None and mat.flags.c_contiguous
                and (mat.dtype == _F32 or mat.dtype == _F64)):
            # the one-row kernel writes row 0 of out (all K columns, transformed in place)
            self._one(mat, self._one_blob, out[0], self._code if output == "value" else 0)
        else:
            out[:] = self.base
            self._raw(mat, out)
            if output == "value" and self._code:
                transform_inplace(self._code, out)
        if given is not None and given.ndim == 1:
            return given
        return out[:, 0] if self._single(output) else out

    def _single(self, output):
        """Whether ``output`` is one column: one output, or the class of multi:softmax."""
        return output != "leaf" and (self.n_outputs == 1
                                     or (output == "value" and self._code == ARGMAX))


def _add_nothing(X, out):
    """``_raw``/``_leaf`` of an empty tree range: no tree adds anything."""


_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
