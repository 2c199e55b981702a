"""New element types: hifloat8 (HiF8) codes against values worked out by hand from the format's
definition (sign, prefix, sign-magnitude exponent with an implicit 1, mantissa widths 3, 3, 3, 2, 1
for 0..4 exponent bits, denormals 2**(M - 23)), its rounding (nearest, ties away), TCVT to and
from it under each rounding mode, its spellings, bytecode and legality per profile."""
from __future__ import annotations

import math

import numpy as np
import pytest

import openpto as pto
import openpto.isa as isa
from openpto.assembler import load_bytes
from openpto.isa import checks, fp4, hifloat8, profiles
from openpto.isa import dtypes as dt
from openpto.isa.attrs import RoundMode, SatMode
from openpto.isa.families.convert import convert
from openpto.isa.types import parse_type

from decl_support import decl_codes

pytestmark = pytest.mark.filterwarnings("error")

# (code, value) worked out by hand: prefix | exponent field | mantissa
HAND = [
    (0x00, 0.0),                 # zero
    (0x01, 2.0 ** -22),          # 0000 001: denormal 2**(1 - 23)
    (0x07, 2.0 ** -16),          # 0000 111: denormal 2**(7 - 23)
    (0x08, 1.0),                 # 0001 000: D = 0, E = 0, M = 0
    (0x0F, 1.875),               # 0001 111: 1 + 7/8
    (0x10, 2.0),                 # 001 0 000: D = 1, E = +1
    (0x18, 0.5),                 # 001 1 000: E = -1
    (0x1F, 0.9375),              # 001 1 111: 2**-1 * 1.875 (the public CPU header decodes this as 1.9375)
    (0x20, 4.0),                 # 01 00 000: D = 2, E = +2
    (0x2D, 13.0),                # 01 01 101: E = +3, 1.625 * 8
    (0x30, 0.25),                # 01 10 000: E = -2
    (0x32, 0.3125),              # 01 10 010: 0.25 * 1.25
    (0x40, 16.0),                # 10 000 00: D = 3, E = +4
    (0x5F, 1.75 * 2.0 ** -7),    # 10 111 11: E = -7, M = 3
    (0x60, 256.0),               # 11 0000 0: D = 4, E = +8
    (0x61, 384.0),               # 11 0000 1: 1.5 * 256
    (0x6E, 32768.0),             # 11 0111 0: E = +15, the largest finite value
    (0x70, 2.0 ** -8),           # 11 1000 0: E = -8
    (0x7E, 2.0 ** -15),          # 11 1111 0: E = -15
    (0x7F, 1.5 * 2.0 ** -15),    # 11 1111 1
    (0x88, -1.0), (0x8F, -1.875), (0xEE, -32768.0), (0x81, -(2.0 ** -22)),
]


@pytest.mark.parametrize("code,value", HAND)
def test_decode_hand_values(code: int, value: float) -> None:
    assert hifloat8.decode(np.uint8(code)) == value


def test_special_codes() -> None:
    assert math.isnan(hifloat8.decode(np.uint8(0x80)))
    assert hifloat8.decode(np.uint8(0x6F)) == math.inf and hifloat8.decode(np.uint8(0xEF)) == -math.inf


def _independent_table() -> dict[int, float]:
    """Every code from its fields, built the other way round: enumerate (D, E, M) and assemble the
    code from the prefix table, instead of parsing codes."""
    table: dict[int, float] = {0: 0.0}
    for m in range(1, 8):
        table[m] = 2.0 ** (m - 23)
    prefixes = {0: (0b0001, 3), 1: (0b001, 4), 2: (0b01, 5), 3: (0b10, 5), 4: (0b11, 5)}
    mant_bits = {0: 3, 1: 3, 2: 3, 3: 2, 4: 1}
    for d, (prefix, rest) in prefixes.items():
        mb = mant_bits[d]
        exps = [0] if d == 0 else [s * mag for s in (1, -1) for mag in range(1 << (d - 1), 1 << d)]
        for e in exps:
            field = 0 if d == 0 else ((1 << (d - 1)) if e < 0 else 0) | (abs(e) - (1 << (d - 1)))
            for m in range(1 << mb):
                code = (prefix << rest) | (field << mb) | m
                table[code] = math.inf if (d == 4 and e == 15 and m == 1) else 2.0 ** e * (1 + m / (1 << mb))
    return table


