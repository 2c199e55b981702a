"""Complex family: every instruction against expectations computed here (literals, plain numpy
and Python), special values, partial valid regions, untouched elements and run-time faults."""
from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, strategies as st

import openpto.isa as isa
from openpto.isa.attrs import CmpMode, GatherAxis, MaskPattern, QuantType, ScatterAxis
from openpto.isa.types import Layout, parse_type

from decl_support import decl_codes as codes

MINE = ["TSORT32", "TMRGSORT", "TGATHER", "TGATHERB", "TSCATTER", "TCI", "TTRI", "TPARTADD", "TPARTMUL",
        "TPARTMAX", "TPARTMIN", "TQUANT", "TPRINT"]
NAN_BITS = 0x7FC01234   # a quiet NaN with a payload, to check bit-exact copies


def tile(values: Any, dtype: Any, valid: tuple[int, int] | None = None, **kw: Any) -> isa.Tile:
    return isa.Tile.of(np.asarray(values).astype(dtype), valid, **kw)


def filled(shape: tuple[int, int], dtype: Any, value: Any, valid: tuple[int, int] | None = None) -> isa.Tile:
    return tile(np.full(shape, value), dtype, valid)


def run(name: str, **kw: Any) -> None:
    isa.get(name).execute(**kw)


def fault(code: str, name: str, **kw: Any) -> None:
    with pytest.raises(isa.RuntimeFault) as e:
        run(name, **kw)
    assert e.value.code == code


def f32_from_bits(bits: list[int]) -> np.ndarray:
    return np.array(bits, dtype=np.uint32).view(np.float32)


# ----------------------------------------------------------------------------- declarations

@pytest.mark.parametrize("name", MINE)
@pytest.mark.parametrize("profile", ["cpu", "a2", "a3", "a5"])
def test_examples_are_legal_on_every_profile(name: str, profile: str) -> None:
    ex = isa.get(name).example
    assert codes(name, dict(ex.types), dict(ex.attrs), profile) == []
    assert isa.get(name).family is isa.Family.COMPLEX


# ----------------------------------------------------------------------------- TSORT32

def test_tsort32_f32_order_specials_and_record_bits() -> None:
    values = np.array([1, 0, -np.inf, 3, 3, -0.0, 0.0, np.inf], np.float32)
    values[1] = f32_from_bits([NAN_BITS])[0]
    src = tile([values], np.float32)
    idx = tile([list(range(10, 18))], np.uint32)
    dst = filled((2, 20), np.float32, 7.0, valid=(1, 16))
    run("TSORT32", dst=dst, src=src, idx=idx)
    rec = dst.data[0, :16].view(np.uint32).reshape(8, 2)
    assert rec[:, 1].tolist() == [11, 17, 13, 14, 10, 15, 16, 12]   # NaN, inf, 3, 3 (stable), 1, -0, +0, -inf
    want = [NAN_BITS, 0x7F800000, 0x40400000, 0x40400000, 0x3F800000, 0x80000000, 0, 0xFF800000]
    assert rec[:, 0].tolist() == want
    assert (dst.data[0, 16:] == 7).all() and (dst.data[1] == 7).all()


def test_tsort32_f16_records_split_the_index() -> None:
    src = tile([[2, -1, 2, np.nan]], np.float16)
    idx = tile([[0x12345678, 1, 0xABCD0002, 3]], np.uint32)
    dst = filled((1, 16), np.float16, 0)
    run("TSORT32", dst=dst, src=src, idx=idx)
    rec = dst.data.view(np.uint16).reshape(4, 4)
    nan_bits = int(np.array(np.nan, np.float16).view(np.uint16))
    assert rec.tolist() == [[nan_bits, 0, 3, 0], [0x4000, 0, 0x5678, 0x1234],
                            [0x4000, 0, 0x0002, 0xABCD], [0xBC00, 0, 1, 0]]


def _expected_sort(values: np.ndarray, ids: np.ndarray) -> tuple[list, list]:
    """Plain Python: blocks of 32, descending, NaN first, stable."""
    out_v, out_i = [], []
    for start in range(0, len(values), 32):
        blk = list(range(start, min(start + 32, len(values))))
        key = lambda p: (0, 0.0, p) if math.isnan(values[p]) else (1, -float(values[p]), p)  # noqa: E731
        order = sorted(blk, key=key)
        out_v += [values[p] for p in order]
        out_i += [int(ids[p]) for p in order]
    return out_v, out_i


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_tsort32_blocks_partial_block_and_untouched(dtype: Any) -> None:
    rng = np.random.default_rng(1)
    raw = rng.integers(-3, 4, (3, 48)).astype(dtype)
    if dtype == np.int32:
        raw[0, :3] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max, -1]
    src = tile(raw, dtype, valid=(2, 45))
    ids = (np.arange(48)[None, :] + 1000 * np.arange(3)[:, None]).astype(np.uint32)
    dst = filled((3, 100), dtype, 9, valid=(2, 90))
    run("TSORT32", dst=dst, src=src, idx=tile(ids, np.uint32))
    for r in range(2):
        vals, order_ids = _expected_sort(raw[r, :45], ids[r, :45])
        rec = dst.data[r, :90].view(np.uint32).reshape(45, 2)
        assert rec[:, 1].tolist() == order_ids
        assert rec[:, 0].view(dtype).tolist() == vals
    assert (dst.data[2] == 9).all() and (dst.data[:, 90:] == 9).all()


FLOATS = st.one_of(st.floats(width=32, allow_nan=True), st.sampled_from([0.0, -0.0, 1.0, -1.0]))


@given(st.lists(FLOATS, min_size=1, max_size=70))
def test_tsort32_matches_python_sort(values: list[float]) -> None:
    v = np.array(values, np.float32)
    n = len(values)
    dst = isa.Tile.empty(parse_type(f"!pto.tile<1x{2 * n}xf32>"))
    run("TSORT32", dst=dst, src=tile([v], np.float32), idx=tile([np.arange(n)], np.uint32))
    rec = dst.data[0].view(np.uint32).reshape(n, 2)
    _, want = _expected_sort(v, np.arange(n))
    assert rec[:, 1].tolist() == want
    assert rec[:, 0].tolist() == v.view(np.uint32)[want].tolist()


def test_tsort32_faults_and_constraints() -> None:
    src, idx = tile(np.ones((2, 8)), np.float32), tile(np.zeros((2, 8)), np.uint32)
    fault("RUNTIME_INVALID_WRITE", "TSORT32", dst=filled((2, 16), np.float32, 0, valid=(2, 15)), src=src, idx=idx)
    fault("RUNTIME_INVALID_READ", "TSORT32", dst=filled((2, 16), np.float32, 0), src=src,
          idx=tile(np.zeros((2, 8)), np.uint32, valid=(1, 8)))
    ok = {"dst": "!pto.tile<2x64xf32>", "src": "!pto.tile<2x32xf32>", "idx": "!pto.tile<2x32xu32>"}
    assert codes("TSORT32", {**ok, "dst": "!pto.tile<2x32xf32>"}) == ["STRUCT_SHAPE", "STRUCT_VALID_REGION"]
    assert codes("TSORT32", {**ok, "dst": "!pto.tile<1x64xf32, valid=1x64>"})[0] == "STRUCT_SHAPE"
    assert codes("TSORT32", {**ok, "dst": "!pto.tile<2x64xf32, valid=2x60>"}) == ["STRUCT_VALID_REGION"]
    assert codes("TSORT32", {**ok, "src": "!pto.tile<2x32xf32, layout=DN>"}) == ["LEGAL_LAYOUT"]
    i32 = {"dst": "!pto.tile<2x64xi32>", "src": "!pto.tile<2x32xi32>", "idx": "!pto.tile<2x32xu32>"}
    assert codes("TSORT32", i32) == [] and codes("TSORT32", i32, profile="a3") == ["LEGAL_DTYPE"]


