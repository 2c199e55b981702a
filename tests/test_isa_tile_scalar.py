"""Tile-scalar family: declarations, and semantics checked against expectations computed here.

Expectations use plain Python / numpy (f64 arithmetic rounded once, Python integers masked
to the width, hand literals) and never the helpers under test.
"""
from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import openpto.isa as isa
from openpto.isa import Family, Kind, RuntimeFault, Tile
from openpto.isa import constraints as K
from openpto.isa.attrs import CmpMode
from openpto.isa.types import ScalarType, TileType, parse_type

NAMES = ("TADDS TSUBS TMULS TDIVS TMAXS TMINS TANDS TORS TXORS TSHLS TSHRS TREMS TFMODS "
         "TLRELU TADDSC TSUBSC TEXPANDS TCMPS TSELS").split()
SENTINEL = 77
BF16 = ml_dtypes.bfloat16


def run(mnemonic: str, out_dtype: type, shape: tuple[int, int] | None = None,
        valid: tuple[int, int] | None = None, **operands: object) -> np.ndarray:
    """Execute with tile operands given as arrays; dst starts filled with SENTINEL."""
    tiles = {k: Tile.of(np.asarray(v)) if isinstance(v, np.ndarray) else v for k, v in operands.items()}
    if shape is None:
        shape = next(t.data.shape for t in tiles.values() if isinstance(t, Tile))
    dst = Tile.of(np.full(shape, SENTINEL, dtype=out_dtype), valid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        isa.get(mnemonic).execute(dst=dst, **tiles)
    return dst.data


def f32(*vals: float) -> np.ndarray:
    return np.array([vals], dtype=np.float32)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def rounded(exact: np.ndarray, dtype: type) -> np.ndarray:
    """f64 result rounded once to ``dtype`` (innocuous double rounding for + - * /)."""
    with np.errstate(all="ignore"):
        return np.asarray(exact, dtype=np.float64).astype(dtype)


def wrap(values: list[int], dtype: type) -> np.ndarray:
    """Python integers reduced to ``dtype`` by two's complement, by hand."""
    bits = np.dtype(dtype).itemsize * 8
    signed = np.dtype(dtype).kind == "i"
    out = []
    for v in values:
        v &= (1 << bits) - 1
        if signed and v >= 1 << (bits - 1):
            v -= 1 << bits
        out.append(v)
    return np.array([out], dtype=dtype)


# ----------------------------------------------------------------------------- declarations

def test_all_nineteen_declared_in_family() -> None:
    fam = [i.mnemonic for i in isa.by_family()[Family.TILE_SCALAR]          # TAXPY and TPOWS are
           if i.semantics.__module__.endswith(".tile_scalar")]              # declared with the fused ops
    assert sorted(fam) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_scalar_operand_is_part_of_dtype_signature(name: str) -> None:
    ins = isa.get(name)
    scalar = ins.operand("scalar")
    assert scalar.kind is Kind.SCALAR
    assert "scalar" in ins.dtypes.operands
    for combo in ins.dtypes.tuples:
        pos = dict(zip(ins.dtypes.operands, combo))
        tile_dtype = pos.get("src", pos.get("src0", pos["dst"]))
        assert pos["scalar"] == tile_dtype


@pytest.mark.parametrize("name", NAMES)
def test_example_is_legal_and_runs(name: str) -> None:
    """The declaration's own example type-checks, passes its constraints and executes cleanly."""
    ins = isa.get(name)
    types = {k: parse_type(v) for k, v in ins.example.types.items()}
    combo = tuple(types[o].dtype for o in ins.dtypes.operands)
    assert ins.dtypes.allows(combo)
    assert K.check_all(ins.constraints, types, ins.example.attrs) == []
    rng = np.random.default_rng(0)
    args: dict[str, object] = dict(ins.example.scalars)
    for n, t in types.items():
        if isinstance(t, TileType):
            data = (rng.integers(0, 2, t.shape) if t.dtype.kind == "bool"
                    else rng.integers(-50, 50, t.shape)).astype(t.dtype.np_dtype)
            args[n] = Tile(t, data)
        else:
            assert isinstance(t, ScalarType)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ins.execute(**args, **ins.example.attrs)


def allows(name: str, profile: str, *dtypes: str) -> bool:
    return isa.get(name).dtype_rule(profile).allows(tuple(isa.dtypes.get(d) for d in dtypes))


def test_profiles_and_narrowing() -> None:
    assert isa.get("TADDSC").profiles == ("cpu",) and isa.get("TSUBSC").profiles == ("cpu",)
    assert not isa.get("TADDSC").supported_on("a5") and isa.get("TADDS").supported_on("a2")
    assert allows("TADDS", "a5", "bf16", "bf16", "bf16") and not allows("TADDS", "a2", "bf16", "bf16", "bf16")
    assert allows("TADDS", "cpu", "u8", "u8", "u8") and not allows("TADDS", "a3", "u8", "u8", "u8")
    assert not allows("TADDS", "a2", "f32", "f32", "f16")
    assert allows("TDIVS", "a5", "u16", "u16", "u16") and not allows("TDIVS", "a2", "u16", "u16", "u16")
    assert allows("TANDS", "a2", "u16", "u16", "u16") and not allows("TANDS", "a2", "i32", "i32", "i32")
    assert allows("TSHLS", "a2", "u32", "u32", "u32") and not allows("TSHLS", "a2", "i8", "i8", "i8")
    assert allows("TCMPS", "a5", "i1", "i16", "i16") and not allows("TCMPS", "a2", "i1", "i16", "i16")
    assert allows("TSELS", "a5", "i8", "i1", "i8", "i8") and not allows("TSELS", "a3", "i8", "i1", "i8", "i8")
    assert allows("TEXPANDS", "a5", "u8", "u8") and not allows("TEXPANDS", "a2", "u8", "u8")
    assert allows("TLRELU", "cpu", "bf16", "bf16", "bf16") and not allows("TLRELU", "a5", "bf16", "bf16", "bf16")
    assert isa.get("TDIVS").attr("reverse").default is False
    assert isa.get("TCMPS").attr("cmpMode").required


def test_static_constraints_reject_bad_types() -> None:
    ins = isa.get("TADDS")
    bad_valid = {"dst": parse_type("!pto.tile<8x8xf32>"), "src": parse_type("!pto.tile<8x8xf32, valid=4x8>"),
                 "scalar": parse_type("f32")}
    bad_shape = {"dst": parse_type("!pto.tile<8x8xf32>"), "src": parse_type("!pto.tile<8x16xf32>"),
                 "scalar": parse_type("f32")}
    assert [c.code for c, _ in K.check_all(ins.constraints, bad_valid, {})] == ["STRUCT_VALID_REGION"]
    # static shapes may differ (the public kernels compare valid regions only)
    assert [c.code for c, _ in K.check_all(ins.constraints, bad_shape, {})] == []


# ----------------------------------------------------------------------------- arithmetic

ARITH_FLOAT = {
    "TADDS": lambda a, s: a + s,
    "TSUBS": lambda a, s: a - s,
    "TMULS": lambda a, s: a * s,
}


@pytest.mark.parametrize("name", ARITH_FLOAT)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
def test_float_arith_matches_rounded_f64(name: str, dtype: type) -> None:
    rng = np.random.default_rng(1)
    src = rng.uniform(-100, 100, (4, 8)).astype(dtype)
    out = run(name, dtype, src=src, scalar=1.3)
    s = float(np.array(1.3, dtype=dtype))  # the scalar converted to the tile dtype
    assert same_bits(out, rounded(ARITH_FLOAT[name](src.astype(np.float64), s), dtype))


def test_float_arith_special_values() -> None:
    inf, nan = math.inf, math.nan
    out = run("TADDS", np.float32, src=f32(inf, -inf, 1.0, -0.0), scalar=-inf)
    assert np.isnan(out[0, 0]) and out[0, 1] == -inf and out[0, 2] == -inf and out[0, 3] == -inf
    out = run("TSUBS", np.float32, src=f32(inf, 0.0, -0.0), scalar=inf)
    assert np.isnan(out[0, 0]) and out[0, 1] == -inf and out[0, 2] == -inf
    out = run("TMULS", np.float32, src=f32(inf, 2.0, nan, 3.0), scalar=0.0)
    assert np.isnan(out[0, 0]) and out[0, 1] == 0 and np.isnan(out[0, 2]) and not np.signbit(out[0, 3])
    out = run("TMULS", np.float32, src=f32(3.0), scalar=-0.0)
    assert out[0, 0] == 0 and np.signbit(out[0, 0])
    out = run("TADDS", np.float32, src=f32(-0.0, 0.0), scalar=-0.0)
    assert np.signbit(out[0, 0]) and not np.signbit(out[0, 1])
    # denormals are kept, not flushed
    tiny = np.float32(1e-45)
    assert run("TMULS", np.float32, src=f32(tiny), scalar=3.0)[0, 0] == np.float32(3 * 1.401298464324817e-45)
    # f16 overflow to inf, and a scalar literal too large for f16 becomes inf
    assert run("TMULS", np.float16, src=np.array([[60000.0]], np.float16), scalar=2.0)[0, 0] == np.inf
    assert run("TADDS", np.float16, src=np.array([[1.0]], np.float16), scalar=1e6)[0, 0] == np.inf


INT_CASES = {
    "TADDS": (lambda a, s: a + s, [0, 1, -1, 32767, -32768, 1234], 1),
    "TSUBS": (lambda a, s: a - s, [0, 1, -1, 32767, -32768, 1234], 1),
    "TMULS": (lambda a, s: a * s, [0, 1, -1, 32767, -32768, 300], 300),
}


@pytest.mark.parametrize("name", INT_CASES)
@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.uint8])
def test_int_arith_wraps(name: str, dtype: type) -> None:
    fn, vals, s = INT_CASES[name]
    src = wrap(vals, dtype)
    out = run(name, dtype, src=src, scalar=s)
    s_wrapped = int(wrap([s], dtype)[0, 0])
    assert same_bits(out, wrap([fn(int(v), s_wrapped) for v in src[0]], dtype))


