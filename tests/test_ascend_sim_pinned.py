"""Pinned simulated numbers: the benchmark kernels' cycles, per-pipe busy cycles, block
placements, HBM bytes, hazard lists and traces, as the simulator computed them when these pins
were taken. Speed work on the engine, the hazard shadow and the multi-core replay must leave
every one of them bit for bit where it was; a deliberate change of the model re-pins them
(``python tests/test_ascend_sim_pinned.py`` prints the current values).

The programs are frozen here (the synchronised ones as ``pto sync`` printed them), so an edit of
an example or of the auto-sync pass does not move a pin; racy variants drop flag lines."""
from __future__ import annotations

import hashlib
import pathlib
import re
from typing import Any, Callable

import numpy as np
import pytest

import openpto as pto
from test_ascend_sim_multicore import gemm_text

ROOT = pathlib.Path(__file__).resolve().parent.parent

SOFTMAX = """kernel @softmax(%x : !pto.memref<?x1024xf32>, %y : !pto.memref<?x1024xf32>, %rows : index) {
  .const %c0 = 0 : index
  .const %c32 = 32 : index
  .tile %t : !pto.tile<32x1024xf32>
  .tile %max : !pto.tile<32x1xf32, layout=DN>
  .tile %sum : !pto.tile<32x1xf32, layout=DN>
  %blk = pto.get_block_idx
  %nblk = pto.get_block_num
  %first = arith.muli %blk, %c32 : index
  %stride = arith.muli %nblk, %c32 : index
  set_flag #pto.pipe<MTE3>, #pto.pipe<MTE2>, 0 : (index)
  scf.for %r = %first to %rows step %stride {
    wait_flag #pto.pipe<MTE3>, #pto.pipe<MTE2>, 0 : (index)
    %t = tload %x[%r, %c0] : (!pto.memref<?x1024xf32>) -> !pto.tile<32x1024xf32>
    set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0 : (index)
    wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0 : (index)
    %max = trowmax %t : (!pto.tile<32x1024xf32>) -> !pto.tile<32x1xf32, layout=DN>
    %t = trowexpandexpdif %t, %max : (!pto.tile<32x1024xf32>, !pto.tile<32x1xf32, layout=DN>) -> !pto.tile<32x1024xf32>
    %sum = trowsum %t : (!pto.tile<32x1024xf32>) -> !pto.tile<32x1xf32, layout=DN>
    %t = trowexpanddiv %t, %sum : (!pto.tile<32x1024xf32>, !pto.tile<32x1xf32, layout=DN>) -> !pto.tile<32x1024xf32>
    set_flag #pto.pipe<V>, #pto.pipe<MTE3>, 0 : (index)
    wait_flag #pto.pipe<V>, #pto.pipe<MTE3>, 0 : (index)
    tstore %y[%r, %c0], %t : (!pto.memref<?x1024xf32>, !pto.tile<32x1024xf32>)
    set_flag #pto.pipe<MTE3>, #pto.pipe<MTE2>, 0 : (index)
  }
  wait_flag #pto.pipe<MTE3>, #pto.pipe<MTE2>, 0 : (index)
}"""

