"""The two seed programs, held verbatim, run through the whole frontend on reference and llvm
for several shapes (edge tiles: sizes that are not multiples of the tile shape) and dynamic
batch sizes 1, 3, 17, against numpy written here.

The programs are examples/frontend/softmax.py and softmax_dynamic.py, each written into a file
with other module-level sizes and imported, so it runs as a user's module does (capture reads its
source)."""

import numpy as np
import pytest

from frontend_seeds import load_seed, seed_source


def load(tmp_path, source: str, **sizes):
    """The seed example ``source`` as a module of its own with these module-level sizes."""
    return load_seed(source, tmp_path, **sizes)


SEED1, SEED2 = "softmax", "softmax_dynamic"


def on(jitted, backend):
    """The same function compiled for another backend (the seeds' decorator takes the default)."""
    return jitted.with_options(backend=backend)


def np_softmax(x):
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("backend", ["reference", "llvm"])
@pytest.mark.parametrize("M,N", [(64, 64), (70, 100), (5, 3), (33, 257)])
def test_seed1_softmax(tmp_path, backend, M, N):
    fn = on(load(tmp_path, SEED1, M=M, N=N).test_softmax, backend)
    x = np.random.default_rng(M * N).standard_normal((M, N)).astype(np.float32)
    out = fn(x)
    assert isinstance(out, np.ndarray) and out.shape == (M, N) and out.dtype == np.float32
    np.testing.assert_allclose(out, np_softmax(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("backend", ["reference", "llvm"])
@pytest.mark.parametrize("N1,N2,DIM", [(32, 1, 256), (6, 3, 100)])
def test_seed2_dynamic_batch_one_compile(tmp_path, backend, N1, N2, DIM):
    fn = on(load(tmp_path, SEED2, N1=N1, N2=N2, DIM=DIM).softmax, backend)
    for b in (1, 3, 17):
        x = np.random.default_rng(b).standard_normal((b, N1, N2, DIM)).astype(np.float32)
        out = np.zeros_like(x)
        assert fn(x, out) is None
        np.testing.assert_allclose(out, np_softmax(x), rtol=1e-5, atol=1e-7)
    stages = fn.stages(x, out)
    assert "scf.for %idx" in stages.kernels                 # the batch loop inside the kernel
    (kernel,) = stages.partition.kernels()
    assert kernel.loop is not None and kernel.loop.name == "LOOP_L0_bIdx"


def test_seed1_stages_name_the_source_lines(tmp_path):
    mod = load(tmp_path, SEED1, M=64, N=64)
    x = np.zeros((64, 64), np.float32)
    stages = mod.test_softmax.stages(x)
    text = str(stages.partition)
    print(text)
    amax_line = 1 + next(i for i, t in enumerate(seed_source(SEED1).splitlines()) if "pypto.amax(" in t)
    assert "seed_" in text and f".py:{amax_line}" in text and "invoked 2 times" in text
    stages.check()


def test_seed1_torch_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    mod = load(tmp_path, SEED1, M=40, N=48)
    x = torch.randn(40, 48, dtype=torch.float32)
    out = mod.test_softmax(x)
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), np_softmax(x.numpy()), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", [SEED1, SEED2])
def test_the_seed_examples_run_as_scripts(name, capsys):
    """``python examples/frontend/<name>.py`` checks itself against numpy and says so."""
    import runpy

    from frontend_seeds import EXAMPLES
    runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    assert "equal to numpy" in capsys.readouterr().out
