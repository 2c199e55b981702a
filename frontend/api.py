"""The user-facing API: annotations, dtypes, the proxy tensors, ops, tile shapes, loops.

Every op here only checks and converts its arguments, then records the op table's canonical
name through the current Recorder; what an op means lives in frontend/ops.py.
"""
from __future__ import annotations

import builtins
import contextlib
from typing import Any, Iterator, Sequence

import numpy as np

from ..isa import dtypes as dt
from ..isa.diagnostics import FrontendError
from ..isa.dtypes import DType
from .capture import current, here
from .codes import front_error
from .graph import CubeTiles, Dim, Sym, TensorValue

# --------------------------------------------------------------------------------------------
# dtypes

DT_FP32, DT_FP16, DT_BF16 = dt.F32, dt.F16, dt.BF16
DT_FP8E4M3, DT_FP8E5M2 = dt.F8E4M3, dt.F8E5M2
DT_INT8, DT_INT16, DT_INT32, DT_INT64 = dt.I8, dt.I16, dt.I32, dt.I64
DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64 = dt.U8, dt.U16, dt.U32, dt.U64
DT_BOOL = dt.I1

#: every DT_* name the API knows
DTYPES: dict[str, DType] = {k: v for k, v in dict(globals()).items() if k.startswith("DT_")}


class UnknownDType(FrontendError, AttributeError):
    """``pto.DT_NOPE``: a FrontendError that is also the AttributeError ``hasattr`` expects."""


def _loc():  # noqa: ANN202
    loc = here()
    return loc.location() if loc else None


def to_dtype(value: object) -> DType:
    """A DType from a DType, a DT_* or PTO-AS name, or a numpy dtype; FRONT_DTYPE_UNKNOWN else."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value in DTYPES:
            return DTYPES[value]
        try:
            return dt.get(value)
        except KeyError:
            pass
    else:
        try:
            return dt.of_numpy(np.dtype(value))  # type: ignore[call-overload]
        except (TypeError, KeyError):
            pass
    raise front_error("FRONT_DTYPE_UNKNOWN", f"unknown dtype {value!r}", location=_loc(),
                      expected=" ".join(DTYPES), actual=repr(value))


def unknown_dtype(name: str) -> UnknownDType:
    return UnknownDType("FRONT_DTYPE_UNKNOWN", f"openpto.frontend has no dtype {name}", location=_loc(),
                        expected=" ".join(DTYPES), actual=name)


# --------------------------------------------------------------------------------------------
# annotations

class Dynamic:
    """A dimension known only at run time (``pto.DYNAMIC``, or ``pto.dynamic("B")`` to share one
    size between parameters)."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name

    def __repr__(self) -> str:
        return "DYNAMIC" if self.name is None else f"dynamic({self.name!r})"


DYNAMIC = DYN = Dynamic()


def dynamic(name: str) -> Dynamic:
    return Dynamic(name)


class Tensor:
    """A tensor parameter's annotation: ``pto.Tensor((M, N), pto.DT_FP32)``; ``pto.DYNAMIC`` dims
    take their size from each call's array. ``Tensor()`` takes shape and dtype from the array."""

    def __init__(self, shape: Sequence[int | Dynamic] | None = None, dtype: object = None, name: str = "") -> None:
        if shape is not None:
            shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)  # type: ignore[assignment]
            for d in shape:
                ok = isinstance(d, Dynamic) or (isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0)
                if not ok:
                    raise front_error("FRONT_ANNOTATION", "a tensor dimension must be a positive int or "
                                      "pto.DYNAMIC", location=_loc(), expected="int > 0, pto.DYNAMIC, "
                                      "pto.dynamic(name)", actual=repr(d))
            shape = tuple(d if isinstance(d, Dynamic) else int(d) for d in shape)  # type: ignore[union-attr]
        self.shape: tuple[int | Dynamic, ...] | None = shape  # type: ignore[assignment]
        self.dtype: DType | None = None if dtype is None else to_dtype(dtype)
        self.name = name

    def __class_getitem__(cls, item: Any) -> "Tensor":
        """``pto.Tensor[[M, N], pto.DT_FP32]`` is ``pto.Tensor((M, N), pto.DT_FP32)``."""
        if item is Ellipsis:
            return cls()
        shape, *rest = item if isinstance(item, tuple) else (item,)
        return cls(shape, *rest)

    def __repr__(self) -> str:
        return f"Tensor({self.shape}, {self.dtype})"


