"""``hardwood.compile(model, runtime=...)``: a model laid out for one prediction runtime.

Runtimes (Asadi, Lin, de Vries, *Runtime Optimizations for Prediction with Tree-Based Models*):

===========  ================================================================================
naive        the reference walk (``predict.naive``)
struct       array of 24-byte node structs in the model's node order, walked with branches
struct+      16-byte node structs, breadth-first per tree, siblings adjacent, all contiguous
pred         trees padded to full depth, branch-free index update, lanes unrolled
vpred        ``pred`` with ``v`` rows interleaved (``v`` tuned per feature count and depth);
             deep or unbalanced trees take the unpadded branch-free walk of ``predict.vwalk``
quickscorer  QuickScorer (Lucchese et al. 2015) over 16 or 8 rows in SIMD lanes: per feature,
             the nodes a row fails, found by one threshold-sorted scan, AND their masks into a
             bitvector per tree (``predict.quickscorer``; trees of at most 64 leaves, numeric
             splits). QuickScorer is patented (US 11,106,685): it runs only when asked for by
             name, never through ``auto``
codegen      generated if-else code compiled by Numba (cached on disk; ``compile_seconds``)
cuda         a numba-cuda kernel, one thread per row (needs a GPU or the CUDA simulator)
auto         picks vpred or (one row) naive by a cost model over the trees' depths, paths
             and the batch size (``choose``); never a patented runtime
===========  ================================================================================

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
allocates nothing (the output is allocated by ``predict``, or passed as ``out=``). Its sums are
the naive walk's, bit for bit. Other single rows (lists, frames, category columns) are
converted first and then take the same kernel.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from ..parallel import guard
from . import pred as _pred
from . import quickscorer as _qs
from . import vwalk as _vwalk
from . import struct as _struct
from .naive import predict_leaf_kernel, predict_raw_kernel
from .transform import ARGMAX, TRANSFORM, transform_inplace

RUNTIMES = ("naive", "struct", "struct+", "pred", "vpred", "quickscorer", "codegen", "cuda",
            "auto")
OUTPUTS = ("value", "raw", "leaf")
SERIAL_ROWS = 256  # below this many rows the kernels run on one thread (no thread start-up)

# vpred's v by (feature count, padded depth), from benchmarks/predict_synthetic.py
# (see benchmarks/README.md, "Prediction"): rows of feature-count buckets, columns of depth.
V_TABLE_FEATURES = (64, 256)  # <= 64, <= 256, more
V_TABLE = {0: {3: 8, 5: 16, 7: 16, 9: 16, 11: 16},
           1: {3: 8, 5: 8, 7: 8, 9: 8, 11: 8},
           2: {3: 8, 5: 8, 7: 8, 9: 8, 11: 8}}


def tuned_v(n_features, depth):
    b = 0 if n_features <= V_TABLE_FEATURES[0] else (1 if n_features <= V_TABLE_FEATURES[1] else 2)
    row = V_TABLE[b]
    key = min(row, key=lambda d: (abs(d - depth), d))
    return row[key]


def _single_output(objective, K):
    return K == 1 or objective == "multi:softmax"


# -- the compiled model -------------------------------------------------------------------------
class CompiledModel:
    """A model laid out for one runtime. ``predict(X, output='value'|'raw'|'leaf', out=None)``."""

    runtime = "?"
    compile_seconds = 0.0

    def __init__(self, model, iteration_range=None, tree_range=None):
        t0 = time.perf_counter()
        self.model = model
        self.t0, self.t1 = tree_range if tree_range else model._tree_range(iteration_range)
        self.n_features = model.n_features
        self.n_outputs = max(int(model.n_outputs), 1)
        self.objective = model.objective
        self.base = np.ascontiguousarray(model.base_score, dtype=np.float64)
        self.has_cat_features = bool(np.any(model.info.is_categorical))
        self.ncat = np.ascontiguousarray(model.info.n_categories, dtype=np.int64)
        self._no_out = np.zeros((0, self.n_outputs), np.float64)
        self._no_lout = np.zeros((0, 0), np.int32)
        self._code = TRANSFORM.get(self.objective, 0)
        self._row_shape = (1, self.n_features)
        self.empty = self.t1 == self.t0  # an empty iteration_range: the base score alone
        if self.empty:
            self._raw = self._leaf = _add_nothing
        else:
            self._build()
        self.build_seconds = time.perf_counter() - t0
        self._warm()
        self.compile_seconds = time.perf_counter() - t0

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
    # (it writes the K outputs of row 0 to out and allocates nothing); _fast: output -> (shape of
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
        with guard():  # a parallel kernel may run (hardwood.parallel)
            return self._predict_batch(X, output, out)

    def _predict_batch(self, X, output, out):
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
        mat = self._matrix(X)
        n = mat.shape[0]
        if output == "leaf":
            shape = (n, self.t1 - self.t0)
            if out is None:
                out = np.empty(shape, dtype=np.int32)
            elif out.shape != shape or out.dtype != np.int32 or not out.flags.c_contiguous:
                raise ValueError(f"out must be a C-contiguous int32 array of shape {shape}")
            self._leaf(mat, out)
            return out
        K = self.n_outputs
        if out is None:
            out = np.empty((n, K), dtype=np.float64)
        elif out.shape != (n, K) or out.dtype != np.float64 or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous float64 array of shape {(n, K)}")
        single = K == 1 or (output == "value" and self._code == ARGMAX)
        if (n == 1 and self._one is not None and mat.flags.c_contiguous
                and (mat.dtype == _F32 or mat.dtype == _F64)):
            # the one-row kernel writes row 0 of out (all K columns, transformed in place)
            self._one(mat, self._one_blob, out[0], self._code if output == "value" else 0)
        else:
            out[:] = self.base
            self._raw(mat, out)
            if output == "value" and self._code:
                transform_inplace(self._code, out)
        if single:
            return out[:, 0]
        return out


def _add_nothing(X, out):
    """``_raw``/``_leaf`` of an empty tree range: no tree adds anything."""


_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


class NaiveRuntime(CompiledModel):
    runtime = "naive"

    def _build(self):
        self.f = self.model.packed()

    def _raw(self, X, out):
        f = self.f
        predict_raw_kernel(X, self.t0, self.t1, f.feature, f.threshold, f.left, f.right,
                           f.default_left, f.is_categorical, f.cat_offset, f.value, f.bitsets,
                           f.roots, f.tree_group, f.n_categories, out)

    def _leaf(self, X, lout):
        f = self.f
        predict_leaf_kernel(X, self.t0, self.t1, f.feature, f.threshold, f.left, f.right,
                            f.default_left, f.is_categorical, f.cat_offset, f.bitsets, f.roots,
                            f.n_categories, lout)


class StructRuntime(CompiledModel):
    runtime = "struct"
    bfs = False

    def _build(self):
        trees = self.model.trees
        self.nodes, self.catoff, self.bits, self.roots = _struct.build(trees, self.t0, self.t1,
                                                                       self.bfs)
        self.groups = np.ascontiguousarray(self.model.tree_group[self.t0:self.t1], np.int64)

    def _go(self, X, out, lout, want_leaf):
        if self.bfs:
            fn = _struct.run_serial_plus if X.shape[0] < SERIAL_ROWS else _struct.run_parallel_plus
        else:
            fn = _struct.run_serial if X.shape[0] < SERIAL_ROWS else _struct.run_parallel
        fn(X, self.nodes, self.catoff, self.bits, self.ncat, self.roots, self.groups,
           out, lout, want_leaf)

    def _raw(self, X, out):
        self._go(X, out, self._no_lout, False)

    def _leaf(self, X, lout):
        self._go(X, self._no_out, lout, True)


class StructPlusRuntime(StructRuntime):
    runtime = "struct+"
    bfs = True


class PredRuntime(CompiledModel):
    """``pred`` (v = 1) and ``vpred`` (v > 1)."""

    runtime = "pred"

    def __init__(self, model, iteration_range=None, tree_range=None, v=1):
        self.v = int(v)
        if self.v not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"v must be one of 1, 2, 4, 8, 16, 32, got {v!r}")
        super().__init__(model, iteration_range, tree_range)

    def _build(self):
        trees = self.model.trees[self.t0:self.t1]
        depths = [t.depth() for t in trees]
        walks = [_walks(t, d, self._walk) for t, d in zip(trees, depths)]
        if _pred.padded_size([d for d, w in zip(depths, walks) if not w]) > \
                _pred.MAX_PADDED_NODES:
            walks = [True] * len(trees)  # padding all the others would take too much memory
        walked = [self.t0 + k for k, w in enumerate(walks) if w]
        padded = [self.t0 + k for k, w in enumerate(walks) if not w]
        layout = _pred.PredLayout(self.model.trees, self.model.tree_group, self.t0, self.t1,
                                  pad=self._pad, sel=padded)
        self.layout = layout
        self.cat = layout.has_cat
        # the features the splits use: a block of rows with no NaN in them takes the walk
        # without the default-direction test, and only they are copied into a block's
        # transposed rows (a node stores its feature's place among them, times v)
        used = [t.feature[t.feature >= 0] for t in trees]
        self.used = np.unique(np.concatenate(used + [np.zeros(1, np.int64)])).astype(np.int64)
        position = np.zeros(self.n_features, np.int64)
        position[self.used] = np.arange(self.used.size)
        self.passes = []
        for g in layout.groups:
            v = self.v if self.v else tuned_v(self.n_features, g["D"])
            g["v"] = v
            # unsigned: no negative-index fix-up
            g["featu"] = (position[g["feat"]] * v).astype(_pred._feat_dtype(self.used.size * v))
            self.passes.append((_pred.kernels(v, self.cat), (g["D"], g["featu"], g["thr32"],
                                g["thr64"], g["flags"], g["catoff"], layout.bitsets, g["info"],
                                g["leafval"], g["leafid"])))
        self.walked = len(walked)
        if walked:  # deep or unbalanced trees: the unpadded walk (predict.vwalk)
            v = self.v if self.v else WALK_V
            self.walk_v = v
            w = _vwalk.WalkLayout(self.model.trees, self.model.tree_group, walked, self.t0, v,
                                  _pred._feat_dtype(self.used.size * v), position)
            a = w.arrays
            self.passes.append((_vwalk.kernels(v, w.has_cat or self.cat), (
                a["ch"], a["feat"], a["thr32"], a["thr64"], a["flags"], a["catoff"], w.bitsets,
                a["info"], a["leafval"], a["leafid"])))
        # rows read in place (no NaN scan, no block copy) when the walk is short next to the
        # used-feature count: both cost about one step per used feature and row
        self.direct = bool(DIRECT_FACTOR * self.used.size > sum(depths))
        self.const = layout.const_trees
        self.one_row_reason = (f"{len(walked)} trees take the unpadded walk" if walked else
                               _pred.one_row_unsupported_reason(self.model.trees, self.t0,
                                                                self.t1))
        if self.one_row_reason is None:
            self.one_row = _pred.OneRowLayout(layout, self.t1 - self.t0, self.n_outputs,
                                              self.n_features, self.base, self.ncat)
            self._bind_one_row(self.one_row.kernel, self.one_row.blob)

    # which trees take the unpadded walk: "auto" (see _walks), "all" or "none"
    _walk = "auto"
    block = _pred.BLOCK_ROWS  # rows per block (16-256 measured within noise of each other)
    _pad = "auto"

    def _go(self, X, out, lout, want_leaf):
        n = X.shape[0]
        f32 = X.dtype == np.float32
        for mod, (first, feat, thr32, thr64, flags, catoff, bits, info, leafval,
                  leafid) in self.passes:
            args = (self.block, self.used, self.direct, first, feat, thr32 if f32 else thr64,
                    flags, catoff, bits, self.ncat, info, leafval, leafid, out, lout, want_leaf)
            if n < SERIAL_ROWS:
                mod.run_serial(X, *args)
            else:
                mod.run_parallel(X, *args)
        for grp, col, val in self.const:
            if want_leaf:
                lout[:, col] = 0
            else:
                out[:, grp] += val

    def _raw(self, X, out):
        self._go(X, out, self._no_lout, False)

    def _leaf(self, X, lout):
        self._go(X, self._no_out, lout, True)


# a tree takes vwalk's unpadded walk rather than padding when it is deeper than pred can pad,
# or when padding would multiply its leaves by more than WALK_PAD_FACTOR (benchmarks/README.md)
WALK_PAD_FACTOR = 8
DIRECT_FACTOR = 4  # see PredRuntime._build (benchmarks/README.md: the synthetic study)
WALK_V = 8  # the walk's tuned v: 8 beat 4 and 16 on LightGBM 255-leaf and LambdaMART models


def _walks(tree, d, rule):
    """Whether ``tree`` (of depth ``d``) takes the unpadded walk."""
    if rule in ("all", "none"):
        return rule == "all"
    if d > _pred.MAX_DEPTH:
        return True
    n_leaves = int(np.sum(tree.feature < 0))
    return d > 3 and (1 << d) > WALK_PAD_FACTOR * n_leaves


class VPredRuntime(PredRuntime):
    runtime = "vpred"

    def __init__(self, model, iteration_range=None, tree_range=None, v=None):
        self.v = 0 if v is None else int(v)
        if self.v not in (0, 1, 2, 4, 8, 16, 32):
            raise ValueError(f"v must be None (tuned) or one of 1, 2, 4, 8, 16, 32, got {v!r}")
        CompiledModel.__init__(self, model, iteration_range, tree_range)


class QuickScorerRuntime(CompiledModel):
    """``predict.quickscorer``. One row takes the one-row kernel, whose bitvectors live in
    scratch made at compile time, so that it allocates nothing but its output (another thread
    calling at the same time gets its own)."""

    runtime = "quickscorer"

    def _build(self):
        reason = _qs.unsupported_reason(self.model.trees[self.t0:self.t1])
        if reason:
            raise ValueError(f"runtime 'quickscorer' cannot run this model: {reason}")
        self.layout = _qs.QSLayout(self.model.trees, self.model.tree_group, self.t0, self.t1)
        self._mod = _qs.kernels(self.layout.V)
        # one row: the layout in one byte array and a kernel of five arguments
        self._lock = threading.Lock()
        self._one_kernel = _qs.one_row_kernel(self.layout.width)
        self._one_scratch = np.empty((self.t1 - self.t0) * 8, np.uint8)
        self._bind_one_row(self._one_row, _qs.one_row_blob(self.layout, self.base))

    def _one_row(self, X, blob, out, code):
        """``one(X, blob, out, code)`` for the one-row path."""
        if self._lock.acquire(blocking=False):
            try:
                self._one_kernel(X, blob, self._one_scratch, out, code)
            finally:
                self._lock.release()
        else:
            self._one_kernel(X, blob, np.empty(self._one_scratch.size, np.uint8), out, code)

    def _go(self, X, out, lout, want_leaf):
        args = self.layout.args(X.dtype == np.float32)
        if X.shape[0] >= SERIAL_ROWS:
            self._mod.run_parallel(X, _pred.BLOCK_ROWS, *args, out, lout, want_leaf)
        else:
            self._mod.run_serial(X, *args, out, lout, want_leaf)

    def _raw(self, X, out):
        self._go(X, out, self._no_lout, False)

    def _leaf(self, X, lout):
        self._go(X, self._no_out, lout, True)


class CodegenRuntime(CompiledModel):
    runtime = "codegen"

    def _build(self):
        from . import codegen
        trees = self.model.trees[self.t0:self.t1]
        reason = codegen.unsupported_reason(trees)
        if reason:
            raise ValueError(f"runtime 'codegen' cannot run this model: {reason}")
        self.mod = codegen.build_module(self.model.trees, self.model.tree_group, self.t0, self.t1)
        bits = [t.cat_bitsets for t in trees]
        self.bits = np.concatenate(bits).astype(np.uint32) if sum(b.size for b in bits) else \
            np.zeros(1, np.uint32)
        self._leafrt = None

    def _raw(self, X, out):
        fn = self.mod.run_serial if X.shape[0] < SERIAL_ROWS else self.mod.run_parallel
        fn(X, self.bits, self.ncat, out)

    def _leaf(self, X, lout):
        if self._leafrt is None:
            self._leafrt = StructPlusRuntime(self.model, tree_range=(self.t0, self.t1))
        self._leafrt._leaf(X, lout)


class AutoRuntime(CompiledModel):
    """Picks per call: see :func:`choose`. Candidates are compiled on first use."""

    runtime = "auto"

    def _build(self):
        self._rt = {}
        self.shape = ModelShape.of(self.model.trees[self.t0:self.t1])

    def _warm(self):
        super()._warm()
        if self.empty:
            return
        # one row goes straight to the kernel of the runtime chosen for one row
        rt = self._get(1)
        self._bind_one_row(rt._one, rt._one_blob)

    def choose(self, n_rows):
        return choose(n_rows, self.shape)

    def _get(self, n_rows):
        name = self.choose(n_rows)
        rt = self._rt.get(name)
        if rt is None:
            rt = self._rt[name] = _make(self.model, name, None, None, (self.t0, self.t1))
        return rt

    def _raw(self, X, out):
        self._get(X.shape[0])._raw(X, out)

    def _leaf(self, X, lout):
        self._get(X.shape[0])._leaf(X, lout)


def _expected_path(tree, depth_of):
    """The mean path length of the rows the tree was trained on: its leaves' depths weighted
    by their row counts (LightGBM), else by their cover (hessian sums: XGBoost), else alike."""
    leaves = tree.feature < 0
    d = depth_of[leaves]
    for w in (tree.count[leaves], tree.cover[leaves]):
        w = np.asarray(w, np.float64)
        if np.all(np.isfinite(w)) and np.all(w >= 0) and w.sum() > 0:
            return float((w * d).sum() / w.sum())
    return float(d.mean())


class ModelShape:
    """What the ``auto`` rule weighs: per tree its depth and the mean path of its training
    rows, whether vpred pads it or walks it unpadded (``_walks``), and for QuickScorer the
    internal-node count and bitvector width (or why it cannot run the model)."""

    def __init__(self, padded_levels, walked_levels, walked_paths, paths, qs_nodes,
                 qs_width=64, quickscorer_reason=None):
        self.padded_levels = padded_levels  # summed depth of the trees vpred pads
        self.walked_levels = walked_levels  # summed depth of those it walks unpadded
        self.walked_paths = walked_paths  # summed mean path of those it walks
        self.paths = paths  # summed mean path of all trees
        self.qs_nodes = qs_nodes  # internal nodes, None where QuickScorer cannot run
        self.qs_width = qs_width
        self.quickscorer_reason = quickscorer_reason

    @classmethod
    def of(cls, trees):
        padded = walked = walked_paths = paths = 0.0
        for t in trees:
            depth_of = t.node_depths()
            d = int(depth_of.max())
            path = _expected_path(t, depth_of)
            paths += path
            if _walks(t, d, "auto"):
                walked += d
                walked_paths += path
            else:
                padded += d
        reason = _qs.unsupported_reason(trees)
        nodes = (int(sum(int(np.count_nonzero(t.feature >= 0)) for t in trees))
                 if reason is None else None)
        width = 32 if all(t.n_leaves <= 32 for t in trees) else 64
        return cls(padded, walked, walked_paths, paths, nodes, width, reason)


# Per-row costs in ns (benchmarks/README.md, "auto": fitted on XGBoost depth 4 and 6,
# LightGBM 15/31/63/255 leaves and LambdaMART models, 500 trees each).
# Batches, 2 threads: a padded vpred level; the unpadded walk, whose lanes wait for the longest
# of their rows' paths, costs between the mean path and the depth; a QuickScorer node.
COST_PADDED_LEVEL = 0.4
COST_WALK_PATH, COST_WALK_LEVEL = 0.69, 0.18
COST_QS_NODE = {32: 0.075, 64: 0.085}
# One row, one thread: vpred's one-row kernel (padded trees only: trees on the unpadded walk
# have none, and the batch walk lost to the naive one on every model measured), the naive walk
# (a step per node of the row's path) and QuickScorer's one-row kernel, each with its fixed
# cost (the call, the checks).
ONE_ROW_CALL, ONE_ROW_PADDED_LEVEL = 1400.0, 0.7
ONE_ROW_NAIVE_CALL, ONE_ROW_NAIVE_STEP = 4200.0, 5.3
ONE_ROW_QS_CALL, ONE_ROW_QS_NODE = 1900.0, 0.5


# Runtimes that ``auto`` never picks: QuickScorer and its variants are covered by US 11,106,685
# (DESIGN.md, "Patents"), so they run only when a user names them.
PATENTED = frozenset({"quickscorer"})


def costs(n_rows, shape, patented=False):
    """The estimated per-row cost, in ns, of each candidate runtime for ``n_rows`` rows.
    ``patented=True`` also estimates the runtimes of :data:`PATENTED`, which ``auto`` never
    weighs (``benchmarks/predict_auto_rule.py`` prints them beside the others)."""
    cost = {}
    if n_rows < _qs.MIN_BATCH:
        if shape.walked_levels == 0:
            cost["vpred"] = ONE_ROW_CALL + ONE_ROW_PADDED_LEVEL * shape.padded_levels
        cost["naive"] = ONE_ROW_NAIVE_CALL + ONE_ROW_NAIVE_STEP * shape.paths
        if patented and shape.qs_nodes is not None:
            cost["quickscorer"] = ONE_ROW_QS_CALL + ONE_ROW_QS_NODE * shape.qs_nodes
    else:
        cost["vpred"] = (COST_PADDED_LEVEL * shape.padded_levels
                         + COST_WALK_PATH * shape.walked_paths
                         + COST_WALK_LEVEL * shape.walked_levels)
        if patented and shape.qs_nodes is not None:
            cost["quickscorer"] = COST_QS_NODE[shape.qs_width] * shape.qs_nodes
    return cost


def choose(n_rows, shape):
    """The rule behind ``runtime='auto'``: the candidate of least estimated cost
    (:func:`costs`; measurements: ``benchmarks/predict_auto_rule.py`` and benchmarks/README.md,
    "Prediction"). Batches take vpred. One row takes vpred's one-row kernel (3.8 us on the
    XGBoost depth-6 model) or the naive walk, whichever is estimated cheaper; the naive walk
    when some trees take the unpadded walk, which has no one-row kernel. The patented QuickScorer is never a candidate (:data:`PATENTED`),
    although it is faster on leaf-wise trees of up to about 31 leaves (LambdaMART: 3.3x
    vpred): users who hold a licence name it, ``runtime='quickscorer'``.
    """
    cost = costs(n_rows, shape)
    return min(cost, key=lambda k: (cost[k], k != "vpred"))


def _make(model, runtime, iteration_range, v, tree_range=None):
    kw = {"iteration_range": iteration_range, "tree_range": tree_range}
    if runtime == "naive":
        return NaiveRuntime(model, **kw)
    if runtime == "struct":
        return StructRuntime(model, **kw)
    if runtime == "struct+":
        return StructPlusRuntime(model, **kw)
    if runtime == "pred":
        return PredRuntime(model, v=1, **kw)
    if runtime == "vpred":
        return VPredRuntime(model, v=v, **kw)
    if runtime == "quickscorer":
        return QuickScorerRuntime(model, **kw)
    if runtime == "codegen":
        return CodegenRuntime(model, **kw)
    if runtime == "cuda":
        from .cuda import CudaRuntime
        return CudaRuntime(model, **kw)
    if runtime == "auto":
        return AutoRuntime(model, **kw)
    raise ValueError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")


def compile(model, runtime="auto", *, v=None, iteration_range=None):
    """Lay ``model`` out for ``runtime`` and compile its kernels; returns an object with
    ``predict(X, output='value'|'raw'|'leaf', out=None)``, ``runtime`` and
    ``compile_seconds``. ``v``: vpred's interleave width (None: tuned)."""
    from ..model.model import Model
    if not isinstance(model, Model):
        raise TypeError(f"compile needs a hardwood.Model, got {type(model).__name__}; "
                        "use hardwood.import_model for XGBoost/LightGBM/scikit-learn models")
    if v is not None and runtime != "vpred":
        raise ValueError("v applies to runtime='vpred' only")
    if not model.trees:
        raise ValueError("the model has no trees")
    return _make(model, runtime, iteration_range, v)
