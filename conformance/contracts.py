"""Judging one instruction's results against its declaration: the oracle run and the
numerics contracts (``isa.spec.Numerics``).

What is compared is the instruction's iteration domain (``isa.spec.Domain``): the output
tile's valid region (DST, SRC, SPECIAL, MATMUL), the whole static tile (STATIC_DST), row 0
of the valid columns (ROW0), nothing (NONE); a global output is compared whole, and the
memory around a strided view must be left as it was. Inside an ``out`` tile's domain the
elements the semantics leave untouched are unspecified too (TSCATTER elements no index hits,
TMRGSORT slots after the last record, a GEMV's rows below row 0): they are found by running
the semantics a second time on a bit-inverted destination and are not compared.

Contracts (integer and mask results are always compared exactly):

* ``exact``: bit-identical, NaN payloads included.
* ``rounded``: bit-identical (so the sign of zero counts), except that any NaN matches any
  NaN: decisions.md fixes NaN propagation but not payloads, and targets differ (x86 keeps
  the first operand's payload, GPUs return a canonical NaN).
* ``ulp``: NaN where the reference has NaN, ±inf exactly, the sign of a zero result
  exactly; otherwise within ``ulp`` steps of the output dtype (counting through denormals,
  inf one step past max) from the correctly rounded reference.
* ``sum`` (``isa.spec.SUM_BOUND``), judged in f64 against the exact result x (the semantics
  run with float outputs widened to f64, so nothing is rounded to the output dtype):
  accumulation in at least f32 (the precision the spec names; f16/bf16/fp8 inputs widen to
  f32) errs by at most E = g * S + m * d32 in any order, with S the semantics on the absolute
  values of the inputs (sum|terms| for sums, matmul and gemv alike; |x| for products), m =
  n + 2 roundings per term (n the largest valid extent among the input tiles, an upper bound
  of every reduction length; one more for a matmul's product, one for acc_in or bias),
  g = m * u32 / (1 - m * u32), u32 = 2**-24, d32 f32's smallest denormal (a product that
  underflows). One final rounding to the output dtype adds u * (|x| + E) + d / 2 (u half its
  epsilon, d its smallest denormal). So an f16 accumulator fails where its drift exceeds
  that, and a finite x must give a finite result: ±inf only where |x| + E reaches the
  output's overflow threshold, and ±inf is required where |x| - E does. NaN exactly where x
  is NaN. Where the accumulator's range may be left in some order (S beyond f32's maximum
  for sums; for products, the factors above 1 multiplying beyond it or the non-zero ones
  below 1 under f32's smallest normal), the result is order-dependent and only the NaN
  rule applies.
* ``unspecified``: not compared.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import ml_dtypes
import numpy as np

from ..isa import dtypes as dt
from ..isa.spec import Domain, Instruction, Kind, Role
from ..isa.types import GlobalType, TileType
from ..isa.values import GlobalRef, Tile
from .cases import Case
from .outcome import Difference
from .values import UINT, GlobalArg, literal

Outputs = dict[str, Any]          # operand name -> np.ndarray (tile storage) or GlobalArg


# --------------------------------------------------------------------------- the oracle

def oracle(case: Case, inputs: Mapping[str, Any],
           prepare: Callable[[Role, np.ndarray], np.ndarray] | None = None) -> Outputs:
    """The declaration's semantics on fresh copies of ``inputs``: the final contents of every
    written tile and global. ``prepare(role, array)`` may replace an operand's array first.
    PTOErrors (broken preconditions) propagate."""
    kw: dict[str, Any] = {}
    written: Outputs = {}
    for op in case.instr.operands:
        if op.kind is Kind.PIPE:
            if op.name in case.scalars:
                kw[op.name] = case.scalars[op.name]
            continue
        t = case.types.get(op.name)
        if t is None:
            continue
        if isinstance(t, TileType):
            data = inputs[op.name].copy()
            if prepare is not None:
                data = prepare(op.role, data)
            kw[op.name] = Tile(t, data)
            if op.role is not Role.IN:
                written[op.name] = data
        elif isinstance(t, GlobalType):
            g: GlobalArg = inputs[op.name].fresh()
            if prepare is not None:
                g = dataclasses.replace(g, parent=prepare(op.role, g.parent))
            kw[op.name] = GlobalRef(g.view, case.offsets.get(op.name, ()), t.layout, t.dtype)
            if op.role is not Role.IN:
                written[op.name] = g
        elif literal(case, op.name):
            kw[op.name] = case.scalars[op.name]
        else:
            kw[op.name] = inputs.get(op.name)
    case.instr.execute(**kw, **case.attrs)
    return written


def _is_float(a: np.ndarray) -> bool:
    return dt.of_numpy(a.dtype).is_float


def _inverted(role: Role, a: np.ndarray) -> np.ndarray:
    if role is not Role.OUT:
        return a
    return ~a if a.dtype == np.bool_ else (~a.view(UINT[a.itemsize])).view(a.dtype)


# --------------------------------------------------------------------------- domains

def domain(instr: Instruction, case: Case, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Which elements of output ``name`` the instruction's iteration domain covers."""
    mask = np.zeros(shape, dtype=bool)
    t = case.types[name]
    if isinstance(t, GlobalType):
        mask[...] = True
        return mask
    assert isinstance(t, TileType)
    vr, vc = t.valid_rows, t.valid_cols
    vr = t.rows if vr is None else vr
    vc = t.cols if vc is None else vc
    if instr.domain is Domain.NONE:
        return mask
    if instr.domain is Domain.STATIC_DST:
        mask[...] = True
    elif instr.domain is Domain.ROW0:
        mask[:min(vr, 1), :vc] = True
    else:
        mask[:vr, :vc] = True
    return mask


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint8) if a.dtype == np.bool_ else a.view(UINT[a.itemsize])


