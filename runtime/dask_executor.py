"""The dask executor: tasks run on a ``dask.distributed`` cluster (the optional extra
``openpto[dask]``), the project's way beyond one machine, with no networking of its own.

The scheduling loop stays here, with the same scheduler and policy as the other executors:
a task is submitted when it becomes ready. Kernels travel as bytecode (``Module.to_bytes()``,
scattered to every worker once per run); each worker process compiles a module once per
(bytecode, backend, profile) and keeps it. Arrays travel as arrays: a task gets copies of its
bindings and sends back the ones it writes, which are copied into the caller's arrays (views
included) before its successors are submitted. The backend is the task executable's own
(``reference``, ``llvm``, ``ascend_sim``, found from its class's package) unless ``backend=``
names one; workers compile with that backend's default options.
"""
from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

import numpy as np

from ..isa.diagnostics import PTOError
from .executor import Executor
from .graph import Task, TaskGraph
from .record import RunRecord, TaskRun, task_failed
from .scheduler import QUEUE_TYPES, Policy, Scheduler

_WORKER_EXES: dict[tuple[str, str, str], Any] = {}     # in each worker: (digest, backend, profile) -> Executable
_WORKER_LOCK = threading.Lock()


class RemoteError(Exception):
    """A task's error as the worker rendered it (PTOError subclasses do not pickle as they are)."""

    def __init__(self, code: str, text: str) -> None:
        super().__init__(text)
        self.code, self.text = code, text

    def render(self) -> str:
        return self.text


def _remote(payload: tuple, blob: bytes | None) -> tuple:
    """Runs on a worker: (worker name, thread, start ns, end ns, written arrays) or an error."""
    from distributed import get_worker
    kind, digest, backend, profile, kernel, blocks, fn, args, written = payload
    # arrays arrive as views of the message's bytes (read-only, maybe unaligned): own copies
    args = {n: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for n, v in args.items()}
    start = time.time_ns()
    try:
        if kind == "kernel":
            key = (digest, backend, profile)
            with _WORKER_LOCK:
                exe = _WORKER_EXES.get(key)
                if exe is None:
                    import openpto as pto
                    from openpto.assembler.loading import parse_bytes
                    exe = _WORKER_EXES[key] = pto.compile(parse_bytes(blob), backend=backend, profile=profile)
            exe.run(kernel, block_num=blocks, **args)
        elif fn is not None:
            fn(**args)
    except BaseException as e:                     # noqa: BLE001 - sent back, raised as RUNTIME_TASK_FAILED
        text = e.render() if hasattr(e, "render") else f"{type(e).__name__}: {e}"
        return ("error", getattr(e, "code", type(e).__name__), text)
    end = time.time_ns()
    return ("ok", str(get_worker().name), threading.current_thread().name, start, end,
            {n: args[n] for n in written})


def backend_name(exe: Any) -> str:
    """The built-in backend an executable came from: the package its class lives in."""
    parts = type(exe).__module__.split(".")
    return parts[parts.index("backends") + 1] if "backends" in parts[:-1] else ""


