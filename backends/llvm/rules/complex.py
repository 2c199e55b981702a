"""llvm lowering rules: complex instructions (sorts, gathers/scatters, index and triangle
generators, partial-region arithmetic, quantisation, debug printing).

Every run-time index (index tiles, byte offsets) is range-checked in a separate pass before
any element moves, with the RUNTIME_* code ``isa/families/complex.py`` raises; operands that
the reference reads as a copy before writing (an input that is also the destination) are
snapshotted on the stack first, so aliasing gives the reference's result.

TPRINT calls through the global function pointer ``@pto_print_hook`` (null: nothing is
printed). Compiled code is cached across processes, so the address is never baked in: the
runtime calls ``install_hooks(loaded)`` after linking, which stores the address of a
process-wide cffi callback in that global.
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable

from llvmlite import ir

from ....assembler.ir import TileOp
from ....isa import dtypes as dt
from ....isa.attrs import CmpMode, GatherAxis, MaskPattern, QuantType, ScatterAxis
from ....isa.families.complex import MERGE_BLOCK, MERGE_REPEATS
from ....isa.types import Layout
from .. import numerics as N
from ...maprules import Access, MapRule
from ..codegen import KernelCodegen, TileRef
from ..scalars import is_signed, resize

I1, I8, I16, I32, I64, F32, PTR = N.I1, N.I8, N.I16, N.I32, N.I64, N.F32, N.PTR
VOID = ir.VoidType()
SORT_BLOCK = 32
BLOCK_BYTES = 32
PRINT_HOOK = "pto_print_hook"


def _c(v: int, ty: ir.IntType = I64) -> ir.Constant:
    return ir.Constant(ty, v)


# ----------------------------------------------------------------------------- small helpers

def _var(cg: KernelCodegen, ty: ir.Type, init: ir.Value, name: str = "v") -> ir.Value:
    """A stack slot initialised here (LLVM promotes it to a register)."""
    slot = cg.alloca(ty, name)
    cg.b.store(init, slot)
    return slot


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def _snapshot(cg: KernelCodegen, t: TileRef) -> TileRef:
    """A copy of ``t``'s whole storage in workspace scratch (for an input that is also the
    destination; tiles may be far larger than a thread's stack)."""
    nbytes = t.rows * t.cols * t.dtype.itemsize
    buf = cg.scratch(nbytes)
    name = "llvm.memcpy.p0.p0.i64"
    memcpy = cg.module.globals.get(name) or ir.Function(cg.module, ir.FunctionType(VOID, [PTR, PTR, I64, I1]), name)
    cg.b.call(memcpy, [buf, t.ptr, _c(nbytes), ir.Constant(I1, 0)])
    return TileRef(t.name + ".copy", t.type, buf, t.vrows, t.vcols, t.static_valid)


def _input(cg: KernelCodegen, op: TileOp, name: str, dst: str = "dst") -> TileRef:
    """Operand ``name``, snapshotted when it names the same buffer as ``dst``."""
    t = cg.tile(op, name)
    same = getattr(op.args.get(name), "name", None) == getattr(op.args.get(dst), "name", 0)
    return _snapshot(cg, t) if same else t


def _index(b: ir.IRBuilder, t: TileRef, i: ir.Value, j: ir.Value) -> ir.Value:
    """An index-tile element as i64 (sign- or zero-extended by its dtype)."""
    v = t.load_raw(b, i, j)
    return b.sext(v, I64) if t.dtype.kind == "int" else b.zext(v, I64)


def _check_indices(cg: KernelCodegen, t: TileRef, rows: ir.Value, cols: ir.Value,
                   value: Callable[[ir.Value, ir.Value], ir.Value], limit: ir.Value, what: str) -> None:
    """Every ``value(i, j)`` over rows x cols lies in [0, limit), else RUNTIME_OOB at the first
    bad one in row-major order. A branch-free pass (vectorisable) decides; the slow search
    for the first bad entry runs only on failure."""
    b = cg.b
    anybad = _var(cg, I1, ir.Constant(I1, 0), "anybad")
    with cg.loop(0, rows, name="ck.r") as i:
        with cg.loop(0, cols, name="ck.c") as j:
            v = value(i, j)
            bad = b.icmp_unsigned(">=", v, limit)      # negatives are huge unsigned
            b.store(b.or_(b.load(anybad, typ=I1), bad), anybad)
    with cg.if_then(b.load(anybad, typ=I1)):
        with cg.loop(0, rows, name="ckf.r") as i:
            with cg.loop(0, cols, name="ckf.c") as j:
                v = value(i, j)
                cg.fault(b.icmp_unsigned(">=", v, limit), "RUNTIME_OOB", f"{what} out of range",
                         expected="values in [0, {0})", actual="{1} at [{2}, {3}]", details=[limit, v, i, j])


