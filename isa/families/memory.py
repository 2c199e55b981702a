"""Memory instructions: moves between global tensors and tiles (TLOAD, TSTORE, TSTORE_FP,
TPREFETCH) and indexed global access (MGATHER, MSCATTER).

A global operand is a ``GlobalRef``: a strided numpy array plus one index per dim. Windowed
ops take ``GlobalRef.window(rows, cols)``: leading indices select a matrix, the last two
give the window origin. Transfers are logical (element (i, j) of the window <-> element
(i, j) of the tile); layouts only decide which transfers a DMA can do (the constraints).
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from .. import compute as C
from .. import constraints as K
from .. import dtypes as dt
from .. import glayouts as GL
from ..attrs import AtomicMode, IndexMode, OobMode, ReluMode
from ..diagnostics import RuntimeFault
from ..registry import declare
from ..spec import WHOLE, Attr, Domain, Example, Family, Instruction, Numerics, EXACT, ROUNDED, ValueRule, tuples
from ..types import GlobalLayout, GlobalType, Layout, Location, Pipe, TileType, Type
from ..values import GlobalRef, Tile
from ._helpers import global_in, global_out, tile_in, tile_out
from ._prequant import A5_PAIRS, SCALE_OPERAND, form_rules, profile_forms, saturate, scale
from ._prequant import relu as relu_values

# ----------------------------------------------------------------------------- dtype tables

_A2_MOVE = (dt.I8, dt.U8, dt.I16, dt.U16, dt.I32, dt.U32, dt.I64, dt.U64, dt.F16, dt.BF16, dt.F32, dt.I1)
_A5_MOVE = _A2_MOVE + dt.FP8
# TLOAD / TSTORE also move coded types bit for bit: hifloat8 and fp4 on cpu and A5 (TStore.hpp lists
# hifloat8_t, TLoad.hpp halves its strides for fp4), i4 on cpu.
_CODED_MOVE = dt.STORABLE + dt.CPU_MOVABLE_CODED
_A5_CODED_MOVE = _A5_MOVE + dt.MOVABLE_CODED
_ACC_TYPES = (dt.F32, dt.I32)
# (global dtype, acc dtype) pairs a store out of an acc tile may convert between (RNE).
_ACC_CONVERT = ((dt.F16, dt.F32), (dt.BF16, dt.F32))
# Element types atomic read-modify-write supports (no i1; fp8 has no headroom, e4m3 no inf).
_ATOMIC_TYPES = dt.FLOATS + dt.INTS
_INDEX_TYPES = (dt.I32, dt.U32)
# Elements of a convolution-layout tensor: CheckConvTileData's list (no 64-bit, fp8 or coded types).
_CONV_TYPES = (dt.I8, dt.U8, dt.I16, dt.U16, dt.I32, dt.U32, dt.F16, dt.BF16, dt.F32)
# MGATHER/MSCATTER data: the (u)int8/16/32, half, bfloat16 and float of a2a3/MGather.hpp and
# MScatter.hpp; a5's headers add float8_e4m3/e5m2 and hifloat8 (moved bit for bit); cpu takes
# every storable type and hifloat8.
_A2_INDEXED = dt.FLOATS + dt.INTS_32
_A5_INDEXED = _A2_INDEXED + dt.FP8 + (dt.HIF8,)
_CPU_INDEXED = dt.STORABLE + (dt.HIF8,)
# MSCATTER atomics per profile and data type (IsValidMScatterAtomic in a2a3/MScatter.hpp,
# IsValidScatterAtomic in a5/MScatter.hpp); cpu takes every mode on _ATOMIC_TYPES. One value rule
# per profile is MSCATTER's whole atomic check (no _atomic_types constraint beside it).
_A2_SCATTER_ADD = (dt.F32, dt.I32, dt.F16, dt.BF16, dt.I16, dt.I8)
_A5_SCATTER_ADD = (dt.I32, dt.U32, dt.F32, dt.F16, dt.BF16)
_A5_SCATTER_MINMAX = (dt.I32, dt.U32, dt.F32)
_SCATTER_ATOMICS = {
    "cpu": {AtomicMode.NONE: None, AtomicMode.ADD: _ATOMIC_TYPES, AtomicMode.MAX: _ATOMIC_TYPES,
            AtomicMode.MIN: _ATOMIC_TYPES},
    "a2": {AtomicMode.NONE: None, AtomicMode.ADD: _A2_SCATTER_ADD},
    "a5": {AtomicMode.NONE: None, AtomicMode.ADD: _A5_SCATTER_ADD, AtomicMode.MAX: _A5_SCATTER_MINMAX,
           AtomicMode.MIN: _A5_SCATTER_MINMAX}}
# TSTORE_FP: acc dtype -> global dtypes (cpu: every scaled target of both acc types, f32 also to
# f8e4m3 and hifloat8); integer targets round RNE and saturate.
_FP_TARGETS = (dt.F32, dt.F16, dt.BF16, dt.I8, dt.U8)
# (global, acc) pairs whose vector-scaled store the NPU headers implement: a2/a3 CheckAcc2gm with
# quantisation (f32 -> i8/u8, i32 -> i8/u8/f16; GetVectorPreQuantMode VQF322B8_PRE, VREQ8, VDEQF16);
# a5 CheckStaticAcc with quantisation and GetVectorPreQuantModeGm (f32 -> i8/u8/f16/bf16/f8e4m3/f32,
# i32 -> i8/u8/f16/bf16; f32 -> hifloat8 too, VQF322HIF8_PRE).
_A2_FP_PAIRS = ((dt.I8, dt.F32), (dt.U8, dt.F32), (dt.I8, dt.I32), (dt.U8, dt.I32), (dt.F16, dt.I32))
# TSTORE's scalar pre-quantising form: the (global, acc) pairs GetScalarPreQuantMode scales that the
# a2/a3 CheckAcc2gm admits (f32 -> i8/u8, i32 -> i8/u8/f16); a5 (and cpu) also f32 -> f16/bf16, i32 -> bf16.
_A2_SCALED = ((dt.I8, dt.F32), (dt.U8, dt.F32), (dt.I8, dt.I32), (dt.U8, dt.I32), (dt.F16, dt.I32))
# a5 also scales f32 into hifloat8 (QF322HIF8_PRE; CheckStaticAcc lists hifloat8_t): the global's
# declared element type (GlobalRef.element) tells those codes from u8 values.
_A5_SCALED = A5_PAIRS
_SCALED_STORES = {"cpu": _A5_SCALED, "a2": _A2_SCALED, "a3": _A2_SCALED, "a5": _A5_SCALED}
_NPU_FP_STORES = {"a2": _A2_FP_PAIRS, "a3": _A2_FP_PAIRS, "a5": _A5_SCALED + ((dt.F32, dt.F32),)}


def _pairs(types: tuple[dt.DType, ...], extra: tuple[tuple[dt.DType, dt.DType], ...] = ()) -> list:
    return [(d, d) for d in types] + list(extra)


def _gather_rule(names: tuple[str, str, str], data: tuple[dt.DType, ...]):  # noqa: ANN202
    return tuples(names, [(d, d, i) for d in data for i in _INDEX_TYPES])


# ----------------------------------------------------------------------------- static rules

_TILE_FROM_GLOBAL = {(GlobalLayout.ND, Layout.ND), (GlobalLayout.DN, Layout.DN), (GlobalLayout.NZ, Layout.NZ)}
_LOAD_LAYOUTS: dict[Location, set[tuple[GlobalLayout, Layout]]] = {
    Location.VEC: _TILE_FROM_GLOBAL,
    Location.MAT: _TILE_FROM_GLOBAL | {(GlobalLayout.ND, Layout.NZ), (GlobalLayout.DN, Layout.ZN)},
}
_UNBOXED_GLOBAL = (GlobalLayout.ND, GlobalLayout.DN)


def _pair(types: Mapping[str, Type], tile: str, glob: str) -> tuple[TileType, GlobalType] | None:
    t, g = types.get(tile), types.get(glob)
    return (t, g) if isinstance(t, TileType) and isinstance(g, GlobalType) else None


def _load_layout(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
    p = _pair(types, "dst", "src")
    if p is None:
        return None
    t, g = p
    scale = GL.of(g.layout) or GL.conv_of(g.layout)
    if scale is not None:
        if t.loc is not Location.MAT or t.layout not in scale.tile_layouts:
            want = " or ".join(l.value for l in scale.tile_layouts)
            return f"a {g.layout.value} tensor loads into a mat {want} tile, dst is {t.loc.value} {t.layout.value}"
        return None
    if t.dtype.bits == 64 and t.layout not in (Layout.ND, Layout.DN):
        return f"64-bit element tiles are ND or DN, dst is {t.layout.value}"
    if (g.layout, t.layout) not in _LOAD_LAYOUTS.get(t.loc, set()):
        return f"no {t.loc.value} load from a {g.layout.value} tensor into a {t.layout.value} tile"
    return None


def _scale_shape(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
    """A scale layout's tensor: rank 5 with the dims the layout fixes."""
    p = _pair(types, "dst", "src")
    scale = None if p is None else GL.of(p[1].layout)
    return None if scale is None else GL.shape_error(scale, p[1].shape)


