"""llvm lowering rules: axis reduce and expand instructions.

Mirrors ``isa/families/reduce_expand.py``:

* reductions iterate over src's valid region; dst's valid region must be exactly the result
  (RUNTIME_VALID_REGION otherwise); ``tmp`` is never touched. Float sums accumulate in f32
  with ``reassoc`` (the ``sum`` contract is order-independent, so the row loop vectorises);
  float products in f64 (the reference's range, so no partial product over/underflows where
  the reference's does not); integers in their own width (wrap). Max/min follow IEEE
  754-2019 maximum/minimum (NaN propagates, +0 > -0) and reproduce which NaN the reference
  returns: the row form reduces with ``llvm.maximum``/``llvm.minimum`` (vectorised) and only
  when the result is NaN re-scans that row to pick the NaN numpy's contiguous reduction
  gives (``_row_nan``); the column form keeps one accumulator per column
  (an elementwise loop that vectorises) and keeps the first NaN, as numpy's strided one.
* broadcasts copy raw bits (the contract is exact, NaN payloads included);
* expand-binary ops are ``MapRule`` s (per-row/per-column operand), so they fuse.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

from llvmlite import ir

from ....assembler.ir import TileOp
from .. import mathfn
from .. import numerics as N
from ..codegen import Access, KernelCodegen, MapRule, TileRef
from ..scalars import int_div

I1, I32, I64, F32, F64 = N.I1, N.I32, N.I64, N.F32, N.F64
CANONICAL_NAN = 0x7FC00000


# --------------------------------------------------------------------------- scalar helpers

def _dtype(op: TileOp, name: str = "dst") -> Any:
    return op.args[name].type.dtype   # type: ignore[union-attr]


def _isnan(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return b.fcmp_unordered("uno", v, v)


def _signbit(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    return b.icmp_signed("<", b.bitcast(v, I32), ir.Constant(I32, 0))


def ieee_extreme(b: ir.IRBuilder, a: ir.Value, x: ir.Value, want_max: bool) -> ir.Value:
    """``C.ieee_max``/``C.ieee_min`` exactly: numpy's binary maximum (``a`` if ``a >= x`` or
    ``a`` is NaN, else ``x``: the first NaN keeps its bits) with the zero-sign fix. Only
    selects, so loops over it vectorise."""
    pred = ">=" if want_max else "<="
    pick_a = b.or_(b.fcmp_ordered(pred, a, x), _isnan(b, a))
    out = b.select(pick_a, a, x)
    zero = ir.Constant(F32, 0.0)
    both_zero = b.and_(b.fcmp_ordered("==", a, zero), b.fcmp_ordered("==", x, zero))
    neg_a = _signbit(b, a)
    fixed = b.select(neg_a, x, a) if want_max else b.select(neg_a, a, x)
    return b.select(both_zero, fixed, out)


def _int_extreme(cg: KernelCodegen, a: ir.Value, x: ir.Value, signed: bool, want_max: bool) -> ir.Value:
    name = ("s" if signed else "u") + ("max" if want_max else "min")
    return cg.intrinsic(f"llvm.{name}.i{a.type.width}", a.type, [a, x])


def _load(b: ir.IRBuilder, t: TileRef, i: ir.Value, j: ir.Value) -> ir.Value:
    """Element (i, j) in its compute type; an f16 NaN keeps its payload bits, signalling
    ones included, as numpy's conversion does (``fpext`` would quieten it)."""
    if t.dtype.name != "f16":
        return t.load(b, i, j)
    raw = b.bitcast(t.load_raw(b, i, j), N.I16)
    wide = b.zext(raw, I32)
    sign = b.shl(b.and_(wide, ir.Constant(I32, 0x8000)), ir.Constant(I32, 16))
    mant = b.shl(b.and_(wide, ir.Constant(I32, 0x3FF)), ir.Constant(I32, 13))
    nan = b.bitcast(b.or_(b.or_(sign, mant), ir.Constant(I32, 0x7F800000)), F32)
    is_nan = b.icmp_unsigned(">", b.and_(raw, ir.Constant(N.I16, 0x7FFF)), ir.Constant(N.I16, 0x7C00))
    return b.select(is_nan, nan, b.fpext(t.load_raw(b, i, j), F32))