class DaskExecutor(Executor):
    """``client``: a ``distributed.Client``; or ``address`` of a scheduler to connect to.
    ``backend``: the backend workers compile kernels with (default: each executable's own)."""

    name = "dask"

    def __init__(self, client: Any = None, address: str | None = None, backend: str | None = None) -> None:
        try:
            import distributed
        except ImportError:
            raise PTOError("PTO_EXECUTOR", "the dask executor needs dask.distributed, the optional extra",
                           expected="pip install 'openpto[dask]'", actual="distributed is not installed") from None
        if client is None and address is None:
            raise PTOError("PTO_EXECUTOR", "the dask executor needs a client or a scheduler address",
                           expected="client=distributed.Client(...) or address='tcp://host:port'", actual="neither")
        self.client = client if client is not None else distributed.Client(address)
        self.backend = backend

    def _payload(self, task: Task, blobs: dict[int, tuple[str, Any]]) -> tuple[tuple, Any]:
        written = sorted({s.name for s in task.touched_writes})
        if task.exe is None:
            return ("host" if task.fn is not None else "join", "", "", "", None, 1, task.fn, task.args, written), None
        module = task.exe.module
        held = blobs.get(id(module))
        if held is None:
            data = module.to_bytes()
            held = blobs[id(module)] = (hashlib.sha256(data).hexdigest(), self.client.scatter(data, broadcast=True, hash=False))
        backend = self.backend or backend_name(task.exe)
        if not backend:
            raise PTOError("PTO_EXECUTOR", f"cannot tell which backend task {task.label!r}'s executable is from",
                           expected="DaskExecutor(backend=NAME)", actual=type(task.exe).__name__)
        return ("kernel", held[0], backend, task.exe.profile, task.kernel, task.blocks, None, task.args,
                written), held[1]

    def run(self, graph: TaskGraph, policy: "str | Policy" = "fifo") -> RunRecord:
        from distributed import as_completed
        sched = Scheduler(graph, policy)
        tasks = graph.tasks
        n = len(tasks)
        t0 = time.time_ns()
        blobs: dict[int, tuple[str, Any]] = {}
        runs: list[TaskRun | None] = [None] * n
        lanes: dict[tuple[str, str], str] = {}
        per_worker: dict[str, int] = {}
        failure: tuple[int, BaseException] | None = None
        pending = as_completed(with_results=True, raise_errors=False)
        stamp = f"pto-{t0}-{id(graph)}"
        owner: dict[str, int] = {}

        def submit_ready() -> tuple[int, BaseException] | None:
            """Submit every ready task; the first that cannot be submitted stops it (the tasks
            in flight still finish and write back before the failure is raised)."""
            while True:
                tid = sched.pop(QUEUE_TYPES, time.time_ns() - t0)
                if tid is None:
                    return None
                try:
                    payload, blob = self._payload(tasks[tid], blobs)
                    fut = self.client.submit(_remote, payload, blob, key=f"{stamp}-{tid}", pure=False)
                except Exception as e:                     # noqa: BLE001 - e.g. a host function that cannot be pickled
                    return tid, e
                owner[fut.key] = tid
                pending.add(fut)

        sched.start(0.0)
        failure = submit_ready()
        for fut, out in pending:
            tid = owner[fut.key]
            if isinstance(out, BaseException):               # the cluster lost the task
                out = ("error", type(out).__name__, f"{type(out).__name__}: {out}")
            if out[0] == "error":
                if failure is None:
                    failure = (tid, RemoteError(out[1], out[2]))
                continue
            _, worker, thread, start, end, arrays = out
            for name, value in arrays.items():       # only the bytes the task owns: tasks on other
                region = tasks[tid].regions.get(name)  # regions of one binding may run at once
                if region is None:
                    tasks[tid].args[name][...] = value
                else:
                    tasks[tid].args[name][region] = value[region]
            if (worker, thread) not in lanes:
                k = per_worker[worker] = per_worker.get(worker, -1) + 1
                lanes[(worker, thread)] = f"dask_{worker}_{k}"
            ready = sched.ready_at[tid] or 0.0
            runs[tid] = TaskRun(tid, lanes[(worker, thread)], float(ready), float(start - t0), float(end - t0))
            if failure is None:
                sched.complete(tid, time.time_ns() - t0)
                failure = submit_ready()
        if failure is not None:
            if isinstance(failure[1], PTOError) and failure[1].code == "PTO_EXECUTOR":
                raise failure[1]                           # the executor's own refusal, as it is
            raise task_failed(tasks[failure[0]], failure[1]) from failure[1]
        for t, at in sched.inline.items():
            runs[t] = TaskRun(t, None, at, at, at)
        return RunRecord(graph, self.name, sched.policy.name, runs, sorted(set(lanes.values())),  # type: ignore[arg-type]
                         sched.samples, "wall (worker clocks)")
