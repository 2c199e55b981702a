"""The frontend's calls as runtime task graphs: ``@jit(executor=..., policy=...)``.

Results are checked against numpy written here under every executor; the recorded runs pass
the runtime's verifier; tasks of one kernel on different tiles are independent and a consumer
waits only for the producers of its rows; traces carry the user's names on AIC / AIV lanes.
``regions_hold`` checks, task by task, that a kernel neither reads nor writes outside the
region its task declares (bytes outside are overwritten with other values first)."""
from __future__ import annotations

import functools
import json

import numpy as np
import pytest

import openpto.frontend as pto
from openpto.isa.diagnostics import PTOError
from openpto.runtime import RunRecord, TaskGraph, verify
from openpto.runtime.access import root_buffer
from openpto.runtime.traces import write_chrome, write_swimlane_png

from frontend_seeds import load_seed

EXECUTORS = ["sequential", "embedded", "simulated"]


def np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# --------------------------------------------------------------------------------------------
# programs (the seed examples at other sizes, a host loop, a matmul feeding a softmax)

M, N = 70, 100
N1, N2, DIM = 6, 3, 100


@functools.lru_cache(maxsize=None)
def _seed(name: str, **sizes: int):  # noqa: ANN202
    return load_seed(name, **sizes)


def seed1(**options):
    """examples/frontend/softmax.py at M x N, with these jit options."""
    return _seed("softmax", M=M, N=N).test_softmax.with_options(**options)


def seed2(**options):
    """examples/frontend/softmax_dynamic.py at (b, N1, N2, DIM), with these jit options."""
    return _seed("softmax_dynamic", N1=N1, N2=N2, DIM=DIM).softmax.with_options(**options)


Q, K, S = 64, 32, 96


def scores_softmax(**options):
    """P = softmax(q @ k^T): cube tasks per 32 x 32 block of the scores, vector tasks per rows."""
    @pto.jit(**options)
    def attn(q: pto.Tensor((Q, K), pto.DT_FP32), k: pto.Tensor((S, K), pto.DT_FP32)) -> pto.Tensor((Q, S), pto.DT_FP32):
        pto.set_cube_tile_shapes(32, 32, 32)
        with pto.semantic_label("SCORES"):
            s = pto.matmul(q, k, b_trans=True)
        pto.set_vec_tile_shapes(16, 96)
        with pto.semantic_label("PROBS"):
            p = pto.exp(s - pto.amax(s, -1, True))
            p = p / pto.sum(p, -1, True)
        return p
    return attn


