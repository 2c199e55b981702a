"""The comm family on the llvm backend (backends/llvm/commhook.py): native code calling back into
the run's World. Every example of examples/comm with 1, 2 and 4 ranks against numpy and the
reference backend's embedded run; every comm instruction across ranks; the faults (a missing
wait, a wait nobody satisfies, a put past the end, a rank outside the launch) with the
embedded execution's codes; ``world=``; nothing hangs."""
from __future__ import annotations

import copy
import pathlib
import threading
from typing import Any, Callable

import numpy as np
import pytest

import openpto as pto
from openpto.isa.attrs import CmpMode, NotifyOp
from openpto.isa.world import SoloWorld, World, satisfied
from comm_cases import COMM, ring_args as _ring_args, ring_text as _ring_text, zeros as _zeros, WAIT

ROOT = pathlib.Path(__file__).resolve().parents[1]
RANKS = [1, 2, 4]
rng = np.random.default_rng(1919)


def _compile(text_or_name: str, backend: str = "llvm") -> tuple[Any, str]:
    m = pto.load(COMM / text_or_name) if text_or_name.endswith(".pto") else pto.parse(text_or_name)
    return pto.compile(m, backend, "cpu"), m.kernels[0].name


def _finishes(fn: Callable[[], Any], seconds: float = 60) -> Any:
    """``fn()`` on a thread: its result or exception, failing the test if it has not ended in time."""
    box: list[Any] = []
    done = threading.Event()

    def go() -> None:
        try:
            box.append(("ok", fn()))
        except BaseException as e:       # noqa: BLE001 - handed to the test
            box.append(("err", e))
        done.set()
    threading.Thread(target=go, daemon=True).start()
    assert done.wait(seconds), "the run hung"
    kind, value = box[0]
    if kind == "err":
        raise value
    return value


def _both(text_or_name: str, args: dict[str, Any], n: int, exact: bool = True, **kw: Any) -> dict[str, Any]:
    """Run on llvm and on the reference backend (each on its own copy of ``args``); every array
    must come out the same. Returns llvm's arguments after the run."""
    out = {}
    for backend in ("llvm", "reference"):
        exe, k = _compile(text_or_name, backend)
        mine = copy.deepcopy(args)
        res = _finishes(lambda: exe.run(k, **mine, ranks=n, **kw))
        out[backend] = (mine, res)
    (got, res), (want, ref) = out["llvm"], out["reference"]
    for name in args:
        for r in range(n):
            if exact:
                np.testing.assert_array_equal(got[name][r], want[name][r], err_msg=f"%{name} of rank {r}")
            else:
                np.testing.assert_allclose(got[name][r], want[name][r], rtol=1e-6, atol=1e-5)
    assert res.counters == ref.counters
    assert all(res.outputs[k] == got[k] for k in res.outputs)
    return got


# ----------------------------------------------------------------------------- the examples

def _allreduce(n: int) -> tuple[dict[str, Any], Callable[[dict[str, Any]], None]]:
    xs = [rng.standard_normal((16, 64)).astype(np.float32) for _ in range(n)]
    args = {"x": xs, "buf": _zeros((16 * n, 64), n), "cnt": _zeros((1,), n, np.int32), "y": _zeros((16, 64), n)}

    def check(a: dict[str, Any]) -> None:
        want = np.zeros((16, 64), np.float32)
        for x in xs:                                 # f32 in rank order, as the kernel's tadds
            want = want + x
        for y in a["y"]:
            np.testing.assert_array_equal(y, want)
        assert all(c[0] == n for c in a["cnt"])
    return args, check


def _ring(n: int) -> tuple[dict[str, Any], Callable[[dict[str, Any]], None]]:
    xs = [rng.standard_normal((32, 32)).astype(np.float32) for _ in range(n)]
    args = {"x": xs, "y": _zeros((32, 32), n), "flag": _zeros((1,), n, np.int32), "z": _zeros((32, 32), n)}

    def check(a: dict[str, Any]) -> None:
        for r in range(n):
            np.testing.assert_array_equal(a["y"][r], xs[(r - 1) % n])
            np.testing.assert_array_equal(a["z"][r], xs[(r - 1) % n] + xs[r])
    return args, check


