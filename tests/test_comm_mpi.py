"""The MPI execution of multi-rank launches (runtime/mpi.py, runtime/mpi_world.py): the comm
examples under 2 and 4 MPI processes against numpy and the embedded execution, on reference and
llvm; ADD puts, collectives and blocks waiting on each other across processes; the faults (a put
past the end of a remote tensor, a rank id out of range, a wait nothing satisfies, a failing rank
stopping the others, a crashed process, a stuck launch) as PTOErrors with the embedded codes, in
seconds; pto run --ranks N [--mpi].

mpi4py is required (the `mpi` extra): without it these tests fail. They skip, with the reason, only
when mpiexec cannot start processes on this machine (probed once per session)."""
from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import openpto as pto
from openpto.backends.blocks import run_world_blocks
from openpto.cli import main as cli_main
from openpto.isa import dtypes
from openpto.isa.diagnostics import RuntimeFault
from openpto.isa.world import World
from openpto.runtime import mpi
from openpto.runtime.mpi import launch
from comm_cases import COMM, ring_args as _ring_args, ring_text as _ring_text, zeros as _zeros

ROOT = pathlib.Path(__file__).resolve().parents[1]
HERE = pathlib.Path(__file__).resolve().parent
rng = np.random.default_rng(1919)
WAIT_S = 3.0            # a wait's deadlock timeout in these tests
LIMIT_S = 60.0          # a launch's overall timeout in these tests


def test_mpi4py_is_installed() -> None:
    """The `mpi` extra is part of the test install: a missing mpi4py fails, it is not skipped."""
    assert importlib.util.find_spec("mpi4py") is not None, "pip install -e '.[mpi]' (mpi4py and mpich)"



def _copy(args: dict) -> dict:
    return {k: [a.copy() for a in v] if isinstance(v, list) else v for k, v in args.items()}


def _both(program: str | pathlib.Path, args: dict, n: int, backend: str = "reference", **kw) -> tuple[dict, dict]:  # noqa: ANN003
    """The MPI launch's outputs and the embedded run's, on copies of the same inputs."""
    theirs = _copy(args)
    m = pto.load(program) if isinstance(program, pathlib.Path) else pto.parse(program)
    pto.compile(m, backend, "cpu").run(m.kernels[0].name, ranks=n, block_num=kw.get("block_num", 1), **theirs)
    res = launch(program if isinstance(program, pathlib.Path) else program, None, args, ranks=n, backend=backend,
                 wait_timeout=WAIT_S, timeout=LIMIT_S, **kw)
    return args, theirs | {"_result": res}


def _same(mine: dict, theirs: dict) -> None:
    for name, v in mine.items():
        if isinstance(v, list):
            for a, b in zip(v, theirs[name]):
                np.testing.assert_array_equal(a, b, err_msg=name)


# ----------------------------------------------------------------------------- the examples

BACKENDS = ["reference", "llvm"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [2, 4])
def test_allreduce_example(mpiexec: str, n: int, backend: str) -> None:
    xs = [rng.standard_normal((16, 64)).astype(np.float32) for _ in range(n)]
    args = {"x": xs, "buf": _zeros((16 * n, 64), n), "cnt": _zeros((1,), n, np.int32), "y": _zeros((16, 64), n)}
    ys = args["y"]
    mine, theirs = _both(COMM / "allreduce.pto", args, n, backend)
    want = np.zeros((16, 64), np.float32)
    for x in xs:                                 # f32 in rank order, as the kernel's tadds add
        want = want + x
    for y in mine["y"]:
        np.testing.assert_array_equal(y, want)
    _same(mine, theirs)
    res = theirs["_result"]
    assert res.outputs["y"][0] is ys[0]          # the caller's arrays, written in place
    assert res.counters["TPUT"] == n * n and res.counters["TWAIT"] == n
    assert len(res.times) == n and all(len(t) == 1 and t[0] > 0 for t in res.times)


@pytest.mark.parametrize("n", [2, 4])
def test_ring_exchange_example(mpiexec: str, n: int) -> None:
    xs = [rng.standard_normal((32, 32)).astype(np.float32) for _ in range(n)]
    args = {"x": xs, "y": _zeros((32, 32), n), "flag": _zeros((1,), n, np.int32), "z": _zeros((32, 32), n)}
    mine, theirs = _both(COMM / "ring_exchange.pto", args, n)
    for r in range(n):
        np.testing.assert_array_equal(mine["y"][r], xs[(r - 1) % n])
        np.testing.assert_array_equal(mine["z"][r], xs[(r - 1) % n] + xs[r])
        assert mine["flag"][r][0] == 1
    _same(mine, theirs)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [2, 4])
