"""What every benchmark shares: where it ran (the machine, and how fast this possibly shared,
throttled host runs Python right now) and how a time is taken (best of several runs)."""
from __future__ import annotations

import os
import platform
import time
from typing import Any, Callable


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{model}, {os.cpu_count()} cores, {platform.python_implementation()} "
            f"{platform.python_version()} ({platform.system()})")


def calibration() -> float:
    """Seconds for a fixed pure-Python loop (best of 3): how fast this machine runs Python
    right now, to compare runs taken while a shared host is busier or quieter."""
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        sum(i * i for i in range(300_000))
        best = min(best, time.perf_counter() - t)
    return best


def best_of(fn: Callable[[], Any], repeat: int) -> float:
    """The shortest of ``repeat`` timed calls of ``fn``, after one untimed warm-up call (JIT
    compilation, caches)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best
