"""The scalar pre-quantising form that TMOV, TEXTRACT, TINSERT and TSTORE share: an optional f32
operand ``preQuantScalar`` that scales every element of an acc source before it is converted.

The public overloads take a ``uint64_t`` register image (the f32's bits in the low word, an i8/u8
sign flag in bit 46); openpto takes the f32 itself and reads the signedness from dst's type
(decision 'Scalar pre-quantisation forms'). One table per instruction says which (dst, src)
pairs the form scales; the rules below keep the plain and the scaled forms apart.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

import numpy as np

from .. import constraints as K
from .. import dtypes as dt
from .. import hifloat8
from ..attrs import FixpipeQuant as Q
from ..diagnostics import RuntimeFault
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


# ----------------------------------------------------------------------------- fixpipe quant modes
#
# A pre-quantising TPUSH names its conversion by the public FixpipeParams quant mode: the mode fixes
# the acc dtype it reads, the type the consumer pops (FixpipeConsDType) and where the factor comes
# from (decision 'Pre-quantising TPUSH').

CAST, SCALAR, VECTOR = "cast", "scalar", "vector"
QUANT_SCALAR_KEY = "quant_scalar"     # the state keys SET_QUANT_SCALAR / SET_QUANT_VECTOR write
QUANT_VECTOR_KEY = "quant_vector"


#: FixpipeQuant member (all but NoQuant) -> (acc dtype it reads, dtype pushed, factor source); a2/a3
#: have no QS322BF16 / VQS322BF16 / FP8 modes (the a5 headers add them)
FIXPIPE_MODES: dict[Q, tuple[dt.DType, dt.DType, str]] = {
            Q.F322F16: (dt.F32, dt.F16, CAST), Q.F322BF16: (dt.F32, dt.BF16, CAST),
            Q.QF322B8_PRE: (dt.F32, dt.I8, SCALAR), Q.QF322F16_PRE: (dt.F32, dt.F16, SCALAR),
            Q.QF322BF16_PRE: (dt.F32, dt.BF16, SCALAR), Q.QF322FP8_PRE: (dt.F32, dt.F8E4M3, SCALAR),
            Q.QF322HIF8_PRE: (dt.F32, dt.HIF8, SCALAR),
            Q.REQ8: (dt.I32, dt.I8, SCALAR), Q.DEQF16: (dt.I32, dt.F16, SCALAR),
            Q.QS322BF16_PRE: (dt.I32, dt.BF16, SCALAR),
            Q.VQF322B8_PRE: (dt.F32, dt.I8, VECTOR), Q.VREQ8: (dt.I32, dt.I8, VECTOR),
            Q.VDEQF16: (dt.I32, dt.F16, VECTOR), Q.VQS322BF16_PRE: (dt.I32, dt.BF16, VECTOR)}
A5_ONLY_MODES = (Q.QF322FP8_PRE, Q.QF322HIF8_PRE, Q.QS322BF16_PRE, Q.VQS322BF16_PRE)


def quant_state_fault(mode: Q, why: str, expected: str, actual: str) -> RuntimeFault:
    """RUNTIME_QUANT_STATE: a pre-quantising push found no usable SET_QUANT_* configuration."""
    return RuntimeFault("RUNTIME_QUANT_STATE", f"TPUSH with Quant = {mode.name}: {why}",
                        expected=expected, actual=actual)


def fixpipe_values(values: np.ndarray, mode: Q, state: Mapping[str, Any] | None,
                   read_factors: Callable[[Any, int], np.ndarray], relu_pre: bool = False) -> np.ndarray:
    """An acc region converted as ``mode`` does, reading the SET_QUANT_* state when the push runs:
    scalar modes multiply by the recorded scale (the i8 modes need OutType I8: the signed type the
    consumer pops), vector modes column j by fp[0, j] of the recorded tile (``read_factors(fp, cols)``
    reads it, faulting outside its valid region); cast modes only convert. ``relu_pre``: the
    fixpipe's ReLU between the scaling and the conversion (NoQuant: on the acc values as they are)."""
    if mode is Q.NoQuant:
        return relu(values) if relu_pre else values
    _, d, kind = FIXPIPE_MODES[mode]
    state = state or {}
    post = relu if relu_pre else (lambda v: v)
    if kind == CAST:
        return saturate(post(values.astype(np.float32)), d)
    if kind == SCALAR:
        reg = state.get(QUANT_SCALAR_KEY)
        if reg is None:
            raise quant_state_fault(mode, "no SET_QUANT_SCALAR ran before it", "a SET_QUANT_SCALAR earlier in "
                                    "the run", "no scalar quantisation state")
        out = reg["out_type"]
        if d.is_int and out.name != "I8":
            raise quant_state_fault(mode, "the scalar register's sign flag is not that of the i8 it pushes",
                                    "SET_QUANT_SCALAR OutType = I8", f"OutType = {out.name}")
        return saturate(post(scale(values, reg["scale"])), d)
    reg = state.get(QUANT_VECTOR_KEY)
    if reg is None:
        raise quant_state_fault(mode, "no SET_QUANT_VECTOR ran before it", "a SET_QUANT_VECTOR earlier in the "
                                "run", "no vector quantisation state")
    factors = read_factors(reg["fp"], values.shape[1])
    with np.errstate(all="ignore"):
        return saturate(post(values.astype(np.float32) * factors), d)
