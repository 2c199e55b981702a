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


# ----------------------------------------------------------------------------- sort keys

#: below every record's order key: an exhausted merge list's head never wins
NO_KEY = -(1 << 63)


def _order_key(b: ir.IRBuilder, d: dt.DType, bits: ir.Value) -> ir.Value:
    """An i64 whose signed order is the sort order of a sortable value given as its stored
    bits (an integer of the dtype's width): floats as sign-and-magnitude read as a signed
    integer, so -0 and +0 both give 0 and every NaN one key above +inf; integers
    sign-extended. Every key fits in 32 signed bits, so ``NO_KEY`` is below all of them, and
    one integer compare replaces a NaN-aware float compare."""
    if not d.is_float:
        return b.sext(bits, I64) if bits.type.width < 64 else bits
    w = d.itemsize * 8
    ty = ir.IntType(w)
    inf = (1 << (w - 1)) - (1 << {16: 10, 32: 23}[w])       # the bits of +inf
    mag = b.and_(bits, ir.Constant(ty, (1 << (w - 1)) - 1))
    key = b.select(b.icmp_signed("<", bits, ir.Constant(ty, 0)), b.neg(mag), mag)
    key = b.select(b.icmp_unsigned(">", mag, ir.Constant(ty, inf)), ir.Constant(ty, inf + 1), key)
    return b.sext(key, I64)


