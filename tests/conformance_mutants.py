"""A catalogue of deliberately broken backends: each is the reference backend with ONE
instruction's semantics replaced by the way a real implementation might get it wrong.

The conformance suite is only worth running if it fails such backends, so
tests/test_conformance_mutants.py runs the default ``pto conformance`` on each mutant's
instruction and asserts that it fails. Every mutant is a row of ``MUTANTS``: a name, the
mnemonic it breaks, the realistic bug in one line, the dtype tuples where the bug can show
(``fnmatch`` patterns over the report's dtype keys; elsewhere it behaves as the reference)
and the replacement semantics, built from a few wrappers around the reference semantics.
The catalogue was written before the generator was changed to catch these bugs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from openpto.backends.reference import ReferenceBackend
from openpto.isa import compute as C
from openpto.isa.attrs import CmpMode, RoundMode, SatMode
from openpto.isa.families import complex as CX
from openpto.isa.registry import get
from openpto.isa.values import GlobalRef, Tile

Rule = Callable[..., Any]

INTS = ("i*", "u*")
FLOATS = ("f*", "bf16*")


@dataclass(frozen=True)
class Mutant:
    """One realistic bug in one instruction."""

    name: str
    mnemonic: str
    bug: str
    dtypes: tuple[str, ...]
    rule: Rule

    def backend(self) -> ReferenceBackend:
        """The reference backend running ``rule`` for ``mnemonic`` (and nothing else changed)."""
        cls = type(f"Mutant_{self.name.replace('-', '_')}", (ReferenceBackend,),
                   {"name": f"mutant-{self.name}", "rules": {**ReferenceBackend.rules, self.mnemonic: self.rule}})
        return cls()


# --------------------------------------------------------------------------- wrappers

def _ref(mnemonic: str) -> Rule:
    return get(mnemonic).semantics


def after(mnemonic: str, fix: Callable[..., None]) -> Rule:
    """The reference semantics, then ``fix(**operands)`` corrupts the result."""
    def rule(**kw: Any) -> None:
        _ref(mnemonic)(**kw)
        with np.errstate(all="ignore"):
            fix(**kw)
    return rule


def before(mnemonic: str, alter: Callable[[dict[str, Any]], dict[str, Any]]) -> Rule:
    """The reference semantics on operands/attributes ``alter`` changed first."""
    def rule(**kw: Any) -> None:
        return _ref(mnemonic)(**alter(dict(kw)))
    return rule


def elementwise(names: tuple[str, ...], fn: Callable[..., np.ndarray | None],
                scalar_like: str = "dst") -> Callable[..., None]:
    """A fix over dst's valid region: ``fn(out, *inputs)`` returns the new values (or None).
    A scalar input takes the dtype of tile ``scalar_like`` (a compare's source, not its i1 dst)."""
    def fix(dst: Tile, **kw: Any) -> None:
        r, c = dst.valid
        like = dst if scalar_like == "dst" else kw[scalar_like]
        args = [kw[n].data[:r, :c] if isinstance(kw[n], Tile) else _scalar(kw[n], like.data.dtype)
                for n in names]
        new = fn(dst.data[:r, :c].copy(), *args)
        if new is not None:
            dst.data[:r, :c] = np.asarray(new).astype(dst.data.dtype)
    return fix


def _scalar(value: object, dtype: np.dtype) -> np.ndarray:
    return np.asarray(value).astype(dtype)


def _bounds(dtype: np.dtype) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def saturate(op: Callable[[Any, Any], Any]) -> Callable[..., np.ndarray | None]:
    """Integers clamp to the type's range instead of wrapping (floats untouched)."""
    def fn(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
        if out.dtype.kind not in "iu":
            return None
        lo, hi = _bounds(out.dtype)
        wide = op(a.astype(object), np.broadcast_to(b, a.shape).astype(object))
        return np.clip(wide, lo, hi).astype(out.dtype)
    return fn


def compare_select(greater: bool) -> Callable[..., np.ndarray | None]:
    """max as ``a > b ? a : b`` (min as ``a < b ? a : b``): NaN in a and -0/+0 go wrong."""
    def fn(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        b = np.broadcast_to(b, a.shape)
        return np.where(a > b if greater else a < b, a, b)
    return fn


def nan_ignoring(np_fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray | None]:
    """np.fmax/fmin: a number wins over NaN (the C fmax/fmin library call)."""
    def fn(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
        return np_fn(a, np.broadcast_to(b, a.shape)) if out.dtype.kind == "f" or out.dtype.name == "bfloat16" else None
    return fn


def wrap_result(values: np.ndarray, like: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of exact integers into ``like``'s dtype."""
    bits = like.dtype.itemsize * 8
    v = np.asarray(values, dtype=object) % (1 << bits)
    if like.dtype.kind == "i":
        v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
    return v.astype(like.dtype)


def _nan_to(tile: Tile, value: float) -> Tile:
    """A copy of ``tile`` with NaN replaced by ``value``."""
    data = tile.data.copy()
    data[data != data] = value
    return Tile(tile.type, data, tile.valid)


def _with_dst_stride(*names: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Sources ``names`` read as if their rows were dst's length apart (a kernel that computes
    every operand's address from dst's row stride): element (i, j) of a source is its flat
    element i * dst.cols + j. The same as the reference when the source has dst's columns."""
    def alter(kw: dict[str, Any]) -> dict[str, Any]:
        stride = kw["dst"].data.shape[1]
        for n in names:
            t = kw[n]
            flat = t.data.reshape(-1)
            rows, cols = t.data.shape
            at = np.arange(rows)[:, None] * stride + np.arange(cols)[None, :]
            data = np.where(at < flat.size, flat[np.minimum(at, flat.size - 1)], flat[:1])
            kw[n] = Tile(t.type, data.astype(t.data.dtype), t.valid)
        return kw
    return alter


def _with_stride_of(ref: str, *names: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """As ``_with_dst_stride``, with operand ``ref``'s row stride (absent operands are left alone:
    TSCATTER's mask form has no idx)."""
    def alter(kw: dict[str, Any]) -> dict[str, Any]:
        present = [n for n in names if kw.get(n) is not None]
        if not present:
            return kw
        moved = _with_dst_stride(*present)({**kw, "dst": kw[ref]})
        return {**kw, **{n: moved[n] for n in present}}
    return alter


def _set_attr(**changes: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def alter(kw: dict[str, Any]) -> dict[str, Any]:
        kw.update({k: (v(kw) if callable(v) else v) for k, v in changes.items()})
        return kw
    return alter


# --------------------------------------------------------------------------- elementwise


def _tshl_mod(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    n = np.broadcast_to(b, a.shape).astype(np.uint64) % bits
    return wrap_result(a.astype(object) * (2 ** n.astype(object)), a)


def _tshr_logical(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    if a.dtype.kind != "i":
        return None
    bits = a.dtype.itemsize * 8
    unsigned = a.view(f"u{a.dtype.itemsize}").astype(object)
    n = np.broadcast_to(b, a.shape).astype(np.uint64).astype(object)
    res = np.where(n >= bits, 0, unsigned // (2 ** np.minimum(n, bits)))
    return wrap_result(res, a)


def _tdiv_zero(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    return np.where(b == 0, 0, out) if out.dtype.kind in "iu" else None


def _tabs_min(out: np.ndarray, a: np.ndarray) -> np.ndarray | None:
    if out.dtype.kind != "i":
        return None
    lo, hi = _bounds(out.dtype)
    return np.where(a == lo, hi, out)


def _relu_nan_zero(out: np.ndarray, a: np.ndarray) -> np.ndarray:
    return np.where(a != a, 0, out)


def _neg_as_subtract(out: np.ndarray, a: np.ndarray) -> np.ndarray | None:
    return np.where(a == 0, np.zeros_like(a), out) if out.dtype.kind == "f" or out.dtype.name == "bfloat16" else None


def _sqrt_abs_zero(out: np.ndarray, a: np.ndarray) -> np.ndarray:
    return np.where(a == 0, np.zeros_like(a), out)


def _addc_narrow(out: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray | None:
    if out.dtype.kind in "iu":
        return None
    return ((a + b).astype(out.dtype) + c).astype(out.dtype)


def _cmp_nan_bits(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """EQ/NE compare bit patterns: NaN == NaN (same payload) is true."""
    if a.dtype.kind in "iu":
        return None
    b = np.broadcast_to(b, a.shape)
    same_bits = a.view(f"u{a.dtype.itemsize}") == b.view(f"u{b.dtype.itemsize}")
    return np.where((a != a) & same_bits, ~out, out)


def _cmp_rule(mnemonic: str, src: tuple[str, str]) -> Rule:
    fix = elementwise(src, _cmp_nan_bits, scalar_like=src[0])     # the scalar compares as the source dtype

    def rule(**kw: Any) -> None:
        _ref(mnemonic)(**kw)
        if kw["cmpMode"] in (CmpMode.EQ, CmpMode.NE):
            fix(**kw)
    return rule


# --------------------------------------------------------------------------- convert

def _cvt_mode(when: Callable[[Tile, Tile, RoundMode], bool], mode: RoundMode) -> Rule:
    def rule(dst: Tile, src: Tile, roundMode: RoundMode, satMode: SatMode) -> None:  # noqa: N803
        _ref("TCVT")(dst, src, mode if when(dst, src, roundMode) else roundMode, satMode)
    return rule


def _nearest(m: RoundMode) -> bool:
    return m in (RoundMode.RINT, RoundMode.NONE)


def _cvt_nan_int_min(dst: Tile, src: Tile, roundMode: RoundMode, satMode: SatMode) -> None:  # noqa: N803
    _ref("TCVT")(dst, src, roundMode, satMode)
    if src.dtype.is_float and dst.data.dtype.kind == "i":
        r, c = dst.valid
        x = src.data[:r, :c].astype(np.float32)
        dst.data[:r, :c] = np.where(x != x, np.iinfo(dst.data.dtype).min, dst.data[:r, :c])


# --------------------------------------------------------------------------- reduce / expand

def _rowsum_narrow(dst: Tile, src: Tile, **kw: Any) -> None:
    _ref("TROWSUM")(dst=dst, src=src, **kw)
    if src.data.dtype.kind in "iu" or src.data.dtype.itemsize > 2:
        return
    r, c = src.valid
    acc = np.zeros(r, dtype=src.data.dtype)
    with np.errstate(all="ignore"):
        for j in range(c):
            acc = (acc + src.data[:r, j]).astype(src.data.dtype)
    dst.data[:r, 0] = acc.astype(dst.data.dtype)


def _row_reduce_fix(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., None]:
    def fix(dst: Tile, src: Tile, **_: Any) -> None:
        r, c = src.valid
        if r and c:
            dst.data[:r, 0] = fn(src.data[:r, :c]).astype(dst.data.dtype)
    return fix


def _col_reduce_fix(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., None]:
    def fix(dst: Tile, src: Tile, **_: Any) -> None:
        r, c = src.valid
        if r and c:
            dst.data[0, :c] = fn(src.data[:r, :c]).astype(dst.data.dtype)
    return fix


def _rowmin_zero_init(x: np.ndarray) -> np.ndarray:
    return np.minimum(x.min(axis=1), np.zeros((), x.dtype))


def _rowmax_fmax(x: np.ndarray) -> np.ndarray:
    return np.fmax.reduce(x, axis=1) if x.dtype.kind != "iu" else x.max(axis=1)


def _colsum_skip_last(dst: Tile, src: Tile, **kw: Any) -> None:
    r, c = src.valid
    if r > 1:
        src = Tile(src.type, src.data.copy(), (r - 1, c))
        src.data[r - 1, :c] = 0
        src.valid = (r, c)
    _ref("TCOLSUM")(dst=dst, src=src, **kw)


def _rowexpand_row0(dst: Tile, src: Tile) -> None:
    _ref("TROWEXPAND")(dst=dst, src=src)
    r, c = dst.valid
    if r > 1:
        dst.data[1:r, :c] = dst.data[0, :c]


def _negate(out: np.ndarray, *_: np.ndarray) -> np.ndarray:
    return -out if out.dtype.kind != "i" and out.dtype.kind != "u" else wrap_result(-out.astype(object), out)


def _colexpand_div(dst: Tile, src0: Tile, src1: Tile, **kw: Any) -> None:
    _ref("TCOLEXPANDDIV")(dst=dst, src0=src0, src1=src1, **kw)
    r, c = dst.valid
    if dst.data.dtype.kind in "iu" or not (r and c):
        return
    with np.errstate(all="ignore"):
        recip = (np.ones((), src1.data.dtype) / src1.data[0, :c]).astype(src1.data.dtype)
        dst.data[:r, :c] = (src0.data[:r, :c] * recip).astype(dst.data.dtype)


# --------------------------------------------------------------------------- memory / movement

def _tload_leading_offsets(kw: dict[str, Any]) -> dict[str, Any]:
    src: GlobalRef = kw["src"]
    off = tuple(src.offsets)
    kw["src"] = GlobalRef(src.array, (0,) * max(len(off) - 2, 0) + off[-2:])
    return kw


def _tstore_whole_tile(dst: GlobalRef, src: Tile, **kw: Any) -> None:
    _ref("TSTORE")(dst=dst, src=src, **kw)
    a = dst.array if dst.array.ndim > 1 else dst.array.reshape(1, -1)
    off = tuple(dst.offsets) if dst.array.ndim > 1 else (0,) + tuple(dst.offsets)
    r0, c0 = off[-2:]
    rows = min(src.type.rows, a.shape[-2] - r0)
    cols = min(src.type.cols, a.shape[-1] - c0)
    vr, vc = src.valid
    if (rows, cols) == (vr, vc) or rows <= 0 or cols <= 0:
        return
    window = GlobalRef(dst.array, dst.offsets).window(rows, cols)
    extra = np.ones((rows, cols), dtype=bool)
    extra[:vr, :vc] = False
    window[extra] = src.data[:rows, :cols].astype(window.dtype)[extra]


def _textract_swapped(kw: dict[str, Any]) -> dict[str, Any]:
    kw["r0"], kw["c0"] = kw["c0"], kw["r0"]
    return kw


def _tinsert_whole_src(dst: Tile, src: Tile, r0: int, c0: int, **kw: Any) -> None:
    _ref("TINSERT")(dst=dst, src=src, r0=r0, c0=c0, **kw)
    r0, c0 = int(r0), int(c0)
    rows = max(min(src.type.rows, dst.valid[0] - r0), 0)
    cols = max(min(src.type.cols, dst.valid[1] - c0), 0)
    vr, vc = src.valid
    block = dst.data[r0:r0 + rows, c0:c0 + cols]
    extra = np.ones(block.shape, dtype=bool)
    extra[:vr, :vc] = False
    block[extra] = src.data[:rows, :cols].astype(block.dtype)[extra]


def _ttrans_bounds(dst: Tile, src: Tile, tmp: Tile | None = None) -> None:
    """The packed valid region's row stride taken as its row count: dst[i, j] = flat[j * r + i]
    instead of flat[j * c + i] (right only for square regions)."""
    r, c = src.valid
    _ref("TTRANS")(dst=dst, src=src, tmp=tmp)
    if r == c or not (r and c):
        return
    flat = src.data[:r, :c].reshape(-1)
    i, j = np.indices((c, r))
    dst.data[:c, :r] = np.take(flat, j * r + i, mode="wrap")


def _fillpad_zero(dst: Tile, src: Tile) -> None:
    _ref("TFILLPAD")(dst=dst, src=src)
    vr, vc = src.valid
    keep = dst.data[:vr, :vc].copy()
    dst.data[...] = 0
    dst.data[:vr, :vc] = keep


# --------------------------------------------------------------------------- matrix

def _matmul_acc_reread(dst: Tile, acc_in: Tile, a: Tile, b: Tile) -> None:
    """Writes a@b into dst first, then adds acc_in: wrong when acc_in is dst."""
    if acc_in is not dst and acc_in.data is not dst.data:
        return _ref("TMATMUL_ACC")(dst=dst, acc_in=acc_in, a=a, b=b)
    _ref("TMATMUL")(dst=dst, a=a, b=b)
    _ref("TMATMUL_ACC")(dst=dst, acc_in=dst, a=a, b=b)


def _matmul_acc_in_place_ignored(dst: Tile, acc_in: Tile, a: Tile, b: Tile) -> None:
    """acc_in ignored when it is dst (the accumulator taken as freshly cleared): right for
    separate tiles, wrong for the in-place accumulation of a loop over K."""
    if np.shares_memory(acc_in.data, dst.data):
        return _ref("TMATMUL")(dst=dst, a=a, b=b)
    return _ref("TMATMUL_ACC")(dst=dst, acc_in=acc_in, a=a, b=b)


def _matmul_skip_last_k(name: str) -> Rule:
    def rule(dst: Tile, a: Tile, b: Tile) -> None:
        m, k = a.valid
        if k > 1:
            a = Tile(a.type, a.data.copy(), a.valid)
            a.data[:, k - 1] = 0
        _ref(name)(dst=dst, a=a, b=b)
    return rule


def _matmul_narrow_acc(dst: Tile, a: Tile, b: Tile) -> None:
    _ref("TMATMUL")(dst=dst, a=a, b=b)
    if a.data.dtype.kind in "iu" or a.data.dtype.itemsize != 2:
        return
    m, k = a.valid
    n = b.valid[1]
    acc = np.zeros((m, n), dtype=a.data.dtype)
    for j in range(k):
        acc = (acc + (a.data[:m, j:j + 1].astype(np.float32) * b.data[j:j + 1, :n]).astype(a.data.dtype)
               ).astype(a.data.dtype)
    dst.data[:m, :n] = acc.astype(dst.data.dtype)


def _bias_first_only(kw: dict[str, Any]) -> dict[str, Any]:
    """Every column gets bias[0] (the bias vector's address not advanced)."""
    bias: Tile = kw["bias"]
    kw["bias"] = Tile(bias.type, np.broadcast_to(bias.data[:, :1], bias.data.shape).copy(), bias.valid)
    return kw


# --------------------------------------------------------------------------- complex

def _sort32_first_block(dst: Tile, src: Tile, idx: Tile) -> None:
    rows, n = src.valid
    values = src.read(rows, n, "src").reshape(-1)
    index = idx.read(rows, n, "idx").reshape(-1)
    col = np.broadcast_to(np.arange(n)[None, :], (rows, n))
    row = np.broadcast_to(np.arange(rows)[:, None], (rows, n))
    group = np.where(col < CX.SORT_BLOCK, row * (n + 1), row * (n + 1) + 1 + col).reshape(-1)
    order = CX._descending_order(values, group)
    dst.write(CX._records(values[order].reshape(rows, n), index[order].reshape(rows, n)))


def _sort32_unstable(dst: Tile, src: Tile, idx: Tile) -> None:
    """Equal keys keep their column order instead of going smaller index first."""
    rows, n = src.valid
    values = src.read(rows, n, "src").reshape(-1)
    index = idx.read(rows, n, "idx").reshape(-1)
    block = (np.arange(rows)[:, None] * n + np.arange(n)[None, :] // CX.SORT_BLOCK).reshape(-1)
    order = CX._descending_order(values, block)
    dst.write(CX._records(values[order].reshape(rows, n), index[order].reshape(rows, n)))


def _gather_row0(dst: Tile, src: Tile, idx: Tile | None = None, **kw: Any) -> None:
    _ref("TGATHER")(dst=dst, src=src, idx=idx, **kw)
    r, c = dst.valid
    if idx is None and r > 1:
        dst.data[1:r, :c] = dst.data[0, :c]


def _tri_strict(dst: Tile, diagonal: int, upper: bool = False) -> None:
    _ref("TTRI")(dst=dst, diagonal=int(diagonal) - (0 if upper else 1), upper=upper)


def _part_src1_region(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Rule:
    """The overlap taken from src1's valid region alone (src0 read beyond its own)."""
    def rule(dst: Tile, src0: Tile, src1: Tile) -> None:
        rows, cols = dst.valid
        rb, cb = min(rows, src1.valid[0]), min(cols, src1.valid[1])
        r0, c0 = min(rows, src0.valid[0]), min(cols, src0.valid[1])
        with np.errstate(all="ignore"):
            both = C.narrow(fn(C.widen(src0.data[:rb, :cb], src0.dtype), C.widen(src1.data[:rb, :cb], src1.dtype)),
                            dst.dtype)
        only0, only1 = src0.data[:r0, :c0].copy(), src1.data[:rb, :cb].copy()
        dst.write(only0)
        dst.write(only1)
        dst.write(both)
    return rule


def _scatter_first_wins(dst: Tile, src: Tile, idx: Tile | None = None, **kw: Any) -> None:
    if idx is None:                       # the mask form has no duplicate targets
        return _ref("TSCATTER")(dst=dst, src=src, **kw)
    rows, cols = src.valid
    flipped_src = Tile(src.type, src.data.copy(), src.valid)
    flipped_idx = Tile(idx.type, idx.data.copy(), idx.valid)
    flipped_src.data[:rows, :cols] = src.data[:rows, :cols][::-1]
    flipped_idx.data[:rows, :cols] = idx.data[:rows, :cols][::-1]
    _ref("TSCATTER")(dst=dst, src=flipped_src, idx=flipped_idx, **kw)


# --------------------------------------------------------------------------- sync

def _same_pipe_accepted(mnemonic: str) -> Rule:
    def rule(src_pipe: Any, dst_pipe: Any, event_id: Any) -> None:
        if str(src_pipe) == str(dst_pipe):
            return None
        return _ref(mnemonic)(src_pipe=src_pipe, dst_pipe=dst_pipe, event_id=event_id)
    return rule


def _event_id_off_by_one(mnemonic: str) -> Rule:
    def rule(src_pipe: Any, dst_pipe: Any, event_id: Any) -> None:
        if isinstance(event_id, (int, np.integer)) and event_id == 8:
            event_id = 7
        return _ref(mnemonic)(src_pipe=src_pipe, dst_pipe=dst_pipe, event_id=event_id)
    return rule


def _tassign_16_aligned(tile: Tile, addr: Any) -> None:
    if isinstance(addr, (int, np.integer)) and addr % 32 == 16:
        addr = addr - 16
    return _ref("TASSIGN")(tile=tile, addr=addr)


# --------------------------------------------------------------------------- the catalogue

BIN = ("src0", "src1")
TS = ("src", "scalar")

MUTANTS: tuple[Mutant, ...] = tuple(Mutant(*row) for row in (
    # elementwise
    ("tadd-saturates", "TADD", "integer add clamps to the type's range instead of wrapping", INTS,
     after("TADD", elementwise(BIN, saturate(lambda a, b: a + b)))),
    ("tsub-saturates", "TSUB", "integer subtract clamps instead of wrapping", INTS,
     after("TSUB", elementwise(BIN, saturate(lambda a, b: a - b)))),
    ("tmul-saturates", "TMUL", "integer multiply clamps instead of keeping the low bits", INTS,
     after("TMUL", elementwise(BIN, saturate(lambda a, b: a * b)))),
    ("tdiv-int-by-zero-is-0", "TDIV", "integer x/0 gives 0 instead of -1 (all bits set)", INTS,
     after("TDIV", elementwise(BIN, _tdiv_zero))),
    ("tmax-compare-select", "TMAX", "max as a > b ? a : b: NaN in src0 lost, max(-0, +0) = +0 only by luck",
     FLOATS, after("TMAX", elementwise(BIN, compare_select(True)))),
    ("tmin-fmin", "TMIN", "min via fmin: a number wins over NaN", FLOATS,
     after("TMIN", elementwise(BIN, nan_ignoring(np.fmin)))),
    ("tshl-count-mod-width", "TSHL", "shift count taken modulo the bit width (x86) instead of giving 0",
     INTS, after("TSHL", elementwise(BIN, _tshl_mod))),
    ("tshr-logical-signed", "TSHR", "signed right shift is logical instead of arithmetic", ("i*",),
     after("TSHR", elementwise(BIN, _tshr_logical))),
    ("tabs-int-min-saturates", "TABS", "abs(MIN) clamps to MAX instead of wrapping to MIN", ("i*",),
     after("TABS", elementwise(("src",), _tabs_min))),
    ("tneg-as-zero-minus", "TNEG", "negation as 0 - x: neg(+0) = +0 instead of -0", FLOATS,
     after("TNEG", elementwise(("src",), _neg_as_subtract))),
    ("trelu-nan-to-zero", "TRELU", "relu as x > 0 ? x : 0 turns NaN into 0", FLOATS,
     after("TRELU", elementwise(("src",), _relu_nan_zero))),
    ("tsqrt-minus-zero", "TSQRT", "sqrt(-0) = +0 (sign of zero dropped)", FLOATS,
     after("TSQRT", elementwise(("src",), _sqrt_abs_zero))),
    ("trem-truncated", "TREM", "floored remainder implemented as C fmod (sign of the dividend)", ("*",),
     _ref("TFMOD")),
    ("tfmod-floored", "TFMOD", "truncated remainder implemented as Python % (sign of the divisor)", ("*",),
     _ref("TREM")),
    ("taddc-narrow-intermediate", "TADDC", "src0 + src1 rounded to f16/bf16 before adding src2",
     ("f16*", "bf16*"), after("TADDC", elementwise(("src0", "src1", "src2"), _addc_narrow))),
    ("tadd-dst-row-stride", "TADD", "sources addressed with dst's row stride (right only for equal static "
     "shapes)", ("*",), before("TADD", _with_dst_stride(*BIN))),
    ("tcmp-nan-bits-equal", "TCMP", "EQ/NE compare bit patterns: NaN == NaN when the payloads match",
     ("i1,f*", "i1,bf16*"), _cmp_rule("TCMP", BIN)),
    # convert
    ("tcvt-rint-ties-away", "TCVT", "round-to-nearest breaks ties away from zero instead of to even",
     ("*",), _cvt_mode(lambda d, s, m: _nearest(m), RoundMode.ROUND)),
    ("tcvt-int-to-float-truncates", "TCVT", "integer -> float conversion truncates instead of rounding",
     ("f*,i*", "f*,u*", "bf16,i*", "bf16,u*"),
     _cvt_mode(lambda d, s, m: _nearest(m) and d.dtype.is_float and not s.dtype.is_float, RoundMode.TRUNC)),
    ("tcvt-saturation-ignored", "TCVT", "float -> integer wraps even with satMode ON",
     ("i*,f*", "u*,f*", "i*,bf16", "u*,bf16"), before("TCVT", _set_attr(satMode=SatMode.OFF))),
    ("tcvt-dst-row-stride", "TCVT", "src addressed with dst's row stride (right only for equal static shapes)",
     ("*",), before("TCVT", _with_dst_stride("src"))),
    ("tcvt-nan-to-int-min", "TCVT", "NaN -> integer gives MIN (x86 cvttss2si) instead of 0",
     ("i*,f*", "i*,bf16"), _cvt_nan_int_min),
    # tile-scalar
    ("tadds-saturates", "TADDS", "integer add of a scalar clamps instead of wrapping", INTS,
     after("TADDS", elementwise(TS, saturate(lambda a, b: a + b)))),
    ("tmaxs-compare-select", "TMAXS", "max with a scalar as a > s ? a : s: NaN and -0 go wrong", FLOATS,
     after("TMAXS", elementwise(TS, compare_select(True)))),
    ("tmins-fmin", "TMINS", "min with a scalar via fmin: a number wins over NaN", FLOATS,
     after("TMINS", elementwise(TS, nan_ignoring(np.fmin)))),
    ("tdivs-reverse-ignored", "TDIVS", "the reverse attribute is ignored (always src / scalar)", ("*",),
     before("TDIVS", _set_attr(reverse=False))),
    ("tshls-count-mod-width", "TSHLS", "scalar shift count taken modulo the bit width", INTS,
     after("TSHLS", elementwise(TS, _tshl_mod))),
    ("tlrelu-max-form", "TLRELU", "leaky relu as max(x, slope * x): wrong for slope > 1", FLOATS,
     after("TLRELU", elementwise(TS, lambda out, a, s: np.maximum(a, (a * s).astype(a.dtype))))),
    ("tcmps-nan-bits-equal", "TCMPS", "EQ/NE against a scalar compare bit patterns (NaN == NaN)",
     ("i1,f*", "i1,bf16*"), _cmp_rule("TCMPS", TS)),
    ("texpands-first-row", "TEXPANDS", "fills only the first row of the valid region", ("*",),
     after("TEXPANDS", lambda dst, **_: dst.data.__setitem__((slice(1, dst.valid[0]), slice(0, dst.valid[1])), 0))),
    ("tsels-inverted", "TSELS", "mask polarity inverted: false selects src", ("*",),
     before("TSELS", _set_attr(mask=lambda kw: Tile(kw["mask"].type, ~kw["mask"].data, kw["mask"].valid)))),
    # reduce / expand
    ("trowsum-f16-accumulator", "TROWSUM", "f16/bf16 rows summed in an f16/bf16 accumulator",
     ("f16*", "bf16*"), _rowsum_narrow),
    ("trowmax-nan-ignored", "TROWMAX", "row max via fmax: NaN elements skipped", FLOATS,
     after("TROWMAX", _row_reduce_fix(_rowmax_fmax))),
    ("trowmin-zero-init", "TROWMIN", "accumulator initialised to 0 instead of the first element", ("*",),
     after("TROWMIN", _row_reduce_fix(_rowmin_zero_init))),
    ("tcolsum-skips-last-row", "TCOLSUM", "column loop stops one row early", ("*",), _colsum_skip_last),
    ("tcolmax-nan-ignored", "TCOLMAX", "column max via fmax: NaN elements skipped", FLOATS,
     after("TCOLMAX", _col_reduce_fix(lambda x: np.fmax.reduce(x, axis=0)))),
    ("trowexpand-row0", "TROWEXPAND", "every row gets row 0's value", ("*",), _rowexpand_row0),
    ("trowexpandsub-swapped", "TROWEXPANDSUB", "operands swapped: src1 - src0", ("*",),
     after("TROWEXPANDSUB", elementwise(("src0",), _negate))),
    ("tcolexpanddiv-reciprocal", "TCOLEXPANDDIV", "division as multiplication by a rounded reciprocal",
     FLOATS, _colexpand_div),
    ("trowexpandmax-fmax", "TROWEXPANDMAX", "max against the row value via fmax: NaN in src0 skipped",
     FLOATS, before("TROWEXPANDMAX", _set_attr(src0=lambda kw: _nan_to(kw["src0"], -np.inf)))),
    # memory
    ("tload-leading-offsets-ignored", "TLOAD", "offsets applied only on the last two dimensions", ("*",),
     before("TLOAD", _tload_leading_offsets)),
    ("tstore-whole-tile", "TSTORE", "stores the whole static tile, not its valid region", ("*",),
     _tstore_whole_tile),
    ("tstore-atomic-ignored", "TSTORE", "atomic add/max/min performed as a plain store", ("*",),
     before("TSTORE", _set_attr(atomic=lambda kw: type(kw["atomic"]).NONE))),
    # movement
    ("textract-offsets-swapped", "TEXTRACT", "r0 and c0 swapped", ("*",), before("TEXTRACT", _textract_swapped)),
    ("tinsert-whole-src", "TINSERT", "inserts the whole static src tile, not its valid region", ("*",),
     _tinsert_whole_src),
    ("ttrans-bounds-swapped", "TTRANS", "row stride taken as the row count (right only for square regions)",
     ("*",), _ttrans_bounds),
    ("tfillpad-zero", "TFILLPAD", "pads with 0 whatever the tile's pad value", ("*",), _fillpad_zero),
    # matrix
    ("tmatmul-skips-last-k", "TMATMUL", "the K loop stops one step early", ("*",), _matmul_skip_last_k("TMATMUL")),
    ("tmatmul-f16-accumulator", "TMATMUL", "f16/bf16 products summed in an f16/bf16 accumulator",
     ("f*,f16*", "f*,bf16*"), _matmul_narrow_acc),
    ("tmatmul-acc-in-place", "TMATMUL_ACC", "acc_in read after dst was written (wrong when acc_in is dst)",
     ("*",), _matmul_acc_reread),
    ("tmatmul-acc-in-place-ignored", "TMATMUL_ACC", "acc_in ignored when it is dst (accumulating in place "
     "restarts from zero)", ("*",), _matmul_acc_in_place_ignored),
    ("tmatmul-bias-first-only", "TMATMUL_BIAS", "bias[0] added to every column (bias pointer not advanced)",
     ("*",), before("TMATMUL_BIAS", _bias_first_only)),
    ("tgemv-skips-last-k", "TGEMV", "the K loop stops one step early", ("*",), _matmul_skip_last_k("TGEMV")),
    # complex
    ("tsort32-first-block", "TSORT32", "sorts only the first 32-element block of each row", ("*",),
     _sort32_first_block),
    ("tsort32-unstable", "TSORT32", "equal keys in column order, not smaller index first", ("*",),
     _sort32_unstable),
    ("tgather-row0", "TGATHER", "mask-pattern gather repeats row 0 in every row", ("*",), _gather_row0),
    ("ttri-strict-diagonal", "TTRI", "lower triangle as j < i + d (diagonal excluded)", ("*",), _tri_strict),
    ("tpartadd-src1-region", "TPARTADD", "overlap taken from src1's valid region (src0 read beyond its own)",
     ("*",), _part_src1_region(np.add)),
    ("tpartmax-fmax", "TPARTMAX", "overlap max via fmax: NaN skipped", FLOATS,
     after("TPARTMAX", elementwise(BIN, lambda out, a, b: np.where((a != a) | (b != b), np.fmax(a, b), out)))),
    ("tscatter-first-writer-wins", "TSCATTER", "duplicate targets keep the first write, not the last",
     ("*",), _scatter_first_wins),
    ("tscatter-idx-src-row-stride", "TSCATTER", "idx addressed with src's row stride (right only for equal "
     "static shapes)", ("*",), before("TSCATTER", _with_stride_of("src", "idx"))),
    # sync
    ("set-flag-same-pipe", "SET_FLAG", "a flag from a pipe to itself is accepted", ("*",),
     _same_pipe_accepted("SET_FLAG")),
    ("wait-flag-event-8", "WAIT_FLAG", "event id range checked as <= 8 (off by one)", ("*",),
     _event_id_off_by_one("WAIT_FLAG")),
    ("tassign-16-byte-aligned", "TASSIGN", "addresses checked for 16-byte instead of 32-byte alignment",
     ("*",), _tassign_16_aligned),
))

BY_NAME: dict[str, Mutant] = {m.name: m for m in MUTANTS}
