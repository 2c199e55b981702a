"""Fused elementwise instructions (multiply-add, add/sub with ReLU, add-ReLU-convert, dequantise)
and the power instructions TPOW / TPOWS.

Why a family module of their own: each one is a short chain of elementwise steps whose
intermediate roundings are part of its meaning. The multiply-adds are *fused* (the public
vector pages call vaxpy, vmla/vmula and vmadd single fused operations): the exact a * b + c
is rounded once to f32 (``fma_f32``), then once more to a narrow destination, as every float
instruction rounds (decision 12). The accumulating forms read their destination
(``Role.INOUT``), so conformance runs them with an initialised dst and in place.
"""
from __future__ import annotations

from typing import Callable

import ml_dtypes
import numpy as np

from .. import compute as C
from .. import constraints as K
from .. import dtypes as dt
from ..attrs import Precision
from ..registry import declare
from ..spec import (Attr, Domain, DTypeRule, Example, Family, Instruction, Numerics, ROUNDED, same, tuples)
from ..types import Pipe
from ..values import Tile
from ._helpers import scalar_in, tile_in, tile_inout, tile_out
from .elementwise import _relu

HALF_FLOAT = (dt.F16, dt.F32)
_F32_TILE = "!pto.tile<16x16xf32>"
_FUSED = Numerics("rounded", note="fused: the exact product plus addend is rounded once to f32 "
                                  "(then once more to an f16/bf16 destination)")

# ----------------------------------------------------------------------------- numeric helpers


def fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once to f32 (IEEE fusedMultiplyAdd) for f32-representable inputs.

    The product of two f32 values is exact in f64; the f64 sum is turned into its
    round-to-odd value (TwoSum gives the exact remainder), which f64 holds with more than
    24 + 2 bits, so its rounding to f32 is the correctly rounded fused result."""
    a64, b64, c64 = (np.asarray(x, dtype=np.float64) for x in (a, b, c))
    p = a64 * b64
    s = np.ascontiguousarray(p + c64)
    t = s - p
    err = (p - (s - t)) + (c64 - t)               # s + err == p + c exactly (finite s)
    even = (s.view(np.int64) & 1) == 0
    fix = np.isfinite(s) & (err != 0) & even
    toward = np.where(err > 0, np.inf, -np.inf)
    return np.where(fix, np.nextafter(s, toward), s).astype(np.float32)


def _saturate(values: np.ndarray, d: dt.DType) -> np.ndarray:
    """Convert to ``d`` saturating: floats clamp finite values to +-max (inf and NaN stay);
    integers round to nearest even from floats, clamp to the range, NaN -> 0."""
    if d.is_float:
        top = float(ml_dtypes.finfo(d.np_dtype).max)
        v = np.asarray(values, dtype=np.float64)
        v = np.where(np.isfinite(v), np.clip(v, -top, top), v)
        return v.astype(d.np_dtype)
    info = np.iinfo(d.np_dtype)
    v = np.asarray(values)
    if v.dtype.kind == "f":
        v = np.nan_to_num(np.rint(v.astype(np.float64)), nan=0.0)
    return np.clip(v.astype(np.float64), info.min, info.max).astype(d.np_dtype)


# ----------------------------------------------------------------------------- fused multiply-add

_NAMES3 = ("dst", "src0", "src1")


def _inplace_ternary(order: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, ...]],
                     relu: bool) -> Callable[..., None]:
    """dst = fma(*order(src0, src1, dst)) over dst's valid region, optionally through ReLU."""
    def semantics(dst: Tile, src0: Tile, src1: Tile) -> None:
        def fn(a: np.ndarray, b: np.ndarray, y: np.ndarray) -> np.ndarray:
            out = fma_f32(*order(a, b, y))
            return _relu(out) if relu else out
        C.apply_elementwise(dst, [src0, src1, dst], fn)
    return semantics


_MULADD_DOC = (" The multiply-add is fused: the exact product plus addend is rounded once to f32 "
               "(round to nearest even); f16 and bf16 operands are widened to f32 first (their product "
               "is exact there) and the f32 result is rounded once more to the destination dtype. dst "
               "is read and written (it must hold values in its valid region before the instruction); "
               "src0 or src1 may be dst itself. The iteration domain is dst's valid region; every "
               "source's valid region must cover it.")
