"""llvm lowering rules: data movement and layout (TMOV*, TEXTRACT*, TINSERT*, TTRANS, TRESHAPE,
TFILLPAD*, TIMG2COL), with the meaning ``isa/families/movement.py`` gives them.

Tiles are row-major buffers of their static shape here, whatever their declared layout; only
TRESHAPE looks at the physical layout, and because shapes and layouts are static its byte
permutation is computed at compile time (numpy, from the reference's ``layout_offsets``) and
baked into the kernel as a constant table (or a plain memcpy when it is the identity).
Run-time offsets (r0/c0, m0/k0) are checked with the reference's fault codes before any
element is touched; the copy loops then hold no checks, so they vectorise.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from llvmlite import ir

from ....assembler.ir import TileOp
from ....isa import dtypes as dt
from ....isa.attrs import AccToVecMode, ReluMode
from ....isa.families._prequant import SCALE
from ....isa.families.movement import (DUAL_SPLIT, SPLIT_N_WORD_COLS, _GEOMETRY, _as_dtype, _out_hw,
                                       layout_offsets, pad_value)
from ....isa.types import TileType
from .. import numerics as N
from ..codegen import KernelCodegen, TileRef
from .quant import prequant_store, relu_f32

I1, I8, I32, I64, F32 = N.I1, N.I8, N.I32, N.I64, N.F32


# --------------------------------------------------------------------------- shared helpers

def _raw_const(elem: ir.Type, bits: int) -> ir.Constant:
    """A storage element with exactly these bits (floats through their integer image)."""
    if isinstance(elem, ir.IntType):
        return ir.Constant(elem, bits)
    width = 32 if elem == F32 else 16
    return ir.Constant(ir.IntType(width), bits).bitcast(elem)


def _bits_of(value: np.ndarray) -> int:
    """The bit pattern of a numpy scalar as an unsigned Python int."""
    a = np.asarray(value)
    return int(a.reshape(1).view(np.dtype(f"u{a.dtype.itemsize}"))[0])


def _any(b: ir.IRBuilder, *conds: ir.Value) -> ir.Value:
    out = conds[0]
    for c in conds[1:]:
        out = b.or_(out, c)
    return out


def _check_window(cg: KernelCodegen, t: TileRef, r0: ir.Value, c0: ir.Value, rows: ir.Value,
                  cols: ir.Value, what: str) -> None:
    """RUNTIME_OOB unless the rows x cols window at (r0, c0) lies in t's valid region. Written
    as ``r0 > valid - rows`` so a huge run-time offset cannot wrap past the check (the window's
    end is added in the report, ``{2+4}``, never in i64)."""
    b = cg.b
    zero = cg.i64(0)
    bad = _any(b, b.icmp_signed("<", r0, zero), b.icmp_signed("<", c0, zero),
               b.icmp_signed(">", r0, b.sub(t.vrows, rows)), b.icmp_signed(">", c0, b.sub(t.vcols, cols)))
    cg.fault(bad, "RUNTIME_OOB", f"the window leaves the {what}'s valid region",
             expected="inside {0}x{1}", actual="rows [{2}, {2+4}), cols [{3}, {3+5})",
             details=[t.vrows, t.vcols, r0, c0, rows, cols])


def _fp8_keep(b: ir.IRBuilder, d: dt.DType, raw: ir.Value) -> ir.Value:
    """relu's keep test on fp8 bits: positive (sign clear, not zero) or NaN (hifloat8: 0x80 only)."""
    mag = b.and_(raw, ir.Constant(I8, 0x7F))
    positive = b.and_(b.icmp_unsigned("<", raw, ir.Constant(I8, 0x80)), b.icmp_unsigned("!=", raw, ir.Constant(I8, 0)))
    nan = (b.icmp_unsigned("==", mag, ir.Constant(I8, 0x7F)) if d is dt.F8E4M3
           else b.icmp_unsigned("==", raw, ir.Constant(I8, 0x80)) if d is dt.HIF8
           else b.icmp_unsigned(">", mag, ir.Constant(I8, 0x7C)))
    return b.or_(positive, nan)


Transfer = Callable[[ir.Value, ir.Value, ir.Value], ir.Value]


