"""The embedded execution of multi-rank launches (backends/reference/comm.py): the comm
examples against numpy with 1, 2 and 4 ranks, every comm instruction across ranks, and the
faults: a missing wait (ORDER_COMM_RACE), a wait nobody satisfies (RUNTIME_COMM_DEADLOCK),
a put past the end (RUNTIME_OOB), a rank id outside the launch (RUNTIME_COMM_RANK)."""
from __future__ import annotations

import pathlib
import threading

import numpy as np
import pytest

import openpto as pto
from comm_cases import COMM, ring_args as _ring_args, ring_text as _ring_text, zeros as _zeros, WAIT

ROOT = pathlib.Path(__file__).resolve().parents[1]
rng = np.random.default_rng(19)
RANKS = [1, 2, 4]


def _exe(text_or_name: str):  # noqa: ANN202
    m = pto.load(COMM / text_or_name) if text_or_name.endswith(".pto") else pto.parse(text_or_name)
    return pto.compile(m, "reference", "cpu"), m.kernels[0].name


@pytest.mark.parametrize("n", RANKS)
def test_allreduce_example(n: int) -> None:
    exe, k = _exe("allreduce.pto")
    xs = [rng.standard_normal((16, 64)).astype(np.float32) for _ in range(n)]
    ys = _zeros((16, 64), n)
    res = exe.run(k, x=xs, buf=_zeros((16 * n, 64), n), cnt=_zeros((1,), n, np.int32), y=ys, ranks=n)
    want = np.zeros((16, 64), np.float32)
    for x in xs:                                 # f32, rank order: what the kernel's tadds compute
        want = want + x
    for y in ys:
        np.testing.assert_array_equal(y, want)
    np.testing.assert_allclose(ys[0], np.sum(np.stack(xs).astype(np.float64), axis=0), rtol=1e-5, atol=1e-5)
    assert res.outputs["y"] == ys and res.counters["TPUT"] == n * n and res.counters["TWAIT"] == n


@pytest.mark.parametrize("n", RANKS)
def test_ring_exchange_example(n: int) -> None:
    exe, k = _exe("ring_exchange.pto")
    xs = [rng.standard_normal((32, 32)).astype(np.float32) for _ in range(n)]
    ys, zs, flags = _zeros((32, 32), n), _zeros((32, 32), n), _zeros((1,), n, np.int32)
    exe.run(k, x=xs, y=ys, flag=flags, z=zs, ranks=n)
    for r in range(n):
        np.testing.assert_array_equal(ys[r], xs[(r - 1) % n])
        np.testing.assert_array_equal(zs[r], xs[(r - 1) % n] + xs[r])
        assert flags[r][0] == 1


@pytest.mark.parametrize("n", RANKS)
def test_broadcast_example(n: int) -> None:
    exe, k = _exe("broadcast.pto")
    xs = [rng.standard_normal((16, 128)).astype(np.float16) for _ in range(n)]
    ys, zs = _zeros((16, 128), n, np.float16), _zeros((16, 128), n, np.float16)
    exe.run(k, x=xs, y=ys, done=_zeros((1,), n, np.int32), z=zs, ranks=n)
    for r in range(n):
        np.testing.assert_array_equal(ys[r], xs[0])
        np.testing.assert_array_equal(zs[r], (xs[0].astype(np.float32) * 2).astype(np.float16))


@pytest.mark.parametrize("n", RANKS)
def test_tp_matmul_example(n: int) -> None:
    """Each rank multiplies by its column slice of W; every rank ends with the whole x @ W."""
    exe, k = _exe("tp_matmul.pto")
    x = rng.standard_normal((64, 128)).astype(np.float16)
    w = rng.standard_normal((128, 64 * n)).astype(np.float16)
    ys = _zeros((64, 64 * n), n)
    res = exe.run(k, x=[x.copy() for _ in range(n)], w=[np.ascontiguousarray(w[:, 64 * r:64 * r + 64]) for r in range(n)],
                  part=_zeros((64, 64), n), y=ys, cnt=_zeros((1,), n, np.int32), ranks=n)
    want = x.astype(np.float64) @ w.astype(np.float64)       # exact products, f32-sized sums
    for y in ys:
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-4)
    assert res.counters["TPUT"] == n * n and res.counters["TMATMUL"] == n


