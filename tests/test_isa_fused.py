"""The fused family (isa/families/fused.py) against hand-computed expectations: one rounding in
the multiply-adds, ReLU and saturating narrowing, pair sums over odd widths, IEEE pow special
values and wrapping integer powers; plus the declarations' roles, legality and public spellings."""
from __future__ import annotations

import math

import numpy as np
import pytest

import openpto as pto
import openpto.isa as isa
from openpto.isa import checks
from openpto.isa import dtypes as dt
from openpto.isa.diagnostics import PTOError
from openpto.isa.profiles import PROFILES
from openpto.isa.spec import Domain, Role
from openpto.isa.types import Pipe, parse_type

pytestmark = pytest.mark.filterwarnings("error")

F32, F16, BF16, I8, I16, U8, I32, U32 = dt.F32, dt.F16, dt.BF16, dt.I8, dt.I16, dt.U8, dt.I32, dt.U32
NAN, INF = float("nan"), float("inf")
E20 = 1.0 + 2.0 ** -20          # (1 + 2**-20)**2 = 1 + 2**-19 + 2**-40: the last term is lost if rounded
MNEMONICS = ("TAXPY TFUSEDMULADD TFUSEDMULADDRELU TMULADDDST TSUBRELU TADDRELUCONV TADDDEQRELU "
             "TPAIRREDUCESUM TPOW TPOWS").split()


def tile(values: list, d: dt.DType) -> isa.Tile:
    values = np.array(values, dtype=np.float64 if d.is_float else object)
    return isa.Tile.of(values.astype(d.np_dtype).reshape(1, -1))


def empty_like(t: isa.Tile, d: dt.DType) -> isa.Tile:
    return isa.Tile.empty(t.type.with_(dtype=d))


def same(got: np.ndarray, want: list) -> None:
    """Element by element; NaN matches NaN, the sign of zero counts."""
    got = list(np.asarray(got).reshape(-1))
    assert len(got) == len(want), (got, want)
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = float(g), float(w)
        ok = (math.isnan(g) and math.isnan(w)) or (g == w and math.copysign(1, g) == math.copysign(1, w))
        assert ok, f"element {i}: got {g!r}, want {w!r}"


def f32(x: float) -> float:
    return float(np.float32(x))


# ----------------------------------------------------------------------------- declarations


def test_declared_once_with_pages_facts() -> None:
    for m in MNEMONICS:
        instr = isa.get(m)
        assert instr.pipe_for({}) is Pipe.V and instr.domain is Domain.DST, m
        assert instr.supported_on("a3") and instr.supported_on("a5") and instr.supported_on("cpu"), m


@pytest.mark.parametrize("m", ["TAXPY", "TFUSEDMULADD", "TFUSEDMULADDRELU", "TMULADDDST"])
def test_accumulating_destination_is_inout(m: str) -> None:
    assert isa.get(m).operand("dst").role is Role.INOUT


@pytest.mark.parametrize("m", ["TSUBRELU", "TADDRELUCONV", "TADDDEQRELU", "TPAIRREDUCESUM", "TPOW", "TPOWS"])
def test_plain_destination_is_out(m: str) -> None:
    assert isa.get(m).operand("dst").role is Role.OUT


def test_npu_dtype_tables() -> None:
    a3 = isa.get("TAXPY").dtype_rule("a3")
    assert a3.allows((F32, F16, F16)) and a3.allows((F16, F16, F16)) and not a3.allows((F16, F32, F32))
    assert not isa.get("TFUSEDMULADD").dtype_rule("a5").allows((BF16,) * 3)
    conv = isa.get("TADDRELUCONV").dtype_rule("a2")
    assert {t for t in conv.tuples} == {(F16, F32, F32), (I8, F16, F16), (I8, I16, I16)}
    pow_a2 = isa.get("TPOW").dtype_rule("a2")
    assert pow_a2.allows((F32,) * 3) and pow_a2.allows((U8,) * 3) and not pow_a2.allows((F16,) * 3)
    assert isa.get("TPOW").dtype_rule("a5").allows((BF16,) * 3)
    assert isa.get("TADDDEQRELU").dtype_rule("a5").allows((F16, I32, I32, F32))


