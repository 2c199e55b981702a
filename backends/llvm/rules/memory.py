"""llvm lowering rules: memory instructions (global tensors <-> tiles, indexed access).

Semantics follow ``isa/families/memory.py`` exactly. Contiguous rows (column stride 1) take a
fast path: raw copies become one ``memmove`` per row, converting/atomic stores a stride-1 loop
the vectoriser handles. Every index that comes from run-time data (global indices, index
tiles) is checked before any element is accessed, with the reference's fault codes.
"""
from __future__ import annotations

from typing import Any, Callable

from llvmlite import ir

from ....assembler.ir import TileOp
from ....isa import dtypes as dt
from ....isa import glayouts as GL
from ....isa.attrs import AtomicMode, IndexMode, OobMode
from ....isa.attrs import ReluMode
from .. import numerics as N
from ..codegen import GlobalView, KernelCodegen, TileRef
from ..glayouts import read_scale, visit_conv
from .quant import prequant_store, relu_f32

I1, I64, PTR = N.I1, N.I64, N.PTR
_VOID = ir.VoidType()


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


# --------------------------------------------------------------------------- shared helpers

def _memmove(cg: KernelCodegen, dst: ir.Value, src: ir.Value, nbytes: ir.Value) -> None:
    cg.intrinsic("llvm.memmove.p0.p0.i64", _VOID, [dst, src, nbytes, ir.Constant(I1, 0)])


def _window_loops(cg: KernelCodegen, rows: ir.Value, cols: ir.Value, origin: ir.Value, rs: ir.Value,
                  cs: ir.Value, elem: ir.Type,
                  body: Callable[[ir.Value, ir.Value, ir.Value], None]) -> None:
    """``body(i, j, global element address)`` over rows x cols; branches once on cs == 1 so the
    common contiguous case has a stride-1 inner loop."""
    b = cg.b
    with b.if_else(b.icmp_signed("==", cs, _c(1))) as (contig, strided):
        with contig:
            with cg.loop(0, rows, name="r") as i:
                row = b.gep(origin, [b.mul(i, rs)], source_etype=elem)
                with cg.loop(0, cols, name="c") as j:
                    body(i, j, b.gep(row, [j], source_etype=elem))
        with strided:
            with cg.loop(0, rows, name="r") as i:
                row = b.gep(origin, [b.mul(i, rs)], source_etype=elem)
                with cg.loop(0, cols, name="c") as j:
                    body(i, j, b.gep(row, [b.mul(j, cs)], source_etype=elem))


def _combine(cg: KernelCodegen, d: dt.DType, atomic: AtomicMode, old_raw: ir.Value,
             new_raw: ir.Value) -> ir.Value:
    """The raw element an (atomic) write of ``new_raw`` over ``old_raw`` leaves: floats combine
    in f32 and round once; integers wrap (ADD) or compare in their signedness (MAX/MIN)."""
    if atomic is AtomicMode.NONE:
        return new_raw
    b = cg.b
    old, new = N.load(b, d, old_raw), N.load(b, d, new_raw)
    if d.is_float:
        if atomic is AtomicMode.ADD:
            r = b.fadd(old, new)
        else:
            name = "maximum" if atomic is AtomicMode.MAX else "minimum"
            r = cg.intrinsic(f"llvm.{name}.f32", N.F32, [old, new])
        return N.store(b, d, r)
    if atomic is AtomicMode.ADD:
        return b.add(old, new)
    pred = ">" if atomic is AtomicMode.MAX else "<"
    cmp = b.icmp_signed(pred, old, new) if N.signed(d) else b.icmp_unsigned(pred, old, new)
    return b.select(cmp, old, new)


# --------------------------------------------------------------------------- TLOAD / TSTORE

