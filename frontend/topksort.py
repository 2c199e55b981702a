"""The plan of a topk kernel built on the ISA's sort: TSORT32 blocks, single-list TMRGSORT
passes, a multi-list merge of the last runs, and a running merge over row chunks.

A row of ``cols`` values is cut into chunks of ``chunk`` positions (one chunk when the whole row
fits the vector buffer). Each chunk is padded with the lowest value (TFILLPAD pad=min) to
``runs`` runs of ``run`` records: TSORT32 sorts 32-element blocks, each single-list TMRGSORT
pass merges groups of four runs (32 -> 128 -> 512 ... records), and the last 2..4 runs are merged
by one multi-list TMRGSORT into the chunk's best ``k`` records. The chunks' results are merged
into a running best (the earlier chunk as the first list). Ties go to the lower position at
every step: TSORT32 orders equal values by their index payload, TMRGSORT to the earlier list
(the earlier run or chunk), and a padding record ties only with real -inf or integer-minimum
values at lower positions, so it is never among the first ``k <= cols`` (decision 'Frontend topk
lowering'). This module only sizes the plan; frontend/lower_sort.py writes the kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..isa import registry
from ..isa.dtypes import I32, U16, U32, DType
from ..isa.families.complex import MERGE_REPEATS, RECORD_BYTES, SORT_BLOCK

#: the largest number of runs one multi-list TMRGSORT merges
MAX_LISTS = 4
#: columns of the u16 tile receiving TMRGSORT's executed counts (32-byte rows; valid 1x4)
EXECUTED_COLS = 16


def sortable(dtype: DType, profile: str) -> bool:
    """Whether ``profile`` sorts and merges ``dtype`` records (TSORT32 and TMRGSORT's dtype rules)."""
    srt = registry.get("TSORT32").dtype_rule(profile)
    mrg = registry.get("TMRGSORT").dtype_rule(profile)
    return (srt is not None and srt.allows((dtype, dtype, U32))
            and mrg is not None and mrg.allows((dtype, dtype)))


@dataclass(frozen=True)
class SortPlan:
    """How one row is sorted: its chunks, each chunk's passes and runs."""

    cols: int        # the row length
    k: int           # records kept
    dtype: DType
    chunk: int       # positions sorted at once
    passes: int      # single-list merge passes per chunk
    runs: int        # runs left after the passes (1..4)

    @property
    def per(self) -> int:
        """Elements of the value dtype per 8-byte record."""
        return RECORD_BYTES // self.dtype.itemsize

    @property
    def run(self) -> int:
        """Records per run after the passes."""
        return SORT_BLOCK * 4 ** self.passes

    @property
    def padded(self) -> int:
        """Positions of a chunk after padding."""
        return self.runs * self.run

    @property
    def head(self) -> int:
        """Records of each run the final merge reads (the best k of a run are its first k)."""
        return min(self.k, self.run)

    @property
    def chunks(self) -> int:
        return -(-self.cols // self.chunk)

    @property
    def pads(self) -> bool:
        """Whether some chunk holds fewer than ``padded`` positions (TFILLPAD needed)."""
        return self.padded != self.chunk or self.cols % self.chunk != 0

    def block_lens(self) -> list[int]:
        """The blockLen operand (elements) of each single-list pass."""
        return [self.per * SORT_BLOCK * 4 ** p for p in range(self.passes)]

    def tiles(self) -> list[tuple[str, int, DType]]:
        """(name, columns, dtype) of every one-row vector tile the kernel declares."""
        d, per, cp, k = self.dtype, self.per, self.padded, self.k
        out = [("x", cp, d)] + ([("xp", cp, d)] if self.pads else []) + [("ix", cp, U32), ("ra", per * cp, d)]
        out += [("rb", per * cp, d)] if self.passes else []
        out += [(f"run{m}", per * self.head, d) for m in range(self.runs)] if self.runs > 1 else []
        out += [("top", per * k, d)]
        if self.chunks > 1:
            out += [("best", per * k, d), ("merged", per * k, d)]
        if self.runs > 1 or self.chunks > 1:
            out += [("executed", EXECUTED_COLS, U16)]
        return out + [("values", k, d), ("bits", 2 * k, I32), ("index", k, I32)]

    def nbytes(self, alignment: int) -> int:
        """Bytes of the kernel's tiles with rows rounded up to ``alignment`` bytes (0: none)."""
        total = 0
        for _, cols, d in self.tiles():
            step = max(1, alignment // d.itemsize) if alignment else 1
            total += -(-cols // step) * step * d.itemsize
        return total


def _shape(chunk: int) -> tuple[int, int]:
    """(passes, runs) that cover ``chunk`` positions with at most MAX_LISTS runs."""
    passes = 0
    while -(-chunk // (SORT_BLOCK * 4 ** passes)) > MAX_LISTS:
        passes += 1
    return passes, -(-chunk // (SORT_BLOCK * 4 ** passes))


def _candidates(cols: int, k: int) -> list[int]:
    """Chunk lengths to try, longest first: the whole row, then run-aligned lengths >= k."""
    out = {cols}
    for passes in range(12):
        for runs in range(1, MAX_LISTS + 1):
            c = runs * SORT_BLOCK * 4 ** passes
            if k <= c < cols:
                out.add(c)
    return sorted(out, reverse=True)


def plan(cols: int, k: int, dtype: DType, capacity: int, alignment: int) -> SortPlan | None:
    """The longest-chunk plan whose tiles fit ``capacity`` bytes, or None."""
    for chunk in _candidates(cols, k):
        passes, runs = _shape(chunk)
        p = SortPlan(cols, k, dtype, chunk, passes, runs)
        first_groups = p.padded // (4 * SORT_BLOCK) if passes else 0
        if first_groups <= MERGE_REPEATS and p.nbytes(alignment) <= capacity:
            return p
    return None


__all__ = ["SortPlan", "plan", "sortable"]