def _transfer(cg: KernelCodegen, src: TileRef, dst: TileRef, fp: TileRef | None, relu: bool,
              factor: ir.Value | None = None) -> Transfer:
    """``(si, sj, fj) -> raw dst element`` for src[si, sj]: scaled in f32 by fp[0, fj] (FP forms)
    or by the f32 ``factor`` (preQuantScalar forms), ReLU'd, converted (round once, nearest-even;
    an integer or f8e4m3 dst saturates: ``prequant_store``); same dtype without a scale stays a bit copy."""
    b = cg.b
    if fp is None and factor is None and src.dtype == dst.dtype:
        d = src.dtype

        def copy(si: ir.Value, sj: ir.Value, fj: ir.Value) -> ir.Value:
            raw = src.load_raw(b, si, sj)
            if not relu or d.kind == "bool" or d is dt.E8M0:    # E8M0: every code positive or NaN
                return raw
            if N.is_fp8(d):
                keep = _fp8_keep(b, d, raw)
            elif d.is_float:
                keep = b.fcmp_unordered(">", N.load(b, d, raw), ir.Constant(F32, 0.0))
            else:
                cmp = b.icmp_signed if d.kind == "int" else b.icmp_unsigned
                keep = cmp(">", N.load(b, d, raw), ir.Constant(raw.type, 0))   # i4: its sign-extended nibble
            return b.select(keep, raw, _raw_const(src.elem, 0))
        return copy

    def convert(si: ir.Value, sj: ir.Value, fj: ir.Value) -> ir.Value:
        v = src.load(b, si, sj)
        if not isinstance(v.type, ir.FloatType):
            v = b.sitofp(v, F32) if src.dtype.kind == "int" else b.uitofp(v, F32)
        if fp is not None:
            v = b.fmul(v, fp.load(b, cg.i64(0), fj))
        if factor is not None:
            v = b.fmul(v, factor)
        if relu:
            v = relu_f32(b, v)
        return prequant_store(cg, dst.dtype, v)
    return convert


def _same_buffer(op: TileOp) -> bool:
    return getattr(op.args.get("dst"), "name", None) == getattr(op.args.get("src"), "name", 0)


def _relu(cg: KernelCodegen, op: TileOp) -> bool:
    return cg.attrs(op).get("relu", ReluMode.NONE) is ReluMode.RELU


def _fp(cg: KernelCodegen, op: TileOp) -> TileRef | None:
    return cg.tile(op, "fp") if op.args.get("fp") is not None else None


def _factor(cg: KernelCodegen, op: TileOp) -> ir.Value | None:
    """The f32 preQuantScalar of the scalar pre-quantising forms, or None."""
    return cg.scalar(op, SCALE)


# --------------------------------------------------------------------------- TMOV / TEXTRACT / TINSERT

def _acc_part(cg: KernelCodegen, src: TileRef, dst: TileRef, mode: AccToVecMode) -> tuple[ir.Value, ir.Value]:
    """Vector sub-block 0's block of an acc -> vec move (``acc_part`` in the reference): a dual
    mode halves its split extent, which must halve (RUNTIME_VALID_REGION)."""
    b = cg.b
    r, c = src.vrows, src.vcols
    axis = DUAL_SPLIT.get(mode)
    if axis is None:
        return r, c
    ext = (r, c)[axis]
    bad = b.icmp_signed("!=", b.srem(ext, cg.i64(2)), cg.i64(0))
    if axis == 1 and dst.dtype.itemsize == 4:
        bad = b.or_(bad, b.icmp_signed("!=", b.srem(c, cg.i64(SPLIT_N_WORD_COLS)), cg.i64(0)))
    cg.fault(bad, "RUNTIME_VALID_REGION", f"{mode.name} cannot split src's valid region",
             expected="a split extent that halves", actual="valid region {0}x{1}", details=[r, c])
    half = b.sdiv(ext, cg.i64(2))
    return (half, c) if axis == 0 else (r, half)


def _tmov(cg: KernelCodegen, op: TileOp) -> None:
    """dst[i, j] = transfer(src[i, j]) over src's valid region (inside dst's), or over vector
    sub-block 0's part of it for an acc -> vec mode (nothing for SingleModeVec1)."""
    dst, src, fp = cg.tile(op, "dst"), cg.tile(op, "src"), _fp(cg, op)
    mode = cg.attrs(op).get("mode", AccToVecMode.SingleModeVec0)
    r, c = _acc_part(cg, src, dst, mode)
    cg.check_write(dst, r, c, "destination")
    if mode is AccToVecMode.SingleModeVec1:
        return
    if fp is not None:
        cg.check_read(fp, cg.i64(1), c, "scaling tile fp")
    move = _transfer(cg, src, dst, fp, _relu(cg, op), _factor(cg, op))
    with cg.loop(0, r, name="r") as i:
        with cg.loop(0, c, name="c") as j:
            dst.store_raw(cg.b, i, j, move(i, j, j))


