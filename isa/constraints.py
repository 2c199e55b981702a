"""Reusable static rules over operand types; declarations pick from these.

A rule that meets a dynamic (``?``) extent passes statically; the reference backend
checks it again at run time.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from .spec import Constraint
from .types import Layout, TileType, Type

Check = Callable[[Mapping[str, Type], Mapping[str, Any]], str | None]


def tile(types: Mapping[str, Type], name: str) -> TileType | None:
    """Operand ``name``'s tile type, or None when it is absent or not a tile."""
    t = types.get(name)
    return t if isinstance(t, TileType) else None


def same_dtype(name: str, like: str = "src") -> Constraint:
    """``name``, when given, has ``like``'s element type (scratch and value outputs)."""
    def check(types, attrs):  # noqa: ANN001, ANN202
        t, o = tile(types, name), tile(types, like)
        if t is None or o is None or t.dtype == o.dtype:
            return None
        return f"{name} has dtype {t.dtype}, {like} has {o.dtype}"
    return Constraint(f"{name}, when given, has {like}'s dtype", check, "LEGAL_DTYPE")


def _tiles(types: Mapping[str, Type], names: tuple[str, ...]) -> list[tuple[str, TileType]]:
    return [(n, types[n]) for n in names if isinstance(types.get(n), TileType)]


def same_shape(*names: str) -> Constraint:
    def check(types, attrs):  # noqa: ANN001, ANN202
        ts = _tiles(types, names)
        shapes = {t.shape for _, t in ts}
        if len(shapes) > 1:
            return "static shapes differ: " + ", ".join(f"{n} {t.rows}x{t.cols}" for n, t in ts)
        return None
    return Constraint(f"{', '.join(names)} have the same static shape", check)


def covers(sources: tuple[str, ...], dst: str = "dst") -> Constraint:
    """Each source's valid region contains the destination's (the iteration domain)."""
    def check(types, attrs):  # noqa: ANN001, ANN202
        d = types.get(dst)
        if not isinstance(d, TileType):
            return None
        for n, t in _tiles(types, sources):
            for axis, (sv, dv) in enumerate(zip(t.valid, d.valid)):
                if sv is not None and dv is not None and sv < dv:
                    return (f"{n} valid region {t.valid_rows}x{t.valid_cols} does not cover "
                            f"{dst} valid region {d.valid_rows}x{d.valid_cols}")
        return None
    return Constraint(f"the valid regions of {', '.join(sources)} cover {dst}'s", check, "STRUCT_VALID_REGION")


def _dim_rule(doc: str, code: str, pred: Callable[..., str | None]) -> Constraint:
    return Constraint(doc, lambda types, attrs: pred(types, attrs), code)


def equal(a: str, a_attr: str, b: str, b_attr: str, code: str = "STRUCT_SHAPE") -> Constraint:
    """``a.a_attr == b.b_attr`` (attributes of TileType: rows, cols, valid_rows, valid_cols)."""
    def pred(types, attrs):  # noqa: ANN001, ANN202
        ta, tb = types.get(a), types.get(b)
        if not (isinstance(ta, TileType) and isinstance(tb, TileType)):
            return None
        va, vb = getattr(ta, a_attr), getattr(tb, b_attr)
        if va is None or vb is None or va == vb:
            return None
        return f"{a}.{a_attr} = {va} but {b}.{b_attr} = {vb}"
    return _dim_rule(f"{a}.{a_attr} == {b}.{b_attr}", code, pred)


def at_least(a: str, a_attr: str, b: str, b_attr: str, code: str = "STRUCT_SHAPE") -> Constraint:
    """``a.a_attr >= b.b_attr``."""
    def pred(types, attrs):  # noqa: ANN001, ANN202
        ta, tb = types.get(a), types.get(b)
        if not (isinstance(ta, TileType) and isinstance(tb, TileType)):
            return None
        va, vb = getattr(ta, a_attr), getattr(tb, b_attr)
        if va is None or vb is None or va >= vb:
            return None
        return f"{a}.{a_attr} = {va} is smaller than {b}.{b_attr} = {vb}"
    return _dim_rule(f"{a}.{a_attr} >= {b}.{b_attr}", code, pred)


def fixed(a: str, a_attr: str, value: int, code: str = "STRUCT_SHAPE") -> Constraint:
    """``a.a_attr == value`` (e.g. a reduction result has one valid column)."""
    def pred(types, attrs):  # noqa: ANN001, ANN202
        ta = types.get(a)
        if not isinstance(ta, TileType):
            return None
        v = getattr(ta, a_attr)
        return None if v is None or v == value else f"{a}.{a_attr} = {v}, must be {value}"
    return _dim_rule(f"{a}.{a_attr} == {value}", code, pred)


def layout_in(name: str, *layouts: Layout) -> Constraint:
    def pred(types, attrs):  # noqa: ANN001, ANN202
        t = types.get(name)
        if isinstance(t, TileType) and t.layout not in layouts:
            return f"{name} has layout {t.layout.value}; allowed: {' '.join(l.value for l in layouts)}"
        return None
    return _dim_rule(f"{name} layout in {{{', '.join(l.value for l in layouts)}}}", "LEGAL_LAYOUT", pred)


def custom(doc: str, pred: Check, code: str = "STRUCT_SHAPE") -> Constraint:
    return Constraint(doc, pred, code)


def check_all(constraints: tuple[Constraint, ...], types: Mapping[str, Type],
              attrs: Mapping[str, Any]) -> list[tuple[Constraint, str]]:
    """Every failed rule with its message."""
    out = []
    for c in constraints:
        msg = c.check(types, attrs)
        if msg:
            out.append((c, msg))
    return out
