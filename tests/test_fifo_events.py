"""TPUSH / TPOP event results (the public RecordEvent): `%e = tpush ...`, `%v, %e = tpop ...`
and the public pipe forms keep the token as a `!pto.event` value that `tsync %e` (one or several
tokens) waits on; misuse is a STRUCT_* diagnostic; the form round-trips through the printer and
bytecode and runs on the reference and llvm backends."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto as pto
from openpto.assembler.bytecode import dump, load_bytes
from openpto.assembler.verifier import diagnose
from openpto.isa.diagnostics import PTOError
from openpto.isa.types import EVENT

ACC = "!pto.tile<16x16xf32, loc=acc, layout=NZ>"
VEC = "!pto.tile<16x16xf32>"
PIPE = "!pto.tpipe<0, DIR_C2V, 1024, 2>"
HEAD = f"kernel @k(%a : {ACC}, %v : {VEC}) {{\n"

CANONICAL = HEAD + (f"  %e = tpush %a {{FlagID = 0, SlotNum = 2}} : ({ACC}) -> !pto.event\n"
                    "  tsync %e : (!pto.event)\n"
                    f"  %v, %f = tpop {{FlagID = 0, SlotNum = 2}} : () -> ({VEC}, !pto.event)\n"
                    "  tsync %f : (!pto.event)\n}\n")
PUBLIC = HEAD + (f"  %p = pto.initialize_pipe : {PIPE}\n"
                 f"  %e = pto.tpush %a, %p : ({ACC}, {PIPE}) -> !pto.record_event\n"
                 "  tsync %e\n"
                 f"  %f = pto.tpop %p, %v : ({PIPE}, !pto.tile<f32, 16, 16>) -> !pto.record_event\n"
                 "  tsync %f : !pto.event\n}\n")


def test_public_event_results_are_the_canonical_event_values() -> None:
    m = pto.parse(PUBLIC)
    assert m == pto.parse(CANONICAL)
    assert m.to_text() == CANONICAL
    push, _, pop, _ = m.kernels[0].body
    assert push.args["event"].type is EVENT and pop.args["event"].type is EVENT
    assert load_bytes(dump(m)) == m and diagnose(m, "a3") == [] and diagnose(m, "a5") == []


def test_event_result_needs_no_signature_and_tsync_takes_several_tokens() -> None:
    text = HEAD + ("  %e = tpush %a {FlagID = 0}\n  %g = tpush %a {FlagID = 1}\n"
                   "  tsync %e, %g : !pto.event, !pto.event\n}\n")
    m = pto.parse(text)
    waits = [s for s in m.kernels[0].body if s.instr.mnemonic == "TSYNC"]
    assert [w.args["event"].name for w in waits] == ["e", "g"]          # one TSYNC per token, in order
    assert pto.parse(m.to_text()) == m and load_bytes(dump(m)) == m


def test_a_plain_push_without_a_result_stays_a_push() -> None:
    m = pto.parse(HEAD + "  tpush %a {FlagID = 0}\n  tpush %a {FlagID = 0}\n}\n")
    assert all("event" not in s.args for s in m.kernels[0].body)


def _errors(body: str) -> list[tuple[str, str | None, str | None]]:
    try:
        m = pto.parse(HEAD + body + "\n}\n")
    except PTOError as e:
        return [(e.code, e.expected, e.actual)]
    return [(e.code, e.expected, e.actual) for e in diagnose(m, "cpu")]


@pytest.mark.parametrize("body,code,expected,actual", [
    ("  %e = tpush %a {FlagID = 0}\n  %e = tpush %a {FlagID = 0}", "STRUCT_REDEFINED", "a new name for each "
     "recorded event", "%e : !pto.event"),
    ("  tsync %e", "STRUCT_UNDEFINED", "a value defined earlier in a visible scope", "%e"),
    ("  scf.for %i = 0 to 2 step 1 {\n    %e = tpush %a {FlagID = 0}\n  }\n  tsync %e", "STRUCT_UNDEFINED",
     "a value defined earlier in a visible scope", "%e"),
    ("  tsync %a", "STRUCT_OPERAND_KIND", "event", ACC),
    ("  %e = tpush %a {FlagID = 0}\n  %x = tpush %e {FlagID = 0}", "STRUCT_OPERAND_KIND", "tile", "!pto.event"),
    (f"  %e = tpush %a {{FlagID = 0}} : ({ACC}) -> f32", "STRUCT_OPERAND_KIND", "event", "f32"),
    ("  %e = tpush %a {FlagID = 0}\n  tsync %e, %a", "STRUCT_OPERAND_KIND", "event (!pto.event)", ACC),
    ("  %e = tpush %a {FlagID = 0}\n  %g = tpush %a {FlagID = 1}\n  tsync %e, %g : !pto.event, f32",
     "STRUCT_TYPE_MISMATCH", "!pto.event", "f32"),
    (f"  %x = tadd %v, %v : ({VEC}, {VEC}) -> !pto.record_event", "STRUCT_OPERAND_KIND", "tile", "!pto.event"),
])
def test_event_misuse(body: str, code: str, expected: str, actual: str) -> None:
    errs = _errors(body)
    assert errs and errs[0][0] == code
    assert errs[0][1] == expected and errs[0][2] == actual


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_events_run_in_program_order_on_both_backends(backend: str, tmp_path: pathlib.Path) -> None:
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    v = np.zeros((16, 16), np.float32)
    opts = {"cache_dir": tmp_path} if backend == "llvm" else {}
    pto.compile(pto.parse(PUBLIC), backend, "a3", **opts).run("k", a=a, v=v)
    np.testing.assert_array_equal(v, a)
    empty = HEAD + "  %v, %f = tpop {FlagID = 0} : () -> (" + VEC + ", !pto.event)\n  tsync %f\n}\n"
    with pytest.raises(PTOError) as e:                  # the pop still faults as a pop: nothing pushed
        pto.compile(pto.parse(empty), backend, "cpu", **opts).run("k", a=a, v=v)
    assert e.value.code == "RUNTIME_FIFO_EMPTY"
