"""Frontend programs (tensor graphs built with graph.py) run through the whole pipeline on the
reference and llvm backends, against numpy written here."""
import numpy as np
import pytest

import openpto as pto
from frontend_graphs import Builder, np_softmax, softmax
from openpto.frontend import graph as g
from openpto.frontend.pipeline import compile_function
from openpto.isa import PTOError
from openpto.isa.dtypes import F16, F32, I32

BACKENDS = ["reference", "llvm"]
RNG = np.random.default_rng(7)


def run(fn, arrays, backend, symbols=None, profile="cpu", **options):
    cf = compile_function(fn, backend=backend, profile=profile, options=options)
    cf(arrays, symbols or {})
    return cf


def rand(*shape, dtype=np.float32, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape,tile", [((64, 64), (32, 32)), ((70, 100), (32, 32)), ((5, 3), (32, 32)),
                                        ((33, 257), (8, 64)), ((128, 1024), None)])
def test_softmax_shapes_and_edge_tiles(backend, shape, tile):
    x = rand(*shape)
    out = np.empty_like(x)
    run(softmax(*shape, tile=tile), {"input": x, "output": out}, backend)
    np.testing.assert_allclose(out, np_softmax(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_softmax_split_kernels_with_column_loops(backend):
    """coalesce off: partial row reductions combined across column tiles in a loop."""
    x = rand(40, 200)
    out = np.empty_like(x)
    run(softmax(40, 200), {"input": x, "output": out}, backend, coalesce=False)
    np.testing.assert_allclose(out, np_softmax(x), rtol=1e-5, atol=1e-7)


def _binary_program(name, a_shape, b_shape, scalar_first=False, scalar=None):
    b = Builder(name)
    x = b.tensor("x", a_shape)
    if scalar is not None:
        args = (scalar, x) if scalar_first else (x, scalar)
    else:
        args = (x, b.tensor("y", b_shape))
    b.vec = (16, 32)
    b.ret(b.op(name, *args, shape=a_shape, out="z"))
    return b.function()


NP_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
             "maximum": np.maximum, "minimum": np.minimum}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(NP_BINARY))
@pytest.mark.parametrize("b_shape", [(40, 50), (40, 1), (50,), (1, 50)])
def test_binary_ops_with_broadcasts(backend, name, b_shape):
    x, y = rand(40, 50), rand(*b_shape, lo=0.5, hi=2.0)
    z = np.empty_like(x)
    run(_binary_program(name, (40, 50), b_shape), {"x": x, "y": y, "z": z}, backend)
    np.testing.assert_allclose(z, NP_BINARY[name](x, y), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(NP_BINARY))
@pytest.mark.parametrize("first", [False, True])
def test_binary_ops_with_a_scalar_either_side(backend, name, first):
    x = rand(24, 40, lo=0.5, hi=2.0)
    z = np.empty_like(x)
    run(_binary_program(name, (24, 40), None, scalar_first=first, scalar=1.5), {"x": x, "z": z}, backend)
    want = NP_BINARY[name](np.float32(1.5), x) if first else NP_BINARY[name](x, np.float32(1.5))
    np.testing.assert_allclose(z, want, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_row_broadcast_operand_first(backend):
    """rowvec - tile and rowvec / tile keep the operand order."""
    b = Builder("f")
    x, r = b.tensor("x", (20, 30)), b.tensor("r", (20, 1))
    b.ret(b.op("sub", r, x, shape=(20, 30), out="s"), b.op("div", r, x, shape=(20, 30), out="d"))
    x_, r_ = rand(20, 30, lo=0.5, hi=2), rand(20, 1)
    s, d = np.empty_like(x_), np.empty_like(x_)
    run(b.function(), {"x": x_, "r": r_, "s": s, "d": d}, backend)
    np.testing.assert_allclose(s, r_ - x_, rtol=1e-6)
    np.testing.assert_allclose(d, r_ / x_, rtol=1e-6)


NP_UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v),
            "abs": np.abs, "neg": np.negative, "relu": lambda v: np.maximum(v, 0),
            "reciprocal": lambda v: 1 / v}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(NP_UNARY))
