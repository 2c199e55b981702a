"""The embedded executor (the default): a pool of worker threads in this process, one per core
it is given, all of them taking tasks from the scheduler under one lock.

There is no dispatcher thread: a worker that finishes a task counts down its successors and
takes the next ready task itself, waking other workers only for the extra tasks it made ready,
so a chain of small tasks costs a lock and a heap operation each, not a thread hand-off.
Kernels overlap for real where the backend releases the GIL while a kernel runs (llvm does).
"""
from __future__ import annotations

import os
import threading
import time

from ..isa.diagnostics import PTOError
from .executor import Executor
from .graph import TaskGraph
from .record import RunRecord, TaskRun, task_failed
from .scheduler import QUEUE_TYPES, Policy, Scheduler


def _count(what: str, n: object) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise PTOError("PTO_EXECUTOR", f"{what} must be a positive integer", expected=">= 1", actual=repr(n))
    return n


def _policy_failed(sched: Scheduler, err: BaseException) -> PTOError:
    """The scheduler (a custom policy's ``key`` or ``prepare``) raised: the run stops, named."""
    name = sched.policy.name or type(sched.policy).__name__
    return PTOError("PTO_EXECUTOR", f"the scheduling policy {name!r} failed; the tasks already running finished",
                    expected="a policy whose key() returns comparable keys", actual=f"{type(err).__name__}: {err}")


class EmbeddedExecutor(Executor):
    """``workers``: how many tasks may run at once (default: the CPU count), each worker taking
    any ready task. Or ``cores``: workers per core type (``{"cube": 1, "vector": 1}``), each
    taking only its type's tasks, as an NPU's AIC and AIV cores do; host tasks go to any
    worker unless ``cores`` gives "host" workers of their own."""

    name = "embedded"

    def __init__(self, workers: int | None = None, cores: dict[str, int] | None = None) -> None:
        if cores is not None:
            if workers is not None:
                raise PTOError("PTO_EXECUTOR", "give workers or cores, not both", expected="one of them",
                               actual=f"workers={workers!r}, cores={cores!r}")
            if not isinstance(cores, dict) or not cores or set(cores) - set(QUEUE_TYPES):
                raise PTOError("PTO_EXECUTOR", "cores maps core types to worker counts",
                               expected=f"keys among {', '.join(QUEUE_TYPES)}", actual=repr(cores))
            serves_host = () if "host" in cores else ("host",)
            self.lanes = [(f"{kind}_{i}", (kind, *serves_host) if kind != "host" else ("host",))
                          for kind in QUEUE_TYPES if kind in cores for i in range(_count(f"cores[{kind!r}]", cores[kind]))]
        else:
            n = _count("workers", workers) if workers is not None else (os.cpu_count() or 1)
            self.lanes = [(f"worker_{i}", QUEUE_TYPES) for i in range(n)]
        self.workers = len(self.lanes)

    def run(self, graph: TaskGraph, policy: "str | Policy" = "fifo") -> RunRecord:
        sched = Scheduler(graph, policy)
        served = {k for _, kinds in self.lanes for k in kinds}
        unserved = sorted({t.core for t in graph.tasks} - served - {"join"})
        if unserved:
            raise PTOError("PTO_EXECUTOR", f"no worker takes the graph's {', '.join(unserved)} tasks",
                           expected=f"cores for {', '.join(unserved)}", actual=repr({n: k for n, k in self.lanes}))
        tasks = graph.tasks
        n = len(tasks)
        start = [0.0] * n
        end = [0.0] * n
        lane: list[str | None] = [None] * n
        failures: list[tuple[float, int, BaseException]] = []
        cond = threading.Condition()
        lanes = [name for name, _ in self.lanes]
        t0 = time.perf_counter_ns()
        try:
            sched.start(0.0)
        except Exception as e:                          # noqa: BLE001 - a custom policy's own bug, named
            raise _policy_failed(sched, e) from e

        def worker(me: str, kinds: tuple[str, ...]) -> None:
            clock = time.perf_counter_ns
            cond.acquire()
            try:
                while not failures and not sched.finished:
                    tid = sched.pop(kinds, clock() - t0)
                    if tid is None:
                        cond.wait()
                        continue
                    cond.release()
                    err: BaseException | None = None
                    s = clock() - t0
                    try:
                        tasks[tid].run()
                    except BaseException as e:           # noqa: BLE001 - reported once every worker has stopped
                        err = e
                    e_ns = clock() - t0
                    cond.acquire()
                    start[tid], end[tid], lane[tid] = s, e_ns, me
                    if err is not None:
                        failures.append((e_ns, tid, err))
                        break
                    sched.complete(tid, e_ns)
                    if generic:
                        extra = sched.ready() - 1       # this worker takes one itself
                        if extra > 0:
                            cond.notify(extra)
                    elif sched.ready():                 # typed workers: wake them all, the right ones take it
                        cond.notify_all()
            except BaseException as e:                  # noqa: BLE001 - the scheduler or policy failed: stop all
                failures.append((clock() - t0, -1, e))
            finally:
                cond.notify_all()                       # a finished or failed run wakes every waiter
                cond.release()

        generic = all(kinds == QUEUE_TYPES for _, kinds in self.lanes)
        busy = sum(1 for t in tasks if t.core != "join")
        used = self.lanes[:max(1, min(len(self.lanes), busy))] if generic else self.lanes
        threads = [threading.Thread(target=worker, args=ln, name=f"pto-{ln[0]}", daemon=True) for ln in used[1:]]
        for th in threads:
            th.start()
        worker(*used[0])
        for th in threads:
            th.join()
        if failures:
            for _, _, err in failures:                  # an interrupt or exit inside a task stays what it is
                if isinstance(err, (KeyboardInterrupt, SystemExit)):
                    raise err
            _, tid, err = min(failures, key=lambda f: (f[0], f[1]))
            if tid < 0:
                raise _policy_failed(sched, err) from err
            raise task_failed(tasks[tid], err) from err
        runs = []
        for t in range(n):
            if t in sched.inline:
                at = float(sched.inline[t])
                runs.append(TaskRun(t, None, at, at, at))
            else:
                runs.append(TaskRun(t, lane[t], float(sched.ready_at[t] or 0.0), float(start[t]), float(end[t])))
        return RunRecord(graph, self.name, sched.policy.name, runs, lanes, sched.samples, "wall")
