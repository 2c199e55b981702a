"""Reshapes over a run-time size: [T, 4, 8] and [T * 4, 8] hold as many elements (the operators
flatten heads into rows this way), a different count is still FRONT_SHAPE. Against numpy written
here, on reference and llvm."""
import numpy as np
import pytest

import openpto.frontend as pto
from openpto.isa import PTOError

T = pto.dynamic("T")


@pytest.mark.parametrize("backend", ["reference", "llvm"])
@pytest.mark.parametrize("t", [1, 3])
def test_heads_flattened_into_rows_of_a_runtime_count(backend, t):
    @pto.jit(backend=backend)
    def rows(x: pto.Tensor((T, 4, 8), pto.DT_FP32), w: pto.Tensor((8, 8), pto.DT_FP32)):
        n = x.shape[0]
        flat = pto.reshape(x * 2.0, [n * 4, 8])
        return pto.reshape(pto.matmul(flat, w), [n, 4, 8])

    rng = np.random.default_rng(t)
    x = rng.uniform(-1, 1, (t, 4, 8)).astype(np.float32)
    w = rng.uniform(-1, 1, (8, 8)).astype(np.float32)
    want = ((x.astype(np.float64) * 2).reshape(t * 4, 8) @ w).reshape(t, 4, 8)
    np.testing.assert_allclose(rows(x, w), want, rtol=1e-5, atol=1e-6)


def test_a_runtime_reshape_of_another_count_is_refused():
    @pto.jit
    def bad(x: pto.Tensor((T, 4, 8), pto.DT_FP32)):
        return pto.reshape(x, [x.shape[0] * 2, 8])

    with pytest.raises(PTOError) as e:
        bad.graph()
    assert e.value.code == "FRONT_SHAPE"
