"""TPUSH / TPOP wait events (the public trailing ``WaitEvents&...``): `tpush %a, %e0, %e1 {...}`,
`%v = tpop %e0 {...}` and the public pipe forms with events after their operands are the TSYNC per
token, in order, then the plain statement; misuse is a STRUCT_* / PARSE_* diagnostic; the form
round-trips through the printer and bytecode and runs on the reference and llvm backends."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto as pto
from openpto.assembler.bytecode import dump, load_bytes
from openpto.assembler.verifier import diagnose
from openpto.isa.diagnostics import PTOError

ACC = "!pto.tile<16x16xf32, loc=acc, layout=NZ>"
VEC = "!pto.tile<16x16xf32>"
PIPE = "!pto.tpipe<0, DIR_C2V, 1024, 2>"
HEAD = f"kernel @k(%a : {ACC}, %v : {VEC}) {{\n"
# two recorded events to wait on
EVENTS = "  %e = tpush %a {FlagID = 1}\n  %f = tpush %a {FlagID = 2}\n"
CANON_EVENTS = (f"  %e = tpush %a {{FlagID = 1}} : ({ACC}) -> !pto.event\n"
                f"  %f = tpush %a {{FlagID = 2}} : ({ACC}) -> !pto.event\n")

# (statements with wait events, their canonical text written out by hand)
FORMS = [
    ("  tpush %a, %e, %f {FlagID = 0}",
     f"  tsync %e : (!pto.event)\n  tsync %f : (!pto.event)\n  tpush %a {{FlagID = 0}} : ({ACC})"),
    (f"  tpush %a, %f, %e {{FlagID = 0}} : ({ACC}, !pto.event, !pto.event)",
     f"  tsync %f : (!pto.event)\n  tsync %e : (!pto.event)\n  tpush %a {{FlagID = 0}} : ({ACC})"),
    (f"  %v = tpop %e {{FlagID = 0}} : (!pto.event) -> {VEC}",
     f"  tsync %e : (!pto.event)\n  %v = tpop {{FlagID = 0}} : () -> {VEC}"),
    (f"  %v, %h = tpop %e, %f {{FlagID = 0}} : (!pto.event, !pto.event) -> ({VEC}, !pto.event)",
     f"  tsync %e : (!pto.event)\n  tsync %f : (!pto.event)\n"
     f"  %v, %h = tpop {{FlagID = 0}} : () -> ({VEC}, !pto.event)"),
    # the public pipe forms: the pipe, then the operand, then the events
    (f"  %p = pto.initialize_pipe : {PIPE}\n"
     f"  %h = pto.tpush %a, %p, %e : ({ACC}, {PIPE}, !pto.event) -> !pto.record_event",
     f"  tsync %e : (!pto.event)\n  %h = tpush %a {{FlagID = 0, SlotNum = 2}} : ({ACC}) -> !pto.event"),
    (f"  %p = pto.initialize_pipe : {PIPE}\n"
     f"  %h = pto.tpop %p, %v, %f, %e : ({PIPE}, !pto.tile<f32, 16, 16>, !pto.event, !pto.event) -> !pto.record_event",
     f"  tsync %f : (!pto.event)\n  tsync %e : (!pto.event)\n"
     f"  %v, %h = tpop {{FlagID = 0, SlotNum = 2}} : () -> ({VEC}, !pto.event)"),
    (f"  %p = pto.initialize_pipe : {PIPE}\n  %v = pto.tpop %p, %e : ({PIPE}, !pto.event) -> {VEC}",
     f"  tsync %e : (!pto.event)\n  %v = tpop {{FlagID = 0, SlotNum = 2}} : () -> {VEC}"),
]


@pytest.mark.parametrize("written,canonical", FORMS)
def test_wait_events_are_tsyncs_before_the_statement(written: str, canonical: str) -> None:
    m = pto.parse(HEAD + EVENTS + written + "\n}\n")
    text = HEAD + CANON_EVENTS + canonical + "\n}\n"
    assert m.to_text() == text
    assert pto.parse(text) == m and load_bytes(dump(m)) == m
    assert diagnose(m, "a3") == [] and diagnose(m, "a5") == [] and diagnose(m, "cpu") == []
    fifo = m.kernels[0].body[-1]
    assert fifo.instr.mnemonic in ("TPUSH", "TPOP") and "tile" in fifo.args


def test_a_repeated_waiting_line_keeps_its_waits() -> None:
    """The second copy of a line is read from the line cache: it must still wait."""
    m = pto.parse(HEAD + EVENTS + "  tpush %a, %e {FlagID = 0}\n  tpush %a, %e {FlagID = 0}\n}\n")
    names = [s.instr.mnemonic for s in m.kernels[0].body]
    assert names == ["TPUSH", "TPUSH", "TSYNC", "TPUSH", "TSYNC", "TPUSH"]


def test_a_global_slot_push_waits_too() -> None:
    m = pto.parse(f"kernel @k(%a : {ACC}, %g : !pto.memref<16x16xf32>) {{\n" + EVENTS
                  + "  talloc %g[0, 0] {FlagID = 3, SlotNum = 2}\n  tpush %g[0, 0], %f {FlagID = 3, SlotNum = 2}\n}\n")
    *_, sync, push = m.kernels[0].body
    assert sync.args["event"].name == "f" and push.args["gmTensor"].base.name == "g"
    assert pto.parse(m.to_text()) == m and diagnose(m, "a5") == []


def _error(body: str) -> tuple[str, object, object]:
    try:
        m = pto.parse(HEAD + EVENTS + body + "\n}\n")
    except PTOError as e:
        return e.code, e.expected, e.actual
    errs = diagnose(m, "cpu")
    assert errs, "no diagnostic"
    return errs[0].code, errs[0].expected, errs[0].actual


@pytest.mark.parametrize("body,code,expected,actual", [
    ("  tpush %a, %zz {FlagID = 0}", "STRUCT_UNDEFINED", "a value defined earlier in a visible scope", "%zz"),
    ("  %v = tpop %zz {FlagID = 0}", "STRUCT_UNDEFINED", "a value defined earlier in a visible scope", "%zz"),
    ("  %x = tpush %a, %x {FlagID = 0}", "STRUCT_UNDEFINED", "a value defined earlier in a visible scope", "%x"),
    ("  scf.for %i = 0 to 2 step 1 {\n    %x = tpush %a {FlagID = 0}\n  }\n  tpush %a, %x {FlagID = 0}",
     "STRUCT_UNDEFINED", "a value defined earlier in a visible scope", "%x"),
    ("  tpush %a, %e, %v {FlagID = 0}", "STRUCT_OPERAND_KIND", "event (!pto.event)", VEC),
    ("  %v = tpop %e, %a {FlagID = 0}", "STRUCT_OPERAND_KIND", "event (!pto.event)", ACC),
    (f"  tpush %a, %e {{FlagID = 0}} : ({ACC}, f32)", "STRUCT_TYPE_MISMATCH", "!pto.event", "f32"),
    (f"  tpush %a, %e {{FlagID = 0}} : ({ACC})", "PARSE_SIGNATURE", 2, 1),
    (f"  %p = pto.initialize_pipe : {PIPE}\n  pto.tpush %a, %p, %zz", "STRUCT_UNDEFINED",
     "a value defined earlier in a visible scope", "%zz"),
])
def test_wait_event_misuse(body: str, code: str, expected: object, actual: object) -> None:
    assert _error(body) == (code, expected, actual)


@pytest.mark.parametrize("body", [f"  tpush %a, %e : ({ACC}, !pto.event", f"  tpush %a, %e : ({ACC}",
                                  "  tpush %a, %e : (", "  %v = tpop %e : (!pto.event", "  %v = tpop %e : ("])
def test_an_unclosed_signature_after_wait_events_is_a_parse_error(body: str) -> None:
    with pytest.raises(PTOError) as e:
        pto.parse(HEAD + EVENTS + body + "\n}\n")
    assert e.value.code == "PARSE_TOKEN"


RUN = HEAD + (f"  %p = pto.initialize_pipe : {PIPE}\n"
              f"  %e = pto.tpush %a, %p : ({ACC}, {PIPE}) -> !pto.record_event\n"
              f"  %f = pto.tpop %p, %v, %e : ({PIPE}, !pto.tile<f32, 16, 16>, !pto.event) -> !pto.record_event\n"
              f"  %g = pto.tpush %a, %p, %e, %f : ({ACC}, {PIPE}, !pto.event, !pto.event) -> !pto.record_event\n"
              f"  pto.tpop %p, %v, %g : ({PIPE}, !pto.tile<f32, 16, 16>, !pto.event)\n}}\n")


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_waiting_push_and_pop_run_in_program_order(backend: str, tmp_path: pathlib.Path) -> None:
    a = (np.arange(256, dtype=np.float32) * 0.5 - 7).reshape(16, 16)
    v = np.full((16, 16), -1, np.float32)
    opts = {"cache_dir": tmp_path} if backend == "llvm" else {}
    pto.compile(pto.parse(RUN), backend, "a3", **opts).run("k", a=a, v=v)
    np.testing.assert_array_equal(v, a)            # a C2V pop hands the acc tile over unchanged
    # waiting does not make a pop succeed: with nothing pushed it still faults
    empty = HEAD + EVENTS.replace("tpush %a {FlagID = 2}", "tpush %a {FlagID = 1}") + \
        "  %v = tpop %e, %f {FlagID = 0}\n}\n"
    with pytest.raises(PTOError) as e:
        pto.compile(pto.parse(empty.replace("%v = tpop %e, %f {FlagID = 0}",
                                            f"%v = tpop %e, %f {{FlagID = 0}} : (!pto.event, !pto.event) -> {VEC}")),
                    backend, "cpu", **opts).run("k", a=a, v=v)
    assert e.value.code == "RUNTIME_FIFO_EMPTY"


GM_FLOW = ("kernel @k(%g : !pto.memref<16x16xf32>) {\n"
           "  %h = talloc %g[0, 0] {FlagID = 3, SlotNum = 2}\n"
           "  %e = tpush %g[0, 0], %h {FlagID = 3, SlotNum = 2}\n"
           "  talloc %g[0, 0], %e, %h {FlagID = 3, SlotNum = 2}\n}\n")


def test_talloc_records_and_waits_on_events_like_push_and_pop() -> None:
    """The public TALLOC returns a RecordEvent and takes WaitEvents too."""
    m = pto.parse(GM_FLOW)
    canonical = ("kernel @k(%g : !pto.memref<16x16xf32>) {\n"
                 "  %h = talloc %g[0, 0] {FlagID = 3, SlotNum = 2} : (!pto.memref<16x16xf32>) -> !pto.event\n"
                 "  tsync %h : (!pto.event)\n"
                 "  %e = tpush %g[0, 0] {FlagID = 3, SlotNum = 2} : (!pto.memref<16x16xf32>) -> !pto.event\n"
                 "  tsync %e : (!pto.event)\n  tsync %h : (!pto.event)\n"
                 "  talloc %g[0, 0] {FlagID = 3, SlotNum = 2} : (!pto.memref<16x16xf32>)\n}\n")
    assert m.to_text() == canonical
    assert pto.parse(canonical) == m and load_bytes(dump(m)) == m
    assert diagnose(m, "a3") == [] and diagnose(m, "a5") == []


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_talloc_events_run_and_the_fifo_still_fills(backend: str, tmp_path: pathlib.Path) -> None:
    opts = {"cache_dir": tmp_path} if backend == "llvm" else {}
    g = np.zeros((16, 16), np.float32)
    pto.compile(pto.parse(GM_FLOW), backend, "a3", **opts).run("k", g=g)
    # three allocations of a 2-slot FIFO with nothing popped: the waits do not free a slot
    full = GM_FLOW[:-2] + "  talloc %g[0, 0], %e {FlagID = 3, SlotNum = 2}\n}\n"
    with pytest.raises(PTOError) as e:
        pto.compile(pto.parse(full), backend, "a3", **opts).run("k", g=g)
    assert e.value.code == "RUNTIME_FIFO_FULL"
