"""The llvm backend's arg-reduction rules (TROWARG*, TCOLARG*, TPARTARG*) against the reference
backend and hand-computed cases: NaN and signed-zero order, ties, integer extremes, every
source dtype, partial and dynamic valid regions, in-place use and the fault codes."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from llvm_support import run_program

BF16 = ml_dtypes.bfloat16
NP = {"f32": np.float32, "f16": np.float16, "bf16": BF16, "i8": np.int8, "u8": np.uint8, "i16": np.int16,
      "u16": np.uint16, "i32": np.int32, "u32": np.uint32}


def _both(text: str, **args: object) -> dict[str, np.ndarray]:
    """Run on both backends; same fault code or bit-identical arrays. The llvm arrays."""
    code_r, ref = run_program(text, "reference", args)
    code_l, got = run_program(text, "llvm", args)
    assert code_r == code_l, (code_r, code_l)
    for k in ref:
        np.testing.assert_array_equal(ref[k].view(np.uint8), got[k].view(np.uint8), err_msg=k)
    return got


def _row_text(mn: str, d: str, r: int, c: int, valid: str = "") -> str:
    v = f", valid={valid}" if valid else ""
    vr = valid.split("x")[0] if valid else str(r)
    return (f"kernel @k(%v : !pto.tile<{r}x1x{d}, layout=DN, valid={vr}x1>, "
            f"%i : !pto.tile<{r}x1xi32, layout=DN, valid={vr}x1>, %s : !pto.tile<{r}x{c}x{d}{v}>) {{\n"
            f"  %v, %i = {mn.lower()} %s\n}}\n")


def _col_index(d: str) -> str:
    """The value+index column form's index dtype: 16-bit beside 2-byte sources."""
    return "u16" if np.dtype(NP[d]).itemsize == 2 else "u32"


def _col_text(mn: str, d: str, r: int, c: int) -> str:
    return (f"kernel @k(%v : !pto.tile<1x{c}x{d}>, %i : !pto.tile<1x{c}x{_col_index(d)}>, %s : !pto.tile<{r}x{c}x{d}>) {{\n"
            f"  pto.{mn.lower()} ins(%s) outs(%v, %i)\n}}\n")


def test_row_hand_case() -> None:
    x = np.array([[1, np.nan, 3, np.nan], [-0.0, 0.0, -0.0, 0.0], [2, 7, 7, 1]], np.float32)
    got = _both(_row_text("TROWARGMAX", "f32", 3, 4), v=np.zeros((3, 1), np.float32),
                i=np.zeros((3, 1), np.int32), s=x)
    np.testing.assert_array_equal(got["i"][:, 0], [1, 1, 1])
    got = _both(_row_text("TROWARGMIN", "f32", 3, 4), v=np.zeros((3, 1), np.float32),
                i=np.zeros((3, 1), np.int32), s=x)
    np.testing.assert_array_equal(got["i"][:, 0], [1, 0, 3])
    assert np.signbit(got["v"][1, 0])


def test_col_hand_case() -> None:
    x = np.array([[5, -1, 0], [5, -3, np.nan], [9, -3, 1]], np.float32)
    got = _both(_col_text("TCOLARGMIN", "f32", 3, 3), v=np.zeros((1, 3), np.float32),
                i=np.zeros((1, 3), np.uint32), s=x)
    np.testing.assert_array_equal(got["i"][0], [0, 1, 1])


@pytest.mark.parametrize("d", sorted(NP))
@pytest.mark.parametrize("mn", ["TROWARGMAX", "TROWARGMIN", "TCOLARGMAX", "TCOLARGMIN"])
def test_random_with_specials(mn: str, d: str) -> None:
    rng = np.random.default_rng(7)
    r, c = 5, 40
    if d in ("f32", "f16", "bf16"):
        x = rng.choice(np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 3.0], np.float32),
                       (r, c)).astype(NP[d])
        x[0] = np.linspace(-3, 3, c).astype(NP[d])          # a NaN-free row
    else:
        info = np.iinfo(NP[d])
        x = rng.choice(np.array([info.min, info.max, 0, 1, info.max - 1], NP[d]), (r, c))
    text = _row_text(mn, d, r, c) if mn.startswith("TROW") else _col_text(mn, d, r, c)
    shape = (r, 1) if mn.startswith("TROW") else (1, c)
    _both(text, v=np.zeros(shape, NP[d]), i=np.zeros(shape, np.int32 if mn.startswith("TROW") else NP[_col_index(d)]), s=x)


def test_partial_valid_region_and_index_only_form() -> None:
    x = np.arange(48, dtype=np.float32).reshape(6, 8)[:, ::-1].copy()   # rows decrease
    text = ("kernel @k(%i : !pto.tile<6x1xi32, layout=DN, valid=4x1>, %s : !pto.tile<6x8xf32, valid=4x5>,"
            " %t : !pto.tile<6x8xf32>) {\n  %i = trowargmin %s, %t\n}\n")
    args = {"i": np.zeros((6, 1), np.int32), "s": x, "t": np.zeros((6, 8), np.float32)}
    for backend in ("reference", "llvm"):       # rows past the valid region are unspecified
        code, got = run_program(text, backend, args)
        assert code is None
        np.testing.assert_array_equal(got["i"][:4, 0], [4, 4, 4, 4])   # the smallest of x[i, :5] is the last


