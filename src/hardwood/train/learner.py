"""The tree learner: one tree grown over pages (DESIGN.md, "One learner over pages").

The learner runs the host side of the step pipeline and asks its pages (``backends/pages.py``)
for the row work:

    for each level (depthwise) or leaf (lossguide):
        pages: ① partial histograms of the smaller children, summed in page order
        host:  ② best split per node (train/split.py), the larger child's histogram by
               subtraction, the choice of the nodes to split
        pages: ③ partition each node's rows into its children
    pages: ⑤ leaf values added to the predictions (the Booster calls it)

It numbers nodes, draws ``colsample_bynode``'s features (``NodeKeys``) and breaks ties as the
fused one-call CPU grower (``backends/cpu_grower.py``) does, so that on one in-core page the two
build the same trees, bit for bit.
"""
from __future__ import annotations

import heapq
import time

import numpy as np

from ..backends.split import (RT_EPS, categorical_left_set, child_bounds, find_best_splits,
                              node_feature_masks, subtract_histograms)


class NodeKeys:
    """``colsample_bynode``'s random keys: row ``i`` ranks the features for node ``i``, which
    splits on the ``k`` available features of smallest key. Each tree draws its rows from a
    generator of its own (seeded from the round's), as nodes appear: the rows do not depend on
    how many a grower asks for at once (the fused grower asks for its node capacity)."""

    def __init__(self, rng, d, k, tree_mask):
        self.k = int(k)
        self.tree_mask = tree_mask
        self.all = self.k >= int(tree_mask.sum())
        self.rng = None if self.all else np.random.default_rng(int(rng.integers(1 << 62)))
        self.d = d
        self.keys = np.zeros((1 if self.all else 0, d))

    def ensure(self, rows):
        """Draw key rows up to ``rows`` (no-op when every node sees every feature)."""
        if not self.all and rows > self.keys.shape[0]:
            more = self.rng.random((rows - self.keys.shape[0], self.d))
            self.keys = np.concatenate([self.keys, more])
        return self.keys

    def masks(self, ids):
        ids = np.asarray(ids, dtype=np.int64)
        if self.all:
            return np.repeat(self.tree_mask[None, :], ids.size, axis=0)
        return node_feature_masks(ids, self.tree_mask, self.ensure(int(ids.max()) + 1), self.k)


class _Nodes:
    """Growing node arrays of one tree, with each node's gradient sums and row count."""

    def __init__(self):
        self.feature, self.code, self.left, self.right = [], [], [], []
        self.default_left, self.gain = [], []
        self.count, self.G, self.H, self.depth = [], [], [], []
        self.cat_mask = []
        self.lower, self.upper = [], []  # bounds on the weights (monotone constraints)
        self.used = []  # features split on above (interaction constraints), or None
        self.splittable = []  # fields still scanned (drop_unsplittable), or None

    def add(self, count, G, H, depth, bounds=(-np.inf, np.inf), used=None, splittable=None):
        for lst, v in ((self.feature, -1), (self.code, 0), (self.left, -1), (self.right, -1),
                       (self.default_left, False), (self.gain, 0.0), (self.count, count),
                       (self.G, G), (self.H, H), (self.depth, depth), (self.cat_mask, None),
                       (self.lower, bounds[0]), (self.upper, bounds[1]), (self.used, used),
                       (self.splittable, splittable)):
            lst.append(v)
        return len(self.feature) - 1


class _Hists:
    """The histograms of a set of nodes, each a row of an (n, total_bins, 2) array that
    ① or the subtraction made, never copied: node id -> (array, row)."""

    def __init__(self):
        self.at = {}
        self.made = None  # the array of the larger children, taken from the learner's pool

    def put(self, array, ids):
        array = np.ascontiguousarray(array, dtype=np.float64)
        for k, i in enumerate(ids):
            self.at[i] = (array, k)

    def get(self, i):
        a, k = self.at[i]
        return a[k]

    def groups(self, ids):
        """[(array, [positions in ids], [rows of the array])] of the nodes ``ids``, one per
        array, in order of first appearance."""
        out = {}
        for pos, i in enumerate(ids):
            a, k = self.at[i]
            g = out.setdefault(id(a), (a, [], []))
            g[1].append(pos)
            g[2].append(k)
        return list(out.values())


