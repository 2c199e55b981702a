"""The public ``!pto.tpipe`` spellings of TPUSH / TPOP / TALLOC / TFREE: each parses to the
attribute form with the FIFO the pipe names, verifies, runs on the reference and llvm backends
to a hand-computed result, prints and reparses to the same module, survives bytecode; bad
pipes and inconsistent uses are PTOErrors with their codes."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError
from openpto.assembler.bytecode import load_bytes
from openpto.isa.tpipe import PipeDir, parse_tpipe

from llvm_support import run_program

ACC = "!pto.tile<16x16xf32, loc=acc, layout=NZ>"
VEC = "!pto.tile<16x16xf32>"
MAT = "!pto.tile<16x16xf32, loc=mat, layout=NZ>"
C2V = "!pto.tpipe<0, DIR_C2V, 1024, 4>"

# (a statement as the public pages spell it, its canonical twin) on pipe %p = C2V
SPELLINGS = [
    (f"%e = pto.tpush %a, %p : ({ACC}, {C2V}) -> !pto.record_event",     # the RecordEvent is kept
     f"%e = tpush %a {{FlagID = 0, SlotNum = 4}} : ({ACC}) -> !pto.event"),
    (f"pto.tpush ins(%a : !pto.tile_buf<acc, f32, 16, 16, 16, 16, col_major, row_major>) pipe(%p : {C2V})",
     "tpush %a {FlagID = 0, SlotNum = 4}"),
    ("pto.tpush %a, %p", "tpush %a {FlagID = 0, SlotNum = 4}"),
    (f"pto.tpop pipe(%p : {C2V}) outs(%v : !pto.tile_buf<vec, f32, 16, 16, 16, 16>)",
     f"%v = tpop {{FlagID = 0, SlotNum = 4}} : () -> {VEC}"),
    (f"%e = pto.tpop %p, %v : ({C2V}, !pto.tile<f32, 16, 16>) -> !pto.record_event",
     f"%v, %e = tpop {{FlagID = 0, SlotNum = 4}} : () -> ({VEC}, !pto.event)"),
    (f"%v = pto.tpop %p : ({C2V}) -> {VEC}", f"%v = tpop {{FlagID = 0, SlotNum = 4}} : () -> {VEC}"),
    ("pto.tpop pipe(%p) outs(%v : !pto.tile<f32, 16, 16>)", f"%v = tpop {{FlagID = 0, SlotNum = 4}} : () -> {VEC}"),
    ("pto.talloc %p, %g[0, 0] : (" + C2V + ", !pto.memref<16x16xf32>)", "talloc %g[0, 0] {FlagID = 0, SlotNum = 4}"),
    ("pto.tpush %g[0, 0], %p", "tpush %g[0, 0] {FlagID = 0, SlotNum = 4}"),
    ("pto.tpop %p, %g[0, 0]", "tpop %g[0, 0] {FlagID = 0, SlotNum = 4}"),
    ("pto.tfree %p, %g[0, 0]", "tfree %g[0, 0] {FlagID = 0, SlotNum = 4}"),
    (f"pto.tfree %p : {C2V}", "tfree {FlagID = 0, SlotNum = 4}"),
    ("pto.tfree pipe(%p)", "tfree {FlagID = 0, SlotNum = 4}"),
]

HEAD = (f"kernel @k(%a : {ACC}, %v : {VEC}, %g : !pto.memref<16x16xf32>) {{\n"
        f"  %p = pto.initialize_pipe : {C2V}\n")


@pytest.mark.parametrize("public, canonical", SPELLINGS)
def test_public_spelling_is_its_canonical_twin(public: str, canonical: str) -> None:
    m = pto.parse(HEAD + "  " + public + "\n}\n")
    twin = pto.parse(HEAD.replace(f"  %p = pto.initialize_pipe : {C2V}\n", "") + "  " + canonical + "\n}\n")
    assert m == twin
    assert pto.parse(m.to_text()) == m
    assert load_bytes(m.to_bytes()) == m
    assert "tpipe" not in m.to_text() and "initialize_pipe" not in m.to_text()


PROGRAM = """
kernel @k(%a : !pto.tile<8x16xf32, loc=acc, layout=NZ>, %v : !pto.tile<4x16xf32>,
          %w : !pto.tile<8x16xf32>, %m : !pto.tile<4x16xf32, loc=mat, layout=NZ>) {
  %c2v = pto.initialize_pipe : !pto.tpipe<FlagID=3, Dir=DIR_C2V, SlotSize=512, SlotNum=2>
  %both = pto.initialize_pipe : !pto.tpipe<6, DIR_BOTH, 512, 1>
  %e0 = pto.tpush %a, %c2v {Split = #pto.split<TILE_UP_DOWN>} : (!pto.tile<8x16xf32, loc=acc, layout=NZ>, !pto.tpipe<3, DIR_C2V, 512, 2>) -> !pto.record_event
  pto.tpop pipe(%c2v : !pto.tpipe<3, DIR_C2V, 512, 2>) outs(%v : !pto.tile<4x16xf32>) {Split = #pto.split<TILE_UP_DOWN>}
  pto.tpush ins(%a : !pto.tile<8x16xf32, loc=acc, layout=NZ>) pipe(%both : !pto.tpipe<6, DIR_BOTH, 512, 1>)
  pto.tpush ins(%v : !pto.tile<4x16xf32>) pipe(%both : !pto.tpipe<6, DIR_BOTH, 512, 1>)
  %e1 = pto.tpop %both, %m : (!pto.tpipe<6, DIR_BOTH, 512, 1>, !pto.tile<4x16xf32, loc=mat, layout=NZ>) -> !pto.record_event
  %w = pto.tpop %both : (!pto.tpipe<6, DIR_BOTH, 512, 1>) -> !pto.tile<8x16xf32>
}
"""


def test_a_program_through_two_pipes_runs_on_both_backends() -> None:
    """C2V with a row split (vector sub-block 0 gets the upper 4 rows), then a bidirectional
    pipe whose two FIFOs (FlagID 6 cube -> vector, 8 vector -> cube) stay apart."""
    m = pto.parse(PROGRAM)
    pto.check(m, profile="cpu")
    ops = [s for s in m.kernels[0].body]
    assert [(s.instr.mnemonic, s.attrs["FlagID"], s.attrs["SlotNum"]) for s in ops] == [
        ("TPUSH", 3, 2), ("TPOP", 3, 2), ("TPUSH", 6, 1), ("TPUSH", 8, 1), ("TPOP", 8, 1), ("TPOP", 6, 1)]
    a = np.arange(128, dtype=np.float32).reshape(8, 16) - 50.5
    want_v = a[:4].copy()                          # sub-block 0's rows of the split push
    for backend in ("reference", "llvm"):
        code, out = run_program(PROGRAM, backend, {"a": a, "v": np.zeros((4, 16), np.float32),
                                                    "w": np.zeros((8, 16), np.float32),
                                                    "m": np.zeros((4, 16), np.float32)})
        assert code is None, backend
        np.testing.assert_array_equal(out["v"], want_v)
        np.testing.assert_array_equal(out["m"], want_v)    # v went vector -> cube unchanged
        np.testing.assert_array_equal(out["w"], a)         # the whole acc tile, cube -> vector
    assert pto.parse(m.to_text()) == m and load_bytes(m.to_bytes()) == m


def test_a_pipe_declared_in_the_kernel_serves_loops() -> None:
    """Rows pushed vector -> cube in one loop come out in order in the next: the mat tile
    holds row k after k + 1 pops; one pop more than pushes is an empty FIFO."""
    text = """
kernel @k(%x : !pto.memref<4x16xf32>, %u : !pto.tile<1x16xf32, loc=mat, layout=NZ>, %n : index) {
  %q = pto.initialize_pipe : !pto.tpipe<1, DIR_V2C, 64, 4>
  .tile %t : !pto.tile<1x16xf32>
  scf.for %i = 0 to 4 step 1 {
    %t = tload %x[%i, 0] : (!pto.memref<4x16xf32>) -> !pto.tile<1x16xf32>
    pto.tpush ins(%t : !pto.tile<1x16xf32>) pipe(%q : !pto.tpipe<1, DIR_V2C, 64, 4>)
  }
  scf.for %i = 0 to %n step 1 {
    pto.tpop pipe(%q) outs(%u : !pto.tile<1x16xf32, loc=mat, layout=NZ>)
  }
}
"""
    x = np.arange(64, dtype=np.float32).reshape(4, 16) * 0.25
    for backend in ("reference", "llvm"):
        for n in (1, 3, 4):
            code, out = run_program(text, backend, {"x": x, "u": np.zeros((1, 16), np.float32), "n": n})
            assert code is None, (backend, code)
            np.testing.assert_array_equal(out["u"], x[n - 1:n])
        assert run_program(text, backend, {"x": x, "u": np.zeros((1, 16), np.float32), "n": 5})[0] == \
            "RUNTIME_FIFO_EMPTY"


def test_the_pipe_fixes_slot_num_so_a_fifth_push_is_full() -> None:
    text = """
kernel @k(%t : !pto.tile<1x16xf32>) {
  %q = pto.initialize_pipe : !pto.tpipe<1, DIR_V2C, 64, 4>
  scf.for %i = 0 to 5 step 1 {
    pto.tpush %t, %q
  }
}
"""
    for backend in ("reference", "llvm"):
        assert run_program(text, backend, {"t": np.ones((1, 16), np.float32)})[0] == "RUNTIME_FIFO_FULL"


def test_the_type_reads_every_parameter() -> None:
    p = parse_tpipe("!pto.tpipe<flag_id=2, dir=Direction::DIR_BOTH_GM, slot_size=0x400, slot_num=8, "
                    "local_slot_num=3, is_no_split=true, en_unit_flag=1>")
    assert (p.flag_id, p.dir, p.slot_size, p.slot_num, p.local_slot_num, p.no_split, p.unit_flag) == \
        (2, PipeDir.DIR_BOTH_GM, 1024, 8, 3, True, True)
    assert list(p.flags) == [2, 3, 4, 5]
    assert parse_tpipe(str(p)) == p
    assert parse_tpipe("!pto.tpipe<0, 1, 16, 2>").dir is PipeDir.DIR_C2V
    assert str(parse_tpipe("!pto.tpipe<0, c2v, 16, 2, 2, false>")) == "!pto.tpipe<0, DIR_C2V, 16, 2>"


MALFORMED_TYPES = [
    "!pto.tpipe<>", "!pto.tpipe<0, DIR_C2V, 1024>", "!pto.tpipe<0, DIR_SIDEWAYS, 1024, 2>",
    "!pto.tpipe<0, DIR_V2C_CTRL, 4, 2>", "!pto.tpipe<15, DIR_C2V, 1024, 2>", "!pto.tpipe<13, DIR_BOTH, 1024, 2>",
    "!pto.tpipe<-1, DIR_C2V, 1024, 2>", "!pto.tpipe<0, DIR_C2V, 1024, 0>", "!pto.tpipe<0, DIR_C2V, 1024, 17>",
    "!pto.tpipe<0, DIR_C2V, 0, 2>", "!pto.tpipe<0, DIR_C2V, big, 2>", "!pto.tpipe<0, DIR_C2V, 64, 2, 2, maybe>",
    "!pto.tpipe<0, DIR_C2V, 64, 2, 2, false, false, 1>", "!pto.tpipe<flag=0, DIR_C2V, 64, 2>",
    "!pto.tpipe<0, DIR_C2V, 64, 2, depth=3>", "!pto.tpipe<0, DIR_C2V, 64, 2, flag=1>", "!pto.tpipe<0, , 64, 2>",
]


@pytest.mark.parametrize("body", MALFORMED_TYPES)
def test_malformed_pipe_types_are_parse_type(body: str) -> None:
    with pytest.raises(PTOError) as e:
        pto.parse(f"kernel @k() {{\n  %p = pto.initialize_pipe : {body}\n}}\n")
    assert e.value.code == "PARSE_TYPE"
    assert e.value.location.line == 2


def _code(body: str, params: str = f"%a : {ACC}, %v : {VEC}, %m : {MAT}, %g : !pto.memref<16x16xf32>") -> str:
    with pytest.raises(PTOError) as e:
        pto.parse(f"kernel @k({params}) {{\n{body}\n}}\n")
    return e.value.code


@pytest.mark.parametrize("body, code", [
    # a push or pop on the side the pipe's direction does not carry
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_V2C, 1024, 2>\npto.tpush %a, %p", "STRUCT_PIPE_DIRECTION"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V_GM, 1024, 2>\npto.tpush %v, %p", "STRUCT_PIPE_DIRECTION"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2>\npto.tpop pipe(%p) outs(%m : " + MAT + ")",
     "STRUCT_PIPE_DIRECTION"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_V2C, 1024, 2>\n%v = pto.tpop %p : (!pto.tpipe<0, DIR_V2C, 1024, 2>) -> "
     + VEC, "STRUCT_PIPE_DIRECTION"),
    # two pipes sharing a flag (a pipe claims FlagID and FlagID + 1; both directions + 2, + 3)
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2>\n%q = pto.initialize_pipe : "
     "!pto.tpipe<1, DIR_V2C, 1024, 2>", "STRUCT_PIPE_FLAGS"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_BOTH, 1024, 2>\n%q = pto.initialize_pipe : "
     "!pto.tpipe<3, DIR_V2C, 1024, 2>", "STRUCT_PIPE_FLAGS"),
    ("%p = pto.initialize_pipe : !pto.tpipe<4, DIR_C2V, 1024, 2>\n%q = pto.initialize_pipe : "
     "!pto.tpipe<4, DIR_C2V, 1024, 2>", "STRUCT_PIPE_FLAGS"),
    # what the statement writes contradicts the pipe, or the pipe cannot hold the tile
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2>\npto.tpush %a, %p {FlagID = 1}", "STRUCT_PIPE_CONFIG"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2>\npto.tpush %a, %p {SlotNum = 3}", "STRUCT_PIPE_CONFIG"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1023, 2>\npto.tpush %a, %p", "STRUCT_PIPE_CONFIG"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2, 2, true>\n"
     "pto.tpush %a, %p {Split = #pto.split<TILE_UP_DOWN>}", "STRUCT_PIPE_CONFIG"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_BOTH, 1024, 2>\npto.talloc %p, %g[0, 0]", "STRUCT_PIPE_CONFIG"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2>\n%q = pto.initialize_pipe : "
     "!pto.tpipe<2, DIR_C2V, 1024, 2>\npto.tpush %a, %p, %q", "STRUCT_PIPE_CONFIG"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2>\npto.tpush ins(%a : " + ACC + ") pipe(%a)",
     "STRUCT_PIPE_CONFIG"),
    # the pipe's type at a use differs from its declaration; names and arity
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2>\npto.tpush %a, %p : (" + ACC
     + ", !pto.tpipe<0, DIR_C2V, 1024, 4>)", "STRUCT_TYPE_MISMATCH"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2>\n%p = pto.initialize_pipe : "
     "!pto.tpipe<8, DIR_C2V, 1024, 2>", "STRUCT_REDEFINED"),
    ("%a = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2>", "STRUCT_REDEFINED"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2>\n%p = tadd %v, %v : (" + VEC + ", " + VEC + ") -> "
     + VEC + "\npto.tpush %a, %p", "STRUCT_REDEFINED"),
    ("%p, %q = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2>", "PARSE_ARITY"),
    ("%p = pto.initialize_pipe", "PARSE_TOKEN"),
    ("%p = pto.initialize_pipe : !pto.tpipe<0, DIR_C2V, 1024, 2>\n%s = tadd %v, %p : (" + VEC + ", " + VEC + ") -> "
     + VEC, "STRUCT_UNDEFINED"),
    # a pipe type anywhere but a pipe declaration or a FIFO statement that names the pipe
    ("pto.tpush %a : (" + ACC + ", !pto.tpipe<0, DIR_C2V, 1024, 2>)", "PARSE_TYPE"),
])
def test_inconsistent_pipes_are_rejected(body: str, code: str) -> None:
    assert _code(body) == code


def test_a_pipe_is_not_a_kernel_parameter() -> None:
    assert _code("", "%p : !pto.tpipe<0, DIR_C2V, 1024, 2>") == "PARSE_TYPE"
    with pytest.raises(PTOError) as e:
        pto.parse(".arg %p : !pto.tpipe<0, DIR_C2V, 1024, 2>\n")
    assert e.value.code == "PARSE_TYPE"


def test_pipes_belong_to_their_kernel() -> None:
    """Two kernels may use the same flags; a pipe of one kernel is unknown in the next."""
    two = (f"kernel @a(%a : {ACC}) {{\n  %p = pto.initialize_pipe : {C2V}\n  pto.tpush %a, %p\n}}\n"
           f"kernel @b(%a : {ACC}) {{\n  %p = pto.initialize_pipe : {C2V}\n  pto.tpush %a, %p\n}}\n")
    m = pto.parse(two)
    assert [k.body[0].attrs["FlagID"] for k in m.kernels] == [0, 0]
    with pytest.raises(PTOError) as e:
        pto.parse(f"kernel @a(%a : {ACC}) {{\n  %p = pto.initialize_pipe : {C2V}\n}}\n"
                  f"kernel @b(%a : {ACC}) {{\n  pto.tpush %a, %p\n}}\n")
    assert e.value.code == "STRUCT_UNDEFINED"


def test_mutated_pipe_programs_give_a_module_or_a_ptoerror() -> None:
    """The fuzzers' own mutators over the pipe program: parse, print and reparse never raise
    anything but PTOError, and whatever parses round-trips."""
    import random

    from openpto.fuzz.mutate import mutate_chars, mutate_lines, mutate_tokens

    rng = random.Random(14)
    words = PROGRAM.replace("(", " ( ").replace(")", " ) ").replace(",", " , ").split(" ")
    vocab = sorted(set(words) | {"pipe(", "!pto.tpipe<>", "-> !pto.record_event", "%both", "%c2v"})
    parsed = 0
    for i in range(400):
        pick = i % 3
        text = (mutate_chars(PROGRAM, rng) if pick == 0 else mutate_lines(PROGRAM, rng) if pick == 1
                else " ".join(mutate_tokens(words, vocab, rng)))
        try:
            m = pto.parse(text)
        except PTOError:
            continue
        parsed += 1
        assert pto.parse(m.to_text()) == m
    assert parsed > 20          # the mutations are not all fatal: the round trip is exercised


def test_a_pipe_group_may_start_a_continuation_line() -> None:
    text = (f"kernel @k(%a : {ACC}, %v : {VEC}) {{\n  %p = pto.initialize_pipe : {C2V}\n"
            f"  pto.tpush ins(%a : {ACC})\n      pipe(%p : {C2V})\n"
            f"  pto.tpop pipe(%p : {C2V})\n      outs(%v : {VEC})\n}}\n")
    m = pto.parse(text)
    assert [s.instr.mnemonic for s in m.kernels[0].body] == ["TPUSH", "TPOP"]
    assert all(s.attrs == {"FlagID": 0, "SlotNum": 4} for s in m.kernels[0].body)
