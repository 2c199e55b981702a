"""The cupy backend on a GPU: every example against the reference, CuPy arrays used in place, the
tensor-core GEMM branch, a fault through the device-side error record. Skipped (with the reason)
where CuPy or a CUDA device is missing; host emulation is tested in test_cupy_emulation.py."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import openpto as pto
from openpto.backends.cupy import CupyBackend
from openpto.isa.diagnostics import PTOError

ROOT = pathlib.Path(__file__).resolve().parent.parent
_OK, _WHY = CupyBackend().is_available()
pytestmark = pytest.mark.skipif(not _OK, reason=f"no CUDA device: {_WHY}")

EXAMPLES = ("vector_add", "double_buffer_copy", "softmax", "layernorm", "gemm", "flash_attention")


@pytest.fixture(autouse=True)
def _cache(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPTO_CACHE_DIR", str(tmp_path / "cache"))


def _inputs(name: str, rng: np.random.Generator) -> tuple[list, int]:
    r, f32 = 200, np.float32
    return {
        "vector_add": ([rng.random((r, 1024), f32), rng.random((r, 1024), f32), np.zeros((r, 1024), f32), r], 4),
        "double_buffer_copy": ([rng.random((256, 512), f32), np.zeros((256, 512), f32), 256], 1),
        "softmax": ([rng.standard_normal((256, 1024), f32) * 4, np.zeros((256, 1024), f32), 256], 5),
        "layernorm": ([rng.standard_normal((256, 1024), f32), rng.random(1024, f32), rng.random(1024, f32),
                       np.zeros((256, 1024), f32), 1e-5, 256], 3),
        "gemm": ([rng.standard_normal((256, 256)).astype(np.float16),
                  rng.standard_normal((256, 384)).astype(np.float16), np.zeros((256, 384), f32), 256, 384, 256], 1),
        "flash_attention": ([rng.standard_normal((128, 64), f32), np.asfortranarray(rng.standard_normal((64, 192), f32)),
                             rng.standard_normal((192, 64), f32), np.zeros((128, 64), f32), 128, 192, 0.125], 1),
    }[name]


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_matches_the_reference_on_the_gpu(name: str) -> None:
    m = pto.load(ROOT / "examples" / f"{name}.pto")
    args, blocks = _inputs(name, np.random.default_rng(5))
    mine = [a.copy(order="K") if isinstance(a, np.ndarray) else a for a in args]
    exe = pto.compile(m, backend="cupy")
    got = exe.run(exe.kernels[0], *mine, block_num=blocks)
    want = pto.compile(m, backend="reference", profile="cuda").run(exe.kernels[0], *args, block_num=blocks)
    assert got.counters == want.counters
    for out, w in want.outputs.items():
        # gemm: tensor cores sum in f32 in another order (the sum contract), so a tolerance
        tol = dict(rtol=1e-3, atol=1e-3) if name == "gemm" else dict(rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(got.outputs[out], w, **tol)


def test_cupy_arrays_are_used_in_place() -> None:
    import cupy
    m = pto.load(ROOT / "examples" / "vector_add.pto")
    a = cupy.arange(64 * 1024, dtype=cupy.float32).reshape(64, 1024)
    c = cupy.zeros_like(a)
    res = pto.compile(m, backend="cupy")(a, a, c, 64)
    assert res.outputs["c"] is c
    np.testing.assert_array_equal(cupy.asnumpy(c), 2 * cupy.asnumpy(a))


def test_out_of_bounds_is_the_references_fault_not_a_device_fault() -> None:
    m = pto.load(ROOT / "examples" / "vector_add.pto")
    a = np.ones((40, 1024), np.float32)
    with pytest.raises(PTOError) as e:
        pto.compile(m, backend="cupy")(a, a, np.zeros_like(a), 64)
    assert e.value.code == "RUNTIME_OOB"
    c = np.zeros_like(a)                  # the device is still usable afterwards
    pto.compile(m, backend="cupy")(a, a, c, 40)
    np.testing.assert_array_equal(c, 2 * a)