def _windowed(into_dst: bool) -> Callable[[KernelCodegen, TileOp], None]:
    """TEXTRACT (``into_dst`` false): dst[i, j] = transfer(src[r0 + i, c0 + j]) over dst's
    valid region. TINSERT: dst[r0 + i, c0 + j] = transfer(src[i, j]) over src's valid region
    (vector sub-block 0's part of it for an acc -> vec mode), the rest of dst unchanged. The
    window must lie inside the offset tile."""
    def rule(cg: KernelCodegen, op: TileOp) -> None:
        dst, src, fp = cg.tile(op, "dst"), cg.tile(op, "src"), _fp(cg, op)
        r0, c0 = cg.scalar(op, "r0"), cg.scalar(op, "c0")
        mode = cg.attrs(op).get("mode", AccToVecMode.SingleModeVec0)
        small = src if into_dst else dst
        r, c = _acc_part(cg, src, dst, mode) if into_dst else (small.vrows, small.vcols)
        _check_window(cg, dst if into_dst else src, r0, c0, r, c, "destination" if into_dst else "source")
        if mode is AccToVecMode.SingleModeVec1:
            return
        if fp is not None:
            cg.check_read(fp, cg.i64(1), c, "scaling tile fp")
        move = _transfer(cg, src, dst, fp, _relu(cg, op), _factor(cg, op))
        b = cg.b
        with cg.loop(0, r, name="r") as i:
            wi = b.add(r0, i)
            with cg.loop(0, c, name="c") as j:
                if into_dst:
                    dst.store_raw(b, wi, b.add(c0, j), move(i, j, j))
                else:
                    dst.store_raw(b, i, j, move(wi, b.add(c0, j), j))
    return rule


# --------------------------------------------------------------------------- TTRANS

def _ttrans(cg: KernelCodegen, op: TileOp) -> None:
    """dst[j, i] = src[i, j] over src's valid region (bits); tmp is not used."""
    dst, src = cg.tile(op, "dst"), cg.tile(op, "src")
    r, c = src.vrows, src.vcols
    cg.check_write(dst, c, r, "destination")
    b = cg.b
    if not _same_buffer(op):
        with cg.loop(0, r, name="r") as i:
            with cg.loop(0, c, name="c") as j:
                dst.store_raw(b, j, i, src.load_raw(b, i, j))
        return
    # in place (a square buffer): swap across the diagonal of the common m x m square; the
    # rest of the region reads outside the square and writes outside it, so a plain copy
    m = b.select(b.icmp_signed("<", r, c), r, c)
    with cg.loop(0, m, name="r") as i:
        with cg.loop(b.add(i, cg.i64(1)), m, name="c") as j:
            upper, lower = src.load_raw(b, i, j), src.load_raw(b, j, i)
            dst.store_raw(b, j, i, upper)
            dst.store_raw(b, i, j, lower)
    for (r_lo, r_hi), (c_lo, c_hi) in (((0, m), (m, c)), ((m, r), (0, c))):
        with cg.loop(r_lo, r_hi, name="r") as i:
            with cg.loop(c_lo, c_hi, name="c") as j:
                dst.store_raw(b, j, i, src.load_raw(b, i, j))


# --------------------------------------------------------------------------- TRESHAPE

