"""Races between the blocks of one launch on global memory.

Cross-core flags are not modelled, so nothing orders an access of one block against an access of
another: two blocks touching a common global byte, at least one of them writing it, race
whatever their timing. (Each block's own pipes are checked by ``hazards.Shadow``; this module
only looks across blocks.) Blocks only reading the same bytes is fine.

Cheap by construction: each block's distinct global regions (per instruction, read or written)
are collected once from its recorded ops, and all blocks' regions are intersected once at the end
by a sweep over their start addresses (sorted), keeping the regions still open in two heaps by
end address, one for writes and one for reads; a region is compared only with the open regions
of other blocks that could pair with it (a read with writes, a write with both), and strided
windows are then checked exactly (``hazards.overlap``). One report per pair of instructions (the
first two blocks found, and how many block pairs race there in all).

Most launches give each block its own part of every tensor, and then there is nothing to find:
before collecting any region, each block's accesses are summed up per caller array as one
covering range (whether it writes there or only reads), and when no block's covering range
meets another's in an array that one of them writes, no pair of their regions can share a byte
and the sweep is skipped. A block whose accesses are an earlier block's moved by one offset
(``replay._Run.alike``) takes that block's ranges moved, without a pass over its ops.
"""
from __future__ import annotations

import heapq
from bisect import bisect_right
from typing import Any, Callable, Iterable

from ...isa.diagnostics import Location, OrderError
from ...isa.machines import PIPES
from .hazards import Access, Hazard, overlap

#: one block's access: (lo, hi, block, write, region, op)
_Item = tuple[int, int, int, bool, Access, Any]


#: a block's covering ranges: per caller array (its index), [lo, hi, writes]; None when an
#: access lies outside every array (the sweep then decides)
_Hull = dict[int, list[Any]] | None