# ----------------------------------------------------------------------------- TMRGSORT

def records(pairs: list[tuple[float, int]], dtype: Any) -> np.ndarray:
    """1-row tile data of (value, u32 index) records packed with struct (hardware layout)."""
    fmt = "<fI" if dtype == np.float32 else "<eHI"
    parts = [struct.pack(fmt, v, i) if dtype == np.float32 else struct.pack(fmt, v, 0, i) for v, i in pairs]
    return np.frombuffer(b"".join(parts), dtype=dtype).reshape(1, -1)


def merge(srcs: list[list[tuple[float, int]]], dst_records: int, dtype: Any = np.float32,
          exhausted: bool = False, dst_extra: int = 0) -> tuple[isa.Tile, isa.Tile]:
    per = 8 // np.dtype(dtype).itemsize
    tiles = {f"src{m}": isa.Tile.of(records(s, dtype), valid=(1, len(s) * per)) if s else
             filled((1, per), dtype, 0, valid=(1, 0)) for m, s in enumerate(srcs)}
    dst = filled((1, (dst_records + dst_extra) * per), dtype, 0, valid=(1, dst_records * per))
    dst.data.view(np.uint8)[...] = 0xEE
    executed = filled((1, 4), np.uint16, 999)
    run("TMRGSORT", dst=dst, executed=executed, exhausted=exhausted, **tiles)
    return dst, executed


def test_tmrgsort_two_lists_nan_first_and_ties_to_earlier_list() -> None:
    nan = float("nan")
    dst, executed = merge([[(5, 0), (3, 1), (1, 2)], [(nan, 100), (3, 101), (2, 102)]], 6)
    want = records([(nan, 100), (5, 0), (3, 1), (3, 101), (2, 102), (1, 2)], np.float32)
    assert dst.data.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    assert executed.data.tolist() == [[3, 3, 0, 0]]


def test_tmrgsort_signed_zero_tie_keeps_list_order_and_bits() -> None:
    dst, _ = merge([[(-0.0, 1)], [(0.0, 2)]], 2)
    rec = dst.data.view(np.uint32).reshape(2, 2)
    assert rec.tolist() == [[0x80000000, 1], [0, 2]]


def test_tmrgsort_four_f16_lists_stop_when_dst_is_full() -> None:
    lists = [[(9, 0), (1, 1)], [(8, 10), (2, 11)], [(7, 20), (3, 21)], [(6, 30), (4, 31)]]
    dst, executed = merge(lists, 5, np.float16, dst_extra=2)
    want = records([(9, 0), (8, 10), (7, 20), (6, 30), (4, 31)], np.float16)
    assert dst.data[:, :20].view(np.uint16).tolist() == want.view(np.uint16).tolist()
    assert (dst.data[:, 20:].view(np.uint8) == 0xEE).all()   # outside the valid region: untouched
    assert executed.data.tolist() == [[1, 1, 1, 2]]


def test_tmrgsort_three_lists_and_exhausted_mode() -> None:
    lists = [[(5, 0), (4, 1)], [(3, 10), (2, 11), (1, 12)], [(4.5, 20)]]
    dst, executed = merge(lists, 6)
    assert dst.data[0, ::2].tolist() == [5, 4.5, 4, 3, 2, 1]
    assert executed.data.tolist() == [[2, 3, 1, 0]]
    dst, executed = merge(lists, 6, exhausted=True)
    assert dst.data[0, :4:2].tolist() == [5, 4.5] and executed.data.tolist() == [[1, 0, 1, 0]]
    assert (dst.data[0, 4:].view(np.uint8) == 0xEE).all()     # the reference leaves the rest untouched
    _, executed = merge([[(5, 0)], []], 2, exhausted=True)
    assert executed.data.tolist() == [[0, 0, 0, 0]]


def test_tmrgsort_faults_and_constraints() -> None:
    src = isa.Tile.of(records([(1, 0)], np.float32))
    fault("RUNTIME_INVALID_WRITE", "TMRGSORT", dst=filled((1, 4), np.float32, 0),
          executed=filled((1, 4), np.uint16, 0, valid=(1, 2)), src0=src, src1=src.copy())
    ok = {"dst": "!pto.tile<1x128xf32>", "executed": "!pto.tile<1x16xu16, valid=1x4>",
          "src0": "!pto.tile<1x64xf32>", "src1": "!pto.tile<1x64xf32>"}
    assert codes("TMRGSORT", {**ok, "src2": "!pto.tile<1x64xf32>", "src3": "!pto.tile<1x64xf32>"}) == []
    assert codes("TMRGSORT", {**ok, "src2": "!pto.tile<1x64xf16>"}) == ["LEGAL_DTYPE"]
    assert codes("TMRGSORT", {**ok, "dst": "!pto.tile<2x128xf32>"}) == ["STRUCT_SHAPE"]
    assert codes("TMRGSORT", {**ok, "executed": "!pto.tile<1x16xu16>"}) == ["STRUCT_VALID_REGION"]
    assert codes("TMRGSORT", {**ok, "executed": "!pto.tile<1x4xu16>"}, profile="a3") == ["LEGAL_ALIGNMENT"]
    assert codes("TMRGSORT", {**ok, "src1": "!pto.tile<1x64xf32, valid=1x63>"}) == ["STRUCT_VALID_REGION"]


def blocks_of(values: list[list[float]], dtype: Any = np.float32, start: int = 0) -> np.ndarray:
    """Blocks of records (value, index = start + position) laid end to end in one row."""
    flat = [v for block in values for v in block]
    return records([(v, start + k) for k, v in enumerate(flat)], dtype)


def test_tmrgsort_single_list_merges_four_blocks_of_one_group() -> None:
    # blockLen 64 f32 elements = 32 records; block b holds 100 * (3 - b) + (31 - r), all distinct:
    # block 0 wins every comparison, so the merge is block 0, 1, 2, 3 in turn
    vals = [[100.0 * (3 - b) + (31 - r) for r in range(32)] for b in range(4)]
    src = isa.Tile.of(blocks_of(vals))
    dst = filled((1, 256), np.float32, 0)
    run("TMRGSORT", dst=dst, src0=src, blockLen=64)
    assert dst.data.view(np.uint32).tolist() == src.data.view(np.uint32).tolist()
    # interleaved blocks: block b holds 4 * r + b descending by r, so the merge interleaves them
    vals = [[float(4 * (31 - r) + (3 - b)) for r in range(32)] for b in range(4)]
    dst = filled((1, 256), np.float32, 0)
    run("TMRGSORT", dst=dst, src0=isa.Tile.of(blocks_of(vals)), blockLen=64)
    assert dst.data[0, ::2].tolist() == list(range(127, -1, -1))
    want_index = [32 * b + r for r in range(32) for b in range(4)]     # record position in src
    assert dst.data.view(np.uint32)[0, 1::2].tolist() == want_index


