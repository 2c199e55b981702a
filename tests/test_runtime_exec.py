"""runtime executors: a diamond and a wide fan-out give numpy's results under every executor
and policy; two halves of one tensor run at the same time; a failing task is reported once,
after the running tasks finish, with nothing later started; the verifier catches a missing edge."""
from __future__ import annotations

import pathlib
import threading
import time

import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError
from openpto.runtime import POLICIES, TaskGraph, problems, run, verify

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXECUTORS = [("embedded", {"workers": 1}), ("embedded", {"workers": 3}),
             ("embedded", {"cores": {"vector": 2, "host": 1}}), ("simulated", {"profile": "a3"}),
             ("simulated", {"profile": "a5", "vector_cores": 2})]


@pytest.fixture(scope="module")
def add() -> pto.backends.Executable:
    return pto.compile(pto.load(str(ROOT / "examples" / "vector_add.pto")), backend="llvm", profile="a3")


@pytest.fixture(scope="module")
def softmax() -> pto.backends.Executable:
    return pto.compile(pto.load(str(ROOT / "examples" / "softmax.pto")), backend="llvm", profile="a3")


def diamond(add: pto.backends.Executable, rng: np.random.Generator) -> tuple[TaskGraph, dict, dict]:
    a, b = (rng.standard_normal((64, 1024)).astype(np.float32) for _ in range(2))
    c1, c2, c3, c4 = (np.zeros((64, 1024), np.float32) for _ in range(4))
    g = TaskGraph()
    g.task(add, args=dict(a=a, b=b, c=c1, rows=64), label="top")
    g.task(add, args=dict(a=c1, b=a, c=c2, rows=64), label="left")
    g.task(add, args=dict(a=c1, b=b, c=c3, rows=64), label="right")
    g.task(add, args=dict(a=c2, b=c3, c=c4, rows=64), label="bottom")
    want = {"c1": a + b}
    want["c2"] = want["c1"] + a
    want["c3"] = want["c1"] + b
    want["c4"] = want["c2"] + want["c3"]
    return g, dict(c1=c1, c2=c2, c3=c3, c4=c4), want


def fan_out(add: pto.backends.Executable, rng: np.random.Generator) -> tuple[TaskGraph, dict, dict]:
    """A host task fills x; 16 tasks each add a row block of x to itself into y; a join; a
    host task sums y's blocks into one row; the last task doubles x in place (after the reads)."""
    x, y = np.zeros((256, 1024), np.float32), np.zeros((256, 1024), np.float32)
    total = np.zeros(1024, np.float32)
    src = rng.standard_normal((256, 1024)).astype(np.float32)

    def fill(x: np.ndarray) -> None:
        x[...] = src

    def reduce(y: np.ndarray, total: np.ndarray) -> None:
        total[...] = y.sum(axis=0)

    g = TaskGraph()
    g.host(fill, dict(x=x), label="fill", writes=["x"], reads=[])
    blocks = [g.task(add, args=dict(a=x[i:i + 16], b=x[i:i + 16], c=y[i:i + 16], rows=16), label=f"add{i // 16}")
              for i in range(0, 256, 16)]
    done = g.join(after=blocks, label="all blocks")
    g.host(reduce, dict(y=y, total=total), label="reduce", reads=["y"], writes=["total"], after=[done])
    g.task(add, args=dict(a=x, b=x, c=x, rows=256), label="double x")
    return g, dict(x=x, y=y, total=total), dict(x=2 * src, y=2 * src, total=(2 * src).sum(axis=0))


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("executor,options", EXECUTORS, ids=lambda v: str(v))
@pytest.mark.parametrize("build", [diamond, fan_out])
def test_same_results_as_numpy_under_every_executor_and_policy(add, build, executor, options, policy) -> None:
    g, got, want = build(add, np.random.default_rng(7))
    rec = run(g, executor, policy, **options)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-4, err_msg=name)
    assert problems(rec) == []
    assert rec.policy == policy and len(rec.runs) == len(g.tasks)
    for t, preds in enumerate(g.preds):                   # every task after its predecessors
        assert all(rec.runs[p].end <= rec.runs[t].start for p in preds)