def _broadcast(n: int) -> tuple[dict[str, Any], Callable[[dict[str, Any]], None]]:
    xs = [rng.standard_normal((16, 128)).astype(np.float16) for _ in range(n)]
    args = {"x": xs, "y": _zeros((16, 128), n, np.float16), "done": _zeros((1,), n, np.int32),
            "z": _zeros((16, 128), n, np.float16)}

    def check(a: dict[str, Any]) -> None:
        for r in range(n):
            np.testing.assert_array_equal(a["y"][r], xs[0])
            np.testing.assert_array_equal(a["z"][r], (xs[0].astype(np.float32) * 2).astype(np.float16))
    return args, check


def _tp_matmul(n: int) -> tuple[dict[str, Any], Callable[[dict[str, Any]], None]]:
    x = rng.standard_normal((64, 128)).astype(np.float16)
    w = rng.standard_normal((128, 64 * n)).astype(np.float16)
    args = {"x": [x.copy() for _ in range(n)],
            "w": [np.ascontiguousarray(w[:, 64 * r:64 * r + 64]) for r in range(n)],
            "part": _zeros((64, 64), n), "y": _zeros((64, 64 * n), n), "cnt": _zeros((1,), n, np.int32)}

    def check(a: dict[str, Any]) -> None:
        want = x.astype(np.float64) @ w.astype(np.float64)
        for y in a["y"]:
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-4)
    return args, check


EXAMPLES: dict[str, Callable[[int], tuple[dict[str, Any], Callable[[dict[str, Any]], None]]]] = {
    "allreduce.pto": _allreduce, "ring_exchange.pto": _ring, "broadcast.pto": _broadcast,
    "tp_matmul.pto": _tp_matmul}
#: the llvm matmul may sum in another order than the reference's (the sum contract)
INEXACT = {"tp_matmul.pto"}


def test_every_example_has_a_check() -> None:
    assert {p.name for p in COMM.glob("*.pto")} <= set(EXAMPLES)


@pytest.mark.parametrize("n", RANKS)
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_equal_numpy_and_the_reference(name: str, n: int) -> None:
    if not (COMM / name).exists():
        pytest.skip(f"{name} is not in examples/comm")
    args, check = EXAMPLES[name](n)
    check(_both(name, args, n, exact=name not in INEXACT))


# ----------------------------------------------------------------------------- every instruction

