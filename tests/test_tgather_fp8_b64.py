"""TGATHER on the a5 types beyond 2/4 bytes and i8/u8: f8e4m3, f8e5m2 and hifloat8 (1-byte floats,
moved as bits) and i64/u64 (by i32/u32 indices; the mask form along rows only on a5), as
a5/TGather.hpp has them. Each form runs on the reference and the llvm backend and is compared
with numpy indexing written here; legality per profile (cpu, a5 take them; a2/a3 and the Kirin
parts do not)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
from openpto.assembler.verifier import diagnose
from openpto.isa.diagnostics import PTOError

BACKENDS = ("reference", "llvm")
# the numpy type a test array of each dtype has (hifloat8: its uint8 codes)
NP = {"f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2, "hifloat8": np.uint8,
      "i64": np.int64, "u64": np.uint64}
WIDE = ("i64", "u64")
IDX = {"i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32}


def codes(text: str, profile: str) -> list[str]:
    return sorted({e.code for e in diagnose(pto.parse(text), profile)})


def run(text: str, backend: str, profile: str, args: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    arrays = {k: v.copy() for k, v in args.items()}
    pto.compile(pto.parse(text), backend, profile)(**arrays)
    return arrays


def index_form(d: str, it: str) -> str:
    t, ti = f"!pto.tile<4x32x{d}>", f"!pto.tile<4x32x{it}>"
    return (f"kernel @k(%dst : {t}, %src : {t}, %idx : {ti}) {{\n"
            f"  %dst = tgather %src, %idx : ({t}, {ti}) -> {t}\n}}\n")


def mask_form(d: str, pattern: str, axis: str, step: int = 2) -> str:
    src = f"!pto.tile<8x{32 * step}x{d}>"
    dst = f"!pto.tile<8x32x{d}>" if axis == "GATHER_ROW" else f"!pto.tile<4x64x{d}>"
    return (f"kernel @k(%dst : {dst}, %src : {src}) {{\n  %dst = tgather %src {{maskPattern = "
            f"#pto.mask_pattern<{pattern}>, gatherType = #pto.gather_axis<{axis}>}} : ({src}) -> {dst}\n}}\n")


def bits(d: str, n: int, seed: int) -> np.ndarray:
    """n values of d drawn as raw bit patterns (every 1-byte code, NaNs and -0 included)."""
    rng = np.random.default_rng(seed)
    width = np.dtype(NP[d]).itemsize
    raw = rng.integers(0, 256, n * width, dtype=np.uint8)
    return raw.view(NP[d]).copy()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d,it", [("f8e4m3", "i16"), ("f8e5m2", "u32"), ("hifloat8", "u16"),
                                  ("i64", "i32"), ("u64", "u32")])
def test_index_form(backend: str, d: str, it: str) -> None:
    src = bits(d, 128, 1).reshape(4, 32)
    idx = np.array([(127 - 5 * k) % 128 for k in range(128)], IDX[it]).reshape(4, 32)
    out = run(index_form(d, it), backend, "a5", {"dst": np.zeros((4, 32), NP[d]), "src": src, "idx": idx})
    want = src.reshape(-1)[idx.astype(np.int64)]
    np.testing.assert_array_equal(out["dst"].view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d", ["f8e4m3", "hifloat8", "i64", "u64"])
@pytest.mark.parametrize("pattern,step,first", [("P0101", 2, 0), ("P1000", 4, 3)])
def test_mask_form_rows(backend: str, d: str, pattern: str, step: int, first: int) -> None:
    src = bits(d, 8 * 32 * step, 2).reshape(8, 32 * step)
    out = run(mask_form(d, pattern, "GATHER_ROW", step), backend, "a5",
              {"dst": np.zeros((8, 32), NP[d]), "src": src})
    want = np.ascontiguousarray(src[:, first::step])
    np.testing.assert_array_equal(out["dst"].view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d", ["f8e5m2", "u64"])
def test_mask_form_columns(backend: str, d: str) -> None:
    """GATHER_COL keeps whole rows: every other row here (a 64-bit one only on cpu)."""
    src = bits(d, 8 * 64, 3).reshape(8, 64)
    profile = "cpu" if d in WIDE else "a5"
    out = run(mask_form(d, "P0101", "GATHER_COL"), backend, profile,
              {"dst": np.zeros((4, 64), NP[d]), "src": src})
    np.testing.assert_array_equal(out["dst"].view(np.uint8), np.ascontiguousarray(src[0::2]).view(np.uint8))


@pytest.mark.parametrize("d", ["f8e4m3", "f8e5m2", "hifloat8", "i64", "u64"])
def test_legality(d: str) -> None:
    it = "i32"
    assert codes(index_form(d, it), "cpu") == [] and codes(index_form(d, it), "a5") == []
    for profile in ("a2", "a3", "kirin9030", "kirinX90"):
        assert "LEGAL_DTYPE" in codes(index_form(d, it), profile), profile
    rows = mask_form(d, "P0101", "GATHER_ROW")
    assert codes(rows, "cpu") == [] and codes(rows, "a5") == []
    assert "LEGAL_DTYPE" in codes(rows, "a2")


@pytest.mark.parametrize("d", WIDE)
def test_64bit_rules(d: str) -> None:
    """64-bit data takes b32 indices only (everywhere), and the a5 mask form gathers along rows only."""
    for it in ("i16", "u16"):
        assert "LEGAL_DTYPE" in codes(index_form(d, it), "cpu")
        assert "LEGAL_DTYPE" in codes(index_form(d, it), "a5")
    cols = mask_form(d, "P0101", "GATHER_COL")
    assert codes(cols, "cpu") == []
    assert codes(cols, "a5") == ["LEGAL_DTYPE"]


def test_e8m0_is_not_gathered() -> None:
    for text in (index_form("f8e8m0", "i32"), mask_form("f8e8m0", "P0101", "GATHER_ROW")):
        for profile in ("cpu", "a5"):
            assert "LEGAL_DTYPE" in codes(text, profile)


def test_index_outside_src_faults_for_64bit() -> None:
    for backend in BACKENDS:
        exe = pto.compile(pto.parse(index_form("i64", "i32")), backend, "a5")
        idx = np.zeros((4, 32), np.int32)
        idx[3, 31] = 128
        with pytest.raises(PTOError) as e:
            exe(dst=np.zeros((4, 32), np.int64), src=np.zeros((4, 32), np.int64), idx=idx)
        assert e.value.code == "RUNTIME_OOB", backend
