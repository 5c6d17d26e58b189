"""``pred`` and ``vpred``: the padded, branch-free walk of ``predict.pred`` (rows in ``v``
interleaved lanes), and for deep or unbalanced trees the unpadded walk of ``predict.vwalk``."""
from __future__ import annotations

import numba
import numpy as np

from . import pred as _pred
from . import chainwalk as _chainwalk
from . import vwalk as _vwalk
from .base import SERIAL_ROWS, CompiledModel, register
from . import treeshape

# vpred's v by (feature count, padded depth), from benchmarks/predict_synthetic.py
# (see benchmarks/README.md, "Prediction"): rows of feature-count buckets, columns of depth.
V_TABLE_FEATURES = (64, 256)  # <= 64, <= 256, more
V_TABLE = {0: {3: 8, 5: 16, 7: 16, 9: 16, 11: 16},
           1: {3: 8, 5: 8, 7: 8, 9: 8, 11: 8},
           2: {3: 8, 5: 8, 7: 8, 9: 8, 11: 8}}

# a tree takes vwalk's unpadded walk rather than padding when it is deeper than pred can pad,
# or when padding would multiply its leaves by more than WALK_PAD_FACTOR (benchmarks/README.md)
WALK_PAD_FACTOR = 8
DIRECT_FACTOR = 4  # see PredRuntime._build (benchmarks/README.md: the synthetic study)
# lanes of the ordered-key walk (pred.key_walk_source; benchmarks/README.md, issue 20): 12
# lanes, each in a register of its own (_intrinsics.key_lanes), beat 8 and 16; a block is 8
# groups of lanes (96 rows: 128 left 4 lanes idle in each block's last group)
KEY_V = 12
KEY_BLOCK_GROUPS = 8
# The chained walk (predict.chainwalk) serves unpadded trees of one-output numerical models
# up to this mean internal-node count (benchmarks/README.md, issue 20: LightGBM binary, 500
# trees, 200k rows, 2 threads, chained against vwalk: 31 leaves 0.89 vs 0.48 M rows/s, 63
# leaves 0.60 vs 0.35, 127 leaves 0.33 vs 0.30, 255 leaves 0.18 vs 0.22; LambdaMART 31
# leaves 0.40 vs 0.28). Past it the walk's 32-byte nodes outgrow the caches.
CHAIN_MAX_NODES = 180
CHAIN_V = 8  # its lanes (8, 12 and 16 within the noise of each other on LambdaMART)
WALK_V = 8  # the walk's tuned v: 8 beat 4 and 16 on LightGBM 255-leaf and LambdaMART models
# Rows per block of the unpadded walk when its trees are big (random forests grown to full
# depth: 10^4-10^5 nodes a tree): about one row per node, so that the rows of a block reuse a
# tree's nodes while they are in cache, instead of the 128 rows (BLOCK_ROWS) that suit small
# trees. Capped so that every thread gets two blocks, and (unless rows are read in place) so
# that a block's transposed copy of the used features stays small (benchmarks/README.md,
# "Random forests", "Prediction": 30 trees of 20k and 50k nodes, 50k rows, 2 threads: 128
# rows a block 0.20 and 0.65 s, 9,709 rows 0.13 and 0.21 s).
WALK_BIG_TREE = 4096  # mean nodes per walked tree from which the blocks grow
WALK_BLOCK_MAX = 1 << 15
WALK_COPY_BYTES = 4 << 20


def tuned_v(n_features, depth):
    b = 0 if n_features <= V_TABLE_FEATURES[0] else (1 if n_features <= V_TABLE_FEATURES[1] else 2)
    row = V_TABLE[b]
    key = min(row, key=lambda d: (abs(d - depth), d))
    return row[key]


def walks_unpadded(tree, d, rule):
    """Whether ``tree`` (of depth ``d``) takes the unpadded walk."""
    if rule in ("all", "none"):
        return rule == "all"
    if d > _pred.MAX_DEPTH:
        return True
    n_leaves = int(np.sum(tree.feature < 0))
    return d > 3 and (1 << d) > WALK_PAD_FACTOR * n_leaves


