"""The E8M0 element type (public float8_e8m0_t): its spellings, printing and bytecode, where it is
legal (MX scale operands beside u8, TQUANT_DN's exponents, bit moves, the global scale layouts)
and refused (arithmetic), and its values: an MX matmul with f8e8m0 scale tiles equals the same
with u8 scales and a numpy product written here from the format's definition."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
import openpto.isa as isa
from openpto.assembler import load_bytes
from openpto.isa import dtypes as dt
from openpto.isa.types import parse_type

from decl_support import decl_codes

pytestmark = pytest.mark.filterwarnings("error")

SPELLINGS = ["f8e8m0", "float8_e8m0_t", "float8_e8m0", "e8m0", "f8e8m0fnu"]


# ----------------------------------------------------------------------------- the type

def test_type_facts() -> None:
    assert dt.get("f8e8m0") is dt.E8M0 and dt.E8M0 in dt.CODED and dt.E8M0 not in dt.ALL
    assert dt.E8M0.bits == 8 and dt.E8M0.itemsize == 1 and dt.E8M0.np_dtype == np.uint8
    assert not dt.E8M0.is_signed
    assert (dt.E8M0.min, dt.E8M0.max) == (2.0 ** -127, 2.0 ** 127)


def test_encoding_is_ml_dtypes_float8_e8m0fnu() -> None:
    """The same codes as ml_dtypes' E8M0 (2**(e - 127), 0xFF NaN): the hand values below."""
    codes = np.array([0, 1, 126, 127, 128, 254, 255], np.uint8)
    got = codes.view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    want = [2.0 ** -127, 2.0 ** -126, 0.5, 1.0, 2.0, 2.0 ** 127]
    assert got[:-1].tolist() == want and np.isnan(got[-1])


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_compact_spellings_print_one_name(spelling: str) -> None:
    t = parse_type(f"!pto.tile<16x2x{spelling}, loc=scale_left>")
    assert t.dtype is dt.E8M0 and str(t) == "!pto.tile<16x2xf8e8m0, loc=scale_left>"


@pytest.mark.parametrize("spelling", SPELLINGS + ["f8E8M0FNU"])
def test_positional_and_global_spellings(spelling: str) -> None:
    assert parse_type(f"!pto.tile_buf<loc=scale_left, {spelling}, 16, 2>").dtype is dt.E8M0
    assert str(parse_type(f"!pto.ptr<{spelling}, gm>")) == "!pto.memref<?xf8e8m0>"


def test_unknown_spelling_is_a_parse_error() -> None:
    with pytest.raises(isa.ParseError) as e:
        parse_type("!pto.tile<16x2xf8e8m1>")
    assert e.value.code == "PARSE_TYPE"


_MX_KERNEL = """kernel @k(%c : !pto.tile<16x16xf32, loc=acc, layout=NZ>,
    %a : !pto.tile<16x64xf8e4m3, loc=left, layout=NZ>, %sa : !pto.tile<16x2x{s}, loc=scale_left>,
    %b : !pto.tile<64x16xf8e4m3, loc=right, layout=ZN>, %sb : !pto.tile<2x16x{s}, loc=scale_right, layout=DN>) {{
  %c = tmatmul.mx %a, %sa, %b, %sb : (!pto.tile<16x64xf8e4m3, loc=left, layout=NZ>, !pto.tile<16x2x{s}, loc=scale_left>, !pto.tile<64x16xf8e4m3, loc=right, layout=ZN>, !pto.tile<2x16x{s}, loc=scale_right, layout=DN>) -> !pto.tile<16x16xf32, loc=acc, layout=NZ>
}}
"""


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_kernel_print_and_bytecode(spelling: str) -> None:
    m = pto.parse(_MX_KERNEL.format(s=spelling))
    canonical = _MX_KERNEL.format(s="f8e8m0")
    assert m.to_text() == pto.parse(canonical).to_text() and m.to_text().count("xf8e8m0,") == 4
    assert load_bytes(m.to_bytes()) == m == pto.parse(m.to_text())


# ----------------------------------------------------------------------------- legality

