"""MPMD: attention-style scores then a row softmax, as a graph of cube and vector tasks.

    S = Q @ K        Q: 2048 x 128 f16, K: 128 x 1024 f16, S: 2048 x 1024 f32
    P = softmax(S)   row by row

Cube tasks (examples/gemm.pto) each compute one 128 x 512 block of S; vector tasks
(examples/softmax.pto) each normalise 64 full rows of S into P. No edge is written by hand:
a softmax task reads the bytes two matmul tasks wrote (both column blocks of its rows), so it
waits for exactly those two, and the softmax of early rows runs while later blocks of S are
still being multiplied. The graph runs on the embedded executor (a cube and a vector worker
thread, real time, llvm kernels) and on the simulated executor (a3: 24 AIC + 48 AIV, ascend_sim cycle estimates);
both results are checked against numpy.

    python examples/mpmd_softmax.py [--png-dir DIR] [--trace FILE.json]
"""
from __future__ import annotations

import argparse
import pathlib

import numpy as np

import openpto as pto
from openpto.runtime import TaskGraph, run, verify
from openpto.runtime.summary import format_summary
from openpto.runtime.traces import write_chrome, write_swimlane_png

HERE = pathlib.Path(__file__).resolve().parent
M, D, N = 2048, 128, 1024          # rows of S, the shared dimension, columns of S
ROW_BLOCK, COL_BLOCK, SOFTMAX_ROWS = 128, 512, 64


def build(backend: str = "llvm", seed: int = 0) -> tuple[TaskGraph, dict[str, np.ndarray]]:
    """The graph and its arrays (q, k inputs; s, p outputs)."""
    gemm = pto.compile(pto.load(str(HERE / "gemm.pto")), backend=backend, profile="a3")
    softmax = pto.compile(pto.load(str(HERE / "softmax.pto")), backend=backend, profile="a3")
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((M, D)) * 0.2).astype(np.float16)
    k = (rng.standard_normal((D, N)) * 0.2).astype(np.float16)
    s = np.zeros((M, N), np.float32)
    p = np.zeros((M, N), np.float32)
    g = TaskGraph()
    for i in range(0, M, ROW_BLOCK):
        for j in range(0, N, COL_BLOCK):                          # cube: one block of S
            g.task(gemm, args=dict(a=q[i:i + ROW_BLOCK], b=k[:, j:j + COL_BLOCK], c=s[i:i + ROW_BLOCK, j:j + COL_BLOCK],
                                   m=ROW_BLOCK, n=COL_BLOCK, k=D), label=f"mm {i // ROW_BLOCK},{j // COL_BLOCK}")
        for r in range(i, i + ROW_BLOCK, SOFTMAX_ROWS):          # vector: rows of P, after their blocks of S
            g.task(softmax, args=dict(x=s[r:r + SOFTMAX_ROWS], y=p[r:r + SOFTMAX_ROWS], rows=SOFTMAX_ROWS),
                   label=f"softmax {r // SOFTMAX_ROWS}")
    return g, dict(q=q, k=k, s=s, p=p)


def check(arrays: dict[str, np.ndarray]) -> float:
    """Largest difference from numpy's S and softmax (f32 products of the f16 inputs)."""
    s = arrays["q"].astype(np.float32) @ arrays["k"].astype(np.float32)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(arrays["s"], s, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(arrays["p"], p, rtol=1e-4, atol=1e-7)
    return float(np.abs(arrays["p"] - p).max())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png-dir", help="write the two swimlanes (runtime_mpmd_embedded.png, runtime_mpmd_a3.png) here")
    ap.add_argument("--trace", help="write the simulated run as Chrome / Perfetto JSON")
    args = ap.parse_args(argv)
    runs = {}
    # embedded: one worker thread for cube tasks, one for vector tasks (this 2-core machine)
    for executor, options in (("embedded", {"cores": {"cube": 1, "vector": 1}}), ("simulated", {"profile": "a3"})):
        g, arrays = build()
        rec = run(g, executor, "fifo", **options)
        verify(rec)                                   # every conflicting pair ordered by the graph
        diff = check(arrays)
        cube = sum(1 for t in g.tasks if t.core == "cube")
        print(f"== {executor}: {cube} cube + {len(g.tasks) - cube} vector tasks, "
              f"{sum(len(p) for p in g.preds)} derived edges, max |P - numpy| = {diff:.2e}")
        print(format_summary(rec))
        runs[executor] = rec
    if args.png_dir:
        out = pathlib.Path(args.png_dir)
        write_swimlane_png(str(out / "runtime_mpmd_embedded.png"), runs["embedded"],
                           "S = Q @ K (cube tasks) then row softmax (vector tasks): embedded, llvm, real time")
        write_swimlane_png(str(out / "runtime_mpmd_a3.png"), runs["simulated"],
                           "the same graph simulated on a3 (24 AIC + 48 AIV), ascend_sim cycle estimates")
    if args.trace:
        write_chrome(args.trace, runs["simulated"])


if __name__ == "__main__":
    main()