def _store(b: ir.IRBuilder, t: TileRef, i: ir.Value, j: ir.Value, v: ir.Value) -> None:
    """Store a compute value; an f32 NaN going to f16 keeps its top payload bits, as numpy."""
    if t.dtype.name != "f16":
        t.store(b, i, j, v)
        return
    bits = b.bitcast(v, I32)
    sign = b.trunc(b.lshr(bits, ir.Constant(I32, 16)), N.I16)
    sign = b.and_(sign, ir.Constant(N.I16, 0x8000))
    mant = b.trunc(b.and_(b.lshr(bits, ir.Constant(I32, 13)), ir.Constant(I32, 0x3FF)), N.I16)
    mant = b.select(b.icmp_unsigned("==", mant, ir.Constant(N.I16, 0)), ir.Constant(N.I16, 1), mant)
    nan = b.or_(b.or_(sign, mant), ir.Constant(N.I16, 0x7C00))
    rounded = b.bitcast(b.fptrunc(v, N.F16), N.I16)
    t.store_raw(b, i, j, b.bitcast(b.select(_isnan(b, v), nan, rounded), N.F16))


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

    def combine(self, cg: KernelCodegen, d: Any, acc: ir.Value, x: ir.Value, axis: str) -> ir.Value:
        b = cg.b
        if self.kind == "SUM":
            return b.fadd(acc, x, flags=("reassoc",)) if d.is_float else b.add(acc, x)
        if self.kind == "PROD":
            return b.fmul(acc, x, flags=("reassoc",)) if d.is_float else b.mul(acc, x)
        want_max = self.kind == "MAX"
        if not d.is_float:
            return _int_extreme(cg, acc, x, d.kind == "int", want_max)
        if axis == "row":
            return cg.intrinsic("llvm.maximum.f32" if want_max else "llvm.minimum.f32", F32, [acc, x])
        return ieee_extreme(b, acc, x, want_max)


def _valid_result(cg: KernelCodegen, axis: str, dst: TileRef, rows: ir.Value, cols: ir.Value) -> None:
    b = cg.b
    bad = b.or_(b.icmp_signed("!=", dst.vrows, rows), b.icmp_signed("!=", dst.vcols, cols))
    cg.fault(bad, "RUNTIME_VALID_REGION", f"the {axis} reduction's result does not fill dst's valid region",
             expected="dst valid region {0}x{1}", actual="{2}x{3}", details=[rows, cols, dst.vrows, dst.vcols])


@lru_cache(maxsize=None)
def numpy_reduce_lanes() -> int:
    """How many f32 lanes numpy's contiguous max/min reduction (the reference) processes at
    once on this host, found by probing it: 0 when it never returns the canonical NaN."""
    import numpy as np
    for w in (2, 4, 8, 16, 32, 64, 128):
        x = np.ones((2, 1 + w), np.float32)
        x.view(np.uint32)[:, w] = CANONICAL_NAN | 1
        if int(x.max(axis=1).view(np.uint32)[0]) == CANONICAL_NAN:
            return w
    return 0


def _row_nan(cg: KernelCodegen, src: TileRef, i: ir.Value, cols: ir.Value) -> ir.Value:
    """The NaN the reference's max/min returns for row ``i`` (known to hold one). numpy
    reduces x[0] and the whole vectors of x[1:] with NaN-propagating vector ops that give the
    canonical quiet NaN, then the remaining tail one by one, keeping the first NaN's bits."""
    b = cg.b
    w = numpy_reduce_lanes()
    one = ir.Constant(I64, 1)
    if w:
        body = b.mul(b.udiv(b.sub(cols, one), ir.Constant(I64, w)), ir.Constant(I64, w))
        prefix = b.select(b.icmp_signed("<", cols, one), ir.Constant(I64, 0), b.add(body, one))
    else:
        prefix = b.select(b.icmp_signed("<", cols, one), ir.Constant(I64, 0), one)
    canonical = b.bitcast(ir.Constant(I32, CANONICAL_NAN), F32)
    found = cg.alloca(I1, "nan.found")
    first = cg.alloca(F32, "nan.first")
    b.store(ir.Constant(I1, 0), found)
    b.store(canonical, first)
    with cg.loop(0, cols, name="n") as j:
        x = _load(b, src, i, j)
        with cg.if_then(b.and_(_isnan(b, x), b.not_(b.load(found, typ=I1)))):
            b.store(ir.Constant(I1, 1), found)
            b.store(b.select(b.icmp_signed("<", j, prefix), canonical, x), first)
    return b.load(first, typ=F32)


