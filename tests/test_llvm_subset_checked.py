"""llvm checked mode through ``pto.subset`` windows that cover part of their parent's rows:
never-written reads are reported as the reference reports them (same code, message, element
and location), and reads of what was written through the windows pass with the reference's
values. Expected elements are worked out by hand from the windows."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError

pytest.importorskip("llvmlite")

T = "!pto.tile<16x16xf32>"
W = "!pto.tile<16x8xf32>"
X = "!pto.memref<16x8xf32>"
Y = "!pto.memref<16x16xf32>"
HEAD = f"kernel @k(%x : {X}, %y : {Y}, %z : {X}, %j : index) {{\n  .tile %p : {T}\n"


def program(body: str) -> pto.Module:
    return pto.parse(HEAD + body + "}\n", filename="s.pto")


def outcome(m: pto.Module, backend: str, j: int = 0, **options: object) -> tuple[PTOError | None, list]:
    x = np.arange(128, dtype=np.float32).reshape(16, 8)
    y, z = np.full((16, 16), -1, np.float32), np.full((16, 8), -1, np.float32)
    try:
        pto.compile(m, backend, **options)(x, y, z, j)
    except PTOError as e:
        return e, []
    return None, [y, z]


def same_fault(m: pto.Module, j: int = 0) -> PTOError:
    ref, _ = outcome(m, "reference", j)
    got, _ = outcome(m, "llvm", j, checked=True, cache=False)
    assert ref is not None and got is not None and ref.code == got.code == "RUNTIME_UNINIT_READ"
    assert (got.message, got.expected, got.actual) == (ref.message, ref.expected, ref.actual)
    assert (got.location.line, got.location.col, got.location.source_line) == \
        (ref.location.line, ref.location.col, ref.location.source_line)
    return got


def same_values(m: pto.Module, j: int = 0) -> list:
    ref, want = outcome(m, "reference", j)
    got, have = outcome(m, "llvm", j, checked=True, cache=False)
    assert ref is None and got is None, (ref, got)
    for a, b in zip(want, have):
        np.testing.assert_array_equal(a, b)
    return have


WRITE_4_11 = f"  %w = pto.subset %p[0, 4] sizes [16, 8] : {T}\n  %w = tload %x[0, 0] : ({X}) -> {W}\n"
STORE_P = f"  tstore %y[0, 0], %p : ({Y}, {T})\n"


def test_reading_the_parent_after_writing_columns_4_to_11_faults() -> None:
    e = same_fault(program(WRITE_4_11 + STORE_P))
    assert e.actual == "element (0, 0) never written" and e.location.line == 5 and "%p" in e.message
    assert outcome(program(WRITE_4_11 + STORE_P), "llvm", cache=False)[0] is None   # unchecked: no check


def test_the_first_unwritten_element_is_found_past_the_window() -> None:
    # columns 0..3 written too: the first hole is column 12 of row 0
    left = f"  %a = pto.subset %p[0, 0] sizes [16, 8] : {T}\n  %a = tload %x[0, 0] : ({X}) -> {W}\n"
    e = same_fault(program(left + WRITE_4_11 + STORE_P))
    assert e.actual == "element (0, 12) never written"


def test_a_window_reports_elements_relative_to_itself() -> None:
    # %r covers columns 8..15; 8..11 are written, so its first hole is its column 4
    right = f"  %r = pto.subset %p[0, 8] sizes [16, 8] : {T}\n  tstore %z[0, 0], %r : ({X}, {W})\n"
    e = same_fault(program(WRITE_4_11 + right))
    assert e.actual == "element (0, 4) never written" and "%r" in e.message


def test_reading_what_was_written_through_the_window_passes() -> None:
    y, z = same_values(program(WRITE_4_11 + f"  tstore %z[0, 0], %w : ({X}, {W})\n"))
    np.testing.assert_array_equal(z, np.arange(128, dtype=np.float32).reshape(16, 8))


def test_two_windows_that_cover_every_column_make_the_parent_readable() -> None:
    body = (f"  %a = pto.subset %p[0, 0] sizes [16, 8] : {T}\n  %b = pto.subset %p[0, 8] sizes [16, 8] : {T}\n"
            f"  %a = tload %x[0, 0] : ({X}) -> {W}\n  %b = texpands 2.0 : (f32) -> {W}\n" + STORE_P)
    y, _ = same_values(program(body))
    x = np.arange(128, dtype=np.float32).reshape(16, 8)
    np.testing.assert_array_equal(y, np.concatenate([x, np.full((16, 8), 2, np.float32)], axis=1))


def test_a_window_of_rows_and_columns_leaves_the_other_rows_unwritten() -> None:
    # the parent is written whole, then re-declared: a 4x8 window at (2, 4) is all that is written
    small = "!pto.tile<4x8xf32>"
    body = (f"  %p = texpands 1.0 : (f32) -> {T}\n  .tile %p : {T}\n"
            f"  %c = pto.subset %p[2, 4] sizes [4, 8] : {T}\n  %c = texpands 3.0 : (f32) -> {small}\n"
            f"  %d = pto.subset %p[2, 0] sizes [4, 16] : {T}\n"
            f"  %e = tadd %d, %d : (!pto.tile<4x16xf32>, !pto.tile<4x16xf32>) -> !pto.tile<4x16xf32>\n")
    e = same_fault(program(body))
    assert e.actual == "element (0, 0) never written" and "%d" in e.message and e.location.line == 8


def test_run_time_offsets_and_windows_of_windows() -> None:
    # %q = columns j..j+7 of every row; %s = its columns 0..3 at rows 8..15: written are rows
    # 8..15, columns j..j+3 of the parent; %v reads rows 8..15, columns j..j+n-1
    def text(n: int) -> pto.Module:
        q, s, v = (f"!pto.tile<{r}x{c}xf32, valid={r}x?>" for r, c in ((16, 8), (8, 4), (8, n)))
        return program(f"  %q = pto.subset %p[0, %j] sizes [16, 8] : {T}\n"
                       f"  %s = pto.subset %q[8, 0] sizes [8, 4] : {q}\n"
                       f"  %s = texpands 5.0 : (f32) -> {s}\n"
                       f"  %v = pto.subset %p[8, %j] sizes [8, {n}] : {T}\n"
                       f"  %u = tadd %v, %v : ({v}, {v}) -> !pto.tile<8x{n}xf32>\n")
    for j in (0, 3, 8):
        assert outcome(text(4), "reference", j)[0] is None
        assert outcome(text(4), "llvm", j, checked=True, cache=False)[0] is None
    for j in (0, 3, 8):
        assert same_fault(text(5), j).actual == "element (0, 4) never written"


def test_a_declaration_clears_what_was_written_through_a_window() -> None:
    body = (f"  scf.for %i = 0 to %j step 1 {{\n    .tile %p : {T}\n"
            f"    %w = pto.subset %p[0, 4] sizes [16, 8] : {T}\n    %c0 = arith.constant 0 : index\n"
            f"    %first = arith.cmpi eq, %i, %c0 : index\n"
            f"    scf.if %first {{\n      %w = tload %x[0, 0] : ({X}) -> {W}\n    }}\n"
            f"    tstore %z[0, 0], %w : ({X}, {W})\n  }}\n")
    m = program(body)
    assert outcome(m, "llvm", 1, checked=True, cache=False)[0] is None
    assert same_fault(m, 2).actual == "element (0, 0) never written"