P2P = """
kernel @p2p(%a : !pto.memref<4x8xf32>, %b : !pto.memref<4x8xf32>, %c : !pto.memref<4x8xf32>,
            %d : !pto.memref<4x8xf32>, %h : !pto.memref<4x8xf16>, %acc16 : !pto.memref<4x8xf16>,
            %ia : !pto.memref<4x8xi32>, %iacc : !pto.memref<4x8xi32>, %s0 : !pto.memref<1xi32>,
            %s1 : !pto.memref<1xi32>, %s2 : !pto.memref<1xi32>, %res : !pto.memref<2x8xi32>) {
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %c2 = 2 : index
  .const %one = 1 : i32
  .const %two = 2 : i32
  .const %zero = 0 : i32
  .const %minus = -1 : i32
  %me = pto.get_rank
  %n = pto.get_rank_num
  %after = arith.addi %me, %c1 : index
  %next = arith.remsi %after, %n : index
  %e = tput_async %b[%c0, %c0], %a[%c0, %c0], %next : (!pto.memref<4x8xf32>, !pto.memref<4x8xf32>, index)
  tsync %e
  tnotify %s0[%c0], %one, %next {op = #pto.notify_op<Set>} : (!pto.memref<1xi32>, i32, index)
  scf.for %k = %c0 to %c2 step %c1 {
    tput %acc16[%c0, %c0], %h[%c0, %c0], %next {atomicType = #pto.atomic<ADD>} : (!pto.memref<4x8xf16>, !pto.memref<4x8xf16>, index)
    tput %iacc[%c0, %c0], %ia[%c0, %c0], %next {atomicType = #pto.atomic<ADD>} : (!pto.memref<4x8xi32>, !pto.memref<4x8xi32>, index)
  }
  scf.for %p = %c0 to %n step %c1 {
    tnotify %s1[%c0], %one, %p {op = #pto.notify_op<AtomicAdd>} : (!pto.memref<1xi32>, i32, index)
    tnotify %s2[%c0], %minus, %p {op = #pto.notify_op<AtomicAdd>} : (!pto.memref<1xi32>, i32, index)
  }
  %n32 = arith.index_cast %n : index to i32
  %n1 = arith.subi %n32, %one : i32
  %low = arith.subi %zero, %n32 : i32
  %low1 = arith.addi %low, %one : i32
  twait %s0[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32)
  twait %s0[%c0], %zero {cmp = #pto.cmp<NE>} : (!pto.memref<1xi32>, i32)
  twait %s1[%c0], %n32 {cmp = #pto.cmp<GE>} : (!pto.memref<1xi32>, i32)
  twait %s1[%c0], %n1 {cmp = #pto.cmp<GT>} : (!pto.memref<1xi32>, i32)
  twait %s2[%c0], %low {cmp = #pto.cmp<LE>} : (!pto.memref<1xi32>, i32)
  twait %s2[%c0], %low1 {cmp = #pto.cmp<LT>} : (!pto.memref<1xi32>, i32)
  %yes = ttest %s0[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32) -> i1
  %no = ttest %s0[%c0], %two {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32) -> i1
  %vy = arith.select %yes, %one, %zero : i32
  %vn = arith.select %no, %one, %zero : i32
  .tile %t : !pto.tile<1x8xi32>
  %t = texpands %vy : (i32) -> !pto.tile<1x8xi32>
  tstore %res[%c0, %c0], %t
  %t = texpands %vn : (i32) -> !pto.tile<1x8xi32>
  tstore %res[%c1, %c0], %t
  tget %c[%c0, %c0], %a[%c0, %c0], %next : (!pto.memref<4x8xf32>, !pto.memref<4x8xf32>, index)
  %g = tget_async %d[%c0, %c0], %b[%c0, %c0], %me : (!pto.memref<4x8xf32>, !pto.memref<4x8xf32>, index)
  tsync %g
}
"""


@pytest.mark.parametrize("n", RANKS)
def test_point_to_point_and_signals_against_numpy(n: int) -> None:
    """Async put and get, plain get, ADD puts (f16 adding in f32 and rounding once per put, i32
    wrapping), SET and AtomicAdd notifies (a negative add too), TWAIT in all six compare modes,
    TTEST true and false. Each location takes ADD puts from one rank only: the embedded race
    check counts unordered ADD puts of two ranks to one element as a write-write race."""
    a = [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(n)]
    h = [(rng.standard_normal((4, 8)) * 100).astype(np.float16) for _ in range(n)]
    ia = [np.full((4, 8), 2**30 + r, np.int32) for r in range(n)]
    acc0 = rng.standard_normal((4, 8)).astype(np.float16)
    args = {"a": a, "b": _zeros((4, 8), n), "c": _zeros((4, 8), n), "d": _zeros((4, 8), n), "h": h,
            "acc16": [acc0.copy() for _ in range(n)], "ia": ia, "iacc": _zeros((4, 8), n, np.int32),
            "s0": _zeros((1,), n, np.int32), "s1": _zeros((1,), n, np.int32), "s2": _zeros((1,), n, np.int32),
            "res": _zeros((2, 8), n, np.int32)}
    got = _both(P2P, args, n)
    for r in range(n):
        p = (r - 1) % n           # the previous rank adds its h twice, its ia twice
        acc = acc0
        for _ in range(2):
            acc = (acc.astype(np.float32) + h[p].astype(np.float32)).astype(np.float16)
        isum = (2 * (2**30 + p) + 2**31) % 2**32 - 2**31
        np.testing.assert_array_equal(got["b"][r], a[(r - 1) % n])
        np.testing.assert_array_equal(got["d"][r], a[(r - 1) % n])
        np.testing.assert_array_equal(got["c"][r], a[(r + 1) % n])
        np.testing.assert_array_equal(got["acc16"][r], acc)
        assert (got["iacc"][r] == isum).all()
        assert got["s0"][r][0] == 1 and got["s1"][r][0] == n and got["s2"][r][0] == -n
        assert (got["res"][r][0] == 1).all() and (got["res"][r][1] == 0).all()


