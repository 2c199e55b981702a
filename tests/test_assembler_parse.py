"""Parsing PTO-AS: every declaration's example statement, in each accepted surface form,
parses, verifies for the cpu profile and prints back exactly."""
from __future__ import annotations

import pytest

import openpto.assembler as asm
from openpto.assembler import ir
from openpto.fuzz.corpus import declarations
from openpto.isa import Kind, Role, all_instructions, get
from openpto.isa.attrs import CmpMode
from openpto.isa.render import example_statement
from openpto.isa.types import INDEX, Pipe, ScalarType, parse_type

INSTRS = all_instructions()


def program(instr, statement: str | None = None) -> str:  # noqa: ANN001
    return "\n".join(declarations(instr) + [statement or example_statement(instr)]) + "\n"


def only_op(m: ir.Module) -> ir.TileOp:
    ops = [s for s in m.kernel().body if isinstance(s, ir.TileOp)]
    assert len(ops) == 1
    return ops[0]


@pytest.mark.parametrize("instr", INSTRS, ids=lambda i: i.mnemonic)
def test_example_parses_verifies_and_round_trips(instr) -> None:  # noqa: ANN001
    m = asm.parse(program(instr), filename="example.pto")
    asm.verify(m, "cpu")
    text = m.to_text()
    assert asm.parse(text) == m
    assert text.splitlines()[-2].strip() == example_statement(instr)   # canonical == example form
    assert asm.parse(text).to_text() == text


@pytest.mark.parametrize("instr", INSTRS, ids=lambda i: i.mnemonic)
def test_mnemonic_spellings_are_one_instruction(instr) -> None:  # noqa: ANN001
    base = asm.parse(program(instr))
    stmt = example_statement(instr)
    for spelled in (instr.mnemonic.upper(), "pto." + instr.asm_name, "PTO." + instr.mnemonic):
        text = program(instr, stmt.replace(f" {instr.asm_name}", f" {spelled}", 1)
                       if " = " in stmt else spelled + stmt[len(instr.asm_name):])
        assert asm.parse(text + ";") == base   # a trailing ';' is optional too


def dps_statement(instr) -> str:  # noqa: ANN001
    """The example in the IR Level-2 form: pto.op ins(... : T...) outs(... : T...)."""
    ex = instr.example

    def part(ops) -> str:  # noqa: ANN001
        items, types = [], []
        for op in ops:
            if op.name not in ex.types and op.name not in ex.scalars:
                continue
            if op.kind is Kind.PIPE:
                items.append(f"#pto.pipe<{ex.scalars[op.name].value}>")
                continue
            rank = ex.types[op.name].count("x")
            items.append(f"%{op.name}[" + ", ".join(["%c0"] * rank) + "]" if op.kind is Kind.GLOBAL
                         else f"%{op.name}")
            types.append(ex.types[op.name])
        return ", ".join(items) + (" : " + ", ".join(types) if types else "")

    ins = [o for o in instr.operands if o.role is Role.IN]
    outs = [o for o in instr.operands if o.role is not Role.IN]
    attrs = example_statement(instr).partition(" {")[2].partition("}")[0]
    return (f"pto.{instr.asm_name} ins({part(ins)}) outs({part(outs)})"
            + (f" {{{attrs}}}" if attrs else ""))


@pytest.mark.parametrize("instr", INSTRS, ids=lambda i: i.mnemonic)
def test_dps_form_maps_onto_the_same_ir(instr) -> None:  # noqa: ANN001
    assert asm.parse(program(instr, dps_statement(instr))) == asm.parse(program(instr))


@pytest.mark.parametrize("instr", [i for i in INSTRS if any(o.role is Role.OUT and o.kind is Kind.TILE
                                                            for o in i.operands)],
                         ids=lambda i: i.mnemonic)
def test_signature_is_optional_for_declared_buffers(instr) -> None:  # noqa: ANN001
    ex = instr.example
    stmt = example_statement(instr)
    if " : " not in stmt or any(o.kind in (Kind.SCALAR, Kind.INDEX) and o.name not in ex.types
                                for o in instr.operands):
        pytest.skip("no signature to leave off")
    tiles = [f".tile %{o.name} : {ex.types[o.name]}" for o in instr.operands
             if o.role is Role.OUT and o.kind is Kind.TILE and o.name in ex.types]
    text = "\n".join(declarations(instr) + tiles + [stmt.rpartition(" : ")[0]]) + "\n"
    assert only_op(asm.parse(text)) == only_op(asm.parse(program(instr)))


# ----------------------------------------------------------------------------- surface syntax

