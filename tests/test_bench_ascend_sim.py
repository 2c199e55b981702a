"""benchmarks/bench_ascend_sim.py run tiny (no timing asserted): every kernel gets every mode's row,
the two backends count the same instructions, and ascend_sim's outputs equal the reference's."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_ascend_sim.py"


def _load():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("bench_ascend_sim", PATH)
    module = importlib.util.module_from_spec(spec)   # type: ignore[arg-type]
    sys.modules.setdefault("bench_ascend_sim", module)
    spec.loader.exec_module(module)                  # type: ignore[union-attr]
    return module


bench = _load()


def test_quick_run_prints_one_row_per_kernel_and_mode(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == 3 * 5
    kernels = {r.split(" | ")[0] for r in rows}
    assert len(kernels) == 3
    for kernel in kernels:
        modes = [r.split(" | ")[1] for r in rows if r.split(" | ")[0] == kernel]
        assert modes == [m for m, _, _, _ in bench.MODES]
        counts = {r.split(" | ")[2] for r in rows if r.split(" | ")[0] == kernel}
        assert len(counts) == 1 and int(counts.pop()) > 0          # every mode ran the same instructions
    assert "outputs equal the reference's: yes" in out
    assert sum("meets" in r or "misses" in r for r in rows) == 3 * 3   # the target rows are marked


def test_measured_rows_check_values_only_where_values_are_computed() -> None:
    rows = bench.measure(True, "a3", 1)
    by_mode = {(r["kernel"], r["mode"]): r for r in rows}
    for (kernel, mode), r in by_mode.items():
        if mode == "reference":
            assert r["same"] is None and r["ratio"] == 1.0
        elif "timing only" in mode:
            assert r["same"] is None and r["cycles"] > 0
        else:
            assert r["same"] is True and r["cycles"] > 0
    # timing-only and values runs of one kernel simulate the same cycles
    for kernel in {k for k, _ in by_mode}:
        cycles = {r["cycles"] for (k, m), r in by_mode.items() if k == kernel and m != "reference"}
        assert len(cycles) == 1


def test_verdicts_follow_the_targets() -> None:
    assert bench.verdict({"target": "timing", "rate": 150_000.0, "ratio": 9.0}).startswith("meets")
    assert bench.verdict({"target": "timing", "rate": 50_000.0, "ratio": 0.1}).startswith("misses")
    assert bench.verdict({"target": "values", "rate": 1.0, "ratio": 1.4}).startswith("meets")
    assert bench.verdict({"target": "values", "rate": 1e9, "ratio": 1.6}).startswith("misses")
    assert bench.verdict({"target": "", "rate": 1.0, "ratio": 1.0}) == ""
