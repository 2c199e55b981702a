"""Capture: runs a ``@jit`` function once with proxy tensors and records the tensor graph.

Every frontend call lands in ``Recorder.record``, which checks the operands against the op
table's rules, names the result after the user's variable (``rowmax = pto.amax(...)`` gives
``%rowmax``), stamps the tile shapes and label in force and the user's source line, and
appends the op to the innermost open body (the function's, or a ``pto.loop``'s). The
function's source is also read for what running it cannot see: assignments that rebind an
output parameter, and Python the frontend cannot capture.
"""
from __future__ import annotations

import ast
import contextlib
import inspect
import linecache
import sys
import textwrap
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ..isa.diagnostics import FrontendError
from ..isa.dtypes import DType
from .codes import front_error, has_location, relocated
from .graph import (CubeTiles, Dim, Function, Loop, Node, Op, Operand, Param, SourceLoc, Sym, TensorValue,
                    TileConfig)
from .ops import OPS, result_shapes_and_dtypes

_HERE = str(Path(__file__).resolve().parent)
_SKIP = (_HERE, str(Path(contextlib.__file__).resolve()))


def _is_internal(filename: str) -> bool:
    try:
        path = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return path.startswith(_SKIP)


# --------------------------------------------------------------------------------------------
# source locations

def user_frame() -> types.FrameType | None:
    """The innermost frame outside the frontend: the user's line that made the current call."""
    f = sys._getframe(1)
    while f is not None and _is_internal(f.f_code.co_filename):
        f = f.f_back
    return f