def untouched(case: Case, inputs: Mapping[str, Any], want: Outputs) -> dict[str, np.ndarray]:
    """For each ``out`` tile: the elements whose final value depends on the tile's initial
    contents, i.e. the ones the semantics never write (unspecified)."""
    if not any(op.role is Role.OUT and isinstance(case.types.get(op.name), TileType)
               for op in case.instr.operands):
        return {}
    try:
        other = oracle(case, inputs, _inverted)
    except Exception:  # noqa: BLE001 - it ran once already; without a second run nothing is excluded
        return {}
    return {n: _bits(want[n]) != _bits(other[n]) for n in other
            if case.instr.operand(n).role is Role.OUT and isinstance(want[n], np.ndarray)}


# --------------------------------------------------------------------------- contracts

def _finfo(a: np.ndarray) -> Any:
    return ml_dtypes.finfo(a.dtype)


def _ordered(a: np.ndarray) -> np.ndarray:
    """Float bit patterns as integers ordered like the values (-0 and +0 both 0), so the
    difference of two is their distance in steps of the format."""
    u = _bits(a).astype(np.int64)
    sign = np.int64(1) << np.int64(a.itemsize * 8 - 1)
    mag = u & (sign - 1)
    return np.where(u & sign, -mag, mag)


def reduction_length(case: Case) -> int:
    """An upper bound of every reduction length: the largest valid extent of an input tile."""
    n = 1
    for op in case.instr.operands:
        t = case.types.get(op.name)
        if op.role is not Role.OUT and isinstance(t, TileType):
            n = max(n, t.valid_rows if t.valid_rows is not None else t.rows,
                    t.valid_cols if t.valid_cols is not None else t.cols)
    return n


