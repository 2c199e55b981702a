"""The assembler benchmark's generated module (no timing here), and the two caches that make
the assembler fast checked against the code paths they stand in for:

* the parser's line templates (``Parser.fast``) against the token-by-token parser, on the
  benchmark module and on mutated programs: the same module with the same locations, or
  the same diagnostics;
* the verifier's per-signature verdicts against ``_tile_op_unshared`` (the statement-by-
  statement checks), on modules with broken statements: the same diagnostics, each at its
  own statement.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import random
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

import openpto.assembler as asm
from openpto.assembler import ir
from openpto.assembler.cursor import location, new_scalar_op, new_tile_op, new_value
from openpto.assembler.lexer import continued_lines, continues
from openpto.assembler.parser import Parser
from openpto.assembler.verifier import _KernelCheck
from openpto.isa import PTOError, all_instructions
from openpto.isa.attrs import CmpMode
from openpto.isa.diagnostics import Location, PTOErrorGroup
from openpto.isa.types import parse_type
from test_assembler_fuzz import mutated, token_mutated


def _load_bench():  # noqa: ANN202
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_assembler.py"
    spec = importlib.util.spec_from_file_location("bench_assembler", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_assembler", module)
    spec.loader.exec_module(module)
    return module


bench = _load_bench()
N = 1500
TEXT = bench.generate(N, seed=1)


def test_generated_module_has_n_statements_and_variety() -> None:
    m = asm.verify(asm.parse(TEXT), "a3")
    stmts = [s for k in m.kernels for s in k.walk()]
    assert len(stmts) == N
    kinds = {type(s) for s in stmts}
    assert kinds >= {ir.TileOp, ir.ScalarOp, ir.Const, ir.For, ir.If, ir.Yield}
    assert any(isinstance(s, ir.For) and s.iter_args for s in stmts)
    assert any(isinstance(a, ir.Lit) for s in stmts if isinstance(s, ir.TileOp) for a in s.args.values())
    assert len({s.instr.mnemonic for s in stmts if isinstance(s, ir.TileOp)}) >= 20
    assert len(bench.signatures(m)) >= 30
    assert asm.parse(m.to_text()) == m


def test_generate_is_deterministic_and_sized() -> None:
    assert bench.generate(300, seed=4) == bench.generate(300, seed=4)
    for n in (100, 2345, 2501):
        m = asm.parse(bench.generate(n, seed=2))
        assert len(bench.statements(m)) == n
        assert len(m.kernels) == max(1, round(n / 1000))
    with pytest.raises(ValueError):
        bench.generate(99)


def test_main_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--n", "400", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "N = 400 statements" in out and "statements/s" in out
    row = out.strip().splitlines()[-1]
    assert row.startswith("|") and row.count("|") == 9


# ----------------------------------------------------------------------------- line templates

def outcome(text: str, fast: bool) -> tuple:
    """What parsing gives: the module with every location, or every diagnostic in full."""
    saved = Parser.fast
    Parser.fast = fast
    try:
        m = asm.parse(text, filename="t.pto")
    except PTOError as e:
        errs = e.errors if isinstance(e, PTOErrorGroup) else [e]
        return ("errors", [(type(x), x.code, x.message, x.location, x.expected, x.actual) for x in errs])
    finally:
        Parser.fast = saved
    return ("module", m, [(k.loc, [(type(s), s.loc) for s in k.walk()]) for k in m.kernels])


def mutate_lines(text: str, rng: random.Random) -> str:
    """Line-level edits that keep a line's shape but break its binding (names swapped or
    renamed), or break its shape (duplicated, deleted, cut, spliced lines)."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 5)):
        k = rng.randrange(len(lines))
        names = re.findall(r"%[\w$.\-]+", lines[k])
        op = rng.randrange(6)
        if op == 0 and len(names) > 1:
            a, b = rng.sample(names, 2)
            lines[k] = lines[k].replace(a, b)
        elif op == 1 and names:
            lines[k] = lines[k].replace(rng.choice(names), rng.choice(["%zz", "%n", "%c1", "%alpha", "%dst_0"]), 1)
        elif op == 2:
            lines.insert(rng.randrange(len(lines)), lines[k])
        elif op == 3 and len(lines) > 1:
            del lines[k]
        elif op == 4:
            cut = rng.randrange(len(lines[k]) + 1)
            lines[k] = lines[k][:cut] + rng.choice(["", "%", ";", "}", " {", ", %x", ": f32", "\n"]) \
                + lines[k][cut + rng.randrange(4):]
        else:
            lines[k] = lines[k].replace(": (", ": ((", 1).replace("index", "f32", 1)
    return "\n".join(lines)