def test_taxpy_half_dst_with_float_source_is_illegal() -> None:
    instr = isa.get("TAXPY")
    types = {"dst": parse_type("!pto.tile<16x16xf16>"), "src0": parse_type("!pto.tile<16x16xf32>"),
             "scalar": parse_type("f32")}
    assert not checks.check_structure(instr, types, {})
    assert [e.code for e in checks.check_legality(instr, types, {}, PROFILES["a3"])] == ["LEGAL_DTYPE"]


def test_sources_must_cover_the_destination() -> None:
    instr = isa.get("TFUSEDMULADD")
    t, small = parse_type("!pto.tile<16x16xf32>"), parse_type("!pto.tile<16x16xf32, valid=8x16>")
    assert [e.code for e in checks.check_structure(instr, {"dst": t, "src0": t, "src1": small}, {})] \
        == ["STRUCT_VALID_REGION"]


# ----------------------------------------------------------------------------- fused multiply-add


def test_tfusedmuladd_public_formula_and_single_rounding() -> None:
    dst = tile([1, 2, 3, 4, E20], F32)
    isa.get("TFUSEDMULADD").execute(dst=dst, src0=tile([2, 2, 2, 2, E20], F32),
                                    src1=tile([1, 1, -100, 1, -(1 + 2.0 ** -19)], F32))
    same(dst.data, [3, 5, -94, 9, 2.0 ** -40])      # unfused: the product rounds to 1 + 2**-19, giving 0


def test_tmuladddst_and_taxpy_keep_the_low_product_bits() -> None:
    dst = tile([10, -(1 + 2.0 ** -19)], F32)
    isa.get("TMULADDDST").execute(dst=dst, src0=tile([3, E20], F32), src1=tile([4, E20], F32))
    same(dst.data, [22, 2.0 ** -40])
    acc = tile([1, 2, -(1 + 2.0 ** -19)], F32)
    isa.get("TAXPY").execute(dst=acc, src0=tile([3, -1, E20], F32), scalar=E20)
    same(acc.data, [f32(3 * E20 + 1), f32(2 - E20), 2.0 ** -40])


def test_fused_result_is_not_double_rounded_through_f64() -> None:
    # exact = 1 + 3 * 2**-24 - 2**-60, just below an f32 midpoint: correctly rounded 1 + 2**-23; an f64
    # sum rounds onto the midpoint first and then to even, 1 + 2**-22
    dst = tile([1 - 2.0 ** -18], F32)
    isa.get("TFUSEDMULADD").execute(dst=dst, src0=tile([2.0 ** -24 + 2.0 ** -42], F32),
                                    src1=tile([1 + 2.0 ** -23], F32))
    same(dst.data, [1 + 2.0 ** -23])


def test_fused_multiply_add_special_values() -> None:
    dst = tile([INF, 1.0, -0.0, 1.0, 3.0, INF, NAN], F32)
    isa.get("TFUSEDMULADD").execute(dst=dst, src0=tile([0.0, INF, 1.0, -0.0, 2.0, 1.0, 0.0], F32),
                                    src1=tile([1.0, -INF, -0.0, 0.0, -6.0, 1.0, 0.0], F32))
    # 0*inf, inf-inf, -0 + -0, -0 + +0, exact cancellation, inf, NaN
    same(dst.data, [NAN, NAN, -0.0, 0.0, 0.0, INF, NAN])


