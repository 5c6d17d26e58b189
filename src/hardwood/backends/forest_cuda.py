"""numba-cuda backend for random forests: CudaTree's hybrid growth on the GPU.

The host loop is the CPU one (:func:`hardwood.train.forest_grower.grow_tree`, called through
``grow_tree_cuda`` there); this module gives it an engine, :class:`CudaEngine`, whose per-node
work runs on the device:

* **depth-first** (big nodes, data parallel, CudaTree §3): a node's histograms are built by a
  grid of thread blocks, ``blockIdx.y`` = feature and ``blockIdx.x`` = a slice of the node's
  rows, each block privatising its histogram in shared memory when it fits and adding it to
  the global one at the end; the split scan runs on the host over the copied histogram, with
  the CPU's own :func:`forest_cpu.df_scan` (a few KB per node); the partition is a stable
  two-kernel partition (flags and per-block counts, then a block-wide prefix scan and a
  scatter).
* **breadth-first** (small nodes, task parallel): one launch per level of the frontier; each
  thread block takes whole nodes (``node = blockIdx.x, blockIdx.x + gridDim.x, ...``): its
  threads build the node's totals and, feature by feature, its histograms with atomics over
  the node's rows; one thread draws the features and scans each histogram (the same
  :func:`forest_cpu.scan_feature` as the CPU, compiled as a device function); the block then
  partitions the node's rows stably with prefix scans.

Trees equal the CPU backend's for the same seed whenever the sums are exact (bootstrap counts,
integer weights or targets): float atomics add in no fixed order, so with fractional weights
the last bits of a sum, and so a tie between two candidate splits, may differ.

Under ``NUMBA_ENABLE_CUDASIM=1`` numba-cuda's simulator runs the same kernels on the CPU
(blocks of 16 threads there, to keep it quick; 128 on a GPU).
"""
from __future__ import annotations

import math

import numpy as np
from numba import config as _numba_config
from numba import cuda, float64, int32, int64

from . import forest_cpu as K
from .forest_engine import CPUEngine
from .quiet_launches import launches_quietly

TPB = 16 if _numba_config.ENABLE_CUDASIM else 128  # threads per block
MAX_SHARED_BYTES = 40 * 1024  # privatised histogram limit per block (of 48 KB)
MAX_GRID = 65535
BF_BLOCKS = 1024  # blocks of a breadth-first launch (each loops over its share of nodes)
# CudaTree §3.1's fit on a GPU (classes, rows, features per split); used until
# benchmarks/calibrate_forest_crossover.py --device cuda has been run on one.
GPU_CROSSOVER_COEF = (3702.0, 1.58, 0.0577, 21.84)


def cuda_available():
    """(ok, reason): whether numba-cuda can run kernels here (a GPU, or the simulator)."""
    try:
        if cuda.is_available():
            return True, ""
    except Exception as e:  # pragma: no cover
        return False, f"CUDA is not usable ({e})"
    return False, "no CUDA GPU or driver was found (NUMBA_ENABLE_CUDASIM=1 runs the simulator)"


def gpu_crossover(n_classes: int, n_rows: int, mtry: int) -> int:
    a, b, c, d = GPU_CROSSOVER_COEF
    return int(max(1000, a + b * n_classes + c * n_rows + d * mtry))


def _device(fn):
    """The CPU kernel's own Python source compiled as a device function: one split rule.
    (The simulator calls the CPU kernel itself on the arrays behind its fake device
    arrays.)"""
    if _numba_config.ENABLE_CUDASIM:
        def call(*args):
            return fn(*[getattr(a, "_ary", a) for a in args])
        return call
    return cuda.jit(device=True)(fn.py_func)


scan_feature = _device(K.scan_feature)
side_weight = _device(K.side_weight)
impurity = _device(K.impurity)
parent_proxy = _device(K.parent_proxy)
perm_step = _device(K.perm_step)
perm_undo = _device(K.perm_undo)
node_is_leaf = _device(K.node_is_leaf)


@cuda.jit(device=True)
def atomic_add_row(stat, b, r, w, yk, yv, is_reg):
    """Add row r's statistics to stat[b] (class weight, or w, w*y, w*y^2) atomically."""
    wr = w[r]
    if is_reg:
        y = yv[r]
        cuda.atomic.add(stat, (b, 0), wr)
        cuda.atomic.add(stat, (b, 1), wr * y)
        cuda.atomic.add(stat, (b, 2), wr * y * y)
    else:
        cuda.atomic.add(stat, (b, yk[r]), wr)