def test_int_scalar_literal_wraps_to_tile_dtype() -> None:
    out = run("TADDS", np.int16, src=np.array([[0, 5]], np.int16), scalar=70000)
    assert out.tolist() == [[70000 - 65536, 70000 - 65536 + 5]]
    out = run("TADDS", np.uint8, src=np.array([[0]], np.uint8), scalar=-1)
    assert out.tolist() == [[255]]


def test_int_scalar_literal_wraps_beyond_64_bits() -> None:
    # 2**64 + 3 wraps to 3 in every integer width; -(2**64) - 1 wraps to -1 (all ones).
    out = run("TADDS", np.int32, src=np.array([[1, 2]], np.int32), scalar=2 ** 64 + 3)
    assert out.tolist() == [[4, 5]]
    out = run("TADDS", np.uint16, src=np.array([[1]], np.uint16), scalar=-(2 ** 64) - 1)
    assert out.tolist() == [[0]]
    out = run("TXORS", np.int8, src=np.array([[0x0F]], np.int8), scalar=2 ** 70 - 1)
    assert out.tolist() == [[~0x0F]]


@pytest.mark.parametrize("scalar", [2.5, float("nan"), float("inf"), "abc", None])
def test_unconvertible_int_scalar_is_a_runtime_fault(scalar: object) -> None:
    with pytest.raises(RuntimeFault) as e:
        run("TADDS", np.int32, src=np.array([[1]], np.int32), scalar=scalar)
    assert e.value.code == "RUNTIME_SCALAR_VALUE" and e.value.expected and e.value.actual


