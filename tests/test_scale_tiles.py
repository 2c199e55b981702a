"""Scale tiles of the public size on a5/a6: the 32-byte scale boxes ZZ_MX (16 x 2) and NN_MX (2 x 16).

The public kernels keep MX / HiF4 scales in mat tiles typed ``RowMajor, RowMajor, 32`` (A) and
``ColMajor, ColMajor, 32`` (B): a K = 64 scale row is 2 bytes (4 for HiF4), far below the 32-byte
row the unboxed layouts need on an NPU profile. These tests check that such tiles parse from the
public spellings, are legal on a5/a6 (and nowhere without MX), and carry the scales end to end:
TLOAD from a scale layout, TMOV into scale_left / scale_right, TMATMUL_MX, compiled for a5 / a6 on
the reference and llvm backends and compared with numpy or a hand-worked product."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
from openpto.assembler.bytecode import dump, load_bytes
from openpto.assembler.printer import print_module
from openpto.isa.diagnostics import PTOError
from openpto.isa import profiles
from openpto.isa.types import Layout, Location, parse_type

from scale_support import HIF4_ACC, HIF4_AT, HIF4_BT, HIF4_GA, HIF4_GB, codes, hif4_hand_case, load_move_matmul, run

BACKENDS = ("reference", "llvm")


# ------------------------------------------------------------------------------ spellings

@pytest.mark.parametrize("written,canonical", [
    ("!pto.tile_buf<loc=mat, u8, 64, 2, 64, 2, RowMajor, RowMajor, 32>", "!pto.tile<64x2xu8, loc=mat, layout=ZZ_MX>"),
    ("!pto.tile_buf<mat, u8, 2, 64, 2, 64, ColMajor, ColMajor, 32>", "!pto.tile<2x64xu8, loc=mat, layout=NN_MX>"),
    ("!pto.tile_buf<ScaleLeft, uint8_t, 16, 2, 16, 2, row_major, row_major, 32>",
     "!pto.tile<16x2xu8, loc=scale_left, layout=ZZ_MX>"),
    ("!pto.tile_buf<scale_right, u8, 2, 32, 2, 32, col_major, col_major, 32>",
     "!pto.tile<2x32xu8, loc=scale_right, layout=NN_MX>"),
    ("!pto.tile<16x4xu8, loc=mat, layout=zz_mx>", "!pto.tile<16x4xu8, loc=mat, layout=ZZ_MX>"),
    # the 512-byte fractal (or none) keeps the old meaning of the pair
    ("!pto.tile_buf<mat, u8, 64, 32, 64, 32, RowMajor, RowMajor, 512>", "!pto.tile<64x32xu8, loc=mat, layout=ZZ>"),
])
def test_public_spellings(written: str, canonical: str) -> None:
    t = parse_type(written)
    assert t.spell() == canonical
    assert parse_type(canonical) == t


@pytest.mark.parametrize("written", [
    "!pto.tile_buf<mat, u8, 64, 2, 64, 2, RowMajor, NoneBox, 32>",      # the scale fractal is boxed
    "!pto.tile_buf<mat, u8, 64, 2, 64, 2, ColMajor, RowMajor, 32>",     # NZ order has no scale box
    "!pto.tile_buf<mat, u8, 64, 2, 64, 2, ColMajor, ColMajor>",         # NN exists only as the scale box
])
def test_other_pairs_with_the_scale_fractal_are_refused(written: str) -> None:
    with pytest.raises(PTOError) as e:
        parse_type(written)
    assert e.value.code == "PARSE_TYPE"


def test_boxes() -> None:
    assert Layout.ZZ_MX.boxed and Layout.NN_MX.boxed
    assert Layout.ZZ_MX.scale_box == (16, 2) and Layout.NN_MX.scale_box == (2, 16)
    assert Layout.ZZ.scale_box is None


# ------------------------------------------------------------------------------ legality

def tile_codes(tile: str, profile: str) -> list[str]:
    """Codes of a kernel that only declares ``tile`` as a parameter (the layout rule is a
    property of the type; the alignment rule is checked where an instruction uses a tile)."""
    return codes(f"kernel @k(%t : {tile}) {{\n}}\n", profile)


@pytest.mark.parametrize("rows,cols,layout,loc,ok", [
    (64, 2, Layout.ZZ_MX, Location.MAT, True),       # K = 64: 2 scales a row
    (20, 2, Layout.ZZ_MX, Location.MAT, True),       # rows are free (the public Tile exempts them)
    (16, 4, Layout.ZZ_MX, Location.MAT, True),       # HiF4 records: 4 bytes a row
    (2, 32, Layout.NN_MX, Location.MAT, True),
    (3, 16, Layout.NN_MX, Location.MAT, True),
    (16, 3, Layout.ZZ_MX, Location.MAT, False),      # half a 16x2 box
    (2, 24, Layout.NN_MX, Location.MAT, False),      # half a 2x16 box
    (64, 2, Layout.ND, Location.MAT, False),         # unboxed: a 2-byte row (the old gap)
    (2, 64, Layout.DN, Location.MAT, False),
])
def test_alignment_rule(rows: int, cols: int, layout: Layout, loc: Location, ok: bool) -> None:
    for name in ("a5", "a6"):
        why = profiles.get(name).row_alignment_error(rows, cols, 1, layout, loc)
        assert (why is None) == ok, (name, why)


def test_unboxed_scale_tile_is_refused_where_the_box_is_taken() -> None:
    g = "!pto.memref<1x2x1x16x2xu8, layout=MX_A_ZZ>"
    def load(tile: str) -> list[str]:
        return codes(f"kernel @k(%g : {g}) {{\n  %t = tload %g[0, 0, 0, 0, 0] : ({g}) -> {tile}\n}}\n", "a5")
    assert load("!pto.tile<32x2xu8, loc=mat>") == ["LEGAL_ALIGNMENT"]
    assert load("!pto.tile<32x2xu8, loc=mat, layout=ZZ_MX>") == []


@pytest.mark.parametrize("tile,a5", [
    ("!pto.tile<64x2xu8, loc=mat, layout=ZZ_MX>", []),
    ("!pto.tile<2x32xu8, loc=mat, layout=NN_MX>", []),
    ("!pto.tile<16x2xu8, loc=scale_left, layout=ZZ_MX>", []),
    ("!pto.tile<2x16xu8, loc=scale_right, layout=NN_MX>", []),
    ("!pto.tile<2x16xu8, loc=scale_right, layout=ZZ_MX>", ["LEGAL_LAYOUT"]),   # ScaleRight is column-major
    ("!pto.tile<16x2xu8, loc=scale_left, layout=NN_MX>", ["LEGAL_LAYOUT"]),
    ("!pto.tile<16x2xu8, loc=vec, layout=ZZ_MX>", ["LEGAL_LAYOUT"]),
    ("!pto.tile<16x2xu8, loc=left, layout=ZZ_MX>", ["LEGAL_LAYOUT"]),
])
def test_layouts_on_a5_a6(tile: str, a5: list[str]) -> None:
    assert tile_codes(tile, "a5") == a5
    assert tile_codes(tile, "a6") == a5
    assert tile_codes(tile, "cpu") == []


@pytest.mark.parametrize("profile", ["a2", "a3", "kirin9030", "kirinX90"])
def test_no_scale_boxes_without_mx(profile: str) -> None:
    assert "LEGAL_LAYOUT" in tile_codes("!pto.tile<64x2xu8, loc=mat, layout=ZZ_MX>", profile)
    assert "LEGAL_LAYOUT" in tile_codes("!pto.tile<2x64xu8, loc=mat, layout=NN_MX>", profile)


def test_load_pairs() -> None:
    """A-side scale layouts load into ZZ_MX, B-side ones into NN_MX, not the other way round."""
    def load(glayout: str, shape: str, tile: str) -> list[str]:
        g = f"!pto.memref<{shape}xu8, layout={glayout}>"
        return codes(f"kernel @k(%g : {g}) {{\n  %t = tload %g[0, 0, 0, 0, 0] : ({g}) -> {tile}\n}}\n", "a5")
    assert load("MX_A_ZZ", "1x2x1x16x2", "!pto.tile<32x2xu8, loc=mat, layout=ZZ_MX>") == []
    assert load("MX_B_NN", "1x2x1x16x2", "!pto.tile<2x32xu8, loc=mat, layout=NN_MX>") == []
    assert load("MX_A_ND", "1x1x32x1x2", "!pto.tile<32x2xu8, loc=mat, layout=ZZ_MX>") == []
    assert load("MX_B_NN", "1x2x1x16x2", "!pto.tile<2x32xu8, loc=mat, layout=ZZ_MX>") == ["LEGAL_LAYOUT"]
    assert "LEGAL_LAYOUT" in load("MX_A_ZZ", "1x2x1x16x2", "!pto.tile<32x2xu8, loc=mat, layout=NN_MX>")


def test_subset_splits_at_whole_scale_boxes() -> None:
    def sub(tile: str, window: str) -> list[str]:
        return codes(f"kernel @k(%t : {tile}) {{\n  %s = pto.subset %t[{window}]\n}}\n", "a5")
    zz, nn = "!pto.tile<64x2xu8, loc=mat, layout=ZZ_MX>", "!pto.tile<2x64xu8, loc=mat, layout=NN_MX>"
    assert sub(zz, "16, 0] sizes [32, 2") == []
    assert sub(zz, "8, 0] sizes [16, 2") == ["STRUCT_LAYOUT"]          # splits a 16x2 box
    assert sub(nn, "0, 16] sizes [2, 32") == []
    assert sub(nn, "0, 8] sizes [2, 16") == ["STRUCT_LAYOUT"]
    assert sub(nn, "0, 0] sizes [1, 16") == ["STRUCT_LAYOUT"]          # NN_MX keeps every row


def test_treshape_refuses_scale_boxes() -> None:
    src, dst = "!pto.tile<16x2xu8, loc=mat, layout=ZZ_MX>", "!pto.tile<1x32xu8, loc=mat>"
    text = f"kernel @k(%s : {src}) {{\n  %d = treshape %s : ({src}) -> {dst}\n}}\n"
    assert codes(text, "cpu") == ["LEGAL_LAYOUT"]


# ------------------------------------------------------------------------------ end to end

def mx_a_zz_image(s: np.ndarray) -> np.ndarray:
    """M x 2 scales in the public MX_A_ZZ order: 16 x 2 fractals of 32 bytes, row-major."""
    m, kb = s.shape
    flat = np.zeros(m * kb, np.uint8)
    for i in range(m):
        for j in range(kb):
            flat[(i // 16) * (kb * 16) + (j // 2) * 32 + (i % 16) * 2 + j % 2] = s[i, j]
    return flat.reshape(1, m // 16, kb // 2, 16, 2)


def mx_b_nn_image(s: np.ndarray) -> np.ndarray:
    """2 x N scales in the public MX_B_NN order: MX_A_ZZ of the transpose."""
    return mx_a_zz_image(np.ascontiguousarray(s.T))


def mx_program(m: int, n: int) -> str:
    return load_move_matmul(
        "tmatmul_mx", f"!pto.memref<1x{m // 16}x1x16x2xu8, layout=MX_A_ZZ>",
        f"!pto.memref<1x{n // 16}x1x16x2xu8, layout=MX_B_NN>",
        f"!pto.tile_buf<loc=mat, u8, {m}, 2, {m}, 2, RowMajor, RowMajor, 32>",
        f"!pto.tile_buf<loc=mat, u8, 2, {n}, 2, {n}, ColMajor, ColMajor, 32>",
        f"!pto.tile<{m}x2xu8, loc=scale_left, layout=ZZ_MX>", f"!pto.tile<2x{n}xu8, loc=scale_right, layout=NN_MX>",
        f"!pto.tile<{m}x64xf8e4m3, loc=left, layout=NZ>", f"!pto.tile<64x{n}xf8e4m3, loc=right, layout=ZN>",
        f"!pto.tile<{m}x{n}xf32, loc=acc, layout=NZ>")


@pytest.mark.parametrize("profile", ["a5", "cpu"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_mx_k64_end_to_end(profile: str, backend: str) -> None:
    """K = 64, two E8M0 scales a row of A and a column of B: the public kernels' shapes. (a6 has
    no TMOV; its kernels move scales with TEXTRACT: tests/test_mx_end_to_end.py.)"""
    m, n = 32, 16
    text = mx_program(m, n)
    assert codes(text, profile) == []
    assert "LEGAL_LAYOUT" in codes(text, "a2")
    rng = np.random.default_rng(11)
    a = rng.integers(-6, 7, (m, 64)).astype(np.float32)
    b = rng.integers(-6, 7, (64, n)).astype(np.float32)
    sa = rng.integers(122, 133, (m, 2)).astype(np.uint8)
    sb = rng.integers(122, 133, (2, n)).astype(np.uint8)
    # numpy: scale each 32-element K block of A's rows and B's columns, then multiply
    wa = a * np.exp2(np.repeat(sa.astype(np.float64) - 127, 32, axis=1))
    wb = b * np.exp2(np.repeat(sb.astype(np.float64) - 127, 32, axis=0))
    want = (wa @ wb).astype(np.float32)
    args = {"ga": mx_a_zz_image(sa), "gb": mx_b_nn_image(sb), "a": a.astype(ml_dtypes.float8_e4m3fn),
            "b": b.astype(ml_dtypes.float8_e4m3fn), "c": np.zeros((m, n), np.float32)}
    out = run(text, backend, profile, args)
    np.testing.assert_allclose(out["c"], want, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hif4_k64_end_to_end(backend: str) -> None:
    """TMATMUL_MX_HIF4 with its HiF4 records in a 4 x 16 NN_MX tile loaded from HIF4_B_NN and A's
    scales in a ZZ_MX tile: the hand-worked product of tests/test_matmul_hif4_mixed.py,
    dst[0, 0] = 1.5 * 2 * 1 + (-3 * 0.5) * (-0.75 * 4) = 7.5; B's column 1 has Ea 0, so 0. The
    loads are legal on a6 (its only HiF4 target); the moves run on cpu, as a6 has no TMOV (a6 moves them
    with TEXTRACT: tests/test_mx_end_to_end.py)."""
    arrays, sa, patch, want = hif4_hand_case()
    text = load_move_matmul(
        "tmatmul_mx_hif4", HIF4_GA, HIF4_GB, "!pto.tile_buf<loc=mat, u8, 16, 2, 16, 2, RowMajor, RowMajor, 32>",
        "!pto.tile_buf<loc=mat, u8, 4, 16, 4, 16, ColMajor, ColMajor, 32>",
        "!pto.tile<16x2xu8, loc=scale_left, layout=ZZ_MX>", "!pto.tile<4x16xu8, loc=scale_right, layout=NN_MX>",
        HIF4_AT, HIF4_BT, HIF4_ACC)
    loads = "\n".join(text.splitlines()[:3]) + "\n}\n"
    assert codes(loads, "a6") == []
    assert "LEGAL_LAYOUT" in codes(loads, "a5")                # a5 has no HiF4 global layouts
    assert codes(text, "cpu") == []
    out = run(text, backend, "cpu", {"ga": mx_a_zz_image(sa), "gb": patch, **arrays})
    np.testing.assert_array_equal(out["c"], want)


def test_round_trip_through_printer_and_bytecode() -> None:
    module = pto.parse(mx_program(32, 16))
    printed = print_module(module)
    assert "layout=ZZ_MX" in printed and "layout=NN_MX" in printed
    assert print_module(pto.parse(printed)) == printed
    assert print_module(load_bytes(dump(module))) == printed
