"""The llvm backend's quantisation rules against the reference backend and hand-computed values:
TDEQUANT (i8/i16 codes, per-row parameters, two f32 roundings, special values, partial regions,
fused with a following elementwise op) and the state SET_QUANT_SCALAR / SET_QUANT_VECTOR write."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto as pto
from openpto.backends.llvm import generate


def _tile(shape: tuple[int, int], d: str, extra: str = "") -> str:
    return f"!pto.tile<{shape[0]}x{shape[1]}x{d}{', ' + extra if extra else ''}>"


def _run_both(text: str, tmp: pathlib.Path, **args: object) -> tuple[dict, dict]:
    """Run the one-kernel module on both backends with copies of ``args``; the final arrays."""
    module = pto.parse(text)
    outs = []
    for backend, options in (("reference", {}), ("llvm", {"cache_dir": tmp})):
        mine = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
        pto.compile(module, backend, "cpu", **options)(**mine)
        outs.append(mine)
    return outs[0], outs[1]


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
