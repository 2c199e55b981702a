"""TCVT against expectations computed here: hand-written literals and a brute-force model
over exact rationals (fractions.Fraction) that finds the two representable neighbours of
each source value by search, independently of the reference's quantum arithmetic."""
from __future__ import annotations

import bisect
import functools
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import openpto.isa as isa
from openpto.isa import checks, profiles
from openpto.isa import dtypes as dt
from openpto.isa.attrs import RoundMode as R
from openpto.isa.attrs import SatMode as S
from openpto.isa.spec import Domain
from openpto.isa.types import Pipe, parse_type

pytestmark = pytest.mark.filterwarnings("error")

TCVT = isa.get("TCVT")
TYPES = dt.STORABLE
F32, F16, BF16, E4M3, E5M2 = dt.F32, dt.F16, dt.BF16, dt.F8E4M3, dt.F8E5M2
I8, U8, I16, U16, I32, U32, I64, U64, I1 = dt.I8, dt.U8, dt.I16, dt.U16, dt.I32, dt.U32, dt.I64, dt.U64, dt.I1
NAN, INF = float("nan"), float("inf")


def run(values: list, src: dt.DType, dst: dt.DType, mode: R | None = None,
        sat: S | None = None) -> np.ndarray:
    """TCVT of a 1xN tile; attributes left out take their defaults."""
    a = np.array(values, dtype=np.float64 if src.is_float else object).astype(src.np_dtype)
    s = isa.Tile.of(a.reshape(1, -1))
    d = isa.Tile.empty(s.type.with_(dtype=dst))
    attrs = {k: v for k, v in (("roundMode", mode), ("satMode", sat)) if v is not None}
    TCVT.execute(dst=d, src=s, **attrs)
    return d.data[0]


def same_value(got: object, want: object) -> bool:
    """Equal, with NaN == NaN and the sign of zero significant."""
    if isinstance(want, float):
        g = float(got)
        if math.isnan(want):
            return math.isnan(g)
        return g == want and math.copysign(1, g) == math.copysign(1, want)
    return int(got) == int(want)


# ------------------------------------------------------------------ hand-computed cases

H = 2.0 ** -11          # half an f16 ulp at 1.0
B = 2.0 ** -8           # half a bf16 ulp at 1.0
DEN16 = 2.0 ** -24      # smallest f16 denormal

