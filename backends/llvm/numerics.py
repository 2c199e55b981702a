"""Element types in LLVM: how each ISA dtype is stored, computed and converted.

Storage follows numpy's bytes exactly (tiles and globals share memory with numpy arrays):
f16 -> ``half``, bf16 -> ``bfloat``, the fp8 formats and i1 masks -> one byte. Arithmetic on
every float dtype happens in ``float`` (f32), rounding once on the way back to storage, as the
numerics contract says; integers compute in their own width and wrap.

Float scalars are carried as ``float`` values already rounded to their type, so scalar ops
and tile-scalar instructions see the same numbers the reference does.
"""
from __future__ import annotations

from llvmlite import ir

from ...isa import dtypes as dt

F32 = ir.FloatType()
F64 = ir.DoubleType()
F16 = ir.HalfType()
I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
PTR = ir.PointerType()

_INT = {8: I8, 16: I16, 32: I32, 64: I64}


def storage(d: dt.DType) -> ir.Type:
    """The LLVM type of one element in memory (numpy's layout; bf16 as i16 bits)."""
    if d.name == "f32":
        return F32
    if d.name == "f16":
        return F16
    return _INT[d.itemsize * 8]


def compute(d: dt.DType) -> ir.Type:
    """The LLVM type instructions compute in: f32 for every float, i1 for masks, else the int."""
    if d.is_float:
        return F32
    if d.kind == "bool":
        return I1
    return _INT[max(d.bits, 8)]        # i4 computes as its sign-extended i8 value


def is_fp8(d: dt.DType) -> bool:
    return d.is_float and d.bits == 8


def scalar_type(name: str) -> ir.Type:
    """LLVM type of a scalar value (``index`` is i64; floats are carried in f32)."""
    if name == "index":
        return I64
    d = dt.BY_NAME[name]
    return compute(d)


def load(b: ir.IRBuilder, d: dt.DType, raw: ir.Value) -> ir.Value:
    """A stored element -> its compute value."""
    if d.is_int and d.bits < 8:        # i4: the low nibble, sign-extended
        shift = ir.Constant(I8, 8 - d.bits)
        return b.ashr(b.shl(raw, shift), shift)
    if d.name == "f32" or d.is_int:
        return raw
    if d.name == "f16":
        return b.fpext(raw, F32)
    if d.name == "bf16":
        return b.bitcast(b.shl(b.zext(raw, I32), ir.Constant(I32, 16)), F32)
    if d.kind == "bool":
        return b.icmp_unsigned("!=", raw, ir.Constant(I8, 0))
    from . import fp8
    return fp8.decode(b, d, raw)


def store(b: ir.IRBuilder, d: dt.DType, value: ir.Value) -> ir.Value:
    """A compute value -> the element to store (floats round to nearest even, once)."""
    if d.is_int and d.bits < 8:        # i4: the low nibble (wraps modulo 16), high bits zero
        return b.and_(value, ir.Constant(I8, (1 << d.bits) - 1))
    if d.name == "f32" or d.is_int:
        return value
    if d.name == "f16":
        return b.fptrunc(value, F16)
    if d.name == "bf16":
        return bf16_round(b, value)
    if d.kind == "bool":
        return b.zext(value, I8)
    from . import fp8
    return fp8.encode(b, d, value)


def bf16_round(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """f32 -> bf16 bits, round to nearest even (subnormals kept, NaN -> the quiet NaN with its sign, as ml_dtypes). llvmlite
    has no ``bfloat`` type, so the bits are computed in integers, which vectorise well."""
    bits = b.bitcast(value, I32)
    lsb = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = b.lshr(b.add(bits, b.add(lsb, ir.Constant(I32, 0x7FFF))), ir.Constant(I32, 16))
    quiet = b.or_(b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 0x8000)),
                  ir.Constant(I32, 0x7FC0))   # ml_dtypes' NaN: sign kept, payload dropped
    is_nan = b.fcmp_unordered("uno", value, value)
    return b.trunc(b.select(is_nan, quiet, rounded), I16)


def round_to(b: ir.IRBuilder, d: dt.DType, value: ir.Value) -> ir.Value:
    """An f32 value rounded to float dtype ``d`` and widened back (a scalar of that type)."""
    if d.name == "f32":
        return value
    return load(b, d, store(b, d, value))


def signed(d: dt.DType) -> bool:
    return d.kind == "int"
