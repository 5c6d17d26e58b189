"""Growing one random-forest tree: CudaTree's hybrid of depth-first and breadth-first growth.

* Nodes with at least ``crossover`` rows grow **depth-first**: one node at a time, its
  histograms built in parallel over its rows (``forest_cpu.df_*``).
* Smaller nodes are put aside and then grown **breadth-first**: every call of
  ``forest_cpu.bf_level`` handles a whole frontier, one thread per node.

``growth='depthfirst'`` (crossover 0) and ``'breadthfirst'`` (crossover infinite) are the two
pure schemes. All three build the same tree: a node's candidate features come from a hash of
its path from the root, never from the order of growth, and the node arrays are renumbered in
pre-order at the end. With ``max_leaf_nodes`` the tree grows best-first (scikit-learn's rule).

:func:`grow_tree_naive` is the naive twin: plain numpy, one node at a time, the same rules.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from ..backends import forest_cpu as K
from ..backends.forest_engine import CPUEngine

# CudaTree §3.1: crossover (rows) = a + b*classes + c*rows + d*features-per-split, fitted by
# benchmarks/calibrate_forest_crossover.py on this machine (see benchmarks/README.md).
CROSSOVER_COEF = (28777.8, -284.7222, -0.143750, -864.5833)
CROSSOVER_MIN, CROSSOVER_MAX = 500, 32000  # the calibrated grid's range
GROWTH = ("hybrid", "depthfirst", "breadthfirst")


def default_crossover(n_classes: int, n_rows: int, mtry: int) -> int:
    a, b, c, d = CROSSOVER_COEF
    return int(min(CROSSOVER_MAX, max(CROSSOVER_MIN, a + b * n_classes + c * n_rows + d * mtry)))


@dataclass
class TreeParams:
    criterion: int  # forest_cpu.GINI / ENTROPY / SQUARED
    mtry: int
    max_depth: int = 2**31 - 1
    min_samples_split: int = 2
    min_samples_leaf: int = 1
    # of the tree's weight (its drawn rows' weights, class weights included: scikit-learn's
    # rule); a bound of fraction x the sum of the user's weights let a constant weight of 100
    # leave every tree a single leaf
    min_weight_fraction_leaf: float = 0.0
    min_impurity_decrease: float = 0.0
    max_leaf_nodes: int = 0  # 0: no limit

    def min_weight_leaf(self, w_root: float) -> float:
        """The least weight of a leaf, in a tree whose root weighs ``w_root``."""
        return self.min_weight_fraction_leaf * w_root


@dataclass
class GrowData:
    """The binned training matrix and labels, shared by all trees of a forest."""

    bins_col: np.ndarray  # (d, n) uint8/uint16
    bins_row: np.ndarray  # (n, d)
    nv: np.ndarray  # int64 (d,): missing bin of each field = its number of value bins
    edges_flat: np.ndarray
    edge_offsets: np.ndarray
    is_categorical: np.ndarray
    is_reg: bool
    n_classes: int  # 1 for regression
    yk: np.ndarray  # int64 class index (classification) else zeros
    yv: np.ndarray  # float64 target (regression) else zeros
    device_copy: object = None  # the CUDA backend's copy on the GPU, made once per forest

    @property
    def C(self) -> int:
        return 3 if self.is_reg else self.n_classes

    @property
    def maxbins(self) -> int:
        return int(self.nv.max()) + 1

    @classmethod
    def from_dataset(cls, ds, y, is_reg, n_classes):
        bm = ds.bin_mapper
        n = ds.n_rows
        if is_reg:
            yk = np.zeros(n, dtype=np.int64)
            yv = np.ascontiguousarray(y, dtype=np.float64)
        else:
            yk = np.ascontiguousarray(y, dtype=np.int64)
            yv = np.zeros(n, dtype=np.float64)
        return cls(ds.bins_col, ds.bins_row, np.ascontiguousarray(bm.missing_bin, dtype=np.int64),
                   bm.edges_flat, bm.edge_offsets, bm.is_categorical, bool(is_reg),
                   1 if is_reg else int(n_classes), yk, yv)


@dataclass
class TreeArrays:
    """One grown tree in pre-order. ``value`` is (n_nodes, K): class fractions, or the mean."""

    feature: np.ndarray  # int32, -1 leaf
    sbin: np.ndarray  # int32 split bin (bin <= sbin goes left; the missing bin by default_left)
    threshold: np.ndarray  # float64 raw threshold
    left: np.ndarray  # int32
    right: np.ndarray  # int32
    default_left: np.ndarray  # bool
    value: np.ndarray  # float64 (n_nodes, K)
    gain: np.ndarray  # float64 weighted impurity decrease (MDI)
    weight: np.ndarray  # float64 weighted rows
    count: np.ndarray  # int64 rows
    impurity: np.ndarray  # float64

    @property
    def n_nodes(self):
        return int(self.feature.shape[0])


class NodeBuilder:
    """Node arrays of a tree under construction (ids in creation order). It grows as nodes
    are added; ``begin``/``end`` are each node's slice of the tree's rows (only their
    difference, the row count, is kept in the finished tree)."""

    _ARRAYS = (("begin", np.int64, 0), ("end", np.int64, 0), ("depth", np.int64, 0),
               ("key", np.uint64, 0), ("feature", np.int64, -1), ("sbin", np.int64, -1),
               ("snext", np.int64, -1), ("dl", np.bool_, False), ("gain", np.float64, 0.0),
               ("left", np.int64, -1), ("right", np.int64, -1))

    def __init__(self, cap, C):
        cap = max(1, int(cap))
        for name, dtype, fill in self._ARRAYS:
            setattr(self, name, np.full(cap, fill, dtype=dtype))
        self.tot = np.zeros((cap, C))
        self.n = 0

    def _reserve(self, more):
        cap = self.begin.shape[0]
        if self.n + more <= cap:
            return
        new = max(2 * cap, self.n + more)
        for name, dtype, fill in self._ARRAYS:
            a = np.full(new, fill, dtype=dtype)
            a[:cap] = getattr(self, name)
            setattr(self, name, a)
        tot = np.zeros((new, self.tot.shape[1]))
        tot[:cap] = self.tot
        self.tot = tot

    def add(self, begin, end, depth, key):
        self._reserve(1)
        i = self.n
        self.begin[i], self.end[i], self.depth[i], self.key[i] = begin, end, depth, key
        self.n += 1
        return i

    def add_children(self, ids, mids):
        """Children of nodes ``ids`` (split at ``mids``); returns (left ids, right ids)."""
        s = ids.shape[0]
        self._reserve(2 * s)
        lo = self.n
        L = np.arange(lo, lo + s)
        R = np.arange(lo + s, lo + 2 * s)
        for ch, b, e, side in ((L, self.begin[ids], mids, 0), (R, mids, self.end[ids], 1)):
            self.begin[ch] = b
            self.end[ch] = e
            self.depth[ch] = self.depth[ids] + 1
            self.key[ch] = K.child_keys(self.key[ids], side)
        self.left[ids] = L
        self.right[ids] = R
        self.n += 2 * s
        return L, R

    def trimmed(self):
        """A copy holding only the ``n`` nodes (what a worker sends back)."""
        out = NodeBuilder(self.n, self.tot.shape[1])
        for name, _, _ in self._ARRAYS:
            getattr(out, name)[:] = getattr(self, name)[:self.n]
        out.tot[:] = self.tot[:self.n]
        out.n = self.n
        return out

    def graft(self, at, sub):
        """Replace leaf ``at`` by the tree ``sub`` (a NodeBuilder grown from that node: its
        node 0 is ``at``); its other nodes are appended."""
        m = sub.n
        self._reserve(m - 1)
        base = self.n - 1  # sub's node j >= 1 becomes base + j
        ids = np.concatenate([[at], base + np.arange(1, m)]).astype(np.int64)
        for name, _, _ in self._ARRAYS:
            getattr(self, name)[ids] = getattr(sub, name)[:m]
        self.tot[ids] = sub.tot[:m]
        for name in ("left", "right"):
            a = getattr(self, name)
            child = a[ids]
            a[ids] = np.where(child >= 0, ids[np.maximum(child, 0)], -1)
        self.n += m - 1


def finish_tree(b: NodeBuilder, data: GrowData, crit) -> TreeArrays:
    n = b.n
    feat, left, right, sbin, snext, dl, gain, count, tot = K.preorder_arrays(
        b.left[:n], b.right[:n], b.feature[:n], b.sbin[:n], b.snext[:n], b.dl[:n], b.gain[:n],
        b.begin[:n], b.end[:n], b.tot[:n])
    internal = feat >= 0
    C = data.C
    if data.is_reg:
        W = tot[:, 0]
        value = (tot[:, 1] / W)[:, None]
    else:
        W = tot.sum(axis=1)
        value = tot / W[:, None]
    thr = np.zeros(feat.shape[0])
    fi = feat[internal].astype(np.int64)
    lo = sbin[internal].astype(np.int64)
    nx = snext[internal]
    # the raw threshold is the middle one of the bin edges between the last non-empty bin on
    # the left and the first on the right (all of them split the node's rows alike). An
    # edge lies between two of the training values; the mean of two edges, which it was,
    # fell on a training value on an even grid, and the float32 of that value went the
    # other way (688 of 2,000 rows' predictions changed, by up to 0.167)
    hi = np.where(nx >= 0, nx - 1, lo)
    num = ~data.is_categorical[fi]
    t_lo = lo.astype(np.float64)
    t_mid = lo.astype(np.float64)
    t_lo[num] = data.edges_flat[data.edge_offsets[fi[num]] + lo[num]]
    mid = lo + (hi - lo) // 2
    t_mid[num] = data.edges_flat[data.edge_offsets[fi[num]] + mid[num]]
    thr[internal] = np.where(np.isfinite(t_mid), t_mid, t_lo)  # (the last edge: +inf)
    imp = _impurities(tot, C, crit)
    return TreeArrays(feature=feat, sbin=sbin, threshold=thr, left=left, right=right,
                      default_left=dl, value=value, gain=gain, weight=W, count=count,
                      impurity=imp)


def _impurities(tot, C, crit):
    if crit == K.SQUARED:
        W = tot[:, 0]
        m = tot[:, 1] / W
        return tot[:, 2] / W - m * m
    W = tot.sum(axis=1, keepdims=True)
    p = tot / W
    if crit == K.GINI:
        return 1.0 - (p * p).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0).sum(axis=1)


def grow_tree(data: GrowData, p: TreeParams, rows: np.ndarray, w: np.ndarray, key,
              growth: str = "hybrid", crossover: int | None = None, engine=None,
              crossover_rule=default_crossover) -> TreeArrays:
    """Grow one tree on ``rows`` (int32, ascending, rows with weight > 0; reordered in place)
    with row weights ``w`` (full length). ``key``: the root's random key (uint64).
    ``engine``: the class doing the per-node work (``backends.forest_engine.CPUEngine`` by
    default; ``grow_tree_cuda`` passes the CUDA backend's, with the same methods);
    ``crossover_rule``: the default crossover as a function of (classes, rows, features per
    split), fitted per device."""
    b = grow_nodes(data, p, rows, w, key, growth=growth, crossover=crossover, engine=engine,
                   crossover_rule=crossover_rule)
    return finish_tree(b, data, p.criterion)


def grow_nodes(data: GrowData, p: TreeParams, rows: np.ndarray, w: np.ndarray, key,
               growth: str = "hybrid", crossover: int | None = None, engine=None,
               crossover_rule=default_crossover, depth0: int = 0,
               w_root: float | None = None) -> NodeBuilder:
    """:func:`grow_tree`'s nodes, unfinished (a :class:`NodeBuilder`). ``depth0`` and
    ``w_root``: the depth and the root weight of the tree this node belongs to, when ``rows``
    are those of a node below its root (``hardwood.dask`` grows a small node's subtree where
    its rows were gathered: the same nodes as grown in place)."""
    if growth not in GROWTH:
        raise ValueError(f"growth must be one of {GROWTH}, got {growth!r}")
    m = rows.shape[0]
    C = data.C
    b = NodeBuilder(2 * m + 1, C)
    root = b.add(0, m, int(depth0), np.uint64(key))
    w_root = float(np.sum(w[rows])) if w_root is None else float(w_root)
    df = (engine or CPUEngine)(data, p, rows, w, w_root)
    if p.max_leaf_nodes:
        return _grow_best_first(b, data, p, df)
    if growth == "depthfirst":
        cross = 0
    elif growth == "breadthfirst":
        cross = m + 1
    else:
        cross = crossover if crossover is not None else crossover_rule(
            data.n_classes, m, p.mtry)
    stack = [root]
    frontier = []
    while stack:
        i = stack.pop()
        b0, b1 = int(b.begin[i]), int(b.end[i])
        if b1 - b0 < cross:
            frontier.append(i)
            continue
        T = df.totals(b0, b1)
        b.tot[i] = T
        s = df.find_split(b0, b1, int(b.depth[i]), b.key[i], T)
        if s is None:
            continue
        f, bbin, dl, gain, nxt = s
        mid = df.partition(b0, b1, f, bbin, dl)
        b.feature[i], b.sbin[i], b.dl[i], b.gain[i], b.snext[i] = f, bbin, dl, gain, nxt
        L, R = b.add_children(np.array([i]), np.array([mid]))
        stack.append(int(R[0]))
        stack.append(int(L[0]))
    while len(frontier):
        ids = np.asarray(frontier, dtype=np.int64)
        s = ids.shape[0]
        o_tot = np.empty((s, C))
        o_feat = np.empty(s, dtype=np.int64)
        o_bin = np.empty(s, dtype=np.int64)
        o_next = np.full(s, -1, dtype=np.int64)
        o_dl = np.zeros(s, dtype=np.bool_)
        o_gain = np.zeros(s)
        o_mid = np.empty(s, dtype=np.int64)
        df.level(b.begin[ids], b.end[ids], b.depth[ids], b.key[ids],
                 (o_tot, o_feat, o_bin, o_next, o_dl, o_gain, o_mid))
        b.tot[ids] = o_tot
        split = o_feat >= 0
        sid = ids[split]
        b.feature[sid] = o_feat[split]
        b.sbin[sid] = o_bin[split]
        b.snext[sid] = o_next[split]
        b.dl[sid] = o_dl[split]
        b.gain[sid] = o_gain[split]
        if not sid.size:
            break
        L, R = b.add_children(sid, o_mid[split])
        frontier = np.concatenate([L, R])
    return b


def grow_tree_cuda(data: GrowData, p: TreeParams, rows, w, key, growth="hybrid",
                   crossover=None) -> TreeArrays:
    """:func:`grow_tree` on the GPU (``backends/forest_cuda.py``): the same hybrid scheme and
    the same tree as on the CPU."""
    from ..backends.forest_cuda import CudaEngine, gpu_crossover

    return grow_tree(data, p, rows, w, key, growth=growth, crossover=crossover,
                     engine=CudaEngine, crossover_rule=gpu_crossover)


def _grow_best_first(b: NodeBuilder, data: GrowData, p: TreeParams, df: CPUEngine) -> NodeBuilder:
    """Best-first growth (``max_leaf_nodes``): expand the leaf of largest impurity decrease."""
    heap = []

    def push(i):
        b0, b1 = int(b.begin[i]), int(b.end[i])
        T = df.totals(b0, b1)
        b.tot[i] = T
        s = df.find_split(b0, b1, int(b.depth[i]), b.key[i], T)
        if s is not None:
            heapq.heappush(heap, (-s[3], i, s))

    push(0)
    leaves = 1
    while heap and leaves < p.max_leaf_nodes:
        _, i, (f, bbin, dl, gain, nxt) = heapq.heappop(heap)
        mid = df.partition(int(b.begin[i]), int(b.end[i]), f, bbin, dl)
        b.feature[i], b.sbin[i], b.dl[i], b.gain[i], b.snext[i] = f, bbin, dl, gain, nxt
        L, R = b.add_children(np.array([i]), np.array([mid]))
        leaves += 1
        push(int(L[0]))
        push(int(R[0]))
    return b


# -- the naive twin --------------------------------------------------------------------------
def _naive_stats(data: GrowData, rows, w, bins=None, nbins=0):
    """Per-bin (or total, when bins is None) statistics of ``rows`` with numpy."""
    C = data.C
    if bins is None:
        bins = np.zeros(rows.shape[0], dtype=np.int64)
        nbins = 1
    out = np.zeros((nbins, C))
    wr = w[rows]
    if data.is_reg:
        y = data.yv[rows]
        for i in range(rows.shape[0]):  # sequential sums, in row order
            out[bins[i], 0] += wr[i]
            out[bins[i], 1] += wr[i] * y[i]
            out[bins[i], 2] += wr[i] * y[i] * y[i]
    else:
        yk = data.yk[rows]
        for i in range(rows.shape[0]):
            out[bins[i], yk[i]] += wr[i]
    cnt = np.bincount(bins, minlength=nbins).astype(np.int64)
    return out, cnt


def _naive_q(x, crit):
    if crit == K.GINI:
        return x * x
    return x * math.log(x) if x > 0.0 else 0.0


def _naive_side(q, W, crit):
    return q / W if crit == K.GINI else q - W * math.log(W)


def _naive_parent_proxy(T, crit):
    if crit == K.SQUARED:
        return T[1] * T[1] / T[0]
    q = W = 0.0
    for c in T:
        W += c
        q += _naive_q(c, crit)
    return _naive_side(q, W, crit)


def _naive_scan(stat, cnt, miss, T, n, crit, msl, mwl, best):
    """Candidates of one feature in order (value bins ascending; missing right, then left).
    Classification keeps q = sum_k term(c_k) per side up to date class by class."""
    C = T.shape[0]
    nm = int(cnt[miss])
    out = None
    L = np.zeros(C)
    R = T.copy()
    qL = 0.0
    qR = sum(_naive_q(c, crit) for c in T) if crit != K.SQUARED else 0.0
    WT = float(sum(T)) if crit != K.SQUARED else T[0]
    WL = 0.0
    nL = 0
    for bn in range(miss):
        if cnt[bn] == 0:
            continue
        nL += int(cnt[bn])
        if crit == K.SQUARED:
            L[0] += stat[bn, 0]
            L[1] += stat[bn, 1]
        else:
            for c in range(C):
                s = stat[bn, c]
                if s != 0.0:
                    ln = L[c] + s
                    rn = T[c] - ln
                    qL += _naive_q(ln, crit) - _naive_q(L[c], crit)
                    qR += _naive_q(rn, crit) - _naive_q(R[c], crit)
                    L[c], R[c] = ln, rn
                    WL += s
        for miss_left in (False, True):
            if miss_left and nm == 0:
                continue
            nl = nL + nm if miss_left else nL
            if nl < msl or n - nl < msl:
                continue
            if crit == K.SQUARED:
                wl = L[0] + (stat[miss, 0] if miss_left else 0.0)
                sl = L[1] + (stat[miss, 1] if miss_left else 0.0)
                wr, sr = T[0] - wl, T[1] - sl
                if not (wl >= mwl and wr >= mwl and wl > 0 and wr > 0):
                    continue
                g = sl * sl / wl + sr * sr / wr
            else:
                ql, qr, wl = qL, qR, WL
                if miss_left:
                    for c in range(C):
                        s = stat[miss, c]
                        if s != 0.0:
                            ln = L[c] + s
                            ql += _naive_q(ln, crit) - _naive_q(L[c], crit)
                            qr += _naive_q(T[c] - ln, crit) - _naive_q(R[c], crit)
                    wl = WL + float(sum(stat[miss]))
                wr = WT - wl
                if not (wl >= mwl and wr >= mwl and wl > 0 and wr > 0):
                    continue
                g = _naive_side(ql, wl, crit) + _naive_side(qr, wr, crit)
            if g > best:
                best = g
                nxt = [b2 for b2 in range(bn + 1, miss) if cnt[b2] > 0]
                out = (bn, True if miss_left else (nm == 0 and nl > n - nl),
                       nxt[0] if nxt else -1)
    return best, out


def grow_tree_naive(data: GrowData, p: TreeParams, rows: np.ndarray, w: np.ndarray,
                    key) -> TreeArrays:
    """The same tree as :func:`grow_tree`, grown one node at a time with plain numpy."""
    rows = np.sort(np.asarray(rows, dtype=np.int64))
    C, crit = data.C, p.criterion
    b = NodeBuilder(2 * rows.shape[0] + 1, C)
    segs = {}
    b.add(0, rows.shape[0], 0, np.uint64(key))
    segs[0] = rows
    T0, _ = _naive_stats(data, rows, w)
    w_root = float(T0[0][0] if crit == K.SQUARED else T0[0].sum())
    n_feat = data.bins_col.shape[0]
    msl, mwl = p.min_samples_leaf, p.min_weight_leaf(w_root)

    def evaluate(i):
        r = segs[i]
        T = _naive_stats(data, r, w)[0][0]
        b.tot[i] = T
        n = r.shape[0]
        W = float(T[0] if crit == K.SQUARED else T.sum())
        if K.node_is_leaf(n, W, K.impurity(T, C, crit), int(b.depth[i]), p.max_depth,
                          p.min_samples_split, msl, mwl):
            return None
        order = K.perm_prefix(b.key[i], n_feat, n_feat)
        best, bf, bbin, bdl, bnext = -np.inf, -1, -1, False, -1
        drawn = nonconst = 0
        for f in order:  # scikit-learn's rule: mtry draws, and at least one non-constant
            if drawn >= p.mtry and nonconst > 0:
                break
            drawn += 1
            col = data.bins_col[f, r].astype(np.int64)
            miss = int(data.nv[f])
            stat, cnt = _naive_stats(data, r, w, col, miss + 1)
            if np.count_nonzero(cnt) <= 1:
                continue
            nonconst += 1
            best, hit = _naive_scan(stat, cnt, miss, T, n, crit, msl, mwl, best)
            if hit is not None:
                bf, (bbin, bdl, bnext) = int(f), hit
        if bf < 0:
            return None
        gain = best - _naive_parent_proxy(T, crit)
        if crit == K.ENTROPY:
            gain /= K.LN2
        if gain / w_root + K.EPSILON < p.min_impurity_decrease:
            return None
        return bf, bbin, bdl, gain, bnext

    def split(i, s):
        f, bbin, dl, gain, nxt = s
        r = segs.pop(i)
        col = data.bins_col[f, r].astype(np.int64)
        go = (col <= bbin) | (dl & (col == data.nv[f]))
        b.feature[i], b.sbin[i], b.dl[i], b.gain[i], b.snext[i] = f, bbin, dl, gain, nxt
        mid = b.begin[i] + int(go.sum())
        L, R = b.add_children(np.array([i]), np.array([mid]))
        segs[int(L[0])] = r[go]
        segs[int(R[0])] = r[~go]
        return int(L[0]), int(R[0])

    if p.max_leaf_nodes:
        heap = []
        s = evaluate(0)
        if s is not None:
            heapq.heappush(heap, (-s[3], 0, s))
        leaves = 1
        while heap and leaves < p.max_leaf_nodes:
            _, i, s = heapq.heappop(heap)
            for c in split(i, s):
                sc = evaluate(c)
                if sc is not None:
                    heapq.heappush(heap, (-sc[3], c, sc))
            leaves += 1
    else:
        todo = [0]
        while todo:
            i = todo.pop()
            s = evaluate(i)
            if s is not None:
                li, ri = split(i, s)
                todo += [ri, li]
    return finish_tree(b, data, crit)
