"""Hazards the ascend_sim backend finds while a program runs: races between pipes (by byte
region and vector clock), deadlocks (every unfinished pipe waits), flags left set, and tiles
placed past their buffer. Each program here is built so that the static ORDER_* checks pass:
the hazard exists only at run time."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import openpto as pto

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "double_buffer_copy.pto"
TEXT = EXAMPLE.read_text()
LINES = TEXT.splitlines()
FLAG = re.compile(r"^\s*(set|wait)_flag (#pto\.pipe<\w+>, #pto\.pipe<\w+>, \d)\s*$")


def _loop_flags() -> list[str]:
    """The flags the copy loop sets and waits: each (src, dst, id) once, in a pair per iteration."""
    start = next(i for i, line in enumerate(LINES) if "scf.for" in line)
    return sorted({m.group(2) for line in LINES[start:] if (m := FLAG.match(line))
                   and LINES.index(line) < len(LINES) - 6})


def _without(flag: str) -> tuple[str, dict[str, int]]:
    """The example with the loop's set_flag and wait_flag of ``flag`` removed (balanced, so the
    verifier accepts it); the removed lines' numbers shift the rest: return the new numbering of
    each instruction by its text."""
    start = next(i for i, line in enumerate(LINES) if "scf.for" in line)
    end = max(i for i, line in enumerate(LINES) if line.strip() == "}" and i < len(LINES) - 1)
    kept = [line for i, line in enumerate(LINES)
            if not (start < i < end and (m := FLAG.match(line)) and m.group(2) == flag)]
    return "\n".join(kept), {line.strip(): i + 1 for i, line in enumerate(kept)}


def _run(text: str, rows: int = 64, **options: object) -> pto.backends.base.Result:  # type: ignore[name-defined]
    src = np.arange(rows * 512, dtype=np.float32).reshape(rows, 512)
    dst = np.zeros_like(src)
    res = pto.compile(pto.parse(text), "ascend_sim", "a3", **options)(src, dst, rows)
    np.testing.assert_array_equal(dst, src)         # values are program-order values either way
    return res


def test_the_example_as_written_has_no_hazard() -> None:
    res = _run(TEXT, hazards="raise")
    assert res.hazards == [] and res.counters["races"] == 0


def test_the_loop_has_eight_flag_pairs() -> None:
    assert len(_loop_flags()) == 8


#: which two instructions race when a flag pair goes, by the start of their text, per half s
LOAD, MOV, STORE = "%in{s} = tload", "%out{s} = tmov", "tstore %dst[{r}, %c0]"
RACING = {"MTE2>, #pto.pipe<V>": (LOAD, MOV), "V>, #pto.pipe<MTE2>": (MOV, LOAD),
          "V>, #pto.pipe<MTE3>": (MOV, STORE), "MTE3>, #pto.pipe<V>": (STORE, MOV)}


@pytest.mark.parametrize("flag", _loop_flags())
def test_removing_any_flag_pair_is_a_race_naming_both_instructions(flag: str) -> None:
    text, numbers = _without(flag)
    pto.check(pto.parse(text), profile="a3")                # the static checks cannot see it
    res = _run(text)
    races = [h for h in res.hazards if h.code == "ORDER_RACE"]
    assert races, flag
    s = flag[-1]
    pair = next(v for k, v in RACING.items() if k in flag)
    first, second = (p.format(s=s, r="%r" if s == "0" else "%r1") for p in pair)
    want = {n for t, n in numbers.items() if t.startswith(first) or t.startswith(second)}
    assert len(want) == 2
    msg = races[0].message
    assert {int(n) for n in re.findall(r"line (\d+)", msg)} == want, msg
    assert "no flag or barrier orders them" in msg and "UB bytes [" in msg
    with pytest.raises(pto.PTOError) as e:
        _run(text, hazards="raise")
    assert e.value.code == "ORDER_RACE" and e.value.location.line in want


DEADLOCKS = {
    # two pipes each waiting for the other's set (run-time ids: the verifier does not track them)
    "each waits for the other": ("""kernel @k(%a : index) {
  wait_flag #pto.pipe<V>, #pto.pipe<MTE2>, %a
  set_flag #pto.pipe<MTE2>, #pto.pipe<V>, %a
  wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, %a
  set_flag #pto.pipe<V>, #pto.pipe<MTE2>, %a
}""", {"a": 0}, ["V waits on flag (MTE2 -> V, id 0) at line 4", "MTE2 waits on flag (V -> MTE2, id 0) at line 2"]),
    # the set sits in a branch the run does not take
    "set in a branch not taken": ("""kernel @k(%c : i1, %a : index) {
  scf.if %c {
    set_flag #pto.pipe<MTE2>, #pto.pipe<V>, %a
  }
  wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, %a
}""", {"c": False, "a": 3}, ["V waits on flag (MTE2 -> V, id 3) at line 5"]),
    # the wait names another id than the set
    "the wait's id is never set": ("""kernel @k(%a : index, %b : index) {
  set_flag #pto.pipe<MTE2>, #pto.pipe<V>, %a
  wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, %b
  wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, %a
}""", {"a": 1, "b": 2}, ["V waits on flag (MTE2 -> V, id 2) at line 3"]),
    # the scalar unit waits: nothing after it is ever issued
    "the scalar unit waits": ("""kernel @k(%a : index) {
  wait_flag #pto.pipe<V>, #pto.pipe<S>, %a
}""", {"a": 0}, ["S (the scalar unit) waits on flag (V -> S, id 0) at line 2"]),
}


@pytest.mark.parametrize("case", DEADLOCKS)
def test_run_time_deadlocks_name_every_waiting_pipe_and_flag(case: str) -> None:
    text, args, waiting = DEADLOCKS[case]
    exe = pto.compile(pto.parse(text), "ascend_sim", "a3")   # the static checks pass
    with pytest.raises(pto.PTOError) as e:
        exe(**args)
    assert e.value.code == "ORDER_DEADLOCK"
    assert sorted(e.value.notes) == sorted(waiting)
    assert e.value.location.line is not None


def test_the_branch_taken_runs_without_a_deadlock() -> None:
    text, _, _ = DEADLOCKS["set in a branch not taken"]
    res = pto.compile(pto.parse(text), "ascend_sim", "a3")(c=True, a=3)
    assert res.hazards == []


def test_a_flag_left_set_is_reported_at_the_end() -> None:
    text = """kernel @k(%a : index) {
  set_flag #pto.pipe<V>, #pto.pipe<MTE3>, %a
  set_flag #pto.pipe<V>, #pto.pipe<MTE3>, %a
}"""
    exe = pto.compile(pto.parse(text), "ascend_sim", "a3")
    res = exe(a=5)
    assert [(h.code, h.message) for h in res.hazards] == [
        ("ORDER_FLAG_PENDING", "flag (V -> MTE3, id 5) is still set 2 time(s) when @k ends")]
    with pytest.raises(pto.PTOError) as e:
        pto.compile(pto.parse(text), "ascend_sim", "a3", hazards="raise")(a=5)
    assert e.value.code == "ORDER_FLAG_PENDING"


T = "!pto.tile<16x64xf32>"


def _placed(flags: bool) -> str:
    """Two tiles TASSIGNed to one address: loading %a (MTE2) overwrites the bytes the vector unit
    then updates as %b, unless a flag orders the loads before the vector work."""
    sync = ("  set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0\n  wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0\n"
            if flags else "")
    return f"""kernel @k(%x : !pto.memref<16x64xf32>, %y : !pto.memref<16x64xf32>, %at : index) {{
  .const %c0 = 0 : index
  .tile %a : {T}
  .tile %b : {T}
  %a = tassign %at : (index) -> {T}
  %b = tassign %at : (index) -> {T}
  %b = tload %y[%c0, %c0] : (!pto.memref<16x64xf32>) -> {T}
  %a = tload %x[%c0, %c0] : (!pto.memref<16x64xf32>) -> {T}
{sync}  %b = tadds %b, 1.0 : ({T}, f32) -> {T}
}}"""


def test_tiles_at_one_address_race_by_their_bytes() -> None:
    x, y = np.ones((16, 64), np.float32), np.zeros((16, 64), np.float32)
    res = pto.compile(pto.parse(_placed(False)), "ascend_sim", "a3")(x=x, y=y, at=4096)
    assert [h.message for h in res.hazards] == [
        "TLOAD (MTE2, line 8) writes %a and TADDS (V, line 9) writes %b: both touch UB bytes [4096, 8192) "
        "and no flag or barrier orders them"]
    res = pto.compile(pto.parse(_placed(True)), "ascend_sim", "a3")(x=x, y=y, at=4096)
    assert res.hazards == []
    res = pto.compile(pto.parse(_placed(False)), "ascend_sim", "a3")(x=x, y=y, at=8192)   # still one address
    assert len(res.hazards) == 1


def test_a_tassign_past_the_buffer_is_legal_capacity_naming_the_tile() -> None:
    exe = pto.compile(pto.parse(_placed(True)), "ascend_sim", "a3")
    with pytest.raises(pto.PTOError) as e:
        exe(x=np.ones((16, 64), np.float32), y=np.zeros((16, 64), np.float32), at=192 * 1024 - 64)
    assert e.value.code == "LEGAL_CAPACITY" and "%a (4096 bytes)" in str(e.value)
    assert e.value.location.line == 5
    exe = pto.compile(pto.parse(_placed(True)), "ascend_sim", "a5")      # a5's UB is 256 KB
    exe(x=np.ones((16, 64), np.float32), y=np.zeros((16, 64), np.float32), at=192 * 1024 - 64)


def test_global_windows_race_only_where_their_rows_meet() -> None:
    """A store by MTE3 and a load by MTE2 of the same global rows race; of disjoint rows (or
    column halves of one row block) they do not."""
    def prog(r_load: int, c_load: int) -> str:
        t = "!pto.tile<16x32xf32>"
        return f"""kernel @k(%g : !pto.memref<64x64xf32>) {{
  .const %c0 = 0 : index
  .const %rl = {r_load} : index
  .const %cl = {c_load} : index
  .tile %a : {t}
  .tile %b : {t}
  %a = tload %g[%c0, %c0] : (!pto.memref<64x64xf32>) -> {t}
  set_flag #pto.pipe<MTE2>, #pto.pipe<MTE3>, 0
  wait_flag #pto.pipe<MTE2>, #pto.pipe<MTE3>, 0
  tstore %g[%c0, %c0], %a : (!pto.memref<64x64xf32>, {t})
  %b = tload %g[%rl, %cl] : (!pto.memref<64x64xf32>) -> {t}
}}"""
    def races(r: int, c: int) -> list[str]:
        g = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
        return [h.message for h in pto.compile(pto.parse(prog(r, c)), "ascend_sim", "a3")(g).hazards]
    assert races(8, 0) and "global %g bytes [2048, 3968)" in races(8, 0)[0]
    assert races(0, 16)                       # overlapping columns of the same rows
    assert races(16, 0) == []                 # the next 16 rows
    assert races(0, 32) == []                 # the other column half of the same rows


def _eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every global access checked as it is made: the shadow told of no caller arrays (so of no
    silent range either)."""
    from openpto.backends.ascend_sim import hazards
    real = hazards.Shadow.__init__

    def init(self, kernel, mode, describe, arrays=(), uses=None):  # noqa: ANN001, ANN202
        real(self, kernel, mode, describe, [])
    monkeypatch.setattr(hazards.Shadow, "__init__", init)


