"""The portability report (frontend/port.py, ``pto port``): per profile the verdict of the real
compile, each blocker at the user's line, and tile shapes that - applied to the source - compile.

Expectations are independent of the report: the profiles' published facts (a6 implements only a
few vector instructions; a2/a3 and the Kirin parts take no bf16 TADD; a3's vector buffer is
192 KB), byte counts worked out by hand, lines looked up in the source, and the ordinary
compile path (``@jit`` with the reference backend) for every profile."""
from __future__ import annotations

import inspect
import pathlib
import re
import runpy

import numpy as np
import pytest

import openpto.frontend as pto
from openpto.cli import main
from openpto.frontend.port import report
from openpto.isa import PTOError
from openpto.isa.profiles import PROFILES

from frontend_seeds import load_seed

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCORES = ROOT / "examples" / "frontend" / "scores_tiles.py"
KB = 1024


def _line(path: pathlib.Path | str, text: str) -> int:
    lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
    hits = [i + 1 for i, ln in enumerate(lines) if text in ln]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def _fn_line(fn, text: str) -> int:
    src, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(src) if text in ln)


def _compiles(jf, profile: str) -> bool:
    """The ordinary compile path: capture, lower, ``pto.compile`` (verifier + backend)."""
    try:
        jf.with_options(backend="reference", profile=profile).stages_from_annotations()
    except PTOError as e:
        assert e.code in ("FRONT_LEGAL", "FRONT_UNSUPPORTED_OP"), e.render()
        return False
    return True


# --------------------------------------------------------------------------------------------
# the seed programs on every profile

@pytest.mark.parametrize("seed,sizes,lines", [
    ("softmax", {"M": 300, "N": 1000},
     {"TROWMAX": "rowmax = pypto.amax", "TROWEXPANDSUB": "sub_res = pypto.sub", "TEXP": "exp_res = pypto.exp",
      "TROWSUM": "esum = pypto.sum", "TROWEXPANDDIV": "output = pypto.div"}),
    ("softmax_dynamic", {"N1": 32, "N2": 1, "DIM": 256},
     {"TROWMAX": "rowmax = pto.row_max_single", "TROWEXPANDSUB": "sub = pto.sub(x, rowmax)",
      "TEXP": "exp = pto.exp(sub)", "TROWSUM": "esum = pto.row_sum_single", "TROWEXPANDDIV": "return pto.div(exp"}),
])
def test_the_seeds_on_every_profile(seed, sizes, lines):
    mod = load_seed(seed, **sizes)
    jf = mod.test_softmax if seed == "softmax" else mod.softmax
    r = report(jf)
    assert [p.profile for p in r.profiles] == list(PROFILES)
    legal = {p.profile for p in r.profiles if p.legal}
    # a6 is a bring-up target without the row reductions, expansions and TEXP; the rest take
    # every f32 instruction softmax needs, and 32 whole rows of 1000 f32 (or 4 x 256) fit them
    assert legal == set(PROFILES) - {"a6"}
    for p in r.profiles:                        # the verdict is the compile's
        assert p.legal == _compiles(jf, p.profile), p.profile
    a6 = r.get("a6")
    assert {b.kind for b in a6.blockers} == {"instruction"}
    assert {b.instruction: b.where.line for b in a6.blockers} == \
        {ins: _line(mod.__file__, text) for ins, text in lines.items()}
    assert all(b.profile == "a6" and ("dst", "f32") in b.dtypes for b in a6.blockers)


def test_a_dynamic_size_is_fixed_by_name_and_a_bad_one_is_refused():
    mod = load_seed("softmax_dynamic", N1=32, N2=1, DIM=256)
    r = report(mod.softmax, profiles=["a3"], sizes={"input_tensor_dim0": 5})
    assert r.sizes == {"input_tensor_dim0": 5} and r.get("a3").legal
    with pytest.raises(PTOError) as e:
        report(mod.softmax, sizes={"batch": 5})
    assert e.value.code == "PTO_ARG" and "input_tensor_dim0" in str(e.value.expected)
    with pytest.raises(PTOError) as e:
        report(mod.softmax, profiles=["a33"])
    assert e.value.code == "PTO_ARG" and "a3" in e.value.message


# --------------------------------------------------------------------------------------------
# instruction and dtype blockers


