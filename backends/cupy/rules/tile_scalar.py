"""cupy lowering rules: tile-scalar instructions (fusable map rules).

The arithmetic is the elementwise family's with the scalar in place of the second tile; the
scalar is rounded to the tile dtype once, outside the element loop.
"""
from __future__ import annotations

from typing import Any

from ....assembler.ir import TileOp
from .. import ctypes_ as C
from ...maprules import Access, FUSED, MapRule, SRC_S
from ..codegen import Gen
from . import elementwise as E



def _scalar(op: TileOp, v: str) -> str:
    """The scalar in the compute type of its dtype (floats rounded to it)."""
    d = E.dtype_of(op, "scalar")
    return C.round_to(d, v) if d.is_float else v


def _binary(fn: E.Op) -> E.Fn:
    def rule(g: Gen, op: TileOp, v: list[str]) -> str:
        return fn(E.dtype_of(op, "src"), [v[0], _scalar(op, v[1])])
    return rule


def _tdivs(g: Gen, op: TileOp, v: list[str]) -> str:
    a, s = v[0], _scalar(op, v[1])
    return E.op_div(E.dtype_of(op, "src"), [s, a] if g.attrs(op)["reverse"] else [a, s])


def _fused(first: E.Op) -> E.Fn:
    """dst = first(src0, scalar) + src1, each step rounded as the compute type holds it."""
    def rule(g: Gen, op: TileOp, v: list[str]) -> str:
        d = E.dtype_of(op, "src0")
        return E.op_add(d, [first(d, [v[0], _scalar(op, v[1])]), v[2]])
    return rule


def _tcmps(g: Gen, op: TileOp, v: list[str]) -> str:
    return E.compare(E.dtype_of(op, "src"), g.attrs(op)["cmpMode"], v[0], _scalar(op, v[1]))


def _tsels(g: Gen, op: TileOp, v: list[str]) -> str:
    """mask ? src : scalar on stored bits (the scalar rounded to src's dtype)."""
    return f"({v[0]} ? {v[1]} : {C.store(E.dtype_of(op, 'src'), _scalar(op, v[2]))})"


def _texpands(g: Gen, op: TileOp, v: list[str]) -> str:
    return _scalar(op, v[0])


_TABLE: dict[str, E.Op] = {
    "TADDS": E.op_add, "TSUBS": E.op_sub, "TMULS": E.op_mul, "TMAXS": E.op_max, "TMINS": E.op_min,
    "TREMS": E.op_rem, "TFMODS": E.op_fmod, "TLRELU": E.op_leaky,
    "TANDS": E.op_and, "TORS": E.op_or, "TXORS": E.op_xor, "TSHLS": E.op_shl, "TSHRS": E.op_shr,
}

RULES: dict[str, Any] = {name: MapRule(SRC_S, _binary(fn)) for name, fn in _TABLE.items()}
RULES.update({
    "TDIVS": MapRule(SRC_S, _tdivs),
    "TADDSC": MapRule(FUSED, _fused(E.op_add)),
    "TSUBSC": MapRule(FUSED, _fused(E.op_sub)),
    "TCMPS": MapRule(SRC_S, _tcmps),
    "TSELS": MapRule((E.MASK, Access("src", "elem", "src", raw=True), Access("scalar", "scalar", "scalar")),
                     _tsels, raw_result=True),
    "TEXPANDS": MapRule((Access("scalar", "scalar", "scalar"),), _texpands),
})
