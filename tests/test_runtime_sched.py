"""runtime scheduler and embedded executor edge cases: joins among a graph's entry tasks release
each successor once (no task runs twice, no run hangs), a task is never counted done twice, a
custom policy that raises stops the run with PTO_EXECUTOR (no hang), and an interrupt or exit
inside a task is raised as it is."""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

import numpy as np
import pytest

from openpto.isa.diagnostics import PTOError
from openpto.runtime import POLICIES, Policy, TaskGraph, run, verify
from openpto.runtime.scheduler import Scheduler


def finishes(fn: Callable[[], Any], seconds: float = 20.0) -> Any:
    """``fn()`` on a thread, failing the test (not hanging it) when it has not returned in time."""
    out: dict[str, Any] = {}

    def go() -> None:
        try:
            out["value"] = fn()
        except BaseException as e:                  # noqa: BLE001 - handed to the test below
            out["error"] = e

    th = threading.Thread(target=go, daemon=True)
    th.start()
    th.join(seconds)
    assert not th.is_alive(), "the run hung"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def entry_join_graph(calls: list[str]) -> TaskGraph:
    """A join with no predecessors (an entry point), a task after it, and a task after that one
    and a slow independent one: the last must run once, after the slow one."""
    g = TaskGraph()
    j = g.join(label="start")
    a = g.host(lambda: calls.append("A"), after=[j], label="A")
    slow = g.host(lambda: (time.sleep(0.2), calls.append("slow")), label="slow")
    g.host(lambda: calls.append("B"), after=[a, slow], label="B")
    return g


def test_start_releases_a_successor_of_an_entry_join_once() -> None:
    g = entry_join_graph([])
    sched = Scheduler(g, "fifo")
    sched.start(0.0)
    popped = []
    while (t := sched.pop(("host",), 0.0)) is not None:
        popped.append(t)
    assert sorted(popped) == [1, 2]                  # A and slow, each queued once
    assert sched.done == 1                           # the join
    for t in popped:
        sched.complete(t, 1.0)
    assert sched.pop(("host",), 1.0) == 3 and not sched.finished
    sched.complete(3, 2.0)
    assert sched.finished and sched.done == 4
    with pytest.raises(PTOError) as e:               # a second report of one task: named, not miscounted
        sched.complete(3, 3.0)
    assert e.value.code == "PTO_EXECUTOR" and "'B'" in e.value.message
    assert sched.done == 4


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("executor,options", [("embedded", {"workers": 2}), ("embedded", {"workers": 1}),
                                              ("simulated", {})])
def test_entry_joins_run_every_task_once(executor: str, options: dict, policy: str) -> None:
    calls: list[str] = []
    g = entry_join_graph(calls)
    rec = finishes(lambda: run(g, executor, policy, **options))
    assert sorted(calls) == ["A", "B", "slow"] and calls[-1] == "B"
    verify(rec)
    assert rec.runs[3].start >= rec.runs[2].end
    chain = TaskGraph()                              # joins only: completes at once, never hangs
    chain.join(after=[chain.join()])
    rec = finishes(lambda: run(chain, executor, policy, **options))
    assert [r.lane for r in rec.runs] == [None, None]


class _Broken(Policy):
    """A custom policy with a bug: its key raises for one task."""

    name = "broken"

    def key(self, task: int, seq: int) -> Any:
        if task == 3:
            raise RuntimeError("policy bug")
        return seq


def test_a_failing_policy_on_a_worker_thread_stops_the_run() -> None:
    out = np.zeros(1)
    g = TaskGraph()
    x = np.zeros(4)
    g.host(lambda x: time.sleep(0.1), {"x": x}, label="first")
    g.host(lambda out: (time.sleep(0.3), out.__setitem__(0, 5)), {"out": out}, label="slow")
    for _ in range(3):
        g.host(lambda x: None, {"x": x})                # released by 'first', on a worker: key(3) raises
    with pytest.raises(PTOError) as e:
        finishes(lambda: run(g, "embedded", _Broken(), workers=2))
    assert e.value.code == "PTO_EXECUTOR" and "'broken'" in e.value.message and "policy bug" in e.value.actual
    assert out[0] == 5                                   # the running task finished first
    g = TaskGraph()                                      # a key failing before any task runs
    for _ in range(4):
        g.host(lambda: None)
    with pytest.raises(PTOError) as e:
        finishes(lambda: run(g, "embedded", _Broken(), workers=2))
    assert e.value.code == "PTO_EXECUTOR"


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("executor,options", [("embedded", {"workers": 2}), ("embedded", {"workers": 1}),
                                              ("simulated", {})])
def test_an_interrupt_inside_a_task_is_raised_as_it_is(exc: type, executor: str, options: dict) -> None:
    def stop() -> None:
        raise exc()

    g = TaskGraph()
    g.host(lambda: None)
    g.host(stop)
    with pytest.raises(exc):
        finishes(lambda: run(g, executor, **options))
