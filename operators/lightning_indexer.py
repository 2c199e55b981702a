"""The Lightning Indexer of DeepSeek-V3.2-Exp's sparse attention, written with the tensor frontend.

For each batch b and each of its ``tokens`` query tokens t it scores every cached key position s:

    score[b, t, s] = sum_h w[b, t, h] * ReLU(q[b, t, h, :] . k[b, s, :])

and returns the ``topk`` positions of the highest scores, best first. The keys sit in a *paged*
cache: ``k_cache[num_blocks, block_size, head_dim]`` holds blocks, ``block_table[b, i]`` names the
physical block of batch b's logical block i, and ``seq_len[b]`` (a run-time tensor) says how many
key positions batch b has. As in the public decode operator (several query tokens per batch, the
multi-token-prediction layout), token t of a batch sees the positions
``s < seq_len[b] - (tokens - 1 - t)`` (the last token sees them all). Where a token sees fewer
than ``topk`` positions, the rest of its row is -1, as in the public operator.

How it runs: the queries of every batch are transposed once ([head_dim, B * tokens * heads]),
the weights cast once, the key positions and token numbers made once; then one ``pto.loop``
over the batch (a run-time size):

- the batch's blocks are gathered as rows (``pto.gather_rows`` of the cache seen as
  ``[num_blocks, block_size * head_dim]``, indexed by the block-table row: one MGATHER per row
  block; a table entry outside the cache, e.g. the -1 of unused entries, reads zeros) and seen as
  the ``[max_blocks * block_size, head_dim]`` key matrix;
- one matmul of the keys against the batch's ``tokens * heads`` query columns (f32
  accumulation): a ``[positions, tokens * heads]`` product whose left operand is the gathered
  keys as they lie (a transposed load of the keys cost more than the product itself on the
  CPU), then ReLU and the per-head weights (one [1, tokens * heads] row repeated down the matmul's
  own output tiles, so it joins the matmul's kernel), a sum
  over each token's heads (a row reduction over ``heads`` adjacent columns) and a transpose of
  the ``[positions, tokens]`` scores;
- positions at or past the token's limit become -inf, ``pto.topk`` selects, and selected -inf
  positions become -1.

Every batch scores all ``max_blocks * block_size`` positions (the sizes are static; the lengths
only mask), where the public operator loops over each batch's own block count.

The quantised form (``quant=True``, the public ``lightning_indexer_quant``): q and k are int8 with
f16 scales per (token, head) and per key position. The i8 x i8 matmul accumulates in i32; the
ReLU'd product is scaled by 1/2048 and rounded to f16 (the public kernel's guard against f16
overflow), the weights are multiplied by the query scales in f16 (every batch's at once), the
head sum runs in f32 and is multiplied by the key position's scale (gathered through the block
table like the keys, one scale per row of the [positions, tokens] sums).
"""

from dataclasses import dataclass
from typing import Any, Callable

import openpto.frontend as pto

#: the quantised path's scale on the i32 products before they are rounded to f16 (public kernel)
QK_SCALE = 1.0 / 2048.0
#: a topk slot past a token's visible positions
PAD_INDEX = -1


@dataclass(frozen=True)
class IndexerShapes:
    """The static sizes of one Lightning Indexer (the batch is given per call) and its tiles."""

    heads: int            # index heads
    head_dim: int
    block_size: int       # key positions per cache block
    num_blocks: int       # blocks in the cache (all batches)
    max_blocks: int       # block-table width: a batch holds at most max_blocks * block_size keys
    tokens: int           # query tokens per batch (1: plain decode; 2: the public MTP decode)
    topk: int             # positions selected per token (clipped to max_blocks * block_size)
    tile_cols: int = 512  # columns of the vector tiles over key positions
    tile_rows: int = 64   # rows (key positions) of the vector tiles over [positions, heads]
    cube: tuple | None = None  # set_cube_tile_shapes(m, k, n) of the score matmul (None: default)

    @property
    def positions(self) -> int:
        """Key positions every batch is scored over."""
        return self.max_blocks * self.block_size

    @property
    def k(self) -> int:
        """Width of the result rows: topk, or every position when there are fewer."""
        return min(self.topk, self.positions)


