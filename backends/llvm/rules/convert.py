"""llvm lowering rules: convert instructions (TCVT for every dtype pair, every rounding and
saturation mode), as one fusable map rule.

The code follows the reference's exact method (``isa/families/convert.py``) with the same
direction tables: a source value becomes a sign and a magnitude (an f64 for float sources,
which holds every f32/f16/bf16/fp8 value exactly; a u64 for integer and i1 sources), the
magnitude is rounded to a multiple of the target's quantum 2**k, and the result is rebuilt
exactly. Everything is straight-line code (``llvm.floor``, ``llvm.ctlz`` and selects), so the
loop vectorises; the per-element direction of FLOOR/CEIL is a select on the sign.

The common pairs take native instructions that give the same bits (``_native``): a widening
f16 / bf16 -> f32, f32 -> f16 / bf16 to nearest even, float -> 8/16/32-bit integers (the
rounding function, a saturating conversion and a clamp), small integers -> f32 / f16 / bf16.
The exact method costs about 1 ns an element; these vectorise to a few instructions.
"""
from __future__ import annotations

from typing import Any, Callable

from llvmlite import ir

from ....assembler.ir import TileOp
from ....isa import dtypes as dt
from ....isa.attrs import RoundMode, SatMode
from ....isa.families.convert import DIRS, FORMATS, OVERFLOW_TO_INF, Dir
from .. import numerics as N
from ...maprules import Access, MapRule
from ..codegen import KernelCodegen

I1, I64, F32, F64 = N.I1, N.I64, N.F32, N.F64


def _i(v: int) -> ir.Constant:
    return ir.Constant(I64, v & ((1 << 64) - 1))


def _d(v: float) -> ir.Constant:
    return ir.Constant(F64, v)


def _true(v: bool) -> ir.Constant:
    return ir.Constant(I1, int(v))


class _Split:
    """floor(|x| / 2**k) and what the rounding directions need to know about the rest."""

    def __init__(self, inexact: ir.Value, above_half: ir.Value, at_half: ir.Value, odd: ir.Value) -> None:
        self.inexact, self.above_half, self.at_half, self.odd = inexact, above_half, at_half, odd

    def up(self, b: ir.IRBuilder, way: Dir) -> ir.Value:
        """Whether direction ``way`` steps up from the floor (the reference's ``_UP`` table)."""
        if way is Dir.NEAREST_EVEN:
            return b.or_(self.above_half, b.and_(self.at_half, self.odd))
        if way is Dir.NEAREST_AWAY:
            return b.or_(self.above_half, self.at_half)
        if way is Dir.TOWARD_ZERO:
            return _true(False)
        if way is Dir.AWAY:
            return self.inexact
        return b.and_(self.inexact, b.not_(self.odd))


def _pick(b: ir.IRBuilder, neg: ir.Value, mode: RoundMode, of: Callable[[Dir], ir.Value]) -> ir.Value:
    """``of(direction)`` for the direction ``mode`` takes at each element's sign."""
    pos_dir, neg_dir = DIRS[mode]
    if pos_dir is neg_dir:
        return of(pos_dir)
    return b.select(neg, of(neg_dir), of(pos_dir))


def _pow2(b: ir.IRBuilder, k: ir.Value) -> ir.Value:
    """2.0**k as an f64 (k an i64 within the normal exponent range)."""
    return b.bitcast(b.shl(b.add(k, _i(1023)), _i(52)), F64)


def _split_float(cg: KernelCodegen, s: ir.Value) -> tuple[ir.Value, _Split]:
    """floor(s) and the split of an f64 ``s`` >= 0."""
    b = cg.b
    fl = cg.intrinsic("llvm.floor.f64", F64, [s])
    frac = b.fsub(s, fl)
    halved = b.fmul(fl, _d(0.5))
    odd = b.fcmp_ordered("!=", halved, cg.intrinsic("llvm.floor.f64", F64, [halved]))
    return fl, _Split(b.fcmp_ordered("!=", frac, _d(0.0)), b.fcmp_ordered(">", frac, _d(0.5)),
                      b.fcmp_ordered("==", frac, _d(0.5)), odd)


def _split_int(b: ir.IRBuilder, mag: ir.Value, k: ir.Value) -> tuple[ir.Value, _Split]:
    """mag >> k and the split of a u64 ``mag`` (0 <= k <= 62)."""
    fl = b.lshr(mag, k)
    rem = b.sub(mag, b.shl(fl, k))
    twice, half = b.shl(rem, _i(1)), b.shl(_i(1), k)
    odd = b.icmp_unsigned("!=", b.and_(fl, _i(1)), _i(0))
    return fl, _Split(b.icmp_unsigned("!=", rem, _i(0)), b.icmp_unsigned(">", twice, half),
                      b.icmp_unsigned("==", twice, half), odd)


