"""The random-forest driver: bootstrap each tree, grow it (hybrid growth), collect the forest.

Per tree ``t`` of a forest with seed ``s``:

* bootstrap (``bootstrap=True``): ``n_boot`` row indices are drawn with replacement from a
  generator seeded by ``(s, t)``, uniformly or, when the rows carry weights (sample weights
  times class weights), with probabilities proportional to them (scikit-learn 1.9's rule);
  the tree's row weights are the draw counts (times the per-tree class weights of
  ``class_weight='balanced_subsample'``). Rows drawn zero times are the tree's out-of-bag rows.
* without bootstrap every row of positive weight is used, with its weight.
* the tree's random features come from a key hashed from ``(s, t)`` and each node's path.

A tree depends only on ``(s, t)`` and the data: forests are identical at any thread count, and
``warm_start`` forests equal forests grown in one go.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..backends import forest_cpu as K
from ..data.convert import FeatureInfo
from ..parallel import concurrent_launches
from ..backends.forest_engine import n_threads
from .forest_grower import GrowData, TreeArrays, TreeParams, grow_tree, grow_tree_cuda

FOREST_PROBA = "multi:proba"  # raw sums of the per-class trees are the probabilities


@dataclass
class SamplingPlan:
    """How each tree draws its rows and weights."""

    n_rows: int
    bootstrap: bool
    n_boot: int
    row_weight: np.ndarray | None  # sample_weight * class weight per row (None: all ones)
    balanced_subsample: bool = False
    y_class: np.ndarray | None = None  # class index per row (balanced_subsample)
    n_classes: int = 0

    def tree_weights(self, seed: int, t: int):
        """(rows int32 ascending with weight > 0, full-length float64 weights, bootstrap
        counts or None) of tree ``t``."""
        n = self.n_rows
        counts = None
        if self.bootstrap:
            rw = self.row_weight
            if rw is None:
                counts = K.bootstrap_counts(seed, t, n, self.n_boot)
            else:
                rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(t)]))
                idx = rng.choice(n, self.n_boot, replace=True, p=rw / rw.sum())
                counts = np.bincount(idx, minlength=n)
            w = counts.astype(np.float64)
            if self.balanced_subsample:  # the classes of the draws, counted
                bc = np.bincount(self.y_class, weights=counts,
                                 minlength=self.n_classes).astype(np.float64)
                present = bc > 0
                cw = np.zeros(self.n_classes)
                cw[present] = self.n_boot / (present.sum() * bc[present])
                w *= cw[self.y_class]
        else:
            # ('balanced_subsample' without bootstrap is 'balanced': the estimators' row
            # class weights, in row_weight)
            w = (np.ones(n) if self.row_weight is None else self.row_weight.astype(np.float64))
        rows = np.flatnonzero(w > 0).astype(np.int32)
        return rows, w, counts


@dataclass
class Forest:
    """Fitted trees (pre-order node arrays) and what predicting needs. It predicts as a
    :class:`hardwood.Model` (:meth:`to_model`), through hardwood's runtimes."""

    trees: list = field(default_factory=list)
    n_outputs: int = 1  # classes (classification) or 1 (regression)
    is_reg: bool = False
    info: FeatureInfo | None = None
    _model: object = field(default=None, repr=False, compare=False)

    def __getstate__(self):
        s = dict(self.__dict__)
        s["_model"] = None  # rebuilt on use
        return s

    def model(self, params=None):
        """:meth:`to_model`, built on the first call and kept: the forest's trees never change
        (``warm_start`` fits make a new Forest). ``params``: a dict, or a function returning
        one, used on the first call only."""
        if self._model is None:
            self._model = self.to_model(params() if callable(params) else params)
        return self._model

    def feature_importances(self):
        """Mean decrease in impurity: per tree normalised, averaged, normalised."""
        d = self.info.n_features
        acc = np.zeros(d)
        m = 0
        for t in self.trees:
            if t.n_nodes <= 1:
                continue
            imp = np.zeros(d)
            internal = t.feature >= 0
            np.add.at(imp, t.feature[internal], t.gain[internal])
            s = imp.sum()
            if s > 0:
                imp /= s
            acc += imp
            m += 1
        if m == 0:
            return np.zeros(d)
        acc /= m
        s = acc.sum()
        return acc / s if s > 0 else acc

    def to_model(self, params=None):
        """The forest as a :class:`hardwood.Model` (flat trees, JSON save/load, predictors).

        Classification: one tree per class per estimator (``tree_group`` = class) with leaf
        values ``fraction / n_estimators``, objective ``'multi:proba'`` (raw sums are the
        probabilities). Regression: one tree per estimator with ``mean / n_estimators``,
        objective ``'reg:squarederror'``."""
        from ..model.model import Model
        from ..model.tree import Tree

        n_est = len(self.trees)
        Kout = self.n_outputs
        trees, group = [], []
        for t in self.trees:
            n = t.n_nodes
            base = dict(feature=t.feature, threshold=t.threshold, left=t.left, right=t.right,
                        default_left=t.default_left, is_categorical=np.zeros(n, dtype=bool),
                        cat_offset=np.full(n, -1, dtype=np.int64),
                        gain=t.gain.astype(np.float32), cover=t.weight, count=t.count)
            for k in range(Kout):
                trees.append(Tree.from_arrays(value=t.value[:, k] / n_est, **base))
                group.append(k)
        objective = "reg:squarederror" if self.is_reg else FOREST_PROBA
        p = {"booster": "forest"}
        p.update(params or {})
        return Model(trees, group, np.zeros(Kout), objective, Kout, self.info, params=p)


