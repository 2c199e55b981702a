"""The Indexer Prolog of DeepSeek-V3.2-Exp's sparse attention, written with the tensor frontend.

It makes the Lightning Indexer's inputs from one layer's hidden states: per token a query of
``heads`` x ``head_dim``, a key of ``head_dim`` and one weight per head. The quantised form
(the public ``lightning_indexer_prolog_quant``) runs, per token:

- query: ``q_norm`` (i8, already quantised per token) @ ``w_qb`` (i8) on the cube, accumulated
  in i32, dequantised by the token's scale and the output channel's scale, rounded to bf16;
  RoPE on the first ``rope_dim`` of every head; a Hadamard transform (a matmul with a
  ``head_dim`` square matrix, bf16 result); dynamic int8 quantisation per (token, head): scale
  = max|x| / 127, values rint(x * 127 / max|x|), returned as i8 and an f16 scale;
- key: ``x`` @ ``wk`` in f32, LayerNorm (f32, eps 1e-6) with gamma/beta, bf16; RoPE; Hadamard;
  int8 quantisation per token;
- weights: ``x`` @ ``w_proj`` rounded to bf16, times 1 / sqrt(heads * head_dim), as f16.

The plain-precision form (``quant=False``, the public non-quantised prolog) takes ``q_lora``
activations of the float dtype instead of i8 and scales, runs every matmul in that dtype
(f32 accumulation, one rounding) and returns q and k in it, without the Hadamard transform and
the quantisation (both exist only to make the int8 code spread well).

Layouts are plain row-major (the public operator stores weights in the cube's NZ fractal
layout: a storage choice the backends here make themselves). The key cache scatter of the
public operator (writing k into a paged cache at given slots) is left to the caller: the
operator returns each token's key and scale. The token count is a run-time size: one compile
serves every batch.
"""


import math
from dataclasses import dataclass
from typing import Any, Callable

import openpto.frontend as pto

from ..frontend.api import to_dtype

EPS = 1e-6
INT8_MAX = 127.0


@dataclass(frozen=True)
class PrologShapes:
    """The static sizes of one Indexer Prolog (the token count is given per call), and the vector
    tile rows of its stages."""

    hidden: int          # model width h
    q_lora: int          # q_lora_rank: width of the compressed query activations
    heads: int           # index heads
    head_dim: int
    rope_dim: int        # leading part of each head that RoPE rotates
    tile_rows: int = 16  # rows of the vector tiles of the per-token stages
    dequant_cols: int = 512  # columns of the query dequantisation's vector tiles
    quant_rows: int = 32  # rows (token x head pairs) of the query quantisation's vector tiles
    cube: tuple | None = None  # set_cube_tile_shapes(m, k, n) of the projections (None: untiled)

    def __post_init__(self) -> None:
        if self.rope_dim % 2 or not 0 < self.rope_dim <= self.head_dim:
            raise ValueError(f"rope_dim must be even and in (0, head_dim]: {self.rope_dim}")


#: the public model (DeepSeek-V3.2-Exp) and the test sizes
SHAPES: dict[str, PrologShapes] = {
    "full": PrologShapes(hidden=7168, q_lora=1536, heads=64, head_dim=128, rope_dim=64),
    "medium": PrologShapes(hidden=1024, q_lora=512, heads=16, head_dim=128, rope_dim=64),
    "small": PrologShapes(hidden=64, q_lora=32, heads=4, head_dim=32, rope_dim=16, tile_rows=4),
}


# --------------------------------------------------------------------------------------------
# stages (plain Python helpers: capture inlines them)

def _cast(x: Any, dtype: Any, mode: str = "rint") -> Any:
    """pto.cast, or x itself when it has that dtype already (the f32 variant would otherwise
    copy its tensors for nothing)."""
    return x if x.dtype == to_dtype(dtype) else pto.cast(x, dtype, mode)


def _rope_heads(x: Any, cos: Any, sin: Any, heads: int, rope: int) -> Any:
    """``x`` ([t, heads * head_dim], bf16/f16/f32) with RoPE on the first ``rope`` columns of
    every head, computed in f32 and rounded back to x's dtype; the other columns pass unchanged.
    out = x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1], cos/sin [t, rope] shared by
    the heads.

    Every operand is a [t, rope / 2] window of a 2-D tensor (no [t, heads, rope] * [t, 1, rope]
    broadcast), so the rotations of all heads walk the same tiles and run as one kernel, and the
    pass-through columns as one more."""
    t, width = x.shape[0], x.shape[-1]
    head_dim, half = width // heads, rope // 2
    out = pto.tensor([t, width], x.dtype, "roped")

    def f32(src: Any, col: int) -> Any:
        return _cast(pto.view(src, [t, half], [0, col]), pto.DT_FP32)

    c1, c2, s1, s2 = f32(cos, 0), f32(cos, half), f32(sin, 0), f32(sin, half)
    for h in range(heads):
        o = h * head_dim
        x1, x2 = f32(x, o), f32(x, o + half)
        pto.assemble(_cast(x1 * c1 - x2 * s1, x.dtype), [0, o], out)
        pto.assemble(_cast(x2 * c2 + x1 * s2, x.dtype), [0, o + half], out)
    for h in range(heads if head_dim > rope else 0):
        o = h * head_dim + rope
        pto.assemble(pto.view(x, [t, head_dim - rope], [0, o]), [0, o], out)
    return out