def test_broadcast_example(mpiexec: str, n: int, backend: str) -> None:
    xs = [rng.standard_normal((16, 128)).astype(np.float16) for _ in range(n)]
    args = {"x": xs, "y": _zeros((16, 128), n, np.float16), "done": _zeros((1,), n, np.int32),
            "z": _zeros((16, 128), n, np.float16)}
    mine, theirs = _both(COMM / "broadcast.pto", args, n, backend)
    for r in range(n):
        np.testing.assert_array_equal(mine["y"][r], xs[0])
        np.testing.assert_array_equal(mine["z"][r], (xs[0].astype(np.float32) * 2).astype(np.float16))
    _same(mine, theirs)


def test_tp_matmul_example_puts_strided_column_windows(mpiexec: str) -> None:
    n = 2
    x = rng.standard_normal((64, 128)).astype(np.float16)
    w = rng.standard_normal((128, 64 * n)).astype(np.float16)
    args = {"x": [x.copy() for _ in range(n)], "w": [np.ascontiguousarray(w[:, 64 * r:64 * r + 64]) for r in range(n)],
            "part": _zeros((64, 64), n), "y": _zeros((64, 64 * n), n), "cnt": _zeros((1,), n, np.int32)}
    mine, theirs = _both(COMM / "tp_matmul.pto", args, n)
    want = x.astype(np.float64) @ w.astype(np.float64)
    for y in mine["y"]:
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-4)
    _same(mine, theirs)


# ----------------------------------------------------------------------------- instructions across processes

ADD = """
kernel @addput(%x : !pto.memref<8x16xDT>, %acc : !pto.memref<8x16xDT>, %cnt : !pto.memref<1xi32>) {
  .const %c0 = 0 : index
  .const %one = 1 : i32
  %me = pto.get_rank
  %n = pto.get_rank_num
  tput %acc[%c0, %c0], %x[%c0, %c0], %c0 {atomicType = #pto.atomic<ADD>} : (!pto.memref<8x16xDT>, !pto.memref<8x16xDT>, index)
  tnotify %cnt[%c0], %one, %c0 {op = #pto.notify_op<AtomicAdd>} : (!pto.memref<1xi32>, i32, index)
  %root = arith.cmpi eq, %me, %c0 : index
  scf.if %root {
    %n32 = arith.index_cast %n : index to i32
    twait %cnt[%c0], %n32 {cmp = #pto.cmp<GE>} : (!pto.memref<1xi32>, i32)
  }
}
"""


@pytest.mark.parametrize("dtype", ["f32", "i32", "f16", "bf16"])
def test_add_puts_from_every_rank(mpiexec: str, dtype: str) -> None:
    """Every rank adds into rank 0's tensor at once: MPI Accumulate(SUM) for f32/i32, read-add-write
    under an exclusive lock for f16/bf16. Small integers, so every order of the adds gives the same
    sum; a lost update would show. (The embedded execution's race check reports unordered ADD
    puts to one element, so this kernel is compared with numpy only.)"""
    n = 4
    npt = dtypes.get(dtype).np_dtype
    xs = [rng.integers(-8, 9, (8, 16)).astype(npt) for _ in range(n)]
    base = rng.integers(-8, 9, (8, 16)).astype(npt)
    args = {"x": xs, "acc": [base.copy() for _ in range(n)], "cnt": _zeros((1,), n, np.int32)}
    launch(ADD.replace("DT", dtype), None, args, ranks=n, wait_timeout=WAIT_S, timeout=LIMIT_S)
    want = base.astype(np.float64) + sum(x.astype(np.float64) for x in xs)
    np.testing.assert_array_equal(args["acc"][0].astype(np.float64), want)
    for r in range(1, n):
        np.testing.assert_array_equal(args["acc"][r], base)
    assert [int(c[0]) for c in args["cnt"]] == [n] + [0] * (n - 1)


