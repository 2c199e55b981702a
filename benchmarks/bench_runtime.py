"""MPMD runtime costs: scheduling overhead per empty task and empty tasks per second on the
embedded executor, a compute-bound graph's speed-up over running its tasks one after another,
and the dask executor's overhead per task on a local 2-process cluster; one table.

    python benchmarks/bench_runtime.py [--tasks 20000] [--repeat 3] [--no-dask]

Targets (issue 17): <= 20 us scheduling overhead per empty task and >= 50k empty tasks/s on
the embedded executor; >= 1.7x speed-up over sequential with llvm tasks on a 2-core machine.
An "empty" task is a host task calling a function that does nothing, so the time is the
runtime's own: the scheduler, the ready queues, the worker hand-offs and the recording.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the shared benchmarks/machine.py
from machine import best_of, calibration, machine  # noqa: E402
import openpto as pto  # noqa: E402
from openpto.runtime import TaskGraph, run  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


def nothing() -> None:
    """The work of an empty task."""


def empty_graph(n: int, chain: bool) -> TaskGraph:
    g = TaskGraph()
    prev = None
    for _ in range(n):
        prev = g.host(nothing, after=[prev] if chain and prev is not None else [])
    return g


def gemm_graph(rows: int = 1024, k: int = 512, n: int = 1024, block: int = 128) -> tuple[TaskGraph, np.ndarray, np.ndarray]:
    """C = A @ B in row blocks of ``block`` rows: independent llvm tasks (compute-bound)."""
    exe = pto.compile(pto.load(str(ROOT / "examples" / "gemm.pto")), backend="llvm", profile="a3")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((rows, n), np.float32)
    g = TaskGraph()
    for i in range(0, rows, block):
        g.task(exe, args=dict(a=a[i:i + block], b=b, c=c[i:i + block], m=block, n=n, k=k), label=f"rows {i}")
    want = a.astype(np.float32) @ b.astype(np.float32)
    return g, c, want


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=20000, help="empty tasks per graph (default 20000)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-dask", action="store_true", help="skip the dask row")
    args = ap.parse_args()
    print(f"machine: {machine()}; calibration loop {calibration() * 1e3:.1f} ms; load average "
          f"{os.getloadavg()[0]:.2f}")
    rows: list[tuple[str, str, str]] = []
    n = args.tasks
    t = time.perf_counter()
    g = empty_graph(n, chain=False)
    build = (time.perf_counter() - t) / n
    rows.append((f"building a graph of {n:,} empty host tasks", f"{build * 1e6:.2f} us/task", "-"))
    for workers in (1, 2):
        s = best_of(lambda: run(g, "embedded", workers=workers), args.repeat) / n
        rows.append((f"embedded, {workers} worker(s), {n:,} independent empty tasks",
                     f"{s * 1e6:.2f} us/task, {1 / s:,.0f} tasks/s",
                     "met" if s <= 20e-6 and 1 / s >= 50e3 else "NOT met"))
    chain = empty_graph(n, chain=True)
    s = best_of(lambda: run(chain, "embedded", workers=2), args.repeat) / n
    rows.append((f"embedded, 2 workers, a chain of {n:,} empty tasks", f"{s * 1e6:.2f} us/task, {1 / s:,.0f} tasks/s",
                 "met" if s <= 20e-6 and 1 / s >= 50e3 else "NOT met"))
    joins = TaskGraph()
    for _ in range(n):
        joins.join()
    s = best_of(lambda: run(joins, "embedded"), args.repeat) / n
    rows.append((f"embedded, {n:,} join tasks (resolved inline)", f"{s * 1e6:.2f} us/task", "-"))

    g, c, want = gemm_graph()
    seq = best_of(lambda: [task.run() for task in g.tasks], args.repeat)
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-2)
    c[...] = 0
    par = best_of(lambda: run(g, "embedded", workers=2), args.repeat)
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-2)
    rows.append((f"compute-bound: {len(g.tasks)} llvm GEMM tasks (128x512 @ 512x1024 f16 -> f32), sequential",
                 f"{seq * 1e3:.1f} ms", "-"))
    rows.append(("the same graph, embedded, 2 workers", f"{par * 1e3:.1f} ms, {seq / par:.2f}x speed-up",
                 "met" if seq / par >= 1.7 else "NOT met"))

    if not args.no_dask:
        try:
            import distributed
        except ImportError:
            rows.append(("dask", "not installed (pip install 'openpto[dask]')", "-"))
        else:
            import logging
            logging.getLogger("distributed").setLevel(logging.ERROR)
            with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                          dashboard_address=None) as cluster, distributed.Client(cluster) as client:
                m = 500
                dg = empty_graph(m, chain=False)
                s = best_of(lambda: run(dg, "dask", client=client), args.repeat) / m
                rows.append((f"dask, LocalCluster 2 processes, {m} independent empty tasks",
                             f"{s * 1e6:.0f} us/task, {1 / s:,.0f} tasks/s", "-"))
                dc = empty_graph(m, chain=True)
                s = best_of(lambda: run(dc, "dask", client=client), args.repeat) / m
                rows.append((f"dask, a chain of {m} empty tasks (one round trip each)", f"{s * 1e6:.0f} us/task", "-"))
                c[...] = 0
                d = best_of(lambda: run(g, "dask", client=client), args.repeat)
                np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-2)
                rows.append((f"dask, the {len(g.tasks)} GEMM tasks", f"{d * 1e3:.1f} ms, {seq / d:.2f}x vs sequential", "-"))

    print()
    print("| measurement | result | target |")
    print("|---|---:|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")


if __name__ == "__main__":
    main()
