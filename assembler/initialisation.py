"""Reads of local tiles that no path can have written: ``STRUCT_UNINIT_READ``.

A local tile (``.tile`` / ``pto.alloc_tile``, not a kernel parameter) holds stale workspace
bytes until an instruction writes it; the reference backend reports such a read at run time
(``RUNTIME_UNINIT_READ``), other backends would compute with garbage. What is certain before
the program runs is reported here, for every backend.

A report means the read faults every time it executes (it may sit in a loop that runs no
iterations or a branch not taken, so a given run can skip it). The analysis must never report
a read that some execution could perform cleanly, so it tracks the tiles that *may* have been
written at each point (a forward union over paths):

* an instruction writes every tile operand its declaration marks ``out`` or ``inout``, and
  reads every ``in`` or ``inout`` tile operand (as the reference checks them), reads first;
* a ``.tile`` declaration starts its tile afresh (the reference resets it there);
  ``pto.set_validshape`` changes the valid region of the same tile and keeps what was written;
* a ``pto.subset`` names part of its parent's storage: reading or writing it reads or writes
  the parent (the analysis tracks whole tiles, so a write of part of a parent counts, as a
  write of part of a tile does);
* after ``scf.if`` a tile is possibly written when either branch may have written it;
* in a loop body a tile is possibly written when it was before the loop or the body writes
  it anywhere (a later iteration reads what an earlier one wrote); the loop may not run.

A tile whose valid region may be empty (a zero or a run-time extent) is never reported: an
empty region reads nothing. What only the run time decides (a loop with no iterations, a
branch not taken, part of a region) is left to the backends' run-time checks.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable

from ..isa.diagnostics import Location, PTOError, StructError
from ..isa.spec import Instruction, Kind, Role
from ..isa.types import TileType, Type
from .ir import For, If, Kernel, Stmt, Subset, TileDecl, TileOp, Value

CODE = "STRUCT_UNINIT_READ"


def uninitialised_reads(kernel: Kernel, subsets: Iterable[Subset] | None = None) -> list[PTOError]:
    """One ``STRUCT_UNINIT_READ`` per tile operand that reads a local tile no path has
    written, located at the reading instruction; assumes a structurally sound kernel.
    ``subsets``: the kernel's ``pto.subset`` statements in program order, when the caller
    has them (the verifier), so the kernel is not walked for them."""
    return _Analysis(kernel, subsets).run()


_READS = (Role.IN, Role.INOUT)
_WRITES = (Role.OUT, Role.INOUT)
_ROLES: dict[int, tuple[Instruction, tuple[str, ...], tuple[str, ...]]] = {}


def _roles(instr: Instruction) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(tile operands ``instr`` reads, tile operands it writes), worked out once per instruction."""
    hit = _ROLES.get(id(instr))
    if hit is None or hit[0] is not instr:
        tiles = [o for o in instr.operands if o.kind is Kind.TILE]
        hit = _ROLES[id(instr)] = (instr, tuple(o.name for o in tiles if o.role in _READS),
                                   tuple(o.name for o in tiles if o.role in _WRITES))
    return hit[1], hit[2]


def _may_be_empty(t: Type) -> bool:
    return isinstance(t, TileType) and (not t.valid_rows or not t.valid_cols)   # 0, or None (run time)


class _Analysis:
    def __init__(self, kernel: Kernel, subsets: Iterable[Subset] | None = None) -> None:
        self.k = kernel
        self.params = {p.name for p in kernel.params}
        self.decls: dict[str, TileDecl] = {}     # each tile's latest declaration in program order
        self.loop_writes: dict[int, set[str]] = {}
        self.index: dict[int, int] | None = None    # statement -> its index; made at the first report
        self.errors: list[PTOError] = []
        self.root: dict[str, str] = {}              # pto.subset result -> the tile owning its storage
        for st in kernel.walk() if subsets is None else subsets:
            if isinstance(st, Subset):
                self.root[st.result.name] = self.root.get(st.source.name, st.source.name)

    def run(self) -> list[PTOError]:
        self.block(self.k.body, set())
        return self.errors

    def block(self, body: tuple[Stmt, ...], written: set[str]) -> set[str]:
        """The tiles possibly written after ``body``, given those possibly written before
        (``written`` is updated in place)."""
        roles, params, add, root = _ROLES, self.params, written.add, self.root
        for s in body:
            c = s.__class__
            if c is TileOp:
                instr, args = s.instr, s.args     # type: ignore[union-attr]
                hit = roles.get(id(instr))
                _, reads, writes = hit if hit is not None and hit[0] is instr else (None, *_roles(instr))
                for name in reads:
                    v = args.get(name)
                    if v is None:
                        continue
                    owner = root.get(v.name, v.name) if root else v.name   # type: ignore[union-attr]
                    if owner not in written and owner not in params and not _may_be_empty(v.type):  # type: ignore[union-attr]
                        self.report(s, name, v)   # type: ignore[arg-type]
                for name in writes:
                    v = args.get(name)
                    if v is not None:
                        add(root.get(v.name, v.name) if root else v.name)     # type: ignore[union-attr]
            elif c is TileDecl and not s.keep:    # type: ignore[union-attr]
                written.discard(s.value.name)     # type: ignore[union-attr]
                self.decls[s.value.name] = s      # type: ignore[union-attr,assignment]
            elif c is If:
                then = self.block(s.then_body, set(written))        # type: ignore[union-attr]
                written |= then | self.block(s.else_body, set(written))   # type: ignore[union-attr]
            elif c is For:
                written |= self.writes_anywhere(s)   # type: ignore[arg-type]
                written |= self.block(s.body, set(written))   # type: ignore[union-attr]
        return written

    def writes_anywhere(self, loop: For) -> set[str]:
        """Every tile some statement of ``loop``'s body (nested regions included) writes;
        worked out once per loop (nested loops' sets are kept for their own turn)."""
        hit = self.loop_writes.get(id(loop))
        if hit is None:
            hit = self.loop_writes[id(loop)] = set()
            stack = [loop.body]
            while stack:
                for s in stack.pop():
                    c = s.__class__
                    if c is TileOp:
                        args = s.args   # type: ignore[union-attr]
                        hit.update(self.root.get(args[n].name, args[n].name)  # type: ignore[union-attr]
                                   for n in _roles(s.instr)[1] if n in args)
                    elif c is If:
                        stack += (s.then_body, s.else_body)   # type: ignore[union-attr]
                    elif c is For:
                        hit |= self.writes_anywhere(s)   # type: ignore[arg-type]
        return hit

    def located(self, s: Stmt) -> Location:
        """Where ``s`` is: its source position, kernel and statement index (as the verifier)."""
        if self.index is None:
            self.index = {id(t): i for i, t in enumerate(self.k.walk())}
        return dataclasses.replace(s.loc or Location(), kernel=self.k.name, index=self.index.get(id(s)))

    def report(self, s: TileOp, operand: str, v: Value) -> None:
        where = self.located(s)
        notes = []
        decl = self.decls.get(v.name)
        if decl is not None:
            notes.append(f"%{v.name} is declared at {self.located(decl)}; no instruction on any path from "
                         "there to here writes it")
        self.errors.append(StructError(
            CODE, f"{s.instr.mnemonic} reads %{v.name} (operand {operand}), which is never written before this point",
            location=where, expected=f"an instruction writing %{v.name} before it is read", actual="never written",
            notes=notes))
