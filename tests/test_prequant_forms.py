"""The pre-quantising forms per profile and their remaining public pairs: the scaled pairs each
profile converts (a form rule keyed on preQuantScalar), the vector forms' i8/u8 targets, the a5
f32 -> hifloat8 / f8e4m3 targets, TSTORE's relu (reluPreMode), and the bytecode version that the
moved TEXTRACT/TINSERT offsets needed. Expected values are worked by hand or with numpy here."""
from __future__ import annotations

import functools
import pathlib

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
import openpto.isa as I
from openpto.assembler.bytecode import dump, load_bytes
from openpto.assembler.verifier import diagnose
from openpto.conformance.cases import base_cases
from openpto.isa.attrs import ReluMode
from openpto.isa.diagnostics import BytecodeError, PTOError
from openpto.isa.docgen import page
from openpto.isa.values import GlobalRef

from llvm_support import assert_same_bits
from tile_support import corner_tile

ACC = "!pto.tile<16x32x{}, loc=acc, layout=NZ>"
MAT = "!pto.tile<16x32x{}, loc=mat, layout=NZ>"
NP = {"f32": np.float32, "i32": np.int32, "i8": np.int8, "u8": np.uint8, "f16": np.float16,
      "bf16": ml_dtypes.bfloat16, "f8e4m3": ml_dtypes.float8_e4m3fn, "hifloat8": np.uint8}


#: a tile of the given type: ``data`` in its top-left corner, 0 everywhere else
tile = functools.partial(corner_tile, fill=0)


def errors(text: str, profile: str) -> list[PTOError]:
    return list(diagnose(pto.parse(text), profile))


def tmov_text(dst: str, src: str, scaled: bool) -> str:
    d, s = MAT.format(dst), ACC.format(src)
    ops, types = ("%src, %s", f"({s}, f32)") if scaled else ("%src", f"({s})")
    return (f"kernel @k(%dst : {d}, %src : {s}, %s : f32) {{\n"
            f"  %dst = tmov {ops} : {types} -> {d}\n}}\n")


def tstore_text(dst: str, src: str, scaled: bool, attrs: str = "", loc: str = "acc") -> str:
    t = f"!pto.tile<16x32x{src}, loc={loc}, layout=NZ>" if loc == "acc" else f"!pto.tile<16x32x{src}>"
    ops, types = (", %s", ", f32") if scaled else ("", "")
    return (f"kernel @k(%g : !pto.memref<64x64x{dst}>, %src : {t}, %s : f32) {{\n  .const %c0 = 0 : index\n"
            f"  tstore %g[%c0, %c0], %src{ops}{attrs} : (!pto.memref<64x64x{dst}>, {t}{types})\n}}\n")


# ------------------------------------------------------------------------------ the scaled pairs per profile


@pytest.mark.parametrize("dst", ["f16", "bf16"])
@pytest.mark.parametrize("profile", ["a2", "a3"])
def test_a2_a3_refuse_a_scaled_f32_to_half_move(dst: str, profile: str) -> None:
    assert errors(tmov_text(dst, "f32", False), profile) == []          # the unscaled cast stays legal
    errs = errors(tmov_text(dst, "f32", True), profile)
    assert [e.code for e in errs] == ["LEGAL_DTYPE"]
    assert errs[0].actual == f"({dst}, f32)"
    # expected: exactly the four pairs the a2/a3 scalar mode converts, (dst, src)
    assert errs[0].expected == "(f16, i32); (i8, f32); (i8, i32); (u8, i32)"
    assert "preQuantScalar" in errs[0].message
    for other in ("a5", "cpu"):
        assert errors(tmov_text(dst, "f32", True), other) == []


def test_the_windowed_moves_and_the_store_follow_their_profile_tables() -> None:
    ins = ("kernel @k(%dst : !pto.tile<32x32xf16, loc=mat, layout=NZ>, %src : {s}, %s : f32) {{\n"
           "  .const %c0 = 0 : index\n  %dst = tinsert %src, %s, %c0, %c0 : ({s}, f32, index, index)"
           " -> !pto.tile<32x32xf16, loc=mat, layout=NZ>\n}}\n")
    for src, a2_ok in (("f32", False), ("i32", True)):
        text = ins.format(s=f"!pto.tile<16x16x{src}, loc=acc, layout=NZ>")
        assert (errors(text, "a2") == []) is a2_ok
        assert errors(text, "a5") == []
    assert [e.code for e in errors(tstore_text("f16", "f32", True), "a3")] == ["LEGAL_DTYPE"]
    assert errors(tstore_text("f16", "f32", False), "a3") == []
    assert errors(tstore_text("u8", "f32", True), "a3") == []          # the store's own a2/a3 pair
    assert errors(tstore_text("f16", "f32", True), "a5") == []


