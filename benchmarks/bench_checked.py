"""What the llvm backend's checked mode (``checked=True``: run-time RUNTIME_UNINIT_READ checks)
costs: examples/softmax.pto and examples/gemm.pto, default vs checked, one block, best of N.

    python benchmarks/bench_checked.py [--repeat 20]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the shared benchmarks/machine.py
from machine import best_of, calibration, machine  # noqa: E402
import openpto as pto  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent



def cases(rng: np.random.Generator) -> dict[str, tuple[str, list[Any]]]:
    x = rng.standard_normal((1024, 1024)).astype(np.float32)
    a = rng.standard_normal((1024, 1024)).astype(np.float16)
    b = rng.standard_normal((1024, 1024)).astype(np.float16)
    return {"softmax 1024x1024 f32": ("examples/softmax.pto", [x, np.empty_like(x), 1024]),
            "gemm 1024^3 f16 -> f32": ("examples/gemm.pto", [a, b, np.empty((1024, 1024), np.float32),
                                                             1024, 1024, 1024])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args(argv)
    print(f"machine: {machine()}; calibration loop {calibration() * 1e3:.1f} ms")
    print("| kernel | default ms | checked ms | checked / default | compile default ms | compile checked ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (path, call) in cases(np.random.default_rng(0)).items():
        m = pto.load(ROOT / path)
        row = []
        compiles = []
        for checked in (False, True):
            t = time.perf_counter()
            exe = pto.compile(m, "llvm", cache=False, checked=checked, threads=1)
            compiles.append(time.perf_counter() - t)
            row.append(best_of(lambda: exe(*call), args.repeat))
        print(f"| {name} | {row[0] * 1e3:.2f} | {row[1] * 1e3:.2f} | {row[1] / row[0]:.3f} "
              f"| {compiles[0] * 1e3:.0f} | {compiles[1] * 1e3:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