def _position(frame: types.FrameType) -> tuple[int, int]:
    """(line, 0-based column) of the instruction the frame is executing."""
    try:
        pos = list(frame.f_code.co_positions())[frame.f_lasti // 2]
        if pos[0] is not None and pos[2] is not None:
            return pos[0], pos[2]
    except (IndexError, AttributeError):
        pass
    return frame.f_lineno, 0


def frame_loc(frame: types.FrameType | None) -> SourceLoc | None:
    if frame is None:
        return None
    line, col = _position(frame)
    text = linecache.getline(frame.f_code.co_filename, line).rstrip("\n") or None
    return SourceLoc(frame.f_code.co_filename, line, col + 1, text)


def here() -> SourceLoc | None:
    """The user's source position for the call being made now."""
    return frame_loc(user_frame())


def located(err: FrontendError, loc: SourceLoc | None) -> FrontendError:
    return err if has_location(err) or loc is None else relocated(err, loc.location())


def traceback_loc(tb: types.TracebackType | None) -> SourceLoc | None:
    """The last user frame of a traceback: where an error raised inside the frontend came from."""
    found = None
    while tb is not None:
        if not _is_internal(tb.tb_frame.f_code.co_filename):
            line = tb.tb_lineno
            text = linecache.getline(tb.tb_frame.f_code.co_filename, line).rstrip("\n") or None
            found = SourceLoc(tb.tb_frame.f_code.co_filename, line, 1, text)
        tb = tb.tb_next
    return found


_NAMES: dict[tuple[str, int], dict[tuple[int, int], tuple[str, ...]]] = {}


def assigned_names(filename: str) -> dict[tuple[int, int], tuple[str, ...]]:
    """(line, column) of each assigned expression in a file -> the plain names it is bound to."""
    lines = linecache.getlines(filename)
    key = (filename, hash(tuple(lines)))
    if key not in _NAMES:
        found: dict[tuple[int, int], tuple[str, ...]] = {}
        try:
            tree = ast.parse("".join(lines))
        except (SyntaxError, ValueError):
            tree = ast.Module(body=[], type_ignores=[])
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                t = targets[-1]
                if isinstance(t, ast.Name):
                    names: tuple[str, ...] = (t.id,)
                elif isinstance(t, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in t.elts):
                    names = tuple(e.id for e in t.elts)  # type: ignore[attr-defined]
                else:
                    continue
                found[(node.value.lineno, node.value.col_offset)] = names
        _NAMES[key] = found
    return _NAMES[key]


# --------------------------------------------------------------------------------------------
# the recorder

@dataclass
class Recorder:
    """The graph being captured and the state API calls read (tiles, label, open bodies)."""

    fn: Function
    stack: list[list[Node]] = field(default_factory=list)
    vec: tuple[int, ...] | None = None
    vec_loc: SourceLoc | None = None
    cube: CubeTiles | None = None
    cube_loc: SourceLoc | None = None
    label: str | None = None
    written: set[int] = field(default_factory=set)
    read: set[int] = field(default_factory=set)
    roots: dict[int, TensorValue] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    declared_outputs: list[TensorValue] = field(default_factory=list)
    function_scope: SourceLoc | None = None
    function_open: bool = False

    def __post_init__(self) -> None:
        self.stack = [self.fn.body]

    # naming ---------------------------------------------------------------------------------
    def unique(self, base: str) -> str:
        base = base or "t"
        name, n = base, 1
        while name in self.names:
            name, n = f"{base}_{n}", n + 1
        self.names.add(name)
        return name

    def _result_names(self, op: str, count: int, loc: SourceLoc | None) -> list[str]:
        names: tuple[str, ...] = ()
        if loc is not None:
            names = assigned_names(loc.file).get((loc.line, loc.col - 1), ())
        if len(names) != count:
            names = (op,) * count if count == 1 else tuple(f"{op}_{i}" for i in range(count))
        return [self.unique(n) for n in names]

    # tensors --------------------------------------------------------------------------------
    def root(self, t: TensorValue) -> TensorValue:
        """The tensor a view names a window of (a tensor is its own root)."""
        return self.roots.get(t.id, t)

    def new_tensor(self, name: str, shape: tuple[Dim, ...], dtype: DType, kind: str,
                   loc: SourceLoc | None) -> TensorValue:
        return TensorValue(self.unique(name), shape, dtype, kind, loc)

    # ops ------------------------------------------------------------------------------------
    def record(self, name: str, inputs: Sequence[Operand], attrs: dict | None = None,
               outputs: Sequence[TensorValue] = (), loc: SourceLoc | None = None) -> tuple[TensorValue, ...]:
        """Check and append one op; returns its results (its outputs, for ops that write)."""
        loc = loc or here()
        spec, attrs = OPS[name], dict(attrs or {})
        for t in inputs:
            if isinstance(t, TensorValue) and name != "view":
                r = self.root(t)
                if r.kind == "local" and r.id not in self.written:
                    raise front_error("FRONT_UNWRITTEN_READ", f"{t.name} is read before anything wrote it",
                                      location=loc.location() if loc else None,
                                      expected=f"a write into {r.name} (x[:] = ..., pto.assemble) before this read",
                                      actual="nothing written yet",
                                      notes=[f"{r.name} was created at {r.loc}"] if r.loc else None)
        operands = tuple(inputs) + tuple(outputs) if spec.writes else tuple(inputs)
        try:
            shapes, dtypes = result_shapes_and_dtypes(name, operands, attrs)
        except FrontendError as err:
            raise located(err, loc) from None
        self._check_tiles(spec.tiles, name, operands, shapes, loc)
        if spec.writes:
            outs = tuple(outputs)
        else:
            names = self._result_names(name, len(shapes), loc)
            outs = tuple(TensorValue(n, s, d, "temp", loc) for n, s, d in zip(names, shapes, dtypes))
        for t in inputs:
            if isinstance(t, TensorValue) and name != "view":   # naming a window reads nothing
                self.read.add(self.root(t).id)
        if spec.writes:
            self.written.update(self.root(o).id for o in outs)
        if name in ("view", "reshape"):     # both name the same elements (the kernels alias them)
            self.roots[outs[0].id] = self.root(inputs[0])  # type: ignore[arg-type]
        tiles = TileConfig(self.vec, self.cube, self.vec_loc, self.cube_loc)
        self.stack[-1].append(Op(name, tuple(inputs), outs, attrs, tiles,
                                 self.label, loc))
        return outs

    def _check_tiles(self, tiles: str | None, name: str, operands: Sequence[Operand],
                     shapes: Sequence[tuple[Dim, ...]], loc: SourceLoc | None) -> None:
        if tiles != "vec" or self.vec is None:
            return
        rank = max([len(s) for s in shapes] + [o.rank for o in operands if isinstance(o, TensorValue)])
        if rank != len(self.vec):
            raise front_error("FRONT_TILE_RANK", f"{name} has rank {rank} but the vector tile shapes have "
                              f"rank {len(self.vec)}", location=loc.location() if loc else None,
                              expected=f"{rank} tile sizes", actual=list(self.vec),
                              notes=[f"set at {self.vec_loc}: call pto.set_vec_tile_shapes with one size per "
                                     "axis before this op"] if self.vec_loc else None)

    # loops ----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def loop(self, start: Dim, stop: Dim, step: Dim, name: str | None, idx_name: str | None,
             loc: SourceLoc | None) -> Iterator[Sym]:
        base = idx_name or "i"
        index_name, n = base, 1
        while index_name in self.fn.symbols or index_name in self.names:
            index_name, n = f"{base}_{n}", n + 1
        index = Sym.var(index_name)
        self.fn.symbols[index_name] = None
        lp = Loop(index, start, stop, step, name or f"loop_{index_name}", [], loc)
        self.stack[-1].append(lp)
        self.stack.append(lp.body)
        try:
            yield index
        finally:
            self.stack.pop()