PUBLIC = """\
// the public synchronous form, verbatim
.arg %a : !pto.tile<32x32xf32>;
.arg %b : !pto.tile<32x32xf32>;
.const %c0 = 0 : index;
%d = tadd %a, %b : (!pto.tile<32x32xf32>, !pto.tile<32x32xf32>) -> !pto.tile<32x32xf32>;
# a hash comment
%m = tcmp %a, %b {cmpMode = #pto<cmp GT>} : (!pto.tile<32x32xf32>, !pto.tile<32x32xf32>) -> !pto.tile<32x32xi1>
%e = TCMP %a, %b {cmpMode = LT} : (!pto.tile<32x32xf32>, !pto.tile<32x32xf32>) -> !pto.tile<32x32xi1>
"""


def test_public_form_is_accepted_verbatim() -> None:
    m = asm.parse(PUBLIC)
    k = m.kernel()
    assert k.name == "main" and [p.name for p in k.params] == ["a", "b"]
    d, m1, m2 = [s for s in k.body if isinstance(s, ir.TileOp)]
    assert d.instr is get("TADD") and d.args["dst"] == ir.Value("d", parse_type("!pto.tile<32x32xf32>"))
    assert m1.attrs == {"cmpMode": CmpMode.GT} and m2.attrs == {"cmpMode": CmpMode.LT}
    asm.verify(m, "cpu")
    assert asm.parse(m.to_text()) == m


def test_tile_buf_and_alloc_tile_map_onto_tile_declarations() -> None:
    text = """
    %t = pto.alloc_tile : !pto.tile_buf<vec, f32, 16, 16, 16, 16>
    .tile %u : !pto.tile<16x16xf32>
    """
    k = asm.parse(text).kernel()
    assert k.body[0] == ir.TileDecl(ir.Value("t", parse_type("!pto.tile<16x16xf32>")))
    assert "alloc_tile" not in asm.parse(text).to_text()


def test_dynamic_valid_extents_on_declarations() -> None:
    text = """
    .arg %vr : index
    .tile %t valid_row = %vr : !pto.tile<16x16xf32, valid=?x16>
    """
    m = asm.parse(text)
    asm.verify(m)
    decl = m.kernel().body[0]
    assert decl.valid_rows == ir.Value("vr", INDEX) and decl.valid_cols is None
    assert asm.parse(m.to_text()) == m


def test_kernel_header_and_several_kernels() -> None:
    text = """
    kernel @first(%x : !pto.memref<?x1024xf32>,
                  %n : index) {
      .const %c0 = 0 : index
    }
    kernel @second() { }
    """
    m = asm.parse(text)
    assert [k.name for k in m.kernels] == ["first", "second"]
    assert m.kernel("first").param("x").type == parse_type("!pto.memref<?x1024xf32>")
    assert asm.parse(m.to_text()) == m


def test_literal_scalar_operands_take_the_tile_dtype() -> None:
    text = """
    .arg %s : !pto.tile<16x16xi32>
    %d = tshls %s, 3 : (!pto.tile<16x16xi32>, i32) -> !pto.tile<16x16xi32>
    .tile %e : !pto.tile<16x16xi32>
    %e = tshls %s, 2
    %f = tadds %d, 7 : (!pto.tile<16x16xi32>, i32) -> !pto.tile<16x16xi32>
    """
    ops = [s for s in asm.parse(text).kernel().body if isinstance(s, ir.TileOp)]
    assert ops[0].args["scalar"] == ir.Lit(3, ScalarType("i32"))
    assert ops[1].args["scalar"] == ir.Lit(2, ScalarType("i32"))
    assert ops[2].args["scalar"] == ir.Lit(7, ScalarType("i32"))


def test_pipe_operands_and_optional_leading_operands() -> None:
    m = asm.parse("tsync #pto.pipe<V>\npipe_barrier #pto.pipe<PIPE_ALL>\n")
    ts, pb = m.kernel().body
    assert ts.args == {"pipe": ir.PipeLit(Pipe.V)} and pb.args == {"pipe": ir.PipeLit(Pipe.ALL)}
    assert asm.parse(m.to_text()) == m


def test_multi_result_form() -> None:
    multi = [i for i in INSTRS if sum(o.role is Role.OUT and o.kind is Kind.TILE for o in i.operands) > 1]
    if not multi:
        pytest.skip("no instruction with two tile results is declared yet")
    instr = multi[0]
    m = asm.parse(program(instr))
    assert len(only_op(m).results) > 1
    assert asm.parse(m.to_text()) == m
