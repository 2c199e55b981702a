"""N-D broadcasts and batched matmuls in the tensor frontend (frontend/batching.py): each is a
loop over 2-D problems the tiler knows. Results are compared with numpy written here, on the
reference and llvm backends; a3 checks that the batched matmul stays one cube kernel."""
import importlib

import numpy as np
import pytest

import openpto.frontend as pto
from openpto.isa import PTOError

BACKENDS = ["reference", "llvm"]
RNG = np.random.default_rng(16)


def _rand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _binary(sa, sb, name, backend, profile="cpu"):
    ops = {"add": pto.add, "sub": pto.sub, "mul": pto.mul, "maximum": pto.maximum}

    @pto.jit(backend=backend, profile=profile)
    def f(x: pto.Tensor(sa, pto.DT_FP32), y: pto.Tensor(sb, pto.DT_FP32)):
        return ops[name](x, y)
    return f


BROADCASTS = [
    ((3, 1, 16), (1, 8, 16)),       # [B,1,N] + [1,M,N]
    ((8, 1), (1, 16)),              # outer: one value per row with one row
    ((8, 16), (1, 1)),              # a [1,1] tensor as a scalar-like operand
    ((1, 1), (8, 16)),              # ... on the left
    ((3, 8, 16), (16,)),            # [B,M,N] + [N]
    ((3, 8, 1), (3, 1, 16)),        # per-row with per-batch rows
    ((2, 1, 4, 8), (3, 1, 8)),      # two broadcast leading dims: [2,3,4,8]
    ((2, 3, 5, 7), (2, 1, 1, 7)),   # odd sizes: partial tiles in every group
]
NUMPY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sa,sb", BROADCASTS)
@pytest.mark.parametrize("name", ["sub", "mul"])
def test_n_d_broadcasts_match_numpy(backend, sa, sb, name):
    x, y = _rand(sa), _rand(sb)
    got = _binary(sa, sb, name, backend)(x, y)
    want = NUMPY[name](x.astype(np.float64), y.astype(np.float64))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_broadcast_loop_covers_only_the_leading_dims_it_must():
    """[3,8,16] - [3,1,16]: one loop over the 3 batches of 8x16 (y one row each); the already
    tileable [3,8,16] + [16] stays a single 24x16 node with no loop."""
    f = _binary((3, 8, 16), (3, 1, 16), "sub", "reference")
    text = f.stages_from_annotations().stage("tile")
    assert "in loop(0, 3, 1)" in text and "%y_batch<col>" in text and "[8x16]" in text
    f = _binary((3, 8, 16), (16,), "add", "reference")
    text = f.stages_from_annotations().stage("tile")
    assert "loop(" not in text and "[24x16]" in text


def test_broadcast_inside_a_chain_with_a_reduction_and_stages_check():
    """Broadcast results feed later ops (a row softmax over [B,M,N] built from [B,1,N] + [1,M,N])."""
    B, M, N = 2, 6, 10

    @pto.jit(backend="llvm")
    def f(x: pto.Tensor((B, 1, N), pto.DT_FP32), y: pto.Tensor((1, M, N), pto.DT_FP32)):
        s = x * y
        e = pto.exp(s - pto.amax(s, -1, True))
        return e / pto.sum(e, -1, True)
    x, y = _rand((B, 1, N)), _rand((1, M, N))
    s = x.astype(np.float64) * y
    e = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(f(x, y), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    f.stages_from_annotations().check(stages=("tile", "kernels"))


def _count_compiles(monkeypatch):
    jit_module = importlib.import_module("openpto.frontend.jit")   # the module, not pto.jit
    calls = []
    real = jit_module._compile

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)
    monkeypatch.setattr(jit_module, "_compile", counted)
    return calls


def test_dynamic_batch_broadcast_compiles_once(monkeypatch):
    compiles = _count_compiles(monkeypatch)

    @pto.jit(backend="llvm")
    def f(x: pto.Tensor((pto.DYNAMIC, 1, 16), pto.DT_FP32), y: pto.Tensor((4, 16), pto.DT_FP32)):
        return x + y
    y = _rand((4, 16))
    for b in (1, 3, 5):
        x = _rand((b, 1, 16))
        np.testing.assert_allclose(f(x, y), x + y, rtol=1e-6)
    assert len(compiles) == 1


# ----------------------------------------------------------------------------------------------
# batched matmul

MATMULS = [
    ((3, 32, 16), (3, 16, 24)),         # [B,M,K] @ [B,K,N]
    ((3, 32, 16), (16, 24)),            # shared B: [B,M,K] @ [K,N]
    ((32, 16), (2, 16, 24)),            # shared A
    ((2, 1, 8, 16), (1, 3, 16, 8)),     # batch dims broadcast both ways: [2,3,8,8]
]


