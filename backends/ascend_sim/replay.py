"""Timing a launch's recorded blocks, once per distinct op stream (first pass) and once per
distinct replay (the HBM re-timing rounds).

First pass: each block of a launch records its ops while its values are computed and is timed
after, alone from cycle 0 (``FirstPass``). The times, the vector clocks at each access and the
flags left set depend only on the op stream (each op's kind, pipe, cycles, flag and whether it
crosses HBM): blocks with the same stream share one engine run; each block's race shadow then
checks its own accesses at the clocks that run logged, unless they are the run's moved by one
offset per memory space and the run found no race (``_Run.alike``).

A multi-core launch replays every block's recorded ops with HBM-stretched transfer times until
the placement settles (``multicore.schedule``). A replay's times depend only on the op stream
(each op's kind, pipe, cycles, flag and whether it crosses HBM), the cycle the block starts at
and the stretch factor of each of its transfers. The blocks of an SPMD kernel mostly share one
op stream, and the blocks of one wave start together and get the same stretches, so a launch of
96 blocks has a handful of distinct replays per round, not 96: each is timed once by an
``Engine`` and shared by the blocks it stands for, with the transfers renamed to each block's
own ops (they are the keys the HBM shares are computed by).
"""
from __future__ import annotations

from functools import partial
from operator import attrgetter
from typing import Any, Callable

import numpy as np

from ...isa.machines import Machine
from .engine import Engine, Op
from .hazards import Shadow


class Timed:
    """What a launch reads of a timed block (``Engine``'s fields of the same names): where it
    started, its busy cycles per pipe, its transfers, its last cycle and (first pass) its ops.
    The transfers may be given as a function making them, called when they are first read (a
    shared replay's, renamed to the block's own ops: most rounds never read them)."""

    __slots__ = ("start", "busy", "_transfers", "end", "ops", "moved")

    def __init__(self, start: float, busy: list[float],
                 transfers: list[tuple[float, float, int, int]] | Callable[[], list[tuple[float, float, int, int]]],
                 end: float, ops: list[Op] | None = None, moved: int | None = None) -> None:
        self.start, self.busy, self._transfers, self.end, self.ops = start, busy, transfers, end, ops
        self.moved = moved            # the HBM bytes of the transfers, when known without them

    @property
    def transfers(self) -> list[tuple[float, float, int, int]]:
        t = self._transfers
        if callable(t):
            t = self._transfers = t()
        return t

    def cycles(self) -> float:
        return self.end

    def hbm_bytes(self) -> int:
        return self.moved if self.moved is not None else sum(t[2] for t in self.transfers)


_TIMED_BY = attrgetter("kind", "pipe", "cycles", "flag", "hbm")


def _shape(ops: list[Op]) -> tuple[Any, ...]:
    """What of an op stream its timing depends on (the stretches and the start aside): each
    op's kind, pipe, cycles, flag and HBM bytes (whether it crosses HBM is what times it; the
    bytes make a finer key, and one made by a C-level ``attrgetter``)."""
    return tuple(map(_TIMED_BY, ops))


class _Logged:
    """A race shadow's stand-in for the engine: every access is checked by the block's shadow
    and logged with the clock it was checked at (for the blocks that share the run)."""

    def __init__(self, shadow: Shadow, log: list[tuple[Op, int, tuple[int, ...]]]) -> None:
        self.shadow, self.log, self.mode = shadow, log, shadow.mode

    def access(self, p: int, vc: list[int], op: Op) -> None:
        self.log.append((op, p, tuple(vc)))
        self.shadow.access(p, vc, op)