_MULADD_SPECIAL = ("IEEE fusedMultiplyAdd: 0 * inf = NaN, inf - inf = NaN, NaN propagates (which NaN is "
                   "unspecified); overflow gives ±inf; a product that cancels the addend exactly gives +0 "
                   "(-0 only when both the product and the addend are -0).")
_RELU_SPECIAL = " ReLU after the rounding: NaN stays NaN; -0 and negative values give +0."


def _muladd(mnemonic: str, summary: str, formula: str, order: Callable[..., tuple[np.ndarray, ...]],
            *, relu: bool = False, public: str) -> None:
    names = _NAMES3
    declare(Instruction(
        mnemonic=mnemonic, family=Family.ELEMENTWISE, summary=summary,
        operands=(tile_inout("dst", "accumulator operand and destination (read, then written)"),
                  tile_in("src0", "source 0"), tile_in("src1", "source 1")),
        semantics=_inplace_ternary(order, relu), dtypes=same(names, dt.FLOATS), numerics=_FUSED,
        domain=Domain.DST, pipe=Pipe.V,
        doc=f"dst[i, j] = {formula}." + _MULADD_DOC + " " + public,
        example=Example({n: _F32_TILE for n in names}),
        constraints=(K.covers(("src0", "src1")),),
        profile_dtypes={p: same(names, HALF_FLOAT) for p in ("a2", "a3", "a5")},
        special_values=_MULADD_SPECIAL + (_RELU_SPECIAL if relu else "")))


_muladd("TFUSEDMULADD", "fused multiply-add into the destination", "src0[i, j] * dst[i, j] + src1[i, j]",
        lambda a, b, y: (a, y, b),
        public="The public ISA spells it `%dst = tfusedmuladd %src0, %src1` and `pto.tfusedmuladd "
               "ins(%src0, %src1) outs(%dst)`; openpto's synchronous form passes the read destination "
               "first: `tfusedmuladd %dst, %src0, %src1`. NPU targets use vmadd.")
_muladd("TFUSEDMULADDRELU", "fused multiply-add into the destination, then ReLU",
        "max(src0[i, j] * dst[i, j] + src1[i, j], 0)", lambda a, b, y: (a, y, b), relu=True,
        public="The ReLU applies to the fused result (the public page's formula omits it; the A2/A3 "
               "vmaddrelu and the A5 vmadd + vrelu sequence apply it). Spelled `pto.tfusedmuladdrelu "
               "ins(%src0, %src1) outs(%dst)` or `tfusedmuladdrelu %dst, %src0, %src1`.")
_muladd("TMULADDDST", "fused multiply of two sources, accumulated into the destination",
        "src0[i, j] * src1[i, j] + dst[i, j]", lambda a, b, y: (a, b, y),
        public="Spelled `pto.tmuladddst ins(%src0, %src1) outs(%dst)` or `tmuladddst %dst, %src0, "
               "%src1`. NPU targets use vmla (A2/A3) and vmula (A5).")


# ----------------------------------------------------------------------------- TAXPY

_AXPY_NAMES = ("dst", "src0", "scalar")
_AXPY_A = ((dt.F16, dt.F16, dt.F16), (dt.F32, dt.F32, dt.F32), (dt.F32, dt.F16, dt.F16))


def _taxpy(dst: Tile, src0: Tile, scalar: object) -> None:
    C.apply_elementwise(dst, [src0, dst], lambda x, y, a: fma_f32(a, x, y), [scalar])