def test_every_code_against_an_independent_table() -> None:
    table = _independent_table()
    assert sorted(table) == list(range(128))           # every positive code is reached exactly once
    got = hifloat8.decode(np.arange(256, dtype=np.uint8))
    for code in range(128):
        assert got[code] == table[code], hex(code)
        if code:
            assert got[code | 0x80] == -table[code], hex(code | 0x80)
    finite = got[np.isfinite(got)]
    assert len(set(finite.tolist())) == 253             # 256 codes - NaN - two infinities, one zero


@pytest.mark.parametrize("x,code", [
    (1.0625, 0x09),           # tie between 1.0 and 1.125: away from zero
    (1.1875, 0x0A),           # tie between 1.125 and 1.25: away
    (-1.0625, 0x89),
    (0.3, 0x32),              # 0.3 * 32 = 9.6 -> 10 -> 0.3125
    (3 * 2.0 ** -17, 0x7E),   # between the denormal 2**-16 and 2**-15: tie -> 2**-15
    (2.0 ** -23, 0x01),       # half of the smallest value: away -> 2**-22
    (0.99 * 2.0 ** -23, 0x00),
    (-0.99 * 2.0 ** -23, 0x00),   # no negative zero
    (40960.0, 0x6F),          # tie between 32768 and 49152 (past the last binade): inf
    (36000.0, 0x6E),
    (-0.0, 0x00), (math.nan, 0x80), (math.inf, 0x6F), (-math.inf, 0xEF),
])
def test_encode_ties_away(x: float, code: int) -> None:
    assert int(hifloat8.encode(np.array([x]))[0]) == code


# ----------------------------------------------------------------------------- TCVT

def _cvt_codes(x: list[float], mode: RoundMode, src: dt.DType = dt.F32) -> list[int]:
    a = np.array(x, dtype=src.np_dtype)
    return convert(a, src, dt.HIF8, mode, SatMode.ON).tolist()


@pytest.mark.parametrize("mode,want", [
    # 1.0625 (tie), 0.3, -45000 (past 2**15), 1e-9 (below 2**-23), -1e-9
    (RoundMode.RINT, [0x08, 0x32, 0xEF, 0x00, 0x00]),      # tie to the even mantissa 1.0
    (RoundMode.ROUND, [0x09, 0x32, 0xEF, 0x00, 0x00]),     # the A5 rule
    (RoundMode.TRUNC, [0x08, 0x31, 0xEE, 0x00, 0x00]),     # toward zero: largest finite
    (RoundMode.FLOOR, [0x08, 0x31, 0xEF, 0x00, 0x81]),     # -1e-9 -> -2**-22
    (RoundMode.CEIL, [0x09, 0x32, 0xEE, 0x01, 0x00]),      # 1e-9 -> 2**-22
    (RoundMode.ODD, [0x09, 0x31, 0xEE, 0x01, 0x81]),       # inexact: the odd mantissa
])
def test_tcvt_f32_to_hifloat8_modes(mode: RoundMode, want: list[int]) -> None:
    assert _cvt_codes([1.0625, 0.3, -45000.0, 1e-9, -1e-9], mode) == want


def test_tcvt_specials_and_sat_mode() -> None:
    x = np.array([math.nan, math.inf, -math.inf, -0.0, 1e30], np.float32)
    for sat in SatMode:
        assert convert(x, dt.F32, dt.HIF8, RoundMode.RINT, sat).tolist() == [0x80, 0x6F, 0xEF, 0x00, 0x6F]


def test_tcvt_hifloat8_to_floats_is_exact() -> None:
    codes = np.arange(256, dtype=np.uint8)
    table = _independent_table()
    want = np.array([table[c & 0x7F] * (-1 if c & 0x80 else 1) if c != 0x80 else math.nan
                     for c in range(256)])
    for d in (dt.F32, dt.F16, dt.BF16):
        got = convert(codes, dt.HIF8, d, RoundMode.RINT, SatMode.ON).astype(np.float64)
        np.testing.assert_array_equal(got, want)       # every HiF8 value fits f16 and bf16 exactly


def test_tcvt_f16_exhaustive_round_is_nearest_ties_away() -> None:
    """Every finite f16 value up to HiF8's largest finite magnitude: TCVT with ROUND gives the
    nearest value of the independent table, ties to the larger magnitude."""
    table = _independent_table()
    grid = np.array(sorted(v for v in table.values() if math.isfinite(v)))
    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    x = x[np.isfinite(x) & (np.abs(x.astype(np.float64)) <= grid[-1])]
    got = hifloat8.decode(convert(x, dt.F16, dt.HIF8, RoundMode.ROUND, SatMode.ON))
    mag = np.abs(x.astype(np.float64))
    hi = np.searchsorted(grid, mag)                        # grid[hi - 1] < mag <= grid[hi]
    lo = np.maximum(hi - 1, 0)
    up = (grid[hi] - mag) <= (mag - grid[lo])              # the tie goes away from zero
    want = np.where(up, grid[hi], grid[lo]) * np.sign(x.astype(np.float64))
    np.testing.assert_array_equal(np.abs(got), np.abs(want))
    assert np.all((got == 0) | (np.sign(got) == np.sign(want)))


