"""HiFloat8 in LLVM, bit-exact with ``isa/hifloat8.py`` (which defines the codes).

* decode: a 256-entry f32 table (a module constant built from the isa's ``DECODE``); one
  indexed load per element, which vectorises as a gather.
* encode: straight-line integer code on the f32 bits. The magnitude is rounded to nearest with
  ties away from zero (the A5 conversion's rule) by adding half of the dropped part and clearing
  it, at the precision the value's exponent allows (``mantissa_bits``); the rounded value is then
  packed into the prefix / exponent / mantissa fields. Overflow past 2**15 gives ±inf (0x6F),
  NaN 0x80, zero (of either sign) 0x00.

TCVT rounds under its own roundMode first (``rules/convert.py``), so what reaches ``encode``
there is already a HiF8 value and the rounding here changes nothing.
"""
from __future__ import annotations

from llvmlite import ir

from ...isa import hifloat8 as H

_I8, _I32, _I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
_F32 = ir.FloatType()
_TABLE = "openpto.hif8.decode"


def _c(v: int) -> ir.Constant:
    return ir.Constant(_I32, v)


def _table(module: ir.Module) -> ir.GlobalVariable:
    g = module.globals.get(_TABLE)
    if g is None:
        ty = ir.ArrayType(_F32, 256)
        g = ir.GlobalVariable(module, ty, _TABLE)
        g.global_constant = True
        g.linkage = "internal"
        g.initializer = ir.Constant(ty, [float(v) for v in H.DECODE.astype("float32")])
    return g


def decode(b: ir.IRBuilder, raw: ir.Value) -> ir.Value:
    """HiF8 code (i8) -> its f32 value (exact; 0x80 is NaN, 0x6F / 0xEF are ±inf)."""
    idx = b.zext(raw, _I64)
    return b.load(b.gep(_table(b.module), [ir.Constant(_I64, 0), idx], inbounds=True), typ=_F32)


def _select_chain(b: ir.IRBuilder, cases: list[tuple[ir.Value, ir.Value]], default: ir.Value) -> ir.Value:
    """The value of the first true condition (in order), else ``default``."""
    out = default
    for cond, val in reversed(cases):
        out = b.select(cond, val, out)
    return out


def _mantissa_bits(b: ir.IRBuilder, e: ir.Value, a: ir.Value) -> ir.Value:
    """``isa.hifloat8.mantissa_bits`` for exponent e (i32) with |e| = a."""
    ule, sle = (lambda x, v: b.icmp_unsigned("<=", x, _c(v))), (lambda x, v: b.icmp_signed("<=", x, _c(v)))
    return _select_chain(b, [(sle(e, -16), _c(0)), (ule(a, 3), _c(3)), (ule(a, 7), _c(2))], _c(1))


def _abs(b: ir.IRBuilder, e: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", e, _c(0)), b.sub(_c(0), e), e)


def encode(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """f32 -> HiF8 code (i8): nearest, ties away from zero; overflow ±inf, NaN 0x80."""
    bits = b.bitcast(value, _I32)
    sign = b.and_(b.lshr(bits, _c(24)), _c(0x80))
    mag = b.and_(bits, _c(0x7FFFFFFF))
    e = b.sub(b.lshr(mag, _c(23)), _c(127))
    # round: keep m mantissa bits (all 23 - m dropped bits' half added, then cleared)
    m = _mantissa_bits(b, e, _abs(b, e))
    drop = b.sub(_c(23), m)
    half = b.shl(_c(1), b.sub(drop, _c(1)))
    keep = b.xor(b.sub(b.shl(_c(1), drop), _c(1)), _c(-1))
    rounded = b.and_(b.add(mag, half), keep)
    # below 2**-22 the grid is {0, 2**-22}: 2**-23 and up (ties away) give 2**-22
    tiny = b.icmp_signed("<", e, _c(H.MIN_EXP))
    min_bits = _c((127 + H.MIN_EXP) << 23)
    rounded = b.select(tiny, b.select(b.icmp_unsigned(">=", mag, _c((127 + H.MIN_EXP - 1) << 23)),
                                      min_bits, _c(0)), rounded)
    # pack the rounded (exact) magnitude
    er = b.sub(b.lshr(rounded, _c(23)), _c(127))
    ar = _abs(b, er)
    neg_e = b.zext(b.icmp_signed("<", er, _c(0)), _I32)
    mr = _mantissa_bits(b, er, ar)
    mant = b.and_(b.lshr(rounded, b.sub(_c(23), mr)), b.sub(b.shl(_c(1), mr), _c(1)))

    def field(base: int, lo: int, d: int) -> ir.Value:
        """prefix | ((exponent sign, |e| - lo) << mantissa bits) | mantissa, for d exponent bits."""
        ex = b.or_(b.shl(neg_e, _c(d - 1)), b.sub(ar, _c(lo)))
        return b.or_(_c(base), b.or_(b.shl(ex, mr), mant))

    ule = lambda x, v: b.icmp_unsigned("<=", x, _c(v))  # noqa: E731
    code = _select_chain(b, [
        (b.icmp_unsigned("==", rounded, _c(0)), _c(0)),
        (b.icmp_signed("<=", er, _c(-16)), b.add(er, _c(23))),                 # denormals 2**(M - 23)
        (b.icmp_unsigned("==", ar, _c(0)), b.or_(_c(0x08), mant)),
        (ule(ar, 1), b.or_(_c(0x10), b.or_(b.shl(neg_e, _c(3)), mant))),
        (ule(ar, 3), field(0x20, 2, 2)),
        (ule(ar, 7), field(0x40, 4, 3)),
    ], field(0x60, 8, 4))
    over = b.icmp_unsigned(">", rounded, _c(0x47000000))        # past 2**15 (inf included)
    code = b.select(over, _c(H.INF_CODE), code)
    code = b.select(b.icmp_unsigned("==", code, _c(0)), code, b.or_(code, sign))
    code = b.select(b.icmp_unsigned(">", mag, _c(0x7F800000)), _c(H.NAN_CODE), code)
    return b.trunc(code, _I8)
