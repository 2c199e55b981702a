"""llvm lowering rules: the fused family (``isa/families/fused.py``).

The multiply-adds call ``llvm.fma.f32`` (one rounding, as the spec's ``fma_f32``; a host
without FMA gets libm's correctly rounded ``fmaf``); an inout destination is simply one more
``elem`` read of the map rule, so these fuse with their neighbours. The saturating
narrowings clamp in the compute type before the store rounds. Float powers call libm ``pow``
in f64 and round to f32 (the reference's pow in f64, rounded once for f32 tiles); integer
powers are an unrolled square-and-multiply over the exponent's bits, so they vectorise.
TPAIRREDUCESUM reads two columns per result and has its own loop.
"""
from __future__ import annotations

import math
from typing import Any

from llvmlite import ir

from ....assembler.ir import TileOp
from ....isa import dtypes as dt
from .. import numerics as N
from ...maprules import Access, MapRule
from ..codegen import KernelCodegen
from . import elementwise as E

F32, F64, I64 = N.F32, N.F64, N.I64
_F16_MAX = 65504.0


def _scalar(cg: KernelCodegen, op: TileOp, name: str, v: ir.Value) -> ir.Value:
    """Scalar operand ``name`` in its dtype's compute type (floats rounded to that dtype)."""
    d = E.dtype_of(op, name)
    return N.round_to(cg.b, d, v) if d.is_float else v


