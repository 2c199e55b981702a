"""llvm lowering rules: quantisation (``isa/families/quant.py``).

TQUANT_HIF4 walks each row's 64-element blocks: quad maxima into a stack array, the block's e6m2
exponent and bf16 reciprocal (``backends/llvm/hif4.py``), then per octet its Eb bit and its quads'
Ec bits, scales and E1M2 codes, each product rounded to bf16 as ``isa/hifloat4.py`` does.

TQUANT_DN loops per column over its 32-row groups: a NaN-ignoring maximum (NaN read as 0) in a
loop kept scalar (LLVM's vectoriser aborts on it for bf16 columns; ``_scalar_loop``),
the E8M0 code in integers, then each element scaled by the power of two, saturated to ±448 and
encoded to f8e4m3 with the shared fp8 encoder (any NaN written as 0x7F), or for the FP4
algorithms encoded to E2M1 (a NaN makes its group's maximum, scale and codes NaN-marked).

TDEQUANT is a fusable map rule: the integer code widens exactly to f32, then one f32 subtraction
and one f32 multiplication, each rounded (no fused multiply-add, as the reference).
SET_QUANT_SCALAR / SET_QUANT_VECTOR write per-run control registers (``cg.state``) under the
reference's state keys, one slot per field, which a quantising TPUSH reads (rules/system.py):

* ``quant_scalar.scale`` (f64 holding the f32 exactly), ``quant_scalar.out_type`` (i64: the
  index of the ``QuantOutType`` member, -1 until set);
* ``quant_vector.ptr`` (i64: the scaling tile's address, 0 until set), ``quant_vector.cols``
  (i64: its valid columns), so the consumer reads the tile's values when it runs.
"""
from __future__ import annotations

from typing import Any

from llvmlite import ir

from ....assembler.ir import TileOp
import numpy as np

from ....isa import dtypes as dt
from ....isa.attrs import MxQuantAlg, QuantOutType
from ....isa.families.quant import (E2M1_EMAX, E2M1_MAX, E4M3_MAX, E4M3_NAN, E8M0_NAN, FP4_ALGS,
                                     FP4_NAN_GROUP_CODE, MX_GROUP, STATE_KEYS)
from ....isa import hifloat4
from .. import fp4, fp8, hif4
from .. import numerics as N
from ...maprules import Access, MapRule
from ..codegen import KernelCodegen

I8, I32, I64, F32, F64 = N.I8, N.I32, N.I64, N.F32, N.F64
_INV_448 = float(np.float32(1) / np.float32(E4M3_MAX))     # the f32 the NV rule multiplies by
_INV_6 = float(np.float32(1) / np.float32(E2M1_MAX))
# (OCP exponent offset, NV reciprocal) per algorithm
_ALG = {MxQuantAlg.OcpMxFp8E4M3: (8, _INV_448), MxQuantAlg.NvMxFp8E4M3: (8, _INV_448),
        MxQuantAlg.OcpMxFp4E2M1: (E2M1_EMAX, _INV_6), MxQuantAlg.NvMxFp4E2M1: (E2M1_EMAX, _INV_6)}
_OCP = (MxQuantAlg.OcpMxFp8E4M3, MxQuantAlg.OcpMxFp4E2M1)

SCALAR_KEY = STATE_KEYS["SET_QUANT_SCALAR"]
VECTOR_KEY = STATE_KEYS["SET_QUANT_VECTOR"]
_OUT_CODES = {m: k for k, m in enumerate(QuantOutType)}
_SLOTS = {"scale": (F64, 0.0), "out_type": (I64, -1), "ptr": (I64, 0), "cols": (I64, 0)}