def _opaque(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """``v`` through an empty inline-asm copy (no instruction is emitted), which LLVM cannot
    see through. The merge's four list heads are otherwise packed into one vector register
    by the SLP vectoriser, putting lane moves on every pick's critical path (8 ns a record
    instead of 5.4, before the merge read one record ahead)."""
    return b.call(ir.InlineAsm(ir.FunctionType(v.type, [v.type]), "", "=r,0"), [v])


def _bits(b: ir.IRBuilder, raw: ir.Value) -> ir.Value:
    """A stored element's bits as an integer of its width."""
    if isinstance(raw.type, ir.IntType):
        return raw
    return b.bitcast(raw, ir.IntType(16 if isinstance(raw.type, ir.HalfType) else 32))


# ----------------------------------------------------------------------------- TSORT32

def _tsort32(cg: KernelCodegen, op: TileOp) -> None:
    """Per block of up to 32 elements, a rank sort: every record's composite key (order key
    above, the complemented index below, so the smaller unsigned index is the greater) is
    compared with the block's 32 keys held in vector registers, and the record goes to the
    count of those before it: greater, or equal at an earlier position. One compare per
    lane does both, against the key minus one in the earlier lanes; a popcount of the mask
    gives the rank. A partial block's missing keys are ``NO_KEY``, which never counts.
    (A stable insertion sort moved three arrays per step and branched on every compare:
    11 ns an element, this 2.7 on AVX-512.)"""
    b = cg.b
    dst, src, idx = cg.tile(op, "dst"), cg.tile(op, "src"), cg.tile(op, "idx")
    d = src.dtype
    per = 8 // d.itemsize
    rows, n = src.vrows, src.vcols
    cg.check_write(dst, rows, b.mul(n, _c(per)), "dst")
    cg.check_read(idx, rows, n, "idx")
    vec, mask, mask_int = ir.VectorType(I64, SORT_BLOCK), ir.VectorType(I1, SORT_BLOCK), ir.IntType(SORT_BLOCK)
    splat = ir.Constant(ir.VectorType(I32, SORT_BLOCK), [0] * SORT_BLOCK)     # lane 0 everywhere
    keys = cg.alloca(I64, "sort.keys", size=SORT_BLOCK)
    recs = cg.alloca(I64, "sort.recs", size=SORT_BLOCK)

    def at(arr: ir.Value, k: ir.Value) -> ir.Value:
        return b.gep(arr, [k], inbounds=True, source_etype=I64)

    with cg.loop(0, rows, name="s.r") as i:
        with cg.loop(0, n, SORT_BLOCK, name="s.blk") as s:
            length = _min(b, _c(SORT_BLOCK), b.sub(n, s))
            with cg.loop(0, length, name="s.in") as k:
                bits = _bits(b, src.load_raw(b, i, b.add(s, k)))
                ix = b.zext(idx.load_raw(b, i, b.add(s, k)), I64)
                key = _order_key(b, d, bits)
                b.store(b.or_(b.shl(key, _c(32)), b.xor(ix, _c(0xFFFFFFFF))), at(keys, k))
                b.store(b.or_(b.zext(bits, I64), b.shl(ix, _c(32))), at(recs, k))
            with cg.loop(length, SORT_BLOCK, name="s.pad") as k:
                b.store(_c(NO_KEY), at(keys, k))
            block = b.load(keys, typ=vec)        # the block's 32 keys in vector registers
            block.align = 8
            with cg.loop(0, length, name="s.out") as k:
                mine = b.load(at(keys, k), typ=I64)
                undef = ir.Constant(vec, ir.Undefined)
                same = b.shuffle_vector(b.insert_element(undef, mine, _c(0, I32)), undef, splat)
                earlier = b.bitcast(b.trunc(b.sub(b.shl(_c(1), k), _c(1)), mask_int), mask)
                # before: greater, or (earlier lanes) not smaller, i.e. greater than mine - 1
                before = b.icmp_signed(">", block, b.sub(same, b.zext(earlier, vec)))
                rank = b.zext(cg.intrinsic(f"llvm.ctpop.i{SORT_BLOCK}", mask_int, [b.bitcast(before, mask_int)]), I64)
                # mine - 1 wraps for the least key: then every earlier lane counts, none did
                rank = b.add(rank, b.select(b.icmp_signed("==", mine, _c(NO_KEY)), k, _c(0)))
                col = b.mul(b.add(s, rank), _c(per))
                st = b.store(b.load(at(recs, k), typ=I64), dst.addr(b, i, col))
                st.align = d.itemsize      # a record is 8 bytes at any element-aligned address


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
        v = b.trunc(used[m], I16) if m < len(used) else _c(0, I16)
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
    count) in row 0; records go to dst row 0 from column ``at``. Returns the used counts.

    A list's head is one integer, its order key shifted left by two with the list's rank
    from the end (3 - m) below it, so the greatest of them is the greatest head with ties to
    the earliest list, as the head rule says. A tournament (lists 0-1 and 2-3, then the
    winners) finds it with one integer compare per match, the winner's record address and
    end travelling with its head. An exhausted list's head is ``NO_KEY``, below every
    record, so no pick tests liveness: the merge runs min(capacity, all records) steps
    (exhausted mode also stops when the taken list runs out). Each list also holds its next
    record's head integer, read one win ahead, so a pick waits on the tournament and a
    select rather than on a load and a key computation. (Liveness tests and NaN-aware float
    compares in every pick cost 10.6 ns a record; this 3.5 in a 4096-record pass.)"""
    b = cg.b
    zero = _c(0)
    d = dst.dtype
    width = ir.IntType(d.itemsize * 8)
    starts = [b.ptrtoint(t.addr(b, zero, s0), I64) for t, s0, _ in lists]
    ends = [b.add(p, b.mul(c, _c(8))) for p, (_, _, c) in zip(starts, lists)]
    unpredictable = cg.module.add_metadata([])

    def select(cond: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
        """A select LLVM keeps branch-free (the merge's picks follow the data)."""
        v = b.select(cond, x, y)
        v.set_metadata("unpredictable", unpredictable)
        return v

    def record(addr: ir.Value) -> ir.Value:
        rec = b.load(b.inttoptr(addr, PTR), typ=I64)
        rec.align = d.itemsize      # a record is 8 bytes at any element-aligned address
        return rec

    def head(addr: ir.Value, end: ir.Value, rank: ir.Value, safe: ir.Value) -> ir.Value:
        """The head integer of the record at ``addr``; ``NO_KEY`` (reading ``safe``, a
        valid address, instead) when it is past the list's end."""
        live = b.icmp_unsigned("<", addr, end)
        rec = record(select(live, addr, safe))
        return select(live, b.or_(b.shl(_order_key(b, d, b.trunc(rec, width)), _c(2)), rank),
                      b.or_(_c(NO_KEY), rank))

    # the first record's address is inside the tile even for an empty list (as the reference reads)
    heads = [_var(cg, I64, _opaque(b, head(p, e, _c(3 - m), p)), f"head{m}")
             for m, (p, e) in enumerate(zip(starts, ends))]
    ahead = [_var(cg, I64, _opaque(b, head(b.add(p, _c(8)), e, _c(3 - m), p)), f"ahead{m}")
             for m, (p, e) in enumerate(zip(starts, ends))]
    reads = [_var(cg, I64, p, f"read{m}") for m, p in enumerate(starts)]
    counts = [c for _, _, c in lists]
    total = counts[0]
    alive = ir.Constant(I1, 1)
    for c in counts[1:]:
        total = b.add(total, c)
    for c in counts if exhausted else ():
        alive = b.and_(alive, b.icmp_signed(">", c, zero))
    total = _min(b, total, capacity)
    out = _var(cg, I64, zero, "merged")
    going = _var(cg, I1, alive, "alive")
    target = dst.addr(b, zero, at)

    def go_on() -> ir.Value:
        return b.and_(b.icmp_signed("<", b.load(out, typ=I64), total), b.load(going, typ=I1))

    def match(left: tuple, right: tuple) -> tuple:
        """(head, address, end) of the winner: the right one only when its head is greater."""
        take = b.icmp_signed(">", right[0], left[0])
        return tuple(select(take, r, lv) for lv, r in zip(left, right))

    with cg.while_(go_on, "merge"):
        hs = [b.load(h, typ=I64) for h in heads]
        rs = [b.load(r, typ=I64) for r in reads]
        cands = list(zip(hs, rs, ends))
        while len(cands) > 1:
            cands = [match(cands[i], cands[i + 1]) if i + 1 < len(cands) else cands[i]
                     for i in range(0, len(cands), 2)]
        top, addr, end = cands[0]
        rank = b.and_(top, _c(3))
        o = b.load(out, typ=I64)
        st = b.store(record(addr), b.gep(target, [o], inbounds=True, source_etype=I64))
        st.align = d.itemsize
        nxt = b.add(addr, _c(8))
        fresh = head(b.add(addr, _c(16)), end, rank, addr)
        for m in range(len(lists)):
            hit = b.icmp_unsigned("==", rank, _c(3 - m))
            a = b.load(ahead[m], typ=I64)
            b.store(_opaque(b, select(hit, a, hs[m])), heads[m])
            b.store(_opaque(b, select(hit, fresh, a)), ahead[m])
            b.store(select(hit, nxt, rs[m]), reads[m])
        b.store(b.add(o, _c(1)), out)
        if exhausted:
            b.store(b.icmp_unsigned("<", nxt, end), going)
    return [b.sdiv(b.sub(b.load(r, typ=I64), p), _c(8)) for r, p in zip(reads, starts)]


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
