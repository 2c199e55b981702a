"""Rearrangement within rows: TCONCAT (join two tiles' rows), TINTERLEAVE / TDEINTERLEAVE
(merge or split even/odd element streams), and THISTOGRAM (per-row counts of one byte of
each element, the radix-sort bucket primitive). Every one works row by row on row-major (ND)
tiles; values move bit for bit, nothing is rounded.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .. import constraints as K
from .. import dtypes as dt
from ..attrs import HistByte
from ..diagnostics import RuntimeFault
from ..registry import declare
from ..spec import Attr, Constraint, Domain, EXACT, Example, Family, Instruction, same, tuples
from ..types import Layout, Pipe, Type
from ..values import Tile
from ._helpers import tile_in, tile_out

Types = Mapping[str, Type]
Attrs = Mapping[str, Any]

BINS = 256



def _row_major(*names: str) -> tuple[Constraint, ...]:
    return tuple(K.layout_in(n, Layout.ND) for n in names)


def _same_valid(a: str, b: str) -> tuple[Constraint, ...]:
    return (K.equal(a, "valid_rows", b, "valid_rows", "STRUCT_VALID_REGION"),
            K.equal(a, "valid_cols", b, "valid_cols", "STRUCT_VALID_REGION"))


def _need_same_valid(a: Tile, b: Tile, a_name: str, b_name: str) -> None:
    if a.valid != b.valid:
        raise RuntimeFault("RUNTIME_VALID_REGION", f"{b_name}'s valid region differs from {a_name}'s",
                           expected=f"{a.valid[0]}x{a.valid[1]}", actual=f"{b.valid[0]}x{b.valid[1]}")


# ----------------------------------------------------------------------------- TCONCAT


_IDX = ("dstIdx", "src0Idx", "src1Idx")
CONCAT_INDEX = dt.INTS_32   # the public index element types


def concat_counts(n0: int, n1: int, width: int, unit: int) -> tuple[int, int]:
    """Columns taken from src0 and src1 in one row of the indexed form: each count is the index
    value over the index element's size (``unit`` bytes, the division every public
    implementation makes), src0's clamped to dst's valid width, src1's to what is left."""
    c0 = min(n0 // unit, width)
    return c0, min(n1 // unit, width - c0)


def _indexed_counts(dst: Tile, src0: Tile, src1: Tile, src0Idx: Tile, src1Idx: Tile,  # noqa: N803
                    dstIdx: Tile | None) -> list[tuple[int, int]]:
    """Every row's (c0, c1), checked before anything is written (faults in row order)."""
    r, width = dst.valid
    for t, name in ((src0, "src0"), (src1, "src1"), (src0Idx, "src0Idx"), (src1Idx, "src1Idx")):
        if t.valid[0] < r or (name.endswith("Idx") and t.valid[1] < 1):
            raise RuntimeFault("RUNTIME_VALID_REGION", f"{name}'s valid region does not cover dst's rows",
                               expected=f"at least {r} valid rows" + (" and 1 column" if name.endswith("Idx") else ""),
                               actual=f"{t.valid[0]}x{t.valid[1]}")
    if dstIdx is not None and dstIdx.valid != (r, 1):
        raise RuntimeFault("RUNTIME_VALID_REGION", "dstIdx's valid region is not one column per dst row",
                           expected=f"{r}x1", actual=f"{dstIdx.valid[0]}x{dstIdx.valid[1]}")
    unit = src0Idx.dtype.itemsize
    rows = []
    for i in range(r):
        n0, n1 = int(src0Idx.data[i, 0]), int(src1Idx.data[i, 0])
        for n, name in ((n0, "src0Idx"), (n1, "src1Idx")):
            if n < 0:
                raise RuntimeFault("RUNTIME_OOB", f"{name} holds a negative count",
                                   expected="a count >= 0", actual=f"{n} in row {i}")
        c0, c1 = concat_counts(n0, n1, width, unit)
        for c, t, name in ((c0, src0, "src0"), (c1, src1, "src1")):
            if c > t.valid[1]:
                raise RuntimeFault("RUNTIME_INVALID_READ", f"{name} is read outside its valid region",
                                   expected=f"{c} columns in row {i} inside the valid region",
                                   actual=f"{t.valid[1]} valid columns")
        rows.append((c0, c1))
    return rows


def _tconcat(dst: Tile, src0: Tile, src1: Tile, dstIdx: Tile | None = None,  # noqa: N803
             src0Idx: Tile | None = None, src1Idx: Tile | None = None) -> None:
    r, c = dst.valid
    if src0Idx is not None and src1Idx is not None:
        rows = _indexed_counts(dst, src0, src1, src0Idx, src1Idx, dstIdx)
        a, b = src0.data[:r].copy(), src1.data[:r].copy()   # dst may be a source (in place)
        for i, (c0, c1) in enumerate(rows):
            dst.data[i, :c0] = a[i, :c0]
            dst.data[i, c0:c0 + c1] = b[i, :c1]
            if dstIdx is not None:
                dstIdx.data[i, 0] = (c0 + c1) * src0Idx.dtype.itemsize
        return
    c0, c1 = src0.valid[1], src1.valid[1]
    if c != c0 + c1:
        raise RuntimeFault("RUNTIME_VALID_REGION", "dst's valid columns are not src0's plus src1's",
                           expected=f"dst.valid_cols = {c0} + {c1} = {c0 + c1}", actual=c)
    a = src0.read(r, c0, "src0").copy()      # copies first: dst may be a source (in place)
    b = src1.read(r, c1, "src1").copy()
    dst.write(a)
    dst.data[:r, c0:c0 + c1] = b


def _concat_cols(types: Types, attrs: Attrs) -> str | None:
    """The basic form's width rule (the indexed forms take their widths from the index tiles)."""
    d, a, b = K.tile(types, "dst"), K.tile(types, "src0"), K.tile(types, "src1")
    if "src0Idx" in types or d is None or a is None or b is None or None in (d.valid_cols, a.valid_cols, b.valid_cols):
        return None
    if d.valid_cols != a.valid_cols + b.valid_cols:
        return (f"dst.valid_cols = {d.valid_cols}, src0.valid_cols + src1.valid_cols = "
                f"{a.valid_cols + b.valid_cols}")
    return None


def _concat_gap(types: Types, attrs: Attrs) -> str | None:
    """src1Idx without src0Idx cannot be written positionally (the verifier's missing operand)."""
    if "src1Idx" in types and "src0Idx" not in types:
        return "src1Idx is given without src0Idx"
    return None


def _concat_form(types: Types, attrs: Attrs) -> str | None:
    """src0Idx and src1Idx come together; dstIdx only with them."""
    given = [n for n in _IDX if n in types]
    if given and "src0Idx" in given and "src1Idx" not in given or given == ["dstIdx"]:
        return f"an indexed TCONCAT names src0Idx and src1Idx (dstIdx optional), got {', '.join(given)}"
    return None


def _concat_index_dtypes(types: Types, attrs: Attrs) -> str | None:
    """Index tiles share one integer element type from the public list."""
    ds = {n: t.dtype for n in _IDX if (t := K.tile(types, n)) is not None}
    if not ds:
        return None
    bad = [f"{n} = {d}" for n, d in ds.items() if d not in CONCAT_INDEX]
    if bad:
        return f"index tiles are {'/'.join(d.name for d in CONCAT_INDEX)}: {', '.join(bad)}"
    if len(set(ds.values())) > 1:
        return "index tiles differ in dtype: " + ", ".join(f"{n} = {d}" for n, d in ds.items())
    return None


def _concat_index_shapes(types: Types, attrs: Attrs) -> str | None:
    """Index tiles cover dst's rows; dstIdx is one column per dst row; every count fits dstIdx."""
    d = K.tile(types, "dst")
    if d is None:
        return None
    for n in _IDX:
        t = K.tile(types, n)
        if t is None:
            continue
        if None not in (t.valid_rows, d.valid_rows) and t.valid_rows < d.valid_rows:
            return f"{n}.valid_rows = {t.valid_rows} does not cover dst.valid_rows = {d.valid_rows}"
        if n == "dstIdx":
            if t.valid_cols is not None and t.valid_cols != 1:
                return f"dstIdx.valid_cols = {t.valid_cols}, must be 1"
            if None not in (t.valid_rows, d.valid_rows) and t.valid_rows != d.valid_rows:
                return f"dstIdx.valid_rows = {t.valid_rows}, dst.valid_rows = {d.valid_rows}"
            top = int(np.iinfo(t.dtype.np_dtype).max)
            if d.cols * t.dtype.itemsize > top:
                return (f"dstIdx ({t.dtype}) cannot hold {d.cols} columns x {t.dtype.itemsize}: the largest "
                        f"count is {top}")
        elif t.valid_cols is not None and t.valid_cols < 1:
            return f"{n} has no valid column"
    return None


declare(Instruction(
    mnemonic="TCONCAT", family=Family.MOVEMENT, summary="join two tiles' rows side by side",
    operands=(tile_out(), tile_in("src0", "left part of each row"), tile_in("src1", "right part of each row"),
              tile_out("dstIdx", "indexed form: per row, the count written (one column)", optional=True),
              tile_in("src0Idx", "indexed form: per row, src0's count in column 0", optional=True),
              tile_in("src1Idx", "indexed form: per row, src1's count in column 0", optional=True)),
    semantics=_tconcat, dtypes=same(("dst", "src0", "src1"), dt.NUMERIC),
    numerics=EXACT, domain=Domain.SPECIAL, pipe=Pipe.V,
    doc=("Basic form: for every row i < dst.valid_rows, dst[i, j] = src0[i, j] for j < c0 and dst[i, j] = "
         "src1[i, j - c0] for c0 <= j < c0 + c1, where c0 = src0.valid_cols and c1 = src1.valid_cols. "
         "dst.valid_cols must equal c0 + c1 (the A5 rule; STRUCT_VALID_REGION, or RUNTIME_VALID_REGION when "
         "dynamic) and both sources' valid rows must cover dst's. Indexed forms (src0Idx and src1Idx given; "
         "dstIdx optional): the widths vary per row. With u = the index element's size in bytes (1, 2 or 4), "
         "row i takes c0 = min(src0Idx[i, 0] // u, dst.valid_cols) columns of src0 and c1 = "
         "min(src1Idx[i, 0] // u, dst.valid_cols - c0) of src1, placed as in the basic form; dstIdx[i, 0] = "
         "(c0 + c1) * u. The counts are thus in units of the index element's size, whatever the data dtype "
         "(every public implementation divides by sizeof(index)); they equal byte counts when data and index "
         "have the same width. Columns c0 + c1 .. of dst's row are left as they were. A negative count is "
         "RUNTIME_OOB; c0 beyond src0's valid columns or c1 beyond src1's is RUNTIME_INVALID_READ; the index "
         "tiles must cover dst's valid rows with at least one column, dstIdx's valid region is exactly "
         "dst.valid_rows x 1, and dst's static columns times u must fit dstIdx's dtype (STRUCT_*, or "
         "RUNTIME_VALID_REGION when dynamic). Index tiles are row-major, share one dtype among i8, u8, i16, "
         "u16, i32, u32. All tiles are row-major (ND) vec tiles; data tiles share one dtype; values are "
         "copied bit for bit; dst may be a source. Public spellings: `%dst = tconcat %src0, %src1`, "
         "`%dst = tconcat %src0, %src1, %src0Idx, %src1Idx`, `%dst, %dstIdx = tconcat %src0, %src1, "
         "%src0Idx, %src1Idx` (C++ order: dst, src0, src1, [dstIdx,] src0Idx, src1Idx)."),
    special_values="A copy: NaN payloads, ±inf, -0 and denormals are preserved.",
    # the indexed form first: conformance derives the basic form from it by dropping the indices
    example=Example({"dst": "!pto.tile<16x64xf32>", "src0": "!pto.tile<16x32xf32>",
                     "src1": "!pto.tile<16x32xf32>", "dstIdx": "!pto.tile<16x8xi32, valid=16x1>",
                     "src0Idx": "!pto.tile<16x8xi32>", "src1Idx": "!pto.tile<16x8xi32>"}),
    more_examples=(Example({"dst": "!pto.tile<16x32xf32>", "src0": "!pto.tile<16x16xf32>",
                            "src1": "!pto.tile<16x16xf32>"}),),
    constraints=(_row_major("dst", "src0", "src1", *_IDX)
                 + (K.custom("dst.valid_cols == src0.valid_cols + src1.valid_cols (basic form)", _concat_cols,
                             "STRUCT_VALID_REGION"),
                    K.custom("src0Idx before src1Idx", _concat_gap, "STRUCT_MISSING_OPERAND"),
                    K.custom("src0Idx and src1Idx together; dstIdx only with them", _concat_form,
                             "STRUCT_OPERAND_FORM"),
                    K.custom("index tiles share one dtype among i8, u8, i16, u16, i32, u32", _concat_index_dtypes,
                             "LEGAL_DTYPE"),
                    K.custom("index tiles cover dst's rows; dstIdx is dst.valid_rows x 1 and holds every count",
                             _concat_index_shapes, "STRUCT_VALID_REGION"),
                    K.at_least("src0", "valid_rows", "dst", "valid_rows", "STRUCT_VALID_REGION"),
                    K.at_least("src1", "valid_rows", "dst", "valid_rows", "STRUCT_VALID_REGION")))))


# ----------------------------------------------------------------------------- TINTERLEAVE / TDEINTERLEAVE

_A5_ONLY = ("cpu", "a5")   # the public headers implement them on A5 and the CPU simulator only


def _tinterleave(dst0: Tile, dst1: Tile, src0: Tile, src1: Tile) -> None:
    r, c = dst0.valid
    _need_same_valid(dst0, dst1, "dst0", "dst1")
    stream = np.empty((r, 2 * c), dst0.data.dtype)
    stream[:, 0::2] = src0.read(r, c, "src0")
    stream[:, 1::2] = src1.read(r, c, "src1")
    dst0.write(stream[:, :c])
    dst1.write(stream[:, c:])


def _tdeinterleave(dst0: Tile, dst1: Tile, src0: Tile, src1: Tile | None = None) -> None:
    r, c = dst0.valid
    _need_same_valid(dst0, dst1, "dst0", "dst1")
    if src1 is None:
        stream = src0.read(r, 2 * c, "src0").copy()
    else:
        stream = np.concatenate([src0.read(r, c, "src0"), src1.read(r, c, "src1")], axis=1)
    dst0.write(stream[:, 0::2])
    dst1.write(stream[:, 1::2])


def _single_source_covers(types: Types, attrs: Attrs) -> str | None:
    """Without src1, src0 holds the whole stream: dst0.valid_rows x (2 * dst0.valid_cols)."""
    d, s = K.tile(types, "dst0"), K.tile(types, "src0")
    if d is None or s is None or "src1" in types:
        return None
    if None not in (d.valid_cols, s.valid_cols) and s.valid_cols < 2 * d.valid_cols:
        return f"src0.valid_cols = {s.valid_cols}, the single-source form needs 2 * {d.valid_cols}"
    if None not in (d.valid_rows, s.valid_rows) and s.valid_rows < d.valid_rows:
        return f"src0.valid_rows = {s.valid_rows} does not cover dst0.valid_rows = {d.valid_rows}"
    return None


def _two_sources_cover(types: Types, attrs: Attrs) -> str | None:
    if "src1" not in types:
        return None
    return K.covers(("src0", "src1"), "dst0").check(types, attrs)


_INTERLEAVE_NAMES = ("dst0", "dst1", "src0", "src1")

declare(Instruction(
    mnemonic="TINTERLEAVE", family=Family.MOVEMENT, summary="interleave two tiles' rows into two halves",
    operands=(tile_out("dst0", "first half of each interleaved row"),
              tile_out("dst1", "second half of each interleaved row"),
              tile_in("src0", "elements for the even positions"), tile_in("src1", "elements for the odd positions")),
    semantics=_tinterleave, dtypes=same(_INTERLEAVE_NAMES, dt.NUMERIC), profiles=_A5_ONLY,
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc=("With (R, C) = dst0's valid region, each row i < R forms the stream s[2k] = src0[i, k], "
         "s[2k + 1] = src1[i, k] for k < C, and dst0[i, j] = s[j], dst1[i, j] = s[C + j] for j < C. dst1's "
         "valid region equals dst0's and both sources' cover it (STRUCT_VALID_REGION, or "
         "RUNTIME_VALID_REGION / RUNTIME_INVALID_READ when dynamic). C may be odd (A5 asserts it even; "
         "the formula is defined for every C). Row-major (ND) vec tiles of one dtype; values are copied bit "
         "for bit; a destination may be a source. The public C++ order is (dst1, dst0, src1, src0); the "
         "assembly order, used here, is `%dst0, %dst1 = tinterleave %src0, %src1`. The inverse of "
         "TDEINTERLEAVE's two-source form."),
    special_values="A copy: NaN payloads, ±inf, -0 and denormals are preserved.",
    example=Example({n: "!pto.tile<16x16xf32>" for n in _INTERLEAVE_NAMES}),
    constraints=(_row_major(*_INTERLEAVE_NAMES) + _same_valid("dst0", "dst1")
                 + (K.covers(("src0", "src1"), "dst0"),))))

declare(Instruction(
    mnemonic="TDEINTERLEAVE", family=Family.MOVEMENT,
    summary="split rows into their even and odd elements",
    operands=(tile_out("dst0", "even positions of each row's stream"),
              tile_out("dst1", "odd positions of each row's stream"),
              tile_in("src0", "first half of the stream (two-source form), or the whole stream (the public "
                              "single-source form's src)"),
              tile_in("src1", "second half of the stream; absent in the single-source form", optional=True)),
    semantics=_tdeinterleave, dtypes=same(("dst0", "dst1", "src0"), dt.NUMERIC), profiles=_A5_ONLY,
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    doc=("With (R, C) = dst0's valid region and, for each row i < R, the stream s of 2C elements: "
         "dst0[i, k] = s[2k] and dst1[i, k] = s[2k + 1] for k < C. Two-source form "
         "(`%dst0, %dst1 = tdeinterleave %src0, %src1`): s = src0[i, 0..C) followed by src1[i, 0..C); both "
         "sources cover dst0's valid region. Single-source form (`%dst0, %dst1 = tdeinterleave %src`): "
         "s = src[i, 0..2C), so src's valid region must cover R x 2C. dst1's valid region equals dst0's "
         "(STRUCT_VALID_REGION, or RUNTIME_VALID_REGION / RUNTIME_INVALID_READ when dynamic). Row-major (ND) "
         "vec tiles of one dtype (src1 too, LEGAL_DTYPE); values are copied bit for bit; a destination may "
         "be a source. The public C++ order is (dst1, dst0, src1, src0) and (dst1, dst0, src). The inverse "
         "of TINTERLEAVE."),
    special_values="A copy: NaN payloads, ±inf, -0 and denormals are preserved.",
    example=Example({"dst0": "!pto.tile<16x16xf32, valid=16x8>", "dst1": "!pto.tile<16x16xf32, valid=16x8>",
                     "src0": "!pto.tile<16x16xf32>", "src1": "!pto.tile<16x16xf32, valid=16x8>"}),
    constraints=(_row_major(*_INTERLEAVE_NAMES) + _same_valid("dst0", "dst1")
                 + (K.custom("src1, when given, has src0's dtype",
                             lambda types, attrs: _same_dtype(types, "src1", "src0"), "LEGAL_DTYPE"),
                    K.custom("two-source form: src0 and src1 cover dst0's valid region", _two_sources_cover,
                             "STRUCT_VALID_REGION"),
                    K.custom("single-source form: src0 covers dst0.valid_rows x 2 * dst0.valid_cols",
                             _single_source_covers, "STRUCT_VALID_REGION")))))


def _same_dtype(types: Types, a: str, b: str) -> str | None:
    ta, tb = K.tile(types, a), K.tile(types, b)
    if ta is None or tb is None or ta.dtype == tb.dtype:
        return None
    return f"{a} has dtype {ta.dtype}, {b} has {tb.dtype}"


# ----------------------------------------------------------------------------- THISTOGRAM

def _filters(src_dtype: dt.DType, byte: int) -> tuple[int, ...]:
    """The upper bytes (most significant first) an element must match for ``byte`` to count."""
    top = src_dtype.itemsize - 1
    return tuple(range(top, byte, -1))


def _thistogram(dst: Tile, src: Tile, idx: Tile | None = None, *, byte: HistByte) -> None:
    byte = HistByte(byte).value
    r, c = src.valid
    if dst.valid != (r, BINS):
        raise RuntimeFault("RUNTIME_VALID_REGION", "dst's valid region is not one row of 256 bins per source row",
                           expected=f"{r}x{BINS}", actual=f"{dst.valid[0]}x{dst.valid[1]}")
    x = src.read(r, c, "src").astype(np.uint64)
    keep = np.ones((r, c), bool)
    upper = _filters(src.dtype, byte)
    if upper:
        if idx is None:
            raise RuntimeFault("RUNTIME_INVALID_READ", "THISTOGRAM needs idx for this byte",
                               expected="an idx tile", actual="none")
        if src.dtype.itemsize == 2:                       # one match byte per source row
            want = idx.read(r, 1, "idx")[:, :1].astype(np.uint64)
            keep &= (x >> np.uint64(8)) == want
        else:                                             # filter byte m in idx[m, 0], for every row
            f = idx.read(len(upper), 1, "idx")[:, 0].astype(np.uint64)
            for m, b in enumerate(upper):
                keep &= ((x >> np.uint64(8 * b)) & np.uint64(0xFF)) == f[m]
    digit = ((x >> np.uint64(8 * byte)) & np.uint64(0xFF)).astype(np.int64)
    counts = np.zeros((r, BINS), np.uint32)
    for i in range(r):
        counts[i] = np.bincount(digit[i][keep[i]], minlength=BINS)
    dst.write(counts)


def _hist_rules(types: Types, attrs: Attrs) -> str | None:
    s, i = K.tile(types, "src"), K.tile(types, "idx")
    hist = attrs.get("byte")
    if s is None or not isinstance(hist, HistByte):
        return None
    byte = hist.value
    if not 0 <= byte < s.dtype.itemsize:
        return f"byte = {hist.name}; a {s.dtype} source has BYTE_0..BYTE_{s.dtype.itemsize - 1}"
    upper = _filters(s.dtype, byte)
    if not upper:
        return None
    if i is None:
        return f"byte = {byte} of a {s.dtype} source filters on the upper bytes: idx is required"
    if s.dtype.itemsize == 2:
        if i.layout is not Layout.DN or i.cols != 1:
            return f"idx of a 16-bit source is a DN tile with one column, got {i}"
        if None not in (i.valid_rows, s.valid_rows) and i.valid_rows < s.valid_rows:
            return f"idx.valid_rows = {i.valid_rows} does not cover src.valid_rows = {s.valid_rows}"
    else:
        if i.layout is not Layout.ND:
            return f"idx of a 32-bit source is row-major (ND), got {i.layout.value}"
        if i.valid_rows is not None and i.valid_rows < len(upper):
            return f"idx.valid_rows = {i.valid_rows}, byte {byte} needs {len(upper)} filter rows"
    if i.valid_cols is not None and i.valid_cols < 1:
        return "idx has no valid column"
    return None


def _hist_dst(types: Types, attrs: Attrs) -> str | None:
    d, s = K.tile(types, "dst"), K.tile(types, "src")
    if d is None or s is None:
        return None
    if d.valid_cols is not None and d.valid_cols != BINS:
        return f"dst.valid_cols = {d.valid_cols}, must be {BINS}"
    if None not in (d.valid_rows, s.valid_rows) and d.valid_rows != s.valid_rows:
        return f"dst.valid_rows = {d.valid_rows}, src.valid_rows = {s.valid_rows}"
    return None


_HIST_NAMES = ("dst", "src", "idx")

declare(Instruction(
    mnemonic="THISTOGRAM", family=Family.COMPLEX, summary="per-row counts of one byte's values (radix buckets)",
    operands=(tile_out("dst", "256 u32 bin counts per source row"),
              tile_in("src", "u16 or u32 elements"),
              tile_in("idx", "u8 filter bytes; needed unless `byte` is the source's most significant byte",
                      optional=True)),
    attrs=(Attr("byte", HistByte, None, "the byte counted, the public HistByte: BYTE_0 = bits 7-0 ... BYTE_3 "
                                        "= bits 31-24 (#pto.hist_byte<BYTE_1>; #pto.hist_byte<1> and \"1\" "
                                        "name the same member); a u16 source has BYTE_0 and BYTE_1"),),
    semantics=_thistogram, dtypes=tuples(_HIST_NAMES, [(dt.U32, dt.U16, dt.U8), (dt.U32, dt.U32, dt.U8)]),
    profiles=_A5_ONLY, numerics=EXACT, domain=Domain.SRC, pipe=Pipe.V,
    doc=("For every source row i < src.valid_rows and bin b < 256: dst[i, b] = the number of j < "
         "src.valid_cols with byte `byte` of src[i, j] equal to b and every more significant byte of src[i, j] "
         "equal to its filter byte (a plain count, as the public formula states; the public CPU simulator "
         "writes running sums instead). Filters: a u16 source counting byte 0 keeps elements whose byte 1 "
         "equals idx[i, 0] (idx: DN, one column, covering src's valid rows); a u32 source counting byte k < 3 "
         "keeps elements whose byte 3, 2, ... down to k + 1 equal idx[0, 0], idx[1, 0], ... (one filter byte "
         "per idx row, shared by every source row; idx: ND with at least 3 - k valid rows). Counting the most "
         "significant byte filters nothing and idx, if given, is not read. dst's valid region is exactly "
         "src.valid_rows x 256 (STRUCT_VALID_REGION, or RUNTIME_VALID_REGION when dynamic). dst is "
         "overwritten, not accumulated into. An empty source row gives 256 zeros."),
    special_values="Integers only: counts are exact (at most the row's length).",
    example=Example({"dst": "!pto.tile<16x256xu32>", "src": "!pto.tile<16x64xu16>",
                     "idx": "!pto.tile<32x1xu8, layout=DN>"}, {"byte": HistByte.BYTE_0}),
    more_examples=(Example({"dst": "!pto.tile<8x256xu32>", "src": "!pto.tile<8x64xu32>",
                            "idx": "!pto.tile<3x32xu8>"}, {"byte": HistByte.BYTE_1}),),
    constraints=(_row_major("dst", "src")
                 + (K.custom("byte names a byte of src; idx as the byte's filter needs", _hist_rules,
                             "STRUCT_SHAPE"),
                    K.custom("dst's valid region is src.valid_rows x 256", _hist_dst, "STRUCT_VALID_REGION")))))
