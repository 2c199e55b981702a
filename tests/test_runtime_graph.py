"""runtime.graph: what a task reads and writes (from the kernel's operand roles), its byte
ranges, the dependencies derived from them, explicit edges, cycles and bad input."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError
from openpto.runtime import TaskGraph, problems, run
from openpto.runtime.access import array_span, kernel_access, kernel_core_type

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def add() -> pto.backends.Executable:
    return pto.compile(pto.load(str(ROOT / "examples" / "vector_add.pto")), backend="reference", profile="a3")


def test_reads_and_writes_come_from_operand_roles() -> None:
    va = pto.load(str(ROOT / "examples" / "vector_add.pto")).kernel()
    assert kernel_access(va) == ({"a", "b"}, {"c"})
    gemm = pto.load(str(ROOT / "examples" / "gemm.pto")).kernel()
    assert kernel_access(gemm) == ({"a", "b"}, {"c"})


def test_core_type_from_pipes_and_locations() -> None:
    assert kernel_core_type(pto.load(str(ROOT / "examples" / "gemm.pto")).kernel()) == "cube"
    assert kernel_core_type(pto.load(str(ROOT / "examples" / "softmax.pto")).kernel()) == "vector"


def test_span_of_a_view_is_its_address_range_in_the_base() -> None:
    x = np.zeros((8, 1024), np.float32)
    top, bottom = array_span(x[:4], "x"), array_span(x[4:], "x")
    assert top.lo == array_span(x, "x").lo == x.ctypes.data and bottom.hi == array_span(x, "x").hi
    assert top.hi - top.lo == 4 * 1024 * 4 and top.hi == bottom.lo
    assert not top.overlaps(bottom) and top.overlaps(array_span(x[3:5], "x"))
    assert not top.overlaps(array_span(np.zeros((8, 1024), np.float32)[:4], "y"))   # another buffer


def test_column_blocks_are_independent_overlapping_strided_views_are_not() -> None:
    x = np.zeros((64, 1024), np.float32)
    left, right = array_span(x[:, :512], "x"), array_span(x[:, 512:], "x")
    assert left.hi > right.lo                                   # the ranges interleave ...
    assert not left.overlaps(right) and not right.overlaps(left)  # ... but share no element
    assert left.overlaps(array_span(x[:, 500:600], "x")) and left.overlaps(array_span(x[3:5], "x"))
    g = TaskGraph()
    w = [g.host(lambda x: None, dict(x=x[:, j:j + 256]), writes=["x"], reads=[]) for j in range(0, 1024, 256)]
    r = g.host(lambda x: None, dict(x=x[:, 200:300]), reads=["x"], writes=[])
    assert [g.preds[t.id] for t in w] == [{}, {}, {}, {}]
    assert g.preds[r.id] == {w[0].id: "RAW", w[1].id: "RAW"}


def test_aliases_through_other_python_objects_are_dependencies() -> None:
    """One buffer reached through objects whose ``.base`` chains never meet: the dependency
    (and the verifier) follow the addresses, not the objects."""
    a = np.zeros(8, np.float32)
    ba = bytearray(32)
    aliases = [
        (a, np.lib.stride_tricks.as_strided(a, shape=(8,), strides=(4,))),
        (a, np.lib.stride_tricks.sliding_window_view(a, 3)),
        (np.frombuffer(ba, np.float32), np.frombuffer(ba, np.float32)),
        (a, np.asarray(memoryview(a))),
        (a[::2], np.asarray(memoryview(a))[2:3]),               # a strided view and a dense alias
    ]
    for first, second in aliases:
        g = TaskGraph()
        w = g.host(lambda out: None, {"out": first}, writes=["out"], reads=[])
        r = g.host(lambda src: None, {"src": second}, reads=["src"], writes=[])
        assert g.preds[r.id] == {w.id: "RAW"}, (first, second)
        g2 = TaskGraph(derive=False)                           # the verifier sees the race too
        g2.host(lambda out: None, {"out": first}, writes=["out"], reads=[])
        g2.host(lambda src: None, {"src": second}, reads=["src"], writes=[])
        assert [p.code for p in problems(run(g2, "embedded", workers=1))] == ["ORDER_TASK_RACE"]
    g = TaskGraph()                                            # an alias missing the element: independent
    g.host(lambda out: None, {"out": a[::2]}, writes=["out"], reads=[])
    r = g.host(lambda src: None, {"src": np.asarray(memoryview(a))[1:2]}, reads=["src"], writes=[])
    assert g.preds[r.id] == {}


def test_an_alias_reader_sees_the_write_under_every_policy() -> None:
    a, dst = np.zeros(8, np.float32), np.zeros(8, np.float32)
    alias = np.lib.stride_tricks.as_strided(a, shape=(8,), strides=(4,))

    def write(out: np.ndarray) -> None:
        out[:] = 1

    def copy(src: np.ndarray, dst: np.ndarray) -> None:
        dst[:] = src

    g = TaskGraph()
    g.host(write, {"out": a}, writes=["out"], reads=[])
    g.host(copy, {"src": alias, "dst": dst}, reads=["src"], writes=["dst"])
    for policy in ("fifo", "lifo"):
        a[:], dst[:] = 0, 0
        run(g, "embedded", policy, workers=1)
        np.testing.assert_array_equal(dst, np.ones(8, np.float32))


def test_raw_war_waw_on_overlapping_bytes_only(add: pto.backends.Executable) -> None:
    a, b, c = (np.zeros((64, 1024), np.float32) for _ in range(3))
    d = np.zeros((64, 1024), np.float32)
    g = TaskGraph()
    w_top = g.task(add, args=dict(a=a[:32], b=b[:32], c=c[:32], rows=32))      # writes c top
    w_bot = g.task(add, args=dict(a=a[32:], b=b[32:], c=c[32:], rows=32))      # writes c bottom
    r_top = g.task(add, args=dict(a=c[:32], b=b[:32], c=d[:32], rows=32))      # reads c top
    war = g.task(add, args=dict(a=a[:32], b=b[:32], c=c[:32], rows=32))        # rewrites c top
    waw = g.task(add, args=dict(a=a, b=b, c=d, rows=64))                       # rewrites all of d
    assert g.preds[w_bot.id] == {}                                  # the other half: independent
    assert g.preds[r_top.id] == {w_top.id: "RAW"}
    assert g.preds[war.id] == {w_top.id: "WAW", r_top.id: "WAR"}
    assert g.preds[waw.id] == {r_top.id: "WAW"}


def test_regions_narrow_and_overrides_replace(add: pto.backends.Executable) -> None:
    a, b, c = (np.zeros((64, 1024), np.float32) for _ in range(3))
    g = TaskGraph()
    first = g.task(add, args=dict(a=a, b=b, c=c, rows=32), regions={"c": np.s_[:32]})
    second = g.task(add, args=dict(a=a, b=b, c=c[32:], rows=32))
    assert g.preds[second.id] == {}
    assert first.touched_writes[0].hi - first.touched_writes[0].lo == 32 * 1024 * 4
    e = np.zeros_like(a)
    third = g.task(add, args=dict(a=c, b=b, c=e, rows=64), reads=["b"])      # says it does not read c
    assert g.preds[third.id] == {}
    assert {s.name for s in third.touched_reads} == {"a", "b"}             # the verifier still knows


def test_explicit_edges_and_cycles(add: pto.backends.Executable) -> None:
    a, b, c = (np.zeros((32, 1024), np.float32) for _ in range(3))
    g = TaskGraph()
    t1 = g.host(lambda x: None, dict(x=a), label="one")
    t2 = g.host(lambda x: None, dict(x=b), label="two", after=[t1])
    t3 = g.join(after=[t2], label="three")
    assert g.preds[t2.id] == {t1.id: "explicit"} and g.preds[t3.id] == {t2.id: "explicit"}
    g.edge(t3, t1)
    with pytest.raises(PTOError) as e:
        run(g)
    assert e.value.code == "PTO_GRAPH_CYCLE"
    assert "one -> two -> three -> one" in str(e.value)
    with pytest.raises(PTOError) as e:
        g.edge(t2, t2)
    assert e.value.code == "PTO_GRAPH_CYCLE"


def test_a_cycle_is_reported_before_any_task_runs() -> None:
    ran: list[str] = []
    g = TaskGraph()
    t1 = g.host(lambda: ran.append("a"))
    t2 = g.host(lambda: ran.append("b"))
    t3 = g.host(lambda: ran.append("c"), after=[t2])
    g.edge(t3, t2)
    for executor in ("embedded", "simulated"):
        with pytest.raises(PTOError) as e:
            run(g, executor)
        assert e.value.code == "PTO_GRAPH_CYCLE"
    assert ran == [] and t1.id == 0


def test_bad_tasks_are_pto_errors(add: pto.backends.Executable) -> None:
    a, b, c = (np.zeros((32, 1024), np.float32) for _ in range(3))
    g = TaskGraph()
    cases = [
        (lambda: g.task(add, args=dict(a=a, b=b, rows=32)), "RUNTIME_ARG_MISSING"),
        (lambda: g.task(add, args=dict(a=a, b=b, c=c, rows=32, z=1)), "RUNTIME_ARG_UNKNOWN"),
        (lambda: g.task(add, args=dict(a=a, b=b, c=c.astype(np.float64), rows=32)), "RUNTIME_ARG_DTYPE"),
        (lambda: g.task(add, "nope", dict(a=a, b=b, c=c, rows=32)), "PTO_KERNEL"),
        (lambda: g.task(add, args=dict(a=a, b=b, c=c, rows=32), core="tpu"), "PTO_TASK"),
        (lambda: g.task(add, args=dict(a=a, b=b, c=c, rows=32), regions={"rows": 1}), "PTO_TASK"),
        (lambda: g.task(add, args=dict(a=a, b=b, c=c, rows=32), regions={"c": np.s_[[0, 1]]}), "PTO_TASK"),
        (lambda: g.task(add, args=dict(a=a, b=b, c=c, rows=32), regions={"c": np.s_[:, :, 3]}), "PTO_TASK"),
        (lambda: g.task(add, args=dict(a=a, b=b, c=c, rows=32), writes=["q"]), "PTO_TASK"),
        (lambda: g.task("not compiled", args={}), "PTO_TASK"),
        (lambda: g.host(42), "PTO_TASK"),
        (lambda: g.edge(TaskGraph().join(), g.join()), "PTO_TASK"),
    ]
    for make, code in cases:
        with pytest.raises(PTOError) as e:
            make()
        assert e.value.code == code, (code, e.value)


def test_runtime_codes_are_documented_with_their_meaning() -> None:
    import re

    from openpto.runtime.codes import RUNTIME_CODES
    rows = dict(re.findall(r"^\| `([A-Z0-9_]+)` \| [^|]+ \| (.+) \|$",
                           (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8"), re.M))
    for code, meaning in RUNTIME_CODES.items():
        assert rows.get(code, "").replace("`", "") == meaning, code


def test_a_written_read_only_binding_is_refused_when_added(add: pto.backends.Executable) -> None:
    ro = np.broadcast_to(np.zeros(1024, np.float32), (64, 1024))
    ones = np.ones((64, 1024), np.float32)
    for code, make in (
            ("RUNTIME_ARG_READONLY", lambda g: g.task(add, args=dict(a=ones, b=ones, c=ro, rows=64))),  # the binding's
            ("PTO_TASK", lambda g: g.host(lambda x: None, {"x": ro}, writes=["x"])),
            ("PTO_TASK", lambda g: g.task(add, args=dict(a=ro, b=ones, c=np.zeros_like(ones), rows=64), writes=["a"]))):
        with pytest.raises(PTOError) as e:
            make(TaskGraph())
        assert e.value.code == code
        assert code != "PTO_TASK" or "read-only" in e.value.message
    g = TaskGraph()                       # a host task's default writes leave the read-only input out
    t = g.host(lambda x, y: None, {"x": ro, "y": ones})
    assert [s.name for s in t.writes] == ["y"] and [s.name for s in t.reads] == ["x", "y"]
    assert g.task(add, args=dict(a=ro, b=ro, c=ones, rows=64)).writes[0].name == "c"   # reading one is fine


def test_task_arguments_are_checked_when_the_task_is_added(add: pto.backends.Executable) -> None:
    a, c = np.ones((64, 1024), np.float32), np.zeros((64, 1024), np.float32)
    args = dict(a=a, b=a, c=c, rows=64)
    g = TaskGraph()
    first = g.task(add, args=args, blocks=np.int64(1), cost=2)
    for bad in (dict(reads=5), dict(writes=[1]), dict(blocks=0), dict(blocks="2"), dict(blocks=-3), dict(blocks=True),
                dict(cost="x"), dict(cost=float("nan")), dict(cost=-1), dict(after=first), dict(label=["x"]),
                dict(regions=[("c", 1)])):
        with pytest.raises(PTOError) as e:
            g.task(add, args=args, **bad)
        assert e.value.code == "PTO_TASK", bad
    for make in (lambda: g.task(add, args=[a]), lambda: g.host(print, [1]), lambda: g.host(print, cost="x"),
                 lambda: g.join(after=first)):
        with pytest.raises(PTOError) as e:
            make()
        assert e.value.code == "PTO_TASK"
    assert len(g) == 1
