"""Frontend speed: the tensor frontend's kernels against the hand-written PTO-AS kernels and numpy
in one run, the frontend softmax's cold compile and its warm call overhead; one table.

    python benchmarks/bench_frontend.py [--repeat 10] [--quick]

Targets (issue 16): the seed-1 softmax on llvm within 1.25x the time of the hand-written
examples/softmax.pto on llvm (same shape, same run); a cold compile (fresh llvm cache directory,
fresh jit, empty in-process caches) under 1 s; a warm call at most 50 us above the kernel's own
run (the jit call on a tiny shape against the bare executable call of the same kernel). The
dynamic-batch seed (one compile for every batch size) and a layernorm are timed against numpy.
Every frontend result is checked against numpy before it is timed.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import itertools
import os
import pathlib
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the shared benchmarks/machine.py
from machine import best_of, calibration, machine  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from frontend_seeds import load_seed  # noqa: E402  (the seed programs: examples/frontend/)
import openpto as pto  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent

LAYERNORM = '''
import openpto.frontend as pto

@pto.jit
def layernorm(x: pto.Tensor((M, N), pto.DT_FP32), gamma: pto.Tensor((N,), pto.DT_FP32),
              beta: pto.Tensor((N,), pto.DT_FP32)) -> pto.Tensor((M, N), pto.DT_FP32):
    pto.set_vec_tile_shapes(16, 256)
    mean = pto.mean(x, -1, True)
    xc = x - mean
    var = pto.mean(xc * xc, -1, True)
    return xc * pto.rsqrt(var + 1e-5) * gamma + beta
'''

EPS = 1e-5
SOFTMAX_TARGET = 1.25          # frontend time / hand-written time
COLD_TARGET = 1.0              # seconds
OVERHEAD_TARGET = 50e-6        # seconds above the bare kernel call

_count = itertools.count()


def program(source: str, **sizes: int) -> Any:
    """The program as a module of its own (capture reads its source), sizes at module level."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="pto-bench-frontend-"))
    name = f"bench_frontend_prog_{next(_count)}"
    path = folder / f"{name}.py"
    path.write_text("".join(f"{k} = {v}\n" for k, v in sizes.items()) + source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_layernorm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    m = x.mean(1, keepdims=True)
    c = x - m
    return c / np.sqrt((c * c).mean(1, keepdims=True) + np.float32(EPS)) * g + b


def checked(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """A frontend result must equal numpy's before its time means anything."""
    if not np.allclose(got, want, rtol=1e-4, atol=1e-5):
        raise SystemExit(f"{what}: the frontend's result differs from numpy's "
                         f"(largest error {np.max(np.abs(got - want)):.3g})")


def fresh_caches() -> None:
    """Forget every compile this process holds: the jit's entries and the pipeline's modules."""
    jit_module = importlib.import_module("openpto.frontend.jit")   # the package's `jit` is the decorator
    pipeline = importlib.import_module("openpto.frontend.pipeline")
    jit_module._CACHE.clear()
    pipeline._EXECUTABLES.clear()


def cold_compile(mod: Any, x: np.ndarray, repeat: int) -> tuple[float, float]:
    """(first call, of which the llvm compile) in seconds, best of ``repeat``: each with a fresh
    llvm cache directory, a fresh jit and empty in-process caches."""
    saved = os.environ.get("OPENPTO_CACHE_DIR")
    firsts, llvms = [], []
    try:
        for _ in range(repeat):
            os.environ["OPENPTO_CACHE_DIR"] = tempfile.mkdtemp(prefix="pto-bench-cold-")
            fresh_caches()
            fn = mod.test_softmax.with_options(backend="llvm")
            t = time.perf_counter()
            fn(x)
            firsts.append(time.perf_counter() - t)
            text = fn.stages(x).kernels
            os.environ["OPENPTO_CACHE_DIR"] = tempfile.mkdtemp(prefix="pto-bench-cold-")
            module = pto.parse(text)
            t = time.perf_counter()
            pto.compile(module, "llvm", profile="cpu")
            llvms.append(time.perf_counter() - t)
    finally:
        if saved is None:
            os.environ.pop("OPENPTO_CACHE_DIR", None)
        else:
            os.environ["OPENPTO_CACHE_DIR"] = saved
    return min(firsts), min(llvms)


def per_call(fn: Callable[[], Any], calls: int, repeat: int) -> float:
    """Seconds per call of ``fn``: the best of ``repeat`` runs of ``calls`` calls each."""
    def batch() -> None:
        for _ in range(calls):
            fn()
    return best_of(batch, repeat) / calls


def bare_call(compiled: Any, arrays: dict[str, np.ndarray]) -> Callable[[], Any]:
    """The executable's own call of a one-launch compiled function (what the jit call wraps)."""
    (step,) = compiled._plan
    kwargs: dict[str, Any] = {}
    for pname, b in step.buffers:
        kwargs[pname] = arrays[b.tensor.name].reshape(int(b.rows), int(b.cols))
    kwargs[step.first], kwargs[step.count] = 0, int(step.invocations)
    run = compiled.executable.run
    return lambda: run(step.code, block_num=1, **kwargs)


def measure(quick: bool, repeat: int) -> tuple[list[dict], dict[str, float]]:
    """Rows of the table and the compile / overhead figures."""
    rows_n, cols_n = (256, 1024) if quick else (4096, 1024)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows_n, cols_n)).astype(np.float32)
    gamma = rng.standard_normal(cols_n).astype(np.float32)
    beta = rng.standard_normal(cols_n).astype(np.float32)
    y = np.empty_like(x)
    rows: list[dict] = []

    def row(case: str, impl: str, fn: Callable[[], Any], base: float | None, hand: float | None,
            reps: int = repeat) -> float:
        t = best_of(fn, reps)
        rows.append({"case": case, "impl": impl, "t": t, "numpy": base, "hand": hand})
        return t

    # softmax: numpy, hand-written, frontend (seed 1)
    seed1 = load_seed("softmax", M=rows_n, N=cols_n)
    sm = seed1.test_softmax.with_options(backend="llvm")
    checked(sm(x), np_softmax(x), "softmax")
    hand_sm = pto.compile(pto.load(str(ROOT / "examples" / "softmax.pto")), "llvm", profile="cpu")
    hand_sm.run("softmax", x, y, rows_n, block_num=1)
    checked(y, np_softmax(x), "examples/softmax.pto")
    case = f"softmax {rows_n}x{cols_n} f32"
    t_np = row(case, "numpy", lambda: np_softmax(x), None, None)
    t_hand = row(case, "hand-written examples/softmax.pto, llvm", lambda: hand_sm.run("softmax", x, y, rows_n,
                                                                                     block_num=1), t_np, None)
    t_front = row(case, "frontend seed 1, llvm", lambda: sm(x), t_np, t_hand)
    softmax_ratio = t_front / t_hand

    # layernorm: numpy, hand-written, frontend
    lnmod = program(LAYERNORM, M=rows_n, N=cols_n)
    ln = lnmod.layernorm.with_options(backend="llvm")
    checked(ln(x, gamma, beta), np_layernorm(x, gamma, beta), "layernorm")
    hand_ln = pto.compile(pto.load(str(ROOT / "examples" / "layernorm.pto")), "llvm", profile="cpu")
    case = f"layernorm {rows_n}x{cols_n} f32"
    t_np = row(case, "numpy", lambda: np_layernorm(x, gamma, beta), None, None)
    t_hand = row(case, "hand-written examples/layernorm.pto, llvm",
                 lambda: hand_ln.run("layernorm", x, gamma, beta, y, EPS, rows_n, block_num=1), t_np, None)
    row(case, "frontend, llvm", lambda: ln(x, gamma, beta), t_np, t_hand)

    # the dynamic-batch seed: one compile for every batch size
    n1, n2, dim = (8, 4, 256) if quick else (64, 8, 256)
    seed2 = load_seed("softmax_dynamic", N1=n1, N2=n2, DIM=dim)
    dyn = seed2.softmax.with_options(backend="llvm")
    for b in (1, 3, 17):
        xb = rng.standard_normal((b, n1, n2, dim)).astype(np.float32)
        ob = np.empty_like(xb)
        dyn(xb, ob)
        checked(ob, np_softmax(xb), f"seed 2, b = {b}")
        case = f"seed 2 softmax b={b} x {n1}x{n2}x{dim} f32"
        t_np = row(case, "numpy", lambda: np_softmax(xb), None, None)
        row(case, "frontend seed 2, llvm (one compile)", lambda: dyn(xb, ob), t_np, None)
    entries = {id(e) for e in dyn._entries.values()}

    # cold compile of the seed-1 softmax, warm call overhead on a tiny shape
    first, llvm = cold_compile(seed1, x, 2 if quick else 3)
    tiny_mod = load_seed("softmax", M=8, N=64)
    tiny = tiny_mod.test_softmax.with_options(backend="llvm")
    xt = rng.standard_normal((8, 64)).astype(np.float32)
    checked(tiny(xt), np_softmax(xt), "softmax 8x64")
    compiled = tiny.stages(xt).compiled
    yt = np.empty_like(xt)
    bare = bare_call(compiled, {"input": xt, "output": yt})
    bare()
    checked(yt, np_softmax(xt), "the bare call")
    calls = 50 if quick else 500
    t_jit = per_call(lambda: tiny(xt), calls, repeat)
    t_bare = per_call(bare, calls, repeat)
    figures = {"cold": first, "llvm": llvm, "jit": t_jit, "bare": t_bare, "softmax_ratio": softmax_ratio,
               "dynamic_compiles": float(len(entries))}
    return rows, figures


