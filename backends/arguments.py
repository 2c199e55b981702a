"""Binding call arguments to a kernel's parameters, shared by every backend.

Arrays come as numpy arrays or anything with ``__dlpack__`` / ``__array_interface__``; they
are used in place (never converted), so a dtype or shape that differs from the parameter's
type is an error rather than a silent copy whose results would be lost. Every check runs
before any block does, so a refused call leaves the caller's arrays untouched, and both
backends refuse the same call with the same ``RUNTIME_ARG_*`` code (``ARG_CODES``).
"""
from __future__ import annotations

import itertools
from typing import Any, Collection, Mapping, Sequence

import numpy as np

from ..assembler.ir import Kernel, MemRef, Subset, TileOp, Value, View
from ..isa.diagnostics import Location, RuntimeFault
from ..isa.spec import Kind, Role
from ..isa.types import EventType, GlobalType, ScalarType, TileType
from .arrays import Problem, as_array, describe, layout_problem, self_overlaps, shares_memory

#: Every code ``bind`` raises, with what it means (docs/backends.md lists them).
ARG_CODES: dict[str, str] = {
    "RUNTIME_ARG_COUNT": "more positional arguments than the kernel has parameters",
    "RUNTIME_ARG_UNKNOWN": "a keyword argument that names no parameter",
    "RUNTIME_ARG_DUPLICATE": "a parameter given both by position and by name",
    "RUNTIME_ARG_MISSING": "a parameter given no argument",
    "RUNTIME_ARG_TYPE": "an object of the wrong kind: not an array numpy can view in place (a broken "
                        "__dlpack__ / __array_interface__ included), a tile of the wrong shape or dtype, "
                        "a scalar of the wrong type (bool for an integer, float for an integer or index)",
    "RUNTIME_ARG_VALUE": "a scalar outside its type's range",
    "RUNTIME_ARG_SHAPE": "a global tensor of the wrong rank or size, or spanning more than 2^63 - 1 bytes",
    "RUNTIME_ARG_DTYPE": "a global tensor of the wrong element type (non-native byte order included)",
    "RUNTIME_ARG_STRIDES": "strides that are not whole elements, or not the element strides the type fixes",
    "RUNTIME_ARG_ALIGN": "an array whose address is not a multiple of its element type's alignment",
    "RUNTIME_ARG_READONLY": "a read-only array for a parameter the kernel writes",
    "RUNTIME_ARG_OVERLAP": "a written array whose elements overlap each other, or that shares memory "
                           "with a tile parameter (or a written tile parameter sharing memory with any array)",
}


def _fault(code: str, msg: str, kernel: str, expected: object = None, actual: object = None) -> RuntimeFault:
    return RuntimeFault(code, msg, location=Location(kernel=kernel), expected=expected, actual=actual)


def _raise(p: Value, problem: Problem, kernel: str) -> None:
    raise _fault(problem.code, f"argument %{p.name} {problem.message}", kernel,
                 expected=problem.expected, actual=problem.actual)


def written_params(kernel: Kernel) -> set[str]:
    """Parameters some instruction writes: global tensors (TSTORE destinations, scatters ...)
    and tile parameters used as destinations. These are the run's outputs."""
    params = {p.name for p in kernel.params}
    out: set[str] = set()
    roots: dict[str, set[str]] = {}     # a tensor view's name -> the parameters whose memory it shows
    for s in kernel.walk():
        if isinstance(s, (View, Subset)):     # a subset's storage is its parent tile's
            roots.setdefault(s.result.name, set()).update(roots.get(s.source.name, {s.source.name}))
        elif isinstance(s, TileOp):
            for o in s.instr.operands:
                a = s.args.get(o.name)
                if o.role is Role.IN or a is None:
                    continue
                name = a.base.name if isinstance(a, MemRef) else getattr(a, "name", None)
                if o.kind in (Kind.GLOBAL, Kind.TILE):
                    out |= roots.get(name, {name}) & params  # type: ignore[arg-type]
    return out


