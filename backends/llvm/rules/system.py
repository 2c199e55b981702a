"""llvm lowering rules: the cube-vector FIFO, SYNCALL, TPREFETCH_ASYNC, tile views and TRANDOM,
with the meaning ``isa/families/system.py`` gives them and the reference's fault codes.

A FIFO (one per FlagID, per block) lives in the kernel's frame: i64 control registers
(``cg.state``: SlotNum once fixed, head, ready, allocated, held), per-slot records (dtype
code, valid rows and cols; rows = -1 for a slot committed without a tile) and a workspace
buffer of SlotNum x the largest tile any TPUSH/TPOP of that FlagID in the kernel moves.
TRANDOM runs Philox-4x32 per element on i32 words with 64-bit products and an i128 counter.
"""
from __future__ import annotations

import weakref
from typing import Any

from llvmlite import ir

from ....assembler.ir import TileOp
from ....isa import dtypes as dt
from ....isa.attrs import FixpipeQuant, QuantOutType, ReluMode, SyncAllMode, TileSplitAxis
from ....isa.families._prequant import CAST, FIXPIPE_MODES, SCALAR
from ....isa.families.system import (DUAL_SUBBLOCK, FIFO_MNEMONICS as FIFO_OPS, FIXPIPE_LAYOUT, ODD_SPLITS, PHILOX_M,
                                     PHILOX_W, ROWS_SPLITS, VECTOR_SIDE)
from ....isa.types import Layout
from .. import numerics as N
from ..codegen import KernelCodegen
from .movement import _check_window
from .quant import SCALAR_KEY, VECTOR_KEY, prequant_store, quant_slot, relu_f32

I1, I32, I64 = N.I1, N.I32, N.I64
I128 = ir.IntType(128)
_DTYPE_CODE = {d: k for k, d in enumerate(dt.ALL + (dt.HIF8,))}   # hifloat8: a QF322HIF8_PRE slot
_LAYOUT_CODE = {l: k for k, l in enumerate(Layout)}     # an acc slot's layout; -1: any (a vec push)


def _c(v: int, t: ir.IntType = I64) -> ir.Constant:
    return ir.Constant(t, v)


def _whole(cg: KernelCodegen, op: TileOp, name: str, what: str) -> None:
    """RUNTIME_GLOBAL_INDEX unless every written index of a whole-tensor operand is zero."""
    if name not in op.args:
        return
    g = cg.glob(op, name)
    if not g.offsets:
        return
    b = cg.b
    nz = ir.Constant(I1, 0)
    for o in g.offsets:
        nz = b.or_(nz, b.icmp_signed("!=", o, _c(0)))
    details = list(g.offsets[:6])
    cg.fault(nz, "RUNTIME_GLOBAL_INDEX", f"{what} addresses the whole tensor; write it without indices or "
             "with zero indices", expected="all indices 0",
             actual="[" + ", ".join("{%d}" % k for k in range(len(details))) + "]", details=details)

# --------------------------------------------------------------------------- the FIFO


class _Fifo:
    """One FlagID's registers, slot records and data buffer in one kernel."""

    def __init__(self, cg: KernelCodegen, flag_id: int) -> None:
        uses = [s for s in cg.kernel.walk() if isinstance(s, TileOp) and s.instr.mnemonic in FIFO_OPS
                and cg.attrs(s)["FlagID"] == flag_id]
        self.cap = max(cg.attrs(s)["SlotNum"] for s in uses)
        # a vector-side part of a split tile is stored inside its whole tile: up to twice its size
        sizes = [s.args["tile"].type.rows * s.args["tile"].type.cols * s.args["tile"].type.dtype.itemsize
                 * (1 if cg.attrs(s).get("Split", TileSplitAxis.TILE_NO_SPLIT) is TileSplitAxis.TILE_NO_SPLIT
                    else 2) for s in uses if "tile" in s.args]
        self.slot_bytes = max(sizes + [1])
        self.buf = cg.scratch(self.cap * self.slot_bytes)
        key = f"fifo{flag_id}."
        self.slots, self.head, self.ready, self.allocated, self.held = (
            cg.state(key + n, I64, _c(0)) for n in ("slots", "head", "ready", "allocated", "held"))
        # per slot: dtype code, the whole tile's valid rows and cols, split code, both parts pushed,
        # the layout an acc push's fixpipe wrote (-1: none) and whether it went to sub-block 1 alone
        self.dtype, self.rows, self.cols, self.split, self.both, self.layout, self.sub1 = (
            cg.alloca(I64, key + n, size=self.cap)
            for n in ("dtype", "rows", "cols", "split", "both", "layout", "sub1"))


