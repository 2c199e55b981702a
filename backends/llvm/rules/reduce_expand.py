"""llvm lowering rules: axis reduce and expand instructions.

Mirrors ``isa/families/reduce_expand.py``:

* reductions iterate over src's valid region; dst's valid region must be exactly the result
  (RUNTIME_VALID_REGION otherwise); ``tmp`` is never touched. Float sums accumulate in f32
  with ``reassoc`` (the ``sum`` contract is order-independent, so the row loop vectorises);
  float products in f64 (the reference's range, so no partial product over/underflows where
  the reference's does not); integers in their own width (wrap). Max/min are IEEE 754-2019
  maximum/minimum (``llvm.maximum``/``llvm.minimum``: NaN propagates, +0 > -0; the ``rounded``
  contract leaves NaN payloads free), so both forms vectorise: rows as a reduction, columns
  as one accumulator per column.
* broadcasts copy raw bits (the contract is exact, NaN payloads included);
* expand-binary ops are ``MapRule`` s (per-row/per-column operand), so they fuse; a row-expand
  op picks its form from the operand types (``isa``'s ``src0_expanded``): which source is the
  per-row one, read at (i, 0) when its valid columns are statically 1 (Mode 1), else at
  (i, j mod its valid columns) after a run-time check that they are 1 or one 32-byte block (Mode 2).
"""
from __future__ import annotations

from typing import Any, Callable

from llvmlite import ir

from ....assembler.ir import TileOp
from ....isa.families.reduce_expand import block_width
from .. import mathfn
from .. import numerics as N
from ...maprules import COL_READS, MapRule, row_expand_rule
from ..codegen import KernelCodegen, TileRef
from . import elementwise as ew

I64, F32, F64 = N.I64, N.F32, N.F64


# --------------------------------------------------------------------------- scalar helpers

def _dtype(op: TileOp, name: str = "dst") -> Any:
    return op.args[name].type.dtype   # type: ignore[union-attr]


def _int_extreme(cg: KernelCodegen, a: ir.Value, x: ir.Value, signed: bool, want_max: bool) -> ir.Value:
    name = ("s" if signed else "u") + ("max" if want_max else "min")
    return cg.intrinsic(f"llvm.{name}.i{a.type.width}", a.type, [a, x])


# --------------------------------------------------------------------------- reductions

