"""Spellings the public PTO pages print for attributes and their values, mapped onto the
names openpto declares; the parser consults these tables only for a name it does not know,
so every declared spelling keeps its meaning (docs/assembly.md, "Public spellings").
"""
from __future__ import annotations

import enum

from ..isa import attrs as A
from ..isa.families.sync import OP_CLASS_PIPE
from ..isa.registry import lookup, names
from ..isa.spec import Instruction
from ..isa.types import Pipe

# ``#pto.KIND<...>`` kinds under another name: ``#pto.round_mode<CAST_RINT>``.
KIND_ALIASES: dict[str, str] = {"round_mode": "round", "rmode": "round", "cmp_mode": "cmp", "atomic_type": "atomic"}

# Attribute names the public pages use, by the enum their value belongs to: ``{cmp = "lt"}``,
# ``#atomic=add``, ``{rmode = ...}``. Resolved to the one declared attribute of that enum.
NAME_KINDS: dict[str, type[enum.Enum]] = {
    "cmp": A.CmpMode, "cmps": A.CmpMode, "rmode": A.RoundMode, "rnd": A.RoundMode, "round": A.RoundMode,
    "round_mode": A.RoundMode, "sat": A.SatMode, "atomic": A.AtomicMode, "mask_pattern": A.MaskPattern,
    "relu": A.ReluMode,
}

# Member spellings of the public pages: rounding as IEEE short names, ``CAST_`` prefixes.
MEMBER_ALIASES: dict[type[enum.Enum], dict[str, str]] = {
    A.RoundMode: {"RNE": "RINT", "RZ": "TRUNC", "RP": "CEIL", "RM": "FLOOR", "RNA": "ROUND"},
    A.NotifyOp: {"ATOMICADD": "ADD", "ATOMIC_ADD": "ADD"},
}
MEMBER_PREFIXES: dict[type[enum.Enum], str] = {A.RoundMode: "CAST_"}


def member_spelling(cls: type[enum.Enum], value: str) -> str:
    """``value`` (upper case) as openpto's member name, when it is a public alias."""
    v = value.upper()
    prefix = MEMBER_PREFIXES.get(cls)
    if prefix and v.startswith(prefix):
        v = v[len(prefix):]
    return MEMBER_ALIASES.get(cls, {}).get(v, v)


def declared_name(instr: Instruction, name: str) -> tuple[str | None, str]:
    """The declared attribute a public name stands for: (name, "") or (None, why not)."""
    cls = NAME_KINDS.get(name.lower())
    if cls is None:
        return None, ""
    hits = [a.name for a in instr.attrs if a.type is cls]
    if len(hits) == 1:
        return hits[0], ""
    if not hits:
        return None, ""
    return None, f"'{name}' could name any of {', '.join(hits)}"


def op_class_pipe(name: str) -> Pipe | None:
    """The pipe an operation class issues on: one of the event classes (``TLOAD``, ``TVEC``,
    ...) or, as ``record_event[TLOAD, TADD, 0]`` and ``#pto.op<TADD>`` write it, an
    instruction's name (its declared pipe). None for an unknown name, and for an instruction
    whose pipe depends on its operands (TSTORE: write TSTORE_VEC or TSTORE_ACC)."""
    pipe = OP_CLASS_PIPE.get(name.upper())
    if pipe is not None:
        return pipe
    instr = lookup(name)
    return instr.pipe if instr is not None and isinstance(instr.pipe, Pipe) else None


def op_class_names() -> tuple[str, ...]:
    return (*OP_CLASS_PIPE, *(n.upper() for n in names()))