def test_a_pair_no_form_converts_is_reported_once() -> None:
    errs = errors(tmov_text("bf16", "i32", True), "a2")                 # outside a2's whole table
    assert [e.code for e in errs] == ["LEGAL_DTYPE"]


def test_pages_list_the_scaled_pairs_per_profile() -> None:
    text = page(I.get("TMOV"))
    section = text.split("## Element types per form")[1].split("##")[0]
    row = {line.split("|")[1].strip(): line for line in section.splitlines() if line.startswith("| ")}
    assert "(f16, i32); (i8, f32); (i8, i32); (u8, i32)" in row["a2"] and "LEGAL_DTYPE" in row["a2"]
    assert "(f16, f32)" in row["a5"] and "(hifloat8, f32)" in row["a5"] and "(f16, f32)" not in row["a3"]
    assert "## Element types per form" in page(I.get("TSTORE"))
    assert "## Element types per form" not in page(I.get("TADD"))


@pytest.mark.parametrize("mnemonic", ["TMOV", "TEXTRACT", "TINSERT", "TSTORE"])
@pytest.mark.parametrize("profile", ["a2", "a5", "cpu"])
def test_conformance_draws_only_pairs_the_profile_scales(mnemonic: str, profile: str) -> None:
    allowed = I.get(mnemonic).form_rules(profile)[0].rule
    drawn = [c for c in base_cases(I.get(mnemonic), profile).values() if c is not None and "preQuantScalar" in c.types]
    assert drawn, "no scaled case at all"
    for case in drawn:
        assert case.errors() == []
        assert allowed.allows(tuple(case.types[n].dtype for n in allowed.operands))


# ------------------------------------------------------------------------------ 8-bit float targets (a5, cpu)


def test_f8e4m3_target_rounds_even_and_saturates() -> None:
    vals = [[1.0625, 1.1875, 0.3, 500.0, -1e9, np.nan, np.inf, -3.0]]
    src = tile(ACC.format("f32"), vals, valid=(1, 8))
    dst = tile(MAT.format("f8e4m3"))
    I.get("TMOV").execute(dst=dst, src=src, preQuantScalar=1.0)
    # e4m3 steps: 0.125 in [1, 2): 1.0625 ties to 1.0 (even), 1.1875 ties to 1.25; 0.3 -> 0.3125
    # (step 2**-5 in [0.25, 0.5)); beyond 448 and -inf clamp to -448; NaN is code 0x7F
    got = dst.data[0, :8].view(np.uint8)
    assert got[5] == 0x7F
    want = [1.0, 1.25, 0.3125, 448.0, -448.0, None, 448.0, -3.0]
    for g, w in zip(dst.data[0, :8].astype(np.float64), want):
        assert w is None or g == w


def test_hifloat8_target_uses_its_conversion() -> None:
    src = tile(ACC.format("f32"), [[1.5, -0.75, 40000.0, np.nan, -2.0, 4.0]], valid=(1, 6))
    dst = tile(MAT.format("hifloat8"))
    I.get("TMOV").execute(dst=dst, src=src, preQuantScalar=2.0, relu=ReluMode.RELU)
    from openpto.isa import hifloat8
    got = hifloat8.decode(dst.data[0, :6])
    # x * 2 = 3, -1.5, 80000, NaN, -4, 8; relu zeroes the negatives; 80000 > 2**15 overflows to inf
    np.testing.assert_array_equal(got[[0, 1, 2, 4, 5]], [3.0, 0.0, np.inf, 0.0, 8.0])
    assert dst.data[0, 3] == 0x80


@pytest.mark.parametrize("profile,ok", [("cpu", True), ("a5", True), ("a2", False)])
def test_8bit_float_targets_per_profile(profile: str, ok: bool) -> None:
    for d in ("hifloat8", "f8e4m3"):
        if profile == "a2":
            assert "LEGAL_DTYPE" in {e.code for e in errors(tmov_text(d, "f32", True), profile)}
        else:
            assert errors(tmov_text(d, "f32", True), profile) == []
        assert [e.code for e in errors(tmov_text(d, "f32", False), "cpu")] == ["STRUCT_MISSING_OPERAND"]
    assert "LEGAL_DTYPE" in {e.code for e in errors(tmov_text("f8e4m3", "i32", True), "cpu")}


# ------------------------------------------------------------------------------ vector forms: i8/u8 targets


