"""The scalar pre-quantising forms (preQuantScalar) of TMOV, TEXTRACT, TINSERT and TSTORE:
hand-computed golden values, reference against llvm, verifier rules per profile and the public
spelling through parse, print and bytecode."""
from __future__ import annotations

import functools
import pathlib

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
import openpto.isa as I
from openpto.isa.attrs import ReluMode
from openpto.assembler.bytecode import dump, load_bytes
from openpto.assembler.printer import print_module
from openpto.assembler.verifier import diagnose
from openpto.isa.values import GlobalRef

from llvm_support import assert_same_bits
from scale_support import codes
from tile_support import corner_tile

ACC = "!pto.tile<16x32x{}, loc=acc, layout=NZ>"
MAT = "!pto.tile<16x32x{}, loc=mat, layout=NZ>"
NP = {"f32": np.float32, "i32": np.int32, "i8": np.int8, "u8": np.uint8, "f16": np.float16,
      "bf16": ml_dtypes.bfloat16}


#: a tile of the given type: ``data`` in its top-left corner, 9 everywhere else
tile = functools.partial(corner_tile, fill=9)


# ------------------------------------------------------------------------------ golden values


def test_tmov_f32_acc_to_i8_halves_rounds_even_and_saturates() -> None:
    src = tile(ACC.format("f32"), [[1.5, -2.25, 5.0, -7.0, 300.0, -300.0, np.nan, np.inf],
                                   [0.5, -0.5, 1.0, 3.0, 254.0, 255.0, -np.inf, -1e-30]], valid=(2, 8))
    dst = tile(MAT.format("i8"))
    I.get("TMOV").execute(dst=dst, src=src, preQuantScalar=0.5)
    # x * 0.5 = 0.75 -1.125 2.5 -3.5 150 -150 nan inf | 0.25 -0.25 0.5 1.5 127 127.5 -inf -5e-31:
    # nearest-even (2.5 -> 2, -3.5 -> -4, 0.5 -> 0, 1.5 -> 2, 127.5 -> 128 -> 127), clamp, NaN -> 0
    np.testing.assert_array_equal(dst.data[:2, :8], [[1, -1, 2, -4, 127, -128, 0, 127],
                                                     [0, 0, 0, 2, 127, 127, -128, 0]])
    assert (dst.data[2:] == 9).all() and (dst.data[:, 8:] == 9).all()


def test_tmov_relu_applies_after_the_scale() -> None:
    src = tile(ACC.format("i32"), [[-4, 4, -3, 7]], valid=(1, 4))
    dst = tile(MAT.format("u8"))
    # a negative scale: -4 * -0.75 = 3 survives the ReLU only because scaling comes first
    I.get("TMOV").execute(dst=dst, src=src, preQuantScalar=-0.75, relu=ReluMode.RELU)
    np.testing.assert_array_equal(dst.data[0, :4], [3, 0, 2, 0])     # 2.25 -> 2
    I.get("TMOV").execute(dst=dst, src=src, preQuantScalar=-0.75)
    np.testing.assert_array_equal(dst.data[0, :4], [3, 0, 2, 0])     # u8 clamps -3, -5.25 to 0
    big = tile(ACC.format("i32"), [[1000, -1]], valid=(1, 2))
    I.get("TMOV").execute(dst=dst, src=big, preQuantScalar=1.0)
    np.testing.assert_array_equal(dst.data[0, :2], [255, 0])


def test_i32_to_f16_rounds_the_f32_product_once_more() -> None:
    # 16777217 -> f32 16777216; * 2**-14 = 1024 exactly; 4097 * 0.5 = 2048.5 -> f16 2048 (ties even)
    src = tile(ACC.format("i32"), [[16777217, 4097, -3]], valid=(1, 3))
    dst = tile(MAT.format("f16"))
    I.get("TMOV").execute(dst=dst, src=src, preQuantScalar=2.0**-14)
    # 4097 * 2**-14 = 1024.25 f16 ulps at 0.25 (ulp 2**-12): rounds down to 0.25
    np.testing.assert_array_equal(dst.data[0, :3].astype(np.float64), [1024.0, 0.25, -3 * 2.0**-14])
    I.get("TMOV").execute(dst=dst, src=src, preQuantScalar=0.5)
    # 8388608 is beyond f16's range: +inf (IEEE overflow, as TSTORE_FP)
    np.testing.assert_array_equal(dst.data[0, :3].astype(np.float64), [np.inf, 2048.0, -1.5])


