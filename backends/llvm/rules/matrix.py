"""llvm lowering rules: matrix instructions (TMATMUL / TGEMV and their _ACC, _BIAS, _MX forms, and
TMATMUL_MX_HIF4: exact f64 element values from the E1M2 codes and HiF4 records, or a mixed
overload's f8e4m3 / f16 / bf16 A times its E8M0 scales, one f32 rounding).

Domain: M = a.valid_rows (1 for GEMV), K = a.valid_cols, N = b.valid_cols; dst's top-left
M x N block is written. Reads outside a source's valid region raise RUNTIME_INVALID_READ in the
order the reference semantics read (a, b, then acc_in / bias / scale_a, scale_b).

Two code paths:

* f32, f16 or bf16 inputs -> f32 (every form but _MX): a register-blocked micro-kernel. For each block of
  ``MR`` rows and ``16 * NV`` columns of C, ``MR * NV`` ``<16 x float>`` accumulators live in
  registers across the whole K loop, fed by broadcasts of A and vector loads of B through
  ``llvm.fma`` (f16 / bf16 widen to f32 first: their products are exact in f32, barring
  bf16 overflow / underflow, which the tolerance covers). The sum is thus taken in f32 in another order than the reference's f64 sum,
  which the ``sum`` numerics contract allows. Rows left over by the 8-row blocks run a 1-row
  kernel, columns left over by the 3-vector blocks a 1-vector one; only a last < 16-column
  edge goes through the generic path. Shapes are static, so for full tiles every bound is a
  compile-time constant. (GEMV runs the 1-row kernel.)
* i8 -> i32 (every form but _MX): the same micro-kernel, the i8 values converted to f32 and
  multiplied-added with ``llvm.fma`` over chunks of ``KC`` K steps (every product and partial
  sum is an integer below 2**24 in magnitude, so exact in f32), each chunk's sums converted to
  i32 and added, wrapping, to ``<16 x i32>`` accumulators. Integer sums do not depend on their
  order, so the result equals the reference's bit for bit, at the f32 kernel's speed (a vector
  i32 multiply is several times slower than an FMA).
* everything else (fp8 inputs, MX scales): products and sums in f64 (exact products, as the
  reference) rounded once to f32.
"""
from __future__ import annotations

from typing import Any, Callable

from llvmlite import ir

from ....assembler.ir import TileOp
from ....isa import dtypes as dt
from ....isa import hifloat4
from ....isa.types import TileType
from .. import hif4
from .. import numerics as N
from ..codegen import KernelCodegen, TileRef

I32, I64, F32, F64 = N.I32, N.I64, N.F32, N.F64
LANES = 16                       # f32 lanes of one AVX-512 vector
VT = ir.VectorType(F32, LANES)
VI = ir.VectorType(I32, LANES)   # the integer micro-kernel's accumulators
KC = 512                         # K steps per exact f32 chunk of i8 products: 512 * 128 * 128 = 2**23
MR = 8                           # rows of C per micro-kernel block
NV = 3                           # vectors of C per row in a block (NR = 48 columns)
MX_BLOCK = 32
WIDEN_BYTES = 1 << 20            # the most workspace the f32 copies of an f16 / bf16 A and B take


# --------------------------------------------------------------------------- checks

def _ceil_blocks(b: ir.IRBuilder, k: ir.Value) -> ir.Value:
    return b.sdiv(b.add(k, ir.Constant(I64, MX_BLOCK - 1)), ir.Constant(I64, MX_BLOCK))


# --------------------------------------------------------------------------- generic path

def _e8m0(b: ir.IRBuilder, code: ir.Value) -> ir.Value:
    """u8 E8M0 code -> 2**(e - 127) as f64 (exact: a normal f64), 255 -> NaN."""
    e = b.zext(code, I64)
    bits = b.shl(b.add(e, ir.Constant(I64, 1023 - 127)), ir.Constant(I64, 52))
    return b.select(b.icmp_unsigned("==", e, ir.Constant(I64, 255)), ir.Constant(F64, float("nan")),
                    b.bitcast(bits, F64))


