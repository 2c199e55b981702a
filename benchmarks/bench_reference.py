"""Reference backend speed: ``examples/softmax.pto`` on a 1024x1024 f32 input against the
plain numpy expression ``e = exp(x - x.max(1, keepdims=True)); e / e.sum(1, keepdims=True)``,
side by side in one run. The target is a ratio of at most 2.0.

    python benchmarks/bench_reference.py [--rows 1024] [--repeat 20] [--profile cpu]
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the shared benchmarks/machine.py
from machine import best_of, calibration, machine  # noqa: E402
import openpto as pto

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = 2.0



def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def numpy_softmax_same_numerics(x: np.ndarray) -> np.ndarray:
    """The reference's numerics in plain numpy: exp through f64 rounded once to f32 (correctly
    rounded), row sums accumulated in f64. Separates interpretation cost from numerics cost."""
    d = x - x.max(1, keepdims=True)
    e = np.exp(d, dtype=np.float64).astype(np.float32)
    return e / e.sum(1, keepdims=True, dtype=np.float64).astype(np.float32)


def numpy_softmax_tiled(x: np.ndarray, y: np.ndarray, rows: int = 16) -> None:
    """The program's own work with the reference's numerics and nothing else: per 16-row tile
    the load copy, row max, exp of the f32 difference through f64, f64 row sum, division and
    the store copy, with no interpretation at all: about the least any numpy interpreter of
    this program with these numerics can spend (an interpreter could save a temporary or two
    with ``out=``, not the f64 exp and sums that dominate)."""
    for r in range(0, x.shape[0], rows):
        t = x[r:r + rows].copy()
        d = t - t.max(1, keepdims=True)
        e = np.exp(d, dtype=np.float64).astype(np.float32)
        s = e.sum(1, keepdims=True, dtype=np.float64).astype(np.float32)
        np.divide(e, s, out=y[r:r + rows])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--profile", default="a3")
    a = ap.parse_args()
    x = np.random.default_rng(0).standard_normal((a.rows, 1024)).astype(np.float32)
    y = np.zeros_like(x)
    module = pto.load(ROOT / "examples" / "softmax.pto")
    strict = pto.compile(module, "reference", a.profile)
    relaxed = pto.compile(module, "reference", a.profile, strict=False)
    threaded = pto.compile(module, "reference", a.profile, threads=os.cpu_count() or 1)
    strict(x, y, a.rows)
    err = float(np.max(np.abs(y - numpy_softmax(x))))
    cores = os.cpu_count() or 1
    rows = [("numpy expression", lambda: numpy_softmax(x)),
            ("numpy, the reference's numerics (f64 exp and sums)", lambda: numpy_softmax_same_numerics(x)),
            ("numpy, the reference's numerics, 16-row tiles, no interpreter (the floor)",
             lambda: numpy_softmax_tiled(x, y)),
            ("reference backend, strict, 1 block", lambda: strict(x, y, a.rows)),
            ("reference backend, relaxed, 1 block", lambda: relaxed(x, y, a.rows)),
            (f"reference backend, strict, {cores} blocks side by side (threads={cores})",
             lambda: threaded.run("softmax", x, y, a.rows, block_num=cores))]
    times = [(name, best_of(fn, a.repeat)) for name, fn in rows]
    t_np = times[0][1]
    print(f"machine: {machine()}; calibration loop {calibration() * 1e3:.1f} ms")
    print(f"row softmax {a.rows}x1024 f32 (examples/softmax.pto, profile {a.profile}), best of {a.repeat}; "
          f"max |reference - numpy| = {err:.2e}")
    print("| implementation | time (ms) | ratio vs numpy |")
    print("|---|---:|---:|")
    for name, t in times:
        print(f"| {name} | {t * 1e3:.2f} | {t / t_np:.2f} |")
    one, spmd = times[3][1] / t_np, times[5][1] / t_np
    print(f"target <= {TARGET:.1f}x: 1 block {one:.2f}x ({'meets' if one <= TARGET else 'misses'}), "
          f"{cores} blocks {spmd:.2f}x ({'meets' if spmd <= TARGET else 'misses'})")


if __name__ == "__main__":
    main()