def test_textract_and_tinsert_scale_the_window() -> None:
    vals = np.arange(32 * 32, dtype=np.int32).reshape(32, 32) - 512
    src = tile("!pto.tile<32x32xi32, loc=acc, layout=NZ>", vals)
    dst = tile("!pto.tile<16x32xi8, loc=mat, layout=NZ>")
    I.get("TEXTRACT").execute(dst=dst, src=src, r0=15, c0=0, preQuantScalar=0.25)
    # rows 15..30: values -32 .. 479, / 4, nearest even, clamp to [-128, 127]
    want = np.clip(np.rint(vals[15:31, :] / 4.0), -128, 127)
    np.testing.assert_array_equal(dst.data, want)
    small = tile("!pto.tile<16x16xi32, loc=acc, layout=NZ>", [[6, -6], [10, 3]], valid=(2, 2))
    big = tile("!pto.tile<32x32xf16, loc=mat, layout=NZ>", fill=-1)
    I.get("TINSERT").execute(dst=big, src=small, r0=3, c0=5, preQuantScalar=-0.5, relu=ReluMode.RELU)
    np.testing.assert_array_equal(big.data[3:5, 5:7].astype(np.float64), [[0.0, 3.0], [0.0, 0.0]])
    mask = np.ones((32, 32), bool)
    mask[3:5, 5:7] = False
    assert (big.data[mask] == -1).all()


def test_tstore_scalar_form() -> None:
    acc = tile(ACC.format("i32"), [[1000, -3, 7, 254], [-1000, 1, 0, -255]], valid=(2, 4))
    g = np.zeros((3, 5), np.uint8)
    I.get("TSTORE").execute(dst=GlobalRef(g, (0, 1)), src=acc, preQuantScalar=0.5)
    # 500 -1.5 3.5 127 | -500 0.5 0 -127.5 -> nearest even, u8 clamps
    np.testing.assert_array_equal(g, [[0, 255, 0, 4, 127], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]])
    g8 = np.zeros((2, 4), np.int8)
    I.get("TSTORE").execute(dst=GlobalRef(g8, (0, 0)), src=acc, preQuantScalar=0.5)
    np.testing.assert_array_equal(g8, [[127, -2, 4, 127], [-128, 0, 0, -128]])


# ------------------------------------------------------------------------------ verifier



def _tmov(dst: str, src: str, scale: bool, profile: str = "cpu", extra: str = "") -> list[str]:
    d, s = MAT.format(dst), ACC.format(src)
    ops, types = ("%src, %s", f"({s}, f32)") if scale else ("%src", f"({s})")
    text = (f"kernel @k(%dst : {d}, %src : {s}, %s : f32) {{\n"
            f"  %dst = tmov {ops}{extra} : {types} -> {d}\n}}\n")
    return codes(text, profile)


@pytest.mark.parametrize("dst,src,a2,a5", [("i8", "f32", True, True), ("u8", "f32", False, True),
                                           ("f16", "i32", True, True), ("bf16", "i32", False, True),
                                           ("u8", "i32", True, True)])
def test_scaled_pairs_per_profile(dst: str, src: str, a2: bool, a5: bool) -> None:
    assert _tmov(dst, src, True) == []
    assert (_tmov(dst, src, True, "a2") == []) is a2
    assert (_tmov(dst, src, True, "a3") == []) is a2
    assert (_tmov(dst, src, True, "a5") == []) is a5
    if not a2:
        assert _tmov(dst, src, True, "a2") == ["LEGAL_DTYPE"]


def test_missing_scale_wrong_pair_and_wrong_source() -> None:
    assert _tmov("i8", "f32", False) == ["STRUCT_MISSING_OPERAND"]
    assert _tmov("f16", "i32", False) == ["STRUCT_MISSING_OPERAND"]
    assert _tmov("f16", "f32", False) == []                        # the plain down-conversion
    assert _tmov("i32", "i32", True) == ["LEGAL_DTYPE"]            # no scaled same-type move
    assert _tmov("i16", "i32", True) == ["LEGAL_DTYPE"]            # the shift mode is not declared
    v = "!pto.tile<16x32xf16>"
    text = (f"kernel @k(%dst : {v}, %src : {v}, %s : f32) {{\n"
            f"  %dst = tmov %src, %s : ({v}, f32) -> {v}\n}}\n")
    assert codes(text) == ["LEGAL_DTYPE", "LEGAL_LOCATION"]      # no scaled f16 -> f16; not from acc
    half = "!pto.tile<8x32xf32>"
    text = (f"kernel @k(%dst : {half}, %src : {ACC.format('f32')}, %s : f32) {{\n"
            f"  %dst = tmov %src, %s {{mode = #pto.acc_to_vec<DualModeSplitM>}} : ({ACC.format('f32')}, f32) -> {half}\n}}\n")
    assert "STRUCT_ATTR_VALUE" in codes(text)                   # no scale in the dual modes


