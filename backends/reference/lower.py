"""Kernels -> Python closures over a register file.

Every value name of a kernel gets a slot; each statement becomes one closure
``step(regs, ctx)`` that reads and writes slots, so running a program costs one Python call
per statement plus the instruction's numpy work. Tile instructions call the ``isa/``
semantics directly: this backend has no semantics of its own.
"""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ...assembler import scalar_ops as S
from ...assembler.ir import (Const, For, If, Kernel, Lit, MemRef, PipeLit, ScalarOp, Stmt, Subset, TileDecl,
                             TileOp, Value, View, ViewQuery, Yield)
from ...isa.diagnostics import Location, PTOError, RuntimeFault
from ...isa.dtypes import DType
from ...isa.spec import Family, Kind, Role
from ...isa.types import GlobalLayout, ScalarType, TileType
from ...isa.values import GlobalRef
from . import scalars as X
from ..comm_embedded import accessed
from . import views as V
from .subset import make_subset

Step = Callable[[list, "Context"], None]


@dataclass
class Context:
    """Per-run state the statements share."""

    strict: bool
    block_idx: int = 0
    block_num: int = 1
    counts: dict[str, int] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)     # control registers (TSETFMATRIX ...)
    trace: list[dict[str, Any]] | None = None
    t0: int = 0
    rank: int = 0
    rank_num: int = 1
    world: Any = None        # the comm world (isa/world.py); None: the one-rank SoloWorld


class Slots(dict):
    """Value name -> register index, allocated on first sight."""

    def __missing__(self, name: str) -> int:
        self[name] = i = len(self)
        return i


def _located(e: PTOError, loc: Location | None, kernel: str, mnemonic: str) -> PTOError:
    if e.location.line is not None or loc is None and e.location.kernel is not None:
        return e
    where = loc or Location(kernel=kernel)
    if where.kernel is None:
        where = Location(where.file, where.line, where.col, kernel, where.index, where.source_line)
    return type(e)(e.code, f"{mnemonic}: {e.message}", location=where, expected=e.expected,
                   actual=e.actual, notes=e.notes)


@dataclass(frozen=True)
class EventToken:
    """The value of an event an instruction records (TPUSH / TPOP's RecordEvent): the program runs
    in order, so a wait on it has nothing to wait for; it names its producer for traces."""

    producer: str
    loc: Location | None