# (src, dst, mode, sat, input, expected)
CASES = [
    # float -> int, every mode, positive and negative ties
    *[(F32, I32, m, S.ON, x, y) for m, pairs in {
        R.RINT: [(2.5, 2), (-2.5, -2), (3.5, 4), (-3.5, -4), (0.5, 0), (2.7, 3), (-2.7, -3)],
        R.NONE: [(2.5, 2), (-2.5, -2), (3.5, 4), (-0.5, 0)],
        R.ROUND: [(2.5, 3), (-2.5, -3), (0.5, 1), (-0.5, -1), (2.4, 2), (-2.4, -2)],
        R.FLOOR: [(2.7, 2), (-2.7, -3), (-0.5, -1), (2.0, 2)],
        R.CEIL: [(2.3, 3), (-2.3, -2), (0.1, 1), (-0.9, 0)],
        R.TRUNC: [(2.7, 2), (-2.7, -2), (-0.9, 0)],
        R.ODD: [(2.5, 3), (3.5, 3), (4.2, 5), (-4.2, -5), (2.0, 2), (0.3, 1), (-0.3, -1)],
    }.items() for x, y in pairs],
    (F16, I8, R.RINT, S.ON, -0.0, 0),
    # f32 -> f16 ties and neighbours of 1.0
    *[(F32, F16, m, S.ON, x, y) for m, pairs in {
        R.RINT: [(1 + H, 1.0), (-(1 + H), -1.0), (1 + 3 * H, 1 + 4 * H), (-(1 + 3 * H), -(1 + 4 * H))],
        R.ROUND: [(1 + H, 1 + 2 * H), (-(1 + H), -(1 + 2 * H)), (1 + 3 * H, 1 + 4 * H)],
        R.FLOOR: [(1 + H, 1.0), (-(1 + H), -(1 + 2 * H))],
        R.CEIL: [(1 + H, 1 + 2 * H), (-(1 + H), -1.0)],
        R.TRUNC: [(1 + H, 1.0), (-(1 + H), -1.0), (1 + 1.9 * H, 1.0)],
        R.ODD: [(1 + H, 1 + 2 * H), (1 + 3 * H, 1 + 2 * H), (-(1 + 0.1 * H), -(1 + 2 * H)), (1.5, 1.5)],
    }.items() for x, y in pairs],
    # f32 -> bf16 ties
    (F32, BF16, R.RINT, S.ON, 1 + B, 1.0), (F32, BF16, R.RINT, S.ON, 1 + 3 * B, 1 + 4 * B),
    (F32, BF16, R.ROUND, S.ON, 1 + B, 1 + 2 * B), (F32, BF16, R.ROUND, S.ON, -(1 + B), -(1 + 2 * B)),
    (F32, BF16, R.ODD, S.ON, 1 + 0.5 * B, 1 + 2 * B), (F32, BF16, R.FLOOR, S.ON, -(1 + 0.5 * B), -(1 + 2 * B)),
    # f32 -> f16 overflow, per mode
    *[(F32, F16, m, S.ON, x, y) for m, pairs in {
        R.RINT: [(70000.0, INF), (-70000.0, -INF), (65519.0, 65504.0), (65520.0, INF)],
        R.ROUND: [(65520.0, INF), (-1e30, -INF)],
        R.TRUNC: [(70000.0, 65504.0), (-1e30, -65504.0)],
        R.FLOOR: [(70000.0, 65504.0), (-70000.0, -INF)],
        R.CEIL: [(70000.0, INF), (-70000.0, -65504.0)],
        R.ODD: [(70000.0, 65504.0), (-1e30, -65504.0)],
    }.items() for x, y in pairs],
    # f8e4m3 (no infinity) and f8e5m2
    (F32, E4M3, R.RINT, S.ON, 500.0, 448.0), (F32, E4M3, R.RINT, S.OFF, 500.0, NAN),
    (F32, E4M3, R.RINT, S.ON, -INF, -448.0), (F32, E4M3, R.RINT, S.OFF, INF, NAN),
    (F32, E4M3, R.RINT, S.ON, 464.0, 448.0), (F32, E4M3, R.RINT, S.OFF, 465.0, NAN),
    (F32, E4M3, R.TRUNC, S.OFF, 1000.0, 448.0), (F32, E4M3, R.RINT, S.ON, NAN, NAN),
    (F32, E4M3, R.RINT, S.ON, 17.0, 16.0), (F32, E4M3, R.ROUND, S.ON, 17.0, 18.0),
    (F32, E5M2, R.RINT, S.ON, 1e6, INF), (F32, E5M2, R.TRUNC, S.ON, 1e6, 57344.0),
    (F32, E5M2, R.RINT, S.ON, -INF, -INF), (F32, E5M2, R.RINT, S.ON, 2.0 ** -16, 2.0 ** -16),
    # denormals
    (F32, F16, R.RINT, S.ON, DEN16, DEN16), (F32, F16, R.RINT, S.ON, DEN16 / 2, 0.0),
    (F32, F16, R.ROUND, S.ON, DEN16 / 2, DEN16), (F32, F16, R.RINT, S.ON, -DEN16 / 2, -0.0),
    (F32, F16, R.RINT, S.ON, 1.5 * DEN16, 2 * DEN16), (F32, F16, R.RINT, S.ON, 0.75 * DEN16, DEN16),
    (F32, F16, R.ODD, S.ON, 2.0 ** -30, DEN16), (F32, F16, R.CEIL, S.ON, 2.0 ** -30, DEN16),
    (F32, F16, R.FLOOR, S.ON, 2.0 ** -30, 0.0), (F32, F16, R.FLOOR, S.ON, -(2.0 ** -30), -DEN16),
    (F32, BF16, R.RINT, S.ON, 2.0 ** -149, 0.0), (F32, BF16, R.CEIL, S.ON, 2.0 ** -149, 2.0 ** -133),
    (F16, F32, R.RINT, S.ON, DEN16, DEN16), (E4M3, F32, R.RINT, S.ON, 2.0 ** -9, 2.0 ** -9),
    (F32, I32, R.CEIL, S.ON, 2.0 ** -149, 1), (F32, I32, R.FLOOR, S.ON, -(2.0 ** -149), -1),
    # float -> int saturation and wrapping
    (F32, I32, R.RINT, S.ON, 3e9, 2147483647), (F32, I32, R.RINT, S.OFF, 3e9, -1294967296),
    (F32, I32, R.RINT, S.OFF, -3e9, 1294967296), (F32, I32, R.RINT, S.ON, -3e9, -2147483648),
    (F32, U8, R.RINT, S.ON, 300.0, 255), (F32, U8, R.RINT, S.OFF, 300.0, 44),
    (F32, U8, R.RINT, S.ON, -1.0, 0), (F32, U8, R.RINT, S.OFF, -1.0, 255),
    (F32, U8, R.RINT, S.ON, -0.4, 0), (F32, U8, R.RINT, S.ON, -0.6, 0), (F32, I8, R.RINT, S.OFF, 128.0, -128),
    (F32, I64, R.RINT, S.ON, 2.0 ** 63, 2 ** 63 - 1), (F32, I64, R.RINT, S.OFF, 2.0 ** 63, -2 ** 63),
    (F32, I64, R.RINT, S.ON, -2.0 ** 63, -2 ** 63), (F32, I64, R.RINT, S.OFF, 1e20, 7766281635539976192),
    (F32, U64, R.RINT, S.ON, 2.0 ** 64, 2 ** 64 - 1), (F32, U64, R.RINT, S.OFF, 2.0 ** 64, 0),
    (F32, U64, R.RINT, S.OFF, -3.0, 2 ** 64 - 3),
    *[(F32, d, R.RINT, s, x, y) for d, lo, hi in ((I32, -2 ** 31, 2 ** 31 - 1), (U8, 0, 255),
                                                   (I16, -32768, 32767))
      for s in S for x, y in ((NAN, 0), (INF, hi), (-INF, lo))],
    (BF16, I32, R.RINT, S.OFF, -NAN, 0), (E5M2, U16, R.RINT, S.OFF, INF, 65535),
    # integer -> integer
    (I32, U8, R.RINT, S.ON, 300, 255), (I32, U8, R.RINT, S.OFF, 300, 44),
    (I32, U32, R.RINT, S.ON, -1, 0), (I32, U32, R.RINT, S.OFF, -1, 2 ** 32 - 1),
    (U64, I64, R.RINT, S.ON, 2 ** 64 - 1, 2 ** 63 - 1), (U64, I64, R.RINT, S.OFF, 2 ** 64 - 1, -1),
    (I64, I8, R.RINT, S.ON, -2 ** 63, -128), (I64, I8, R.RINT, S.OFF, -2 ** 63, 0),
    (I64, U64, R.RINT, S.ON, -2 ** 63, 0), (I8, I64, R.RINT, S.ON, -128, -128),
    (U32, I16, R.FLOOR, S.ON, 40000, 32767), (U32, I16, R.FLOOR, S.OFF, 40000, -25536),
    # integer -> float, inexact
    *[(I32, F32, m, S.ON, x, y) for m, pairs in {
        R.RINT: [(2 ** 24 + 1, 2.0 ** 24), (2 ** 24 + 3, 2.0 ** 24 + 4), (-(2 ** 24 + 1), -2.0 ** 24)],
        R.ROUND: [(2 ** 24 + 1, 2.0 ** 24 + 2), (-(2 ** 24 + 1), -(2.0 ** 24 + 2))],
        R.FLOOR: [(2 ** 24 + 1, 2.0 ** 24), (-(2 ** 24 + 1), -(2.0 ** 24 + 2))],
        R.CEIL: [(2 ** 24 + 1, 2.0 ** 24 + 2), (-(2 ** 24 + 1), -2.0 ** 24)],
        R.TRUNC: [(2 ** 24 + 3, 2.0 ** 24 + 2), (-(2 ** 24 + 3), -(2.0 ** 24 + 2))],
        R.ODD: [(2 ** 24 + 1, 2.0 ** 24 + 2), (2 ** 24 + 2, 2.0 ** 24 + 2), (2 ** 24 + 5, 2.0 ** 24 + 6)],
    }.items() for x, y in pairs],
    (I64, F32, R.RINT, S.ON, 2 ** 63 - 1, 2.0 ** 63), (I64, F32, R.TRUNC, S.ON, 2 ** 63 - 1, 2.0 ** 63 - 2.0 ** 39),
    (U64, F32, R.RINT, S.ON, 2 ** 64 - 1, 2.0 ** 64), (U64, F32, R.TRUNC, S.ON, 2 ** 64 - 1, 2.0 ** 64 - 2.0 ** 40),
    (I64, F32, R.RINT, S.ON, -2 ** 63, -2.0 ** 63),
    (I64, F16, R.RINT, S.ON, 2049, 2048.0), (I64, F16, R.ROUND, S.ON, 2049, 2050.0),
    (I64, F16, R.FLOOR, S.ON, -2049, -2050.0), (I64, F16, R.RINT, S.ON, 65519, 65504.0),
    (I64, F16, R.RINT, S.ON, 65520, INF), (I64, F16, R.TRUNC, S.ON, 100000, 65504.0),
    (I64, F16, R.CEIL, S.ON, -100000, -65504.0), (I32, E4M3, R.RINT, S.ON, 1000, 448.0),
    (I32, E4M3, R.RINT, S.OFF, 1000, NAN), (U8, E5M2, R.RINT, S.ON, 255, 256.0),
    (U8, E5M2, R.TRUNC, S.ON, 255, 224.0), (I16, BF16, R.RINT, S.ON, 257, 256.0),
    (I16, BF16, R.RINT, S.ON, 259, 260.0), (I16, BF16, R.ROUND, S.ON, 257, 258.0),
    # same float type: round to an integral value
    *[(F32, F32, m, S.ON, x, y) for m, pairs in {
        R.RINT: [(2.5, 2.0), (-2.5, -2.0), (-0.3, -0.0), (2.0 ** 100, 2.0 ** 100), (INF, INF), (NAN, NAN)],
        R.ROUND: [(1.5, 2.0), (-0.5, -1.0), (0.4, 0.0)],
        R.FLOOR: [(-0.5, -1.0), (0.5, 0.0)],
        R.CEIL: [(-0.5, -0.0), (0.25, 1.0)],
        R.TRUNC: [(-1.75, -1.0)],
        R.ODD: [(2.5, 3.0), (4.0, 4.0), (-0.1, -1.0)],
    }.items() for x, y in pairs],
    (F16, F16, R.RINT, S.ON, 0.5, 0.0), (BF16, BF16, R.CEIL, S.ON, 1.5, 2.0),
    (E4M3, E4M3, R.ROUND, S.ON, 2.5, 3.0), (E4M3, E4M3, R.RINT, S.ON, 448.0, 448.0),
    # widening and exact integer conversions
    (I32, F32, R.RINT, S.ON, -2 ** 24, -2.0 ** 24), (U8, F16, R.RINT, S.ON, 255, 255.0),
    (E5M2, F16, R.FLOOR, S.ON, -57344.0, -57344.0), (BF16, F32, R.RINT, S.ON, -0.0, -0.0),
    # i1
    (I1, I32, R.RINT, S.ON, 1, 1), (I1, U8, R.RINT, S.ON, 0, 0), (I1, F16, R.RINT, S.ON, 1, 1.0),
    (I1, E4M3, R.RINT, S.ON, 1, 1.0), (I32, I1, R.RINT, S.ON, 5, 1), (I8, I1, R.RINT, S.ON, -128, 1),
    (I32, I1, R.RINT, S.ON, 0, 0), (F32, I1, R.FLOOR, S.ON, 0.3, 1), (F32, I1, R.RINT, S.ON, NAN, 1),
    (F32, I1, R.RINT, S.ON, -0.0, 0), (I1, I1, R.RINT, S.ON, 1, 1),
]


