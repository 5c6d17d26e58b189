"""Low-level helpers for the Numba kernels: a software prefetch, a paired add, a vectorisable exp.

Row subsets of deep nodes are sparse, so the gathers of steps ① and ③ are bound by memory
latency; prefetching a few rows ahead (as XGBoost and LightGBM do in C++) hides it.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import binding as _llvm
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

# opaque pointers (LLVM >= 17 in llvmlite) mangle the intrinsic as .p0, typed ones as .p0i8
_PREFETCH = "llvm.prefetch.p0" if _llvm.llvm_version_info[0] >= 17 else "llvm.prefetch.p0i8"


@intrinsic
def prefetch(typingctx, arr, idx):
    """Hint the CPU to load ``arr[idx]`` (1-d array) into cache; no effect on results."""
    if not isinstance(arr, types.Array) or arr.ndim != 1 or not isinstance(idx, types.Integer):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _PREFETCH)
        # read access, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def add_pair(typingctx, arr, idx, a, b):
    """``arr[idx] += a; arr[idx + 1] += b`` as one two-lane vector load, add and store, with
    no negative-index fix-up (``idx`` must be in range). The histogram kernels spend most of
    their time here: 1.1 -> 0.72 ns per (g, h) update measured against two scalar adds on
    1M x 28 bins. The sums are the same as the scalar adds'."""
    if (not isinstance(arr, types.Array) or arr.ndim != 1 or arr.dtype != types.float64
            or not isinstance(idx, types.Integer)):
        return None
    sig = types.void(arr, idx, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        vty = ir.VectorType(ir.DoubleType(), 2)
        vptr = builder.bitcast(ptr, vty.as_pointer())
        pair = ir.Constant(vty, ir.Undefined)
        pair = builder.insert_element(pair, args[2], ir.Constant(ir.IntType(32), 0))
        pair = builder.insert_element(pair, args[3], ir.Constant(ir.IntType(32), 1))
        builder.store(builder.fadd(builder.load(vptr, align=8), pair), vptr, align=8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def cycles(typingctx):
    """The CPU's cycle counter (``llvm.readcyclecounter``): cheap timing inside kernels.
    ``seconds_per_cycle()`` converts it."""
    sig = types.int64()

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return sig, codegen


_SPC = None


def seconds_per_cycle() -> float:
    """Calibrated once against ``time.perf_counter``; 0 where the counter does not tick."""
    global _SPC
    if _SPC is None:
        import time

        from numba import njit

        @njit
        def _read():
            return cycles()

        _read()
        t0, c0 = time.perf_counter(), _read()
        while time.perf_counter() - t0 < 0.02:
            pass
        t1, c1 = time.perf_counter(), _read()
        _SPC = (t1 - t0) / (c1 - c0) if c1 > c0 else 0.0
    return _SPC


@intrinsic
def _pow2(typingctx, k):
    """2.0 ** k for an integer k in [-1022, 1023], built from the exponent bits."""
    if not isinstance(k, types.Integer):
        return None
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        bits = builder.shl(builder.add(args[0], ir.Constant(i64, 1023)), ir.Constant(i64, 52))
        return builder.bitcast(bits, ir.DoubleType())

    return sig, codegen


_LN2_HI = 6.93147180369123816490e-01  # ln 2 split so that k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e+00
_C = tuple(1.0 / math.factorial(i) for i in range(14))


@njit(cache=True, nogil=True, inline="always")
def exp_fast(x):
    """exp(x) with no library call, so that loops over it vectorise (``math.exp`` is a
    scalar libm call). Range reduction x = k ln2 + r, |r| <= ln2 / 2, and the Taylor series of
    exp(r) to degree 13 (truncation < 2e-16). Within about one ulp of ``math.exp`` over
    [-708, 709]; the result is clamped to that range (exp(-708) ~ 3e-308, exp(709) ~ 8e307)."""
    x = min(max(x, -708.0), 709.0)
    k = np.floor(x * _INV_LN2 + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = _C[13]
    p = p * r + _C[12]
    p = p * r + _C[11]
    p = p * r + _C[10]
    p = p * r + _C[9]
    p = p * r + _C[8]
    p = p * r + _C[7]
    p = p * r + _C[6]
    p = p * r + _C[5]
    p = p * r + _C[4]
    p = p * r + _C[3]
    p = p * r + _C[2]
    p = p * r + 1.0
    p = p * r + 1.0
    return p * _pow2(np.int64(k))


@intrinsic
def and_lanes_lt(typingctx, bv, boff, xs, xoff, th, mk, V):
    """QuickScorer's step over ``V`` rows at once (``V`` a compile-time integer)::

        for l in range(V): bv[boff + l] &= mk if th < xs[xoff + l] else ~0

    as one vector load, compare, select, and, store (a masked AND on AVX-512), with no
    negative-index fix-up (``boff + V`` and ``xoff + V`` must be in range). ``xs`` is float32 or
    float64, ``bv`` uint32 or uint64; ``th`` is cast to ``xs``'s type and ``mk`` to ``bv``'s.
    A NaN in ``xs`` fails the test. Numba's own loop does a scalar compare and a conditional
    move per lane (10 cycles per node and 8 lanes against 4.3 measured)."""
    if (not isinstance(V, types.IntegerLiteral) or not isinstance(bv, types.Array)
            or not isinstance(xs, types.Array) or bv.ndim != 1 or xs.ndim != 1
            or bv.dtype not in (types.uint32, types.uint64)
            or xs.dtype not in (types.float32, types.float64)):
        return None
    nv = V.literal_value
    sig = types.void(bv, boff, xs, xoff, th, mk, V)

    def codegen(context, builder, signature, args):
        bty, _, xty, _, thty, mkty, _ = signature.args
        b = context.make_array(bty)(context, builder, args[0])
        x = context.make_array(xty)(context, builder, args[2])
        bp = cgutils.get_item_pointer(context, builder, bty, b, [args[1]], wraparound=False)
        xp = cgutils.get_item_pointer(context, builder, xty, x, [args[3]], wraparound=False)
        fty = context.get_value_type(xty.dtype)
        ity = context.get_value_type(bty.dtype)
        vx, vb = ir.VectorType(fty, nv), ir.VectorType(ity, nv)
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), nv), [0] * nv)

        def splat(val, vty):
            one = builder.insert_element(ir.Constant(vty, ir.Undefined), val,
                                         ir.Constant(ir.IntType(32), 0))
            return builder.shuffle_vector(one, ir.Constant(vty, ir.Undefined), zeros)

        thv = splat(context.cast(builder, args[4], thty, xty.dtype), vx)
        mkv = splat(context.cast(builder, args[5], mkty, bty.dtype), vb)
        xv = builder.load(builder.bitcast(xp, vx.as_pointer()), align=xty.dtype.bitwidth // 8)
        keep = builder.select(builder.fcmp_ordered("<", thv, xv), mkv,
                              ir.Constant(vb, [(1 << ity.width) - 1] * nv))
        bptr = builder.bitcast(bp, vb.as_pointer())
        align = bty.dtype.bitwidth // 8
        builder.store(builder.and_(builder.load(bptr, align=align), keep), bptr, align=align)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def stack_row(typingctx, like, n):
    """A 1-d C array of ``n`` (a compile-time integer) items of ``like``'s dtype in the calling
    kernel's stack frame: scratch space that costs no allocation. It lives until that kernel
    returns, so it must not be returned or stored; its items start undefined."""
    if not isinstance(n, types.IntegerLiteral) or not isinstance(like, types.Array):
        return None
    N = n.literal_value
    arrty = types.Array(like.dtype, 1, "C")
    sig = arrty(like, n)

    def codegen(context, builder, signature, args):
        from numba.np.arrayobj import populate_array
        ety = context.get_data_type(arrty.dtype)
        intp = context.get_value_type(types.intp)
        ptr = cgutils.alloca_once(builder, ety, size=N)
        ary = context.make_array(arrty)(context, builder)
        size = context.get_abi_sizeof(ety)
        populate_array(ary, data=ptr, shape=[ir.Constant(intp, N)],
                       strides=[ir.Constant(intp, size)], itemsize=ir.Constant(intp, size),
                       meminfo=None)
        return ary._getvalue()

    return sig, codegen


# -- the ordered-key walk of predict.pred (issue 20) -------------------------------------------
# A float's bits, canonicalised (-0.0 -> +0.0) and mapped so that unsigned integer order is the
# float order: x <= t  <=>  order_key(x) <= order_key(t) for every non-NaN x and t. A batch
# walk compares these keys instead of the floats: the compare then reads its threshold from
# memory inside the integer compare, and its carry flag is the step's direction.
X86_64 = _llvm.get_process_triple().split("-")[0] in ("x86_64", "amd64")
if X86_64:
    _llvm.initialize_native_asmparser()  # key_lanes' inline assembly


@intrinsic
def order_key(typingctx, x):
    """The unsigned key of float ``x`` (float32 -> uint32, float64 -> uint64): ``x + 0.0``'s
    bits (so that -0.0 and +0.0 share one key), the sign bit flipped for x >= 0, every bit
    for x < 0. Keys of NaN are meaningless: test for NaN first."""
    if x not in (types.float32, types.float64):
        return None
    ut = types.uint32 if x == types.float32 else types.uint64
    sig = ut(x)

    def codegen(context, builder, signature, args):
        fty = context.get_value_type(signature.args[0])
        n = 32 if signature.args[0] == types.float32 else 64
        ity = ir.IntType(n)
        z = builder.fadd(args[0], ir.Constant(fty, 0.0))  # -0.0 + 0.0 = +0.0 (no fast-math)
        b = builder.bitcast(z, ity)
        s = builder.ashr(b, ir.Constant(ity, n - 1))
        return builder.xor(b, builder.or_(s, ir.Constant(ity, 1 << (n - 1))))

    return sig, codegen


def _data_address(context, builder, aty, arr):
    return builder.ptrtoint(context.make_array(aty)(context, builder, arr).data, ir.IntType(64))


def _key_buffer(X, n):
    raise NotImplementedError("only in compiled code")


@overload(_key_buffer)
def _key_buffer_impl(X, n):
    if X.dtype == types.float32:
        return lambda X, n: np.empty(n, np.uint32)
    return lambda X, n: np.empty(n, np.uint64)


key_buffer = _key_buffer  # an empty array of n keys for the rows of X (uint32 or uint64)


@intrinsic
def key_lanes(typingctx, tk, xq, lanes, depth):
    """The ordered-key walk of ``lanes`` rows through one heap-numbered tree of depth
    ``depth`` (both compile-time integers; root 1, the children of ``j`` at ``2j`` and
    ``2j + 1``)::

        j = 1, then depth times, for each lane:  j = 2 * j + (key[j] < xq[off[j] + lane])

    Returns the lanes' final ``j`` (the leaf ``j - 2**depth``). Two layouts of the tree's
    ``tk`` (uint64, ``2**depth`` or ``2 * 2**depth`` items, item 0 unused):

    * ``xq`` uint32 (keys of float32 rows): ``tk[j] = key | off << 32``;
    * ``xq`` uint64: ``tk[j] = key``, ``tk[2**depth + j] = off``.

    No index is checked. On x86-64 (up to 12 lanes) the whole walk is one block of assembly,
    four instructions a step (load the offset, load the row's key, compare it with the
    threshold's key in memory, ``adc j, j``), the lanes interleaved level by level and each
    lane's ``j`` in a register of its own (with the two bases and a scratch register, the 15
    general registers). From the plain code LLVM spends six to seven instructions a step (a
    ``seta`` and an ``lea`` for the ``adc``), and spilled lanes around one assembly step per
    lane. Elsewhere, or for more lanes, the plain code."""
    if (not isinstance(lanes, types.IntegerLiteral) or not isinstance(depth, types.IntegerLiteral)
            or not all(isinstance(a, types.Array) and a.ndim == 1 for a in (tk, xq))
            or tk.dtype != types.uint64 or xq.dtype not in (types.uint32, types.uint64)):
        return None
    V, D = lanes.literal_value, depth.literal_value
    rec = xq.dtype == types.uint32
    if V < 1 or D < 1:
        return None
    NL = 1 << D
    sig = types.UniTuple(types.uint64, V)(tk, xq, lanes, depth)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        tb, xb = (_data_address(context, builder, signature.args[k], args[k]) for k in (0, 1))
        if X86_64 and V <= 12:
            t, T, X = f"${V}", f"${V + 1}", f"${V + 2}"
            lines = [f"movl $$1, ${{{lane}:k}}" for lane in range(V)]
            for _ in range(D):
                for lane in range(V):
                    j = f"${lane}"
                    if rec:
                        lines += [f"movl 4({T},{j},8), ${{{V}:k}}",
                                  f"movl {4 * lane}({X},{t},4), ${{{V}:k}}",
                                  f"cmpl ${{{V}:k}}, ({T},{j},8)"]
                    else:
                        lines += [f"movq {8 * NL}({T},{j},8), {t}",
                                  f"movq {8 * lane}({X},{t},8), {t}",
                                  f"cmpq {t}, ({T},{j},8)"]
                    lines.append(f"adcq {j}, {j}")
            fty = ir.FunctionType(ir.LiteralStructType([i64] * (V + 1)), [i64, i64])
            # "memory": it reads arrays that LLVM sees only as integers (the block copy's
            # stores must stay before it)
            cons = ",".join(["=&r"] * (V + 1) + ["r", "r", "~{flags}", "~{memory}"])
            ia = ir.InlineAsm(fty, "\n\t".join(lines), cons, side_effect=False)
            res = builder.call(ia, [tb, xb])
            return context.make_tuple(builder, signature.return_type,
                                      [builder.extract_value(res, k) for k in range(V)])

        def load(base, index, width, scale, disp=0):
            addr = builder.add(base, builder.add(builder.mul(index, ir.Constant(i64, scale)),
                                                 ir.Constant(i64, disp)))
            return builder.load(builder.inttoptr(addr, ir.IntType(width).as_pointer()))

        vals = [ir.Constant(i64, 1)] * V
        for _ in range(D):
            nxt = []
            for lane, jv in enumerate(vals):
                if rec:
                    off = builder.zext(load(tb, jv, 32, 8, 4), i64)
                    key = load(tb, jv, 32, 8)
                    x = load(xb, builder.add(off, ir.Constant(i64, lane)), 32, 4)
                else:
                    off = load(tb, jv, 64, 8, 8 * NL)
                    key = load(tb, jv, 64, 8)
                    x = load(xb, builder.add(off, ir.Constant(i64, lane)), 64, 8)
                c = builder.icmp_unsigned("<", key, x)
                nxt.append(builder.add(builder.shl(jv, ir.Constant(i64, 1)),
                                       builder.zext(c, i64)))
            vals = nxt
        return context.make_tuple(builder, signature.return_type, vals)

    return sig, codegen
