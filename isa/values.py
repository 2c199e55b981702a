"""Run-time values semantics functions operate on: tiles and global-memory references.

A ``Tile`` is logical 2-D storage (layout only matters to byte-reinterpreting ops)
plus its actual valid region. A ``GlobalRef`` is a strided numpy view of a global
tensor and the index the instruction addresses it at.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import dtypes as dt
from .diagnostics import RuntimeFault
from .types import GlobalLayout, Location, Layout, PadValue, TileType


class Tile:
    """A tile buffer: ``data`` has the static shape; ``valid`` is the region ops iterate over."""

    __slots__ = ("type", "data", "valid")

    def __init__(self, type: TileType, data: np.ndarray | None = None,
                 valid: tuple[int, int] | None = None) -> None:
        self.type = type
        if data is None:
            data = np.zeros(type.shape, dtype=type.dtype.np_dtype)
        if data.shape != type.shape or data.dtype != type.dtype.np_dtype:
            raise RuntimeFault("RUNTIME_TILE_STORAGE", "tile storage does not match its type",
                               expected=f"{type.shape} {type.dtype}", actual=f"{data.shape} {data.dtype}")
        self.data = data
        if valid is None:
            valid = (type.rows if type.valid_rows is None else type.valid_rows,
                     type.cols if type.valid_cols is None else type.valid_cols)
        vr, vc = valid
        if not (0 <= vr <= type.rows and 0 <= vc <= type.cols):
            raise RuntimeFault("RUNTIME_VALID_REGION", "valid region exceeds the tile",
                               expected=f"<= {type.rows}x{type.cols}", actual=f"{vr}x{vc}")
        self.valid = (int(vr), int(vc))

    @classmethod
    def of(cls, array: np.ndarray, valid: tuple[int, int] | None = None, *,
           loc: Location = Location.VEC, layout: Layout = Layout.ND,
           pad: PadValue = PadValue.NULL, dtype: dt.DType | None = None) -> "Tile":
        """A tile holding a copy of a 2-D array (static shape = array shape)."""
        d = dtype or dt.of_numpy(array.dtype)
        arr = np.array(array, dtype=d.np_dtype, copy=True).reshape(np.shape(array))
        if arr.ndim != 2:
            raise RuntimeFault("RUNTIME_TILE_STORAGE", "tiles are 2-D", expected=2, actual=arr.ndim)
        vr, vc = valid if valid is not None else arr.shape
        t = TileType(arr.shape[0], arr.shape[1], d, loc, layout, vr, vc, pad)
        return cls(t, arr)

    @classmethod
    def empty(cls, type: TileType, valid: tuple[int, int] | None = None) -> "Tile":
        return cls(type, None, valid)

    @property
    def dtype(self) -> dt.DType:
        return self.type.dtype

    def region(self) -> np.ndarray:
        """The valid region (a view)."""
        return self.data[: self.valid[0], : self.valid[1]]

    def read(self, rows: int, cols: int, what: str = "operand") -> np.ndarray:
        """The ``rows x cols`` prefix, which must lie inside the valid region."""
        if rows > self.valid[0] or cols > self.valid[1]:
            raise RuntimeFault("RUNTIME_INVALID_READ",
                               f"{what} is read outside its valid region",
                               expected=f"domain {rows}x{cols} inside the valid region",
                               actual=f"valid region {self.valid[0]}x{self.valid[1]}")
        return self.data[:rows, :cols]

    def write(self, values: np.ndarray, rows: int | None = None, cols: int | None = None) -> None:
        """Store ``values`` (any float/int array) into the top-left block, converting to the dtype."""
        r = values.shape[0] if rows is None else rows
        c = values.shape[1] if cols is None else cols
        self.data[:r, :c] = values

    def copy(self) -> "Tile":
        return Tile(self.type, self.data.copy(), self.valid)

    def __repr__(self) -> str:
        return f"Tile({self.type}, valid={self.valid})"


@dataclass
class GlobalRef:
    """A global tensor (any strided numpy array) addressed at ``offsets`` (one per dim); its
    ``layout`` tells a TLOAD how to read a scale matrix out of it (isa/glayouts.py). ``element`` is
    the declared element type where the array's numpy type cannot say it (a hifloat8, fp4 or
    f8e8m0 tensor is a uint8 array of codes): a converting store needs it to pick the encoding."""

    array: np.ndarray
    offsets: tuple[int, ...] = ()
    layout: GlobalLayout = GlobalLayout.ND
    element: dt.DType | None = None

    def __post_init__(self) -> None:
        if not self.offsets:
            self.offsets = (0,) * self.array.ndim
        if len(self.offsets) != self.array.ndim:
            raise RuntimeFault("RUNTIME_INDEX_ARITY", "wrong number of indices for a global tensor",
                               expected=self.array.ndim, actual=len(self.offsets))

    @property
    def dtype(self) -> dt.DType:
        return self.element if self.element is not None else dt.of_numpy(self.array.dtype)

    def window(self, rows: int, cols: int, what: str = "global tensor") -> np.ndarray:
        """The 2-D ``rows x cols`` window at the offsets: leading indices pick a matrix,
        the last two give the window origin. Raises RUNTIME_OOB when it does not fit."""
        a = self.array
        off = self.offsets
        shift = 0                     # a vector is viewed as one row; its dims are named as given
        if a.ndim == 1:
            a, off, shift = a.reshape(1, -1), (0,) + tuple(off), 1
        lead, (r0, c0) = off[:-2], off[-2:]
        ends = [o + 1 for o in lead] + [r0 + rows, c0 + cols]
        starts = list(lead) + [r0, c0]
        for d, (s, e) in enumerate(zip(starts, ends)):
            if s < 0 or e > a.shape[d]:
                raise RuntimeFault("RUNTIME_OOB", f"{what} accessed out of bounds in dim {d - shift}",
                                   expected=f"indices in [0, {a.shape[d]})",
                                   actual=f"[{s}, {e})")
        return a[tuple(lead)][r0:r0 + rows, c0:c0 + cols]
