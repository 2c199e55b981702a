"""Operand types of the ISA and their PTO-AS spelling.

Canonical spellings (what the printer emits; the parser also accepts the public forms):

* tile:   ``!pto.tile<32x32xf32>`` when every option has its default, else
  ``!pto.tile<32x32xf32, loc=acc, layout=NZ, valid=16x?, pad=zero>``;
  the public ``!pto.tile_buf<vec, f32, 32, 32, 16, ?, ...>`` form is accepted too.
* global: ``!pto.memref<?x1024xf32>`` or ``!pto.memref<64x64xf16, strides=[128, 1], layout=DN>``;
  the scale layouts take a 5-D shape: ``!pto.memref<1x2x2x16x2xu8, layout=MX_A_ZZ>``.
* scalar: ``index``, ``i32``, ``f32`` ...; event: ``!pto.event``.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass

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
    SCALE_LEFT = "scale_left"      # the MX scales of the left operand (TileType::ScaleLeft, in L0A)
    SCALE_RIGHT = "scale_right"    # the MX scales of the right operand (TileType::ScaleRight, in L0B)


class Layout(enum.Enum):
    """Physical element order of a tile: unboxed ND/DN, 16-row fractal boxes NZ/ZN/ZZ, or the
    32-byte scale boxes ZZ_MX (16 x 2, row-major inside and across) and NN_MX (2 x 16,
    column-major inside and across) of the public MX / HiF4 scale tiles (SFractalSize 32)."""

    ND = "ND"
    DN = "DN"
    NZ = "NZ"
    ZN = "ZN"
    ZZ = "ZZ"
    ZZ_MX = "ZZ_MX"
    NN_MX = "NN_MX"

    @property
    def boxed(self) -> bool:
        return self in (Layout.NZ, Layout.ZN, Layout.ZZ, Layout.ZZ_MX, Layout.NN_MX)

    @property
    def scale_box(self) -> tuple[int, int] | None:
        """(rows, cols) of a scale layout's box, in elements whatever the type (the public
        fixedMxRowSize x fixedMxColSize), or None for the other layouts."""
        return SCALE_BOXES.get(self)

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
    Layout.ZZ_MX: "16x2 scale boxes in row-major order, row-major inside",
    Layout.NN_MX: "2x16 scale boxes in column-major order, column-major inside",
}
#: the 32-byte boxes of the scale layouts (16 one-byte rows of 2 scales; NN_MX transposed)
SCALE_BOXES = {Layout.ZZ_MX: (16, 2), Layout.NN_MX: (2, 16)}


class GlobalLayout(enum.Enum):
    """How a global tensor's dims hold a matrix: ND/DN/NZ as the tile layouts, and the public
    MX / HiF4 scale layouts, whose 5-D index maps onto a scale matrix, and the convolution
    layouts NC1HWC0 / NDC1HWC0 / FRACTAL_Z / FRACTAL_Z_3D, whose dims regroup into a feature-map
    or weight matrix (both isa/glayouts.py). SCALE is the public enum's plain scale tag: it has a spelling
    and no load or store path."""

    ND = "ND"
    DN = "DN"
    NZ = "NZ"
    SCALE = "SCALE"
    MX_A_ND = "MX_A_ND"
    MX_A_DN = "MX_A_DN"
    MX_A_ZZ = "MX_A_ZZ"
    MX_B_ND = "MX_B_ND"
    MX_B_DN = "MX_B_DN"
    MX_B_NN = "MX_B_NN"
    HIF4_A_ZZ = "HIF4_A_ZZ"
    HIF4_B_NN = "HIF4_B_NN"
    NC1HWC0 = "NC1HWC0"
    NDC1HWC0 = "NDC1HWC0"
    FRACTAL_Z = "FRACTAL_Z"
    FRACTAL_Z_3D = "FRACTAL_Z_3D"


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
        """Bytes the tile takes in its buffer (``dt.memory_bytes``: packed for the 4-bit types)."""
        return dt.memory_bytes(self.dtype, self.rows * self.cols)

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

_SHAPE_RE = re.compile(r"^((?:(?:\d+|\?)x)+)([a-z][a-z0-9_]*)$")
_PUBLIC_LAYOUTS = {
    ("row_major", "none_box"): Layout.ND, ("col_major", "none_box"): Layout.DN,
    ("col_major", "row_major"): Layout.NZ, ("row_major", "col_major"): Layout.ZN,
    ("row_major", "row_major"): Layout.ZZ,
}
#: the public fractal size (bytes) of the MX / HiF4 scale tiles (TileConfig::fractalMxSize), and
#: the layout pairs it takes: TileLeftScale's (RowMajor, RowMajor), TileRightScale's (ColMajor, ColMajor)
SCALE_FRACTAL_BYTES = "32"
_PUBLIC_SCALE_LAYOUTS = {("row_major", "row_major"): Layout.ZZ_MX, ("col_major", "col_major"): Layout.NN_MX}


_TILE_OPTIONS = ("loc", "layout", "valid", "pad")
_MEMREF_OPTIONS = ("strides", "layout")
_TYPE_HEADS = (*SCALAR_NAMES, "!pto.tile", "!pto.tile_buf", "!pto.memref", "!pto.global", "!pto.event",
               "!pto.partition_tensor_view", "!pto.tensor_view", "!pto.ptr", "vector")


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


def _plain(word: str) -> str:
    """A name compared without case or underscores (``ScaleLeft`` is ``scale_left``)."""
    return word.lower().replace("_", "")


def _enum(text: str, enum_cls: type[enum.Enum], value: str) -> enum.Enum:
    for member in enum_cls:
        if _plain(member.value) == _plain(value) or _plain(member.name) == _plain(value):
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


# Public tile spellings (docs/assembly.md lists them): the compact ``RxCxT`` body, optionally
# after a location, and the positional ``[loc=]LOC, DTYPE, ROWS, COLS[, V_ROW, V_COL][, BLAYOUT,
# SLAYOUT[, FRACTAL[, PAD]]]`` list. Words compare without case or underscores.
_BOX_WORDS = {"rowmajor": "row_major", "colmajor": "col_major", "nonebox": "none_box"}
_FRACTALS = ("none", "nz", "zn", "fr", "rn")
# C++ / long element-type names the public pages print, and what openpto calls them.
DTYPE_ALIASES = {
    "half": "f16", "float16": "f16", "float": "f32", "float32": "f32", "bfloat16": "bf16",
    "bfloat16_t": "bf16", "float8_e4m3_t": "f8e4m3", "float8_e5m2_t": "f8e5m2", "hifloat8_t": "hifloat8",
    "float4_e2m1x2_t": "float4_e2m1x2", "float4_e1m2x2_t": "float4_e1m2x2", "int4b_t": "i4", "s4": "i4",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
    "uint32": "u32", "uint64": "u64", "int8_t": "i8", "int16_t": "i16", "int32_t": "i32",
    "int64_t": "i64", "uint8_t": "u8", "uint16_t": "u16", "uint32_t": "u32", "uint64_t": "u64",
}


def _word(s: str) -> str:
    return s.replace("_", "").lower()


def _public_dtype(text: str, name: str) -> dt.DType:
    return _dtype(text, DTYPE_ALIASES.get(name, name))


def _parse_tile_any(text: str, body: str) -> TileType:
    """``!pto.tile<...>`` and ``!pto.tile_buf<...>``: the compact form (canonical) or the
    positional public one; which one is decided by whether a part is an ``RxCxT`` shape."""
    parts = _split_top(body)
    shape_at = [k for k, p in enumerate(parts) if _SHAPE_RE.match(p.replace(" ", ""))]
    if not shape_at:
        return _parse_positional(text, parts)
    k = shape_at[0]
    if k > 1:
        raise _fail(text, "only a location may come before the shape", expected="[LOC, ]RxCxDTYPE[, key=value ...]")
    lead = ""
    if k == 1:
        key, eq, value = parts[0].partition("=")
        if eq and key.strip() != "loc":
            raise _fail(text, f"bad tile option '{parts[0]}' before the shape", expected="loc=LOC or LOC")
        lead = "loc=" + (value if eq else key).strip()
    rest = parts[k:] + ([lead] if lead else [])
    if lead and any(p.partition("=")[0].strip() == "loc" for p in parts[k + 1:]):
        raise _fail(text, "the location is given twice", expected="one location")
    return _parse_tile(text, ", ".join(rest))


def _parse_positional(text: str, p: list[str]) -> TileType:
    """``[loc=]LOC, DTYPE, ROWS, COLS[, V_ROW, V_COL][, BLAYOUT, SLAYOUT[, FRACTAL[, PAD]]]``;
    without a location the tile is in ``vec``."""
    p = [x.strip() for x in p]
    loc = Location.VEC
    if p and (p[0].startswith("loc=") or _plain(p[0]) in {_plain(m.value) for m in Location}):
        loc = _enum(text, Location, p[0][4:].strip() if p[0].startswith("loc=") else p[0])
        p = p[1:]
    if len(p) < 3:
        raise _fail(text, f"a positional tile type needs DTYPE, ROWS, COLS, got {len(p)} parameter(s)",
                    expected="[loc=]LOC, DTYPE, ROWS, COLS[, V_ROW, V_COL][, BLAYOUT, SLAYOUT[, FRACTAL[, PAD]]]")
    dtype = _public_dtype(text, p[0])
    rows, cols = _extent(text, p[1]), _extent(text, p[2])
    if rows is None or cols is None or rows <= 0 or cols <= 0:
        raise _fail(text, "tile extents must be static and positive", expected="ROWS > 0 and COLS > 0")
    rest = p[3:]
    vr: int | None = rows
    vc: int | None = cols
    if rest and (rest[0] == "?" or rest[0].isdigit()):
        if len(rest) < 2:
            raise _fail(text, "a valid region needs both V_ROW and V_COL", expected="V_ROW, V_COL")
        vr, vc, rest = _extent(text, rest[0]), _extent(text, rest[1]), rest[2:]
    if len(rest) not in (0, 2, 3, 4):
        raise _fail(text, f"after the extents come BLAYOUT, SLAYOUT[, FRACTAL[, PAD]], got {len(rest)} parameter(s)",
                    expected="0, 2, 3 or 4 parameters")
    layout = Layout.ND
    if len(rest) >= 3 and not (rest[2].isdigit() or rest[2].lower() in _FRACTALS):
        raise _fail(text, f"bad fractal '{rest[2]}'", expected="None, NZ, ZN, FR, RN or a fractal size in bytes")
    if rest:
        key = tuple(_BOX_WORDS.get(_word(w), w.lower()) for w in rest[:2])
        scale = len(rest) >= 3 and rest[2] == SCALE_FRACTAL_BYTES
        table = _PUBLIC_SCALE_LAYOUTS if scale else _PUBLIC_LAYOUTS
        if key not in table:
            what = f" with the {SCALE_FRACTAL_BYTES}-byte scale fractal" if scale else ""
            raise _fail(text, f"unknown layout pair ({rest[0]}, {rest[1]}){what}",
                        expected=", ".join(f"({a}, {b})" for a, b in table))
        layout = table[key]  # type: ignore[index]
    pad = _enum(text, PadValue, rest[3]) if len(rest) == 4 else PadValue.NULL
    return _checked(text, TileType(rows, cols, dtype, loc, layout, vr, vc, pad))


def _parse_vector(text: str, body: str) -> TileType:
    """MLIR ``vector<NxT>`` (TMRGSORT's ``executed`` on the public page): a 1 x N tile."""
    dims, dtype = _shape(text, body.strip())
    if len(dims) != 1 or dims[0] is None or dims[0] <= 0:
        raise _fail(text, "a vector has one static positive extent", expected="vector<NxDTYPE>")
    return TileType(1, dims[0], dtype)


def _parse_ptr(text: str, body: str) -> GlobalType:
    """``!pto.ptr<T, gm>``: global memory of unknown extent, a rank-1 dynamic tensor."""
    parts = [x.strip() for x in _split_top(body)]
    if len(parts) != 2 or parts[1] != "gm":
        raise _fail(text, "only global-memory pointers !pto.ptr<T, gm> have an openpto type",
                    expected="!pto.ptr<DTYPE, gm>")
    return GlobalType((None,), _public_dtype(text, parts[0]))


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


#: Public type names that stand for an openpto type: ``!pto.fmatrix_config``, the IMG2COL
#: config of SETFMATRIX / SET_IMG2COL_* (decision "Config tiles"), is a 1x16 f32 config tile.
TYPE_ALIASES = {"!pto.fmatrix_config": "!pto.tile<1x16xf32>"}


def parse_type(text: str) -> Type:
    """Parse one type spelling; raises ``ParseError`` (code ``PARSE_TYPE``) when malformed."""
    t = text.strip()
    t = TYPE_ALIASES.get(t, t)
    if t in SCALAR_NAMES:
        return ScalarType(t)
    if t in ("!pto.event", "!pto.event<>", "!pto.record_event", "!pto.record_event<>"):
        return EVENT        # the public RecordEvent a TPUSH / TPOP returns is an event token
    if t.startswith("!pto.tpipe"):
        raise _fail(t, "a pipe is not a value type", expected="a !pto.tpipe<...> only in "
                    "'%p = pto.initialize_pipe : !pto.tpipe<...>' and in the TPUSH/TPOP/TALLOC/TFREE that use %p")
    m = re.match(r"^(?:!pto\.(tile_buf|tile|memref|global|partition_tensor_view|tensor_view|ptr)|(vector))<(.*)>$",
                 t, re.S)
    if not m:
        raise _fail(t, "unknown type", expected="!pto.tile<...>, !pto.memref<...>, !pto.event or a scalar type",
                    suggest=did_you_mean(_type_head(t), _TYPE_HEADS))
    kind, vector, body = m.groups()
    if vector:
        return _parse_vector(t, body)
    if kind in ("tile", "tile_buf"):
        return _parse_tile_any(t, body)
    if kind == "ptr":
        return _parse_ptr(t, body)
    return _parse_memref(t, body)