# --------------------------------------------------------------------------------------------
# proxy tensors

def _tensor_value(x: object) -> TensorValue | None:
    if isinstance(x, TensorProxy):
        return x.value
    if isinstance(x, TensorValue):
        return x
    return None


def _operand(x: object, what: str) -> TensorValue | Sym | int | float:
    current(what)
    t = _tensor_value(x)
    if t is not None:
        return t
    if isinstance(x, Sym):
        return x
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x)
    raise front_error("FRONT_OPERAND", f"{what} cannot take a {type(x).__name__}", location=_loc(),
                      expected="a tensor, an int, a float or a run-time value", actual=repr(x)[:80])


def _tensor(x: object, what: str) -> TensorValue:
    current(what)
    t = _tensor_value(x)
    if t is None:
        raise front_error("FRONT_OPERAND", f"{what} needs a tensor", location=_loc(),
                          expected="a tensor", actual=type(x).__name__)
    return t


def _dim(d: object, what: str, positive: bool = False) -> Dim:
    if isinstance(d, Sym):
        return d
    if isinstance(d, (int, np.integer)) and not isinstance(d, bool) and (not positive or d > 0):
        return int(d)
    raise front_error("FRONT_ANNOTATION" if positive else "FRONT_OPERAND",
                      f"{what} must be {'positive ints' if positive else 'ints'} or run-time values",
                      location=_loc(), expected="int" + (" > 0" if positive else "") + " or a run-time value",
                      actual=repr(d))


def _dims(ds: object, what: str, positive: bool = False) -> tuple[Dim, ...]:
    if isinstance(ds, (int, np.integer, Sym)):
        ds = (ds,)
    if not isinstance(ds, (tuple, list)):
        raise front_error("FRONT_OPERAND", f"{what} must be a list of sizes", location=_loc(),
                          expected="a list or tuple", actual=type(ds).__name__)
    return tuple(_dim(d, what, positive) for d in ds)


def _record(name: str, inputs: Sequence[Any], attrs: dict | None = None, outputs: Sequence[TensorValue] = ()):
    outs = current(f"pto.{name}").record(name, inputs, attrs, outputs, loc=here())
    return outs


def _one(name: str, inputs: Sequence[Any], attrs: dict | None = None) -> "TensorProxy":
    return TensorProxy(_record(name, inputs, attrs)[0])


