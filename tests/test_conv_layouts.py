"""The public convolution layouts of global tensors (NC1HWC0, FRACTAL_Z, FRACTAL_Z_3D) in TLOAD,
TSTORE and TSTORE_FP.

Expectations come from index maps written here, element by element, from the public
simulator's formulas (not from isa/glayouts.py): NC1HWC0 holds the feature map whose row is
(n, h, w) and column c1 * C0 + c0; FRACTAL_Z [C1, H, W, N, C0] the weights whose row is
((c1 * H + h) * W + w) * C0 + c0 and column n. Also: the verifier's shape, valid-region, dtype,
layout and per-profile rules, and run-time faults on both backends."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from llvm_support import run_program
from scale_support import codes

BACKENDS = ("reference", "llvm")


def nc1hwc0_to_matrix(t: np.ndarray) -> np.ndarray:
    """The feature map an [N, C1, H, W, C0] tensor holds: element by element."""
    n_, c1_, h_, w_, c0_ = t.shape
    out = np.zeros((n_ * h_ * w_, c1_ * c0_), t.dtype)
    for n in range(n_):
        for c1 in range(c1_):
            for h in range(h_):
                for w in range(w_):
                    for c0 in range(c0_):
                        out[(n * h_ + h) * w_ + w, c1 * c0_ + c0] = t[n, c1, h, w, c0]
    return out


def fractal_z_to_matrix(t: np.ndarray) -> np.ndarray:
    """The K x N weights a [C1, H, W, N, C0] tensor holds: element by element."""
    c1_, h_, w_, n_, c0_ = t.shape
    out = np.zeros((c1_ * h_ * w_ * c0_, n_), t.dtype)
    for c1 in range(c1_):
        for h in range(h_):
            for w in range(w_):
                for n in range(n_):
                    for c0 in range(c0_):
                        out[((c1 * h_ + h) * w_ + w) * c0_ + c0, n] = t[c1, h, w, n, c0]
    return out


def memref(shape: tuple[int, ...], d: str, layout: str) -> str:
    return "!pto.memref<" + "x".join(map(str, shape)) + f"x{d}, layout={layout}>"


def load_kernel(layout: str, shape: tuple[int, ...], d: str, rows: int, cols: int, tile_layout: str,
                idx: str = "0, 0, 0, 0, 0") -> str:
    """TLOAD into a mat tile, then a plain mat store of it to an rows x cols tensor."""
    g = memref(shape, d, layout)
    t = f"!pto.tile<{rows}x{cols}x{d}, loc=mat, layout={tile_layout}>"
    out = f"!pto.memref<{rows}x{cols}x{d}, layout={tile_layout}>"
    return (f"kernel @k(%src : {g}, %out : {out}) {{\n"
            f"  %t = tload %src[{idx}] : ({g}) -> {t}\n"
            f"  tstore %out[0, 0], %t : ({out}, {t})\n}}\n")



# ------------------------------------------------------------------------------ TLOAD


@pytest.mark.parametrize("d, np_type", [("f16", np.float16), ("f32", np.float32), ("i8", np.int8)])
def test_load_nc1hwc0_reads_the_feature_map(d: str, np_type: type) -> None:
    c0 = 32 // np.dtype(np_type).itemsize
    shape = (2, 3, 2, 5, c0)
    src = (np.arange(np.prod(shape)) % 101).astype(np_type).reshape(shape)
    rows, cols = 2 * 2 * 5, 3 * c0
    want = nc1hwc0_to_matrix(src)
    text = load_kernel("NC1HWC0", shape, d, rows, cols, "NZ")
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"src": src, "out": np.zeros((rows, cols), np_type)})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(res["out"], want, err_msg=backend)


def test_load_nc1hwc0_hand_worked() -> None:
    """[1, 2, 1, 2, 16] f16 holding 0..63: row 1 (w = 1) is channels 0..15 from bytes 16..31 of
    the first C1 block, then channels 16..31 from the second block (48..63)."""
    src = np.arange(64, dtype=np.float16).reshape(1, 2, 1, 2, 16)
    text = load_kernel("NC1HWC0", src.shape, "f16", 2, 32, "NZ")
    for backend in BACKENDS:
        _, res = run_program(text, backend, {"src": src, "out": np.zeros((2, 32), np.float16)})
        assert res["out"][1].tolist() == list(range(16, 32)) + list(range(48, 64)), backend
        assert res["out"][0, 16] == 32, backend


@pytest.mark.parametrize("layout", ["FRACTAL_Z", "FRACTAL_Z_3D"])
def test_load_fractal_z_reads_the_weights(layout: str) -> None:
    """TLOAD into a mat ZN tile, TMOV to the right operand, TMATMUL with an identity left
    operand: the acc holds the K x N weights (f16 values are exact in f32)."""
    shape = (2, 1, 2, 16, 16)                      # C1, H, W, N, C0 (FRACTAL_Z_3D: D*C1 in dim 0)
    src = np.random.default_rng(7).standard_normal(shape).astype(np.float16)
    k, n = 2 * 1 * 2 * 16, 16
    g = memref(shape, "f16", layout)
    m, r = f"!pto.tile<{k}x{n}xf16, loc=mat, layout=ZN>", f"!pto.tile<{k}x{n}xf16, loc=right, layout=ZN>"
    left, acc = f"!pto.tile<{k}x{k}xf16, loc=left>", f"!pto.tile<{k}x{n}xf32, loc=acc, layout=NZ>"
    out = f"!pto.memref<{k}x{n}xf32>"
    text = (f"kernel @k(%src : {g}, %eye : {left}, %out : {out}) {{\n"
            f"  %m = tload %src[0, 0, 0, 0, 0] : ({g}) -> {m}\n  %r = tmov %m : ({m}) -> {r}\n"
            f"  %c = tmatmul %eye, %r : ({left}, {r}) -> {acc}\n  tstore %out[0, 0], %c : ({out}, {acc})\n}}\n")
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"src": src, "eye": np.eye(k, dtype=np.float16),
                                                "out": np.zeros((k, n), np.float32)})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(res["out"], fractal_z_to_matrix(src).astype(np.float32), err_msg=backend)


def test_load_through_a_strided_view() -> None:
    """A view of a wider tensor (its W dim padded): addresses go through the tensor's strides."""
    big = (np.arange(1 * 2 * 3 * 6 * 16) % 97).astype(np.float16).reshape(1, 2, 3, 6, 16)
    view = big[:, :, :, 1:5]
    g = "!pto.memref<1x2x3x4x16xf16, strides=[?, ?, ?, ?, ?], layout=NC1HWC0>"
    t = "!pto.tile<12x32xf16, loc=mat, layout=NZ>"
    out = "!pto.memref<12x32xf16, layout=NZ>"
    text = (f"kernel @k(%src : {g}, %out : {out}) {{\n  %t = tload %src[0, 0, 0, 0, 0] : ({g}) -> {t}\n"
            f"  tstore %out[0, 0], %t : ({out}, {t})\n}}\n")
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"src": view, "out": np.zeros((12, 32), np.float16)})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(res["out"], nc1hwc0_to_matrix(np.ascontiguousarray(view)), err_msg=backend)


