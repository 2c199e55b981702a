"""Data movement and layout: buffer-to-buffer copies, sub-tile windows, transpose, byte
reinterpretation, padding and im2col.

Tiles are logical 2-D arrays; only TRESHAPE looks at the physical layout (ND/DN/NZ/ZN/ZZ), through
``layout_offsets`` below. Moves out of the accumulator may convert f32 to f16/bf16 (the fixpipe's
down-conversion); the ``_FP`` forms first scale each column by an f32 factor from a scaling tile.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import numpy as np

from .. import compute as C
from .. import constraints as K
from .. import dtypes as dt
from .. import hifloat8
from ..attrs import AccToVecMode, ReluMode
from ..diagnostics import RuntimeFault
from ..profiles import fractal_box
from ..registry import declare
from ..spec import (Attr, Constraint, Domain, DTypeRule, EXACT, Example, Family, Instruction,
                    Kind, Numerics, Operand, Role, tuples)
from ..types import Layout, Location, PadValue, Pipe, TileType, Type
from ..values import Tile
from ._helpers import index_in, tile_in, tile_inout, tile_out
from ._prequant import A5_PAIRS, SCALE, SCALE_OPERAND, form_rules, profile_forms, saturate, scale
from .elementwise import TMP_DOC, TMP_NOTE

VEC, MAT, ACC = Location.VEC, Location.MAT, Location.ACC
LEFT, RIGHT, BIAS, SCALING = Location.LEFT, Location.RIGHT, Location.BIAS, Location.SCALING

NPU_STORABLE = tuple(d for d in dt.STORABLE if d not in dt.FP8)     # fp8 tiles exist on A5 only
B124 = (dt.I8, dt.U8, dt.I16, dt.U16, dt.I32, dt.U32, dt.F16, dt.BF16, dt.F32)  # 1/2/4-byte data
ACC_CONV = ((dt.F16, dt.F32), (dt.BF16, dt.F32))                     # (dst, src) down-conversions
MOVE_NUMERICS = Numerics("rounded", note="same-dtype moves are bit copies (NaN payloads and -0 "
                                         "kept); f32 -> f16/bf16 rounds once, nearest-even")

# ------------------------------------------------------------------------------ run-time helpers


def _check_window(tile: Tile, r0: int, c0: int, rows: int, cols: int, what: str) -> None:
    """A window addressed by offsets must lie inside the tile's valid region (RUNTIME_OOB)."""
    vr, vc = tile.valid
    if r0 < 0 or c0 < 0 or r0 + rows > vr or c0 + cols > vc:
        raise RuntimeFault("RUNTIME_OOB", f"the {rows}x{cols} window at ({r0}, {c0}) leaves the "
                           f"{what}'s valid region", expected=f"inside {vr}x{vc}",
                           actual=f"rows [{r0}, {r0 + rows}), cols [{c0}, {c0 + cols})")


def _check_fits(dst: Tile, rows: int, cols: int) -> None:
    """The block an instruction writes must lie inside dst's valid region."""
    if rows > dst.valid[0] or cols > dst.valid[1]:
        raise RuntimeFault("RUNTIME_INVALID_WRITE",
                           "destination is written outside its valid region",
                           expected=f"a {rows}x{cols} block inside the valid region",
                           actual=f"valid region {dst.valid[0]}x{dst.valid[1]}")


def _relu(values: np.ndarray, d: dt.DType) -> np.ndarray:
    """max(x, 0) picking from the original values: NaN (payload included) stays, -0 becomes +0.
    ``d`` names the element type (hifloat8 codes are read through their codec)."""
    if d is dt.E8M0:            # every E8M0 code is positive (no sign, no zero) or NaN: all kept
        return values
    if d.bits == 4:             # fp4 / i4 codes: positive iff the low nibble is 1 .. 7 (sign bit 3 clear)
        w = np.where(values & 8, -1, (values & 7).astype(np.int8))
    else:
        w = hifloat8.decode(values) if d is dt.HIF8 else C.widen(values, d)
    return np.where((w > 0) | (w != w), values, np.zeros_like(values))


def _transfer(values: np.ndarray, dst: Tile, fp: Tile | None = None,
              relu: ReluMode = ReluMode.NONE, factor: Any = None) -> np.ndarray:
    """What a move stores: values scaled in f32, per column by ``fp`` or all by the scalar
    ``factor``, ReLU'd, then converted to dst's dtype (round once, nearest-even; integer
    targets of a scaled value also saturate, NaN -> 0). Without scale, relu or conversion: the bits."""
    scaled = fp is not None or factor is not None
    if fp is not None:
        with np.errstate(all="ignore"):
            values = values.astype(np.float32) * fp.read(1, values.shape[1], "scaling tile fp")
    if factor is not None:
        values = scale(values, factor)
    if relu is ReluMode.RELU:   # uint8 storage is coded (hifloat8, 4-bit) only in an unscaled coded move
        coded = not scaled and dst.dtype in dt.CPU_MOVABLE_CODED
        values = _relu(values, dst.dtype if coded else dt.of_numpy(values.dtype))
    if scaled:                  # f32 products: the pre-quantising conversions (saturating)
        return saturate(values, dst.dtype)
    if values.dtype == dst.dtype.np_dtype:
        return values
    with np.errstate(all="ignore"):
        return C.narrow(C.widen(values, dt.of_numpy(values.dtype)), dst.dtype)

# ------------------------------------------------------------------------------ static helpers


def _tile_pair(types: Mapping[str, Type]) -> tuple[TileType, TileType] | None:
    s, d = types.get("src"), types.get("dst")
    return (s, d) if isinstance(s, TileType) and isinstance(d, TileType) else None


def _loc_rule(table: Mapping[tuple[Location, Location], Pipe]) -> Constraint:
    """(src.loc, dst.loc) must be one of the table's data paths."""
    allowed = ", ".join(f"{s.value}->{d.value}" for s, d in table)

    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        pair = _tile_pair(types)
        if pair and (pair[0].loc, pair[1].loc) not in table:
            return f"no data path {pair[0].loc.value} -> {pair[1].loc.value}; allowed: {allowed}"
        return None
    return K.custom(f"(src.loc, dst.loc) in {{{allowed}}}", check, "LEGAL_LOCATION")


def _pipe_rule(table: Mapping[tuple[Location, Location], Pipe]) -> Callable[..., Pipe]:
    """The issuing pipe follows the data path; pairs the location rule rejects answer V."""
    def pipe(types: Mapping[str, Type]) -> Pipe:
        pair = _tile_pair(types)
        return table.get((pair[0].loc, pair[1].loc), Pipe.V) if pair else Pipe.V
    return pipe


