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
from .. import hifloat8
from ..spec import Constraint, FormRule, Kind, Operand, Role, tuples
from ..types import Location, ScalarType, Type

SCALE = "preQuantScalar"
SCALE_OPERAND = Operand(SCALE, Role.IN, Kind.SCALAR,
                        "scalar pre-quantisation form: the f32 factor every acc element is multiplied "
                        "by before the conversion into dst's type", optional=True)

Pair = tuple[dt.DType, dt.DType]
_TARGETS = (dt.I8, dt.U8, dt.F16, dt.BF16)
#: (dst, src) pairs A5's pre-quant mode tables scale (GetScalarPreQuantMode / GetVectorPreQuantMode:
#: f32 and i32 acc to i8/u8/f16/bf16, f32 also to hifloat8 and float8_e4m3), the architecture-wide set
A5_PAIRS: tuple[Pair, ...] = (tuple((d, s) for s in (dt.F32, dt.I32) for d in _TARGETS)
                              + ((dt.HIF8, dt.F32), (dt.F8E4M3, dt.F32)))
#: the same without the 8-bit float targets, for forms whose tables do not take them
A5_INT_PAIRS: tuple[Pair, ...] = tuple(p for p in A5_PAIRS if p[0] in _TARGETS)
E4M3_MAX = 448.0            # a scaled f8e4m3 saturates to its largest finite value
E4M3_NAN = 0x7F             # the code a NaN gets (as TQUANT's f8e4m3 output)


def _e4m3(values: np.ndarray) -> np.ndarray:
    """f32 -> f8e4m3: clamp to ±448, round nearest-even, any NaN -> 0x7F."""
    v = np.asarray(values, np.float32)
    codes = np.clip(v, -E4M3_MAX, E4M3_MAX).astype(dt.F8E4M3.np_dtype).view(np.uint8)
    return np.where(np.isnan(v), np.uint8(E4M3_NAN), codes).view(dt.F8E4M3.np_dtype)


def saturate(values: np.ndarray, d: dt.DType) -> np.ndarray:
    """f32 values as ``d``: f16/bf16 round nearest-even (overflow gives ±inf); f8e4m3 saturates to
    ±448 and rounds nearest-even (NaN -> 0x7F); hifloat8 takes its one conversion (nearest, ties
    away; overflow ±inf; decision 'Pre-quantising 8-bit float targets'); integers round
    nearest-even, clamp to d's range, NaN -> 0."""
    with np.errstate(all="ignore"):
        if d is dt.HIF8:
            return hifloat8.encode(np.asarray(values, np.float32))
        if d is dt.F8E4M3:
            return _e4m3(values)
        if d.is_float:
            return np.asarray(values).astype(d.np_dtype)
        r = np.clip(np.rint(np.asarray(values, np.float64)), d.min, d.max)
        return np.where(np.isnan(r), 0, r).astype(d.np_dtype)


def relu(values: np.ndarray) -> np.ndarray:
    """The fixpipe's ReLU on acc values (f32 or i32, or their f32 products): x > 0 and NaN (its
    payload too) kept, everything else, -0 included, +0."""
    return np.where((values > 0) | (values != values), values, np.zeros_like(values))


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
    scaled form converts needs preQuantScalar (STRUCT_MISSING_OPERAND); preQuantScalar is an f32
    and scales an acc source (LEGAL_DTYPE, LEGAL_LOCATION). Which pairs it scales differs per
    profile: ``profile_forms``."""
    plain, scaled = frozenset(plain), tuple(dict.fromkeys(scaled))
    only_scaled = tuple(p for p in scaled if p not in plain)

    def missing(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        p = _pair(types, dst, src)
        if p in only_scaled and SCALE not in types:
            return f"{p[1]} -> {p[0]} is a pre-quantising conversion: give {SCALE}"
        return None

    def f32_scale(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        k = types.get(SCALE)
        if isinstance(k, ScalarType) and k.dtype is not dt.F32:
            return f"{SCALE} is {k.dtype}, an f32 factor is needed"
        return None

    def from_acc(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        s = K.tile(types, src)
        if SCALE in types and s is not None and s.loc is not Location.ACC:
            return f"{SCALE} scales an acc source, {src} is in {s.loc.value}"
        return None

    return (K.custom(f"{_names(only_scaled)} take {SCALE}", missing, "STRUCT_MISSING_OPERAND"),
            K.custom(f"{SCALE} is f32 (the pairs it scales: Element types per form)", f32_scale, "LEGAL_DTYPE"),
            K.custom(f"{SCALE} only with an acc {src}", from_acc, "LEGAL_LOCATION"))


def profile_forms(scaled: Mapping[str, Iterable[Pair]], dst: str = "dst",
                  src: str = "src") -> dict[str, tuple[FormRule, ...]]:
    """Per profile, the (dst, src) pairs the form with preQuantScalar converts (LEGAL_DTYPE for
    another pair): the verifier's check, the pages' 'Element types per form' table."""
    return {p: (FormRule(SCALE, tuples((dst, src), list(dict.fromkeys(pairs)))),) for p, pairs in scaled.items()}
