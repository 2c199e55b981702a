"""runtime's dask executor on a LocalCluster of two worker processes (one module-scoped
cluster): the diamond and the fan-out give numpy's results, a failing task is one error."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError
from openpto.runtime import TaskGraph, problems, run

distributed = pytest.importorskip("distributed", reason="the dask extra (pip install 'openpto[dask]') is not installed")

from test_runtime_exec import diamond, fan_out  # noqa: E402 - the same graphs as the other executors

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def add() -> pto.backends.Executable:
    return pto.compile(pto.load(str(ROOT / "examples" / "vector_add.pto")), backend="llvm", profile="a3")


@pytest.mark.parametrize("build,policy", [(diamond, "fifo"), (fan_out, "critical"), (fan_out, "lifo")])
def test_same_results_as_numpy_on_a_local_cluster(client, add, build, policy) -> None:
    g, got, want = build(add, np.random.default_rng(7))
    rec = run(g, "dask", policy, client=client)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-4, err_msg=name)
    assert problems(rec) == []
    assert {r.lane.split("_")[0] for r in rec.runs if r.lane} == {"dask"}


def test_a_failing_task_on_the_cluster(client, add) -> None:
    a = np.ones((32, 1024), np.float32)
    c, later = np.zeros_like(a), np.zeros_like(a)
    g = TaskGraph()
    bad = g.task(add, args=dict(a=a, b=a, c=c, rows=64), label="too many rows")
    g.task(add, args=dict(a=c, b=a, c=later, rows=32), label="after it")
    with pytest.raises(PTOError) as e:
        run(g, "dask", client=client)
    assert e.value.code == "RUNTIME_TASK_FAILED" and "'too many rows'" in e.value.message
    assert e.value.actual == "RUNTIME_OOB" and bad.id == 0
    assert not later.any()                    # the successor never ran


def test_dask_needs_a_client_or_address() -> None:
    with pytest.raises(PTOError) as e:
        run(TaskGraph(), "dask")
    assert e.value.code == "PTO_EXECUTOR"


def test_pto_graph_on_the_cluster(client, tmp_path: pathlib.Path, capsys) -> None:
    from openpto.cli import main
    outs = {n: tmp_path / f"{n}.npy" for n in ("a", "b", "c4")}
    rc = main(["graph", str(ROOT / "examples" / "graph_diamond.json"), "--executor", "dask",
               "--scheduler", client.scheduler.address, *[f"--out={n}={p}" for n, p in outs.items()]])
    assert rc == 0 and "on dask" in capsys.readouterr().out
    a, b, c4 = (np.load(outs[n]) for n in ("a", "b", "c4"))
    np.testing.assert_allclose(c4, (a + b + a) + (a + b + b), rtol=1e-6)


def _slow_write(y: np.ndarray) -> None:
    import time
    time.sleep(1.0)
    y[0] = 7


def _fill(x: np.ndarray, y: np.ndarray) -> None:
    y[...] = x.sum()


def test_a_task_that_cannot_be_submitted_lets_running_tasks_write_back(client) -> None:
    import threading
    a, b = np.zeros(2), np.zeros(2)
    lock = threading.Lock()
    g = TaskGraph()
    g.host(_slow_write, {"y": a})
    g.host(lambda y: lock, {"y": b}, label="unpicklable")       # a lambda holding a lock: not sent
    with pytest.raises(PTOError) as e:
        run(g, "dask", client=client)
    assert e.value.code == "RUNTIME_TASK_FAILED" and "'unpicklable'" in e.value.message
    assert a[0] == 7                                            # the running task finished and came back


def test_a_read_only_input_is_not_copied_back(client) -> None:
    src = np.broadcast_to(np.ones(4, np.float32), (3, 4))
    out = np.zeros((3, 4), np.float32)
    g = TaskGraph()
    g.host(_fill, {"x": src, "y": out})                         # default writes: only the writeable y
    run(g, "dask", client=client)
    np.testing.assert_array_equal(out, np.full((3, 4), 12, np.float32))
