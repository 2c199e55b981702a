"""Matrix (cube) instructions: C = A @ B with optional input accumulator, bias row or MX scales.

M = A.valid_rows (1 for the GEMV forms), K = A.valid_cols, N = B.valid_cols. A lives in a left
tile, B in a right tile, C in an acc tile. Float products are exact in f64; the reference sums
them in f64 and rounds once to f32 (contract: order-independent ``sum`` tolerance). i8 x i8
accumulates in i32 and wraps.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from .. import compute as C
from .. import constraints as K
from .. import dtypes as dt
from .. import hifloat4
from ..diagnostics import RuntimeFault
from ..registry import declare
from ..spec import Constraint, Domain, DTypeRule, Example, Family, Instruction, Numerics, Operand, tuples
from ..types import Location, Layout, Pipe, TileType, Type
from ..values import Tile
from ._helpers import tile_in, tile_out

MX_BLOCK = 32          # elements along K sharing one MX scale
_E8M0_NAN = 255        # the E8M0 encoding of NaN
_E8M0_BIAS = 127

_A2_TRIPLES = ((dt.I32, dt.I8, dt.I8), (dt.F32, dt.F16, dt.F16), (dt.F32, dt.BF16, dt.BF16),
               (dt.F32, dt.F32, dt.F32))
_FP8_TRIPLES = tuple((dt.F32, a, b) for a in dt.FP8 for b in dt.FP8)
_ALL_TRIPLES = _A2_TRIPLES + _FP8_TRIPLES

_SUM = Numerics("sum", note="products are exact; the reference sums in f64 and rounds once to f32; "
                            "i8 x i8 -> i32 is exact and wraps")


# ----------------------------------------------------------------------------- operands

_DST = tile_out("dst", "accumulator C (M x N)", locations=(Location.ACC,))
_A = tile_in("a", "left matrix A (M x K)", locations=(Location.LEFT,))
_B = tile_in("b", "right matrix B (K x N)", locations=(Location.RIGHT,))
_ACC_IN = tile_in("acc_in", "input accumulator added to A @ B (may be dst itself)", locations=(Location.ACC,))
_BIAS = tile_in("bias", "1 x N bias row added to every row", locations=(Location.BIAS,))
# MX scales live in the scale buffers (public TileLeftScale / TileRightScale); left / right stay
# accepted for programs written before openpto had those locations.
_SCALE_A = tile_in("scale_a", "E8M0 scales of A (u8 or f8e8m0 codes): M x ceil(K/32)", locations=(Location.SCALE_LEFT, Location.LEFT))
_SCALE_B = tile_in("scale_b", "E8M0 scales of B (u8 or f8e8m0 codes): ceil(K/32) x N", locations=(Location.SCALE_RIGHT, Location.RIGHT))


# ----------------------------------------------------------------------------- static rules

def _fractal(t: TileType) -> tuple[int, int]:
    """Inner box (rows, cols) of a boxed tile: 16x16 (1024 B) in acc, else 512 B boxes of
    16 x C0 (NZ, ZZ: inner row-major) or C0 x 16 (ZN: inner column-major), C0 = 32 B / element
    (half a byte for the 4-bit types); a scale layout's 32-byte box (16x2 or 2x16)."""
    if t.layout.scale_box is not None:
        return t.layout.scale_box
    if t.loc is Location.ACC:
        return (16, 16)
    c0 = 256 // dt.memory_bits(t.dtype)           # 64 for the 4-bit types
    return (c0, 16) if t.layout is Layout.ZN else (16, c0)


