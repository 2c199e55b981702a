"""Arg-reduction semantics (TROWARGMAX/MIN, TCOLARGMAX/MIN, TPARTARGMAX/MIN) against
hand-computed cases from the public pages' formulas and openpto's decided order (first NaN
wins, -0 < +0, ties keep the smallest index; TPART ties pick src1), plus the public
spellings and the verifier's rules."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError
from openpto.isa.registry import get
from openpto.isa.types import Layout
from openpto.isa.values import Tile

NAN = np.nan


def _empty(shape: tuple[int, int], dtype: type, layout: Layout = Layout.ND) -> Tile:
    return Tile.of(np.zeros(shape, dtype), layout=layout)


def _row(mn: str, x: np.ndarray, with_value: bool = True, idx: type = np.int32) -> tuple[np.ndarray, np.ndarray]:
    r = x.shape[0]
    out = {"dst": _empty((r, 1), idx, Layout.DN)}
    if with_value:
        out["dstVal"] = _empty((r, 1), x.dtype, Layout.DN)
    get(mn).execute(src=Tile.of(x), **out)
    return out["dst"].data[:, 0], (out["dstVal"].data[:, 0] if with_value else None)


def _col(mn: str, x: np.ndarray, with_value: bool = True) -> tuple[np.ndarray, np.ndarray]:
    c = x.shape[1]
    out = {"dstIdx": _empty((1, c), np.int32)}
    if with_value:
        out["dstVal"] = _empty((1, c), x.dtype)
    get(mn).execute(src=Tile.of(x), **out)
    return out["dstIdx"].data[0], (out["dstVal"].data[0] if with_value else None)


def test_row_argmax_plain_and_ties() -> None:
    x = np.array([[1, 5, 2, 5], [7, 0, 0, 7], [-3, -1, -2, -9]], np.float32)
    idx, val = _row("TROWARGMAX", x)
    np.testing.assert_array_equal(idx, [1, 0, 1])          # ties: the smallest column
    np.testing.assert_array_equal(val, [5, 7, -1])
    idx, val = _row("TROWARGMIN", x)
    np.testing.assert_array_equal(idx, [0, 1, 3])
    np.testing.assert_array_equal(val, [1, 0, -9])


def test_row_arg_nan_and_signed_zero() -> None:
    x = np.array([[1, NAN, 9, NAN], [-0.0, 0.0, -0.0, -1], [0.0, -0.0, 3, 1]], np.float32)
    idx, val = _row("TROWARGMAX", x)
    np.testing.assert_array_equal(idx, [1, 1, 2])           # first NaN; +0 beats -0
    assert np.isnan(val[0]) and val[1] == 0 and not np.signbit(val[1]) and val[2] == 3
    idx, val = _row("TROWARGMIN", x)
    np.testing.assert_array_equal(idx, [1, 3, 1])           # first NaN wins for min too; -0 < +0
    assert np.isnan(val[0]) and val[1] == -1 and val[2] == 0 and np.signbit(val[2])


def test_row_arg_integers_and_index_dtype() -> None:
    x = np.array([[-128, 127, 127, 0], [5, 5, 5, 5]], np.int8)
    idx, _ = _row("TROWARGMAX", x, with_value=False, idx=np.uint32)
    np.testing.assert_array_equal(idx, np.array([1, 0], np.uint32))
    x = np.array([[0, 65535, 1, 65535]], np.uint16)
    idx, val = _row("TROWARGMAX", x)
    assert idx[0] == 1 and val[0] == 65535                  # unsigned order, not signed
    idx, val = _row("TROWARGMIN", x)
    assert idx[0] == 0 and val[0] == 0


def test_col_arg_public_shape_and_order() -> None:
    # 3 x 4 source: per column, the row of the max / min
    x = np.array([[1, 8, -1, 2], [4, 8, NAN, -0.0], [4, 2, 3, 0.0]], np.float32)
    idx, val = _col("TCOLARGMAX", x)
    np.testing.assert_array_equal(idx, [1, 0, 1, 0])        # ties: the smallest row
    np.testing.assert_array_equal(val[[0, 1, 3]], [4, 8, 2])
    assert np.isnan(val[2])
    idx, val = _col("TCOLARGMIN", x, with_value=True)
    np.testing.assert_array_equal(idx, [0, 2, 1, 1])
    assert np.signbit(val[3]) and val[3] == 0


def test_bf16_and_f16_values_are_copied_bit_for_bit() -> None:
    x = np.array([[1.5, -2.25, 3.0, 3.0]], np.float16)
    idx, val = _row("TROWARGMAX", x)
    assert idx[0] == 2 and val.dtype == np.float16 and val[0] == np.float16(3.0)


def test_valid_region_only() -> None:
    x = np.array([[1, 2, 99], [3, 1, 99], [99, 99, 99]], np.float32)
    dst = Tile.of(np.zeros((3, 1), np.int32), valid=(2, 1), layout=Layout.DN)
    get("TROWARGMAX").execute(dst=dst, src=Tile.of(x, valid=(2, 2)))
    np.testing.assert_array_equal(dst.data[:2, 0], [1, 0])


def test_runtime_faults() -> None:
    x = np.ones((2, 2), np.float32)
    with pytest.raises(PTOError) as e:           # the result must fill dst's valid region exactly
        get("TROWARGMAX").execute(dst=Tile.of(np.zeros((2, 1), np.int32), valid=(1, 1)), src=Tile.of(x))
    assert e.value.code == "RUNTIME_VALID_REGION"
    with pytest.raises(PTOError) as e:           # an empty line has no position
        get("TCOLARGMIN").execute(dstIdx=Tile.of(np.zeros((1, 2), np.int32), valid=(1, 2)),
                                  src=Tile.of(x, valid=(0, 2)))
    assert e.value.code == "RUNTIME_VALID_REGION"


def _part(mn: str, v0: np.ndarray, v1: np.ndarray, i0: np.ndarray, i1: np.ndarray,
          valid1: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    dv, di = Tile.of(np.zeros_like(v0)), Tile.of(np.zeros_like(i0))
    get(mn).execute(dstVal=dv, src0Val=Tile.of(v0), src1Val=Tile.of(v1, valid=valid1),
                    dstIdx=di, src0Idx=Tile.of(i0), src1Idx=Tile.of(i1, valid=valid1))
    return dv.data, di.data


def test_tpartargmax_public_formula() -> None:
    v0 = np.array([[5, 1], [2, 2]], np.float32)
    v1 = np.array([[3, 4], [2, 7]], np.float32)
    i0 = np.array([[10, 11], [12, 13]], np.int32)
    i1 = np.array([[20, 21], [22, 23]], np.int32)
    val, idx = _part("TPARTARGMAX", v0, v1, i0, i1)
    np.testing.assert_array_equal(val, [[5, 4], [2, 7]])
    np.testing.assert_array_equal(idx, [[10, 21], [22, 23]])     # equal values: src1's index
    val, idx = _part("TPARTARGMIN", v0, v1, i0, i1)
    np.testing.assert_array_equal(val, [[3, 1], [2, 2]])
    np.testing.assert_array_equal(idx, [[20, 11], [22, 13]])


def test_tpartarg_union_nan_and_zero() -> None:
    v0 = np.array([[NAN, 1, -0.0], [4, 5, 6]], np.float32)
    v1 = np.array([[2, NAN, 0.0], [0, 0, 0]], np.float32)
    i0 = np.array([[0, 1, 2], [3, 4, 5]], np.uint16)
    i1 = np.array([[6, 7, 8], [9, 9, 9]], np.uint16)
    val, idx = _part("TPARTARGMAX", v0, v1, i0, i1, valid1=(1, 3))   # row 1: only src0 is valid
    np.testing.assert_array_equal(idx, [[0, 7, 8], [3, 4, 5]])
    assert np.isnan(val[0, 0]) and np.isnan(val[0, 1]) and not np.signbit(val[0, 2])
    val, idx = _part("TPARTARGMIN", v0, v1, i0, i1, valid1=(1, 3))
    np.testing.assert_array_equal(idx, [[0, 7, 2], [3, 4, 5]])         # -0 < +0
    assert np.signbit(val[0, 2])


def test_public_spellings_parse_and_print() -> None:
    text = """kernel @k(%s : !pto.tile<8x16xf32>, %t : !pto.tile<8x16xf32>) {
  %i = trowargmax %s, %t : (!pto.tile<8x16xf32>, !pto.tile<8x16xf32>) -> !pto.tile<8x1xi32, layout=DN>
  %v, %j = trowargmin %s : (!pto.tile<8x16xf32>) -> (!pto.tile<8x1xf32, layout=DN>, !pto.tile<8x1xu32, layout=DN>)
  pto.tcolargmax ins(%s, %t : !pto.tile<8x16xf32>, !pto.tile<8x16xf32>) outs(%ci : !pto.tile<1x16xi32>)
  pto.tcolargmin ins(%s) outs(%cv, %cj : !pto.tile<1x16xf32>, !pto.tile<1x16xi32>)
}
"""
    m = pto.parse(text)
    ops = m.kernels[0].body
    assert set(ops[0].args) == {"dst", "src", "tmp"}
    assert set(ops[1].args) == {"dstVal", "dst", "src"}
    assert set(ops[2].args) == {"dstIdx", "src", "tmp"}
    assert set(ops[3].args) == {"dstVal", "dstIdx", "src"}
    assert pto.parse(m.to_text()) == m
    pto.check(m, profile="a3")
    part = """kernel @p(%a : !pto.tile<8x16xf16>, %b : !pto.tile<8x16xf16>, %ia : !pto.tile<8x16xi16>, %ib : !pto.tile<8x16xi16>) {
  pto.tpartargmax ins(%a, %b, %ia, %ib) outs(%v, %i : !pto.tile<8x16xf16>, !pto.tile<8x16xi16>)
  %v2, %i2 = tpartargmin %a, %b, %ia, %ib : (!pto.tile<8x16xf16>, !pto.tile<8x16xf16>, !pto.tile<8x16xi16>, !pto.tile<8x16xi16>) -> (!pto.tile<8x16xf16>, !pto.tile<8x16xi16>)
}
"""
    p = pto.parse(part)
    assert pto.parse(p.to_text()) == p
    pto.check(p, profile="a3")


@pytest.mark.parametrize("body, code", [
    # the value output has src's dtype
    ("%v, %i = trowargmax %s : (!pto.tile<8x16xf32>) -> (!pto.tile<8x1xf16, layout=DN>, !pto.tile<8x1xi32, layout=DN>)",
     "LEGAL_DTYPE"),
    # indices are i32 or u32
    ("%i = trowargmax %s : (!pto.tile<8x16xf32>) -> !pto.tile<8x1xi16, layout=DN>", "LEGAL_DTYPE"),
    # the row result covers exactly src's valid rows
    ("%i = trowargmax %s : (!pto.tile<8x16xf32>) -> !pto.tile<8x1xi32, layout=DN, valid=4x1>",
     "STRUCT_VALID_REGION"),
    # a per-column result is one row, row-major
    ("%i = tcolargmax %s : (!pto.tile<8x16xf32>) -> !pto.tile<2x16xi32>", "STRUCT_SHAPE"),
])
def test_verifier_rejects(body: str, code: str) -> None:
    text = f"kernel @k(%s : !pto.tile<8x16xf32>) {{\n  {body}\n}}\n"
    with pytest.raises(PTOError) as e:
        pto.check(pto.parse(text), profile="cpu")
    assert code in {d.code for d in getattr(e.value, "errors", [e.value])} or e.value.code == code


def test_profiles_narrow_sources() -> None:
    text = """kernel @k(%s : !pto.tile<8x32xu8>) {
  %i = tcolargmax %s : (!pto.tile<8x32xu8>) -> !pto.tile<1x32xi32>
}
"""
    pto.check(pto.parse(text), profile="cpu")
    with pytest.raises(PTOError) as e:
        pto.check(pto.parse(text), profile="a3")
    assert "LEGAL_DTYPE" in str(e.value)


def _kernel(src: str, body: str) -> str:
    return f"kernel @k(%s : !pto.tile<{src}>) {{\n  {body}\n}}\n"


_F16 = "8x16xf16"


@pytest.mark.parametrize("profile", ["cpu", "a2", "a3", "a5"])
@pytest.mark.parametrize("body, src, ok", [
    # the column value+index form wants 16-bit indices beside a 2-byte source (A2/A3/A5 headers)
    ("pto.tcolargmax ins(%s) outs(%v, %i : !pto.tile<1x16xf16>, !pto.tile<1x16xi16>)", _F16, True),
    ("pto.tcolargmin ins(%s) outs(%v, %i : !pto.tile<1x16xf16>, !pto.tile<1x16xu16>)", _F16, True),
    ("pto.tcolargmax ins(%s) outs(%v, %i : !pto.tile<1x16xf16>, !pto.tile<1x16xi32>)", _F16, False),
    # ... and 32-bit ones beside a 4-byte source
    ("pto.tcolargmax ins(%s) outs(%v, %i : !pto.tile<1x16xf32>, !pto.tile<1x16xi16>)", "8x16xf32", False),
    ("pto.tcolargmax ins(%s) outs(%v, %i : !pto.tile<1x16xf32>, !pto.tile<1x16xu32>)", "8x16xf32", True),
    # the index-only forms write 32-bit indices only
    ("pto.tcolargmax ins(%s) outs(%i : !pto.tile<1x16xi16>)", _F16, False),
    ("pto.tcolargmax ins(%s) outs(%i : !pto.tile<1x16xi32>)", _F16, True),
    ("%i = trowargmin %s : (!pto.tile<16x16xf16>) -> !pto.tile<16x1xu16, layout=DN>", "16x16xf16", False),
    # the row value+index form takes 16- or 32-bit indices beside a 2-byte source, 32-bit beside a 4-byte one
    ("%v, %i = trowargmax %s : (!pto.tile<16x16xf16>) -> (!pto.tile<16x1xf16, layout=DN>, !pto.tile<16x1xi16, layout=DN>)",
     "16x16xf16", True),
    ("%v, %i = trowargmax %s : (!pto.tile<16x16xf16>) -> (!pto.tile<16x1xf16, layout=DN>, !pto.tile<16x1xu32, layout=DN>)",
     "16x16xf16", True),
    ("%v, %i = trowargmax %s : (!pto.tile<16x16xf32>) -> (!pto.tile<16x1xf32, layout=DN>, !pto.tile<16x1xu16, layout=DN>)",
     "16x16xf32", False),
])
def test_index_dtype_by_form(profile: str, body: str, src: str, ok: bool) -> None:
    m = pto.parse(_kernel(src, body))
    if ok:
        pto.check(m, profile=profile)
        return
    with pytest.raises(PTOError) as e:
        pto.check(m, profile=profile)
    assert "LEGAL_DTYPE" in str(e.value)


def test_sixteen_bit_indices_hand_case() -> None:
    x = np.array([[3, -1, 7], [9, -1, 7], [9, -5, 8]], np.float16)
    idx, val = Tile.of(np.zeros((1, 3), np.int16)), Tile.of(np.zeros((1, 3), np.float16))
    get("TCOLARGMAX").execute(src=Tile.of(x), dstVal=val, dstIdx=idx)
    assert idx.data.dtype == np.int16
    np.testing.assert_array_equal(idx.data[0], [1, 0, 2])
    np.testing.assert_array_equal(val.data[0], np.array([9, -1, 8], np.float16))
    idx = Tile.of(np.zeros((3, 1), np.uint16), layout=Layout.DN)
    get("TROWARGMIN").execute(src=Tile.of(x), dstVal=Tile.of(np.zeros((3, 1), np.float16), layout=Layout.DN),
                              dst=idx)
    np.testing.assert_array_equal(idx.data[:, 0], [1, 1, 1])


def test_sixteen_bit_index_range() -> None:
    # i16 reaches 32767: a 32769-row u16 source has a row no i16 index can name; u16 reaches it
    body = "pto.tcolargmax ins(%s) outs(%v, %i : !pto.tile<1x16xu16>, !pto.tile<1x16x{i}>)"
    with pytest.raises(PTOError) as e:
        pto.check(pto.parse(_kernel("32769x16xu16", body.format(i="i16"))), profile="cpu")
    assert "STRUCT_SHAPE" in str(e.value)
    pto.check(pto.parse(_kernel("32769x16xu16", body.format(i="u16"))), profile="cpu")


@pytest.mark.parametrize("profile, ok", [("cpu", True), ("a2", False), ("a3", False), ("a5", False)])
def test_tpartarg_sixteen_bit_indices_only_beside_f16_on_npu(profile: str, ok: bool) -> None:
    t = "!pto.tile<8x16xf32>"
    i = "!pto.tile<8x16xi16>"
    text = (f"kernel @p(%a : {t}, %b : {t}, %ia : {i}, %ib : {i}) {{\n"
            f"  pto.tpartargmax ins(%a, %b, %ia, %ib) outs(%v, %j : {t}, {i})\n}}\n")
    if ok:
        pto.check(pto.parse(text), profile=profile)
        return
    with pytest.raises(PTOError) as e:
        pto.check(pto.parse(text), profile=profile)
    assert "LEGAL_DTYPE" in str(e.value)
