"""Reads of never-written tiles: the verifier's static STRUCT_UNINIT_READ (no false positives:
what any path may write counts as written) and the llvm backend's ``checked=True`` mode, which
reports RUNTIME_UNINIT_READ exactly where the reference backend does."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import openpto as pto
from openpto.assembler import diagnose
from openpto.backends.reference import ReferenceBackend
from openpto.isa import PTOError
from work_support import calls
from test_llvm_examples import CASES     # every example and benchmark kernel, with arguments

T = "!pto.tile<4x8xf32>"
G = "!pto.memref<16x8xf32>"


def uninit(text: str) -> list[PTOError]:
    """The STRUCT_UNINIT_READ diagnostics of ``text`` (every other diagnostic must be absent)."""
    errs = diagnose(pto.parse(text, filename="u.pto"), "cpu")
    assert all(e.code == "STRUCT_UNINIT_READ" for e in errs), [e.render() for e in errs]
    return errs


def kernel(body: str, params: str = f"%x : {G}, %y : {G}, %n : index") -> str:
    return f"kernel @k({params}) {{\n  .tile %t : {T}\n  .tile %u : {T}\n{body}}}\n"


# ----------------------------------------------------------------------------- static analysis

def test_storing_a_never_written_tile_is_an_error_at_the_store() -> None:
    (e,) = uninit(kernel(f"  tstore %y[0, 0], %t : ({G}, {T})\n"))
    assert e.code == "STRUCT_UNINIT_READ" and "%t" in e.message and "TSTORE" in e.message
    assert (e.location.file, e.location.line, e.location.col) == ("u.pto", 4, 3)
    assert e.location.kernel == "k" and e.location.index == 2
    assert e.notes and "u.pto:2:3" in e.notes[0]          # the tile's declaration
    assert e.expected and e.actual == "never written"
    with pytest.raises(PTOError) as raised:                   # every backend: compile verifies first
        pto.compile(pto.parse(kernel(f"  tstore %y[0, 0], %t : ({G}, {T})\n")), "reference")
    assert raised.value.code == "STRUCT_UNINIT_READ"


def test_each_never_written_operand_is_reported() -> None:
    errs = uninit(kernel(f"  %u = tadd %t, %t : ({T}, {T}) -> {T}\n  %t = tadd %u, %t : ({T}, {T}) -> {T}\n"))
    # %t twice on line 4 and again on line 5 (its own write comes after the read); %u is written
    assert [(e.location.line, e.message.split("(operand ")[1][:4]) for e in errs] == [
        (4, "src0"), (4, "src1"), (5, "src1")]


def test_a_write_in_one_branch_of_an_if_counts() -> None:
    for arm in ("then", "else"):
        write, nothing = f"    %t = tload %x[0, 0] : ({G}) -> {T}\n", "    %u = texpands 0.0 : (f32) -> " + T + "\n"
        then, other = (write, nothing) if arm == "then" else (nothing, write)
        body = (f"  .const %c0 = 0 : index\n  %p = arith.cmpi eq, %n, %c0 : index\n"
                f"  scf.if %p {{\n{then}  }} else {{\n{other}  }}\n  tstore %y[0, 0], %t : ({G}, {T})\n")
        assert uninit(kernel(body)) == []
        assert len(uninit(kernel(body.replace(write, nothing)))) == 1    # neither arm writes %t


def test_a_write_in_the_other_branch_does_not_reach_this_one() -> None:
    body = (f"  .const %c0 = 0 : index\n  %p = arith.cmpi eq, %n, %c0 : index\n"
            f"  scf.if %p {{\n    tstore %y[0, 0], %t : ({G}, {T})\n  }} else {{\n"
            f"    %t = tload %x[0, 0] : ({G}) -> {T}\n  }}\n")
    (e,) = uninit(kernel(body))
    assert e.location.line == 7


def test_a_write_later_in_a_loop_body_counts() -> None:
    body = (f"  scf.for %i = 0 to %n step 1 {{\n    tstore %y[0, 0], %t : ({G}, {T})\n"
            f"    %t = tload %x[0, 0] : ({G}) -> {T}\n  }}\n")
    assert uninit(kernel(body)) == []
    nested = (f"  scf.for %i = 0 to %n step 1 {{\n    tstore %y[0, 0], %t : ({G}, {T})\n"
              f"    scf.for %j = 0 to %n step 1 {{\n      %t = texpands 1.0 : (f32) -> {T}\n    }}\n  }}\n")
    assert uninit(kernel(nested)) == []
    assert len(uninit(kernel(nested.replace("%t = texpands", "%u = texpands")))) == 1


def test_a_tile_declared_in_the_loop_body_starts_afresh_each_iteration() -> None:
    body = (f"  scf.for %i = 0 to %n step 1 {{\n    .tile %w : {T}\n    tstore %y[0, 0], %w : ({G}, {T})\n"
            f"    %w = tload %x[0, 0] : ({G}) -> {T}\n  }}\n")
    (e,) = uninit(kernel(body))
    assert e.location.line == 6 and "%w" in e.message and "u.pto:5:5" in e.notes[0]


def test_a_write_after_the_loop_does_not_reach_into_it() -> None:
    body = (f"  scf.for %i = 0 to %n step 1 {{\n    tstore %y[0, 0], %t : ({G}, {T})\n  }}\n"
            f"  %t = tload %x[0, 0] : ({G}) -> {T}\n")
    (e,) = uninit(kernel(body))
    assert e.location.line == 5


def test_parameter_tiles_are_written_by_the_caller() -> None:
    text = f"kernel @k(%p : {T}, %y : {G}) {{\n  tstore %y[0, 0], %p : ({G}, {T})\n}}\n"
    assert uninit(text) == []
    local = f"kernel @k(%y : {G}) {{\n  .tile %p : {T}\n  tstore %y[0, 0], %p : ({G}, {T})\n}}\n"
    assert len(uninit(local)) == 1


def test_an_inout_accumulator_is_read_before_it_is_written() -> None:
    acc = "!pto.tile<16x16xf32, loc=acc>"
    left, right = "!pto.tile<16x16xf16, loc=left>", "!pto.tile<16x16xf16, loc=right>"
    text = (f"kernel @k(%a : {left}, %b : {right}) {{\n  .tile %c : {acc}\n"
            f"  %c = tmatmul_acc %c, %a, %b : ({acc}, {left}, {right}) -> {acc}\n}}\n")
    (e,) = uninit(text)
    assert "TMATMUL_ACC" in e.message and "%c" in e.message
    # ... and once anything (here TMATMUL, whose acc is an output) wrote it, it is initialised
    fixed = text.replace("  %c = tmatmul_acc", f"  %c = tmatmul %a, %b : ({left}, {right}) -> {acc}\n  %c = tmatmul_acc")
    assert uninit(fixed) == []


def test_a_possibly_empty_valid_region_is_not_reported() -> None:
    dyn = "!pto.tile<4x8xf32, valid=?x8>"
    text = (f"kernel @k(%y : {G}, %r : index) {{\n  .tile %t valid_row = %r : {dyn}\n"
            f"  tstore %y[0, 0], %t : ({G}, {dyn})\n}}\n")
    assert uninit(text) == []
    exe = pto.compile(pto.parse(text), "reference")           # with zero valid rows it runs cleanly
    exe(np.zeros((16, 8), np.float32), 0)
    static = text.replace(" valid_row = %r", "").replace("valid=?x8", "valid=1x8")
    assert len(uninit(static)) == 1


def _nested(depth: int) -> str:
    """``depth`` nested loops, each storing a tile that is only loaded in the innermost one."""
    body, close = "", ""
    for d in range(depth):
        body += f"  scf.for %i{d} = 0 to %n step 1 {{\n    tstore %y[0, 0], %t : ({G}, {T})\n"
        close = "  }\n" + close
    return kernel(body + f"    %t = tload %x[0, 0] : ({G}) -> {T}\n" + close)


def test_static_check_costs_one_pass_over_a_large_kernel() -> None:
    """Nested loops are analysed once each (no per-level re-analysis): the work (function calls,
    counted deterministically) of parsing and checking at most doubles, and a little, when the
    nesting depth doubles (re-analysing a loop per enclosing level would square it), and 20
    nested loops report all 20 stores of a tile no loop level has written yet."""
    text = _nested(20)
    assert uninit(text) == []
    assert len(uninit(text.replace("%t = tload", "%u = tload"))) == 20
    c20, c40 = (calls(uninit, _nested(d)) for d in (20, 40))
    assert c40 <= 2.5 * c20, f"calls at depth 20, 40: {c20}, {c40}"


# ----------------------------------------------------------------------------- llvm checked mode

llvm = pytest.importorskip("llvmlite")
ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def outcome(m: pto.Module, backend: str, args: list, **options) -> tuple[PTOError | None, list]:
    """(the fault, or None; the argument arrays after the run) of one run on copies of ``args``."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        pto.compile(m, backend, **options)(*args)
    except PTOError as e:
        return e, []
    return None, [a for a in args if isinstance(a, np.ndarray)]