class TensorProxy:
    """A tensor of the function being captured. Operators record ops; ``x[:] = y`` writes x."""

    __hash__ = object.__hash__

    def __init__(self, value: TensorValue) -> None:
        self.value = value

    # what it is
    @property
    def shape(self) -> tuple[Dim, ...]:
        return tuple(self.value.shape)

    @property
    def dtype(self) -> DType:
        return self.value.dtype

    @property
    def name(self) -> str:
        return self.value.name

    @property
    def ndim(self) -> int:
        return self.value.rank

    dim = ndim

    def __repr__(self) -> str:
        return f"<tensor {self.value.name}: {self.value.type_str()}>"

    # truth values are run-time values
    def __bool__(self) -> bool:
        raise front_error("FRONT_SYMBOLIC_BRANCH", f"the tensor {self.name} has no truth value while the "
                          "program is built", location=_loc(), expected="a condition known at compile time",
                          actual=repr(self), notes=["select elementwise with pto.where(cond, a, b)"])

    def __index__(self) -> int:
        raise front_error("FRONT_SYMBOLIC_BRANCH", f"the tensor {self.name} cannot be used as a Python number",
                          location=_loc(), expected="an int known at compile time", actual=repr(self))

    __int__ = __float__ = __index__  # type: ignore[assignment]

    # arithmetic
    def __add__(self, o): return add(self, o)            # noqa: ANN001, D105, E704
    def __radd__(self, o): return add(o, self)           # noqa: ANN001, D105, E704
    def __sub__(self, o): return sub(self, o)            # noqa: ANN001, D105, E704
    def __rsub__(self, o): return sub(o, self)           # noqa: ANN001, D105, E704
    def __mul__(self, o): return mul(self, o)            # noqa: ANN001, D105, E704
    def __rmul__(self, o): return mul(o, self)           # noqa: ANN001, D105, E704
    def __truediv__(self, o): return div(self, o)        # noqa: ANN001, D105, E704
    def __rtruediv__(self, o): return div(o, self)       # noqa: ANN001, D105, E704
    def __matmul__(self, o): return matmul(self, o)      # noqa: ANN001, D105, E704
    def __rmatmul__(self, o): return matmul(o, self)     # noqa: ANN001, D105, E704
    def __neg__(self): return neg(self)                  # noqa: ANN001, D105, E704
    def __abs__(self): return abs(self)                  # noqa: ANN001, D105, E704
    def __lt__(self, o): return lt(self, o)              # noqa: ANN001, D105, E704
    def __le__(self, o): return le(self, o)              # noqa: ANN001, D105, E704
    def __gt__(self, o): return gt(self, o)              # noqa: ANN001, D105, E704
    def __ge__(self, o): return ge(self, o)              # noqa: ANN001, D105, E704
    def __eq__(self, o): return eq(self, o)              # type: ignore[override]  # noqa: ANN001, D105, E704
    def __ne__(self, o): return ne(self, o)              # type: ignore[override]  # noqa: ANN001, D105, E704

    def __pow__(self, o):  # noqa: ANN001, ANN204
        """``x ** 2`` is ``x * x``; other powers have no single tile instruction."""
        if isinstance(o, (int, np.integer)) and not isinstance(o, bool) and o == 2:
            return mul(self, self)
        _refuse(f"x ** {o!r}", "x * x for a square, pto.sqrt(x), pto.rsqrt(x), pto.reciprocal(x), or "
                "pto.exp(pto.log(x) * p)")

    def __rpow__(self, o):  # noqa: ANN001, ANN204
        _refuse(f"{o!r} ** x", "pto.exp(x * log(base))")

    def __floordiv__(self, o):  # noqa: ANN001, ANN204
        _refuse("x // y", "pto.cast(x / y, dtype, mode='floor') for floats (integer / truncates toward "
                "zero)")

    __rfloordiv__ = __floordiv__

    def __mod__(self, o):  # noqa: ANN001, ANN204
        _refuse("x % y", "x - y * pto.cast(x / y, dtype, mode='floor')")

    __rmod__ = __mod__

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy's ufuncs on a tensor of the function: the ones with a pto op record it
        (``np.exp(x)``, ``2.0 * x`` with a numpy scalar); others are refused naming pto's ops."""
        op = _UFUNCS.get(ufunc.__name__)
        if op is None or method != "__call__" or kwargs:
            _refuse(f"numpy's {ufunc.__name__}{'.' + method if method != '__call__' else ''} on a tensor",
                    "the pto op (pto.exp, pto.add, pto.maximum, ...): " + " ".join(sorted(_UFUNCS)))
        return globals()[op](*inputs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise UnknownAttribute("FRONT_ATTRIBUTE", f"a tensor of the function has no attribute {name!r}",
                               location=_loc(), expected=" ".join(_ATTRIBUTES), actual=name)

    # methods mirroring the functions
    def exp(self): return exp(self)                      # noqa: ANN201, D102, E704
    def log(self): return log(self)                      # noqa: ANN201, D102, E704
    def sqrt(self): return sqrt(self)                    # noqa: ANN201, D102, E704
    def sum(self, dim: int = -1, keepdim: bool = False): return sum(self, dim, keepdim)     # noqa: ANN201, D102, E704
    def amax(self, dim: int = -1, keepdim: bool = False): return amax(self, dim, keepdim)   # noqa: ANN201, D102, E704
    def amin(self, dim: int = -1, keepdim: bool = False): return amin(self, dim, keepdim)   # noqa: ANN201, D102, E704
    def mean(self, dim: int = -1, keepdim: bool = False): return mean(self, dim, keepdim)   # noqa: ANN201, D102, E704
    def cast(self, dtype: object, mode: str = "rint"): return cast(self, dtype, mode)      # noqa: ANN201, D102, E704
    astype = cast

    def reshape(self, *shape: Dim) -> "TensorProxy":
        """``x.reshape(4, 8)`` or ``x.reshape([4, 8])``."""
        one = len(shape) == 1 and isinstance(shape[0], (tuple, list))
        return reshape(self, shape[0] if one else shape)  # type: ignore[arg-type]

    def transpose(self, dim0: int | None = None, dim1: int | None = None) -> "TensorProxy":
        return transpose(self, dim0, dim1)

    def move(self, value: object) -> None:
        """``x.move(y)`` is ``x[:] = y``."""
        self[:] = value

    def view(self, shape: Sequence[Dim], offsets: Sequence[Dim] | None = None,
             valid_shape: Sequence[Dim] | None = None) -> "TensorProxy":
        return view(self, shape, offsets, valid_shape)

    # indexing: slices are views, slice assignment is assemble
    def _window(self, key: object) -> tuple[tuple[Dim, ...], tuple[Dim, ...], tuple[int, ...]]:
        """(offsets, sizes, axes dropped by an int index) of ``self[key]``; negative ints count
        from the end of the axis, as in numpy."""
        items = key if isinstance(key, tuple) else (key,)
        for k in items:
            if not (k is Ellipsis or isinstance(k, (slice, Sym)) or
                    isinstance(k, (int, np.integer)) and not isinstance(k, bool)):
                raise front_error("FRONT_OPERAND", "a tensor index takes ints, run-time values, start:stop "
                                  "slices and one ...", location=_loc(),
                                  expected="x[i], x[a:b, ...] (no arrays, lists, None or booleans)",
                                  actual=type(k).__name__,
                                  notes=["gather rows with several views, or pto.topk for indices of values"])
        if builtins.sum(1 for k in items if k is Ellipsis) > 1:
            raise front_error("FRONT_OPERAND", "at most one ... in an index", location=_loc(),
                              expected="one ...", actual=str(key))
        at = [i for i, k in enumerate(items) if k is Ellipsis]
        if at:
            i = at[0]
            items = items[:i] + (slice(None),) * (self.ndim - len(items) + 1) + items[i + 1:]
        if len(items) > self.ndim:
            raise front_error("FRONT_SHAPE", f"{len(items)} indices for a rank-{self.ndim} tensor",
                              location=_loc(), expected=f"at most {self.ndim}", actual=len(items))
        items = items + (slice(None),) * (self.ndim - len(items))
        offsets: list[Dim] = []
        sizes: list[Dim] = []
        dropped: list[int] = []
        for axis, (k, n) in enumerate(zip(items, self.shape)):
            if isinstance(k, slice):
                if k.step not in (None, 1):
                    raise front_error("FRONT_OPERAND", "a tensor slice takes no step", location=_loc(),
                                      expected="start:stop", actual=str(k))
                start = 0 if k.start is None else _from_end(_dim(k.start, "a slice start"), n)
                stop = n if k.stop is None else _from_end(_dim(k.stop, "a slice stop"), n)
                size = stop - start  # type: ignore[operator]
                if isinstance(size, int) and size < 1:
                    raise front_error("FRONT_BOUNDS", f"the slice {_spell_slice(k)} of axis {axis} is empty",
                                      location=_loc(), expected=f"start < stop within the axis (size {n})",
                                      actual=f"start {start}, stop {stop}")
                offsets.append(start)
                sizes.append(size)
            else:
                offsets.append(_from_end(_dim(k, "an index"), n))
                sizes.append(1)
                dropped.append(axis)
        return tuple(offsets), tuple(sizes), tuple(dropped)

    def __getitem__(self, key: object) -> "TensorProxy":
        offsets, sizes, dropped = self._window(key)
        v = view(self, sizes, offsets)
        if dropped:
            v = reshape(v, [s for i, s in enumerate(sizes) if i not in dropped])
        return v

    def __setitem__(self, key: object, value: object) -> None:
        src = _tensor(value, f"{self.name}[...] = ") if not isinstance(value, (int, float, Sym)) else None
        if key is Ellipsis or (isinstance(key, slice) and key == slice(None)):
            if src is None:
                src = full(self.shape, value, self.dtype).value  # type: ignore[arg-type]
            _record("assemble", (src,), {"offsets": (0,) * self.ndim, "spelling": "move"}, (self.value,))
            return
        offsets, sizes, dropped = self._window(key)
        if src is None:
            kept = [s for i, s in enumerate(sizes) if i not in dropped]
            src = full(kept, value, self.dtype).value  # type: ignore[arg-type]
        if dropped:
            src = reshape(src, sizes).value
        _record("assemble", (src,), {"offsets": offsets}, (self.value,))


class UnknownAttribute(FrontendError, AttributeError):
    """``x.foo`` on a tensor proxy: a FrontendError that is also what ``hasattr`` expects."""


#: what a tensor proxy offers (FRONT_ATTRIBUTE lists it)
_ATTRIBUTES = ("shape", "dtype", "name", "ndim", "dim", "exp", "log", "sqrt", "sum", "amax", "amin",
               "mean", "cast", "astype", "reshape", "transpose", "move", "view")

#: numpy ufunc name -> the function of this module that records it
_UFUNCS = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div",
           "maximum": "maximum", "minimum": "minimum", "exp": "exp", "log": "log", "sqrt": "sqrt",
           "absolute": "abs", "negative": "neg", "reciprocal": "reciprocal", "equal": "eq",
           "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
           "greater_equal": "ge", "matmul": "matmul"}