def test_tcvt_runs_on_tiles() -> None:
    src = isa.Tile.of(np.array([[1.0, -0.3], [100.0, 3e4]], np.float32))
    dst = isa.Tile(parse_type("!pto.tile<2x2xhifloat8>"), np.zeros((2, 2), np.uint8))
    isa.get("TCVT").execute(dst=dst, src=src, roundMode=RoundMode.ROUND, satMode=SatMode.ON)
    # 100 = 1.5625 * 64: D = 3 (2 mantissa bits) -> 1.5 * 64 = 96 (0.0625 below the tie): 10 010 10
    # 3e4 = 0.9155 * 2**15: D = 4 (1 mantissa bit), E = 14: 1.83 -> 2.0 -> 2**15
    assert dst.data.tolist() == [[0x08, 0xB2], [0x4A, 0x6E]]


# ----------------------------------------------------------------------------- spellings, legality

def test_spellings_and_bytecode() -> None:
    assert parse_type("!pto.tile<16x16xhifloat8>").dtype is dt.HIF8
    assert parse_type("!pto.tile<vec, hifloat8_t, 16, 16>").dtype is dt.HIF8
    text = ("kernel @k(%d : !pto.tile<8x8xhifloat8>, %s : !pto.tile<8x8xf32>) {\n"
            "  %d = tcvt %s {roundMode = #pto.round_mode<ROUND>} : (!pto.tile<8x8xf32>) -> !pto.tile<8x8xhifloat8>\n}\n")
    m = pto.parse(text)
    assert load_bytes(m.to_bytes()) == m


def _codes(types: dict[str, str], profile: str) -> list[str]:
    return decl_codes("TCVT", types, profile=profile)


def _assert_tcvt_legal_on(dst: str, src: str, legal: set) -> None:
    """A 16x64 TCVT from ``src`` to ``dst`` verifies on exactly the profiles in ``legal``."""
    types = {"dst": f"!pto.tile<16x64x{dst}>", "src": f"!pto.tile<16x64x{src}>"}
    for profile in ("cpu", "a2", "a3", "a5"):
        got = _codes(types, profile)
        assert (got == []) == (profile in legal), (profile, got)


@pytest.mark.parametrize("dst,src,legal", [
    ("hifloat8", "f32", {"cpu", "a5"}), ("hifloat8", "f16", {"cpu", "a5"}), ("f32", "hifloat8", {"cpu", "a5"}),
    ("hifloat8", "bf16", {"cpu"}), ("f16", "hifloat8", {"cpu"}), ("bf16", "hifloat8", {"cpu"}),
    ("hifloat8", "i8", set()), ("hifloat8", "hifloat8", set()),
])
def test_tcvt_hifloat8_legality(dst: str, src: str, legal: set) -> None:
    _assert_tcvt_legal_on(dst, src, legal)


# ----------------------------------------------------------------------------- hifloat8 storage

def _legal(mnemonic: str, types: dict[str, str], profile: str, attrs: dict | None = None) -> list[str]:
    return decl_codes(mnemonic, types, attrs, profile)


@pytest.mark.parametrize("mnemonic,types", [
    ("TLOAD", {"dst": "!pto.tile<16x32xhifloat8>", "src": "!pto.memref<64x64xhifloat8>"}),
    ("TSTORE", {"dst": "!pto.memref<64x64xhifloat8>", "src": "!pto.tile<16x32xhifloat8>"}),
    ("TMOV", {"dst": "!pto.tile<16x32xhifloat8>", "src": "!pto.tile<16x32xhifloat8>"}),
])
def test_hifloat8_moves_legal_on_cpu_and_a5(mnemonic: str, types: dict[str, str]) -> None:
    for profile in ("cpu", "a2", "a3", "a5"):
        assert (_legal(mnemonic, types, profile) == []) == (profile in ("cpu", "a5")), profile