@cuda.jit
def hist(bins_col, rows, b0, b1, feats, w, yk, yv, is_reg, C, nbins, stat, cnt,
         use_shared):
    """Histograms of rows[b0:b1] over ``feats`` (feature -1: one bin, the totals)."""
    j = cuda.blockIdx.y
    f = feats[j]
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    width = nbins * (C + 1)
    sh = cuda.shared.array(0, dtype=float64)
    if use_shared:
        for t in range(tid, width, nt):
            sh[t] = 0.0
        cuda.syncthreads()
    p = b0 + cuda.blockIdx.x * nt + tid
    step = cuda.gridDim.x * nt
    while p < b1:
        r = rows[p]
        bn = 0
        if f >= 0:
            bn = np.int64(bins_col[f, r])
        if use_shared:
            wr = w[r]
            base = bn * (C + 1)
            cuda.atomic.add(sh, base + C, 1.0)
            if is_reg:
                y = yv[r]
                cuda.atomic.add(sh, base, wr)
                cuda.atomic.add(sh, base + 1, wr * y)
                cuda.atomic.add(sh, base + 2, wr * y * y)
            else:
                cuda.atomic.add(sh, base + yk[r], wr)
        else:
            cuda.atomic.add(cnt, (j, bn), 1)
            atomic_add_row(stat[j], bn, r, w, yk, yv, is_reg)
        p += step
    if use_shared:
        cuda.syncthreads()
        for t in range(tid, width, nt):
            v = sh[t]
            if v != 0.0:
                bn = t // (C + 1)
                c = t - bn * (C + 1)
                if c == C:
                    cuda.atomic.add(cnt, (j, bn), np.int64(v))
                else:
                    cuda.atomic.add(stat, (j, bn, c), v)

@cuda.jit
def flag_count(bins_col, rows, b0, b1, f, bbin, miss, dl, flags, counts):
    """flags[p - b0] = row p goes left; counts[block] = its rows going left."""
    p = b0 + cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if p < b1:
        bn = np.int64(bins_col[f, rows[p]])
        fl = 1 if (bn <= bbin or (dl and bn == miss)) else 0
        flags[p - b0] = fl
        if fl:
            cuda.atomic.add(counts, cuda.blockIdx.x, 1)

@cuda.jit(device=True)
def block_scan(sh, tid, v):
    """Inclusive prefix sum of ``v`` over the block (Hillis-Steele in shared memory);
    every thread of the block must call it."""
    sh[tid] = v
    cuda.syncthreads()
    off = 1
    while off < TPB:
        u = 0
        if tid >= off:
            u = sh[tid - off]
        cuda.syncthreads()
        sh[tid] += u
        cuda.syncthreads()
        off *= 2
    return sh[tid]

@cuda.jit
def scatter(rows, b0, b1, flags, lpos, rpos, tmp):
    """Stable scatter of rows[b0:b1] into tmp: block k's left rows from lpos[k], right
    rows from rpos[k], each in row order."""
    sh = cuda.shared.array(TPB, dtype=int32)
    tid = cuda.threadIdx.x
    k = cuda.blockIdx.x
    p = b0 + k * TPB + tid
    fl = 0
    if p < b1:
        fl = flags[p - b0]
    inc = block_scan(sh, tid, fl)
    if p < b1:
        before = inc - fl
        if fl:
            tmp[lpos[k] + before] = rows[p]
        else:
            tmp[rpos[k] + tid - before] = rows[p]

@cuda.jit
def copy_back(src, dst, b0, b1):
    p = b0 + cuda.grid(1)
    if p < b1:
        dst[p] = src[p]

