"""The ``arith`` scalar ops in LLVM, with the meaning ``backends/reference/scalars.py`` gives
them: integers wrap, x / 0 = -1 and x rem 0 = x, MIN / -1 = MIN, over-wide shifts shift
everything out; float ops compute in f32 and round once to their type; ``maxf``/``minf`` are
IEEE maxNum (a NaN operand is ignored; ``maxnumf``/``minnumf`` are the same), ``maximumf``/``minimumf``
propagate NaN; ``remf`` is fmod; float to integer casts saturate and send NaN to 0; ``bitcast``
keeps the bits.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from llvmlite import ir

from ...assembler import scalar_ops as S
from ...assembler.ir import ScalarOp
from ...isa.types import ScalarType
from . import numerics as N

if TYPE_CHECKING:
    from .codegen import KernelCodegen


def is_signed(t: ScalarType) -> bool:
    return t.name == "index" or t.dtype.kind == "int"


def width(t: ScalarType) -> int:
    return 64 if t.name == "index" else 1 if t.name == "i1" else t.dtype.bits


def _c(ty: ir.IntType, v: int) -> ir.Constant:
    return ir.Constant(ty, v)


def int_div(b: ir.IRBuilder, a: ir.Value, d: ir.Value, signed: bool, kind: str = "div") -> ir.Value:
    """``kind`` div / rem / floordiv / ceildiv with the ISA's rules for 0 and MIN / -1."""
    ty: ir.IntType = a.type
    zero, one, ones = _c(ty, 0), _c(ty, 1), _c(ty, -1)
    dz = b.icmp_unsigned("==", d, zero)
    if signed:
        ovf = b.and_(b.icmp_signed("==", a, _c(ty, -(1 << (ty.width - 1)))), b.icmp_signed("==", d, ones))
        safe = b.select(b.or_(dz, ovf), one, d)
        q, rem = b.sdiv(a, safe), b.srem(a, safe)
    else:
        safe = b.select(dz, one, d)
        q, rem = b.udiv(a, safe), b.urem(a, safe)
    if kind == "rem":
        return b.select(dz, a, rem)
    if kind == "floordiv":
        adjust = b.and_(b.icmp_unsigned("!=", rem, zero),
                        b.icmp_unsigned("!=", b.icmp_signed("<", rem, zero), b.icmp_signed("<", d, zero)))
        q = b.sub(q, b.zext(adjust, ty))
    elif kind == "ceildiv":
        adjust = b.icmp_unsigned("!=", rem, zero)
        if signed:
            adjust = b.and_(adjust, b.icmp_unsigned("==", b.icmp_signed("<", rem, zero), b.icmp_signed("<", d, zero)))
        q = b.add(q, b.zext(adjust, ty))
    return b.select(dz, ones, q)


def shift(b: ir.IRBuilder, a: ir.Value, n: ir.Value, kind: str) -> ir.Value:
    """``shl`` / ``lshr`` / ``ashr`` with the count read unsigned; a count >= the width
    shifts everything out (an arithmetic right shift fills with the sign)."""
    ty: ir.IntType = a.type
    w = _c(ty, ty.width)
    over = b.icmp_unsigned(">=", n, w)
    masked = b.and_(n, _c(ty, ty.width - 1))
    if kind == "shl":
        return b.select(over, _c(ty, 0), b.shl(a, masked))
    if kind == "lshr":
        return b.select(over, _c(ty, 0), b.lshr(a, masked))
    return b.ashr(a, b.select(over, _c(ty, ty.width - 1), masked))


def _minmax(b: ir.IRBuilder, a: ir.Value, c: ir.Value, signed: bool, want_max: bool) -> ir.Value:
    cmp = b.icmp_signed if signed else b.icmp_unsigned
    return b.select(cmp(">" if want_max else "<", a, c), a, c)


