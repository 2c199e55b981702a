"""Two frontend fixes found by the Lightning Indexer: a cast to the tensor's own float type keeps
its values (TCVT f32 -> f32 rounds to integers, so it is a move), and a kernel begun by a per-row
op ([T, 1]) that wider ops join spans their columns (it took the per-row op's single column as
the valid width of every tile). Against numpy, on reference and llvm (cpu) and llvm a3."""
import numpy as np
import pytest

import openpto.frontend as pto

RUNS = [("reference", "cpu"), ("llvm", "cpu"), ("llvm", "a3")]


@pytest.mark.parametrize("backend,profile", RUNS)
@pytest.mark.parametrize("dtype", [pto.DT_FP32, pto.DT_FP16, pto.DT_INT32])
def test_cast_to_own_type_keeps_values(backend: str, profile: str, dtype) -> None:  # noqa: ANN001
    @pto.jit(backend=backend, profile=profile)
    def same(x: pto.Tensor((3, 40), dtype)) -> pto.Tensor((3, 40), dtype):
        pto.set_vec_tile_shapes(2, 16)
        return pto.cast(x, dtype) * 2

    x = ((np.random.default_rng(0).random((3, 40)) - 0.5) * 10).astype(dtype.np_dtype)
    np.testing.assert_array_equal(same(x), x * 2)


@pytest.mark.parametrize("backend,profile", RUNS)
def test_per_row_op_then_wide_ops_in_one_kernel(backend: str, profile: str) -> None:
    @pto.jit(backend=backend, profile=profile)
    def below(x: pto.Tensor((2, 70), pto.DT_FP32), lim: pto.Tensor((2, 1), pto.DT_INT32),
              pos: pto.Tensor((70,), pto.DT_INT32)) -> pto.Tensor((2, 70), pto.DT_FP32):
        pto.set_vec_tile_shapes(2, 1)
        limit = lim + 3                                # [2, 1]: starts the kernel
        pto.set_vec_tile_shapes(2, 32)
        return pto.where(pos < limit, x, -1.0)         # [2, 70] joins it (coalesced rows)

    rng = np.random.default_rng(1)
    x = rng.random((2, 70)).astype(np.float32)
    lim = np.array([[10], [60]], np.int32)
    pos = np.arange(70, dtype=np.int32)
    np.testing.assert_array_equal(below(x, lim, pos), np.where(pos[None, :] < lim + 3, x, -1.0))