declare(Instruction(
    mnemonic="TAXPY", family=Family.TILE_SCALAR, summary="scaled accumulation dst = scalar * src0 + dst",
    operands=(tile_inout("dst", "accumulation base y and destination (read, then written)"),
              tile_in("src0", "scaled source x"),
              scalar_in("scalar", "scale factor a, converted to src0's dtype")),
    semantics=_taxpy,
    dtypes=tuples(_AXPY_NAMES, _AXPY_A + ((dt.BF16, dt.BF16, dt.BF16), (dt.F32, dt.BF16, dt.BF16))),
    profile_dtypes={p: tuples(_AXPY_NAMES, _AXPY_A) for p in ("a2", "a3", "a5")},
    numerics=_FUSED, domain=Domain.DST, pipe=Pipe.V,
    doc="dst[i, j] = scalar * src0[i, j] + dst[i, j] (AXPY), fused: the exact product plus dst is "
        "rounded once to f32, then once more to an f16/bf16 dst. dst is read and written; src0 has "
        "dst's dtype, or is f16 (bf16 on cpu) with an f32 dst (widening accumulation; an f16 dst with "
        "an f32 src0 is illegal). The scalar has src0's dtype: a literal is converted to it once "
        "(round to nearest even, overflow to ±inf). The iteration domain is dst's valid region; "
        "src0's must cover it; src0 may be dst itself. Spelled `taxpy %dst, %src0, %scalar` or "
        "`pto.taxpy ins(%src0, %scalar) outs(%dst)`.",
    example=Example({"dst": _F32_TILE, "src0": "!pto.tile<16x16xf16>", "scalar": "f16"}, {},
                    {"scalar": 1.5}),
    more_examples=(Example({n: _F32_TILE for n in ("dst", "src0")} | {"scalar": "f32"}, {},
                           {"scalar": -0.25}),),
    constraints=(K.covers(("src0",)),),
    special_values=_MULADD_SPECIAL))


# ----------------------------------------------------------------------------- TSUBRELU


def _tsubrelu(dst: Tile, src0: Tile, src1: Tile) -> None:
    C.apply_elementwise(dst, [src0, src1], lambda a, b: _relu(a - b))


declare(Instruction(
    mnemonic="TSUBRELU", family=Family.ELEMENTWISE, summary="subtract, then ReLU",
    operands=(tile_out(), tile_in("src0", "minuend"), tile_in("src1", "subtrahend")),
    semantics=_tsubrelu, dtypes=same(_NAMES3, dt.FLOATS), numerics=ROUNDED, domain=Domain.DST,
    pipe=Pipe.V,
    doc="dst[i, j] = max(src0[i, j] - src1[i, j], 0): the difference is computed in f32, rounded "
        "once to the dtype, then clamped (ReLU is exact). Spelled `%dst = tsubrelu %src0, %src1`.",
    example=Example({n: _F32_TILE for n in _NAMES3}),
    constraints=(K.covers(("src0", "src1")),),
    profile_dtypes={p: same(_NAMES3, HALF_FLOAT) for p in ("a2", "a3", "a5")},
    special_values="inf - inf = NaN and NaN stay NaN; -0 and negative differences give +0."))


# ----------------------------------------------------------------------------- TADDRELUCONV

_CONV_PAIRS = ((dt.F16, dt.F32, dt.F32), (dt.I8, dt.F16, dt.F16), (dt.I8, dt.I16, dt.I16))


def _taddreluconv(dst: Tile, src0: Tile, src1: Tile) -> None:
    r, c = dst.valid
    a = C.widen(src0.read(r, c, "src0"), src0.dtype)
    b = C.widen(src1.read(r, c, "src1"), src1.dtype)
    dst.write(_saturate(_relu(a + b), dst.dtype), r, c)


declare(Instruction(
    mnemonic="TADDRELUCONV", family=Family.ELEMENTWISE, summary="add, ReLU, then narrow with saturation",
    operands=(tile_out("dst", "destination tile of the narrower dtype"), tile_in("src0", "source 0"),
              tile_in("src1", "source 1, src0's dtype")),
    semantics=_taddreluconv, dtypes=tuples(_NAMES3, _CONV_PAIRS), numerics=ROUNDED, domain=Domain.DST,
    pipe=Pipe.V,
    doc="dst[i, j] = convert(max(src0[i, j] + src1[i, j], 0)) for the pairs f32 -> f16, f16 -> i8 and "
        "i16 -> i8. The sum is computed as the sources' elementwise add (floats in f32, rounded once; "
        "i16 wraps), ReLU clamps it (NaN stays NaN, -0 gives +0), and the conversion saturates: f32 -> "
        "f16 rounds to nearest even and clamps finite values beyond f16's range to 65504 (+inf and "
        "NaN stay); -> i8 rounds to nearest even, clamps to 127 and turns NaN into 0. Spelled "
        "`%dst = taddreluconv %src0, %src1` (public page TADDReluConv).",
    example=Example({"dst": "!pto.tile<16x16xf16>", "src0": _F32_TILE, "src1": _F32_TILE}),
    more_examples=(Example({"dst": "!pto.tile<16x32xi8>", "src0": "!pto.tile<16x32xi16>",
                            "src1": "!pto.tile<16x32xi16>"}),),
    constraints=(K.covers(("src0", "src1")),),
    special_values="Float sums: inf - inf = NaN; NaN -> NaN (f16) or 0 (i8); +inf -> +inf (f16) or "
                   "127 (i8); finite sums above 65504 -> 65504. i16 sums wrap before the ReLU "
                   "(30000 + 30000 = -5536 -> 0)."))


