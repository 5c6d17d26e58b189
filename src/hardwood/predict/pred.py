"""Pred and VPred predictors (Asadi et al., §3): predication and vectorisation.

Every tree is padded to a complete binary tree of its own depth ``D`` (a leaf above depth ``D``
becomes dummy splits whose descendants all carry the leaf's value), laid out breadth-first, so
that one step of the walk is the branch-free update::

    i = 2 * i + 2 - (x[feature[i]] <= threshold[i] | (isnan(x) & default_left[i]))

and the walk is that statement written out ``D`` times: a kernel is generated per depth (and
per ``v``), so the unrolled code holds no loop over levels. ``vpred`` interleaves ``v`` rows,
each in its own registers, so that ``v`` independent memory loads are in flight at once; ``pred``
is ``v = 1``. Categorical splits (a bitset test) are the only branch left, generated only for
models that have them.

Thresholds are kept in float64 and, for float32 input, in float32 rounded down (exact:
``x <= t`` ⇔ ``x <= float32_floor(t)`` for float32 ``x``). Trees are grouped by depth; each group
runs as one parallel pass over blocks of rows.
"""
from __future__ import annotations

import numpy as np

from ._cache import load_source

MAX_DEPTH = 16  # deeper trees would be padded to more than 65k nodes each
MAX_PADDED_NODES = 1 << 26
BLOCK_ROWS = 128


def tree_depths(trees):
    return [t.depth() for t in trees]


def padded_size(depths):
    return int(sum((1 << d) for d in depths))


def unsupported_reason(trees):
    depths = tree_depths(trees)
    d = max(depths) if depths else 0
    if d > MAX_DEPTH:
        return f"a tree has depth {d}; pred/vpred pad trees to full depth and stop at {MAX_DEPTH}"
    if padded_size(depths) > MAX_PADDED_NODES:
        return "padding every tree to full depth would need more than 2**26 nodes"
    return None


class PredLayout:
    """Per depth group: node arrays and per-tree info ``(node_off, leaf_off, group, column)``."""

    def __init__(self, trees, tree_group, t0, t1, pad="auto"):
        """pad: 'own' (each tree to its own depth, one pass per depth), 'max' (every tree to
        the deepest; one pass) or 'auto' ('max' unless it adds over 25% more steps)."""
        sel = list(range(t0, t1))
        own = {t: trees[t].depth() for t in sel}
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
        bits, nb = [], 0
        self.const_trees = []
        for D in sorted(depths):
            ts = depths[D]
            if D == 0:
                for t in ts:
                    self.const_trees.append((int(tree_group[t]), t - t0, float(trees[t].value[0])))
                continue
            NI, NL = (1 << D) - 1, 1 << D
            feat = np.zeros(NI * len(ts), np.int32)
            thr = np.zeros(NI * len(ts), np.float64)  # dummy splits: feature 0, threshold 0
            flags = np.zeros(NI * len(ts), np.uint8)
            catoff = np.zeros(NI * len(ts), np.int64)
            leafval = np.zeros(NL * len(ts), np.float64)
            leafid = np.zeros(NL * len(ts), np.int32)
            info = np.zeros((len(ts), 4), np.int64)
            for k, t in enumerate(ts):
                tr = trees[t]
                nb_off, lb_off = k * NI, k * NL
                info[k] = (nb_off, lb_off, int(tree_group[t]), t - t0)
                # (padded index, node id, level)
                stack = [(0, 0, 0)]
                while stack:
                    p, node, lvl = stack.pop()
                    if lvl == D:
                        leafval[lb_off + p - NI] = tr.value[node]
                        leafid[lb_off + p - NI] = node
                        continue
                    if tr.feature[node] >= 0:
                        j = nb_off + p
                        feat[j] = tr.feature[node]
                        thr[j] = tr.threshold[node]
                        c = bool(tr.is_categorical[node])
                        flags[j] = int(bool(tr.default_left[node])) | (int(c) << 1)
                        catoff[j] = tr.cat_offset[node] + nb if c else 0
                        stack.append((2 * p + 1, int(tr.left[node]), lvl + 1))
                        stack.append((2 * p + 2, int(tr.right[node]), lvl + 1))
                    else:  # dummy split: both halves reach this leaf
                        stack.append((2 * p + 1, node, lvl + 1))
                        stack.append((2 * p + 2, node, lvl + 1))
                bits.append(tr.cat_bitsets)
                nb += tr.cat_bitsets.size
            self.groups.append({"D": D, "feat": feat, "thr64": thr,
                                "thr32": _floor32(thr), "flags": flags, "catoff": catoff,
                                "leafval": leafval, "leafid": leafid, "info": info})
        self.bitsets = np.concatenate(bits).astype(np.uint32) if nb else np.zeros(1, np.uint32)


def _floor32(t):
    s = t.astype(np.float32)
    over = s.astype(np.float64) > t
    s[over] = np.nextafter(s[over], np.float32(-np.inf))
    return s


# -- generated kernels -------------------------------------------------------------------------
_HEADER = '''"""Generated by hardwood.predict.pred: D={D}, V={V}, categorical={CAT}. Do not edit."""
import numpy as np
from numba import njit, prange
from hardwood.predict.struct import cat_left
'''