def _row_reduction(kind: str) -> Callable[[KernelCodegen, TileOp], None]:
    red = _Reduce(kind)

    def rule(cg: KernelCodegen, op: TileOp) -> None:
        b = cg.b
        src, dst = cg.tile(op, "src"), cg.tile(op, "dst")
        d = src.dtype
        r, c = src.vrows, src.vcols
        _valid_result(cg, "row", dst, r, ir.Constant(I64, 1))
        acc = cg.alloca(red.acc_type(d), "row.acc")
        zero = ir.Constant(I64, 0)
        with cg.loop(0, r, name="r") as i:
            b.store(red.identity(d), acc)
            with cg.loop(0, c, name="c") as j:
                x = red.widen(b, d, _load(b, src, i, j))
                b.store(red.combine(cg, d, b.load(acc, typ=red.acc_type(d)), x, "row"), acc)
            out = red.narrow(b, d, b.load(acc, typ=red.acc_type(d)))
            if d.is_float and kind in ("MAX", "MIN"):
                slot = cg.alloca(F32, "row.out")
                b.store(out, slot)
                with cg.if_then(_isnan(b, out)):
                    b.store(_row_nan(cg, src, i, c), slot)
                out = b.load(slot, typ=F32)
            _store(b, dst, i, zero, out)
    return rule


def _col_reduction(kind: str) -> Callable[[KernelCodegen, TileOp], None]:
    red = _Reduce(kind)

    def rule(cg: KernelCodegen, op: TileOp) -> None:
        b = cg.b
        src, dst = cg.tile(op, "src"), cg.tile(op, "dst")
        d = src.dtype
        r, c = src.vrows, src.vcols
        _valid_result(cg, "col", dst, ir.Constant(I64, 1), c)
        ty = red.acc_type(d)
        accs = cg.alloca(ir.ArrayType(ty, max(src.cols, 1)), "col.acc")

        def slot(j: ir.Value) -> ir.Value:
            return b.gep(accs, [ir.Constant(I64, 0), j], inbounds=True)

        zero = ir.Constant(I64, 0)
        with cg.loop(0, c, name="c") as j:
            b.store(red.identity(d), slot(j))
        with cg.loop(0, r, name="r") as i:
            with cg.loop(0, c, name="c") as j:
                p = slot(j)
                x = red.widen(b, d, _load(b, src, i, j))
                b.store(red.combine(cg, d, b.load(p, typ=ty), x, "col"), p)
        with cg.loop(0, c, name="c") as j:
            _store(b, dst, zero, j, red.narrow(b, d, b.load(slot(j), typ=ty)))
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
        bad = b.or_(b.icmp_signed(">", need_r, src.vrows), b.icmp_signed(">", need_c, src.vcols))
        cg.fault(bad, "RUNTIME_INVALID_READ", f"{what} is read outside its valid region",
                 expected="domain {0}x{1} inside the valid region", actual="valid region {2}x{3}",
                 details=[need_r, need_c, src.vrows, src.vcols])
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


def _arith(fop: str, iop: str) -> Fn:
    def fn(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
        return getattr(cg.b, fop if _dtype(op).is_float else iop)(v[0], v[1])
    return fn


def _div(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    d = _dtype(op)
    return cg.b.fdiv(v[0], v[1]) if d.is_float else int_div(cg.b, v[0], v[1], d.kind == "int")


def _extreme(want_max: bool) -> Fn:
    def fn(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
        d = _dtype(op)
        if d.is_float:
            return ieee_extreme(cg.b, v[0], v[1], want_max)
        return _int_extreme(cg, v[0], v[1], d.kind == "int", want_max)
    return fn


def _expdif(cg: KernelCodegen, op: TileOp, v: list[ir.Value]) -> ir.Value:
    return mathfn.exp(cg, cg.b.fsub(v[0], v[1]))


_BINARY: dict[str, Fn] = {
    "ADD": _arith("fadd", "add"),
    "SUB": _arith("fsub", "sub"),
    "MUL": _arith("fmul", "mul"),
    "DIV": _div,
    "MAX": _extreme(True),
    "MIN": _extreme(False),
    "EXPDIF": _expdif,
}

_VECTOR = {"row": Access("src1", "row", "per-row source"), "col": Access("src1", "col", "per-column source")}


def _rules() -> dict[str, Any]:
    rules: dict[str, Any] = {}
    for axis in ("row", "col"):
        A = axis.upper()
        for kind in ("SUM", "MAX", "MIN", "PROD"):
            rules[f"T{A}{kind}"] = (_row_reduction if axis == "row" else _col_reduction)(kind)
        rules[f"T{A}EXPAND"] = _broadcast(axis)
        reads = (Access("src0", "elem", "src0"), _VECTOR[axis])
        for name, fn in _BINARY.items():
            rules[f"T{A}EXPAND{name}"] = MapRule(reads, fn)
    return rules


RULES: dict[str, Any] = _rules()