def _scale_units(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
    """A scale load moves whole K units (MX: pairs of scales, HiF4: 4-byte records)."""
    p = _pair(types, "dst", "src")
    scale = None if p is None else GL.of(p[1].layout)
    if scale is None:
        return None
    t, g = p
    k = t.valid_cols if scale.side == "A" else t.valid_rows
    if k is not None and k % scale.k_unit:
        return (f"a {g.layout.value} load moves whole units of {scale.k_unit} along K: dst valid "
                f"{scale.k_axis} {k} is not a multiple of {scale.k_unit}")
    return None


def _conv_shape(tile: str, glob: str) -> Callable[[Mapping[str, Type], Mapping[str, object]], str | None]:
    """A convolution layout's tensor: rank 5 with a C0 of 32 bytes (an acc store to a 4-byte
    tensor also 16: isa/glayouts.ConvLayout.c0_sizes)."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
        p = _pair(types, tile, glob)
        conv = None if p is None else GL.conv_of(p[1].layout)
        if conv is None:
            return None
        return GL.conv_shape_error(conv, p[1].shape, _itemsize(p[1]), p[0].loc is Location.ACC)
    return check


def _conv_whole(tile: str, glob: str) -> Callable[[Mapping[str, Type], Mapping[str, object]], str | None]:
    """A convolution layout moves the tensor's whole matrix: the valid region is its extent."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
        p = _pair(types, tile, glob)
        conv = None if p is None else GL.conv_of(p[1].layout)
        if conv is None or p[1].rank != GL.RANK:
            return None
        for axis, have, want in zip(("rows", "cols"), p[0].valid, GL.conv_extent(conv, p[1].shape, _itemsize(p[1]))):
            if have is not None and want is not None and have != want:
                return (f"a {p[1].layout.value} transfer moves the whole tensor's matrix: {tile} valid {axis} "
                        f"{have}, the tensor's {want}")
        return None
    return check


def _itemsize(g: GlobalType) -> int:
    return dt.memory_bits(g.dtype) // 8 or 1


def _conv_dtype(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
    stored = isinstance(types.get("dst"), GlobalType)
    g = types.get("dst") if stored else types.get("src")
    conv = GL.conv_of(g.layout) if isinstance(g, GlobalType) else None
    if conv is None:
        return None
    if g.dtype not in _CONV_TYPES:
        return f"a {g.layout.value} tensor holds {dt.names(_CONV_TYPES)}, got {g.dtype}"
    if stored and str(g.dtype) in conv.unstored:
        return (f"a store to a {g.layout.value} tensor writes no {g.dtype} (the a2/a3 fixpipe's 16-element "
                "groups and the simulator's 32-byte C0 disagree)")
    return None


def _conv_rules(tile: str, glob: str) -> tuple[K.Constraint, ...]:
    """The convolution-layout rules every transfer with one shares (isa/glayouts.CONV_LAYOUTS)."""
    return (K.custom("a convolution layout's tensor has rank 5 and C0 = 32 bytes of elements in dim 4 "
                     "(an acc store to a 4-byte NC1HWC0 tensor: 8 or 16; NDC1HWC0: W * C0)",
                     _conv_shape(tile, glob)),
            K.custom("with a convolution layout, the valid region is the tensor's whole matrix",
                     _conv_whole(tile, glob), "STRUCT_VALID_REGION"),
            K.custom("a convolution layout's tensor holds 8-, 16- or 32-bit integers, f16, bf16 or f32 "
                     "(a store to NDC1HWC0 no i32)",
                     _conv_dtype, "LEGAL_DTYPE"))


def _scale_dtype(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
    p = _pair(types, "dst", "src")
    if p is None or GL.of(p[1].layout) is None or p[1].dtype in dt.SCALE_CODES:
        return None
    return f"a {p[1].layout.value} tensor holds E8M0 scale bytes (u8 or f8e8m0), src is {p[1].dtype}"


def _store_layout(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
    p = _pair(types, "src", "dst")
    if p is None:
        return None
    t, g = p
    conv = GL.conv_of(g.layout)
    if conv is not None:
        ok = conv.stores and t.loc is Location.ACC
    elif t.loc is Location.ACC:
        ok = g.layout in (GlobalLayout.ND, GlobalLayout.NZ)
    else:
        vector = (t.rows == 1 or t.cols == 1) and t.layout in (Layout.ND, Layout.DN)
        ok = (g.layout, t.layout) in _TILE_FROM_GLOBAL or (vector and g.layout in _UNBOXED_GLOBAL)
    return None if ok else f"no store from a {t.loc.value} {t.layout.value} tile to a {g.layout.value} tensor"


def _acc_dtypes(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
    p = _pair(types, "src", "dst")
    if p is None:
        return None
    t, g = p
    if t.loc is Location.ACC and t.dtype not in _ACC_TYPES:
        return f"an acc tile holds f32 or i32, src is {t.dtype}"
    if t.loc is not Location.ACC and t.dtype != g.dtype:
        return f"only a store from an acc tile converts ({t.loc.value} {t.dtype} -> {g.dtype})"
    return None


def _last_two(g: GlobalType) -> tuple[int | None, int | None]:
    """(rows, cols) of the matrices a global tensor holds; a 1-D tensor is one row; a scale
    layout's matrix is the product of its row and column dims (isa/glayouts.py)."""
    scale = GL.of(g.layout)
    if scale is not None and g.rank == GL.RANK:
        return GL.matrix_extent(scale, g.shape)
    conv = GL.conv_of(g.layout)
    if conv is not None and g.rank == GL.RANK:
        return GL.conv_extent(conv, g.shape, _itemsize(g))
    return (1, g.shape[0]) if g.rank == 1 else (g.shape[-2], g.shape[-1])


def _fits(tile: str, glob: str) -> K.Constraint:
    """The tile's valid region fits the global tensor's matrices (at origin 0)."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
        p = _pair(types, tile, glob)
        if p is None:
            return None
        t, g = p
        for axis, need, have in zip(("rows", "cols"), t.valid, _last_two(g)):
            if need is not None and have is not None and need > have:
                return f"{tile} valid {axis} {need} exceed {glob}'s {have}"
        return None
    return K.custom(f"{tile}'s valid region fits in {glob}'s last two dims", check)


def _atomic_types(glob: str, allowed: tuple[AtomicMode, ...]) -> K.Constraint:
    """The atomic mode is one the instruction has, on an element type that supports it."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
        mode = attrs.get("atomic", AtomicMode.NONE)
        if mode not in allowed:
            return f"atomic {mode.name} not available; allowed: {' '.join(m.name for m in allowed)}"
        g = types.get(glob)
        if mode is not AtomicMode.NONE and isinstance(g, GlobalType) and g.dtype not in _ATOMIC_TYPES:
            return f"atomic {mode.name} does not support {g.dtype}"
        return None
    return K.custom(f"atomic in {{{', '.join(m.name for m in allowed)}}}; atomic modes other than NONE "
                    f"need an element type in {dt.names(_ATOMIC_TYPES)}", check, "LEGAL_MODE")


def row_index_across(idx_valid_rows: int, rows: int) -> bool:
    """Whether a ROW-mode index tile is the public [1, R] form (row r's index at idx[0, r]) rather
    than [R, 1] (idx[r, 0]): it has exactly one valid row and the domain more than one. The one
    rule the verifier, the semantics and every backend share."""
    return idx_valid_rows == 1 and rows > 1


def _indexed_shape(tile: str) -> K.Constraint:
    """ELEMENT: idx covers the data tile's valid region; ROW: idx holds one index per data row,
    as a column ([R, 1]) or as one row ([1, R])."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
        t, i = types.get(tile), types.get("idx")
        if not (isinstance(t, TileType) and isinstance(i, TileType)):
            return None
        row = attrs.get("indexMode", IndexMode.ELEMENT) is IndexMode.ROW
        if row and t.valid_rows is not None and i.valid_rows is not None \
                and row_index_across(i.valid_rows, t.valid_rows):
            if i.valid_cols is not None and i.valid_cols < t.valid_rows:
                return f"idx valid cols {i.valid_cols} < {t.valid_rows} needed by {tile} (one index per row)"
            return None
        need = (t.valid_rows, 1) if row else t.valid
        for axis, n, have in zip(("rows", "cols"), need, i.valid):
            if n is not None and have is not None and have < n:
                return f"idx valid {axis} {have} < {n} needed by {tile}"
        return None
    return K.custom(f"ELEMENT mode: idx's valid region covers {tile}'s; ROW mode: idx holds {tile}.valid_rows "
                    "indices, as valid rows of column 0 ([R, 1]) or, when it has one valid row, as its valid "
                    "columns ([1, R])", check, "STRUCT_VALID_REGION")


def _row_fits(tile: str, glob: str) -> K.Constraint:
    def check(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
        p = _pair(types, tile, glob)
        if p is None or attrs.get("indexMode", IndexMode.ELEMENT) is not IndexMode.ROW:
            return None
        t, g = p
        have = _last_two(g)[1]
        if t.valid_cols is not None and have is not None and t.valid_cols > have:
            return f"ROW mode moves {t.valid_cols} elements per row but {glob}'s rows hold {have}"
        return None
    return K.custom(f"ROW mode: {tile}.valid_cols <= the length of {glob}'s last dim", check)


# ----------------------------------------------------------------------------- value helpers

def _convert(values: np.ndarray, d: dt.DType) -> np.ndarray:
    """Values as dtype ``d``: floats round RNE (overflow gives ±inf), integers wrap."""
    with np.errstate(all="ignore"):
        return C.narrow(values, d)


_COMBINE: dict[AtomicMode, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    AtomicMode.ADD: np.add, AtomicMode.MAX: C.ieee_max, AtomicMode.MIN: C.ieee_min,
}


def _combine(old: np.ndarray, new: np.ndarray, atomic: AtomicMode, d: dt.DType) -> np.ndarray:
    """What an (atomic) write of ``new`` over ``old`` leaves: floats via f32, rounded once."""
    if atomic is AtomicMode.NONE:
        return new
    with np.errstate(all="ignore"):
        return C.narrow(_COMBINE[atomic](C.widen(old, d), C.widen(new, d)), d)


# ----------------------------------------------------------------------------- TLOAD / TSTORE

def _read(src: GlobalRef, rows: int, cols: int, what: str) -> np.ndarray:
    """The rows x cols matrix at src's indices: a window, or a scale layout's gather."""
    conv = GL.conv_of(src.layout)
    if conv is not None:
        return src.array[GL.conv_places(conv, src.array, src.offsets, rows, cols, what)]
    scale = GL.of(src.layout)
    if scale is None:
        return src.window(rows, cols, what)
    k = cols if scale.side == "A" else rows
    if k % scale.k_unit:
        raise RuntimeFault("RUNTIME_VALID_REGION", f"a {src.layout.value} load moves whole units of "
                           f"{scale.k_unit} along K", expected=f"valid {scale.k_axis} a multiple of {scale.k_unit}",
                           actual=k)
    return GL.gather(scale, src.array, src.offsets, rows, cols, what)


def _write(dst: GlobalRef, rows: int, cols: int, what: str, values: Callable[[np.ndarray], np.ndarray]) -> None:
    """Replace the rows x cols matrix at dst's indices by ``values(old matrix)``: a window, or the
    places a convolution layout gives (isa/glayouts.conv_places)."""
    conv = GL.conv_of(dst.layout)
    if conv is None:
        window = dst.window(rows, cols, what)
        window[...] = values(window)
        return
    at = GL.conv_places(conv, dst.array, dst.offsets, rows, cols, what)
    dst.array[at] = values(dst.array[at])


def _tload(dst: Tile, src: GlobalRef) -> None:
    r, c = dst.valid
    dst.write(_read(src, r, c, "TLOAD source"), r, c)


def _tstore(dst: GlobalRef, src: Tile, atomic: AtomicMode, preQuantScalar: float | None = None,  # noqa: N803
            relu: ReluMode = ReluMode.NONE) -> None:
    r, c = src.valid
    on = relu is ReluMode.RELU
    d = dst.dtype
    if preQuantScalar is None:
        values = src.region()
        new = _convert(relu_values(values) if on else values, d)
    else:
        scaled = scale(src.region(), preQuantScalar)
        new = saturate(relu_values(scaled) if on else scaled, d)
    _write(dst, r, c, "TSTORE destination", lambda old: _combine(old, new, atomic, d))


def _tstore_fp(dst: GlobalRef, src: Tile, fp: Tile, atomic: AtomicMode, relu: ReluMode = ReluMode.NONE) -> None:
    r, c = src.valid
    factors = fp.read(1, c, "fp").astype(np.float32)
    d = dst.dtype
    with np.errstate(all="ignore"):
        scaled = src.region().astype(np.float32) * factors
    new = saturate(relu_values(scaled) if relu is ReluMode.RELU else scaled, d)
    _write(dst, r, c, "TSTORE_FP destination", lambda old: _combine(old, new, atomic, d))


def _tprefetch(dst: Tile, src: GlobalRef) -> None:
    _read(src, *dst.valid, "TPREFETCH source")


def _store_pipe(types: Mapping[str, Type]) -> Pipe:
    src = types.get("src")
    return Pipe.FIX if isinstance(src, TileType) and src.loc is Location.ACC else Pipe.MTE3


_ATOMIC_ATTR = Attr("atomic", AtomicMode, AtomicMode.NONE,
                    "NONE: plain store; ADD: dst = dst + value in dst's element type")
_RELU_ATTR = Attr("relu", ReluMode, ReluMode.NONE,
                  "the public reluPreMode: ReLU on the fixpipe, after any scaling, before the conversion")
_RELU_DOC = (" relu (the public reluPreMode, acc sources only: LEGAL_LOCATION) applies max(x, 0) on the "
             "fixpipe after any scaling and before the conversion: NaN kept, -0 and negatives become +0.")


def _relu_from_acc(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    src = types.get("src")
    if attrs.get("relu", ReluMode.NONE) is ReluMode.RELU and isinstance(src, TileType) \
            and src.loc is not Location.ACC:
        return f"relu is the fixpipe's, src is in {src.loc.value}, not acc"
    return None


_CONV_DOC = ("Convolution layouts (decision 'Convolution global layouts'): a rank-5 tensor of layout NC1HWC0 "
             "[N, C1, H, W, C0] holds the (N*H*W) x (C1*C0) feature map, element (i, j) at [i / (H*W), j / C0, "
             "(i / W) % H, i % W, j % C0]; NDC1HWC0 [N, D, C1, H, W*C0] (the public [N, D, C1, H, W] tensor "
             "with its implicit C0 folded into dim 4, which is static and a multiple of C0) the (N*H*W) x "
             "(D*C1*C0) feature map, (i, j) at [i / (H*W), j / (C1*C0), (j / C0) % C1, (i / W) % H, "
             "(i % W) * C0 + j % C0]; FRACTAL_Z [C1, H, W, N, C0] (and FRACTAL_Z_3D, D*C1 in dim 0) the "
             "(C1*H*W*C0) x N weights, (i, j) at [i / (H*W*C0), (i / (W*C0)) % H, (i / C0) % W, j, i % C0]. "
             "C0 = 32 bytes of elements, static (STRUCT_SHAPE); i8/u8/i16/u16/i32/u32/f16/bf16/f32 "
             "(LEGAL_DTYPE); the valid region is the whole tensor's matrix (STRUCT_VALID_REGION, "
             "RUNTIME_VALID_REGION when dynamic) and the written indices 0 (RUNTIME_OOB otherwise). TLOAD "
             "fills a mat tile, NZ from NC1HWC0 / NDC1HWC0 and ZN from FRACTAL_Z (the public ConvTile's bytes); "
             "an acc TSTORE / TSTORE_FP writes NC1HWC0 or NDC1HWC0 with the acc conversions (an NC1HWC0 "
             "4-byte target may take C0 = 16; an NDC1HWC0 one holds no i32, LEGAL_DTYPE). Profiles: a2/a3 "
             "load all four and store NC1HWC0 and NDC1HWC0; a5, a6 and kirin9030 load NC1HWC0 and "
             "FRACTAL_Z and store none; cpu every path.")
_ATOMIC_DOC = ("With atomic = ADD each element becomes old + value computed in the element type's "
               "arithmetic (integers wrap; f16/bf16 add in f32 and round once, RNE), after the value "
               "has been converted as a plain store would write it; the store then also reads dst.")

declare(Instruction(
    mnemonic="TLOAD", family=Family.MEMORY, summary="load a global window into a tile",
    operands=(tile_out("dst", "destination tile (vec or mat)", locations=(Location.VEC, Location.MAT)),
              global_in("src", "global tensor at the window origin", window="dst")),
    semantics=_tload,
    dtypes=tuples(("dst", "src"), _pairs(_CODED_MOVE)),
    profile_dtypes={"a2": tuples(("dst", "src"), _pairs(_A2_MOVE)),
                    "a3": tuples(("dst", "src"), _pairs(_A2_MOVE)),
                    "a5": tuples(("dst", "src"), _pairs(_A5_CODED_MOVE))},
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.MTE2,
    doc="dst[i, j] = src.window[i, j] for (i, j) in dst's valid region: the leading indices of the "
        "global operand select a matrix and the last two give the window origin. The transfer size is "
        "dst's valid region; elements of dst outside it are unspecified (TLOAD does not pad - use "
        "TFILLPAD). The copy is bit-exact and logical; the (global layout, tile layout) pair must be one "
        "a DMA performs: vec ND<-ND, DN<-DN, NZ<-NZ; mat also NZ<-ND and ZN<-DN; 64-bit elements only "
        "into ND/DN tiles. hifloat8 and fp4 (float4_e2m1x2, float4_e1m2x2) tensors and tiles (cpu, A5) "
        "and i4 ones (cpu) hold codes and load bit for bit: a 4-bit tensor holds one element per array "
        "element, as tiles do (the public packed two-per-byte image is isa/fp4.py's pack of it), and "
        "the element byte is copied as it is. Scale layouts (decision 'Global scale layouts'): a rank-5 u8 "
        "tensor of layout MX_A_ZZ / MX_A_ND / MX_A_DN (E8M0 scales of A, dst[i, j] the scale of row i, K "
        "block j of 32) or HIF4_A_ZZ (HiF4 records of A, dst[i, 4g + b] byte b of row i's record for K "
        "group g of 64) loads into a mat ND or ZZ tile; MX_B_NN / MX_B_ND / MX_B_DN and HIF4_B_NN hold "
        "the transposed matrices (K along dst's rows) and load into a mat DN tile. Element (i, j) is read "
        "at the 5-D index the layout's formula gives plus the written indices, through the tensor's "
        "strides: MX_A_ZZ [0, i/16, j/2, i%16, j%2]; MX_A_ND [0, 0, i, j/2, j%2]; MX_A_DN [0, 0, j/2, i, "
        "j%2]; MX_B_NN [0, j/16, i/2, j%16, i%2]; MX_B_ND [0, 0, i/2, j, i%2]; MX_B_DN [0, 0, j, i/2, "
        "i%2]; HIF4_A_ZZ [0, i/16, j/4, ((j%4)/2)*8 + (i%16)/2, (i%2)*2 + j%2] (a 64-byte patch: the "
        "Ea/Eb pairs of 16 rows, then their Ec pairs); HIF4_B_NN the same with i and j swapped. "
        "MX_A_ZZ / MX_B_NN fix shape[3] = 16 and shape[4] = 2, the ND/DN forms shape[0] = shape[1] = 1 "
        "and shape[4] = 2, the HiF4 forms shape[3] = 16 and shape[4] = 4 (STRUCT_SHAPE); dst's valid "
        "columns (A) or rows (B) are a multiple of 2 (MX) or 4 (HiF4) (STRUCT_VALID_REGION, "
        "RUNTIME_VALID_REGION when dynamic). Profiles: the MX layouts on cpu, a5 and a6, the HiF4 "
        "layouts on cpu and a6 (LEGAL_LAYOUT elsewhere); SCALE has no load path. " + _CONV_DOC,
    example=Example({"dst": "!pto.tile<16x16xf32>", "src": "!pto.memref<64x64xf32>"}),
    more_examples=(Example({"dst": "!pto.tile<16x32xu8, loc=mat>",
                            "src": "!pto.memref<1x1x16x16x2xu8, layout=MX_A_ZZ>"}),),
    constraints=(_fits("dst", "src"), K.custom("(global, tile) layout pair is a legal load", _load_layout,
                                               "LEGAL_LAYOUT"),
                 K.custom("a scale layout's tensor has rank 5 and the extents the layout fixes", _scale_shape),
                 K.custom("with a scale layout, dst's valid columns (A side) or rows (B side) are whole K units "
                          "(MX 2, HiF4 4)", _scale_units, "STRUCT_VALID_REGION"),
                 K.custom("a scale layout's tensor holds u8", _scale_dtype, "LEGAL_DTYPE")) + _conv_rules("dst", "src"),
    special_values="Bit-exact copy: NaN payloads, -0 and denormals are preserved. A window that does not "
                   "fit the global tensor raises RUNTIME_OOB."))

declare(Instruction(
    mnemonic="TSTORE", family=Family.MEMORY, summary="store a tile into a global window",
    operands=(global_out("dst", "global tensor at the window origin", window="src"),
              tile_in("src", "source tile (vec, mat or acc)",
                      locations=(Location.VEC, Location.MAT, Location.ACC)),
              SCALE_OPERAND),
    attrs=(_ATOMIC_ATTR, _RELU_ATTR),
    semantics=_tstore,
    dtypes=tuples(("dst", "src"), _pairs(_CODED_MOVE, _ACC_CONVERT + _A5_SCALED)),
    profile_dtypes={p: tuples(("dst", "src"), _pairs(moves, _ACC_CONVERT + _SCALED_STORES[p]))
                    for p, moves in (("a2", _A2_MOVE), ("a3", _A2_MOVE), ("a5", _A5_CODED_MOVE))},
    profile_forms=profile_forms(_SCALED_STORES),
    numerics=ROUNDED, domain=Domain.SRC, pipe=_store_pipe,
    doc="dst.window[i, j] = src[i, j] for (i, j) in src's valid region (the transfer size); nothing else "
        "of dst changes. A store from an acc tile (pipe FIX; vec/mat stores use MTE3) may convert: f32 acc "
        "to an f16 or bf16 tensor rounds to nearest even; i32 acc stores to i32 only (scaled conversions "
        "are TSTORE_FP); other stores keep the dtype and copy bit-exactly. " + _ATOMIC_DOC +
        " Layouts: vec/mat tiles store to a tensor of the same layout (1-row or 1-column ND/DN tiles to "
        "ND or DN); acc tiles to ND, NZ, NC1HWC0 or NDC1HWC0 tensors (a convolution-layout store writes the "
        "tensor's whole feature map, "
        "as TLOAD's convolution layouts say; decision 'Convolution global layouts'). A5 has no store from mat; A2/A3 atomic ADD covers "
        "f32 f16 bf16 i32 i16 i8. hifloat8 and fp4 tiles (cpu, A5) and i4 tiles (cpu) store their codes "
        "bit for bit (a 4-bit element as one array element, as TLOAD), without atomic ADD. Scalar "
        "pre-quantising form (the public TSTORE(dst, acc, preQuantScalar)): with the f32 operand "
        "preQuantScalar, dst.window[i, j] = convert(f32(src[i, j]) * preQuantScalar), as TSTORE_FP "
        "with one factor for every column: the acc value is taken to f32 (i32 rounds RNE), multiplied "
        "in f32 (RNE), then f16/bf16 round RNE, i8/u8 round to nearest even and saturate (NaN -> 0), "
        "f8e4m3 rounds RNE and saturates to ±448 (NaN -> 0x7F), hifloat8 rounds to nearest with ties "
        "away from zero (overflow ±inf, NaN -> 0x80). It takes an acc source; i32 -> i8/u8/f16/bf16 and "
        "f32 -> i8/u8/f8e4m3/hifloat8 only exist in this form (STRUCT_MISSING_OPERAND without the "
        "scale), f32 -> f16/bf16 exist in both. The scaled pairs differ per profile (LEGAL_DTYPE; "
        "'Element types per form'): a2/a3 f32 -> i8/u8 and i32 -> i8/u8/f16 (not their unscaled f32 -> "
        "f16/bf16); a5 and cpu also f32 -> f16/bf16/f8e4m3/hifloat8 and i32 -> bf16 (decision "
        "'Pre-quantising 8-bit float targets')." + _RELU_DOC,
    example=Example({"dst": "!pto.memref<64x64xf16>", "src": "!pto.tile<16x16xf32, loc=acc, layout=NZ>"}),
    more_examples=(Example({"dst": "!pto.memref<64x64xi8>", "src": "!pto.tile<16x16xi32, loc=acc, layout=NZ>",
                            "preQuantScalar": "f32"}, scalars={"preQuantScalar": 0.25}),),
    constraints=form_rules(_pairs(_CODED_MOVE, _ACC_CONVERT), _A5_SCALED) + (_fits("src", "dst"),
                 K.custom("(tile, global) layout pair is a legal store", _store_layout, "LEGAL_LAYOUT"),
                 K.custom("an acc source is f32 or i32; only an acc source changes the dtype",
                          _acc_dtypes, "LEGAL_DTYPE"),
                 _atomic_types("dst", (AtomicMode.NONE, AtomicMode.ADD)),
                 K.custom("relu only with an acc src", _relu_from_acc, "LEGAL_LOCATION")) + _conv_rules("src", "dst"),
    special_values="Same-dtype stores are bit-exact. f32 -> f16/bf16: RNE, overflow gives ±inf, NaN stays "
                   "NaN, values below the smallest denormal round to ±0. Atomic ADD: IEEE addition "
                   "(inf + -inf = NaN), integers wrap. Out-of-range windows raise RUNTIME_OOB. Scaled: IEEE f32 "
                   "product (0 * inf = NaN); to i8/u8 NaN -> 0 and values beyond the range (±inf included) "
                   "clamp to its ends; to hifloat8 beyond 2**15 ±inf, NaN -> 0x80."))

declare(Instruction(
    mnemonic="TSTORE_FP", family=Family.MEMORY,
    summary="store an acc tile scaled per column into a global window",
    operands=(global_out("dst", "global tensor at the window origin", window="src"),
              tile_in("src", "acc tile (f32 or i32)", locations=(Location.ACC,)),
              tile_in("fp", "1 x N f32 scale tile, one scale per column", locations=(Location.SCALING,))),
    attrs=(_ATOMIC_ATTR, _RELU_ATTR),
    semantics=_tstore_fp,
    dtypes=tuples(("dst", "src", "fp"), [(o, a, dt.F32) for a in _ACC_TYPES for o in _FP_TARGETS]
                  + [(dt.F8E4M3, dt.F32, dt.F32), (dt.HIF8, dt.F32, dt.F32)]),
    profile_dtypes={p: tuples(("dst", "src", "fp"), [(d, s, dt.F32) for d, s in _NPU_FP_STORES[p]])
                    for p in ("a2", "a3", "a5")},
    numerics=ROUNDED, domain=Domain.SRC, pipe=Pipe.FIX, aliases=("tstore.fp",),
    doc="dst.window[i, j] = convert(f32(src[i, j]) * fp[0, j]) over src's valid region. The scale is "
        "applied before the conversion: the acc value is taken to f32 (i32 rounds RNE), multiplied by "
        "the column's f32 scale in f32 (rounded RNE), then converted to dst's dtype: f16/bf16 round RNE; "
        "i8/u8 round to nearest even and saturate (NaN -> 0); f8e4m3 rounds nearest-even and saturates "
        "to ±448 (NaN -> 0x7F); hifloat8 rounds to nearest, ties away from zero (overflow ±inf, NaN -> "
        "0x80). " + _ATOMIC_DOC + " NPU profiles take the pairs their vector pre-quant "
        "modes scale within the acc store checks: a2/a3 f32 -> i8/u8 and i32 -> i8/u8/f16; a5 f32 -> "
        "i8/u8/f16/bf16/f8e4m3/hifloat8/f32 (the f32 -> f32 store is scaled too) and i32 -> "
        "i8/u8/f16/bf16 (decision 'Pre-quantising 8-bit float targets'); cpu every pair of both. dst may be ND, NZ, NC1HWC0 or "
        "NDC1HWC0 (the whole feature map, as TLOAD's convolution "
        "layouts say)." + _RELU_DOC,
    example=Example({"dst": "!pto.memref<64x64xf16>", "src": "!pto.tile<16x16xi32, loc=acc, layout=NZ>",
                     "fp": "!pto.tile<1x16xf32, loc=scaling>"}),
    constraints=(_fits("src", "dst"), K.fixed("fp", "rows", 1),
                 K.at_least("fp", "valid_cols", "src", "valid_cols", "STRUCT_VALID_REGION"),
                 K.custom("the tensor is ND, NZ, NC1HWC0 or NDC1HWC0", _store_layout, "LEGAL_LAYOUT"),
                 _atomic_types("dst", (AtomicMode.NONE, AtomicMode.ADD))) + _conv_rules("src", "dst"),
    special_values="IEEE f32 product (0 * inf = NaN); to f32/f16/bf16: overflow gives ±inf, NaN stays "
                   "NaN; to i8/u8: NaN -> 0, values beyond the range (±inf included) clamp to its ends, "
                   "ties to even; to f8e4m3: clamp to ±448, NaN -> 0x7F; to hifloat8: beyond 2**15 ±inf, "
                   "NaN -> 0x80."))

declare(Instruction(
    mnemonic="TPREFETCH", family=Family.MEMORY, summary="hint that a global window will be loaded",
    operands=(tile_out("dst", "tile whose valid region gives the window size",
                       locations=(Location.VEC, Location.MAT)),
              global_in("src", "global tensor at the window origin", window="dst")),
    semantics=_tprefetch,
    dtypes=tuples(("dst", "src"), _pairs(dt.STORABLE)),
    profile_dtypes={"a2": tuples(("dst", "src"), _pairs(_A2_MOVE)),
                    "a3": tuples(("dst", "src"), _pairs(_A2_MOVE)),
                    "a5": tuples(("dst", "src"), _pairs(_A5_MOVE))},
    numerics=EXACT, domain=Domain.NONE, pipe=Pipe.MTE2,
    doc="A cache hint: the window a TLOAD of dst would read may be staged closer to the core. It changes "
        "no value: the reference leaves src and dst untouched, but a target may stage data in dst's "
        "buffer, so dst's contents are unspecified afterwards. It still checks that the window (dst's "
        "valid region at the global indices) lies inside the tensor. Unlike other instructions it waits "
        "on no events.",
    example=Example({"dst": "!pto.tile<16x16xf32>", "src": "!pto.memref<64x64xf32>"}),
    constraints=(_fits("dst", "src"),) + _conv_rules("dst", "src"),
    special_values="No values are read or written. A window outside the tensor raises RUNTIME_OOB."))


# ----------------------------------------------------------------------------- MGATHER / MSCATTER

def _whole(ref: GlobalRef, what: str) -> None:
    """Indexed ops address the whole tensor, so its written indices must be zero."""
    if any(ref.offsets):
        raise RuntimeFault("RUNTIME_GLOBAL_INDEX", f"{what} addresses the whole tensor; write it "
                           "without indices or with zero indices", expected="all indices 0",
                           actual=list(ref.offsets))


def _resolve(k: np.ndarray, n: int, oob: OobMode, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Apply the out-of-range policy to indices ``k`` into ``n`` targets: (indices, kept)."""
    inside = (k >= 0) & (k < n)
    if oob is OobMode.ZERO:
        return np.where(inside, k, 0), inside
    bad = np.argwhere(~inside)
    if oob is OobMode.ERROR or (n == 0 and bad.size):
        if bad.size:
            pos = tuple(int(x) for x in bad[0])
            raise RuntimeFault("RUNTIME_OOB", f"{what} index out of range at idx{list(pos)}",
                               expected=f"[0, {n})", actual=int(k[pos]))
        return k, inside
    fixed = np.clip(k, 0, n - 1) if oob is OobMode.CLAMP else np.mod(k, n)
    return fixed, np.ones_like(inside)


def _targets(ref: GlobalRef, idx: Tile, rows: int, cols: int, mode: IndexMode, oob: OobMode,
             what: str) -> tuple[np.ndarray, np.ndarray]:
    """Row-major flat element indices (rows x cols) into the global tensor and which are kept."""
    _whole(ref, what)
    shape = ref.array.shape
    row_len = shape[-1]
    if mode is IndexMode.ELEMENT:
        return _resolve(idx.read(rows, cols, "idx").astype(np.int64), ref.array.size, oob, what)
    if cols > row_len:
        raise RuntimeFault("RUNTIME_OOB", f"{what} moves {cols} elements per row but rows hold {row_len}",
                           expected=f"<= {row_len}", actual=cols)
    keys = idx.read(1, rows, "idx")[0, :] if row_index_across(idx.valid[0], rows) else idx.read(rows, 1, "idx")[:, 0]
    k, keep = _resolve(keys.astype(np.int64), int(np.prod(shape[:-1])), oob, what)
    flat = k[:, None] * row_len + np.arange(cols, dtype=np.int64)[None, :]
    return flat, np.broadcast_to(keep[:, None], (rows, cols))


def _rounds(flat: np.ndarray) -> list[np.ndarray]:
    """Positions of ``flat`` grouped so round r holds each target's r-th occurrence (in order):
    applying the rounds one after another is sequential row-major application."""
    n = flat.size
    if n == 0:
        return []
    order = np.argsort(flat, kind="stable")
    sk = flat[order]
    first = np.ones(n, dtype=bool)
    first[1:] = sk[1:] != sk[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - start
    by_rank = np.argsort(rank, kind="stable")
    return np.split(by_rank, np.cumsum(np.bincount(rank))[:-1])


def _mgather(dst: Tile, src: GlobalRef, idx: Tile, indexMode: IndexMode, oobMode: OobMode) -> None:  # noqa: N803
    r, c = dst.valid
    flat, keep = _targets(src, idx, r, c, indexMode, oobMode, "MGATHER")
    out = np.zeros((r, c), dtype=src.array.dtype)
    out[keep] = src.array[np.unravel_index(flat[keep], src.array.shape)]
    dst.write(out, r, c)


def _mscatter(dst: GlobalRef, src: Tile, idx: Tile, indexMode: IndexMode, oobMode: OobMode,  # noqa: N803
              atomic: AtomicMode) -> None:
    r, c = src.valid
    flat, keep = _targets(dst, idx, r, c, indexMode, oobMode, "MSCATTER")
    where, values = flat[keep], src.region()[keep].astype(dst.array.dtype)
    d = dst.dtype
    for pos in _rounds(where):
        at = np.unravel_index(where[pos], dst.array.shape)
        dst.array[at] = _combine(dst.array[at], values[pos], atomic, d)


_INDEX_ATTRS = (
    Attr("indexMode", IndexMode, IndexMode.ELEMENT,
         "ELEMENT: idx[i, j] is a flat element index; ROW: idx[i, 0] (or idx[0, i] for a one-row idx) "
         "is a row index"),
    Attr("oobMode", OobMode, OobMode.ERROR,
         "out-of-range index: ERROR faults, CLAMP, WRAP (modulo), ZERO (gather reads 0, scatter skips)"),
)
_INDEX_DOC = (" In ELEMENT mode idx[i, j] is a row-major flat index over the global tensor's logical "
              "shape (any strides); in ROW mode the tensor is a table of rows of its last dimension "
              "(leading dims flattened row-major, a 1-D tensor is one row) and idx[i, 0] picks the row, "
              "element j of which is element (i, j) of the tile; an index tile with exactly one valid row "
              "(the public [1, R] form) serving more than one tile row holds row i's index at idx[0, i] "
              "instead (with one tile row both forms read idx[0, 0]). The global operand is the whole tensor: "
              "written indices must be zero (else RUNTIME_GLOBAL_INDEX). Out-of-range indices follow "
              "oobMode: ERROR raises RUNTIME_OOB before anything is written, CLAMP clamps to [0, n-1], "
              "WRAP takes the index modulo n (a negative index counts from the end), ZERO reads 0 / skips "
              "the write. Public status: A2/A3 and A5 code exists (on the vector core, hence pipe V); "
              "openpto takes both on cpu, a2, a3 and a5: (u)int8/16/32, f16, bf16 and f32 data with i32/u32 "
              "indices on a2/a3, also float8_e4m3, float8_e5m2 and hifloat8 (bit copies) on a5.")
_INDEX_SPECIAL = ("Index values are exact integers (u32 read unsigned). With no targets (an empty tensor) "
                  "CLAMP and WRAP raise RUNTIME_OOB for any index. A ROW-mode tile wider than a row raises "
                  "RUNTIME_OOB in every mode.")

declare(Instruction(
    mnemonic="MGATHER", family=Family.MEMORY, summary="gather global elements or rows into a tile",
    operands=(tile_out(), global_in("src", "the whole global tensor", window=WHOLE),
              tile_in("idx", "i32/u32 index tile")),
    attrs=_INDEX_ATTRS,
    semantics=_mgather,
    dtypes=_gather_rule(("dst", "src", "idx"), _CPU_INDEXED),
    profile_dtypes={**{p: _gather_rule(("dst", "src", "idx"), _A2_INDEXED) for p in ("a2", "a3")},
                    "a5": _gather_rule(("dst", "src", "idx"), _A5_INDEXED)},
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.V, profiles=("cpu", "a2", "a3", "a5"),
    doc="For (i, j) in dst's valid region: ELEMENT mode dst[i, j] = src.flat[idx[i, j]]; ROW mode "
        "dst[i, j] = src.row(idx[i, 0])[j]." + _INDEX_DOC,
    example=Example({"dst": "!pto.tile<16x16xf32>", "src": "!pto.memref<512xf32>",
                     "idx": "!pto.tile<16x16xi32>"}, {"oobMode": OobMode.WRAP}),
    constraints=(_indexed_shape("dst"), _row_fits("dst", "src")),
    special_values="Bit-exact copies (NaN payloads, -0 preserved); ZERO mode reads +0 / false. " + _INDEX_SPECIAL))

declare(Instruction(
    mnemonic="MSCATTER", family=Family.MEMORY, summary="scatter a tile into global elements or rows",
    operands=(global_out("dst", "the whole global tensor", window=WHOLE), tile_in("src", "source tile"),
              tile_in("idx", "i32/u32 index tile")),
    attrs=_INDEX_ATTRS + (Attr("atomic", AtomicMode, AtomicMode.NONE,
                               "NONE: plain write; ADD / MAX / MIN: read-modify-write"),),
    semantics=_mscatter,
    dtypes=_gather_rule(("dst", "src", "idx"), _CPU_INDEXED),
    profile_dtypes={**{p: _gather_rule(("dst", "src", "idx"), _A2_INDEXED) for p in ("a2", "a3")},
                    "a5": _gather_rule(("dst", "src", "idx"), _A5_INDEXED)},
    profile_values={p: (ValueRule("atomic", _SCATTER_ATOMICS["a2" if p == "a3" else p], "dst", code="LEGAL_MODE"),)
                    for p in ("cpu", "a2", "a3", "a5")},
    numerics=Numerics("rounded", note="atomic ADD of floats hitting one element several times sums in "
                                      "row-major order in the reference; targets may use another order"),
    domain=Domain.SRC, pipe=Pipe.V, profiles=("cpu", "a2", "a3", "a5"),
    doc="For (i, j) in src's valid region, in row-major order: ELEMENT mode writes src[i, j] to "
        "dst.flat[idx[i, j]]; ROW mode writes it to element j of row idx[i, 0]. Elements no index hits "
        "are untouched. Duplicates: with atomic NONE the last writer in row-major order wins; ADD adds "
        "each contribution in turn (integers wrap, f16/bf16 add in f32 and round once per addition); "
        "MAX / MIN keep the IEEE maximum / minimum. Atomics per profile (Values per profile, LEGAL_MODE): "
        "a2/a3 NONE, or ADD on f32 i32 f16 bf16 i16 i8; a5 NONE, ADD on i32 u32 f32 f16 bf16, MAX and MIN "
        "on i32 u32 f32; cpu every mode on the arithmetic types (not fp8, hifloat8 or i1)." + _INDEX_DOC,
    example=Example({"dst": "!pto.memref<512xf32>", "src": "!pto.tile<16x16xf32>",
                     "idx": "!pto.tile<16x16xi32>"}, {"oobMode": OobMode.WRAP}),
    constraints=(_indexed_shape("src"), _row_fits("src", "dst")),
    special_values="Plain writes are bit-exact. ADD: IEEE (inf + -inf = NaN), integers wrap. MAX/MIN: NaN "
                   "propagates, max(-0, +0) = +0, min(-0, +0) = -0. " + _INDEX_SPECIAL))
