"""The meaning of the scalar ops (``arith`` names), as the reference backend runs them.

Values are Python numbers in their type's natural range (i32 is signed, u32 unsigned, index
is a signed 64-bit integer, i1 a bool, floats rounded to their type). Integer ops follow the
tile ISA's integer rules so a program means the same in a tile or in a scalar: arithmetic
wraps; x / 0 = -1 (all bits set) and x rem 0 = x; shift counts are unsigned and a count of
the width or more shifts everything out (arithmetic right shifts fill with the sign).
Float ops compute in f32 (f16/bf16 round once); ``remf`` is C fmod (the sign of the dividend);
``maxf``/``minf`` (also spelled ``maxnumf``/``minnumf``) ignore a NaN operand (IEEE maxNum),
``maximumf``/``minimumf`` propagate it (IEEE 2019). ``index_castui`` zero-extends, ``bitcast``
reads the same bits as another type of the same width. Float-to-integer casts
saturate and send NaN to 0, as TCVT's default saturation mode.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np

from ...isa.types import ScalarType

Number = Any


def bits(t: ScalarType) -> int:
    return {"index": 64, "i1": 1}.get(t.name) or t.dtype.itemsize * 8


def signed(t: ScalarType) -> bool:
    return t.name == "index" or t.dtype.kind == "int"


def from_pattern(p: int, t: ScalarType) -> int:
    """A bit pattern (any Python int, taken modulo 2**bits) as ``t``'s natural value."""
    n = bits(t)
    p %= 1 << n
    if n == 1:
        return bool(p)
    return p - (1 << n) if signed(t) and p >> (n - 1) else p


def convert(value: Number, t: ScalarType) -> Number:
    """A Python number as a value of ``t``: ints wrap, floats round to the type."""
    if t.name == "i1":
        return bool(value)
    if t.is_float:
        with np.errstate(over="ignore"):         # beyond the range rounds to ±inf (IEEE)
            return float(np.asarray(float(value), dtype=np.float64).astype(t.dtype.np_dtype))
    return from_pattern(int(value), t)


# --------------------------------------------------------------------------- integer ops

def _div(a: int, b: int) -> int:
    if b == 0:
        return -1
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _rem(a: int, b: int) -> int:
    return a if b == 0 else a - _div(a, b) * b


def _floordiv(a: int, b: int) -> int:
    return -1 if b == 0 else a // b


