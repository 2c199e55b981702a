"""Lowering rules of the llvm backend, one module per ISA family: mnemonic -> rule.

A rule is a ``MapRule`` (elementwise over the destination's valid region, fusable) or a
function ``rule(cg, op)`` that emits the instruction with the ``KernelCodegen`` helpers.
"""
from __future__ import annotations

from typing import Any

from . import (argreduce, comm, complex, convert, elementwise, fused, matrix, memory, movement, quant,
               rearrange, reduce_expand, sync, system, tile_scalar)

RULES: dict[str, Any] = {}
for _family in (argreduce, rearrange, elementwise, convert, tile_scalar, reduce_expand, memory, matrix,
                movement, complex, sync, quant, fused, system, comm):
    for _name, _rule in _family.RULES.items():
        assert _name not in RULES, f"two llvm rules for {_name}"
        RULES[_name] = _rule
