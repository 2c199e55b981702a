"""Argument arrays as views inside larger buffers filled with a fixed byte pattern.

A backend may write only the bytes its array arguments cover; any changed byte around a
view (or in the gaps of a strided view) is an out-of-bounds write. The pattern is pseudo-
random so that no plausible stored value (0, NaN, a sentinel) can leave it unchanged.
"""
from __future__ import annotations

import numpy as np

PAD = 256                       # canary bytes before and after each view's extent
_PATTERN = np.random.default_rng(0xC0FFEE).integers(1, 256, 1 << 16, dtype=np.uint8)


def _pattern(n: int) -> np.ndarray:
    reps = -(-n // len(_PATTERN))
    return np.tile(_PATTERN, reps)[:n]


class Canary:
    """Hands out guarded views and checks, after a run, that nothing around them changed."""

    def __init__(self) -> None:
        self.regions: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []

    def view(self, name: str, values: np.ndarray, strides: tuple[int, ...] | None = None) -> np.ndarray:
        """A writeable view holding ``values`` with byte ``strides`` (C order when None),
        placed in a canary-filled buffer."""
        values = np.asarray(values)
        item = values.dtype.itemsize
        shape = values.shape
        if strides is None:
            strides = tuple(int(s) for s in np.empty(shape, values.dtype).strides)
        lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides)) if values.size else 0
        hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + item if values.size else 0
        size = hi - lo + 2 * PAD
        buf = _pattern(size)
        offset = PAD - lo
        view = np.ndarray(shape, values.dtype, buffer=buf.data, offset=offset, strides=strides)
        if values.size:
            view[...] = values
        mask = np.zeros(size, bool)
        if values.size:
            starts = np.full((1,), offset, np.int64)
            for n, s in zip(shape, strides):
                starts = (starts[:, None] + np.arange(n, dtype=np.int64)[None, :] * s).ravel()
            cover = (starts[:, None] + np.arange(item)[None, :]).ravel()
            mask[cover] = True
        self.regions.append((name, buf, mask, _pattern(size)))
        return view

    def check(self) -> str | None:
        """None when every canary byte is intact, else which argument's were overwritten."""
        for name, buf, mask, want in self.regions:
            bad = np.flatnonzero((buf != want) & ~mask)
            if bad.size:
                rel = [int(b) - PAD for b in bad[:4]]
                return (f"{bad.size} canary byte(s) changed around %{name} "
                        f"(byte offsets from the view's extent start: {rel}...)")
        return None
