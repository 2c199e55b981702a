"""The llvm backend's hifloat8 (HiF8) code against the reference and the isa's codec: TCVT from
every f16 value under every rounding mode, every code back to f32, random f32 with ties; and the
backend's stand-alone encoder (used when a value is stored into a hifloat8 tile) against
``isa.hifloat8.encode`` over every f16 value and hand ties."""
from __future__ import annotations

import ctypes
import pathlib

import ml_dtypes
import numpy as np
import pytest
from llvmlite import ir

import openpto as pto
from openpto.backends.llvm import hif8
from openpto.isa import hifloat8

pytestmark = pytest.mark.filterwarnings("error")

#: the numpy array a tile of each element type is passed as (4-bit codes one a byte)
_NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "hifloat8": np.uint8,
       "float4_e2m1x2": np.uint8, "float4_e1m2x2": np.uint8, "i4": np.uint8}


def _tcvt(src: np.ndarray, sd: str, dd: str, mode: str, backend: str, tmp: pathlib.Path,
          profile: str = "cpu", sat: str | None = None) -> np.ndarray:
    """One TCVT of ``src`` (element type ``sd``) to ``dd`` on ``backend`` for ``profile``, with
    ``roundMode`` = ``mode`` and, when given, ``satMode`` = ``sat``; the destination array."""
    r, c = src.shape
    s, d = f"!pto.tile<{r}x{c}x{sd}>", f"!pto.tile<{r}x{c}x{dd}>"
    attrs = f"roundMode = #pto.round_mode<{mode}>" + (f", satMode = #pto.sat<{sat}>" if sat else "")
    text = f"kernel @k(%dst : {d}, %src : {s}) {{\n  %dst = tcvt %src {{{attrs}}} : ({s}) -> {d}\n}}\n"
    dst = np.zeros((r, c), _NP[dd])
    options = {"cache_dir": tmp} if backend == "llvm" else {}
    pto.compile(pto.parse(text), backend, profile, **options)(dst=dst, src=src.copy())
    return dst


@pytest.mark.parametrize("mode", ["RINT", "ROUND", "FLOOR", "CEIL", "TRUNC", "ODD"])
def test_every_f16_to_hifloat8(mode: str, tmp_path: pathlib.Path) -> None:
    x = np.arange(65536, dtype=np.uint16).view(np.float16).reshape(256, 256)
    got = _tcvt(x, "f16", "hifloat8", mode, "llvm", tmp_path)
    np.testing.assert_array_equal(got, _tcvt(x, "f16", "hifloat8", mode, "reference", tmp_path))
    if mode == "ROUND":                             # the A5 rule: the isa encoder, ties away
        np.testing.assert_array_equal(got, hifloat8.encode(x.astype(np.float64)))


def test_every_code_to_f32(tmp_path: pathlib.Path) -> None:
    codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
    got = _tcvt(codes, "hifloat8", "f32", "RINT", "llvm", tmp_path)
    want = hifloat8.DECODE.reshape(16, 16).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(want)], want.view(np.uint32)[~np.isnan(want)])
    assert np.isnan(got[8, 0]) and got[6, 15] == np.inf and got[14, 15] == -np.inf   # 0x80, 0x6F, 0xEF
    assert got[0, 8] == 1.0 and got[1, 15] == 0.9375                                 # 0x08, 0x1F


def test_random_f32_with_ties(tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((32, 64)) * np.exp2(rng.integers(-26, 18, (32, 64)))).astype(np.float32)
    x[0, :8] = [1.0625, 1.1875, -1.0625, 2.0 ** -23, 40960.0, -0.0, np.nan, np.inf]
    got = _tcvt(x, "f32", "hifloat8", "ROUND", "llvm", tmp_path)
    np.testing.assert_array_equal(got, _tcvt(x, "f32", "hifloat8", "ROUND", "reference", tmp_path))
    assert got[0, :8].tolist() == [0x09, 0x0A, 0x89, 0x01, 0x6F, 0x00, 0x80, 0x6F]


def _encoder() -> tuple[object, object]:
    """A JIT-compiled ``void enc(float *src, uint8_t *dst, i64 n)`` around the backend's encoder."""
    from openpto.backends.llvm import target
    m = ir.Module("hif8test")
    f32, i8, i64 = ir.FloatType(), ir.IntType(8), ir.IntType(64)
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [f32.as_pointer(), i8.as_pointer(), i64]), "enc")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    loop, done = fn.append_basic_block("loop"), fn.append_basic_block("done")
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), fn.entry_basic_block)
    v = b.load(b.gep(fn.args[0], [i]))
    b.store(hif8.encode(b, v), b.gep(fn.args[1], [i]))
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, fn.args[2]), loop, done)
    b.position_at_end(done)
    b.ret_void()
    loaded = target.Loaded(target.compile_object(str(m)))      # the backend's own path (O3)
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    return loaded, proto(loaded.address("enc"))


