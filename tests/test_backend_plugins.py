"""A third-party backend plugs in without touching openpto: the toy backend of docs/backends.md,
installed into a temporary directory as a package plus a ``.dist-info`` with an entry point
in the ``openpto.backends`` group, is found by name, by ``module:attr`` and by ``register``;
plug-ins that are broken or unavailable give their diagnostics, never a traceback."""
from __future__ import annotations

import importlib
import json
import pathlib
import re
import subprocess
import sys
from typing import Iterator

import numpy as np
import pytest

import openpto as pto
from openpto import backends
from openpto.assembler.bytecode import load_bytes
from openpto.backends import registry
from openpto.cli import main
from openpto.isa import PTOError, profiles

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "backends.md"

# The package under test is the doc's own code block, so the documented example cannot rot.
TOY_SOURCE = next(b for b in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
                  if b.startswith('"""toy_pto_backend'))

# More plug-ins in a second distribution: one unavailable here, one whose import raises, entry
# points naming an integer, a factory of a string and a Backend that cannot be built, an instance.
EXTRAS = '''
from toy_pto_backend import ToyBackend


class OfflineBackend(ToyBackend):
    name = "offline"

    def is_available(self):
        return False, "needs the toy accelerator"


class NeedsArgs(ToyBackend):
    name = "needsargs"

    def __init__(self, device):
        self.device = device


NOT_A_BACKEND = 42
INSTANCE = ToyBackend()


def make_string():
    return "a string, not a backend"
'''

TOY_ENTRY_POINTS = "[openpto.backends]\ntoy = toy_pto_backend:ToyBackend\n"
EXTRA_ENTRY_POINTS = """[openpto.backends]
offline = pto_test_extras:OfflineBackend
broken = pto_broken_backend:Backend
answer = pto_test_extras:NOT_A_BACKEND
stringy = pto_test_extras:make_string
needsargs = pto_test_extras:NeedsArgs
instance = pto_test_extras:INSTANCE
"""
MODULES = ("toy_pto_backend", "pto_test_extras", "pto_broken_backend")


