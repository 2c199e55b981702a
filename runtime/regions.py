"""The region audit: does a kernel task stay inside the regions it declares?

``regions=`` narrows a binding for dependencies and for the verifier's race check, so a
region that is smaller than what the kernel really touches would hide a race. The audit does
not take the declaration on trust: it runs the task's kernel twice more, on private copies of
its bindings laid out as the originals are (aliases between bindings kept), with every byte
outside the declared regions filled with different values each time. A byte outside that
changes was written there; a byte inside that differs between the two runs was computed from
a byte outside. Either is ``ORDER_TASK_REGION``. The caller's buffers are not touched.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..isa.diagnostics import Location, OrderError
from .graph import Task, TaskGraph

#: audits already done: (executable, kernel, layout, scalars, blocks) -> problem text or None
_DONE: dict[tuple[Any, ...], tuple[Any, str | None]] = {}
_DONE_SIZE = 4096


def _layout(task: Task) -> tuple[int, list[tuple[str, np.ndarray, Any]], dict[str, int]]:
    """Where each array binding goes in the audit's private memory: bindings whose bytes
    overlap (aliases) keep their relative layout in one stretch, and the stretches of unrelated
    arrays are packed one after another (not the span of their real addresses, which may be
    terabytes apart). Returns the private memory's size, per binding (name, array, region),
    and per binding the private offset of its element [0, ..., 0]."""
    arrays = [(n, v, task.regions.get(n)) for n, v in task.args.items() if isinstance(v, np.ndarray) and v.size]
    spans = sorted((*np.lib.array_utils.byte_bounds(v), n, v) for n, v, _ in arrays)
    place: dict[str, int] = {}
    size = 0
    group: list[tuple[int, str, np.ndarray]] = []
    lo = hi = 0

    def close() -> None:
        nonlocal size
        for start, n, v in group:
            place[n] = size + v.__array_interface__["data"][0] - lo
        size += hi - lo

    for start, end, n, v in spans:
        if group and start >= hi:
            close()
            group = []
        if not group:
            lo, hi = start, end
        hi = max(hi, end)
        group.append((start, n, v))
    if group:
        close()
    return size, arrays, place


def _private(buf: np.ndarray, first: int, a: np.ndarray) -> np.ndarray:
    """``a`` rebuilt over ``buf`` with its element [0, ..., 0] at byte ``first`` (negative strides allowed)."""
    return np.ndarray(a.shape, a.dtype, buffer=buf, offset=first, strides=a.strides)


def _fill(view: np.ndarray, rng: np.random.Generator) -> None:
    if view.dtype.kind == "b":
        view[...] = rng.random(view.shape) < 0.5
    elif view.dtype.kind in "iu":
        info = np.iinfo(view.dtype)
        view[...] = rng.integers(max(info.min, -100), min(info.max, 100), view.shape, dtype=view.dtype,
                                 endpoint=True)
    else:
        view[...] = (rng.standard_normal(view.shape) * 4 + 1).astype(view.dtype)


def _run(task: Task, size: int, arrays: list[tuple[str, np.ndarray, Any]], place: dict[str, int],
         seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The private memory before and after one run, the bytes outside the regions from ``seed``."""
    buf = np.zeros(size, np.uint8)
    views = {n: _private(buf, place[n], a) for n, a, _ in arrays}
    outside = np.random.default_rng(seed)
    for n, _, _ in arrays:                                     # everything from this run's seed ...
        _fill(views[n], outside)
    same = np.random.default_rng(0)
    for n, _, region in arrays:                                # ... then the inside, equal in both runs
        _fill(views[n] if region is None else views[n][region], same)
    before = buf.copy()
    args = {n: views.get(n, v) for n, v in task.args.items()}
    task.exe.run(task.kernel, block_num=task.blocks, **args)   # type: ignore[union-attr]
    return before, buf


def _inside_mask(size: int, arrays: list[tuple[str, np.ndarray, Any]], place: dict[str, int]) -> np.ndarray:
    """The bytes of the elements inside the regions (a binding with no region: all of it)."""
    mask = np.zeros(size, np.uint8)
    for n, a, region in arrays:
        m = np.ndarray((*a.shape, a.dtype.itemsize), np.uint8, buffer=mask,   # each element's bytes
                       offset=place[n], strides=(*a.strides, 1))
        chosen = np.zeros(a.shape, bool)
        chosen[region if region is not None else ...] = True
        m[chosen] = 1
    return mask.astype(bool)


def audit_task(task: Task) -> str | None:
    """What the task's kernel does outside its declared regions (None: nothing)."""
    if task.exe is None or not task.regions:
        return None
    size, arrays, place = _layout(task)
    key = (id(task.exe), task.kernel, task.blocks,
           tuple((n, a.shape, a.strides, a.dtype.str, place[n], repr(r)) for n, a, r in arrays),
           tuple((n, repr(v)) for n, v in sorted(task.args.items()) if not isinstance(v, np.ndarray)))
    hit = _DONE.get(key)
    if hit is not None and hit[0] is task.exe:
        return hit[1]
    inside = _inside_mask(size, arrays, place)
    try:
        before1, after1 = _run(task, size, arrays, place, 1)
        before2, after2 = _run(task, size, arrays, place, 2)
    except Exception as e:                                     # noqa: BLE001 - named in the report
        code = getattr(e, "code", type(e).__name__)
        return f"fails ({code}) when the bytes outside its regions hold other values"
    found = None
    wrote = (after1 != before1) & ~inside
    if wrote.any():
        found = f"changes {int(wrote.sum())} byte(s) outside the regions it declares"
    elif (after1 != after2)[inside].any():
        found = "computes values inside its regions from bytes outside them"
    if len(_DONE) >= _DONE_SIZE:
        _DONE.pop(next(iter(_DONE)))
    _DONE[key] = (task.exe, found)
    return found


def audit(graph: TaskGraph) -> dict[int, OrderError]:
    """Task id -> ``ORDER_TASK_REGION`` for every kernel task that reaches past its declared regions."""
    out: dict[int, OrderError] = {}
    for task in graph.tasks:
        found = audit_task(task)
        if found is not None:
            narrowed = ", ".join(f"%{n}[{task.regions[n]!r}]" for n in sorted(task.regions))
            out[task.id] = OrderError("ORDER_TASK_REGION", f"task {task.id} {task.label!r} ({task.what}) {found}; "
                                      "its whole bindings are checked for races instead",
                                      location=Location(kernel=task.kernel), expected=f"accesses within {narrowed}",
                                      actual=found)
    return out
