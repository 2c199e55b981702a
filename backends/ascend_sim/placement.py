"""Where tiles live: byte addresses in their on-chip buffer, and the regions accesses touch.

Tiles a kernel binds with TASSIGN get the address it names when it runs; every other tile gets
one from a bump allocator, in declaration order, per buffer, each start rounded up to the
buffer's alignment (the profile's ``address_alignment``). A tile that does not fit is
LEGAL_CAPACITY naming it. Inside a tile, bytes follow the logical row-major order of its
elements (the fractal box order of NZ/ZN tiles is not modelled). Global memory is addressed by
the caller arrays' own addresses, so two arguments that alias are seen as the same bytes.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

from ...isa.diagnostics import LegalityError, Location
from ...isa.machines import Machine, buffer_name
from ...isa.types import TileType
from .hazards import Access


#: a window shape over one array (``Placement.geometry``): the array's address, the last row and
#: column a window may start at, the strides, the bytes from a window's start to its end, and
#: its pitch and row width (0, 0: one contiguous range)
Rows = tuple[int, int, int, int, int, int, int, int]


def at_rows(geo: Rows, r0: int, c0: int, write: bool, what: Any) -> Access | None:
    """The window of shape ``geo`` at row ``r0``, column ``c0``; None when it leaves the array."""
    base, rmax, cmax, s0, s1, span, pitch, width = geo
    if not (0 <= r0 <= rmax and 0 <= c0 <= cmax):
        return None
    lo = base + r0 * s0 + c0 * s1
    return Access("GM", lo, lo + span, write, what, pitch, width)


def _span(a: np.ndarray) -> tuple[int, int]:
    lo, hi = np.lib.array_utils.byte_bounds(a)
    return lo, max(hi, lo + 1)


def spans(globals_: Mapping[str, np.ndarray]) -> list[tuple[int, int, str]]:
    """The global parameters' byte ranges (start, end, name), by address (the same for every
    block of a launch: worked out once)."""
    return sorted((*_span(a), n) for n, a in globals_.items())


class LaunchShare:
    """What the blocks of one launch share of their placements (``Placement``): the placed
    tiles' regions, each 2-D array's geometry (the caller's arrays are the same for every
    block) and, when no tile is placed by TASSIGN (every block's tiles then sit at the same
    addresses), what each tile instruction's issue keeps (``memo``: lower.py's plans check a
    kept entry made by another block against their own tiles' addresses and valid regions)."""

    __slots__ = ("regions", "geometry", "memo")

    def __init__(self, share_memo: bool) -> None:
        self.regions: dict[tuple[str, int, int, bool, str], Access] = {}
        self.geometry: dict[int, tuple[int, int, int, int, int, int]] = {}
        self.memo: dict[int, Any] | None = {} if share_memo else None


