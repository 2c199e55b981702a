"""Statically known out-of-bounds global windows (``STRUCT_OOB``), so ``pto check`` rejects
what every backend would fault on at run time (``RUNTIME_OOB``) whatever the inputs.

Which operands are windows, and how big, comes from the declarations (``Operand.window``):
the named tile's valid region at the operand's indices, or the whole tensor (``WHOLE``:
indices must be zero). The geometry is ``isa.values.GlobalRef.window``'s: leading indices
pick one matrix, the last two are the origin of the window, a rank-1 tensor is one row.

Only certainties are reported: an index is known when it is a literal, a ``.const`` or
integer arithmetic on known values that stays inside its type (no wrap-around is guessed);
a dynamic tensor extent bounds nothing; a dynamic valid extent counts as 0 (the smallest
window it can be). Python integers keep every sum exact.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Callable, Iterator

from ..isa import glayouts as GL
from ..isa.spec import ELEMENT, WHOLE, Instruction, Kind
from ..isa.types import GlobalType, ScalarType, TileType
from .ir import Const, MemRef, ScalarOp, TileOp, Value

Lookup = Callable[[str], object]      # a scope's lookup: the visible definition of a name

#: integer ops folded when both operands are known and the exact result fits the type
_FOLD: dict[str, Callable[[int, int], int]] = {
    "addi": operator.add, "subi": operator.sub, "muli": operator.mul,
    "maxsi": max, "minsi": min,
}
#: unsigned min/max compare the bit patterns: folded only when both values are non-negative
_UNSIGNED = {"maxui": max, "minui": min}
#: casts that keep a value that is non-negative as a signed source (sign and zero extension agree)
_CASTS = ("index_cast", "extsi", "extui", "trunci")


def _range(t: object) -> tuple[int, int] | None:
    """The values an integer (or index) scalar type holds; None for anything else."""
    if not isinstance(t, ScalarType) or t.is_float or t.name == "i1":
        return None
    d = t.dtype
    return int(d.min), int(d.max)


class Constants:
    """Integer values known before run time, by the identity of their defining ``Value``."""

    def __init__(self) -> None:
        self.known: dict[int, int] = {}

    def define(self, v: Value, value: object) -> None:
        r = _range(v.type)
        if r is not None and value.__class__ is int and r[0] <= value <= r[1]:  # type: ignore[operator]
            self.known[id(v)] = value  # type: ignore[assignment]

    def forget(self, v: Value) -> None:
        """``v`` is being (re)defined: what was known under its identity no longer holds."""
        self.known.pop(id(v), None)

    def const(self, s: Const) -> None:
        self.define(s.result, s.value)

    def scalar(self, s: ScalarOp, lookup: Lookup) -> None:
        """Fold ``s`` when it is integer arithmetic or a value-keeping cast of known values."""
        fold = _FOLD.get(s.op) or _UNSIGNED.get(s.op)
        if (fold is None and s.op not in _CASTS) or not self.known:
            return
        args = [self.value(v, lookup) for v in s.operands]
        if not args or None in args or (s.op in _UNSIGNED and min(args) < 0):  # type: ignore[type-var]
            return
        if fold is not None and len(args) == 2:
            self.define(s.result, fold(*args))
        elif s.op in _CASTS and len(args) == 1:
            src = _range(s.operands[0].type)
            signed_max = None if src is None else (src[1] >> 1 if src[0] == 0 else src[1])
            if signed_max is not None and 0 <= args[0] <= signed_max:  # type: ignore[operator]
                self.define(s.result, args[0])

    def value(self, v: Value | int, lookup: Lookup) -> int | None:
        if v.__class__ is int:
            return v  # type: ignore[return-value]
        d = lookup(v.name)  # type: ignore[union-attr]
        return self.known.get(id(d)) if isinstance(d, Value) else None


@dataclass(frozen=True)
class Fault:
    """One certain out-of-bounds access: message, expected and actual for the diagnostic."""

    message: str
    expected: str
    actual: str


def window_operands(instr: Instruction) -> tuple[tuple[str, str], ...]:
    """(global operand, window) for each windowed global operand the instruction declares."""
    return tuple((o.name, o.window) for o in instr.operands if o.kind is Kind.GLOBAL and o.window)


def faults(s: TileOp, windows: tuple[tuple[str, str], ...], consts: Constants, lookup: Lookup) -> Iterator[Fault]:
    """The certain out-of-bounds windows of ``s``'s global operands."""
    for name, window in windows:
        ref = s.args.get(name)
        if not isinstance(ref, MemRef) or not isinstance(ref.base.type, GlobalType):
            continue
        g = ref.base.type
        if len(ref.indices) != g.rank:
            continue                                        # STRUCT_INDEX already
        idx = [consts.value(i, lookup) for i in ref.indices]
        what = f"{s.instr.mnemonic} operand '{name}' (%{ref.base.name})"
        if window == WHOLE:
            for d, k in enumerate(idx):
                if k:
                    yield Fault(f"{what} is the whole tensor, but index {d} is {k}", "every index 0", str(k))
            continue
        other = s.args.get(window)
        if window == ELEMENT or isinstance(other, MemRef):
            sizes = ([1] * g.rank if window == ELEMENT else
                     list(other.base.type.shape) if isinstance(other.base.type, GlobalType) else [None] * g.rank)
            yield from _box(what, g, idx, sizes if len(sizes) == g.rank else [None] * g.rank)
            continue
        tile = other
        valid = tile.type.valid if isinstance(tile, Value) and isinstance(tile.type, TileType) else (None, None)
        yield from _spans(what, g, idx, valid)