def test_unary_ops(backend, name):
    positive = name in ("log", "sqrt", "rsqrt", "reciprocal")
    x = rand(33, 47, lo=0.1 if positive else -3, hi=3)
    b = Builder(name)
    t = b.tensor("x", x.shape)
    b.ret(b.op(name, t, out="y"))
    y = np.empty_like(x)
    run(b.function(), {"x": x, "y": y}, backend)
    np.testing.assert_allclose(y, NP_UNARY[name](x.astype(np.float64)), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op,npf", [("sum", np.sum), ("amax", np.max), ("amin", np.min), ("mean", np.mean)])
@pytest.mark.parametrize("keep", [True, False])
def test_last_axis_reductions(backend, op, npf, keep):
    x = rand(37, 90)
    b = Builder(op)
    t = b.tensor("x", x.shape)
    b.vec = (16, 32)
    b.ret(b.op(op, t, shape=(37, 1) if keep else (37,), out="r", axis=1, keepdim=keep))
    r = np.empty((37, 1) if keep else (37,), np.float32)
    run(b.function(), {"x": x, "r": r}, backend)
    np.testing.assert_allclose(r, npf(x.astype(np.float64), axis=1, keepdims=keep), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op,npf", [("sum", np.sum), ("amax", np.max), ("mean", np.mean)])
def test_column_reductions(backend, op, npf):
    x = rand(45, 70)
    b = Builder(op)
    t = b.tensor("x", x.shape)
    b.vec = (16, 32)
    b.ret(b.op(op, t, shape=(70,), out="r", axis=0, keepdim=False))
    r = np.empty((70,), np.float32)
    run(b.function(), {"x": x, "r": r}, backend)
    np.testing.assert_allclose(r, npf(x.astype(np.float64), axis=0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cast_compare_where_full(backend):
    b = Builder("mix")
    x, y = b.tensor("x", (30, 40)), b.tensor("y", (30, 40))
    b.vec = (8, 40)
    h = b.op("cast", x, dtype=F16, out="h")
    i = b.op("cast", x, dtype=I32, out="i")                  # mode rint: nearest, ties to even
    i2 = b.op("cast", x, dtype=I32, out="i2", mode="trunc")
    m = b.op("gt", x, y, out="m")
    m2 = b.op("lt", 0.5, x, out="m2")          # scalar first: 0.5 < x
    w = b.op("where", m, x, y, out="w")
    w2 = b.op("where", m2, x, -1.0, out="w2")
    f = b.op("full", shape=(30, 40), dtype=F32, out="f", value=2.5)
    b.ret(h, i, i2, m, w, w2, f)
    x_, y_ = rand(30, 40, lo=-5, hi=5), rand(30, 40, lo=-5, hi=5)
    outs = {"h": np.empty((30, 40), np.float16), "i": np.empty((30, 40), np.int32),
            "i2": np.empty((30, 40), np.int32),
            "m": np.empty((30, 40), bool), "w": np.empty((30, 40), np.float32),
            "w2": np.empty((30, 40), np.float32), "f": np.empty((30, 40), np.float32)}
    run(b.function(), {"x": x_, "y": y_, **outs}, backend)
    np.testing.assert_array_equal(outs["h"], x_.astype(np.float16))
    np.testing.assert_array_equal(outs["i"], np.rint(x_).astype(np.int32))
    np.testing.assert_array_equal(outs["i2"], np.trunc(x_).astype(np.int32))
    np.testing.assert_array_equal(outs["m"], x_ > y_)
    np.testing.assert_array_equal(outs["w"], np.where(x_ > y_, x_, y_))
    np.testing.assert_array_equal(outs["w2"], np.where(0.5 < x_, x_, np.float32(-1)))
    np.testing.assert_array_equal(outs["f"], np.full((30, 40), 2.5, np.float32))


def layernorm(M, N, eps=1e-5, tile=(16, 256)):
    b = Builder("layernorm")
    x, gamma, beta = b.tensor("x", (M, N)), b.tensor("gamma", (N,)), b.tensor("beta", (N,))
    b.vec = tile
    mean = b.op("mean", x, shape=(M, 1), out="mean", axis=1, keepdim=True)
    xc = b.op("sub", x, mean, out="xc")
    var = b.op("mean", b.op("mul", xc, xc, out="sq"), shape=(M, 1), out="var", axis=1, keepdim=True)
    rstd = b.op("rsqrt", b.op("add", var, eps, out="var_eps"), out="rstd")
    y = b.op("add", b.op("mul", b.op("mul", xc, rstd, out="xn"), gamma, out="xg"), beta, out="y")
    b.ret(y)
    return b.function()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("M,N", [(64, 256), (50, 300)])
def test_layernorm(backend, M, N):
    x, gamma, beta = rand(M, N), rand(N), rand(N)
    y = np.empty_like(x)
    cf = run(layernorm(M, N), {"x": x, "gamma": gamma, "beta": beta, "y": y}, backend)
    x64 = x.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    want = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(1, keepdims=True) + 1e-5) * gamma + beta
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    assert len(list(cf.stages.partition.kernels())) == 1      # the whole chain in one kernel


@pytest.mark.parametrize("backend", BACKENDS)
def test_rmsnorm(backend):
    M, N = 48, 128
    b = Builder("rmsnorm")
    x, w = b.tensor("x", (M, N)), b.tensor("w", (N,))
    ms = b.op("mean", b.op("mul", x, x, out="sq"), shape=(M, 1), out="ms", axis=1, keepdim=True)
    r = b.op("rsqrt", b.op("add", ms, 1e-6, out="mse"), out="r")
    b.ret(b.op("mul", b.op("mul", x, r, out="xn"), w, out="y"))
    x_, w_ = rand(M, N), rand(N)
    y = np.empty_like(x_)
    run(b.function(), {"x": x_, "w": w_, "y": y}, backend)
    x64 = x_.astype(np.float64)
    np.testing.assert_allclose(y, x64 / np.sqrt((x64 ** 2).mean(1, keepdims=True) + 1e-6) * w_,
                               rtol=1e-4, atol=1e-6)


def mlp(M, K, N, dtype=F32, cube=None):
    b = Builder("mlp")
    x, w, bias = b.tensor("x", (M, K), dtype), b.tensor("w", (K, N), dtype), b.tensor("bias", (N,))
    b.cube = cube
    h = b.op("matmul", x, w, shape=(M, N), dtype=F32, out="h", out_dtype=F32)
    b.cube = None
    b.ret(b.op("relu", b.op("add", h, bias, out="hb"), out="y"))
    return b.function()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("profile", ["cpu", "a3"])
@pytest.mark.parametrize("M,K,N,cube", [(64, 96, 48, None), (40, 70, 50, g.CubeTiles((16, 16), (32, 32), (32, 32)))])
def test_matmul_bias_relu(backend, profile, M, K, N, cube):
    x, w, bias = rand(M, K), rand(K, N), rand(N)
    y = np.empty((M, N), np.float32)
    cf = run(mlp(M, K, N, cube=cube), {"x": x, "w": w, "bias": bias, "y": y}, backend, profile=profile)
    want = np.maximum(x.astype(np.float64) @ w + bias, 0)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    units = [k.unit for k in cf.stages.partition.kernels()]
    if profile == "a3":
        assert units == ["cube", "vector"]
    elif cube is None:
        assert units == ["cube"]              # one core: bias and relu on the acc tile's rows


def test_matmul_f16_is_check_clean_on_a3_and_a5():
    for prof in ("a3", "a5"):
        cf = compile_function(mlp(64, 64, 64, dtype=F16), backend="reference", profile=prof)
        pto.check(pto.parse(cf.stages.kernels), prof)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("profile", ["cpu", "a3"])
def test_attention_block(backend, profile):
    """softmax(Q K^T * scale) V: K^T through the matmul's transpose flag (a column-major view)."""
    S, D = 64, 32
    b = Builder("attention")
    q, k, v = b.tensor("q", (S, D)), b.tensor("k", (S, D)), b.tensor("v", (S, D))
    s = b.op("matmul", q, k, shape=(S, S), out="scores", b_trans=True, out_dtype=F32)
    b.vec = (16, S)
    s2 = b.op("mul", s, 1 / np.sqrt(D), out="scaled")
    mx = b.op("amax", s2, shape=(S, 1), out="mx", axis=1, keepdim=True)
    e = b.op("exp", b.op("sub", s2, mx, out="sh"), out="e")
    p = b.op("div", e, b.op("sum", e, shape=(S, 1), out="den", axis=1, keepdim=True), out="p")
    b.vec = None
    b.ret(b.op("matmul", p, v, shape=(S, D), out="o", out_dtype=F32))
    q_, k_, v_ = rand(S, D), rand(S, D), rand(S, D)
    o = np.empty((S, D), np.float32)
    cf = run(b.function(), {"q": q_, "k": k_, "v": v_, "o": o}, backend, profile=profile)
    want = np_softmax((q_.astype(np.float64) @ k_.T.astype(np.float64)) / np.sqrt(D)) @ v_
    np.testing.assert_allclose(o, want, rtol=1e-4, atol=1e-5)
    units = [kk.unit for kk in cf.stages.partition.kernels()]
    assert units == (["cube", "vector", "cube"] if profile == "a3" else ["cube", "cube"])


def seed2(N1, N2, DIM, tile=(1, 4, 1, 64)):
    """The second seed program's graph: a dynamic batch, a pto.loop over it, a view, a local
    written with out[:] = ..., assembled into the output at the batch offset."""
    B = g.Sym.var("b")
    b = Builder("softmax")
    x = b.tensor("input_tensor", (B, N1, N2, DIM))
    o = b.tensor("output_tensor", (B, N1, N2, DIM), kind="output")
    tile_b = g.Sym.const(1)
    b.vec = tile
    idx = b.loop("LOOP_L0_bIdx", 0, B / tile_b, 1)
    off = idx * tile_b
    v = b.op("view", x, shape=(1, N1, N2, DIM), out="input_view", offsets=(off, 0, 0, 0))
    rm = b.op("amax", v, shape=(1, N1, N2, 1), out="rowmax", axis=3, keepdim=True)
    ex = b.op("exp", b.op("sub", v, rm, out="sub"), out="exp")
    d = b.op("div", ex, b.op("sum", ex, shape=(1, N1, N2, 1), out="esum", axis=3, keepdim=True), out="div")
    loc = g.TensorValue("softmax_out", (1, N1, N2, DIM), F32, "local")
    b.op("assemble", d, outputs=(loc,), offsets=(0, 0, 0, 0), spelling="move")
    b.op("assemble", loc, outputs=(o,), offsets=(off, 0, 0, 0))
    b.end_loop()
    return b.function()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("options", [{}, {"merge": 2}])
def test_dynamic_batch_loop_one_compile(backend, options):
    cf = compile_function(seed2(8, 2, 96), backend=backend, profile="cpu", options=options)
    for bsz in (1, 3, 17):
        x = rand(bsz, 8, 2, 96)
        out = np.zeros_like(x)
        cf({"input_tensor": x, "output_tensor": out}, {"b": bsz})
        np.testing.assert_allclose(out, np_softmax(x), rtol=1e-5, atol=1e-7)
    text = cf.stages.kernels
    if not options:
        assert "scf.for %idx" in text and "LOOP_L0_bIdx" in text       # the loop inside the kernel
    else:
        assert "for idx in range(0, b, 1)" in str(cf.stages.tasks)      # a host loop of launches


def test_copy_when_an_assemble_cannot_be_elided():
    """A parameter assembled into a window of the output is copied tile by tile."""
    b = Builder("cat")
    x, y = b.tensor("x", (8, 16)), b.tensor("y", (8, 16))
    o = b.tensor("o", (16, 16), kind="output")
    b.op("assemble", x, outputs=(o,), offsets=(0, 0))
    b.op("assemble", y, outputs=(o,), offsets=(8, 0))
    x_, y_ = rand(8, 16), rand(8, 16)
    o_ = np.zeros((16, 16), np.float32)
    run(b.function(), {"x": x_, "y": y_, "o": o_}, "reference")
    np.testing.assert_array_equal(o_, np.concatenate([x_, y_]))


def test_missing_array_is_a_front_error():
    cf = compile_function(softmax(8, 8), backend="reference", profile="cpu")
    with pytest.raises(PTOError) as e:
        cf({"input": np.zeros((8, 8), np.float32)}, {})
    assert e.value.code == "FRONT_RUN_ARGUMENT"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("profile", ["cpu", "a3"])
def test_transpose_then_elementwise(backend, profile):
    b = Builder("tr")
    x = b.tensor("x", (37, 50))
    b.vec = (16, 16)
    t = b.op("transpose", x, shape=(50, 37), out="xt", perm=(1, 0))
    b.ret(b.op("mul", t, 2.0, out="y"))
    x_ = rand(37, 50)
    y = np.empty((50, 37), np.float32)
    cf = run(b.function(), {"x": x_, "y": y}, backend, profile=profile)
    np.testing.assert_array_equal(y, x_.T * 2)
    pto.check(pto.parse(cf.stages.kernels), profile)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reshape_is_a_view_of_the_same_elements(backend):
    b = Builder("rs")
    x = b.tensor("x", (4, 8, 16))
    r = b.op("reshape", x, shape=(8, 64), out="r", shape_attr=None)
    b.ret(b.op("sum", b.op("exp", r, out="e"), shape=(8, 1), out="s", axis=1, keepdim=True))
    x_ = rand(4, 8, 16)
    s = np.empty((8, 1), np.float32)
    cf = run(b.function(), {"x": x_, "s": s}, backend)
    np.testing.assert_allclose(s, np.exp(x_.astype(np.float64)).reshape(8, 64).sum(1, keepdims=True), rtol=1e-5)
    assert "%x : !pto.memref<8x64xf32>" in cf.stages.kernels


@pytest.mark.parametrize("backend", BACKENDS)
def test_view_of_a_computed_tensor(backend):
    """A view of an intermediate reads it from global memory: the kernel that makes it stores it,
    and the reader is another kernel (its rows may come from other invocations)."""
    b = Builder("vt")
    x = b.tensor("x", (64, 32))
    b.vec = (16, 32)
    e = b.op("exp", x, out="e")
    v = b.op("view", e, shape=(16, 32), out="tail", offsets=(48, 0))
    b.ret(b.op("mul", v, 2.0, out="y"))
    x_ = rand(64, 32)
    y = np.empty((16, 32), np.float32)
    cf = run(b.function(), {"x": x_, "y": y}, backend)
    np.testing.assert_allclose(y, np.exp(x_[48:].astype(np.float64)) * 2, rtol=1e-6)
    assert len(list(cf.stages.partition.kernels())) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_softmax_with_run_time_rows_and_columns(backend):
    """Both dims dynamic: one compile; the row length is unknown, so the kernels split where a
    whole row is needed and the reductions combine over a column loop."""
    m, n = g.Sym.var("m"), g.Sym.var("n")
    cf = compile_function(softmax(m, n, tile=(8, 32)), backend=backend, profile="cpu")
    for M, N in ((1, 1), (9, 33), (20, 100), (8, 32)):
        x = rand(M, N)
        out = np.empty_like(x)
        cf({"input": x, "output": out}, {"m": M, "n": N})
        np.testing.assert_allclose(out, np_softmax(x), rtol=1e-5, atol=1e-7)
    assert "the row length is a run-time value" in str(cf.stages.partition)


# --------------------------------------------------------------------------------------------
# the same programs written with the frontend's API (capture + pipeline)

import openpto.frontend as fpto  # noqa: E402


@fpto.jit
def api_layernorm(x: fpto.Tensor((48, 200), fpto.DT_FP32), gamma: fpto.Tensor((200,), fpto.DT_FP32),
                  beta: fpto.Tensor((200,), fpto.DT_FP32)) -> fpto.Tensor((48, 200), fpto.DT_FP32):
    fpto.set_vec_tile_shapes(16, 64)
    mean = fpto.mean(x, -1, True)
    xc = x - mean
    var = fpto.mean(xc * xc, -1, True)
    return xc * fpto.rsqrt(var + 1e-5) * gamma + beta


@fpto.jit
def api_rmsnorm(x: fpto.Tensor((fpto.DYNAMIC, 128), fpto.DT_FP32),
                w: fpto.Tensor((128,), fpto.DT_FP32)) -> fpto.Tensor((fpto.DYNAMIC, 128), fpto.DT_FP32):
    with fpto.semantic_label("RMS"):
        r = fpto.rsqrt(fpto.mean(x * x, -1, True) + 1e-6)
    return x * r * w


@fpto.jit
def api_mlp(x: fpto.Tensor((64, 96), fpto.DT_FP32), w: fpto.Tensor((96, 48), fpto.DT_FP32),
            bias: fpto.Tensor((48,), fpto.DT_FP32)) -> fpto.Tensor((64, 48), fpto.DT_FP32):
    fpto.set_cube_tile_shapes([32, 32], [32, 32], [48, 48])
    return fpto.relu(x @ w + bias)


@fpto.jit
def api_attention(q: fpto.Tensor((64, 32), fpto.DT_FP32), k: fpto.Tensor((64, 32), fpto.DT_FP32),
                  v: fpto.Tensor((64, 32), fpto.DT_FP32)) -> fpto.Tensor((64, 32), fpto.DT_FP32):
    s = fpto.matmul(q, k, b_trans=True) * (1 / np.sqrt(32))
    fpto.set_vec_tile_shapes(16, 64)
    p = fpto.exp(s - fpto.amax(s, -1, True))
    p = p / fpto.sum(p, -1, True)
    return p @ v


@pytest.mark.parametrize("backend", BACKENDS)
def test_api_layernorm(backend):
    x, gamma, beta = rand(48, 200), rand(200), rand(200)
    y = api_layernorm.with_options(backend=backend)(x, gamma, beta)
    x64 = x.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    want = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(1, keepdims=True) + 1e-5) * gamma + beta
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_api_rmsnorm_dynamic_rows(backend):
    fn = api_rmsnorm.with_options(backend=backend)
    w = rand(128)
    for rows in (1, 7, 100):
        x = rand(rows, 128)
        x64 = x.astype(np.float64)
        np.testing.assert_allclose(fn(x, w), x64 / np.sqrt((x64 ** 2).mean(1, keepdims=True) + 1e-6) * w,
                                   rtol=1e-4, atol=1e-6)
    assert "RMS" in str(fn.stages(x, w).partition)       # the semantic label names the kernel


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("profile", ["cpu", "a3"])
def test_api_matmul_bias_relu(backend, profile):
    x, w, bias = rand(64, 96), rand(96, 48), rand(48)
    fn = api_mlp.with_options(backend=backend, profile=profile)
    np.testing.assert_allclose(fn(x, w, bias), np.maximum(x.astype(np.float64) @ w + bias, 0), rtol=1e-4, atol=1e-4)
    kernels = list(fn.stages(x, w, bias).partition.kernels())
    assert [k.unit for k in kernels] == (["cube", "vector"] if profile == "a3" else ["cube"])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("profile", ["cpu", "a3"])
def test_api_attention(backend, profile):
    q, k, v = rand(64, 32), rand(64, 32), rand(64, 32)
    fn = api_attention.with_options(backend=backend, profile=profile)
    want = np_softmax((q.astype(np.float64) @ k.T.astype(np.float64)) / np.sqrt(32)) @ v
    np.testing.assert_allclose(fn(q, k, v), want, rtol=1e-4, atol=1e-5)
    fn.stages(q, k, v).check()


@fpto.jit
def api_blocks(x: fpto.Tensor((fpto.DYNAMIC, 64), fpto.DT_FP32), out: fpto.Tensor((fpto.DYNAMIC, 64), fpto.DT_FP32)):
    n = x.shape[0]
    fpto.set_vec_tile_shapes(8, 64)
    for i in fpto.loop(0, (n + 15) // 16, 1, name="L", idx_name="i"):
        v = fpto.view(x, [16, 64], [i * 16, 0], valid_shape=[(n - i * 16).min(16), 64])
        fpto.assemble(fpto.exp(v) * 2.0, [i * 16, 0], out)


@fpto.jit
def api_identity(x: fpto.Tensor((8, 16), fpto.DT_FP32)) -> fpto.Tensor((8, 16), fpto.DT_FP32):
    return x


@pytest.mark.parametrize("backend", BACKENDS)
def test_api_loop_over_blocks_with_run_time_valid_shapes(backend):
    """PyPTO's dynamic pattern: a static 16-row view whose valid rows are min(n - 16 i, 16)."""
    fn = api_blocks.with_options(backend=backend)
    for n in (1, 16, 37):
        x = rand(n, 64)
        out = np.zeros_like(x)
        fn(x, out)
        np.testing.assert_allclose(out, np.exp(x.astype(np.float64)) * 2, rtol=1e-6)
    assert "arith.minsi" in fn.stages(x, out).kernels


@pytest.mark.parametrize("backend", BACKENDS)
def test_api_returning_a_parameter_copies_it(backend):
    x = rand(8, 16)
    np.testing.assert_array_equal(api_identity.with_options(backend=backend)(x), x)
