"""The NDC1HWC0 convolution layout of global tensors in TLOAD, TSTORE and TSTORE_FP.

The public GlobalTensor is rank 5 [N, D, C1, H, W] with a W stride of C0 elements, C0 implicit;
openpto holds it as [N, D, C1, H, W*C0] (decision 'Convolution global layouts'). Expectations
come from the feature-map index map written here element by element (the public simulator's
formula): row (n, h, w), column (d, c1, c0)."""
from __future__ import annotations

import numpy as np
import pytest

from llvm_support import run_program
from test_conv_layouts import codes, load_kernel, memref

BACKENDS = ("reference", "llvm")


def ndc1hwc0_to_matrix(t: np.ndarray, c0: int) -> np.ndarray:
    """The (N*H*W) x (D*C1*C0) feature map an [N, D, C1, H, W*C0] tensor holds."""
    n_, d_, c1_, h_, wc_ = t.shape
    w_ = wc_ // c0
    out = np.zeros((n_ * h_ * w_, d_ * c1_ * c0), t.dtype)
    for n in range(n_):
        for d in range(d_):
            for c1 in range(c1_):
                for h in range(h_):
                    for w in range(w_):
                        for k in range(c0):
                            out[(n * h_ + h) * w_ + w, (d * c1_ + c1) * c0 + k] = t[n, d, c1, h, w * c0 + k]
    return out


def acc_store(d: str, shape: tuple[int, ...], rows: int, cols: int, src: str = "f32", extra: str = "",
              operands: str = "", params: str = "") -> str:
    g = memref(shape, d, "NDC1HWC0")
    a = f"!pto.tile<{rows}x{cols}x{src}, loc=acc, layout=NZ>"
    return (f"kernel @k(%a : {a}, %dst : {g}{params}) {{\n"
            f"  tstore %dst[0, 0, 0, 0, 0], %a{operands}{extra}\n}}\n")


# ------------------------------------------------------------------------------ TLOAD


@pytest.mark.parametrize("d, np_type", [("f16", np.float16), ("f32", np.float32), ("i8", np.int8)])
def test_load_reads_the_feature_map(d: str, np_type: type) -> None:
    c0 = 32 // np.dtype(np_type).itemsize
    shape = (2, 2, 3, 2, 4 * c0)                   # N, D, C1, H, W*C0 with W = 4
    src = (np.arange(np.prod(shape)) % 113).astype(np_type).reshape(shape)
    rows, cols = 2 * 2 * 4, 2 * 3 * c0
    want = ndc1hwc0_to_matrix(src, c0)
    text = load_kernel("NDC1HWC0", shape, d, rows, cols, "NZ")
    assert codes(text, "a3") == []
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"src": src, "out": np.zeros((rows, cols), np_type)})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(res["out"], want, err_msg=backend)


def test_load_hand_worked() -> None:
    """[1, 2, 1, 1, 2*16] f16 holding 0..63: row w = 1 is depth 0's channels from elements
    16..31, then depth 1's from 48..63; row 0 starts 0..15, then 32..47."""
    src = np.arange(64, dtype=np.float16).reshape(1, 2, 1, 1, 32)
    text = load_kernel("NDC1HWC0", src.shape, "f16", 2, 32, "NZ")
    for backend in BACKENDS:
        _, res = run_program(text, backend, {"src": src, "out": np.zeros((2, 32), np.float16)})
        assert res["out"][1].tolist() == list(range(16, 32)) + list(range(48, 64)), backend
        assert res["out"][0].tolist() == list(range(0, 16)) + list(range(32, 48)), backend


