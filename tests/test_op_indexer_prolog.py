"""The Indexer Prolog operator (operators/indexer_prolog.py) against a numpy golden written here,
step by step from the public operator's description: reference at the small shapes, llvm at the
small and medium ones, token counts b * s1 for several batches, including counts that are not a
multiple of the vector tiles' rows (edge tiles); and its compile for a3 and a5.

How results are compared. The golden runs every elementwise step in f32 as the operator does, and
the matmuls exactly (float64, or int64 for the i8 one) rounded once to the result type. The
kernels accumulate float matmuls in f32, in their own order, so a value rounded to bf16 after a
matmul (the key projection, the Hadamard transforms, the weights) can land one bf16 unit away from
the golden's when the exact sum lies next to a rounding boundary. That unit moves a quantised value
by at most one and a scale (max|x| / 127) by at most one bf16 unit: so the int8 outputs must match
within 1 and exactly almost everywhere, the scales and weights within a bf16 unit. (Rounding ties of
x * 127 / max|x| are not a source: both sides round half to even from the same f32 value.)
"""
import importlib
import math

import ml_dtypes
import numpy as np
import pytest

from openpto.isa import PTOError
from openpto.operators import indexer_prolog as ip

jit_module = importlib.import_module("openpto.frontend.jit")   # the package's `jit` is the decorator
BF16 = ml_dtypes.bfloat16
BF16_UNIT = 2.0 ** -7        # bf16 spacing relative to the value (at most)
F32 = np.float32


# --------------------------------------------------------------------------------------------
# the golden

