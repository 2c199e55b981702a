"""The example programs (examples/*.pto) and the PTO-AS reference (docs/assembly.md).

Every example parses, verifies for the cpu and a3 profiles, prints canonically and
round-trips through text and bytecode; each named example also has the structure its header
comment promises (the numerics are checked by the backend tests). Every ```pto block of the
language reference parses and verifies, every ```pto-error block fails with the code it
names, and the reference lists every diagnostic code the assembler defines.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

import openpto.assembler as asm
from openpto.assembler import ir
from openpto.assembler.codes import CODES
from openpto.isa import PTOError, PTOErrorGroup, Role
from openpto.isa.types import GlobalType, Layout, Location, Pipe, TileType

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.pto"))
DOC = ROOT / "docs" / "assembly.md"
NAMED = {"vector_add", "softmax", "layernorm", "gemm", "flash_attention", "double_buffer_copy"}


def load(name: str) -> ir.Module:
    path = ROOT / "examples" / f"{name}.pto"
    return asm.parse(path.read_text(), filename=str(path))


def tile_ops(body: tuple[ir.Stmt, ...]) -> list[ir.TileOp]:
    return [s for s in ir.walk(body) if isinstance(s, ir.TileOp)]


def loops(body: tuple[ir.Stmt, ...]) -> list[ir.For]:
    return [s for s in ir.walk(body) if isinstance(s, ir.For)]


def tile(op: ir.TileOp, name: str) -> TileType:
    t = op.args[name].type  # type: ignore[union-attr]
    assert isinstance(t, TileType)
    return t


# ----------------------------------------------------------------------------- every example

def test_the_six_examples_exist() -> None:
    assert NAMED <= {p.stem for p in EXAMPLES}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_assembles_verifies_and_round_trips(path: Path) -> None:
    text = path.read_text()
    m = asm.parse(text, filename=str(path))
    for profile in ("cpu", "a3"):
        asm.verify(m, profile)
    canonical = m.to_text()
    assert asm.parse(canonical) == m
    assert asm.parse(canonical).to_text() == canonical
    assert asm.load_bytes(m.to_bytes()) == m


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_opens_with_a_header_comment(path: Path) -> None:
    text = path.read_text()
    assert text.startswith("//") and path.stem in text.splitlines()[0]


@pytest.mark.parametrize("name", sorted(NAMED))
def test_example_is_a_kernel_looping_over_global_tensors(name: str) -> None:
    k = load(name).kernel()
    assert any(isinstance(p.type, GlobalType) for p in k.params)
    in_loops = [op.instr.mnemonic for f in loops(k.body) for op in tile_ops(f.body)]
    assert "TLOAD" in in_loops and "TSTORE" in in_loops
    for op in tile_ops(k.body):
        if op.instr.mnemonic in ("TLOAD", "TSTORE"):
            g = op.args["src" if op.instr.mnemonic == "TLOAD" else "dst"]
            assert isinstance(g, ir.MemRef) and isinstance(g.base.type, GlobalType)


def test_examples_show_both_instruction_forms_and_the_pto_prefix() -> None:
    texts = [p.read_text() for p in EXAMPLES]
    assert any(re.search(r"^\s*pto\.t\w+ ins\(.*\) outs\(", t, re.M) for t in texts)
    assert any(re.search(r"^\s*%\w+ = t\w+ ", t, re.M) for t in texts)


# ----------------------------------------------------------------------------- one by one

def test_vector_add_tiles_a_dynamic_row_count() -> None:
    k = load("vector_add").kernel()
    outer = loops(k.body)[0]
    assert outer.iter_args and outer.ub == k.param("rows")
    decls = [s for s in ir.walk(outer.body) if isinstance(s, ir.TileDecl)]
    assert decls and all(d.valid_rows is not None and d.value.type.valid_rows is None for d in decls)
    assert [op.instr.mnemonic for op in tile_ops(k.body)] == ["TLOAD", "TLOAD", "TADD", "TSTORE"]


def test_softmax_uses_full_rows_and_few_instructions_per_tile() -> None:
    k = load("softmax").kernel()
    (loop,) = loops(k.body)
    ops = tile_ops(loop.body)
    assert {"TROWMAX", "TROWSUM"} <= {op.instr.mnemonic for op in ops}
    assert len(ops) <= 6
    load_op = ops[0]
    width = k.param("x").type.shape[-1]  # type: ignore[union-attr]
    t = tile(load_op, "dst")
    assert load_op.instr.mnemonic == "TLOAD" and t.cols == width and t.rows == 16
    assert 2 * t.nbytes <= 192 * 1024 - 2 * 1024       # two copies and their row vectors fit a3's 192 KB
    assert asm.diagnose(load("softmax"), "a3") == []


def test_layernorm_normalises_scales_and_shifts() -> None:
    names = [op.instr.mnemonic for op in tile_ops(load("layernorm").kernel().body)]
    assert {"TROWSUM", "TROWEXPANDSUB", "TRSQRT", "TROWEXPANDMUL", "TCOLEXPANDMUL",
            "TCOLEXPANDADD"} <= set(names)
    params = {p.name: p.type for p in load("layernorm").kernel().params}
    assert str(params["eps"]) == "f32"


def test_gemm_runs_the_cube_path_over_a_k_loop() -> None:
    k = load("gemm").kernel()
    ops = tile_ops(k.body)
    mm = [op for op in ops if op.instr.mnemonic in ("TMATMUL", "TMATMUL_ACC")]
    assert {op.instr.mnemonic for op in mm} == {"TMATMUL", "TMATMUL_ACC"}
    for op in mm:
        assert (tile(op, "a").loc, tile(op, "b").loc, tile(op, "dst").loc) == \
            (Location.LEFT, Location.RIGHT, Location.ACC)
        assert tile(op, "a").layout in (Layout.NZ, Layout.ZZ) and tile(op, "b").layout is Layout.ZN
    assert {tile(op, "dst").loc for op in ops if op.instr.mnemonic == "TLOAD"} == {Location.MAT}
    feeds = {(tile(op, "src").loc, tile(op, "dst").loc) for op in ops
             if op.instr.mnemonic in ("TMOV", "TEXTRACT")}
    assert {(Location.MAT, Location.LEFT), (Location.MAT, Location.RIGHT)} <= feeds
    (store,) = [op for op in ops if op.instr.mnemonic == "TSTORE"]
    assert tile(store, "src").loc is Location.ACC
    k_loop = [f for f in loops(k.body) if f.ub == k.param("k")]
    assert k_loop and any(op.instr.mnemonic == "TMATMUL_ACC" for op in tile_ops(k_loop[0].body))


def carried_tiles(loop: ir.For) -> set[str]:
    """Tiles the loop body reads before it writes them: their values cross iterations."""
    written: set[str] = set()
    carried: set[str] = set()
    for op in tile_ops(loop.body):
        for o in op.instr.operands:
            a = op.args.get(o.name)
            if isinstance(a, ir.Value) and isinstance(a.type, TileType) and o.role is not Role.OUT \
                    and a.name not in written:
                carried.add(a.name)
        written |= {v.name for v in op.results}
    return carried & written


def test_flash_attention_carries_max_sum_and_output_across_kv_blocks() -> None:
    k = load("flash_attention").kernel()
    kv = [f for f in loops(k.body) if f.ub == k.param("skv")]
    assert len(kv) == 1
    assert {"m", "l", "acc_o"} <= carried_tiles(kv[0])
    ops = {op.instr.mnemonic: op for op in tile_ops(kv[0].body)}
    # alpha = exp(m_old - m_new) rescales the running sum and the output accumulator
    sub, exp = ops["TSUB"], ops["TEXP"]
    assert (sub.args["src0"].name, sub.args["src1"].name) == ("m", "m_new")  # type: ignore[union-attr]
    alpha = exp.args["dst"].name  # type: ignore[union-attr]
    rescaled = {op.args["src0"].name for op in tile_ops(kv[0].body)  # type: ignore[union-attr]
                if op.instr.mnemonic in ("TMUL", "TROWEXPANDMUL")
                and op.args["src1"].name == alpha}  # type: ignore[union-attr]
    assert rescaled == {"l", "acc_o"}
    assert sum(op.instr.mnemonic == "TMATMUL" for op in tile_ops(kv[0].body)) == 2


def flag_events(body: tuple[ir.Stmt, ...], trips: int) -> list[tuple[str, tuple]]:
    """SET/WAIT flags in program order, each loop unrolled ``trips`` times."""
    out: list[tuple[str, tuple]] = []
    for s in body:
        if isinstance(s, ir.For):
            for _ in range(trips):
                out += flag_events(s.body, trips)
        elif isinstance(s, ir.TileOp) and s.instr.mnemonic in ("SET_FLAG", "WAIT_FLAG"):
            key = (s.args["src_pipe"].pipe, s.args["dst_pipe"].pipe, s.args["event_id"].value)  # type: ignore[union-attr]
            out.append((s.instr.mnemonic, key))
    return out


@pytest.mark.parametrize("trips", [1, 2, 5])
def test_double_buffer_flags_pair_up_as_counting_semaphores(trips: int) -> None:
    """Run in program order, no wait_flag finds its flag unset and none is left set."""
    k = load("double_buffer_copy").kernel()
    pending: Counter = Counter()
    for what, key in flag_events(k.body, trips):
        if what == "SET_FLAG":
            pending[key] += 1
        else:
            assert pending[key] > 0, f"wait on {key} with no flag set"
            pending[key] -= 1
    assert not +pending
    keys = {key for _, key in flag_events(k.body, 1)}
    assert {i for *_, i in keys} == {0, 1}                        # ping and pong
    assert {(Pipe.MTE2, Pipe.V), (Pipe.V, Pipe.MTE3)} <= {(s, d) for s, d, _ in keys}
    assert sum(op.instr.mnemonic == "TLOAD" for op in tile_ops(k.body)) == 2


# ----------------------------------------------------------------------------- the reference

BLOCK = re.compile(r"^```(pto|pto-error)\n(.*?)^```", re.M | re.S)


def doc_blocks(kind: str) -> list[str]:
    return [body for k, body in BLOCK.findall(DOC.read_text()) if k == kind]


@pytest.mark.parametrize("block", doc_blocks("pto"), ids=lambda b: b.splitlines()[0][:40])
def test_reference_snippet_parses_verifies_and_round_trips(block: str) -> None:
    m = asm.parse(block, filename="assembly.md")
    asm.verify(m, "cpu")
    assert asm.parse(m.to_text()) == m


@pytest.mark.parametrize("block", doc_blocks("pto-error"), ids=lambda b: b.splitlines()[0][:40])
def test_reference_error_snippet_fails_with_its_code(block: str) -> None:
    first = block.splitlines()[0]
    code = re.search(r"\b[A-Z]+(?:_[A-Z0-9]+)+\b", first)
    profile = re.search(r"\b(cpu|a2|a3|a5)\b", first)
    assert first.startswith("//") and code
    with pytest.raises(PTOError) as info:
        asm.verify(asm.parse(block), profile.group(1) if profile else "cpu")
    e = info.value
    codes = {x.code for x in e.errors} if isinstance(e, PTOErrorGroup) else {e.code}
    assert code.group(0) in codes


def test_reference_has_snippets_of_both_kinds() -> None:
    assert len(doc_blocks("pto")) >= 10 and doc_blocks("pto-error")


PRINTED = re.compile(r"prints(?: as)?:\n\n```pto\n(.*?)^```", re.M | re.S)


def test_reference_printed_forms_are_what_the_printer_prints() -> None:
    """A block introduced with 'prints:' is the canonical text of an earlier block."""
    text = DOC.read_text()
    claims = [(m.start(), m.group(1)) for m in PRINTED.finditer(text)]
    assert len(claims) >= 2
    for at, printed in claims:
        earlier = [body for k, body in BLOCK.findall(text[:at]) if k == "pto"]
        assert printed in {asm.parse(b).to_text() for b in earlier}


def test_reference_lists_every_diagnostic_code() -> None:
    rows = set(re.findall(r"^\| `([A-Z0-9_]+)` \|", DOC.read_text(), re.M))
    assert not [c for c in CODES if c not in rows]
