"""``pto graph``: the example graph file runs on each executor and gives numpy's diamond;
a broken file is PTO_GRAPH_FILE (exit 2), never a traceback; the MPMD example runs."""
from __future__ import annotations

import json
import pathlib
import shutil
import sys

import numpy as np
import pytest

from openpto.cli import main
from openpto.isa.diagnostics import PTOError

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIAMOND = ROOT / "examples" / "graph_diamond.json"


@pytest.mark.parametrize("extra", [["--executor", "embedded", "--workers", "2"],
                                   ["--executor", "simulated", "--policy", "critical"],
                                   ["--executor", "embedded", "--policy", "lifo", "--backend", "llvm"]])
def test_graph_file_runs_the_diamond(extra: list[str], tmp_path: pathlib.Path, capsys) -> None:
    outs = {n: tmp_path / f"{n}.npy" for n in ("a", "b", "c4")}
    rc = main(["graph", str(DIAMOND), "--seed", "3", "--trace", str(tmp_path / "t.json"),
               "--timeline", str(tmp_path / "t.png"), *extra, *[f"--out={n}={p}" for n, p in outs.items()]])
    text = capsys.readouterr().out
    assert rc == 0 and "6 task(s)" in text and "verified:" in text
    a, b, c4 = (np.load(outs[n]) for n in ("a", "b", "c4"))
    c1 = a + b
    np.testing.assert_allclose(c4, (c1 + a) + (c1 + b), rtol=1e-6)
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert (tmp_path / "t.png").stat().st_size > 0


def _write(tmp_path: pathlib.Path, doc: object) -> str:
    p = tmp_path / "g.json"
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    (tmp_path / "vector_add.pto").write_text((ROOT / "examples" / "vector_add.pto").read_text())
    return str(p)


KERNELS = {"add": {"file": "vector_add.pto"}}
BUFS = {"a": {"shape": [32, 1024]}, "c": {"shape": [32, 1024]}}
TASK = {"kernel": "add", "args": {"a": "a", "b": "a", "c": "c", "rows": 32}}


@pytest.mark.parametrize("doc,code", [
    ("{not json", "PTO_GRAPH_FILE"),
    ([], "PTO_GRAPH_FILE"),
    ({"tasks": [], "extra": 1}, "PTO_GRAPH_FILE"),
    ({"kernels": {"add": {}}, "tasks": []}, "PTO_GRAPH_FILE"),
    ({"kernels": KERNELS, "buffers": {"a": {"shape": "x"}}, "tasks": []}, "PTO_GRAPH_FILE"),
    ({"kernels": KERNELS, "buffers": {"a": {"shape": [2], "init": "noise"}}, "tasks": []}, "PTO_GRAPH_FILE"),
    ({"kernels": KERNELS, "buffers": BUFS, "tasks": [{**TASK, "kernel": "mul"}]}, "PTO_GRAPH_FILE"),
    ({"kernels": KERNELS, "buffers": BUFS, "tasks": [{**TASK, "args": {**TASK["args"], "c": "d"}}]}, "PTO_GRAPH_FILE"),
    ({"kernels": KERNELS, "buffers": BUFS, "tasks": [{**TASK, "args": {**TASK["args"], "c": "c[0:x]"}}]},
     "PTO_GRAPH_FILE"),
    ({"kernels": KERNELS, "buffers": BUFS, "tasks": [{**TASK, "after": ["nobody"]}]}, "PTO_GRAPH_FILE"),
    ({"kernels": KERNELS, "buffers": BUFS, "tasks": [{**TASK, "colour": 1}]}, "PTO_GRAPH_FILE"),
    ({"kernels": KERNELS, "buffers": BUFS, "tasks": [{**TASK, "regions": {"c": "a:b"}}]}, "PTO_GRAPH_FILE"),
    ({"kernels": KERNELS, "buffers": BUFS, "tasks": [{"label": "j", "args": {}}]}, "PTO_GRAPH_FILE"),
    ({"kernels": KERNELS, "buffers": BUFS, "tasks": [{**TASK, "args": {**TASK["args"], "c": "c[:, 0:512]"}}]},
     "RUNTIME_ARG_SHAPE"),
    ({"kernels": KERNELS, "buffers": BUFS, "tasks": [{**TASK, "args": {**TASK["args"], "c": "c[0:16]"}}]},
     "RUNTIME_TASK_FAILED"),
    ({"kernels": KERNELS, "buffers": BUFS, "tasks": [{**TASK, "label": "x"}, {**TASK, "label": "y", "after": ["x"]},
                                                     {"label": "z", "after": ["y"]}]}, None),
])
def test_bad_graph_files_are_diagnostics(doc, code, tmp_path: pathlib.Path, capsys) -> None:
    rc = main(["graph", _write(tmp_path, doc)])
    err = capsys.readouterr().err
    if code is None:
        assert rc == 0
    else:
        assert rc == 2 and code in err and "Traceback" not in err


