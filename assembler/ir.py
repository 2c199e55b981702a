"""The program model: what the parser builds, the verifier checks, the printer and backends read.

A ``Module`` holds kernels; a kernel has parameters and a body of statements. Tiles are
buffers: a ``TileOp`` is destination-passing (its output operands name the buffers it writes),
so a loop that updates a tile just writes the same buffer again. Scalars are SSA values scoped
by region; ``For``/``If`` carry them across iterations and branches with ``Yield``.

Every value reference is a ``Value`` carrying its type, so a statement is self-describing
and a backend needs no symbol table. Equality ignores source locations, so
``parse(print(m)) == m`` is a meaningful test.

The IR is the bottom of the assembler: it imports nothing from the front or back ends
(``isa -> ir -> parser/printer/bytecode/verifier -> loading``). ``Module.to_text`` and
``Module.to_bytes`` reach the printer and the bytecode writer through ``WRITERS``, which
the package ``__init__`` fills in.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Union

from ..isa.diagnostics import Location, PTOError
from ..isa.spec import Instruction, Kind, Role
from ..isa.types import INDEX, Pipe, ScalarType, TileType, Type

MAIN = "main"  # the kernel a bare list of statements becomes
MAX_DEPTH = 64  # deepest nesting of regions a module may have: the text and bytecode limit


def _loc() -> Any:
    """A source location: kept for diagnostics, ignored by ==."""
    return field(default=None, compare=False, repr=False)


# --------------------------------------------------------------------------- operands

@dataclass(frozen=True)
class Value:
    """A named value (``%name``) of a type; the same object form is used to define and to use it."""

    name: str
    type: Type

    def __str__(self) -> str:
        return "%" + self.name


Number = Union[bool, int, float]


def _number_key(v: Number) -> tuple[str, str]:
    """Equality key for literals: 1 != 1.0 != True, -0.0 != 0.0, nan == nan."""
    return (type(v).__name__, repr(v))


@dataclass(frozen=True)
class Lit:
    """A literal scalar operand with the type it is converted to."""

    value: Number = field(compare=False)
    type: ScalarType
    key: tuple[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", _number_key(self.value))


@dataclass(frozen=True)
class MemRef:
    """A global tensor at an element index: ``%g[%i, 0]``."""

    base: Value
    indices: tuple["Value | int", ...]


@dataclass(frozen=True)
class PipeLit:
    """A pipe named in an operand position: ``#pto.pipe<V>``."""

    pipe: Pipe


Arg = Union[Value, MemRef, PipeLit, Lit]
Bound = Union[Value, int]


def arg_type(arg: Arg) -> Type | None:
    """The type an argument contributes to a signature (pipes have none)."""
    if isinstance(arg, Value):
        return arg.type
    if isinstance(arg, MemRef):
        return arg.base.type
    if isinstance(arg, Lit):
        return arg.type
    return None


# --------------------------------------------------------------------------- literal typing

def _int_range(t: ScalarType) -> tuple[int, int]:
    d = t.dtype
    return int(d.min), int(d.max)


def make_lit(value: Number, t: ScalarType) -> Lit:
    """A literal converted to ``t``'s kind; ValueError (with the reason) when it does not fit."""
    if t.name == "i1":
        if isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
            return Lit(bool(value), t)
        raise ValueError(f"{value!r} is not a boolean (true, false, 0 or 1)")
    if isinstance(value, bool):
        raise ValueError(f"boolean literal for type {t.name}")
    if t.is_float:
        return Lit(float(value), t)
    if isinstance(value, float):
        raise ValueError(f"float literal {value!r} for integer type {t.name}")
    lo, hi = _int_range(t)
    if not lo <= value <= hi:
        raise ValueError(f"{value} is out of range for {t.name} [{lo}, {hi}]")
    return Lit(int(value), t)


# The canonical quiet NaN of each float width: the only NaN a bit pattern may give, since
# the text form writes every NaN as ``nan`` (a payload or sign would not read back).
_QUIET_NAN = {"f32": 0x7FC00000, "f16": 0x7E00, "bf16": 0x7FC0}


def token_lit(text: str, value: Number, t: ScalarType) -> Lit:
    """``make_lit`` for a literal as written: a hexadecimal integer for a float type is the
    float's bit pattern (``0x3F800000`` is 1.0 as f32), as PTO-AS immediates are encoded."""
    if not (t.is_float and isinstance(value, int) and not isinstance(value, bool)
            and text.lstrip("-")[:2].lower() == "0x"):
        return make_lit(value, t)
    bits = 32 if t.name == "f32" else 16
    if value < 0 or value >= 1 << bits:
        raise ValueError(f"bit pattern {text} does not fit {t.name} ({bits} bits, 0x0 to {hex((1 << bits) - 1)})")
    if t.name == "f32":
        f = struct.unpack("<f", value.to_bytes(4, "little"))[0]
    elif t.name == "bf16":
        f = struct.unpack("<f", (value << 16).to_bytes(4, "little"))[0]
    else:
        f = struct.unpack("<e", value.to_bytes(2, "little"))[0]
    if math.isnan(f) and value != _QUIET_NAN[t.name]:
        raise ValueError(f"bit pattern {text} is a NaN with a sign or payload; only {hex(_QUIET_NAN[t.name])} "
                         "(written nan) has a text form")
    return Lit(f, t)


