"""Every example program runs on the reference backend and matches a numpy computation
written here independently (profiles cpu and a3 verify the same module)."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto as pto

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
rng = np.random.default_rng(2026)


def compiled(name: str, profile: str = "a3"):  # noqa: ANN201
    return pto.compile(pto.load(EXAMPLES / name), "reference", profile)


@pytest.mark.parametrize("rows", [1024, 1000, 33, 0])
def test_vector_add(rows: int) -> None:
    a = rng.standard_normal((rows, 1024)).astype(np.float32)
    b = rng.standard_normal((rows, 1024)).astype(np.float32)
    c = np.full((rows, 1024), np.nan, np.float32)
    res = compiled("vector_add.pto")(a=a, b=b, c=c, rows=rows)
    assert np.array_equal(c, a + b)
    assert res.outputs.keys() == {"c"}


@pytest.mark.parametrize("profile", ["cpu", "a3"])
@pytest.mark.parametrize("blocks", [1, 3])
def test_softmax(profile: str, blocks: int) -> None:
    x = (rng.standard_normal((256, 1024)) * 5).astype(np.float32)
    x[3, 7] = 80.0                                       # a dominant entry: row 3 is ~one-hot
    y = np.full_like(x, np.nan)
    compiled("softmax.pto", profile).run("softmax", x, y, 256, block_num=blocks)
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=2e-6, atol=1e-9)


def test_softmax_rows_not_a_multiple_of_the_tile_leave_the_tensor() -> None:
    x = np.zeros((40, 1024), np.float32)
    with pytest.raises(pto.PTOError) as e:
        compiled("softmax.pto")(x, np.zeros_like(x), 40)
    assert e.value.code == "RUNTIME_OOB" and e.value.location.line is not None


def test_layernorm() -> None:
    rows = 48
    x = (rng.standard_normal((rows, 1024)) * 3 + 1).astype(np.float32)
    gamma = rng.standard_normal(1024).astype(np.float32)
    beta = rng.standard_normal(1024).astype(np.float32)
    y = np.full_like(x, np.nan)
    compiled("layernorm.pto")(x=x, gamma=gamma, beta=beta, y=y, eps=1e-5, rows=rows)
    x64 = x.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(1, keepdims=True)
    want = (x64 - mu) / np.sqrt(var + 1e-5) * gamma + beta
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5)


def test_gemm() -> None:
    m, n, k = 256, 128, 384
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    res = compiled("gemm.pto")(a=a, b=b, c=c, m=m, n=n, k=k)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)
    assert res.counters["TMATMUL"] + res.counters["TMATMUL_ACC"] == (m // 128) * (n // 128) * (k // 64)


def test_flash_attention() -> None:
    sq, skv, d = 128, 192, 64
    q = rng.standard_normal((sq, d)).astype(np.float32)
    k = rng.standard_normal((skv, d)).astype(np.float32)
    v = rng.standard_normal((skv, d)).astype(np.float32)
    o = np.full((sq, d), np.nan, np.float32)
    compiled("flash_attention.pto")(q=q, kt=k.T, v=v, o=o, sq=sq, skv=skv, scale=0.125)
    s = (q.astype(np.float64) @ k.T.astype(np.float64)) * 0.125
    p = np.exp(s - s.max(1, keepdims=True))
    np.testing.assert_allclose(o, (p / p.sum(1, keepdims=True)) @ v, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [32, 96])
def test_double_buffer_copy(rows: int) -> None:
    src = rng.standard_normal((rows, 512)).astype(np.float32)
    src.view(np.uint32)[0, :3] = [0x7FC00001, 0x80000000, 0x00000001]   # NaN payload, -0, denormal
    dst = np.full_like(src, np.nan)
    res = compiled("double_buffer_copy.pto")(src=src, dst=dst, rows=rows)
    assert np.array_equal(dst.view(np.uint32), src.view(np.uint32))
    assert res.counters["SET_FLAG"] == res.counters["WAIT_FLAG"]


def test_every_example_is_covered_here() -> None:
    names = {p.stem for p in EXAMPLES.glob("*.pto")}
    tested = {n[len("test_"):] for n in globals() if n.startswith("test_")}
    assert names <= tested, names - tested
