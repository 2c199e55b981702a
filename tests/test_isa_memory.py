"""Semantics and declarations of the memory family (TLOAD TSTORE TSTORE_FP TPREFETCH MGATHER
MSCATTER), checked against expectations computed here with plain numpy / literals."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import openpto.isa as I
from openpto.isa import dtypes as dt, profiles
from openpto.isa.checks import check_legality
from openpto.isa.attrs import AtomicMode, IndexMode, OobMode
from openpto.isa.constraints import check_all
from openpto.isa.spec import Domain
from openpto.isa.types import Layout, Location, Pipe, parse_type

SENTINEL = {np.dtype(np.float32): np.float32(-7.25), np.dtype(np.float16): np.float16(-7.25),
            np.dtype(np.int16): np.int16(-7), np.dtype(np.int32): np.int32(-7), np.dtype(np.int8): np.int8(-7)}


def run(name: str, **kw: object) -> None:
    I.get(name).execute(**kw)


def tile(shape: tuple[int, int], dtype: type, valid: tuple[int, int] | None = None,
         loc: Location = Location.VEC, layout: Layout = Layout.ND, fill: object = None) -> I.Tile:
    fill = SENTINEL[np.dtype(dtype)] if fill is None else fill
    return I.Tile.of(np.full(shape, fill, dtype=dtype), valid, loc=loc, layout=layout)


def errors(name: str, types: dict[str, str], attrs: dict | None = None) -> list[str]:
    ins = I.get(name)
    parsed = {k: parse_type(v) for k, v in types.items()}
    return [c.code for c, _ in check_all(ins.constraints, parsed, ins.with_defaults(attrs or {}))]


def fault(code: str):  # noqa: ANN201
    return pytest.raises(I.RuntimeFault, match=code)


# ----------------------------------------------------------------------------- TLOAD

@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_tload_window_partial_valid(dtype: type) -> None:
    g = np.arange(10 * 12).reshape(10, 12).astype(dtype)
    dst = tile((8, 8), dtype, valid=(3, 5))
    run("TLOAD", dst=dst, src=I.GlobalRef(g, (2, 4)))
    assert np.array_equal(dst.data[:3, :5], g[2:5, 4:9])
    outside = np.ones((8, 8), bool)
    outside[:3, :5] = False
    assert np.all(dst.data[outside] == SENTINEL[np.dtype(dtype)])


def test_tload_leading_index_selects_matrix_of_strided_tensor() -> None:
    base = np.arange(3 * 6 * 10, dtype=np.float32).reshape(3, 6, 10)
    g = base[:, ::2, ::-1]                       # non-contiguous 3x3x10 view
    dst = tile((2, 4), np.float32)
    run("TLOAD", dst=dst, src=I.GlobalRef(g, (1, 1, 3)))
    assert np.array_equal(dst.data, base[1, [2, 4], :][:, ::-1][:, 3:7])


def test_tload_one_dimensional_tensor_is_a_row() -> None:
    g = np.arange(20, dtype=np.int32)
    dst = tile((1, 8), np.int32)
    run("TLOAD", dst=dst, src=I.GlobalRef(g, (5,)))
    assert dst.data.tolist() == [list(range(5, 13))]


@pytest.mark.parametrize("dtype,bits", [(np.float32, [0x7FC01234, 0x80000000, 0x00000001, 0xFF800000]),
                                        (np.float16, [0x7E01, 0x8000, 0x0001, 0x7C00])])
def test_tload_is_bit_exact(dtype: type, bits: list[int]) -> None:
    utype = np.uint32 if dtype is np.float32 else np.uint16
    g = np.array([bits], dtype=utype).view(dtype)
    dst = tile((1, 4), dtype)
    run("TLOAD", dst=dst, src=I.GlobalRef(g))
    assert dst.data.view(utype).tolist() == [bits]


@pytest.mark.parametrize("offsets", [(7, 0), (0, 9), (-1, 0)])
def test_tload_out_of_bounds(offsets: tuple[int, int]) -> None:
    with fault("RUNTIME_OOB"):
        run("TLOAD", dst=tile((4, 4), np.float32), src=I.GlobalRef(np.zeros((10, 12), np.float32), offsets))


def test_tload_static_rules() -> None:
    ok = {"dst": "!pto.tile<16x16xf32>", "src": "!pto.memref<64x64xf32>"}
    assert errors("TLOAD", ok) == []
    assert errors("TLOAD", {**ok, "src": "!pto.memref<8x64xf32>"}) == ["STRUCT_SHAPE"]
    assert errors("TLOAD", {**ok, "src": "!pto.memref<64x64xf32, layout=DN>"}) == ["LEGAL_LAYOUT"]
    assert errors("TLOAD", {"dst": "!pto.tile<16x16xf16, loc=mat, layout=NZ>",
                            "src": "!pto.memref<64x64xf16>"}) == []
    assert errors("TLOAD", {"dst": "!pto.tile<16x16xf16, loc=mat, layout=ZN>",
                            "src": "!pto.memref<64x64xf16, layout=DN>"}) == []
    assert errors("TLOAD", {"dst": "!pto.tile<16x16xf16, layout=NZ>",
                            "src": "!pto.memref<64x64xf16>"}) == ["LEGAL_LAYOUT"]
    assert errors("TLOAD", {"dst": "!pto.tile<16x16xi64, loc=mat, layout=NZ>",
                            "src": "!pto.memref<64x64xi64>"}) == ["LEGAL_LAYOUT"]


def test_tload_declaration() -> None:
    ins = I.get("TLOAD")
    assert ins.pipe_for({}) is Pipe.MTE2 and ins.domain is Domain.DST
    assert ins.operand("dst").locations == (Location.VEC, Location.MAT)
    assert not ins.dtype_rule("a2").allows((dt.F8E4M3, dt.F8E4M3))
    assert ins.dtype_rule("a5").allows((dt.F8E4M3, dt.F8E4M3))
    assert not ins.dtypes.allows((dt.F16, dt.F32))


# ----------------------------------------------------------------------------- TSTORE

@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_tstore_writes_only_the_source_valid_region(dtype: type) -> None:
    g = np.full((6, 7), 3, dtype=dtype)
    src = I.Tile.of(np.arange(16).reshape(4, 4).astype(dtype), (2, 3))
    run("TSTORE", dst=I.GlobalRef(g, (1, 2)), src=src)
    expect = np.full((6, 7), 3, dtype=dtype)
    expect[1:3, 2:5] = [[0, 1, 2], [4, 5, 6]]
    assert np.array_equal(g, expect)


def test_tstore_into_strided_view_of_3d_tensor() -> None:
    base = np.zeros((2, 5, 8), np.int32)
    g = base[:, :, ::2]
    run("TSTORE", dst=I.GlobalRef(g, (1, 3, 1)), src=I.Tile.of(np.array([[1, 2, 3]], np.int32)))
    assert base[1, 3].tolist() == [0, 0, 1, 0, 2, 0, 3, 0] and base.sum() == 6


def test_tstore_acc_f32_to_f16_rounds_to_nearest_even() -> None:
    vals = np.array([[1 + 2**-11, 1 + 3 * 2**-11, 65519.0, 65520.0, np.nan, 1e-40, -0.0, -np.inf]], np.float32)
    g = np.zeros((1, 8), np.float16)
    run("TSTORE", dst=I.GlobalRef(g), src=I.Tile.of(vals, loc=Location.ACC, layout=Layout.NZ))
    bits = g.view(np.uint16)[0]
    assert bits[:4].tolist() == [0x3C00, 0x3C02, 0x7BFF, 0x7C00]  # 1, 1+2^-9, 65504, +inf
    assert np.isnan(g[0, 4]) and bits[5:].tolist() == [0x0000, 0x8000, 0xFC00]


def test_tstore_acc_f32_to_bf16_rounds_to_nearest_even() -> None:
    import ml_dtypes
    vals = np.array([[1 + 2**-8, 1 + 3 * 2**-8, 3.4e38]], np.float32)
    g = np.zeros((1, 3), ml_dtypes.bfloat16)
    run("TSTORE", dst=I.GlobalRef(g), src=I.Tile.of(vals, loc=Location.ACC))
    assert g.view(np.uint16)[0].tolist() == [0x3F80, 0x3F82, 0x7F80]  # 1, 1+2^-6, +inf


def test_tstore_atomic_add_f32_and_i32_wrap() -> None:
    gf = np.array([[1.0, np.inf, -0.0]], np.float32)
    run("TSTORE", dst=I.GlobalRef(gf), src=I.Tile.of(np.array([[2.5, -np.inf, 0.0]], np.float32)),
        atomic=AtomicMode.ADD)
    assert gf[0, 0] == 3.5 and np.isnan(gf[0, 1]) and gf[0, 2] == 0 and not np.signbit(gf[0, 2])
    gi = np.array([[2**31 - 1, -5]], np.int32)
    run("TSTORE", dst=I.GlobalRef(gi), src=I.Tile.of(np.array([[1, 7]], np.int32)), atomic=AtomicMode.ADD)
    assert gi.tolist() == [[-2**31, 2]]


def test_tstore_atomic_add_f16_rounds_once() -> None:
    g = np.array([[2048, 2048, 1]], np.float16)
    run("TSTORE", dst=I.GlobalRef(g), src=I.Tile.of(np.array([[1, 3, 2**-11]], np.float16)),
        atomic=AtomicMode.ADD)
    assert g.astype(np.float64).tolist() == [[2048.0, 2052.0, 1.0]]  # ties to even


def test_tstore_atomic_add_converts_the_acc_value_first() -> None:
    g = np.array([[1.0]], np.float16)
    acc = I.Tile.of(np.array([[2**-11 + 2**-23]], np.float32), loc=Location.ACC)
    run("TSTORE", dst=I.GlobalRef(g), src=acc, atomic=AtomicMode.ADD)
    assert g[0, 0] == 1.0        # value -> f16 gives 2^-11; 1 + 2^-11 ties to 1


def test_tstore_out_of_bounds() -> None:
    with fault("RUNTIME_OOB"):
        run("TSTORE", dst=I.GlobalRef(np.zeros((4, 4), np.float32), (2, 0)), src=tile((4, 4), np.float32))


def test_tstore_static_rules() -> None:
    vec = {"dst": "!pto.memref<64x64xf32>", "src": "!pto.tile<16x16xf32>"}
    assert errors("TSTORE", vec) == []
    assert errors("TSTORE", {**vec, "dst": "!pto.memref<64x64xf16>"}) == ["LEGAL_DTYPE"]
    assert errors("TSTORE", {"dst": "!pto.memref<64x64xf16>",
                             "src": "!pto.tile<16x16xf16, loc=acc>"}) == ["LEGAL_DTYPE"]
    assert errors("TSTORE", vec, {"atomic": AtomicMode.MAX}) == ["LEGAL_MODE"]
    assert errors("TSTORE", {"dst": "!pto.memref<64x64xi1>", "src": "!pto.tile<16x16xi1>"},
                  {"atomic": AtomicMode.ADD}) == ["LEGAL_MODE"]
    assert errors("TSTORE", {**vec, "dst": "!pto.memref<64x64xf32, layout=DN>"}) == ["LEGAL_LAYOUT"]
    assert errors("TSTORE", {"dst": "!pto.memref<64x64xf32, layout=DN>", "src": "!pto.tile<1x16xf32>"}) == []
    assert errors("TSTORE", {"dst": "!pto.memref<64x64xf32, layout=DN>",
                             "src": "!pto.tile<16x16xf32, loc=acc, layout=NZ>"}) == ["LEGAL_LAYOUT"]
    assert errors("TSTORE", {**vec, "dst": "!pto.memref<64x8xf32>"}) == ["STRUCT_SHAPE"]


def test_tstore_pipe_and_dtypes() -> None:
    ins = I.get("TSTORE")
    spell = {"vec": "!pto.tile<16x16xf32>", "mat": "!pto.tile<16x16xf32, loc=mat>",
             "acc": "!pto.tile<16x16xf32, loc=acc>"}
    pipes = {k: ins.pipe_for({"src": parse_type(v)}) for k, v in spell.items()}
    assert pipes == {"vec": Pipe.MTE3, "mat": Pipe.MTE3, "acc": Pipe.FIX}
    assert ins.dtypes.allows((dt.F16, dt.F32)) and ins.dtypes.allows((dt.BF16, dt.F32))
    # i32 -> i8 is in the table for the scalar pre-quantising form only (tests/test_prequant.py)
    assert not ins.dtypes.allows((dt.F32, dt.I32)) and ins.dtypes.allows((dt.I8, dt.I32))
    assert ins.domain is Domain.SRC


# ----------------------------------------------------------------------------- TSTORE_FP

def test_tstore_fp_i32_acc_scaled_per_column_to_f16() -> None:
    acc = np.array([[1000, -3, 7], [4097, 0, 5]], np.int32)
    fp = np.array([[0.5, 3.0, 1e-3]], np.float32)
    g = np.zeros((3, 4), np.float16)
    run("TSTORE_FP", dst=I.GlobalRef(g, (1, 1)), src=I.Tile.of(acc, loc=Location.ACC),
        fp=I.Tile.of(fp, loc=Location.SCALING))
    expect = (acc.astype(np.float32) * fp).astype(np.float16)
    assert np.array_equal(g[1:, 1:], expect) and not g[0].any() and not g[:, 0].any()
    assert g[2, 1] == 2048.0 and g[1, 2] == -9.0      # 2048.5 rounds to the f16 grid


def test_tstore_fp_i32_to_f32_rounds_the_acc_value_then_the_product() -> None:
    acc = np.array([[2**24 + 1, 2**24 + 3, 3, 2**24 + 1]], np.int32)
    g = np.zeros((1, 4), np.float32)
    run("TSTORE_FP", dst=I.GlobalRef(g), src=I.Tile.of(acc, loc=Location.ACC),
        fp=I.Tile.of(np.array([[1.0, 1.0, 1 / 3, 3.0]], np.float32), loc=Location.SCALING))
    # 2^24+1 -> 2^24 first, so the last product is 3 * 2^24 (an exact product would round to 3 * 2^24 + 4)
    assert g.tolist() == [[2.0**24, 2.0**24 + 4, float(np.float32(3) * np.float32(1 / 3)), 3 * 2.0**24]]


def test_tstore_fp_f32_acc_to_i8_rounds_even_and_saturates() -> None:
    acc = np.array([[1.5, 2.5, -0.5, 300.0, -np.inf, np.nan, -129.7, 63.75]], np.float32)
    fp = np.array([[1, 1, 1, 1, 1, 1, 1, 2]], np.float32)
    g = np.zeros((1, 8), np.int8)
    run("TSTORE_FP", dst=I.GlobalRef(g), src=I.Tile.of(acc, loc=Location.ACC),
        fp=I.Tile.of(fp, loc=Location.SCALING))
    assert g.tolist() == [[2, 2, 0, 127, -128, 0, -128, 127]]


def test_tstore_fp_f32_special_values_and_short_scale() -> None:
    g = np.zeros((1, 2), np.float32)
    run("TSTORE_FP", dst=I.GlobalRef(g), src=I.Tile.of(np.array([[np.inf, 3e38]], np.float32), loc=Location.ACC),
        fp=I.Tile.of(np.array([[0.0, 2.0]], np.float32), loc=Location.SCALING))
    assert np.isnan(g[0, 0]) and g[0, 1] == np.inf
    with fault("RUNTIME_INVALID_READ"):
        run("TSTORE_FP", dst=I.GlobalRef(g), src=I.Tile.of(np.ones((1, 2), np.float32), loc=Location.ACC),
            fp=I.Tile.of(np.ones((1, 2), np.float32), (1, 1), loc=Location.SCALING))


def test_tstore_fp_declaration() -> None:
    ins = I.get("TSTORE_FP")
    assert I.lookup("tstore.fp") is ins and ins.profiles is None and ins.pipe_for({}) is Pipe.FIX
    ok = {"dst": "!pto.memref<64x64xf16>", "src": "!pto.tile<16x16xi32, loc=acc, layout=NZ>",
          "fp": "!pto.tile<1x16xf32, loc=scaling>"}
    assert errors("TSTORE_FP", ok) == []
    assert errors("TSTORE_FP", {**ok, "fp": "!pto.tile<2x16xf32, loc=scaling>"}) == ["STRUCT_SHAPE"]
    assert errors("TSTORE_FP", {**ok, "fp": "!pto.tile<1x8xf32, loc=scaling>"}) == ["STRUCT_VALID_REGION"]
    assert ins.dtypes.allows((dt.I8, dt.F32, dt.F32)) and not ins.dtypes.allows((dt.I8, dt.F16, dt.F32))


# ----------------------------------------------------------------------------- TPREFETCH

def test_tprefetch_changes_nothing_but_checks_bounds() -> None:
    g = np.arange(64, dtype=np.float32).reshape(8, 8)
    dst = tile((4, 4), np.float32)
    before_g, before_d = g.copy(), dst.data.copy()
    run("TPREFETCH", dst=dst, src=I.GlobalRef(g, (4, 4)))
    assert np.array_equal(g, before_g) and np.array_equal(dst.data, before_d)
    with fault("RUNTIME_OOB"):
        run("TPREFETCH", dst=dst, src=I.GlobalRef(g, (5, 0)))
    ins = I.get("TPREFETCH")
    assert ins.domain is Domain.NONE and ins.pipe_for({}) is Pipe.MTE2


# ----------------------------------------------------------------------------- MGATHER

def gather(dst: I.Tile, g: np.ndarray, idx: np.ndarray, **attrs: object) -> None:
    run("MGATHER", dst=dst, src=I.GlobalRef(g), idx=I.Tile.of(idx), **attrs)


@pytest.mark.parametrize("data,itype", [(np.float32, np.int32), (np.int16, np.uint32)])
def test_mgather_element_mode_flat_over_logical_shape(data: type, itype: type) -> None:
    base = np.arange(48).reshape(6, 8).astype(data)
    g = base.T                                   # logical 8x6, column-major in memory
    idx = np.array([[0, 1, 6, 47], [13, 2, 2, 40]], itype)
    dst = tile((3, 4), data, valid=(2, 3))
    gather(dst, g, idx)
    logical = [[g[k // 6, k % 6] for k in row[:3]] for row in idx]
    assert dst.data[:2, :3].tolist() == logical
    assert np.all(dst.data[2] == SENTINEL[np.dtype(data)]) and np.all(dst.data[:, 3] == SENTINEL[np.dtype(data)])


def test_mgather_row_mode_tables_rows_of_last_dim() -> None:
    g = np.arange(2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5)
    idx = np.array([[4], [0], [5]], np.int32)
    dst = tile((3, 4), np.float32)
    gather(dst, g, idx, indexMode=IndexMode.ROW)
    assert dst.data.tolist() == [[20, 21, 22, 23], [0, 1, 2, 3], [25, 26, 27, 28]]


@pytest.mark.parametrize("mode,expect", [(OobMode.CLAMP, [0, 9, 9, 3]), (OobMode.WRAP, [7, 2, 9, 3]),
                                         (OobMode.ZERO, [None, None, 9, 3])])
def test_mgather_out_of_range_policies(mode: OobMode, expect: list) -> None:
    g = np.arange(10, dtype=np.float32) + 100
    dst = tile((1, 4), np.float32)
    gather(dst, g, np.array([[-3, 12, 9, 3]], np.int32), oobMode=mode)
    assert dst.data[0].tolist() == [0.0 if e is None else 100.0 + e for e in expect]


def test_mgather_errors() -> None:
    g = np.arange(10, dtype=np.float32)
    with fault("RUNTIME_OOB"):
        gather(tile((1, 2), np.float32), g, np.array([[0, 10]], np.int32))
    with fault("RUNTIME_OOB"):
        gather(tile((1, 2), np.float32), g.reshape(2, 5), np.array([[-1, 0]], np.int32))
    with fault("RUNTIME_OOB"):   # ROW mode: the tile is wider than a row
        gather(tile((1, 6), np.float32), g.reshape(2, 5), np.array([[0]], np.int32),
               indexMode=IndexMode.ROW, oobMode=OobMode.CLAMP)
    with fault("RUNTIME_OOB"):   # nothing to clamp to
        gather(tile((1, 1), np.float32), np.zeros(0, np.float32), np.array([[0]], np.int32),
               oobMode=OobMode.CLAMP)
    with fault("RUNTIME_GLOBAL_INDEX"):
        run("MGATHER", dst=tile((1, 1), np.float32), src=I.GlobalRef(g.reshape(2, 5), (1, 0)),
            idx=I.Tile.of(np.zeros((1, 1), np.int32)))
    with fault("RUNTIME_INVALID_READ"):
        run("MGATHER", dst=tile((2, 2), np.float32), src=I.GlobalRef(g),
            idx=I.Tile.of(np.zeros((2, 2), np.int32), (2, 1)))


def test_mgather_empty_table_zero_mode_reads_zero() -> None:
    dst = tile((1, 2), np.float32)
    gather(dst, np.zeros(0, np.float32), np.array([[0, 5]], np.int32), oobMode=OobMode.ZERO)
    assert dst.data.tolist() == [[0.0, 0.0]]


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40), st.lists(st.integers(-50, 90), min_size=6, max_size=6))
def test_mgather_wrap_matches_python_modulo(n: int, raw: list[int]) -> None:
    g = np.arange(n, dtype=np.int32) * 3
    dst = tile((2, 3), np.int32)
    gather(dst, g, np.array(raw, np.int32).reshape(2, 3), oobMode=OobMode.WRAP)
    assert dst.data.ravel().tolist() == [(k % n) * 3 for k in raw]


def test_mgather_static_rules() -> None:
    ok = {"dst": "!pto.tile<16x16xf32>", "src": "!pto.memref<512xf32>", "idx": "!pto.tile<16x16xi32>"}
    assert errors("MGATHER", ok) == []
    assert errors("MGATHER", {**ok, "idx": "!pto.tile<16x1xi32>"}) == ["STRUCT_VALID_REGION"]
    row = {**ok, "src": "!pto.memref<64x16xf32>", "idx": "!pto.tile<16x1xi32>"}
    assert errors("MGATHER", row, {"indexMode": IndexMode.ROW}) == []
    assert errors("MGATHER", {**row, "src": "!pto.memref<64x8xf32>"}, {"indexMode": IndexMode.ROW}) == ["STRUCT_SHAPE"]
    ins = I.get("MGATHER")
    assert ins.profiles == ("cpu", "a2", "a3", "a5") and ins.pipe_for({}) is Pipe.V
    assert I.get("MSCATTER").profiles == ("cpu", "a2", "a3", "a5")
    assert ins.dtypes.allows((dt.F16, dt.F16, dt.U32)) and not ins.dtypes.allows((dt.F16, dt.F16, dt.I16))
    assert ins.attr("oobMode").default is OobMode.ERROR and ins.attr("indexMode").default is IndexMode.ELEMENT


# ----------------------------------------------------------------------------- MSCATTER

def scatter(g: np.ndarray, src: I.Tile, idx: np.ndarray, **attrs: object) -> None:
    run("MSCATTER", dst=I.GlobalRef(g), src=src, idx=I.Tile.of(idx), **attrs)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_mscatter_last_writer_wins_and_rest_untouched(dtype: type) -> None:
    g = np.full((3, 4), 9, dtype=dtype)
    src = I.Tile.of(np.array([[1, 2, 3], [4, 5, 6]], dtype), (2, 2))
    scatter(g, src, np.array([[5, 0, 7], [5, 11, 7]], np.int32))
    expect = np.full(12, 9, dtype=dtype)
    expect[[0, 5, 11]] = [2, 4, 5]
    assert np.array_equal(g.ravel(), expect)


def test_mscatter_atomic_add_f16_is_sequential_in_row_major_order() -> None:
    g = np.array([2048, 0], np.float16)
    scatter(g, I.Tile.of(np.array([[1, 1], [1, 0.5]], np.float16)), np.array([[0, 0], [0, 1]], np.int32),
            atomic=AtomicMode.ADD)
    assert g.tolist() == [2048.0, 0.5]           # each 2048 + 1 ties back to 2048


def test_mscatter_atomic_add_i32_wraps_and_f32_sums() -> None:
    g = np.array([2**31 - 2, 10], np.int32)
    scatter(g, I.Tile.of(np.array([[1, 1, 1, -3]], np.int32)), np.array([[0, 0, 0, 1]], np.int32),
            atomic=AtomicMode.ADD)
    assert g.tolist() == [-2**31 + 1, 7]
    gf = np.zeros(2, np.float32)
    scatter(gf, I.Tile.of(np.array([[1.5, np.inf, -np.inf]], np.float32)), np.array([[0, 1, 1]], np.int32),
            atomic=AtomicMode.ADD)
    assert gf[0] == 1.5 and np.isnan(gf[1])


def test_mscatter_atomic_max_min_ieee() -> None:
    g = np.array([0.0, 1.0, -0.0, 5.0], np.float32)
    scatter(g, I.Tile.of(np.array([[-0.0, np.nan, 0.0, 7.0, 6.0]], np.float32)),
            np.array([[0, 1, 2, 3, 3]], np.int32), atomic=AtomicMode.MAX)
    assert not np.signbit(g[0]) and np.isnan(g[1]) and not np.signbit(g[2]) and g[3] == 7.0
    gm = np.array([0.0, 3], np.float32)
    scatter(gm, I.Tile.of(np.array([[-0.0, 4.0, -2.0]], np.float32)), np.array([[0, 1, 1]], np.int32),
            atomic=AtomicMode.MIN)
    assert np.signbit(gm[0]) and gm[1] == -2.0
    gi = np.array([5, 5], np.int16)
    scatter(gi, I.Tile.of(np.array([[-3, 9]], np.int16)), np.array([[0, 1]], np.uint32), atomic=AtomicMode.MIN)
    assert gi.tolist() == [-3, 5]


def test_mscatter_row_mode() -> None:
    g = np.zeros((4, 3), np.float32)
    src = I.Tile.of(np.array([[1, 2, 3, 99], [4, 5, 6, 99]], np.float32), (2, 3))
    scatter(g, src, np.array([[2, 0], [0, 0]], np.int32), indexMode=IndexMode.ROW)
    assert g.tolist() == [[4, 5, 6], [0, 0, 0], [1, 2, 3], [0, 0, 0]]


@pytest.mark.parametrize("mode,expect", [(OobMode.ZERO, [0, 0, 0, 2]), (OobMode.CLAMP, [1, 0, 0, 3]),
                                         (OobMode.WRAP, [0, 0, 1, 3])])
def test_mscatter_out_of_range_policies(mode: OobMode, expect: list[int]) -> None:
    g = np.zeros(4, np.int32)
    scatter(g, I.Tile.of(np.array([[1, 2, 3]], np.int32)), np.array([[-2, 3, 7]], np.int32), oobMode=mode)
    assert g.tolist() == expect


def test_mscatter_error_mode_writes_nothing() -> None:
    g = np.zeros(4, np.float32)
    with fault("RUNTIME_OOB"):
        scatter(g, I.Tile.of(np.array([[1, 2]], np.float32)), np.array([[0, 4]], np.int32))
    assert not g.any()


def test_mscatter_static_rules() -> None:
    ok = {"dst": "!pto.memref<512xf32>", "src": "!pto.tile<16x16xf32>", "idx": "!pto.tile<16x16xi32>"}
    assert errors("MSCATTER", ok, {"atomic": AtomicMode.MAX}) == []
    i1 = {k: parse_type(v) for k, v in {"dst": "!pto.memref<512xi1>", "src": "!pto.tile<16x16xi1>",
                                         "idx": "!pto.tile<16x16xi32>"}.items()}
    assert [e.code for e in check_legality(I.get("MSCATTER"), i1, {"atomic": AtomicMode.ADD},
                                           profiles.get("cpu"))] == ["LEGAL_MODE"]   # a value rule of cpu
    assert errors("MSCATTER", {**ok, "idx": "!pto.tile<8x16xi32>"}) == ["STRUCT_VALID_REGION"]
    ins = I.get("MSCATTER")
    assert ins.domain is Domain.SRC and ins.attr("atomic").default is AtomicMode.NONE
