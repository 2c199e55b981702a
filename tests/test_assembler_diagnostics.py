"""Diagnostics pin their code and where they point (line:col, caret), parse errors are
collected per file, and the verifier reports program-level and profile-level problems."""
from __future__ import annotations

import pytest

import openpto.assembler as asm
from openpto.assembler import ir
from openpto.isa import PTOError, PTOErrorGroup, get
from openpto.isa.types import INDEX, Pipe, ScalarType, parse_type

HEAD = ".arg %a : !pto.tile<16x16xf32>\n.arg %h : !pto.tile<16x16xf16>\n"   # lines 1-2
T = "!pto.tile<16x16xf32>"
SIG2 = f" : ({T}, {T}) -> {T}"
T16 = parse_type(T)


def first_error(text: str, profile: str | None = None) -> PTOError:
    with pytest.raises(PTOError) as e:
        m = asm.parse(text, filename="k.pto")
        asm.verify(m, profile)
    return e.value


def at(err: PTOError, needle: str, line: str, occurrence: int = 0) -> tuple[int, int]:
    """(line, col) of the ``occurrence``-th ``needle`` on ``line`` (1-based col)."""
    col = -1
    for _ in range(occurrence + 1):
        col = line.index(needle, col + 1)
    return err.location.line, col + 1


@pytest.mark.parametrize("stmt, code, needle, occurrence", [
    ("%d = tadd %a %a", "PARSE_TOKEN", "%a", 1),                                   # wrong token
    ("%d = tfoo %a, %a" + SIG2, "PARSE_UNKNOWN_MNEMONIC", "tfoo", 0),
    ("%d = tadd %a, %a, %a" + SIG2, "PARSE_ARITY", "%a", 2),                        # one operand too many
    ("%d, %e = tadd %a, %a" + SIG2, "PARSE_ARITY", "%e", 0),                        # one result too many
    ("%d = tadd %a" + f" : ({T}) -> {T}", "PARSE_ARITY", "tadd", 0),                 # too few
    ("%d = tadd %a, %zz" + SIG2, "STRUCT_UNDEFINED", "%zz", 0),
    ("%d = tadd %a, %h" + SIG2, "STRUCT_TYPE_MISMATCH", "!pto.tile<16x16xf32>", 1),  # sig vs declaration
    ("%d = tadd %a, %a" + f" : ({T}) -> {T}", "PARSE_SIGNATURE", ":", 0),
    ("%d = tadd %a, %a : (!pto.tile<16x16xf33>, !pto.tile<16x16xf32>) -> " + T, "PARSE_TYPE", "!pto", 0),
    ("%d = tadd %a, %a", "PARSE_MISSING_TYPE", "%d", 0),
    ("%d = tadds %a, true" + f" : ({T}, f32) -> {T}", "PARSE_LITERAL", "true", 0),
    ("%d = tadd %a, #pto.pipe<V>" + SIG2, "STRUCT_OPERAND_KIND", "#pto", 0),
    ("%m = tcmp %a, %a {cmpMode = #pto.cmp<XX>} : (" + T + ", " + T + ") -> !pto.tile<16x16xi1>",
     "PARSE_ATTR", "#pto.cmp", 0),
    ("%m = tcmp %a, %a {mode = GT} : (" + T + ", " + T + ") -> !pto.tile<16x16xi1>",
     "STRUCT_UNKNOWN_ATTR", "mode", 0),
    ("%d = tadd %a, @a" + SIG2, "PARSE_TOKEN", "@a", 0),
    ("%d = tadd %a, %a ~" + SIG2, "PARSE_CHAR", "~", 0),
    (".bogus %a", "PARSE_DIRECTIVE", ".bogus", 0),
    (".const %c = 300 : i8", "PARSE_LITERAL", "300", 0),
    ("%c = arith.addi %a, %a : index", "STRUCT_TYPE_MISMATCH", "index", 0),
    ("%c = arith.cmpi foo, %a, %a", "PARSE_ATTR", "foo", 0),
    ("%a = texp %a : (" + T + ") -> !pto.tile<8x8xf32>", "STRUCT_REDEFINED", "!pto.tile<8x8xf32>", 0),
])
def test_parse_errors_point_at_the_token(stmt: str, code: str, needle: str, occurrence: int) -> None:
    e = first_error(HEAD + stmt + "\n")
    assert e.code == code, e
    assert (e.location.line, e.location.col) == (3, at(e, needle, stmt, occurrence)[1]), e
    assert e.location.file == "k.pto" and e.location.source_line == stmt
    text = str(e)
    assert text.startswith(f"k.pto:3:{e.location.col}: {code}")
    caret = text.splitlines()[-1]
    assert caret.index("^") - 2 == e.location.col - 1    # caret under the token (2-space indent)