def grow_forest(data: GrowData, tparams: TreeParams, plan: SamplingPlan, seed: int, tree_ids,
                device: str = "cpu", growth: str = "hybrid", crossover=None,
                oob=None, X=None, callback=None, tree_parallel=None):
    """Grow trees ``tree_ids``; returns their TreeArrays. ``oob``: a pair (sum (n, K),
    count (n,)) accumulating out-of-bag predictions of the raw matrix ``X`` (bootstrap
    only).

    On the CPU with several threads, ``tree_parallel`` grows whole trees concurrently, one
    Numba thread each (each tree still grows hybrid, depth-first then breadth-first);
    otherwise the threads work inside one tree at a time (CudaTree's scheme). None: trees in
    parallel when there are at least two per thread (measured 10-30% faster on 2 cores)."""
    if device == "cuda":
        grow = grow_tree_cuda
    elif device == "cpu":
        grow = grow_tree
    else:
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    tree_ids = list(tree_ids)

    def one(t):
        rows, w, counts = plan.tree_weights(seed, t)
        if rows.size == 0:
            raise ValueError(f"tree {t}: the bootstrap sample has no row of positive weight")
        tree = grow(data, tparams, rows, w, K.root_key(seed, t), growth=growth,
                    crossover=crossover)
        return tree, counts

    def finish(t, tree, counts):
        if oob is not None and counts is not None:
            add_oob(X, tree, np.flatnonzero(counts == 0), oob)
        if callback is not None:
            callback(t, tree)
        return tree

    n_thr = n_threads()
    if tree_parallel is None:  # measured: see benchmarks/README.md, "Random forests"
        tree_parallel = len(tree_ids) >= 2 * n_thr
    if (device == "cpu" and tree_parallel and n_thr > 1 and len(tree_ids) > 1
            and concurrent_launches()):  # never under Numba's workqueue layer (parallel.py)
        return _grow_tree_parallel(one, finish, tree_ids, n_thr)
    return [finish(t, *one(t)) for t in tree_ids]


def _grow_tree_parallel(one, finish, tree_ids, n_thr):
    """Trees on ``n_thr`` Python threads, each running the (nogil) kernels on one Numba
    thread; results are taken in tree order, so the forest is the same as a serial one."""
    from concurrent.futures import ThreadPoolExecutor

    import numba

    def work(t):
        numba.set_num_threads(1)  # thread-local: this worker's kernels run serially
        return one(t)

    out = []
    with ThreadPoolExecutor(max_workers=n_thr) as ex:
        for t, (tree, counts) in zip(tree_ids, ex.map(work, tree_ids)):
            out.append(finish(t, tree, counts))
    return out


def add_oob(X, tree: TreeArrays, oob_rows, oob):
    """Add one tree's predictions for its out-of-bag rows of the raw float matrix X."""
    s, c = oob
    K.oob_accumulate_raw(X, oob_rows.astype(np.int64), tree.feature.astype(np.int64),
                         tree.threshold, tree.left.astype(np.int64),
                         tree.right.astype(np.int64), tree.default_left, tree.value, s, c)


def check_device(device):
    """Fail clearly when ``device='cuda'`` cannot run."""
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda":
        try:
            from ..backends.forest_cuda import cuda_available
        except ImportError as e:
            raise RuntimeError("device='cuda' needs numba-cuda (pip install 'hardwood[cuda]'): "
                               f"{e}. Use device='cpu'.") from None
        ok, why = cuda_available()
        if not ok:
            raise RuntimeError(f"device='cuda' needs an NVIDIA GPU usable by numba-cuda: {why}. "
                               "Use device='cpu'.")