def _generic(cg: KernelCodegen, op: TileOp, kind: str, i_range: tuple[Any, Any], j_range: tuple[Any, Any],
             k: ir.Value) -> None:
    """dst[i, j] for i, j in the ranges: f64 (floats) or i32 (ints) sums over k, one rounding."""
    b = cg.b
    dst, a, bm = cg.tile(op, "dst"), cg.tile(op, "a"), cg.tile(op, "b")
    is_float = dst.dtype.is_float
    acc_ty = F64 if is_float else I32
    zero64 = ir.Constant(I64, 0)
    slot = cg.alloca(acc_ty, "mm.acc")
    scale_a = cg.tile(op, "scale_a") if kind == "mx" else None
    scale_b = cg.tile(op, "scale_b") if kind == "mx" else None
    prior = cg.tile(op, "acc_in") if kind == "acc" else cg.tile(op, "bias") if kind == "bias" else None

    def widen(t: TileRef, i: ir.Value, j: ir.Value) -> ir.Value:
        v = t.load(b, i, j)
        if is_float:
            return b.fpext(v, F64)
        return b.sext(v, I32) if v.type.width < 32 else v

    with cg.loop(i_range[0], i_range[1], name="gi") as i:
        with cg.loop(j_range[0], j_range[1], name="gj") as j:
            b.store(ir.Constant(acc_ty, 0), slot)
            with cg.loop(0, k, name="gk") as kk:
                x, y = widen(a, i, kk), widen(bm, kk, j)
                if scale_a is not None and scale_b is not None:
                    blk = b.sdiv(kk, ir.Constant(I64, MX_BLOCK))
                    sa = _e8m0(b, scale_a.load_raw(b, i, blk))
                    sb = _e8m0(b, scale_b.load_raw(b, blk, j))
                    x, y = b.fmul(x, sa), b.fmul(y, sb)
                p = b.fmul(x, y) if is_float else b.mul(x, y)
                s = b.load(slot, typ=acc_ty)
                b.store(b.fadd(s, p) if is_float else b.add(s, p), slot)
            total = b.load(slot, typ=acc_ty)
            if prior is not None:          # acc_in[i, j] or bias[0, j], added before the rounding
                extra = widen(prior, i if kind == "acc" else zero64, j)
                total = b.fadd(extra, total) if is_float else b.add(extra, total)
            if is_float:
                total = b.fptrunc(total, F32)
            dst.store(b, i, j, total)


# --------------------------------------------------------------------------- f32 micro-kernel

def _bcast(b: ir.IRBuilder, s: ir.Value) -> ir.Value:
    if isinstance(s.type, ir.IntType):        # an i8 element: exact in f32
        s = b.sitofp(s, F32)
    v = b.insert_element(ir.Constant(VT, ir.Undefined), s, ir.Constant(I32, 0))
    return b.shuffle_vector(v, ir.Constant(VT, ir.Undefined), ir.Constant(ir.VectorType(I32, LANES), [0] * LANES))


def _load_row(b: ir.IRBuilder, t: TileRef, i: ir.Value, j: ir.Value) -> ir.Value:
    """t[i, j:j+16] as ``<16 x float>`` (f16 and i8 widen exactly, bf16 by a 16-bit shift)."""
    ptr = t.addr(b, i, j)
    if t.dtype.name == "f32":
        return b.load(ptr, typ=VT, align=4)
    if t.dtype.name == "i8":
        return b.sitofp(b.load(ptr, typ=ir.VectorType(t.elem, LANES), align=1), VT)
    raw = b.load(ptr, typ=ir.VectorType(t.elem, LANES), align=2)
    if t.dtype.name == "f16":
        return b.fpext(raw, VT)
    wide = b.zext(raw, ir.VectorType(I32, LANES))
    return b.bitcast(b.shl(wide, ir.Constant(ir.VectorType(I32, LANES), [16] * LANES)), VT)


