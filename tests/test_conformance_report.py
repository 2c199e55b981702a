"""The runner and its reports end to end: a broken backend's failure is reported per
instruction x dtype with the level reached, and its reproducer runs with ``pto run``."""
from __future__ import annotations

import json
import pathlib
import shlex

import pytest

from openpto.cli import main
from openpto.conformance import report as R
from openpto.conformance.runner import Patterns, run
from reproducer_backends import RowSumSkipsLastColumn as BrokenRowSum


def test_patterns() -> None:
    p = Patterns.parse("TADD  # comment\nTROW*:f16, TCVT:f32,f1*\n")
    assert p.match("TADD") and p.match("TROWSUM", "f16") and not p.match("TROWSUM", "f32")
    assert p.match("TCVT", "f32,f16") and not p.match("TSUB")
    assert Patterns.parse("tadd, trow*").items == ("tadd", "trow*") and Patterns.parse("tadd").match("TADD")
    assert Patterns.parse("TCVT:f32,f16, TADD").items == ("TCVT:f32,f16", "TADD")
    only = run("reference", ["cpu"], (0,), only=Patterns.parse("TADD:f32"), max_examples=1, progress=None)
    assert [(o.instruction, o.dtypes) for o in only.outcomes["cpu"]] == [("TADD", "f32")]


def test_report_and_runnable_reproducer(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(BrokenRowSum(), ["cpu"], (0, 1, 2), only=Patterns(("TROWSUM", "TADD")),
                 skips=Patterns(("TADD:i8",)), max_examples=4, progress=None)
    R.write(result, str(tmp_path / "r.json"), str(tmp_path / "r.md"), str(tmp_path / "repro"))
    data = json.loads((tmp_path / "r.json").read_text())["profiles"]["cpu"]
    assert data["level_reached"]["TADD"] == 2 and data["level_reached"]["TROWSUM"] == 1
    rows = {(o["instruction"], o["dtypes"], o["level"]): o for o in data["outcomes"]}
    assert rows[("TADD", "i8", 0)]["status"] == "skipped"
    fails = [o for o in data["outcomes"] if o["status"] == "fail"]
    assert fails and all(o["instruction"] == "TROWSUM" and o["level"] == 2 for o in fails)
    assert all("reproducer" in o for o in fails)
    md = (tmp_path / "r.md").read_text()
    assert "| TROWSUM |" in md and "first difference dst[" in md
    # the reproducer's header says how to run it; run it against the reference for comparison
    repro = pathlib.Path(fails[0]["reproducer"])
    header = [line for line in repro.read_text().splitlines() if line.startswith("// run: pto run ")][0]
    argv = shlex.split(header[len("// run: pto "):])
    argv[argv.index("--backend") + 1] = "reproducer_backends:RowSumSkipsLastColumn"
    monkeypatch.chdir(repro.parent)
    assert main(argv + ["--compare-with", "reference"]) == 1       # the difference is reproduced
    assert "DIFFERS" in capsys.readouterr().out


def test_the_suite_runs_as_a_pytest_plugin(tmp_path: pathlib.Path) -> None:
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "pytest", "--pyargs", "openpto.conformance", "--pto-backend", "reference",
           "--pto-only", "TADD", "--pto-level", "2", "--pto-max-examples", "1", "-q", "-p", "no:cacheprovider"]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "9 passed" in r.stdout                    # TADD's nine cpu dtype tuples
    r = subprocess.run(cmd[:5] + ["-q", "-p", "no:cacheprovider"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    assert "skipped" in r.stdout                     # without --pto-backend nothing runs


def test_worker_processes_give_the_serial_outcomes() -> None:
    """``jobs`` > 1 (the command line's default: one per CPU) farms instruction x dtype pairs and
    L3 out to worker processes; every pair seeds hypothesis afresh, so the report is the same."""
    def summary(report):  # noqa: ANN001, ANN202
        return [(o.level, o.instruction, o.dtypes, o.status, o.examples, o.reason)
                for o in report.outcomes["cpu"]]
    only = Patterns(("TADD:f16", "TROWSUM", "TCMPS:i1,f32*"))
    serial = run("reference", ["cpu"], (0, 1, 2, 3), only=only, progress=None)
    parallel = run("reference", ["cpu"], (0, 1, 2, 3), only=only, progress=None, jobs=2)
    assert summary(parallel) == summary(serial) and len(summary(serial)) > 10


def test_jobs_below_one_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--only", "TADD", "--jobs", "0"]) != 0
    assert "--jobs must be at least 1" in capsys.readouterr().err