class KernelLowering:
    def __init__(self, kernel: Kernel, semantics: Mapping[str, Callable[..., Any]] | None = None) -> None:
        self.k = kernel
        self.semantics = semantics or {}
        self.slots = Slots()
        for p in kernel.params:
            self.slots[p.name]
        self.tiles: dict[int, TileType] = {self.slots[n]: t for n, t in kernel.tiles().items()
                                           if n not in {p.name for p in kernel.params}}
        self.body = self.block(kernel.body, ())

    # ------------------------------------------------------------------ helpers
    def read(self, v: Value | Lit | int) -> Callable[[list], Any]:
        if isinstance(v, Value):
            i = self.slots[v.name]
            return lambda regs: regs[i]
        value = v.value if isinstance(v, Lit) else v
        return lambda regs: value

    def block(self, body: tuple[Stmt, ...], targets: tuple[int, ...]) -> list[Step]:
        return [self.stmt(s, targets) for s in body]

    def stmt(self, s: Stmt, targets: tuple[int, ...]) -> Step:
        return getattr(self, "_" + type(s).__name__.lower())(s, targets)

    # ------------------------------------------------------------------ statements
    def _const(self, s: Const, targets: tuple[int, ...]) -> Step:
        i, value = self.slots[s.result.name], X.convert(s.value, s.result.type)  # type: ignore[arg-type]

        def step(regs: list, ctx: Context) -> None:
            regs[i] = value
        return step

    def _tiledecl(self, s: TileDecl, targets: tuple[int, ...]) -> Step:
        i = self.slots[s.value.name]
        t: TileType = s.value.type  # type: ignore[assignment]
        rows = self.read(s.valid_rows) if s.valid_rows is not None else (lambda regs: t.valid_rows)
        cols = self.read(s.valid_cols) if s.valid_cols is not None else (lambda regs: t.valid_cols)
        loc, name, keep = s.loc, s.value.name, s.keep

        def step(regs: list, ctx: Context) -> None:
            r, c = rows(regs), cols(regs)
            r, c = t.rows if r is None else r, t.cols if c is None else c
            if not (0 <= r <= t.rows and 0 <= c <= t.cols):
                raise RuntimeFault("RUNTIME_VALID_REGION", f"valid region of %{name} exceeds the tile",
                                   location=loc, expected=f"<= {t.rows}x{t.cols}", actual=f"{r}x{c}")
            if keep:                      # pto.set_validshape: the same contents, a new region
                regs[i].valid = (r, c)
            else:
                regs[i].reset((r, c))
        return step

    def _view(self, s: View, targets: tuple[int, ...]) -> Step:
        """A tensor view: a numpy view of its source's memory (``views.py``)."""
        out, src, loc, t = self.slots[s.result.name], self.slots[s.source.name], s.loc, s.result.type
        offs, sizes, strides = ([self.read(b) for b in items] for items in (s.offsets, s.sizes, s.strides))
        make = {"make_tensor_view": lambda regs: V.make_tensor_view(regs[src], [f(regs) for f in sizes],
                                                                    [f(regs) for f in strides], t, loc),
                "partition_view": lambda regs: V.partition_view(regs[src], [f(regs) for f in offs],
                                                                [f(regs) for f in sizes], t, loc),
                "tensor_view_addr": lambda regs: V.tensor_view_addr(regs[src], t, loc)}[s.op]

        def step(regs: list, ctx: Context) -> None:
            regs[out] = make(regs)
        return step

    def _subset(self, s: Subset, targets: tuple[int, ...]) -> Step:
        """A tile over a window of its parent's storage (``subset.py``)."""
        out, src, loc, name = self.slots[s.result.name], self.slots[s.source.name], s.loc, s.result.name
        i, j, t = self.read(s.offsets[0]), self.read(s.offsets[1]), s.result.type

        def step(regs: list, ctx: Context) -> None:
            regs[out] = make_subset(regs[src], t, (i(regs), j(regs)), loc, name)  # type: ignore[arg-type]
        return step

    def _viewquery(self, s: ViewQuery, targets: tuple[int, ...]) -> Step:
        out, src, dim, loc, op = self.slots[s.result.name], self.slots[s.source.name], self.read(s.dim), s.loc, s.op

        def step(regs: list, ctx: Context) -> None:
            regs[out] = V.query(op, regs[src], dim(regs), loc)
        return step

    def _scalarop(self, s: ScalarOp, targets: tuple[int, ...]) -> Step:
        spec = S.SCALAR_OPS[s.op]
        out = self.slots[s.result.name]
        ins = [self.slots[v.name] for v in s.operands]
        rt: ScalarType = s.result.type  # type: ignore[assignment]
        if spec.cls == "block":
            attr = {"get_block_idx": "block_idx", "get_block_num": "block_num", "get_rank": "rank",
                    "get_rank_num": "rank_num"}.get(s.op)

            def block(regs: list, ctx: Context) -> None:
                regs[out] = getattr(ctx, attr) if attr else (0 if s.op == "get_subblock_idx" else 1)
            return block
        if spec.cls == "extended":
            hi_slot, (a, b) = self.slots[s.second.name], ins  # type: ignore[union-attr]
            both = X.extended(s.op, s.operands[0].type, s.second.type)  # type: ignore[arg-type, union-attr]

            def extended(regs: list, ctx: Context) -> None:
                regs[out], regs[hi_slot] = both(regs[a], regs[b])
            return extended
        if spec.cls == "select":
            c, a, b = ins

            def select(regs: list, ctx: Context) -> None:
                regs[out] = regs[a] if regs[c] else regs[b]
            return select
        ot: ScalarType = s.operands[0].type  # type: ignore[assignment]
        fn: Callable[..., Any] = {
            "int_binary": lambda: X.int_binary(s.op, rt),
            "float_binary": lambda: X.float_binary(s.op, rt),
            "float_unary": lambda: (lambda v: X.convert(-v, rt)),
            "cmpi": lambda: X.cmpi(s.predicate or "", ot),
            "cmpf": lambda: X.cmpf(s.predicate or ""),
            "cast": lambda: X.cast(s.op, ot, rt),
        }[spec.cls]()
        if len(ins) == 1:
            (a,) = ins

            def unary(regs: list, ctx: Context) -> None:
                regs[out] = fn(regs[a])
            return unary
        a, b = ins

        def binary(regs: list, ctx: Context) -> None:
            regs[out] = fn(regs[a], regs[b])
        return binary

    def _yield(self, s: Yield, targets: tuple[int, ...]) -> Step:
        srcs = [self.read(v) for v in s.values]
        pairs = list(zip(targets, srcs))

        def step(regs: list, ctx: Context) -> None:
            values = [f(regs) for _, f in pairs]
            for (t, _), v in zip(pairs, values):
                regs[t] = v
        return step

    def _for(self, s: For, targets: tuple[int, ...]) -> Step:
        lb, ub, st = self.read(s.lb), self.read(s.ub), self.read(s.step)
        iv = self.slots[s.iv.name]
        carried = tuple(self.slots[a.name] for a in s.iter_args)
        inits = [self.read(v) for v in s.inits]
        results = [self.slots[r.name] for r in s.results]
        body = self.block(s.body, carried)
        loc = s.loc

        def step(regs: list, ctx: Context) -> None:
            lo, hi, by = lb(regs), ub(regs), st(regs)
            if by <= 0:
                raise RuntimeFault("RUNTIME_LOOP_STEP", "loop step must be positive", location=loc,
                                   expected="step > 0", actual=by)
            values = [f(regs) for f in inits]
            for k, v in zip(carried, values):
                regs[k] = v
            for i in range(lo, hi, by):
                regs[iv] = i
                for f in body:
                    f(regs, ctx)
            for r, k in zip(results, carried):
                regs[r] = regs[k]
        return step

    def _if(self, s: If, targets: tuple[int, ...]) -> Step:
        cond = self.slots[s.cond.name]
        results = tuple(self.slots[r.name] for r in s.results)
        then, other = self.block(s.then_body, results), self.block(s.else_body, results)

        def step(regs: list, ctx: Context) -> None:
            for f in then if regs[cond] else other:
                f(regs, ctx)
        return step

    def _tileop(self, s: TileOp, targets: tuple[int, ...]) -> Step:
        instr = s.instr
        semantics = self.semantics.get(instr.mnemonic, instr.semantics)
        fixed: dict[str, Any] = instr.with_defaults(s.attrs)
        direct: list[tuple[str, int]] = []
        memrefs: list[tuple[str, int, list[Callable[[list], Any]], GlobalLayout, DType | None]] = []
        reads: list[tuple[int, str]] = []
        writes: list[int] = []
        events: list[int] = []      # out event tokens: recorded once the instruction has run
        returned: list[int] = []    # out scalars
        for o in instr.operands:
            a = s.args.get(o.name)
            if a is None:
                continue
            if isinstance(a, Value) and o.kind is Kind.EVENT and o.role is Role.OUT:
                events.append(self.slots[a.name])
            elif isinstance(a, Value) and o.kind is Kind.SCALAR and o.role is Role.OUT:
                returned.append(self.slots[a.name])      # TTEST's i1: the semantics' return value
            elif isinstance(a, Value):
                direct.append((o.name, self.slots[a.name]))
                if o.kind is Kind.TILE:
                    if o.role is not Role.OUT:
                        reads.append((self.slots[a.name], a.name))
                    if o.role is not Role.IN:
                        writes.append(self.slots[a.name])
            elif isinstance(a, MemRef):
                memrefs.append((o.name, self.slots[a.base.name], [self.read(i) for i in a.indices],
                                 a.base.type.layout, getattr(a.base.type, "dtype", None)))
            elif isinstance(a, PipeLit):
                fixed[o.name] = a.pipe
            else:
                fixed[o.name] = a.value
        takes_state = "state" in inspect.signature(semantics).parameters
        takes_world = "world" in inspect.signature(semantics).parameters
        globals_seen = tuple((o.name, o.role, o.window) for o in instr.operands
                             if o.kind is Kind.GLOBAL and isinstance(s.args.get(o.name), MemRef))
        comm = instr.family is Family.COMM
        domain, mnemonic, loc, kname = instr.domain, instr.mnemonic, s.loc, self.k.name
        pipe = instr.pipe_for(s.types()).value

        def step(regs: list, ctx: Context) -> None:
            kw = dict(fixed)
            for name, i in direct:
                kw[name] = regs[i]
            for name, base, idx, layout, element in memrefs:
                kw[name] = GlobalRef(regs[base], tuple(f(regs) for f in idx), layout, element)
            if takes_state:
                kw["state"] = ctx.state
            if takes_world:
                kw["world"] = ctx.world
            elif ctx.world is not None and globals_seen and not comm:
                try:
                    for name, role, window in globals_seen:
                        view = accessed(kw, name, window)
                        if view is not None:
                            ctx.world.access(view, role is not Role.IN, f"{mnemonic} operand '{name}'")
                except PTOError as e:
                    raise _located(e, loc, kname, mnemonic) from None
            if ctx.strict:
                for i, name in reads:
                    t = regs[i]
                    if t.written is not None:
                        at = t.unwritten()
                        if at is not None:
                            raise RuntimeFault("RUNTIME_UNINIT_READ",
                                               f"{mnemonic} reads %{name}, whose valid region was never "
                                               f"(fully) written", location=loc or Location(kernel=kname),
                                               expected="every element of the valid region written before",
                                               actual=f"element {at} never written")
            start = time.perf_counter_ns() if ctx.trace is not None else 0
            try:
                got = semantics(**kw)
            except PTOError as e:
                raise _located(e, loc, kname, mnemonic) from None
            except Exception as e:   # noqa: BLE001 - a semantics bug: reported, never a traceback
                raise RuntimeFault("RUNTIME_INTERNAL", f"{mnemonic} failed inside the reference semantics: "
                                   f"{type(e).__name__}: {e}", location=loc or Location(kernel=kname)) from None
            for i in events:
                regs[i] = EventToken(mnemonic, loc)
            for i in returned:
                regs[i] = got
            if ctx.strict:
                for i in writes:
                    regs[i].mark_written(domain)
            ctx.counts[mnemonic] = ctx.counts.get(mnemonic, 0) + 1
            if ctx.trace is not None:
                end = time.perf_counter_ns()
                ctx.trace.append({"name": mnemonic, "pipe": pipe, "block": ctx.block_idx,
                                  "ts_ns": start - ctx.t0, "dur_ns": end - start,
                                  "line": loc.line if loc else None})
        return step
