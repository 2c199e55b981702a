"""The simulated executor: the graph scheduled onto a profile's cores (a3: 24 cube AIC + 48
vector AIV), each kernel task lasting what the ``ascend_sim`` backend's cycle estimate says,
so a laptop shows the NPU swimlane.

Values are real: every task first runs on its own executable (reference, llvm, ...) in the
graph's topological order, in this process; a task that fails stops the run there. Then the
schedule is simulated event by event with the same scheduler and policy as the other
executors. A kernel task's duration is a timing-only ``ascend_sim`` run of that kernel with the
task's bindings (no values computed, nothing written), cached per kernel, argument shapes,
strides and scalars; a launch of several blocks is drawn on one lane for its whole time. A host
task lasts the wall time it took in the value pass; a join task takes no time.
"""
from __future__ import annotations

import heapq
import time
from typing import Any

import numpy as np

from ..isa.diagnostics import PTOError
from ..isa.machines import MACHINES, Machine
from .executor import Executor
from .graph import Task, TaskGraph
from .record import RunRecord, TaskRun, task_failed
from .scheduler import QUEUE_TYPES, Policy, Scheduler

#: the lane names of each core type: AIC_n (cube), AIV_n (vector), HOST_n (host callables)
LANE_PREFIX: dict[str, str] = {"cube": "AIC", "vector": "AIV", "host": "HOST"}

_TIMING_EXES: dict[tuple[int, str], tuple[Any, Any]] = {}          # (id(module), profile) -> (module, exe)
_CYCLES: dict[tuple[int, str, str, tuple], tuple[Any, float]] = {}  # ... + kernel, args -> (module, cycles)


def _signature(args: dict[str, Any], blocks: int) -> tuple:
    """What a timing-only run's cycles can depend on: shapes, dtypes, strides, scalars, blocks."""
    out: list[Any] = [blocks]
    for name in sorted(args):
        v = args[name]
        out.append((name, (v.shape, v.dtype.str, v.strides) if isinstance(v, np.ndarray) else repr(v)))
    return tuple(out)


def kernel_cycles(task: Task, profile: str) -> float:
    """Simulated cycles of a kernel task on ``profile`` (cached per kernel, shapes and scalars)."""
    from .. import compile as pto_compile
    module = task.exe.module                                   # type: ignore[union-attr]
    key = (id(module), profile, task.kernel or "", _signature(task.args, task.blocks))
    hit = _CYCLES.get(key)
    if hit is not None and hit[0] is module:
        return hit[1]
    ek = (id(module), profile)
    held = _TIMING_EXES.get(ek)
    if held is None or held[0] is not module:
        held = _TIMING_EXES[ek] = (module, pto_compile(module, backend="ascend_sim", profile=profile,
                                                        values=False, hazards="off"))
    res = held[1].run(task.kernel, block_num=task.blocks, **task.args)
    _CYCLES[key] = (module, float(res.cycles))
    return float(res.cycles)


class SimulatedExecutor(Executor):
    """``profile``: the machine (``a3`` by default); ``cube_cores`` / ``vector_cores`` narrow its
    core counts; ``host_cores`` host lanes; ``values=False`` skips the value pass (timing only)."""

    name = "simulated"

    def __init__(self, profile: str = "a3", cube_cores: int | None = None, vector_cores: int | None = None,
                 host_cores: int = 1, values: bool = True) -> None:
        machine = MACHINES.get(profile)
        if machine is None:
            raise PTOError("PTO_EXECUTOR", f"profile {profile!r} has no machine model to simulate",
                           expected=" | ".join(MACHINES), actual=repr(profile))
        self.profile, self.machine, self.values = profile, machine, values
        self.cores = {"cube": machine.cube_cores if cube_cores is None else cube_cores,    # 0 is refused below,
                      "vector": machine.vector_cores if vector_cores is None else vector_cores,  # not the default
                      "host": host_cores}
        for kind, n in self.cores.items():
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise PTOError("PTO_EXECUTOR", f"{kind} cores must be a positive integer", expected=">= 1",
                               actual=repr(n))

    def run(self, graph: TaskGraph, policy: "str | Policy" = "fifo") -> RunRecord:
        order = graph.order()                                  # PTO_GRAPH_CYCLE before anything runs
        host_ns = self._values(graph, order) if self.values else {}
        durations = [self._duration(t, self.machine, host_ns) for t in graph.tasks]
        return self._simulate(graph, policy, durations)

    @staticmethod
    def _values(graph: TaskGraph, order: list[int]) -> dict[int, float]:
        host_ns: dict[int, float] = {}
        for tid in order:
            task = graph.tasks[tid]
            t0 = time.perf_counter_ns()
            try:
                task.run()
            except Exception as e:                      # noqa: BLE001 - reported as RUNTIME_TASK_FAILED
                raise task_failed(task, e) from e       # (an interrupt or exit passes through as it is)
            if task.core == "host":
                host_ns[tid] = float(time.perf_counter_ns() - t0)
        return host_ns

    def _duration(self, task: Task, machine: Machine, host_ns: dict[int, float]) -> float:
        if task.exe is not None:
            try:
                cycles = kernel_cycles(task, self.profile)
            except BaseException as e:                  # noqa: BLE001 - a kernel the simulator refuses, named
                raise task_failed(task, e) from e
            return cycles * 1e3 / machine.clock_mhz
        return host_ns.get(task.id, 0.0)

    def _simulate(self, graph: TaskGraph, policy: "str | Policy", durations: list[float]) -> RunRecord:
        sched = Scheduler(graph, policy, costs=durations)
        lanes = {k: [f"{LANE_PREFIX[k]}_{i}" for i in range(n)] for k, n in self.cores.items()}
        free = {k: list(range(n)) for k, n in self.cores.items()}          # heaps: lowest index first
        n = len(graph.tasks)
        runs: list[TaskRun | None] = [None] * n
        events: list[tuple[float, int, str, int]] = []                        # (end, task, kind, lane)
        now = 0.0
        sched.start(now)
        while True:
            for kind in QUEUE_TYPES:
                while free[kind]:
                    tid = sched.pop((kind,), now)
                    if tid is None:
                        break
                    slot = heapq.heappop(free[kind])
                    end = now + durations[tid]
                    runs[tid] = TaskRun(tid, lanes[kind][slot], float(sched.ready_at[tid] or 0.0), now, end)
                    heapq.heappush(events, (end, tid, kind, slot))
            if not events:
                break
            now = events[0][0]
            while events and events[0][0] <= now:
                _, tid, kind, slot = heapq.heappop(events)
                heapq.heappush(free[kind], slot)
                sched.complete(tid, now)
        for t, at in sched.inline.items():
            runs[t] = TaskRun(t, None, at, at, at)
        all_lanes = [name for k in QUEUE_TYPES for name in lanes[k]]
        return RunRecord(graph, self.name, sched.policy.name, runs, all_lanes,  # type: ignore[arg-type]
                         sched.samples, f"simulated on {self.profile}")
