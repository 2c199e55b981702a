"""The pre-quantising TPUSH (FixpipeParams quant modes: the SET_QUANT_* state's reader) and
TSTORE_FP's per-profile vector pairs. Expected values are worked by hand in this file; every run
goes through the reference and the llvm backend and both must agree with them."""
from __future__ import annotations

import pathlib

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
from openpto.assembler.bytecode import dump, load_bytes
from openpto.assembler.printer import print_module
from openpto.assembler.verifier import diagnose
from openpto.isa.diagnostics import PTOError

ACC = "!pto.tile<16x16x{}, loc=acc, layout=NZ>"
VEC = "!pto.tile<16x16x{}>"
FP = "!pto.tile<1x16xf32, loc=scaling{}>"
BACKENDS = ("reference", "llvm")


def run(text: str, backend: str, tmp: pathlib.Path, **args: object) -> dict:
    """Runs kernel @k on one backend with copies of ``args``; returns the arrays after the run."""
    mine = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    opts = {"cache_dir": tmp} if backend == "llvm" else {}
    pto.compile(pto.parse(text), backend, "cpu", **opts).run("k", **mine)
    return mine


def fault(text: str, backend: str, tmp: pathlib.Path, **args: object) -> str:
    with pytest.raises(PTOError) as e:
        run(text, backend, tmp, **args)
    return e.value.code


def scalar_kernel(src: str, dst: str, mode: str, out: str = "I8", sets: bool = True) -> str:
    a, v = ACC.format(src), VEC.format(dst)
    first = f"  set_quant_scalar %s {{OutType = #pto.out_type<{out}>}} : (f32)\n" if sets else ""
    return (f"kernel @k(%a : {a}, %s : f32, %t : f32, %v : {v}, %w : {v}) {{\n" + first
            + f"  tpush %a {{FlagID = 0, Quant = #pto.fixpipe_quant<{mode}>}}\n"
            f"  set_quant_scalar %t {{OutType = #pto.out_type<{out}>}} : (f32)\n"
            f"  tpush %a {{FlagID = 0, Quant = #pto.fixpipe_quant<{mode}>}}\n"
            f"  %v = tpop {{FlagID = 0}} : () -> {v}\n"
            f"  %w = tpop {{FlagID = 0}} : () -> {v}\n}}\n")


def vector_kernel(src: str, dst: str, mode: str, fp_valid: str = "", sets: bool = True) -> str:
    a, v, f = ACC.format(src), VEC.format(dst), FP.format(fp_valid)
    first = f"  set_quant_vector %fp : ({f})\n" if sets else ""
    return (f"kernel @k(%a : {a}, %fp : {f}, %v : {v}) {{\n" + first
            + f"  tpush %a {{FlagID = 3, Quant = #pto.fixpipe_quant<{mode}>}}\n"
            f"  %v = tpop {{FlagID = 3}} : () -> {v}\n}}\n")


ROW0 = [1.0, 3.0, -3.0, 5.0, 254.0, 300.0, -300.0, np.nan, 2.6, -0.9, np.inf, -np.inf]


def acc_f32() -> np.ndarray:
    a = np.zeros((16, 16), np.float32)
    a[0, :12] = ROW0
    a[5, 3] = 7.0
    return a


# ------------------------------------------------------------------------------ scalar modes


@pytest.mark.parametrize("backend", BACKENDS)
def test_scalar_mode_scales_by_the_state_when_the_push_runs(backend: str, tmp_path: pathlib.Path) -> None:
    """SET_QUANT_SCALAR 0.5 I8, push, SET_QUANT_SCALAR 2.0, push: each push used the scale set before it.
    f32 * scale, then nearest-even and saturated to i8 (NaN -> 0)."""
    got = run(scalar_kernel("f32", "i8", "QF322B8_PRE"), backend, tmp_path, a=acc_f32(), s=np.float32(0.5),
              t=np.float32(2.0), v=np.zeros((16, 16), np.int8), w=np.zeros((16, 16), np.int8))
    half = np.zeros((16, 16), np.int8)
    half[0, :12] = [0, 2, -2, 2, 127, 127, -128, 0, 1, 0, 127, -128]    # 0.5, 1.5, -1.5, 2.5: ties to even
    half[5, 3] = 4                                                       # 3.5 -> 4
    double = np.zeros((16, 16), np.int8)
    double[0, :12] = [2, 6, -6, 10, 127, 127, -128, 0, 5, -2, 127, -128]  # 5.2 -> 5, -1.8 -> -2
    double[5, 3] = 14
    np.testing.assert_array_equal(got["v"], half)
    np.testing.assert_array_equal(got["w"], double)