def _rope(x, cos, sin):
    """x * cos + [-x2, x1] * sin in f32, x and cos/sin f32 of the last axis' size."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    out = np.empty_like(x)
    out[..., :h] = x1 * cos[..., :h] - x2 * sin[..., :h]
    out[..., h:] = x2 * cos[..., h:] + x1 * sin[..., h:]
    return out


def _rope_head(x, cos, sin, rope, dtype):
    """RoPE on the first ``rope`` columns of x (``dtype``), in f32, rounded back to ``dtype``."""
    out = x.copy()
    out[..., :rope] = _rope(x[..., :rope].astype(F32), cos, sin).astype(dtype)
    return out


def _mm(a, b, dtype):
    """A matmul summed exactly and rounded once to dtype."""
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(dtype)


def _layer_norm(k, gamma, beta):
    mean = k.astype(np.float64).mean(-1, keepdims=True)
    var = ((k - mean) ** 2).mean(-1, keepdims=True)
    return ((k - mean) / np.sqrt(var + 1e-6) * gamma.astype(F32) + beta.astype(F32)).astype(F32)


def _quant(x):
    """Per row: rint(x * (127 / max|x|)) as i8, and 1 / (127 / max|x|) as f16 (f32 steps)."""
    xf = x.astype(F32)
    scale = F32(127.0) / np.abs(xf).max(-1, keepdims=True)
    return np.rint(xf * scale).astype(np.int8), (F32(1.0) / scale).astype(np.float16)


def golden_quant(s, x, q_norm, q_norm_scale, w_qb, w_qb_scale, wk, w_proj, gamma, beta, cos, sin, hq, hk):
    t, n, d, r = x.shape[0], s.heads, s.head_dim, s.rope_dim
    q = (q_norm.astype(np.int64) @ w_qb.astype(np.int64)).astype(F32)
    q = ((q * q_norm_scale) * w_qb_scale.reshape(1, -1)).astype(BF16).reshape(t, n, d)
    cos_f, sin_f = cos.astype(F32), sin.astype(F32)
    q = _rope_head(q, cos_f[:, None, :], sin_f[:, None, :], r, BF16)
    q_int8, q_scale = _quant(_mm(q, hq, F32).astype(BF16))
    k = _layer_norm(_mm(x, wk, F32), gamma, beta).astype(BF16)
    k = _rope_head(k, cos_f, sin_f, r, BF16)
    k_int8, k_scale = _quant(_mm(k, hk, F32).astype(BF16))
    w = _mm(x, w_proj, F32).astype(BF16).astype(F32) * F32(1.0 / (math.sqrt(n) * math.sqrt(d)))
    return q_int8, q_scale, k_int8, k_scale, w.astype(np.float16)


def golden_plain(s, dtype, x, q_lora, w_q, wk, w_proj, gamma, beta, cos, sin):
    t, n, d, r = x.shape[0], s.heads, s.head_dim, s.rope_dim
    cos_f, sin_f = cos.astype(F32), sin.astype(F32)
    q = _mm(q_lora, w_q, F32).astype(dtype).reshape(t, n, d)
    q = _rope_head(q, cos_f[:, None, :], sin_f[:, None, :], r, dtype)
    k = _rope_head(_layer_norm(_mm(x, wk, F32), gamma, beta).astype(dtype), cos_f, sin_f, r, dtype)
    w = _mm(x, w_proj, F32).astype(dtype).astype(F32) * F32(1.0 / (math.sqrt(n) * math.sqrt(d)))
    return q, k, w.astype(dtype)


# --------------------------------------------------------------------------------------------
# inputs: b sequences of s1 new tokens each, flattened to t = b * s1 rows as the model does

def _common(rng, s, b, s1, dtype):
    t, r = b * s1, s.rope_dim
    pos = (rng.integers(0, 4096, b)[:, None] + np.arange(s1)[None, :]).reshape(t, 1)
    freq = 10000.0 ** (-np.arange(r) % (r // 2) / (r // 2))
    ang = pos * freq[None, :]
    u = lambda *shape: rng.uniform(-1, 1, shape)     # noqa: E731
    return dict(x=u(t, s.hidden).astype(dtype), wk=u(s.hidden, s.head_dim).astype(dtype),
                w_proj=u(s.hidden, s.heads).astype(dtype), gamma=(1 + 0.1 * u(s.head_dim)).astype(dtype),
                beta=(0.1 * u(s.head_dim)).astype(dtype), cos=np.cos(ang).astype(dtype),
                sin=np.sin(ang).astype(dtype))


def quant_inputs(s, b, s1, seed=0):
    rng = np.random.default_rng(seed)
    c = _common(rng, s, b, s1, BF16)
    t, nd, d = b * s1, s.heads * s.head_dim, s.head_dim
    # a Hadamard matrix of order d (Sylvester's construction), normalised, as the model uses it
    h = np.ones((1, 1))
    while h.shape[0] < d:
        h = np.block([[h, h], [h, -h]])
    had = (h / math.sqrt(d)).astype(BF16)
    return [c["x"], rng.integers(-128, 128, (t, s.q_lora)).astype(np.int8),
            rng.uniform(1e-3, 2e-2, (t, 1)).astype(F32), rng.integers(-128, 128, (s.q_lora, nd)).astype(np.int8),
            rng.uniform(1e-3, 2e-2, (nd, 1)).astype(F32), c["wk"], c["w_proj"], c["gamma"], c["beta"],
            c["cos"], c["sin"], had, rng.uniform(-1, 1, (d, d)).astype(BF16)]


def plain_inputs(s, b, s1, dtype, seed=0):
    rng = np.random.default_rng(seed)
    c = _common(rng, s, b, s1, dtype)
    t = b * s1
    return [c["x"], rng.uniform(-1, 1, (t, s.q_lora)).astype(dtype),
            (rng.uniform(-1, 1, (s.q_lora, s.heads * s.head_dim)) / math.sqrt(s.q_lora)).astype(dtype),
            c["wk"], c["w_proj"], c["gamma"], c["beta"], c["cos"], c["sin"]]


# --------------------------------------------------------------------------------------------
# comparisons

def assert_int8_close(got, want, name):
    """Within one unit everywhere, exactly equal almost everywhere (see the module docstring)."""
    assert got.dtype == np.int8 and got.shape == want.shape, (name, got.dtype, got.shape, want.shape)
    diff = np.abs(got.astype(np.int32) - want.astype(np.int32))
    assert diff.max() <= 1, f"{name}: {int(diff.max())} units off at {np.unravel_index(diff.argmax(), diff.shape)}"
    assert (diff == 0).mean() >= 0.99, f"{name}: only {(diff == 0).mean():.4f} of the values exact"
    assert np.abs(got).max() == 127, f"{name}: the largest value of a row is +-127"


def assert_float_close(got, want, name, rel):
    assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, got.shape, want.shape)
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.isfinite(g).all(), name
    # one rounding unit of the value, or of the row's size where a sum cancelled to near zero
    tol = rel * (np.abs(w) + np.abs(w).max(-1, keepdims=True) / 64)
    bad = np.abs(g - w) > tol
    assert not bad.any(), f"{name}: {int(bad.sum())} values off, worst {np.abs(g - w).max()}"


def check_quant(s, out, args):
    want = golden_quant(s, *args)
    t = args[0].shape[0]
    shapes = [(t, s.heads, s.head_dim), (t, s.heads, 1), (t, s.head_dim), (t, 1), (t, s.heads)]
    assert [np.asarray(o).shape for o in out] == shapes
    q8, qs, k8, ks, w = (np.asarray(o) for o in out)
    assert_int8_close(q8, want[0], "q_int8")
    assert_float_close(qs, want[1], "q_scale", BF16_UNIT)
    assert_int8_close(k8, want[2], "k_int8")
    assert_float_close(ks, want[3], "k_scale", BF16_UNIT)
    assert_float_close(w, want[4], "weights", BF16_UNIT)
    # the scales dequantise: int8 * scale is the Hadamard output within half a unit of the code
    for v8, sc in ((q8, qs), (k8, ks)):
        assert np.all(np.abs(v8.astype(F32) * sc.astype(F32)) <= 127.5 * sc.astype(F32) * (1 + 1e-3))


PLAIN_UNIT = {"bf16": BF16_UNIT, "f16": 2.0 ** -10, "f32": 2.0 ** -16}   # f32: sums of ~100 terms in another order
PLAIN_DTYPES = {"bf16": BF16, "f16": np.float16, "f32": F32}


def check_plain(s, dtype_name, out, args):
    dtype = PLAIN_DTYPES[dtype_name]
    want = golden_plain(s, dtype, *args)
    names = ("q", "k", "weights")
    for name, o, w in zip(names, out, want):
        assert_float_close(np.asarray(o), w, name, 2 * PLAIN_UNIT[dtype_name])


# --------------------------------------------------------------------------------------------
# values

SMALL = ip.SHAPES["small"]      # vector tiles of 4 rows: t = 5, 6, 7 end in a partial tile
MEDIUM = ip.SHAPES["medium"]    # 16 rows: t = 19, 24 end in a partial tile


@pytest.mark.parametrize("b,s1", [(1, 1), (1, 5), (3, 2)])
def test_quant_small_reference(b, s1):
    fn = ip.build(SMALL, backend="reference")
    args = quant_inputs(SMALL, b, s1, seed=b * 10 + s1)
    check_quant(SMALL, fn(*args), args)


@pytest.mark.parametrize("b,s1", [(1, 1), (2, 2), (1, 7), (4, 9)])
def test_quant_small_llvm(b, s1):
    fn = ip.build(SMALL, backend="llvm")
    args = quant_inputs(SMALL, b, s1, seed=b * 10 + s1)
    check_quant(SMALL, fn(*args), args)


@pytest.mark.parametrize("b,s1", [(1, 3), (4, 4), (1, 19), (8, 3)])
def test_quant_medium_llvm(b, s1):
    fn = ip.build(MEDIUM, backend="llvm")
    args = quant_inputs(MEDIUM, b, s1, seed=b * 10 + s1)
    check_quant(MEDIUM, fn(*args), args)


def test_one_compile_serves_every_token_count(monkeypatch):
    compiles = []
    real = jit_module._compile
    monkeypatch.setattr(jit_module, "_compile", lambda *a, **k: compiles.append(1) or real(*a, **k))
    fn = ip.build(SMALL, backend="llvm")
    fn.clear_cache()        # an earlier test may have compiled the same program in this process
    for b, s1 in ((1, 2), (3, 3), (2, 5)):
        args = quant_inputs(SMALL, b, s1, seed=b)
        check_quant(SMALL, fn(*args), args)
    assert len(compiles) == 1


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_plain_small_reference(dtype):
    fn = ip.build(SMALL, quant=False, dtype=dtype, backend="reference")
    args = plain_inputs(SMALL, 2, 3, PLAIN_DTYPES[dtype], seed=5)
    check_plain(SMALL, dtype, fn(*args), args)


@pytest.mark.parametrize("dtype,b,s1", [("bf16", 1, 1), ("bf16", 3, 3), ("f16", 2, 5), ("f32", 1, 7)])
def test_plain_small_llvm(dtype, b, s1):
    fn = ip.build(SMALL, quant=False, dtype=dtype, backend="llvm")
    args = plain_inputs(SMALL, b, s1, PLAIN_DTYPES[dtype], seed=b + s1)
    check_plain(SMALL, dtype, fn(*args), args)


@pytest.mark.parametrize("b,s1", [(2, 2), (1, 19)])
def test_plain_medium_llvm(b, s1):
    fn = ip.build(MEDIUM, quant=False, dtype="bf16", backend="llvm")
    args = plain_inputs(MEDIUM, b, s1, BF16, seed=b + s1)
    check_plain(MEDIUM, "bf16", fn(*args), args)


def test_golden_is_not_vacuous():
    """The comparison notices a wrong operator: a RoPE with sin's sign flipped moves the codes."""
    args = quant_inputs(SMALL, 2, 3, seed=1)
    good = golden_quant(SMALL, *args)
    flipped = list(args)
    flipped[10] = (-args[10].astype(F32)).astype(BF16)
    bad = golden_quant(SMALL, *flipped)
    with pytest.raises(AssertionError):
        assert_int8_close(bad[0], good[0], "q_int8")


