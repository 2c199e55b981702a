"""Binding call arguments to a kernel's parameters, shared by every backend.

Arrays come as numpy arrays or anything with ``__dlpack__`` / ``__array_interface__``; they
are used in place (never converted), so a dtype or shape that differs from the parameter's
type is an error rather than a silent copy whose results would be lost. Every check runs
before any block does, so a refused call leaves the caller's arrays untouched, and both
backends refuse the same call with the same ``RUNTIME_ARG_*`` code (``ARG_CODES``).
"""
from __future__ import annotations

import itertools
import struct
from typing import Any, Callable, Collection, Mapping, Sequence

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
    if isinstance(obj, np.ndarray):      # as_array's first case, without the call
        return obj
    a = as_array(obj)
    if isinstance(a, Problem):
        _raise(p, a, kernel)
    return a  # type: ignore[return-value]


Check = Callable[[Any], Any]


def _global(p: Value, t: GlobalType, kernel: str) -> Check:
    """The check of a global tensor argument, with what the type fixes worked out once."""
    rank, dtype = t.rank, t.dtype.np_dtype
    sizes = tuple((d, want) for d, want in enumerate(t.shape) if want is not None)
    strides = t.strides

    def check(obj: Any) -> np.ndarray:
        a = _view(p, obj, kernel)
        if a.ndim != rank:
            raise _fault("RUNTIME_ARG_SHAPE", f"argument %{p.name} has the wrong rank", kernel,
                         expected=f"rank {rank} ({t})", actual=f"shape {a.shape}")
        if a.dtype != dtype:
            order = " (non-native byte order)" if not a.dtype.isnative else ""
            raise _fault("RUNTIME_ARG_DTYPE", f"argument %{p.name} has the wrong dtype", kernel,
                         expected=t.dtype.name, actual=f"{a.dtype.str}{order}" if order else str(a.dtype))
        shape = a.shape
        for d, want in sizes:
            if shape[d] != want:
                raise _fault("RUNTIME_ARG_SHAPE", f"argument %{p.name} has the wrong size in dim {d}", kernel,
                             expected=str(t), actual=f"shape {a.shape}")
        problem = layout_problem(a)
        if problem is not None:
            _raise(p, problem, kernel)
        if strides is not None:
            got = tuple(s // a.itemsize for s in a.strides)
            for d, (want, have) in enumerate(zip(strides, got)):
                if want is not None and want != have:
                    raise _fault("RUNTIME_ARG_STRIDES", f"argument %{p.name} has the wrong stride in dim {d}",
                                 kernel, expected=f"element strides {strides}", actual=f"{got}")
        return a
    return check


def _tile(p: Value, t: TileType, kernel: str) -> Check:
    """The check of a tile argument: exactly the tile's shape and dtype, a layout a backend can use."""
    shape, dtype = t.shape, t.dtype.np_dtype

    def check(obj: Any) -> np.ndarray:
        a = _view(p, obj, kernel)
        if a.shape != shape or a.dtype != dtype:
            raise _fault("RUNTIME_ARG_TYPE", f"argument %{p.name} must be a {t.shape} {t.dtype} array", kernel,
                         expected=str(t), actual=f"{type(obj).__name__} {a.shape} "
                         f"{a.dtype.str if not a.dtype.isnative else a.dtype}")
        problem = layout_problem(a)
        if problem is not None:
            _raise(p, problem, kernel)
        return a
    return check


_F32 = struct.Struct("<f")


def _scalar(p: Value, t: ScalarType, kernel: str) -> Check:
    """The check of a scalar argument. A plain int in range (an integer or index parameter) and
    a plain float within f32's finite range (an f32 parameter: struct's C cast rounds as
    numpy's astype does) take a short way; everything else, errors included, ``_scalar_value``."""
    def full(obj: Any) -> Any:
        return _scalar_value(p, t, obj, kernel)

    if t.name == "f32":
        pack, unpack, top = _F32.pack, _F32.unpack, float(np.finfo(np.float32).max)

        def check_f32(obj: Any) -> Any:
            if type(obj) is float and -top <= obj <= top:     # finite in f32: no overflow, no NaN
                return unpack(pack(obj))[0]
            return full(obj)
        return check_f32
    if t.name == "i1" or t.is_float:
        return full
    lo, hi = _int_range(t)

    def check_int(obj: Any) -> Any:
        if type(obj) is int and lo <= obj <= hi:
            return obj
        return full(obj)
    return check_int


def _int_range(t: ScalarType) -> tuple[int, int]:
    return (-(1 << 63), (1 << 63) - 1) if t.name == "index" else (int(t.dtype.min), int(t.dtype.max))


def _scalar_value(p: Value, t: ScalarType, obj: Any, kernel: str) -> Any:
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
    lo, hi = _int_range(t)
    if not lo <= v <= hi:
        raise _fault("RUNTIME_ARG_VALUE", f"argument %{p.name} is out of range for {t}", kernel,
                     expected=f"[{lo}, {hi}]", actual=v)
    return v


def _event(p: Value, t: EventType, kernel: str) -> Check:
    return lambda obj: obj           # a token: both backends synchronise in program order


#: parameter type -> the factory of its argument check
_CHECKS: dict[type, Callable[[Value, Any, str], Check]] = {
    GlobalType: _global, TileType: _tile, ScalarType: _scalar, EventType: _event}


def _check_for(p: Value, kernel: str) -> Check:
    for cls, make in _CHECKS.items():
        if isinstance(p.type, cls):
            return make(p, p.type, kernel)
    raise _fault("RUNTIME_ARG_TYPE", f"parameter %{p.name} has an unsupported type", kernel,  # pragma: no cover
                 actual=str(p.type))


class Binder:
    """One kernel's argument checks, chosen once per parameter from its type: a backend keeps
    one per kernel, so a launch runs the checks without working out which apply. ``values``
    gives the checked arguments in parameter order, ``bind`` by name; both raise exactly what
    the checks raise, in parameter order (count, names, then each parameter, then overlaps)."""

    def __init__(self, kernel: Kernel, writes: Collection[str] | None = None) -> None:
        self.kernel = kernel
        self.writes = frozenset(written_params(kernel) if writes is None else writes)
        params = kernel.params
        self.names = tuple(p.name for p in params)
        self._name_set = frozenset(self.names)
        self._checks = tuple((p, _check_for(p, kernel.name), p.name in self.writes) for p in params)
        self._tiles = frozenset(p.name for p in params if isinstance(p.type, TileType))
        index = {n: i for i, n in enumerate(self.names)}
        #: the written parameters by name, as the self-overlap check visits them
        self._written = tuple((n, index[n]) for n in sorted(self.writes) if n in index)

    def _given(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        name = self.kernel.name
        if not args and kwargs.keys() == self._name_set:   # every parameter by name, nothing else
            return kwargs
        names = self.names
        if len(args) > len(names):
            raise _fault("RUNTIME_ARG_COUNT", f"@{name} takes {len(names)} argument(s)", name,
                         expected=len(names), actual=len(args))
        given: dict[str, Any] = dict(zip(names, args))
        for n, v in kwargs.items():
            if n not in self._name_set:
                raise _fault("RUNTIME_ARG_UNKNOWN", f"@{name} has no parameter %{n}", name,
                             expected=", ".join("%" + p for p in names), actual=n)
            if n in given:
                raise _fault("RUNTIME_ARG_DUPLICATE", f"argument %{n} given by position and by name", name)
            given[n] = v
        return given

    def values(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Any]:
        """The checked arguments in parameter order: arrays for globals and tiles (the caller's,
        never copies), Python numbers for scalars."""
        given = self._given(args, kwargs)
        name = self.kernel.name
        out: list[Any] = []
        for p, check, written in self._checks:
            try:
                v = given[p.name]
            except KeyError:
                raise _fault("RUNTIME_ARG_MISSING", f"missing argument %{p.name}", name,
                             expected=str(p.type), actual="nothing") from None
            v = check(v)
            if written and isinstance(v, np.ndarray) and not v.flags.writeable:
                raise _fault("RUNTIME_ARG_READONLY", f"argument %{p.name} is written by the kernel but is "
                             "read-only", name, expected="a writeable array", actual="read-only")
            out.append(v)
        for n, i in self._written:
            a = out[i]
            # a C-contiguous array has distinct memory per element by construction
            if isinstance(a, np.ndarray) and not a.flags.c_contiguous and self_overlaps(a):
                raise _fault("RUNTIME_ARG_OVERLAP", f"argument %{n} is written but its elements overlap "
                             "each other", name, expected="distinct memory for every element",
                             actual=f"shape {a.shape}, strides {a.strides}")
        if self._tiles:
            self._check_shared(out)
        return out

    def _check_shared(self, values: list[Any]) -> None:
        """Memory a tile parameter shares with another argument, one of them written, would be
        read and written through two names: backends that keep tiles in registers or stage
        copies would disagree, so it is refused."""
        arrays = [(n, v) for n, v in zip(self.names, values) if isinstance(v, np.ndarray)]
        writes, tiles = self.writes, self._tiles
        for (x, a), (y, b) in itertools.combinations(arrays, 2):
            if (x in writes or y in writes) and (x in tiles or y in tiles) and shares_memory(a, b):
                raise _fault("RUNTIME_ARG_OVERLAP", f"arguments %{x} and %{y} share memory and one of them is "
                             "written", self.kernel.name, expected="separate arrays (a tile parameter shares "
                             "memory with no other argument that either is written)", actual=f"%{x} and %{y} overlap")

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Parameter name -> checked value (``values`` by name)."""
        return dict(zip(self.names, self.values(args, kwargs)))


def bind(kernel: Kernel, args: Sequence[Any], kwargs: Mapping[str, Any],
         writes: Collection[str] | None = None) -> dict[str, Any]:
    """Parameter name -> checked value: arrays for globals and tiles, Python numbers for scalars.
    ``writes``: the kernel's ``written_params``, when the caller keeps them (a walk of the kernel
    per launch otherwise). A backend that launches often keeps a ``Binder`` per kernel instead."""
    return Binder(kernel, writes).bind(args, kwargs)