def _refuse(what: str, instead: str) -> None:
    raise front_error("FRONT_UNSUPPORTED", f"{what} has no tensor op", location=_loc(),
                      expected=instead, actual=what)


def _from_end(i: Dim, n: Dim) -> Dim:
    """numpy's negative index: a literal -k on an axis of size n is n - k (n may be run-time)."""
    return n + i if isinstance(i, int) and i < 0 else i  # type: ignore[operator]


def _spell_slice(k: slice) -> str:
    return f"{'' if k.start is None else k.start}:{'' if k.stop is None else k.stop}"


def _wrap(outs: Sequence[TensorValue]) -> Any:
    return TensorProxy(outs[0]) if len(outs) == 1 else tuple(TensorProxy(o) for o in outs)


# --------------------------------------------------------------------------------------------
# elementwise ops

def _binary(name: str):  # noqa: ANN202
    def op(a: object, b: object) -> TensorProxy:
        return _one(name, (_operand(a, f"pto.{name}"), _operand(b, f"pto.{name}")))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise {name} of two tensors, or of a tensor and a scalar (either side); broadcasts."
    return op


def _unary(name: str):  # noqa: ANN202
    def op(x: object) -> TensorProxy:
        return _one(name, (_tensor(x, f"pto.{name}"),))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise {name}."
    return op


