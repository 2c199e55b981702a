"""The auto-sync pass (assembler/autosync.py, ``pto sync``): every flag-free example, synchronised,
passes the static ORDER_* checks, runs on ascend_sim with no hazard (hazards="raise") and gives the
reference backend's values for the original program; every pair it inserts is needed (without it
the simulator reports a race); a second pass adds nothing; hand-flagged programs are kept."""
from __future__ import annotations

import dataclasses
import pathlib
import re

import numpy as np
import pytest

import openpto as pto
from openpto.assembler import verify
from openpto.assembler.autosync import autosync, sync_pairs, with_pairs
from openpto.assembler.ir import Module
from openpto.cli import main
from openpto.isa import OrderError
from openpto.isa import profiles as P

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
FLAG_FREE = ["flash_attention.pto", "gemm.pto", "layernorm.pto", "softmax.pto", "vector_add.pto"]
FLAG = re.compile(r"^\s*(set_flag|wait_flag) #pto\.pipe<(\w+)>, #pto\.pipe<(\w+)>, (\d+)")


def _args(name: str, seed: int = 3) -> dict[str, object]:
    """Small inputs per example; outputs start as NaN so an element left unwritten shows."""
    rng = np.random.default_rng(seed)
    f32, nan = np.float32, np.nan

    def r(*shape: int, dtype: type = f32) -> np.ndarray:
        return rng.standard_normal(shape).astype(dtype)
    return {
        "vector_add.pto": lambda: {"a": r(40, 1024), "b": r(40, 1024), "c": np.full((40, 1024), nan, f32),
                                   "rows": 40},
        "softmax.pto": lambda: {"x": r(96, 1024), "y": np.full((96, 1024), nan, f32), "rows": 96},
        "layernorm.pto": lambda: {"x": r(48, 1024), "gamma": r(1024), "beta": r(1024),
                                  "y": np.full((48, 1024), nan, f32), "eps": 1e-5, "rows": 48},
        "gemm.pto": lambda: {"a": r(256, 256, dtype=np.float16), "b": r(256, 256, dtype=np.float16),
                             "c": np.full((256, 256), nan, f32), "m": 256, "n": 256, "k": 256},
        "flash_attention.pto": lambda: {"q": r(128, 64), "kt": np.ascontiguousarray(r(192, 64).T), "v": r(192, 64),
                                        "o": np.full((128, 64), nan, f32), "sq": 128, "skv": 192, "scale": 0.125},
        "double_buffer_copy.pto": lambda: {"src": r(96, 512), "dst": np.full((96, 512), nan, f32), "rows": 96},
    }[name]()


def _copy(args: dict[str, object]) -> dict[str, object]:
    return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}


def _synced(name: str, profile: str = "a3") -> tuple[Module, Module]:
    """The example and its synchronised text read back (so diagnostics carry lines)."""
    m = pto.load(EXAMPLES / name)
    return m, pto.parse(autosync(m, profile).to_text())


def _run(m: Module, name: str, profile: str = "a3", **options: object):  # type: ignore[no-untyped-def]
    args = _copy(_args(name))
    res = pto.compile(m, "ascend_sim", profile, **options).run(m.kernels[0].name, **args)
    return res, args


@pytest.mark.parametrize("profile", ["a3", "a5"])
@pytest.mark.parametrize("name", FLAG_FREE)
def test_a_synced_example_is_race_free_and_gives_the_reference_values(name: str, profile: str) -> None:
    m, synced = _synced(name, profile)
    before, _ = _run(m, name, profile)
    assert before.counters["races"] > 0                      # the original really lacks flags
    verify(synced, profile)                                  # the static ORDER_* checks accept it
    res, ours = _run(synced, name, profile, hazards="raise")
    assert res.hazards == [] and res.counters["races"] == 0
    theirs = _copy(_args(name))
    ref = pto.compile(m, "reference", profile).run(m.kernels[0].name, **theirs)
    assert ref.outputs
    for out in ref.outputs:
        assert not np.isnan(theirs[out]).all()
        np.testing.assert_array_equal(ours[out], theirs[out])


@pytest.mark.parametrize("name", FLAG_FREE)
def test_every_inserted_pair_is_needed(name: str) -> None:
    """Leaving out any one pair (balanced, so the verifier still accepts it) is a race."""
    m = pto.load(EXAMPLES / name)
    k = m.kernels[0]
    pairs = sync_pairs(k, "a3")
    assert pairs
    for i in range(len(pairs)):
        fewer = pto.parse(Module((with_pairs(k, pairs[:i] + pairs[i + 1:]),)).to_text())
        verify(fewer, "a3")
        res, _ = _run(fewer, name)
        assert any(h.code == "ORDER_RACE" for h in res.hazards), f"pair {pairs[i]} of {name} is not needed"