def blocks(**options):
    """A loop the frontend keeps on the host (its body is two kernels): tasks per iteration."""
    @pto.jit(**options)
    def fn(x: pto.Tensor((pto.DYNAMIC, 64), pto.DT_FP32), out: pto.Tensor((pto.DYNAMIC, 64), pto.DT_FP32)):
        n = x.shape[0]
        pto.set_vec_tile_shapes(8, 64)
        for i in pto.loop(0, (n + 15) // 16, 1, name="L", idx_name="i"):
            v = pto.view(x, [16, 64], [i * 16, 0], valid_shape=[(n - i * 16).min(16), 64])
            pto.assemble(pto.exp(v) * 2.0, [i * 16, 0], out)
            w = pto.view(out, [16, 64], [i * 16, 0], valid_shape=[(n - i * 16).min(16), 64])
            pto.assemble(w + pto.amax(w, -1, True), [i * 16, 0], out)
    return fn


def windows(**options):
    """Column windows: a view at column 32 read by two grid kernels writing the two column
    halves of one output, one of them with a per-column broadcast operand."""
    @pto.jit(**options)
    def fn(x: pto.Tensor((64, 128), pto.DT_FP32), bias: pto.Tensor((64,), pto.DT_FP32),
           out: pto.Tensor((64, 128), pto.DT_FP32)):
        pto.set_vec_tile_shapes(16, 32)
        v = pto.view(x, [64, 64], [0, 32])
        pto.assemble(pto.exp(v) + bias, [0, 64], out)
        pto.assemble(v * 2.0, [0, 0], out)
    return fn


def check_record(fn, tasks: int | None = None) -> RunRecord:
    rec = fn.last_run
    assert isinstance(rec, RunRecord) and isinstance(rec.graph, TaskGraph)
    verify(rec)
    if tasks is not None:
        assert len(rec.graph) == tasks
    return rec


# --------------------------------------------------------------------------------------------
# results under every executor

@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("merge", [None, 1])
def test_seed1_under_every_executor(executor, merge):
    fn = seed1(executor=executor, profile="a3", merge=merge)
    x = rand(M, N)
    np.testing.assert_allclose(fn(x), np_softmax(x), rtol=1e-5, atol=1e-7)
    if executor == "sequential":
        assert fn.last_run is None
        return
    rec = check_record(fn, 1 if merge is None else 3)          # 70 rows in 32-row blocks
    if merge == 1:
        assert all(not p for p in rec.graph.preds)             # three row blocks: independent
        assert [t.label for t in rec.graph.tasks] == [f"k0_amax_sub_exp_sum_div_output[{i}:{i + 1}]"
                                                      for i in range(3)]


@pytest.mark.parametrize("executor", EXECUTORS)
def test_seed2_host_loop_tasks_per_iteration(executor):
    fn = seed2(executor=executor, profile="a3", merge=1)
    for b in (1, 3, 17):
        x = rand(b, N1, N2, DIM, seed=b)
        out = np.zeros_like(x)
        assert fn(x, out) is None
        np.testing.assert_allclose(out, np_softmax(x), rtol=1e-5, atol=1e-7)
        if executor != "sequential":
            rec = check_record(fn)
            labels = [t.label for t in rec.graph.tasks]
            assert len({lab.split(" ")[-1] for lab in labels}) == b      # idx=0 .. idx=b-1
            assert all(lab.split(" ")[-1].startswith("idx=") for lab in labels)


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("merge", [None, 1])
def test_matmul_softmax_under_every_executor(executor, merge):
    fn = scores_softmax(executor=executor, profile="a3", merge=merge)
    q, k = rand(Q, K, seed=1), rand(S, K, seed=2)
    np.testing.assert_allclose(fn(q, k), np_softmax(q.astype(np.float64) @ k.T.astype(np.float64)),
                               rtol=1e-4, atol=1e-6)
    if executor != "sequential":
        check_record(fn)


@pytest.mark.parametrize("executor", ["embedded", "simulated"])
@pytest.mark.parametrize("policy", ["lifo", "critical"])
def test_host_loop_kernels_and_policies(executor, policy):
    fn = blocks(executor=executor, policy=policy, merge=1, profile="a3")   # simulated: a3 kernels
    for n in (5, 40):
        x = rand(n, 64, seed=n)
        out = np.zeros_like(x)
        fn(x, out)
        e = np.exp(x.astype(np.float64)) * 2
        np.testing.assert_allclose(out, e + e.max(1, keepdims=True), rtol=1e-5)
        rec = check_record(fn)
        assert rec.policy == policy
        assert {lab.split(" ")[-1] for lab in (t.label for t in rec.graph.tasks)} == \
            {f"i={i}" for i in range((n + 15) // 16)}


def test_embedded_typed_cores_and_backends():
    from openpto.runtime.embedded import EmbeddedExecutor
    for backend in ("reference", "llvm"):
        fn = scores_softmax(executor=EmbeddedExecutor(cores={"cube": 1, "vector": 1}), profile="a3",
                            merge=1, backend=backend)
        q, k = rand(Q, K, seed=3), rand(S, K, seed=4)
        np.testing.assert_allclose(fn(q, k), np_softmax(q.astype(np.float64) @ k.T.astype(np.float64)),
                                   rtol=1e-4, atol=1e-6)
        rec = check_record(fn)
        for t in rec.graph.tasks:
            assert rec.lane_of(t).startswith(t.core)        # cube tasks on cube_0, vector on vector_0


# --------------------------------------------------------------------------------------------
# dependencies, regions, traces

def test_matmul_softmax_dependencies_follow_rows():
    """Each softmax row block waits for the matmul blocks of its rows only (and its own
    predecessors are matmul tasks); the matmul blocks are independent of each other."""
    fn = scores_softmax(executor="embedded", profile="a3", merge=1)
    q, k = rand(Q, K, seed=5), rand(S, K, seed=6)
    fn(q, k)
    g = check_record(fn).graph
    mm = [t for t in g.tasks if t.core == "cube"]
    sm = [t for t in g.tasks if t.core == "vector" and "PROBS" in t.label]
    assert len(mm) == (Q // 32) * (S // 32) and len(sm) == Q // 16
    assert all(not any(g.tasks[p].core == "cube" for p in g.preds[t.id]) for t in mm)
    for t in sm:
        preds = {p for p in g.preds[t.id] if g.tasks[p].core == "cube"}
        row = int(t.label.split("[")[1].split(":")[0])          # its 16-row block
        want = {m.id for m in mm if int(m.label.split("[")[1].split(":")[0]) // (S // 32) == row * 16 // 32}
        assert preds == want, (t.label, preds, want)


def _mark(task, name: str) -> np.ndarray:
    view = task.args[name]
    region = task.regions.get(name)
    return view if region is None else view[region]


def regions_hold(graph: TaskGraph, seed: int = 0) -> int:
    """Run the tasks one by one in program order; each twice from the same state: once as it is,
    once with every byte of its buffers outside its declared regions replaced by other values.
    The second run must leave those bytes alone and compute the same values inside. Returns how
    many bindings were narrowed (so a test can tell the check had something to check)."""
    rng = np.random.default_rng(seed)
    narrowed = 0
    for task in graph.tasks:
        names = [n for n, v in task.args.items() if isinstance(v, np.ndarray)]
        narrowed += len(task.regions)
        roots = {id(root_buffer(task.args[n])): root_buffer(task.args[n]) for n in names}
        before = {i: r.copy() for i, r in roots.items()}
        task.run()
        expected = {i: r.copy() for i, r in roots.items()}
        masks = {}
        for i, r in roots.items():
            r[...] = 0
        for n in names:
            _mark(task, n)[...] = 1
        for i, r in roots.items():
            masks[i] = r != 0
            r[...] = before[i]
            poison = (rng.standard_normal(r.shape) * 50 + 3).astype(r.dtype)
            r[~masks[i]] = poison[~masks[i]]
            before[i] = r.copy()
        task.run()
        for i, r in roots.items():
            inside, outside = masks[i], ~masks[i]
            assert np.array_equal(r[outside], before[i][outside]), f"{task.label} wrote outside its regions"
            assert np.array_equal(r[inside], expected[i][inside], equal_nan=True), \
                f"{task.label} read outside its regions"
            r[...] = expected[i]
    return narrowed


@pytest.mark.parametrize("program,args,profile", [
    (seed1, lambda: (rand(M, N),), "a3"),
    (seed1, lambda: (rand(M, N),), "cpu"),
    (scores_softmax, lambda: (rand(Q, K), rand(S, K)), "a3"),
    (scores_softmax, lambda: (rand(Q, K), rand(S, K)), "cpu"),
    (seed2, lambda: (rand(5, N1, N2, DIM), np.zeros((5, N1, N2, DIM), np.float32)), "a3"),
    (blocks, lambda: (rand(40, 64), np.zeros((40, 64), np.float32)), "cpu"),
    (windows, lambda: (rand(64, 128), rand(64), np.zeros((64, 128), np.float32)), "a3"),
])
@pytest.mark.parametrize("merge", [1, 2])
def test_task_regions_cover_what_kernels_touch(program, args, profile, merge):
    fn = program(executor="embedded", profile=profile, merge=merge)
    a = args()
    fn(*a)
    assert regions_hold(check_record(fn).graph) > 0


def test_grid_kernel_tiles_are_independent():
    """An elementwise kernel tiled both ways: with merge=1 each tile is a task of its own,
    narrowed to its rows and columns, so no two depend on each other."""
    @pto.jit(executor="embedded", merge=1, profile="a3")
    def scale(x: pto.Tensor((64, 128), pto.DT_FP32)) -> pto.Tensor((64, 128), pto.DT_FP32):
        pto.set_vec_tile_shapes(32, 32)
        return pto.exp(x) * 3.0 + x

    x = rand(64, 128)
    np.testing.assert_allclose(scale(x), np.exp(x.astype(np.float64)) * 3 + x, rtol=1e-5, atol=1e-5)
    g = check_record(scale, 8).graph
    assert not any(g.preds)
    assert regions_hold(g) == 16


@pytest.mark.parametrize("executor", EXECUTORS)
def test_column_windows_and_broadcasts(executor):
    fn = windows(executor=executor, profile="a3", merge=1)
    x, bias = rand(64, 128, seed=9), rand(64, seed=10)
    out = np.zeros_like(x)
    fn(x, bias, out)
    v = x[:, 32:96].astype(np.float64)
    np.testing.assert_allclose(out, np.concatenate([v * 2, np.exp(v) + bias], axis=1), rtol=1e-5, atol=1e-6)
    if executor != "sequential":
        g = check_record(fn).graph
        assert not any(g.preds)             # tiles of one kernel, and the two column halves: independent


def test_simulated_trace_has_user_labels_on_aic_and_aiv(tmp_path):
    fn = scores_softmax(executor="simulated", profile="a3", merge=1)
    fn(rand(Q, K), rand(S, K))
    rec = check_record(fn)
    lanes = {rec.lane_of(t) for t in rec.graph.tasks}
    assert any(lane.startswith("AIC_") for lane in lanes) and any(lane.startswith("AIV_") for lane in lanes)
    for t in rec.graph.tasks:
        assert rec.lane_of(t).startswith("AIC_" if t.core == "cube" else "AIV_")
    write_chrome(str(tmp_path / "t.json"), rec)
    names = {e.get("name") for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"]}
    assert any("SCORES" in str(n) for n in names) and any("PROBS" in str(n) for n in names)
    write_swimlane_png(str(tmp_path / "t.png"), rec)
    assert (tmp_path / "t.png").stat().st_size > 0


# --------------------------------------------------------------------------------------------
# options

def test_with_options_keeps_the_executor_and_the_compile():
    fn = seed1(executor="embedded", policy="lifo")
    other = fn.with_options(merge=1)
    assert (other.executor, other.policy) == ("embedded", "lifo")
    assert fn.with_options(executor="sequential").executor == "sequential"


@pytest.mark.parametrize("options,word", [({"executor": "threads"}, "executor"),
                                          ({"policy": "random"}, "policy"),
                                          ({"executor": 3}, "executor"),
                                          ({"executor": "simulated", "profile": "cpu"}, "simulated")])
def test_bad_executor_or_policy_is_front_option(options, word):
    with pytest.raises(PTOError) as e:
        seed1(**options)
    assert e.value.code == "FRONT_OPTION" and word in e.value.message


def test_a_failing_task_is_runtime_task_failed_naming_the_kernel():
    fn = seed1(executor="embedded", merge=1)
    fn(rand(M, N))
    rec = fn.last_run
    task = rec.graph.tasks[0]
    task.args[next(n for n, v in task.args.items() if isinstance(v, np.ndarray))] = None
    from openpto.runtime import run
    with pytest.raises(PTOError) as e:
        run(rec.graph)
    assert e.value.code == "RUNTIME_TASK_FAILED" and "k0_amax_sub_exp_sum_div_output" in e.value.message


# --------------------------------------------------------------------------------------------
# dask: the default client of the process (a LocalCluster of two worker processes)

def test_dask_executor_on_the_default_client():
    distributed = pytest.importorskip("distributed", reason="the dask extra (pip install 'openpto[dask]') "
                                                           "is not installed")
    fn = seed1(executor="dask", profile="a3", merge=1)
    with pytest.raises(PTOError) as e:
        fn(rand(M, N))
    assert e.value.code == "PTO_EXECUTOR" and "default dask client" in e.value.message
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            distributed.Client(cl):
        for _ in range(2):                     # three row blocks of one output, on two processes at once
            x = rand(M, N, seed=_)
            np.testing.assert_allclose(fn(x), np_softmax(x), rtol=1e-5, atol=1e-7)
            rec = check_record(fn, 3)
            assert {r.lane.split("_")[0] for r in rec.runs} == {"dask"}
        attn = scores_softmax(executor="dask", profile="a3", merge=1)
        q, k = rand(Q, K, seed=7), rand(S, K, seed=8)
        np.testing.assert_allclose(attn(q, k), np_softmax(q.astype(np.float64) @ k.T.astype(np.float64)),
                                   rtol=1e-4, atol=1e-6)
        check_record(attn)


def test_the_docs_running_section_runs(tmp_path, monkeypatch, capsys):
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "frontend.md").read_text()
    code = re.search(r"## Running: executors and traces.*?```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    ns: dict = {"__name__": "frontend_docs"}
    exec(compile(code, "docs/frontend.md", "exec"), ns)
    rec = ns["rec"]
    assert len(rec.graph) == 20 and "20 task(s) on simulated" in capsys.readouterr().out
    assert {rec.lane_of(t)[:3] for t in rec.graph.tasks} == {"AIC", "AIV"}
    assert (tmp_path / "attn.json").exists() and (tmp_path / "attn.png").exists()
    assert all(("SCORES" in t.label) == (t.core == "cube") for t in rec.graph.tasks)
