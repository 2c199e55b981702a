"""Run traces as Chrome / Perfetto JSON (open in chrome://tracing or ui.perfetto.dev):
one process per core (or block), one thread per pipe, one complete event per instruction, and
flag set -> wait pairs as flow arrows.

The format's pid and tid are integers (Perfetto does not take strings there), so each pipe
gets a small thread id and its name travels in a ``thread_name`` metadata event.
"""
from __future__ import annotations

import json
from typing import Any

from ..isa.diagnostics import PTOError


def chrome_trace(events: list[dict[str, Any]], backend: str) -> dict[str, Any]:
    """The ``{"traceEvents": [...]}`` document for a run's events (``name``, ``ts_ns``,
    ``dur_ns``, optional ``block``, ``core`` and ``pipe``; other keys become the event's args).
    One process per core (per block where events name no core), one thread per pipe. A
    ``flow: "wait"`` event (a flag wait that took a set: ``from_ns``, ``from_pipe``) becomes a
    flow arrow ("s" on the setting pipe, "f" on the waiting one); ``flow: "set"`` marks are dropped."""
    timed = [e for e in events if "flow" not in e]
    pipes = {p: i for i, p in enumerate(dict.fromkeys(str(e.get("pipe", "?")) for e in events))}

    def lane(e: dict[str, Any]) -> str:
        return str(e.get("core") or f"block {int(e.get('block', 0))}")
    procs = {c: i for i, c in enumerate(dict.fromkeys(lane(e) for e in events))}
    out: list[dict[str, Any]] = []
    threads: set[tuple[str, str]] = set()
    for e in timed:
        proc, pipe = lane(e), str(e.get("pipe", "?"))
        threads.add((proc, pipe))
        out.append({"name": e["name"], "ph": "X", "ts": e["ts_ns"] / 1e3, "dur": max(e["dur_ns"] / 1e3, 0.001),
                    "pid": procs[proc], "tid": pipes[pipe],
                    "args": {k: v for k, v in e.items() if k not in ("name", "ts_ns", "dur_ns")}})
    for n, e in enumerate(e for e in events if e.get("flow") == "wait"):
        proc, src, dst = lane(e), str(e["from_pipe"]), str(e["pipe"])
        threads.update({(proc, src), (proc, dst)})
        common = {"name": f"flag {e.get('flag', '')}", "cat": "flag", "id": n, "pid": procs[proc]}
        out.append({**common, "ph": "s", "ts": e["from_ns"] / 1e3, "tid": pipes[src]})
        out.append({**common, "ph": "f", "bp": "e", "ts": e["ts_ns"] / 1e3, "tid": pipes[dst]})
    meta = [{"name": "process_name", "ph": "M", "pid": i, "tid": 0, "args": {"name": f"{backend} {c}"}}
            for c, i in procs.items() if any(c == t[0] for t in threads)]
    meta += [{"name": "thread_name", "ph": "M", "pid": procs[c], "tid": pipes[p], "args": {"name": p}}
             for c, p in sorted(threads)]
    return {"traceEvents": meta + out, "displayTimeUnit": "ns"}


def write_chrome_trace(path: str, events: list[dict[str, Any]], backend: str) -> None:
    text = json.dumps(chrome_trace(events, backend), default=str)  # a backend's numpy scalars too
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot write {path}: {e.strerror or e}") from None
