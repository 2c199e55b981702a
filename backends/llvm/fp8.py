"""The fp8 formats (ml_dtypes ``float8_e4m3fn`` and ``float8_e5m2``) in LLVM, bit-exact with
ml_dtypes' ``astype``.

Both directions are straight-line integer/float code without calls or tables, so loops over
fp8 tiles vectorise:

* decode: e5m2 is the upper byte of an f16, so it widens through ``half``; e4m3's magnitude
  bits are placed in an f16 (exponent bias 15 instead of 7) and scaled by 2**8, which is exact
  for normals and subnormals alike; 0x7F / 0xFF are its NaNs.
* encode: round to nearest even. Normal results round in the integers (add half an ulp minus
  one plus the lowest kept bit, shift, rebias); results below the smallest normal round with one
  f32 addition of a power of two whose ulp is the target's smallest subnormal (the FPU rounds
  to nearest even). Overflow gives inf (e5m2) or NaN (e4m3fn, which has no infinity), as
  ml_dtypes does; NaN gives the canonical quiet NaN with the input's sign (0x7E / 0x7F).
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from ...isa import dtypes as dt
from . import fp4, hif8

_I8, _I16, _I32 = ir.IntType(8), ir.IntType(16), ir.IntType(32)
_F16, _F32 = ir.HalfType(), ir.FloatType()


@dataclass(frozen=True)
class _Fmt:
    mant: int          # stored mantissa bits
    bias: int
    max_code: int      # largest finite magnitude code
    overflow: int      # magnitude code for overflow and infinities
    nan: int           # magnitude code of the quiet NaN


_FMTS = {"f8e4m3": _Fmt(3, 7, 0x7E, 0x7F, 0x7F), "f8e5m2": _Fmt(2, 15, 0x7B, 0x7C, 0x7E)}


def _c(ty: ir.Type, v: int | float) -> ir.Constant:
    return ir.Constant(ty, v)


def decode(b: ir.IRBuilder, d: dt.DType, raw: ir.Value) -> ir.Value:
    """fp8 bits (i8) -> the f32 value (exact; NaN stays NaN with its sign, e5m2 inf stays inf).
    HiFloat8 codes go to ``hif8``."""
    if d.name == "hifloat8":
        return hif8.decode(b, raw)
    if d.name in fp4.FORMATS:
        return fp4.decode(b, d.name, raw)
    bits = b.zext(raw, _I16)
    if d.name == "f8e5m2":
        return b.fpext(b.bitcast(b.shl(bits, _c(_I16, 8)), _F16), _F32)
    if d.name != "f8e4m3":
        raise KeyError(d.name)
    mag = b.and_(bits, _c(_I16, 0x7F))
    val = b.fmul(b.fpext(b.bitcast(b.shl(mag, _c(_I16, 7)), _F16), _F32), _c(_F32, 256.0))
    val = b.select(b.icmp_unsigned("==", mag, _c(_I16, 0x7F)), _c(_F32, float("nan")), val)
    ival = b.bitcast(val, _I32)
    sign = b.shl(b.zext(b.and_(bits, _c(_I16, 0x80)), _I32), _c(_I32, 24))
    return b.bitcast(b.or_(ival, sign), _F32)


def encode(b: ir.IRBuilder, d: dt.DType, value: ir.Value) -> ir.Value:
    """f32 -> fp8 bits (i8), round to nearest even, overflow and NaN as ml_dtypes (HiFloat8:
    ``hif8.encode``, ties away from zero)."""
    if d.name == "hifloat8":
        return hif8.encode(b, value)
    if d.name in fp4.FORMATS:
        return fp4.encode(b, d.name, value)
    f = _FMTS[d.name]
    shift = 23 - f.mant
    bits = b.bitcast(value, _I32)
    sign = b.trunc(b.lshr(bits, _c(_I32, 24)), _I8)
    sign = b.and_(sign, _c(_I8, 0x80))
    mag = b.and_(bits, _c(_I32, 0x7FFFFFFF))
    # normal range: integer rounding on the f32 bits, then rebias the exponent
    lsb = b.and_(b.lshr(mag, _c(_I32, shift)), _c(_I32, 1))
    rounded = b.add(mag, b.add(lsb, _c(_I32, (1 << (shift - 1)) - 1)))
    normal = b.sub(b.lshr(rounded, _c(_I32, shift)), _c(_I32, (127 - f.bias) << f.mant))
    # below the smallest normal: the FPU rounds |x| + 2**e, whose ulp is the smallest subnormal
    magic_bits = (127 - f.bias + shift + 1) << 23
    magic = b.bitcast(_c(_I32, magic_bits), _F32)
    absval = b.bitcast(mag, _F32)
    sub = b.sub(b.bitcast(b.fadd(absval, magic), _I32), _c(_I32, magic_bits))
    min_normal_bits = (127 - f.bias + 1) << 23
    code = b.select(b.icmp_unsigned("<", mag, _c(_I32, min_normal_bits)), sub, normal)
    # overflow (and infinities): the code ran past the largest finite one
    big = b.icmp_unsigned(">", mag, _c(_I32, 0x7F7FFFFF))   # inf or NaN: normal code is garbage
    over = b.or_(big, b.icmp_unsigned(">", code, _c(_I32, f.max_code)))
    code = b.select(over, _c(_I32, f.overflow), code)
    code = b.select(b.icmp_unsigned(">", mag, _c(_I32, 0x7F800000)), _c(_I32, f.nan), code)
    return b.or_(b.trunc(code, _I8), sign)
