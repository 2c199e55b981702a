"""benchmarks/bench_frontend.py run tiny (no timing asserted): one row per case and
implementation, every target line marked, one compile for the three batch sizes."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_frontend.py"


def _load():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("bench_frontend", PATH)
    module = importlib.util.module_from_spec(spec)   # type: ignore[arg-type]
    sys.modules.setdefault("bench_frontend", module)
    spec.loader.exec_module(module)                  # type: ignore[union-attr]
    return module


bench = _load()


def test_quick_run_prints_the_table_and_the_targets(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    header, rows = table[0], table[1:]
    assert header.count("|") == 6 and all(r.count("|") == 6 for r in rows)
    cases = [r.split(" | ")[0].lstrip("| ") for r in rows]
    impls = [r.split(" | ")[1] for r in rows]
    assert sum(c.startswith("softmax 256x1024") for c in cases) == 3
    assert sum(c.startswith("layernorm") for c in cases) == 3
    assert sum(c.startswith("seed 2") for c in cases) == 6 and {"b=1", "b=3", "b=17"} <= {
        c.split()[3] for c in cases if c.startswith("seed 2")}
    assert sum(i.startswith("numpy") for i in impls) == 5
    assert sum(i.startswith("hand-written") for i in impls) == 2
    # the frontend rows relate to the hand-written kernel of the same case
    for r in rows:
        cols = [c.strip() for c in r.strip("|").split("|")]
        assert float(cols[2]) > 0
        assert cols[4].endswith("x") == (cols[1].startswith("frontend") and not cols[0].startswith("seed"))
    assert "seed 2: 1 compile(s) for b = 1, 3, 17" in out
    targets = [line for line in out.splitlines() if line.startswith("target ")]
    assert len(targets) == 3 and all(t.endswith(("meets", "misses")) for t in targets)


def test_checked_refuses_a_wrong_result() -> None:
    import numpy as np
    with pytest.raises(SystemExit, match="differs from numpy"):
        bench.checked(np.zeros(4), np.ones(4), "case")
    bench.checked(np.ones(4), np.ones(4), "case")
