"""MGATHER / MSCATTER ROW mode with the public [1, R] index tile (one valid row holding row r's
index at idx[0, r]) next to the [R, 1] column form, on the reference and the llvm backend
against hand-written tables; the shape rule for both forms; and their NPU legality."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError

from llvm_support import run_program

BACKENDS = ("reference", "llvm")
TABLE = np.arange(60, dtype=np.float32).reshape(6, 10)      # row k holds 10k .. 10k + 9


def _gather(idx_type: str, dst_type: str = "!pto.tile<4x8xf32>", d: str = "f32") -> str:
    return (f"kernel @k(%out : {dst_type}, %src : !pto.memref<6x10x{d}>, %idx : {idx_type}) {{\n"
            f"  %out = mgather %src[0, 0], %idx {{indexMode = #pto.index_mode<ROW>}} : "
            f"(!pto.memref<6x10x{d}>, {idx_type}) -> {dst_type}\n}}\n")


def _scatter(idx_type: str) -> str:
    return ("kernel @k(%g : !pto.memref<6x10xf32>, %src : !pto.tile<3x8xf32>, %idx : " + idx_type + ") {\n"
            "  mscatter %g[0, 0], %src, %idx {indexMode = #pto.index_mode<ROW>} : "
            f"(!pto.memref<6x10xf32>, !pto.tile<3x8xf32>, {idx_type})\n}}\n")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("idx_type,idx", [
    ("!pto.tile<1x8xi32, valid=1x4>", np.array([[5, 0, 3, 3, 9, 9, 9, 9]], np.int32)),   # [1, R]
    ("!pto.tile<4x8xi32, valid=4x1>", np.array([[5] + [9] * 7, [0] + [9] * 7, [3] + [9] * 7,
                                                [3] + [9] * 7], np.int32)),             # [R, 1]
])
def test_mgather_row_index_forms(backend: str, idx_type: str, idx: np.ndarray) -> None:
    code, out = run_program(_gather(idx_type), backend,
                            {"out": np.zeros((4, 8), np.float32), "src": TABLE, "idx": idx})
    assert code is None
    want = np.array([[50 + j for j in range(8)], list(range(8)), [30 + j for j in range(8)],
                     [30 + j for j in range(8)]], np.float32)
    np.testing.assert_array_equal(out["out"], want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mgather_one_row_reads_idx00(backend: str) -> None:
    text = _gather("!pto.tile<1x8xu32>", "!pto.tile<1x8xf32>")
    idx = np.array([[2, 4, 4, 4, 4, 4, 4, 4]], np.uint32)
    code, out = run_program(text, backend, {"out": np.zeros((1, 8), np.float32), "src": TABLE, "idx": idx})
    assert code is None
    np.testing.assert_array_equal(out["out"][0], np.arange(20, 28, dtype=np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_mgather_one_row_index_out_of_range(backend: str) -> None:
    idx = np.array([[1, 6, 0, 0, 0, 0, 0, 0]], np.int32)        # 6 is past the table's 6 rows
    code, _ = run_program(_gather("!pto.tile<1x8xi32, valid=1x4>"), backend,
                          {"out": np.zeros((4, 8), np.float32), "src": TABLE, "idx": idx})
    assert code == "RUNTIME_OOB"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("idx_type,idx", [
    ("!pto.tile<1x8xi32, valid=1x3>", np.array([[4, 1, 5, 0, 0, 0, 0, 0]], np.int32)),
    ("!pto.tile<3x8xi32, valid=3x1>", np.array([[4] + [0] * 7, [1] + [0] * 7, [5] + [0] * 7], np.int32)),
])
def test_mscatter_row_index_forms(backend: str, idx_type: str, idx: np.ndarray) -> None:
    src = np.array([[100 + 10 * r + j for j in range(8)] for r in range(3)], np.float32)
    code, out = run_program(_scatter(idx_type), backend,
                            {"g": np.zeros((6, 10), np.float32), "src": src, "idx": idx})
    assert code is None
    want = np.zeros((6, 10), np.float32)
    want[4, :8], want[1, :8], want[5, :8] = src[0], src[1], src[2]
    np.testing.assert_array_equal(out["g"], want)


def test_one_row_index_must_hold_every_row() -> None:
    with pytest.raises(PTOError) as e:
        pto.compile(pto.parse(_gather("!pto.tile<1x8xi32, valid=1x3>")), backend="reference", profile="cpu")
    assert e.value.code == "STRUCT_VALID_REGION"


@pytest.mark.parametrize("profile", ["a2", "a3", "a5"])
@pytest.mark.parametrize("d", ["i8", "u16", "bf16", "f32"])
def test_mgather_npu_types(profile: str, d: str) -> None:
    text = _gather("!pto.tile<1x32xi32, valid=1x4>", f"!pto.tile<4x32x{d}, valid=4x8>", d)
    pto.compile(pto.parse(text), backend="reference", profile=profile)


@pytest.mark.parametrize("profile,d,code", [("a3", "i64", "LEGAL_DTYPE"), ("a3", "f8e4m3", "LEGAL_DTYPE")])
def test_mgather_npu_refusals(profile: str, d: str, code: str) -> None:
    text = _gather("!pto.tile<1x32xi32, valid=1x4>", f"!pto.tile<4x32x{d}, valid=4x8>", d)
    with pytest.raises(PTOError) as e:
        pto.compile(pto.parse(text), backend="reference", profile=profile)
    assert e.value.code == code


@pytest.mark.parametrize("profile", ["a2", "a3", "a5"])
def test_mscatter_on_npu_profiles(profile: str) -> None:
    """a2a3/MScatter.hpp and a5/MScatter.hpp implement the non-atomic row scatter (f32 data, i32 row indices)."""
    text = _scatter("!pto.tile<1x8xi32, valid=1x3>")
    pto.compile(pto.parse(text), backend="reference", profile=profile)
