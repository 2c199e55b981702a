"""What a run leaves behind: when each task became ready, started and ended, on which lane
(core or worker), and how long the ready queues were. The verifier, the traces and the
summary all read this, whichever executor produced it."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..isa.diagnostics import Location, RuntimeFault
from .graph import Task, TaskGraph


@dataclass(frozen=True)
class TaskRun:
    """One task's times in ns from the start of the run; ``lane`` is None for a join task
    (completed inline, ``start == end``)."""

    task: int
    lane: str | None
    ready: float
    start: float
    end: float


@dataclass
class RunRecord:
    """A complete run: every task's ``TaskRun`` (indexed by task id), every lane the executor
    had (used or not), the ready-queue samples ``(time ns, queue, length)``, and how the times
    were taken (``clock``: "wall" or "simulated on <profile>")."""

    graph: TaskGraph
    executor: str
    policy: str
    runs: list[TaskRun]
    lanes: list[str]
    samples: list[tuple[float, str, int]] = field(default_factory=list)
    clock: str = "wall"

    @property
    def makespan(self) -> float:
        return max((r.end for r in self.runs), default=0.0)

    def lane_of(self, task: Task) -> str | None:
        return self.runs[task.id].lane


def task_failed(task: Task, error: BaseException) -> RuntimeFault:
    """The one error a run raises for a failing task: names it, its label and what it runs;
    the task's own error (its code, location and message) travels in the notes."""
    if hasattr(error, "render"):
        cause = error.render()  # type: ignore[attr-defined]
    else:
        cause = f"{type(error).__name__}: {error}"
    err = RuntimeFault("RUNTIME_TASK_FAILED",
                       f"task {task.id} {task.label!r} ({task.what}) failed; the tasks already running "
                       "finished, no later task was started",
                       location=Location(kernel=task.kernel), expected="the task to complete",
                       actual=getattr(error, "code", type(error).__name__), notes=cause.splitlines())
    err.task = task               # type: ignore[attr-defined]
    err.error = error             # type: ignore[attr-defined]
    return err
