"""Tile buffers with the reference backend's strict bookkeeping.

``written`` tracks which elements have ever been written (None once every element has, so a
warmed-up tile costs nothing); reading a tile whose valid region is not fully written is a
RUNTIME_UNINIT_READ. After each write the elements outside the valid region get the poison
pattern (elements outside a valid region are unspecified: docs/architecture.md, docs/isa/decisions.md
decision 2), so a program that relies on them sees recognisable garbage.
"""
from __future__ import annotations

import numpy as np

from ...isa import dtypes as dt
from ...isa.spec import Domain
from ...isa.types import TileType
from ...isa.values import Tile

#: Poison by dtype kind: all-ones bits are a NaN in every float format we have; integers get
#: a byte pattern that is easy to spot in a dump; masks (one byte 0/1) can only be True.
_POISON_BYTE = {"float": 0xFF, "int": 0x5A, "uint": 0x5A}


def poison_value(d: dt.DType) -> np.ndarray:
    """One element of poison, as a 0-d array of ``d``."""
    if d.kind == "bool":
        return np.asarray(True)
    raw = np.full(d.itemsize, _POISON_BYTE[d.kind], dtype=np.uint8)
    return raw.view(d.np_dtype).reshape(())


class RefTile(Tile):
    __slots__ = ("written", "poison", "clean")

    def __init__(self, type: TileType, valid: tuple[int, int] | None = None) -> None:
        self.poison = poison_value(type.dtype)
        super().__init__(type, np.full(type.shape, self.poison, dtype=type.dtype.np_dtype), valid)
        self.written: np.ndarray | None = np.zeros(type.shape, dtype=bool)
        self.clean: tuple[int, int] | None = None   # a valid region known to be fully written

    @classmethod
    def wrap(cls, type: TileType, array: np.ndarray) -> "RefTile":
        """A tile over the caller's array (a tile parameter): written in place, all defined."""
        t = cls.__new__(cls)
        Tile.__init__(t, type, array)
        t.poison, t.written, t.clean = poison_value(type.dtype), None, None
        return t

    def reset(self, valid: tuple[int, int]) -> None:
        """A fresh declaration: new valid region, nothing written, all poison."""
        self.valid = valid
        self.data[...] = self.poison
        self.written = np.zeros(self.type.shape, dtype=bool)
        self.clean = None

    def unwritten(self) -> tuple[int, int] | None:
        """The first never-written element of the valid region (row, col), or None."""
        if self.written is None or self.clean == self.valid:
            return None
        r, c = self.valid
        block = self.written[:r, :c]
        if block.all():
            self.clean = self.valid     # writes only add, so this stays true until reset
            return None
        i = int(np.argmin(block.ravel()))
        return divmod(i, c)

    def mark_written(self, domain: Domain) -> None:
        """Record what an instruction with this domain has just written, then poison the
        elements outside the valid region (unless it computed the whole static tile)."""
        r, c = self.valid
        if domain is Domain.STATIC_DST:
            self.written = None
            return
        if self.written is not None:
            if domain is Domain.ROW0:
                self.written[:1, :c] = True
            else:
                self.written[:r, :c] = True
            if (r, c) == self.type.shape and domain is not Domain.ROW0:
                self.written = None
        if (r, c) != self.type.shape:
            self.data[r:, :] = self.poison
            self.data[:r, c:] = self.poison
