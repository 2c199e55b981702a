"""The sample output in docs/backends.md is what the commands print: each ```console block
starting with ``$ pto ...`` is run from the repository root and compared line by line, with
numbers (timings, measured differences) and their exact spelling set aside."""
from __future__ import annotations

import pathlib
import re
import shlex

import pytest

from openpto.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "backends.md"
SAMPLES = re.findall(r"```console\n\$ (pto [^\n]*)\n(.*?)```", DOC.read_text(), re.S)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def shape(text: str) -> list[str]:
    """Lines with every number replaced by '#' and runs of spaces (table columns) collapsed."""
    return [re.sub(r" +", " ", NUMBER.sub("#", line)).rstrip() for line in text.splitlines()]


def test_there_are_samples() -> None:
    assert [c.split()[1] for c, _ in SAMPLES] == ["backends", "run"]


@pytest.mark.parametrize("command, printed", SAMPLES, ids=[c.split()[1] for c, _ in SAMPLES])
def test_sample_output_matches_the_command(command: str, printed: str, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    rc = main(shlex.split(command)[1:])
    out = capsys.readouterr().out
    assert rc == 0
    got = shape(out)
    if command == "pto backends":        # other tests may register extra backends in-process
        got = [line for line in got if line.split()[0] in {"backend", "ascend_sim", "llvm", "reference"}]
    assert got == shape(printed)