COLLECTIVES = """
kernel @coll(%x : !pto.memref<8x16xi32>, %red : !pto.memref<8x16xi32>, %mx : !pto.memref<8x16xi32>,
             %mn : !pto.memref<8x16xi32>, %gat : !pto.memref<?x16xi32>, %sc : !pto.memref<8x16xi32>,
             %big : !pto.memref<?x16xi32>, %hb : !pto.memref<4x32xf16>, %hy : !pto.memref<4x32xf16>,
             %done : !pto.memref<1xi32>) {
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %one = 1 : i32
  %me = pto.get_rank
  %n = pto.get_rank_num
  %root = arith.cmpi eq, %me, %c0 : index
  scf.if %root {
    treduce %red[%c0, %c0], %x[%c0, %c0] {op = #pto.reduce_op<Sum>} : (!pto.memref<8x16xi32>, !pto.memref<8x16xi32>)
    treduce %mx[%c0, %c0], %x[%c0, %c0] {op = #pto.reduce_op<Max>} : (!pto.memref<8x16xi32>, !pto.memref<8x16xi32>)
    treduce %mn[%c0, %c0], %x[%c0, %c0] {op = #pto.reduce_op<Min>} : (!pto.memref<8x16xi32>, !pto.memref<8x16xi32>)
    tgather_comm %gat[%c0, %c0], %x[%c0, %c0] : (!pto.memref<?x16xi32>, !pto.memref<8x16xi32>)
    tscatter_comm %sc[%c0, %c0], %big[%c0, %c0] : (!pto.memref<8x16xi32>, !pto.memref<?x16xi32>)
    tbroadcast %hy[%c0, %c0], %hb[%c0, %c0] : (!pto.memref<4x32xf16>, !pto.memref<4x32xf16>)
    scf.for %p = %c0 to %n step %c1 {
      tnotify %done[%c0], %one, %p {op = #pto.notify_op<Set>} : (!pto.memref<1xi32>, i32, index)
    }
  }
  twait %done[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32)
}
"""


@pytest.mark.parametrize("n", RANKS)
def test_collectives_against_numpy(n: int) -> None:
    i32 = np.int32
    xs = [rng.integers(-2**31, 2**31, (8, 16), dtype=np.int64).astype(i32) for _ in range(n)]
    big = [rng.integers(-100, 100, (8 * n + 3, 16)).astype(i32) for _ in range(n)]
    hb = [rng.standard_normal((4, 32)).astype(np.float16) for _ in range(n)]
    args = {"x": xs, "red": _zeros((8, 16), n, i32), "mx": _zeros((8, 16), n, i32), "mn": _zeros((8, 16), n, i32),
            "gat": [np.full((8 * n + 2, 16), 7, i32) for _ in range(n)], "sc": _zeros((8, 16), n, i32),
            "big": big, "hb": hb, "hy": _zeros((4, 32), n, np.float16), "done": _zeros((1,), n, i32)}
    got = _both(COLLECTIVES, args, n)
    stack = np.stack(xs).astype(np.int64)
    np.testing.assert_array_equal(got["red"][0], ((stack.sum(axis=0) + 2**31) % 2**32 - 2**31).astype(i32))
    np.testing.assert_array_equal(got["mx"][0], stack.max(axis=0))
    np.testing.assert_array_equal(got["mn"][0], stack.min(axis=0))
    np.testing.assert_array_equal(got["gat"][0][:8 * n], np.concatenate(xs))
    assert (got["gat"][0][8 * n:] == 7).all()
    for r in range(n):
        np.testing.assert_array_equal(got["sc"][r], big[0][8 * r:8 * r + 8])
        np.testing.assert_array_equal(got["hy"][r], hb[0])
    for r in range(1, n):
        assert not got["red"][r].any() and not got["mx"][r].any()