class _Reduce:
    """One reduction kind: accumulator type, identity and combine step for a dtype."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def acc_type(self, d: Any) -> ir.Type:
        if d.is_float:
            return F64 if self.kind == "PROD" else F32
        return N.compute(d)

    def identity(self, d: Any) -> ir.Constant:
        ty = self.acc_type(d)
        if d.is_float:
            return ir.Constant(ty, {"SUM": 0.0, "PROD": 1.0, "MAX": float("-inf"), "MIN": float("inf")}[self.kind])
        if self.kind == "SUM":
            return ir.Constant(ty, 0)
        if self.kind == "PROD":
            return ir.Constant(ty, 1)
        signed = d.kind == "int"
        lo, hi = (-(1 << (ty.width - 1)), (1 << (ty.width - 1)) - 1) if signed else (0, (1 << ty.width) - 1)
        return ir.Constant(ty, lo if self.kind == "MAX" else hi)

    def widen(self, b: ir.IRBuilder, d: Any, x: ir.Value) -> ir.Value:
        return b.fpext(x, F64) if d.is_float and self.kind == "PROD" else x

    def narrow(self, b: ir.IRBuilder, d: Any, acc: ir.Value) -> ir.Value:
        return b.fptrunc(acc, F32) if d.is_float and self.kind == "PROD" else acc

    def combine(self, cg: KernelCodegen, d: Any, acc: ir.Value, x: ir.Value) -> ir.Value:
        b = cg.b
        if self.kind == "SUM":
            return b.fadd(acc, x, flags=("reassoc",)) if d.is_float else b.add(acc, x)
        if self.kind == "PROD":
            return b.fmul(acc, x, flags=("reassoc",)) if d.is_float else b.mul(acc, x)
        want_max = self.kind == "MAX"
        if not d.is_float:
            return _int_extreme(cg, acc, x, d.kind == "int", want_max)
        return cg.intrinsic("llvm.maximum.f32" if want_max else "llvm.minimum.f32", F32, [acc, x])


def _valid_result(cg: KernelCodegen, axis: str, dst: TileRef, rows: ir.Value, cols: ir.Value) -> None:
    b = cg.b
    bad = b.or_(b.icmp_signed("!=", dst.vrows, rows), b.icmp_signed("!=", dst.vcols, cols))
    cg.fault(bad, "RUNTIME_VALID_REGION", f"the {axis} reduction's result does not fill dst's valid region",
             expected="dst valid region {0}x{1}", actual="{2}x{3}", details=[rows, cols, dst.vrows, dst.vcols])


def _reduction(axis: str, kind: str) -> Callable[[KernelCodegen, TileOp], None]:
    """Rows: one accumulator per row, reduced along it (a vectorised reduction). Columns: one
    accumulator per column, all updated row by row (an elementwise loop that vectorises)."""
    red = _Reduce(kind)

    def rule(cg: KernelCodegen, op: TileOp) -> None:
        b = cg.b
        src, dst = cg.tile(op, "src"), cg.tile(op, "dst")
        d = src.dtype
        r, c = src.vrows, src.vcols
        zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
        ty = red.acc_type(d)

        def add(p: ir.Value, i: ir.Value, j: ir.Value) -> None:
            b.store(red.combine(cg, d, b.load(p, typ=ty), red.widen(b, d, src.load(b, i, j))), p)

        def result(p: ir.Value) -> ir.Value:
            return red.narrow(b, d, b.load(p, typ=ty))

        if axis == "row":
            _valid_result(cg, "row", dst, r, one)
            acc = cg.alloca(ty, "row.acc")
            with cg.loop(0, r, name="r") as i:
                b.store(red.identity(d), acc)
                with cg.loop(0, c, name="c") as j:
                    add(acc, i, j)
                dst.store(b, i, zero, result(acc))
            return
        _valid_result(cg, "col", dst, one, c)
        accs = cg.alloca(ir.ArrayType(ty, max(src.cols, 1)), "col.acc")

        def slot(j: ir.Value) -> ir.Value:
            return b.gep(accs, [zero, j], inbounds=True)

        with cg.loop(0, c, name="c") as j:
            b.store(red.identity(d), slot(j))
        with cg.loop(0, r, name="r") as i:
            with cg.loop(0, c, name="c") as j:
                add(slot(j), i, j)
        with cg.loop(0, c, name="c") as j:
            dst.store(b, zero, j, result(slot(j)))
    return rule


# --------------------------------------------------------------------------- broadcasts

def _broadcast(axis: str) -> Callable[[KernelCodegen, TileOp], None]:
    what = "per-row source" if axis == "row" else "per-column source"

    def rule(cg: KernelCodegen, op: TileOp) -> None:
        b = cg.b
        dst, src = cg.tile(op, "dst"), cg.tile(op, "src")
        r, c = dst.vrows, dst.vcols
        one = ir.Constant(I64, 1)
        need_r = r if axis == "row" else b.select(b.icmp_signed("<", r, one), r, one)
        need_c = c if axis == "col" else b.select(b.icmp_signed("<", c, one), c, one)
        cg.check_read(src, need_r, need_c, what)
        zero = ir.Constant(I64, 0)
        with cg.loop(0, r, name="r") as i:
            if axis == "row":
                v = src.load_raw(b, i, zero)
                with cg.loop(0, c, name="c") as j:
                    dst.store_raw(b, i, j, v)
            else:
                with cg.loop(0, c, name="c") as j:
                    dst.store_raw(b, i, j, src.load_raw(b, zero, j))
    return rule


# --------------------------------------------------------------------------- expand-binary (map rules)

Fn = Callable[[KernelCodegen, TileOp, list[ir.Value]], ir.Value]


def _on_dst_dtype(fn: Callable[[KernelCodegen, Any, list[ir.Value]], ir.Value]) -> Fn:
    """An elementwise op (``fn(cg, dtype, values)``) as a map-rule function of the op."""
    return lambda cg, op, v: fn(cg, _dtype(op), v)


def _expdif(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    return mathfn.exp(cg, cg.b.fsub(v[0], v[1]))


_BINARY: dict[str, Fn] = {
    "ADD": _on_dst_dtype(ew.op_add),
    "SUB": _on_dst_dtype(ew.op_sub),
    "MUL": _on_dst_dtype(ew.op_mul),
    "DIV": _on_dst_dtype(ew.op_div),
    "MAX": _on_dst_dtype(ew.op_max),
    "MIN": _on_dst_dtype(ew.op_min),
    "EXPDIF": _expdif,
}



def _block_check(vec: str) -> Callable[[KernelCodegen, TileOp], None]:
    """A Mode 2 operand's valid columns must be 1 or one 32-byte block (as the semantics check)."""
    def check(cg: KernelCodegen, op: TileOp) -> None:
        b, t = cg.b, cg.tile(op, vec)
        w = block_width(t.dtype)
        bad = b.and_(b.icmp_signed("!=", t.vcols, ir.Constant(I64, 1)),
                     b.icmp_signed("!=", t.vcols, ir.Constant(I64, w)))
        cg.fault(bad, "RUNTIME_VALID_REGION", "per-row source is neither one value per row nor one "
                 "32-byte block per row", expected=f"valid columns 1 or {w}", actual="{0}", details=[t.vcols])
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