def test_unconvertible_float_scalar_is_a_runtime_fault() -> None:
    with pytest.raises(RuntimeFault) as e:
        run("TMULS", np.float32, src=np.array([[1.0]], np.float32), scalar="abc")
    assert e.value.code == "RUNTIME_SCALAR_VALUE"


# ----------------------------------------------------------------------------- TDIVS

@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_tdivs_float_both_forms(dtype: type) -> None:
    rng = np.random.default_rng(2)
    src = rng.uniform(0.5, 50, (3, 5)).astype(dtype) * np.where(rng.random((3, 5)) < 0.5, -1, 1).astype(dtype)
    fwd = run("TDIVS", dtype, src=src, scalar=3.0)
    assert same_bits(fwd, rounded(src.astype(np.float64) / 3.0, dtype))
    rev = run("TDIVS", dtype, src=src, scalar=3.0, reverse=True)
    assert same_bits(rev, rounded(3.0 / src.astype(np.float64), dtype))


def test_tdivs_float_division_by_zero() -> None:
    out = run("TDIVS", np.float32, src=f32(1.0, -1.0, 0.0, math.inf), scalar=0.0)
    assert out[0, 0] == math.inf and out[0, 1] == -math.inf and np.isnan(out[0, 2]) and out[0, 3] == math.inf
    out = run("TDIVS", np.float32, src=f32(1.0, 0.0, -0.0, math.inf), scalar=-2.0, reverse=True)
    assert out[0, 0] == -2.0 and out[0, 1] == -math.inf and out[0, 2] == math.inf and out[0, 3] == 0
    assert np.signbit(out[0, 3])
    out = run("TDIVS", np.float32, src=f32(math.inf), scalar=math.inf)
    assert np.isnan(out[0, 0])


