"""Axis reduce and expand instructions: per-row / per-column reductions and their broadcasts.

Two vector shapes carry the per-axis values:

* a **per-row vector** (row-reduction result, row-expand operand) has one valid column and
  ``R`` valid rows; layout DN (column-major, then the static width must be 1 — the public
  recommended form) or ND (the static width may exceed 1: the public legacy row-major form
  whose first column is valid);
* a **per-column vector** (column-reduction result, column-expand operand) is a ``1 x C``
  tile (one static row) in layout ND or DN (both place the C values contiguously).

Layout is physical only; the semantics read and write logical elements ``[i, 0]`` / ``[0, j]``.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from .. import compute as C
from .. import constraints as K
from .. import dtypes as dt
from ..diagnostics import RuntimeFault
from ..registry import declare
from ..attrs import Precision
from ..spec import (Attr, Constraint, Domain, EXACT, Example, Family, Instruction, MINMAX, Numerics, ROUNDED,
                    same)
from ..types import Layout, Pipe, Type
from ..values import Tile
from ._helpers import tile_in, tile_out
from .elementwise import PRECISION, PRECISION_DOC

Reducer = Callable[[np.ndarray, int], np.ndarray]   # (accumulator values, axis) -> keepdims result
BinaryFn = Callable[[np.ndarray, np.ndarray], np.ndarray]

ROW, COL = "row", "col"

F16_F32 = (dt.F16, dt.F32)
# Row reductions: a2/a3 TRowReduceCheck and a5 TRowSum/TRowProd accept half, float, int32, int16;
# a5 TRowMax/TRowMin add int8 and uint8 (their 64-bit paths have no openpto vector dtype).
ROW_TYPES = (dt.F16, dt.F32, dt.I16, dt.I32)
A5_ROW_MINMAX = ROW_TYPES + (dt.I8, dt.U8)
A2_COL = (dt.F16, dt.F32, dt.I16, dt.I32)
A5_COL_MINMAX = A2_COL + (dt.I8, dt.U8, dt.U16, dt.U32, dt.BF16)
A5_COL_PROD = A2_COL + (dt.BF16, dt.U16, dt.U32)

# ----------------------------------------------------------------------------- static rules



def _dn_is_one_column(name: str) -> Constraint:
    """A DN per-row vector is column-major, so only a one-column tile keeps its values contiguous."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        t = K.tile(types, name)
        if t is not None and t.layout is Layout.DN and t.cols != 1:
            return f"{name} is a DN per-row vector with {t.cols} static columns; DN needs exactly 1"
        return None
    return K.custom(f"{name} in layout DN has exactly one static column", check)


