"""benchmarks/bench_operators.py run tiny (no timing asserted): two rows per case, a target line
per case; its numpy Lightning Indexer agrees with the test's golden; its check refuses a wrong
llvm result."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import openpto.frontend as pto
from openpto.operators import lightning_indexer as li

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_operators.py"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_op_lightning_indexer import check, make_inputs  # noqa: E402


def _load():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("bench_operators", PATH)
    module = importlib.util.module_from_spec(spec)   # type: ignore[arg-type]
    sys.modules.setdefault("bench_operators", module)
    spec.loader.exec_module(module)                  # type: ignore[union-attr]
    return module


bench = _load()


def test_quick_run_prints_the_table_and_the_targets(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--quick", "--only", "lightning"]) == 0
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    header, rows = table[0], table[1:]
    cases = [c for c in bench.CASES if "lightning" in c.operator]
    assert header.count("|") == 6 and len(rows) == 2 * len(cases)
    assert [r.split(" | ")[2] for r in rows] == ["numpy", "frontend, llvm"] * len(cases)
    assert all(float(r.split(" | ")[3]) > 0 for r in rows)
    targets = [line for line in out.splitlines() if line.startswith("target ")]
    assert len(targets) == len(cases) and all(t.endswith(("meets", "misses")) for t in targets)


@pytest.mark.parametrize("quant", [False, True])
def test_numpy_indexer_matches_the_golden(quant: bool) -> None:
    s = li.SHAPES["small"]
    x = make_inputs(s, [37, 320, 1], pto.DT_FP32, np.random.default_rng(5), quant)
    idx, val, _ = bench.np_indexer(s, x, quant)
    check(s, x, idx, val, quant, 1e-5)


def test_check_refuses_a_wrong_result() -> None:
    s = li.SHAPES["small"]
    x = bench._indexer_inputs(s, [100, 40], False, np.random.default_rng(0))
    idx, val, _ = bench.np_indexer(s, x, False)
    bench._indexer_check(s, x, False, (idx, val))
    wrong = idx.copy()
    wrong[0, 0, :2] = wrong[0, 0, 1::-1] if val[0, 0, 0] != val[0, 0, 1] else (wrong[0, 0, 0], 99)
    with pytest.raises(SystemExit, match="differs from numpy"):
        bench._indexer_check(s, x, False, (wrong, val))
