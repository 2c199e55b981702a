"""A recorded run as a picture: Chrome / Perfetto JSON (one lane per core or worker, a
complete event per task named by its label, flow arrows for dependencies, counter tracks
for the ready queues) and a PNG swimlane (matplotlib).

The task events go through ``backends.trace.chrome_trace``, the same writer kernel runs use;
this module adds the dependency arrows and the queue counters to its document.
"""
from __future__ import annotations

import json
from typing import Any

from ..backends.trace import chrome_trace
from ..isa.diagnostics import PTOError
from .record import RunRecord

JOIN_LANE = "joins"
_PREFIX = "runtime"


def _lane(record: RunRecord, task: int) -> str:
    return record.runs[task].lane or JOIN_LANE


def task_events(record: RunRecord) -> list[dict[str, Any]]:
    """One event per task (``name`` = label, ``core`` = its lane), in lane order."""
    order = {lane: i for i, lane in enumerate([*record.lanes, JOIN_LANE])}
    out = []
    for r in sorted(record.runs, key=lambda r: (order.get(_lane(record, r.task), len(order)), r.start)):
        t = record.graph.tasks[r.task]
        out.append({"name": t.label, "ts_ns": r.start, "dur_ns": r.end - r.start, "core": _lane(record, r.task),
                    "pipe": "tasks", "core_type": t.core, "task": t.id, "runs": t.what, "ready_ns": r.ready})
    return out


def chrome_document(record: RunRecord) -> dict[str, Any]:
    """The ``{"traceEvents": [...]}`` document of a run."""
    doc = chrome_trace(task_events(record), f"{_PREFIX}")
    events = doc["traceEvents"]
    pid = {e["args"]["name"][len(_PREFIX) + 1:]: e["pid"] for e in events if e.get("name") == "process_name"}
    tid = {e["pid"]: e["tid"] for e in events if e.get("name") == "thread_name"}
    graph = record.graph
    n = 0
    for t, preds in enumerate(graph.preds):
        for p, kind in preds.items():
            src, dst = pid[_lane(record, p)], pid[_lane(record, t)]
            common = {"name": kind, "cat": "dependency", "id": n}
            events.append({**common, "ph": "s", "ts": record.runs[p].end / 1e3, "pid": src, "tid": tid[src]})
            events.append({**common, "ph": "f", "bp": "e", "ts": record.runs[t].start / 1e3, "pid": dst,
                           "tid": tid[dst]})
            n += 1
    counter = max(pid.values(), default=-1) + 1
    events.append({"name": "process_name", "ph": "M", "pid": counter, "tid": 0, "args": {"name": "ready queues"}})
    lengths: dict[str, int] = {}
    for ts, queue, length in record.samples:
        lengths[queue] = length
        events.append({"name": "ReadyCount", "ph": "C", "ts": ts / 1e3, "pid": counter, "tid": 0,
                       "args": {**{f"ReadyCount_{q}": v for q, v in sorted(lengths.items())},
                                "ReadyCount_total": sum(lengths.values())}})
    doc["otherData"] = {"executor": record.executor, "policy": record.policy, "clock": record.clock}
    return doc


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot write {path}: {e.strerror or e}") from None


def write_chrome(path: str, record: RunRecord) -> None:
    """Write the run as Chrome / Perfetto JSON (chrome://tracing, ui.perfetto.dev)."""
    _write(path, json.dumps(chrome_document(record), default=str))


def write_swimlane_png(path: str, record: RunRecord, title: str | None = None) -> None:
    """A swimlane picture: one row per used lane (in the executor's order), one bar per task,
    coloured by what it runs, its label written inside when there is room."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = [e for e in task_events(record) if e["core"] != JOIN_LANE]
    lanes = list(dict.fromkeys(e["core"] for e in events))
    row = {lane: i for i, lane in enumerate(lanes)}
    kinds = sorted({e["runs"] for e in events})
    colour = {k: plt.get_cmap("tab10")(i % 10) for i, k in enumerate(kinds)}
    unit, scale = ("ms", 1e6) if record.makespan > 5e6 else ("µs", 1e3)
    span = max(record.makespan / scale, 1e-9)
    fig, ax = plt.subplots(figsize=(12, 1.4 + (0.38 if len(lanes) <= 16 else 0.2) * max(len(lanes), 1)))
    for e in events:
        y, x, w = row[e["core"]], e["ts_ns"] / scale, max(e["dur_ns"] / scale, span * 1e-4)
        ax.barh(y, w, left=x, height=0.75, color=colour[e["runs"]], edgecolor="white", linewidth=0.5)
        if w > span * 0.06:
            ax.text(x + w / 2, y, e["name"], ha="center", va="center", fontsize=6, clip_on=True)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit}, {record.clock})")
    ax.set_title(title or f"{len(record.graph.tasks)} tasks, {record.executor} executor, policy {record.policy}")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[k]) for k in kinds]
    ax.legend(handles, kinds, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot write {path}: {e.strerror or e}") from None
    finally:
        plt.close(fig)
