"""llvm lowering rules: arg-reductions (TROWARG*, TCOLARG*) and TPARTARGMAX/TPARTARGMIN.

Mirrors ``isa/families/argreduce.py``: every comparison goes through one i64 order key (the
f32 bit pattern folded so that -0 < +0; integers by value) plus a NaN flag, so the index
always points at the value written beside it: the first NaN of a line wins, then the
strictly larger (smaller) key, equal keys keep the earlier index. Values are copied as raw
bits; ``tmp`` is never touched.
"""
from __future__ import annotations

from typing import Any, Callable

from llvmlite import ir

from ....assembler.ir import TileOp
from ....isa import dtypes as dt
from .. import numerics as N
from ..codegen import KernelCodegen, TileRef
from .complex import _isnan

I1, I32, I64 = N.I1, N.I32, N.I64


def _c(v: int, ty: ir.IntType = I64) -> ir.Constant:
    return ir.Constant(ty, v)


def order_key(b: ir.IRBuilder, d: dt.DType, raw: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(i64 order key, i1 is-NaN) of a stored element."""
    v = N.load(b, d, raw)
    if not d.is_float:
        key = b.sext(v, I64) if d.kind == "int" else b.zext(v, I64)
        return key, _c(0, I1)
    bits = b.sext(b.bitcast(v, I32), I64)
    folded = b.sub(b.neg(b.and_(bits, _c(0x7FFFFFFF))), _c(1))
    return b.select(b.icmp_signed("<", bits, _c(0)), folded, bits), _isnan(b, v)


def _beyond(b: ir.IRBuilder, want_max: bool, k: ir.Value, best: ir.Value) -> ir.Value:
    return b.icmp_signed(">" if want_max else "<", k, best)


def _optional(cg: KernelCodegen, op: TileOp, name: str) -> TileRef | None:
    return cg.tile(op, name) if name in op.args else None


def _fill(cg: KernelCodegen, out: TileRef, rows: ir.Value, cols: ir.Value, axis: str) -> None:
    """RUNTIME_VALID_REGION unless ``out``'s valid region is exactly the result's."""
    b = cg.b
    bad = b.or_(b.icmp_signed("!=", out.vrows, rows), b.icmp_signed("!=", out.vcols, cols))
    cg.fault(bad, "RUNTIME_VALID_REGION",
             f"the {axis} arg-reduction's result does not fill the output's valid region",
             expected="valid region {0}x{1}", actual="{2}x{3}", details=[rows, cols, out.vrows, out.vcols])


def _arg(axis: str, want_max: bool) -> Callable[[KernelCodegen, TileOp], None]:
    """One line at a time: the running (key, index, NaN seen) of the line's best element."""
    idx_name = "dst" if axis == "row" else "dstIdx"

    def rule(cg: KernelCodegen, op: TileOp) -> None:
        b = cg.b
        src, idx = cg.tile(op, "src"), cg.tile(op, idx_name)
        val = _optional(cg, op, "dstVal")
        d = src.dtype
        r, c = src.vrows, src.vcols
        empty = b.or_(b.icmp_signed("==", r, _c(0)), b.icmp_signed("==", c, _c(0)))
        cg.fault(empty, "RUNTIME_VALID_REGION", f"the {axis} arg-reduction's source is empty",
                 expected="src valid region with at least one row and one column", actual="{0}x{1}",
                 details=[r, c])
        lines, length = (r, c) if axis == "row" else (c, r)
        shape = (r, _c(1)) if axis == "row" else (_c(1), c)
        for out in (idx, val):
            if out is not None:
                _fill(cg, out, *shape, axis)

        def at(line: ir.Value, k: ir.Value) -> tuple[ir.Value, ir.Value]:
            return (line, k) if axis == "row" else (k, line)

        best_key = cg.alloca(I64, "arg.key")
        best_pos = cg.alloca(I64, "arg.pos")
        seen_nan = cg.alloca(I1, "arg.nan")
        with cg.loop(0, lines, name="arg.line") as line:
            k0, n0 = order_key(b, d, src.load_raw(b, *at(line, _c(0))))
            b.store(k0, best_key)
            b.store(_c(0), best_pos)
            b.store(n0, seen_nan)
            with cg.loop(1, length, name="arg.k") as k:
                key, nan = order_key(b, d, src.load_raw(b, *at(line, k)))
                seen = b.load(seen_nan, typ=I1)
                take = b.and_(b.not_(seen), b.or_(nan, _beyond(b, want_max, key, b.load(best_key, typ=I64))))
                b.store(b.select(take, key, b.load(best_key, typ=I64)), best_key)
                b.store(b.select(take, k, b.load(best_pos, typ=I64)), best_pos)
                b.store(b.or_(seen, nan), seen_nan)
            pos = b.load(best_pos, typ=I64)
            raw = src.load_raw(b, *at(line, pos))
            where = at(line, _c(0)) if axis == "row" else (_c(0), line)
            idx.store_raw(b, *where, b.trunc(pos, idx.elem))
            if val is not None:
                val.store_raw(b, *where, raw)
    return rule


def _check_pair(cg: KernelCodegen, val: TileRef, idx: TileRef, what: str) -> None:
    b = cg.b
    bad = b.or_(b.icmp_signed("!=", val.vrows, idx.vrows), b.icmp_signed("!=", val.vcols, idx.vcols))
    cg.fault(bad, "RUNTIME_VALID_REGION", f"{what}Idx's valid region differs from {what}Val's",
             expected="{0}x{1}", actual="{2}x{3}", details=[val.vrows, val.vcols, idx.vrows, idx.vcols])


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def _part(want_max: bool) -> Callable[[KernelCodegen, TileOp], None]:
    """The union walk of the TPART* rules, carrying the index beside each value. Each element
    reads only its own place before its outputs are written, so in-place use is safe."""
    def rule(cg: KernelCodegen, op: TileOp) -> None:
        b = cg.b
        dv, di = cg.tile(op, "dstVal"), cg.tile(op, "dstIdx")
        v0, i0 = cg.tile(op, "src0Val"), cg.tile(op, "src0Idx")
        v1, i1 = cg.tile(op, "src1Val"), cg.tile(op, "src1Idx")
        _check_pair(cg, dv, di, "dst")
        _check_pair(cg, v0, i0, "src0")
        _check_pair(cg, v1, i1, "src1")
        d = dv.dtype
        rows, cols = dv.vrows, dv.vcols
        r0, c0 = _min(b, rows, v0.vrows), _min(b, cols, v0.vcols)
        r1, c1 = _min(b, rows, v1.vrows), _min(b, cols, v1.vcols)
        top = b.select(b.icmp_signed(">", r0, r1), r0, r1)
        with cg.loop(0, top, name="pa.r") as i:
            a = b.select(b.icmp_signed("<", i, r0), c0, _c(0))
            c = b.select(b.icmp_signed("<", i, r1), c1, _c(0))
            both = _min(b, a, c)
            with cg.loop(0, both, name="pa.both") as j:
                x, y = v0.load_raw(b, i, j), v1.load_raw(b, i, j)
                ix, iy = i0.load_raw(b, i, j), i1.load_raw(b, i, j)
                (kx, nx), (ky, ny) = order_key(b, d, x), order_key(b, d, y)
                first = b.or_(nx, b.and_(b.not_(ny), _beyond(b, want_max, kx, ky)))
                dv.store_raw(b, i, j, b.select(first, x, y))
                di.store_raw(b, i, j, b.select(first, ix, iy))
            for src_v, src_i, lo, hi, tag in ((v0, i0, both, a, "pa.only0"), (v1, i1, both, c, "pa.only1")):
                with cg.loop(lo, hi, name=tag) as j:
                    x, ix = src_v.load_raw(b, i, j), src_i.load_raw(b, i, j)
                    dv.store_raw(b, i, j, x)
                    di.store_raw(b, i, j, ix)
    return rule


RULES: dict[str, Any] = {
    **{f"T{axis.upper()}ARG{w}": _arg(axis, w == "MAX") for axis in ("row", "col") for w in ("MAX", "MIN")},
    "TPARTARGMAX": _part(True),
    "TPARTARGMIN": _part(False),
}
