"""All-reduce across MPI processes: openpto's MPI execution of an all-reduce written in PTO-AS
(benchmarks/kernels/allreduce_rs.pto: a reduce-scatter and an all-gather from one-sided puts and
AtomicAdd notifies, on the llvm backend) against mpi4py's own ``Allreduce`` of the same buffers,
for 1, 16 and 256 MB on 2 and 4 processes, in one run; plus the physical limit on this machine,
one process copying the buffer (numpy).

    python benchmarks/bench_comm.py [--sizes 1,16,256] [--ranks 2,4] [--repeat 5] [--backend llvm]

Each time is the best of ``--repeat`` runs; a run's time is the slowest rank's, taken inside each
process between barriers (the launch's process start, compile and file transfer are excluded).
The all-reduce result is checked against numpy before it is timed.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the shared benchmarks/machine.py
from machine import calibration, machine  # noqa: E402
from openpto.runtime.mpi import find_mpiexec, launch  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
KERNEL = HERE / "kernels" / "allreduce_rs.pto"
COLS = 1024

#: the mpi4py side: the same buffers, MPI's Allreduce, best of `repeat` between barriers
MPI4PY = """
import sys, time
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
n, repeat = int(sys.argv[1]), int(sys.argv[2])
x = np.random.default_rng(comm.rank).random(n, dtype=np.float32)
y = np.empty_like(x)
best = float("inf")
for _ in range(repeat):
    comm.Barrier()
    t = time.perf_counter()
    comm.Allreduce(x, y, op=MPI.SUM)
    slowest = comm.allreduce(time.perf_counter() - t, op=MPI.MAX)
    best = min(best, slowest)
if comm.rank == 0:
    print(best)
"""


def pto_allreduce(mb: int, ranks: int, repeat: int, backend: str) -> float:
    rows = mb * 1024 * 1024 // 4 // COLS
    rows -= rows % (16 * ranks)
    rng = np.random.default_rng(0)
    xs = [rng.random(rows * COLS, dtype=np.float32) for _ in range(ranks)]
    ys = [np.zeros(rows * COLS, np.float32) for _ in range(ranks)]
    args = {"x": [x.copy() for x in xs], "buf": [np.zeros(rows * COLS, np.float32) for _ in range(ranks)],
            "y": ys, "arrived": [np.zeros(1, np.int32) for _ in range(ranks)],
            "gathered": [np.zeros(1, np.int32) for _ in range(ranks)], "rows": rows}
    res = launch(KERNEL, "allreduce", args, ranks=ranks, backend=backend, repeat=repeat, timeout=1800)
    want = np.sum(np.stack(xs), axis=0, dtype=np.float64)
    for r, y in enumerate(ys):
        if not np.allclose(y, want, rtol=1e-5, atol=1e-5):
            raise SystemExit(f"rank {r}'s all-reduce differs from numpy")
    return min(max(t[i] for t in res.times) for i in range(repeat))


def mpi4py_allreduce(mb: int, ranks: int, repeat: int) -> float:
    n = mb * 1024 * 1024 // 4
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(MPI4PY)
    try:
        out = subprocess.run([find_mpiexec(), "-n", str(ranks), sys.executable, f.name, str(n), str(repeat)],
                             capture_output=True, text=True, timeout=1800, check=True)
    finally:
        os.unlink(f.name)
    return float(out.stdout.split()[-1])


def copy_limit(mb: int, repeat: int) -> float:
    """One process copying the buffer: the memory bandwidth every rank's traffic shares here."""
    a = np.ones(mb * 1024 * 1024 // 4, np.float32)
    b = np.empty_like(a)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1,16,256", help="buffer sizes in MB, comma-separated")
    ap.add_argument("--ranks", default="2,4", help="process counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--backend", default="llvm")
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",")]
    ranks = [int(r) for r in a.ranks.split(",")]
    print(f"machine: {machine()}; calibration {calibration() * 1e3:.1f} ms; backend {a.backend}; "
          f"best of {a.repeat}; one rank per process")
    print("| size | ranks | openpto (ms) | mpi4py Allreduce (ms) | openpto / mpi4py | openpto GB/s per rank |")
    print("|---:|---:|---:|---:|---:|---:|")
    for mb in sizes:
        for n in ranks:
            ours = pto_allreduce(mb, n, a.repeat, a.backend)
            theirs = mpi4py_allreduce(mb, n, a.repeat)
            moved = 2 * (n - 1) / n * mb * 2**20            # bytes each rank sends (and receives)
            print(f"| {mb} MB | {n} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | {ours / theirs:.2f}x | "
                  f"{moved / ours / 1e9:.2f} |", flush=True)
        print(f"| {mb} MB | limit: one copy of the buffer | {copy_limit(mb, a.repeat) * 1e3:.2f} | | | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
