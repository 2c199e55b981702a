"""Semantics and declarations of the matrix family (TMATMUL*, TGEMV*), checked against plain numpy /
Python expectations computed here."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import openpto.isa as I
from openpto.isa import dtypes as dt
from openpto.isa.constraints import check_all
from openpto.isa.spec import Domain, Family
from openpto.isa.types import Location, Pipe, parse_type

ACC, LEFT, RIGHT, BIAS = Location.ACC, Location.LEFT, Location.RIGHT, Location.BIAS
POISON = {np.dtype(np.float32): np.float32(-777.0), np.dtype(np.int32): np.int32(-777)}


def t(array: np.ndarray, loc: Location, valid: tuple[int, int] | None = None, dtype: object = None) -> I.Tile:
    return I.Tile.of(np.asarray(array, dtype=dtype) if dtype is not None else np.asarray(array), valid, loc=loc)


def acc(shape: tuple[int, int], dtype: type = np.float32) -> I.Tile:
    return I.Tile.of(np.full(shape, POISON[np.dtype(dtype)], dtype=dtype), loc=ACC)


def run(name: str, **kw: object) -> None:
    I.get(name).execute(**kw)


def errors(name: str, types: dict[str, str]) -> list[str]:
    ins = I.get(name)
    parsed = {k: parse_type(v) for k, v in types.items()}
    return [c.code for c, _ in check_all(ins.constraints, parsed, {})]


def fault(code: str):  # noqa: ANN201
    return pytest.raises(I.RuntimeFault, match=code)


def rand_ints(rng: np.random.Generator, shape: tuple[int, int], lo: int = -8, hi: int = 8) -> np.ndarray:
    return rng.integers(lo, hi, shape).astype(np.float64)


# ----------------------------------------------------------------------------- TMATMUL

@pytest.mark.parametrize("in_dtype", [np.float16, ml_dtypes.bfloat16, np.float32])
def test_tmatmul_float_inputs_exact_small_integers(in_dtype: type) -> None:
    rng = np.random.default_rng(1)
    a, b = rand_ints(rng, (5, 7)), rand_ints(rng, (7, 3))
    dst = acc((5, 3))
    run("TMATMUL", dst=dst, a=t(a, LEFT, dtype=in_dtype), b=t(b, RIGHT, dtype=in_dtype))
    assert dst.data.tolist() == (a @ b).tolist()


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 9), st.integers(0, 40), st.integers(1, 9), st.integers(0, 2**32 - 1))
def test_tmatmul_random_f16_within_sum_tolerance(m: int, k: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    dst = acc((m, n))
    run("TMATMUL", dst=dst, a=t(a, LEFT), b=t(b, RIGHT))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(dst.data - exact) <= 2.0**-23 * bound + 1e-45)


def test_tmatmul_rounds_once_after_exact_sum() -> None:
    a = np.array([[1.0, 2.0**-24, 2.0**-24]], np.float32)     # sequential f32 sum would stay at 1.0
    dst = acc((1, 1))
    run("TMATMUL", dst=dst, a=t(a, LEFT), b=t(np.ones((3, 1), np.float32), RIGHT))
    assert dst.data[0, 0] == np.float32(1 + 2.0**-23)


def test_tmatmul_special_values() -> None:
    a = np.array([[np.inf, 1.0], [np.inf, -np.inf], [2e38, 2e38], [2e38, 2e38], [np.nan, 0.0]], np.float32)
    b = np.array([[0.0, 1.0, 1.0], [1.0, 1.0, -1.0]], np.float32)
    dst = acc((5, 3))
    run("TMATMUL", dst=dst, a=t(a, LEFT), b=t(b, RIGHT))
    d = dst.data
    assert np.isnan(d[0, 0]) and d[0, 1] == np.inf            # inf * 0 = NaN
    assert np.isnan(d[1, 1]) and d[1, 2] == np.inf             # inf + -inf = NaN
    assert d[2, 1] == np.inf and d[2, 2] == 0.0                # overflow only at the final rounding
    assert np.all(np.isnan(d[4]))


def test_tmatmul_partial_sum_does_not_overflow_and_denormals_kept() -> None:
    a = np.array([[3e38, 3e38, -3e38], [1e-38, 1e-38, 0.0]], np.float32)
    b = np.array([[1.0], [1.0], [1.0]], np.float32)
    b2 = np.array([[2.0**-10], [2.0**-10], [1.0]], np.float32)
    dst, dst2 = acc((2, 1)), acc((2, 1))
    run("TMATMUL", dst=dst, a=t(a, LEFT), b=t(b, RIGHT))
    run("TMATMUL", dst=dst2, a=t(a, LEFT), b=t(b2, RIGHT))
    assert dst.data[0, 0] == np.float32(3e38)
    tiny = 2 * float(np.float32(1e-38)) * 2.0**-10                  # an f32 denormal after rounding
    assert dst2.data[1, 0] == np.float32(tiny) and dst2.data[1, 0] != 0


def test_tmatmul_i8_accumulates_in_i32() -> None:
    a = np.full((2, 32), -128, np.int8)
    b = np.full((32, 2), -128, np.int8)
    b[:, 1] = 127
    dst = acc((2, 2), np.int32)
    run("TMATMUL", dst=dst, a=t(a, LEFT), b=t(b, RIGHT))
    assert dst.data.tolist() == [[524288, -520192]] * 2


def test_tmatmul_partial_valid_regions() -> None:
    rng = np.random.default_rng(3)
    a = np.full((16, 16), np.nan, np.float32)
    b = np.full((16, 16), np.nan, np.float32)
    a[:3, :5], b[:5, :7] = rand_ints(rng, (3, 5)), rand_ints(rng, (5, 7))
    dst = acc((16, 16))
    run("TMATMUL", dst=dst, a=t(a, LEFT, (3, 5)), b=t(b, RIGHT, (5, 7)))
    assert dst.data[:3, :7].tolist() == (a[:3, :5].astype(np.float64) @ b[:5, :7]).tolist()
    untouched = np.ones((16, 16), bool)
    untouched[:3, :7] = False
    assert np.all(dst.data[untouched] == POISON[np.dtype(np.float32)])


def test_tmatmul_reads_inside_valid_regions_only() -> None:
    with fault("RUNTIME_INVALID_READ"):
        run("TMATMUL", dst=acc((4, 4)), a=t(np.ones((4, 4), np.float32), LEFT),
            b=t(np.ones((4, 4), np.float32), RIGHT, (3, 4)))


def test_tmatmul_empty_k_is_zero() -> None:
    dst = acc((2, 2))
    run("TMATMUL", dst=dst, a=t(np.ones((2, 4), np.float16), LEFT, (2, 0)), b=t(np.ones((4, 2), np.float16), RIGHT))
    assert dst.data.tolist() == [[0, 0], [0, 0]]


@pytest.mark.parametrize("fa,fb", [(ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fn),
                                   (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2),
                                   (ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2)])
def test_tmatmul_fp8_pairs(fa: type, fb: type) -> None:
    a = np.array([[0.5, -1.5, 3.0], [448.0 if fa is ml_dtypes.float8_e4m3fn else 57344.0, 0.0, 1.0]])
    b = np.array([[2.0], [0.25], [-0.125]])
    dst = acc((2, 1))
    run("TMATMUL", dst=dst, a=t(a, LEFT, dtype=fa), b=t(b, RIGHT, dtype=fb))
    assert dst.data.tolist() == (a @ b).tolist()


# ----------------------------------------------------------------------------- _ACC / _BIAS

def test_tmatmul_acc_adds_before_the_single_rounding() -> None:
    prior = t(np.array([[1.0, 5.0]], np.float32), ACC)
    a = np.array([[2.0**-24, 2.0**-24]], np.float32)
    b = np.array([[1.0, 2.0], [1.0, 0.5]], np.float32)
    dst = acc((1, 2))
    run("TMATMUL_ACC", dst=dst, acc_in=prior, a=t(a, LEFT), b=t(b, RIGHT))
    assert dst.data[0, 0] == np.float32(1 + 2.0**-23)    # 1 + 2^-24 + 2^-24 rounded once
    assert dst.data[0, 1] == np.float32(5.0)             # 5 + 2.5 * 2^-24 is below half an ulp


def test_tmatmul_acc_in_place_and_i32_wrap() -> None:
    c = t(np.array([[2**31 - 1, 10]], np.int32), ACC)
    run("TMATMUL_ACC", dst=c, acc_in=c, a=t(np.array([[1, 2]], np.int8), LEFT),
        b=t(np.array([[1, -3], [0, 4]], np.int8), RIGHT))
    assert c.data.tolist() == [[-2**31, 15]]


def test_tmatmul_acc_reads_acc_in_valid_region() -> None:
    with fault("RUNTIME_INVALID_READ"):
        run("TMATMUL_ACC", dst=acc((2, 2)), acc_in=t(np.zeros((2, 2), np.float32), ACC, (1, 2)),
            a=t(np.ones((2, 2), np.float32), LEFT), b=t(np.ones((2, 2), np.float32), RIGHT))


@pytest.mark.parametrize("dtype,in_dtype", [(np.float32, np.float16), (np.int32, np.int8)])
def test_tmatmul_bias_broadcasts_over_rows(dtype: type, in_dtype: type) -> None:
    rng = np.random.default_rng(5)
    a, b = rand_ints(rng, (3, 4)), rand_ints(rng, (4, 5))
    bias = np.array([[10, -20, 30, -40, 50, 999]])
    dst = acc((3, 5), dtype)
    run("TMATMUL_BIAS", dst=dst, a=t(a, LEFT, dtype=in_dtype), b=t(b, RIGHT, dtype=in_dtype),
        bias=t(bias, BIAS, (1, 5), dtype=dtype))
    assert dst.data.tolist() == (a @ b + bias[:, :5]).tolist()


def test_tmatmul_bias_i32_wraps_and_f32_rounds_once() -> None:
    dst = acc((1, 1), np.int32)
    run("TMATMUL_BIAS", dst=dst, a=t(np.array([[127]], np.int8), LEFT), b=t(np.array([[2]], np.int8), RIGHT),
        bias=t(np.array([[2**31 - 200]], np.int32), BIAS))
    assert dst.data[0, 0] == -2**31 + 54
    f = acc((1, 1))
    run("TMATMUL_BIAS", dst=f, a=t(np.array([[2.0**-24, 2.0**-24]], np.float32), LEFT),
        b=t(np.ones((2, 1), np.float32), RIGHT), bias=t(np.array([[1.0]], np.float32), BIAS))
    assert f.data[0, 0] == np.float32(1 + 2.0**-23)


# ----------------------------------------------------------------------------- MX

def mx_expect(a: np.ndarray, sa: np.ndarray, b: np.ndarray, sb: np.ndarray) -> list[list[float]]:
    """Plain-Python reference: scale code e means 2**(e-127); 255 means NaN."""
    def scale(e: int) -> float:
        return math.nan if e == 255 else math.ldexp(1.0, int(e) - 127)
    m, k = a.shape
    n = b.shape[1]
    return [[float(np.float32(math.fsum(float(a[i, p]) * scale(sa[i, p // 32]) * float(b[p, j]) * scale(sb[p // 32, j])
                                  for p in range(k)))) for j in range(n)] for i in range(m)]


def test_tmatmul_mx_block_scales() -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(-4, 5, (2, 40)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.integers(-4, 5, (40, 3)).astype(ml_dtypes.float8_e5m2)
    sa = np.array([[127, 128], [120, 134]], np.uint8)          # scales 2**-7 .. 2**7: exact f64 sums
    sb = np.array([[126, 130, 127], [127, 117, 137]], np.uint8)
    dst = acc((2, 3))
    run("TMATMUL_MX", dst=dst, a=t(a, LEFT), scale_a=t(sa, LEFT), b=t(b, RIGHT), scale_b=t(sb, RIGHT))
    assert dst.data.tolist() == mx_expect(a, sa, b, sb)


def test_tmatmul_mx_nan_scale_and_tiny_scale() -> None:
    a = np.ones((2, 64), ml_dtypes.float8_e4m3fn)
    b = np.ones((64, 1), ml_dtypes.float8_e4m3fn)
    sa = np.array([[255, 127], [0, 0]], np.uint8)
    sb = np.array([[127], [127]], np.uint8)
    dst = acc((2, 1))
    run("TMATMUL_MX", dst=dst, a=t(a, LEFT), scale_a=t(sa, LEFT), b=t(b, RIGHT), scale_b=t(sb, RIGHT))
    assert np.isnan(dst.data[0, 0])
    assert dst.data[1, 0] == np.float32(2.0**-121)            # 64 * 2**-127, not flushed


def test_tmatmul_mx_reads_scales_in_valid_region() -> None:
    with fault("RUNTIME_INVALID_READ"):
        run("TMATMUL_MX", dst=acc((1, 1)), a=t(np.ones((1, 33), ml_dtypes.float8_e4m3fn), LEFT),
            scale_a=t(np.full((1, 2), 127, np.uint8), LEFT, (1, 1)),
            b=t(np.ones((33, 1), ml_dtypes.float8_e4m3fn), RIGHT), scale_b=t(np.full((2, 1), 127, np.uint8), RIGHT))


# ----------------------------------------------------------------------------- TGEMV

def test_tgemv_uses_row_zero_only() -> None:
    a = np.array([[1.0, 2.0, 3.0], [np.nan, np.nan, np.nan]], np.float16)
    b = np.array([[1.0, 0.5], [2.0, -1.0], [0.0, 4.0]], np.float16)
    dst = acc((2, 2))
    run("TGEMV", dst=dst, a=t(a, LEFT), b=t(b, RIGHT))
    assert dst.data[0].tolist() == [5.0, 10.5]
    assert np.all(dst.data[1] == POISON[np.dtype(np.float32)])


def test_tgemv_acc_bias_and_i8() -> None:
    a = np.array([[3, -4]], np.int8)
    b = np.array([[1, 2, 3], [4, 5, 6]], np.int8)
    c = acc((1, 3), np.int32)
    run("TGEMV_ACC", dst=c, acc_in=t(np.array([[1, 1, 2**31 - 1]], np.int32), ACC), a=t(a, LEFT), b=t(b, RIGHT))
    assert c.data.tolist() == [[-12, -13, 2**31 - 1 - 15]]
    d = acc((1, 3))
    run("TGEMV_BIAS", dst=d, a=t(a.astype(np.float32), LEFT), b=t(b.astype(np.float32), RIGHT),
        bias=t(np.array([[0.5, 0.25, -0.5]], np.float32), BIAS))
    assert d.data.tolist() == [[-12.5, -13.75, -15.5]]


def test_tgemv_mx() -> None:
    a = np.full((1, 64), 2.0, ml_dtypes.float8_e4m3fn)
    b = np.full((64, 2), 0.5, ml_dtypes.float8_e4m3fn)
    sa = np.array([[128, 126]], np.uint8)
    sb = np.array([[127, 129], [127, 127]], np.uint8)
    dst = acc((1, 2))
    run("TGEMV_MX", dst=dst, a=t(a, LEFT), scale_a=t(sa, LEFT), b=t(b, RIGHT), scale_b=t(sb, RIGHT))
    assert dst.data.tolist() == [[32 * 2 + 32 * 0.5, 32 * 8 + 32 * 0.5]]


# ----------------------------------------------------------------------------- declarations

MNEMONICS = ["TMATMUL", "TMATMUL_ACC", "TMATMUL_BIAS", "TMATMUL_MX", "TMATMUL_MX_HIF4", "TGEMV", "TGEMV_ACC", "TGEMV_BIAS", "TGEMV_MX"]


def test_family_metadata() -> None:
    assert sorted(i.mnemonic for i in I.by_family()[Family.MATRIX]) == sorted(MNEMONICS)
    for name in MNEMONICS:
        ins = I.get(name)
        assert ins.pipe_for({}) is Pipe.M and ins.numerics.kind == "sum"
        assert ins.operand("dst").locations == (ACC,) and ins.operand("a").locations == (LEFT,)
        assert ins.operand("b").locations == (RIGHT,)
    assert I.get("TMATMUL").domain is Domain.MATMUL and I.get("TGEMV").domain is Domain.SPECIAL
    assert I.lookup("tmatmul.acc") is I.get("TMATMUL_ACC") and I.lookup("tgemv.mx") is I.get("TGEMV_MX")
    assert I.get("TMATMUL_BIAS").operand("bias").locations == (BIAS,)


def test_dtype_tables() -> None:
    mm = I.get("TMATMUL")
    for triple in [(dt.I32, dt.I8, dt.I8), (dt.F32, dt.F16, dt.F16), (dt.F32, dt.BF16, dt.BF16),
                   (dt.F32, dt.F32, dt.F32)]:
        assert mm.dtype_rule("a2").allows(triple) and mm.dtype_rule("a5").allows(triple)
    fp8 = (dt.F32, dt.F8E4M3, dt.F8E5M2)
    assert mm.dtype_rule("a5").allows(fp8) and not mm.dtype_rule("a3").allows(fp8)
    assert not mm.dtypes.allows((dt.F32, dt.I8, dt.I8)) and not mm.dtypes.allows((dt.F16, dt.F16, dt.F16))
    assert I.get("TMATMUL_BIAS").dtypes.allows((dt.I32, dt.I8, dt.I8, dt.I32))
    assert not I.get("TMATMUL_BIAS").dtypes.allows((dt.F32, dt.F16, dt.F16, dt.F16))
    mx = I.get("TMATMUL_MX")
    assert mx.profiles == ("cpu", "a5") and mx.dtypes.allows((dt.F32, dt.F8E5M2, dt.U8, dt.F8E4M3, dt.U8))
    assert not mx.dtypes.allows((dt.F32, dt.F16, dt.U8, dt.F16, dt.U8))


BASE = {"dst": "!pto.tile<16x16xf32, loc=acc, layout=NZ>", "a": "!pto.tile<16x16xf16, loc=left, layout=NZ>",
        "b": "!pto.tile<16x16xf16, loc=right, layout=ZN>"}


@pytest.mark.parametrize("change,codes", [
    ({}, []),
    ({"a": "!pto.tile<16x16xf16, loc=left>", "b": "!pto.tile<16x16xf16, loc=right, layout=ZZ>"}, []),
    ({"a": "!pto.tile<16x32xf16, loc=left, layout=NZ>"}, ["STRUCT_SHAPE", "STRUCT_VALID_REGION"]),
    ({"a": "!pto.tile<16x16xf16, loc=left, layout=NZ, valid=16x8>"}, []),
    ({"b": "!pto.tile<16x16xf16, loc=right, layout=ZN, valid=8x16>"}, ["STRUCT_VALID_REGION"]),
    ({"dst": "!pto.tile<16x16xf32, loc=acc, layout=NZ, valid=8x16>"}, ["STRUCT_VALID_REGION"]),
    ({"a": "!pto.tile<16x8xf16, loc=left, layout=NZ>", "b": "!pto.tile<8x16xf16, loc=right, layout=ZN>"},
     ["LEGAL_LAYOUT"]),
    ({"a": "!pto.tile<16x8xf32, loc=left, layout=NZ>", "b": "!pto.tile<8x16xf32, loc=right, layout=ZN>"}, []),
    ({"dst": "!pto.tile<8x16xf32, loc=acc, layout=NZ>", "a": "!pto.tile<8x16xf16, loc=left, layout=NZ>"},
     ["LEGAL_LAYOUT"]),
])
def test_tmatmul_static_rules(change: dict, codes: list[str]) -> None:
    assert errors("TMATMUL", {**BASE, **change}) == codes


def test_form_specific_static_rules() -> None:
    bias = {**BASE, "bias": "!pto.tile<1x16xf32, loc=bias>"}
    assert errors("TMATMUL_BIAS", bias) == []
    assert errors("TMATMUL_BIAS", {**bias, "bias": "!pto.tile<2x16xf32, loc=bias>"}) == ["STRUCT_SHAPE"]
    assert errors("TMATMUL_BIAS", {**bias, "bias": "!pto.tile<1x8xf32, loc=bias>"}) == ["STRUCT_VALID_REGION"]
    accf = {**BASE, "acc_in": BASE["dst"]}
    assert errors("TMATMUL_ACC", accf) == []
    assert errors("TMATMUL_ACC", {**accf, "acc_in": "!pto.tile<32x16xf32, loc=acc, layout=NZ>"}) == ["STRUCT_SHAPE"]
    mx = {"dst": BASE["dst"], "a": "!pto.tile<16x64xf8e4m3, loc=left, layout=NZ>",
          "b": "!pto.tile<64x16xf8e5m2, loc=right, layout=ZN>",
          "scale_a": "!pto.tile<16x2xu8, loc=left>", "scale_b": "!pto.tile<2x16xu8, loc=right>"}
    assert errors("TMATMUL_MX", mx) == []
    assert errors("TMATMUL_MX", {**mx, "scale_a": "!pto.tile<16x1xu8, loc=left>"}) == ["STRUCT_VALID_REGION"]
    assert errors("TMATMUL_MX", {**mx, "scale_b": "!pto.tile<1x16xu8, loc=right>"}) == ["STRUCT_VALID_REGION"]
    gemv = {"dst": "!pto.tile<1x16xf32, loc=acc, layout=NZ>", "a": "!pto.tile<1x16xf16, loc=left, layout=NZ>",
            "b": BASE["b"]}
    assert errors("TGEMV", gemv) == []