def test_verifier_errors_point_at_the_mnemonic() -> None:
    # A dst taller than its sources: they cannot cover its valid region (a smaller dst is legal).
    stmt = f"%d = tadd %a, %a : ({T}, {T}) -> !pto.tile<32x16xf32>"
    e = first_error(HEAD + stmt + "\n", "cpu")
    assert e.code == "STRUCT_VALID_REGION"
    assert (e.location.line, e.location.col) == (3, stmt.index("tadd") + 1)
    assert e.location.kernel == "main"


def test_legality_per_profile() -> None:
    stmt = f"%d = tadd %a, %h : ({T}, !pto.tile<16x16xf16>) -> {T}"
    m = asm.parse(HEAD + stmt + "\n")
    assert [x.code for x in asm.diagnose(m, "a2")] == ["LEGAL_DTYPE"]
    assert asm.diagnose(m) == [x for x in asm.diagnose(m) if x.code.startswith("STRUCT")]


def test_several_parse_errors_are_collected_in_order() -> None:
    text = HEAD + "\n".join([
        "%x = tadd $ %a",          # 3: bad character
        "%y = tfoo %a",            # 4: unknown mnemonic
        "%z = tadd %x, %a" + SIG2,  # 5: uses %x whose definition failed: silent
        "scf.for %i = 0 to 4 step 1 {",
        "  %w = tadd %a, %q" + SIG2,  # 7: undefined, inside a region
        "}",
        "%v = tadd %a %a" + SIG2,  # 9: wrong token after the region
    ]) + "\n"
    with pytest.raises(PTOErrorGroup) as e:
        asm.parse(text)
    got = [(x.code, x.location.line) for x in e.value.errors]
    assert got == [("PARSE_CHAR", 3), ("PARSE_UNKNOWN_MNEMONIC", 4), ("STRUCT_UNDEFINED", 7),
                   ("PARSE_TOKEN", 9)]
    assert all(x.location.source_line for x in e.value.errors)


@pytest.mark.parametrize("fast", [True, False])
def test_a_loop_whose_result_is_redefined_silences_all_its_results(fast: bool) -> None:
    """The loop fails at its first result after its body (whose statements name their own
    results); its second result %s is silenced on the token path as on the template path."""
    from openpto.assembler.parser import Parser
    text = HEAD + "\n".join([
        "%a, %s = scf.for %i = 0 to 4 step 1 iter_args(%x = 0, %t = %h) -> (index, !pto.tile<16x16xf16>) {",
        f"  %d = texp %a : ({T}) -> {T}",
        "  scf.yield %x, %t : index, !pto.tile<16x16xf16>",
        "}",
        "%e = texp %s : (!pto.tile<16x16xf16>) -> !pto.tile<16x16xf16>",   # 7: silent
    ]) + "\n"
    saved, Parser.fast = Parser.fast, fast
    try:
        e = first_error(text)
    finally:
        Parser.fast = saved
    assert (e.code, e.location.line) == ("STRUCT_REDEFINED", 3) and not isinstance(e, PTOErrorGroup)


def test_unbalanced_regions() -> None:
    e = first_error(HEAD + "scf.for %i = 0 to 4 step 1 {\n  %d = texp %a : (" + T + ") -> " + T + "\n")
    assert e.code == "PARSE_TOKEN" and "'}'" in e.message
    e = first_error(HEAD + "}\n")
    assert e.code == "PARSE_TOKEN" and e.location.line == 3
    e = first_error("kernel @k() {\n}\n%d = texp %a\n")
    assert e.code == "PARSE_KERNEL" and e.location.line == 3
    e = first_error("kernel @k() {\n}\nkernel @k() {\n}\n")
    assert e.code == "PARSE_KERNEL" and e.location.line == 3


@pytest.mark.parametrize("body, code", [
    ("scf.for %i = 0 to 4 step 1 {\n  scf.yield %i : index\n}", "STRUCT_YIELD"),
    ("%r = scf.for %i = 0 to 4 step 1 iter_args(%x = 0) -> (index) {\n}", "STRUCT_YIELD"),
    (".arg %b : i1\n%r = scf.if %b -> (index) {\n  scf.yield %i0 : index\n}", "STRUCT_REGION"),
    (".arg %b : index\nscf.if %b {\n}", "STRUCT_REGION"),
    ("scf.yield", "STRUCT_YIELD"),
    ("%f = arith.sitofp %i0 : index to f32\n%g = arith.addi %f, %f : f32", "STRUCT_SCALAR_TYPE"),
    ("%t = arith.trunci %i0 : index to i64", "STRUCT_SCALAR_TYPE"),
    ("%r = scf.for %i = 0 to 4 step 1 iter_args(%t = %a) -> (" + T + ") {\n  scf.yield %t : " + T + "\n}",
     "STRUCT_REGION"),
])
def test_region_and_scalar_rules(body: str, code: str) -> None:
    e = first_error(HEAD + ".const %i0 = 0 : index\n" + body + "\n", "cpu")
    assert e.code == code, e


