"""The dependency verifier: from a recorded run, check that the graph orders every two tasks
that touch a common byte where one of them writes it, and that the run kept the graph's order.

Happens-before is reachability in the graph (derived and explicit edges alike). The bytes are
the ones each task really touches (a kernel's parameter roles over its bindings), not the
``reads=`` / ``writes=`` its dependencies were derived from, so an override or an edge left
out that lets two writers (or a writer and a reader) of one byte run unordered is found, even
when the run happened to put them one after the other. A binding narrowed by ``regions=``
counts as its region only once the region audit (``regions.py``) has found the kernel stays
inside it; a task that does not is ``ORDER_TASK_REGION`` and is checked on its whole bindings.
"""
from __future__ import annotations

from ..isa.diagnostics import Location, OrderError, PTOErrorGroup
from .access import Span, array_span
from .graph import Task, TaskGraph
from .record import RunRecord
from .regions import audit


def ancestors(graph: TaskGraph) -> list[int]:
    """Per task, a bit set (an int) of the tasks that happen before it."""
    anc = [0] * len(graph.tasks)
    for t in graph.order():
        bits = 0
        for p in graph.preds[t]:
            bits |= anc[p] | (1 << p)
        anc[t] = bits
    return anc


def _name(t: Task) -> str:
    return f"task {t.id} {t.label!r} ({t.what})"


def problems(record: RunRecord) -> list[OrderError]:
    """Every ordering problem of a run, one per pair of tasks (empty: the run is sound)."""
    graph = record.graph
    tasks = graph.tasks
    anc = ancestors(graph)
    found: list[OrderError] = []
    for t, preds in enumerate(graph.preds):      # the run kept the graph's order
        for p in preds:
            if record.runs[t].start < record.runs[p].end:
                found.append(OrderError("ORDER_TASK_EARLY", f"{_name(tasks[t])} started before {_name(tasks[p])}, "
                                        "which the graph orders before it, had finished",
                                        location=Location(kernel=tasks[t].kernel),
                                        expected=f"start >= {record.runs[p].end:.0f} ns",
                                        actual=f"start {record.runs[t].start:.0f} ns"))
    beyond = audit(graph)                        # tasks that reach past their regions: whole bindings
    accesses: list[tuple[int, int, int, bool, str, Span]] = []     # by absolute address: aliases meet
    for task in tasks:
        for spans, write in ((task.touched_reads, False), (task.touched_writes, True)):
            if task.id in beyond:
                spans = tuple(array_span(task.args[s.name], s.name) for s in spans)
            for s in spans:
                if s.lo < s.hi:
                    accesses.append((s.lo, s.hi, task.id, write, s.name, s))
    seen: set[tuple[int, int]] = set()
    accesses.sort(key=lambda a: a[:4])
    active: list[tuple[int, int, int, bool, str, Span]] = []
    for acc in accesses:
        lo, hi, t, w, name, span = acc
        active = [a for a in active if a[1] > lo]
        for a in active:
            u = a[2]
            if u == t or not (w or a[3]) or (min(u, t), max(u, t)) in seen:
                continue
            if (anc[t] >> u) & 1 or (anc[u] >> t) & 1 or not span.overlaps(a[5]):
                continue
            seen.add((min(u, t), max(u, t)))
            first, second = sorted((a, acc), key=lambda x: x[2])
            ra, rb = record.runs[first[2]], record.runs[second[2]]
            overlap = "overlapped in time" if ra.start < rb.end and rb.start < ra.end else "did not overlap this time"
            found.append(OrderError(
                "ORDER_TASK_RACE",
                f"{_name(tasks[first[2]])} {'writes' if first[3] else 'reads'} %{first[4]} and "
                f"{_name(tasks[second[2]])} {'writes' if second[3] else 'reads'} %{second[4]}: they share "
                f"bytes of one buffer (their ranges overlap by {min(first[1], second[1]) - max(first[0], second[0])} "
                "byte(s)) and no path in the graph orders them",
                location=Location(kernel=tasks[second[2]].kernel),
                expected="a dependency edge between them", actual=f"none ({overlap})"))
        active.append(acc)
    return list(beyond.values()) + found


def verify(record: RunRecord) -> None:
    """Raise the run's ordering problems: one ``OrderError``, or a ``PTOErrorGroup`` of them."""
    found = problems(record)
    if len(found) == 1:
        raise found[0]
    if found:
        raise PTOErrorGroup(found)