def test_run_time_faults() -> None:
    """A written index other than 0 moves the whole-tensor transfer off the tensor (RUNTIME_OOB);
    a dynamic valid region other than the tensor's matrix is RUNTIME_VALID_REGION."""
    shape = (1, 2, 1, 2, 16)
    src = np.zeros(shape, np.float16)
    g = memref(shape, "f16", "NC1HWC0")
    t = "!pto.tile<2x32xf16, loc=mat, layout=NZ>"
    text = (f"kernel @k(%src : {g}, %r : index) {{\n  %t = tload %src[0, %r, 0, 0, 0] : ({g}) -> {t}\n}}\n")
    for backend in BACKENDS:
        assert run_program(text, backend, {"src": src, "r": 1})[0] == "RUNTIME_OOB", backend
        assert run_program(text, backend, {"src": src, "r": 0})[0] is None, backend
    tb = "!pto.tile_buf<mat, 2x32xf16, layout=NZ, valid=?x?>"
    text = (f"kernel @k(%src : {g}, %c : index) {{\n  .const %c2 = 2 : index\n"
            f"  %t = pto.alloc_tile valid_row = %c2 valid_col = %c : {tb}\n"
            f"  pto.tload ins(%src[0, 0, 0, 0, 0] : {g}) outs(%t : {tb})\n}}\n")
    for backend in BACKENDS:
        assert run_program(text, backend, {"src": src, "c": 16})[0] == "RUNTIME_VALID_REGION", backend
        assert run_program(text, backend, {"src": src, "c": 32})[0] is None, backend


# ------------------------------------------------------------------------------ acc TSTORE


