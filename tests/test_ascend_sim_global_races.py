"""ascend_sim: races between the blocks of one launch on global memory. Nothing orders two blocks
(cross-core flags are not modelled), so two blocks touching a common global byte, one writing,
race; blocks sharing only reads do not. Every kernel here is synchronised by auto-sync first, so
each block's own pipes are ordered and the only hazards left are the ones between blocks. The
expected byte ranges, lines and block pairs are worked out by hand from the kernels' text."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto as pto
from openpto.assembler.autosync import autosync

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: every block reads rows [%src, %src + 16) of %x and writes rows [%dst, %dst + 16) of %y, where
#: each of %src and %dst is a fixed row (when its step is 0) or 16 x the block index
KERNEL = """kernel @k(%x : !pto.memref<?x64xf32>, %y : !pto.memref<?x64xf32>, %src_step : index, %dst_step : index,
          %src0 : index, %dst0 : index) {
  .const %c0 = 0 : index
  .tile %t : !pto.tile<16x64xf32>
  %blk = pto.get_block_idx
  %so = arith.muli %blk, %src_step : index
  %do = arith.muli %blk, %dst_step : index
  %src = arith.addi %src0, %so : index
  %dst = arith.addi %dst0, %do : index
  %t = tload %x[%src, %c0] : (!pto.memref<?x64xf32>) -> !pto.tile<16x64xf32>
  %t = tadds %t, 1.0 : (!pto.tile<16x64xf32>, f32) -> !pto.tile<16x64xf32>
  tstore %y[%dst, %c0], %t : (!pto.memref<?x64xf32>, !pto.tile<16x64xf32>)
}"""


def _synced(text: str, profile: str = "a3") -> pto.Module:
    return pto.parse(autosync(pto.parse(text), profile).to_text())


def _line(m: pto.Module, word: str) -> int:
    """The line of the (only) statement starting with ``word`` in the module's text."""
    lines = [i for i, line in enumerate(m.to_text().splitlines(), 1) if line.strip().startswith(word)]
    assert len(lines) == 1
    return lines[0]


def _run(m: pto.Module, blocks: int, *, src_step: int, dst_step: int, src0: int = 0, dst0: int = 0,
         alias: bool = False, **options: object):  # type: ignore[no-untyped-def]
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    y = x if alias else np.zeros_like(x)
    exe = pto.compile(m, "ascend_sim", "a3", **options)
    return exe.run("k", x, y, src_step, dst_step, src0, dst0, block_num=blocks), x, y


def test_every_block_storing_the_same_rows_is_a_race_naming_both_blocks() -> None:
    """Three blocks store rows 16..31 of %y (16 rows x 64 f32 = 4096 bytes from byte 4096):
    one report for the TSTORE pair, from blocks 0 and 1, three block pairs in all."""
    m = _synced(KERNEL)
    res, x, y = _run(m, 3, src_step=16, dst_step=0, dst0=16)
    np.testing.assert_array_equal(y[16:32], x[32:48] + 1)        # block 2 stored last
    line = _line(m, "tstore")
    side = f"TSTORE (MTE3, line {line}) in block {{}} writes %y[16, 0]"
    assert [h.code for h in res.hazards] == ["ORDER_RACE"] and res.counters["races"] == 1
    (h,) = res.hazards
    assert h.message == (f"{side.format(0)} and {side.format(1)}: both touch global %y bytes [4096, 8192), and "
                         "nothing orders the blocks of one launch (cross-core flags are not modelled)")
    assert h.location.line == line
    assert h.notes[:3] == (f"first: {side.format(0)}", f"second: {side.format(1)}",
                           "3 pair(s) of blocks race on these two instructions")


def test_raise_mode_raises_the_race_and_off_mode_tracks_nothing() -> None:
    m = _synced(KERNEL)
    with pytest.raises(pto.PTOError) as e:
        _run(m, 2, src_step=16, dst_step=0, hazards="raise")
    line = _line(m, "tstore")
    assert e.value.code == "ORDER_RACE" and e.value.location.line == line
    assert "in block 0 writes %y[0, 0]" in str(e.value) and "in block 1 writes %y[0, 0]" in str(e.value)
    assert "global %y bytes [0, 4096)" in str(e.value)
    res, _, _ = _run(m, 2, src_step=16, dst_step=0, hazards="off")
    assert res.hazards == [] and res.counters["races"] == 0


def test_one_block_reading_what_another_writes_is_a_race() -> None:
    """Every block reads rows 0..15 of %x, and %y is %x (the same array): block b writes rows
    16 b .. 16 b + 15. Block 0 writes what blocks 1 and 2 read; blocks 1 and 2 write rows no
    other block touches. Block 0's own read and write are ordered by its flags."""
    m = _synced(KERNEL)
    res, _, _ = _run(m, 3, src_step=0, dst_step=16, alias=True)
    assert len(res.hazards) == 1
    (h,) = res.hazards
    store, load = _line(m, "tstore"), _line(m, "%t = tload")
    assert h.message.startswith(f"TSTORE (MTE3, line {store}) in block 0 writes %y[0, 0] and TLOAD (MTE2, line "
                                f"{load}) in block 1 reads %x[0, 0]: both touch global ")
    assert "bytes [0, 4096)" in h.message and h.notes[2] == "2 pair(s) of blocks race on these two instructions"