def _ceildiv(a: int, b: int) -> int:
    return -1 if b == 0 else -((-a) // b)


def _shl(a: int, n: int, width: int) -> int:
    return 0 if n >= width else a << n


def _shr(a: int, n: int, width: int) -> int:
    return (-1 if a < 0 else 0) if n >= width else a >> n


# op -> (operands read as signed?, function(a, b, width))
_INT: dict[str, tuple[bool | None, Callable[[int, int, int], int]]] = {
    "addi": (None, lambda a, b, w: a + b),
    "subi": (None, lambda a, b, w: a - b),
    "muli": (None, lambda a, b, w: a * b),
    "divsi": (True, lambda a, b, w: _div(a, b)),
    "divui": (False, lambda a, b, w: _div(a, b)),
    "remsi": (True, lambda a, b, w: _rem(a, b)),
    "remui": (False, lambda a, b, w: _rem(a, b)),
    "floordivsi": (True, lambda a, b, w: _floordiv(a, b)),
    "ceildivsi": (True, lambda a, b, w: _ceildiv(a, b)),
    "ceildivui": (False, lambda a, b, w: _ceildiv(a, b)),
    "andi": (None, lambda a, b, w: a & b),
    "ori": (None, lambda a, b, w: a | b),
    "xori": (None, lambda a, b, w: a ^ b),
    "shli": (False, lambda a, b, w: _shl(a, b, w)),
    "shrsi": (True, lambda a, b, w: _shr(a, b % (1 << w), w)),
    "shrui": (False, lambda a, b, w: _shr(a, b, w)),
    "maxsi": (True, lambda a, b, w: max(a, b)),
    "minsi": (True, lambda a, b, w: min(a, b)),
    "maxui": (False, lambda a, b, w: max(a, b)),
    "minui": (False, lambda a, b, w: min(a, b)),
}


def _as(v: int, width: int, as_signed: bool) -> int:
    v %= 1 << width
    return v - (1 << width) if as_signed and v >> (width - 1) else v


def int_binary(op: str, t: ScalarType) -> Callable[[int, int], int]:
    interp, fn = _INT[op]
    w = bits(t)
    as_signed = signed(t) if interp is None else interp
    return lambda a, b: from_pattern(fn(_as(a, w, as_signed), _as(b, w, as_signed), w), t)


# The two-result ops, as MLIR's arith defines them on the operands' bits: addui_extended
# gives the wrapped sum and the carry out of the top bit; mulsi/mului_extended the low and
# the high half of the double-width product, the operands read as signed / unsigned.
_EXTENDED: dict[str, tuple[bool | None, Callable[[int, int, int], tuple[int, int]]]] = {
    "addui_extended": (False, lambda a, b, w: (a + b, (a + b) >> w)),
    "mulsi_extended": (True, lambda a, b, w: (a * b, (a * b) >> w)),
    "mului_extended": (False, lambda a, b, w: (a * b, (a * b) >> w)),
}


def extended(op: str, t: ScalarType, second: ScalarType) -> Callable[[int, int], tuple[Number, Number]]:
    """(a, b) -> (low, high or carry) for the two-result op ``op`` on values of type ``t``."""
    as_signed, fn = _EXTENDED[op]
    w = bits(t)

    def run(a: int, b: int) -> tuple[Number, Number]:
        lo, hi = fn(_as(a, w, bool(as_signed)), _as(b, w, bool(as_signed)), w)
        return from_pattern(lo, t), from_pattern(hi, second)
    return run


# --------------------------------------------------------------------------- float ops

def _maxnum(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return max(a, b) if a != b else (a if math.copysign(1, a) > 0 else b)


def _minnum(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return min(a, b) if a != b else (a if math.copysign(1, a) < 0 else b)


def _maximum(a: float, b: float) -> float:
    return math.nan if math.isnan(a) or math.isnan(b) else _maxnum(a, b)


def _minimum(a: float, b: float) -> float:
    return math.nan if math.isnan(a) or math.isnan(b) else _minnum(a, b)


def _f32(fn: Callable[[np.float32, np.float32], Any]) -> Callable[[float, float], float]:
    def run(a: float, b: float) -> float:
        with np.errstate(all="ignore"):
            return float(fn(np.float32(a), np.float32(b)))
    return run


_FLOAT: dict[str, Callable[[float, float], float]] = {
    "addf": _f32(operator.add), "subf": _f32(operator.sub), "mulf": _f32(operator.mul),
    "divf": _f32(operator.truediv), "remf": _f32(np.fmod),
    "maxf": _maxnum, "minf": _minnum, "maxnumf": _maxnum, "minnumf": _minnum,
    "maximumf": _maximum, "minimumf": _minimum,
}


def float_binary(op: str, t: ScalarType) -> Callable[[float, float], float]:
    fn = _FLOAT[op]
    return lambda a, b: convert(fn(a, b), t)


# --------------------------------------------------------------------------- compares

_CMPI: dict[str, tuple[bool | None, Callable[[int, int], bool]]] = {
    "eq": (None, operator.eq), "ne": (None, operator.ne),
    "slt": (True, operator.lt), "sle": (True, operator.le), "sgt": (True, operator.gt), "sge": (True, operator.ge),
    "ult": (False, operator.lt), "ule": (False, operator.le), "ugt": (False, operator.gt), "uge": (False, operator.ge),
}


def cmpi(pred: str, t: ScalarType) -> Callable[[int, int], bool]:
    interp, fn = _CMPI[pred]
    w = bits(t)
    as_signed = signed(t) if interp is None else interp
    return lambda a, b: fn(_as(int(a), w, as_signed), _as(int(b), w, as_signed))


_ORDERED = {"oeq": operator.eq, "ogt": operator.gt, "oge": operator.ge, "olt": operator.lt,
            "ole": operator.le, "one": operator.ne}


def cmpf(pred: str) -> Callable[[float, float], bool]:
    if pred in ("false", "true"):
        value = pred == "true"
        return lambda a, b: value
    if pred in ("ord", "uno"):
        want_unordered = pred == "uno"
        return lambda a, b: (math.isnan(a) or math.isnan(b)) == want_unordered
    if pred in _ORDERED:
        fn = _ORDERED[pred]
        return lambda a, b: not (math.isnan(a) or math.isnan(b)) and fn(a, b)
    fn = _ORDERED["o" + pred[1:]]   # u**: unordered or the comparison
    return lambda a, b: math.isnan(a) or math.isnan(b) or fn(a, b)


# --------------------------------------------------------------------------- casts

def _float_to_int(v: float, t: ScalarType) -> int:
    if math.isnan(v):
        return 0
    n = bits(t)
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed(t) else (0, (1 << n) - 1)
    if math.isinf(v):
        return hi if v > 0 else lo
    return max(lo, min(hi, math.trunc(v)))


def _bitcast(v: Number, src: ScalarType, dst: ScalarType) -> Number:
    """The same bits read as ``dst`` (widths are equal: the verifier checks)."""
    raw = np.asarray(v, dtype=src.dtype.np_dtype).view(dst.dtype.np_dtype)
    return float(raw) if dst.is_float else int(raw)


def cast(op: str, src: ScalarType, dst: ScalarType) -> Callable[[Number], Number]:
    if op in ("fptosi", "fptoui"):
        return lambda v: from_pattern(_float_to_int(v, dst), dst)
    if op == "uitofp":
        w = bits(src)
        return lambda v: convert(int(v) % (1 << w), dst)
    if op == "bitcast":
        return lambda v: _bitcast(v, src, dst)
    if op in ("extui", "index_castui"):
        w = bits(src)
        return lambda v: convert(int(v) % (1 << w), dst)
    if op in ("sitofp", "extsi"):
        w = bits(src)
        return lambda v: convert(_as(int(v), w, True), dst)
    return lambda v: convert(v, dst)   # index_cast (sign-extends/truncates), trunci, extf, truncf
