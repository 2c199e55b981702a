"""cupy lowering rules: axis reductions, broadcasts and expand-binary instructions.

Mirrors ``isa/families/reduce_expand.py``:

* row reductions: one warp per row (``PTO_LANES`` threads stride along it, then combine with
  warp shuffles: ``PTO_WARP_COMBINE``; on the host one lane reads the row in order); column
  reductions: one thread per column, rows in order. Float sums accumulate in f32 (the ``sum``
  contract is order-independent), float products in f64, integers in their own type (wrap);
  max/min are IEEE 754-2019 maximum/minimum. dst's valid region must be exactly the result
  (RUNTIME_VALID_REGION).
* broadcasts copy raw bits;
* expand-binary ops are ``MapRule`` s with a per-row or per-column operand, so they fuse; the
  row form picks which source is per-row from the operand types (``src0_expanded``) and reads
  it at (i, 0) when its valid columns are statically 1 (Mode 1), else at (i, j mod its valid
  columns) after a run-time check that they are 1 or one 32-byte block (Mode 2).
"""
from __future__ import annotations

from typing import Any, Callable

from ....assembler.ir import TileOp
from ....isa import dtypes as dt
from ....isa.families.reduce_expand import block_width
from .. import ctypes_ as C
from ...maprules import COL_READS, MapRule, row_expand_rule
from ..codegen import Gen
from . import elementwise as E