@pytest.mark.parametrize("alias", [False, True])
def test_logging_the_accesses_that_cannot_race_yet_finds_what_checking_each_finds(
        alias: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shadow only logs a caller array's accesses while they are all one pipe's or all reads
    (hazards._Quiet); a copy with one flag pair missing, into another array or onto itself,
    reports the same races as checking every access when it is made."""
    def races(text: str) -> list[str]:
        src = np.arange(64 * 512, dtype=np.float32).reshape(64, 512)
        dst = src if alias else np.zeros_like(src)
        res = pto.compile(pto.parse(text), "ascend_sim", "a3")(src, dst, 64)
        return [h.message for h in res.hazards]
    texts = [_without(flag)[0] for flag in _loop_flags()]
    logged = [races(text) for text in texts]
    with monkeypatch.context() as m:
        _eager(m)
        eager = [races(text) for text in texts]
    assert logged == eager and all(logged)


def test_an_input_read_then_written_unordered_races_through_its_alias() -> None:
    """%x is only read (by MTE2) and %y only written (by MTE3): apart, nothing can race on them;
    passed the same array, the second load meets the store, which nothing orders before it."""
    t = "!pto.tile<16x64xf32>"
    m = "!pto.memref<16x64xf32>"
    text = f"""kernel @k(%x : {m}, %y : {m}) {{
  .const %c0 = 0 : index
  .tile %a : {t}
  .tile %b : {t}
  %a = tload %x[%c0, %c0] : ({m}) -> {t}
  set_flag #pto.pipe<MTE2>, #pto.pipe<MTE3>, 0
  wait_flag #pto.pipe<MTE2>, #pto.pipe<MTE3>, 0
  tstore %y[%c0, %c0], %a : ({m}, {t})
  %b = tload %x[%c0, %c0] : ({m}) -> {t}
}}"""
    exe = pto.compile(pto.parse(text), "ascend_sim", "a3")
    x = np.ones((16, 64), np.float32)
    assert exe(x, np.zeros_like(x)).hazards == []
    assert [h.message for h in exe(x, x).hazards] == [
        "TSTORE (MTE3, line 8) writes %y[0, 0] and TLOAD (MTE2, line 9) reads %x[0, 0]: both touch global %x bytes "
        "[0, 4096) and no flag or barrier orders them"]


def test_the_pipes_each_global_parameter_is_touched_from() -> None:
    """``lower.global_uses``: per global parameter, the (pipe, writes) of the instructions that
    touch it (the copy: %src read by MTE2 only, %dst written by MTE3 only); a kernel reaching a
    parameter through a tensor view gets None (its windows need not be told apart by name)."""
    from openpto.backends.ascend_sim.engine import PIPE_INDEX
    from openpto.backends.ascend_sim.lower import global_uses
    from openpto.isa.types import Pipe

    (copy,) = pto.load(EXAMPLE).kernels
    assert global_uses(copy) == {"src": {(PIPE_INDEX[Pipe.MTE2], False)}, "dst": {(PIPE_INDEX[Pipe.MTE3], True)}}
    (viewed,) = pto.parse(_VIEWED).kernels
    assert global_uses(viewed) is None


#: %g is loaded (MTE2) and stored through a view of its first 16 rows (MTE3); the second load
#: of %g reads what the store wrote, and nothing orders the store before it
_VIEWED = """kernel @k(%g : !pto.memref<64x32xf32>) {
  .const %c0 = 0 : index
  .tile %t : !pto.tile<16x32xf32>
  .tile %u : !pto.tile<16x32xf32>
  %v = pto.partition_view %g, offsets = [0, 0], sizes = [16, 32] : !pto.memref<64x32xf32> -> !pto.memref<16x32xf32>
  %t = tload %g[%c0, %c0] : (!pto.memref<64x32xf32>) -> !pto.tile<16x32xf32>
  set_flag #pto.pipe<MTE2>, #pto.pipe<MTE3>, 0
  wait_flag #pto.pipe<MTE2>, #pto.pipe<MTE3>, 0
  tstore %v[%c0, %c0], %t : (!pto.memref<16x32xf32>, !pto.tile<16x32xf32>)
  %u = tload %g[%c0, %c0] : (!pto.memref<64x32xf32>) -> !pto.tile<16x32xf32>
}"""


def test_a_store_through_a_view_races_with_a_load_of_its_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    """By name, %g is only read (by MTE2) and %v only written (by MTE3); they are the same bytes,
    so the second load races with the store, as checking every access when it is made finds."""
    def races() -> list[str]:
        g = np.ones((64, 32), np.float32)
        return [h.message for h in pto.compile(pto.parse(_VIEWED), "ascend_sim", "a3")(g).hazards]
    got = races()
    assert len(got) == 1 and got[0].startswith("TSTORE (MTE3, line 9) writes %v[0, 0] and TLOAD (MTE2, line 10) "
                                               "reads %g[0, 0]: both touch global %g bytes [0, 2048)")
    with monkeypatch.context() as m:
        _eager(m)
        assert races() == got