def check_literal(value: Number, t: ScalarType) -> Lit:
    """``make_lit``, and ValueError also for a value of another kind than ``t`` makes (``0``
    for i1, ``1`` for f32): its text would read back as that kind, another literal."""
    lit = make_lit(value, t)
    if lit.key != _number_key(value):
        raise ValueError(f"{value!r} for type {t.name} is written {spell_number(lit.value)}: "
                         f"give it as {type(lit.value).__name__}")
    return lit


def default_literal_type(value: Number) -> ScalarType:
    """The type of an untyped ``.const``: ints are index, floats f32, booleans i1."""
    if isinstance(value, bool):
        return ScalarType("i1")
    return ScalarType("f32") if isinstance(value, float) else INDEX


MAX_DIGITS = 64   # characters of an integer literal after its sign ("0x" included)


def spell_number(v: Number) -> str:
    """A literal as PTO-AS writes it: an integer too long in decimal goes in hex (up to 248
    bits fit in ``MAX_DIGITS``; anything wider has no text form)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        return repr(v)
    text = str(v)
    if len(text) - (v < 0) > MAX_DIGITS:
        return ("-" if v < 0 else "") + hex(abs(v))
    return text


# --------------------------------------------------------------------------- statements

@dataclass(frozen=True)
class TileDecl:
    """``.tile %t : T`` (or ``pto.alloc_tile``): declares a tile buffer; dynamic valid
    extents (``?`` in T) may be given as run-time index values. With ``keep`` it is the public
    ``pto.set_validshape %t, %r, %c``: the same buffer, its contents kept, a new valid region."""

    value: Value
    valid_rows: Value | None = None
    valid_cols: Value | None = None
    keep: bool = False
    addr: Value | None = None      # ``pto.alloc_tile addr = %a``: a placement hint, kept for the text
    loc: Location | None = _loc()


@dataclass(frozen=True)
class Const:
    """``.const %c = 0 : index`` (also ``arith.constant``)."""

    result: Value
    value: Number = field(compare=False)
    key: tuple[str, str] = field(init=False, repr=False)
    loc: Location | None = _loc()

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", _number_key(self.value))


@dataclass(frozen=True)
class TileOp:
    """One ISA instruction in destination-passing form: every operand by its declared name."""

    instr: Instruction
    args: Mapping[str, Arg]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    loc: Location | None = _loc()

    @property
    def results(self) -> tuple[Value, ...]:
        """The tile buffers the synchronous text form writes as results (``%d = ...``)."""
        return tuple(self.args[o.name] for o in self.instr.operands  # type: ignore[misc]
                     if o.role is Role.OUT and o.kind is Kind.TILE and o.name in self.args)

    def types(self) -> dict[str, Type]:
        """Operand types by name, as the isa checks expect them."""
        out = {}
        for name, a in self.args.items():
            t = arg_type(a)
            if t is not None:
                out[name] = t
        return out


@dataclass(frozen=True)
class ScalarOp:
    """An ``arith``-style scalar op (or a block-id query): ``%r = arith.addi %a, %b : index``.
    The two-result ops (``%lo, %hi = arith.mulsi_extended ...``) name their second in ``second``."""

    op: str
    result: Value
    operands: tuple[Value, ...] = ()
    predicate: str | None = None   # cmpi / cmpf
    second: Value | None = None    # *_extended: the high half or the carry
    loc: Location | None = _loc()

    @property
    def results(self) -> tuple[Value, ...]:
        """Every value the op defines, in written order."""
        return (self.result,) if self.second is None else (self.result, self.second)


@dataclass(frozen=True)
class Yield:
    """Ends a region, handing values to the enclosing ``For`` (next iteration) or ``If``."""

    values: tuple[Value, ...] = ()
    loc: Location | None = _loc()


@dataclass(frozen=True)
class For:
    """``scf.for %iv = lb to ub step s iter_args(%a = init) -> (T) { ... scf.yield ... }``."""

    iv: Value
    lb: Bound
    ub: Bound
    step: Bound
    body: tuple["Stmt", ...]
    iter_args: tuple[Value, ...] = ()
    inits: tuple[Value | Lit, ...] = ()
    results: tuple[Value, ...] = ()
    loc: Location | None = _loc()


@dataclass(frozen=True)
class If:
    """``scf.if %c -> (T) { ... } else { ... }``; results come from the branches' yields."""

    cond: Value
    then_body: tuple["Stmt", ...]
    else_body: tuple["Stmt", ...] = ()
    results: tuple[Value, ...] = ()
    loc: Location | None = _loc()