def test_tdivs_int_truncates_and_zero_gives_minus_one() -> None:
    src = np.array([[7, -7, 7, -7, 0, -2147483648]], np.int32)
    assert run("TDIVS", np.int32, src=src, scalar=2).tolist() == [[3, -3, 3, -3, 0, -1073741824]]
    assert run("TDIVS", np.int32, src=src, scalar=-2).tolist() == [[-3, 3, -3, 3, 0, 1073741824]]
    assert run("TDIVS", np.int32, src=src, scalar=0).tolist() == [[-1] * 6]
    assert run("TDIVS", np.int32, src=src, scalar=-1).tolist() == [[-7, 7, -7, 7, 0, -2147483648]]
    rev = run("TDIVS", np.int32, src=np.array([[2, -2, 0, 100]], np.int32), scalar=-7, reverse=True)
    assert rev.tolist() == [[-3, 3, -1, 0]]


def test_tdivs_unsigned() -> None:
    src = np.array([[65535, 10, 0]], np.uint16)
    assert run("TDIVS", np.uint16, src=src, scalar=0).tolist() == [[65535, 65535, 65535]]
    assert run("TDIVS", np.uint16, src=src, scalar=3).tolist() == [[21845, 3, 0]]
    assert run("TDIVS", np.uint16, src=src, scalar=10, reverse=True).tolist() == [[0, 1, 65535]]


# ----------------------------------------------------------------------------- min / max

@pytest.mark.parametrize("name,pick", [("TMAXS", max), ("TMINS", min)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_minmax_float(name: str, pick: object, dtype: type) -> None:
    src = np.array([[-3.0, 0.5, 2.0, math.inf, -math.inf]], dtype)
    out = run(name, dtype, src=src, scalar=0.5)
    assert same_bits(out, np.array([[pick(float(v), 0.5) for v in src[0]]], dtype))


@pytest.mark.parametrize("name", ["TMAXS", "TMINS"])
def test_minmax_nan(name: str) -> None:
    out = run(name, np.float32, src=f32(math.nan, 1.0), scalar=2.0)
    assert np.isnan(out[0, 0]) and out[0, 1] == (2.0 if name == "TMAXS" else 1.0)
    out = run(name, np.float32, src=f32(1.0, -5.0), scalar=math.nan)
    assert np.isnan(out).all()


# sign bits of the results for src = (-0, +0): IEEE maximum/minimum order -0 below +0
# (a list, not a dict: -0.0 and 0.0 are the same dict key)
ZERO_CASES = [("TMAXS", -0.0, [True, False]), ("TMAXS", 0.0, [False, False]),
              ("TMINS", 0.0, [True, False]), ("TMINS", -0.0, [True, True])]


@pytest.mark.parametrize("name,s,signs", ZERO_CASES)
def test_minmax_signed_zero(name: str, s: float, signs: list[bool]) -> None:
    out = run(name, np.float32, src=f32(-0.0, 0.0), scalar=s)
    assert (out == 0).all() and np.signbit(out[0]).tolist() == signs


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8])
def test_minmax_int(dtype: type) -> None:
    info = np.iinfo(dtype)
    src = np.array([[info.min, -1 if info.min else 0, 5, info.max]], dtype)
    assert run("TMAXS", dtype, src=src, scalar=4).tolist() == [[max(int(v), 4) for v in src[0]]]
    assert run("TMINS", dtype, src=src, scalar=4).tolist() == [[min(int(v), 4) for v in src[0]]]


# ----------------------------------------------------------------------------- remainders

REM_VALUES = [7.0, -7.0, 7.5, -7.5, 6.0, -6.0, 0.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("s", [3.0, -3.0, 2.5])
def test_trems_floored_tfmods_truncated_float(dtype: type, s: float) -> None:
    src = np.array([REM_VALUES], dtype)
    rem = run("TREMS", dtype, src=src, scalar=s)
    fmod = run("TFMODS", dtype, src=src, scalar=s)
    # Python % floors (a zero takes the divisor's sign); math.fmod truncates (the dividend's)
    assert same_bits(rem, np.array([[v % s for v in REM_VALUES]], dtype))
    assert same_bits(fmod, np.array([[math.fmod(v, s) for v in REM_VALUES]], dtype))


def test_remainder_float_special_values() -> None:
    src = f32(5.0, math.inf, math.nan, -1.0, 1.0)
    rem = run("TREMS", np.float32, src=src, scalar=0.0)
    fmod = run("TFMODS", np.float32, src=src, scalar=0.0)
    assert np.isnan(rem).all() and np.isnan(fmod).all()
    rem = run("TREMS", np.float32, src=src, scalar=math.inf)
    assert np.isnan(rem[0, 1]) and np.isnan(rem[0, 2])
    assert rem[0, 0] == 5.0 and rem[0, 3] == math.inf and rem[0, 4] == 1.0
    fmod = run("TFMODS", np.float32, src=src, scalar=math.inf)
    assert np.isnan(fmod[0, 1]) and fmod[0, 0] == 5.0 and fmod[0, 3] == -1.0


@pytest.mark.parametrize("dtype", [np.int32, np.int16])
@pytest.mark.parametrize("s", [3, -3, 1, -1])
def test_remainder_int(dtype: type, s: int) -> None:
    vals = [7, -7, 6, -6, 0, int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)]
    src = np.array([vals], dtype)
    assert run("TREMS", dtype, src=src, scalar=s).tolist() == [[v % s for v in vals]]
    trunc = [int(math.copysign(abs(v) % abs(s), v)) if v else 0 for v in vals]
    assert run("TFMODS", dtype, src=src, scalar=s).tolist() == [trunc]


