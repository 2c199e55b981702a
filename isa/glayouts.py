"""The public scale layouts of global tensors (MX_A_* / MX_B_* and HIF4_A_ZZ / HIF4_B_NN): where
element (i, j) of the scale matrix a TLOAD reads sits in the layout's 5-D tensor.

One table serves the verifier (shape rules, the matrix a tensor holds), the reference semantics
(a numpy gather) and the llvm lowering (the same index terms in IR). Each of the five indices is
a sum of terms ``coef * ((x // div) % mod)`` over x = i (the row) or j (the column), plus the
instruction's index in that dim; the tensor's own strides then give the address. The arithmetic
is the public CPU simulator's (MX) and the TMATMUL_MX_HIF4 page's 64-byte patch (HiF4);
decision 'Global scale layouts' says what each means and what stays out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .diagnostics import RuntimeFault
from .types import GlobalLayout, Layout

RANK = 5
MX_ROWS, MX_PAIR = 16, 2          # an MX fractal: 16 rows (or columns) x 2 scales along K
HIF4_ROWS, HIF4_RECORD = 16, 4    # a HiF4 patch: 16 rows (or columns) x one 4-byte record


@dataclass(frozen=True)
class Term:
    """``coef * ((x // div) % mod)`` with x the row (``"i"``) or column (``"j"``) of the matrix."""

    var: str
    div: int = 1
    mod: int | None = None
    coef: int = 1

    def top(self, n: int) -> int:
        """The largest value over x in [0, n), n > 0."""
        q = (n - 1) // self.div
        return self.coef * (q if self.mod is None else min(q, self.mod - 1))


@dataclass(frozen=True)
class ScaleLayout:
    """A scale layout: the operand side (A: one row per matrix row, K along columns; B: K along
    rows), the K unit a valid region is a whole number of, the static dims the layout fixes, the
    dims whose product is the matrix's rows / columns, and the five index expressions."""

    layout: GlobalLayout
    side: str
    k_unit: int
    fixed: Mapping[int, int]
    rows: tuple[int, ...]
    cols: tuple[int, ...]
    index: tuple[tuple[Term, ...], ...]
    words: str

    @property
    def tile_layouts(self) -> tuple[Layout, ...]:
        """Tile layouts of the mat tile it loads into: A row-major (ND, ZZ, or ZZ_MX: the public
        RowMajor/RowMajor tile with the 32-byte scale fractal), B column-major (DN, or NN_MX: the
        public ColMajor/ColMajor one)."""
        return (Layout.ND, Layout.ZZ, Layout.ZZ_MX) if self.side == "A" else (Layout.DN, Layout.NN_MX)

    @property
    def k_axis(self) -> str:
        return "cols" if self.side == "A" else "rows"


def _t(var: str, div: int = 1, mod: int | None = None, coef: int = 1) -> Term:
    return Term(var, div, mod, coef)


_NONE: tuple[Term, ...] = ()
_FLAT = {0: 1, 1: 1, 4: MX_PAIR}
_ZZ = {3: MX_ROWS, 4: MX_PAIR}
_HIF4 = {3: HIF4_ROWS, 4: HIF4_RECORD}

SCALE_LAYOUTS: dict[GlobalLayout, ScaleLayout] = {s.layout: s for s in (
    ScaleLayout(GlobalLayout.MX_A_ZZ, "A", MX_PAIR, _ZZ, (1, 3), (2, 4),
                (_NONE, (_t("i", 16),), (_t("j", 2),), (_t("i", 1, 16),), (_t("j", 1, 2),)),
                "[1, M/16, K/64, 16, 2]: 16 x 2 fractals, row-major inside and across; (i, j) at "
                "[0, i // 16, j // 2, i % 16, j % 2]"),
    ScaleLayout(GlobalLayout.MX_A_ND, "A", MX_PAIR, _FLAT, (2,), (3, 4),
                (_NONE, _NONE, (_t("i"),), (_t("j", 2),), (_t("j", 1, 2),)),
                "[1, 1, M, K/64, 2]: row-major M x K/32; (i, j) at [0, 0, i, j // 2, j % 2]"),
    ScaleLayout(GlobalLayout.MX_A_DN, "A", MX_PAIR, _FLAT, (3,), (2, 4),
                (_NONE, _NONE, (_t("j", 2),), (_t("i"),), (_t("j", 1, 2),)),
                "[1, 1, K/64, M, 2]: pairs of scales column-major; (i, j) at [0, 0, j // 2, i, j % 2]"),
    ScaleLayout(GlobalLayout.MX_B_NN, "B", MX_PAIR, _ZZ, (2, 4), (1, 3),
                (_NONE, (_t("j", 16),), (_t("i", 2),), (_t("j", 1, 16),), (_t("i", 1, 2),)),
                "[1, N/16, K/64, 16, 2]: MX_A_ZZ of the transpose; (i, j) at "
                "[0, j // 16, i // 2, j % 16, i % 2]"),
    ScaleLayout(GlobalLayout.MX_B_ND, "B", MX_PAIR, _FLAT, (2, 4), (3,),
                (_NONE, _NONE, (_t("i", 2),), (_t("j"),), (_t("i", 1, 2),)),
                "[1, 1, K/64, N, 2]: (i, j) at [0, 0, i // 2, j, i % 2]"),
    ScaleLayout(GlobalLayout.MX_B_DN, "B", MX_PAIR, _FLAT, (3, 4), (2,),
                (_NONE, _NONE, (_t("j"),), (_t("i", 2),), (_t("i", 1, 2),)),
                "[1, 1, N, K/64, 2]: row-major N x K/32 (the transpose); (i, j) at [0, 0, j, i // 2, i % 2]"),
    # A 64-byte patch per 16 rows and K group: bytes 0..31 the (Ea, Eb) pairs of its 16 rows, bytes
    # 32..63 their (Ec lo, Ec hi) pairs. Record byte b of row r sits at patch byte
    # (b // 2) * 32 + r * 2 + b % 2, i.e. patch index [((b // 2) * 8 + r // 2), (r % 2) * 2 + b % 2].
    ScaleLayout(GlobalLayout.HIF4_A_ZZ, "A", HIF4_RECORD, _HIF4, (1, 3), (2, 4),
                (_NONE, (_t("i", 16),), (_t("j", 4),), (_t("j", 2, 2, 8), _t("i", 2, 8)),
                 (_t("i", 1, 2, 2), _t("j", 1, 2))),
                "[1, M/16, K/64, 16, 4]: one 64-byte patch per 16 rows and 64-element K group, the (Ea, Eb) "
                "pairs of its rows then their Ec pairs; record byte b = j % 4 of row i at [0, i // 16, j // 4, "
                "((j % 4) // 2) * 8 + (i % 16) // 2, (i % 2) * 2 + j % 2]"),
    ScaleLayout(GlobalLayout.HIF4_B_NN, "B", HIF4_RECORD, _HIF4, (2, 4), (1, 3),
                (_NONE, (_t("j", 16),), (_t("i", 4),), (_t("i", 2, 2, 8), _t("j", 2, 8)),
                 (_t("j", 1, 2, 2), _t("i", 1, 2))),
                "[1, N/16, K/64, 16, 4]: HIF4_A_ZZ of the transpose; record byte b = i % 4 of column j at "
                "[0, j // 16, i // 4, ((i % 4) // 2) * 8 + (j % 16) // 2, (j % 2) * 2 + i % 2]"),
)}


def of(layout: GlobalLayout) -> ScaleLayout | None:
    """The scale layout ``layout`` names, or None for ND / DN / NZ / SCALE."""
    return SCALE_LAYOUTS.get(layout)


def shape_error(s: ScaleLayout, shape: tuple[int | None, ...]) -> str | None:
    """Why a tensor shape is not one of ``s``'s: rank 5, the fixed dims static and equal."""
    if len(shape) != RANK:
        return f"a {s.layout.value} tensor has rank {RANK}, got rank {len(shape)}"
    for d, want in s.fixed.items():
        if shape[d] != want:
            got = "?" if shape[d] is None else shape[d]
            return f"a {s.layout.value} tensor has shape[{d}] == {want}, got {got}"
    return None


def matrix_extent(s: ScaleLayout, shape: tuple[int | None, ...]) -> tuple[int | None, int | None]:
    """(rows, cols) of the matrix one index of dim 0 selects (None where a dim is dynamic)."""
    def prod(dims: tuple[int, ...]) -> int | None:
        n = 1
        for d in dims:
            if shape[d] is None:
                return None
            n *= shape[d]
        return n
    return prod(s.rows), prod(s.cols)


def span(s: ScaleLayout, rows: int, cols: int) -> tuple[int, ...]:
    """How many consecutive indices of each dim a rows x cols matrix (both > 0) touches."""
    n = {"i": rows, "j": cols}
    return tuple(1 + sum(t.top(n[t.var]) for t in terms) for terms in s.index)


def indices(s: ScaleLayout, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, ...]:
    """The five indices (before the instruction's offsets) of matrix elements (i, j)."""
    x = {"i": i, "j": j}
    out = []
    for terms in s.index:
        v = np.zeros(np.broadcast(i, j).shape, dtype=np.int64)
        for t in terms:
            q = x[t.var] // t.div
            v = v + t.coef * (q if t.mod is None else q % t.mod)
        out.append(v)
    return tuple(out)


def gather(s: ScaleLayout, array: np.ndarray, offsets: tuple[int, ...], rows: int, cols: int,
           what: str) -> np.ndarray:
    """The rows x cols matrix a TLOAD reads from a tensor of layout ``s`` at ``offsets``.
    RUNTIME_OOB (the dim, its extent and the index range) before anything is read."""
    if rows == 0 or cols == 0:
        return np.zeros((rows, cols), dtype=array.dtype)
    for d, (o, n) in enumerate(zip(offsets, span(s, rows, cols))):
        if o < 0 or o + n > array.shape[d]:
            raise RuntimeFault("RUNTIME_OOB", f"{what} accessed out of bounds in dim {d}",
                               expected=f"indices in [0, {array.shape[d]})", actual=f"[{o}, {o + n})")
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    at = tuple(o + ix for o, ix in zip(offsets, indices(s, i, j)))
    return array[at]