def test_a_dtype_the_profile_lacks_names_instruction_dtype_profile_and_line():
    def f(x: pto.Tensor((16, 64), pto.DT_BF16), y: pto.Tensor((16, 64), pto.DT_BF16)):
        z = x * 2.0
        return z + y
    jf = pto.jit(f)
    r = report(jf)
    add_line = _fn_line(f, "return z + y")
    for prof in ("a2", "a3"):                   # no bf16 vector arithmetic before a5
        tadd = [b for b in r.get(prof).blockers if b.instruction == "TADD"]
        assert len(tadd) == 1
        b = tadd[0]
        assert (b.kind, b.code, b.profile) == ("dtype", "LEGAL_DTYPE", prof)
        assert dict(b.dtypes) == {"dst": "bf16", "src0": "bf16", "src1": "bf16"}
        assert b.where.line == add_line and "return z + y" in str(r)
        assert "TADD" in b.what() and "bf16" in b.what() and prof in b.what()
    for prof in ("kirin9030", "kirinX90"):      # no bf16 at all: not even moved
        assert {"TLOAD", "TSTORE", "TADD", "TMULS"} <= {b.instruction for b in r.get(prof).blockers}
    assert r.get("a5").legal and r.get("cpu").legal and r.get("cuda").legal


def test_an_instruction_the_profile_lacks_and_an_integer_division():
    def f(x: pto.Tensor((8, 16), pto.DT_INT32), y: pto.Tensor((8, 16), pto.DT_INT32)):
        z = x + y
        return z / y
    r = report(pto.jit(f), profiles=["a3", "a5", "a6"])
    line = _fn_line(f, "return z / y")
    (b3,) = r.get("a3").blockers
    assert (b3.kind, b3.instruction, b3.where.line) == ("dtype", "TDIV", line)
    assert ("dst", "i32") in b3.dtypes
    assert r.get("a5").legal
    (b6,) = r.get("a6").blockers                # TADD exists on a6, TDIV does not
    assert (b6.kind, b6.code, b6.instruction, b6.where.line) == \
        ("instruction", "LEGAL_UNSUPPORTED_INSTRUCTION", "TDIV", line)


def test_a_frontend_refusal_is_a_blocker_at_its_line():
    def f(x: pto.Tensor((4, 8192), pto.DT_FP32)):
        v, i = pto.topk(x, 4, largest=False)     # smallest first: selection passes on whole rows
        return i
    r = report(pto.jit(f), profiles=["cpu", "a3"])
    assert r.get("cpu").legal
    (b,) = r.get("a3").blockers                 # 12 working rows of 8192 f32 = 384 KB > 192 KB
    assert (b.kind, b.code, b.where.line) == ("frontend", "FRONT_UNSUPPORTED_OP", _fn_line(f, "pto.topk"))


# --------------------------------------------------------------------------------------------
# capacity blockers and the tile shapes that fit