def _matmul(sa, sb, backend, profile, dtype=pto.DT_FP16, **flags):
    @pto.jit(backend=backend, profile=profile)
    def f(a: pto.Tensor(sa, dtype), b: pto.Tensor(sb, dtype)):
        return pto.matmul(a, b, **flags)
    return f


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("profile", ["cpu", "a3"])
@pytest.mark.parametrize("sa,sb", MATMULS)
def test_batched_matmul_matches_numpy(backend, profile, sa, sb):
    a, b = _rand(sa, np.float16), _rand(sb, np.float16)
    got = _matmul(sa, sb, backend, profile)(a, b)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_batched_matmul_with_a_cube_tile_and_a_transposed_shared_b(backend):
    """K and N tiled (K accumulated in the acc tile) in every batch; b_trans on the 2-D B."""
    sa, sb = (2, 48, 64), (40, 64)
    f16 = pto.DT_FP16

    @pto.jit(backend=backend, profile="a3")
    def f(a: pto.Tensor(sa, f16), b: pto.Tensor(sb, f16)):
        pto.set_cube_tile_shapes(16, 32, 16)
        return pto.matmul(a, b, b_trans=True)
    a, b = _rand(sa, np.float16), _rand(sb, np.float16)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64).T)
    np.testing.assert_allclose(f(a, b), want, rtol=1e-3, atol=1e-3)


def test_batched_matmul_on_a3_is_one_cube_kernel_in_a_loop_then_vector():
    """On a3 (cube and vector cores apart) the batch loop runs inside one cube kernel and the
    bias + relu after it is a vector kernel of its own; the numbers match numpy."""
    @pto.jit(backend="llvm", profile="a3")
    def f(x: pto.Tensor((3, 32, 16), pto.DT_FP16), y: pto.Tensor((3, 16, 32), pto.DT_FP16),
          bias: pto.Tensor((32,), pto.DT_FP32)):
        return pto.relu(pto.matmul(x, y) + bias)
    st = f.stages_from_annotations()
    ks = list(st.partition.kernels())
    assert [(k.unit, k.mode) for k in ks] == [("cube", "matmul"), ("vector", "rows")]
    assert ks[0].loop is not None and ks[0].loop.stop == 3 and ks[0].invocations == 1
    assert "runs loop BATCH_matmul_0" in st.stage("partition")
    x, y, bias = _rand((3, 32, 16), np.float16), _rand((3, 16, 32), np.float16), _rand((32,))
    want = np.maximum(np.matmul(x.astype(np.float64), y.astype(np.float64)) + bias, 0)
    np.testing.assert_allclose(f(x, y, bias), want, rtol=1e-3, atol=1e-3)


def test_dynamic_batch_matmul_one_compile_serves_every_batch(monkeypatch):
    compiles = _count_compiles(monkeypatch)

    @pto.jit(backend="llvm", profile="cpu")
    def f(a: pto.Tensor((pto.dynamic("B"), 16, 32), pto.DT_FP32),
          b: pto.Tensor((pto.dynamic("B"), 32, 8), pto.DT_FP32)):
        return a @ b
    for n in (1, 2, 5):
        a, b = _rand((n, 16, 32)), _rand((n, 32, 8))
        np.testing.assert_allclose(f(a, b), np.matmul(a.astype(np.float64), b), rtol=1e-4, atol=1e-4)
    assert len(compiles) == 1
    text = f.stages_from_annotations({"B": 4}).stage("partition")
    assert "1 kernel(s)" in text


def test_transposed_operand_with_a_batch_is_a_clear_refusal():
    f = _matmul((2, 16, 8), (2, 16, 8), "reference", "cpu", a_trans=True)
    with pytest.raises(PTOError) as e:
        f(_rand((2, 16, 8), np.float16), _rand((2, 16, 8), np.float16))
    err = e.value
    assert err.code == "FRONT_MATMUL" and "a_trans" in str(err) and "batch" in str(err)
    assert err.location is not None and err.location.file.endswith("test_frontend_broadcast_batched.py")


def test_mismatched_batches_are_a_capture_error():
    f = _matmul((2, 8, 16), (3, 16, 8), "reference", "cpu")
    with pytest.raises(PTOError) as e:
        f.graph()
    assert e.value.code == "FRONT_BROADCAST"


@pytest.mark.parametrize("backend", BACKENDS)
def test_broadcast_inside_a_user_loop_nests_its_batch_loop(backend):
    """A pto.loop body with a [1,2,1,16] view + [1,8,16]: the batch loop over the 2 runs inside
    the kernel, the user's loop around it; tile graph and kernels agree with the interpreter."""
    @pto.jit(backend=backend)
    def f(x: pto.Tensor((4, 2, 1, 16), pto.DT_FP32), y: pto.Tensor((1, 8, 16), pto.DT_FP32),
          out: pto.Tensor((4, 2, 8, 16), pto.DT_FP32)):
        for i in pto.loop(0, 4, 1):
            v = pto.view(x, [1, 2, 1, 16], [i, 0, 0, 0])
            pto.assemble(v + y, [i, 0, 0, 0], out)
    x, y = _rand((4, 2, 1, 16)), _rand((1, 8, 16))
    out = np.zeros((4, 2, 8, 16), np.float32)
    f(x, y, out)
    np.testing.assert_allclose(out, x.astype(np.float64) + y, rtol=1e-6)
    st = f.stages_from_annotations()
    assert "runs loop BATCH_add_1" in st.stage("partition")
    st.check(stages=("tile", "kernels"))


def test_batched_matmul_with_cube_tiles_passes_the_stage_check():
    @pto.jit(backend="llvm", profile="a3")
    def f(a: pto.Tensor((2, 40, 48), pto.DT_FP16), b: pto.Tensor((2, 48, 24), pto.DT_FP16)):
        pto.set_cube_tile_shapes(16, 16, 16)
        return pto.matmul(a, b)
    f.stages_from_annotations().check(stages=("tile", "kernels"))