@pytest.mark.parametrize("src,dst,mode,sat,x,want", CASES,
                         ids=[f"{c[0]}->{c[1]}-{c[2].name}-{c[3].name}-{c[4]}" for c in CASES])
def test_hand_computed(src: dt.DType, dst: dt.DType, mode: R, sat: S, x: object, want: object) -> None:
    got = run([x], src, dst, mode, sat)[0]
    assert same_value(got, want), f"{src}->{dst} {mode.name}/{sat.name}: {x!r} gave {got!r}, want {want!r}"


def test_defaults_are_rint_and_saturation_on() -> None:
    assert TCVT.attr("roundMode").default is R.RINT and TCVT.attr("satMode").default is S.ON
    assert list(run([2.5, -3.5, 3e9], F32, I32)) == [2, -4, 2147483647]
    np.testing.assert_array_equal(run([2.5, 0.5, 1 + H], F32, F16, R.NONE), run([2.5, 0.5, 1 + H], F32, F16, R.RINT))


def test_nan_results_are_quiet() -> None:
    for src in (F32, F16, BF16, E5M2):
        for d in (F32, F16, BF16, E5M2):
            out = run([NAN, -NAN], src, d)
            bits = out.view(np.dtype(f"u{d.itemsize}")).astype(np.uint64)
            quiet = 1 << (ml_dtypes.finfo(d.np_dtype).nmant - 1)
            assert np.isnan(out.astype(np.float32)).all() and (bits & quiet).all(), (src, d)
    signalling = isa.Tile.of(np.array([[0x7F800001, 0xFF800001]], dtype=np.uint32).view(np.float32))
    out = isa.Tile.empty(signalling.type.with_(dtype=F16))
    TCVT.execute(dst=out, src=signalling)
    assert np.isnan(out.data).all() and (out.data.view(np.uint16) & 0x200).all()


