"""The public scale layouts of global tensors (MX_A_* / MX_B_* and HIF4_A_ZZ / HIF4_B_NN): where
element (i, j) of the scale matrix a TLOAD reads sits in the layout's 5-D tensor; and the
convolution layouts (NC1HWC0, NDC1HWC0, FRACTAL_Z, FRACTAL_Z_3D; ``CONV_LAYOUTS`` below), whose dims regroup
into a feature-map or weight matrix.

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


# ----------------------------------------------------------------------------- convolution layouts

C0_BYTES = 32                     # a C0 group of channels fills 32 bytes
WHOLE, OUTER, INNER = "whole", "outer", "inner"   # a digit spells a dim, or a folded dim's part


@dataclass(frozen=True)
class ConvLayout:
    """A convolution layout: a rank-5 tensor whose dims regroup into one matrix. Row i spells its
    digits over the ``rows`` dims (outermost first, each dim's extent its radix), column j over
    the ``cols`` dims; dim ``c0`` holds the C0 channels of 32 bytes. The matrix is the tensor's
    transpose to ``rows + cols`` reshaped to 2-D (the public simulator's MapTileIndicesToGlobalOffset).
    A ``folded`` dim (NDC1HWC0's W*C0) appears in both: its C0 groups are a row digit (OUTER),
    its C0 elements the last column digit (INNER)."""

    layout: GlobalLayout
    rows: tuple[int, ...]
    cols: tuple[int, ...]
    tile_layouts: tuple[Layout, ...]     # mat tile layouts a TLOAD fills (the ConvTile's bytes)
    stores: bool                         # an acc TSTORE / TSTORE_FP may write it
    words: str
    c0: int = 4
    folded: int | None = None            # the dim holding W * C0 (C0 implicit in the public tensor)
    unstored: tuple[str, ...] = ()       # element types an acc store may not write (dtype names)

    def c0_sizes(self, itemsize: int, acc_store: bool) -> tuple[int, ...]:
        """The C0 extents allowed for elements of ``itemsize`` bytes: 32 bytes of them; an acc
        store to a 4-byte tensor may also write 16 (the public fixpipe's f32 / i32 rows)."""
        base = max(C0_BYTES // itemsize, 1)
        return (base, 16) if acc_store and itemsize == 4 and self.folded is None else (base,)

    def digits(self, var: str) -> tuple[tuple[int, str], ...]:
        """(dim, part) per digit of the row (``"i"``) or column (``"j"``), outermost first."""
        dims, part = (self.rows, OUTER) if var == "i" else (self.cols, INNER)
        return tuple((d, part if d == self.folded else WHOLE) for d in dims)


_FEATURE_MAP = "the feature map: row (n, h, w), column (c1, c0), i.e. channel c1 * C0 + c0"
_WEIGHTS = "the weights: row (c1, h, w, c0), i.e. K = ((c1 * H + h) * W + w) * C0 + c0, column n"

CONV_LAYOUTS: dict[GlobalLayout, ConvLayout] = {c.layout: c for c in (
    ConvLayout(GlobalLayout.NC1HWC0, (0, 2, 3), (1, 4), (Layout.NZ,), True,
               "[N, C1, H, W, C0]: " + _FEATURE_MAP + "; (i, j) at [i // (H*W), j // C0, (i // W) % H, "
               "i % W, j % C0]"),
    ConvLayout(GlobalLayout.NDC1HWC0, (0, 3, 4), (1, 2, 4), (Layout.NZ,), True,
               "[N, D, C1, H, W*C0] (the public [N, D, C1, H, W] tensor, whose W stride is C0 elements, with "
               "C0 folded into dim 4): the feature map with row (n, h, w) and column (d, c1, c0); (i, j) at "
               "[i // (H*W), j // (C1*C0), (j // C0) % C1, (i // W) % H, (i % W) * C0 + j % C0]",
               folded=4, unstored=("i32",)),
    ConvLayout(GlobalLayout.FRACTAL_Z, (0, 1, 2, 4), (3,), (Layout.ZN,), False,
               "[C1, H, W, N, C0]: " + _WEIGHTS + "; (i, j) at [i // (H*W*C0), (i // (W*C0)) % H, "
               "(i // C0) % W, j, i % C0]"),
    ConvLayout(GlobalLayout.FRACTAL_Z_3D, (0, 1, 2, 4), (3,), (Layout.ZN,), False,
               "[D*C1, H, W, N, C0]: FRACTAL_Z with the depth folded into dim 0 (row (d, c1, h, w, c0))"),
)}


def conv_of(layout: GlobalLayout) -> ConvLayout | None:
    """The convolution layout ``layout`` names, or None."""
    return CONV_LAYOUTS.get(layout)


def c0_of(itemsize: int) -> int:
    """C0: the elements of ``itemsize`` bytes in 32 bytes."""
    return max(C0_BYTES // itemsize, 1)


def conv_shape_error(c: ConvLayout, shape: tuple[int | None, ...], itemsize: int,
                     acc_store: bool = False) -> str | None:
    """Why a tensor shape is not one of ``c``'s: rank 5, dim ``c0`` static and a C0 size (a
    folded dim: static, positive and a multiple of C0)."""
    if len(shape) != RANK:
        return f"a {c.layout.value} tensor has rank {RANK}, got rank {len(shape)}"
    got = "?" if shape[c.c0] is None else shape[c.c0]
    if c.folded is not None:
        c0 = c0_of(itemsize)
        if shape[c.c0] is None or shape[c.c0] <= 0 or shape[c.c0] % c0:
            return (f"a {c.layout.value} tensor of {itemsize}-byte elements has shape[{c.c0}] = W * C0, a "
                    f"static positive multiple of C0 = {c0} ({C0_BYTES} bytes), got {got}")
        return None
    sizes = c.c0_sizes(itemsize, acc_store)
    if shape[c.c0] not in sizes:
        want = " or ".join(str(n) for n in sizes)
        return (f"a {c.layout.value} tensor of {itemsize}-byte elements has C0 = shape[{c.c0}] == {want} "
                f"({C0_BYTES} bytes), got {got}")
    return None


def digit_extent(shape: tuple[int | None, ...], dim: int, part: str, c0: int) -> int | None:
    """The radix of one digit: a whole dim's extent, a folded dim's C0 groups or its C0."""
    if part == INNER:
        return c0
    n = shape[dim]
    return None if n is None else (n // c0 if part == OUTER else n)


def conv_extent(c: ConvLayout, shape: tuple[int | None, ...], itemsize: int) -> tuple[int | None, int | None]:
    """(rows, cols) of the matrix a tensor of layout ``c`` holds (None where a dim is dynamic)."""
    c0 = c0_of(itemsize)

    def prod(var: str) -> int | None:
        n = 1
        for d, part in c.digits(var):
            e = digit_extent(shape, d, part, c0)
            if e is None:
                return None
            n *= e
        return n
    return prod("i"), prod("j")


def conv_radices(c: ConvLayout) -> tuple[tuple[str, int, str, tuple[tuple[int, str], ...]], ...]:
    """Per digit: (the matrix coordinate spelling it, its dim, its part, the digits inside it),
    so that the digit is ``(x // prod(radices of the inner digits)) % radix``; dim d's index is
    the sum of its digits, an OUTER one times C0."""
    out = []
    for var in ("i", "j"):
        ds = c.digits(var)
        for k, (d, part) in enumerate(ds):
            out.append((var, d, part, ds[k + 1:]))
    return tuple(out)


def conv_places(c: ConvLayout, array: np.ndarray, offsets: tuple[int, ...], rows: int, cols: int,
                what: str) -> tuple[np.ndarray, ...]:
    """The 5-D indices of a rows x cols transfer with a tensor of layout ``c`` at ``offsets``.
    RUNTIME_VALID_REGION unless the matrix is the whole tensor's; RUNTIME_OOB (the dim, its extent
    and the index range) when a written index moves it off the tensor; both before any access."""
    shape = array.shape
    c0 = c0_of(array.dtype.itemsize)
    want = conv_extent(c, shape, array.dtype.itemsize)
    if (rows, cols) != want:
        raise RuntimeFault("RUNTIME_VALID_REGION", f"a {c.layout.value} transfer moves the whole tensor's "
                           "matrix", expected=f"valid region {want[0]}x{want[1]}", actual=f"{rows}x{cols}")
    if rows == 0 or cols == 0:
        return tuple(np.zeros((rows, cols), dtype=np.int64) for _ in shape)
    for d, o in enumerate(offsets):
        if o < 0 or o + shape[d] > shape[d]:
            raise RuntimeFault("RUNTIME_OOB", f"{what} accessed out of bounds in dim {d}",
                               expected=f"indices in [0, {shape[d]})", actual=f"[{o}, {o + shape[d]})")
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    x = {"i": i, "j": j}
    out = [np.full((rows, cols), o, dtype=np.int64) for o in offsets]
    for var, d, part, inner in conv_radices(c):
        div = int(np.prod([digit_extent(shape, k, p, c0) for k, p in inner], dtype=np.int64))
        digit = (x[var] // div) % digit_extent(shape, d, part, c0)
        out[d] = out[d] + (digit * c0 if part == OUTER else digit)
    return tuple(out)