def test_fused_multiply_add_overflow_and_relu() -> None:
    big = float(np.finfo(np.float32).max)
    dst = tile([big, 2.0, -0.0, NAN, E20], F32)
    isa.get("TFUSEDMULADDRELU").execute(dst=dst, src0=tile([2.0, 3.0, 1.0, 1.0, E20], F32),
                                        src1=tile([0.0, -7.0, -0.0, 0.0, -(1 + 2.0 ** -18)], F32))
    same(dst.data, [INF, 0.0, 0.0, NAN, 0.0])       # relu(-1) and relu(-0) are +0; NaN stays


def test_narrow_fused_results_round_in_f32_then_to_the_dtype() -> None:
    a, b, c = [0.1, 3.0, 1000.0], [0.3, 0.7, 1.001], [1.0, -2.0, 0.5]
    ah, bh, ch = (np.array(v, np.float16).astype(np.float64) for v in (a, b, c))
    want = (ah * bh + ch).astype(np.float32).astype(np.float16)     # products of f16 values are exact in f64
    dst = tile(c, F16)
    isa.get("TMULADDDST").execute(dst=dst, src0=tile(a, F16), src1=tile(b, F16))
    same(dst.data, list(want.astype(np.float64)))


def test_taxpy_widening_accumulation_and_scalar_dtype() -> None:
    dst = tile([1.0, 0.0], F32)
    isa.get("TAXPY").execute(dst=dst, src0=tile([0.1, 1.0], F16), scalar=0.1)   # scalar becomes f16(0.1)
    h = float(np.float16(0.1))
    same(dst.data, [f32(h * h + 1.0), h])


def test_inout_destination_must_be_initialised_region() -> None:
    dst = isa.Tile.of(np.zeros((2, 2), np.float32), valid=(2, 2))
    src = isa.Tile.of(np.ones((2, 2), np.float32), valid=(1, 2))
    with pytest.raises(PTOError) as e:
        isa.get("TAXPY").execute(dst=dst, src0=src, scalar=1.0)
    assert e.value.code == "RUNTIME_INVALID_READ"


# ----------------------------------------------------------------------------- ReLU forms


def test_tsubrelu() -> None:
    dst = empty_like(tile([0] * 6, F32), F32)
    isa.get("TSUBRELU").execute(dst=dst, src0=tile([5, 3, NAN, -0.0, INF, 1.5], F32),
                                src1=tile([3, 5, 1, 0.0, INF, -1e30], F32))
    same(dst.data, [2, 0, NAN, 0.0, NAN, f32(1e30)])
    h = empty_like(tile([0], F16), F16)
    isa.get("TSUBRELU").execute(dst=h, src0=tile([65504], F16), src1=tile([-65504], F16))
    same(h.data, [INF])                              # plain rounding, not saturation


def test_taddreluconv_f32_to_f16_saturates_finite_values() -> None:
    src0 = tile([1.5, -3, 70000, INF, NAN, 65519, 2049, -0.0], F32)
    src1 = tile([1, 1, 1, 0, 0, 0, 0, 0.0], F32)
    dst = empty_like(src0, F16)
    isa.get("TADDRELUCONV").execute(dst=dst, src0=src0, src1=src1)
    same(dst.data, [2.5, 0, 65504, INF, NAN, 65504, 2048, 0.0])


def test_taddreluconv_to_i8() -> None:
    src0 = tile([1.5, 3.5, 200, -5, NAN, INF, 0.5], F16)
    src1 = tile([1, 0, 0, 0, 0, 0, 0], F16)
    dst = empty_like(src0, I8)
    isa.get("TADDRELUCONV").execute(dst=dst, src0=src0, src1=src1)
    assert list(dst.data[0]) == [2, 4, 127, 0, 0, 127, 0]           # round half to even
    a, b = tile([30000, 100, 100, -1], I16), tile([30000, 27, 28, 0], I16)
    out = empty_like(a, I8)
    isa.get("TADDRELUCONV").execute(dst=out, src0=a, src1=b)
    assert list(out.data[0]) == [0, 127, 127, 0]                     # 60000 wraps to -5536


