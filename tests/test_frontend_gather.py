"""pto.gather_rows (a run-time row gather: MGATHER in ROW mode) and pto.arange (TCI) in the
frontend: values against numpy written here, on reference and llvm (cpu), legality on a3/a5,
the tile-by-tile check, and the refusals."""
import numpy as np
import pytest

import openpto.frontend as pto
from openpto.isa.diagnostics import FrontendError

BACKENDS = [("reference", "cpu"), ("llvm", "cpu")]


def paged(tab: pto.Tensor((10, 4, 12), pto.DT_FP16),
          idx: pto.Tensor((2, 7), pto.DT_INT32)) -> pto.Tensor((2, 28, 12), pto.DT_FP16):
    """Blocks of a 3-D cache as rows, two block tables: each batch's blocks in its order."""
    out = pto.tensor([2, 28, 12], pto.DT_FP16, "out")
    blocks = pto.reshape(tab, [10, 48])
    pto.set_vec_tile_shapes(3, 48)             # 7 rows in tiles of 3: the last one partial
    for b in range(2):
        rows = pto.gather_rows(blocks, idx[b:b + 1, :])
        pto.assemble(pto.reshape(rows, [1, 28, 12]), [b, 0, 0], out)
    return out


def expected_paged(tab: np.ndarray, idx: np.ndarray) -> np.ndarray:
    out = np.zeros((2, 7, 4, 12), tab.dtype)
    for b in range(2):
        for i, v in enumerate(idx[b]):
            if 0 <= v < tab.shape[0]:
                out[b, i] = tab[v]
    return out.reshape(2, 28, 12)


@pytest.mark.parametrize("backend,profile", BACKENDS)
def test_gather_rows_values(backend: str, profile: str) -> None:
    rng = np.random.default_rng(1)
    tab = rng.standard_normal((10, 4, 12)).astype(np.float16)
    idx = np.array([[3, -1, 9, 0, 10, 2, 2], [7, 6, 5, 4, 3, 2, 1]], np.int32)   # -1, 10: outside
    fn = pto.jit(backend=backend, profile=profile)(paged)
    y = fn(tab, idx)
    np.testing.assert_array_equal(y, expected_paged(tab, idx))
    assert not y[0, 4:8].any() and not y[0, 16:20].any()      # the rows of -1 and 10 are zeros
    fn.stages(tab, idx).check({})


def test_gather_rows_dynamic_count_and_loop() -> None:
    """A run-time number of picked rows, in a pto.loop over a run-time batch (llvm)."""
    @pto.jit(backend="llvm")
    def pick(tab: pto.Tensor((9, 20), pto.DT_FP32), idx: pto.Tensor((pto.DYNAMIC, 5), pto.DT_INT32),
             out: pto.Tensor((pto.DYNAMIC, 5, 20), pto.DT_FP32)):
        for b in pto.loop(0, idx.shape[0], 1, name="B", idx_name="b"):
            rows = pto.gather_rows(tab, pto.view(idx, [1, 5], [b, 0]))
            pto.assemble(pto.reshape(rows, [1, 5, 20]) * 2.0, [b, 0, 0], out)

    rng = np.random.default_rng(2)
    tab = rng.standard_normal((9, 20)).astype(np.float32)
    for n in (1, 3):
        idx = rng.integers(0, 9, (n, 5)).astype(np.int32)
        out = np.zeros((n, 5, 20), np.float32)
        pick(tab, idx, out)
        np.testing.assert_array_equal(out, tab[idx] * 2.0)


@pytest.mark.parametrize("profile", ["a3", "a5"])
def test_gather_rows_and_arange_legal_on_npu_profiles(profile: str) -> None:
    rng = np.random.default_rng(3)
    tab = rng.standard_normal((10, 4, 12)).astype(np.float16)
    idx = rng.integers(0, 10, (2, 7)).astype(np.int32)
    fn = pto.jit(backend="llvm", profile=profile)(paged)
    np.testing.assert_array_equal(fn(tab, idx), expected_paged(tab, idx))
    assert "mgather" in str(fn.stages(tab, idx).stage("kernels"))
    m = pto.jit(backend="llvm", profile=profile)(positions_below)
    n = np.array([[0], [5], [40]], np.int32)
    np.testing.assert_array_equal(m(n), np.arange(37)[None, :] < n)


def positions_below(n: pto.Tensor((pto.DYNAMIC, 1), pto.DT_INT32)) -> pto.Tensor((pto.DYNAMIC, 37), pto.DT_BOOL):
    with pto.vec_tile_shapes(16):              # 37 positions in tiles of 16: TCI from each column
        pos = pto.arange(37)
    pto.set_vec_tile_shapes(2, 16)
    return pos < n


@pytest.mark.parametrize("backend,profile", BACKENDS)
def test_arange_masks(backend: str, profile: str) -> None:
    fn = pto.jit(backend=backend, profile=profile)(positions_below)
    n = np.array([[0], [5], [40], [36], [17]], np.int32)
    np.testing.assert_array_equal(fn(n), np.arange(37)[None, :] < n)
    assert fn.interpret(n)[0].tolist() == [False] * 37
    fn.stages(n).check({"n_dim0": 5})


def test_arange_run_time_stop() -> None:
    @pto.jit(backend="llvm")
    def pos(x: pto.Tensor((pto.DYNAMIC,), pto.DT_INT32)) -> pto.Tensor((pto.DYNAMIC,), pto.DT_INT32):
        pto.set_vec_tile_shapes(8)
        return pto.arange(x.shape[0]) + x

    for n in (1, 8, 21):
        x = np.full(n, 100, np.int32)
        np.testing.assert_array_equal(pos(x), np.arange(n) + 100)


@pytest.mark.parametrize("body,code", [
    (lambda t, i: pto.gather_rows(t[1:5, :], i), "FRONT_UNSUPPORTED_OP"),     # a window, not the table
    (lambda t, i: pto.gather_rows(t, pto.cast(i, pto.DT_INT16)), "FRONT_DTYPE"),
    (lambda t, i: pto.gather_rows(pto.reshape(t, [2, 5, 8]), i), "FRONT_SHAPE"),
    (lambda t, i: pto.gather_rows(t, pto.reshape(i, [3, 2])), "FRONT_SHAPE"),
])
def test_gather_rows_refusals(body, code: str) -> None:  # noqa: ANN001
    @pto.jit
    def f(t: pto.Tensor((10, 8), pto.DT_FP32), i: pto.Tensor((1, 6), pto.DT_INT32)) -> pto.Tensor((6, 8), pto.DT_FP32):
        return body(t, i)

    with pytest.raises(FrontendError) as e:
        f(np.zeros((10, 8), np.float32), np.zeros((1, 6), np.int32))
    assert e.value.code == code
