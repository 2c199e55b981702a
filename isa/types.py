"""Operand types of the ISA and their PTO-AS spelling.

Canonical spellings (what the printer emits; the parser also accepts the public forms):

* tile:   ``!pto.tile<32x32xf32>`` when every option has its default, else
  ``!pto.tile<32x32xf32, loc=acc, layout=NZ, valid=16x?, pad=zero>``;
  the public ``!pto.tile_buf<vec, f32, 32, 32, 16, ?, ...>`` form is accepted too.
* global: ``!pto.memref<?x1024xf32>`` or ``!pto.memref<64x64xf16, strides=[128, 1], layout=DN>``.
* scalar: ``index``, ``i32``, ``f32`` ...; event: ``!pto.event``.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from . import dtypes as dt
from .diagnostics import ParseError
from .suggest import did_you_mean

class Location(enum.Enum):
    """On-chip buffer a tile lives in (Ascend names: UB, L1, L0A, L0B, L0C, BT, FB)."""

    VEC = "vec"
    MAT = "mat"
    LEFT = "left"
    RIGHT = "right"
    ACC = "acc"
    BIAS = "bias"
    SCALING = "scaling"


class Layout(enum.Enum):
    """Physical element order of a tile: unboxed ND/DN or 16-row fractal boxes NZ/ZN/ZZ."""

    ND = "ND"
    DN = "DN"
    NZ = "NZ"
    ZN = "ZN"
    ZZ = "ZZ"

    @property
    def boxed(self) -> bool:
        return self in (Layout.NZ, Layout.ZN, Layout.ZZ)

    @property
    def describe(self) -> str:
        """The element order in words (diagnostics and docs say what each name means)."""
        return LAYOUT_WORDS[self]


LAYOUT_WORDS = {
    Layout.ND: "row-major",
    Layout.DN: "column-major",
    Layout.NZ: "fractal boxes in column-major order, row-major inside",
    Layout.ZN: "fractal boxes in row-major order, column-major inside",
    Layout.ZZ: "fractal boxes in row-major order, row-major inside",
}


class GlobalLayout(enum.Enum):
    ND = "ND"
    DN = "DN"
    NZ = "NZ"


class PadValue(enum.Enum):
    """Value TFILLPAD writes (and TLOAD may write) outside the valid region."""

    NULL = "null"
    ZERO = "zero"
    MAX = "max"
    MIN = "min"


class Pipe(enum.Enum):
    """Hardware pipes an instruction issues on; flags connect pairs of them."""

    S = "S"
    V = "V"
    M = "M"
    MTE1 = "MTE1"
    MTE2 = "MTE2"
    MTE3 = "MTE3"
    FIX = "FIX"
    ALL = "ALL"


def _ext(v: int | None) -> str:
    return "?" if v is None else str(v)


@dataclass(frozen=True)
class TileType:
    """A tile buffer: static capacity ``rows x cols`` plus a valid region (static or dynamic)."""

    rows: int
    cols: int
    dtype: dt.DType
    loc: Location = Location.VEC
    layout: Layout = Layout.ND
    valid_rows: int | None = -1  # -1: same as rows (resolved in __post_init__); None: dynamic
    valid_cols: int | None = -1
    pad: PadValue = PadValue.NULL

    def __post_init__(self) -> None:
        if self.valid_rows == -1:
            object.__setattr__(self, "valid_rows", self.rows)
        if self.valid_cols == -1:
            object.__setattr__(self, "valid_cols", self.cols)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    @property
    def valid(self) -> tuple[int | None, int | None]:
        return (self.valid_rows, self.valid_cols)

    @property
    def dynamic(self) -> bool:
        return self.valid_rows is None or self.valid_cols is None

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.dtype.itemsize

    def with_(self, **changes) -> "TileType":  # noqa: ANN003
        fields = dict(rows=self.rows, cols=self.cols, dtype=self.dtype, loc=self.loc,
                      layout=self.layout, valid_rows=self.valid_rows, valid_cols=self.valid_cols,
                      pad=self.pad)
        fields.update(changes)
        return TileType(**fields)

    def spell(self) -> str:
        opts = []
        if self.loc is not Location.VEC:
            opts.append(f"loc={self.loc.value}")
        if self.layout is not Layout.ND:
            opts.append(f"layout={self.layout.value}")
        if (self.valid_rows, self.valid_cols) != (self.rows, self.cols):
            opts.append(f"valid={_ext(self.valid_rows)}x{_ext(self.valid_cols)}")
        if self.pad is not PadValue.NULL:
            opts.append(f"pad={self.pad.value}")
        body = f"{self.rows}x{self.cols}x{self.dtype.name}"
        return "!pto.tile<" + ", ".join([body] + opts) + ">"

    __str__ = spell


@dataclass(frozen=True)
class GlobalType:
    """A global-memory tensor view: rank 1..5, static or dynamic dims, element strides."""

    shape: tuple[int | None, ...]
    dtype: dt.DType
    strides: tuple[int | None, ...] | None = None  # None: contiguous row-major
    layout: GlobalLayout = GlobalLayout.ND

    @property
    def rank(self) -> int:
        return len(self.shape)

    def spell(self) -> str:
        body = "x".join(_ext(s) for s in self.shape) + "x" + self.dtype.name
        opts = []
        if self.strides is not None:
            opts.append("strides=[" + ", ".join(_ext(s) for s in self.strides) + "]")
        if self.layout is not GlobalLayout.ND:
            opts.append(f"layout={self.layout.value}")
        return "!pto.memref<" + ", ".join([body] + opts) + ">"

    __str__ = spell


SCALAR_NAMES = ("index", "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
                "f16", "bf16", "f32")


@dataclass(frozen=True)
class ScalarType:
    """A scalar value: ``index`` (address arithmetic) or an integer/float element type."""

    name: str

    @property
    def dtype(self) -> dt.DType:
        """The element type a scalar of this type carries (``index`` behaves as i64)."""
        return dt.I64 if self.name == "index" else dt.get(self.name)

    @property
    def is_float(self) -> bool:
        return self.name in ("f16", "bf16", "f32")

    def spell(self) -> str:
        return self.name

    __str__ = spell


@dataclass(frozen=True)
class EventType:
    """A synchronisation token recorded by one pipe and waited on by another."""

    def spell(self) -> str:
        return "!pto.event"

    __str__ = spell


INDEX = ScalarType("index")
EVENT = EventType()

Type = TileType | GlobalType | ScalarType | EventType


# --------------------------------------------------------------------------- parsing

_SHAPE_RE = re.compile(r"^((?:(?:\d+|\?)x)+)([a-z][a-z0-9]*)$")
_PUBLIC_LAYOUTS = {
    ("row_major", "none_box"): Layout.ND, ("col_major", "none_box"): Layout.DN,
    ("col_major", "row_major"): Layout.NZ, ("row_major", "col_major"): Layout.ZN,
    ("row_major", "row_major"): Layout.ZZ,
}


_TILE_OPTIONS = ("loc", "layout", "valid", "pad")
_MEMREF_OPTIONS = ("strides", "layout")
_TYPE_HEADS = (*SCALAR_NAMES, "!pto.tile", "!pto.tile_buf", "!pto.memref", "!pto.global", "!pto.event")


def _type_head(text: str) -> str:
    """What names the kind of a type spelling: all of a scalar, ``!pto.tile`` of a tile."""
    return text.partition("<")[0].strip()


def _fail(text: str, msg: str, expected: object = None, suggest: str = "") -> ParseError:
    """A PARSE_TYPE error; ``suggest`` is a did-you-mean tail for an unknown name."""
    return ParseError("PARSE_TYPE", f"{msg} in type '{text}'{suggest}", expected=expected)


def _split_top(body: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts, depth, cur = [], 0, []
    for ch in body:
        if ch in "[<(":
            depth += 1
        elif ch in "]>)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def _dtype(text: str, name: str) -> dt.DType:
    try:
        return dt.get(name)
    except KeyError:
        raise _fail(text, f"unknown element type '{name}'", expected=" ".join(dt.BY_NAME),
                    suggest=did_you_mean(name, dt.BY_NAME)) from None


def _extent(text: str, tok: str) -> int | None:
    tok = tok.strip()
    if tok == "?":
        return None
    if not (tok.isascii() and tok.isdigit()) or len(tok) > 18:
        raise _fail(text, f"bad extent '{tok}'", expected="a non-negative integer below 10**18 or '?'")
    return int(tok)


def _shape(text: str, tok: str) -> tuple[tuple[int | None, ...], dt.DType]:
    m = _SHAPE_RE.match(tok.replace(" ", ""))
    if not m:
        raise _fail(text, f"bad shape '{tok}'", expected="DIMxDIMx...xDTYPE")
    dims = tuple(_extent(text, d) for d in m.group(1).rstrip("x").split("x"))
    return dims, _dtype(text, m.group(2))


def _enum(text: str, enum_cls: type[enum.Enum], value: str) -> enum.Enum:
    for member in enum_cls:
        if member.value.lower() == value.lower() or member.name.lower() == value.lower():
            return member
    raise _fail(text, f"bad {enum_cls.__name__} '{value}'", expected=", ".join(m.value for m in enum_cls),
                suggest=did_you_mean(value, (m.value for m in enum_cls)))


def _parse_tile(text: str, body: str) -> TileType:
    parts = _split_top(body)
    dims, dtype = _shape(text, parts[0])
    if len(dims) != 2 or None in dims:
        raise _fail(text, "a tile has a static 2-D shape", expected="ROWSxCOLSxDTYPE")
    rows, cols = dims
    kw: dict = {}
    for opt in parts[1:]:
        key, eq, value = opt.partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            raise _fail(text, f"bad tile option '{opt}'", expected="key=value")
        if key == "loc":
            kw["loc"] = _enum(text, Location, value)
        elif key == "layout":
            kw["layout"] = _enum(text, Layout, value)
        elif key == "pad":
            kw["pad"] = _enum(text, PadValue, value)
        elif key == "valid":
            vr, x, vc = value.partition("x")
            if not x:
                raise _fail(text, f"bad valid region '{value}'", expected="ROWSxCOLS with '?' for dynamic")
            kw["valid_rows"], kw["valid_cols"] = _extent(text, vr), _extent(text, vc)
        else:
            raise _fail(text, f"unknown tile option '{key}'", expected=", ".join(_TILE_OPTIONS),
                        suggest=did_you_mean(key, _TILE_OPTIONS))
    if rows <= 0 or cols <= 0:
        raise _fail(text, "tile extents must be positive", expected="rows > 0 and cols > 0")
    return _checked(text, TileType(rows, cols, dtype, **kw))


def _checked(text: str, t: TileType) -> TileType:
    """A static valid region must fit inside the tile."""
    for v, cap, axis in ((t.valid_rows, t.rows, "rows"), (t.valid_cols, t.cols, "cols")):
        if v is not None and v > cap:
            raise _fail(text, f"valid {axis} {v} exceed the tile's {cap}", expected=f"<= {cap}")
    return t


def _parse_tile_buf(text: str, body: str) -> TileType:
    """Public IR form: ``loc, dtype, rows, cols, v_row, v_col[, blayout, slayout, fractal, pad]``."""
    p = [x.strip() for x in _split_top(body)]
    if len(p) not in (6, 8, 9, 10):
        raise _fail(text, f"tile_buf takes 6 to 10 parameters, got {len(p)}")
    loc = _enum(text, Location, p[0])
    dtype = _dtype(text, p[1])
    rows, cols = _extent(text, p[2]), _extent(text, p[3])
    if rows is None or cols is None or rows <= 0 or cols <= 0:
        raise _fail(text, "tile extents must be static and positive")
    layout = Layout.ND
    if len(p) >= 8:
        key = (p[6].lower(), p[7].lower())
        if key not in _PUBLIC_LAYOUTS:
            raise _fail(text, f"unknown layout pair {key}", expected=list(_PUBLIC_LAYOUTS))
        layout = _PUBLIC_LAYOUTS[key]
    pad = _enum(text, PadValue, p[9]) if len(p) == 10 else PadValue.NULL
    return _checked(text, TileType(rows, cols, dtype, loc, layout, _extent(text, p[4]), _extent(text, p[5]), pad))


def _parse_memref(text: str, body: str) -> GlobalType:
    parts = _split_top(body)
    dims, dtype = _shape(text, parts[0])
    if not 1 <= len(dims) <= 5:
        raise _fail(text, f"global tensors have rank 1..5, got {len(dims)}")
    strides, layout = None, GlobalLayout.ND
    for opt in parts[1:]:
        key, _, value = (s.strip() for s in opt.partition("="))
        if key == "strides":
            if not (value.startswith("[") and value.endswith("]")):
                raise _fail(text, f"bad strides '{value}'", expected="[s0, s1, ...]")
            strides = tuple(_extent(text, s) for s in value[1:-1].split(","))
            if len(strides) != len(dims):
                raise _fail(text, "strides must have one entry per dim",
                            expected=len(dims))
        elif key == "layout":
            layout = _enum(text, GlobalLayout, value)
        else:
            raise _fail(text, f"unknown memref option '{key}'", expected=", ".join(_MEMREF_OPTIONS),
                        suggest=did_you_mean(key, _MEMREF_OPTIONS))
    return GlobalType(dims, dtype, strides, layout)


def parse_type(text: str) -> Type:
    """Parse one type spelling; raises ``ParseError`` (code ``PARSE_TYPE``) when malformed."""
    t = text.strip()
    if t in SCALAR_NAMES:
        return ScalarType(t)
    if t in ("!pto.event", "!pto.event<>"):
        return EVENT
    m = re.match(r"^!pto\.(tile_buf|tile|memref|global)<(.*)>$", t, re.S)
    if not m:
        raise _fail(t, "unknown type", expected="!pto.tile<...>, !pto.memref<...>, !pto.event or a scalar type",
                    suggest=did_you_mean(_type_head(t), _TYPE_HEADS))
    kind, body = m.groups()
    if kind == "tile":
        return _parse_tile(t, body)
    if kind == "tile_buf":
        return _parse_tile_buf(t, body)
    return _parse_memref(t, body)