def test_a_missing_wait_is_a_race_at_the_read() -> None:
    exe, k = _exe(_ring_text(**{WAIT: ""}))
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **_ring_args(2), ranks=2)
    assert e.value.code == "ORDER_COMM_RACE" and e.value.location.line is not None
    assert "tload %y" in (e.value.location.source_line or "") and "rank 0 wrote" in e.value.message


def test_a_notify_before_the_put_releases_nothing() -> None:
    put = "  tput %y[%c0, %c0], %x[%c0, %c0], %next : (!pto.memref<32x32xf32>, !pto.memref<32x32xf32>, index)\n"
    notify = "  tnotify %flag[%c0], %one, %next {op = #pto.notify_op<Set>} : (!pto.memref<1xi32>, i32, index)\n"
    exe, k = _exe(_ring_text(**{put + notify: notify + put}))
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **_ring_args(2), ranks=2)
    assert e.value.code == "ORDER_COMM_RACE"


ADDS = """kernel @adds(%x : !pto.memref<8x16xf32>, %acc : !pto.memref<8x16xf32>, %cnt : !pto.memref<1xi32>,
                  %first : !pto.memref<1xi32>, %y : !pto.memref<8x16xf32>) {
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %one = 1 : i32
  %me = pto.get_rank
  %n = pto.get_rank_num
  %root = arith.subi %n, %c1 : index
  tput %acc[%c0, %c0], %x[%c0, %c0], %root {atomicType = #pto.atomic<ADD>} : (!pto.memref<8x16xf32>, !pto.memref<8x16xf32>, index)
  tnotify %cnt[%c0], %one, %root {op = #pto.notify_op<AtomicAdd>} : (!pto.memref<1xi32>, i32, index)
  %zero = arith.cmpi eq, %me, %c0 : index
  scf.if %zero {
    tnotify %first[%c0], %one, %root {op = #pto.notify_op<Set>} : (!pto.memref<1xi32>, i32, index)
  }
  %last = arith.cmpi eq, %me, %root : index
  scf.if %last {
    WAIT
    %t = tload %acc[%c0, %c0] : (!pto.memref<8x16xf32>) -> !pto.tile<8x16xf32>
    tstore %y[%c0, %c0], %t
  }
}
"""
ALL = "%n32 = arith.index_cast %n : index to i32\n    twait %cnt[%c0], %n32 {cmp = #pto.cmp<GE>} : (!pto.memref<1xi32>, i32)"
FIRST = "twait %first[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32)"


def _adds_args(n: int) -> dict[str, list[np.ndarray]]:
    return {"x": [np.full((8, 16), 2.0 ** r, np.float32) for r in range(n)], "acc": _zeros((8, 16), n),
            "cnt": _zeros((1,), n, np.int32), "first": _zeros((1,), n, np.int32), "y": _zeros((8, 16), n)}


@pytest.mark.parametrize("n", [2, 3, 4])
def test_unordered_add_puts_to_one_element_are_atomic_not_a_race(n: int) -> None:
    """Every rank ADD-puts into the last rank's acc with no order among them (decision 'Comm
    memory model': ADD puts are atomic with respect to each other); the last rank reads acc
    once every adder's notify has reached it."""
    exe, k = _exe(ADDS.replace("WAIT", ALL))
    args = _adds_args(n)
    exe.run(k, **args, ranks=n)
    np.testing.assert_array_equal(args["y"][n - 1], np.full((8, 16), 2.0 ** n - 1, np.float32))


def test_a_read_ordered_after_only_some_adders_races_with_the_others() -> None:
    """The last rank waits only for rank 0's signal: rank 1's ADD put is not visible to it."""
    exe, k = _exe(ADDS.replace("WAIT", FIRST))
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **_adds_args(3), ranks=3)
    assert e.value.code == "ORDER_COMM_RACE" and "which rank 1 wrote" in e.value.message
    assert "tload %acc" in (e.value.location.source_line or "")


def test_a_plain_put_after_unordered_add_puts_races() -> None:
    """Rank 1 overwrites acc after its ADD put: rank 0's ADD put is not ordered before it."""
    add = "(!pto.memref<8x16xf32>, !pto.memref<8x16xf32>, index)\n"
    plain = ("  %one_ = arith.cmpi eq, %me, %c1 : index\n  scf.if %one_ {\n"
             "    tput %acc[%c0, %c0], %x[%c0, %c0], %root : " + add + "  }\n")
    exe, k = _exe(ADDS.replace("WAIT", ALL).replace(add, add + plain, 1))
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **_adds_args(3), ranks=3)
    assert e.value.code == "ORDER_COMM_RACE" and "rank 1 writes" in e.value.message
    assert "which rank 0 wrote" in e.value.message


