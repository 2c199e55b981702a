"""cupy lowering rules: elementwise tile-tile instructions (fusable map rules).

Each instruction is one entry of a table: a function of the compute values (C expressions:
``float`` for every float dtype, the integer in its own type, ``bool`` masks) that dispatches on
the dtype the reference computes in (the first source's). The ``op_*`` helpers are shared with
the tile-scalar and expand families. TSEL reads and writes stored bits, so NaN payloads are
copied exactly.
"""
from __future__ import annotations

from typing import Any, Callable

from ....assembler.ir import TileOp
from ....isa import dtypes as dt
from ....isa.attrs import CmpMode
from .. import ctypes_ as C
from ...maprules import Access, BIN, MASK, MapRule, TRI, UN
from ..codegen import Gen

Op = Callable[[dt.DType, list[str]], str]          # (dtype computed in, operands) -> expression
Fn = Callable[[Gen, TileOp, list[str]], str]


def dtype_of(op: TileOp, name: str) -> dt.DType:
    return op.args[name].type.dtype   # type: ignore[union-attr]


def _t(d: dt.DType) -> str:
    return C.compute(d)


def op_add(d: dt.DType, v: list[str]) -> str:
    return f"({v[0]} + {v[1]})" if d.is_float else f"pto_iadd<{_t(d)}>({v[0]}, {v[1]})"


def op_sub(d: dt.DType, v: list[str]) -> str:
    return f"({v[0]} - {v[1]})" if d.is_float else f"pto_isub<{_t(d)}>({v[0]}, {v[1]})"


def op_mul(d: dt.DType, v: list[str]) -> str:
    return f"({v[0]} * {v[1]})" if d.is_float else f"pto_imul<{_t(d)}>({v[0]}, {v[1]})"


def op_div(d: dt.DType, v: list[str]) -> str:
    """IEEE division for floats; integers truncate, x / 0 = -1, MIN / -1 = MIN."""
    return f"({v[0]} / {v[1]})" if d.is_float else f"pto_idiv<{_t(d)}>({v[0]}, {v[1]}, 0)"


def op_min(d: dt.DType, v: list[str]) -> str:
    """IEEE 754-2019 minimum (NaN propagates, -0 < +0); integers by their signedness."""
    return f"pto_fminimum({v[0]}, {v[1]})" if d.is_float else f"({v[0]} < {v[1]} ? {v[0]} : {v[1]})"


def op_max(d: dt.DType, v: list[str]) -> str:
    return f"pto_fmaximum({v[0]}, {v[1]})" if d.is_float else f"({v[0]} > {v[1]} ? {v[0]} : {v[1]})"


def op_and(d: dt.DType, v: list[str]) -> str:
    return f"({_t(d)})({v[0]} & {v[1]})"


def op_or(d: dt.DType, v: list[str]) -> str:
    return f"({_t(d)})({v[0]} | {v[1]})"


def op_xor(d: dt.DType, v: list[str]) -> str:
    return f"({_t(d)})({v[0]} ^ {v[1]})"


def op_shl(d: dt.DType, v: list[str]) -> str:
    return f"pto_shl<{_t(d)}>({v[0]}, {v[1]})"


def op_shr(d: dt.DType, v: list[str]) -> str:
    return f"pto_shr<{_t(d)}>({v[0]}, {v[1]})"


def op_fmod(d: dt.DType, v: list[str]) -> str:
    """Truncated remainder; integers: x rem 0 = x."""
    return f"fmodf({v[0]}, {v[1]})" if d.is_float else f"pto_idiv<{_t(d)}>({v[0]}, {v[1]}, 1)"


def op_rem(d: dt.DType, v: list[str]) -> str:
    """Floored remainder with the divisor's sign (numpy's ``remainder``)."""
    return f"pto_fremainder({v[0]}, {v[1]})" if d.is_float else f"pto_iremainder<{_t(d)}>({v[0]}, {v[1]})"


def op_not(d: dt.DType, v: list[str]) -> str:
    return f"(!{v[0]})" if d.kind == "bool" else f"({_t(d)})(~{v[0]})"


def op_abs(d: dt.DType, v: list[str]) -> str:
    """|x|; abs(MIN) = MIN for integers (wraps)."""
    if d.is_float:
        return f"fabsf({v[0]})"
    if d.kind == "uint":
        return v[0]
    return f"({v[0]} < 0 ? pto_ineg<{_t(d)}>({v[0]}) : {v[0]})"