@pytest.mark.parametrize("name", ["TREMS", "TFMODS"])
def test_remainder_int_by_zero_keeps_dividend(name: str) -> None:
    src = np.array([[7, -7, 0, -32768]], np.int16)
    assert run(name, np.int16, src=src, scalar=0).tolist() == [[7, -7, 0, -32768]]


# ----------------------------------------------------------------------------- TLRELU

@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_tlrelu(dtype: type) -> None:
    rng = np.random.default_rng(3)
    src = rng.uniform(-10, 10, (4, 6)).astype(dtype)
    out = run("TLRELU", dtype, src=src, scalar=0.1)
    s = float(np.array(0.1, dtype))
    exact = np.where(src.astype(np.float64) > 0, src.astype(np.float64), src.astype(np.float64) * s)
    assert same_bits(out, rounded(exact, dtype))


def test_tlrelu_special_values() -> None:
    out = run("TLRELU", np.float32, src=f32(math.nan, -0.0, math.inf, -math.inf, 0.0), scalar=0.5)
    assert np.isnan(out[0, 0]) and out[0, 1] == 0 and np.signbit(out[0, 1])
    assert out[0, 2] == math.inf and out[0, 3] == -math.inf and not np.signbit(out[0, 4])
    assert np.isnan(run("TLRELU", np.float32, src=f32(-math.inf), scalar=0.0)[0, 0])
    # -0 is not > 0, so it takes the slope: -0 * -0.5 = +0
    out = run("TLRELU", np.float32, src=f32(-0.0, -2.0), scalar=-0.5)
    assert out[0, 0] == 0 and not np.signbit(out[0, 0]) and out[0, 1] == 1.0


# ----------------------------------------------------------------------------- bitwise

BIT_OPS = {"TANDS": lambda a, b: a & b, "TORS": lambda a, b: a | b, "TXORS": lambda a, b: a ^ b}


@pytest.mark.parametrize("name", BIT_OPS)
@pytest.mark.parametrize("dtype", [np.int16, np.uint16, np.uint8, np.int32])
@pytest.mark.parametrize("s", [0x0FF0, -1, 0])
def test_bitwise(name: str, dtype: type, s: int) -> None:
    bits = np.dtype(dtype).itemsize * 8
    vals = [0, 1, -1, 0x5A5A, 1 << (bits - 1), 12345]
    src = wrap(vals, dtype)
    mask = (1 << bits) - 1
    expect = wrap([BIT_OPS[name](v & mask, s & mask) for v in vals], dtype)
    assert same_bits(run(name, dtype, src=src, scalar=s), expect)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=16), st.integers(-2**31, 2**31 - 1))
def test_bitwise_property_i32(vals: list[int], s: int) -> None:
    src = np.array([vals], np.int32)
    assert run("TXORS", np.int32, src=src, scalar=s).tolist() == [[v ^ s for v in vals]]
    assert run("TANDS", np.int32, src=src, scalar=s).tolist() == [[v & s for v in vals]]


# ----------------------------------------------------------------------------- shifts

def _shl(v: int, n: int, bits: int) -> int:
    return 0 if n >= bits else v << n