def _codes(mnemonic: str, types: dict[str, str], profile: str, attrs: dict | None = None) -> list[str]:
    return decl_codes(mnemonic, types, attrs, profile)


def _mx_types(sa: str, sb: str, gemv: bool = False) -> dict[str, str]:
    m = 1 if gemv else 16
    return {"dst": f"!pto.tile<{m}x16xf32, loc=acc, layout=NZ>", "a": f"!pto.tile<{m}x64xf8e4m3, loc=left, layout=NZ>",
            "scale_a": f"!pto.tile<{m}x2x{sa}, loc=scale_left>", "b": "!pto.tile<64x16xf8e5m2, loc=right, layout=ZN>",
            "scale_b": f"!pto.tile<2x16x{sb}, loc=scale_right, layout=DN>"}


@pytest.mark.parametrize("mnemonic", ["TMATMUL_MX", "TGEMV_MX"])
def test_mx_scales_u8_or_e8m0_on_cpu_and_a5(mnemonic: str) -> None:
    gemv = mnemonic == "TGEMV_MX"
    for s in ("u8", "f8e8m0"):
        for p in ("cpu", "a5"):
            assert _codes(mnemonic, _mx_types(s, s, gemv), p) == [], (s, p)
        assert _codes(mnemonic, _mx_types(s, s, gemv), "a3")          # no MX on a2/a3
    # the two scale tiles name one type; other byte types are not scales
    assert "LEGAL_DTYPE" in _codes(mnemonic, _mx_types("u8", "f8e8m0", gemv), "cpu")
    assert "LEGAL_DTYPE" in _codes(mnemonic, _mx_types("i8", "i8", gemv), "cpu")
    assert "LEGAL_DTYPE" in _codes(mnemonic, _mx_types("hifloat8", "hifloat8", gemv), "cpu")


def test_hif4_mixed_overloads_take_an_e8m0_a_scale() -> None:
    def types(a: str, sa: str, cols: int) -> dict[str, str]:
        return {"dst": "!pto.tile<16x16xf32, loc=acc, layout=NZ>", "a": f"!pto.tile<16x64x{a}, loc=left, layout=NZ>",
                "scale_a": f"!pto.tile<16x{cols}x{sa}, loc=scale_left>",
                "b": "!pto.tile<64x16xfloat4_e1m2x2, loc=right, layout=ZN>",
                "scale_b": "!pto.tile<4x16xu8, loc=scale_right, layout=DN>"}
    for a in ("f8e4m3", "f16", "bf16"):
        assert _codes("TMATMUL_MX_HIF4", types(a, "f8e8m0", 2), "a6") == [], a
        assert _codes("TMATMUL_MX_HIF4", types(a, "u8", 2), "a6") == [], a
    # HiF4 A's scale_a holds 4-byte records, not E8M0 scales
    assert "LEGAL_DTYPE" in _codes("TMATMUL_MX_HIF4", types("float4_e1m2x2", "f8e8m0", 4), "a6")


@pytest.mark.parametrize("exp", ["u8", "f8e8m0"])
def test_tquant_dn_writes_u8_or_e8m0_exponents(exp: str) -> None:
    from openpto.isa.attrs import MxQuantAlg
    types = {"dst": "!pto.tile<64x32xf8e4m3>", "src": "!pto.tile<64x32xf32>", "exp": f"!pto.tile<2x32x{exp}>"}
    for p in ("cpu", "a5"):
        assert _codes("TQUANT_DN", types, p, {"mx_alg": MxQuantAlg.OcpMxFp8E4M3}) == [], p


@pytest.mark.parametrize("d,legal", [("f8e8m0", {"cpu", "a5"}), ("u8", {"cpu", "a2", "a3", "a5"})])
def test_bit_moves_per_profile(d: str, legal: set[str]) -> None:
    t, g = f"!pto.tile<2x32x{d}>", f"!pto.memref<2x32x{d}>"
    forms = {"TLOAD": {"dst": t, "src": g}, "TSTORE": {"dst": g, "src": t}, "TMOV": {"dst": t, "src": t}}
    for name, types in forms.items():
        for p in ("cpu", "a3", "a5"):
            assert (_codes(name, types, p) == []) == (p in legal), (name, p)


