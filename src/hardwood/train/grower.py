"""The grower: one tree, depthwise (level by level) or lossguide (best leaf first).

It picks the fused one-call CPU grower on one in-core page, once that kernel is compiled
(see ``FUSED``), else the tree learner over pages (``train/learner.py``, the host loop of
① ② ③), and turns either's node arrays into a ``Tree`` and a ``BinnedTree``
(``finish_arrays``).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

from ..backends._intrinsics import seconds_per_cycle
from ..backends.jit_cache import CompileClock
from ..predict._cache import read_state, write_state
from ..model.tree import BinnedTree, Tree, bitset_from_mask
from .learner import NodeKeys, TreeLearner
from ..backends.split import (LGB_MISSING, LGB_MISSING_BIN0, LGB_MISSING_BIN0_ZERO,
                              LGB_MISSING_ZERO, XGB_MISSING, ZERO_EDGE, leaf_weight)


# Where the fused grower applies (one in-core page, a backend that offers it), FUSED says
# whether it grows the trees: True always, False never (the tests compare the two), "auto"
# once it is compiled. Both build the same trees, and the fused grower is 1.5-1.9x faster,
# but compiling it costs about 35 s on a fresh 2-core machine, four times the learner's
# kernels. So "auto" takes it when its kernel is compiled for these argument types (in this
# process, or in Numba's cache on disk), or once the learner's time on this machine (see
# LearnerClock), spent and still to spend on this training, reaches TIER_UP_SECONDS: there,
# compiling, once per machine, pays for itself. HARDWOOD_FUSED=1 or 0 in the environment
# sets True or False (the benchmarks use 1).
FUSED = {"1": True, "0": False}.get(os.environ.get("HARDWOOD_FUSED", ""), "auto")
TIER_UP_SECONDS = 60.0


class LearnerClock:
    """Seconds the learner has spent on trees the fused grower could have grown, on this
    machine: this process's, plus those earlier processes left in the state file ``name`` of
    hardwood's cache folder (None: this process only). Many short trainings thus add up to
    the compile, as one long one does."""

    SAVE_EVERY = 0.5  # seconds not yet in the file

    def __init__(self, name="learner_seconds"):
        self.name = name
        self.past = None
        self.here = 0.0
        self.unsaved = 0.0

    def _read(self):
        try:
            text = read_state(self.name) if self.name else None
            value = float(text) if text else 0.0
            return value if np.isfinite(value) and value >= 0 else 0.0
        except ValueError:
            return 0.0

    def total(self):
        if self.past is None:
            self.past = self._read()
        return self.past + self.here

    def add(self, seconds):
        self.here += seconds
        self.unsaved += seconds
        if self.name and self.unsaved >= self.SAVE_EVERY:
            self.past = self._read()  # other processes may have added to it meanwhile
            write_state(self.name, repr(self.past + self.unsaved))
            self.past += self.unsaved
            self.here -= self.unsaved
            self.unsaved = 0.0


CLOCK = LearnerClock()
# unbounded lossguide on the fused grower: room for this many leaves first, four times more
# while a tree fills it, up to a histogram pool of this many bytes
UNBOUNDED_FIRST_LEAVES = 256
UNBOUNDED_POOL_BYTES = 2 << 30


def features_drawn(fraction, available, rounding="down"):
    """How many of ``available`` features a column sample of ``fraction`` keeps: at least
    one, rounded down as XGBoost does, or to the nearest count (``rounding="nearest"``) as
    LightGBM does under its ``feature_fraction`` names (0.25 of 10 features: 2 in XGBoost,
    3 in LightGBM)."""
    if fraction >= 1.0:
        return available
    count = fraction * available
    return max(1, int(count + 0.5) if rounding == "nearest" else int(count))


@dataclass
class GrowParams:
    learning_rate: float = 0.3
    reg_lambda: float = 1.0
    reg_alpha: float = 0.0
    gamma: float = 0.0
    min_child_weight: float = 1.0
    max_depth: int = 6  # 0: no limit
    max_leaves: int = 0  # 0: no limit
    grow_policy: str = "depthwise"
    colsample_bynode: float = 1.0
    colsample_rounding: str = "down"
    max_cat_to_onehot: int = 4
    max_cat_threshold: int = 64
    # one per field, -1/0/+1 (train.params.resolve_monotone); None or all 0: no constraints
    monotone_constraints: tuple = None
    # feature index lists (train.params.resolve_interactions)
    interaction_constraints: list = None
    # LightGBM's rules of the constraints (under num_leaves or its objective names): the root
    # splits on the features of some interaction set only (XGBoost's: on any), and monotone
    # gains are its basic method's (backends/split.scan_bounded_range)
    lightgbm_constraints: bool = False
    # LightGBM's growth (train.params: brought by num_leaves): a field with no split above
    # gamma in a node is never scanned in that node's subtree, and a split needs a gain above 0
    # only (XGBoost's: above RT_EPS)
    drop_unsplittable: bool = False
    # LightGBM's least rows of a child, counted from the hessians as LightGBM counts them
    # (backends/split._scan_numeric_short); 0: none
    min_data_in_leaf: int = 0
    # XGBoost's cap on a leaf's weight (before the learning rate), whose gains are those of
    # the held weights: the bounds [-max_delta_step, max_delta_step] of every node under the
    # monotone constraints' scan (backends/split.scan_bounded_range); 0: none
    max_delta_step: float = 0.0
    # each node's cover, which TreeSHAP weighs its paths by: its rows, as LightGBM's
    # (under its names: num_leaves or its objective names), or its hessian sum, as XGBoost's
    lightgbm_cover: bool = False
    # where a split sends the missing values (backends/split.XGB_MISSING, LGB_MISSING):
    # "xgboost", or "lightgbm" (train.params: brought by num_leaves; Grower.missing_rules)
    missing_rule: str = "xgboost"


@dataclass
class Profile:
    seconds: dict = field(default_factory=lambda: {"histogram": 0.0, "split": 0.0,
                                                   "partition": 0.0, "update": 0.0,
                                                   "other": 0.0})

    def add(self, step, t0):
        t = time.perf_counter()
        self.seconds[step] += t - t0
        return t


class SegmentLeaves:
    """What the fused grower leaves behind: each leaf's rows, a segment of ``rows``."""

    def __init__(self, backend, rows, begins, ends):
        self.backend, self.row_ids, self.begins, self.ends = backend, rows, begins, ends

    def add(self, values, pred):
        """⑤ ``pred[rows of leaf i] += values[i]``."""
        self.backend.add_fused_leaf_values(self.row_ids, self.begins, self.ends, values, pred)

    def rows(self, i):
        return self.row_ids[self.begins[i]:self.ends[i]]