def test_tmrgsort_single_list_groups_stay_apart_ties_nan_f16() -> None:
    # f16: blockLen 64 = 16 records per block, two groups of 4 blocks (valid 512 elements)
    nan = float("nan")
    group0 = [[5.0] + [0.0] * 15, [5.0] + [-1.0] * 15, [nan] + [-2.0] * 15, [-0.0] + [-3.0] * 15]
    group1 = [[1000.0 - k for k in range(16)], [900.0 - k for k in range(16)], [800.0] * 16, [700.0] * 16]
    src = isa.Tile.of(blocks_of(group0 + group1, np.float16))
    dst = filled((1, 512), np.float16, 0)
    run("TMRGSORT", dst=dst, src0=src, blockLen=64)
    rec = dst.data.view(np.uint16).reshape(128, 4)
    idx = (rec[:, 2].astype(np.int64) | (rec[:, 3].astype(np.int64) << 16)).tolist()
    # group 0: NaN first, the two 5s in block order (record 0 then 16), then 0 (block 0) before -0 (block 3)
    assert idx[:5] == [32, 0, 16, 1, 2]
    assert rec[4, 0] == 0x0000 and idx[18] == 48 and rec[18, 0] == 0x8000   # -0 after the fifteen +0
    # group 1 is merged on its own, into its own columns: its records keep indices 64..127
    assert sorted(idx[64:]) == list(range(64, 128)) and idx[64:80] == list(range(64, 80))


def test_tmrgsort_single_list_faults_and_constraints() -> None:
    src = filled((1, 256), np.float32, 1)
    fault("RUNTIME_BAD_CONFIG", "TMRGSORT", dst=filled((1, 256), np.float32, 0), src0=src, blockLen=32)
    fault("RUNTIME_BAD_CONFIG", "TMRGSORT", dst=filled((1, 256), np.float32, 0), src0=src, blockLen=96)
    fault("RUNTIME_VALID_REGION", "TMRGSORT", dst=filled((1, 256), np.float32, 0), src0=src, blockLen=128)
    fault("RUNTIME_VALID_REGION", "TMRGSORT", dst=filled((1, 256), np.float32, 0),
          src0=filled((1, 256), np.float32, 1, valid=(1, 192)), blockLen=64)
    fault("RUNTIME_INVALID_WRITE", "TMRGSORT", dst=filled((1, 256), np.float32, 0, valid=(1, 128)),
          src0=src, blockLen=64)
    empty = filled((1, 256), np.float32, 7)
    run("TMRGSORT", dst=empty, src0=filled((1, 256), np.float32, 1, valid=(0, 256)), blockLen=64)
    assert (empty.data == 7).all()                       # nothing to merge: nothing written
    ok = {"dst": "!pto.tile<1x256xf32>", "src0": "!pto.tile<1x256xf32>", "blockLen": "index"}
    for p in ("cpu", "a2", "a3", "a5"):
        assert codes("TMRGSORT", ok, profile=p) == []
    assert codes("TMRGSORT", {**ok, "src0": "!pto.tile<1x256xi32>", "dst": "!pto.tile<1x256xi32>"}) == []
    assert codes("TMRGSORT", {**ok, "src0": "!pto.tile<1x256xi32>", "dst": "!pto.tile<1x256xi32>"},
                 profile="a3") == ["LEGAL_DTYPE"]
    assert codes("TMRGSORT", {**ok, "src1": "!pto.tile<1x256xf32>"}) == ["STRUCT_OPERAND_FORM"]
    assert codes("TMRGSORT", {**ok, "executed": "!pto.tile<1x16xu16, valid=1x4>"}) == ["STRUCT_OPERAND_FORM"]
    assert codes("TMRGSORT", ok, {"exhausted": True}) == ["STRUCT_ATTR_VALUE"]
    assert codes("TMRGSORT", {"dst": "!pto.tile<1x256xf32>", "src0": "!pto.tile<1x256xf32>"}) \
        == ["STRUCT_MISSING_OPERAND"]
    assert codes("TMRGSORT", {"dst": "!pto.tile<1x128xf32>", "executed": "!pto.tile<1x16xi16, valid=1x4>",
                              "src0": "!pto.tile<1x64xf32>", "src1": "!pto.tile<1x64xf32>"}) == ["LEGAL_DTYPE"]


def test_tmrgsort_single_list_public_spellings() -> None:
    import openpto as pto
    text = """
kernel @k(%dst : !pto.tile<1x256xf32>, %src : !pto.tile<1x256xf32>, %n : index) {
  %dst = tmrgsort %src, %n : (!pto.tile<1x256xf32>, index) -> !pto.tile<1x256xf32>
  %dst = pto.tmrgsort %src, 64 : (!pto.tile<1x256xf32>, i32) -> !pto.tile<1x256xf32>
  pto.tmrgsort ins(%src, %n : !pto.tile_buf<1x256xf32>, index) outs(%dst : !pto.tile_buf<1x256xf32>)
}
"""
    m = pto.parse(text)
    assert [sorted(o.args) for o in m.kernels[0].body] == [["blockLen", "dst", "src0"]] * 3
    assert pto.parse(m.to_text()).to_text() == m.to_text()


# ----------------------------------------------------------------------------- TGATHER

@pytest.mark.parametrize("dtype,idx_dtype", [(np.float32, np.uint32), (np.int16, np.int32)])
def test_tgather_index_form_reads_static_storage(dtype: Any, idx_dtype: Any) -> None:
    data = np.arange(32).reshape(4, 8)
    src = tile(data, dtype, valid=(2, 8))              # flat indices reach past the valid region
    idx = np.array([[31, 0, 9, 5], [8, 8, 30, 1], [0, 0, 0, 0]])
    dst = filled((3, 4), dtype, -5, valid=(2, 3))
    run("TGATHER", dst=dst, src=src, idx=tile(idx, idx_dtype))
    assert dst.data[:2, :3].tolist() == [[31, 0, 9], [8, 8, 30]]
    assert (dst.data[2] == -5).all() and (dst.data[:, 3] == -5).all()


def test_tgather_copies_bits() -> None:
    src = isa.Tile.of(f32_from_bits([NAN_BITS, 0x80000000]).reshape(1, 2))
    dst = filled((1, 2), np.float32, 0)
    run("TGATHER", dst=dst, src=src, idx=tile([[1, 0]], np.int32))
    assert dst.data.view(np.uint32).tolist() == [[0x80000000, NAN_BITS]]


@pytest.mark.parametrize("bad,idx_dtype", [(32, np.int32), (-1, np.int32), (0xFFFFFFFF, np.uint32)])
def test_tgather_out_of_range_index_faults(bad: int, idx_dtype: Any) -> None:
    fault("RUNTIME_OOB", "TGATHER", dst=filled((1, 2), np.float32, 0), src=filled((4, 8), np.float32, 1),
          idx=tile([[0, bad]], idx_dtype))


