"""Races between pipes, found with vector clocks over byte regions (a FastTrack-style shadow).

Each access is a byte region of one memory space (an on-chip buffer, or global memory by
address) read or written by one instruction on one pipe. Two accesses from different pipes to
overlapping bytes, at least one a write, race unless the earlier one happens before the later:
its pipe's clock at the access is at most what the later pipe has learnt of that pipe through
flags and barriers. Per region and pipe only the last read and the last write are kept (a pipe is
in order, so the last stands for every earlier one). A region is linked to the regions it
overlaps once, when it is first seen (found through 256 KB buckets), so a repeated access costs a
dictionary look-up and a pass over its overlapping regions' recorded pipes.
"""
from __future__ import annotations

from bisect import bisect_right, insort
from dataclasses import dataclass
from typing import Any, Callable

from ...isa.diagnostics import Location, OrderError
from ...isa.machines import PIPES

NPIPES = len(PIPES)
PAGE_SHIFT = 13         # 8 KB pages: the order races found at one access are reported in
WIDE_PAGES = 64          # a region over this many pages is checked against everything (one list)
BUCKET_PAGES = 5         # 32 pages (256 KB) per bucket that new regions are looked up in


class Access:
    """Bytes ``lo + i * pitch + [0, width)`` for the rows in ``[lo, hi)`` of ``space`` (pitch 0:
    one contiguous range ``[lo, hi)``); ``what`` names the operand for messages (given as a
    string, or as (tensor name, indices) spelt only when a message needs it). A plain slotted
    class, not a dataclass: one is made per operand per executed instruction."""

    __slots__ = ("space", "lo", "hi", "write", "_what", "pitch", "width")

    def __init__(self, space: str, lo: int, hi: int, write: bool, what: str | tuple[str, tuple[Any, ...]],
                 pitch: int = 0, width: int = 0) -> None:
        self.space, self.lo, self.hi, self.write, self._what = space, lo, hi, write, what
        self.pitch, self.width = pitch, width

    @property
    def what(self) -> str:
        w = self._what
        if isinstance(w, tuple):
            name, idx = w
            return f"%{name}[{', '.join(map(str, idx))}]"
        return w

    def __repr__(self) -> str:
        return (f"Access({self.space!r}, {self.lo}, {self.hi}, write={self.write}, what={self.what!r}, "
                f"pitch={self.pitch}, width={self.width})")


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
    """One distinct region of a space: per pipe that touched it, its last write and last read;
    and ``near``, every region of the space that overlaps it (itself included, as None), found
    once when the region is first seen and kept in the order a scan of the pages would meet them
    (so races are reported in the same order as by a scan).

    ``recs`` holds one list per pipe, ascending by pipe: [pipe, write epoch, write op, write
    access, read epoch, read op, read access] (epoch 0: none yet; the clocks count from 1). A
    repeated access updates its pipe's list in place, so it allocates nothing. No field points
    back at the space: a run's shadow has no reference cycles and is freed as soon as it ends,
    without waiting for the cyclic garbage collector."""

    __slots__ = ("access", "recs", "near", "seq", "first", "last", "wide", "rank")

    def __init__(self, access: Access, seq: int, first: int, last: int, wide: bool) -> None:
        self.access, self.seq, self.first, self.last, self.wide = access, seq, first, last, wide
        self.recs: list[list[Any]] = []
        self.near: list[_Entry | None] = []
        self.rank: tuple[int, int] | None = None     # see ``_Space.first_use``, worked out when first needed

    def rec(self, p: int) -> list[Any]:
        """Pipe ``p``'s list, made (in pipe order) on its first access."""
        recs = self.recs
        for i, r in enumerate(recs):
            q = r[0]
            if q == p:
                return r
            if q > p:
                r = [p, 0, None, None, 0, None, None]
                recs.insert(i, r)
                return r
        r = [p, 0, None, None, 0, None, None]
        recs.append(r)
        return r