def test_templates_build_the_benchmark_module_exactly() -> None:
    assert outcome(TEXT, True) == outcome(TEXT, False)


def test_fifo_lines_by_template_match_the_token_path() -> None:
    """TPUSH/TPOP/TALLOC/TFREE lines take templates only in a kernel that has declared no
    pipe: lines of one shape in a kernel before and after a pipe, in a kernel with pipes, and
    pipe spellings in a kernel without one give the same module or diagnostics both ways."""
    acc, vec, c2v = ("!pto.tile<16x16xf32, loc=acc, layout=NZ>", "!pto.tile<16x16xf32>",
                     "!pto.tpipe<0, DIR_C2V, 1024, 4>")
    head = f"kernel @K(%a : {acc}, %v : {vec}, %g : !pto.memref<16x16xf32>) {{\n"
    lines = ["  tpush %a {FlagID = 0, SlotNum = 4}", "  pto.tpush %a, %g", "  pto.tpush %a, %p",
             f"  %v = tpop {{FlagID = 0, SlotNum = 4}} : () -> {vec}", "  pto.tpop %p, %g[0, 0]",
             f"  %v = pto.tpop %p : ({c2v}) -> {vec}", "  pto.tfree pipe(%p)", "  tfree %g[0, 0] {FlagID = 0, SlotNum = 4}",
             "  pto.tpush %a, pipe(%g)", "  %w = tpop {FlagID = 0, SlotNum = 4} : () -> " + vec]
    decl = f"  %p = pto.initialize_pipe : {c2v}\n"
    rng = random.Random(5)
    for _ in range(60):
        body = rng.sample(lines, 4)
        text = head.replace("K", "a", 1) + "\n".join(body[:2]) + "\n" + (decl if rng.random() < 0.5 else "") \
            + "\n".join(body[2:]) + "\n}\n" + head.replace("K", "b", 1) + "\n".join(body) + "\n}\n"
        assert outcome(text, True) == outcome(text, False), text


def test_templates_defer_every_diagnostic_to_the_token_path() -> None:
    rng = random.Random(11)
    small = [bench.generate(120, seed=s) for s in range(4)]
    for _ in range(100):
        text = mutate_lines(rng.choice(small), rng)
        assert outcome(text, True) == outcome(text, False), text


@given(st.one_of(mutated(), token_mutated()))
def test_templates_match_the_token_path_on_fuzzed_programs(text: str) -> None:
    assert outcome(text, True) == outcome(text, False)


def test_statement_locations_are_plain_locations() -> None:
    fast = location("k.pto", 3, 7, "  %d = texp %a")
    made = Location("k.pto", 3, 7, source_line="  %d = texp %a")
    assert fast == made and hash(fast) == hash(made) and vars(fast) == vars(made)
    assert dataclasses.replace(fast, index=2) == dataclasses.replace(made, index=2)


@given(st.lists(st.sampled_from(["", " ", "\t", "\r", ":", "->", "-", "ins(", "outs (", "pipe\t(", "ins", "x",
                                  "%a", "\n", "\n\n", "\r\n", " pipe(", "(", "out"]), max_size=12).map("".join))
def test_continued_lines_is_continues_on_each_line(text: str) -> None:
    lines = text.split("\n")
    assert continued_lines(text) == {k for k in range(1, len(lines)) if continues(lines[k])}


def test_the_template_makers_build_the_dataclasses() -> None:
    """The makers fill every field (a field added to a class must be added to its maker) and
    build what the constructor builds: equal, hashed alike, frozen."""
    t = parse_type("!pto.tile<16x16xf32>")
    a, loc = ir.Value("a", t), Location("k.pto", 3, 7, source_line="x")
    tadd = next(i for i in all_instructions() if i.mnemonic == "TADD")
    pairs = [(new_value("a", t), a),
             (new_tile_op(tadd, {"dst": a, "src0": a, "src1": a}, {}, loc),
              ir.TileOp(tadd, {"dst": a, "src0": a, "src1": a}, {}, loc=loc)),
             (new_scalar_op("arith.addi", a, (a, a), None, loc), ir.ScalarOp("arith.addi", a, (a, a), None, loc=loc))]
    assert hash(pairs[0][0]) == hash(a)
    for fast, made in pairs:
        assert vars(fast) == vars(made) and list(vars(fast)) == [f.name for f in dataclasses.fields(made)]
        assert fast == made
        with pytest.raises(dataclasses.FrozenInstanceError):
            fast.loc = None   # type: ignore[misc]


