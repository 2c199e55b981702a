"""The cupy backend without a GPU: its generated CUDA C++ compiled for the host (``cupy_emu``)
against the reference backend, nvcc accepting the same units, the compile cache, faults, fusion,
numerics, what it refuses, and how the GPU backend reports itself unavailable."""
from __future__ import annotations

import math
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import openpto as pto
from openpto.backends import get
from openpto.backends.cupy import CupyBackend, CupyEmulationBackend, host, unit_source
from openpto.isa.diagnostics import PTOError

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ("vector_add", "double_buffer_copy", "softmax", "layernorm", "gemm", "flash_attention")

pytestmark = pytest.mark.skipif(not CupyEmulationBackend().is_available()[0],
                                reason=f"host emulation unavailable: {CupyEmulationBackend().is_available()[1]}")


@pytest.fixture(autouse=True)
def _cache(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPTO_CACHE_DIR", str(tmp_path / "cache"))


def _inputs(name: str, rng: np.random.Generator) -> tuple[list, int]:
    r = 48
    f32 = np.float32
    return {
        "vector_add": ([rng.random((r, 1024), f32), rng.random((r, 1024), f32), np.zeros((r, 1024), f32), r], 1),
        "double_buffer_copy": ([rng.random((64, 512), f32), np.zeros((64, 512), f32), 64], 1),
        "softmax": ([rng.standard_normal((r, 1024), f32) * 4, np.zeros((r, 1024), f32), r], 3),
        "layernorm": ([rng.standard_normal((r, 1024), f32), rng.random(1024, f32), rng.random(1024, f32),
                       np.zeros((r, 1024), f32), 1e-5, r], 2),
        "gemm": ([rng.standard_normal((256, 128)).astype(np.float16),
                  rng.standard_normal((128, 384)).astype(np.float16), np.zeros((256, 384), f32), 256, 384, 128], 1),
        "flash_attention": ([rng.standard_normal((128, 64), f32), np.asfortranarray(rng.standard_normal((64, 192), f32)),
                             rng.standard_normal((192, 64), f32), np.zeros((128, 64), f32), 128, 192, 0.125], 1),
    }[name]


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_matches_the_reference(name: str) -> None:
    m = pto.load(ROOT / "examples" / f"{name}.pto")
    args, blocks = _inputs(name, np.random.default_rng(7))
    mine = [a.copy(order="K") if isinstance(a, np.ndarray) else a for a in args]
    exe = pto.compile(m, backend="cupy_emu")
    got = exe.run(exe.kernels[0], *mine, block_num=blocks)
    want = pto.compile(m, backend="reference", profile="cuda").run(exe.kernels[0], *args, block_num=blocks)
    assert got.counters == want.counters
    for out, w in want.outputs.items():
        g = got.outputs[out]
        if name in ("vector_add", "double_buffer_copy", "gemm"):    # copies, one rounding, f64 sums
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)
    if name == "softmax":         # and numpy's own softmax, written here
        x = args[0].astype(np.float64)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(got.outputs["y"], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_compiles_with_nvcc(name: str, tmp_path: pathlib.Path) -> None:
    src, _, _ = unit_source(pto.load(ROOT / "examples" / f"{name}.pto"))
    cu = tmp_path / f"{name}.cu"
    cu.write_text(src)
    r = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-w", "-c", str(cu), "-o", str(tmp_path / "k.o")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    if name == "gemm":            # f16 tiles in shared memory: the tensor-core branch is generated
        assert "wmma::mma_sync" in src and "!defined(PTO_HOST)" in src


def test_warm_start_does_not_run_the_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    m = pto.load(ROOT / "examples" / "vector_add.pto")
    assert pto.compile(m, backend="cupy_emu").compiled

    def refuse(*a: object, **k: object) -> None:
        raise AssertionError("the host compiler ran on a warm start")
    monkeypatch.setattr(host, "compile_shared", refuse)
    exe = pto.compile(m, backend="cupy_emu")
    assert not exe.compiled
    a = np.arange(3 * 1024, dtype=np.float32).reshape(3, 1024)
    c = np.zeros_like(a)
    exe(a, a, c, 3)
    np.testing.assert_array_equal(c, 2 * a)


def test_out_of_bounds_window_is_the_references_fault() -> None:
    m = pto.load(ROOT / "examples" / "vector_add.pto")
    a = np.ones((40, 1024), np.float32)
    c = np.zeros_like(a)
    with pytest.raises(PTOError) as want:
        pto.compile(m, backend="reference", profile="cuda")(a, a, c, 64)
    c2 = np.zeros_like(a)
    with pytest.raises(PTOError) as got:
        pto.compile(m, backend="cupy_emu")(a, a, c2, 64)
    assert got.value.code == want.value.code == "RUNTIME_OOB"
    assert (got.value.location.line, got.value.expected, got.value.actual) == \
        (want.value.location.line, want.value.expected, want.value.actual)


EW = """
kernel @ew(%x : !pto.memref<8x32x{d}>, %y : !pto.memref<8x32x{d}>, %z : !pto.memref<8x32x{d}>, %s : {d}) {{
  .const %c0 = 0 : index
  .tile %a : !pto.tile<8x32x{d}>
  .tile %b : !pto.tile<8x32x{d}>
  .tile %m : !pto.tile<8x1x{d}, layout=DN>
  %a = tload %x[%c0, %c0] : (!pto.memref<8x32x{d}>) -> !pto.tile<8x32x{d}>
  %b = tload %y[%c0, %c0] : (!pto.memref<8x32x{d}>) -> !pto.tile<8x32x{d}>
  %a = tmul %a, %b
  %a = tadds %a, %s
  %b = tmax %a, %b
  %m = trowmax %b : (!pto.tile<8x32x{d}>) -> !pto.tile<8x1x{d}, layout=DN>
  %b = trowexpandsub %b, %m : (!pto.tile<8x32x{d}>, !pto.tile<8x1x{d}, layout=DN>) -> !pto.tile<8x32x{d}>
  %b = tdiv %b, %a
  tstore %z[%c0, %c0], %b : (!pto.memref<8x32x{d}>, !pto.tile<8x32x{d}>)
}}
"""


def _np(d: str) -> np.dtype:
    import ml_dtypes
    return {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}[d]


@pytest.mark.parametrize("d", ["f32", "f16", "bf16"])
def test_fused_chain_rounds_once_per_instruction_like_the_reference(d: str) -> None:
    m = pto.parse(EW.format(d=d))
    src, _, _ = unit_source(m)
    # element loops: two loads, (tmul tadds tmax) fused, trowmax's own loops, (trowexpandsub tdiv) fused, the store
    assert src.count("for (int64_t e") == 5
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((8, 32)) * 3).astype(_np(d))
    y = (rng.standard_normal((8, 32)) * 3).astype(_np(d))
    x[0, :4] = [np.nan, np.inf, -0.0, 0.0]
    z1, z2 = np.zeros_like(x), np.zeros_like(x)
    pto.compile(m, backend="cupy_emu")(x, y, z1, 1.3)
    pto.compile(m, backend="reference", profile="cuda")(x, y, z2, 1.3)
    np.testing.assert_array_equal(np.isnan(z1.astype(np.float32)), np.isnan(z2.astype(np.float32)))
    np.testing.assert_array_equal(z1.astype(np.float32), z2.astype(np.float32))   # NaNs compare equal here