class _Run:
    """One distinct op stream's first-pass run: the engine, its ops, its accesses as (op
    position, pipe, clock), the op position of each transfer, the flags left set, whether its
    block's shadow found no race and the block that ran it."""

    __slots__ = ("eng", "ops", "log", "moved", "pending", "clean", "block", "_at")

    def __init__(self, eng: Engine, ops: list[Op], log: list[tuple[Op, int, tuple[int, ...]]],
                 pending: list[str], clean: bool, block: int = 0) -> None:
        where = {id(op): i for i, op in enumerate(ops)}
        self.eng, self.ops, self.pending, self.clean, self.block = eng, ops, pending, clean, block
        self.log = [(where[id(op)], p, vc) for op, p, vc in log]
        self.moved = [where[k] for _, _, _, k in eng.transfers]
        self._at: list[tuple[int, Any]] | None = None     # (op position, its accesses), for ``alike``

    def alike(self, ops: list[Op]) -> dict[str, int] | None:
        """The offset per memory space by which every access of ``ops`` is this run's (same
        extent, pitch, width, read or write), or None when they are not so. A shift common to a
        space keeps which regions are the same and which overlap, so with the same clocks the
        same pairs race: none, when this run found none. A tile's region shared by the launch's
        blocks (``Placement.regions``) is the same object: the on-chip spaces must not move (a
        block whose tiles all moved by one offset is checked itself, as is any other)."""
        at = self._at
        if at is None:
            mine = self.ops
            at = self._at = [(i, mine[i].accesses) for i, _, _ in self.log]
        shift: dict[str, int] = {}
        for i, had in at:
            got = ops[i].accesses
            if got is None or len(got) != len(had):     # type: ignore[arg-type]
                return None
            for a, h in zip(got, had):   # type: ignore[arg-type]
                if a is h:               # a tile's region, shared by the launch's blocks
                    continue
                d = a.lo - h.lo
                if (a.hi - h.hi != d or a.space != h.space or a.pitch != h.pitch or a.width != h.width
                        or a.write != h.write or shift.setdefault(a.space, d) != d):
                    return None
        for space, d in shift.items():
            if d and space != "GM":
                return None
        return shift


class FirstPass:
    """``time(block, ops, shadow)`` for each block of a launch in turn: its first timing, alone
    from cycle 0, shared with the earlier blocks of the same op stream. ``shape`` lists each
    timed block's stream (an index), for the ``Replayer``."""

    def __init__(self, machine: Machine, kernel: str) -> None:
        self.machine, self.kernel = machine, kernel
        self.runs: dict[tuple[Any, ...], tuple[int, _Run]] = {}
        self.shape: list[int] = []
        #: per timed block, (the block that ran its stream, its global accesses' offset from
        #: that block's) when its accesses are that run's moved (``_Run.alike``), else None
        self.like: list[tuple[int, int] | None] = []

    def time(self, b: int, ops: list[Op], shadow: Shadow) -> tuple[Engine | Timed, list[str]]:
        """Block ``b``'s timing (an ``Engine``, or a ``Timed`` on its own ops) and the flags it
        leaves set; its accesses are checked by ``shadow``. A deadlock is raised as the engine
        finds it."""
        key = _shape(ops)
        got = self.runs.get(key)
        if got is None:
            log: list[tuple[Op, int, tuple[int, ...]]] = []
            eng = Engine(self.machine, self.kernel, _Logged(shadow, log) if shadow.mode != "off" else shadow,  # type: ignore[arg-type]
                         None, b, record=True)
            for op in ops:
                eng.issue(op)
            pending = eng.finish()
            got = self.runs[key] = (len(self.runs), _Run(eng, ops, log, pending, not shadow.hazards, b))
            self.shape.append(got[0])
            self.like.append(None)
            return eng, got[1].pending
        self.shape.append(got[0])
        run = got[1]
        shifts = run.alike(ops) if run.clean else None
        if shifts is None:                    # check this block's own accesses at the run's clocks
            self.like.append(None)
            access = shadow.access
            for i, p, vc in run.log:
                access(p, vc, ops[i])     # type: ignore[arg-type]
        else:
            self.like.append((run.block, shifts.get("GM", 0)))
        eng = run.eng
        transfers = [(t0, t1, ops[i].hbm, id(ops[i])) for (t0, t1, _, _), i in zip(eng.transfers, run.moved)]
        return Timed(eng.start, eng.busy, transfers, eng.cycles(), ops), run.pending


