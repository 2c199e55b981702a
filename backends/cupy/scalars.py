"""The ``arith`` scalar ops as C expressions, with the meaning the reference gives them:
integers wrap, x / 0 = -1 and x rem 0 = x, MIN / -1 = MIN, over-wide shifts shift everything
out; float ops compute in f32 and round once to their type; ``maxf``/``minf``/``maxnumf``/
``minnumf`` ignore a NaN operand, ``maximumf``/``minimumf`` propagate it; ``remf`` is fmod;
float to integer casts saturate and send NaN to 0; ``bitcast`` keeps the bits.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ...assembler import scalar_ops as S
from ...assembler.ir import ScalarOp
from ...isa.types import ScalarType
from . import ctypes_ as C

if TYPE_CHECKING:
    from .codegen import Gen

Bin = Callable[[str, str, str], str]     # (C type, a, b) -> expression

_INT: dict[str, Bin] = {
    "addi": lambda t, x, y: f"pto_iadd<{t}>({x}, {y})",
    "subi": lambda t, x, y: f"pto_isub<{t}>({x}, {y})",
    "muli": lambda t, x, y: f"pto_imul<{t}>({x}, {y})",
    "divsi": lambda t, x, y: f"pto_idiv<{_s(t)}>(({_s(t)}){x}, ({_s(t)}){y}, 0)",
    "divui": lambda t, x, y: f"pto_idiv<{_u(t)}>(({_u(t)}){x}, ({_u(t)}){y}, 0)",
    "remsi": lambda t, x, y: f"pto_idiv<{_s(t)}>(({_s(t)}){x}, ({_s(t)}){y}, 1)",
    "remui": lambda t, x, y: f"pto_idiv<{_u(t)}>(({_u(t)}){x}, ({_u(t)}){y}, 1)",
    "floordivsi": lambda t, x, y: f"pto_idiv<{_s(t)}>(({_s(t)}){x}, ({_s(t)}){y}, 2)",
    "ceildivsi": lambda t, x, y: f"pto_idiv<{_s(t)}>(({_s(t)}){x}, ({_s(t)}){y}, 3)",
    "ceildivui": lambda t, x, y: f"pto_idiv<{_u(t)}>(({_u(t)}){x}, ({_u(t)}){y}, 3)",
    "andi": lambda t, x, y: f"({x} & {y})",
    "ori": lambda t, x, y: f"({x} | {y})",
    "xori": lambda t, x, y: f"({x} ^ {y})",
    "shli": lambda t, x, y: f"pto_shl<{t}>({x}, {y})",
    "shrsi": lambda t, x, y: f"pto_shr<{_s(t)}>(({_s(t)}){x}, ({_s(t)}){y})",
    "shrui": lambda t, x, y: f"pto_lshr<{_u(t)}>(({_u(t)}){x}, ({_u(t)}){y})",
    "maxsi": lambda t, x, y: f"(({_s(t)}){x} > ({_s(t)}){y} ? {x} : {y})",
    "minsi": lambda t, x, y: f"(({_s(t)}){x} < ({_s(t)}){y} ? {x} : {y})",
    "maxui": lambda t, x, y: f"(({_u(t)}){x} > ({_u(t)}){y} ? {x} : {y})",
    "minui": lambda t, x, y: f"(({_u(t)}){x} < ({_u(t)}){y} ? {x} : {y})",
}

_FLOAT: dict[str, Callable[[str, str], str]] = {
    "addf": lambda x, y: f"({x} + {y})", "subf": lambda x, y: f"({x} - {y})",
    "mulf": lambda x, y: f"({x} * {y})", "divf": lambda x, y: f"({x} / {y})",
    "remf": lambda x, y: f"fmodf({x}, {y})",
    "maxf": lambda x, y: f"pto_fmaxnum({x}, {y})", "minf": lambda x, y: f"pto_fminnum({x}, {y})",
    "maxnumf": lambda x, y: f"pto_fmaxnum({x}, {y})", "minnumf": lambda x, y: f"pto_fminnum({x}, {y})",
    "maximumf": lambda x, y: f"pto_fmaximum({x}, {y})", "minimumf": lambda x, y: f"pto_fminimum({x}, {y})",
}

_CMPI = {"eq": ("==", None), "ne": ("!=", None), "slt": ("<", True), "sle": ("<=", True), "sgt": (">", True),
         "sge": (">=", True), "ult": ("<", False), "ule": ("<=", False), "ugt": (">", False), "uge": (">=", False)}
_CMPF = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=", "one": "!="}

_SIGNED = {"uint8_t": "int8_t", "uint16_t": "int16_t", "uint32_t": "int32_t", "uint64_t": "int64_t", "bool": "bool"}
_UNSIGNED = {"int8_t": "uint8_t", "int16_t": "uint16_t", "int32_t": "uint32_t", "int64_t": "uint64_t",
             "bool": "bool"}

#: the scalar ops this backend lowers (the extended ops are refused when compiling)
SUPPORTED: frozenset[str] = frozenset(set(_INT) | set(_FLOAT) | {
    "negf", "cmpi", "cmpf", "select", "index_cast", "index_castui", "bitcast", "sitofp", "uitofp", "fptosi",
    "fptoui", "extsi", "extui", "trunci", "extf", "truncf", "get_block_idx", "get_block_num",
    "get_subblock_idx", "get_subblock_num"})


def _s(t: str) -> str:
    return _SIGNED.get(t, t)


def _u(t: str) -> str:
    return _UNSIGNED.get(t, t)


def _bits_type(t: ScalarType) -> str:
    return {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t"}[t.dtype.bits]


def _to_bits(v: str, t: ScalarType) -> str:
    if not t.is_float:
        return f"({_bits_type(t)})({v})"
    if t.name == "f32":
        return f"pto_f2u({v})"
    return C.store(t.dtype, v)


def _from_bits(bits: str, t: ScalarType) -> str:
    if not t.is_float:
        return f"({C.scalar(t)})({bits})"
    if t.name == "f32":
        return f"pto_u2f((uint32_t)({bits}))"
    return C.load(t.dtype, f"(uint16_t)({bits})")


def _saturate(v: str, t: ScalarType) -> str:
    """An f32 as integer type ``t``: saturating, NaN -> 0."""
    ct = C.scalar(t)
    if ct == "int64_t":
        return f"pto_f2i64({v})"
    if ct == "uint64_t":
        return f"pto_f2u64({v})"
    lo, hi = (t.dtype.min, t.dtype.max)
    return f"pto_f2i<{ct}>({v}, {float(lo)!r}, {float(hi)!r})"


def scalar_op(g: "Gen", s: ScalarOp, args: list[str]) -> str:
    spec = S.SCALAR_OPS[s.op]
    rt: ScalarType = s.result.type   # type: ignore[assignment]
    ot: ScalarType = s.operands[0].type if s.operands else rt   # type: ignore[assignment]
    cls = spec.cls
    if cls == "select":
        return f"({args[0]} ? {args[1]} : {args[2]})"
    if cls == "int_binary":
        return _INT[s.op](C.scalar(rt), args[0], args[1])
    if cls == "float_binary":
        return C.round_to(rt.dtype, _FLOAT[s.op](args[0], args[1]))
    if cls == "float_unary":
        return f"(-{args[0]})"
    if cls == "cmpi":
        rel, sign = _CMPI[s.predicate or ""]
        sign = C.is_signed(ot) if sign is None else sign
        ct = C.scalar(ot)
        cast = _s(ct) if sign else _u(ct)
        return f"(({cast}){args[0]} {rel} ({cast}){args[1]})"
    if cls == "cmpf":
        p, a, b = s.predicate or "", args[0], args[1]
        if p in ("true", "false"):
            return p
        if p == "ord":
            return f"({a} == {a} && {b} == {b})"
        if p == "uno":
            return f"({a} != {a} || {b} != {b})"
        if p in _CMPF:
            return f"({a} {_CMPF[p]} {b})" if p != "one" else f"({a} < {b} || {a} > {b})"
        rel = _CMPF["o" + p[1:]]
        if p == "une":
            return f"({a} != {b})"
        return f"(!({a} == {a} && {b} == {b}) || {a} {rel} {b})"
    (v,) = args
    if s.op in ("sitofp", "uitofp"):
        ct = C.scalar(ot)
        cast = _s(ct) if s.op == "sitofp" else _u(ct)
        return C.round_to(rt.dtype, f"(float)(double)({cast})({v})")
    if s.op in ("fptosi", "fptoui"):
        return _saturate(v, rt)
    if s.op in ("extf", "truncf"):
        return C.round_to(rt.dtype, v)
    if s.op == "bitcast":
        return _from_bits(_to_bits(v, ot), rt)
    # index_cast, index_castui, extsi, extui, trunci: through the source's signedness
    signed = {"extsi": True, "extui": False, "index_castui": False}.get(s.op, C.is_signed(ot))
    ct = C.scalar(ot)
    src = (_s(ct) if signed else _u(ct))
    return f"({C.scalar(rt)})({src})({v})"
