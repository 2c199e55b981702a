"""The ascend_sim backend's speed in simulated instructions per second, next to the reference
backend's instruction rate on the same kernels in the same run.

    python benchmarks/bench_ascend_sim.py [--repeat 5] [--profile a3]
    python benchmarks/bench_ascend_sim.py --quick        # small inputs, one timed run (the test's)

Kernels: examples/double_buffer_copy.pto (hand-written flags, flag-heavy: 8 of 11 statements in
its loop are flags), examples/softmax.pto synchronised by ``assembler.autosync`` (what
``pto sync`` prints: a realistic flagged program with heavy vector work) and
benchmarks/kernels/vector_add_blocks.pto, also synchronised, over many blocks (a launch placed
on the AIV cores in two waves, with HBM shared: its transfers are re-timed until the shares settle). Per kernel the rows are the reference backend, then ascend_sim with values
and race checks (the default), with values and ``hazards="off"``, timing only
(``values=False``, race checks on) and timing only without race checks. Targets (issue 15):
timing only >= 100,000 simulated instructions/s; with values, at most 1.5x the reference's time.
An instruction is every executed tile, flag and barrier instruction (``Result.counters
["instructions"]``); the two backends count the same ones (checked), and ascend_sim's outputs
are checked equal to the reference's.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the shared benchmarks/machine.py
from machine import best_of, calibration, machine  # noqa: E402
import openpto as pto  # noqa: E402
from openpto.assembler.autosync import autosync  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
TIMING_TARGET = 100_000        # simulated instructions per second, timing only
VALUES_TARGET = 1.5            # ascend_sim with values: at most this times the reference's time

#: (row label, backend, compile options, target): the rows each kernel gets, in order
MODES: list[tuple[str, str, dict[str, Any], str]] = [
    ("reference", "reference", {}, ""),
    ("ascend_sim, values + race checks", "ascend_sim", {}, "values"),
    ("ascend_sim, values, hazards off", "ascend_sim", {"hazards": "off"}, ""),
    ("ascend_sim, timing only + race checks", "ascend_sim", {"values": False}, "timing"),
    ("ascend_sim, timing only, hazards off", "ascend_sim", {"values": False, "hazards": "off"}, "timing"),
]


def kernels(quick: bool, profile: str) -> list[tuple[str, Any, str, Callable[[], dict[str, Any]], int]]:
    """(label, module, kernel name, fresh arguments, block_num) per benchmarked kernel."""
    rng = np.random.default_rng(0)
    copy_rows = 320 if quick else 12_800
    soft_rows = 96 if quick else 2048
    blocks, per = (4, 32) if quick else (96, 64)
    src = rng.standard_normal((copy_rows, 512)).astype(np.float32)
    x = rng.standard_normal((soft_rows, 1024)).astype(np.float32)
    a = rng.standard_normal((blocks * per, 1024)).astype(np.float32)
    b = rng.standard_normal((blocks * per, 1024)).astype(np.float32)
    softmax, vadd = (pto.parse(autosync(pto.load(ROOT / path), profile).to_text())
                     for path in ("examples/softmax.pto", "benchmarks/kernels/vector_add_blocks.pto"))
    return [
        (f"double_buffer_copy {copy_rows}x512 f32", pto.load(ROOT / "examples" / "double_buffer_copy.pto"),
         "double_buffer_copy", lambda: {"src": src, "dst": np.zeros_like(src), "rows": copy_rows}, 1),
        (f"softmax {soft_rows}x1024 f32, pto sync", softmax, "softmax",
         lambda: {"x": x, "y": np.zeros_like(x), "rows": soft_rows}, 1),
        (f"vector_add {blocks} blocks x {per}x1024 f32, pto sync", vadd, "vector_add_blocks",
         lambda: {"a": a, "b": b, "c": np.zeros_like(a), "per": per}, blocks),
    ]


def measure(quick: bool, profile: str, repeat: int) -> list[dict[str, Any]]:
    """One dict per (kernel, mode): instructions, best time, rate, ratio to the reference."""
    rows = []
    for label, module, name, make, blocks in kernels(quick, profile):
        ref_out: dict[str, np.ndarray] = {}
        ref_time = ref_count = 0.0
        for mode, backend, options, target in MODES:
            exe = pto.compile(module, backend, profile, **options)
            args = make()
            res = exe.run(name, block_num=blocks, **args)
            count = res.counters["instructions"]
            if backend == "reference":
                ref_out, ref_time, ref_count = res.outputs, 0.0, count
            elif count != ref_count:
                raise SystemExit(f"{label}, {mode}: {count} instructions, the reference ran {ref_count}")
            same = None
            if backend != "reference" and options.get("values", True):
                same = all(np.array_equal(res.outputs[k], v, equal_nan=True) for k, v in ref_out.items())
            t = best_of(lambda: exe.run(name, block_num=blocks, **args), repeat)
            if backend == "reference":
                ref_time = t
            rows.append({"kernel": label, "mode": mode, "instructions": count, "seconds": t,
                         "rate": count / t, "ratio": t / ref_time, "target": target, "same": same,
                         "cycles": getattr(res, "cycles", None)})
    return rows


def verdict(row: dict[str, Any]) -> str:
    if row["target"] == "timing":
        return f"{'meets' if row['rate'] >= TIMING_TARGET else 'misses'} >= {TIMING_TARGET // 1000}k/s"
    if row["target"] == "values":
        return f"{'meets' if row['ratio'] <= VALUES_TARGET else 'misses'} <= {VALUES_TARGET}x"
    return ""


def table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| kernel | backend / mode | instructions | time (ms) | instructions/s | time vs reference | target |",
           "|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append(f"| {r['kernel']} | {r['mode']} | {r['instructions']} | {r['seconds'] * 1e3:.2f} | "
                   f"{r['rate']:,.0f} | {r['ratio']:.2f}x | {verdict(r)} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", default="a3")
    ap.add_argument("--quick", action="store_true", help="small inputs and one timed run (a smoke test)")
    a = ap.parse_args(argv)
    repeat = 1 if a.quick else a.repeat
    before = calibration()
    rows = measure(a.quick, a.profile, repeat)
    after = calibration()
    print(f"machine: {machine()}; calibration loop {before * 1e3:.1f} ms before, {after * 1e3:.1f} ms after")
    print(f"profile {a.profile}, best of {repeat}; instructions = executed tile, flag and barrier instructions")
    print("\n".join(table(rows)))
    same = all(r["same"] for r in rows if r["same"] is not None)
    print(f"ascend_sim's outputs equal the reference's: {'yes' if same else 'NO'}")
    timing = [r for r in rows if r["target"] == "timing"]
    values = [r for r in rows if r["target"] == "values"]
    print(f"timing only: {min(r['rate'] for r in timing):,.0f} .. {max(r['rate'] for r in timing):,.0f} "
          f"instructions/s (target >= {TIMING_TARGET:,}); values + race checks: "
          f"{min(r['ratio'] for r in values):.2f}x .. {max(r['ratio'] for r in values):.2f}x the reference's "
          f"time (target <= {VALUES_TARGET}x)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