def test_widening_is_exact_for_every_narrow_float() -> None:
    """Every finite f16/bf16/fp8 value survives f32 and back, in every mode."""
    for d in (F16, BF16, E4M3, E5M2):
        bits = np.arange(2 ** (8 * d.itemsize), dtype=np.dtype(f"u{d.itemsize}"))
        vals = bits.view(d.np_dtype)
        finite = np.isfinite(vals.astype(np.float32))
        s = isa.Tile.of(vals[finite].reshape(1, -1))
        wide = isa.Tile.empty(s.type.with_(dtype=F32))
        TCVT.execute(dst=wide, src=s)
        np.testing.assert_array_equal(wide.data[0].view(np.uint32), vals[finite].astype(np.float32).view(np.uint32))
        for m in R:
            back = isa.Tile.empty(s.type)
            TCVT.execute(dst=back, src=wide, roundMode=m)
            np.testing.assert_array_equal(back.data.view(bits.dtype), s.data.view(bits.dtype))


# ------------------------------------------------------------------ brute-force model

def _uint(d: dt.DType) -> np.dtype:
    return np.dtype(f"u{d.itemsize}")


@functools.lru_cache(maxsize=None)
def _magnitudes(d: dt.DType) -> tuple[list[float], int]:
    """Every finite non-negative value of a narrow float in encoding order, and max's encoding."""
    top = int(np.array(ml_dtypes.finfo(d.np_dtype).max, dtype=d.np_dtype).view(_uint(d)))
    return [float(v) for v in np.arange(top + 1, dtype=_uint(d)).view(d.np_dtype)], top