def _floor_to(b: ir.IRBuilder, lo: ir.Value | int, hi: ir.Value, step: int) -> ir.Value:
    """lo + the largest multiple of ``step`` that fits in [lo, hi)."""
    lo = KernelCodegen.i64(lo)
    span = b.sub(hi, lo)
    span = b.select(b.icmp_signed("<", span, ir.Constant(I64, 0)), ir.Constant(I64, 0), span)
    return b.add(lo, b.mul(b.sdiv(span, ir.Constant(I64, step)), ir.Constant(I64, step)))


def _fast_blocks(cg: KernelCodegen, op: TileOp, kind: str, a: TileRef, bm: TileRef, rows_: tuple[Any, ir.Value],
                 cols_: tuple[Any, ir.Value], k: ir.Value, mr: int, nv: int) -> None:
    """The micro-kernel over rows [r0, r1) x cols [c0, c1) of C in mr x (16 * nv) blocks (the
    ranges are whole blocks): mr * nv vector accumulators stay in registers over all of K."""
    b = cg.b
    dst = cg.tile(op, "dst")
    fma = "llvm.fma.v16f32"
    integer = dst.dtype.is_int
    vt = VI if integer else VT
    slots = [[cg.alloca(vt, f"mm.c{r}_{v}") for v in range(nv)] for r in range(mr)]
    # integers: f32 sums of one KC chunk (exact), added to the i32 slots after each chunk
    fslots = [[cg.alloca(VT, f"mm.f{r}_{v}") for v in range(nv)] for r in range(mr)] if integer else slots
    zero = ir.Constant(vt, None)
    zero64 = ir.Constant(I64, 0)
    bias = cg.tile(op, "bias") if kind == "bias" else None
    acc_in = cg.tile(op, "acc_in") if kind == "acc" else None
    # column blocks outside, row blocks inside: one K x (16 * nv) panel of B stays in L1 while
    # every row block of A passes over it (rows outside swept all of B once per row block)
    with cg.loop(cols_[0], cols_[1], LANES * nv, name="mj") as j0:
        cols = [b.add(j0, ir.Constant(I64, LANES * v)) for v in range(nv)]
        with cg.loop(rows_[0], rows_[1], mr, name="mi") as i0:
            rows = [b.add(i0, ir.Constant(I64, r)) for r in range(mr)]
            for r in range(mr):
                for v in range(nv):
                    if acc_in is not None:
                        init = b.load(acc_in.addr(b, rows[r], cols[v]), typ=vt, align=4)
                    elif bias is not None:
                        init = b.load(bias.addr(b, zero64, cols[v]), typ=vt, align=4)
                    else:
                        init = zero
                    b.store(init, slots[r][v])
            def k_steps(lo: Any, hi: Any) -> None:
                with cg.loop(lo, hi, name="mk") as kk:
                    bv = [_load_row(b, bm, kk, cols[v]) for v in range(nv)]
                    for r in range(mr):
                        av = _bcast(b, a.load(b, rows[r], kk))
                        for v in range(nv):
                            s = fslots[r][v]
                            b.store(cg.intrinsic(fma, VT, [av, bv[v], b.load(s, typ=VT)]), s)
            if not integer:
                k_steps(0, k)
            else:
                with cg.loop(0, k, KC, name="kc") as k0:
                    hi = b.add(k0, ir.Constant(I64, KC))
                    hi = b.select(b.icmp_signed("<", hi, k), hi, k)
                    for row in fslots:
                        for s_ in row:
                            b.store(ir.Constant(VT, None), s_)
                    k_steps(k0, hi)
                    for r in range(mr):
                        for v in range(nv):
                            part = b.fptosi(b.load(fslots[r][v], typ=VT), VI)
                            b.store(b.add(b.load(slots[r][v], typ=VI), part), slots[r][v])
            for r in range(mr):
                for v in range(nv):
                    b.store(b.load(slots[r][v], typ=vt), dst.addr(b, rows[r], cols[v]), align=4)