@pytest.mark.parametrize("backend", BACKENDS)
def test_i32_scalar_modes_to_f16_and_bf16(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.zeros((16, 16), np.int32)
    a[0, :4] = [3, -7, 100001, 1 << 24]
    args = dict(a=a, s=np.float32(0.25), t=np.float32(1.0))
    got = run(scalar_kernel("i32", "f16", "DEQF16", out="F16"), backend, tmp_path,
              v=np.zeros((16, 16), np.float16), w=np.zeros((16, 16), np.float16), **args)
    # 25000.25 lies between the f16 neighbours 24992 and 25008 (spacing 16), nearer 25008; 2^22 and
    # 100001 overflow f16 (largest 65504) to inf
    np.testing.assert_array_equal(got["v"][0, :4].astype(np.float32), [0.75, -1.75, 25008.0, np.inf])
    np.testing.assert_array_equal(got["w"][0, :4].astype(np.float32), [3, -7, np.inf, np.inf])
    got = run(scalar_kernel("i32", "bf16", "QS322BF16_PRE", out="BF16"), backend, tmp_path,
              v=np.zeros((16, 16), ml_dtypes.bfloat16), w=np.zeros((16, 16), ml_dtypes.bfloat16), **args)
    # bf16 keeps 8 significant bits: spacing 128 above 16384, 25000.25 between 24960 and 25088, nearer 24960
    np.testing.assert_array_equal(got["v"][0, :4].astype(np.float32), [0.75, -1.75, 24960.0, 4194304.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_fp8_mode_saturates_and_codes_nan(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.zeros((16, 16), np.float32)
    a[0, :4] = [1.0, 300.0, np.nan, 0.0625]
    got = run(scalar_kernel("f32", "f8e4m3", "QF322FP8_PRE", out="F16"), backend, tmp_path, a=a,
              s=np.float32(2.0), t=np.float32(2.0), v=np.zeros((16, 16), ml_dtypes.float8_e4m3fn),
              w=np.zeros((16, 16), ml_dtypes.float8_e4m3fn))
    # 2.0 = 0 1000 000, 600 saturates to 448 = 0 1111 110, NaN -> 0x7F, 0.125 = 0 0100 000
    assert got["v"].view(np.uint8)[0, :4].tolist() == [0x40, 0x7E, 0x7F, 0x20]


@pytest.mark.parametrize("backend", BACKENDS)
def test_cast_mode_needs_no_state(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.zeros((16, 16), np.float32)
    a[0, :3] = [1.0, 1.00390625, 1.01171875]            # 1 + 2^-8 and 1 + 3 * 2^-8: bf16 ties
    text = (f"kernel @k(%a : {ACC.format('f32')}, %v : {VEC.format('bf16')}) {{\n"
            "  tpush %a {FlagID = 0, Quant = #pto.fixpipe_quant<F322BF16>}\n"
            f"  %v = tpop {{FlagID = 0}} : () -> {VEC.format('bf16')}\n}}\n")
    got = run(text, backend, tmp_path, a=a, v=np.zeros((16, 16), ml_dtypes.bfloat16))
    np.testing.assert_array_equal(got["v"][0, :3].astype(np.float32), [1.0, 1.0, 1.015625])


# ------------------------------------------------------------------------------ vector modes


@pytest.mark.parametrize("backend", BACKENDS)
def test_vector_mode_scales_per_column(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.zeros((16, 16), np.int32)
    a[0, :6] = [10, -3, 300, 7, 5, 5]
    a[1, :6] = 4
    fp = np.ones((1, 16), np.float32)
    fp[0, :6] = [0.5, 2.0, 0.5, 0.25, 0.1, -1.0]
    got = run(vector_kernel("i32", "i8", "VREQ8"), backend, tmp_path, a=a, fp=fp, v=np.zeros((16, 16), np.int8))
    want = np.zeros((16, 16), np.int8)
    want[0, :6] = [5, -6, 127, 2, 0, -5]        # 1.75 -> 2; f32(5 * f32(0.1)) = 0.5 -> 0 (even)
    want[1, :6] = [2, 8, 2, 1, 0, -4]
    np.testing.assert_array_equal(got["v"], want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vector_mode_to_f16(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.zeros((16, 16), np.int32)
    a[0, :3] = [70000, 1, 3]
    fp = np.ones((1, 16), np.float32)
    fp[0, :3] = [1.0, 0.5, np.float32(1) / np.float32(3)]
    got = run(vector_kernel("i32", "f16", "VDEQF16"), backend, tmp_path, a=a, fp=fp,
              v=np.zeros((16, 16), np.float16))
    np.testing.assert_array_equal(got["v"][0, :3].astype(np.float32), [np.inf, 0.5, 1.0])


# ------------------------------------------------------------------------------ faults


@pytest.mark.parametrize("backend", BACKENDS)
def test_missing_or_wrong_state_is_a_runtime_fault(backend: str, tmp_path: pathlib.Path) -> None:
    z8 = np.zeros((16, 16), np.int8)
    args = dict(a=acc_f32(), s=np.float32(0.5), t=np.float32(2.0), v=z8, w=z8)
    assert fault(scalar_kernel("f32", "i8", "QF322B8_PRE", sets=False), backend, tmp_path, **args) \
        == "RUNTIME_QUANT_STATE"
    assert fault(scalar_kernel("f32", "i8", "QF322B8_PRE", out="U8"), backend, tmp_path, **args) \
        == "RUNTIME_QUANT_STATE"
    vec = dict(a=np.zeros((16, 16), np.int32), fp=np.ones((1, 16), np.float32), v=z8)
    assert fault(vector_kernel("i32", "i8", "VREQ8", sets=False), backend, tmp_path, **vec) == "RUNTIME_QUANT_STATE"
    assert fault(vector_kernel("i32", "i8", "VREQ8", fp_valid=", valid=1x8"), backend, tmp_path, **vec) \
        == "RUNTIME_INVALID_READ"


@pytest.mark.parametrize("backend", BACKENDS)
def test_consumer_pops_the_modes_type(backend: str, tmp_path: pathlib.Path) -> None:
    """The slot holds i8 after a QF322B8_PRE push: popping an f32 tile is a mismatch."""
    text = (f"kernel @k(%a : {ACC.format('f32')}, %s : f32, %v : {VEC.format('f32')}) {{\n"
            "  set_quant_scalar %s {OutType = #pto.out_type<I8>} : (f32)\n"
            "  tpush %a {FlagID = 0, Quant = #pto.fixpipe_quant<QF322B8_PRE>}\n"
            f"  %v = tpop {{FlagID = 0}} : () -> {VEC.format('f32')}\n}}\n")
    assert fault(text, backend, tmp_path, a=acc_f32(), s=np.float32(1), v=np.zeros((16, 16), np.float32)) \
        == "RUNTIME_FIFO_MISMATCH"


# ------------------------------------------------------------------------------ verifier, spelling


def codes(text: str, profile: str) -> list[str]:
    return [e.code for e in diagnose(pto.parse(text), profile)]


def push_text(tile: str, mode: str, extra: str = "") -> str:
    return f"kernel @k(%a : {tile}) {{\n  tpush %a {{FlagID = 0, Quant = #pto.fixpipe_quant<{mode}>{extra}}}\n}}\n"


def test_verifier_rules() -> None:
    assert codes(push_text(ACC.format("f32"), "QF322B8_PRE"), "cpu") == []
    assert codes(push_text(ACC.format("i32"), "QF322B8_PRE"), "cpu") == ["LEGAL_DTYPE"]      # an f32 mode
    assert codes(push_text(ACC.format("f32"), "REQ8"), "cpu") == ["LEGAL_DTYPE"]             # an i32 mode
    assert codes(push_text(VEC.format("f32"), "F322F16"), "cpu") == ["LEGAL_LOCATION"]
    assert codes(push_text(ACC.format("f32"), "F322F16", ", Split = #pto.split<TILE_UP_DOWN>"), "cpu") \
        == ["STRUCT_ATTR_VALUE"]
    gm = "kernel @k(%g : !pto.memref<16x16xf32>) {\n  tpush %g[0, 0] {Quant = #pto.fixpipe_quant<F322F16>}\n}\n"
    assert codes(gm, "cpu") == ["LEGAL_DTYPE"]


@pytest.mark.parametrize("mode,a2_ok", [("QF322B8_PRE", True), ("VDEQF16", True), ("QF322FP8_PRE", False),
                                        ("QS322BF16_PRE", False), ("VQS322BF16_PRE", False)])
def test_a5_only_modes_per_profile(mode: str, a2_ok: bool) -> None:
    src = "i32" if mode in ("VDEQF16", "QS322BF16_PRE", "VQS322BF16_PRE") else "f32"
    text = push_text(ACC.format(src), mode)
    assert codes(text, "a5") == []
    for profile in ("a2", "a3"):
        assert codes(text, profile) == ([] if a2_ok else ["LEGAL_ATTR"])


def test_quant_attribute_prints_and_round_trips_bytecode() -> None:
    module = pto.parse(vector_kernel("i32", "i8", "VREQ8"))
    text = print_module(module)
    assert "#pto.fixpipe_quant<VREQ8>" in text
    assert print_module(pto.parse(text)) == text
    again = load_bytes(dump(module))
    push = [s for s in again.kernels[0].body if getattr(getattr(s, "instr", None), "mnemonic", "") == "TPUSH"][0]
    assert push.attrs["Quant"].name == "VREQ8"


# ------------------------------------------------------------------------------ TSTORE_FP pairs


def store_fp(dst: str, src: str) -> str:
    a, f = ACC.format(src), FP.format("")
    return (f"kernel @k(%g : !pto.memref<16x16x{dst}>, %a : {a}, %fp : {f}) {{\n"
            f"  tstore_fp %g[0, 0], %a, %fp : (!pto.memref<16x16x{dst}>, {a}, {f})\n}}\n")


@pytest.mark.parametrize("dst,src,a2,a5", [("u8", "i32", True, True), ("u8", "f32", True, True),
                                            ("i8", "f32", True, True), ("f16", "i32", True, True),
                                            ("f16", "f32", False, True), ("bf16", "i32", False, True),
                                            ("f8e4m3", "f32", False, True), ("f32", "f32", False, True),
                                            ("f32", "i32", False, False)])
def test_tstore_fp_pairs_per_profile(dst: str, src: str, a2: bool, a5: bool) -> None:
    text = store_fp(dst, src)
    assert codes(text, "cpu") == []
    for profile, ok in (("a2", a2), ("a3", a2), ("a5", a5)):
        assert codes(text, profile) == ([] if ok else ["LEGAL_DTYPE"]), profile


@pytest.mark.parametrize("backend", BACKENDS)
def test_tstore_fp_u8_and_f8e4m3_values(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.zeros((16, 16), np.int32)
    a[0, :4] = [10, -3, 300, 7]
    fp = np.ones((1, 16), np.float32)
    fp[0, :4] = [0.5, 2.0, 1.0, 0.5]
    got = run(store_fp("u8", "i32"), backend, tmp_path, g=np.full((16, 16), 9, np.uint8), a=a, fp=fp)
    assert got["g"][0, :4].tolist() == [5, 0, 255, 4]          # -6 clamps to 0, 300 to 255, 3.5 -> 4
    assert got["g"][1, 0] == 0                                  # the whole valid region is stored
    x = np.zeros((16, 16), np.float32)
    x[0, :4] = [1.0, 300.0, np.nan, -0.0625]
    fp[0, :4] = [2.0, 2.0, 1.0, 2.0]
    got = run(store_fp("f8e4m3", "f32"), backend, tmp_path, g=np.zeros((16, 16), ml_dtypes.float8_e4m3fn),
              a=x, fp=fp)
    assert got["g"].view(np.uint8)[0, :4].tolist() == [0x40, 0x7E, 0x7F, 0xA0]   # -0.125 = 1 0100 000


# ------------------------------------------------------------------------------ every mode, both backends

MODES = {"F322F16": ("f32", "f16", None), "F322BF16": ("f32", "bf16", None),
         "QF322B8_PRE": ("f32", "i8", "I8"), "QF322F16_PRE": ("f32", "f16", "F16"),
         "QF322BF16_PRE": ("f32", "bf16", "BF16"), "QF322FP8_PRE": ("f32", "f8e4m3", "U8"),
         "REQ8": ("i32", "i8", "I8"), "DEQF16": ("i32", "f16", "F16"), "QS322BF16_PRE": ("i32", "bf16", "BF16"),
         "VQF322B8_PRE": ("f32", "i8", "V"), "VREQ8": ("i32", "i8", "V"), "VDEQF16": ("i32", "f16", "V"),
         "VQS322BF16_PRE": ("i32", "bf16", "V")}
NP = {"f32": np.float32, "i32": np.int32, "i8": np.int8, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
      "f8e4m3": ml_dtypes.float8_e4m3fn}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_mode_agrees_bit_for_bit(mode: str, tmp_path: pathlib.Path) -> None:
    """Random acc values (specials in f32 row 0), a 15x13 valid region, scales drawn per run: the
    backends agree on every popped bit."""
    src, dst, state = MODES[mode]
    rng = np.random.default_rng(sorted(MODES).index(mode))
    a_t, v_t, f_t = (f"!pto.tile<16x16x{src}, loc=acc, layout=NZ, valid=15x13>",
                     f"!pto.tile<16x16x{dst}, valid=15x13>", "!pto.tile<1x16xf32, loc=scaling>")
    if src == "f32":
        a = (rng.standard_normal((16, 16)) * rng.choice([0.01, 1.0, 300.0, 1e5], (16, 16))).astype(np.float32)
        a[0, :6] = [np.nan, np.inf, -np.inf, -0.0, 2.5, 448.0]
    else:
        a = rng.integers(-(1 << 31), (1 << 31) - 1, (16, 16), dtype=np.int64).astype(np.int32)
    fp = (rng.standard_normal((1, 16)) * 0.01).astype(np.float32)
    set_line = ("" if state is None else f"  set_quant_vector %fp : ({f_t})\n" if state == "V" else
                f"  set_quant_scalar %s {{OutType = #pto.out_type<{state}>}} : (f32)\n")
    text = (f"kernel @k(%a : {a_t}, %fp : {f_t}, %s : f32, %v : {v_t}) {{\n" + set_line
            + f"  tpush %a {{FlagID = 5, Quant = #pto.fixpipe_quant<{mode}>}}\n"
            f"  %v = tpop {{FlagID = 5}} : () -> {v_t}\n}}\n")
    args = dict(a=a, fp=fp, s=np.float32(rng.choice([0.5, -3.0e-3, 1.0e-4])), v=np.zeros((16, 16), NP[dst]))
    ref, got = (run(text, b, tmp_path, **args)["v"] for b in BACKENDS)
    np.testing.assert_array_equal(got.view(np.uint8)[:15, :13 * got.itemsize],
                                  ref.view(np.uint8)[:15, :13 * ref.itemsize])
    assert np.any(ref.view(np.uint8)[:15, :13 * ref.itemsize])           # something non-zero was pushed