class Replayer:
    """``replay(block, start, core, stretch)`` for ``multicore.schedule``: each distinct replay
    timed once. ``first``: the blocks' first runs, their ops recorded; ``shape``: each block's
    op stream as an index (``FirstPass.shape``; worked out here when not given)."""

    def __init__(self, machine: Machine, kernel: str, first: list[Engine | Timed],
                 shape: list[int] | None = None) -> None:
        self.machine, self.kernel, self.first = machine, kernel, first
        shapes: dict[tuple[Any, ...], int] = {}
        self.shape = shape if shape is not None else [shapes.setdefault(_shape(eng.ops or []), len(shapes))
                                                      for eng in first]
        self.moving = [[op for op in eng.ops or () if op.hbm] for eng in first]   # each block's transfers
        self.bytes = [sum(op.hbm for op in moving) for moving in self.moving]
        self.done: dict[tuple[Any, ...], tuple[int, Engine]] = {}
        self._fast: dict[tuple[Any, ...], tuple[int, Engine, tuple[np.ndarray, np.ndarray], float]] = {}

    def __call__(self, b: int, start: float, core: str, stretch: dict[int, float]) -> Timed:
        moving = self.moving[b]
        key = (self.shape[b], start, tuple(stretch.get(id(op), 1.0) for op in moving))
        src, eng = self._engine(b, key, start, core, stretch)
        return Timed(start, eng.busy, self._renamed(src, eng, b), eng.cycles())

    def round(self, starts: list[float], cores: list[str], factors: np.ndarray,
              offsets: list[int]) -> tuple[list[Timed], np.ndarray, np.ndarray]:
        """``multicore.Retimer.round``: a block whose (op stream, start, stretch factors) was
        timed before takes that timing, found by the factors' bytes; the rest run an engine."""
        timed: list[Timed] = []
        t0s: list[np.ndarray] = []
        t1s: list[np.ndarray] = []
        fast = self._fast
        for b, (start, core) in enumerate(zip(starts, cores)):
            f = factors[offsets[b]:offsets[b + 1]]
            key = (self.shape[b], start, f.tobytes())
            got = fast.get(key)
            if got is None:
                stretch = dict(zip(map(id, self._ran(b)), f.tolist()))
                src, eng = self._engine(b, (self.shape[b], start, tuple(stretch.get(id(op), 1.0)
                                                                          for op in self.moving[b])),
                                        start, core, stretch)
                times = (np.array([t[0] for t in eng.transfers], dtype=float),
                         np.array([t[1] for t in eng.transfers], dtype=float))
                got = fast[key] = (src, eng, times, eng.cycles())
            src, eng, (t0, t1), end = got
            timed.append(Timed(start, eng.busy, partial(self._renamed, src, eng, b), end, moved=self.bytes[b]))
            t0s.append(t0)
            t1s.append(t1)
        empty = np.ones(0)
        return timed, np.concatenate(t0s) if t0s else empty, np.concatenate(t1s) if t1s else empty

    def _engine(self, b: int, key: tuple[Any, ...], start: float, core: str,
                stretch: dict[int, float]) -> tuple[int, Engine]:
        """The replay of ``key`` (op stream, start, factors on the block's transfers in op
        order), timed by block ``b``'s ops if no block's was before."""
        got = self.done.get(key)
        if got is None:
            eng = Engine(self.machine, self.kernel, None, None, b, start=start, core=core, stretch=stretch)
            for op in self.first[b].ops or ():
                eng.issue(op)
            eng.finish()
            got = self.done[key] = (b, eng)
        return got

    def _ran(self, b: int) -> list[Op]:
        """Block ``b``'s transfers in the order its engine runs them (the same in every replay)."""
        own = {id(op): op for op in self.moving[b]}
        return [own[k] for _, _, _, k in self.first[b].transfers]

    def _renamed(self, src: int, eng: Engine, b: int) -> list[tuple[float, float, int, int]]:
        """``src``'s replay ``eng``'s transfers on block ``b``'s own ops."""
        if src == b:
            return eng.transfers
        own = dict(zip(map(id, self.moving[src]), self.moving[b]))
        return [(t0, t1, own[k].hbm, id(own[k])) for t0, t1, _, k in eng.transfers]


class EachBlock:
    """``multicore.Retimer`` for a traced launch: every block re-timed by its own engine
    (``replay(block, start, core, stretch)``), so each block's events are its own."""

    def __init__(self, replay: Callable[[int, float, str, dict[int, float]], Engine], first: list[Any]) -> None:
        self.replay = replay
        self.keys = [[k for _, _, _, k in eng.transfers] for eng in first]   # each block's, in run order

    def round(self, starts: list[float], cores: list[str], factors: np.ndarray,
              offsets: list[int]) -> tuple[list[Engine], np.ndarray, np.ndarray]:
        engines = [self.replay(b, start, core, dict(zip(self.keys[b], factors[offsets[b]:offsets[b + 1]].tolist())))
                   for b, (start, core) in enumerate(zip(starts, cores))]
        flat = [t for eng in engines for t in eng.transfers]
        return engines, np.array([t[0] for t in flat], dtype=float), np.array([t[1] for t in flat], dtype=float)