def verdict(ok: bool) -> str:
    return "meets" if ok else "misses"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="small inputs, few repeats (a smoke run)")
    a = ap.parse_args(argv)
    repeat = 2 if a.quick else a.repeat
    rows, f = measure(a.quick, repeat)
    print(f"machine: {machine()}; calibration loop {calibration() * 1e3:.1f} ms")
    print(f"best of {repeat}; vs numpy = numpy time / this time (above 1: faster than numpy); "
          "vs hand-written = this time / the hand-written kernel's")
    print("| case | implementation | time (ms) | vs numpy | vs hand-written |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        vs_np = "1.00x" if r["numpy"] is None else f"{r['numpy'] / r['t']:.2f}x"
        vs_hand = "" if r["hand"] is None else f"{r['t'] / r['hand']:.2f}x"
        print(f"| {r['case']} | {r['impl']} | {r['t'] * 1e3:.3f} | {vs_np} | {vs_hand} |")
    over = f["jit"] - f["bare"]
    print(f"| softmax 8x64 f32 | warm jit call | {f['jit'] * 1e3:.4f} | | |")
    print(f"| softmax 8x64 f32 | bare executable call of the same kernel | {f['bare'] * 1e3:.4f} | | |")
    print(f"seed 2: {int(f['dynamic_compiles'])} compile(s) for b = 1, 3, 17")
    print(f"target frontend softmax <= {SOFTMAX_TARGET}x the hand-written kernel: {f['softmax_ratio']:.2f}x: "
          f"{verdict(f['softmax_ratio'] <= SOFTMAX_TARGET)}")
    print(f"target cold compile < {COLD_TARGET:.0f} s: {f['cold'] * 1e3:.0f} ms (llvm {f['llvm'] * 1e3:.0f} ms "
          f"of it): {verdict(f['cold'] < COLD_TARGET)}")
    print(f"target warm call overhead < {OVERHEAD_TARGET * 1e6:.0f} us: {over * 1e6:.1f} us "
          f"({f['jit'] * 1e6:.1f} us call - {f['bare'] * 1e6:.1f} us bare): {verdict(over < OVERHEAD_TARGET)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