_INT: dict[str, Callable[[ir.IRBuilder, ir.Value, ir.Value, bool], ir.Value]] = {
    "addi": lambda b, x, y, s: b.add(x, y),
    "subi": lambda b, x, y, s: b.sub(x, y),
    "muli": lambda b, x, y, s: b.mul(x, y),
    "divsi": lambda b, x, y, s: int_div(b, x, y, True),
    "divui": lambda b, x, y, s: int_div(b, x, y, False),
    "remsi": lambda b, x, y, s: int_div(b, x, y, True, "rem"),
    "remui": lambda b, x, y, s: int_div(b, x, y, False, "rem"),
    "floordivsi": lambda b, x, y, s: int_div(b, x, y, True, "floordiv"),
    "ceildivsi": lambda b, x, y, s: int_div(b, x, y, True, "ceildiv"),
    "ceildivui": lambda b, x, y, s: int_div(b, x, y, False, "ceildiv"),
    "andi": lambda b, x, y, s: b.and_(x, y),
    "ori": lambda b, x, y, s: b.or_(x, y),
    "xori": lambda b, x, y, s: b.xor(x, y),
    "shli": lambda b, x, y, s: shift(b, x, y, "shl"),
    "shrsi": lambda b, x, y, s: shift(b, x, y, "ashr"),
    "shrui": lambda b, x, y, s: shift(b, x, y, "lshr"),
    "maxsi": lambda b, x, y, s: _minmax(b, x, y, True, True),
    "minsi": lambda b, x, y, s: _minmax(b, x, y, True, False),
    "maxui": lambda b, x, y, s: _minmax(b, x, y, False, True),
    "minui": lambda b, x, y, s: _minmax(b, x, y, False, False),
}

#: float op -> (LLVM instruction or intrinsic); intrinsics named with their f32 suffix
_FLOAT = {"addf": "fadd", "subf": "fsub", "mulf": "fmul", "divf": "fdiv", "remf": "frem",
          "maxf": "llvm.maximumnum.f32", "minf": "llvm.minimumnum.f32",
          "maxnumf": "llvm.maximumnum.f32", "minnumf": "llvm.minimumnum.f32",
          "maximumf": "llvm.maximum.f32", "minimumf": "llvm.minimum.f32"}

_CMPI = {"eq": ("==", None), "ne": ("!=", None), "slt": ("<", True), "sle": ("<=", True), "sgt": (">", True),
         "sge": (">=", True), "ult": ("<", False), "ule": ("<=", False), "ugt": (">", False), "uge": (">=", False)}
_CMPF = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=", "one": "!=", "ord": "ord", "uno": "uno"}


def float_binary(cg: "KernelCodegen", op: str, a: ir.Value, c: ir.Value) -> ir.Value:
    name = _FLOAT[op]
    if name.startswith("llvm."):
        return cg.intrinsic(name, N.F32, [a, c])
    return getattr(cg.b, name)(a, c)


def cmpf(b: ir.IRBuilder, pred: str, a: ir.Value, c: ir.Value) -> ir.Value:
    if pred in ("true", "false"):
        return ir.Constant(N.I1, int(pred == "true"))
    if pred in _CMPF:
        return b.fcmp_ordered(_CMPF[pred], a, c) if pred != "uno" else b.fcmp_unordered("uno", a, c)
    return b.fcmp_unordered(_CMPF["o" + pred[1:]], a, c)


def to_float(cg: "KernelCodegen", v: ir.Value, signed: bool, dst: ScalarType) -> ir.Value:
    """An integer as a float of ``dst`` (through f64, as the reference converts)."""
    b = cg.b
    wide = b.sitofp(v, N.F64) if signed else b.uitofp(v, N.F64)
    return N.round_to(b, dst.dtype, b.fptrunc(wide, N.F32))


def to_int(cg: "KernelCodegen", v: ir.Value, signed: bool, dst_ty: ir.IntType) -> ir.Value:
    """A float as an integer: saturating, NaN -> 0 (``llvm.fpto[su]i.sat``)."""
    name = f"llvm.fpto{'s' if signed else 'u'}i.sat.i{dst_ty.width}.f32"
    return cg.intrinsic(name, dst_ty, [v])


