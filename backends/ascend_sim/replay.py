"""Re-timing a launch's recorded blocks, once per distinct replay.

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

from typing import Any

from ...isa.machines import Machine
from .engine import Engine, Op


class Timed:
    """What a launch reads of a replayed block (``Engine``'s fields of the same names): where it
    started, its busy cycles per pipe, its transfers and its last cycle."""

    __slots__ = ("start", "busy", "transfers", "end")

    def __init__(self, start: float, busy: list[float], transfers: list[tuple[float, float, int, int]],
                 end: float) -> None:
        self.start, self.busy, self.transfers, self.end = start, busy, transfers, end

    def cycles(self) -> float:
        return self.end


def _shape(ops: list[Op]) -> tuple[Any, ...]:
    """What of an op stream its timing depends on (the stretches and the start aside)."""
    return tuple((op.kind, op.pipe, op.cycles, op.flag, bool(op.hbm)) for op in ops)


class Replayer:
    """``replay(block, start, core, stretch)`` for ``multicore.schedule``: each distinct replay
    timed once. ``first``: the blocks' first runs, their ops recorded."""

    def __init__(self, machine: Machine, kernel: str, first: list[Engine]) -> None:
        self.machine, self.kernel, self.first = machine, kernel, first
        shapes: dict[tuple[Any, ...], int] = {}
        self.shape = [shapes.setdefault(_shape(eng.ops or []), len(shapes)) for eng in first]
        self.moving = [[op for op in eng.ops or () if op.hbm] for eng in first]   # each block's transfers
        self.done: dict[tuple[Any, ...], tuple[int, Engine]] = {}

    def __call__(self, b: int, start: float, core: str, stretch: dict[int, float]) -> Timed:
        moving = self.moving[b]
        key = (self.shape[b], start, tuple(stretch.get(id(op), 1.0) for op in moving))
        got = self.done.get(key)
        if got is None:
            eng = Engine(self.machine, self.kernel, None, None, b, start=start, core=core, stretch=stretch)
            for op in self.first[b].ops or ():
                eng.issue(op)
            eng.finish()
            got = self.done[key] = (b, eng)
        src, eng = got
        if src == b:
            transfers = eng.transfers
        else:                           # the same times, on this block's own ops
            own = dict(zip(map(id, self.moving[src]), moving))
            transfers = [(t0, t1, own[k].hbm, id(own[k])) for t0, t1, _, k in eng.transfers]
        return Timed(start, eng.busy, transfers, eng.cycles())