class Grower:
    """Grows one tree: with the fused one-call CPU grower (``backends/cpu_grower.py``) on one
    in-core page once it is compiled (see ``FUSED``), else with the tree learner over pages
    (``train/learner.py``). Both build the same trees, bit for bit."""

    def __init__(self, backend, pages, bin_mapper, params: GrowParams, profile: Profile, rng):
        self.backend = backend
        self.pages = pages
        self.bm = bin_mapper
        self.p = params
        self.profile = profile
        self.rng = rng
        self.offsets = np.ascontiguousarray(bin_mapper.offsets[:-1], dtype=np.int64)
        self.n_value_bins = np.ascontiguousarray(bin_mapper.n_value_bins, dtype=np.int64)
        self.is_cat = np.ascontiguousarray(bin_mapper.is_categorical, dtype=np.bool_)
        self.max_field_bins = int(bin_mapper.n_bins.max())
        self.d = len(self.offsets)
        mono = params.monotone_constraints
        # the fields' monotone constraints, or None: the learner grows constrained trees
        self.mono = (np.asarray(mono, dtype=np.int64) if mono is not None and any(mono)
                     else None)
        # the root's bounds on its weight: max_delta_step's, which every node inherits, and
        # the monotone constraints' scan then holds the weights (no constraint on any field)
        step = float(params.max_delta_step)
        self.root_bounds = (-step, step) if step > 0 else (-np.inf, np.inf)
        if step > 0 and self.mono is None:
            self.mono = np.zeros(self.d, dtype=np.int64)
        self.interactions = None  # (sets, d) bool, each row one interaction set
        if params.interaction_constraints is not None:
            sets = np.zeros((len(params.interaction_constraints), self.d), dtype=bool)
            for k, group in enumerate(params.interaction_constraints):
                sets[k, group] = True
            self.interactions = sets
        # each field's missing rule (split.XGB_MISSING, ...): LightGBM's are set by
        # ``use_lightgbm_missing``, from the training rows
        self.missing_rules = np.full(self.d, XGB_MISSING, dtype=np.int64)
        self._bin_counts = None  # (bin_counts)
        # per field, the codes whose threshold is LightGBM's -1e-35, +1e-35, or either by the
        # scan that took it (use_lightgbm_missing; -1: none)
        self.zero_edges = np.full((self.d, 3), -1, dtype=np.int64)
        self._cycles = np.zeros(3, dtype=np.int64)
        self.learner = TreeLearner(pages, self)
        self.trees_left = 0  # trees this training still plans to grow (0: not known)
        self._fused = None  # FUSED="auto": whether the fused grower is taken (None: not asked)
        self._learner_mean = 0.0  # seconds per tree of the learner, here

    def use_lightgbm_missing(self, n_rows):
        """LightGBM's missing rules (``missing_rule="lightgbm"``), from every row's bins
        (one histogram of unit weights over ``n_rows``, the pages' rows): a numeric field
        with missing values scans as LightGBM's does (``split.LGB_MISSING``); one without
        any (its missing_type None) reads a missing value as 0.0, so its rule is the value
        bin LightGBM's bin of 0.0 falls in: the bin of the field's greatest value <= 0 (an
        empty bin of 0.0 between negative and positive values goes with the negative ones at
        the threshold between them, LightGBM's reverse scan taking the higher of the tied
        thresholds), bin 0 where the field has none. Categorical fields keep theirs.

        Where LightGBM's most frequent bin of a field with missing values is its bin 0
        (``LGB_MISSING_BIN0``), its histograms leave that bin out, and its forward scan
        counts rows otherwise. Its most frequent bin is its bin of 0.0 unless another holds
        70% of the rows (its ``kSparseThreshold``). LightGBM gives 0.0 a bin of its own: its
        bin 0 where the field has no negative value, an empty one where it has no 0 either
        (so then its bin 0 is the most frequent unless some bin holds 70% of the rows); a
        field with negative values has its bin 0 the most frequent only if that bin holds
        70%. (hardwood's bins are LightGBM's where each value has one; ``BinMapper.lowest``
        tells which case a field is, unknown for sparse matrices: then hardwood's bin of
        0.0 stands for LightGBM's.)

        LightGBM's edges next to 0.0 are -1e-35 and +1e-35, where hardwood's are midpoints:
        ``zero_edges`` says which thresholds ``finish_arrays`` moves there."""
        counts = self.bin_counts(n_rows)
        bm = self.bm
        zero_bins = bm.transform(np.zeros((1, self.d)))[0][0].astype(np.int64)
        lowest = getattr(bm, "lowest", None)
        known = lowest is not None and hasattr(bm, "below_zero")
        if known:
            def bins_of(v):  # (-1 where v is NaN: no such value)
                b = bm.transform(np.nan_to_num(v)[None, :])[0][0].astype(np.int64)
                return np.where(np.isnan(v), -1, b)
            # (a value within 1e-35 of 0.0 is in LightGBM's bin of 0.0: no edge moves past it)
            below = bins_of(np.where(bm.below_zero > -ZERO_EDGE, np.nan, bm.below_zero))
            above = bins_of(np.where(bm.above_zero <= ZERO_EDGE, np.nan, bm.above_zero))
            zero = np.where(bm.has_zero, zero_bins, -1)
            # NaN reads as 0.0: the bin of 0.0, else of the greatest value below it, else 0;
            # hardwood's bin of 0.0 where the values are not known (sparse matrices)
            as_zero = np.where(zero >= 0, zero, np.maximum(below, 0))
            as_zero = np.where(np.isnan(lowest), zero_bins, as_zero)
            self.zero_edges = _zero_edges(below, zero, above, self.n_value_bins)
        else:
            as_zero = zero_bins
        dense = 0.7 * max(n_rows, 1)
        for j in range(self.d):
            if self.is_cat[j]:
                continue
            nv = int(self.n_value_bins[j])
            cnt = counts[self.offsets[j]:self.offsets[j] + nv + 1]
            if cnt[nv] < 0.5:
                self.missing_rules[j] = int(as_zero[j])
                continue
            most = int(np.argmax(cnt))
            low = np.nan if lowest is None else lowest[j]
            if low < 0:
                bin0 = most == 0 and cnt[0] >= dense
            elif low > 0:  # (LightGBM's bin 0: its empty bin of 0.0)
                bin0 = cnt[most] < dense
            else:
                zero_bin = 0 if low == 0 else int(zero_bins[j])
                bin0 = (most if most == zero_bin or cnt[most] >= dense else zero_bin) == 0
            if low > 0:
                self.missing_rules[j] = LGB_MISSING_BIN0_ZERO if bin0 else LGB_MISSING_ZERO
            else:
                self.missing_rules[j] = LGB_MISSING_BIN0 if bin0 else LGB_MISSING

    def lightgbm_threshold(self, f, code, default_left, threshold):
        """A numeric split's threshold as LightGBM places it next to 0.0 (``zero_edges``):
        -1e-35 below its bin of 0.0, +1e-35 above; between a negative and a positive value
        without 0.0 between them, +1e-35 where its reverse scan took it (the missing values
        left, or a field without any), else -1e-35."""
        lo, hi, straddle = self.zero_edges[f]
        if code == lo:
            return -ZERO_EDGE
        if code == hi:
            return ZERO_EDGE
        if code == straddle:
            return ZERO_EDGE if (default_left or self.missing_rules[f] >= 0) else -ZERO_EDGE
        return threshold

    def bin_counts(self, n_rows):
        """The rows of each bin over every row (float64, total bins): one histogram of unit
        weights over the pages' ``n_rows`` rows (Dask: ``DaskPages.bin_counts``, on the
        workers), made once."""
        if self._bin_counts is None:
            own = getattr(self.pages, "bin_counts", None)
            if own is not None:
                self._bin_counts = own()
            else:
                ones = np.ones(n_rows, dtype=np.float32)
                self.pages.start(np.arange(n_rows, dtype=np.int32))
                self._bin_counts = np.asarray(self.pages.histograms([0], ones, ones),
                                              dtype=np.float64).reshape(-1, 2)[:, 1]
        return self._bin_counts

    def lightgbm_features(self, n_rows, min_data_in_leaf):
        """The fields LightGBM keeps (bool, d), its column sampling's pool: not trivial (at
        least two bins hold rows, the missing bin counted) and, with ``min_data_in_leaf``,
        not pre-filtered (its ``feature_pre_filter``: some threshold leaves that many rows
        on both sides; a categorical field of more than one category always passes)."""
        counts = self.bin_counts(n_rows)
        keep = np.zeros(self.d, dtype=bool)
        for j in range(self.d):
            nv = int(self.n_value_bins[j])
            cnt = counts[self.offsets[j]:self.offsets[j] + nv + 1]
            if np.count_nonzero(cnt > 0.5) < 2:
                continue
            if self.is_cat[j] and np.count_nonzero(cnt > 0.5) > 2:
                keep[j] = True
                continue
            left = np.cumsum(cnt[:-1]) if not self.is_cat[j] else cnt[:-1]
            keep[j] = bool(np.any((left >= min_data_in_leaf)
                                  & (n_rows - left >= min_data_in_leaf)))
        return keep

    def release(self):
        """Drop the pages, the backend and the learner (which refers back to this grower):
        a grower over one round's compacted sample frees that sample's bins as soon as the
        round ends, not at some later garbage collection."""
        self.learner = self.backend = self.pages = None

    def _fast_shape(self):
        """(node capacity, histogram slots) of a tree of bounded size, or None."""
        p = self.p
        leaves = p.max_leaves if p.max_leaves > 0 else None
        if p.max_depth > 0 and p.max_depth <= 24:
            by_depth = 2 ** p.max_depth
            leaves = by_depth if leaves is None else min(leaves, by_depth)
        if leaves is None or leaves > 1 << 16:
            return None
        if p.grow_policy == "depthwise":
            # a level's nodes keep their histograms while the next level's are built: at
            # most one per leaf, and none below depth max_depth - 1 (it was leaves // 2 + 1,
            # too few with max_leaves: a level of 8 nodes for max_leaves=9 overran the pool)
            slots = leaves if p.max_depth <= 0 else min(leaves, 2 ** (p.max_depth - 1))
            slots += 1
        else:
            slots = leaves + 1
        return 2 * leaves - 1, slots

    def allowed_features(self, used):
        """Interaction constraints: the features a node may split on, given ``used``, those
        split on above it (bool, d): them, and every set that holds all of them
        (XGBoost's and LightGBM's rule); at the root, every feature or, with
        ``lightgbm_constraints``, those of some set."""
        sets = self.interactions
        if not used.any():
            return sets.any(axis=0) if self.p.lightgbm_constraints else np.ones(self.d, bool)
        holds_all = ~(used[None, :] & ~sets).any(axis=1)
        return used | sets[holds_all].any(axis=0)

    def _fusable(self):
        # (constrained trees grow on the learner: the fused kernel has no constraints)
        return (self.mono is None and self.interactions is None
                and getattr(self.backend, "grow_fused", None) is not None
                and self.pages.n_pages == 1 and self.pages.in_core
                and (self._fast_shape() is not None or self.p.grow_policy == "lossguide"))

    def takes_fused(self):
        """Whether the fused grower grows the trees now (as far as known before the first).
        The kernels around a tree run as its neighbours do: after the fused grower's
        ``prange`` kernels, ``prange`` kernels (see ``cpu.add_values_blocks``); around the
        learner's, serial kernels on Python threads (an OpenMP worker spinning after a
        ``prange`` kernel slows the next kernels on Python threads for milliseconds)."""
        return self._fusable() and FUSED is not False and (FUSED is True or bool(self._fused))

    def launches_prange(self):
        """Whether the kernels of this training loop launch as ``prange`` kernels: the fused
        grower's, or those of a backend that launches its own so (``prange_launches``:
        ``sparse``); then the gradients, ②, the subtraction and the row ids launch so too.
        Otherwise every kernel runs on ``run_ranges``' Python threads."""
        return self.takes_fused() or bool(getattr(self.backend, "prange_launches", False))

    def class_roots(self, rows, g, h):
        """① The root histograms of the trees of a round that all start from ``rows``, one
        per row of ``g`` and ``h`` ((K, n)), built in one pass (``class_root_histograms``):
        a (K, 2 * total_bins) array for ``grow(..., root=roots[k])``, or None where the
        pages do not offer it (several pages, pages out of core, other backends). The trees
        are those grown without it, bit for bit."""
        be = self.backend
        if (g.shape[0] < 2 or getattr(be, "class_root_histograms", None) is None
                or self.pages.n_pages != 1 or not self.pages.in_core):
            return None
        t0 = time.perf_counter()
        roots = be.class_root_histograms(rows, g, h, parallel=self.takes_fused())
        self.profile.add("histogram", t0)
        return roots

    def grow(self, rows, g, h, tree_mask, root=None):
        """One tree over ``rows`` (ascending row ids; reordered in place). Returns (Tree,
        BinnedTree, leaves: ``leaves.add(values, pred)`` adds each leaf's value to its rows).
        ``root``: the root's histogram of ``rows`` under (g, h), a row of ``class_roots``,
        or None (built here)."""
        shape = self._fast_shape()
        avail = int(tree_mask.sum())
        p = self.p
        k = features_drawn(p.colsample_bynode, avail, p.colsample_rounding)
        keys = NodeKeys(self.rng, self.d, k, tree_mask)
        self.trees_left = max(0, self.trees_left - 1)
        fusable = self._fusable()
        if fusable and self._take_fused(rows, g, h, tree_mask, keys):
            if shape is not None:
                return self._grow_fast(rows, g, h, tree_mask, keys, *shape, root=root)
            return self._grow_fast_unbounded(rows, g, h, tree_mask, keys, root)
        t0 = time.perf_counter()
        with CompileClock() as compiling:
            out = self.learner.grow(rows, g, h, tree_mask, keys, root)
        if fusable:
            spent = max(0.0, time.perf_counter() - t0 - compiling.seconds)
            CLOCK.add(spent)
            self._learner_mean = spent if self._learner_mean == 0 else (
                0.8 * self._learner_mean + 0.2 * spent)
        return out

    def _take_fused(self, rows, g, h, tree_mask, keys):
        """Whether the fused grower grows this tree (see ``FUSED``)."""
        if FUSED != "auto":
            return bool(FUSED)
        if self._fused is None:
            self._fused = self.backend.fused_compiled(rows, g, h, self._layout(), tree_mask,
                                                      keys.keys, keys.k, self.p, 0, 1, 1,
                                                      self._cycles)
        if not self._fused and (CLOCK.total() + self._learner_mean * self.trees_left
                                >= TIER_UP_SECONDS):
            self._fused = True
        return self._fused

    def _layout(self):
        return (self.offsets, self.n_value_bins, self.is_cat, self.max_field_bins,
                self.missing_rules)

    def _grow_fast_unbounded(self, rows, g, h, tree_mask, keys, root=None):
        """Lossguide with no leaf bound on the fused grower: grow with room for ``L`` leaves;
        a tree that stops short of ``L`` is the unbounded tree, one that fills them is grown
        again with four times the room (from the same rows, in the same order). The learner
        takes over when the histogram pool would pass UNBOUNDED_POOL_BYTES."""
        n = rows.shape[0]
        first = rows.copy()
        leaves = min(UNBOUNDED_FIRST_LEAVES, max(2, n))
        pool_bytes = 16 * int(self.bm.offsets[-1])  # (g, h) float64 per bin
        while True:
            if (leaves + 1) * pool_bytes > UNBOUNDED_POOL_BYTES:
                rows[:] = first
                return self.learner.grow(rows, g, h, tree_mask, keys, root)
            out = self._grow_fast(rows, g, h, tree_mask, keys, 2 * leaves - 1, leaves + 1,
                                  max_leaves=leaves, root=root)
            if out[0].n_leaves < leaves or leaves > n:
                return out
            rows[:] = first
            leaves *= 4

    def _grow_fast(self, rows, g, h, tree_mask, keys, cap, n_slots, max_leaves=None,
                   root=None):
        p = self.p
        be = self.backend
        max_leaves = int(p.max_leaves) if max_leaves is None else max_leaves
        t0 = time.perf_counter()
        out = be.grow_fused(rows, g, h, self._layout(), tree_mask, keys.ensure(cap), keys.k, p,
                            max_leaves, cap, n_slots, self._cycles, root=root)
        t1 = time.perf_counter()
        # split the wall time of the call over ① ② ③ by the cycles counted inside it
        spent = self._cycles * seconds_per_cycle()
        total = max(spent.sum(), 1e-12)
        for k, step in enumerate(("histogram", "split", "partition")):
            self.profile.seconds[step] += (t1 - t0) * spent[k] / total
        self._cycles[:] = 0
        tree, binned, (lb, le, _) = self.finish_arrays(*out)
        return tree, binned, SegmentLeaves(be, rows, lb, le)

    # -- output ---------------------------------------------------------------------
    def finish_arrays(self, feature, code, default_left, left, right, begin, end, G, H, gain, tables,
                      bounds=None):
        """Node arrays -> (Tree, BinnedTree, leaf segments). ``bounds``: (lower, upper) of each
        node's weight under monotone constraints, which the leaves' values are held within."""
        p = self.p
        n = feature.shape[0]
        is_leaf = feature < 0
        value = np.zeros(n)
        for i in np.flatnonzero(is_leaf):
            # a leaf lighter than min_child_weight (a root too light to split) takes no step,
            # as XGBoost's: with weights of 0.002 its root stepped -G/(H+lambda) (0.6 off),
            # and with learning_rate=10 such roots ran the margins off to -1400
            if H[i] >= p.min_child_weight and H[i] > 0:
                w = leaf_weight(G[i], H[i], p.reg_lambda, p.reg_alpha)
                if bounds is not None:
                    w = min(max(w, bounds[0][i]), bounds[1][i])
                value[i] = w * p.learning_rate
        threshold = np.zeros(n)
        is_cat = np.zeros(n, dtype=bool)
        cat_offset = np.full(n, -1, dtype=np.int64)
        words = []
        n_words = 0
        table_offset = np.zeros(n, dtype=np.int64)
        flat_tables = []
        pos = 0
        for i in np.flatnonzero(~is_leaf):
            f = int(feature[i])
            nv = int(self.n_value_bins[f])
            tbl = tables[i, : nv + 1].copy()
            if self.is_cat[f]:
                is_cat[i] = True
                # category c goes where its bin goes (grouped rare categories together)
                bits = bitset_from_mask(tbl[self.bm.category_bins(f)].astype(bool))
                cat_offset[i] = n_words
                words.append(bits)
                n_words += bits.size
                threshold[i] = np.nan
            elif code[i] < 0:  # nothing but the missing values left
                # (XGBoost's under monotone constraints; LightGBM's where its bin 0 is an
                # empty bin of 0.0: every value <= its edge goes with them)
                threshold[i] = (ZERO_EDGE if self.missing_rules[f] in (
                    LGB_MISSING_ZERO, LGB_MISSING_BIN0_ZERO) else -np.inf)
            else:
                threshold[i] = self.bm.upper_edges[f][code[i]]
                if p.missing_rule == "lightgbm":
                    threshold[i] = self.lightgbm_threshold(f, code[i], default_left[i],
                                                           threshold[i])
            table_offset[i] = pos
            pos += tbl.size
            flat_tables.append(tbl)
        tree = Tree.from_arrays(
            feature=feature, threshold=threshold, left=left, right=right,
            default_left=default_left, is_categorical=is_cat, cat_offset=cat_offset,
            value=value, gain=gain, cover=(end - begin).astype(np.float64)
            if p.lightgbm_cover else H, count=end - begin,
            cat_bitsets=np.concatenate(words) if words else np.zeros(0, dtype=np.uint32))
        binned = BinnedTree(
            feature=feature.astype(np.int64), table_offset=table_offset,
            table=np.concatenate(flat_tables) if flat_tables else np.zeros(1, dtype=np.uint8),
            left=left.astype(np.int64), right=right.astype(np.int64), value=value)
        leaves = np.flatnonzero(is_leaf)
        segments = (begin[leaves], end[leaves], leaves)
        return tree, binned, segments


def _zero_edges(below, zero, above, n_value_bins):
    """(d, 3) codes whose threshold LightGBM puts at -1e-35, +1e-35, or either (``below``,
    ``zero``, ``above``: each field's bins of its greatest value < 0, of 0.0, of its least
    value > 0, -1 where none): the code below a bin of 0.0 alone, that bin, and the code
    between a negative and a positive value with no 0.0 between; with only negative
    values, the last code (LightGBM's bin of 0.0 above them, its upper edge +inf)."""
    out = np.full((below.size, 3), -1, dtype=np.int64)
    for j in range(below.size):
        b, z, a = int(below[j]), int(zero[j]), int(above[j])
        if z >= 0:
            if b >= 0 and b == z - 1:
                out[j, 0] = b
            if a >= 0 and a == z + 1:
                out[j, 1] = z
        elif b >= 0 and a >= 0 and a == b + 1:
            out[j, 2] = b
        elif b >= 0 and a < 0 and b == int(n_value_bins[j]) - 1:
            out[j, 0] = b
    return out
