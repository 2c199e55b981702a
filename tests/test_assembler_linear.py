"""Parsing is linear in the input, measured deterministically: for long lines of every kind
(the cases of benchmarks/bench_parse_linear.py: blanks, comments, long names, many tokens, runs
of ';', deep-but-allowed nesting, unterminated brackets, continuation lines) the number of
function calls a parse makes (Python and built-in, counted with ``sys.setprofile``) grows by
the same amount from N to 2N as from 2N to 4N, up to a small slack. A quadratic path in the
assembler's own code (a scan from the start of the line per token, a rule retried at every
blank) makes the second step four times the first. Work inside one built-in call (a regex
backtracking over the whole line) is not counted here: the benchmark times the cases at a
megabyte, where such a path takes minutes."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Callable

import pytest

import openpto.assembler as asm
from openpto.assembler.lexer import is_name
from openpto.isa import PTOError
from work_support import calls

N = 4_200                # characters of the smallest size (every case's divisor divides it); 2N, 4N follow
SLACK = 64               # calls that may differ between sizes for reasons other than the input


def _bench() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_parse_linear.py"
    spec = importlib.util.spec_from_file_location("bench_parse_linear", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


def assert_linear(fn: Callable[[str], None], make: Callable[[int], str]) -> None:
    """``fn``'s calls on ``make(N)``, ``make(2N)``, ``make(4N)`` grow linearly: the step from 2N
    to 4N is at most the step from N to 2N (doubled: the step's size doubles) plus the slack."""
    fn(make(N))                                  # caches the assembler learns on first use
    c1, c2, c4 = (calls(fn, make(k * N)) for k in (1, 2, 4))
    assert c4 - c2 <= 2 * (c2 - c1) + SLACK, f"calls at N, 2N, 4N: {c1}, {c2}, {c4}"


@pytest.mark.parametrize("make", BENCH.PARSE_CASES.values(), ids=BENCH.PARSE_CASES.keys())
def test_long_lines_parse_in_linear_work(make: Callable[[int], str]) -> None:
    assert_linear(BENCH.parse_or_render, make)


@pytest.mark.parametrize("make", BENCH.LEX_CASES.values(), ids=BENCH.LEX_CASES.keys())
def test_long_lines_lex_in_linear_work(make: Callable[[int], str]) -> None:
    assert_linear(BENCH.lex, make)


def test_the_measure_sees_a_quadratic_path() -> None:
    """The check itself: work that grows with the square of the input fails it, work that
    grows with the input passes."""
    def quadratic(text: str) -> None:
        for k in range(len(text) // 100):
            for _ in range(k):
                is_name("x")

    with pytest.raises(AssertionError):
        assert_linear(quadratic, lambda n: "x" * n)
    assert_linear(lambda text: [is_name("x") for _ in range(len(text) // 100)], lambda n: "x" * n)


def test_lexing_drops_trailing_blanks() -> None:
    """The lexer's answer on the issue's line: one token, the blanks after it dropped."""
    assert [t.text for t in BENCH.lex_line("x" + " \t" * N, 1)] == ["x"]


def test_blank_lines_keep_their_columns() -> None:
    """Dropping trailing blanks changes no position: the end of line is still after them."""
    with pytest.raises(PTOError) as e:
        asm.parse("scf.for %i = 0 to 1 step 1" + " " * 10)
    loc = e.value.location
    assert (loc.line, loc.col) == (1, 37)
