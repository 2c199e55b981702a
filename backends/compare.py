"""Comparing two runs of one program (``pto run --compare-with``).

A program's error budget comes from the spec: each tile instruction's numerics contract in
units of the output dtype's epsilon (exact 0, rounded 1, ``ulp`` its bound, sums and matmul
their reduction length n), added over the kernel's instructions. Differences are judged
norm-wise: |a - b| <= budget * eps * max|b| over the output, NaNs in the same places,
integers and masks exactly equal. Each ``Difference`` says which rule it applied, over which
elements, and which element decided; the largest relative difference is shown beside it but
not judged (an element near zero makes it large while the norm-wise bound holds). It is a sanity bound for whole programs, not a
per-instruction conformance verdict (that is the conformance suite's job).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from ..assembler.ir import Kernel, TileOp
from ..isa.types import TileType


def error_budget(kernel: Kernel) -> float:
    """The kernel's error budget in epsilons (inf when some instruction is unspecified)."""
    total = 0.0
    for s in kernel.walk():
        if not isinstance(s, TileOp):
            continue
        n = s.instr.numerics
        if n.kind == "unspecified":
            return math.inf
        if n.kind == "rounded":
            total += 1
        elif n.kind == "ulp":
            total += n.ulp
        elif n.kind == "sum":
            total += max((max(t.rows, t.cols) for t in s.types().values() if isinstance(t, TileType)), default=1)
    return total


@dataclass(frozen=True)
class Difference:
    """One output compared: the numbers, the rule they were judged by, and the element that
    decided (the largest absolute difference), so a report never reads as a contradiction."""

    name: str
    max_abs: float
    max_rel: float                       # largest elementwise |got - want| / |want|: shown, not judged
    tolerance: float                     # the bound max_abs is held to (0 for exact types)
    mismatched_nans: int
    ok: bool
    first: tuple[int, ...] | None        # index of the largest difference (the deciding element)
    dtype: str = ""
    elements: int = 0                    # elements compared (neither side NaN, for floats)
    budget: float = 0.0                  # epsilons (floats)
    eps: float = 0.0
    scale: float = 0.0                   # max |want| over finite elements
    got_at: object = None                # the values at ``first``
    want_at: object = None
    rel_at: tuple[int, ...] | None = None
    differing: int = 0                   # exact types: elements that differ

    @property
    def exact(self) -> bool:
        return self.eps == 0.0

    def rule(self) -> str:
        """What the tolerance applies to, in words."""
        if self.exact:
            return f"exact equality ({self.dtype} is an integer or mask type), over all {self.elements} elements"
        if self.budget == math.inf:
            return ("no bound: an instruction's numerics contract is unspecified, so only NaN "
                    f"placement is checked, over {self.elements} elements")
        return (f"norm-wise, max |got - want| <= budget x eps({self.dtype}) x max|want| = "
                f"{self.budget:g} x {self.eps:.3g} x {self.scale:.3g} = {self.tolerance:.3g}, over the "
                f"{self.elements} elements where neither side is NaN; NaNs must be in the same places")

    def decided(self) -> str:
        """The element that decided the verdict, with both values."""
        if self.first is None:
            return "no element differs" + (f"; {self.mismatched_nans} NaN mismatch(es)" if self.mismatched_nans else "")
        at = f"{self.first} (got {_show(self.got_at)}, want {_show(self.want_at)})"
        if self.exact:
            return f"{self.differing} element(s) differ, the first at {at}"
        cmp = "<=" if self.max_abs <= self.tolerance else ">"
        return (f"largest |got - want| {self.max_abs:.3g} {cmp} {self.tolerance:.3g} at {at}; "
                f"NaN mismatches {self.mismatched_nans}")

    def row(self) -> str:
        verdict = "ok" if self.ok else "DIFFERS"
        lines = [f"{self.name} ({self.dtype}): {verdict}", f"  rule: {self.rule()}",
                 f"  decided by: {self.decided()}"]
        if not self.exact and self.rel_at is not None:
            lines.append(f"  largest relative difference {self.max_rel:.3g} at {self.rel_at}: "
                         "shown, not judged (near-zero elements make it large)")
        return "\n".join(lines)


def _show(v: object) -> str:
    """A value as the dtype holds it: floats to 9 significant digits (f32 round-trips)."""
    return f"{v:.9g}" if isinstance(v, float) else repr(v)


def _eps(dtype: np.dtype) -> float | None:
    """Machine epsilon of a floating dtype, numpy's or ml_dtypes' (bf16, fp8, whose numpy
    kind is "V"); None for integers and masks, which must match exactly."""
    try:
        return float(ml_dtypes.finfo(dtype).eps)
    except ValueError:
        return None


def _item(a: np.ndarray, at: tuple[int, ...] | None) -> object:
    return None if at is None else a[at].item()


def compare(name: str, got: np.ndarray, want: np.ndarray, budget: float) -> Difference:
    """How far ``got`` is from ``want`` (the same output of another run) and whether that is
    within ``budget`` epsilons of ``want``'s dtype, norm-wise."""
    eps = _eps(want.dtype)
    dtype = getattr(want.dtype, "name", str(want.dtype))
    if eps is None or _eps(got.dtype) is None:
        diff = got != want
        n = int(np.count_nonzero(diff))
        first = tuple(int(i) for i in np.argwhere(diff)[0]) if n else None
        big = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.size else 0.0
        return Difference(name, big, 0.0, 0.0, 0, n == 0, first, dtype, int(want.size),
                          got_at=_item(got, first), want_at=_item(want, first), differing=n)
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    mismatched = int(np.count_nonzero(nan_g != nan_w))
    both = ~(nan_g | nan_w)
    with np.errstate(all="ignore"):      # inf - inf and x / tiny are expected here, and masked
        d = np.where(both & ~((g == w) & np.isinf(w)), np.abs(g - w), 0.0)
        d = np.where(np.isnan(d), np.inf, d)
        r = np.where(both, d / np.maximum(np.abs(w), np.finfo(np.float64).tiny), 0.0)
    rel = float(r.max()) if r.size else 0.0
    rel_at = tuple(int(i) for i in np.unravel_index(int(np.argmax(r)), r.shape)) if rel > 0 else None
    finite_w = np.abs(w[both & np.isfinite(w)])
    scale = float(finite_w.max()) if finite_w.size else 0.0
    tol = math.inf if budget == math.inf else budget * eps * scale   # inf * 0 would be NaN
    big = float(d.max()) if d.size else 0.0
    first = tuple(int(i) for i in np.unravel_index(int(np.argmax(d)), d.shape)) if big > 0 else None
    return Difference(name, big, rel, tol, mismatched, mismatched == 0 and big <= tol, first, dtype,
                      int(np.count_nonzero(both)), budget, eps, scale, _item(got, first), _item(want, first),
                      rel_at)
