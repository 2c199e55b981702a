"""Run traces as Chrome / Perfetto JSON (open in chrome://tracing or ui.perfetto.dev):
one process per block, one thread per pipe, one complete event per instruction.

The format's pid and tid are integers (Perfetto does not take strings there), so each pipe
gets a small thread id and its name travels in a ``thread_name`` metadata event.
"""
from __future__ import annotations

import json
from typing import Any

from ..isa.diagnostics import PTOError


def chrome_trace(events: list[dict[str, Any]], backend: str) -> dict[str, Any]:
    """The ``{"traceEvents": [...]}`` document for a run's events (``name``, ``ts_ns``,
    ``dur_ns``, optional ``block`` and ``pipe``; other keys become the event's args)."""
    pipes = {p: i for i, p in enumerate(dict.fromkeys(str(e.get("pipe", "?")) for e in events))}
    out: list[dict[str, Any]] = []
    threads: set[tuple[int, str]] = set()
    for e in events:
        block, pipe = int(e.get("block", 0)), str(e.get("pipe", "?"))
        threads.add((block, pipe))
        out.append({"name": e["name"], "ph": "X", "ts": e["ts_ns"] / 1e3, "dur": max(e["dur_ns"] / 1e3, 0.001),
                    "pid": block, "tid": pipes[pipe],
                    "args": {k: v for k, v in e.items() if k not in ("name", "ts_ns", "dur_ns")}})
    meta = [{"name": "process_name", "ph": "M", "pid": b, "tid": 0, "args": {"name": f"{backend} block {b}"}}
            for b in sorted({b for b, _ in threads})]
    meta += [{"name": "thread_name", "ph": "M", "pid": b, "tid": pipes[p], "args": {"name": p}}
             for b, p in sorted(threads)]
    return {"traceEvents": meta + out, "displayTimeUnit": "ns"}


def write_chrome_trace(path: str, events: list[dict[str, Any]], backend: str) -> None:
    text = json.dumps(chrome_trace(events, backend), default=str)  # a backend's numpy scalars too
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot write {path}: {e.strerror or e}") from None
