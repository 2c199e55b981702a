"""Programs with loops, branches, iter_args and scalar ops: parse, verify, and
``parse(print(m)) == m`` with printing idempotent; random programs from a generator too."""
from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, strategies as st

import openpto.assembler as asm
from openpto.assembler import ir
from openpto.assembler.scalar_ops import SCALAR_OPS
from openpto.isa import PTOError, get
from openpto.isa.types import INDEX, ScalarType, parse_type

T16 = parse_type("!pto.tile<16x16xf32>")

SOFTMAX_LIKE = """\
// loop-carried scalar through iter_args, loop-carried tile as a buffer
kernel @k(%x : !pto.tile<16x16xf32>, %n : index,
          %s : f32) {
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .tile %acc : !pto.tile<16x16xf32>
  %acc = tmuls %x, 0.0
  %sum, %cnt = scf.for %i = %c0 to %n step %c1 iter_args(%a = %s, %k = %c0) -> (f32, index) {
    %acc = tadd %acc, %x : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) -> !pto.tile<16x16xf32>
    %a2 = arith.addf %a, %a : f32
    %k2 = arith.addi %k, %c1 : index
    %t = arith.cmpi slt, %i, %c1 : index
    %r = scf.if %t -> (f32) {
      scf.yield %a2 : f32
    }
    else {
      %neg = arith.negf %a : f32
      scf.yield %neg : f32
    }
    scf.yield %r, %k2 : f32, index
  }
  for %j = 0 to 4 step 1 {
    %b = pto.get_block_idx
    %nb = get_subblock_num : index
    %bi = arith.index_cast %b : index to i32
    %q = arith.sitofp %bi : i32 to f32
    %acc = tadds %acc, %q
    scf.yield
  }
  %z = scf.for %w = 0 to 8 step 2 iter_args(%v = 1.5) -> (f32) {
    %v2 = arith.mulf %v, %v : f32
    scf.yield %v2 : f32
  }
  %t2 = arith.cmpi eq, %n, %c1 : index
  scf.if %t2 {
    %acc = texp %acc
  }
}
"""


def round_trip(text: str) -> ir.Module:
    m = asm.parse(text)
    asm.verify(m, "cpu")
    printed = m.to_text()
    again = asm.parse(printed)
    assert again == m
    assert again.to_text() == printed
    return m


def test_control_flow_program_round_trips() -> None:
    m = round_trip(SOFTMAX_LIKE)
    k = m.kernel("k")
    loop = next(s for s in k.body if isinstance(s, ir.For))
    assert [a.name for a in loop.iter_args] == ["a", "k"]
    assert [r.type for r in loop.results] == [ScalarType("f32"), INDEX]
    assert isinstance(loop.body[-1], ir.Yield)
    branch = next(s for s in loop.body if isinstance(s, ir.If))
    assert branch.else_body and branch.results[0].type == ScalarType("f32")
    second = [s for s in k.body if isinstance(s, ir.For)][1]
    assert not any(isinstance(s, ir.Yield) for s in second.body)     # empty yield dropped
    assert (second.lb, second.ub, second.step) == (0, 4, 1)
    third = [s for s in k.body if isinstance(s, ir.For)][2]
    assert third.inits == (ir.Lit(1.5, ScalarType("f32")),)


def test_tiles_declared_in_regions_are_kernel_buffers() -> None:
    text = """
    .arg %x : !pto.tile<16x16xf32>
    for %i = 0 to 2 step 1 {
      %y = texp %x : (!pto.tile<16x16xf32>) -> !pto.tile<16x16xf32>
    }
    %z = tadd %y, %x : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) -> !pto.tile<16x16xf32>
    """
    m = round_trip(text)
    assert set(m.kernel().tiles()) == {"x", "y", "z"}


def test_scalar_names_are_scoped_by_region() -> None:
    text = """
    scf.for %i = 0 to 2 step 1 {
      %c = arith.addi %i, %i : index
    }
    scf.for %i = 0 to 3 step 1 {
      %c = arith.muli %i, %i : index
    }
    """
    round_trip(text)
    with pytest.raises(PTOError) as e:
        asm.parse(text + "%d = arith.addi %c, %c : index\n")
    assert e.value.code == "STRUCT_UNDEFINED"


def test_every_scalar_op_round_trips() -> None:
    lines = [".arg %i : i32", ".arg %j : i32", ".arg %f : f32", ".arg %g : f32", ".arg %x : index",
             ".arg %b : i1"]
    n = 0
    for spec in SCALAR_OPS.values():
        n += 1
        r = f"%r{n}"
        if spec.cls == "int_binary":
            lines.append(f"{r} = arith.{spec.name} %i, %j : i32")
        elif spec.cls == "float_binary":
            lines.append(f"{r} = arith.{spec.name} %f, %g : f32")
        elif spec.cls == "float_unary":
            lines.append(f"{r} = arith.{spec.name} %f : f32")
        elif spec.cls == "cmpi":
            lines.append(f"{r} = arith.cmpi sge, %i, %j : i32")
        elif spec.cls == "cmpf":
            lines.append(f"{r} = arith.cmpf olt, %f, %g : f32")
        elif spec.cls == "select":
            lines.append(f"{r} = arith.select %b, %f, %g : f32")
        elif spec.cls == "block":
            lines.append(f"{r} = pto.{spec.name}")
        elif spec.cls == "extended":
            lines.append(f"{r}, {r}h = arith.{spec.name} %i, %j : i32")
        else:
            src, dst = {"index_cast": ("%x : index", "i32"), "sitofp": ("%i : i32", "f32"),
                        "uitofp": ("%i : i32", "f16"), "fptosi": ("%f : f32", "i32"),
                        "fptoui": ("%f : f32", "u16"), "extsi": ("%i : i32", "i64"),
                        "extui": ("%i : i32", "i64"), "trunci": ("%i : i32", "i8"),
                        "extf": ("%r1000 : f16", "f32"), "truncf": ("%f : f32", "f16"),
                        "index_castui": ("%x : index", "u32"), "bitcast": ("%f : f32", "i32")}[spec.name]
            if spec.name == "extf":
                lines.append("%r1000 = arith.truncf %f : f32 to f16")
            lines.append(f"{r} = arith.{spec.name} {src} to {dst}")
    m = round_trip("\n".join(lines) + "\n")
    assert {s.op for s in m.kernel().walk() if isinstance(s, ir.ScalarOp)} == set(SCALAR_OPS)