@cuda.jit
def bf_level(bins_row, rows, tmp, w, yk, yv, is_reg, C, nv, node_begin, node_end,
             node_depth, node_key, mtry, max_depth, mss, msl, mwl, crit, min_dec, w_root,
             stat_s, cnt_s, blist_s, perm_s, swaps_s, lr_s, out_tot, out_feat, out_bin,
             out_next, out_dl, out_gain, out_mid):
    """One breadth-first step: block g grows nodes g, g + gridDim.x, ... (see module)."""
    g = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    st = cuda.shared.array(10, dtype=int64)  # go k nonconst more f split nleft bin sf dl
    sc = cuda.shared.array(TPB, dtype=int32)
    stat = stat_s[g]
    cnt = cnt_s[g]
    blist = blist_s[g]
    perm = perm_s[g]
    swaps = swaps_s[g]
    L = lr_s[g, 0]
    R = lr_s[g, 1]
    L2 = lr_s[g, 2]
    d = bins_row.shape[1]
    n_nodes = node_begin.shape[0]
    maxbins = stat.shape[0]
    for i in range(g, n_nodes, cuda.gridDim.x):
        b0 = node_begin[i]
        b1 = node_end[i]
        n = b1 - b0
        T = out_tot[i]  # zeroed by the host
        for p in range(b0 + tid, b1, nt):
            atomic_add_row(out_tot, i, rows[p], w, yk, yv, is_reg)
        cuda.syncthreads()
        # thread 0 keeps the search state (best and its split) in its registers
        best = -math.inf
        bf = -1
        bbin = -1
        bnext = -1
        bdl = False
        if tid == 0:
            out_feat[i] = -1
            out_mid[i] = b1
            W = side_weight(T, C, crit)
            leaf = node_is_leaf(n, W, impurity(T, C, crit), node_depth[i], max_depth, mss,
                                msl, mwl)
            st[0] = 0 if leaf else 1
            st[1] = 0
            st[2] = 0
            st[5] = 0
        cuda.syncthreads()
        if st[0] == 1:
            key = node_key[i]
            while True:
                if tid == 0:
                    k = st[1]
                    more = k < d and (k < mtry or st[2] == 0)
                    st[3] = 1 if more else 0
                    if more:
                        st[4] = perm_step(perm, swaps, k, key)
                cuda.syncthreads()
                if st[3] == 0:
                    break
                f = st[4]
                miss = nv[f]
                for t in range(tid, miss + 1, nt):
                    cnt[t] = 0
                    for c in range(C):
                        stat[t, c] = 0.0
                cuda.syncthreads()
                for p in range(b0 + tid, b1, nt):
                    r = rows[p]
                    bn = np.int64(bins_row[r, f])
                    cuda.atomic.add(cnt, bn, 1)
                    atomic_add_row(stat, bn, r, w, yk, yv, is_reg)
                cuda.syncthreads()
                if tid == 0:
                    st[1] += 1
                    nb = 0
                    for b in range(miss):
                        if cnt[b] > 0:
                            blist[nb] = b
                            nb += 1
                    u = nb + (1 if cnt[miss] > 0 else 0)
                    if u > 1:
                        st[2] += 1
                        res = scan_feature(stat, cnt, blist, nb, miss, T, n, C, crit, msl,
                                           mwl, best, L, R, L2)
                        if res[4]:
                            best = res[0]
                            bf = f
                            bbin = res[1]
                            bnext = res[2]
                            bdl = res[3]
                cuda.syncthreads()
            if tid == 0:
                perm_undo(perm, swaps, st[1])
                if bf >= 0:
                    gain = best - parent_proxy(T, C, crit)
                    if crit == K.ENTROPY:
                        gain /= K.LN2
                    if not (gain / w_root + K.EPSILON < min_dec):
                        out_feat[i] = bf
                        out_bin[i] = bbin
                        out_next[i] = bnext
                        out_dl[i] = bdl
                        out_gain[i] = gain
                        st[5] = 1
                        st[8] = bf
                        st[7] = bbin
                        st[9] = 1 if bdl else 0
                st[6] = 0
            cuda.syncthreads()
            if st[5] == 1:
                f = st[8]
                sb = st[7]
                sdl = st[9] == 1
                miss = nv[f]
                for p in range(b0 + tid, b1, nt):
                    bn = np.int64(bins_row[rows[p], f])
                    if bn <= sb or (sdl and bn == miss):
                        cuda.atomic.add(st, 6, 1)
                cuda.syncthreads()
                nleft = st[6]
                lo = 0
                ro = 0
                for base in range(b0, b1, nt):
                    p = base + tid
                    fl = 0
                    if p < b1:
                        bn = np.int64(bins_row[rows[p], f])
                        if bn <= sb or (sdl and bn == miss):
                            fl = 1
                    inc = block_scan(sc, tid, fl)
                    tot = sc[nt - 1]
                    if p < b1:
                        before = inc - fl
                        if fl:
                            tmp[b0 + lo + before] = rows[p]
                        else:
                            tmp[b0 + nleft + ro + (p - base) - before] = rows[p]
                    lo += tot
                    ro += min(nt, b1 - base) - tot
                    cuda.syncthreads()
                for p in range(b0 + tid, b1, nt):
                    rows[p] = tmp[p]
                if tid == 0:
                    out_mid[i] = b0 + nleft
        cuda.syncthreads()


class _DeviceData:
    """The forest's binned matrix and labels on the device (copied once per forest)."""

    def __init__(self, data):
        self.bins_col = cuda.to_device(np.ascontiguousarray(data.bins_col))
        self.bins_row = cuda.to_device(np.ascontiguousarray(data.bins_row))
        self.yk = cuda.to_device(data.yk)
        self.yv = cuda.to_device(data.yv)
        self.nv = cuda.to_device(data.nv)


def device_data(data):
    dd = data.device_copy
    if dd is None:
        dd = _DeviceData(data)
        data.device_copy = dd
    return dd


