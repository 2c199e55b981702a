"""Complex / irregular instructions: sorting, gathers and scatters, index and triangle
generators, partial-region arithmetic, quantisation and debug printing."""
from __future__ import annotations

import sys
from typing import Any, Callable, Mapping

import numpy as np

from .. import compute as C
from .. import constraints as K
from .. import dtypes as dt
from ..attrs import CmpMode, GatherAxis, MaskPattern, QuantType, ScatterAxis
from ..diagnostics import RuntimeFault, SpecError
from ..registry import declare
from ..spec import (WHOLE, Attr, Domain, EXACT, Example, Family, Instruction, Kind, Numerics, Operand, ROUNDED,
                    Role, ValueRule, same, tuples)
from ..types import GlobalType, Layout, Pipe, TileType, Type
from ..values import Tile
from ._helpers import index_in, scalar_in, tile_in, tile_out
from .elementwise import TMP_DOC, TMP_NOTE

Types = Mapping[str, Type]
Attrs = Mapping[str, Any]

RECORD_BYTES = 8   # a sort record: value (padded to 4 bytes) + u32 index
BLOCK_BYTES = 32   # TGATHERB block
SORT_BLOCK = 32    # TSORT32 block length in elements


# ----------------------------------------------------------------------------- shared helpers

def _per_record(d: dt.DType) -> int:
    """Tile elements per 8-byte sort record: 2 for 4-byte types, 4 for 2-byte types."""
    return RECORD_BYTES // d.itemsize



def _known(*values: int | None) -> bool:
    return all(v is not None for v in values)


def _require_region(tile: Tile, rows: int, cols: int, what: str) -> None:
    """A result block must land inside the output's valid region (else it would be poison)."""
    if rows > tile.valid[0] or cols > tile.valid[1]:
        raise RuntimeFault("RUNTIME_INVALID_WRITE", f"{what} is written outside its valid region",
                           expected=f"a {rows}x{cols} block inside the valid region",
                           actual=f"valid region {tile.valid[0]}x{tile.valid[1]}")


def _check_range(index: np.ndarray, limit: int, what: str) -> None:
    """Every entry of a 2-D index array lies in [0, limit); else RUNTIME_OOB naming the first."""
    bad = (index < 0) | (index >= limit)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise RuntimeFault("RUNTIME_OOB", f"{what} out of range at [{i}, {j}]",
                           expected=f"values in [0, {limit})", actual=int(index[i, j]))


def _spec_fault(instr: str, message: str) -> SpecError:
    return SpecError("SPEC_OPERANDS", f"{instr}: {message}")


# ----------------------------------------------------------------------------- TSORT32 / TMRGSORT

def _descending_order(values: np.ndarray, group: np.ndarray, ties: np.ndarray | None = None) -> np.ndarray:
    """Permutation sorting ``values`` descending inside each ``group``: NaN first, -0 == +0;
    equal keys go in ascending ``ties`` (when given), then in their original order (stable)."""
    v = values.astype(np.float64)
    nan = np.isnan(v)
    negated = np.where(nan, 0.0, -v)
    keys = (np.arange(v.size),) + (() if ties is None else (ties,))
    return np.lexsort((*keys, negated, ~nan, group))