def resize(b: ir.IRBuilder, v: ir.Value, signed: bool, ty: ir.IntType) -> ir.Value:
    w, have = ty.width, v.type.width
    if w == have:
        return v
    if w < have:
        return b.trunc(v, ty)
    return b.sext(v, ty) if signed else b.zext(v, ty)


def bitcast(b: ir.IRBuilder, v: ir.Value, src: ScalarType, dst: ScalarType) -> ir.Value:
    """The same element bits read as ``dst`` (equal widths). Floats are carried in f32, so an
    f16/bf16 goes through its stored form (``numerics.store`` / ``load``)."""
    bits_ty = ir.IntType(width(src))
    raw = N.store(b, src.dtype, v) if src.is_float else v
    if raw.type != bits_ty:
        raw = b.bitcast(raw, bits_ty)
    if not dst.is_float:
        return raw
    if dst.name == "f32":
        return b.bitcast(raw, N.F32)
    return N.load(b, dst.dtype, b.bitcast(raw, N.F16) if dst.name == "f16" else raw)


# The two-result ops: (read the operands as signed, add rather than multiply).
_EXTENDED = {"addui_extended": (False, True), "mulsi_extended": (True, False), "mului_extended": (False, False)}


def extended_op(cg: "KernelCodegen", s: ScalarOp, args: list[ir.Value]) -> tuple[ir.Value, ir.Value]:
    """The low half and the high half (or the carry, an i1) of ``s``, computed at twice the
    operands' width: the MLIR arith meaning on the operands' bits."""
    b = cg.b
    signed, add = _EXTENDED[s.op]
    ty: ir.IntType = args[0].type
    wide = ir.IntType(2 * ty.width)
    x, y = ((b.sext if signed else b.zext)(a, wide) for a in args)
    full = b.add(x, y) if add else b.mul(x, y)
    high = b.trunc(b.lshr(full, _c(wide, ty.width)), ir.IntType(1) if add else ty)
    return b.trunc(full, ty), high


def scalar_op(cg: "KernelCodegen", s: ScalarOp, args: list[ir.Value]) -> ir.Value:
    b = cg.b
    spec = S.SCALAR_OPS[s.op]
    rt: ScalarType = s.result.type   # type: ignore[assignment]
    ot: ScalarType = s.operands[0].type if s.operands else rt   # type: ignore[assignment]
    cls = spec.cls
    if cls == "select":
        return b.select(*args)
    if cls == "int_binary":
        return _INT[s.op](b, args[0], args[1], is_signed(rt))
    if cls == "float_binary":
        return N.round_to(b, rt.dtype, float_binary(cg, s.op, args[0], args[1]))
    if cls == "float_unary":
        return b.fneg(args[0])
    if cls == "cmpi":
        rel, sign = _CMPI[s.predicate or ""]
        sign = is_signed(ot) if sign is None else sign
        return (b.icmp_signed if sign else b.icmp_unsigned)(rel, args[0], args[1])
    if cls == "cmpf":
        return cmpf(b, s.predicate or "", args[0], args[1])
    (v,) = args
    if s.op in ("sitofp", "uitofp"):
        return to_float(cg, v, s.op == "sitofp", rt)
    if s.op in ("fptosi", "fptoui"):
        return to_int(cg, v, not (rt.name != "index" and rt.dtype.kind == "uint"), N.scalar_type(rt.name))
    if s.op in ("extf", "truncf"):
        return N.round_to(b, rt.dtype, v)
    if s.op == "bitcast":
        return bitcast(b, v, ot, rt)
    # index_cast, index_castui, extsi, extui, trunci
    signed = {"extsi": True, "extui": False, "index_castui": False}.get(s.op, is_signed(ot))
    return resize(b, v, signed, N.scalar_type(rt.name))