def _view(p: Value, obj: Any, kernel: str) -> np.ndarray:
    a = as_array(obj)
    if isinstance(a, Problem):
        _raise(p, a, kernel)
    return a  # type: ignore[return-value]


def _global(p: Value, t: GlobalType, obj: Any, kernel: str) -> np.ndarray:
    a = _view(p, obj, kernel)
    if a.ndim != t.rank:
        raise _fault("RUNTIME_ARG_SHAPE", f"argument %{p.name} has the wrong rank", kernel,
                     expected=f"rank {t.rank} ({t})", actual=f"shape {a.shape}")
    if a.dtype != t.dtype.np_dtype:
        order = " (non-native byte order)" if not a.dtype.isnative else ""
        raise _fault("RUNTIME_ARG_DTYPE", f"argument %{p.name} has the wrong dtype", kernel,
                     expected=t.dtype.name, actual=f"{a.dtype.str}{order}" if order else str(a.dtype))
    for d, (want, got) in enumerate(zip(t.shape, a.shape)):
        if want is not None and want != got:
            raise _fault("RUNTIME_ARG_SHAPE", f"argument %{p.name} has the wrong size in dim {d}", kernel,
                         expected=str(t), actual=f"shape {a.shape}")
    problem = layout_problem(a)
    if problem is not None:
        _raise(p, problem, kernel)
    if t.strides is not None:
        got = tuple(s // a.itemsize for s in a.strides)
        for d, (want, have) in enumerate(zip(t.strides, got)):
            if want is not None and want != have:
                raise _fault("RUNTIME_ARG_STRIDES", f"argument %{p.name} has the wrong stride in dim {d}",
                             kernel, expected=f"element strides {t.strides}", actual=f"{got}")
    return a


def _tile(p: Value, t: TileType, obj: Any, kernel: str) -> np.ndarray:
    a = _view(p, obj, kernel)
    if a.shape != t.shape or a.dtype != t.dtype.np_dtype:
        raise _fault("RUNTIME_ARG_TYPE", f"argument %{p.name} must be a {t.shape} {t.dtype} array", kernel,
                     expected=str(t), actual=f"{type(obj).__name__} {a.shape} {a.dtype.str if not a.dtype.isnative else a.dtype}")
    problem = layout_problem(a)
    if problem is not None:
        _raise(p, problem, kernel)
    return a


def _scalar(p: Value, t: ScalarType, obj: Any, kernel: str) -> Any:
    if isinstance(obj, (np.ndarray, np.generic)) and obj.ndim == 0:
        obj = obj.item()
    # plain values only, taken through the base type so no foreign __float__/__int__/__le__ runs
    if t.name == "i1":
        ok = isinstance(obj, bool)
    elif t.is_float:
        ok = isinstance(obj, (int, float)) and not isinstance(obj, bool)
    else:
        ok = isinstance(obj, int) and not isinstance(obj, bool)
    if not ok:
        kind = "a bool" if t.name == "i1" else "a float or an int" if t.is_float else "an int (not a bool or float)"
        raise _fault("RUNTIME_ARG_TYPE", f"argument %{p.name} must be a scalar of type {t}", kernel,
                     expected=f"{kind} for {t}", actual=f"{type(obj).__name__} {describe(obj)}")
    if t.name == "i1":
        return bool(obj)
    if t.is_float:      # rounded to the parameter's type, as a constant of that type is
        try:
            v = float.__float__(obj) if isinstance(obj, float) else float(int.__index__(obj))
        except OverflowError:
            raise _fault("RUNTIME_ARG_VALUE", f"argument %{p.name} is out of range for {t}", kernel,
                         expected="a value a float64 can hold", actual=describe(obj)) from None
        with np.errstate(over="ignore"):
            return float(np.asarray(v, dtype=np.float64).astype(t.dtype.np_dtype))
    v = int.__index__(obj)
    lo, hi = (-(1 << 63), (1 << 63) - 1) if t.name == "index" else (int(t.dtype.min), int(t.dtype.max))
    if not lo <= v <= hi:
        raise _fault("RUNTIME_ARG_VALUE", f"argument %{p.name} is out of range for {t}", kernel,
                     expected=f"[{lo}, {hi}]", actual=v)
    return v


def _check_overlaps(kernel: Kernel, arrays: dict[str, np.ndarray], writes: set[str]) -> None:
    """A written array must not overlap itself; and memory a tile parameter shares with another
    argument, one of them written, would be read and written through two names: backends that
    keep tiles in registers or stage copies would disagree, so both are refused."""
    tiles = {p.name for p in kernel.params if isinstance(p.type, TileType)}
    for name in sorted(writes & arrays.keys()):
        if arrays[name].flags.c_contiguous:       # distinct memory per element by construction
            continue
        if self_overlaps(arrays[name]):
            a = arrays[name]
            raise _fault("RUNTIME_ARG_OVERLAP", f"argument %{name} is written but its elements overlap "
                         "each other", kernel.name, expected="distinct memory for every element",
                         actual=f"shape {a.shape}, strides {a.strides}")
    if not tiles:
        return
    for x, y in itertools.combinations(arrays, 2):
        if (x in writes or y in writes) and (x in tiles or y in tiles) and shares_memory(arrays[x], arrays[y]):
            raise _fault("RUNTIME_ARG_OVERLAP", f"arguments %{x} and %{y} share memory and one of them is "
                         "written", kernel.name, expected="separate arrays (a tile parameter shares memory "
                         "with no other argument that either is written)", actual=f"%{x} and %{y} overlap")


def bind(kernel: Kernel, args: Sequence[Any], kwargs: Mapping[str, Any],
         writes: Collection[str] | None = None) -> dict[str, Any]:
    """Parameter name -> checked value: arrays for globals and tiles, Python numbers for scalars.
    ``writes``: the kernel's ``written_params``, when the caller keeps them (a walk of the kernel
    per launch otherwise)."""
    params = kernel.params
    if len(args) > len(params):
        raise _fault("RUNTIME_ARG_COUNT", f"@{kernel.name} takes {len(params)} argument(s)", kernel.name,
                     expected=len(params), actual=len(args))
    given: dict[str, Any] = {p.name: a for p, a in zip(params, args)}
    names = {p.name for p in params} if kwargs else ()
    for name, v in kwargs.items():
        if name not in names:
            raise _fault("RUNTIME_ARG_UNKNOWN", f"@{kernel.name} has no parameter %{name}", kernel.name,
                         expected=", ".join("%" + p.name for p in params), actual=name)
        if name in given:
            raise _fault("RUNTIME_ARG_DUPLICATE", f"argument %{name} given by position and by name",
                         kernel.name)
        given[name] = v
    writes = written_params(kernel) if writes is None else set(writes)
    out: dict[str, Any] = {}
    for p in params:
        if p.name not in given:
            raise _fault("RUNTIME_ARG_MISSING", f"missing argument %{p.name}", kernel.name,
                         expected=str(p.type), actual="nothing")
        v, t = given[p.name], p.type
        if isinstance(t, GlobalType):
            out[p.name] = _global(p, t, v, kernel.name)
        elif isinstance(t, TileType):
            out[p.name] = _tile(p, t, v, kernel.name)
        elif isinstance(t, ScalarType):
            out[p.name] = _scalar(p, t, v, kernel.name)
        elif isinstance(t, EventType):
            out[p.name] = v           # a token: both backends synchronise in program order
        else:  # pragma: no cover - the parser admits no other parameter types
            raise _fault("RUNTIME_ARG_TYPE", f"parameter %{p.name} has an unsupported type", kernel.name,
                         actual=str(t))
        if p.name in writes and isinstance(out[p.name], np.ndarray) and not out[p.name].flags.writeable:
            raise _fault("RUNTIME_ARG_READONLY", f"argument %{p.name} is written by the kernel but is read-only",
                         kernel.name, expected="a writeable array", actual="read-only")
    _check_overlaps(kernel, {n: v for n, v in out.items() if isinstance(v, np.ndarray)}, writes)
    return out
