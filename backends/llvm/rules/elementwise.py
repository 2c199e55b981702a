"""llvm lowering rules: elementwise tile-tile instructions (fusable map rules).

Each instruction is one entry of a table: a function of the compute values (f32 for every
float dtype, the integer in its own width, i1 masks) that dispatches on the dtype the
reference computes in (the first source's), so every rule is a ``MapRule`` and consecutive
ones fuse into one vectorisable loop; TSEL reads and writes stored bits (``raw``) so that it
copies NaN payloads exactly and still fuses. The ``op_*`` helpers are shared with the tile-scalar
family, which applies the same arithmetic with a scalar operand.
"""
from __future__ import annotations

from typing import Any, Callable

from llvmlite import ir

from ....assembler.ir import TileOp
from ....isa import dtypes as dt
from ....isa.attrs import CmpMode
from .. import mathfn
from .. import numerics as N
from ...maprules import Access, BIN, MASK, MapRule, TRI, UN
from ..codegen import KernelCodegen
from ..scalars import int_div, shift

F32 = N.F32
Fn = Callable[[KernelCodegen, TileOp, list[ir.Value]], ir.Value]
# an op on compute values: (cg, dtype the reference computes in, operands) -> result
Op = Callable[[KernelCodegen, dt.DType, list[ir.Value]], ir.Value]


def dtype_of(op: TileOp, name: str) -> dt.DType:
    """The dtype of operand ``name`` (a tile or a scalar) of ``op``."""
    t = op.args[name].type   # type: ignore[union-attr]
    return t.dtype


def _fzero(cg: KernelCodegen) -> ir.Constant:
    return ir.Constant(F32, 0.0)


def _signed(d: dt.DType) -> bool:
    return d.kind == "int"


def _int_const(v: ir.Value, n: int) -> ir.Constant:
    return ir.Constant(v.type, n)


# --------------------------------------------------------------------------- arithmetic

