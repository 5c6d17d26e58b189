"""numba-cuda backend for gradient boosting: the training rows as one page on the device.

:class:`CudaPages` implements the calls the tree learner makes of its pages
(``backends/pages.py``: ``start``, ``histograms``, ``partition``, ``add_leaf_values``,
``leaf_rows``, ``predict_binned``); split finding ② stays on the host, over the reduced
histograms (a few KB per level), in the same code as the CPU path. On the device:

* **the binned matrix**, ELLPACK-style: each row's bins packed into 32-bit words at the
  smallest bit width the largest field's bin count needs (4 bits for 16 bins, 8 for 256), so
  a row of 28 fields of 256 bins takes 7 words;
* **① histograms**, group by field (the Booster paper's group-by-field binning): fields are
  cut into groups whose bins fit a block's shared memory; each block of a launch takes a
  slice of a node's rows (``blockIdx.z`` = the node: one launch for all the nodes of a
  level) and one group (``blockIdx.y``), adds into a shared-memory
  histogram and then into the global one. A field too wide for shared memory has a group of
  its own, added straight into global memory (the fallback);
* **deterministic sums**: each tree's gradients and hessians are quantised to 64-bit fixed
  point (a power-of-two scale chosen so that no sum of the rows can overflow), so the
  atomics add integers, exactly and in any order: the same data and seed give the same
  model bit for bit, run after run. The host turns the sums back into float64. One scale
  serves every row of a tree, so its resolution is about ``max|g| * n / 2**62``: where one
  row's gradient is 1e12 times the others' on a million rows, theirs keep a few bits
  (probe 24: one label of 1e15 among 240 rows moved the other leaves by 0.9%; XGBoost's GPU
  histograms quantise with one rounding factor a tree too). The CPU sums in float64;
* **③ partition**: a stable split of every node's rows of a level by the node's left table
  (numeric threshold, categorical set and missing direction alike) in three launches for the
  whole level (``blockIdx.y`` = node, in slices of at most 65535, a grid's y and z limit):
  flags and per-block counts, then, from offsets the
  host computes over one copy of the counts, a block-scan scatter (``forest_cuda``'s
  ``block_scan``) and a copy back. (One launch set per node made ③ 78% of a fit on an H100:
  a host round trip per node.)
* **⑤ update**: the leaves' values scattered to their rows (or every row routed through a
  binned tree, for a sampled round) into a per-row delta on the device.

* **margins and gradients** (``bind_margins``): for squared error, logistic and softmax the
  labels are uploaded once and the margins, g and h stay on the device between rounds; the
  gradients are computed there (``gradients``), each tree's leaf values are added there, and
  the host sees the margins only when it asks (an evaluation on the training set). The
  Booster passes :class:`pages.DeviceRow` handles where the host path passes rows of its arrays.
  Other objectives (and sampling that needs g and h on the host: GOSS, MVS) copy what they
  need: the gradients up once per tree, the per-row delta of ⑤ back.

Every host<->device copy is counted (``transfers``) and reported in ``training_profile``.

Under ``NUMBA_ENABLE_CUDASIM=1`` numba-cuda's simulator runs the same kernels on the CPU.
"""
from __future__ import annotations

import math

import numpy as np
from numba import config as _numba_config
from numba import cuda, int32, int64

from .forest_cuda import TPB, block_scan, cuda_available
from .pages import DeviceRow
from .quiet_launches import launches_quietly

SHARED_BYTES = 40 * 1024  # a block's shared histogram (of 48 KB): 2,560 bins of (g, h)
SHARED_BINS = SHARED_BYTES // 16
MAX_ROW_BLOCKS = 1024  # blocks over a node's rows, per field group
# a grid's y and z sizes are at most 65535: the kernels indexed by node (or output) along them
# launch once per slice of that many (a level of more nodes failed to launch)
MAX_GRID_YZ = 65535
# the elementwise kernels loop with the grid's stride over their rows: at most this many
# blocks (the simulator runs a Python thread per CUDA thread, 71,000 of them in its parity
# test; two blocks still let several blocks meet in every kernel)
STRIDE_BLOCKS = 2 if _numba_config.ENABLE_CUDASIM else 8192
FIXED_BITS = 62  # the quantised gradients of all rows add up to less than 2**62