def test_scale_must_be_f32() -> None:
    d, s = MAT.format("i8"), ACC.format("f32")
    text = (f"kernel @k(%dst : {d}, %src : {s}, %s : f16) {{\n"
            f"  %dst = tmov %src, %s : ({s}, f16) -> {d}\n}}\n")
    assert codes(text) == ["LEGAL_DTYPE"]


# ------------------------------------------------------------------------------ assembly


SPELLINGS = [
    f"kernel @k(%dst : {MAT.format('i8')}, %src : {ACC.format('f32')}) {{\n"
    f"  %dst = tmov %src, 0x3F000000 {{relu = #pto.relu<RELU>}} : ({ACC.format('f32')}, f32) -> {MAT.format('i8')}\n}}\n",
    "kernel @k(%dst : !pto.tile<16x32xu8, loc=mat, layout=NZ>, %src : !pto.tile<32x32xi32, loc=acc, layout=NZ>,"
    " %r : index, %s : f32) {\n"
    "  .const %c0 = 0 : index\n"
    "  %dst = textract %src, %s, %r, %c0 : (!pto.tile<32x32xi32, loc=acc, layout=NZ>, f32, index, index)"
    " -> !pto.tile<16x32xu8, loc=mat, layout=NZ>\n}\n",
    "kernel @k(%dst : !pto.tile<32x32xf16, loc=mat, layout=NZ>, %src : !pto.tile<16x16xi32, loc=acc, layout=NZ>,"
    " %r : index, %c : index) {\n"
    "  %dst = tinsert %src, -0.125, %r, %c {relu = #pto.relu<RELU>} : (!pto.tile<16x16xi32, loc=acc, layout=NZ>,"
    " f32, index, index) -> !pto.tile<32x32xf16, loc=mat, layout=NZ>\n}\n",
    "kernel @k(%g : !pto.memref<64x64xi8>, %src : !pto.tile<16x16xi32, loc=acc, layout=NZ>) {\n"
    "  .const %c0 = 0 : index\n"
    "  tstore %g[%c0, %c0], %src, 0.25 : (!pto.memref<64x64xi8>, !pto.tile<16x16xi32, loc=acc, layout=NZ>, f32)\n}\n",
]


@pytest.mark.parametrize("text", SPELLINGS)
def test_public_spelling_round_trips(text: str) -> None:
    module = pto.parse(text)
    assert diagnose(module, "a2") == []
    op = next(s for s in module.kernels[0].body if hasattr(s, "instr"))
    assert "preQuantScalar" in op.args
    printed = print_module(module)
    again = pto.parse(printed)
    assert print_module(again) == printed
    back = load_bytes(dump(module))
    assert print_module(back) == printed
    op2 = next(s for s in back.kernels[0].body if hasattr(s, "instr"))
    assert set(op2.args) == set(op.args)


def test_textract_binds_the_scale_before_the_offsets() -> None:
    module = pto.parse(SPELLINGS[1])
    op = next(s for s in module.kernels[0].body if hasattr(s, "instr") and s.instr.mnemonic == "TEXTRACT")
    assert op.args["preQuantScalar"].name == "s" and op.args["r0"].name == "r"


# ------------------------------------------------------------------------------ reference vs llvm


def _acc_values(rng: np.random.Generator, d: str, shape: tuple[int, int]) -> np.ndarray:
    if d == "i32":
        v = rng.integers(-2**31, 2**31 - 1, shape, dtype=np.int64)
        v[0, :6] = [0, 1, -1, 255, -256, 2**24 + 1]
        small = rng.integers(-600, 600, shape)
        return np.where(rng.random(shape) < 0.7, small, v).astype(np.int32)
    v = (rng.standard_normal(shape) * 300).astype(np.float32)
    v[0, :8] = [np.nan, np.inf, -np.inf, -0.0, 0.5, 1.5, 2.5, -2.5]
    return v