def test_two_halves_of_one_tensor_run_at_the_same_time(softmax) -> None:
    x = np.random.default_rng(1).random((4096, 1024), np.float32)
    y = np.zeros_like(x)
    g = TaskGraph()
    top = g.task(softmax, args=dict(x=x[:2048], y=y[:2048], rows=2048), label="top")
    bottom = g.task(softmax, args=dict(x=x[2048:], y=y[2048:], rows=2048), label="bottom")
    assert g.preds[bottom.id] == {}
    e = np.exp(x - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    for executor, options in (("embedded", {"workers": 2}), ("simulated", {})):
        y[...] = 0
        rec = run(g, executor, **options)
        a, b = rec.runs[top.id], rec.runs[bottom.id]
        assert a.lane != b.lane
        assert a.start < b.end and b.start < a.end, (executor, a, b)     # observed overlap
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-7)


def test_a_failing_task_is_one_error_after_running_tasks_finish(add) -> None:
    a, b, c = (np.ones((32, 1024), np.float32) for _ in range(3))
    started, later_ran = threading.Event(), []
    out = np.zeros((1, 1), np.float32)

    def slow(out: np.ndarray) -> None:
        started.set()
        time.sleep(0.3)          # still running when the kernel task fails; must be allowed to finish
        out[0, 0] = 42.0

    g = TaskGraph()
    g.host(slow, dict(out=out), label="slow")
    gate = g.host(lambda: started.wait(5), label="gate")
    bad = g.task(add, args=dict(a=a, b=b, c=c, rows=64), label="too many rows", after=[gate])   # reads past 32 rows
    g.host(lambda: later_ran.append(1), label="later", after=[bad])
    g.host(lambda: later_ran.append(2), label="independent but later", after=[gate])
    with pytest.raises(PTOError) as e:
        run(g, "embedded", workers=2)
    err = e.value
    assert err.code == "RUNTIME_TASK_FAILED"
    assert "'too many rows'" in err.message and "@vector_add" in err.message
    assert any("RUNTIME_OOB" in n for n in err.notes) and err.actual == "RUNTIME_OOB"
    assert out[0, 0] == 42.0                 # the running task finished before the error was raised
    assert later_ran == []                   # nothing ready after the failure was started


def test_a_failing_host_task_under_every_executor() -> None:
    def boom() -> None:
        raise ValueError("no")

    for executor in ("embedded", "simulated"):
        g = TaskGraph()
        g.host(boom, label="boom")
        with pytest.raises(PTOError) as e:
            run(g, executor)
        assert e.value.code == "RUNTIME_TASK_FAILED" and "'boom'" in e.value.message
        assert "ValueError: no" in e.value.notes


def test_the_verifier_catches_a_missing_edge(add) -> None:
    a, b = np.ones((32, 1024), np.float32), np.ones((32, 1024), np.float32)
    c, d = np.zeros_like(a), np.zeros_like(a)
    g = TaskGraph(derive=False)
    first = g.task(add, args=dict(a=a, b=b, c=c, rows=32), label="writes c")
    g.task(add, args=dict(a=c, b=b, c=d, rows=32), label="reads c")     # the RAW edge is left out
    rec = run(g, "embedded", workers=1)
    found = problems(rec)
    assert [p.code for p in found] == ["ORDER_TASK_RACE"]
    assert "'writes c'" in found[0].message and "'reads c'" in found[0].message
    with pytest.raises(PTOError):
        verify(rec)
    g.edge(first, g.tasks[1])                                            # with the edge: sound
    verify(run(g, "embedded", workers=2))


def test_the_verifier_catches_an_override_that_hides_a_write(add) -> None:
    a = np.ones((32, 1024), np.float32)
    c, d = np.zeros_like(a), np.zeros_like(a)
    g = TaskGraph()
    g.task(add, args=dict(a=a, b=a, c=c, rows=32), writes=[], label="hidden write")
    g.task(add, args=dict(a=a, b=a, c=c, rows=32), label="second writer")
    g.task(add, args=dict(a=c, b=a, c=d, rows=32), label="reader")
    found = problems(run(g, "simulated"))
    assert {p.code for p in found} == {"ORDER_TASK_RACE"} and len(found) == 2   # writer vs writer, vs reader
    assert all("'hidden write'" in p.message for p in found)