def _layer_norm(x: Any, gamma: Any, beta: Any, n: int) -> Any:
    """LayerNorm over the last axis of an f32 tensor (gamma and beta [1, n] f32), in the public
    operator's order of f32 steps (divide before summing, so large sums do not overflow)."""
    mean = pto.sum(x * (1.0 / n), -1, True)
    diff = x - mean
    var = pto.sum(diff * diff * (1.0 / n), -1, True)
    norm = diff / pto.sqrt(var + EPS)
    return norm * gamma + beta


def _dynamic_quant(x: Any) -> tuple[Any, Any]:
    """Per-row int8 quantisation of ``x``: (rint(x * 127 / max|x|) as i8, max|x| / 127 computed
    in f32 as 1 / (127 / max|x|) like the public operator, returned as f16)."""
    xf = _cast(x, pto.DT_FP32)
    amax = pto.amax(pto.abs(xf), -1, True)
    scale = INT8_MAX / amax
    # f32 -> i16 (rint) -> f16 -> i8: the vector units have no direct f32 -> i8 conversion. Every
    # value is an integer in [-127, 127], so the two later steps are exact. (The public operator
    # goes through i32; a5 converts no i32 to f16, every profile converts i16 to f16.)
    q16 = _cast(xf * scale, pto.DT_INT16, mode="rint")
    q8 = _cast(_cast(q16, pto.DT_FP16), pto.DT_INT8, mode="trunc")
    return q8, _cast(1.0 / scale, pto.DT_FP16)


def _cube_tiles(s: PrologShapes) -> None:
    if s.cube is not None:
        pto.set_cube_tile_shapes(*s.cube)


# --------------------------------------------------------------------------------------------
# the operators

def _quant_fn(s: PrologShapes, dtype: Any) -> Callable:
    T = pto.dynamic("T")
    H, QL, N, D, R = s.hidden, s.q_lora, s.heads, s.head_dim, s.rope_dim
    rows = s.tile_rows
    w_scale = 1.0 / (math.sqrt(N) * math.sqrt(D))

    def indexer_prolog_quant(
            x: pto.Tensor((T, H), dtype),
            q_norm: pto.Tensor((T, QL), pto.DT_INT8),
            q_norm_scale: pto.Tensor((T, 1), pto.DT_FP32),
            w_qb: pto.Tensor((QL, N * D), pto.DT_INT8),
            w_qb_scale: pto.Tensor((N * D, 1), pto.DT_FP32),
            wk: pto.Tensor((H, D), dtype),
            w_proj: pto.Tensor((H, N), dtype),
            ln_gamma: pto.Tensor((D,), dtype),
            ln_beta: pto.Tensor((D,), dtype),
            cos: pto.Tensor((T, R), dtype),
            sin: pto.Tensor((T, R), dtype),
            hadamard_q: pto.Tensor((D, D), dtype),
            hadamard_k: pto.Tensor((D, D), dtype)):
        t = x.shape[0]
        # ---- query
        pto.set_semantic_label("Query-Linear")
        _cube_tiles(s)
        q_s32 = pto.matmul(q_norm, w_qb, pto.DT_INT32)                      # [t, N*D]
        pto.set_semantic_label("Query-Dequant")
        pto.set_vec_tile_shapes(rows, min(N * D, s.dequant_cols))
        q_f32 = _cast(q_s32, pto.DT_FP32) * q_norm_scale
        q_f32 = q_f32 * pto.reshape(w_qb_scale, [1, N * D])
        q = _cast(q_f32, dtype)                                               # [t, N*D]
        pto.set_semantic_label("Query-Rope")
        pto.set_vec_tile_shapes(rows, R)
        q_roped = _rope_heads(q, cos, sin, N, R)
        pto.set_semantic_label("Query-Hadamard")
        q_hd = pto.matmul(pto.reshape(q_roped, [t * N, D]), hadamard_q, dtype)
        pto.set_semantic_label("Query-Quant")
        pto.set_vec_tile_shapes(s.quant_rows, D)
        q_int8, q_scale = _dynamic_quant(q_hd)
        # ---- key
        pto.set_semantic_label("Key-LayerNorm")
        pto.set_vec_tile_shapes(1, D)       # the affine terms in f32 first: LayerNorm then joins the matmul
        gamma, beta = (_cast(pto.reshape(v, [1, D]), pto.DT_FP32) for v in (ln_gamma, ln_beta))
        pto.set_semantic_label("Key-Linear")
        _cube_tiles(s)
        k = pto.matmul(x, wk, pto.DT_FP32)                                    # [t, D]
        pto.set_semantic_label("Key-LayerNorm")
        pto.set_vec_tile_shapes(rows, D)
        k = _cast(_layer_norm(k, gamma, beta, D), dtype)
        pto.set_semantic_label("Key-Rope")
        k_roped = _rope_heads(k, cos, sin, 1, R)
        pto.set_semantic_label("Key-Hadamard")
        k_hd = pto.matmul(k_roped, hadamard_k, dtype)
        pto.set_semantic_label("Key-Quant")
        k_int8, k_scale = _dynamic_quant(k_hd)
        # ---- weights
        pto.set_semantic_label("Weight-Linear")
        _cube_tiles(s)
        pto.set_vec_tile_shapes(rows, N)
        weights = _cast(_cast(pto.matmul(x, w_proj, dtype), pto.DT_FP32) * w_scale, pto.DT_FP16)
        return pto.reshape(q_int8, [t, N, D]), pto.reshape(q_scale, [t, N, 1]), k_int8, k_scale, weights

    return indexer_prolog_quant