def _has_one(name: str, attr: str) -> Constraint:
    """An expand source must hold at least one valid element along the axis it is read at."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        t = K.tile(types, name)
        v = None if t is None else getattr(t, attr)
        return None if v is None or v >= 1 else f"{name}.{attr} = {v}, must be at least 1"
    return K.custom(f"{name}.{attr} >= 1", check, "STRUCT_VALID_REGION")


def _row_vector(name: str) -> tuple[Constraint, ...]:
    return (K.layout_in(name, Layout.ND, Layout.DN), _dn_is_one_column(name),
            K.fixed(name, "valid_cols", 1, "STRUCT_VALID_REGION"))


def _col_vector(name: str) -> tuple[Constraint, ...]:
    return (K.layout_in(name, Layout.ND, Layout.DN), K.fixed(name, "rows", 1),
            K.fixed(name, "valid_rows", 1, "STRUCT_VALID_REGION"))


def _per_row(t: Tile, r: int, c: int) -> np.ndarray:
    """Column 0 of the first r rows (nothing is read when the domain has no columns)."""
    return t.read(r, min(c, 1), "per-row source")


def _per_col(t: Tile, r: int, c: int) -> np.ndarray:
    """Row 0 of the first c columns (nothing is read when the domain has no rows)."""
    return t.read(min(r, 1), c, "per-column source")


class _Axis(NamedTuple):
    """What differs between the row and the column forms."""

    numpy_axis: int                                   # the axis a reduction folds away
    vector_rules: Callable[[str], tuple[Constraint, ...]]
    shared: str          # valid extent a per-axis vector shares with the full tile
    across: str          # the other valid extent (1 for a vector)
    read_vector: Callable[[Tile, int, int], np.ndarray]
    vector_example: str


_AXES = {
    ROW: _Axis(1, _row_vector, "valid_rows", "valid_cols", _per_row, "!pto.tile<16x1xf32, layout=DN>"),
    COL: _Axis(0, _col_vector, "valid_cols", "valid_rows", _per_col, "!pto.tile<1x16xf32>"),
}


# ----------------------------------------------------------------------------- reductions


def _acc_dtype(x: np.ndarray) -> np.dtype:
    """Floats accumulate in f64 and round once at the end (decisions: accumulation); integers
    in their own width, which wraps exactly as the modular result requires."""
    return np.dtype(np.float64) if x.dtype.kind == "f" else x.dtype


def _sum(x: np.ndarray, axis: int) -> np.ndarray:
    return np.sum(x, axis=axis, dtype=_acc_dtype(x), keepdims=True)


def _prod(x: np.ndarray, axis: int) -> np.ndarray:
    return np.prod(x, axis=axis, dtype=_acc_dtype(x), keepdims=True)


def _extreme(np_reduce: Callable[..., np.ndarray], float_identity: float, int_identity: Callable[[np.iinfo], int],
             zero_wins: Callable[[np.ndarray], np.ndarray]) -> Reducer:
    """IEEE 754-2019 maximum/minimum along ``axis``: numpy's reduction already propagates NaN;
    a zero result takes the sign ``zero_wins`` picks from the zeros of its line, and an empty
    line gives the identity."""
    def reduce(x: np.ndarray, axis: int) -> np.ndarray:
        shape = list(x.shape)
        shape[axis] = 1
        if x.shape[axis] == 0:
            start = float_identity if x.dtype.kind == "f" else int_identity(np.iinfo(x.dtype))
            return np.full(shape, start, dtype=x.dtype)
        out = np_reduce(x, axis=axis, keepdims=True)
        if x.dtype.kind == "f":
            zero = out == 0
            if zero.any():
                positive = np.any((x == 0) & ~np.signbit(x), axis=axis, keepdims=True)
                negative = np.any((x == 0) & np.signbit(x), axis=axis, keepdims=True)
                out = np.where(zero, np.where(zero_wins(positive, negative), 0.0, -0.0), out).astype(x.dtype)
        return out
    return reduce


_REDUCERS: dict[str, Reducer] = {
    "SUM": _sum,
    "PROD": _prod,
    "MAX": _extreme(np.max, -np.inf, lambda info: info.min, lambda pos, neg: pos),      # +0 > -0
    "MIN": _extreme(np.min, np.inf, lambda info: info.max, lambda pos, neg: ~neg),     # -0 < +0
}


def _accumulator(values: np.ndarray, d: dt.DType) -> np.ndarray:
    """Narrow floats (f16, bf16, fp8) widen to f32 first, as every float op computes; the
    reducers then accumulate sums and products in f64 (``_acc_dtype``)."""
    return C.widen(values, d) if d.is_float else values


def _reduction_semantics(axis: str, reducer: Reducer) -> Callable[..., None]:
    def semantics(dst: Tile, src: Tile, **_unread: Any) -> None:
        """``tmp`` and ``isBinary`` arrive in ``_unread``: accepted, never read."""
        r, c = src.valid
        x = _accumulator(src.read(r, c, "src"), src.dtype)
        out = C.narrow(reducer(x, _AXES[axis].numpy_axis), dst.dtype)
        if dst.valid != out.shape:
            raise RuntimeFault("RUNTIME_VALID_REGION",
                               f"the {axis} reduction's result does not fill dst's valid region",
                               expected=f"dst valid region {out.shape[0]}x{out.shape[1]}",
                               actual=f"{dst.valid[0]}x{dst.valid[1]}")
        dst.write(out)
    return semantics


_REDUCE_SPECIAL = {
    "SUM": "Floats: NaN in a reduced line gives NaN; +inf and -inf together give NaN; a sum "
           "beyond the dtype's range rounds to ±inf (intermediate sums do not overflow: the "
           "reference accumulates in f64). "
           "The sign of a zero sum is unspecified (the reference gives +0). Denormals are kept. "
           "Integers wrap (two's complement, modulo 2**bits). An empty line sums to 0.",
    "PROD": "Floats: NaN in a reduced line gives NaN; 0 * inf gives NaN; a product beyond the "
            "dtype's range gives ±inf, one below it ±0 (sign by the usual rule); when a partial "
            "product leaves the accumulator's range the result depends on the order (unspecified). "
            "Denormals are kept. Integers keep the low bits of the product (wrap). An empty line "
            "gives 1.",
    "MAX": "IEEE 754-2019 maximum: NaN in a reduced line gives NaN; +0 > -0. An empty line gives "
           "-inf (floats) or the dtype's minimum (integers).",
    "MIN": "IEEE 754-2019 minimum: NaN in a reduced line gives NaN; -0 < +0. An empty line gives "
           "+inf (floats) or the dtype's maximum (integers).",
}

_ACCURACY = {
    "SUM": Numerics("sum", note="f16/bf16 accumulate in f32 (an f16 accumulator fails); the reference "
                                "accumulates every float in f64 and rounds once; integers are exact "
                                "(they wrap)"),
    "PROD": Numerics("sum", product=True,
                     note="the reference multiplies every float in f64 and rounds once; integers "
                          "are exact (they wrap)"),
    "MAX": MINMAX,
    "MIN": MINMAX,
}

_WORD = {"SUM": "sum", "PROD": "product", "MAX": "maximum", "MIN": "minimum"}

_TMP_DOC = ("scratch tile of the public ISA (some targets use it for partial results); "
            "accepted and never read or written by the semantics")


def _reduce_shape_rules(axis: str) -> tuple[Constraint, ...]:
    """dst is the per-axis vector whose valid region is exactly the result's. A column
    reduction's dst may be statically taller than one row (the public kernels check only its
    valid columns and write row 0): only its valid region must be the 1 x C result."""
    f = _AXES[axis]
    vector = f.vector_rules("dst")
    if axis == COL:
        vector = tuple(c for c in vector if c.doc != "dst.rows == 1")
    return vector + (K.equal("dst", f.shared, "src", f.shared, "STRUCT_VALID_REGION"),)


_REDUCE_MATH = {
    ROW: ("dst[i, 0] = {w} over j < src.valid_cols of src[i, j], for every i < src.valid_rows",
          "src.valid_rows x 1"),
    COL: ("dst[0, j] = {w} over i < src.valid_rows of src[i, j], for every j < src.valid_cols",
          "1 x src.valid_cols"),
}


def _reduction(op: str, axis: str, *, tmp: bool, a2: tuple[dt.DType, ...],
               a5: tuple[dt.DType, ...] | None, example: Example,
               attrs: tuple[Attr, ...] = (), note: str = "") -> Instruction:
    names = ("dst", "src")
    operands = (tile_out("dst", f"per-{axis} vector receiving one {_WORD[op]} per {axis}"),
                tile_in("src", "the tile reduced over its valid region"))
    if tmp:
        operands += (tile_in("tmp", _TMP_DOC, optional=True),)
    narrowed = {"a2": same(names, a2), "a3": same(names, a2)}
    if a5 is not None:
        narrowed["a5"] = same(names, a5)
    math, result = _REDUCE_MATH[axis]
    doc = (math.format(w=_WORD[op]) + ". The iteration domain is the source's valid region; the "
           f"destination's valid region must be exactly the result ({result}), else "
           "RUNTIME_VALID_REGION. dst has src's dtype. Floats accumulate in at least f32 (the "
           "reference: f64) and the result is rounded once (RNE); integers compute in their own "
           "width and wrap."
           + (" dst may be statically taller than one row; its valid region is still 1 x C and only "
              "row 0 is written." if axis == COL else "")
           + (" The optional tmp operand is accepted for compatibility with the public ISA and never "
              "read or written: it carries no semantics." if tmp else "") + note)
    return declare(Instruction(
        mnemonic=f"T{axis.upper()}{op}", family=Family.REDUCE_EXPAND, summary=f"{axis} {_WORD[op]}",
        operands=operands, attrs=attrs, semantics=_reduction_semantics(axis, _REDUCERS[op]),
        dtypes=same(names, dt.NUMERIC), profile_dtypes=narrowed,
        profiles=None if a5 is not None else ("cpu", "a2", "a3"),
        numerics=_ACCURACY[op], domain=Domain.SRC, pipe=Pipe.V, doc=doc, example=example,
        constraints=_reduce_shape_rules(axis) + ((K.same_dtype("tmp"),) if tmp else ()),
        special_values=_REDUCE_SPECIAL[op]))


_ROW_EXAMPLE = Example({"dst": "!pto.tile<16x1xf32, layout=DN, valid=12x1>",
                        "src": "!pto.tile<16x16xf32, valid=12x10>",
                        "tmp": "!pto.tile<16x16xf32>"})
_ROW_EXAMPLE_F16 = Example({"dst": "!pto.tile<16x1xf16, layout=DN>", "src": "!pto.tile<16x32xf16>"})
_COL_EXAMPLE = Example({"dst": "!pto.tile<1x16xf32, valid=1x10>",
                        "src": "!pto.tile<16x16xf32, valid=12x10>"})

_reduction("SUM", ROW, tmp=True, a2=ROW_TYPES, a5=ROW_TYPES, example=_ROW_EXAMPLE)
_reduction("MAX", ROW, tmp=True, a2=ROW_TYPES, a5=A5_ROW_MINMAX, example=_ROW_EXAMPLE_F16)
_reduction("MIN", ROW, tmp=True, a2=ROW_TYPES, a5=A5_ROW_MINMAX, example=_ROW_EXAMPLE_F16)   # 32 columns: i8 rows align on a5
_reduction("PROD", ROW, tmp=True, a2=ROW_TYPES, a5=ROW_TYPES, example=_ROW_EXAMPLE)
_reduction("SUM", COL, tmp=True, a2=A2_COL, a5=A5_COL_MINMAX,
           attrs=(Attr("isBinary", bool, False,
                       "public ISA: tree (true) or sequential (false) accumulation; the sum contract "
                       "is order-independent, so the result does not depend on it"),),
           example=Example({"dst": "!pto.tile<1x16xf32, valid=1x10>",
                            "src": "!pto.tile<16x16xf32, valid=12x10>",
                            "tmp": "!pto.tile<16x16xf32>"}, {"isBinary": True}),
           note=" isBinary selects the accumulation order on NPUs; under the order-independent sum "
                "contract it does not change the specified result, and the reference ignores it.")
_reduction("MAX", COL, tmp=False, a2=A2_COL, a5=A5_COL_MINMAX, example=_COL_EXAMPLE)
_reduction("MIN", COL, tmp=False, a2=A2_COL, a5=A5_COL_MINMAX, example=_COL_EXAMPLE)
_reduction("PROD", COL, tmp=False, a2=A2_COL, a5=A5_COL_PROD,
           example=Example({"dst": "!pto.tile<1x16xi32>", "src": "!pto.tile<8x16xi32>"}))

# ----------------------------------------------------------------------------- expands


def _broadcast_semantics(axis: str) -> Callable[..., None]:
    def semantics(dst: Tile, src: Tile) -> None:
        r, c = dst.valid
        dst.write(np.broadcast_to(_AXES[axis].read_vector(src, r, c), (r, c)), r, c)
    return semantics


_BROADCAST_DOC = {
    ROW: "dst[i, j] = src[i, 0] for every (i, j) in dst's valid region: each row's first value is "
         "copied across the row. src is any tile whose valid region covers dst.valid_rows x 1 "
         "(typically a per-row vector from a row reduction); only its column 0 is read.",
    COL: "dst[i, j] = src[0, j] for every (i, j) in dst's valid region: the first row is copied "
         "down every row. src is any tile whose valid region covers 1 x dst.valid_cols "
         "(typically a per-column vector from a column reduction); only its row 0 is read.",
}


def _broadcast(axis: str, *, npu: tuple[dt.DType, ...] | None, profiles: tuple[str, ...] | None,
               example: Example) -> Instruction:
    names = ("dst", "src")
    f = _AXES[axis]
    narrowed = {p: same(names, npu) for p in ("a2", "a3", "a5")} if npu is not None else {}
    return declare(Instruction(
        mnemonic=f"T{axis.upper()}EXPAND", family=Family.REDUCE_EXPAND,
        summary=f"broadcast a per-{axis} vector over the tile",
        operands=(tile_out(), tile_in("src", f"per-{axis} values")),
        semantics=_broadcast_semantics(axis), dtypes=same(names, dt.NUMERIC),
        profile_dtypes=narrowed, profiles=profiles, numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
        doc=_BROADCAST_DOC[axis] + " Values are copied bit for bit.",
        example=example,
        constraints=(K.at_least("src", f.shared, "dst", f.shared, "STRUCT_VALID_REGION"),
                     _has_one("src", f.across)),
        special_values="A copy: NaN payloads, ±inf, -0 and denormals are preserved."))


_broadcast(ROW, npu=dt.NUMERIC, profiles=None,
           example=Example({"dst": "!pto.tile<16x16xf32, valid=12x10>",
                            "src": "!pto.tile<16x1xf32, layout=DN, valid=12x1>"}))
_broadcast(COL, npu=dt.NUMERIC, profiles=None,
           example=Example({"dst": "!pto.tile<16x16xi32, valid=12x10>", "src": "!pto.tile<1x16xi32>"}))


def _float_or_int(float_fn: BinaryFn, int_fn: BinaryFn) -> BinaryFn:
    def fn(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return float_fn(a, b) if a.dtype.kind == "f" else int_fn(a, b)
    return fn


def _expdif(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    """exp of the f32-rounded difference, evaluated in f64 and rounded once (as TEXP)."""
    return C.via_f64(np.exp)(a - s)


_EXP_NUMERICS = Numerics("ulp", 2.0, "the difference src0 - s is rounded to f32 first")


class _Op(NamedTuple):
    fn: BinaryFn
    dtypes: tuple[dt.DType, ...]     # architecture-wide; every NPU profile has f16 and f32
    numerics: Numerics
    word: str
    math: str
    special: str


_ROW_FORMS = (" The expanded operand is src1, or src0 when src0's static shape differs from dst's "
              "(then src1 is the full operand and the order of the operation is kept: "
              "dst[i, j] = s <op> src1[i, j]). Mode 1: the expanded operand holds one value per row "
              "(valid columns 1; DN R x 1, or ND). Mode 2: it is ND and holds one 32-byte block per row "
              "(valid columns 32 / sizeof(T): 8 for 32-bit, 16 for 16-bit types), and s = "
              "vec[i, j mod (32 / sizeof(T))]; any other valid column count is STRUCT_VALID_REGION "
              "(RUNTIME_VALID_REGION when dynamic). The optional tmp operand is the public C++ scratch "
              "tile: accepted and never read or written.")

_EXPAND_OPS: dict[str, _Op] = {
    "ADD": _Op(np.add, dt.NUMERIC, ROUNDED, "add", "src0[i, j] + s",
               "IEEE: inf + -inf = NaN; NaN propagates; integers wrap."),
    "SUB": _Op(np.subtract, dt.NUMERIC, ROUNDED, "subtract", "src0[i, j] - s",
               "IEEE: inf - inf = NaN; NaN propagates; integers wrap."),
    "MUL": _Op(np.multiply, dt.NUMERIC, ROUNDED, "multiply", "src0[i, j] * s",
               "IEEE: 0 * inf = NaN; NaN propagates; integers keep the low bits of the product."),
    "DIV": _Op(_float_or_int(np.divide, C.int_div), dt.NUMERIC, ROUNDED, "divide", "src0[i, j] / s",
               "Floats: x/0 = ±inf, 0/0 = NaN, inf/inf = NaN. Integers truncate toward zero; x/0 = -1 "
               "(all bits set, i.e. the maximum for unsigned types); MIN/-1 = MIN (wraps)."),
    "MAX": _Op(C.ieee_max, dt.NUMERIC, MINMAX, "maximum", "maximum(src0[i, j], s)",
               "IEEE 754-2019 maximum: NaN in either operand gives NaN; max(-0, +0) = +0."),
    "MIN": _Op(C.ieee_min, dt.NUMERIC, MINMAX, "minimum", "minimum(src0[i, j], s)",
               "IEEE 754-2019 minimum: NaN in either operand gives NaN; min(-0, +0) = -0."),
    "EXPDIF": _Op(_expdif, dt.FLOATS, _EXP_NUMERICS, "exponential of the difference",
                  "exp(src0[i, j] - s)",
                  "The difference is rounded to f32, then exp as TEXP: exp(-inf) = +0, "
                  "exp(+inf) = +inf; inf - inf = NaN (so equal infinities give NaN); NaN propagates; "
                  "overflow gives +inf."),
}

_VECTOR_TEXT = {
    ROW: ("s = src1[i, 0]", "src1 is a per-row vector (DN R x 1, or ND with one valid column) whose "
          "valid rows cover dst.valid_rows"),
    COL: ("s = src1[0, j]", "src1 is a per-column vector (1 x C, ND or DN) whose valid columns cover "
          "dst.valid_cols"),
}


def block_width(d: dt.DType) -> int:
    """Elements in one 32-byte block of dtype ``d``: a Mode 2 row-expand operand's valid columns."""
    return max(1, 32 // d.np_dtype.itemsize)


def src0_expanded(types: Mapping[str, Type]) -> bool:
    """Whether a row-expand op broadcasts src0 (its static shape differs from dst's) rather
    than src1: the one rule the verifier, the semantics and every backend share."""
    d, s0 = K.tile(types, "dst"), K.tile(types, "src0")
    return d is not None and s0 is not None and s0.shape != d.shape


def _row_block(t: Tile, r: int, c: int, what: str) -> np.ndarray:
    """Rows 0..r-1 of a row-expand operand read at column j mod w (w = its valid columns:
    1 in Mode 1, one 32-byte block in Mode 2), as an r x c array."""
    w = t.valid[1]
    if w not in (1, block_width(t.dtype)):
        raise RuntimeFault("RUNTIME_VALID_REGION", f"{what} is neither one value per row nor one "
                           "32-byte block per row", expected=f"valid columns 1 or {block_width(t.dtype)}",
                           actual=f"{w}")
    if c == 0:
        return np.empty((r, 0), dtype=t.data.dtype)
    block = t.read(r, min(w, c), what)
    return block[:, np.arange(c) % block.shape[1]]


def _expand_semantics(axis: str, fn: BinaryFn) -> Callable[..., None]:
    def semantics(dst: Tile, src0: Tile, src1: Tile, tmp: Tile | None = None, **_precision: Any) -> None:
        """``tmp`` and PrecisionType are accepted and never read."""
        r, c = dst.valid
        first = axis == ROW and src0_expanded({"dst": dst.type, "src0": src0.type})
        full, vec = (src1, src0) if first else (src0, src1)
        a = C.widen(full.read(r, c, "src1" if first else "src0"), full.dtype)
        if axis == ROW:
            s = _row_block(vec, r, c, "per-row source")
        else:
            s = _AXES[axis].read_vector(vec, r, c)
        s = C.widen(s, vec.dtype)
        out = fn(s, a) if first else fn(a, s)
        dst.write(C.narrow(np.broadcast_to(out, (r, c)), dst.dtype), r, c)
    return semantics


def _when(src0_is_vector: bool, rule: Constraint) -> Constraint:
    """``rule`` applied only when the row-expand form broadcasts src0 (or only when src1)."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        return rule.check(types, attrs) if src0_expanded(types) == src0_is_vector else None
    which = "src0" if src0_is_vector else "src1"
    return K.custom(f"when {which} is the expanded operand: {rule.doc}", check, rule.code)


def _row_width(name: str) -> Constraint:
    """Mode 1 (one value per row) or Mode 2 (one 32-byte block per row, row-major)."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        t = K.tile(types, name)
        if t is None or t.valid_cols is None:
            return None
        w = block_width(t.dtype)
        if t.valid_cols == 1 or (t.valid_cols == w and t.layout is Layout.ND):
            return None
        return (f"{name}.valid_cols = {t.valid_cols} in layout {t.layout.value}; must be 1 (Mode 1) or "
                f"{w} in layout ND (Mode 2: one 32-byte block per row)")
    return K.custom(f"{name}.valid_cols is 1, or 32 bytes of elements in layout ND", check,
                    "STRUCT_VALID_REGION")


def _row_roles() -> tuple[Constraint, ...]:
    """Either operand may be the expanded one; the other is the full operand."""
    out: tuple[Constraint, ...] = ()
    for vec, full, first in (("src1", "src0", False), ("src0", "src1", True)):
        rules = (K.same_shape("dst", full), K.covers((full,)), K.layout_in(vec, Layout.ND, Layout.DN),
                 _dn_is_one_column(vec), _row_width(vec),
                 K.at_least(vec, "valid_rows", "dst", "valid_rows", "STRUCT_VALID_REGION"))
        out += tuple(_when(first, c) for c in rules)
    return out


def _expand_op(op: str, axis: str) -> Instruction:
    spec = _EXPAND_OPS[op]
    names = ("dst", "src0", "src1")
    take, vector = _VECTOR_TEXT[axis]
    f = _AXES[axis]
    precise = op == "DIV"
    if axis == ROW:
        shape_rules = _row_roles()
        operands = (tile_out(), tile_in("src0", "full tile operand, or the expanded one (see below)"),
                    tile_in("src1", "per-row operand (Mode 1 or 2), or the full one (see below)"),
                    tile_in("tmp", "scratch tile of the public ISA; accepted and never read or written",
                            optional=True))
        more = (Example({"dst": "!pto.tile<16x16xf32>", "src0": "!pto.tile<16x8xf32>",
                         "src1": "!pto.tile<16x16xf32>"}),
                Example({"dst": "!pto.tile<16x32xf16>", "src0": "!pto.tile<16x32xf16>",
                         "src1": "!pto.tile<16x16xf16>", "tmp": "!pto.tile<16x32xf16>"}))
        forms = _ROW_FORMS
    else:
        shape_rules = (K.covers(("src0",)),) + f.vector_rules("src1") + (
            K.at_least("src1", f.shared, "dst", f.shared, "STRUCT_VALID_REGION"),)
        operands = (tile_out(), tile_in("src0", "full tile operand"),
                    tile_in("src1", f"per-{axis} vector operand"))
        more, forms = (), ""
    if precise:
        more += (Example({"dst": "!pto.tile<16x16xf32>", "src0": "!pto.tile<16x16xf32>",
                          "src1": f.vector_example}, {PRECISION.name: Precision.HIGH_PRECISION}),)
    return declare(Instruction(
        mnemonic=f"T{axis.upper()}EXPAND{op}", family=Family.REDUCE_EXPAND,
        summary=f"{spec.word} with a per-{axis} operand",
        operands=operands, attrs=(PRECISION,) if precise else (), more_examples=more,
        semantics=_expand_semantics(axis, spec.fn), dtypes=same(names, spec.dtypes),
        profile_dtypes={p: same(names, F16_F32) for p in ("a2", "a3", "a5")},
        numerics=spec.numerics, domain=Domain.DST, pipe=Pipe.V,
        doc=(f"dst[i, j] = {spec.math} with {take}, for every (i, j) in dst's valid region. {vector}; "
             + ("src0 has dst's static shape and covers its valid region" if axis == ROW else
                "src0's valid region covers dst's (its static shape may differ)")
             + "; all three share one dtype. "
             "Floats compute in f32 (f16/bf16 widened, the result rounded once, RNE); integers wrap. "
             "dst may be src0 (in place)." + forms + (PRECISION_DOC if precise else "")),
        example=Example({"dst": "!pto.tile<16x16xf32>", "src0": "!pto.tile<16x16xf32>",
                         "src1": f.vector_example}),
        constraints=shape_rules,
        special_values=spec.special))


for _axis in (ROW, COL):
    for _op in _EXPAND_OPS:
        _expand_op(_op, _axis)
