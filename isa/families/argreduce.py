"""Arg-reductions: the position (and optionally the value) of each row's or column's maximum
or minimum, and TPARTARGMAX/TPARTARGMIN, which merge two (value, index) tile pairs.

One order serves every form, so the index always points at the value written next to it:
NaN is above everything for both directions (the first NaN of a line wins, as NaN
propagates through TROWMAX/TROWMIN), then -0 < +0, and equal values keep the smallest
index (the public CPU simulator's strict compare). The value output is the chosen source
element copied bit for bit.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from .. import constraints as K
from .. import dtypes as dt
from ..diagnostics import RuntimeFault
from ..registry import declare
from ..spec import Constraint, Domain, EXACT, Example, Family, Instruction, tuples
from ..types import Layout, Pipe, Type
from ..values import Tile
from ._helpers import tile_in, tile_out
from .reduce_expand import _row_vector

INDEX_DTYPES = (dt.I32, dt.U32)
INDEX16 = (dt.I16, dt.U16)
ROW_A2 = (dt.F16, dt.F32, dt.I16, dt.I32)
ROW_A5 = (dt.F16, dt.BF16, dt.I16, dt.U16, dt.F32, dt.I32, dt.U32)
COL_A2 = (dt.F16, dt.F32, dt.U16, dt.U32)
COL_A5 = (dt.I16, dt.U16, dt.I32, dt.U32, dt.F16, dt.F32)
PART_VALUES = {"cpu": (dt.F16, dt.BF16, dt.F32), "a2": (dt.F16, dt.F32), "a5": (dt.F16, dt.F32)}
# the NPU headers: 16-bit indices only beside 2-byte values
PART_INDEX_NPU = {dt.F16: (dt.I16, dt.U16, dt.I32, dt.U32), dt.F32: (dt.I32, dt.U32)}
PART_INDEX = (dt.I16, dt.U16, dt.I32, dt.U32)

_TMP_DOC = ("scratch tile of the public ISA (A2/A3 keep partial results there); accepted and never "
            "read or written by the semantics")

# ----------------------------------------------------------------------------- the order


def order_key(values: np.ndarray, d: dt.DType) -> np.ndarray:
    """An int64 key whose numeric order is the arg-reductions' order for non-NaN values:
    floats by their f32 bit pattern folded so that -0 < +0 (every narrow float widens to f32
    exactly); integers by value."""
    if not d.is_float:
        return values.astype(np.int64)
    bits = values.astype(np.float32).view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF) - 1, bits)


def _isnan(values: np.ndarray, d: dt.DType) -> np.ndarray:
    return np.isnan(values.astype(np.float32)) if d.is_float else np.zeros(values.shape, bool)


def arg_extreme(values: np.ndarray, d: dt.DType, want_max: bool, axis: int) -> np.ndarray:
    """Index along ``axis`` of each line's extreme (first NaN if any, ties: smallest index)."""
    key = order_key(values, d)
    best = np.argmax(key, axis=axis) if want_max else np.argmin(key, axis=axis)
    nan = _isnan(values, d)
    return np.where(nan.any(axis=axis), np.argmax(nan, axis=axis), best)


# ----------------------------------------------------------------------------- static rules



