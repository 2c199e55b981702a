"""MX and HiF4 matmuls end to end, as the public a5/a6 kernels build them, and the windowed moves
(TEXTRACT, TINSERT) of the coded element types they need.

The program: TLOAD the data (ND global -> mat) and the scales (global scale layouts -> ZZ_MX /
NN_MX mat tiles), TEXTRACT mat -> left / right and mat -> scale_left / scale_right at an offset,
TMATMUL_MX (or TMATMUL_MX_HIF4), TSTORE acc -> global. It is verified for a5 / a6 and run on the
reference and llvm backends; the expectation is computed here from the definitions (a scale code e
is 2**(e - 127) per 32-element K group; a HiF4 value is its E1M2 code times its record's Ea, Eb and
Ec factors), in f64, not by the package's decoders."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError

from scale_support import codes, run

BACKENDS = ("reference", "llvm")
NP = {"f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2, "f16": np.float16}


# ------------------------------------------------------------------------------ global images

def mx_a_zz(s: np.ndarray) -> np.ndarray:
    """M x K/32 scales as the public MX_A_ZZ tensor: element (i, j) at [0, i/16, j/2, i%16, j%2]."""
    m, kb = s.shape
    g = np.zeros((1, m // 16, kb // 2, 16, 2), s.dtype)
    for i in range(m):
        for j in range(kb):
            g[0, i // 16, j // 2, i % 16, j % 2] = s[i, j]
    return g


def mx_b_nn(s: np.ndarray) -> np.ndarray:
    """K/32 x N scales as the public MX_B_NN tensor: element (i, j) at [0, j/16, i/2, j%16, i%2],
    which is MX_A_ZZ's placement of the transposed matrix."""
    return mx_a_zz(s.T)