def test_modules_built_in_python_print_and_parse_back() -> None:
    x, d = ir.Value("x", T16), ir.Value("d", T16)
    n, i = ir.Value("n", INDEX), ir.Value("i", INDEX)
    body = (ir.For(i, 0, n, 1, (ir.TileOp(get("TEXP"), {"dst": d, "src": x}),)),)
    m = ir.Module((ir.Kernel("k", (x, n), body),))
    assert asm.diagnose(m, "cpu") == []
    assert asm.parse(m.to_text()) == m


# ----------------------------------------------------------------------------- generated programs

TILE_OPS = ["tadd %{a}, %{b}", "tmul %{a}, %{b}", "texp %{a}", "tadds %{a}, %s", "tmax %{a}, %{b}"]


@st.composite
def programs(draw, depth: int = 0) -> str:  # noqa: ANN001
    """Random well-formed statement lists over tiles t0..t2 and scalars; '$' marks a
    suffix made unique afterwards, '^' repeats the last one."""
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["tile", "tile", "scalar", "for", "if"] if depth < 3 else ["tile"]))
        if kind == "tile":
            a, b, dst = (draw(st.integers(0, 2)) for _ in range(3))
            op = draw(st.sampled_from(TILE_OPS)).format(a=f"t{a}", b=f"t{b}")
            lines.append(f"%t{dst} = {op}")
        elif kind == "scalar":
            lines.append(f"%u$ = arith.{draw(st.sampled_from(['addi', 'muli', 'maxsi']))} %n, %n : index")
        elif kind == "for":
            it = draw(st.booleans())
            head = f"%r$ = scf.for %i{depth} = 0 to %n step 1 iter_args(%s{depth} = %s) -> (f32) {{" if it \
                else f"scf.for %i{depth} = %n to 8 step 2 {{"
            lines += [head, draw(programs(depth + 1))]
            lines += [f"scf.yield %s{depth} : f32", "}"] if it else ["}"]
        else:
            lines += ["%p$ = arith.cmpi ult, %n, %n : index", "scf.if %p^ {",
                      draw(programs(depth + 1)), "} else {", draw(programs(depth + 1)), "}"]
    return "\n".join(lines)


# the tiles are written before the body reads them (a never-written read is STRUCT_UNINIT_READ)
HEADER = "\n".join([".arg %n : index", ".arg %s : f32"] + [f".tile %t{k} : !pto.tile<16x16xf32>" for k in range(3)]
                   + [f"%t{k} = texpands %s : (f32) -> !pto.tile<16x16xf32>" for k in range(3)])


@given(programs())
def test_generated_programs_round_trip(body: str) -> None:
    counter, last = itertools.count(), [0]

    def fill(m: re.Match) -> str:
        if m.group() == "$":
            last[0] = next(counter)
        return str(last[0])
    body = re.sub(r"[$^]", fill, body)
    round_trip(HEADER + "\n" + body + "\n")


# ----------------------------------------------------------------------------- canonical text

CANONICAL = """\
kernel @main(%a : !pto.tile<32x32xf32>, %b : !pto.tile<32x32xf32>) {
  .const %c0 = 0 : index
  %d = tadd %a, %b : (!pto.tile<32x32xf32>, !pto.tile<32x32xf32>) -> !pto.tile<32x32xf32>
  %m = tcmp %a, %b {cmpMode = #pto.cmp<GT>} : (!pto.tile<32x32xf32>, !pto.tile<32x32xf32>) -> !pto.tile<32x32xi1>
  %e = tcmp %a, %b {cmpMode = #pto.cmp<LT>} : (!pto.tile<32x32xf32>, !pto.tile<32x32xf32>) -> !pto.tile<32x32xi1>
}
"""


def test_canonical_text_of_the_public_form() -> None:
    from test_assembler_parse import PUBLIC
    assert asm.parse(PUBLIC).to_text() == CANONICAL
    assert asm.print_module(asm.parse(CANONICAL)) == CANONICAL


def test_canonical_spellings() -> None:
    text = """
    .arg %g : !pto.memref<64x64xf32>
    .arg %vr : index
    %t = pto.alloc_tile valid_row = %vr : !pto.tile_buf<vec, f32, 16, 16, ?, 16>
    .const %c = 1e-5 : f32
    .const %k = 1 : i1
    %n = pto.get_block_num : index
    %x = constant 7 : i32
    scf.for %i = %n to 64 step %n : index { }
    """
    printed = asm.parse(text).to_text()
    assert printed == """\
kernel @main(%g : !pto.memref<64x64xf32>, %vr : index) {
  .tile %t valid_row = %vr : !pto.tile<16x16xf32, valid=?x16>
  .const %c = 1e-05 : f32
  .const %k = true : i1
  %n = pto.get_block_num
  .const %x = 7 : i32
  scf.for %i = %n to 64 step %n {
  }
}
"""
    round_trip(printed)