def op_neg(d: dt.DType, v: list[str]) -> str:
    return f"(-{v[0]})" if d.is_float else f"pto_ineg<{_t(d)}>({v[0]})"


def op_exp(d: dt.DType, v: list[str]) -> str:
    return f"pto_exp({v[0]})"


def op_log(d: dt.DType, v: list[str]) -> str:
    return f"pto_log({v[0]})"


def op_sqrt(d: dt.DType, v: list[str]) -> str:
    return f"sqrtf({v[0]})"


def op_rsqrt(d: dt.DType, v: list[str]) -> str:
    """1 / sqrt(x): two correctly rounded steps, within the 2 ulp contract."""
    return f"(1.0f / sqrtf({v[0]}))"


def op_recip(d: dt.DType, v: list[str]) -> str:
    return f"(1.0f / {v[0]})" if d.is_float else f"pto_idiv<{_t(d)}>(({_t(d)})1, {v[0]}, 0)"


def op_relu(d: dt.DType, v: list[str]) -> str:
    """x if x > 0; NaN stays NaN; everything else (-0 included) gives +0."""
    x = v[0]
    if d.is_float:
        return f"(({x} > 0.0f || {x} != {x}) ? {x} : 0.0f)"
    return f"({x} > 0 ? {x} : ({_t(d)})0)"


def op_leaky(d: dt.DType, v: list[str]) -> str:
    return f"({v[0]} > 0.0f ? {v[0]} : {v[0]} * {v[1]})"


def op_addc(d: dt.DType, v: list[str]) -> str:
    return op_add(d, [op_add(d, v[:2]), v[2]])


def op_subc(d: dt.DType, v: list[str]) -> str:
    return op_add(d, [op_sub(d, v[:2]), v[2]])


_REL = {CmpMode.EQ: "==", CmpMode.NE: "!=", CmpMode.LT: "<", CmpMode.LE: "<=", CmpMode.GT: ">", CmpMode.GE: ">="}


def compare(d: dt.DType, mode: CmpMode, a: str, c: str) -> str:
    """IEEE comparison (NaN: only NE holds; -0 == +0); integers by their signedness."""
    return f"({a} {_REL[mode]} {c})"


def _tcmp(g: Gen, op: TileOp, v: list[str]) -> str:
    return compare(dtype_of(op, "src0"), g.attrs(op)["cmpMode"], v[0], v[1])


def op_select(g: Gen, op: TileOp, v: list[str]) -> str:
    """mask ? a : b on stored bits."""
    return f"({v[0]} ? {v[1]} : {v[2]})"


def on_first_source(fn: Op, first: str) -> Fn:
    return lambda g, op, v: fn(dtype_of(op, first), v)



_TABLE: dict[str, tuple[tuple[Access, ...], Op]] = {
    "TADD": (BIN, op_add), "TSUB": (BIN, op_sub), "TMUL": (BIN, op_mul), "TDIV": (BIN, op_div),
    "TMIN": (BIN, op_min), "TMAX": (BIN, op_max),
    "TAND": (BIN, op_and), "TOR": (BIN, op_or), "TXOR": (BIN, op_xor),
    "TSHL": (BIN, op_shl), "TSHR": (BIN, op_shr),
    "TREM": (BIN, op_rem), "TFMOD": (BIN, op_fmod), "TPRELU": (BIN, op_leaky),
    "TNOT": (UN, op_not), "TABS": (UN, op_abs), "TNEG": (UN, op_neg),
    "TEXP": (UN, op_exp), "TLOG": (UN, op_log), "TSQRT": (UN, op_sqrt), "TRSQRT": (UN, op_rsqrt),
    "TRECIP": (UN, op_recip), "TRELU": (UN, op_relu),
    "TADDC": (TRI, op_addc), "TSUBC": (TRI, op_subc),
}

RULES: dict[str, Any] = {
    name: MapRule(reads, on_first_source(fn, reads[0].operand)) for name, (reads, fn) in _TABLE.items()
}
RULES["TCMP"] = MapRule(BIN, _tcmp)
RULES["TSEL"] = MapRule((MASK, Access("src0", "elem", "src0", raw=True),
                         Access("src1", "elem", "src1", raw=True)), op_select, raw_result=True)