def test_hifloat8_store_has_no_atomic_add_and_no_reinterpretation() -> None:
    from openpto.isa.attrs import AtomicMode
    types = {"dst": "!pto.memref<64x64xhifloat8>", "src": "!pto.tile<16x32xhifloat8>"}
    assert "LEGAL_MODE" in _legal("TSTORE", types, "cpu", {"atomic": AtomicMode.ADD})
    # a u8 tile is not a hifloat8 tile: storing one into the other is a dtype change
    assert _legal("TSTORE", {"dst": "!pto.memref<64x64xu8>", "src": "!pto.tile<16x32xhifloat8>"}, "cpu")
    assert _legal("TMOV", {"dst": "!pto.tile<16x32xu8>", "src": "!pto.tile<16x32xhifloat8>"}, "cpu")


_EVERY_CODE = np.arange(256, dtype=np.uint8).reshape(8, 32)


def _move_kernel(relu: bool) -> str:
    t, g = "!pto.tile<8x32xhifloat8>", "!pto.memref<8x32xhifloat8>"
    attr = " {relu = #pto.relu<RELU>}" if relu else ""
    return (f"kernel @k(%out : {g}, %in : {g}) {{\n"
            f"  %a = pto.alloc_tile : {t}\n  %b = pto.alloc_tile : {t}\n"
            f"  tload %a, %in[0, 0] : {t}, {g}\n  tmov %b, %a{attr} : {t}, {t}\n  tstore %out[0, 0], %b : {g}, {t}\n}}\n")


def relu_codes(codes: np.ndarray) -> np.ndarray:
    """Hand rule for relu on HiF8 codes: sign clear keeps the code (0x00 is +0, 0x6F +inf), sign
    set gives 0x00 except the NaN code 0x80, which stays."""
    return np.where((codes < 0x80) | (codes == 0x80), codes, 0).astype(np.uint8)


def test_hifloat8_relu_rule_by_hand() -> None:
    assert relu_codes(np.array([0x08, 0x88, 0x80, 0xEF, 0x6F, 0x00, 0x81], np.uint8)).tolist() == \
        [0x08, 0x00, 0x80, 0x00, 0x6F, 0x00, 0x00]


@pytest.mark.parametrize("relu", [False, True])
def test_hifloat8_load_move_store_on_reference(relu: bool) -> None:
    out = np.full((8, 32), 0x55, np.uint8)
    pto.compile(pto.parse(_move_kernel(relu)), "reference", "a5")(out=out, **{"in": _EVERY_CODE.copy()})
    want = relu_codes(_EVERY_CODE) if relu else _EVERY_CODE
    np.testing.assert_array_equal(out, want)       # every code, NaN and ±inf included, bit for bit


@pytest.mark.parametrize("situation", ["joint-specials", "ties", "int-extremes", "overflow"])
def test_conformance_draws_hifloat8_as_codes_in_every_situation(situation: str) -> None:
    """Coded floats have no ml_dtypes finfo: every value situation draws them as raw codes."""
    from openpto.conformance import cases, values
    case = cases.base_cases(isa.get("TMOV"), "a5")[(dt.HIF8, dt.HIF8)]
    arrays = [v for v in values.situation_inputs(case, situation).values() if isinstance(v, np.ndarray)]
    assert arrays and all(a.dtype == np.uint8 for a in arrays)
    assert len(np.unique(np.concatenate([a.ravel() for a in arrays]))) > 16     # codes across the range


# ----------------------------------------------------------------------------- fp4 (E2M1, E1M2)

# magnitudes of codes 0..7, listed by hand from (exponent, mantissa, bias 1, subnormal at exponent 0)
E2M1_HAND = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
E1M2_HAND = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]


@pytest.mark.parametrize("fmt,hand", [(fp4.E2M1, E2M1_HAND), (fp4.E1M2, E1M2_HAND)])
def test_fp4_decode_every_code(fmt: fp4.Fp4, hand: list[float]) -> None:
    got = fmt.decode(np.arange(16, dtype=np.uint8))
    assert got.tolist() == hand + [-v for v in hand]
    assert np.signbit(got[8]) and not np.signbit(got[0])
    assert fmt.decode(np.array([0xF3], np.uint8)).tolist() == [hand[3]]     # the high nibble is not read


@pytest.mark.parametrize("x,code", [
    (0.25, 0x0), (0.75, 0x2), (1.25, 0x2), (1.75, 0x4), (2.5, 0x4), (3.5, 0x6), (5.0, 0x6),   # ties to even
    (0.3, 0x1), (5.1, 0x7), (7.0, 0x7), (1e30, 0x7), (math.inf, 0x7), (-math.inf, 0xF),      # saturation
    (-0.0, 0x8), (-0.2, 0x8), (math.nan, 0x0), (-2.9, 0xD),
])
def test_e2m1_encode_by_hand(x: float, code: int) -> None:
    assert int(fp4.E2M1.encode(np.array([x]))[0]) == code


