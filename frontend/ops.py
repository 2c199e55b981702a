"""The op table: every op the tensor graph can hold, by its canonical name.

Each entry says what kind of op it is (the pipeline keys its tiling on ``kind``), how many
operands it takes, which element types, how its result shapes and dtypes follow from its
operands and attributes, and what it computes on numpy arrays (the tensor-graph interpreter
runs exactly these functions; it is the oracle every later stage is checked against).

Rules see the operands as recorded (``TensorValue``, ``Sym``, ``int`` or ``float``); ops that
write into an existing tensor (``assemble``) see their destination after their inputs. Rules
raise FrontendError without a location: capture puts the user's line on it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..isa import dtypes as dt
from ..isa.dtypes import DType
from .codes import front_error
from .graph import Dim, Operand, Sym, TensorValue, dim_str, sym_binop

Shape = tuple[Dim, ...]
ShapeRule = Callable[[Sequence[Operand], dict], tuple[Shape, ...]]
DTypeRule = Callable[[Sequence[Operand], dict], tuple[DType, ...]]
#: numpy meaning: (operand values, attrs with run-time values filled in, result dtypes) -> results
Semantics = Callable[[list, dict, tuple[DType, ...]], tuple[np.ndarray, ...]]

#: every kind the table uses
KINDS = ("binary", "unary", "compare", "select", "reduce", "cast", "matmul", "transpose",
         "reshape", "view", "assemble", "topk", "full", "gather")

NUMERIC: tuple[DType, ...] = dt.FLOATS + dt.INTS
SIGNED: tuple[DType, ...] = dt.FLOATS + (dt.I8, dt.I16, dt.I32, dt.I64)
ANY: tuple[DType, ...] = dt.STORABLE
MATMUL_IN: tuple[DType, ...] = dt.FLOATS + (dt.I8,)


@dataclass(frozen=True)
class OpSpec:
    """One op of the tensor graph. ``tiles``: which tile shapes expand it ("vec", "cube" or None
    for data movement the pipeline places itself); ``writes``: it writes its ``outputs`` in place
    instead of making new tensors."""

    name: str
    kind: str
    arity: int
    dtypes: tuple[DType, ...]
    shape: ShapeRule
    dtype: DTypeRule
    numpy: Semantics
    doc: str
    tiles: str | None = "vec"
    writes: bool = False
    results: int = 1


# --------------------------------------------------------------------------------------------
# shapes

def same_dim(a: Dim, b: Dim) -> bool:
    """Known equal: equal ints, or the same run-time expression."""
    if isinstance(a, Sym) and a.op == "const":
        a = a.args[0]  # type: ignore[assignment]
    if isinstance(b, Sym) and b.op == "const":
        b = b.args[0]  # type: ignore[assignment]
    if isinstance(a, Sym) and isinstance(b, Sym):
        return a.key() == b.key()
    if isinstance(a, Sym) or isinstance(b, Sym):
        return False
    return int(a) == int(b)


def dynamic_note(a: Sequence[Dim], b: Sequence[Dim]) -> list[str]:
    """A hint when two different run-time sizes meet where one size is needed."""
    pairs = [(x, y) for x, y in zip(reversed(tuple(a)), reversed(tuple(b)))
             if isinstance(x, Sym) and isinstance(y, Sym) and not same_dim(x, y)]
    if not pairs:
        return []
    x, y = pairs[0]
    return [f"{x} and {y} are different run-time sizes; if they are always equal, annotate both axes "
            f"with one name, e.g. pto.dynamic(\"B\")"]


def shape_str(shape: Sequence[Dim]) -> str:
    return "[" + ", ".join(dim_str(d) for d in shape) + "]"


def broadcast(shapes: Sequence[Shape]) -> Shape:
    """numpy's broadcasting over Dims: right-aligned, each axis equal or 1."""
    rank = max(len(s) for s in shapes)
    out: list[Dim] = []
    for axis in range(rank):
        pick: Dim = 1
        for s in shapes:
            i = axis - rank + len(s)
            if i < 0 or same_dim(s[i], 1):
                continue
            if same_dim(pick, 1):
                pick = s[i]
            elif not same_dim(pick, s[i]):
                raise front_error("FRONT_BROADCAST", "operand shapes do not broadcast together",
                                  expected="on each axis (from the right) equal sizes or 1",
                                  actual=" and ".join(shape_str(x) for x in shapes),
                                  notes=["a run-time dimension broadcasts only with itself or 1"]
                                  + dynamic_note((pick,), (s[i],)))
        out.append(pick)
    return tuple(out)


