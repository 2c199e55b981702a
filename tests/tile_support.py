"""Tiles for the tests that call the isa's semantics directly."""
from __future__ import annotations

import numpy as np

from openpto.isa.types import parse_type
from openpto.isa.values import Tile


def corner_tile(spelling: str, data: object = None, valid: tuple[int, int] | None = None,
                fill: float = 0) -> Tile:
    """A tile of the type ``spelling``: ``data`` in its top-left corner, ``fill`` everywhere else
    (a value the test can tell from anything an instruction writes)."""
    t = parse_type(spelling)
    arr = np.full(t.shape, fill, dtype=t.dtype.np_dtype)
    if data is not None:
        d = np.asarray(data, dtype=t.dtype.np_dtype)
        arr[: d.shape[0], : d.shape[1]] = d
    return Tile(t, arr, valid)
