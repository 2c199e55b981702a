"""The llvm backend's TCONCAT, TINTERLEAVE, TDEINTERLEAVE and THISTOGRAM rules against the
reference backend and hand-computed cases: every dtype bit for bit (NaN payloads), partial
valid regions, odd widths, in-place use, both TDEINTERLEAVE forms, histogram filters, faults."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from llvm_support import run_program

NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8, "u8": np.uint8,
      "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32}


def _raw(d: str, shape: tuple[int, int], seed: int) -> np.ndarray:
    """Random bit patterns (NaN payloads included for floats)."""
    rng = np.random.default_rng(seed)
    n = np.dtype(NP[d]).itemsize
    bits = rng.integers(0, 256, shape + (n,), dtype=np.uint8)
    return bits.view(NP[d]).reshape(shape)


def _both(text: str, regions: dict[str, tuple[int, int]], **args: object) -> dict[str, np.ndarray]:
    """Run on both backends: the same fault code, or the same bits inside each output's region."""
    code_r, ref = run_program(text, "reference", args)
    code_l, got = run_program(text, "llvm", args)
    assert code_r == code_l, (code_r, code_l)
    for k, (r, c) in regions.items():
        if ref:
            np.testing.assert_array_equal(ref[k][:r, :c].view(np.uint8), got[k][:r, :c].view(np.uint8), err_msg=k)
    return got


@pytest.mark.parametrize("d", sorted(NP))
def test_tconcat_every_dtype(d: str) -> None:
    text = (f"kernel @k(%o : !pto.tile<4x24x{d}, valid=3x13>, %a : !pto.tile<4x16x{d}, valid=4x5>, "
            f"%b : !pto.tile<4x8x{d}>) {{\n  %o = tconcat %a, %b\n}}\n")
    a, b = _raw(d, (4, 16), 1), _raw(d, (4, 8), 2)
    got = _both(text, {"o": (3, 13)}, o=np.zeros((4, 24), NP[d]), a=a, b=b)
    want = np.hstack([a[:3, :5], b[:3, :8]])
    np.testing.assert_array_equal(got["o"][:3, :13].view(np.uint8), want.view(np.uint8))


def test_tconcat_in_place_and_fault() -> None:
    text = """kernel @k(%a : !pto.tile<2x8xi32, valid=2x3>, %b : !pto.tile<2x8xi32, valid=2x5>, %o : !pto.tile<2x8xi32>) {
  %o = tconcat %b, %o : (!pto.tile<2x8xi32, valid=2x5>, !pto.tile<2x8xi32>) -> !pto.tile<2x8xi32>
}
"""
    # dst's 8 columns are not 5 + 8: a static rule
    code, _ = run_program(text, "llvm", {})
    assert code == "STRUCT_VALID_REGION"
    text = """kernel @k(%b : !pto.tile<2x8xi32, valid=2x5>, %o : !pto.tile<2x8xi32, valid=2x8>, %s : !pto.tile<2x8xi32, valid=2x3>) {
  %o = tconcat %s, %b
  %b = tconcat %b, %s : (!pto.tile<2x8xi32, valid=2x5>, !pto.tile<2x8xi32, valid=2x3>) -> !pto.tile<2x8xi32, valid=2x5>
}
"""
    code, _ = run_program(text, "llvm", {})
    assert code == "STRUCT_VALID_REGION"          # in place would need b's 5 columns to hold 8
    text = """kernel @k(%o : !pto.tile<2x8xi32>, %s : !pto.tile<2x8xi32, valid=2x3>, %b : !pto.tile<2x8xi32, valid=2x5>) {
  %o = tconcat %s, %b
  %o = tconcat %s, %b
}
"""
    s = np.arange(16, dtype=np.int32).reshape(2, 8)
    b = 100 + s
    got = _both(text, {"o": (2, 8)}, o=np.zeros((2, 8), np.int32), s=s, b=b)
    np.testing.assert_array_equal(got["o"], [[0, 1, 2, 100, 101, 102, 103, 104],
                                             [8, 9, 10, 108, 109, 110, 111, 112]])