add, sub, mul, div = _binary("add"), _binary("sub"), _binary("mul"), _binary("div")
maximum, minimum = _binary("maximum"), _binary("minimum")
eq, ne, lt, le, gt, ge = (_binary(n) for n in ("eq", "ne", "lt", "le", "gt", "ge"))
exp, log, sqrt, rsqrt = _unary("exp"), _unary("log"), _unary("sqrt"), _unary("rsqrt")
abs, neg, relu, reciprocal = _unary("abs"), _unary("neg"), _unary("relu"), _unary("reciprocal")  # noqa: A001


def where(cond: object, a: object, b: object) -> TensorProxy:
    """``a`` where ``cond`` (an i1 tensor) is true, else ``b``; broadcasts; a or b may be scalars."""
    return _one("where", (_tensor(cond, "pto.where's condition"), _operand(a, "pto.where"),
                          _operand(b, "pto.where")))


# --------------------------------------------------------------------------------------------
# reductions

def _axis(x: TensorValue, dim: object) -> int:
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise front_error("FRONT_AXIS", "an axis must be an int", location=_loc(), expected="an int",
                          actual=repr(dim))
    d = int(dim)
    return d + x.rank if -x.rank <= d < 0 else d


def _reduce(name: str):  # noqa: ANN202
    def op(x: object, dim: int = -1, keepdim: bool = False) -> TensorProxy:
        t = _tensor(x, f"pto.{name}")
        return _one(name, (t,), {"axis": _axis(t, dim), "keepdim": bool(keepdim)})
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"{name} along one axis (negative counts from the end); keepdim keeps it as size 1."
    return op


sum, amax, amin, mean = _reduce("sum"), _reduce("amax"), _reduce("amin"), _reduce("mean")  # noqa: A001


def row_max_single(x: object) -> TensorProxy:
    """The maximum of each row (last axis), kept as size 1: amax(x, -1, True)."""
    return amax(x, -1, True)


def row_sum_single(x: object) -> TensorProxy:
    """The sum of each row (last axis), kept as size 1: sum(x, -1, True)."""
    return sum(x, -1, True)


def row_min_single(x: object) -> TensorProxy:
    """The minimum of each row (last axis), kept as size 1: amin(x, -1, True)."""
    return amin(x, -1, True)


# --------------------------------------------------------------------------------------------
# conversion, matmul, layout

def cast(x: object, dtype: object, mode: str = "rint") -> TensorProxy:
    """Convert to ``dtype``; floats become integers by ``mode`` (rint, round, floor, ceil, trunc),
    saturating."""
    return _one("cast", (_tensor(x, "pto.cast"),), {"dtype": to_dtype(dtype), "mode": mode})