_CURRENT: list[Recorder] = []


def current(what: str = "this call") -> Recorder:
    """The recorder of the function being captured; FRONT_OUTSIDE when there is none."""
    if not _CURRENT:
        loc = here()
        raise front_error("FRONT_OUTSIDE", f"{what} is only meaningful inside a @jit function",
                          location=loc.location() if loc else None,
                          expected="a call while a @jit function is being captured",
                          actual="no function is being captured")
    return _CURRENT[-1]


def capturing() -> bool:
    return bool(_CURRENT)


# --------------------------------------------------------------------------------------------
# checks on the function's source

_UNSUPPORTED: dict[type, str] = {ast.Yield: "yield", ast.YieldFrom: "yield from", ast.Await: "await",
                                 ast.Global: "global", ast.Nonlocal: "nonlocal"}


@dataclass
class Source:
    """The parsed definition of a captured function (None members: source not available)."""

    file: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    offset: int         # lines before the definition in the file
    indent: int = 0     # columns dedent removed

    def loc(self, node: ast.AST) -> SourceLoc:
        line = node.lineno + self.offset  # type: ignore[attr-defined]
        text = linecache.getline(self.file, line).rstrip("\n") or None
        return SourceLoc(self.file, line, node.col_offset + self.indent + 1, text)  # type: ignore[attr-defined]

    def body_nodes(self) -> Iterator[ast.AST]:
        """Every node of the function's own body (not of functions or classes defined in it)."""
        todo: list[ast.AST] = list(self.node.body)
        while todo:
            n = todo.pop(0)
            yield n
            if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                todo.extend(ast.iter_child_nodes(n))