@pytest.mark.parametrize("dst,src", [(d, s) for s in ("f32", "i32") for d in ("i8", "u8", "f16", "bf16")])
@pytest.mark.parametrize("relu", [False, True])
def test_tmov_reference_and_llvm_agree(dst: str, src: str, relu: bool, tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(5)
    s = "!pto.tile<16x32x%s, loc=acc, layout=NZ, valid=13x29>" % src
    d = "!pto.tile<16x32x%s>" % dst
    attr = " {relu = #pto.relu<RELU>}" if relu else ""
    text = (f"kernel @k(%dst : {d}, %src : {s}, %s : f32) {{\n"
            f"  %dst = tmov %src, %s{attr} : ({s}, f32) -> {d}\n}}\n")
    for scale in (np.float32(0.5), np.float32(-3.0e-3), np.float32(np.inf)):
        args = {"dst": np.zeros((16, 32), NP[dst]), "src": _acc_values(rng, src, (16, 32)), "s": scale}
        assert_same_bits(text, args, "dst", tmp_path)


def test_windowed_and_store_forms_agree(tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(9)
    src = _acc_values(rng, "i32", (32, 32))
    text = ("kernel @k(%dst : !pto.tile<16x32xu8, loc=mat, layout=NZ>, %src : !pto.tile<32x32xi32, loc=acc, "
            "layout=NZ>, %r : index, %s : f32) {\n  .const %c0 = 0 : index\n"
            "  %dst = textract %src, %s, %r, %c0 {relu = #pto.relu<RELU>} : (!pto.tile<32x32xi32, loc=acc, "
            "layout=NZ>, f32, index, index) -> !pto.tile<16x32xu8, loc=mat, layout=NZ>\n}\n")
    assert_same_bits(text, {"dst": np.zeros((16, 32), np.uint8), "src": src, "r": 7, "s": np.float32(0.01)}, "dst", tmp_path)
    text = ("kernel @k(%dst : !pto.tile<32x32xbf16, loc=mat, layout=NZ>, %src : !pto.tile<16x16xf32, loc=acc, "
            "layout=NZ>, %s : f32) {\n  .const %c3 = 3 : index\n"
            "  %dst = tinsert %src, %s, %c3, %c3 : (!pto.tile<16x16xf32, loc=acc, layout=NZ>, f32, index, index)"
            " -> !pto.tile<32x32xbf16, loc=mat, layout=NZ>\n}\n")
    assert_same_bits(text, {"dst": np.ones((32, 32), ml_dtypes.bfloat16), "src": _acc_values(rng, "f32", (16, 16)),
                 "s": np.float32(1.0 / 3)}, "dst", tmp_path)
    for d in ("i8", "u8", "f16", "bf16"):
        text = (f"kernel @k(%g : !pto.memref<40x40x{d}>, %src : !pto.tile<16x32xi32, loc=acc, layout=NZ, "
                f"valid=11x30>, %s : f32) {{\n  .const %c1 = 1 : index\n"
                f"  tstore %g[%c1, %c1], %src, %s : (!pto.memref<40x40x{d}>, !pto.tile<16x32xi32, loc=acc, "
                f"layout=NZ, valid=11x30>, f32)\n}}\n")
        assert_same_bits(text, {"g": np.zeros((40, 40), NP[d]), "src": _acc_values(rng, "i32", (16, 32)),
                     "s": np.float32(-0.0625)}, "g", tmp_path)


def test_set_quant_state_is_not_read_by_the_moves() -> None:
    """The doc's promise: TMOV's scale is its operand; recorded SET_QUANT state changes nothing."""
    state: dict = {}
    I.get("SET_QUANT_SCALAR").execute(preQuantScalar=4.0, OutType=I.get("SET_QUANT_SCALAR").attr("OutType").type.I8,
                                      state=state)
    assert "state" not in I.get("TMOV").semantics.__code__.co_varnames
    src = tile(ACC.format("f32"), [[3.0]], valid=(1, 1))
    dst = tile(MAT.format("i8"))
    I.get("TMOV").execute(dst=dst, src=src, preQuantScalar=1.0)
    assert dst.data[0, 0] == 3 and state["quant_scalar"]["scale"] == 4.0
