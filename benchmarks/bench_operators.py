"""Operators of issue 20 (operators/): each written with the frontend and run on llvm, against a
numpy implementation of the same operator, in one run; one table.

    python benchmarks/bench_operators.py [--repeat 5] [--quick] [--only SUBSTRING]

Target (issue 20): llvm faster than numpy at the medium shapes. The operators are a table of
cases (``CASES``): each names its operator and shape and makes, from fresh inputs, the numpy
run, the llvm run and a check that the llvm result agrees with numpy's, which runs before
anything is timed. A case is one row per implementation; a verdict line per case compares the
two (the target is about the medium shapes; --quick runs small ones).
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the shared benchmarks/machine.py
from machine import best_of, calibration, machine  # noqa: E402
import openpto.frontend as pto  # noqa: E402
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


#: the operators' cases, one row per implementation (the Indexer Prolog adds its own here)
CASES: list[Case] = [
    _indexer_case("medium_k256", quant=False),
    _indexer_case("medium", quant=False),
    _indexer_case("medium_k256", quant=True),
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small shapes, few repeats (a smoke run)")
    ap.add_argument("--only", default="", help="cases whose operator name contains this")
    a = ap.parse_args(argv)
    repeat = 2 if a.quick else a.repeat
    cases = [c for c in CASES if a.only in c.operator]
    rows = measure(cases, a.quick, repeat)
    print(f"machine: {machine()}; calibration loop {calibration() * 1e3:.1f} ms")
    print(f"best of {repeat}, one block; vs numpy = numpy time / llvm time (above 1: llvm is faster)")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