def test_a_single_rank_ring_needs_no_wait_to_read_its_own_put() -> None:
    exe, k = _exe(_ring_text(**{WAIT: ""}))
    args = _ring_args(1)
    exe.run(k, **args, ranks=1)
    np.testing.assert_array_equal(args["y"][0], args["x"][0])


@pytest.mark.parametrize("n", [1, 3])
def test_a_wait_no_rank_satisfies_is_a_deadlock_naming_every_waiter(n: int) -> None:
    exe, k = _exe(_ring_text(**{"%one {cmp = #pto.cmp<EQ>}": "%one {cmp = #pto.cmp<GT>}"}))
    done = threading.Event()
    box: list[BaseException] = []

    def go() -> None:
        try:
            exe.run(k, **_ring_args(n), ranks=n)
        except BaseException as e:     # noqa: BLE001
            box.append(e)
        done.set()
    threading.Thread(target=go, daemon=True).start()
    assert done.wait(60), "the deadlocked run hung"
    (e,) = box
    assert isinstance(e, pto.PTOError) and e.code == "RUNTIME_COMM_DEADLOCK"
    for r in range(n):
        assert f"rank {r} waits on TWAIT signal %flag until GT 1 (now [1])" in str(e.actual)
    assert e.location.line is not None


def test_a_put_past_the_end_of_the_remote_tensor_writes_nothing() -> None:
    # a run-time row (rank + 1): a constant one is refused by the verifier already (STRUCT_OOB)
    with pytest.raises(pto.PTOError) as e:
        _exe(_ring_text(**{"tput %y[%c0, %c0]": "tput %y[%c1, %c0]"}))
    assert e.value.code == "STRUCT_OOB" and e.value.actual == "[1, 33)"
    exe, k = _exe(_ring_text(**{"tput %y[%c0, %c0]": "tput %y[%after, %c0]"}))
    args = _ring_args(2)
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **args, ranks=2)
    assert e.value.code == "RUNTIME_OOB" and "[1, 33)" in str(e.value.actual)
    assert not any(y.any() for y in args["y"])


def test_a_rank_id_outside_the_launch() -> None:
    exe, k = _exe(_ring_text(**{"%next = arith.remsi %after, %n : index": "%next = arith.addi %after, %c0 : index"}))
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **_ring_args(2), ranks=2)
    assert e.value.code == "RUNTIME_COMM_RANK" and e.value.actual == 2 and "[0, 2)" in e.value.expected


def test_launch_arguments_of_a_multi_rank_run() -> None:
    exe, k = _exe("ring_exchange.pto")
    args = _ring_args(2)
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **dict(args, x=args["x"][0]), ranks=2)
    assert e.value.code == "RUNTIME_ARG_TYPE" and "one array per rank" in e.value.message
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **dict(args, x=args["x"][:1]), ranks=2)
    assert e.value.code == "RUNTIME_ARG_TYPE"
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **dict(args, y=[args["y"][0], args["y"][0]]), ranks=2)
    assert e.value.code == "RUNTIME_ARG_OVERLAP"
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **dict(args, x=[args["x"][0], np.asfortranarray(args["x"][1])]), ranks=2)
    assert e.value.code == "RUNTIME_ARG_STRIDES"
    for bad in (0, 257, 1.5, True):
        with pytest.raises(pto.PTOError) as e:
            exe.run(k, **args, ranks=bad)
        assert e.value.code == "PTO_RANKS"


COLLECTIVES = """
kernel @coll(%x : !pto.memref<8x16xi32>, %red : !pto.memref<8x16xi32>, %gat : !pto.memref<?x16xi32>,
             %sc : !pto.memref<8x16xi32>, %big : !pto.memref<?x16xi32>, %done : !pto.memref<1xi32>,
             %mx : !pto.memref<8x16xi32>) {
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %one = 1 : i32
  %me = pto.get_rank
  %n = pto.get_rank_num
  %root = arith.cmpi eq, %me, %c0 : index
  scf.if %root {
    treduce %red[%c0, %c0], %x[%c0, %c0] {op = #pto.reduce_op<Sum>} : (!pto.memref<8x16xi32>, !pto.memref<8x16xi32>)
    treduce %mx[%c0, %c0], %x[%c0, %c0] {op = #pto.reduce_op<Max>} : (!pto.memref<8x16xi32>, !pto.memref<8x16xi32>)
    tgather_comm %gat[%c0, %c0], %x[%c0, %c0] : (!pto.memref<?x16xi32>, !pto.memref<8x16xi32>)
    tscatter_comm %sc[%c0, %c0], %big[%c0, %c0] : (!pto.memref<8x16xi32>, !pto.memref<?x16xi32>)
    scf.for %p = %c0 to %n step %c1 {
      tnotify %done[%c0], %one, %p {op = #pto.notify_op<Set>} : (!pto.memref<1xi32>, i32, index)
    }
  }
  twait %done[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32)
}
"""