@pytest.mark.parametrize("pattern,cols", [
    (MaskPattern.P0101, [0, 2, 4, 6]), (MaskPattern.P1010, [1, 3, 5, 7]), (MaskPattern.P0001, [0, 4]),
    (MaskPattern.P0010, [1, 5]), (MaskPattern.P0100, [2, 6]), (MaskPattern.P1000, [3, 7]),
    (MaskPattern.P1111, [0, 1, 2, 3, 4, 5, 6, 7])])
@pytest.mark.parametrize("dtype", [np.float16, np.uint32])
def test_tgather_mask_form(pattern: MaskPattern, cols: list[int], dtype: Any) -> None:
    data = np.arange(24).reshape(3, 8) * 10
    dst = filled((3, len(cols) + 1), dtype, 1, valid=(2, len(cols)))
    run("TGATHER", dst=dst, src=tile(data, dtype), maskPattern=pattern)
    assert dst.data[:2, :len(cols)].tolist() == [[data[r, c] for c in cols] for r in range(2)]
    assert (dst.data[2] == 1).all() and (dst.data[:, -1] == 1).all()


def test_tgather_mask_form_reads_only_valid_columns() -> None:
    src = filled((2, 8), np.float32, 1, valid=(2, 6))
    fault("RUNTIME_INVALID_READ", "TGATHER", dst=filled((2, 4), np.float32, 0), src=src,
          maskPattern=MaskPattern.P1010)
    run("TGATHER", dst=filled((2, 3), np.float32, 0), src=src, maskPattern=MaskPattern.P1010)


def test_tgather_constraints() -> None:
    ok = {"dst": "!pto.tile<16x16xf32>", "src": "!pto.tile<16x16xf32>", "idx": "!pto.tile<16x16xi32>"}
    assert codes("TGATHER", ok, {"maskPattern": MaskPattern.P0101}) == ["STRUCT_ATTR_VALUE"]
    with pytest.raises(isa.SpecError):
        run("TGATHER", dst=filled((1, 1), np.float32, 0), src=filled((1, 1), np.float32, 0),
            idx=tile([[0]], np.int32), maskPattern=MaskPattern.P0101)
    mask = {"dst": "!pto.tile<16x8xf32>", "src": "!pto.tile<16x16xf32>"}
    assert codes("TGATHER", mask, {"maskPattern": MaskPattern.P0101}) == []
    assert codes("TGATHER", {**mask, "src": "!pto.tile<16x16xf32, valid=16x14>"},
                 {"maskPattern": MaskPattern.P1010}) == ["STRUCT_VALID_REGION"]
    assert codes("TGATHER", {**mask, "dst": "!pto.tile<16x8xi32>"}, {"maskPattern": MaskPattern.P0101}) \
        == ["LEGAL_DTYPE"]
    assert codes("TGATHER", {**ok, "idx": "!pto.tile<16x16xi16>"}, profile="a3") == ["LEGAL_DTYPE"]
    assert codes("TGATHER", {**ok, "idx": "!pto.tile<16x16xi16>"}, profile="a5") == []


# ----------------------------------------------------------------------------- TGATHERB

def _blocks(image: bytes, starts: list[int]) -> bytes:
    return b"".join(image[s:s + 32] for s in starts)


def test_tgatherb_f32_row_major_unaligned_offsets() -> None:
    rng = np.random.default_rng(2)
    data = rng.standard_normal((4, 16)).astype(np.float32)
    offsets = [[0, 36, 224, 100], [3, 200, 64, 5]]
    dst = filled((2, 32), np.float32, 0)
    run("TGATHERB", dst=dst, src=isa.Tile.of(data), offsets=tile(offsets, np.uint32))
    image = data.tobytes()
    want = [np.frombuffer(_blocks(image, row), np.float32) for row in offsets]
    assert dst.data.view(np.uint32).tolist() == np.array(want).view(np.uint32).tolist()


def test_tgatherb_column_major_source_and_bytes() -> None:
    data = np.arange(64, dtype=np.int16).reshape(8, 8)
    src = isa.Tile.of(data, layout=Layout.DN)
    dst = filled((1, 32), np.int16, 0)
    run("TGATHERB", dst=dst, src=src, offsets=tile([[2, 96]], np.uint32))
    image = data.T.tobytes()                                   # DN storage is column-major
    assert dst.data.tolist() == [np.frombuffer(_blocks(image, [2, 96]), np.int16).tolist()]
    raw = np.arange(64, dtype=np.uint8).reshape(1, 64)
    dst8 = filled((1, 64), np.uint8, 0)
    run("TGATHERB", dst=dst8, src=isa.Tile.of(raw), offsets=tile([[32, 1]], np.uint32))
    assert dst8.data[0].tolist() == list(range(32, 64)) + list(range(1, 33))


def test_tgatherb_partial_block_and_bounds() -> None:
    data = np.arange(64, dtype=np.float32).reshape(4, 16)   # 256 bytes
    dst = filled((2, 16), np.float32, -1, valid=(1, 12))
    run("TGATHERB", dst=dst, src=isa.Tile.of(data), offsets=tile([[224, 0], [0, 0]], np.uint32))
    assert dst.data[0, :12].tolist() == list(range(56, 64)) + [0, 1, 2, 3]
    assert (dst.data[0, 12:] == -1).all() and (dst.data[1] == -1).all()
    fault("RUNTIME_OOB", "TGATHERB", dst=filled((1, 8), np.float32, 0), src=isa.Tile.of(data),
          offsets=tile([[225]], np.uint32))
    fault("RUNTIME_INVALID_READ", "TGATHERB", dst=filled((1, 16), np.float32, 0), src=isa.Tile.of(data),
          offsets=tile([[0, 0]], np.uint32, valid=(1, 1)))
    ok = {"dst": "!pto.tile<2x64xf32>", "src": "!pto.tile<16x64xf32>", "offsets": "!pto.tile<2x8xu32>"}
    assert codes("TGATHERB", {**ok, "offsets": "!pto.tile<2x8xu32, valid=2x7>"}) == ["STRUCT_VALID_REGION"]
    assert codes("TGATHERB", {**ok, "dst": "!pto.tile<2x64xf32, layout=DN>"}) == ["LEGAL_LAYOUT"]


# ----------------------------------------------------------------------------- TSCATTER

@pytest.mark.parametrize("dtype,idx_dtype", [(np.float32, np.int32), (np.int8, np.int16), (np.uint16, np.uint16)])
def test_tscatter_flat_offsets_last_writer_wins(dtype: Any, idx_dtype: Any) -> None:
    src = np.arange(1, 13).reshape(3, 4)
    idx = np.array([[12, 0, 6, 6], [0, 0, 24, 3], [11, 18, 1, 0]])     # offsets into the 5x5 storage
    dst = filled((5, 5), dtype, 99, valid=(5, 5))
    run("TSCATTER", dst=dst, src=tile(src, dtype), idx=tile(idx, idx_dtype))
    want = np.full(25, 99)
    for i in range(3):
        for j in range(4):
            want[idx[i, j]] = src[i, j]
    assert dst.data.reshape(-1).tolist() == want.tolist()