def exact_bad(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return _bits(got) != _bits(want)


def rounded_bad(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    if not _is_float(want):
        return exact_bad(got, want)
    g, w = got.astype(np.float64), want.astype(np.float64)
    return exact_bad(got, want) & ~(np.isnan(g) & np.isnan(w))


def ulp_bad(got: np.ndarray, want: np.ndarray, ulp: float) -> np.ndarray:
    if not _is_float(want):
        return exact_bad(got, want)
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    special = nan_w | np.isinf(w)
    zeros = (g == 0) & (w == 0)
    far = np.abs(_ordered(got) - _ordered(want)) > ulp
    return np.where(special, ~(nan_g & nan_w) & (nan_g | nan_w | (g != w)),
                    nan_g | np.where(zeros, np.signbit(g) != np.signbit(w), far))


U32 = 2.0 ** -24                               # unit roundoff of the f32 accumulator
_F32 = ml_dtypes.finfo(np.float32)
_WIDE = dt.DType("f64", np.dtype(np.float64), "float", 64)   # the exact oracle's outputs only


def _widened(case: Case) -> Case:
    """``case`` with every written float tile widened to f64: the semantics then keep the
    exact (f64) result instead of rounding it to the output dtype."""
    types = dict(case.types)
    for op in case.instr.operands:
        t = types.get(op.name)
        if op.role is not Role.IN and isinstance(t, TileType) and t.dtype.is_float:
            types[op.name] = dataclasses.replace(t, dtype=_WIDE)
    return dataclasses.replace(case, types=types)


def exact(case: Case, inputs: Mapping[str, Any],
          terms: Callable[[np.ndarray], np.ndarray] | None = None) -> Outputs:
    """The semantics in f64 on ``terms(x)`` of every float input (x itself when None): the
    exact result the sum contract is judged against, or its magnitudes."""
    def prepare(role: Role, a: np.ndarray) -> np.ndarray:
        if _is_float(a) and role is not Role.OUT and terms is not None:
            a = terms(a.astype(np.float64)).astype(a.dtype)
        return a.astype(np.float64) if role is not Role.IN and _is_float(a) else a
    return oracle(_widened(case), inputs, prepare)


@dataclasses.dataclass(frozen=True)
class SumBound:
    """The sum contract's verdict inputs for one output, elementwise in f64."""

    exact: np.ndarray        # x: the exact result
    error: np.ndarray        # E: what accumulating in f32 may add, any order
    tol: np.ndarray          # E plus one final rounding to the output dtype
    ordered: np.ndarray      # True where the accumulator's range may be left: NaN rule only
    signed_zero: bool = False  # products: a zero result's sign is the exact product's


def sum_bound(x: np.ndarray, s: np.ndarray, n: int, out: np.dtype,
              leaves_range: np.ndarray | None = None) -> SumBound:
    """E = g * S + m * d32 and tol = E + u * (|x| + E) + d / 2, with m = n + 2 (see the module
    docstring); ``leaves_range`` marks the elements whose accumulator may over/underflow."""
    f = ml_dtypes.finfo(out)
    m = n + 2
    g = m * U32 / (1 - m * U32)
    s = np.abs(s.astype(np.float64))
    err = g * s + m * float(_F32.smallest_subnormal)
    ax = np.abs(x)
    tol = err + float(f.eps) / 2 * (np.where(np.isfinite(ax), ax, 0.0) + err) + float(f.smallest_subnormal) / 2
    beyond = ~np.isfinite(s) | (s * (1 + g) > float(_F32.max))
    if leaves_range is not None:
        beyond |= leaves_range
    return SumBound(x, err, tol, beyond, leaves_range is not None)


def overflow_threshold(out: np.dtype) -> float:
    """The smallest magnitude that rounds to inf in ``out`` (max plus half its last step)."""
    f = ml_dtypes.finfo(out)
    return float(f.max) + float(f.eps) * 2.0 ** (int(f.maxexp) - 2)


def sum_bad(got: np.ndarray, want: np.ndarray, b: SumBound) -> np.ndarray:
    """Where ``got`` breaks the sum contract (``want``: the reference's rounded result)."""
    if not _is_float(want):
        return exact_bad(got, want)
    g, x = got.astype(np.float64), b.exact
    nan_g, nan_x = np.isnan(g), np.isnan(x) | np.isnan(want.astype(np.float64))
    thr = overflow_threshold(want.dtype)
    ax = np.abs(x)
    inf_ok = np.isinf(g) & (np.sign(g) == np.sign(x)) & (ax + b.error >= thr)     # may round to inf
    inf_due = ax - b.error >= thr                                                    # must be inf
    with np.errstate(invalid="ignore"):
        near = np.abs(g - x) <= b.tol
    finite_ok = np.isfinite(g) & ~inf_due & near
    if b.signed_zero:              # a product's zero has the sign of the exact product
        finite_ok &= ~((g == 0) & (np.signbit(g) != np.signbit(x)))
    return np.where(nan_x, ~nan_g, ~b.ordered & ~(inf_ok | finite_ok))


def _sum_judge(case: Case, inputs: Mapping[str, Any], name: str, want: np.ndarray,
               cache: dict[str, Outputs]) -> SumBound:
    """The bound of output ``name``: exact results and magnitudes computed once per case."""
    product = case.instr.numerics.product
    if not cache:
        cache["x"] = exact(case, inputs)
        cache["s"] = exact(case, inputs, lambda a: np.where(np.isfinite(a), np.abs(a), 0.0))
        if product:        # the factors' extremes bound every partial product, in any order
            cache["big"] = exact(case, inputs, lambda a: np.where(np.isfinite(a), np.maximum(np.abs(a), 1.0), 1.0))
            cache["small"] = exact(case, inputs, lambda a: np.where(np.isnan(a) | (a == 0), 1.0,
                                                                    np.minimum(np.abs(a), 1.0)))
    leaves = None
    if product:
        leaves = (cache["big"][name] > float(_F32.max)) | (cache["small"][name] < float(_F32.smallest_normal))
    return sum_bound(cache["x"][name], cache["s"][name], reduction_length(case), want.dtype, leaves)


# --------------------------------------------------------------------------- rendering

def show(a: np.ndarray, index: tuple[int, ...]) -> str:
    """An element exactly: its value and, for floats, its bit pattern."""
    v = a[index]
    d = dt.of_numpy(a.dtype)
    if d.is_float:
        bits = int(np.asarray(v).reshape(1).view(UINT[a.itemsize])[0])
        return f"{float(v)!r} (0x{bits:0{2 * a.itemsize}x} {d.name})"
    if d.kind == "bool":
        return str(bool(v)).lower()
    return f"{int(v)} ({d.name})"


def _first(bad: np.ndarray) -> tuple[int, ...] | None:
    if not bad.any():
        return None
    return tuple(int(i) for i in np.argwhere(bad)[0])


# --------------------------------------------------------------------------- compare

def compare(instr: Instruction, case: Case, outputs_got: Mapping[str, Any], outputs_want: Mapping[str, Any],
            inputs: Mapping[str, Any]) -> Difference | None:
    """The first element (in operand order, then row-major) where the backend's outputs
    break ``instr``'s numerics contract against the reference's, or None."""
    kind = instr.numerics.kind
    if kind == "unspecified" or instr.domain is Domain.NONE:
        return None
    with np.errstate(all="ignore"):      # NaN and inf casts and differences are expected here
        return _compare(instr, case, outputs_got, outputs_want, inputs)


def _compare(instr: Instruction, case: Case, outputs_got: Mapping[str, Any], outputs_want: Mapping[str, Any],
             inputs: Mapping[str, Any]) -> Difference | None:
    kind = instr.numerics.kind
    skip = untouched(case, inputs, dict(outputs_want))
    cache: dict[str, Outputs] = {}
    for op in instr.operands:
        if op.role is Role.IN or op.name not in outputs_want:
            continue
        w_obj, g_obj = outputs_want[op.name], outputs_got[op.name]
        want = w_obj.view if isinstance(w_obj, GlobalArg) else w_obj
        got = g_obj.view if isinstance(g_obj, GlobalArg) else g_obj
        region = domain(instr, case, op.name, want.shape)
        if op.name in skip:
            region &= ~skip[op.name]
        note = ""
        if kind == "exact":
            bad = exact_bad(got, want)
        elif kind == "rounded":
            bad = rounded_bad(got, want)
        elif kind == "ulp":
            bad = ulp_bad(got, want, instr.numerics.ulp)
            note = f" within {instr.numerics.ulp:g} ulp"
        elif _is_float(want):
            bound = _sum_judge(case, inputs, op.name, want, cache)
            bad = sum_bad(got, want, bound)
        else:
            bad = exact_bad(got, want)
        at = _first(bad & region)
        if at is not None:
            extra = note
            if kind == "sum" and _is_float(want):
                extra = (" (order-dependent: NaN rule only)" if bound.ordered[at] else
                         f" (exact {float(bound.exact[at])!r} ± {float(bound.tol[at]):.3g})")
            return Difference(op.name, at, show(want, at) + extra, show(got, at))
        if isinstance(w_obj, GlobalArg):
            around = np.ones(w_obj.parent.shape, dtype=bool)
            w_obj.over(around)[...] = False                  # the view itself was compared above
            at = _first(exact_bad(g_obj.parent, w_obj.parent) & around)
            if at is not None:
                return Difference(f"{op.name} (memory around the view)", at, show(w_obj.parent, at),
                                  show(g_obj.parent, at))
    return None
