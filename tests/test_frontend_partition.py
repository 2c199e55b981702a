"""Partition: kernels, cube/vector separation per profile, isomorphic sharing, the knobs."""
import numpy as np
import pytest

from frontend_graphs import Builder, np_softmax, softmax
from openpto.frontend.options import Options
from openpto.frontend.partition import partition, separate_cores
from openpto.frontend.pipeline import compile_function
from openpto.frontend.tiling import tile_function


def acceptance():
    """A (64x64) times a constant plus B, matmul with W (64x32), then a row sum; vector tile
    (32, 32), the matmul untiled."""
    b = Builder("acceptance")
    A, B, W = b.tensor("A", (64, 64)), b.tensor("B", (64, 64)), b.tensor("W", (64, 32))
    b.vec = (32, 32)
    t = b.op("add", b.op("mul", A, 3.0, out="scaled"), B, out="t")
    c = b.op("matmul", t, W, shape=(64, 32), out="C")
    b.ret(b.op("sum", c, shape=(64, 1), out="rowsum", axis=1, keepdim=True))
    return b.function()


def _summary(part):
    return [(tuple(n.name for n in k.nodes), k.unit, k.invocations) for k in part.kernels()]


@pytest.mark.parametrize("profile", ["a2", "a3", "a5"])
def test_acceptance_case_on_separate_cube_and_vector_cores(profile):
    assert separate_cores(profile)
    part = partition(tile_function(acceptance(), profile))
    assert _summary(part) == [(("mul", "add"), "vector", 4),     # 2 x 2 tiles of 32x32
                              (("matmul",), "cube", 1),          # untiled: one 64x64 @ 64x32
                              (("sum",), "vector", 2)]           # 2 row blocks of 32 rows
    text = str(part)
    assert "invoked 4 times" in text and "invoked 1 time " in text and "invoked 2 times" in text
    assert "cube and vector cores are separate" in text


def test_acceptance_case_on_cpu_fuses_the_row_sum_into_the_matmul():
    """cpu has one core for both units: the row sum runs on the matmul's output tile in the
    same kernel, so there are two kernels, not three (the test's reason: no cube/vector split)."""
    assert not separate_cores("cpu")
    part = partition(tile_function(acceptance(), "cpu"))
    assert _summary(part) == [(("mul", "add"), "vector", 4), (("matmul", "sum"), "cube", 1)]
    assert "share one core on this profile" in str(part)


@pytest.mark.parametrize("backend", ["reference", "llvm"])
@pytest.mark.parametrize("profile", ["cpu", "a3"])
def test_acceptance_case_computes_the_numpy_result(backend, profile):
    rng = np.random.default_rng(1)
    A, B, W = (rng.standard_normal(s).astype(np.float32) for s in ((64, 64), (64, 64), (64, 32)))
    out = np.empty((64, 1), np.float32)
    cf = compile_function(acceptance(), backend=backend, profile=profile)
    cf({"A": A, "B": B, "W": W, "rowsum": out}, {})
    want = ((A.astype(np.float64) * 3 + B) @ W).sum(1, keepdims=True)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=2e-4)


def test_isomorphic_kernels_share_one_compiled_kernel():
    b = Builder("two")
    x, y = b.tensor("x", (64, 128)), b.tensor("y", (64, 128))
    b.vec = (16, 128)
    ex = b.op("exp", x, out="ex")
    ey = b.op("exp", y, out="ey")
    b.ret(ex, ey)
    # fuse=False: with fusion on the two (independent, same tiles) ops would be siblings in one kernel
    cf = compile_function(b.function(), backend="reference", profile="cpu", options={"fuse": False})
    ks = list(cf.stages.partition.kernels())
    assert len(ks) == 2 and ks[1].shares is ks[0]
    assert len(cf.stages.lowered.kernels) == 1 and "shares its code" in str(cf.stages.partition)
    xa = np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32)
    ya = xa[::-1].copy()
    ox, oy = np.empty_like(xa), np.empty_like(xa)
    cf({"x": xa, "y": ya, "ex": ox, "ey": oy}, {})
    np.testing.assert_allclose(ox, np.exp(xa), rtol=1e-6)
    np.testing.assert_allclose(oy, np.exp(ya), rtol=1e-6)