def _neighbours(a: Fraction, d: dt.DType) -> tuple[float, int, float | None]:
    """(lo, encoding of lo, hi) with lo <= a < hi consecutive magnitudes of ``d``; hi None when
    lo is the largest finite value (hi is then the virtual next value, one ulp above)."""
    if d is F32:
        lo = np.float32(float(a))
        while Fraction(float(lo)) > a:
            lo = np.nextafter(lo, np.float32(0))
        while Fraction(float(np.nextafter(lo, np.float32(INF)))) <= a:
            lo = np.nextafter(lo, np.float32(INF))
        return float(lo), int(lo.view(np.uint32)), float(np.nextafter(lo, np.float32(INF)))
    mags, top = _magnitudes(d)
    i = bisect.bisect_right(mags, a) - 1
    return mags[i], i, (mags[i + 1] if i < top else None)


def _round_int(x: Fraction, mode: R) -> int:
    fl = math.floor(x)
    if fl == x:
        return fl
    return {
        R.NONE: round(x), R.RINT: round(x),   # Fraction.__round__ ties to even
        R.ROUND: int(math.copysign(math.floor(abs(x) + Fraction(1, 2)), x)),
        R.FLOOR: fl, R.CEIL: fl + 1, R.TRUNC: math.trunc(x),
        R.ODD: fl if fl % 2 else fl + 1,
    }[mode]


def _model_float(x: Fraction, neg: bool, d: dt.DType, mode: R, sat: S) -> float:
    fmax = float(ml_dtypes.finfo(d.np_dtype).max)
    a = abs(x)
    lo, enc, hi = _neighbours(a, d)
    next_up = hi if hi is not None else 2 * fmax - _magnitudes(d)[0][-2]
    toward_neg_inf = {R.FLOOR: True, R.CEIL: False}.get(mode)
    if a == lo:
        mag = lo
    else:
        dl, dh = a - Fraction(lo), Fraction(next_up) - a
        mag = {
            R.RINT: lo if dl < dh or (dl == dh and enc % 2 == 0) else next_up,
            R.ROUND: lo if dl < dh else next_up,
            R.TRUNC: lo,
            R.FLOOR: next_up if neg else lo,
            R.CEIL: lo if neg else next_up,
            R.ODD: lo if enc % 2 else next_up,
        }[R.RINT if mode is R.NONE else mode]
    if a > fmax and (mag > fmax or a >= Fraction(next_up)):   # overflow
        to_inf = mode in (R.NONE, R.RINT, R.ROUND) or (toward_neg_inf is not None and toward_neg_inf == neg)
        mag = INF if to_inf else fmax
    if math.isinf(mag) and d is E4M3:
        mag = fmax if sat is S.ON else NAN
    return -mag if neg else mag