def _tload(cg: KernelCodegen, op: TileOp) -> None:
    """Bit-exact copy of dst's valid region from the window (memmove per contiguous row)."""
    dst = cg.tile(op, "dst")
    src = cg.glob(op, "src")
    b = cg.b
    if src.type.layout in GL.SCALE_LAYOUTS:     # a scale layout: its own index terms
        read_scale(cg, src, dst.vrows, dst.vcols, "TLOAD source",
                   lambda i, j, at: dst.store_raw(b, i, j, b.load(at, typ=src.elem)))
        return
    if src.type.layout in GL.CONV_LAYOUTS:      # a convolution layout: its dims regrouped
        visit_conv(cg, src, dst.vrows, dst.vcols, "TLOAD source",
                   lambda i, j, at: dst.store_raw(b, i, j, b.load(at, typ=src.elem)))
        return
    origin, rs, cs = src.window(cg, dst.vrows, dst.vcols, "TLOAD source")
    size = _c(dst.dtype.itemsize)
    with b.if_else(b.icmp_signed("==", cs, _c(1))) as (contig, strided):
        with contig:
            nbytes = b.mul(dst.vcols, size)
            with cg.loop(0, dst.vrows, name="r") as i:
                _memmove(cg, dst.addr(b, i, _c(0)), b.gep(origin, [b.mul(i, rs)], source_etype=src.elem), nbytes)
        with strided:
            with b.if_else(b.icmp_signed("==", rs, _c(1))) as (columns, other):
                with columns:       # a column-major window (a transposed view): a blocked transpose
                    _load_columns(cg, dst, src, origin, cs)
                with other:
                    with cg.loop(0, dst.vrows, name="r") as i:
                        with cg.loop(0, dst.vcols, name="c") as j:
                            raw = b.load(src.element(b, origin, rs, cs, i, j), typ=src.elem)
                            dst.store_raw(b, i, j, raw)


#: rows of a column-major load's blocks: their tile rows stay in L1 across the columns (rows a
#: multiple of 4 KB apart share a cache set: 16 evicted each other, 1.9x slower; 4 and 12 were slower too)
COLUMN_BLOCK = 8


def _load_columns(cg: KernelCodegen, dst: TileRef, src: GlobalView, origin: ir.Value, cs: ir.Value) -> None:
    """dst[i, j] = src[i + j * cs] in blocks of COLUMN_BLOCK rows: each column's run of the
    block is contiguous in the source, and the block's tile rows stay in cache across the
    columns (row by row, every element of a tile row came from another source line)."""
    b = cg.b
    with cg.loop(0, dst.vrows, COLUMN_BLOCK, name="cb") as i0:
        left = b.sub(dst.vrows, i0)
        n = b.select(b.icmp_signed("<", left, _c(COLUMN_BLOCK)), left, _c(COLUMN_BLOCK))
        with cg.loop(0, dst.vcols, name="cj") as j:
            col = b.gep(origin, [b.add(b.mul(j, cs), i0)], source_etype=src.elem)
            with cg.loop(0, n, name="ci") as di:
                raw = b.load(b.gep(col, [di], source_etype=src.elem), typ=src.elem)
                dst.store_raw(b, b.add(i0, di), j, raw)


def _store_value(b: ir.IRBuilder, src: TileRef, d: dt.DType, i: ir.Value, j: ir.Value) -> ir.Value:
    """src[i, j] as dst's raw element: same dtype copies bits, else converts (RNE)."""
    if src.dtype == d:
        return src.load_raw(b, i, j)
    return N.store(b, d, src.load(b, i, j))


def _relu_value(b: ir.IRBuilder, src: TileRef, d: dt.DType, i: ir.Value, j: ir.Value) -> ir.Value:
    """relu(src[i, j]) (an acc f32 or i32) as dst's raw element: the fixpipe's ReLU before the
    conversion (NaN kept, -0 -> +0; negative integers -> 0)."""
    v = src.load(b, i, j)
    if isinstance(v.type, ir.FloatType):
        return N.store(b, d, relu_f32(b, v))
    return b.select(b.icmp_signed(">", v, ir.Constant(v.type, 0)), v, ir.Constant(v.type, 0))


def _tstore(cg: KernelCodegen, op: TileOp) -> None:
    src = cg.tile(op, "src")
    dst = cg.glob(op, "dst")
    atomic = cg.attrs(op).get("atomic", AtomicMode.NONE)
    relu = cg.attrs(op).get("relu", ReluMode.NONE) is ReluMode.RELU
    factor = cg.scalar(op, "preQuantScalar")
    if factor is not None:          # the scalar pre-quantising form: TSTORE_FP with one factor
        _store_scaled(cg, src, dst, atomic, lambda j: factor, "TSTORE destination", relu)
        return
    b = cg.b
    conv = dst.type.layout in GL.CONV_LAYOUTS
    origin, rs, cs = (None, None, None) if conv else dst.window(cg, src.vrows, src.vcols, "TSTORE destination")
    if src.dtype == dst.dtype and atomic is AtomicMode.NONE and not relu and not conv:
        size = _c(src.dtype.itemsize)
        with b.if_else(b.icmp_signed("==", cs, _c(1))) as (contig, strided):
            with contig:
                nbytes = b.mul(src.vcols, size)
                with cg.loop(0, src.vrows, name="r") as i:
                    _memmove(cg, b.gep(origin, [b.mul(i, rs)], source_etype=dst.elem), src.addr(b, i, _c(0)),
                             nbytes)
            with strided:
                with cg.loop(0, src.vrows, name="r") as i:
                    with cg.loop(0, src.vcols, name="c") as j:
                        b.store(src.load_raw(b, i, j), dst.element(b, origin, rs, cs, i, j))
        return

    def body(i: ir.Value, j: ir.Value, at: ir.Value) -> None:
        new = _relu_value(b, src, dst.dtype, i, j) if relu else _store_value(b, src, dst.dtype, i, j)
        if atomic is not AtomicMode.NONE:
            new = _combine(cg, dst.dtype, atomic, b.load(at, typ=dst.elem), new)
        b.store(new, at)

    _visit(cg, dst, src, "TSTORE destination", origin, rs, cs, body)