class GlobalAccesses:
    """The distinct global-memory regions each block of a launch touched, for ``races``.
    ``arrays``: the caller arrays' byte ranges (``placement.spans``)."""

    def __init__(self, kernel: str, arrays: Iterable[tuple[int, int]] = ()) -> None:
        self.kernel = kernel
        self.items: list[_Item] = []
        self.describe: Callable[[Access, int, int], str] | None = None
        self.blocks: list[tuple[int, Iterable[Any] | None]] = []   # (block, its ops): itemised when needed
        self.hulls: list[_Hull] = []
        self._by_block: dict[int, _Hull] = {}
        self._ranges: list[list[int]] = []        # overlapping arrays merged, in address order
        for lo, hi in sorted(arrays):
            if self._ranges and lo < self._ranges[-1][1]:
                self._ranges[-1][1] = max(self._ranges[-1][1], hi)
            else:
                self._ranges.append([lo, hi])
        self._starts = [r[0] for r in self._ranges]

    def add_block(self, block: int, ops: Iterable[Any] | None, describe: Callable[[Access, int, int], str],
                  like: tuple[int, int] | None = None) -> None:
        """Record block ``block``'s executed ops (their global regions are collected only if
        ``races`` needs them); ``describe`` spells a byte range for messages; ``like``: (an
        earlier block, offset) when this block's accesses are that block's moved by the offset."""
        self.describe = describe
        self.blocks.append((block, ops))
        base = self._by_block.get(like[0], None) if like is not None else None
        hull = self._moved(base, like[1]) if base is not None else self._hull(ops)  # type: ignore[index]
        self._by_block[block] = hull
        self.hulls.append(hull)

    def _hull(self, ops: Iterable[Any] | None) -> _Hull:
        """The covering range of a block's global accesses in each caller array."""
        starts, ranges = self._starts, self._ranges
        hull: dict[int, list[Any]] = {}
        for op in ops or ():
            accesses = op.accesses
            if not accesses:
                continue
            for a in accesses:
                if a.space != "GM":
                    continue
                lo, hi = a.lo, a.hi
                k = bisect_right(starts, lo) - 1
                if k < 0 or hi > ranges[k][1]:
                    return None
                got = hull.get(k)
                if got is None:
                    hull[k] = [lo, hi, a.write]
                    continue
                if lo < got[0]:
                    got[0] = lo
                if hi > got[1]:
                    got[1] = hi
                if a.write:
                    got[2] = True
        return hull

    def _moved(self, base: dict[int, list[Any]], d: int) -> _Hull:
        """``base``'s covering ranges moved by ``d`` bytes (None when one leaves its array)."""
        starts, ranges = self._starts, self._ranges
        hull: dict[int, list[Any]] = {}
        for lo, hi, write in base.values():
            lo, hi = lo + d, hi + d
            k = bisect_right(starts, lo) - 1
            if k < 0 or hi > ranges[k][1]:
                return None
            hull[k] = [lo, hi, write]
        return hull

    def _apart(self) -> bool:
        """Whether no block's covering range meets another block's in an array where either
        writes (then no two regions of different blocks share a byte that one writes)."""
        per: dict[int, list[tuple[int, int, bool]]] = {}
        for hull in self.hulls:
            if hull is None:
                return False
            for k, (lo, hi, write) in hull.items():
                if lo < hi:
                    per.setdefault(k, []).append((lo, hi, write))
        for spans in per.values():
            spans.sort()
            end_any = end_write = None
            for lo, hi, write in spans:
                if end_write is not None and lo < end_write:
                    return False
                if write and end_any is not None and lo < end_any:
                    return False
                end_any = hi if end_any is None or hi > end_any else end_any
                if write:
                    end_write = hi if end_write is None or hi > end_write else end_write
        return True

    def _items(self) -> list[_Item]:
        """Each block's distinct global regions (per instruction, read or written), in block order."""
        items = self.items
        for block, ops in self.blocks:
            seen: set[tuple[int, int, int, int, bool, str, int]] = set()
            for op in ops or ():
                accesses = op.accesses
                if not accesses:
                    continue
                for a in accesses:
                    if a.space != "GM":
                        continue
                    key = (a.lo, a.hi, a.pitch, a.width, a.write, op.name, id(op.loc))
                    if key not in seen:
                        seen.add(key)
                        items.append((a.lo, a.hi, block, a.write, a, op))
        self.blocks = []
        return items

    def races(self, mode: str) -> list[Hazard]:
        """Every pair of instructions of different blocks touching a common global byte, one
        writing, in line order: the first raised as ``ORDER_RACE`` (mode "raise") or all returned."""
        if self._apart():
            return []
        self._items()
        found: dict[tuple[Any, ...], list[Any]] = {}      # pair of instructions -> [first, second, block pairs]
        live_w: list[tuple[int, int, _Item]] = []         # open regions by end address: writes
        live_r: list[tuple[int, int, _Item]] = []         # and reads
        for seq, it in enumerate(sorted(self.items, key=lambda it: (it[0], it[2], it[1]))):
            lo, _, block, write, region, _ = it
            for live in (live_w, live_r):
                while live and live[0][0] <= lo:
                    heapq.heappop(live)
            for live in ((live_w, live_r) if write else (live_w,)):
                for _, _, other in live:
                    if other[2] != block and overlap(other[4], region):
                        first, second = (other, it) if other[2] < block else (it, other)
                        key = tuple((op.name, id(op.loc), w) for _, _, _, w, _, op in (first, second))
                        got = found.get(key)
                        if got is None:
                            got = found[key] = [first, second, set()]
                        got[2].add((first[2], second[2]))
            heapq.heappush(live_w if write else live_r, (it[1], seq, it))
        pairs = sorted(found.values(), key=lambda f: (_line(f[0]), _line(f[1]), f[0][2], f[1][2], f[0][0]))
        if pairs and mode == "raise":
            raise self._error(pairs[0][0], pairs[0][1])
        return [self._hazard(first, second, len(blocks)) for first, second, blocks in pairs]

    def _text(self, first: _Item, second: _Item) -> tuple[str, str, str, str]:
        def side(it: _Item) -> str:
            op, a = it[5], it[4]
            line = f"line {op.loc.line}" if op.loc is not None and op.loc.line is not None else "an unknown line"
            return (f"{op.name} ({PIPES[op.pipe].value}, {line}) in block {it[2]} "
                    f"{'writes' if a.write else 'reads'} {a.what}")
        lo, hi = max(first[0], second[0]), min(first[1], second[1])
        describe = self.describe or (lambda a, lo, hi: f"global bytes [{lo:#x}, {hi:#x})")
        region = describe(second[4], lo, hi)
        if second[4].pitch:                     # a strided window: its bytes lie in rows inside that range
            region += f" (rows of {second[4].width} bytes, {second[4].pitch} apart)"
        msg = (f"{side(first)} and {side(second)}: both touch {region}, and nothing orders the blocks of "
               "one launch (cross-core flags are not modelled)")
        return msg, side(first), side(second), region

    def _error(self, first: _Item, second: _Item) -> OrderError:
        msg, a, b, region = self._text(first, second)
        return OrderError("ORDER_RACE", msg, location=second[5].loc or Location(kernel=self.kernel),
                          expected="blocks that share global bytes only read them",
                          actual=f"block {first[2]} and block {second[2]} both touch {region}, one writing",
                          notes=[f"first: {a}", f"second: {b}", _ADVICE])

    def _hazard(self, first: _Item, second: _Item, pairs: int) -> Hazard:
        msg, a, b, _ = self._text(first, second)
        return Hazard("ORDER_RACE", msg, second[5].loc or Location(kernel=self.kernel),
                      (f"first: {a}", f"second: {b}", f"{pairs} pair(s) of blocks race on these two instructions",
                       _ADVICE))


def _line(it: _Item) -> int:
    loc = it[5].loc
    return loc.line if loc is not None and loc.line is not None else 0


_ADVICE = "give each block its own part of the tensor (by pto.get_block_idx), or split the launch"