def same_fault(m: pto.Module, args: list) -> PTOError:
    """Run on the reference and on llvm checked: both raise RUNTIME_UNINIT_READ alike."""
    ref, _ = outcome(m, "reference", args)
    got, _ = outcome(m, "llvm", args, checked=True, cache=False)
    assert ref is not None and got is not None and ref.code == got.code == "RUNTIME_UNINIT_READ"
    assert (got.message, got.expected, got.actual) == (ref.message, ref.expected, ref.actual)
    loc, want = got.location, ref.location
    assert (loc.file, loc.line, loc.col, loc.source_line) == (want.file, want.line, want.col, want.source_line)
    return got


NEVER_RUN = kernel(f"  scf.for %i = 0 to %n step 1 {{\n    %t = tload %x[0, 0] : ({G}) -> {T}\n  }}\n"
                   f"  tstore %y[0, 0], %t : ({G}, {T})\n")


def test_checked_mode_reports_a_store_of_a_tile_never_written_at_run_time() -> None:
    m = pto.parse(NEVER_RUN, filename="u.pto")
    x, y = np.ones((16, 8), np.float32), np.zeros((16, 8), np.float32)
    e = same_fault(m, [x, y, 0])                     # the loop runs no iterations
    assert e.location.line == 7 and e.actual == "element (0, 0) never written"
    assert outcome(m, "llvm", [x, y, 0], cache=False)[0] is None   # default mode: not checked
    fault, (_, y1) = outcome(m, "llvm", [x, y, 2], checked=True, cache=False)
    assert fault is None and (y1[:4] == 1).all()     # written once the loop runs