def model(value: object, src: dt.DType, d: dt.DType, mode: R, sat: S) -> object:
    """The TCVT result for one Python value, as Python int / float / bool."""
    if d is I1:
        return int(value != 0)
    if src.is_float and math.isnan(value):
        return NAN if d.is_float else 0
    if src.is_float and math.isinf(value):
        if not d.is_float:
            return d.max if value > 0 else d.min
        return math.copysign(448.0 if sat is S.ON else NAN, value) if d is E4M3 else value
    x = Fraction(value)
    neg = x < 0 or (src.is_float and math.copysign(1, value) < 0)
    if not d.is_float:
        n = _round_int(x, mode)
        if sat is S.ON:
            return min(max(n, d.min), d.max)
        n %= 2 ** d.bits
        return n - 2 ** d.bits if d.kind == "int" and n >= 2 ** (d.bits - 1) else n
    if d == src:
        n = float(_round_int(x, mode))
        return -abs(n) if neg else n
    return _model_float(x, neg, d, mode, sat)


def _python(v: np.generic, d: dt.DType) -> object:
    return float(v) if d.is_float else int(v)


def check_against_model(src: dt.DType, d: dt.DType, mode: R, sat: S, values: np.ndarray) -> None:
    out = run(list(values.astype(np.float64) if src.is_float else values.astype(object)), src, d, mode, sat)
    for v, got in zip(values, out):
        want = model(_python(v, src), src, d, mode, sat)
        want = float(want) if d.is_float else want
        assert same_value(got, want), f"{src}->{d} {mode.name}/{sat.name}: {v!r} gave {got!r}, want {want!r}"


def _specials(d: dt.DType) -> list:
    if d is I1:
        return [0, 1]
    if d.is_float:
        info = ml_dtypes.finfo(d.np_dtype)
        small, tiny, big = float(info.smallest_subnormal), float(info.smallest_normal), float(info.max)
        return [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.5, -0.5, 0.75, 5.0, 17.0, 448.0, 65504.0,
                big, -big, small, -small, tiny, -3 * small, 1000.5, -1000.5, INF, -INF, NAN]
    return [d.min, d.max, d.min + 1, d.max - 1, 0, 1, 2, 5, 127, 128, 255, 256, 257, 259, 2049, 65519,
            65520, 2 ** 24 + 1, 2 ** 24 + 3, -1, -128, -129, -2049, -(2 ** 24 + 1)]


def sample(d: dt.DType, rng: np.random.Generator) -> np.ndarray:
    """Special values plus random bit patterns of ``d``."""
    raw = rng.integers(0, 256, 16 * d.itemsize, dtype=np.uint8).view(d.np_dtype if d is not I1 else np.uint8)
    if d is I1:
        raw = raw % 2
    special = np.array(_specials(d), dtype=np.float64 if d.is_float else object)
    if not d.is_float:
        special = np.array([v for v in _specials(d) if d.min <= v <= d.max], dtype=object)
    return np.concatenate([special.astype(d.np_dtype), raw.astype(d.np_dtype)])


@pytest.mark.parametrize("src", TYPES, ids=str)
def test_every_pair_mode_and_saturation_matches_the_model(src: dt.DType) -> None:
    rng = np.random.default_rng(src.bits)
    values = sample(src, rng)
    for d in TYPES:
        for mode in R:
            for sat in S:
                check_against_model(src, d, mode, sat, values)