def _plain_fn(s: PrologShapes, dtype: Any) -> Callable:
    T = pto.dynamic("T")
    H, QL, N, D, R = s.hidden, s.q_lora, s.heads, s.head_dim, s.rope_dim
    rows = s.tile_rows
    w_scale = 1.0 / (math.sqrt(N) * math.sqrt(D))

    def indexer_prolog(
            x: pto.Tensor((T, H), dtype),
            q_lora: pto.Tensor((T, QL), dtype),
            w_q: pto.Tensor((QL, N * D), dtype),
            wk: pto.Tensor((H, D), dtype),
            w_proj: pto.Tensor((H, N), dtype),
            ln_gamma: pto.Tensor((D,), dtype),
            ln_beta: pto.Tensor((D,), dtype),
            cos: pto.Tensor((T, R), dtype),
            sin: pto.Tensor((T, R), dtype)):
        t = x.shape[0]
        pto.set_semantic_label("Query-Linear")
        _cube_tiles(s)
        q = pto.matmul(q_lora, w_q, dtype)                                    # [t, N*D]
        pto.set_semantic_label("Query-Rope")
        pto.set_vec_tile_shapes(rows, R)
        q_roped = pto.reshape(_rope_heads(q, cos, sin, N, R), [t, N, D])
        pto.set_semantic_label("Key-LayerNorm")
        pto.set_vec_tile_shapes(1, D)       # the affine terms in f32 first: LayerNorm then joins the matmul
        gamma, beta = (_cast(pto.reshape(v, [1, D]), pto.DT_FP32) for v in (ln_gamma, ln_beta))
        pto.set_semantic_label("Key-Linear")
        _cube_tiles(s)
        k = pto.matmul(x, wk, pto.DT_FP32)
        pto.set_semantic_label("Key-LayerNorm")
        pto.set_vec_tile_shapes(rows, D)
        k = _cast(_layer_norm(k, gamma, beta, D), dtype)
        pto.set_semantic_label("Key-Rope")
        k_roped = _rope_heads(k, cos, sin, 1, R)
        pto.set_semantic_label("Weight-Linear")
        _cube_tiles(s)
        pto.set_vec_tile_shapes(rows, N)
        weights = _cast(_cast(pto.matmul(x, w_proj, dtype), pto.DT_FP32) * w_scale, dtype)
        return q_roped, k_roped, weights

    return indexer_prolog


def build(shapes: "PrologShapes | str" = "small", *, quant: bool = True, dtype: Any = pto.DT_BF16,
          backend: str = "llvm", profile: str = "cpu", **options: Any) -> Any:
    """The jitted Indexer Prolog for ``shapes`` (a ``PrologShapes`` or a key of ``SHAPES``).

    quant=True: ``fn(x, q_norm, q_norm_scale, w_qb, w_qb_scale, wk, w_proj, ln_gamma, ln_beta,
    cos, sin, hadamard_q, hadamard_k) -> (q_int8 [T, N, D] i8, q_scale [T, N, 1] f16,
    k_int8 [T, D] i8, k_scale [T, 1] f16, weights [T, N] f16)``; ``dtype`` is the activations'
    and float weights' type (bf16 in the model).

    quant=False: ``fn(x, q_lora, w_q, wk, w_proj, ln_gamma, ln_beta, cos, sin) -> (q [T, N, D],
    k [T, D], weights [T, N])``, all in ``dtype`` (bf16, f16 or f32).

    ``options`` are the frontend's pipeline knobs and executor (see docs/frontend.md)."""
    s = SHAPES[shapes] if isinstance(shapes, str) else shapes
    fn = (_quant_fn if quant else _plain_fn)(s, dtype)
    return pto.jit(fn, backend=backend, profile=profile, **options)


__all__ = ["PrologShapes", "SHAPES", "build", "EPS"]
