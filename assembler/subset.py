"""``pto.subset`` (decision "pto.subset"): a tile naming a window of another tile.

    %sub = pto.subset %src[%i, %j] sizes [R, C] [: T_src [-> T_sub]]

The written type is the parent's (as the public page prints it); the result's type is
derived here, once, so the parser, the bytecode reader and the verifier agree on it: the
parent's element type, location, layout and pad with shape R x C, and a valid region that is
the part of the parent's valid region the window covers (``?`` in a dimension whose offset or
parent extent is known only at run time).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from ..isa import dtypes as dt
from ..isa.types import Layout, TileType
from .ir import Bound, Subset, Value
from .lexer import INT, PUNCT, VALUE, Token
from .scope import Scope

FORMS = ("subset", "pto.subset")

Problem = tuple[str, str, object, object]      # code, message, expected, actual


def subset_type(src: TileType, offsets: tuple[Bound, Bound], sizes: tuple[int, int]) -> TileType:
    """The result type of a subset of ``src`` (see the module docstring)."""
    valid = []
    for off, size, pv in zip(offsets, sizes, src.valid):
        valid.append(None if isinstance(off, Value) or pv is None else min(size, max(0, pv - off)))
    return src.with_(rows=sizes[0], cols=sizes[1], valid_rows=valid[0], valid_cols=valid[1])


def box_shape(t: TileType) -> tuple[int, int]:
    """The inner box of a boxed layout: 16 rows of 32 bytes (NZ, ZZ) or its transpose (ZN);
    the scale layouts' 32-byte boxes, 16x2 (ZZ_MX) or 2x16 (NN_MX) elements."""
    if t.layout.scale_box is not None:
        return t.layout.scale_box
    across = 256 // dt.memory_bits(t.dtype)         # elements in 32 bytes: 64 for the 4-bit types
    return (across, 16) if t.layout is Layout.ZN else (16, across)


def subset_problems(s: Subset, known: Callable[[Bound], int | None]) -> Iterator[Problem]:
    """Static checks: a tile parent, positive sizes inside it, constant offsets inside it, the
    boxed-layout rules of the public page, and the result type the statement implies."""
    src = s.source.type
    if not isinstance(src, TileType):
        yield ("STRUCT_OPERAND_KIND", "pto.subset takes a tile", "!pto.tile_buf<...>", str(src))
        return
    for d, (n, ext) in enumerate(zip(s.sizes, src.shape)):
        if not 0 < n <= ext:
            yield ("STRUCT_OOB", f"pto.subset: size {n} in dim {d} does not fit the parent", f"1..{ext}", str(n))
    offs = [known(o) for o in s.offsets]
    for d, (o, n, ext) in enumerate(zip(offs, s.sizes, src.shape)):
        if o is not None and (o < 0 or o + n > ext):
            yield ("STRUCT_OOB", f"pto.subset: the window [{o}, {o + n}) in dim {d} is outside the parent",
                   f"[0, {ext})", f"[{o}, {o + n})")
    if src.layout.boxed:
        yield from _boxed(s, src, offs)
    want = subset_type(src, s.offsets, s.sizes)
    if s.result.type != want:
        yield ("STRUCT_TYPE_MISMATCH", "pto.subset's result has the parent's type with the window's shape",
               str(want), str(s.result.type))


def _boxed(s: Subset, src: TileType, offs: list[int | None]) -> Iterator[Problem]:
    box = box_shape(src)
    keep = 1 if src.layout in (Layout.NZ, Layout.NN_MX) else 0   # boxes stacked by column keep all rows
    whole = 1 - keep                                # the dimension that stays whole
    if s.sizes[whole] != src.shape[whole] or offs[whole] != 0:
        yield ("STRUCT_LAYOUT", f"pto.subset of a {src.layout.value} tile keeps every "
               f"{'row' if whole == 0 else 'column'} (offset 0, size {src.shape[whole]})",
               f"offset 0, size {src.shape[whole]}", f"offset {s.offsets[whole]}, size {s.sizes[whole]}")
    n, o = s.sizes[keep], offs[keep]
    if n % box[keep] or (o is not None and o % box[keep]) or isinstance(s.offsets[keep], Value):
        yield ("STRUCT_LAYOUT", f"pto.subset of a {src.layout.value} tile splits at whole boxes of "
               f"{box[0]}x{box[1]}", f"a constant offset and a size that are multiples of {box[keep]}",
               f"offset {s.offsets[keep]}, size {n}")


class SubsetParser:
    """Parses ``pto.subset``; mixed into the parser (uses its cursor and scope helpers)."""

    def subset_statement(self: Any, mt: Token, results: list[Token], scope: Scope) -> Subset:
        rt = self._one_result(mt, results)
        st = self.expect(VALUE, what="the parent tile %name")
        src = self.use(st, scope)
        if not isinstance(src.type, TileType):
            self.fail("STRUCT_OPERAND_KIND", f"pto.subset takes a tile, %{src.name} is {src.type}", st,
                      expected="!pto.tile_buf<...>", actual=str(src.type))
        self.expect(PUNCT, "[", "'[' and the offsets")
        i = self._bound(scope)
        self.expect(PUNCT, ",", "',' and the column offset")
        j = self._bound(scope)
        self.expect(PUNCT, "]", "']'")
        kw = self.peek()
        if kw.text != "sizes":
            self.unexpected(kw, "'sizes [rows, cols]'")
        self.next()
        self.expect(PUNCT, "[", "'['")
        sizes = []
        for k in range(2):
            if k:
                self.expect(PUNCT, ",", "',' and the column count")
            tok = self.peek()
            if tok.kind != INT:
                self.unexpected(tok, "a static size (an integer)")
            sizes.append(self.number()[1])
        self.expect(PUNCT, "]", "']'")
        result: TileType | None = None
        if self.accept(PUNCT, ":"):
            self._agree(self.type_(), src.type)
            if self.accept(PUNCT, "->"):
                result = self.type_()[1]
        want = subset_type(src.type, (i, j), (sizes[0], sizes[1]))
        v = Value(rt.text[1:], result if result is not None else want)
        self.define(v, rt, scope)
        return Subset(v, src, (i, j), (sizes[0], sizes[1]), loc=self.loc(mt))