def test_moves_do_not_reinterpret_or_accumulate() -> None:
    from openpto.isa.attrs import AtomicMode
    t, g = "!pto.tile<2x32xf8e8m0>", "!pto.memref<2x32xf8e8m0>"
    assert "LEGAL_MODE" in _codes("TSTORE", {"dst": g, "src": t}, "cpu", {"atomic": AtomicMode.ADD})
    assert _codes("TMOV", {"dst": "!pto.tile<2x32xu8>", "src": t}, "cpu")      # same bits, still a dtype change
    assert _codes("TLOAD", {"dst": t, "src": "!pto.memref<2x32xu8>"}, "cpu")


@pytest.mark.parametrize("layout", ["MX_A_ZZ", "MX_A_ND"])
def test_global_scale_layouts_load_e8m0(layout: str) -> None:
    shape = {"MX_A_ZZ": "1x1x1x16x2", "MX_A_ND": "1x1x16x1x2"}[layout]
    for d, ok in (("f8e8m0", True), ("u8", True), ("i8", False)):
        types = {"dst": f"!pto.tile<16x2x{d}, loc=mat>", "src": f"!pto.memref<{shape}x{d}, layout={layout}>"}
        assert (_codes("TLOAD", types, "cpu") == []) == ok, d


@pytest.mark.parametrize("mnemonic,types", [
    ("TADD", {"dst": "!pto.tile<16x32xf8e8m0>", "src0": "!pto.tile<16x32xf8e8m0>", "src1": "!pto.tile<16x32xf8e8m0>"}),
    ("TEXP", {"dst": "!pto.tile<16x32xf8e8m0>", "src": "!pto.tile<16x32xf8e8m0>"}),
    ("TCVT", {"dst": "!pto.tile<16x32xf32>", "src": "!pto.tile<16x32xf8e8m0>"}),
    ("TCVT", {"dst": "!pto.tile<16x32xf8e8m0>", "src": "!pto.tile<16x32xf32>"}),
])
def test_arithmetic_and_conversions_refused(mnemonic: str, types: dict[str, str]) -> None:
    for p in ("cpu", "a5"):
        assert "LEGAL_DTYPE" in _codes(mnemonic, types, p), p


def test_tadd_kernel_fails_to_verify_with_a_location() -> None:
    t = "!pto.tile<16x32xf8e8m0>"
    text = f"kernel @k(%d : {t}, %a : {t}, %b : {t}) {{\n  %d = tadd %a, %b : ({t}, {t}) -> {t}\n}}\n"
    with pytest.raises(isa.PTOError) as e:
        pto.compile(pto.parse(text), "reference", "cpu")
    assert e.value.code == "LEGAL_DTYPE" and "f8e8m0" in str(e.value)


# ----------------------------------------------------------------------------- values

