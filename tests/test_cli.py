"""The ``pto`` command as a user meets it: in-process through ``openpto.cli.main`` (fast), and
once as the installed console script. Every failure is a diagnostic with a code, a location
and an exit status, never a traceback."""
from __future__ import annotations

import json
import math
import pathlib
import shutil
import subprocess
import sys
from collections import Counter

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
from openpto.assembler.format import format_source
from openpto.assembler.loading import MAGIC
from openpto.backends.compare import compare
from openpto.backends.inputs import literal, parse_shape
from openpto.backends.trace import chrome_trace
from openpto.cli import main
from openpto.isa import registry
from openpto.isa.profiles import PROFILES

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
N_INSTRUCTIONS = len(list(registry.all_instructions()))


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # noqa: ANN201
    """``cli(*argv) -> (exit status, stdout, stderr)``."""
    def run(*argv: object) -> tuple[int, str, str]:
        rc = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return rc, out, err
    return run


@pytest.fixture
def softmax(tmp_path: pathlib.Path) -> pathlib.Path:
    return pathlib.Path(shutil.copy(EXAMPLES / "softmax.pto", tmp_path / "softmax.pto"))


@pytest.fixture
def messy(tmp_path: pathlib.Path) -> pathlib.Path:
    """The softmax example with its indentation gone: the same program, not canonical."""
    text = (EXAMPLES / "softmax.pto").read_text()
    path = tmp_path / "messy.pto"
    path.write_text("\n".join(line.lstrip() for line in text.splitlines()) + "\n")
    return path


# Legal for the cpu profile; on a3 both the bf16 add and the 1 MB tile are errors.
NOT_A3 = """kernel @k(%a : !pto.tile<16x16xbf16>) {
  .tile %t : !pto.tile<512x512xf32>
  %a = tadd %a, %a : (!pto.tile<16x16xbf16>, !pto.tile<16x16xbf16>) -> !pto.tile<16x16xbf16>
}
"""


