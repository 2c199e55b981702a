"""How an instruction's declared operands map onto the text forms; shared by parser,
printer and verifier so the three cannot disagree.

Synchronous form ``%r0, %r1 = op a, b, c``: results are the OUT tile operands in order;
the positional operands are all others (IN, INOUT, OUT globals, ...) in declaration order.
DPS form ``op ins(...) outs(...)``: ins are the IN operands, outs the OUT/INOUT ones.
"""
from __future__ import annotations

import enum
from typing import Any

from ..isa import attrs as A
from ..isa.spec import Instruction, Kind, Operand, Role
from ..isa.types import EventType, Pipe, ScalarType, TileType, Type
from .ir import Arg, Lit, MemRef, PipeLit, Value

# ``#pto.KIND<VALUE>`` keys and their enums: the attribute enums, and pipes (which name
# operands, but may be written as an attribute value too, for the verifier to judge). The
# parser reads, the printer writes and bytecode stores attribute values by this one table.
ENUM_KINDS: dict[str, type[enum.Enum]] = {key: cls for cls, key in A.ENUM_SPELLING.items()}
ENUM_KINDS["pipe"] = Pipe
KIND_OF_ENUM: dict[type[enum.Enum], str] = {cls: key for key, cls in ENUM_KINDS.items()}


def is_result(op: Operand) -> bool:
    """Out tiles, out event tokens (TPUSH / TPOP's RecordEvent) and out scalars (TTEST's i1)
    are written as results."""
    return op.role is Role.OUT and op.kind in (Kind.TILE, Kind.EVENT, Kind.SCALAR)


def sole_scalar_type(instr: Instruction, op: Operand) -> ScalarType | None:
    """The one type a scalar result can have (TTEST's i1), so ``%r = ttest ...`` needs no
    signature; None when the declaration allows several."""
    rule = instr.dtypes
    if op.kind is not Kind.SCALAR or rule is None or op.name not in rule.operands:
        return None
    got = {t[rule.operands.index(op.name)] for t in rule.tuples}
    return ScalarType(got.pop().name) if len(got) == 1 else None


def sync_layout(instr: Instruction) -> tuple[tuple[Operand, ...], tuple[Operand, ...]]:
    """(results, positional operands) of the synchronous form (worked out once per
    instruction: the printer asks for every statement)."""
    hit = _SYNC.get(id(instr))
    if hit is not None and hit[0] is instr:
        return hit[1]
    res = tuple(o for o in instr.operands if is_result(o))
    pos = tuple(o for o in instr.operands if not is_result(o))
    _SYNC[id(instr)] = (instr, (res, pos))
    return res, pos


_SYNC: dict[int, tuple[Instruction, tuple[tuple[Operand, ...], tuple[Operand, ...]]]] = {}


def inout_layout(instr: Instruction, written: int) -> tuple[tuple[Operand, ...], tuple[Operand, ...]] | None:
    """The synchronous layout when ``written`` results are more than the out tiles: the
    leading inout tiles become results too (the public SSA spelling of accumulating
    instructions, ``%dst = tfusedmuladd %src0, %src1``: the named tile is read, then written).
    None when the instruction has not that many inout tiles."""
    res, _ = sync_layout(instr)
    inout = [o for o in instr.operands if o.role is Role.INOUT and o.kind is Kind.TILE][:written - len(res)]
    if len(inout) != written - len(res):
        return None
    moved = [o for o in instr.operands if is_result(o) or any(o is x for x in inout)]
    return tuple(moved), tuple(o for o in instr.operands if not any(o is x for x in moved))


def dps_layout(instr: Instruction) -> tuple[tuple[Operand, ...], tuple[Operand, ...]]:
    """(ins, outs) of the DPS form."""
    ins = tuple(o for o in instr.operands if o.role is Role.IN)
    outs = tuple(o for o in instr.operands if o.role is not Role.IN)
    return ins, outs


def required_count(ops: tuple[Operand, ...]) -> int:
    """How many operands must be written (the non-optional ones)."""
    return sum(1 for o in ops if not o.optional)


def assign(ops: tuple[Operand, ...], forms: list[type]) -> tuple[list[Operand], int | None, list[Operand]]:
    """Match written operands (their IR classes, in order) to declared ones.

    Positional, except that an optional operand is skipped when the written form cannot
    fill it (``tsync #pto.pipe<V>`` fills ``pipe``, skipping the optional ``event``), or when
    the items left are all needed by the required operands after it (``%i = tcolargmax %s``
    fills ``dstIdx``, skipping the leading optional ``dstVal``).
    Returns (assigned operands, index of the first surplus item or None, missing required).
    """
    out: list[Operand] = []
    k = 0
    for n, f in enumerate(forms):
        while k < len(ops) and ops[k].optional and (
                f not in ACCEPTS[ops[k].kind] or len(forms) - n <= required_count(ops[k + 1:])):
            k += 1      # cannot fill it, or what is left is needed by the required ones after it
        if k >= len(ops):
            return out, n, []
        out.append(ops[k])
        k += 1
    missing = [o for o in ops[k:] if not o.optional]
    return out, None, missing


