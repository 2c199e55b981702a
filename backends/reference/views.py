"""Tensor views on the reference backend (decision "Tensor views"): a view is a numpy view of
its source's memory, so instructions read and write the caller's arrays through it. Every
view is checked against its source when it is made; nothing here can reach outside the
array the kernel was given."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...isa.diagnostics import Location, RuntimeFault
from ...isa.types import GlobalType


def _fault(code: str, msg: str, loc: Location | None, expected: object, actual: object) -> RuntimeFault:
    return RuntimeFault(code, msg, location=loc, expected=expected, actual=actual)


def element_strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


def _typed(a: np.ndarray, t: GlobalType, op: str, loc: Location | None) -> np.ndarray:
    """The view must have the static extents and strides its type states."""
    for what, have, want in (("shape", a.shape, t.shape), ("strides", element_strides(a), t.strides or ())):
        for d, (h, w) in enumerate(zip(have, want)):
            if w is not None and h != w:
                raise _fault("RUNTIME_VIEW_SHAPE", f"pto.{op}: the view's {what} in dim {d} differs from its type",
                             loc, f"{what} {t}", f"{what} {tuple(have)}")
    return a


def make_tensor_view(base: np.ndarray, sizes: Sequence[int], strides: Sequence[int], t: GlobalType,
                     loc: Location | None) -> np.ndarray:
    """Shape and element strides over a rank-1 pointer; every element must lie in it."""
    for what, items in (("size", sizes), ("stride", strides)):
        for d, v in enumerate(items):
            if v < 0:
                raise _fault("RUNTIME_VIEW_SHAPE", f"pto.make_tensor_view: {what} {v} in dim {d} is negative",
                             loc, f"a {what} >= 0", v)
    span = 0 if 0 in sizes else 1 + sum((n - 1) * s for n, s in zip(sizes, strides))
    if span > base.shape[0]:
        raise _fault("RUNTIME_OOB", "pto.make_tensor_view: the view reaches outside its pointer", loc,
                     f"at most {base.shape[0]} elements", f"{span} elements (shape {tuple(sizes)}, "
                     f"strides {tuple(strides)})")
    try:
        a = as_strided(base, shape=tuple(sizes), strides=tuple(s * base.strides[0] for s in strides))
    except (ValueError, OverflowError) as e:
        raise _fault("RUNTIME_VIEW_SHAPE", f"pto.make_tensor_view: no such view ({e})", loc,
                     "a shape whose element count fits 64 bits", tuple(sizes)) from None
    return _typed(a, t, "make_tensor_view", loc)


def partition_view(src: np.ndarray, offsets: Sequence[int], sizes: Sequence[int], t: GlobalType,
                   loc: Location | None) -> np.ndarray:
    """The window ``offsets .. offsets + sizes`` of a view; it must lie inside the view."""
    for d, (o, n, ext) in enumerate(zip(offsets, sizes, src.shape)):
        if o < 0 or n < 0 or o + n > ext:
            raise _fault("RUNTIME_OOB", f"pto.partition_view: the window is outside the view in dim {d}", loc,
                         f"offset >= 0, size >= 0, offset + size <= {ext}", f"offset {o}, size {n}")
    a = src[tuple(slice(o, o + n) for o, n in zip(offsets, sizes))]
    return _typed(a, t, "partition_view", loc)


def footprint(a: np.ndarray) -> int:
    """Elements from a view's origin to its last element in memory order (0 when empty)."""
    if 0 in a.shape:
        return 0
    return 1 + sum((n - 1) * max(s, 0) for n, s in zip(a.shape, element_strides(a)))


def tensor_view_addr(src: np.ndarray, t: GlobalType, loc: Location | None) -> np.ndarray:
    """The storage from the view's origin, as a contiguous rank-1 pointer over its footprint."""
    a = as_strided(src, shape=(footprint(src),), strides=(src.itemsize,))
    return _typed(a, t, "tensor_view_addr", loc)


def query(op: str, src: np.ndarray, dim: int, loc: Location | None) -> int:
    """``get_tensor_view_dim`` / ``_stride`` (element strides) of dimension ``dim``."""
    if not 0 <= dim < src.ndim:
        raise _fault("RUNTIME_OOB", f"pto.{op}: no dimension {dim}", loc, f"[0, {src.ndim})", dim)
    return int(src.shape[dim]) if op == "get_tensor_view_dim" else element_strides(src)[dim]