def test_dynamic_valid_region_faults() -> None:
    """A dynamic source region: an empty one is RUNTIME_VALID_REGION on both backends, and a
    result that does not fill dst's valid columns too; a matching one runs."""
    text = """kernel @k(%v : index, %w : index, %u : index) {
  .tile %x valid_row = %v valid_col = %w : !pto.tile<8x16xf32, valid=?x?>
  .tile %i valid_col = %u : !pto.tile<1x16xi32, valid=1x?>
  %x = texpands 1.0 : !pto.tile<8x16xf32, valid=?x?>
  %i = tcolargmax %x
}
"""
    for v, w, u, want in ((0, 16, 16, "RUNTIME_VALID_REGION"), (8, 0, 0, "RUNTIME_VALID_REGION"),
                          (8, 16, 12, "RUNTIME_VALID_REGION"), (8, 16, 16, None)):
        for backend in ("reference", "llvm"):
            code, _ = run_program(text, backend, {"v": v, "w": w, "u": u})
            assert code == want, (backend, v, w, u, code)


def test_tpartarg_union_and_in_place() -> None:
    v0 = np.array([[1, np.nan, 0.0, 4], [5, 6, 7, 8]], np.float32)
    v1 = np.array([[1, 2, -0.0, 9], [0, 0, 0, 0]], np.float32)
    i0 = np.array([[0, 1, 2, 3], [4, 5, 6, 7]], np.int32)
    i1 = np.array([[10, 11, 12, 13], [14, 15, 16, 17]], np.int32)
    for mn, want in (("tpartargmax", [[10, 1, 2, 13]]), ("tpartargmin", [[10, 1, 12, 3]])):
        text = (f"kernel @k(%dv : !pto.tile<2x4xf32>, %a : !pto.tile<2x4xf32>, %b : !pto.tile<2x4xf32, valid=1x4>,"
                f" %di : !pto.tile<2x4xi32>, %ia : !pto.tile<2x4xi32>, %ib : !pto.tile<2x4xi32, valid=1x4>) {{\n"
                f"  %dv, %di = {mn} %a, %b, %ia, %ib\n}}\n")
        got = _both(text, dv=np.zeros((2, 4), np.float32), a=v0, b=v1, di=np.zeros((2, 4), np.int32),
                    ia=i0, ib=i1)
        np.testing.assert_array_equal(got["di"][:1], want)
        np.testing.assert_array_equal(got["di"][1], i0[1])          # only src0 is valid in row 1
        # in place: the destination pair is source 0's pair
        text = (f"kernel @k(%a : !pto.tile<2x4xf32>, %b : !pto.tile<2x4xf32, valid=1x4>,"
                f" %ia : !pto.tile<2x4xi32>, %ib : !pto.tile<2x4xi32, valid=1x4>) {{\n"
                f"  %a, %ia = {mn} %a, %b, %ia, %ib\n}}\n")
        got = _both(text, a=v0, b=v1, ia=i0, ib=i1)
        np.testing.assert_array_equal(got["ia"][:1], want)


def test_tpartarg_pair_region_fault() -> None:
    text = """kernel @k(%dv : !pto.tile<2x4xf16>, %a : !pto.tile<2x4xf16>, %b : !pto.tile<2x4xf16>,
          %di : !pto.tile<2x4xu16>, %ia : !pto.tile<2x4xu16>, %ib : !pto.tile<2x4xu16, valid=1x4>) {
  %dv, %di = tpartargmax %a, %b, %ia, %ib
}
"""
    code, _ = run_program(text, "llvm", {"dv": np.zeros((2, 4), np.float16), "a": np.zeros((2, 4), np.float16),
                                        "b": np.zeros((2, 4), np.float16), "di": np.zeros((2, 4), np.uint16),
                                        "ia": np.zeros((2, 4), np.uint16), "ib": np.zeros((2, 4), np.uint16)})
    assert code == "STRUCT_VALID_REGION"


@pytest.mark.parametrize("d", ["f16", "bf16", "i16", "u16"])
@pytest.mark.parametrize("idx", ["i16", "u16"])
def test_sixteen_bit_indices_hand_and_reference(d: str, idx: str) -> None:
    """The value+index forms with 16-bit indices (the A2/A3/A5 column form's only choice)."""
    x = np.array([[3, 1, 7], [9, 1, 7], [9, 0, 8], [2, 6, 8]]).astype(NP[d])
    col = (f"kernel @k(%v : !pto.tile<1x3x{d}>, %i : !pto.tile<1x3x{idx}>, %s : !pto.tile<4x3x{d}>) {{\n"
           f"  pto.tcolargmax ins(%s) outs(%v, %i)\n}}\n")
    got = _both(col, v=np.zeros((1, 3), NP[d]), i=np.zeros((1, 3), NP[idx]), s=x)
    np.testing.assert_array_equal(got["i"][0], [1, 3, 2])
    np.testing.assert_array_equal(got["v"][0].astype(np.float32), [9, 6, 8])
    row = (f"kernel @k(%v : !pto.tile<4x1x{d}, layout=DN>, %i : !pto.tile<4x1x{idx}, layout=DN>, "
           f"%s : !pto.tile<4x3x{d}>) {{\n  %v, %i = trowargmin %s\n}}\n")
    got = _both(row, v=np.zeros((4, 1), NP[d]), i=np.zeros((4, 1), NP[idx]), s=x)
    np.testing.assert_array_equal(got["i"][:, 0], [1, 1, 1, 0])