def _widened(cg: KernelCodegen, t: TileRef) -> TileRef:
    """An f32 copy of a whole f16 / bf16 tile (its static rows x cols, valid or not: the copy is
    only read where the source is valid) in the block's workspace. The micro-kernel then feeds
    its FMAs from f32 loads and broadcasts: widening every element once per TMATMUL instead of
    once per use (each A element is used 16 * NV times per column block, each B element once
    per row block) makes the f16 / bf16 product about as fast as the f32 one."""
    b = cg.b
    total = t.rows * t.cols
    ptr = cg.scratch(4 * total)
    flat = TileRef(t.name + ".f32", TileType(t.rows, t.cols, dt.F32), ptr, t.vrows, t.vcols, t.static_valid)
    whole = total - total % LANES
    zero = ir.Constant(I64, 0)
    with cg.loop(0, whole, LANES, name="widen") as i:
        b.store(_load_row(b, t, zero, i), flat.addr(b, zero, i), align=4)
    with cg.loop(whole, total, name="widen.t") as i:
        b.store(t.load(b, zero, i), flat.addr(b, zero, i))
    return flat


def _fast(cg: KernelCodegen, op: TileOp, kind: str, m: ir.Value, n: ir.Value, k: ir.Value, nv: int) -> None:
    """f32 (or i32) C = A @ B: MR-row blocks then single rows, each over NV-vector column blocks then
    single vectors; the last < 16 columns (and nothing else) through the generic path. f16 / bf16
    sources small enough are widened to f32 copies first (``_widened``)."""
    b = cg.b
    a, bm = cg.tile(op, "a"), cg.tile(op, "b")
    if a.dtype.name in ("f16", "bf16") and (a.rows * a.cols + bm.rows * bm.cols) * 4 <= WIDEN_BYTES:
        a, bm = _widened(cg, a), _widened(cg, bm)
    rsplit = _floor_to(b, 0, m, MR)
    c1 = _floor_to(b, 0, n, LANES * nv)
    c2 = _floor_to(b, c1, n, LANES) if nv > 1 else c1
    for rows, mr in (((0, rsplit), MR), ((rsplit, m), 1)):
        _fast_blocks(cg, op, kind, a, bm, rows, (0, c1), k, mr, nv)
        if nv > 1:
            _fast_blocks(cg, op, kind, a, bm, rows, (c1, c2), k, mr, 1)
    _generic(cg, op, kind, (0, m), (c2, n), k)


# --------------------------------------------------------------------------- the rules