def _reshape_plan(s: TileType, d: TileType) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every dst element (row-major) the row-major src byte of each of its bytes, and the
    prefix maxima (over the dst rectangle [0, vr) x [0, vc), -1 when empty) of the largest src
    row and column those bytes come from: the valid-region check is then two compares."""
    ssz, dsz = s.dtype.itemsize, d.dtype.itemsize
    off_s = layout_offsets(s).ravel()
    inv_s = np.empty_like(off_s)
    inv_s[off_s] = np.arange(off_s.size)
    phys = layout_offsets(d).ravel()[:, None] * dsz + np.arange(dsz)     # dst element -> its bytes
    elem = inv_s[phys // ssz]
    src_byte = elem * ssz + phys % ssz
    tables = []
    for part in (elem // s.cols, elem % s.cols):
        m = np.full((d.rows + 1, d.cols + 1), -1, dtype=np.int64)
        m[1:, 1:] = part.max(axis=1).reshape(d.shape)
        m = np.maximum.accumulate(np.maximum.accumulate(m, axis=0), axis=1)
        m[0, :] = -1
        m[:, 0] = -1
        tables.append(m)
    return src_byte, tables[0], tables[1]


def _table(cg: KernelCodegen, values: np.ndarray, name: str) -> ir.GlobalVariable:
    """A constant i32 array in the module."""
    flat = [int(v) for v in np.asarray(values).ravel()]
    ty = ir.ArrayType(I32, len(flat))
    g = ir.GlobalVariable(cg.module, ty, cg.module.get_unique_name(name))
    g.global_constant = True
    g.linkage = "internal"
    g.initializer = ir.Constant(ty, flat)
    return g


def _lookup(cg: KernelCodegen, table: ir.GlobalVariable, index: ir.Value) -> ir.Value:
    b = cg.b
    return b.sext(b.load(b.gep(table, [cg.i64(0), index], inbounds=True), typ=I32), I64)


def _treshape(cg: KernelCodegen, op: TileOp) -> None:
    """dst takes src's byte string in both tiles' physical orders (a static permutation)."""
    dst, src = cg.tile(op, "dst"), cg.tile(op, "src")
    b = cg.b
    s_t, d_t = src.type, dst.type
    src_byte, max_row, max_col = _reshape_plan(s_t, d_t)
    vr, vc = dst.vrows, dst.vcols
    if isinstance(vr, ir.Constant) and isinstance(vc, ir.Constant):
        need_r, need_c = (cg.i64(int(m[vr.constant, vc.constant])) for m in (max_row, max_col))
    else:
        at = b.add(b.mul(vr, cg.i64(d_t.cols + 1)), vc)
        need_r = _lookup(cg, _table(cg, max_row, "treshape.rows"), at)
        need_c = _lookup(cg, _table(cg, max_col, "treshape.cols"), at)
    bad = b.or_(b.icmp_signed(">=", need_r, src.vrows), b.icmp_signed(">=", need_c, src.vcols))
    cg.fault(bad, "RUNTIME_INVALID_READ", "TRESHAPE reads bytes outside src's valid region",
             expected="dst valid region {0}x{1} built from valid src bytes", actual="src valid region {2}x{3}",
             details=[vr, vc, src.vrows, src.vcols])
    dsz = d_t.dtype.itemsize
    nbytes = src_byte.size
    if np.array_equal(src_byte.ravel(), np.arange(nbytes)):
        memcpy = cg.module.declare_intrinsic("llvm.memcpy", [N.PTR, N.PTR, I64])
        b.call(memcpy, [dst.ptr, src.ptr, cg.i64(nbytes), ir.Constant(I1, 0)])
        return
    cols = cg.i64(d_t.cols)
    if np.array_equal(src_byte, src_byte[:, :1] + np.arange(dsz)):
        start = _table(cg, src_byte[:, 0], "treshape.elems")
        word = ir.IntType(8 * dsz)
        with cg.loop(0, vr, name="r") as i:
            with cg.loop(0, vc, name="c") as j:
                e = b.add(b.mul(i, cols), j)
                at = b.gep(src.ptr, [_lookup(cg, start, e)], inbounds=True, source_etype=I8)
                v = b.load(at, typ=word, align=1)
                b.store(v, b.gep(dst.ptr, [b.mul(e, cg.i64(dsz))], inbounds=True, source_etype=I8), align=1)
        return
    table = _table(cg, src_byte, "treshape.bytes")
    with cg.loop(0, vr, name="r") as i:
        with cg.loop(0, vc, name="c") as j:
            e = b.mul(b.add(b.mul(i, cols), j), cg.i64(dsz))
            with cg.loop(0, dsz, name="k") as k:
                at = b.add(e, k)
                v = b.load(b.gep(src.ptr, [_lookup(cg, table, at)], inbounds=True, source_etype=I8), typ=I8)
                b.store(v, b.gep(dst.ptr, [at], inbounds=True, source_etype=I8))


# --------------------------------------------------------------------------- TFILLPAD

def _pad_raw(t: TileRef) -> ir.Constant:
    return _raw_const(t.elem, _bits_of(pad_value(t.type.pad, t.dtype)))


def _fill_rest(cg: KernelCodegen, dst: TileRef, vr: ir.Value, vc: ir.Value) -> None:
    """Every element of dst's static tile outside [0, vr) x [0, vc) gets dst's pad value."""
    b = cg.b
    pad = _pad_raw(dst)
    with cg.loop(0, vr, name="r") as i:
        with cg.loop(vc, dst.cols, name="c") as j:
            dst.store_raw(b, i, j, pad)
    with cg.loop(vr, dst.rows, name="r") as i:
        with cg.loop(0, dst.cols, name="c") as j:
            dst.store_raw(b, i, j, pad)


def _tfillpad(cg: KernelCodegen, op: TileOp) -> None:
    """dst = src's valid region (bits), padded to dst's static shape."""
    dst, src = cg.tile(op, "dst"), cg.tile(op, "src")
    b = cg.b
    vr, vc = src.vrows, src.vcols
    with cg.loop(0, vr, name="r") as i:
        with cg.loop(0, vc, name="c") as j:
            dst.store_raw(b, i, j, src.load_raw(b, i, j))
    _fill_rest(cg, dst, vr, vc)


def _tfillpad_inplace(cg: KernelCodegen, op: TileOp) -> None:
    dst = cg.tile(op, "dst")
    _fill_rest(cg, dst, dst.vrows, dst.vcols)


# --------------------------------------------------------------------------- TIMG2COL

def _timg2col(cg: KernelCodegen, op: TileOp) -> None:
    """dst[i, j] = im2col[m0 + i, k0 + j]; the geometry is static (attributes), the feature
    map's channel count is src's valid column count (run time)."""
    a = cg.attrs(op)
    g = {n: int(a[n]) for n in _GEOMETRY}
    oh, ow = _out_hw(g)
    h, w, kw = g["height"], g["width"], g["kernel_w"]
    dst, src = cg.tile(op, "dst"), cg.tile(op, "src")
    m0, k0 = cg.scalar(op, "m0"), cg.scalar(op, "k0")
    b = cg.b
    r, c, ch = dst.vrows, dst.vcols, src.vcols
    zero = cg.i64(0)
    kcols = b.mul(cg.i64(g["kernel_h"] * kw), ch)
    bad = _any(b, b.icmp_signed("<", m0, zero), b.icmp_signed("<", k0, zero),
               b.icmp_signed(">", m0, b.sub(cg.i64(oh * ow), r)), b.icmp_signed(">", k0, b.sub(kcols, c)))
    cg.fault(bad, "RUNTIME_OOB", "the im2col window leaves the im2col matrix",
             expected=f"rows in [0, {oh * ow}), cols in [0, {{0}})", actual="rows [{1}, {1+3}), cols [{2}, {2+4})",
             details=[kcols, m0, k0, r, c])
    cg.check_read(src, cg.i64(h * w), ch, "feature map")
    pad = _raw_const(dst.elem, _bits_of(_as_dtype(int(a.get("pad_value", 0)), dst.dtype)))
    one = cg.i64(1)
    chs = b.select(b.icmp_signed("<", ch, one), one, ch)          # never divide by 0
    kwch = b.mul(cg.i64(kw), chs)
    with cg.loop(0, r, name="r") as i:
        m = b.add(m0, i)
        ih0 = b.sub(b.mul(b.sdiv(m, cg.i64(ow)), cg.i64(g["stride_h"])), cg.i64(g["pad_top"]))
        iw0 = b.sub(b.mul(b.srem(m, cg.i64(ow)), cg.i64(g["stride_w"])), cg.i64(g["pad_left"]))
        with cg.loop(0, c, name="c") as j:
            k = b.add(k0, j)
            rest = b.urem(k, kwch)
            ih = b.add(ih0, b.mul(b.udiv(k, kwch), cg.i64(g["dilation_h"])))
            iw = b.add(iw0, b.mul(b.udiv(rest, chs), cg.i64(g["dilation_w"])))
            inside = b.and_(b.and_(b.icmp_signed(">=", ih, zero), b.icmp_signed("<", ih, cg.i64(h))),
                            b.and_(b.icmp_signed(">=", iw, zero), b.icmp_signed("<", iw, cg.i64(w))))
            row = b.select(inside, b.add(b.mul(ih, cg.i64(w)), iw), zero)
            v = src.load_raw(b, row, b.urem(rest, chs))
            dst.store_raw(b, i, j, b.select(inside, v, pad))


RULES: dict[str, Any] = {
    "TMOV": _tmov, "TMOV_FP": _tmov,
    "TEXTRACT": _windowed(False), "TEXTRACT_FP": _windowed(False),
    "TINSERT": _windowed(True), "TINSERT_FP": _windowed(True),
    "TTRANS": _ttrans, "TRESHAPE": _treshape,
    "TFILLPAD": _tfillpad, "TFILLPAD_EXPAND": _tfillpad, "TFILLPAD_INPLACE": _tfillpad_inplace,
    "TIMG2COL": _timg2col,
}