def _step(lane, D, cat, x_expr, indent, base="nb"):
    out = []
    for lvl in range(D):
        i = f"i{lane}"
        out.append(f"j = {base} + {i}")
        out.append(f"v = {x_expr}[feat[j]]")
        if cat:
            out.append("if flags[j] & 2:")
            out.append(f"    {i} = 2 * {i} + 2 - np.int64(cat_left(v, catoff[j], feat[j], bits, "
                       "ncat, (flags[j] & 1) != 0))")
            out.append("else:")
            out.append(f"    {i} = 2 * {i} + 2 - np.int64((v <= thr[j]) | ((v != v) & "
                       "((flags[j] & 1) != 0)))")
        else:
            out.append(f"{i} = 2 * {i} + 2 - np.int64((v <= thr[j]) | ((v != v) & "
                       "((flags[j] & 1) != 0)))")
    return [indent + s for s in out]


def _kernel_source(D, V, cat):
    NI = (1 << D) - 1
    L = []
    L.append(_HEADER.format(D=D, V=V, CAT=cat))
    args = ("X, r0, r1, feat, thr, flags, catoff, bits, ncat, info, leafval, leafid, out, lout, "
            "want_leaf")
    L.append("@njit(cache=True, nogil=True)")
    L.append(f"def rows_block({args}):")
    L.append("    for k in range(info.shape[0]):")
    L.append("        nb = info[k, 0]")
    L.append(f"        lb = info[k, 1] - {NI}")
    L.append("        g = info[k, 2]")
    L.append("        col = info[k, 3]")
    L.append("        r = r0")
    L.append(f"        while r + {V} <= r1:")
    for lane in range(V):
        L.append(f"            x{lane} = X[r + {lane}]")
        L.append(f"            i{lane} = 0")
    for lvl in range(D):  # interleave the lanes level by level
        for lane in range(V):
            L += _step(lane, 1, cat, f"x{lane}", "            ")
    L.append("            if want_leaf:")
    for lane in range(V):
        L.append(f"                lout[r + {lane}, col] = leafid[lb + i{lane}]")
    L.append("            else:")
    for lane in range(V):
        L.append(f"                out[r + {lane}, g] += leafval[lb + i{lane}]")
    L.append(f"            r += {V}")
    L.append("        while r < r1:")
    L.append("            x0 = X[r]")
    L.append("            i0 = 0")
    L += _step(0, D, cat, "x0", "            ")
    L.append("            if want_leaf:")
    L.append("                lout[r, col] = leafid[lb + i0]")
    L.append("            else:")
    L.append("                out[r, g] += leafval[lb + i0]")
    L.append("            r += 1")
    L.append("")
    # one row, V trees interleaved (the latency path)
    L.append("@njit(cache=True, nogil=True)")
    L.append(f"def one_row({args}):")
    L.append("    nt = info.shape[0]")
    L.append("    for r in range(r0, r1):")
    L.append("        x = X[r]")
    L.append("        k = 0")
    L.append(f"        while k + {V} <= nt:")
    for lane in range(V):
        L.append(f"            i{lane} = 0")
    for lvl in range(D):
        for lane in range(V):
            L += _step(lane, 1, cat, "x", "            ", base=f"info[k + {lane}, 0]")
    L.append("            if want_leaf:")
    for lane in range(V):
        L.append(f"                lout[r, info[k + {lane}, 3]] = leafid[info[k + {lane}, 1] - {NI} + i{lane}]")
    L.append("            else:")
    for lane in range(V):
        L.append(f"                out[r, info[k + {lane}, 2]] += leafval[info[k + {lane}, 1] - {NI} + i{lane}]")
    L.append(f"            k += {V}")
    L.append("        while k < nt:")
    L.append("            nb = info[k, 0]")
    L.append("            i0 = 0")
    L += _step(0, D, cat, "x", "            ")
    L.append("            if want_leaf:")
    L.append(f"                lout[r, info[k, 3]] = leafid[info[k, 1] - {NI} + i0]")
    L.append("            else:")
    L.append(f"                out[r, info[k, 2]] += leafval[info[k, 1] - {NI} + i0]")
    L.append("            k += 1")
    L.append("")
    L.append("@njit(cache=True, nogil=True, parallel=True)")
    L.append(f"def run_parallel(X, feat, thr, flags, catoff, bits, ncat, info, leafval, leafid, "
             f"out, lout, want_leaf):")
    L.append("    n = X.shape[0]")
    L.append(f"    nblk = (n + {BLOCK_ROWS - 1}) // {BLOCK_ROWS}")
    L.append("    for b in prange(nblk):")
    L.append(f"        r0 = b * {BLOCK_ROWS}")
    L.append(f"        rows_block(X, r0, min(n, r0 + {BLOCK_ROWS}), feat, thr, flags, catoff, bits, "
             "ncat, info, leafval, leafid, out, lout, want_leaf)")
    L.append("")
    L.append("@njit(cache=True, nogil=True)")
    L.append(f"def run_serial(X, feat, thr, flags, catoff, bits, ncat, info, leafval, leafid, "
             f"out, lout, want_leaf):")
    L.append("    n = X.shape[0]")
    L.append(f"    for r0 in range(0, n, {BLOCK_ROWS}):")
    L.append(f"        rows_block(X, r0, min(n, r0 + {BLOCK_ROWS}), feat, thr, flags, catoff, bits, "
             "ncat, info, leafval, leafid, out, lout, want_leaf)")
    L.append("")
    return "\n".join(L) + "\n"


def kernels(D, V, cat):
    return load_source(f"vpred_d{D}_v{V}_{'c' if cat else 'n'}", _kernel_source(D, V, bool(cat)))
