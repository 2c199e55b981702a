"""Element types of the ISA and the groups instruction declarations use.

bf16 and the fp8 formats come from ml_dtypes; ``i1`` is the mask type (numpy bool,
one byte per element in global memory).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class DType:
    name: str
    np_dtype: np.dtype
    kind: str  # "float", "int" (signed), "uint", "bool"
    bits: int

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory (i1 takes one byte)."""
        return self.np_dtype.itemsize

    @property
    def min(self) -> int | float:
        return self._info().min if self.kind != "bool" else 0

    @property
    def max(self) -> int | float:
        return self._info().max if self.kind != "bool" else 1

    def _info(self):  # noqa: ANN202 - numpy's info objects have no common type
        if self.is_float:
            return ml_dtypes.finfo(self.np_dtype)
        return np.iinfo(self.np_dtype)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name


def _d(name: str, np_type, kind: str, bits: int) -> DType:  # noqa: ANN001
    return DType(name, np.dtype(np_type), kind, bits)


F32 = _d("f32", np.float32, "float", 32)
F16 = _d("f16", np.float16, "float", 16)
BF16 = _d("bf16", ml_dtypes.bfloat16, "float", 16)
F8E4M3 = _d("f8e4m3", ml_dtypes.float8_e4m3fn, "float", 8)
F8E5M2 = _d("f8e5m2", ml_dtypes.float8_e5m2, "float", 8)
I8 = _d("i8", np.int8, "int", 8)
U8 = _d("u8", np.uint8, "uint", 8)
I16 = _d("i16", np.int16, "int", 16)
U16 = _d("u16", np.uint16, "uint", 16)
I32 = _d("i32", np.int32, "int", 32)
U32 = _d("u32", np.uint32, "uint", 32)
I64 = _d("i64", np.int64, "int", 64)
U64 = _d("u64", np.uint64, "uint", 64)
I1 = _d("i1", np.bool_, "bool", 1)

ALL: tuple[DType, ...] = (F32, F16, BF16, F8E4M3, F8E5M2, I8, U8, I16, U16, I32, U32, I64, U64, I1)


@dataclass(frozen=True)
class CodedFloat(DType):
    """A float type numpy cannot hold, stored as its raw codes (``np_dtype`` is the code's
    unsigned integer): its values are defined by a codec module (``isa/hifloat8.py``). Such
    types stay out of ``ALL`` (whose members are told apart by their numpy dtype) and of the
    groups below; the instructions that take one name it explicitly."""

    largest: float = 0.0

    @property
    def min(self) -> float:
        return -self.largest

    @property
    def max(self) -> float:
        return self.largest


#: HiFloat8: the A5 tapered 8-bit float, uint8 codes (isa/hifloat8.py defines them)
HIF8 = CodedFloat("hifloat8", np.dtype(np.uint8), "float", 8, largest=32768.0)
@dataclass(frozen=True)
class CodedInt(DType):
    """A signed integer narrower than a byte, stored one per uint8: two's complement in the low
    ``bits`` bits, the high bits ignored when read and written as zero. Kept out of ``ALL`` and
    the integer groups like the coded floats; the instructions that take one name it."""

    @property
    def min(self) -> int:
        return -(1 << (self.bits - 1))

    @property
    def max(self) -> int:
        return (1 << (self.bits - 1)) - 1


#: int4 (the public int4b_t, scalar name s4): A2/A3 TCVT to and from f16
I4 = CodedInt("i4", np.dtype(np.uint8), "int", 4)
#: the A5 4-bit floats (isa/fp4.py): one 4-bit element per uint8 here, two per byte in memory
FP4_E2M1 = CodedFloat("float4_e2m1x2", np.dtype(np.uint8), "float", 4, largest=6.0)
FP4_E1M2 = CodedFloat("float4_e1m2x2", np.dtype(np.uint8), "float", 4, largest=1.75)
FP4 = (FP4_E2M1, FP4_E1M2)


@dataclass(frozen=True)
class ExponentFloat(CodedFloat):
    """A float that is a bare biased exponent (E8M0): code e is 2**(e - bias), the all-ones code
    NaN; no sign, no zero, no infinity. Stored as its uint8 codes, like the other coded floats."""

    bias: int = 127

    @property
    def is_signed(self) -> bool:
        return False

    @property
    def min(self) -> float:
        return 2.0 ** -self.bias


