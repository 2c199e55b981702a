"""The one interface every executor has, and lookup by name.

An executor takes a task graph and a policy and returns a ``RunRecord`` once every task has
finished, or raises ``RUNTIME_TASK_FAILED`` for the first task that failed (after the tasks
already running finish); it never returns a partial run.
"""
from __future__ import annotations

import abc
import importlib
from typing import Any

from ..isa.diagnostics import PTOError
from .graph import TaskGraph
from .record import RunRecord
from .scheduler import Policy

#: executor name -> "module:class" (imported on first use: dask is an optional extra)
EXECUTORS: dict[str, str] = {
    "embedded": "openpto.runtime.embedded:EmbeddedExecutor",
    "simulated": "openpto.runtime.simulated:SimulatedExecutor",
    "dask": "openpto.runtime.dask_executor:DaskExecutor",
}


class Executor(abc.ABC):
    name: str = ""

    @abc.abstractmethod
    def run(self, graph: TaskGraph, policy: "str | Policy" = "fifo") -> RunRecord:
        """Run every task of ``graph``, dependencies first, and record the run."""


def get_executor(executor: "str | Executor" = "embedded", **options: Any) -> Executor:
    """An executor by name with its options (``embedded``: workers; ``simulated``: profile;
    ``dask``: client or address), or an ``Executor`` instance as given."""
    if isinstance(executor, Executor):
        if options:
            raise PTOError("PTO_EXECUTOR", "options are given to an executor's constructor, not with an instance",
                           expected="no options", actual=", ".join(sorted(options)))
        return executor
    target = EXECUTORS.get(executor) if isinstance(executor, str) else None
    if target is None:
        raise PTOError("PTO_EXECUTOR", f"unknown executor {executor!r}", expected=" | ".join(EXECUTORS),
                       actual=repr(executor))
    module, cls = target.split(":")
    factory = getattr(importlib.import_module(module), cls)
    try:
        return factory(**options)
    except TypeError as e:
        raise PTOError("PTO_EXECUTOR", f"bad options for executor {executor!r}: {e}",
                       actual=", ".join(sorted(options))) from None


def run(graph: TaskGraph, executor: "str | Executor" = "embedded", policy: "str | Policy" = "fifo",
        **options: Any) -> RunRecord:
    """Run ``graph`` on an executor (by name, with its options) under a policy."""
    return get_executor(executor, **options).run(graph, policy)
