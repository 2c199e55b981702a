"""llvm lowering rules: TCONCAT, TINTERLEAVE, TDEINTERLEAVE, THISTOGRAM.

Mirrors ``isa/families/rearrange.py``. The moves copy raw bits; a source that is also a
destination is snapshotted first (elements change place, so in-place copies would read
what they already overwrote). Valid-region faults come in the reference's order.
"""
from __future__ import annotations

from typing import Any, Callable

from llvmlite import ir

from ....assembler.ir import TileOp
from .. import numerics as N
from ..codegen import KernelCodegen, TileRef
from .complex import _snapshot

I1, I8, I32, I64 = N.I1, N.I8, N.I32, N.I64
BINS = 256


def _c(v: int, ty: ir.IntType = I64) -> ir.Constant:
    return ir.Constant(ty, v)


def _source(cg: KernelCodegen, op: TileOp, name: str, outs: tuple[str, ...]) -> TileRef:
    """Operand ``name``, snapshotted when it names the same buffer as one of ``outs``."""
    t = cg.tile(op, name)
    mine = getattr(op.args.get(name), "name", None)
    return _snapshot(cg, t) if any(getattr(op.args.get(o), "name", 0) == mine for o in outs) else t


def _same_valid(cg: KernelCodegen, a: TileRef, b: TileRef, a_name: str, b_name: str) -> None:
    bd = cg.b
    bad = bd.or_(bd.icmp_signed("!=", a.vrows, b.vrows), bd.icmp_signed("!=", a.vcols, b.vcols))
    cg.fault(bad, "RUNTIME_VALID_REGION", f"{b_name}'s valid region differs from {a_name}'s",
             expected="{0}x{1}", actual="{2}x{3}", details=[a.vrows, a.vcols, b.vrows, b.vcols])


def _count(b: ir.IRBuilder, t: TileRef, i: ir.Value) -> ir.Value:
    """Column 0 of row i of an index tile, widened to i64 by its signedness."""
    raw = t.load_raw(b, i, _c(0))
    return b.zext(raw, I64) if t.dtype.kind == "uint" else b.sext(raw, I64)


def _cover_rows(cg: KernelCodegen, t: TileRef, rows: ir.Value, name: str, index: bool) -> None:
    b = cg.b
    bad = b.icmp_signed("<", t.vrows, rows)
    if index:
        bad = b.or_(bad, b.icmp_signed("<", t.vcols, _c(1)))
    cg.fault(bad, "RUNTIME_VALID_REGION", f"{name}'s valid region does not cover dst's rows",
             expected="at least {0} valid rows" + (" and 1 column" if index else ""), actual="{1}x{2}",
             details=[rows, t.vrows, t.vcols])