_FIFOS: "weakref.WeakKeyDictionary[KernelCodegen, dict[int, _Fifo]]" = weakref.WeakKeyDictionary()


def _fifo(cg: KernelCodegen, op: TileOp) -> tuple[_Fifo, ir.Value]:
    """The op's FIFO, after the SlotNum check (RUNTIME_FIFO_CONFIG); returns it and SlotNum."""
    a = cg.attrs(op)
    fifos = _FIFOS.setdefault(cg, {})
    f = fifos.get(a["FlagID"])
    if f is None:
        f = fifos[a["FlagID"]] = _Fifo(cg, a["FlagID"])
    b, n = cg.b, _c(a["SlotNum"])
    cur = b.load(f.slots, typ=I64)
    cg.fault(b.and_(b.icmp_signed("!=", cur, _c(0)), b.icmp_signed("!=", cur, n)), "RUNTIME_FIFO_CONFIG",
             f"FIFO {a['FlagID']} used with another SlotNum", expected="SlotNum = {0} (its first use)",
             actual=f"SlotNum = {a['SlotNum']}", details=[cur])
    b.store(n, f.slots)
    return f, n


def _load(cg: KernelCodegen, p: ir.Value) -> ir.Value:
    return cg.b.load(p, typ=I64)


def _add(cg: KernelCodegen, p: ir.Value, d: int) -> None:
    cg.b.store(cg.b.add(_load(cg, p), _c(d)), p)


def _record(cg: KernelCodegen, f: _Fifo, field: ir.Value, pos: ir.Value) -> ir.Value:
    return cg.b.gep(field, [pos], inbounds=True, source_etype=I64)


def _need_space(cg: KernelCodegen, f: _Fifo, n: ir.Value, what: str) -> None:
    b = cg.b
    occ = b.add(b.add(_load(cg, f.ready), _load(cg, f.allocated)), _load(cg, f.held))
    cg.fault(b.icmp_signed(">=", occ, n), "RUNTIME_FIFO_FULL", f"{what} into a FIFO with every slot taken",
             expected="fewer than {0} occupied slots", actual="{1} occupied", details=[n, occ])


def _need_ready(cg: KernelCodegen, f: _Fifo, n: ir.Value) -> ir.Value:
    """The head slot's position, after the empty check; the slot leaves the ready queue."""
    b = cg.b
    ready = _load(cg, f.ready)
    cg.fault(b.icmp_signed("==", ready, _c(0)), "RUNTIME_FIFO_EMPTY", "pop from a FIFO with no committed slot",
             expected="at least one pushed slot", actual="0 ready")
    pos = _load(cg, f.head)
    b.store(b.urem(b.add(pos, _c(1)), n), f.head)
    b.store(b.sub(ready, _c(1)), f.ready)
    return pos


def _element(cg: KernelCodegen, f: _Fifo, pos: ir.Value, k: ir.Value, elem: ir.Type) -> ir.Value:
    b = cg.b
    base = b.gep(f.buf, [b.mul(pos, _c(f.slot_bytes))], inbounds=True, source_etype=N.I8)
    return b.gep(base, [k], inbounds=True, source_etype=elem)


