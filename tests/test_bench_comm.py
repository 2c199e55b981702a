"""benchmarks/bench_comm.py's all-reduce kernel (a reduce-scatter then an all-gather from puts and
AtomicAdd notifies) equals numpy on the embedded execution for 1 to 4 ranks on both backends, and
the benchmark's quick run prints its table under MPI."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import openpto as pto

ROOT = pathlib.Path(__file__).resolve().parents[1]
KERNEL = ROOT / "benchmarks" / "kernels" / "allreduce_rs.pto"


@pytest.mark.parametrize("backend", ["reference", "llvm"])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_allreduce_kernel_sums_every_rank(backend: str, n: int) -> None:
    exe = pto.compile(pto.load(KERNEL), backend, "cpu")
    rows = 32 * n
    rng = np.random.default_rng(n)
    xs = [rng.standard_normal(rows * 1024).astype(np.float32) for _ in range(n)]
    ys = [np.zeros(rows * 1024, np.float32) for _ in range(n)]
    exe.run("allreduce", x=[x.copy() for x in xs], buf=[np.zeros_like(x) for x in xs], y=ys,
            arrived=[np.zeros(1, np.int32) for _ in range(n)], gathered=[np.zeros(1, np.int32) for _ in range(n)],
            rows=rows, ranks=n)
    want = xs[0]
    for x in xs[1:]:                          # rank order, f32: the order the kernel adds in
        want = want + x
    for y in ys:
        np.testing.assert_array_equal(y, want)


def test_quick_benchmark_prints_the_table(mpiexec: str, capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_comm
    assert bench_comm.main(["--sizes", "1", "--ranks", "2", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| 1 MB")]
    assert len(rows) == 2 and rows[0].split("|")[2].strip() == "2" and "x |" in rows[0]
