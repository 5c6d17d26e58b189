"""Growers: depthwise (level by level) and lossguide (best leaf first).

A grower owns the tree logic; every pass over rows goes to the backend (① histograms,
③ partition) and split finding runs in ``split.find_best_splits`` (②). Histogram
subtraction builds only the smaller child of each split; the larger child's histogram is the
parent's minus the smaller's.
"""
from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field

import numpy as np

from ..backends._intrinsics import seconds_per_cycle
from ..model.tree import BinnedTree, Tree, bitset_from_mask
from .split import categorical_left_set, find_best_splits, leaf_weight


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
    max_cat_to_onehot: int = 4
    max_cat_threshold: int = 64


@dataclass
class Profile:
    seconds: dict = field(default_factory=lambda: {"histogram": 0.0, "split": 0.0,
                                                   "partition": 0.0, "update": 0.0,
                                                   "other": 0.0})

    def add(self, step, t0):
        t = time.perf_counter()
        self.seconds[step] += t - t0
        return t


class _Nodes:
    """Growing arrays of one tree, over bins and raw thresholds at once."""

    def __init__(self):
        self.feature, self.code, self.left, self.right = [], [], [], []
        self.default_left, self.value, self.gain, self.cover, self.count = [], [], [], [], []
        self.begin, self.end, self.G, self.H, self.depth = [], [], [], [], []
        self.cat_mask = []

    def add(self, begin, end, G, H, depth):
        self.feature.append(-1)
        self.code.append(0)
        self.left.append(-1)
        self.right.append(-1)
        self.default_left.append(False)
        self.value.append(0.0)
        self.gain.append(0.0)
        self.cover.append(H)
        self.count.append(end - begin)
        self.begin.append(begin)
        self.end.append(end)
        self.G.append(G)
        self.H.append(H)
        self.depth.append(depth)
        self.cat_mask.append(None)
        return len(self.feature) - 1


