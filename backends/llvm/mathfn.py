"""Transcendental functions on f32 compute values, written so loops over them vectorise.

The spec bounds TEXP / TLOG (and the EXPDIF forms) to 2 ulp of the correctly rounded result
with exact special values. Both functions are straight-line IR (no calls; ``llvm.rint`` and
``llvm.fmuladd`` lower to single vector instructions, the clamps are selects). ``exp`` works
in f32 (16 lanes per AVX-512 vector; at most 1 ulp from the correctly rounded result over
every f32 input, see
``benchmarks/exp_accuracy.py``) because softmax-like kernels are bound by it. ``log`` widens to
f64, where range reduction and a short polynomial are accurate to about 1e-13 relative, and
rounds once to f32 (0 ulp over every input: correctly rounded in practice).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from llvmlite import ir

from . import numerics as N

if TYPE_CHECKING:
    from .codegen import KernelCodegen

_F32, _F64, _I32, _I64 = N.F32, N.F64, N.I32, N.I64
_LN2_HI = 0.6931471803691238      # ln 2 with its low 32 bits cleared: n * _LN2_HI is exact
_LN2_LO = math.log(2.0) - _LN2_HI  # (the rest, as a double)
_INV_LN2 = 1.0 / math.log(2.0)


def _d(v: float) -> ir.Constant:
    return ir.Constant(_F64, v)


def _poly(b: ir.IRBuilder, x: ir.Value, coeffs: list[float]) -> ir.Value:
    """coeffs[0] + coeffs[1] x + ... by Horner's rule."""
    acc = _d(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = b.fadd(b.fmul(acc, x), _d(c))
    return acc


# exp: x = n ln2 + r with |r| <= ln2/2 (Cody-Waite: n * _EXP_LN2_HI is exact in f32), then
# e**r = 1 + r + r**2 q(r) with q a degree-4 fit of (e**r - 1 - r) / r**2 at Chebyshev nodes
# (approximation error 1.1e-8 relative, 0.2 ulp), evaluated in f32 with fused multiply-adds.
_EXP_LN2_HI = 0.693359375                   # 9 significant bits: n * hi exact for |n| < 2**15
_EXP_LN2_LO = math.log(2.0) - _EXP_LN2_HI
_EXP_Q = [0.5000000013462214, 0.1666657700316029, 0.041666464976140724,
          0.00836317556546637, 0.0013933643521609437]


def _f(v: float) -> ir.Constant:
    return ir.Constant(_F32, v)


def _pow2(b: ir.IRBuilder, k: ir.Value) -> ir.Value:
    """2**k as an f32 for an i32 ``k`` in [-126, 127]."""
    return b.bitcast(b.shl(b.add(k, ir.Constant(_I32, 127)), ir.Constant(_I32, 23)), _F32)


def exp(cg: "KernelCodegen", x: ir.Value) -> ir.Value:
    """e**x for an f32 ``x`` in f32 arithmetic (16 lanes per AVX-512 vector): at most 1 ulp
    from the correctly rounded result (so under 1.5 ulp from e**x itself) over every f32
    input, ``benchmarks/exp_accuracy.py``; that holds with the multiply-adds fused (hosts with
    FMA) and, checked on every third input, unfused. exp(-inf) = 0, exp(+inf) = +inf,
    NaN -> NaN, overflow -> +inf, underflow -> subnormals then +0."""
    b = cg.b

    def fma(p: ir.Value, q: ir.Value, r: ir.Value) -> ir.Value:
        return cg.intrinsic("llvm.fmuladd.f32", _F32, [p, q, r])

    # clamp (NaN compares false and is restored below): below -104 the result rounds to +0,
    # above 89 to +inf, and the clamped values still give exactly those
    xc = b.select(b.fcmp_ordered(">", x, _f(89.0)), _f(89.0), x)
    xc = b.select(b.fcmp_ordered("<", xc, _f(-104.0)), _f(-104.0), xc)
    xc = b.select(b.fcmp_unordered("uno", xc, xc), _f(0.0), xc)
    n = cg.intrinsic("llvm.rint.f32", _F32, [b.fmul(xc, _f(_INV_LN2))])
    r = fma(n, _f(-_EXP_LN2_LO), fma(n, _f(-_EXP_LN2_HI), xc))
    q = _f(_EXP_Q[-1])
    for c in reversed(_EXP_Q[:-1]):
        q = fma(q, r, _f(c))
    p = b.fadd(fma(b.fmul(r, r), q, r), _f(1.0))
    # scale by 2**n in two halves so n in [-150, 128] needs no special case: the first
    # product is exact; only a subnormal result is rounded again, by the second
    ni = b.fptosi(n, _I32)
    half = b.ashr(ni, ir.Constant(_I32, 1))
    y = b.fmul(b.fmul(p, _pow2(b, half)), _pow2(b, b.sub(ni, half)))
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


def log(cg: "KernelCodegen", x: ir.Value) -> ir.Value:
    """ln x for an f32 ``x``: log(+-0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, NaN -> NaN."""
    b = cg.b
    xd = b.fpext(x, _F64)        # f32 subnormals are normal doubles
    bits = b.bitcast(xd, _I64)
    # x = m * 2**e with m in [sqrt(1/2), sqrt(2)): shift the mantissa so the split happens there
    e = b.ashr(b.sub(bits, ir.Constant(_I64, 0x3FE6A09E667F3BCD)), ir.Constant(_I64, 52))
    mbits = b.sub(bits, b.shl(e, ir.Constant(_I64, 52)))
    m = b.bitcast(mbits, _F64)
    f = b.fdiv(b.fsub(m, _d(1.0)), b.fadd(m, _d(1.0)))   # |f| <= 0.1716
    s = b.fmul(f, f)
    p = _poly(b, s, [2.0 / (2 * k + 1) for k in range(9)])
    lm = b.fmul(f, p)
    ed = b.sitofp(b.trunc(e, _I32), _F64)
    y = b.fadd(b.fmul(ed, _d(_LN2_HI)), b.fadd(b.fmul(ed, _d(_LN2_LO)), lm))
    y = b.fptrunc(y, _F32)
    inf = ir.Constant(_F32, math.inf)
    y = b.select(b.fcmp_ordered("==", x, inf), inf, y)
    y = b.select(b.fcmp_ordered("==", x, ir.Constant(_F32, 0.0)), ir.Constant(_F32, -math.inf), y)
    bad = b.fcmp_unordered("ult", x, ir.Constant(_F32, 0.0))     # x < 0 or NaN
    return b.select(bad, ir.Constant(_F32, math.nan), y)
