"""A recorded run in numbers: per-lane utilisation, the bubble ratio, how long tasks waited
for their predecessors and then for a free core, and the critical path (the chain of
dependent tasks with the most recorded work), the figures a user tunes a graph by."""
from __future__ import annotations

from dataclasses import dataclass

from .record import RunRecord


@dataclass
class Summary:
    """Times in ns. ``busy`` / ``tasks`` per used lane; ``bubble`` = idle share of the used
    lanes over the makespan; ``wait_preds`` = summed time from the run's start until each task
    was ready; ``wait_core`` = summed time from ready to start; ``critical`` = the task ids of
    the critical path and ``critical_ns`` its recorded work."""

    makespan: float
    busy: dict[str, float]
    tasks: dict[str, int]
    bubble: float
    wait_preds: float
    wait_core: float
    critical: list[int]
    critical_ns: float


def summarise(record: RunRecord) -> Summary:
    graph = record.graph
    span = max(record.makespan, 1e-9)
    busy: dict[str, float] = {}
    count: dict[str, int] = {}
    for r in record.runs:
        if r.lane is not None:
            busy[r.lane] = busy.get(r.lane, 0.0) + (r.end - r.start)
            count[r.lane] = count.get(r.lane, 0) + 1
    order = {lane: i for i, lane in enumerate(record.lanes)}
    used = sorted(busy, key=lambda lane: order.get(lane, len(order)))
    bubble = 1.0 - sum(busy.values()) / (span * max(len(used), 1)) if used else 0.0
    work = [r.end - r.start for r in record.runs]
    best = [0.0] * len(graph.tasks)          # most work on a chain ending at the task
    back: list[int | None] = [None] * len(graph.tasks)
    for t in graph.order():
        prev = max(graph.preds[t], key=lambda p: best[p], default=None)
        best[t] = work[t] + (best[prev] if prev is not None else 0.0)
        back[t] = prev
    path: list[int] = []
    at = max(range(len(best)), key=lambda t: (best[t], t), default=None)   # ties: the later task (a sink)
    while at is not None:
        path.append(at)
        at = back[at]
    return Summary(span if record.runs else 0.0, {lane: busy[lane] for lane in used},
                   {lane: count[lane] for lane in used}, bubble,
                   sum(r.ready for r in record.runs), sum(r.start - r.ready for r in record.runs),
                   path[::-1], max(best, default=0.0))


def _us(ns: float) -> str:
    return f"{ns / 1e3:,.1f} us"


def format_summary(record: RunRecord, top: int = 12) -> str:
    """The summary as text: the run, then one line per used lane, then the critical path."""
    s = summarise(record)
    tasks = record.graph.tasks
    lines = [f"{len(tasks)} task(s) on {record.executor} ({record.clock}), policy {record.policy}: "
             f"makespan {_us(s.makespan)}, {len(s.busy)} of {len(record.lanes)} lane(s) used, "
             f"bubble ratio {s.bubble:.1%}",
             f"waiting: for predecessors {_us(s.wait_preds)}, for a free core {_us(s.wait_core)} (summed over tasks)",
             "lane         tasks       busy   utilisation"]
    for lane in list(s.busy)[:top]:
        lines.append(f"{lane:<10} {s.tasks[lane]:>7} {_us(s.busy[lane]):>12} {s.busy[lane] / max(s.makespan, 1e-9):>12.1%}")
    if len(s.busy) > top:
        rest = list(s.busy)[top:]
        lines.append(f"... {len(rest)} more lane(s), {sum(s.tasks[x] for x in rest)} task(s)")
    chain = " -> ".join(tasks[t].label for t in s.critical[:top])
    more = f" -> ... ({len(s.critical) - top} more)" if len(s.critical) > top else ""
    lines.append(f"critical path: {len(s.critical)} task(s), {_us(s.critical_ns)} of work "
                 f"({s.critical_ns / max(s.makespan, 1e-9):.0%} of the makespan): {chain}{more}")
    return "\n".join(lines)
