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


@pytest.mark.parametrize("block_num", [1, 2])
def test_each_fault_reports_its_own_details(block_num: int) -> None:
    """The error record is kept per workspace between launches: a fault's details are its own,
    not an earlier fault's (a fresh executable reports the same text)."""
    def fault(exe: object, rows: int) -> str:      # 12 rows asked of a tensor of `rows`
        x = np.ones((rows, 8), np.float32)
        with pytest.raises(pto.PTOError) as e:
            exe.run("g", x, np.zeros((12, 8), np.float32), 12, 1.0, block_num=block_num)  # type: ignore[attr-defined]
        return str(e.value)

    exe = _exes()["llvm"]
    first, second = fault(exe, 4), fault(exe, 8)
    assert "[0, 4)" in first and "[0, 8)" in second and second == fault(_exes()["llvm"], 8)
    x = np.ones((4, 8), np.float32)
    exe.run("g", x, np.zeros_like(x), 4, 1.0, block_num=block_num)   # type: ignore[attr-defined]
    assert fault(exe, 4) == first


def test_a_one_block_launch_counts_and_traces_as_the_block_machinery_does() -> None:
    exe = _exes()["llvm"]
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    y = np.zeros_like(x)
    res = exe.run("g", x, y, 4, 0.5, trace=True)          # type: ignore[attr-defined]
    np.testing.assert_array_equal(y, x * np.float32(0.5))
    assert res.counters == {"TLOAD": 1, "TMULS": 1, "TSTORE": 1, "instructions": 3}
    (event,) = res.trace
    assert (event["name"], event["block"], event["pipe"]) == ("@g", 0, "V") and event["dur_ns"] >= 0
    assert res["y"] is y and exe.run("g", x, y, 4, 0.5).trace is None   # type: ignore[attr-defined]


def test_arguments_by_name_by_position_or_mixed_bind_alike() -> None:
    exe = _exes()["llvm"]
    x = np.ones((4, 8), np.float32)
    for args, kwargs in (((x, np.zeros_like(x), 4, 2.0), {}), ((), {"x": x, "y": np.zeros_like(x), "n": 4, "s": 2.0}),
                         ((x,), {"s": 2.0, "n": 4, "y": np.zeros_like(x)})):
        assert (exe.run("g", *args, **kwargs)["y"] == 2).all()      # type: ignore[attr-defined]
    for kwargs, code in (({"x": x, "y": x, "n": 4}, "RUNTIME_ARG_MISSING"),
                         ({"x": x, "y": x, "n": 4, "s": 1.0, "t": 1}, "RUNTIME_ARG_UNKNOWN")):
        with pytest.raises(pto.PTOError) as e:
            exe.run("g", **kwargs)                    # type: ignore[attr-defined]
        assert e.value.code == code


F32_MAX = float(np.finfo(np.float32).max)


@pytest.mark.parametrize("value", [0.1, -1.0 / 3, 1e-40, 1e-46, 16777217.0, F32_MAX, -F32_MAX,
                                   np.nextafter(F32_MAX, np.inf), 3.4028235677973366e38, 1e39,
                                   float("inf"), float("-inf"), float("nan"), 3, np.float64(0.1)])
def test_f32_scalars_are_rounded_as_numpy_rounds_them(value: float) -> None:
    from openpto.backends.arguments import Binder
    binder = Binder(pto.parse(KERNEL, filename="launch.pto").kernels[0])
    x = np.ones((4, 8), np.float32)
    got = binder.values((x, np.zeros_like(x), 4, value), {})[3]
    with np.errstate(over="ignore"):
        want = np.float64(value).astype(np.float32)
    assert type(got) is float and (got == float(want) or (np.isnan(want) and np.isnan(got)))


def test_frontend_calls_with_changing_sizes_each_get_their_own_launch_sizes() -> None:
    """A compiled function keeps its launches resolved per set of run-time sizes (16 at most):
    sizes seen before, new ones and ones evicted since all give numpy's results."""
    import openpto.frontend as fe
    rows = fe.dynamic("rows")

    @fe.jit
    def axpy(a: fe.Tensor((rows, 16), fe.DT_FP32), b: fe.Tensor((rows, 16), fe.DT_FP32)):  # noqa: ANN202
        return a * 2.0 + b

    rng = np.random.default_rng(3)
    for n in [1, 7, 16, 33, 7, 1, *range(40, 60), 7, 33, 1]:
        a, b = rng.standard_normal((2, n, 16)).astype(np.float32)
        np.testing.assert_allclose(axpy(a, b), a * np.float32(2) + b, rtol=1e-6)
    (entry,) = axpy._entries.values()
    assert len(entry.compiled._resolved) == 16


def test_frontend_arguments_by_position_name_or_default_bind_alike() -> None:
    """A call giving every parameter by position binds without inspect; by name, with a
    default, or with too many arguments it goes through the signature as before."""
    import openpto.frontend as fe

    @fe.jit
    def scaled(a: fe.Tensor((8, 16), fe.DT_FP32), k=3.0):  # noqa: ANN001, ANN202
        return a * k

    a = np.arange(128, dtype=np.float32).reshape(8, 16)
    for got, k in ((scaled(a, 3.0), 3.0), (scaled(a), 3.0), (scaled(a=a, k=0.5), 0.5), (scaled(a, 0.5), 0.5)):
        np.testing.assert_allclose(got, a * np.float32(k), rtol=1e-6)
    with pytest.raises(pto.PTOError) as e:
        scaled(a, 3.0, 4.0)
    assert e.value.code == "FRONT_ARG_COUNT"
