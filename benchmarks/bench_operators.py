"""Operators of issue 20 (operators/): each written with the frontend and run on llvm, against a
numpy implementation of the same operator, in one run; one table.

    python benchmarks/bench_operators.py [--repeat 5] [--quick] [--only SUBSTRING] [--simulated]

Target (issue 20): llvm faster than numpy at the medium shapes. The operators are a table of
cases (``CASES``): each names its operator and shape and makes, from fresh inputs, the numpy
run, the llvm run and a check that the llvm result agrees with numpy's, which runs before
anything is timed. A case is one row per implementation; a verdict line per case compares the
two (the target is about the medium shapes; --quick runs small ones). --simulated adds a table of the
quantised operators' simulated a3 and a5 times (the MPMD runtime's simulated executor, the
tuning loop's variants before and after its step: operators/tuning.py).

numpy's BLAS runs on one thread unless OPENBLAS_NUM_THREADS (or OMP_NUM_THREADS) says otherwise,
as the llvm rows run one block: on the shared 2-core machine a second BLAS thread competing with
other processes made numpy's times swing by 10x from run to run.
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):     # before numpy loads its BLAS
    os.environ.setdefault(_var, "1")

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the shared benchmarks/machine.py
from machine import best_of, calibration, machine  # noqa: E402
import openpto.frontend as pto  # noqa: E402
from openpto.operators import indexer_prolog as ip  # noqa: E402
from openpto.operators import lightning_indexer as li  # noqa: E402


@dataclass(frozen=True)
class Bench:
    """One case made ready: the two implementations and the agreement check (raises SystemExit)."""

    numpy: Callable[[], Any]
    llvm: Callable[[], Any]
    check: Callable[[], None]


@dataclass(frozen=True)
class Case:
    operator: str
    shape: Callable[[bool], str]          # quick -> what the row says of the shape
    make: Callable[[bool], Bench]         # quick -> the implementations on fresh inputs


# --------------------------------------------------------------------------------------------
# Lightning Indexer

def _indexer_inputs(s: li.IndexerShapes, seq: list[int], quant: bool, rng: np.random.Generator) -> dict:
    B, T, N, D = len(seq), s.tokens, s.heads, s.head_dim
    bt = np.full((B, s.max_blocks), -1, np.int32)
    pool, used = rng.permutation(s.num_blocks), 0
    for b, n in enumerate(seq):
        nb = -(-n // s.block_size)
        bt[b, :nb] = pool[used:used + nb]
        used += nb
    x = {"seq_len": np.array(seq, np.int32), "block_table": bt}
    if quant:
        x["q"] = rng.integers(-127, 128, (B, T, N, D)).astype(np.int8)
        x["q_scale"] = (rng.random((B, T, N)) * 0.02 + 1e-3).astype(np.float16)
        x["k_cache"] = rng.integers(-127, 128, (s.num_blocks, s.block_size, D)).astype(np.int8)
        x["k_scale"] = (rng.random((s.num_blocks, s.block_size)) * 0.02 + 1e-3).astype(np.float16)
        x["weights"] = rng.standard_normal((B, T, N)).astype(np.float16)
    else:
        x["q"] = rng.standard_normal((B, T, N, D)).astype(np.float32)
        x["k_cache"] = rng.standard_normal((s.num_blocks, s.block_size, D)).astype(np.float32)
        x["weights"] = rng.standard_normal((B, T, N)).astype(np.float32)
    return x


def np_indexer(s: li.IndexerShapes, x: dict, quant: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same operator in numpy (f32 BLAS; the int8 products are exact in f32 at these sizes):
    (indices, values, every batch's masked scores)."""
    q, kc, w, seq, bt = x["q"], x["k_cache"], x["weights"], x["seq_len"], x["block_table"]
    B, T, N, D = q.shape
    P, K = s.positions, s.k
    idx = np.full((B, T, K), li.PAD_INDEX, np.int32)
    val = np.full((B, T, K), -np.inf, np.float32)
    scores = np.empty((B, T, P), np.float32)
    limit = seq[:, None] - (T - 1) + np.arange(T)[None, :]
    pos = np.arange(P)
    for b in range(B):
        inside = (bt[b] >= 0) & (bt[b] < kc.shape[0])
        keys = np.where(inside[:, None, None], kc[np.where(inside, bt[b], 0)], 0).reshape(P, D)
        qk = q[b].reshape(T * N, D).astype(np.float32) @ keys.astype(np.float32).T
        np.maximum(qk, 0, out=qk)
        if quant:
            qk = (qk * np.float32(li.QK_SCALE)).astype(np.float16).astype(np.float32)
            wb = (w[b] * x["q_scale"][b]).astype(np.float32)
            ks = np.where(inside[:, None], x["k_scale"][np.where(inside, bt[b], 0)], 0).reshape(P)
        else:
            wb = w[b].astype(np.float32)
        sc = np.matmul(wb[:, None, :], qk.reshape(T, N, P))[:, 0, :]
        if quant:
            sc *= ks.astype(np.float32)
        sc[pos[None, :] >= limit[b][:, None]] = -np.inf
        scores[b] = sc
        top = np.argpartition(-sc, K - 1, axis=1)[:, :K] if K < P else np.broadcast_to(pos, (T, P))
        order = np.argsort(-np.take_along_axis(sc, top, 1), axis=1, kind="stable")
        sel = np.take_along_axis(top, order, 1)
        v = np.take_along_axis(sc, sel, 1)
        idx[b] = np.where(np.isneginf(v), li.PAD_INDEX, sel)
        val[b] = v
    return idx, val, scores