def _shr(v: int, n: int, bits: int) -> int:
    return v >> min(n, bits)          # Python >> is arithmetic; beyond the width: 0 or -1


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int8, np.uint8, np.int16])
@pytest.mark.parametrize("count", [0, 1, 3, 7, 8, 15, 31, 32, 40, -1])
def test_shifts(dtype: type, count: int) -> None:
    bits = np.dtype(dtype).itemsize * 8
    signed = np.dtype(dtype).kind == "i"
    vals = [0, 1, -1, 5, -6, (1 << (bits - 1)) - 1, -(1 << (bits - 1))]
    src = wrap(vals, dtype)
    typed = [int(v) for v in src[0]]              # values as the dtype reads them
    n = count & ((1 << bits) - 1)                  # count in the dtype, read as unsigned
    shl = wrap([_shl(v, n, bits) for v in typed], dtype)
    shr = wrap([_shr(v, n, bits) for v in typed], dtype)
    assert same_bits(run("TSHLS", dtype, src=src, scalar=count), shl)
    assert same_bits(run("TSHRS", dtype, src=src, scalar=count), shr)
    if signed and n >= bits:
        assert run("TSHRS", dtype, src=src, scalar=count)[0].tolist() == [0, 0, -1, 0, -1, 0, -1]


def test_shift_hand_literals() -> None:
    assert run("TSHRS", np.int16, src=np.array([[-16, 16]], np.int16), scalar=2).tolist() == [[-4, 4]]
    assert run("TSHRS", np.uint16, src=np.array([[0xFFF0]], np.uint16), scalar=4).tolist() == [[0x0FFF]]
    assert run("TSHLS", np.int8, src=np.array([[0x41]], np.int8), scalar=1).tolist() == [[-126]]


# ----------------------------------------------------------------------------- fused TADDSC / TSUBSC

def test_fused_left_to_right_in_f32() -> None:
    big = float(2 ** 24)
    out = run("TADDSC", np.float32, src0=f32(big, 1.0), scalar=1.0, src1=f32(-big, 2.0))
    assert out.tolist() == [[0.0, 4.0]]           # (2^24 + 1) rounds to 2^24 before + src1
    out = run("TSUBSC", np.float32, src0=f32(big, 1.0), scalar=-1.0, src1=f32(-big, 2.0))
    assert out.tolist() == [[0.0, 4.0]]
    h = np.array([[2048.0]], np.float16)           # 2049 is exact in f32 but not in f16
    assert run("TADDSC", np.float16, src0=h, scalar=1.0, src1=-h).tolist() == [[1.0]]
    assert run("TSUBSC", np.float16, src0=h, scalar=-1.0, src1=-h).tolist() == [[1.0]]


@pytest.mark.parametrize("dtype", [np.int8, np.int32])
def test_fused_int_wraps(dtype: type) -> None:
    a, b = wrap([100, -128, 7], dtype), wrap([-100, 1, 3], dtype)
    add = run("TADDSC", dtype, src0=a, scalar=100, src1=b)
    sub = run("TSUBSC", dtype, src0=a, scalar=100, src1=b)
    assert same_bits(add, wrap([int(x) + 100 + int(y) for x, y in zip(a[0], b[0])], dtype))
    assert same_bits(sub, wrap([int(x) - 100 + int(y) for x, y in zip(a[0], b[0])], dtype))


def test_fused_nan_inf() -> None:
    out = run("TADDSC", np.float32, src0=f32(math.inf, 1.0), scalar=-math.inf, src1=f32(0.0, 1.0))
    assert np.isnan(out[0, 0]) and out[0, 1] == -math.inf


# ----------------------------------------------------------------------------- TEXPANDS

def test_texpands_values_and_conversion() -> None:
    out = run("TEXPANDS", np.float32, shape=(2, 3), scalar=-2.5)
    assert out.tolist() == [[-2.5] * 3] * 2
    out = run("TEXPANDS", np.float16, shape=(1, 2), scalar=0.1)
    assert same_bits(out, np.full((1, 2), np.float16(0.1)))
    assert run("TEXPANDS", np.float16, shape=(1, 1), scalar=1e6)[0, 0] == np.inf
    neg0 = run("TEXPANDS", np.float32, shape=(1, 2), scalar=-0.0)
    assert np.signbit(neg0).all()
    assert np.isnan(run("TEXPANDS", np.float32, shape=(1, 2), scalar=math.nan)).all()
    assert run("TEXPANDS", np.int16, shape=(1, 2), scalar=70000).tolist() == [[4464, 4464]]
    assert run("TEXPANDS", np.uint8, shape=(1, 1), scalar=-1).tolist() == [[255]]


def test_texpands_partial_valid_region() -> None:
    out = run("TEXPANDS", np.int32, shape=(4, 8), valid=(3, 5), scalar=9)
    assert (out[:3, :5] == 9).all()
    assert (out[3:, :] == SENTINEL).all() and (out[:, 5:] == SENTINEL).all()


