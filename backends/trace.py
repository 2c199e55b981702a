"""Run traces as Chrome / Perfetto JSON (open in chrome://tracing or ui.perfetto.dev):
one process per block, one thread per pipe, one complete event per instruction."""
from __future__ import annotations

import json
from typing import Any

from ..isa.diagnostics import PTOError


def chrome_trace(events: list[dict[str, Any]], backend: str) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    for e in events:
        out.append({"name": e["name"], "ph": "X", "ts": e["ts_ns"] / 1e3, "dur": max(e["dur_ns"] / 1e3, 0.001),
                    "pid": e.get("block", 0), "tid": e.get("pipe", "?"),
                    "args": {k: v for k, v in e.items() if k not in ("name", "ts_ns", "dur_ns")}})
    blocks = sorted({e.get("block", 0) for e in events})
    meta = [{"name": "process_name", "ph": "M", "pid": b, "args": {"name": f"{backend} block {b}"}}
            for b in blocks]
    return {"traceEvents": meta + out, "displayTimeUnit": "ns"}


def write_chrome_trace(path: str, events: list[dict[str, Any]], backend: str) -> None:
    try:
        with open(path, "w") as f:
            json.dump(chrome_trace(events, backend), f)
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot write {path}: {e.strerror or e}") from None
