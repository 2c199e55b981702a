"""The earlier accesses a new task's bytes may conflict with, found by address.

Spans are absolute address ranges, so one table serves every buffer. Accesses are kept in
groups over disjoint address ranges (a span joins, and merges, every group its range meets):
a lookup visits only the groups its own range meets, so tasks on different buffers never
compare against each other, and two Python objects over the same memory land in one group.
"""
from __future__ import annotations

import bisect
from typing import Iterator

from .access import Span


class AddressTable:
    """(span, task) entries grouped by disjoint address ranges, sorted by start."""

    def __init__(self) -> None:
        self._lo: list[int] = []                              # group starts, sorted
        self._groups: list[tuple[int, list[tuple[Span, int]]]] = []   # per group: (end, entries)

    def _meeting(self, span: Span) -> range:
        """Indexes of the groups whose range meets ``span``'s (groups are disjoint and sorted,
        so they are consecutive)."""
        last = bisect.bisect_left(self._lo, span.hi) - 1
        first = last
        while first >= 0 and self._groups[first][0] > span.lo:
            first -= 1
        return range(first + 1, last + 1)

    def overlapping(self, span: Span) -> Iterator[tuple[Span, int]]:
        """Entries sharing a byte with ``span``."""
        if span.lo == span.hi:
            return
        for i in self._meeting(span):
            for entry in self._groups[i][1]:
                if span.overlaps(entry[0]):
                    yield entry

    def add(self, span: Span, task: int) -> None:
        if span.lo == span.hi:                                # no bytes: conflicts with nothing
            return
        hit = self._meeting(span)
        lo, hi, entries = span.lo, span.hi, [(span, task)]
        if hit:
            lo = min(lo, self._lo[hit.start])
            hi = max(hi, self._groups[hit.stop - 1][0])
            entries = [e for i in hit for e in self._groups[i][1]] + entries
        self._lo[hit.start:hit.stop] = [lo]
        self._groups[hit.start:hit.stop] = [(hi, entries)]

    def drop_covered(self, span: Span) -> None:
        """Forget the entries ``span`` covers: a write over them is ordered after them, and
        every later access that meets them meets it too."""
        if span.lo == span.hi or not span.dense:
            return
        for i in self._meeting(span):
            end, entries = self._groups[i]
            self._groups[i] = (end, [e for e in entries if not span.covers(e[0])])
