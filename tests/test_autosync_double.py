"""Double-buffered auto-sync (assembler/double_buffer.py, ``autosync(..., double_buffer=True)``,
``pto sync --double-buffer``): an independent loop gets a pong copy of its tiles where both copies
fit; the result verifies, runs race-free on ascend_sim with the reference's values of the original
program for trip counts 0, 1, odd and even, and takes fewer simulated cycles than the
single-buffered sync; loops that carry a tile, or whose copies do not fit, stay single with a note."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import openpto as pto
from openpto.assembler import verify
from openpto.assembler.autosync import autosync
from openpto.assembler.double_buffer import double_buffer
from openpto.assembler.ir import Module
from openpto.cli import main

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
FLAG = re.compile(r"^\s*(set_flag|wait_flag) #pto\.pipe<(\w+)>, #pto\.pipe<(\w+)>, (\d+)")


SOFTMAX = EXAMPLES / "softmax.pto"


def _softmax32() -> str:
    """examples/softmax.pto with 32-row blocks (128 KB tiles): two copies do not fit a3's or a5's UB."""
    text = SOFTMAX.read_text()
    text = text.replace("%c16", "%c32").replace(".const %c32 = 16", ".const %c32 = 32")
    text = text.replace("16x1024xf32", "32x1024xf32").replace("16x1xf32", "32x1xf32")
    assert "16x" not in text.split("kernel @softmax", 1)[1]
    return text


def _run(m: Module, backend: str, profile: str, args: dict[str, object],
         **options: object):  # type: ignore[no-untyped-def]
    return pto.compile(m, backend, profile, **options).run(m.kernels[0].name, **args)


def _softmax_args(rows: int) -> dict[str, object]:
    x = np.random.default_rng(rows).standard_normal((max(rows, 1), 1024)).astype(np.float32)
    return {"x": x, "y": np.full_like(x, np.nan), "rows": rows}


def _expected_softmax(x: np.ndarray, rows: int) -> np.ndarray:
    """Row softmax written here in numpy (tolerance: the simulator's exp is the semantics' own)."""
    e = np.exp(x[:rows] - x[:rows].max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _both(text: str, profile: str) -> tuple[Module, Module, Module]:
    m = pto.parse(text)
    single = pto.parse(autosync(m, profile).to_text())
    double = pto.parse(autosync(m, profile, double_buffer=True).to_text())
    return m, single, double


@pytest.mark.parametrize("profile", ["a3", "a5"])
def test_softmax_double_buffered_is_faster_and_gives_the_same_values(profile: str) -> None:
    """The issue's acceptance test, on examples/softmax.pto itself (16-row blocks, 64 KB tiles)."""
    m, single, double = _both(SOFTMAX.read_text(), profile)
    verify(double, profile)
    _, notes = double_buffer(m, profile)
    assert [(n.doubled, n.tiles) for n in notes] == [(True, ("t", "max", "sum"))]
    cycles = {}
    for rows in (0, 16, 48, 64, 256):          # 16-row blocks on one core: 0, 1, 3, 4 and 16 trips
        ref = _softmax_args(rows)
        _run(m, "reference", profile, ref)
        for name, prog in (("single", single), ("double", double)):
            args = _softmax_args(rows)
            res = _run(prog, "ascend_sim", profile, args, hazards="raise")
            assert res.hazards == [] and res.counters["races"] == 0
            np.testing.assert_array_equal(args["y"], ref["y"])
            if rows:
                np.testing.assert_allclose(args["y"][:rows], _expected_softmax(args["x"], rows), rtol=1e-5)
            cycles[name, rows] = res.cycles
    for rows in (48, 64, 256):                 # a second tile lets one block load while the other computes
        assert cycles["double", rows] < cycles["single", rows]
    assert cycles["double", 256] < 0.6 * cycles["single", 256]


def test_softmax_with_32_row_blocks_does_not_fit_twice_and_is_left_single() -> None:
    """32 x 1024 f32 = 131072 bytes per %t, 32 x 1 f32 = 128 bytes per row vector (32-B aligned):
    two copies of the three take 2 x (131072 + 128 + 128) = 262656 bytes, over 192 KB and 256 KB."""
    m = pto.parse(_softmax32())
    for profile, cap in (("a3", 192 * 1024), ("a5", 256 * 1024)):
        out, notes = double_buffer(m, profile)
        assert out == m
        assert len(notes) == 1 and not notes[0].doubled
        assert notes[0].reason == (f"two copies of %t, %max, %sum need 262656 bytes of vec, more than "
                                   f"{profile}'s {cap}")
        assert autosync(m, profile, double_buffer=True).to_text() == autosync(m, profile).to_text()


