"""The two seed programs, held verbatim, run through the whole frontend on reference and llvm
for several shapes (edge tiles: sizes that are not multiples of the tile shape) and dynamic
batch sizes 1, 3, 17, against numpy written here.

Each program is written into a file (with its module-level sizes) and imported, so it runs as a
user's module does (capture reads its source)."""
import importlib.util
import itertools

import numpy as np
import pytest


SEED1 = '''
import openpto.frontend as pypto

@pypto.frontend.jit
def test_softmax(input: pypto.Tensor((M, N), pypto.DT_FP32)) -> pypto.Tensor((M, N), pypto.DT_FP32):
    pypto.set_vec_tile_shapes(32, 32)
    rowmax = pypto.amax(input, -1, True)
    sub_res = pypto.sub(input, rowmax)
    exp_res = pypto.exp(sub_res)
    esum = pypto.sum(exp_res, -1, True)
    output = pypto.div(exp_res, esum)
    return output
'''

SEED2 = '''
import openpto.frontend as pto

def softmax_core(x):
    rowmax = pto.row_max_single(x)
    sub = pto.sub(x, rowmax)
    exp = pto.exp(sub)
    esum = pto.row_sum_single(exp)
    return pto.div(exp, esum)

@pto.jit
def softmax(input_tensor: pto.Tensor((pto.DYNAMIC, N1, N2, DIM), pto.DT_FP32),
            output_tensor: pto.Tensor((pto.DYNAMIC, N1, N2, DIM), pto.DT_FP32)):
    tensor_shape = input_tensor.shape
    b = tensor_shape[0]
    n1, n2, dim = tensor_shape[1:]
    tile_b = pto.symbolic_scalar(1)
    b_loop = b / tile_b
    pto.set_vec_tile_shapes(1, 4, 1, 64)
    with pto.function("SOFTMAX", [input_tensor], [output_tensor]):
        for idx in pto.loop(0, b_loop, 1, name="LOOP_L0_bIdx", idx_name="idx"):
            b_offset = idx * tile_b
            input_view = pto.view(input_tensor, [1, n1, n2, dim], [b_offset, 0, 0, 0])
            softmax_out = pto.tensor([1, n1, n2, dim], pto.DT_FP32, "softmax_out")
            softmax_out[:] = softmax_core(input_view)
            pto.assemble(softmax_out, [b_offset, 0, 0, 0], output_tensor)
'''

_count = itertools.count()


def load(tmp_path, source: str, **sizes):
    """The program as a module of its own, its sizes set at module level."""
    name = f"seed_{next(_count)}"
    path = tmp_path / f"{name}.py"
    path.write_text("".join(f"{k} = {v}\n" for k, v in sizes.items()) + source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
    assert "seed_" in text and ".py:9" in text and "invoked 2 times" in text
    stages.check()


def test_seed1_torch_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    mod = load(tmp_path, SEED1, M=40, N=48)
    x = torch.randn(40, 48, dtype=torch.float32)
    out = mod.test_softmax(x)
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), np_softmax(x.numpy()), rtol=1e-5, atol=1e-7)