def test_a_polling_ttest_lets_the_other_ranks_run_and_acquires() -> None:
    poll = """
kernel @poll(%x : !pto.memref<4x8xf32>, %y : !pto.memref<4x8xf32>, %flag : !pto.memref<1xi32>,
             %tries : !pto.memref<1x8xi32>) {
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %c8 = 8 : index
  .const %one = 1 : i32
  .const %z = 0 : i32
  %me = pto.get_rank
  %is0 = arith.cmpi eq, %me, %c0 : index
  scf.if %is0 {
    %seen = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %z) -> (i32) {
      %ok = ttest %flag[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32) -> i1
      %v = arith.select %ok, %one, %z : i32
      %s = arith.addi %acc, %v : i32
      scf.yield %s : i32
    }
    .tile %t : !pto.tile<1x8xi32>
    %t = texpands %seen : (i32) -> !pto.tile<1x8xi32>
    tstore %tries[%c0, %c0], %t
    %a = tload %y[%c0, %c0] : (!pto.memref<4x8xf32>) -> !pto.tile<4x8xf32>
    tstore %x[%c0, %c0], %a
  } else {
    tput %y[%c0, %c0], %x[%c0, %c0], %c0 : (!pto.memref<4x8xf32>, !pto.memref<4x8xf32>, index)
    tnotify %flag[%c0], %one, %c0 {op = #pto.notify_op<Set>} : (!pto.memref<1xi32>, i32, index)
  }
}
"""
    xs = [np.zeros((4, 8), np.float32), np.arange(32, dtype=np.float32).reshape(4, 8)]
    args = {"x": xs, "y": _zeros((4, 8), 2), "flag": _zeros((1,), 2, np.int32), "tries": _zeros((1, 8), 2, np.int32)}
    got = _both(poll, args, 2)
    assert got["tries"][0][0, 0] == 7           # the first test was false (rank 1 had not run), the rest true
    np.testing.assert_array_equal(got["x"][0], xs[1])


VIEWS = """
kernel @views(%x : !pto.memref<16x32xf32>, %y : !pto.memref<16x32xf32>, %f : !pto.memref<1xi32>, %row : index) {
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %one = 1 : i32
  %me = pto.get_rank
  %n = pto.get_rank_num
  %a = arith.addi %me, %c1 : index
  %next = arith.remsi %a, %n : index
  %src = pto.partition_view %x, offsets = [%row, 0], sizes = [8, 32] : !pto.memref<16x32xf32> -> !pto.memref<8x32xf32>
  %dst = pto.partition_view %y, offsets = [%row, 0], sizes = [8, 32] : !pto.memref<16x32xf32> -> !pto.memref<8x32xf32>
  tput %dst[%c0, %c0], %src[%c0, %c0], %next : (!pto.memref<8x32xf32>, !pto.memref<8x32xf32>, index)
  tnotify %f[%c0], %one, %next {op = #pto.notify_op<Set>} : (!pto.memref<1xi32>, i32, index)
  twait %f[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32)
  %t = tload %dst[%c0, %c0] : (!pto.memref<8x32xf32>) -> !pto.tile<8x32xf32>
  tstore %x[%c0, %c0], %t
}
"""


@pytest.mark.parametrize("n", [2, 3])
def test_views_of_symmetric_tensors_as_comm_operands(n: int) -> None:
    """A put between partition views (run-time row), read back through the view after the wait."""
    xs = [rng.standard_normal((16, 32)).astype(np.float32) for _ in range(n)]
    args = {"x": [x.copy() for x in xs], "y": _zeros((16, 32), n), "f": _zeros((1,), n, np.int32)}
    got = _both(VIEWS, args, n, row=8)
    for r in range(n):
        np.testing.assert_array_equal(got["y"][r][8:], xs[(r - 1) % n][8:])
        assert not got["y"][r][:8].any()
        np.testing.assert_array_equal(got["x"][r][:8], xs[(r - 1) % n][8:])
    e = _error_of(VIEWS.replace("  twait %f[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32)\n", ""),
                  dict(args, x=[x.copy() for x in xs]), n, row=8)
    assert e.code == "ORDER_COMM_RACE" and "tload %dst" in (e.location.source_line or "")


# ----------------------------------------------------------------------------- faults

def _error(text: str, n: int, **kw: Any) -> pto.PTOError:
    """The error of an llvm run of a ring variant, checked to be the reference's."""
    return _error_of(text, _ring_args(n), n, **kw)


