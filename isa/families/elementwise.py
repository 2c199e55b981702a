"""Elementwise tile-tile instructions: dst[i, j] = f(src0[i, j], src1[i, j], ...)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import compute as C
from .. import constraints as K
from .. import dtypes as dt
from ..attrs import CmpMode, Precision
from ..registry import declare
from ..spec import (Attr, Domain, Example, Family, Instruction, MINMAX, Numerics, ROUNDED, EXACT, same, tuples)
from ..types import Pipe
from ..values import Tile
from ._helpers import same_types, tile_in, tile_out

A2_ARITH = (dt.I32, dt.I16, dt.F16, dt.F32)
A5_ARITH = (dt.I32, dt.U32, dt.F32, dt.I16, dt.U16, dt.F16, dt.BF16, dt.U8, dt.I8)
A5_MINMAX = (dt.U32, dt.I32, dt.U16, dt.I16, dt.U8, dt.I8, dt.F32, dt.F16)

#: The public ``PrecisionType`` template argument of the division, root, exp/log and remainder
#: templates; shared by the tile-scalar and expand families (decisions.md: "Precision modes").
PRECISION = Attr("PrecisionType", Precision, Precision.DEFAULT,
                 "the public algorithm choice (DEFAULT: faster; HIGH_PRECISION: A5's compensated "
                 "algorithm, ignored by A2/A3); openpto holds both values to this instruction's "
                 "numerics contract, so the result does not depend on it")
#: The public C++ scratch tile (``TileDataTmp &tmp``) some signatures end with (decision 29).
TMP_DOC = "scratch tile of the public ISA; accepted and never read or written"
TMP_NOTE = (" The optional trailing tmp operand is the public C++ scratch tile: accepted and never read "
            "or written (decisions.md: \"Sources of TQUANT and scratch operands\").")
PRECISION_DOC = (" PrecisionType (DEFAULT or HIGH_PRECISION, default DEFAULT) is the public algorithm "
                 "choice; both values meet the numerics contract below, so it never changes a "
                 "specified result (decisions.md: \"Precision modes\").")


def _elementwise(mnemonic: str, summary: str, fn: Callable[..., np.ndarray], inputs: tuple[str, ...],
                 types_all: tuple[dt.DType, ...], doc: str, *, numerics: Numerics = ROUNDED,
                 a2: tuple[dt.DType, ...] | None = None, a5: tuple[dt.DType, ...] | None = None,
                 special: str = "", profiles: tuple[str, ...] | None = None,
                 precision: bool = False, tmp: bool = False) -> Instruction:
    """``precision``: the instruction takes the public PrecisionType attribute (``PRECISION``);
    ``tmp``: its public signature ends with a scratch tile, declared as an optional operand."""
    names = ("dst",) + inputs
    spelling = "!pto.tile<16x16xf32>" if dt.F32 in types_all else "!pto.tile<16x16xi32>"

    def semantics(dst: Tile, **srcs: Tile) -> None:
        srcs.pop(PRECISION.name, None)           # accepted; the contract does not depend on it
        srcs.pop("tmp", None)                    # accepted; never read or written
        C.apply_elementwise(dst, [srcs[n] for n in inputs], fn)

    narrowed = {}
    if a2 is not None:
        narrowed["a2"] = narrowed["a3"] = same(names, a2)
    if a5 is not None:
        narrowed["a5"] = same(names, a5)
    return declare(Instruction(
        mnemonic=mnemonic, family=Family.ELEMENTWISE, summary=summary,
        operands=(tile_out(),) + tuple(tile_in(n, f"source {i}") for i, n in enumerate(inputs))
        + ((tile_in("tmp", TMP_DOC, optional=True),) if tmp else ()),
        semantics=semantics, dtypes=same(names, types_all), numerics=numerics, domain=Domain.DST,
        pipe=Pipe.V, doc=doc + (TMP_NOTE if tmp else "") + (PRECISION_DOC if precision else ""),
        attrs=(PRECISION,) if precision else (), example=same_types(names + (("tmp",) if tmp else ()), spelling),
        more_examples=(same_types(names, spelling, attrs={PRECISION.name: Precision.HIGH_PRECISION}),)
        if precision else (),
        constraints=(K.covers(inputs),),
        profile_dtypes=narrowed, special_values=special, profiles=profiles))


def _float_or_int(float_fn: Callable[..., np.ndarray], int_fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    def fn(*args: np.ndarray) -> np.ndarray:
        return float_fn(*args) if args[0].dtype.kind == "f" else int_fn(*args)
    return fn


BIN = ("src0", "src1")
UN = ("src",)

_elementwise("TADD", "add", np.add, BIN, dt.NUMERIC,
             "dst[i, j] = src0[i, j] + src1[i, j].", a2=A2_ARITH, a5=A5_ARITH,
             special="IEEE: inf + -inf = NaN; integers wrap.")
_elementwise("TSUB", "subtract", np.subtract, BIN, dt.NUMERIC,
             "dst[i, j] = src0[i, j] - src1[i, j].", a2=A2_ARITH, a5=A5_ARITH,
             special="IEEE: inf - inf = NaN; integers wrap.")
_elementwise("TMUL", "multiply", np.multiply, BIN, dt.NUMERIC,
             "dst[i, j] = src0[i, j] * src1[i, j].", a2=A2_ARITH,
             a5=(dt.I32, dt.U32, dt.F32, dt.I16, dt.U16, dt.F16, dt.BF16),
             special="IEEE: 0 * inf = NaN; integers keep the low bits of the product.")
_elementwise("TDIV", "divide", _float_or_int(np.divide, C.int_div), BIN, dt.NUMERIC,
             "Divides src0 by src1 element by element. Floats are IEEE division; integers "
             "truncate toward zero.", a2=(dt.F16, dt.F32),
             a5=(dt.I32, dt.U32, dt.F32, dt.I16, dt.U16, dt.F16),
             special="Floats: x/0 = ±inf, 0/0 = NaN. Integers: x/0 = -1 (all bits set), "
                     "MIN/-1 = MIN (wraps).", precision=True)
_elementwise("TMIN", "minimum", C.ieee_min, BIN, dt.NUMERIC,
             "dst[i, j] = min(src0[i, j], src1[i, j]) (IEEE 754-2019 `minimum`).", numerics=MINMAX,
             a2=A2_ARITH, a5=A5_MINMAX,
             special="NaN in either operand gives NaN; min(-0, +0) = -0.")
_elementwise("TMAX", "maximum", C.ieee_max, BIN, dt.NUMERIC,
             "dst[i, j] = max(src0[i, j], src1[i, j]) (IEEE 754-2019 `maximum`).", numerics=MINMAX,
             a2=A2_ARITH, a5=A5_MINMAX,
             special="NaN in either operand gives NaN; max(-0, +0) = +0.")

_A2_BITWISE = (dt.I8, dt.U8, dt.I16, dt.U16)
_elementwise("TAND", "bitwise and", np.bitwise_and, BIN, dt.INTS_32,
             "dst[i, j] = src0[i, j] & src1[i, j] (bitwise AND).", numerics=EXACT, a2=_A2_BITWISE, a5=dt.INTS_32)
_elementwise("TOR", "bitwise or", np.bitwise_or, BIN, dt.INTS_32,
             "dst[i, j] = src0[i, j] | src1[i, j] (bitwise OR).", numerics=EXACT, a2=_A2_BITWISE, a5=dt.INTS_32)
_elementwise("TXOR", "bitwise xor", np.bitwise_xor, BIN, dt.INTS_32,
             "dst[i, j] = src0[i, j] ^ src1[i, j] (bitwise XOR).", numerics=EXACT, a2=_A2_BITWISE, a5=dt.INTS_32, tmp=True)
_elementwise("TNOT", "bitwise not", np.invert, UN, dt.INTS_32,
             "dst[i, j] = ~src[i, j] (bitwise complement).", numerics=EXACT, a2=(dt.I16, dt.U16),
             a5=dt.INTS_32)
_elementwise("TSHL", "shift left", C.shift_left, BIN, dt.INTS_32,
             "Shifts src0 left by the per-element count in src1.", numerics=EXACT,
             a2=dt.INTS_32, a5=dt.INTS_32,
             special="The count is read as unsigned; a count >= the bit width gives 0.")
_elementwise("TSHR", "shift right", C.shift_right, BIN, dt.INTS_32,
             "Shifts src0 right by the per-element count in src1: arithmetic for signed types, "
             "logical for unsigned.", numerics=EXACT, a2=dt.INTS_32, a5=dt.INTS_32,
             special="The count is read as unsigned; a count >= the bit width gives 0 "
                     "(unsigned, or non-negative signed) or -1 (negative signed).")


def _neg(a: np.ndarray) -> np.ndarray:
    return np.negative(a)


_elementwise("TABS", "absolute value", np.abs, UN, dt.NUMERIC_SIGNED,
             "dst[i, j] = |src[i, j]|.", numerics=EXACT, a2=(dt.F32, dt.F16), a5=(dt.F32, dt.F16),
             special="abs(-0) = +0; abs(NaN) = NaN; abs(MIN) = MIN for integers (wraps).")
_elementwise("TNEG", "negate", _neg, UN, dt.NUMERIC_SIGNED,
             "dst[i, j] = -src[i, j] (sign flip for floats, wrapping for integers).", numerics=EXACT, a2=(dt.F32, dt.F16, dt.I32, dt.I16),
             a5=(dt.F32, dt.F16, dt.I32, dt.I16),
             special="neg(+0) = -0; neg(MIN) = MIN for integers (wraps).")

_TRANSC = Numerics("ulp", 2.0)
_elementwise("TEXP", "exponential", C.via_f64(np.exp), UN, dt.FLOATS,
             "dst[i, j] = e ** src[i, j], the natural exponential.", numerics=_TRANSC, a2=(dt.F32, dt.F16),
             a5=(dt.F32, dt.F16), special="exp(-inf) = +0, exp(+inf) = +inf, exp(NaN) = NaN; "
                                          "overflow gives +inf, underflow gives 0 or a denormal.", precision=True)
_elementwise("TLOG", "natural logarithm", C.via_f64(np.log), UN, dt.FLOATS,
             "dst[i, j] = ln(src[i, j]), the natural logarithm.", numerics=_TRANSC, a2=(dt.F32, dt.F16), a5=(dt.F32, dt.F16),
             special="log(±0) = -inf, log(x<0) = NaN, log(+inf) = +inf.", precision=True)
_elementwise("TSQRT", "square root", np.sqrt, UN, dt.FLOATS,
             "Square root (IEEE, correctly rounded).", a2=(dt.F32, dt.F16), a5=(dt.F32, dt.F16),
             special="sqrt(-0) = -0, sqrt(x<0) = NaN, sqrt(+inf) = +inf.", precision=True)
_elementwise("TRSQRT", "reciprocal square root", C.via_f64(lambda a: 1.0 / np.sqrt(a)), UN,
             dt.FLOATS, "dst[i, j] = 1 / sqrt(src[i, j]), the reciprocal square root.", numerics=_TRANSC,
             a2=(dt.F32, dt.F16), a5=(dt.F32, dt.F16),
             special="rsqrt(+0) = +inf, rsqrt(-0) = -inf, rsqrt(x<0) = NaN, rsqrt(+inf) = +0.", precision=True, tmp=True)
def _int_recip(a: np.ndarray) -> np.ndarray:
    return C.int_div(np.ones_like(a), a)


# The public TRECIP is TDIVS(dst, 1, src) (pto_instr.hpp), so it takes TDIVS's types per profile
# (a2/a3 TDivS.hpp: i32 i16 f16 f32; a5 TDivS.hpp: (u)int8/16/32, f16, f32).
_elementwise("TRECIP", "reciprocal", _float_or_int(np.reciprocal, _int_recip), UN, dt.NUMERIC,
             "Reciprocal 1/x: the public TRECIP is TDIVS with the scalar 1 first, and openpto gives it "
             "exactly that meaning. Floats: IEEE division, correctly rounded. Integers: 1 / x truncated "
             "toward zero as TDIVS divides, so 1/1 = 1, 1/-1 = -1, 1/x = 0 for |x| > 1 and 1/0 = -1 (all "
             "bits set: the maximum of an unsigned type).",
             a2=(dt.I32, dt.I16, dt.F16, dt.F32),
             a5=(dt.U8, dt.I8, dt.U16, dt.I16, dt.U32, dt.I32, dt.F16, dt.F32),
             special="recip(±0) = ±inf, recip(±inf) = ±0; integers: recip(0) = -1 (all bits set).",
             precision=True)


def _relu(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.where(a > 0, a, np.where(np.isnan(a), a, np.zeros_like(a)))
    return np.maximum(a, 0)


_elementwise("TRELU", "rectified linear unit", _relu, UN, (dt.F32, dt.F16, dt.BF16, dt.I32, dt.I16, dt.I8),
             "dst[i, j] = max(src[i, j], 0): rectified linear unit.", numerics=EXACT, a2=(dt.F16, dt.F32, dt.I32), a5=(dt.F16, dt.F32, dt.I32),
             special="relu(NaN) = NaN; relu(-0) = +0.")
_elementwise("TPRELU", "parametric ReLU", lambda a, s: np.where(a > 0, a, a * s), BIN, dt.FLOATS,
             "x if x > 0 else x * slope, with a per-element slope tile src1.",
             a2=(dt.F16, dt.F32), a5=(dt.F16, dt.F32),
             special="NaN input: NaN * slope = NaN; -0 gives -0 * slope.", tmp=True)


def _rem(floor: bool) -> Callable[..., np.ndarray]:
    def fn(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind == "f":
            return np.remainder(a, b) if floor else np.fmod(a, b)
        return C.int_rem(a, b, floor)
    return fn


_elementwise("TREM", "remainder (floored)", _rem(True), BIN, dt.NUMERIC_SIGNED,
             "Floored remainder a - floor(a/b)*b: the result has the sign of the divisor "
             "(Python `%`, numpy `remainder`).", a2=(dt.I32, dt.F32), a5=A2_ARITH,
             special="Floats: rem(x, 0) = NaN, rem(±inf, y) = NaN, rem(x, ±inf) follows "
                     "numpy.remainder (x when signs agree, else ±inf); integers: rem(x, 0) = x.", precision=True, tmp=True)
_elementwise("TFMOD", "remainder (truncated)", _rem(False), BIN, dt.NUMERIC_SIGNED,
             "Truncated remainder a - trunc(a/b)*b: the result has the sign of the dividend "
             "(C `fmod` / `%`).", a2=(dt.F32,), a5=A2_ARITH,
             special="Floats: fmod(x, 0) = NaN, fmod(±inf, y) = NaN, fmod(x, ±inf) = x; "
                     "integers: fmod(x, 0) = x.", precision=True)
_ADDC_SPECIAL = ("IEEE at each step: inf - inf = NaN, NaN propagates; an f16/bf16 intermediate "
                 "beyond the narrow range stays finite in f32 (65504 + 65504 - 65504 = 65504 in f16); "
                 "integers wrap at each step.")
_elementwise("TADDC", "add three tiles", lambda a, b, c: (a + b) + c, ("src0", "src1", "src2"),
             dt.NUMERIC, "src0 + src1 + src2, evaluated left to right, each addition rounded "
             "to the compute type (f32); narrow floats round once at the end.",
             profiles=("cpu",), special=_ADDC_SPECIAL)
_elementwise("TSUBC", "subtract then add", lambda a, b, c: (a - b) + c, ("src0", "src1", "src2"),
             dt.NUMERIC, "src0 - src1 + src2, evaluated left to right as in TADDC.",
             profiles=("cpu",), special=_ADDC_SPECIAL)

# ----------------------------------------------------------------------------- compare / select

_CMP: dict[CmpMode, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    CmpMode.EQ: np.equal, CmpMode.NE: np.not_equal, CmpMode.LT: np.less,
    CmpMode.LE: np.less_equal, CmpMode.GT: np.greater, CmpMode.GE: np.greater_equal,
}
_CMP_DOC = ("Writes an i1 mask: 1 where the comparison holds. IEEE comparisons: every "
            "predicate with a NaN operand is false except NE, which is true; -0 == +0.")


def _tcmp(dst: Tile, src0: Tile, src1: Tile, cmpMode: CmpMode) -> None:  # noqa: N803
    C.apply_elementwise(dst, [src0, src1], _CMP[cmpMode])


declare(Instruction(
    mnemonic="TCMP", family=Family.ELEMENTWISE, summary="compare two tiles into a mask",
    operands=(tile_out("dst", "i1 mask tile"), tile_in("src0"), tile_in("src1")),
    attrs=(Attr("cmpMode", CmpMode, None, "comparison predicate"),),
    semantics=_tcmp,
    dtypes=tuples(("dst", "src0", "src1"), [(dt.I1, d, d) for d in dt.NUMERIC]),
    profile_dtypes={p: tuples(("dst", "src0", "src1"), [(dt.I1, d, d) for d in ds]) for p, ds in
                    (("a2", (dt.I32, dt.F16, dt.F32)), ("a3", (dt.I32, dt.F16, dt.F32)),
                     ("a5", dt.INTS_32 + (dt.F16, dt.F32)))},
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc="dst[i, j] = src0[i, j] <cmpMode> src1[i, j]. " + _CMP_DOC +
        " Hardware packs masks into bits; openpto masks are i1 tiles and packing is a backend's "
        "private business.",
    example=Example(
        {"dst": "!pto.tile<16x16xi1>", "src0": "!pto.tile<16x16xf32>", "src1": "!pto.tile<16x16xf32>"},
        {"cmpMode": CmpMode.GT}),
    constraints=(K.covers(("src0", "src1")),),
    special_values="NaN compares unordered (only NE is true); -0 == +0."))


def _tsel(dst: Tile, mask: Tile, src0: Tile, src1: Tile, tmp: Tile | None = None) -> None:
    r, c = dst.valid
    m = mask.read(r, c, "mask")
    dst.write(np.where(m, src0.read(r, c, "src0"), src1.read(r, c, "src1")), r, c)


_SEL_A2 = (dt.I16, dt.U16, dt.I32, dt.U32, dt.F16, dt.BF16, dt.F32)
declare(Instruction(
    mnemonic="TSEL", family=Family.ELEMENTWISE, summary="select between two tiles by a mask",
    operands=(tile_out(), tile_in("mask", "i1 mask tile"), tile_in("src0", "chosen where mask is 1"),
              tile_in("src1", "chosen where mask is 0"), tile_in("tmp", TMP_DOC, optional=True)),
    semantics=_tsel,
    dtypes=tuples(("dst", "mask", "src0", "src1"), [(d, dt.I1, d, d) for d in dt.NUMERIC]),
    profile_dtypes={p: tuples(("dst", "mask", "src0", "src1"), [(d, dt.I1, d, d) for d in ds])
                    for p, ds in (("a2", _SEL_A2), ("a3", _SEL_A2), ("a5", _SEL_A2 + (dt.I8, dt.U8)))},
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc="dst[i, j] = mask[i, j] ? src0[i, j] : src1[i, j]. Values are copied bit for bit "
        "(NaN payloads and -0 preserved)." + TMP_NOTE,
    example=Example({"dst": "!pto.tile<16x16xf32>", "mask": "!pto.tile<16x16xi1>",
                     "src0": "!pto.tile<16x16xf32>", "src1": "!pto.tile<16x16xf32>",
                     "tmp": "!pto.tile<16x16xf32>"}),
    constraints=(K.same_shape("dst", "src0", "src1"), K.covers(("mask", "src0", "src1"))),
    special_values="No arithmetic: NaN (payload included), ±inf and -0 are copied unchanged."))