def _convert_only_from_acc(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    pair = _tile_pair(types)
    if pair and pair[0].dtype != pair[1].dtype and pair[0].loc is not ACC:
        return (f"dtype conversion {pair[0].dtype} -> {pair[1].dtype} needs an acc source, "
                f"src is in {pair[0].loc.value}")
    return None


CONVERT_RULE = K.custom("dst.dtype != src.dtype only when src is in acc", _convert_only_from_acc,
                        "LEGAL_DTYPE")


def _covers(big: str, small: str) -> tuple[Constraint, Constraint]:
    """big's valid region contains small's (both axes)."""
    return tuple(K.at_least(big, f"valid_{ax}", small, f"valid_{ax}", "STRUCT_VALID_REGION")
                 for ax in ("rows", "cols"))


def _locs(table: Mapping[tuple[Location, Location], Pipe], side: int) -> tuple[Location, ...]:
    return tuple(dict.fromkeys(pair[side] for pair in table))


def _plain_pairs(same: tuple[dt.DType, ...]) -> list[tuple[dt.DType, dt.DType]]:
    return [(d, d) for d in same] + list(ACC_CONV)


def _move_rules(same: tuple[dt.DType, ...], scaled: tuple = ()) -> DTypeRule:
    """Same-dtype moves, the acc down-conversions and (forms with preQuantScalar) ``scaled``."""
    return tuples(("dst", "src"), list(dict.fromkeys(_plain_pairs(same) + list(scaled))))


def _move_profiles(a2: tuple[dt.DType, ...], a5: tuple[dt.DType, ...],
                   scaled: bool = False) -> dict[str, DTypeRule]:
    return {p: _move_rules(same, SCALED_MOVES[p] if scaled else ())
            for p, same in (("a2", a2), ("a3", a2), ("a5", a5))}

# ------------------------------------------------------------------------------ TMOV family

TMOV_PATHS = {(MAT, LEFT): Pipe.MTE1, (MAT, RIGHT): Pipe.MTE1, (MAT, BIAS): Pipe.MTE1,
              (MAT, SCALING): Pipe.FIX, (VEC, VEC): Pipe.V, (VEC, MAT): Pipe.FIX,
              (ACC, MAT): Pipe.FIX, (ACC, VEC): Pipe.FIX,
              (MAT, Location.SCALE_LEFT): Pipe.MTE1, (MAT, Location.SCALE_RIGHT): Pipe.MTE1}
# A5/A6 TExtract also fills the MX scale buffers from mat (TExtractToAmx / TExtractToBmx), as TMOV does
EXTRACT_PATHS = {(MAT, LEFT): Pipe.MTE1, (MAT, RIGHT): Pipe.MTE1, (VEC, MAT): Pipe.FIX,
                 (ACC, MAT): Pipe.FIX, (VEC, VEC): Pipe.V,
                 (MAT, Location.SCALE_LEFT): Pipe.MTE1, (MAT, Location.SCALE_RIGHT): Pipe.MTE1}
INSERT_PATHS = {(ACC, MAT): Pipe.FIX, (VEC, MAT): Pipe.MTE3, (VEC, VEC): Pipe.V, (ACC, VEC): Pipe.FIX}
FP_PATHS = {(ACC, MAT): Pipe.FIX, (ACC, VEC): Pipe.FIX}
# The pre-quantising moves, scalar (optional preQuantScalar) and vector (the _FP forms' fp tile): the
# (dst, src) pairs GetScalarPreQuantMode / GetVectorPreQuantMode scale that the acc moves admit. a2/a3
# (CheckTMovAccToMat) f32 -> i8 and i32 -> i8/u8/f16 (the i32 -> i16 SHIFTS322S16 modes shift instead of
# scaling: not declared); a5 (CheckTMovAccValid) and cpu f32 and i32 -> i8/u8/f16/bf16, f32 also ->
# hifloat8 and float8_e4m3.
_A2_SCALED = ((dt.I8, dt.F32), (dt.I8, dt.I32), (dt.U8, dt.I32), (dt.F16, dt.I32))
SCALED_MOVES = {"cpu": A5_PAIRS, "a2": _A2_SCALED, "a3": _A2_SCALED, "a5": A5_PAIRS}
SCALED_FORMS = profile_forms(SCALED_MOVES)
# The _FP forms: the vector modes' pairs (the scalar ones); cpu also keeps its scaled f32 targets.
FP_TYPES = tuples(("dst", "src", "fp"), [(d, s, dt.F32) for d, s in A5_PAIRS + ((dt.F32, dt.F32), (dt.F32, dt.I32))])
NPU_FP_TYPES = {"a2": tuples(("dst", "src", "fp"), [(d, s, dt.F32) for d, s in _A2_SCALED]),
                "a5": tuples(("dst", "src", "fp"), [(d, s, dt.F32) for d, s in A5_PAIRS])}
NPU_FP_TYPES["a3"] = NPU_FP_TYPES["a2"]
PREQUANT_CONVERT = (": f16/bf16 round nearest-even (overflow ±inf), i8/u8 round to nearest even and "
                    "saturate (NaN -> 0), f8e4m3 rounds nearest-even and saturates to ±448 (NaN -> 0x7F), "
                    "hifloat8 rounds to nearest with ties away from zero (overflow ±inf, NaN -> 0x80)")
RELU_ATTR = Attr("relu", ReluMode, ReluMode.NONE, "ReLU applied before the conversion (after any scaling)")
FP_DOC = (" Each value is first converted to f32 (i32 rounds nearest-even) and multiplied in f32 "
          "by fp[0, j] for block column j, then ReLU'd (relu attribute), then converted into dst's dtype"
          + PREQUANT_CONVERT + ": every step is specified, so the result is bit-exact. NPU profiles take "
          "the pairs their vector pre-quant modes scale (GetVectorPreQuantMode within the acc-move "
          "checks): a2/a3 f32 -> i8 and i32 -> i8/u8/f16, a5 f32 and i32 -> i8/u8/f16/bf16 and f32 -> "
          "hifloat8/f8e4m3; cpu also f32 targets.")
SCALED_DOC = (" Scalar pre-quantising form (the public overload taking preQuantScalar): with the f32 "
              "operand preQuantScalar, every moved value is converted to f32 (i32 rounds nearest-even), "
              "multiplied in f32 by preQuantScalar, ReLU'd (relu attribute), then converted into dst's "
              "dtype" + PREQUANT_CONVERT + ", as TSTORE's scaled form. Only an acc source is scaled "
              "(LEGAL_LOCATION); i32 -> i8/u8/f16/bf16 and f32 -> i8/u8/hifloat8/f8e4m3 exist only in this "
              "form (STRUCT_MISSING_OPERAND without the scale), f32 -> f16/bf16 in both. The pairs the "
              "scaled form converts differ per profile (LEGAL_DTYPE; 'Element types per form'): a2/a3 f32 "
              "-> i8 and i32 -> i8/u8/f16 (their unscaled f32 -> f16/bf16 is not scaled there), a5 and cpu "
              "f32 and i32 -> i8/u8/f16/bf16 and f32 -> hifloat8/f8e4m3. "
              "No form reads the SET_QUANT_SCALAR / SET_QUANT_VECTOR state.")
_SCALE_SPECIAL = (" Scaled form: IEEE f32 product (0 * inf = NaN); to i8/u8 NaN -> 0, values beyond the "
                  "range (±inf included) clamp to its ends; to f8e4m3 likewise clamp to ±448 (NaN -> 0x7F); "
                  "to hifloat8 overflow gives ±inf (NaN -> 0x80).")
CONV_SPECIAL = ("Same dtype: bit copy (NaN payloads, -0, denormals kept). f32 -> f16/bf16: IEEE "
                "nearest-even; overflow gives ±inf, NaN stays NaN, f16 denormals are kept "
                "(no flush). ReLU: relu(NaN) = NaN, relu(-0) = +0.")


def _move_operands(table: Mapping, dst_role: Role = Role.OUT,
                   fp: bool = False) -> tuple[Operand, ...]:
    dst = Operand("dst", dst_role, Kind.TILE, "destination tile", locations=_locs(table, 1))
    ops = [dst, tile_in("src", "source tile", locations=_locs(table, 0))]
    if fp:
        ops.append(tile_in("fp", "scaling tile: one f32 factor per column in row 0",
                           locations=(SCALING,)))
    return tuple(ops)


# One semantics function per shape of move; the _FP forms pass their scaling tile as ``fp``.


# AccToVecMode dual modes and the axis they split (0: rows, M; 1: columns, N)
DUAL_SPLIT = {AccToVecMode.DualModeSplitM: 0, AccToVecMode.DualModeSplitN: 1}
SPLIT_N_WORD_COLS = 32     # DualModeSplitN with a 4-byte dst: valid columns before the split


def acc_part(rows: int, cols: int, mode: AccToVecMode, itemsize: int) -> tuple[int, int]:
    """The rows x cols block of an acc -> vec move that vector sub-block 0 receives; a split
    extent that cannot be halved as the targets require is RUNTIME_VALID_REGION."""
    axis = DUAL_SPLIT.get(mode)
    if axis is None:
        return rows, cols
    ext = (rows, cols)[axis]
    if ext % 2 or (axis == 1 and itemsize == 4 and cols % SPLIT_N_WORD_COLS):
        need = "an even number of valid rows" if axis == 0 else (
            f"valid columns a multiple of {SPLIT_N_WORD_COLS}" if itemsize == 4 else "an even number of valid columns")
        raise RuntimeFault("RUNTIME_VALID_REGION", f"{mode.name} cannot split src's valid region",
                           expected=need, actual=f"valid region {rows}x{cols}")
    return (rows // 2, cols) if axis == 0 else (rows, cols // 2)


def _tmov(dst: Tile, src: Tile, relu: ReluMode = ReluMode.NONE, fp: Tile | None = None,
          tmp: Tile | None = None, mode: AccToVecMode = AccToVecMode.SingleModeVec0,
          preQuantScalar: Any = None) -> None:  # noqa: N803
    r, c = acc_part(*src.valid, mode, dst.dtype.itemsize)
    _check_fits(dst, r, c)
    if mode is AccToVecMode.SingleModeVec1:
        return              # lands in vector sub-block 1's buffer; a functional run is sub-block 0
    dst.write(_transfer(src.read(r, c), dst, fp, relu, preQuantScalar), r, c)


def _unless_dual(c: Constraint) -> Constraint:
    """A whole-tile rule that the dual acc -> vec modes replace with their half-tile rules."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        return None if attrs.get("mode") in DUAL_SPLIT else c.check(types, attrs)
    return dataclasses.replace(c, doc=c.doc + " (dual modes: see below)", check=check)


def _move_shape(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    """From acc the fixpipe kernels write dst at its own stride over src's valid region, so only
    the regions must agree; an NZ dst still takes every static row of src (the NZ-to-NZ kernels
    move SrcTileData::Rows rows). Between other locations TMOV_TILE_IMPL asserts equal shapes."""
    pair = _tile_pair(types)
    if not pair:
        return None
    src, dst = pair
    if src.loc is not ACC:
        return _SAME_SHAPE.check(types, attrs)
    if dst.layout is Layout.NZ and None not in (src.rows, dst.rows) and dst.rows < src.rows:
        return f"an NZ dst of a move from acc has at least src's static rows: dst {dst.rows}, src {src.rows}"
    return None


_SAME_SHAPE = K.same_shape("dst", "src")
MOVE_SHAPE = K.custom("dst, src have the same static shape unless src is in acc; from acc an NZ dst has "
                      "at least src's static rows", _move_shape)


def _mode_path(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    mode, pair = attrs.get("mode", AccToVecMode.SingleModeVec0), _tile_pair(types)
    if mode is AccToVecMode.SingleModeVec0 or not pair:
        return None
    if (pair[0].loc, pair[1].loc) != (ACC, VEC):
        return f"mode {mode.name} belongs to acc -> vec moves, not {pair[0].loc.value} -> {pair[1].loc.value}"
    if mode in DUAL_SPLIT and (pair[0].dtype != pair[1].dtype or SCALE in types):
        return f"{mode.name} moves without conversion (no pre-quantisation in dual modes)"
    if mode in DUAL_SPLIT and pair[1].layout is Layout.DN:
        return f"{mode.name} does not write a DN (nz2dn) destination"
    return None


def _dual_shape(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    """Dual modes: dst is sub-block 0's half of src (static shape), and its valid region holds
    that half; the split extent halves (and is a multiple of 32 columns for a 4-byte SplitN)."""
    axis, pair = DUAL_SPLIT.get(attrs.get("mode")), _tile_pair(types)
    if axis is None or not pair:
        return None
    s, d = pair
    half = (s.rows // 2, s.cols) if axis == 0 else (s.rows, s.cols // 2)
    if (s.rows, s.cols)[axis] % 2 or (d.rows, d.cols) != half:
        return f"dst {d.rows}x{d.cols} is not the half {half[0]}x{half[1]} of src {s.rows}x{s.cols}"
    return None


def _dual_valid(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    axis, pair = DUAL_SPLIT.get(attrs.get("mode")), _tile_pair(types)
    if axis is None or not pair or None in pair[0].valid:
        return None
    s, d = pair
    try:
        r, c = acc_part(s.valid_rows, s.valid_cols, attrs["mode"], d.dtype.itemsize)
    except RuntimeFault as e:
        return f"{e.message}: {e.expected}"
    if (d.valid_rows is not None and d.valid_rows < r) or (d.valid_cols is not None and d.valid_cols < c):
        return f"dst valid region {d.valid_rows}x{d.valid_cols} does not hold the {r}x{c} half"
    return None


def _textract(dst: Tile, src: Tile, r0: int, c0: int, fp: Tile | None = None,
              relu: ReluMode = ReluMode.NONE, preQuantScalar: Any = None) -> None:  # noqa: N803
    (r, c), r0, c0 = dst.valid, int(r0), int(c0)
    _check_window(src, r0, c0, r, c, "source")
    dst.write(_transfer(src.data[r0:r0 + r, c0:c0 + c], dst, fp, relu, preQuantScalar), r, c)


def _tinsert(dst: Tile, src: Tile, r0: int, c0: int, fp: Tile | None = None,
             mode: AccToVecMode = AccToVecMode.SingleModeVec0, relu: ReluMode = ReluMode.NONE,
             preQuantScalar: Any = None) -> None:  # noqa: N803
    (r, c), r0, c0 = acc_part(*src.valid, mode, dst.dtype.itemsize), int(r0), int(c0)
    _check_window(dst, r0, c0, r, c, "destination")
    if mode is AccToVecMode.SingleModeVec1:
        return              # lands in vector sub-block 1's buffer, as TMOV's mode
    dst.data[r0:r0 + r, c0:c0 + c] = _transfer(src.read(r, c), dst, fp, relu, preQuantScalar)


OFFSETS = (index_in("r0", "row offset", bounds=(0, None)), index_in("c0", "column offset", bounds=(0, None)))

declare(Instruction(
    mnemonic="TMOV", family=Family.MOVEMENT, summary="move a tile between buffers",
    operands=_move_operands(TMOV_PATHS) + (tile_in("tmp", TMP_DOC, optional=True), SCALE_OPERAND),
    attrs=(RELU_ATTR, Attr("mode", AccToVecMode, AccToVecMode.SingleModeVec0,
                           "acc -> vec: the vector sub-block that receives the tile, or the split "
                           "between both (#pto.acc_to_vec<...>)")),
    semantics=_tmov,
    dtypes=_move_rules(dt.STORABLE + dt.CPU_MOVABLE_CODED, A5_PAIRS),
    profile_dtypes=_move_profiles(NPU_STORABLE, dt.STORABLE + dt.MOVABLE_CODED, scaled=True),
    profile_forms=SCALED_FORMS,
    numerics=MOVE_NUMERICS, domain=Domain.SRC, pipe=_pipe_rule(TMOV_PATHS),
    doc="dst[i, j] = convert(relu(src[i, j])) over src's valid region, which must lie inside "
        "dst's valid region. Data paths: mat -> left/right/bias/scale_left/scale_right (MTE1), "
        "mat -> scaling, "
        "vec -> mat, acc -> mat/vec (FIX), vec -> vec (V); vec -> mat and acc -> vec exist on A5 "
        "only (the profile tables cannot narrow locations, so a2/a3 accept them too). Only an acc "
        "source may change dtype (f32 -> f16/bf16). Layouts may differ: the copy is logical. "
        "hifloat8 tiles (cpu, A5) move as their codes; relu on them reads the codes as values: "
        "a code with the sign bit set becomes 0x00 (+0), except the NaN code 0x80, which stays. fp4 "
        "(cpu, A5) and i4 (cpu) tiles also move as their codes (the element byte as it is); relu keeps "
        "a code whose low nibble is 1 .. 7 and writes 0 for every other (negative values and -0)." + TMP_NOTE
        + " (The public TMOV(dst, src, tmp) overload stages A5's layout transforms through it.) "
        "mode (the public AccToVecMode, acc -> vec moves only; STRUCT_ATTR_VALUE elsewhere) says "
        "where the cube's tile goes: SingleModeVec0 (default) to vector sub-block 0, SingleModeVec1 to "
        "sub-block 1, DualModeSplitM its upper valid rows to sub-block 0 and the lower to 1, "
        "DualModeSplitN its left valid columns to 0 and the right to 1. A functional run is vector "
        "sub-block 0 (as the TPUSH/TPOP split modes): SingleModeVec1 writes nothing into dst (the "
        "data lands in sub-block 1's buffer), the dual modes write sub-block 0's half, "
        "dst[i, j] = convert(relu(src[i, j])) for i < src.valid_rows / 2 (SplitM) or "
        "j < src.valid_cols / 2 (SplitN). Dual modes need an even split extent (SplitN with a 4-byte "
        "dtype: valid columns a multiple of 32), else STRUCT_VALID_REGION (RUNTIME_VALID_REGION when "
        "dynamic); dst's static shape is the half of src's (STRUCT_SHAPE) and its valid region holds "
        "the half; no conversion (dst's dtype is src's) and no DN destination (STRUCT_ATTR_VALUE), as "
        "the A5 header asserts. Every mode still requires the moved block to fit dst's valid region."
        + SCALED_DOC + " The dual modes take no scale (STRUCT_ATTR_VALUE).",
    special_values=CONV_SPECIAL + _SCALE_SPECIAL,
    example=Example({"dst": "!pto.tile<16x16xf16, loc=mat, layout=NZ>",
                     "src": "!pto.tile<16x16xf32, loc=acc, layout=NZ>"}, {"relu": ReluMode.RELU}),
    more_examples=(Example({"dst": "!pto.tile<16x16xf32>", "src": "!pto.tile<16x16xf32>",
                            "tmp": "!pto.tile<16x16xf32>"}),
                   Example({"dst": "!pto.tile<8x16xf32>", "src": "!pto.tile<16x16xf32, loc=acc, layout=NZ>"},
                           {"mode": AccToVecMode.DualModeSplitM}),
                   Example({"dst": "!pto.tile<16x32xf32>", "src": "!pto.tile<16x64xf32, loc=acc, layout=NZ>"},
                           {"mode": AccToVecMode.DualModeSplitN, "relu": ReluMode.RELU}),
                   Example({"dst": "!pto.tile<16x32xi8, loc=mat, layout=NZ>",
                            "src": "!pto.tile<16x32xf32, loc=acc, layout=NZ>", "preQuantScalar": "f32"},
                           {"relu": ReluMode.RELU}, scalars={"preQuantScalar": 0.5})),
    constraints=form_rules(_plain_pairs(dt.STORABLE + dt.CPU_MOVABLE_CODED), A5_PAIRS) + (
                 _unless_dual(MOVE_SHAPE), *map(_unless_dual, _covers("dst", "src")),
                 _loc_rule(TMOV_PATHS), CONVERT_RULE,
                 K.custom("mode only on acc -> vec moves; dual modes: same dtype, no scale, no DN dst",
                          _mode_path, "STRUCT_ATTR_VALUE"),
                 K.custom("dual modes: dst is the half of src", _dual_shape, "STRUCT_SHAPE"),
                 K.custom("dual modes: the split halves and dst's valid region holds the half", _dual_valid,
                          "STRUCT_VALID_REGION"))))

declare(Instruction(
    mnemonic="TMOV_FP", family=Family.MOVEMENT,
    summary="move an accumulator tile with per-column scaling",
    operands=_move_operands(FP_PATHS, fp=True), attrs=(RELU_ATTR,), semantics=_tmov,
    dtypes=FP_TYPES, numerics=EXACT, domain=Domain.SRC, pipe=_pipe_rule(FP_PATHS),
    profile_dtypes=NPU_FP_TYPES,
    doc="dst[i, j] = convert(relu(f32(src[i, j]) * fp[0, j])) over src's valid region (inside "
        "dst's valid region); acc -> mat/vec on the fixpipe (acc -> mat only on a2/a3; profiles cannot "
        "narrow locations)." + FP_DOC,
    special_values="Products follow IEEE f32 (0 * inf = NaN, overflow ±inf); " + CONV_SPECIAL,
    example=Example({"dst": "!pto.tile<16x16xf16, loc=mat, layout=NZ>",
                     "src": "!pto.tile<16x16xi32, loc=acc, layout=NZ>",
                     "fp": "!pto.tile<1x16xf32, loc=scaling>"}),
    constraints=(MOVE_SHAPE, *_covers("dst", "src"),
                 K.fixed("fp", "rows", 1), K.at_least("fp", "cols", "src", "cols"),
                 _loc_rule(FP_PATHS))))

_A2_EXTRACT = (dt.I8, dt.F16, dt.BF16, dt.F32)
# a5/TExtract.hpp (is_textract_supported_type, also a6's) and a5/TInsert.hpp list hifloat8, the fp4
# pairs and float8_e8m0_t beside the fp8 types: moved as codes, bit for bit, as TMOV moves them
_CPU_WINDOWED = dt.STORABLE + dt.CPU_MOVABLE_CODED
_WINDOW_SRC, _WINDOW_DST = _covers("src", "dst"), _covers("dst", "src")
_OOB = ("A window outside the valid region (negative offsets included) raises RUNTIME_OOB; "
        "A2/A3 alignment of offsets to 16 rows / 32 bytes is a profile rule, not checked here. ")

declare(Instruction(
    mnemonic="TEXTRACT", family=Family.MOVEMENT, summary="extract a sub-tile at an offset",
    operands=_move_operands(EXTRACT_PATHS) + (SCALE_OPERAND,) + OFFSETS, semantics=_textract,
    attrs=(RELU_ATTR,),
    dtypes=_move_rules(_CPU_WINDOWED, A5_PAIRS),
    profile_dtypes=_move_profiles(_A2_EXTRACT, _A2_EXTRACT + (dt.U8,) + dt.FP8 + dt.MOVABLE_CODED, scaled=True),
    profile_forms=SCALED_FORMS,
    numerics=MOVE_NUMERICS, domain=Domain.DST, pipe=_pipe_rule(EXTRACT_PATHS),
    doc="dst[i, j] = convert(relu(src[r0 + i, c0 + j])) over dst's valid region; the window "
        "[r0, r0 + dst.valid_rows) x [c0, c0 + dst.valid_cols) must lie inside src's valid "
        "region (the public CPU simulator instead requires the window to reach src's last valid "
        "row/column; we allow any window). Data paths: mat -> left/right (MTE1), mat -> scale_left/"
        "scale_right (MTE1: an MX or HiF4 scale window, as TMOV's; the copy is logical, the hardware's "
        "16-row / 16-column box granularity of the offsets is not checked), vec -> mat, acc -> mat with "
        "f32 -> f16/bf16 conversion (FIX), vec -> vec (V). hifloat8, fp4 and f8e8m0 tiles (cpu, A5, A6) "
        "and i4 ones (cpu) move as their codes (decision 'TEXTRACT / TINSERT codes and scale windows'). "
        "relu (the public reluMode) as TMOV's." + SCALED_DOC + " The public form is TEXTRACT(dst, src, preQuantScalar, indexRow, "
        "indexCol): the scale comes before the offsets.",
    special_values=_OOB + CONV_SPECIAL + _SCALE_SPECIAL,
    example=Example({"dst": "!pto.tile<16x16xf16, loc=left, layout=NZ>",
                     "src": "!pto.tile<32x32xf16, loc=mat, layout=NZ>",
                     "r0": "index", "c0": "index"}, scalars={"r0": 16, "c0": 0}),
    more_examples=(Example({"dst": "!pto.tile<16x16xf16, loc=mat, layout=NZ>",
                            "src": "!pto.tile<16x16xf32, loc=acc, layout=NZ>",
                            "r0": "index", "c0": "index"}, scalars={"r0": 0, "c0": 0}),
                   Example({"dst": "!pto.tile<16x32xu8, loc=mat, layout=NZ>",
                            "src": "!pto.tile<32x32xi32, loc=acc, layout=NZ>", "preQuantScalar": "f32",
                            "r0": "index", "c0": "index"},
                           scalars={"preQuantScalar": 0.25, "r0": 16, "c0": 0})),
    constraints=form_rules(_plain_pairs(_CPU_WINDOWED), A5_PAIRS) + _WINDOW_SRC
    + (_loc_rule(EXTRACT_PATHS), CONVERT_RULE)))

declare(Instruction(
    mnemonic="TEXTRACT_FP", family=Family.MOVEMENT,
    summary="extract an accumulator sub-tile with per-column scaling",
    operands=_move_operands(FP_PATHS, fp=True) + OFFSETS, semantics=_textract, attrs=(RELU_ATTR,),
    dtypes=FP_TYPES, numerics=EXACT, domain=Domain.DST, pipe=_pipe_rule(FP_PATHS), profile_dtypes=NPU_FP_TYPES,
    doc="dst[i, j] = convert(relu(f32(src[r0 + i, c0 + j]) * fp[0, j])) over dst's valid region; the "
        "window must lie inside src's valid region." + FP_DOC,
    special_values=_OOB + "Products follow IEEE f32; " + CONV_SPECIAL,
    example=Example({"dst": "!pto.tile<16x16xf16, loc=mat, layout=NZ>",
                     "src": "!pto.tile<32x32xf32, loc=acc, layout=NZ>",
                     "fp": "!pto.tile<1x16xf32, loc=scaling>", "r0": "index", "c0": "index"},
                    scalars={"r0": 0, "c0": 16}),
    constraints=_WINDOW_SRC + (K.fixed("fp", "rows", 1), K.at_least("fp", "cols", "dst", "cols"),
                               _loc_rule(FP_PATHS))))

declare(Instruction(
    mnemonic="TINSERT", family=Family.MOVEMENT, summary="insert a tile into another at an offset",
    operands=_move_operands(INSERT_PATHS, Role.INOUT) + (SCALE_OPERAND,) + OFFSETS, semantics=_tinsert,
    attrs=(Attr("mode", AccToVecMode, AccToVecMode.SingleModeVec0,
                "acc -> vec: the vector sub-block that receives the tile, or the split between both"),
           RELU_ATTR),
    dtypes=_move_rules(_CPU_WINDOWED, A5_PAIRS),
    profile_dtypes=_move_profiles(NPU_STORABLE, dt.STORABLE + dt.MOVABLE_CODED, scaled=True),
    profile_forms=SCALED_FORMS,
    numerics=MOVE_NUMERICS, domain=Domain.SPECIAL, pipe=_pipe_rule(INSERT_PATHS),
    doc="dst[r0 + i, c0 + j] = convert(relu(src[i, j])) over src's valid region; every other element "
        "of dst keeps its value. The window must lie inside dst's valid region. Data paths: "
        "acc -> mat with f32 -> f16/bf16 conversion (FIX), vec -> mat (MTE3), vec -> vec (V), acc -> "
        "vec (FIX; A5's TInsertAccToVec, which a2/a3 accept too as the profile tables cannot narrow "
        "locations). hifloat8, fp4 and f8e8m0 tiles (cpu, A5) and i4 ones (cpu) move as their codes. "
        "mode (AccToVecMode, acc -> vec only) as TMOV's: a functional run is vector "
        "sub-block 0, so SingleModeVec1 writes nothing, DualModeSplitM inserts the upper "
        "src.valid_rows / 2 rows and DualModeSplitN the left src.valid_cols / 2 columns at (r0, c0); "
        "the split rules, same dtype and no DN dst are TMOV's (the window check applies to the half). "
        "relu (the public reluMode) as TMOV's." + SCALED_DOC + " The public form is TINSERT(dst, src, "
        "preQuantScalar, indexRow, indexCol); the dual modes take no scale (STRUCT_ATTR_VALUE).",
    special_values=_OOB + CONV_SPECIAL + _SCALE_SPECIAL,
    example=Example({"dst": "!pto.tile<32x32xf16, loc=mat, layout=NZ>",
                     "src": "!pto.tile<16x16xf32, loc=acc, layout=NZ>",
                     "r0": "index", "c0": "index"}, scalars={"r0": 16, "c0": 16}),
    more_examples=(Example({"dst": "!pto.tile<16x32xf32>", "src": "!pto.tile<16x16xf32, loc=acc, layout=NZ>",
                            "r0": "index", "c0": "index"}, {"mode": AccToVecMode.DualModeSplitM},
                           scalars={"r0": 4, "c0": 8}),
                   Example({"dst": "!pto.tile<32x32xf16, loc=mat, layout=NZ>",
                            "src": "!pto.tile<16x16xi32, loc=acc, layout=NZ>", "preQuantScalar": "f32",
                            "r0": "index", "c0": "index"}, {"relu": ReluMode.RELU},
                           scalars={"preQuantScalar": -0.125, "r0": 16, "c0": 0})),
    constraints=form_rules(_plain_pairs(_CPU_WINDOWED), A5_PAIRS) + tuple(map(_unless_dual, _WINDOW_DST)) + (
        _loc_rule(INSERT_PATHS), CONVERT_RULE,
        K.custom("mode only on acc -> vec moves; dual modes: same dtype, no scale, no DN dst", _mode_path,
                 "STRUCT_ATTR_VALUE"),
        K.custom("dual modes: the split halves and dst's valid region holds the half", _dual_valid,
                 "STRUCT_VALID_REGION"))))

declare(Instruction(
    mnemonic="TINSERT_FP", family=Family.MOVEMENT,
    summary="insert an accumulator tile with per-column scaling",
    operands=_move_operands(FP_PATHS, Role.INOUT, fp=True) + OFFSETS, semantics=_tinsert,
    attrs=(RELU_ATTR,), dtypes=FP_TYPES, numerics=EXACT, domain=Domain.SPECIAL, pipe=_pipe_rule(FP_PATHS),
    profile_dtypes=NPU_FP_TYPES,
    doc="dst[r0 + i, c0 + j] = convert(relu(f32(src[i, j]) * fp[0, j])) over src's valid region; every "
        "other element of dst keeps its value; the window must lie inside dst's valid region."
        + FP_DOC,
    special_values=_OOB + "Products follow IEEE f32; " + CONV_SPECIAL,
    example=Example({"dst": "!pto.tile<32x32xbf16, loc=mat, layout=NZ>",
                     "src": "!pto.tile<16x16xf32, loc=acc, layout=NZ>",
                     "fp": "!pto.tile<1x16xf32, loc=scaling>", "r0": "index", "c0": "index"},
                    scalars={"r0": 0, "c0": 16}),
    constraints=_WINDOW_DST + (K.fixed("fp", "rows", 1), K.at_least("fp", "cols", "src", "cols"),
                               _loc_rule(FP_PATHS))))

# ------------------------------------------------------------------------------ TTRANS


def _ttrans(dst: Tile, src: Tile, tmp: Tile | None = None) -> None:
    r, c = src.valid
    _check_fits(dst, c, r)
    dst.write(src.read(r, c).T, c, r)


_TRANS_TYPES = B124 + dt.FP8 + (dt.I1,)
declare(Instruction(
    mnemonic="TTRANS", family=Family.MOVEMENT, summary="transpose a tile",
    operands=(tile_out(), tile_in("src"),
              Operand("tmp", Role.OUT, Kind.TILE, "scratch tile some targets use; contents "
                      "afterwards unspecified", optional=True, locations=(VEC,))),
    semantics=_ttrans,
    dtypes=tuples(("dst", "src"), [(d, d) for d in _TRANS_TYPES]),
    profile_dtypes={p: tuples(("dst", "src"), [(d, d) for d in B124]) for p in ("a2", "a3", "a5")},
    numerics=EXACT, domain=Domain.SPECIAL, pipe=Pipe.V,
    doc="dst[j, i] = src[i, j] for i < src.valid_rows, j < src.valid_cols (the source's valid "
        "region, transposed; it must lie inside dst's valid region). Static shapes are "
        "transposed (dst is src.cols x src.rows: A5 transposes the whole static tile), both "
        "row-major vec tiles. The optional tmp is the public C++ scratch operand; the semantics "
        "do not use it.",
    special_values="Bit copy: NaN payloads, -0 and denormals are kept.",
    example=Example({"dst": "!pto.tile<16x8xf32>", "src": "!pto.tile<8x16xf32>",
                     "tmp": "!pto.tile<8x16xf32>"}),
    constraints=(K.equal("dst", "rows", "src", "cols"), K.equal("dst", "cols", "src", "rows"),
                 K.at_least("dst", "valid_rows", "src", "valid_cols", "STRUCT_VALID_REGION"),
                 K.at_least("dst", "valid_cols", "src", "valid_rows", "STRUCT_VALID_REGION"),
                 K.layout_in("dst", Layout.ND), K.layout_in("src", Layout.ND))))

# ------------------------------------------------------------------------------ TRESHAPE


def inner_box(t: TileType) -> tuple[int, int]:
    """Fractal box of a boxed layout (16x16 in acc, else 512 bytes: 16 x 32/itemsize, ZN
    transposed), as the profiles' alignment rule sees it."""
    return fractal_box(t.layout, t.dtype.itemsize, t.loc)


def layout_offsets(t: TileType) -> np.ndarray:
    """offsets[r, c] = position of element (r, c) in the tile's physical element order
    (the public GetTileOffset formulas; IR x IC is the fractal box)."""
    r, c = np.indices(t.shape)
    rows, cols = t.shape
    ir, ic = inner_box(t)
    box = (r // ir) * cols * ir + (c // ic) * ir * ic    # ZN/ZZ: row of boxes, then box column
    return {
        Layout.ND: r * cols + c,
        Layout.DN: c * rows + r,
        Layout.NZ: (c // ic) * rows * ic + r * ic + c % ic,  # column of boxes; rows within it
        Layout.ZN: box + (c % ic) * ir + r % ir,
        Layout.ZZ: box + (r % ir) * ic + c % ic,
    }[t.layout]


def _physical(t: TileType, values: np.ndarray) -> np.ndarray:
    """The tile's elements as a flat array in physical order."""
    flat = np.empty(t.rows * t.cols, dtype=values.dtype)
    flat[layout_offsets(t).ravel()] = values.ravel()
    return flat


def _treshape(dst: Tile, src: Tile) -> None:
    valid = np.zeros(src.type.shape, dtype=np.uint8)
    valid[: src.valid[0], : src.valid[1]] = 1
    byte_ok = np.repeat(_physical(src.type, valid), src.dtype.itemsize)
    dst_ok = byte_ok.reshape(-1, dst.dtype.itemsize).all(axis=1)[layout_offsets(dst.type)]
    r, c = dst.valid
    if not dst_ok[:r, :c].all():
        raise RuntimeFault("RUNTIME_INVALID_READ",
                           "TRESHAPE reads bytes outside src's valid region",
                           expected=f"dst valid region {r}x{c} built from valid src bytes",
                           actual=f"src valid region {src.valid[0]}x{src.valid[1]}")
    data = _physical(src.type, src.data).view(np.uint8).view(dst.dtype.np_dtype)
    dst.write(data[layout_offsets(dst.type)][:r, :c], r, c)


def _reshape_rules(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    pair = _tile_pair(types)
    if not pair:
        return None
    s, d = pair
    if s.nbytes != d.nbytes:
        return f"src has {s.nbytes} bytes, dst {d.nbytes}"
    if s.loc is not d.loc:
        return f"src is in {s.loc.value}, dst in {d.loc.value}"
    for t in (s, d):
        if t.layout.scale_box is not None:
            return f"{t.layout.value} scale tiles are not reshaped (their boxes may be partial: rows are free)"
    if s.layout.boxed != d.layout.boxed:
        return f"cannot reshape {s.layout.value} into {d.layout.value} (boxed vs unboxed)"
    return None


def _box_aligned(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    """Offsets are a permutation only for whole boxes (NZ stacks rows, so any row count)."""
    for name in ("dst", "src"):
        t = types.get(name)
        if isinstance(t, TileType) and t.layout.boxed:
            ir, ic = inner_box(t)
            if t.cols % ic or (t.rows % ir and t.layout is not Layout.NZ):
                return f"{name} {t.rows}x{t.cols} is not a whole number of {ir}x{ic} fractals"
    return None


_RESHAPE_TYPES = tuple(d for d in dt.STORABLE if d is not dt.I1)
declare(Instruction(
    mnemonic="TRESHAPE", family=Family.MOVEMENT, summary="reinterpret a tile's bytes",
    operands=(tile_out(locations=None), tile_in("src", locations=None)), semantics=_treshape,
    dtypes=tuples(("dst", "src"), [(a, b) for a in _RESHAPE_TYPES for b in _RESHAPE_TYPES]),
    profile_dtypes={p: tuples(("dst", "src"), [(a, b) for a in NPU_STORABLE if a is not dt.I1
                                               for b in NPU_STORABLE if b is not dt.I1])
                    for p in ("a2", "a3")},
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.S,
    doc="Reinterprets src's bytes as dst: both tiles' elements are laid out in their physical "
        "order (ND r*C+c, DN c*R+r, NZ/ZN/ZZ by fractal boxes: 16 x 32/itemsize for 512-byte "
        "fractals, ZN transposed, 16x16 in acc) and dst takes the byte string of src. Equal "
        "total bytes, same location, both boxed or both unboxed (boxed tiles hold whole "
        "fractal columns; ZN/ZZ whole fractals); the scale layouts ZZ_MX/NN_MX are not reshaped. "
        "dst's valid region must be built from bytes of src's valid region "
        "(RUNTIME_INVALID_READ otherwise). A2/A3 alias dst to src's storage, the public CPU "
        "copies: after TRESHAPE, writing either tile leaves the other unspecified.",
    special_values="Bit reinterpretation: NaN payloads, -0, denormals kept; no conversion.",
    example=Example({"dst": "!pto.tile<1x16xf32>", "src": "!pto.tile<16x1xf32, layout=DN>"}),
    constraints=(K.custom("equal bytes, same location, boxed on both sides or neither",
                          _reshape_rules, "LEGAL_LAYOUT"),
                 K.custom("boxed tiles hold whole fractals", _box_aligned, "LEGAL_LAYOUT"))))

# ------------------------------------------------------------------------------ TFILLPAD


_PAD: dict[PadValue, Callable[[dt.DType], float | int]] = {
    PadValue.ZERO: lambda d: 0,
    PadValue.MAX: lambda d: np.inf if d.is_float else d.max,
    PadValue.MIN: lambda d: -np.inf if d.is_float else d.min,
}


def pad_value(pad: PadValue, d: dt.DType) -> np.ndarray:
    """The element TFILLPAD writes: 0, or ±inf for floats and the integer max/min."""
    return np.array(_PAD[pad](d)).astype(d.np_dtype)


def _fill(dst: Tile, region: np.ndarray) -> None:
    out = np.full(dst.type.shape, pad_value(dst.type.pad, dst.dtype), dtype=dst.dtype.np_dtype)
    out[: region.shape[0], : region.shape[1]] = region
    dst.data[...] = out


def _tfillpad(dst: Tile, src: Tile) -> None:
    _fill(dst, src.region())


def _tfillpad_inplace(dst: Tile) -> None:
    _fill(dst, dst.region())


def _pad_rules(name: str) -> Constraint:
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        t = types.get(name)
        if not isinstance(t, TileType):
            return None
        if t.pad is PadValue.NULL:
            return f"{name} has pad=null; TFILLPAD needs zero, max or min"
        if t.loc is MAT and (t.layout is not Layout.NZ or t.pad is not PadValue.ZERO):
            return f"a mat {name} must be NZ with pad=zero"
        return None
    return K.custom(f"{name}.pad is not null; mat tiles are NZ with pad=zero", check, "LEGAL_PAD")


def _fill_pipe(types: Mapping[str, Type]) -> Pipe:
    d = types.get("dst")
    return Pipe.MTE2 if isinstance(d, TileType) and d.loc is MAT else Pipe.V


_FILL_LOCS = (VEC, MAT)
_FILL_TYPES = tuples(("dst", "src"), [(d, d) for d in B124])
_FILL_SPECIAL = ("Copied elements keep their bits. Pads: zero = 0 (+0.0), max = +inf (floats) / "
                 "the integer maximum, min = -inf / the integer minimum (i8 -128: the public NPU "
                 "code writes -1 there, the CPU -128).")


def _same_loc(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    pair = _tile_pair(types)
    if pair and pair[0].loc is not pair[1].loc:
        return f"src is in {pair[0].loc.value}, dst in {pair[1].loc.value}"
    return None


_SAME_LOC = K.custom("dst and src share a location", _same_loc, "LEGAL_LOCATION")


def _fillpad(mnemonic: str, summary: str, shape_rules: tuple[Constraint, ...], doc: str,
             example: Example) -> None:
    declare(Instruction(
        mnemonic=mnemonic, family=Family.MOVEMENT, summary=summary,
        operands=(tile_out(locations=_FILL_LOCS), tile_in("src", locations=_FILL_LOCS)),
        semantics=_tfillpad, dtypes=_FILL_TYPES, numerics=EXACT, domain=Domain.STATIC_DST,
        pipe=_fill_pipe, special_values=_FILL_SPECIAL, example=example,
        doc=doc + " Every element of dst's static tile is written: src's valid region is "
                  "copied, every other element gets dst's pad value (dst.pad must not be null). "
                  "Vec tiles run on V; mat tiles (NZ, pad=zero only) on MTE2.",
        constraints=shape_rules + (_pad_rules("dst"), _SAME_LOC)))


_fillpad("TFILLPAD", "copy a tile and pad it to its static shape", (K.same_shape("dst", "src"),),
         "dst[i, j] = src[i, j] inside src's valid region, pad(dst.pad) elsewhere; equal static "
         "shapes.",
         Example({"dst": "!pto.tile<16x16xf32, pad=max>",
                  "src": "!pto.tile<16x16xf32, valid=12x10>"}))
_fillpad("TFILLPAD_EXPAND", "copy a tile into a larger one and pad the rest",
         (K.at_least("dst", "rows", "src", "rows"), K.at_least("dst", "cols", "src", "cols")),
         "As TFILLPAD, but dst's static shape may exceed src's (dst.rows >= src.rows, "
         "dst.cols >= src.cols).",
         Example({"dst": "!pto.tile<32x64xi8, pad=min>", "src": "!pto.tile<16x32xi8, valid=16x7>"}))

declare(Instruction(
    mnemonic="TFILLPAD_INPLACE", family=Family.MOVEMENT, summary="pad a tile in place",
    operands=(tile_inout("dst", "tile padded in place", locations=_FILL_LOCS),),
    semantics=_tfillpad_inplace, dtypes=tuples(("dst",), [(d,) for d in B124]), numerics=EXACT,
    domain=Domain.STATIC_DST, pipe=_fill_pipe, special_values=_FILL_SPECIAL,
    doc="TFILLPAD with dst == src: dst keeps its valid region and every element outside it gets "
        "pad(dst.pad) (not null). Vec tiles run on V; mat tiles (NZ, pad=zero only) on MTE2.",
    example=Example({"dst": "!pto.tile<16x16xf16, valid=9x5, pad=min>"}),
    constraints=(_pad_rules("dst"),)))

# ------------------------------------------------------------------------------ TIMG2COL

# im2col geometry attribute -> default (None = required); pads may be 0, everything else >= 1.
_GEOMETRY: dict[str, int | None] = {
    "height": None, "width": None, "kernel_h": None, "kernel_w": None, "stride_h": 1,
    "stride_w": 1, "dilation_h": 1, "dilation_w": 1, "pad_top": 0, "pad_bottom": 0,
    "pad_left": 0, "pad_right": 0}


#: Every geometry value and each side of the im2col matrix stays below 2^31, so the index
#: arithmetic over them (a product of two plus a sum) fits the i64 every backend computes in.
_GEOMETRY_MAX = (1 << 31) - 1


def _out_size(n: int, k: int, stride: int, dilation: int, pad: int) -> int:
    return (n + pad - dilation * (k - 1) - 1) // stride + 1


def _out_hw(a: Mapping[str, int]) -> tuple[int, int]:
    return (_out_size(a["height"], a["kernel_h"], a["stride_h"], a["dilation_h"],
                      a["pad_top"] + a["pad_bottom"]),
            _out_size(a["width"], a["kernel_w"], a["stride_w"], a["dilation_w"],
                      a["pad_left"] + a["pad_right"]))


def _as_dtype(value: int, d: dt.DType) -> np.ndarray:
    """An integer attribute in the tile dtype (floats round nearest-even; integers fit)."""
    with np.errstate(all="ignore"):
        return np.array(value).astype(d.np_dtype)


def _timg2col(dst: Tile, src: Tile, m0: int, k0: int, **a: int) -> None:
    (r, c), m0, k0 = dst.valid, int(m0), int(k0)
    h, w, kw, ch = a["height"], a["width"], a["kernel_w"], src.valid[1]
    (oh, ow), cols = _out_hw(a), a["kernel_h"] * kw * ch
    if m0 < 0 or k0 < 0 or m0 + r > oh * ow or k0 + c > cols:
        raise RuntimeFault("RUNTIME_OOB", "the im2col window leaves the im2col matrix",
                           expected=f"rows in [0, {oh * ow}), cols in [0, {cols})",
                           actual=f"rows [{m0}, {m0 + r}), cols [{k0}, {k0 + c})")
    fmap = src.read(h * w, ch, "feature map")
    if r * c == 0:
        return
    m, k = np.ogrid[m0:m0 + r, k0:k0 + c]
    ih = (m // ow) * a["stride_h"] - a["pad_top"] + (k // (kw * ch)) * a["dilation_h"]
    iw = (m % ow) * a["stride_w"] - a["pad_left"] + (k // ch % kw) * a["dilation_w"]
    inside = (ih >= 0) & (ih < h) & (iw >= 0) & (iw < w)
    picked = fmap[np.clip(ih, 0, h - 1) * w + np.clip(iw, 0, w - 1), k % ch]
    dst.write(np.where(inside, picked, _as_dtype(a["pad_value"], dst.dtype)), r, c)


def _img2col_rules(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    a = {n: attrs.get(n, default) for n, default in _GEOMETRY.items()}
    if None in a.values():
        return None                     # a missing required attribute is reported on its own
    small = [n for n in _GEOMETRY if not (0 if n.startswith("pad_") else 1) <= a[n] <= _GEOMETRY_MAX]
    if small:
        return (f"{', '.join(small)} out of range (sizes, strides, dilations >= 1; pads >= 0; "
                f"all <= {_GEOMETRY_MAX})")
    oh, ow = _out_hw(a)
    if oh < 1 or ow < 1:
        return f"the kernel does not fit the padded feature map (output {oh}x{ow})"
    src, dst = types.get("src"), types.get("dst")
    cols = a["kernel_h"] * a["kernel_w"] * (src.cols if isinstance(src, TileType) else 1)
    if oh * ow > _GEOMETRY_MAX or cols > _GEOMETRY_MAX:
        return (f"the im2col matrix ({oh * ow} x {cols}) has a side above {_GEOMETRY_MAX}, "
                "beyond what 64-bit index arithmetic over it can hold")
    pixels = a["height"] * a["width"]
    if isinstance(src, TileType) and src.rows < pixels:
        return f"src has {src.rows} rows, the feature map needs height * width = {pixels}"
    pv = attrs.get("pad_value", 0)
    if isinstance(dst, TileType) and dst.dtype.is_int and not dst.dtype.min <= pv <= dst.dtype.max:
        return f"pad_value {pv} does not fit {dst.dtype}"
    return None


_I2C_A2 = (dt.F16, dt.BF16, dt.F32, dt.I8)
declare(Instruction(
    mnemonic="TIMG2COL", family=Family.MOVEMENT, summary="im2col window of a feature map",
    operands=(tile_out("dst", "im2col window", locations=(LEFT,)),
              tile_in("src", "feature map: row h * width + w, column = channel", locations=(MAT,)),
              index_in("m0", "first output position (im2col row)", bounds=(0, None)),
              index_in("k0", "first im2col column", bounds=(0, None))),
    attrs=tuple(Attr(n, int, v, f"im2col geometry: {n.replace('_', ' ')}")
                for n, v in _GEOMETRY.items())
    + (Attr("pad_value", int, 0, "value read at padded positions"),),
    semantics=_timg2col,
    dtypes=tuples(("dst", "src"), [(d, d) for d in dt.FLOATS + dt.FP8 + dt.INTS_32]),
    profile_dtypes={p: tuples(("dst", "src"), [(d, d) for d in _I2C_A2])
                    for p in ("a2", "a3", "a5")},
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.MTE1,
    doc="The feature map is a 2-D tile of (height * width) x C: element (h, w, c) is src[h * width "
        "+ w, c], C = src.valid_cols. With OH = (height + pad_top + pad_bottom - dilation_h * "
        "(kernel_h - 1) - 1) // stride_h + 1 (OW likewise), the im2col matrix has OH * OW rows "
        "(m = oh * OW + ow) and kernel_h * kernel_w * C columns (k = (kh * kernel_w + kw) * C + c, "
        "channel fastest); entry (m, k) is src at ih = oh * stride_h - pad_top + kh * dilation_h, "
        "iw = ow * stride_w - pad_left + kw * dilation_w, or pad_value when (ih, iw) is outside "
        "the map. dst[i, j] = im2col[m0 + i, k0 + j] over dst's valid region (the public posM / "
        "posK split). All geometry is in attributes, so the instruction is self-contained; "
        "TSETFMATRIX / TSET_IMG2COL_* state is for hardware lowering and does not change it. The "
        "hardware's NC1HWC0 feature map is this map with C split into C1 x C0 by the layout.",
    special_values="Bit copy of feature-map elements; pad_value is converted to the dtype "
                   "(floats nearest-even, integers must fit). A window outside the im2col matrix "
                   "raises RUNTIME_OOB.",
    example=Example({"dst": "!pto.tile<16x144xf16, loc=left, layout=NZ>",
                     "src": "!pto.tile<16x16xf16, loc=mat>", "m0": "index", "k0": "index"},
                    {"height": 4, "width": 4, "kernel_h": 3, "kernel_w": 3, "pad_top": 1,
                     "pad_bottom": 1, "pad_left": 1, "pad_right": 1}, {"m0": 0, "k0": 0}),
    constraints=(K.custom("geometry gives a non-empty output; src holds height * width rows; "
                          "pad_value fits the dtype", _img2col_rules, "STRUCT_ATTR"),)))
