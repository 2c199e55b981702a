"""Reads of local tiles that no path can have written: ``STRUCT_UNINIT_READ``.

A local tile (``.tile`` / ``pto.alloc_tile``, not a kernel parameter) holds stale workspace
bytes until an instruction writes it; the reference backend reports such a read at run time
(``RUNTIME_UNINIT_READ``), other backends would compute with garbage. What is certain before
the program runs is reported here, for every backend.

The analysis must never reject a program that runs cleanly on the reference, so it tracks
the tiles that *may* have been written at each point (a forward union over paths):

* an instruction writes every tile operand its declaration marks ``out`` or ``inout``, and
  reads every ``in`` or ``inout`` tile operand (as the reference checks them), reads first;
* a ``.tile`` declaration starts its tile afresh (the reference resets it there);
* after ``scf.if`` a tile is possibly written when either branch may have written it;
* in a loop body a tile is possibly written when it was before the loop or the body writes
  it anywhere (a later iteration reads what an earlier one wrote); the loop may not run.

A tile whose valid region may be empty (a zero or a run-time extent) is never reported: an
empty region reads nothing. What only the run time decides (a loop with no iterations, a
branch not taken, part of a region) is left to the backends.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable

from ..isa.diagnostics import Location, PTOError, StructError
from ..isa.spec import Kind, Role
from ..isa.types import TileType
from .ir import For, If, Kernel, Stmt, TileDecl, TileOp, Value, walk

CODE = "STRUCT_UNINIT_READ"


def uninitialised_reads(kernel: Kernel) -> list[PTOError]:
    """One ``STRUCT_UNINIT_READ`` per tile operand that reads a local tile no path has
    written, located at the reading instruction; assumes a structurally sound kernel."""
    return _Analysis(kernel).run()


def _tile_args(s: TileOp, roles: tuple[Role, ...]) -> Iterable[tuple[str, Value]]:
    """(operand name, tile value) of ``s``'s tile operands with one of ``roles``."""
    for o in s.instr.operands:
        a = s.args.get(o.name)
        if o.kind is Kind.TILE and o.role in roles and isinstance(a, Value) and isinstance(a.type, TileType):
            yield o.name, a


_READS = (Role.IN, Role.INOUT)
_WRITES = (Role.OUT, Role.INOUT)


def _may_be_empty(t: TileType) -> bool:
    return not t.valid_rows or not t.valid_cols     # 0, or None (a run-time extent)


def _writes_anywhere(body: tuple[Stmt, ...]) -> set[str]:
    """Every tile some statement of ``body`` (nested regions included) writes."""
    return {v.name for s in walk(body) if isinstance(s, TileOp) for _, v in _tile_args(s, _WRITES)}


class _Analysis:
    def __init__(self, kernel: Kernel) -> None:
        self.k = kernel
        self.params = {p.name for p in kernel.params}
        self.index = {id(s): i for i, s in enumerate(kernel.walk())}
        self.decls: dict[str, TileDecl] = {}     # each tile's latest declaration in program order
        self.errors: list[PTOError] = []

    def run(self) -> list[PTOError]:
        self.block(self.k.body, set())
        return self.errors

    def block(self, body: tuple[Stmt, ...], written: set[str]) -> set[str]:
        """The tiles possibly written after ``body``, given those possibly written before
        (``written`` is updated in place)."""
        for s in body:
            if isinstance(s, TileDecl):
                written.discard(s.value.name)
                self.decls[s.value.name] = s
            elif isinstance(s, TileOp):
                for operand, v in _tile_args(s, _READS):
                    if v.name not in written and v.name not in self.params and not _may_be_empty(v.type):
                        self.report(s, operand, v)
                written.update(v.name for _, v in _tile_args(s, _WRITES))
            elif isinstance(s, If):
                then = self.block(s.then_body, set(written))
                written |= then | self.block(s.else_body, set(written))
            elif isinstance(s, For):
                written |= _writes_anywhere(s.body)
                written |= self.block(s.body, set(written))
        return written

    def located(self, s: Stmt) -> Location:
        """Where ``s`` is: its source position, kernel and statement index (as the verifier)."""
        return dataclasses.replace(s.loc or Location(), kernel=self.k.name, index=self.index.get(id(s)))

    def report(self, s: TileOp, operand: str, v: Value) -> None:
        where = self.located(s)
        notes = []
        decl = self.decls.get(v.name)
        if decl is not None:
            at = self.located(decl)
            notes.append(f"%{v.name} is declared at {at}; no instruction on any path from there to here writes it")
        self.errors.append(StructError(
            CODE, f"{s.instr.mnemonic} reads %{v.name} (operand {operand}), which is never written before this point",
            location=where, expected=f"an instruction writing %{v.name} before it is read", actual="never written",
            notes=notes))
