"""``pto fmt`` keeps comments (assembler/format.py): each stays next to the statement it
precedes or follows on its line, at the right indentation; the output is idempotent, parses
to the same module, and ``--check`` shows a unified diff."""
from __future__ import annotations

import pathlib
import random

import pytest

import openpto as pto
from openpto.assembler.format import format_source, scan_comments
from openpto.cli import main

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
T = "!pto.tile<16x16xf32>"

SOURCE = f"""// top of file
# a hash comment too

// before the first kernel
kernel @a(%x : {T}, %n : index) {{   // header
  // first statement
  .const %c0 = 0 : index
  .const %c1 = 1 : index ; .const %c2 = 2 : index  // after the second of two
  scf.for %i = %c0 to %n step %c1 {{  // loop head
    // inside the loop
    %x = tadd %x, %x : ({T}, {T}) -> {T}
    // end of the loop body
  }}  // loop closed
  %b = arith.cmpi eq, %n, %c0 : index
  scf.if %b {{
      %x = tmul %x, %x : ({T}, {T}) -> {T}   // then
  }} else {{   // else head
    // else body start
      %x = texp %x : ({T}) -> {T}
    // end of else
  }}
  // end of kernel a
}}
// between the kernels

kernel @b(%y : {T}) {{
  %y = tabs %y : ({T}) -> {T}
}}
// end of file
"""

EXPECTED = f"""// top of file
# a hash comment too

// before the first kernel
kernel @a(%x : {T}, %n : index) {{  // header
  // first statement
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %c2 = 2 : index  // after the second of two
  scf.for %i = %c0 to %n step %c1 {{  // loop head
    // inside the loop
    %x = tadd %x, %x : ({T}, {T}) -> {T}
    // end of the loop body
  }}  // loop closed
  %b = arith.cmpi eq, %n, %c0 : index
  scf.if %b {{
    %x = tmul %x, %x : ({T}, {T}) -> {T}  // then
  }} else {{  // else head
    // else body start
    %x = texp %x : ({T}) -> {T}
    // end of else
  }}
  // end of kernel a
}}

// between the kernels

kernel @b(%y : {T}) {{
  %y = tabs %y : ({T}) -> {T}
}}
// end of file
"""


def fmt(text: str) -> str:
    return format_source(pto.parse(text), text)


def test_comments_everywhere_stay_where_they_were() -> None:
    assert fmt(SOURCE) == EXPECTED
    assert fmt(EXPECTED) == EXPECTED
    assert pto.parse(EXPECTED) == pto.parse(SOURCE)


def test_blank_lines_between_paragraphs_stay_one_each() -> None:
    """A run of blank lines is one; none right after ``{``, before ``}`` or at the ends."""
    add = f"%x = tadd %x, %x : ({T}, {T}) -> {T}"
    src = f"\n\nkernel @k(%x : {T}) {{\n\n  {add}\n\n\n  // two\n\n  {add}\n\n}}\n\n\n"
    want = f"kernel @k(%x : {T}) {{\n  {add}\n\n  // two\n\n  {add}\n}}\n"
    assert fmt(src) == want and fmt(want) == want


def test_a_bare_statement_list_gets_a_header_and_keeps_its_comments() -> None:
    src = f"// file comment\n.arg %x : {T}   // the input\n// double it\n%x = tadd %x, %x : ({T}, {T}) -> {T}\n// done\n"
    want = (f"// file comment\nkernel @main(%x : {T}) {{  // the input\n  // double it\n"
            f"  %x = tadd %x, %x : ({T}, {T}) -> {T}\n  // done\n}}\n")
    assert fmt(src) == want and fmt(want) == want


def test_several_trailing_comments_for_one_line() -> None:
    src = (f"kernel @k(%x : {T},    // first\n          %n : index) {{  // second\n"
           f"  %x = tadd %x, %x : ({T}, {T}) -> {T}\n}}\n")
    out = fmt(src)
    assert out.splitlines()[:2] == [f"kernel @k(%x : {T}, %n : index) {{  // first", "  // second"]
    assert fmt(out) == out


def test_scan_comments_skips_attributes_and_keeps_hash_comments() -> None:
    src = "%m = tcmp %a, %b {cmpMode = #pto.cmp<LT>} : (x) -> y  # note\n#!shebang-like\n  // x # y\n"
    assert [(c.pos, c.text, c.after_code) for c in scan_comments(src)] == [
        ((1, 55), "# note", True), ((2, 1), "#!shebang-like", False), ((3, 3), "// x # y", False)]


def _comment_everywhere(text: str, rng: random.Random) -> tuple[str, list[str]]:
    """``text`` with random comments after lines and on lines of their own; their texts."""
    out, added = [], []
    for n, line in enumerate(text.split("\n")):
        if rng.random() < 0.3:
            c = f"// own {n}"
            out.append(" " * rng.randrange(6) + c)
            added.append(c)
        if line.strip() and not line.rstrip().endswith(",") and rng.random() < 0.4 and "//" not in line:
            c = rng.choice(["//", "#"]) + f" after {n}"
            line = line + " " * rng.randrange(1, 4) + c
            added.append(c)
        out.append(line)
    return "\n".join(out), added


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.pto")))
def test_fuzz_formatting_keeps_every_comment_in_order(example: str) -> None:
    """Bounded, fixed seed: random comments around every example statement survive, in
    source order, and formatting is idempotent and does not change the program."""
    rng = random.Random(example)
    base = (EXAMPLES / example).read_text()
    for _ in range(8):
        text, added = _comment_everywhere(base, rng)
        module = pto.parse(text)
        out = format_source(module, text)
        assert pto.parse(out) == module
        assert format_source(pto.parse(out), out) == out
        kept = [c.text for c in scan_comments(out)]
        assert kept == [c.text for c in scan_comments(text)]
        assert set(added) <= set(kept)


@pytest.fixture
def written(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "k.pto"
    path.write_text(SOURCE)
    return path


def test_fmt_command_keeps_comments(written: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fmt", str(written)]) == 0
    assert capsys.readouterr().out == EXPECTED
    assert main(["fmt", "-i", str(written)]) == 0 and written.read_text() == EXPECTED
    assert main(["fmt", "--check", str(written)]) == 0
    assert capsys.readouterr() == ("", "")


def test_fmt_check_prints_a_unified_diff(written: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fmt", "--check", str(written)]) == 1
    out, err = capsys.readouterr()
    assert err == f"{written}: not in canonical form\n"
    lines = out.splitlines()
    assert lines[0] == f"--- {written} (as written)" and lines[1] == f"+++ {written} (canonical)"
    assert "-kernel @a(%x : !pto.tile<16x16xf32>, %n : index) {   // header" in lines
    assert "+kernel @a(%x : !pto.tile<16x16xf32>, %n : index) {  // header" in lines
    assert "-  .const %c1 = 1 : index ; .const %c2 = 2 : index  // after the second of two" in lines
    assert "+  .const %c2 = 2 : index  // after the second of two" in lines
    assert not any(line.startswith("-") and "//" in line and line[1:].strip().startswith("//")
                   for line in lines[2:])      # no comment is deleted


def test_fmt_check_diff_of_a_file_without_final_newline(tmp_path: pathlib.Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "k.pto"
    path.write_text(f"kernel @k(%x : {T}) {{\n}}")
    assert main(["fmt", "--check", str(path)]) == 1
    assert capsys.readouterr().out.splitlines()[-3:] == ["-}", "\\ No newline at end of file", "+}"]