class _Space:
    """The regions of one memory space: by exact extent, by 256 KB bucket (to find the regions a
    new one overlaps), and the wide ones. The 8 KB pages only order the reports: a new region is
    met in the order a scan of the 8 KB pages would meet it (see ``key``)."""

    __slots__ = ("exact", "buckets", "wide", "entries", "count")

    def __init__(self) -> None:
        self.exact: dict[tuple[int, int, int, int], _Entry] = {}
        self.buckets: dict[int, list[_Entry]] = {}
        self.wide: list[_Entry] = []
        self.entries: list[_Entry] = []
        self.count = 0            # sequence numbers handed out: regions in the order first seen

    def reserve(self) -> int:
        """The next sequence number (a region logged now and recorded later takes it then)."""
        self.count += 1
        return self.count - 1

    def key(self, e: _Entry) -> Callable[[_Entry], tuple[int, Any, int]]:
        """Where a page scan for ``e``'s region meets another region: pages in order (a wide
        region scans every page in first-use order), each page's entries in creation order, the
        wide entries last."""
        def order(n: _Entry | None) -> tuple[int, Any, int]:
            if n is None:                   # ``e`` itself in its own list
                n = e
            if n.wide:
                return (1, 0, n.seq)
            if e.wide:
                return (0, self.first_use(n), n.seq)
            return (0, max(n.first, e.first), n.seq)
        return order

    def first_use(self, e: _Entry) -> tuple[int, int]:
        """The first-used of ``e``'s 8 KB pages, as (the first region on it, the page): pages
        are first used by regions in creation order, each region's in ascending order."""
        if e.rank is None:
            buckets = self.buckets
            e.rank = min((min(n.seq for n in buckets[page >> BUCKET_PAGES] if n.first <= page <= n.last), page)
                         for page in range(e.first, e.last + 1))
        return e.rank

    def add(self, a: Access, key: tuple[int, int, int, int], seq: int | None = None) -> _Entry:
        """A new region (first seen as number ``seq``, by default now): link it with every
        region it overlaps."""
        lo, hi = a.lo, a.hi
        first, last = lo >> PAGE_SHIFT, (hi - 1) >> PAGE_SHIFT
        wide = last - first > WIDE_PAGES
        e = _Entry(a, self.reserve() if seq is None else seq, first, last, wide)
        if wide:
            found = [n for n in self.entries if overlap(a, n.access)]
            self.wide.append(e)
            return self._link(e, a, key, found)
        found = []
        b0, b1 = first >> BUCKET_PAGES, last >> BUCKET_PAGES
        buckets = self.buckets
        for b in range(b0, b1 + 1):
            lst = buckets.get(b)
            if lst is None:
                buckets[b] = [e]
                continue
            for n in lst:
                na = n.access
                if na.lo < hi and lo < na.hi and (b == b0 or n.first >> BUCKET_PAGES == b) and overlap(a, na):
                    found.append(n)          # (a region in several buckets is taken in its first shared one)
            lst.append(e)
        for n in self.wide:
            if overlap(a, n.access):
                found.append(n)
        return self._link(e, a, key, found)

    def _link(self, e: _Entry, a: Access, key: tuple[int, int, int, int], found: list[_Entry]) -> _Entry:
        """Record ``e`` in the near lists of the regions it overlaps (``found``) and in its own."""
        for n in found:
            insort(n.near, e, key=self.key(n))
        if a.lo < a.hi and (not a.pitch or a.width > 0):      # overlap(a, a): the region has a byte
            found.append(None)                              # (itself: None, not a reference cycle)
        e.near = sorted(found, key=self.key(e)) if len(found) > 1 else found
        self.exact[key] = e
        self.entries.append(e)
        return e


_ALONE = [None]       # the near list of a region that overlaps no other