def matmul(a: object, b: object, out_dtype: object = None, *, a_trans: bool = False,
           b_trans: bool = False) -> TensorProxy:
    """``a @ b`` on the cube; the result is f32 (i32 for i8 inputs) unless ``out_dtype`` says."""
    attrs = {"out_dtype": None if out_dtype is None else to_dtype(out_dtype),
             "a_trans": bool(a_trans), "b_trans": bool(b_trans)}
    return _one("matmul", (_tensor(a, "pto.matmul"), _tensor(b, "pto.matmul")), attrs)


def transpose(x: object, dim0: int | None = None, dim1: int | None = None) -> TensorProxy:
    """Swap two axes (the last two by default)."""
    t = _tensor(x, "pto.transpose")
    a = _axis(t, -2 if dim0 is None else dim0)
    b = _axis(t, -1 if dim1 is None else dim1)
    perm = list(range(t.rank))
    if 0 <= a < t.rank and 0 <= b < t.rank:
        perm[a], perm[b] = perm[b], perm[a]
    else:
        perm = [a, b]
    return _one("transpose", (t,), {"perm": tuple(perm)})


def permute(x: object, perm: Sequence[int]) -> TensorProxy:
    """Reorder the axes: result axis i is input axis perm[i]."""
    t = _tensor(x, "pto.permute")
    return _one("transpose", (t,), {"perm": tuple(_axis(t, p) for p in perm)})


def reshape(x: object, shape: Sequence[Dim]) -> TensorProxy:
    """The same elements (row-major) in another shape; one -1 takes what is left of a static count."""
    t = _tensor(x, "pto.reshape")
    dims = list(shape) if isinstance(shape, (tuple, list)) else [shape]
    if dims.count(-1) == 1 and t.is_static() and all(isinstance(d, int) for d in dims):
        known = int(np.prod([d for d in dims if d != -1]))
        total = int(np.prod(t.shape))
        if known > 0 and total % known == 0:
            dims[dims.index(-1)] = total // known
    return _one("reshape", (t,), {"shape": _dims(dims, "a reshape's sizes", positive=True)})


def view(x: object, shape: Sequence[Dim], offsets: Sequence[Dim] | None = None,
         valid_shape: Sequence[Dim] | None = None) -> TensorProxy:
    """The window ``shape`` at ``offsets`` of ``x`` (writes into it reach ``x``); ``valid_shape``:
    its run-time extent when only part of the window is there (a partial tail block)."""
    t = _tensor(x, "pto.view")
    s = _dims(shape, "a view's shape", positive=True)
    attrs = {"shape": s, "offsets": _dims(offsets if offsets is not None else (0,) * len(s), "a view's offsets"),
             "valid_shape": None if valid_shape is None else _dims(valid_shape, "a view's valid shape")}
    return _one("view", (t,), attrs)


def assemble(src: object, offsets: Sequence[Dim], dst: object) -> None:
    """Write ``src`` into ``dst`` at ``offsets`` (``dst`` is changed in place)."""
    s, d = _tensor(src, "pto.assemble"), _tensor(dst, "pto.assemble's destination")
    _record("assemble", (s,), {"offsets": _dims(offsets, "assemble's offsets")}, (d,))


def topk(x: object, k: int, dim: int = -1, largest: bool = True) -> tuple[TensorProxy, TensorProxy]:
    """The k largest (or smallest) values along ``dim`` in order, and their i32 indices."""
    t = _tensor(x, "pto.topk")
    return _wrap(_record("topk", (t,), {"k": k, "axis": _axis(t, dim), "largest": bool(largest)}))


def gather_rows(table: object, index: object) -> TensorProxy:
    """Rows of a 2-D ``table`` picked by an i32 ``index`` ([R] or [1, R]): result row i is table
    row index[i], an index outside the table reads zeros. A paged cache is read this way: its
    blocks as rows, the block table as the index (one MGATHER per row block)."""
    return _one("gather_rows", (_tensor(table, "pto.gather_rows"), _tensor(index, "pto.gather_rows' index")))


# --------------------------------------------------------------------------------------------
# new tensors

def full(shape: Sequence[Dim], value: int | float, dtype: object = DT_FP32) -> TensorProxy:
    """A tensor of ``shape`` with every element ``value``."""
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise front_error("FRONT_OPERAND", "pto.full takes a number", location=_loc(),
                          expected="an int or float", actual=type(value).__name__)
    v = value.item() if isinstance(value, np.generic) else value
    return _one("full", (), {"shape": _dims(shape, "a tensor's shape", positive=True), "value": v,
                             "dtype": to_dtype(dtype)})