#: the public model (DeepSeek-V3.2-Exp: 64 index heads of 128, 128-key blocks, 128K keys, top 2048,
#: two query tokens per batch) and the test sizes
SHAPES: dict[str, IndexerShapes] = {
    "full": IndexerShapes(heads=64, head_dim=128, block_size=128, num_blocks=1127, max_blocks=1024, tokens=2,
                          topk=2048),
    "medium": IndexerShapes(heads=64, head_dim=128, block_size=128, num_blocks=96, max_blocks=24, tokens=2,
                            topk=2048),
    "medium_k256": IndexerShapes(heads=64, head_dim=128, block_size=128, num_blocks=96, max_blocks=24, tokens=2,
                                 topk=256),
    "small": IndexerShapes(heads=4, head_dim=32, block_size=16, num_blocks=64, max_blocks=20, tokens=2, topk=48,
                           tile_cols=64),
    "small_b128": IndexerShapes(heads=32, head_dim=32, block_size=128, num_blocks=12, max_blocks=3, tokens=1,
                                topk=100, tile_cols=128),
}


# --------------------------------------------------------------------------------------------
# stages (plain Python helpers: capture inlines them)

def _keys(cache2d: Any, block_table: Any, b: Any, s: IndexerShapes) -> Any:
    """Batch b's keys as a [positions, cols] matrix: its blocks gathered through its table row."""
    with pto.vec_tile_shapes(1, cache2d.shape[1]):
        blocks = pto.gather_rows(cache2d, pto.view(block_table, [1, s.max_blocks], [b, 0]))
    return pto.reshape(blocks, [s.positions, cache2d.shape[1] // s.block_size])


def _head_sum(relu_kq: Any, w: Any, s: IndexerShapes) -> Any:
    """sum over heads of w[0, t * heads + h] * relu_kq[:, t * heads + h] (f32 [positions,
    tokens * heads] and [1, tokens * heads]): [positions, tokens]. The multiply walks the
    matmul's own output tiles (it joins the matmul's kernel); the sum is a row reduction over
    each token's ``heads`` adjacent columns."""
    T, N, P = s.tokens, s.heads, s.positions
    pto.set_vec_tile_shapes(s.tile_rows, T * N)
    weighted = relu_kq * w
    pto.set_vec_tile_shapes(s.tile_rows * T, N)
    return pto.reshape(pto.sum(pto.reshape(weighted, [P * T, N]), -1), [P, T])


def _tokens_first(score: Any, s: IndexerShapes) -> Any:
    """[positions, tokens] -> [tokens, positions] (the topk runs along rows)."""
    pto.set_vec_tile_shapes(s.tokens, min(s.positions, s.tile_cols))
    return pto.transpose(score)


def _positions(s: IndexerShapes) -> tuple[Any, Any]:
    """The batch-independent operands of the selection, made once before the batch loop: the
    key positions 0..P-1 ([P] i32) and the token numbers 0..tokens-1 ([tokens] i32)."""
    with pto.vec_tile_shapes(min(s.positions, s.tile_cols)):
        pos = pto.arange(s.positions)
    with pto.vec_tile_shapes(s.tokens):
        first = pto.arange(s.tokens)
    return pos, first


def _select(score: Any, seq_len: Any, pos: Any, first: Any, b: Any, s: IndexerShapes) -> tuple[Any, Any]:
    """The top scores of each token's row below its limit (-inf past them, [tokens, k] f32) and
    their positions (-1 past them, [tokens, k] i32): token t sees the positions below
    seq_len[b] - (tokens - 1 - t)."""
    T, P = s.tokens, s.positions
    pto.set_vec_tile_shapes(T, 1)
    seen = pto.view(seq_len, [1], [b])                         # batch b's key count
    limit = pto.reshape(first, [T, 1]) + (pto.reshape(seen, [1, 1]) - (T - 1))
    pto.set_vec_tile_shapes(T, min(P, s.tile_cols))
    masked = pto.where(pos < limit, score, float("-inf"))
    pto.set_vec_tile_shapes(T, P)
    values, index = pto.topk(masked, s.k)
    pto.set_vec_tile_shapes(T, s.k)
    return values, pto.where(values > float("-inf"), index, PAD_INDEX)


def _select_into(score: Any, seq_len: Any, pos: Any, first: Any, b: Any, s: IndexerShapes,
                 topk_idx: Any, topk_val: Any) -> None:
    """``_select`` on batch b's scores, written into its rows of the two results."""
    pto.set_semantic_label("TopK")
    values, best = _select(score, seq_len, pos, first, b, s)
    pto.assemble(pto.reshape(best, [1, s.tokens, s.k]), [b, 0, 0], topk_idx)
    pto.assemble(pto.reshape(values, [1, s.tokens, s.k]), [b, 0, 0], topk_val)
    pto.set_semantic_label(None)


def _queries_t(q: Any, s: IndexerShapes) -> Any:
    """Every batch's queries as one [head_dim, B * tokens * heads] matrix (transposed once: each
    batch's score matmul takes a column window of it as its right operand)."""
    rows = s.tokens * s.heads
    pto.set_vec_tile_shapes(rows, s.head_dim)
    return pto.transpose(pto.reshape(q, [q.shape[0] * rows, s.head_dim]))


def _cube(s: IndexerShapes) -> None:
    if s.cube is not None:
        pto.set_cube_tile_shapes(*s.cube)


# --------------------------------------------------------------------------------------------
# the operators

def _plain_fn(s: IndexerShapes, dtype: Any) -> Callable:
    B = pto.dynamic("B")
    T, N, D, BS, NB, MB = s.tokens, s.heads, s.head_dim, s.block_size, s.num_blocks, s.max_blocks

    def lightning_indexer(
            q: pto.Tensor((B, T, N, D), dtype),
            k_cache: pto.Tensor((NB, BS, D), dtype),
            weights: pto.Tensor((B, T, N), dtype),
            seq_len: pto.Tensor((B,), pto.DT_INT32),
            block_table: pto.Tensor((B, MB), pto.DT_INT32),
            topk_idx: pto.Tensor((B, T, s.k), pto.DT_INT32),
            topk_val: pto.Tensor((B, T, s.k), pto.DT_FP32)):
        cache2d = pto.reshape(k_cache, [NB, BS * D])
        q_t = _queries_t(q, s)                                               # [D, B*T*N]
        pto.set_vec_tile_shapes(1, T * N)
        w_all = pto.cast(pto.reshape(weights, [weights.shape[0], T * N]), pto.DT_FP32)   # [B, T*N]
        pos, first = _positions(s)
        for b in pto.loop(0, seq_len.shape[0], 1, name="LI_BATCH", idx_name="b"):
            keys = _keys(cache2d, block_table, b, s)
            pto.set_semantic_label("Score-MatMul")
            _cube(s)
            qb_t = pto.view(q_t, [D, T * N], [0, b * (T * N)])
            kq = pto.matmul(keys, qb_t, pto.DT_FP32)                         # [positions, T*N]
            pto.set_semantic_label("Score-Weight")
            pto.set_vec_tile_shapes(1, T * N)
            w = pto.view(w_all, [1, T * N], [b, 0])
            score = _tokens_first(_head_sum(pto.relu(kq), w, s), s)
            _select_into(score, seq_len, pos, first, b, s, topk_idx, topk_val)

    return lightning_indexer


def _quant_fn(s: IndexerShapes, dtype: Any) -> Callable:
    B = pto.dynamic("B")
    T, N, D, BS, NB, MB = s.tokens, s.heads, s.head_dim, s.block_size, s.num_blocks, s.max_blocks

    def lightning_indexer_quant(
            q: pto.Tensor((B, T, N, D), pto.DT_INT8),
            q_scale: pto.Tensor((B, T, N), pto.DT_FP16),
            k_cache: pto.Tensor((NB, BS, D), pto.DT_INT8),
            k_scale: pto.Tensor((NB, BS), pto.DT_FP16),
            weights: pto.Tensor((B, T, N), pto.DT_FP16),
            seq_len: pto.Tensor((B,), pto.DT_INT32),
            block_table: pto.Tensor((B, MB), pto.DT_INT32),
            topk_idx: pto.Tensor((B, T, s.k), pto.DT_INT32),
            topk_val: pto.Tensor((B, T, s.k), pto.DT_FP32)):
        cache2d = pto.reshape(k_cache, [NB, BS * D])
        q_t = _queries_t(q, s)                                               # [D, B*T*N] i8
        pto.set_vec_tile_shapes(1, T * N)
        wq = (pto.reshape(weights, [weights.shape[0], T * N])
              * pto.reshape(q_scale, [q_scale.shape[0], T * N]))                # f16 product
        w_all = pto.cast(wq, pto.DT_FP32)                                     # [B, T*N]
        pos, first = _positions(s)
        for b in pto.loop(0, seq_len.shape[0], 1, name="LI_BATCH", idx_name="b"):
            keys = _keys(cache2d, block_table, b, s)
            with pto.vec_tile_shapes(1, BS):
                ks = pto.gather_rows(k_scale, pto.view(block_table, [1, MB], [b, 0]))   # [MB, BS]
            pto.set_semantic_label("Score-MatMul")
            _cube(s)
            qb_t = pto.view(q_t, [D, T * N], [0, b * (T * N)])
            kq = pto.matmul(keys, qb_t, pto.DT_INT32)                        # [positions, T*N] i32
            pto.set_semantic_label("Score-Weight")
            pto.set_vec_tile_shapes(s.tile_rows, T * N)
            kq16 = pto.cast(pto.cast(pto.relu(kq), pto.DT_FP32) * QK_SCALE, pto.DT_FP16)
            w = pto.view(w_all, [1, T * N], [b, 0])
            score = _head_sum(pto.cast(kq16, pto.DT_FP32), w, s)             # [positions, T]
            pto.set_vec_tile_shapes(min(s.positions, s.tile_cols), T)
            score = score * pto.cast(pto.reshape(ks, [s.positions, 1]), pto.DT_FP32)
            score = _tokens_first(score, s)
            _select_into(score, seq_len, pos, first, b, s, topk_idx, topk_val)

    return lightning_indexer_quant


def build(shapes: "IndexerShapes | str" = "small", *, quant: bool = False, dtype: Any = pto.DT_BF16,
          backend: str = "llvm", profile: str = "cpu", **options: Any) -> Any:
    """The jitted Lightning Indexer for ``shapes`` (an ``IndexerShapes`` or a key of ``SHAPES``).

    quant=False: ``fn(q [B, T, N, D], k_cache [blocks, block_size, D], weights [B, T, N],
    seq_len [B] i32, block_table [B, max_blocks] i32, topk_idx [B, T, k] i32, topk_val [B, T, k]
    f32)`` writes the selected positions into ``topk_idx`` (best first, -1 past a token's visible
    positions) and their scores into ``topk_val`` (-inf there); q, k_cache and weights in
    ``dtype`` (bf16 in the model; f16 and f32 work too).

    quant=True: ``fn(q i8, q_scale [B, T, N] f16, k_cache i8, k_scale [blocks, block_size] f16,
    weights f16, seq_len, block_table, topk_idx, topk_val)``.

    ``options`` are the frontend's pipeline knobs and executor (see docs/frontend.md)."""
    s = SHAPES[shapes] if isinstance(shapes, str) else shapes
    fn = (_quant_fn if quant else _plain_fn)(s, dtype)
    return pto.jit(fn, backend=backend, profile=profile, **options)


def run(fn: Any, *arrays: Any) -> tuple[Any, Any]:
    """Call a built indexer on its inputs (everything before ``topk_idx``), allocating the
    outputs: (topk_idx [B, T, k] i32, topk_val [B, T, k] f32)."""
    import numpy as np
    q = arrays[0]
    k = fn.fn.__annotations__["topk_idx"].shape[-1]
    idx = np.empty(q.shape[:2] + (k,), np.int32)
    val = np.empty(q.shape[:2] + (k,), np.float32)
    fn(*arrays, idx, val)
    return idx, val


__all__ = ["IndexerShapes", "SHAPES", "build", "run", "QK_SCALE", "PAD_INDEX"]