@pytest.mark.parametrize("x,code", [
    (0.125, 0x0), (0.375, 0x2), (0.625, 0x2), (0.875, 0x4), (1.125, 0x4), (1.625, 0x6),      # ties to even
    (1.8, 0x7), (2.0, 0x7), (-1.1, 0xC), (0.1, 0x0), (0.13, 0x1), (math.nan, 0x0), (-0.0, 0x8),
])
def test_e1m2_encode_by_hand(x: float, code: int) -> None:
    assert int(fp4.E1M2.encode(np.array([x]))[0]) == code


def test_e2m1_encode_matches_ml_dtypes_on_every_finite_bf16() -> None:
    """ml_dtypes' float4_e2m1fn (an independent E2M1) agrees on every finite bf16 value (it
    saturates as well; its NaN handling differs and is left out)."""
    import ml_dtypes
    x = np.arange(65536, dtype=np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
    x = x[np.isfinite(x)]
    want = x.astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    np.testing.assert_array_equal(fp4.E2M1.encode(x.astype(np.float64)), want)


def test_fp4_pack_order() -> None:
    codes = np.array([[0x1, 0x2, 0x3, 0x4], [0xF, 0x0, 0x8, 0x7]], np.uint8)
    packed = fp4.pack(codes)
    assert packed.tolist() == [[0x21, 0x43], [0x0F, 0x78]]      # element 2k low nibble, 2k + 1 high
    np.testing.assert_array_equal(fp4.unpack(packed), codes)
    with pytest.raises(isa.PTOError) as e:
        fp4.pack(np.zeros((1, 3), np.uint8))
    assert e.value.code == "PTO_ARG" and "(1, 3)" in e.value.actual


@pytest.mark.parametrize("dst,mode,want", [
    # bf16 [0.25, 1.25, 5.0, -2.5, 100, -0.1, 1.0]
    (dt.FP4_E2M1, RoundMode.RINT, [0x0, 0x2, 0x6, 0xC, 0x7, 0x8, 0x2]),
    (dt.FP4_E2M1, RoundMode.ROUND, [0x1, 0x3, 0x7, 0xD, 0x7, 0x8, 0x2]),     # ties away
    (dt.FP4_E2M1, RoundMode.TRUNC, [0x0, 0x2, 0x6, 0xC, 0x7, 0x8, 0x2]),
    (dt.FP4_E2M1, RoundMode.FLOOR, [0x0, 0x2, 0x6, 0xD, 0x7, 0x9, 0x2]),     # -2.5 -> -3, -0.1 -> -0.5
    (dt.FP4_E2M1, RoundMode.CEIL, [0x1, 0x3, 0x7, 0xC, 0x7, 0x8, 0x2]),
    (dt.FP4_E1M2, RoundMode.RINT, [0x1, 0x5, 0x7, 0xF, 0x7, 0x8, 0x4]),      # exact 0.25 / 1.25; past 1.75
])
def test_tcvt_bf16_to_fp4_modes(dst: dt.DType, mode: RoundMode, want: list[int]) -> None:
    import ml_dtypes
    x = np.array([0.25, 1.25, 5.0, -2.5, 100.0, -0.1, 1.0], ml_dtypes.bfloat16)
    for sat in SatMode:                                     # no NaN to fall back on: both saturate
        assert convert(x, dt.BF16, dst, mode, sat).tolist() == want


def test_tcvt_fp4_specials() -> None:
    import ml_dtypes
    x = np.array([math.nan, math.inf, -math.inf, -0.0], ml_dtypes.bfloat16)
    assert convert(x, dt.BF16, dt.FP4_E2M1, RoundMode.RINT, SatMode.OFF).tolist() == [0x0, 0x7, 0xF, 0x8]
    assert convert(x, dt.BF16, dt.FP4_E1M2, RoundMode.TRUNC, SatMode.ON).tolist() == [0x0, 0x7, 0xF, 0x8]


def test_tcvt_fp4_to_bf16_on_tiles() -> None:
    import ml_dtypes
    codes = np.array([[0x7, 0xF, 0x3, 0x8]], np.uint8)
    for d, want in ((dt.FP4_E2M1, [6.0, -6.0, 1.5, -0.0]), (dt.FP4_E1M2, [1.75, -1.75, 0.75, -0.0])):
        src = isa.Tile(parse_type(f"!pto.tile<1x4x{d.name}>"), codes.copy())
        dst = isa.Tile(parse_type("!pto.tile<1x4xbf16>"), np.zeros((1, 4), ml_dtypes.bfloat16))
        isa.get("TCVT").execute(dst=dst, src=src, roundMode=RoundMode.RINT, satMode=SatMode.ON)
        got = dst.data.astype(np.float64)
        assert got.tolist() == [want] and np.signbit(got[0, 3])


def test_fp4_spellings_and_bytecode() -> None:
    assert parse_type("!pto.tile<16x64xfloat4_e2m1x2>").dtype is dt.FP4_E2M1
    assert parse_type("!pto.tile<vec, float4_e1m2x2_t, 16, 64>").dtype is dt.FP4_E1M2
    s, d = "!pto.tile<8x64xbf16>", "!pto.tile<8x64xfloat4_e2m1x2>"
    m = pto.parse(f"kernel @k(%d : {d}, %s : {s}) {{\n  %d = tcvt %s : ({s}) -> {d}\n}}\n")
    assert load_bytes(m.to_bytes()) == m


@pytest.mark.parametrize("dst,src,legal", [
    ("float4_e2m1x2", "bf16", {"cpu", "a5"}), ("float4_e1m2x2", "bf16", {"cpu", "a5"}),
    ("bf16", "float4_e2m1x2", {"cpu", "a5"}), ("bf16", "float4_e1m2x2", {"cpu", "a5"}),
    ("float4_e2m1x2", "f32", {"cpu"}), ("f16", "float4_e1m2x2", {"cpu"}),
    ("float4_e2m1x2", "i8", set()), ("float4_e2m1x2", "float4_e1m2x2", set()),
])
def test_tcvt_fp4_legality(dst: str, src: str, legal: set) -> None:
    _assert_tcvt_legal_on(dst, src, legal)


# ----------------------------------------------------------------------------- i4 (S4, int4b_t)

def test_i4_type_and_spellings() -> None:
    assert (dt.I4.min, dt.I4.max, dt.I4.bits) == (-8, 7, 4)
    for spelling in ("!pto.tile<16x64xi4>", "!pto.tile<vec, int4b_t, 16, 64>", "!pto.tile<vec, s4, 16, 64>"):
        assert parse_type(spelling).dtype is dt.I4


@pytest.mark.parametrize("mode,want", [
    # f16 [0.5, 1.5, 2.5, -0.5, -1.5, 7.4, 7.6, -8.5, -9, 100, NaN, inf, -inf, -0.0, 3.2], satMode ON
    (RoundMode.RINT, [0, 2, 2, 0, 14, 7, 7, 8, 8, 7, 0, 7, 8, 0, 3]),      # ties to even; -2 is 0xE
    (RoundMode.ROUND, [1, 2, 3, 15, 14, 7, 7, 8, 8, 7, 0, 7, 8, 0, 3]),    # ties away: -0.5 -> -1 (0xF)
    (RoundMode.FLOOR, [0, 1, 2, 15, 14, 7, 7, 8, 8, 7, 0, 7, 8, 0, 3]),
    (RoundMode.CEIL, [1, 2, 3, 0, 15, 7, 7, 8, 8, 7, 0, 7, 8, 0, 4]),
    (RoundMode.TRUNC, [0, 1, 2, 0, 15, 7, 7, 8, 8, 7, 0, 7, 8, 0, 3]),
])
def test_tcvt_f16_to_i4_by_hand(mode: RoundMode, want: list[int]) -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 7.4, 7.6, -8.5, -9, 100, math.nan, math.inf, -math.inf, -0.0, 3.2],
                 np.float16)
    assert convert(x, dt.F16, dt.I4, mode, SatMode.ON).tolist() == want


