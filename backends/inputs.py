"""Arguments from the command line: ``name=file.npy`` or ``name=literal``, and random or
zero-filled arrays for parameters not given (``pto run --random``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..assembler.ir import Kernel
from ..isa.diagnostics import PTOError
from . import arrayfiles
from ..isa.types import GlobalType, ScalarType, TileType


def parse_assignment(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise PTOError("PTO_ARG", f"expected NAME=VALUE, got {text!r}", expected="NAME=VALUE", actual=text)
    return name.lstrip("%"), value


def literal(value: str) -> Any:
    """An argument value: a .npy file (``NAME.<dtype>.npy`` for any PTO dtype, see
    ``arrayfiles``), a strided view (``NAME.<dtype>.npz``), true/false, an integer or a float."""
    if value.endswith((".npy", ".npz")):
        return arrayfiles.load(value)
    if value in ("true", "false"):
        return value == "true"
    for conv in (int, float):
        try:
            return conv(value)
        except ValueError:
            pass
    raise PTOError("PTO_ARG", f"cannot read argument value {value!r}",
                   expected="a .npy or .npz path, true/false, an integer or a float", actual=value)


def parse_shape(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        dims = ()
    if not dims or min(dims) < 0:
        raise PTOError("PTO_ARG", f"bad shape {text!r}", expected="e.g. 1024x1024", actual=text)
    return dims


def fill(kernel: Kernel, given: dict[str, Any], shapes: dict[str, tuple[int, ...]],
         seed: int | None) -> dict[str, Any]:
    """Arrays for the array parameters not in ``given``: random from ``seed``, or zeros
    when ``seed`` is None. Scalars must be given."""
    params = [p.name for p in kernel.params]
    unknown = sorted(shapes.keys() - set(params))
    if unknown:
        raise PTOError("PTO_ARG", f"--shape names no parameter of @{kernel.name}: %{unknown[0]}",
                       expected=", ".join(params), actual=", ".join(unknown))
    rng = np.random.default_rng(seed)
    out = dict(given)
    for p in kernel.params:
        if p.name in out:
            continue
        t = p.type
        if isinstance(t, ScalarType):
            raise PTOError("PTO_ARG", f"scalar parameter %{p.name} needs a value: --arg {p.name}=...",
                           expected=str(t), actual="nothing")
        if not isinstance(t, (GlobalType, TileType)):
            continue
        shape = shapes.get(p.name) or (t.shape if isinstance(t, TileType) else None)
        if shape is None and isinstance(t, GlobalType):
            if any(d is None for d in t.shape):
                raise PTOError("PTO_ARG", f"%{p.name} has dynamic dims: give --shape {p.name}=AxB...",
                               expected=str(t), actual="no shape")
            shape = tuple(int(d) for d in t.shape)  # type: ignore[arg-type]
        out[p.name] = _array(tuple(shape), t.dtype.np_dtype, rng if seed is not None else None)
    return out


def _array(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator | None) -> np.ndarray:
    if rng is None:
        return np.zeros(shape, dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def save(path: str, array: Any) -> None:
    """``pto run --out``: the same file encoding ``--arg`` loads."""
    arrayfiles.save(path, array)