def test_typed_workers_take_only_their_core_type(add) -> None:
    g, got, want = fan_out(add, np.random.default_rng(3))
    rec = run(g, "embedded", cores={"vector": 2, "host": 1})
    np.testing.assert_allclose(got["total"], want["total"], rtol=1e-5, atol=1e-3)
    for t, r in zip(g.tasks, rec.runs):
        assert r.lane is None if t.core == "join" else r.lane.startswith(t.core + "_"), (t, r)
    with pytest.raises(PTOError) as e:
        run(g, "embedded", cores={"host": 1})
    assert e.value.code == "PTO_EXECUTOR" and "vector" in e.value.message  # nothing would take them: refused
    for bad in ({"workers": 0}, {"cores": {"tpu": 1}}, {"cores": {"vector": 1}, "workers": 2}, {"cores": {"cube": 0}}):
        with pytest.raises(PTOError) as e:
            run(g, "embedded", **bad)
        assert e.value.code == "PTO_EXECUTOR"
    for name, bad in (("nope", {}), ("embedded", {"threads": 2}), ("simulated", {"profile": "cpu"})):
        with pytest.raises(PTOError) as e:
            run(g, name, **bad)
        assert e.value.code == "PTO_EXECUTOR"
    with pytest.raises(PTOError) as e:
        run(g, "embedded", "random")
    assert e.value.code == "PTO_EXECUTOR"


def test_the_verifier_audits_declared_regions(add) -> None:
    """A region narrower than what the kernel touches is found (a write or a read outside it),
    the task is then checked on its whole bindings, and the caller's buffers are left alone."""
    a, b = np.ones((64, 1024), np.float32), np.ones((64, 1024), np.float32)
    two = np.full_like(a, 2)
    c = np.zeros_like(a)
    g = TaskGraph()                     # both write all 64 rows of c, each claiming half of it
    g.task(add, args=dict(a=a, b=b, c=c, rows=64), regions={"c": np.s_[:32]}, label="w_top")
    g.task(add, args=dict(a=two, b=two, c=c, rows=64), regions={"c": np.s_[32:]}, label="w_bottom")
    assert g.preds[1] == {}
    rec = run(g, "embedded", "lifo", workers=1)
    after = c.copy()
    found = problems(rec)
    assert sorted(p.code for p in found) == ["ORDER_TASK_RACE", "ORDER_TASK_REGION", "ORDER_TASK_REGION"]
    assert any("'w_top'" in p.message and "'w_bottom'" in p.message for p in found if p.code == "ORDER_TASK_RACE")
    np.testing.assert_array_equal(c, after)                          # the audit ran on copies
    d = np.zeros_like(a)                # reads all 64 rows of a, claiming the top half only
    g = TaskGraph()
    g.task(add, args=dict(a=a, b=b, c=d, rows=64), regions={"a": np.s_[:32]}, label="reads past")
    found = problems(run(g, "embedded", workers=1))
    assert [p.code for p in found] == ["ORDER_TASK_REGION"] and "from bytes outside" in found[0].message
    g = TaskGraph()                     # a region that holds: 32 rows of all of c, beside the other 32
    g.task(add, args=dict(a=a, b=b, c=c, rows=32), regions={"c": np.s_[:32], "a": np.s_[:32]}, label="top")
    g.task(add, args=dict(a=two[32:], b=two[32:], c=c[32:], rows=32), label="bottom")
    assert g.preds[1] == {}
    verify(run(g, "embedded", workers=2))
    np.testing.assert_array_equal(c, np.concatenate([np.full((32, 1024), 2, np.float32),
                                                     np.full((32, 1024), 4, np.float32)]))
    with pytest.raises(PTOError) as e:  # an empty region would make the task invisible: refused
        TaskGraph().task(add, args=dict(a=a, b=b, c=c, rows=64), regions={"c": np.s_[:0]})
    assert e.value.code == "PTO_TASK" and "no element" in e.value.message


def test_the_region_audit_packs_unrelated_bindings_and_keeps_aliases_together(add) -> None:
    """The audit's private memory holds each group of overlapping bindings once, packed: not the
    span of their real addresses (arrays far apart in memory asked for terabytes before)."""
    from openpto.runtime.graph import TaskGraph as _G
    from openpto.runtime.regions import _layout, audit_task

    a, b = np.ones((64, 1024), np.float32), np.ones((64, 1024), np.float32)
    c = np.zeros((64, 1024), np.float32)
    g = _G()
    t = g.task(add, args=dict(a=a, b=c[32:], c=c, rows=32), regions={"c": np.s_[:32]}, label="alias")
    size, arrays, place = _layout(t)
    assert size == a.nbytes + c.nbytes                     # a alone, c with its alias c[32:] inside
    assert place["b"] - place["c"] == c[32:].__array_interface__["data"][0] - c.__array_interface__["data"][0]
    assert audit_task(t) is None     # reads c[32:], writes c[:32]
    g = _G()
    t = g.task(add, args=dict(a=a, b=b, c=c, rows=64), regions={"c": np.s_[:32]}, label="past")
    found = audit_task(t)
    assert found is not None and "outside the regions" in found