@pytest.mark.parametrize("name", FLAG_FREE + ["double_buffer_copy.pto"])
def test_a_second_pass_adds_nothing(name: str) -> None:
    _, synced = _synced(name)
    assert sync_pairs(synced.kernels[0], "a3") == []
    assert autosync(synced, "a3").to_text() == synced.to_text()


def test_a_hand_flagged_program_is_kept_and_still_runs_clean() -> None:
    m = pto.load(EXAMPLES / "double_buffer_copy.pto")
    assert autosync(m, "a3").to_text() == m.to_text()
    res, args = _run(m, "double_buffer_copy.pto", hazards="raise")
    np.testing.assert_array_equal(args["dst"], _args("double_buffer_copy.pto")["src"])
    assert res.hazards == []


def _flags(text: str) -> list[tuple[str, str, str, int]]:
    return [(g[0], g[1], g[2], int(g[3])) for line in text.splitlines() if (mm := FLAG.match(line))
            for g in [mm.groups()]]


def test_softmax_gets_three_pairs_one_carried_by_the_loop() -> None:
    """By hand: the load before the vector work (MTE2 -> V), the vector work before the store
    (V -> MTE3), and the store before the next iteration's load (MTE3 -> MTE2: set before the loop
    and at the end of the body, waited before the load, drained after the loop)."""
    _, synced = _synced("softmax.pto")
    text = synced.to_text()
    lines = [line.strip() for line in text.splitlines()]
    loop = next(i for i, line in enumerate(lines) if line.startswith("scf.for"))
    load = next(i for i, line in enumerate(lines) if " = tload " in line)
    first_v = next(i for i, line in enumerate(lines) if " = trowmax " in line)
    last_v = next(i for i, line in enumerate(lines) if " = trowexpanddiv " in line)
    store = next(i for i, line in enumerate(lines) if line.startswith("tstore "))
    flags = {(i, f) for i, line in enumerate(lines) for f in _flags(line)}
    assert flags == {
        (loop - 1, ("set_flag", "MTE3", "MTE2", 0)), (loop + 1, ("wait_flag", "MTE3", "MTE2", 0)),
        (load + 1, ("set_flag", "MTE2", "V", 0)), (first_v - 1, ("wait_flag", "MTE2", "V", 0)),
        (last_v + 1, ("set_flag", "V", "MTE3", 0)), (store - 1, ("wait_flag", "V", "MTE3", 0)),
        (store + 1, ("set_flag", "MTE3", "MTE2", 0)), (store + 3, ("wait_flag", "MTE3", "MTE2", 0)),
    }
    assert lines[store + 2] == "}"


def test_gemm_keeps_flags_out_of_the_if_arms() -> None:
    """The matmul of either arm is waited for before the if (left/right written by MTE1) and its
    acc is handed to the FIX store after the K loop: the arms stay flag-free and balanced."""
    _, synced = _synced("gemm.pto")
    k = synced.kernels[0]
    from openpto.assembler.ir import If, TileOp
    arms = [s for s in k.walk() if isinstance(s, If)]
    assert arms and all(not (isinstance(x, TileOp) and x.instr.mnemonic.endswith("_FLAG"))
                        for s in arms for x in (*s.then_body, *s.else_body))
    got = {(f[1], f[2]) for f in _flags(synced.to_text())}
    assert {("MTE2", "MTE1"), ("MTE1", "M"), ("M", "MTE1"), ("M", "FIX"), ("FIX", "M")} <= got


NESTED = """
kernel @nested(%g : !pto.memref<?x64xf32>, %o : !pto.memref<?x64xf32>, %n : index) {
  .const %c0 = 0 : index
  .const %c16 = 16 : index
  .tile %t0 : !pto.tile<16x64xf32>
  .tile %t1 : !pto.tile<16x64xf32>
  .tile %u : !pto.tile<16x64xf32>
  %t0 = tload %g[%c0, %c0] : (!pto.memref<?x64xf32>) -> !pto.tile<16x64xf32>
  scf.for %i = %c0 to %n step %c16 {
    %u = tadd %t0, %t0 : (!pto.tile<16x64xf32>, !pto.tile<16x64xf32>) -> !pto.tile<16x64xf32>
    %t1 = tload %g[%i, %c0] : (!pto.memref<?x64xf32>) -> !pto.tile<16x64xf32>
    %u = tadd %t1, %u : (!pto.tile<16x64xf32>, !pto.tile<16x64xf32>) -> !pto.tile<16x64xf32>
    tstore %o[%i, %c0], %u : (!pto.memref<?x64xf32>, !pto.tile<16x64xf32>)
    %t0 = tload %g[%i, %c0] : (!pto.memref<?x64xf32>) -> !pto.tile<16x64xf32>
  }
}
"""


