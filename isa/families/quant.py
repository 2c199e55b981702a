"""Quantisation: integer dequantisation (TDEQUANT), MX quantisation grouped along rows (TQUANT_DN)
and the pre-quantisation state that later moves read (SET_QUANT_SCALAR, SET_QUANT_VECTOR).

The state instructions write nothing into tiles: like TSETFMATRIX they record their values into
the optional ``state`` dict a backend passes in, under the keys in ``STATE_KEYS``. Their one reader
is a TPUSH with a scalar or vector ``Quant`` mode (system.py, _prequant.fixpipe_values), which reads
them when it runs; the moves and TSTORE take their scale as an operand:

* ``state["quant_scalar"] = {"scale": np.float32, "out_type": QuantOutType}``
* ``state["quant_vector"] = {"fp": Tile}``: the scaling tile itself, not a copy, because the
  hardware register holds the tile's address; a consumer reads its values when it runs.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .. import constraints as K
from .. import dtypes as dt
from .. import fp4, hifloat4
from ..attrs import MxQuantAlg, QuantOutType
from ..diagnostics import RuntimeFault
from ..registry import declare
from ..spec import Attr, Constraint, Domain, EXACT, Example, Family, Instruction, Operand, same, tuples
from ..types import Layout, Location, Pipe, TileType, Type
from ..values import Tile
from ._helpers import scalar_in, tile_in, tile_inout, tile_out
from ._prequant import QUANT_SCALAR_KEY, QUANT_VECTOR_KEY

STATE_KEYS = {"SET_QUANT_SCALAR": QUANT_SCALAR_KEY, "SET_QUANT_VECTOR": QUANT_VECTOR_KEY}


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
_CONSUMER = (" The instruction that reads this state is TPUSH with a pre-quantising Quant mode (the public "
             "FixpipeParams quant mode of its TConfig overload; decision 'Pre-quantising TPUSH'): scalar "
             "modes read the scale (their i8 modes also need OutType I8), vector modes the tile, each when "
             "the push runs; a push finding no state is RUNTIME_QUANT_STATE. A later SET_QUANT_* replaces "
             "the earlier configuration. TMOV, TEXTRACT, TINSERT and TSTORE take their scale as an operand "
             "(preQuantScalar, or the fp tile of the _FP forms) and ignore the state.")


def _set_quant_scalar(preQuantScalar: float, OutType: QuantOutType,  # noqa: N803
                      state: dict | None = None) -> None:
    _record(state, "SET_QUANT_SCALAR", {"scale": np.float32(preQuantScalar), "out_type": OutType})


def _set_quant_vector(fp: Tile, state: dict | None = None) -> None:
    _record(state, "SET_QUANT_VECTOR", {"fp": fp})


declare(Instruction(
    mnemonic="SET_QUANT_SCALAR", family=Family.SYNC, summary="set the scalar pre-quantisation scale",
    operands=(scalar_in("preQuantScalar", "f32 scale later pre-quantising moves multiply by"),),
    attrs=(Attr("OutType", QuantOutType, None, "element type the consuming push writes: I8, U8, I16, F16 "
                                               "or BF16 (the register keeps only an 8-bit sign flag)"),),
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
        "push reads fp[0, j] for its column j when it runs, so writing fp between SET_QUANT_VECTOR and "
        "the push changes the scales it uses. fp must live in the scaling buffer (the public "
        "static_assert) and is 1 x N f32, as TSTORE_FP's scale tile."
        + _STATE_DOC.format(fields="{'fp': the tile}", key="quant_vector") + _CONSUMER,
    special_values="No values are computed or read.",
    example=Example({"fp": "!pto.tile<1x128xf32, loc=scaling>"}),
    constraints=(K.fixed("fp", "rows", 1),)))


# ----------------------------------------------------------------------------- TQUANT_DN

MX_GROUP = 32            # rows sharing one E8M0 exponent
E4M3_MAX = 448.0         # largest finite f8e4m3 magnitude (saturation bound)
E4M3_NAN = 0x7F          # the NaN code written for any NaN
_E4M3_EMAX = 8           # f8e4m3's largest exponent: OCP scale exponent = exponent(max) - 8
E2M1_MAX = 6.0           # largest E2M1 magnitude (the NV rule divides by it)
E2M1_EMAX = 2            # E2M1's largest exponent
E8M0_NAN = 0xFF          # the exponent of an FP4 group holding a NaN
FP4_NAN_GROUP_CODE = 0x7  # what every element of such a group becomes (+6, the public CPU model)
FP4_ALGS = (MxQuantAlg.OcpMxFp4E2M1, MxQuantAlg.NvMxFp4E2M1)


def _group_max(x: np.ndarray, rows: int) -> np.ndarray:
    """max |x| of each 32-row group per column (NaN ignored, 0 for none): ceil(rows/32) x cols.
    NaNs are replaced by 0 first: np.fmax lets a signalling NaN through (C fmax does)."""
    a = np.where(np.isnan(x), np.float32(0), np.abs(x))
    groups = [np.max(a[g:g + MX_GROUP], axis=0, initial=np.float32(0)) for g in range(0, rows, MX_GROUP)]
    return np.array(groups, np.float32).reshape(len(groups), x.shape[1])


def _ocp_exponent(m: np.ndarray, emax: int = _E4M3_EMAX) -> np.ndarray:
    biased = (m.view(np.uint32) >> 23) & 0xFF
    return np.where(biased <= emax, 0, biased - emax).astype(np.uint32)


def _nv_exponent(m: np.ndarray, largest: float = E4M3_MAX) -> np.ndarray:
    d = m * (np.float32(1) / np.float32(largest))             # f32 product, rounded once
    bits = d.view(np.uint32)
    biased, mant = (bits >> 23) & 0xFF, bits & 0x7FFFFF
    up = (mant > 0) & (biased != 0xFE) & ~((biased == 0) & (mant <= 0x400000))
    e = np.where(biased == 0xFF, 0xFE, biased + up)
    return np.where(m == 0, 0, e).astype(np.uint32)


_EXPONENT = {MxQuantAlg.OcpMxFp8E4M3: _ocp_exponent, MxQuantAlg.NvMxFp8E4M3: _nv_exponent,
             MxQuantAlg.OcpMxFp4E2M1: lambda m: _ocp_exponent(m, E2M1_EMAX),
             MxQuantAlg.NvMxFp4E2M1: lambda m: _nv_exponent(m, E2M1_MAX)}
#: the element type each algorithm writes
MX_DST = {MxQuantAlg.OcpMxFp8E4M3: dt.F8E4M3, MxQuantAlg.NvMxFp8E4M3: dt.F8E4M3,
          MxQuantAlg.OcpMxFp4E2M1: dt.FP4_E2M1, MxQuantAlg.NvMxFp4E2M1: dt.FP4_E2M1}


def _scale(e: np.ndarray) -> np.ndarray:
    """2 ** (127 - e) in f32 for exponent codes 0 .. 254 (254 gives the subnormal 2 ** -127)."""
    return np.ldexp(np.float32(1), 127 - e.astype(np.int32)).astype(np.float32)


def _encode_e4m3(v: np.ndarray) -> np.ndarray:
    """f32 -> f8e4m3 codes: saturate to ±448, round to nearest even, any NaN -> 0x7F."""
    codes = np.clip(v, -E4M3_MAX, E4M3_MAX).astype(dt.F8E4M3.np_dtype).view(np.uint8)
    return np.where(np.isnan(v), np.uint8(E4M3_NAN), codes)


def interleave_pairs(e: np.ndarray) -> np.ndarray:
    """The interleaved exponent layout: out[p, 2j + d] = e[2p + d, j], 0 where row 2p + 1 is absent."""
    g, c = e.shape
    padded = np.zeros((2 * -(-g // 2), c), e.dtype)
    padded[:g] = e
    return padded.reshape(-1, 2, c).transpose(0, 2, 1).reshape(-1, 2 * c)


def exp_extent(rows: int, cols: int, interleave: bool) -> tuple[int, int]:
    """The exponent block TQUANT_DN writes for a rows x cols domain."""
    groups = -(-rows // MX_GROUP)
    return (-(-groups // 2), 2 * cols) if interleave else (groups, cols)


def _tquant_dn(dst: Tile, src: Tile, exp: Tile, mx_alg: MxQuantAlg, interleave: bool = False,
               max: Tile | None = None, scaling: Tile | None = None) -> None:  # noqa: A002
    rows, cols = dst.valid
    er, ec = exp_extent(rows, cols, interleave)
    if er > exp.valid[0] or ec > exp.valid[1]:
        raise RuntimeFault("RUNTIME_INVALID_WRITE", "exp is written outside its valid region",
                           expected=f"a {er}x{ec} block inside the valid region",
                           actual=f"valid region {exp.valid[0]}x{exp.valid[1]}")
    x = src.read(rows, cols, "src").astype(np.float32)
    e = _EXPONENT[mx_alg](_group_max(x, rows))
    fp4_alg = mx_alg in FP4_ALGS
    if fp4_alg:       # an FP4 group holding a NaN: exponent 0xFF, every element 0x7
        nan_group = _group_max(np.where(np.isnan(x), np.float32(1), np.float32(0)), rows) > 0
        e = np.where(nan_group, np.uint32(E8M0_NAN), e)
    s = np.repeat(_scale(np.minimum(e, 254)), MX_GROUP, axis=0)[:rows]
    with np.errstate(all="ignore"):
        scaled = (x * s).astype(np.float32)
        if fp4_alg:
            codes = np.where(np.repeat(nan_group, MX_GROUP, axis=0)[:rows], np.uint8(FP4_NAN_GROUP_CODE),
                             fp4.E2M1.encode(scaled))
        else:
            codes = _encode_e4m3(scaled)
    dst.write(codes.view(dst.dtype.np_dtype), rows, cols)
    e8 = e.astype(np.uint8)
    exp.write(interleave_pairs(e8) if interleave else e8)


def _alg_matches(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    d, alg = types.get("dst"), attrs.get("mx_alg")
    if isinstance(d, TileType) and isinstance(alg, MxQuantAlg) and MX_DST[alg] is not d.dtype:
        return f"mx_alg {alg.name} writes {MX_DST[alg]}, dst is {d.dtype}"
    return None


def _exp_short(e: Type | None, want: tuple[int, int]) -> str | None:
    """Why a static exp tile's valid region cannot hold the ``want`` exponent block, or None
    (a dynamic one is checked when it runs)."""
    if isinstance(e, TileType) and not e.dynamic and (e.valid_rows < want[0] or e.valid_cols < want[1]):
        return f"exp valid region {e.valid_rows}x{e.valid_cols} is smaller than the {want[0]}x{want[1]} it receives"
    return None


def _quant_operands(dst: str, src: str, exp: str, max_doc: str, scaling_doc: str) -> tuple[Operand, ...]:
    """The block quantisers' operands: codes out, values in, exponents out, and the public
    targets' two optional scratch tiles (``*_doc``: what they hold there), never accessed."""
    return (tile_out("dst", dst), tile_in("src", src), tile_out("exp", exp),
            tile_inout("max", f"{max_doc} (never accessed)", optional=True),
            tile_inout("scaling", f"{scaling_doc} (never accessed)", optional=True))


