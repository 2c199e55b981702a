"""Element and scalar types in the generated CUDA C++: storage, compute type, conversions.

Storage follows numpy's bytes (tiles and globals share memory with numpy / CuPy arrays): f16
and bf16 are ``uint16_t`` bits, masks one byte. Every float dtype computes in ``float`` and
rounds once on the way back to storage; integers compute in their own type and wrap (the
header's ``pto_i*`` helpers). Float scalars are carried as ``float`` already rounded to their
type, as the llvm backend carries them.
"""
from __future__ import annotations

from ...isa import dtypes as dt
from ...isa.types import ScalarType

#: dtypes this backend stores and computes; anything else is refused when compiling
SUPPORTED: frozenset[str] = frozenset(("f32", "f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32",
                                       "i64", "u64", "i1"))

_STORAGE = {"f32": "float", "f16": "uint16_t", "bf16": "uint16_t", "i1": "uint8_t",
            "i8": "int8_t", "u8": "uint8_t", "i16": "int16_t", "u16": "uint16_t",
            "i32": "int32_t", "u32": "uint32_t", "i64": "int64_t", "u64": "uint64_t"}


def storage(d: dt.DType) -> str:
    """The C type of one element in memory."""
    return _STORAGE[d.name]


def compute(d: dt.DType) -> str:
    """The C type instructions compute in: float for every float dtype, bool for masks."""
    if d.is_float:
        return "float"
    if d.kind == "bool":
        return "bool"
    return _STORAGE[d.name]


def scalar(t: ScalarType) -> str:
    """The C type of a scalar value (``index`` is int64_t)."""
    if t.name == "index":
        return "int64_t"
    return compute(t.dtype)


def load(d: dt.DType, raw: str) -> str:
    """A stored element (C expression) as its compute value."""
    if d.name == "f16":
        return f"pto_h2f({raw})"
    if d.name == "bf16":
        return f"pto_bf2f({raw})"
    if d.kind == "bool":
        return f"({raw} != 0)"
    return raw


def store(d: dt.DType, value: str) -> str:
    """A compute value (C expression) as the element to store, rounded once."""
    if d.name == "f16":
        return f"pto_f2h({value})"
    if d.name == "bf16":
        return f"pto_f2bf({value})"
    if d.kind == "bool":
        return f"(uint8_t)({value})"
    return value


def round_to(d: dt.DType, value: str) -> str:
    """An f32 value rounded to float dtype ``d`` and widened back."""
    if d.name == "f32":
        return value
    return load(d, store(d, value))


def is_signed(t: ScalarType) -> bool:
    return t.name == "index" or t.dtype.kind == "int"


def literal(value: object, t: ScalarType) -> str:
    """A constant of scalar type ``t`` as C source (the reference's conversion first)."""
    from ..reference.scalars import convert
    v = convert(value, t)
    if t.name == "i1":
        return "true" if bool(v) else "false"
    if t.is_float:
        return float_literal(float(v))
    n = int(v)
    ty = scalar(t)
    if ty == "int64_t" and n == -(1 << 63):
        return "(int64_t)(-0x7fffffffffffffffLL - 1)"
    if ty == "uint64_t":
        return f"(uint64_t){n}ULL"
    return f"({ty}){n}LL"


def float_literal(v: float) -> str:
    """An exact f32 literal (hex float), NaN and infinities through their bits."""
    import math
    import struct
    if math.isnan(v) or math.isinf(v):
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        return f"pto_u2f(0x{bits:08x}u)"
    return f"{float(struct.unpack('<f', struct.pack('<f', v))[0]).hex()}f"
