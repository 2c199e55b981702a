"""The tensor graph: what a ``@jit`` function computes, in whole tensors, before any tiling.

This is the contract between the two halves of the frontend: ``capture`` builds a
:class:`Function` from the user's Python, the pipeline (tiling, partition, lowering) reads it.
Nothing here knows Python source or PTO-AS. Symbolic integers (:class:`Sym`) stand for what is
only known at run time (a dynamic dimension, a loop index) and lower to ``arith`` scalar ops.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Iterator, Union

from ..isa.diagnostics import FrontendError, Location
from ..isa.dtypes import DType


@dataclass(frozen=True)
class SourceLoc:
    """A position in the user's Python source (1-based line, 1-based column)."""

    file: str
    line: int
    col: int = 1
    text: str | None = None

    def location(self) -> Location:
        return Location(file=self.file, line=self.line, col=self.col, source_line=self.text)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


# --------------------------------------------------------------------------------------------
# symbolic integers

_SYM_FOLD: dict[str, Callable[[int, int], int]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "min": min, "max": max,
    "lt": lambda a, b: int(a < b), "le": lambda a, b: int(a <= b),
    "gt": lambda a, b: int(a > b), "ge": lambda a, b: int(a >= b),
}
_SYM_SPELL = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%",
              "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@dataclass(frozen=True, eq=False)
class Sym:
    """A run-time integer: a named variable (``op == "var"``) or an expression over them.

    Arithmetic with ints and other Syms builds expressions (folded when both sides are known);
    ``min``/``max`` are methods because Python's builtins would need a truth value, and asking
    a Sym for one (``if n > 4:``) is ``FRONT_SYMBOLIC_BRANCH``. Comparisons build 0/1
    expressions; ``==`` stays identity, since Syms are dictionary keys.
    """

    op: str
    args: tuple["Sym | int", ...] = ()
    name: str | None = None

    @staticmethod
    def var(name: str) -> "Sym":
        return Sym("var", (), name)

    @staticmethod
    def const(value: int) -> "Sym":
        """A known integer kept symbolic (``pto.symbolic_scalar(1)``): ``b / const(1)`` stays an
        integer division, where ``b / 1`` on a static ``b`` would be a Python float."""
        return Sym("const", (int(value),))

    def _bin(self, op: str, other: "Sym | int", swap: bool = False) -> "Dim":
        if not isinstance(other, (int, Sym)) or isinstance(other, bool):
            return NotImplemented  # type: ignore[return-value]
        return sym_binop(op, other, self) if swap else sym_binop(op, self, other)

    def __add__(self, o): return self._bin("add", o)            # noqa: ANN001, D105, E704
    def __radd__(self, o): return self._bin("add", o, True)     # noqa: ANN001, D105, E704
    def __sub__(self, o): return self._bin("sub", o)            # noqa: ANN001, D105, E704
    def __rsub__(self, o): return self._bin("sub", o, True)     # noqa: ANN001, D105, E704
    def __mul__(self, o): return self._bin("mul", o)            # noqa: ANN001, D105, E704
    def __rmul__(self, o): return self._bin("mul", o, True)     # noqa: ANN001, D105, E704
    def __floordiv__(self, o): return self._bin("floordiv", o)  # noqa: ANN001, D105, E704
    def __rfloordiv__(self, o): return self._bin("floordiv", o, True)  # noqa: ANN001, D105, E704
    def __truediv__(self, o): return self._bin("floordiv", o)   # noqa: ANN001, D105, E704  (PyPTO spells b / tile)
    def __rtruediv__(self, o): return self._bin("floordiv", o, True)  # noqa: ANN001, D105, E704
    def __mod__(self, o): return self._bin("mod", o)            # noqa: ANN001, D105, E704
    def __rmod__(self, o): return self._bin("mod", o, True)     # noqa: ANN001, D105, E704
    def __lt__(self, o): return self._bin("lt", o)              # noqa: ANN001, D105, E704
    def __le__(self, o): return self._bin("le", o)              # noqa: ANN001, D105, E704
    def __gt__(self, o): return self._bin("gt", o)              # noqa: ANN001, D105, E704
    def __ge__(self, o): return self._bin("ge", o)              # noqa: ANN001, D105, E704

    def min(self, other: "Sym | int") -> "Dim":
        return sym_binop("min", self, other)

    def max(self, other: "Sym | int") -> "Dim":
        return sym_binop("max", self, other)

    def __bool__(self) -> bool:
        raise FrontendError("FRONT_SYMBOLIC_BRANCH",
                            f"the run-time value {self} has no truth value while the program is built",
                            expected="a Python condition on values known at compile time",
                            actual=str(self),
                            notes=["use pto.min/pto.max or Sym.min/.max instead of min()/max(), and "
                                   "valid shapes instead of branches on run-time sizes"])

    def __index__(self) -> int:
        raise FrontendError("FRONT_SYMBOLIC_BRANCH",
                            f"the run-time value {self} cannot be used as a Python int",
                            expected="an int known at compile time", actual=str(self))

    def variables(self) -> set[str]:
        if self.op == "var":
            return {self.name or "?"}
        if self.op == "const":
            return set()
        return set().union(*(a.variables() for a in self.args if isinstance(a, Sym)))

    def evaluate(self, env: dict[str, int]) -> int:
        """The value for the run-time variables in ``env`` (a KeyError names a missing one)."""
        if self.op == "var":
            return int(env[self.name or "?"])
        if self.op == "const":
            return int(self.args[0])  # type: ignore[arg-type]
        vals = [a.evaluate(env) if isinstance(a, Sym) else a for a in self.args]
        return _SYM_FOLD[self.op](*vals)

    def __str__(self) -> str:
        if self.op == "var":
            return self.name or "?"
        if self.op == "const":
            return str(self.args[0])
        a, b = (str(x) for x in self.args)
        if self.op in _SYM_SPELL:
            return f"({a} {_SYM_SPELL[self.op]} {b})"
        return f"{self.op}({a}, {b})"

    __repr__ = __str__

    def key(self) -> tuple:
        """A structural key: equal keys are the same expression (Syms compare by identity)."""
        if self.op == "var":
            return ("var", self.name)
        return (self.op, *(a.key() if isinstance(a, Sym) else a for a in self.args))


