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


class EmbeddedExecutor(Executor):
    """``workers``: how many tasks may run at once (default: the CPU count)."""

    name = "embedded"

    def __init__(self, workers: int | None = None) -> None:
        if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
            raise PTOError("PTO_EXECUTOR", "workers must be a positive integer", expected=">= 1",
                           actual=repr(workers))
        self.workers = workers or os.cpu_count() or 1

    def run(self, graph: TaskGraph, policy: "str | Policy" = "fifo") -> RunRecord:
        sched = Scheduler(graph, policy)
        tasks = graph.tasks
        n = len(tasks)
        start = [0.0] * n
        end = [0.0] * n
        lane: list[str | None] = [None] * n
        failures: list[tuple[float, int, BaseException]] = []
        cond = threading.Condition()
        lanes = [f"worker_{i}" for i in range(self.workers)]
        t0 = time.perf_counter_ns()
        sched.start(0.0)

        def worker(me: str) -> None:
            clock = time.perf_counter_ns
            cond.acquire()
            try:
                while not failures and not sched.finished:
                    tid = sched.pop(QUEUE_TYPES, clock() - t0)
                    if tid is None:
                        cond.wait()
                        continue
                    cond.release()
                    err: BaseException | None = None
                    s = clock() - t0
                    try:
                        tasks[tid].run()
                    except BaseException as e:           # noqa: BLE001 - reported as RUNTIME_TASK_FAILED
                        err = e
                    e_ns = clock() - t0
                    cond.acquire()
                    start[tid], end[tid], lane[tid] = s, e_ns, me
                    if err is not None:
                        failures.append((e_ns, tid, err))
                        break
                    sched.complete(tid, e_ns)
                    extra = sched.ready() - 1           # this worker takes one itself
                    if extra > 0:
                        cond.notify(extra)
            finally:
                cond.notify_all()                       # a finished or failed run wakes every waiter
                cond.release()

        busy = sum(1 for t in tasks if t.core != "join")
        threads = [threading.Thread(target=worker, args=(lanes[i],), name=f"pto-{lanes[i]}", daemon=True)
                   for i in range(1, min(self.workers, max(busy, 1)))]
        for th in threads:
            th.start()
        worker(lanes[0])
        for th in threads:
            th.join()
        if failures:
            _, tid, err = min(failures, key=lambda f: (f[0], f[1]))
            raise task_failed(tasks[tid], err) from err
        runs = []
        for t in range(n):
            if t in sched.inline:
                at = float(sched.inline[t])
                runs.append(TaskRun(t, None, at, at, at))
            else:
                runs.append(TaskRun(t, lane[t], float(sched.ready_at[t] or 0.0), float(start[t]), float(end[t])))
        return RunRecord(graph, self.name, sched.policy.name, runs, lanes, sched.samples, "wall")