def test_exp_and_log_are_within_the_contract_with_exact_special_values() -> None:
    text = """
kernel @f(%x : !pto.memref<64x128xf32>, %e : !pto.memref<64x128xf32>, %l : !pto.memref<64x128xf32>) {
  .const %c0 = 0 : index
  .tile %t : !pto.tile<64x128xf32>
  .tile %u : !pto.tile<64x128xf32>
  %t = tload %x[%c0, %c0] : (!pto.memref<64x128xf32>) -> !pto.tile<64x128xf32>
  %u = texp %t : (!pto.tile<64x128xf32>) -> !pto.tile<64x128xf32>
  tstore %e[%c0, %c0], %u : (!pto.memref<64x128xf32>, !pto.tile<64x128xf32>)
  %u = tlog %t : (!pto.tile<64x128xf32>) -> !pto.tile<64x128xf32>
  tstore %l[%c0, %c0], %u : (!pto.memref<64x128xf32>, !pto.tile<64x128xf32>)
}
"""
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-104, 89, 4096), np.exp(rng.uniform(-80, 80, 4096))]).astype(np.float32)
    x[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1.0, 89.5]
    x = x.reshape(64, 128)
    e, lg = np.zeros_like(x), np.zeros_like(x)
    pto.compile(pto.parse(text), backend="cupy_emu")(x, e, lg)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        want_e, want_l = np.exp(x64).astype(np.float32), np.log(x64).astype(np.float32)
    for got, want in ((e, want_e), (lg, want_l)):
        fin = np.isfinite(want) & np.isfinite(got)
        ulp = np.spacing(np.abs(want[fin]).astype(np.float32))
        ulp = np.where(ulp == 0, np.float32(1e-45), ulp)
        assert np.max(np.abs(got[fin].astype(np.float64) - want[fin]) / ulp) <= 2.0
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    assert e.ravel()[1] == math.inf and e.ravel()[2] == 0.0 and e.ravel()[3] == 1.0 and e.ravel()[7] == math.inf
    assert lg.ravel()[3] == -math.inf and np.isnan(lg.ravel()[6]) and lg.ravel()[1] == math.inf