def test_bad_command_line_values(tmp_path: pathlib.Path, capsys) -> None:
    for extra, code in ((["--executor", "gpu"], "PTO_EXECUTOR"), (["--policy", "random"], "PTO_EXECUTOR"),
                        (["--out", "nothing"], "PTO_ARG"), (["--out", "zz=x.npy"], "PTO_ARG"),
                        (["--executor", "simulated", "--sim-profile", "cpu"], "PTO_EXECUTOR")):
        assert main(["graph", str(DIAMOND), *extra]) == 2
        assert code in capsys.readouterr().err


def test_the_mpmd_example_runs_and_checks_itself(tmp_path: pathlib.Path, capsys) -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import mpmd_softmax
    finally:
        sys.path.remove(str(ROOT / "examples"))
    mpmd_softmax.main(["--png-dir", str(tmp_path), "--trace", str(tmp_path / "t.json")])
    out = capsys.readouterr().out
    assert "== embedded: 32 cube + 32 vector tasks, 64 derived edges" in out
    assert "== simulated: 32 cube + 32 vector tasks" in out and "simulated on a3" in out
    assert (tmp_path / "runtime_mpmd_a3.png").exists() and (tmp_path / "runtime_mpmd_embedded.png").exists()


def test_the_docs_python_block_and_graph_file_run(tmp_path: pathlib.Path, monkeypatch, capsys) -> None:
    import re
    text = (ROOT / "docs" / "runtime.md").read_text()
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    for code in re.findall(r"```python\n(.*?)```", text, re.S):
        exec(compile(code, "docs/runtime.md", "exec"), {})
    assert (tmp_path / "graph.json").exists() and (tmp_path / "graph.png").exists()
    doc = re.findall(r"```json\n(.*?)```", text, re.S)[0]
    (tmp_path / "g.json").write_text(doc)
    (tmp_path / "vector_add.pto").write_text((ROOT / "examples" / "vector_add.pto").read_text())
    assert main(["graph", str(tmp_path / "g.json"), "--executor", "simulated"]) == 0
    assert "verified:" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# pto run FILE --kernel a --kernel b: a module's kernels in order as a task graph

def _two_kernels(tmp_path: pathlib.Path) -> str:
    """vector_add (c = a + b) then softmax reading c (its %x renamed): they share %c and %rows."""
    add = (ROOT / "examples" / "vector_add.pto").read_text()
    soft = (ROOT / "examples" / "softmax.pto").read_text().replace("%x", "%c")
    p = tmp_path / "two.pto"
    p.write_text(add + "\n" + soft)
    return str(p)


ROWS = ["--arg", "rows=64"] + [f"--shape={n}=64x1024" for n in ("a", "b", "c", "y")]


@pytest.mark.parametrize("extra", [[], ["--executor", "embedded", "--workers", "2", "--policy", "lifo"],
                                   ["--executor", "simulated", "--profile", "a3", "--backend", "llvm"]])