def _isnan(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.fcmp_unordered("uno", x, x)


def _greater(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """The sort order's strict 'x before y': NaN above everything, -0 == +0."""
    if isinstance(x.type, ir.FloatType):
        return b.or_(b.and_(_isnan(b, x), b.not_(_isnan(b, y))), b.fcmp_ordered(">", x, y))
    return b.icmp_signed(">", x, y)


def _sort_key(b: ir.IRBuilder, d: dt.DType, raw: ir.Value) -> ir.Value:
    """A sort key: f32 for floats, i32 for integers (exact for every sortable dtype)."""
    v = N.load(b, d, raw)
    if d.is_float:
        return v
    return b.sext(v, I32) if v.type.width < 32 else v


# ----------------------------------------------------------------------------- TSORT32

def _tsort32(cg: KernelCodegen, op: TileOp) -> None:
    b = cg.b
    dst, src, idx = cg.tile(op, "dst"), cg.tile(op, "src"), cg.tile(op, "idx")
    d = src.dtype
    per = 8 // d.itemsize
    rows, n = src.vrows, src.vcols
    cg.check_write(dst, rows, b.mul(n, _c(per)), "dst")
    cg.check_read(idx, rows, n, "idx")
    key_ty = F32 if d.is_float else I32
    keys, raws, idxs = (cg.alloca(ty, "sort." + n, size=SORT_BLOCK)
                        for ty, n in ((key_ty, "keys"), (src.elem, "raws"), (I32, "idxs")))
    pos = cg.alloca(I64, "sort.pos")

    def at(arr: ir.Value, ty: ir.Type, k: ir.Value) -> ir.Value:
        return b.gep(arr, [k], inbounds=True, source_etype=ty)

    with cg.loop(0, rows, name="s.r") as i:
        with cg.loop(0, n, SORT_BLOCK, name="s.blk") as s:
            length = _min(b, _c(SORT_BLOCK), b.sub(n, s))
            with cg.loop(0, length, name="s.k") as k:   # stable insertion sort of one block
                raw = src.load_raw(b, i, b.add(s, k))
                key = _sort_key(b, d, raw)
                ix = idx.load_raw(b, i, b.add(s, k))
                b.store(k, pos)

                def moves() -> ir.Value:
                    """The new record goes before its predecessor: greater value, or an equal
                    value with a smaller (unsigned) index."""
                    p = b.load(pos, typ=I64)
                    live = b.icmp_signed(">", p, _c(0))
                    prev = b.select(live, b.sub(p, _c(1)), _c(0))
                    pkey = b.load(at(keys, key_ty, prev), typ=key_ty)
                    pix = b.load(at(idxs, I32, prev), typ=I32)
                    tie = b.and_(b.not_(_greater(b, pkey, key)), b.icmp_unsigned("<", ix, pix))
                    return b.and_(live, b.or_(_greater(b, key, pkey), tie))

                with cg.while_(moves, "s.ins"):
                    p = b.load(pos, typ=I64)
                    q = b.sub(p, _c(1))
                    for arr, ty in ((keys, key_ty), (raws, src.elem), (idxs, I32)):
                        b.store(b.load(at(arr, ty, q), typ=ty), at(arr, ty, p))
                    b.store(q, pos)
                p = b.load(pos, typ=I64)
                b.store(key, at(keys, key_ty, p))
                b.store(raw, at(raws, src.elem, p))
                b.store(ix, at(idxs, I32, p))
            with cg.loop(0, length, name="s.out") as k:
                col = b.mul(b.add(s, k), _c(per))
                raw = b.load(at(raws, src.elem, k), typ=src.elem)
                ix = b.load(at(idxs, I32, k), typ=I32)
                dst.store_raw(b, i, col, raw)
                if per == 2:
                    b.store(ix, dst.addr(b, i, b.add(col, _c(1))))
                else:
                    b.store(_c(0, I16), dst.addr(b, i, b.add(col, _c(1))))
                    b.store(b.trunc(ix, I16), dst.addr(b, i, b.add(col, _c(2))))
                    b.store(b.trunc(b.lshr(ix, _c(16, I32)), I16), dst.addr(b, i, b.add(col, _c(3))))


# ----------------------------------------------------------------------------- TMRGSORT

def _tmrgsort(cg: KernelCodegen, op: TileOp) -> None:
    if "blockLen" in op.args:
        _merge_blocks(cg, op)
        return
    b = cg.b
    dst, executed = cg.tile(op, "dst"), cg.tile(op, "executed")
    d = dst.dtype
    per = 8 // d.itemsize
    cg.check_write(executed, _c(1), _c(4), "executed")
    names = [n for n in ("src0", "src1", "src2", "src3") if n in op.args]
    srcs = [_input(cg, op, n) for n in names]
    zero = _c(0)

    def count(t: TileRef) -> ir.Value:
        return b.select(b.icmp_signed(">", t.vrows, zero), b.sdiv(t.vcols, _c(per)), zero)

    lists = [(t, zero, count(t)) for t in srcs]
    used = _merge_heads(cg, dst, zero, lists, count(dst), bool(cg.attrs(op).get("exhausted", False)))
    for m in range(4):
        v = b.trunc(b.load(used[m], typ=I64), I16) if m < len(used) else _c(0, I16)
        executed.store_raw(b, zero, _c(m), v)


def _merge_blocks(cg: KernelCodegen, op: TileOp) -> None:
    """Single-list form: each group of four blockLen-element blocks of src0 merged into the
    same columns of dst; checks in the reference's order."""
    b = cg.b
    dst, src = cg.tile(op, "dst"), _input(cg, op, "src0")
    per = 8 // dst.dtype.itemsize
    zero = _c(0)
    block = cg.scalar(op, "blockLen")
    bad = b.or_(b.icmp_signed("<", block, _c(MERGE_BLOCK)), b.icmp_signed("!=", b.srem(block, _c(MERGE_BLOCK)), zero))
    cg.fault(bad, "RUNTIME_BAD_CONFIG", "blockLen must be a positive multiple of 64",
             expected=f"a multiple of {MERGE_BLOCK}, at least {MERGE_BLOCK}", actual="{0}", details=[block])
    cols = b.select(b.icmp_signed(">", src.vrows, zero), src.vcols, zero)
    group = b.mul(block, _c(4))
    safe = b.select(bad, _c(4 * MERGE_BLOCK), group)
    with cg.if_then(b.icmp_signed(">", cols, zero)):
        wrong = b.or_(b.icmp_signed("!=", b.srem(cols, safe), zero),
                      b.icmp_signed(">", b.sdiv(cols, safe), _c(MERGE_REPEATS)))
        cg.fault(wrong, "RUNTIME_VALID_REGION", "src's valid columns are not 1 to 255 groups of 4 blocks",
                 expected="a multiple of 4 * blockLen = {0}", actual="valid region {1}x{2}",
                 details=[safe, src.vrows, src.vcols])
        cg.check_write(dst, _c(1), cols, "dst")
        records = b.sdiv(block, _c(per))
        with cg.loop(0, b.sdiv(cols, safe), name="mb.g") as g:
            base = b.mul(g, safe)
            lists = [(src, b.add(base, b.mul(block, _c(k))), records) for k in range(4)]
            _merge_heads(cg, dst, base, lists, b.mul(records, _c(4)), False)


def _merge_heads(cg: KernelCodegen, dst: TileRef, at: ir.Value, lists: list[tuple[TileRef, ir.Value, ir.Value]],
                 capacity: ir.Value, exhausted: bool) -> list[ir.Value]:
    """The head merge of ``isa/families/complex.py``: lists are (tile, first column, record
    count) in row 0; records go to dst row 0 from column ``at``. Returns the used counters.

    Each list's head key is kept in a register and only the taken list's is read again; the
    greatest head is found by a tournament (lists 0-1 and 2-3, then the two winners), the left
    side winning ties, which is the earliest list among equal greatest heads, as the head rule
    says. (A chain over the four heads made every record wait on four compares and four loads.)"""
    b = cg.b
    zero, one = _c(0), _c(1)
    per = 8 // dst.dtype.itemsize
    d = dst.dtype
    key_ty = F32 if d.is_float else I32

    def head_ptr(m: int, u: ir.Value) -> ir.Value:
        """Address of list m's record u (its first record when u is past the end: never taken)."""
        t, s0, c = lists[m]
        col = b.add(s0, b.mul(b.select(b.icmp_signed("<", u, c), u, zero), _c(per)))
        return t.addr(b, zero, col)

    def key_at(ptr: ir.Value) -> ir.Value:
        return _sort_key(b, d, b.load(ptr, typ=lists[0][0].elem))

    used = [_var(cg, I64, zero, f"used{m}") for m in range(len(lists))]
    keys = [_var(cg, key_ty, key_at(head_ptr(m, zero)), f"head{m}") for m in range(len(lists))]
    out = _var(cg, I64, zero, "merged")

    def go_on() -> ir.Value:
        live = [b.icmp_signed("<", b.load(u, typ=I64), c) for u, (_, _, c) in zip(used, lists)]
        anylive, alllive = live[0], live[0]
        for v in live[1:]:
            anylive, alllive = b.or_(anylive, v), b.and_(alllive, v)
        ok = b.and_(b.icmp_signed("<", b.load(out, typ=I64), capacity), anylive)
        return b.and_(ok, alllive) if exhausted else ok

    def pick(left: tuple, right: tuple) -> tuple:
        """(live, key, list) of the winner: the right one only when it is live and greater."""
        (ll, lk, lm), (rl, rk, rm) = left, right
        take = b.and_(rl, b.or_(b.not_(ll), _greater(b, rk, lk)))
        return b.or_(ll, rl), b.select(take, rk, lk), b.select(take, rm, lm)

    with cg.while_(go_on, "merge"):
        us = [b.load(u, typ=I64) for u in used]
        cands = [(b.icmp_signed("<", u, c), b.load(k, typ=key_ty), _c(m))
                 for m, (u, k, (_, _, c)) in enumerate(zip(us, keys, lists))]
        while len(cands) > 1:
            cands = [pick(cands[i], cands[i + 1]) if i + 1 < len(cands) else cands[i]
                     for i in range(0, len(cands), 2)]
        best = cands[0][2]
        hits = [b.icmp_signed("==", best, _c(m)) for m in range(len(lists))]
        src, nxt = head_ptr(0, us[0]), head_ptr(0, b.add(us[0], one))
        for m in range(1, len(lists)):
            src = b.select(hits[m], head_ptr(m, us[m]), src)
            nxt = b.select(hits[m], head_ptr(m, b.add(us[m], one)), nxt)
        o = b.load(out, typ=I64)
        rec = b.load(src, typ=I64)
        rec.align = 1          # a record is 8 bytes at any element-aligned address
        st = b.store(rec, dst.addr(b, zero, b.add(at, b.mul(o, _c(per)))))
        st.align = 1
        fresh = key_at(nxt)
        for m in range(len(lists)):
            b.store(b.add(us[m], b.zext(hits[m], I64)), used[m])
            b.store(b.select(hits[m], fresh, b.load(keys[m], typ=key_ty)), keys[m])
        b.store(b.add(o, one), out)
    return used


# ----------------------------------------------------------------------------- TGATHER / TGATHERB / TSCATTER

_PATTERN = {MaskPattern.P0101: (2, 0), MaskPattern.P1010: (2, 1), MaskPattern.P0001: (4, 0),
            MaskPattern.P0010: (4, 1), MaskPattern.P0100: (4, 2), MaskPattern.P1000: (4, 3),
            MaskPattern.P1111: (1, 0)}


def _tgather(cg: KernelCodegen, op: TileOp) -> None:
    if "cdst" in op.args:
        _gather_compare(cg, op)
        return
    if "idx" not in op.args:
        _gather_mask(cg, op)
        return
    b = cg.b
    dst = cg.tile(op, "dst")
    rows, cols = dst.vrows, dst.vcols
    idx = _input(cg, op, "idx")
    src = _input(cg, op, "src")
    cg.check_read(idx, rows, cols, "idx")
    limit = _c(src.rows * src.cols)
    _check_indices(cg, idx, rows, cols, lambda i, j: _index(b, idx, i, j), limit,
                   "idx (flat index into src's static storage)")
    with cg.loop(0, rows, name="g.r") as i:
        with cg.loop(0, cols, name="g.c") as j:
            k = _index(b, idx, i, j)
            dst.store_raw(b, i, j, b.load(src.flat_addr(b, k), typ=src.elem))


def _gather_mask(cg: KernelCodegen, op: TileOp) -> None:
    """Every step-th column of each row (GATHER_ROW) or every step-th row (GATHER_COL). In place
    is safe: the element read, first + step * t, is never before the one written, t."""
    b = cg.b
    dst, src = cg.tile(op, "dst"), cg.tile(op, "src")
    rows, cols = dst.vrows, dst.vcols
    attrs = cg.attrs(op)
    step, first = _PATTERN[attrs.get("maskPattern") or MaskPattern.P1111]
    along_rows = (attrs.get("gatherType") or GatherAxis.GATHER_ROW) is GatherAxis.GATHER_ROW
    kept = cols if along_rows else rows
    span = b.select(b.icmp_signed(">", kept, _c(0)),
                    b.add(_c(first + 1), b.mul(_c(step), b.sub(kept, _c(1)))), _c(0))
    cg.check_read(src, rows, span, "src") if along_rows else cg.check_read(src, span, cols, "src")
    with cg.loop(0, rows, name="g.r") as i:
        with cg.loop(0, cols, name="g.c") as j:
            if along_rows:
                v = src.load_raw(b, i, b.add(_c(first), b.mul(j, _c(step))))
            else:
                v = src.load_raw(b, b.add(_c(first), b.mul(i, _c(step))), j)
            dst.store_raw(b, i, j, v)


def _threshold(cg: KernelCodegen, k: TileRef, i: ir.Value, d: dt.DType) -> ir.Value:
    """Row i's threshold in src's compute type: rounded once to a float dtype (an i64 holds every
    threshold exactly; f32 is exact below 2**24 and f16 overflows above 65520, so rounding to f16
    through f32 is a single rounding), wrapped to an integer one."""
    b = cg.b
    v = _index(b, k, i, _c(0))
    if d.is_float:
        return N.round_to(b, d, b.sitofp(v, F32))
    ty = N.compute(d)
    return b.trunc(v, ty) if ty.width < 64 else v


def _gather_compare(cg: KernelCodegen, op: TileOp) -> None:
    """The compare form: per row, the positions that pass, compacted from column 0, and their count."""
    b = cg.b
    dst, cnt = cg.tile(op, "dst"), cg.tile(op, "cdst")
    src, k = _input(cg, op, "src"), _input(cg, op, "idx")
    rows, cols = src.vrows, src.vcols
    one = b.select(b.icmp_signed(">", rows, _c(0)), _c(1), _c(0))
    cg.check_write(dst, rows, cols, "dst")
    cg.check_write(cnt, rows, one, "cdst")
    cg.check_read(k, rows, one, "idx (per-row thresholds)")
    mode = cg.attrs(op).get("cmpMode") or CmpMode.GT
    offset = cg.scalar(op, "offset")
    offset = _c(0) if offset is None else offset
    d = src.dtype
    found = _var(cg, I64, _c(0), "found")
    with cg.loop(0, rows, name="gc.r") as i:
        kv = _threshold(cg, k, i, d)
        b.store(_c(0), found)
        base = b.add(offset, b.mul(i, _c(src.cols)))
        with cg.loop(0, cols, name="gc.c") as j:
            v = src.load(b, i, j)
            if d.is_float:
                hit = b.fcmp_ordered(">" if mode is CmpMode.GT else "==", v, kv)
            elif mode is CmpMode.GT:
                hit = b.icmp_signed(">", v, kv) if N.signed(d) else b.icmp_unsigned(">", v, kv)
            else:
                hit = b.icmp_unsigned("==", v, kv)
            with cg.if_then(hit):
                n = b.load(found, typ=I64)
                dst.store_raw(b, i, n, b.trunc(b.add(base, j), dst.elem))
                b.store(b.add(n, _c(1)), found)
        cnt.store_raw(b, i, _c(0), b.trunc(b.load(found, typ=I64), cnt.elem))


def _tgatherb(cg: KernelCodegen, op: TileOp) -> None:
    b = cg.b
    dst, offsets = cg.tile(op, "dst"), _input(cg, op, "offsets")
    src = _input(cg, op, "src")
    size = dst.dtype.itemsize
    per_block = BLOCK_BYTES // size
    rows, cols = dst.vrows, dst.vcols
    blocks = b.sdiv(b.add(b.mul(cols, _c(size)), _c(BLOCK_BYTES - 1)), _c(BLOCK_BYTES))
    cg.check_read(offsets, rows, blocks, "offsets")
    nbytes = src.rows * src.cols * src.dtype.itemsize
    limit = _c(max(nbytes - BLOCK_BYTES + 1, 0))
    _check_indices(cg, offsets, rows, blocks, lambda i, j: _index(b, offsets, i, j), limit,
                   "offsets (start of a 32-byte block of src)")
    column_major = src.type.layout is Layout.DN
    with cg.loop(0, rows, name="gb.r") as i:
        with cg.loop(0, cols, name="gb.c") as j:
            start = _index(b, offsets, i, b.udiv(j, _c(per_block)))
            byte = b.add(start, b.mul(b.urem(j, _c(per_block)), _c(size)))
            if not column_major:
                v = b.load(b.gep(src.ptr, [byte], inbounds=True, source_etype=I8), typ=dst.elem)
                v.align = 1
                dst.store_raw(b, i, j, v)
            out = dst.addr(b, i, j)
            for q in range(size if column_major else 0):   # byte q of the element, from DN storage
                at = b.add(byte, _c(q))
                e = b.udiv(at, _c(size))
                r, c = b.urem(e, _c(src.rows)), b.udiv(e, _c(src.rows))
                phys = b.add(b.mul(b.add(b.mul(r, _c(src.cols)), c), _c(size)), b.urem(at, _c(size)))
                v = b.load(b.gep(src.ptr, [phys], inbounds=True, source_etype=I8), typ=I8)
                b.store(v, b.gep(out, [_c(q)], inbounds=True, source_etype=I8))


def _tscatter(cg: KernelCodegen, op: TileOp) -> None:
    if "idx" not in op.args:
        _scatter_mask(cg, op)
        return
    b = cg.b
    dst = cg.tile(op, "dst")
    src, idx = _input(cg, op, "src"), _input(cg, op, "idx")
    rows, cols = src.vrows, src.vcols
    cg.check_read(idx, rows, cols, "idx")
    _check_indices(cg, idx, rows, cols, lambda i, j: _index(b, idx, i, j), _c(dst.rows * dst.cols),
                   "idx (flat offset into dst's static storage)")
    with cg.loop(0, rows, name="sc.r") as i:       # row-major: the last writer wins
        with cg.loop(0, cols, name="sc.c") as j:
            b.store(src.load_raw(b, i, j), dst.flat_addr(b, _index(b, idx, i, j)))


def _scatter_mask(cg: KernelCodegen, op: TileOp) -> None:
    """src's columns (rows) spread to every step-th one of dst from the pattern's first, zeros
    between; dst's valid region must be exactly src's spread."""
    b = cg.b
    dst, src = cg.tile(op, "dst"), _input(cg, op, "src")
    attrs = cg.attrs(op)
    step, first = _PATTERN[attrs.get("maskPattern") or MaskPattern.P1111]
    along_rows = (attrs.get("scatterType") or ScatterAxis.SCATTER_ROW) is ScatterAxis.SCATTER_ROW
    rows, cols = src.vrows, src.vcols
    want_r, want_c = (rows, b.mul(cols, _c(step))) if along_rows else (b.mul(rows, _c(step)), cols)
    bad = b.or_(b.icmp_signed("!=", dst.vrows, want_r), b.icmp_signed("!=", dst.vcols, want_c))
    cg.fault(bad, "RUNTIME_VALID_REGION", "TSCATTER mask form: dst's valid region is not src's spread",
             expected="dst valid region {0}x{1}", actual="{2}x{3}", details=[want_r, want_c, dst.vrows, dst.vcols])
    zero = ir.Constant(dst.elem, 0.0 if isinstance(dst.elem, ir.HalfType | ir.FloatType) else 0)
    with cg.loop(0, want_r, name="sm.r") as i:
        with cg.loop(0, want_c, name="sm.c") as j:
            spread = j if along_rows else i
            keep = b.icmp_unsigned("==", b.urem(spread, _c(step)), _c(first))
            at = b.udiv(spread, _c(step))
            v = src.load_raw(b, i, at) if along_rows else src.load_raw(b, at, j)
            dst.store_raw(b, i, j, b.select(keep, v, zero))


# ----------------------------------------------------------------------------- TCI / TTRI

def _tci_float(cg: KernelCodegen, op: TileOp, descending: bool) -> None:
    """start in dst's dtype, then start +- k in f32 per element (not accumulated), rounded once."""
    b = cg.b
    dst = cg.tile(op, "dst")
    start = cg.scalar(op, "start")
    st = op.args["start"].type   # type: ignore[union-attr]
    if not st.is_float:     # an integer through f64 and f32, as the reference converts it
        wide = b.sitofp(start, N.F64) if is_signed(st) else b.uitofp(start, N.F64)
        start = b.fptrunc(wide, N.F32)
    s = N.round_to(b, dst.dtype, start)
    with cg.if_then(b.icmp_signed(">", dst.vrows, _c(0))):
        with cg.loop(0, dst.vcols, name="ci") as k:
            kf = b.uitofp(k, N.F32)
            dst.store(b, _c(0), k, b.fsub(s, kf) if descending else b.fadd(s, kf))


def _tci(cg: KernelCodegen, op: TileOp) -> None:
    b = cg.b
    dst = cg.tile(op, "dst")
    descending = bool(cg.attrs(op).get("descending", False))
    if dst.dtype.is_float:
        _tci_float(cg, op, descending)
        return
    ty: ir.IntType = dst.elem
    start = cg.scalar(op, "start")
    st = op.args["start"].type   # type: ignore[union-attr]
    base = resize(b, start, is_signed(st), ty)     # int(start) wrapped into dst's width
    with cg.if_then(b.icmp_signed(">", dst.vrows, _c(0))):
        with cg.loop(0, dst.vcols, name="ci") as k:
            kk = b.trunc(k, ty) if ty.width < 64 else k
            dst.store_raw(b, _c(0), k, b.sub(base, kk) if descending else b.add(base, kk))


def _ttri(cg: KernelCodegen, op: TileOp) -> None:
    b = cg.b
    dst = cg.tile(op, "dst")
    rows, cols = dst.vrows, dst.vcols
    bound = b.add(rows, cols)
    d = _min(b, cg.scalar(op, "diagonal"), bound)     # an exact i64 (cg.scalar widens index operands)
    nb = b.neg(bound)
    d = b.select(b.icmp_signed("<", d, nb), nb, d)
    upper = bool(cg.attrs(op).get("upper", False))
    ct = N.compute(dst.dtype)
    one, nought = (ir.Constant(ct, 1.0), ir.Constant(ct, 0.0)) if dst.dtype.is_float else \
        (ir.Constant(ct, 1), ir.Constant(ct, 0))
    with cg.loop(0, rows, name="tri.r") as i:
        edge = b.add(i, d)
        with cg.loop(0, cols, name="tri.c") as j:
            cond = b.icmp_signed(">=" if upper else "<=", j, edge)
            dst.store(b, i, j, b.select(cond, one, nought))


# ----------------------------------------------------------------------------- TPART*

def _signbit(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.icmp_signed("<", b.bitcast(x, I32), _c(0, I32))


def _arith(kind: str) -> Callable[[ir.IRBuilder, dt.DType, ir.Value, ir.Value], ir.Value]:
    def combine(b: ir.IRBuilder, d: dt.DType, ra: ir.Value, rb: ir.Value) -> ir.Value:
        x, y = N.load(b, d, ra), N.load(b, d, rb)
        if d.is_float:
            return N.store(b, d, (b.fadd if kind == "add" else b.fmul)(x, y))
        return (b.add if kind == "add" else b.mul)(x, y)
    return combine


def _extreme(is_max: bool) -> Callable[[ir.IRBuilder, dt.DType, ir.Value, ir.Value], ir.Value]:
    """IEEE maximum/minimum as the reference computes it (a NaN operand is returned, the
    first when both are; -0 < +0), selecting the operands' stored bits."""
    def combine(b: ir.IRBuilder, d: dt.DType, ra: ir.Value, rb: ir.Value) -> ir.Value:
        x, y = N.load(b, d, ra), N.load(b, d, rb)
        if not d.is_float:
            cmp = b.icmp_signed if d.kind == "int" else b.icmp_unsigned
            return b.select(cmp(">" if is_max else "<", x, y), x, y)
        tie = b.fcmp_ordered("==", x, y)
        sign = _signbit(b, x)
        strict = b.fcmp_ordered(">" if is_max else "<", x, y)
        pick_x = b.or_(strict, b.and_(tie, b.not_(sign) if is_max else sign))
        pick_x = b.or_(_isnan(b, x), b.and_(b.not_(_isnan(b, y)), pick_x))
        out = b.select(pick_x, ra, rb)
        if d.name == "bf16":        # the reference rounds through f32: NaN becomes sign | 0x7fc0
            nan = b.or_(_isnan(b, x), _isnan(b, y))
            out = b.select(nan, b.or_(b.and_(out, _c(0x8000, I16)), _c(0x7FC0, I16)), out)
        return out
    return combine


def _tpart(combine: Callable[[ir.IRBuilder, dt.DType, ir.Value, ir.Value], ir.Value]) -> Callable[..., None]:
    def rule(cg: KernelCodegen, op: TileOp) -> None:
        b = cg.b
        dst, s0, s1 = cg.tile(op, "dst"), cg.tile(op, "src0"), cg.tile(op, "src1")
        rows, cols = dst.vrows, dst.vcols
        r0, c0 = _min(b, rows, s0.vrows), _min(b, cols, s0.vcols)
        r1, c1 = _min(b, rows, s1.vrows), _min(b, cols, s1.vcols)
        zero = _c(0)
        top = b.select(b.icmp_signed(">", r0, r1), r0, r1)
        with cg.loop(0, top, name="part.r") as i:
            a = b.select(b.icmp_signed("<", i, r0), c0, zero)
            c = b.select(b.icmp_signed("<", i, r1), c1, zero)
            both = _min(b, a, c)
            with cg.loop(0, both, name="part.both") as j:   # each element reads only its own place
                dst.store_raw(b, i, j, combine(b, dst.dtype, s0.load_raw(b, i, j), s1.load_raw(b, i, j)))
            with cg.loop(both, a, name="part.only0") as j:
                dst.store_raw(b, i, j, s0.load_raw(b, i, j))
            with cg.loop(both, c, name="part.only1") as j:
                dst.store_raw(b, i, j, s1.load_raw(b, i, j))
    return rule


# ----------------------------------------------------------------------------- TQUANT

_QUANT_RANGE = {QuantType.INT8_SYM: (-128, 127), QuantType.INT8_ASYM: (0, 255)}


def _quant_value(cg: KernelCodegen, op: TileOp, vals: list[ir.Value]) -> ir.Value:
    b = cg.b
    x, s, o = vals
    t = b.fmul(x, s)
    if o is not None:
        t = b.fadd(t, o)
    r = cg.intrinsic("llvm.roundeven.f32", F32, [t])
    n = cg.intrinsic("llvm.fptosi.sat.i32.f32", I32, [r])      # NaN -> 0
    lo, hi = _QUANT_RANGE[cg.attrs(op)["quantType"]]
    n = b.select(b.icmp_signed("<", n, _c(lo, I32)), _c(lo, I32), n)
    n = b.select(b.icmp_signed(">", n, _c(hi, I32)), _c(hi, I32), n)
    return b.trunc(n, I8)


def _quant_check(cg: KernelCodegen, op: TileOp) -> None:
    """scale/offset are read as rows x 1 even when dst has no valid column."""
    dst = cg.tile(op, "dst")
    for name in ("scale", "offset"):
        if name in op.args:
            cg.check_read(cg.tile(op, name), dst.vrows, _c(1), name)


# ----------------------------------------------------------------------------- TPRINT

def _tprint(cg: KernelCodegen, op: TileOp) -> None:
    b = cg.b
    src = cg.tile(op, "src")
    mod = cg.module
    fnty = ir.FunctionType(VOID, [PTR, I64, I64, I64, I64, PTR])
    hook = mod.globals.get(PRINT_HOOK)
    if hook is None:
        hook = ir.GlobalVariable(mod, fnty.as_pointer(), PRINT_HOOK)
        hook.initializer = ir.Constant(fnty.as_pointer(), None)
        hook.align = 8
    name = f"pto_print_dtype.{src.dtype.name}"
    text = mod.globals.get(name)
    if text is None:
        data = bytearray(src.dtype.name.encode() + b"\0")
        text = ir.GlobalVariable(mod, ir.ArrayType(I8, len(data)), name)
        text.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
        text.global_constant = True
        text.linkage = "private"
    fn = b.load(hook, typ=fnty.as_pointer())     # an indirect callee, set by the runtime
    with cg.if_then(b.icmp_unsigned("!=", b.ptrtoint(fn, I64), _c(0))):
        b.call(fn, [src.ptr, _c(src.rows), _c(src.cols), src.vrows, src.vcols, text])


_HOOKS: dict[str, Any] = {}


def _print_callback() -> Any:
    """The process-wide cffi callback behind ``@pto_print_hook`` (created once, kept alive)."""
    if "print" not in _HOOKS:
        import numpy as np
        from cffi import FFI

        from ....isa.registry import get as instr
        from ....isa.types import TileType
        from ....isa.values import Tile
        ffi = FFI()

        @ffi.callback("void(void*, int64_t, int64_t, int64_t, int64_t, char*)")
        def hook(data: Any, rows: int, cols: int, vr: int, vc: int, name: Any) -> None:
            d = dt.BY_NAME[ffi.string(name).decode()]
            raw = ffi.buffer(data, rows * cols * d.itemsize)
            arr = np.frombuffer(raw, dtype=np.uint8).copy().view(d.np_dtype).reshape(rows, cols)
            instr("TPRINT").semantics(Tile(TileType(rows, cols, d), arr, (vr, vc)))

        _HOOKS["ffi"], _HOOKS["print"] = ffi, hook
        _HOOKS["address"] = int(ffi.cast("intptr_t", hook))
    return _HOOKS["address"]


def install_hooks(loaded: Any) -> None:
    """Point ``@pto_print_hook`` of freshly linked code (a ``target.Loaded``) at the Python
    printer. Call once per ``Loaded``, before running; modules without TPRINT are left alone."""
    addr = loaded._engine.get_global_value_address(PRINT_HOOK)
    if addr:
        ctypes.c_void_p.from_address(addr).value = _print_callback()


RULES: dict[str, Any] = {
    "TSORT32": _tsort32,
    "TMRGSORT": _tmrgsort,
    "TGATHER": _tgather,
    "TGATHERB": _tgatherb,
    "TSCATTER": _tscatter,
    "TCI": _tci,
    "TTRI": _ttri,
    "TPARTADD": _tpart(_arith("add")),
    "TPARTMUL": _tpart(_arith("mul")),
    "TPARTMAX": _tpart(_extreme(True)),
    "TPARTMIN": _tpart(_extreme(False)),
    "TQUANT": MapRule((Access("src", "elem", "src"), Access("scale", "row", "scale"),
                       Access("offset", "row", "offset")), _quant_value, check=_quant_check),
    "TPRINT": _tprint,
}