def _visit(cg: KernelCodegen, dst: GlobalView, src: TileRef, what: str, origin: ir.Value | None,
           rs: ir.Value | None, cs: ir.Value | None, body: Callable[[ir.Value, ir.Value, ir.Value], None]) -> None:
    """``body(i, j, address)`` over src's valid region: a checked window, or a convolution
    layout's places (checked here)."""
    if origin is None:
        visit_conv(cg, dst, src.vrows, src.vcols, what, body)
    else:
        _window_loops(cg, src.vrows, src.vcols, origin, rs, cs, dst.elem, body)


def _tstore_fp(cg: KernelCodegen, op: TileOp) -> None:
    """dst = convert(f32(src) * fp[0, j]): floats RNE, integers RNE + saturate (NaN -> 0)."""
    src = cg.tile(op, "src")
    fp = cg.tile(op, "fp")
    dst = cg.glob(op, "dst")
    atomic = cg.attrs(op).get("atomic", AtomicMode.NONE)
    b = cg.b
    bad = b.or_(b.icmp_signed("<", fp.vrows, _c(1)), b.icmp_signed(">", src.vcols, fp.vcols))
    cg.fault(bad, "RUNTIME_INVALID_READ", "fp is read outside its valid region",
             expected="domain 1x{0} inside the valid region", actual="valid region {1}x{2}",
             details=[src.vcols, fp.vrows, fp.vcols])
    relu = cg.attrs(op).get("relu", ReluMode.NONE) is ReluMode.RELU
    _store_scaled(cg, src, dst, atomic, lambda j: fp.load(b, _c(0), j), "TSTORE_FP destination", relu)


def _store_scaled(cg: KernelCodegen, src: TileRef, dst: GlobalView, atomic: AtomicMode,
                  factor: Callable[[ir.Value], ir.Value], what: str, relu: bool = False) -> None:
    """dst.window = convert(relu(f32(src) * factor(column))): ``prequant_store``'s conversions."""
    b = cg.b
    conv = dst.type.layout in GL.CONV_LAYOUTS
    origin, rs, cs = (None, None, None) if conv else dst.window(cg, src.vrows, src.vcols, what)
    d = dst.dtype

    def body(i: ir.Value, j: ir.Value, at: ir.Value) -> None:
        raw = src.load_raw(b, i, j)
        v = raw if src.dtype.is_float else b.sitofp(raw, N.F32)
        v = b.fmul(v, factor(j))
        new = prequant_store(cg, d, relu_f32(b, v) if relu else v)
        if atomic is not AtomicMode.NONE:
            new = _combine(cg, d, atomic, b.load(at, typ=dst.elem), new)
        b.store(new, at)

    _visit(cg, dst, src, what, origin, rs, cs, body)


def _tprefetch(cg: KernelCodegen, op: TileOp) -> None:
    """A hint: only the window check remains."""
    dst = cg.tile(op, "dst")
    src = cg.glob(op, "src")
    if src.type.layout in GL.SCALE_LAYOUTS:
        read_scale(cg, src, dst.vrows, dst.vcols, "TPREFETCH source", None)
        return
    if src.type.layout in GL.CONV_LAYOUTS:
        visit_conv(cg, src, dst.vrows, dst.vcols, "TPREFETCH source", None)
        return
    src.window(cg, dst.vrows, dst.vcols, "TPREFETCH source")


# --------------------------------------------------------------------------- MGATHER / MSCATTER