def test_run_several_kernels_as_a_task_graph(extra: list[str], tmp_path: pathlib.Path, capsys) -> None:
    outs = {n: tmp_path / f"{n}.npy" for n in ("a", "b", "c", "y")}
    rc = main(["run", _two_kernels(tmp_path), "--kernel", "vector_add", "--kernel", "softmax", "--random",
               *ROWS, "--trace", str(tmp_path / "t.json"), "--timeline", str(tmp_path / "t.png"), *extra,
               *[f"--out={n}={p}" for n, p in outs.items()]])
    text = capsys.readouterr().out
    assert rc == 0 and "2 task(s)" in text and "verified:" in text
    if "simulated" in extra:
        assert "AIV_0" in text and "simulated on a3" in text
    a, b, c, y = (np.load(outs[n]) for n in ("a", "b", "c", "y"))
    assert not np.array_equal(a, b)                                  # each array drawn on its own
    np.testing.assert_allclose(c, a + b, rtol=1e-6)
    s = (a + b).astype(np.float64)
    e = np.exp(s - s.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    names = {e.get("name") for e in events}
    assert {"vector_add", "softmax"} <= names and any(e.get("ph") == "s" for e in events)   # the RAW arrow
    assert (tmp_path / "t.png").stat().st_size > 0


def test_run_one_kernel_twice_and_on_an_executor(tmp_path: pathlib.Path, capsys) -> None:
    a = np.arange(32 * 1024, dtype=np.float32).reshape(32, 1024)
    np.save(tmp_path / "a.npy", a)
    c = tmp_path / "c.npy"
    rc = main(["run", str(ROOT / "examples" / "vector_add.pto"), "--kernel", "vector_add", "--kernel",
               "vector_add", "--arg", f"a={tmp_path / 'a.npy'}", "--arg", f"b={tmp_path / 'a.npy'}",
               "--arg", "rows=32", "--zeros", "--shape", "c=32x1024", "--out", f"c={c}"])
    text = capsys.readouterr().out
    assert rc == 0 and "vector_add#1 -> vector_add#2" in text          # the critical path: WAW on c
    np.testing.assert_array_equal(np.load(c), 2 * a)
    rc = main(["run", str(ROOT / "examples" / "vector_add.pto"), "--executor", "simulated", "--random",
               "--arg", "rows=32", *[f"--shape={n}=32x1024" for n in "abc"]])
    assert rc == 0 and "1 task(s) on simulated" in capsys.readouterr().out


@pytest.mark.parametrize("extra,code", [
    (["--arg", "nothing=1"], "PTO_ARG"),
    (["--shape", "zz=2x2"], "PTO_ARG"),
    (["--compare-with", "reference"], "PTO_ARG"),
    (["--executor", "gpu"], "PTO_EXECUTOR"),
    (["--policy", "random"], "PTO_EXECUTOR"),
    (["--out", "nothing=x.npy"], "PTO_ARG"),
    (["--kernel", "missing"], "PTO_KERNEL"),
])
def test_run_task_graph_errors_are_diagnostics(extra: list[str], code: str, tmp_path: pathlib.Path, capsys) -> None:
    rc = main(["run", _two_kernels(tmp_path), "--kernel", "vector_add", "--kernel", "softmax", "--random",
               *ROWS, *extra])
    err = capsys.readouterr().err
    assert rc == 2 and code in err and "Traceback" not in err


def test_run_task_graph_needs_every_value(tmp_path: pathlib.Path, capsys) -> None:
    rc = main(["run", _two_kernels(tmp_path), "--kernel", "vector_add", "--kernel", "softmax", "--arg", "rows=64"])
    err = capsys.readouterr().err
    assert rc == 2 and "PTO_ARG" in err and "--random" in err


def _task(**kw):
    return {**TASK, **kw}


@pytest.mark.parametrize("doc,where", [
    ({"buffers": {"a": {"shape": [-1, 4]}}, "tasks": []}, "buffer 'a' shape"),
    ({"buffers": {"a": {"shape": "64"}}, "tasks": []}, "buffer 'a' shape"),
    ({"buffers": {"a": {"shape": [2.7]}}, "tasks": []}, "buffer 'a' shape"),
    ({"buffers": {"a": {"shape": [10 ** 6, 10 ** 7], "init": "ones"}}, "tasks": []}, "buffer 'a'"),
    ({"buffers": {"a": {"shape": [4], "dtype": "float99"}}, "tasks": []}, "buffer 'a' dtype"),
    ({"buffers": BUFS, "tasks": [_task(after=5)]}, "task 0 after"),
    ({"buffers": BUFS, "tasks": [_task(label="top"), _task(label="x", after="top")]}, "task 1 after"),
    ({"buffers": BUFS, "tasks": [_task(after=[["t"]])]}, "task 0 after"),
    ({"buffers": BUFS, "tasks": [_task(label=["x"])]}, "task 0 label"),
    ({"buffers": BUFS, "tasks": [{"label": 5}]}, "task 0 label"),
    ({"buffers": BUFS, "tasks": [_task(label="x"), _task(label="x")]}, "task 1 label"),
    ({"buffers": BUFS, "tasks": [_task(kernel=["add"])]}, "task 0 kernel"),
    ({"buffers": BUFS, "tasks": [_task(reads=5)]}, "task 0 reads"),
    ({"kernels": {"add": {"file": "vector_add.pto", "kernel": 5}}, "buffers": BUFS, "tasks": []}, "kernel 'add' kernel"),
    ({"kernels": {"add": {"file": "vector_add.pto", "kernel": "nope"}}, "buffers": BUFS, "tasks": []}, "kernel 'add'"),
    ({"kernels": {"add": {"file": 5}}, "buffers": BUFS, "tasks": []}, "kernel 'add' file"),
    (None, "the file"),
])
def test_malformed_graph_files_name_where(doc, where, tmp_path: pathlib.Path) -> None:
    from openpto.runtime.graphfile import load_graph
    shutil.copy(ROOT / "examples" / "vector_add.pto", tmp_path / "vector_add.pto")
    path = tmp_path / "g.json"
    path.write_text("[" * 100000 + "]" * 100000 if doc is None else json.dumps({"kernels": KERNELS, **doc}))
    with pytest.raises(PTOError) as e:
        load_graph(str(path))
    assert e.value.code == "PTO_GRAPH_FILE" and e.value.message.startswith(where + ":"), e.value.message


def test_graph_file_random_init_per_dtype_and_notes_on_lower_errors(tmp_path: pathlib.Path) -> None:
    from openpto.runtime.graphfile import load_graph
    shutil.copy(ROOT / "examples" / "vector_add.pto", tmp_path / "vector_add.pto")
    path = tmp_path / "g.json"
    bufs = {n: {"shape": [256], "dtype": n, "init": "random"} for n in ("int32", "uint8", "int8", "bool", "float16")}
    path.write_text(json.dumps({"buffers": bufs, "tasks": []}))
    got = load_graph(str(path), seed=3).buffers
    for n in ("int32", "uint8", "int8"):
        assert got[n].dtype == np.dtype(n) and got[n].min() >= 0 and got[n].max() < 100
        assert len(np.unique(got[n])) > 20                     # real random integers, not all zero
    assert got["bool"].dtype == bool and 0 < got["bool"].sum() < 256
    assert 0 <= got["float16"].min() and got["float16"].max() < 1 and len(np.unique(got["float16"])) > 20
    path.write_text(json.dumps({"kernels": KERNELS, "buffers": BUFS, "tasks": [_task(core="gpu")]}))
    with pytest.raises(PTOError) as e:                         # the graph's own code, and where in the file
        load_graph(str(path))
    assert e.value.code == "PTO_TASK" and any("task 0" in n for n in e.value.notes)


def test_workers_only_where_they_mean_something(capsys) -> None:
    for extra in (["--executor", "simulated", "--workers", "4"],
                  ["--executor", "dask", "--scheduler", "tcp://127.0.0.1:1", "--workers", "3"]):
        assert main(["graph", str(DIAMOND), *extra]) == 2
        err = capsys.readouterr().err
        assert "PTO_ARG" in err and "--workers" in err


def test_simulated_core_counts_must_be_positive() -> None:
    from openpto.runtime.simulated import SimulatedExecutor
    assert SimulatedExecutor("a3").cores == {"cube": 24, "vector": 48, "host": 1}
    assert SimulatedExecutor("a3", cube_cores=2).cores["cube"] == 2
    for bad in ({"cube_cores": 0}, {"vector_cores": 0}, {"host_cores": 0}, {"cube_cores": -1}):
        with pytest.raises(PTOError) as e:
            SimulatedExecutor("a3", **bad)
        assert e.value.code == "PTO_EXECUTOR"