def test_tscatter_faults_and_constraints() -> None:
    src = tile([[1, 2]], np.float32)
    dst = lambda: filled((4, 4), np.float32, 0, valid=(2, 4))  # noqa: E731
    fault("RUNTIME_OOB", "TSCATTER", dst=dst(), src=src, idx=tile([[0, 16]], np.int32))
    fault("RUNTIME_OOB", "TSCATTER", dst=dst(), src=src, idx=tile([[-1, 0]], np.int32))
    fault("RUNTIME_INVALID_READ", "TSCATTER", dst=dst(), src=src, idx=tile([[0, 0]], np.int32, valid=(1, 1)))
    ok = {"dst": "!pto.tile<16x16xf32>", "src": "!pto.tile<16x16xf32>", "idx": "!pto.tile<16x16xi32>"}
    assert codes("TSCATTER", {**ok, "dst": "!pto.tile<16x16xf32, valid=16x8>"}) == []   # offsets, not columns
    assert codes("TSCATTER", {**ok, "idx": "!pto.tile<16x16xi32, valid=16x8>"}) == ["STRUCT_VALID_REGION"]
    assert codes("TSCATTER", {**ok, "idx": "!pto.tile<16x16xi16>"}) == ["LEGAL_DTYPE"]


# ----------------------------------------------------------------------------- TGATHER / TSCATTER forms (issue 14)

@pytest.mark.parametrize("pattern,rows", [(MaskPattern.P0101, [0, 2]), (MaskPattern.P1010, [1, 3]),
                                          (MaskPattern.P0001, [0, 4]), (MaskPattern.P0010, [1, 5]),
                                          (MaskPattern.P0100, [2, 6]), (MaskPattern.P1000, [3, 7]),
                                          (MaskPattern.P1111, [0, 1])])
def test_tgather_column_direction_keeps_whole_rows(pattern: MaskPattern, rows: list[int]) -> None:
    src = np.arange(8 * 4, dtype=np.int32).reshape(8, 4)        # row r holds 4r .. 4r + 3
    dst = filled((2, 4), np.int32, -1)
    run("TGATHER", dst=dst, src=tile(src, np.int32), maskPattern=pattern, gatherType=GatherAxis.GATHER_COL)
    assert dst.data.tolist() == [[4 * r + c for c in range(4)] for r in rows]


def test_tgather_column_direction_reads_only_valid_rows() -> None:
    src = tile(np.ones((8, 4)), np.float32, valid=(6, 4))
    fault("RUNTIME_INVALID_READ", "TGATHER", dst=filled((2, 4), np.float32, 0), src=src,
          maskPattern=MaskPattern.P1000, gatherType=GatherAxis.GATHER_COL)   # needs row 7
    ok = {"dst": "!pto.tile<8x16xf32>", "src": "!pto.tile<16x16xf32>"}
    col = {"maskPattern": MaskPattern.P0101, "gatherType": GatherAxis.GATHER_COL}
    assert codes("TGATHER", ok, col) == []
    assert codes("TGATHER", {**ok, "src": "!pto.tile<16x16xf32, valid=14x16>"}, col) == ["STRUCT_VALID_REGION"]
    assert codes("TGATHER", {**ok, "dst": "!pto.tile<8x16xf32, valid=8x8>",
                             "src": "!pto.tile<16x16xf32, valid=16x4>"}, col) == ["STRUCT_VALID_REGION"]


def test_tgather_compare_gt_f32_hand_case() -> None:
    # row 0: > 2 at columns 1 and 3; row 1: > -1 at 0, 2 (NaN and -inf never match)
    src = tile([[1.0, 2.5, 2.0, 7.0], [0.0, np.nan, 5.0, -np.inf]], np.float32)
    k = tile([[2], [-1]], np.int32)
    dst, cnt = filled((2, 4), np.uint32, 99), filled((2, 1), np.uint32, 99)
    run("TGATHER", dst=dst, src=src, idx=k, cdst=cnt, offset=10)
    assert dst.data.tolist() == [[11, 13, 99, 99], [14, 16, 99, 99]]   # 10 + 4 * row + column
    assert cnt.data[:, 0].tolist() == [2, 2]


def test_tgather_compare_eq_rounds_threshold_and_matches_signed_zero() -> None:
    # 2049 is not an f16: it rounds to 2048 (nearest even), which matches columns 0 and 2
    src = tile([[2048.0, 2050.0, 2048.0], [-0.0, 0.0, 1.0]], np.float16)
    k = tile([[2049], [0]], np.uint32)
    dst, cnt = filled((2, 3), np.int32, -7), filled((2, 1), np.int32, -7)
    run("TGATHER", dst=dst, src=src, idx=k, cdst=cnt, cmpMode=CmpMode.EQ)
    assert dst.data.tolist() == [[0, 2, -7], [3, 4, -7]]
    assert cnt.data[:, 0].tolist() == [2, 2]


def test_tgather_compare_integer_source_and_wrapping_offset() -> None:
    # u16 source: threshold 65537 wraps to 1; positions wrap to 32 bits from offset 2**32 - 2
    src = tile([[0, 1, 2, 65535]], np.uint16)
    dst, cnt = filled((1, 4), np.uint32, 5), filled((1, 1), np.uint32, 5)
    run("TGATHER", dst=dst, src=src, idx=tile([[65537]], np.uint32), cdst=cnt, offset=2**32 - 2)
    assert dst.data.tolist() == [[0, 1, 5, 5]]          # columns 2, 3 -> (2**32 - 2 + 2, + 3) mod 2**32
    assert cnt.data.tolist() == [[2]]


def test_tgather_compare_partial_rows_and_regions() -> None:
    src = tile(np.arange(12).reshape(3, 4), np.int32, valid=(2, 3))
    dst, cnt = filled((3, 4), np.int32, -1), filled((3, 1), np.int32, -1)
    run("TGATHER", dst=dst, src=src, idx=tile([[0], [4]], np.int32), cdst=cnt, cmpMode=CmpMode.EQ)
    assert dst.data.tolist() == [[0, -1, -1, -1], [4, -1, -1, -1], [-1, -1, -1, -1]]
    assert cnt.data[:, 0].tolist() == [1, 1, -1]
    fault("RUNTIME_INVALID_WRITE", "TGATHER", dst=filled((3, 4), np.int32, 0, valid=(2, 2)), src=src,
          idx=tile([[0], [4]], np.int32), cdst=filled((3, 1), np.int32, 0))
    fault("RUNTIME_INVALID_READ", "TGATHER", dst=filled((3, 4), np.int32, 0), src=src,
          idx=tile([[0], [4]], np.int32, valid=(1, 1)), cdst=filled((3, 1), np.int32, 0))