def test_backend_encoder_rounds_ties_away() -> None:
    engine, enc = _encoder()
    x = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    rng = np.random.default_rng(9)
    more = (rng.standard_normal(4096) * np.exp2(rng.integers(-30, 20, 4096))).astype(np.float32)
    hand = np.array([1.0625, 1.1875, -1.0625, 0.3, 3 * 2.0 ** -17, 2.0 ** -23, 0.99 * 2.0 ** -23, 40960.0,
                     36000.0, -0.0, np.nan, np.inf, -np.inf, 1e-40, 3.4e38], np.float32)
    x = np.ascontiguousarray(np.concatenate([x, more, hand]))
    out = np.zeros(x.size, np.uint8)
    enc(x.ctypes.data, out.ctypes.data, x.size)
    with np.errstate(invalid="ignore"):               # widening signalling NaNs
        want = hifloat8.encode(x.astype(np.float64))
    np.testing.assert_array_equal(out, want)
    assert out[-15:].tolist() == [0x09, 0x0A, 0x89, 0x32, 0x7E, 0x01, 0x00, 0x6F, 0x6E, 0x00, 0x80, 0x6F, 0xEF,
                                  0x00, 0x6F]
    del engine


# ----------------------------------------------------------------------------- hifloat8 storage

def _move_kernel(relu: bool) -> str:
    t, g = "!pto.tile<8x32xhifloat8>", "!pto.memref<8x32xhifloat8>"
    attr = " {relu = #pto.relu<RELU>}" if relu else ""
    return (f"kernel @k(%out : {g}, %in : {g}) {{\n"
            f"  %a = pto.alloc_tile : {t}\n  %b = pto.alloc_tile : {t}\n"
            f"  tload %a, %in[0, 0] : {t}, {g}\n  tmov %b, %a{attr} : {t}, {t}\n"
            f"  tstore %out[0, 0], %b : {g}, {t}\n}}\n")


@pytest.mark.parametrize("relu", [False, True])
def test_hifloat8_load_move_store(relu: bool, tmp_path: pathlib.Path) -> None:
    """Every code through TLOAD, TMOV (with and without relu) and TSTORE: bit copies; relu zeroes
    the negative codes (sign set) but keeps the NaN code 0x80 (hand rule)."""
    codes = np.arange(256, dtype=np.uint8).reshape(8, 32)
    out = {}
    for backend in ("llvm", "reference"):
        out[backend] = np.full((8, 32), 0x55, np.uint8)
        options = {"cache_dir": tmp_path} if backend == "llvm" else {}
        pto.compile(pto.parse(_move_kernel(relu)), backend, "a5", **options)(out=out[backend], **{"in": codes.copy()})
    want = np.where((codes < 0x80) | (codes == 0x80), codes, 0) if relu else codes
    np.testing.assert_array_equal(out["llvm"], want)
    np.testing.assert_array_equal(out["llvm"], out["reference"])
    if relu:
        assert out["llvm"][4, 0] == 0x80 and out["llvm"][4, 8] == 0 and out["llvm"][3, 15] == 0x6F


# ----------------------------------------------------------------------------- fp4

@pytest.mark.parametrize("fmt", ["float4_e2m1x2", "float4_e1m2x2"])
@pytest.mark.parametrize("mode", ["RINT", "ROUND", "FLOOR", "CEIL", "TRUNC", "ODD"])
def test_every_bf16_to_fp4(fmt: str, mode: str, tmp_path: pathlib.Path) -> None:
    x = np.arange(65536, dtype=np.uint16).view(ml_dtypes.bfloat16).reshape(256, 256)
    got = _tcvt(x, "bf16", fmt, mode, "llvm", tmp_path, "a5")
    want = _tcvt(x, "bf16", fmt, mode, "reference", tmp_path, "a5")
    np.testing.assert_array_equal(got, want)
    if fmt == "float4_e2m1x2" and mode == "RINT":           # an independent E2M1: ml_dtypes
        finite = np.isfinite(x.astype(np.float32))
        np.testing.assert_array_equal(got[finite], x[finite].astype(ml_dtypes.float4_e2m1fn).view(np.uint8))
    flat = x.astype(np.float32).ravel()
    hand = {1.25: 0x2 if fmt == "float4_e2m1x2" else 0x5, float("inf"): 0x7, float("-inf"): 0xF}
    if mode == "RINT":
        for v, code in hand.items():
            assert got.ravel()[np.flatnonzero(flat == v)[0]] == code
        assert got.ravel()[np.flatnonzero(np.isnan(flat))].tolist() == [0] * int(np.isnan(flat).sum())