# The kinds an item of each IR class may stand for before its type is known, and what a
# known type narrows a value to: tiles, scalars (scalar or index operands), events.
FORM_KINDS: dict[type, frozenset[Kind]] = {
    Value: frozenset((Kind.TILE, Kind.SCALAR, Kind.INDEX, Kind.EVENT)),
    MemRef: frozenset((Kind.GLOBAL,)), Lit: frozenset((Kind.SCALAR, Kind.INDEX)),
    PipeLit: frozenset((Kind.PIPE,)),
}
_TYPE_KINDS: dict[type, frozenset[Kind]] = {
    TileType: frozenset((Kind.TILE,)), ScalarType: frozenset((Kind.SCALAR, Kind.INDEX)),
    EventType: frozenset((Kind.EVENT,)),
}
_CLASS = {Kind.TILE: "tile", Kind.SCALAR: "scalar", Kind.INDEX: "scalar", Kind.EVENT: "event",
          Kind.GLOBAL: "global", Kind.PIPE: "pipe"}


def item_kinds(form: type, t: Type | None = None) -> frozenset[Kind]:
    """The operand kinds an item may fill: by its IR class, narrowed by its type if known."""
    kinds = FORM_KINDS.get(form, frozenset())
    if t is not None and form is Value:
        kinds = kinds & _TYPE_KINDS.get(type(t), kinds)
    return kinds


def readings(ops: tuple[Operand, ...], kinds: list[frozenset[Kind]]) -> list[tuple[Operand, ...]]:
    """Every way to give the written items (the kinds each may fill, in order) to declared
    operands in order, filling every required one and skipping only optional ones. Listed
    earliest-filling first: the first reading is the positional one."""
    out: list[tuple[Operand, ...]] = []

    def walk(k: int, n: int, got: tuple[Operand, ...]) -> None:
        if n == len(kinds):
            if all(o.optional for o in ops[k:]):
                out.append(got)
            return
        if len(kinds) - n > len(ops) - k:
            return
        op = ops[k]
        if op.kind in kinds[n]:
            walk(k + 1, n + 1, got + (op,))
        if op.optional:
            walk(k + 1, n, got)

    walk(0, 0, ())
    return out


def classes(reading: tuple[Operand, ...]) -> tuple[str, ...]:
    """What each item is in a reading (tile, scalar, event, ...): readings that agree on it
    differ only in which of several same-kind optional operands an item fills, which the
    positional rule (earliest first) settles; readings that disagree need the items' types."""
    return tuple(_CLASS[o.kind] for o in reading)


def choose(rs: list[tuple[Operand, ...]]) -> tuple[Operand, ...] | list[tuple[Operand, ...]]:
    """The reading to take among kind-consistent ``rs``: the positional one when they all
    agree on what each item is, else the readings that still disagree (ambiguous)."""
    first = classes(rs[0])
    distinct = [r for r in rs if classes(r) != first]
    if not distinct:
        return rs[0]
    return [rs[0], distinct[0]]


def describe(reading: tuple[Operand, ...]) -> str:
    return "(" + ", ".join(f"{o.name}: {_CLASS[o.kind]}" for o in reading) + ")"


def defines(op: Operand) -> bool:
    """An output operand naming an undefined value declares it (tiles: a new buffer)."""
    return op.role is not Role.IN and op.kind is not Kind.GLOBAL


# What each operand kind accepts in the IR (and so in text).
ACCEPTS: dict[Kind, tuple[type, ...]] = {
    Kind.TILE: (Value,),
    Kind.GLOBAL: (MemRef,),
    Kind.SCALAR: (Value, Lit),
    Kind.INDEX: (Value, Lit),
    Kind.EVENT: (Value,),
    Kind.PIPE: (PipeLit,),
}

_FORM = {Value: "a value %name", MemRef: "a memory reference %g[i, j]", Lit: "a literal",
         PipeLit: "a pipe #pto.pipe<P>"}


def accepted(kind: Kind) -> str:
    return " or ".join(_FORM[t] for t in ACCEPTS[kind])


def kind_error(op: Operand, arg: Arg | type) -> str | None:
    """Why ``arg`` (or an argument class) cannot stand for ``op``, or None."""
    cls = arg if isinstance(arg, type) else type(arg)
    if cls in ACCEPTS[op.kind]:
        return None
    return f"operand '{op.name}' ({op.kind.value}) takes {accepted(op.kind)}, not {_FORM.get(cls, cls.__name__)}"


def gap_error(instr: Instruction, args: dict[str, Arg] | Any) -> str | None:
    """Why the present operands cannot be written positionally (re-reading the text would
    assign them to other operands), or None."""
    for layout in sync_layout(instr):
        present = [o for o in layout if o.name in args]
        items = [args[o.name] for o in present]
        rs = readings(layout, [item_kinds(type(a), getattr(a, "type", None)) for a in items])
        if not rs:
            continue                 # an item of the wrong kind: kind_error reports it
        got = choose(rs)
        if isinstance(got, list) or [o.name for o in got] != [o.name for o in present]:
            return ("operands " + ", ".join(o.name for o in present) + " cannot be written "
                    "positionally: an earlier optional operand is missing")
    return None