def test_checked_mode_reports_gemm_with_k_zero() -> None:
    m = pto.load(EXAMPLES / "gemm.pto")
    a, b = np.zeros((128, 0), np.float16), np.zeros((0, 128), np.float16)
    c = np.full((128, 128), 7, np.float32)
    e = same_fault(m, [a, b, c, 128, 128, 0])        # the acc tile is never written
    assert "TSTORE" in e.message and "%acc" in e.message


def test_checked_mode_reports_a_read_beyond_the_written_rows() -> None:
    s = "!pto.tile<4x8xi32>"
    text = (f"kernel @k(%y : !pto.memref<16x8xi32>) {{\n  .tile %s : {s}\n  .const %c5 = 5 : i32\n"
            f"  %s = tci %c5 {{descending = false}} : (i32) -> {s}\n"     # TCI writes the first row only
            f"  tstore %y[0, 0], %s : (!pto.memref<16x8xi32>, {s})\n}}\n")
    m = pto.parse(text, filename="u.pto")
    e = same_fault(m, [np.zeros((16, 8), np.int32)])
    assert e.actual == "element (1, 0) never written" and e.location.line == 5


def test_checked_mode_resets_a_tile_at_its_declaration() -> None:
    # %w is written in the first iteration only; the declaration starts it afresh in the second
    text = kernel(f"  .const %c0 = 0 : index\n  scf.for %i = 0 to %n step 1 {{\n    .tile %w : {T}\n"
                  f"    %p = arith.cmpi eq, %i, %c0 : index\n"
                  f"    scf.if %p {{\n      %w = texpands 1.0 : (f32) -> {T}\n    }}\n"
                  f"    %u = tadd %w, %w : ({T}, {T}) -> {T}\n  }}\n")
    m = pto.parse(text, filename="u.pto")
    x, y = np.ones((16, 8), np.float32), np.zeros((16, 8), np.float32)
    assert outcome(m, "llvm", [x, y, 1], checked=True, cache=False)[0] is None
    assert same_fault(m, [x, y, 2]).location.line == 11