Dim = Union[int, Sym]


def sym_binop(op: str, a: Dim, b: Dim) -> Dim:
    """``a op b``, folded to an int when both are known and simplified for 0/1 operands."""
    a, b = _known(a), _known(b)
    if isinstance(a, int) and isinstance(b, int):
        return _SYM_FOLD[op](a, b)
    if op == "add" and (a == 0 or b == 0):
        return b if isinstance(a, int) else a
    if op == "sub" and isinstance(b, int) and b == 0:
        return a
    if op == "mul" and (isinstance(a, int) and a == 1 or isinstance(b, int) and b == 1):
        return b if isinstance(a, int) else a
    if op == "mul" and (isinstance(a, int) and a == 0 or isinstance(b, int) and b == 0):
        return 0
    if op == "floordiv" and isinstance(b, int) and b == 1:
        return a
    return Sym(op, (a, b))


def _known(d: Dim) -> Dim:
    """A constant Sym as its int, so arithmetic on it folds."""
    return d.args[0] if isinstance(d, Sym) and d.op == "const" else d  # type: ignore[return-value]


def dim_str(d: Dim) -> str:
    return str(d)


def evaluate_dim(d: Dim, env: dict[str, int]) -> int:
    return d.evaluate(env) if isinstance(d, Sym) else int(d)


# --------------------------------------------------------------------------------------------
# tensors, ops, loops, functions

_ids = itertools.count()


@dataclass(frozen=True)
class CubeTiles:
    """``set_cube_tile_shapes``: (L0, L1) sizes for the m, k and n axes of a matmul."""

    m: tuple[int, int]
    k: tuple[int, int]
    n: tuple[int, int]
    split_k: bool = False


@dataclass(frozen=True)
class TileConfig:
    """The tile shapes in force when an op was created (None: the pipeline picks defaults),
    and the lines that set them (the knob a portability report tells the user to change;
    not part of equality: the same shapes set twice are one tiling)."""

    vec: tuple[int, ...] | None = None
    cube: CubeTiles | None = None
    vec_loc: SourceLoc | None = field(default=None, compare=False)
    cube_loc: SourceLoc | None = field(default=None, compare=False)


#: TensorValue.kind: where the tensor lives and who owns it
KINDS = ("input", "output", "inout", "local", "temp")


