"""Binding written operands to declared ones by their kinds (assembler/operands.py): an
optional operand may be skipped where the item's kind (tile, scalar or index, event, global,
pipe) shows it belongs further on; readings that still disagree on an item's kind are
reported, never guessed; bytecode stores the bound operands unchanged."""
from __future__ import annotations

import pytest

import openpto as pto
from openpto.assembler import bytecode
from openpto.assembler.ir import Lit, MemRef, Value
from openpto.assembler.operands import choose, classes, item_kinds, readings
from openpto.isa import Kind
from openpto.isa.diagnostics import PTOError
from openpto.isa.spec import Operand, Role
from openpto.isa.types import INDEX, parse_type

TILE = parse_type("!pto.tile<4x40xf32>")
GATHER = """
kernel @k(%dst : !pto.tile<4x40xu32>, %cnt : !pto.tile<4x1xu32, layout=DN>, %src : !pto.tile<4x40xf32>,
          %k : !pto.tile<4x1xi32, layout=DN>, %off : index, %t : !pto.tile<4x40xu32>) {
  BODY
}
"""


def body(text: str) -> list:
    return pto.parse(GATHER.replace("BODY", text)).kernels[0].body


def names(op) -> list[str]:  # noqa: ANN001
    """The bound operands in declaration order."""
    return [o.name for o in op.instr.operands if o.name in op.args]


@pytest.mark.parametrize("stmt,want", [
    ("%dst, %cnt = tgather %src, %k, %off", ["dst", "src", "idx", "cdst", "offset"]),
    ("%dst, %cnt = tgather %src, %k, %t", ["dst", "src", "idx", "tmp", "cdst"]),
    ("%dst, %cnt = tgather %src, %k, %t, %off", ["dst", "src", "idx", "tmp", "cdst", "offset"]),
    ("%dst, %cnt = tgather %src, %k, 5", ["dst", "src", "idx", "cdst", "offset"]),
    ("pto.tgather ins(%src, %k, %off) outs(%dst, %cnt)", ["dst", "src", "idx", "cdst", "offset"]),
    ("pto.tgather ins(%src, %k, %t, %off) outs(%dst, %cnt)", ["dst", "src", "idx", "tmp", "cdst", "offset"]),
])
def test_tgather_compare_form_binds_by_kind(stmt: str, want: list[str]) -> None:
    op = body(stmt)[0]
    assert names(op) == want
    if "offset" in want and "5" not in stmt:
        assert op.args["offset"].name == "off"


def test_bound_offset_prints_reparses_and_keeps_bytecode() -> None:
    m = pto.parse(GATHER.replace("BODY", "%dst, %cnt = tgather %src, %k, %off"))
    text = m.to_text()
    assert "tgather %src, %k, %off :" in text
    again = pto.parse(text)
    assert again.to_text() == text
    loaded = bytecode.load_bytes(bytecode.dump(m))
    assert loaded.to_text() == text and sorted(loaded.kernels[0].body[0].args) == ["cdst", "dst", "idx", "offset",
                                                                                   "src"]


def test_repeated_lines_bind_each_by_its_own_types() -> None:
    """Lines of one shape reuse a template; one whose binding depends on the names' types
    must still bind each line by its own values."""
    ops = body("%dst, %cnt = tgather %src, %k, %off\n  %dst, %cnt = tgather %src, %k, %t\n"
               "  %dst, %cnt = tgather %src, %k, %off\n  %dst, %cnt = tgather %src, %k, %t")
    assert ["offset" in o.args for o in ops] == [True, False, True, False]
    assert ["tmp" in o.args for o in ops] == [False, True, False, True]


def test_tmrgsort_single_list_blocklen_is_not_a_second_list() -> None:
    text = """
kernel @k(%dst : !pto.tile<1x256xf32>, %src : !pto.tile<1x256xf32>, %b : !pto.tile<1x256xf32>, %n : index,
          %e : !pto.tile<1x16xu16, valid=1x4>) {
  %dst = tmrgsort %src, %n
  %dst, %e = tmrgsort %src, %b
}
"""
    one, two = pto.parse(text).kernels[0].body
    assert sorted(one.args) == ["blockLen", "dst", "src0"]
    assert sorted(two.args) == ["dst", "executed", "src0", "src1"]


def test_undefined_name_where_kinds_decide_is_undefined() -> None:
    with pytest.raises(PTOError) as e:
        body("%dst, %cnt = tgather %src, %k, %nope")
    assert e.value.code == "STRUCT_UNDEFINED"
    assert "%nope" in str(e.value)


def test_wrong_kind_is_still_reported() -> None:
    from openpto.assembler.verifier import verify
    m = pto.parse(GATHER.replace("BODY", "%dst, %cnt = tgather %src, %off, %k"))
    with pytest.raises(PTOError) as e:
        verify(m, "cpu")
    assert e.value.code.startswith("STRUCT_")


# ----------------------------------------------------------------------------- the matcher itself

def _op(name: str, kind: Kind, optional: bool = False) -> Operand:
    return Operand(name, Role.IN, kind, optional=optional)