def test_pto_run_checked(tmp_path, capsys) -> None:
    from openpto.cli import main
    src = tmp_path / "u.pto"
    src.write_text(NEVER_RUN)
    run = ["run", str(src), "--zeros", "--arg", "n=0", "--backend", "llvm"]
    assert main(run) == 0                                         # default mode: unchecked
    assert main(run + ["--checked"]) == 2
    err = capsys.readouterr().err
    assert f"{src}:7:3: RUNTIME_UNINIT_READ" in err and "Traceback" not in err


def test_checked_is_a_validated_option_and_part_of_the_cache_key(tmp_path) -> None:
    m = pto.parse(NEVER_RUN)
    with pytest.raises(PTOError) as e:
        pto.compile(m, "llvm", checked="yes")
    assert e.value.code == "PTO_OPTION"
    x, y = np.ones((16, 8), np.float32), np.zeros((16, 8), np.float32)
    plain = pto.compile(m, "llvm", cache_dir=tmp_path)
    assert plain.compiled and outcome(m, "llvm", [x, y, 0], cache_dir=tmp_path)[0] is None
    checked = pto.compile(m, "llvm", cache_dir=tmp_path, checked=True)   # not the unchecked entry
    assert checked.compiled
    again = pto.compile(m, "llvm", cache_dir=tmp_path, checked=True)     # its own entry, checks kept
    assert not again.compiled
    assert outcome(m, "llvm", [x, y, 0], cache_dir=tmp_path, checked=True)[0].code == "RUNTIME_UNINIT_READ"


@pytest.mark.parametrize("path", sorted(CASES))
def test_checked_mode_gives_the_default_modes_results_on_the_examples(path: str) -> None:
    m = pto.load(ROOT / path)
    make, blocks = CASES[path]
    args = make()
    runs = []
    for options in ({}, {"checked": True}):
        mine = {k: (v.copy(order="K") if isinstance(v, np.ndarray) else v) for k, v in args.items()}
        res = pto.compile(m, "llvm", cache=False, **options).run(m.kernels[0].name, block_num=blocks, **mine)
        runs.append((res.outputs, res.counters))
    (plain, n_plain), (checked, n_checked) = runs
    assert n_plain == n_checked and n_plain["instructions"] > 0 and plain.keys() == checked.keys()
    for name, want in plain.items():
        np.testing.assert_array_equal(checked[name], want)     # bit for bit: the same code runs


# ----------------------------------------------------------------------------- fuzz: both, against the reference

def _program(draw, depth: int, uid: list[int], ivs: tuple[str, ...]) -> list[str]:
    """Random statements over local tiles t0, t1: writes, reads, re-declarations, loops whose
    trip count and branches whose condition come from the arguments and loop counters (so
    an iteration may read what an earlier one wrote)."""
    lines: list[str] = []
    kinds = ["load", "expand", "add", "add", "store", "store", "decl"] + (["for", "for", "if", "if"] if depth < 2 else [])
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(kinds))
        a, b, d = (f"%t{draw(st.integers(0, 1))}" for _ in range(3))
        uid[0] += 1
        if kind == "load":
            lines.append(f"{d} = tload %x[0, 0] : ({G}) -> {T}")
        elif kind == "expand":
            lines.append(f"{d} = texpands 1.5 : (f32) -> {T}")
        elif kind == "add":
            lines.append(f"{d} = tadd {a}, {b} : ({T}, {T}) -> {T}")
        elif kind == "store":
            lines.append(f"tstore %y[0, 0], {a} : ({G}, {T})")
        elif kind == "decl":
            lines.append(f".tile {d} : {T}")
        elif kind == "for":
            iv = f"%i{uid[0]}"
            lines += [f"scf.for {iv} = 0 to %n step 1 {{", *_program(draw, depth + 1, uid, ivs + (iv,)), "}"]
        else:
            pair = draw(st.sampled_from([("%m", iv) for iv in ivs] + [(iv, "%m") for iv in ivs]
                                        + [("%n", "%m"), ("%m", "%n")]))
            p = f"%p{uid[0]}"
            lines += [f"{p} = arith.cmpi ult, {pair[0]}, {pair[1]} : index", f"scf.if {p} {{",
                      *_program(draw, depth + 1, uid, ivs), "} else {", *_program(draw, depth + 1, uid, ivs), "}"]
    return lines