VADD = """kernel @vector_add_blocks(%a : !pto.memref<?x1024xf32>, %b : !pto.memref<?x1024xf32>, %c : !pto.memref<?x1024xf32>, %per : index) {
  .const %c0 = 0 : index
  .const %c32 = 32 : index
  .const %c256 = 256 : index
  .const %c1024 = 1024 : index
  .tile %ta : !pto.tile<32x256xf32>
  .tile %tb : !pto.tile<32x256xf32>
  .tile %tc : !pto.tile<32x256xf32>
  %blk = pto.get_block_idx
  %r0 = arith.muli %blk, %per : index
  %r1 = arith.addi %r0, %per : index
  scf.for %r = %r0 to %r1 step %c32 {
    set_flag #pto.pipe<V>, #pto.pipe<MTE2>, 0 : (index)
    set_flag #pto.pipe<MTE3>, #pto.pipe<V>, 0 : (index)
    scf.for %j = %c0 to %c1024 step %c256 {
      wait_flag #pto.pipe<V>, #pto.pipe<MTE2>, 0 : (index)
      %ta = tload %a[%r, %j] : (!pto.memref<?x1024xf32>) -> !pto.tile<32x256xf32>
      %tb = tload %b[%r, %j] : (!pto.memref<?x1024xf32>) -> !pto.tile<32x256xf32>
      set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0 : (index)
      wait_flag #pto.pipe<MTE3>, #pto.pipe<V>, 0 : (index)
      wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0 : (index)
      %tc = tadd %ta, %tb : (!pto.tile<32x256xf32>, !pto.tile<32x256xf32>) -> !pto.tile<32x256xf32>
      set_flag #pto.pipe<V>, #pto.pipe<MTE2>, 0 : (index)
      set_flag #pto.pipe<V>, #pto.pipe<MTE3>, 0 : (index)
      wait_flag #pto.pipe<V>, #pto.pipe<MTE3>, 0 : (index)
      tstore %c[%r, %j], %tc : (!pto.memref<?x1024xf32>, !pto.tile<32x256xf32>)
      set_flag #pto.pipe<MTE3>, #pto.pipe<V>, 0 : (index)
    }
    wait_flag #pto.pipe<V>, #pto.pipe<MTE2>, 0 : (index)
    wait_flag #pto.pipe<MTE3>, #pto.pipe<V>, 0 : (index)
  }
}"""

FLAG_LINE = re.compile(r"^\s*(set|wait)_flag (#pto\.pipe<\w+>, #pto\.pipe<\w+>, \d)")


def _copy_text() -> str:
    return (ROOT / "examples" / "double_buffer_copy.pto").read_text()


