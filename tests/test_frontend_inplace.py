"""In-place writes in the tensor frontend: a result written into a tensor it also reads at
other elements (a transpose, a tiled matmul, shifted windows) must see the old values, as numpy
does. The tiler then keeps a workspace and a separate copy kernel (decision 'Frontend in-place
writes'); a read of the very element written stays fused. Compared with numpy written here."""
import numpy as np
import pytest

import openpto.frontend as pto

RNG = np.random.default_rng(61)
CONFIGS = [("reference", "cpu"), ("llvm", "cpu"), ("llvm", "a3")]


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def transpose_in_place(x: pto.Tensor((32, 32), pto.DT_FP32)):
    pto.set_vec_tile_shapes(8, 8)
    x[:] = pto.transpose(x)


def matmul_into_a(a: pto.Tensor((64, 64), pto.DT_FP32), b: pto.Tensor((64, 64), pto.DT_FP32)):
    pto.set_cube_tile_shapes(16, 16, 16)
    a[:] = a @ b


def matmul_into_b(a: pto.Tensor((64, 64), pto.DT_FP32), b: pto.Tensor((64, 64), pto.DT_FP32)):
    pto.set_cube_tile_shapes(16, 16, 16)
    b[:] = a @ b


def rows_down(x: pto.Tensor((16, 64), pto.DT_FP32)):
    pto.set_vec_tile_shapes(4, 16)
    x[1:16, :] = x[0:15, :] + 1.0


def cols_right(x: pto.Tensor((16, 64), pto.DT_FP32)):
    pto.set_vec_tile_shapes(4, 8)
    x[:, 4:64] = x[:, 0:60] * 2.0


def _expect_rows_down(x):
    e = x.copy()
    e[1:16] = x[0:15] + 1
    return e


def _expect_cols_right(x):
    e = x.copy()
    e[:, 4:64] = x[:, 0:60] * 2
    return e


CASES = {
    "transpose": (transpose_in_place, [(32, 32)], 0, lambda x: x.T),
    "a = a @ b": (matmul_into_a, [(64, 64), (64, 64)], 0, lambda a, b: a.astype(np.float64) @ b),
    "b = a @ b": (matmul_into_b, [(64, 64), (64, 64)], 1, lambda a, b: a.astype(np.float64) @ b),
    "rows shifted down": (rows_down, [(16, 64)], 0, _expect_rows_down),
    "columns shifted right": (cols_right, [(16, 64)], 0, _expect_cols_right),
}


@pytest.mark.parametrize("backend,profile", CONFIGS)
@pytest.mark.parametrize("case", list(CASES))
def test_in_place_write_sees_the_old_values(case, backend, profile):
    fn, shapes, written, expect = CASES[case]
    args = [_rand(*s) for s in shapes]
    want = expect(*[a.copy() for a in args])
    pto.jit(fn, backend=backend, profile=profile)(*args)
    np.testing.assert_allclose(args[written], want, rtol=1e-4, atol=1e-3)


def test_a_hazard_keeps_a_workspace_and_a_separate_copy():
    text = pto.jit(cols_right).stages().stage("partition")
    assert "2 kernel(s)" in text and "reads elsewhere" in text


def test_reading_the_very_element_written_stays_fused():
    """x[:] = x * 2 + 1 reads each element only where it writes it: one kernel, no copy."""
    @pto.jit(backend="llvm")
    def f(x: pto.Tensor((16, 64), pto.DT_FP32)):
        pto.set_vec_tile_shapes(4, 16)
        x[:] = x * 2.0 + 1.0
    x = _rand(16, 64)
    want = x * 2 + 1
    assert "1 kernel(s)" in f.stages().stage("partition")
    f(x)
    np.testing.assert_allclose(x, want, rtol=1e-6)
