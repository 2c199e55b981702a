"""The public global scale layouts (MX_A_* / MX_B_*, HIF4_A_ZZ / HIF4_B_NN) in TLOAD.

Each global image is written here byte by byte from the public formulas (the simulator's MX
offsets, the HiF4 page's 64-byte patch), independently of isa/glayouts.py, then loaded on the
reference and llvm backends and compared with the logical scale matrix it was built from.
Also: the verifier's shape, valid-region, dtype, location and per-profile rules, run-time faults,
the public spellings through parse / print / bytecode, and TLOAD -> TMATMUL_MX against numpy."""
from __future__ import annotations

from typing import Callable

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
from openpto.assembler.bytecode import dump, load_bytes
from openpto.assembler.printer import print_module
from openpto.assembler.verifier import diagnose
from openpto.isa.types import GlobalLayout, parse_type

from llvm_support import run_program
from scale_support import HIF4_ACC, HIF4_AT, HIF4_BT, HIF4_GA, HIF4_GB, codes, hif4_hand_case, load_move_matmul

BACKENDS = ("reference", "llvm")


# ------------------------------------------------------------------------------ physical images

def _mx_a_zz(m: int, kb: int) -> tuple[tuple[int, ...], Callable[[int, int], int]]:
    """M x KB scales: 16 x 2 fractals of 32 bytes, the fractals of a row group along K."""
    return (1, m // 16, kb // 2, 16, 2), lambda i, j: (i // 16) * (kb * 16) + (j // 2) * 32 + (i % 16) * 2 + j % 2


def _mx_a_nd(m: int, kb: int):  # noqa: ANN202
    return (1, 1, m, kb // 2, 2), lambda i, j: i * kb + j


def _mx_a_dn(m: int, kb: int):  # noqa: ANN202
    return (1, 1, kb // 2, m, 2), lambda i, j: (j // 2) * (m * 2) + i * 2 + j % 2


def _mx_b_nn(kb: int, n: int):  # noqa: ANN202
    """KB x N scales: MX_A_ZZ of the N x KB transpose."""
    return (1, n // 16, kb // 2, 16, 2), lambda i, j: (j // 16) * (kb * 16) + (i // 2) * 32 + (j % 16) * 2 + i % 2


def _mx_b_nd(kb: int, n: int):  # noqa: ANN202
    return (1, 1, kb // 2, n, 2), lambda i, j: (i // 2) * (n * 2) + j * 2 + i % 2


def _mx_b_dn(kb: int, n: int):  # noqa: ANN202
    return (1, 1, n, kb // 2, 2), lambda i, j: j * kb + i


def _patch(row: int, byte: int) -> int:
    """The HiF4 page: bytes 0..31 (Ea, Eb) of rows 0..15, bytes 32..63 (Ec lo, Ec hi)."""
    return (byte // 2) * 32 + row * 2 + byte % 2


def _hif4_a_zz(m: int, kr: int):  # noqa: ANN202
    """M x KR record bytes (4 per 64-element group): one 64-byte patch per 16 rows and group."""
    groups = kr // 4
    return (1, m // 16, groups, 16, 4), lambda i, j: (i // 16) * (groups * 64) + (j // 4) * 64 + _patch(i % 16, j % 4)


def _hif4_b_nn(kr: int, n: int):  # noqa: ANN202
    groups = kr // 4
    return (1, n // 16, groups, 16, 4), lambda i, j: (j // 16) * (groups * 64) + (i // 4) * 64 + _patch(j % 16, i % 4)


# layout -> (side, image builder, matrix rows, matrix cols)
CASES = {
    "MX_A_ZZ": ("A", _mx_a_zz, 32, 6), "MX_A_ND": ("A", _mx_a_nd, 5, 4), "MX_A_DN": ("A", _mx_a_dn, 5, 6),
    "MX_B_NN": ("B", _mx_b_nn, 6, 32), "MX_B_ND": ("B", _mx_b_nd, 4, 5), "MX_B_DN": ("B", _mx_b_dn, 6, 5),
    "HIF4_A_ZZ": ("A", _hif4_a_zz, 32, 8), "HIF4_B_NN": ("B", _hif4_b_nn, 8, 32),
}


def image(layout: str, logical: np.ndarray) -> np.ndarray:
    """The 5-D tensor holding ``logical`` in ``layout``: each element put at its byte offset."""
    _, build, _, _ = CASES[layout]
    shape, offset = build(*logical.shape)
    flat = np.full(int(np.prod(shape)), 0xEE, np.uint8)
    seen = set()
    for i in range(logical.shape[0]):
        for j in range(logical.shape[1]):
            at = offset(i, j)
            assert at not in seen                 # the formula is one-to-one
            seen.add(at)
            flat[at] = logical[i, j]
    assert len(seen) == flat.size                 # ... and fills the whole tensor
    return flat.reshape(shape)


def load_program(layout: str, shape: tuple[int, ...], rows: int, cols: int, idx: str = "0, 0, 0, 0, 0",
                 valid: str = "", params: str = "") -> str:
    side = CASES[layout][0] if layout in CASES else "A"
    tl = "" if side == "A" else ", layout=DN"
    g = "!pto.memref<" + "x".join(map(str, shape)) + f"xu8, layout={layout}>"
    t = f"!pto.tile<{rows}x{cols}xu8, loc=mat{tl}{valid}>"
    out = f"!pto.memref<{rows}x{cols}xu8{', layout=DN' if side == 'B' else ''}>"
    return (f"kernel @k(%src : {g}, %out : {out}{params}) {{\n"
            f"  %t = tload %src[{idx}] : ({g}) -> {t}\n"
            f"  tstore %out[0, 0], %t : ({out}, {t})\n}}\n")


def run_both(text: str, **args: object) -> dict[str, tuple[str | None, dict]]:
    return {b: run_program(text, b, dict(args)) for b in BACKENDS}


@pytest.mark.parametrize("layout", sorted(CASES))
def test_load_reads_the_logical_scale_matrix(layout: str) -> None:
    side, _, rows, cols = CASES[layout]
    rng = np.random.default_rng(len(layout))
    logical = rng.integers(0, 256, (rows, cols)).astype(np.uint8)
    src = image(layout, logical)
    text = load_program(layout, src.shape, rows, cols)
    for backend, (code, res) in run_both(text, src=src, out=np.zeros((rows, cols), np.uint8)).items():
        assert code is None, (backend, code)
        np.testing.assert_array_equal(res["out"], logical, err_msg=backend)


def test_hand_worked_mx_a_zz_and_hif4_patch() -> None:
    """MX_A_ZZ [1, 2, 1, 16, 2]: byte 33 is row 16 + 0, scale 1 (the second fractal's first row).
    HIF4_A_ZZ [1, 1, 1, 16, 4]: row 3's record is bytes 6, 7 (Ea, Eb) and 38, 39 (Ec lo, hi)."""
    mx = np.arange(64, dtype=np.uint8).reshape(1, 2, 1, 16, 2)
    text = load_program("MX_A_ZZ", mx.shape, 32, 2)
    hif = np.arange(64, dtype=np.uint8).reshape(1, 1, 1, 16, 4)
    text4 = load_program("HIF4_A_ZZ", hif.shape, 16, 4)
    for backend in BACKENDS:
        _, res = run_program(text, backend, {"src": mx, "out": np.zeros((32, 2), np.uint8)})
        assert res["out"][16].tolist() == [32, 33] and res["out"][1].tolist() == [2, 3]
        _, res = run_program(text4, backend, {"src": hif, "out": np.zeros((16, 4), np.uint8)})
        assert res["out"][3].tolist() == [6, 7, 38, 39]
        assert res["out"][15].tolist() == [30, 31, 62, 63]


def test_indices_and_strides_address_through_the_tensor() -> None:
    """A strided view (a padded K dim) and a written index in dim 1 pick the second row group."""
    logical = np.random.default_rng(3).integers(0, 256, (32, 4)).astype(np.uint8)
    dense = image("MX_A_ZZ", logical)                        # [1, 2, 2, 16, 2]
    big = np.zeros((1, 2, 3, 16, 2), np.uint8)
    big[:, :, :2] = dense
    view = big[:, :, :2]
    g = "!pto.memref<1x2x2x16x2xu8, strides=[?, ?, ?, ?, ?], layout=MX_A_ZZ>"
    t = "!pto.tile<16x4xu8, loc=mat>"
    text = (f"kernel @k(%src : {g}, %out : !pto.memref<16x4xu8>, %r : index) {{\n"
            f"  %t = tload %src[0, %r, 0, 0, 0] : ({g}) -> {t}\n"
            f"  tstore %out[0, 0], %t : (!pto.memref<16x4xu8>, {t})\n}}\n")
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"src": view, "out": np.zeros((16, 4), np.uint8), "r": 1})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(res["out"], logical[16:], err_msg=backend)
        code, _ = run_program(text, backend, {"src": view, "out": np.zeros((16, 4), np.uint8), "r": 2})
        assert code == "RUNTIME_OOB", backend


def test_dynamic_valid_region_of_half_a_unit_faults() -> None:
    """valid columns 3 of an A-side MX load (pairs of scales): RUNTIME_VALID_REGION on both;
    4 loads."""
    src = image("MX_A_ND", np.arange(16, dtype=np.uint8).reshape(4, 4))
    g, t = "!pto.memref<1x1x4x2x2xu8, layout=MX_A_ND>", "!pto.tile_buf<mat, 4x4xu8, valid=?x?>"
    text = (f"kernel @k(%src : {g}, %out : !pto.memref<4x4xu8>, %c : index) {{\n"
            f"  .const %c4 = 4 : index\n"
            f"  %t = pto.alloc_tile valid_row = %c4 valid_col = %c : {t}\n"
            f"  pto.tload ins(%src[0, 0, 0, 0, 0] : {g}) outs(%t : {t})\n"
            f"  tstore %out[0, 0], %t\n}}\n")
    for backend in BACKENDS:
        code, _ = run_program(text, backend, {"src": src, "out": np.zeros((4, 4), np.uint8), "c": 3})
        assert code == "RUNTIME_VALID_REGION", (backend, code)
        code, res = run_program(text, backend, {"src": src, "out": np.zeros((4, 4), np.uint8), "c": 4})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(res["out"], np.arange(16).reshape(4, 4))


# ------------------------------------------------------------------------------ verifier


def test_shape_rules() -> None:
    assert codes(load_program("MX_A_ZZ", (1, 1, 1, 16, 2), 16, 2)) == []
    assert codes(load_program("MX_A_ZZ", (1, 1, 2, 8, 2), 8, 4)) == ["STRUCT_SHAPE"]       # shape[3] 8
    assert codes(load_program("MX_A_ND", (1, 2, 4, 1, 2), 4, 2)) == ["STRUCT_SHAPE"]       # shape[1] 2
    assert codes(load_program("HIF4_B_NN", (1, 1, 1, 16, 2), 4, 16)) == ["STRUCT_SHAPE"]   # shape[4] 2
    g = "!pto.memref<1x16x2xu8, layout=MX_A_ZZ>"
    text = (f"kernel @k(%src : {g}) {{\n  %t = tload %src[0, 0, 0] : ({g}) -> !pto.tile<16x2xu8, loc=mat>\n}}\n")
    assert codes(text) == ["STRUCT_SHAPE"]                                                  # rank 3
    g = "!pto.memref<1x1x1x?x2xu8, layout=MX_A_ZZ>"
    text = (f"kernel @k(%src : {g}) {{\n  %t = tload %src[0, 0, 0, 0, 0] : ({g}) -> !pto.tile<16x2xu8, loc=mat>\n}}\n")
    assert codes(text) == ["STRUCT_SHAPE"]                                                  # a ? fixed dim


def test_valid_region_dtype_location_layout() -> None:
    assert codes(load_program("MX_A_ZZ", (1, 1, 1, 16, 2), 16, 2, valid=", valid=16x1")) == ["STRUCT_VALID_REGION"]
    assert codes(load_program("HIF4_B_NN", (1, 1, 1, 16, 4), 4, 16, valid=", valid=2x16")) == ["STRUCT_VALID_REGION"]
    text = load_program("MX_B_ND", (1, 1, 1, 16, 2), 2, 16).replace("xu8", "xi8")
    assert codes(text) == ["LEGAL_DTYPE"]
    vec = load_program("MX_A_ND", (1, 1, 16, 1, 2), 16, 2).replace("loc=mat", "loc=vec")
    assert codes(vec) == ["LEGAL_LAYOUT"]
    g = "!pto.memref<1x1x1x16x2xu8, layout=MX_B_NN>"
    text = f"kernel @k(%src : {g}) {{\n  %t = tload %src[0, 0, 0, 0, 0] : ({g}) -> !pto.tile<2x16xu8, loc=mat>\n}}\n"
    assert codes(text) == ["LEGAL_LAYOUT"]                  # a B-side scale matrix goes into a DN tile
    g = "!pto.memref<1x1x1x16x2xu8, layout=SCALE>"
    text = f"kernel @k(%src : {g}) {{\n  %t = tload %src[0, 0, 0, 0, 0] : ({g}) -> !pto.tile<16x2xu8, loc=mat>\n}}\n"
    assert codes(text) == ["LEGAL_LAYOUT"]


def test_no_store_takes_a_scale_layout() -> None:
    g, t = "!pto.memref<1x1x1x16x2xu8, layout=MX_A_ZZ>", "!pto.tile<16x2xu8, loc=mat>"
    text = f"kernel @k(%g : {g}, %t : {t}) {{\n  tstore %g[0, 0, 0, 0, 0], %t : ({g}, {t})\n}}\n"
    assert "LEGAL_LAYOUT" in codes(text)


@pytest.mark.parametrize("layout,legal", [
    ("MX_A_ZZ", {"cpu", "a5", "a6"}), ("MX_B_DN", {"cpu", "a5", "a6"}),
    ("HIF4_A_ZZ", {"cpu", "a6"}), ("HIF4_B_NN", {"cpu", "a6"})])
def test_profiles(layout: str, legal: set[str]) -> None:
    side = CASES[layout][0]
    hif4 = layout.startswith("HIF4")
    k = 128 if hif4 else 64                         # a 32-byte ND row / DN column of scale bytes
    fixed = (1, 2, k // (4 if hif4 else 2), 16, 4 if hif4 else 2) if layout.endswith(("ZZ", "NN")) else None
    if side == "A":
        shape = fixed or (1, 1, k // 2, 32, 2)
        text = load_program(layout, shape, 32, k)
    else:
        shape = fixed or (1, 1, 32, k // 2, 2)
        text = load_program(layout, shape, k, 32)
    for profile in ("cpu", "a2", "a3", "a5", "a6", "kirin9030"):
        got = codes(text, profile)
        if profile in legal:
            assert got == [], (profile, got)
        else:
            assert "LEGAL_LAYOUT" in got, (profile, got)


def test_constant_index_out_of_range_is_static() -> None:
    text = load_program("MX_A_ZZ", (1, 2, 1, 16, 2), 16, 2, idx="0, 2, 0, 0, 0")
    assert codes(text) == ["STRUCT_OOB"]


# ------------------------------------------------------------------------------ spellings


@pytest.mark.parametrize("written,canonical", [
    ("!pto.memref<1x2x2x16x2xu8, layout=MX_A_ZZ>", "!pto.memref<1x2x2x16x2xu8, layout=MX_A_ZZ>"),
    ("!pto.memref<1x1x4x2x2xu8, layout=mx_adn>", "!pto.memref<1x1x4x2x2xu8, layout=MX_A_DN>"),
    ("!pto.memref<1x1x2x16x4xu8, layout=Hif4_B_NN>", "!pto.memref<1x1x2x16x4xu8, layout=HIF4_B_NN>"),
    ("!pto.memref<1x1x1x16x2xu8, layout=SCALE>", "!pto.memref<1x1x1x16x2xu8, layout=SCALE>"),
])
def test_type_spellings(written: str, canonical: str) -> None:
    assert parse_type(written).spell() == canonical


@pytest.mark.parametrize("layout", [g.value for g in GlobalLayout if g.value.startswith(("MX", "HIF4"))])
def test_programs_round_trip(layout: str) -> None:
    side, build, rows, cols = CASES[layout]
    shape, _ = build(rows, cols)
    module = pto.parse(load_program(layout, shape, rows, cols))
    printed = print_module(module)
    assert f"layout={layout}" in printed
    assert print_module(pto.parse(printed)) == printed
    assert print_module(load_bytes(dump(module))) == printed


def test_make_tensor_view_layout_attribute() -> None:
    text = ("kernel @k(%p : !pto.ptr<u8, gm>, %out : !pto.memref<16x2xu8>) {\n"
            "  %c1 = arith.constant 1 : index\n  %c2 = arith.constant 2 : index\n"
            "  %c16 = arith.constant 16 : index\n  %c32 = arith.constant 32 : index\n"
            "  %v = pto.make_tensor_view %p, shape = [%c1, %c1, %c1, %c16, %c2], "
            "strides = [%c32, %c32, %c32, %c2, %c1] {layout = #pto.layout<mx_a_zz>} "
            ": !pto.tensor_view<1x1x1x16x2xu8>\n"
            "  %t = tload %v[0, 0, 0, 0, 0] : (!pto.tensor_view<1x1x1x16x2xu8, layout=MX_A_ZZ>) -> !pto.tile<16x2xu8, loc=mat>\n"
            "  tstore %out[0, 0], %t : (!pto.memref<16x2xu8>, !pto.tile<16x2xu8, loc=mat>)\n}\n")
    module = pto.parse(text)
    assert "layout=MX_A_ZZ" in print_module(module)
    assert diagnose(module, "cpu") == []
    scales = np.arange(32, dtype=np.uint8).reshape(16, 2)
    for backend in BACKENDS:
        p = image("MX_A_ZZ", scales)
        out = np.zeros((16, 2), np.uint8)
        pto.compile(module, backend, "cpu").run("k", p.reshape(-1), out)
        np.testing.assert_array_equal(out, scales, err_msg=backend)


# ------------------------------------------------------------------------------ end to end


def test_tload_scales_then_tmatmul_mx_against_numpy() -> None:
    """A (16 x 64 f8e4m3) and B (64 x 16) with their E8M0 scales loaded from MX_A_ZZ / MX_B_NN
    images, moved to scale_left / scale_right, multiplied; numpy computes the scaled product."""
    rng = np.random.default_rng(7)
    a = rng.integers(-4, 5, (16, 64)).astype(np.float32)
    b = rng.integers(-4, 5, (64, 16)).astype(np.float32)
    sa = rng.integers(124, 131, (16, 2)).astype(np.uint8)
    sb = rng.integers(124, 131, (2, 16)).astype(np.uint8)
    expect = np.zeros((16, 16))
    for i in range(16):
        for j in range(16):
            expect[i, j] = sum(a[i, k] * 2.0 ** (int(sa[i, k // 32]) - 127) * b[k, j] * 2.0 ** (int(sb[k // 32, j]) - 127)
                               for k in range(64))
    text = load_move_matmul(
        "tmatmul_mx", "!pto.memref<1x1x1x16x2xu8, layout=MX_A_ZZ>", "!pto.memref<1x1x1x16x2xu8, layout=MX_B_NN>",
        "!pto.tile<16x2xu8, loc=mat>", "!pto.tile<2x16xu8, loc=mat, layout=DN>",
        "!pto.tile<16x2xu8, loc=scale_left>", "!pto.tile<2x16xu8, loc=scale_right, layout=DN>",
        "!pto.tile<16x64xf8e4m3, loc=left, layout=NZ>", "!pto.tile<64x16xf8e4m3, loc=right, layout=ZN>",
        "!pto.tile<16x16xf32, loc=acc, layout=NZ>")
    args = {"ga": image("MX_A_ZZ", sa), "gb": image("MX_B_NN", sb), "a": a.astype(ml_dtypes.float8_e4m3fn),
            "b": b.astype(ml_dtypes.float8_e4m3fn), "c": np.zeros((16, 16), np.float32)}
    for backend in BACKENDS:
        code, res = run_program(text, backend, args)
        assert code is None, (backend, code)
        np.testing.assert_array_equal(res["c"], expect.astype(np.float32), err_msg=backend)


def test_tload_hif4_records_then_tmatmul_mx_hif4() -> None:
    """The hand-worked mixed product of tests/test_matmul_hif4_mixed.py with its scales loaded:
    A's E8M0 scales from MX_A_ZZ, B's HiF4 records from a HIF4_B_NN patch (column 0: Ea 0xC0 at
    patch byte 0, Eb 0x20 at 1, Ec lo 0x00 at 32, Ec hi 0x04 at 33). dst[0, 0] = 1.5 * 2 * 1 +
    (-3 * 0.5) * (-0.75 * 4) = 7.5; B's column 1 has Ea 0, so dst[0, 1] = 0."""
    arrays, sa, patch, want = hif4_hand_case()
    text = load_move_matmul(
        "tmatmul_mx_hif4", HIF4_GA, HIF4_GB, "!pto.tile<16x2xu8, loc=mat>", "!pto.tile<4x16xu8, loc=mat, layout=DN>",
        "!pto.tile<16x2xu8, loc=scale_left>", "!pto.tile<4x16xu8, loc=scale_right, layout=DN>",
        HIF4_AT, HIF4_BT, HIF4_ACC)
    args = {"ga": image("MX_A_ZZ", sa), "gb": patch, **arrays}
    for backend in BACKENDS:
        code, res = run_program(text, backend, args)
        assert code is None, (backend, code)
        np.testing.assert_array_equal(res["c"], want, err_msg=backend)
