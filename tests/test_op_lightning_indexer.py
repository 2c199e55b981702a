"""The Lightning Indexer (operators/lightning_indexer.py) against a numpy golden written here:
paged key caches with shuffled block tables (unused entries -1), sequence lengths that are not
multiples of the block size (and shorter than k, and than the query tokens), several batch
sizes; plain (f32, f16, bf16) and int8-quantised; reference at small shapes, llvm at small and
medium ones, llvm with the a3/a5 profiles at a reduced one.

Scores are compared with a tolerance; the selected positions are compared as sets against the
golden's k-th score, so near-equal scores (ReLU makes many exact zeros) cannot make a test flaky."""
import numpy as np
import pytest

import openpto.frontend as pto
from openpto.operators import lightning_indexer as li

QK_SCALE = 1.0 / 2048.0     # the public quantised kernel's scale before its f16 rounding


# --------------------------------------------------------------------------------------------
# inputs and the golden

def make_inputs(s: li.IndexerShapes, seq: list[int], dtype, rng, quant: bool = False) -> dict:  # noqa: ANN001
    """Random q, weights and cache; each batch's blocks drawn from a shuffled pool, -1 after."""
    B, T, N, D = len(seq), s.tokens, s.heads, s.head_dim
    need = [-(-n // s.block_size) for n in seq]
    assert sum(need) <= s.num_blocks and max(need) <= s.max_blocks
    pool = rng.permutation(s.num_blocks)
    bt = np.full((B, s.max_blocks), -1, np.int32)
    used = 0
    for b, n in enumerate(need):
        bt[b, :n] = pool[used:used + n]
        used += n
    x = {"seq_len": np.array(seq, np.int32), "block_table": bt}
    if quant:
        x["q"] = rng.integers(-127, 128, (B, T, N, D)).astype(np.int8)
        x["q_scale"] = (rng.random((B, T, N)) * 0.02 + 1e-3).astype(np.float16)
        x["k_cache"] = rng.integers(-127, 128, (s.num_blocks, s.block_size, D)).astype(np.int8)
        x["k_scale"] = (rng.random((s.num_blocks, s.block_size)) * 0.02 + 1e-3).astype(np.float16)
        x["weights"] = rng.standard_normal((B, T, N)).astype(np.float16)
    else:
        npd = dtype.np_dtype
        x["q"] = rng.standard_normal((B, T, N, D)).astype(npd)
        x["k_cache"] = rng.standard_normal((s.num_blocks, s.block_size, D)).astype(npd)
        x["weights"] = rng.standard_normal((B, T, N)).astype(npd)
    return x


def golden_scores(s: li.IndexerShapes, x: dict, quant: bool) -> list[list[np.ndarray]]:
    """Per batch and token, the scores of its visible positions (float64, in position order)."""
    out = []
    for b, n in enumerate(x["seq_len"]):
        rows = []
        blocks = x["block_table"][b, :-(-n // s.block_size)]
        keys = x["k_cache"][blocks].reshape(-1, s.head_dim)[:n].astype(np.float64)
        for t in range(s.tokens):
            vis = max(int(n) - (s.tokens - 1 - t), 0)
            qk = x["q"][b, t].astype(np.float64) @ keys[:vis].T              # [heads, vis]
            if quant:
                qk16 = (np.maximum(qk, 0) * QK_SCALE).astype(np.float16).astype(np.float64)
                w = (x["weights"][b, t] * x["q_scale"][b, t]).astype(np.float64)     # f16 product
                ks = x["k_scale"][blocks].reshape(-1)[:vis].astype(np.float64)
                rows.append((w @ qk16) * ks)
            else:
                rows.append(x["weights"][b, t].astype(np.float64) @ np.maximum(qk, 0))
        out.append(rows)
    return out


def check(s: li.IndexerShapes, x: dict, idx: np.ndarray, val: np.ndarray, quant: bool, rtol: float) -> None:
    """Each row: its visible count of distinct positions then -1; their scores equal the golden's
    (tolerance), descending; no position left out scores clearly above the k-th selected."""
    gold = golden_scores(s, x, quant)
    for b, rows in enumerate(gold):
        for t, sc in enumerate(rows):
            n = min(s.k, sc.size)
            where = f"batch {b} token {t} ({sc.size} visible)"
            pick, got = idx[b, t], val[b, t]
            assert (pick[n:] == -1).all() and np.isneginf(got[n:]).all(), where
            sel = pick[:n]
            assert len(set(sel.tolist())) == n and ((sel >= 0) & (sel < sc.size)).all(), where
            if n == 0:
                continue
            tol = rtol * max(np.abs(sc).max(), 1e-30)
            np.testing.assert_allclose(got[:n], sc[sel], rtol=0, atol=tol, err_msg=where)
            assert (np.diff(got[:n]) <= tol).all(), where                  # best first
            kth = np.sort(sc)[::-1][n - 1]
            assert (sc[sel] >= kth - 2 * tol).all(), where                 # nothing below the k-th
            must = np.flatnonzero(sc > kth + 2 * tol)                      # clearly above it: chosen
            assert np.isin(must, sel).all(), where


def run_case(shape: str, seq: list[int], backend: str, dtype=pto.DT_FP32, profile: str = "cpu",  # noqa: ANN001
             quant: bool = False, seed: int = 0, rtol: float = 1e-5) -> None:
    s = li.SHAPES[shape]
    x = make_inputs(s, seq, dtype, np.random.default_rng(seed), quant)
    fn = li.build(s, quant=quant, dtype=dtype, backend=backend, profile=profile)
    names = (["q", "q_scale", "k_cache", "k_scale"] if quant else ["q", "k_cache"]) + \
        ["weights", "seq_len", "block_table"]
    idx, val = li.run(fn, *(x[k] for k in names))
    check(s, x, idx, val, quant, rtol)


# --------------------------------------------------------------------------------------------
# the golden itself, on a hand-made case

def test_golden_on_a_hand_case() -> None:
    """One head of dim 1: scores are w * relu(q * k) position by position."""
    s = li.IndexerShapes(heads=1, head_dim=1, block_size=2, num_blocks=3, max_blocks=2, tokens=1, topk=3)
    x = {"q": np.array([[[[2.0]]]]), "weights": np.array([[[0.5]]]), "seq_len": np.array([3]),
         "block_table": np.array([[2, 0]]), "k_cache": np.array([[[1.0], [-4.0]], [[9.0], [9.0]], [[3.0], [-1.0]]])}
    (row,), = golden_scores(s, x, quant=False)
    assert row.tolist() == [3.0, 0.0, 1.0]          # keys 3, -1 (block 2), then 1 (block 0)


# --------------------------------------------------------------------------------------------
# reference: small

@pytest.mark.parametrize("seq", [[37], [320, 37, 1], [5, 200, 16]])
def test_reference_small(seq: list[int]) -> None:
    """Batch 1 and 3; lengths 37 (2 blocks + 5), a full table, 1 (below the 2 tokens), 16 (one
    exact block), 5 and 200 (below and above k = 48)."""
    run_case("small", seq, "reference")


# --------------------------------------------------------------------------------------------
# llvm: small, every dtype and the quantised form, block size 128

@pytest.mark.parametrize("dtype,rtol", [(pto.DT_FP32, 1e-5), (pto.DT_FP16, 1e-3), (pto.DT_BF16, 1e-3)])
def test_llvm_small_dtypes(dtype, rtol: float) -> None:  # noqa: ANN001
    run_case("small", [37, 320, 1], "llvm", dtype, rtol=rtol)


@pytest.mark.parametrize("seq", [[100], [300, 129, 7, 256]])
def test_llvm_block_size_128(seq: list[int]) -> None:
    run_case("small_b128", seq, "llvm", pto.DT_BF16, rtol=1e-3)


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_quantised_small(backend: str) -> None:
    run_case("small", [37, 250, 3], backend, quant=True, rtol=1e-4)


def test_one_compile_serves_every_batch_size() -> None:
    s = li.SHAPES["small"]
    fn = li.build(s, dtype=pto.DT_FP32, backend="llvm")
    for seq in ([37], [12, 300], [1, 2, 3, 4, 5]):
        x = make_inputs(s, seq, pto.DT_FP32, np.random.default_rng(len(seq)))
        idx, val = li.run(fn, x["q"], x["k_cache"], x["weights"], x["seq_len"], x["block_table"])
        check(s, x, idx, val, False, 1e-5)
    assert len(fn._entries) == 1                     # one compile for batches 1, 2 and 5


# --------------------------------------------------------------------------------------------
# llvm: medium (64 heads of 128, 3072 cached positions)

@pytest.mark.parametrize("shape,seq", [("medium_k256", [3000, 1000]), ("medium", [3072, 2100, 130])])
def test_llvm_medium(shape: str, seq: list[int]) -> None:
    run_case(shape, seq, "llvm", pto.DT_BF16, rtol=1e-3)


# --------------------------------------------------------------------------------------------
# the NPU profiles: the kernels are legal there (checked by pto.check when compiled) and run

@pytest.mark.parametrize("profile", ["a3", "a5"])
@pytest.mark.parametrize("quant", [False, True])
def test_npu_profiles_reduced_shape(profile: str, quant: bool) -> None:
    run_case("small_b128", [300, 45], "llvm", pto.DT_BF16, profile=profile, quant=quant, rtol=1e-3)