@dataclass(eq=False)
class TensorValue:
    """One tensor of the graph. ``input``/``output``/``inout`` are parameters or returned
    results (global memory the caller owns); ``local`` is ``pto.tensor(...)`` created in the
    function (written before it is read); ``temp`` is an op's result. Compared by identity."""

    name: str
    shape: tuple[Dim, ...]
    dtype: DType
    kind: str = "temp"
    loc: SourceLoc | None = None
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def rank(self) -> int:
        return len(self.shape)

    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    def __str__(self) -> str:
        return f"%{self.name}"

    def type_str(self) -> str:
        return f"{self.dtype.name}[{', '.join(dim_str(d) for d in self.shape)}]"


#: an op operand: a tensor, a run-time or compile-time scalar
Operand = Union[TensorValue, Sym, int, float]


@dataclass(eq=False)
class Op:
    """One tensor operation, in program order. ``name`` is a key of the op table
    (``frontend/ops.py``); ``attrs`` its keyword attributes (axis, keepdim, offsets, dtype...).
    Ops that write into an existing tensor (``assemble``, ``move``) list it in ``outputs``."""

    name: str
    inputs: tuple[Operand, ...]
    outputs: tuple[TensorValue, ...]
    attrs: dict = field(default_factory=dict)
    tiles: TileConfig = TileConfig()
    label: str | None = None
    loc: SourceLoc | None = None

    def __str__(self) -> str:
        outs = ", ".join(f"{o}: {o.type_str()}" for o in self.outputs)
        ins = ", ".join(str(i) for i in self.inputs)
        attrs = "".join(f", {k}={_attr_str(v)}" for k, v in self.attrs.items())
        extra = []
        if self.tiles.vec is not None:
            extra.append(f"vec_tile={self.tiles.vec}")
        if self.tiles.cube is not None:
            c = self.tiles.cube
            extra.append(f"cube_tile=(m={c.m}, k={c.k}, n={c.n})")
        if self.label:
            extra.append(f"label={self.label!r}")
        if self.loc:
            extra.append(str(self.loc))
        tail = f"    # {'  '.join(extra)}" if extra else ""
        return f"{outs} = {self.name}({ins}{attrs}){tail}"


def _attr_str(v: object) -> str:
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_attr_str(x) for x in v) + "]"
    return str(v)


@dataclass(eq=False)
class Loop:
    """``for idx in pto.loop(start, stop, step)``: the body once, over a run-time index."""

    index: Sym
    start: Dim
    stop: Dim
    step: Dim
    name: str
    body: list["Node"] = field(default_factory=list)
    loc: SourceLoc | None = None


Node = Union[Op, Loop]


@dataclass
class Param:
    """A parameter of the function: a tensor (with its role) or a scalar."""

    name: str
    tensor: TensorValue | None = None
    scalar: Sym | None = None


@dataclass(eq=False)
class Function:
    """A captured ``@jit`` function: parameters, run-time symbols, the body, results.

    ``symbols`` maps every run-time variable name to where its value comes from: a
    ``(param name, axis)`` for a dynamic dimension, or ``None`` for a scalar parameter or a
    loop index (bound by the loop)."""

    name: str
    params: list[Param]
    body: list[Node]
    results: list[TensorValue] = field(default_factory=list)
    symbols: dict[str, tuple[str, int] | None] = field(default_factory=dict)
    loc: SourceLoc | None = None

    def walk(self) -> Iterator[Op]:
        """Every op, loops flattened, in program order."""
        def rec(nodes: list[Node]) -> Iterator[Op]:
            for n in nodes:
                if isinstance(n, Loop):
                    yield from rec(n.body)
                else:
                    yield n
        return rec(self.body)

    def __str__(self) -> str:
        def param(p: Param) -> str:
            if p.tensor is not None:
                return f"{p.name}: {p.tensor.kind} {p.tensor.type_str()}"
            return f"{p.name}: index"
        lines = [f"func {self.name}({', '.join(param(p) for p in self.params)})"
                 + (f" -> ({', '.join(r.type_str() for r in self.results)})" if self.results else "")]

        def rec(nodes: list[Node], depth: int) -> None:
            pad = "  " * depth
            for n in nodes:
                if isinstance(n, Loop):
                    lines.append(f"{pad}for {n.index} in loop({n.start}, {n.stop}, {n.step})"
                                 f"  # {n.name}" + (f"  {n.loc}" if n.loc else ""))
                    rec(n.body, depth + 1)
                else:
                    lines.append(pad + str(n))
        rec(self.body, 1)
        if self.results:
            lines.append(f"  return {', '.join(str(r) for r in self.results)}")
        return "\n".join(lines)