@st.composite
def programs(draw) -> str:
    """A kernel over the statements; each tile written up front or not (so runs get far)."""
    first = [f"%t{k} = texpands 0.5 : (f32) -> {T}\n" for k in range(2) if draw(st.booleans())]
    body = _program(draw, 0, [0], ())
    return (f"kernel @k(%x : {G}, %y : {G}, %n : index, %m : index) {{\n"
            + "".join(f".tile %t{k} : {T}\n" for k in range(2)) + "".join(first) + "\n".join(body) + "\n}\n")


INPUTS = ((0, 0), (0, 1), (1, 0), (2, 0), (2, 1), (3, 1), (2, 3))   # (%n trips, %m)
XS = np.random.default_rng(5).standard_normal((16, 8)).astype(np.float32)


GUARDED = (f"kernel @k(%x : {G}, %y : {G}, %n : index, %m : index) {{\n.tile %t0 : {T}\n"
           f"scf.for %i = 0 to %n step 1 {{\n%p = arith.cmpi ult, %m, %i : index\nscf.if %p {{\n"
           f"tstore %y[0, 0], %t0 : ({G}, {T})\n}}\n%t0 = tload %x[0, 0] : ({G}) -> {T}\n}}\n}}\n")


@example(GUARDED)        # iteration 0 skips the read, a later one reads what it wrote
@given(programs())
def test_fuzz_no_static_report_on_a_read_that_runs_cleanly(text: str) -> None:
    """Soundness against the reference: no statement the verifier reports runs before the
    strict run's first fault (a relaxed run, which never faults, says what runs in which
    order: control flow here depends on scalars only); in straight-line code, where the run
    decides nothing, the first report is the strict run's fault."""
    m = pto.parse(text, filename="f.pto")
    errs = diagnose(m, "cpu")
    assert all(e.code == "STRUCT_UNINIT_READ" for e in errs), [e.render() for e in errs]
    reported = {e.location.line for e in errs}
    strict = ReferenceBackend()._compile(m, "cpu")        # past the verifier: run what it rejects
    relaxed = ReferenceBackend()._compile(m, "cpu", strict=False)
    for n, k in INPUTS:
        order = [ev["line"] for ev in relaxed.run("k", XS, np.zeros_like(XS), n, k, trace=True).trace]
        try:
            strict.run("k", XS, np.zeros_like(XS), n, k)
            fault = None
        except PTOError as e:
            assert e.code == "RUNTIME_UNINIT_READ", e.render()
            fault = e.location.line
        clean = order[:order.index(fault)] if fault is not None else order
        assert not reported & set(clean), text
        if "scf." not in text:
            assert fault == min(reported, default=None), text


@settings(max_examples=12)
@given(programs())
def test_fuzz_checked_llvm_faults_and_results_are_the_references(text: str) -> None:
    from openpto.backends.llvm import LLVMBackend
    m = pto.parse(text, filename="f.pto")
    ref = ReferenceBackend()._compile(m, "cpu")
    got = LLVMBackend()._compile(m, "cpu", checked=True, cache=False)
    for n, k in INPUTS:
        outs = []
        for exe in (ref, got):
            y = np.zeros_like(XS)
            try:
                exe.run("k", XS, y, n, k)
                outs.append(y)
            except PTOError as e:
                outs.append((e.code, e.message, e.actual, e.location.line))
        want, have = outs
        if isinstance(want, tuple) or isinstance(have, tuple):
            assert have == want, text
        else:
            np.testing.assert_array_equal(have, want)
