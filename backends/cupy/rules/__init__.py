"""Lowering rules of the cupy backend, one module per ISA family: mnemonic -> rule.

A rule is a ``MapRule`` (elementwise over the destination's valid region, fusable) or a
function ``rule(gen, op)`` that emits the instruction's C++ with the ``codegen.Gen`` helpers.
"""
from __future__ import annotations

from typing import Any

from . import elementwise, matrix, memory, movement, reduce_expand, sync, tile_scalar

RULES: dict[str, Any] = {}
for _family in (elementwise, tile_scalar, reduce_expand, memory, matrix, movement, sync):
    for _name, _rule in _family.RULES.items():
        assert _name not in RULES, f"two cupy rules for {_name}"
        RULES[_name] = _rule