# -- layout ------------------------------------------------------------------------------------
def pack_ellpack(bins_row, n_bins):
    """(words (n, W) uint32, bits per bin, bins per word): each row's bins packed at the
    smallest width that holds ``max(n_bins) - 1``."""
    n, d = bins_row.shape
    bits = max(1, int(int(np.max(n_bins)) - 1).bit_length())
    per_word = 32 // bits
    words = np.zeros((n, -(-d // per_word)), dtype=np.uint32)
    for j in range(d):
        words[:, j // per_word] |= (bins_row[:, j].astype(np.uint32)
                                    << np.uint32(bits * (j % per_word)))
    return words, bits, per_word


def field_groups(offsets, limit=SHARED_BINS):
    """Consecutive fields cut into groups of at most ``limit`` bins (a field wider than that
    alone): (first field, end field, first bin, end bin, in shared memory) per group."""
    groups, f0 = [], 0
    d = len(offsets) - 1
    for f in range(d + 1):
        if f == d or (f > f0 and offsets[f + 1] - offsets[f0] > limit):
            groups.append((f0, f, int(offsets[f0]), int(offsets[f]),
                           int(offsets[f] - offsets[f0]) <= limit))
            f0 = f
    return np.asarray([g[:4] for g in groups], dtype=np.int64), [g[4] for g in groups]


def fixed_point_scale(v, n):
    """A power of two ``s`` with ``n * max|v| * s < 2**FIXED_BITS`` (1 when ``v`` is 0)."""
    m = float(np.max(np.abs(v))) if v.size else 0.0
    if not m > 0.0 or not math.isfinite(m):
        return 1.0
    return 2.0 ** (FIXED_BITS - math.ceil(math.log2(max(n, 1))) - math.ceil(math.log2(m)) - 1)


# -- kernels ---------------------------------------------------------------------------------
@cuda.jit(device=True)
def bin_of(words, r, f, bits, per_word):
    w = words[r, f // per_word]
    return int64((w >> ((f % per_word) * bits)) & ((1 << bits) - 1))


@cuda.jit
def quantise(g, h, sg, sh, gq, hq):
    for i in range(cuda.grid(1), g.shape[0], cuda.gridsize(1)):
        gq[i] = int64(math.floor(g[i] * sg + 0.5))
        hq[i] = int64(math.floor(h[i] * sh + 0.5))


@cuda.jit
def hist_group(words, rows, begins, ends, gq, hq, groups, offsets, bits, per_word, shared,
               out):
    """Histograms of node ``blockIdx.z``'s rows ``rows[begins[z]:ends[z]]`` over the fields
    of group ``blockIdx.y``, into ``out[z]`` (``shared``: through a shared-memory
    histogram, else straight into ``out``)."""
    z = cuda.blockIdx.z
    gi = cuda.blockIdx.y
    f0, f1, bin0, bin1 = groups[gi, 0], groups[gi, 1], groups[gi, 2], groups[gi, 3]
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    sh = cuda.shared.array(0, dtype=int64)
    width = bin1 - bin0
    if shared:
        for t in range(tid, 2 * width, nt):
            sh[t] = 0
        cuda.syncthreads()
    p = begins[z] + cuda.blockIdx.x * nt + tid
    e = ends[z]
    step = cuda.gridDim.x * nt
    while p < e:
        r = rows[p]
        gr, hr = gq[r], hq[r]
        for f in range(f0, f1):
            k = offsets[f] + bin_of(words, r, f, bits, per_word)
            if shared:
                cuda.atomic.add(sh, 2 * (k - bin0), gr)
                cuda.atomic.add(sh, 2 * (k - bin0) + 1, hr)
            else:
                cuda.atomic.add(out, (z, k, 0), gr)
                cuda.atomic.add(out, (z, k, 1), hr)
        p += step
    if shared:
        cuda.syncthreads()
        for t in range(tid, width, nt):
            if sh[2 * t] != 0 or sh[2 * t + 1] != 0:
                cuda.atomic.add(out, (z, bin0 + t, 0), sh[2 * t])
                cuda.atomic.add(out, (z, bin0 + t, 1), sh[2 * t + 1])


@cuda.jit
def flag_left(words, rows, begins, ends, features, tables, bits, per_word, flags, counts):
    """For node ``blockIdx.y``'s rows: flags[p] = row p goes left (its bin's entry in the
    node's row of ``tables``); counts[node, block] = the block's rows going left."""
    k = cuda.blockIdx.y
    p = begins[k] + cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if p < ends[k]:
        fl = tables[k, bin_of(words, rows[p], features[k], bits, per_word)]
        flags[p] = fl
        if fl:
            cuda.atomic.add(counts, (k, cuda.blockIdx.x), 1)


@cuda.jit
def scatter_nodes(rows, begins, ends, flags, lpos, rpos, tmp):
    """Stable scatter of node ``blockIdx.y``'s rows into tmp: block j's left rows from
    lpos[node, j], its right rows from rpos[node, j], each in row order."""
    sh = cuda.shared.array(TPB, dtype=int32)
    k = cuda.blockIdx.y
    j = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    p = begins[k] + j * TPB + tid
    fl = 0
    if p < ends[k]:
        fl = flags[p]
    inc = block_scan(sh, tid, fl)  # every thread of the block, rows or not
    if p < ends[k]:
        before = inc - fl
        if fl:
            tmp[lpos[k, j] + before] = rows[p]
        else:
            tmp[rpos[k, j] + tid - before] = rows[p]


@cuda.jit
def copy_nodes(src, dst, begins, ends):
    """dst[p] = src[p] over node ``blockIdx.y``'s rows."""
    k = cuda.blockIdx.y
    step = cuda.gridDim.x * cuda.blockDim.x
    for p in range(begins[k] + cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x, ends[k],
                   step):
        dst[p] = src[p]


@cuda.jit
def leaf_delta(rows, begins, ends, values, delta):
    """delta[r] = values[i] for the rows r of leaf i (blockIdx.y = i)."""
    i = cuda.blockIdx.y
    p = begins[i] + cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    while p < ends[i]:
        delta[rows[p]] = values[i]
        p += cuda.gridDim.x * cuda.blockDim.x


@cuda.jit
def tree_delta(words, bits, per_word, feature, table_offset, table, left, right, value, delta):
    """delta[r] = the value of row r's leaf in a binned tree."""
    for r in range(cuda.grid(1), delta.shape[0], cuda.gridsize(1)):
        node = 0
        while feature[node] >= 0:
            if table[table_offset[node] + bin_of(words, r, feature[node], bits, per_word)]:
                node = left[node]
            else:
                node = right[node]
        delta[r] = value[node]


@cuda.jit
def absmax(v, out):
    """out[0] = max |v| (out zeroed before)."""
    for i in range(cuda.grid(1), v.shape[0], cuda.gridsize(1)):
        cuda.atomic.max(out, 0, abs(float(v[i])))


@cuda.jit
def add_delta(pred, delta):
    for i in range(cuda.grid(1), pred.shape[0], cuda.gridsize(1)):
        pred[i] += delta[i]


@cuda.jit
def scale_rows(g, h, rows, weight):
    """g[k, rows[j]] *= weight[j], h alike, for every output k (blockIdx.y)."""
    k = cuda.blockIdx.y
    step = cuda.gridDim.x * cuda.blockDim.x
    for j in range(cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x, rows.shape[0], step):
        g[k, rows[j]] *= weight[j]
        h[k, rows[j]] *= weight[j]


@cuda.jit
def grad_squared(pred, y, w, weighted, hess_factor, g, h):
    for i in range(cuda.grid(1), y.shape[0], cuda.gridsize(1)):
        wi = w[i] if weighted else 1.0
        g[0, i] = (pred[0, i] - y[i]) * wi
        h[0, i] = wi


@cuda.jit
def grad_logistic(pred, y, w, weighted, hess_factor, g, h):
    for i in range(cuda.grid(1), y.shape[0], cuda.gridsize(1)):
        wi = w[i] if weighted else 1.0
        p = 1.0 / (1.0 + math.exp(-pred[0, i]))
        g[0, i] = (p - y[i]) * wi
        h[0, i] = max(p * (1.0 - p), 1e-16) * wi


@cuda.jit
def grad_softmax(pred, y, w, weighted, hess_factor, g, h):
    """Softmax g, h of every row; hessian ``hess_factor`` p (1 - p) (``objectives.Softmax``:
    2 under XGBoost's names, K / (K - 1) under LightGBM's)."""
    K = pred.shape[0]
    for i in range(cuda.grid(1), y.shape[0], cuda.gridsize(1)):
        wi = w[i] if weighted else 1.0
        m = pred[0, i]
        for k in range(1, K):
            m = max(m, pred[k, i])
        s = 0.0
        for k in range(K):
            s += math.exp(pred[k, i] - m)
        label = int(y[i])
        for k in range(K):
            p = math.exp(pred[k, i] - m) / s
            t = 1.0 if k == label else 0.0
            g[k, i] = (p - t) * wi
            h[k, i] = max(hess_factor * p * (1.0 - p), 1e-16) * wi


DEVICE_GRADIENTS = {"reg:squarederror": grad_squared, "binary:logistic": grad_logistic,
                    "multi:softprob": grad_softmax}


@cuda.jit
def fill_zero(a):
    for i in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        a[i] = 0


@cuda.jit
def iota(rows, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        rows[i] = i


# -- the pages ---------------------------------------------------------------------------------
def _blocks(m, tpb=TPB, cap=None):
    nb = max(1, -(-int(m) // tpb))
    return nb if cap is None else min(nb, cap)


def _strided(m):
    """Blocks of a kernel that loops over ``m`` items with the grid's stride."""
    return _blocks(m, cap=STRIDE_BLOCKS)


def _grid_slices(n):
    """``(start, stop)`` slices of ``n`` nodes (or outputs), each within a grid's y or z
    size limit."""
    return [(a, min(n, a + MAX_GRID_YZ)) for a in range(0, n, MAX_GRID_YZ)]


class CudaPages:
    """The learner's pages (``backends/pages.py``) with every row on the device."""

    in_core = True  # the rows are in memory (the device's): no gather of a sample
    n_pages = 1

    def __init__(self, bins_row, offsets, transfers=None):
        """``bins_row``: (n, d) bins; ``offsets``: the fields' first bins (d + 1);
        ``transfers``: a dict whose ``h2d_bytes`` and ``d2h_bytes`` count the copies (a new
        one by default)."""
        ok, why = cuda_available()
        if not ok:
            raise RuntimeError(f"device='cuda': {why}")
        offsets = np.asarray(offsets, dtype=np.int64)
        self.n_rows, self.d = bins_row.shape
        self.total_bins = int(offsets[-1])
        self.transfers = {"h2d_bytes": 0, "d2h_bytes": 0} if transfers is None else transfers
        words, self.bits, self.per_word = pack_ellpack(bins_row, np.diff(offsets))
        self.words = self._up(words)
        self.offsets = self._up(offsets[:-1].copy())
        groups, shared = field_groups(offsets)
        shared = np.asarray(shared, dtype=bool)
        # one launch for the groups in shared memory, one for those too wide (each block's
        # group is blockIdx.y), per node
        self.launches = []
        for on_chip in (True, False):
            sel = groups[shared == on_chip]
            if len(sel):
                width = int((sel[:, 3] - sel[:, 2]).max())
                self.launches.append((self._up(sel), len(sel), on_chip,
                                      16 * width if on_chip else 0))
        self.rows = cuda.device_array(self.n_rows, dtype=np.int32)
        self.tmp = cuda.device_array(self.n_rows, dtype=np.int32)
        self.flags = cuda.device_array(self.n_rows, dtype=np.uint8)  # ③'s, by row position
        self.gq = cuda.device_array(self.n_rows, dtype=np.int64)
        self.hq = cuda.device_array(self.n_rows, dtype=np.int64)
        self.delta = cuda.device_array(self.n_rows, dtype=np.float64)
        self.seg = {}
        self._scale = None  # this tree's fixed-point scales (g, h), set by the first ①
        self.pred = self.g = self.h = None  # (K, n) on the device, after bind_margins

    # -- margins and gradients on the device ------------------------------------------------------
    def bind_margins(self, objective, label, weight, pred):
        """Keep the margins (``pred``, (K, n), copied up once), g and h on the device for
        ``objective`` (an ``Objective`` whose name is in DEVICE_GRADIENTS; the kernels take
        its ``hess_factor`` where it has one, the softmax's)."""
        self._grad = DEVICE_GRADIENTS[objective.name]
        self._hess_factor = float(getattr(objective, "hess_factor", 2.0))
        self.label = self._up(np.asarray(label, dtype=np.float64))
        self.weighted = weight is not None
        self.weight = self._up(np.asarray(weight if self.weighted else np.ones(1),
                                          dtype=np.float64))
        self.pred = self._up(np.ascontiguousarray(pred, dtype=np.float64))
        K = pred.shape[0]
        self.g = cuda.device_array((K, self.n_rows), dtype=np.float32)
        self.h = cuda.device_array((K, self.n_rows), dtype=np.float32)

    @launches_quietly
    def gradients(self):
        self._grad[_strided(self.n_rows), TPB](self.pred, self.label, self.weight,
                                               self.weighted, self._hess_factor, self.g,
                                               self.h)

    def gradients_to_host(self, g, h):
        g[:] = self._down(self.g)
        h[:] = self._down(self.h)

    def margins_to_host(self, pred):
        pred[:] = self._down(self.pred)

    @launches_quietly
    def scale_sample(self, rows, weight):
        """The sampled rows' g and h times their unbiasing weights, on the device."""
        m = int(rows.shape[0])
        d_rows = self._up(np.asarray(rows, dtype=np.int32))
        d_weight = self._up(np.asarray(weight, dtype=np.float32))
        for a, b in _grid_slices(self.g.shape[0]):
            scale_rows[(_strided(m), b - a), TPB](self.g[a:b], self.h[a:b], d_rows, d_weight)

    # -- transfers, counted --------------------------------------------------------------------
    def _up(self, a):
        a = np.ascontiguousarray(a)
        self.transfers["h2d_bytes"] += a.nbytes
        return cuda.to_device(a)

    def _down(self, d):
        a = d.copy_to_host()
        self.transfers["d2h_bytes"] += a.nbytes
        return a

    # -- the tree's rows -------------------------------------------------------------------------
    @launches_quietly
    def start(self, rows):
        m = int(rows.shape[0])
        if m == self.n_rows:  # every row (row ids are unique and ascending): no upload
            iota[_strided(m), TPB](self.rows, m)
            self.load_segments(None, [0], [m])
        else:
            self.load_segments(rows, [0], [m])
        return m

    def load_segments(self, rows, begins, ends):
        """The tree's rows (None: already on the device) and node ``k``'s segment
        ``begins[k]:ends[k]`` of them; a new tree's gradients are quantised at its first ①."""
        if rows is not None and rows.shape[0]:
            self.rows[:rows.shape[0]].copy_to_device(np.ascontiguousarray(rows, dtype=np.int32))
            self.transfers["h2d_bytes"] += 4 * rows.shape[0]
        self.seg = {k: (int(b), int(e)) for k, (b, e) in enumerate(zip(begins, ends))}
        self._scale = None
        return len(self.seg)

    def count(self, node):
        b, e = self.seg[node]
        return e - b

    # -- ① -----------------------------------------------------------------------------------------
    def _quantised(self, g, h):
        if self._scale is None:
            n = self.n_rows
            if isinstance(g, DeviceRow):
                dg, dh = g.row, h.row
                sg, sh = (fixed_point_scale(np.array([self._absmax(v)]), n) for v in (dg, dh))
            else:
                sg, sh = fixed_point_scale(g, n), fixed_point_scale(h, n)
                dg = self._up(np.asarray(g, dtype=np.float32))
                dh = self._up(np.asarray(h, dtype=np.float32))
            quantise[_strided(n), TPB](dg, dh, sg, sh, self.gq, self.hq)
            self._scale = (sg, sh)
        return self._scale

    def _absmax(self, v):
        out = cuda.device_array(1, dtype=np.float64)
        fill_zero[1, 1](out)
        absmax[_strided(v.shape[0]), TPB](v, out)
        return float(self._down(out)[0])

    def _segments(self, nodes):
        """The nodes' (begins, ends) on the device, and their longest segment."""
        be = np.asarray([self.seg[i] for i in nodes], dtype=np.int64).reshape(-1, 2)
        longest = int((be[:, 1] - be[:, 0]).max()) if len(be) else 0
        return self._up(be[:, 0].copy()), self._up(be[:, 1].copy()), be, longest

    @launches_quietly
    def histograms(self, nodes, g, h):
        """(len(nodes), total_bins, 2) float64: each node's (sum g, sum h) per bin; one
        launch per kind of field group for all the nodes (``blockIdx.z``)."""
        sg, sh = self._quantised(g, h)
        size = len(nodes) * self.total_bins * 2
        hists = cuda.device_array((len(nodes), self.total_bins, 2), dtype=np.int64)
        fill_zero[_strided(size), TPB](hists.reshape(size))
        d_begins, d_ends, _, longest = self._segments(nodes)
        if longest:
            # the row blocks of each node: enough for the longest, fewer when many nodes
            cap = max(1, min(MAX_ROW_BLOCKS // len(nodes), STRIDE_BLOCKS))
            for d_groups, n_groups, on_chip, shared_bytes in self.launches:
                for a, b in _grid_slices(len(nodes)):
                    grid = (_blocks(longest, cap=cap), n_groups, b - a)
                    hist_group[grid, TPB, 0, shared_bytes](
                        self.words, self.rows, d_begins[a:b], d_ends[a:b], self.gq, self.hq,
                        d_groups, self.offsets, self.bits, self.per_word, on_chip, hists[a:b])
        q = self._down(hists)  # one copy for all the nodes
        return q * np.array([1.0 / sg, 1.0 / sh])

    # -- ③ -----------------------------------------------------------------------------------------
    @launches_quietly
    def partition(self, nodes, features, tables, lefts, rights):
        """A stable split of every node's rows, in three launches for all the nodes (flag
        and count, scatter, copy back) and one copy of the per-block counts to the host,
        which turns them into each block's write offsets."""
        k = len(nodes)
        d_begins, d_ends, be, longest = self._segments(nodes)
        sizes = be[:, 1] - be[:, 0]
        n_left = np.zeros(k, dtype=np.int64)
        if longest:
            nb = _blocks(longest)
            counts = cuda.device_array((k, nb), dtype=np.int64)
            fill_zero[_strided(k * nb), TPB](counts.reshape(k * nb))  # zeroed there: no copy
            d_features = self._up(np.asarray(features, dtype=np.int64))
            d_tables = self._up(np.ascontiguousarray(tables, dtype=np.uint8))
            for a, b in _grid_slices(k):
                flag_left[(nb, b - a), TPB](self.words, self.rows, d_begins[a:b], d_ends[a:b],
                                            d_features[a:b], d_tables[a:b], self.bits,
                                            self.per_word, self.flags, counts[a:b])
            c = self._down(counts)
            # rows in block j of each node: TPB, the remainder, then none
            in_block = np.clip(sizes[:, None] - TPB * np.arange(nb)[None, :], 0, TPB)
            n_left = c.sum(axis=1)
            lpos = be[:, :1] + np.cumsum(c, axis=1) - c
            rpos = (be[:, :1] + n_left[:, None] + np.cumsum(in_block - c, axis=1)
                    - (in_block - c))
            d_lpos, d_rpos = self._up(lpos), self._up(rpos)
            for a, b in _grid_slices(k):
                scatter_nodes[(nb, b - a), TPB](self.rows, d_begins[a:b], d_ends[a:b],
                                                self.flags, d_lpos[a:b], d_rpos[a:b], self.tmp)
            for a, b in _grid_slices(k):
                copy_nodes[(_strided(longest), b - a), TPB](self.tmp, self.rows, d_begins[a:b],
                                                            d_ends[a:b])
        for i, node in enumerate(nodes):
            b, e = self.seg.pop(node)
            mid = b + int(n_left[i])
            self.seg[lefts[i]] = (b, mid)
            self.seg[rights[i]] = (mid, e)
        return n_left, sizes - n_left

    # -- ⑤ -----------------------------------------------------------------------------------------
    @launches_quietly
    def add_leaf_values(self, leaves, values, pred):
        """``pred[rows of leaf i] += values[i]`` (the leaves hold every row of the tree)."""
        begins = np.asarray([self.seg[i][0] for i in leaves], dtype=np.int64)
        ends = np.asarray([self.seg[i][1] for i in leaves], dtype=np.int64)
        m = int((ends - begins).max()) if len(leaves) else 0
        fill_zero[_strided(self.n_rows), TPB](self.delta)
        if m:
            d_begins, d_ends = self._up(begins), self._up(ends)
            d_values = self._up(np.asarray(values, dtype=np.float64))
            for a, b in _grid_slices(len(leaves)):
                leaf_delta[(_blocks(m, cap=min(MAX_ROW_BLOCKS, STRIDE_BLOCKS)), b - a), TPB](
                    self.rows, d_begins[a:b], d_ends[a:b], d_values[a:b], self.delta)
        self._add(pred)

    def _add(self, pred):
        """pred += the per-row delta: on the device for a DeviceRow, else copied back."""
        if isinstance(pred, DeviceRow):
            add_delta[_strided(self.n_rows), TPB](pred.row, self.delta)
        else:
            pred += self._down(self.delta)

    def leaf_rows(self, leaf):
        b, e = self.seg[leaf]
        return self._down(self.rows[b:e]).astype(np.int64) if e > b else np.zeros(0, np.int64)

    @launches_quietly
    def predict_binned(self, binned_tree, pred):
        """``pred[i] +=`` row i's leaf value in ``binned_tree``, for every row."""
        t = binned_tree
        args = [self._up(np.ascontiguousarray(a)) for a in
                (t.feature, t.table_offset, t.table, t.left, t.right, t.value)]
        tree_delta[_strided(self.n_rows), TPB](self.words, self.bits, self.per_word, *args,
                                             self.delta)
        self._add(pred)


class CudaRowBackend:
    """A row backend (``backends/base.py``) over one page's bins on the device, for the
    pages on disk (``DiskPages``) of the streaming mode: each pass copies the page up, as the
    out-of-core paper's Algorithm 6 streams its pages to the GPU, and each call the page's
    rows of the tree (the learner's row ids stay on the host, one array per page)."""

    name = "cuda"

    def __init__(self, bins_row, bins_col, offsets, lanes=None, transfers=None):
        self.page = CudaPages(bins_row, offsets, transfers)
        self.bins_row, self.lanes = bins_row, lanes

    def build_histograms(self, rows, begins, ends, g, h):
        k = self.page.load_segments(rows, begins, ends)
        return self.page.histograms(list(range(k)), g, h)

    def partition(self, rows, begins, ends, features, left_tables):
        k = self.page.load_segments(rows, begins, ends)
        pg = self.page
        pg.partition(list(range(k)), features, left_tables, [k + i for i in range(k)],
                     [2 * k + i for i in range(k)])
        m = int(rows.shape[0])
        if m:
            rows[:] = pg._down(pg.rows[:m]).astype(rows.dtype, copy=False)
        return np.asarray([pg.seg[k + i][1] for i in range(k)], dtype=np.int64)

    def add_leaf_values(self, rows, begins, ends, values, pred):
        for b, e, v in zip(begins, ends, values):  # a few leaves: on the host, where pred is
            pred[rows[int(b):int(e)]] += v

    def predict_binned(self, bins_row, binned_tree, pred):
        self.page.predict_binned(binned_tree, pred)
