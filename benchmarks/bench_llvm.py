"""llvm backend speed: fused row operators, an elementwise chain and GEMM against numpy,
numba (when installed) and the reference backend, side by side in one run; plus cold and
warm compile times of the softmax kernel.

    python benchmarks/bench_llvm.py [--repeat 10] [--quick]

Targets (issue 6): fused row operators >= 2x faster than numpy; GEMM >= 0.5x numpy's
matmul speed; softmax cold compile < 0.5 s, warm (disk cache) < 10 ms. "1 block" rows run
the kernel on one core, like the numpy expressions; "N blocks" rows use every core.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the shared benchmarks/machine.py
from machine import best_of, calibration, machine  # noqa: E402
import openpto as pto  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNELS = ROOT / "benchmarks" / "kernels"
CORES = os.cpu_count() or 1



# --------------------------------------------------------------------------- numpy / numba

def np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def np_layernorm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    m = x.mean(1, keepdims=True)
    c = x - m
    return c / np.sqrt((c * c).mean(1, keepdims=True) + np.float32(eps)) * g + b


def np_rmsnorm(x: np.ndarray, g: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(1, keepdims=True) + np.float32(eps)) * g


def np_chain(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.exp((a + b) * c)


def numba_kernels() -> dict[str, Callable[..., Any]] | None:
    """Plain-loop numba versions (one thread, no fastmath), or None without numba."""
    try:
        import numba
    except ImportError:
        return None
    import math

    @numba.njit(cache=False)
    def softmax(x, y):  # noqa: ANN001, ANN202
        for i in range(x.shape[0]):
            m = x[i, 0]
            for j in range(x.shape[1]):
                m = max(m, x[i, j])
            s = np.float32(0)
            for j in range(x.shape[1]):
                e = math.exp(x[i, j] - m)
                y[i, j] = e
                s += e
            for j in range(x.shape[1]):
                y[i, j] /= s

    @numba.njit(cache=False)
    def rmsnorm(x, g, y, eps):  # noqa: ANN001, ANN202
        n = x.shape[1]
        for i in range(x.shape[0]):
            s = np.float32(0)
            for j in range(n):
                s += x[i, j] * x[i, j]
            r = np.float32(1) / math.sqrt(s / n + eps)
            for j in range(n):
                y[i, j] = x[i, j] * r * g[j]

    @numba.njit(cache=False)
    def layernorm(x, g, b, y, eps):  # noqa: ANN001, ANN202
        n = x.shape[1]
        for i in range(x.shape[0]):
            s = np.float32(0)
            for j in range(n):
                s += x[i, j]
            m = s / n
            v = np.float32(0)
            for j in range(n):
                d = x[i, j] - m
                v += d * d
            r = np.float32(1) / math.sqrt(v / n + eps)
            for j in range(n):
                y[i, j] = (x[i, j] - m) * r * g[j] + b[j]

    @numba.njit(cache=False)
    def chain(a, b, c, y):  # noqa: ANN001, ANN202
        fa, fb, fc, fy = a.ravel(), b.ravel(), c.ravel(), y.ravel()
        for k in range(fa.size):
            fy[k] = math.exp((fa[k] + fb[k]) * fc[k])

    return {"softmax": softmax, "rmsnorm": rmsnorm, "layernorm": layernorm, "chain": chain}


# --------------------------------------------------------------------------- the table

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="smaller inputs, fewer repeats (a smoke run)")
    ap.add_argument("--no-reference", action="store_true", help="skip the (slow) reference backend rows")
    a = ap.parse_args()
    rows, chain_rows, n = (256, 1024, 256) if a.quick else (4096, 16384, 1024)
    repeat = 2 if a.quick else a.repeat
    rng = np.random.default_rng(0)
    eps = 1e-5
    x = rng.standard_normal((rows, 1024)).astype(np.float32)
    g = rng.standard_normal(1024).astype(np.float32)
    bb = rng.standard_normal(1024).astype(np.float32)
    y = np.zeros_like(x)
    ca, cb, cc = (rng.standard_normal((chain_rows, 1024)).astype(np.float32) * 0.5 for _ in range(3))
    cy = np.zeros_like(ca)
    ga = rng.standard_normal((n, n)).astype(np.float32)
    gb = rng.standard_normal((n, n)).astype(np.float32)
    gc = np.zeros((n, n), dtype=np.float32)

    mods = {name: pto.load(path) for name, path in (
        ("softmax", ROOT / "examples" / "softmax.pto"), ("layernorm", ROOT / "examples" / "layernorm.pto"),
        ("rmsnorm", KERNELS / "rmsnorm.pto"), ("chain", KERNELS / "chain.pto"),
        ("gemm", ROOT / "benchmarks" / "gemm_kernel.pto"))}
    cache = tempfile.mkdtemp(prefix="pto-bench-cache-")
    exes = {k: pto.compile(m, "llvm", cache_dir=cache) for k, m in mods.items()}
    refs = {k: pto.compile(m, "reference", strict=False) for k, m in mods.items()}
    nb = numba_kernels()

    cases: list[tuple[str, Callable[[], Any], dict[str, Callable[[], Any]]]] = []

    def llvm_rows(name: str, *args: Any) -> dict[str, Callable[[], Any]]:
        exe = exes[name]
        kname = exe.kernels[0]
        out = {"llvm 1 block": lambda: exe.run(kname, *args, block_num=1)}
        if CORES > 1:
            out[f"llvm {CORES} blocks"] = lambda: exe.run(kname, *args, block_num=CORES)
        if not a.no_reference and name != "gemm":
            out["reference"] = lambda: refs[name].run(kname, *args, block_num=1)
        return out

    sm = llvm_rows("softmax", x, y, rows)
    if nb:
        sm["numba"] = lambda: nb["softmax"](x, y)
    cases.append((f"softmax {rows}x1024", lambda: np_softmax(x), sm))
    ln = llvm_rows("layernorm", x, g, bb, y, eps, rows)
    if nb:
        ln["numba"] = lambda: nb["layernorm"](x, g, bb, y, np.float32(eps))
    cases.append((f"layernorm {rows}x1024", lambda: np_layernorm(x, g, bb, eps), ln))
    rn = llvm_rows("rmsnorm", x, g, y, eps, rows)
    if nb:
        rn["numba"] = lambda: nb["rmsnorm"](x, g, y, np.float32(eps))
    cases.append((f"rmsnorm {rows}x1024", lambda: np_rmsnorm(x, g, eps), rn))
    ch = llvm_rows("chain", ca, cb, cc, cy, chain_rows)
    if nb:
        ch["numba"] = lambda: nb["chain"](ca, cb, cc, cy)
    cases.append((f"exp((a+b)*c) {chain_rows * 1024 // 2**20}M f32", lambda: np_chain(ca, cb, cc), ch))
    gm = llvm_rows("gemm", ga, gb, gc, n, n, n)
    cases.append((f"GEMM f32 {n}^3", lambda: ga @ gb, gm))

    print(f"machine: {machine()}; calibration loop {calibration() * 1e3:.1f} ms")
    print(f"best of {repeat}; ratio = numpy time / this time (above 1: faster than numpy)")
    print("| operation | implementation | time (ms) | speed vs numpy |")
    print("|---|---|---:|---:|")
    summary = []
    for label, np_fn, impls in cases:
        t_np = best_of(np_fn, repeat)
        print(f"| {label} | numpy | {t_np * 1e3:.2f} | 1.00x |")
        for impl, fn in impls.items():
            t = best_of(fn, max(1, repeat // 5) if impl == "reference" else repeat)
            print(f"| {label} | {impl} | {t * 1e3:.2f} | {t_np / t:.2f}x |")
            if impl.startswith("llvm"):
                summary.append((label, impl, t_np / t))

    # compile times of the softmax kernel: cold (LLVM runs) and warm (disk cache hit)
    colds, warms = [], []
    for _ in range(3):
        d = tempfile.mkdtemp(prefix="pto-bench-cold-")
        t = time.perf_counter()
        pto.compile(mods["softmax"], "llvm", cache_dir=d)
        colds.append(time.perf_counter() - t)
        t = time.perf_counter()
        exe = pto.compile(mods["softmax"], "llvm", cache_dir=d)
        warms.append(time.perf_counter() - t)
        assert not exe.compiled
    print(f"softmax compile: cold {min(colds) * 1e3:.0f} ms (target < 500), "
          f"warm from the disk cache {min(warms) * 1e3:.1f} ms (target < 10)")
    for label, impl, ratio in summary:
        target = 0.5 if label.startswith("GEMM") else 2.0
        if label.startswith("exp("):
            continue
        print(f"target {label} {impl}: {ratio:.2f}x vs >= {target}x: {'meets' if ratio >= target else 'misses'}")


if __name__ == "__main__":
    main()