@pytest.mark.parametrize("d", sorted(NP))
@pytest.mark.parametrize("width", [6, 5])
def test_interleave_round_trip(d: str, width: int) -> None:
    t = f"!pto.tile<3x8x{d}, valid=3x{width}>"
    text = (f"kernel @k(%p : {t}, %q : {t}, %a : {t}, %b : {t}, %x : {t}, %y : {t}) {{\n"
            f"  %p, %q = tinterleave %a, %b\n  %x, %y = tdeinterleave %p, %q\n}}\n")
    a, b = _raw(d, (3, 8), 3), _raw(d, (3, 8), 4)
    z = np.zeros((3, 8), NP[d])
    got = _both(text, {n: (3, width) for n in "pqxy"}, p=z, q=z, a=a, b=b, x=z, y=z)
    np.testing.assert_array_equal(got["x"][:, :width].view(np.uint8), a[:, :width].view(np.uint8))
    np.testing.assert_array_equal(got["y"][:, :width].view(np.uint8), b[:, :width].view(np.uint8))
    stream = np.empty((3, 2 * width), NP[d])
    stream[:, 0::2], stream[:, 1::2] = a[:, :width], b[:, :width]
    np.testing.assert_array_equal(got["p"][:, :width].view(np.uint8), stream[:, :width].view(np.uint8))


def test_interleave_in_place() -> None:
    t = "!pto.tile<2x4xf32>"
    text = f"kernel @k(%a : {t}, %b : {t}) {{\n  %a, %b = tinterleave %a, %b\n}}\n"
    a = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32)
    b = a + 10
    got = _both(text, {"a": (2, 4), "b": (2, 4)}, a=a, b=b)
    np.testing.assert_array_equal(got["a"], [[1, 11, 2, 12], [5, 15, 6, 16]])
    np.testing.assert_array_equal(got["b"], [[3, 13, 4, 14], [7, 17, 8, 18]])


def test_deinterleave_single_source_in_place() -> None:
    text = """kernel @k(%s : !pto.tile<2x8xu16>, %o : !pto.tile<2x8xu16, valid=2x4>) {
  .tile %e : !pto.tile<2x8xu16, valid=2x4>
  %e, %o = tdeinterleave %s
}
"""
    s = np.arange(16, dtype=np.uint16).reshape(2, 8)
    got = _both(text, {"o": (2, 4)}, s=s, o=np.zeros((2, 8), np.uint16))
    np.testing.assert_array_equal(got["o"][:, :4], [[1, 3, 5, 7], [9, 11, 13, 15]])


def test_histogram_u16_and_u32() -> None:
    rng = np.random.default_rng(11)
    s16 = rng.integers(0, 4, (4, 40)).astype(np.uint16) * 0x100 + rng.integers(0, 256, (4, 40)).astype(np.uint16)
    idx16 = np.zeros((32, 1), np.uint8)
    idx16[:4, 0] = [0, 1, 2, 3]
    text = """kernel @k(%d : !pto.tile<4x256xu32>, %s : !pto.tile<4x40xu16>, %i : !pto.tile<32x1xu8, layout=DN>) {
  %d = thistogram %s, %i {byte = #pto.hist_byte<BYTE_0>}
}
"""
    got = _both(text, {"d": (4, 256)}, d=np.full((4, 256), 7, np.uint32), s=s16, i=idx16)
    for r in range(4):
        keep = s16[r][(s16[r] >> 8) == r]
        np.testing.assert_array_equal(got["d"][r], np.bincount(keep & 0xFF, minlength=256))
    s32 = rng.integers(0, 2**32, (3, 40), dtype=np.uint32)
    s32[:, :20] = (s32[:, :20] & 0xFFFF) | 0x12340000
    idx32 = np.zeros((3, 32), np.uint8)
    idx32[0], idx32[1] = 0x12, 0x34
    for byte in range(4):
        text = f"""kernel @k(%d : !pto.tile<3x256xu32>, %s : !pto.tile<3x40xu32>, %i : !pto.tile<3x32xu8>) {{
  %d = thistogram %s, %i {{byte = #pto.hist_byte<BYTE_{byte}>}}
}}
"""
        got = _both(text, {"d": (3, 256)}, d=np.zeros((3, 256), np.uint32), s=s32, i=idx32)
        assert got["d"].sum() >= (20 * 3 if byte >= 1 else 0)


def test_histogram_dynamic_fault() -> None:
    text = """kernel @k(%s : !pto.tile<4x40xu16>, %v : index) {
  .tile %d valid_col = %v : !pto.tile<4x256xu32, valid=4x?>
  %d = thistogram %s {byte = #pto.hist_byte<BYTE_1>}
}
"""
    for backend in ("reference", "llvm"):
        code, _ = run_program(text, backend, {"s": np.zeros((4, 40), np.uint16), "v": 255})
        assert code == "RUNTIME_VALID_REGION", backend
        code, _ = run_program(text, backend, {"s": np.zeros((4, 40), np.uint16), "v": 256})
        assert code is None, backend


_IDX_NP = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32}


