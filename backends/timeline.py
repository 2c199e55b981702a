"""Run traces as a picture: one lane per (core or block, pipe), one bar per instruction, so where
time goes in a run is visible at a glance (the Chrome/Perfetto JSON holds the same events)."""
from __future__ import annotations

from typing import Any

from ..isa.diagnostics import PTOError


def write_timeline_png(path: str, events: list[dict[str, Any]], title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = [dict(e, lane=e.get("core") or f"block {e.get('block', 0)}")   # flag marks: arrows in the JSON only
              for e in events if "flow" not in e]
    lanes = sorted({(e["lane"], e.get("pipe", "?")) for e in events})
    row = {lane: i for i, lane in enumerate(lanes)}
    names = sorted({e["name"] for e in events})
    colour = {n: plt.get_cmap("tab20")(i % 20) for i, n in enumerate(names)}
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.45 * max(len(lanes), 1)))
    for e in events:
        y = row[(e["lane"], e.get("pipe", "?"))]
        ax.barh(y, max(e["dur_ns"], 1) / 1e3, left=e["ts_ns"] / 1e3, height=0.8, color=colour[e["name"]],
                edgecolor="none")
    ax.set_yticks(range(len(lanes)), [f"{c} {p}" for c, p in lanes])
    ax.invert_yaxis()
    ax.set_xlabel("time (µs)")
    ax.set_title(title)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[n]) for n in names]
    ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot write {path}: {e.strerror or e}") from None
    finally:
        plt.close(fig)
