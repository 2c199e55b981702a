"""TCI on float tiles (a2/a3 take any 2- or 4-byte type) and TRECIP on integer tiles (the public
TRECIP is TDIVS(dst, 1, src)), on the reference and the llvm backend against hand-computed
values, and their legality per profile."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError

from llvm_support import run_program

BACKENDS = ("reference", "llvm")
NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8, "u8": np.uint8,
      "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32}


def _tci(d: str, cols: int, descending: bool, valid: int | None = None) -> str:
    t = f"!pto.tile<1x{cols}x{d}{f', valid=1x{valid}' if valid else ''}>"
    flag = "true" if descending else "false"
    return (f"kernel @k(%dst : {t}, %s : {d}) {{\n"
            f"  %dst = tci %s {{descending = {flag}}} : {d} -> {t}\n}}\n")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d,start,descending,want", [
    ("f32", 2.5, False, [2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5]),
    ("f32", 0.25, True, [0.25, -0.75, -1.75, -2.75, -3.75, -4.75, -5.75, -6.75]),
    # f16 spacing at 2048 is 2: the odd values are ties, rounded to the even significand
    # (2049 -> 2048, 2051 -> 2052, 2053 -> 2052, 2055 -> 2056)
    ("f16", 2048.0, False, [2048, 2048, 2050, 2052, 2052, 2052, 2054, 2056]),
    # bf16 spacing at 256 is 2: each element rounds start + k once (no accumulated drift)
    ("bf16", 256.0, False, [256, 256, 258, 260, 260, 260, 262, 264]),
    ("f32", float("inf"), True, [float("inf")] * 8),
])
def test_tci_float_sequences(backend: str, d: str, start: float, descending: bool, want: list[float]) -> None:
    code, out = run_program(_tci(d, 8, descending), backend, {"dst": np.zeros((1, 8), NP[d]), "s": start})
    assert code is None
    np.testing.assert_array_equal(out["dst"][0].astype(np.float64), np.array(want, np.float64))


@pytest.mark.parametrize("backend", BACKENDS)
def test_tci_f32_start_rounds_then_steps(backend: str) -> None:
    # 2^24 + k: odd k are ties in f32 (spacing 2), rounded to even once per element
    start = float(2 ** 24)
    code, out = run_program(_tci("f32", 16, False, valid=6), backend,
                            {"dst": np.zeros((1, 16), np.float32), "s": start})
    assert code is None
    want = np.array([16777216, 16777216, 16777218, 16777220, 16777220, 16777220], np.float64)
    np.testing.assert_array_equal(out["dst"][0, :6].astype(np.float64), want)


def _legal_or_dtype_error(text: str, profile: str, ok: bool) -> None:
    """``text`` compiles for ``profile`` when ``ok``, else fails with LEGAL_DTYPE."""
    module = pto.parse(text)
    if ok:
        pto.compile(module, backend="reference", profile=profile)
        return
    with pytest.raises(PTOError) as e:
        pto.compile(module, backend="reference", profile=profile)
    assert e.value.code == "LEGAL_DTYPE"


@pytest.mark.parametrize("profile,d,ok", [("a3", "f32", True), ("a2", "bf16", True), ("a3", "f16", True),
                                          ("a5", "f32", False), ("a5", "i16", True)])
def test_tci_float_legality(profile: str, d: str, ok: bool) -> None:
    _legal_or_dtype_error(_tci(d, 16 if d != "f32" else 8, False), profile, ok)


def _recip(d: str, cols: int) -> str:
    t = f"!pto.tile<1x{cols}x{d}>"
    return f"kernel @k(%dst : {t}, %src : {t}) {{\n  %dst = trecip %src : ({t}) -> {t}\n}}\n"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d,src,want", [
    ("i32", [1, -1, 0, 2, -2, 7, -2 ** 31, 2 ** 31 - 1], [1, -1, -1, 0, 0, 0, 0, 0]),
    ("i16", [1, -1, 0, 3, -32768, 32767, 1, 0], [1, -1, -1, 0, 0, 0, 1, -1]),
    ("u8", [1, 0, 2, 255, 1, 0, 9, 1], [1, 255, 0, 0, 1, 255, 0, 1]),
    ("u32", [1, 0, 4294967295, 2, 1, 1, 0, 5], [1, 4294967295, 0, 0, 1, 1, 4294967295, 0]),
])
def test_trecip_integers(backend: str, d: str, src: list[int], want: list[int]) -> None:
    code, out = run_program(_recip(d, 8), backend,
                            {"dst": np.zeros((1, 8), NP[d]), "src": np.array([src], NP[d])})
    assert code is None
    np.testing.assert_array_equal(out["dst"][0], np.array(want, NP[d]))


@pytest.mark.parametrize("profile,d,ok", [("a3", "i32", True), ("a3", "i16", True), ("a3", "u16", False),
                                          ("a5", "u8", True), ("a5", "bf16", False)])
def test_trecip_legality(profile: str, d: str, ok: bool) -> None:
    _legal_or_dtype_error(_recip(d, 32), profile, ok)