def test_blocks_sharing_reads_and_writing_their_own_rows_do_not_race() -> None:
    m = _synced(KERNEL)
    res, x, y = _run(m, 4, src_step=0, dst_step=16, hazards="raise")
    assert res.hazards == []
    np.testing.assert_array_equal(y, np.tile(x[:16] + 1, (4, 1)))


COLUMNS = """kernel @k(%x : !pto.memref<?x64xf32>, %y : !pto.memref<?x256xf32>, %step : index) {
  .const %c0 = 0 : index
  .tile %t : !pto.tile<16x64xf32>
  %blk = pto.get_block_idx
  %col = arith.muli %blk, %step : index
  %t = tload %x[%c0, %c0] : (!pto.memref<?x64xf32>) -> !pto.tile<16x64xf32>
  tstore %y[%c0, %col], %t : (!pto.memref<?x256xf32>, !pto.tile<16x64xf32>)
}"""


@pytest.mark.parametrize("step,races", [(64, 0), (32, 1)])
def test_column_windows_race_only_where_their_bytes_meet(step: int, races: int) -> None:
    """Blocks store 64-column windows of the same 16 rows of a 256-column %y, starting at
    column step x block: the windows' byte ranges interleave (rows 1024 bytes apart) whatever
    the step, but with step 64 no byte is shared, with step 32 neighbours share 32 columns."""
    m = _synced(COLUMNS)
    x = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    y = np.zeros((16, 256), np.float32)
    res = pto.compile(m, "ascend_sim", "a3").run("k", x, y, step, block_num=4 if step == 64 else 3)
    assert res.counters["races"] == races
    if races:
        (h,) = res.hazards
        assert "in block 0 writes %y[0, 0]" in h.message and "in block 1 writes %y[0, 32]" in h.message
        assert "(rows of 256 bytes, 1024 apart)" in h.message
        assert h.notes[2] == "2 pair(s) of blocks race on these two instructions"     # (0, 1) and (1, 2)
    else:
        np.testing.assert_array_equal(y, np.tile(x[:16], (1, 4)))


@pytest.mark.parametrize("blocks", [2, 3, 5])
def test_the_examples_split_over_blocks_do_not_race(blocks: int) -> None:
    """softmax deals its 16-row blocks out round-robin; vector_add_blocks gives each block its
    own rows: synchronised, no hazard at all (raise mode)."""
    softmax = _synced((ROOT / "examples" / "softmax.pto").read_text())
    x = np.random.default_rng(blocks).standard_normal((96, 1024)).astype(np.float32)
    y = np.zeros_like(x)
    res = pto.compile(softmax, "ascend_sim", "a3", hazards="raise").run("softmax", x, y, 96, block_num=blocks)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    assert res.hazards == []
    vadd = _synced((ROOT / "benchmarks" / "kernels" / "vector_add_blocks.pto").read_text())
    a, b = (np.random.default_rng(i).standard_normal((blocks * 32, 1024)).astype(np.float32) for i in (1, 2))
    c = np.zeros_like(a)
    res = pto.compile(vadd, "ascend_sim", "a3", hazards="raise").run("vector_add_blocks", a, b, c, 32,
                                                                      block_num=blocks)
    np.testing.assert_array_equal(c, a + b)
    assert res.hazards == []


def test_a_kernel_that_ignores_its_block_index_races_on_what_it_stores() -> None:
    """examples/vector_add.pto does every row in every block: its loads of %a and %b are shared
    reads (fine), its stores of %c are written by both blocks."""
    m = _synced((ROOT / "examples" / "vector_add.pto").read_text())
    a = np.random.default_rng(0).standard_normal((40, 1024)).astype(np.float32)
    c = np.zeros_like(a)
    res = pto.compile(m, "ascend_sim", "a3").run("vector_add", a, a, c, 40, block_num=2)
    assert res.counters["races"] == len(res.hazards) == 1
    (h,) = res.hazards
    assert h.message.startswith(f"TSTORE (MTE3, line {_line(m, 'tstore')}) in block 0 writes %c[0, 0] and TSTORE")
    assert "in block 1 writes %c[0, 0]: both touch global %c bytes [0, " in h.message
    assert "%a" not in h.message and "%b" not in h.message
    np.testing.assert_array_equal(c, a + a)


class _Op:
    """An executed instruction as the launch records it: what ``GlobalAccesses`` reads of one."""

    def __init__(self, name: str, accesses: list) -> None:
        self.name, self.accesses, self.loc, self.pipe = name, accesses, None, 0