@pytest.mark.parametrize("n", RANKS)
def test_collectives_against_numpy(n: int) -> None:
    exe, k = _exe(COLLECTIVES)
    i32 = np.int32
    xs = [rng.integers(-2**31, 2**31, (8, 16), dtype=np.int64).astype(i32) for _ in range(n)]
    big = [rng.integers(-100, 100, (8 * n + 3, 16)).astype(i32) for _ in range(n)]
    out = {"red": _zeros((8, 16), n, i32), "gat": [np.full((8 * n + 2, 16), 7, i32) for _ in range(n)],
           "sc": _zeros((8, 16), n, i32), "mx": _zeros((8, 16), n, i32)}
    exe.run(k, x=xs, big=big, done=_zeros((1,), n, i32), **out, ranks=n)
    wrapped = (np.sum(np.stack(xs).astype(np.int64), axis=0) + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(out["red"][0], wrapped.astype(i32))
    np.testing.assert_array_equal(out["mx"][0], np.max(np.stack(xs), axis=0))
    np.testing.assert_array_equal(out["gat"][0][:8 * n], np.concatenate(xs))
    assert (out["gat"][0][8 * n:] == 7).all()                       # rows past ranks*H untouched
    for r in range(n):
        np.testing.assert_array_equal(out["sc"][r], big[0][8 * r:8 * r + 8])
    for r in range(1, n):
        assert not out["red"][r].any()                              # only the root's dst is written


POLL = """
kernel @poll(%x : !pto.memref<4x8xf32>, %y : !pto.memref<4x8xf32>, %flag : !pto.memref<2xi32>,
             %seen : !pto.memref<1x8xi32>) {
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %c8 = 8 : index
  .const %one = 1 : i32
  .const %z = 0 : i32
  %me = pto.get_rank
  %is0 = arith.cmpi eq, %me, %c0 : index
  scf.if %is0 {
    scf.for %i = %c0 to %c8 step %c1 {
      %ok = ttest %flag[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<2xi32>, i32) -> i1
      %v = arith.select %ok, %one, %z : i32
      .tile %t : !pto.tile<1x8xi32>
      %t = texpands %v : (i32) -> !pto.tile<1x8xi32>
      tstore %seen[%c0, %c0], %t
    }
    %a = tload %y[%c0, %c0] : (!pto.memref<4x8xf32>) -> !pto.tile<4x8xf32>
    tstore %x[%c0, %c0], %a
  } else {
    tput %y[%c0, %c0], %x[%c0, %c0], %c0 : (!pto.memref<4x8xf32>, !pto.memref<4x8xf32>, index)
    tnotify %flag[%c0], %one, %c0 {op = #pto.notify_op<Set>} : (!pto.memref<2xi32>, i32, index)
    tnotify %flag[%c1], %one, %c0 {op = #pto.notify_op<Set>} : (!pto.memref<2xi32>, i32, index)
  }
}
"""


def test_ttest_polls_and_a_true_test_acquires() -> None:
    exe, k = _exe(POLL)
    xs = [np.zeros((4, 8), np.float32), np.arange(32, dtype=np.float32).reshape(4, 8)]
    ys = _zeros((4, 8), 2)
    seen = _zeros((1, 8), 2, np.int32)
    exe.run(k, x=xs, y=ys, flag=_zeros((2,), 2, np.int32), seen=seen, ranks=2)
    assert seen[0][0, 0] == 1                           # the last poll saw both signals set
    np.testing.assert_array_equal(xs[0], xs[1])         # rank 0 read rank 1's put after the true test


def test_blocks_of_a_rank_are_agents_of_their_own() -> None:
    """Two blocks of rank 0 both put into rank 1's y, unordered: a write-write race between blocks."""
    exe, k = _exe("ring_exchange.pto")
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **_ring_args(2), ranks=2, block_num=2)
    assert e.value.code == "ORDER_COMM_RACE"
    assert "rank 0 (block 1) writes" in e.value.message and "rank 0 (block 0) wrote" in e.value.message