def _records(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Pack (value, u32 index) pairs into 8-byte records viewed as the value dtype:
    [v, idx] for 4-byte types, [v, 0, idx_lo16, idx_hi16] for 2-byte types (little endian)."""
    r, n = values.shape
    size = values.dtype.itemsize
    raw = np.zeros((r, n, RECORD_BYTES), np.uint8)
    raw[..., :size] = np.ascontiguousarray(values).view(np.uint8).reshape(r, n, size)
    raw[..., 4:] = index.astype("<u4").view(np.uint8).reshape(r, n, 4)
    return raw.reshape(r, n * RECORD_BYTES).view(values.dtype)


def _tsort32(dst: Tile, src: Tile, idx: Tile, tmp: Tile | None = None) -> None:
    rows, n = src.valid
    _require_region(dst, rows, n * _per_record(src.dtype), "dst")
    values = src.read(rows, n, "src").reshape(-1)
    index = idx.read(rows, n, "idx").reshape(-1)
    block = (np.arange(rows)[:, None] * n + np.arange(n)[None, :] // SORT_BLOCK).reshape(-1)
    order = _descending_order(values, block, index.astype(np.uint64))   # ties: smaller index first
    dst.write(_records(values[order].reshape(rows, n), index[order].reshape(rows, n)))


def _record_list(src: Tile, per: int) -> np.ndarray:
    """The whole records in row 0 of a merge source's valid region, one record per row."""
    count = src.valid[1] // per if src.valid[0] else 0
    return src.data[0, :count * per].reshape(count, per)


def _merge_key(value: Any) -> tuple[bool, float]:
    v = float(value)
    return (v != v, 0.0 if v != v else v)   # NaN above +inf; -0 == +0


def _merge(lists: list[np.ndarray], capacity: int, exhausted: bool) -> tuple[list[np.ndarray], list[int]]:
    """Greedy head merge: take the greatest head (earliest list on ties) until dst is full,
    every list is empty, or (exhausted) any list is empty."""
    keys = [[_merge_key(v) for v in recs[:, 0]] for recs in lists]
    used = [0] * len(lists)
    out: list[np.ndarray] = []
    while len(out) < capacity:
        live = [m for m, recs in enumerate(lists) if used[m] < len(recs)]
        if not live or (exhausted and len(live) < len(lists)):
            break
        best = max(live, key=lambda m: keys[m][used[m]])   # max keeps the first of equal keys
        out.append(lists[best][used[best]])
        used[best] += 1
    return out, used


MERGE_BLOCK = 64         # the single-list form's blockLen unit (elements: 32 f32 or 16 f16 records)
MERGE_REPEATS = 255      # groups of four blocks one single-list TMRGSORT merges


def _merge_blocks(dst: Tile, src: Tile, block_len: int) -> None:
    """Single-list form: each group of four blockLen-element blocks of src row 0 is merged
    into the same columns of dst, independently of the other groups."""
    if block_len < MERGE_BLOCK or block_len % MERGE_BLOCK:
        raise RuntimeFault("RUNTIME_BAD_CONFIG", "blockLen must be a positive multiple of 64",
                           expected=f"a multiple of {MERGE_BLOCK}, at least {MERGE_BLOCK}", actual=block_len)
    cols = src.valid[1] if src.valid[0] else 0
    if not cols:
        return
    group = 4 * block_len
    if cols % group or cols // group > MERGE_REPEATS:
        raise RuntimeFault("RUNTIME_VALID_REGION", "src's valid columns are not 1 to 255 groups of 4 blocks",
                           expected=f"a multiple of 4 * blockLen = {group}, at most {MERGE_REPEATS * group}",
                           actual=f"valid region {src.valid[0]}x{src.valid[1]}")
    _require_region(dst, 1, cols, "dst")
    per = _per_record(dst.dtype)
    out = []
    for g in range(0, cols, group):
        blocks = [src.data[0, g + b:g + b + block_len].reshape(-1, per) for b in range(0, group, block_len)]
        merged, _ = _merge(blocks, group // per, False)
        out.extend(merged)
    dst.write(np.concatenate(out)[None, :])


def _tmrgsort(dst: Tile, executed: Tile | None = None, src0: Tile | None = None, src1: Tile | None = None,
              src2: Tile | None = None, src3: Tile | None = None, blockLen: int | None = None,
              exhausted: bool = False) -> None:
    if blockLen is not None:
        assert src0 is not None
        _merge_blocks(dst, src0, int(blockLen))
        return
    assert executed is not None
    per = _per_record(dst.dtype)
    _require_region(executed, 1, 4, "executed")
    lists = [_record_list(s, per) for s in (src0, src1, src2, src3) if s is not None]
    capacity = dst.valid[1] // per if dst.valid[0] else 0
    merged, used = _merge(lists, capacity, exhausted)
    if merged:
        dst.write(np.concatenate(merged)[None, :])
    counts = np.array([used + [0] * (4 - len(used))], dtype=np.int64)
    executed.write(C.wrap(counts, executed.dtype))


_SORT_TYPES = (dt.F16, dt.F32, dt.I16, dt.I32)
_SORT_NPU = (dt.F16, dt.F32)


def _sort_shape(types: Types, attrs: Attrs) -> str | None:
    d, s = K.tile(types, "dst"), K.tile(types, "src")
    if d is None or s is None:
        return None
    per = _per_record(s.dtype)
    if d.rows < s.rows or d.cols < per * s.cols:
        return f"dst {d.rows}x{d.cols} cannot hold the records of src {s.rows}x{s.cols} ({per} elements each)"
    return None


def _sort_region(types: Types, attrs: Attrs) -> str | None:
    d, s = K.tile(types, "dst"), K.tile(types, "src")
    if d is None or s is None:
        return None
    per = _per_record(s.dtype)
    if _known(d.valid_rows, s.valid_rows) and d.valid_rows < s.valid_rows:
        return f"dst valid rows {d.valid_rows} < src valid rows {s.valid_rows}"
    if _known(d.valid_cols, s.valid_cols) and d.valid_cols < per * s.valid_cols:
        return f"dst valid cols {d.valid_cols} < {per} x src valid cols {s.valid_cols}"
    return None


def _row_major(*names: str) -> tuple:
    """Records and byte blocks are laid out along rows: such tiles must be ND."""
    return tuple(K.layout_in(n, Layout.ND) for n in names)


declare(Instruction(
    mnemonic="TSORT32", family=Family.COMPLEX, summary="sort 32-element blocks into (value, index) records",
    operands=(tile_out("dst", "records, 8 bytes per element of src"), tile_in("src", "values to sort"),
              tile_in("idx", "u32 index payload carried with each value"),
              tile_in("tmp", TMP_DOC, optional=True)),
    semantics=_tsort32,
    dtypes=tuples(("dst", "src", "idx"), [(d, d, dt.U32) for d in _SORT_TYPES]),
    profile_dtypes={p: tuples(("dst", "src", "idx"), [(d, d, dt.U32) for d in _SORT_NPU])
                    for p in ("a2", "a3", "a5")},
    numerics=EXACT, domain=Domain.SRC, pipe=Pipe.V,
    doc="For each row i < src.valid_rows, the src.valid_cols values of the row are cut into blocks of 32 "
        "(the last block holds the remaining 1..32 elements) and each block is sorted in descending order "
        "of value, carrying idx[i, j] along with src[i, j]. Row i of dst receives the sorted blocks as "
        "8-byte records, one per element, in dst[i, 0 : k * src.valid_cols] with k = 8 / sizeof(dtype): "
        "for 4-byte types a record is [value, index bits] (2 elements), for 2-byte types "
        "[value, 0, index low 16 bits, index high 16 bits] (4 elements). The u32 index is stored by bit "
        "reinterpretation, as the hardware does (the public CPU simulator converts it numerically "
        "instead). dst's valid region must hold the records (RUNTIME_INVALID_WRITE otherwise). Records "
        "reinterpret bytes inside a row, so every tile is row-major (ND)." + TMP_NOTE +
        " (The A2/A3 kernels stage a last partial block of 32 through it; the result is the same.)",
    special_values="Order: NaN (any sign or payload) first, then +inf down to -inf; -0 and +0 compare equal. "
                   "Equal values (and NaNs among themselves) go in ascending order of their idx value "
                   "(unsigned), as the public page and CPU simulator break ties; equal values with equal "
                   "idx keep their column order. Values and indices are copied bit for bit (NaN payloads, "
                   "-0 preserved).",
    example=Example({"dst": "!pto.tile<2x64xf32>", "src": "!pto.tile<2x32xf32>", "idx": "!pto.tile<2x32xu32>"}),
    more_examples=(Example({"dst": "!pto.tile<2x80xf32>", "src": "!pto.tile<2x40xf32>", "idx": "!pto.tile<2x40xu32>",
                            "tmp": "!pto.tile<2x80xf32>"}),),
    constraints=(K.custom("dst.rows >= src.rows and dst.cols >= (8 / sizeof(dtype)) * src.cols", _sort_shape),
                 K.custom("dst's valid region holds the records of src's valid region", _sort_region,
                          "STRUCT_VALID_REGION"),
                 K.equal("idx", "cols", "src", "cols"), K.covers(("idx",), "src"),
                 *_row_major("dst", "src", "idx"))))

_MERGE_SOURCES = ("src0", "src1", "src2", "src3")


def _merge_dtypes(types: Types, attrs: Attrs) -> str | None:
    d = K.tile(types, "dst")
    for name in ("src1", "src2", "src3"):
        t = K.tile(types, name)
        if d is not None and t is not None and t.dtype != d.dtype:
            return f"{name} is {t.dtype}, dst is {d.dtype}"
    return None


def _merge_form(present: set[str] | Types, attrs: Attrs) -> str | None:
    """The single-list form (blockLen) takes src0 alone: no executed, src1..src3 or exhausted."""
    if "blockLen" not in present:
        return None
    extra = [n for n in ("executed", "src1", "src2", "src3") if n in present]
    return f"the single-list form (blockLen) takes no {', '.join(extra)}" if extra else None


def _merge_lists(types: Types, attrs: Attrs) -> str | None:
    if "blockLen" in types:
        return None
    missing = [n for n in ("executed", "src1") if n not in types]
    return f"the multi-list form needs {' and '.join(missing)} (or blockLen for the single-list form)" \
        if missing else None


def _merge_exhausted(types: Types, attrs: Attrs) -> str | None:
    if "blockLen" in types and attrs.get("exhausted", False):
        return "the single-list form (blockLen) never suspends: exhausted must be false"
    return None


def _merge_executed(types: Types, attrs: Attrs) -> str | None:
    t = K.tile(types, "executed")
    return None if t is None or t.dtype == dt.U16 else f"executed is {t.dtype}, expected u16"


def _merge_whole_records(types: Types, attrs: Attrs) -> str | None:
    d = K.tile(types, "dst")
    if d is None:
        return None
    per = _per_record(d.dtype)
    for name in ("dst",) + _MERGE_SOURCES:
        t = K.tile(types, name)
        if t is not None and t.valid_cols is not None and t.valid_cols % per:
            return f"{name} valid cols {t.valid_cols} is not a multiple of the record width {per}"
    return None


declare(Instruction(
    mnemonic="TMRGSORT", family=Family.COMPLEX,
    summary="merge 2 to 4 sorted record lists, or the 4 blocks of one list",
    operands=(tile_out("dst", "merged records (1 row)"),
              tile_out("executed", "u16, valid region 1x4: records consumed from each list (multi-list form)",
                       optional=True),
              tile_in("src0", "sorted record list (1 row); single-list form: the four blocks"),
              tile_in("src1", "sorted record list (1 row; multi-list form)", optional=True),
              tile_in("src2", "sorted record list (1 row)", optional=True),
              tile_in("src3", "sorted record list (1 row)", optional=True),
              index_in("blockLen", "single-list form: elements (values and indices) per block", optional=True,
                       bounds=(MERGE_BLOCK, None), multiple=MERGE_BLOCK)),
    attrs=(Attr("exhausted", bool, False, "stop as soon as any list is empty (multi-list form)"),),
    semantics=_tmrgsort,
    dtypes=same(("dst", "src0"), _SORT_TYPES),
    profile_dtypes={p: same(("dst", "src0"), _SORT_NPU) for p in ("a2", "a3", "a5")},
    numerics=EXACT, domain=Domain.SPECIAL, pipe=Pipe.V,
    doc="Each source is a list of 8-byte records in the TSORT32 format (k = 8 / sizeof(dtype) elements "
        "per record) in row 0 of its valid region: floor(valid_cols / k) records, expected in descending "
        "order. The merge repeatedly moves the record with the greatest value among the list heads to "
        "the next record slot of dst row 0; records are copied bit for bit, payload included. It stops "
        "when dst's valid region is full (floor(dst.valid_cols / k) records), when every list is empty, "
        "or, with exhausted = true, as soon as any list is empty (an initially empty list stops it at "
        "once). executed[0, m] receives the number of records taken from list m (0 for absent lists, "
        "modulo 2^16). dst slots after the last merged record are unspecified (the reference leaves them "
        "untouched). Unsorted inputs are merged by the same head rule without error. The tmp scratch "
        "operand of the public multi-list form is not part of this instruction. All tiles are single-row ND "
        "tiles. The hardware returns the counts in a register; openpto writes them to a 1-row u16 tile whose "
        "valid region is 1x4 (NPU profiles need 32-byte rows, e.g. !pto.tile<1x16xu16, valid=1x4>); "
        "executed and src1 are required in this form. "
        "Single-list form (the public TMRGSORT(dst, src, blockLen), written `%dst = tmrgsort %src0, "
        "%blockLen`; blockLen given, no executed, src1..src3 or exhausted): src0's valid columns are cut "
        "into groups of 4 * blockLen elements, each group into four blocks of blockLen elements (blockLen "
        "counts values and indices: 64 = 32 f32 or 16 f16 records); the four blocks of each group are "
        "merged by the head rule above into the same columns of dst (so dst[0, 0 : src0.valid_cols] is "
        "written; the groups are not merged with each other). blockLen must be a positive multiple of 64 "
        "(RUNTIME_BAD_CONFIG otherwise); src0.valid_cols must be 1 to 255 groups (RUNTIME_VALID_REGION "
        "otherwise; a src0 valid region with no element writes nothing); dst's valid region must hold "
        "them (RUNTIME_INVALID_WRITE). It never suspends (exhausted must stay false, STRUCT_ATTR_VALUE).",
    special_values="Ordering as TSORT32: NaN above +inf, -0 == +0. Ties (equal values, NaN with NaN) go to "
                   "the earliest list (src0 before src1 ...), as the public strict comparison does; in the "
                   "single-list form to the earliest block of the group.",
    example=Example({"dst": "!pto.tile<1x128xf32>", "executed": "!pto.tile<1x16xu16, valid=1x4>",
                     "src0": "!pto.tile<1x64xf32>", "src1": "!pto.tile<1x64xf32>"}, {"exhausted": False}),
    more_examples=(Example({"dst": "!pto.tile<1x256xf32>", "src0": "!pto.tile<1x256xf32>", "blockLen": "index"},
                           scalars={"blockLen": MERGE_BLOCK}),),
    constraints=(K.custom("the single-list form takes src0 and blockLen only", _merge_form, "STRUCT_OPERAND_FORM"),
                 K.custom("the multi-list form takes executed and src1", _merge_lists, "STRUCT_MISSING_OPERAND"),
                 K.custom("the single-list form keeps exhausted false", _merge_exhausted, "STRUCT_ATTR_VALUE"),
                 K.custom("executed is u16", _merge_executed, "LEGAL_DTYPE"),
                 *(K.fixed(n, "rows", 1) for n in ("dst", "executed") + _MERGE_SOURCES),
                 K.fixed("executed", "valid_cols", 4, "STRUCT_VALID_REGION"),
                 K.custom("dst and every source hold whole records", _merge_whole_records, "STRUCT_VALID_REGION"),
                 K.custom("src2 and src3 have dst's dtype", _merge_dtypes, "LEGAL_DTYPE"),
                 *_row_major("dst", "executed", *_MERGE_SOURCES))))


# ----------------------------------------------------------------------------- TGATHER / TGATHERB / TSCATTER

# mask pattern -> (step, first column): the pattern keeps columns first, first + step, ...
_PATTERN: dict[MaskPattern, tuple[int, int]] = {
    MaskPattern.P0101: (2, 0), MaskPattern.P1010: (2, 1), MaskPattern.P0001: (4, 0),
    MaskPattern.P0010: (4, 1), MaskPattern.P0100: (4, 2), MaskPattern.P1000: (4, 3),
    MaskPattern.P1111: (1, 0),
}


def _pattern_columns(pattern: MaskPattern, count: int) -> np.ndarray:
    step, first = _PATTERN[pattern]
    return first + step * np.arange(count)


_CMP_TEST: dict[CmpMode, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    CmpMode.GT: np.greater, CmpMode.EQ: np.equal}   # the compare form's modes; NaN never matches
_CMP_DST = (dt.I32, dt.U32)                          # compare form: dst and cdst hold u32 indices


def _gather_mask(dst: Tile, src: Tile, pattern: MaskPattern, axis: GatherAxis) -> None:
    """Mask form: keep every step-th column of each row (GATHER_ROW) or every step-th row
    (GATHER_COL), from the pattern's first one."""
    rows, cols = dst.valid
    if axis is GatherAxis.GATHER_ROW:
        picked = _pattern_columns(pattern, cols)
        width = int(picked[-1]) + 1 if cols else 0
        dst.write(src.read(rows, width, "src")[:, picked], rows, cols)
        return
    picked = _pattern_columns(pattern, rows)
    height = int(picked[-1]) + 1 if rows else 0
    dst.write(src.read(height, cols, "src")[picked, :], rows, cols)


def _thresholds(k: np.ndarray, d: dt.DType) -> np.ndarray:
    """Per-row thresholds in src's dtype: integers converted to a float dtype rounding to nearest
    even once (through exact f64), to an integer dtype by two's complement wrap."""
    if d.is_float:
        return k.astype(np.float64).astype(d.np_dtype)
    return C.wrap(k.astype(np.int64), d)


def _gather_compare(dst: Tile, src: Tile, k: Tile, cdst: Tile, offset: int, mode: CmpMode) -> None:
    """Compare form: the positions of row i's elements that pass the test against k[i, 0],
    in ascending column order, and their count."""
    rows, cols = src.valid
    _require_region(dst, rows, cols, "dst")
    _require_region(cdst, rows, 1 if rows else 0, "cdst")
    values = src.read(rows, cols, "src")
    hit = _CMP_TEST[mode](values, _thresholds(k.read(rows, 1 if rows else 0, "idx (per-row thresholds)"),
                                              src.dtype))
    position = (int(offset) + np.arange(rows, dtype=np.int64)[:, None] * src.type.cols
                + np.arange(cols, dtype=np.int64)[None, :])
    index = C.wrap(position, dst.dtype)
    for i in range(rows):
        chosen = index[i][hit[i]]
        dst.data[i, :chosen.size] = chosen
    if rows:
        cdst.data[:rows, 0] = hit.sum(axis=1)


def _tgather(dst: Tile, src: Tile, idx: Tile | None = None, tmp: Tile | None = None,
             cdst: Tile | None = None, offset: int = 0, maskPattern: MaskPattern = MaskPattern.P1111,  # noqa: N803
             gatherType: GatherAxis = GatherAxis.GATHER_ROW, cmpMode: CmpMode = CmpMode.GT) -> None:  # noqa: N803
    fault = _gather_form_fault({n for n, v in (("idx", idx), ("cdst", cdst)) if v is not None},
                               {"maskPattern": maskPattern, "gatherType": gatherType, "cmpMode": cmpMode})
    if fault is not None:
        raise _spec_fault("TGATHER", fault)
    if cdst is not None:
        _gather_compare(dst, src, idx, cdst, offset, cmpMode)    # type: ignore[arg-type]
        return
    if idx is None:
        _gather_mask(dst, src, maskPattern, gatherType)
        return
    flat = idx.read(*dst.valid, "idx").astype(np.int64)
    _check_range(flat, src.type.rows * src.type.cols, "idx (flat index into src's static storage)")
    dst.write(src.data.reshape(-1)[flat], *dst.valid)


def _gather_form_fault(present: set[str] | Types, attrs: Attrs) -> str | None:
    """Which attributes and operands each form takes: index (idx), mask (neither idx nor cdst),
    compare (idx and cdst)."""
    compare, mask = "cdst" in present, "idx" not in present
    if compare and mask:
        return "the compare form (cdst given) needs idx, the per-row thresholds"
    if not mask and attrs.get("maskPattern", MaskPattern.P1111) is not MaskPattern.P1111:
        return "maskPattern selects the mask form, which takes no idx operand"
    if not mask and attrs.get("gatherType", GatherAxis.GATHER_ROW) is not GatherAxis.GATHER_ROW:
        return "gatherType belongs to the mask form, which takes no idx operand"
    if not compare and attrs.get("cmpMode", CmpMode.GT) is not CmpMode.GT:
        return "cmpMode belongs to the compare form, which takes a cdst operand"
    if compare and attrs.get("cmpMode", CmpMode.GT) not in _CMP_TEST:
        return f"the compare form takes cmpMode GT or EQ, got {attrs['cmpMode'].name}"
    return None


def _gather_operands(types: Types, attrs: Attrs) -> str | None:
    if "offset" in types and "cdst" not in types:
        return "offset belongs to the compare form, which takes a cdst operand"
    return None


def _gather_thresholds(types: Types, attrs: Attrs) -> str | None:
    if "cdst" in types and "idx" not in types:
        return "the compare form (cdst given) needs idx, the per-row thresholds"
    return None


def _gather_attrs(types: Types, attrs: Attrs) -> str | None:
    return None if "cdst" in types and "idx" not in types else _gather_form_fault(types, attrs)


def _gather_mask_dtypes(types: Types, attrs: Attrs) -> str | None:
    d, s = K.tile(types, "dst"), K.tile(types, "src")
    if "idx" in types or d is None or s is None:
        return None
    if d.dtype != s.dtype or d.dtype not in _GATHER_MASK_DATA:
        return (f"the mask form takes one dtype of {dt.names(_GATHER_MASK_DATA)} for dst and src, "
                f"got {d.dtype} and {s.dtype}")
    return None


def _gather_form_dtypes(types: Types, attrs: Attrs) -> str | None:
    """The dtype table is the union of the index and compare forms; each form keeps its own."""
    d, s, k = K.tile(types, "dst"), K.tile(types, "src"), K.tile(types, "idx")
    if d is None or s is None or k is None:
        return None
    if "cdst" not in types:
        return None if d.dtype == s.dtype else f"the index form copies src's dtype {s.dtype} into dst, got {d.dtype}"
    c = K.tile(types, "cdst")
    if (d.dtype, s.dtype, k.dtype) not in _GATHER_CMP_TUPLES:
        return f"the compare form does not take (dst, src, idx) = ({d.dtype}, {s.dtype}, {k.dtype})"
    if c is not None and c.dtype not in _CMP_DST:
        return f"the compare form counts into an i32 or u32 cdst, got {c.dtype}"
    return None


def _gather_mask_region(types: Types, attrs: Attrs) -> str | None:
    d, s = K.tile(types, "dst"), K.tile(types, "src")
    if "idx" in types or d is None or s is None:
        return None
    along_rows = attrs.get("gatherType", GatherAxis.GATHER_ROW) is GatherAxis.GATHER_ROW
    kept, other = ("valid_cols", "valid_rows") if along_rows else ("valid_rows", "valid_cols")
    dk, sk, do, so = (getattr(d, kept), getattr(s, kept), getattr(d, other), getattr(s, other))
    if _known(do, so) and so < do:
        return f"src {other.replace('_', ' ')} {so} < dst {other.replace('_', ' ')} {do}"
    if _known(dk, sk) and dk:
        last = int(_pattern_columns(attrs.get("maskPattern", MaskPattern.P1111), dk)[-1])
        if sk <= last:
            return f"dst {kept.replace('_', ' ')} {dk} need src index {last}, src has {sk} valid"
    return None


def _gather_compare_region(types: Types, attrs: Attrs) -> str | None:
    d, s, k, c = (K.tile(types, n) for n in ("dst", "src", "idx", "cdst"))
    if c is None or d is None or s is None or k is None:
        return None
    for name, t, rows, cols in (("dst", d, s.valid_rows, s.valid_cols), ("idx", k, s.valid_rows, 1),
                                ("cdst", c, s.valid_rows, 1)):
        if _known(t.valid_rows, t.valid_cols, rows, cols) and rows and (t.valid_rows < rows or t.valid_cols < cols):
            return (f"{name} valid region {t.valid_rows}x{t.valid_cols} does not cover the "
                    f"{rows}x{cols} it needs for src's {rows} valid rows")
    return None


_GATHER_DATA = dt.B16_B32
_IDX_COVERS = K.covers(("idx",))


def _gather_index_covers(types: Types, attrs: Attrs) -> str | None:
    return None if "cdst" in types else _IDX_COVERS.check(types, attrs)


_GATHER_INDEX = {"a2": (dt.I32, dt.U32), "a5": (dt.I16, dt.U16, dt.I32, dt.U32)}
# a5/TGather.hpp also gathers b8 data by b16/b32 indices and compares int8/uint8 sources; the
# mask form stays 2- or 4-byte (its dtypes are not in the rule, so profiles cannot narrow them)
_GATHER_DATA_A5 = _GATHER_DATA + (dt.I8, dt.U8)
# a5/TGather.hpp also moves the 1-byte floats (its mask overload lists float8_e4m3_t, float8_e5m2_t and
# hifloat8_t; the index form's CheckValid any b8 type) and 64-bit integers, whose index form takes b32
# indices only and whose mask form gathers along rows only (decision 'TGATHER fp8 and 64-bit data');
# the Kirin TGather (kirin9030's, also kirinX90's) stays at (u)int8/16/32, half and float.
_GATHER_B8_FLOATS = dt.FP8 + (dt.HIF8,)
_GATHER_B64 = (dt.I64, dt.U64)
_GATHER_MOVED_A5 = _GATHER_DATA_A5 + _GATHER_B8_FLOATS
_GATHER_CMP = {"a2": [(d, s, k) for d in _CMP_DST for s in (dt.F32, dt.F16, dt.I32) for k in (dt.I32, dt.U32)],
               "a5": [(d, s, k) for d in _CMP_DST
                      for s in (dt.I8, dt.U8, dt.I16, dt.U16, dt.I32, dt.U32, dt.F16, dt.F32)
                      for k in (dt.U16, dt.U32)]}
_GATHER_CMP_TUPLES = frozenset(_GATHER_CMP["a2"] + _GATHER_CMP["a5"])
# The mask form's data per profile: its dtypes lie outside the dtype rule (no idx), so a value rule
# on maskPattern, which only the mask form takes, limits src there: a2a3/TGather.hpp is b16/b32, the
# a5 mask overload adds int8/uint8, fp8, hifloat8 and 64-bit integers (those along rows only),
# kirin9030/TGather.hpp (also kirinX90's) lists (u)int8/16/32, half and float. cpu: the union.
_GATHER_MASK_DATA = _GATHER_MOVED_A5 + _GATHER_B64
_GATHER_MASK_BY_PROFILE = {"a2": _GATHER_DATA, "a3": _GATHER_DATA, "a5": _GATHER_MASK_DATA,
                           "kirin9030": dt.INTS_32 + (dt.F16, dt.F32), "kirinX90": dt.INTS_32 + (dt.F16, dt.F32)}
_GATHER_MASK_VALUES = {p: (ValueRule("maskPattern", {m: data for m in MaskPattern}, "src", unless="idx",
                                     code="LEGAL_DTYPE"),)
                       for p, data in _GATHER_MASK_BY_PROFILE.items()}
# a5's 64-bit mask gather (Int64GatherPattern) asserts GATHER_ROW
_GATHER_MASK_VALUES["a5"] += (ValueRule("gatherType", {GatherAxis.GATHER_ROW: _GATHER_MASK_DATA,
                                                       GatherAxis.GATHER_COL: _GATHER_MOVED_A5},
                                        "src", unless="idx", code="LEGAL_DTYPE"),)


def _gather_tuples(index: tuple[dt.DType, ...], compare: list[tuple[dt.DType, ...]],
                   data: tuple[dt.DType, ...] = _GATHER_DATA, wide: tuple[dt.DType, ...] = ()) -> Any:
    """Index form (data by every index type; ``wide`` 64-bit data by b32 indices) plus the compare form."""
    return tuples(("dst", "src", "idx"), [(d, d, i) for d in data for i in index]
                  + [(d, d, i) for d in wide for i in index if i.bits == 32] + compare)


declare(Instruction(
    mnemonic="TGATHER", family=Family.COMPLEX,
    summary="gather by flat index, by row/column pattern, or the indices that pass a compare",
    operands=(tile_out(), tile_in("src", "gathered (compare form: compared) tile"),
              tile_in("idx", "index form: flat row-major indices into src's static storage; compare form: "
                      "k_value, the per-row thresholds in column 0; absent: mask form", optional=True),
              tile_in("tmp", TMP_DOC, optional=True),
              tile_out("cdst", "compare form: the number of matches of each row, in column 0", optional=True),
              index_in("offset", "compare form: the index reported for src element (0, 0)", optional=True)),
    attrs=(Attr("maskPattern", MaskPattern, MaskPattern.P1111,
                "mask form (no idx): the columns (rows) kept"),
           Attr("gatherType", GatherAxis, GatherAxis.GATHER_ROW,
                "mask form: GATHER_ROW keeps columns of each row, GATHER_COL whole rows"),
           Attr("cmpMode", CmpMode, CmpMode.GT, "compare form: GT (src > k) or EQ (src == k)")),
    semantics=_tgather,
    dtypes=_gather_tuples(_GATHER_INDEX["a5"], sorted(_GATHER_CMP_TUPLES, key=str), _GATHER_MOVED_A5, _GATHER_B64),
    profile_dtypes={
        **{p: _gather_tuples(_GATHER_INDEX["a2"], _GATHER_CMP["a2"]) for p in ("a2", "a3")},
        "a5": _gather_tuples(_GATHER_INDEX["a5"], _GATHER_CMP["a5"], _GATHER_MOVED_A5, _GATHER_B64),
        **{p: _gather_tuples(_GATHER_INDEX["a5"], _GATHER_CMP["a5"], _GATHER_DATA_A5)
           for p in ("kirin9030", "kirinX90")}},
    profile_values=_GATHER_MASK_VALUES,
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc="Index form (idx given, no cdst): dst[i, j] = src.flat[idx[i, j]] over dst's valid region, where "
        "src.flat is src's whole static storage in logical row-major order (element r * src.cols + c), "
        "valid or not; elements outside src's valid region are unspecified data. idx's valid region must "
        "cover dst's. Mask form (idx absent): with gatherType GATHER_ROW (the default), dst[i, t] = "
        "src[i, first + step * t] over dst's valid region, keeping every step-th column of each src row "
        "from column first: P0101 (step 2, first 0), P1010 (2, 1), P0001 (4, 0), P0010 (4, 1), P0100 "
        "(4, 2), P1000 (4, 3), P1111 (1, 0; a copy); with GATHER_COL the same pattern keeps whole rows: "
        "dst[t, j] = src[first + step * t, j]. The selected columns (rows) must lie in src's valid region "
        "(RUNTIME_INVALID_READ otherwise). The hardware writes the compacted elements as one contiguous "
        "stream, so dst.valid_cols should equal dst.cols for the two to agree. Compare form (idx and cdst "
        "given; the public TGATHER(dst, src0, k_value, cdst, tmp, offset) with CmpMode cmpMode): for each "
        "row i of src's valid region, k = idx[i, 0] converted to src's dtype (to a float dtype rounding to "
        "nearest even, to an integer dtype by two's complement wrap); the columns j (ascending) with "
        "src[i, j] > k (GT) or src[i, j] == k (EQ) give dst[i, 0..n-1] = offset + i * src.cols + j "
        "(src's static column count: the element's row-major position plus offset, wrapped to 32 bits), "
        "and cdst[i, 0] = n. dst's valid region must cover src's, idx's and cdst's each cover "
        "src.valid_rows x 1; dst[i, n:] is left as it was. offset defaults to 0. maskPattern and "
        "gatherType keep their defaults outside the mask form, cmpMode (GT or EQ) outside the compare "
        "form." + TMP_NOTE + " Values are copied bit for bit. Data types: the index form moves 2- or "
        "4-byte types, and on cpu and a5 also i8/u8, f8e4m3, f8e5m2 and hifloat8 (a5 gathers b8 data by "
        "b16/b32 indices) and i64/u64 (by i32/u32 indices only); the compare form on a5 also compares "
        "i8/u8 sources; the mask form takes one dtype for dst and src: 2- or 4-byte on a2/a3, also "
        "i8/u8, the 1-byte floats and i64/u64 on cpu and a5 (64-bit along rows only on a5: GATHER_COL is "
        "LEGAL_DTYPE there), (u)int8/16/32, f16 or f32 on the Kirin parts (Values per profile; decisions "
        "'TSYNC pipes per profile, TGATHER 8-bit data' and 'TGATHER fp8 and 64-bit data').",
    special_values="An index outside [0, src.rows * src.cols) (negative signed indices included) raises "
                   "RUNTIME_OOB; the hardware leaves it undefined and the public CPU simulator returns 0. "
                   "NaN payloads and -0 are preserved. Compare form: NaN matches nothing (GT and EQ are "
                   "ordered comparisons); -0 == +0.",
    example=Example({"dst": "!pto.tile<16x16xf32>", "src": "!pto.tile<16x16xf32>",
                     "idx": "!pto.tile<16x16xi32>"}),
    more_examples=(Example({"dst": "!pto.tile<8x16xf32>", "src": "!pto.tile<16x16xf32>"},
                           attrs={"maskPattern": MaskPattern.P0101, "gatherType": GatherAxis.GATHER_COL}),
                   Example({"dst": "!pto.tile<16x16xu32>", "src": "!pto.tile<16x16xf32>",
                            "idx": "!pto.tile<16x1xu32, layout=DN>", "cdst": "!pto.tile<16x1xu32, layout=DN>",
                            "tmp": "!pto.tile<16x16xu32>", "offset": "index"},
                           scalars={"offset": 3})),
    constraints=(K.custom("idx covers dst (index form)", _gather_index_covers, "STRUCT_VALID_REGION"),
                 K.custom("offset only in the compare form", _gather_operands, "STRUCT_OPERAND_FORM"),
                 K.custom("the compare form takes idx (k_value)", _gather_thresholds, "STRUCT_MISSING_OPERAND"),
                 K.custom("the attributes of the form the operands select", _gather_attrs, "STRUCT_ATTR_VALUE"),
                 K.custom("mask form: src's valid region holds the selected columns or rows",
                          _gather_mask_region, "STRUCT_VALID_REGION"),
                 K.custom("compare form: dst covers src, idx and cdst cover one entry per src row",
                          _gather_compare_region, "STRUCT_VALID_REGION"),
                 K.custom("mask form: dst and src share one dtype (profiles narrow it: Values per profile)",
                          _gather_mask_dtypes,
                          "LEGAL_DTYPE"),
                 K.custom("index form: dst takes src's dtype; compare form: its own table, an i32/u32 cdst",
                          _gather_form_dtypes, "LEGAL_DTYPE"))))

_BYTE_ORDER = {Layout.ND: "C", Layout.DN: "F"}   # storage order of src's elements


def _tgatherb(dst: Tile, src: Tile, offsets: Tile) -> None:
    rows, cols = dst.valid
    blocks = -(-cols * dst.dtype.itemsize // BLOCK_BYTES)
    start = offsets.read(rows, blocks, "offsets").astype(np.int64)
    image = np.ascontiguousarray(np.ravel(src.data, order=_BYTE_ORDER[src.type.layout])).view(np.uint8)
    _check_range(start, max(image.size - BLOCK_BYTES + 1, 0), "offsets (start of a 32-byte block of src)")
    fetched = image[start[..., None] + np.arange(BLOCK_BYTES)]
    values = fetched.reshape(rows, blocks * BLOCK_BYTES).view(dst.dtype.np_dtype)
    dst.write(values[:, :cols], rows, cols)


def _gatherb_offsets(types: Types, attrs: Attrs) -> str | None:
    d, o = K.tile(types, "dst"), K.tile(types, "offsets")
    if d is None or o is None or not _known(d.valid_rows, d.valid_cols, o.valid_rows, o.valid_cols):
        return None
    blocks = -(-d.valid_cols * d.dtype.itemsize // BLOCK_BYTES)
    if o.valid_rows < d.valid_rows or o.valid_cols < blocks:
        return (f"offsets valid region {o.valid_rows}x{o.valid_cols} does not cover the "
                f"{d.valid_rows}x{blocks} blocks of dst")
    return None


_GATHERB_NPU = (dt.F32, dt.I32, dt.U32, dt.F16, dt.I16, dt.U16, dt.I8, dt.U8)
declare(Instruction(
    mnemonic="TGATHERB", family=Family.COMPLEX, summary="gather 32-byte blocks by byte offset",
    operands=(tile_out(), tile_in("src", "tile whose storage bytes are fetched"),
              tile_in("offsets", "u32 byte offset of each 32-byte block")),
    semantics=_tgatherb,
    dtypes=tuples(("dst", "src", "offsets"), [(d, d, dt.U32) for d in dt.INTS_32 + dt.FLOATS]),
    profile_dtypes={p: tuples(("dst", "src", "offsets"), [(d, d, dt.U32) for d in _GATHERB_NPU])
                    for p in ("a2", "a3", "a5")},
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc="Each row of dst is a sequence of 32-byte blocks: block b of row i (dst columns "
        "[b * 32 / sizeof, (b + 1) * 32 / sizeof)) receives the 32 bytes of src's storage starting at "
        "byte offsets[i, b]. src's storage is its static tile in its physical order: row-major for ND, "
        "column-major for DN; dst is row-major (ND). Offsets need no alignment. The domain is dst's valid "
        "region; offsets must cover dst.valid_rows x ceil(dst.valid_cols * sizeof / 32). When "
        "dst.valid_cols * sizeof is not a multiple of 32 (the hardware requires it), the last block is "
        "fetched whole and only its valid elements are written. Bytes are copied verbatim.",
    special_values="A block that does not lie inside src's storage (offset + 32 > src bytes) raises "
                   "RUNTIME_OOB; the public CPU simulator leaves that dst block untouched. Bit patterns "
                   "(NaN payloads, -0) are preserved.",
    example=Example({"dst": "!pto.tile<2x64xf32>", "src": "!pto.tile<16x64xf32>",
                     "offsets": "!pto.tile<2x8xu32>"}),
    constraints=(K.custom("offsets cover one entry per 32-byte block of dst's valid region", _gatherb_offsets,
                          "STRUCT_VALID_REGION"),
                 K.layout_in("dst", Layout.ND), K.layout_in("src", Layout.ND, Layout.DN))))


def _last_writers(keys: np.ndarray) -> np.ndarray:
    """Positions of the last occurrence of each distinct key: the last writer wins."""
    _, first_from_end = np.unique(keys[::-1], return_index=True)
    return keys.size - 1 - first_from_end


def _scatter_mask(dst: Tile, src: Tile, pattern: MaskPattern, axis: ScatterAxis) -> None:
    """Mask form: src's columns (SCATTER_ROW) or rows (SCATTER_COL) spread to every step-th one of
    dst from the pattern's first; every other element of dst's valid region becomes zero."""
    step, first = _PATTERN[pattern]
    rows, cols = src.valid
    along_rows = axis is ScatterAxis.SCATTER_ROW
    want = (rows, cols * step) if along_rows else (rows * step, cols)
    if tuple(dst.valid) != want:
        raise RuntimeFault("RUNTIME_VALID_REGION", "TSCATTER mask form: dst's valid region is not src's spread",
                           expected=f"dst valid region {want[0]}x{want[1]}",
                           actual=f"{dst.valid[0]}x{dst.valid[1]}")
    out = np.zeros(want, dst.dtype.np_dtype)
    values = src.read(rows, cols, "src")
    if along_rows:
        out[:, first::step] = values
    else:
        out[first::step, :] = values
    dst.write(out)


def _tscatter(dst: Tile, src: Tile, idx: Tile | None = None, maskPattern: MaskPattern = MaskPattern.P1111,  # noqa: N803
              scatterType: ScatterAxis = ScatterAxis.SCATTER_ROW) -> None:  # noqa: N803
    if idx is None:
        _scatter_mask(dst, src, maskPattern, scatterType)
        return
    if maskPattern is not MaskPattern.P1111 or scatterType is not ScatterAxis.SCATTER_ROW:
        raise _spec_fault("TSCATTER", "maskPattern and scatterType select the mask form, which takes no idx")
    rows, cols = src.valid
    target = idx.read(rows, cols, "idx").astype(np.int64)
    _check_range(target, dst.type.rows * dst.type.cols, "idx (flat offset into dst's static storage)")
    target = target.reshape(-1)
    keep = _last_writers(target)
    r, c = np.divmod(target[keep], dst.type.cols)
    dst.data[r, c] = src.read(rows, cols, "src").reshape(-1)[keep]


def _scatter_form(types: Types, attrs: Attrs) -> str | None:
    if "idx" in types and (attrs.get("maskPattern", MaskPattern.P1111) is not MaskPattern.P1111
                           or attrs.get("scatterType", ScatterAxis.SCATTER_ROW) is not ScatterAxis.SCATTER_ROW):
        return "maskPattern and scatterType select the mask form, which takes no idx operand"
    return None


def _scatter_mask_rules(types: Types, attrs: Attrs) -> str | None:
    d, s = K.tile(types, "dst"), K.tile(types, "src")
    if "idx" in types or d is None or s is None:
        return None
    step, _ = _PATTERN[attrs.get("maskPattern", MaskPattern.P1111)]
    along_rows = attrs.get("scatterType", ScatterAxis.SCATTER_ROW) is ScatterAxis.SCATTER_ROW
    fr, fc = (1, step) if along_rows else (step, 1)
    for axis, f, dv, sv in (("rows", fr, d.valid_rows, s.valid_rows), ("cols", fc, d.valid_cols, s.valid_cols)):
        if _known(dv, sv) and dv != sv * f:
            return f"mask form: dst valid {axis} {dv} must be {f} x src's {sv}"
    return None


def _scatter_mask_dtypes(types: Types, attrs: Attrs) -> str | None:
    d, s = K.tile(types, "dst"), K.tile(types, "src")
    if "idx" in types or d is None or s is None:
        return None
    if d.dtype != s.dtype or d.dtype not in _SCATTER_DATA:
        return f"the mask form takes one dtype of {', '.join(map(str, _SCATTER_DATA))}, got {d.dtype} and {s.dtype}"
    return None


_SCATTER_DATA = (dt.F32, dt.I32, dt.U32, dt.F16, dt.BF16, dt.I16, dt.U16, dt.I8, dt.U8)
_SCATTER_TYPES = ([(d, d, i) for d in (dt.F32, dt.I32, dt.U32) for i in (dt.I32, dt.U32)]
                  + [(d, d, i) for d in (dt.F16, dt.BF16, dt.I16, dt.U16, dt.I8, dt.U8)
                     for i in (dt.I16, dt.U16)])
_SCATTER_IDX_COVERS = K.covers(("idx",), "src")


def _index_form(rule: Any) -> Callable[[Types, Attrs], str | None]:
    """``rule`` checked only in the index form (idx given)."""
    return lambda types, attrs: rule.check(types, attrs) if "idx" in types else None


declare(Instruction(
    mnemonic="TSCATTER", family=Family.COMPLEX, summary="scatter elements to destination rows or by a mask pattern",
    operands=(tile_out(), tile_in("src", "scattered values"),
              tile_in("idx", "flat offset into dst's static tile of each src element; absent: mask form",
                      optional=True)),
    attrs=(Attr("maskPattern", MaskPattern, MaskPattern.P1111,
                "mask form (no idx): the dst columns (rows) that receive src"),
           Attr("scatterType", ScatterAxis, ScatterAxis.SCATTER_ROW,
                "mask form: SCATTER_ROW spreads columns of each row, SCATTER_COL whole rows")),
    semantics=_tscatter,
    dtypes=tuples(("dst", "src", "idx"), _SCATTER_TYPES),
    numerics=EXACT, domain=Domain.SRC, pipe=Pipe.V,
    doc="Index form: for every (i, j) in src's valid region, in row-major order: dst.flat[idx[i, j]] = "
        "src[i, j], where dst.flat is dst's whole static tile in logical row-major order (element r * "
        "dst.cols + c, valid or not; TGATHER's index form reads src the same way), so k = idx[i, j] writes "
        "dst[k // dst.cols, k % dst.cols]. The index is a flat element offset, not a row selector (the "
        "public implementations' reading; decision 'TSCATTER flat offsets'): to put src[i, j] in row r, "
        "column j, write r * dst.cols + j. When several elements target the same dst element the last one "
        "in row-major order wins. dst elements that no element targets are unspecified (some "
        "implementations zero the whole dst buffer first; the reference leaves them untouched), and so are "
        "targets outside dst's valid region. idx covers src's valid region and may have a static shape of "
        "its own: dst, src and idx are each addressed at their own row stride (the public kernels read idx "
        "at IdxTile::Cols, src at SrcTile::Cols; decision 'Shape rules of the public kernels'); "
        "index width follows the data: 4-byte data take i32/u32, 2- and 1-byte data take i16/u16 indices "
        "(A2/A3 and A5 tables are identical). "
        "Mask form (idx absent; the public TSCATTER<maskPattern, ScatterType>(dst, src)): with scatterType "
        "SCATTER_ROW (the default) dst[i, first + step * j] = src[i, j] and dst.valid_cols = step * "
        "src.valid_cols; with SCATTER_COL dst[first + step * i, j] = src[i, j] and dst.valid_rows = step * "
        "src.valid_rows; the other extent is equal, and every other element of dst's valid region is zero "
        "(step and first as TGATHER's patterns: P0101 (2, 0), P1010 (2, 1), P0001 (4, 0), P0010 (4, 1), "
        "P0100 (4, 2), P1000 (4, 3), P1111 (1, 0; a copy)). Valid regions that break this are "
        "STRUCT_VALID_REGION (RUNTIME_VALID_REGION when dynamic). Values are copied bit for bit.",
    special_values="An index outside [0, dst.rows * dst.cols) (negative signed indices included) raises "
                   "RUNTIME_OOB; the hardware does not check. The mask form's zeros are +0 of the dtype.",
    example=Example({"dst": "!pto.tile<16x16xf32>", "src": "!pto.tile<16x16xf32>",
                     "idx": "!pto.tile<16x16xi32>"}),
    more_examples=(Example({"dst": "!pto.tile<16x32xf32>", "src": "!pto.tile<16x16xf32>"},
                           attrs={"maskPattern": MaskPattern.P1010}),
                   Example({"dst": "!pto.tile<32x16xf32>", "src": "!pto.tile<8x16xf32>"},
                           attrs={"maskPattern": MaskPattern.P0100, "scatterType": ScatterAxis.SCATTER_COL})),
    constraints=(K.custom("index form: idx covers src", _index_form(_SCATTER_IDX_COVERS), "STRUCT_VALID_REGION"),
                 K.custom("maskPattern and scatterType only without idx", _scatter_form, "STRUCT_ATTR_VALUE"),
                 K.custom("mask form: dst's valid region is src's spread by the pattern", _scatter_mask_rules,
                          "STRUCT_VALID_REGION"),
                 K.custom("mask form: dst and src share one dtype", _scatter_mask_dtypes, "LEGAL_DTYPE"))))


# ----------------------------------------------------------------------------- TCI / TTRI

def _tci(dst: Tile, start: int | float, tmp: Tile | None = None, descending: bool = False) -> None:
    rows, cols = dst.valid
    if not rows:
        return
    step = -1 if descending else 1
    if dst.dtype.is_float:
        # start in dst's dtype (through f32, as every float scalar is carried), then each
        # element start +- k in f32 from start itself (not accumulated), rounded once to dst's dtype
        base = np.float32(float(start)).astype(dst.dtype.np_dtype).astype(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            values = base + np.float32(step) * np.arange(cols, dtype=np.float32)
        dst.write(values[None, :].astype(dst.dtype.np_dtype))
        return
    base = int(start) % (1 << dst.dtype.bits)
    values = base + step * np.arange(cols, dtype=np.int64)
    dst.write(C.wrap(values[None, :], dst.dtype))


# a2/a3 TCI.hpp: any 2- or 4-byte type (its scalar loop also serves half, bfloat16, float); a5
# Tci.hpp: (u)int16/32 only
_CI_TYPES = (dt.I32, dt.U32, dt.I16, dt.U16)
_CI_FLOATS = (dt.F32, dt.F16, dt.BF16)
declare(Instruction(
    mnemonic="TCI", family=Family.COMPLEX, summary="contiguous integer sequence",
    operands=(tile_out("dst", "first row receives the sequence"),
              scalar_in("start", "first value, converted to dst's dtype (integers wrap, floats round)"),
              tile_in("tmp", TMP_DOC, optional=True)),
    attrs=(Attr("descending", bool, False, "count down instead of up"),),
    semantics=_tci,
    dtypes=same(("dst",), _CI_TYPES + _CI_FLOATS),
    profile_dtypes={"a5": same(("dst",), _CI_TYPES)},
    numerics=EXACT, domain=Domain.ROW0, pipe=Pipe.S,
    doc="dst[0, k] = start + k (start - k with descending = true) for k < dst.valid_cols, in dst's dtype. "
        "Only the first row is written (nothing when dst.valid_rows = 0). The public CPU simulator "
        "requires a 1-row tile and A5 a tile with more than one column; openpto accepts any shape. The "
        "scalar's type should equal dst's dtype (the public template requires it). Integer dtypes wrap. "
        "Float dtypes (a2/a3's scalar loop takes any 2- or 4-byte type; A5 only integers): start is first "
        "converted to dst's dtype (RNE; an integer scalar through f64 and f32), then every element is "
        "computed from start itself, not accumulated: dst[0, k] = round(s +- k) with s +- k formed in f32 "
        "(k is exact there) and rounded once to dst's dtype (RNE; f32 needs no second rounding)." + TMP_NOTE,
    special_values="Integers wrap (two's complement): e.g. u16 start 65535 ascending gives 65535, 0, 1, ... "
                   "Floats: an inf start gives inf everywhere, NaN gives NaN; steps below the spacing of "
                   "start vanish (f16 2048 + 1 rounds to 2048, ties to even).",
    example=Example({"dst": "!pto.tile<1x16xi32>", "start": "i32"}, {"descending": False}, {"start": 5}),
    more_examples=(Example({"dst": "!pto.tile<1x16xu16>", "start": "u16", "tmp": "!pto.tile<1x16xu16>"},
                           {"descending": True}, {"start": 3}),)))


# a2/a3 TTri.hpp: (u)int32, (u)int16, half, float; a5 TTri.hpp adds (u)int8 and bfloat16 (and 64-bit
# integers, which openpto's vector dtypes leave out)
_TTRI_A2 = (dt.I32, dt.I16, dt.U32, dt.U16, dt.F16, dt.F32)
_TRIANGLE = {False: np.less_equal, True: np.greater_equal}   # upper -> test of j against i + diagonal


def _ttri(dst: Tile, diagonal: int, upper: bool = False) -> None:
    rows, cols = dst.valid
    d = max(-(rows + cols), min(int(diagonal), rows + cols))   # same result, no int64 overflow
    i, j = np.indices((rows, cols))
    dst.write(_TRIANGLE[upper](j, i + d).astype(dst.dtype.np_dtype), rows, cols)


declare(Instruction(
    mnemonic="TTRI", family=Family.COMPLEX, summary="triangular 0/1 mask",
    operands=(tile_out(), index_in("diagonal", "diagonal offset d (signed)")),
    attrs=(Attr("upper", bool, False, "upper instead of lower triangle"),),
    semantics=_ttri,
    dtypes=same(("dst",), _TTRI_A2 + (dt.I8, dt.U8, dt.BF16)),
    profile_dtypes={"a2": same(("dst",), _TTRI_A2), "a3": same(("dst",), _TTRI_A2)},
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc="Over dst's valid region: lower (upper = false): dst[i, j] = 1 if j <= i + d else 0; upper: "
        "dst[i, j] = 0 if j < i + d else 1 (1 on and above the d-th diagonal). d = 0 is the main "
        "diagonal, d > 0 above it, d < 0 below it. Values are 1 and 0 in dst's dtype (+0.0 for floats).",
    special_values="Any diagonal is legal: |d| >= rows + cols gives an all-0 or all-1 region.",
    example=Example({"dst": "!pto.tile<16x16xf32>", "diagonal": "index"}, {"upper": False}, {"diagonal": 0})))


# ----------------------------------------------------------------------------- TPARTADD / MUL / MAX / MIN

def _tpart(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., None]:
    def semantics(dst: Tile, src0: Tile, src1: Tile) -> None:
        rows, cols = dst.valid
        (r0, c0), (r1, c1) = [(min(rows, s.valid[0]), min(cols, s.valid[1])) for s in (src0, src1)]
        rb, cb = min(r0, r1), min(c0, c1)
        with np.errstate(all="ignore"):
            both = fn(C.widen(src0.data[:rb, :cb], src0.dtype), C.widen(src1.data[:rb, :cb], src1.dtype))
            both = C.narrow(both, dst.dtype)
        only0, only1 = src0.data[:r0, :c0].copy(), src1.data[:r1, :c1].copy()   # before dst may alias
        dst.write(only0)
        dst.write(only1)
        dst.write(both)
    return semantics


def _part_inside_dst(types: Types, attrs: Attrs) -> str | None:
    d = K.tile(types, "dst")
    for name in ("src0", "src1"):
        s = K.tile(types, name)
        if d is None or s is None:
            continue
        if any(_known(sv, dv) and sv > dv for sv, dv in zip(s.valid, d.valid)):
            return (f"{name} valid region {s.valid_rows}x{s.valid_cols} exceeds dst's "
                    f"{d.valid_rows}x{d.valid_cols}")
    return None


_PART_A2 = (dt.I32, dt.I16, dt.F16, dt.F32)
_PART_A5 = _PART_A2 + (dt.U8, dt.U16, dt.U32, dt.BF16)
_PART_DOC = ("Over dst's valid region: where (i, j) lies in the valid regions of both sources, dst[i, j] = "
             "{op}; where it lies in only one, that source's element is copied bit for bit; where it lies in "
             "neither, dst[i, j] is unspecified (the reference leaves it untouched; the public CPU "
             "simulator writes 0). The sources' valid regions must lie within dst's. A2/A3 additionally "
             "require one source's region to equal dst's; A5 only the containment.")


def _part(mnemonic: str, summary: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], op: str,
          numerics: Numerics, special: str) -> None:
    names = ("dst", "src0", "src1")
    declare(Instruction(
        mnemonic=mnemonic, family=Family.COMPLEX, summary=summary,
        operands=(tile_out(), tile_in("src0", "source 0 (its own valid region)"),
                  tile_in("src1", "source 1 (its own valid region)")),
        semantics=_tpart(fn), dtypes=same(names, dt.NUMERIC),
        profile_dtypes={"a2": same(names, _PART_A2), "a3": same(names, _PART_A2), "a5": same(names, _PART_A5)},
        numerics=numerics, domain=Domain.DST, pipe=Pipe.V, doc=_PART_DOC.format(op=op),
        special_values=special,
        example=Example({"dst": "!pto.tile<16x16xf32>", "src0": "!pto.tile<16x16xf32>",
                         "src1": "!pto.tile<16x16xf32, valid=8x16>"}),
        constraints=(K.custom("src0's and src1's valid regions lie within dst's", _part_inside_dst,
                              "STRUCT_VALID_REGION"),)))


_part("TPARTADD", "add over the union of two valid regions", np.add, "src0[i, j] + src1[i, j]", ROUNDED,
      "As TADD where both are valid: inf + -inf = NaN; integers wrap. Copies preserve bit patterns.")
_part("TPARTMUL", "multiply over the union of two valid regions", np.multiply, "src0[i, j] * src1[i, j]",
      ROUNDED, "As TMUL where both are valid: 0 * inf = NaN; integers keep the low bits. Copies preserve "
               "bit patterns.")
_part("TPARTMAX", "maximum over the union of two valid regions", C.ieee_max, "max(src0[i, j], src1[i, j])",
      EXACT, "As TMAX where both are valid: NaN propagates, max(-0, +0) = +0.")
_part("TPARTMIN", "minimum over the union of two valid regions", C.ieee_min, "min(src0[i, j], src1[i, j])",
      EXACT, "As TMIN where both are valid: NaN propagates, min(-0, +0) = -0.")


# ----------------------------------------------------------------------------- TQUANT

_QUANT_DST = {QuantType.INT8_SYM: dt.I8, QuantType.INT8_ASYM: dt.U8}
_QUANT_RANGE = {QuantType.INT8_SYM: (-128, 127), QuantType.INT8_ASYM: (0, 255)}


def _tquant(dst: Tile, src: Tile, scale: Tile, quantType: QuantType,  # noqa: N803
            offset: Tile | None = None) -> None:
    if (offset is not None) != (quantType is QuantType.INT8_ASYM):
        raise _spec_fault("TQUANT", "an offset tile is given exactly with INT8_ASYM")
    rows, cols = dst.valid
    x = src.read(rows, cols, "src").astype(np.float32)
    s = scale.read(rows, 1, "scale").astype(np.float32)
    o = offset.read(rows, 1, "offset").astype(np.float32) if offset is not None else np.float32(0)
    lo, hi = _QUANT_RANGE[quantType]
    with np.errstate(all="ignore"):
        q = np.clip(np.rint(x * s + o), lo, hi)   # two f32 roundings, as the hardware's mul then add
    dst.write(np.where(np.isnan(q), 0, q).astype(dst.dtype.np_dtype), rows, cols)


def _quant(types: Types, attrs: Attrs) -> tuple[QuantType | None, TileType | None]:
    q = attrs.get("quantType")
    return (q if isinstance(q, QuantType) else None), K.tile(types, "dst")


def _quant_dst_dtype(types: Types, attrs: Attrs) -> str | None:
    q, d = _quant(types, attrs)
    if q is None or d is None or d.dtype == _QUANT_DST[q]:
        return None
    return f"{q.name} writes {_QUANT_DST[q]}, dst is {d.dtype}"


def _quant_needs_offset(types: Types, attrs: Attrs) -> str | None:
    q, _ = _quant(types, attrs)
    return "INT8_ASYM needs an offset tile" if q is QuantType.INT8_ASYM and "offset" not in types else None


def _quant_no_offset(types: Types, attrs: Attrs) -> str | None:
    q, _ = _quant(types, attrs)
    return "INT8_SYM takes no offset tile" if q is QuantType.INT8_SYM and "offset" in types else None


def _quant_offset_dtype(types: Types, attrs: Attrs) -> str | None:
    o = K.tile(types, "offset")
    return None if o is None or o.dtype == dt.F32 else f"offset is {o.dtype}, must be f32"


def _quant_params(types: Types, attrs: Attrs) -> str | None:
    d = K.tile(types, "dst")
    for name in ("scale", "offset"):
        p = K.tile(types, name)
        if d is None or p is None:
            continue
        if _known(p.valid_rows, d.valid_rows) and p.valid_rows < d.valid_rows:
            return f"{name} valid rows {p.valid_rows} < dst valid rows {d.valid_rows}"
        if p.valid_cols == 0:
            return f"{name} has no valid column"
    return None


_QUANT_TYPES = [(dt.I8, dt.F32, dt.F32), (dt.U8, dt.F32, dt.F32)]
declare(Instruction(
    mnemonic="TQUANT", family=Family.COMPLEX, summary="quantise f32 rows to 8-bit integers",
    operands=(tile_out("dst", "i8 (INT8_SYM) or u8 (INT8_ASYM)"), tile_in("src", "f32 values"),
              tile_in("scale", "per-row f32 scale in column 0 (an Rx1 tile, DN recommended)"),
              tile_in("offset", "per-row f32 zero point in column 0; INT8_ASYM only", optional=True)),
    attrs=(Attr("quantType", QuantType, None, "INT8_SYM (i8 result) or INT8_ASYM (u8 result, offset)"),),
    semantics=_tquant,
    dtypes=tuples(("dst", "src", "scale"), _QUANT_TYPES),
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc="Over dst's valid region: t = f32(src[i, j] * scale[i, 0]) for INT8_SYM, t = "
        "f32(f32(src[i, j] * scale[i, 0]) + offset[i, 0]) for INT8_ASYM (each step rounded to f32, RNE); "
        "dst[i, j] = t rounded to the nearest integer, ties to even, then saturated to [-128, 127] (i8) "
        "or [0, 255] (u8). scale and offset are read in column 0 of rows 0 .. dst.valid_rows - 1. src is "
        "not modified: the A2/A3 implementation computes in place in src's buffer, so a backend for it "
        "copies src first when src is still live. The A5-only MXFP8 mode is not part of this instruction.",
    special_values="NaN (in src, scale or offset, or 0 * inf) gives 0; +inf and overflow saturate to the "
                   "maximum (127 / 255), -inf to the minimum (-128 / 0); ties round to even (2.5 -> 2, "
                   "-2.5 -> -2).",
    example=Example({"dst": "!pto.tile<16x32xi8>", "src": "!pto.tile<16x32xf32>",
                     "scale": "!pto.tile<16x1xf32, layout=DN>"}, {"quantType": QuantType.INT8_SYM}),
    more_examples=(Example({"dst": "!pto.tile<16x32xu8>", "src": "!pto.tile<16x32xf32>",
                            "scale": "!pto.tile<16x1xf32, layout=DN>",
                            "offset": "!pto.tile<16x1xf32, layout=DN>"}, {"quantType": QuantType.INT8_ASYM}),),
    constraints=(K.covers(("src",)),
                 K.custom("scale and offset have a valid column for every valid row of dst", _quant_params,
                          "STRUCT_VALID_REGION"),
                 K.custom("INT8_ASYM takes an offset tile", _quant_needs_offset, "STRUCT_MISSING_OPERAND"),
                 K.custom("INT8_SYM takes no offset tile", _quant_no_offset, "STRUCT_ATTR_VALUE"),
                 K.custom("dst is i8 for INT8_SYM and u8 for INT8_ASYM", _quant_dst_dtype, "LEGAL_DTYPE"),
                 K.custom("offset is f32", _quant_offset_dtype, "LEGAL_DTYPE"))))


# ----------------------------------------------------------------------------- TPRINT

Sink = Callable[[str], Any] | list | None


def _render(tile: Tile) -> str:
    """One header line, then one line per valid row; floats in numpy's shortest round-trip form."""
    rows, cols = tile.valid
    cell = str if tile.dtype.is_float else (lambda v: str(int(v)))
    cells = [[cell(v) for v in row] for row in tile.region()]
    width = max((len(c) for row in cells for c in row), default=0)
    head = f"tprint {tile.type.rows}x{tile.type.cols}x{tile.dtype.name} valid={rows}x{cols}"
    return "\n".join([head] + ["  " + " ".join(c.rjust(width) for c in row) for row in cells]) + "\n"


def _print_scratch(types: Types, attrs: Attrs) -> str | None:
    s, g = K.tile(types, "src"), types.get("tmp")
    if s is None or not isinstance(g, GlobalType) or any(d is None for d in g.shape):
        return None
    have = int(np.prod(g.shape))
    return None if have >= s.rows * s.cols else f"tmp holds {have} elements, src has {s.rows * s.cols}"


def _tprint(src: Tile, tmp: Any = None, sink: Sink = None) -> None:
    text = _render(src)
    if sink is None:
        sys.stdout.write(text)
    elif isinstance(sink, list):
        sink.append(text)
    else:
        sink(text)


declare(Instruction(
    mnemonic="TPRINT", family=Family.COMPLEX, summary="print a tile's valid region (debug)",
    operands=(tile_in("src", "tile to print"),
              Operand("tmp", Role.IN, Kind.GLOBAL, "global scratch of the public Acc/Mat print (at least "
                      "src.rows * src.cols elements); accepted and never read or written", optional=True,
                      window=WHOLE)),
    semantics=_tprint,
    constraints=(K.custom("tmp holds src's static elements", _print_scratch, "STRUCT_SHAPE"),),
    dtypes=same(("src",), dt.STORABLE),
    profile_dtypes={p: same(("src",), (dt.F32, dt.F16, dt.I8, dt.I16, dt.I32, dt.U8, dt.U16, dt.U32))
                    for p in ("a2", "a3", "a5")},
    numerics=Numerics("exact", note="writes no tile; the printed text is diagnostic output that conformance "
                                    "does not compare"),
    domain=Domain.SRC, pipe=Pipe.S,
    doc="Writes a text rendering of src's valid region and changes nothing: a header line "
        "'tprint RxCxT valid=VRxVC', then one line per valid row with the values right-aligned in "
        "columns; floats print in the shortest form that round-trips in their own dtype (nan, inf, -0.0 "
        "spelled so), integers in decimal, i1 as 0/1. The reference semantics take a keyword `sink`: a "
        "list (the text is appended), a callable (called with the text) or None (sys.stdout); backends "
        "route the text to their own debug stream. The public NPU form prints with %6.2f / %6d, marks "
        "the invalid part with '|' and brackets the print with pipe_barrier(PIPE_ALL); it can also "
        "print a global tensor, which openpto's TPRINT does not. The optional tmp is the public "
        "TPRINT(src, tmp) global scratch (used there to stage Acc and Mat tiles through GM): it must hold "
        "src.rows * src.cols elements of any dtype when both are static (STRUCT_SHAPE) and is never read "
        "or written, so its contents are unchanged.",
    special_values="Values are read, never modified; elements outside the valid region are not printed.",
    example=Example({"src": "!pto.tile<16x16xf32>"})))