COLLECTIVES = """
kernel @coll(%x : !pto.memref<8x16xi32>, %red : !pto.memref<8x16xi32>, %gat : !pto.memref<?x16xi32>,
             %sc : !pto.memref<8x16xi32>, %big : !pto.memref<?x16xi32>, %done : !pto.memref<1xi32>,
             %mx : !pto.memref<8x16xi32>, %bc : !pto.memref<8x16xi32>) {
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %one = 1 : i32
  %me = pto.get_rank
  %n = pto.get_rank_num
  %root = arith.cmpi eq, %me, %c1 : index
  scf.if %root {
    treduce %red[%c0, %c0], %x[%c0, %c0] {op = #pto.reduce_op<Sum>} : (!pto.memref<8x16xi32>, !pto.memref<8x16xi32>)
    treduce %mx[%c0, %c0], %x[%c0, %c0] {op = #pto.reduce_op<Max>} : (!pto.memref<8x16xi32>, !pto.memref<8x16xi32>)
    tgather_comm %gat[%c0, %c0], %x[%c0, %c0] : (!pto.memref<?x16xi32>, !pto.memref<8x16xi32>)
    tscatter_comm %sc[%c0, %c0], %big[%c0, %c0] : (!pto.memref<8x16xi32>, !pto.memref<?x16xi32>)
    tbroadcast %bc[%c0, %c0], %x[%c0, %c0] : (!pto.memref<8x16xi32>, !pto.memref<8x16xi32>)
    scf.for %p = %c0 to %n step %c1 {
      tnotify %done[%c0], %one, %p {op = #pto.notify_op<Set>} : (!pto.memref<1xi32>, i32, index)
    }
  }
  twait %done[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32)
}
"""