class _Parts:
    """A source value as sign and magnitude (f64 or u64), NaN and infinity flagged."""

    def __init__(self, cg: KernelCodegen, src: dt.DType, x: ir.Value) -> None:
        b = cg.b
        self.is_float = src.is_float
        if src.is_float:
            xd = b.fpext(x, F64)
            ax = cg.intrinsic("llvm.fabs.f64", F64, [xd])
            self.nan = b.fcmp_unordered("uno", xd, xd)
            self.inf = b.fcmp_ordered("==", ax, _d(float("inf")))
            sign = b.icmp_signed("<", b.bitcast(xd, I64), _i(0))
            self.neg = b.and_(sign, b.not_(self.nan))
            self.mag = b.select(b.or_(self.nan, self.inf), _d(0.0), ax)
        else:
            wide = x if x.type == I64 else (b.sext(x, I64) if src.kind == "int" else b.zext(x, I64))
            self.wide = wide
            self.nan = self.inf = _true(False)
            self.neg = b.icmp_signed("<", wide, _i(0)) if src.kind == "int" else _true(False)
            self.mag = b.select(self.neg, b.neg(wide), wide)


def _to_int(cg: KernelCodegen, p: _Parts, d: dt.DType, mode: RoundMode, sat: SatMode) -> ir.Value:
    b = cg.b
    ty = N.compute(d)
    if p.is_float:
        fl, sp = _split_float(cg, p.mag)
        r = b.fadd(fl, b.uitofp(_pick(b, p.neg, mode, lambda w: sp.up(b, w)), F64))
        big = b.fcmp_ordered(">=", r, _d(2.0 ** 64))
        # r mod 2**64 for r >= 2**64: the significand shifted left by (exponent - 52) >= 12
        rb = b.bitcast(r, I64)
        sh = b.sub(b.lshr(rb, _i(52)), _i(1023 + 52))
        sig = b.or_(b.and_(rb, _i((1 << 52) - 1)), _i(1 << 52))
        wrapped = b.select(b.icmp_unsigned("<", sh, _i(64)), b.shl(sig, b.and_(sh, _i(63))), _i(0))
        low = b.select(big, wrapped, cg.intrinsic("llvm.fptoui.sat.i64.f64", I64, [r]))
    else:
        if sat is SatMode.OFF:
            return b.trunc(p.wide, ty) if ty.width < 64 else p.wide
        big, low = _true(False), p.mag
    if sat is SatMode.ON:
        limit = b.select(p.neg, _i(-int(d.min)), _i(int(d.max)))
        low = b.select(b.or_(big, b.icmp_unsigned(">", low, limit)), limit, low)
    out = b.select(p.neg, b.neg(low), low)
    out = b.trunc(out, ty) if ty.width < 64 else out
    if p.is_float:
        extreme = b.select(p.neg, ir.Constant(ty, int(d.min)), ir.Constant(ty, int(d.max)))
        out = b.select(p.inf, extreme, out)
        out = b.select(p.nan, ir.Constant(ty, 0), out)
    return out


def _quantum(b: ir.IRBuilder, d: dt.DType, e: ir.Value) -> ir.Value:
    """k (i64): a magnitude with binary exponent e rounds to a multiple of 2**k in ``d`` (the
    reference's ``quantum``; HiF8's precision tapers: 3, 2 or 1 mantissa bits, 0 below 2**-15)."""
    f = FORMATS[d]
    e = b.select(b.icmp_signed("<", e, _i(f.min_exp)), _i(f.min_exp), e)
    if d is not dt.HIF8:
        return b.sub(e, _i(f.precision - 1))
    a = b.select(b.icmp_signed("<", e, _i(0)), b.neg(e), e)
    m = b.select(b.icmp_signed("<=", e, _i(-16)), _i(0),
                 b.select(b.icmp_unsigned("<=", a, _i(3)), _i(3), b.select(b.icmp_unsigned("<=", a, _i(7)), _i(2), _i(1))))
    return b.sub(e, m)


