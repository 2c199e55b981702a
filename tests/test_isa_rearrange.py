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
  %d = thistogram %s, %i {byte = #pto.hist_byte<BYTE_0>} : (!pto.tile<16x64xu16>, !pto.tile<32x1xu8, layout=DN>) -> !pto.tile<16x256xu32>
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
            f"  %d = thistogram %s{use} {{byte = #pto.hist_byte<BYTE_{byte}>}}\n}}\n")
    with pytest.raises(PTOError) as e:
        pto.check(pto.parse(text), profile="cpu")
    assert "STRUCT_SHAPE" in str(e.value)


def test_thistogram_byte_is_the_public_enum() -> None:
    """`byte` is spelled as the public HistByte (BYTE_0..BYTE_3); a number names a member through the
    enum spelling or a quoted value; a bare integer is refused; the printer writes the name."""
    from openpto.isa.attrs import HistByte
    head = "kernel @k(%s : !pto.tile<8x64xu32>) {\n  %d = thistogram %s {byte = "
    tail = "} : (!pto.tile<8x64xu32>) -> !pto.tile<8x256xu32>\n}\n"
    for spelled in ("#pto.hist_byte<BYTE_3>", "#pto.hist_byte<3>", '"BYTE_3"', '"3"'):
        m = pto.parse(head + spelled + tail)
        assert m.kernels[0].body[0].attrs["byte"] is HistByte.BYTE_3
        pto.check(m, profile="a5")
        assert "#pto.hist_byte<BYTE_3>" in m.to_text()
        assert pto.parse(m.to_text()) == m
    with pytest.raises(PTOError) as e:
        pto.check(pto.parse(head + "3" + tail), profile="cpu")
    assert "STRUCT_ATTR_VALUE" in str(e.value)
    u16 = ("kernel @k(%s : !pto.tile<8x64xu16>) {\n  %d = thistogram %s {byte = #pto.hist_byte<BYTE_2>} : "
           "(!pto.tile<8x64xu16>) -> !pto.tile<8x256xu32>\n}\n")
    with pytest.raises(PTOError) as e:
        pto.check(pto.parse(u16), profile="cpu")
    assert "BYTE_0..BYTE_1" in str(e.value)
    # the semantics read the member's number: BYTE_3 of 0xAB000000 is bin 0xAB
    dst = Tile.of(np.zeros((1, 256), np.uint32))
    get("THISTOGRAM").execute(dst=dst, src=Tile.of(np.array([[0xAB000000, 0xAB00FFFF, 7]], np.uint32)),
                              byte=HistByte.BYTE_3)
    assert dst.data[0, 0xAB] == 2 and dst.data[0, 0] == 1 and dst.data.sum() == 3


def _concat_idx(a: np.ndarray, b: np.ndarray, n0: list[int], n1: list[int], idx: type, width: int,
                with_dst_idx: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    r = a.shape[0]
    dst = Tile.of(np.full((r, width), 99, a.dtype))
    out = {"dstIdx": Tile.of(np.zeros((r, 1), idx))} if with_dst_idx else {}
    get("TCONCAT").execute(dst=dst, src0=Tile.of(a), src1=Tile.of(b),
                           src0Idx=Tile.of(np.array(n0, idx).reshape(r, 1)),
                           src1Idx=Tile.of(np.array(n1, idx).reshape(r, 1)), **out)
    return dst.data, (out["dstIdx"].data[:, 0] if with_dst_idx else None)


def test_tconcat_indexed_counts_in_index_element_units() -> None:
    a = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], np.float32)
    b = -a
    # i32 indices: a count of 8 is 8 / 4 = 2 columns, whatever the data dtype
    d, di = _concat_idx(a, b, [4, 8, 0], [8, 16, 12], np.int32, 8)
    np.testing.assert_array_equal(d, [[1, -1, -2, 99, 99, 99, 99, 99],
                                      [5, 6, -5, -6, -7, -8, 99, 99],
                                      [-9, -10, -11, 99, 99, 99, 99, 99]])
    np.testing.assert_array_equal(di, [12, 24, 12])          # (c0 + c1) * 4
    # u8 indices: the count is the number of columns (sizeof(u8) == 1); 7 is not rounded
    d, di = _concat_idx(a.astype(np.int16), b.astype(np.int16), [1, 4, 3], [3, 2, 0], np.uint8, 8)
    np.testing.assert_array_equal(d[0, :4], [1, -1, -2, -3])
    np.testing.assert_array_equal(d[1, :6], [5, 6, 7, 8, -5, -6])
    np.testing.assert_array_equal(d[2, :4], [9, 10, 11, 99])
    np.testing.assert_array_equal(di, [4, 6, 3])
    # i16 indices: 5 // 2 = 2 columns (the remainder is dropped)
    d, di = _concat_idx(a, b, [5, 0, 2], [3, 1, 2], np.int16, 8, with_dst_idx=False)
    np.testing.assert_array_equal(d[0, :4], [1, 2, -1, 99])
    np.testing.assert_array_equal(d[1, :1], [99])
    assert di is None


