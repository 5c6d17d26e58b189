"""Pred and VPred predictors (Asadi et al., §3): predication and vectorisation.

Every tree is padded to a complete binary tree of its own depth ``D`` (a leaf above depth ``D``
becomes dummy splits whose descendants all carry the leaf's value), laid out breadth-first, so
that one step of the walk is the branch-free update::

    i = 2 * i + 2 - (x[feature[i]] <= threshold[i] | (isnan(x) & default_left[i]))

repeated ``D`` times. ``vpred`` interleaves ``v`` rows, each in its own registers, so that ``v``
independent memory loads are in flight at once; ``pred`` is ``v = 1``. The generated kernel
unrolls the ``v`` lanes and loops over the levels (``D`` is an argument), so one kernel per
(``v``, categorical) serves every depth. Categorical splits (a bitset test) are the only branch
left, generated only for models that have them. Elsewhere no walk tests for NaN: the rows are
copied twice, the second copy with -inf for NaN, and a default-left split reads the second
(``transposed_block``), so a row with NaN walks as fast as a row without.

The batches of a numerical model on the block copy take the ordered-key walk instead
(``key_walk_source``, issue 20): the same padded trees as heaps, floats compared as
order-preserving unsigned keys, four instructions a step on x86-64; the float walk above stays
for categorical models, rows read in place, and as its twin in the tests.

Thresholds are kept in float64 and, for float32 input, in float32 rounded down (exact:
``x <= t`` ⇔ ``x <= float32_floor(t)`` for float32 ``x``). Trees are grouped by depth; each group
runs as one parallel pass over blocks of rows.

One row has its own kernel and layout (``OneRowLayout``, at the end of this file): all trees
padded to the deepest depth, 16 trees interleaved, the whole model in one byte array, so that
a single-row call is one Numba call with four arguments.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ._cache import load_source
from .treeshape import depth

MAX_DEPTH = 16  # deeper trees would be padded to more than 65k nodes each: they take
# the unpadded walk (predict.vwalk) instead
MAX_PADDED_NODES = 1 << 26
BLOCK_ROWS = 128


def padded_size(depths):
    return int(sum((1 << d) for d in depths))


class PredLayout:
    """Per depth group: node arrays and per-tree info ``(node_off, leaf_off, group, column)``.

    ``width`` > 1: each tree of ``sel`` heads a run of ``width`` trees that share its splits
    (``treeshape.shared_structure``) and add to outputs ``group .. group + width - 1`` and
    columns ``column .. column + width - 1``; a group's ``leafval`` is then 2-D, one column per
    tree of the run, and a walk of the first tree serves them all."""

    def __init__(self, trees, tree_group, t0, t1, pad="auto", sel=None, width=1):
        """pad: 'own' (each tree to its own depth, one pass per depth), 'max' (every tree to
        the deepest; one pass) or 'auto' ('max' unless it adds over 25% more steps).
        sel: the trees to lay out (default all of t0 .. t1-1)."""
        sel = list(range(t0, t1)) if sel is None else list(sel)
        W = int(width)
        own = {t: depth(trees[t]) for t in sel}
        dmax = max(own.values()) if own else 0
        if pad == "auto":
            steps = sum(own.values())
            pad = "max" if len(sel) * dmax <= 1.25 * max(steps, 1) else "own"
        depths = {}
        for t in sel:
            d = own[t] if (pad == "own" or own[t] == 0) else dmax
            depths.setdefault(d, []).append(t)
        self.groups = []
        self.has_cat = any(trees[t].is_categorical.any() for t in sel)
        # whether a float64 row rounded to float32 reads the float32 thresholds exactly
        self.round32 = all(rounds_to_float32(trees[t].threshold[(trees[t].feature >= 0)
                                                                & ~trees[t].is_categorical])
                           for t in sel)
        bits, nb = [], 0
        self.const_trees = []
        for D in sorted(depths):
            ts = depths[D]
            if D == 0:
                for t in ts:
                    for u in range(t, t + W):
                        self.const_trees.append((int(tree_group[u]), u - t0,
                                                 float(trees[u].value[0])))
                continue
            NI, NL, K = (1 << D) - 1, 1 << D, len(ts)
            feat = np.zeros((K, NI), np.int32)
            thr = np.zeros((K, NI), np.float64)  # dummy splits: feature 0, threshold 0
            flags = np.zeros((K, NI), np.uint8)
            catoff = np.zeros((K, NI), np.int64)
            info = np.zeros((K, 4), np.int64)
            info[:, 0] = np.arange(K) * NI
            info[:, 1] = np.arange(K) * NL
            info[:, 2] = [int(tree_group[t]) for t in ts]
            info[:, 3] = [t - t0 for t in ts]
            # the group's trees end to end: ``first[k] + node`` is node ``node`` of tree k
            sizes = [trees[t].n_nodes for t in ts]
            first = np.zeros((K, 1), np.int64)
            first[1:, 0] = np.cumsum(sizes)[:-1]
            cat_base = nb + np.concatenate([[0], np.cumsum([trees[t].cat_bitsets.size
                                                            for t in ts])[:-1]])

            def joined(name, dtype):
                return np.concatenate([getattr(trees[t], name) for t in ts]).astype(dtype)

            f, lc, rc, th, dl, ic, co = (joined(name, dt) for name, dt in (
                ("feature", np.int64), ("left", np.int64), ("right", np.int64),
                ("threshold", np.float64), ("default_left", np.bool_),
                ("is_categorical", np.bool_), ("cat_offset", np.int64)))
            # level by level, the node at each padded place (k, i) of the level: a leaf above
            # the last level fills the places below it with dummy splits, both halves to itself
            node = np.zeros((K, 1), np.int64)
            for lvl in range(D):
                at = first + node
                split = f[at] >= 0
                c = split & ic[at]
                cols = slice((1 << lvl) - 1, (2 << lvl) - 1)
                feat[:, cols] = np.where(split, f[at], 0)
                thr[:, cols] = np.where(split, th[at], 0.0)
                flags[:, cols] = (split & dl[at]) | (c << 1)
                catoff[:, cols] = np.where(c, co[at] + cat_base[:, None], 0)
                node = np.stack([np.where(split, lc[at], node), np.where(split, rc[at], node)],
                                axis=2).reshape(K, 2 << lvl)
            if W > 1:
                vals = np.concatenate([np.stack([trees[u].value for u in range(t, t + W)], axis=1)
                                       for t in ts]).astype(np.float64)
                leafval = vals[(first + node).ravel()]
            else:
                leafval = joined("value", np.float64)[(first + node).ravel()]
            leafid = node.astype(np.int32).ravel()
            feat, thr, flags, catoff = feat.ravel(), thr.ravel(), flags.ravel(), catoff.ravel()
            for t in ts:
                bits.append(trees[t].cat_bitsets)
                nb += trees[t].cat_bitsets.size
            self.groups.append({"D": D, "feat": feat, "thr64": thr,
                                "thr32": floor32(thr), "flags": flags, "catoff": catoff,
                                "leafval": leafval, "leafid": leafid, "info": info})
        self.bitsets = np.concatenate(bits).astype(np.uint32) if nb else np.zeros(1, np.uint32)


def rounds_to_float32(thr):
    """Whether ``x <= t`` ⇔ ``float32(x) <= floor32(t)`` (``float32``: round to nearest even)
    for every float64 ``x`` and every threshold ``t`` of ``thr``: true of the thresholds of
    models whose library compares in float32 (XGBoost's, imported as the float64 boundary of
    a float32 threshold, ``importers._build.float32_boundary``), and of +inf. A float64 row
    of such a model may then be rounded to float32 and read the float32 thresholds."""
    thr = np.asarray(thr, np.float64)
    s = floor32(thr)
    with np.errstate(over="ignore", invalid="ignore"):
        up = np.nextafter(s, np.float32(np.inf))
        mid = (s.astype(np.float64) + up.astype(np.float64)) / 2.0  # exact in float64
    even = ((s.view(np.uint32) & 1) == 0) | (s == 0)
    bound = np.where(even, mid, np.nextafter(mid, -np.inf))
    # above the largest float32, float32(x) overflows to inf from 2**128 - 2**103 on
    bound = np.where(np.isinf(up) & (s > 0), np.nextafter(2.0 ** 128 - 2.0 ** 103, -np.inf),
                     bound)
    ok = (thr == bound) & np.isfinite(thr) | (thr == np.inf)
    return bool(np.all(ok))


def floor32(t):
    with np.errstate(over="ignore"):  # beyond float32's range: inf, then its largest float
        s = t.astype(np.float32)
    over = s.astype(np.float64) > t
    s[over] = np.nextafter(s[over], np.float32(-np.inf))
    return s


# -- generated kernels -------------------------------------------------------------------------
# One module per (v, categorical): the v lanes (rows) are unrolled, the levels are a loop (the
# depth D is an argument), so one kernel serves every depth and Numba builds it in seconds.
# Node and leaf indices are unsigned (no negative-index fix-up in the walk). A block of rows
# is copied twice (NaN, then -inf for NaN: see transposed_block), so that no walk of a
# numerical model tests for NaN.
HEADER = '''"""Generated by hardwood.predict.pred: V={V}, categorical={CAT}. Do not edit."""
import numpy as np
from numba import njit, prange
from hardwood.predict.struct import cat_left
VL = {V}
'''

_ARGS = "feat, thr, flags, catoff, bits, ncat, info, leafval, leafid, out, lout, want_leaf"


def lane_step(lane, mode, indent, update="{i} = 2 * {i} + 2 - np.int64({c})", V=None,
               direct=False):
    """One level of lane ``lane``: ``c`` = the row goes left, then ``update`` (default: the
    padded tree's ``i = 2i + 2 - c``); branch-free unless categorical. ``fk``/``tk``/``ok``/
    ``ck`` are the tree's own slices of the node arrays; ``fk`` holds u * V, where ``used[u]``
    is the feature. With ``V``, the lane reads its row from the block's transposed copy ``xq``
    (the used features only, V lanes side by side: one base register for all lanes); without,
    lane 0 reads row ``x0``; ``direct``: lane ``l`` reads row ``x{l}`` (no copy).

    ``mode`` 'dual' (see :func:`transposed_block`): a lane reading the block's copy makes the
    plain test (the copy has already sent NaN its default way); a row read in place (the tail
    of a block) the NaN test."""
    if mode == "dual":
        mode = "plain" if (V and not direct) else "nan"
    i, j, v, c = f"i{lane}", f"j{lane}", f"v{lane}", f"c{lane}"
    x = (f"xq[np.uint64(fk[{j}] + {lane})]" if V and not direct
         else f"x{lane if V else 0}[used[fk[{j}] // {_V_NAME}]]")
    L = [f"{j} = np.uint64({i})", f"{v} = {x}"]
    nan_left = f"({v} <= tk[{j}]) | (({v} != {v}) & ((ok[{j}] & 1) != 0))"
    if mode == "cat":
        L += [f"if ok[{j}] & 2:",
              f"    {c} = cat_left({v}, ck[{j}], used[fk[{j}] // {_V_NAME}], bits, ncat, "
              f"(ok[{j}] & 1) != 0)",
              "else:",
              f"    {c} = {nan_left}"]
    elif mode == "nan":
        L += [f"{c} = {nan_left}"]
    else:
        L += [f"{c} = {v} <= tk[{j}]"]
    L += [update.format(i=i, j=j, c=c)]
    return [indent + s for s in L]


_V_NAME = "VL"  # the generated modules' lane count (a global constant there)


def transposed_block(V, dual=False):
    """Lines that copy the used features (``used``: the sorted features the splits test) of rows
    r0 .. r0 + V * (rows // V) - 1 of X into ``xs``, feature-major within each group of V rows
    (``xs[(r - r0) * F + u * V + lane]`` is feature ``used[u]``, ``F = len(used)``): the copy
    costs no more than the model's split count per row, however wide X is.

    ``dual``: ``used`` is the used features twice (``F = 2U``); the first copy keeps NaN, the
    second holds -inf for NaN. A numerical split whose missing values go left reads the second
    (its feature is stored as ``U + u``): ``-inf <= t`` holds for every threshold, as NaN's
    default direction asks, and ``NaN <= t`` fails for every threshold, as a default-right
    split asks. So the walk needs no NaN test and no default-direction flag: rows with NaN
    walk as fast as rows without, and no block has to be scanned for NaN."""
    if dual:
        return ["    F = used.shape[0]",
                "    H = F // 2",
                f"    nq = (r1 - r0) // {V}",
                f"    xs = np.empty(nq * {V} * F, X.dtype)",
                "    ninf = X.dtype.type(-np.inf)",
                "    for q in range(nq):",
                f"        base = q * {V} * F",
                f"        for lane in range({V}):",
                f"            xr = X[r0 + q * {V} + lane]",
                "            for u in range(H):",
                "                a = xr[used[u]]",
                f"                xs[base + u * {V} + lane] = a",
                f"                xs[base + (u + H) * {V} + lane] = a if a == a else ninf"]
    return ["    F = used.shape[0]",
            f"    nq = (r1 - r0) // {V}",
            # nq may be 0 (fewer rows than lanes): an empty copy. Never a view of X here: X
            # may be read-only (a memory map), and xs must type as one writable array
            f"    xs = np.empty(nq * {V} * F, X.dtype)",
            "    for q in range(nq):",
            f"        base = q * {V} * F",
            f"        for lane in range({V}):",
            f"            xr = X[r0 + q * {V} + lane]",
            "            for u in range(F):",
            f"                xs[base + u * {V} + lane] = xr[used[u]]"]


def root_test(lane, mode, direct=False):
    """Lane ``lane``'s test at the root (``f0``/``t0``/``d0``, read once for all lanes)."""
    x = f"x{lane}[used[f0 // {_V_NAME}]]" if direct else f"xq[np.uint64(f0 + {lane})]"
    root = f"{x} <= t0"
    if mode == "nan":  # (dual: the copy is read, the plain test)
        root = f"({root}) | (({x} != {x}) & d0)"
    return root


def lanes_rows(V, direct):
    """The start of a group of V lanes: their rows' block copy ``xq``, or (``direct``) the rows."""
    if direct:
        return [f"            x{lane} = X[r + {lane}]" for lane in range(V)]
    return ["            xq = xs[(r - r0) * F:]"]


def walk_head(name, params, V, direct, multi=False, dual=False):
    """The decorator, signature and (unless ``direct``) block copy of a generated walk;
    ``multi``: ``W``, the number of values per leaf; ``dual``: see :func:`transposed_block`."""
    return (["@njit(cache=True, nogil=True)", f"def {name}(X, r0, r1, used, {params}):"]
            + (["    W = leafval.shape[1]"] if multi else [])
            + ([] if direct else transposed_block(V, dual)))


def node_slices(stop):
    """Lines slicing tree k's node arrays from its first node ``nb`` to ``stop`` (may be '')."""
    return [f"        {k} = {a}[nb:{stop}]"
            for k, a in (("fk", "feat"), ("tk", "thr"), ("ok", "flags"), ("ck", "catoff"))]


def _rows_walk(name, V, mode, direct=False, multi=False):
    """Rows r0..r1 through every tree of a depth group, V rows interleaved. Outside categorical
    models the root's feature and threshold are read once per tree for all lanes. ``multi``:
    ``leafval`` is 2-D, a leaf's values for the W trees that share the walked one's splits."""
    hoist = mode != "cat"
    L = walk_head(name, f"D, {_ARGS}", V, direct, multi, mode == "dual") + [
         "    NI = (1 << D) - 1",
         "    for k in range(info.shape[0]):",
         "        nb = info[k, 0]",
         "        lb = info[k, 1]",
         "        g = info[k, 2]",
         "        col = info[k, 3]"] + node_slices("nb + NI") + [
         "        lk = leafval[lb:lb + NI + 1]",
         "        ik = leafid[lb:lb + NI + 1]"]
    if hoist:
        L += ["        f0 = fk[0]", "        t0 = tk[0]", "        d0 = (ok[0] & 1) != 0"]
    L += ["        r = r0", f"        while r + {V} <= r1:"] + lanes_rows(V, direct)
    for lane in range(V):
        L.append(f"            i{lane} = 2 - np.int64({root_test(lane, mode, direct)})" if hoist
                 else f"            i{lane} = 0")
    L.append(f"            for lvl in range({1 if hoist else 0}, D):  # lanes interleaved level by level")
    for lane in range(V):
        L += lane_step(lane, mode, "                ", V=V, direct=direct)
    L += lanes_tail(V, "ik", "lk", "{i} - NI", "for lvl in range(D):",
                    lane_step(0, mode, "                "), multi)
    return L


def lanes_tail(V, ids, vals, leaf, loop, step, multi=False):
    """The end of a V-lane walk: each lane's leaf (``ids``/``vals`` indexed by ``leaf`` with
    ``{i}`` the lane's index) written out, then the rows left over walked one at a time
    (``loop`` the level loop's header, ``step`` lane 0's step). ``multi``: the leaf's ``W``
    values (a row of the 2-D ``vals``) go to outputs ``g .. g + W - 1``, its id to columns
    ``col .. col + W - 1``."""
    at = [leaf.format(i=f"i{lane}") for lane in range(V)]
    L = ["            if want_leaf:"]
    L += _leaf_out(range(V), ids, at, multi, "                ")
    L.append("            else:")
    L += _value_out(range(V), vals, at, multi, "                ")
    L += [f"            r += {V}",
          "        while r < r1:",
          "            x0 = X[r]",
          "            i0 = 0",
          "            " + loop]
    L += step
    L += ["            if want_leaf:"]
    L += _leaf_out([None], ids, at, multi, "                ")
    L += ["            else:"]
    L += _value_out([None], vals, at, multi, "                ")
    L += ["            r += 1"]
    return L


def _leaf_out(lanes, ids, at, multi, pad):
    """Lines writing the leaf ids of ``lanes`` (None: the one row ``r``, lane 0's index)."""
    rows = [(f"r + {lane}", at[lane]) if lane is not None else ("r", at[0]) for lane in lanes]
    if not multi:
        return [f"{pad}lout[{r}, col] = {ids}[np.uint64({a})]" for r, a in rows]
    L = [f"{pad}q{k} = {ids}[np.uint64({a})]" for k, (r, a) in enumerate(rows)]
    L.append(f"{pad}for w in range(W):")
    L += [f"{pad}    lout[{r}, col + w] = q{k}" for k, (r, a) in enumerate(rows)]
    return L


def _value_out(lanes, vals, at, multi, pad):
    """Lines adding the leaf values of ``lanes`` (None: the one row ``r``) to ``out``."""
    rows = [(f"r + {lane}", at[lane]) if lane is not None else ("r", at[0]) for lane in lanes]
    if not multi:
        return [f"{pad}out[{r}, g] += {vals}[np.uint64({a})]" for r, a in rows]
    L = [f"{pad}q{k} = np.uint64({a})" for k, (r, a) in enumerate(rows)]
    L.append(f"{pad}for w in range(W):")
    L += [f"{pad}    out[{r}, g + w] += {vals}[q{k}, w]" for k, (r, a) in enumerate(rows)]
    return L


def block_driver_source(walk, V, cat, args, direct, keyed=False):
    """The drivers around a generated walk ``walk(name, V, mode)`` whose functions take
    ``(X, r0, r1, used, <args>)``: ``rows_block`` runs the walk for a block of rows,
    ``run_parallel``/``run_serial`` cover the rows in blocks of ``block`` rows (BLOCK_ROWS; the
    size mattered little in benchmarks). Shared by pred/vpred and the unpadded walk
    (``predict.vwalk``).

    ``direct``: the walk reads the rows in place, for models whose walk is short next to the
    per-row cost of the block copy (few trees, many used features). Else categorical models
    take the walk with categorical and NaN tests on the block copy, and the others the
    ``dual`` walk (:func:`transposed_block`): ``used`` lists the used features twice, and a
    numerical default-left split stores its feature as ``U + u``, so rows with NaN take the
    plain walk; ``keyed``: the ordered-key walk (:func:`key_walk_source`). A module holds one
    walk, so that only the walk a model takes compiles (a walk of 16 lanes takes 4-5 s). The
    drivers keep their ``direct`` argument."""
    if keyed:
        L = walk("walk_key", V, "key") + [""]
        pick = [f"    walk_key(X, r0, r1, used, {args})"]
    elif direct:
        L = walk("walk_direct", V, "cat" if cat else "nan", True) + [""]
        pick = [f"    walk_direct(X, r0, r1, used, {args})"]
    elif cat:
        L = walk("walk_cat", V, "cat") + [""]
        pick = [f"    walk_cat(X, r0, r1, used, {args})"]
    else:
        L = walk("walk_dual", V, "dual") + [""]
        pick = [f"    walk_dual(X, r0, r1, used, {args})"]
    L += ["@njit(cache=True, nogil=True)",
          f"def rows_block(X, r0, r1, used, direct, {args}):"] + pick + [""]
    L += ["@njit(cache=True, nogil=True, parallel=True)",
          f"def run_parallel(X, block, used, direct, {args}):",
          "    n = X.shape[0]",
          "    nblk = (n + block - 1) // block",
          "    for b in prange(nblk):",
          "        r0 = b * block",
          f"        rows_block(X, r0, min(n, r0 + block), used, direct, {args})",
          "",
          "@njit(cache=True, nogil=True)",
          f"def run_serial(X, block, used, direct, {args}):",
          "    n = X.shape[0]",
          "    for r0 in range(0, n, block):",
          f"        rows_block(X, r0, min(n, r0 + block), used, direct, {args})",
          ""]
    return L


def _kernel_source(V, cat, multi=False, direct=False):
    L = [HEADER.format(V=V, CAT=cat)]
    walk = partial(_rows_walk, multi=True) if multi else _rows_walk
    L += block_driver_source(walk, V, cat, "D, " + _ARGS, direct)
    return "\n".join(L) + "\n"


def kernels(V, cat, multi=False, direct=False, keyed=False, depth=None):
    """The generated module of ``V`` lanes; ``multi``: for 2-D ``leafval`` (see
    :class:`PredLayout`'s ``width``); ``direct``: rows read in place (see
    ``block_driver_source``); ``keyed``: the ordered-key walk (:func:`key_walk_source`; a
    numerical model's block copy), for trees of depth ``depth``."""
    if keyed:
        return load_source(f"vpred_v{V}_k{'_m' if multi else ''}_d{depth}",
                           key_walk_source(V, bool(multi), int(depth)))
    tag = f"v{V}_{'c' if cat else 'n'}{'_m' if multi else ''}{'_d' if direct else ''}"
    return load_source(f"vpred_{tag}", _kernel_source(V, bool(cat), bool(multi),
                                                      bool(direct)))


# -- the ordered-key walk (issue 20) ------------------------------------------------------------
# The padded trees of a numerical model, rows copied into a block (not read in place), walked
# as heaps: the root is node 1, the children of node j are 2j (left) and 2j + 1 (right), so a
# step is j = 2j + (the row goes right), and after D steps the leaf is j - 2^D. The block copy
# holds each value's ordered key (``_intrinsics.order_key``: x <= t <=> key(x) <= key(t)) and
# the thresholds are keys too, so that a step is four instructions on x86-64
# (``_intrinsics.key_lanes``: load the feature offset, load the row's key, compare it with
# the threshold's key in memory, add with carry), where the float walk above takes six to
# seven and spills lanes at V = 16: 12 lanes, each in a register of its own, one tree's
# whole walk in one block of assembly; a float32 node is one 8-byte record (key, offset).
# NaN: the first copy of a feature holds the largest key (every split sends it right), the
# second, which default-left splits read, key 0 (every split sends it left), as in the dual
# walk (transposed_block). The rows of a block's last group of lanes that lie beyond the block
# repeat its last row and are not written out. The leaves reached, and their sums (added in
# tree order to a block accumulator that starts from ``out``), are those of the float walk.
# One module per (lanes, depth): the levels are unrolled in the assembly.


def order_keys(t):
    """The ordered keys (``_intrinsics.order_key``) of a float32 or float64 array, in numpy."""
    t = np.asarray(t)
    n = t.dtype.itemsize * 8
    ut, it = (np.uint32, np.int32) if n == 32 else (np.uint64, np.int64)
    b = (t + t.dtype.type(0.0)).view(ut)
    s = (b.view(it) >> (n - 1)).view(ut)
    return b ^ (s | ut(1 << (n - 1)))


def key_arrays(featu, thr32, thr64, D):
    """A depth-``D`` group's node arrays for the keyed walk (``_intrinsics.key_lanes``'s two
    layouts), a tree every ``2**D`` (float32) or ``2 * 2**D`` (float64) items, node ``j``
    (1-based: the padded tree's node ``j - 1``) at item ``j`` of its tree: for float32 rows
    ``key | offset << 32``, for float64 rows the key, and the feature offset ``2**D`` items
    further."""
    NI, NL = (1 << D) - 1, 1 << D
    T = featu.size // NI
    off = featu.astype(np.uint64).reshape(T, NI)
    rec32 = np.zeros((T, NL), np.uint64)
    rec32[:, 1:] = order_keys(thr32).astype(np.uint64).reshape(T, NI) | (off << np.uint64(32))
    rec64 = np.zeros((T, 2 * NL), np.uint64)
    rec64[:, 1:NL] = order_keys(thr64).reshape(T, NI)
    rec64[:, NL + 1:] = off
    return rec32.ravel(), rec64.ravel()


def _key_walk(name, V, multi, depth):
    """The keyed walk of V lanes over a block's rows r0 .. r1 - 1 through trees of depth
    ``depth`` (see above)."""
    L = ["@njit(cache=True, nogil=True)",
         f"def {name}(X, r0, r1, used, D, {_ARGS}):",
         "    F = used.shape[0]",
         "    H = F // 2",
         f"    nq = (r1 - r0 + {V - 1}) // {V}",
         "    xs = key_buffer(X, nq * VL * F)",
         "    zero = order_key(X.dtype.type(0))",
         "    zero ^= zero",
         "    top = ~zero",
         "    last = r1 - 1",
         "    for q in range(nq):",
         "        base = q * VL * F",
         "        for lane in range(VL):",
         "            xr = X[min(r0 + q * VL + lane, last)]",
         "            for u in range(H):",
         "                a = xr[used[u]]",
         "                kk = order_key(a)",
         "                nan = a != a",
         "                xs[base + u * VL + lane] = top if nan else kk",
         "                xs[base + (u + H) * VL + lane] = zero if nan else kk",
         "    K = out.shape[1]",
         "    KL = lout.shape[1]",
         "    lo = lout.reshape(lout.shape[0] * KL)"]
    if multi:
        L.append("    W = leafval.shape[1]")
    # the block's sums, output by output, start from out's (the additions are those of the
    # float walk, in the same order)
    L += ["    NR = nq * VL",
          "    acc = np.empty(K * NR if not want_leaf else 0, np.float64)",
          "    if not want_leaf:",
          "        for gg in range(K):",
          "            for i in range(r1 - r0):",
          "                acc[gg * NR + i] = out[r0 + i, gg]",
          f"    NN = {1 << depth}",
          "    NL = np.uint64(NN)",
          "    S = thr.shape[0] // info.shape[0]  # items per tree",
          "    for k in range(info.shape[0]):",
          "        lb = info[k, 1]",
          "        g = info[k, 2]",
          "        col = info[k, 3]",
          "        tk = thr[k * S:(k + 1) * S]",
          "        lk = leafval[lb:lb + NN]",
          "        ik = leafid[lb:lb + NN]",
          "        for q in range(nq):",
          "            xq = xs[q * VL * F:]",
          "            r = r0 + q * VL",
          "            nv = min(VL, r1 - r)"]
    L.append("            " + ", ".join(f"j{lane}" for lane in range(V))
             + f"{',' if V == 1 else ''} = key_lanes(tk, xq, {V}, {depth})")
    L.append("            if want_leaf:")
    for lane in range(V):
        guard = f"                if {lane} < nv:" if lane else "                if True:"
        if multi:
            L += [guard, f"                    q{lane} = ik[j{lane} - NL]",
                  "                    for w in range(W):",
                  f"                        lo[np.uint64((r + {lane}) * KL + col + w)] = q{lane}"]
        else:
            L += [guard,
                  f"                    lo[np.uint64((r + {lane}) * KL + col)] = ik[j{lane} - NL]"]
    # values: into the block's accumulator (lanes past r1 land in its spare rows), whose
    # row of output g starts at acc[g * NR]
    L.append("            else:")
    if multi:
        L.append("                for w in range(W):")
        L.append("                    aq = acc[(g + w) * NR + q * VL:]")
        L += [f"                    aq[{lane}] += lk[j{lane} - NL, w]" for lane in range(V)]
    else:
        L.append("                aq = acc[g * NR + q * VL:]")
        L += [f"                aq[{lane}] += lk[j{lane} - NL]" for lane in range(V)]
    L += ["    if not want_leaf:",
          "        for gg in range(K):",
          "            for i in range(r1 - r0):",
          "                out[r0 + i, gg] = acc[gg * NR + i]"]
    return L


def key_walk_source(V, multi, depth):
    """The module of the keyed walk of ``V`` lanes through trees of depth ``depth`` (the
    drivers of ``block_driver_source``)."""
    L = [HEADER.format(V=V, CAT=False).replace("categorical=False", "ordered keys"),
         "from hardwood.backends._intrinsics import key_buffer, key_lanes, order_key", ""]
    L += block_driver_source(lambda name, V, mode: _key_walk(name, V, multi, depth), V, False,
                             "D, " + _ARGS, False, keyed=True)
    return "\n".join(L) + "\n"


# -- the one-row path ---------------------------------------------------------------------------
# One row through every tree, ONE_ROW_V trees at a time, in one Numba call with four arguments:
# the row, the model packed into one byte array (``OneRowLayout.blob``), the output and the
# transform code. Every tree is padded to the deepest tree's depth (so one walk, unrolled over
# the lanes and looping over the levels, serves all trees and every depth: one kernel per
# (categorical, multi-output, feature dtype), built in a few seconds) and the node arrays are interleaved within a block of V
# trees (node i of lane l at ``block * NI * V + i * V + l``), so that a block's top levels share
# cache lines. The tree count is padded to a multiple of V with dummy trees whose leaves are
# -0.0 (x + -0.0 == x for every x, so they change no sum and need no test). The row is
# copied twice, as in transposed_block (a default-left split reads x[F + f], which holds -inf
# for NaN), so that every row of a numerical model takes the plain walk, NaN or not. Leaf
# values are added in tree order to the base score, so the sums are those of the naive walk.
ONE_ROW_V = 16
# deeper trees take the batch kernels' one_row (padding every tree to 2**D leaves grows fast)
ONE_ROW_MAX_DEPTH = 16
MAX_ONE_ROW_NODES = 1 << 22  # padded nodes (about 24 bytes each) beyond which there is no one-row path
HEADER_WORDS = 32


def one_row_unsupported_reason(trees, t0, t1):
    depths = [depth(trees[t]) for t in range(t0, t1)]
    D = max(max(depths, default=0), 1)
    if D > ONE_ROW_MAX_DEPTH:
        return f"a tree has depth {D} (the one-row kernel stops at {ONE_ROW_MAX_DEPTH})"
    n_blocks = -(-(t1 - t0) // ONE_ROW_V)
    if n_blocks * ONE_ROW_V * (1 << D) > MAX_ONE_ROW_NODES:
        return "padding every tree to the deepest tree's depth would need too many nodes"
    return None


def feat_dtype(n_features):
    if n_features <= 1 << 8:
        return np.uint8
    if n_features <= 1 << 16:
        return np.uint16
    return np.uint32


class OneRowLayout:
    """The one-row model, built from a :class:`PredLayout` (its depth groups re-padded to the
    deepest depth and put back in tree order). ``blob`` holds every array behind a header of
    offsets; ``kernel`` is the generated ``one(X, blob, out, code)``, which writes the row's K
    outputs (transformed in place when ``code`` is not 0) to ``out`` (K float64s, 1-D or
    (1, K)). It allocates nothing (its copy of the row is on the stack) for models of up to
    128 features; wider models allocate that copy, 2 floats per feature."""

    def __init__(self, layout: PredLayout, n_trees, n_outputs, n_features, base, ncat,
                 V=ONE_ROW_V):
        D = max([g["D"] for g in layout.groups] + [1])
        NI, NL = (1 << D) - 1, 1 << D
        T = int(n_trees)
        NB = -(-T // V)
        TP = NB * V
        feat = np.zeros((TP, NI), np.int64)
        thr = np.zeros((TP, NI), np.float64)
        flags = np.zeros((TP, NI), np.uint8)
        catoff = np.zeros((TP, NI), np.int64)
        leaf = np.full((TP, NL), -0.0, np.float64)
        grp = np.zeros(TP, np.int32)
        for g in layout.groups:
            Dg = g["D"]
            ni, nl = (1 << Dg) - 1, 1 << Dg
            cols = g["info"][:, 3]
            grp[cols] = g["info"][:, 2]
            # a padded tree of depth Dg is the top of one of depth D: node i keeps its
            # breadth-first index, the levels below are dummy splits, leaf q is leaf q >> shift
            feat[cols, :ni] = g["feat"].reshape(-1, ni)
            thr[cols, :ni] = g["thr64"].reshape(-1, ni)
            flags[cols, :ni] = g["flags"].reshape(-1, ni)
            catoff[cols, :ni] = g["catoff"].reshape(-1, ni)
            leaf[cols] = np.repeat(g["leafval"].reshape(-1, nl), 1 << (D - Dg), axis=1)
        for grp_k, col, val in layout.const_trees:
            grp[col] = grp_k
            leaf[col] = val

        def lanes(a):  # (TP, N) -> (NB, N, V), flattened
            return np.ascontiguousarray(a.reshape(NB, V, -1).transpose(0, 2, 1)).ravel()

        self.D, self.V, self.cat, self.multi = D, V, bool(layout.has_cat), int(n_outputs) > 1
        if not self.cat:
            # the dual row (see the kernel): a default-left split reads feature F + f
            feat = feat + int(n_features) * (flags & 1).astype(np.int64)
        self.feat_dtype = np.dtype(feat_dtype(2 * int(n_features))).name
        sections = [
            lanes(feat).astype(self.feat_dtype),
            floor32(lanes(thr)),
            lanes(thr),
            lanes(flags),
            lanes(catoff) if self.cat else np.zeros(1, np.int64),
            lanes(leaf),
            grp,
            layout.bitsets.astype(np.uint32),
            np.ascontiguousarray(ncat, np.int64) if self.cat else np.zeros(1, np.int64),
            np.ascontiguousarray(base, np.float64),
        ]
        # the last header words: whether float64 rows are rounded to float32 and read the
        # float32 thresholds (rounds_to_float32), then the depth
        self.round32 = bool(layout.round32)
        self.blob = pack_blob([NB, T, int(n_outputs)], sections, last=(int(self.round32), D))
        self.kernel = one_row_kernel(V, self.cat, self.multi, self.feat_dtype)


def pack_blob(head, sections, last=0):
    """One read-only byte array: a header of ``HEADER_WORDS`` int64 words (``head``, then the
    start and end byte of each section, then zeros, and ``last``, a word or a list of them, in
    the last words), then the
    sections, each 64-byte aligned. A one-row kernel takes the whole model as this one argument
    (each array argument costs Numba's dispatcher about 0.1 us)."""
    head = list(head)
    pos = HEADER_WORDS * 8
    chunks = []
    for a in sections:
        b = np.ascontiguousarray(a).view(np.uint8).ravel()
        pos = -(-pos // 64) * 64
        head += [pos, pos + b.size]
        chunks.append((pos, b))
        pos += b.size
    assert len(head) < HEADER_WORDS
    last = [last] if isinstance(last, (int, np.integer)) else list(last)
    head += [0] * (HEADER_WORDS - len(last) - len(head)) + last
    blob = np.zeros(-(-pos // 64) * 64, np.uint8)
    blob[:len(head) * 8] = np.asarray(head, np.int64).view(np.uint8)
    for p, b in chunks:
        blob[p:p + b.size] = b
    blob.flags.writeable = False
    return blob


def _one_row_walk(name, V, mode, multi):
    """A walk over all blocks of V trees; mode 'plain' (numerical models: the dual row) or
    'cat' (NaN and categorical tests).
    The V lanes are unrolled, the levels are a loop (the depth D comes from the blob), so one
    kernel serves every depth and stays small enough for Numba to build in seconds."""
    args = "x, feat, thr, flags, catoff, bits, ncat, leaf, grp, NB, D, acc, s"
    L = ["@njit(cache=True, nogil=True)", f"def {name}({args}):",
         "    NI = (1 << D) - 1",
         "    for b in range(NB):",
         f"        nb = b * NI * {V}"]
    L += [f"        p{lane} = {lane}" for lane in range(V)]
    L.append("        for lvl in range(D):  # the lanes interleaved level by level")
    for lane in range(V):
        # p = i * V + lane (the node's interleaved index); i' = 2i + 2 - c gives
        # p' = 2p + 2V - lane - c * V. Unsigned indices: no negative-index fix-up.
        p, j, v, c = f"p{lane}", f"j{lane}", f"v{lane}", f"c{lane}"
        L += [f"            {j} = np.uint64(nb + {p})", f"            {v} = x[feat[{j}]]"]
        if mode == "cat":
            L += [f"            if flags[{j}] & 2:",
                  f"                {c} = cat_left({v}, catoff[{j}], feat[{j}], bits, ncat, "
                  f"(flags[{j}] & 1) != 0)",
                  "            else:",
                  f"                {c} = ({v} <= thr[{j}]) | (({v} != {v}) & "
                  f"((flags[{j}] & 1) != 0))"]
        elif mode == "nan":
            L += [f"            {c} = ({v} <= thr[{j}]) | (({v} != {v}) & "
                  f"((flags[{j}] & 1) != 0))"]
        else:
            L += [f"            {c} = {v} <= thr[{j}]"]
        L += [f"            {p} = 2 * {p} + {2 * V - lane} - np.int64({c}) * {V}"]
    L.append(f"        lb = b * (NI + 1) * {V} - NI * {V}")
    for lane in range(V):
        q = f"leaf[np.uint64(lb + p{lane})]"
        if multi:
            L.append(f"        acc[0, grp[np.uint64(b * {V} + {lane})]] += {q}")
        else:
            L.append(f"        s += {q}")
    L.append("    return s")
    return L


def _one_row_source(V, cat, multi, featdt):
    L = [f'"""Generated by hardwood.predict.pred (one row): V={V}, categorical={cat}, '
         f'multi-output={multi}, features {featdt}. Do not edit."""',
         "import numpy as np",
         "from numba import njit",
         "from hardwood.backends._intrinsics import stack_row",
         "from hardwood.predict.struct import cat_left",
         "from hardwood.predict.transform import transform_inplace",
         "", ""]
    modes = ("cat",) if cat else ("plain",)
    for mode in modes:
        L += _one_row_walk(f"walk_{mode}", V, mode, multi) + ["", ""]
    walk_args = "x, feat, thr, flags, catoff, bits, ncat, leaf, grp, NB, D, acc"
    L += ["@njit(cache=True, nogil=True)",
          "def one(X, blob, out, code):",
          f"    h = blob[:{HEADER_WORDS * 8}].view(np.int64)",
          "    NB = h[0]",
          "    K = h[2]",
          f"    D = h[{HEADER_WORDS - 1}]",
          f"    feat = blob[h[3]:h[4]].view(np.{featdt})",
          "    if X.itemsize == 4:",  # float32 rows: thresholds rounded down to float32 (exact)
          "        thr = blob[h[5]:h[6]].view(X.dtype)",
          "    else:",
          "        thr = blob[h[7]:h[8]].view(X.dtype)",
          "    flags = blob[h[9]:h[10]]",
          "    catoff = blob[h[11]:h[12]].view(np.int64)",
          "    leaf = blob[h[13]:h[14]].view(np.float64)",
          "    grp = blob[h[15]:h[16]].view(np.int32)",
          "    bits = blob[h[17]:h[18]].view(np.uint32)",
          "    ncat = blob[h[19]:h[20]].view(np.int64)",
          "    base = blob[h[21]:h[22]].view(np.float64)",
          "    x = X[0]",
          "    acc = out.reshape((1, out.size))"]
    if multi:
        L += ["    for k in range(K):",
              "        acc[0, k] = base[k]"]
    if cat:
        L += [f"    s = walk_cat({walk_args}, base[0])"]
    else:
        # the dual row: x, then x with -inf for NaN, which default-left splits read (their
        # feature is stored as F + f): -inf <= t holds and NaN <= t fails for every threshold,
        # so every row takes the plain walk. It is in the kernel's stack frame where the
        # features fit a uint8 index (no allocation). float64 rows of a model whose
        # thresholds allow it (OneRowLayout.round32: XGBoost's) are rounded to float32, as
        # XGBoost does, and read the float32 thresholds: half the bytes of the float64 ones.
        def scratch(like):
            return (f"stack_row({like}, {_STACK_ROW})" if featdt == "uint8"
                    else f"np.empty(2 * F, {like}.dtype)")
        L += ["    F = X.shape[1]",
              "    thr32 = blob[h[5]:h[6]].view(np.float32)",
              "    thr64 = blob[h[7]:h[8]].view(np.float64)",
              f"    if X.itemsize == 4 or h[{HEADER_WORDS - 2}] != 0:",
              f"        x32 = {scratch('thr32')}",
              "        ninf32 = np.float32(-np.inf)",
              "        for f in range(F):",
              "            b = np.float32(X[0, f])",
              "            x32[f] = b",
              "            x32[F + f] = b if b == b else ninf32",
              f"        s = walk_plain({walk_args.replace('x, feat, thr', 'x32, feat, thr32', 1)},"
              " base[0])",
              "    else:",
              f"        x64 = {scratch('thr64')}",
              "        ninf64 = -np.inf",
              "        for f in range(F):",
              "            a = np.float64(X[0, f])",
              "            x64[f] = a",
              "            x64[F + f] = a if a == a else ninf64",
              f"        s = walk_plain({walk_args.replace('x, feat, thr', 'x64, feat, thr64', 1)},"
              " base[0])"]
    if not multi:
        L += ["    acc[0, 0] = s"]
    L += ["    if code != 0:",
          "        transform_inplace(code, acc)"]
    return "\n".join(L) + "\n"


_STACK_ROW = 256  # the dual row's items on the stack: 2F for up to 128 features (uint8 indices)


def one_row_kernel(V, cat, multi, featdt):
    src = _one_row_source(V, bool(cat), bool(multi), featdt)
    tag = f"v{V}_{'c' if cat else 'n'}{'m' if multi else '1'}_{featdt}"
    return load_source(f"onerow_{tag}", src).one