def _to_float(cg: KernelCodegen, p: _Parts, src: dt.DType, d: dt.DType, mode: RoundMode,
              sat: SatMode) -> ir.Value:
    b = cg.b
    f = FORMATS[d]
    if p.is_float:
        if src == d:   # same float type: round to an integral value
            k = _i(0)
        else:
            e = b.sub(b.lshr(b.bitcast(p.mag, I64), _i(52)), _i(1023))
            k = _quantum(b, d, e)
        fl, sp = _split_float(cg, b.fmul(p.mag, _pow2(b, b.neg(k))))
        r = b.fadd(fl, b.uitofp(_pick(b, p.neg, mode, lambda w: sp.up(b, w)), F64))
    else:
        e = b.sub(_i(63), cg.intrinsic("llvm.ctlz.i64", I64, [p.mag, _true(False)]))
        k = _quantum(b, d, e)
        k = b.select(b.icmp_signed("<", k, _i(0)), _i(0), k)
        fl, sp = _split_int(b, p.mag, k)
        r = b.uitofp(b.add(fl, b.zext(_pick(b, p.neg, mode, lambda w: sp.up(b, w)), I64)), F64)
    val = b.fmul(r, _pow2(b, k))
    inf = _d(float("inf"))
    overflowed = _pick(b, p.neg, mode, lambda w: inf if w in OVERFLOW_TO_INF else _d(f.max))
    val = b.select(b.fcmp_ordered(">", val, _d(f.max)), overflowed, val)
    val = b.select(p.inf, inf, val)
    if not f.has_inf:
        keep_max = sat is SatMode.ON or d in dt.FP4           # fp4 has no NaN: always saturates
        val = b.select(b.fcmp_ordered("==", val, inf), _d(f.max if keep_max else float("nan")), val)
    val = b.select(p.neg, b.fneg(val), val)
    val = b.select(p.nan, _d(float("nan")), val)
    return b.fptrunc(val, F32)


#: the f32 rounding function each round mode takes to an integral value (RINT: ``_rint``;
#: round-to-odd has none)
_INTEGRAL = {RoundMode.ROUND: "llvm.round.f32", RoundMode.FLOOR: "llvm.floor.f32",
             RoundMode.CEIL: "llvm.ceil.f32", RoundMode.TRUNC: "llvm.trunc.f32"}
_NEAREST_EVEN = (RoundMode.NONE, RoundMode.RINT)
_QNAN = ir.Constant(F32, float("nan"))


def _f(v: float) -> ir.Constant:
    return ir.Constant(F32, v)


def _nan_to(b: ir.IRBuilder, x: ir.Value, v: ir.Value, nan: ir.Value = _QNAN) -> ir.Value:
    """v, or ``nan`` (the positive quiet NaN: the reference keeps no sign or payload) where x is NaN."""
    return b.select(b.fcmp_unordered("uno", x, x), nan, v)


def _rint(cg: KernelCodegen, x: ir.Value) -> ir.Value:
    """x rounded to an integral f32, ties to even: x + 2**23 - 2**23 (signs copied) below 2**23,
    where every f32 is integral already. (llvm.roundeven of an f16 widened to f32 is narrowed by
    LLVM to a scalar f16 rounding; this form vectorises for every source.)"""
    b = cg.b
    magic = cg.intrinsic("llvm.copysign.f32", F32, [_f(2.0 ** 23), x])
    r = b.fsub(b.fadd(x, magic), magic)
    small = b.fcmp_ordered("<", cg.intrinsic("llvm.fabs.f32", F32, [x]), _f(2.0 ** 23))
    return cg.intrinsic("llvm.copysign.f32", F32, [b.select(small, r, x), x])


def _integral(cg: KernelCodegen, mode: RoundMode, x: ir.Value) -> ir.Value:
    return _rint(cg, x) if mode in _NEAREST_EVEN else cg.intrinsic(_INTEGRAL[mode], F32, [x])


def _clamp(b: ir.IRBuilder, v: ir.Value, lo: ir.Value, hi: ir.Value) -> ir.Value:
    less, more = (lambda a, c: b.fcmp_ordered("<", a, c), lambda a, c: b.fcmp_ordered(">", a, c)) \
        if isinstance(v.type, ir.FloatType) else (lambda a, c: b.icmp_signed("<", a, c),
                                                   lambda a, c: b.icmp_signed(">", a, c))
    v = b.select(less(v, lo), lo, v)
    return b.select(more(v, hi), hi, v)


