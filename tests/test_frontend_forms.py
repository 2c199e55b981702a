"""Tile forms beyond the row-local ones, through the whole frontend on reference and llvm against
numpy written here: reductions over a leading or middle axis (column reductions in groups)."""
import numpy as np
import pytest

import openpto.frontend as pto

BACKENDS = ["reference", "llvm"]
NP_REDUCE = {"sum": np.sum, "amax": np.max, "amin": np.min, "mean": np.mean}


def reduce_fn(shape, name, axis, keepdim, tile=None, backend="reference"):
    @pto.jit(backend=backend)
    def f(x: pto.Tensor(shape, pto.DT_FP32)):
        if tile is not None:
            pto.set_vec_tile_shapes(*tile)
        return getattr(pto, name)(x, axis, keepdim)
    return f


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(NP_REDUCE))
@pytest.mark.parametrize("shape,axis,keepdim,tile", [
    ((37, 20), 0, True, (8, 16)),             # axis 0 of 2-D, partial row and column tiles
    ((5, 9, 12), 0, False, None),             # the leading axis of 3-D: one group of 9*12 columns
    ((4, 11, 6), 1, True, (1, 4, 6)),         # a middle axis: 4 groups, partial row tiles
    ((3, 5, 7, 10), 1, False, (1, 2, 7, 4)),  # a middle axis of 4-D: rows of 7*10 elements
    ((2, 6, 3, 8), 2, True, None),
])
def test_reductions_over_leading_and_middle_axes(backend, name, shape, axis, keepdim, tile):
    x = np.random.default_rng(len(shape) * 31 + axis).standard_normal(shape).astype(np.float32)
    got = reduce_fn(shape, name, axis, keepdim, tile, backend)(x)
    want = NP_REDUCE[name](x.astype(np.float64), axis=axis, keepdims=keepdim)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_middle_axis_reduction_feeds_later_ops_and_checks(backend):
    @pto.jit(backend=backend)
    def f(x: pto.Tensor((6, 10, 8), pto.DT_FP32)):
        m = pto.amax(x, 1, True)
        return pto.exp(m * 0.5), pto.sum(x, 0) + 1.0
    x = np.random.default_rng(2).standard_normal((6, 10, 8)).astype(np.float32)
    e, s = f(x)
    np.testing.assert_allclose(e, np.exp(x.max(1, keepdims=True) * 0.5), rtol=1e-5)
    np.testing.assert_allclose(s, x.astype(np.float64).sum(0) + 1, rtol=1e-5, atol=1e-5)
    stages = f.stages(x)
    assert "6 group(s) of column reductions" in str(stages.tile_graph)
    stages.check()


def test_middle_axis_reduction_on_an_aligned_profile():
    """a3 rounds tile rows up to 32 bytes and separates cube and vector cores: the grouped column
    reduction still verifies and computes the valid columns."""
    import openpto as core
    f = reduce_fn((3, 9, 5), "mean", 1, False, (1, 4, 5)).with_options(profile="a3")
    x = np.random.default_rng(4).standard_normal((3, 9, 5)).astype(np.float32)
    core.check(core.parse(f.stages(x).kernels), "a3")
    np.testing.assert_allclose(f(x), x.astype(np.float64).mean(1), rtol=1e-5, atol=1e-6)