class CudaEngine(CPUEngine):
    """The per-node work of :func:`grow_tree` on the device: the CPU engine's methods, with
    histograms, partitions and breadth-first levels run by the kernels above (the split
    search of a depth-first node, :meth:`CPUEngine.find_split`, is the CPU's own)."""

    def __init__(self, data, p, rows, w, w_root):
        self.data, self.p, self.w_root = data, p, w_root
        self.dev = device_data(data)
        self.rows = cuda.to_device(np.ascontiguousarray(rows))
        self.tmp = cuda.device_array_like(self.rows)
        self.flags = cuda.device_array(rows.shape[0], dtype=np.int32)
        self.w = cuda.to_device(np.ascontiguousarray(w, dtype=np.float64))
        self._bf_scratch = None

    @launches_quietly
    def hist(self, b0, b1, feats):
        d = self.data
        nf = feats.shape[0]
        nbins = d.maxbins if np.any(feats >= 0) else 1
        C = d.C
        stat = cuda.to_device(np.zeros((nf, nbins, C)))
        cnt = cuda.to_device(np.zeros((nf, nbins), dtype=np.int64))
        n = b1 - b0
        gx = max(1, min(MAX_GRID, -(-n // (TPB * 16))))
        shared = nbins * (C + 1) * 8
        use_shared = shared <= MAX_SHARED_BYTES
        d_feats = cuda.to_device(feats.astype(np.int64))
        for a in range(0, nf, MAX_GRID):  # (a grid's y size is at most 65535: features)
            b = min(nf, a + MAX_GRID)
            hist[(gx, b - a), TPB, 0, shared if use_shared else 0](
                self.dev.bins_col, self.rows, b0, b1, d_feats[a:b], self.w, self.dev.yk,
                self.dev.yv, d.is_reg, C, nbins, stat[a:b], cnt[a:b], use_shared)
        return stat.copy_to_host(), cnt.copy_to_host()

    @launches_quietly
    def totals(self, b0, b1):
        stat, _ = self.hist(b0, b1, np.array([-1], dtype=np.int64))
        return stat[0, 0]

    @launches_quietly
    def partition(self, b0, b1, f, bbin, dl):
        n = b1 - b0
        nblk = -(-n // TPB)
        counts = cuda.to_device(np.zeros(nblk, dtype=np.int64))
        flag_count[nblk, TPB](self.dev.bins_col, self.rows, b0, b1, f, bbin,
                              int(self.data.nv[f]), dl, self.flags, counts)
        c = counts.copy_to_host()
        sizes = np.full(nblk, TPB, dtype=np.int64)
        sizes[-1] = n - TPB * (nblk - 1)
        nleft = int(c.sum())
        lpos = b0 + np.concatenate([[0], np.cumsum(c)[:-1]])
        rc = sizes - c
        rpos = b0 + nleft + np.concatenate([[0], np.cumsum(rc)[:-1]])
        scatter[nblk, TPB](self.rows, b0, b1, self.flags, cuda.to_device(lpos),
                           cuda.to_device(rpos), self.tmp)
        copy_back[nblk, TPB](self.tmp, self.rows, b0, b1)
        return b0 + nleft

    def _scratch(self, blocks):
        d = self.data
        if self._bf_scratch is None or self._bf_scratch[0] < blocks:
            nfeat = d.bins_row.shape[1]
            perm = np.tile(np.arange(nfeat, dtype=np.int64), (blocks, 1))
            self._bf_scratch = (
                blocks,
                cuda.device_array((blocks, d.maxbins, d.C)),
                cuda.device_array((blocks, d.maxbins), dtype=np.int64),
                cuda.device_array((blocks, d.maxbins), dtype=np.int64),
                cuda.to_device(perm),
                cuda.device_array((blocks, nfeat), dtype=np.int64),
                cuda.device_array((blocks, 3, d.C)))
        return self._bf_scratch[1:]

    @launches_quietly
    def level(self, begin, end, depth, key, out):
        d, p = self.data, self.p
        s = begin.shape[0]
        blocks = int(min(s, BF_BLOCKS))
        scratch = self._scratch(blocks)
        # out = (tot, feat, bin, next, default_left, gain, mid); the kernel adds into tot
        dev_out = [cuda.to_device(np.zeros_like(out[0]))] + [cuda.to_device(a) for a in out[1:]]
        bf_level[blocks, TPB](
            self.dev.bins_row, self.rows, self.tmp, self.w, self.dev.yk, self.dev.yv,
            d.is_reg, d.C, self.dev.nv, cuda.to_device(begin), cuda.to_device(end),
            cuda.to_device(depth), cuda.to_device(key), p.mtry, p.max_depth,
            p.min_samples_split, p.min_samples_leaf, p.min_weight_leaf(self.w_root),
            p.criterion, p.min_impurity_decrease, self.w_root, *scratch, *dev_out)
        for host, dv in zip(out, dev_out):
            dv.copy_to_host(host)