@dataclass(frozen=True)
class View:
    """A tensor view defined from another global value (decision "Tensor views"):
    ``make_tensor_view`` (shape and element strides over a rank-1 pointer), ``partition_view``
    (the window at ``offsets`` of extents ``sizes``) or ``tensor_view_addr`` (the storage from
    the view's origin as a pointer). The result is a global like a ``!pto.memref`` parameter."""

    op: str
    result: Value
    source: Value
    offsets: tuple[Bound, ...] = ()
    sizes: tuple[Bound, ...] = ()
    strides: tuple[Bound, ...] = ()
    loc: Location | None = _loc()


@dataclass(frozen=True)
class ViewQuery:
    """``pto.get_tensor_view_dim`` / ``pto.get_tensor_view_stride``: an ``index`` read off a
    view's run-time extent or element stride in dimension ``dim``."""

    op: str
    result: Value
    source: Value
    dim: Bound
    loc: Location | None = _loc()


@dataclass(frozen=True)
class Subset:
    """``%sub = pto.subset %src[%i, %j] sizes [R, C]`` (decision "pto.subset"): a tile whose
    storage is the R x C window of its parent at the (run-time) offsets, so writes through
    either are seen by the other. ``result``'s type is the parent's with shape R x C."""

    result: Value
    source: Value
    offsets: tuple[Bound, Bound]
    sizes: tuple[int, int]
    loc: Location | None = _loc()


VIEW_OPS = ("make_tensor_view", "partition_view", "tensor_view_addr")
QUERY_OPS = ("get_tensor_view_dim", "get_tensor_view_stride")

Stmt = Union[TileDecl, Const, TileOp, ScalarOp, Yield, For, If, View, ViewQuery, Subset]


def regions(stmt: Stmt) -> tuple[tuple[Stmt, ...], ...]:
    if isinstance(stmt, For):
        return (stmt.body,)
    if isinstance(stmt, If):
        return (stmt.then_body, stmt.else_body)
    return ()


def walk(body: tuple[Stmt, ...]) -> Iterator[Stmt]:
    """Every statement, pre-order (a region's statements after the op that owns it)."""
    for s in body:
        yield s
        for r in regions(s):
            yield from walk(r)


# --------------------------------------------------------------------------- containers

@dataclass(frozen=True)
class Kernel:
    name: str
    params: tuple[Value, ...]
    body: tuple[Stmt, ...]
    loc: Location | None = _loc()

    def param(self, name: str) -> Value:
        for p in self.params:
            if p.name == name:
                return p
        raise PTOError("PTO_KERNEL", f"@{self.name} has no parameter %{name}",
                       expected=", ".join("%" + p.name for p in self.params) or "no parameters",
                       actual=repr(name))

    def walk(self) -> Iterator[Stmt]:
        return walk(self.body)

    def tiles(self) -> dict[str, TileType]:
        """Every tile buffer of the kernel: tile parameters, declarations and written results."""
        out = {p.name: p.type for p in self.params if isinstance(p.type, TileType)}
        for s in self.walk():
            if isinstance(s, TileDecl) and isinstance(s.value.type, TileType):
                out.setdefault(s.value.name, s.value.type)
            elif isinstance(s, Subset) and isinstance(s.result.type, TileType):
                out.setdefault(s.result.name, s.result.type)
            elif isinstance(s, TileOp):
                for o in s.instr.operands:
                    a = s.args.get(o.name)
                    if o.role is not Role.IN and isinstance(a, Value) and isinstance(a.type, TileType):
                        out.setdefault(a.name, a.type)
        return out


@dataclass(frozen=True)
class Module:
    kernels: tuple[Kernel, ...]

    def kernel(self, name: str | None = None, choose: str = "name one") -> Kernel:
        """The kernel called ``name``; without a name, the module's only kernel. ``PTO_KERNEL``
        otherwise; ``choose`` says how the caller names a kernel (``"choose one with --kernel"``)."""
        if name is None:
            if len(self.kernels) == 1:
                return self.kernels[0]
            have = ", ".join(k.name for k in self.kernels) or "no kernels"
            raise PTOError("PTO_KERNEL", f"the module has {len(self.kernels)} kernels; {choose}",
                           expected=f"one of {have}", actual="no kernel named")
        if isinstance(name, str):
            for k in self.kernels:
                if k.name == name:
                    return k
        shown = f"@{name}" if isinstance(name, str) else repr(name)
        have = ", ".join(k.name for k in self.kernels) or "no kernels"    # (a launch looks kernels up)
        raise PTOError("PTO_KERNEL", f"no kernel {shown} in the module", expected=have, actual=repr(name))

    def to_text(self) -> str:
        """The module as canonical PTO-AS (see ``printer.py``)."""
        return WRITERS["text"](self)  # type: ignore[return-value]

    def to_bytes(self) -> bytes:
        """The module as PTO bytecode (see ``bytecode.py``)."""
        return WRITERS["bytes"](self)  # type: ignore[return-value]

    def __str__(self) -> str:
        return self.to_text()


# The writers behind ``Module.to_text`` ("text") and ``Module.to_bytes`` ("bytes"): registered
# by ``openpto.assembler`` (imported before any of its modules), so the IR needs no import of them.
WRITERS: dict[str, Callable[[Module], "str | bytes"]] = {}
