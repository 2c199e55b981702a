"""Quantisation family: TDEQUANT against values worked out by hand from the public page's formula
dst = (src - offset) * scale, the per-row parameters, partial regions, special values and the
static rules; SET_QUANT_SCALAR / SET_QUANT_VECTOR record their state under the documented keys."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import openpto.isa as isa
from openpto.isa.attrs import QuantOutType
from openpto.isa.types import parse_type

from decl_support import decl_codes as codes

pytestmark = pytest.mark.filterwarnings("error")


def tile(values: Any, dtype: Any, valid: tuple[int, int] | None = None, **kw: Any) -> isa.Tile:
    return isa.Tile.of(np.asarray(values).astype(dtype), valid, **kw)


def run(name: str, **kw: Any) -> None:
    isa.get(name).execute(**kw)


# ----------------------------------------------------------------------------- TDEQUANT

def test_tdequant_i8_per_row_parameters() -> None:
    src = tile([[-128, -1, 0, 127], [10, 20, 30, 40]], np.int8)
    dst = tile(np.zeros((2, 4)), np.float32)
    run("TDEQUANT", dst=dst, src=src, scale=tile([[0.5], [2.0]], np.float32),
        offset=tile([[0.0], [10.0]], np.float32))
    # row 0: (q - 0) * 0.5 ; row 1: (q - 10) * 2
    assert dst.data.tolist() == [[-64.0, -0.5, 0.0, 63.5], [0.0, 20.0, 40.0, 60.0]]


def test_tdequant_inverts_tquant_asymmetric() -> None:
    """TQUANT's q = round(x * s_q) + o; TDEQUANT with scale = 1 / s_q, offset = o gives x back when
    x * s_q is an integer (hand-picked values)."""
    x = np.array([[-1.0, 0.25, 0.5, 1.0]], np.float32)          # s_q = 4, o = 128
    q = tile([[124, 129, 130, 132]], np.int16)                   # -4 + 128, 1 + 128, 2 + 128, 4 + 128
    dst = tile(np.zeros((1, 4)), np.float32)
    run("TDEQUANT", dst=dst, src=q, scale=tile([[0.25]], np.float32), offset=tile([[128.0]], np.float32))
    np.testing.assert_array_equal(dst.data, x)


def test_tdequant_i16_extremes_and_two_roundings() -> None:
    src = tile([[-32768, 32767, 7]], np.int16)
    dst = tile(np.zeros((1, 3)), np.float32)
    third = np.float32(1 / 3)
    run("TDEQUANT", dst=dst, src=src, scale=tile([[third]], np.float32), offset=tile([[0.1]], np.float32))
    # each step rounded to f32: written out with explicit f32 operations
    o = np.float32(0.1)
    want = [np.float32(np.float32(v - o) * third) for v in (np.float32(-32768), np.float32(32767), np.float32(7))]
    assert dst.data[0].tolist() == [float(w) for w in want]
    # (7 - 0.1) / 3 rounded once would be 2.3; the two f32 roundings give the next float up
    assert float(dst.data[0, 2]) == float(np.nextafter(np.float32(2.3), np.float32(3)))


def test_tdequant_special_values() -> None:
    src = tile([[1, 2], [0, 5], [1, 1]], np.int8)
    dst = tile(np.zeros((3, 2)), np.float32)
    run("TDEQUANT", dst=dst, src=src, scale=tile([[np.nan], [0.0], [3e38]], np.float32),
        offset=tile([[0.0], [np.inf], [-3e38]], np.float32))
    assert np.isnan(dst.data[0]).all()                           # NaN scale
    assert np.isnan(dst.data[1]).all()                           # (q - inf) * 0 = -inf * 0 = NaN
    assert dst.data[2].tolist() == [np.inf, np.inf]             # (1 + 3e38) * 3e38 overflows


def test_tdequant_partial_region_leaves_the_rest() -> None:
    src = tile(np.arange(16).reshape(4, 4), np.int8)
    dst = tile(np.full((4, 4), 7.0), np.float32, valid=(2, 3))
    run("TDEQUANT", dst=dst, src=src, scale=tile([[1.0], [-1.0]], np.float32),
        offset=tile([[1.0], [1.0]], np.float32))
    assert dst.data.tolist() == [[-1.0, 0.0, 1.0, 7.0], [-3.0, -4.0, -5.0, 7.0], [7.0] * 4, [7.0] * 4]


def test_tdequant_reads_column_zero_only() -> None:
    src = tile([[4, 4, 4]], np.int8)
    dst = tile(np.zeros((1, 3)), np.float32)
    run("TDEQUANT", dst=dst, src=src, scale=tile([[1.0, 10.0, 100.0]], np.float32),
        offset=tile([[0.0, 1.0, 2.0]], np.float32))
    assert dst.data.tolist() == [[4.0, 4.0, 4.0]]


def test_tdequant_src_not_modified() -> None:
    raw = np.array([[1, -2]], np.int8)
    src = tile(raw, np.int8)
    run("TDEQUANT", dst=tile(np.zeros((1, 2)), np.float32), src=src, scale=tile([[2.0]], np.float32),
        offset=tile([[0.0]], np.float32))
    np.testing.assert_array_equal(src.data, raw)


GOOD = {"dst": "!pto.tile<16x32xf32>", "src": "!pto.tile<16x32xi8>",
        "scale": "!pto.tile<16x1xf32, layout=DN>", "offset": "!pto.tile<16x1xf32, layout=DN>"}


@pytest.mark.parametrize("change,code", [
    ({}, None),
    ({"src": "!pto.tile<16x32xi16>"}, None),
    ({"src": "!pto.tile<16x32xi32>"}, "LEGAL_DTYPE"),
    ({"src": "!pto.tile<16x32xu8>"}, "LEGAL_DTYPE"),
    ({"dst": "!pto.tile<16x32xf16>"}, "LEGAL_DTYPE"),
    ({"scale": "!pto.tile<16x1xf16, layout=DN>"}, "LEGAL_DTYPE"),
    ({"src": "!pto.tile<16x32xi8, valid=8x32>"}, "STRUCT_VALID_REGION"),
    ({"scale": "!pto.tile<16x1xf32, layout=DN, valid=8x1>"}, "STRUCT_VALID_REGION"),
    ({"offset": "!pto.tile<32x1xf32, layout=DN>"}, "STRUCT_VALID_REGION"),
    ({"offset": "!pto.tile<16x8xf32, valid=16x0>"}, "STRUCT_VALID_REGION"),
    ({"dst": "!pto.tile<16x32xf32, layout=DN>"}, "LEGAL_LAYOUT"),
    ({"src": "!pto.tile<16x32xi8, layout=DN>"}, "LEGAL_LAYOUT"),
])
def test_tdequant_static_rules(change: dict, code: str | None) -> None:
    got = codes("TDEQUANT", {**GOOD, **change})
    assert (got == []) if code is None else (code in got), got


@pytest.mark.parametrize("profile", ["cpu", "a2", "a3", "a5"])
def test_tdequant_legal_everywhere(profile: str) -> None:
    assert codes("TDEQUANT", GOOD, profile=profile) == []


# ----------------------------------------------------------------------------- SET_QUANT_*

def test_set_quant_scalar_records_value_and_type() -> None:
    state: dict = {}
    run("SET_QUANT_SCALAR", preQuantScalar=0.5, OutType=QuantOutType.I8, state=state)
    assert state == {"quant_scalar": {"scale": np.float32(0.5), "out_type": QuantOutType.I8}}
    assert isinstance(state["quant_scalar"]["scale"], np.float32)
    run("SET_QUANT_SCALAR", preQuantScalar=-0.0, OutType=QuantOutType.BF16, state=state)   # replaces
    assert state["quant_scalar"]["out_type"] is QuantOutType.BF16
    assert np.signbit(state["quant_scalar"]["scale"])
    run("SET_QUANT_SCALAR", preQuantScalar=1.0, OutType=QuantOutType.U8)                  # no state: fine


def test_set_quant_vector_records_the_tile_not_a_copy() -> None:
    state: dict = {}
    fp = tile([[1.0, 2.0, 4.0]], np.float32)
    run("SET_QUANT_VECTOR", fp=fp, state=state)
    assert state["quant_vector"]["fp"] is fp
    fp.data[0, 1] = 8.0                          # a later write is what a consumer sees
    assert state["quant_vector"]["fp"].region().tolist() == [[1.0, 8.0, 4.0]]
    assert fp.data.tolist() == [[1.0, 8.0, 4.0]]  # and nothing else changed


@pytest.mark.parametrize("types,code", [
    ({"fp": "!pto.tile<1x128xf32, loc=scaling>"}, None),
    ({"fp": "!pto.tile<1x128xf32>"}, "LEGAL_LOCATION"),
    ({"fp": "!pto.tile<2x128xf32, loc=scaling>"}, "STRUCT_SHAPE"),
    ({"fp": "!pto.tile<1x128xf16, loc=scaling>"}, "LEGAL_DTYPE"),
])
def test_set_quant_vector_static_rules(types: dict, code: str | None) -> None:
    got = codes("SET_QUANT_VECTOR", types)
    assert (got == []) if code is None else (code in got), got


def test_set_quant_scalar_needs_f32_and_out_type() -> None:
    assert codes("SET_QUANT_SCALAR", {"preQuantScalar": "f32"}, {"OutType": QuantOutType.I16}) == []
    assert "LEGAL_DTYPE" in codes("SET_QUANT_SCALAR", {"preQuantScalar": "f16"}, {"OutType": QuantOutType.I8})
    assert codes("SET_QUANT_SCALAR", {"preQuantScalar": "f32"}) != []


def test_state_keys_are_documented() -> None:
    from openpto.isa.families.quant import STATE_KEYS
    for mnemonic, key in STATE_KEYS.items():
        assert f"state[{key!r}]" in isa.get(mnemonic).doc


# ----------------------------------------------------------------------------- TQUANT_DN

def _dn(x: np.ndarray, alg: Any, interleave: bool = False, exp_shape: tuple[int, int] | None = None) -> tuple:
    import ml_dtypes
    r, c = x.shape
    dst = isa.Tile.of(np.zeros((r, c), ml_dtypes.float8_e4m3fn))
    exp = isa.Tile.of(np.full(exp_shape or (-(-r // 32), c), 9, np.uint8))
    run("TQUANT_DN", dst=dst, src=isa.Tile.of(x.astype(np.float32)), exp=exp, mx_alg=alg, interleave=interleave)
    return dst.data.view(np.uint8), exp.data


def test_tquant_dn_ocp_hand_values() -> None:
    from openpto.isa.attrs import MxQuantAlg
    x = np.zeros((32, 2), np.float32)
    x[:, 0] = 1.0
    x[0, 0] = 3.0          # max 3: f32 exponent 128 -> e = 120, scale 2**7
    x[1, 0] = -0.0078125   # -2**-7 * 2**7 = -1.0 -> code 0xB8
    x[2, 1] = np.nan       # ignored by the max; column 1 max 0 -> e = 0
    codes, e = _dn(x, MxQuantAlg.OcpMxFp8E4M3)
    assert e.tolist() == [[120, 0]]
    # 3 * 128 = 384 = 1.5 * 2**8 -> exponent field 15, mantissa 4: 0x7C; 1 * 128 = 2**7 -> 0x70
    assert codes[0, 0] == 0x7C and codes[1, 0] == 0xB8 and codes[5, 0] == 0x70
    assert codes[2, 1] == 0x7F and codes[0, 1] == 0x00


def test_tquant_dn_nv_exponent_rounds_up() -> None:
    from openpto.isa.attrs import MxQuantAlg
    x = np.zeros((32, 2), np.float32)
    x[0, 0] = 448.0        # d = 1.0 exactly: e = 127, scale 1
    x[0, 1] = 449.0        # d slightly above 1: e = 128, scale 2**-1
    codes, e = _dn(x, MxQuantAlg.NvMxFp8E4M3)
    assert e.tolist() == [[127, 128]]
    assert codes[0, 0] == 0x7E                      # 448
    assert codes[0, 1] == 0x76                      # 224.5 -> 224 = 1.75 * 2**7: field 14, mantissa 6


def test_tquant_dn_saturates_and_interleaves() -> None:
    from openpto.isa.attrs import MxQuantAlg
    x = np.ones((96, 1), np.float32)
    x[40, 0] = np.inf      # group 1: e = 255 - 8 = 247; 1 * 2**-120 -> +0, inf -> 448
    codes, e = _dn(x, MxQuantAlg.OcpMxFp8E4M3, interleave=True, exp_shape=(2, 2))
    assert codes[40, 0] == 0x7E and codes[41, 0] == 0x00
    # groups 0, 1, 2 have e = 127 - 0 ... : max 1.0 -> exponent 127 - 8 = 119
    assert e.tolist() == [[119, 247], [119, 0]]


def test_tquant_dn_static_rules() -> None:
    from openpto.isa.attrs import MxQuantAlg
    good = {"dst": "!pto.tile<64x32xf8e4m3>", "src": "!pto.tile<64x32xf32>", "exp": "!pto.tile<2x32xu8>"}
    alg = {"mx_alg": MxQuantAlg.OcpMxFp8E4M3}
    assert codes("TQUANT_DN", good, alg) == [] and codes("TQUANT_DN", good, alg, "a5") == []
    assert "STRUCT_VALID_REGION" in codes("TQUANT_DN", {**good, "exp": "!pto.tile<1x32xu8>"}, alg)
    assert "STRUCT_VALID_REGION" in codes("TQUANT_DN", good, {**alg, "interleave": True})
    assert codes("TQUANT_DN", {**good, "exp": "!pto.tile<1x64xu8>"}, {**alg, "interleave": True}) == []
    assert "LEGAL_DTYPE" in codes("TQUANT_DN", {**good, "src": "!pto.tile<64x32xi8>"}, alg)
    assert codes("TQUANT_DN", good, alg, "a3") != []         # A5 and CPU only


def test_tquant_dn_signalling_nan_ignored_by_the_maximum() -> None:
    """np.fmax (like C fmax) returns NaN for a signalling NaN, which would then hide the inf before
    it; the documented maximum ignores every NaN, so the inf still sets e = 255 - 8."""
    from openpto.isa.attrs import MxQuantAlg
    x = np.ones((32, 1), np.float32)
    x[0, 0] = np.inf
    x[1, 0] = np.array(0x7F800001, np.uint32).view(np.float32)
    codes, e = _dn(x, MxQuantAlg.OcpMxFp8E4M3)
    assert e.tolist() == [[247]]
    assert codes[:3, 0].tolist() == [0x7E, 0x7F, 0x00]


# ----------------------------------------------------------------------------- TQUANT_DN, FP4 algorithms

def _dn4(x: np.ndarray, alg: Any, src_dtype: Any = np.float16) -> tuple:
    r, c = x.shape
    dst = isa.Tile(parse_type(f"!pto.tile<{r}x{c}xfloat4_e2m1x2>"), np.full((r, c), 0x5, np.uint8))
    exp = isa.Tile.of(np.full((-(-r // 32), c), 9, np.uint8))
    run("TQUANT_DN", dst=dst, src=isa.Tile.of(x.astype(src_dtype)), exp=exp, mx_alg=alg)
    return dst.data, exp.data


def test_tquant_dn_ocp_fp4_hand_values() -> None:
    from openpto.isa.attrs import MxQuantAlg
    x = np.zeros((32, 3), np.float32)
    x[:, 0] = 1.0
    x[0, 0] = 3.0           # max 3: f32 exponent 128 - 2 = 126, scale 2**1: 3 -> 6 (0x7), 1 -> 2 (0x4)
    x[1, 0] = -0.75         # -1.5 -> 0xB
    x[0, 1] = 10.0          # max 10: exponent 130 - 2 = 128, scale 2**-1: 10 -> 5, a tie -> 4 (0x6)
    x[1, 1] = -0.3          # -0.15 -> -0 (0x8)
    x[2, 1] = 1.5           # 0.75: tie between 0.5 and 1 -> 1 (0x2, the even code)
    codes, e = _dn4(x, MxQuantAlg.OcpMxFp4E2M1)                # column 2: all zero -> e = 0, codes 0
    assert e.tolist() == [[126, 128, 0]]
    assert codes[:3, 0].tolist() == [0x7, 0xB, 0x4] and codes[:3, 1].tolist() == [0x6, 0x8, 0x2]
    assert codes[:, 2].tolist() == [0] * 32


def test_tquant_dn_nv_fp4_exponent_rounds_up() -> None:
    from openpto.isa.attrs import MxQuantAlg
    x = np.zeros((32, 2), np.float32)
    x[0, 0] = 6.0           # d = f32(6 * f32(1/6)) = 1.0 exactly: e = 127, scale 1: 6 -> 0x7
    x[1, 0] = 2.5           # 2.5: tie between 2 and 3 -> 2 (0x4)
    x[0, 1] = 7.0           # d = 7/6: mantissa non-zero -> e = 128, scale 2**-1: 3.5 -> tie -> 4 (0x6)
    codes, e = _dn4(x, MxQuantAlg.NvMxFp4E2M1, np.float32)
    assert e.tolist() == [[127, 128]]
    assert codes[:2, 0].tolist() == [0x7, 0x4] and codes[0, 1] == 0x6


def test_tquant_dn_fp4_nan_group_and_infinity() -> None:
    from openpto.isa.attrs import MxQuantAlg
    x = np.ones((64, 2), np.float32)
    x[3, 0] = np.nan        # group 0 of column 0: exponent 0xFF, every element 0x7 (negatives too)
    x[4, 0] = -1.0
    x[40, 1] = -np.inf      # group 1 of column 1: OCP exponent 255 - 2 = 253; -inf -> 0xF, 1 * 2**-126 -> 0
    for alg, inf_e in ((MxQuantAlg.OcpMxFp4E2M1, 253), (MxQuantAlg.NvMxFp4E2M1, 254)):
        codes, e = _dn4(x, alg, np.float32)
        assert e[0, 0] == 0xFF and codes[:32, 0].tolist() == [0x7] * 32
        assert e[1, 1] == inf_e and codes[40, 1] == 0xF and codes[41, 1] == 0x0
        # group 1 of column 0 (all 1): OCP 127 - 2 = 125; NV d = f32(1/6), exponent 124 + 1: scale 4, code 0x6
        assert e[1, 0] == 125 and codes[32, 0] == 0x6


def test_tquant_dn_fp4_static_rules() -> None:
    from openpto.isa.attrs import MxQuantAlg
    good = {"dst": "!pto.tile<64x64xfloat4_e2m1x2>", "src": "!pto.tile<64x64xbf16>", "exp": "!pto.tile<2x64xu8>"}
    alg = {"mx_alg": MxQuantAlg.OcpMxFp4E2M1}
    assert codes("TQUANT_DN", good, alg) == [] and codes("TQUANT_DN", good, alg, "a5") == []
    # 32 four-bit columns are 16 bytes: not a whole 32-byte row on a5
    narrow = {"dst": "!pto.tile<64x32xfloat4_e2m1x2>", "src": "!pto.tile<64x32xbf16>", "exp": "!pto.tile<2x32xu8>"}
    assert codes("TQUANT_DN", narrow, alg) == [] and codes("TQUANT_DN", narrow, alg, "a5") == ["LEGAL_ALIGNMENT"]
    f32 = {**good, "src": "!pto.tile<64x64xf32>"}
    assert codes("TQUANT_DN", f32, alg) == [] and "LEGAL_DTYPE" in codes("TQUANT_DN", f32, alg, "a5")
    assert "LEGAL_DTYPE" in codes("TQUANT_DN", good, {"mx_alg": MxQuantAlg.OcpMxFp8E4M3})
    f8 = {**good, "dst": "!pto.tile<64x64xf8e4m3>"}
    assert "LEGAL_DTYPE" in codes("TQUANT_DN", f8, {"mx_alg": MxQuantAlg.NvMxFp4E2M1})
    assert codes("TQUANT_DN", good, alg, "a3") != []


# ----------------------------------------------------------------------------- TQUANT_HIF4

import math  # noqa: E402

import ml_dtypes  # noqa: E402


def _hif4(x: np.ndarray, exp_cols: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    r, c = x.shape
    dst = isa.Tile.of(np.full((r, c), 0xA, np.uint8), dtype=isa.dtypes.FP4_E1M2)
    exp = isa.Tile.of(np.full((r, exp_cols or c // 16), 0x55, np.uint8))
    run("TQUANT_HIF4", dst=dst, src=isa.Tile.of(np.asarray(x, np.float32).astype(ml_dtypes.bfloat16)), exp=exp)
    return dst.data, exp.data


def test_tquant_hif4_hand_block() -> None:
    """Max 7: 7 * bf16(1/7) = 0.998046875 rounds (bf16 tie, to even) to 1.0, Ea = 2**0 -> code
    48 << 2 = 0xC0, reciprocal 1. Octet 0 (max 7 >= 4) sets Eb; quad 0 (7 / 2 = 3.5 >= 2) sets
    Ec: scale 1/4, 7 -> 1.75 (7), -3.5 -> -0.875, the tie of 0.75 and 1.0 -> even code 4 -> 0xC,
    bf16(0.3) / 4 -> 0; quad 1 (max 1 / 2 < 2): scale 1/2, 1 -> 0.5 (2). Octet 1 (max 2 < 4) has
    no Eb; its quads (2 >= 2) set Ec: 2 / 2 = 1 (4). Octet 2: -0 -> +0; 1.5 -> code 6, 0.625 (a
    tie of 0.5 and 0.75) -> code 2, bf16(-0.1) -> -0 (8), NaN -> 0."""
    x = np.zeros((1, 64), np.float32)
    x[0, :24] = [7, -3.5, 0.3, 0, 1, 1, 1, 1] + [2.0] * 8 + [-0.0] * 4 + [1.5, 0.625, -0.1, np.nan]
    codes, exp = _hif4(x)
    assert codes[0, :24].tolist() == [7, 0xC, 0, 0, 2, 2, 2, 2] + [4] * 8 + [0, 0, 0, 0, 6, 2, 8, 0]
    assert not codes[0, 24:].any()
    assert exp.tolist() == [[0xC0, 0x01, 0x0D, 0x00]]


def test_tquant_hif4_e6m2_mantissa_and_second_block() -> None:
    """Block 1 max 10: bf16(10 * 0.142578125) = 1.421875 (a bf16 tie to even), e6m2 rounds its
    mantissa 1.6875 / 4 up to 2/4: 1.5 * 2**0 = code 0xC2, reciprocal bf16(2/3) = 0.66796875;
    bf16(10 * 0.66796875) = 6.6875 sets Eb, 3.34375 sets Ec; scale bf16(0.66796875 / 4) =
    0.1669921875, 10 * scale -> bf16 1.671875 -> 1.75 (7). Block 0 is all zero: Ea 0, codes 0."""
    x = np.zeros((2, 128), np.float32)
    x[1, 64] = 10.0
    codes, exp = _hif4(x)
    assert codes[1, 64] == 7 and codes.sum() == 7
    assert exp.tolist() == [[0] * 8, [0] * 4 + [0xC2, 0x01, 0x01, 0x00]]


def test_tquant_hif4_extremes() -> None:
    """inf: Ea saturates at 0xFE (1.5 * 2**15), inf -> 1.75, every finite value -> 0. A tiny block
    (max 2**-60, below 7 * 2**-48) gets Ea 0, a zero scale and so +0 codes only
    (the products are ±0, and zero of either sign encodes as +0)."""
    x = np.zeros((2, 64), np.float32)
    x[0, 0], x[0, 1], x[0, 5] = np.inf, -np.inf, 1000.0
    x[1, 0], x[1, 1] = 2.0 ** -60, -2.0 ** -60
    codes, exp = _hif4(x)
    assert exp[0, 0] == 0xFE and codes[0, :2].tolist() == [7, 15] and codes[0, 5] == 0
    assert exp[0, 1:].tolist() == [0x01, 0x01, 0x00]
    assert exp[1].tolist() == [0, 0, 0, 0] and codes[1, :2].tolist() == [0, 0]


def _bf(v: float) -> float:
    return float(np.float32(v).astype(ml_dtypes.bfloat16))


def _e6m2(v: float) -> tuple[int, float]:
    """Independent scalar e6m2 (code, value): floor(log2), mantissa rounded half-even in quarters."""
    if v == 0 or v < 2.0 ** -48 * 0.875:
        return 0, 0.0
    if math.isinf(v):
        return 0xFE, 1.5 * 2.0 ** 15
    e = math.floor(math.log2(v))
    m = round((v / 2.0 ** e - 1) * 4)
    if m == 4:
        e, m = e + 1, 0
    if e < -48:
        return 0, 0.0
    if e > 15 or (e == 15 and m == 3):
        e, m = 15, 2
    return ((e + 48) << 2) | m, (1 + m / 4) * 2.0 ** e


_E1M2 = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]


def _e1m2(v: float) -> int:
    if math.isnan(v) or v == 0:
        return 0
    mag = min(abs(v), 1.75)                                            # saturate
    best = min(range(8), key=lambda k: (abs(_E1M2[k] - mag), k % 2))   # nearest, ties to even code
    return best | (8 if v < 0 else 0)


def _hif4_scalar(row: list[float]) -> tuple[list[int], list[int]]:
    """One row, element by element (plain Python floats, bf16 after every product)."""
    codes, rec = [], []
    for g in range(0, len(row), 64):
        blk = [0.0 if math.isnan(v) else abs(v) for v in row[g:g + 64]]
        ea, val = _e6m2(_bf(max(blk) * _bf(1 / 7)))
        r = 0.0 if ea == 0 else _bf(1 / val)
        eb_bits = ec_bits = 0
        for o in range(8):
            eb = _bf(max(blk[8 * o:8 * o + 8]) * r) >= 4
            eb_bits |= eb << o
            for d in range(2):
                q = 2 * o + d
                ec = _bf(_bf(max(blk[4 * q:4 * q + 4]) * r) * (0.5 if eb else 1.0)) >= 2
                ec_bits |= ec << q
                s = _bf(r * (0.5 if eb else 1.0) * (0.5 if ec else 1.0))
                codes += [_e1m2(_bf(v * s)) for v in row[g + 4 * q:g + 4 * q + 4]]
        rec += [ea, eb_bits, ec_bits & 0xFF, ec_bits >> 8]
    return codes, rec


def test_tquant_hif4_matches_a_scalar_rederivation() -> None:
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (6, 128)) * np.exp2(rng.integers(-50, 20, (6, 2))).repeat(64, axis=1)
    x = x.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)
    x[0, 3], x[1, :8], x[2, 70] = np.nan, 0.0, -np.inf
    codes, exp = _hif4(x)
    for i in range(6):
        want_codes, want_rec = _hif4_scalar([float(v) for v in x[i]])
        assert codes[i].tolist() == want_codes, i
        assert exp[i].tolist() == want_rec, i


def test_tquant_hif4_static_rules() -> None:
    good = {"dst": "!pto.tile<16x64xfloat4_e1m2x2>", "src": "!pto.tile<16x64xbf16>", "exp": "!pto.tile<16x32xu8, valid=16x4>"}
    assert codes("TQUANT_HIF4", good) == [] and codes("TQUANT_HIF4", good, profile="a6") == []
    assert "STRUCT_VALID_REGION" in codes("TQUANT_HIF4", {**good, "exp": "!pto.tile<16x32xu8, valid=16x3>"})
    assert "STRUCT_VALID_REGION" in codes("TQUANT_HIF4", {"dst": "!pto.tile<16x64xfloat4_e1m2x2, valid=16x32>",
                                                          "src": "!pto.tile<16x64xbf16>", "exp": "!pto.tile<16x32xu8>"})
    assert codes("TQUANT_HIF4", {**good, "src": "!pto.tile<16x64xf16>"}) != []
    for p in ("a2", "a3", "a5"):
        assert codes("TQUANT_HIF4", good, profile=p) != [], p


# ----------------------------------------------------------------------------- TMATMUL_MX_HIF4

def _mm_hif4(a: np.ndarray, sa: np.ndarray, b: np.ndarray, sb: np.ndarray) -> np.ndarray:
    fp4t = isa.dtypes.FP4_E1M2
    dst = isa.Tile.of(np.full((a.shape[0], b.shape[1]), 99.0, np.float32))
    run("TMATMUL_MX_HIF4", dst=dst, a=isa.Tile.of(a.astype(np.uint8), dtype=fp4t), scale_a=isa.Tile.of(sa.astype(np.uint8)),
        b=isa.Tile.of(b.astype(np.uint8), dtype=fp4t), scale_b=isa.Tile.of(sb.astype(np.uint8)))
    return dst.data


def test_tmatmul_mx_hif4_hand_values() -> None:
    """A row 0: code 4 (1.0) at k = 0, code 7 (1.75) at k = 9; record Ea 0xC0 (2**0), Eb 0x02 (octet 1),
    Ec 0x04 (quad 2, k = 8..11): A(0, 0) = 1, A(0, 9) = 1.75 * 2**2 = 7. B column 0: code 2 (0.5) at
    k = 0, 0xB (-0.75) at k = 9; Ea 0xC5 = (49 << 2) | 1: 1.25 * 2**1 = 2.5, Ec 0x01 (quad 0):
    B(0, 0) = 0.5 * 2.5 * 2 = 2.5, B(9, 0) = -1.875. dst = 2.5 + 7 * -1.875 = -10.625. Column 1 of B
    has Ea 0: zero whatever its codes."""
    a = np.zeros((1, 64))
    a[0, 0], a[0, 9] = 4, 7
    b = np.zeros((64, 2))
    b[0, 0], b[9, 0], b[:, 1] = 2, 0xB, 7
    sa = np.array([[0xC0, 0x02, 0x04, 0x00]])
    sb = np.array([[0xC5, 0], [0x00, 0xFF], [0x01, 0xFF], [0x00, 0xFF]])
    assert _mm_hif4(a, sa, b, sb).tolist() == [[-10.625, 0.0]]


def test_tmatmul_mx_hif4_of_tquant_hif4_approximates_the_product() -> None:
    """Quantise A and B^T with TQUANT_HIF4, multiply: close to the bf16 product (HiF4 keeps about
    two significant bits per element), and exactly the f64 sum of the values the records encode,
    computed here element by element."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 128)).astype(np.float32)
    y = rng.standard_normal((128, 3)).astype(np.float32)
    ca, ra = _hif4(x)
    cbt, rbt = _hif4(y.T.copy())
    got = _mm_hif4(ca, ra, cbt.T, rbt.T)

    def val(codes: np.ndarray, rec: np.ndarray, r: int, k: int) -> float:
        mag = _E1M2[codes[r, k] & 7] * (-1 if codes[r, k] & 8 else 1)
        g, p = divmod(k, 64)
        ea, eb, ec_lo, ec_hi = (int(v) for v in rec[r, 4 * g:4 * g + 4])
        eav = 0.0 if ea == 0 else (1 + (ea & 3) / 4) * 2.0 ** ((ea >> 2) - 48)
        ec = ((ec_hi << 8 | ec_lo) >> (p // 4)) & 1
        return mag * eav * 2.0 ** (((eb >> (p // 8)) & 1) + ec)
    want = np.array([[sum(val(ca, ra, i, k) * val(cbt, rbt, j, k) for k in range(128)) for j in range(3)]
                     for i in range(4)], np.float32)
    np.testing.assert_array_equal(got, want)
    exact = x.astype(np.float64) @ y.astype(np.float64)
    assert np.abs(got - exact).max() < 0.25 * np.abs(exact).max() + 2


def test_tmatmul_mx_hif4_static_rules() -> None:
    good = {"dst": "!pto.tile<16x16xf32, loc=acc, layout=NZ>", "a": "!pto.tile<16x64xfloat4_e1m2x2, loc=left, layout=NZ>",
            "scale_a": "!pto.tile<16x4xu8, loc=scale_left>", "b": "!pto.tile<64x16xhifloat4x2_t, loc=right, layout=ZN>",
            "scale_b": "!pto.tile<4x16xu8, loc=scale_right, layout=DN>"}
    assert codes("TMATMUL_MX_HIF4", good) == [] and codes("TMATMUL_MX_HIF4", good, profile="a6") == []
    assert codes("TMATMUL_MX_HIF4", good, profile="a5") != []
    assert "STRUCT_VALID_REGION" in codes("TMATMUL_MX_HIF4", {**good, "scale_a": "!pto.tile<16x4xu8, loc=scale_left, valid=16x3>"})
    assert "STRUCT_VALID_REGION" in codes("TMATMUL_MX_HIF4", {**good, "scale_b": "!pto.tile<4x16xu8, loc=scale_right, layout=DN, valid=3x16>"})
    assert "STRUCT_VALID_REGION" in codes("TMATMUL_MX_HIF4", {**good, "a": "!pto.tile<16x64xfloat4_e1m2x2, loc=left, layout=NZ, valid=16x32>"})
    assert parse_type("!pto.tile<2x64xhifloat4x2>").dtype is isa.dtypes.FP4_E1M2


def test_tquant_hif4_run_time_faults() -> None:
    """A valid region that is not whole 64-element blocks, or an exp region too small for the
    records, faults at run time (the dynamic counterparts of the static rules)."""
    from openpto.isa.diagnostics import RuntimeFault
    src = isa.Tile.of(np.ones((2, 128), ml_dtypes.bfloat16), (2, 96))
    dst = isa.Tile.of(np.zeros((2, 128), np.uint8), (2, 96), dtype=isa.dtypes.FP4_E1M2)
    with pytest.raises(RuntimeFault) as e:
        run("TQUANT_HIF4", dst=dst, src=src, exp=isa.Tile.of(np.zeros((2, 8), np.uint8)))
    assert e.value.code == "RUNTIME_VALID_REGION"
    src = isa.Tile.of(np.ones((2, 128), ml_dtypes.bfloat16))
    dst = isa.Tile.of(np.zeros((2, 128), np.uint8), dtype=isa.dtypes.FP4_E1M2)
    with pytest.raises(RuntimeFault) as e:
        run("TQUANT_HIF4", dst=dst, src=src, exp=isa.Tile.of(np.zeros((2, 8), np.uint8), (2, 7)))
    assert e.value.code == "RUNTIME_INVALID_WRITE"