def test_tmov_fp_i8_u8_targets_scale_per_column() -> None:
    src = tile(ACC.format("i32"), [[100, 100, -7, 1000], [3, -300, 5, 2]], valid=(2, 4))
    fp = tile("!pto.tile<1x32xf32, loc=scaling>", [[0.5, -1.0, 0.25, 2.0]])
    dst = tile(MAT.format("u8"))
    I.get("TMOV_FP").execute(dst=dst, src=src, fp=fp)
    # 50 -100 -1.75 2000 | 1.5 300 1.25 4 -> nearest even, clamp to [0, 255]
    np.testing.assert_array_equal(dst.data[:2, :4], [[50, 0, 0, 255], [2, 255, 1, 4]])
    dst8 = tile(MAT.format("i8"))
    I.get("TMOV_FP").execute(dst=dst8, src=src, fp=fp, relu=ReluMode.RELU)
    np.testing.assert_array_equal(dst8.data[:2, :4], [[50, 0, 0, 127], [2, 127, 1, 4]])


def test_vector_form_pairs_per_profile() -> None:
    def text(d: str, s: str) -> str:
        a, m = ACC.format(s), MAT.format(d)
        return (f"kernel @k(%dst : {m}, %src : {a}, %fp : !pto.tile<1x32xf32, loc=scaling>) {{\n"
                f"  %dst = tmov_fp %src, %fp : ({a}, !pto.tile<1x32xf32, loc=scaling>) -> {m}\n}}\n")
    for d, s, a2 in (("i8", "f32", True), ("u8", "f32", False), ("i8", "i32", True), ("u8", "i32", True),
                     ("f16", "i32", True), ("hifloat8", "f32", False), ("f8e4m3", "f32", False)):
        assert (errors(text(d, s), "a2") == []) is a2, (d, s)
        assert errors(text(d, s), "a5") == [], (d, s)


# ------------------------------------------------------------------------------ TSTORE relu


def test_tstore_relu_on_the_fixpipe() -> None:
    acc = tile(ACC.format("f32"), [[-1.5, 2.5, -0.0, np.nan, 70000.0]], valid=(1, 5))
    g = np.full((2, 6), 7, np.float16)
    I.get("TSTORE").execute(dst=GlobalRef(g, (0, 1)), src=acc, relu=ReluMode.RELU)
    np.testing.assert_array_equal(g[0, 1:].astype(np.float64)[[0, 1, 2, 4]], [0.0, 2.5, 0.0, np.inf])
    assert np.isnan(g[0, 4]) and not np.signbit(g[0, 3]) and g[0, 0] == 7
    iacc = tile(ACC.format("i32"), [[-5, 5, 0]], valid=(1, 3))
    gi = np.full((1, 3), 9, np.int32)
    I.get("TSTORE").execute(dst=GlobalRef(gi, (0, 0)), src=iacc, relu=ReluMode.RELU)
    np.testing.assert_array_equal(gi, [[0, 5, 0]])
    g8 = np.zeros((1, 3), np.int8)          # scaled: relu after the (negative) scale
    I.get("TSTORE").execute(dst=GlobalRef(g8, (0, 0)), src=iacc, preQuantScalar=-1.0, relu=ReluMode.RELU)
    np.testing.assert_array_equal(g8, [[5, 0, 0]])


def test_tstore_relu_needs_an_acc_source() -> None:
    attrs = " {relu = #pto.relu<RELU>}"
    assert errors(tstore_text("f32", "f32", False, attrs), "cpu") == []
    assert [e.code for e in errors(tstore_text("f32", "f32", False, attrs, loc="vec"), "cpu")] == ["LEGAL_LOCATION"]


# ------------------------------------------------------------------------------ reference vs llvm


