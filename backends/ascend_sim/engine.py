"""The timing core: one AI core's pipes as in-order queues joined by counting-semaphore flags.

The scalar unit issues every instruction in program order, one per ``scalar_issue_cycles``,
into its pipe's queue; each pipe runs its queue in order, one instruction after another, and the
pipes run concurrently. ``set_flag`` joins the source pipe's queue and counts the flag up once
everything before it there has finished; ``wait_flag`` joins the destination pipe's queue and
holds it until the count is above zero, then counts it down. A barrier on ALL drains every pipe.

Times are computed as instructions are issued, not by a clock: an instruction starts at the
latest of its issue time, its pipe's previous finish and (for a wait) the set it consumes, so a
run costs O(1) per instruction. A pipe whose head waits on a flag nobody has set keeps its queue
until a set arrives; a scalar wait or a barrier that cannot complete, or queues still held at the
end, is a deadlock. Every executed instruction advances its pipe's vector clock; flags and
barriers carry clocks across pipes, which ``hazards.Shadow`` uses to find unordered accesses.
"""
from __future__ import annotations

from collections import deque
from typing import Any

from ...isa.diagnostics import Location, OrderError
from ...isa.machines import PIPES, Machine
from ...isa.types import Pipe
from .hazards import Access, Shadow

NPIPES = len(PIPES)
PIPE_INDEX: dict[Pipe, int] = {p: i for i, p in enumerate(PIPES)}
S = PIPE_INDEX[Pipe.S]

WORK, SET, WAIT, BARRIER, BARRIER_ALL = range(5)


class Op:
    """One issued instruction: what it is, where it runs, how long it takes, what it touches."""

    __slots__ = ("kind", "pipe", "cycles", "name", "loc", "accesses", "flag", "issue", "hbm", "shared")

    def __init__(self, kind: int, pipe: int, cycles: float, name: str, loc: Location | None,
                 accesses: list[Access] | None = None, flag: tuple[int, int, int] | None = None,
                 hbm: int = 0, shared: bool = False) -> None:
        self.kind, self.pipe, self.cycles, self.name, self.loc = kind, pipe, cycles, name, loc
        self.accesses, self.flag, self.issue, self.hbm = accesses, flag, 0.0, hbm
        self.shared = shared      # issued again and again (a flag with a constant id): queued as a copy

    def copy(self) -> "Op":
        """A private copy, to wait in a queue with its own issue time."""
        op = Op(self.kind, self.pipe, self.cycles, self.name, self.loc, self.accesses, self.flag, self.hbm)
        op.issue = self.issue
        return op


def join(vc: list[int], clock: tuple[int, ...], active: list[int]) -> None:
    """``vc`` becomes the element-wise maximum of itself and ``clock`` (a plain loop: four times
    faster than ``map(max, ...)``), over the ``active`` pipes only: a pipe that has run no work
    yet is 0 in every clock."""
    for i in active:
        c = clock[i]
        if c > vc[i]:
            vc[i] = c


def spell_flag(flag: tuple[int, int, int]) -> str:
    src, dst, ev = flag
    return f"({PIPES[src].value} -> {PIPES[dst].value}, id {ev})"


def where(loc: Location | None) -> str:
    return f"line {loc.line}" if loc is not None and loc.line is not None else "an unknown line"