def _error_of(text: str, args: dict[str, Any], n: int, **kw: Any) -> pto.PTOError:
    """The error of an llvm run, checked to be the reference's (code, message, location, expected, actual)."""
    errors = []
    for backend in ("llvm", "reference"):
        exe, k = _compile(text, backend)
        mine = copy.deepcopy(args)
        with pytest.raises(pto.PTOError) as e:
            _finishes(lambda: exe.run(k, **mine, ranks=n, **kw))
        errors.append(e.value)
    got, want = errors
    assert (got.code, got.message, got.expected, got.actual) == (want.code, want.message, want.expected, want.actual)
    assert (got.location.line, got.location.col) == (want.location.line, want.location.col)
    return got


def test_a_missing_wait_is_a_race_at_the_read() -> None:
    e = _error(_ring_text(**{WAIT: ""}), 2)
    assert e.code == "ORDER_COMM_RACE" and "tload %y" in (e.location.source_line or "")
    assert "rank 1 reads" in e.message and "rank 0 wrote" in e.message


def test_two_blocks_of_a_rank_writing_one_element_race() -> None:
    e = _error(_ring_text(), 2, block_num=2)
    assert e.code == "ORDER_COMM_RACE" and "rank 0 (block 1) writes" in e.message


@pytest.mark.parametrize("n", [1, 3])
def test_a_wait_no_rank_satisfies_is_a_deadlock_naming_the_rank_and_signal(n: int) -> None:
    e = _error(_ring_text(**{"%one {cmp = #pto.cmp<EQ>}": "%one {cmp = #pto.cmp<GT>}"}), n)
    assert e.code == "RUNTIME_COMM_DEADLOCK" and "twait" in (e.location.source_line or "")
    for r in range(n):
        assert f"rank {r} waits on TWAIT signal %flag until GT 1 (now [1])" in str(e.actual)


def test_a_rank_id_outside_the_launch() -> None:
    e = _error(_ring_text(**{"%next = arith.remsi %after, %n : index": "%next = arith.addi %after, %c0 : index"}), 2)
    assert e.code == "RUNTIME_COMM_RANK" and e.actual == 2 and "[0, 2)" in str(e.expected)


def test_a_put_past_the_end_of_the_remote_tensor_writes_nothing() -> None:
    text = _ring_text(**{"tput %y[%c0, %c0]": "tput %y[%after, %c0]"})     # a run-time row: rank + 1
    e = _error(text, 2)
    assert e.code == "RUNTIME_OOB" and "[1, 33)" in str(e.actual)
    exe, k = _compile(text)
    args = _ring_args(2)
    with pytest.raises(pto.PTOError):
        exe.run(k, **args, ranks=2)
    assert not any(y.any() for y in args["y"])


def test_launch_arguments_get_the_embedded_codes() -> None:
    exe, k = _compile("ring_exchange.pto")
    args = _ring_args(2)
    for bad, code in ((dict(args, x=args["x"][0]), "RUNTIME_ARG_TYPE"), (dict(args, x=args["x"][:1]), "RUNTIME_ARG_TYPE"),
                      (dict(args, y=[args["y"][0], args["y"][0]]), "RUNTIME_ARG_OVERLAP"),
                      (dict(args, x=[args["x"][0], np.asfortranarray(args["x"][1])]), "RUNTIME_ARG_STRIDES")):
        with pytest.raises(pto.PTOError) as e:
            exe.run(k, **bad, ranks=2)
        assert e.value.code == code
    for ranks in (0, 257, 1.5, True):
        with pytest.raises(pto.PTOError) as e:
            exe.run(k, **args, ranks=ranks)
        assert e.value.code == "PTO_RANKS"


# ----------------------------------------------------------------------------- one rank, world=

def test_a_run_without_ranks_is_the_one_rank_world() -> None:
    exe, k = _compile("ring_exchange.pto")
    x, y, z = np.full((32, 32), 3, np.float32), np.zeros((32, 32), np.float32), np.zeros((32, 32), np.float32)
    res = exe.run(k, x=x, y=y, flag=np.zeros(1, np.int32), z=z)
    np.testing.assert_array_equal(z, 2 * x)
    assert res.outputs["z"] is z and res.counters["TPUT"] == 1
    with pytest.raises(pto.PTOError) as e:           # only rank 0 exists: a wait it cannot satisfy
        _compile(_ring_text(**{"%one {cmp = #pto.cmp<EQ>}": "%one {cmp = #pto.cmp<GT>}"}))[0].run(
            k, x=x, y=y, flag=np.zeros(1, np.int32), z=z)
    assert e.value.code == "RUNTIME_COMM_DEADLOCK" and e.value.location.line is not None


