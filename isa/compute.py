"""Numeric building blocks shared by the semantics functions.

The rules (docs/isa/decisions.md): floats compute in f32 (f16/bf16/fp8 are widened
and the result is rounded once, round-to-nearest-even); transcendentals compute in
f64 and round once, so the reference is correctly rounded up to a final double
rounding; integers wrap in two's complement.

IEEE exceptions are flags, not traps: ``Instruction.execute`` (and any backend that calls
semantics directly, as the reference interpreter does for a whole run) sets numpy's error
state once around the call, so these helpers do not pay for it per operation.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from . import dtypes as dt
from .diagnostics import RuntimeFault
from .values import Tile


def widen(a: np.ndarray, d: dt.DType) -> np.ndarray:
    """Values in the type arithmetic is carried out in (f32 for floats, the dtype for ints)."""
    return a.astype(dt.compute_dtype(d), copy=False)


def narrow(values: np.ndarray, d: dt.DType) -> np.ndarray:
    """Round (floats, RNE) or wrap (integers) ``values`` into dtype ``d``."""
    values = np.asarray(values)
    if d.is_float or d.kind == "bool":
        return values.astype(d.np_dtype, copy=False)        # overflow to ±inf is the IEEE result
    if values.dtype.kind == "f":
        raise TypeError("integer results must be computed in integer arithmetic")
    return wrap(values, d)


def wrap(values: np.ndarray, d: dt.DType) -> np.ndarray:
    """Two's complement wrap of any integer array into ``d``."""
    v = np.asarray(values)
    if v.dtype == d.np_dtype:
        return v
    return v.astype(np.int64 if v.dtype.kind == "i" else np.uint64).astype(d.np_dtype)


def via_f64(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Evaluate ``fn`` in f64 (for transcendentals): the f32 result is then correctly rounded."""
    def run(*arrays: np.ndarray) -> np.ndarray:
        wide = [np.array(a, dtype=np.float64) for a in arrays]     # fresh copies: safe to overwrite
        if isinstance(fn, np.ufunc) and fn.nout == 1 and wide and wide[0].shape == np.broadcast_shapes(
                *(w.shape for w in wide)):
            return fn(*wide, out=wide[0])                          # in place: no further temporaries
        return fn(*wide)
    return run


def scalar_as(value: object, d: dt.DType) -> np.ndarray:
    """A scalar operand converted to the tile dtype (floats round RNE, integers wrap),
    then widened to the compute type, as a 0-d array."""
    if d.is_float:
        try:
            f = np.float64(value)
        except (TypeError, ValueError, OverflowError):
            raise _bad_scalar(value, d) from None
        with np.errstate(over="ignore", invalid="ignore"):
            s = np.asarray(f).astype(d.np_dtype)
    else:
        s = np.asarray(_int_bits(value, d)).astype(d.np_dtype)
    return widen(s, d)


def _int_bits(value: object, d: dt.DType) -> int:
    """An integral scalar wrapped (two's complement) into ``d``'s range, as a Python int."""
    try:
        f = float(value) if not isinstance(value, (int, np.integer)) else None
    except (TypeError, ValueError, OverflowError):
        raise _bad_scalar(value, d) from None
    if f is not None and not (np.isfinite(f) and f == int(f)):
        raise _bad_scalar(value, d)
    bits = d.itemsize * 8
    v = int(value if f is None else f) % (1 << bits)
    if d.kind == "int" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _bad_scalar(value: object, d: dt.DType) -> RuntimeFault:
    what = "an integer" if not d.is_float else "a number"
    return RuntimeFault("RUNTIME_SCALAR_VALUE", f"scalar operand {value!r} cannot be converted to {d}",
                        expected=f"{what} (the scalar has the tile dtype {d})", actual=repr(value))


def apply_elementwise(dst: Tile, srcs: Sequence[Tile], fn: Callable[..., np.ndarray],
                      scalars: Sequence[object] = ()) -> None:
    """dst[i, j] = fn(src0[i, j], ..., s0, ...) over dst's valid region.

    Inputs are widened to the compute type of the *first source's* dtype (scalars take
    that dtype too); the result is narrowed to dst's dtype.
    """
    r, c = dst.valid
    d = srcs[0].dtype if srcs else dst.dtype
    args = [widen(s.read(r, c, f"source {i}"), s.dtype) for i, s in enumerate(srcs)]
    args += [scalar_as(v, d) for v in scalars]
    out = fn(*args)
    dst.write(narrow(np.broadcast_to(out, (r, c)), dst.dtype), r, c)


def ieee_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 minimum: NaN propagates, -0 < +0."""
    if a.dtype.kind != "f":
        return np.minimum(a, b)
    out = np.minimum(a, b)
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero, np.where(np.signbit(a), a, b), out)


def ieee_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754-2019 maximum: NaN propagates, +0 > -0."""
    if a.dtype.kind != "f":
        return np.maximum(a, b)
    out = np.maximum(a, b)
    both_zero = (a == 0) & (b == 0)
    return np.where(both_zero, np.where(np.signbit(a), b, a), out)


def int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero; x / 0 = -1 (all ones); MIN / -1 = MIN (wraps)."""
    zero = b == 0
    safe_b = np.where(zero, 1, b).astype(a.dtype)
    if a.dtype.kind == "i":
        minus_one = safe_b == -1
        safe_b = np.where(minus_one, 1, safe_b)        # MIN // -1 overflows: negate instead
        q = a // safe_b                                 # floor division ...
        inexact = (q * safe_b) != a
        q = np.where(inexact & ((a < 0) != (safe_b < 0)), q + 1, q)  # ... moved toward zero
        q = np.where(minus_one, np.negative(a), q)
        q = np.where(zero, -1, q)
    else:
        q = np.where(zero, np.iinfo(a.dtype).max, a // safe_b)
    return q.astype(a.dtype)


def int_rem(a: np.ndarray, b: np.ndarray, floor: bool) -> np.ndarray:
    """Integer remainder. ``floor``: sign of the divisor (Python %); else truncating (C %).
    x rem 0 = x."""
    kind = a.dtype.kind
    a64 = a.astype(np.int64) if kind == "i" else a.astype(np.uint64)
    b64 = b.astype(a64.dtype)
    zero = b64 == 0
    safe_b = np.where(zero, 1, b64)
    if kind == "u" or floor:
        r = np.remainder(a64, safe_b)
    else:
        r = np.fmod(a64, safe_b)
    r = np.where(zero, a64, r)
    return wrap(r, dt.of_numpy(a.dtype))


def shift_left(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    """a << n with n taken as unsigned; n >= bit width gives 0."""
    bits = a.dtype.itemsize * 8
    un = _unsigned_count(n)
    out = np.left_shift(a, np.minimum(un, bits - 1).astype(a.dtype))
    return np.where(un >= bits, np.zeros_like(a), out)


def shift_right(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    """a >> n: arithmetic for signed, logical for unsigned; n >= width gives 0 or -1 (sign fill)."""
    bits = a.dtype.itemsize * 8
    un = _unsigned_count(n)
    out = np.right_shift(a, np.minimum(un, bits - 1).astype(a.dtype))
    if a.dtype.kind == "u":
        return np.where(un >= bits, np.zeros_like(a), out)
    return out  # shifting a signed value by width-1 already gives the sign fill


def _unsigned_count(n: np.ndarray) -> np.ndarray:
    n = np.asarray(n)
    if n.dtype.kind == "i":
        return n.astype(np.int64).astype(np.uint64) & np.uint64((1 << (n.dtype.itemsize * 8)) - 1)
    return n.astype(np.uint64)
