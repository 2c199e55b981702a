"""Exhaustive accuracy check of the llvm backend's f32 TEXP and TLOG: every f32 input (2**32
bit patterns, or a stride through them with --step) against the correctly rounded result
(numpy's f64 function rounded once to f32), in ulp counted through the subnormals, with
infinity one step past the largest finite value. The spec bounds both at 2 ulp.

    python benchmarks/exp_accuracy.py [--step 1] [--chunk 16777216]

Prints the largest error per function, the input where it happens, and any special-value or
NaN mismatch. Takes a few minutes for all 2**32 inputs (kernel on --blocks cores).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import openpto as pto

KERNEL = """
kernel @{name}(%x : !pto.memref<?x1024xf32>, %y : !pto.memref<?x1024xf32>, %rows : index) {{
  .const %c0 = 0 : index
  .const %c16 = 16 : index
  .tile %t : !pto.tile<16x1024xf32>
  %blk = pto.get_block_idx
  %nblk = pto.get_block_num
  %first = arith.muli %blk, %c16 : index
  %stride = arith.muli %nblk, %c16 : index
  scf.for %r = %first to %rows step %stride {{
    %t = tload %x[%r, %c0] : (!pto.memref<?x1024xf32>) -> !pto.tile<16x1024xf32>
    %t = {op} %t : (!pto.tile<16x1024xf32>) -> !pto.tile<16x1024xf32>
    tstore %y[%r, %c0], %t : (!pto.memref<?x1024xf32>, !pto.tile<16x1024xf32>)
  }}
}}
"""

FUNCS = {"exp": np.exp, "log": np.log}


def ulp_index(a: np.ndarray) -> np.ndarray:
    """A monotone integer for each f32 (negative values below zero; -0 and +0 both 0)."""
    bits = a.view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)


def check(name: str, step: int, chunk: int, blocks: int) -> int:
    exe = pto.compile(pto.parse(KERNEL.format(name=name, op=f"t{name}")), "llvm")
    fn = FUNCS[name]
    worst, worst_x, bad_special = 0, 0.0, 0
    t0 = time.perf_counter()
    total = 1 << 32
    for start in range(0, total, chunk * step):
        bits = np.arange(start, min(start + chunk * step, total), step, dtype=np.uint64).astype(np.uint32)
        n = bits.size
        padded = np.zeros(-(-n // 16384) * 16384, np.uint32)     # whole 16x1024 tiles
        padded[:n] = bits
        y = np.empty((padded.size // 1024, 1024), np.float32)
        exe(x=padded.view(np.float32).reshape(-1, 1024), y=y, rows=y.shape[0], block_num=blocks)
        x, y = bits.view(np.float32), y.reshape(-1)[:n]
        with np.errstate(all="ignore"):
            want = fn(x.astype(np.float64)).astype(np.float32)
        nan_w, nan_g = np.isnan(want), np.isnan(y)
        bad_special += int(np.count_nonzero(nan_w != nan_g))
        ok = ~nan_w & ~nan_g
        err = np.abs(ulp_index(y[ok]) - ulp_index(want[ok]))
        if err.size and int(err.max()) > worst:
            k = int(err.argmax())
            worst, worst_x = int(err[k]), float(x[ok][k])
        print(f"\r{name}: {100 * min(start + chunk * step, total) / total:5.1f}%  max {worst} ulp",
              end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    print(f"{name}: max error {worst} ulp (at x = {worst_x!r}), NaN mismatches {bad_special}, "
          f"{time.perf_counter() - t0:.0f} s")
    return worst if bad_special == 0 else 99


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", type=int, default=1, help="check every STEP-th bit pattern")
    ap.add_argument("--chunk", type=int, default=1 << 24)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--only", choices=sorted(FUNCS), action="append")
    a = ap.parse_args()
    worst = max(check(f, a.step, a.chunk, a.blocks) for f in (a.only or sorted(FUNCS)))
    sys.exit(0 if worst <= 2 else 1)


if __name__ == "__main__":
    main()
