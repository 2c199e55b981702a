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

A valid region changes only at a declaration, which resets the tile, and every domain is a
prefix of rows of it (all columns of the valid region) or the whole tile, so the written set
is always the first ``k`` rows: one i64 per tile (a stack slot, a register after mem2reg)
tracks it exactly. A read faults when ``k`` < valid rows (and the region is not empty),
naming element ``(k, 0)``, the first unwritten element in row-major order as the reference
does. Each check is a compare and a branch per executed instruction, not per element.

A tile with ``pto.subset`` children (the root owning their storage) is written in rectangles
that one number cannot hold (a child covering columns 4..11 of each row), so such a root keeps
what the reference keeps: one byte per element (a workspace buffer), set over the rectangle
an instruction writes through the root or a child (the child's window at its offsets), and
scanned over the valid region of the tile a read names; the first unwritten element in
row-major order, relative to that tile, is reported as the reference reports it. These checks
cost a pass over the elements, in checked mode only.
"""
from __future__ import annotations

from typing import Any, Sequence

from llvmlite import ir

from ...assembler.ir import Kernel, Subset, TileDecl, TileOp, Value
from ...isa.spec import Domain, Kind, Role
from ...isa.types import TileType
from .codegen import I1, I8, I64, KernelCodegen

_READ_ROLES = (Role.IN, Role.INOUT)
_WRITE_ROLES = (Role.OUT, Role.INOUT)


class CheckedCodegen(KernelCodegen):
    """``KernelCodegen`` plus an initialisation watermark per local tile (a byte map for the
    roots of subsets)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        params = {p.name for p in self.kernel.params}
        self._types = self.kernel.tiles()
        self.written: dict[str, ir.Value] = {}     # local tile -> how many leading rows are written
        for name in self._types:
            if name not in params:
                slot = self.written[name] = self.alloca(I64, f"init.{name}")
                self._alloca_builder.store(self.i64(0), slot)
        # roots of subsets: a byte per element instead (module docstring), cleared at entry
        self.roots = subset_roots(self.kernel)
        self.maps: dict[str, ir.Value] = {}
        for root in sorted(set(self.roots.values())):
            t = self._types[root]
            if root not in params and isinstance(t, TileType):
                self.maps[root] = self.scratch(t.rows * t.cols)
                self._clear(root)

    def _tiledecl(self, s: TileDecl, targets: Sequence[Value]) -> None:
        super()._tiledecl(s, targets)              # the valid-region check comes first
        slot = self.written.get(s.value.name)
        if slot is not None and not s.keep:        # set_validshape keeps what was written
            self.b.store(self.i64(0), slot)
            if s.value.name in self.maps:
                self._clear(s.value.name)

    def _clear(self, root: str) -> None:
        t = self._types[root]
        self.intrinsic("llvm.memset.p0.i64", ir.VoidType(),
                       [self.maps[root], ir.Constant(I8, 0), self.i64(t.rows * t.cols), ir.Constant(I1, 0)])

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
        root = self.roots.get(v.name, v.name)
        if root in self.maps:
            self._check_map(op, v, root)
            return
        if v.name in self.windows:                # a parameter's window: always written
            return
        b = self.b
        t = self.tile(v)
        rows = b.load(self.written[v.name], typ=I64)
        bad = b.and_(b.icmp_signed("<", rows, t.vrows), b.icmp_signed(">", t.vcols, self.i64(0)))
        self.fault(bad, "RUNTIME_UNINIT_READ",
                   f"{op.instr.mnemonic} reads %{v.name}, whose valid region was never (fully) written",
                   expected="every element of the valid region written before", actual="element ({0}, 0) never written",
                   details=[rows])

    def _mark(self, op: TileOp, v: Value) -> None:
        root = self.roots.get(v.name, v.name)
        if root in self.maps:
            self._mark_map(op, v, root)
            return
        if v.name in self.windows:                # a parameter's window: always written
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

    # ------------------------------------------------------------------ roots of subsets
    def _origin(self, v: Value, root: str) -> tuple[ir.Value, ir.Value, int]:
        """Where ``v`` starts in its root's byte map (row, column) and the map's row length."""
        cols = self._types[root].cols
        if v.name == root:
            return self.i64(0), self.i64(0), cols
        r0, c0 = (self.b.load(slot, typ=I64) for slot in self.window_slots[v.name])
        return r0, c0, cols

    def _mark_map(self, op: TileOp, v: Value, root: str) -> None:
        """Set the bytes of what ``op`` writes of ``v`` (the reference's ``mark_written``: the
        whole static tile, its first row or its valid region) in the root's map."""
        b = self.b
        t = self.tile(v)
        rows, cols = {Domain.STATIC_DST: (self.i64(t.rows), self.i64(t.cols)),
                      Domain.ROW0: (self.i64(1), t.vcols)}.get(op.instr.domain, (t.vrows, t.vcols))
        r0, c0, width = self._origin(v, root)
        with self.loop(0, rows, name="mark.r") as i:
            at = b.add(b.mul(b.add(r0, i), self.i64(width)), c0)
            ptr = b.gep(self.maps[root], [at], inbounds=True, source_etype=I8)
            self.intrinsic("llvm.memset.p0.i64", ir.VoidType(), [ptr, ir.Constant(I8, 1), cols, ir.Constant(I1, 0)])

    def _check_map(self, op: TileOp, v: Value, root: str) -> None:
        """RUNTIME_UNINIT_READ at the first byte of ``v``'s valid region (row-major, relative
        to ``v``) that the root's map has clear."""
        b = self.b
        t = self.tile(v)
        r0, c0, width = self._origin(v, root)
        fi, fj = self.alloca(I64, "uninit.i"), self.alloca(I64, "uninit.j")
        b.store(self.i64(-1), fi)
        b.store(self.i64(0), fj)
        with self.loop(0, t.vrows, name="scan.r") as i:
            row = b.add(b.mul(b.add(r0, i), self.i64(width)), c0)
            with self.loop(0, t.vcols, name="scan.c") as j:
                byte = b.load(b.gep(self.maps[root], [b.add(row, j)], inbounds=True, source_etype=I8), typ=I8)
                found = b.load(fi, typ=I64)
                hit = b.and_(b.icmp_signed("==", byte, ir.Constant(I8, 0)), b.icmp_signed("<", found, self.i64(0)))
                b.store(b.select(hit, i, found), fi)
                b.store(b.select(hit, j, b.load(fj, typ=I64)), fj)
        first_i, first_j = b.load(fi, typ=I64), b.load(fj, typ=I64)
        self.fault(b.icmp_signed(">=", first_i, self.i64(0)), "RUNTIME_UNINIT_READ",
                   f"{op.instr.mnemonic} reads %{v.name}, whose valid region was never (fully) written",
                   expected="every element of the valid region written before",
                   actual="element ({0}, {1}) never written", details=[first_i, first_j])


def subset_roots(kernel: Kernel) -> dict[str, str]:
    """Each ``pto.subset`` result and each tile with subsets, mapped to the tile owning the
    storage (a subset of a subset names the root)."""
    roots: dict[str, str] = {}
    for s in kernel.walk():
        if isinstance(s, Subset):
            root = roots.get(s.source.name, s.source.name)
            roots[s.source.name] = roots.get(s.source.name, root)
            roots[s.result.name] = root
    return roots