def _without(text: str, flag: str | None = None) -> str:
    """``text`` with the flag lines of ``flag`` ("#pto.pipe<A>, #pto.pipe<B>, id") dropped
    inside its loops (every flag line when ``flag`` is None): balanced, so the verifier accepts it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "scf.for" in line)
    end = max(i for i, line in enumerate(lines) if line.strip() == "}" and i < len(lines) - 1)
    return "\n".join(line for i, line in enumerate(lines)
                     if not ((m := FLAG_LINE.match(line)) and (flag is None or start < i < end and m.group(2) == flag)))


def _copy_flags() -> list[str]:
    return sorted({m.group(2) for line in _copy_text().splitlines() if (m := FLAG_LINE.match(line))})


def _copy(rows: int) -> Callable[[], tuple[Any, ...]]:
    src = np.arange(rows * 512, dtype=np.float32).reshape(rows, 512)
    return lambda: (src, np.zeros_like(src), rows)


def _softmax(rows: int) -> Callable[[], tuple[Any, ...]]:
    x = np.random.default_rng(0).standard_normal((rows, 1024)).astype(np.float32)
    return lambda: (x, np.zeros_like(x), rows)


def _vadd(blocks: int, per: int) -> Callable[[], tuple[Any, ...]]:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((blocks * per, 1024)).astype(np.float32)
    b = rng.standard_normal((blocks * per, 1024)).astype(np.float32)
    return lambda: (a, b, np.zeros_like(a), per)


def _gemm(n: int, gm: int, gn: int) -> Callable[[], tuple[Any, ...]]:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((n, n)).astype(np.float16)
    b = rng.standard_normal((n, n)).astype(np.float16)
    return lambda: (a, b, np.zeros((n, n), np.float32), n, n // gm, n // gn, gn)


#: name -> (program text, kernel, arguments, block_num)
CASES: dict[str, tuple[str, str, Callable[[], tuple[Any, ...]], int]] = {
    "copy": (_copy_text(), "double_buffer_copy", _copy(96), 1),
    **{f"copy without {f}": (_without(_copy_text(), f), "double_buffer_copy", _copy(64), 1) for f in _copy_flags()},
    "softmax": (SOFTMAX, "softmax", _softmax(96), 1),
    "softmax, 3 blocks": (SOFTMAX, "softmax", _softmax(192), 3),
    "softmax, no flags": (_without(SOFTMAX), "softmax", _softmax(64), 1),
    "vadd, 96 blocks": (VADD, "vector_add_blocks", _vadd(96, 32), 96),
    "vadd, 4 blocks, no flags": (_without(VADD), "vector_add_blocks", _vadd(4, 64), 4),
    "gemm, 4 blocks, no flags": (gemm_text(kp=256), "gemm", _gemm(512, 2, 2), 4),
}

#: compile options per mode
MODES: dict[str, dict[str, Any]] = {"values": {}, "values, hazards off": {"hazards": "off"},
                                    "timing": {"values": False}, "timing, hazards off": {"values": False, "hazards": "off"}}


def fingerprint(case: str, mode: str, trace: bool = False) -> tuple[float, int, str]:
    """(cycles, races, a digest of every simulated number, hazard and trace event)."""
    text, kernel, args, blocks = CASES[case]
    res = pto.compile(pto.parse(text), "ascend_sim", "a3", **MODES[mode]).run(kernel, *args(), block_num=blocks,
                                                                            trace=trace)
    parts = [repr(res.cycles), repr(res.time_us), repr(sorted(res.busy.items())), repr(res.bound),
             repr(sorted(res.core_cycles.items())), repr(res.blocks), repr(res.hbm_bytes), repr(res.hbm_gbps),
             repr(sorted(res.counters.items()))]
    parts += [repr((h.code, h.message, h.location.line if h.location else None, h.notes)) for h in res.hazards]
    if trace:
        parts += [repr(sorted(e.items())) for e in res.trace or ()]
    return res.cycles, res.counters["races"], hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


#: (case, mode, trace) -> (cycles, races, digest), taken before the speed work
PINS: dict[tuple[str, str, bool], tuple[float, int, str]] = {
    ('copy', 'values', False): (5949.076448598131, 0, '90f8749a68a36197'),
    ('copy', 'values', True): (5949.076448598131, 0, '4ce7c2adfe1c6cf5'),
    ('copy', 'values, hazards off', False): (5949.076448598131, 0, '90f8749a68a36197'),
    ('copy', 'timing', False): (5949.076448598131, 0, '90f8749a68a36197'),
    ('copy', 'timing, hazards off', False): (5949.076448598131, 0, '90f8749a68a36197'),
    ('copy without #pto.pipe<MTE2>, #pto.pipe<V>, 0', 'values', False): (4295.364299065421, 1, '059a1639b0d9fbf7'),
    ('copy without #pto.pipe<MTE2>, #pto.pipe<V>, 0', 'values, hazards off', False): (4295.364299065421, 0, '939afcb4ad293b9d'),
    ('copy without #pto.pipe<MTE2>, #pto.pipe<V>, 0', 'timing', False): (4295.364299065421, 1, '059a1639b0d9fbf7'),
    ('copy without #pto.pipe<MTE2>, #pto.pipe<V>, 0', 'timing, hazards off', False): (4295.364299065421, 0, '939afcb4ad293b9d'),
    ('copy without #pto.pipe<MTE2>, #pto.pipe<V>, 1', 'values', False): (4205.788224299065, 1, 'fcc9e4bc408abcf9'),
    ('copy without #pto.pipe<MTE2>, #pto.pipe<V>, 1', 'values, hazards off', False): (4205.788224299065, 0, '3ec606e5db6e909c'),
    ('copy without #pto.pipe<MTE2>, #pto.pipe<V>, 1', 'timing', False): (4205.788224299065, 1, 'fcc9e4bc408abcf9'),
    ('copy without #pto.pipe<MTE2>, #pto.pipe<V>, 1', 'timing, hazards off', False): (4205.788224299065, 0, '3ec606e5db6e909c'),
    ('copy without #pto.pipe<MTE3>, #pto.pipe<V>, 0', 'values', False): (4295.364299065421, 1, '585b995e4ef84e70'),
    ('copy without #pto.pipe<MTE3>, #pto.pipe<V>, 0', 'values, hazards off', False): (4295.364299065421, 0, '939afcb4ad293b9d'),
    ('copy without #pto.pipe<MTE3>, #pto.pipe<V>, 0', 'timing', False): (4295.364299065421, 1, '585b995e4ef84e70'),
    ('copy without #pto.pipe<MTE3>, #pto.pipe<V>, 0', 'timing, hazards off', False): (4295.364299065421, 0, '939afcb4ad293b9d'),
    ('copy without #pto.pipe<MTE3>, #pto.pipe<V>, 1', 'values', False): (4295.364299065421, 1, '6a8636a087a12e1a'),
    ('copy without #pto.pipe<MTE3>, #pto.pipe<V>, 1', 'values, hazards off', False): (4295.364299065421, 0, '939afcb4ad293b9d'),
    ('copy without #pto.pipe<MTE3>, #pto.pipe<V>, 1', 'timing', False): (4295.364299065421, 1, '6a8636a087a12e1a'),
    ('copy without #pto.pipe<MTE3>, #pto.pipe<V>, 1', 'timing, hazards off', False): (4295.364299065421, 0, '939afcb4ad293b9d'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE2>, 0', 'values', False): (4294.364299065421, 1, '7d02fc25635ad06b'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE2>, 0', 'values, hazards off', False): (4294.364299065421, 0, 'd7f3f3ac5602269b'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE2>, 0', 'timing', False): (4294.364299065421, 1, '7d02fc25635ad06b'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE2>, 0', 'timing, hazards off', False): (4294.364299065421, 0, 'd7f3f3ac5602269b'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE2>, 1', 'values', False): (4295.364299065421, 1, '6ae13179db7ea35c'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE2>, 1', 'values, hazards off', False): (4295.364299065421, 0, '939afcb4ad293b9d'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE2>, 1', 'timing', False): (4295.364299065421, 1, '6ae13179db7ea35c'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE2>, 1', 'timing, hazards off', False): (4295.364299065421, 0, '939afcb4ad293b9d'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE3>, 0', 'values', False): (4295.364299065421, 1, '528374d740c649ef'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE3>, 0', 'values, hazards off', False): (4295.364299065421, 0, '939afcb4ad293b9d'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE3>, 0', 'timing', False): (4295.364299065421, 1, '528374d740c649ef'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE3>, 0', 'timing, hazards off', False): (4295.364299065421, 0, '939afcb4ad293b9d'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE3>, 1', 'values', False): (4205.788224299065, 1, '58798571ac0d6418'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE3>, 1', 'values, hazards off', False): (4205.788224299065, 0, '3ec606e5db6e909c'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE3>, 1', 'timing', False): (4205.788224299065, 1, '58798571ac0d6418'),
    ('copy without #pto.pipe<V>, #pto.pipe<MTE3>, 1', 'timing, hazards off', False): (4205.788224299065, 0, '3ec606e5db6e909c'),
    ('softmax', 'values', False): (33021.25538461538, 0, 'dd0cbcdfee9b3db9'),
    ('softmax', 'values, hazards off', False): (33021.25538461538, 0, 'dd0cbcdfee9b3db9'),
    ('softmax', 'timing', False): (33021.25538461538, 0, 'dd0cbcdfee9b3db9'),
    ('softmax', 'timing, hazards off', False): (33021.25538461538, 0, 'dd0cbcdfee9b3db9'),
    ('softmax, 3 blocks', 'values', False): (22014.83692307692, 0, 'ec885b619efaac19'),
    ('softmax, 3 blocks', 'values', True): (22014.83692307692, 0, '28a98ecf6a731f0b'),
    ('softmax, 3 blocks', 'values, hazards off', False): (22014.83692307692, 0, 'ec885b619efaac19'),
    ('softmax, 3 blocks', 'timing', False): (22014.83692307692, 0, 'ec885b619efaac19'),
    ('softmax, 3 blocks', 'timing, hazards off', False): (22014.83692307692, 0, 'ec885b619efaac19'),
    ('softmax, no flags', 'values', False): (10066.12, 10, '2755208867373910'),
    ('softmax, no flags', 'values, hazards off', False): (10066.12, 0, 'f6ba3fbe76206369'),
    ('softmax, no flags', 'timing', False): (10066.12, 10, '2755208867373910'),
    ('softmax, no flags', 'timing, hazards off', False): (10066.12, 0, 'f6ba3fbe76206369'),
    ('vadd, 96 blocks', 'values', False): (44855.819810762725, 0, 'a4f3983c04ec1c4a'),
    ('vadd, 96 blocks', 'values', True): (44855.819810762725, 0, '8bc68ff99c8452de'),
    ('vadd, 96 blocks', 'values, hazards off', False): (44855.819810762725, 0, 'a4f3983c04ec1c4a'),
    ('vadd, 96 blocks', 'timing', False): (44855.819810762725, 0, 'a4f3983c04ec1c4a'),
    ('vadd, 96 blocks', 'timing, hazards off', False): (44855.819810762725, 0, 'a4f3983c04ec1c4a'),
    ('vadd, 4 blocks, no flags', 'values', False): (13229.697196261688, 24, '3a3bc9fecaa9ed41'),
    ('vadd, 4 blocks, no flags', 'values, hazards off', False): (13229.697196261688, 0, '6e58e6daa1a63e3a'),
    ('vadd, 4 blocks, no flags', 'timing', False): (13229.697196261688, 24, '3a3bc9fecaa9ed41'),
    ('vadd, 4 blocks, no flags', 'timing, hazards off', False): (13229.697196261688, 0, '6e58e6daa1a63e3a'),
    ('gemm, 4 blocks, no flags', 'values', False): (13121.746899197004, 60, '8daee0d56c3394eb'),
    ('gemm, 4 blocks, no flags', 'values, hazards off', False): (13121.746899197004, 0, 'dfaa8b256d1d587d'),
    ('gemm, 4 blocks, no flags', 'timing', False): (13121.746899197004, 60, '8daee0d56c3394eb'),
    ('gemm, 4 blocks, no flags', 'timing, hazards off', False): (13121.746899197004, 0, 'dfaa8b256d1d587d'),
}


@pytest.mark.parametrize("key", list(PINS), ids=[" / ".join(map(str, k)) for k in PINS])
def test_simulated_numbers_are_where_they_were_pinned(key: tuple[str, str, bool]) -> None:
    assert fingerprint(*key) == PINS[key]


def test_every_case_and_mode_is_pinned() -> None:
    assert {(c, m) for c, m, _ in PINS} == {(c, m) for c in CASES for m in MODES}
    assert any(races for _, races, _ in PINS.values())        # the racy variants do race


def test_a_launch_shares_each_distinct_replay_among_its_blocks() -> None:
    """The 96-block launch: one op stream, so a round has as many engine replays as distinct
    (start, stretches): the two waves; each block's shared replay equals its own full replay."""
    import openpto.backends.ascend_sim as sim
    from openpto.backends.ascend_sim.engine import Engine
    from openpto.backends.ascend_sim.replay import Replayer
    seen: list[Replayer] = []

    def schedule(machine: Any, kind: str, first: list[Any], replay: Any) -> Any:
        seen.append(replay)
        return real(machine, kind, first, replay)
    real, sim.schedule = sim.schedule, schedule
    try:
        text, kernel, args, blocks = CASES["vadd, 96 blocks"]
        exe = pto.compile(pto.parse(text), "ascend_sim", "a3")
        exe.run(kernel, *args(), block_num=blocks)
    finally:
        sim.schedule = real
    (rep,) = seen
    assert len(set(rep.shape)) == 1 and 0 < len(rep.done) <= 2 * 8      # at most 8 rounds of two waves
    first = rep.first
    for (_, start, factors), (src, _) in list(rep.done.items())[:2]:
        for b in (src, (src + 1) % blocks):
            own = {id(op): f for op, f in zip(rep.moving[b], factors)}
            eng = Engine(exe.machine, kernel, None, None, b, start=start, stretch=own)
            for op in first[b].ops:
                eng.issue(op)
            eng.finish()
            got = rep(b, start, "AIV0", own)
            assert (got.cycles(), got.busy, got.transfers) == (eng.cycles(), eng.busy, eng.transfers)


if __name__ == "__main__":
    for c in CASES:
        for m in MODES:
            for t in ((False, True) if m == "values" and c in ("copy", "softmax, 3 blocks", "vadd, 96 blocks")
                      else (False,)):
                print(f"    {(c, m, t)!r}: {fingerprint(c, m, t)!r},")
