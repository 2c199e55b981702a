"""Parse time of megabyte-long lines of every kind: the assembler must be linear in its input.

Each case is one source of about N characters (blanks, comments, long names, many tokens, runs
of ';', deep-but-allowed nesting, unterminated brackets, continuation lines) that parses or fails
with a diagnostic. A quadratic path (a regex retried at every blank of a run, a scan from the
start of the line per token) takes minutes at N = 1,000,000; a linear one well under a second.
tests/test_assembler_linear.py holds the same cases to a deterministic measure (the calls made
grow linearly with N); this script times them.

    python benchmarks/bench_parse_linear.py [--n 1000000] [--bound 3.0] [--repeat 2]
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the shared benchmarks/machine.py
from machine import best_of, calibration, machine  # noqa: E402
import openpto.assembler as asm  # noqa: E402
from openpto.assembler.ir import MAX_DEPTH  # noqa: E402
from openpto.assembler.lexer import lex_line  # noqa: E402
from openpto.isa import PTOError  # noqa: E402

#: the operands the continuation-line cases name
_ARGS = ".arg %a : !pto.tile<16x16xf32>\n.arg %b : !pto.tile<16x16xf32>\n.arg %s : f32\n"

#: case -> source of about n characters
PARSE_CASES: dict[str, Callable[[int], str]] = {
    "trailing blanks": lambda n: ".const %c = 0 : index" + " " * n,
    "trailing tabs after a non-ASCII comment": lambda n: ".const %c = 0 : index // \u00fc" + "\t\f" * (n // 2),
    "blank line": lambda n: " " * n,
    "blanks then a statement": lambda n: " " * n + ".const %c = 0 : index",
    "blanks between tokens": lambda n: ".const" + " " * n + "%c = 0 : index",
    "// comment": lambda n: "// " + "x" * n,
    "# comment": lambda n: "# " + "x <" * (n // 3),
    "long value name": lambda n: ".const %" + "c" * n + " = 0 : index",
    "long kernel name": lambda n: "kernel @" + "k" * n + "() {\n}",
    "long mnemonic": lambda n: "t" * n,
    "long integer": lambda n: ".const %c = " + "1" * n + " : index",
    "';' run": lambda n: ";" * n,
    "'; ' run": lambda n: "; " * (n // 2),
    "many operands": lambda n: "%d = tadd " + ", ".join(["%a"] * (n // 4)),
    "many statements": lambda n: "; ".join(f".const %c{i} = {i} : index" for i in range(n // 30)),
    "many memref indices": lambda n: "%d = tload %g[" + ", ".join(["0"] * (n // 3)) + "]",
    "many signature types": lambda n: "%d = tadd %a, %b : (" + ", ".join(["f32"] * (n // 5)) + ")",
    "many parameters": lambda n: "kernel @k(" + ", ".join(f"%a{i} : index" for i in range(n // 14)) + ") {\n}",
    "many iter_args": lambda n: ("scf.for %i = 0 to 1 step 1 iter_args("
                                 + ", ".join(f"%a{i} = 0" for i in range(n // 10)) + ") -> (index) {\n}"),
    "unterminated type": lambda n: ".arg %a : !pto.tile<" + "x" * n,
    "unterminated nested type": lambda n: ".arg %a : !pto.tile<" + "<" * n,
    "nested angle brackets": lambda n: "!a<" * (n // 6) + ">" * (n // 6),
    "stray characters": lambda n: "?" * n,
    "stray non-ASCII characters": lambda n: "\u00fc" * n,
    "opening braces": lambda n: "{" * n,
    "closing braces": lambda n: "}" * n,
    "digits and dots": lambda n: "1." * (n // 2),
    "deep-but-allowed nesting": lambda n: (".arg %c : i1\n" + "scf.if %c { " * MAX_DEPTH + "}" * MAX_DEPTH
                                           + " " * n),
    # deciding whether a line continues the one before reads only its start, once per line
    "continuation: blanks then ':'": lambda n: _ARGS + "%d = tadd %a, %b\n" + " " * n + ": f32",
    "continuation: blanks then a word": lambda n: _ARGS + "%d = tadd %a, %b\n" + " " * n + "outsx",
    "continuation: outs without (": lambda n: _ARGS + "%d = tadd %a, %b\n" + "outs " * (n // 5),
    "continuation: many ':' lines": lambda n: _ARGS + "%d = tadd %a, %b" + "\n:" * (n // 2),
    "continuation: many '->' lines": lambda n: _ARGS + "%d = tadd %a, %b" + "\n-> f32" * (n // 7),
}

#: case -> one line for the lexer alone (the issue's case: 160,000 blanks after a token took 12 s)
LEX_CASES: dict[str, Callable[[int], str]] = {
    "blanks and tabs after a token": lambda n: "x" + " \t" * n,
}


def parse_or_render(text: str) -> None:
    """Parse ``text``; a diagnostic is rendered (its caret line is part of the work)."""
    try:
        asm.parse(text)
    except PTOError as e:
        e.render()


def lex(text: str) -> None:
    lex_line(text, 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="characters per case (default 1000000)")
    ap.add_argument("--bound", type=float, default=3.0, help="seconds a case may take (default 3.0)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per case; the best is shown")
    args = ap.parse_args(argv)
    print(f"machine: {machine()}; calibration loop {calibration() * 1e3:.1f} ms")
    print("| case | seconds |")
    print("|---|---:|")
    slow = 0
    for cases, run in ((PARSE_CASES, parse_or_render), (LEX_CASES, lex)):
        for name, make in cases.items():
            text = make(args.n)
            took = best_of(lambda: run(text), args.repeat)
            slow += took > args.bound
            print(f"| {name} | {took:.3f}{' (over the bound)' if took > args.bound else ''} |")
    print(f"{slow} case(s) over {args.bound} s")
    return 1 if slow else 0


if __name__ == "__main__":
    raise SystemExit(main())