def _box(what: str, g: GlobalType, idx: list[int | None], sizes: list[int | None]) -> Iterator[Fault]:
    """A window of ``sizes`` (one element, or another tensor's shape) at the indices: each
    dimension's [start, start + size) inside the extent, where both are known."""
    for d, (start, size) in enumerate(zip(idx, sizes)):
        extent = g.shape[d]
        if start is None or size is None:
            continue
        if start < 0 or (extent is not None and start + size > extent):
            limit = f"[0, {extent})" if extent is not None else "[0, ...)"
            span = f"[{start}, {start + size})"
            yield Fault(f"{what} is accessed out of bounds in dim {d}: the window of {size} from index {start} "
                        f"covers {span}, outside {limit}", f"indices in {limit}", span)


def _spans(what: str, g: GlobalType, idx: list[int | None],
           valid: tuple[int | None, int | None]) -> Iterator[Fault]:
    """``GlobalRef.window``'s per-dimension rule, over what is known statically."""
    rows, cols = valid
    if GL.conv_of(g.layout) is not None:
        yield from _conv_spans(what, g, idx, rows or 0, cols or 0)
        return
    scale = GL.of(g.layout)
    if scale is not None:
        yield from _scale_spans(what, g, idx, rows or 0, cols or 0, scale)
        return
    if g.rank == 1:
        dims = [(0, idx[0], cols, "cols")]
    else:
        dims = [(d, k, 1, "index") for d, k in enumerate(idx[:-2])]
        dims += [(g.rank - 2, idx[-2], rows, "rows"), (g.rank - 1, idx[-1], cols, "cols")]
    for d, start, size, axis in dims:
        if start is None:
            continue
        extent = g.shape[d]
        end = start + (size or 0)
        span = f"[{start}, {end})" if size is not None else f"[{start}, {start} + ?)"
        if start < 0 or (extent is not None and end > extent):
            limit = f"[0, {extent})" if extent is not None else "[0, ...)"
            if axis == "index":
                yield Fault(f"{what} is accessed out of bounds in dim {d}: index {start} is outside {limit}",
                            f"an index in {limit}", str(start))
                continue
            window = f"{size} {axis}" if size is not None else f"run-time valid {axis}"
            yield Fault(f"{what} is accessed out of bounds in dim {d}: the window of {window} from index "
                        f"{start} covers {span}, outside {limit}", f"indices in {limit}", span)


def _scale_spans(what: str, g: GlobalType, idx: list[int | None], rows: int, cols: int,
                 scale: GL.ScaleLayout) -> Iterator[Fault]:
    """A scale layout's rule (``isa.glayouts.gather``): each dim's indices from the written
    index over the span the matrix touches; an empty matrix reads nothing."""
    if rows <= 0 or cols <= 0 or g.rank != GL.RANK:
        return
    for d, (start, need) in enumerate(zip(idx, GL.span(scale, rows, cols))):
        extent = g.shape[d]
        if start is None or (start >= 0 and (extent is None or start + need <= extent)):
            continue
        limit = f"[0, {extent})" if extent is not None else "[0, ...)"
        yield Fault(f"{what} is accessed out of bounds in dim {d}: its {g.layout.value} matrix of {rows}x{cols} "
                    f"from index {start} covers [{start}, {start + need}), outside {limit}",
                    f"indices in {limit}", f"[{start}, {start + need})")


def _conv_spans(what: str, g: GlobalType, idx: list[int | None], rows: int, cols: int) -> Iterator[Fault]:
    """A convolution layout's rule (``isa.glayouts.conv_places``): the transfer covers every dim
    whole, so a written index other than 0 moves it off the tensor; an empty matrix reads nothing."""
    if rows <= 0 or cols <= 0 or g.rank != GL.RANK:
        return
    for d, start in enumerate(idx):
        if start is None or start == 0:
            continue
        extent = g.shape[d]
        limit = f"[0, {extent})" if extent is not None else "[0, ...)"
        end = f"{start + extent}" if extent is not None else f"{start} + {g.shape[d]}"
        yield Fault(f"{what} is accessed out of bounds in dim {d}: its {g.layout.value} transfer covers the "
                    f"dim whole from index {start}, [{start}, {end}), outside {limit}",
                    f"indices in {limit}", f"[{start}, {end})")
