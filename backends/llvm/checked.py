"""Checked mode (``compile(..., backend="llvm", checked=True)``): reads of never-written tile
elements fail with ``RUNTIME_UNINIT_READ``, where and as the reference backend reports them.

Default mode leaves a local tile's workspace bytes as they are until something writes them, so
reading one early gives unspecified values (never memory outside the workspace). Checked mode
keeps, per local tile, what the reference's ``written`` map can hold, derived from the
instruction declarations alone (no per-instruction list):

* an instruction writes every tile operand declared ``out``/``inout`` over its domain: the
  destination's valid region, its first row (``Domain.ROW0``) or the whole static tile
  (``Domain.STATIC_DST``); it reads every ``in``/``inout`` tile operand, and a read needs the
  operand's whole valid region written (as the reference's strict check: reads first);
* a ``.tile`` declaration resets its tile; tile parameters are the caller's, always written.

A ``pto.subset`` child is tracked as its root tile (the one owning the storage): a read of the
child needs the root's rows under the window written; a write through it that covers whole
rows of the root's valid region from row 0 or the watermark on moves the watermark; any other
write through it (part of a row) is more than one number can hold, so the root's tracking
stops (its watermark goes to the top) until its next declaration: a missed fault, never a
false one.

A valid region changes only at a declaration, which resets the tile, and every domain is a
prefix of rows of it (all columns of the valid region) or the whole tile, so the written set
is always the first ``k`` rows: one i64 per tile (a stack slot, a register after mem2reg)
tracks it exactly. A read faults when ``k`` < valid rows (and the region is not empty),
naming element ``(k, 0)``, the first unwritten element in row-major order as the reference
does. Each check is a compare and a branch per executed instruction, not per element.
"""
from __future__ import annotations

from typing import Any, Sequence

from llvmlite import ir

from ...assembler.ir import TileDecl, TileOp, Value
from ...isa.spec import Domain, Kind, Role
from ...isa.types import TileType
from .codegen import I64, KernelCodegen

_READ_ROLES = (Role.IN, Role.INOUT)
_WRITE_ROLES = (Role.OUT, Role.INOUT)


class CheckedCodegen(KernelCodegen):
    """``KernelCodegen`` plus an initialisation watermark per local tile."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        params = {p.name for p in self.kernel.params}
        self.written: dict[str, ir.Value] = {}     # local tile -> how many leading rows are written
        for name in self.kernel.tiles():
            if name not in params:
                slot = self.written[name] = self.alloca(I64, f"init.{name}")
                self._alloca_builder.store(self.i64(0), slot)

    def _tiledecl(self, s: TileDecl, targets: Sequence[Value]) -> None:
        super()._tiledecl(s, targets)              # the valid-region check comes first
        slot = self.written.get(s.value.name)
        if slot is not None and not s.keep:        # set_validshape keeps what was written
            self.b.store(self.i64(0), slot)

    def _tracked(self, op: TileOp) -> None:
        """Check the tiles ``op`` reads, then record what it writes (before the rule's own
        checks, in the reference's order)."""
        for o, v in self._tiles(op, _READ_ROLES):
            self._check(op, v)
        for o, v in self._tiles(op, _WRITE_ROLES):
            self._mark(op, v)

    def _tiles(self, op: TileOp, roles: tuple[Role, ...]) -> list[tuple[str, Value]]:
        out = []
        for o in op.instr.operands:
            a = op.args.get(o.name)
            if (o.kind is Kind.TILE and o.role in roles and isinstance(a, Value)
                    and isinstance(a.type, TileType) and a.name in self.written):
                out.append((o.name, a))
        return out

    def _check(self, op: TileOp, v: Value) -> None:
        b = self.b
        t = self.tile(v)
        if v.name in self.windows:
            root, _ = self.windows[v.name]
            if root not in self.written:          # a parameter's window: always written
                return
            r0 = b.load(self.window_slots[v.name][0], typ=I64)
            rows = b.sub(b.load(self.written[root], typ=I64), r0)
            rows = b.select(b.icmp_signed("<", rows, self.i64(0)), self.i64(0), rows)
        else:
            rows = b.load(self.written[v.name], typ=I64)
        bad = b.and_(b.icmp_signed("<", rows, t.vrows), b.icmp_signed(">", t.vcols, self.i64(0)))
        self.fault(bad, "RUNTIME_UNINIT_READ",
                   f"{op.instr.mnemonic} reads %{v.name}, whose valid region was never (fully) written",
                   expected="every element of the valid region written before", actual="element ({0}, 0) never written",
                   details=[rows])

    def _mark(self, op: TileOp, v: Value) -> None:
        if v.name in self.windows:
            self._mark_window(op, v)
            return
        b = self.b
        t = self.tile(v)
        slot = self.written[v.name]
        domain = op.instr.domain
        if domain is Domain.STATIC_DST:
            b.store(self.i64(t.rows), slot)
            return
        upto = self.i64(1) if domain is Domain.ROW0 else t.vrows
        now = b.load(slot, typ=I64)
        b.store(b.select(b.icmp_signed("<", now, upto), upto, now), slot)

    def _mark_window(self, op: TileOp, v: Value) -> None:
        """A write through a subset child, recorded in its root's watermark (module docstring)."""
        root, _ = self.windows[v.name]
        if root not in self.written:
            return
        b = self.b
        t, top = self.tile(v), self.tiles[root]
        whole = self.tile(Value(root, top.type))
        domain = op.instr.domain
        rows, cols = {Domain.STATIC_DST: (self.i64(t.rows), self.i64(t.cols)),
                      Domain.ROW0: (self.i64(1), t.vcols)}.get(domain, (t.vrows, t.vcols))
        rows = b.select(b.icmp_signed("<", t.vrows, rows), t.vrows, rows) if domain is Domain.ROW0 else rows
        r0, c0 = (b.load(slot, typ=I64) for slot in self.window_slots[v.name])
        slot = self.written[root]
        now = b.load(slot, typ=I64)
        empty = b.or_(b.icmp_signed("<=", rows, self.i64(0)), b.icmp_signed("<=", cols, self.i64(0)))
        rows_whole = b.and_(b.icmp_signed("==", c0, self.i64(0)), b.icmp_signed(">=", cols, whole.vcols))
        exact = b.and_(rows_whole, b.icmp_signed("<=", r0, now))
        upto = b.add(r0, rows)
        grown = b.select(b.icmp_signed("<", now, upto), upto, now)
        top_mark = self.i64((1 << 63) - 1)
        b.store(b.select(empty, now, b.select(exact, grown, top_mark)), slot)