def _structured(draw: st.DrawFn, src: dt.DType) -> np.ndarray:
    """m * 2**e with few significant bits: lands on ties and exact values often."""
    ms = draw(st.lists(st.integers(-2 ** 26, 2 ** 26), min_size=8, max_size=8))
    es = draw(st.lists(st.integers(-30, 40), min_size=8, max_size=8))
    if src.is_float:
        with np.errstate(over="ignore"):
            return np.array([m * 2.0 ** e for m, e in zip(ms, es)]).astype(src.np_dtype)
    if src is I1:
        return np.array([m % 2 for m in ms], dtype=np.bool_)
    vals = [(m * 2 ** e if e >= 0 else m >> -e) % 2 ** src.bits for m, e in zip(ms, es)]
    return np.array(vals, dtype=np.uint64).astype(src.np_dtype)


@st.composite
def conversions(draw: st.DrawFn) -> tuple:
    src, d = draw(st.sampled_from(TYPES)), draw(st.sampled_from(TYPES))
    bits = draw(st.binary(min_size=8 * src.itemsize, max_size=8 * src.itemsize))
    raw = np.frombuffer(bits, dtype=np.uint8 if src is I1 else src.np_dtype)
    raw = (raw % 2).astype(np.bool_) if src is I1 else raw
    return src, d, draw(st.sampled_from(list(R))), draw(st.sampled_from(list(S))), \
        np.concatenate([raw, _structured(draw, src)])


@settings(max_examples=150)
@given(conversions())
def test_random_values_match_the_model(case: tuple) -> None:
    check_against_model(*case)


# ------------------------------------------------------------------ declaration and regions

def test_declaration() -> None:
    assert TCVT.family is isa.Family.ELEMENTWISE and TCVT.domain is Domain.DST
    assert TCVT.pipe_for({}) is Pipe.V and TCVT.numerics.kind == "rounded"
    assert len(TCVT.dtypes.tuples) == len(TYPES) ** 2 + 24         # and HiF8, E2M1, E1M2, i4 to / from f32, f16, bf16
    assert TCVT.dtypes.operands == ("dst", "src")
    a2, a5 = TCVT.dtype_rule("a2"), TCVT.dtype_rule("a5")
    assert a2.tuples == TCVT.dtype_rule("a3").tuples
    assert a2.allows((F16, F32)) and a2.allows((F32, F32)) and not a2.allows((I8, F32))
    assert a5.allows((E4M3, F32)) and a5.allows((F32, E5M2)) and not a5.allows((E4M3, F16))
    assert not a2.allows((E4M3, F32))
    assert all(w in TCVT.special_values for w in ("NaN", "inf", "448", "ODD", "denormal", "wraps"))


@pytest.mark.parametrize("profile", ["cpu", "a2", "a3", "a5"])
def test_example_is_legal(profile: str) -> None:
    types = {n: parse_type(s) for n, s in TCVT.example.types.items()}
    assert not checks.check_structure(TCVT, types, TCVT.example.attrs)
    assert not checks.check_legality(TCVT, types, TCVT.example.attrs, profiles.get(profile))


def test_structure_rules() -> None:
    dst = parse_type("!pto.tile<16x16xf16>")
    codes = lambda src: [e.code for e in checks.check_structure(TCVT, {"dst": dst, "src": parse_type(src)}, {})]  # noqa: E731
    assert codes("!pto.tile<16x16xf32>") == []
    assert codes("!pto.tile<16x32xf32>") == []     # own row stride: only the valid regions matter
    assert codes("!pto.tile<16x16xf32, valid=8x16>") == ["STRUCT_VALID_REGION"]


def test_only_the_destination_valid_region_is_written() -> None:
    src = isa.Tile.of(np.arange(24, dtype=np.float32).reshape(4, 6) + 0.5)
    dst = isa.Tile.of(np.full((4, 6), -7, dtype=np.int16), valid=(2, 3))
    TCVT.execute(dst=dst, src=src, roundMode=R.FLOOR)
    np.testing.assert_array_equal(dst.data[:2, :3], [[0, 1, 2], [6, 7, 8]])
    outside = np.ones((4, 6), dtype=bool)
    outside[:2, :3] = False
    assert (dst.data[outside] == -7).all()


def test_source_smaller_than_the_domain_is_an_invalid_read() -> None:
    src = isa.Tile.of(np.ones((4, 8), dtype=np.float32), valid=(4, 5))
    dst = isa.Tile.empty(src.type.with_(dtype=F16, valid_cols=8))
    before = dst.data.copy()
    with pytest.raises(isa.RuntimeFault) as e:
        TCVT.execute(dst=dst, src=src)
    assert e.value.code == "RUNTIME_INVALID_READ"
    np.testing.assert_array_equal(dst.data, before)
