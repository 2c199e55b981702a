"""TSTORE / TSTORE_FP into a hifloat8 tensor on a5 (and cpu): the acc pre-quantising stores
(QF322HIF8_PRE with preQuantScalar, VQF322HIF8_PRE with a scaling tile) and the vec bit copy.

Expected codes are worked out by hand from the HiF8 format (the values of tests/test_isa_newtypes.py's
encode table: nearest, ties away from zero, overflow past 32768 is inf, NaN 0x80), not by the
package's encoder. A hifloat8 tensor is an array of uint8 codes: the same bytes stored into a u8
tensor saturate as integers instead, which shows the store reads the declared element type."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto
from openpto.assembler.verifier import diagnose
from openpto.isa.attrs import AtomicMode

BACKENDS = ("reference", "llvm")
ACC = "!pto.tile<16x16xf32, loc=acc, layout=NZ>"
G = "!pto.memref<16x16x{d}>"
# acc value (before the factor 0.5) -> the hifloat8 code of half of it
HALVED = [(0.6, 0x32),                  # 0.3: 9.6 / 32 -> 10 / 32 = 0.3125
          (-2.125, 0x89),               # -1.0625: exact
          (72000.0, 0x6E),              # 36000 -> 32768, the largest finite
          (81920.0, 0x6F),              # 40960: the tie past the last binade -> inf
          (np.nan, 0x80),
          (2.0 ** -22, 0x01),           # 2**-23: half the smallest, away -> 2**-22
          (0.99 * 2.0 ** -22, 0x00),    # below it: +0 (no negative zero)
          (-0.0, 0x00)]


def codes(text: str, profile: str) -> list[str]:
    return sorted({e.code for e in diagnose(pto.parse(text), profile)})


def scalar_store(d: str = "hifloat8", attrs: str = "") -> str:
    g = G.format(d=d)
    return (f"kernel @s(%g : {g}, %a : {ACC}, %k : f32) {{\n"
            f"  tstore %g[0, 0], %a, %k{attrs} : ({g}, {ACC}, f32)\n}}\n")


def vector_store(d: str = "hifloat8") -> str:
    g, fp = G.format(d=d), "!pto.tile<1x16xf32, loc=scaling>"
    return (f"kernel @s(%g : {g}, %a : {ACC}, %fp : {fp}) {{\n"
            f"  tstore_fp %g[0, 0], %a, %fp : ({g}, {ACC}, {fp})\n}}\n")


def acc_values() -> tuple[np.ndarray, np.ndarray]:
    """The HALVED values in row 0, 1.0 everywhere else (halved: 0.5, HALF_CODE); the codes."""
    a = np.ones((16, 16), np.float32)
    a[0, :len(HALVED)] = [v for v, _ in HALVED]
    want = np.full((16, 16), HALF_CODE, np.uint8)
    want[0, :len(HALVED)] = [c for _, c in HALVED]
    return a, want


HALF_CODE = 0x18       # 0.5: 001 1 000 (D = 1, E = -1, M = 0)


def run(text: str, backend: str, profile: str, args: dict) -> dict:
    arrays = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    pto.compile(pto.parse(text), backend, profile)(**arrays)
    return arrays


@pytest.mark.parametrize("profile", ["a5", "cpu"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_scalar_prequant_store_to_hifloat8(profile: str, backend: str) -> None:
    a, want = acc_values()
    out = run(scalar_store(), backend, profile, {"g": np.full((16, 16), 0xAA, np.uint8), "a": a,
                                                 "k": np.float32(0.5)})
    np.testing.assert_array_equal(out["g"], want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vector_prequant_store_to_hifloat8(backend: str) -> None:
    """Per-column factors: column j scaled by fp[0, j]: 0.5 everywhere but column 15, scaled by 2
    (its 1.0 values give 2.0, TWO_CODE)."""
    a, want = acc_values()
    fp = np.full((1, 16), 0.5, np.float32)
    fp[0, 15] = 2.0
    want[1:, 15] = TWO_CODE
    want[0, 15] = TWO_CODE
    out = run(vector_store(), backend, "a5", {"g": np.zeros((16, 16), np.uint8), "a": a, "fp": fp})
    np.testing.assert_array_equal(out["g"], want)


TWO_CODE = 0x10        # 2.0: 001 0 000 (D = 1, E = +1, M = 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_relu_before_the_conversion(backend: str) -> None:
    a, want = acc_values()
    out = run(scalar_store(attrs=" {relu = #pto.relu<RELU>}"), backend, "a5",
              {"g": np.zeros((16, 16), np.uint8), "a": a, "k": np.float32(0.5)})
    want[0, 1] = 0x00                   # -1.0625 -> +0; NaN stays 0x80
    np.testing.assert_array_equal(out["g"], want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_u8_tensor_saturates_the_same_values(backend: str) -> None:
    """The same program with a u8 tensor: integers, not codes (0.3 -> 0, 36000 -> 255, NaN -> 0)."""
    a, _ = acc_values()
    out = run(scalar_store("u8"), backend, "a5", {"g": np.zeros((16, 16), np.uint8), "a": a, "k": np.float32(0.5)})
    assert out["g"][0, :8].tolist() == [0, 0, 255, 255, 0, 0, 0, 0]
    assert (out["g"][1:] == 0).all()      # 0.5 rounds to even: 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_vec_hifloat8_tile_stores_every_code(backend: str) -> None:
    t, g = "!pto.tile<8x32xhifloat8>", "!pto.memref<8x32xhifloat8>"
    text = f"kernel @s(%g : {g}, %t : {t}) {{\n  tstore %g[0, 0], %t : ({g}, {t})\n}}\n"
    every = np.arange(256, dtype=np.uint8).reshape(8, 32)
    out = run(text, backend, "a5", {"g": np.zeros((8, 32), np.uint8), "t": every})
    np.testing.assert_array_equal(out["g"], every)


def test_legality() -> None:
    for profile in ("cpu", "a5", "a6"):
        assert codes(scalar_store(), profile) == [], profile
    for profile in ("cpu", "a5"):
        assert codes(vector_store(), profile) == [], profile
    for profile in ("a2", "a3"):
        assert "LEGAL_DTYPE" in codes(scalar_store(), profile)
        assert "LEGAL_DTYPE" in codes(vector_store(), profile)
    g = G.format(d="hifloat8")
    plain = f"kernel @s(%g : {g}, %a : {ACC}) {{\n  tstore %g[0, 0], %a : ({g}, {ACC})\n}}\n"
    assert codes(plain, "a5") == ["STRUCT_MISSING_OPERAND"]       # no cast mode to hifloat8
    iacc = ACC.replace("f32", "i32")
    from_i32 = f"kernel @s(%g : {g}, %a : {iacc}, %k : f32) {{\n  tstore %g[0, 0], %a, %k : ({g}, {iacc}, f32)\n}}\n"
    assert "LEGAL_DTYPE" in codes(from_i32, "a5")                  # i32 acc has no hifloat8 mode
    atomic = scalar_store(attrs=f" {{atomic = #pto.atomic<{AtomicMode.ADD.name}>}}")
    assert codes(atomic, "a5") == ["LEGAL_MODE"]                    # no atomic add on codes