def test_tadddeqrelu() -> None:
    imax = 2 ** 31 - 1
    src0 = tile([2, -3, imax, 1000, 16777217, 3], I32)
    src1 = tile([10, 1, 1, 0, 0, 0], I32)
    dst = empty_like(src0, F16)
    isa.get("TADDDEQRELU").execute(dst=dst, src0=src0, src1=src1, deqScale=0.5)
    same(dst.data, [6, 0, 0, 500, 65504, 1.5])       # IMAX + 1 wraps negative; 8388608 saturates
    third = float(np.float32(1 / 3))
    out = empty_like(src0, F16)
    isa.get("TADDDEQRELU").execute(dst=out, src0=src0, src1=src1, deqScale=third,
                                   tmp=isa.Tile.of(np.zeros((1, 6), np.int32)))
    same(out.data[0, [0, 5]], [4, float(np.float16(np.float32(3 * third)))])
    nan = empty_like(src0, F16)
    isa.get("TADDDEQRELU").execute(dst=nan, src0=src0, src1=src1, deqScale=NAN)
    assert np.isnan(nan.data.astype(np.float32)).all()


# ----------------------------------------------------------------------------- TPAIRREDUCESUM


@pytest.mark.parametrize("row,want", [
    ([1, 2, 3, 4, 5], [3, 7, 5, 0, 0]),
    ([1, 2, 3, 4], [3, 7, 0, 0]),
    ([-0.0], [0.0]),
    ([-0.0, -0.0, 2], [-0.0, 2, 0]),
])
def test_tpairreducesum_rows(row: list, want: list) -> None:
    src = tile(row, F32)
    dst = empty_like(src, F32)
    isa.get("TPAIRREDUCESUM").execute(dst=dst, src=src)
    same(dst.data, want)


def test_tpairreducesum_valid_region_and_f16() -> None:
    src = isa.Tile.of(np.array([[1, 2, 3, 100], [4, 5, 6, 100]], np.float32))
    dst = isa.Tile.of(np.full((2, 4), 9, np.float32), valid=(2, 3))
    isa.get("TPAIRREDUCESUM").execute(dst=dst, src=src)
    same(dst.data[:, :3], [3, 3, 0, 9, 6, 0])
    h = tile([65504, 65504, 1, 2.0 ** -11], F16)
    out = empty_like(h, F16)
    isa.get("TPAIRREDUCESUM").execute(dst=out, src=h)
    same(out.data, [INF, 1.0, 0, 0])                 # 1 + 2**-11 is a tie: to even


# ----------------------------------------------------------------------------- TPOW / TPOWS


def test_tpow_float_special_values() -> None:
    base = [2, 2, -8, -2, 0.0, -0.0, -0.0, NAN, 1, -1, 0.5, 2, INF, -INF, -INF, 0.0, -2]
    exp = [10, 0.5, 1 / 3, 3, -1, -1, 3, 0.0, NAN, INF, INF, -INF, -1, 3, 2, -INF, 0.5]
    dst = empty_like(tile(base, F32), F32)
    isa.get("TPOW").execute(dst=dst, base=tile(base, F32), exp=tile(exp, F32))
    same(dst.data, [1024, f32(math.sqrt(2)), NAN, -8, INF, -INF, -0.0, 1, 1, 1, 0.0, 0.0, 0.0, -INF, INF,
                    INF, NAN])