def _tconcat_indexed(cg: KernelCodegen, op: TileOp) -> None:
    """Per-row widths from column 0 of the index tiles (divided by the index element's size,
    clamped to dst's valid width): every row is checked first, then copied, as the reference."""
    b = cg.b
    outs = ("dst", "dstIdx")
    dst = cg.tile(op, "dst")
    s0, s1 = _source(cg, op, "src0", outs), _source(cg, op, "src1", outs)
    i0, i1 = _source(cg, op, "src0Idx", outs), _source(cg, op, "src1Idx", outs)
    di = cg.tile(op, "dstIdx") if "dstIdx" in op.args else None
    r, width = dst.vrows, dst.vcols
    for t, name in ((s0, "src0"), (s1, "src1"), (i0, "src0Idx"), (i1, "src1Idx")):
        _cover_rows(cg, t, r, name, name.endswith("Idx"))
    if di is not None:
        bad = b.or_(b.icmp_signed("!=", di.vrows, r), b.icmp_signed("!=", di.vcols, _c(1)))
        cg.fault(bad, "RUNTIME_VALID_REGION", "dstIdx's valid region is not one column per dst row",
                 expected="{0}x1", actual="{1}x{2}", details=[r, di.vrows, di.vcols])
    unit = _c(i0.dtype.itemsize)

    def widths(i: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
        n0, n1 = _count(b, i0, i), _count(b, i1, i)
        c0 = b.sdiv(n0, unit)
        c0 = b.select(b.icmp_signed("<", c0, width), c0, width)
        left = b.sub(width, c0)
        c1 = b.sdiv(n1, unit)
        c1 = b.select(b.icmp_signed("<", c1, left), c1, left)
        return n0, n1, c0, c1

    with cg.loop(0, r, name="cati.check") as i:
        n0, n1, c0, c1 = widths(i)
        for n, name in ((n0, "src0Idx"), (n1, "src1Idx")):
            cg.fault(b.icmp_signed("<", n, _c(0)), "RUNTIME_OOB", f"{name} holds a negative count",
                     expected="a count >= 0", actual="{0} in row {1}", details=[n, i])
        for c, t, name in ((c0, s0, "src0"), (c1, s1, "src1")):
            cg.fault(b.icmp_signed(">", c, t.vcols), "RUNTIME_INVALID_READ", f"{name} is read outside its valid region",
                     expected="{0} columns in row {1} inside the valid region", actual="{2} valid columns",
                     details=[c, i, t.vcols])
    with cg.loop(0, r, name="cati.r") as i:
        _, _, c0, c1 = widths(i)
        with cg.loop(0, c0, name="cati.a") as j:
            dst.store_raw(b, i, j, s0.load_raw(b, i, j))
        with cg.loop(0, c1, name="cati.b") as j:
            dst.store_raw(b, i, b.add(c0, j), s1.load_raw(b, i, j))
        if di is not None:
            di.store_raw(b, i, _c(0), b.trunc(b.mul(b.add(c0, c1), unit), di.elem))


def _tconcat(cg: KernelCodegen, op: TileOp) -> None:
    if "src0Idx" in op.args:
        _tconcat_indexed(cg, op)
        return
    b = cg.b
    dst = cg.tile(op, "dst")
    s0, s1 = _source(cg, op, "src0", ("dst",)), _source(cg, op, "src1", ("dst",))
    r, c = dst.vrows, dst.vcols
    c0, c1 = s0.vcols, s1.vcols
    total = b.add(c0, c1)
    cg.fault(b.icmp_signed("!=", c, total), "RUNTIME_VALID_REGION",
             "dst's valid columns are not src0's plus src1's", expected="dst.valid_cols = {0}", actual="{1}",
             details=[total, c])
    cg.check_read(s0, r, c0, "src0")
    cg.check_read(s1, r, c1, "src1")
    with cg.loop(0, r, name="cat.r") as i:
        with cg.loop(0, c0, name="cat.a") as j:
            dst.store_raw(b, i, j, s0.load_raw(b, i, j))
        with cg.loop(0, c1, name="cat.b") as j:
            dst.store_raw(b, i, b.add(c0, j), s1.load_raw(b, i, j))


_PAIR = ("dst0", "dst1")


def _tinterleave(cg: KernelCodegen, op: TileOp) -> None:
    """s[t] = (src0 if t is even else src1)[i, t // 2]; dst0 gets s[0..C), dst1 s[C..2C)."""
    b = cg.b
    d0, d1 = cg.tile(op, "dst0"), cg.tile(op, "dst1")
    _same_valid(cg, d0, d1, "dst0", "dst1")
    r, c = d0.vrows, d0.vcols
    s0, s1 = _source(cg, op, "src0", _PAIR), _source(cg, op, "src1", _PAIR)
    cg.check_read(s0, r, c, "src0")
    cg.check_read(s1, r, c, "src1")

    def stream(i: ir.Value, t: ir.Value) -> ir.Value:
        k = b.lshr(t, _c(1))
        odd = b.trunc(t, I1)
        return b.select(odd, s1.load_raw(b, i, k), s0.load_raw(b, i, k))

    with cg.loop(0, r, name="il.r") as i:
        with cg.loop(0, c, name="il.c") as j:
            d0.store_raw(b, i, j, stream(i, j))
            d1.store_raw(b, i, j, stream(i, b.add(c, j)))


def _tdeinterleave(cg: KernelCodegen, op: TileOp) -> None:
    """dst0[i, k] = s[2k], dst1[i, k] = s[2k + 1]; s is src0 ++ src1 (two sources) or src0."""
    b = cg.b
    d0, d1 = cg.tile(op, "dst0"), cg.tile(op, "dst1")
    _same_valid(cg, d0, d1, "dst0", "dst1")
    r, c = d0.vrows, d0.vcols
    s0 = _source(cg, op, "src0", _PAIR)
    if "src1" in op.args:
        s1 = _source(cg, op, "src1", _PAIR)
        cg.check_read(s0, r, c, "src0")
        cg.check_read(s1, r, c, "src1")
        last = b.sub(c, _c(1))

        def stream(i: ir.Value, t: ir.Value) -> ir.Value:
            first = b.icmp_signed("<", t, c)
            a = s0.load_raw(b, i, b.select(first, t, last))           # both addresses stay in range
            z = s1.load_raw(b, i, b.select(first, _c(0), b.sub(t, c)))
            return b.select(first, a, z)
    else:
        cg.check_read(s0, r, b.mul(c, _c(2)), "src0")

        def stream(i: ir.Value, t: ir.Value) -> ir.Value:
            return s0.load_raw(b, i, t)

    with cg.loop(0, r, name="dil.r") as i:
        with cg.loop(0, c, name="dil.c") as k:
            even = b.shl(k, _c(1))
            d0.store_raw(b, i, k, stream(i, even))
            d1.store_raw(b, i, k, stream(i, b.add(even, _c(1))))


def _thistogram(cg: KernelCodegen, op: TileOp) -> None:
    """One row at a time: 256 i32 counters on the stack, zeroed, bumped per kept element,
    stored as the row's bins."""
    b = cg.b
    dst, src = cg.tile(op, "dst"), cg.tile(op, "src")
    byte = cg.attrs(op)["byte"].value          # HistByte: the byte's number
    width = src.dtype.itemsize
    upper = tuple(range(width - 1, byte, -1))
    r, c = src.vrows, src.vcols
    bad = b.or_(b.icmp_signed("!=", dst.vrows, r), b.icmp_signed("!=", dst.vcols, _c(BINS)))
    cg.fault(bad, "RUNTIME_VALID_REGION", "dst's valid region is not one row of 256 bins per source row",
             expected="{0}x256", actual="{1}x{2}", details=[r, dst.vrows, dst.vcols])
    idx = cg.tile(op, "idx") if upper else None
    filters: list[ir.Value] = []
    if idx is not None:
        if width == 2:
            cg.check_read(idx, r, _c(1), "idx")
        else:
            cg.check_read(idx, _c(len(upper)), _c(1), "idx")
            filters = [b.zext(idx.load_raw(b, _c(m), _c(0)), I64) for m in range(len(upper))]
    counts = cg.alloca(ir.ArrayType(I32, BINS), "hist")

    def slot(k: ir.Value) -> ir.Value:
        return b.gep(counts, [_c(0), k], inbounds=True)

    def byte_of(x: ir.Value, n: int) -> ir.Value:
        return b.and_(b.lshr(x, _c(8 * n)), _c(0xFF))

    with cg.loop(0, r, name="h.r") as i:
        with cg.loop(0, BINS, name="h.z") as k:
            b.store(_c(0, I32), slot(k))
        want = [b.zext(idx.load_raw(b, i, _c(0)), I64)] if idx is not None and width == 2 else filters
        with cg.loop(0, c, name="h.c") as j:
            x = b.zext(src.load_raw(b, i, j), I64)
            keep: ir.Value = _c(1, I1)
            for n, f in zip(upper, want):
                keep = b.and_(keep, b.icmp_unsigned("==", byte_of(x, n), f))
            p = slot(byte_of(x, byte))
            old = b.load(p, typ=I32)
            b.store(b.add(old, b.zext(keep, I32)), p)
        with cg.loop(0, BINS, name="h.s") as k:
            dst.store_raw(b, i, k, b.load(slot(k), typ=I32))


RULES: dict[str, Callable[[KernelCodegen, TileOp], None] | Any] = {
    "TCONCAT": _tconcat,
    "TINTERLEAVE": _tinterleave,
    "TDEINTERLEAVE": _tdeinterleave,
    "THISTOGRAM": _thistogram,
}