class _HistPool:
    """Histogram arrays the learner made (the larger children's, by subtraction) and no longer
    needs, to make the next ones in: a fresh array of a megabyte or more is new memory, and
    its page faults cost as much as the subtraction itself (sparse-wide, 70,000 bins: 0.5 s
    of 50 rounds). Best fit of the free arrays (flat, at least the size asked); at most
    ``max_free`` bytes are kept."""

    def __init__(self, max_free=256 << 20):
        self.free = []
        self.max_free = max_free

    def take(self, shape):
        need = int(np.prod(shape))
        fits = [k for k, a in enumerate(self.free) if a.size >= need]
        if not fits:
            return np.empty(shape, dtype=np.float64)
        k = min(fits, key=lambda k: self.free[k].size)
        return self.free.pop(k)[:need].reshape(shape)

    def give(self, arrays):
        """Take back arrays that ``take`` handed out, once nothing reads them."""
        for a in arrays:
            base = (a if a.base is None else a.base).reshape(-1)  # the whole array, flat
            if sum(f.nbytes for f in self.free) + base.nbytes <= self.max_free:
                self.free.append(base)


class PageLeaves:
    """What a tree grown over pages leaves behind: its leaves' rows, in the pages."""

    def __init__(self, pages, leaves):
        self.pages, self.leaves = pages, leaves

    def add(self, values, pred):
        """⑤ ``pred[rows of leaf i] += values[i]``."""
        self.pages.add_leaf_values(self.leaves, values, pred)

    def rows(self, i):
        return self.pages.leaf_rows(int(self.leaves[i]))


