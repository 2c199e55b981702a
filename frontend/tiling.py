"""Tensor graph -> tile graph: every op expanded by its tile shape over 2-D tile regions.

An N-D tensor is seen as a matrix: rows = the product of its leading dims, cols = its last dim,
so a tile of shape (t0, ..., tk) covers t0*...*t(k-1) consecutive rows and tk columns (decision
'Frontend tiling and partition'). A node keeps its whole grid symbolically (row tiles x col
tiles, run-time counts where a dim is dynamic); the last row or column of tiles may be partial
and is handled by valid regions, never by padding the user's data. Reductions along the last
axis are a partial reduce per tile plus a combine over the column tiles; broadcasting is a
per-row (R x 1) or per-column (1 x C) operand. Views and ``assemble``/``out[:] =`` into a window
are resolved here into *places* (windows of a buffer), so they cost no copy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator, Union

from ..isa import profiles
from ..isa.diagnostics import FrontendError, Location
from ..isa.dtypes import DType
from ..isa.types import Location as Loc
from . import graph as g
from . import topksort
from .graph import Dim, Sym, sym_binop
from .options import Options

def kind_of(op: g.Op) -> str:
    """The op's kind from the op table (frontend/ops.py); the tiling rules are keyed by it."""
    from .ops import OPS
    spec = OPS.get(op.name)
    if spec is None:
        raise FrontendError("FRONT_UNSUPPORTED_OP", f"the pipeline has no rule for {op.name!r}",
                            location=_loc(op), expected=", ".join(sorted(OPS)), actual=op.name)
    return spec.kind


#: row-sized tiles a topk kernel keeps at once (values, candidates, masks, index and availability)
TOPK_TILES = 12

#: kinds that run on the vector unit, tile by tile
ELEMENTWISE = ("binary", "unary", "compare", "select", "cast", "full", "copy")


def _loc(op: g.Op | None) -> Location | None:
    return op.loc.location() if op is not None and op.loc is not None else None


def dims_equal(a: Dim, b: Dim) -> bool:
    if isinstance(a, Sym) and isinstance(b, Sym):
        return a.key() == b.key()
    return not isinstance(a, Sym) and not isinstance(b, Sym) and a == b


def dim_key(d: Dim) -> object:
    return d.key() if isinstance(d, Sym) else d


def prod(dims: tuple[Dim, ...] | list[Dim]) -> Dim:
    out: Dim = 1
    for d in dims:
        out = sym_binop("mul", out, d)
    return out


