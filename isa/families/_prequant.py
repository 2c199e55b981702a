"""The scalar pre-quantising form that TMOV, TEXTRACT, TINSERT and TSTORE share: an optional f32
operand ``preQuantScalar`` that scales every element of an acc source before it is converted.

The public overloads take a ``uint64_t`` register image (the f32's bits in the low word, an i8/u8
sign flag in bit 46); openpto takes the f32 itself and reads the signedness from dst's type
(decision 'Scalar pre-quantisation forms'). One table per instruction says which (dst, src)
pairs the form scales; the rules below keep the plain and the scaled forms apart.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

from .. import constraints as K
from .. import dtypes as dt
from ..spec import Constraint, Kind, Operand, Role
from ..types import Location, ScalarType, Type

SCALE = "preQuantScalar"
SCALE_OPERAND = Operand(SCALE, Role.IN, Kind.SCALAR,
                        "scalar pre-quantisation form: the f32 factor every acc element is multiplied "
                        "by before the conversion into dst's type", optional=True)

Pair = tuple[dt.DType, dt.DType]
_TARGETS = (dt.I8, dt.U8, dt.F16, dt.BF16)
#: (dst, src) pairs every profile's scalar mode table scales on A5 (GetScalarPreQuantMode: f32 and
#: i32 acc to i8/u8/f16/bf16; its hifloat8/fp8 targets are not declared), the architecture-wide set
A5_PAIRS: tuple[Pair, ...] = tuple((d, s) for s in (dt.F32, dt.I32) for d in _TARGETS)


def saturate(values: np.ndarray, d: dt.DType) -> np.ndarray:
    """f32 values as ``d``: floats round nearest-even (overflow gives ±inf); integers round
    nearest-even, clamp to d's range, NaN -> 0."""
    with np.errstate(all="ignore"):
        if d.is_float:
            return np.asarray(values).astype(d.np_dtype)
        r = np.clip(np.rint(np.asarray(values, np.float64)), d.min, d.max)
        return np.where(np.isnan(r), 0, r).astype(d.np_dtype)


def scale(values: np.ndarray, factor: Any) -> np.ndarray:
    """f32(values) * f32(factor), each product rounded once to f32 (i32 converts nearest-even)."""
    with np.errstate(all="ignore"):
        return values.astype(np.float32) * np.float32(factor)


def _pair(types: Mapping[str, Type], dst: str, src: str) -> Pair | None:
    d, s = types.get(dst), types.get(src)
    if d is None or s is None or not hasattr(d, "dtype") or not hasattr(s, "dtype"):
        return None
    return d.dtype, s.dtype


def _names(pairs: Iterable[Pair]) -> str:
    return ", ".join(f"{s} -> {d}" for d, s in pairs)


def form_rules(plain: Iterable[Pair], scaled: Iterable[Pair], dst: str = "dst",
               src: str = "src") -> tuple[Constraint, ...]:
    """The rules that tell the forms apart (the dtype table is their union): a pair only the
    scaled form converts needs preQuantScalar (STRUCT_MISSING_OPERAND); with preQuantScalar the
    pair must be one the scaled form converts, from an acc source, by an f32 (LEGAL_DTYPE,
    LEGAL_LOCATION)."""
    plain, scaled = frozenset(plain), tuple(dict.fromkeys(scaled))
    only_scaled = tuple(p for p in scaled if p not in plain)

    def missing(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        p = _pair(types, dst, src)
        if p in only_scaled and SCALE not in types:
            return f"{p[1]} -> {p[0]} is a pre-quantising conversion: give {SCALE}"
        return None

    def pair_ok(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        p, k = _pair(types, dst, src), types.get(SCALE)
        if k is None or p is None:
            return None
        if isinstance(k, ScalarType) and k.dtype is not dt.F32:
            return f"{SCALE} is {k.dtype}, an f32 factor is needed"
        if p not in scaled:
            return f"{SCALE} does not scale {p[1]} -> {p[0]}; it scales {_names(scaled)}"
        return None

    def from_acc(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        s = K.tile(types, src)
        if SCALE in types and s is not None and s.loc is not Location.ACC:
            return f"{SCALE} scales an acc source, {src} is in {s.loc.value}"
        return None

    return (K.custom(f"{_names(only_scaled)} take {SCALE}", missing, "STRUCT_MISSING_OPERAND"),
            K.custom(f"{SCALE} is f32 and scales {_names(scaled)}", pair_ok, "LEGAL_DTYPE"),
            K.custom(f"{SCALE} only with an acc {src}", from_acc, "LEGAL_LOCATION"))