SCALARS = """
kernel @s(%y : !pto.memref<1x16xi32>, %a : i32, %b : i32, %f : f32) {
  .const %c0 = 0 : index
  .tile %t : !pto.tile<1x16xi32>
  %q = arith.divsi %a, %b : i32
  %r = arith.remsi %a, %b : i32
  %fl = arith.floordivsi %a, %b : i32
  %sh = arith.shli %a, %b : i32
  %sr = arith.shrsi %a, %b : i32
  %mx = arith.maxui %a, %b : i32
  %lt = arith.cmpi slt, %a, %b : i32
  %sel = arith.select %lt, %q, %r : i32
  %g = arith.fptosi %f : f32 to i32
  %t = texpands %q : (i32) -> !pto.tile<1x16xi32>
  %t = tadds %t, %r
  %t = tmuls %t, %fl
  %t = tsubs %t, %sh
  %t = tadds %t, %sr
  %t = tadds %t, %mx
  %t = tadds %t, %sel
  %t = tadds %t, %g
  tstore %y[%c0, %c0], %t : (!pto.memref<1x16xi32>, !pto.tile<1x16xi32>)
}
"""


@pytest.mark.parametrize("a,b,f", [(7, 2, 1e10), (-7, 2, -3.5), (-2 ** 31, -1, float("nan")), (5, 0, -1e20),
                                   (123456, 33, 2.5), (-1, 31, 0.0)])
def test_scalar_ops_wrap_and_divide_as_the_reference(a: int, b: int, f: float) -> None:
    m = pto.parse(SCALARS)
    y1, y2 = np.zeros((1, 16), np.int32), np.zeros((1, 16), np.int32)
    pto.compile(m, backend="cupy_emu")(y1, a, b, f)
    pto.compile(m, backend="reference", profile="cuda")(y2, a, b, f)
    np.testing.assert_array_equal(y1, y2)


def test_refusals_are_diagnostics() -> None:
    fp8 = pto.parse("""
kernel @k(%x : !pto.memref<16x32xf8e4m3>) {
  .const %c0 = 0 : index
  .tile %t : !pto.tile<16x32xf8e4m3>
  %t = tload %x[%c0, %c0] : (!pto.memref<16x32xf8e4m3>) -> !pto.tile<16x32xf8e4m3>
  tstore %x[%c0, %c0], %t : (!pto.memref<16x32xf8e4m3>, !pto.tile<16x32xf8e4m3>)
}
""")
    with pytest.raises(PTOError) as e:
        pto.compile(fp8, backend="cupy_emu")
    assert e.value.code == "LEGAL_BACKEND_UNSUPPORTED" and "f8e4m3" in str(e.value)
    big = pto.parse("""
kernel @k(%x : !pto.memref<128x256xf32>) {
  .const %c0 = 0 : index
  .tile %a : !pto.tile<128x256xf32>
  .tile %b : !pto.tile<128x256xf32, loc=mat>
  %a = tload %x[%c0, %c0] : (!pto.memref<128x256xf32>) -> !pto.tile<128x256xf32>
  %b = tload %x[%c0, %c0] : (!pto.memref<128x256xf32>) -> !pto.tile<128x256xf32, loc=mat>
  tstore %x[%c0, %c0], %a : (!pto.memref<128x256xf32>, !pto.tile<128x256xf32>)
}
""")
    with pytest.raises(PTOError) as e:
        pto.compile(big, backend="cupy_emu")
    assert e.value.code == "LEGAL_CAPACITY" and "262144" in str(e.value.actual)
    with pytest.raises(PTOError) as e:
        pto.compile(pto.load(ROOT / "examples" / "vector_add.pto"), backend="cupy_emu", threads=2)
    assert e.value.code == "PTO_OPTION" and e.value.actual == "threads"


def test_portability_check_against_a3_and_cuda() -> None:
    m = pto.load(ROOT / "examples" / "softmax.pto")
    pto.check(m, profile="a3")
    pto.check(m, profile="cuda")