# ----------------------------------------------------------------------------- TADDDEQRELU

_DEQ_NAMES = ("dst", "src0", "src1", "deqScale")


def _tadddeqrelu(dst: Tile, src0: Tile, src1: Tile, deqScale: object,  # noqa: N803
                 tmp: Tile | None = None) -> None:
    """``tmp`` is accepted and never touched."""
    r, c = dst.valid
    total = src0.read(r, c, "src0") + src1.read(r, c, "src1")          # i32, wraps
    scaled = total.astype(np.float32) * C.scalar_as(deqScale, dt.F32)
    dst.write(_saturate(_relu(scaled.astype(np.float32)), dst.dtype), r, c)


declare(Instruction(
    mnemonic="TADDDEQRELU", family=Family.ELEMENTWISE, summary="add i32 tiles, dequantise, ReLU, to f16",
    operands=(tile_out("dst", "f16 destination"), tile_in("src0", "i32 source 0"),
              tile_in("src1", "i32 source 1"),
              scalar_in("deqScale", "f32 dequantisation scale"),
              tile_in("tmp", "i32 scratch tile of the public ISA; accepted and never read or written",
                      optional=True)),
    semantics=_tadddeqrelu, dtypes=tuples(_DEQ_NAMES, [(dt.F16, dt.I32, dt.I32, dt.F32)]),
    numerics=ROUNDED, domain=Domain.DST, pipe=Pipe.V,
    doc="dst[i, j] = f16(max(f32(src0[i, j] + src1[i, j]) * deqScale, 0)). The i32 sum wraps, converts "
        "to f32 rounding to nearest even, the product with the f32 scale is rounded once to f32, ReLU "
        "clamps it (NaN stays NaN, -0 gives +0), and the conversion to f16 rounds to nearest even and "
        "saturates finite values beyond f16's range to 65504 (+inf and NaN stay). The public A2/A3 "
        "sequence scales by 2**-17, deqScale, 2**17 in turn; its f16 result equals this one for every "
        "input (the power-of-two steps are exact wherever the f16 result is not 0). The optional tmp "
        "is the public scratch operand: accepted for compatibility, no semantics. Spelled `%dst = "
        "tadddeqrelu %src0, %src1, %deqScale, %tmp` (public page TAddDeqRelu).",
    example=Example({"dst": "!pto.tile<16x16xf16>", "src0": "!pto.tile<16x16xi32>",
                     "src1": "!pto.tile<16x16xi32>", "deqScale": "f32", "tmp": "!pto.tile<16x16xi32>"},
                    {}, {"deqScale": 0.0625}),
    constraints=(K.covers(("src0", "src1")), K.covers(("tmp",))),
    special_values="A NaN or infinite deqScale: 0 * inf = NaN stays NaN; inf -> +inf; a NaN scale "
                   "gives NaN everywhere. Negative products give +0."))


# ----------------------------------------------------------------------------- TPAIRREDUCESUM