def test_tgather_compare_constraints_and_legality() -> None:
    ok = {"dst": "!pto.tile<16x16xu32>", "src": "!pto.tile<16x16xf32>", "idx": "!pto.tile<16x1xu32, layout=DN>",
          "cdst": "!pto.tile<16x1xu32, layout=DN>", "offset": "index"}
    for p in ("cpu", "a2", "a3", "a5"):
        assert codes("TGATHER", ok, profile=p) == []
    assert codes("TGATHER", ok, {"cmpMode": CmpMode.LT}) == ["STRUCT_ATTR_VALUE"]
    assert codes("TGATHER", ok, {"maskPattern": MaskPattern.P0101}) == ["STRUCT_ATTR_VALUE"]
    assert codes("TGATHER", {k: v for k, v in ok.items() if k != "idx"}) == ["STRUCT_MISSING_OPERAND"]
    assert "STRUCT_OPERAND_FORM" in codes("TGATHER", {k: v for k, v in ok.items() if k != "cdst"})   # offset
    assert codes("TGATHER", {**ok, "dst": "!pto.tile<16x16xf32>"}) == ["LEGAL_DTYPE"]
    assert codes("TGATHER", {**ok, "cdst": "!pto.tile<16x1xf32, layout=DN>"}) == ["LEGAL_DTYPE"]
    assert codes("TGATHER", {**ok, "dst": "!pto.tile<16x8xu32>"}) == ["STRUCT_VALID_REGION"]
    # A2/A3 take i32 thresholds, A5 u16/u32; A5 compares 16-bit integer sources, A2/A3 do not
    assert codes("TGATHER", {**ok, "idx": "!pto.tile<16x1xi32, layout=DN>"}, profile="a5") == ["LEGAL_DTYPE"]
    assert codes("TGATHER", {**ok, "idx": "!pto.tile<16x1xi32, layout=DN>"}, profile="a3") == []
    i16 = {**ok, "src": "!pto.tile<16x16xi16>", "idx": "!pto.tile<16x1xu16, layout=DN>"}
    assert codes("TGATHER", i16, profile="a5") == [] and codes("TGATHER", i16, profile="a3") == ["LEGAL_DTYPE"]
    # the index form keeps its own rule: dst takes src's dtype
    assert codes("TGATHER", {"dst": "!pto.tile<16x16xu32>", "src": "!pto.tile<16x16xf32>",
                             "idx": "!pto.tile<16x16xu32>"}) == ["LEGAL_DTYPE"]


def test_tgather_tmp_is_never_touched() -> None:
    tmp = filled((4, 4), np.int32, 1234)
    dst = filled((2, 2), np.float32, 0)
    run("TGATHER", dst=dst, src=tile([[1, 2], [3, 4]], np.float32), idx=tile([[3, 2], [1, 0]], np.int32), tmp=tmp)
    assert dst.data.tolist() == [[4, 3], [2, 1]] and (tmp.data == 1234).all()


@pytest.mark.parametrize("pattern,cols", [(MaskPattern.P0101, [0, 2]), (MaskPattern.P1010, [1, 3]),
                                          (MaskPattern.P0001, [0, 4]), (MaskPattern.P0010, [1, 5]),
                                          (MaskPattern.P0100, [2, 6]), (MaskPattern.P1000, [3, 7])])
def test_tscatter_mask_row_spreads_columns_with_zeros(pattern: MaskPattern, cols: list[int]) -> None:
    src = tile([[1, 2], [3, 4]], np.int16)
    width = 4 if pattern in (MaskPattern.P0101, MaskPattern.P1010) else 8
    dst = filled((2, width), np.int16, 9)
    run("TSCATTER", dst=dst, src=src, maskPattern=pattern)
    want = np.zeros((2, width), np.int16)
    want[:, cols] = [[1, 2], [3, 4]]
    assert dst.data.tolist() == want.tolist()


def test_tscatter_mask_col_spreads_rows_with_zeros() -> None:
    src = tile([[1.5, -2.0], [np.inf, -0.0]], np.float32)
    dst = filled((8, 2), np.float32, 9)
    run("TSCATTER", dst=dst, src=src, maskPattern=MaskPattern.P0100, scatterType=ScatterAxis.SCATTER_COL)
    want = [[0, 0], [0, 0], [1.5, -2.0], [0, 0], [0, 0], [0, 0], [np.inf, -0.0], [0, 0]]
    assert dst.data.tolist() == want and np.signbit(dst.data[6, 1]) and not np.signbit(dst.data[0, 0])


def test_tscatter_mask_p1111_is_a_copy_and_regions() -> None:
    dst = filled((2, 3), np.uint8, 7)
    run("TSCATTER", dst=dst, src=tile([[1, 2, 3], [4, 5, 6]], np.uint8))
    assert dst.data.tolist() == [[1, 2, 3], [4, 5, 6]]
    fault("RUNTIME_VALID_REGION", "TSCATTER", dst=filled((2, 4), np.uint8, 0, valid=(2, 3)),
          src=tile([[1, 2]], np.uint8, valid=(1, 2)), maskPattern=MaskPattern.P0101)
    ok = {"dst": "!pto.tile<16x32xf32>", "src": "!pto.tile<16x16xf32>"}
    assert codes("TSCATTER", ok, {"maskPattern": MaskPattern.P1010}) == []
    assert codes("TSCATTER", ok, {"maskPattern": MaskPattern.P0001}) == ["STRUCT_VALID_REGION"]
    assert codes("TSCATTER", ok, {"maskPattern": MaskPattern.P0101, "scatterType": ScatterAxis.SCATTER_COL}) \
        == ["STRUCT_VALID_REGION"]
    assert codes("TSCATTER", {**ok, "dst": "!pto.tile<16x32xi32>"}, {"maskPattern": MaskPattern.P1010}) \
        == ["LEGAL_DTYPE"]
    idx = {"dst": "!pto.tile<16x16xf32>", "src": "!pto.tile<16x16xf32>", "idx": "!pto.tile<16x16xi32>"}
    assert codes("TSCATTER", idx, {"maskPattern": MaskPattern.P1010}) == ["STRUCT_ATTR_VALUE"]
    for p in ("cpu", "a2", "a3", "a5"):
        assert codes("TSCATTER", ok, {"maskPattern": MaskPattern.P1010}, profile=p) == []


# ----------------------------------------------------------------------------- TCI

@pytest.mark.parametrize("dtype,start,descending,want", [
    (np.int32, 0, False, [0, 1, 2, 3, 4]),
    (np.int32, 100, True, [100, 99, 98, 97, 96]),
    (np.uint16, 65534, False, [65534, 65535, 0, 1, 2]),
    (np.int16, -32767, True, [-32767, -32768, 32767, 32766, 32765]),
    (np.uint32, -1, False, [4294967295, 0, 1, 2, 3]),
    (np.int32, 2**31 - 2, False, [2**31 - 2, 2**31 - 1, -2**31, -2**31 + 1, -2**31 + 2]),
    (np.int32, 2**64 + 5, False, [5, 6, 7, 8, 9]),
])
def test_tci_sequence_wraps(dtype: Any, start: int, descending: bool, want: list[int]) -> None:
    dst = filled((2, 8), dtype, 7, valid=(2, 5))
    run("TCI", dst=dst, start=start, descending=descending)
    assert dst.data[0, :5].tolist() == want
    assert (dst.data[0, 5:] == 7).all() and (dst.data[1] == 7).all()   # only row 0, only valid columns


def test_tci_writes_nothing_without_valid_rows() -> None:
    dst = filled((1, 4), np.int32, 7, valid=(0, 4))
    run("TCI", dst=dst, start=3)
    assert (dst.data == 7).all()


# ----------------------------------------------------------------------------- TTRI

