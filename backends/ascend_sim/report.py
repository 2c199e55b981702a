"""The per-pipe table of a simulated run (``pto run --report``): total cycles and time, each
pipe's busy cycles and utilisation, the bound, and the launch (cores, HBM traffic)."""
from __future__ import annotations

from typing import Any


def report_table(res: Any, kernel: str) -> str:
    """A Markdown table for ``res`` (a ``SimResult``): one row per pipe, then the totals."""
    lines = [f"| @{kernel} on {res.machine} | busy cycles | utilisation |", "|---|---:|---:|"]
    for pipe, busy in res.busy.items():
        if busy > 0:
            lines.append(f"| {pipe} | {busy:.0f} | {100 * res.utilisation[pipe]:.1f}% |")
    lines += [f"| total | {res.cycles:.0f} cycles | {res.time_us:.3f} us |",
              f"| bound | {res.bound} | |",
              f"| cores | {len(res.core_cycles)} {res.core_kind} | |",
              f"| HBM | {res.hbm_bytes} bytes | {res.hbm_gbps:.1f} GB/s |"]
    return "\n".join(lines)