def test_repeated_lines_keep_their_own_locations() -> None:
    line = "%d = tadd %a, %b : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) -> !pto.tile<16x16xf32>"
    text = ".arg %a : !pto.tile<16x16xf32>\n.arg %b : !pto.tile<16x16xf32>\n" + \
        "\n".join("  " * k + line.replace("%d", "%" + "d" * (k + 1)) for k in range(3)) + "\n"
    ops = [s for s in asm.parse(text).kernel().body if isinstance(s, ir.TileOp)]
    assert [(s.loc.line, s.loc.col) for s in ops] == [(3, 6), (4, 9), (5, 12)]
    bad = text + line.replace("%b", "%nope") + "\n" + "  " + line.replace("%a", "%gone") + "\n"
    with pytest.raises(PTOErrorGroup) as e:
        asm.parse(bad)
    assert [(x.code, x.location.line, x.location.col) for x in e.value.errors] == [
        ("STRUCT_UNDEFINED", 6, 15), ("STRUCT_UNDEFINED", 7, 13)]


# ----------------------------------------------------------------------------- signature verdicts

TYPES = [parse_type(t) for t in ("!pto.tile<16x16xf32>", "!pto.tile<8x32xf16>", "f32", "index", "i1",
                                 "!pto.memref<64x64xf32>", "!pto.tile<16x16xf32, loc=acc, layout=NZ>")]


def break_op(s: ir.TileOp, rng: random.Random) -> ir.Stmt:
    args, attrs = dict(s.args), dict(s.attrs)
    name = rng.choice(list(args)) if args else None
    op = rng.randrange(8)
    if op == 0 and name and isinstance(args[name], ir.Value):
        args[name] = ir.Value(args[name].name, rng.choice(TYPES))
    elif op == 1 and name:
        del args[name]
    elif op == 2:
        args["bogus"] = ir.Value("zz", TYPES[0])
    elif op == 3 and name and isinstance(args[name], ir.Value):
        args[name] = ir.Value("undefined_" + args[name].name, args[name].type)
    elif op == 4:
        attrs[rng.choice(["cmpMode", "relu", "enable", "x"])] = rng.choice([CmpMode.GT, True, 1, 1.0, -0.0, [1]])
    elif op == 5 and name:
        args[name] = ir.Lit(1.5, parse_type("f32"))
    elif op == 6:
        return dataclasses.replace(s, instr=rng.choice(all_instructions()))
    return dataclasses.replace(s, args=args, attrs=attrs)


def break_body(body: tuple[ir.Stmt, ...], rng: random.Random) -> tuple[ir.Stmt, ...]:
    out = list(body)
    for k, s in enumerate(out):
        if isinstance(s, ir.TileOp) and rng.random() < 0.15:
            out[k] = break_op(s, rng)
        elif isinstance(s, ir.For):
            out[k] = dataclasses.replace(s, body=break_body(s.body, rng))
    return tuple(out)


def diagnostics(m: ir.Module, profile: str | None) -> list[tuple]:
    return [(type(e), e.code, e.message, e.location, e.expected, e.actual) for e in asm.diagnose(m, profile)]


def test_signature_verdicts_match_statement_by_statement_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    base = asm.parse(bench.generate(600, seed=3))
    cases = [base] + [ir.Module(tuple(dataclasses.replace(k, body=break_body(k.body, rng)) for k in base.kernels))
                      for _ in range(12)]
    for profile in (None, "cpu", "a3", "a5"):
        cached = [diagnostics(m, profile) for m in cases]
        with monkeypatch.context() as mp:
            mp.setattr(_KernelCheck, "_tile_op", _KernelCheck._tile_op_unshared)
            assert cached == [diagnostics(m, profile) for m in cases]
        assert any(cached)


def test_repeated_bad_signature_is_reported_at_each_statement() -> None:
    # dst taller than its sources: they cannot cover its valid region
    line = "%d = tadd %a, %a : (!pto.tile<16x16xf32>, !pto.tile<16x16xf32>) -> !pto.tile<32x16xf32>"
    text = ".arg %a : !pto.tile<16x16xf32>\n" + "\n".join([line, "  " + line.replace("%d", "%e")]) + "\n"
    errs = asm.diagnose(asm.parse(text), "a3")
    assert [(e.code, e.location.line, e.location.col, e.location.index) for e in errs] == [
        ("STRUCT_VALID_REGION", 2, 6, 0), ("STRUCT_VALID_REGION", 3, 8, 1)]
    assert errs[0].message == errs[1].message and errs[0].render() != errs[1].render()