def _apply(path: pathlib.Path, fit, tmp_path: pathlib.Path, name: str) -> pathlib.Path:
    """The source with each knob's line replaced by the suggested call (a default matmul tile:
    the matmul's line wrapped in the suggested ``with``)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for knob, value in sorted(fit.changes, key=lambda c: -c[0].where.line):
        old = lines[knob.where.line - 1]
        indent = old[:len(old) - len(old.lstrip())]
        if knob.default:
            lines[knob.where.line - 1:knob.where.line] = [f"{indent}with {knob.call(value)}:", "    " + old]
        else:
            lines[knob.where.line - 1] = indent + knob.call(value)
    out = tmp_path / name
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def test_the_example_overflows_a3_and_one_documented_change_makes_it_legal(tmp_path):
    jf = runpy.run_path(str(SCORES), run_name="scores_port")["scores"]
    r = report(jf)
    assert r.get("cpu").legal and not r.get("a3").legal
    (b,) = r.get("a3").blockers
    assert (b.kind, b.buffer, b.capacity) == ("capacity", "vec", 192 * KB)
    # 64 x 1024 f32 scores + two 64 x 8 f32 row results (rows padded to 32 bytes)
    assert b.needed == 64 * 1024 * 4 + 2 * 64 * 8 * 4
    assert (b.tiles[0].rows, b.tiles[0].cols, b.tiles[0].dtype, b.tiles[0].nbytes) == (64, 1024, "f32", 256 * KB)
    assert b.where.line == _line(SCORES, "p = pto.exp(s - pto.amax")
    fits = r.get("a3").fits
    assert fits and len(fits[0].changes) == 1
    knob, value = fits[0].changes[0]
    assert knob.where.line == _line(SCORES, "set_vec_tile_shapes(ROWS, 1024)")
    assert value == (32, 1024)                 # the documented change: half the rows
    for i, fit in enumerate(fits):             # every suggestion, applied to the source, compiles
        fixed = runpy.run_path(str(_apply(SCORES, fit, tmp_path, f"fixed{i}.py")), run_name="fixed")["scores"]
        assert report(fixed, profiles=["a3"]).get("a3").legal
        assert _compiles(fixed, "a3")
    # and runs: the fixed program against numpy on a3's legality rules
    fixed = runpy.run_path(str(_apply(SCORES, fits[0], tmp_path, "run.py")), run_name="run")["scores"]
    rng = np.random.default_rng(1)
    q = rng.standard_normal((256, 128)).astype(np.float16)
    k = rng.standard_normal((1024, 128)).astype(np.float16)
    p = fixed.with_options(backend="reference", profile="a3")(q, k)
    s = q.astype(np.float64) @ k.astype(np.float64).T
    e = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(-1, keepdims=True), rtol=1e-4, atol=1e-6)


def test_two_overflowing_kernels_get_one_fit_changing_both_settings(tmp_path):
    jf = runpy.run_path(str(SCORES), run_name="scores_port")["scores"]
    p = report(jf, profiles=["kirin9030"]).get("kirin9030")
    # 32 KB L0B, 64 KB L0C, 128 KB UB; and no f16 x f16 -> f32 matmul at all
    caps = {(b.buffer, b.needed, b.capacity) for b in p.blockers if b.kind == "capacity"}
    assert caps == {("right", 256 * 128 * 2, 32 * KB), ("acc", 128 * 256 * 4, 64 * KB),
                    ("vec", 64 * 1024 * 4 + 2 * 64 * 8 * 4, 128 * KB)}
    assert {b.instruction for b in p.blockers if b.kind == "dtype"} == {"TMATMUL", "TMATMUL_ACC"}
    (fit,) = p.fits
    lines = {knob.where.line: knob.call(value) for knob, value in fit.changes}
    assert lines == {_line(SCORES, "pto.set_cube_tile_shapes(128"): "pto.set_cube_tile_shapes(128, 128, 128)",
                     _line(SCORES, "pto.set_vec_tile_shapes(ROWS"): "pto.set_vec_tile_shapes(64, 512)"}
    fixed = runpy.run_path(str(_apply(SCORES, fit, tmp_path, "kirin.py")), run_name="kirin")["scores"]
    left = report(fixed, profiles=["kirin9030"]).get("kirin9030").blockers
    assert {b.kind for b in left} == {"dtype"}      # the capacity blockers are gone; the dtype stays


def test_the_example_runs_as_a_script(capsys):
    runpy.run_path(str(SCORES), run_name="__main__")
    assert "equal to numpy" in capsys.readouterr().out


def test_a_cube_tile_overflowing_l0b_gets_smaller_cube_tiles(tmp_path):
    src = tmp_path / "mm.py"
    src.write_text(
        "import openpto.frontend as pto\n\n\n"
        "@pto.jit\n"
        "def mm(a: pto.Tensor((256, 512), pto.DT_FP16), b: pto.Tensor((512, 512), pto.DT_FP16)):\n"
        "    pto.set_cube_tile_shapes(128, 256, 256)\n"
        "    return pto.matmul(a, b)\n", encoding="utf-8")
    jf = runpy.run_path(str(src), run_name="mm")["mm"]
    r = report(jf, profiles=["cpu", "a3"])
    assert r.get("cpu").legal
    (b,) = r.get("a3").blockers               # B's 256 x 256 f16 tile: 128 KB in a 64 KB L0B
    assert (b.buffer, b.needed, b.capacity) == ("right", 256 * 256 * 2, 64 * KB)
    assert b.where.line == 7
    fits = r.get("a3").fits
    assert [f.changes[0][0].where.line for f in fits] == [6] * len(fits)
    # the largest that fit: k or n halved (128 x 256 x 2 B = 64 KB of L0B, 128 x 128 x 4 B of L0C)
    assert {(v.m[0], v.k[0], v.n[0]) for f in fits for _, v in f.changes} == {(128, 128, 256), (128, 256, 128)}
    for i, fit in enumerate(fits):
        fixed = runpy.run_path(str(_apply(src, fit, tmp_path, f"mm{i}.py")), run_name="mmfix")["mm"]
        assert _compiles(fixed, "a3")


def test_a_matmul_without_cube_tiles_gets_the_setting_to_add(tmp_path):
    src = tmp_path / "mmd.py"
    src.write_text(
        "import openpto.frontend as pto\n\n\n"
        "@pto.jit\n"
        "def mmsm(a: pto.Tensor((256, 64), pto.DT_FP16), b: pto.Tensor((64, 128), pto.DT_FP16)):\n"
        "    s = pto.matmul(a, b)\n"
        "    m = pto.abs(s)\n"
        "    h = pto.cast(s * m, pto.DT_FP16)\n"
        "    return pto.cast(pto.cast(h, pto.DT_FP32) / pto.amax(m, -1, True), pto.DT_INT32)\n", encoding="utf-8")
    jf = runpy.run_path(str(src), run_name="mmd")["mmsm"]
    p = report(jf, profiles=["cuda"]).get("cuda")
    # one core: the vector ops join the untiled matmul's 256 x 128 output tile, six such tiles
    (b,) = p.blockers
    assert (b.kind, b.buffer, b.capacity) == ("capacity", "vec", 227 * KB)
    assert b.needed > 4 * 256 * 128 * 4 and b.tiles[0].rows == 256
    assert p.fits
    for i, fit in enumerate(p.fits):
        ((knob, value),) = fit.changes
        assert knob.default and knob.where.line == 6 and "the pipeline's default" in knob.call()
        fixed = runpy.run_path(str(_apply(src, fit, tmp_path, f"mmd{i}.py")), run_name="mmdfix")["mmsm"]
        assert _compiles(fixed, "cuda")


def test_a_kernel_without_a_tile_setting_gets_no_fit():
    def f(x: pto.Tensor((8, 16), pto.DT_FP32)):
        return pto.exp(x)
    r = report(pto.jit(f), profiles=["a3"])
    assert r.get("a3").legal and r.get("a3").fits == []


# --------------------------------------------------------------------------------------------
# the command


def test_the_command_prints_the_table_and_markdown(capsys):
    assert main(["port", str(SCORES)]) == 0
    out = capsys.readouterr().out
    assert "profile    legal  blockers" in out
    assert "a3         no     1 capacity" in out and "cpu        yes" in out
    assert "pto.set_vec_tile_shapes(64, 1024) -> pto.set_vec_tile_shapes(32, 1024)" in out
    assert main(["port", f"{SCORES}:scores", "--profile", "a3", "--profile", "cpu", "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "| profile | legal | blockers |" in md and "| a3 | **no** | 1 capacity |" in md
    assert "| cpu | yes | - |" in md and "a5" not in md
    assert "`pto.set_vec_tile_shapes(32, 1024)`" in md


def test_the_command_fixes_dynamic_sizes(capsys):
    path = ROOT / "examples" / "frontend" / "softmax_dynamic.py"
    assert main(["port", str(path), "--size", "input_tensor_dim0=3", "--profile", "a6", "--no-fit"]) == 0
    out = capsys.readouterr().out
    assert "sizes input_tensor_dim0=3" in out and "TROWMAX" in out


@pytest.mark.parametrize("argv,text", [
    (["port", "x.txt"], "FILE.py, FILE.py:name or package.module:name"),
    (["port", "missing_file.py"], "PTO_FILE"),
    (["port", str(SCORES) + ":nope"], "no @jit function or factory 'nope'"),
    (["port", "openpto.no_such_module:build"], "cannot import openpto.no_such_module"),
    (["port", str(SCORES) + ":scores", "--arg", "x=1"], "--arg is for a factory"),
    (["port", "openpto.frontend.port:judge"], "judge() failed"),
    (["port", "openpto.frontend.port:check_profiles", "--arg", "names=[]"], "did not return a @jit function"),
    (["port", str(SCORES), "--arg", "=3"], "bad --arg '=3'"),
    (["port", str(SCORES), "--profile", "a33"], "unknown profile 'a33'"),
    (["port", str(SCORES), "--size", "B"], "bad --size 'B'"),
    (["port", str(SCORES), "--size", "B=4"], "bad size B=4"),
])
def test_the_command_refuses_bad_arguments(capsys, argv, text):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert text in err and ("PTO_ARG" in err or "PTO_FILE" in err)


def test_the_docs_show_what_the_command_prints(capsys, monkeypatch):
    """docs/frontend.md's 'Portability report' sample is the command's output, as printed."""
    doc = (ROOT / "docs" / "frontend.md").read_text(encoding="utf-8")
    section = doc.split("## Portability report\n", 1)[1].split("\n## ", 1)[0]
    m = re.search(r"`(pto port [^`]+)`:\n\n```text\n(.*?)```", section, re.S)
    assert m is not None
    monkeypatch.chdir(ROOT)
    assert main(m.group(1).split()[1:]) == 0
    assert capsys.readouterr().out == m.group(2)


def test_the_command_calls_an_operator_factory(capsys):
    argv = ["port", "openpto.operators.lightning_indexer:build", "--arg", "shapes=small", "--arg", "quant=True",
            "--profile", "cpu", "--profile", "a3", "--profile", "a6"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "made by build(shapes='small', quant=True)" in out
    assert re.search(r"^cpu +yes", out, re.M) and re.search(r"^a6 +no", out, re.M)
    assert "MGATHER" in out and "pto.gather_rows" in out      # a6 has no gather: told at the operator's line
    assert main(argv[:2] + ["--arg", "shapes=nope"]) == 2
    assert "build(shapes='nope') failed" in capsys.readouterr().err
