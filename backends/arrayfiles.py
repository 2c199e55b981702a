"""Array files of every PTO dtype, as ``pto run --arg`` reads them and reproducers write them.

numpy's ``.npy`` has no type code for ml_dtypes' bf16 and fp8: bf16 is saved as opaque void
(``<V2``) and f8e5m2 as ``<f1``, which ``np.load`` refuses. So an array is saved as a plain
``.npy`` and its PTO dtype goes into the file name, ``NAME.<dtype>.npy`` (``x.bf16.npy``):

* dtypes numpy spells natively (f32, f16, i8..u64, i1 as bool) are stored as themselves;
* bf16, f8e4m3 and f8e5m2 are stored as their raw bits, an unsigned integer array of the
  element's width (``np.save("x.bf16.npy", a.view(np.uint16))``).

Loading a ``.<dtype>.npy`` file checks the stored dtype and views the bits as the named
dtype, so every value (NaN payloads, -0, subnormals) comes back bit-exact. A ``.npy`` without
a dtype in its name loads as numpy saved it.

A strided view into a larger array (a global tensor with non-unit strides) keeps its layout
as ``NAME.<dtype>.npz``: ``parent`` (the memory the view spans, gaps included, stored as
above), ``shape`` and ``strides`` (in elements); it loads as that view over the parent.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..isa import dtypes as dt
from ..isa.diagnostics import PTOError


def _stored(d: dt.DType) -> np.dtype:
    """How an array of ``d`` is stored: as itself when ``.npy`` can spell it, else raw bits."""
    try:
        native = np.dtype(d.np_dtype.str) == d.np_dtype
    except TypeError:
        native = False
    return d.np_dtype if native else np.dtype(f"<u{d.np_dtype.itemsize}")


#: PTO dtype name -> the numpy dtype its ``.<dtype>.npy`` file holds
STORED: dict[str, np.dtype] = {d.name: _stored(d) for d in dt.ALL}


def file_dtype(path: str) -> dt.DType | None:
    """The PTO dtype a file name declares (``x.bf16.npy`` -> bf16), or None."""
    stem, ext = os.path.splitext(path)
    name = os.path.splitext(stem)[1][1:]
    return dt.BY_NAME.get(name) if ext == ".npy" and name else None


def file_name(stem: str, dtype: np.dtype) -> str:
    """``stem.<dtype>.npy`` for an array of this numpy dtype."""
    return f"{stem}.{dt.of_numpy(dtype).name}.npy"


def encode(array: np.ndarray) -> tuple[np.ndarray, dt.DType]:
    """The array as its file stores it (C-contiguous; raw bits where ``.npy`` cannot spell
    the dtype) and the dtype its name must declare."""
    a = np.ascontiguousarray(array)
    try:
        d = dt.of_numpy(a.dtype)
    except KeyError:
        raise PTOError("PTO_ARG", f"no PTO dtype for a numpy {a.dtype} array",
                       expected=dt.names(dt.ALL), actual=str(a.dtype)) from None
    return a.view(STORED[d.name]), d


def decode(stored: np.ndarray, d: dt.DType, path: str) -> np.ndarray:
    """The array a ``.<dtype>.npy`` file holds, viewed as ``d``; PTO_ARG when the stored
    dtype is not the one the name declares."""
    want = STORED[d.name]
    if stored.dtype != want:
        raise PTOError("PTO_ARG", f"{path} is named .{d.name}.npy but holds {stored.dtype} elements",
                       expected=f"{want} ({'raw bits of ' + d.name if want != d.np_dtype else d.name})",
                       actual=str(stored.dtype))
    return stored.view(d.np_dtype)


def load(path: str) -> np.ndarray:
    """An array file: ``.<dtype>.npy`` as that dtype, any other ``.npy`` as numpy saved it,
    ``.<dtype>.npz`` as a strided view."""
    if path.endswith(".npz"):
        return _load_view(path)
    try:
        stored = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, TypeError) as e:
        raise PTOError("PTO_FILE", f"cannot load {path}: {e}") from None
    d = file_dtype(path)
    return decode(stored, d, path) if d is not None else stored


def is_strided(array: np.ndarray) -> bool:
    """A view whose layout a ``.npy`` file would lose (and ``save_view`` can keep)."""
    item = array.itemsize
    return (not array.flags.c_contiguous and array.size > 0
            and all(s >= 0 and s % item == 0 for s in array.strides))


def _bits(array: np.ndarray) -> np.ndarray:
    """The same memory as unsigned integers (as_strided cannot describe ml_dtypes)."""
    return array.view(np.uint8 if array.dtype == np.bool_ else np.dtype(f"u{array.itemsize}"))


def save_view(path: str, view: np.ndarray) -> None:
    """``NAME.<dtype>.npz``: the memory ``view`` spans (from its first element to its last,
    gaps included), its shape and element strides."""
    d = dt.of_numpy(view.dtype)
    item = view.itemsize
    strides = tuple(s // item for s in view.strides)
    span = 1 + sum((n - 1) * s for n, s in zip(view.shape, strides))
    parent = np.lib.stride_tricks.as_strided(_bits(view), (span,), (item,)).copy()
    try:
        np.savez(path, parent=parent.view(STORED[d.name]), shape=np.array(view.shape, np.int64),
                 strides=np.array(strides, np.int64))
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot write {os.fspath(path)}: {e.strerror or e}") from None


def _load_view(path: str) -> np.ndarray:
    d = file_dtype(path[:-len(".npz")] + ".npy")
    try:
        with np.load(path, allow_pickle=False) as z:
            parent = z["parent"]
            shape, strides = tuple(int(n) for n in z["shape"]), tuple(int(s) for s in z["strides"])
    except (OSError, ValueError, EOFError, TypeError, KeyError) as e:
        raise PTOError("PTO_FILE", f"cannot load {path}: {e}") from None
    if d is None:
        raise PTOError("PTO_ARG", f"{path}: a view file names its dtype", expected="NAME.<dtype>.npz", actual=path)
    parent = decode(parent, d, path)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    if parent.ndim != 1 or len(shape) != len(strides) or min(strides, default=0) < 0 or span > parent.size:
        raise PTOError("PTO_ARG", f"{path}: shape {shape} with strides {strides} does not fit its parent",
                       expected=f"a view within {parent.size} elements", actual=f"{span} elements")
    item = parent.itemsize
    raw = np.lib.stride_tricks.as_strided(_bits(parent), shape, tuple(s * item for s in strides))
    return raw.view(d.np_dtype)


def save(path: str, array: Any) -> None:
    """Write ``array`` where ``path`` says, in the encoding above. A dtype that ``.npy``
    cannot spell needs the name to say it (``out.bf16.npy``); otherwise it could not load back."""
    stored, d = encode(np.asarray(array))
    named = file_dtype(path)
    if named is not None and named is not d:
        raise PTOError("PTO_ARG", f"{path} is named .{named.name}.npy for an array of {d.name}",
                       expected=f"NAME.{d.name}.npy", actual=path)
    if named is None and stored.dtype != d.np_dtype:
        raise PTOError("PTO_ARG", f"a {d.name} array is saved as raw bits: name the file NAME.{d.name}.npy",
                       expected=f"NAME.{d.name}.npy", actual=path)
    try:
        np.save(path, stored, allow_pickle=False)
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot write {os.fspath(path)}: {e.strerror or e}") from None