def _non_empty(name: str) -> Constraint:
    """A line with no element has no position: the public targets assert non-empty sources."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        t = K.tile(types, name)
        if t is None:
            return None
        if 0 in (t.valid_rows, t.valid_cols):
            return f"{name} has an empty valid region {t.valid_rows}x{t.valid_cols}"
        return None
    return K.custom(f"{name}'s valid region is not empty", check, "STRUCT_VALID_REGION")


def _col_index_vector(name: str) -> tuple[Constraint, ...]:
    """A per-column result: one static row, row-major (ND), as the public pages require."""
    return (K.layout_in(name, Layout.ND), K.fixed(name, "rows", 1),
            K.fixed(name, "valid_rows", 1, "STRUCT_VALID_REGION"))


def form_indices(axis: str, src: dt.DType, with_value: bool) -> tuple[dt.DType, ...]:
    """The index dtypes a form takes (the A2/A3/A5 headers' rule, held on every profile): the
    index-only form writes i32/u32; the value form beside a 2-byte source writes 16-bit indices
    (the column form only those, the row form those or 32-bit), beside any other source 32-bit."""
    if not with_value or src.itemsize != 2:
        return INDEX_DTYPES
    return INDEX16 if axis == "col" else INDEX16 + INDEX_DTYPES


def _index_form(axis: str, idx_name: str) -> Constraint:
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        i, s = K.tile(types, idx_name), K.tile(types, "src")
        if i is None or s is None:
            return None
        with_value = K.tile(types, "dstVal") is not None
        legal = form_indices(axis, s.dtype, with_value)
        if i.dtype in legal:
            return None
        form = "the value+index form" if with_value else "the index-only form"
        return (f"{form} with a {s.dtype} source takes {idx_name} of {'/'.join(d.name for d in legal)}, "
                f"got {i.dtype}")
    return K.custom("index dtype by form: index-only i32/u32; with dstVal, 16-bit beside 2-byte sources "
                    "(column: only 16-bit; row: 16- or 32-bit)", check, "LEGAL_DTYPE")


def _index_fits(axis: str, idx_name: str) -> Constraint:
    """Every position along the reduced axis of src's static tile has to be writable as the index."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        i, s = K.tile(types, idx_name), K.tile(types, "src")
        if i is None or s is None or not i.dtype.is_int:     # a non-integer index: the dtype table says so
            return None
        extent = s.cols if axis == "row" else s.rows
        top = int(np.iinfo(i.dtype.np_dtype).max)
        if extent - 1 > top:
            return f"src has {extent} {'columns' if axis == 'row' else 'rows'}; {i.dtype} indices reach {top}"
        return None
    return K.custom(f"every position of src's reduced axis fits {idx_name}'s dtype", check, "STRUCT_SHAPE")


# ----------------------------------------------------------------------------- TROW/TCOL ARG*

_AXIS = {
    # axis: (numpy axis folded away, index operand name, vector rules, shared valid extent)
    "row": (1, "dst", _row_vector, "valid_rows"),
    "col": (0, "dstIdx", _col_index_vector, "valid_cols"),
}


def _arg_semantics(axis: str, want_max: bool) -> Callable[..., None]:
    fold, idx_name, _, _ = _AXIS[axis]

    def semantics(src: Tile, dstVal: Tile | None = None, tmp: Tile | None = None,  # noqa: N803
                  **out: Tile) -> None:
        """``tmp`` is accepted and never read."""
        idx = out[idx_name]
        r, c = src.valid
        if r == 0 or c == 0:
            raise RuntimeFault("RUNTIME_VALID_REGION", f"the {axis} arg-reduction's source is empty",
                               expected="src valid region with at least one row and one column",
                               actual=f"{r}x{c}")
        x = src.read(r, c, "src")
        pos = arg_extreme(x, src.dtype, want_max, fold)
        shape = (r, 1) if axis == "row" else (1, c)
        for t in (idx, dstVal):
            if t is not None and t.valid != shape:
                raise RuntimeFault("RUNTIME_VALID_REGION",
                                   f"the {axis} arg-reduction's result does not fill the output's valid region",
                                   expected=f"valid region {shape[0]}x{shape[1]}",
                                   actual=f"{t.valid[0]}x{t.valid[1]}")
        vals = (np.take_along_axis(x, pos[:, None], axis=1) if axis == "row"
                else np.take_along_axis(x, pos[None, :], axis=0)).copy()
        idx.write(pos.reshape(shape).astype(idx.dtype.np_dtype))
        if dstVal is not None:
            dstVal.write(vals)
    return semantics


_ARG_MATH = {
    "row": ("{idx}[i, 0] = the column j < src.valid_cols of the {w} of row i of src, for every "
            "i < src.valid_rows", "src.valid_rows x 1", "column"),
    "col": ("{idx}[0, j] = the row i < src.valid_rows of the {w} of column j of src, for every "
            "j < src.valid_cols", "1 x src.valid_cols", "row"),
}


def _arg(axis: str, want_max: bool, a2: tuple[dt.DType, ...], a5: tuple[dt.DType, ...],
         example: Example, more: tuple[Example, ...]) -> Instruction:
    fold, idx_name, vector_rules, shared = _AXIS[axis]
    word = "maximum" if want_max else "minimum"
    names = (idx_name, "src")

    def rule(srcs: tuple[dt.DType, ...]) -> Any:
        """Every (index, source) pair some form takes; _index_form picks by form."""
        return tuples(names, [(i, s) for s in srcs
                              for i in dict.fromkeys(form_indices(axis, s, False) + form_indices(axis, s, True))])

    math, result, what = _ARG_MATH[axis]
    src_rules: tuple[Constraint, ...] = (K.layout_in("src", Layout.ND),) if axis == "row" else (
        K.layout_in("src", Layout.ND, Layout.DN),)
    doc = (math.format(idx=idx_name, w=word) + "; with the optional dstVal output, dstVal receives "
           f"that {word} itself (src's element, copied bit for bit). The iteration domain is the "
           f"source's valid region, which must not be empty (RUNTIME_VALID_REGION; the public targets "
           f"assert it); every output's valid region must be exactly the result ({result}), else "
           f"RUNTIME_VALID_REGION. The {what} index is written as {idx_name}'s dtype: i32 or u32 in the "
           "index-only form; in the value+index form, beside a 2-byte source (f16, bf16, i16, u16) "
           + ("i16 or u16 only" if axis == "col" else "i16, u16, i32 or u32") + ", beside any other "
           "source i32 or u32 (the A2/A3/A5 headers' rule, held on every profile; LEGAL_DTYPE otherwise); "
           f"every position of src's static {'columns' if axis == 'row' else 'rows'} must fit that dtype "
           "(STRUCT_SHAPE). "
           f"Order: NaN is above every number, so the first NaN of a line is its {word} in both "
           f"directions (NaN propagates, as in T{axis.upper()}{'MAX' if want_max else 'MIN'}); then "
           "-0 < +0; equal values keep the smallest index. The optional tmp operand is accepted "
           "for compatibility and never read or written. Public spellings: "
           f"`%{idx_name} = t{axis}arg{'max' if want_max else 'min'} %src, %tmp` and, with the value, "
           f"`%dstVal, %{idx_name} = ...` (DPS: outs(%dstVal, %{idx_name})).")
    return declare(Instruction(
        mnemonic=f"T{axis.upper()}ARG{'MAX' if want_max else 'MIN'}", family=Family.REDUCE_EXPAND,
        summary=f"{axis} arg{'max' if want_max else 'min'} (index, optionally value)",
        operands=(tile_out("dstVal", f"optional per-{axis} vector receiving each {axis}'s {word} (src's dtype)",
                           optional=True),
                  tile_out(idx_name, f"per-{axis} vector receiving the {what} index of each {axis}'s {word}"),
                  tile_in("src", "the tile reduced over its valid region"),
                  tile_in("tmp", _TMP_DOC, optional=True)),
        semantics=_arg_semantics(axis, want_max), dtypes=rule(dt.NUMERIC),
        profile_dtypes={"a2": rule(a2), "a3": rule(a2), "a5": rule(a5)},
        numerics=EXACT, domain=Domain.SRC, pipe=Pipe.V, doc=doc, example=example, more_examples=more,
        constraints=(vector_rules(idx_name) + vector_rules("dstVal") + src_rules
                     + (K.equal(idx_name, shared, "src", shared, "STRUCT_VALID_REGION"),
                        K.equal("dstVal", shared, "src", shared, "STRUCT_VALID_REGION"),
                        _non_empty("src"), K.same_dtype("dstVal"), K.same_dtype("tmp"),
                        _index_form(axis, idx_name), _index_fits(axis, idx_name))),
        special_values=(f"The first NaN of a line is its {word}: its index, and the NaN's bits as the value. "
                        f"-0 < +0. Equal values: the smallest index. Indices always fit: 32-bit ones for every "
                        "tile a profile accepts, 16-bit ones by the static-extent rule.")))


_ROW_EX = Example({"dst": "!pto.tile<16x1xi32, layout=DN, valid=12x1>",
                   "src": "!pto.tile<16x16xf32, valid=12x10>", "tmp": "!pto.tile<16x16xf32>"})
_ROW_EX_VAL = Example({"dstVal": "!pto.tile<16x1xf32, layout=DN>", "dst": "!pto.tile<16x1xu32, layout=DN>",
                       "src": "!pto.tile<16x16xf32>"})
_COL_EX = Example({"dstIdx": "!pto.tile<1x16xi32, valid=1x10>",
                   "src": "!pto.tile<16x16xf32, valid=12x10>", "tmp": "!pto.tile<1x16xf32>"})
_COL_EX_VAL = Example({"dstVal": "!pto.tile<1x16xf32>", "dstIdx": "!pto.tile<1x16xi32>",
                       "src": "!pto.tile<8x16xf32>"})

for _max in (True, False):
    _arg("row", _max, ROW_A2, ROW_A5, _ROW_EX_VAL, (_ROW_EX,))
    _arg("col", _max, COL_A2, COL_A5, _COL_EX_VAL, (_COL_EX,))


# ----------------------------------------------------------------------------- TPARTARGMAX / MIN

_PART_NAMES = ("dstVal", "src0Val", "src1Val", "dstIdx", "src0Idx", "src1Idx")


def _part_rule(pairs: list[tuple[dt.DType, dt.DType]]) -> Any:
    return tuples(_PART_NAMES, [(v, v, v, i, i, i) for v, i in pairs])


def pick_first(v0: np.ndarray, v1: np.ndarray, d: dt.DType, want_max: bool) -> np.ndarray:
    """Where (src0Val, src0Idx) wins: src0 is NaN, or neither is NaN and src0 is strictly
    beyond src1 in the order (-0 < +0); equal values pick src1, as the public formula does."""
    k0, k1 = order_key(v0, d), order_key(v1, d)
    beyond = k0 > k1 if want_max else k0 < k1
    n0, n1 = _isnan(v0, d), _isnan(v1, d)
    return n0 | (~n1 & beyond)


def _part_semantics(want_max: bool) -> Callable[..., None]:
    def semantics(dstVal: Tile, src0Val: Tile, src1Val: Tile, dstIdx: Tile, src0Idx: Tile,  # noqa: N803
                  src1Idx: Tile) -> None:
        rows, cols = dstVal.valid
        if dstIdx.valid != dstVal.valid:
            raise RuntimeFault("RUNTIME_VALID_REGION", "dstIdx's valid region differs from dstVal's",
                               expected=f"{rows}x{cols}", actual=f"{dstIdx.valid[0]}x{dstIdx.valid[1]}")
        regions = []
        for val, idx, name in ((src0Val, src0Idx, "src0"), (src1Val, src1Idx, "src1")):
            if idx.valid != val.valid:
                raise RuntimeFault("RUNTIME_VALID_REGION", f"{name}Idx's valid region differs from {name}Val's",
                                   expected=f"{val.valid[0]}x{val.valid[1]}",
                                   actual=f"{idx.valid[0]}x{idx.valid[1]}")
            regions.append((min(rows, val.valid[0]), min(cols, val.valid[1])))
        (r0, c0), (r1, c1) = regions
        rb, cb = min(r0, r1), min(c0, c1)
        a, b = src0Val.data[:rb, :cb], src1Val.data[:rb, :cb]
        first = pick_first(a, b, dstVal.dtype, want_max)
        both_v = np.where(first, a, b)
        both_i = np.where(first, src0Idx.data[:rb, :cb], src1Idx.data[:rb, :cb])
        # copies before writing: a destination may be one of the sources (in place)
        only = [(src0Val.data[:r0, :c0].copy(), src0Idx.data[:r0, :c0].copy()),
                (src1Val.data[:r1, :c1].copy(), src1Idx.data[:r1, :c1].copy())]
        for v, i in only:
            dstVal.write(v)
            dstIdx.write(i)
        dstVal.write(both_v)
        dstIdx.write(both_i)
    return semantics


def _part_regions(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    """Sources inside the destination; each value tile's valid region equals its index tile's."""
    for val, idx in (("dstVal", "dstIdx"), ("src0Val", "src0Idx"), ("src1Val", "src1Idx")):
        a, b = K.tile(types, val), K.tile(types, idx)
        if a is not None and b is not None and a.valid != b.valid and None not in (a.valid + b.valid):
            return f"{val} valid region {a.valid_rows}x{a.valid_cols} differs from {idx}'s {b.valid_rows}x{b.valid_cols}"
    d = K.tile(types, "dstVal")
    for name in ("src0Val", "src1Val"):
        s = K.tile(types, name)
        if d is None or s is None:
            continue
        if any(sv is not None and dv is not None and sv > dv for sv, dv in zip(s.valid, d.valid)):
            return f"{name} valid region {s.valid_rows}x{s.valid_cols} exceeds dstVal's {d.valid_rows}x{d.valid_cols}"
    return None


def _part(want_max: bool) -> Instruction:
    word = "maximum" if want_max else "minimum"
    cmp = ">" if want_max else "<"
    npu = {p: [(v, i) for v in PART_VALUES[p] for i in PART_INDEX_NPU[v]] for p in ("a2", "a5")}
    return declare(Instruction(
        mnemonic=f"TPARTARG{'MAX' if want_max else 'MIN'}", family=Family.COMPLEX,
        summary=f"{word} with its index over the union of two valid regions",
        operands=(tile_out("dstVal", f"receives the {word} values"),
                  tile_in("src0Val", "values of source 0 (its own valid region)"),
                  tile_in("src1Val", "values of source 1 (its own valid region)"),
                  tile_out("dstIdx", "receives the index paired with each chosen value"),
                  tile_in("src0Idx", "indices paired with src0Val (same valid region)"),
                  tile_in("src1Idx", "indices paired with src1Val (same valid region)")),
        semantics=_part_semantics(want_max),
        dtypes=_part_rule([(v, i) for v in PART_VALUES["cpu"] for i in PART_INDEX]),
        profile_dtypes={"a2": _part_rule(npu["a2"]), "a3": _part_rule(npu["a2"]), "a5": _part_rule(npu["a5"])},
        numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
        doc=(f"Over dstVal's valid region: where (i, j) lies in both sources' valid regions, "
             f"(dstVal, dstIdx)[i, j] = (src0Val, src0Idx)[i, j] if src0Val[i, j] {cmp} src1Val[i, j] "
             f"in the arg-reductions' order, else (src1Val, src1Idx)[i, j] (equal values pick src1, "
             "as the public formula does); where it lies in only one source's region, that source's "
             "value and index are copied; where in neither, both outputs are unspecified (the reference "
             "leaves them untouched). Order: a NaN value wins (src0's when both are NaN), then -0 < +0. "
             "The sources' valid regions must lie within dstVal's; each value tile's valid region equals "
             "its index tile's (STRUCT_VALID_REGION, or RUNTIME_VALID_REGION when dynamic). Values and "
             "indices are copied bit for bit; the index tiles are never interpreted. Index dtypes: i16, u16, "
             "i32 or u32 on cpu; on a2/a3/a5 16-bit indices only beside f16 values, as their headers "
             "assert. Operand order is "
             "the public one: ins(src0Val, src1Val, src0Idx, src1Idx) outs(dstVal, dstIdx)."),
        special_values=f"NaN propagates with its index (src0's when both are NaN); {'max(-0, +0) = +0' if want_max else 'min(-0, +0) = -0'}; "
                       "bit patterns are preserved.",
        example=Example({"dstVal": "!pto.tile<16x16xf32>", "src0Val": "!pto.tile<16x16xf32>",
                         "src1Val": "!pto.tile<16x16xf32, valid=8x16>", "dstIdx": "!pto.tile<16x16xi32>",
                         "src0Idx": "!pto.tile<16x16xi32>", "src1Idx": "!pto.tile<16x16xi32, valid=8x16>"}),
        constraints=(K.custom("sources lie within dstVal; value and index tiles of a pair share a valid region",
                              _part_regions, "STRUCT_VALID_REGION"),)))


_part(True)
_part(False)