class Placement:
    """One run's tile addresses (by tile object) and the global parameters' byte ranges
    (``spans``); ``share``: what the blocks of a launch share (``LaunchShare``)."""

    def __init__(self, machine: Machine, kernel: str, tiles: Iterable[tuple[str, TileType, Any]],
                 manual: set[str], globals_: list[tuple[int, int, str]], track: bool = True,
                 share: LaunchShare | None = None) -> None:
        self.m, self.kernel, self.track = machine, kernel, track
        self.where: dict[int, tuple[str, int, int]] = {}      # id(tile) -> (buffer, address, bytes)
        self.names: dict[int, str] = {}
        self._tiles: dict[tuple[int, bool], Access] = {}      # a placed tile's region, read / written
        #: placed tiles' regions by (buffer, address, bytes, write, name), shared by the blocks of a
        #: launch: their tiles sit at the same addresses, so their ops hold the same ``Access``
        #: objects and ``replay._Run.alike`` compares them by identity
        self.regions = {} if share is None else share.regions
        #: id(2-D array) -> its geometry
        self._arrays: dict[int, tuple[int, int, int, int, int, int]] = {} if share is None else share.geometry
        self.version = 0          # counts placements, so what is worked out from them can be kept meanwhile
        #: per static instruction, what its issue keeps (lower.py's plans); ``shared``: the
        #: launch's, whose entries other blocks made
        self.shared = share is not None and share.memo is not None
        self.memo: dict[int, Any] = share.memo if self.shared else {}     # type: ignore[union-attr, assignment]
        top: dict[str, int] = {}
        for name, t, obj in tiles:
            self.names[id(obj)] = name
            if name in manual:
                continue
            align = machine.profile.address_alignment.get(t.loc, 32)
            at = -(-top.get(t.loc.value, 0) // align) * align
            self.place(obj, t, at, None, name)
            top[t.loc.value] = at + t.nbytes
        self.globals = globals_

    def place(self, obj: Any, t: TileType, at: int, loc: Location | None, name: str | None = None) -> None:
        """Put ``obj`` (of type ``t``) at byte ``at``: LEGAL_CAPACITY when it does not fit."""
        cap = self.m.capacity.get(t.loc, 0)
        if at + t.nbytes > cap:
            name = name or self.names.get(id(obj), "?")
            raise LegalityError("LEGAL_CAPACITY", f"%{name} ({t.nbytes} bytes) at byte {at} of {self.m.name}'s "
                                f"{cap}-byte {t.loc.value} buffer ({buffer_name(t.loc)}) does not fit",
                                location=loc or Location(kernel=self.kernel),
                                expected=f"address + {t.nbytes} <= {cap}", actual=f"{at} + {t.nbytes} = {at + t.nbytes}")
        self.where[id(obj)] = (buffer_name(t.loc), at, t.nbytes)
        self.version += 1
        self._tiles.pop((id(obj), False), None)
        self._tiles.pop((id(obj), True), None)

    def tile(self, obj: Any, write: bool) -> Access:
        """The bytes tile ``obj`` occupies; a pto.subset child is a row window of its root.
        A placed tile's region is made once per run (until it is placed again)."""
        key = (id(obj), write)
        got = self._tiles.get(key)
        if got is not None:
            return got
        got = self.where.get(id(obj))
        name = self.names.get(id(obj), "a tile")
        if got is not None:
            space, at, n = got
            shared = (space, at, n, write, name)
            a = self.regions.get(shared)
            if a is None:
                a = self.regions[shared] = Access(space, at, at + n, write, f"%{name}")
            self._tiles[key] = a
            return a
        root = obj
        while hasattr(root, "parent"):
            root = root.parent
        got = self.where.get(id(root))
        if got is None:            # a tile not placed yet (TASSIGN still to come): its own space
            return Access(f"unplaced %{name}", 0, max(obj.type.nbytes, 1), write, f"%{name}")
        space, at, n = got
        a, r = obj.data, root.data
        lo = at + (a.__array_interface__["data"][0] - r.__array_interface__["data"][0])
        rows, cols = a.shape
        width = cols * a.itemsize
        pitch = a.strides[0]
        if rows <= 1 or pitch == width:
            return Access(space, lo, lo + rows * width, write, f"%{self.names.get(id(root), 'a tile')} (window)")
        return Access(space, lo, lo + (rows - 1) * pitch + width, write,
                      f"%{self.names.get(id(root), 'a tile')} (window)", pitch, width)

    def rows(self, array: np.ndarray, r0: int, c0: int, rows: int, cols: int, write: bool,
             what: Any) -> Access | None:
        """``window(array[r0:r0 + rows, c0:c0 + cols])`` computed from the array's address and
        strides without making the view, for the common case (a 2-D array, the window inside it,
        more than one row, unit element stride, rows apart by at least a row); None otherwise
        (the caller takes the general path)."""
        geo = self.geometry(array, rows, cols)
        return None if geo is None else at_rows(geo, r0, c0, write, what)

    def geometry(self, array: np.ndarray, rows: int, cols: int) -> Rows | None:
        """What ``at_rows`` needs for ``rows x cols`` windows of ``array``, or None when they do
        not take the common form (see ``rows``)."""
        geo = self._arrays.get(id(array))
        if geo is None:
            if array.ndim != 2:
                return None
            geo = self._arrays[id(array)] = (array.__array_interface__["data"][0], *array.shape,
                                             *array.strides, array.itemsize)
        base, nr, nc, s0, s1, item = geo
        width = cols * item
        if not (rows > 1 and cols > 0 and s1 == item and s0 >= width):
            return None
        return (base, nr - rows, nc - cols, s0, s1, (rows - 1) * s0 + width) + ((0, 0) if s0 == width else (s0, width))

    def window(self, view: np.ndarray, write: bool, what: str) -> Access:
        """The global bytes of a numpy window: a row window when rows are contiguous."""
        if view.ndim == 2 and view.shape[0] > 1 and view.strides[1] == view.itemsize \
                and view.strides[0] >= view.shape[1] * view.itemsize:
            lo = view.__array_interface__["data"][0]
            width, pitch = view.shape[1] * view.itemsize, view.strides[0]
            hi = lo + (view.shape[0] - 1) * pitch + width
            return Access("GM", lo, hi, write, what, 0 if pitch == width else pitch, 0 if pitch == width else width)
        lo, hi = _span(view)
        return Access("GM", lo, hi, write, what)

    def describe(self, a: Access, lo: int, hi: int) -> str:
        """A byte range for messages: global bytes relative to the parameter that holds them."""
        if a.space != "GM":
            return f"{a.space} bytes [{lo}, {hi})"
        for base, end, name in self.globals:
            if base <= lo < end:
                return f"global %{name} bytes [{lo - base}, {hi - base})"
        return f"global bytes [{lo:#x}, {hi:#x})"