def _quant_constraints(*checks: Constraint) -> tuple[Constraint, ...]:
    """The block quantisers' checks: src covers dst, same shape, the form's own ``checks``, and
    every tile in ND."""
    return (K.covers(("src",)), K.same_shape("dst", "src"), *checks,
            *(K.layout_in(n, Layout.ND) for n in ("dst", "src", "exp")))


def _exp_covers(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    d = types.get("dst")
    if not isinstance(d, TileType) or d.dynamic:
        return None
    return _exp_short(types.get("exp"), exp_extent(d.valid_rows, d.valid_cols, bool(attrs.get("interleave", False))))


_DN_DOC = (
    "MX quantisation with groups of 32 consecutive rows (grouping axis 0, the public TQUANT "
    "<grp_axis=0, mx_alg> form; ND and DN name the grouping axis, not the storage). Over dst's valid "
    "region (R x C), for each column j and group g (rows 32g .. min(32g + 32, R) - 1): m = max |src| "
    "over the group in f32, NaN ignored (0 when the group has no number); the E8M0 exponent e is, for "
    "OcpMxFp8E4M3, the biased f32 exponent of m minus 8 (f8e4m3's largest exponent), floored at 0; "
    "for NvMxFp8E4M3, 0 when m = 0, else from d = f32(m * f32(1/448)): its biased exponent plus 1 when "
    "its mantissa is non-zero (not when the exponent is 254, nor for a subnormal d of at most half the "
    "smallest normal), and 254 when d is infinite. The scale is s = 2**(127 - e) (2**-127 for e = "
    "254); dst[i, j] = f8e4m3(clamp(f32(src[i, j] * s), -448, 448)) rounded to nearest even, any NaN "
    "written as 0x7F. exp[g, j] = e (an exp tile of u8 or f8e8m0 holds the same code), or with interleave = true the pairs of row groups side by side: "
    "exp[p, 2j + d] = e of group 2p + d (0 when that group is absent), a ceil(G/2) x 2C block for G = "
    "ceil(R/32) groups. The public targets require R to be a multiple of 32 (64 with interleave); "
    "openpto also accepts a last, shorter group. The optional max and scaling tiles are the targets' "
    "scratch: accepted and never read or written. The FP4 algorithms write float4_e2m1x2 (f16 or "
    "bf16 sources on a5; f32 too on cpu): OcpMxFp4E2M1 takes the biased exponent of m minus 2 (E2M1's "
    "largest exponent), floored at 0; NvMxFp4E2M1 the NV rule with d = f32(m * f32(1/6)); dst[i, j] = "
    "E2M1(f32(src[i, j] * s)) rounded to nearest even and saturated to ±6 (-0 kept). A group holding a "
    "NaN gets exponent 0xFF and every element of it the code 0x7, as the public CPU model writes. "
    "mx_alg must match dst's type (LEGAL_DTYPE).")

declare(Instruction(
    mnemonic="TQUANT_DN", family=Family.COMPLEX,
    summary="MX-quantise to f8e4m3 or fp4 E2M1 in groups of 32 rows",
    operands=_quant_operands("f8e4m3 or float4_e2m1x2 codes, dst's valid region is the domain",
                             "f32, f16 or bf16 values",
                             "E8M0 exponents (u8 or f8e8m0 codes): ceil(R/32) x C (interleave: ceil(R/64) x 2C)",
                             "per-group scratch of the public targets", "per-group scratch of the public targets"),
    attrs=(Attr("mx_alg", MxQuantAlg, None, "destination format and shared-exponent rule (OCP or NV)"),
           Attr("interleave", bool, False, "write the exponents of row-group pairs side by side")),
    semantics=_tquant_dn,
    dtypes=tuples(("dst", "src", "exp"), [(d, s, e) for d in (dt.F8E4M3, dt.FP4_E2M1)
                                          for s in (dt.F32, dt.F16, dt.BF16) for e in dt.SCALE_CODES]),
    profile_dtypes={"a5": tuples(("dst", "src", "exp"), [(dt.F8E4M3, s, e) for s in (dt.F32, dt.F16, dt.BF16)
                                                         for e in dt.SCALE_CODES]
                                 + [(dt.FP4_E2M1, s, e) for s in (dt.F16, dt.BF16) for e in dt.SCALE_CODES])},
    profiles=("cpu", "a5"), numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc=_DN_DOC,
    special_values="NaN inputs are ignored by the group maximum and encode as 0x7F; ±inf makes the "
                   "group's exponent 247 (OCP) or 254 (NV) and saturates to ±448; values beyond ±448 "
                   "after scaling saturate; tiny products round to ±0 (the sign kept). FP4: a NaN makes "
                   "its group's exponent 0xFF and all its codes 0x7; ±inf gives exponent 253 (OCP) or 254 "
                   "(NV) and codes ±6 (0x7 / 0xF); values beyond ±6 after scaling saturate.",
    example=Example({"dst": "!pto.tile<64x32xf8e4m3>", "src": "!pto.tile<64x32xf32>",
                     "exp": "!pto.tile<2x32xu8>"}, {"mx_alg": MxQuantAlg.OcpMxFp8E4M3}),
    more_examples=(Example({"dst": "!pto.tile<64x32xf8e4m3>", "src": "!pto.tile<64x32xbf16>",
                            "exp": "!pto.tile<1x64xu8>"}, {"mx_alg": MxQuantAlg.NvMxFp8E4M3, "interleave": True}),
                   Example({"dst": "!pto.tile<64x32xfloat4_e2m1x2>", "src": "!pto.tile<64x32xbf16>",
                            "exp": "!pto.tile<2x32xu8>"}, {"mx_alg": MxQuantAlg.OcpMxFp4E2M1})),
    constraints=_quant_constraints(
        K.custom("exp's valid region holds the exponent block", _exp_covers, "STRUCT_VALID_REGION"),
        K.custom("mx_alg's format is dst's element type", _alg_matches, "LEGAL_DTYPE"))))


# ----------------------------------------------------------------------------- TQUANT_HIF4

def _tquant_hif4(dst: Tile, src: Tile, exp: Tile, max: Tile | None = None,  # noqa: A002
                 scaling: Tile | None = None) -> None:
    rows, cols = dst.valid
    if cols % hifloat4.BLOCK:
        raise RuntimeFault("RUNTIME_VALID_REGION", "TQUANT_HIF4 quantises whole 64-element blocks",
                           expected="valid columns a multiple of 64", actual=f"{cols} valid columns")
    want = cols // hifloat4.BLOCK * hifloat4.RECORD
    if rows > exp.valid[0] or want > exp.valid[1]:
        raise RuntimeFault("RUNTIME_INVALID_WRITE", "exp is written outside its valid region",
                           expected=f"a {rows}x{want} block inside the valid region",
                           actual=f"valid region {exp.valid[0]}x{exp.valid[1]}")
    codes, records = hifloat4.quantise(src.read(rows, cols, "src").astype(np.float32))
    dst.write(codes, rows, cols)
    exp.write(records, rows, want)


def _hif4_blocks(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    d, e = types.get("dst"), types.get("exp")
    if not isinstance(d, TileType) or d.dynamic:
        return None
    if d.valid_cols % hifloat4.BLOCK:
        return f"dst has {d.valid_cols} valid columns, not a multiple of {hifloat4.BLOCK}"
    return _exp_short(e, (d.valid_rows, d.valid_cols // hifloat4.BLOCK * hifloat4.RECORD))


_HIF4_DOC = (
    "HiFloat4 quantisation (the public TQUANT<grp_axis=1, MxQuantAlg::Hif4>, A6): bf16 rows to "
    "4-bit E1M2 codes under a three-level shared exponent. Over dst's valid region (R x C, C a "
    "multiple of 64; float4_e1m2x2 columns count 4-bit elements), each row is cut into blocks of 64 "
    "elements, octets of 8 and quads of 4, and every step below is an f32 product rounded to bf16 "
    "(nearest even). a = |src| with NaN read as 0; Ma, Mb, Mc = the maxima of a over the block, "
    "octet and quad. Ea = e6m2(bf16(Ma * r7)) with r7 = bf16(1/7) = 0.142578125: e6m2 rounds to 3 "
    "significant bits (nearest even) and codes (e + 48) << 2 | m for 2**e * (1 + m/4), e in -48 .. 15; "
    "a value below 2**-48 after rounding (0 included) is code 0, meaning zero, and anything above "
    "1.5 * 2**15 (inf included) is 0xFE. R_a = the bf16 reciprocal: bf16(1/(1 + m/4)) * 2**-e "
    "(1, 0.80078125, 0.66796875, 0.5703125 for m = 0..3), 0 for code 0. Eb (per octet) = "
    "bf16(Mb * R_a) >= 4; Ec (per quad) = bf16(bf16(Mc * R_a) * (Eb ? 0.5 : 1)) >= 2; the quad's scale "
    "s = bf16(R_a * (Eb ? 0.5 : 1) * (Ec ? 0.5 : 1)); dst[i, j] = the E1M2 code nearest to "
    "bf16(src[i, j] * s), ties to the even code, saturating to ±1.75 (code 7 / 15), a zero product of "
    "either sign and NaN giving code 0. exp receives 4 bytes per block, R x C/16 in all: exp[i, 4g] = "
    "Ea of block g of row i, exp[i, 4g + 1] = its Eb bits (bit k: octet k), exp[i, 4g + 2] and "
    "exp[i, 4g + 3] = its Ec bits (bit q: quad q, then quad 8 + q). The value an element stands for "
    "is E1M2(code) * e6m2(Ea) * 2**(Eb + Ec). The public target carves its exp workspace into flat "
    "Ea/Eb/Ec regions plus the Cube's interleaved patch layout; openpto's exp holds the per-block "
    "records only (the same 32 bits per 64 elements). The optional max and scaling tiles are the "
    "target's scratch: accepted and never read or written. dst may also be named hifloat4x2 on the "
    "consuming matmul's side: the codes are the same E1M2 nibbles.")

declare(Instruction(
    mnemonic="TQUANT_HIF4", family=Family.COMPLEX,
    summary="HiFloat4-quantise bf16 rows to E1M2 codes with Ea/Eb/Ec block exponents",
    operands=_quant_operands("float4_e1m2x2 codes, dst's valid region is the domain", "bf16 values",
                             "u8 scale records, 4 bytes per 64-element block: R x C/16",
                             "block-maximum scratch of the public target",
                             "per-quad scale scratch of the public target"),
    semantics=_tquant_hif4,
    dtypes=tuples(("dst", "src", "exp"), [(dt.FP4_E1M2, dt.BF16, dt.U8)]),
    profiles=("cpu", "a6"), numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc=_HIF4_DOC,
    special_values="NaN is ignored by the maxima and encodes as +0; ±inf makes its block's Ea 0xFE, "
                   "sets its octet's Eb and quad's Ec and saturates to ±1.75; -0 encodes as +0 "
                   "(code 0) while a negative value rounding to zero keeps its sign (code 8); a block "
                   "whose maximum is below about 7 * 2**-48 gets Ea 0, a zero scale and only +0 codes.",
    example=Example({"dst": "!pto.tile<16x64xfloat4_e1m2x2>", "src": "!pto.tile<16x64xbf16>",
                     "exp": "!pto.tile<16x32xu8, valid=16x4>"}),
    more_examples=(Example({"dst": "!pto.tile<8x128xfloat4_e1m2x2>", "src": "!pto.tile<8x128xbf16>",
                            "exp": "!pto.tile<8x32xu8, valid=8x8>"}),),
    constraints=_quant_constraints(
        K.custom("dst's valid columns are whole 64-element blocks and exp holds their records",
                 _hif4_blocks, "STRUCT_VALID_REGION"))))
