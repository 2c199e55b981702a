"""Shorthands the family modules use to keep declarations short and uniform."""
from __future__ import annotations

from typing import Any

from ..spec import Example, Kind, Operand, Role
from ..types import Location

VEC = (Location.VEC,)


def tile_in(name: str, doc: str = "", **kw: Any) -> Operand:
    kw.setdefault("locations", VEC)
    return Operand(name, Role.IN, Kind.TILE, doc, **kw)


def tile_out(name: str = "dst", doc: str = "destination tile", **kw: Any) -> Operand:
    kw.setdefault("locations", VEC)
    return Operand(name, Role.OUT, Kind.TILE, doc, **kw)


def tile_inout(name: str, doc: str = "", **kw: Any) -> Operand:
    kw.setdefault("locations", VEC)
    return Operand(name, Role.INOUT, Kind.TILE, doc, **kw)


def scalar_in(name: str = "scalar", doc: str = "scalar operand, converted to the tile dtype") -> Operand:
    return Operand(name, Role.IN, Kind.SCALAR, doc)


def index_in(name: str, doc: str = "", **kw: Any) -> Operand:
    """``bounds`` / ``multiple``: the range and alignment the semantics check (see ``Operand``)."""
    return Operand(name, Role.IN, Kind.INDEX, doc, **kw)


def global_in(name: str = "src", doc: str = "global tensor at an index", *, window: str) -> Operand:
    """``window``: the tile whose valid region is the window moved, or ``spec.WHOLE``."""
    return Operand(name, Role.IN, Kind.GLOBAL, doc, window=window)


def global_out(name: str = "dst", doc: str = "global tensor at an index", *, window: str) -> Operand:
    return Operand(name, Role.OUT, Kind.GLOBAL, doc, window=window)


def same_types(names: tuple[str, ...] | list[str], spelling: str, **kw: Any) -> Example:
    """An example where every listed operand has the same tile type."""
    return Example({n: spelling for n in names}, **kw)
