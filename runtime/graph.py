"""The task graph: tasks (a compiled kernel with its argument bindings, a host callable, or a
zero-work join), the byte ranges each reads and writes, and the dependencies between them.

Tasks are added in program order; that order is the sequential meaning of the graph. A new
task depends on every earlier task whose bytes it touches where one of the two writes them
(read-after-write, write-after-read, write-after-write), found by absolute address, so
tiles of one tensor are independent and aliases reached through different Python objects
are not. Explicit edges add to
these; a cycle among them is ``PTO_GRAPH_CYCLE`` when the graph is ordered, before any run.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..backends.arguments import bind
from ..backends.base import Executable
from ..isa.diagnostics import Location, PTOError
from .access import Span, array_span, is_array, kernel_access, kernel_core_type, root_buffer
from .addresses import AddressTable

#: the edge kinds a dependency can have, as the traces show them
EDGE_KINDS = ("RAW", "WAR", "WAW", "explicit")


@dataclass(eq=False)
class Task:
    """One node. ``core`` is "cube", "vector", "host" or "join" (zero work, resolved inline).
    ``reads`` / ``writes`` are the spans dependencies were derived from; ``touched_reads`` /
    ``touched_writes`` the spans the task really accesses (the kernel's own parameter roles
    over the bindings, whatever ``reads=`` / ``writes=`` said), which the verifier checks."""

    id: int
    label: str
    core: str
    kernel: str | None = None
    exe: Executable | None = None
    fn: Callable[..., Any] | None = None
    args: dict[str, Any] = field(default_factory=dict)
    blocks: int = 1
    reads: tuple[Span, ...] = ()
    writes: tuple[Span, ...] = ()
    touched_reads: tuple[Span, ...] = ()
    touched_writes: tuple[Span, ...] = ()
    cost: float = 1.0
    regions: dict[str, Any] = field(default_factory=dict)     # binding -> the index narrowing it

    @property
    def what(self) -> str:
        """What runs: ``@kernel``, the host function's name, or ``join``."""
        if self.kernel is not None:
            return f"@{self.kernel}"
        return getattr(self.fn, "__name__", "host") if self.fn is not None else "join"

    def run(self) -> None:
        """Run the task here, in the calling thread."""
        if self.exe is not None:
            self.exe.run(self.kernel, block_num=self.blocks, **self.args)   # type: ignore[arg-type]
        elif self.fn is not None:
            self.fn(**self.args)

    def __repr__(self) -> str:
        return f"Task({self.id}, {self.label!r}, {self.core}, {self.what})"


def _task_error(msg: str, *, expected: object = None, actual: object = None, kernel: str | None = None) -> PTOError:
    return PTOError("PTO_TASK", msg, location=Location(kernel=kernel), expected=expected, actual=actual)


def _number(what: str, value: object, *, least: float, integer: bool, kernel: str | None) -> None:
    """``blocks`` (an integer >= 1) and ``cost`` (a finite number >= 0), checked when the task
    is added rather than where a run or a policy first uses them."""
    ok = isinstance(value, numbers.Integral) if integer else isinstance(value, numbers.Real) and math.isfinite(value)
    if not ok or isinstance(value, bool) or value < least:   # type: ignore[operator]
        raise _task_error(f"{what} must be {'an integer' if integer else 'a finite number'} >= {least:g}",
                          kernel=kernel, expected=f">= {least:g}", actual=repr(value))


def _common(args: object, after: object, label: object, regions: object, named: Mapping[str, object],
            kernel: str | None) -> None:
    """The shapes of the arguments every task takes, checked before any is used."""
    if args is not None and not isinstance(args, Mapping):
        raise _task_error("args maps parameter names to values", kernel=kernel, expected="a dict",
                          actual=type(args).__name__)
    if regions is not None and not isinstance(regions, Mapping):
        raise _task_error("regions maps binding names to indexes", kernel=kernel, expected="a dict",
                          actual=type(regions).__name__)
    if not isinstance(after, (list, tuple)):
        raise _task_error("after is a list of earlier tasks", kernel=kernel, expected="[task, ...]",
                          actual=type(after).__name__)
    if label is not None and not isinstance(label, str):
        raise _task_error("a task's label is a string", kernel=kernel, expected="a str", actual=repr(label))
    for what, names in named.items():
        ok = names is None or isinstance(names, str) or (
            isinstance(names, (list, tuple, set, frozenset)) and all(isinstance(n, str) for n in names))
        if not ok:
            raise _task_error(f"{what} lists parameter names", kernel=kernel, expected='["name", ...]',
                              actual=repr(names))


def _writable(args: Mapping[str, Any], written: set[str], kernel: str | None) -> None:
    """A task must not write a read-only array (``np.broadcast_to``, a view of bytes): a kernel
    would write through it anyway, and an executor copying results back could not."""
    bad = sorted(n for n in written if not args[n].flags.writeable)
    if bad:
        raise _task_error(f"the task writes {', '.join(f'%{n}' for n in bad)}, bound to a read-only array",
                          kernel=kernel, expected="a writeable array (np.ascontiguousarray / .copy())",
                          actual="read-only: " + ", ".join(bad))


