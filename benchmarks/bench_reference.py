"""Reference backend speed: ``examples/softmax.pto`` on a 1024x1024 f32 input against the
plain numpy expression ``e = exp(x - x.max(1, keepdims=True)); e / e.sum(1, keepdims=True)``,
side by side in one run. The target is a ratio of at most 2.0.

    python benchmarks/bench_reference.py [--rows 1024] [--repeat 20] [--profile cpu]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import platform
import time

import numpy as np

import openpto as pto

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = 2.0


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"


def best_of(fn, repeat: int) -> float:  # noqa: ANN001
    fn()                                 # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--profile", default="a3")
    a = ap.parse_args()
    x = np.random.default_rng(0).standard_normal((a.rows, 1024)).astype(np.float32)
    y = np.zeros_like(x)
    exe = pto.compile(pto.load(ROOT / "examples" / "softmax.pto"), "reference", a.profile)
    exe(x, y, a.rows)
    err = float(np.max(np.abs(y - numpy_softmax(x))))
    t_np = best_of(lambda: numpy_softmax(x), a.repeat)
    t_ref = best_of(lambda: exe(x, y, a.rows), a.repeat)
    relaxed = pto.compile(pto.load(ROOT / "examples" / "softmax.pto"), "reference", a.profile, strict=False)
    t_rel = best_of(lambda: relaxed(x, y, a.rows), a.repeat)
    print(f"machine: {machine()}")
    print(f"row softmax {a.rows}x1024 f32, best of {a.repeat}; max |reference - numpy| = {err:.2e}")
    print("| implementation | time (ms) | ratio vs numpy |")
    print("|---|---:|---:|")
    print(f"| numpy expression | {t_np * 1e3:.2f} | 1.00 |")
    print(f"| reference backend (strict) | {t_ref * 1e3:.2f} | {t_ref / t_np:.2f} |")
    print(f"| reference backend (relaxed) | {t_rel * 1e3:.2f} | {t_rel / t_np:.2f} |")
    verdict = "meets" if t_ref / t_np <= TARGET else "MISSES"
    print(f"strict ratio {t_ref / t_np:.2f} {verdict} the target of <= {TARGET:.1f}x")


if __name__ == "__main__":
    main()
