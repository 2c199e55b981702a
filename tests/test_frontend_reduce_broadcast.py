"""Shapes the review found mis-tiled: a last-axis reduction that drops its dim on a tensor of
rank 3 or more (one value per source row, placed as a column of its buffer), and broadcasts of
[R, 1] operands against [1, 1] and [1]. Results against numpy written here."""
import numpy as np
import pytest

import openpto.frontend as pto

RNG = np.random.default_rng(62)
CONFIGS = [("reference", "cpu"), ("llvm", "cpu"), ("llvm", "a3")]
NUMPY_REDUCE = {"sum": np.sum, "amax": np.max, "amin": np.min, "mean": np.mean}


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("backend,profile", CONFIGS)
@pytest.mark.parametrize("shape", [(3, 5, 7), (2, 1, 3, 17)])
@pytest.mark.parametrize("name", list(NUMPY_REDUCE))
def test_last_axis_reduction_without_keepdim_on_n_d(name, shape, backend, profile):
    def f(x):
        pto.set_vec_tile_shapes(*([2] * (len(shape) - 1) + [4]))
        return getattr(pto, name)(x, -1)
    x = _rand(*shape)
    got = pto.jit(f, backend=backend, profile=profile)(x)
    want = NUMPY_REDUCE[name](x.astype(np.float64), axis=-1)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend,profile", CONFIGS)
def test_flat_row_reduction_assembled_into_a_window_and_consumed(backend, profile):
    """Assembled into a window it goes through a workspace (a column of 15 values is not a 3x5
    window); a consumer reads it as the [3, 5] tensor it is."""
    @pto.jit(backend=backend, profile=profile)
    def f(x: pto.Tensor((3, 5, 7), pto.DT_FP32), o: pto.Tensor((4, 6), pto.DT_FP32)):
        s = pto.amax(x, -1)
        o[1:4, 1:6] = s * 2.0 + 1.0
        o[0:3, 0:5] = pto.sum(x, -1)
    x, o = _rand(3, 5, 7), _rand(4, 6)
    want = o.astype(np.float64).copy()
    want[1:4, 1:6] = x.max(-1) * 2.0 + 1.0
    want[0:3, 0:5] = x.astype(np.float64).sum(-1)
    f(x, o)
    np.testing.assert_allclose(o, want, rtol=1e-5, atol=1e-5)
    assert f.stages().check() is None


COLUMN_CASES = {
    "[5,1] + [1,1]": ((5, 1), (1, 1), lambda x, y: x + y, np.add),
    "[1,1] - [5,1]": ((1, 1), (5, 1), lambda x, y: x - y, np.subtract),
    "[5,1] * [1]": ((5, 1), (1,), lambda x, y: x * y, np.multiply),
    "maximum([5,1], [1,1])": ((5, 1), (1, 1), pto.maximum, np.maximum),
}


@pytest.mark.parametrize("backend,profile", CONFIGS)
@pytest.mark.parametrize("case", list(COLUMN_CASES))
def test_single_value_broadcast_down_a_column(case, backend, profile):
    sa, sb, op, ref = COLUMN_CASES[case]
    x, y = _rand(*sa), _rand(*sb)
    got = pto.jit(lambda a, b: op(a, b), backend=backend, profile=profile)(x, y)
    want = ref(x.astype(np.float64), y.astype(np.float64))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend,profile", CONFIGS)
def test_single_value_with_partial_row_tiles_and_a_row_reduction(backend, profile):
    @pto.jit(backend=backend, profile=profile)
    def f(x, y):
        pto.set_vec_tile_shapes(8, 4)
        return pto.sum(x, -1, True) - y
    x, y = _rand(20, 9), _rand(1, 1)
    want = x.astype(np.float64).sum(-1, keepdims=True) - y
    np.testing.assert_allclose(f(x, y), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend,profile", CONFIGS + [("reference", "a3")])
@pytest.mark.parametrize("cond_shape", [(6, 1), (1, 9)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_where_with_a_broadcast_condition(cond_shape, dtype, backend, profile):
    """The mask is one value per row (or per column): it is spread as numbers, not as i1."""
    def f(c, x):
        pto.set_vec_tile_shapes(4, 4)
        return pto.where(c > 0, x, -x)
    c = _rand(*cond_shape).astype(dtype)
    x = (_rand(6, 9) * 10).astype(dtype)
    got = pto.jit(f, backend=backend, profile=profile)(c, x)
    np.testing.assert_array_equal(got, np.where(c > 0, x, -x))