def read_source(pyfn: Callable) -> Source | None:
    """The function's definition, or None where Python keeps no source (a REPL, exec)."""
    try:
        lines, first = inspect.getsourcelines(pyfn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            indent = len(lines[0]) - len(lines[0].lstrip())
            return Source(pyfn.__code__.co_filename, node, first - 1, indent)
    return None


def check_supported(src: Source | None) -> None:
    """FRONT_UNSUPPORTED for Python that cannot be captured by running the body once."""
    if src is None:
        return
    if isinstance(src.node, ast.AsyncFunctionDef):
        raise front_error("FRONT_UNSUPPORTED", "an async function cannot be captured",
                          location=src.loc(src.node).location(), expected="def", actual="async def")
    for n in src.body_nodes():
        for kind, spelling in _UNSUPPORTED.items():
            if isinstance(n, kind):
                raise front_error("FRONT_UNSUPPORTED", f"{spelling} is not supported in a @jit function",
                                  location=src.loc(n).location(),
                                  expected="straight-line Python, static loops and pto.loop", actual=spelling)


def rebindings(src: Source | None, names: set[str]) -> dict[str, ast.AST]:
    """The first statement rebinding each of ``names`` in the function's own body."""
    found: dict[str, ast.AST] = {}
    if src is None:
        return found

    def targets(n: ast.AST) -> list[ast.AST]:
        if isinstance(n, ast.Assign):
            return list(n.targets)
        if isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            return [n.target] if not (isinstance(n, ast.AnnAssign) and n.value is None) else []
        if isinstance(n, (ast.For, ast.comprehension)):
            return [n.target]
        if isinstance(n, ast.withitem) and n.optional_vars is not None:
            return [n.optional_vars]
        if isinstance(n, ast.NamedExpr):
            return [n.target]
        return []

    def bound_names(t: ast.AST) -> Iterator[ast.Name]:
        """Names a target binds (x, a, b of ``x, (a, *b) = ...``; not x of ``x[:] = ...``)."""
        if isinstance(t, ast.Name):
            yield t
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                yield from bound_names(e)
        elif isinstance(t, ast.Starred):
            yield from bound_names(t.value)

    for n in src.body_nodes():
        for t in targets(n):
            for leaf in bound_names(t):
                if leaf.id in names and leaf.id not in found:
                    found[leaf.id] = n if not isinstance(n, (ast.comprehension, ast.withitem)) else leaf
    return found


# --------------------------------------------------------------------------------------------
# capturing a function

@dataclass(frozen=True)
class TensorParam:
    """A tensor parameter as capture needs it: its shape (Syms for dynamic dims) and dtype."""

    name: str
    shape: tuple[Dim, ...]
    dtype: DType


def capture(pyfn: Callable, tensors: Sequence[TensorParam], static: dict[str, Any], *,
            wrap: Callable[[TensorValue], Any], unwrap: Callable[[Any], TensorValue | None],
            symbols: dict[str, tuple[str, int]]) -> Function:
    """Run ``pyfn`` once: tensor parameters as proxies made by ``wrap``, the others as their
    values; returns the recorded Function. ``symbols``: each dynamic dim's (param, axis)."""
    src = read_source(pyfn)
    def_loc = src.loc(src.node) if src else SourceLoc(pyfn.__code__.co_filename, pyfn.__code__.co_firstlineno)
    check_supported(src)
    rec = Recorder(Function(pyfn.__name__, [], [], loc=def_loc))
    rec.fn.symbols.update(symbols)
    proxies: dict[str, Any] = {}
    by_name = {t.name: t for t in tensors}
    for pname in inspect.signature(pyfn).parameters:
        if pname in by_name:
            t = by_name[pname]
            rec.names.add(pname)
            value = TensorValue(pname, t.shape, t.dtype, "input", def_loc)
            rec.fn.params.append(Param(pname, value))
            proxies[pname] = wrap(value)
    _CURRENT.append(rec)
    try:
        returned = pyfn(**proxies, **static)
    except FrontendError as err:
        raise located(err, traceback_loc(err.__traceback__)) from None
    finally:
        _CURRENT.pop()
    if rec.function_open:  # pragma: no cover - a with block always closes
        rec.function_open = False
    _results(rec, returned, unwrap)
    _finish(rec, src)
    return rec.fn


def _results(rec: Recorder, returned: Any, unwrap: Callable[[Any], TensorValue | None]) -> None:
    if returned is None:
        return
    values = list(returned) if isinstance(returned, (tuple, list)) else [returned]
    loc = rec.fn.loc
    for i, v in enumerate(values):
        t = unwrap(v)
        if t is None:
            raise front_error("FRONT_RESULT", "a @jit function returns tensors (or nothing)",
                              location=loc.location() if loc else None,
                              expected="a tensor of the function, or a tuple of them", actual=type(v).__name__)
        fresh = t.kind == "temp" and t.id not in rec.roots and all(r is not t for r in rec.fn.results)
        if not fresh:       # a parameter, local, view or repeated value: copy it into a new result
            out = rec.new_tensor(f"result{i}" if len(values) > 1 else "result", t.shape, t.dtype, "output", t.loc)
            rec.record("assemble", (t,), {"offsets": (0,) * t.rank, "spelling": "move"}, (out,), loc=t.loc)
            t = out
        t.kind = "output"
        rec.fn.results.append(t)


def _finish(rec: Recorder, src: Source | None) -> None:
    """Parameter kinds, declared outputs written, and no output rebound."""
    fn = rec.fn
    tensors = [p.tensor for p in fn.params if p.tensor is not None]
    for t in tensors:
        w, r = t.id in rec.written, t.id in rec.read
        t.kind = "inout" if w and r else "output" if w else "input"
    outputs = {t.name for t in tensors if t.kind in ("output", "inout")}
    outputs |= {t.name for t in rec.declared_outputs}
    rebound = rebindings(src, {t.name for t in tensors})
    nothing = not outputs and not fn.results
    for name, node in rebound.items():
        if name in outputs or nothing:
            loc = src.loc(node) if src else None  # type: ignore[union-attr]
            raise front_error("FRONT_OUTPUT_REBIND", f"assigning to the parameter {name} rebinds the "
                              "Python name and leaves the caller's array unchanged",
                              location=loc.location() if loc else None,
                              expected=f"{name}[:] = value, or pto.assemble(value, offsets, {name})",
                              actual=f"{name} = ...",
                              notes=[f"{name} is written by the function (an output)" if name in outputs else
                                     "the function returns nothing and writes no parameter, so this "
                                     "assignment looks like a lost output"])
    for t in rec.declared_outputs:
        if t.id not in rec.written:
            loc = rec.function_scope
            raise front_error("FRONT_FUNCTION", f"{t.name} is declared an output of pto.function but "
                              "never written", location=loc.location() if loc else None,
                              expected=f"a write into {t.name} ({t.name}[:] = ..., pto.assemble(..., {t.name}))",
                              actual="no write")
    if nothing:
        loc = fn.loc
        raise front_error("FRONT_NO_OUTPUT", f"{fn.name} computes nothing its caller can see",
                          location=loc.location() if loc else None,
                          expected="a returned tensor, or a parameter written with x[:] = ... or pto.assemble",
                          actual="no result and no parameter written")


__all__ = ["Recorder", "capture", "current", "capturing", "here", "TensorParam", "user_frame"]