@pytest.mark.parametrize("fmt,mags", [("float4_e2m1x2", [0, 0.5, 1, 1.5, 2, 3, 4, 6]),
                                      ("float4_e1m2x2", [0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75])])
def test_every_fp4_code_to_bf16(fmt: str, mags: list[float], tmp_path: pathlib.Path) -> None:
    codes = np.tile(np.arange(16, dtype=np.uint8), 4).reshape(1, 64) | np.uint8(0x50)   # junk high nibbles
    # one row of 64: a5 rows are whole 32-byte units, 64 four-bit elements
    got = _tcvt(codes, fmt, "bf16", "RINT", "llvm", tmp_path, "a5")
    want = np.array(mags + [-m for m in mags], np.float64)
    np.testing.assert_array_equal(got.astype(np.float64).ravel(), np.tile(want, 4))
    assert np.signbit(got.astype(np.float32)[0, 8])


# ----------------------------------------------------------------------------- i4

@pytest.mark.parametrize("sat", ["ON", "OFF"])
@pytest.mark.parametrize("mode", ["RINT", "ROUND", "FLOOR", "CEIL", "TRUNC", "ODD"])
def test_every_f16_to_i4(mode: str, sat: str, tmp_path: pathlib.Path) -> None:
    x = np.arange(65536, dtype=np.uint16).view(np.float16).reshape(256, 256)
    got = _tcvt(x, "f16", "i4", mode, "llvm", tmp_path, "a3", sat)
    want = _tcvt(x, "f16", "i4", mode, "reference", tmp_path, "a3", sat)
    np.testing.assert_array_equal(got, want)
    assert got.max() <= 0xF                                   # the high nibble is written as zero
    flat = x.ravel()
    # by hand: 100 clamps to 7 (ON) or wraps to 100 - 96 = 4 (OFF); -9 clamps to -8 (0x8) or wraps to 7
    for v, on, off in ((100.0, 0x7, 0x4), (-9.0, 0x8, 0x7)):
        assert got.ravel()[np.flatnonzero(flat == v)[0]] == (on if sat == "ON" else off)
    if mode == "RINT":
        assert got.ravel()[np.flatnonzero(flat == 2.5)[0]] == 0x2                   # tie to even


def test_every_i4_code_to_f16(tmp_path: pathlib.Path) -> None:
    codes = (np.arange(64, dtype=np.uint8) * 7).reshape(1, 64)     # every nibble, junk above it (64: 32 B)
    got = _tcvt(codes, "i4", "f16", "RINT", "llvm", tmp_path, "a3", "ON")
    low = (codes & 0xF).astype(np.int64)
    np.testing.assert_array_equal(got.astype(np.int64), np.where(low >= 8, low - 16, low))


# ----------------------------------------------------------------------------- scale_left / scale_right

def _mx_kernel() -> str:
    """A and B and their scales loaded into mat, moved to left/right and scale_left/scale_right,
    multiplied (TMATMUL_MX) and stored."""
    A, B = "!pto.tile<16x64xf8e4m3, loc=left, layout=NZ>", "!pto.tile<64x16xf8e4m3, loc=right, layout=ZN>"
    MA, MB = "!pto.tile<16x64xf8e4m3, loc=mat>", "!pto.tile<64x16xf8e4m3, loc=mat>"
    SA, SB = "!pto.tile<16x2xu8, loc=scale_left>", "!pto.tile<2x16xu8, loc=scale_right, layout=DN>"
    MSA, MSB = "!pto.tile<16x2xu8, loc=mat>", "!pto.tile<2x16xu8, loc=mat, layout=DN>"
    C = "!pto.tile<16x16xf32, loc=acc, layout=NZ>"
    ga, gb, gc = "!pto.memref<16x64xf8e4m3>", "!pto.memref<64x16xf8e4m3>", "!pto.memref<16x16xf32>"
    gsa, gsb = "!pto.memref<16x2xu8>", "!pto.memref<2x16xu8, layout=DN>"
    lines = [f"kernel @k(%c : {gc}, %a : {ga}, %b : {gb}, %sa : {gsa}, %sb : {gsb}) {{"]
    for name, t in (("ma", MA), ("mb", MB), ("msa", MSA), ("msb", MSB), ("ta", A), ("tb", B), ("tsa", SA),
                    ("tsb", SB), ("acc", C)):
        lines.append(f"  %{name} = pto.alloc_tile : {t}")
    for m, g, tm, tg in (("ma", "a", MA, ga), ("mb", "b", MB, gb), ("msa", "sa", MSA, gsa), ("msb", "sb", MSB, gsb)):
        lines.append(f"  tload %{m}, %{g}[0, 0] : {tm}, {tg}")
    for t, m, tt, tm in (("ta", "ma", A, MA), ("tb", "mb", B, MB), ("tsa", "msa", SA, MSA), ("tsb", "msb", SB, MSB)):
        lines.append(f"  tmov %{t}, %{m} : {tt}, {tm}")
    lines.append(f"  %acc = tmatmul_mx %ta, %tsa, %tb, %tsb : ({A}, {SA}, {B}, {SB}) -> {C}")
    lines.append(f"  tstore %c[0, 0], %acc : {gc}, {C}\n}}\n")
    return "\n".join(lines)