class TreeLearner:
    """Grows one tree at a time over ``pages`` (see ``backends/pages.py``)."""

    def __init__(self, pages, grower):
        self.pages = pages
        self.gw = grower  # the Grower: parameters, field layout, profile, tree output
        self.pool = _HistPool()
        self._prange = False  # how ② and the subtraction launch (set per tree)

    def grow(self, rows, g, h, tree_mask, keys, root=None):
        """One tree over ``rows`` (ascending global row ids). Returns (Tree, BinnedTree,
        PageLeaves). ``root``: the root's histogram (flat (g, h) pairs) if already built."""
        gw, pages = self.gw, self.pages
        self._prange = gw.launches_prange()  # ② and the subtraction launch as ① and ③ do
        nodes = _Nodes()
        n = pages.start(rows)
        t0 = time.perf_counter()
        root_hist = (pages.histograms([0], g, h) if root is None
                     else root.reshape(1, -1, 2))
        gw.profile.add("histogram", t0)
        off0, off1 = int(gw.bm.offsets[0]), int(gw.bm.offsets[1])
        G = float(root_hist[0, off0:off1, 0].sum())
        H = float(root_hist[0, off0:off1, 1].sum())
        nodes.add(n, G, H, 0, gw.root_bounds, used=None if gw.interactions is None else np.zeros(gw.d, bool),
                  splittable=np.ones(gw.d, bool) if gw.p.drop_unsplittable else None)
        if gw.p.grow_policy == "lossguide":
            self._lossguide(nodes, g, h, keys, root_hist[0])
        else:
            self._depthwise(nodes, g, h, keys, root_hist[0])
        bounds = (nodes.lower, nodes.upper) if gw.mono is not None else None
        tree, binned, (_, _, leaves) = gw.finish_arrays(*self._arrays(nodes), bounds=bounds)
        return tree, binned, PageLeaves(pages, leaves)

    # -- ② and ③ ------------------------------------------------------------------------
    def _find(self, hists, ids, nodes, keys):
        """② The best split of each node of ``ids``, whose histograms ``hists`` (``_Hists``)
        holds: one ``find_best_splits`` per array they lie in (no copy into one array),
        the answers put back in the order of ``ids``."""
        gw = self.gw
        p = gw.p
        t0 = time.perf_counter()
        G = np.asarray([nodes.G[i] for i in ids], dtype=np.float64)
        H = np.asarray([nodes.H[i] for i in ids], dtype=np.float64)
        masks = keys.masks(ids)
        if gw.interactions is not None:
            masks = masks & np.stack([gw.allowed_features(nodes.used[i]) for i in ids])
        drop = p.drop_unsplittable
        if drop:
            masks = masks & np.stack([nodes.splittable[i] for i in ids])
        n = len(ids)
        bounds = None
        if gw.mono is not None:
            bounds = (np.asarray([nodes.lower[i] for i in ids], dtype=np.float64),
                      np.asarray([nodes.upper[i] for i in ids], dtype=np.float64))
        counts = (np.asarray([nodes.count[i] for i in ids], dtype=np.float64)
                  if p.min_data_in_leaf > 0 else None)  # (read only under min_data_in_leaf)
        res = (np.full(n, -np.inf), np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.int64),
               np.zeros(n, dtype=np.bool_), np.zeros(n), np.zeros(n))
        for array, pos, rows in hists.groups(ids):
            pos = np.asarray(pos, dtype=np.int64)
            part = find_best_splits(array, G[pos], H[pos], masks[pos], gw.offsets,
                                    gw.n_value_bins, gw.is_cat, float(p.reg_lambda),
                                    float(p.reg_alpha), float(p.min_child_weight),
                                    int(p.max_cat_to_onehot), int(p.max_cat_threshold),
                                    slots=np.asarray(rows, dtype=np.int64),
                                    parallel=self._prange,
                                    monotone=None if bounds is None else (
                                        bounds[0][pos], bounds[1][pos], gw.mono,
                                        p.lightgbm_constraints, p.max_delta_step),
                                    field_gains=drop,
                                    counts=None if counts is None else counts[pos],
                                    min_count=p.min_data_in_leaf,
                                    missing_rules=gw.missing_rules)
            for out, x in zip(res, part):
                out[pos] = x
            if drop:  # LightGBM's rule: numeric fields of no gain above gamma are dropped
                dead = masks[pos] & ~(part[6] > max(p.gamma, 0.0))
                for k, q in enumerate(pos):
                    nodes.splittable[ids[q]] &= ~dead[k]
        gw.profile.add("split", t0)
        return res

    def _left_table(self, hist, feature, code, default_left):
        """(left table over the field's bins, categorical mask or None)."""
        gw = self.gw
        table = np.zeros(gw.max_field_bins, dtype=np.uint8)
        nv = int(gw.n_value_bins[feature])
        mask = None
        if gw.is_cat[feature]:
            mask = categorical_left_set(hist, int(gw.offsets[feature]), nv,
                                        float(gw.p.reg_lambda), float(gw.p.reg_alpha),
                                        float(gw.p.min_child_weight), int(code))
            table[:nv] = mask
        else:
            table[: int(code) + 1] = 1
        table[nv] = 1 if default_left else 0
        return table, mask

    def _apply_splits(self, nodes, ids, hists, res_idx, res, g, h, need_hists):
        """③ Partition the chosen nodes into new children and, where they may split again,
        ① build the smaller child's histogram (the larger is the parent's minus it).
        ``hists`` (``_Hists``) holds the parents' histograms. Returns (child ids, a
        ``_Hists`` of the children's)."""
        gw, pages = self.gw, self.pages
        gain, feat, code, dl, GL, HL = res
        tables = np.zeros((len(ids), gw.max_field_bins), dtype=np.uint8)
        for k, (nid, i) in enumerate(zip(ids, res_idx)):
            tables[k], nodes.cat_mask[nid] = self._left_table(hists.get(nid), int(feat[i]),
                                                              code[i], bool(dl[i]))
        lefts, rights = [], []
        p = gw.p
        for nid, i in zip(ids, res_idx):
            d = nodes.depth[nid] + 1
            Gp, Hp = nodes.G[nid], nodes.H[nid]
            lb = rb = (nodes.lower[nid], nodes.upper[nid])
            if gw.mono is not None:
                lb, rb = child_bounds(float(GL[i]), float(HL[i]), Gp, Hp, float(p.reg_lambda),
                                      float(p.reg_alpha), float(p.min_child_weight), *lb,
                                      int(gw.mono[int(feat[i])]))
            used = nodes.used[nid]
            if used is not None:
                used = used.copy()
                used[int(feat[i])] = True
            fields = nodes.splittable[nid]
            lefts.append(nodes.add(0, float(GL[i]), float(HL[i]), d, lb, used,
                                   None if fields is None else fields.copy()))
            rights.append(nodes.add(0, Gp - float(GL[i]), Hp - float(HL[i]), d, rb, used,
                                    None if fields is None else fields.copy()))
            nodes.feature[nid], nodes.code[nid] = int(feat[i]), int(code[i])
            nodes.default_left[nid], nodes.gain[nid] = bool(dl[i]), float(gain[i])
            nodes.left[nid], nodes.right[nid] = lefts[-1], rights[-1]
        t0 = time.perf_counter()
        n_left, n_right = pages.partition(ids, feat[res_idx], tables, lefts, rights)
        gw.profile.add("partition", t0)
        children, small, large = [], [], []
        for k in range(len(ids)):
            lid, rid = lefts[k], rights[k]
            nodes.count[lid], nodes.count[rid] = int(n_left[k]), int(n_right[k])
            left_small = n_left[k] <= n_right[k]
            small.append(lid if left_small else rid)
            large.append(rid if left_small else lid)
            children.extend([lid, rid])
        child_hists = _Hists()
        if not need_hists:
            return children, child_hists
        t0 = time.perf_counter()
        small_h = np.ascontiguousarray(pages.histograms(small, g, h), dtype=np.float64)
        gw.profile.add("histogram", t0)
        # the larger children: parent minus smaller child, into one new array
        large_h = self.pool.take(small_h.shape)
        for array, pos, rows in hists.groups(ids):
            subtract_histograms(array, rows, small_h, pos, large_h, self._prange)
        child_hists.put(small_h, small)
        child_hists.put(large_h, large)
        child_hists.made = large_h
        return children, child_hists

    # -- growth policies ------------------------------------------------------------------
    def _depth_ok(self, depth):
        return self.gw.p.max_depth <= 0 or depth < self.gw.p.max_depth

    def _splits(self, gain):
        floor = 0.0 if self.gw.p.drop_unsplittable else RT_EPS  # (LightGBM's: above 0)
        return gain > max(self.gw.p.gamma, 0.0) and gain > floor

    def _depthwise(self, nodes, g, h, keys, root_hist):
        frontier = [0]
        hists = _Hists()
        hists.put(root_hist[None], [0])
        n_leaves = 1
        max_leaves = self.gw.p.max_leaves if self.gw.p.max_leaves > 0 else np.inf
        while frontier and self._depth_ok(nodes.depth[frontier[0]]) and n_leaves < max_leaves:
            res = self._find(hists, frontier, nodes, keys)
            gain = res[0]
            ok = [k for k in range(len(frontier)) if self._splits(gain[k])]
            if np.isfinite(max_leaves):  # the level's first nodes while leaves remain, as
                ok = ok[: int(max_leaves - n_leaves)]  # XGBoost's depthwise driver
            if not ok:
                break
            ids = [frontier[k] for k in ok]
            n_leaves += len(ok)
            more = self._depth_ok(nodes.depth[ids[0]] + 1) and n_leaves < max_leaves
            frontier, children = self._apply_splits(nodes, ids, hists, ok, res, g, h, more)
            self._recycle(hists)  # the parents' histograms: read for the last time
            hists = children
        self._recycle(hists)

    def _recycle(self, hists):
        """Give the subtraction's array of a finished level back to the pool."""
        if hists.made is not None:
            self.pool.give([hists.made])
            hists.made = None

    def _lossguide(self, nodes, g, h, keys, root_hist):
        max_leaves = self.gw.p.max_leaves if self.gw.p.max_leaves > 0 else np.inf
        hists = _Hists()
        hists.put(root_hist[None], [0])
        heap = []

        def push(ids):
            ids = [i for i in ids if self._depth_ok(nodes.depth[i])]
            if not ids:
                return
            res = self._find(hists, ids, nodes, keys)
            for k, nid in enumerate(ids):
                if self._splits(res[0][k]):
                    single = tuple(np.asarray(a[k:k + 1]) for a in res)
                    heapq.heappush(heap, (-float(res[0][k]), nid, single))

        push([0])
        n_leaves = 1
        while heap and n_leaves < max_leaves:
            _, nid, res = heapq.heappop(heap)
            n_leaves += 1
            more = self._depth_ok(nodes.depth[nid] + 1) and n_leaves < max_leaves
            children, child_hists = self._apply_splits(nodes, [nid], hists, [0], res, g, h,
                                                       more)
            del hists.at[nid]
            if more:
                hists.at.update(child_hists.at)
                push(children)

    # -- output -----------------------------------------------------------------------------
    def _arrays(self, nodes):
        """The node arrays ``Grower.finish_arrays`` takes (begin/end: row counts only)."""
        gw = self.gw
        n = len(nodes.feature)
        tables = np.zeros((n, gw.max_field_bins), dtype=np.uint8)
        for i in range(n):
            f = nodes.feature[i]
            if f < 0:
                continue
            nv = int(gw.n_value_bins[f])
            if gw.is_cat[f]:
                tables[i, :nv] = nodes.cat_mask[i]
            else:
                tables[i, : nodes.code[i] + 1] = 1
            tables[i, nv] = 1 if nodes.default_left[i] else 0
        count = np.asarray(nodes.count, dtype=np.int64)
        return (np.asarray(nodes.feature, dtype=np.int64), np.asarray(nodes.code, dtype=np.int64),
                np.asarray(nodes.default_left, dtype=bool), np.asarray(nodes.left, dtype=np.int64),
                np.asarray(nodes.right, dtype=np.int64), np.zeros(n, dtype=np.int64), count,
                np.asarray(nodes.G, dtype=np.float64), np.asarray(nodes.H, dtype=np.float64),
                np.asarray(nodes.gain, dtype=np.float64), tables)