@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.uint16])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("diagonal", [-2, 0, 1, 3])
def test_ttri_matches_numpy_tril_triu(dtype: Any, upper: bool, diagonal: int) -> None:
    dst = filled((8, 8), dtype, 5, valid=(5, 7))
    run("TTRI", dst=dst, diagonal=diagonal, upper=upper)
    ones = np.ones((5, 7))
    want = np.triu(ones, diagonal) if upper else np.tril(ones, diagonal)
    assert dst.data[:5, :7].tolist() == want.tolist()
    assert (dst.data[5:] == 5).all() and (dst.data[:, 7:] == 5).all()


def test_ttri_extreme_diagonals() -> None:
    for diagonal, upper, value in [(10**30, False, 1), (-10**30, False, 0), (10**30, True, 0), (-10**30, True, 1)]:
        dst = filled((3, 4), np.float32, 5)
        run("TTRI", dst=dst, diagonal=diagonal, upper=upper)
        assert (dst.data == value).all()
        assert not np.signbit(dst.data).any()


# ----------------------------------------------------------------------------- TPART*

def test_tpartadd_regions_and_untouched_remainder() -> None:
    a, b = np.arange(16).reshape(4, 4) + 1, (np.arange(16).reshape(4, 4) + 1) * 100
    dst = filled((4, 4), np.float32, -9)
    run("TPARTADD", dst=dst, src0=tile(a, np.float32, valid=(4, 2)), src1=tile(b, np.float32, valid=(2, 4)))
    want = np.full((4, 4), -9.0)
    want[:2, :2] = a[:2, :2] + b[:2, :2]
    want[2:, :2] = a[2:, :2]
    want[:2, 2:] = b[:2, 2:]
    assert dst.data.tolist() == want.tolist()


def test_tpart_smaller_source_tile_and_in_place() -> None:
    a = tile(np.arange(16).reshape(4, 4), np.float32)
    b = tile([[10, 20], [30, 40]], np.float32)
    dst = filled((4, 4), np.float32, 0)
    run("TPARTMUL", dst=dst, src0=a, src1=b)
    want = np.arange(16).reshape(4, 4).astype(float)
    want[:2, :2] *= [[10, 20], [30, 40]]
    assert dst.data.tolist() == want.tolist()
    run("TPARTADD", dst=a, src0=a, src1=b)   # dst aliases src0
    want = np.arange(16).reshape(4, 4).astype(float)
    want[:2, :2] += [[10, 20], [30, 40]]
    assert a.data.tolist() == want.tolist()


def test_tpartadd_f16_rounds_once_and_integers_wrap() -> None:
    x = np.array([[2048, 0.1, 65504, 1e-7]], np.float16)
    y = np.array([[1, 0.2, 32, 1e-7]], np.float16)
    dst = filled((1, 4), np.float16, 0)
    run("TPARTADD", dst=dst, src0=isa.Tile.of(x), src1=isa.Tile.of(y))
    with np.errstate(over="ignore"):
        want = (x.astype(np.float32) + y.astype(np.float32)).astype(np.float16)
    assert dst.data.view(np.uint16).tolist() == want.view(np.uint16).tolist()
    assert dst.data[0, 0] == 2048 and np.isinf(dst.data[0, 2])
    d16 = filled((1, 2), np.int16, 0)
    run("TPARTADD", dst=d16, src0=tile([[32767, -32768]], np.int16), src1=tile([[1, -1]], np.int16))
    assert d16.data.tolist() == [[-32768, 32767]]
    d32 = filled((1, 2), np.int32, 0)
    run("TPARTMUL", dst=d32, src0=tile([[65536, -7]], np.int32), src1=tile([[65536, 3]], np.int32))
    assert d32.data.tolist() == [[0, -21]]


@pytest.mark.parametrize("name,want", [("TPARTMAX", [np.nan, np.nan, 0.0, 2.0, np.inf]),
                                       ("TPARTMIN", [np.nan, np.nan, -0.0, -1.0, -np.inf])])
def test_tpartmax_min_nan_and_signed_zero(name: str, want: list[float]) -> None:
    a = np.array([[np.nan, 1, -0.0, 2, np.inf]], np.float32)
    b = np.array([[1, np.nan, 0.0, -1, -np.inf]], np.float32)
    dst = filled((1, 5), np.float32, 0)
    run(name, dst=dst, src0=isa.Tile.of(a), src1=isa.Tile.of(b))
    np.testing.assert_array_equal(dst.data[0], np.array(want, np.float32))
    assert np.signbit(dst.data[0, 2]) == (name == "TPARTMIN")
    i8 = filled((1, 2), np.int32, 0)
    run(name, dst=i8, src0=tile([[-5, 7]], np.int32), src1=tile([[3, -9]], np.int32, valid=(1, 1)))
    assert i8.data.tolist() == [[3 if name == "TPARTMAX" else -5, 7]]


def test_tpart_constraints() -> None:
    ok = {"dst": "!pto.tile<16x16xf32>", "src0": "!pto.tile<16x16xf32>", "src1": "!pto.tile<16x16xf32, valid=8x16>"}
    assert codes("TPARTMAX", {**ok, "dst": "!pto.tile<16x16xf32, valid=8x16>"}) == ["STRUCT_VALID_REGION"]
    u8 = {k: "!pto.tile<16x32xu8>" for k in ok}
    assert codes("TPARTADD", u8, profile="a5") == [] and codes("TPARTADD", u8, profile="a3") == ["LEGAL_DTYPE"]


# ----------------------------------------------------------------------------- TQUANT

def test_tquant_sym_rounding_saturation_and_specials() -> None:
    x = np.array([[2.5, -2.5, 3.5, 0.49999997, 200, -300, np.nan, np.inf],
                  [1.25, -1.25, 0.75, -np.inf, 64, -64.5, -0.0, 1e38]], np.float32)
    src = isa.Tile.of(x)
    dst = filled((2, 8), np.int8, 0)
    run("TQUANT", dst=dst, src=src, scale=tile([[1.0], [2.0]], np.float32), quantType=QuantType.INT8_SYM)
    assert dst.data.tolist() == [[2, -2, 4, 0, 127, -128, 0, 127], [2, -2, 2, -128, 127, -128, 0, 127]]
    np.testing.assert_array_equal(src.data, x)   # src is not clobbered


def test_tquant_asym_offset_and_partial_region() -> None:
    x = np.array([[0, -128, -129, 127, 127.5, 0.5, 1.5, np.nan], [1, 2, 3, 4, 5, 6, 7, 8]], np.float32)
    dst = filled((2, 8), np.uint8, 77, valid=(1, 8))
    run("TQUANT", dst=dst, src=isa.Tile.of(x), scale=tile([[1.0], [0.0]], np.float32, valid=(1, 1)),
        offset=tile([[128.0]], np.float32), quantType=QuantType.INT8_ASYM)
    assert dst.data.tolist() == [[128, 0, 0, 255, 255, 128, 130, 0], [77] * 8]
    d = filled((1, 2), np.uint8, 0)
    run("TQUANT", dst=d, src=tile([[1.0, 3.0]], np.float32), scale=tile([[np.inf]], np.float32),
        offset=tile([[-np.inf]], np.float32), quantType=QuantType.INT8_ASYM)
    assert d.data.tolist() == [[0, 0]]   # inf + -inf = NaN -> 0