def _indexer_check(s: li.IndexerShapes, x: dict, quant: bool, got: tuple[np.ndarray, np.ndarray]) -> None:
    """Values equal numpy's (tolerance), -1 exactly where numpy has it, and numpy's score at every
    position llvm chose is llvm's value (tie-safe: equal scores may be chosen in either order)."""
    idx, val, scores = np_indexer(s, x, quant)
    gi, gv = got
    tol = 1e-4 * float(np.abs(val[np.isfinite(val)]).max())
    ok = np.array_equal(gi == li.PAD_INDEX, idx == li.PAD_INDEX) and np.allclose(gv, val, rtol=0, atol=tol)
    chosen = np.take_along_axis(scores.reshape(-1, scores.shape[-1]), np.maximum(gi, 0).reshape(-1, s.k), 1)
    ok = ok and np.allclose(np.where(gi.reshape(-1, s.k) >= 0, chosen, -np.inf), gv.reshape(-1, s.k),
                            rtol=0, atol=tol)
    if not ok:
        raise SystemExit(f"lightning indexer {s}: the llvm result differs from numpy's")


def _indexer_case(shape: str, quant: bool) -> Case:
    seqs = {False: [3072, 2500, 1800, 700], True: [320, 37, 200]}       # by quick

    def describe(quick: bool) -> str:
        s = li.SHAPES["small" if quick else shape]
        seq = seqs[quick]
        return (f"B={len(seq)} T={s.tokens} {s.heads}x{s.head_dim} heads, {s.positions} keys in "
                f"{s.block_size}-blocks, k={s.k}, {'int8' if quant else 'f32'}")

    def make(quick: bool) -> Bench:
        s = li.SHAPES["small" if quick else shape]
        x = _indexer_inputs(s, seqs[quick], quant, np.random.default_rng(0))
        fn = li.build(s, quant=quant, dtype=pto.DT_FP32, backend="llvm")
        names = (["q", "q_scale", "k_cache", "k_scale"] if quant else ["q", "k_cache"]) + \
            ["weights", "seq_len", "block_table"]
        args = [x[k] for k in names]
        out = (np.empty(x["q"].shape[:2] + (s.k,), np.int32), np.empty(x["q"].shape[:2] + (s.k,), np.float32))
        return Bench(numpy=lambda: np_indexer(s, x, quant), llvm=lambda: fn(*args, *out),
                     check=lambda: (fn(*args, *out), _indexer_check(s, x, quant, out)) and None)

    return Case("lightning indexer", describe, make)


# --------------------------------------------------------------------------------------------
# Indexer Prolog

BF16 = ml_dtypes.bfloat16
F32 = np.float32


def _prolog_inputs(s: ip.PrologShapes, t: int, quant: bool, rng: np.random.Generator) -> list[np.ndarray]:
    """The operator's arguments in its order (bf16 activations and weights; RoPE tables of
    random angles; a normalised Sylvester Hadamard matrix for q, a random one for k)."""
    u = lambda *shape: rng.uniform(-1, 1, shape)     # noqa: E731
    ang = rng.uniform(0, 2 * np.pi, (t, s.rope_dim))
    x, wk = u(t, s.hidden).astype(BF16), u(s.hidden, s.head_dim).astype(BF16)
    w_proj = u(s.hidden, s.heads).astype(BF16)
    gamma, beta = (1 + 0.1 * u(s.head_dim)).astype(BF16), (0.1 * u(s.head_dim)).astype(BF16)
    cos, sin = np.cos(ang).astype(BF16), np.sin(ang).astype(BF16)
    nd = s.heads * s.head_dim
    if not quant:
        return [x, u(t, s.q_lora).astype(BF16), (u(s.q_lora, nd) / np.sqrt(s.q_lora)).astype(BF16),
                wk, w_proj, gamma, beta, cos, sin]
    h = np.ones((1, 1))
    while h.shape[0] < s.head_dim:
        h = np.block([[h, h], [h, -h]])
    return [x, rng.integers(-128, 128, (t, s.q_lora)).astype(np.int8), rng.uniform(1e-3, 2e-2, (t, 1)).astype(F32),
            rng.integers(-128, 128, (s.q_lora, nd)).astype(np.int8), rng.uniform(1e-3, 2e-2, (nd, 1)).astype(F32),
            wk, w_proj, gamma, beta, cos, sin, (h / np.sqrt(s.head_dim)).astype(BF16), u(s.head_dim, s.head_dim).astype(BF16)]