def _whole_fractals(*names: str) -> Constraint:
    def check(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
        for n in names:
            t = types.get(n)
            if not (isinstance(t, TileType) and t.layout.boxed):
                continue
            ir, ic = _fractal(t)
            if (t.rows % ir and t.rows != 1) or t.cols % ic:
                return f"{n} ({t.layout.value}) is {t.rows}x{t.cols}, not whole {ir}x{ic} fractals"
        return None
    return K.custom(f"boxed (NZ/ZN/ZZ) {', '.join(names)} are whole fractals: rows a multiple of the box "
                    "rows (or 1), cols a multiple of the box cols", check, "LEGAL_LAYOUT")


def _blocks_cover(scale: str, axis: str) -> Constraint:
    """A scale tile holds ceil(K/32) block scales along ``axis`` (K = a.valid_cols)."""
    attr = f"valid_{axis}"

    def check(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
        s, a = types.get(scale), types.get("a")
        if not (isinstance(s, TileType) and isinstance(a, TileType)):
            return None
        have, k = getattr(s, attr), a.valid_cols
        if have is None or k is None or have * MX_BLOCK >= k:
            return None
        return f"{scale}.{attr} = {have} holds fewer than ceil({k}/{MX_BLOCK}) block scales"
    return K.custom(f"{scale}.{attr} >= ceil(a.valid_cols / {MX_BLOCK})", check, "STRUCT_VALID_REGION")


def _shape_rules(gemv: bool) -> tuple[Constraint, ...]:
    m_rule = () if gemv else (K.at_least("dst", "valid_rows", "a", "valid_rows", "STRUCT_VALID_REGION"),)
    return (K.equal("a", "rows", "dst", "rows"), K.equal("a", "cols", "b", "rows"),
            K.equal("b", "cols", "dst", "cols"),
            K.at_least("b", "valid_rows", "a", "valid_cols", "STRUCT_VALID_REGION"),
            K.at_least("dst", "valid_cols", "b", "valid_cols", "STRUCT_VALID_REGION")) + m_rule


# ----------------------------------------------------------------------------- semantics

def _e8m0(codes: np.ndarray) -> np.ndarray:
    """E8M0 scale codes as f64 values 2**(e - 127); 255 is NaN."""
    e = codes.astype(np.int64)
    return np.where(e == _E8M0_NAN, np.nan, np.ldexp(1.0, e - _E8M0_BIAS))


def _operands(dst: Tile, a: Tile, b: Tile, gemv: bool) -> tuple[np.ndarray, np.ndarray]:
    """A (M x K) and B (K x N) in the accumulation type: f64 for floats, i64 for integers."""
    m = 1 if gemv else a.valid[0]
    k, n = a.valid[1], b.valid[1]
    wide = np.float64 if dst.dtype.is_float else np.int64
    return a.read(m, k, "a").astype(wide), b.read(k, n, "b").astype(wide)


def _finish(dst: Tile, total: np.ndarray) -> None:
    """Round the f64 sum once to f32, or wrap the i64 sum to i32, into dst's top-left block."""
    with np.errstate(all="ignore"):
        dst.write(C.narrow(total, dst.dtype))


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum_k a[i, k] * b[k, j] with IEEE special values (no BLAS zero-skipping)."""
    with np.errstate(all="ignore"):
        return np.einsum("ik,kj->ij", a, b)


def _plain(gemv: bool) -> Callable[..., None]:
    def semantics(dst: Tile, a: Tile, b: Tile) -> None:
        _finish(dst, _dot(*_operands(dst, a, b, gemv)))
    return semantics


def _accumulate(gemv: bool) -> Callable[..., None]:
    def semantics(dst: Tile, acc_in: Tile, a: Tile, b: Tile) -> None:
        x, y = _operands(dst, a, b, gemv)
        prior = acc_in.read(x.shape[0], y.shape[1], "acc_in").astype(x.dtype)
        with np.errstate(all="ignore"):
            _finish(dst, prior + _dot(x, y))
    return semantics


def _biased(gemv: bool) -> Callable[..., None]:
    def semantics(dst: Tile, a: Tile, b: Tile, bias: Tile) -> None:
        x, y = _operands(dst, a, b, gemv)
        row = bias.read(1, y.shape[1], "bias").astype(x.dtype)
        with np.errstate(all="ignore"):
            _finish(dst, _dot(x, y) + row)
    return semantics


def _mx(gemv: bool) -> Callable[..., None]:
    def semantics(dst: Tile, a: Tile, scale_a: Tile, b: Tile, scale_b: Tile) -> None:
        x, y = _operands(dst, a, b, gemv)
        (m, k), n = x.shape, y.shape[1]
        block = np.arange(k) // MX_BLOCK          # the scale index of each position along K
        kb = -(-k // MX_BLOCK)
        sa = _e8m0(scale_a.read(m, kb, "scale_a"))[:, block]
        sb = _e8m0(scale_b.read(kb, n, "scale_b"))[block, :]
        with np.errstate(all="ignore"):
            _finish(dst, _dot(x * sa, y * sb))
    return semantics


# ----------------------------------------------------------------------------- declarations

_ACC_T = {False: "!pto.tile<16x16xf32, loc=acc, layout=NZ>", True: "!pto.tile<1x16xf32, loc=acc, layout=NZ>"}
_LEFT_T = {False: "!pto.tile<16x16xf16, loc=left, layout=NZ>", True: "!pto.tile<1x16xf16, loc=left, layout=NZ>"}
_RIGHT_T = "!pto.tile<16x16xf16, loc=right, layout=ZN>"
_MX_TYPES = {
    False: {"a": "!pto.tile<16x64xf8e4m3, loc=left, layout=NZ>", "scale_a": "!pto.tile<16x2xu8, loc=scale_left>"},
    True: {"a": "!pto.tile<1x64xf8e4m3, loc=left, layout=NZ>", "scale_a": "!pto.tile<1x2xu8, loc=scale_left>"},
}
_MX_RIGHT = {"b": "!pto.tile<64x16xf8e4m3, loc=right, layout=ZN>",
             "scale_b": "!pto.tile<2x16xu8, loc=scale_right, layout=DN>"}

_SPECIAL = ("IEEE products and sums: NaN propagates, inf * 0 = NaN, inf + -inf = NaN. Partial sums do "
            "not overflow (f64); only the final rounding to f32 overflows to ±inf. The sign of a zero "
            "result is unspecified. Denormal inputs and results are kept (no flush). i32 results wrap "
            "(two's complement).")
_MX_SPECIAL = (" Scale code 255 is NaN and makes every product of its block NaN; code 0 is 2**-127 "
               "(applied exactly, no flush).")
_COMMON_DOC = ("elements of dst outside the M x N block are unspecified. Float operands: each product is "
               "exact in f64, the terms are summed in f64 and the result is rounded once (RNE) to f32; "
               "i8 x i8 sums in i32 with wrap-around. Tiles are logical matrices: any layout is accepted "
               "(public defaults: left NZ on A5/CPU and ZZ on A2/A3, right ZN, acc NZ with 16x16 boxes), "
               "but a boxed tile must consist of whole fractals. Public runtime limits: m, k, n in "
               "[1, 4095]; K = 0 gives the empty sum 0.")
_MX_DOC = (" MX: scale_a[i, k // 32] and scale_b[k // 32, j] are E8M0 exponents e with value "
           "2**(e - 127) (255 = NaN), one per 32 elements along K, both tiles u8 or both f8e8m0 (the "
           "public float8_e8m0_t; the same codes, decision 'float8_e8m0 scales'); the term is "
           "(A[i, k] * sa) * (B[k, j] * sb), exact in f64. The scale tiles live in scale_left / "
           "scale_right (the A5 scale buffers; row-major and column-major) or, as before, in left / "
           "right.")


def _triple_rule(names: tuple[str, ...], extend: Callable[..., list[tuple[dt.DType, ...]]],
                 triples: tuple[tuple[dt.DType, ...], ...]) -> DTypeRule:
    return tuples(names, [row for t in triples for row in extend(*t)])


def _declare(mnemonic: str, summary: str, formula: str, *, gemv: bool, names: tuple[str, ...],
             operands: tuple[Operand, ...], semantics: Callable[..., None],
             extend: Callable[..., list[tuple[dt.DType, ...]]], example: dict[str, str],
             extra: tuple[Constraint, ...] = ()) -> Instruction:
    """One TMATMUL / TGEMV form; ``extend`` maps a (C, A, B) dtype triple to the form's operand rows."""
    mx = "scale_a" in names
    triples = _FP8_TRIPLES if mx else _ALL_TRIPLES
    narrowed = {} if mx else {p: _triple_rule(names, extend, ts) for p, ts in
                              (("a2", _A2_TRIPLES), ("a3", _A2_TRIPLES), ("a5", _ALL_TRIPLES))}
    base = "tgemv" if gemv else "tmatmul"
    suffix = mnemonic.lower()[len(base) + 1:]
    m_text = "M = 1 (row 0 of A; only dst row 0 is written)" if gemv else "M = A.valid_rows"
    return declare(Instruction(
        mnemonic=mnemonic, family=Family.MATRIX, summary=summary, operands=operands,
        semantics=semantics, dtypes=_triple_rule(names, extend, triples), profile_dtypes=narrowed,
        profiles=("cpu", "a5") if mx else None, numerics=_SUM,
        domain=Domain.SPECIAL if gemv else Domain.MATMUL, pipe=Pipe.M,
        doc=f"{formula} for i < M, j < N with {m_text}, K = A.valid_cols, N = B.valid_cols; "
            + _COMMON_DOC + (_MX_DOC if mx else ""),
        example=Example({"dst": _ACC_T[gemv], "a": _LEFT_T[gemv], "b": _RIGHT_T, **example}),
        constraints=_shape_rules(gemv) + extra
        + (_whole_fractals(*(n for n in names if not n.startswith("scale"))),),
        aliases=(f"{base}.{suffix}",) if suffix else (),
        special_values=_SPECIAL + (_MX_SPECIAL if mx else "")))


def _declare_family(prefix: str, gemv: bool) -> None:
    """The plain, _ACC, _BIAS and _MX forms of TMATMUL (gemv False) or TGEMV (gemv True)."""
    what = "vector-matrix product" if gemv else "matrix multiply"
    _declare(prefix, what, "dst[i, j] = sum_k A[i, k] * B[k, j]", gemv=gemv,
             names=("dst", "a", "b"), operands=(_DST, _A, _B), semantics=_plain(gemv),
             extend=lambda c, a, b: [(c, a, b)], example={})
    _declare(f"{prefix}_ACC", f"{what}, accumulating", "dst[i, j] = acc_in[i, j] + sum_k A[i, k] * B[k, j] "
             "(one rounding; acc_in may be dst itself)", gemv=gemv,
             names=("dst", "acc_in", "a", "b"), operands=(_DST, _ACC_IN, _A, _B),
             semantics=_accumulate(gemv), extend=lambda c, a, b: [(c, c, a, b)],
             example={"acc_in": _ACC_T[gemv]},
             extra=(K.same_shape("dst", "acc_in"),
                    K.at_least("acc_in", "valid_cols", "b", "valid_cols", "STRUCT_VALID_REGION"))
             + (() if gemv else (K.at_least("acc_in", "valid_rows", "a", "valid_rows", "STRUCT_VALID_REGION"),)))
    _declare(f"{prefix}_BIAS", f"{what} plus a bias row", "dst[i, j] = sum_k A[i, k] * B[k, j] + bias[0, j] "
             "(one rounding)", gemv=gemv,
             names=("dst", "a", "b", "bias"), operands=(_DST, _A, _B, _BIAS),
             semantics=_biased(gemv), extend=lambda c, a, b: [(c, a, b, c)],
             example={"bias": "!pto.tile<1x16xf32, loc=bias>"},
             extra=(K.fixed("bias", "rows", 1),
                    K.at_least("bias", "valid_cols", "b", "valid_cols", "STRUCT_VALID_REGION")))
    _declare(f"{prefix}_MX", f"{what} of MX block-scaled fp8", "dst[i, j] = sum_k (A[i, k] * "
             "2**(scale_a[i, k//32] - 127)) * (B[k, j] * 2**(scale_b[k//32, j] - 127))", gemv=gemv,
             names=("dst", "a", "scale_a", "b", "scale_b"),
             operands=(_DST, _A, _SCALE_A, _B, _SCALE_B), semantics=_mx(gemv),
             extend=lambda c, a, b: [(c, a, s, b, s) for s in dt.SCALE_CODES], example={**_MX_TYPES[gemv], **_MX_RIGHT},
             extra=(_blocks_cover("scale_a", "cols"), _blocks_cover("scale_b", "rows"),
                    K.at_least("scale_b", "valid_cols", "b", "valid_cols", "STRUCT_VALID_REGION"))
             + (() if gemv else (K.at_least("scale_a", "valid_rows", "a", "valid_rows", "STRUCT_VALID_REGION"),)))


_declare_family("TMATMUL", gemv=False)
_declare_family("TGEMV", gemv=True)


# ----------------------------------------------------------------------------- TMATMUL_MX_HIF4

def _hif4_columns(t: TileType | None) -> str | None:
    if isinstance(t, TileType) and t.valid_cols is not None and t.valid_cols % hifloat4.BLOCK:
        return f"a has {t.valid_cols} valid columns (K), not a multiple of {hifloat4.BLOCK}"
    return None


def _hif4_records(types: Mapping[str, Type], attrs: Mapping[str, object]) -> str | None:
    """K is whole 64-element blocks; scale_a holds M x K/16 record bytes (HiF4 A) or M x K/32 E8M0
    scales (a mixed overload's A), scale_b K/16 x N record bytes."""
    a, sa, sb, b = (types.get(n) for n in ("a", "scale_a", "scale_b", "b"))
    bad = _hif4_columns(a if isinstance(a, TileType) else None)
    if bad or not isinstance(a, TileType) or a.valid_cols is None:
        return bad
    need = a.valid_cols // hifloat4.BLOCK * hifloat4.RECORD
    need_a, what_a = ((need, "record bytes") if a.dtype == dt.FP4_E1M2 else
                      (a.valid_cols // MX_BLOCK, "E8M0 block scales"))
    if isinstance(sa, TileType) and sa.valid_cols is not None and sa.valid_cols < need_a:
        return f"scale_a.valid_cols = {sa.valid_cols} holds fewer than the {need_a} {what_a} of K = {a.valid_cols}"
    if isinstance(sb, TileType) and sb.valid_rows is not None and sb.valid_rows < need:
        return f"scale_b.valid_rows = {sb.valid_rows} holds fewer than the {need} record bytes of K = {a.valid_cols}"
    return None


def _mx_hif4(dst: Tile, a: Tile, scale_a: Tile, b: Tile, scale_b: Tile) -> None:
    m, k = a.valid
    n = b.valid[1]
    if k % hifloat4.BLOCK:
        raise RuntimeFault("RUNTIME_VALID_REGION", "TMATMUL_MX_HIF4 multiplies whole 64-element K blocks",
                           expected="a.valid_cols a multiple of 64", actual=f"{k} valid columns")
    kr = k // hifloat4.BLOCK * hifloat4.RECORD
    if a.dtype == dt.FP4_E1M2:
        x = hifloat4.dequantise(a.read(m, k, "a"), scale_a.read(m, kr, "scale_a"))
    else:                       # a mixed overload: A's own values times its MX E8M0 block scales
        values = a.read(m, k, "a").astype(np.float64)
        x = values * _e8m0(scale_a.read(m, k // MX_BLOCK, "scale_a"))[:, np.arange(k) // MX_BLOCK]
    y = hifloat4.dequantise(b.read(k, n, "b").T, scale_b.read(kr, n, "scale_b").T).T
    with np.errstate(all="ignore"):
        _finish(dst, _dot(x, y))


#: A's element types: HiF4 codes, or the mixed overloads' f8e4m3 / f16 / bf16 (A6 TMatmul.hpp)
_HIF4_A = (dt.FP4_E1M2, dt.F8E4M3, dt.F16, dt.BF16)

_HIF4_DOC = (
    "HiFloat4 matrix multiply (the A6 TMATMUL_MX overload for hifloat4x2_t A and B): dst[i, j] = "
    "sum_k A(i, k) * B(k, j) for i < M = A.valid_rows, j < N = B.valid_cols, K = A.valid_cols a "
    "multiple of 64, where A and B hold 4-bit E1M2 codes (float4_e1m2x2; the public hifloat4x2_t "
    "spelling names the same type) and each value is E1M2(code) * e6m2(Ea) * 2**(Eb + Ec) with the "
    "TQUANT_HIF4 scale record of its 64-element K block (decision 'TQUANT_HIF4 (HiFloat4 "
    "quantisation)'): scale_a[i, 4g .. 4g + 3] is the record of A's row i, block g (Ea, the Eb byte, the "
    "two Ec bytes: exactly what TQUANT_HIF4 writes for A); scale_b[4g .. 4g + 3, j] the record of B's "
    "column j, block g (TQUANT_HIF4 of B's transpose, transposed). Every value and product is exact "
    "in f64; the sum is in f64, rounded once (RNE) to f32; elements of dst outside M x N are "
    "unspecified. Ea code 0 makes its block zero. The public kernel moves the records into the Cube's "
    "interleaved 64-byte patches (HIF4_A_ZZ / HIF4_B_NN); openpto's scale tiles hold the records "
    "unpatched. Tiles are logical matrices (any layout, boxed tiles whole fractals). Mixed overloads "
    "(the A6 header's float8_e4m3 / half / bfloat16 A with hifloat4x2_t B): A holds f8e4m3, f16 or bf16 "
    "values and scale_a is MX: E8M0 codes e (u8 or f8e8m0), one per 32 elements along K (scale_a[i, k // 32], value "
    "2**(e - 127), 255 = NaN; 127 leaves A unscaled), as TMATMUL_MX's; B and scale_b as above. Each term "
    "(A[i, k] * 2**(scale_a[i, k // 32] - 127)) * B(k, j) is exact in f64 (decision 'TMATMUL_MX_HIF4 mixed "
    "overloads').")

declare(Instruction(
    mnemonic="TMATMUL_MX_HIF4", family=Family.MATRIX, summary="matrix multiply of HiFloat4 B by HiFloat4, fp8, f16 or bf16 A",
    operands=(_DST, tile_in("a", "left matrix A (M x K): E1M2 codes, or f8e4m3 / f16 / bf16 values",
                                    locations=(Location.LEFT,)),
              tile_in("scale_a", "u8 HiF4 records of A: M x K/16 (mixed overloads: E8M0 scales, M x K/32)",
                      locations=(Location.SCALE_LEFT, Location.LEFT)),
              tile_in("b", "right matrix B (K x N) of E1M2 codes", locations=(Location.RIGHT,)),
              tile_in("scale_b", "u8 HiF4 records of B: K/16 x N", locations=(Location.SCALE_RIGHT, Location.RIGHT))),
    semantics=_mx_hif4,
    dtypes=tuples(("dst", "a", "scale_a", "b", "scale_b"), [(dt.F32, a, dt.U8, dt.FP4_E1M2, dt.U8) for a in _HIF4_A]
                  + [(dt.F32, a, dt.E8M0, dt.FP4_E1M2, dt.U8) for a in _HIF4_A if a is not dt.FP4_E1M2]),
    profiles=("cpu", "a6"), numerics=_SUM, domain=Domain.MATMUL, pipe=Pipe.M,
    doc=_HIF4_DOC,
    example=Example({"dst": _ACC_T[False], "a": "!pto.tile<16x64xfloat4_e1m2x2, loc=left, layout=NZ>",
                     "scale_a": "!pto.tile<16x4xu8, loc=scale_left>",
                     "b": "!pto.tile<64x16xfloat4_e1m2x2, loc=right, layout=ZN>",
                     "scale_b": "!pto.tile<4x16xu8, loc=scale_right, layout=DN>"}),
    constraints=_shape_rules(False) + (
        K.custom("K is whole 64-element blocks and the scale tiles hold their records", _hif4_records,
                 "STRUCT_VALID_REGION"),
        K.at_least("scale_a", "valid_rows", "a", "valid_rows", "STRUCT_VALID_REGION"),
        K.at_least("scale_b", "valid_cols", "b", "valid_cols", "STRUCT_VALID_REGION"),
        _whole_fractals("dst", "a", "b")),
    special_values="HiF4 x HiF4: no NaN or infinity can be encoded: the E1M2 codes are finite and Ea tops out "
                   "at 1.5 * 2**15, so every value is at most 1.75 * 1.5 * 2**17 and no sum of the public K range (< "
                   "4096) can overflow f32. A zero product is +0; the sign of a zero result is unspecified. Mixed "
                   "overloads: IEEE products and sums as TMATMUL_MX (a NaN or infinite A value, or scale code 255, "
                   "propagates; inf * 0 = NaN); partial sums do not overflow (f64), only the rounding to f32 does."))