def test_tcvt_f16_to_i4_wraps_with_sat_off() -> None:
    x = np.array([7.6, -9.0, 100.0, -100.0, math.nan, math.inf], np.float16)
    # 8 -> -8 (0x8); -9 -> 7; 100 = 6 * 16 + 4; -100 = -7 * 16 + 12; NaN 0; inf still the max
    assert convert(x, dt.F16, dt.I4, RoundMode.RINT, SatMode.OFF).tolist() == [0x8, 0x7, 0x4, 0xC, 0x0, 0x7]


def test_tcvt_i4_to_f16_reads_the_low_nibble() -> None:
    codes = np.arange(16, dtype=np.uint8) | np.uint8(0x30)                  # junk in the high nibble
    got = convert(codes, dt.I4, dt.F16, RoundMode.RINT, SatMode.ON)
    assert got.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1]


@pytest.mark.parametrize("dst,src,legal", [
    ("i4", "f16", {"cpu", "a2", "a3"}), ("f16", "i4", {"cpu", "a2", "a3"}),
    ("i4", "f32", {"cpu"}), ("bf16", "i4", {"cpu"}), ("i4", "i8", set()), ("i8", "i4", set()),
])
def test_tcvt_i4_legality(dst: str, src: str, legal: set) -> None:
    _assert_tcvt_legal_on(dst, src, legal)


