"""The first timing of a launch's blocks (``replay.FirstPass``): each block records its ops while
its values run and is timed after, one engine run per distinct op stream. Every block must come
out as if it had been issued on its own engine as it ran: the same cycles, busy cycles,
transfers (on its own ops) and races; and an error must be the one an instruction-by-instruction
issue would meet first."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import openpto as pto
from openpto.backends.ascend_sim import replay
from openpto.backends.ascend_sim.engine import Engine
from openpto.backends.ascend_sim.hazards import Shadow

T = "!pto.tile<32x256xf32>"
M = "!pto.memref<?x256xf32>"


def _vadd(flags: bool, tail: str = "") -> str:
    """c = a + b over 32 rows in even blocks and 64 in odd ones (two op streams); without
    ``flags`` the loads, the add and the store race. ``tail`` runs after the loop."""
    sync = {"load": "", "add": "", "store": ""}
    if flags:
        sync = {"load": "    set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0\n    wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0\n",
                "add": "    set_flag #pto.pipe<V>, #pto.pipe<MTE3>, 0\n    wait_flag #pto.pipe<V>, #pto.pipe<MTE3>, 0\n",
                "store": "    set_flag #pto.pipe<MTE3>, #pto.pipe<MTE2>, 0\n    wait_flag #pto.pipe<MTE3>, #pto.pipe<MTE2>, 0\n"}
    return f"""kernel @vadd(%a : {M}, %b : {M}, %c : {M}, %per : index, %far : index) {{
  .const %c0 = 0 : index
  .const %c2 = 2 : index
  .const %c32 = 32 : index
  .tile %ta : {T}
  .tile %tb : {T}
  .tile %tc : {T}
  %blk = pto.get_block_idx
  %r0 = arith.muli %blk, %per : index
  %odd = arith.remui %blk, %c2 : index
  %extra = arith.muli %odd, %c32 : index
  %r1a = arith.addi %r0, %c32 : index
  %r1 = arith.addi %r1a, %extra : index
  scf.for %r = %r0 to %r1 step %c32 {{
    %ta = tload %a[%r, %c0] : ({M}) -> {T}
    %tb = tload %b[%r, %c0] : ({M}) -> {T}
{sync["load"]}    %tc = tadd %ta, %tb : ({T}, {T}) -> {T}
{sync["add"]}    tstore %c[%r, %c0], %tc : ({M}, {T})
{sync["store"]}  }}
{tail}}}"""


def _args(blocks: int, far: int = 0) -> tuple[Any, ...]:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((blocks * 64, 256)).astype(np.float32)
    b = rng.standard_normal((blocks * 64, 256)).astype(np.float32)
    return a, b, np.zeros_like(a), 64, far


@pytest.mark.parametrize("flags", [True, False])
def test_each_block_is_timed_as_if_issued_on_its_own_engine(flags: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    timed: list[tuple[int, list[Any], Shadow, Any, list[str]]] = []
    timers: list[replay.FirstPass] = []
    real = replay.FirstPass.time

    def spy(self: replay.FirstPass, b: int, ops: list[Any], shadow: Shadow) -> Any:
        got, pending = real(self, b, ops, shadow)
        timed.append((b, ops, shadow, got, pending))
        if self not in timers:
            timers.append(self)
        return got, pending
    monkeypatch.setattr(replay.FirstPass, "time", spy)
    exe = pto.compile(pto.parse(_vadd(flags)), "ascend_sim", "a3")
    a, b, c, per, far = _args(6)
    res = exe.run("vadd", a, b, c, per, far, block_num=6)
    for blk in range(6):                                  # the values: 32 rows in even blocks, 64 in odd
        rows = slice(blk * 64, blk * 64 + (64 if blk % 2 else 32))
        np.testing.assert_array_equal(c[rows], a[rows] + b[rows])
    (timer,) = timers
    assert len(timer.runs) == 2 and timer.shape == [0, 1, 0, 1, 0, 1]     # two streams, each run once
    races = 0
    for blk, ops, shadow, got, pending in timed:
        own = Shadow("vadd", "collect", shadow.describe)
        eng = Engine(exe.machine, "vadd", own, None, blk)
        for op in ops:
            eng.issue(op)
        assert eng.finish() == pending
        assert (got.cycles(), got.busy, got.transfers) == (eng.cycles(), eng.busy, eng.transfers)
        assert [h.message for h in shadow.hazards] == [h.message for h in own.hazards]
        races += len(own.hazards)
    assert (races > 0) == (not flags) and res.counters["races"] >= races   # (and the blocks' shared rows: none)


def test_a_race_before_a_failing_instruction_is_raised_first() -> None:
    """Unsynchronised, the first block's add races with its loads; after the loop a load far out
    of bounds faults. Issued as it runs, the race comes first: so it does in a launch."""
    tail = f"  %tb = tload %b[%far, %c0] : ({M}) -> {T}\n"
    for blocks in (1, 3):
        exe = pto.compile(pto.parse(_vadd(False, tail)), "ascend_sim", "a3", hazards="raise")
        with pytest.raises(pto.PTOError) as e:
            exe.run("vadd", *_args(blocks, far=10_000), block_num=blocks)
        assert e.value.code == "ORDER_RACE"
    exe = pto.compile(pto.parse(_vadd(True, tail)), "ascend_sim", "a3", hazards="raise")
    with pytest.raises(pto.PTOError) as e:                 # synchronised: the fault itself
        exe.run("vadd", *_args(3, far=10_000), block_num=3)
    assert e.value.code == "RUNTIME_OOB"


def test_a_deadlock_before_a_failing_instruction_is_raised_first() -> None:
    tail = (f"  wait_flag #pto.pipe<V>, #pto.pipe<S>, %odd\n"      # a run-time id: no static check
            f"  %tb = tload %b[%far, %c0] : ({M}) -> {T}\n")
    exe = pto.compile(pto.parse(_vadd(True, tail)), "ascend_sim", "a3")
    for blocks in (1, 3):
        with pytest.raises(pto.PTOError) as e:
            exe.run("vadd", *_args(blocks, far=10_000), block_num=blocks)
        assert e.value.code == "ORDER_DEADLOCK"
        assert "S (the scalar unit) waits on flag (V -> S, id 0)" in str(e.value.notes)


def test_a_block_whose_windows_move_unlike_the_first_ones_is_checked_itself() -> None:
    """Every block runs the same op stream; block b stores rows of %a at (n - 1 - b) * 16 and then,
    with no flag from MTE3 to MTE2, loads rows b * 16: only the middle block loads what it just
    stored. Its windows are not the first block's moved by one offset, so its own race is found
    although the first block, whose timing it shares, has none."""
    t = "!pto.tile<16x64xf32>"
    m = "!pto.memref<?x64xf32>"
    text = f"""kernel @k(%x : {m}, %a : {m}) {{
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %c16 = 16 : index
  .tile %t : {t}
  .tile %u : {t}
  %blk = pto.get_block_idx
  %n = pto.get_block_num
  %last = arith.subi %n, %c1 : index
  %back = arith.subi %last, %blk : index
  %s = arith.muli %back, %c16 : index
  %l = arith.muli %blk, %c16 : index
  %t = tload %x[%l, %c0] : ({m}) -> {t}
  set_flag #pto.pipe<MTE2>, #pto.pipe<MTE3>, 0
  wait_flag #pto.pipe<MTE2>, #pto.pipe<MTE3>, 0
  tstore %a[%s, %c0], %t : ({m}, {t})
  %u = tload %a[%l, %c0] : ({m}) -> {t}
}}"""
    exe = pto.compile(pto.parse(text), "ascend_sim", "a3")
    x = np.ones((48, 64), np.float32)                 # (each block reads its own rows: no L2 hit)
    res = exe.run("k", x, np.zeros((48, 64), np.float32), block_num=3)
    own = [h.message for h in res.hazards if h.message.endswith("no flag or barrier orders them")]
    assert own == ["TSTORE (MTE3, line 16) writes %a[16, 0] and TLOAD (MTE2, line 17) reads %a[16, 0]: both touch "
                   "global %a bytes [4096, 8192) and no flag or barrier orders them"]
    across = [h.message for h in res.hazards if "in block" in h.message]
    assert across                                   # blocks 0 and 2 meet on each other's rows too


def test_a_block_whose_tile_moves_next_to_a_shared_one_is_checked_itself() -> None:
    """The blocks of a launch share their tiles' regions (the same ``Access`` objects, as the
    tiles sit at the same addresses). Block b places %u by TASSIGN at (1 - b) * 4096 bytes of
    UB, and %t stays at 0: block 0 keeps them apart and has no race, block 1 puts %u on %t, so
    its load of %t overwrites what its store still reads. Its %t region is block 0's object and
    its %u region is moved: the blocks' accesses are not one shift of each other, and block 1's
    race must be found by checking its own accesses."""
    t = "!pto.tile<16x64xf32>"
    m = "!pto.memref<?x64xf32>"
    text = f"""kernel @k(%x : {m}, %a : {m}) {{
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %c16 = 16 : index
  .const %c4096 = 4096 : index
  .tile %t : {t}
  .tile %u : {t}
  %blk = pto.get_block_idx
  %l = arith.muli %blk, %c16 : index
  %free = arith.subi %c1, %blk : index
  %at = arith.muli %free, %c4096 : index
  %u = tassign %at : (index) -> {t}
  %u = tload %x[%l, %c0] : ({m}) -> {t}
  set_flag #pto.pipe<MTE2>, #pto.pipe<MTE3>, 0
  wait_flag #pto.pipe<MTE2>, #pto.pipe<MTE3>, 0
  tstore %a[%l, %c0], %u : ({m}, {t})
  %t = tload %x[%l, %c0] : ({m}) -> {t}
}}"""
    exe = pto.compile(pto.parse(text), "ascend_sim", "a3")
    x = np.ones((32, 64), np.float32)
    res = exe.run("k", x, np.zeros((32, 64), np.float32), block_num=2)
    races = [h.message for h in res.hazards if h.code == "ORDER_RACE"]
    assert races == ["TSTORE (MTE3, line 16) reads %u and TLOAD (MTE2, line 17) writes %t: both touch UB bytes "
                     "[0, 4096) and no flag or barrier orders them"]
    alone = exe.run("k", x, np.zeros((32, 64), np.float32), block_num=1)     # block 0 on its own: none
    assert not [h for h in alone.hazards if h.code == "ORDER_RACE"]


@pytest.mark.parametrize("flags", [True, False])
def test_blocks_sharing_kept_issue_data_time_as_with_their_own(flags: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without TASSIGN the blocks of a launch share what each tile instruction's issue keeps
    (``placement.LaunchShare.memo``), each block checking a kept entry against its own tiles.
    Here the valid rows alternate (16 in even blocks, 32 in odd ones), so an entry made by one
    block is wrong for the next: the launch must come out exactly as when every block works its
    issue data out itself (sharing turned off): cycles, per-pipe busy, each block's place and
    time, HBM bytes, hazards and values."""
    import openpto.backends.ascend_sim as sim

    t = "!pto.tile<32x256xf32, valid=?x256>"
    load, add = (("  set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0\n  wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0\n",
                  "  set_flag #pto.pipe<V>, #pto.pipe<MTE3>, 0\n  wait_flag #pto.pipe<V>, #pto.pipe<MTE3>, 0\n")
                 if flags else ("", ""))
    text = f"""kernel @k(%a : {M}, %b : {M}, %c : {M}) {{
  .const %c0 = 0 : index
  .const %c2 = 2 : index
  .const %c16 = 16 : index
  .const %c64 = 64 : index
  %blk = pto.get_block_idx
  %odd = arith.remui %blk, %c2 : index
  %more = arith.muli %odd, %c16 : index
  %vr = arith.addi %c16, %more : index
  %r0 = arith.muli %blk, %c64 : index
  .tile %ta valid_row = %vr : {t}
  .tile %tb valid_row = %vr : {t}
  .tile %tc valid_row = %vr : {t}
  %ta = tload %a[%r0, %c0] : ({M}) -> {t}
  %tb = tload %b[%r0, %c0] : ({M}) -> {t}
{load}  %tc = tadd %ta, %tb : ({t}, {t}) -> {t}
{add}  tstore %c[%r0, %c0], %tc : ({M}, {t})
}}"""

    def launch() -> tuple[Any, np.ndarray]:
        a, b, c, _, _ = _args(6)
        res = pto.compile(pto.parse(text), "ascend_sim", "a3").run("k", a, b, c, block_num=6)
        return res, c
    shared, c1 = launch()
    monkeypatch.setattr(sim, "LaunchShare", _unshared)
    own, c2 = launch()
    np.testing.assert_array_equal(c1, c2)
    a, b, _, _, _ = _args(6)
    for blk in range(6):                        # 16 valid rows in even blocks, 32 in odd ones
        rows = slice(blk * 64, blk * 64 + (32 if blk % 2 else 16))
        np.testing.assert_array_equal(c1[rows], a[rows] + b[rows])
    assert (shared.cycles, shared.busy, shared.blocks, shared.hbm_bytes) == (own.cycles, own.busy, own.blocks,
                                                                             own.hbm_bytes)
    assert [h.message for h in shared.hazards] == [h.message for h in own.hazards]
    assert bool(shared.hazards) == (not flags)
    ends = {round(end - start, 3) for _, _, start, end in shared.blocks}
    assert len(ends) == 2                       # the even and the odd blocks take different times


