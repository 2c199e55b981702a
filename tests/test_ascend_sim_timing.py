"""Timing sanity of the ascend_sim machine models against the published measurements they were
fitted to (isa/machines.py names each source): vector repeats, GM -> UB bandwidth by size, cube
OPs per cycle by shape. Each check runs the instruction through the simulator and reads its
cycles from the trace, so the op class, the path and the clock conversion are all exercised."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto
from openpto.isa import machines as M
from openpto.isa import profiles as P
from openpto.isa.registry import all_instructions


def _one(text: str, profile: str, *args: object) -> dict:
    """The single timed instruction's trace event (the program has one non-sync instruction)."""
    res = pto.compile(pto.parse(text), "ascend_sim", profile, hazards="off").run("k", *args, trace=True)
    (event,) = res.trace
    return event


def _tadd(rows: int) -> str:
    t = f"!pto.tile<{rows}x32xf32>"
    return f"""kernel @k(%a : {t}, %b : {t}, %c : {t}) {{
  %c = tadd %a, %b : ({t}, {t}) -> {t}
}}"""


@pytest.mark.parametrize("rows, repeats, measured", [(2, 1, 3.09), (26, 13, 26.0)])
def test_tadd_f32_cycles_match_the_measured_vadd(rows: int, repeats: int, measured: float) -> None:
    """910B1 VADD f32: 3.09 cycles at 1 repeat, 26.0 at 13 (a repeat is 256 bytes = 64 f32)."""
    assert rows * 32 * 4 == repeats * 256
    a = np.ones((rows, 32), np.float32)
    e = _one(_tadd(rows), "a3", a, a, np.zeros_like(a))
    assert e["name"] == "TADD" and e["pipe"] == "V"
    cycles = e["end_cycle"] - e["start_cycle"]
    assert cycles == pytest.approx(measured, rel=0.05)
    assert e["dur_ns"] == pytest.approx(cycles / 1.8)               # a3 runs at 1800 MHz


def _tload(rows: int, cols: int) -> str:
    t = f"!pto.tile<{rows}x{cols}xf32>"
    g = f"!pto.memref<{rows}x{cols}xf32>"
    return f"""kernel @k(%g : {g}) {{
  .const %c0 = 0 : index
  .tile %t : {t}
  %t = tload %g[%c0, %c0] : ({g}) -> {t}
}}"""


@pytest.mark.parametrize("profile", ["a3", "a5"])
@pytest.mark.parametrize("rows, cols, gbps", [(8, 32, 7.0), (128, 32, 68.0), (256, 256, 78.0)])
def test_gm_to_ub_bandwidth_follows_the_measured_curve(rows: int, cols: int, gbps: float, profile: str) -> None:
    """910B1 single-core GM -> UB: ~7 GB/s at 1 KB, ~68 at 16 KB, ~78 from 64 KB on (256 KB fills
    a5's UB; a3's 192 KB UB cannot hold it)."""
    nbytes = rows * cols * 4
    if nbytes > P.PROFILES[profile].capacity[P.Location.VEC]:
        pytest.skip(f"{nbytes} bytes do not fit {profile}'s UB")
    e = _one(_tload(rows, cols), profile, np.zeros((rows, cols), np.float32))
    assert e["pipe"] == "MTE2"
    assert nbytes / e["dur_ns"] == pytest.approx(gbps, rel=0.1)     # bytes per ns = GB/s


def test_small_transfers_are_latency_bound_and_large_ones_bandwidth_bound() -> None:
    m = M.get("a3")
    per_byte = [m.transfer_cycles("GM->UB", n) / n for n in (1024, 16384, 262144)]
    assert per_byte[0] > 5 * per_byte[1] > 5 * per_byte[2] * 0.9


@pytest.mark.parametrize("n, ops_per_cycle, rel", [(16, 3370, 0.2), (64, 6686, 0.05), (128, 7258, 0.05),
                                                   (208, 7591, 0.05), (1024, 8057, 0.05)])
def test_cube_ops_per_cycle_follow_the_measured_mmad_curve(n: int, ops_per_cycle: int, rel: float) -> None:
    """910B1 mmad fp16 -> f32, m = 32, k = 16: OPs/cycle rise with n towards 8192 (the 16^3 cube);
    one fixed issue overhead fits every point but the smallest within 5% (that one within 20%)."""
    left, right, acc = ("!pto.tile<32x16xf16, loc=left, layout=NZ>", f"!pto.tile<16x{n}xf16, loc=right, layout=ZN>",
                        f"!pto.tile<32x{n}xf32, loc=acc, layout=NZ>")
    text = f"""kernel @k(%a : {left}, %b : {right}, %c : {acc}) {{
  %c = tmatmul %a, %b : ({left}, {right}) -> {acc}
}}"""
    e = _one(text, "a3", np.ones((32, 16), np.float16), np.ones((16, n), np.float16), np.zeros((32, n), np.float32))
    assert e["pipe"] == "M"
    assert 2 * 32 * 16 * n / (e["end_cycle"] - e["start_cycle"]) == pytest.approx(ops_per_cycle, rel=rel)


def test_machines_read_the_profiles_and_publish_their_numbers() -> None:
    a3 = M.get("a3")
    assert a3.profile is P.PROFILES["a3"] and a3.capacity is P.PROFILES["a3"].capacity
    assert (a3.clock_mhz, a3.cube_cores, a3.vector_cores) == (1800, 24, 48)
    assert a3.profile.flag_ids(P.Pipe.MTE2, P.Pipe.V) == 8          # flag ids: the profile's own
    assert M.get("a5").clock_mhz == 1650
    for name in ("a6", "kirin9030", "kirinX90"):          # no public numbers: A5's, said so
        assert M.get(name).clock_mhz == 1650 and M.get(name).notes
    assert set(M.MACHINES) == set(P.PROFILES) - {"cpu", "cuda"}      # no NPU machine on cpu or a GPU
    with pytest.raises(pto.PTOError) as e:
        M.get("cpu")
    assert e.value.code == "SPEC_UNKNOWN_PROFILE"


def test_every_instruction_has_an_op_class_with_a_cost() -> None:
    names = {i.mnemonic for i in all_instructions()}
    assert set(M.MNEMONIC_CLASS) <= names
    timed = set(M.VECTOR_COSTS) | {"cube", "transfer", "scalar", "flag_set", "flag_wait", "barrier", "tsync",
                                   "assign"}
    for i in all_instructions():
        pipes = [i.pipe] if not callable(i.pipe) else list(M.PIPES)
        for p in pipes:
            assert M.op_class(i, p) in timed, (i.mnemonic, p)
    assert [M.op_class(pto.isa.get(n), pto.isa.get(n).pipe) for n in ("TADD", "TEXP", "TROWSUM", "TMATMUL", "TLOAD")] \
        == ["vec_binary", "vec_transcendental", "vec_reduce", "cube", "transfer"]
    for path in set(M.PATH_BY_ENDS.values()) | set(M.PIPE_DEFAULT_PATH.values()):
        assert path in M.TRANSFER_PATHS
