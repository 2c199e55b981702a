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
from ..isa.types import Pipe
from .ir import Arg, Lit, MemRef, PipeLit, Value

# ``#pto.KIND<VALUE>`` keys and their enums: the attribute enums, and pipes (which name
# operands, but may be written as an attribute value too, for the verifier to judge). The
# parser reads, the printer writes and bytecode stores attribute values by this one table.
ENUM_KINDS: dict[str, type[enum.Enum]] = {key: cls for cls, key in A.ENUM_SPELLING.items()}
ENUM_KINDS["pipe"] = Pipe
KIND_OF_ENUM: dict[type[enum.Enum], str] = {cls: key for key, cls in ENUM_KINDS.items()}


def is_result(op: Operand) -> bool:
    return op.role is Role.OUT and op.kind is Kind.TILE


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
        got, _, _ = assign(layout, [type(args[o.name]) for o in present])
        if [o.name for o in got] != [o.name for o in present]:
            return ("operands " + ", ".join(o.name for o in present) + " cannot be written "
                    "positionally: an earlier optional operand is missing")
    return None
