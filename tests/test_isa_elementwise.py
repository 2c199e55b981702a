"""Elementwise tile-tile instructions against hand-computed expectations (special values,
wrapping, rounding of narrow floats) and the valid-region rules every one of them follows."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import openpto.isa as isa
from openpto.isa import checks
from openpto.isa import dtypes as dt
from openpto.isa.attrs import CmpMode
from openpto.isa.spec import Domain, Role
from openpto.isa.types import Pipe, parse_type

pytestmark = pytest.mark.filterwarnings("error")

F32, F16, BF16 = dt.F32, dt.F16, dt.BF16
I8, U8, I16, U16, I32, U32 = dt.I8, dt.U8, dt.I16, dt.U16, dt.I32, dt.U32
NAN, INF = float("nan"), float("inf")
IMIN, IMAX = -2 ** 31, 2 ** 31 - 1
D16 = 2.0 ** -24        # smallest f16 denormal

MNEMONICS = ("TADD TSUB TMUL TDIV TMIN TMAX TAND TOR TXOR TNOT TSHL TSHR TABS TNEG TEXP TLOG TSQRT "
             "TRSQRT TRECIP TRELU TPRELU TREM TFMOD TADDC TSUBC TCMP TSEL").split()


def f32(x: float) -> float:
    """x rounded once to f32 (expectations for correctly rounded results)."""
    return float(np.float32(x))


def f16(x: float) -> float:
    return float(np.float16(x))


def array(values: list, d: dt.DType) -> np.ndarray:
    return np.array(values, dtype=np.float64 if d.is_float else object).astype(d.np_dtype).reshape(1, -1)


def run(mnemonic: str, d: dt.DType, inputs: tuple[list, ...], out: dt.DType | None = None,
        **attrs: object) -> np.ndarray:
    """Execute on 1xN tiles: every input of dtype ``d`` (TSEL's mask i1), dst of ``out`` or ``d``."""
    instr = isa.get(mnemonic)
    names = [o.name for o in instr.inputs if not o.optional]     # the scratch tmp is left out
    tiles = {n: isa.Tile.of(array(v, dt.I1 if n == "mask" else d)) for n, v in zip(names, inputs)}
    dst = isa.Tile.empty(tiles[names[-1]].type.with_(dtype=out or d))
    instr.execute(dst=dst, **tiles, **attrs)
    return dst.data[0]


def assert_same(got: np.ndarray, want: list, d: dt.DType) -> None:
    """Element by element: NaN matches NaN, the sign of zero counts, integers exactly."""
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if d.is_float:
            g, w = float(g), float(w)
            ok = (math.isnan(g) and math.isnan(w)) or (g == w and math.copysign(1, g) == math.copysign(1, w))
        else:
            ok = int(g) == int(w)
        assert ok, f"element {i}: got {g!r}, want {w!r} (all: {list(got)})"


# (mnemonic, dtype, inputs, expected)
CASES = [
    ("TADD", F32, ([1.5, INF, INF, NAN, -0.0, -0.0, 3e38, 1.0, 1.0],
                   [2.25, -INF, 1.0, 1.0, -0.0, 0.0, 3e38, 2.0 ** -24, 3 * 2.0 ** -24]),
     [3.75, NAN, INF, NAN, -0.0, 0.0, INF, 1.0, 1 + 2.0 ** -22]),
    ("TADD", F16, ([1.0, 1 + 2.0 ** -10, 65504.0, D16, -D16], [2.0 ** -11, 2.0 ** -11, 16.0, D16, D16]),
     [1.0, 1 + 2.0 ** -9, INF, 2 * D16, 0.0]),
    ("TADD", BF16, ([1.0, 256.0, 256.0], [2.0 ** -8, 1.0, 3.0]), [1.0, 256.0, 260.0]),
    ("TADD", I32, ([IMAX, IMIN, 5], [1, -1, -7]), [IMIN, IMAX, -2]),
    ("TADD", I8, ([127, -128], [1, -1]), [-128, 127]),
    ("TADD", U8, ([255, 200], [1, 100]), [0, 44]),
    ("TSUB", F32, ([INF, 1.0, 0.0, -0.0, NAN, -INF], [INF, 1.0, 0.0, 0.0, 1.0, INF]),
     [NAN, 0.0, 0.0, -0.0, NAN, -INF]),
    ("TSUB", F16, ([65504.0, 1.0], [-65504.0, 2.0 ** -12]), [INF, 1.0]),
    ("TSUB", I16, ([-32768, 0], [1, -32768]), [32767, -32768]),
    ("TSUB", U16, ([0, 5], [1, 3]), [65535, 2]),
    ("TMUL", F32, ([0.0, -0.0, INF, -2.0, 1e20, 2.0 ** -100], [INF, 5.0, -1.0, -0.0, 1e20, 2.0 ** -100]),
     [NAN, -0.0, -INF, 0.0, INF, 0.0]),
    ("TMUL", F16, ([300.0, -(2.0 ** -14), 3.0], [300.0, 2.0 ** -10, 1 + 2.0 ** -10]),
     [INF, -D16, 3 + 4 * 2.0 ** -10]),
    ("TMUL", I16, ([300, -32768], [300, -1]), [24464, -32768]),
    ("TMUL", I32, ([65536, 46341], [65536, 46341]), [0, -2147479015]),
    ("TMUL", U32, ([2 ** 32 - 1], [2 ** 32 - 1]), [1]),
    ("TDIV", F32, ([1.0, -1.0, 0.0, 1.0, INF, 7.0, NAN, 1.0], [0.0, 0.0, 0.0, -0.0, INF, 2.0, 1.0, 3.0]),
     [INF, -INF, NAN, -INF, NAN, 3.5, NAN, f32(1 / 3)]),
    ("TDIV", F16, ([1.0, 60000.0, -0.0], [3.0, 0.5, 5.0]), [0.333251953125, INF, -0.0]),
    ("TDIV", I32, ([7, -7, 7, -7, 5, IMIN, 0], [2, 2, -2, -2, 0, -1, 0]), [3, -3, -3, 3, -1, IMIN, -1]),
    ("TDIV", U16, ([7, 65535, 9], [2, 0, 3]), [3, 65535, 3]),
    ("TDIV", I8, ([-128, 5], [-1, 0]), [-128, -1]),
    ("TMIN", F32, ([1.0, NAN, -0.0, 0.0, -INF, 1.0], [2.0, 1.0, 0.0, -0.0, 5.0, NAN]),
     [1.0, NAN, -0.0, -0.0, -INF, NAN]),
    ("TMIN", F16, ([1.0, 2.0], [NAN, -3.0]), [NAN, -3.0]),
    ("TMIN", I8, ([-128, 127], [127, -128]), [-128, -128]),
    ("TMIN", U32, ([2 ** 32 - 1, 0], [1, 5]), [1, 0]),
    ("TMAX", F32, ([1.0, NAN, -0.0, 0.0, INF, 1.0], [2.0, 1.0, 0.0, -0.0, 5.0, NAN]),
     [2.0, NAN, 0.0, 0.0, INF, NAN]),
    ("TMAX", F16, ([1.0, -0.0], [NAN, -0.0]), [NAN, -0.0]),
    ("TMAX", I8, ([-128, 127], [127, -128]), [127, 127]),
    ("TMAX", U32, ([2 ** 32 - 1, 0], [1, 5]), [2 ** 32 - 1, 5]),
    ("TAND", I8, ([-1, -128, 0x55], [0x0F, -1, 0x2A]), [15, -128, 0]),
    ("TAND", U16, ([0xFF00, 0xFFFF], [0x0FF0, 0x1234]), [0x0F00, 0x1234]),
    ("TOR", I8, ([-128, 0x0F], [1, 0x30]), [-127, 0x3F]),
    ("TOR", U16, ([0xFF00, 0], [0x00FF, 0]), [0xFFFF, 0]),
    ("TXOR", I32, ([-1, 0x12345678], [0x0F0F0F0F, 0x12345678]), [-252645136, 0]),
    ("TXOR", U8, ([0xFF, 0xAA], [0x0F, 0x55]), [0xF0, 0xFF]),
    ("TNOT", I16, ([0, -1, 5, 32767],), [-1, 0, -6, -32768]),
    ("TNOT", U8, ([0, 255, 0x0F],), [255, 0, 0xF0]),
    ("TNOT", U32, ([0],), [2 ** 32 - 1]),
    ("TSHL", I32, ([1, 1, 1, 3, -1], [31, 32, -1, 2, 4]), [IMIN, 0, 0, 12, -16]),
    ("TSHL", U8, ([0x81, 1, 1, 1], [1, 7, 8, 255]), [2, 128, 0, 0]),
    ("TSHL", I16, ([1, 1], [15, 16]), [-32768, 0]),
    ("TSHR", I32, ([-8, -8, 8, IMIN, 7, -1], [1, 40, 40, 31, -1, 0]), [-4, -1, 0, -1, 0, -1]),
    ("TSHR", U32, ([2 ** 31, 2 ** 32 - 1, 5], [31, 32, 1]), [1, 0, 2]),
    ("TSHR", I8, ([-1, -128, 64, 64], [-1, 7, 6, 8]), [-1, -1, 1, 0]),
    ("TSHR", U8, ([255, 255], [8, 7]), [0, 1]),
    ("TABS", F32, ([-0.0, -INF, NAN, -1.5, -(2.0 ** -149)],), [0.0, INF, NAN, 1.5, 2.0 ** -149]),
    ("TABS", F16, ([-65504.0, -D16],), [65504.0, D16]),
    ("TABS", I32, ([IMIN, -5, 7],), [IMIN, 5, 7]),
    ("TABS", I8, ([-128, -1],), [-128, 1]),
    ("TNEG", F32, ([0.0, -0.0, INF, NAN, 1.5],), [-0.0, 0.0, -INF, NAN, -1.5]),
    ("TNEG", F16, ([65504.0, D16],), [-65504.0, -D16]),
    ("TNEG", I32, ([IMIN, 5],), [IMIN, -5]),
    ("TNEG", I16, ([-32768, 0],), [-32768, 0]),
    ("TEXP", F32, ([-INF, INF, NAN, 0.0, -0.0, 89.0, -100.0, 1.0, -104.0],),
     [0.0, INF, NAN, 1.0, 1.0, INF, f32(math.exp(-100.0)), f32(math.e), 0.0]),
    ("TEXP", F16, ([12.0, -20.0, 1.0, -16.0],), [INF, 0.0, f16(math.e), f16(math.exp(-16.0))]),
    ("TEXP", BF16, ([1.0, 88.0],), [float(np.array(math.e).astype(ml_dtypes.bfloat16)),
                                    float(np.array(math.exp(88.0)).astype(ml_dtypes.bfloat16))]),
    ("TLOG", F32, ([0.0, -0.0, -1.0, INF, 1.0, NAN, 2.0 ** -149, -INF],),
     [-INF, -INF, NAN, INF, 0.0, NAN, f32(-149 * math.log(2)), NAN]),
    ("TLOG", F16, ([65504.0, D16],), [f16(math.log(65504.0)), f16(-24 * math.log(2))]),
    ("TSQRT", F32, ([-0.0, -1.0, INF, 2.0, 0.0, 2.0 ** -148, -INF],),
     [-0.0, NAN, INF, f32(math.sqrt(2)), 0.0, 2.0 ** -74, NAN]),
    ("TSQRT", F16, ([2.0, D16],), [f16(math.sqrt(2)), 2.0 ** -12]),
    ("TRSQRT", F32, ([0.0, -0.0, -1.0, INF, 4.0, NAN, 2.0],), [INF, -INF, NAN, 0.0, 0.5, NAN, f32(1 / math.sqrt(2))]),
    ("TRSQRT", F16, ([D16, 0.25],), [4096.0, 2.0]),
    ("TRECIP", F32, ([0.0, -0.0, INF, -INF, 4.0, 3.0, 2.0 ** -149],), [INF, -INF, 0.0, -0.0, 0.25, f32(1 / 3), INF]),
    ("TRECIP", F16, ([D16, 3.0],), [INF, f16(1 / 3)]),
    ("TRELU", F32, ([NAN, -0.0, -3.0, 2.0, -INF, INF, 2.0 ** -149],), [NAN, 0.0, 0.0, 2.0, 0.0, INF, 2.0 ** -149]),
    ("TRELU", F16, ([-D16, 65504.0],), [0.0, 65504.0]),
    ("TRELU", BF16, ([-1.0, 1.5],), [0.0, 1.5]),
    ("TRELU", I32, ([-5, 7, IMIN],), [0, 7, 0]),
    ("TRELU", I8, ([-128, 127],), [0, 127]),
    ("TPRELU", F32, ([-2.0, 3.0, NAN, -0.0, -INF, 0.0, -1.0, INF, 0.0], [0.5, 0.5, 0.5, 0.5, 0.0, 2.0, NAN, -1.0, INF]),
     [-1.0, 3.0, NAN, -0.0, NAN, 0.0, NAN, INF, NAN]),
    ("TPRELU", F16, ([-65504.0, -1.0], [2.0, 0.25]), [-INF, -0.25]),
    ("TREM", F32, ([5.0, -5.0, 5.0, 5.5, 1.0, INF, 1.0, -1.0, -0.0, 0.0], [3.0, 3.0, -3.0, 2.0, 0.0, 2.0, INF, INF, 3.0, -3.0]),
     [2.0, 1.0, -1.0, 1.5, NAN, NAN, 1.0, INF, 0.0, -0.0]),
    ("TREM", F16, ([7.5, -7.5], [2.0, 2.0]), [1.5, 0.5]),
    ("TREM", I32, ([-7, 7, 7, -7, IMIN], [2, -2, 0, -2, -1]), [1, -1, 7, -1, 0]),
    ("TREM", I16, ([-7, -32768], [3, 0]), [2, -32768]),
    ("TFMOD", F32, ([5.0, -5.0, 5.0, 5.5, 1.0, INF, 1.0, -1.0, -0.0], [3.0, 3.0, -3.0, 2.0, 0.0, 2.0, INF, INF, 3.0]),
     [2.0, -2.0, 2.0, 1.5, NAN, NAN, 1.0, -1.0, -0.0]),
    ("TFMOD", F16, ([7.5, -7.5], [2.0, 2.0]), [1.5, -1.5]),
    ("TFMOD", I32, ([-7, 7, 7, IMIN], [2, -2, 0, -1]), [-1, 1, 7, 0]),
    ("TFMOD", I16, ([-7], [3]), [-1]),
    ("TADDC", F32, ([1.0, INF, 1.0], [1e8, -INF, 2.0], [-1e8, 1.0, 3.0]), [0.0, NAN, 6.0]),
    ("TADDC", F16, ([65504.0, 1.0], [65504.0, 2.0 ** -11], [-65504.0, 2.0 ** -11]), [65504.0, 1 + 2.0 ** -10]),
    ("TADDC", I8, ([100, 127], [100, 1], [-100, 0]), [100, -128]),
    ("TADDC", I32, ([IMAX], [1], [1]), [IMIN + 1]),
    ("TSUBC", F32, ([1.0, INF], [-1e8, INF], [-1e8, 1.0]), [0.0, NAN]),
    ("TSUBC", F16, ([-65504.0], [65504.0], [65504.0]), [-65504.0]),
    ("TSUBC", I32, ([IMIN, 0], [1, IMIN], [1, 0]), [IMIN, IMIN]),
    ("TSUBC", U8, ([0], [1], [0]), [255]),
]


@pytest.mark.parametrize("mnemonic,d,inputs,want", CASES,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_values(mnemonic: str, d: dt.DType, inputs: tuple[list, ...], want: list) -> None:
    assert_same(run(mnemonic, d, inputs), want, d)


def test_every_value_instruction_has_two_dtypes() -> None:
    seen: dict[str, set] = {}
    for m, d, _, _ in CASES:
        seen.setdefault(m, set()).add(d)
    for m in MNEMONICS:
        if m in ("TCMP", "TSEL"):
            continue
        accepted = {t[0] for t in isa.get(m).dtypes.tuples}
        assert seen[m] <= accepted, m
        assert len(seen[m]) >= min(2, len(accepted)), m


_CMP_F = ([1.0, NAN, -0.0, 2.0, 1.0, NAN, INF], [1.0, NAN, 0.0, 1.0, 2.0, 1.0, INF])
_CMP_I = ([IMIN, 5, 7], [IMAX, 5, -7])
CMP_CASES = {
    CmpMode.EQ: ([1, 0, 1, 0, 0, 0, 1], [0, 1, 0]),
    CmpMode.NE: ([0, 1, 0, 1, 1, 1, 0], [1, 0, 1]),
    CmpMode.LT: ([0, 0, 0, 0, 1, 0, 0], [1, 0, 0]),
    CmpMode.LE: ([1, 0, 1, 0, 1, 0, 1], [1, 1, 0]),
    CmpMode.GT: ([0, 0, 0, 1, 0, 0, 0], [0, 0, 1]),
    CmpMode.GE: ([1, 0, 1, 1, 0, 0, 1], [0, 1, 1]),
}


@pytest.mark.parametrize("mode", list(CmpMode), ids=lambda m: m.name)
def test_tcmp(mode: CmpMode) -> None:
    want_f, want_i = CMP_CASES[mode]
    for d in (F32, F16):
        out = run("TCMP", d, _CMP_F, out=dt.I1, cmpMode=mode)
        assert out.dtype == np.bool_ and list(out) == [bool(w) for w in want_f], d
    assert list(run("TCMP", I32, _CMP_I, out=dt.I1, cmpMode=mode)) == [bool(w) for w in want_i]


def test_tcmp_unsigned_compares_as_unsigned() -> None:
    assert list(run("TCMP", U8, ([255, 0], [0, 0]), out=dt.I1, cmpMode=CmpMode.GT)) == [True, False]
    assert list(run("TCMP", U32, ([2 ** 31], [1]), out=dt.I1, cmpMode=CmpMode.LT)) == [False]


def test_tsel_copies_bits() -> None:
    payload = np.array([0x7FC01234, 0x80000000, 0x3F800000, 0x40000000], dtype=np.uint32).view(np.float32)
    other = np.array([5.0, 6.0, 7.0, -0.0], dtype=np.float32)
    mask = isa.Tile.of(np.array([[True, False, True, False]]))
    dst = isa.Tile.empty(isa.Tile.of(other.reshape(1, -1)).type)
    isa.get("TSEL").execute(dst=dst, mask=mask, src0=isa.Tile.of(payload.reshape(1, -1)),
                            src1=isa.Tile.of(other.reshape(1, -1)))
    assert list(dst.data[0].view(np.uint32)) == [0x7FC01234, 0x40C00000, 0x3F800000, 0x80000000]
    assert_same(run("TSEL", I16, ([0, 1, 1], [1, -32768, 2], [-1, 3, 4])), [-1, -32768, 2], I16)
    half = run("TSEL", F16, ([1, 0], [NAN, 1.0], [2.0, -0.0]))
    assert math.isnan(half[0]) and math.copysign(1, float(half[1])) < 0


# ------------------------------------------------------------------ declarations and regions

def test_family_declarations() -> None:
    fam = {i.mnemonic for i in isa.by_family()[isa.Family.ELEMENTWISE]}
    assert set(MNEMONICS) <= fam
    for m in MNEMONICS:
        instr = isa.get(m)
        assert instr.domain is Domain.DST and instr.pipe_for({}) is Pipe.V, m
        assert instr.special_values or m in ("TAND", "TOR", "TXOR", "TNOT"), m


PUBLIC_A2 = {   # the public A2/A3 dtype tables (reference notes, section 1.2; TREM as the current a2a3/TRem.hpp)
    "TADD": {I32, I16, F16, F32}, "TDIV": {F16, F32}, "TNOT": {I16, U16},
    "TEXP": {F32, F16}, "TRELU": {F16, F32, I32}, "TREM": {I32, F32},
}


@pytest.mark.parametrize("m", sorted(PUBLIC_A2))
def test_a2_dtypes_follow_the_public_table(m: str) -> None:
    rule = isa.get(m).dtype_rule("a2")
    assert {t[0] for t in rule.tuples} == PUBLIC_A2[m]
    assert rule.tuples == isa.get(m).dtype_rule("a3").tuples


def test_three_source_ops_are_cpu_only() -> None:
    for m in ("TADDC", "TSUBC"):
        assert isa.get(m).supported_on("cpu") and not isa.get(m).supported_on("a2")
        assert not isa.get(m).supported_on("a5")


def _combos(instr: isa.Instruction) -> list[tuple]:
    """A float and an integer dtype tuple where the instruction has them."""
    ts = instr.dtypes.sorted_tuples()
    floats = [t for t in ts if any(d.is_float for d in t)]
    ints = [t for t in ts if not any(d.is_float for d in t)]
    return [c[0] for c in (floats, ints) if c]


def _tiles(instr: isa.Instruction, combo: tuple, shape: tuple[int, int], rng: np.random.Generator,
           valid: dict[str, tuple[int, int]]) -> dict[str, isa.Tile]:
    out = {}
    for name, d in zip(instr.dtypes.operands, combo):
        if d.kind == "bool":
            data = rng.random(shape) < 0.5
        elif d.is_float:
            data = rng.uniform(0.5, 4.0, shape)
        else:
            data = rng.integers(1, 5, shape)
        out[name] = isa.Tile.of(data.astype(d.np_dtype), valid=valid.get(name))
    return out


def _attrs(m: str) -> dict:
    return {"cmpMode": CmpMode.LT} if m == "TCMP" else {}


@pytest.mark.parametrize("m", MNEMONICS)
def test_outside_the_destination_valid_region_is_untouched(m: str) -> None:
    instr = isa.get(m)
    rng = np.random.default_rng(1)
    for combo in _combos(instr):
        tiles = _tiles(instr, combo, (4, 8), rng, {"dst": (3, 5)})
        sentinel = np.full((4, 8), 7, dtype=tiles["dst"].data.dtype) if combo[0].kind != "bool" \
            else np.ones((4, 8), dtype=bool)
        tiles["dst"].data[...] = sentinel
        instr.execute(**tiles, **_attrs(m))
        outside = np.ones((4, 8), dtype=bool)
        outside[:3, :5] = False
        np.testing.assert_array_equal(tiles["dst"].data[outside], sentinel[outside])
        crop = {n: isa.Tile.of(t.data[:3, :5].copy()) for n, t in tiles.items()}
        crop["dst"] = isa.Tile.empty(crop["dst"].type)
        instr.execute(**crop, **_attrs(m))
        np.testing.assert_array_equal(tiles["dst"].data[:3, :5], crop["dst"].data)


@pytest.mark.parametrize("m", MNEMONICS)
def test_a_source_smaller_than_the_domain_is_an_invalid_read(m: str) -> None:
    instr = isa.get(m)
    rng = np.random.default_rng(2)
    for src in (o.name for o in instr.operands if o.role is Role.IN and o.name != "tmp"):   # tmp: never read
        for combo in _combos(instr):
            for small in ((2, 8), (4, 6)):
                tiles = _tiles(instr, combo, (4, 8), rng, {src: small})
                before = tiles["dst"].data.copy()
                with pytest.raises(isa.RuntimeFault) as e:
                    instr.execute(**tiles, **_attrs(m))
                assert e.value.code == "RUNTIME_INVALID_READ", (m, src)
                np.testing.assert_array_equal(tiles["dst"].data, before)


@pytest.mark.parametrize("m", MNEMONICS)
def test_static_valid_region_rules(m: str) -> None:
    instr = isa.get(m)
    combo = _combos(instr)[0]
    spell = lambda d, extra="": parse_type(f"!pto.tile<16x16x{d.name}{extra}>")  # noqa: E731
    names = instr.dtypes.operands
    ok = {n: spell(d) for n, d in zip(names, combo)}
    assert not checks.check_structure(instr, ok, _attrs(m))
    for src, d in zip(names[1:], combo[1:]):
        small = {**ok, src: spell(d, ", valid=8x16")}
        assert [e.code for e in checks.check_structure(instr, small, _attrs(m))] == ["STRUCT_VALID_REGION"]
        dynamic = {**ok, src: spell(d, ", valid=?x?")}
        assert not checks.check_structure(instr, dynamic, _attrs(m))
        # another static shape with a covering valid region: accepted as the public kernels do,
        # except TSEL's data operands, one tile type in the public signature (decision 'Shape
        # rules of the public kernels'); its mask has a shape of its own
        other = {**ok, src: parse_type(f"!pto.tile<16x32x{d.name}>")}
        want = ["STRUCT_SHAPE"] if m == "TSEL" and src != "mask" else []
        assert [e.code for e in checks.check_structure(instr, other, _attrs(m))] == want


# ----------------------------------------------------------------------------- PrecisionType (issue 14)

PRECISE = ("TDIV", "TEXP", "TLOG", "TSQRT", "TRSQRT", "TRECIP", "TREM", "TFMOD")


def test_precision_attribute_exactly_where_the_public_templates_have_it() -> None:
    from openpto.isa.attrs import Precision
    for name in MNEMONICS:
        names = {a.name for a in isa.get(name).attrs}
        assert ("PrecisionType" in names) == (name in PRECISE), name
    for name in PRECISE:
        a = isa.get(name).attr("PrecisionType")
        assert a.type is Precision and a.default is Precision.DEFAULT and not a.required
        assert "HIGH_PRECISION" in isa.get(name).doc


@pytest.mark.parametrize("mode", ["DEFAULT", "HIGH_PRECISION"])
@pytest.mark.parametrize("mnemonic, inputs, want", [
    ("TDIV", ([1.0, -2.0, 1.0, 0.0], [3.0, 3.0, 0.0, 0.0]), [f32(1 / 3), f32(-2 / 3), INF, NAN]),
    ("TRECIP", ([3.0, -0.0, 10.0],), [f32(1 / 3), -INF, f32(0.1)]),
    ("TSQRT", ([2.0, -0.0, -1.0],), [f32(math.sqrt(2)), -0.0, NAN]),
    ("TRSQRT", ([4.0, 0.0, INF],), [0.5, INF, 0.0]),
    ("TEXP", ([0.0, 1.0, -INF],), [1.0, f32(math.e), 0.0]),
    ("TLOG", ([1.0, f32(math.e), 0.0],), [0.0, f32(math.log(f32(math.e))), -INF]),
    ("TREM", ([7.0, -7.0, 7.0], [3.0, 3.0, -3.0]), [1.0, 2.0, -2.0]),
    ("TFMOD", ([7.0, -7.0, 7.0], [3.0, 3.0, -3.0]), [1.0, -1.0, 1.0]),
])
def test_precision_modes_give_the_same_contracted_result(mnemonic: str, inputs: tuple, want: list,
                                                          mode: str) -> None:
    """Hand-computed values; both modes meet the instruction's one contract (decision
    "Precision modes"): division and roots correctly rounded, exp/log exact here."""
    from openpto.isa.attrs import Precision
    assert_same(run(mnemonic, F32, inputs, PrecisionType=Precision[mode]), want, F32)


TMP_FORMS = ("TXOR", "TPRELU", "TREM", "TRSQRT", "TSEL")


def test_scratch_tmp_exactly_where_the_public_signature_ends_with_one() -> None:
    for name in MNEMONICS:
        ops = {o.name: o for o in isa.get(name).operands}
        assert ("tmp" in ops) == (name in TMP_FORMS), name
        if "tmp" in ops:
            assert ops["tmp"].optional and ops["tmp"].role is Role.IN and "never read" in ops["tmp"].doc
            assert list(ops)[-1] == "tmp"


@pytest.mark.parametrize("mnemonic, inputs, want", [
    ("TXOR", ([0b1100, -1], [0b1010, 5]), [0b0110, -6]),
    ("TPRELU", ([2.0, -2.0], [0.5, 0.25]), [2.0, -0.5]),
    ("TREM", ([-7.0, 7.0], [3.0, -3.0]), [2.0, -2.0]),
    ("TRSQRT", ([4.0, 0.25],), [0.5, 2.0]),
])
def test_tmp_is_accepted_and_never_touched(mnemonic: str, inputs: tuple, want: list) -> None:
    d = I32 if mnemonic == "TXOR" else F32
    instr = isa.get(mnemonic)
    names = [o.name for o in instr.inputs if not o.optional]
    tiles = {n: isa.Tile.of(array(v, d)) for n, v in zip(names, inputs)}
    tmp = isa.Tile.of(np.full((1, len(want)), 9, dtype=d.np_dtype))
    dst = isa.Tile.empty(tiles[names[0]].type)
    instr.execute(dst=dst, tmp=tmp, **tiles)
    assert_same(dst.data[0], want, d)
    assert (tmp.data == 9).all()