def test_tmatmul_mx_with_scales_in_the_scale_buffers(tmp_path: pathlib.Path) -> None:
    a = np.ones((16, 64), ml_dtypes.float8_e4m3fn)
    b = np.ones((64, 16), ml_dtypes.float8_e4m3fn)
    sa = np.full((16, 2), 127, np.uint8)
    sa[:, 0], sa[3, 1] = 128, 125                 # block 0 of A scaled by 2; row 3 block 1 by 1/4
    sb = np.full((2, 16), 127, np.uint8)
    sb[1, 5] = 129                                # block 1 of B column 5 scaled by 4
    # by hand: 32 * 2 + 32 * 1 = 96; row 3: 64 + 32 / 4 = 72; column 5: 64 + 32 * 4 = 192; both: 96
    want = np.full((16, 16), 96.0, np.float32)
    want[3, :], want[:, 5], want[3, 5] = 72.0, 192.0, 96.0
    for backend in ("reference", "llvm"):
        c = np.zeros((16, 16), np.float32)
        options = {"cache_dir": tmp_path} if backend == "llvm" else {}
        pto.compile(pto.parse(_mx_kernel()), backend, "cpu", **options)(c=c, a=a, b=b, sa=sa, sb=sb)
        np.testing.assert_array_equal(c, want)


# ----------------------------------------------------------------------------- 4-bit moves

def _move4_kernel(d: str, relu: bool) -> str:
    t, g = f"!pto.tile<2x64x{d}>", f"!pto.memref<2x64x{d}>"
    attr = " {relu = #pto.relu<RELU>}" if relu else ""
    return (f"kernel @k(%out : {g}, %in : {g}) {{\n"
            f"  %a = pto.alloc_tile : {t}\n  %b = pto.alloc_tile : {t}\n"
            f"  tload %a, %in[0, 0] : {t}, {g}\n  tmov %b, %a{attr} : {t}, {t}\n"
            f"  tstore %out[0, 0], %b : {g}, {t}\n}}\n")


@pytest.mark.parametrize("d,profile", [("float4_e2m1x2", "a5"), ("float4_e1m2x2", "a5"), ("i4", "cpu")])
@pytest.mark.parametrize("relu", [False, True])
def test_four_bit_load_move_store(d: str, profile: str, relu: bool, tmp_path: pathlib.Path) -> None:
    """Every 4-bit code (eight times) through TLOAD, TMOV and TSTORE: bit copies, one element per
    array element; relu keeps codes 1..7 (positive E2M1 / E1M2 values, positive i4) and writes 0
    for 0 and for 8..15 (-0 and the negatives), by hand."""
    codes = np.tile(np.arange(16, dtype=np.uint8), 8).reshape(2, 64)
    out = {}
    for backend in ("llvm", "reference"):
        out[backend] = np.full((2, 64), 0x55, np.uint8)
        options = {"cache_dir": tmp_path} if backend == "llvm" else {}
        pto.compile(pto.parse(_move4_kernel(d, relu)), backend, profile, **options)(out=out[backend], **{"in": codes.copy()})
    want = np.where((codes >= 1) & (codes <= 7), codes, 0) if relu else codes
    np.testing.assert_array_equal(out["llvm"], want)
    np.testing.assert_array_equal(out["reference"], want)
    if relu:
        assert out["llvm"][0, :16].tolist() == [0, 1, 2, 3, 4, 5, 6, 7] + [0] * 8