def test_load_through_a_strided_view() -> None:
    """The public tensor's N/D/C1/H strides are free; a view with padded H rows and a gap between
    depths reads through them."""
    big = (np.arange(2 * 3 * 2 * 5 * 32) % 89).astype(np.float16).reshape(2, 3, 2, 5, 32)
    view = big[:, ::2, :, 1:4]                     # N 2, D 2 (every other), C1 2, H 3, W*C0 32
    g = "!pto.memref<2x2x2x3x32xf16, strides=[?, ?, ?, ?, ?], layout=NDC1HWC0>"
    t = "!pto.tile<12x64xf16, loc=mat, layout=NZ>"
    out = "!pto.memref<12x64xf16, layout=NZ>"
    text = (f"kernel @k(%src : {g}, %out : {out}) {{\n  %t = tload %src[0, 0, 0, 0, 0] : ({g}) -> {t}\n"
            f"  tstore %out[0, 0], %t : ({out}, {t})\n}}\n")
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"src": view, "out": np.zeros((12, 64), np.float16)})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(res["out"], ndc1hwc0_to_matrix(np.ascontiguousarray(view), 16),
                                      err_msg=backend)


def test_run_time_faults() -> None:
    shape = (1, 2, 1, 2, 32)
    src = np.zeros(shape, np.float16)
    g = memref(shape, "f16", "NDC1HWC0")
    tb = "!pto.tile_buf<mat, 4x32xf16, layout=NZ, valid=?x?>"
    text = (f"kernel @k(%src : {g}, %c : index, %i : index) {{\n  .const %c4 = 4 : index\n"
            f"  %t = pto.alloc_tile valid_row = %c4 valid_col = %c : {tb}\n"
            f"  pto.tload ins(%src[0, %i, 0, 0, 0] : {g}) outs(%t : {tb})\n}}\n")
    for backend in BACKENDS:
        assert run_program(text, backend, {"src": src, "c": 16, "i": 0})[0] == "RUNTIME_VALID_REGION", backend
        assert run_program(text, backend, {"src": src, "c": 32, "i": 1})[0] == "RUNTIME_OOB", backend
        assert run_program(text, backend, {"src": src, "c": 32, "i": 0})[0] is None, backend


# ------------------------------------------------------------------------------ acc TSTORE / TSTORE_FP


@pytest.mark.parametrize("d, np_type, c0", [("f16", np.float16, 16), ("f32", np.float32, 8)])
def test_acc_store_writes_the_feature_map(d: str, np_type: type, c0: int) -> None:
    shape = (2, 2, 1, 2, 4 * c0)                   # rows N*H*W = 16, cols D*C1*C0
    cols = 2 * c0
    acc = np.random.default_rng(3).standard_normal((16, cols)).astype(np.float32) * 100
    text = acc_store(d, shape, 16, cols)
    assert codes(text, "a2") == []
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"a": acc, "dst": np.zeros(shape, np_type)})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(ndc1hwc0_to_matrix(res["dst"], c0), acc.astype(np_type), err_msg=backend)


def test_acc_store_relu_prequant_and_atomic() -> None:
    shape = (1, 1, 1, 2, 2 * 32)                   # i8: C0 = 32, W = 2, H = 2: 4 x 32
    acc = np.array([[-3, 5, 100, 250] * 8] * 4, np.int32)
    text = acc_store("i8", shape, 4, 32, src="i32", operands=", %s", extra=" {relu = RELU}", params=", %s : f32")
    want = np.clip(np.round(np.maximum(acc, 0) * 0.5), -128, 127).astype(np.int8)
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"a": acc, "dst": np.zeros(shape, np.int8), "s": np.float32(0.5)})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(ndc1hwc0_to_matrix(res["dst"], 32), want, err_msg=backend)
    shape = (1, 2, 1, 1, 32)
    old = np.arange(64, dtype=np.float16).reshape(shape)
    text = acc_store("f16", shape, 2, 32, extra=" {atomic = ADD}")
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"a": np.full((2, 32), 0.5, np.float32), "dst": old.copy()})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(res["dst"], old + np.float16(0.5), err_msg=backend)