def _np_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, r: int) -> np.ndarray:
    """RoPE on the first r columns in f32, rounded back to x's dtype (a copy)."""
    h, out = r // 2, x.copy()
    x1, x2 = x[..., :h].astype(F32), x[..., h:r].astype(F32)
    out[..., :h] = x1 * cos[..., :h] - x2 * sin[..., :h]
    out[..., h:r] = x2 * cos[..., h:] + x1 * sin[..., h:]
    return out


def _np_quant(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scale = F32(127.0) / np.abs(x).max(-1, keepdims=True)
    return np.rint(x * scale).astype(np.int8), (F32(1.0) / scale).astype(np.float16)


def _np_key(s: ip.PrologShapes, xf: np.ndarray, wk, gamma, beta, cos, sin) -> np.ndarray:   # noqa: ANN001
    k = xf @ wk.astype(F32)
    d = k - k.mean(-1, keepdims=True)
    k = (d / np.sqrt((d * d).mean(-1, keepdims=True) + F32(ip.EPS)) * gamma.astype(F32) + beta.astype(F32))
    return _np_rope(k.astype(BF16), cos, sin, s.rope_dim)


def np_prolog(s: ip.PrologShapes, args: list[np.ndarray], quant: bool) -> tuple[np.ndarray, ...]:
    """The same operator in numpy, f32 BLAS throughout (the i8 query projection too: its
    products and sums are integers below 2**24 while q_lora * 128 * 128 is, else float64)."""
    t, n, d, r = args[0].shape[0], s.heads, s.head_dim, s.rope_dim
    w_scale = F32(1.0 / (np.sqrt(n) * np.sqrt(d)))
    if quant:
        x, q_norm, q_norm_scale, w_qb, w_qb_scale, wk, w_proj, gamma, beta, cos, sin, hq, hk = args
        mm = F32 if s.q_lora * 128 * 128 <= 2 ** 24 else np.float64
        q = (q_norm.astype(mm) @ w_qb.astype(mm)).astype(F32) * q_norm_scale * w_qb_scale.reshape(1, -1)
    else:
        x, q_lora, w_q, wk, w_proj, gamma, beta, cos, sin = args
        q = q_lora.astype(F32) @ w_q.astype(F32)
    cos_f, sin_f = cos.astype(F32), sin.astype(F32)
    q = _np_rope(q.astype(BF16).reshape(t, n, d), cos_f[:, None, :], sin_f[:, None, :], r)
    xf = x.astype(F32)
    k = _np_key(s, xf, wk, gamma, beta, cos_f, sin_f)
    w = (xf @ w_proj.astype(F32)).astype(BF16).astype(F32) * w_scale
    if not quant:
        return q, k, w.astype(BF16)
    q8, qs = _np_quant((q.astype(F32) @ hq.astype(F32)).astype(BF16).astype(F32))
    k8, ks = _np_quant((k.astype(F32) @ hk.astype(F32)).astype(BF16).astype(F32))
    return q8, qs, k8, ks, w.astype(np.float16)


def _prolog_check(s: ip.PrologShapes, args: list[np.ndarray], quant: bool, got: tuple) -> None:
    """int8 codes within one unit (exact on 99% of them), floats within two bf16 units of their
    row's size: the kernels sum the float matmuls in another order (see
    tests/test_op_indexer_prolog.py)."""
    for g, w in zip(got, np_prolog(s, args, quant)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            raise SystemExit(f"indexer prolog {s}: llvm gave {g.dtype}{g.shape}, numpy {w.dtype}{w.shape}")
        diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
        if w.dtype == np.int8:
            ok = diff.max() <= 1 and (diff == 0).mean() >= 0.99
        else:
            ok = bool((diff <= 2 ** -6 * (np.abs(w.astype(np.float64)).max(-1, keepdims=True) + 1e-30)).all())
        if not ok:
            raise SystemExit(f"indexer prolog {s}: the llvm result differs from numpy's "
                             f"(largest error {diff.max():.3g})")


def _prolog_case(tokens: int, quant: bool) -> Case:
    def describe(quick: bool) -> str:
        s = ip.SHAPES["small" if quick else "medium"]
        t = tokens // 32 if quick else tokens
        return (f"T={t} h={s.hidden} q_lora={s.q_lora} {s.heads}x{s.head_dim} heads, rope {s.rope_dim}, "
                f"{'int8' if quant else 'bf16'}")

    def make(quick: bool) -> Bench:
        s = ip.SHAPES["small" if quick else "medium"]
        args = _prolog_inputs(s, tokens // 32 if quick else tokens, quant, np.random.default_rng(0))
        fn = ip.build(s, quant=quant, backend="llvm")
        return Bench(numpy=lambda: np_prolog(s, args, quant), llvm=lambda: fn(*args),
                     check=lambda: _prolog_check(s, args, quant, fn(*args)))

    return Case("indexer prolog", describe, make)


#: the operators' cases, one row per implementation
CASES: list[Case] = [
    _indexer_case("medium_k256", quant=False),
    _indexer_case("medium", quant=False),
    _indexer_case("medium_k256", quant=True),
    _prolog_case(64, quant=True),
    _prolog_case(256, quant=True),
    _prolog_case(256, quant=False),
]


# --------------------------------------------------------------------------------------------

def measure(cases: list[Case], quick: bool, repeat: int) -> list[dict]:
    rows = []
    for case in cases:
        bench = case.make(quick)
        bench.check()
        t_np = best_of(bench.numpy, repeat)
        t_llvm = best_of(bench.llvm, repeat)
        rows.append({"operator": case.operator, "shape": case.shape(quick), "numpy": t_np, "llvm": t_llvm})
    return rows


#: the simulated rows: operator name -> the tuning loop's variants (operators/tuning.py) of it
SIMULATED: dict[str, tuple[str, ...]] = {"lightning indexer": ("indexer", "indexer_tuned"),
                                         "indexer prolog": ("prolog", "prolog_tuned")}


def simulated(only: str, quick: bool, profiles: tuple[str, ...] = ("a3", "a5")) -> list[dict]:
    """Simulated makespans (µs) of the quantised operators on the MPMD runtime's simulated
    executor, per profile: the tuning loop's variants before and after its step (the doc shape,
    or its tiny one with --quick)."""
    from openpto.operators import tuning as tu
    variants = tu.tuning_variants("tiny" if quick else "doc")
    rows = []
    for op, names in SIMULATED.items():
        if only not in op:
            continue
        for name in names:
            v = variants[name]
            us = {p: tu.simulate(v, p).makespan_us for p in profiles}
            rows.append({"operator": op, "variant": f"{name} ({v.note})", **us})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small shapes, few repeats (a smoke run)")
    ap.add_argument("--only", default="", help="cases whose operator name contains this")
    ap.add_argument("--simulated", action="store_true", help="add the simulated a3/a5 table")
    a = ap.parse_args(argv)
    repeat = 2 if a.quick else a.repeat
    cases = [c for c in CASES if a.only in c.operator]
    rows = measure(cases, a.quick, repeat)
    print(f"machine: {machine()}; calibration loop {calibration() * 1e3:.1f} ms")
    print(f"best of {repeat}, one block; numpy's BLAS on {os.environ.get('OPENBLAS_NUM_THREADS', '?')} thread(s); "
          "vs numpy = numpy time / llvm time (above 1: llvm is faster)")
    print("| operator | shape | implementation | time (ms) | vs numpy |")
    print("|---|---|---|---:|---:|")
    for r in rows:
        print(f"| {r['operator']} | {r['shape']} | numpy | {r['numpy'] * 1e3:.2f} | 1.00x |")
        print(f"| {r['operator']} | {r['shape']} | frontend, llvm | {r['llvm'] * 1e3:.2f} | "
              f"{r['numpy'] / r['llvm']:.2f}x |")
    for r in rows:
        ratio = r["numpy"] / r["llvm"]
        print(f"target {r['operator']} ({r['shape']}{', quick: not the medium shape' if a.quick else ''}) "
              f"on llvm faster than numpy: {ratio:.2f}x: {'meets' if ratio > 1 else 'misses'}")
    if a.simulated:
        sim = simulated(a.only, a.quick)
        print("\nsimulated (quantised, merge=1 tasks on the simulated executor; operators/tuning.py's "
              f"{'tiny' if a.quick else 'doc'} shape; docs/operators.md 'Tuning on the simulator')")
        print("| operator | variant | a3 (µs) | a5 (µs) |")
        print("|---|---|---:|---:|")
        for r in sim:
            print(f"| {r['operator']} | {r['variant']} | {r['a3']:.1f} | {r['a5']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