def _numpy_mx(a: np.ndarray, sa: np.ndarray, b: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """The MX product from the definition: each scale code e is 2**(e - 127), 255 NaN; one
    scale per 32 K elements; f64 sum rounded once to f32."""
    def value(codes: np.ndarray) -> np.ndarray:
        v = np.array([2.0 ** (int(c) - 127) for c in codes.ravel()]).reshape(codes.shape)
        return np.where(codes == 255, np.nan, v)
    x = a.astype(np.float64) * np.repeat(value(sa), 32, axis=1)
    y = b.astype(np.float64) * np.repeat(value(sb), 32, axis=0)
    with np.errstate(all="ignore"):                                   # 2**127 scales overflow f32
        return (x @ y).astype(np.float32)


def _mx_inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-4, 4, (16, 64)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.uniform(-4, 4, (64, 16)).astype(ml_dtypes.float8_e4m3fn)
    sa = rng.integers(110, 140, (16, 2)).astype(np.uint8)
    sb = rng.integers(110, 140, (2, 16)).astype(np.uint8)
    sa[3, 0], sa[4, 1], sb[1, 5], sb[0, 6] = 0, 254, 255, 128       # 2**-127, 2**127, NaN, 2
    return {"a": a, "sa": sa, "b": b, "sb": sb}


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_mx_matmul_with_e8m0_scales_equals_u8_and_numpy(backend: str) -> None:
    ins = _mx_inputs(7)
    out = {}
    for s in ("u8", "f8e8m0"):
        c = np.zeros((16, 16), np.float32)
        pto.compile(pto.parse(_MX_KERNEL.format(s=s)), backend, "cpu")(c, *(ins[n].copy() for n in ("a", "sa", "b", "sb")))
        out[s] = c
    np.testing.assert_array_equal(out["f8e8m0"], out["u8"])
    want = _numpy_mx(ins["a"], ins["sa"], ins["b"], ins["sb"])
    assert np.isnan(out["f8e8m0"][:, 5]).all()                       # a NaN scale poisons its column
    np.testing.assert_allclose(out["f8e8m0"], want, rtol=1e-6, atol=0)


@pytest.mark.parametrize("backend", ["reference", "llvm"])
@pytest.mark.parametrize("code,value", [(127, 1.0), (128, 2.0), (0, 2.0 ** -127), (126, 0.5), (255, float("nan"))])
def test_scale_code_golden_values(backend: str, code: int, value: float) -> None:
    """One scale code decoded through the matmul: A = 1 (in row 0, column 0), B = 2**100 * I-like
    column, scale_b 127: dst[0, 0] = value * 2**100 (scaled up so 2**-127 stays an f32 normal)."""
    a = np.zeros((16, 64), ml_dtypes.float8_e4m3fn)
    a[0, 0] = 1.0
    b = np.zeros((64, 16), ml_dtypes.float8_e4m3fn)
    b[0, 0] = 1.0
    sa = np.full((16, 2), 127, np.uint8)
    sa[0, 0] = code
    sb = np.full((2, 16), 127, np.uint8)
    sb[0, 0] = 227                                                     # 2**100
    c = np.zeros((16, 16), np.float32)
    pto.compile(pto.parse(_MX_KERNEL.format(s="f8e8m0")), backend, "cpu")(c, a, sa, b, sb)
    want = value * 2.0 ** 100
    if np.isnan(want):
        assert np.isnan(c[0, 0])
    else:
        assert c[0, 0] == np.float32(want)


_EVERY_CODE = np.arange(256, dtype=np.uint8).reshape(8, 32)


@pytest.mark.parametrize("backend", ["reference", "llvm"])
@pytest.mark.parametrize("relu", [False, True])
def test_every_code_through_load_move_store(backend: str, relu: bool) -> None:
    """Bit copies on both backends; relu keeps every code (no E8M0 value is negative or zero)."""
    t, g = "!pto.tile<8x32xf8e8m0>", "!pto.memref<8x32xf8e8m0>"
    attr = " {relu = #pto.relu<RELU>}" if relu else ""
    text = (f"kernel @k(%out : {g}, %in : {g}) {{\n"
            f"  %a = pto.alloc_tile : {t}\n  %b = pto.alloc_tile : {t}\n"
            f"  tload %a, %in[0, 0] : {t}, {g}\n  tmov %b, %a{attr} : {t}, {t}\n  tstore %out[0, 0], %b : {g}, {t}\n}}\n")
    out = np.full((8, 32), 0x55, np.uint8)
    pto.compile(pto.parse(text), backend, "a5" if backend == "reference" else "cpu")(out=out, **{"in": _EVERY_CODE.copy()})
    np.testing.assert_array_equal(out, _EVERY_CODE)


def test_conformance_draws_every_e8m0_code() -> None:
    from openpto.conformance import cases, values
    case = cases.base_cases(isa.get("TMOV"), "a5")[(dt.E8M0, dt.E8M0)]
    seen: set[int] = set()
    for situation in ("joint-specials", "ties", "int-extremes", "overflow"):
        arrays = [v for v in values.situation_inputs(case, situation).values() if isinstance(v, np.ndarray)]
        assert arrays and all(a.dtype == np.uint8 for a in arrays)
        seen.update(int(x) for a in arrays for x in a.ravel())
    assert len(seen) > 128 and 255 in seen
