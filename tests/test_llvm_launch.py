"""The launch path's shortcuts (backends/arrays.py, arguments.py, llvm run) change nothing a caller
sees: a C-contiguous array's layout is judged as the full check judges it, a kernel's workspace
kept between launches gives each launch its own counters and results, float scalars reach the
kernel exactly, and the frontend's launches give what they gave."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import openpto as pto
from openpto.backends.arrays import layout_problem

T = "!pto.tile<4x8xf32>"
G = "!pto.memref<?x8xf32>"
KERNEL = f"""
kernel @g(%x : {G}, %y : {G}, %n : index, %s : f32) {{
  .tile %t : {T}
  scf.for %i = 0 to %n step 4 {{
    %t = tload %x[%i, 0] : ({G}) -> {T}
    %t = tmuls %t, %s : ({T}, f32) -> {T}
    tstore %y[%i, 0], %t : ({G}, {T})
  }}
}}
"""


def _exes() -> dict[str, object]:
    module = pto.parse(KERNEL, filename="launch.pto")
    return {b: pto.compile(module, b, "cpu") for b in ("reference", "llvm")}


def _code(exe: object, x: np.ndarray) -> str | None:
    try:
        exe.run("g", x, np.zeros((4, 8), np.float32), 4, 1.0)   # type: ignore[attr-defined]
    except pto.PTOError as e:
        return e.code
    return None


def test_contiguous_layout_problems_are_still_found() -> None:
    raw = np.zeros(4096, np.uint8)
    misaligned = np.ndarray((4, 8), np.float32, raw, offset=2)          # C-contiguous, odd address
    assert misaligned.flags.c_contiguous and not misaligned.flags.aligned
    odd_unit = np.ndarray((1, 4, 8), np.float32, raw, strides=(6, 32, 4))  # size-1 dim, stride 6 bytes
    assert odd_unit.flags.c_contiguous
    assert layout_problem(misaligned).code == "RUNTIME_ARG_ALIGN"
    assert layout_problem(odd_unit).code == "RUNTIME_ARG_STRIDES"
    assert layout_problem(np.zeros((4, 8), np.float32)) is None
    assert layout_problem(np.zeros((0, 8), np.float32)) is None
    for exe in _exes().values():
        assert _code(exe, misaligned) == "RUNTIME_ARG_ALIGN"


def test_repeated_launches_count_and_compute_each_on_their_own() -> None:
    exe = _exes()["llvm"]
    rng = np.random.default_rng(1)
    for n, s in ((8, 0.1), (4, -3.0), (16, 1e-30), (8, 0.1)):
        x = rng.standard_normal((n, 8)).astype(np.float32)
        y = np.full_like(x, np.nan)
        res = exe.run("g", x, y, n, s)          # type: ignore[attr-defined]
        np.testing.assert_array_equal(y, x * np.float32(s))      # the f32 scalar exactly
        assert res.counters["TLOAD"] == n // 4 and res.counters["TMULS"] == n // 4


def test_launches_from_several_threads_keep_their_own_workspace() -> None:
    exe = _exes()["llvm"]
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for i in range(50):
                x = np.full((8, 8), k * 100 + i, np.float32)
                y = np.zeros_like(x)
                res = exe.run("g", x, y, 8, 2.0, block_num=3)     # type: ignore[attr-defined]
                assert (y == x * 2).all() and res.counters["TLOAD"] == 6
        except BaseException as e:       # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_trace_events_one_per_block() -> None:
    exe = _exes()["llvm"]
    x = np.ones((4, 8), np.float32)
    res = exe.run("g", x, np.zeros_like(x), 4, 1.5, block_num=3, trace=True)   # type: ignore[attr-defined]
    assert [e["block"] for e in res.trace] == [0, 1, 2] and res.counters["TLOAD"] == 3


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_a_fault_after_good_launches_is_still_reported(backend: str) -> None:
    exe = _exes()[backend]
    x = np.ones((4, 8), np.float32)
    exe.run("g", x, np.zeros_like(x), 4, 1.0)          # type: ignore[attr-defined]
    with pytest.raises(pto.PTOError) as e:             # rows past the end of x: an out-of-bounds load
        exe.run("g", x, np.zeros_like(x), 8, 1.0)      # type: ignore[attr-defined]
    assert e.value.code.startswith("RUNTIME_")
    exe.run("g", x, np.zeros_like(x), 4, 1.0)          # type: ignore[attr-defined]