def _f32_values(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    v = (rng.standard_normal(shape) * rng.choice([0.01, 1.0, 300.0, 1e5], shape)).astype(np.float32)
    v[0, :8] = [np.nan, np.inf, -np.inf, -0.0, 1.0625, 1.1875, 448.0, 464.0]
    return v


@pytest.mark.parametrize("dst", ["hifloat8", "f8e4m3"])
@pytest.mark.parametrize("relu", [False, True])
def test_8bit_float_targets_agree(dst: str, relu: bool, tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(3)
    s, d = "!pto.tile<16x32xf32, loc=acc, layout=NZ, valid=15x31>", f"!pto.tile<16x32x{dst}>"
    attr = " {relu = #pto.relu<RELU>}" if relu else ""
    text = (f"kernel @k(%dst : {d}, %src : {s}, %s : f32) {{\n"
            f"  %dst = tmov %src, %s{attr} : ({s}, f32) -> {d}\n}}\n")
    for factor in (1.0, -0.37, 3e4):
        args = {"dst": np.zeros((16, 32), NP[dst]), "src": _f32_values(rng, (16, 32)), "s": np.float32(factor)}
        assert_same_bits(text, args, "dst", tmp_path)
    store = (f"kernel @k(%g : !pto.memref<20x40x{dst}>, %src : {s}, %s : f32) {{\n  .const %c1 = 1 : index\n"
             f"  tstore %g[%c1, %c1], %src, %s{attr} : (!pto.memref<20x40x{dst}>, {s}, f32)\n}}\n")
    assert_same_bits(store, {"g": np.zeros((20, 40), NP[dst]), "src": _f32_values(rng, (16, 32)), "s": np.float32(0.5)},
          "g", tmp_path)


@pytest.mark.parametrize("dst,src", [("i8", "f32"), ("u8", "f32"), ("i8", "i32"), ("u8", "i32"),
                                     ("hifloat8", "f32"), ("f8e4m3", "f32")])
def test_vector_forms_agree(dst: str, src: str, tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(4)
    s, d, f = ACC.format(src), MAT.format(dst), "!pto.tile<1x32xf32, loc=scaling>"
    values = (_f32_values(rng, (16, 32)) if src == "f32" else
              rng.integers(-100000, 100000, (16, 32)).astype(np.int32))
    factors = (rng.standard_normal((1, 32)) * 0.05).astype(np.float32)
    text = (f"kernel @k(%dst : {d}, %src : {s}, %fp : {f}) {{\n"
            f"  %dst = tmov_fp %src, %fp {{relu = #pto.relu<RELU>}} : ({s}, {f}) -> {d}\n}}\n")
    assert_same_bits(text, {"dst": np.zeros((16, 32), NP[dst]), "src": values, "fp": factors}, "dst", tmp_path)
    text = (f"kernel @k(%dst : {d}, %src : !pto.tile<32x32x{src}, loc=acc, layout=NZ>, %fp : {f}) {{\n"
            f"  .const %c8 = 8 : index\n  .const %c0 = 0 : index\n"
            f"  %dst = textract_fp %src, %fp, %c8, %c0 : (!pto.tile<32x32x{src}, loc=acc, layout=NZ>, {f}, index, "
            f"index) -> {d}\n}}\n")
    big = np.concatenate([values, values[::-1]])
    assert_same_bits(text, {"dst": np.zeros((16, 32), NP[dst]), "src": big, "fp": factors}, "dst", tmp_path)


@pytest.mark.parametrize("dst,src", [("f16", "f32"), ("f32", "f32"), ("i32", "i32"), ("bf16", "f32")])
def test_tstore_relu_agrees(dst: str, src: str, tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(6)
    s = f"!pto.tile<16x32x{src}, loc=acc, layout=NZ, valid=9x30>"
    values = (_f32_values(rng, (16, 32)) if src == "f32" else
              rng.integers(-2**31, 2**31 - 1, (16, 32), dtype=np.int64).astype(np.int32))
    for atomic in ("", ", atomic = #pto.atomic<ADD>"):
        text = (f"kernel @k(%g : !pto.memref<20x40x{dst}>, %src : {s}) {{\n  .const %c2 = 2 : index\n"
                f"  tstore %g[%c2, %c2], %src {{relu = #pto.relu<RELU>{atomic}}} : (!pto.memref<20x40x{dst}>, {s})\n}}\n")
        assert_same_bits(text, {"g": np.ones((20, 40), NP[dst]), "src": values}, "g", tmp_path)


# ------------------------------------------------------------------------------ bytecode


TEXTRACT_SCALED = (
    "kernel @k(%dst : !pto.tile<16x32xu8, loc=mat, layout=NZ>, %src : !pto.tile<32x32xi32, loc=acc, layout=NZ>,"
    " %r : index, %s : f32) {\n  .const %c0 = 0 : index\n"
    "  %dst = textract %src, %s, %r, %c0 : (!pto.tile<32x32xi32, loc=acc, layout=NZ>, f32, index, index)"
    " -> !pto.tile<16x32xu8, loc=mat, layout=NZ>\n}\n")


def test_bytecode_numbers_the_moved_offsets_and_refuses_version_1() -> None:
    module = pto.parse(TEXTRACT_SCALED)
    blob = dump(module)
    assert blob[6:8] == b"\x02\x00"
    assert load_bytes(blob) == module
    old = blob[:6] + b"\x01\x00" + blob[8:]          # the header is outside the checksum
    with pytest.raises(BytecodeError) as e:
        load_bytes(old, "old.ptobc")
    err = e.value
    assert err.code == "BCODE_VERSION" and (err.expected, err.actual) == (2, 1)
    assert "TEXTRACT" in err.message and "re-assemble" in err.message
    instr = I.get("TEXTRACT")
    assert [o.name for o in instr.operands].index("r0") == 3      # the position version 2 writes