class _Reduce:
    """One reduction kind: accumulator C type, identity and combine function for a dtype."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def acc_type(self, d: dt.DType) -> str:
        if d.is_float:
            return "double" if self.kind == "PROD" else "float"
        return C.compute(d)

    def identity(self, d: dt.DType) -> str:
        if d.is_float:
            return {"SUM": "0.0f", "PROD": "1.0", "MAX": "-pto_inf", "MIN": "pto_inf"}[self.kind]
        if self.kind in ("SUM", "PROD"):
            return f"({C.compute(d)}){0 if self.kind == 'SUM' else 1}"
        lo, hi = (d.min, d.max)
        v = lo if self.kind == "MAX" else hi
        return C.literal(v, _scalar_type(d))

    def combine_fn(self, d: dt.DType) -> str:
        """A header function of two accumulators (usable in ``PTO_WARP_COMBINE``)."""
        if d.is_float:
            return {"SUM": "pto_addf_", "PROD": "pto_muld_", "MAX": "pto_fmaximum", "MIN": "pto_fminimum"}[self.kind]
        t = C.compute(d)
        return {"SUM": f"pto_iadd<{t}>", "PROD": f"pto_imul<{t}>", "MAX": f"pto_imax<{t}>",
                "MIN": f"pto_imin<{t}>"}[self.kind]

    def widen(self, d: dt.DType, x: str) -> str:
        return f"(double)({x})" if d.is_float and self.kind == "PROD" else x

    def narrow(self, d: dt.DType, acc: str) -> str:
        return f"(float)({acc})" if d.is_float and self.kind == "PROD" else acc


def _scalar_type(d: dt.DType) -> Any:
    from ....isa.types import ScalarType
    return ScalarType(d.name)


def _valid_result(g: Gen, axis: str, dst: Any, rows: str, cols: str) -> None:
    g.fault(f"{dst.vr} != ({rows}) || {dst.vc} != ({cols})", "RUNTIME_VALID_REGION",
            f"the {axis} reduction's result does not fill dst's valid region",
            expected="dst valid region {0}x{1}", actual="{2}x{3}", details=[rows, cols, dst.vr, dst.vc])


def _reduction(axis: str, kind: str) -> Callable[[Gen, TileOp], None]:
    red = _Reduce(kind)

    def rule(g: Gen, op: TileOp) -> None:
        src, dst = g.tile(op, "src"), g.tile(op, "dst")
        d = src.dtype
        ty, fn = red.acc_type(d), red.combine_fn(d)
        r, c = src.vr, src.vc
        acc = g.fresh("acc")
        if axis == "row":
            _valid_result(g, "row", dst, r, "1")
            lane, warp, i, j = g.fresh("lane"), g.fresh("w"), g.fresh("i"), g.fresh("j")
            g.line(f"const int64_t {lane} = PTO_TID % PTO_LANES, {warp} = PTO_TID / PTO_LANES;")
            with g.block(f"for (int64_t {i} = {warp}; {i} < {r}; {i} += PTO_NT / PTO_LANES)"):
                g.line(f"{ty} {acc} = {red.identity(d)};")
                with g.block(f"for (int64_t {j} = {lane}; {j} < {c}; {j} += PTO_LANES)"):
                    g.line(f"{acc} = {fn}({acc}, {red.widen(d, src.load(i, j))});")
                g.line(f"{acc} = PTO_WARP_COMBINE({acc}, {fn});")
                with g.block(f"if ({lane} == 0)"):
                    g.line(dst.store(i, "0", red.narrow(d, acc)))
            return
        _valid_result(g, "col", dst, "1", c)
        i, j = g.fresh("i"), g.fresh("j")
        with g.block(f"for (int64_t {j} = PTO_TID; {j} < {c}; {j} += PTO_NT)"):
            g.line(f"{ty} {acc} = {red.identity(d)};")
            with g.block(f"for (int64_t {i} = 0; {i} < {r}; ++{i})"):
                g.line(f"{acc} = {fn}({acc}, {red.widen(d, src.load(i, j))});")
            g.line(dst.store("0", j, red.narrow(d, acc)))
    return rule


def _broadcast(axis: str) -> Callable[[Gen, TileOp], None]:
    what = "per-row source" if axis == "row" else "per-column source"

    def rule(g: Gen, op: TileOp) -> None:
        dst, src = g.tile(op, "dst"), g.tile(op, "src")
        r, c = dst.vr, dst.vc
        need_r = r if axis == "row" else f"({r} < 1 ? {r} : 1)"
        need_c = c if axis == "col" else f"({c} < 1 ? {c} : 1)"
        g.check_read(src, need_r, need_c, what)
        with g.elements(r, c) as (i, j):
            from_ = src.at(i, "0") if axis == "row" else src.at("0", j)
            g.line(f"{dst.at(i, j)} = {from_};")
    return rule


Fn = Callable[[Gen, TileOp, list[str]], str]


def _on_dst_dtype(fn: E.Op) -> Fn:
    return lambda g, op, v: fn(op.args["dst"].type.dtype, v)   # type: ignore[union-attr]


def _expdif(g: Gen, op: TileOp, v: list[str]) -> str:
    return f"pto_exp({v[0]} - {v[1]})"


_BINARY: dict[str, Fn] = {
    "ADD": _on_dst_dtype(E.op_add), "SUB": _on_dst_dtype(E.op_sub), "MUL": _on_dst_dtype(E.op_mul),
    "DIV": _on_dst_dtype(E.op_div), "MAX": _on_dst_dtype(E.op_max), "MIN": _on_dst_dtype(E.op_min),
    "EXPDIF": _expdif,
}



def _block_check(vec: str) -> Callable[[Gen, TileOp], None]:
    """A Mode 2 operand's valid columns must be 1 or one 32-byte block."""
    def check(g: Gen, op: TileOp) -> None:
        t = g.tile(op, vec)
        w = block_width(t.dtype)
        g.fault(f"{t.vc} != 1 && {t.vc} != {w}", "RUNTIME_VALID_REGION",
                "per-row source is neither one value per row nor one 32-byte block per row",
                expected=f"valid columns 1 or {w}", actual="{0}", details=[t.vc])
    return check


def _rules() -> dict[str, Any]:
    rules: dict[str, Any] = {}
    for axis in ("row", "col"):
        A = axis.upper()
        for kind in ("SUM", "MAX", "MIN", "PROD"):
            rules[f"T{A}{kind}"] = _reduction(axis, kind)
        rules[f"T{A}EXPAND"] = _broadcast(axis)
        for name, fn in _BINARY.items():
            rules[f"T{A}EXPAND{name}"] = row_expand_rule(fn, _block_check) if axis == "row" else MapRule(COL_READS, fn)
    return rules


RULES: dict[str, Any] = _rules()
