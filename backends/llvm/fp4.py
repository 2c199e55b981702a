"""The 4-bit floats (float4_e2m1x2, float4_e1m2x2) in LLVM, bit-exact with ``isa/fp4.py``.

An element is one i8 holding its code in the low nibble (the reference's storage). Both
directions are straight-line selects and compares over the eight magnitudes, so loops over fp4
tiles vectorise: decode picks the magnitude by the low three bits and applies the sign;
encode counts the midpoints the magnitude passes (a tie steps up only onto an even code, which
is round to nearest even), saturates at code 7, writes NaN as 0 and keeps the sign of zero.
"""
from __future__ import annotations

from llvmlite import ir

from ...isa import fp4

_I8, _I32, _F32 = ir.IntType(8), ir.IntType(32), ir.FloatType()

FORMATS = {f.name: f for f in (fp4.E2M1, fp4.E1M2)}


def decode(b: ir.IRBuilder, name: str, raw: ir.Value) -> ir.Value:
    """fp4 code (i8, low nibble) -> its f32 value (exact; code 8 is -0)."""
    f = FORMATS[name]
    field = b.and_(raw, ir.Constant(_I8, 7))
    mag = ir.Constant(_F32, 0.0)
    for code, value in enumerate(f.magnitudes.tolist()):
        if code:
            mag = b.select(b.icmp_unsigned("==", field, ir.Constant(_I8, code)), ir.Constant(_F32, value), mag)
    neg = b.icmp_unsigned("!=", b.and_(raw, ir.Constant(_I8, 8)), ir.Constant(_I8, 0))
    return b.select(neg, b.fneg(mag), mag)


def encode(b: ir.IRBuilder, name: str, value: ir.Value) -> ir.Value:
    """f32 -> fp4 code (i8): nearest, ties to the even code; beyond max (inf too) saturates;
    NaN gives 0; -0 gives 8."""
    f = FORMATS[name]
    mag = b.call(b.module.declare_intrinsic("llvm.fabs", [_F32]), [value])
    table = f.magnitudes.tolist()
    code = ir.Constant(_I8, 0)
    for i in range(7):
        mid = ir.Constant(_F32, (table[i] + table[i + 1]) / 2)
        past = b.fcmp_ordered(">=" if (i + 1) % 2 == 0 else ">", mag, mid)   # false for NaN
        code = b.add(code, b.zext(past, _I8))
    sign = b.icmp_signed("<", b.bitcast(value, _I32), ir.Constant(_I32, 0))
    sign = b.and_(sign, b.fcmp_ordered("==", value, value))                 # NaN: no sign
    return b.or_(code, b.select(sign, ir.Constant(_I8, 8), ir.Constant(_I8, 0)))
