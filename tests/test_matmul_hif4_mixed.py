"""TMATMUL_MX_HIF4's mixed overloads (A6: f8e4m3 / f16 / bf16 A with HiFloat4 B): a hand-worked
product, random products against an expectation computed here element by element (E1M2 table,
e6m2 and E8M0 formulas written out, not the package's decoders), reference and llvm agreement
on special values, and the verifier's per-profile and per-pair rules."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest


from decl_support import decl_codes
from llvm_support import run_program

E1M2 = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]          # codes 0..7; bit 3 is the sign
NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f8e4m3": ml_dtypes.float8_e4m3fn}


def program(adt: str, m: int, k: int, n: int) -> str:
    box = m % 16 == 0 and n % 16 == 0          # boxed layouts only where the fractals are whole
    acc = f"!pto.tile<{m}x{n}xf32, loc=acc{', layout=NZ' if box else ''}>"
    a = f"!pto.tile<{m}x{k}x{adt}, loc=left{', layout=NZ' if box else ''}>"
    sa = f"!pto.tile<{m}x{k // 32}xu8, loc=scale_left>"
    b = f"!pto.tile<{k}x{n}xhifloat4x2, loc=right{', layout=ZN' if box else ''}>"
    sb = f"!pto.tile<{k // 16}x{n}xu8, loc=scale_right, layout=DN>"
    return (f"kernel @k(%c : {acc}, %a : {a}, %sa : {sa}, %b : {b}, %sb : {sb}) {{\n"
            f"  %c = pto.tmatmul_mx_hif4 %a, %sa, %b, %sb : ({a}, {sa}, {b}, {sb}) -> {acc}\n}}\n")


def both(adt: str, a: np.ndarray, sa: np.ndarray, b: np.ndarray, sb: np.ndarray) -> dict[str, np.ndarray]:
    (m, k), n = a.shape, b.shape[1]
    text = program(adt, m, k, n)
    args = {"c": np.full((m, n), 99.0, np.float32), "a": a.astype(NP[adt]), "sa": sa.astype(np.uint8),
            "b": b.astype(np.uint8), "sb": sb.astype(np.uint8)}
    out = {}
    for backend in ("reference", "llvm"):
        code, res = run_program(text, backend, args)
        assert code is None, (backend, code)
        out[backend] = res["c"]
    return out


def b_value(codes: np.ndarray, rec: np.ndarray, k: int, j: int) -> float:
    """B(k, j) from its code and its column's record of block k // 64 (Ea, Eb byte, Ec low, Ec high)."""
    c = int(codes[k, j])
    mag = E1M2[c & 7] * (-1.0 if c & 8 else 1.0)
    g, p = divmod(k, 64)
    ea, eb, ec_lo, ec_hi = (int(rec[4 * g + t, j]) for t in range(4))
    eav = 0.0 if ea == 0 else (1 + (ea & 3) / 4) * 2.0 ** ((ea >> 2) - 48)
    ebit = (eb >> (p // 8)) & 1
    ecbit = ((ec_hi << 8 | ec_lo) >> (p // 4)) & 1
    return mag * eav * 2.0 ** (ebit + ecbit)


def expect(a: np.ndarray, sa: np.ndarray, b: np.ndarray, sb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The f64 sums and the sums of |terms| (for the tolerance of a reordered f64 sum)."""
    (m, k), n = a.shape, b.shape[1]
    bv = np.array([[b_value(b, sb, kk, j) for j in range(n)] for kk in range(k)])
    av = np.array([[float(a[i, kk]) * 2.0 ** (int(sa[i, kk // 32]) - 127) for kk in range(k)] for i in range(m)])
    terms = av[:, :, None] * bv[None, :, :]
    return terms.sum(axis=1), np.abs(terms).sum(axis=1)


def test_hand_worked_f16_product() -> None:
    """A row 0: 1.5 at k = 0 (block scale 128: x2), -3.0 at k = 40 (scale 126: x0.5) -> 3 and -1.5.
    B column 0: code 4 (1.0) at k = 0 and 0xB (-0.75) at k = 40; Ea 0xC0 = 1.0, Eb bit 5 (octet
    40..47) and Ec bit 10 (quad 40..43, the high byte's bit 2) double it twice: B(40, 0) = -3.
    dst[0, 0] = 3 * 1 + -1.5 * -3 = 7.5; B column 1 has Ea 0, so dst[0, 1] = 0."""
    a = np.zeros((1, 64))
    a[0, 0], a[0, 40] = 1.5, -3.0
    sa = np.array([[128, 126]])
    b = np.zeros((64, 2))
    b[0, 0], b[40, 0], b[:, 1] = 4, 0xB, 7
    sb = np.array([[0xC0, 0x00], [0x20, 0xFF], [0x00, 0xFF], [0x04, 0xFF]])
    for backend, got in both("f16", a, sa, b, sb).items():
        assert got.tolist() == [[7.5, 0.0]], backend


@pytest.mark.parametrize("adt", ["f16", "bf16", "f8e4m3"])
def test_random_products_match_the_element_formula(adt: str) -> None:
    rng = np.random.default_rng({"f16": 1, "bf16": 2, "f8e4m3": 3}[adt])
    m, k, n = 16, 128, 16
    a = (rng.standard_normal((m, k)) * 3).astype(NP[adt])
    sa = rng.integers(120, 135, (m, k // 32))
    b = rng.integers(0, 16, (k, n))
    sb = rng.integers(0, 256, (k // 16, n))
    sb[0::4] = rng.integers(0xA0, 0xE0, (k // 64, n))         # Ea: moderate e6m2 exponents
    sb[0, 3] = 0                                               # one block of column 3 is zero
    want, mag = expect(a, sa, b, sb)
    for backend, got in both(adt, a, sa, b, sb).items():
        assert (np.abs(got.astype(np.float64) - want) <= 2 ** -23 * np.abs(want) + 2 ** -50 * mag).all(), backend


def test_special_values_agree_on_both_backends() -> None:
    """A NaN or infinite A value, or E8M0 code 255, propagates: NaN rows, inf * 0 = NaN."""
    a = np.ones((2, 64))
    a[0, 3] = np.nan
    a[1, 5] = np.inf
    sa = np.full((2, 2), 127)
    b = np.full((64, 2), 4)
    sb = np.zeros((4, 2))
    sb[0] = 0xC0
    sb[0, 1] = 0                                               # column 1 is zero: inf * 0
    out = both("bf16", a, sa, b, sb)
    for got in out.values():
        assert np.isnan(got[0]).all() and got[1, 0] == np.inf and np.isnan(got[1, 1])
    sa[1, 1] = 255
    a[1, 5] = 1.0
    for got in both("f8e4m3", a, sa, b, sb).values():
        assert np.isnan(got[1]).all()


def codes(types: dict[str, str], profile: str = "cpu") -> list[str]:
    return decl_codes("TMATMUL_MX_HIF4", types, profile=profile)


GOOD = {"dst": "!pto.tile<16x16xf32, loc=acc, layout=NZ>", "a": "!pto.tile<16x64xf16, loc=left, layout=NZ>",
        "scale_a": "!pto.tile<16x2xu8, loc=scale_left>", "b": "!pto.tile<64x16xhifloat4x2_t, loc=right, layout=ZN>",
        "scale_b": "!pto.tile<4x16xu8, loc=scale_right, layout=DN>"}


@pytest.mark.parametrize("adt", ["f16", "bf16", "f8e4m3"])
def test_mixed_pairs_are_legal_on_cpu_and_a6_only(adt: str) -> None:
    types = {**GOOD, "a": f"!pto.tile<16x64x{adt}, loc=left, layout=NZ>"}
    assert codes(types) == [] and codes(types, "a6") == []
    for p in ("a5", "a3", "a2"):
        assert codes(types, p) == ["LEGAL_UNSUPPORTED_INSTRUCTION"], p


@pytest.mark.parametrize("change", [
    {"a": "!pto.tile<16x64xf8e5m2, loc=left, layout=NZ>"},                  # e5m2 A: not a header pair
    {"a": "!pto.tile<16x64xf32, loc=left, layout=NZ>"},
    {"a": "!pto.tile<16x64xi8, loc=left, layout=NZ>"},
    {"b": "!pto.tile<64x16xf16, loc=right, layout=ZN>"},                    # B must be HiF4
    {"b": "!pto.tile<64x16xfloat4_e2m1x2, loc=right, layout=ZN>"},
    {"dst": "!pto.tile<16x16xf16, loc=acc, layout=NZ>"},
])
def test_wrong_pairs_are_legal_dtype(change: dict[str, str]) -> None:
    for p in ("cpu", "a6"):
        assert "LEGAL_DTYPE" in codes({**GOOD, **change}, p), (change, p)


def test_scale_a_holds_k_over_32_mx_scales_for_mixed_and_records_for_hif4() -> None:
    assert "STRUCT_VALID_REGION" in codes({**GOOD, "scale_a": "!pto.tile<16x2xu8, loc=scale_left, valid=16x1>"})
    assert "STRUCT_VALID_REGION" in codes({**GOOD, "a": "!pto.tile<16x32xf16, loc=left, layout=NZ>",
                                           "b": "!pto.tile<32x16xhifloat4x2, loc=right, layout=ZN>"})  # K not x64
    hif4 = {**GOOD, "a": "!pto.tile<16x64xhifloat4x2, loc=left, layout=NZ>"}
    assert "STRUCT_VALID_REGION" in codes(hif4)                              # 2 columns: not 4 record bytes
    assert codes({**hif4, "scale_a": "!pto.tile<16x4xu8, loc=scale_left>"}) == []
