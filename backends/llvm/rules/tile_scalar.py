"""llvm lowering rules: tile-scalar instructions (fusable map rules).

The arithmetic is the elementwise family's (``elementwise.op_*``) with the scalar in place of
the second tile. The scalar has the tile dtype: ``KernelCodegen.scalar`` gives it as a compute
value already converted to that dtype, so it is used as is (the rounding is loop-invariant
and hoisted by LLVM when it is not).
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir

from ....assembler.ir import TileOp
from .. import numerics as N
from ...maprules import Access, FUSED, MapRule, SRC_S
from ..codegen import KernelCodegen
from . import elementwise as E



def _scalar(cg: KernelCodegen, op: TileOp, v: ir.Value) -> ir.Value:
    """The scalar in the compute type of its dtype (floats rounded to it once more: a no-op
    for a value already of that type)."""
    d = E.dtype_of(op, "scalar")
    return N.round_to(cg.b, d, v) if d.is_float else v


def _binary(fn: E.Op) -> E.Fn:
    """dst = fn(src, scalar) in src's dtype."""
    def rule(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
        return fn(cg, E.dtype_of(op, "src"), [v[0], _scalar(cg, op, v[1])])
    return rule


def _tdivs(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    a, s = v[0], _scalar(cg, op, v[1])
    args = [s, a] if cg.attrs(op)["reverse"] else [a, s]
    return E.op_div(cg, E.dtype_of(op, "src"), args)


def _fused(first: E.Op) -> E.Fn:
    """dst = first(src0, scalar) + src1, each step in the compute type (TADDSC, TSUBSC)."""
    def rule(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
        d = E.dtype_of(op, "src0")
        return E.op_add(cg, d, [first(cg, d, [v[0], _scalar(cg, op, v[1])]), v[2]])
    return rule


def _tcmps(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    return E.compare(cg, E.dtype_of(op, "src"), cg.attrs(op)["cmpMode"], v[0], _scalar(cg, op, v[1]))


def _tsels(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    """mask ? src : scalar on stored bits (the scalar rounded to src's dtype)."""
    s = N.store(cg.b, E.dtype_of(op, "src"), _scalar(cg, op, v[2]))
    return E.op_select(cg, op, [v[0], v[1], s])


def _texpands(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    return _scalar(cg, op, v[0])


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