EXPECTED_NOTES = {
    "vector_add.pto": [("r", False, "it carries iter_args"), ("j", True, "")],
    "softmax.pto": [("r", True, "")],
    "layernorm.pto": [("r", False, "two copies of")],
    "gemm.pto": [("i", False, "its body holds a nested loop or if"), ("j", False, "its body holds"),
                 ("k0", False, "its body holds"), ("kk", False, "its body holds")],
    "flash_attention.pto": [("qi", False, "its body holds a nested loop or if"),
                            ("kv", False, "is read before the body writes it")],
    "double_buffer_copy.pto": [("r", False, "its body already orders pipes itself")],
}


@pytest.mark.parametrize("name", sorted(EXPECTED_NOTES))
def test_every_example_loop_is_double_buffered_or_left_single_with_its_reason(name: str) -> None:
    m = pto.load(EXAMPLES / name)
    _, notes = double_buffer(m, "a3")
    got = [(n.loop.split()[0], n.doubled, n.reason) for n in notes]
    assert len(got) == len(EXPECTED_NOTES[name])
    for (loop, doubled, reason), (want_loop, want_doubled, want_reason) in zip(got, EXPECTED_NOTES[name]):
        assert (loop, doubled) == ("%" + want_loop, want_doubled)
        assert reason.startswith(want_reason) or want_reason in reason
        if not doubled:
            assert reason


@pytest.mark.parametrize("profile", ["a3", "a5"])
def test_vector_add_double_buffers_its_inner_loop(profile: str) -> None:
    """Three 32 KB tiles doubled take exactly 192 KB: they fit a3 too. Rows 0, 5 (a short valid
    block), 40 and 96; the c = a + b expectation is numpy's."""
    m, single, double = _both((EXAMPLES / "vector_add.pto").read_text(), profile)
    verify(double, profile)
    text = double.to_text()
    assert all(f".tile %{t}_pong valid_row = %vr" in text for t in ("ta", "tb", "tc"))
    for rows in (0, 5, 40, 96):
        rng = np.random.default_rng(rows)
        a, b = (rng.standard_normal((max(rows, 1), 1024)).astype(np.float32) for _ in range(2))
        got = {}
        for name, prog in (("single", single), ("double", double)):
            args = {"a": a, "b": b, "c": np.full_like(a, np.nan), "rows": rows}
            res = _run(prog, "ascend_sim", profile, args, hazards="raise")
            assert res.hazards == []
            np.testing.assert_array_equal(args["c"][:rows], a[:rows] + b[:rows])
            assert np.isnan(args["c"][rows:]).all()
            got[name] = res.cycles
        if rows:
            assert got["double"] < got["single"]


LOOP = """
kernel @k(%x : !pto.memref<?x64xf32>, %y : !pto.memref<?x64xf32>, %lo : index, %n : index, %s : index) {
  .const %c0 = 0 : index
  .tile %t : !pto.tile<16x64xf32>
  .tile %u : !pto.tile<16x64xf32>
  scf.for %i = %lo to %n step %s {
    %t = tload %x[%i, %c0] : (!pto.memref<?x64xf32>) -> !pto.tile<16x64xf32>
    %u = tadds %t, 1.0 : (!pto.tile<16x64xf32>, f32) -> !pto.tile<16x64xf32>
    tstore %y[%i, %c0], %u : (!pto.memref<?x64xf32>, !pto.tile<16x64xf32>)
  }
}
"""


@pytest.mark.parametrize("lo,n,trips", [(0, 0, 0), (16, 0, 0), (0, 16, 1), (16, 64, 3), (0, 64, 4), (0, 80, 5)])
def test_any_trip_count_gives_the_original_order(lo: int, n: int, trips: int) -> None:
    """Run-time bounds and step: the pair loop and the odd iteration after it cover exactly the
    original iterations (rows not visited keep their NaN)."""
    m = pto.parse(LOOP)
    double = pto.parse(autosync(m, "a3", double_buffer=True).to_text())
    verify(double, "a3")
    x = np.arange(80 * 64, dtype=np.float32).reshape(80, 64)
    args = {"x": x, "y": np.full_like(x, np.nan), "lo": lo, "n": n, "s": 16}
    res = _run(double, "ascend_sim", "a3", args, hazards="raise")
    assert res.hazards == []
    want = np.full_like(x, np.nan)
    for i in range(trips):
        r = lo + 16 * i
        want[r:r + 16] = x[r:r + 16] + 1
    np.testing.assert_array_equal(args["y"], want)