class _Indexed:
    """Index resolution of MGATHER / MSCATTER over one tile domain (rows x cols)."""

    def __init__(self, cg: KernelCodegen, op: TileOp, tile: str, what: str) -> None:
        self.cg, self.what = cg, what
        a = cg.attrs(op)
        self.mode: IndexMode = a["indexMode"]
        self.oob: OobMode = a["oobMode"]
        self.data = cg.tile(op, tile)
        self.idx = cg.tile(op, "idx")
        self.g: GlobalView = cg.glob(op, "src" if what == "MGATHER" else "dst")
        self.rows, self.cols = self.data.vrows, self.data.vcols
        b = cg.b
        g = self.g
        # the global operand is the whole tensor: written indices must be zero
        nz = ir.Constant(I1, 0)
        for o in g.offsets:
            nz = b.or_(nz, b.icmp_signed("!=", o, _c(0)))
        if g.offsets:
            details = list(g.offsets[:6])
            cg.fault(nz, "RUNTIME_GLOBAL_INDEX", f"{what} addresses the whole tensor; write it without "
                     "indices or with zero indices", expected="all indices 0",
                     actual="[" + ", ".join("{%d}" % k for k in range(len(details))) + "]", details=details)
        self.row_len = g.shape[-1] if g.rank else _c(1)
        if self.mode is IndexMode.ELEMENT:
            self._read_check(self.rows, self.cols)
            self.n = self._prod(g.shape)
            self.dims = list(zip(g.shape, g.strides))
        else:
            cg.fault(b.icmp_signed(">", self.cols, self.row_len), "RUNTIME_OOB",
                     f"{what} moves more elements per row than rows hold", expected="<= {0}", actual="{1}",
                     details=[self.row_len, self.cols])
            # the public [1, R] index form: one valid idx row serving several tile rows
            self.across = b.and_(b.icmp_signed("==", self.idx.vrows, _c(1)), b.icmp_signed(">", self.rows, _c(1)))
            self._read_check(b.select(self.across, _c(1), self.rows), b.select(self.across, self.rows, _c(1)))
            self.n = self._prod(g.shape[:-1])
            self.dims = list(zip(g.shape[:-1], g.strides[:-1]))
        self._check()

    def _prod(self, xs: list[ir.Value]) -> ir.Value:
        n = _c(1)
        for x in xs:
            n = self.cg.b.mul(n, x)
        return n

    def _read_check(self, r: ir.Value, c: ir.Value) -> None:
        self.cg.check_read(self.idx, r, c, "idx")

    @property
    def idx_cols(self) -> ir.Value:
        return self.cols if self.mode is IndexMode.ELEMENT else _c(1)

    def raw(self, i: ir.Value, j: ir.Value) -> ir.Value:
        """The index of tile element (i, j) as i64 (i32 sign-extended, u32 zero-extended):
        idx[i, j]; in ROW mode (j = 0) idx[i, 0], or idx[0, i] for the [1, R] form."""
        b = self.cg.b
        if self.mode is IndexMode.ROW:
            i, j = b.select(self.across, _c(0), i), b.select(self.across, i, j)
        v = self.idx.load_raw(b, i, j)
        return b.sext(v, I64) if N.signed(self.idx.dtype) else b.zext(v, I64)

    def _check(self) -> None:
        """ERROR mode (or CLAMP/WRAP into nothing): fault on the first bad index in row-major
        order, before anything is read or written. A vectorisable OR-reduction finds out whether
        one exists; only then a second pass locates it."""
        cg, b = self.cg, self.cg.b
        if self.oob is OobMode.ZERO:
            return
        r, c = self.rows, self.idx_cols
        if self.oob is not OobMode.ERROR:      # CLAMP / WRAP: only an empty target set is an error
            any_idx = b.and_(b.icmp_signed(">", r, _c(0)), b.icmp_signed(">", c, _c(0)))
            empty = b.and_(any_idx, b.icmp_signed("<=", self.n, _c(0)))
            with cg.if_then(empty):
                k = self.raw(_c(0), _c(0))
                cg.fault(ir.Constant(I1, 1), "RUNTIME_OOB", f"{self.what} index out of range",
                         expected="[0, {0})", actual="{1} at idx[{2}, {3}]", details=[self.n, k, _c(0), _c(0)])
            return
        acc = cg.alloca(I1, "oob.any")
        b.store(ir.Constant(I1, 0), acc)
        with cg.loop(0, r, name="r") as i:
            with cg.loop(0, c, name="c") as j:
                k = self.raw(i, j)
                bad = b.or_(b.icmp_signed("<", k, _c(0)), b.icmp_signed(">=", k, self.n))
                b.store(b.or_(b.load(acc, typ=I1), bad), acc)
        with cg.if_then(b.load(acc, typ=I1)):
            with cg.loop(0, r, name="r") as i:
                with cg.loop(0, c, name="c") as j:
                    k = self.raw(i, j)
                    bad = b.or_(b.icmp_signed("<", k, _c(0)), b.icmp_signed(">=", k, self.n))
                    cg.fault(bad, "RUNTIME_OOB", f"{self.what} index out of range", expected="[0, {0})",
                             actual="{1} at idx[{2}, {3}]", details=[self.n, k, i, j])

    def resolve(self, k: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(index inside [0, n) - or 0 -, kept) after the oobMode policy."""
        b, n = self.cg.b, self.n
        inside = b.and_(b.icmp_signed(">=", k, _c(0)), b.icmp_signed("<", k, n))
        if self.oob is OobMode.ERROR:
            return k, ir.Constant(I1, 1)
        if self.oob is OobMode.ZERO:
            return b.select(inside, k, _c(0)), inside
        if self.oob is OobMode.CLAMP:
            hi = b.sub(n, _c(1))
            k2 = b.select(b.icmp_signed("<", k, _c(0)), _c(0), b.select(b.icmp_signed(">", k, hi), hi, k))
            return k2, ir.Constant(I1, 1)
        safe = b.select(b.icmp_signed(">", n, _c(0)), n, _c(1))    # n > 0 here (checked)
        m = b.srem(k, safe)
        return b.select(b.icmp_signed("<", m, _c(0)), b.add(m, safe), m), ir.Constant(I1, 1)

    def offset(self, k: ir.Value) -> ir.Value:
        """Element offset of flat (row-major) index k over ``dims`` (k in range)."""
        b = self.cg.b
        if not self.dims:
            return _c(0)
        off = _c(0)
        rest = k
        for d, (extent, stride) in enumerate(reversed(self.dims)):
            if d == len(self.dims) - 1:
                digit = rest
            else:
                safe = b.select(b.icmp_signed(">", extent, _c(0)), extent, _c(1))
                digit = b.urem(rest, safe)
                rest = b.udiv(rest, safe)
            off = b.add(off, b.mul(digit, stride))
        return off

    def address(self, i: ir.Value, j: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(global element address for tile element (i, j), kept)."""
        b, g = self.cg.b, self.g
        if self.mode is IndexMode.ELEMENT:
            k, keep = self.resolve(self.raw(i, j))
            off = self.offset(k)
        else:
            k, keep = self.resolve(self.raw(i, _c(0)))
            last = g.strides[-1] if g.rank else _c(0)
            off = b.add(self.offset(k), b.mul(j, last))
        return b.gep(g.ptr, [off], source_etype=g.elem), keep


def _mgather(cg: KernelCodegen, op: TileOp) -> None:
    ix = _Indexed(cg, op, "dst", "MGATHER")
    b, dst = cg.b, ix.data
    zero = ir.Constant(dst.elem, 0)
    with cg.loop(0, ix.rows, name="r") as i:
        with cg.loop(0, ix.cols, name="c") as j:
            at, keep = ix.address(i, j)
            if ix.oob is OobMode.ZERO:
                with b.if_else(keep) as (yes, no):
                    with yes:
                        dst.store_raw(b, i, j, b.load(at, typ=dst.elem))
                    with no:
                        dst.store_raw(b, i, j, zero)
            else:
                dst.store_raw(b, i, j, b.load(at, typ=dst.elem))


def _mscatter(cg: KernelCodegen, op: TileOp) -> None:
    ix = _Indexed(cg, op, "src", "MSCATTER")
    atomic = cg.attrs(op).get("atomic", AtomicMode.NONE)
    b, src, g = cg.b, ix.data, ix.g
    with cg.loop(0, ix.rows, name="r") as i:
        with cg.loop(0, ix.cols, name="c") as j:
            at, keep = ix.address(i, j)

            def write() -> None:
                new = src.load_raw(b, i, j)
                if atomic is not AtomicMode.NONE:
                    new = _combine(cg, g.dtype, atomic, b.load(at, typ=g.elem), new)
                b.store(new, at)
            if ix.oob is OobMode.ZERO:
                with cg.if_then(keep):
                    write()
            else:
                write()


RULES: dict[str, Any] = {"TLOAD": _tload, "TSTORE": _tstore, "TSTORE_FP": _tstore_fp,
                         "TPREFETCH": _tprefetch, "MGATHER": _mgather, "MSCATTER": _mscatter}