def test_root_driven_collectives_over_rma(mpiexec: str) -> None:
    """Rank 1 is the root: it reduces, gathers, scatters and broadcasts by one-sided RMA alone."""
    n, i32 = 3, np.int32
    xs = [rng.integers(-2**31, 2**31, (8, 16), dtype=np.int64).astype(i32) for _ in range(n)]
    big = [rng.integers(-100, 100, (8 * n + 3, 16)).astype(i32) for _ in range(n)]
    args = {"x": xs, "big": big, "done": _zeros((1,), n, i32), "red": _zeros((8, 16), n, i32),
            "gat": [np.full((8 * n + 2, 16), 7, i32) for _ in range(n)], "sc": _zeros((8, 16), n, i32),
            "mx": _zeros((8, 16), n, i32), "bc": _zeros((8, 16), n, i32)}
    mine, theirs = _both(COLLECTIVES, args, n)
    wrapped = (np.sum(np.stack(xs).astype(np.int64), axis=0) + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(mine["red"][1], wrapped.astype(i32))
    np.testing.assert_array_equal(mine["mx"][1], np.max(np.stack(xs), axis=0))
    np.testing.assert_array_equal(mine["gat"][1][:8 * n], np.concatenate(xs))
    assert (mine["gat"][1][8 * n:] == 7).all()
    for r in range(n):
        np.testing.assert_array_equal(mine["sc"][r], big[1][8 * r:8 * r + 8])
        np.testing.assert_array_equal(mine["bc"][r], xs[1])
    assert not mine["red"][0].any() and not mine["red"][2].any()
    _same(mine, theirs)


BLOCKS = """
kernel @blocks(%x : !pto.memref<16x16xf32>, %y : !pto.memref<16x16xf32>, %s : !pto.memref<1xi32>,
               %z : !pto.memref<16x16xf32>) {
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %one = 1 : i32
  %b = pto.get_block_idx
  %me = pto.get_rank
  %second = arith.cmpi eq, %b, %c1 : index
  scf.if %second {
    tput %y[%c0, %c0], %x[%c0, %c0], %me : (!pto.memref<16x16xf32>, !pto.memref<16x16xf32>, index)
    tnotify %s[%c0], %one, %me {op = #pto.notify_op<Set>} : (!pto.memref<1xi32>, i32, index)
  } else {
    twait %s[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32)
    %t = tload %y[%c0, %c0] : (!pto.memref<16x16xf32>) -> !pto.tile<16x16xf32>
    tstore %z[%c0, %c0], %t : (!pto.memref<16x16xf32>, !pto.tile<16x16xf32>)
  }
}
"""


def test_blocks_of_a_rank_run_as_threads_and_may_wait_on_each_other(mpiexec: str) -> None:
    """Block 0 waits for block 1 of its own rank: only blocks running at once can finish."""
    n = 2
    xs = [rng.standard_normal((16, 16)).astype(np.float32) for _ in range(n)]
    args = {"x": xs, "y": _zeros((16, 16), n), "s": _zeros((1,), n, np.int32), "z": _zeros((16, 16), n)}
    mine, theirs = _both(BLOCKS, args, n, block_num=2)
    for r in range(n):
        np.testing.assert_array_equal(mine["z"][r], xs[r])
    _same(mine, theirs)


def test_repeat_reruns_the_kernel_on_the_original_inputs(mpiexec: str) -> None:
    n = 2
    args = {"x": [np.full((16, 64), r + 1, np.float32) for r in range(n)], "buf": _zeros((16 * n, 64), n),
            "cnt": _zeros((1,), n, np.int32), "y": _zeros((16, 64), n)}
    res = launch(COMM / "allreduce.pto", None, args, ranks=n, wait_timeout=WAIT_S, timeout=LIMIT_S, repeat=3)
    assert [len(t) for t in res.times] == [3, 3]
    assert [int(c[0]) for c in args["cnt"]] == [n, n]       # restored before each run, not 3n
    assert all((y == 3).all() for y in args["y"])


# ----------------------------------------------------------------------------- faults

def _fault(text: str, n: int, **kw) -> tuple[pto.PTOError, float]:  # noqa: ANN003
    start = time.perf_counter()
    with pytest.raises(pto.PTOError) as e:
        launch(text, None, _ring_args(n), ranks=n, **{"wait_timeout": WAIT_S, "timeout": LIMIT_S, **kw})
    return e.value, time.perf_counter() - start


def _embedded_code(text: str, n: int) -> str:
    m = pto.parse(text)
    with pytest.raises(pto.PTOError) as e:
        pto.compile(m, "reference", "cpu").run(m.kernels[0].name, ranks=n, **_ring_args(n))
    return e.value.code


def test_a_put_past_the_end_of_the_remote_tensor(mpiexec: str) -> None:
    text = _ring_text(**{"tput %y[%c0, %c0]": "tput %y[%after, %c0]"})     # row rank + 1: run-time only
    e, took = _fault(text, 2)
    # both ranks fail (rank r puts at row r + 1); whichever fails first is reported, with its own window
    (r,) = [r for r in range(2) if f"on rank {r} of 2 MPI processes" in e.notes]
    assert e.code == "RUNTIME_OOB" == _embedded_code(text, 2) and f"[{r + 1}, {r + 33})" in str(e.actual)
    assert e.location.line == 22 and "tput %y[%after" in (e.location.source_line or "")
    assert took < LIMIT_S / 2


def test_a_rank_id_outside_the_launch_stops_every_rank(mpiexec: str) -> None:
    """Only rank 3 names rank 4; rank 0 waits for a flag rank 3 never sets: the failure ends its
    wait at once (RUNTIME_COMM_ABORTED there), long before the wait timeout."""
    text = _ring_text(**{"%next = arith.remsi %after, %n : index": "%next = arith.addi %after, %c0 : index"})
    e, took = _fault(text, 4, wait_timeout=30.0)
    assert e.code == "RUNTIME_COMM_RANK" == _embedded_code(text, 4)
    assert e.actual == 4 and "[0, 4)" in e.expected and "on rank 3 of 4 MPI processes" in e.notes
    assert took < 20


def test_a_wait_nothing_satisfies_is_a_deadlock_by_timeout(mpiexec: str) -> None:
    text = _ring_text(**{"%one {cmp = #pto.cmp<EQ>}": "%one {cmp = #pto.cmp<GT>}"})
    e, took = _fault(text, 2)
    assert e.code == "RUNTIME_COMM_DEADLOCK" == _embedded_code(text, 2)
    assert "waits on TWAIT signal %flag[0] until GT 1 (now [1])" in e.message
    assert f"rank {e.notes[-1].split()[2]} waits" in e.message          # the waiting rank is the reporting one
    assert e.location.line == 24
    assert WAIT_S <= took < WAIT_S + 30


def test_a_crashed_process_ends_the_launch(mpiexec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    e, took = _fault(_ring_text(), 2, backend="mpi_faults:CrashBackend", wait_timeout=30.0)
    assert e.code == "PTO_MPI" and "rank 1 ended without a result" in e.message and "exit code 9" in e.actual
    assert took < 20


def test_a_stuck_launch_is_killed_at_its_timeout(mpiexec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    e, took = _fault(_ring_text(), 2, backend="mpi_faults:StallBackend", wait_timeout=30.0, timeout=3.0)
    assert e.code == "PTO_MPI" and "timeout" in e.message and e.expected == "done within timeout=3 s"
    assert 3.0 <= took < 15


WORLD_CHECKS = """
import sys
import numpy as np
from mpi4py import MPI
from openpto.isa.attrs import CmpMode
from openpto.isa.diagnostics import PTOError
from openpto.runtime.mpi_world import MPIWorld

comm = MPI.COMM_WORLD
a = np.zeros((4, 8), np.float32)
s = np.array([1, 1, 0, 1], np.int32)
w = MPIWorld(comm, {"a": a, "s": s}, wait_timeout=0.5)
peer = 1 - comm.Get_rank()
got = []
def probe(f):
    try:
        got.append(repr(f()))
    except PTOError as e:
        got.append(e.code + ": " + e.message)
probe(lambda: w.put(np.zeros(3, np.float32), peer, np.ones(3, np.float32), "a put"))
probe(lambda: w.put(np.lib.stride_tricks.as_strided(a[3], (2, 8), a.strides), peer, np.ones((2, 8), np.float32), "a put"))
probe(lambda: w.get(a[1:2], 2, "a get"))
probe(lambda: w.test(s, CmpMode.GE, 0, "a test"))
probe(lambda: w.test(s, CmpMode.GE, 1, "a test"))
probe(lambda: w.wait(s, CmpMode.GE, 1, "TWAIT signal"))
probe(lambda: w.get(a[:, 2:4], peer, "a get").shape)
comm.Barrier()
got.append("untouched" if not a.any() else "written")
w.close()
open(sys.argv[1] + f"/rank{comm.Get_rank()}.txt", "w").write("|".join(got))
"""


def test_the_world_checks_before_anything_moves(mpiexec: str, tmp_path: pathlib.Path) -> None:
    """MPIWorld on its own: a remote access outside every symmetric tensor, a view running past its
    window, a peer outside the launch; TTEST; a wait's timeout naming the unsatisfied signal."""
    script = tmp_path / "world_checks.py"
    script.write_text(WORLD_CHECKS)
    done = subprocess.run([mpiexec, "-n", "2", sys.executable, str(script), str(tmp_path)], capture_output=True,
                          text=True, timeout=LIMIT_S)
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in (0, 1):
        got = (tmp_path / f"rank{rank}.txt").read_text().split("|")
        assert got[0].startswith("RUNTIME_COMM_SYMMETRIC: a put is not in a symmetric tensor")
        assert got[1].startswith("RUNTIME_OOB: a put reaches past the end of %a")
        assert got[2].startswith("RUNTIME_COMM_RANK: a get names rank 2")
        assert got[3:5] == ["True", "False"]
        assert got[5].startswith(f"RUNTIME_COMM_DEADLOCK: rank {rank} waits on TWAIT signal %s[2] until GE 1")
        assert got[6] == "(4, 2)" and got[7] == "untouched"


def test_arguments_are_checked_as_the_embedded_execution_checks_them() -> None:
    args = _ring_args(2)
    args["y"][1] = np.zeros((32, 16), np.float32)
    with pytest.raises(pto.PTOError) as e:               # before any process starts: no mpiexec needed
        launch(COMM / "ring_exchange.pto", None, args, ranks=2)
    assert e.value.code in ("RUNTIME_ARG_SHAPE", "RUNTIME_ARG_TYPE")
    with pytest.raises(pto.PTOError) as e:
        launch(COMM / "ring_exchange.pto", None, _ring_args(2), ranks=0)
    assert e.value.code == "PTO_RANKS"
    with pytest.raises(pto.PTOError) as e:
        launch(_ring_text(**{"tput %y[%c0, %c0]": "tput %y[%c1, %c0]"}), None, _ring_args(2), ranks=2)
    assert e.value.code == "STRUCT_OOB"


def test_no_mpiexec_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pto.PTOError) as e:
        mpi.find_mpiexec()
    assert e.value.code == "PTO_MPI" and "mpiexec" in e.value.message and "openpto[mpi]" in e.value.expected


# ----------------------------------------------------------------------------- blocks with a world, in process

class _Fake(World):
    def __init__(self, concurrent: bool) -> None:
        self.concurrent_blocks = concurrent
        self.aborted = threading.Event()

    def abort(self) -> None:
        self.aborted.set()


def test_world_blocks_run_at_once_or_in_order_and_a_failure_aborts() -> None:
    seen: list[int] = []
    both = threading.Barrier(2, timeout=10)

    def meet(b: int) -> int:            # finishes only when both blocks run at once
        both.wait()
        return b
    assert run_world_blocks(meet, 2, _Fake(True)) == [0, 1]
    assert run_world_blocks(lambda b: seen.append(b) or b, 3, _Fake(False)) == [0, 1, 2] and seen == [0, 1, 2]

    w = _Fake(True)

    def fail(b: int) -> int:
        if b == 1:
            raise pto.PTOError("PTO_MPI", "the cause")
        assert w.aborted.wait(10)       # block 0 waits until block 1's failure aborts the world
        raise RuntimeFault("RUNTIME_COMM_ABORTED", "a consequence")
    with pytest.raises(pto.PTOError) as e:
        run_world_blocks(fail, 2, w)
    assert e.value.message == "the cause"
    w = _Fake(False)
    with pytest.raises(ZeroDivisionError):
        run_world_blocks(lambda b: 1 // 0, 2, w)
    assert w.aborted.is_set()


# ----------------------------------------------------------------------------- pto run --ranks

def test_pto_run_ranks_mpi_and_embedded_agree(mpiexec: str, tmp_path: pathlib.Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    for r in range(2):
        np.save(tmp_path / f"x{r}.npy", np.full((32, 32), r + 1, np.float32))
    common = [str(COMM / "ring_exchange.pto"), "--ranks", "2", "--zeros", "--arg", f"x={tmp_path}/x{{rank}}.npy"]
    assert cli_main(["run", *common, "--mpi", "--wait-timeout", "5", "--out", f"z={tmp_path}/m{{rank}}.npy"]) == 0
    assert cli_main(["run", *common, "--out", f"z={tmp_path}/e{{rank}}.npy"]) == 0
    out = capsys.readouterr().out
    assert "2 MPI processes" in out and "kernel time per rank" in out and "2 ranks embedded" in out
    for r in range(2):
        np.testing.assert_array_equal(np.load(tmp_path / f"m{r}.npy"), np.full((32, 32), (1 - r) + 1 + r + 1, np.float32))
        np.testing.assert_array_equal(np.load(tmp_path / f"m{r}.npy"), np.load(tmp_path / f"e{r}.npy"))


def test_pto_run_ranks_refusals(capsys: pytest.CaptureFixture[str]) -> None:
    ring = str(COMM / "ring_exchange.pto")
    assert cli_main(["run", ring, "--mpi", "--zeros"]) == 2
    assert "--mpi runs a multi-rank launch" in capsys.readouterr().err
    assert cli_main(["run", ring, "--ranks", "2", "--zeros", "--out", "z=z.npy"]) == 2
    assert "{rank}" in capsys.readouterr().err
    assert cli_main(["run", ring, "--ranks", "2", "--zeros", "--compare-with", "llvm"]) == 2
    assert "PTO_OPTION" in capsys.readouterr().err


def test_the_docs_sample_runs(mpiexec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (block,) = re.findall(r"```py\n(.*?)```", (ROOT / "docs" / "comm.md").read_text(), re.S)
    monkeypatch.chdir(ROOT)
    exec(compile(block, "docs/comm.md", "exec"), {})         # noqa: S102 - our own documentation


def test_launch_refuses_bad_timeouts_missing_files_and_one_rank_backends() -> None:
    """Each before any process starts: a NaN timeout would never expire."""
    args = _ring_args(2)
    for kw in ({"wait_timeout": float("nan")}, {"timeout": float("inf")}, {"timeout": -5}, {"wait_timeout": "x"},
               {"timeout": None}):
        with pytest.raises(pto.PTOError) as e:
            launch(COMM / "ring_exchange.pto", "ring_exchange", args, ranks=2, **kw)
        assert e.value.code == "PTO_OPTION", kw
    with pytest.raises(pto.PTOError) as e:
        launch("/nonexistent/ring.pto", "ring_exchange", args, ranks=2)
    assert e.value.code == "PTO_FILE"
    with pytest.raises(pto.PTOError) as e:
        launch(COMM / "ring_exchange.pto", "ring_exchange", [1, 2], ranks=2)      # type: ignore[arg-type]
    assert e.value.code == "PTO_API_TYPE"
    with pytest.raises(pto.PTOError) as e:
        launch(COMM / "ring_exchange.pto", "ring_exchange", args, ranks=2, backend="ascend_sim", profile="a3")
    assert e.value.code == "PTO_RANKS" and "one rank only" in e.value.message
