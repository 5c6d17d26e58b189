"""``auto``: the runtime picked per call by a cost model over the model's shape and the batch
size (:func:`choose`). Never a patented runtime (:data:`PATENTED`).

The cost model lives here and only here: :class:`ModelShape` (what it weighs), the fitted
per-row costs, :func:`costs` and :func:`choose`; ``benchmarks/predict_auto_rule.py`` checks it
against measured times.
"""
from __future__ import annotations

import numpy as np

from . import quickscorer as _qs
from .base import REGISTRY, SERIAL_ROWS, CompiledModel, make, register
from .pred_runtime import walks_unpadded
from .treeshape import node_depths, shared_structure


@register
class AutoRuntime(CompiledModel):
    """Picks per call: vpred for batches; vpred's one-row kernel or the struct+ walk for one
    row (see :func:`choose`). The batch candidate is compiled with the model, and the one-row
    candidate too when it has a one-row kernel to bind; the struct+ walk, which has none, is
    laid out on the first call of fewer than ``MIN_BATCH`` rows (laying out a big forest takes
    seconds and as much memory as the layout: a cost batch-only users should not pay)."""

    runtime = "auto"

    def _build(self):
        self._rt = {}
        W = self.n_outputs
        if not shared_structure(self.model.trees, self.model.tree_group, self.t0, self.t1, W):
            W = 1
        self.shape = ModelShape.of(self.model.trees[self.t0:self.t1], width=W)

    def _warm(self):
        if self.empty:
            super()._warm()
            return
        one = REGISTRY[self.choose(1)].binds_one_row
        dt = np.float64 if self.has_cat_features else np.float32
        for n in ((1,) if one else ()) + (_qs.MIN_BATCH, SERIAL_ROWS + 1):
            self._raw(np.zeros((n, self.n_features), dt), np.zeros((n, self.n_outputs)))
        if one:  # one row goes straight to the kernel of the runtime chosen for one row
            rt = self._get(1)
            self._bind_one_row(rt._one, rt._one_blob)

    def choose(self, n_rows):
        return choose(n_rows, self.shape)

    def _get(self, n_rows):
        name = self.choose(n_rows)
        rt = self._rt.get(name)
        if rt is None:
            rt = self._rt[name] = make(self.model, name, tree_range=(self.t0, self.t1))
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
    rows, whether vpred pads it or walks it unpadded (``pred_runtime.walks_unpadded``), for
    QuickScorer the internal-node count and bitvector width (or why it cannot run the model),
    and how many trees one of vpred's walks serves (``width``: runs of trees that share their
    splits, as a forest's per-class trees, ``treeshape.shared_structure``)."""

    def __init__(self, padded_levels, walked_levels, walked_paths, paths, qs_nodes,
                 qs_width=64, quickscorer_reason=None, width=1):
        self.padded_levels = padded_levels  # summed depth of the trees vpred pads
        self.walked_levels = walked_levels  # summed depth of those it walks unpadded
        self.walked_paths = walked_paths  # summed mean path of those it walks
        self.paths = paths  # summed mean path of all trees
        self.qs_nodes = qs_nodes  # internal nodes, None where QuickScorer cannot run
        self.qs_width = qs_width
        self.quickscorer_reason = quickscorer_reason
        self.width = width  # trees per vpred walk

    @classmethod
    def of(cls, trees, width=1):
        """The shape of ``trees``; ``width`` > 1: they come in runs of ``width`` trees that
        share their splits, and the first tree of each run stands for the run."""
        padded = walked = walked_paths = paths = 0.0
        for t in trees[::width]:
            depth_of = node_depths(t)
            d = int(depth_of.max())
            path = _expected_path(t, depth_of)
            paths += path
            if walks_unpadded(t, d, "auto"):
                walked += d
                walked_paths += path
            else:
                padded += d
        if width > 1:
            padded, walked, walked_paths, paths = (width * x for x in (padded, walked,
                                                                       walked_paths, paths))
        reason = _qs.unsupported_reason(trees)
        nodes = (int(sum(int(np.count_nonzero(t.feature >= 0)) for t in trees))
                 if reason is None else None)
        return cls(padded, walked, walked_paths, paths, nodes,
                   32 if all(t.n_leaves <= 32 for t in trees) else 64, reason, width)


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
# struct+ walks the naive walk's path over 16-byte nodes, a tree's siblings side by side: one
# cache line a step where the naive walk reads five arrays. Once a model outgrows L2 that is
# the whole difference (2026-11-23, one row, 500 trees: LambdaMART 31 leaves 24 us against
# 153 us for the naive walk, XGBoost depth 6 23 against 133 us): the one-row walk of models
# without a one-row kernel
ONE_ROW_STRUCT_CALL, ONE_ROW_STRUCT_STEP = 4200.0, 5.3
ONE_ROW_QS_CALL, ONE_ROW_QS_NODE = 1900.0, 0.5
# vpred's batch walk on one row costs about twice the naive walk per tree walked (random
# forests of 30 deep trees, 2026-11-22: one regression tree per walk 52 vs 26 us for the naive
# walk; 7 class trees per walk 26 vs 80 us): a candidate only where one walk serves several
# trees (ModelShape.width), so the picks on boosted models are unchanged
ONE_ROW_WALK_STEP = 2 * ONE_ROW_NAIVE_STEP


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
        elif shape.width > 1:
            cost["vpred"] = ONE_ROW_NAIVE_CALL + ONE_ROW_WALK_STEP * shape.paths / shape.width
        cost["struct+"] = ONE_ROW_STRUCT_CALL + ONE_ROW_STRUCT_STEP * shape.paths
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
    XGBoost depth-6 model) or the struct+ walk, whichever is estimated cheaper; the struct+
    walk when some trees take the unpadded walk, which has no one-row kernel, unless one walk
    serves several trees (a forest's class trees): then vpred's batch walk may win. The patented
    QuickScorer is never a candidate (:data:`PATENTED`), although it is faster on leaf-wise
    trees of up to about 31 leaves (LambdaMART: about 2x vpred's chained walk, 0.98 against
    0.45 M rows/s): users who hold a licence name it,
    ``runtime='quickscorer'``.
    """
    cost = costs(n_rows, shape)
    return min(cost, key=lambda k: (cost[k], k != "vpred"))
