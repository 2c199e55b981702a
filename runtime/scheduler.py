"""Dependency-driven scheduling shared by every executor: a predecessor counter per task, one
ready queue per core type, and a policy that orders each queue.

A task becomes ready when its counter reaches zero; a join task (no work) completes at that
moment, inline, releasing its own successors. Executors ask ``pop`` for the next task a free
core may take and report ``complete``; the scheduler itself knows nothing of time except the
``now`` the executor passes, which it records (ready times, queue lengths) for the traces.
"""
from __future__ import annotations

import abc
import heapq
from typing import Any, Sequence

from ..isa.diagnostics import PTOError
from .graph import TaskGraph

QUEUE_TYPES: tuple[str, ...] = ("cube", "vector", "host")


class Policy(abc.ABC):
    """Orders a ready queue: the task with the smallest ``key`` runs first. ``seq`` counts the
    tasks in the order they became ready."""

    name: str = ""

    def prepare(self, graph: TaskGraph, costs: Sequence[float]) -> None:
        """Called once before a run with each task's estimated duration."""

    @abc.abstractmethod
    def key(self, task: int, seq: int) -> Any:
        """The sort key of a task that became ready as the ``seq``-th."""


class FIFO(Policy):
    """The task ready longest runs first."""

    name = "fifo"

    def key(self, task: int, seq: int) -> Any:
        return seq


class LIFO(Policy):
    """The task ready last runs first (its inputs are the most recently written: warm caches)."""

    name = "lifo"

    def key(self, task: int, seq: int) -> Any:
        return -seq


class CriticalPath(Policy):
    """The task with the longest chain of work after it (itself included) runs first."""

    name = "critical"

    def __init__(self) -> None:
        self.level: list[float] = []

    def prepare(self, graph: TaskGraph, costs: Sequence[float]) -> None:
        succ = graph.successors()
        level = [0.0] * len(graph.tasks)
        for t in reversed(graph.order()):
            level[t] = costs[t] + max((level[s] for s in succ[t]), default=0.0)
        self.level = level

    def key(self, task: int, seq: int) -> Any:
        return (-self.level[task], seq)


POLICIES: dict[str, type[Policy]] = {"fifo": FIFO, "lifo": LIFO, "critical": CriticalPath}


def get_policy(policy: "str | Policy") -> Policy:
    """A policy by name (``fifo``, ``lifo``, ``critical``) or a ``Policy`` instance as given."""
    if isinstance(policy, Policy):
        return policy
    cls = POLICIES.get(policy) if isinstance(policy, str) else None
    if cls is None:
        raise PTOError("PTO_EXECUTOR", f"unknown scheduling policy {policy!r}", expected=" | ".join(POLICIES),
                       actual=repr(policy))
    return cls()


class Scheduler:
    """One run's scheduling state over a graph (checked acyclic here, before anything runs)."""

    def __init__(self, graph: TaskGraph, policy: "str | Policy" = "fifo", costs: Sequence[float] | None = None) -> None:
        graph.order()                                        # PTO_GRAPH_CYCLE before any task runs
        self.graph = graph
        self.tasks = graph.tasks
        self.succ = graph.successors()
        self.count = [len(p) for p in graph.preds]
        self.policy = get_policy(policy)
        self.policy.prepare(graph, costs if costs is not None else [t.cost for t in graph.tasks])
        self.queues: dict[str, list[tuple[Any, int]]] = {c: [] for c in QUEUE_TYPES}
        self.ready_at: list[float | None] = [None] * len(graph.tasks)
        self.inline: dict[int, float] = {}                   # join task -> when it completed
        self.samples: list[tuple[float, str, int]] = []      # (time, queue, length) after each change
        self.done = 0
        self._closed = bytearray(len(graph.tasks))           # 1: the task has completed (counted in done)
        self._seq = 0

    @property
    def finished(self) -> bool:
        return self.done == len(self.tasks)

    def start(self, now: float) -> None:
        """Queue the tasks with no predecessors. They are taken before any is released: a join
        among them completes inline and zeroes its successors' counters, and those successors
        are released by that join, not a second time by this loop."""
        for t in [t for t, c in enumerate(self.count) if c == 0]:
            self._release(t, now)

    def pop(self, cores: Sequence[str], now: float) -> int | None:
        """The next task for a free core of one of these types (None: none is ready)."""
        best: list[tuple[Any, int]] | None = None
        for c in cores:
            q = self.queues[c]
            if q and (best is None or q[0][0] < best[0][0]):
                best = q
        if best is None:
            return None
        _, t = heapq.heappop(best)
        self.samples.append((now, self.tasks[t].core, len(best)))
        return t

    def complete(self, task: int, now: float) -> None:
        """``task`` finished at ``now``: count down its successors, queue those now ready."""
        self._close(task)
        for s in self.succ[task]:
            self.count[s] -= 1
            if self.count[s] == 0:
                self._release(s, now)

    def ready(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def _close(self, task: int) -> None:
        """Count a task as done, once: an executor reporting a task twice is its own bug, named
        here rather than left to finish a run early or never."""
        if self._closed[task]:
            raise PTOError("PTO_EXECUTOR", f"task {task} {self.tasks[task].label!r} reported complete twice",
                           expected="each task completed once", actual="a second completion")
        self._closed[task] = 1
        self.done += 1

    def _release(self, task: int, now: float) -> None:
        stack = [task]
        while stack:
            t = stack.pop()
            self.ready_at[t] = now
            core = self.tasks[t].core
            if core == "join":                 # no work: complete it here and now
                self.inline[t] = now
                self._close(t)
                for s in self.succ[t]:
                    self.count[s] -= 1
                    if self.count[s] == 0:
                        stack.append(s)
                continue
            q = self.queues[core]
            heapq.heappush(q, (self.policy.key(t, self._seq), t))
            self._seq += 1
            self.samples.append((now, core, len(q)))