def numel(shape: Sequence[Dim]) -> tuple[int, tuple]:
    """(product of the known dims, sorted keys of the run-time ones): equal pairs are equal counts.
    A run-time product is split into its factors, so [T * 4, 32] counts as many as [T, 4, 32]."""
    known, syms = 1, []
    todo = list(shape)
    while todo:
        d = todo.pop()
        if isinstance(d, Sym) and d.op == "mul":
            todo.extend(d.args)
        elif isinstance(d, Sym) and d.op != "const":
            syms.append(repr(d.key()))
        else:
            known *= int(d.args[0]) if isinstance(d, Sym) else int(d)
    return known, tuple(sorted(syms))


def _tensors(ops: Sequence[Operand]) -> list[TensorValue]:
    return [o for o in ops if isinstance(o, TensorValue)]


def _first(ops: Sequence[Operand]) -> TensorValue:
    return _tensors(ops)[0]


def _check_axis(axis: int, rank: int, what: str) -> None:
    if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < rank:
        raise front_error("FRONT_AXIS", f"{what} axis out of range", expected=f"an axis in [-{rank}, {rank})",
                          actual=axis)


def _window_fits(offsets: Sequence[Dim], window: Sequence[Dim], shape: Sequence[Dim], what: str) -> None:
    """A static check: every known offset + size must lie inside the known size."""
    for axis, (o, w, s) in enumerate(zip(offsets, window, shape)):
        if all(isinstance(v, int) for v in (o, w, s)) and (o < 0 or o + w > s):  # type: ignore[operator]
            raise front_error("FRONT_BOUNDS", f"the {what} window leaves the tensor on axis {axis}",
                              expected=f"0 <= offset and offset + size <= {s}",
                              actual=f"offset {o}, size {w}")


# --------------------------------------------------------------------------------------------
# dtypes

def _dtype_in(d: DType, allowed: Sequence[DType], op: str) -> None:
    if d not in allowed:
        raise front_error("FRONT_DTYPE", f"{op} does not take {d} tensors",
                          expected=dt.names(allowed), actual=d.name)


def _same_dtype(ops: Sequence[Operand], op: str, allowed: Sequence[DType]) -> DType:
    """Every tensor operand of one dtype in ``allowed``; scalars must fit it."""
    tensors = _tensors(ops)
    if not tensors:
        raise front_error("FRONT_OPERAND", f"{op} needs at least one tensor operand",
                          expected="a tensor", actual=", ".join(type(o).__name__ for o in ops))
    d = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype != d:
            raise front_error("FRONT_DTYPE", f"{op} of tensors with different element types",
                              expected=f"{d} and {d}", actual=f"{d} and {t.dtype}",
                              notes=[f"convert one first: pto.cast({t.name}, pto.DT_...)"])
    _dtype_in(d, allowed, op)
    for o in ops:
        if isinstance(o, (int, float)):
            scalar_fits(o, d, op)
    return d


def scalar_fits(v: int | float, d: DType, op: str) -> None:
    """A scalar an integer (or i1) dtype holds exactly: integral and inside its range. Refused
    rather than wrapped: ``i8 + 300`` meaning ``i8 + 44`` would be a silent surprise."""
    if d.is_float:
        return
    integral = isinstance(v, int) or float(v).is_integer()
    if not integral or not int(d.min) <= int(v) <= int(d.max):
        raise front_error("FRONT_DTYPE", f"{op}: the scalar {v} does not fit the tensor's {d}",
                          expected=f"an integral scalar in [{int(d.min)}, {int(d.max)}] for {d}",
                          actual=v, notes=["a tensor-scalar op keeps the tensor's dtype; cast the tensor "
                                           "to a wider type first"])