def hif4_b_nn(r: np.ndarray) -> np.ndarray:
    """K/16 x N HiF4 record bytes as the public HIF4_B_NN tensor (64-byte patches of 16 columns):
    byte (i, j) at [0, j/16, i/4, ((i%4)/2)*8 + (j%16)/2, (j%2)*2 + i%2]."""
    rb, n = r.shape
    g = np.zeros((1, n // 16, rb // 4, 16, 4), np.uint8)
    for i in range(rb):
        for j in range(n):
            g[0, j // 16, i // 4, ((i % 4) // 2) * 8 + (j % 16) // 2, (j % 2) * 2 + i % 2] = r[i, j]
    return g


# ------------------------------------------------------------------------------ the program

def program(op: str, data_a: str, data_b: str, scale_a: str, scale_b: str, m: int, n: int, k: int) -> str:
    """A (m x k) and B (k x n) load whole; the 16 x 16 product of A's rows 16.. and B's
    columns 16.. is extracted, multiplied and stored. B's scale tile has k/32 rows (MX) or k/16
    (HiF4 records)."""
    kb = k // 32 if op == "tmatmul_mx" else k // 16
    ga, gb, gc = f"!pto.memref<{m}x{k}x{data_a}>", f"!pto.memref<{k}x{n}x{data_b}>", "!pto.memref<16x16xf32>"
    gsa = f"!pto.memref<1x{m // 16}x{k // 64}x16x2x{scale_a}, layout=MX_A_ZZ>"
    gsb = (f"!pto.memref<1x{n // 16}x{k // 64}x16x2x{scale_b}, layout=MX_B_NN>" if op == "tmatmul_mx"
           else f"!pto.memref<1x{n // 16}x{k // 64}x16x4x{scale_b}, layout=HIF4_B_NN>")
    ma, mb = f"!pto.tile<{m}x{k}x{data_a}, loc=mat, layout=NZ>", f"!pto.tile<{k}x{n}x{data_b}, loc=mat>"
    msa = f"!pto.tile<{m}x{k // 32}x{scale_a}, loc=mat, layout=ZZ_MX>"
    msb = f"!pto.tile<{kb}x{n}x{scale_b}, loc=mat, layout=NN_MX>"
    la, rb = f"!pto.tile<16x{k}x{data_a}, loc=left, layout=NZ>", f"!pto.tile<{k}x16x{data_b}, loc=right, layout=ZN>"
    sa = f"!pto.tile<16x{k // 32}x{scale_a}, loc=scale_left, layout=ZZ_MX>"
    sb = f"!pto.tile<{kb}x16x{scale_b}, loc=scale_right, layout=NN_MX>"
    acc = "!pto.tile<16x16xf32, loc=acc, layout=NZ>"
    return (f"kernel @mx(%ga : {ga}, %gb : {gb}, %gsa : {gsa}, %gsb : {gsb}, %gc : {gc}) {{\n"
            f"  %c0 = arith.constant 0 : index\n  %c16 = arith.constant 16 : index\n"
            f"  %ma = tload %ga[0, 0] : ({ga}) -> {ma}\n"
            f"  %mb = tload %gb[0, 0] : ({gb}) -> {mb}\n"
            f"  %msa = tload %gsa[0, 0, 0, 0, 0] : ({gsa}) -> {msa}\n"
            f"  %msb = tload %gsb[0, 0, 0, 0, 0] : ({gsb}) -> {msb}\n"
            f"  %a = textract %ma, %c16, %c0 : ({ma}, index, index) -> {la}\n"
            f"  %b = textract %mb, %c0, %c16 : ({mb}, index, index) -> {rb}\n"
            f"  %sa = textract %msa, %c16, %c0 : ({msa}, index, index) -> {sa}\n"
            f"  %sb = textract %msb, %c0, %c16 : ({msb}, index, index) -> {sb}\n"
            f"  %c = {op} %a, %sa, %b, %sb : ({la}, {sa}, {rb}, {sb}) -> {acc}\n"
            f"  tstore %gc[0, 0], %c : ({gc}, {acc})\n}}\n")


def scale_values(s: np.ndarray) -> np.ndarray:
    """E8M0 codes as numbers: 2**(e - 127), 0xFF NaN."""
    v = np.exp2(s.astype(np.float64) - 127)
    return np.where(s == 0xFF, np.nan, v)


# ------------------------------------------------------------------------------ MX


@pytest.mark.parametrize("profile", ["a5", "a6"])
@pytest.mark.parametrize("data", ["f8e4m3", "f8e5m2"])
@pytest.mark.parametrize("scale", ["u8", "f8e8m0"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_mx_matmul_from_global_to_global(profile: str, data: str, scale: str, backend: str) -> None:
    m, n, k = 32, 32, 128
    text = program("tmatmul_mx", data, data, scale, scale, m, n, k)
    assert codes(text, profile) == []
    rng = np.random.default_rng(5)
    a = rng.uniform(-4, 4, (m, k)).astype(NP[data])
    b = rng.uniform(-4, 4, (k, n)).astype(NP[data])
    sa = rng.integers(112, 142, (m, k // 32)).astype(np.uint8)
    sb = rng.integers(112, 142, (k // 32, n)).astype(np.uint8)
    x = a[16:].astype(np.float64) * np.repeat(scale_values(sa[16:]), 32, axis=1)
    y = b[:, 16:].astype(np.float64) * np.repeat(scale_values(sb[:, 16:]), 32, axis=0)
    want = x @ y
    out = run(text, backend, profile, {"ga": a, "gb": b, "gsa": mx_a_zz(sa), "gsb": mx_b_nn(sb),
                                        "gc": np.full((16, 16), 7.0, np.float32)})
    bound = np.abs(x) @ np.abs(y) * (k * 2.0 ** -24) + np.abs(want) * 2.0 ** -24
    assert np.all(np.abs(out["gc"] - want) <= bound)


def test_mx_program_is_refused_without_mx() -> None:
    text = program("tmatmul_mx", "f8e4m3", "f8e4m3", "u8", "u8", 32, 32, 64)
    for profile in ("a2", "a3", "kirin9030"):
        assert "LEGAL_UNSUPPORTED_INSTRUCTION" in codes(text, profile), profile


# ------------------------------------------------------------------------------ HiF4 (a6)

E1M2 = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75)       # codes 0..7; bit 3 is the sign


def hif4_values(b: np.ndarray, rec: np.ndarray) -> np.ndarray:
    """B from its E1M2 codes and each column's record of every 64-element K block: Ea (byte 0:
    (1 + m/4) * 2**(e - 48), 0 for the zero byte), one Eb bit per 8 elements (byte 1), one Ec bit
    per 4 elements (bytes 2, 3, little-endian): value * Ea * 2**(Eb bit + Ec bit)."""
    k, n = b.shape
    out = np.zeros((k, n))
    for kk in range(k):
        g, p = divmod(kk, 64)
        for j in range(n):
            c = int(b[kk, j])
            ea, eb, lo, hi = (int(rec[4 * g + t, j]) for t in range(4))
            eav = 0.0 if ea == 0 else (1 + (ea & 3) / 4) * 2.0 ** ((ea >> 2) - 48)
            bits = ((eb >> (p // 8)) & 1) + ((((hi << 8) | lo) >> (p // 4)) & 1)
            out[kk, j] = E1M2[c & 7] * (-1.0 if c & 8 else 1.0) * eav * 2.0 ** bits
    return out


@pytest.mark.parametrize("scale", ["u8", "f8e8m0"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_hif4_matmul_from_global_to_global_on_a6(scale: str, backend: str) -> None:
    m, n, k = 32, 64, 128        # a mat row of 64 fp4 elements is 32 bytes (the NPU row rule)
    text = program("tmatmul_mx_hif4", "f16", "hifloat4x2", scale, "u8", m, n, k)
    assert codes(text, "a6") == []
    assert "LEGAL_UNSUPPORTED_INSTRUCTION" in codes(text, "a5")       # HiF4 is a6's
    rng = np.random.default_rng(9)
    a = rng.uniform(-2, 2, (m, k)).astype(np.float16)
    sa = rng.integers(120, 134, (m, k // 32)).astype(np.uint8)
    b = rng.integers(0, 16, (k, n)).astype(np.uint8)
    rec = rng.integers(0, 256, (k // 16, n)).astype(np.uint8)
    rec[0::4] = rng.integers(4 * 44, 4 * 52, (k // 64, n))            # Ea near 2**0: moderate products
    rec[0, 20] = 0                                                      # a zero Ea: column 4 of block 0 is 0
    x = a[16:].astype(np.float64) * np.repeat(scale_values(sa[16:]), 32, axis=1)
    y = hif4_values(b, rec)[:, 16:32]
    want = x @ y
    out = run(text, backend, "a6", {"ga": a, "gb": b, "gsa": mx_a_zz(sa), "gsb": hif4_b_nn(rec),
                                     "gc": np.full((16, 16), 7.0, np.float32)})
    bound = np.abs(x) @ np.abs(y) * (k * 2.0 ** -24) + np.abs(want) * 2.0 ** -24
    assert np.all(np.abs(out["gc"] - want) <= bound)


# ------------------------------------------------------------------------------ windowed codes

CODED = ("f8e8m0", "hifloat8", "float4_e2m1x2", "float4_e1m2x2")


def window_program(op: str, d: str, loc: str = "vec") -> str:
    big, small = f"!pto.tile<32x128x{d}, loc={loc}>", f"!pto.tile<16x64x{d}>"     # fp4: 32-byte rows
    if op == "textract":
        body = f"  %s = textract %b, %c8, %c16 : ({big}, index, index) -> {small}\n"
    else:
        body = f"  %b = tinsert %s, %c8, %c16 : ({small}, index, index) -> {big}\n"
    return (f"kernel @w(%b : {big}, %s : {small}) {{\n  %c8 = arith.constant 8 : index\n"
            f"  %c16 = arith.constant 16 : index\n{body}}}\n")


@pytest.mark.parametrize("d", CODED)
@pytest.mark.parametrize("op", ["textract", "tinsert"])
def test_windowed_codes_per_profile(op: str, d: str) -> None:
    text = window_program(op, d)
    for profile in ("cpu", "a5"):
        assert codes(text, profile) == [], profile
    for profile in ("a2", "a3"):
        assert "LEGAL_DTYPE" in codes(text, profile), profile
    # a6 implements TEXTRACT (its own header lists these types), not TINSERT
    assert ("LEGAL_UNSUPPORTED_INSTRUCTION" in codes(text, "a6")) == (op == "tinsert")


def test_i4_windows_stay_on_cpu() -> None:
    assert codes(window_program("textract", "i4"), "cpu") == []
    assert "LEGAL_DTYPE" in codes(window_program("textract", "i4"), "a5")


def test_windowed_codes_do_not_change_dtype() -> None:
    big, small = "!pto.tile<32x64xu8>", "!pto.tile<16x32xf8e8m0>"
    text = (f"kernel @w(%b : {big}, %s : {small}) {{\n  %c0 = arith.constant 0 : index\n"
            f"  %s = textract %b, %c0, %c0 : ({big}, index, index) -> {small}\n}}\n")
    assert "LEGAL_DTYPE" in codes(text, "cpu")


@pytest.mark.parametrize("d", CODED)
@pytest.mark.parametrize("backend", BACKENDS)
def test_textract_and_tinsert_move_every_code(d: str, backend: str) -> None:
    """Every byte value goes through both windows unchanged (an e8m0 0xFF NaN, hifloat8's 0x80,
    fp4 codes 0 .. 15 included); the rest of TINSERT's dst keeps its bytes."""
    limit = 16 if d.startswith("float4") else 256
    big = (np.arange(32 * 128) % limit).astype(np.uint8).reshape(32, 128)
    small = ((np.arange(16 * 64) * 7 + 3) % limit).astype(np.uint8).reshape(16, 64)
    out = run(window_program("textract", d), backend, "a5", {"b": big, "s": np.zeros_like(small)})
    np.testing.assert_array_equal(out["s"], big[8:24, 16:80])
    out = run(window_program("tinsert", d), backend, "a5", {"b": big, "s": small})
    want = big.copy()
    want[8:24, 16:80] = small
    np.testing.assert_array_equal(out["b"], want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_scale_window_offsets_pick_the_scales(backend: str) -> None:
    """mat -> scale_left at row 16 and mat -> scale_right at column 16 (f8e8m0 codes)."""
    msa, sa = "!pto.tile<48x4xf8e8m0, loc=mat, layout=ZZ_MX>", "!pto.tile<16x4xf8e8m0, loc=scale_left, layout=ZZ_MX>"
    msb, sb = "!pto.tile<4x48xf8e8m0, loc=mat, layout=NN_MX>", "!pto.tile<4x16xf8e8m0, loc=scale_right, layout=NN_MX>"
    text = (f"kernel @s(%msa : {msa}, %msb : {msb}, %sa : {sa}, %sb : {sb}) {{\n"
            f"  %c0 = arith.constant 0 : index\n  %c16 = arith.constant 16 : index\n"
            f"  %c2 = arith.constant 2 : index\n"
            f"  %sa = textract %msa, %c16, %c0 : ({msa}, index, index) -> {sa}\n"
            f"  %sb = textract %msb, %c0, %c16 : ({msb}, index, index) -> {sb}\n}}\n")
    for profile in ("a5", "a6", "cpu"):
        assert codes(text, profile) == [], profile
    assert "LEGAL_LAYOUT" in codes(text, "a2")
    ma = np.arange(48 * 4, dtype=np.uint8).reshape(48, 4)
    mb = (255 - np.arange(4 * 48)).astype(np.uint8).reshape(4, 48)
    out = run(text, backend, "a6", {"msa": ma, "msb": mb, "sa": np.zeros((16, 4), np.uint8),
                                    "sb": np.zeros((4, 16), np.uint8)})
    np.testing.assert_array_equal(out["sa"], ma[16:32])
    np.testing.assert_array_equal(out["sb"], mb[:, 16:32])


def test_scale_window_outside_the_source_faults() -> None:
    msa, sa = "!pto.tile<32x2xu8, loc=mat, layout=ZZ_MX>", "!pto.tile<16x2xu8, loc=scale_left, layout=ZZ_MX>"
    text = (f"kernel @s(%msa : {msa}, %sa : {sa}, %r : index) {{\n  %c0 = arith.constant 0 : index\n"
            f"  %sa = textract %msa, %r, %c0 : ({msa}, index, index) -> {sa}\n}}\n")
    for backend in BACKENDS:
        exe = pto.compile(pto.parse(text), backend, "a5")
        with pytest.raises(PTOError) as e:
            exe(msa=np.zeros((32, 2), np.uint8), sa=np.zeros((16, 2), np.uint8), r=17)
        assert e.value.code == "RUNTIME_OOB", backend