def softmax_rows(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# -- asm / dis ------------------------------------------------------------------------------------

@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.pto")))
def test_asm_then_dis_gives_the_canonical_text(cli, tmp_path: pathlib.Path, example: str) -> None:
    src, bc = EXAMPLES / example, tmp_path / "out.bin"
    rc, out, _ = cli("asm", src, "-o", bc, "--profile", "a3")
    assert rc == 0 and out == f"wrote {bc} (1 kernel(s))\n"
    assert bc.read_bytes().startswith(MAGIC)
    rc, out, _ = cli("dis", bc)
    assert rc == 0 and out == pto.load(src).to_text()
    rc, out, _ = cli("dis", bc, "-o", tmp_path / "back.pto")
    assert rc == 0 and out == "" and (tmp_path / "back.pto").read_text() == pto.load(src).to_text()


def test_asm_default_output_is_next_to_the_input(cli, softmax: pathlib.Path) -> None:
    rc, out, _ = cli("asm", softmax)
    want = softmax.with_suffix(".ptobc")
    assert rc == 0 and out == f"wrote {want} (1 kernel(s))\n"
    assert pto.load(want) == pto.load(softmax)


def test_asm_refuses_what_the_profile_forbids_and_writes_nothing(cli, tmp_path: pathlib.Path) -> None:
    src = tmp_path / "k.pto"
    src.write_text(NOT_A3)
    rc, _, err = cli("asm", src, "--profile", "a3")
    assert rc == 2 and "LEGAL_DTYPE" in err and not src.with_suffix(".ptobc").exists()
    assert cli("asm", src)[0] == 0                       # structure alone is fine


def test_asm_to_an_unwritable_path(cli, softmax: pathlib.Path) -> None:
    rc, _, err = cli("asm", softmax, "-o", softmax.parent / "no" / "such" / "dir.ptobc")
    assert rc == 2 and "PTO_FILE: cannot write" in err


# -- fmt ------------------------------------------------------------------------------------------

def test_fmt_check_and_in_place(cli, messy: pathlib.Path) -> None:
    canonical = format_source(pto.load(messy), messy.read_text())
    assert messy.read_text() != canonical              # unindented: not canonical
    assert canonical.count("//") == messy.read_text().count("//")     # comments are kept
    rc, out, err = cli("fmt", "--check", messy)
    assert rc == 1 and out.startswith("--- ") and err == f"{messy}: not in canonical form\n"
    rc, out, _ = cli("fmt", messy)
    assert rc == 0 and out == canonical and messy.read_text() != canonical
    rc, out, _ = cli("fmt", "-i", messy)
    assert (rc, out) == (0, "") and messy.read_text() == canonical
    assert cli("fmt", "--check", messy) == (0, "", "")


def test_fmt_i_and_check_exclude_each_other(cli, softmax: pathlib.Path) -> None:
    with pytest.raises(SystemExit) as e:
        cli("fmt", "-i", "--check", softmax)
    assert e.value.code == 2


def test_fmt_refuses_bytecode_rather_than_turning_it_into_text(cli, softmax: pathlib.Path) -> None:
    bc = softmax.with_suffix(".ptobc")
    bc.write_bytes(pto.load(softmax).to_bytes())
    before = bc.read_bytes()
    rc, _, err = cli("fmt", "-i", bc)
    assert rc == 2 and "PTO_FILE" in err and "is bytecode" in err and bc.read_bytes() == before


def test_a_byte_order_mark_is_accepted_and_formatted_away(cli, tmp_path: pathlib.Path) -> None:
    src = tmp_path / "bom.pto"
    src.write_bytes(b"\xef\xbb\xbf" + (EXAMPLES / "vector_add.pto").read_bytes())
    assert cli("check", src)[0] == 0
    assert cli("fmt", "--check", src)[0] == 1
    assert cli("fmt", "-i", src)[0] == 0
    assert not src.read_bytes().startswith(b"\xef") and cli("fmt", "--check", src)[0] == 0


# -- check and file errors ------------------------------------------------------------------------

def test_check_ok(cli, softmax: pathlib.Path) -> None:
    rc, out, _ = cli("check", softmax, "--profile", "a3")
    assert rc == 0 and out.startswith(f"{softmax}: ok for profile a3 (1 kernel(s), ")


def test_check_prints_every_diagnostic_with_its_location(cli, tmp_path: pathlib.Path) -> None:
    src = tmp_path / "k.pto"
    src.write_text(NOT_A3)
    assert cli("check", src, "--profile", "cpu")[0] == 0
    rc, out, err = cli("check", src, "--profile", "a3")
    assert rc == 2 and out == ""
    heads = [line.split(": ")[:2] for line in err.splitlines() if not line.startswith(" ")]
    assert sorted(heads) == [[f"{src}:1:1", "LEGAL_CAPACITY"], [f"{src}:3:8", "LEGAL_DTYPE"]]
    assert "  actual:   (bf16, bf16, bf16)" in err and "         ^" in err   # the caret under `tadd`


@pytest.mark.parametrize("command", [["asm"], ["dis"], ["fmt"], ["check"], ["run", "--random"]])
def test_missing_file(cli, tmp_path: pathlib.Path, command: list[str]) -> None:
    path = tmp_path / "nope.pto"
    rc, _, err = cli(command[0], path, *command[1:])
    assert rc == 2 and err.startswith(f"{path}: PTO_FILE: cannot read {path}: No such file or directory")


def test_a_directory_is_not_a_program(cli, tmp_path: pathlib.Path) -> None:
    rc, _, err = cli("check", tmp_path)
    assert rc == 2 and "PTO_FILE" in err


def test_garbage_that_is_not_utf8(cli, tmp_path: pathlib.Path) -> None:
    src = tmp_path / "g.pto"
    src.write_bytes(b"kernel @k() {\n  // caf\xc3\xa9 \xff\xfe\n}\n")
    for command in ("check", "dis", "fmt"):
        rc, _, err = cli(command, src)
        assert rc == 2
        assert err.splitlines()[0] == f"{src}:2:11: PARSE_ENCODING: the file is neither PTO bytecode nor UTF-8 text"
        assert "byte 0xff at offset 25" in err


@pytest.mark.parametrize("damage", ["flip", "truncate", "version"])
def test_corrupt_bytecode(cli, softmax: pathlib.Path, damage: str) -> None:
    data = bytearray(pto.load(softmax).to_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x55
    elif damage == "truncate":
        del data[len(data) // 2:]
    else:
        data[6] = 0x7F
    bc = softmax.with_suffix(".ptobc")
    bc.write_bytes(bytes(data))
    for command in ("dis", "check", "run"):
        rc, out, err = cli(command, bc)
        assert rc == 2 and out == "" and err.startswith(f"{bc}") and ": BCODE_" in err.splitlines()[0]


# -- run ------------------------------------------------------------------------------------------

RUN = ("--shape", "x=64x1024", "--shape", "y=64x1024", "--arg", "rows=64")


def test_run_softmax_with_random_inputs(cli, softmax: pathlib.Path, tmp_path: pathlib.Path) -> None:
    x_path, y_path = tmp_path / "x.npy", tmp_path / "y.npy"
    rc, out, _ = cli("run", softmax, "--random", "--seed", "5", *RUN, "--block-num", "3",
                     "--out", f"y={y_path}", "--out", f"x={x_path}")
    assert rc == 0
    assert out.splitlines() == [out.splitlines()[0], "  y: (64, 1024) float32"]
    assert out.startswith("@softmax on reference (profile cpu): 24 instruction(s) in ")   # 4 row blocks x 6
    x, y = np.load(x_path), np.load(y_path)
    assert x.shape == y.shape == (64, 1024) and x.dtype == y.dtype == np.float32
    assert 0.9 < x.std() < 1.1                            # random, not zeros
    np.testing.assert_allclose(y, softmax_rows(x), rtol=2e-6, atol=1e-9)
    # the seed decides the inputs
    cli("run", softmax, "--random", "--seed", "5", *RUN, "--out", f"x={tmp_path / 'x2.npy'}")
    cli("run", softmax, "--random", "--seed", "6", *RUN, "--out", f"x={tmp_path / 'x3.npy'}")
    assert np.array_equal(np.load(tmp_path / "x2.npy"), x) and not np.array_equal(np.load(tmp_path / "x3.npy"), x)


def test_run_with_an_input_file(cli, softmax: pathlib.Path, tmp_path: pathlib.Path) -> None:
    x = (np.random.default_rng(1).standard_normal((32, 1024)) * 4).astype(np.float32)
    np.save(tmp_path / "in.npy", x)
    rc, _, _ = cli("run", softmax, "--arg", f"x={tmp_path / 'in.npy'}", "--zeros", "--shape", "y=32x1024",
                   "--arg", "rows=32", "--out", f"y={tmp_path / 'y.npy'}")
    assert rc == 0
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), softmax_rows(x), rtol=2e-6, atol=1e-9)


def test_a_parameter_without_a_value_is_an_error_not_zeros(cli, softmax: pathlib.Path,
                                                           tmp_path: pathlib.Path) -> None:
    rc, out, err = cli("run", softmax, *RUN, "--out", f"y={tmp_path / 'y.npy'}")
    assert (rc, out) == (2, "") and not (tmp_path / "y.npy").exists()
    head, expected, actual, note = err.splitlines()
    assert head == "PTO_ARG: @softmax: no value for %x, %y"
    assert expected == "  expected: --arg x=FILE.npy --arg y=FILE.npy"
    assert actual == "  actual:   no --arg for x, y" and "--random" in note and "--zeros" in note
    rc, _, err = cli("run", softmax, "--shape", "x=64x1024", "--shape", "y=64x1024")
    assert rc == 2 and err.startswith("PTO_ARG: @softmax: no value for %x, %y, %rows")
    assert "--arg rows=VALUE" in err


def test_zeros_fills_on_request(cli, softmax: pathlib.Path, tmp_path: pathlib.Path) -> None:
    assert cli("run", softmax, "--zeros", *RUN, "--out", f"y={tmp_path / 'y.npy'}")[0] == 0
    assert np.array_equal(np.load(tmp_path / "y.npy"), np.full((64, 1024), 1 / 1024, np.float32))
    with pytest.raises(SystemExit):
        cli("run", softmax, "--zeros", "--random", *RUN)


def test_compare_with_reference(cli, softmax: pathlib.Path) -> None:
    rc, out, _ = cli("run", softmax, "--random", *RUN, "--compare-with", "reference")
    assert rc == 0
    lines = out.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("compared with reference"))
    assert lines[i].endswith("(got: reference, want: reference)")
    assert lines[i + 1].startswith("  error budget: 1029 eps, the numerics contracts of @softmax's")
    assert lines[i + 2] == "  y (float32): ok"
    assert lines[i + 3].startswith("    rule: norm-wise, max |got - want| <= budget x eps(float32) x max|want| = 1029 x ")
    assert lines[i + 4] == "    decided by: no element differs"