def test_tquant_faults_and_constraints() -> None:
    src, scale = filled((2, 4), np.float32, 1), tile([[1.0]], np.float32)
    fault("RUNTIME_INVALID_READ", "TQUANT", dst=filled((2, 4), np.int8, 0), src=src, scale=scale,
          quantType=QuantType.INT8_SYM)
    with pytest.raises(isa.SpecError):
        run("TQUANT", dst=filled((1, 4), np.uint8, 0), src=src, scale=scale, quantType=QuantType.INT8_ASYM)
    ok = {"dst": "!pto.tile<16x32xi8>", "src": "!pto.tile<16x32xf32>", "scale": "!pto.tile<16x1xf32, layout=DN>"}
    sym, asym = {"quantType": QuantType.INT8_SYM}, {"quantType": QuantType.INT8_ASYM}
    off = {"offset": "!pto.tile<16x1xf32, layout=DN>"}
    u8 = {**ok, "dst": "!pto.tile<16x32xu8>"}
    assert codes("TQUANT", ok, {}) == ["STRUCT_MISSING_ATTR"]
    assert codes("TQUANT", u8, asym) == ["STRUCT_MISSING_OPERAND"]
    assert codes("TQUANT", {**ok, **off}, sym) == ["STRUCT_ATTR_VALUE"]
    assert codes("TQUANT", {**u8, **off}, asym, profile="a2") == []
    assert codes("TQUANT", {**ok, **off}, asym) == ["LEGAL_DTYPE"]
    assert codes("TQUANT", {**u8, "offset": "!pto.tile<16x1xf16, layout=DN>"}, asym) == ["LEGAL_DTYPE"]
    assert codes("TQUANT", {**ok, "scale": "!pto.tile<16x1xf32, valid=8x1>"}, sym) == ["STRUCT_VALID_REGION"]


# ----------------------------------------------------------------------------- TPRINT

def test_tprint_renders_valid_region_to_a_list() -> None:
    data = np.full((4, 4), 777, np.float32)
    data[:2, :3] = [[1.5, -0.0, np.nan], [np.inf, 0.1, 3]]
    src = isa.Tile.of(data, valid=(2, 3))
    out: list[str] = []
    run("TPRINT", src=src, sink=out)
    assert out == ["tprint 4x4xf32 valid=2x3\n"
                   "   1.5 -0.0  nan\n"
                   "   inf  0.1  3.0\n"]
    np.testing.assert_array_equal(src.data, data)


def test_tprint_integers_masks_callable_and_stdout(capsys: pytest.CaptureFixture) -> None:
    got: list[str] = []
    run("TPRINT", src=tile([[-32768, 5], [12, 0]], np.int16), sink=got.append)
    assert got == ["tprint 2x2xi16 valid=2x2\n  -32768      5\n      12      0\n"]
    run("TPRINT", src=tile([[True, False, True]], np.bool_))
    assert capsys.readouterr().out == "tprint 1x3xi1 valid=1x3\n  1 0 1\n"
    run("TPRINT", src=filled((2, 2), np.float32, 1, valid=(0, 2)), sink=got)
    assert got[-1] == "tprint 2x2xf32 valid=0x2\n"


def test_new_gather_scatter_forms_spell_and_round_trip() -> None:
    import openpto as pto
    from openpto.assembler import bytecode
    text = """
kernel @k(%dst : !pto.tile<4x40xu32>, %cnt : !pto.tile<4x1xu32, layout=DN>, %src : !pto.tile<4x40xf32>,
          %k : !pto.tile<4x1xi32, layout=DN>, %d2 : !pto.tile<2x40xf32>, %s2 : !pto.tile<2x40xf32>) {
  %dst, %cnt = tgather %src, %k, 7 {cmpMode = #pto.cmp<EQ>} : (!pto.tile<4x40xf32>, !pto.tile<4x1xi32, layout=DN>, index) -> (!pto.tile<4x40xu32>, !pto.tile<4x1xu32, layout=DN>)
  pto.tgather ins(%src, %k, 7 : !pto.tile_buf<4x40xf32>, !pto.tile_buf<4x1xi32, layout=DN>, index) outs(%dst, %cnt : !pto.tile_buf<4x40xu32>, !pto.tile_buf<4x1xu32, layout=DN>)
  %d2 = tgather %src {maskPattern = #pto.mask_pattern<P0101>, gatherType = #pto.gather_axis<GATHER_COL>} : (!pto.tile<4x40xf32>) -> !pto.tile<2x40xf32>
  %src = tscatter %s2 {maskPattern = #pto.mask_pattern<P1010>, scatterType = #pto.scatter_axis<SCATTER_COL>} : (!pto.tile<2x40xf32>) -> !pto.tile<4x40xf32>
}
"""
    m = pto.parse(text)
    ops = m.kernels[0].body
    assert [sorted(o.args) for o in ops[:2]] == [["cdst", "dst", "idx", "offset", "src"]] * 2
    assert ops[3].attrs["scatterType"] is ScatterAxis.SCATTER_COL
    assert bytecode.load_bytes(bytecode.dump(m)).to_text() == m.to_text()
    from openpto.assembler.verifier import verify
    verify(m, "cpu")


# ----------------------------------------------------------------------------- optional scratch operands

def test_tsort32_tmp_is_accepted_and_never_touched() -> None:
    src = tile([[3, 1, 2, 5]], np.float32)
    idx = tile([[10, 11, 12, 13]], np.uint32)
    tmp = filled((1, 8), np.float32, 42)
    dst = filled((1, 8), np.float32, 0)
    run("TSORT32", dst=dst, src=src, idx=idx, tmp=tmp)
    assert dst.data[0, ::2].tolist() == [5, 3, 2, 1]
    assert dst.data.view(np.uint32)[0, 1::2].tolist() == [13, 10, 12, 11]
    assert (tmp.data == 42).all()
    assert codes("TSORT32", {"dst": "!pto.tile<2x64xf32>", "src": "!pto.tile<2x32xf32>",
                             "idx": "!pto.tile<2x32xu32>", "tmp": "!pto.tile<2x64xf32>"}, profile="a3") == []


def test_tci_tmp_is_accepted_and_never_touched() -> None:
    dst, tmp = filled((1, 5), np.int16, 0), filled((1, 5), np.int16, -9)
    run("TCI", dst=dst, start=2, tmp=tmp, descending=True)
    assert dst.data.tolist() == [[2, 1, 0, -1, -2]] and (tmp.data == -9).all()


def test_tprint_global_tmp_is_accepted_checked_and_never_touched() -> None:
    got: list[str] = []
    scratch = np.full((2, 3), 5.0, np.float32)
    run("TPRINT", src=tile([[1, 2, 3], [4, 5, 6]], np.int32), tmp=scratch, sink=got.append)
    assert got == ["tprint 2x3xi32 valid=2x3\n  1 2 3\n  4 5 6\n"] and (scratch == 5).all()
    ok = {"src": "!pto.tile<16x16xf32>", "tmp": "!pto.memref<256xf32>"}
    assert codes("TPRINT", ok) == [] and codes("TPRINT", ok, profile="a3") == []
    assert codes("TPRINT", {**ok, "tmp": "!pto.memref<16x8xf16>"}) == ["STRUCT_SHAPE"]
    assert codes("TPRINT", {**ok, "tmp": "!pto.memref<?xf32>"}) == []        # dynamic: not checkable
