"""TPUSH's FixpipeParams fields beyond Quant (LayoutMode, Relu, Phase, SubBlockId, AtomicT) and
the QF322HIF8_PRE mode. Expected values are worked by hand in this file; every run goes through
the reference and the llvm backend and both must agree with them."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto as pto
from openpto.assembler.bytecode import dump, load_bytes
from openpto.assembler.printer import print_module
from openpto.assembler.verifier import diagnose
from openpto.isa.diagnostics import PTOError

BACKENDS = ("reference", "llvm")
ACC = "!pto.tile<16x16x{}, loc=acc, layout=NZ>"


def run(text: str, backend: str, tmp: pathlib.Path, profile: str = "cpu", **args: object) -> dict:
    mine = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    opts = {"cache_dir": tmp} if backend == "llvm" else {}
    pto.compile(pto.parse(text), backend, profile, **opts).run("k", **mine)
    return mine


def fault(text: str, backend: str, tmp: pathlib.Path, **args: object) -> str:
    with pytest.raises(PTOError) as e:
        run(text, backend, tmp, **args)
    return e.value.code


def push_pop(src: str, dst: str, attrs: str, pop: str = "", state: str = "", extra: str = "") -> str:
    return (f"kernel @k(%a : {ACC.format(src)}, %v : {dst}{extra}) {{\n" + state
            + f"  tpush %a {{FlagID = 0{attrs}}}\n  %v = tpop {{FlagID = 0{pop}}} : () -> {dst}\n}}\n")


# ------------------------------------------------------------------------------ QF322HIF8_PRE

HIF8_KERNEL = push_pop("f32", "!pto.tile<16x16xhifloat8>", ", Quant = #pto.fixpipe_quant<QF322HIF8_PRE>",
                       state="  set_quant_scalar %s {OutType = #pto.out_type<F16>} : (f32)\n", extra=", %s : f32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_qf322hif8_scales_then_encodes_hifloat8(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.zeros((16, 16), np.float32)
    a[0, :8] = [0.5, 0.75, 1.0, -0.5, 0.0, np.nan, 4.0, 1e6]
    got = run(HIF8_KERNEL, backend, tmp_path, a=a, s=np.float32(2.0), v=np.zeros((16, 16), np.uint8))
    # x2: 1.0 = 0 0001 000, 1.5 = 0 0001 100, 2.0 = 0 001 0 000 (E = +1), -1.0 = 1 0001 000, 0 -> 0x00,
    # NaN -> 0x80, 8.0 = 0 01 01 000 (E = 3), 2e6 overflows to +inf 0x6F
    assert got["v"][0, :8].tolist() == [0x08, 0x0C, 0x10, 0x88, 0x00, 0x80, 0x28, 0x6F]
    assert got["v"][1:].tolist() == np.zeros((15, 16), np.uint8).tolist()


def test_qf322hif8_is_a5_only_and_reads_f32() -> None:
    m = pto.parse(HIF8_KERNEL.replace("16x16", "16x32"))       # a5 rows: 32 one-byte elements
    assert diagnose(m, "a5") == [] and diagnose(m, "cpu") == []
    assert {"LEGAL_ATTR", "LEGAL_DTYPE"} <= {e.code for e in diagnose(m, "a3")}   # the mode; the hifloat8 pop
    i32 = pto.parse(HIF8_KERNEL.replace("16x16xf32, loc=acc", "16x16xi32, loc=acc"))
    assert "LEGAL_DTYPE" in [e.code for e in diagnose(i32, "cpu")]


# ------------------------------------------------------------------------------ Relu


@pytest.mark.parametrize("backend", BACKENDS)
def test_relu_on_an_unquantised_acc_push(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.zeros((16, 16), np.float32)
    a[0, :5] = [-1.5, 2.0, -0.0, np.nan, 3.25]
    a[2, 7] = -7.0
    got = run(push_pop("f32", "!pto.tile<16x16xf32>", ", Relu = #pto.relu<RELU>"), backend, tmp_path,
              a=a, v=np.full((16, 16), 9.0, np.float32))
    assert got["v"][0, :5].view(np.uint32).tolist()[:3] == [0, 0x40000000, 0]    # -0 becomes +0
    assert np.isnan(got["v"][0, 3]) and got["v"][0, 4] == 3.25 and got["v"][2, 7] == 0.0
    i = np.zeros((16, 16), np.int32)
    i[0, :3] = [-3, 4, -(1 << 31)]
    got = run(push_pop("i32", "!pto.tile<16x16xi32>", ", Relu = #pto.relu<RELU>"), backend, tmp_path,
              a=i, v=np.zeros((16, 16), np.int32))
    assert got["v"][0, :3].tolist() == [0, 4, 0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d,np_d,row,want_bits", [
    ("f16", np.float16, [-1.0, 0.5, -0.0, 65504.0], [0, 0x3800, 0, 0x7BFF]),
    ("u16", np.uint16, [0, 1, 65535, 7], [0, 1, 65535, 7]),           # unsigned: nothing is below 0
    ("i16", np.int16, [-1, 1, -32768, 32767], [0, 1, 0, 32767]),
])
def test_relu_keeps_the_bits_of_every_acc_dtype(backend: str, d: str, np_d: type, row: list, want_bits: list,
                                                tmp_path: pathlib.Path) -> None:
    a = np.zeros((16, 16), np_d)
    a[0, :4] = row
    got = run(push_pop(d, f"!pto.tile<16x16x{d}>", ", Relu = #pto.relu<RELU>"), backend, tmp_path,
              a=a, v=np.ones((16, 16), np_d))
    assert got["v"][0, :4].view(np.uint16).tolist() == want_bits


@pytest.mark.parametrize("backend", BACKENDS)
def test_relu_comes_after_the_scale_and_before_the_conversion(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.zeros((16, 16), np.float32)
    a[0, :3] = [1.0, -2.0, -70000.0]
    text = push_pop("f32", "!pto.tile<16x16xf16>", ", Quant = #pto.fixpipe_quant<QF322F16_PRE>, "
                    "Relu = #pto.relu<RELU>", state="  set_quant_scalar %s {OutType = #pto.out_type<F16>} : (f32)\n",
                    extra=", %s : f32")
    got = run(text, backend, tmp_path, a=a, s=np.float32(-1.0), v=np.zeros((16, 16), np.float16))
    # scaled by -1: -1, 2, 70000; ReLU: 0, 2, 70000; f16: 70000 overflows to inf (ReLU first would give -1, 0, 0)
    assert got["v"][0, :3].astype(np.float32).tolist() == [0.0, 2.0, np.inf]


# ------------------------------------------------------------------------------ LayoutMode


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode,layout", [("NZ2ND", "ND"), ("NZ2DN", "DN"), ("NZ2NZ", "NZ")])
def test_layout_mode_fixes_the_popping_tiles_layout(backend: str, mode: str, layout: str,
                                                    tmp_path: pathlib.Path) -> None:
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    attrs = f", LayoutMode = #pto.fixpipe_layout<{mode}>"
    got = run(push_pop("f32", f"!pto.tile<16x16xf32, layout={layout}>", attrs), backend, tmp_path,
              a=a, v=np.zeros((16, 16), np.float32))
    np.testing.assert_array_equal(got["v"], a)            # the values are the tile's, whatever the layout
    other = "DN" if layout == "ND" else "ND"
    assert fault(push_pop("f32", f"!pto.tile<16x16xf32, layout={other}>", attrs), backend, tmp_path,
                 a=a, v=np.zeros((16, 16), np.float32)) == "RUNTIME_FIFO_MISMATCH"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_plain_acc_push_is_nz2nd_and_a_vec_push_any_layout(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.ones((16, 16), np.float32)
    assert fault(push_pop("f32", "!pto.tile<16x16xf32, layout=DN>", ""), backend, tmp_path,
                 a=a, v=np.zeros((16, 16), np.float32)) == "RUNTIME_FIFO_MISMATCH"
    text = ("kernel @k(%a : !pto.tile<16x16xf16>, %m : !pto.tile<16x16xf16, loc=mat, layout=NZ>) {\n"
            "  tpush %a {FlagID = 0}\n  %m = tpop {FlagID = 0} : () -> !pto.tile<16x16xf16, loc=mat, layout=NZ>\n}\n")
    a16 = np.arange(256, dtype=np.float16).reshape(16, 16)
    np.testing.assert_array_equal(run(text, backend, tmp_path, a=a16, m=np.zeros((16, 16), np.float16))["m"], a16)


# ------------------------------------------------------------------------------ SubBlockId

SPLIT_ACC = "!pto.tile<16x16xf32, valid={}, loc=acc, layout=NZ>"


def sub_kernel(sub: int, valid: str, vec: str, split: str) -> str:
    return (f"kernel @k(%a : {SPLIT_ACC.format(valid)}, %v : {vec}) {{\n"
            f"  tpush %a {{FlagID = 0, SubBlockId = {sub}}}\n"
            f"  %v = tpop {{FlagID = 0, Split = #pto.split<{split}>}} : () -> {vec}\n}}\n")


@pytest.mark.parametrize("backend", BACKENDS)
def test_dual_subblock_ids_give_sub_block_0_its_half(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    got = run(sub_kernel(2, "4x16", "!pto.tile<16x16xf32, valid=2x16>", "TILE_UP_DOWN"), backend, tmp_path,
              a=a, v=np.zeros((16, 16), np.float32))
    np.testing.assert_array_equal(got["v"][:2], a[:2])                  # rows 0 and 1 of the 4 valid rows
    got = run(sub_kernel(3, "4x16", "!pto.tile<16x16xf32, valid=4x8>", "TILE_LEFT_RIGHT"), backend, tmp_path,
              a=a, v=np.zeros((16, 16), np.float32))
    np.testing.assert_array_equal(got["v"][:4, :8], a[:4, :8])          # columns 0..7 of 16
    assert fault(sub_kernel(2, "3x16", "!pto.tile<16x16xf32, valid=2x16>", "TILE_UP_DOWN"), backend, tmp_path,
                 a=a, v=np.zeros((16, 16), np.float32)) == "RUNTIME_VALID_REGION"   # 3 rows do not halve
    assert fault(sub_kernel(2, "4x16", "!pto.tile<16x16xf32, valid=4x16>", "TILE_NO_SPLIT"), backend, tmp_path,
                 a=a, v=np.zeros((16, 16), np.float32)) == "RUNTIME_FIFO_MISMATCH"  # the pop names no split


@pytest.mark.parametrize("backend", BACKENDS)
def test_subblock_1_is_not_popped_by_sub_block_0(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.ones((16, 16), np.float32)
    assert fault(sub_kernel(1, "16x16", "!pto.tile<16x16xf32>", "TILE_NO_SPLIT"), backend, tmp_path,
                 a=a, v=np.zeros((16, 16), np.float32)) == "RUNTIME_FIFO_MISMATCH"


# ------------------------------------------------------------------------------ static rules

PUSH = "kernel @k(%a : {t}) {{\n  tpush %a {{FlagID = 0{attrs}}}\n}}\n"


@pytest.mark.parametrize("tile,attrs,profile,code", [
    (ACC.format("f32"), ", Phase = #pto.st_phase<Final>", "a3", None),
    (ACC.format("f32"), ", Phase = #pto.st_phase<Partial>, LayoutMode = #pto.fixpipe_layout<NZ2NZ>", "a5", None),
    ("!pto.tile<16x16xf32>", ", Relu = #pto.relu<RELU>", "cpu", "LEGAL_LOCATION"),
    ("!pto.tile<16x16xf32>", ", LayoutMode = #pto.fixpipe_layout<NZ2DN>", "cpu", "LEGAL_LOCATION"),
    (ACC.format("f32"), ", Relu = #pto.relu<RELU>, Split = #pto.split<TILE_UP_DOWN>", "cpu", "STRUCT_ATTR_VALUE"),
    (ACC.format("f32"), ", SubBlockId = 4", "cpu", "STRUCT_ATTR_VALUE"),
    (ACC.format("f32"), ", SubBlockId = 2, Quant = #pto.fixpipe_quant<F322F16>", "cpu", "STRUCT_ATTR_VALUE"),
    (ACC.format("f32"), ", SubBlockId = 3, LayoutMode = #pto.fixpipe_layout<NZ2DN>", "cpu", "STRUCT_ATTR_VALUE"),
    (ACC.format("f32"), ", SubBlockId = 1", "a3", "LEGAL_ATTR"),
    (ACC.format("f32"), ", SubBlockId = 1", "a5", None),
    (ACC.format("f32"), ", AtomicT = #pto.atomic<ADD>", "a5", "LEGAL_MODE"),
])
def test_fixpipe_field_rules(tile: str, attrs: str, profile: str, code: str | None) -> None:
    got = [e.code for e in diagnose(pto.parse(PUSH.format(t=tile, attrs=attrs)), profile)]
    assert got == ([] if code is None else [code])


def test_clip_relu_and_channel_split_are_not_attributes() -> None:
    for attrs in (", ClipReluMode = 1", ", IsChannelSplit = true"):
        with pytest.raises(PTOError) as e:
            pto.parse(PUSH.format(t=ACC.format("f32"), attrs=attrs)).check()
        assert e.value.code == "STRUCT_UNKNOWN_ATTR"


def test_fields_print_and_round_trip_through_bytecode() -> None:
    text = PUSH.format(t=ACC.format("f32"), attrs=", LayoutMode = #pto.fixpipe_layout<NZ2DN>, Relu = #pto.relu<RELU>, "
                       "Phase = #pto.st_phase<Partial>, SubBlockId = 1, Quant = #pto.fixpipe_quant<QF322HIF8_PRE>")
    m = pto.parse(text)
    printed = print_module(m)
    for spelling in ("#pto.fixpipe_layout<NZ2DN>", "#pto.relu<RELU>", "#pto.st_phase<Partial>", "SubBlockId = 1",
                     "#pto.fixpipe_quant<QF322HIF8_PRE>"):
        assert spelling in printed
    assert pto.parse(printed) == m and load_bytes(dump(m)) == m
