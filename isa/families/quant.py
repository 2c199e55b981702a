"""Quantisation: integer dequantisation (TDEQUANT) and the pre-quantisation state that later
moves read (SET_QUANT_SCALAR, SET_QUANT_VECTOR).

The state instructions write nothing into tiles: like TSETFMATRIX they record their values into
the optional ``state`` dict a backend passes in, under the keys in ``STATE_KEYS``. A consumer
(the pre-quantising forms of TPUSH / TMOV) reads them there:

* ``state["quant_scalar"] = {"scale": np.float32, "out_type": QuantOutType}``
* ``state["quant_vector"] = {"fp": Tile}``: the scaling tile itself, not a copy, because the
  hardware register holds the tile's address; a consumer reads its values when it runs.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .. import constraints as K
from .. import dtypes as dt
from ..attrs import QuantOutType
from ..registry import declare
from ..spec import Attr, Domain, EXACT, Example, Family, Instruction, same, tuples
from ..types import Layout, Location, Pipe, TileType, Type
from ..values import Tile
from ._helpers import scalar_in, tile_in, tile_out

STATE_KEYS = {"SET_QUANT_SCALAR": "quant_scalar", "SET_QUANT_VECTOR": "quant_vector"}


def _record(state: dict | None, mnemonic: str, values: dict[str, Any]) -> None:
    if state is not None:
        state[STATE_KEYS[mnemonic]] = values


# ----------------------------------------------------------------------------- TDEQUANT

def _tdequant(dst: Tile, src: Tile, scale: Tile, offset: Tile) -> None:
    rows, cols = dst.valid
    x = src.read(rows, cols, "src").astype(np.float32)          # i8 / i16 are exact in f32
    s = scale.read(rows, 1, "scale").astype(np.float32)
    o = offset.read(rows, 1, "offset").astype(np.float32)
    with np.errstate(all="ignore"):
        dst.write((x - o) * s, rows, cols)                     # two f32 roundings: sub, then mul


def _param_columns(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    """Column 0 of scale and offset is read, so each has at least one valid column."""
    for name in ("scale", "offset"):
        t = types.get(name)
        if isinstance(t, TileType) and t.valid_cols == 0:
            return f"{name} has no valid column"
    return None


_DEQUANT_DOC = (
    "Over dst's valid region: dst[i, j] = f32(f32(src[i, j]) - offset[i, 0]) * scale[i, 0], the "
    "subtraction and the multiplication each rounded to f32 (RNE, no fused multiply-add). src is "
    "the i8 or i16 code (exact in f32); scale and offset are per-row f32 parameters read in column 0 "
    "of rows 0 .. dst.valid_rows - 1, the inverse of TQUANT's affine quantisation. src covers dst's "
    "valid region; scale and offset have exactly dst.valid_rows valid rows (as the public targets "
    "assert). dst and src are row-major (ND). Every NPU target broadcasts column 0 of each parameter "
    "row; the public CPU simulator clamps the parameter column to min(j, scale.valid_cols - 1), which "
    "agrees whenever the parameters have one valid column (the documented form), so openpto reads "
    "column 0 only.")

declare(Instruction(
    mnemonic="TDEQUANT", family=Family.COMPLEX, summary="dequantise i8/i16 rows to f32",
    operands=(tile_out("dst", "f32 result"), tile_in("src", "i8 or i16 quantised codes"),
              tile_in("scale", "per-row f32 scale in column 0 (an Rx1 tile)"),
              tile_in("offset", "per-row f32 zero point in column 0 (an Rx1 tile)")),
    semantics=_tdequant,
    dtypes=tuples(("dst", "src", "scale", "offset"), [(dt.F32, s, dt.F32, dt.F32) for s in (dt.I8, dt.I16)]),
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc=_DEQUANT_DOC,
    special_values="IEEE f32 arithmetic: a NaN scale or offset gives NaN, an infinite offset gives "
                   "∓inf (or NaN times a zero scale), overflow of the product rounds to ±inf; src "
                   "codes are integers, so src never contributes NaN or inf.",
    example=Example({"dst": "!pto.tile<16x32xf32>", "src": "!pto.tile<16x32xi8>",
                     "scale": "!pto.tile<16x1xf32, layout=DN>", "offset": "!pto.tile<16x1xf32, layout=DN>"}),
    more_examples=(Example({"dst": "!pto.tile<8x16xf32>", "src": "!pto.tile<8x16xi16>",
                            "scale": "!pto.tile<8x8xf32, valid=8x1>",
                            "offset": "!pto.tile<8x8xf32, valid=8x1>"}),),
    constraints=(K.covers(("src",)),
                 K.equal("scale", "valid_rows", "dst", "valid_rows", "STRUCT_VALID_REGION"),
                 K.equal("offset", "valid_rows", "dst", "valid_rows", "STRUCT_VALID_REGION"),
                 K.custom("scale and offset have a valid column", _param_columns, "STRUCT_VALID_REGION"),
                 K.layout_in("dst", Layout.ND), K.layout_in("src", Layout.ND))))


# ----------------------------------------------------------------------------- SET_QUANT_*

_STATE_DOC = " The semantics record {fields} into state[{key!r}] when a `state` dict is passed."
_CONSUMER = (" Later pre-quantising moves (TPUSH, TMOV and TSTORE forms that take no explicit "
             "scale) read it; instructions that take their scale as an operand ignore it.")


def _set_quant_scalar(preQuantScalar: float, OutType: QuantOutType,  # noqa: N803
                      state: dict | None = None) -> None:
    _record(state, "SET_QUANT_SCALAR", {"scale": np.float32(preQuantScalar), "out_type": OutType})


def _set_quant_vector(fp: Tile, state: dict | None = None) -> None:
    _record(state, "SET_QUANT_VECTOR", {"fp": fp})


declare(Instruction(
    mnemonic="SET_QUANT_SCALAR", family=Family.SYNC, summary="set the scalar pre-quantisation scale",
    operands=(scalar_in("preQuantScalar", "f32 scale later pre-quantising moves multiply by"),),
    attrs=(Attr("OutType", QuantOutType, None, "element type the consuming move writes: I8, U8, I16, F16 "
                                               "or BF16"),),
    semantics=_set_quant_scalar,
    dtypes=same(("preQuantScalar",), (dt.F32,)), numerics=EXACT, domain=Domain.NONE, pipe=Pipe.S,
    doc="Sets the scalar quantisation configuration: the f32 scale and the output type of the "
        "consuming move. The hardware register packs the scale's bits and, for 8-bit outputs, a sign "
        "flag (bit 46: set for I8, clear for U8); that encoding is implementation-defined, so openpto "
        "records the value and the type instead. The scale is recorded exactly as given (any f32, "
        "NaN, ±inf and -0 included)."
        + _STATE_DOC.format(fields="{'scale': f32, 'out_type': QuantOutType}", key="quant_scalar")
        + _CONSUMER,
    special_values="No values are computed; the scale is kept bit for bit.",
    example=Example({"preQuantScalar": "f32"}, {"OutType": QuantOutType.I8},
                    scalars={"preQuantScalar": 0.5})))

declare(Instruction(
    mnemonic="SET_QUANT_VECTOR", family=Family.SYNC, summary="set the per-column pre-quantisation scales",
    operands=(tile_in("fp", "1 x N f32 scale tile in the scaling buffer, one scale per column",
                      locations=(Location.SCALING,)),),
    semantics=_set_quant_vector,
    dtypes=same(("fp",), (dt.F32,)), numerics=EXACT, domain=Domain.NONE, pipe=Pipe.S,
    doc="Points the vector quantisation configuration at the scaling tile fp (the hardware writes "
        "the tile's address into its FPC register). The tile is recorded, not its values: a consuming "
        "move reads fp[0, j] for its column j when it runs, so writing fp between SET_QUANT_VECTOR and "
        "the move changes the scales it uses. fp must live in the scaling buffer (the public "
        "static_assert) and is 1 x N f32, as TSTORE_FP's scale tile."
        + _STATE_DOC.format(fields="{'fp': the tile}", key="quant_vector") + _CONSUMER,
    special_values="No values are computed or read.",
    example=Example({"fp": "!pto.tile<1x128xf32, loc=scaling>"}),
    constraints=(K.fixed("fp", "rows", 1),)))