def arange(stop: Dim) -> TensorProxy:
    """The 1-D i32 tensor 0, 1, ..., stop - 1 (``stop`` static or run-time): positions to compare
    with run-time lengths."""
    return _one("arange", (), {"stop": _dim(stop, "arange's stop", positive=True)})


def zeros(shape: Sequence[Dim], dtype: object = DT_FP32) -> TensorProxy:
    return full(shape, 0, dtype)


def ones(shape: Sequence[Dim], dtype: object = DT_FP32) -> TensorProxy:
    return full(shape, 1, dtype)


def tensor(shape: Sequence[Dim], dtype: object = DT_FP32, name: str = "") -> TensorProxy:
    """A local tensor of the function: no value until written (``t[:] = x``, ``pto.assemble``)."""
    rec = current("pto.tensor")
    loc = here()
    value = rec.new_tensor(name or "local", _dims(shape, "a tensor's shape", positive=True), to_dtype(dtype),
                           "local", loc)
    return TensorProxy(value)


# --------------------------------------------------------------------------------------------
# run-time scalars

def symbolic_scalar(value: int | Sym) -> Sym:
    """A run-time integer; from an int, a constant that still folds (``b / symbolic_scalar(1)``)."""
    if isinstance(value, Sym):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return Sym.const(int(value))
    raise front_error("FRONT_OPERAND", "symbolic_scalar takes an int or a run-time value", location=_loc(),
                      expected="int", actual=repr(value))


def min(a: Dim, b: Dim) -> Dim:  # noqa: A001
    """The smaller of two run-time integers (Python's min would need a truth value)."""
    return a.min(b) if isinstance(a, Sym) else b.min(a) if isinstance(b, Sym) else builtins.min(a, b)


def max(a: Dim, b: Dim) -> Dim:  # noqa: A001
    """The larger of two run-time integers."""
    return a.max(b) if isinstance(a, Sym) else b.max(a) if isinstance(b, Sym) else builtins.max(a, b)


# --------------------------------------------------------------------------------------------
# tile shapes and labels: the state in force when an op is recorded

def _tile_sizes(dims: Sequence[object]) -> tuple[int, ...]:
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    if not dims or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0 for d in dims):
        raise front_error("FRONT_TILE_SHAPE", "tile sizes must be positive ints", location=_loc(),
                          expected="one positive int per axis", actual=list(dims))
    return tuple(int(d) for d in dims)  # type: ignore[arg-type]


def set_vec_tile_shapes(*dims: int) -> None:
    """Tile sizes, one per axis, for the vector ops recorded after this call."""
    rec = current("pto.set_vec_tile_shapes")
    rec.vec, rec.vec_loc = _tile_sizes(dims), here()


def get_vec_tile_shapes() -> tuple[int, ...] | None:
    return current("pto.get_vec_tile_shapes").vec


def _pair(v: object, axis: str) -> tuple[int, int]:
    pair = (v, v) if isinstance(v, (int, np.integer)) else tuple(v) if isinstance(v, (tuple, list)) else ()
    if len(pair) != 2 or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x > 0
                                 for x in pair):
        raise front_error("FRONT_TILE_SHAPE", f"the cube tile for {axis} must be [L0, L1] positive ints",
                          location=_loc(), expected="[L0, L1] or one int", actual=repr(v))
    return int(pair[0]), int(pair[1])  # type: ignore[arg-type]


def set_cube_tile_shapes(m: object, k: object, n: object, enable_split_k: bool = False) -> None:
    """(L0, L1) tile sizes of the m, k and n axes for the matmuls recorded after this call."""
    rec = current("pto.set_cube_tile_shapes")
    rec.cube, rec.cube_loc = CubeTiles(_pair(m, "m"), _pair(k, "k"), _pair(n, "n"), bool(enable_split_k)), here()


def get_cube_tile_shapes() -> CubeTiles | None:
    return current("pto.get_cube_tile_shapes").cube


@contextlib.contextmanager
def vec_tile_shapes(*dims: int) -> Iterator[None]:
    """``with pto.vec_tile_shapes(32, 32):`` — these tiles inside the block, the previous after."""
    rec = current("pto.vec_tile_shapes")
    saved = rec.vec, rec.vec_loc
    rec.vec, rec.vec_loc = _tile_sizes(dims), here()
    try:
        yield
    finally:
        rec.vec, rec.vec_loc = saved


