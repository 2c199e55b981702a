"""The README's Python snippets and its command-line block run as written (from the
repository root, or a copy of it for commands that write files)."""
from __future__ import annotations

import pathlib
import re
import shlex
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_block_runs(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    exec(compile(code, "README.md", "exec"), {})


def _command_block() -> list[str]:
    """The commands of the README's 'Command line' block, continuation lines joined."""
    section = (ROOT / "README.md").read_text().split("## Command line\n", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    return [c for c in block.replace("\\\n", " ").splitlines() if c.strip()]


COMMANDS = _command_block()


def test_the_command_block_is_all_pto_commands() -> None:
    assert len(COMMANDS) >= 10 and all(c.startswith("pto ") for c in COMMANDS)
    assert {c.split()[1] for c in COMMANDS} == {"isa", "asm", "dis", "fmt", "check", "backends", "run",
                                                "conformance", "sync"}


def test_readme_commands_run_as_written(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Each command, in order, in a copy of the repository's examples (what they write
    lands there, not in the checkout), exits 0."""
    from openpto.cli import main

    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    for command in COMMANDS:
        argv = shlex.split(command, comments=True)
        target = None
        if ">" in argv:
            argv, target = argv[:argv.index(">")], argv[argv.index(">") + 1]
        rc = main(argv[1:])
        out, err = capsys.readouterr()
        assert rc == 0, f"{command}\n{err}"
        if target:
            (tmp_path / target).write_text(out)
    for made in ("softmax.ptobc", "softmax_fmt.pto", "softmax_sync.pto", "x.npy", "y.npy", "trace.json", "timeline.png",
                 "r.json", "r.md", "docs/isa/TROWSUM.md"):
        assert (tmp_path / made).stat().st_size > 0, made
    assert "//" in (tmp_path / "softmax_fmt.pto").read_text()          # fmt kept the comments


def test_nothing_refers_outside_the_repository() -> None:
    """Docs, code and examples stand alone: no path into a sibling folder of the repository and
    no outside planning file of any spelling (what users need is in docs/architecture.md)."""
    import subprocess
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    sibling, plan = "sha" + "red", "de" + "sign"         # spelled in pieces: this file names none
    outside = re.compile(re.escape(f"../{sibling}") + "|" + plan + r"\.md|" + plan + " decision",
                         re.IGNORECASE)
    hits = [f"{name}:{no}" for name in files
            for no, line in enumerate((ROOT / name).read_text(errors="replace").splitlines(), 1)
            if outside.search(line)]
    assert hits == []