class _Loopback(World):
    """Rank ``rank`` of ``size`` where every peer's memory is this rank's own: records the calls."""

    def __init__(self, rank: int, size: int) -> None:
        self.rank, self.size, self.calls = rank, size, []
        self._solo = SoloWorld()

    def get(self, view: np.ndarray, peer: int, what: str) -> np.ndarray:
        self.calls.append(("get", self.check_peer(peer, what)))
        return np.array(view, copy=True)

    def put(self, view: np.ndarray, peer: int, values: np.ndarray, what: str, add: bool = False) -> None:
        self.calls.append(("put", self.check_peer(peer, what)))
        view[...] = values

    def notify(self, view: np.ndarray, peer: int, value: int, op: NotifyOp, what: str) -> None:
        self.calls.append(("notify", self.check_peer(peer, what), op.name))
        self._solo.notify(view, 0, value, op, what)

    def wait(self, view: np.ndarray, cmp: CmpMode, value: int, what: str) -> None:
        self.calls.append(("wait", cmp.name, int(value)))
        assert satisfied(view, cmp, value)

    def test(self, view: np.ndarray, cmp: CmpMode, value: int, what: str) -> bool:
        return satisfied(view, cmp, value)


def test_world_gives_the_rank_and_takes_every_comm_call() -> None:
    exe, k = _compile("ring_exchange.pto")
    w = _Loopback(2, 3)
    x, y, z = np.full((32, 32), 5, np.float32), np.zeros((32, 32), np.float32), np.zeros((32, 32), np.float32)
    exe.run(k, x=x, y=y, flag=np.zeros(1, np.int32), z=z, world=w)
    # get_rank = 2, get_rank_num = 3: the next rank is 0; the put reads its local source through get
    assert w.calls == [("get", 2), ("put", 0), ("notify", 0, "SET"), ("wait", "EQ", 1)]
    np.testing.assert_array_equal(z, 2 * x)


class _Refusing(_Loopback):
    """A world whose puts fail (as an MPI world's would for a rank it does not have)."""

    def put(self, view: np.ndarray, peer: int, values: np.ndarray, what: str, add: bool = False) -> None:
        self.check_peer(7, what)


def test_a_worlds_error_comes_out_of_the_run_at_the_instruction() -> None:
    exe, k = _compile("ring_exchange.pto")
    z = np.zeros((32, 32), np.float32)
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, x=np.ones((32, 32), np.float32), y=np.zeros((32, 32), np.float32), flag=np.zeros(1, np.int32),
                z=z, world=_Refusing(0, 2))
    assert e.value.code == "RUNTIME_COMM_RANK" and "tput" in (e.value.location.source_line or "")
    assert e.value.message.startswith("TPUT: ") and not z.any()       # the kernel stopped there


def test_world_and_ranks_are_checked() -> None:
    exe, k = _compile("ring_exchange.pto")
    args = _ring_args(1)
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **args, ranks=1, world=_Loopback(0, 1))
    assert e.value.code == "PTO_RANKS"
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **{n: v[0] for n, v in args.items()}, world="rank 0")
    assert e.value.code == "PTO_API_TYPE"


def test_cached_code_calls_back_too(tmp_path: pathlib.Path) -> None:
    m = pto.load(COMM / "ring_exchange.pto")
    cold = pto.compile(m, "llvm", cache_dir=tmp_path)
    warm = pto.compile(pto.load(COMM / "ring_exchange.pto"), "llvm", cache_dir=tmp_path)
    assert cold.compiled and not warm.compiled
    args, check = _ring(2)
    warm.run("ring_exchange", **args, ranks=2)
    check(args)
    with pytest.raises(pto.PTOError) as e:       # the source position of a cached fault is this module's
        warm.run("ring_exchange", **_ring_args(3), ranks=2)
    assert e.value.code == "RUNTIME_ARG_TYPE"


def test_checked_mode_runs_ranks() -> None:
    exe = pto.compile(pto.load(COMM / "allreduce.pto"), "llvm", checked=True)
    args, check = _allreduce(2)
    exe.run("allreduce", **args, ranks=2)
    check(args)