# --------------------------------------------------------------------------------------------
# numpy meaning: floats compute in float64 and round once to the result type; integers
# compute in 64 bits and wrap into it (two's complement)

def wide(x: object, d: DType) -> np.ndarray:
    if d.is_float:
        return np.asarray(x, dtype=np.float64)
    if d.kind == "bool":
        return np.asarray(x, dtype=np.bool_)
    return np.asarray(x).astype(np.uint64 if d == dt.U64 else np.int64)


def narrow(x: np.ndarray, d: DType) -> np.ndarray:
    return np.asarray(x).astype(d.np_dtype)


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Truncating toward zero, x / 0 = -1 (all ones): what the ISA's TDIV does with integers."""
    a, b = np.broadcast_arrays(a, b)
    zero = b == 0
    safe = np.where(zero, 1, b)
    q = (np.abs(a) // np.abs(safe)) * (np.sign(a) * np.sign(safe))
    return np.where(zero, -1, q)


_INT_FN = {"div": _int_div}


def _binary_sem(f: Callable) -> Semantics:
    def run(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
        d = outs[0]
        with np.errstate(all="ignore"):
            return (narrow(f(*(wide(a, d) for a in args)), d),)
    return run


def _compare_sem(f: Callable) -> Semantics:
    def run(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
        d = next(dt.of_numpy(a.dtype) for a in args if isinstance(a, np.ndarray))
        return (np.asarray(f(*(wide(a, d) for a in args)), dtype=np.bool_),)
    return run


def _unary_sem(f: Callable) -> Semantics:
    def run(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
        d = outs[0]
        with np.errstate(all="ignore"):
            return (narrow(f(wide(args[0], d)), d),)
    return run


def _elementwise_shape(ops: Sequence[Operand], attrs: dict) -> tuple[Shape, ...]:
    return (broadcast([t.shape for t in _tensors(ops)]),)


def _dtype_rule(allowed: Sequence[DType], name: str, result: DType | None = None) -> DTypeRule:
    def rule(ops: Sequence[Operand], attrs: dict) -> tuple[DType, ...]:
        d = _same_dtype(ops, name, allowed)
        return (result or d,)
    return rule


def _float_or_int(ff: Callable, fi: Callable) -> Callable:
    def f(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return ff(a, b) if a.dtype.kind == "f" else fi(a, b)
    return f


_BINARY = {
    "add": (np.add, "a + b"), "sub": (np.subtract, "a - b"), "mul": (np.multiply, "a * b"),
    "div": (_float_or_int(np.divide, _int_div), "a / b (integers truncate toward zero, x / 0 = -1)"),
    "maximum": (np.maximum, "the larger of a and b (NaN if either is NaN)"),
    "minimum": (np.minimum, "the smaller of a and b (NaN if either is NaN)"),
}
_UNARY = {
    "exp": (np.exp, dt.FLOATS, "e ** x"), "log": (np.log, dt.FLOATS, "natural logarithm"),
    "sqrt": (np.sqrt, dt.FLOATS, "square root"),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), dt.FLOATS, "1 / sqrt(x)"),
    "reciprocal": (lambda x: 1.0 / x, dt.FLOATS, "1 / x"),
    "abs": (np.abs, SIGNED, "|x| (integers wrap: abs(MIN) = MIN)"),
    "neg": (np.negative, SIGNED, "-x"),
    "relu": (lambda x: np.where(x > 0, x, np.zeros_like(x)) if x.dtype.kind != "f"
             else np.where(np.isnan(x) | (x > 0), x, 0.0), SIGNED, "max(x, 0), NaN stays NaN"),
}
_COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}


# --------------------------------------------------------------------------------------------
# select

def _where_dtype(ops: Sequence[Operand], attrs: dict) -> tuple[DType, ...]:
    cond = ops[0]
    if not isinstance(cond, TensorValue) or cond.dtype != dt.I1:
        raise front_error("FRONT_DTYPE", "where's condition must be an i1 (boolean) tensor",
                          expected="an i1 tensor (a comparison's result)",
                          actual=cond.dtype.name if isinstance(cond, TensorValue) else type(cond).__name__)
    return (_same_dtype(ops[1:], "where", ANY),)


def _where_sem(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
    d = outs[0]
    return (narrow(np.where(args[0], wide(args[1], d), wide(args[2], d)), d),)


# --------------------------------------------------------------------------------------------
# reductions: attrs axis (non-negative), keepdim

def _reduce_shape(ops: Sequence[Operand], attrs: dict) -> tuple[Shape, ...]:
    x = _first(ops)
    axis = attrs["axis"]
    _check_axis(axis, x.rank, "reduction")
    shape = list(x.shape)
    if attrs.get("keepdim", False):
        shape[axis] = 1
    else:
        del shape[axis]
    return (tuple(shape),)


def _reduce_sem(f: Callable) -> Semantics:
    def run(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
        d = outs[0]
        with np.errstate(all="ignore"):
            r = f(wide(args[0], d), axis=attrs["axis"], keepdims=bool(attrs.get("keepdim", False)))
        return (narrow(r, d),)
    return run


_REDUCE = {"sum": (np.sum, NUMERIC, "sum"), "amax": (np.max, NUMERIC, "maximum (NaN if any is NaN)"),
           "amin": (np.min, NUMERIC, "minimum (NaN if any is NaN)"), "mean": (np.mean, dt.FLOATS, "mean")}


# --------------------------------------------------------------------------------------------
# cast: attrs dtype, mode (how floats become integers)

CAST_DTYPES: tuple[DType, ...] = dt.FLOATS + dt.FP8 + dt.INTS + (dt.I1,)
CAST_MODES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "rint": np.rint, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
}


def _cast_dtype(ops: Sequence[Operand], attrs: dict) -> tuple[DType, ...]:
    x = _first(ops)
    _dtype_in(x.dtype, CAST_DTYPES, "cast")
    _dtype_in(attrs["dtype"], CAST_DTYPES, "cast")
    if attrs.get("mode", "rint") not in CAST_MODES:
        raise front_error("FRONT_OPERAND", "unknown cast mode", expected=" ".join(CAST_MODES),
                          actual=attrs.get("mode"))
    return (attrs["dtype"],)


def _cast_sem(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
    x, d = args[0], outs[0]
    src = dt.of_numpy(x.dtype)
    if d.kind == "bool":
        return (np.asarray(x) != 0,)
    if d.is_float or not src.is_float:
        if d.is_float:
            return (narrow(np.asarray(x, dtype=np.float64) if src.is_float else x, d),)
        return (narrow(wide(x, src), d),)           # integer (or i1) -> integer: wraps
    with np.errstate(all="ignore"):
        v = CAST_MODES[attrs.get("mode", "rint")](np.asarray(x, dtype=np.float64))
        v = np.clip(np.nan_to_num(v, nan=0.0), float(d.min), float(d.max))
    return (v.astype(d.np_dtype),)


# --------------------------------------------------------------------------------------------
# matmul: attrs out_dtype, a_trans, b_trans

def accumulator(d: DType) -> DType:
    """What a matmul of ``d`` inputs produces unless told otherwise: the cube's accumulator."""
    return dt.F32 if d.is_float else dt.I32


def _mk(x: TensorValue, trans: bool) -> tuple[Dim, Dim]:
    a, b = x.shape[-2], x.shape[-1]
    return (b, a) if trans else (a, b)


def _matmul_shape(ops: Sequence[Operand], attrs: dict) -> tuple[Shape, ...]:
    a, b = ops
    for t in (a, b):
        if not isinstance(t, TensorValue):
            raise front_error("FRONT_OPERAND", "matmul multiplies two tensors", expected="tensors",
                              actual=type(t).__name__)
    if a.rank < 2 or b.rank < 2:
        raise front_error("FRONT_SHAPE", "matmul takes two tensors of rank 2 or more",
                          expected="[..., m, k] @ [..., k, n]",
                          actual=f"{shape_str(a.shape)} @ {shape_str(b.shape)}")
    m, k = _mk(a, attrs.get("a_trans", False))
    k2, n = _mk(b, attrs.get("b_trans", False))
    if not same_dim(k, k2):
        raise front_error("FRONT_SHAPE", "matmul operands do not agree",
                          expected="equal inner (k) dimensions",
                          actual=f"{shape_str(a.shape)} @ {shape_str(b.shape)}"
                                 f" (a_trans={attrs.get('a_trans', False)}, b_trans={attrs.get('b_trans', False)})",
                          notes=dynamic_note((k,), (k2,)) or None)
    batch = broadcast([a.shape[:-2], b.shape[:-2]])     # numpy's matmul broadcasts the batch dims
    return (tuple(batch) + (m, n),)


def _matmul_dtype(ops: Sequence[Operand], attrs: dict) -> tuple[DType, ...]:
    d = _same_dtype(ops, "matmul", MATMUL_IN)
    out = attrs.get("out_dtype") or accumulator(d)
    _dtype_in(out, dt.FLOATS if d.is_float else (dt.I32,), "matmul's result")
    return (out,)


def _matmul_sem(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
    a, b = args
    d = dt.of_numpy(a.dtype)
    a, b = wide(a, d), wide(b, d)
    if attrs.get("a_trans"):
        a = np.swapaxes(a, -1, -2)
    if attrs.get("b_trans"):
        b = np.swapaxes(b, -1, -2)
    return (narrow(np.matmul(a, b), outs[0]),)


# --------------------------------------------------------------------------------------------
# data movement: transpose (perm), reshape (shape), view (shape, offsets, valid_shape),
# assemble (offsets; writes its destination), topk (k, axis, largest), full (shape, value, dtype)

def _transpose_shape(ops: Sequence[Operand], attrs: dict) -> tuple[Shape, ...]:
    x, perm = _first(ops), tuple(attrs["perm"])
    if sorted(perm) != list(range(x.rank)):
        raise front_error("FRONT_AXIS", "transpose needs a permutation of the tensor's axes",
                          expected=f"a permutation of 0..{x.rank - 1}", actual=list(perm))
    return (tuple(x.shape[p] for p in perm),)


def _reshape_shape(ops: Sequence[Operand], attrs: dict) -> tuple[Shape, ...]:
    x, shape = _first(ops), tuple(attrs["shape"])
    if numel(x.shape) != numel(shape):
        raise front_error("FRONT_SHAPE", "reshape must keep the number of elements",
                          expected=f"as many elements as {shape_str(x.shape)}", actual=shape_str(shape))
    return (shape,)


def view_extent(attrs: dict) -> tuple[Dim, ...]:
    """A view's run-time extent: its valid shape when it has one, else its shape. A run-time valid
    size is clamped to the view's size (a larger one would read past the window; a static one is
    refused at capture)."""
    shape, valid = tuple(attrs["shape"]), attrs.get("valid_shape")
    if valid is None:
        return shape
    return tuple(v if isinstance(v, int) else sym_binop("min", v, s) for v, s in zip(valid, shape))


def _view_shape(ops: Sequence[Operand], attrs: dict) -> tuple[Shape, ...]:
    x = _first(ops)
    shape, offsets, valid = tuple(attrs["shape"]), tuple(attrs["offsets"]), attrs.get("valid_shape")
    for what, v in (("shape", shape), ("offsets", offsets)) + ((("valid_shape", valid),) if valid is not None else ()):
        if len(v) != x.rank:
            raise front_error("FRONT_SHAPE", f"the view's {what} has another rank than the tensor",
                              expected=f"{x.rank} values", actual=shape_str(v))
    if valid is not None:
        for s, v in zip(shape, valid):
            if isinstance(s, int) and isinstance(v, int) and v > s:
                raise front_error("FRONT_BOUNDS", "a valid shape larger than the view's shape",
                                  expected=f"valid sizes <= {shape_str(shape)}", actual=shape_str(valid))
    _window_fits(offsets, view_extent(attrs), x.shape, "view")
    return (view_extent(attrs),)


def _window(arr: np.ndarray, offsets: Sequence[int], sizes: Sequence[int], what: str) -> tuple[slice, ...]:
    for axis, (o, s, n) in enumerate(zip(offsets, sizes, arr.shape)):
        if o < 0 or s < 1 or o + s > n:
            raise front_error("FRONT_BOUNDS", f"the {what} window leaves the tensor (or is empty) on axis "
                              f"{axis} at run time", expected=f"size >= 1, 0 <= offset and offset + size <= {n}",
                              actual=f"offset {o}, size {s}")
    return tuple(slice(o, o + s) for o, s in zip(offsets, sizes))


def _view_sem(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
    x = args[0]
    return (x[_window(x, attrs["offsets"], view_extent(attrs), "view")],)   # a numpy view: writes go through


def _assemble_shape(ops: Sequence[Operand], attrs: dict) -> tuple[Shape, ...]:
    src, dst = ops
    if not isinstance(src, TensorValue):
        raise front_error("FRONT_OPERAND", "assemble writes a tensor", expected="a tensor", actual=type(src).__name__)
    offsets = tuple(attrs["offsets"])
    if src.rank != dst.rank or len(offsets) != dst.rank:
        raise front_error("FRONT_SHAPE", "assemble's source, offsets and destination must have one rank",
                          expected=f"rank {dst.rank} ({dst.name}{shape_str(dst.shape)})",
                          actual=f"source {shape_str(src.shape)}, offsets {shape_str(offsets)}")
    if attrs.get("spelling") == "move" and not all(same_dim(a, b) for a, b in zip(src.shape, dst.shape)):
        raise front_error("FRONT_SHAPE", f"the value moved into {dst.name} has another shape",
                          expected=shape_str(dst.shape), actual=shape_str(src.shape),
                          notes=dynamic_note(dst.shape, src.shape) or None)
    _window_fits(offsets, src.shape, dst.shape, "assemble")
    return (dst.shape,)


def _assemble_dtype(ops: Sequence[Operand], attrs: dict) -> tuple[DType, ...]:
    return (_same_dtype(ops, "assemble", ANY),)


def _assemble_sem(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
    src, dst = args
    dst[_window(dst, attrs["offsets"], src.shape, "assemble")] = src
    return (dst,)


def _topk_shape(ops: Sequence[Operand], attrs: dict) -> tuple[Shape, ...]:
    x, k, axis = _first(ops), attrs["k"], attrs["axis"]
    _check_axis(axis, x.rank, "topk")
    size = x.shape[axis]
    if not isinstance(k, int) or isinstance(k, bool) or k < 1 or (isinstance(size, int) and k > size):
        raise front_error("FRONT_OPERAND", "topk's k must be a positive int no larger than the axis",
                          expected=f"1 <= k <= {size}", actual=k)
    shape = tuple(k if i == axis else d for i, d in enumerate(x.shape))
    return (shape, shape)


def _topk_dtype(ops: Sequence[Operand], attrs: dict) -> tuple[DType, ...]:
    return (_same_dtype(ops, "topk", NUMERIC), dt.I32)


def _topk_sem(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
    x, k, axis = args[0], attrs["k"], attrs["axis"]
    n = x.shape[axis]
    if attrs.get("largest", True):      # descending; equal values keep the lower index first
        order = n - 1 - np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return (np.take_along_axis(x, idx, axis).astype(outs[0].np_dtype), idx.astype(np.int32))


def _full_shape(ops: Sequence[Operand], attrs: dict) -> tuple[Shape, ...]:
    return (tuple(attrs["shape"]),)


def _full_dtype(ops: Sequence[Operand], attrs: dict) -> tuple[DType, ...]:
    d, v = attrs["dtype"], attrs["value"]
    _dtype_in(d, NUMERIC + (dt.I1,), "full")
    scalar_fits(v, d, "full")
    return (d,)


def _full_sem(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
    return (narrow(np.full(tuple(attrs["shape"]), wide(attrs["value"], outs[0])), outs[0]),)


#: what a row gather moves (MGATHER's data types on every profile that has it)
GATHER_DTYPES: tuple[DType, ...] = (dt.I8, dt.U8, dt.I16, dt.U16, dt.I32, dt.U32, dt.F16, dt.BF16, dt.F32)


def _gather_shape(ops: Sequence[Operand], attrs: dict) -> tuple[Shape, ...]:
    table, index = ops
    if not isinstance(table, TensorValue) or not isinstance(index, TensorValue):
        raise front_error("FRONT_OPERAND", "gather_rows takes a table tensor and an index tensor",
                          expected="two tensors", actual=", ".join(type(o).__name__ for o in ops))
    if table.rank != 2:
        raise front_error("FRONT_SHAPE", "gather_rows picks rows of a 2-D table",
                          expected="a [rows, cols] table (reshape a paged cache to [blocks, block_elems])",
                          actual=shape_str(table.shape))
    if not (index.rank == 1 or (index.rank == 2 and same_dim(index.shape[0], 1))):
        raise front_error("FRONT_SHAPE", "gather_rows' index is one row of row numbers",
                          expected="[R] or [1, R]", actual=shape_str(index.shape))
    return ((index.shape[-1], table.shape[1]),)


def _gather_dtype(ops: Sequence[Operand], attrs: dict) -> tuple[DType, ...]:
    table, index = ops
    if isinstance(index, TensorValue) and index.dtype != dt.I32:
        raise front_error("FRONT_DTYPE", "gather_rows' index must be i32", expected="i32",
                          actual=index.dtype.name, notes=[f"pto.cast({index.name}, pto.DT_INT32)"])
    if isinstance(table, TensorValue):
        _dtype_in(table.dtype, GATHER_DTYPES, "gather_rows")
        return (table.dtype,)
    return (dt.I32,)


def _gather_sem(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
    table, index = args
    idx = np.asarray(index).reshape(-1).astype(np.int64)
    inside = (idx >= 0) & (idx < table.shape[0])
    out = np.zeros((idx.size, table.shape[1]), dtype=outs[0].np_dtype)
    out[inside] = table[idx[inside]]
    return (out,)


def _arange_shape(ops: Sequence[Operand], attrs: dict) -> tuple[Shape, ...]:
    return ((attrs["stop"],),)


def _arange_sem(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
    return (np.arange(int(attrs["stop"]), dtype=outs[0].np_dtype),)


def _same_as_input(ops: Sequence[Operand], attrs: dict) -> tuple[DType, ...]:
    return (_first(ops).dtype,)


def _copy_sem(f: Callable) -> Semantics:
    def run(args: list, attrs: dict, outs: tuple[DType, ...]) -> tuple[np.ndarray, ...]:
        return (np.ascontiguousarray(f(args[0], attrs)),)
    return run


# --------------------------------------------------------------------------------------------
# the table

def _table() -> dict[str, OpSpec]:
    ops: list[OpSpec] = []
    for name, (f, doc) in _BINARY.items():
        ops.append(OpSpec(name, "binary", 2, NUMERIC, _elementwise_shape, _dtype_rule(NUMERIC, name),
                          _binary_sem(f), f"elementwise {doc}; numpy broadcasting; a scalar on either side"))
    for name, (f, allowed, doc) in _UNARY.items():
        ops.append(OpSpec(name, "unary", 1, allowed, _elementwise_shape, _dtype_rule(allowed, name),
                          _unary_sem(f), f"elementwise {doc}"))
    for name, f in _COMPARE.items():
        ops.append(OpSpec(name, "compare", 2, NUMERIC, _elementwise_shape, _dtype_rule(NUMERIC, name, dt.I1),
                          _compare_sem(f), f"elementwise comparison ({f.__name__}), an i1 result"))
    ops.append(OpSpec("where", "select", 3, ANY, _elementwise_shape, _where_dtype, _where_sem,
                      "where(cond, a, b): a where cond is true, else b; broadcasting"))
    for name, (f, allowed, doc) in _REDUCE.items():
        ops.append(OpSpec(name, "reduce", 1, allowed, _reduce_shape, _dtype_rule(allowed, name),
                          _reduce_sem(f), f"{doc} along attrs axis, keepdim keeps it as size 1"))
    ops += [
        OpSpec("cast", "cast", 1, CAST_DTYPES, _elementwise_shape, _cast_dtype, _cast_sem,
               "convert to attrs dtype: floats round (attrs mode) and saturate into integers, "
               "NaN -> 0; integers wrap; anything -> i1 is != 0"),
        OpSpec("matmul", "matmul", 2, MATMUL_IN, _matmul_shape, _matmul_dtype, _matmul_sem,
               "[..., m, k] @ [..., k, n] (a_trans / b_trans read an operand transposed), exact "
               "products summed, rounded once to out_dtype (default: f32 for floats, i32 for i8)",
               tiles="cube"),
        OpSpec("transpose", "transpose", 1, ANY, _transpose_shape, _same_as_input,
               _copy_sem(lambda x, a: np.transpose(x, a["perm"])), "axes permuted by attrs perm"),
        OpSpec("reshape", "reshape", 1, ANY, _reshape_shape, _same_as_input,
               _copy_sem(lambda x, a: np.reshape(x, a["shape"])), "the same elements in row-major order, "
               "attrs shape", tiles=None),
        OpSpec("view", "view", 1, ANY, _view_shape, _same_as_input, _view_sem,
               "the window of attrs shape (its valid_shape at run time, when given) at attrs offsets; "
               "names those elements of its input (writes through it reach the input)", tiles=None),
        OpSpec("assemble", "assemble", 1, ANY, _assemble_shape, _assemble_dtype, _assemble_sem,
               "writes its input into its output tensor at attrs offsets (spelling='move': the whole "
               "tensor, dst[:] = x)", tiles=None, writes=True),
        OpSpec("topk", "topk", 1, NUMERIC, _topk_shape, _topk_dtype, _topk_sem,
               "the k largest (largest=True) or smallest values along attrs axis in order, and their "
               "i32 indices; equal values keep the lower index first; NaN counts as the largest",
               results=2),
        OpSpec("full", "full", 0, NUMERIC + (dt.I1,), _full_shape, _full_dtype, _full_sem,
               "a tensor of attrs shape and dtype, every element attrs value"),
        OpSpec("arange", "full", 0, (dt.I32,), _arange_shape, lambda ops, attrs: (dt.I32,), _arange_sem,
               "the 1-D i32 tensor 0, 1, ..., attrs stop - 1 (positions, for masks)"),
        OpSpec("gather_rows", "gather", 2, GATHER_DTYPES, _gather_shape, _gather_dtype, _gather_sem,
               "rows of a 2-D table picked by an i32 index row: result row i is table row index[i]; an "
               "index outside [0, rows) reads a row of zeros (a paged cache's unused -1 entries)"),
    ]
    return {o.name: o for o in ops}


OPS: dict[str, OpSpec] = _table()


def spec(name: str) -> OpSpec:
    """The table's entry for ``name`` (a KeyError names an op the table lacks: a bug of the caller)."""
    return OPS[name]


def names_of(kind: str) -> tuple[str, ...]:
    """Every op of one kind, in table order."""
    return tuple(n for n, o in OPS.items() if o.kind == kind)


def result_shapes_and_dtypes(name: str, operands: Sequence[Operand],
                             attrs: dict) -> tuple[tuple[Shape, ...], tuple[DType, ...]]:
    """Both rules at once (the dtype rule first: its errors say more about a wrong operand)."""
    o = OPS[name]
    dtypes = o.dtype(operands, attrs)
    return o.shape(operands, attrs), dtypes


__all__ = ["OPS", "OpSpec", "KINDS", "spec", "names_of", "broadcast", "same_dim", "numel",
           "view_extent", "accumulator"]