def _float_to_int(cg: KernelCodegen, src: dt.DType, dst: dt.DType, mode: RoundMode, sat: SatMode,
                  x: ir.Value) -> ir.Value | None:
    """Float -> 8/16/32-bit integer (satMode ON; OFF from f16 only) by the rounding function and
    a plain, vectorising fptosi of a value clamped into range first."""
    if not (dst.is_int and dst.bits in (8, 16, 32) and mode in (*_NEAREST_EVEN, *_INTEGRAL)
            and (sat is SatMode.ON or src.name == "f16")):
        return None
    b = cg.b
    ty = N.compute(dst)
    r = x if mode is RoundMode.TRUNC else _integral(cg, mode, x)      # fptosi truncates
    if dst.bits <= 16:     # the range is exact in f32: clamp there, convert in i32
        wt = N.I32
        lo, hi = (float(dst.min), float(dst.max)) if sat is SatMode.ON else (-65536.0, 65536.0)
        wide = b.fptosi(_nan_to(b, x, _clamp(b, r, _f(lo), _f(hi)), _f(0.0)), wt)
    else:                  # 32 bits: through i64 (AVX-512 converts those in vectors)
        wt = I64
        big = 2.0 ** 40
        wide = b.fptosi(_nan_to(b, x, _clamp(b, r, _f(-big), _f(big)), _f(0.0)), wt)
        if sat is SatMode.ON:
            wide = _clamp(b, wide, _i(int(dst.min)), _i(int(dst.max)))
    out = b.trunc(wide, ty) if ty.width < wt.width else wide
    if sat is SatMode.OFF:     # +-inf -> the target's max / min (the f16 values all fit)
        inf = b.fcmp_ordered("==", cg.intrinsic("llvm.fabs.f32", F32, [x]), _f(float("inf")))
        extreme = b.select(b.fcmp_ordered("<", x, _f(0.0)), ir.Constant(ty, int(dst.min)),
                           ir.Constant(ty, int(dst.max)))
        out = b.select(inf, extreme, out)
    return out


def _native(cg: KernelCodegen, src: dt.DType, dst: dt.DType, mode: RoundMode, sat: SatMode,
            x: ir.Value) -> ir.Value | None:
    """The conversion by native instructions where they give the exact method's bits, else None.

    Why each is exact: f16 / bf16 values are f32 values; LLVM's fptrunc and ``bf16_round`` round
    to nearest even with IEEE overflow to infinity and subnormals, as the method does; rounding
    to an integral value is exact in f32 (a same-type conversion is that rounding); an integral
    f32 clamped to the target's range converts exactly, which is satMode ON's result for every
    input, infinities included (with satMode OFF only f16 sources, whose integral values fit in
    17 bits, keep the low bits exactly); an integer of at most 16 bits is an f32 exactly (32
    bits: sitofp rounds to nearest even)."""
    b = cg.b
    if src.is_float and src.name in ("f16", "bf16", "f32"):
        if dst == src and mode in (*_NEAREST_EVEN, *_INTEGRAL):
            return _nan_to(b, x, _integral(cg, mode, x))
        if dst.name == "f32" and src.name != "f32":
            return _nan_to(b, x, x)
        if src.name == "f32" and dst.name in ("f16", "bf16") and mode in _NEAREST_EVEN:
            return _nan_to(b, x, N.load(b, dst, N.store(b, dst, x)))
        return _float_to_int(cg, src, dst, mode, sat, x)
    if src.is_int and (src.bits <= 16 or src.bits == 32 and dst.name == "f32" and mode in _NEAREST_EVEN):
        exact = b.sitofp(x, F32) if src.kind == "int" else b.uitofp(x, F32)
        if dst.name == "f32":
            return exact
        if dst.name in ("f16", "bf16") and mode in _NEAREST_EVEN:
            return N.load(b, dst, N.store(b, dst, exact))
    return None


def _dtype(op: TileOp, name: str) -> dt.DType:
    return op.args[name].type.dtype   # type: ignore[union-attr]


def _tcvt(cg: KernelCodegen, op: TileOp, vals: list[ir.Value]) -> ir.Value:
    """dst = convert(src) under roundMode / satMode, exactly as the reference."""
    b = cg.b
    src, dst = _dtype(op, "src"), _dtype(op, "dst")
    attrs = cg.attrs(op)
    mode, sat = RoundMode(attrs["roundMode"]), SatMode(attrs["satMode"])
    (x,) = vals
    if dst.kind == "bool":   # non-zero (NaN included) -> 1
        if src.is_float:
            return b.fcmp_unordered("!=", x, ir.Constant(F32, 0.0))
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    fast = _native(cg, src, dst, mode, sat, x)
    if fast is not None:
        return fast
    p = _Parts(cg, src, x)
    return _to_float(cg, p, src, dst, mode, sat) if dst.is_float else _to_int(cg, p, dst, mode, sat)


RULES: dict[str, Any] = {
    "TCVT": MapRule(reads=(Access("src", "elem", "src"),), fn=_tcvt),
}