@register
class PredRuntime(CompiledModel):
    """``pred`` (v = 1) and, as :class:`VPredRuntime`, ``vpred`` (v > 1): trees padded to full
    depth, a branch-free index update, ``v`` rows interleaved; deep or unbalanced trees take
    the unpadded branch-free walk of ``predict.vwalk``."""

    runtime = "pred"
    binds_one_row = True

    def __init__(self, model, iteration_range=None, tree_range=None, v=1):
        self.v = int(v)
        if self.v not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"v must be one of 1, 2, 4, 8, 16, 32, got {v!r}")
        super().__init__(model, iteration_range, tree_range)

    def _build(self):
        # runs of W trees that share their splits (a forest's per-class trees) are walked
        # once, and the leaf reached adds W values (treeshape.shared_structure)
        W = self.n_outputs
        if not treeshape.shared_structure(self.model.trees, self.model.tree_group, self.t0,
                                          self.t1, W):
            W = 1
        self.width = W
        heads = list(range(self.t0, self.t1, W))
        trees = [self.model.trees[h] for h in heads]
        depths = [treeshape.depth(t) for t in trees]
        walks = [walks_unpadded(t, d, self._walk) for t, d in zip(trees, depths)]
        if _pred.padded_size([d for d, w in zip(depths, walks) if not w]) > \
                _pred.MAX_PADDED_NODES:
            walks = [True] * len(trees)  # padding all the others would take too much memory
        walked = [h for h, w in zip(heads, walks) if w]
        padded = [h for h, w in zip(heads, walks) if not w]
        layout = _pred.PredLayout(self.model.trees, self.model.tree_group, self.t0, self.t1,
                                  pad=self._pad, sel=padded, width=W)
        self.layout = layout
        self.cat = layout.has_cat
        # the features the splits use: only they are copied (twice, see self.dual) into a block's
        # transposed rows (a node stores its feature's place among them, times v)
        used = [t.feature[t.feature >= 0] for t in trees]
        self.used = np.unique(np.concatenate(used + [np.zeros(1, np.int64)])).astype(np.int64)
        position = np.zeros(self.n_features, np.int64)
        position[self.used] = np.arange(self.used.size)
        # rows read in place (no block copy) when the walk is short next to the
        # used-feature count: both cost about one step per used feature and row. The modules
        # compile only the walks of this choice.
        self.direct = bool(DIRECT_FACTOR * self.used.size > sum(depths))
        U = self.used.size
        # the dual walk (pred.transposed_block) where the block copy is read and no split is
        # categorical: the used features listed twice, a numerical default-left split reads
        # the second copy (NaN there is -inf), so rows with NaN need no test
        self.dual = not self.direct and not self.cat
        used2 = np.concatenate([self.used, self.used])
        # the dual walk compares ordered keys (pred.key_walk_source) unless told otherwise
        self.keyed = self.dual and self._keyed
        self.key_v = self.v if self.v else KEY_V
        self.passes = []
        for g in layout.groups:
            v = self.key_v if self.keyed else (self.v if self.v else
                                                tuned_v(self.n_features, g["D"]))
            g["v"] = v
            u = position[g["feat"]]
            if self.dual:
                u = u + U * ((g["flags"] & 3) == 1)
            # unsigned: no negative-index fix-up
            g["featu"] = (u * v).astype(_pred.feat_dtype(2 * U * v))
            if self.keyed:
                rec32, rec64 = _pred.key_arrays(g["featu"], g["thr32"], g["thr64"], g["D"])
                self.passes.append((_pred.kernels(v, False, W > 1, keyed=True, depth=g["D"]), (
                    g["D"], g["featu"], rec32, rec64, g["flags"], g["catoff"],
                    layout.bitsets, g["info"], g["leafval"], g["leafid"]), "keyed", used2))
                continue
            self.passes.append((_pred.kernels(v, self.cat, W > 1, self.direct), (
                g["D"], g["featu"], g["thr32"], g["thr64"], g["flags"], g["catoff"],
                layout.bitsets, g["info"], g["leafval"], g["leafid"]), False,
                used2 if self.dual else self.used))
        self.walked = len(walked) * W  # trees on the unpadded walk
        if walked:  # deep or unbalanced trees: the unpadded walk (predict.vwalk)
            v = self.v if self.v else WALK_V
            self.walk_v = v
            cat = bool(self.cat or any(self.model.trees[h].is_categorical.any()
                                       for h in walked))
            dual = not self.direct and not cat
            w = _vwalk.WalkLayout(self.model.trees, self.model.tree_group, walked, self.t0, v,
                                  _pred.feat_dtype(2 * U * v), position, width=W,
                                  dual=U if dual else 0)
            a = w.arrays
            # one output, numerical splits, the block copy: the chained walk for raw scores
            # (predict.chainwalk); the walk below then serves output='leaf' only
            internal = sum(int(np.count_nonzero(self.model.trees[h].feature >= 0))
                           for h in walked) / len(walked)
            chained = (self._chain and dual and W == 1 and self.n_outputs == 1
                       and internal <= CHAIN_MAX_NODES)
            if chained:
                c = _chainwalk.ChainLayout(w, v, CHAIN_V)
                self.passes.append(((_chainwalk.kernels(CHAIN_V, False),
                                     _chainwalk.kernels(CHAIN_V, True)), c, "chain", used2))
            self.passes.append((_vwalk.kernels(v, cat, W > 1, self.direct), (
                a["ch"], a["feat"], a["thr32"], a["thr64"], a["flags"], a["catoff"], w.bitsets,
                a["info"], a["leafval"], a["leafid"]), "leaf" if chained else True,
                used2 if dual else self.used))
        self.walk_block = self.block
        if walked:
            nodes = sum(self.model.trees[h].n_nodes for h in walked) / len(walked)
            if nodes >= WALK_BIG_TREE:
                cap = WALK_BLOCK_MAX if self.direct else \
                    WALK_COPY_BYTES // (8 * self.passes[-1][3].size)
                self.walk_block = int(max(self.block, min(nodes, cap)))
        self.const = layout.const_trees
        self.one_row_reason = (f"{self.walked} trees take the unpadded walk" if walked else
                               _pred.one_row_unsupported_reason(self.model.trees, self.t0,
                                                                self.t1))
        if self.one_row_reason is None:
            if W > 1:  # the one-row layout pads tree by tree
                layout = _pred.PredLayout(self.model.trees, self.model.tree_group, self.t0,
                                          self.t1, pad=self._pad)
            self.one_row = _pred.OneRowLayout(layout, self.t1 - self.t0, self.n_outputs,
                                              self.n_features, self.base, self.ncat)
            self._bind_one_row(self.one_row.kernel, self.one_row.blob)

    # which trees take the unpadded walk: "auto" (see walks_unpadded), "all" or "none"
    _walk = "auto"
    # the padded trees of a numerical model on the block copy take the ordered-key walk
    # (False: the float walk, which the tests compare it with)
    _keyed = True
    # one-output numerical models' unpadded trees take the chained walk for raw scores
    # (False: vwalk's, which the tests compare it with)
    _chain = True
    block = _pred.BLOCK_ROWS  # rows per block (16-256 measured within noise of each other)
    _pad = "auto"

    def _go(self, X, out, lout, want_leaf):
        n = X.shape[0]
        f32 = X.dtype == np.float32
        for mod, arrays, walk, used in self.passes:
            if walk == ("leaf" if not want_leaf else "chain"):
                continue  # the chained walk's trees: raw scores there, leaf ids from vwalk
            if walk == "chain":
                mod = mod[1] if f32 else mod[0]
                run = mod.run_serial if n < SERIAL_ROWS else mod.run_parallel
                run(X, self.block, used, *arrays.arrays(f32), arrays.starts, arrays.sinks,
                    arrays.group, out)
                continue
            first, feat, thr32, thr64, flags, catoff, bits, info, leafval, leafid = arrays
            block = self.block
            if walk == "keyed":  # whole groups of lanes (the last one of a block is partial)
                block = KEY_BLOCK_GROUPS * max(self.key_v, KEY_V)
            elif walk and self.walk_block > block:  # big trees: see WALK_BIG_TREE
                block = min(self.walk_block, max(block, -(-n // (2 * numba.get_num_threads()))))
            args = (block, used, self.direct, first, feat, thr32 if f32 else thr64,
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


@register
class VPredRuntime(PredRuntime):
    """``vpred``: ``pred`` with ``v`` rows interleaved (``v`` tuned per feature count and
    depth: :func:`tuned_v`, or given)."""

    runtime = "vpred"

    def __init__(self, model, iteration_range=None, tree_range=None, v=None):
        ok = v is None or (isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                           and int(v) in (1, 2, 4, 8, 16, 32))
        if not ok:  # v=0, 2.5 or True were taken as "tuned", 2 or 1 without a word
            raise ValueError(f"v must be None (tuned) or one of 1, 2, 4, 8, 16, 32, got {v!r}")
        self.v = 0 if v is None else int(v)
        CompiledModel.__init__(self, model, iteration_range, tree_range)