def _concat_idx_text(d: str, i: str, with_dst_idx: bool, width: int = 24) -> str:
    res = "%o, %k" if with_dst_idx else "%o"
    k = f", %k : !pto.tile<4x32x{i}, valid=4x1>" if with_dst_idx else ""
    return (f"kernel @k(%o : !pto.tile<4x32x{d}, valid=4x{width}>{k}, %a : !pto.tile<4x16x{d}>, "
            f"%b : !pto.tile<4x16x{d}, valid=4x12>, %i : !pto.tile<4x32x{i}>, %j : !pto.tile<4x32x{i}>) {{\n"
            f"  {res} = tconcat %a, %b, %i, %j\n}}\n")


@pytest.mark.parametrize("i", sorted(_IDX_NP))
@pytest.mark.parametrize("d", ["f32", "f16", "bf16", "i8", "u32"])
def test_tconcat_indexed_against_reference(d: str, i: str) -> None:
    """Per-row widths in units of the index element, clamped to dst's 24 columns, every data and
    index dtype; the untouched tail of each row keeps its bits."""
    u = np.dtype(_IDX_NP[i]).itemsize
    n0 = np.array([3, 16, 0, 16], np.int64) * u + np.array([0, 0, u - 1, 0])   # 3, 16, 0 (rounds down), 16
    n1 = np.array([12, 12, 5, 9], np.int64) * u                                # 12, 8 (clamped), 5, 8 (clamped)
    idx0, idx1 = np.zeros((4, 32), _IDX_NP[i]), np.zeros((4, 32), _IDX_NP[i])
    idx0[:, 0], idx1[:, 0] = n0, n1
    a, b, o = _raw(d, (4, 16), 3), _raw(d, (4, 16), 4), _raw(d, (4, 32), 5)
    got = _both(_concat_idx_text(d, i, True), {"o": (4, 24), "k": (4, 1)}, o=o, a=a, b=b, i=idx0, j=idx1,
                k=np.zeros((4, 32), _IDX_NP[i]))
    for row, (c0, c1) in enumerate([(3, 12), (16, 8), (0, 5), (16, 8)]):
        want = np.concatenate([a[row, :c0], b[row, :c1], o[row, c0 + c1:24]])
        np.testing.assert_array_equal(got["o"][row, :24].view(np.uint8), want.view(np.uint8))
        assert got["k"][row, 0] == (c0 + c1) * u
    _both(_concat_idx_text(d, i, False), {"o": (4, 24)}, o=o, a=a, b=b, i=idx0, j=idx1)


@pytest.mark.parametrize("n0, n1, code", [(-4, 0, "RUNTIME_OOB"), (0, -4, "RUNTIME_OOB"),
                                          (4 * 17, 0, "RUNTIME_INVALID_READ"), (0, 4 * 13, "RUNTIME_INVALID_READ"),
                                          (4 * 16, 4 * 8, None)])
def test_tconcat_indexed_faults(n0: int, n1: int, code: str | None) -> None:
    idx0, idx1 = np.zeros((4, 32), np.int32), np.zeros((4, 32), np.int32)
    idx0[2, 0], idx1[2, 0] = n0, n1
    text = _concat_idx_text("f32", "i32", True, width=32)
    args = dict(o=np.zeros((4, 32), np.float32), a=np.ones((4, 16), np.float32), b=np.ones((4, 16), np.float32),
                i=idx0, j=idx1, k=np.zeros((4, 32), np.int32))
    code_r, _ = run_program(text, "reference", args)
    code_l, _ = run_program(text, "llvm", args)
    assert code_r == code_l == code


def test_tconcat_indexed_in_place() -> None:
    """dst is src1: src1's columns are read before the row is rewritten."""
    text = ("kernel @k(%a : !pto.tile<2x8xi32>, %o : !pto.tile<2x8xi32>, %i : !pto.tile<2x8xi32>, "
            "%j : !pto.tile<2x8xi32>) {\n  %o = tconcat %a, %o, %i, %j\n}\n")
    idx0, idx1 = np.zeros((2, 8), np.int32), np.zeros((2, 8), np.int32)
    idx0[:, 0], idx1[:, 0] = [8, 0], [12, 20]
    a = np.arange(1, 17, dtype=np.int32).reshape(2, 8)
    o = -np.arange(1, 17, dtype=np.int32).reshape(2, 8)
    got = _both(text, {"o": (2, 8)}, a=a, o=o, i=idx0, j=idx1)
    np.testing.assert_array_equal(got["o"], [[1, 2, -1, -2, -3, -6, -7, -8], [-9, -10, -11, -12, -13, -14, -15, -16]])