class Engine:
    """One core's run: pipes, flags, clocks, busy cycles, events and hazards.

    ``start``: the cycle the block starts at on its core (a later wave starts late);
    ``record``: keep every issued op in ``ops`` (a multi-core launch replays them with
    HBM-shared transfer times); ``stretch``: per issued op index, a factor on its cycles;
    ``transfers``: (start, end, HBM bytes) of each op whose bytes cross HBM."""

    def __init__(self, machine: Machine, kernel: str, shadow: Shadow | None, trace: list[dict[str, Any]] | None,
                 block: int = 0, *, start: float = 0.0, core: str | None = None, record: bool = False,
                 stretch: dict[int, float] | None = None) -> None:
        self.m, self.kernel, self.shadow, self.trace, self.block = machine, kernel, shadow, trace, block
        self.core = core
        self.issue_cycles = machine.scalar_issue_cycles
        self.ns_per_cycle = 1000.0 / machine.clock_mhz
        self.start = start
        self.t_s = start                                       # the scalar unit's clock
        self.free = [start] * NPIPES                           # when each pipe is next free
        self.ops: list[Op] | None = [] if record else None
        self.stretch = stretch or {}
        self.transfers: list[tuple[float, float, int, int]] = []   # start, end, bytes, op index
        self.busy = [0.0] * NPIPES
        self.vc = [[0] * NPIPES for _ in range(NPIPES)]        # vector clock per pipe
        self.active: list[int] = []      # the pipes that have run work: the clocks' only non-zero entries
        self.clocks = shadow is not None and shadow.mode != "off"   # only race checks read the clocks
        self.queues: list[deque[Op]] = [deque() for _ in range(NPIPES)]
        self.flags: dict[tuple[int, int, int], deque[tuple[float, tuple[int, ...]]]] = {}
        self.ready: list[int] = []

    # ------------------------------------------------------------------ issue
    def issue(self, op: Op) -> None:
        """The scalar unit hands ``op`` to its pipe (program order)."""
        if self.ops is not None:
            self.ops.append(op)
        t = op.issue = self.t_s
        self.t_s = t + self.issue_cycles
        self.busy[S] += self.issue_cycles
        if op.kind == BARRIER_ALL:
            self._barrier_all(op)
            return
        p = op.pipe
        if p == S:                       # the scalar unit runs it itself, in order
            if not self._exec(S, op):
                self._drain()
                if not self._exec(S, op):
                    self._deadlock(op)
            self.t_s = max(self.t_s, self.free[S])
            return
        q = self.queues[p]
        if q or not self._exec(p, op):
            q.append(op.copy() if op.shared else op)
        if self.ready:
            self._drain()

    def work(self, op: Op) -> None:
        """``issue`` of any op (lower.py's steps call it directly): the usual case of a WORK op
        (its pipe's queue empty, not S, not traced) run here in one call, ``_exec`` inlined; the
        others go to ``issue``."""
        p = op.pipe
        if op.kind != WORK or p == S or self.queues[p] or self.trace is not None:
            self.issue(op)
            return
        if self.ops is not None:
            self.ops.append(op)
        t = self.t_s                     # (``op.issue`` is read only by a queued op or a trace)
        self.t_s = t + self.issue_cycles
        self.busy[S] += self.issue_cycles
        free = self.free
        start = free[p]
        if t > start:
            start = t
        cycles = op.cycles
        if op.hbm:
            index = id(op)
            cycles *= self.stretch.get(index, 1.0)
            self.transfers.append((start, start + cycles, op.hbm, index))
        free[p] = start + cycles
        self.busy[p] += cycles
        if self.clocks:
            vc = self.vc[p]
            vc[p] += 1
            if vc[p] == 1:               # its first work: its entry can be non-zero from now on
                self.active.append(p)
            if op.accesses:
                self.shadow.access(p, vc, op)     # type: ignore[union-attr]
        if self.ready:
            self._drain()

    def set_flag(self, op: Op) -> None:
        """``issue`` of a SET (lower.py's flag steps call it directly): the usual case, the
        source pipe idle-queued and not S, is run here in one call; the others go to ``issue``."""
        p = op.pipe
        if p == S or self.queues[p] or self.trace is not None:
            self.issue(op)
            return
        if self.ops is not None:
            self.ops.append(op)
        t = self.t_s                     # (``op.issue`` is read only by a queued op or a trace)
        self.t_s = t + self.issue_cycles
        self.busy[S] += self.issue_cycles
        free = self.free
        start = free[p]
        if t > start:
            start = free[p] = t
        tokens = self.flags.get(op.flag)
        if tokens is None:
            tokens = self.flags[op.flag] = deque()
        tokens.append((start, tuple(self.vc[p]) if self.clocks else ()))
        dst = op.flag[1]
        if self.queues[dst]:
            self.ready.append(dst)
        if self.ready:
            self._drain()

    def wait_flag(self, op: Op) -> None:
        """``issue`` of a WAIT, the usual case (a set to take, the pipe's queue empty, not S)
        run here in one call; the others go to ``issue``."""
        p = op.pipe
        tokens = self.flags.get(op.flag)
        if not tokens or p == S or self.queues[p] or self.trace is not None:
            self.issue(op)
            return
        if self.ops is not None:
            self.ops.append(op)
        t = self.t_s
        self.t_s = t + self.issue_cycles
        self.busy[S] += self.issue_cycles
        free = self.free
        start = free[p]
        if t > start:
            start = t
        t, clock = tokens.popleft()
        free[p] = t if t > start else start
        if self.clocks:                  # ``join``, inlined: the wait learns what the set's pipe knew
            vc = self.vc[p]
            for i in self.active:
                c = clock[i]
                if c > vc[i]:
                    vc[i] = c
        if self.ready:                   # left by a scalar-pipe set: drained as ``issue`` would
            self._drain()

    def _drain(self) -> None:
        ready = self.ready
        while ready:
            p = ready.pop()
            q = self.queues[p]
            while q and self._exec(p, q[0]):
                q.popleft()

    # ------------------------------------------------------------------ execute
    def _exec(self, p: int, op: Op) -> bool:
        """Run ``op`` at the head of pipe ``p``; False when it is a wait with no set to take."""
        kind = op.kind
        start = self.free[p]
        if op.issue > start:
            start = op.issue
        if kind == WORK:
            cycles = op.cycles
            if op.hbm:
                index = id(op)
                cycles *= self.stretch.get(index, 1.0)
                self.transfers.append((start, start + cycles, op.hbm, index))
            end = start + cycles
            self.free[p] = end
            self.busy[p] += cycles
            if self.clocks:
                vc = self.vc[p]
                vc[p] += 1
                if vc[p] == 1:           # its first work: its entry can be non-zero from now on
                    self.active.append(p)
                if op.accesses:
                    self.shadow.access(p, vc, op)     # type: ignore[union-attr]
            if self.trace is not None:
                self._event(op, p, start, end)
            return True
        if kind == SET:
            self.free[p] = start
            tokens = self.flags.get(op.flag)
            if tokens is None:
                tokens = self.flags[op.flag] = deque()
            tokens.append((start, tuple(self.vc[p]) if self.clocks else ()))
            if self.trace is not None:
                self.trace.append({"flow": "set", "name": op.name, "pipe": PIPES[p].value, "block": self.block,
                                   "core": self.core, "ts_ns": start * self.ns_per_cycle, "flag": spell_flag(op.flag)})
            dst = op.flag[1]
            if self.queues[dst]:
                self.ready.append(dst)
            return True
        if kind == WAIT:
            tokens = self.flags.get(op.flag)
            if not tokens:
                return False
            t, clock = tokens.popleft()
            at = t if t > start else start
            self.free[p] = at
            if self.clocks:
                join(self.vc[p], clock, self.active)
            if self.trace is not None:
                if at > start:
                    self._event(op, p, start, at)
                self.trace.append({"flow": "wait", "name": op.name, "pipe": PIPES[p].value, "block": self.block,
                                   "core": self.core, "ts_ns": at * self.ns_per_cycle, "from_ns": t * self.ns_per_cycle,
                                   "from_pipe": PIPES[op.flag[0]].value, "flag": spell_flag(op.flag)})
            return True
        self.free[p] = start              # BARRIER on one pipe: the pipe is in order already
        return True

    def _barrier_all(self, op: Op) -> None:
        """Every pipe finishes what it was given; everything after starts after all of it."""
        self._drain()
        if any(self.queues):
            self._deadlock(op)
        t = max(max(self.free), self.t_s)
        joined = [max(col) for col in zip(*self.vc)]
        for i in range(NPIPES):
            self.free[i] = t
            self.vc[i] = list(joined)
        self.t_s = t

    def _event(self, op: Op, p: int, start: float, end: float) -> None:
        ns = self.ns_per_cycle
        self.trace.append({"name": op.name, "pipe": PIPES[p].value, "block": self.block,   # type: ignore[union-attr]
                           "core": self.core, "ts_ns": start * ns, "dur_ns": (end - start) * ns,
                           "line": op.loc.line if op.loc else None, "start_cycle": start, "end_cycle": end})

    # ------------------------------------------------------------------ end
    def _deadlock(self, op: Op | None) -> None:
        waiting = []
        for p, q in enumerate(self.queues):
            if q:
                head = q[0]
                waiting.append(f"{PIPES[p].value} waits on flag {spell_flag(head.flag)} at {where(head.loc)}"
                               if head.kind == WAIT else f"{PIPES[p].value} holds {head.name} at {where(head.loc)}")
        if op is not None and op.kind == WAIT:
            waiting.append(f"S (the scalar unit) waits on flag {spell_flag(op.flag)} at {where(op.loc)}")
        elif op is not None:
            waiting.append(f"S (the scalar unit) waits at {op.name} ({where(op.loc)}) for every pipe to drain")
        heads = [q[0].loc for q in self.queues if q and q[0].loc is not None]
        at = op.loc if op is not None and op.loc is not None else (heads[0] if heads else Location(kernel=self.kernel))
        raise OrderError("ORDER_DEADLOCK", f"every unfinished pipe of @{self.kernel} waits: " + "; ".join(waiting),
                         location=at, expected="each wait_flag's set_flag reachable by a pipe that is not blocked",
                         actual=f"{len(waiting)} pipe(s) blocked", notes=waiting)

    def finish(self) -> list[str]:
        """Run what can still run; ORDER_DEADLOCK if a pipe stays blocked; the flags left set."""
        self._drain()
        if any(self.queues):
            self._deadlock(None)
        return [f"flag {spell_flag(k)} is still set {len(v)} time(s) when @{self.kernel} ends"
                for k, v in self.flags.items() if v]

    def cycles(self) -> float:
        return max(max(self.free), self.t_s)

    def hbm_bytes(self) -> int:
        """The bytes its transfers moved across HBM."""
        return sum(t[2] for t in self.transfers)