# ----------------------------------------------------------------------------- TCMPS

CMP_PY = {CmpMode.EQ: lambda a, b: a == b, CmpMode.NE: lambda a, b: a != b,
          CmpMode.LT: lambda a, b: a < b, CmpMode.LE: lambda a, b: a <= b,
          CmpMode.GT: lambda a, b: a > b, CmpMode.GE: lambda a, b: a >= b}


@pytest.mark.parametrize("mode", list(CmpMode))
@pytest.mark.parametrize("dtype,vals,s", [
    (np.float32, [-1.0, 0.0, -0.0, 1.0, 1.0000001, math.nan, math.inf, -math.inf], 1.0),
    (np.float32, [-1.0, 0.0, -0.0, 2.0], -0.0),
    (np.float32, [-1.0, 0.0, math.nan, math.inf], math.nan),
    (np.float16, [-1.0, 0.0, 0.5, 1.0, math.nan], 0.5),
    (np.int32, [-2**31, -1, 0, 5, 2**31 - 1], 5),
    (np.uint8, [0, 5, 200, 255], 200),
])
def test_tcmps(mode: CmpMode, dtype: type, vals: list, s: float) -> None:
    src = np.array([vals], dtype)
    out = run("TCMPS", np.bool_, src=src, scalar=s, cmpMode=mode)
    expect = [[CMP_PY[mode](float(v), float(s)) for v in src[0]]]   # Python: NaN unordered, -0 == 0
    assert out.dtype == np.bool_ and out.tolist() == expect


def test_tcmps_is_exact_not_tolerant() -> None:
    """The public CPU simulator's 1e-9 EQ tolerance is not adopted."""
    out = run("TCMPS", np.bool_, src=np.array([[1e-10, 0.0]], np.float32), scalar=0.0, cmpMode=CmpMode.EQ)
    assert out.tolist() == [[False, True]]


# ----------------------------------------------------------------------------- TSELS

@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int16, np.uint32, BF16])
def test_tsels_per_element(dtype: type) -> None:
    rng = np.random.default_rng(4)
    src = rng.integers(-50, 50, (4, 6)).astype(dtype)
    mask = rng.random((4, 6)) < 0.5
    out = run("TSELS", dtype, mask=mask, src=src, scalar=7)
    assert same_bits(out, np.where(mask, src, np.array(7, dtype)).astype(dtype))


def test_tsels_bits_and_scalar_conversion() -> None:
    payload = np.array([[0x7FC01234, 0x80000000]], np.uint32).view(np.float32)   # NaN payload, -0
    mask = np.array([[True, True]])
    out = run("TSELS", np.float32, mask=mask, src=payload, scalar=1.0)
    assert same_bits(out, payload)
    out = run("TSELS", np.float16, mask=np.array([[False]]), src=np.array([[1.0]], np.float16), scalar=0.1)
    assert same_bits(out, np.array([[np.float16(0.1)]]))
    out = run("TSELS", np.int16, mask=np.array([[False, True]]), src=np.array([[1, 2]], np.int16), scalar=-70000)
    assert out.tolist() == [[-70000 + 65536, 2]]     # -70000 wraps to -4464


# ----------------------------------------------------------------------------- valid regions and faults

PARTIAL_CASES = {
    "TADDS": (np.float32, {"scalar": 1.0}),
    "TDIVS": (np.int32, {"scalar": 2}),
    "TANDS": (np.uint16, {"scalar": 0xF}),
    "TSHLS": (np.int32, {"scalar": 1}),
    "TREMS": (np.int16, {"scalar": 3}),
    "TMINS": (np.float16, {"scalar": 0.0}),
    "TLRELU": (np.float32, {"scalar": 0.5}),
}


@pytest.mark.parametrize("name", PARTIAL_CASES)
def test_partial_valid_region_leaves_rest_untouched(name: str) -> None:
    dtype, extra = PARTIAL_CASES[name]
    src = (np.arange(32).reshape(4, 8) - 10).astype(dtype)
    out = run(name, dtype, valid=(3, 5), src=src, **extra)
    assert (out[3:, :] == SENTINEL).all() and (out[:, 5:] == SENTINEL).all()
    full = run(name, dtype, src=src, **extra)
    assert same_bits(out[:3, :5].copy(), full[:3, :5].copy())