def _fma(cg: KernelCodegen, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
    return cg.intrinsic("llvm.fma.f32", F32, [a, b, c])


def _elem(name: str, what: str = "") -> Access:
    return Access(name, "elem", what or name)


_TERNARY = (_elem("src0", "source 0"), _elem("src1", "source 1"), _elem("dst", "dst"))


def _fused_mul_add(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    return _fma(cg, v[0], v[2], v[1])                       # src0 * dst + src1


def _fused_mul_add_relu(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    return E.op_relu(cg, dt.F32, [_fused_mul_add(cg, op, v)])


def _mul_add_dst(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    return _fma(cg, v[0], v[1], v[2])                       # src0 * src1 + dst


def _axpy(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    return _fma(cg, _scalar(cg, op, "scalar", v[1]), v[0], v[2])      # scalar * src0 + dst


def _sub_relu(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    return E.op_relu(cg, dt.F32, [cg.b.fsub(v[0], v[1])])


# --------------------------------------------------------------------------- saturating narrowing

def _saturate(cg: KernelCodegen, d: dt.DType, x: ir.Value) -> ir.Value:
    """A non-negative (or NaN) relu result -> dst's compute value, saturating: f16 clamps finite
    values above 65504; i8 rounds to nearest even, clamps to 127, NaN -> 0."""
    b = cg.b
    if d.is_float:
        big = b.and_(b.fcmp_ordered(">", x, ir.Constant(F32, _F16_MAX)),
                     b.fcmp_ordered("!=", x, ir.Constant(F32, math.inf)))
        return b.select(big, ir.Constant(F32, _F16_MAX), x)
    ty = N.compute(d)
    top = (1 << (ty.width - 1)) - 1
    if isinstance(x.type, ir.IntType):
        return b.trunc(b.select(b.icmp_signed(">", x, ir.Constant(x.type, top)), ir.Constant(x.type, top), x), ty)
    r = cg.intrinsic("llvm.rint.f32", F32, [x])
    r = b.select(b.fcmp_ordered(">", r, ir.Constant(F32, float(top))), ir.Constant(F32, float(top)), r)
    r = b.select(b.fcmp_unordered("uno", r, r), ir.Constant(F32, 0.0), r)
    return b.fptosi(r, ty)


def _add_relu_conv(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    src = E.dtype_of(op, "src0")
    total = E.op_add(cg, src, v)
    return _saturate(cg, E.dtype_of(op, "dst"), E.op_relu(cg, src, [total]))


def _add_deq_relu(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    b = cg.b
    scaled = b.fmul(b.sitofp(b.add(v[0], v[1]), F32), v[2])   # i32 sum wraps; RNE to f32
    return _saturate(cg, dt.F16, E.op_relu(cg, dt.F32, [scaled]))


# --------------------------------------------------------------------------- powers

def _int_pow(cg: KernelCodegen, d: dt.DType, base: ir.Value, exp: ir.Value) -> ir.Value:
    """base ** exp wrapping, by square-and-multiply over every bit of the exponent; a negative
    (signed) exponent gives 1 for base 1, +-1 for base -1, else 0."""
    b = cg.b
    ty = base.type
    one, zero = ir.Constant(ty, 1), ir.Constant(ty, 0)
    result, square = one, base
    for k in range(ty.width):
        bit = b.trunc(b.lshr(exp, ir.Constant(ty, k)), N.I1)
        result = b.select(bit, b.mul(result, square), result)
        square = b.mul(square, square)
    if not N.signed(d):
        return result
    odd = b.trunc(exp, N.I1)
    minus = b.select(odd, ir.Constant(ty, -1), one)
    negative = b.select(b.icmp_signed("==", base, one), one,
                        b.select(b.icmp_signed("==", base, ir.Constant(ty, -1)), minus, zero))
    return b.select(b.icmp_signed("<", exp, zero), negative, result)


def _pow_values(cg: KernelCodegen, d: dt.DType, base: ir.Value, exp: ir.Value) -> ir.Value:
    if not d.is_float:
        return _int_pow(cg, d, base, exp)
    b = cg.b
    wide = cg.intrinsic("llvm.pow.f64", F64, [b.fpext(base, F64), b.fpext(exp, F64)])
    return b.fptrunc(wide, F32)


def _tpow(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    return _pow_values(cg, E.dtype_of(op, "base"), v[0], v[1])


def _tpows(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    return _pow_values(cg, E.dtype_of(op, "base"), v[0], _scalar(cg, op, "exp", v[1]))


# --------------------------------------------------------------------------- TPAIRREDUCESUM

def _pair_reduce_sum(cg: KernelCodegen, op: TileOp) -> None:
    """dst[i, k] = src[i, 2k] + src[i, 2k+1] (partner +0 past the row's end) for k < ceil(c/2),
    +0 for the rest of the row. Increasing k reads columns >= 2k before writing column k, so
    dst may be src itself."""
    b = cg.b
    dst, src = cg.tile(op, "dst"), cg.tile(op, "src")
    r, c = dst.vrows, dst.vcols
    cg.check_read(src, r, c, "src")
    one, two = ir.Constant(I64, 1), ir.Constant(I64, 2)
    half = b.sdiv(b.add(c, one), two)
    last = b.sub(c, one)
    zero_f = ir.Constant(F32, 0.0)
    with cg.loop(0, r, name="r") as i:
        with cg.loop(0, half, name="k") as k:
            even = b.mul(k, two)
            partner = b.add(even, one)
            inside = b.icmp_signed("<", partner, c)
            second = src.load(b, i, b.select(inside, partner, last))   # a column that is valid
            dst.store(b, i, k, b.fadd(src.load(b, i, even), b.select(inside, second, zero_f)))
        with cg.loop(half, c, name="z") as k:
            dst.store(b, i, k, zero_f)


RULES: dict[str, Any] = {
    "TFUSEDMULADD": MapRule(_TERNARY, _fused_mul_add),
    "TFUSEDMULADDRELU": MapRule(_TERNARY, _fused_mul_add_relu),
    "TMULADDDST": MapRule(_TERNARY, _mul_add_dst),
    "TAXPY": MapRule((_elem("src0", "source 0"), Access("scalar", "scalar", "scalar"), _elem("dst")), _axpy),
    "TSUBRELU": MapRule((_elem("src0", "source 0"), _elem("src1", "source 1")), _sub_relu),
    "TADDRELUCONV": MapRule((_elem("src0", "source 0"), _elem("src1", "source 1")), _add_relu_conv),
    "TADDDEQRELU": MapRule((_elem("src0", "source 0"), _elem("src1", "source 1"),
                            Access("deqScale", "scalar", "deqScale")), _add_deq_relu),
    "TPOW": MapRule((_elem("base"), _elem("exp")), _tpow),
    "TPOWS": MapRule((_elem("base"), Access("exp", "scalar", "exp")), _tpows),
    "TPAIRREDUCESUM": _pair_reduce_sum,
}
