"""llvm lowering rules: the communication family (TPUT ... TSCATTER_COMM).

Every comm instruction is one call from the generated code into the ``World`` of the run
(``commhook.lower``): the Python side runs the instruction's own semantics on numpy views of
the same memory, so the llvm backend's puts, gets, signals and collectives are the embedded
execution's (races, deadlocks, rank and window errors included). The mnemonics come from the
spec's family, so a new comm instruction is lowered the moment it is declared.
"""
from __future__ import annotations

from typing import Any

from ....isa.registry import by_family
from ....isa.spec import Family
from ..commhook import lower

RULES: dict[str, Any] = {i.mnemonic: lower for i in by_family()[Family.COMM]}