class _Site:
    """What a race report reads of a logged access's instruction (``Shadow._race``): its name
    and location, standing for its ``Op`` in the shadow once the range is recorded."""

    __slots__ = ("name", "loc")

    def __init__(self, name: str, loc: Location | None) -> None:
        self.name, self.loc = name, loc


class _Quiet:
    """A range of global memory (caller arrays, those that overlap merged) whose accesses cannot
    race so far: every one by a single pipe, or every one a read. They are only logged, each
    with the sequence number its region would have taken, and recorded in the shadow when an
    access that could race arrives (``Shadow._wake``). A kernel's inputs are mostly only read
    and its outputs written by one pipe: their windows, each new, then cost a log entry. An entry
    keeps the instruction's name and location, not its ``Op``: the ops are then freed as they
    finish, and a run that keeps thousands of them alive runs measurably slower (its memory no
    longer reused while still in the processor's caches).

    ``silent``: no access the kernel can make to the range can race with another (the kernel's
    instructions touch its arrays from one pipe only, or only read them: ``Shadow``'s ``uses``),
    so none is logged: nothing could ever wake the range."""

    __slots__ = ("lo", "hi", "log", "readers", "writers", "uses")

    def __init__(self, lo: int, hi: int, uses: frozenset[tuple[int, bool]] | None) -> None:
        self.lo, self.hi, self.uses = lo, hi, uses
        self.log: list[tuple[int, int, str, Any, Access, int]] | None = []   # pipe, epoch, name, loc, access, seq
        self.readers = self.writers = 0                                   # bit masks of pipes

    @property
    def silent(self) -> bool:
        uses = self.uses
        return uses is not None and (len({p for p, _ in uses}) <= 1 or not any(w for _, w in uses))


def _ranges(arrays: list[tuple[int, int]], uses: list[frozenset[tuple[int, bool]]] | None = None) -> list[_Quiet]:
    """The arrays' byte ranges, overlapping ones merged (their uses too), in address order."""
    out: list[_Quiet] = []
    for (lo, hi), use in sorted(zip(arrays, uses if uses is not None else [None] * len(arrays)),
                                key=lambda x: x[0]):
        if out and lo < out[-1].hi:
            g = out[-1]
            g.hi = max(g.hi, hi)
            g.uses = g.uses | use if g.uses is not None and use is not None else None
        else:
            out.append(_Quiet(lo, hi, use))
    return out