def acc_store_kernel(d: str, shape: tuple[int, ...], rows: int, cols: int, src: str = "f32",
                     extra: str = "", operands: str = "", params: str = "") -> str:
    g = memref(shape, d, "NC1HWC0")
    a = f"!pto.tile<{rows}x{cols}x{src}, loc=acc, layout=NZ>"
    return (f"kernel @k(%a : {a}, %dst : {g}{params}) {{\n"
            f"  tstore %dst[0, 0, 0, 0, 0], %a{operands}{extra}\n}}\n")


def test_acc_store_to_nc1hwc0_converts_f32_to_f16_and_bf16() -> None:
    shape = (2, 2, 2, 2, 16)                       # rows N*H*W = 8, cols C1*C0 = 32
    acc = np.random.default_rng(1).standard_normal((8, 32)).astype(np.float32) * 1000
    for d, np_type in (("f16", np.float16), ("bf16", ml_dtypes.bfloat16)):
        text = acc_store_kernel(d, shape, 8, 32)
        for backend in BACKENDS:
            code, res = run_program(text, backend, {"a": acc, "dst": np.zeros(shape, np_type)})
            assert code is None, (backend, code)
            np.testing.assert_array_equal(nc1hwc0_to_matrix(res["dst"]), acc.astype(np_type), err_msg=backend)


def test_acc_store_f32_c0_of_8_and_16() -> None:
    """A 4-byte target takes C0 = 8 (32 bytes) or 16 (the public fixpipe's f32 / i32 rows)."""
    acc = np.arange(16 * 32, dtype=np.float32).reshape(16, 32) - 100
    for c0 in (8, 16):
        shape = (1, 32 // c0, 4, 4, c0)
        text = acc_store_kernel("f32", shape, 16, 32)
        assert codes(text, "a3") == []
        for backend in BACKENDS:
            code, res = run_program(text, backend, {"a": acc, "dst": np.zeros(shape, np.float32)})
            assert code is None, (backend, code)
            np.testing.assert_array_equal(nc1hwc0_to_matrix(res["dst"]), acc, err_msg=backend)


def test_acc_store_relu_prequant_and_atomic() -> None:
    shape = (1, 1, 2, 2, 32)                       # i8: C0 = 32
    acc = np.array([[-3, 5, 100, 250] * 8] * 4, np.int32)
    acc[1, 0] = -1000
    scalar = np.float32(0.5)
    text = acc_store_kernel("i8", shape, 4, 32, src="i32", operands=", %s", extra=" {relu = RELU}",
                            params=", %s : f32")
    want = np.clip(np.round(np.maximum(acc, 0) * 0.5), -128, 127).astype(np.int8)   # 2.5 -> 2, 125, 127
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"a": acc, "dst": np.zeros(shape, np.int8), "s": scalar})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(nc1hwc0_to_matrix(res["dst"]), want, err_msg=backend)
    shape = (1, 2, 1, 2, 16)
    acc = np.ones((2, 32), np.float32) * 1.5
    old = np.full(shape, 2.0, np.float16)
    text = acc_store_kernel("f16", shape, 2, 32, extra=" {atomic = ADD}")
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"a": acc, "dst": old})
        assert code is None, (backend, code)
        assert (res["dst"] == np.float16(3.5)).all(), backend


def test_tstore_fp_to_nc1hwc0_scales_per_column() -> None:
    shape = (1, 1, 4, 4, 32)
    acc = np.arange(16 * 32, dtype=np.int32).reshape(16, 32) - 60
    fp = (np.arange(32, dtype=np.float32) % 4) * 0.5
    g = memref(shape, "i8", "NC1HWC0")
    a, f = "!pto.tile<16x32xi32, loc=acc, layout=NZ>", "!pto.tile<1x32xf32, loc=scaling>"
    text = (f"kernel @k(%a : {a}, %fp : {f}, %dst : {g}) {{\n"
            f"  tstore_fp %dst[0, 0, 0, 0, 0], %a, %fp\n}}\n")
    want = np.clip(np.round(acc.astype(np.float32) * fp), -128, 127).astype(np.int8)
    assert codes(text, "a2") == []
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"a": acc, "fp": fp.reshape(1, 32), "dst": np.zeros(shape, np.int8)})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(nc1hwc0_to_matrix(res["dst"]), want, err_msg=backend)


# ------------------------------------------------------------------------------ verifier