def test_readings_list_every_assignment_positional_first() -> None:
    ops = (_op("a", Kind.TILE), _op("b", Kind.TILE, True), _op("c", Kind.INDEX, True), _op("d", Kind.TILE, True))
    value = item_kinds(Value)
    got = [[o.name for o in r] for r in readings(ops, [value, value])]
    assert got == [["a", "b"], ["a", "c"], ["a", "d"]]
    assert [[o.name for o in r] for r in readings(ops, [value, item_kinds(Lit)])] == [["a", "c"]]
    tile = item_kinds(Value, TILE)
    assert [[o.name for o in r] for r in readings(ops, [tile, tile])] == [["a", "b"], ["a", "d"]]
    assert [[o.name for o in r] for r in readings(ops, [tile, item_kinds(Value, INDEX)])] == [["a", "c"]]
    assert readings(ops, [item_kinds(MemRef)]) == []


def test_choose_takes_the_positional_reading_only_when_kinds_agree() -> None:
    ops = (_op("a", Kind.TILE), _op("b", Kind.TILE, True), _op("c", Kind.INDEX, True), _op("d", Kind.TILE, True))
    tile = item_kinds(Value, TILE)
    rs = readings(ops, [tile, tile])
    assert [o.name for o in choose(rs)] == ["a", "b"]          # same kinds: earliest optional first
    rs = readings(ops, [tile, item_kinds(Value)])              # the second item's type unknown
    both = choose(rs)
    assert isinstance(both, list) and [classes(r) for r in both] == [("tile", "tile"), ("tile", "scalar")]


def _examples():  # noqa: ANN202
    import dataclasses

    from openpto.isa import all_instructions
    for instr in all_instructions():
        for k, ex in enumerate((instr.example, *instr.more_examples)):
            yield pytest.param(dataclasses.replace(instr, example=ex), id=f"{instr.mnemonic}-{k}")


@pytest.mark.parametrize("instr", list(_examples()))
def test_every_declaration_example_binds_as_declared(instr) -> None:  # noqa: ANN001
    """Each example statement (the synchronous form, operands in declaration order) binds
    every written item to the operand it was written for."""
    from openpto.fuzz.corpus import declarations
    from openpto.isa.render import example_statement
    m = pto.parse("\n".join(declarations(instr) + [example_statement(instr)]) + "\n")
    op = [s for s in m.kernel().body if getattr(s, "instr", None) is not None and s.instr.mnemonic ==
          instr.mnemonic][0]
    ex = instr.example
    assert sorted(op.args) == sorted(o.name for o in instr.operands if o.name in ex.types or o.name in ex.scalars)


# ----------------------------------------------------------------------------- inout destinations as results

ACC = "!pto.tile<2x2xf32>"
ACC_TEXT = f"""
kernel @k(%dst : {ACC}, %a : {ACC}, %b : {ACC}, %s : f32) {{
  BODY
}}
"""


@pytest.mark.parametrize("ssa,positional", [
    (f"%dst = tfusedmuladd %a, %b : {ACC}", "tfusedmuladd %dst, %a, %b"),
    (f"%dst = pto.taxpy %a, %s : ({ACC}, f32) -> {ACC}", "taxpy %dst, %a, %s"),
    ("%dst = tmuladddst %a, %b", "tmuladddst %dst, %a, %b"),
    ("%dst = tfusedmuladdrelu %a, %b", "tfusedmuladdrelu %dst, %a, %b"),
])
def test_inout_destination_written_as_the_result(ssa: str, positional: str) -> None:
    one = pto.parse(ACC_TEXT.replace("BODY", ssa))
    two = pto.parse(ACC_TEXT.replace("BODY", positional))
    assert one.to_text() == two.to_text()
    assert bytecode.dump(one) == bytecode.dump(two)


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_inout_result_reads_then_writes_the_named_tile(backend: str, tmp_path) -> None:  # noqa: ANN001
    import numpy as np
    text = ACC_TEXT.replace("BODY", "%dst = tmuladddst %a, %b\n  %dst = tfusedmuladdrelu %a, %b\n"
                                    "  %dst = taxpy %a, %s")
    dst = np.array([[1, 2], [3, -4]], np.float32)
    a = np.array([[2, 3], [-1, 5]], np.float32)
    b = np.array([[10, 0.5], [2, 1]], np.float32)
    options = {"cache_dir": tmp_path} if backend == "llvm" else {}
    pto.compile(pto.parse(text), backend, "cpu", **options)(dst=dst, a=a, b=b, s=np.float32(0.5))
    # tmuladddst: a * b + dst = [[21, 3.5], [1, 1]]; tfusedmuladdrelu: max(a * dst + b, 0) =
    # [[52, 11], [1, 6]]; taxpy: 0.5 * a + dst = [[53, 12.5], [0.5, 8.5]]
    assert dst.tolist() == [[53, 12.5], [0.5, 8.5]]


def test_more_results_than_inout_tiles_is_an_arity_error() -> None:
    with pytest.raises(PTOError) as e:
        pto.parse(ACC_TEXT.replace("BODY", "%dst, %x = taxpy %a, %s"))
    assert e.value.code == "PARSE_ARITY"