class Shadow:
    """Last accesses per region and pipe; ``mode`` "raise" raises the first race, "collect" keeps
    them in ``hazards``, "off" tracks nothing. ``arrays``: the byte ranges of the caller's
    global arrays, whose accesses are only logged while they cannot race (``_Quiet``).
    ``uses``: per array, every (pipe, writes) the kernel's instructions may touch it with, given
    only when every global access lies inside its own array (then a range whose uses cannot
    race is silent)."""

    def __init__(self, kernel: str, mode: str, describe: Callable[[Access, int, int], str],
                 arrays: list[tuple[int, int]] = (),       # type: ignore[assignment]
                 uses: list[frozenset[tuple[int, bool]]] | None = None) -> None:
        self.kernel, self.mode, self.describe = kernel, mode, describe
        self.spaces: dict[str, _Space] = {}
        self.hazards: list[Hazard] = []
        self._seen: set[tuple] = set()
        self._arrays, self._uses = arrays, uses
        self._quiet: list[_Quiet] = []       # made on the first global access (``_ranges``)
        self._starts: list[int] | None = None if arrays else []
        self._silent: list[bool] = []
        #: an on-chip region's entry by the ``Access`` object itself (identity: a tile's region is
        #: one object for the run, ``Placement.tile``), so a repeated tile access is one look-up
        self._known: dict[Access, _Entry] = {}

    def access(self, p: int, vc: list[int], op: Any) -> None:
        """Check and record every access of ``op``, run on pipe ``p`` with clock ``vc``: every
        other pipe's last write (and, for a write, last read) of an overlapping region must be
        at most what ``vc`` knows of that pipe."""
        epoch = vc[p]
        known = self._known
        for a in op.accesses:
            e = known.get(a)
            if e is None:
                if a.space == "GM":
                    if self._starts is None:
                        self._made()
                    if self._starts and self._logged(p, epoch, op, a):
                        continue
                    e = self._entry(a)
                else:
                    e = known[a] = self._entry(a)
            write = a.write
            mine = None
            near = e.near
            if near == _ALONE:                   # overlapping only itself (most tiles): its own pipes
                for r in e.recs:
                    q = r[0]
                    if q == p:
                        mine = r
                        continue
                    known_q = vc[q]
                    if r[1] > known_q:
                        self._race(r[2], q, r[3], op, p, a)
                    if write and r[4] > known_q:
                        self._race(r[5], q, r[6], op, p, a)
            else:
                for n in near:
                    if n is None:
                        n = e
                    for r in n.recs:
                        q = r[0]
                        if q == p:
                            if n is e:
                                mine = r
                            continue
                        known_q = vc[q]
                        if r[1] > known_q:
                            self._race(r[2], q, r[3], op, p, a)
                        if write and r[4] > known_q:
                            self._race(r[5], q, r[6], op, p, a)
            if mine is None:
                mine = e.rec(p)
            if write:
                mine[1], mine[2], mine[3] = epoch, op, a
            else:
                mine[4], mine[5], mine[6] = epoch, op, a

    def _entry(self, a: Access) -> _Entry:
        """The entry of ``a``'s region in its space, linked to its overlapping regions when new."""
        space = self.spaces.get(a.space)
        if space is None:
            space = self.spaces[a.space] = _Space()
        key = (a.lo, a.hi, a.pitch, a.width)
        e = space.exact.get(key)
        return e if e is not None else space.add(a, key)

    def _made(self) -> None:
        """The caller arrays' ranges, made when first needed (most blocks of a launch never
        check an access: ``replay._Run.alike``)."""
        self._quiet = _ranges(self._arrays, self._uses)
        self._starts = [g.lo for g in self._quiet]
        self._silent = [g.silent for g in self._quiet]

    def _logged(self, p: int, epoch: int, op: Any, a: Access) -> bool:
        """Log the global access ``a`` if its array range stays unable to race with it; False
        when it must be checked (its range recorded first, or every range when it crosses one)."""
        i = bisect_right(self._starts, a.lo) - 1
        g = self._quiet[i] if i >= 0 else None
        if g is None or a.hi > g.hi:
            for g in self._quiet:
                self._wake(g)
            return False
        if self._silent[i]:
            return True
        if g.log is None:
            return False
        bit = 1 << p
        if ((g.readers | g.writers) if a.write else g.writers) & ~bit:      # another pipe, and a write
            self._wake(g)
            return False
        space = self.spaces.get("GM")
        if space is None:
            space = self.spaces["GM"] = _Space()
        g.log.append((p, epoch, op.name, op.loc, a, space.reserve()))
        if a.write:
            g.writers |= bit
        else:
            g.readers |= bit
        return True

    def _wake(self, g: _Quiet) -> None:
        """Record a range's logged accesses in order, as if each had been checked when made (none
        could race: one pipe, or only reads); its later accesses are checked."""
        log, g.log = g.log, None
        if not log:
            return
        space = self.spaces["GM"]
        sites: dict[tuple[str, int], _Site] = {}
        for p, epoch, name, loc, a, seq in log:
            op = sites.get((name, id(loc)))
            if op is None:
                op = sites[name, id(loc)] = _Site(name, loc)
            key = (a.lo, a.hi, a.pitch, a.width)
            e = space.exact.get(key)
            if e is None:
                e = space.add(a, key, seq)
            r = e.rec(p)
            if a.write:
                r[1], r[2], r[3] = epoch, op, a
            else:
                r[4], r[5], r[6] = epoch, op, a

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
