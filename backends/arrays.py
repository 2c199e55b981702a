"""Caller-supplied array objects as numpy views, and the memory-layout rules every backend shares.

Arguments are used in place, so these checks are the contract between the caller's memory and
a kernel. Anything refused here is refused before a block runs, with the same code on every
backend: an object numpy cannot view (whatever its ``__dlpack__`` / ``__array_interface__``
raises), a layout a native backend cannot address (strides that are not whole elements, a
misaligned address, a span beyond the C ABI's i64), or memory a write would reach through two
names (a self-overlapping output, an output sharing memory with a tile parameter).

Each check returns ``None`` or a :class:`Problem`; ``arguments.bind`` turns a problem into a
``RuntimeFault`` naming the parameter.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

I64_MAX = (1 << 63) - 1

#: Work budget for numpy's exact overlap solver; a harder case counts as overlapping.
_OVERLAP_WORK = 100_000


@dataclass(frozen=True)
class Problem:
    """Why an argument object is refused: a stable code, a message, expected vs actual."""

    code: str
    message: str
    expected: object = None
    actual: object = None


def describe(obj: Any) -> str:
    """A short, never-raising description of a foreign object for a diagnostic."""
    if isinstance(obj, np.ndarray):
        return f"ndarray {obj.shape} {obj.dtype}"
    try:
        text = repr(obj)
    except Exception:                           # noqa: BLE001 - a foreign __repr__ may raise anything
        text = f"<{type(obj).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _convert(obj: Any) -> np.ndarray | None:
    """``obj`` as a numpy array sharing its memory, None for a non-array; may raise anything."""
    if isinstance(obj, np.ndarray):
        return obj
    if getattr(obj, "__dlpack__", None) is not None:
        return np.from_dlpack(obj)
    if getattr(obj, "__array_interface__", None) is not None:
        a = np.asarray(obj)
        if a.dtype == object:        # numpy wraps what it does not understand as an object array
            raise ValueError("the array interface does not describe numeric memory")
        return a
    return None


def as_array(obj: Any) -> np.ndarray | Problem:
    """A numpy view of ``obj`` (numpy array, DLPack or array-interface object) that shares its
    memory, or the Problem why there is none. Objects that only offer ``__array__`` are refused:
    that protocol may hand back a copy, whose results the caller would never see."""
    try:
        a = _convert(obj)
    except Exception as e:                      # noqa: BLE001 - foreign protocol code may raise anything
        return Problem("RUNTIME_ARG_TYPE", f"cannot view it as an array: {type(e).__name__}: {e}",
                       expected="a numpy array, or a DLPack / array-interface object numpy accepts",
                       actual=describe(obj))
    if a is None:
        return Problem("RUNTIME_ARG_TYPE", "is not an array",
                       expected="a numpy array, or a DLPack / array-interface object",
                       actual=type(obj).__name__)
    return a


def byte_span(a: np.ndarray) -> int:
    """Bytes from the lowest to one past the highest element (0 for an empty array)."""
    if a.size == 0:
        return 0
    return sum((n - 1) * abs(s) for n, s in zip(a.shape, a.strides)) + a.itemsize


def layout_problem(a: np.ndarray) -> Problem | None:
    """Strides in whole elements, an element-aligned address, a span that fits i64."""
    if any(s % a.itemsize for s in a.strides):
        return Problem("RUNTIME_ARG_STRIDES", "has strides that are not a multiple of its element size",
                       expected=f"byte strides that are multiples of {a.itemsize}", actual=f"{a.strides}")
    if a.flags.c_contiguous and a.flags.aligned:
        # numpy's aligned flag covers the address (the look-up below costs about 1 us a call) and
        # a C-contiguous array spans exactly its bytes: the launches' usual case, decided cheaply
        return None if a.nbytes <= I64_MAX else _too_long(a)
    if a.size and a.ctypes.data % a.dtype.alignment:
        return Problem("RUNTIME_ARG_ALIGN", "has an address that is not aligned to its element type",
                       expected=f"an address that is a multiple of {a.dtype.alignment}",
                       actual=f"0x{a.ctypes.data:x}")
    return _too_long(a) if byte_span(a) > I64_MAX else None


def _too_long(a: np.ndarray) -> Problem:
    return Problem("RUNTIME_ARG_SHAPE", "spans more bytes than a 64-bit offset can address",
                   expected=f"at most {I64_MAX} bytes", actual=f"shape {a.shape}, strides {a.strides}")


def self_overlaps(a: np.ndarray) -> bool:
    """True when two elements of ``a`` share bytes (zero strides, broadcast or interleaved
    views). First a sufficient rule: with the dimensions sorted by stride, each stride steps
    over everything the smaller ones cover (numpy slicing, transposes and flips always satisfy
    it). What fails the rule is decided exactly, by listing every element's offset, up to
    ``_EXACT_OVERLAP`` elements; a larger array that fails the rule counts as overlapping."""
    if a.size == 0:
        return False
    covered = a.itemsize
    for n, s in sorted(((n, abs(s)) for n, s in zip(a.shape, a.strides) if n > 1), key=lambda d: d[1]):
        if s < covered:
            return a.size > _EXACT_OVERLAP or _offsets_collide(a)
        covered += (n - 1) * s
    return False


#: the most elements whose offsets ``self_overlaps`` lists to decide a layout exactly (64 MB)
_EXACT_OVERLAP = 1 << 23


def _offsets_collide(a: np.ndarray) -> bool:
    """Whether two elements' byte ranges ``[offset, offset + itemsize)`` intersect."""
    offsets = np.zeros(1, np.int64)
    for n, s in zip(a.shape, a.strides):
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * s).ravel()
    offsets.sort()
    return bool(np.any(np.diff(offsets) < a.itemsize))


def shares_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """True when ``a`` and ``b`` may share bytes (numpy's exact test within a work budget)."""
    if a.size == 0 or b.size == 0 or not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=_OVERLAP_WORK))
    except np.exceptions.TooHardError:
        return True