def op_add(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return cg.b.fadd(v[0], v[1]) if d.is_float else cg.b.add(v[0], v[1])


def op_sub(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return cg.b.fsub(v[0], v[1]) if d.is_float else cg.b.sub(v[0], v[1])


def op_mul(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return cg.b.fmul(v[0], v[1]) if d.is_float else cg.b.mul(v[0], v[1])


def op_div(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    """IEEE division for floats; integers truncate, x / 0 = -1, MIN / -1 = MIN."""
    return cg.b.fdiv(v[0], v[1]) if d.is_float else int_div(cg.b, v[0], v[1], _signed(d))


def _pick_first(cg: KernelCodegen, a: ir.Value, c: ir.Value, want_max: bool) -> ir.Value:
    """Whether IEEE 754-2019 maximum/minimum of (a, c) is ``a``, as numpy picks it: a NaN
    ``a`` wins, then a NaN ``c``; ties between zeros go by sign (-0 < +0). Written as a
    selection, not an arithmetic op, so the chosen operand keeps its bits (NaN payloads)."""
    b = cg.b
    neg = b.icmp_signed("<", b.bitcast(a, N.I32), ir.Constant(N.I32, 0))
    tie = b.and_(b.fcmp_ordered("==", a, c), neg if not want_max else b.not_(neg))
    better = b.fcmp_ordered(">" if want_max else "<", a, c)
    return b.or_(b.fcmp_unordered("uno", a, a), b.or_(better, tie))


def op_min(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    """IEEE 754-2019 minimum (NaN propagates, -0 < +0); integers by their signedness."""
    if d.is_float:
        return cg.b.select(_pick_first(cg, v[0], v[1], False), v[0], v[1])
    cmp = cg.b.icmp_signed if _signed(d) else cg.b.icmp_unsigned
    return cg.b.select(cmp("<", v[0], v[1]), v[0], v[1])


def op_max(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    """IEEE 754-2019 maximum (NaN propagates, +0 > -0); integers by their signedness."""
    if d.is_float:
        return cg.b.select(_pick_first(cg, v[0], v[1], True), v[0], v[1])
    cmp = cg.b.icmp_signed if _signed(d) else cg.b.icmp_unsigned
    return cg.b.select(cmp(">", v[0], v[1]), v[0], v[1])


def op_and(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return cg.b.and_(v[0], v[1])


def op_or(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return cg.b.or_(v[0], v[1])


def op_xor(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return cg.b.xor(v[0], v[1])


def op_shl(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    """Count read unsigned; a count >= the width gives 0."""
    return shift(cg.b, v[0], v[1], "shl")


def op_shr(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    """Arithmetic for signed, logical for unsigned; over-wide counts shift everything out."""
    return shift(cg.b, v[0], v[1], "ashr" if _signed(d) else "lshr")


def op_fmod(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    """Truncated remainder (C fmod / %); integers: x rem 0 = x."""
    if d.is_float:
        return cg.b.frem(v[0], v[1])
    return int_div(cg.b, v[0], v[1], _signed(d), "rem")


def op_rem(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    """Floored remainder with the divisor's sign, exactly as numpy's ``remainder``: fmod,
    then add the divisor when the signs differ; a zero result takes the divisor's sign."""
    b = cg.b
    a, c = v
    if d.is_float:
        mod = b.frem(a, c)
        zero = _fzero(cg)
        nonzero = b.fcmp_unordered("!=", mod, zero)                  # NaN counts as non-zero
        differ = b.xor(b.fcmp_ordered("<", c, zero), b.fcmp_ordered("<", mod, zero))
        signed_zero = cg.intrinsic("llvm.copysign.f32", F32, [zero, c])
        adjusted = b.select(differ, b.fadd(mod, c), mod)
        return b.select(nonzero, adjusted, signed_zero)
    r = int_div(b, a, c, _signed(d), "rem")
    if not _signed(d):
        return r
    zero = _int_const(r, 0)
    differ = b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", c, zero))
    return b.select(b.and_(b.icmp_signed("!=", r, zero), differ), b.add(r, c), r)


# --------------------------------------------------------------------------- unary

def op_not(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return cg.b.xor(v[0], _int_const(v[0], -1))


def op_abs(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    """|x|; abs(MIN) = MIN for integers (wraps)."""
    if d.is_float:
        return cg.intrinsic("llvm.fabs.f32", F32, v)
    b = cg.b
    return b.select(b.icmp_signed("<", v[0], _int_const(v[0], 0)), b.neg(v[0]), v[0])


def op_neg(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return cg.b.fneg(v[0]) if d.is_float else cg.b.neg(v[0])


def op_exp(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return mathfn.exp(cg, v[0])


def op_log(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return mathfn.log(cg, v[0])


def op_sqrt(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return cg.intrinsic("llvm.sqrt.f32", F32, v)


def op_rsqrt(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    """1 / sqrt(x): two correctly rounded f32 steps, within the 2 ulp contract."""
    return cg.b.fdiv(ir.Constant(F32, 1.0), op_sqrt(cg, d, v))


def op_recip(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    """1 / x as TDIVS divides it: IEEE for floats; integers truncate, 1 / 0 = -1."""
    if d.is_float:
        return cg.b.fdiv(ir.Constant(F32, 1.0), v[0])
    return int_div(cg.b, _int_const(v[0], 1), v[0], _signed(d))


def op_relu(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    """x if x > 0; NaN stays NaN; everything else (-0 included) gives +0."""
    b, x = cg.b, v[0]
    if d.is_float:
        keep = b.fcmp_unordered(">", x, _fzero(cg))                  # x > 0 or NaN
        return b.select(keep, x, _fzero(cg))
    zero = _int_const(x, 0)
    return b.select(b.icmp_signed(">", x, zero), x, zero)


def op_leaky(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    """x if x > 0 else x * slope (TPRELU, TLRELU)."""
    b, x, s = cg.b, v[0], v[1]
    return b.select(b.fcmp_ordered(">", x, _fzero(cg)), x, b.fmul(x, s))


def op_addc(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return op_add(cg, d, [op_add(cg, d, v[:2]), v[2]])


def op_subc(cg: KernelCodegen, d: dt.DType, v: list[ir.Value]) -> ir.Value:
    return op_add(cg, d, [op_sub(cg, d, v[:2]), v[2]])


# --------------------------------------------------------------------------- compare / select

_FCMP = {CmpMode.EQ: "==", CmpMode.NE: "!=", CmpMode.LT: "<", CmpMode.LE: "<=",
         CmpMode.GT: ">", CmpMode.GE: ">="}


def compare(cg: KernelCodegen, d: dt.DType, mode: CmpMode, a: ir.Value, c: ir.Value) -> ir.Value:
    """IEEE comparison (NaN: only NE holds; -0 == +0); integers by their signedness."""
    b, rel = cg.b, _FCMP[mode]
    if d.is_float:
        return b.fcmp_unordered(rel, a, c) if mode is CmpMode.NE else b.fcmp_ordered(rel, a, c)
    return (b.icmp_signed if _signed(d) else b.icmp_unsigned)(rel, a, c)


def _tcmp(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    return compare(cg, dtype_of(op, "src0"), cg.attrs(op)["cmpMode"], v[0], v[1])


def op_select(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    """mask ? a : b on stored bits (NaN payloads and -0 kept): a raw-result map rule."""
    return cg.b.select(v[0], v[1], v[2])




# --------------------------------------------------------------------------- the table

def on_first_source(fn: Op, first: str) -> Fn:
    """A map-rule function computing ``fn`` in the dtype of operand ``first``."""
    return lambda cg, op, v: fn(cg, dtype_of(op, first), v)



_TABLE: dict[str, tuple[tuple[Access, ...], Op]] = {
    "TADD": (BIN, op_add), "TSUB": (BIN, op_sub), "TMUL": (BIN, op_mul), "TDIV": (BIN, op_div),
    "TMIN": (BIN, op_min), "TMAX": (BIN, op_max),
    "TAND": (BIN, op_and), "TOR": (BIN, op_or), "TXOR": (BIN, op_xor),
    "TSHL": (BIN, op_shl), "TSHR": (BIN, op_shr),
    "TREM": (BIN, op_rem), "TFMOD": (BIN, op_fmod), "TPRELU": (BIN, op_leaky),
    "TNOT": (UN, op_not), "TABS": (UN, op_abs), "TNEG": (UN, op_neg),
    "TEXP": (UN, op_exp), "TLOG": (UN, op_log), "TSQRT": (UN, op_sqrt), "TRSQRT": (UN, op_rsqrt),
    "TRECIP": (UN, op_recip), "TRELU": (UN, op_relu),
    "TADDC": (TRI, op_addc), "TSUBC": (TRI, op_subc),
}

RULES: dict[str, Any] = {
    name: MapRule(reads, on_first_source(fn, reads[0].operand)) for name, (reads, fn) in _TABLE.items()
}
RULES["TCMP"] = MapRule(BIN, _tcmp)
RULES["TSEL"] = MapRule((MASK, Access("src0", "elem", "src0", raw=True),
                         Access("src1", "elem", "src1", raw=True)), op_select, raw_result=True)