@contextlib.contextmanager
def cube_tile_shapes(m: object, k: object, n: object, enable_split_k: bool = False) -> Iterator[None]:
    rec = current("pto.cube_tile_shapes")
    saved = rec.cube, rec.cube_loc
    rec.cube, rec.cube_loc = CubeTiles(_pair(m, "m"), _pair(k, "k"), _pair(n, "n"), bool(enable_split_k)), here()
    try:
        yield
    finally:
        rec.cube, rec.cube_loc = saved


def set_semantic_label(label: str | None) -> None:
    """A name for the ops recorded after this call (None: none); it reaches kernel names."""
    if label is not None and not isinstance(label, str):
        raise front_error("FRONT_OPERAND", "a semantic label is a string", location=_loc(),
                          expected="str or None", actual=repr(label))
    current("pto.set_semantic_label").label = label


@contextlib.contextmanager
def semantic_label(label: str) -> Iterator[None]:
    rec = current("pto.semantic_label")
    saved = rec.label
    set_semantic_label(label)
    try:
        yield
    finally:
        rec.label = saved


# --------------------------------------------------------------------------------------------
# structure: pto.loop and pto.function

def _bound(v: object, what: str) -> Dim:
    if isinstance(v, Sym) or (isinstance(v, (int, np.integer)) and not isinstance(v, bool)):
        return v if isinstance(v, Sym) else int(v)
    raise front_error("FRONT_LOOP", f"a loop {what} must be an int or a run-time value", location=_loc(),
                      expected="int or run-time value", actual=repr(v))


def loop(start: object, stop: object = None, step: object = 1, name: str | None = None,
         idx_name: str | None = None, **unsupported: object) -> Iterator[Sym]:
    """``for i in pto.loop(start, stop, step)``: a run-time loop; the body is captured once, with
    ``i`` a run-time index (``pto.loop(stop)`` counts from 0). PyPTO's scheduling keywords
    (unroll_list, parallel, ...) are refused rather than ignored."""
    if unsupported:
        raise front_error("FRONT_LOOP", f"pto.loop does not take {', '.join(unsupported)}", location=_loc(),
                          expected="start, stop, step, name, idx_name", actual=", ".join(unsupported))
    if stop is None:
        start, stop = 0, start
    rec = current("pto.loop")
    loc = here()
    b = (_bound(start, "start"), _bound(stop, "stop"), _bound(step, "step"))
    if isinstance(b[2], int) and b[2] <= 0:
        raise front_error("FRONT_LOOP", "a loop step must be positive", location=loc.location() if loc else None,
                          expected="step > 0", actual=b[2])
    return _loop_iter(rec, b, name, idx_name, loc)


def _loop_iter(rec, bounds, name, idx_name, loc) -> Iterator[Sym]:  # noqa: ANN001
    with rec.loop(*bounds, name, idx_name, loc) as index:
        yield index


@contextlib.contextmanager
def function(name: str, inputs: Sequence[object] = (), outputs: Sequence[object] = ()) -> Iterator[None]:
    """``with pto.function("NAME", [ins], [outs]):`` names the function and declares which
    parameters it reads and writes (a declared output it never writes is an error)."""
    rec = current("pto.function")
    loc = here()
    if rec.function_scope is not None:
        raise front_error("FRONT_FUNCTION", "one pto.function per @jit function",
                          location=loc.location() if loc else None, expected="one pto.function block",
                          actual=f"another one at {rec.function_scope}")
    params = {p.tensor.id for p in rec.fn.params if p.tensor is not None}
    for what, group in (("inputs", inputs), ("outputs", outputs)):
        for t in group:
            v = _tensor_value(t)
            if v is None or v.id not in params:
                raise front_error("FRONT_FUNCTION", f"pto.function's {what} must be parameters of the function",
                                  location=loc.location() if loc else None, expected="parameter tensors",
                                  actual=repr(t)[:80])
    if not isinstance(name, str) or not name:
        raise front_error("FRONT_FUNCTION", "pto.function needs a name", location=loc.location() if loc else None,
                          expected="a non-empty string", actual=repr(name))
    rec.fn.name = name
    rec.function_scope = loc
    rec.declared_outputs = [_tensor_value(t) for t in outputs]  # type: ignore[misc]
    rec.function_open = True
    try:
        yield
    finally:
        rec.function_open = False
