"""Races between pipes, found with vector clocks over byte regions (a FastTrack-style shadow).

Each access is a byte region of one memory space (an on-chip buffer, or global memory by
address) read or written by one instruction on one pipe. Two accesses from different pipes to
overlapping bytes, at least one a write, race unless the earlier one happens before the later:
its pipe's clock at the access is at most what the later pipe has learnt of that pipe through
flags and barriers. Per region and pipe only the last read and the last write are kept (a pipe is
in order, so the last stands for every earlier one); regions are found through 8 KB pages.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ...isa.diagnostics import Location, OrderError
from ...isa.machines import PIPES

PAGE_SHIFT = 13
WIDE_PAGES = 64          # a region over this many pages is checked against everything (one list)


@dataclass(frozen=True)
class Access:
    """Bytes ``lo + i * pitch + [0, width)`` for the rows in ``[lo, hi)`` of ``space`` (pitch 0:
    one contiguous range ``[lo, hi)``); ``what`` names the operand for messages."""

    space: str
    lo: int
    hi: int
    write: bool
    what: str
    pitch: int = 0
    width: int = 0


def overlap(a: Access, b: Access) -> bool:
    """Whether two regions of one space share a byte (exact for contiguous ranges and for
    row windows of one pitch; otherwise their bounding ranges decide, conservatively)."""
    if not (a.lo < b.hi and b.lo < a.hi):
        return False
    if not a.pitch and not b.pitch:
        return True
    if a.pitch and b.pitch and a.pitch != b.pitch:
        return True
    pitch = a.pitch or b.pitch
    wa = a.width if a.pitch else a.hi - a.lo
    wb = b.width if b.pitch else b.hi - b.lo
    if wa >= pitch or wb >= pitch:
        return True
    d = (b.lo - a.lo) % pitch          # b's column offset from a's, on a circle of `pitch` bytes
    return d < wa or pitch - d < wb


@dataclass(frozen=True)
class Hazard:
    """One reported hazard: its code, the message and the instruction it is reported at."""

    code: str
    message: str
    location: Location | None
    notes: tuple[str, ...] = ()


class _Entry:
    __slots__ = ("access", "reads", "writes")

    def __init__(self, access: Access) -> None:
        self.access = access
        self.reads: list[tuple[int, Any, Access] | None] = [None] * len(PIPES)     # epoch, op, access
        self.writes: list[tuple[int, Any, Access] | None] = [None] * len(PIPES)


class Shadow:
    """Last accesses per region and pipe; ``mode`` "raise" raises the first race, "collect" keeps
    them in ``hazards``, "off" tracks nothing."""

    def __init__(self, kernel: str, mode: str, describe: Callable[[Access, int, int], str]) -> None:
        self.kernel, self.mode, self.describe = kernel, mode, describe
        self.spaces: dict[str, tuple[dict[tuple[int, int, int, int], _Entry], dict[int, list[_Entry]]]] = {}
        self.wide: dict[str, list[_Entry]] = {}
        self.hazards: list[Hazard] = []
        self._seen: set[tuple] = set()

    def access(self, p: int, vc: list[int], op: Any) -> None:
        """Check and record every access of ``op``, run on pipe ``p`` with clock ``vc``."""
        epoch = vc[p]
        for a in op.accesses:
            space = self.spaces.get(a.space)
            if space is None:
                space = self.spaces[a.space] = ({}, {})
            exact, pages = space
            wide = self.wide.setdefault(a.space, [])
            first, last = a.lo >> PAGE_SHIFT, (a.hi - 1) >> PAGE_SHIFT
            lists = [e for lst in pages.values() for e in lst] if last - first > WIDE_PAGES else \
                [e for page in range(first, last + 1) for e in pages.get(page, ())]
            seen: set[int] = set()
            for e in (*lists, *wide):
                if id(e) in seen or not overlap(a, e.access):
                    continue
                seen.add(id(e))
                for q in range(len(PIPES)):
                    if q == p:
                        continue
                    w = e.writes[q]
                    if w is not None and w[0] > vc[q]:
                        self._race(w[1], q, w[2], op, p, a)
                    if a.write:
                        r = e.reads[q]
                        if r is not None and r[0] > vc[q]:
                            self._race(r[1], q, r[2], op, p, a)
            key = (a.lo, a.hi, a.pitch, a.width)
            e = exact.get(key)
            if e is None:
                e = exact[key] = _Entry(a)
                if last - first > WIDE_PAGES:
                    wide.append(e)
                else:
                    for page in range(first, last + 1):
                        pages.setdefault(page, []).append(e)
            (e.writes if a.write else e.reads)[p] = (epoch, op, a)

    def _race(self, first: Any, q: int, fa: Access, second: Any, p: int, sa: Access) -> None:
        key = (id(first.loc), first.name, id(second.loc), second.name, fa.space)
        if key in self._seen:
            return
        self._seen.add(key)
        lo, hi = max(fa.lo, sa.lo), min(fa.hi, sa.hi)
        region = self.describe(sa, lo, hi)

        def side(op: Any, pipe: int, a: Access) -> str:
            line = f"line {op.loc.line}" if op.loc is not None and op.loc.line is not None else "an unknown line"
            return f"{op.name} ({PIPES[pipe].value}, {line}) {'writes' if a.write else 'reads'} {a.what}"
        msg = (f"{side(first, q, fa)} and {side(second, p, sa)}: both touch {region} and no flag or barrier "
               "orders them")
        notes = (f"first: {side(first, q, fa)}", f"second: {side(second, p, sa)}",
                 "add a set_flag on the first pipe after it and a wait_flag on the second pipe before it")
        where = second.loc or Location(kernel=self.kernel)
        if self.mode == "raise":
            raise OrderError("ORDER_RACE", msg, location=where,
                             expected=f"{PIPES[q].value} -> {PIPES[p].value} ordered by a flag",
                             actual="unordered", notes=list(notes))
        self.hazards.append(Hazard("ORDER_RACE", msg, where, notes))