class TaskGraph:
    """Tasks and their dependencies. ``derive=False`` takes only explicit edges (``after=`` and
    ``edge``): the verifier then shows what a missing edge would break."""

    def __init__(self, derive: bool = True) -> None:
        self.derive = derive
        self.tasks: list[Task] = []
        self.preds: list[dict[int, str]] = []          # per task: predecessor id -> edge kind
        self._reads = AddressTable()                   # (span, task) not yet covered by a later write
        self._writes = AddressTable()

    def __len__(self) -> int:
        return len(self.tasks)

    # ------------------------------------------------------------------ adding tasks
    def task(self, exe: Executable, kernel: str | None = None, args: Mapping[str, Any] | None = None, *,
             label: str | None = None, core: str | None = None, reads: Iterable[str] | None = None,
             writes: Iterable[str] | None = None, regions: Mapping[str, Any] | None = None, blocks: int = 1,
             after: Sequence[Task] = (), cost: float = 1.0) -> Task:
        """A kernel task: run ``kernel`` of ``exe`` (its only kernel when None) with ``args``
        (parameter name -> numpy array or view, or scalar). The parameters it reads and writes,
        and its core type, come from the kernel; ``reads`` / ``writes`` (parameter names) and
        ``core`` override them. ``regions`` narrows a binding to ``binding[region]`` (an index:
        slices, ints) for dependencies and verification. ``cost`` weighs the critical-path policy."""
        if not isinstance(exe, Executable):
            raise _task_error("a kernel task needs a compiled Executable (pto.compile)", expected="an Executable",
                              actual=type(exe).__name__)
        k = exe.module.kernel(kernel, "name one with kernel=")
        _common(args, after, label, regions, {"reads": reads, "writes": writes}, k.name)
        _number("blocks", blocks, least=1, integer=True, kernel=k.name)
        _number("cost", cost, least=0, integer=False, kernel=k.name)
        args = dict(args or {})
        bind(k, (), args)                             # RUNTIME_ARG_* now, not half-way through a run
        read, written = kernel_access(k)
        ctype = core or kernel_core_type(k)
        if ctype not in ("cube", "vector"):
            raise _task_error(f"kernel task {label or k.name!r} given core type {ctype!r}",
                              expected="cube | vector", actual=ctype, kernel=k.name)
        spans = self._spans(args, regions, k.name)
        touched_r = tuple(spans[n] for n in sorted(read) if n in spans)
        touched_w = tuple(spans[n] for n in sorted(written) if n in spans)
        decl_r = self._named(spans, reads, k.name) if reads is not None else touched_r
        decl_w = self._named(spans, writes, k.name) if writes is not None else touched_w
        _writable(args, {s.name for s in touched_w + decl_w}, k.name)
        return self._add(Task(len(self.tasks), label or f"{k.name}#{len(self.tasks)}", ctype, k.name, exe, None,
                              args, blocks, decl_r, decl_w, touched_r, touched_w, float(cost),
                              dict(regions or {})), after)

    def host(self, fn: Callable[..., Any], args: Mapping[str, Any] | None = None, *, label: str | None = None,
             reads: Iterable[str] | None = None, writes: Iterable[str] | None = None,
             regions: Mapping[str, Any] | None = None, after: Sequence[Task] = (), cost: float = 1.0) -> Task:
        """A host task: ``fn(**args)`` in Python. Without ``reads`` / ``writes`` it is taken to
        read every array it is given and write every writeable one."""
        if not callable(fn):
            raise _task_error("a host task needs a callable", expected="a function", actual=type(fn).__name__)
        _common(args, after, label, regions, {"reads": reads, "writes": writes}, None)
        _number("cost", cost, least=0, integer=False, kernel=None)
        args = dict(args or {})
        name = getattr(fn, "__name__", "host")
        spans = self._spans(args, regions, None)
        r = self._named(spans, reads, None) if reads is not None else tuple(spans.values())
        if writes is None:                            # every array it could write: not a read-only one
            w = tuple(sp for n, sp in spans.items() if args[n].flags.writeable)
        else:
            w = self._named(spans, writes, None)
            _writable(args, {sp.name for sp in w}, None)
        return self._add(Task(len(self.tasks), label or f"{name}#{len(self.tasks)}", "host", None, None, fn,
                              args, 1, r, w, r, w, float(cost), dict(regions or {})), after)

    def join(self, after: Sequence[Task] = (), label: str | None = None) -> Task:
        """A zero-work task that completes as soon as every task in ``after`` has."""
        _common(None, after, label, None, {}, None)
        return self._add(Task(len(self.tasks), label or f"join#{len(self.tasks)}", "join", cost=0.0), after)

    def edge(self, before: Task, after: Task) -> None:
        """An explicit dependency: ``after`` starts only once ``before`` has finished."""
        for t in (before, after):
            if not isinstance(t, Task) or t.id >= len(self.tasks) or self.tasks[t.id] is not t:
                raise _task_error("an edge names a task of another graph", expected="a Task of this graph",
                                  actual=repr(t))
        if before is after:
            raise PTOError("PTO_GRAPH_CYCLE", f"task {before.label!r} cannot depend on itself",
                           expected="an edge between two tasks", actual=f"{before.label} -> {before.label}")
        self.preds[after.id].setdefault(before.id, "explicit")

    # ------------------------------------------------------------------ derived structure
    def successors(self) -> list[list[int]]:
        succ: list[list[int]] = [[] for _ in self.tasks]
        for t, ps in enumerate(self.preds):
            for p in ps:
                succ[p].append(t)
        return succ

    def order(self) -> list[int]:
        """A topological order (ties in program order); ``PTO_GRAPH_CYCLE`` naming a cycle."""
        import heapq
        succ = self.successors()
        count = [len(p) for p in self.preds]
        ready = [t for t, c in enumerate(count) if c == 0]
        heapq.heapify(ready)
        out: list[int] = []
        while ready:
            t = heapq.heappop(ready)
            out.append(t)
            for s in succ[t]:
                count[s] -= 1
                if count[s] == 0:
                    heapq.heappush(ready, s)
        if len(out) < len(self.tasks):
            cycle = self._cycle({t for t, c in enumerate(count) if c > 0})
            names = " -> ".join(self.tasks[t].label for t in cycle)
            raise PTOError("PTO_GRAPH_CYCLE", "the task graph's explicit edges form a cycle; nothing was run",
                           expected="an acyclic graph", actual=names)
        return out

    def _cycle(self, stuck: set[int]) -> list[int]:
        """One cycle among the tasks left with predecessors (walk predecessors until one repeats)."""
        t = min(stuck)
        seen: dict[int, int] = {}
        path: list[int] = []
        while t not in seen:
            seen[t] = len(path)
            path.append(t)
            t = min(p for p in self.preds[t] if p in stuck)
        loop = path[seen[t]:] + [t]
        return loop[::-1]

    # ------------------------------------------------------------------ internals
    def _add(self, task: Task, after: Sequence[Task]) -> Task:
        self.tasks.append(task)
        self.preds.append({})
        for b in after:
            self.edge(b, task)
        if self.derive:
            self._derive(task)
        return task

    def _derive(self, task: Task) -> None:
        preds = self.preds[task.id]
        for s in task.reads:
            for _, t in self._writes.overlapping(s):
                if t != task.id:
                    preds.setdefault(t, "RAW")
        for s in task.writes:
            for kind, table in (("WAW", self._writes), ("WAR", self._reads)):
                for _, t in table.overlapping(s):
                    if t != task.id:
                        preds.setdefault(t, kind)
        for s in task.writes:            # accesses this write covers are ordered before it: drop them
            self._writes.drop_covered(s)
            self._reads.drop_covered(s)
            self._writes.add(s, task.id)
        for s in task.reads:
            self._reads.add(s, task.id)

    def _spans(self, args: Mapping[str, Any], regions: Mapping[str, Any] | None, kernel: str | None) -> dict[str, Span]:
        out: dict[str, Span] = {}
        for name, v in args.items():
            if is_array(v):
                out[name] = array_span(v, name)
        for name, region in (regions or {}).items():
            if name not in out:
                raise _task_error(f"a region for {name!r}, which is not an array binding", kernel=kernel,
                                  expected=" | ".join(sorted(out)) or "an array binding", actual=name)
            arr = args[name]
            try:
                view = arr[region]
            except Exception as e:             # noqa: BLE001 - numpy's IndexError / TypeError, shown as given
                raise _task_error(f"region {region!r} is not an index into {name!r} of shape {arr.shape}",
                                  kernel=kernel, expected="slices or ints within the binding",
                                  actual=str(e)) from None
            if not is_array(view) or root_buffer(view) is not root_buffer(arr):
                raise _task_error(f"region {region!r} of {name!r} is a copy, not a view of its memory",
                                  kernel=kernel, expected="basic indexing (slices, ints)", actual=repr(region))
            if arr.size and not view.size:
                raise _task_error(f"region {region!r} of {name!r} holds no element", kernel=kernel,
                                  expected="a region with at least one element", actual=f"shape {view.shape}")
            out[name] = array_span(view, name)
        return out

    @staticmethod
    def _named(spans: Mapping[str, Span], names: Iterable[str], kernel: str | None) -> tuple[Span, ...]:
        names = [names] if isinstance(names, str) else list(names)
        unknown = [n for n in names if n not in spans]
        if unknown:
            raise _task_error(f"reads/writes name {', '.join(map(repr, unknown))}, not an array binding",
                              kernel=kernel, expected=" | ".join(sorted(spans)) or "no arrays", actual=unknown)
        return tuple(spans[n] for n in names)