# ----------------------------------------------------------------------------- scale_left / scale_right

def test_scale_locations_spellings() -> None:
    from openpto.isa.types import Location
    assert parse_type("!pto.tile<16x2xu8, loc=scale_left>").loc is Location.SCALE_LEFT
    assert parse_type("!pto.tile<loc=ScaleLeft, u8, 16, 2>").loc is Location.SCALE_LEFT
    assert parse_type("!pto.tile<ScaleRight, uint8_t, 2, 32>").loc is Location.SCALE_RIGHT


_MX_OK = {"dst": "!pto.tile<16x16xf32, loc=acc, layout=NZ>", "a": "!pto.tile<16x64xf8e4m3, loc=left, layout=NZ>",
          "scale_a": "!pto.tile<16x2xu8, loc=scale_left>", "b": "!pto.tile<64x16xf8e4m3, loc=right, layout=ZN>",
          "scale_b": "!pto.tile<2x16xu8, loc=scale_right, layout=DN>"}


def _mx_codes(types: dict[str, str], profile: str) -> list[str]:
    return _legal("TMATMUL_MX", types, profile)


def test_tmatmul_mx_takes_scales_in_the_scale_buffers() -> None:
    assert _mx_codes(_MX_OK, "a5") == [] and _mx_codes(_MX_OK, "cpu") == []
    old = {**_MX_OK, "scale_a": "!pto.tile<16x2xu8, loc=left>", "scale_b": "!pto.tile<2x16xu8, loc=right>"}
    assert _mx_codes(old, "cpu") == []                         # left / right stay accepted
    assert "LEGAL_LOCATION" in _mx_codes({**_MX_OK, "scale_a": "!pto.tile<16x2xu8, loc=vec>"}, "cpu")
    # row-major scale_left, column-major scale_right on a5 (the public tile aliases)
    assert "LEGAL_LAYOUT" in _mx_codes({**_MX_OK, "scale_b": "!pto.tile<2x16xu8, loc=scale_right>"}, "a5")


def test_scale_buffers_capacity_per_profile() -> None:
    types = {"dst": "!pto.tile<64x64xu8, loc=scale_left>", "src": "!pto.tile<64x64xu8, loc=mat>"}
    assert _legal("TMOV", types, "cpu") == []
    assert _legal("TMOV", types, "a5") == []                  # 4096 B: exactly the 4 KB buffer
    big = {"dst": "!pto.tile<64x96xu8, loc=scale_left>", "src": "!pto.tile<64x96xu8, loc=mat>"}
    assert "LEGAL_CAPACITY" in _legal("TMOV", big, "a5")
    assert _legal("TMOV", types, "a3")                         # a2/a3 have no scale buffers
    from openpto.isa.types import Location
    assert profiles.get("a5").capacity[Location.SCALE_RIGHT] == 4096
    assert profiles.get("a3").capacity[Location.SCALE_LEFT] == 0


# ----------------------------------------------------------------------------- 4-bit sizes

@pytest.mark.parametrize("d", ["float4_e2m1x2", "float4_e1m2x2", "i4"])
def test_four_bit_rows_count_half_bytes(d: str) -> None:
    """A row of C four-bit elements is C / 2 bytes: 64 fill the 32-byte unit the NPU profiles
    require, 32 (16 bytes) do not; the f16 / bf16 partner has whole rows either way."""
    other = "f16" if d == "i4" else "bf16"
    npu = "a3" if d == "i4" else "a5"
    wide = {"dst": f"!pto.tile<2x64x{d}>", "src": f"!pto.tile<2x64x{other}>"}
    narrow = {"dst": f"!pto.tile<2x32x{d}>", "src": f"!pto.tile<2x32x{other}>"}
    assert _codes(wide, npu) == [] and _codes(narrow, "cpu") == []
    assert _codes(narrow, npu) == ["LEGAL_ALIGNMENT"]
    assert dt.memory_bits(dt.get(d)) == 4 and dt.memory_bits(dt.HIF8) == 8 and dt.memory_bits(dt.I1) == 8