def test_tpow_integers_wrap() -> None:
    base = [2, -3, 0, 5, 1, -1, -1, 2, 3, 0, 7]
    exp = [10, 3, 0, -1, -5, -3, -4, 31, 40, -2, 1]
    dst = empty_like(tile(base, I32), I32)
    isa.get("TPOW").execute(dst=dst, base=tile(base, I32), exp=tile(exp, I32))
    wrapped = (3 ** 40) % 2 ** 32
    assert list(dst.data[0]) == [1024, -27, 1, 0, 1, -1, 1, -2 ** 31,
                                 wrapped - 2 ** 32 if wrapped >= 2 ** 31 else wrapped, 0, 7]
    small = empty_like(tile([0, 0, 0], I8), I8)
    isa.get("TPOW").execute(dst=small, base=tile([2, 3, -2], I8), exp=tile([7, 5, 7], I8))
    assert list(small.data[0]) == [-128, -13, -128]
    u = empty_like(tile([0, 0, 0], U8), U8)
    isa.get("TPOW").execute(dst=u, base=tile([2, 3, 1], U8), exp=tile([8, 5, 255], U8))
    assert list(u.data[0]) == [0, 243, 1]           # unsigned exponents are never negative
    big = empty_like(tile([0], U32), U32)
    isa.get("TPOW").execute(dst=big, base=tile([3], U32), exp=tile([2 ** 32 - 1], U32))
    assert int(big.data[0, 0]) == pow(3, 2 ** 32 - 1, 2 ** 32)


def test_tpows_scalar_exponent() -> None:
    dst = empty_like(tile([0, 0, 0], F32), F32)
    isa.get("TPOWS").execute(dst=dst, base=tile([4, 9, -8], F32), exp=0.5)
    same(dst.data, [2, 3, NAN])
    i = empty_like(tile([0, 0, 0], I16), I16)
    isa.get("TPOWS").execute(dst=i, base=tile([2, -3, 40], I16), exp=3, tmp=tile([0, 0, 0], I16))
    assert list(i.data[0]) == [8, -27, 64000 - 65536]
    b = empty_like(tile([0], BF16), BF16)
    isa.get("TPOWS").execute(dst=b, base=tile([3], BF16), exp=2, PrecisionType=isa.get("TPOWS").attr(
        "PrecisionType").default.__class__.HIGH_PRECISION)
    assert float(b.data[0, 0]) == 9.0
    with pytest.raises(PTOError) as e:
        isa.get("TPOWS").execute(dst=i, base=tile([2, 2, 2], I16), exp=2.5)
    assert e.value.code == "RUNTIME_SCALAR_VALUE"


def test_tpow_narrow_float_rounds_once() -> None:
    dst = empty_like(tile([0, 0], F16), F16)
    isa.get("TPOW").execute(dst=dst, base=tile([3, 10], F16), exp=tile([0.5, 5], F16))
    same(dst.data, [float(np.float16(math.sqrt(3))), INF])          # 100000 overflows f16


# ----------------------------------------------------------------------------- public spellings


def test_public_spellings_parse() -> None:
    t = "!pto.tile<16x16xf32>"
    text = (f".arg %a : {t}\n.arg %b : {t}\n.arg %d : {t}\n"
            f"pto.tfusedmuladd ins(%a, %b : {t}, {t}) outs(%d : {t})\n"
            f"tmuladddst %d, %a, %b\n"
            f"taxpy %d, %a, 2.0\n"
            f"%e = tpow %a, %b, %d : ({t}, {t}, {t}) -> {t}\n"
            f"%f = tpows %a, 2.0 : ({t}, f32) -> {t}\n"
            f"%g = tsubrelu %a, %b : ({t}, {t}) -> {t}\n"
            f"%h = pto.tpairreducesum %a : {t} -> {t}\n")
    m = pto.parse(text)
    pto.check(m, profile="a3")
    ops = [s for s in m.kernels[0].body if hasattr(s, "instr")]
    assert [s.instr.mnemonic for s in ops] == ["TFUSEDMULADD", "TMULADDDST", "TAXPY", "TPOW", "TPOWS",
                                               "TSUBRELU", "TPAIRREDUCESUM"]
    assert ops[0].args["dst"].name == "d" and ops[0].args["src1"].name == "b"
    assert pto.parse(m.to_text()) == m