def _part0(b: ir.IRBuilder, split: TileSplitAxis, rows: ir.Value, cols: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Sub-block 0's part of a whole rows x cols tile (isa: split_part0)."""
    if split is TileSplitAxis.TILE_NO_SPLIT:
        return rows, cols
    n = rows if split in ROWS_SPLITS else cols
    half = b.add(b.sdiv(n, _c(2)), _c(1 if split in ODD_SPLITS else 0))
    return (half, cols) if split in ROWS_SPLITS else (rows, half)


def _whole_of(b: ir.IRBuilder, split: TileSplitAxis, rows: ir.Value, cols: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The whole tile's shape given part 0's (isa: split_whole)."""
    n = rows if split in ROWS_SPLITS else cols
    whole = b.sub(b.mul(n, _c(2)), _c(1 if split in ODD_SPLITS else 0))
    return (whole, cols) if split in ROWS_SPLITS else (rows, whole)


def _quant_factor(cg: KernelCodegen, mode: FixpipeQuant, cols: ir.Value) -> Any:
    """The f32 factor of column j a quantising push multiplies by, read from the SET_QUANT_*
    registers (the reference's fixpipe_values: RUNTIME_QUANT_STATE when none was set)."""
    b = cg.b
    _, d, kind = FIXPIPE_MODES[mode]
    what = f"TPUSH with Quant = {mode.name}: "
    if kind == CAST:
        return None
    if kind == SCALAR:
        out = b.load(quant_slot(cg, SCALAR_KEY, "out_type"), typ=I64)
        cg.fault(b.icmp_signed("<", out, _c(0)), "RUNTIME_QUANT_STATE", what + "no SET_QUANT_SCALAR ran before it",
                 expected="a SET_QUANT_SCALAR earlier in the run", actual="no scalar quantisation state")
        if d.is_int:
            i8 = list(QuantOutType).index(QuantOutType.I8)
            names = " ".join(f"{k}={m.name}" for k, m in enumerate(QuantOutType))
            cg.fault(b.icmp_signed("!=", out, _c(i8)), "RUNTIME_QUANT_STATE",
                     what + "the scalar register's sign flag is not that of the i8 it pushes",
                     expected="SET_QUANT_SCALAR OutType = I8", actual="OutType code {0} (" + names + ")",
                     details=[out])
        k = b.fptrunc(b.load(quant_slot(cg, SCALAR_KEY, "scale"), typ=N.F64), N.F32)   # exact: an f32 widened
        return lambda j: k
    ptr = b.load(quant_slot(cg, VECTOR_KEY, "ptr"), typ=I64)
    cg.fault(b.icmp_signed("==", ptr, _c(0)), "RUNTIME_QUANT_STATE", what + "no SET_QUANT_VECTOR ran before it",
             expected="a SET_QUANT_VECTOR earlier in the run", actual="no vector quantisation state")
    have = b.load(quant_slot(cg, VECTOR_KEY, "cols"), typ=I64)
    cg.fault(b.icmp_signed(">", cols, have), "RUNTIME_INVALID_READ", "fp is read outside its valid region",
             expected="domain 1x{0} inside the valid region", actual="valid region 1x{1}", details=[cols, have])
    base = b.inttoptr(ptr, N.F32.as_pointer())
    return lambda j: b.load(b.gep(base, [j], inbounds=True, source_etype=N.F32), typ=N.F32)


def _parity(cg: KernelCodegen, split: TileSplitAxis, r: ir.Value, c: ir.Value, what: str) -> None:
    """RUNTIME_VALID_REGION unless the whole tile's split extent has the split's parity."""
    b = cg.b
    ext = r if split in ROWS_SPLITS else c
    odd = b.trunc(ext, I1)
    bad = b.not_(odd) if split in ODD_SPLITS else odd
    axis = "rows" if split in ROWS_SPLITS else "columns"
    cg.fault(bad, "RUNTIME_VALID_REGION", f"{what} splits the tile's valid {axis}",
             expected=f"an {'odd' if split in ODD_SPLITS else 'even'} number of {axis}",
             actual="valid region {0}x{1}", details=[r, c])


def _relu_raw(b: ir.IRBuilder, d: dt.DType, raw: ir.Value) -> ir.Value:
    """The fixpipe's ReLU on an unconverted acc element of dtype ``d`` (isa: _prequant.relu): its
    bits when it is > 0 or NaN, else all-zero bits (+0)."""
    zero = ir.Constant(raw.type, 0)
    if d.is_float:
        keep = b.fcmp_unordered(">", N.load(b, d, raw), ir.Constant(N.F32, 0.0))
    elif N.signed(d):
        keep = b.icmp_signed(">", raw, zero)
    else:
        keep = b.icmp_unsigned(">", raw, zero)
    return b.select(keep, raw, zero)


def _tpush_acc(cg: KernelCodegen, op: TileOp, f: "_Fifo", n: ir.Value) -> None:
    """An acc push through the fixpipe (isa: _tpush's cube side): scaled and converted by Quant,
    ReLU'd by Relu, split by Split or a dual SubBlockId, its LayoutMode and SubBlockId recorded."""
    b, a = cg.b, cg.attrs(op)
    mode = a.get("Quant", FixpipeQuant.NoQuant)
    relu = a.get("Relu", ReluMode.NONE) is ReluMode.RELU
    sub = a.get("SubBlockId", 0)
    split = DUAL_SUBBLOCK.get(sub, a.get("Split", TileSplitAxis.TILE_NO_SPLIT))
    _need_space(cg, f, n, "TPUSH")
    t = cg.tile(op, "tile")
    r, c = t.vrows, t.vcols
    if split is not TileSplitAxis.TILE_NO_SPLIT:
        _parity(cg, split, r, c, f"SubBlockId = {sub}" if sub in DUAL_SUBBLOCK else split.name)
    quant = mode is not FixpipeQuant.NoQuant
    d = FIXPIPE_MODES[mode][1] if quant else t.dtype
    factor = _quant_factor(cg, mode, c) if quant else None
    pos = b.urem(b.add(_load(cg, f.head), _load(cg, f.ready)), n)
    with cg.loop(0, r, name="r") as i:
        with cg.loop(0, c, name="c") as j:
            raw = t.load_raw(b, i, j)
            k = b.add(b.mul(i, c), j)
            if not quant:
                b.store(_relu_raw(b, t.dtype, raw) if relu else raw, _element(cg, f, pos, k, t.elem))
            else:
                v = raw if t.dtype.is_float else b.sitofp(raw, N.F32)
                if factor is not None:
                    v = b.fmul(v, factor(j))
                if relu:
                    v = relu_f32(b, v)
                b.store(prequant_store(cg, d, v), _element(cg, f, pos, k, N.storage(d)))
    b.store(_c(_DTYPE_CODE[d]), _record(cg, f, f.dtype, pos))
    b.store(r, _record(cg, f, f.rows, pos))
    b.store(c, _record(cg, f, f.cols, pos))
    b.store(_c(split.value), _record(cg, f, f.split, pos))
    b.store(_c(1), _record(cg, f, f.both, pos))
    b.store(_c(_LAYOUT_CODE[FIXPIPE_LAYOUT[a["LayoutMode"]]]), _record(cg, f, f.layout, pos))
    b.store(_c(1 if sub == 1 else 0), _record(cg, f, f.sub1, pos))
    _add(cg, f.ready, 1)


def _tpush(cg: KernelCodegen, op: TileOp) -> None:
    _whole(cg, op, "gmTensor", "TPUSH gmTensor")
    f, n = _fifo(cg, op)
    b = cg.b
    split = cg.attrs(op).get("Split", TileSplitAxis.TILE_NO_SPLIT)
    if "tile" in op.args and op.args["tile"].type.loc not in VECTOR_SIDE:
        _tpush_acc(cg, op, f, n)
        return
    if "tile" in op.args:
        _need_space(cg, f, n, "TPUSH")
        t = cg.tile(op, "tile")
        r, c = t.vrows, t.vcols
        part = split is not TileSplitAxis.TILE_NO_SPLIT
        wr, wc = r, c
        if part:                                       # sub-block 0's part, stored inside its whole tile
            wr, wc = _whole_of(b, split, r, c)
            cg.fault(b.icmp_signed("<", b.select(b.icmp_signed("<", wr, wc), wr, wc), _c(0)),
                     "RUNTIME_VALID_REGION", f"TPUSH of sub-block 0's part with {split.name} from an empty tile",
                     expected="at least one row and column", actual="{0}x{1}", details=[r, c])
        pos = b.urem(b.add(_load(cg, f.head), _load(cg, f.ready)), n)
        with cg.loop(0, r, name="r") as i:
            with cg.loop(0, c, name="c") as j:
                k = b.add(b.mul(i, wc), j)
                b.store(t.load_raw(b, i, j), _element(cg, f, pos, k, t.elem))
        b.store(_c(_DTYPE_CODE[t.dtype]), _record(cg, f, f.dtype, pos))
        b.store(wr, _record(cg, f, f.rows, pos))
        b.store(wc, _record(cg, f, f.cols, pos))
        b.store(_c(split.value), _record(cg, f, f.split, pos))
        b.store(_c(0 if part else 1), _record(cg, f, f.both, pos))
        b.store(_c(-1), _record(cg, f, f.layout, pos))
        b.store(_c(0), _record(cg, f, f.sub1, pos))
    else:
        alloc = _load(cg, f.allocated)
        cg.fault(b.icmp_signed("==", alloc, _c(0)), "RUNTIME_FIFO_STATE",
                 "TPUSH commits a slot that TALLOC did not allocate",
                 expected="a TALLOC before each GlobalData TPUSH", actual="no allocated slot")
        b.store(b.sub(alloc, _c(1)), f.allocated)
        pos = b.urem(b.add(_load(cg, f.head), _load(cg, f.ready)), n)
        b.store(_c(-1), _record(cg, f, f.rows, pos))
    _add(cg, f.ready, 1)


def _tpop(cg: KernelCodegen, op: TileOp) -> None:
    _whole(cg, op, "gmTensor", "TPOP gmTensor")
    f, n = _fifo(cg, op)
    pos = _need_ready(cg, f, n)
    b = cg.b
    if "tile" not in op.args:
        _add(cg, f.held, 1)
        return
    split = cg.attrs(op).get("Split", TileSplitAxis.TILE_NO_SPLIT)
    t = cg.tile(op, "tile")
    wr = b.load(_record(cg, f, f.rows, pos), typ=I64)
    cg.fault(b.icmp_signed("<", wr, _c(0)), "RUNTIME_FIFO_MISMATCH",
             "TPOP into a tile from a slot committed without a tile", expected="a slot pushed from a tile",
             actual="a GlobalData slot")
    pushed = b.load(_record(cg, f, f.split, pos), typ=I64)
    names = " ".join(f"{m.value}={m.name}" for m in TileSplitAxis)
    cg.fault(b.icmp_signed("!=", pushed, _c(split.value)), "RUNTIME_FIFO_MISMATCH",
             "TPOP with another split than the push", expected="Split code {0} (as pushed; " + names + ")",
             actual=f"Split = {split.name}", details=[pushed])
    wc = b.load(_record(cg, f, f.cols, pos), typ=I64)
    code = b.load(_record(cg, f, f.dtype, pos), typ=I64)
    p0r, p0c = _part0(b, split, wr, wc)
    if t.type.loc in VECTOR_SIDE:
        cg.fault(b.icmp_signed("!=", b.load(_record(cg, f, f.sub1, pos), typ=I64), _c(0)), "RUNTIME_FIFO_MISMATCH",
                 "TPOP of a slot pushed to vector sub-block 1 (SubBlockId = 1), which a functional run does not "
                 "execute", expected="a slot pushed to sub-block 0 (SubBlockId 0, 2 or 3)", actual="SubBlockId = 1")
        lay = b.load(_record(cg, f, f.layout, pos), typ=I64)
        lnames = " ".join(f"{k}={l.value}" for l, k in _LAYOUT_CODE.items())
        cg.fault(b.and_(b.icmp_signed(">=", lay, _c(0)), b.icmp_signed("!=", lay, _c(_LAYOUT_CODE[t.type.layout]))),
                 "RUNTIME_FIFO_MISMATCH", "TPOP into a tile of another layout than the fixpipe wrote",
                 expected="layout code {0} (the push's LayoutMode; " + lnames + ")",
                 actual=f"layout {t.type.layout.value}", details=[lay])
        rows, cols = p0r, p0c
        copy_r, copy_c = p0r, p0c
    else:
        rows, cols = wr, wc
        both = b.icmp_signed("!=", b.load(_record(cg, f, f.both, pos), typ=I64), _c(0))
        copy_r, copy_c = b.select(both, wr, p0r), b.select(both, wc, p0c)
    dnames = " ".join(f"{k}={d.name}" for d, k in _DTYPE_CODE.items())
    bad = b.or_(b.icmp_signed("!=", code, _c(_DTYPE_CODE[t.dtype])),
                b.or_(b.icmp_signed("!=", rows, t.vrows), b.icmp_signed("!=", cols, t.vcols)))
    cg.fault(bad, "RUNTIME_FIFO_MISMATCH", "TPOP into a tile of another type than the one pushed",
             expected="{0}x{1} dtype code {2} (" + dnames + ")",
             actual=f"{{3}}x{{4}} {t.dtype.name} (the valid region)", details=[rows, cols, code, t.vrows, t.vcols])
    with cg.loop(0, copy_r, name="r") as i:
        with cg.loop(0, copy_c, name="c") as j:
            k = b.add(b.mul(i, wc), j)
            t.store_raw(b, i, j, b.load(_element(cg, f, pos, k, t.elem), typ=t.elem))


def _talloc(cg: KernelCodegen, op: TileOp) -> None:
    _whole(cg, op, "gmTensor", "TALLOC gmTensor")
    f, n = _fifo(cg, op)
    _need_space(cg, f, n, "TALLOC")
    _add(cg, f.allocated, 1)


def _tfree(cg: KernelCodegen, op: TileOp) -> None:
    _whole(cg, op, "gmTensor", "TFREE gmTensor")
    f, _ = _fifo(cg, op)
    if "gmTensor" not in op.args:
        return
    held = _load(cg, f.held)
    cg.fault(cg.b.icmp_signed("==", held, _c(0)), "RUNTIME_FIFO_STATE",
             "TFREE of a slot that no GlobalData TPOP holds",
             expected="a GlobalData TPOP before each TFREE of a global", actual="no held slot")
    cg.b.store(cg.b.sub(held, _c(1)), f.held)

# --------------------------------------------------------------------------- SYNCALL, TPREFETCH_ASYNC


def _syncall(cg: KernelCodegen, op: TileOp) -> None:
    _whole(cg, op, "gmWorkspace", "SYNCALL gmWorkspace")
    if cg.attrs(op)["Mode"] is SyncAllMode.SOFT and "gmWorkspace" not in op.args:
        cg.fault(ir.Constant(I1, 1), "RUNTIME_BAD_CONFIG", "a Soft SYNCALL needs its gmWorkspace counter",
                 expected="gmWorkspace given", actual="absent")
        return
    used = cg.scalar(op, "usedCores")
    if used is not None:
        cg.fault(cg.b.icmp_signed("<", used, _c(0)), "RUNTIME_BAD_CONFIG", "usedCores out of range",
                 expected="an integer >= 0", actual="{0}", details=[used])


def _tprefetch_async(cg: KernelCodegen, op: TileOp) -> None:
    _whole(cg, op, "src", "TPREFETCH_ASYNC source")

# --------------------------------------------------------------------------- views


def _tsubview(cg: KernelCodegen, op: TileOp) -> None:
    """dst[i, j] = src[rowIdx + i, colIdx + j] over dst's valid region (a bit copy)."""
    dst, src = cg.tile(op, "dst"), cg.tile(op, "src")
    r0, c0 = cg.scalar(op, "rowIdx"), cg.scalar(op, "colIdx")
    _check_window(cg, src, r0, c0, dst.vrows, dst.vcols, "source")
    b = cg.b
    with cg.loop(0, dst.vrows, name="r") as i:
        wi = b.add(r0, i)
        with cg.loop(0, dst.vcols, name="c") as j:
            dst.store_raw(b, i, j, src.load_raw(b, wi, b.add(c0, j)))


def _talias(cg: KernelCodegen, op: TileOp) -> None:
    """dst[i, j] = src[i, j] over dst's valid region, which src's must contain."""
    dst, src = cg.tile(op, "dst"), cg.tile(op, "src")
    cg.check_read(src, dst.vrows, dst.vcols, "TALIAS source")
    b = cg.b
    with cg.loop(0, dst.vrows, name="r") as i:
        with cg.loop(0, dst.vcols, name="c") as j:
            dst.store_raw(b, i, j, src.load_raw(b, i, j))


def _tget_scale_addr(cg: KernelCodegen, op: TileOp) -> None:
    """An address binding: no element moves."""

# --------------------------------------------------------------------------- TRANDOM


def _philox_word(b: ir.IRBuilder, x: list[ir.Value], k0: ir.Value, k1: ir.Value, rounds: int,
                 w: ir.Value) -> ir.Value:
    """Word ``w`` (0..3) of Philox-4x32-``rounds`` of the counter words ``x`` under (k0, k1)."""
    m0, m1 = _c(PHILOX_M[0]), _c(PHILOX_M[1])
    for _ in range(rounds):
        p = b.mul(b.zext(x[0], I64), m0)
        q = b.mul(b.zext(x[2], I64), m1)
        hi = (lambda v: b.trunc(b.lshr(v, _c(32)), I32))
        x = [b.xor(b.xor(hi(q), x[1]), k0), b.trunc(q, I32), b.xor(b.xor(hi(p), x[3]), k1), b.trunc(p, I32)]
        k0, k1 = b.add(k0, _c(PHILOX_W[0], I32)), b.add(k1, _c(PHILOX_W[1], I32))
    out = x[3]
    for k in (2, 1, 0):
        out = b.select(b.icmp_unsigned("==", w, _c(k)), x[k], out)
    return out


def _trandom(cg: KernelCodegen, op: TileOp) -> None:
    dst, key, ctr = cg.tile(op, "dst"), cg.tile(op, "key"), cg.tile(op, "counter")
    one = cg.i64(1)
    cg.check_read(key, one, cg.i64(2), "TRANDOM key")
    cg.check_read(ctr, one, cg.i64(4), "TRANDOM counter")
    rounds = cg.attrs(op)["Rounds"]
    b = cg.b
    zero = cg.i64(0)
    k0, k1 = key.load_raw(b, zero, zero), key.load_raw(b, zero, one)
    base = _c(0, I128)
    for w in range(4):
        word = b.zext(ctr.load_raw(b, zero, cg.i64(w)), I128)
        base = b.or_(base, b.shl(word, _c(32 * w, I128)))
    with cg.loop(0, dst.vrows, name="r") as i:
        with cg.loop(0, dst.vcols, name="c") as j:
            k = b.add(b.mul(i, dst.vcols), j)
            c = b.add(base, b.zext(b.lshr(k, _c(2)), I128))
            x = [b.trunc(b.lshr(c, _c(32 * w, I128)), I32) for w in range(4)]
            dst.store_raw(b, i, j, _philox_word(b, x, k0, k1, rounds, b.and_(k, _c(3))))


def _tpack(cg: KernelCodegen, op: TileOp) -> None:
    """dst[i, j] = the low dst-width bits of src[i, j] (integers: a truncation of the stored bits)."""
    dst, src = cg.tile(op, "dst"), cg.tile(op, "src")
    cg.check_read(src, dst.vrows, dst.vcols, "TPACK source")
    b, width = cg.b, ir.IntType(dst.dtype.bits)
    with cg.loop(0, dst.vrows, name="r") as i:
        with cg.loop(0, dst.vcols, name="c") as j:
            dst.store_raw(b, i, j, b.trunc(src.load_raw(b, i, j), width))


RULES: dict[str, Any] = {
    "TPUSH": _tpush, "TPOP": _tpop, "TALLOC": _talloc, "TFREE": _tfree,
    "SYNCALL": _syncall, "TPREFETCH_ASYNC": _tprefetch_async,
    "TSUBVIEW": _tsubview, "TALIAS": _talias, "TGET_SCALE_ADDR": _tget_scale_addr, "TRANDOM": _trandom,
    "TPACK": _tpack,
}
