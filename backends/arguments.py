"""Binding call arguments to a kernel's parameters, shared by every backend.

Arrays come as numpy arrays or anything with ``__dlpack__`` / ``__array_interface__``; they
are used in place (never converted), so a dtype or shape that differs from the parameter's
type is an error rather than a silent copy whose results would be lost.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..assembler.ir import Kernel, MemRef, TileOp, Value
from ..isa.diagnostics import Location, RuntimeFault
from ..isa.spec import Kind, Role
from ..isa.types import EventType, GlobalType, ScalarType, TileType


def _fault(code: str, msg: str, kernel: str, expected: object = None, actual: object = None) -> RuntimeFault:
    return RuntimeFault(code, msg, location=Location(kernel=kernel), expected=expected, actual=actual)


def as_array(obj: Any) -> np.ndarray | None:
    """A numpy view of an array-like that shares its memory, or None."""
    if isinstance(obj, np.ndarray):
        return obj
    if hasattr(obj, "__dlpack__"):
        try:
            return np.from_dlpack(obj)
        except (TypeError, ValueError, RuntimeError, BufferError):
            return None
    if hasattr(obj, "__array_interface__"):
        return np.asarray(obj)
    return None


def written_params(kernel: Kernel) -> set[str]:
    """Parameters some instruction writes: global tensors (TSTORE destinations, scatters ...)
    and tile parameters used as destinations. These are the run's outputs."""
    params = {p.name for p in kernel.params}
    out: set[str] = set()
    for s in kernel.walk():
        if isinstance(s, TileOp):
            for o in s.instr.operands:
                a = s.args.get(o.name)
                if o.role is Role.IN or a is None:
                    continue
                name = a.base.name if isinstance(a, MemRef) else getattr(a, "name", None)
                if name in params and o.kind in (Kind.GLOBAL, Kind.TILE):
                    out.add(name)
    return out


def _global(p: Value, t: GlobalType, obj: Any, kernel: str, writes: bool) -> np.ndarray:
    a = as_array(obj)
    if a is None:
        raise _fault("RUNTIME_ARG_TYPE", f"argument %{p.name} must be an array", kernel,
                     expected=str(t), actual=type(obj).__name__)
    if a.ndim != t.rank:
        raise _fault("RUNTIME_ARG_SHAPE", f"argument %{p.name} has the wrong rank", kernel,
                     expected=f"rank {t.rank} ({t})", actual=f"shape {a.shape}")
    if a.dtype != t.dtype.np_dtype:
        raise _fault("RUNTIME_ARG_DTYPE", f"argument %{p.name} has the wrong dtype", kernel,
                     expected=t.dtype.name, actual=str(a.dtype))
    for d, (want, got) in enumerate(zip(t.shape, a.shape)):
        if want is not None and want != got:
            raise _fault("RUNTIME_ARG_SHAPE", f"argument %{p.name} has the wrong size in dim {d}", kernel,
                         expected=str(t), actual=f"shape {a.shape}")
    if t.strides is not None:
        got = tuple(s // a.itemsize if s % a.itemsize == 0 else None for s in a.strides)
        for d, (want, have) in enumerate(zip(t.strides, got)):
            if want is not None and want != have:
                raise _fault("RUNTIME_ARG_STRIDES", f"argument %{p.name} has the wrong stride in dim {d}",
                             kernel, expected=f"element strides {t.strides}", actual=f"{got}")
    if writes and not a.flags.writeable:
        raise _fault("RUNTIME_ARG_READONLY", f"argument %{p.name} is written by the kernel but is read-only",
                     kernel, expected="a writeable array", actual="read-only")
    return a


def _scalar(p: Value, t: ScalarType, obj: Any, kernel: str) -> Any:
    if isinstance(obj, np.ndarray) and obj.ndim == 0:
        obj = obj.item()
    elif isinstance(obj, np.generic):
        obj = obj.item()
    ok = isinstance(obj, bool) if t.name == "i1" else (
        isinstance(obj, (int, float)) and not isinstance(obj, bool) if t.is_float else
        isinstance(obj, int) and not isinstance(obj, bool))
    if not ok:
        raise _fault("RUNTIME_ARG_TYPE", f"argument %{p.name} must be a scalar of type {t}", kernel,
                     expected=str(t), actual=repr(obj))
    if t.name == "i1":
        return obj
    if t.is_float:      # rounded to the parameter's type, as a constant of that type is
        try:
            with np.errstate(over="ignore"):
                return float(np.asarray(float(obj), dtype=np.float64).astype(t.dtype.np_dtype))
        except OverflowError:
            raise _fault("RUNTIME_ARG_VALUE", f"argument %{p.name} is out of range for {t}", kernel,
                         expected="a float", actual=repr(obj)) from None
    lo, hi = (-(1 << 63), (1 << 63) - 1) if t.name == "index" else (int(t.dtype.min), int(t.dtype.max))
    if not lo <= obj <= hi:
        raise _fault("RUNTIME_ARG_VALUE", f"argument %{p.name} is out of range for {t}", kernel,
                     expected=f"[{lo}, {hi}]", actual=obj)
    return obj


def _tile(p: Value, t: TileType, obj: Any, kernel: str, writes: bool) -> np.ndarray:
    a = as_array(obj)
    if a is None or a.shape != t.shape or a.dtype != t.dtype.np_dtype:
        raise _fault("RUNTIME_ARG_TYPE", f"argument %{p.name} must be a {t.shape} {t.dtype} array", kernel,
                     expected=str(t), actual=f"{type(obj).__name__} {getattr(a, 'shape', '')} "
                                             f"{getattr(a, 'dtype', '')}".strip())
    if writes and not a.flags.writeable:
        raise _fault("RUNTIME_ARG_READONLY", f"argument %{p.name} is written by the kernel but is read-only",
                     kernel, expected="a writeable array", actual="read-only")
    return a


def bind(kernel: Kernel, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Parameter name -> checked value: arrays for globals and tiles, Python numbers for scalars."""
    params = kernel.params
    if len(args) > len(params):
        raise _fault("RUNTIME_ARG_COUNT", f"@{kernel.name} takes {len(params)} argument(s)", kernel.name,
                     expected=len(params), actual=len(args))
    given: dict[str, Any] = {p.name: a for p, a in zip(params, args)}
    for name, v in kwargs.items():
        if name not in {p.name for p in params}:
            raise _fault("RUNTIME_ARG_UNKNOWN", f"@{kernel.name} has no parameter %{name}", kernel.name,
                         expected=", ".join("%" + p.name for p in params), actual=name)
        if name in given:
            raise _fault("RUNTIME_ARG_DUPLICATE", f"argument %{name} given by position and by name",
                         kernel.name)
        given[name] = v
    writes = written_params(kernel)
    out: dict[str, Any] = {}
    for p in params:
        if p.name not in given:
            raise _fault("RUNTIME_ARG_MISSING", f"missing argument %{p.name}", kernel.name,
                         expected=str(p.type), actual="nothing")
        v, t = given[p.name], p.type
        if isinstance(t, GlobalType):
            out[p.name] = _global(p, t, v, kernel.name, p.name in writes)
        elif isinstance(t, TileType):
            out[p.name] = _tile(p, t, v, kernel.name, p.name in writes)
        elif isinstance(t, ScalarType):
            out[p.name] = _scalar(p, t, v, kernel.name)
        elif isinstance(t, EventType):
            out[p.name] = v
        else:  # pragma: no cover - the parser admits no other parameter types
            raise _fault("RUNTIME_ARG_TYPE", f"parameter %{p.name} has an unsupported type", kernel.name,
                         actual=str(t))
    return out
