"""Tile-scalar instructions: dst[i, j] = f(src[i, j], scalar), plus broadcast, compare and select.

The scalar operand has the tile's dtype (its type is part of the dtype signature); a
literal value is converted to that dtype once (floats round to nearest even, overflowing
to ±inf; integers wrap) before the element-wise computation, which follows the rules of
the matching elementwise instruction (elementwise.py).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import compute as C
from .. import constraints as K
from .. import dtypes as dt
from ..attrs import CmpMode, Precision
from ..registry import declare
from ..spec import (Attr, Domain, DTypeRule, EXACT, Example, Family, Instruction, MINMAX, Numerics, ROUNDED,
                    same, tuples)
from ..types import Pipe
from ..values import Tile
from ._helpers import scalar_in, tile_in, tile_out
from .elementwise import _CMP, _CMP_DOC, PRECISION, PRECISION_DOC, TMP_DOC, TMP_NOTE, _rem

A2_ARITH = (dt.I32, dt.I16, dt.F16, dt.F32)
A5_ADD_MUL = (dt.I32, dt.I16, dt.F16, dt.F32, dt.BF16)
A5_MINMAX = (dt.U8, dt.I8, dt.U16, dt.I16, dt.U32, dt.I32, dt.F16, dt.F32, dt.BF16)
A5_DIV = (dt.U8, dt.I8, dt.U16, dt.I16, dt.U32, dt.I32, dt.F16, dt.F32)
A2_BITWISE = (dt.I16, dt.U16)
A2_SHIFT = (dt.I16, dt.U16, dt.I32, dt.U32)
HALF_FLOAT = (dt.F16, dt.F32)
CMPS_A2 = (dt.I32, dt.F16, dt.F32)   # A2/A3 compare i16/u16 as f16 bit patterns: left out

_SCALAR_RULE = (" The scalar has the tile dtype; a literal is converted to it once (floats round "
                "to nearest even and overflow to ±inf, integers wrap).")
_SRC_SCALAR = ("dst", "src", "scalar")


def _narrowed(names: tuple[str, ...], a2: tuple[dt.DType, ...] | None,
              a5: tuple[dt.DType, ...] | None) -> dict[str, DTypeRule]:
    """Per-profile dtype rules; A3 is the same silicon as A2 for legality."""
    out = {}
    if a2 is not None:
        out["a2"] = out["a3"] = same(names, a2)
    if a5 is not None:
        out["a5"] = same(names, a5)
    return out


def _example(tile: str, scalar_type: str, value: object) -> Example:
    return Example({"dst": tile, "src": tile, "scalar": scalar_type}, {}, {"scalar": value})


F32_EXAMPLE = ("!pto.tile<16x16xf32, valid=16x12>", "f32")
I16_EXAMPLE = ("!pto.tile<16x16xi16>", "i16")
I32_EXAMPLE = ("!pto.tile<16x16xi32>", "i32")


def _tile_scalar(mnemonic: str, summary: str, fn: Callable[..., np.ndarray],
                 types_all: tuple[dt.DType, ...], doc: str, example: Example, *,
                 numerics: Numerics = ROUNDED, a2: tuple[dt.DType, ...] | None = None,
                 a5: tuple[dt.DType, ...] | None = None, special: str = "",
                 precision: bool = False, tmp: bool = False) -> Instruction:
    """Declare dst[i, j] = fn(src[i, j], scalar) over dst's valid region; ``precision``: the
    instruction takes the public PrecisionType attribute, which never changes the result;
    ``tmp``: the public signature ends with a scratch tile, declared as an optional operand."""
    def semantics(dst: Tile, src: Tile, scalar: object, tmp: Tile | None = None, **_precision: object) -> None:
        C.apply_elementwise(dst, [src], fn, [scalar])

    return declare(Instruction(
        mnemonic=mnemonic, family=Family.TILE_SCALAR, summary=summary,
        operands=(tile_out(), tile_in("src", "source tile"), scalar_in())
        + ((tile_in("tmp", TMP_DOC, optional=True),) if tmp else ()),
        semantics=semantics, dtypes=same(_SRC_SCALAR, types_all), numerics=numerics,
        domain=Domain.DST, pipe=Pipe.V,
        doc=doc + _SCALAR_RULE + (TMP_NOTE if tmp else "") + (PRECISION_DOC if precision else ""),
        example=Example({**example.types, "tmp": example.types["src"]}, example.attrs, example.scalars)
        if tmp else example, attrs=(PRECISION,) if precision else (),
        more_examples=(_with_precision(example),) if precision else (),
        constraints=(K.covers(("src",)),),
        profile_dtypes=_narrowed(_SRC_SCALAR, a2, a5), special_values=special))


def _with_precision(example: Example) -> Example:
    """``example`` with PrecisionType = HIGH_PRECISION."""
    return Example(example.types, {**example.attrs, PRECISION.name: Precision.HIGH_PRECISION},
                   example.scalars)


# ----------------------------------------------------------------------------- arithmetic

_tile_scalar("TADDS", "add a scalar", np.add, dt.NUMERIC,
             "dst[i, j] = src[i, j] + scalar.", _example(*F32_EXAMPLE, 1.5),
             a2=A2_ARITH, a5=A5_ADD_MUL, special="IEEE: inf + -inf = NaN; integers wrap.")
_tile_scalar("TSUBS", "subtract a scalar", np.subtract, dt.NUMERIC,
             "dst[i, j] = src[i, j] - scalar.", _example(*F32_EXAMPLE, 1.5),
             a2=A2_ARITH, a5=A2_ARITH, special="IEEE: inf - inf = NaN; integers wrap.")
_tile_scalar("TMULS", "multiply by a scalar", np.multiply, dt.NUMERIC,
             "dst[i, j] = src[i, j] * scalar.", _example(*F32_EXAMPLE, -0.5),
             a2=A2_ARITH, a5=A5_ADD_MUL,
             special="IEEE: 0 * inf = NaN; integers keep the low bits of the product.")
_tile_scalar("TMAXS", "maximum with a scalar", C.ieee_max, dt.NUMERIC,
             "dst[i, j] = maximum(src[i, j], scalar) (IEEE 754-2019 `maximum`).",
             _example(*F32_EXAMPLE, 0.0), numerics=MINMAX, a2=A2_ARITH, a5=A5_MINMAX,
             special="NaN in src or scalar gives NaN; max(-0, +0) = +0.")
_tile_scalar("TMINS", "minimum with a scalar", C.ieee_min, dt.NUMERIC,
             "dst[i, j] = minimum(src[i, j], scalar) (IEEE 754-2019 `minimum`).",
             _example(*F32_EXAMPLE, 0.0), numerics=MINMAX, a2=A2_ARITH, a5=A5_MINMAX,
             special="NaN in src or scalar gives NaN; min(-0, +0) = -0.")
# a2/a3 TRemS.hpp: float, int32; TFmodS.hpp: float. a5 TRemS/TFModS.hpp: any 2- or 4-byte type
# (64-bit TREMS has no openpto vector dtype), of the signed set the architecture declares.
_B16_B32_SIGNED = (dt.F32, dt.F16, dt.BF16, dt.I16, dt.I32)
_tile_scalar("TREMS", "remainder by a scalar (floored)", _rem(True), dt.NUMERIC_SIGNED,
             "dst[i, j] = src[i, j] - floor(src[i, j] / scalar) * scalar: the floored remainder, "
             "with the sign of the scalar (Python `%`, numpy `remainder`), as TREM. The public CPU "
             "simulator truncates instead; A2/A3 and A5 floor.", _example(*F32_EXAMPLE, 3.0),
             a2=(dt.I32, dt.F32), a5=_B16_B32_SIGNED,
             special="Floats: rem(x, 0) = NaN, rem(±inf, s) = NaN, rem(x, ±inf) follows "
                     "numpy.remainder (x when signs agree, else ±inf); a zero result takes the "
                     "scalar's sign; integers: rem(x, 0) = x.", precision=True, tmp=True)
_tile_scalar("TFMODS", "remainder by a scalar (truncated)", _rem(False), dt.NUMERIC_SIGNED,
             "dst[i, j] = src[i, j] - trunc(src[i, j] / scalar) * scalar: the truncated remainder, "
             "with the sign of src (C `fmod` / `%`), as TFMOD.", _example(*F32_EXAMPLE, 3.0),
             a2=(dt.F32,), a5=_B16_B32_SIGNED,
             special="Floats: fmod(x, 0) = NaN, fmod(±inf, s) = NaN, fmod(x, ±inf) = x; a zero "
                     "result takes src's sign; integers: fmod(x, 0) = x.", precision=True)


def _lrelu(a: np.ndarray, slope: np.ndarray) -> np.ndarray:
    return np.where(a > 0, a, a * slope)


_tile_scalar("TLRELU", "leaky ReLU with a scalar slope", _lrelu, dt.FLOATS,
             "dst[i, j] = src[i, j] if src[i, j] > 0 else src[i, j] * scalar (the slope); the "
             "product is computed in f32 and rounded once.", _example(*F32_EXAMPLE, 0.1),
             a2=HALF_FLOAT, a5=HALF_FLOAT,
             special="NaN stays NaN; -0 gives -0 * slope; -inf gives -inf * slope (NaN when the "
                     "slope is 0).")

# ----------------------------------------------------------------------------- TDIVS (two forms)


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.divide(a, b) if a.dtype.kind == "f" else C.int_div(a, b)


def _tdivs(dst: Tile, src: Tile, scalar: object, reverse: bool, **_precision: object) -> None:
    fn = (lambda a, s: _div(np.broadcast_to(s, a.shape), a)) if reverse else _div
    C.apply_elementwise(dst, [src], fn, [scalar])


declare(Instruction(
    mnemonic="TDIVS", family=Family.TILE_SCALAR, summary="divide by a scalar, or a scalar by a tile",
    operands=(tile_out(), tile_in("src", "source tile"), scalar_in()),
    attrs=(Attr("reverse", bool, False, "false: src / scalar; true: scalar / src"), PRECISION),
    semantics=_tdivs, dtypes=same(_SRC_SCALAR, dt.NUMERIC), numerics=ROUNDED,
    domain=Domain.DST, pipe=Pipe.V,
    doc="dst[i, j] = src[i, j] / scalar, or scalar / src[i, j] when reverse = true. The public "
        "ISA has two overloads told apart by operand order (`tdivs %src, %scalar` and "
        "`tdivs %scalar, %src`); openpto keeps one operand order and an attribute: the "
        "scalar-first spelling means reverse = true and prints as "
        "`tdivs %src, %scalar {reverse = true}`. Floats are IEEE division, correctly rounded "
        "(computed in f32, rounded once to the tile dtype); integers truncate toward zero."
        + _SCALAR_RULE + PRECISION_DOC,
    example=_example(*F32_EXAMPLE, 4.0),
    more_examples=(_with_precision(_example(*F32_EXAMPLE, 4.0)),),
    constraints=(K.covers(("src",)),),
    profile_dtypes=_narrowed(_SRC_SCALAR, A2_ARITH, A5_DIV),
    special_values="Floats: x/0 = ±inf, 0/0 = NaN, ±inf/±inf = NaN. Integers: x/0 = -1 (all "
                   "bits set, so MAX for unsigned types), MIN/-1 = MIN (wraps); the same holds "
                   "for scalar/src with the roles swapped."))

# ----------------------------------------------------------------------------- bitwise and shifts

_ALIAS_NOTE = (" NPU implementations require dst and src to be distinct buffers; openpto "
               "semantics read src before writing dst, so a backend must use a scratch buffer "
               "when they alias.")
_tile_scalar("TANDS", "bitwise and with a scalar", np.bitwise_and, dt.INTS_32,
             "dst[i, j] = src[i, j] & scalar." + _ALIAS_NOTE, _example(*I16_EXAMPLE, 0x0FF0),
             numerics=EXACT, a2=A2_BITWISE, a5=dt.INTS_32,
             special="A negative literal wraps to its two's complement bits (-1 = all ones).")
_tile_scalar("TORS", "bitwise or with a scalar", np.bitwise_or, dt.INTS_32,
             "dst[i, j] = src[i, j] | scalar." + _ALIAS_NOTE, _example(*I16_EXAMPLE, 0x0FF0),
             numerics=EXACT, a2=A2_BITWISE, a5=dt.INTS_32,
             special="A negative literal wraps to its two's complement bits (-1 = all ones).")
_tile_scalar("TXORS", "bitwise xor with a scalar", np.bitwise_xor, dt.INTS_32,
             "dst[i, j] = src[i, j] ^ scalar." + _ALIAS_NOTE, _example(*I16_EXAMPLE, 0x0FF0),
             numerics=EXACT, a2=A2_BITWISE, a5=dt.INTS_32, tmp=True,
             special="A negative literal wraps to its two's complement bits (-1 = all ones).")

_SHIFT_COUNT = ("The count is the scalar in the tile dtype read as unsigned (the public ISA "
                "requires a non-negative count; a negative one is therefore a count >= the width)")
_tile_scalar("TSHLS", "shift left by a scalar", C.shift_left, dt.INTS_32,
             "dst[i, j] = src[i, j] << scalar (low bits kept).", _example(*I32_EXAMPLE, 3),
             numerics=EXACT, a2=A2_SHIFT, a5=dt.INTS_32,
             special=_SHIFT_COUNT + "; a count >= the bit width gives 0.")
_tile_scalar("TSHRS", "shift right by a scalar", C.shift_right, dt.INTS_32,
             "dst[i, j] = src[i, j] >> scalar: arithmetic for signed types, logical for unsigned.",
             _example(*I32_EXAMPLE, 3), numerics=EXACT, a2=A2_SHIFT, a5=dt.INTS_32,
             special=_SHIFT_COUNT + "; a count >= the bit width gives 0 (unsigned, or "
                     "non-negative signed) or -1 (negative signed).")

# ----------------------------------------------------------------------------- fused two-tile forms


def _fused(fn: Callable[..., np.ndarray]) -> Callable[..., None]:
    def semantics(dst: Tile, src0: Tile, scalar: object, src1: Tile) -> None:
        C.apply_elementwise(dst, [src0, src1], fn, [scalar])
    return semantics


_FUSED_NAMES = ("dst", "src0", "scalar", "src1")
_FUSED_EXAMPLE = Example({"dst": "!pto.tile<16x16xf32>", "src0": "!pto.tile<16x16xf32>",
                          "scalar": "f32", "src1": "!pto.tile<16x16xf32>"}, {}, {"scalar": 2.0})


def _fused_instr(mnemonic: str, summary: str, fn: Callable[..., np.ndarray], formula: str) -> None:
    declare(Instruction(
        mnemonic=mnemonic, family=Family.TILE_SCALAR, summary=summary,
        operands=(tile_out(), tile_in("src0", "first tile"), scalar_in(),
                  tile_in("src1", "second tile")),
        semantics=_fused(fn), dtypes=same(_FUSED_NAMES, dt.NUMERIC), numerics=ROUNDED,
        domain=Domain.DST, pipe=Pipe.V,
        doc=f"dst[i, j] = {formula}, evaluated left to right: each operation is rounded to the "
            "compute type (f32 for floats), narrow floats round once more at the end; integers "
            "wrap. Public status: CPU simulator only (TODO on A2/A3/A5)." + _SCALAR_RULE,
        example=_FUSED_EXAMPLE,
        constraints=(K.same_shape("dst", "src0", "src1"), K.covers(("src0", "src1"))),
        profiles=("cpu",), special_values="IEEE in each step (inf - inf = NaN); integers wrap."))


_fused_instr("TADDSC", "add a scalar and a second tile", lambda a, b, s: (a + s) + b,
             "(src0[i, j] + scalar) + src1[i, j]")
_fused_instr("TSUBSC", "subtract a scalar, add a second tile", lambda a, b, s: (a - s) + b,
             "(src0[i, j] - scalar) + src1[i, j]")

# ----------------------------------------------------------------------------- broadcast


def _scalar_value(value: object, d: dt.DType) -> np.ndarray:
    """The scalar converted to dtype ``d`` itself (not its compute type), as a 0-d array."""
    with np.errstate(over="ignore"):
        return C.narrow(C.scalar_as(value, d), d)


def _texpands(dst: Tile, scalar: object) -> None:
    r, c = dst.valid
    dst.write(np.broadcast_to(_scalar_value(scalar, dst.dtype), (r, c)), r, c)


declare(Instruction(
    mnemonic="TEXPANDS", family=Family.TILE_SCALAR, summary="broadcast a scalar into a tile",
    operands=(tile_out(), scalar_in()), semantics=_texpands,
    dtypes=same(("dst", "scalar"), dt.NUMERIC), numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc="dst[i, j] = scalar for every element of dst's valid region; there is no source tile. "
        "Elements outside the valid region are unspecified as for every instruction."
        + _SCALAR_RULE,
    example=Example({"dst": "!pto.tile<16x16xf32, valid=12x10>", "scalar": "f32"}, {},
                    {"scalar": -2.5}),
    profile_dtypes=_narrowed(("dst", "scalar"), A2_ARITH, dt.INTS_32 + HALF_FLOAT),
    special_values="The converted scalar is stored bit for bit: -0 stays -0, NaN stays NaN; an "
                   "out-of-range float literal becomes ±inf."))

# ----------------------------------------------------------------------------- compare and select


def _tcmps(dst: Tile, src: Tile, scalar: object, cmpMode: CmpMode) -> None:  # noqa: N803
    C.apply_elementwise(dst, [src], _CMP[cmpMode], [scalar])


def _cmps_rule(types: tuple[dt.DType, ...]) -> DTypeRule:
    return tuples(_SRC_SCALAR, [(dt.I1, d, d) for d in types])


declare(Instruction(
    mnemonic="TCMPS", family=Family.TILE_SCALAR, summary="compare a tile with a scalar into a mask",
    operands=(tile_out("dst", "i1 mask tile"), tile_in("src", "source tile"), scalar_in()),
    attrs=(Attr("cmpMode", CmpMode, None, "comparison predicate"),),
    semantics=_tcmps, dtypes=_cmps_rule(dt.NUMERIC),
    profile_dtypes={"a2": _cmps_rule(CMPS_A2), "a3": _cmps_rule(CMPS_A2),
                    "a5": _cmps_rule(dt.INTS_32 + HALF_FLOAT)},
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc="dst[i, j] = src[i, j] <cmpMode> scalar. " + _CMP_DOC + " Comparisons are exact: the "
        "public CPU simulator's 1e-9 tolerance for EQ/NE on floats is not adopted. Hardware packs "
        "masks into bits; openpto masks are i1 tiles. A2/A3 compare 16-bit integers as f16 bit "
        "patterns, so the a2/a3 profiles accept only i32, f16 and f32." + _SCALAR_RULE,
    example=Example({"dst": "!pto.tile<16x16xi1>", "src": "!pto.tile<16x16xf32>", "scalar": "f32"},
                    {"cmpMode": CmpMode.GT}, {"scalar": 0.0}),
    constraints=(K.covers(("src",)),),
    special_values="NaN compares unordered (only NE is true), also for a NaN scalar; -0 == +0."))


def _tsels(dst: Tile, mask: Tile, src: Tile, scalar: object) -> None:
    r, c = dst.valid
    m = mask.read(r, c, "mask")
    dst.write(np.where(m, src.read(r, c, "src"), _scalar_value(scalar, src.dtype)), r, c)


_SELS_NAMES = ("dst", "mask", "src", "scalar")
_SELS_A2 = (dt.I16, dt.U16, dt.I32, dt.U32, dt.F16, dt.F32)


def _sels_rule(types: tuple[dt.DType, ...]) -> DTypeRule:
    return tuples(_SELS_NAMES, [(d, dt.I1, d, d) for d in types])


declare(Instruction(
    mnemonic="TSELS", family=Family.TILE_SCALAR, summary="select between a tile and a scalar by a mask",
    operands=(tile_out(), tile_in("mask", "i1 mask tile"), tile_in("src", "chosen where mask is 1"),
              scalar_in("scalar", "chosen where mask is 0; converted to the tile dtype")),
    semantics=_tsels, dtypes=_sels_rule(dt.NUMERIC),
    profile_dtypes={"a2": _sels_rule(_SELS_A2), "a3": _sels_rule(_SELS_A2),
                    "a5": _sels_rule(_SELS_A2 + (dt.I8, dt.U8))},
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc="dst[i, j] = mask[i, j] ? src[i, j] : scalar, per element (the public documented and NPU "
        "semantics; the public CPU simulator's whole-tile select by a mode flag is an old form "
        "openpto does not implement). Values are copied bit for bit." + _SCALAR_RULE,
    example=Example({"dst": "!pto.tile<16x16xf32>", "mask": "!pto.tile<16x16xi1>",
                     "src": "!pto.tile<16x16xf32>", "scalar": "f32"}, {}, {"scalar": 0.0}),
    constraints=(K.covers(("mask", "src")),),
    special_values="src values keep their bits (NaN payloads, -0); the scalar is converted to "
                   "the dtype once."))