def _bytes(a) -> set[int]:
    """The bytes of a region, listed one by one (the independent expectation)."""
    if not a.pitch:
        return set(range(a.lo, a.hi))
    return {b for row in range(a.lo, a.hi, a.pitch) for b in range(row, min(row + a.width, a.hi))}


@pytest.mark.parametrize("seed", range(60))
def test_skipping_the_sweep_never_loses_a_race(seed: int) -> None:
    """The sweep is skipped when the blocks' covering ranges are apart (and a block given as an
    earlier one moved takes that one's ranges moved): on random windows over two arrays, with
    blocks running a random subset of the instructions or given as moved copies of the first, the
    races found are exactly the pairs of instructions of different blocks whose byte sets meet,
    one writing (the bytes listed one by one)."""
    from openpto.backends.ascend_sim.global_races import GlobalAccesses
    from openpto.backends.ascend_sim.hazards import Access

    rng = np.random.default_rng(seed)
    arrays = [(1000, 1000 + 4096), (20000, 20000 + 4096)]
    step = int(rng.choice([0, 64, 256, 1024]))      # how far each block's windows move
    nblocks = int(rng.integers(2, 5))
    shapes = []                                     # per instruction: array, offset, rows, width, pitch, write
    for _ in range(int(rng.integers(1, 5))):
        pitch = int(rng.choice([0, 64]))
        rows = int(rng.integers(1, 4)) if pitch else 1
        width = int(rng.integers(1, 64 if pitch else 200))
        shapes.append((int(rng.random() < 0.3), int(rng.integers(0, 512)), rows, width, pitch, bool(rng.integers(0, 2))))
    shared = GlobalAccesses("k", arrays)
    blocks = []
    for b in range(nblocks):
        ops = []
        moved = b > 0 and bool(rng.integers(0, 2))
        keep = [True] * len(shapes) if moved or b == 0 else list(rng.random(len(shapes)) < 0.6)
        for n, (arr, off, rows, width, pitch, write) in enumerate(shapes):
            if not keep[n]:
                continue
            lo = arrays[arr][0] + off + b * step
            hi = lo + ((rows - 1) * pitch + width if pitch else width)
            ops.append(_Op(f"I{n}", [Access("GM", lo, hi, write, f"r{n}", pitch, width if pitch else 0)]))
        blocks.append(ops)
        shared.add_block(b, ops, lambda a, lo, hi: f"[{lo}, {hi})", (0, b * step) if moved else None)
    expected = set()
    for b in range(nblocks):
        for c in range(b + 1, nblocks):
            for x in blocks[b]:
                for y in blocks[c]:
                    ax, ay = x.accesses[0], y.accesses[0]
                    if (ax.write or ay.write) and _bytes(ax) & _bytes(ay):
                        expected.add((x.name, ax.write, y.name, ay.write))
    got = set()
    for h in shared.races("collect"):
        first, second = (n.split(": ", 1)[1].split(" ")[0] for n in h.notes[:2])
        writes = tuple(" writes " in n for n in h.notes[:2])
        got.add((first, writes[0], second, writes[1]))
    # the order within a pair is the lower block first; instructions the same in every block
    # make a pair found in either order the same pair of instructions
    norm = {tuple(sorted([(p[0], p[1]), (p[2], p[3])])) for p in expected}
    assert {tuple(sorted([(p[0], p[1]), (p[2], p[3])])) for p in got} == norm


@pytest.mark.parametrize("first_writes,second_writes,lo2,races", [
    (False, True, 1050, 1), (True, False, 1050, 1), (True, True, 1050, 1), (False, False, 1050, 0),
    (False, True, 1100, 0), (True, False, 1100, 0)])
def test_a_reader_below_a_writer_of_another_block_is_a_race(first_writes: bool, second_writes: bool, lo2: int,
                                                             races: int) -> None:
    """Block 0 touches bytes [1000, 1100) of an array, block 1 [lo2, lo2 + 100): they race
    when the ranges meet and either writes, whichever block's range starts lower."""
    from openpto.backends.ascend_sim.global_races import GlobalAccesses
    from openpto.backends.ascend_sim.hazards import Access

    shared = GlobalAccesses("k", [(1000, 2000)])
    for b, (lo, write) in enumerate([(1000, first_writes), (lo2, second_writes)]):
        shared.add_block(b, [_Op(f"I{b}", [Access("GM", lo, lo + 100, write, "r")])], lambda a, lo, hi: "")
    assert len(shared.races("collect")) == races
    shared = GlobalAccesses("k", [(1000, 2000)])       # the same two blocks, the higher range first
    for b, (lo, write) in enumerate([(lo2, second_writes), (1000, first_writes)]):
        shared.add_block(b, [_Op(f"I{b}", [Access("GM", lo, lo + 100, write, "r")])], lambda a, lo, hi: "")
    assert len(shared.races("collect")) == races