def test_static_rules() -> None:
    ok = load_kernel("NC1HWC0", (1, 2, 2, 2, 16), "f16", 4, 32, "NZ")
    assert codes(ok) == []
    assert codes(load_kernel("NC1HWC0", (1, 2, 2, 2, 8), "f16", 4, 16, "NZ")) == ["STRUCT_SHAPE"]   # C0 8 for f16
    assert codes(load_kernel("NC1HWC0", (1, 2, 2, 2, 16), "f16", 4, 16, "NZ")) == ["STRUCT_VALID_REGION"]
    assert codes(load_kernel("NC1HWC0", (1, 2, 2, 2, 16), "f16", 4, 32, "ND")) == ["LEGAL_LAYOUT"]  # not NZ
    assert codes(load_kernel("FRACTAL_Z", (1, 1, 1, 16, 16), "f16", 16, 16, "NZ")) == ["LEGAL_LAYOUT"]  # not ZN
    assert codes(load_kernel("NC1HWC0", (1, 2, 2, 2, 16), "f16", 4, 32, "NZ",
                             idx="0, 1, 0, 0, 0")) == ["STRUCT_OOB"]
    g = "!pto.memref<1x2x2x2x4xi64, layout=NC1HWC0>"
    text = f"kernel @k(%src : {g}) {{\n  %t = tload %src[0, 0, 0, 0, 0] : ({g}) -> !pto.tile<4x8xi64, loc=mat, layout=NZ>\n}}\n"
    assert "LEGAL_DTYPE" in codes(text)
    g = "!pto.memref<2x2x16xf16, layout=NC1HWC0>"
    text = f"kernel @k(%src : {g}) {{\n  %t = tload %src[0, 0, 0] : ({g}) -> !pto.tile<2x32xf16, loc=mat, layout=NZ>\n}}\n"
    assert codes(text) == ["STRUCT_SHAPE"]                                                  # rank 3
    # a vec tile: the conv loads fill mat tiles only
    g = memref((1, 2, 2, 2, 16), "f16", "NC1HWC0")
    text = f"kernel @k(%src : {g}) {{\n  %t = tload %src[0, 0, 0, 0, 0] : ({g}) -> !pto.tile<4x32xf16, layout=NZ>\n}}\n"
    assert codes(text) == ["LEGAL_LAYOUT"]


def test_store_rules() -> None:
    assert codes(acc_store_kernel("f16", (1, 2, 2, 2, 16), 4, 32)) == []
    assert codes(acc_store_kernel("f16", (1, 2, 2, 2, 16), 4, 16)) == ["STRUCT_VALID_REGION"]
    assert codes(acc_store_kernel("f32", (1, 2, 2, 2, 4), 4, 8)) == ["STRUCT_SHAPE"]       # f32 C0 4
    # from a vec tile: no store path; FRACTAL_Z is never written
    g = memref((1, 2, 2, 2, 16), "f16", "NC1HWC0")
    v = "!pto.tile<4x32xf16, layout=NZ>"
    assert codes(f"kernel @k(%v : {v}, %d : {g}) {{\n  tstore %d[0, 0, 0, 0, 0], %v\n}}\n") == ["LEGAL_LAYOUT"]
    g = memref((1, 1, 1, 16, 16), "f16", "FRACTAL_Z")
    a = "!pto.tile<16x16xf32, loc=acc, layout=NZ>"
    assert codes(f"kernel @k(%a : {a}, %d : {g}) {{\n  tstore %d[0, 0, 0, 0, 0], %a\n}}\n") == ["LEGAL_LAYOUT"]


@pytest.mark.parametrize("profile, load_nc1hwc0, load_z3d, store", [
    ("a2", True, True, True), ("a3", True, True, True), ("a5", True, False, False),
    ("a6", True, False, False), ("kirin9030", True, False, False), ("kirinX90", False, False, False)])
def test_profiles(profile: str, load_nc1hwc0: bool, load_z3d: bool, store: bool) -> None:
    """The public headers' per-target sets: CheckConvTileData's same-layout loads (a2/a3 add
    FRACTAL_Z_3D) and the a2/a3 acc store to NC1HWC0."""
    load = load_kernel("NC1HWC0", (1, 2, 2, 2, 16), "f16", 4, 32, "NZ")
    assert ("LEGAL_LAYOUT" not in codes(load, profile)) == load_nc1hwc0
    g = memref((1, 1, 1, 16, 16), "f16", "FRACTAL_Z_3D")
    z3d = (f"kernel @k(%src : {g}) {{\n  %t = tload %src[0, 0, 0, 0, 0] : ({g}) -> "
           "!pto.tile<16x16xf16, loc=mat, layout=ZN>\n}\n")
    assert ("LEGAL_LAYOUT" not in codes(z3d, profile)) == load_z3d
    st = acc_store_kernel("f16", (1, 2, 2, 2, 16), 4, 32)
    assert ("LEGAL_LAYOUT" not in codes(st, profile)) == store