class Grower:
    def __init__(self, backend, bin_mapper, params: GrowParams, profile: Profile, rng):
        self.backend = backend
        self.bm = bin_mapper
        self.p = params
        self.profile = profile
        self.rng = rng
        self.offsets = np.ascontiguousarray(bin_mapper.offsets[:-1], dtype=np.int64)
        self.n_value_bins = np.ascontiguousarray(bin_mapper.n_value_bins, dtype=np.int64)
        self.is_cat = np.ascontiguousarray(bin_mapper.is_categorical, dtype=np.bool_)
        self.max_field_bins = int(bin_mapper.n_bins.max())
        self.d = len(self.offsets)
        self._cycles = np.zeros(3, dtype=np.int64)

    # -- helpers --------------------------------------------------------------------
    def _node_masks(self, n, tree_mask):
        if self.p.colsample_bynode >= 1.0:
            return np.repeat(tree_mask[None, :], n, axis=0)
        avail = np.flatnonzero(tree_mask)
        k = max(1, int(self.p.colsample_bynode * avail.size))
        masks = np.zeros((n, self.d), dtype=np.bool_)
        for i in range(n):
            masks[i, self.rng.choice(avail, k, replace=False)] = True
        return masks

    def _find(self, hists, G, H, masks):
        t0 = time.perf_counter()
        p = self.p
        res = find_best_splits(hists, np.asarray(G, dtype=np.float64), np.asarray(H, dtype=np.float64),
                               masks, self.offsets, self.n_value_bins, self.is_cat,
                               float(p.reg_lambda), float(p.reg_alpha), float(p.min_child_weight),
                               int(p.max_cat_to_onehot), int(p.max_cat_threshold))
        self.profile.add("split", t0)
        return res

    def _left_table(self, hist, feature, code, default_left):
        """(left_table row over the field's bins, categorical mask or None)."""
        table = np.zeros(self.max_field_bins, dtype=np.uint8)
        nv = int(self.n_value_bins[feature])
        if self.is_cat[feature]:
            mask = categorical_left_set(hist, int(self.offsets[feature]), nv,
                                        float(self.p.reg_lambda), int(code))
            table[:nv] = mask
        else:
            mask = None
            table[: int(code) + 1] = 1
        table[nv] = 1 if default_left else 0
        return table, mask

    def _apply_splits(self, nodes, rows, ids, hists, res_idx, res, g, h, need_hists=True):
        """Partition the chosen nodes, create children and (if ``need_hists``: the children
        may split again) their histograms. Returns (child ids, child hists)."""
        gain, feat, code, dl, GL, HL = res
        tables = np.zeros((len(ids), self.max_field_bins), dtype=np.uint8)
        for k, (nid, i) in enumerate(zip(ids, res_idx)):
            tables[k], mask = self._left_table(hists[i], int(feat[i]), code[i], bool(dl[i]))
            nodes.cat_mask[nid] = mask
        t0 = time.perf_counter()
        begins = [nodes.begin[n] for n in ids]
        ends = [nodes.end[n] for n in ids]
        mids = self.backend.partition(rows, begins, ends, feat[res_idx], tables)
        self.profile.add("partition", t0)
        small_b, small_e, small_of = [], [], []
        children = []
        for k, (nid, i) in enumerate(zip(ids, res_idx)):
            nodes.feature[nid] = int(feat[i])
            nodes.code[nid] = int(code[i])
            nodes.default_left[nid] = bool(dl[i])
            nodes.gain[nid] = float(gain[i])
            d = nodes.depth[nid] + 1
            mid = int(mids[k])
            Gp, Hp = nodes.G[nid], nodes.H[nid]
            lid = nodes.add(begins[k], mid, float(GL[i]), float(HL[i]), d)
            rid = nodes.add(mid, ends[k], Gp - float(GL[i]), Hp - float(HL[i]), d)
            nodes.left[nid] = lid
            nodes.right[nid] = rid
            left_small = (mid - begins[k]) <= (ends[k] - mid)
            small = lid if left_small else rid
            small_b.append(nodes.begin[small])
            small_e.append(nodes.end[small])
            small_of.append((lid, rid, left_small, i))
            children.extend([lid, rid])
        if not need_hists:
            return children, {}
        t0 = time.perf_counter()
        small_h = self.backend.build_histograms(rows, small_b, small_e, g, h)
        self.profile.add("histogram", t0)
        child_hists = {}
        for k, (lid, rid, left_small, i) in enumerate(small_of):
            other = hists[i] - small_h[k]
            if left_small:
                child_hists[lid], child_hists[rid] = small_h[k], other
            else:
                child_hists[lid], child_hists[rid] = other, small_h[k]
        return children, child_hists

    # -- policies -------------------------------------------------------------------
    def _fast_shape(self):
        """(node capacity, histogram slots) for the one-call CPU grower, or None."""
        p = self.p
        leaves = p.max_leaves if p.max_leaves > 0 else None
        if p.max_depth > 0 and p.max_depth <= 24:
            by_depth = 2 ** p.max_depth
            leaves = by_depth if leaves is None else min(leaves, by_depth)
        if leaves is None or leaves > 1 << 16:
            return None
        slots = leaves // 2 + 1 if p.grow_policy == "depthwise" else leaves + 1
        return 2 * leaves - 1, slots

    def grow(self, rows, g, h, tree_mask):
        shape = self._fast_shape() if getattr(self.backend, "name", "") == "cpu" else None
        if shape is not None:
            return self._grow_fast(rows, g, h, tree_mask, *shape)
        nodes = _Nodes()
        n = rows.shape[0]
        t0 = time.perf_counter()
        root_hist = self.backend.build_histograms(rows, [0], [n], g, h)
        self.profile.add("histogram", t0)
        off0, off1 = int(self.bm.offsets[0]), int(self.bm.offsets[1])
        G = float(root_hist[0, off0:off1, 0].sum())
        H = float(root_hist[0, off0:off1, 1].sum())
        nodes.add(0, n, G, H, 0)
        if self.p.grow_policy == "lossguide":
            self._grow_lossguide(nodes, rows, g, h, tree_mask, root_hist[0])
        else:
            self._grow_depthwise(nodes, rows, g, h, tree_mask, root_hist[0])
        return self._finish(nodes)

    def _grow_fast(self, rows, g, h, tree_mask, cap, n_slots):
        from ..backends.cpu_grower import grow_tree

        p = self.p
        be = self.backend
        avail = int(tree_mask.sum())
        k_bynode = avail if p.colsample_bynode >= 1.0 else max(1, int(p.colsample_bynode * avail))
        keys = (self.rng.random((cap, self.d)) if k_bynode < avail
                else np.zeros((1, self.d)))
        t0 = time.perf_counter()
        out = grow_tree(be.bins_row, be.bins_col, g, h, rows, be._tmp, self.offsets,
                        self.n_value_bins, self.is_cat, tree_mask, keys, k_bynode,
                        float(p.reg_lambda), float(p.reg_alpha), float(p.min_child_weight),
                        float(p.gamma), int(p.max_cat_to_onehot), int(p.max_cat_threshold),
                        p.grow_policy == "lossguide", int(p.max_depth), int(p.max_leaves),
                        cap, n_slots, int(be.total_bins), self.max_field_bins, self._cycles,
                        be.lanes)
        t1 = time.perf_counter()
        # split the wall time of the call over ① ② ③ by the cycles counted inside it
        spent = self._cycles * seconds_per_cycle()
        total = max(spent.sum(), 1e-12)
        for k, step in enumerate(("histogram", "split", "partition")):
            self.profile.seconds[step] += (t1 - t0) * spent[k] / total
        self._cycles[:] = 0
        return self.finish_arrays(*out)

    def _depth_ok(self, depth):
        return self.p.max_depth <= 0 or depth < self.p.max_depth

    def _grow_depthwise(self, nodes, rows, g, h, tree_mask, root_hist):
        frontier = [0]
        hists = {0: root_hist}
        n_leaves = 1
        max_leaves = self.p.max_leaves if self.p.max_leaves > 0 else np.inf
        while frontier and self._depth_ok(nodes.depth[frontier[0]]) and n_leaves < max_leaves:
            H = np.stack([hists[i] for i in frontier])
            masks = self._node_masks(len(frontier), tree_mask)
            res = self._find(H, [nodes.G[i] for i in frontier], [nodes.H[i] for i in frontier], masks)
            gain = res[0]
            ok = [k for k in range(len(frontier)) if gain[k] > max(self.p.gamma, 0.0) and gain[k] > 1e-6]
            if np.isfinite(max_leaves):
                ok.sort(key=lambda k: (-gain[k], k))
                ok = sorted(ok[: int(max_leaves - n_leaves)])
            if not ok:
                break
            ids = [frontier[k] for k in ok]
            n_leaves += len(ok)
            more = self._depth_ok(nodes.depth[ids[0]] + 1) and n_leaves < max_leaves
            children, child_hists = self._apply_splits(nodes, rows, ids, H, ok, res, g, h, more)
            frontier = children
            hists = child_hists

    def _grow_lossguide(self, nodes, rows, g, h, tree_mask, root_hist):
        max_leaves = self.p.max_leaves if self.p.max_leaves > 0 else np.inf
        hists = {0: root_hist}
        heap = []

        def push(ids):
            ids = [i for i in ids if self._depth_ok(nodes.depth[i])]
            if not ids:
                return
            H = np.stack([hists[i] for i in ids])
            masks = self._node_masks(len(ids), tree_mask)
            res = self._find(H, [nodes.G[i] for i in ids], [nodes.H[i] for i in ids], masks)
            for k, nid in enumerate(ids):
                if res[0][k] > max(self.p.gamma, 0.0) and res[0][k] > 1e-6:
                    single = tuple(np.asarray(a[k:k + 1]) for a in res)
                    heapq.heappush(heap, (-float(res[0][k]), nid, single))

        push([0])
        n_leaves = 1
        while heap and n_leaves < max_leaves:
            _, nid, res = heapq.heappop(heap)
            H = hists[nid][None]
            n_leaves += 1
            more = self._depth_ok(nodes.depth[nid] + 1) and n_leaves < max_leaves
            children, child_hists = self._apply_splits(nodes, rows, [nid], H, [0], res, g, h, more)
            del hists[nid]
            if more:
                hists.update(child_hists)
                push(children)

    # -- output ---------------------------------------------------------------------
    def _finish(self, nodes: _Nodes):
        n = len(nodes.feature)
        tables = np.zeros((n, self.max_field_bins), dtype=np.uint8)
        for i in range(n):
            f = nodes.feature[i]
            if f < 0:
                continue
            nv = int(self.n_value_bins[f])
            if self.is_cat[f]:
                tables[i, :nv] = nodes.cat_mask[i]
            else:
                tables[i, : nodes.code[i] + 1] = 1
            tables[i, nv] = 1 if nodes.default_left[i] else 0
        return self.finish_arrays(
            np.asarray(nodes.feature, dtype=np.int64), np.asarray(nodes.code, dtype=np.int64),
            np.asarray(nodes.default_left, dtype=bool), np.asarray(nodes.left, dtype=np.int64),
            np.asarray(nodes.right, dtype=np.int64), np.asarray(nodes.begin, dtype=np.int64),
            np.asarray(nodes.end, dtype=np.int64), np.asarray(nodes.G, dtype=np.float64),
            np.asarray(nodes.H, dtype=np.float64), np.asarray(nodes.gain, dtype=np.float64), tables)

    def finish_arrays(self, feature, code, default_left, left, right, begin, end, G, H, gain, tables):
        """Node arrays -> (Tree, BinnedTree, leaf segments)."""
        p = self.p
        n = feature.shape[0]
        is_leaf = feature < 0
        value = np.zeros(n)
        for i in np.flatnonzero(is_leaf):
            value[i] = leaf_weight(G[i], H[i], p.reg_lambda, p.reg_alpha) * p.learning_rate
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
            else:
                threshold[i] = self.bm.upper_edges[f][code[i]]
            table_offset[i] = pos
            pos += tbl.size
            flat_tables.append(tbl)
        tree = Tree.from_arrays(
            feature=feature, threshold=threshold, left=left, right=right,
            default_left=default_left, is_categorical=is_cat, cat_offset=cat_offset,
            value=value, gain=gain, cover=H, count=end - begin,
            cat_bitsets=np.concatenate(words) if words else np.zeros(0, dtype=np.uint32))
        binned = BinnedTree(
            feature=feature.astype(np.int64), table_offset=table_offset,
            table=np.concatenate(flat_tables) if flat_tables else np.zeros(1, dtype=np.uint8),
            left=left.astype(np.int64), right=right.astype(np.int64), value=value)
        leaves = np.flatnonzero(is_leaf)
        segments = (begin[leaves], end[leaves], leaves)
        return tree, binned, segments