def ceil_div(a: Dim, b: int) -> Dim:
    if isinstance(a, int):
        return -(-a // b)
    return sym_binop("floordiv", sym_binop("add", a, b - 1), b)


def matrix(shape: tuple[Dim, ...]) -> tuple[Dim, Dim]:
    """(rows, cols) of a tensor seen as a matrix: leading dims flattened into rows."""
    if not shape:
        return 1, 1
    return prod(shape[:-1]), shape[-1]


# --------------------------------------------------------------------------------------------
# buffers and places

@dataclass(eq=False)
class Buffer:
    """Global memory: a parameter's or result's array, or a workspace tensor allocated per call
    (only when a kernel boundary needs it), seen as a ``rows x cols`` matrix. A reshape is
    another Buffer over the same ``root`` array with another matrix."""

    name: str
    tensor: g.TensorValue
    kind: str                      # "param", "result", "workspace"
    rows: Dim = 0
    cols: Dim = 0
    root: "Buffer | None" = None
    transposed: bool = False       # the root's matrix transposed (a column-major, DN, view)

    def __post_init__(self) -> None:
        if self.root is None:
            self.rows, self.cols = matrix(self.tensor.shape)

    @property
    def base(self) -> "Buffer":
        return self.root or self

    @property
    def dtype(self) -> DType:
        return self.tensor.dtype

    def transpose(self) -> "Buffer":
        """The transposed matrix of a whole buffer, as a column-major (DN) view of it."""
        return Buffer(self.name, self.tensor, self.kind, self.cols, self.rows, self.base, True)

    def viewed(self, rows: Dim, cols: Dim) -> "Buffer":
        """The same elements as a ``rows x cols`` matrix (a whole-buffer reshape)."""
        if dims_equal(rows, self.rows) and dims_equal(cols, self.cols):
            return self
        return Buffer(self.name, self.tensor, self.kind, rows, cols, self.base)


@dataclass(frozen=True)
class Place:
    """Where a tensor's elements are: the rows x cols window at (row0, col0) of a buffer's matrix."""

    buffer: Buffer
    row0: Dim
    col0: Dim
    rows: Dim
    cols: Dim

    def whole(self) -> bool:
        b = self.buffer
        return (dims_equal(self.row0, 0) and dims_equal(self.col0, 0)
                and dims_equal(self.rows, b.rows) and dims_equal(self.cols, b.cols))

    def __str__(self) -> str:
        if self.whole():
            return f"{self.buffer.name}"
        return (f"{self.buffer.name}[{self.row0}:+{self.rows}, {self.col0}:+{self.cols}]")


def window(base: Place, shape: tuple[Dim, ...], offsets: tuple[Dim, ...], full: tuple[Dim, ...],
           op: g.Op | None) -> Place:
    """The place of the window ``shape`` at ``offsets`` of a tensor of shape ``full`` at ``base``;
    its rows must be consecutive rows of the base matrix (``FRONT_VIEW`` otherwise). Shapes of
    lower rank are aligned on the last dims (leading 1s, offsets 0), as a batch's matrix is."""
    k = max(len(full), len(shape), len(offsets))
    full = (1,) * (k - len(full)) + tuple(full)
    shape = (1,) * (k - len(shape)) + tuple(shape)
    offsets = (0,) * (k - len(offsets)) + tuple(offsets)
    if k == 0:
        return base
    lead = list(range(k - 1))
    first = next((i for i in lead if not dims_equal(shape[i], 1)), None)
    if first is not None and any(not dims_equal(shape[j], full[j]) for j in lead if j > first):
        raise FrontendError("FRONT_VIEW", "this window's rows are not consecutive rows of the tensor",
                            location=_loc(op),
                            expected="a window whose dims after its first partial leading dim are whole",
                            actual=f"window {list(map(str, shape))} of {list(map(str, full))}",
                            notes=["a tile is rows of the flattened leading dims; take whole inner dims "
                                   "or view one outer index at a time"])
    row0: Dim = 0
    for i in lead:
        row0 = sym_binop("add", row0, sym_binop("mul", offsets[i], prod(full[i + 1:k - 1])))
    rows, cols = matrix(shape)
    return Place(base.buffer, sym_binop("add", base.row0, row0),
                 sym_binop("add", base.col0, offsets[k - 1]), rows, cols)


def reshaped(p: Place, shape: tuple[Dim, ...], op: g.Op | None) -> Place:
    """The place of the same elements seen with another shape: a whole buffer takes any
    matrix of its size; a window keeps its row length (only its leading dims regroup)."""
    rows, cols = matrix(shape)
    if p.whole():
        b = p.buffer.viewed(rows, cols)
        return Place(b, 0, 0, rows, cols)
    if dims_equal(cols, p.cols):
        return Place(p.buffer, p.row0, p.col0, rows, cols)
    raise FrontendError("FRONT_VIEW", "this reshape of a window changes its row length",
                        location=_loc(op), expected=f"a last dim of {p.cols}",
                        actual=f"shape {list(map(str, shape))}")


# --------------------------------------------------------------------------------------------
# the tile graph

@dataclass(frozen=True)
class Access:
    """How a node reads one operand per tile: ``tile`` (the same region), ``row`` (a per-row
    R x 1 vector, broadcast along the row), ``col`` (a 1 x C vector, broadcast down the
    columns) or ``scalar`` (a Python number or run-time integer)."""

    value: g.Operand
    mode: str

    def __str__(self) -> str:
        return str(self.value) if self.mode in ("tile", "scalar") else f"{self.value}<{self.mode}>"


@dataclass(eq=False)
class TileNode:
    """One tensor op tiled: ``rows x cols`` is the matrix its tiles cover (a reduction's input,
    else its output), ``tile`` the static tile shape, ``grid`` the number of tiles each way."""

    op: g.Op
    kind: str
    out: g.TensorValue
    rows: Dim
    cols: Dim
    tile: tuple[int, int]
    inputs: list[Access]
    why: str = ""
    reduce: str | None = None              # sum / max / min (mean: sum, then a scale)
    extra: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def grid(self) -> tuple[Dim, Dim]:
        if self.kind == "matmul":
            return ceil_div(self.rows, self.tile[0]), ceil_div(self.cols, self.extra["tn"])
        return ceil_div(self.rows, self.tile[0]), ceil_div(self.cols, self.tile[1])

    @property
    def is_rowvec(self) -> bool:
        """An op whose output is one value per row (a row reduction, or elementwise on R x 1)."""
        if self.kind == "reduce" and self.reduce_axis == "row":
            return True
        return self.kind in ELEMENTWISE and dims_equal(self.cols, 1)

    @property
    def reduce_axis(self) -> str | None:
        return self.extra.get("axis_kind")

    @property
    def unit(self) -> str:
        return "cube" if self.kind == "matmul" else "vector"

    def tensor_inputs(self) -> list[g.TensorValue]:
        return [a.value for a in self.inputs if isinstance(a.value, g.TensorValue)]

    def describe(self) -> str:
        nr, nc = self.grid
        ins = ", ".join(str(a) for a in self.inputs)
        attrs = "".join(f", {k}={v}" for k, v in self.op.attrs.items()
                        if k in ("axis", "keepdim", "dtype", "value"))
        head = f"{self.out} = {self.name}({ins}{attrs})"
        if self.kind == "matmul":
            tm, tk, tn = self.tile[0], self.extra["tk"], self.extra["tn"]
            shape = f"[{self.rows}x{self.extra['k']}] @ [{self.extra['k']}x{self.cols}] tiles m{tm} k{tk} n{tn}"
        else:
            shape = f"[{self.rows}x{self.cols}] in {self.tile[0]}x{self.tile[1]} tiles"
        body = f"{head}: {shape}, grid {nr} x {nc}"
        if self.kind == "reduce":
            body += (f"; partial {self.reduce} per tile, combined over the {nc} column tiles"
                     if self.reduce_axis == "row" else
                     f"; partial {self.reduce} per tile, combined over the {nr} row tiles")
        edges = []
        for d, t, what in ((self.rows, self.tile[0], "rows"), (self.cols, self.tile[1], "cols")):
            if isinstance(d, Sym):
                edges.append(f"{what}: run-time count, last tile partial through its valid region")
            elif d % t:
                edges.append(f"{what}: last tile holds {d % t} of {t} (valid region)")
        if edges:
            body += " [" + "; ".join(edges) + "]"
        return body + (f"  # {self.why}" if self.why else "")


@dataclass(eq=False)
class TileLoop:
    """A ``pto.loop``: its body tiled once, run for every index value."""

    loop: g.Loop
    body: list["Item"]


Item = Union[TileNode, TileLoop]


@dataclass(eq=False)
class TileGraph:
    """The tile graph of one function: nodes in program order, places of every tensor."""

    fn: g.Function
    profile: str
    items: list[Item]
    places: dict[g.TensorValue, Place]
    buffers: list[Buffer]

    def nodes(self) -> Iterator[TileNode]:
        def rec(items: list[Item]) -> Iterator[TileNode]:
            for it in items:
                if isinstance(it, TileLoop):
                    yield from rec(it.body)
                else:
                    yield it
        return rec(self.items)

    def tile_count(self) -> int | None:
        """Tile ops a static graph expands into (loops once); None when a count is dynamic."""
        total = 0
        for n in self.nodes():
            nr, nc = n.grid
            if isinstance(nr, Sym) or isinstance(nc, Sym):
                return None
            total += nr * nc
        return total

    def __str__(self) -> str:
        lines = [f"tile graph {self.fn.name} (profile {self.profile})"]

        def rec(items: list[Item], depth: int) -> None:
            pad = "  " * depth
            for it in items:
                if isinstance(it, TileLoop):
                    lp = it.loop
                    lines.append(f"{pad}for {lp.index} in loop({lp.start}, {lp.stop}, {lp.step})  # {lp.name}")
                    rec(it.body, depth + 1)
                else:
                    lines.append(pad + it.describe())
        rec(self.items, 1)
        lines.append("  places:")
        for t, p in self.places.items():
            if t.kind != "temp" or not p.whole():
                lines.append(f"    {t} -> {p}")
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# building it

def _align_tile(vec: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """A tile shape set for another rank, aligned on the last dims (leading 1s added)."""
    rank = max(rank, 1)
    if len(vec) >= rank:
        return tuple(vec[-rank:])
    return (1,) * (rank - len(vec)) + tuple(vec)


def pick_tile(shape: tuple[Dim, ...], dtype: DType, vec: tuple[int, ...] | None, budget: int,
              op: g.Op | None) -> tuple[tuple[int, int], str]:
    """The 2-D tile (rows, cols) for a tensor of ``shape``: the user's vector tile shape, else
    a default from the buffer budget (whole rows where they fit). Never fails for lack of one."""
    rows, cols = matrix(shape)
    if vec is not None:
        if any(not isinstance(v, int) or v < 1 for v in vec):
            raise FrontendError("FRONT_TILE_SHAPE", "a tile shape needs positive int extents",
                                location=_loc(op), expected="ints >= 1", actual=str(vec))
        t = _align_tile(tuple(vec), len(shape))
        tr, tc = math.prod(t[:-1]) if len(t) > 1 else 1, t[-1]
        why = f"vec tile {tuple(vec)}"
    else:
        item = max(dtype.itemsize, 1)
        per_row = budget // item
        tc = cols if isinstance(cols, int) and cols <= per_row else _pow2_at_most(min(per_row, 1024))
        tr = max(1, per_row // max(tc, 1))
        if tr >= 8:
            tr -= tr % 8
        why = f"default tile from a {budget // 1024} KB budget"
    if isinstance(rows, int):
        tr = max(1, min(tr, rows))
    if isinstance(cols, int):
        tc = max(1, min(tc, cols))
    return (tr, tc), why


def _pow2_at_most(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def broadcast_mode(operand: tuple[Dim, ...], out: tuple[Dim, ...], op: g.Op) -> str:
    """How an operand of shape ``operand`` is read for an output of shape ``out`` (numpy rules)."""
    if len(operand) == len(out) and all(dims_equal(a, b) for a, b in zip(operand, out)):
        return "tile"
    if len(operand) > len(out):
        raise _bcast_error(operand, out, op)
    s = (1,) * (len(out) - len(operand)) + tuple(operand)
    if all(dims_equal(a, b) for a, b in zip(s, out)):
        return "tile"
    if out and all(dims_equal(a, b) for a, b in zip(s[:-1], out[:-1])) and dims_equal(s[-1], 1):
        return "row"
    if out and all(dims_equal(a, 1) for a in s[:-1]) and dims_equal(s[-1], out[-1]):
        return "col"
    raise _bcast_error(operand, out, op)


def _bcast_error(operand: tuple[Dim, ...], out: tuple[Dim, ...], op: g.Op) -> FrontendError:
    return FrontendError("FRONT_TILE_BROADCAST", f"{op.name}: this broadcast has no tile form",
                         location=_loc(op),
                         expected="an operand of the result's shape, one value per row (last dim 1) "
                                  "or one row (leading dims 1)",
                         actual=f"operand {list(map(str, operand))} for result {list(map(str, out))}",
                         notes=["a single value broadcast everywhere is a scalar operand; other "
                                "patterns can be made explicit with a reshape or a view"])


class _Tiler:
    def __init__(self, fn: g.Function, profile: str, options: Options) -> None:
        self.fn = fn
        self.profile = profile
        self.prof = profiles.get(profile)
        self.budget = options.vec_budget(self.prof.capacity[Loc.VEC])
        self.places: dict[g.TensorValue, Place] = {}
        self.buffers: list[Buffer] = []
        self.alias: dict[g.TensorValue, tuple[g.TensorValue, tuple[Dim, ...], g.Op]] = {}
        self.names: set[str] = set()

    def buffer(self, t: g.TensorValue, kind: str) -> Place:
        name = t.name
        i = 1
        while name in self.names:
            i += 1
            name = f"{t.name}_{i}"
        self.names.add(name)
        b = Buffer(name, t, kind)
        self.buffers.append(b)
        p = Place(b, 0, 0, b.rows, b.cols)
        self.places[t] = p
        return p

    def place(self, t: g.TensorValue) -> Place:
        if t in self.places:
            return self.places[t]
        if t in self.alias:          # written straight into the window it is assembled into
            dst, offsets, op = self.alias[t]
            p = window(self.place(dst), t.shape, offsets, dst.shape, op)
            self.places[t] = p
            return p
        return self.buffer(t, "workspace")

    def run(self) -> TileGraph:
        for p in self.fn.params:
            if p.tensor is not None:
                self.buffer(p.tensor, "param")
        for r in self.fn.results:
            if r not in self.places:
                self.buffer(r, "result")
        self._find_aliases(self.fn.body)
        items = self._items(self.fn.body)
        return TileGraph(self.fn, self.profile, items, self.places, self.buffers)

    def _find_aliases(self, body: list[g.Node]) -> None:
        """A temp or local assembled once into a window is computed in that window (no copy)."""
        uses: dict[g.TensorValue, int] = {}
        assembles: list[g.Op] = []
        for op in _walk(body):
            for i in op.inputs:
                if isinstance(i, g.TensorValue):
                    uses[i] = uses.get(i, 0) + 1
            if kind_of(op) == "assemble":
                assembles.append(op)
        order = list(_walk(body))
        for op in assembles:
            src, dst = op.inputs[0], op.outputs[0]
            if (isinstance(src, g.TensorValue) and src.kind in ("temp", "local") and uses.get(src) == 1
                    and src not in self.alias and src is not dst
                    and not _is_view(src, body)):
                offsets = tuple(op.attrs.get("offsets") or (0,) * dst.rank)
                if not _InPlace(self, order).hazard(src, dst, offsets, op):
                    self.alias[src] = (dst, offsets, op)

    def _items(self, body: list[g.Node]) -> list[Item]:
        out: list[Item] = []
        for n in body:
            if isinstance(n, g.Loop):
                out.append(TileLoop(n, self._items(n.body)))
                continue
            node = self._op(n)
            if node is not None:
                out.append(node)
        return out

    def _op(self, op: g.Op) -> TileNode | None:
        kind = kind_of(op)
        if kind == "topk":
            return self._topk(op)
        if kind == "gather":
            return self._gather(op)
        if kind == "view":
            src = op.inputs[0]
            assert isinstance(src, g.TensorValue)
            out = op.outputs[0]
            self.places[out] = window(self.place(src), out.shape, tuple(op.attrs.get("offsets") or ()),
                                      src.shape, op)
            return None
        if kind == "reshape":
            src, out = op.inputs[0], op.outputs[0]
            assert isinstance(src, g.TensorValue)
            self.places[out] = reshaped(self.place(src), out.shape, op)
            return None
        if kind == "assemble":
            src, dst = op.inputs[0], op.outputs[0]
            assert isinstance(src, g.TensorValue)
            if self.alias.get(src, (None,))[0] is dst:
                self.place(src)
                return None
            offsets = tuple(op.attrs.get("offsets") or (0,) * dst.rank)
            target = window(self.place(dst), src.shape, offsets, dst.shape, op)
            rows, cols = matrix(src.shape)
            (tr, tc), why = pick_tile(src.shape, src.dtype, op.tiles.vec, self.budget, op)
            self.place(src)
            return TileNode(op, "copy", dst, rows, cols, (tr, tc), [Access(src, "tile")], why,
                            extra={"target": target})
        if kind == "reduce":
            return self._reduce(op)
        if kind == "matmul":
            return self._matmul(op)
        if kind == "transpose":
            return self._transpose(op)
        return self._elementwise(op, kind)

    def _elementwise(self, op: g.Op, kind: str) -> TileNode:
        out = op.outputs[0]
        rows, cols = matrix(out.shape)
        ins: list[Access] = []
        for i in op.inputs:
            if isinstance(i, g.TensorValue):
                mode = broadcast_mode(i.shape, out.shape, op)
                if mode == "col" and dims_equal(rows, 1):
                    mode = "tile"
                ins.append(Access(i, mode))
                self.place(i)
            else:
                ins.append(Access(i, "scalar"))
        (tr, tc), why = pick_tile(out.shape, out.dtype, op.tiles.vec, self.budget, op)
        self.place(out)
        return TileNode(op, kind, out, rows, cols, (tr, tc), ins, why)

    def _reduce(self, op: g.Op) -> TileNode:
        src, out = op.inputs[0], op.outputs[0]
        assert isinstance(src, g.TensorValue)
        axis = int(op.attrs.get("axis", src.rank - 1))
        if axis < 0:
            axis += src.rank
        red = {"sum": "sum", "mean": "sum", "amax": "max", "amin": "min"}[op.name]
        rows, cols = matrix(src.shape)
        vec = op.tiles.vec
        if vec is not None and len(vec) == out.rank and out.rank != src.rank:
            vec = tuple(vec[:axis]) + (1,) + tuple(vec[axis:])
        extra = {"axis_kind": "row" if axis == src.rank - 1 else "col", "mean": op.name == "mean",
                 "length": src.shape[axis]}
        if axis == src.rank - 1 or (axis == src.rank - 2 and all(dims_equal(d, 1) for d in src.shape[:axis])):
            (tr, tc), why = pick_tile(src.shape, src.dtype, vec, self.budget, op)
        else:    # a middle axis: groups of column reductions over the (groups x length) x inner view
            groups, length, inner = prod(src.shape[:axis]), src.shape[axis], prod(src.shape[axis + 1:])
            rows, cols = length, inner
            sub = None
            if vec is not None:
                t = _align_tile(tuple(vec), src.rank)
                sub = (math.prod(t[axis:-1]) if axis < src.rank - 1 else 1, t[-1])
            (tr, tc), why = pick_tile((length, inner), src.dtype, sub, self.budget, op)
            why += f"; {groups} group(s) of column reductions over rows of {inner} elements"
            extra.update(groups=groups,
                         src_place=reshaped(self.place(src), (sym_binop("mul", groups, length), inner), op),
                         out_place=reshaped(self.place(out), (groups, inner), op))
        self.place(src)
        self.place(out)
        return TileNode(op, "reduce", out, rows, cols, (tr, tc), [Access(src, "tile")], why,
                        reduce=red, extra=extra)

    def _topk(self, op: g.Op) -> TileNode:
        """topk along the last axis, a kernel of its own; the indices output rides in ``extra``.
        Largest first in a dtype the profile sorts: one row per invocation, sorted and merged
        (frontend/topksort.py plans it, lower_sort.py writes it); otherwise a row block of whole
        rows per invocation and k selection passes (frontend/lower.py, TopkKernel)."""
        src = op.inputs[0]
        vals, idxs = op.outputs
        assert isinstance(src, g.TensorValue)
        axis = int(op.attrs.get("axis", src.rank - 1))
        cols, k, largest = src.shape[-1], int(op.attrs["k"]), bool(op.attrs.get("largest", True))
        rows, _ = matrix(src.shape)
        extra = {"k": k, "largest": largest, "indices": idxs}
        sp = None
        if axis == src.rank - 1 and isinstance(cols, int) and largest and topksort.sortable(src.dtype, self.prof.name):
            sp = topksort.plan(cols, k, src.dtype, self.prof.capacity[Loc.VEC],
                               self.prof.alignment if self.prof.enforce_row_alignment else 0)
        if sp is not None:
            for t in (src, vals, idxs):
                self.place(t)
            how = (f"whole {cols}-element rows" if sp.chunks == 1 else
                   f"{sp.chunks} chunks of {sp.chunk} positions per row, merged")
            return TileNode(op, "topk", vals, rows, cols, (1, cols), [Access(src, "tile")],
                            f"one row per invocation, {how}: TSORT32, {sp.passes} merge passes, "
                            f"{sp.runs} runs merged to the best {k}", extra={**extra, "sort": sp})
        why_not = ("topk is tiled along the last axis" if axis != src.rank - 1 else
                   "topk's row length must be known at compile time" if not isinstance(cols, int) else
                   f"the {TOPK_TILES} working tiles of one {cols}-element row do not fit the vector buffer"
                   if TOPK_TILES * cols * 4 > self.prof.capacity[Loc.VEC] else "")
        if why_not:
            raise FrontendError("FRONT_UNSUPPORTED_OP", f"topk: {why_not}", location=_loc(op),
                                expected="topk over the last axis of a tensor whose last dim is a static size "
                                         f"with {TOPK_TILES} x 4 bytes per element fitting the vector buffer "
                                         "(largest first in a dtype the profile sorts: any row length "
                                         "whose sort of k positions fits)",
                                actual=f"axis {axis} of {src.type_str()}",
                                notes=["transpose (or reshape) so the selected axis is last"])
        vec = op.tiles.vec
        (tr, _), why = pick_tile(src.shape, src.dtype, vec, self.budget, op)
        fit = max(1, self.prof.capacity[Loc.VEC] // (TOPK_TILES * int(cols) * 4))
        tr = min(tr, fit)
        self.place(src)
        self.place(vals)
        self.place(idxs)
        return TileNode(op, "topk", vals, rows, cols, (tr, int(cols)), [Access(src, "tile")],
                        why + f"; whole {cols}-element rows, {k} selection passes", extra=extra)

    def _gather(self, op: g.Op) -> TileNode:
        """A row gather: a block of whole output rows per invocation (MGATHER in ROW mode fills a
        tile from column 0 of each picked row), the index row read alongside; the table is the
        whole tensor the instruction addresses."""
        table, index = op.inputs
        out = op.outputs[0]
        assert isinstance(table, g.TensorValue) and isinstance(index, g.TensorValue)
        rows, cols = matrix(out.shape)
        place = self.place(table)
        item = max(table.dtype.itemsize, 1)
        why_not = ("the table must be a whole tensor (MGATHER addresses all of it)" if not place.whole() else
                   "the table's row length must be known at compile time" if not isinstance(cols, int) else
                   f"one {cols}-element row does not fit the vector buffer"
                   if cols * item > self.prof.capacity[Loc.VEC] else "")
        if why_not:
            raise FrontendError("FRONT_UNSUPPORTED_OP", f"gather_rows: {why_not}", location=_loc(op),
                                expected="a whole 2-D tensor with static rows that fit the vector buffer",
                                actual=f"{table} at {place}",
                                notes=["gather from the parameter (or a reshape of it), then take views"])
        vec = op.tiles.vec
        if vec is not None:
            (tr, _), why = pick_tile(out.shape, out.dtype, vec, self.budget, op)
        else:
            tr, why = max(1, self.budget // (int(cols) * item)), f"default tile from a {self.budget // 1024} KB budget"
        fit = max(1, self.prof.capacity[Loc.VEC] // (int(cols) * item + 64))
        tr = min(tr, fit, rows) if isinstance(rows, int) else min(tr, fit)
        if tr >= 8:
            tr -= tr % 8
        self.place(index)
        self.place(out)
        return TileNode(op, "gather", out, rows, cols, (tr, int(cols)), [Access(table, "tile"), Access(index, "col")],
                        why + f"; whole {cols}-element rows picked by {index}")

    def _transpose(self, op: g.Op) -> TileNode:
        """A 2-D transpose: input tile (i, j) becomes output tile (j, i) (TTRANS)."""
        src, out = op.inputs[0], op.outputs[0]
        assert isinstance(src, g.TensorValue)
        perm = tuple(op.attrs.get("perm") or tuple(reversed(range(src.rank))))
        if src.rank != 2 or perm != (1, 0):
            raise FrontendError("FRONT_UNSUPPORTED_OP", "transpose is tiled for 2-D tensors",
                                location=_loc(op), expected="a 2-D tensor, perm (1, 0)",
                                actual=f"{src.type_str()}, perm {perm}")
        rows, cols = src.shape
        vec = tuple(reversed(op.tiles.vec)) if op.tiles.vec and len(op.tiles.vec) == 2 else op.tiles.vec
        (tr, tc), why = pick_tile(src.shape, src.dtype, vec, self.budget, op)
        self.place(src)
        self.place(out)
        return TileNode(op, "transpose", out, rows, cols, (tr, tc), [Access(src, "tile")], why)

    def _matmul(self, op: g.Op) -> TileNode:
        a, b = op.inputs[0], op.inputs[1]
        out = op.outputs[0]
        assert isinstance(a, g.TensorValue) and isinstance(b, g.TensorValue)
        if a.rank != 2 or b.rank != 2:
            raise FrontendError("FRONT_MATMUL", "matmul is tiled for 2-D operands", location=_loc(op),
                                expected="[M, K] @ [K, N] (a transpose flag swaps an operand's dims)",
                                actual=f"{a.type_str()} @ {b.type_str()}")
        a_t, b_t = bool(op.attrs.get("a_trans")), bool(op.attrs.get("b_trans"))
        m, k = (a.shape[1], a.shape[0]) if a_t else a.shape
        n = b.shape[0] if b_t else b.shape[1]
        for t, flag in ((a, a_t), (b, b_t)):
            if flag and not self.place(t).whole():
                raise FrontendError("FRONT_MATMUL", "a transposed matmul operand must be a whole tensor",
                                    location=_loc(op), expected="a parameter or a computed tensor",
                                    actual=f"{t} is a window of {self.place(t).buffer.name}")
        cube = op.tiles.cube
        if cube is not None:
            tm, tk, tn = cube.m[0], cube.k[0], cube.n[0]
            why = f"cube tile m{tm} k{tk} n{tn}"
        else:
            tm, tk, tn = self._default_cube(m, k, n, a.dtype, out.dtype)
            why = "untiled (whole matrices)" if (tm, tk, tn) == (m, k, n) else "default cube tile"
        tm = min(tm, m) if isinstance(m, int) else tm
        tk = min(tk, k) if isinstance(k, int) else tk
        tn = min(tn, n) if isinstance(n, int) else tn
        self.place(a)
        self.place(b)
        self.place(out)
        return TileNode(op, "matmul", out, m, n, (tm, tk), [Access(a, "tile"), Access(b, "tile")], why,
                        extra={"k": k, "tk": tk, "tn": tn, "a_trans": a_t, "b_trans": b_t})

    def _default_cube(self, m: Dim, k: Dim, n: Dim, dt: DType, acc: DType) -> tuple[int, int, int]:
        """The whole matrices when they fit L0A/L0B/L0C, else 128-wide tiles (64 along K)."""
        cap = self.prof.capacity
        if all(isinstance(d, int) for d in (m, k, n)):
            mm, kk, nn = int(m), int(k), int(n)  # type: ignore[arg-type]
            if (mm * kk * dt.itemsize <= cap[Loc.LEFT] and kk * nn * dt.itemsize <= cap[Loc.RIGHT]
                    and mm * nn * acc.itemsize <= cap[Loc.ACC] and mm * kk * dt.itemsize + kk * nn * dt.itemsize
                    <= cap[Loc.MAT]):
                return mm, kk, nn
        return 128, 64, 128


class _InPlace:
    """Whether computing a temp straight into the window it is assembled into is safe: it is
    not when the producer, or an op between it and the assemble, reads or writes the
    destination's storage anywhere but the very element being written (decision 'Frontend
    in-place writes'); the assemble then stays a copy out of a workspace."""

    def __init__(self, tiler: "_Tiler", order: list[g.Op]) -> None:
        self.tiler = tiler
        self.order = order
        self.made: dict[g.TensorValue, g.Op] = {o: op for op in order for o in op.outputs}
        self.memo: dict[g.TensorValue, Place] = {}

    def where(self, t: g.TensorValue) -> Place:
        """The window ``t`` names: through views and reshapes down to a buffer (a stand-in
        buffer for a tensor not placed yet)."""
        if t in self.memo:
            return self.memo[t]
        if t in self.tiler.places:
            p = self.tiler.places[t]
        else:
            op = self.made.get(t)
            kind = kind_of(op) if op is not None else None
            src = op.inputs[0] if op is not None and op.inputs else None
            if kind == "view" and isinstance(src, g.TensorValue):
                p = window(self.where(src), t.shape, tuple(op.attrs.get("offsets") or ()), src.shape, op)
            elif kind == "reshape" and isinstance(src, g.TensorValue):
                p = reshaped(self.where(src), t.shape, op)
            else:
                b = Buffer(t.name, t, "workspace")
                p = Place(b, 0, 0, b.rows, b.cols)
        self.memo[t] = p
        return p

    def hazard(self, src: g.TensorValue, dst: g.TensorValue, offsets: tuple[Dim, ...], asm: g.Op) -> bool:
        producer = self.made.get(src)
        if producer is None or producer not in self.order or asm not in self.order:
            return True
        if _flat_rowvec(producer):
            return True              # stored as R x 1: only a whole buffer is that
        try:
            target = window(self.where(dst), src.shape, offsets, dst.shape, asm)
        except FrontendError:
            return True
        root = target.buffer.base
        for op in self.order[self.order.index(producer):self.order.index(asm)]:
            if kind_of(op) == "assemble" or op in (self.tiler.alias.get(o, (None, None, None))[2]
                                                  for o in op.outputs):
                if self.where(op.outputs[0]).buffer.base is root:
                    return True      # another write into the destination before this one lands
            for i in op.inputs:
                if not isinstance(i, g.TensorValue) or i is src:
                    continue
                try:
                    p = self.where(i)
                except FrontendError:
                    return True
                if p.buffer.base is not root:
                    continue
                if not (op is producer and kind_of(op) in ELEMENTWISE
                        and broadcast_mode(i.shape, src.shape, op) == "tile" and same_place(p, target)):
                    return True
        return False


def _flat_rowvec(op: g.Op) -> bool:
    """A last-axis reduction that drops its dim and leaves a matrix of several columns: one
    value per source row, stored as a column of its whole buffer."""
    if kind_of(op) != "reduce":
        return False
    src, out = op.inputs[0], op.outputs[0]
    assert isinstance(src, g.TensorValue)
    axis = int(op.attrs.get("axis", src.rank - 1))
    return axis % max(src.rank, 1) == src.rank - 1 and out.rank == src.rank - 1 and out.rank >= 2 \
        and not dims_equal(out.shape[-1], 1)


def same_place(a: Place, b: Place) -> bool:
    """Whether two places name the same elements in the same order."""
    ba, bb = a.buffer, b.buffer
    return (ba.base is bb.base and ba.transposed == bb.transposed
            and dims_equal(ba.cols, bb.cols) and dims_equal(a.row0, b.row0)
            and dims_equal(a.col0, b.col0) and dims_equal(a.rows, b.rows) and dims_equal(a.cols, b.cols))


def _walk(body: list[g.Node]) -> Iterator[g.Op]:
    for n in body:
        if isinstance(n, g.Loop):
            yield from _walk(n.body)
        else:
            yield n


def _is_view(t: g.TensorValue, body: list[g.Node]) -> bool:
    """Whether ``t`` names elements of another buffer (a view or a reshape of it)."""
    return any(kind_of(op) in ("view", "reshape") and t in op.outputs for op in _walk(body))


def tile_function(fn: g.Function, profile: str = "cpu", options: Options | None = None) -> TileGraph:
    """The tile graph of ``fn`` for ``profile`` (tile shapes: the ops' own, else defaults);
    N-D broadcasts and batched matmuls first become loops over 2-D ones (frontend/batching.py)."""
    from .batching import expand_batches
    return _Tiler(expand_batches(fn), profile, options or Options()).run()