#: the public float8_e8m0_t (ml_dtypes float8_e8m0fnu): the MX block scale, 2**(e - 127), 0xFF NaN;
#: the same bits as the u8 scale codes openpto took first (decision 'float8_e8m0 scales')
E8M0 = ExponentFloat("f8e8m0", np.dtype(np.uint8), "float", 8, largest=2.0 ** 127)
#: element types an MX scale tile may have: u8 codes or e8m0, the same bits
SCALE_CODES: tuple[DType, ...] = (U8, E8M0)
#: coded types TCVT converts (cpu: to and from each arithmetic float); E8M0 is not among them
CONVERTIBLE_CODED: tuple[DType, ...] = (HIF8,) + FP4 + (I4,)
CODED: tuple[DType, ...] = CONVERTIBLE_CODED + (E8M0,)
#: coded types the bit-moving instructions (TLOAD, TSTORE, TMOV) take on cpu and a5 (a5's TLoad / TMov
#: list the fp4 types and float8_e8m0_t next to hifloat8); cpu also moves i4
MOVABLE_CODED: tuple[DType, ...] = (HIF8,) + FP4 + (E8M0,)
CPU_MOVABLE_CODED: tuple[DType, ...] = MOVABLE_CODED + (I4,)
BY_NAME: dict[str, DType] = {d.name: d for d in ALL + CODED}
#: other spellings of a type: the public hifloat4x2_t (A6 HiFloat4 matmul data) is the same E1M2
#: nibble codes as float4_e1m2x2 (its scales travel in separate tiles), so it names that type
ALIASES: dict[str, DType] = {"hifloat4x2": FP4_E1M2, "hifloat4x2_t": FP4_E1M2,
                             # E8M0: the public C++ name (with and without _t), the bare format,
                             # MLIR's f8E8M0FNU (that one only where a type may have capitals)
                             "float8_e8m0_t": E8M0, "float8_e8m0": E8M0, "e8m0": E8M0,
                             "f8E8M0FNU": E8M0, "f8e8m0fnu": E8M0}

# Groups used by declarations (architecture-wide legality; profiles narrow them).
FP8 = (F8E4M3, F8E5M2)
FLOATS = (F32, F16, BF16)                  # arithmetic floats
INTS = (I8, U8, I16, U16, I32, U32, I64, U64)
INTS_32 = (I8, U8, I16, U16, I32, U32)     # integers the vector unit handles natively
NUMERIC = FLOATS + INTS_32                 # default set for arithmetic tile ops
NUMERIC_SIGNED = FLOATS + (I8, I16, I32)
STORABLE = FLOATS + FP8 + INTS + (I1,)     # anything that can live in a tile
B16_B32 = (F32, F16, BF16, I16, U16, I32, U32)  # 2- and 4-byte element types


def get(name: str) -> DType:
    """Look a dtype up by its PTO-AS spelling (``f32``, ``i1``, ...); KeyError if unknown."""
    return BY_NAME[name] if name in BY_NAME else ALIASES[name]


def memory_bits(d: DType) -> int:
    """Bits one element takes in a hardware buffer or in global memory: the sub-byte types (fp4,
    i4) pack two per byte there, although openpto's arrays hold one per uint8; i1 masks take a byte."""
    return d.bits if d.bits < 8 and d.kind != "bool" else 8 * d.itemsize    # 4-bit types; not i1


def memory_bytes(d: DType, count: int) -> int:
    """Bytes ``count`` elements of ``d`` take in a hardware buffer or in global memory: the packed
    image (two 4-bit elements per byte, an odd count rounded up to a whole byte). Every size rule
    (capacities, rows of 32 bytes, placements) counts these; openpto's arrays are larger for the
    4-bit types (one element per uint8, ``count * d.itemsize`` bytes)."""
    return -(-count * memory_bits(d) // 8)


def of_numpy(dt: np.dtype) -> DType:
    """The ISA dtype whose numpy dtype is ``dt``; KeyError if none."""
    dt = np.dtype(dt)
    for d in ALL:
        if d.np_dtype == dt:
            return d
    raise KeyError(str(dt))


def names(ds: Iterable[DType]) -> str:
    return " ".join(d.name for d in ds)


def compute_dtype(d: DType) -> np.dtype:
    """The numpy type arithmetic is carried out in: f16/bf16/fp8 compute in f32 and round once."""
    return np.dtype(np.float32) if d.is_float else d.np_dtype
