"""Type conversion: TCVT, with every rounding mode exact for every pair of element types.

The reference rounds exactly without a wide float type: a source value is split into
a sign and a magnitude (float64 for float sources, which holds every f32/f16/bf16/fp8
value exactly; uint64 for integer sources), the magnitude is rounded to a multiple of
the target's quantum 2**k (k = 0 for integer targets) by a data-driven direction table,
and the result is rebuilt from (sign, multiple, k), which is exactly representable.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy as np

from .. import constraints as K
from .. import dtypes as dt
from .. import fp4, hifloat8
from ..attrs import RoundMode, SatMode
from ..registry import declare
from ..spec import Attr, Domain, Example, Family, Instruction, Numerics, tuples
from ..types import Pipe
from ..values import Tile
from ._helpers import tile_in, tile_out


class Dir(enum.Enum):
    """How a magnitude is rounded (a RoundMode becomes one of these per sign)."""

    NEAREST_EVEN = "nearest, ties to the even multiple"
    NEAREST_AWAY = "nearest, ties away from zero"
    TOWARD_ZERO = "toward zero"
    AWAY = "away from zero"
    ODD = "to odd (inexact results take the odd multiple)"


# RoundMode -> (direction on |x| for x >= 0, direction on |x| for x < 0)
DIRS: dict[RoundMode, tuple[Dir, Dir]] = {
    RoundMode.NONE: (Dir.NEAREST_EVEN, Dir.NEAREST_EVEN),
    RoundMode.RINT: (Dir.NEAREST_EVEN, Dir.NEAREST_EVEN),
    RoundMode.ROUND: (Dir.NEAREST_AWAY, Dir.NEAREST_AWAY),
    RoundMode.FLOOR: (Dir.TOWARD_ZERO, Dir.AWAY),
    RoundMode.CEIL: (Dir.AWAY, Dir.TOWARD_ZERO),
    RoundMode.TRUNC: (Dir.TOWARD_ZERO, Dir.TOWARD_ZERO),
    RoundMode.ODD: (Dir.ODD, Dir.ODD),
}

# Whether to step up from floor(|x| / 2**k): (inexact, sign(frac - 1/2), floor is odd) -> bool
_UP: dict[Dir, Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = {
    Dir.NEAREST_EVEN: lambda inexact, half, odd: (half > 0) | ((half == 0) & odd),
    Dir.NEAREST_AWAY: lambda inexact, half, odd: half >= 0,
    Dir.TOWARD_ZERO: lambda inexact, half, odd: np.zeros_like(inexact),
    Dir.AWAY: lambda inexact, half, odd: inexact,
    Dir.ODD: lambda inexact, half, odd: inexact & ~odd,
}

# Directions whose overflow gives infinity (IEEE); the others give the largest finite value.
OVERFLOW_TO_INF = {Dir.NEAREST_EVEN, Dir.NEAREST_AWAY, Dir.AWAY}


@dataclass(frozen=True)
class _Format:
    """A binary float target: precision p (with the hidden bit), minimum normal exponent, max."""

    precision: int
    min_exp: int
    max: float
    has_inf: bool

    @classmethod
    def of(cls, d: dt.DType) -> "_Format":
        info = ml_dtypes.finfo(d.np_dtype)
        with np.errstate(all="ignore"):
            has_inf = bool(np.isinf(np.array(np.inf).astype(d.np_dtype)))
        return cls(int(info.nmant) + 1, int(info.minexp), float(info.max), has_inf)


FORMATS = {d: _Format.of(d) for d in dt.ALL if d.is_float}
# HiF8's precision tapers with the exponent (``quantum``); min_exp and precision are its 1.0 binade's
FORMATS[dt.HIF8] = _Format(4, hifloat8.MIN_EXP, hifloat8.MAX, True)
# the 4-bit floats: no infinity, no NaN (isa/fp4.py)
_FP4 = {dt.FP4_E2M1: fp4.E2M1, dt.FP4_E1M2: fp4.E1M2}
FORMATS.update({d: _Format(f.precision, f.min_exp, f.max, False) for d, f in _FP4.items()})
#: coded float types: codes -> float64 values, exact values -> codes
DECODE = {dt.HIF8: hifloat8.decode, **{d: f.decode for d, f in _FP4.items()}}


def _int4_value(codes: np.ndarray) -> np.ndarray:
    """i4 codes (low nibble, two's complement) -> int64 values in [-8, 7]."""
    low = np.asarray(codes, np.int64) & 0xF
    return np.where(low & 8, low - 16, low)


DECODE[dt.I4] = _int4_value
ENCODE_EXACT = {dt.HIF8: hifloat8.encode_exact, **{d: f.encode_exact for d, f in _FP4.items()}}
_POW2_U64 = np.array([1 << b for b in range(64)], dtype=np.uint64)


@dataclass(frozen=True)
class _Parts:
    """A source array as sign and magnitude; NaN and infinities flagged (their magnitude is 0)."""

    neg: np.ndarray
    mag: np.ndarray   # float64 (float sources) or uint64 (integer and i1 sources)
    nan: np.ndarray
    inf: np.ndarray


def _parts(a: np.ndarray, d: dt.DType) -> _Parts:
    if d in DECODE:
        a = DECODE[d](a)
    if d.is_float:
        with np.errstate(invalid="ignore"):   # a signalling NaN raises the flag when widened
            x = a.astype(np.float64)
        nan, inf = np.isnan(x), np.isinf(x)
        return _Parts(np.signbit(x) & ~nan, np.where(nan | inf, 0.0, np.abs(x)), nan, inf)
    bits = a.astype(np.uint64)   # two's complement bits for signed sources
    neg = a < 0 if d.kind == "int" else np.zeros(a.shape, dtype=bool)
    none = np.zeros(a.shape, dtype=bool)
    return _Parts(neg, np.where(neg, -bits, bits), none, none)


def _floor_log2(mag: np.ndarray) -> np.ndarray:
    """floor(log2(mag)) exactly (-1 for 0)."""
    if mag.dtype == np.float64:
        return np.frexp(mag)[1].astype(np.int64) - 1
    return np.searchsorted(_POW2_U64, mag, side="right").astype(np.int64) - 1


def _split(mag: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, ...]:
    """floor(mag / 2**k), whether the division is inexact, sign(fraction - 1/2), floor is odd."""
    if mag.dtype == np.float64:
        s = np.ldexp(mag, (-k).astype(np.int32))
        fl = np.floor(s)
        frac = s - fl
        return fl, frac != 0, np.sign(frac - 0.5), np.fmod(fl, 2) == 1
    ku = k.astype(np.uint64)          # 0 <= k <= 61 for integer sources
    fl = mag >> ku
    rem = (mag - (fl << ku)).astype(np.int64)
    return fl, rem != 0, np.sign(2 * rem - (np.int64(1) << k)), (fl & np.uint64(1)) == 1


def _pick(neg: np.ndarray, mode: RoundMode, table: dict[Dir, object]) -> np.ndarray:
    """Per element, ``table[direction]`` for the direction ``mode`` takes at that sign."""
    pos_dir, neg_dir = DIRS[mode]
    return np.where(neg, table[neg_dir], table[pos_dir])


def _round(p: _Parts, k: np.ndarray, mode: RoundMode) -> np.ndarray:
    """|x| rounded to a multiple of 2**k, returned as the multiple (float64 or uint64)."""
    fl, inexact, half, odd = _split(p.mag, k)
    up = _pick(p.neg, mode, {d: f(inexact, half, odd) for d, f in _UP.items()})
    return fl + up.astype(fl.dtype)


def _to_int(p: _Parts, d: dt.DType, mode: RoundMode, sat: SatMode) -> np.ndarray:
    if d is dt.I4:      # computed as int64 and kept as its low nibble (wrapping modulo 16)
        return (_to_int64(p, d, mode, sat) & 0xF).astype(np.uint8)
    return _to_int64(p, d, mode, sat, d.np_dtype)


def _to_int64(p: _Parts, d: dt.DType, mode: RoundMode, sat: SatMode,
              store: np.dtype = np.dtype(np.int64)) -> np.ndarray:
    """The integer result in ``store`` (the target's numpy type, or int64 for narrower ones)."""
    r = _round(p, np.zeros(p.mag.shape, dtype=np.int64), mode)
    if r.dtype == np.float64:   # bring huge float magnitudes to 64 bits: low bits and an overflow flag
        big, low = r >= 2.0 ** 64, np.fmod(r, 2.0 ** 64).astype(np.uint64)
    else:
        big, low = np.zeros(r.shape, dtype=bool), r
    if sat is SatMode.ON:
        limit = np.where(p.neg, np.uint64(-int(d.min)), np.uint64(d.max))
        low = np.where(big | (low > limit), limit, low)
    out = np.where(p.neg, -low, low).astype(store)   # keeps the low bits: wraps mod 2**bits
    out = np.where(p.inf, np.where(p.neg, store.type(d.min), store.type(d.max)), out)
    return np.where(p.nan, store.type(0), out)


def quantum(d: dt.DType, e: np.ndarray) -> np.ndarray:
    """k: a magnitude with binary exponent ``e`` rounds to a multiple of 2**k in float type ``d``."""
    if d is dt.HIF8:
        return hifloat8.quantum_exponent(e)
    f = FORMATS[d]
    return np.maximum(e, f.min_exp) - (f.precision - 1)


def _to_float(p: _Parts, src: dt.DType, d: dt.DType, mode: RoundMode, sat: SatMode) -> np.ndarray:
    f = FORMATS[d]
    if src == d:    # same float type: round to an integral value (public f32 -> f32 behaviour)
        k = np.zeros(p.mag.shape, dtype=np.int64)
    else:
        k = quantum(d, _floor_log2(p.mag))
        if not src.is_float:
            k = np.maximum(k, 0)     # an integer below 2**p is exact
    r = _round(p, k, mode)
    val = np.ldexp(r.astype(np.float64), k.astype(np.int32))
    overflowed = _pick(p.neg, mode, {way: np.inf if way in OVERFLOW_TO_INF else f.max for way in Dir})
    val = np.where(val > f.max, overflowed, val)
    val = np.where(p.inf, np.inf, val)
    if not f.has_inf:   # f8e4m3: saturation ON gives the largest finite value, OFF gives NaN
        val = np.where(np.isinf(val), f.max if sat is SatMode.ON or d in dt.FP4 else np.nan, val)
    val = np.where(p.nan, np.nan, np.where(p.neg, -val, val))
    return ENCODE_EXACT[d](val) if d in ENCODE_EXACT else val.astype(d.np_dtype)


def convert(a: np.ndarray, src: dt.DType, d: dt.DType, mode: RoundMode = RoundMode.RINT,
            sat: SatMode = SatMode.ON) -> np.ndarray:
    """``a`` (of dtype ``src``) converted to ``d`` under TCVT's rules."""
    if d.kind == "bool":
        return a != 0
    p = _parts(a, src)
    return _to_float(p, src, d, mode, sat) if d.is_float else _to_int(p, d, mode, sat)


def _tcvt(dst: Tile, src: Tile, roundMode: RoundMode, satMode: SatMode) -> None:  # noqa: N803
    r, c = dst.valid
    dst.write(convert(src.read(r, c, "src"), src.dtype, dst.dtype, roundMode, satMode), r, c)


def _pairs(table: dict[dt.DType, tuple[dt.DType, ...]]) -> list[tuple[dt.DType, dt.DType]]:
    """(dst, src) tuples from a source -> destinations table."""
    return [(d, s) for s, ds in table.items() for d in ds]


_A2 = {
    dt.F32: (dt.F32, dt.F16, dt.BF16, dt.I16, dt.I32, dt.I64),
    dt.F16: (dt.F32, dt.I32, dt.I16, dt.I8, dt.U8, dt.I4),      # S4 (int4b_t): A2/A3 only
    dt.I4: (dt.F16,),
    dt.BF16: (dt.F32, dt.I32),
    dt.I16: (dt.F16, dt.F32),
    dt.I32: (dt.F32, dt.I16, dt.I64, dt.F16),
    dt.I64: (dt.F32, dt.I32),
    dt.U8: (dt.F16,),
    dt.I8: (dt.F16,),
}
_A5 = {
    dt.F32: (dt.F32, dt.F16, dt.BF16, dt.I16, dt.I32, dt.I64, dt.F8E4M3, dt.F8E5M2),
    dt.F16: (dt.F32, dt.I32, dt.I16, dt.I8, dt.U8),
    dt.BF16: (dt.F32, dt.I32, dt.F16),
    dt.I16: (dt.U8, dt.F16, dt.F32, dt.U32, dt.I32),
    dt.I32: (dt.F32, dt.I16, dt.U16, dt.I64, dt.U8),
    dt.I64: (dt.F32, dt.I32),
    dt.U8: (dt.F16, dt.U16),
    dt.I8: (dt.F16, dt.I16, dt.I32),
    dt.U32: (dt.U8, dt.U16, dt.I16),
    dt.F8E4M3: (dt.F32,),
    dt.F8E5M2: (dt.F32,),
    dt.HIF8: (dt.F32,),
}
_A5[dt.F32] += (dt.HIF8,)        # the public table's H8 targets (A5 only)
_A5[dt.F16] += (dt.HIF8,)
_A5[dt.BF16] += dt.FP4           # the public table's FP4_E1M2X2 / FP4_E2M1X2 rows (A5 only)
_A5.update({d: (dt.BF16,) for d in dt.FP4})
# cpu: every storable pair, and each coded type (HiF8, fp4, i4; not E8M0, which no public TCVT
# table lists) to and from each arithmetic float
_CPU = ([(d, s) for d in dt.STORABLE for s in dt.STORABLE]
        + [(c, s) for c in dt.CONVERTIBLE_CODED for s in dt.FLOATS]
        + [(d, c) for c in dt.CONVERTIBLE_CODED for d in dt.FLOATS])
_OPS = ("dst", "src")

_DOC = (
    "dst[i, j] = convert(src[i, j]) over dst's valid region (src's valid region must cover "
    "it), exactly: the result is the value the source rounds to under roundMode, with "
    "satMode deciding what integer targets do out of range. roundMode: RINT (and NONE, which "
    "means RINT) nearest with ties to even, ROUND nearest with ties away from zero, FLOOR toward "
    "-inf, CEIL toward +inf, TRUNC toward zero, ODD round-to-odd (an inexact result takes the "
    "neighbour whose last significand bit, or for integers whose value, is odd). It applies "
    "wherever the value is not representable: float -> integer, float -> narrower float, "
    "integer -> float when the integer has more significant bits than the float "
    "(i32 -> f32, i64 -> f16, ...), and float -> the same float type, which rounds to an "
    "integral value in that type (the public `f32 -> f32 (round-only)` conversion, generalised "
    "to every float type). Widening float -> float, integer -> wider integer and i1 sources are "
    "exact. Integer -> integer: satMode ON clamps to the target range, OFF keeps the low bits "
    "(two's complement wrap). Float -> integer: the source is rounded to an integer n, then ON "
    "clamps n, OFF wraps n modulo 2**bits. hifloat8 (HiF8, held as its uint8 codes) is a float "
    "target like the others with a tapered grid: a magnitude of binary exponent e rounds to 3 "
    "mantissa bits for |e| <= 3, 2 for |e| <= 7, 1 for |e| <= 15, to the power of two 2**e for "
    "-22 <= e <= -16 and to a multiple of 2**-22 below; the public A5 conversion always rounds to "
    "nearest with ties away from zero, which roundMode = ROUND reproduces. float4_e2m1x2 and "
    "float4_e1m2x2 (one 4-bit element per column, see isa/fp4.py) are float targets with 1 and 2 "
    "mantissa bits, exponent bias 1 and subnormals (E2M1: 0, 0.5, 1, 1.5, 2, 3, 4, 6; E1M2: "
    "multiples of 0.25 up to 1.75); A5 converts bf16 to and from them. i4 (the public S4, "
    "int4b_t; one element per column held in the low nibble) is an integer target in [-8, 7] "
    "like the others (ON clamps, OFF wraps modulo 16); A2/A3 convert f16 to and from it. To i1: 1 where the source is non-zero (NaN "
    "included), roundMode and satMode ignored; from i1: 0 or 1. Operands are logical 2-D "
    "arrays; layout does not matter.")

_SPECIAL = (
    "NaN -> integer: 0 (both satMode values). ±inf -> integer: the target's max / min (both "
    "satMode values; 0 for -inf into unsigned). NaN -> float: the target's quiet NaN (sign and "
    "payload not kept). ±inf -> float: ±inf; f8e4m3 has no infinity: ±448 with satMode ON, NaN "
    "with OFF. Float overflow (the value rounded with an unbounded exponent exceeds the "
    "target's largest finite value) follows IEEE 754 per mode: RINT/ROUND give ±inf, TRUNC gives "
    "±max finite, FLOOR gives -inf below and +max above, CEIL +inf above and -max below; ODD "
    "gives ±max finite; f8e4m3 replaces an infinity by ±448 (ON) or NaN (OFF); hifloat8 has "
    "infinities (codes 0x6F / 0xEF) and overflows past ±32768 like an IEEE type, writes NaN as "
    "0x80 and every zero as 0x00 (it has no -0), satMode not mattering. The fp4 formats have "
    "neither infinity nor NaN: overflow and ±inf give ±max (6 or 1.75) under every roundMode "
    "and satMode, NaN gives +0 (code 0), and -0 is kept (code 8). Ties at the "
    "overflow threshold follow the mode as if the next binade existed (f16 65520 -> inf under "
    "RINT; f8e4m3 464 -> 448 under RINT because 448 has an even significand). Underflow is "
    "gradual: denormal results are produced exactly and never flushed; a negative value that "
    "rounds to zero gives -0.0 in float targets. -0.0 -> integer gives 0. Integer targets out of "
    "range: satMode ON clamps to [min, max] (negative values into unsigned targets give 0), "
    "OFF wraps modulo 2**bits (f32 3e9 -> i32 gives -1294967296). Public ISA: default saturation "
    "is ON except for some pairs (f16->u8/i8/i16, f32->i16, i64->i32, i32->i16 default OFF on "
    "A2/A3) and the public CPU model ignores roundMode for float -> float; openpto's default is ON "
    "for every pair and roundMode always applies.")

declare(Instruction(
    mnemonic="TCVT", family=Family.ELEMENTWISE, summary="convert element type with a rounding mode",
    operands=(tile_out("dst", "destination tile (target element type)"),
              tile_in("src", "source tile")),
    attrs=(Attr("roundMode", RoundMode, RoundMode.RINT, "rounding mode; NONE means RINT"),
           Attr("satMode", SatMode, SatMode.ON, "ON clamps out-of-range integers (and f8e4m3 "
                                                "overflow) to the target range, OFF wraps")),
    semantics=_tcvt,
    dtypes=tuples(_OPS, _CPU),
    profile_dtypes={"a2": tuples(_OPS, _pairs(_A2)), "a3": tuples(_OPS, _pairs(_A2)),
                    "a5": tuples(_OPS, _pairs(_A5))},
    numerics=Numerics("rounded", note="bit-identical under every rounding and saturation mode (the "
                                      "attributes pick the rounding, not only RNE)"),
    domain=Domain.DST, pipe=Pipe.V, doc=_DOC,
    example=Example({"dst": "!pto.tile<16x16xf16>", "src": "!pto.tile<16x16xf32>"},
                    {"roundMode": RoundMode.ROUND}),
    constraints=(K.covers(("src",)),),
    special_values=_SPECIAL))
