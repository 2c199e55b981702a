"""Softmax over a 4-D [b, n1, n2, dim] tensor with a dynamic batch: the second PyPTO seed
program, unchanged but for the import line. One compile serves every batch size; run it
(`python examples/frontend/softmax_dynamic.py`) to check b = 1, 3 and 17 against numpy."""
import numpy as np

import openpto.frontend as pto

N1, N2, DIM = 32, 1, 256   # sizes: the static dims (the batch is dynamic)


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


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    for b in (1, 3, 17):
        x = rng.standard_normal((b, N1, N2, DIM)).astype(np.float32)
        y = np.zeros_like(x)
        softmax(x, y)
        e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    print("dynamic-batch softmax, b = 1, 3, 17: equal to numpy, one compile")