def test_a_run_without_ranks_is_the_one_rank_world() -> None:
    exe, k = _exe("ring_exchange.pto")
    x, y, z = np.ones((32, 32), np.float32), np.zeros((32, 32), np.float32), np.zeros((32, 32), np.float32)
    res = exe.run(k, x=x, y=y, flag=np.zeros(1, np.int32), z=z)
    np.testing.assert_array_equal(z, 2 * x)
    assert res.outputs["z"] is z


def test_the_python_sample_of_docs_comm_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    monkeypatch.chdir(ROOT)
    (block,) = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "comm.md").read_text(), re.S)
    exec(compile(block, "docs/comm.md", "exec"), {})         # noqa: S102 - our own documentation


@pytest.mark.parametrize("n", [3, 4])
def test_treduce_sum_of_bf16_rounds_once(n: int) -> None:
    """bf16 (an ml_dtypes type numpy does not call floating) sums wide and rounds once."""
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    m = "!pto.memref<1x16xbf16>"
    exe, k = _exe(f"kernel @r(%g : {m}, %d : {m}) {{\n  .const %c0 = 0 : index\n"
                  f"  treduce %d[%c0, %c0], %g[%c0, %c0] {{op = #pto.reduce_op<Sum>}} : ({m}, {m})\n}}\n")
    vals = [[446.0, -1648.0, 254.0, 0.0][:n], [28.375, -72.0, 253.0, 0.0][:n]]
    gs = [np.array([[vals[0][r], vals[1][r]] + [0.0] * 14], bf16) for r in range(n)]
    ds = _zeros((1, 16), n, bf16)
    exe.run(k, g=gs, d=ds, ranks=n)
    want = np.sum(np.stack([g.astype(np.float64) for g in gs]), axis=0).astype(bf16)
    np.testing.assert_array_equal(ds[0].astype(np.float64), want.astype(np.float64))
    assert float(ds[0][0, 0]) == -948.0 and float(ds[0][0, 1]) == 209.0


def test_aliased_symmetric_parameters_on_one_rank_are_refused() -> None:
    exe, k = _exe("ring_exchange.pto")
    args = _ring_args(2)
    args["y"][1] = args["x"][1]                          # rank 1's y is its x
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **args, ranks=2)
    assert e.value.code == "RUNTIME_ARG_OVERLAP" and "%x and %y share memory on rank 1" in e.value.message


def test_a_keyword_scalar_equal_to_a_positional_one_binds_by_name() -> None:
    m = "!pto.memref<1xi32>"
    exe, k = _exe(f"kernel @s(%sig : {m}, %v : i32, %w : i32, %u : i32) {{\n  .const %c0 = 0 : index\n"
                  f"  tnotify %sig[%c0], %w, %c0 {{op = #pto.notify_op<AtomicAdd>}} : ({m}, i32, index)\n"
                  f"  tnotify %sig[%c0], %u, %c0 {{op = #pto.notify_op<AtomicAdd>}} : ({m}, i32, index)\n}}\n")
    sig = _zeros((1,), 2, np.int32)
    exe.run(k, sig, 5, u=5, w=9, ranks=2)                  # 5 given twice: once by place, once by name
    assert int(sig[0][0]) == 2 * (9 + 5) and int(sig[1][0]) == 0


def test_tile_arguments_shared_between_ranks_are_refused() -> None:
    exe, k = _exe("kernel @t(%t : !pto.tile<8x8xf32>) {\n  .const %c = 1.0 : f32\n"
                  "  %t = texpands %c : (f32) -> !pto.tile<8x8xf32>\n}\n")
    t = np.zeros((8, 8), np.float32)
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, t=[t, t], ranks=2)
    assert e.value.code == "RUNTIME_ARG_OVERLAP" and "tile %t" in e.value.message


def test_too_many_agents_for_an_embedded_launch() -> None:
    exe, k = _exe("ring_exchange.pto")
    with pytest.raises(pto.PTOError) as e:
        exe.run(k, **_ring_args(2), ranks=2, block_num=5000)
    assert e.value.code == "PTO_RANKS" and "2 x 5000" in e.value.actual
