"""TCONCAT, TINTERLEAVE, TDEINTERLEAVE and THISTOGRAM semantics against hand-computed cases
from the public pages' formulas (literal arrays and straightforward numpy written here), the
public spellings, and the verifier's rules."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError
from openpto.isa.registry import get
from openpto.isa.types import Layout
from openpto.isa.values import Tile


def test_tconcat_rows_side_by_side() -> None:
    a = np.array([[1, 2, 0], [3, 4, 0]], np.int16)
    b = np.array([[5, 6, 7], [8, 9, 10]], np.int16)
    dst = Tile.of(np.zeros((2, 6), np.int16), valid=(2, 5))
    get("TCONCAT").execute(dst=dst, src0=Tile.of(a, valid=(2, 2)), src1=Tile.of(b))
    np.testing.assert_array_equal(dst.data[:, :5], [[1, 2, 5, 6, 7], [3, 4, 8, 9, 10]])


def test_tconcat_public_example_shape() -> None:
    # the page's example: two 16x16 f32 tiles into a 16x32 one
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    b = -a
    dst = Tile.of(np.zeros((16, 32), np.float32))
    get("TCONCAT").execute(dst=dst, src0=Tile.of(a), src1=Tile.of(b))
    np.testing.assert_array_equal(dst.data, np.hstack([a, b]))


def test_tconcat_dynamic_width_mismatch() -> None:
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(PTOError) as e:
        get("TCONCAT").execute(dst=Tile.of(np.zeros((2, 8), np.float32), valid=(2, 7)),
                               src0=Tile.of(x), src1=Tile.of(x))
    assert e.value.code == "RUNTIME_VALID_REGION"


def _interleave(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    d0, d1 = Tile.of(np.zeros_like(a)), Tile.of(np.zeros_like(a))
    get("TINTERLEAVE").execute(dst0=d0, dst1=d1, src0=Tile.of(a), src1=Tile.of(b))
    return d0.data, d1.data


def test_tinterleave_halves_of_the_stream() -> None:
    a = np.array([[1, 2, 3, 4]], np.float32)
    b = np.array([[10, 20, 30, 40]], np.float32)
    d0, d1 = _interleave(a, b)
    np.testing.assert_array_equal(d0, [[1, 10, 2, 20]])
    np.testing.assert_array_equal(d1, [[3, 30, 4, 40]])


def test_tinterleave_odd_width() -> None:
    a = np.array([[1, 2, 3]], np.int32)
    b = np.array([[7, 8, 9]], np.int32)
    d0, d1 = _interleave(a, b)
    np.testing.assert_array_equal(d0, [[1, 7, 2]])
    np.testing.assert_array_equal(d1, [[8, 3, 9]])


def test_tdeinterleave_two_sources_inverts_tinterleave() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(-100, 100, (4, 6)).astype(np.int16)
    b = rng.integers(-100, 100, (4, 6)).astype(np.int16)
    h0, h1 = _interleave(a, b)
    d0, d1 = Tile.of(np.zeros_like(a)), Tile.of(np.zeros_like(a))
    get("TDEINTERLEAVE").execute(dst0=d0, dst1=d1, src0=Tile.of(h0), src1=Tile.of(h1))
    np.testing.assert_array_equal(d0.data, a)
    np.testing.assert_array_equal(d1.data, b)


def test_tdeinterleave_single_source() -> None:
    src = np.array([[0, 1, 2, 3, 4, 5, 6, 7], [10, 11, 12, 13, 14, 15, 16, 17]], np.uint8)
    d0, d1 = Tile.of(np.zeros((2, 4), np.uint8)), Tile.of(np.zeros((2, 4), np.uint8))
    get("TDEINTERLEAVE").execute(dst0=d0, dst1=d1, src0=Tile.of(src))
    np.testing.assert_array_equal(d0.data, [[0, 2, 4, 6], [10, 12, 14, 16]])
    np.testing.assert_array_equal(d1.data, [[1, 3, 5, 7], [11, 13, 15, 17]])


def test_copies_keep_nan_payloads() -> None:
    bits = np.array([[0x7FC00001, 0xFFC00002]], np.uint32).view(np.float32)
    d0, d1 = _interleave(bits, bits)
    np.testing.assert_array_equal(d0.view(np.uint32), [[0x7FC00001, 0x7FC00001]])
    np.testing.assert_array_equal(d1.view(np.uint32), [[0xFFC00002, 0xFFC00002]])


def _hist(src: np.ndarray, byte: int, idx: Tile | None = None) -> np.ndarray:
    dst = Tile.of(np.full((src.shape[0], 256), 99, np.uint32))     # overwritten, not accumulated
    args = {"idx": idx} if idx is not None else {}
    get("THISTOGRAM").execute(dst=dst, src=Tile.of(src), byte=byte, **args)
    return dst.data


def test_thistogram_u16_msb_pass() -> None:
    src = np.array([[0x0100, 0x01FF, 0x0200, 0xFF00]], np.uint16)
    got = _hist(src, 1)
    want = np.zeros((1, 256), np.uint32)
    want[0, 0x01], want[0, 0x02], want[0, 0xFF] = 2, 1, 1
    np.testing.assert_array_equal(got, want)


def test_thistogram_u16_lsb_with_row_filter() -> None:
    src = np.array([[0x0105, 0x0105, 0x0205, 0x0107], [0x0301, 0x0302, 0x0303, 0x0101]], np.uint16)
    idx = Tile.of(np.array([[1], [3]] + [[0]] * 30, np.uint8), layout=Layout.DN)
    got = _hist(src, 0, idx)
    want = np.zeros((2, 256), np.uint32)
    want[0, 5], want[0, 7] = 2, 1              # row 0 keeps high byte 1
    want[1, 1], want[1, 2], want[1, 3] = 1, 1, 1   # row 1 keeps high byte 3
    np.testing.assert_array_equal(got, want)


def test_thistogram_u32_cascaded_filter() -> None:
    src = np.array([[0xAABB0102, 0xAABB0203, 0xAACC0102, 0x11BB0102, 0xAABB01FF]], np.uint32)
    idx = np.zeros((3, 32), np.uint8)
    idx[0], idx[1], idx[2] = 0xAA, 0xBB, 0x01
    got = _hist(src, 1, Tile.of(idx))          # keep byte3 == AA and byte2 == BB, count byte 1
    want = np.zeros((1, 256), np.uint32)
    want[0, 0x01], want[0, 0x02] = 2, 1
    np.testing.assert_array_equal(got, want)
    got = _hist(src, 0, Tile.of(idx))          # also byte1 == 01, count byte 0
    want = np.zeros((1, 256), np.uint32)
    want[0, 0x02], want[0, 0xFF] = 1, 1
    np.testing.assert_array_equal(got, want)
    got = _hist(src, 3)                        # the MSB pass filters nothing
    assert got[0, 0xAA] == 4 and got[0, 0x11] == 1 and got.sum() == 5


def test_public_spellings() -> None:
    text = """kernel @k(%a : !pto.tile<16x16xf32>, %b : !pto.tile<16x16xf32>, %s : !pto.tile<16x32xf32>) {
  %c = pto.tconcat %a, %b : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) -> !pto.tile<16x32xf32>
  pto.tinterleave ins(%a, %b : !pto.tile<16x16xf32>, !pto.tile<16x16xf32>) outs(%x, %y : !pto.tile<16x16xf32>, !pto.tile<16x16xf32>)
  %p, %q = tdeinterleave %x, %y : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) -> (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>)
  pto.tdeinterleave ins(%s) outs(%p, %q)
}
"""
    m = pto.parse(text)
    assert pto.parse(m.to_text()) == m
    pto.check(m, profile="a5")
    with pytest.raises(PTOError) as e:
        pto.check(m, profile="a3")               # interleaving exists on A5 and the CPU only
    assert "LEGAL_UNSUPPORTED_INSTRUCTION" in str(e.value)
    h = """kernel @h(%s : !pto.tile<16x64xu16>, %i : !pto.tile<32x1xu8, layout=DN>) {
  %d = thistogram %s, %i {byte = 0} : (!pto.tile<16x64xu16>, !pto.tile<32x1xu8, layout=DN>) -> !pto.tile<16x256xu32>
}
"""
    hm = pto.parse(h)
    assert pto.parse(hm.to_text()) == hm
    pto.check(hm, profile="a5")


@pytest.mark.parametrize("body, code", [
    ("%d = tconcat %a, %a : (!pto.tile<8x16xf32>, !pto.tile<8x16xf32>) -> !pto.tile<8x32xf32, valid=8x30>",
     "STRUCT_VALID_REGION"),
    ("%d = tconcat %a, %a : (!pto.tile<8x16xf32>, !pto.tile<8x16xf32>) -> !pto.tile<8x32xf16>", "LEGAL_DTYPE"),
    ("%p, %q = tdeinterleave %a : (!pto.tile<8x16xf32>) -> (!pto.tile<8x16xf32>, !pto.tile<8x16xf32>)",
     "STRUCT_VALID_REGION"),      # one source must hold 2 * 16 columns
    ("%p, %q = tinterleave %a, %a : (!pto.tile<8x16xf32>, !pto.tile<8x16xf32>) -> "
     "(!pto.tile<8x16xf32>, !pto.tile<8x16xf32, valid=8x8>)", "STRUCT_VALID_REGION"),
])
def test_verifier_rejects(body: str, code: str) -> None:
    text = f"kernel @k(%a : !pto.tile<8x16xf32>) {{\n  {body}\n}}\n"
    with pytest.raises(PTOError) as e:
        pto.check(pto.parse(text), profile="cpu")
    assert code in str(e.value) or e.value.code == code


@pytest.mark.parametrize("src, byte, idx", [
    ("!pto.tile<8x64xu16>", 2, ""),                            # a u16 has bytes 0 and 1
    ("!pto.tile<8x64xu16>", 0, ""),                            # byte 0 filters: idx is required
    ("!pto.tile<8x64xu32>", 0, ", %i : !pto.tile<2x32xu8>"),   # byte 0 of u32 needs 3 filter rows
])
def test_thistogram_rejects(src: str, byte: int, idx: str) -> None:
    use = ", %i" if idx else ""
    text = (f"kernel @k(%s : {src}{idx}, %d : !pto.tile<8x256xu32>) {{\n"
            f"  %d = thistogram %s{use} {{byte = {byte}}}\n}}\n")
    with pytest.raises(PTOError) as e:
        pto.check(pto.parse(text), profile="cpu")
    assert "STRUCT_SHAPE" in str(e.value)
