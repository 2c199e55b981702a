"""Axis reduce/expand family: declarations, static rules, and semantics checked against
expectations computed here (plain Python / numpy / literals, never the helpers under test)."""
from __future__ import annotations

import math
import warnings
from typing import Callable

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import openpto.isa as isa
from openpto.isa import Domain, Family, RuntimeFault, Tile
from openpto.isa import constraints as K
from openpto.isa import dtypes as dt
from openpto.isa.types import Layout, parse_type

REDUCTIONS = "TROWSUM TROWMAX TROWMIN TROWPROD TCOLSUM TCOLMAX TCOLMIN TCOLPROD".split()
EXPAND_OPS = "ADD SUB MUL DIV MAX MIN EXPDIF".split()
NAMES = (REDUCTIONS + ["TROWEXPAND", "TCOLEXPAND"]
         + [f"T{a}EXPAND{op}" for a in ("ROW", "COL") for op in EXPAND_OPS])
SENTINEL = 77
F16, F32 = np.float16, np.float32
BF16 = ml_dtypes.bfloat16


def run(mnemonic: str, **operands: Tile | bool) -> None:
    """Execute with every numpy warning turned into an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        isa.get(mnemonic).execute(**operands)


def sentinel_tile(shape: tuple[int, int], dtype: type, valid: tuple[int, int],
                  layout: Layout = Layout.ND) -> Tile:
    return Tile.of(np.full(shape, SENTINEL, dtype=dtype), valid, layout=layout)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def fault_code(fn: Callable[[], None]) -> str:
    with pytest.raises(RuntimeFault) as e:
        fn()
    return e.value.code


# ----------------------------------------------------------------------------- declarations


def test_family_has_exactly_these_instructions() -> None:
    fam = {i.mnemonic for i in isa.by_family()[Family.REDUCE_EXPAND]        # the arg-reductions and
           if i.semantics.__module__.endswith(".reduce_expand")}            # TPAIRREDUCESUM live apart
    assert fam == set(NAMES) and len(NAMES) == 24


@pytest.mark.parametrize("name", NAMES)
def test_domain_pipe_and_docs(name: str) -> None:
    ins = isa.get(name)
    assert ins.domain is (Domain.SRC if name in REDUCTIONS else Domain.DST)
    assert ins.pipe is isa.types.Pipe.V
    assert ins.special_values and len(ins.doc) > 80


def test_tmp_is_optional_exactly_where_the_public_isa_has_it() -> None:
    with_tmp = {"TROWSUM", "TROWMAX", "TROWMIN", "TROWPROD", "TCOLSUM"} | {f"TROWEXPAND{op}" for op in EXPAND_OPS}
    for name in NAMES:
        ops = {o.name: o for o in isa.get(name).operands}
        assert ("tmp" in ops) == (name in with_tmp), name
        if "tmp" in ops:
            assert ops["tmp"].optional and "never read" in ops["tmp"].doc
            assert "tmp" not in isa.get(name).dtypes.operands


def test_tcolsum_isbinary_attribute() -> None:
    attr = isa.get("TCOLSUM").attr("isBinary")
    assert attr.type is bool and attr.default is False and not attr.required
    assert isa.get("TCOLSUM").numerics.kind == "sum"


def test_profiles() -> None:
    # the current public headers implement TROWPROD on a5 (a5/TRowProd.hpp) and TCOLEXPAND on
    # a2/a3 and a5 (a2a3/TColExpand.hpp, a5/TColExpand.hpp): every form is legal everywhere
    for name in NAMES:
        assert isa.get(name).profiles is None, name
    for p in ("a2", "a3", "a5"):
        assert isa.get("TROWPROD").supported_on(p) and isa.get("TCOLEXPAND").supported_on(p)


def _allows(name: str, profile: str | None, *dtypes: dt.DType) -> bool:
    rule = isa.get(name).dtype_rule(profile)
    return rule.allows(tuple(dtypes) * len(rule.operands) if len(dtypes) == 1 else tuple(dtypes))


@pytest.mark.parametrize("name, profile, dtype, ok", [
    ("TROWSUM", "a2", dt.F16, True), ("TROWSUM", "a3", dt.I32, True), ("TROWSUM", None, dt.I32, True),
    ("TROWSUM", "a3", dt.I16, True), ("TROWSUM", "a5", dt.I8, False), ("TROWSUM", "a3", dt.U16, False),
    ("TROWMAX", "a5", dt.BF16, False), ("TROWMAX", "a5", dt.I8, True), ("TROWMIN", "a5", dt.U8, True),
    ("TROWMIN", "a2", dt.U8, False), ("TROWMAX", "a3", dt.I16, True),
    ("TROWPROD", "a2", dt.F32, True), ("TROWPROD", "a5", dt.I16, True), ("TROWPROD", "a5", dt.I8, False),
    ("TCOLEXPAND", "a2", dt.U8, True), ("TCOLEXPAND", "a5", dt.BF16, True), ("TCOLEXPAND", "a3", dt.I64, False),
    ("TCOLSUM", "a2", dt.I16, True), ("TCOLSUM", "a2", dt.U8, False), ("TCOLSUM", "a5", dt.U8, True),
    ("TCOLMAX", "a5", dt.BF16, True), ("TCOLMAX", "a3", dt.BF16, False), ("TCOLMIN", "a5", dt.I8, True),
    ("TCOLPROD", "a5", dt.U32, True), ("TCOLPROD", "a5", dt.I8, False), ("TCOLPROD", "a2", dt.I32, True),
    ("TROWEXPAND", "a2", dt.U8, True), ("TROWEXPAND", "a5", dt.BF16, True),
    ("TROWEXPANDADD", "a2", dt.F16, True), ("TROWEXPANDADD", "a2", dt.I32, False),
    ("TROWEXPANDADD", None, dt.I32, True), ("TCOLEXPANDDIV", "a5", dt.BF16, False),
    ("TROWEXPANDEXPDIF", None, dt.I32, False), ("TCOLEXPANDEXPDIF", None, dt.BF16, True),
])
def test_dtype_tables(name: str, profile: str | None, dtype: dt.DType, ok: bool) -> None:
    assert _allows(name, profile, dtype) is ok


def test_mixed_dtypes_are_rejected() -> None:
    assert not isa.get("TROWSUM").dtypes.allows((dt.F32, dt.F16))
    assert not isa.get("TROWEXPANDMUL").dtypes.allows((dt.F32, dt.F32, dt.F16))


# ----------------------------------------------------------------------------- static rules


def _errors(name: str, **spellings: str) -> list[str]:
    types = {n: parse_type(s) for n, s in spellings.items()}
    return [c.code for c, _ in K.check_all(isa.get(name).constraints, types, {})]


SRC16 = "!pto.tile<16x16xf32>"


@pytest.mark.parametrize("dst, codes", [
    ("!pto.tile<16x1xf32, layout=DN>", []),
    ("!pto.tile<16x1xf32>", []),                                 # ND R x 1
    ("!pto.tile<16x8xf32, valid=16x1>", []),                     # ND legacy wide form
    ("!pto.tile<16x8xf32, layout=DN, valid=16x1>", ["STRUCT_SHAPE"]),
    ("!pto.tile<16x2xf32, layout=DN>", ["STRUCT_SHAPE", "STRUCT_VALID_REGION"]),
    ("!pto.tile<16x1xf32, layout=DN, valid=8x1>", ["STRUCT_VALID_REGION"]),
    ("!pto.tile<16x16xf32, layout=NZ, valid=16x1>", ["LEGAL_LAYOUT"]),
    ("!pto.tile<16x1xf32, layout=DN, valid=?x1>", []),            # dynamic: checked at run time
])
def test_row_reduction_destination_rules(dst: str, codes: list[str]) -> None:
    assert sorted(_errors("TROWSUM", dst=dst, src=SRC16)) == sorted(codes)


@pytest.mark.parametrize("dst, codes", [
    ("!pto.tile<1x16xf32>", []),
    ("!pto.tile<1x16xf32, layout=DN>", []),
    ("!pto.tile<2x16xf32, valid=1x16>", []),            # statically taller: the public kernels write row 0
    ("!pto.tile<2x16xf32>", ["STRUCT_VALID_REGION"]),     # but the valid region is exactly 1 x C
    ("!pto.tile<1x16xf32, valid=1x8>", ["STRUCT_VALID_REGION"]),
])
def test_col_reduction_destination_rules(dst: str, codes: list[str]) -> None:
    assert _errors("TCOLMAX", dst=dst, src=SRC16) == codes


def test_tmp_must_have_the_source_dtype() -> None:
    dst = "!pto.tile<16x1xf32, layout=DN>"
    assert _errors("TROWMAX", dst=dst, src=SRC16, tmp=SRC16) == []
    assert _errors("TROWMAX", dst=dst, src=SRC16, tmp="!pto.tile<16x16xf16>") == ["LEGAL_DTYPE"]
    assert _errors("TROWMAX", dst=dst, src=SRC16) == []


@pytest.mark.parametrize("src1, codes", [
    ("!pto.tile<16x1xf32, layout=DN>", []),
    ("!pto.tile<16x8xf32, valid=16x1>", []),
    ("!pto.tile<16x2xf32>", ["STRUCT_VALID_REGION"]),
    ("!pto.tile<8x1xf32, layout=DN>", ["STRUCT_VALID_REGION"]),
    ("!pto.tile<32x1xf32, layout=DN>", []),                      # covers more rows than needed
])
def test_row_expand_operand_rules(src1: str, codes: list[str]) -> None:
    assert _errors("TROWEXPANDSUB", dst=SRC16, src0=SRC16, src1=src1) == codes


@pytest.mark.parametrize("src1, codes", [
    ("!pto.tile<1x16xf32>", []),
    ("!pto.tile<1x8xf32>", ["STRUCT_VALID_REGION"]),
    ("!pto.tile<2x16xf32, valid=1x16>", ["STRUCT_SHAPE"]),
])
def test_col_expand_operand_rules(src1: str, codes: list[str]) -> None:
    assert _errors("TCOLEXPANDMUL", dst=SRC16, src0=SRC16, src1=src1) == codes


def test_expand_src0_rules() -> None:
    v = "!pto.tile<16x1xf32, layout=DN>"
    # src0 differs from dst in shape, so it is taken as the expanded operand: 32 valid columns
    # is neither Mode 1 nor Mode 2, and src1 (the full operand then) is a vector
    assert sorted(_errors("TROWEXPANDADD", dst=SRC16, src0="!pto.tile<16x32xf32>", src1=v)) == \
        ["STRUCT_SHAPE", "STRUCT_VALID_REGION", "STRUCT_VALID_REGION"]
    # the column form has one full operand: another static shape covering dst is accepted
    assert _errors("TCOLEXPANDADD", dst=SRC16, src0="!pto.tile<16x32xf32>",
                   src1="!pto.tile<1x16xf32>") == []
    assert _errors("TCOLEXPANDADD", dst=SRC16, src0="!pto.tile<8x32xf32>",
                   src1="!pto.tile<1x16xf32>") == ["STRUCT_VALID_REGION"]
    assert _errors("TROWEXPANDADD", dst=SRC16, src0="!pto.tile<16x16xf32, valid=16x8>",
                   src1=v) == ["STRUCT_VALID_REGION"]


@pytest.mark.parametrize("src0, src1, codes", [
    ("!pto.tile<16x1xf32, layout=DN>", SRC16, []),                       # src0 expanded, Mode 1
    ("!pto.tile<16x8xf32>", SRC16, []),                                  # src0 expanded, Mode 2
    (SRC16, "!pto.tile<16x8xf32>", []),                                  # src1 expanded, Mode 2
    (SRC16, "!pto.tile<16x16xf32, valid=16x8>", []),                     # Mode 2 in a wider tile
    (SRC16, "!pto.tile<16x4xf32>", ["STRUCT_VALID_REGION"]),             # 16 bytes: neither mode
    ("!pto.tile<16x8xf32, valid=8x8>", SRC16, ["STRUCT_VALID_REGION"]),   # too few rows
    ("!pto.tile<16x8xf32>", "!pto.tile<16x16xf32, valid=16x12>", ["STRUCT_VALID_REGION"]),
    ("!pto.tile<16x8xf32>", "!pto.tile<16x8xf32>", ["STRUCT_SHAPE", "STRUCT_VALID_REGION"]),
    (SRC16, "!pto.tile<16x8xf32, valid=16x?>", []),                     # dynamic: run-time check
])
def test_row_expand_forms_rules(src0: str, src1: str, codes: list[str]) -> None:
    assert sorted(_errors("TROWEXPANDDIV", dst=SRC16, src0=src0, src1=src1)) == codes


def test_row_expand_mode2_width_follows_the_dtype() -> None:
    d16 = "!pto.tile<16x32xf16>"
    assert _errors("TROWEXPANDMAX", dst=d16, src0=d16, src1="!pto.tile<16x16xf16>") == []
    assert _errors("TROWEXPANDMAX", dst=d16, src0=d16, src1="!pto.tile<16x8xf16>") == ["STRUCT_VALID_REGION"]
    # two full operands: the public ISA needs exactly one of the same shape as dst
    assert _errors("TROWEXPANDMAX", dst=SRC16, src0=SRC16, src1=SRC16) == ["STRUCT_VALID_REGION"]


def test_broadcast_source_rules() -> None:
    assert _errors("TROWEXPAND", dst=SRC16, src="!pto.tile<16x4xf32>") == []
    assert _errors("TROWEXPAND", dst=SRC16, src="!pto.tile<8x1xf32>") == ["STRUCT_VALID_REGION"]
    assert _errors("TROWEXPAND", dst=SRC16, src="!pto.tile<16x4xf32, valid=16x0>") == ["STRUCT_VALID_REGION"]
    assert _errors("TCOLEXPAND", dst=SRC16, src="!pto.tile<2x16xf32>") == []
    assert _errors("TCOLEXPAND", dst=SRC16, src="!pto.tile<1x8xf32>") == ["STRUCT_VALID_REGION"]


# ----------------------------------------------------------------------------- reductions

ROW_EXPECT: dict[str, Callable[[list[float]], float]] = {
    "SUM": math.fsum, "MAX": max, "MIN": min, "PROD": math.prod,
}


def _reduce_inputs(op: str, dtype: type, shape: tuple[int, int], seed: int) -> np.ndarray:
    """Small integers (products from {-2, -1, 1, 2}) so every expectation is exact."""
    rng = np.random.default_rng(seed)
    values = rng.choice([-2, -1, 1, 2], size=shape) if op == "PROD" else rng.integers(-20, 20, size=shape)
    return (np.abs(values) if np.dtype(dtype).kind == "u" else values).astype(dtype)


@pytest.mark.parametrize("dtype", [F32, F16, BF16, np.int32, np.int16])
@pytest.mark.parametrize("op", ["SUM", "MAX", "MIN", "PROD"])
def test_row_reduction_partial_region(op: str, dtype: type) -> None:
    data = _reduce_inputs(op, dtype, (8, 16), seed=1)
    src = Tile.of(data, (5, 11))
    dst = sentinel_tile((8, 1), dtype, (5, 1), Layout.DN)
    run(f"TROW{op}", dst=dst, src=src)
    expect = [ROW_EXPECT[op]([int(v) for v in data[i, :11]]) for i in range(5)]
    assert dst.data[:5, 0].tolist() == expect
    assert (dst.data[5:, 0] == SENTINEL).all()
    np.testing.assert_array_equal(src.data, data)


@pytest.mark.parametrize("dtype", [F32, F16, np.int32, np.int16, np.uint8, np.int8])
@pytest.mark.parametrize("op", ["SUM", "MAX", "MIN", "PROD"])
def test_col_reduction_partial_region(op: str, dtype: type) -> None:
    data = _reduce_inputs(op, dtype, (8, 16), seed=2)
    src = Tile.of(data, (7, 10))
    dst = sentinel_tile((1, 16), dtype, (1, 10))
    run(f"TCOL{op}", dst=dst, src=src)
    expect = [ROW_EXPECT[op]([int(v) for v in data[:7, j]]) for j in range(10)]
    assert dst.data[0, :10].tolist() == expect
    assert (dst.data[0, 10:] == SENTINEL).all()


def test_row_reduction_into_wide_nd_vector() -> None:
    dst = sentinel_tile((4, 8), F32, (4, 1))
    run("TROWSUM", dst=dst, src=Tile.of(np.arange(12, dtype=F32).reshape(4, 3)))
    assert dst.data[:, 0].tolist() == [3, 12, 21, 30]
    assert (dst.data[:, 1:] == SENTINEL).all()


def test_narrow_float_sums_accumulate_wide() -> None:
    # f16 spacing at 2048 is 2: summing in f16 would stall at 2048; rounding once gives 2052.
    row = np.array([[2048, 1, 1, 1, 1]], dtype=F16)
    dst = sentinel_tile((1, 1), F16, (1, 1), Layout.DN)
    run("TROWSUM", dst=dst, src=Tile.of(row))
    assert dst.data[0, 0] == F16(2052)
    # an intermediate beyond f16's range does not overflow
    col = np.array([[60000], [60000], [-60000]], dtype=F16)
    dst = sentinel_tile((1, 1), F16, (1, 1))
    run("TCOLSUM", dst=dst, src=Tile.of(col))
    assert dst.data[0, 0] == F16(60000)
    # bf16 has 8 significant bits: 256 + 1 + 1 is 258 exactly
    row = np.array([[256, 1, 1]], dtype=BF16)
    dst = sentinel_tile((1, 1), BF16, (1, 1), Layout.DN)
    run("TROWSUM", dst=dst, src=Tile.of(row))
    assert float(dst.data[0, 0]) == 258.0


def test_f32_sum_rounds_once_and_overflows_only_at_the_end() -> None:
    src = Tile.of(np.array([[3e38, 3e38, -3e38], [3e38, 3e38, 0], [1, 2**-24, 2**-24]], dtype=F32))
    dst = sentinel_tile((3, 1), F32, (3, 1), Layout.DN)
    run("TROWSUM", dst=dst, src=src)
    assert dst.data[0, 0] == F32(3e38)
    assert dst.data[1, 0] == np.inf
    assert dst.data[2, 0] == F32(1 + 2**-23)   # exact sum representable; sequential f32 would give 1


NAN_ROWS = np.array([
    [1.0, np.nan, 2.0],
    [np.inf, -np.inf, 1.0],
    [-0.0, 0.0, -0.0],
    [-0.0, -0.0, -0.0],
    [0.0, np.inf, 2.0],
    [3.0, -np.inf, 1e-45],
], dtype=F32)


@pytest.mark.parametrize("op, expect", [
    ("SUM", [np.nan, np.nan, 0.0, 0.0, np.inf, -np.inf]),
    ("MAX", [np.nan, np.inf, 0.0, -0.0, np.inf, 3.0]),
    ("MIN", [np.nan, -np.inf, -0.0, -0.0, 0.0, -np.inf]),
    ("PROD", [np.nan, -np.inf, 0.0, -0.0, np.nan, -np.inf]),
])
def test_row_reduction_special_values(op: str, expect: list[float]) -> None:
    dst = sentinel_tile((6, 1), F32, (6, 1), Layout.DN)
    run(f"TROW{op}", dst=dst, src=Tile.of(NAN_ROWS))
    got = dst.data[:, 0]
    np.testing.assert_array_equal(got, np.array(expect, dtype=F32))
    if op in ("MAX", "MIN"):   # IEEE maximum/minimum: exact signs of zero
        assert np.signbit(got[2]) == (op == "MIN") and np.signbit(got[3])
    if op == "PROD":
        assert np.signbit(got[3])


@pytest.mark.parametrize("op, expect", [
    ("SUM", [np.nan, np.nan, 0.0, np.inf]),
    ("MAX", [np.nan, np.inf, 0.0, np.inf]),
    ("MIN", [np.nan, -np.inf, -0.0, 0.0]),
    ("PROD", [np.nan, -np.inf, 0.0, np.nan]),
])
def test_col_reduction_special_values_f16(op: str, expect: list[float]) -> None:
    src = Tile.of(NAN_ROWS[:5, :].T.astype(F16)[:, [0, 1, 2, 4]])
    dst = sentinel_tile((1, 4), F16, (1, 4))
    run(f"TCOL{op}", dst=dst, src=src)
    np.testing.assert_array_equal(dst.data[0], np.array(expect, dtype=F16))
    if op == "MAX":
        assert not np.signbit(dst.data[0, 2])
    if op == "MIN":
        assert np.signbit(dst.data[0, 2])


def test_denormals_are_kept() -> None:
    tiny = np.float32(1e-45)
    dst = sentinel_tile((1, 1), F32, (1, 1), Layout.DN)
    run("TROWSUM", dst=dst, src=Tile.of(np.array([[tiny, tiny, tiny]], dtype=F32)))
    assert dst.data[0, 0] == np.float32(3 * tiny) and dst.data[0, 0] > 0
    run("TROWMIN", dst=dst, src=Tile.of(np.array([[tiny, 1.0, 2.0]], dtype=F32)))
    assert dst.data[0, 0] == tiny


def test_f16_result_overflow_rounds_to_inf() -> None:
    dst = sentinel_tile((1, 1), F16, (1, 1), Layout.DN)
    run("TROWSUM", dst=dst, src=Tile.of(np.array([[60000, 60000]], dtype=F16)))
    assert dst.data[0, 0] == np.inf
    run("TROWPROD", dst=dst, src=Tile.of(np.array([[300, -300]], dtype=F16)))
    assert dst.data[0, 0] == -np.inf


@pytest.mark.parametrize("name, dtype, column, expect", [
    ("TCOLSUM", np.int16, [32767, 1], -32768),
    ("TCOLSUM", np.int32, [2**31 - 1, 2**31 - 1, 2], 0),
    ("TCOLSUM", np.uint8, [200, 100], 44),
    ("TCOLPROD", np.int32, [65536, 65536], 0),
    ("TCOLPROD", np.int32, [2**31 - 1, 2], -2),
    ("TCOLPROD", np.int16, [-32768, -1], -32768),
    ("TCOLPROD", np.uint16, [256, 257], 256),
    ("TCOLMAX", np.int8, [-128, 127, 0], 127),
    ("TCOLMIN", np.int8, [-128, 127, 0], -128),
    ("TCOLMAX", np.uint32, [2**32 - 1, 0], 2**32 - 1),
])
def test_integer_reductions_wrap(name: str, dtype: type, column: list[int], expect: int) -> None:
    dst = sentinel_tile((1, 1), dtype, (1, 1))
    run(name, dst=dst, src=Tile.of(np.array(column, dtype=dtype).reshape(-1, 1)))
    assert int(dst.data[0, 0]) == expect


def test_integer_row_sum_wraps() -> None:
    dst = sentinel_tile((1, 1), np.int16, (1, 1), Layout.DN)
    run("TROWSUM", dst=dst, src=Tile.of(np.array([[30000, 30000, 30000]], dtype=np.int16)))
    assert int(dst.data[0, 0]) == 90000 - 65536


@pytest.mark.parametrize("op, fexpect, iexpect", [
    ("SUM", 0.0, 0), ("PROD", 1.0, 1), ("MAX", -np.inf, -2**31), ("MIN", np.inf, 2**31 - 1),
])
def test_empty_lines_give_the_identity(op: str, fexpect: float, iexpect: int) -> None:
    dst = sentinel_tile((4, 1), F32, (3, 1), Layout.DN)
    run(f"TROW{op}", dst=dst, src=Tile.of(np.ones((4, 4), dtype=F32), (3, 0)))
    assert dst.data[:3, 0].tolist() == [fexpect] * 3 and dst.data[3, 0] == SENTINEL
    dst = sentinel_tile((1, 4), np.int32, (1, 4))
    run(f"TCOL{op}", dst=dst, src=Tile.of(np.ones((4, 4), dtype=np.int32), (0, 4)))
    assert dst.data[0].tolist() == [iexpect] * 4


def test_no_rows_writes_nothing() -> None:
    dst = sentinel_tile((4, 1), F32, (0, 1), Layout.DN)
    run("TROWMAX", dst=dst, src=Tile.of(np.ones((4, 4), dtype=F32), (0, 4)))
    assert (dst.data == SENTINEL).all()


def test_tmp_is_never_read_or_written() -> None:
    data = np.arange(32, dtype=F32).reshape(4, 8)
    tmp = Tile.of(np.full((4, 8), np.nan, dtype=F32))
    plain = sentinel_tile((4, 1), F32, (4, 1), Layout.DN)
    with_tmp = sentinel_tile((4, 1), F32, (4, 1), Layout.DN)
    run("TROWSUM", dst=plain, src=Tile.of(data))
    run("TROWSUM", dst=with_tmp, src=Tile.of(data), tmp=tmp)
    assert same_bits(plain.data, with_tmp.data)
    assert np.isnan(tmp.data).all()
    assert plain.data[:, 0].tolist() == [sum(range(8 * i, 8 * i + 8)) for i in range(4)]


@pytest.mark.parametrize("is_binary", [False, True])
def test_tcolsum_isbinary_does_not_change_the_result(is_binary: bool) -> None:
    data = np.arange(24, dtype=np.int32).reshape(6, 4)
    dst = sentinel_tile((1, 4), np.int32, (1, 4))
    run("TCOLSUM", dst=dst, src=Tile.of(data), tmp=Tile.of(np.zeros((6, 4), np.int32)),
        isBinary=is_binary)
    assert dst.data[0].tolist() == [60, 66, 72, 78]


def test_tcolsum_default_attribute() -> None:
    assert isa.get("TCOLSUM").with_defaults({}) == {"isBinary": False}


@pytest.mark.parametrize("name, dst_valid, src_valid", [
    ("TROWSUM", (4, 1), (5, 4)),          # dst valid rows differ from src's
    ("TROWMAX", (5, 1), (4, 4)),
    ("TCOLMIN", (1, 3), (4, 4)),          # dst valid cols differ from src's
    ("TCOLPROD", (1, 4), (4, 2)),
])
def test_destination_region_mismatch_faults(name: str, dst_valid: tuple[int, int],
                                            src_valid: tuple[int, int]) -> None:
    dst_shape = (8, 1) if name.startswith("TROW") else (1, 8)
    dst = sentinel_tile(dst_shape, F32, dst_valid)
    src = Tile.of(np.ones((8, 8), dtype=F32), src_valid)
    assert fault_code(lambda: run(name, dst=dst, src=src)) == "RUNTIME_VALID_REGION"


def test_source_longer_than_destination_faults() -> None:
    dst = sentinel_tile((4, 1), F32, (4, 1), Layout.DN)
    src = Tile.of(np.ones((8, 8), dtype=F32))
    assert fault_code(lambda: run("TROWSUM", dst=dst, src=src)) == "RUNTIME_VALID_REGION"
    assert (dst.data == SENTINEL).all()


@settings(max_examples=25)
@given(st.lists(st.lists(st.floats(-1e6, 1e6, width=32), min_size=12, max_size=12), min_size=3, max_size=3))
def test_sums_meet_the_order_independent_bound(rows: list[list[float]]) -> None:
    data = np.array(rows, dtype=F32)
    n = data.shape[1]
    eps = float(np.finfo(F32).eps)
    dst = sentinel_tile((3, 1), F32, (3, 1), Layout.DN)
    run("TROWSUM", dst=dst, src=Tile.of(data))
    for i in range(3):
        exact = math.fsum(float(v) for v in data[i])
        bound = n * eps * math.fsum(abs(float(v)) for v in data[i])
        assert abs(float(dst.data[i, 0]) - exact) <= bound
    col = sentinel_tile((1, 12), F32, (1, 12))
    run("TCOLSUM", dst=col, src=Tile.of(data))
    for j in range(12):
        exact = math.fsum(float(v) for v in data[:, j])
        assert abs(float(col.data[0, j]) - exact) <= 3 * eps * math.fsum(abs(float(v)) for v in data[:, j])


# ----------------------------------------------------------------------------- expands

ROW_FORM, COL_FORM = "ROW", "COL"


def _expected(op: str, a: np.ndarray, s: np.ndarray, dtype: type) -> np.ndarray:
    """f32 arithmetic (f16 widened exactly), EXPDIF via f64 exp; one rounding to dtype."""
    a32, s32 = a.astype(np.float32), s.astype(np.float32)
    with np.errstate(all="ignore"):
        out = {
            "ADD": lambda: a32 + s32, "SUB": lambda: a32 - s32, "MUL": lambda: a32 * s32,
            "DIV": lambda: a32 / s32, "MAX": lambda: np.maximum(a32, s32),
            "MIN": lambda: np.minimum(a32, s32),
            "EXPDIF": lambda: np.exp((a32 - s32).astype(np.float64)),
        }[op]()
        return out.astype(dtype)


def _vector(form: str, values: np.ndarray) -> Tile:
    if form == ROW_FORM:
        return Tile.of(values.reshape(-1, 1), layout=Layout.DN)
    return Tile.of(values.reshape(1, -1))


@pytest.mark.parametrize("dtype", [F32, F16])
@pytest.mark.parametrize("form", [ROW_FORM, COL_FORM])
@pytest.mark.parametrize("op", EXPAND_OPS)
def test_expand_ops_partial_region(op: str, form: str, dtype: type) -> None:
    rng = np.random.default_rng(3)
    a = rng.uniform(-3, 3, (8, 16)).astype(dtype)
    vec = rng.uniform(0.5, 2, 8 if form == ROW_FORM else 16).astype(dtype)
    vec[1] = -vec[1]
    dst = sentinel_tile((8, 16), dtype, (6, 10))
    run(f"T{form}EXPAND{op}", dst=dst, src0=Tile.of(a), src1=_vector(form, vec))
    s = vec.reshape(-1, 1) if form == ROW_FORM else vec.reshape(1, -1)
    full = _expected(op, a, s, dtype)
    np.testing.assert_array_equal(dst.data[:6, :10], full[:6, :10])
    outside = np.ones((8, 16), bool)
    outside[:6, :10] = False
    assert (dst.data[outside] == SENTINEL).all()


def test_expand_hand_values() -> None:
    dst = sentinel_tile((2, 3), F32, (2, 3))
    src0 = Tile.of(np.array([[1, 2, 3], [4, 5, 6]], dtype=F32))
    run("TROWEXPANDSUB", dst=dst, src0=src0, src1=_vector(ROW_FORM, np.array([1, 10], F32)))
    assert dst.data.tolist() == [[0, 1, 2], [-6, -5, -4]]
    run("TCOLEXPANDDIV", dst=dst, src0=src0, src1=_vector(COL_FORM, np.array([1, 2, 4], F32)))
    assert dst.data.tolist() == [[1, 1, 0.75], [4, 2.5, 1.5]]
    run("TROWEXPANDEXPDIF", dst=dst, src0=src0, src1=_vector(ROW_FORM, np.array([1, 6], F32)))
    assert dst.data[0, 0] == 1.0 and dst.data[1, 2] == 1.0
    assert dst.data[0, 1] == np.float32(math.e)


def test_expand_bf16_rounds_once() -> None:
    dst = sentinel_tile((1, 2), BF16, (1, 2))
    src0 = Tile.of(np.array([[256, 1]], dtype=BF16))
    run("TCOLEXPANDADD", dst=dst, src0=src0, src1=Tile.of(np.array([[1, 2**-8]], dtype=BF16)))
    # 256 + 1 is a tie between 256 and 258 in bf16: RNE gives 256; 1 + 2^-8 -> 1 (tie to even)
    assert [float(v) for v in dst.data[0]] == [256.0, 1.0]


NAN, INF = np.nan, np.inf


@pytest.mark.parametrize("op, a, s, expect", [
    ("ADD", [INF, NAN, 1.0], -INF, [NAN, NAN, -INF]),
    ("SUB", [INF, -INF, 2.0], INF, [NAN, -INF, -INF]),
    ("MUL", [0.0, -0.0, 3.0], INF, [NAN, NAN, INF]),
    ("DIV", [1.0, -1.0, 0.0], 0.0, [INF, -INF, NAN]),
    ("DIV", [1.0, INF, -2.0], -0.0, [-INF, -INF, INF]),
    ("DIV", [INF, 1.0, -1.0], INF, [NAN, 0.0, -0.0]),
    ("MAX", [-0.0, 0.0, NAN], 0.0, [0.0, 0.0, NAN]),
    ("MIN", [-0.0, 0.0, NAN], 0.0, [-0.0, 0.0, NAN]),
    ("MAX", [1.0, -1.0, 2.0], NAN, [NAN, NAN, NAN]),
    ("EXPDIF", [INF, -INF, 0.0], INF, [NAN, 0.0, 0.0]),
    ("EXPDIF", [INF, 100.0, NAN], 0.0, [INF, INF, NAN]),
    ("EXPDIF", [-200.0, -103.0, 0.0], 0.0, [0.0, math.exp(-103.0), 1.0]),
])
@pytest.mark.parametrize("form", [ROW_FORM, COL_FORM])
def test_expand_special_values(op: str, a: list[float], s: float, expect: list[float], form: str) -> None:
    if form == ROW_FORM:
        src0 = Tile.of(np.array(a, F32).reshape(-1, 1))
        src1 = _vector(ROW_FORM, np.full(len(a), s, F32))
    else:
        src0 = Tile.of(np.array(a, F32).reshape(1, -1))
        src1 = _vector(COL_FORM, np.full(len(a), s, F32))
    dst = sentinel_tile(src0.data.shape, F32, src0.data.shape)
    run(f"T{form}EXPAND{op}", dst=dst, src0=src0, src1=src1)
    want = np.array(expect, dtype=F32).reshape(src0.data.shape)
    np.testing.assert_array_equal(dst.data, want)
    assert (np.signbit(dst.data) == np.signbit(want))[~np.isnan(want)].all()


def test_expdif_f16_overflow_and_denormal_results() -> None:
    dst = sentinel_tile((1, 3), F16, (1, 3))
    src0 = Tile.of(np.array([[12.0, -16.0, 0.0]], dtype=F16))
    run("TCOLEXPANDEXPDIF", dst=dst, src0=src0, src1=Tile.of(np.zeros((1, 3), F16)))
    assert dst.data[0, 0] == np.inf                       # e^12 > 65504
    assert dst.data[0, 1] == F16(math.exp(-16.0)) and 0 < dst.data[0, 1] < 6.2e-5   # f16 denormal
    assert dst.data[0, 2] == 1.0


I32_MIN, I32_MAX = -2**31, 2**31 - 1


@pytest.mark.parametrize("op, dtype, a, s, expect", [
    ("ADD", np.int8, [127, -128, 5], 1, [-128, -127, 6]),
    ("SUB", np.uint8, [0, 5, 255], 10, [246, 251, 245]),
    ("MUL", np.int16, [300, -300, 2], 300, [90000 - 65536, -90000 + 65536, 600]),
    ("DIV", np.int32, [7, -7, I32_MIN], -2, [-3, 3, 2**30]),
    ("DIV", np.int32, [7, -7, 0], 0, [-1, -1, -1]),
    ("DIV", np.int32, [I32_MIN, 6, -6], -1, [I32_MIN, -6, 6]),
    ("DIV", np.uint16, [5, 65535, 0], 0, [65535, 65535, 65535]),
    ("DIV", np.uint16, [65535, 7, 1], 2, [32767, 3, 0]),
    ("MAX", np.int32, [I32_MIN, I32_MAX, 0], -1, [-1, I32_MAX, 0]),
    ("MIN", np.uint32, [0, 2**32 - 1, 9], 8, [0, 8, 8]),
])
@pytest.mark.parametrize("form", [ROW_FORM, COL_FORM])
def test_integer_expand_ops(op: str, dtype: type, a: list[int], s: int, expect: list[int], form: str) -> None:
    shape = (len(a), 1) if form == ROW_FORM else (1, len(a))
    src0 = Tile.of(np.array(a, dtype).reshape(shape))
    src1 = _vector(form, np.full(len(a), s, dtype))
    dst = sentinel_tile(shape, dtype, shape)
    run(f"T{form}EXPAND{op}", dst=dst, src0=src0, src1=src1)
    assert dst.data.reshape(-1).tolist() == expect


def test_expand_in_place_on_src0() -> None:
    t = Tile.of(np.array([[1, 2], [3, 4]], dtype=F32))
    run("TROWEXPANDMUL", dst=t, src0=t, src1=_vector(ROW_FORM, np.array([10, -1], F32)))
    assert t.data.tolist() == [[10, 20], [-3, -4]]


def test_row_expand_reads_a_wide_nd_vector_column0() -> None:
    vec = Tile.of(np.array([[2, 99], [3, 99]], dtype=F32), (2, 1))
    dst = sentinel_tile((2, 2), F32, (2, 2))
    run("TROWEXPANDADD", dst=dst, src0=Tile.of(np.ones((2, 2), F32)), src1=vec)
    assert dst.data.tolist() == [[3, 3], [4, 4]]


@pytest.mark.parametrize("name, src1_valid", [("TROWEXPANDADD", (3, 1)), ("TCOLEXPANDMIN", (1, 3))])
def test_expand_vector_too_short_faults(name: str, src1_valid: tuple[int, int]) -> None:
    src1 = Tile.of(np.ones((4, 1) if name.startswith("TROW") else (1, 4), F32), src1_valid)
    dst = sentinel_tile((4, 4), F32, (4, 4))
    code = fault_code(lambda: run(name, dst=dst, src0=Tile.of(np.ones((4, 4), F32)), src1=src1))
    assert code == "RUNTIME_INVALID_READ"
    assert (dst.data == SENTINEL).all()


def test_expand_src0_too_small_faults() -> None:
    dst = sentinel_tile((4, 4), F32, (4, 4))
    src0 = Tile.of(np.ones((4, 4), F32), (4, 2))
    code = fault_code(lambda: run("TCOLEXPANDSUB", dst=dst, src0=src0,
                                  src1=Tile.of(np.ones((1, 4), F32))))
    assert code == "RUNTIME_INVALID_READ"


# ----------------------------------------------------------------------------- plain broadcasts

PAYLOAD_NAN = np.array([0x7FC01234], dtype=np.uint32).view(F32)[0]


@pytest.mark.parametrize("dtype", [F32, F16, np.int8, np.uint32])
def test_trowexpand_copies_column0_over_the_region(dtype: type) -> None:
    src_vals = np.array([[5, 1], [7, 1], [9, 1], [11, 1]], dtype=dtype)
    dst = sentinel_tile((4, 6), dtype, (3, 4))
    run("TROWEXPAND", dst=dst, src=Tile.of(src_vals))
    assert dst.data[:3, :4].tolist() == [[5] * 4, [7] * 4, [9] * 4]
    assert (dst.data[3, :] == SENTINEL).all() and (dst.data[:, 4:] == SENTINEL).all()


@pytest.mark.parametrize("dtype", [np.int32, F16])
def test_tcolexpand_copies_row0_over_the_region(dtype: type) -> None:
    src_vals = np.array([[1, 2, 3, 4], [9, 9, 9, 9]], dtype=dtype)
    dst = sentinel_tile((4, 4), dtype, (3, 3))
    run("TCOLEXPAND", dst=dst, src=Tile.of(src_vals))
    assert dst.data[:3, :3].tolist() == [[1, 2, 3]] * 3
    assert (dst.data[3, :] == SENTINEL).all() and (dst.data[:, 3] == SENTINEL).all()


def test_broadcasts_are_bit_exact() -> None:
    vals = np.array([PAYLOAD_NAN, -0.0, np.inf, 1e-45], dtype=F32)
    dst = sentinel_tile((4, 3), F32, (4, 3))
    run("TROWEXPAND", dst=dst, src=Tile.of(vals.reshape(4, 1), layout=Layout.DN))
    assert same_bits(dst.data, np.repeat(vals.reshape(4, 1), 3, axis=1))
    dst = sentinel_tile((3, 4), F32, (3, 4))
    run("TCOLEXPAND", dst=dst, src=Tile.of(vals.reshape(1, 4)))
    assert same_bits(dst.data, np.repeat(vals.reshape(1, 4), 3, axis=0))


def test_broadcast_faults_and_empty_domains() -> None:
    dst = sentinel_tile((4, 4), F32, (4, 4))
    short = Tile.of(np.ones((4, 1), F32), (2, 1))
    assert fault_code(lambda: run("TROWEXPAND", dst=dst, src=short)) == "RUNTIME_INVALID_READ"
    narrow = Tile.of(np.ones((1, 4), F32), (1, 2))
    assert fault_code(lambda: run("TCOLEXPAND", dst=dst, src=narrow)) == "RUNTIME_INVALID_READ"
    # a domain with no columns reads nothing, even from a source with no valid columns
    empty = sentinel_tile((4, 4), F32, (4, 0))
    run("TROWEXPAND", dst=empty, src=Tile.of(np.ones((4, 1), F32), (4, 0)))
    assert (empty.data == SENTINEL).all()


# ----------------------------------------------------------------------------- issue 14 forms


def _f32(rows: list[list[float]], valid: tuple[int, int] | None = None, layout: Layout = Layout.ND) -> Tile:
    return Tile.of(np.array(rows, dtype=F32), valid, layout=layout)


def test_row_expand_mode2_hand_values() -> None:
    """Mode 2: the 8-value f32 block of each row repeats along the row (j mod 8)."""
    block = [[1, 2, 3, 4, 5, 6, 7, 8], [-1, -2, -3, -4, -5, -6, -7, -8]]
    src0 = _f32([[100.0] * 12, [0.5] * 12])
    dst = sentinel_tile((2, 12), F32, (2, 12))
    run("TROWEXPANDMUL", dst=dst, src0=src0, src1=_f32(block))
    assert dst.data.tolist() == [[100, 200, 300, 400, 500, 600, 700, 800, 100, 200, 300, 400],
                                 [-0.5, -1, -1.5, -2, -2.5, -3, -3.5, -4, -0.5, -1, -1.5, -2]]


def test_row_expand_src0_expanded_keeps_the_operand_order() -> None:
    """src0 the per-row operand: dst = s - src1 and s / src1, not the other way round."""
    s = _f32([[10.0], [3.0]], layout=Layout.DN)
    x = _f32([[1, 2, 4, 5], [1, -3, 0.5, 6]])
    sub, div = sentinel_tile((2, 4), F32, (2, 4)), sentinel_tile((2, 4), F32, (2, 4))
    run("TROWEXPANDSUB", dst=sub, src0=s, src1=x)
    run("TROWEXPANDDIV", dst=div, src0=s, src1=x)
    assert sub.data.tolist() == [[9, 8, 6, 5], [2, 6, 2.5, -3]]
    assert div.data.tolist() == [[10, 5, 2.5, 2], [3, -1, 6, 0.5]]


def test_row_expand_src0_expdif_and_mode2_integers() -> None:
    s = _f32([[0.0], [1.0]], layout=Layout.DN)
    x = _f32([[0.0, 1.0], [1.0, 0.0]])
    dst = sentinel_tile((2, 2), F32, (2, 2))
    run("TROWEXPANDEXPDIF", dst=dst, src0=s, src1=x)
    assert dst.data.tolist() == [[1.0, float(F32(math.exp(-1)))], [1.0, float(F32(math.e))]]
    block = Tile.of(np.arange(16, dtype=np.int16).reshape(1, 16))
    full = Tile.of(np.full((1, 20), 1000, dtype=np.int16))
    out = sentinel_tile((1, 20), np.int16, (1, 20))
    run("TROWEXPANDSUB", dst=out, src0=full, src1=block)
    assert out.data.tolist() == [[1000 - (j % 16) for j in range(20)]]


def test_row_expand_dynamic_width_outside_both_modes_faults() -> None:
    block = _f32([[1, 2, 3, 4, 5, 6, 7, 8]], valid=(1, 4))
    with pytest.raises(RuntimeFault) as e:
        run("TROWEXPANDADD", dst=sentinel_tile((1, 16), F32, (1, 16)), src0=_f32([[0.0] * 16]), src1=block)
    assert e.value.code == "RUNTIME_VALID_REGION"


def test_row_expand_tmp_is_never_read_or_written() -> None:
    tmp = sentinel_tile((2, 4), F32, (2, 4))
    dst = sentinel_tile((2, 4), F32, (2, 4))
    run("TROWEXPANDADD", dst=dst, src0=_f32([[1, 2, 3, 4], [5, 6, 7, 8]]),
        src1=_f32([[1.0], [-1.0]], layout=Layout.DN), tmp=tmp)
    assert dst.data.tolist() == [[2, 3, 4, 5], [4, 5, 6, 7]] and (tmp.data == SENTINEL).all()


@pytest.mark.parametrize("name", ["TROWEXPANDDIV", "TCOLEXPANDDIV"])
def test_expand_div_precision_attribute(name: str) -> None:
    """Both PrecisionType values give the correctly rounded quotient (1/3 in f32)."""
    from openpto.isa.attrs import Precision
    attr = isa.get(name).attr("PrecisionType")
    assert attr.default is Precision.DEFAULT and set(attr.type) == set(Precision)
    vec = (_f32([[3.0]], layout=Layout.DN) if name.startswith("TROW") else _f32([[3.0, 3.0]]))
    for p in Precision:
        dst = sentinel_tile((1, 2), F32, (1, 2))
        run(name, dst=dst, src0=_f32([[1.0, -2.0]]), src1=vec, PrecisionType=p)
        assert dst.data.tolist() == [[float(F32(1) / F32(3)), float(F32(-2) / F32(3))]]