def test_ping_and_pong_alternate_flag_ids() -> None:
    """The pairs carried by the loop (a tile freed for the next iteration's write: V -> MTE2 for
    %t, MTE3 -> V for %u) are set before it; single-buffered one id each, double-buffered one for
    the ping and one for the pong copy, each live across the whole loop."""
    def before_loop(text: str) -> set[tuple[str, str, int]]:
        head = text.split("scf.for", 1)[0]
        return {(g.group(2), g.group(3), int(g.group(4))) for line in head.splitlines() if (g := FLAG.match(line))}
    single = autosync(pto.parse(LOOP), "a3").to_text()
    double = autosync(pto.parse(LOOP), "a3", double_buffer=True).to_text()
    assert before_loop(single) == {("V", "MTE2", 0), ("MTE3", "V", 0)}
    assert before_loop(double) == {("V", "MTE2", 0), ("MTE3", "V", 0), ("V", "MTE2", 1), ("MTE3", "V", 1)}
    assert ".tile %t_pong" in double and ".tile %u_pong" in double


def test_a_bad_step_is_still_the_loop_step_fault() -> None:
    m = pto.parse(LOOP)
    double = pto.parse(autosync(m, "a3", double_buffer=True).to_text())
    x = np.zeros((64, 64), np.float32)
    for prog in (m, double):
        with pytest.raises(pto.PTOError) as e:
            _run(prog, "ascend_sim", "a3", {"x": x, "y": x.copy(), "lo": 0, "n": 64, "s": 0})
        assert e.value.code == "RUNTIME_LOOP_STEP"


CARRIED = LOOP.replace("%t = tload %x[%i, %c0] : (!pto.memref<?x64xf32>) -> !pto.tile<16x64xf32>\n",
                       "%t = tadd %t, %u : (!pto.tile<16x64xf32>, !pto.tile<16x64xf32>) -> !pto.tile<16x64xf32>\n")
USED_AFTER = LOOP.replace("  }\n}", "  }\n  tstore %y[%c0, %c0], %u : (!pto.memref<?x64xf32>, !pto.tile<16x64xf32>)\n}")


# a window declared before the loop: a copy of it would not share its parent's bytes
WINDOWED = ("kernel @k(%g : !pto.memref<?x16xf32>, %o : !pto.memref<?x16xf32>, %n : index) {\n"
            "  .const %c0 = 0 : index\n  .const %c8 = 8 : index\n"
            "  .tile %p : !pto.tile<8x16xf32>\n  .tile %q : !pto.tile<8x16xf32>\n"
            "  %w = pto.subset %p[0, 0] sizes [8, 16] : !pto.tile<8x16xf32>\n"
            "  scf.for %r = %c0 to %n step %c8 {\n"
            "    %w = tload %g[%r, %c0] : (!pto.memref<?x16xf32>) -> !pto.tile<8x16xf32>\n"
            "    %q = tadd %p, %p : (!pto.tile<8x16xf32>, !pto.tile<8x16xf32>) -> !pto.tile<8x16xf32>\n"
            "    tstore %o[%r, %c0], %q : (!pto.memref<?x16xf32>, !pto.tile<8x16xf32>)\n  }\n}\n")


@pytest.mark.parametrize("text,reason", [(CARRIED, "%t is read before the body writes it"),
                                         (USED_AFTER, "%u is used outside the loop"),
                                         (WINDOWED, "%w shares bytes with a pto.subset window")])
def test_a_loop_that_is_not_independent_stays_single(text: str, reason: str) -> None:
    m = pto.parse(text)
    out, notes = double_buffer(m, "a3")
    assert out == m and [n.doubled for n in notes] == [False] and notes[0].reason.startswith(reason)
    assert autosync(m, "a3", double_buffer=True).to_text() == autosync(m, "a3").to_text()


def test_a_second_double_buffering_pass_changes_nothing() -> None:
    double = pto.parse(autosync(pto.load(SOFTMAX), "a3", double_buffer=True).to_text())
    assert autosync(double, "a3", double_buffer=True).to_text() == double.to_text()


def test_pto_sync_double_buffer(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["sync", str(SOFTMAX), "--double-buffer", "--profile", "a5"]) == 0
    out = capsys.readouterr()
    assert out.out == autosync(pto.load(SOFTMAX), "a5", double_buffer=True).to_text()
    assert "note: @softmax loop %r (line 32): double-buffered (%t, %max, %sum)" in out.err
    src = tmp_path / "softmax32.pto"
    src.write_text(_softmax32())
    assert main(["sync", str(src), "--double-buffer"]) == 0
    out = capsys.readouterr()
    assert out.out == autosync(pto.load(src), "a3").to_text()
    assert "left single-buffered: two copies of %t, %max, %sum need 262656 bytes of vec, more than a3's 196608" \
        in out.err
    assert main(["sync", str(SOFTMAX)]) == 0
    assert capsys.readouterr().err == ""