@pytest.mark.parametrize("backend", ["reference", "llvm"])
def test_independent_ops_on_the_same_tiles_share_a_kernel(backend):
    """x1 * c - x2 * s: the two products read nothing the other makes, yet walk the same tiles:
    siblings, one kernel (one launch) for the whole expression."""
    b = Builder("siblings")
    x1, x2 = b.tensor("x1", (64, 32)), b.tensor("x2", (64, 32))
    c, s = b.tensor("c", (64, 32)), b.tensor("s", (64, 32))
    b.vec = (16, 32)
    p = b.op("mul", x1, c, out="p")
    q = b.op("mul", x2, s, out="q")
    r = b.op("sub", p, q, out="r")
    b.ret(r)
    cf = compile_function(b.function(), backend=backend, profile="cpu")
    ks = list(cf.stages.partition.kernels())
    assert len(ks) == 1 and [n.name for n in ks[0].nodes] == ["mul", "mul", "sub"]
    rng = np.random.default_rng(3)
    a = {k: rng.standard_normal((64, 32)).astype(np.float32) for k in ("x1", "x2", "c", "s")}
    out = np.empty((64, 32), np.float32)
    cf({**a, "r": out}, {})
    np.testing.assert_array_equal(out, a["x1"] * a["c"] - a["x2"] * a["s"])


def test_siblings_stop_joining_when_their_tiles_would_overflow_the_vector_buffer():
    """On a3 (192 KiB of vector buffer) eight independent 64x128 f32 exps (32 KiB tiles, two per op)
    cannot share one kernel: the siblings split where the next would not fit, and the program
    still compiles for the profile."""
    b = Builder("many")
    b.vec = (64, 128)
    outs = [b.op("exp", b.tensor(f"x{i}", (64, 128)), out=f"e{i}") for i in range(8)]
    b.ret(*outs)
    cf = compile_function(b.function(), backend="reference", profile="a3")
    sizes = [len(k.nodes) for k in cf.stages.partition.kernels()]
    assert sum(sizes) == 8 and len(sizes) > 1 and max(sizes) * 2 * 64 * 128 * 4 <= 196608
    assert max(sizes) >= 2


def test_fuse_off_gives_one_kernel_per_op():
    part = partition(tile_function(softmax(64, 64)), Options(fuse=False))
    assert [len(k.nodes) for k in part.kernels()] == [1, 1, 1, 1, 1]


def test_softmax_fuses_into_one_kernel_by_coalescing_rows():
    part = partition(tile_function(softmax(64, 256)))
    (k,) = part.kernels()
    assert k.mode == "rows" and k.tile == (32, 256) and k.invocations == 2
    assert any("coalesced" in w for w in k.why)


def test_coalesce_off_splits_where_a_whole_row_is_needed():
    """Without widening, the row max must be complete before sub: the kernel ends there and
    the partial reductions combine in a column loop."""
    part = partition(tile_function(softmax(64, 256)), Options(coalesce=False))
    ks = list(part.kernels())
    assert [tuple(n.name for n in k.nodes) for k in ks] == [("amax",), ("sub", "exp", "sum"), ("div",)]
    assert [k.mode for k in ks] == ["colloop", "colloop", "grid"]
    assert "starts another kernel" in str(part)


@pytest.mark.parametrize("options", [{}, {"coalesce": False}, {"fuse": False}, {"merge": 1},
                                     {"merge": 3, "blocks": 2}])
def test_every_knob_setting_computes_softmax(options):
    x = np.random.default_rng(2).standard_normal((70, 100)).astype(np.float32)
    cf = compile_function(softmax(70, 100), backend="reference", profile="cpu", options=options)
    out = np.empty_like(x)
    cf({"input": x, "output": out}, {})
    np.testing.assert_allclose(out, np_softmax(x), rtol=1e-5, atol=1e-7)


class _Counting:
    def __init__(self, exe):
        self.exe, self.calls = exe, []

    def run(self, *args, **kwargs):
        self.calls.append(kwargs["count"])
        return self.exe.run(*args, **kwargs)


def test_merge_decides_the_task_count():
    """merge = invocations per task: 3 row blocks with merge=1 are 3 launches, default 1."""
    launches = []
    for merge in (None, 1, 2):
        cf = compile_function(softmax(70, 100), backend="reference", profile="cpu",
                              options={"merge": merge})
        cf.executable = _Counting(cf.executable)      # the executable is shared: wrap, not patch
        x = np.ones((70, 100), np.float32)
        cf({"input": x, "output": np.empty_like(x)}, {})
        launches.append(cf.executable.calls)
    assert launches == [[3], [1, 1, 1], [2, 1]]


def test_an_identical_module_is_compiled_once():
    a = compile_function(softmax(40, 64), backend="llvm", profile="cpu")
    b = compile_function(softmax(40, 64), backend="llvm", profile="cpu")
    c = compile_function(softmax(40, 64), backend="reference", profile="cpu")
    assert a.executable is b.executable and c.executable is not a.executable