def _dist(site: pathlib.Path, name: str, entry_points: str) -> None:
    info = site / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def site(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[pathlib.Path]:
    """tmp_path as an installation directory holding the toy backend and the extras."""
    (tmp_path / "toy_pto_backend").mkdir()
    (tmp_path / "toy_pto_backend" / "__init__.py").write_text(TOY_SOURCE)
    (tmp_path / "pto_test_extras.py").write_text(EXTRAS)
    (tmp_path / "pto_broken_backend.py").write_text("raise RuntimeError('the toy driver is missing')\n")
    _dist(tmp_path, "toy_pto_backend", TOY_ENTRY_POINTS)
    _dist(tmp_path, "pto_test_extras", EXTRA_ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_registered", {})   # register() in a test stays in that test
    importlib.invalidate_caches()
    yield tmp_path
    for name in MODULES:
        sys.modules.pop(name, None)
    importlib.invalidate_caches()


F32 = "!pto.tile<16x16xf32>"
F16 = "!pto.tile<16x16xf16>"
G = "!pto.memref<16x16xf32>"
G16 = "!pto.memref<16x16xf16>"

ADD = f"""kernel @add(%a : {G}, %b : {G}, %c : {G}) {{
  %x = tload %a[0, 0] : ({G}) -> {F32}
  %y = tload %b[0, 0] : ({G}) -> {F32}
  %z = tadd %x, %y : ({F32}, {F32}) -> {F32}
  tstore %c[0, 0], %z : ({G}, {F32})
}}
"""


def code_of(fn, *args, **kwargs) -> PTOError:  # noqa: ANN001
    with pytest.raises(PTOError) as e:
        fn(*args, **kwargs)
    return e.value


def run_add(backend) -> tuple[np.ndarray, np.ndarray, np.ndarray, backends.Result]:  # noqa: ANN001
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    c = np.full((16, 16), np.nan, np.float32)
    res = pto.compile(pto.parse(ADD, filename="add.pto"), backend=backend)(a, b, c)
    return a, b, c, res


# -- found as an installed plug-in ------------------------------------------------------------

def test_the_plugin_is_listed_and_built_by_name(site: pathlib.Path) -> None:
    assert {"toy", "offline", "broken", "reference"} <= set(backends.names())
    toy = backends.get("toy")
    assert isinstance(toy, backends.Backend) and type(toy).__module__ == "toy_pto_backend"
    assert toy.name == "toy" and toy.coverage() == (3, backends.get("reference").coverage()[1])


def test_an_entry_point_may_name_an_instance(site: pathlib.Path) -> None:
    assert backends.get("instance") is sys.modules["pto_test_extras"].INSTANCE
    assert backends.get("instance") is backends.get("instance")


def test_pto_run_on_the_plugin_compared_with_reference(site: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    (site / "add.pto").write_text(ADD)
    rc = main(["run", str(site / "add.pto"), "--backend", "toy", "--random", "--compare-with", "reference"])
    out = capsys.readouterr().out
    assert rc == 0 and out.startswith("@add on toy (profile cpu): 4 instruction(s)")
    assert "  c (float32): ok" in out.splitlines() and out.endswith("decided by: no element differs\n")


def test_the_plugin_runs_a_program(site: pathlib.Path) -> None:
    a, b, c, res = run_add("toy")
    assert np.array_equal(c, a + b)
    assert res.outputs.keys() == {"c"} and res["c"] is c
    assert res.counters["toy_blocks"] == 1 and res.counters["instructions"] == 4
    assert sys.modules["toy_pto_backend"].__file__.startswith(str(site))


def test_unsupported_instruction_fails_at_compile_time(site: pathlib.Path) -> None:
    text = ADD.replace("tadd", "tmul")
    e = code_of(pto.compile, pto.parse(text, filename="k.pto"), backend="toy")
    assert e.code == "LEGAL_BACKEND_UNSUPPORTED" and e.actual == "TMUL"
    assert (e.location.file, e.location.line, e.location.col) == ("k.pto", 4, 8)
    assert (e.location.kernel, e.location.index) == ("add", 2)      # the third statement
    assert e.render().splitlines()[0] == "k.pto:4:8: LEGAL_BACKEND_UNSUPPORTED: backend 'toy' has no lowering for TMUL"
    assert "tmul" in e.location.source_line
    # the same module compiles on the reference backend: the profile allows what the toy refuses
    pto.compile(pto.parse(text), backend="reference")


def test_narrower_dtypes_than_the_profile_and_every_statement_reported(site: pathlib.Path) -> None:
    text = f"""kernel @k(%a : {G16}, %b : {G16}) {{
  %x = tload %a[0, 0] : ({G16}) -> {F16}
  %x = tmul %x, %x : ({F16}, {F16}) -> {F16}
  tstore %b[0, 0], %x : ({G16}, {F16})
}}
"""
    m = pto.parse(text, filename="h.pto")
    pto.check(m, "cpu")                                  # legal for the profile
    e = code_of(pto.compile, m, backend="toy")
    assert isinstance(e, pto.PTOErrorGroup)
    found = [(x.code, x.location.line, x.actual) for x in e.errors]
    assert found == [("LEGAL_BACKEND_UNSUPPORTED", 2, "TLOAD"), ("LEGAL_BACKEND_UNSUPPORTED", 3, "TMUL"),
                     ("LEGAL_BACKEND_UNSUPPORTED", 4, "TSTORE")]
    assert "f32 only, not f16" in e.errors[0].message and "no lowering for TMUL" in e.errors[1].message


def test_profile_the_plugin_does_not_target(site: pathlib.Path) -> None:
    e = code_of(pto.compile, pto.parse(ADD), backend="toy", profile="a5")
    assert e.code == "LEGAL_PROFILE" and e.actual == "a5" and e.expected == "cpu | a3"


def test_bytecode_module_locates_unsupported_by_kernel_and_index(site: pathlib.Path) -> None:
    m = load_bytes(pto.parse(ADD.replace("tadd", "tmul")).to_bytes())
    e = code_of(pto.compile, m, backend="toy")
    assert e.code == "LEGAL_BACKEND_UNSUPPORTED" and e.render().startswith("add#2: LEGAL_BACKEND_UNSUPPORTED")


def test_statements_are_numbered_as_the_verifier_numbers_them(site: pathlib.Path) -> None:
    """Nested regions: the toy's refusals and a3's dtype errors name the same statements."""
    t = "!pto.tile<16x16xbf16>"
    m = load_bytes(pto.parse(f"""kernel @k(%a : {t}) {{
  .const %c0 = 0 : index
  scf.for %i = %c0 to %c0 step %c0 {{
    %a = tmul %a, %a : ({t}, {t}) -> {t}
  }}
  %a = tadd %a, %a : ({t}, {t}) -> {t}
}}""").to_bytes())
    verifier = code_of(pto.check, m, "a3")
    toy = code_of(pto.compile, m, backend="toy")
    assert [str(x.location) for x in toy.errors] == [str(x.location) for x in verifier.errors] == ["k#2", "k#3"]


# -- by reference and by register --------------------------------------------------------------

def test_module_attr_spec(site: pathlib.Path) -> None:
    assert backends.get("toy_pto_backend:ToyBackend").name == "toy"
    a, b, c, _ = run_add("toy_pto_backend:ToyBackend")
    assert np.array_equal(c, a + b)


@pytest.mark.parametrize("spec, code, says", [
    ("toy_pto_backend:NoSuchThing", "PTO_BACKEND_LOAD", "AttributeError"),
    ("no_such_package_xyz:Backend", "PTO_BACKEND_LOAD", "No module named 'no_such_package_xyz'"),
    ("pto_broken_backend:Backend", "PTO_BACKEND_LOAD", "RuntimeError: the toy driver is missing"),
    ("pto_test_extras:NOT_A_BACKEND", "PTO_BACKEND_LOAD", "is not an openpto Backend"),
    (":Backend", "PTO_BACKEND_LOAD", "failed to load"),
    ("nope", "PTO_UNKNOWN_BACKEND", "no backend named 'nope'"),
])
def test_bad_specs(site: pathlib.Path, spec: str, code: str, says: str) -> None:
    e = code_of(backends.get, spec)
    assert e.code == code and says in e.message


def test_unknown_name_lists_the_known_ones(site: pathlib.Path) -> None:
    e = code_of(pto.compile, pto.parse(ADD), backend="toyy")
    assert e.code == "PTO_UNKNOWN_BACKEND" and "toy" in e.expected.split(" | ")


def test_register_a_class_a_factory_and_an_instance(site: pathlib.Path) -> None:
    from toy_pto_backend import ToyBackend

    assert "mine" not in backends.names()
    backends.register("mine", ToyBackend)
    assert "mine" in backends.names() and isinstance(backends.get("mine"), ToyBackend)
    a, b, c, _ = run_add("mine")
    assert np.array_equal(c, a + b)
    calls = []
    backends.register("made", lambda: calls.append(1) or ToyBackend())
    backends.get("made")
    backends.get("made")
    assert calls == [1, 1]                               # a factory is called on every lookup
    one = ToyBackend()
    backends.register("one", one)
    assert backends.get("one") is one
    backends.register("toy", lambda: one)                # a registered name wins over the plug-in
    assert backends.get("toy") is one


def test_register_a_broken_factory(site: pathlib.Path) -> None:
    backends.register("bad", lambda: 1 / 0)
    e = code_of(backends.get, "bad")
    assert e.code == "PTO_BACKEND_LOAD" and "ZeroDivisionError" in e.message

    def refuses() -> backends.Backend:
        raise PTOError("PTO_BACKEND_UNAVAILABLE", "no device")
    backends.register("refuses", refuses)
    assert code_of(backends.get, "refuses").code == "PTO_BACKEND_UNAVAILABLE"   # its own diagnostic stands


# -- broken and unavailable plug-ins -----------------------------------------------------------

@pytest.mark.parametrize("name, says", [
    ("broken", "the toy driver is missing"),             # its import raises
    ("answer", "not an openpto Backend"),                # names the integer 42
    ("stringy", "not an openpto Backend"),               # a factory returning a string
    ("needsargs", "TypeError"),                          # a Backend that cannot be constructed
])
def test_broken_plugins_give_a_load_diagnostic(site: pathlib.Path, name: str, says: str) -> None:
    e = code_of(backends.get, name)
    assert e.code == "PTO_BACKEND_LOAD" and says in e.message
    assert name in backends.names()                      # listing never imports a plug-in


def test_unavailable_backend_fails_at_compile(site: pathlib.Path) -> None:
    b = backends.get("offline")
    assert b.is_available() == (False, "needs the toy accelerator")
    e = code_of(pto.compile, pto.parse(ADD), backend="offline")
    assert e.code == "PTO_BACKEND_UNAVAILABLE" and "needs the toy accelerator" in e.message


def _table(out: str) -> dict[str, list[str]]:
    rows = [re.split(r" {2,}", line) for line in out.splitlines()]
    assert rows[0] == ["backend", "available", "reason", "profiles", "instructions"]
    return {r[0]: r[1:] for r in rows[1:]}


def test_pto_backends_lists_plugins(site: pathlib.Path) -> None:
    """The installed console script, in a fresh process that finds the plug-ins only through
    PYTHONPATH: the entry-point machinery, not this process's state."""
    pto_script = pathlib.Path(sys.executable).with_name("pto")
    cmd = [str(pto_script)] if pto_script.exists() else [sys.executable, "-m", "openpto.cli"]
    done = subprocess.run([*cmd, "backends"], capture_output=True, text=True, timeout=60, cwd=site,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    table = _table(done.stdout)
    total = backends.get("reference").coverage()[1]
    assert table["toy"] == ["yes", "-", "cpu a3", f"3/{total}"]
    assert table["reference"] == ["yes", "-", " ".join(profiles.PROFILES), f"{total}/{total}"]
    assert table["offline"][:2] == ["no", "needs the toy accelerator"]
    assert table["broken"][0] == "no" and "the toy driver is missing" in table["broken"][1]
    assert table["answer"][0] == "no" and table["needsargs"][0] == "no"


def test_conformance_runs_a_separate_package_by_module_attr(site: pathlib.Path, tmp_path: pathlib.Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``pto conformance --backend package.module:attr``: no change to this repository."""
    from openpto.cli import main

    report, md = tmp_path / "r.json", tmp_path / "r.md"
    rc = main(["conformance", "--backend", "toy_pto_backend:ToyBackend", "--only", "TADD,TMUL",
               "--level", "2", "--max-examples", "2", "--report", str(report), "--markdown", str(md),
               "--reproducers", str(tmp_path / "fail"), "-q"])
    out = capsys.readouterr().out
    assert rc == 0, out
    data = json.loads(report.read_text())
    assert data["backend"] == "toy"
    rows = {(o["instruction"], o["dtypes"]): o["status"] for o in data["profiles"]["cpu"]["outcomes"]}
    assert rows[("TADD", "f32")] == "pass"
    assert rows[("TADD", "f16")] == "unsupported" and rows[("TMUL", "f32")] == "unsupported"
    assert "| TADD |" in md.read_text()