def test_pairs_live_at_once_take_their_own_ids_and_too_few_ids_is_order_flag_ids() -> None:
    """The loop-carried MTE2 -> V pair (t0 loaded at the end of one iteration, read at the start of
    the next) spans the loop; the in-body MTE2 -> V pair for t1 lives inside it: two ids (and the
    same for the V -> MTE2 pairs freeing t0 and t1). With one id per pipe pair the pass says so
    instead of sharing it."""
    m = pto.parse(NESTED)
    synced = pto.parse(autosync(m, "a3").to_text())
    verify(synced, "a3")
    for pipes in (("MTE2", "V"), ("V", "MTE2")):
        assert {f[3] for f in _flags(synced.to_text()) if f[1:3] == pipes} == {0, 1}
    g = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    o = np.zeros_like(g)
    res = pto.compile(synced, "ascend_sim", "a3", hazards="raise")(g, o, 64)
    assert res.hazards == []
    expect = np.vstack([(g[:16] if i == 0 else g[i - 16:i]) * 2 + g[i:i + 16] for i in range(0, 64, 16)])
    np.testing.assert_array_equal(o, expect)
    one = dataclasses.replace(P.get("a3"), event_ids=1)
    with pytest.raises(OrderError) as e:
        autosync(m, one)
    assert e.value.code == "ORDER_FLAG_IDS"
    assert re.search(r"needs more (MTE2 -> V|V -> MTE2) flags live at once than a3 has", e.value.message)


def test_pto_sync_prints_the_synchronised_program(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    src = EXAMPLES / "softmax.pto"
    assert main(["sync", str(src)]) == 0
    printed = capsys.readouterr().out
    assert printed == autosync(pto.load(src), "a3").to_text()
    out = tmp_path / "synced.pto"
    assert main(["sync", str(src), "--profile", "a5", "-o", str(out)]) == 0
    assert out.read_text() == autosync(pto.load(src), "a5").to_text()
    verify(pto.load(out), "a5")
    assert main(["sync", str(tmp_path / "missing.pto")]) != 0
    assert "PTO_FILE" in capsys.readouterr().err


RUN_TIME_ID = """kernel @k(%g : !pto.memref<16x16xf32>, %o : !pto.memref<16x16xf32>, %a : index) {
  .tile %t1 : !pto.tile<8x16xf32>
  .tile %t2 : !pto.tile<8x16xf32>
  .tile %u1 : !pto.tile<8x16xf32>
  .tile %u2 : !pto.tile<8x16xf32>
  %t1 = tload %g[0, 0] : (!pto.memref<16x16xf32>) -> !pto.tile<8x16xf32>
  set_flag #pto.pipe<MTE2>, #pto.pipe<V>, %a
  %t2 = tload %g[8, 0] : (!pto.memref<16x16xf32>) -> !pto.tile<8x16xf32>
  %u2 = tadd %t2, %t2 : (!pto.tile<8x16xf32>, !pto.tile<8x16xf32>) -> !pto.tile<8x16xf32>
  wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, %a
  %u1 = tadd %t1, %t1 : (!pto.tile<8x16xf32>, !pto.tile<8x16xf32>) -> !pto.tile<8x16xf32>
  tstore %o[0, 0], %u1 : (!pto.memref<16x16xf32>, !pto.tile<8x16xf32>)
  tstore %o[8, 0], %u2 : (!pto.memref<16x16xf32>, !pto.tile<8x16xf32>)
}
"""


def test_a_run_time_flag_id_on_a_pipe_pair_the_pass_needs_is_refused() -> None:
    """The pass cannot know which id a run-time flag takes, so adding one beside it could pair
    with the program's own set: ORDER_FLAG_IDS at that flag, never a silent race."""
    with pytest.raises(pto.PTOError) as e:
        autosync(pto.parse(RUN_TIME_ID), "a3")
    assert e.value.code == "ORDER_FLAG_IDS" and e.value.location.line == 7
    # the same program with the id a .const: known before the run, avoided, and the result is race-free
    const = RUN_TIME_ID.replace(", %a : index) {\n", ") {\n  .const %a = 0 : index\n")
    synced = autosync(pto.parse(const), "a3")
    added = [(str(s.args["src_pipe"].pipe.value), s.args["event_id"].value) for s in synced.kernels[0].body
             if getattr(s, "instr", None) is not None and s.instr.mnemonic == "SET_FLAG"
             and type(s.args["event_id"]).__name__ == "Lit"]
    assert ("MTE2", 1) in added and ("MTE2", 0) not in added        # %a's id 0 is avoided
