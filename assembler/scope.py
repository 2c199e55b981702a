"""Name visibility, shared by parser and verifier.

Scalars, events and globals are SSA values scoped by region: visible from their definition
to the end of the region, redefinition while visible is an error, sibling regions may reuse
a name. Tiles are buffers of the whole kernel: once declared they stay visible, and naming
one again as an output writes the same buffer (same type required).
"""
from __future__ import annotations

from typing import Callable

from ..isa.types import TileType
from .ir import Value

POISON = object()   # a name whose definition failed to parse: uses stay silent
MISSING = object()


class Scope:
    def __init__(self, parent: "Scope | None" = None) -> None:
        self.parent = parent
        self.root: Scope = parent.root if parent is not None else self
        self.names: dict[str, object] = {}
        self.ever: set[str] = set()   # root only: every name defined anywhere so far
        self.poisoned = False         # root only: whether any scope of the kernel holds a POISON

    def child(self) -> "Scope":
        return Scope(self)

    def lookup(self, name: str) -> object:
        """The visible ``Value``, ``POISON``, or ``MISSING``."""
        s: Scope | None = self
        while s is not None:
            v = s.names.get(name)
            if v is not None:
                return v
            s = s.parent
        return MISSING

    def define(self, value: Value) -> str | None:
        """Make ``value`` visible; returns why it cannot be (a redefinition), or None."""
        root, name = self.root, value.name
        # a name never defined in the kernel is not visible (a poison at most): no walk up
        prev = self.lookup(name) if name in root.ever else MISSING
        tile = value.type.__class__ is TileType or isinstance(value.type, TileType)
        if prev.__class__ is Value:
            if tile and (prev.type is value.type or prev.type == value.type):
                return None
            if tile and isinstance(prev.type, TileType):
                return f"tile %{value.name} was declared as {prev.type}, not {value.type}"
            return f"%{value.name} is already defined (as {prev.type})"
        (root if tile else self).names[name] = value
        root.ever.add(name)
        return None

    def define_param(self, value: Value) -> str | None:
        """Parameters are visible in the whole kernel, so their names may not have been
        used by any definition, even one whose region has ended."""
        if value.name in self.root.ever:
            return f"parameter %{value.name} reuses a name already defined in the kernel"
        return self.root.define(value)

    def poison(self, name: str) -> None:
        if self.lookup(name) is MISSING:
            self.names[name] = POISON
            self.root.poisoned = True

    def first_look(self) -> "Callable[[str], object]":
        """A lookup to try before ``lookup``: its None means "ask ``lookup``". The root's names
        when no scope holds a POISON: what the root holds (every tile, the kernel-level
        scalars) is visible from every open scope, and no scope may define a name that is
        visible from it, so a root hit is what ``lookup`` finds; else this scope's names (a
        POISON in an inner scope may hide a tile declared in the root after it)."""
        root = self.root
        return (self if root.poisoned else root).names.get

    def tiles(self) -> list[Value]:
        """Every tile buffer declared in the kernel so far."""
        return [v for v in self.root.names.values() if isinstance(v, Value) and isinstance(v.type, TileType)]