def _rule(kind: str, gemv: bool) -> Callable[[KernelCodegen, TileOp], None]:
    def rule(cg: KernelCodegen, op: TileOp) -> None:
        b = cg.b
        dst, a, bm = cg.tile(op, "dst"), cg.tile(op, "a"), cg.tile(op, "b")
        one = ir.Constant(I64, 1)
        m = one if gemv else a.vrows
        k, n = a.vcols, bm.vcols
        if gemv:
            cg.check_read(a, m, k, "a")
        cg.check_read(bm, k, n, "b")
        if kind == "acc":
            cg.check_read(cg.tile(op, "acc_in"), m, n, "acc_in")
        elif kind == "bias":
            cg.check_read(cg.tile(op, "bias"), one, n, "bias")
        elif kind == "mx":
            kb = _ceil_blocks(b, k)
            cg.check_read(cg.tile(op, "scale_a"), m, kb, "scale_a")
            cg.check_read(cg.tile(op, "scale_b"), kb, n, "scale_b")
        fast = a.dtype == bm.dtype and (dst.dtype.name == "f32" and a.dtype.name in ("f32", "f16", "bf16")
                                        or dst.dtype.name == "i32" and a.dtype.name == "i8")
        nv = min(NV, dst.cols // LANES)
        if fast and kind != "mx" and nv >= 1:
            _fast(cg, op, kind, m, n, k, nv)
        else:
            _generic(cg, op, kind, (0, m), (0, n), k)
    rule.__doc__ = f"{'TGEMV' if gemv else 'TMATMUL'} ({kind})"
    return rule


RULES: dict[str, Any] = {}
for _prefix, _gemv in (("TMATMUL", False), ("TGEMV", True)):
    for _suffix, _kind in (("", "plain"), ("_ACC", "acc"), ("_BIAS", "bias"), ("_MX", "mx")):
        RULES[_prefix + _suffix] = _rule(_kind, _gemv)


# --------------------------------------------------------------------------- TMATMUL_MX_HIF4

def _hif4_value(cg: KernelCodegen, data: TileRef, scale: TileRef, row: ir.Value, kk: ir.Value,
                by_rows: bool) -> ir.Value:
    """The exact value (f64) of element (row, kk) of A (``by_rows``: records along scale's
    columns) or of element (kk, row) of B (records along scale's rows)."""
    b = cg.b
    c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
    blk, pos = b.sdiv(kk, c64(hifloat4.BLOCK)), b.srem(kk, c64(hifloat4.BLOCK))
    base = b.mul(blk, c64(hifloat4.RECORD))
    quad = b.sdiv(pos, c64(hifloat4.QUAD))

    def rec(t: int, extra: ir.Value | None = None) -> ir.Value:
        off = b.add(base, c64(t)) if extra is None else b.add(b.add(base, c64(t)), extra)
        return scale.load_raw(b, row, off) if by_rows else scale.load_raw(b, off, row)
    code = data.load_raw(b, row, kk) if by_rows else data.load_raw(b, kk, row)
    return hif4.element_value(b, code, rec(0), rec(1), rec(2, b.sdiv(quad, c64(8))),
                              b.sdiv(pos, c64(hifloat4.OCTET)), b.srem(quad, c64(8)))


def _tmatmul_mx_hif4(cg: KernelCodegen, op: TileOp) -> None:
    """f64 products of the exact element values, summed in f64 and rounded once to f32."""
    b = cg.b
    dst, a, bm = cg.tile(op, "dst"), cg.tile(op, "a"), cg.tile(op, "b")
    sa, sb = cg.tile(op, "scale_a"), cg.tile(op, "scale_b")
    m, k, n = a.vrows, a.vcols, bm.vcols
    cg.fault(b.icmp_signed("!=", b.srem(k, ir.Constant(I64, hifloat4.BLOCK)), ir.Constant(I64, 0)),
             "RUNTIME_VALID_REGION", "TMATMUL_MX_HIF4 multiplies whole 64-element K blocks",
             expected="a.valid_cols a multiple of 64", actual="{0} valid columns", details=[k])
    kr = b.mul(b.sdiv(k, ir.Constant(I64, hifloat4.BLOCK)), ir.Constant(I64, hifloat4.RECORD))
    mixed = a.dtype != dt.FP4_E1M2        # f8e4m3 / f16 / bf16 A with MX E8M0 scales
    cg.check_read(a, m, k, "a")
    cg.check_read(bm, k, n, "b")
    cg.check_read(sa, m, b.sdiv(k, ir.Constant(I64, MX_BLOCK)) if mixed else kr, "scale_a")
    cg.check_read(sb, kr, n, "scale_b")

    def a_value(i: ir.Value, kk: ir.Value) -> ir.Value:
        if not mixed:
            return _hif4_value(cg, a, sa, i, kk, True)
        scale = _e8m0(b, sa.load_raw(b, i, b.sdiv(kk, ir.Constant(I64, MX_BLOCK))))
        return b.fmul(b.fpext(a.load(b, i, kk), F64), scale)

    slot = cg.alloca(F64, "hif4.acc")
    with cg.loop(0, m, name="hi") as i:
        with cg.loop(0, n, name="hj") as j:
            b.store(ir.Constant(F64, 0.0), slot)
            with cg.loop(0, k, name="hk") as kk:
                p = b.fmul(a_value(i, kk), _hif4_value(cg, bm, sb, j, kk, False))
                b.store(b.fadd(b.load(slot, typ=F64), p), slot)
            dst.store(b, i, j, b.fptrunc(b.load(slot, typ=F64), F32))


RULES["TMATMUL_MX_HIF4"] = _tmatmul_mx_hif4