def _tpairreducesum(dst: Tile, src: Tile) -> None:
    r, c = dst.valid
    x = C.widen(src.read(r, c, "src"), src.dtype)
    half = (c + 1) // 2
    odd = np.zeros((r, half), dtype=x.dtype)
    odd[:, : c // 2] = x[:, 1::2]
    out = np.zeros((r, c), dtype=x.dtype)
    out[:, :half] = x[:, 0::2] + odd
    dst.write(C.narrow(out, dst.dtype), r, c)


declare(Instruction(
    mnemonic="TPAIRREDUCESUM", family=Family.REDUCE_EXPAND, summary="sum adjacent pairs of each row",
    operands=(tile_out(), tile_in("src", "source tile")),
    semantics=_tpairreducesum, dtypes=same(("dst", "src"), dt.FLOATS), numerics=ROUNDED,
    domain=Domain.DST, pipe=Pipe.V,
    doc="With c = dst.valid_cols: dst[i, k] = src[i, 2k] + src[i, 2k + 1] for k < ceil(c / 2), the "
        "missing partner of an odd c's last element being +0 (so dst[i, (c-1)/2] = src[i, c-1] + 0, "
        "and -0 gives +0); dst[i, k] = +0 for ceil(c / 2) <= k < c. Each sum is computed in f32 and "
        "rounded once. src's valid region must cover dst's (public: the same valid shape); src may be "
        "dst itself. The public A2/A3 implementation drops an odd last element; the public page and "
        "CPU simulator keep it, as openpto does. Spelled `%dst = tpairreducesum %src`.",
    example=Example({"dst": "!pto.tile<16x32xf32>", "src": "!pto.tile<16x32xf32>"}),
    constraints=(K.covers(("src",)),),
    profile_dtypes={p: same(("dst", "src"), HALF_FLOAT) for p in ("a2", "a3", "a5")},
    special_values="IEEE sums: inf + -inf = NaN, NaN propagates, overflow gives ±inf."))


# ----------------------------------------------------------------------------- TPOW / TPOWS


def int_pow(base: np.ndarray, exp: np.ndarray) -> np.ndarray:
    """base ** exp in base's integer dtype, wrapping; exp == 0 gives 1 (0 ** 0 too); a negative
    exponent (signed types) gives 1 for base 1, +-1 for base -1 by parity, else 0."""
    d = base.dtype
    bits = d.itemsize * 8
    e = np.broadcast_to(np.asarray(exp, dtype=d), base.shape)
    counter = e.view(np.dtype(f"u{d.itemsize}")).astype(np.uint64)
    result, square = np.ones_like(base), base.copy()
    for _ in range(bits):
        result = np.where(counter & np.uint64(1), result * square, result)
        square = square * square
        counter = counter >> np.uint64(1)
    if d.kind == "i":
        one = np.ones_like(base)
        negative = np.where(base == 1, one, np.where(base == -1, np.where(e & 1, -one, one), 0 * one))
        result = np.where(e < 0, negative, result)
    return result.astype(d)


def _pow(base: np.ndarray, exp: np.ndarray) -> np.ndarray:
    if base.dtype.kind == "f":
        return np.power(base.astype(np.float64), np.asarray(exp, dtype=np.float64))
    return int_pow(base, exp)


_POW_A2 = dt.INTS_32 + (dt.F32,)
_POW_ULP = Numerics("ulp", 2.0, note="floats: the reference evaluates IEEE pow in f64 and rounds once; "
                                     "integers are exact (they wrap)")
_POW_SPECIAL = ("Floats follow IEEE 754 / C99 Annex F pow: pow(x, ±0) = 1 and pow(1, y) = 1 for any x, y "
                "(NaN too); pow(-1, ±inf) = 1; a negative finite base with a finite non-integer exponent "
                "gives NaN; pow(±0, y < 0) = +inf (±inf for odd integer y), pow(±0, y > 0) = +0 (±0 for "
                "odd integer y); pow(x, ±inf) and pow(±inf, y) by |x| vs 1 and the sign of y; otherwise "
                "NaN propagates; overflow gives ±inf. Integers: exp = 0 gives 1 (0 ** 0 = 1); "
                "positive exponents wrap (two's complement, modulo 2**bits); a negative exponent "
                "gives 1 for base 1, ±1 for base -1 (by parity), 0 otherwise (0 ** -n = 0 too).")
_TMP = "scratch tile of the public ISA (some targets use it); accepted, never read or written"
_PRECISION = (" PrecisionType (DEFAULT or HIGH_PRECISION, default DEFAULT) is the public PowAlgorithm "
              "template argument; both values are held to the one contract below (within 2 ulp of the "
              "correctly rounded result, special values exact), so it never changes a specified result.")
_PRECISION_ATTR = Attr("PrecisionType", Precision, Precision.DEFAULT,
                       "the public PowAlgorithm choice (DEFAULT: faster; HIGH_PRECISION: A5 only on NPUs); "
                       "both values meet the numerics contract, so the result does not depend on it")


def _tpow(dst: Tile, base: Tile, exp: Tile, tmp: Tile | None = None,
          PrecisionType: Precision = Precision.DEFAULT) -> None:  # noqa: N803
    """``tmp`` and ``PrecisionType`` are accepted and carry no semantics."""
    C.apply_elementwise(dst, [base, exp], _pow)


def _tpows(dst: Tile, base: Tile, exp: object, tmp: Tile | None = None,
           PrecisionType: Precision = Precision.DEFAULT) -> None:  # noqa: N803
    C.apply_elementwise(dst, [base], _pow, [exp])


def _pow_rule(names: tuple[str, ...], types: tuple[dt.DType, ...]) -> DTypeRule:
    return same(names, types)


_TPOW_NAMES = ("dst", "base", "exp")
declare(Instruction(
    mnemonic="TPOW", family=Family.ELEMENTWISE, summary="elementwise power base ** exp",
    operands=(tile_out(), tile_in("base", "base tile"), tile_in("exp", "exponent tile, base's dtype"),
              tile_in("tmp", _TMP, optional=True)),
    attrs=(_PRECISION_ATTR,), semantics=_tpow, dtypes=_pow_rule(_TPOW_NAMES, dt.NUMERIC), numerics=_POW_ULP,
    domain=Domain.DST, pipe=Pipe.V,
    doc="dst[i, j] = base[i, j] ** exp[i, j]. Floats: IEEE pow of the (widened) values, rounded once to "
        "the dtype; the public NPU formula exp(ln|base| * exp) with sign fix-ups is one way to compute "
        "it. Integers: repeated multiplication in the dtype, wrapping. The optional tmp is the public "
        "scratch operand (no semantics). Spelled `%dst = tpow %base, %exp, %tmp` or without %tmp."
        + _PRECISION,
    example=Example({"dst": _F32_TILE, "base": _F32_TILE, "exp": _F32_TILE, "tmp": _F32_TILE}),
    more_examples=(Example({n: "!pto.tile<16x16xi32>" for n in _TPOW_NAMES}),),
    constraints=(K.covers(("base", "exp")), K.covers(("tmp",))),
    profile_dtypes={"a2": same(_TPOW_NAMES, _POW_A2), "a3": same(_TPOW_NAMES, _POW_A2),
                    "a5": same(_TPOW_NAMES, dt.NUMERIC)},
    special_values=_POW_SPECIAL))

_TPOWS_NAMES = ("dst", "base", "exp")
declare(Instruction(
    mnemonic="TPOWS", family=Family.TILE_SCALAR, summary="elementwise power by a scalar exponent",
    operands=(tile_out(), tile_in("base", "base tile"),
              scalar_in("exp", "exponent, converted to the tile dtype"),
              tile_in("tmp", _TMP, optional=True)),
    attrs=(_PRECISION_ATTR,), semantics=_tpows, dtypes=_pow_rule(_TPOWS_NAMES, dt.NUMERIC), numerics=_POW_ULP,
    domain=Domain.DST, pipe=Pipe.V,
    doc="dst[i, j] = base[i, j] ** exp, as TPOW with one exponent for every element. The scalar has the "
        "tile dtype: a literal is converted to it once (floats round to nearest even, integers wrap). "
        "Spelled `%dst = tpows %base, %exp, %tmp` or without %tmp." + _PRECISION,
    example=Example({"dst": _F32_TILE, "base": _F32_TILE, "exp": "f32", "tmp": _F32_TILE}, {},
                    {"exp": 2.5}),
    more_examples=(Example({"dst": "!pto.tile<16x16xi16>", "base": "!pto.tile<16x16xi16>", "exp": "i16"},
                           {}, {"exp": 3}),),
    constraints=(K.covers(("base",)), K.covers(("tmp",))),
    profile_dtypes={"a2": same(_TPOWS_NAMES, _POW_A2), "a3": same(_TPOWS_NAMES, _POW_A2),
                    "a5": same(_TPOWS_NAMES, dt.NUMERIC)},
    special_values=_POW_SPECIAL))
