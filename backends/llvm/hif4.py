"""HiFloat4's scalar pieces in LLVM, bit-exact with ``isa/hifloat4.py``: bf16 rounding of an f32
product, the e6m2 block exponent (integer rounding of the f32 bits to 3 significant bits) and its
bf16 reciprocal (a four-entry significand table times an exact power of two built in the
exponent field)."""
from __future__ import annotations

from llvmlite import ir

from ...isa import dtypes as dt
from ...isa import hifloat4
from . import numerics as N

_I8, _I32, _F32 = ir.IntType(8), ir.IntType(32), ir.FloatType()


def _c(v: int) -> ir.Constant:
    return ir.Constant(_I32, v)


def bf16r(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """An f32 rounded to bf16 (nearest even) and widened back to f32."""
    return N.load(b, dt.BF16, N.bf16_round(b, v))


def e6m2_encode(b: ir.IRBuilder, sf: ir.Value) -> ir.Value:
    """A non-negative f32 (bf16-exact, possibly +inf, never NaN) -> its e6m2 code (i32)."""
    bits = b.bitcast(sf, _I32)
    lsb = b.and_(b.lshr(bits, _c(21)), _c(1))
    rounded = b.and_(b.add(bits, b.add(lsb, _c(0xFFFFF))), _c(~0x1FFFFF & 0xFFFFFFFF))
    exp = b.sub(b.lshr(rounded, _c(23)), _c(127))
    mant = b.and_(b.lshr(rounded, _c(21)), _c(3))
    code = b.or_(b.shl(b.add(exp, _c(hifloat4.E6M2_BIAS)), _c(2)), mant)
    top = b.or_(b.icmp_signed(">", exp, _c(hifloat4.E6M2_MAX_EXP)), b.icmp_signed(">", code, _c(hifloat4.E6M2_TOP)))
    code = b.select(top, _c(hifloat4.E6M2_TOP), code)
    return b.select(b.icmp_signed("<", exp, _c(hifloat4.E6M2_MIN_EXP)), _c(0), code)


def e6m2_reciprocal(b: ir.IRBuilder, code: ir.Value) -> ir.Value:
    """An e6m2 code (i32) -> the bf16 reciprocal the algorithm multiplies by (f32); 0 for code 0."""
    m = b.and_(code, _c(3))
    sig = ir.Constant(_F32, hifloat4.RECIP_SIGNIFICAND[0])
    for k in (1, 2, 3):
        sig = b.select(b.icmp_unsigned("==", m, _c(k)), ir.Constant(_F32, hifloat4.RECIP_SIGNIFICAND[k]), sig)
    field = b.sub(_c(hifloat4.E6M2_BIAS + 127), b.lshr(code, _c(2)))   # 2**(48 - field) = 2**-e
    power = b.bitcast(b.shl(field, _c(23)), _F32)
    return b.select(b.icmp_unsigned("==", code, _c(0)), ir.Constant(_F32, 0.0), b.fmul(sig, power))


_I64, _F64 = ir.IntType(64), ir.DoubleType()


def element_value(b: ir.IRBuilder, code: ir.Value, ea: ir.Value, eb_byte: ir.Value, ec_byte: ir.Value,
                  octet: ir.Value, quad: ir.Value) -> ir.Value:
    """One HiF4 element's exact value (f64): E1M2(code) * e6m2(ea) * 2**(Eb + Ec), the Eb bit
    ``octet`` of ``eb_byte`` and the Ec bit ``quad`` (0..7) of ``ec_byte`` (all bytes i8, the
    positions i64). The scale is built in the f64 bit fields: exponent field + Eb + Ec, the e6m2
    mantissa as the top two fraction bits; Ea code 0 gives 0."""
    from . import fp4
    v = b.fpext(fp4.decode(b, "float4_e1m2x2", code), _F64)
    c = b.zext(ea, _I64)
    eb = b.and_(b.lshr(b.zext(eb_byte, _I64), octet), ir.Constant(_I64, 1))
    ec = b.and_(b.lshr(b.zext(ec_byte, _I64), quad), ir.Constant(_I64, 1))
    field = b.add(b.add(b.lshr(c, ir.Constant(_I64, 2)), ir.Constant(_I64, 1023 - hifloat4.E6M2_BIAS)), b.add(eb, ec))
    bits = b.or_(b.shl(field, ir.Constant(_I64, 52)), b.shl(b.and_(c, ir.Constant(_I64, 3)), ir.Constant(_I64, 50)))
    scale = b.select(b.icmp_unsigned("==", c, ir.Constant(_I64, 0)), ir.Constant(_F64, 0.0), b.bitcast(bits, _F64))
    return b.fmul(v, scale)