def _i32(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


def _i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def quant_slot(cg: KernelCodegen, key: str, field: str) -> ir.Value:
    """The stack slot of one quantisation-register field (see the module doc for the types)."""
    ty, init = _SLOTS[field]
    return cg.state(f"{key}.{field}", ty, ir.Constant(ty, init))


def _dequant_value(cg: KernelCodegen, op: TileOp, vals: list[ir.Value]) -> ir.Value:
    b = cg.b
    code, scale, offset = vals
    x = b.sitofp(code, F32)                       # i8 / i16 are exact in f32
    return b.fmul(b.fsub(x, offset), scale)


def _dequant_check(cg: KernelCodegen, op: TileOp) -> None:
    """scale/offset are read as rows x 1 even when dst has no valid column."""
    dst = cg.tile(op, "dst")
    for name in ("scale", "offset"):
        cg.check_read(cg.tile(op, name), dst.vrows, ir.Constant(I64, 1), name)


def _set_quant_scalar(cg: KernelCodegen, op: TileOp) -> None:
    b = cg.b
    v = cg.scalar(op, "preQuantScalar")
    if v is None:
        return
    b.store(b.fpext(v, F64), quant_slot(cg, SCALAR_KEY, "scale"))
    code = _OUT_CODES[cg.attrs(op)["OutType"]]
    b.store(ir.Constant(I64, code), quant_slot(cg, SCALAR_KEY, "out_type"))


def _set_quant_vector(cg: KernelCodegen, op: TileOp) -> None:
    b = cg.b
    fp = cg.tile(op, "fp")
    b.store(b.ptrtoint(fp.ptr, I64), quant_slot(cg, VECTOR_KEY, "ptr"))
    b.store(fp.vcols, quant_slot(cg, VECTOR_KEY, "cols"))


RULES: dict[str, Any] = {
    "TDEQUANT": MapRule((Access("src", "elem", "src"), Access("scale", "row", "scale"),
                         Access("offset", "row", "offset")), _dequant_value, check=_dequant_check),
    "SET_QUANT_SCALAR": _set_quant_scalar,
    "SET_QUANT_VECTOR": _set_quant_vector,
}


# ----------------------------------------------------------------------------- TQUANT_DN

def _group_exponent(cg: KernelCodegen, alg: MxQuantAlg, m: ir.Value) -> ir.Value:
    """The E8M0 code (i32) of a group maximum m (f32, not NaN), as ``isa``'s _ocp/_nv_exponent."""
    b = cg.b
    emax, inv = _ALG[alg]
    if alg in _OCP:
        biased = b.lshr(b.bitcast(m, I32), _i32(23))
        return b.select(b.icmp_unsigned("<=", biased, _i32(emax)), _i32(0), b.sub(biased, _i32(emax)))
    d = b.fmul(m, ir.Constant(F32, inv))
    bits = b.bitcast(d, I32)
    biased, mant = b.and_(b.lshr(bits, _i32(23)), _i32(0xFF)), b.and_(bits, _i32(0x7FFFFF))
    tiny = b.and_(b.icmp_unsigned("==", biased, _i32(0)), b.icmp_unsigned("<=", mant, _i32(0x400000)))
    up = b.and_(b.and_(b.icmp_unsigned("!=", mant, _i32(0)), b.icmp_unsigned("!=", biased, _i32(0xFE))),
                b.not_(tiny))
    e = b.select(b.icmp_unsigned("==", biased, _i32(0xFF)), _i32(0xFE), b.add(biased, b.zext(up, I32)))
    return b.select(b.fcmp_ordered("==", m, ir.Constant(F32, 0.0)), _i32(0), e)


def _scalar_loop(cg: KernelCodegen, latch: ir.Instruction) -> None:
    """Mark the loop whose back edge is ``latch`` as not to be vectorised (``llvm.loop`` metadata,
    a self-referencing loop ID, as LLVM requires). LLVM's loop vectoriser aborts the whole process
    on a strided f32 maximum reduction over a bf16 column ("VPlan cost model and legacy cost model
    disagreed"); a column of at most 32 rows gains nothing from vectorising anyway."""
    m = cg.b.module
    off = m.add_metadata([ir.MetaDataString(m, "llvm.loop.vectorize.enable"), ir.Constant(ir.IntType(1), 0)])
    loop_id = m.add_metadata([off, ir.MetaDataString(m, f"openpto.loop.{len(m.metadata)}")])  # unique
    loop_id.operands = (loop_id, off)
    latch.set_metadata("llvm.loop", loop_id)


def _column_max(cg: KernelCodegen, src: Any, j: ir.Value, lo: ir.Value, hi: ir.Value,
                sticky_nan: bool = False) -> ir.Value:
    """max |src[i, j]| for lo <= i < hi (NaN ignored, 0 for none; ``sticky_nan``: NaN once any
    element is NaN), accumulated in a register (a phi) in a loop the vectoriser leaves alone (see
    ``_scalar_loop``)."""
    b = cg.b
    pre = b.block
    head, body, done = (b.append_basic_block(f"dn.max.{n}") for n in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name="dn.max.i")
    m = b.phi(F32, name="dn.max.m")
    i.add_incoming(lo, pre)
    m.add_incoming(ir.Constant(F32, 0.0), pre)
    b.cbranch(b.icmp_signed("<", i, hi), body, done)
    b.position_at_end(body)
    v = src.load(b, i, j)
    x = cg.intrinsic("llvm.fabs.f32", F32, [v])
    x = b.select(b.fcmp_unordered("uno", v, v), ir.Constant(F32, 0.0), x)   # any NaN, signalling too
    nxt = b.select(b.fcmp_ordered(">", x, m), x, m)
    if sticky_nan:
        nan = ir.Constant(F32, float("nan"))
        nxt = b.select(b.or_(b.fcmp_unordered("uno", v, v), b.fcmp_unordered("uno", m, m)), nan, nxt)
    i.add_incoming(b.add(i, _i64(1), flags=["nsw"]), b.block)
    m.add_incoming(nxt, b.block)
    _scalar_loop(cg, b.branch(head))
    b.position_at_end(done)
    return m


def _tquant_dn(cg: KernelCodegen, op: TileOp) -> None:
    b = cg.b
    a = cg.attrs(op)
    alg, interleave = a["mx_alg"], bool(a.get("interleave", False))
    fp4_alg = alg in FP4_ALGS
    dst, src, exp = cg.tile(op, "dst"), cg.tile(op, "src"), cg.tile(op, "exp")
    rows, cols = dst.vrows, dst.vcols
    groups = b.sdiv(b.add(rows, _i64(MX_GROUP - 1)), _i64(MX_GROUP))
    if interleave:
        cg.check_write(exp, b.sdiv(b.add(groups, _i64(1)), _i64(2)), b.mul(cols, _i64(2)), "exp")
        with cg.loop(0, b.mul(b.sdiv(b.add(groups, _i64(1)), _i64(2)), _i64(2)), name="dn.pad") as g:
            with cg.if_then(b.icmp_signed(">=", g, groups)):      # the absent partner group is 0
                with cg.loop(0, cols, name="dn.padc") as j:
                    exp.store_raw(b, b.sdiv(g, _i64(2)), b.add(b.mul(j, _i64(2)), _i64(1)), ir.Constant(I8, 0))
    else:
        cg.check_write(exp, groups, cols, "exp")
    cg.check_read(src, rows, cols, "src")
    acc = cg.alloca(F32, "dn.max", size=dst.cols)            # per column: the group maximum
    scl = cg.alloca(F32, "dn.scale", size=dst.cols)          # per column: the group's scale
    with cg.loop(0, groups, name="dn.g") as g:
        lo = b.mul(g, _i64(MX_GROUP))
        hi = b.add(lo, _i64(MX_GROUP))
        hi = b.select(b.icmp_signed("<", hi, rows), hi, rows)
        with cg.loop(0, cols, name="dn.mj") as j:
            b.store(_column_max(cg, src, j, lo, hi, fp4_alg), b.gep(acc, [j], source_etype=F32))
        with cg.loop(0, cols, name="dn.e") as j:
            m = b.load(b.gep(acc, [j], source_etype=F32), typ=F32)
            e = _group_exponent(cg, alg, m)
            if fp4_alg:                          # a group holding a NaN: exponent 0xFF, scale NaN
                e = b.select(b.fcmp_unordered("uno", m, m), _i32(E8M0_NAN), e)
            scale_bits = b.shl(b.sub(_i32(254), e), _i32(23))
            scale = b.bitcast(b.select(b.icmp_unsigned("==", e, _i32(254)), _i32(0x00400000), scale_bits), F32)
            if fp4_alg:
                scale = b.select(b.icmp_unsigned("==", e, _i32(E8M0_NAN)), ir.Constant(F32, float("nan")), scale)
            b.store(scale, b.gep(scl, [j], source_etype=F32))
            code8 = b.trunc(e, I8)
            if interleave:
                exp.store_raw(b, b.sdiv(g, _i64(2)), b.add(b.mul(j, _i64(2)), b.srem(g, _i64(2))), code8)
            else:
                exp.store_raw(b, g, j, code8)
        with cg.loop(lo, hi, name="dn.qi") as i:
            with cg.loop(0, cols, name="dn.qj") as j:
                sc = b.load(b.gep(scl, [j], source_etype=F32), typ=F32)
                v = b.fmul(src.load(b, i, j), sc)
                dst.store_raw(b, i, j, (_fp4_code if fp4_alg else _e4m3_code)(b, v, sc))


def _e4m3_code(b: ir.IRBuilder, v: ir.Value, scale: ir.Value) -> ir.Value:
    """A scaled value -> its f8e4m3 code: saturated to ±448, nearest even, any NaN 0x7F."""
    return saturated_e4m3(b, v)


def saturated_e4m3(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """An f32 -> its f8e4m3 code: saturated to ±448, nearest even, any NaN 0x7F."""
    v = b.select(b.fcmp_ordered(">", v, ir.Constant(F32, E4M3_MAX)), ir.Constant(F32, E4M3_MAX), v)
    v = b.select(b.fcmp_ordered("<", v, ir.Constant(F32, -E4M3_MAX)), ir.Constant(F32, -E4M3_MAX), v)
    code = fp8.encode(b, dt.F8E4M3, v)
    return b.select(b.fcmp_unordered("uno", v, v), ir.Constant(I8, E4M3_NAN), code)


def prequant_store(cg: KernelCodegen, d: dt.DType, v: ir.Value) -> ir.Value:
    """A pre-quantised f32 (scaled, ReLU'd) as d's raw element, the conversions the pre-quantising
    forms share (isa/families/_prequant.saturate): integers round nearest-even and saturate (NaN
    -> 0), f8e4m3 saturates to ±448, other floats round as a store does (hifloat8: ties away)."""
    if d.is_int:
        r = cg.intrinsic("llvm.roundeven.f32", F32, [v])
        ty = N.storage(d)
        return cg.intrinsic(f"llvm.fpto{'s' if N.signed(d) else 'u'}i.sat.i{ty.width}.f32", ty, [r])
    if d is dt.F8E4M3:
        return saturated_e4m3(cg.b, v)
    return N.store(cg.b, d, v)


def relu_f32(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """relu on an f32: x > 0 or NaN keeps x (payload too), everything else (-0 included) is +0."""
    return b.select(b.fcmp_unordered(">", v, ir.Constant(F32, 0.0)), v, ir.Constant(F32, 0.0))


def _fp4_code(b: ir.IRBuilder, v: ir.Value, scale: ir.Value) -> ir.Value:
    """A scaled value -> its E2M1 code (nearest even, saturating); 0x7 in a NaN group (NaN scale)."""
    code = fp4.encode(b, dt.FP4_E2M1.name, v)
    return b.select(b.fcmp_unordered("uno", scale, scale), ir.Constant(I8, FP4_NAN_GROUP_CODE), code)


RULES["TQUANT_DN"] = _tquant_dn


# ----------------------------------------------------------------------------- TQUANT_HIF4

def _abs0(cg: KernelCodegen, v: ir.Value) -> ir.Value:
    """|v| with any NaN read as 0 (the maxima's rule)."""
    x = cg.intrinsic("llvm.fabs.f32", F32, [v])
    return cg.b.select(cg.b.fcmp_unordered("uno", v, v), ir.Constant(F32, 0.0), x)


def _fmax(b: ir.IRBuilder, a: ir.Value, c: ir.Value) -> ir.Value:
    return b.select(b.fcmp_ordered(">", c, a), c, a)


def _tquant_hif4(cg: KernelCodegen, op: TileOp) -> None:
    """Per row and 64-element block: the 16 quad maxima into a stack array (their maximum is the
    block's), Ea and its reciprocal, then per octet (a loop) its Eb bit and, unrolled, its two
    quads' Ec bits, scales and codes; the Eb byte and Ec half-words gather in registers."""
    b = cg.b
    dst, src, exp = cg.tile(op, "dst"), cg.tile(op, "src"), cg.tile(op, "exp")
    rows, cols = dst.vrows, dst.vcols
    cg.fault(b.icmp_signed("!=", b.srem(cols, _i64(hifloat4.BLOCK)), _i64(0)), "RUNTIME_VALID_REGION",
             "TQUANT_HIF4 quantises whole 64-element blocks", expected="valid columns a multiple of 64",
             actual="{0} valid columns", details=[cols])
    blocks = b.sdiv(cols, _i64(hifloat4.BLOCK))
    cg.check_write(exp, rows, b.mul(blocks, _i64(hifloat4.RECORD)), "exp")
    cg.check_read(src, rows, cols, "src")
    quads = cg.alloca(F32, "hif4.mc", size=hifloat4.BLOCK // hifloat4.QUAD)
    bits = cg.alloca(I32, "hif4.bits", size=2)                   # Eb byte, Ec 16 bits
    with cg.loop(0, rows, name="hif4.i") as i:
        with cg.loop(0, blocks, name="hif4.g") as g:
            base = b.mul(g, _i64(hifloat4.BLOCK))
            with cg.loop(0, hifloat4.BLOCK // hifloat4.QUAD, name="hif4.q") as q:
                j0 = b.add(base, b.mul(q, _i64(hifloat4.QUAD)))
                m = ir.Constant(F32, 0.0)
                for d in range(hifloat4.QUAD):
                    m = _fmax(b, m, _abs0(cg, src.load(b, i, b.add(j0, _i64(d)))))
                b.store(m, b.gep(quads, [q], source_etype=F32))
            ma = ir.Constant(F32, 0.0)
            for q in range(hifloat4.BLOCK // hifloat4.QUAD):
                ma = _fmax(b, ma, b.load(b.gep(quads, [_i64(q)], source_etype=F32), typ=F32))
            ea = hif4.e6m2_encode(b, hif4.bf16r(b, b.fmul(ma, ir.Constant(F32, float(hifloat4.INV7)))))
            rec = hif4.e6m2_reciprocal(b, ea)
            col = b.mul(g, _i64(hifloat4.RECORD))
            exp.store_raw(b, i, col, b.trunc(ea, I8))
            for k in range(2):
                b.store(_i32(0), b.gep(bits, [_i64(k)], source_etype=I32))
            half, one = ir.Constant(F32, 0.5), ir.Constant(F32, 1.0)
            with cg.loop(0, hifloat4.BLOCK // hifloat4.OCTET, name="hif4.o") as o:
                o32 = b.trunc(o, I32)
                mcs = [b.load(b.gep(quads, [b.add(b.mul(o, _i64(2)), _i64(d))], source_etype=F32), typ=F32)
                       for d in range(2)]
                eb = b.fcmp_ordered(">=", hif4.bf16r(b, b.fmul(_fmax(b, mcs[0], mcs[1]), rec)), ir.Constant(F32, 4.0))
                eb_slot = b.gep(bits, [_i64(0)], source_etype=I32)
                b.store(b.or_(b.load(eb_slot, typ=I32), b.shl(b.zext(eb, I32), o32)), eb_slot)
                eb_rec = b.select(eb, half, one)
                for d in range(2):
                    t = hif4.bf16r(b, b.fmul(hif4.bf16r(b, b.fmul(mcs[d], rec)), eb_rec))
                    ec = b.fcmp_ordered(">=", t, ir.Constant(F32, 2.0))
                    ec_slot = b.gep(bits, [_i64(1)], source_etype=I32)
                    shift = b.add(b.mul(o32, _i32(2)), _i32(d))
                    b.store(b.or_(b.load(ec_slot, typ=I32), b.shl(b.zext(ec, I32), shift)), ec_slot)
                    scale = hif4.bf16r(b, b.fmul(rec, b.fmul(eb_rec, b.select(ec, half, one))))
                    j0 = b.add(base, b.add(b.mul(o, _i64(hifloat4.OCTET)), _i64(d * hifloat4.QUAD)))
                    for e in range(hifloat4.QUAD):
                        j = b.add(j0, _i64(e))
                        v = hif4.bf16r(b, b.fmul(src.load(b, i, j), scale))
                        code = fp4.encode(b, dt.FP4_E1M2.name, v)
                        code = b.select(b.fcmp_unordered("ueq", v, ir.Constant(F32, 0.0)), ir.Constant(I8, 0), code)
                        dst.store_raw(b, i, j, code)
            ebits = b.load(b.gep(bits, [_i64(0)], source_etype=I32), typ=I32)
            ecbits = b.load(b.gep(bits, [_i64(1)], source_etype=I32), typ=I32)
            exp.store_raw(b, i, b.add(col, _i64(1)), b.trunc(ebits, I8))
            exp.store_raw(b, i, b.add(col, _i64(2)), b.trunc(ecbits, I8))
            exp.store_raw(b, i, b.add(col, _i64(3)), b.trunc(b.lshr(ecbits, _i32(8)), I8))


RULES["TQUANT_HIF4"] = _tquant_hif4
