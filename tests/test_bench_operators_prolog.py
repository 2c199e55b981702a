"""benchmarks/bench_operators.py's Indexer Prolog rows run tiny (no timing asserted): two rows per
case and a target line each; its numpy Indexer Prolog agrees with the test's golden; its check
refuses a wrong llvm result."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from openpto.operators import indexer_prolog as ip

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_operators.py"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_op_indexer_prolog import check_plain, check_quant  # noqa: E402


def _load():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("bench_operators", PATH)
    module = importlib.util.module_from_spec(spec)   # type: ignore[arg-type]
    sys.modules.setdefault("bench_operators", module)
    spec.loader.exec_module(module)                  # type: ignore[union-attr]
    return module


bench = _load()
SMALL = ip.SHAPES["small"]


def test_quick_run_prints_the_prolog_rows(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--quick", "--only", "prolog"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| indexer prolog")]
    cases = [c for c in bench.CASES if c.operator == "indexer prolog"]
    assert len(cases) >= 2 and len(rows) == 2 * len(cases)
    assert [r.split(" | ")[2] for r in rows] == ["numpy", "frontend, llvm"] * len(cases)
    assert all(float(r.split(" | ")[3]) > 0 for r in rows)
    targets = [line for line in out.splitlines() if line.startswith("target indexer prolog")]
    assert len(targets) == len(cases) and all(t.endswith(("meets", "misses")) for t in targets)


@pytest.mark.parametrize("quant", [True, False])
def test_numpy_prolog_matches_the_golden(quant: bool) -> None:
    args = bench._prolog_inputs(SMALL, 7, quant, np.random.default_rng(3))
    got = bench.np_prolog(SMALL, args, quant)
    if quant:
        check_quant(SMALL, got, args)
    else:
        check_plain(SMALL, "bf16", got, args)


def test_check_refuses_a_wrong_result() -> None:
    args = bench._prolog_inputs(SMALL, 5, True, np.random.default_rng(1))
    right = bench.np_prolog(SMALL, args, True)
    bench._prolog_check(SMALL, args, True, right)
    wrong = list(right)
    wrong[2] = right[2].copy()
    k8 = right[2][0, :3].astype(np.int32)
    wrong[2][0, :3] = np.where(k8 > 0, k8 - 2, k8 + 2)       # two units off
    with pytest.raises(SystemExit, match="differs from numpy"):
        bench._prolog_check(SMALL, args, True, tuple(wrong))
    scaled = list(right)
    scaled[4] = (right[4].astype(np.float32) * 1.1).astype(np.float16)
    with pytest.raises(SystemExit, match="differs from numpy"):
        bench._prolog_check(SMALL, args, True, tuple(scaled))
