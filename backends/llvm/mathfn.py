"""Transcendental functions on f32 compute values, written so loops over them vectorise.

The spec bounds TEXP / TLOG (and the EXPDIF forms) to 2 ulp of the correctly rounded result
with exact special values. Both functions are straight-line IR (no calls; ``llvm.rint`` lowers to one vector
instruction, the clamps are selects): the f32 argument is widened
to f64, where range reduction and a short polynomial are accurate to about 1e-13 relative, and
the result is rounded once to f32. That final rounding also gives overflow to +inf, gradual
underflow into f32 subnormals and 0 exactly as a correctly rounded function would (the error
is within 0.5 ulp plus a negligible term, far inside the 2-ulp bound).
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


def exp(cg: "KernelCodegen", x: ir.Value) -> ir.Value:
    """e**x for an f32 ``x``: exp(-inf) = 0, exp(+inf) = +inf, NaN -> NaN, overflow -> +inf,
    underflow -> subnormals then +0."""
    b = cg.b
    xd = b.fpext(x, _F64)
    # clamp (NaN compares false and is restored below): outside [-110, 90] f32 gives 0 / inf
    xc = b.select(b.fcmp_ordered(">", xd, _d(90.0)), _d(90.0), xd)
    xc = b.select(b.fcmp_ordered("<", xc, _d(-110.0)), _d(-110.0), xc)
    xc = b.select(b.fcmp_unordered("uno", xc, xc), _d(0.0), xc)
    n = cg.intrinsic("llvm.rint.f64", _F64, [b.fmul(xc, _d(_INV_LN2))])
    r = b.fsub(b.fsub(xc, b.fmul(n, _d(_LN2_HI))), b.fmul(n, _d(_LN2_LO)))   # |r| <= 0.347
    p = _poly(b, r, [1.0 / math.factorial(k) for k in range(12)])
    ni = b.fptosi(n, _I32)
    scale = b.bitcast(b.shl(b.zext(b.add(ni, ir.Constant(_I32, 1023)), _I64), ir.Constant(_I64, 52)), _F64)
    y = b.fptrunc(b.fmul(p, scale), _F32)
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
