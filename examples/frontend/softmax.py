"""Row softmax written with the tensor frontend: the first PyPTO seed program, unchanged but for
the import line. Run it (`python examples/frontend/softmax.py`) to compile it for the llvm
backend and compare with numpy; `pto frontend examples/frontend/softmax.py --stage kernels`
prints the PTO-AS it becomes."""
import numpy as np

import openpto.frontend as pypto

M, N = 300, 1000   # sizes: any; the 32 x 32 tiles at the edges are partial (valid regions)


@pypto.frontend.jit
def test_softmax(input: pypto.Tensor((M, N), pypto.DT_FP32)) -> pypto.Tensor((M, N), pypto.DT_FP32):
    pypto.set_vec_tile_shapes(32, 32)
    rowmax = pypto.amax(input, -1, True)
    sub_res = pypto.sub(input, rowmax)
    exp_res = pypto.exp(sub_res)
    esum = pypto.sum(exp_res, -1, True)
    output = pypto.div(exp_res, esum)
    return output


if __name__ == "__main__":
    x = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    y = test_softmax(x)
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    print(f"softmax {M}x{N}: equal to numpy")
