"""Diagnostics that tell the user what to change: did-you-mean suggestions for unknown names,
layout errors at the tile declaration, and statically known out-of-bounds global windows."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import openpto as pto
from openpto.assembler import Kernel, Module, TileOp, Value, diagnose, load_bytes
from openpto.isa import profiles, registry
from openpto.isa.suggest import did_you_mean, nearest
from openpto.isa.types import parse_type

T = "!pto.tile<16x16xf32>"
PRELUDE = f".arg %a : {T}\n.arg %i : index\n"


def errors(text: str, profile: str | None = "cpu") -> list[pto.PTOError]:
    """Every diagnostic of parsing then verifying ``text``."""
    try:
        m = pto.parse(text, filename="k.pto")
    except pto.PTOErrorGroup as g:
        return g.errors
    except pto.PTOError as e:
        return [e]
    return diagnose(m, profile)


def only(text: str, profile: str | None = "cpu") -> pto.PTOError:
    errs = errors(text, profile)
    assert len(errs) == 1, [e.render() for e in errs]
    return errs[0]


# --------------------------------------------------------------------------- did you mean

def test_nearest_is_case_insensitive_strips_prefixes_and_keeps_the_candidate_spelling() -> None:
    assert nearest("TMUL_S", ["tmuls", "tmul", "tadd"]) == ["tmuls"]
    assert nearest("pto.tloadd", ["tload", "tstore"]) == ["tload"]
    assert nearest("cmpmode", ["cmpMode", "roundMode"]) == ["cmpMode"]
    assert nearest("xyzzy", ["tload", "tstore"]) == []
    assert nearest("x" * 1000, ["x"]) == []          # no quadratic search on huge names
    assert did_you_mean("tadx", ["tadd", "tand", "tabs"]) == ", did you mean tadd or tand?"
    assert did_you_mean("zzz", ["tadd"]) == ""


SUGGESTIONS = [
    # (statement after the prelude, code, expected message)
    ("%d = tmul_s %a, 1.0", "PARSE_UNKNOWN_MNEMONIC", "unknown mnemonic 'tmul_s', did you mean tmuls?"),
    ("%d = pto.TLOADD %a", "PARSE_UNKNOWN_MNEMONIC", "unknown mnemonic 'pto.TLOADD', did you mean tload?"),
    ("%c = arith.addx %i, %i : index", "PARSE_UNKNOWN_MNEMONIC",
     "unknown mnemonic 'arith.addx', did you mean arith.addf, arith.addi or tadd?"),
    ("scf.fro", "PARSE_UNKNOWN_MNEMONIC", "unknown mnemonic 'scf.fro', did you mean for?"),
    ("%d = frobnicate %a", "PARSE_UNKNOWN_MNEMONIC", "unknown mnemonic 'frobnicate'"),
    (".tiel %t : !pto.tile<16x16xf32>", "PARSE_DIRECTIVE", "unknown directive '.tiel', did you mean .tile?"),
    ("%m = tcmp %a, %a {cmpmode = GT}", "STRUCT_UNKNOWN_ATTR",
     "tcmp has no attribute 'cmpmode', did you mean cmpMode?"),
    ("%m = tcmp %a, %a {cmpMode = GTT}", "PARSE_ATTR", "'GTT' is not a CmpMode, did you mean GT?"),
    ("%m = tcmp %a, %a {cmpMode = #pto.cpm<GT>}", "PARSE_ATTR", "unknown attribute kind 'cpm', did you mean cmp?"),
    ("%c = arith.cmpi sltt, %i, %i", "PARSE_ATTR", "'sltt' is not a cmpi predicate, did you mean slt?"),
    ("barrier(TVECC)", "PARSE_ATTR", "'TVECC' names no operation class with one pipe, did you mean TVEC?"),
    (".arg %b : f23", "PARSE_TYPE", "unknown type in type 'f23', did you mean f32?"),
    (".arg %b : !pto.tlie<16x16xf32>", "PARSE_TYPE", "unknown type in type '!pto.tlie<16x16xf32>', did you mean !pto.tile?"),
    (".arg %b : !pto.tile<16x16xf33>", "PARSE_TYPE",
     "unknown element type 'f33' in type '!pto.tile<16x16xf33>', did you mean f32?"),
    (".arg %b : !pto.tile<16x16xf32, lco=vec>", "PARSE_TYPE",
     "unknown tile option 'lco' in type '!pto.tile<16x16xf32, lco=vec>', did you mean loc?"),
    (".arg %b : !pto.tile<16x16xf32, loc=lfet>", "PARSE_TYPE",
     "bad Location 'lfet' in type '!pto.tile<16x16xf32, loc=lfet>', did you mean left?"),
    (".arg %b : !pto.memref<16xf32, strid=[1]>", "PARSE_TYPE",
     "unknown memref option 'strid' in type '!pto.memref<16xf32, strid=[1]>', did you mean strides?"),
]


@pytest.mark.parametrize("stmt, code, message", SUGGESTIONS)
def test_unknown_names_suggest_the_nearest_valid_one(stmt: str, code: str, message: str) -> None:
    e = only(PRELUDE + stmt + "\n")
    assert (e.code, e.message) == (code, message)


def test_built_modules_get_suggestions_for_operands_and_attributes() -> None:
    tadd, tcmp = registry.get("TADD"), registry.get("TCMP")
    a = Value("a", parse_type(T))
    bad_operand = TileOp(tadd, {"dst": a, "src0": a, "src_1": a})
    bad_attr = TileOp(tcmp, {"dst": Value("m", parse_type("!pto.tile<16x16xi1>")), "src0": a, "src1": a},
                      {"cmp_mode": 1})
    errs = diagnose(Module((Kernel("k", (a,), (bad_operand, bad_attr)),)), "cpu")
    msgs = {e.code: e.message for e in errs}
    assert msgs["STRUCT_UNKNOWN_OPERAND"] == "tadd has no operand 'src_1', did you mean src1?"
    assert msgs["STRUCT_UNKNOWN_ATTR"].endswith("has no attribute 'cmp_mode', did you mean cmpMode?")


def test_api_lookups_suggest_too() -> None:
    with pytest.raises(pto.PTOError, match=r"unknown instruction 'tmatmull', did you mean tmatmul\?"):
        registry.get("tmatmull")
    with pytest.raises(pto.PTOError, match=r"unknown profile 'a33', did you mean a3\?"):
        profiles.get("a33")


# --------------------------------------------------------------------------- layouts at the declaration

GEMM = (Path(__file__).resolve().parents[1] / "examples" / "gemm.pto").read_text(encoding="utf-8")
LEFT_ND = GEMM.replace("loc=left, layout=NZ", "loc=left")         # every spelling of %left's type


def test_a_location_layout_error_points_at_the_declaration_with_the_use_as_a_note() -> None:
    assert errors(GEMM, "a3") == []
    e = only(LEFT_ND, "a3")
    decl = next(n for n, line in enumerate(LEFT_ND.splitlines(), 1) if line.lstrip().startswith(".tile %left"))
    assert e.code == "LEGAL_LAYOUT"
    assert (e.location.line, e.location.col) == (decl, 3)                # the .tile, not an instruction
    assert e.message == ("left tiles on a3 take layout ZZ (fractal boxes in row-major order, row-major "
                         "inside) or NZ (fractal boxes in column-major order, row-major inside); got ND "
                         "(tile %left)")
    assert (e.expected, e.actual) == ("ZZ or NZ", "ND")
    assert len(e.notes) == 1 and e.notes[0].startswith("first used by TEXTRACT (operand 'dst') at k.pto:")
    assert errors(LEFT_ND, "cpu") == []                                  # cpu takes any layout anywhere
    zz = GEMM.replace("loc=left, layout=NZ", "loc=left, layout=ZZ")
    assert errors(zz, "a3") == []
    assert only(zz, "a5").message.startswith(
        "left tiles on a5 take layout NZ (fractal boxes in column-major order, row-major inside); got ZZ")


def test_layout_errors_for_parameters_and_implicit_declarations_once_per_tile() -> None:
    text = ("kernel @k(%a : !pto.tile<16x16xf16, loc=left>, %b : !pto.tile<16x16xf16, loc=right, layout=ZN>) {\n"
            "  %acc = tmatmul %a, %b : (!pto.tile<16x16xf16, loc=left>, !pto.tile<16x16xf16, loc=right, layout=ZN>)"
            " -> !pto.tile<16x16xf32, loc=acc, layout=ZN>\n"
            "  %acc = tmatmul %a, %b\n}\n")
    errs = errors(text, "a3")
    assert [(e.code, e.location.line) for e in errs] == [("LEGAL_LAYOUT", 1), ("LEGAL_LAYOUT", 2)]
    assert errs[0].message.endswith("got ND (tile %a)") and errs[0].notes[0].startswith("first used by TMATMUL")
    assert errs[1].message.startswith("acc tiles on a3 take layout NZ") and errs[1].message.endswith("(tile %acc)")
    assert errs[1].notes == ["first used by TMATMUL (operand 'dst') at k.pto:3:10"]


def test_a_declared_but_unused_tile_with_a_bad_layout_is_still_reported() -> None:
    e = only(".tile %t : !pto.tile<16x16xf32, layout=NZ>\n", "a3")
    assert (e.code, e.location.line, e.notes) == ("LEGAL_LAYOUT", 1, [])
    assert e.message.startswith("vec tiles on a3 take layout ND (row-major) or DN (column-major); got NZ")


def test_instruction_layout_rules_stay_at_the_instruction() -> None:
    # TLOAD from a DN tensor into an ND vec tile: both layouts are fine for their places; the pair is not
    text = (".arg %g : !pto.memref<64x64xf32, layout=DN>\n.tile %t : !pto.tile<16x16xf32>\n"
            "%t = tload %g[0, 0]\n")
    e = only(text, "a3")
    assert (e.code, e.location.line) == ("LEGAL_LAYOUT", 3)


def test_the_docs_layout_table_is_the_generated_one() -> None:
    from openpto.isa.docgen import layout_table
    doc = (Path(__file__).resolve().parents[1] / "docs" / "assembly.md").read_text(encoding="utf-8")
    begin, end = "<!-- layout-table:begin -->\n", "\n<!-- layout-table:end -->"
    assert doc[doc.index(begin) + len(begin):doc.index(end)] == layout_table()


# --------------------------------------------------------------------------- static out-of-bounds windows

def test_every_global_operand_declares_its_window() -> None:
    from openpto.isa.spec import ELEMENT, WHOLE, Kind
    globals_ = [(i, o) for i in registry.all_instructions() for o in i.operands if o.kind is Kind.GLOBAL]
    assert globals_
    for instr, o in globals_:
        tiles = {t.name for t in instr.operands if t.kind is Kind.TILE}
        others = {t.name for t in instr.operands if t.kind is Kind.GLOBAL and t is not o}
        assert o.window in (WHOLE, ELEMENT) or o.window in tiles | others, (instr.mnemonic, o.name, o.window)


OOB_PRELUDE = """kernel @k(%g : !pto.memref<64x32xf32>, %h : !pto.memref<4x?x32xf32>, %v : !pto.memref<32xf32>,
          %d : !pto.memref<?x?xf32>, %n : index) {
  .const %c0 = 0 : index
  .const %c56 = 56 : index
  .const %c8 = 8 : index
  .const %big = 2147483647 : i32
  .const %one = 1 : i32
  .tile %t : !pto.tile<16x16xf32>
  .tile %r : !pto.tile<1x16xf32>
  .tile %q : !pto.tile<16x16xf32, valid=?x16>
  %c64 = arith.addi %c56, %c8 : index
  %wrap = arith.addi %big, %one : i32
"""

OOB_CASES = [
    # (statement, None if fine else (dim, expected, actual))
    ("%t = tload %g[%c56, 0]", (0, "indices in [0, 64)", "[56, 72)")),          # a .const
    ("%t = tload %g[48, 16]", None),                                           # exactly the last window
    ("tstore %g[0, 20], %t", (1, "indices in [0, 32)", "[20, 36)")),           # a store
    ("%t = tload %g[%c64, %n]", (0, "indices in [0, 64)", "[64, 80)")),        # folded arith.addi
    ("%t = tload %g[-1, 0]", (0, "indices in [0, 64)", "[-1, 15)")),           # negative
    ("%t = tload %h[4, %n, 0]", (0, "an index in [0, 4)", "4")),               # a leading index
    ("%t = tload %h[3, 1000000, 0]", None),                                    # dynamic extent: no bound
    ("%t = tload %g[%n, 17]", (1, "indices in [0, 32)", "[17, 33)")),          # the other index unknown
    ("%t = tload %d[100000, 100000]", None),                                   # dynamic shape
    ("%t = tload %g[%n, %n]", None),                                           # dynamic indices
    ("%r = tload %v[17]", (0, "indices in [0, 32)", "[17, 33)")),              # rank 1: one row
    ("%r = tload %v[16]", None),
    ("%q = tload %g[64, 0]", None),                          # run-time valid rows may be 0: [64, 64) fits
    ("%q = tload %g[65, 0]", (0, "indices in [0, 64)", "[65, 65 + ?)")),
    ("%t = tprefetch %g[60, 0]", (0, "indices in [0, 64)", "[60, 76)")),
    ("%t = tload %g[%wrap, 0]", None),            # i32 overflow: not folded (no guessing at wrap-around)
]


@pytest.mark.parametrize("stmt, want", OOB_CASES)
def test_constant_windows_outside_the_tensor_are_struct_oob(stmt: str, want: tuple | None) -> None:
    errs = errors(OOB_PRELUDE + "  " + stmt + "\n}\n", "cpu")
    if want is None:
        assert errs == []
        return
    assert len(errs) == 1, [e.render() for e in errs]
    e = errs[0]
    dim, expected, actual = want
    assert e.code == "STRUCT_OOB" and e.location.line == OOB_PRELUDE.count("\n") + 1
    assert f"out of bounds in dim {dim}" in e.message
    assert (e.expected, e.actual) == (expected, actual)


def test_whole_tensor_operands_need_zero_indices() -> None:
    text = (".arg %g : !pto.memref<8x64xf32>\n.arg %i : !pto.tile<4x8xi32>\n.tile %t : !pto.tile<4x8xf32>\n"
            "%t = mgather %g[0, 3], %i\n%t = mgather %g[0, 0], %i\n")
    e = only(text, "cpu")
    assert (e.code, e.location.line, e.expected, e.actual) == ("STRUCT_OOB", 4, "every index 0", "3")


def test_static_oob_agrees_with_the_reference_backend_fuzz() -> None:
    """Fixed-seed fuzz: a window the verifier flags faults on the reference backend at run time
    (indices passed as arguments), and one it passes does not; with static shapes and valid
    regions the two verdicts are the same."""
    import numpy as np

    rng = np.random.default_rng(12)
    verdicts = []
    for _ in range(120):
        rank = int(rng.integers(1, 4))
        shape = [int(rng.integers(1, 5)) for _ in range(rank - 2)] + [int(rng.integers(1, 40)) for _ in range(min(rank, 2))]
        rows = 1 if rank == 1 else int(rng.integers(1, min(shape[-2], 16) + 1))
        cols = int(rng.integers(1, min(shape[-1], 16) + 1))
        size = [1] * (rank - 2) + ([cols] if rank == 1 else [rows, cols])
        idx = [int(rng.integers(-1, s - w + 3)) for s, w in zip(shape, size)]   # about half inside
        g = "!pto.memref<" + "x".join(map(str, shape)) + "xf32>"
        t = f"!pto.tile<{rows}x{cols}xf32>"
        op = rng.choice(["load", "store"])
        def program(indices: list[str], params: str) -> str:
            ref = f"%g[{', '.join(indices)}]"
            stmt = f"%t = tload {ref}" if op == "load" else f"tstore {ref}, %t"
            return f"kernel @k(%g : {g}, %t : {t}{params}) {{\n  {stmt}\n}}\n"
        static = diagnose(pto.parse(program([str(i) for i in idx], "")), "cpu")
        assert all(e.code == "STRUCT_OOB" for e in static), [e.render() for e in static]
        names = [f"%i{d}" for d in range(rank)]
        exe = pto.compile(pto.parse(program(names, "".join(f", {n} : index" for n in names))), "reference")
        try:
            exe(np.zeros(shape, np.float32), np.zeros((rows, cols), np.float32), *idx)
            faulted = False
        except pto.PTOError as e:
            assert e.code == "RUNTIME_OOB", e.render()
            faulted = True
        assert bool(static) == faulted, (shape, rows, cols, idx, op)
        verdicts.append(faulted)
    assert 30 <= sum(verdicts) <= 90                     # both verdicts well exercised


SHARED_NAME = """kernel @k(%g : !pto.memref<32x16xf32>, %c : i1, %n : index) {
  .tile %t : !pto.tile<16x16xf32>
  .const %y = 0 : index
  scf.if %c {
    .const %x = 100 : index
    %o = arith.addi %x, %y : index
  } else {
    %x = arith.addi %n, %n : index
    %o = arith.addi %x, %y : index
    %t = tload %g[%o, %y] : (!pto.memref<32x16xf32>) -> !pto.tile<16x16xf32>
    tstore %g[%o, %y], %t
  }
}
"""


def test_a_constant_in_one_branch_says_nothing_of_the_same_name_in_the_other() -> None:
    """Bytecode gives sibling definitions of a name one Value object: the else branch's
    run-time %o must not inherit the then branch's 100 (text and bytecode check alike)."""
    m = pto.parse(SHARED_NAME)
    assert diagnose(m, "cpu") == []
    assert diagnose(load_bytes(m.to_bytes()), "cpu") == []


def test_unsigned_min_max_fold_on_the_bit_pattern() -> None:
    """minui(-1, 0) is 0 (-1 is the largest unsigned value): no window at -1."""
    text = """kernel @k(%g : !pto.memref<32x16xf32>) {
  .tile %t : !pto.tile<16x16xf32>
  .const %a = -1 : index
  .const %b = 0 : index
  %o = arith.minui %a, %b : index
  %t = tload %g[%o, %b] : (!pto.memref<32x16xf32>) -> !pto.tile<16x16xf32>
  tstore %g[%o, %b], %t
}
"""
    m = pto.parse(text)
    assert diagnose(m, "cpu") == []
    g = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    pto.compile(m).run("k", g.copy())      # the reference runs it: the window is at row 0