def _unshared(share_memo: bool) -> Any:
    """A launch's placements sharing their regions and geometry but not their kept issue data."""
    from openpto.backends.ascend_sim.placement import LaunchShare
    return LaunchShare(False)


def test_a_window_tile_is_not_taken_from_another_blocks_kept_issue_data() -> None:
    """A ``pto.subset`` window is not a placed tile: a block must not take another block's kept
    regions for it. Each block loads into the window of %p at column (block % 2) * 8 and, with
    no flag, stores the window at column 8: only the odd blocks' two windows meet, so exactly
    they race (each block's pipes are its own: one report per odd block)."""
    p, w = "!pto.tile<16x16xf32>", "!pto.tile<16x8xf32, valid=?x?>"     # a dynamic offset: a dynamic window
    m = "!pto.memref<?x8xf32>"
    text = f"""kernel @k(%x : {m}, %y : {m}) {{
  .const %c0 = 0 : index
  .const %c2 = 2 : index
  .const %c8 = 8 : index
  .const %c16 = 16 : index
  .tile %p : {p}
  %blk = pto.get_block_idx
  %odd = arith.remui %blk, %c2 : index
  %col = arith.muli %odd, %c8 : index
  %r = arith.muli %blk, %c16 : index
  %w = pto.subset %p[%c0, %col] sizes [16, 8] : {p}
  %w = tload %x[%r, %c0] : ({m}) -> {w}
  %v = pto.subset %p[%c0, %c8] sizes [16, 8] : {p}
  tstore %y[%r, %c0], %v : ({m}, {w})
}}"""
    x = np.ones((64, 8), np.float32)
    res = pto.compile(pto.parse(text), "ascend_sim", "a3", strict=False).run("k", x, np.zeros_like(x), block_num=4)
    races = [h.message for h in res.hazards if h.code == "ORDER_RACE" and "in block" not in h.message]
    assert len(races) == 2, races                      # blocks 1 and 3, each its own report
    for msg in races:                                  # rows of 32 bytes, 64 apart: [32, 1024) bounds them
        assert msg.startswith("TLOAD (MTE2, line 12) writes %p (window) and TSTORE (MTE3, line 14) reads "
                              "%p (window): both touch UB bytes [32, 1024)")