def test_a_comparison_says_what_its_tolerance_applies_to() -> None:
    """A large relative difference next to a small tolerance is no contradiction: the report
    names the norm-wise rule, its numbers and the element that decided."""
    want = np.array([[1.0, 2.0 ** -20]], np.float32)
    got = want.copy()
    got[0, 1] += np.float32(2.0 ** -24)                       # relative 1/16, absolute 2^-24
    d = compare("y", got, want, budget=2)
    eps = 2.0 ** -23
    assert d.ok and d.tolerance == 2 * eps * 1.0 and d.max_abs == 2.0 ** -24 and d.max_rel == 1 / 16
    assert d.first == (0, 1) and d.rel_at == (0, 1) and d.elements == 2
    assert d.row().splitlines() == [
        "y (float32): ok",
        f"  rule: norm-wise, max |got - want| <= budget x eps(float32) x max|want| = 2 x {eps:.3g} x 1 = "
        f"{2 * eps:.3g}, over the 2 elements where neither side is NaN; NaNs must be in the same places",
        f"  decided by: largest |got - want| {2.0 ** -24:.3g} <= {2 * eps:.3g} at (0, 1) "
        f"(got {float(got[0, 1]):.9g}, want {2.0 ** -20:.9g}); NaN mismatches 0",
        "  largest relative difference 0.0625 at (0, 1): shown, not judged (near-zero elements make it large)"]
    m = compare("m", np.array([True, False, False]), np.array([True, True, False]), budget=5)
    assert not m.ok and m.row().splitlines() == [
        "m (bool): DIFFERS", "  rule: exact equality (bool is an integer or mask type), over all 3 elements",
        "  decided by: 1 element(s) differ, the first at (1,) (got False, want True)"]


