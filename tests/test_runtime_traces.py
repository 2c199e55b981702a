"""runtime traces: the Chrome/Perfetto document (lanes, task events by label, dependency
arrows, ready-queue counters), the PNG swimlane, and the text summary's numbers on a
simulated run whose schedule is known by hand."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import openpto as pto
from openpto.runtime import TaskGraph, run
from openpto.runtime.summary import format_summary, summarise
from openpto.runtime.traces import chrome_document, write_chrome, write_swimlane_png

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def chain_and_one() -> TaskGraph:
    """t1 -> t2 (RAW on c) and an independent t3, all the same kernel and shapes."""
    exe = pto.compile(pto.load(str(ROOT / "examples" / "vector_add.pto")), backend="reference", profile="a3")
    a = np.ones((32, 1024), np.float32)
    c, d, e = (np.zeros_like(a) for _ in range(3))
    g = TaskGraph()
    g.task(exe, args=dict(a=a, b=a, c=c, rows=32), label="t1")
    g.task(exe, args=dict(a=c, b=a, c=d, rows=32), label="t2")
    g.task(exe, args=dict(a=a, b=a, c=e, rows=32), label="t3")
    g.join(after=[g.tasks[1], g.tasks[2]], label="end")
    return g


def test_simulated_summary_by_hand(chain_and_one: TaskGraph) -> None:
    rec = run(chain_and_one, "simulated", profile="a3")
    d = rec.runs[0].end - rec.runs[0].start
    assert d > 0 and all(abs((r.end - r.start) - d) < 1e-6 for r in rec.runs[:3])
    assert [r.lane for r in rec.runs] == ["AIV_0", "AIV_0", "AIV_1", None]
    s = summarise(rec)
    assert s.makespan == pytest.approx(2 * d)
    assert s.busy == pytest.approx({"AIV_0": 2 * d, "AIV_1": d})
    assert s.bubble == pytest.approx(1 - 3 * d / (2 * 2 * d))           # 25% of the two used lanes idle
    assert s.wait_preds == pytest.approx(d + 2 * d)                      # t2 ready at d, the join at 2d
    assert s.wait_core == pytest.approx(0.0)
    assert s.critical == [0, 1, 3] and s.critical_ns == pytest.approx(2 * d)
    text = format_summary(rec)
    assert "bubble ratio 25.0%" in text and "critical path: 3 task(s)" in text and "t1 -> t2 -> end" in text


def test_chrome_document(chain_and_one: TaskGraph, tmp_path: pathlib.Path) -> None:
    rec = run(chain_and_one, "embedded", workers=2)
    doc = chrome_document(rec)
    ev = doc["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
    xs = [e for e in ev if e["ph"] == "X"]
    assert sorted(e["name"] for e in xs) == ["end", "t1", "t2", "t3"]
    lanes = {procs[e["pid"]] for e in xs}
    assert lanes <= {"runtime worker_0", "runtime worker_1", "runtime joins"}
    starts, finishes = [e for e in ev if e["ph"] == "s"], [e for e in ev if e["ph"] == "f"]
    assert len(starts) == len(finishes) == 3                           # t1->t2, t2->end, t3->end
    assert sorted(e["name"] for e in starts) == ["RAW", "explicit", "explicit"]
    counters = [e for e in ev if e["ph"] == "C"]
    assert counters and procs[counters[0]["pid"]] == "ready queues"
    assert max(e["args"]["ReadyCount_total"] for e in counters) == 2   # t1 and t3 ready at once
    path = tmp_path / "t.json"
    write_chrome(str(path), rec)
    assert json.loads(path.read_text())["otherData"]["executor"] == "embedded"


def test_png_swimlane(chain_and_one: TaskGraph, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "s.png"
    write_swimlane_png(str(path), run(chain_and_one, "simulated"))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