class _Threaded(World):
    """One rank whose blocks run at once (as an MPI world's may): signals under a condition
    variable, a wait that gives up after a few seconds; records accesses and aborts."""

    concurrent_blocks = True

    def __init__(self) -> None:
        self.rank, self.size = 0, 1
        self.cv = threading.Condition()
        self.accesses: list[tuple[str, bool]] = []
        self.aborted = 0

    def get(self, view: np.ndarray, peer: int, what: str) -> np.ndarray:
        with self.cv:
            return np.array(view, copy=True)

    def put(self, view: np.ndarray, peer: int, values: np.ndarray, what: str, add: bool = False) -> None:
        with self.cv:
            view[...] = values

    def notify(self, view: np.ndarray, peer: int, value: int, op: NotifyOp, what: str) -> None:
        with self.cv:
            SoloWorld().notify(view, 0, value, op, what)
            self.cv.notify_all()

    def wait(self, view: np.ndarray, cmp: CmpMode, value: int, what: str) -> None:
        with self.cv:
            if not self.cv.wait_for(lambda: satisfied(view, cmp, value) or self.aborted, timeout=10):
                raise pto.PTOError("RUNTIME_COMM_DEADLOCK", f"{what} never satisfied")
            if self.aborted:
                raise pto.PTOError("RUNTIME_COMM_ABORTED", f"{what}: another block failed")

    def test(self, view: np.ndarray, cmp: CmpMode, value: int, what: str) -> bool:
        with self.cv:
            return satisfied(view, cmp, value)

    def access(self, view: np.ndarray, write: bool, what: str) -> None:
        self.accesses.append((what, write))

    def abort(self) -> None:
        with self.cv:
            self.aborted += 1
            self.cv.notify_all()


BLOCKS = """
kernel @blocks(%x : !pto.memref<4x8xf32>, %y : !pto.memref<4x8xf32>, %z : !pto.memref<4x8xf32>,
               %sig : !pto.memref<1xi32>, %row : index) {
  .const %c0 = 0 : index
  .const %one = 1 : i32
  %b = pto.get_block_idx
  %me = pto.get_rank
  %first = arith.cmpi eq, %b, %c0 : index
  scf.if %first {
    twait %sig[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32)
    %t = tload %y[%c0, %c0] : (!pto.memref<4x8xf32>) -> !pto.tile<4x8xf32>
    tstore %z[%c0, %c0], %t
  } else {
    tput %y[%row, %c0], %x[%c0, %c0], %me : (!pto.memref<4x8xf32>, !pto.memref<4x8xf32>, index)
    tnotify %sig[%c0], %one, %me {op = #pto.notify_op<Set>} : (!pto.memref<1xi32>, i32, index)
  }
}
"""


def test_world_blocks_run_at_once_when_the_world_allows() -> None:
    """Block 0 waits for what block 1 of the same rank puts and notifies: only blocks running at
    once can do that. The world that checks accesses is told of the TLOAD and TSTORE."""
    exe, k = _compile(BLOCKS)
    w = _Threaded()
    x = rng.standard_normal((4, 8)).astype(np.float32)
    y, z = np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32)
    _finishes(lambda: exe.run(k, x=x, y=y, z=z, sig=np.zeros(1, np.int32), row=0, block_num=2, world=w))
    np.testing.assert_array_equal(z, x)
    assert ("TLOAD operand 'src'", False) in w.accesses and ("TSTORE operand 'dst'", True) in w.accesses
    assert w.aborted == 0


def test_a_failing_block_aborts_the_world_so_its_sibling_stops_waiting() -> None:
    exe, k = _compile(BLOCKS)
    w = _Threaded()
    x = np.ones((4, 8), np.float32)
    with pytest.raises(pto.PTOError) as e:            # row 1: the put's window leaves %y
        _finishes(lambda: exe.run(k, x=x, y=np.zeros((4, 8), np.float32), z=np.zeros((4, 8), np.float32),
                                  sig=np.zeros(1, np.int32), row=1, block_num=2, world=w), seconds=30)
    assert e.value.code == "RUNTIME_OOB" and w.aborted >= 1