# --------------------------------------------------------------------------------------------
# retargeting: the same source compiled (kernels checked) for the NPU profiles

@pytest.mark.parametrize("profile", ["a3", "a5"])
@pytest.mark.parametrize("quant", [True, False])
def test_compiles_for_npu_profiles(profile, quant):
    fn = ip.build(SMALL, quant=quant, backend="reference", profile=profile)
    stages = fn.stages_from_annotations()
    kernels = str(stages.stage("kernels"))
    assert "tmatmul" in kernels
    if quant:   # the int8 projection and the int8 codes are made on that profile's units
        assert "xi8>" in kernels and "tcvt" in kernels


def test_medium_compiles_for_a3_with_cube_tiles():
    """The cube-tile knob reaches the projections: the query's (m, k, n) tiles loop over K."""
    s = ip.PrologShapes(**{**MEDIUM.__dict__, "cube": (16, 128, 64)})
    stages = ip.build(s, backend="reference", profile="a3").stages_from_annotations()
    assert "16x64 tiles" in str(stages.stage("partition"))


def test_bad_rope_dim_is_refused():
    with pytest.raises(ValueError):
        ip.PrologShapes(hidden=64, q_lora=32, heads=4, head_dim=32, rope_dim=15)


def test_wrong_dtype_argument_is_a_pto_error():
    fn = ip.build(SMALL, backend="reference")
    args = quant_inputs(SMALL, 1, 2)
    args[1] = args[1].astype(np.int16)
    with pytest.raises(PTOError) as e:
        fn(*args)
    assert e.value.code == "FRONT_ARG_DTYPE"