def test_partial_valid_region_fused_cmp_sel() -> None:
    a = np.ones((4, 8), np.float32)
    out = run("TADDSC", np.float32, valid=(2, 3), src0=a, scalar=1.0, src1=a)
    assert (out[:2, :3] == 3).all() and (out[2:] == SENTINEL).all() and (out[:, 3:] == SENTINEL).all()
    m = run("TCMPS", np.bool_, valid=(2, 3), src=a, scalar=2.0, cmpMode=CmpMode.EQ)
    assert not m[:2, :3].any() and m[2:].all() and m[:, 3:].all()   # outside keeps SENTINEL (True)
    sel = run("TSELS", np.float32, valid=(2, 3), mask=np.zeros((4, 8), bool), src=a, scalar=5.0)
    assert (sel[:2, :3] == 5).all() and (sel[2:] == SENTINEL).all() and (sel[:, 3:] == SENTINEL).all()


@pytest.mark.parametrize("name,operands", [
    ("TADDS", {"src": "small", "scalar": 1.0}),
    ("TDIVS", {"src": "small", "scalar": 1.0, "reverse": True}),
    ("TCMPS", {"src": "small", "scalar": 1.0, "cmpMode": CmpMode.LT}),
    ("TADDSC", {"src0": "full", "scalar": 1.0, "src1": "small"}),
    ("TSELS", {"mask": "small_mask", "src": "full", "scalar": 1.0}),
    ("TSELS", {"mask": "full_mask", "src": "small", "scalar": 1.0}),
])
def test_reading_outside_source_valid_region_faults(name: str, operands: dict) -> None:
    tiles = {"small": Tile.of(np.zeros((4, 8), np.float32), (2, 8)),
             "full": Tile.of(np.zeros((4, 8), np.float32)),
             "small_mask": Tile.of(np.zeros((4, 8), np.bool_), (4, 3)),
             "full_mask": Tile.of(np.zeros((4, 8), np.bool_))}
    args = {k: tiles[v] if isinstance(v, str) else v for k, v in operands.items()}
    out_dtype = np.bool_ if name == "TCMPS" else np.float32
    with pytest.raises(RuntimeFault) as err:
        isa.get(name).execute(dst=Tile.of(np.zeros((4, 8), out_dtype)), **args)
    assert err.value.code == "RUNTIME_INVALID_READ"


# ----------------------------------------------------------------------------- PrecisionType (issue 14)

@pytest.mark.parametrize("name", ["TDIVS", "TREMS", "TFMODS"])
def test_precision_attribute_on_scalar_division_and_remainders(name: str) -> None:
    from openpto.isa.attrs import Precision
    instr = isa.get(name)
    a = instr.attr("PrecisionType")
    assert a.default is Precision.DEFAULT and set(a.type) == set(Precision)
    assert {x.name for x in isa.get("TADDS").attrs} == set()
    want = {"TDIVS": [np.float32(7) / np.float32(3), np.float32(-7) / np.float32(3)],
            "TREMS": [1.0, 2.0], "TFMODS": [1.0, -1.0]}[name]
    for p in Precision:
        dst = Tile.empty(parse_type("!pto.tile<1x2xf32>"))
        instr.execute(dst=dst, src=Tile.of(np.array([[7.0, -7.0]], np.float32)), scalar=3.0, PrecisionType=p)
        assert dst.data[0].tolist() == [float(w) for w in want]


def test_tdivs_reverse_with_high_precision() -> None:
    from openpto.isa.attrs import Precision
    dst = Tile.empty(parse_type("!pto.tile<1x3xf32>"))
    isa.get("TDIVS").execute(dst=dst, src=Tile.of(np.array([[3.0, -0.0, 0.5]], np.float32)), scalar=1.0,
                             reverse=True, PrecisionType=Precision.HIGH_PRECISION)
    assert dst.data[0].tolist() == [float(np.float32(1) / np.float32(3)), -math.inf, 2.0]


def test_scratch_tmp_on_trems_and_txors_only() -> None:
    """The public TREMS and TXORS end with a scratch tile: an optional last operand, never touched."""
    for name in NAMES:
        ops = [o.name for o in isa.get(name).operands]
        assert ("tmp" in ops) == (name in ("TREMS", "TXORS")), name
    for name, d, x, s, want in (("TREMS", np.float32, [-7.0, 7.0], 3.0, [2.0, 1.0]),
                                ("TXORS", np.int16, [0x0FF0, -1], 0x00FF, [0x0F0F, -256])):
        tmp = Tile.of(np.full((1, 2), 5, dtype=d))
        dst = Tile.of(np.zeros((1, 2), dtype=d))
        isa.get(name).execute(dst=dst, src=Tile.of(np.array([x], dtype=d)), scalar=s, tmp=tmp)
        assert dst.data[0].tolist() == want and (tmp.data == 5).all()