def test_gpu_backend_reports_why_it_is_unavailable() -> None:
    ok, why = CupyBackend().is_available()
    if ok:
        pytest.skip("a CUDA device is present")
    assert why.startswith(("no CUDA device", "cupy not installed", "cupy failed to import"))
    with pytest.raises(PTOError) as e:
        pto.compile(pto.load(ROOT / "examples" / "vector_add.pto"), backend="cupy")
    assert e.value.code == "PTO_BACKEND_UNAVAILABLE" and why in str(e.value)
    assert isinstance(get("cupy"), CupyBackend) and get("cupy").coverage() == get("cupy_emu").coverage()


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_compiles_with_nvrtc_and_the_gpu_options(name: str) -> None:
    """NVRTC (CuPy's bundled library; no device needed) with exactly the options the GPU path
    passes: the unit is valid for the real compiler, not only for nvcc with full headers."""
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc", reason="cupy not installed")
    from openpto.backends.cupy.device import options
    src, abis, _ = unit_source(pto.load(ROOT / "examples" / f"{name}.pto"))
    prog = nvrtc.createProgram(src, "unit.cu", [], [])
    try:
        nvrtc.compileProgram(prog, [*options(), "--gpu-architecture=compute_90", "-w"])
    except Exception as e:  # noqa: BLE001 - the log says why
        pytest.fail(f"NVRTC rejected the unit: {e}\n{nvrtc.getProgramLog(prog)[-3000:]}")
    ptx = nvrtc.getPTX(prog)
    assert all(f".entry {a.symbol}(" in (ptx.decode() if isinstance(ptx, bytes) else ptx) for a in abis.values())


MM = """
kernel @mm(%a : !pto.memref<32x48x{d}>, %b : !pto.memref<48x64x{d}>, %c : !pto.memref<32x64xf32>) {{
  .const %c0 = 0 : index
  .tile %am : !pto.tile<32x48x{d}, loc=mat, layout=NZ>
  .tile %bm : !pto.tile<48x64x{d}, loc=mat, layout=NZ>
  .tile %l : !pto.tile<32x48x{d}, loc=left, layout=NZ>
  .tile %r : !pto.tile<48x64x{d}, loc=right, layout=ZN>
  .tile %acc : !pto.tile<32x64xf32, loc=acc, layout=NZ>
  %am = tload %a[%c0, %c0]
  %bm = tload %b[%c0, %c0]
  %l = tmov %am
  %r = tmov %bm
  %acc = tmatmul %l, %r
  %acc = tmatmul_acc %acc, %l, %r
  tstore %c[%c0, %c0], %acc
}}
"""


@pytest.mark.parametrize("d", ["f16", "bf16", "f32"])
def test_matmul_forms_match_numpy_and_the_tensor_core_branch_compiles(d: str) -> None:
    m = pto.parse(MM.format(d=d))
    rng = np.random.default_rng(2)
    a = rng.standard_normal((32, 48)).astype(_np(d))
    b = rng.standard_normal((48, 64)).astype(_np(d))
    c = np.zeros((32, 64), np.float32)
    pto.compile(m, backend="cupy_emu")(a, b, c)
    want = 2 * (a.astype(np.float64) @ b.astype(np.float64))       # tmatmul then tmatmul_acc
    np.testing.assert_allclose(c, want, rtol=1e-6, atol=1e-5)
    src, _, _ = unit_source(m)
    assert ("wmma::mma_sync" in src) == (d != "f32")
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc", reason="cupy not installed")
    from openpto.backends.cupy.device import options
    prog = nvrtc.createProgram(src, "unit.cu", [], [])
    nvrtc.compileProgram(prog, [*options(), "--gpu-architecture=compute_90", "-w"])


def test_f16_nan_payloads_and_subnormals_travel_as_numpy_moves_them() -> None:
    """f16 widens exactly in integer code (CUDA's conversion would give one canonical NaN) and
    narrows through cuda_fp16 with numpy's NaN bits: TABS clears only the sign."""
    m = pto.parse("""
kernel @k(%dst : !pto.tile<1x16xf16>, %src : !pto.tile<1x16xf16>) {
  %dst = tabs %src : (!pto.tile<1x16xf16>) -> !pto.tile<1x16xf16>
}
""")
    bits = np.array([0xFE00, 0x7E01, 0xFC01, 0x7C00, 0x8001, 0x03FF, 0x8400, 0xFBFF] * 2, np.uint16)
    src = bits.view(np.float16).reshape(1, 16)
    dst = np.zeros_like(src)
    pto.compile(m, backend="cupy_emu")(dst, src)
    np.testing.assert_array_equal(dst.view(np.uint16), (bits & 0x7FFF).reshape(1, 16))