def test_tconcat_indexed_clamps_to_dst_width() -> None:
    a = np.arange(1, 9, dtype=np.int32).reshape(1, 8)
    b = -a
    # dst has 5 valid columns: src0 gives 4 of them (asked 4), src1 only 1 (asked 3); dstIdx = 5 * 4
    d, di = _concat_idx(a, b, [16], [12], np.int32, 5)
    np.testing.assert_array_equal(d, [[1, 2, 3, 4, -1]])
    np.testing.assert_array_equal(di, [20])
    # src0 asks for more than dst holds: 5 columns of src0, none of src1
    d, di = _concat_idx(a, b, [28], [8], np.int32, 5)
    np.testing.assert_array_equal(d, [[1, 2, 3, 4, 5]])
    np.testing.assert_array_equal(di, [20])


@pytest.mark.parametrize("n0, n1, code", [
    ([-4], [0], "RUNTIME_OOB"),                  # a negative count
    ([20], [0], "RUNTIME_INVALID_READ"),         # 5 columns of a 4-column src0
    ([8], [12], "RUNTIME_INVALID_READ"),         # 3 columns of a 2-column src1
])
def test_tconcat_indexed_faults(n0: list[int], n1: list[int], code: str) -> None:
    a = np.ones((1, 4), np.float32)
    with pytest.raises(PTOError) as e:
        get("TCONCAT").execute(dst=Tile.of(np.zeros((1, 8), np.float32)), src0=Tile.of(a),
                               src1=Tile.of(a, valid=(1, 2)), src0Idx=Tile.of(np.array([n0], np.int32)),
                               src1Idx=Tile.of(np.array([n1], np.int32)))
    assert e.value.code == code


@pytest.mark.parametrize("body, code", [
    # src1Idx missing: the indices come as a pair
    ("%d = tconcat %a, %b, %i : (!pto.tile<4x8xf32>, !pto.tile<4x8xf32>, !pto.tile<4x8xi32>) -> !pto.tile<4x16xf32>",
     "STRUCT_OPERAND_FORM"),
    # index tiles share one integer dtype
    ("%d = tconcat %a, %b, %i, %j : (!pto.tile<4x8xf32>, !pto.tile<4x8xf32>, !pto.tile<4x8xi32>, !pto.tile<4x16xi16>)"
     " -> !pto.tile<4x16xf32>", "LEGAL_DTYPE"),
    ("%d = tconcat %a, %b, %i, %j : (!pto.tile<4x8xf32>, !pto.tile<4x8xf32>, !pto.tile<4x8xf32>, !pto.tile<4x8xf32>)"
     " -> !pto.tile<4x16xf32>", "LEGAL_DTYPE"),
    # dstIdx is one column per dst row
    ("%d, %k = tconcat %a, %b, %i, %j : (!pto.tile<4x8xf32>, !pto.tile<4x8xf32>, !pto.tile<4x8xi32>, !pto.tile<4x8xi32>)"
     " -> (!pto.tile<4x16xf32>, !pto.tile<4x8xi32, valid=4x2>)", "STRUCT_VALID_REGION"),
    # i8 counts cannot reach 256 columns x 1
    ("%d, %k = tconcat %a, %b, %i, %j : (!pto.tile<4x128xf32>, !pto.tile<4x128xf32>, !pto.tile<4x32xi8>, "
     "!pto.tile<4x32xi8>) -> (!pto.tile<4x256xf32>, !pto.tile<4x32xi8, valid=4x1>)", "STRUCT_VALID_REGION"),
])
def test_tconcat_indexed_rejects(body: str, code: str) -> None:
    ins = body.split(" : (")[1].split(")")[0].split(", !")
    names = body.split(" = tconcat ")[1].split(" : ")[0].split(", ")
    params = ", ".join(f"{n} : {'!' if k else ''}{t}" for k, (n, t) in enumerate(zip(names, ins)))
    with pytest.raises(PTOError) as e:
        pto.check(pto.parse(f"kernel @k({params}) {{\n  {body}\n}}\n"), profile="cpu")
    assert code in str(e.value)


def test_tconcat_indexed_public_spellings() -> None:
    t, i = "!pto.tile<16x32xf32>", "!pto.tile<16x8xi32>"
    text = (f"kernel @k(%a : {t}, %b : {t}, %i : {i}, %j : {i}) {{\n"
            f"  %d = tconcat %a, %b, %i, %j : ({t}, {t}, {i}, {i}) -> !pto.tile<16x64xf32>\n"
            f"  %e, %k = tconcat %a, %b, %i, %j : ({t}, {t}, {i}, {i}) -> (!pto.tile<16x64xf32>, "
            f"!pto.tile<16x8xi32, valid=16x1>)\n"
            f"  pto.tconcat ins(%a, %b, %i, %j) outs(%e, %k)\n}}\n")
    m = pto.parse(text)
    ops = m.kernels[0].body
    assert set(ops[0].args) == {"dst", "src0", "src1", "src0Idx", "src1Idx"}
    assert set(ops[1].args) == set(ops[2].args) == {"dst", "dstIdx", "src0", "src1", "src0Idx", "src1Idx"}
    assert pto.parse(m.to_text()) == m
    for p in ("cpu", "a2", "a3", "a5"):
        pto.check(m, profile=p)