def test_tstore_fp_scales_per_column() -> None:
    shape = (1, 2, 1, 4, 4 * 16)                   # rows H*W = 16, cols D*C1*C0 = 32
    acc = np.arange(16 * 32, dtype=np.int32).reshape(16, 32) - 90
    fp = (np.arange(32, dtype=np.float32) % 3) * 0.25
    g = memref(shape, "f16", "NDC1HWC0")
    a, f = "!pto.tile<16x32xi32, loc=acc, layout=NZ>", "!pto.tile<1x32xf32, loc=scaling>"
    text = f"kernel @k(%a : {a}, %fp : {f}, %dst : {g}) {{\n  tstore_fp %dst[0, 0, 0, 0, 0], %a, %fp\n}}\n"
    assert codes(text, "a3") == []
    want = (acc.astype(np.float32) * fp).astype(np.float16)
    for backend in BACKENDS:
        code, res = run_program(text, backend, {"a": acc, "fp": fp.reshape(1, 32), "dst": np.zeros(shape, np.float16)})
        assert code is None, (backend, code)
        np.testing.assert_array_equal(ndc1hwc0_to_matrix(res["dst"], 16), want, err_msg=backend)


# ------------------------------------------------------------------------------ verifier


def test_static_rules() -> None:
    assert codes(load_kernel("NDC1HWC0", (1, 2, 1, 2, 32), "f16", 4, 32, "NZ")) == []
    assert "STRUCT_SHAPE" in codes(load_kernel("NDC1HWC0", (1, 2, 1, 2, 24), "f16", 2, 32, "NZ"))  # not W*16
    assert codes(load_kernel("NDC1HWC0", (1, 2, 1, 2, 32), "f16", 4, 16, "NZ")) == ["STRUCT_VALID_REGION"]
    assert codes(load_kernel("NDC1HWC0", (1, 2, 1, 2, 32), "f16", 4, 32, "ND")) == ["LEGAL_LAYOUT"]
    assert codes(load_kernel("NDC1HWC0", (1, 2, 1, 2, 32), "f16", 4, 32, "NZ", idx="0, 0, 0, 1, 0")) \
        == ["STRUCT_OOB"]
    g = "!pto.memref<1x2x1x2x?xf16, layout=NDC1HWC0>"                 # W*C0 must be static
    text = (f"kernel @k(%src : {g}) {{\n  %t = tload %src[0, 0, 0, 0, 0] : ({g}) -> "
            "!pto.tile<4x32xf16, loc=mat, layout=NZ>\n}\n")
    assert "STRUCT_SHAPE" in codes(text)
    # an i32 acc store: the a2/a3 fixpipe writes 16-element groups, the simulator 8
    assert codes(acc_store("i32", (1, 1, 1, 2, 16), 4, 8, src="i32")) == ["LEGAL_DTYPE"]
    assert codes(acc_store("f32", (1, 1, 1, 2, 16), 4, 8)) == []
    assert "STRUCT_VALID_REGION" in codes(acc_store("f32", (1, 1, 1, 2, 32), 4, 16))   # f32 C0 is 8: 8x8


@pytest.mark.parametrize("profile, load, store", [
    ("cpu", True, True), ("a2", True, True), ("a3", True, True), ("a5", False, False),
    ("a6", False, False), ("kirin9030", False, False), ("kirinX90", False, False)])
def test_profiles(profile: str, load: bool, store: bool) -> None:
    """CheckConvTileData's NDC1HWC0 pair (cpu, a2/a3; kirinX90's does not compile) and the a2/a3
    TStoreAccNz2NDC1HWC0 (cpu's TStore too)."""
    ld = load_kernel("NDC1HWC0", (1, 2, 1, 2, 32), "f16", 4, 32, "NZ")
    assert ("LEGAL_LAYOUT" not in codes(ld, profile)) == load
    st = acc_store("f16", (1, 2, 1, 2, 32), 4, 32)
    assert ("LEGAL_LAYOUT" not in codes(st, profile)) == store
