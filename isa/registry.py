"""The instruction table: every declaration registers here exactly once."""
from __future__ import annotations

from .diagnostics import SpecError
from .spec import Family, Instruction
from .suggest import did_you_mean

_TABLE: dict[str, Instruction] = {}

#: Mnemonics openpto spelled before the public ISA named these instructions -> the public
#: name. The old spellings stay accepted (text, bytecode, ``get``) as aliases of the public
#: declaration, which is the one ``pto isa`` lists and the printer writes.
RENAMED: dict[str, str] = {
    "TSETFMATRIX": "SETFMATRIX", "TSET_IMG2COL_RPT": "SET_IMG2COL_RPT",
    "TSET_IMG2COL_PADDING": "SET_IMG2COL_PADDING", "TSETHF32MODE": "SETHF32MODE",
    "TSETTF32MODE": "SETTF32MODE",
}


def former_names(mnemonic: str) -> tuple[str, ...]:
    """The earlier openpto spellings of ``mnemonic`` (for its ``aliases``)."""
    return tuple(old for old, new in RENAMED.items() if new == mnemonic)
_LOOKUP: dict[str, Instruction] = {}


def declare(instr: Instruction) -> Instruction:
    """Register ``instr``; a mnemonic or alias may be declared only once."""
    for key in (instr.mnemonic, *instr.aliases):
        k = key.lower()
        if k in _LOOKUP:
            raise SpecError("SPEC_DUPLICATE", f"instruction {key} declared twice")
        _LOOKUP[k] = instr
    _TABLE[instr.mnemonic] = instr
    return instr


def normalize(name: str) -> str:
    """Lowercase and strip the ``pto.`` prefix, so TADD, tadd and pto.tadd name one instruction."""
    n = name.strip().lower()
    return n[4:] if n.startswith("pto.") else n


def lookup(name: str) -> Instruction | None:
    return _LOOKUP.get(normalize(name))


def names() -> list[str]:
    """Every accepted mnemonic (lowercase, aliases included): what unknown names are matched against."""
    return list(_LOOKUP)


def get(name: str) -> Instruction:
    instr = lookup(name)
    if instr is None:
        raise SpecError("SPEC_UNKNOWN_INSTRUCTION", f"unknown instruction '{name}'{did_you_mean(name, _LOOKUP)}",
                        expected="a mnemonic listed by 'pto isa'", actual=name)
    return instr


def all_instructions() -> list[Instruction]:
    return list(_TABLE.values())


def by_family() -> dict[Family, list[Instruction]]:
    out: dict[Family, list[Instruction]] = {f: [] for f in Family}
    for ins in _TABLE.values():
        out[ins.family].append(ins)
    return out
