"""``pto.subset`` on the reference backend (decision "pto.subset"): the child tile's data is a
numpy view of its parent's, so a write through either is seen by the other, and its record of
written elements is the same window of the parent's record, so the strict checks see one
buffer. Elements outside the child's valid region are the parent's: the child never poisons
them (the parent's own valid region decides what is unspecified there)."""
from __future__ import annotations

import numpy as np

from ...isa.diagnostics import Location, RuntimeFault
from ...isa.spec import Domain
from ...isa.types import TileType
from ...isa.values import Tile
from .tiles import RefTile


class SubTile(RefTile):
    """A window of ``parent`` at (r0, c0); ``written`` and ``clean`` read through to it."""

    __slots__ = ("parent", "window")

    def __init__(self, type: TileType, parent: RefTile, r0: int, c0: int, valid: tuple[int, int]) -> None:
        rows, cols = type.shape
        self.parent, self.window = parent, (slice(r0, r0 + rows), slice(c0, c0 + cols))
        Tile.__init__(self, type, parent.data[self.window], valid)
        self.poison = parent.poison

    @property   # type: ignore[override]
    def written(self) -> np.ndarray | None:
        w = self.parent.written
        return None if w is None else w[self.window]

    @written.setter
    def written(self, value: np.ndarray | None) -> None:
        w = self.parent.written
        if w is not None:
            w[self.window] = True if value is None else value

    @property   # type: ignore[override]
    def clean(self) -> None:
        return None      # the parent's record changes under the child: nothing cached here

    @clean.setter
    def clean(self, value: object) -> None:
        pass

    def reset(self, valid: tuple[int, int]) -> None:
        self.valid = valid        # a child is never a fresh buffer

    def mark_written(self, domain: Domain) -> None:
        r, c = self.valid
        if domain is Domain.STATIC_DST or (r, c) == self.type.shape and domain is not Domain.ROW0:
            self.written = None
        elif domain is Domain.ROW0:
            self._mark(1, c)
        else:
            self._mark(r, c)

    def _mark(self, r: int, c: int) -> None:
        w = self.written
        if w is not None:
            w[:r, :c] = True


def make_subset(parent: RefTile, type: TileType, offsets: tuple[int, int], loc: Location | None,
                name: str) -> SubTile:
    """The child at ``offsets``: RUNTIME_OOB unless the window lies in the parent's static
    shape; its valid region is the part of the parent's current one that the window covers."""
    rows, cols = type.shape
    for d, (o, n, ext) in enumerate(zip(offsets, (rows, cols), parent.type.shape)):
        if o < 0 or o + n > ext:
            raise RuntimeFault("RUNTIME_OOB", f"pto.subset %{name}: the window is outside the parent in dim {d}",
                               location=loc, expected=f"offset >= 0, offset + {n} <= {ext}", actual=f"offset {o}")
    valid = tuple(min(n, max(0, pv - o)) for o, n, pv in zip(offsets, (rows, cols), parent.valid))
    return SubTile(type, parent, offsets[0], offsets[1], valid)   # type: ignore[arg-type]
