"""The fuzz campaigns at CI size (fixed seeds, zero findings), and the harness detecting
every finding class: an escaping exception, a hang, a crash by abort and by SIGSEGV, an
out-of-bounds write into a canary, a mismatch, and a changed canary after a strided view."""
from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import pytest

from openpto.fuzz import Campaign, Input, run_campaign
from openpto.fuzz.__main__ import main
from openpto.fuzz.campaigns import CAMPAIGNS
from openpto.fuzz.canary import PAD, Canary
from openpto.fuzz.outcome import Verdict
from openpto.isa.diagnostics import ParseError


def _clean(report) -> None:  # noqa: ANN001
    assert report.findings == [], [(f.index, f.kind, f.detail) for f in report.findings]


@pytest.mark.parametrize("name,count", [("parse", 400), ("bytecode", 400), ("arguments", 150)])
def test_campaign_small_run_has_no_findings(name: str, count: int) -> None:
    report = run_campaign(CAMPAIGNS[name](), count, seed=7)
    _clean(report)
    assert report.inputs == count
    assert report.ok > 0 and report.codes, "the campaign reaches both accepted and rejected inputs"


def test_programs_campaign_small_run_has_no_findings() -> None:
    # one random L3 program on 4 argument sets (compiled once), then the stress family of
    # group 3: tile windows at extreme offsets and valid-row counts
    campaign = CAMPAIGNS["programs"](4)
    _clean(run_campaign(campaign, 4, seed=7))
    windows = _Offset(campaign, 12)
    assert "%t = tload %x[%r, %c]" in windows.make(7, 0).payload[0]
    report = run_campaign(windows, 4, seed=7)
    _clean(report)
    assert report.inputs == 4


def test_programs_stress_loops_near_int64_max_have_no_findings() -> None:
    campaign = CAMPAIGNS["programs"](3)                # group 7: the loop-bounds family
    inputs = [campaign.make(5, i) for i in range(21, 24)]
    assert all("scf.for %i = %lb to %ub" in inp.payload[0] for inp in inputs)
    _clean(run_campaign(_Offset(campaign, 21), 3, seed=5))


class _Offset(Campaign):
    """Inputs ``start..`` of another campaign (to run one group only)."""

    def __init__(self, inner: Campaign, start: int) -> None:
        self.inner, self.start = inner, start
        self.name, self.timeout, self.setup_timeout = inner.name, inner.timeout, inner.setup_timeout

    def group_of(self, index: int) -> int:
        return self.inner.group_of(index + self.start)

    def make(self, seed: int, index: int) -> Input:
        return self.inner.make(seed, index + self.start)

    def execute(self, inp: Input) -> Verdict | None:
        return self.inner.execute(inp)


# --------------------------------------------------------------------------- the harness detects

class Fake(Campaign):
    """Input 0 is fine, input 1 rejected with a PTOError, input 2 misbehaves as ``mode``
    says, input 3 is fine again (in a fresh worker when 2 killed the last one)."""

    name = "fake"
    timeout = 1.5

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def make(self, seed: int, index: int) -> Input:
        return Input(index, f"input {index}", seed=seed)

    def execute(self, inp: Input) -> Verdict | None:
        if inp.index == 1:
            raise ParseError("PARSE_TOKEN", "rejected properly")
        if inp.index != 2:
            return None
        if self.mode == "raise":
            raise ValueError("not a PTOError")
        if self.mode == "hang":
            time.sleep(60)
        if self.mode == "abort":
            os.abort()
        if self.mode == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if self.mode == "exit":
            os._exit(3)
        if self.mode == "oob":
            canary = Canary()
            canary.view("y", np.zeros((4, 4), np.float32))
            canary.regions[0][1][PAD + 64] ^= 0xFF        # the byte just past the view's 64
            bad = canary.check()
            return Verdict("oob", detail=bad) if bad else None
        if self.mode == "strided":      # writes the column a strided view skips
            canary = Canary()
            canary.view("y", np.zeros((4, 4), np.float32), (32, 8))
            canary.regions[0][1][PAD + 32 + 4] ^= 0xFF    # row 1, the skipped column between 0 and 1
            bad = canary.check()
            return Verdict("oob", detail=bad) if bad else None
        return None

    def reproduce(self, inp: Input) -> dict[str, str | bytes]:
        return {".pto": inp.payload}


@pytest.mark.parametrize("mode,kind,detail", [
    ("raise", "exception", "ValueError: not a PTOError"),
    ("hang", "hang", "no result within"),
    ("abort", "crash", "SIGABRT"),
    ("segv", "crash", "SIGSEGV"),
    ("exit", "crash", "status 3"),
    ("oob", "oob", "canary byte(s) changed around %y"),
    ("strided", "oob", "canary byte(s) changed around %y"),
])
def test_harness_detects_each_finding_class(mode: str, kind: str, detail: str, tmp_path) -> None:  # noqa: ANN001
    report = run_campaign(Fake(mode), 4, seed=1, out_dir=str(tmp_path))
    assert report.inputs == 4 and report.ok == 2 and dict(report.codes) == {"PARSE_TOKEN": 1}
    assert [(f.index, f.kind) for f in report.findings] == [(2, kind)]
    assert detail in report.findings[0].detail
    assert not report.clean
    assert report.workers == (2 if kind in ("hang", "crash") else 1)   # the campaign went on
    files = sorted(os.listdir(tmp_path))
    assert files == [f"fake-s1-0000002-{kind}.pto", f"fake-s1-0000002-{kind}.txt"]
    assert (tmp_path / files[0]).read_text() == "input 2"


def test_canary_views_keep_values_and_strides() -> None:
    canary = Canary()
    x = np.arange(12, dtype=np.int16).reshape(3, 4)
    for strides in (None, (16, 4), (-8, 2), (0, 2), (2, 6)):
        v = canary.view("x", x if strides != (0, 2) else np.broadcast_to(x[:1], x.shape), strides)
        assert v.shape == x.shape and v.flags.writeable
        if strides not in ((0, 2),):
            assert (v == x).all()
        v[...] = v                      # writing inside the footprint is fine
    assert canary.check() is None


def test_cli_writes_json_and_exits_zero_when_clean(tmp_path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "r.json"
    assert main(["parse", "--count", "30", "--seed", "2", "--json", str(out), "--out", str(tmp_path / "f")]) == 0
    data = json.loads(out.read_text())
    assert data[0]["campaign"] == "parse" and data[0]["inputs"] == 30
    assert data[0]["findings"] == {"exception": 0, "hang": 0, "crash": 0, "oob": 0, "mismatch": 0}
    assert "campaign" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["nonsense"])


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_zero_row_call_runs(backend: str) -> None:
    """Minimised from the arguments campaign: %rows may be 0 (examples/vector_add.pto says
    "any value >= 0"), and numpy gives a (0, 1024) array zero strides; such a call must run
    and write nothing, not fail with RUNTIME_ARG_OVERLAP."""
    import openpto as pto
    exe = pto.compile(pto.load(os.path.join(os.path.dirname(__file__), "..", "examples", "vector_add.pto")),
                      backend=backend)
    a = np.zeros((0, 1024), np.float32)
    exe(a, a.copy(), np.zeros((0, 1024), np.float32), 0)