def test_capacity_of_all_tiles_in_a_kernel() -> None:
    tiles = "\n".join(f".tile %t{k} : !pto.tile<128x128xf32>" for k in range(4))  # 4 x 64 KiB in vec
    m = asm.parse(tiles + "\n")
    assert asm.diagnose(m, "cpu") == []
    errs = asm.diagnose(m, "a2")                                  # 192 KiB of UB
    assert [x.code for x in errs] == ["LEGAL_CAPACITY"]
    assert "262144" in str(errs[0]) and errs[0].location.kernel == "main"
    assert asm.diagnose(m, "a5") == []                            # 256 KiB: fits exactly


# ----------------------------------------------------------------------------- modules built in Python

def kernel(*body: ir.Stmt, params: tuple[ir.Value, ...] = (ir.Value("a", T16),)) -> ir.Module:
    return ir.Module((ir.Kernel("k", params, tuple(body)),))


def codes(m: ir.Module, profile: str | None = "cpu") -> list[str]:
    return [e.code for e in asm.diagnose(m, profile)]


def test_built_modules_get_the_same_checks() -> None:
    a, d = ir.Value("a", T16), ir.Value("d", T16)
    tadd, texp = get("TADD"), get("TEXP")
    assert codes(kernel(ir.TileOp(tadd, {"dst": d, "src0": a, "src1": a}))) == []
    assert codes(kernel(ir.TileOp(tadd, {"dst": d, "src0": a, "src1": ir.Value("q", T16)}))) == ["STRUCT_UNDEFINED"]
    assert codes(kernel(ir.TileOp(texp, {"dst": d, "src": ir.Value("a", parse_type("!pto.tile<8x8xf32>"))}))) \
        == ["STRUCT_TYPE_MISMATCH"]
    assert codes(kernel(ir.TileOp(texp, {"dst": d, "src": ir.PipeLit(Pipe.V)}))) == ["STRUCT_OPERAND_KIND"]
    assert codes(kernel(ir.TileOp(texp, {"dst": d, "src": a, "bogus": a}))) == ["STRUCT_UNKNOWN_OPERAND"]
    assert codes(kernel(ir.TileOp(texp, {"dst": d}))) == ["STRUCT_MISSING_OPERAND"]
    assert codes(kernel(ir.Const(ir.Value("c", ScalarType("i8")), 1000))) == ["STRUCT_TYPE_MISMATCH"]
    assert codes(kernel(ir.Const(ir.Value("a", INDEX), 0))) == ["STRUCT_REDEFINED"]
    # two parameters of one name (the parser refuses the text): even a tile of the same type
    assert codes(kernel(params=(ir.Value("a", T16), ir.Value("a", T16)))) == ["STRUCT_REDEFINED"]
    err = asm.diagnose(kernel(ir.Yield(), ir.Yield()))[1]
    assert err.location.kernel == "k" and err.location.index == 1


def test_verify_raises_one_error_or_a_group() -> None:
    a = ir.Value("a", T16)
    one = kernel(ir.TileOp(get("TEXP"), {"dst": a, "src": ir.Value("q", T16)}))
    with pytest.raises(PTOError) as e:
        asm.verify(one)
    assert not isinstance(e.value, PTOErrorGroup) and e.value.code == "STRUCT_UNDEFINED"
    two = kernel(ir.Yield(), ir.Yield())
    with pytest.raises(PTOErrorGroup) as g:
        asm.verify(two)
    assert len(g.value.errors) == 2
    assert asm.verify(kernel()) == kernel()


def test_name_rules() -> None:
    e = first_error("scf.for %i = 0 to 1 step 1 {\n}\n.arg %i : index\n")
    assert (e.code, e.location.line, e.location.col) == ("STRUCT_REDEFINED", 3, 6)   # params are kernel-wide
    e = first_error("scf.for %i = 0 to 1 step 1 {\n  .arg %x : index\n}\n")
    assert (e.code, e.location.line) == ("PARSE_DIRECTIVE", 2)
    e = first_error(".const %c = 0 : index\n.const %c = 1 : index\n")
    assert (e.code, e.location.line, e.location.col) == ("STRUCT_REDEFINED", 2, 8)
    with pytest.raises(PTOError) as g:           # an undefined name is reported once
        asm.parse(HEAD + "\n".join([f"%d{k} = tadd %a, %zz" + SIG2 for k in range(3)]) + "\n")
    assert not isinstance(g.value, PTOErrorGroup) and g.value.code == "STRUCT_UNDEFINED"


def test_yield_must_end_its_region() -> None:
    text = "%r = scf.for %i = 0 to 2 step 1 iter_args(%x = 0) -> (index) {\n  scf.yield %x : index\n" \
           "  %y = arith.addi %x, %x : index\n}\n"
    e = first_error(text)
    assert (e.code, e.location.line, e.location.col) == ("STRUCT_YIELD", 2, 3)
