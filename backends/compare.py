"""Comparing two runs of one program (``pto run --compare-with``).

A program's error budget comes from the spec: each tile instruction's numerics contract in
units of the output dtype's epsilon (exact 0, rounded 1, ``ulp`` its bound, sums and matmul
their reduction length n), added over the kernel's instructions. Differences are judged
norm-wise: |a - b| <= budget * eps * max|b| over the output, NaNs in the same places,
integers and masks exactly equal. It is a sanity bound for whole programs, not a
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
    name: str
    max_abs: float
    max_rel: float
    tolerance: float
    mismatched_nans: int
    ok: bool
    first: tuple[int, ...] | None        # index of the largest difference

    def row(self) -> str:
        verdict = "ok" if self.ok else "DIFFERS"
        at = "" if self.first is None else f" at {self.first}"
        return (f"{self.name:<12} max|diff| {self.max_abs:.3g}{at}  max rel {self.max_rel:.3g}  "
                f"tolerance {self.tolerance:.3g}  nan mismatches {self.mismatched_nans}  {verdict}")


def _eps(dtype: np.dtype) -> float | None:
    """Machine epsilon of a floating dtype, numpy's or ml_dtypes' (bf16, fp8, whose numpy
    kind is "V"); None for integers and masks, which must match exactly."""
    try:
        return float(ml_dtypes.finfo(dtype).eps)
    except ValueError:
        return None


def compare(name: str, got: np.ndarray, want: np.ndarray, budget: float) -> Difference:
    """How far ``got`` is from ``want`` (the same output of another run) and whether that is
    within ``budget`` epsilons of ``want``'s dtype, norm-wise."""
    eps = _eps(want.dtype)
    if eps is None or _eps(got.dtype) is None:
        diff = got != want
        n = int(np.count_nonzero(diff))
        first = tuple(int(i) for i in np.argwhere(diff)[0]) if n else None
        big = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.size else 0.0
        return Difference(name, big, 0.0, 0.0, 0, n == 0, first)
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    mismatched = int(np.count_nonzero(nan_g != nan_w))
    both = ~(nan_g | nan_w)
    with np.errstate(all="ignore"):      # inf - inf and x / tiny are expected here, and masked
        d = np.where(both & ~((g == w) & np.isinf(w)), np.abs(g - w), 0.0)
        d = np.where(np.isnan(d), np.inf, d)
        rel = float(np.max(d / np.maximum(np.abs(w), np.finfo(np.float64).tiny), where=both, initial=0.0))
    finite_w = np.abs(w[both & np.isfinite(w)])
    scale = float(finite_w.max()) if finite_w.size else 0.0
    tol = math.inf if budget == math.inf else budget * eps * scale   # inf * 0 would be NaN
    big = float(d.max()) if d.size else 0.0
    first = tuple(int(i) for i in np.unravel_index(int(np.argmax(d)), d.shape)) if big > 0 else None
    return Difference(name, big, rel, tol, mismatched, mismatched == 0 and big <= tol, first)
