"""The llvm backend's quantisation rules against the reference backend and hand-computed values:
TDEQUANT (i8/i16 codes, per-row parameters, two f32 roundings, special values, partial regions,
fused with a following elementwise op) and the state SET_QUANT_SCALAR / SET_QUANT_VECTOR write."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto as pto
from llvm_support import run_both
from openpto.backends.llvm import generate


def _tile(shape: tuple[int, int], d: str, extra: str = "") -> str:
    return f"!pto.tile<{shape[0]}x{shape[1]}x{d}{', ' + extra if extra else ''}>"


_run_both = run_both


def _same_bits(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def _dequant(src: np.ndarray, scale: np.ndarray, offset: np.ndarray, tmp: pathlib.Path,
             valid: str = "", then: str = "") -> tuple[np.ndarray, np.ndarray]:
    r, c = src.shape
    code = {np.int8: "i8", np.int16: "i16"}[src.dtype.type]
    d = _tile((r, c), "f32", f"valid={valid}" if valid else "")
    s, p = _tile((r, c), code), _tile((r, 1), "f32", "layout=DN")
    text = (f"kernel @k(%dst : {d}, %src : {s}, %scale : {p}, %offset : {p}) {{\n"
            f"  %dst = tdequant %src, %scale, %offset : ({s}, {p}, {p}) -> {d}\n"
            + (f"  %dst = {then} %dst, %dst : ({d}, {d}) -> {d}\n" if then else "") + "}\n")
    if valid:
        vr = int(valid.split("x")[0])
        p2 = _tile((r, 1), "f32", f"layout=DN, valid={vr}x1")
        text = text.replace(f"%scale : {p}, %offset : {p}", f"%scale : {p2}, %offset : {p2}")
        text = text.replace(f"({s}, {p}, {p})", f"({s}, {p2}, {p2})")
    dst = np.full((r, c), 7.0, np.float32)
    ref, got = _run_both(text, tmp, dst=dst, src=src, scale=scale, offset=offset)
    vr, vc = map(int, valid.split("x")) if valid else (r, c)      # outside: unspecified (poison)
    _same_bits(ref["dst"][:vr, :vc], got["dst"][:vr, :vc])
    return ref["dst"], got["dst"]


def test_tdequant_hand_values(tmp_path: pathlib.Path) -> None:
    src = np.array([[-128, -1, 0, 127], [10, 20, 30, 40]], np.int8)
    _, got = _dequant(src, np.array([[0.5], [2.0]], np.float32), np.array([[0.0], [10.0]], np.float32), tmp_path)
    assert got.tolist() == [[-64.0, -0.5, 0.0, 63.5], [0.0, 20.0, 40.0, 60.0]]


def test_tdequant_two_roundings_not_fused(tmp_path: pathlib.Path) -> None:
    src = np.array([[7, 5, -32768, 32767]], np.int16)
    _, got = _dequant(src, np.array([[1 / 3]], np.float32), np.array([[0.1]], np.float32), tmp_path)
    third, o = np.float32(1 / 3), np.float32(0.1)
    want = [np.float32(np.float32(np.float32(v) - o) * third) for v in (7, 5, -32768, 32767)]
    assert got[0].tolist() == [float(w) for w in want]
    assert got[0, 0] != np.float32(2.3)           # what one rounding (an FMA-like contraction) gives


def test_tdequant_specials(tmp_path: pathlib.Path) -> None:
    src = np.array([[1, 2], [0, 5], [1, 1], [-3, 3]], np.int8)
    scale = np.array([[np.nan], [0.0], [3e38], [-0.0]], np.float32)
    offset = np.array([[0.0], [np.inf], [-3e38], [-3.0]], np.float32)
    _, got = _dequant(src, scale, offset, tmp_path)
    assert np.isnan(got[:2]).all() and got[2].tolist() == [np.inf, np.inf]
    assert got[3].tolist() == [0.0, -0.0] and np.signbit(got[3]).tolist() == [True, True]  # (+0 | 6) * -0


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_tdequant_random_against_reference(dtype: type, tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(5)
    info = np.iinfo(dtype)
    src = rng.integers(info.min, info.max + 1, size=(8, 40), dtype=dtype)
    scale = rng.standard_normal((8, 1)).astype(np.float32)
    offset = rng.integers(-20, 20, size=(8, 1)).astype(np.float32)
    _, got = _dequant(src, scale, offset, tmp_path)
    want = (src.astype(np.float32) - offset) * scale          # numpy f32: one rounding per step
    np.testing.assert_array_equal(got, want)


def test_tdequant_partial_region_and_fusion(tmp_path: pathlib.Path) -> None:
    src = np.arange(24, dtype=np.int8).reshape(3, 8)
    scale, offset = np.array([[1.0], [-1.0], [9.0]], np.float32), np.array([[1.0], [1.0], [9.0]], np.float32)
    ref, got = _dequant(src, scale, offset, tmp_path, valid="2x5", then="tadd")
    want = 2 * ((src[:2, :5].astype(np.float32) - offset[:2]) * scale[:2])
    np.testing.assert_array_equal(got[:2, :5], want)


# ----------------------------------------------------------------------------- SET_QUANT_*

STATE = """kernel @k(%fp : !pto.tile<1x64xf32, loc=scaling>, %x : f32) {
  set_quant_scalar %x {OutType = #pto.out_type<U8>} : (f32)
  set_quant_vector %fp : (!pto.tile<1x64xf32, loc=scaling>)
}
"""


def test_set_quant_state_runs_and_changes_nothing(tmp_path: pathlib.Path) -> None:
    fp = np.arange(64, dtype=np.float32).reshape(1, 64)
    ref, got = _run_both(STATE, tmp_path, fp=fp, x=0.5)
    np.testing.assert_array_equal(ref["fp"], fp)
    np.testing.assert_array_equal(got["fp"], fp)


def test_set_quant_state_slots_are_written() -> None:
    """Each field slot is stored: the scale widened to f64, U8's code (1), the tile's address and
    its valid columns."""
    ir_text = generate(pto.parse(STATE))[0]
    stores = [line.split() for line in ir_text.splitlines() if line.strip().startswith("store")]
    by_slot = {}
    for words in stores:                  # the last store into each slot: the rule's, after the init
        by_slot[words[-1].strip('"%').removeprefix('state.')] = words[2].rstrip(",")
    assert by_slot["quant_scalar.out_type"] == "1"           # U8 is QuantOutType's member 1
    assert by_slot["quant_vector.cols"] == "64"
    assert by_slot["quant_scalar.scale"].startswith("%")      # the run-time scalar, widened
    assert by_slot["quant_vector.ptr"].startswith("%")        # the tile's address


def test_state_keys_match_reference() -> None:
    from openpto.backends.llvm.rules import quant as Q
    from openpto.isa.families.quant import STATE_KEYS
    assert Q.SCALAR_KEY == STATE_KEYS["SET_QUANT_SCALAR"] == "quant_scalar"
    assert Q.VECTOR_KEY == STATE_KEYS["SET_QUANT_VECTOR"] == "quant_vector"


# ----------------------------------------------------------------------------- TQUANT_DN

import ml_dtypes  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

_NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def _dn_text(shape: tuple[int, int], d: str, alg: str, valid: str = "", interleave: bool = False) -> str:
    r, c = shape
    groups = -(-r // 32)
    er, ec = (-(-groups // 2), 2 * c) if interleave else (groups, c)
    v = f"valid={valid}" if valid else ""
    dst, src, exp = _tile((r, c), "f8e4m3", v), _tile((r, c), d, v), _tile((er, ec), "u8")
    attrs = f"mx_alg = #pto.mx_alg<{alg}>" + (", interleave = true" if interleave else "")
    return (f"kernel @k(%dst : {dst}, %src : {src}, %exp : {exp}) {{\n"
            f"  %dst, %exp = tquant_dn %src {{{attrs}}} : ({src}) -> ({dst}, {exp})\n}}\n")


def _dn_both(text: str, src: np.ndarray, exp_shape: tuple[int, int], tmp: pathlib.Path) -> tuple[dict, dict]:
    dst = np.zeros(src.shape, ml_dtypes.float8_e4m3fn)
    return _run_both(text, tmp, dst=dst, src=src, exp=np.zeros(exp_shape, np.uint8))


def test_tquant_dn_bf16_one_column_compiles_and_runs(tmp_path: pathlib.Path) -> None:
    """63 x 1 bf16 once made LLVM's loop vectoriser abort the process; run it in a child so a
    regression is a failure here, not a dead test session. Hand values: max |x| = 3 gives the
    OCP exponent 128 - 8 = 120 (scale 2**7) for group 0; group 1 (rows 32..62) holds 0.5: 126 - 8."""
    script = f"""
import numpy as np, ml_dtypes, pathlib, openpto as pto
x = np.full((63, 1), 0.5, ml_dtypes.bfloat16); x[:32] = 1.0; x[3, 0] = -3.0
dst = np.zeros((63, 1), ml_dtypes.float8_e4m3fn); exp = np.zeros((2, 1), np.uint8)
pto.compile(pto.parse({_dn_text((63, 1), 'bf16', 'OcpMxFp8E4M3')!r}), "llvm", "cpu",
            cache_dir=pathlib.Path({str(tmp_path)!r}))(dst=dst, src=x, exp=exp)
print(exp.ravel().tolist(), hex(dst.view(np.uint8)[3, 0]), hex(dst.view(np.uint8)[0, 0]),
      hex(dst.view(np.uint8)[40, 0]))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    # -3 * 2**7 = -384 = -1.5 * 2**8: sign, field 15, mantissa 4 -> 0xFC; 1 * 2**7 -> 0x70;
    # group 1: scale 2**(127 - 118) = 2**9, 0.5 * 2**9 = 256 = 2**8 -> 0x78
    assert out.stdout.split() == ["[120,", "118]", "0xfc", "0x70", "0x78"]


@pytest.mark.parametrize("d", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("alg", ["OcpMxFp8E4M3", "NvMxFp8E4M3"])
def test_tquant_dn_random_against_reference(d: str, alg: str, tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((64, 24)) * np.exp2(rng.integers(-12, 12, size=(64, 24)))).astype(_NP[d])
    x[5, 3], x[40, 7], x[0, 0] = np.nan, np.inf, -0.0
    ref, got = _dn_both(_dn_text((64, 24), d, alg), x, (2, 24), tmp_path)
    np.testing.assert_array_equal(got["dst"].view(np.uint8), ref["dst"].view(np.uint8))
    np.testing.assert_array_equal(got["exp"], ref["exp"])


def test_tquant_dn_interleave_partial_group(tmp_path: pathlib.Path) -> None:
    """70 valid rows: three groups (the last of 6 rows); interleaved, group 3 is absent (0)."""
    x = np.zeros((96, 8), np.float32)
    x[:32], x[32:64], x[64:70] = 1.0, 4.0, 0.25
    ref, got = _dn_both(_dn_text((96, 8), "f32", "OcpMxFp8E4M3", valid="70x8", interleave=True),
                        x, (2, 16), tmp_path)
    want = np.array([[119, 121] * 8, [117, 0] * 8], np.uint8)      # exponents 127/129/125 minus 8
    np.testing.assert_array_equal(got["exp"], want)
    np.testing.assert_array_equal(ref["exp"], want)
    assert set(got["dst"].view(np.uint8)[:70].ravel().tolist()) == {0x78}   # each scales to 2**8


def test_tquant_dn_signalling_nan_is_ignored(tmp_path: pathlib.Path) -> None:
    """A signalling NaN is ignored by the group maximum like a quiet one (C fmax lets it through)."""
    x = np.ones((32, 1), np.float32)
    x[0, 0] = np.inf
    x[1, 0] = np.array(0x7F800001, np.uint32).view(np.float32)
    ref, got = _dn_both(_dn_text((32, 1), "f32", "OcpMxFp8E4M3"), x, (1, 1), tmp_path)
    assert got["exp"].tolist() == ref["exp"].tolist() == [[247]]            # 255 - 8 from inf
    assert got["dst"].view(np.uint8)[:3, 0].tolist() == [0x7E, 0x7F, 0x00]  # 448, NaN, 2**-120 -> 0
    np.testing.assert_array_equal(got["dst"].view(np.uint8), ref["dst"].view(np.uint8))


def _dn4_text(shape: tuple[int, int], d: str, alg: str) -> str:
    r, c = shape
    dst, src, exp = _tile((r, c), "float4_e2m1x2"), _tile((r, c), d), _tile((-(-r // 32), c), "u8")
    return (f"kernel @k(%dst : {dst}, %src : {src}, %exp : {exp}) {{\n"
            f"  %dst, %exp = tquant_dn %src {{mx_alg = #pto.mx_alg<{alg}>}} : ({src}) -> ({dst}, {exp})\n}}\n")


@pytest.mark.parametrize("d", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("alg", ["OcpMxFp4E2M1", "NvMxFp4E2M1"])
def test_tquant_dn_fp4_random_against_reference(d: str, alg: str, tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(12)
    x = (rng.standard_normal((70, 24)) * np.exp2(rng.integers(-12, 12, size=(70, 24)))).astype(_NP[d])
    x[5, 3], x[40, 7], x[41, 8], x[0, 0] = np.nan, np.inf, -np.inf, -0.0
    x[:, 9] = 0
    ref, got = _run_both(_dn4_text((70, 24), d, alg), tmp_path, dst=np.zeros((70, 24), np.uint8), src=x,
                         exp=np.zeros((3, 24), np.uint8))
    np.testing.assert_array_equal(got["dst"], ref["dst"])
    np.testing.assert_array_equal(got["exp"], ref["exp"])
    assert got["exp"][0, 3] == 0xFF and (got["dst"][:32, 3] == 0x7).all()       # the NaN group
    assert got["exp"][0, 9] == 0 and (got["dst"][:, 9] == 0).all()               # an all-zero column
    assert got["dst"].max() <= 0xF


def test_tquant_dn_fp4_hand_values(tmp_path: pathlib.Path) -> None:
    """max 3 -> OCP exponent 128 - 2 = 126, scale 2: 3 -> 6 (0x7), -0.75 -> -1.5 (0xB), 1 -> 2 (0x4),
    1.25 -> 2.5, a tie -> 2 (0x4), 0.3 -> 0.6 -> 0.5 (0x1)."""
    x = np.zeros((32, 1), np.float16)
    x[:5, 0] = [3.0, -0.75, 1.0, 1.25, 0.3]
    ref, got = _run_both(_dn4_text((32, 1), "f16", "OcpMxFp4E2M1"), tmp_path, dst=np.zeros((32, 1), np.uint8),
                         src=x, exp=np.zeros((1, 1), np.uint8))
    assert got["exp"].tolist() == [[126]] and got["dst"][:5, 0].tolist() == [0x7, 0xB, 0x4, 0x4, 0x1]


# ----------------------------------------------------------------------------- TQUANT_HIF4

def _hif4_text(shape: tuple[int, int], valid: str = "", exp_cols: int | None = None) -> str:
    r, c = shape
    v = f"valid={valid}" if valid else ""
    dst, src = _tile((r, c), "float4_e1m2x2", v), _tile((r, c), "bf16", v)
    exp = _tile((r, exp_cols or c // 16), "u8")
    return (f"kernel @k(%dst : {dst}, %src : {src}, %exp : {exp}) {{\n"
            f"  %dst, %exp = tquant_hif4 %src : ({src}) -> ({dst}, {exp})\n}}\n")


def _hif4_both(x: np.ndarray, tmp: pathlib.Path, **kw: object) -> tuple[dict, dict]:
    r, c = x.shape
    return _run_both(_hif4_text((r, c), **kw), tmp, dst=np.full((r, c), 0xA, np.uint8),
                     src=x.astype(ml_dtypes.bfloat16), exp=np.full((r, c // 16), 0x55, np.uint8))


def test_tquant_hif4_hand_block(tmp_path: pathlib.Path) -> None:
    """As tests/test_isa_quant.py's hand block: Ea 0xC0 (max 7), octet 0 sets Eb, quads 0, 2, 3 Ec."""
    x = np.zeros((1, 64), np.float32)
    x[0, :24] = [7, -3.5, 0.3, 0, 1, 1, 1, 1] + [2.0] * 8 + [-0.0] * 4 + [1.5, 0.625, -0.1, np.nan]
    ref, got = _hif4_both(x, tmp_path)
    assert got["dst"][0, :24].tolist() == [7, 0xC, 0, 0, 2, 2, 2, 2] + [4] * 8 + [0, 0, 0, 0, 6, 2, 8, 0]
    assert got["exp"].tolist() == [[0xC0, 0x01, 0x0D, 0x00]]
    np.testing.assert_array_equal(got["dst"], ref["dst"])


def test_tquant_hif4_random_against_reference(tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(21)
    x = rng.standard_normal((9, 192)) * np.exp2(rng.integers(-55, 22, (9, 3))).repeat(64, axis=1)
    x[0, 0], x[1, 65], x[2, 130], x[3, :64], x[4, 7] = np.nan, np.inf, -np.inf, 0.0, -0.0
    x[5, 64:128] = rng.integers(-8, 8, 64) * 0.25                  # small exact values: many ties
    ref, got = _hif4_both(x.astype(np.float32), tmp_path)
    np.testing.assert_array_equal(got["dst"], ref["dst"])
    np.testing.assert_array_equal(got["exp"], ref["exp"])
    assert got["dst"].max() <= 0xF and got["exp"][3, 0] == 0


def test_tquant_hif4_every_e6m2_rounding(tmp_path: pathlib.Path) -> None:
    """Block maxima over every bf16 exponent the e6m2 range meets, each with several mantissas:
    the llvm integer rounding agrees with the reference's code for code."""
    exps = np.arange(-60, 20)
    mants = np.array([1.0, 1.0078125, 1.125, 1.1875, 1.375, 1.5, 1.625, 1.875, 1.9921875])
    maxima = (mants[None, :] * np.exp2(exps)[:, None]).ravel()
    x = np.zeros((maxima.size, 64), np.float32)
    x[:, 0] = maxima
    x[:, 1:] = maxima[:, None] * 0.37
    ref, got = _hif4_both(x, tmp_path)
    np.testing.assert_array_equal(got["exp"], ref["exp"])
    np.testing.assert_array_equal(got["dst"], ref["dst"])
    assert len(set(got["exp"][:, 0].tolist())) > 200


def test_tquant_hif4_partial_columns_fault(tmp_path: pathlib.Path) -> None:
    """A dynamic-free kernel whose valid columns are not whole blocks is rejected before running."""
    with pytest.raises(pto.PTOError) as e:
        pto.compile(pto.parse(_hif4_text((2, 128), valid="2x96", exp_cols=8)), "llvm", "cpu", cache_dir=tmp_path)
    assert e.value.code == "STRUCT_VALID_REGION"


# ----------------------------------------------------------------------------- TMATMUL_MX_HIF4

def _mm_hif4_text(m: int, k: int, n: int, spelling: str = "float4_e1m2x2") -> str:
    c = f"!pto.tile<{m}x{n}xf32, loc=acc>"
    a, b = f"!pto.tile<{m}x{k}x{spelling}, loc=left>", f"!pto.tile<{k}x{n}x{spelling}, loc=right>"
    sa, sb = f"!pto.tile<{m}x{k // 16}xu8, loc=scale_left>", f"!pto.tile<{k // 16}x{n}xu8, loc=scale_right>"
    return (f"kernel @k(%dst : {c}, %a : {a}, %sa : {sa}, %b : {b}, %sb : {sb}) {{\n"
            f"  %dst = tmatmul_mx_hif4 %a, %sa, %b, %sb : ({a}, {sa}, {b}, {sb}) -> {c}\n}}\n")


def test_tmatmul_mx_hif4_hand_values(tmp_path: pathlib.Path) -> None:
    """As tests/test_isa_quant.py: A(0, 0) = 1, A(0, 9) = 1.75 * 2**2, B(0, 0) = 0.5 * 2.5 * 2,
    B(9, 0) = -0.75 * 2.5: -10.625; B's column 1 has Ea 0 and gives 0 (hifloat4x2_t spelling)."""
    a = np.zeros((1, 64), np.uint8)
    a[0, 0], a[0, 9] = 4, 7
    b = np.zeros((64, 2), np.uint8)
    b[0, 0], b[9, 0], b[:, 1] = 2, 0xB, 7
    sa = np.array([[0xC0, 0x02, 0x04, 0x00]], np.uint8)
    sb = np.array([[0xC5, 0], [0x00, 0xFF], [0x01, 0xFF], [0x00, 0xFF]], np.uint8)
    ref, got = _run_both(_mm_hif4_text(1, 64, 2, "hifloat4x2_t"), tmp_path, dst=np.full((1, 2), 9.0, np.float32),
                         a=a, sa=sa, b=b, sb=sb)
    assert got["dst"].tolist() == ref["dst"].tolist() == [[-10.625, 0.0]]


def test_tmatmul_mx_hif4_random_against_reference(tmp_path: pathlib.Path) -> None:
    """Random codes and records (every e6m2 code, every Eb / Ec pattern): bit-identical f32 sums."""
    rng = np.random.default_rng(30)
    m, k, n = 5, 192, 7
    args = {"dst": np.zeros((m, n), np.float32), "a": rng.integers(0, 16, (m, k)).astype(np.uint8),
            "sa": rng.integers(0, 256, (m, k // 16)).astype(np.uint8),
            "b": rng.integers(0, 16, (k, n)).astype(np.uint8),
            "sb": rng.integers(0, 256, (k // 16, n)).astype(np.uint8)}
    ref, got = _run_both(_mm_hif4_text(m, k, n), tmp_path, **args)
    _same_bits(ref["dst"], got["dst"])
    assert np.isfinite(got["dst"]).all() and np.abs(got["dst"]).max() > 0


def test_hif4_dynamic_regions_fault() -> None:
    """TQUANT_HIF4 with dynamic valid columns that are not whole 64-element blocks is
    RUNTIME_VALID_REGION on both backends; whole blocks run and agree with a hand-worked record."""
    from llvm_support import run_program
    quant = """kernel @k(%w : index, %e : !pto.tile<2x8xu8>) {
  .tile %x valid_col = %w : !pto.tile<2x128xbf16, valid=2x?>
  .tile %q valid_col = %w : !pto.tile<2x128xfloat4_e1m2x2, valid=2x?>
  %x = texpands 1.0 : !pto.tile<2x128xbf16, valid=2x?>
  %q, %e = tquant_hif4 %x : (!pto.tile<2x128xbf16, valid=2x?>) -> (!pto.tile<2x128xfloat4_e1m2x2, valid=2x?>, !pto.tile<2x8xu8>)
}
"""
    for w, want in ((96, "RUNTIME_VALID_REGION"), (128, None), (64, None)):
        for backend in ("reference", "llvm"):
            code, got = run_program(quant, backend, {"w": w, "e": np.zeros((2, 8), np.uint8)})
            assert code == want, (backend, w, code)
            if want is None:   # 1.0 everywhere: bf16(1/7) = 1.140625 * 2**-3 -> e6m2 1.25 * 2**-3
                # (0xB5), reciprocal 0.80078125 * 8 = 6.40625 >= 4 sets every Eb, 3.203125 >= 2 every Ec
                assert got["e"][:, :4].tolist() == [[0xB5, 0xFF, 0xFF, 0xFF]] * 2, backend