def test_relaxed_applies_to_both_sides_of_a_comparison(cli, tmp_path: pathlib.Path) -> None:
    src = tmp_path / "u.pto"            # stores a tile it never wrote (its loop runs no iterations)
    src.write_text("kernel @k(%g : !pto.memref<16x16xf32>) {\n  .tile %t : !pto.tile<16x16xf32>\n"
                   "  scf.for %i = 0 to 0 step 1 {\n    %t = texpands 1.0 : (f32) -> !pto.tile<16x16xf32>\n  }\n"
                   "  tstore %g[0, 0], %t : (!pto.memref<16x16xf32>, !pto.tile<16x16xf32>)\n}\n")
    rc, _, err = cli("run", src, "--zeros")
    assert rc == 2 and f"{src}:6:3: RUNTIME_UNINIT_READ" in err
    assert cli("run", src, "--zeros", "--relaxed", "--compare-with", "reference")[0] == 0


def test_trace_is_chrome_json(cli, softmax: pathlib.Path, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "t.json"
    rc, out, _ = cli("run", softmax, "--random", *RUN, "--trace", path)
    assert rc == 0 and f"  trace: {path}" in out
    events = json.loads(path.read_text())["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    per_tile = ["TLOAD", "TROWMAX", "TROWEXPANDEXPDIF", "TROWSUM", "TROWEXPANDDIV", "TSTORE"]
    assert Counter(e["name"] for e in complete) == Counter(per_tile * 4)   # 64 rows = 4 tiles of 16
    for e in complete:
        assert isinstance(e["ts"], float) and e["dur"] > 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
    ts = [e["ts"] for e in complete]
    assert ts == sorted(ts)
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {threads[e["pid"], e["tid"]] for e in complete} == {"MTE2", "V", "MTE3"}
    assert all(threads[e["pid"], e["tid"]] == e["args"]["pipe"] for e in complete)


def test_timeline_is_a_png_with_a_lane_per_block_and_pipe(cli, softmax: pathlib.Path, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "t.png"
    rc, out, _ = cli("run", softmax, "--random", *RUN, "--block-num", "2", "--timeline", path)
    assert rc == 0 and f"  timeline: {path}" in out
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000
    rc, _, err = cli("run", softmax, "--random", *RUN, "--timeline", tmp_path / "no" / "t.png")
    assert rc == 2 and "PTO_FILE" in err


@pytest.mark.parametrize("argv, says", [
    (("--random", "--shape", "x=64x1024", "--shape", "y=64x1024"), "scalar parameter %rows needs a value"),
    (("--random", *RUN, "--arg", "rows"), "expected NAME=VALUE, got 'rows'"),
    (("--random", *RUN, "--arg", "=3"), "expected NAME=VALUE"),
    (("--random", *RUN, "--arg", "rows=many"), "cannot read argument value 'many'"),
    (("--random", "--shape", "x=64by1024", "--shape", "y=64x1024", "--arg", "rows=64"), "bad shape '64by1024'"),
    (("--random", *RUN, "--shape", "z=4x4"), "--shape names no parameter of @softmax: %z"),
    (("--random", "--arg", "rows=64"), "%x has dynamic dims"),
    (("--random", *RUN, "--out", "q=q.npy"), "--out names no parameter %q"),
])
def test_bad_run_arguments(cli, softmax: pathlib.Path, argv: tuple[str, ...], says: str) -> None:
    rc, out, err = cli("run", softmax, *argv)
    assert rc == 2 and out == "" and err.startswith("PTO_ARG: ") and says in err.splitlines()[0]


def test_bad_npy_argument(cli, softmax: pathlib.Path, tmp_path: pathlib.Path) -> None:
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    for value in (tmp_path / "bad.npy", tmp_path / "missing.npy"):
        rc, _, err = cli("run", softmax, "--arg", f"x={value}", "--shape", "y=64x1024", "--arg", "rows=64")
        assert rc == 2 and err.startswith(f"PTO_FILE: cannot load {value}")


def test_kernel_choice(cli, tmp_path: pathlib.Path) -> None:
    src = tmp_path / "two.pto"
    t = "!pto.tile<16x16xf32>"
    src.write_text("".join(f"kernel @{k}(%x : {t}) {{\n  %x = {op} %x, %x : ({t}, {t}) -> {t}\n}}\n"
                           for k, op in (("a", "tadd"), ("b", "tmul"))))
    rc, _, err = cli("run", src, "--random")
    assert rc == 2 and err.startswith("PTO_KERNEL: the module has 2 kernels; choose one with --kernel")
    rc, _, err = cli("run", src, "--random", "--kernel", "c")
    assert rc == 2 and err.startswith("PTO_KERNEL: no kernel @c") and "expected: a, b" in err
    x = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    for kernel, want in (("a", x + x), ("b", x * x)):
        rc, out, _ = cli("run", src, "--kernel", kernel, "--arg", f"x={tmp_path / 'x.npy'}",
                         "--out", f"x={tmp_path / 'out.npy'}")
        assert rc == 0 and out.startswith(f"@{kernel} on reference")
        assert np.array_equal(np.load(tmp_path / "out.npy"), want)


def test_run_on_an_unknown_backend(cli, softmax: pathlib.Path) -> None:
    rc, _, err = cli("run", softmax, "--backend", "nope", *RUN)
    assert rc == 2 and err.startswith("PTO_UNKNOWN_BACKEND: no backend named 'nope'")


def test_backends_lists_the_reference_backend(cli) -> None:
    rc, out, _ = cli("backends")
    assert rc == 0
    head, *rows = [line.split() for line in out.splitlines()]
    assert head == ["backend", "available", "reason", "profiles", "instructions"]
    assert ["reference", "yes", "-", *PROFILES, f"{N_INSTRUCTIONS}/{N_INSTRUCTIONS}"] in rows


def test_the_installed_console_script(softmax: pathlib.Path, messy: pathlib.Path) -> None:
    """One real process through the ``pto`` entry point: output and exit status pass through."""
    script = pathlib.Path(sys.executable).with_name("pto")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "openpto.cli"]
    bc = softmax.with_suffix(".ptobc")
    bc.write_bytes(pto.load(softmax).to_bytes())
    done = subprocess.run([*cmd, "dis", str(bc)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, "") and done.stdout == pto.load(softmax).to_text()
    done = subprocess.run([*cmd, "fmt", "--check", str(messy)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr == f"{messy}: not in canonical form\n"


# -- the helpers behind pto run ---------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [("3", 3), ("-7", -7), ("1.5", 1.5), ("1e3", 1000.0),
                                         ("true", True), ("false", False)])
def test_literals(text: str, value: object) -> None:
    got = literal(text)
    assert got == value and type(got) is type(value)


def test_shapes() -> None:
    assert parse_shape("64x1024") == (64, 1024) and parse_shape("0X3") == (0, 3) and parse_shape("5") == (5,)
    for bad in ("", "x", "3x-1", "2.5x2"):
        with pytest.raises(pto.PTOError) as e:
            parse_shape(bad)
        assert e.value.code == "PTO_ARG"


def test_compare_tolerates_a_bf16_rounding_but_not_more() -> None:
    want = np.array([1.0, 2.0, -3.0], ml_dtypes.bfloat16)
    one_ulp = want.copy()
    one_ulp[1] = ml_dtypes.bfloat16(2.015625)                 # 2 + one bf16 ulp at 2
    d = compare("y", one_ulp, want, budget=1)
    assert d.ok and d.max_abs == 2.0 ** -6 and d.first == (1,)
    assert d.tolerance == pytest.approx(2.0 ** -7 * 3)          # 1 eps of bf16 times max|want|
    far = want.copy()
    far[1] = ml_dtypes.bfloat16(2.5)
    assert not compare("y", far, want, budget=1).ok


def test_compare_exact_types_and_special_values() -> None:
    assert not compare("m", np.array([True, False]), np.array([True, True]), budget=10).ok
    assert compare("i", np.array([1, 2], np.int32), np.array([1, 2], np.int32), budget=0).ok
    z = np.zeros(4, np.float32)
    assert compare("z", z, z.copy(), budget=math.inf).ok      # inf * 0 must not become NaN
    f = np.array([np.inf, -np.inf, np.nan, 1.0], np.float32)
    assert compare("f", f, f.copy(), budget=0).ok
    d = compare("f", np.array([np.inf, 1.0], np.float32), np.array([1.0, 1.0], np.float32), budget=1)
    assert not d.ok and d.first == (0,)
    assert compare("f", np.array([np.nan], np.float32), np.array([1.0], np.float32), 1).mismatched_nans == 1


def test_chrome_trace_threads_and_processes() -> None:
    events = [{"name": "TLOAD", "ts_ns": 1000, "dur_ns": 500, "block": b, "pipe": p, "line": 3}
              for b in (0, 1) for p in ("MTE2", "V")]
    doc = json.loads(json.dumps(chrome_trace(events, "toy")))
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    assert {(e["pid"], e["args"]["name"]) for e in meta if e["name"] == "process_name"} == {
        (0, "toy block 0"), (1, "toy block 1")}
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert len(names) == 4 and set(names.values()) == {"MTE2", "V"}
    x = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert [(e["ts"], e["dur"], names[e["pid"], e["tid"]]) for e in x] == [(1.0, 0.5, p) for _ in (0, 1)
                                                                           for p in ("MTE2", "V")]
    assert chrome_trace([], "toy") == {"traceEvents": [], "displayTimeUnit": "ns"}