def test_four_bit_capacity_counts_half_bytes() -> None:
    """A vec tile of 4-bit elements takes rows * cols / 2 bytes of the buffer: twice as many
    elements fit as u8 ones (one more row than fits is LEGAL_CAPACITY)."""
    from openpto.isa.types import Location
    cap = profiles.get("a5").capacity[Location.VEC]
    rows = cap * 2 // 256                                     # rows of 256 four-bit elements (128 B)
    fits = {"dst": f"!pto.tile<{rows}x256xfloat4_e2m1x2>", "src": "!pto.tile<16x256xbf16>"}
    over = {"dst": f"!pto.tile<{rows + 1}x256xfloat4_e2m1x2>", "src": "!pto.tile<16x256xbf16>"}
    instr = isa.get("TCVT")
    legal = {k: parse_type(v) for k, v in fits.items()}
    assert not [e for e in checks.check_legality(instr, legal, {}, profiles.get("a5")) if e.code == "LEGAL_CAPACITY"]
    big = {k: parse_type(v) for k, v in over.items()}
    assert [e.code for e in checks.check_legality(instr, big, {}, profiles.get("a5"))
            if e.code == "LEGAL_CAPACITY"] == ["LEGAL_CAPACITY"]
    u8 = {"dst": f"!pto.tile<{rows}x256xu8>", "src": "!pto.tile<16x256xbf16>"}
    u8t = {k: parse_type(v) for k, v in u8.items()}
    assert "LEGAL_CAPACITY" in [e.code for e in checks.check_legality(instr, u8t, {}, profiles.get("a5"))]


def test_four_bit_fractal_boxes_are_64_wide() -> None:
    """NZ boxes hold 32 bytes per row: 64 four-bit elements (TMATMUL_MX_HIF4's left operand)."""
    from openpto.isa.profiles import fractal_box
    from openpto.isa.types import Layout, Location
    assert fractal_box(Layout.NZ, 0.5, Location.LEFT) == (16, 64)
    assert fractal_box(Layout.ZN, 0.5, Location.RIGHT) == (64, 16)
    ok = {"dst": "!pto.tile<16x16xf32, loc=acc, layout=NZ>", "a": "!pto.tile<16x64xfloat4_e1m2x2, loc=left, layout=NZ>",
          "scale_a": "!pto.tile<16x4xu8, loc=scale_left>", "b": "!pto.tile<64x16xfloat4_e1m2x2, loc=right, layout=ZN>",
          "scale_b": "!pto.tile<4x16xu8, loc=scale_right, layout=DN>"}
    instr = isa.get("TMATMUL_MX_HIF4")
    parsed = {k: parse_type(v) for k, v in ok.items()}
    assert checks.check_structure(instr, parsed, {}) == []
    assert checks.check_legality(instr, parsed, {}, profiles.get("a6")) == []


@pytest.mark.parametrize("d,legal", [("float4_e2m1x2", {"cpu", "a5"}), ("float4_e1m2x2", {"cpu", "a5"}),
                                     ("i4", {"cpu"}), ("hifloat8", {"cpu", "a5"})])
def test_coded_moves_per_profile(d: str, legal: set[str]) -> None:
    """TLOAD / TSTORE / TMOV take the fp4 types on cpu and a5 (a5's TLoad / TMov list them), i4 on
    cpu only, never on a2/a3."""
    t, g = f"!pto.tile<2x64x{d}>", f"!pto.memref<2x64x{d}>"
    forms = {"TLOAD": {"dst": t, "src": g}, "TSTORE": {"dst": g, "src": t}, "TMOV": {"dst": t, "src": t}}
    for name, types in forms.items():
        for p in ("cpu", "a3", "a5"):
            assert (_legal(name, types, p) == []) == (p in legal), (name, p)


def test_four_bit_tmov_relu_by_hand() -> None:
    """Reference relu on 4-bit codes: 0x3 (E2M1 1.5 / i4 3) stays, 0x8 (-0) and 0xB (negative) become 0."""
    for d in (dt.FP4_E2M1, dt.I4):
        src = isa.Tile.of(np.array([[0x3, 0x8, 0xB, 0x7, 0x0, 0xF]], np.uint8), dtype=d)
        dst = isa.Tile.of(np.full((1, 6), 0x5, np.uint8), dtype=d)
        from openpto.isa.attrs import ReluMode
        isa.get("TMOV").execute(dst=dst, src=src, relu=ReluMode.RELU)
        assert dst.data.tolist() == [[0x3, 0, 0, 0x7, 0, 0]]
