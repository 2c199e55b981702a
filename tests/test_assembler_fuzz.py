"""Bad input never escapes as anything but a PTOError, never hangs, and whatever the parser
accepts prints and parses back to the same module."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

import openpto.assembler as asm
from openpto.assembler.lexer import EOF, tokenize
from openpto.isa import PTOError, all_instructions
from test_assembler_parse import PUBLIC, dps_statement, program
from test_assembler_roundtrip import SOFTMAX_LIKE
from work_support import call_budget

EVENTS = """.arg %e : index
pto.record_event[TLOAD, TVEC, 0]
pto.wait_event[TLOAD, TVEC, 0]
pto.barrier(TVEC)
scf.for %i = 0 to 4 step 1 {
  set_flag #pto.pipe<V>, #pto.pipe<MTE3>, %e
  wait_flag #pto.pipe<V>, #pto.pipe<MTE3>, %e
}
"""
SEEDS = [SOFTMAX_LIKE, PUBLIC, EVENTS] + [program(i) for i in all_instructions()[::7]] \
    + [program(i, dps_statement(i)) for i in all_instructions()[3::11]]
FRAGMENTS = ["%a", "%x", ",", "{", "}", "(", ")", "[", "]", ":", "=", "->", ";", "\n", "#", "//", "@k",
             "scf.for", "scf.if", "else", "scf.yield", "kernel", ".arg", ".const", ".tile", "iter_args",
             "!pto.tile<16x16xf32>", "!pto.tile<", "#pto.cmp<GT>", "#pto.pipe<V>", "0", "-1", "1.5",
             "1e99", "nan", "true", "index", "i1", "f32", "tadd", "ins(", "outs(", "to", "step", "ü", "\t"]


@st.composite
def mutated(draw) -> str:  # noqa: ANN001
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["delete", "insert", "insert_text", "dup_line"]))
        if op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 12)):]
        elif op == "insert":
            text = text[:i] + draw(st.sampled_from(FRAGMENTS)) + text[i:]
        elif op == "insert_text":
            text = text[:i] + draw(st.text(max_size=6)) + text[i:]
        else:
            lines = text.split("\n")
            k = draw(st.integers(0, len(lines) - 1))
            text = "\n".join(lines[:k] + [lines[k]] + lines[k:])
    return text


SEED_TOKENS = [[t.text for t in tokenize(s) if t.kind != EOF] for s in SEEDS]
VOCAB = sorted({t for toks in SEED_TOKENS for t in toks} | set(FRAGMENTS))


@st.composite
def token_mutated(draw) -> str:  # noqa: ANN001
    """Seeds re-spelled token by token with some tokens deleted, replaced, inserted or swapped:
    reaches deeper into the grammar than character edits."""
    toks = list(draw(st.sampled_from(SEED_TOKENS)))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(toks) - 1))
        op = draw(st.sampled_from(["delete", "replace", "insert", "swap"]))
        if op == "delete":
            del toks[i]
        elif op == "replace":
            toks[i] = draw(st.sampled_from(VOCAB))
        elif op == "insert":
            toks.insert(i, draw(st.sampled_from(VOCAB)))
        else:
            j = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[j] = toks[j], toks[i]
    return "".join(t if t == "\n" else t + " " for t in toks)


#: calls one check may make: about 100 times what the largest fuzz input (the softmax module) takes,
#: so only a hang or a runaway path in the assembler exceeds it (counted, not timed).
BUDGET = 2_000_000


def check(text: str) -> None:
    with call_budget(BUDGET, "parsing, checking and reprinting one input"):
        _check(text)


def _check(text: str) -> None:
    try:
        m = asm.parse(text, filename="fuzz.pto")
    except PTOError as e:
        assert e.code.split("_")[0] in ("PARSE", "STRUCT", "PTO"), e.code
        str(e)                                    # renders without raising
        lines = text.split("\n")
        for err in getattr(e, "errors", [e]):     # every diagnostic points into the input
            loc = err.location
            assert loc.file == "fuzz.pto" and loc.line is not None, err.render()
            assert 1 <= loc.line <= len(lines), err.render()
            assert loc.col is None or 1 <= loc.col <= len(lines[loc.line - 1]) + 1, err.render()
    else:
        for profile in (None, "cpu", "a2"):
            asm.diagnose(m, profile)
        printed = m.to_text()
        assert asm.parse(printed) == m, printed


@settings(max_examples=400)
@given(mutated())
def test_mutated_programs_raise_only_pto_errors(text: str) -> None:
    check(text)


@settings(max_examples=400)
@given(token_mutated())
def test_token_mutated_programs_raise_only_pto_errors(text: str) -> None:
    check(text)


@settings(max_examples=200)
@given(st.text(max_size=80))
def test_arbitrary_text_raises_only_pto_errors(text: str) -> None:
    check(text)


def test_pathological_inputs() -> None:
    for text in ["{" * 5000, "scf.for %i = 0 to 1 step 1 {\n" * 200, "%a = " * 2000, "(" * 3000,
                 "!pto.tile<" + "<" * 3000, "\x00\x01", "%d = tadd " + ", ".join(["%a"] * 5000),
                 ".arg %a : !pto.tile<99999999999999999999x1xf32>\n"]:
        check(text)
