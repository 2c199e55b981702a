"""topk through the whole frontend (capture, tiling, the selection kernel) on reference and llvm,
against numpy written here: values and int32 indices along the last axis, largest both ways,
ties by the lower index, NaN first when largest and last otherwise, -inf and integer extremes,
partial row blocks, N-D tensors; the sort-based kernel (largest first) over padded chunks, merge
passes and several chunks, its plan against the verifier's capacity; shapes it cannot lower are
FRONT_UNSUPPORTED_OP."""
import numpy as np
import pytest

import openpto as pto_core
import openpto.frontend as pto
from openpto.isa import PTOError

BACKENDS = ["reference", "llvm"]


def topk_fn(shape, k, largest, dtype=pto.DT_FP32, tile=None, backend="reference", profile="cpu", dim=-1):
    @pto.jit(backend=backend, profile=profile)
    def tk(x: pto.Tensor(shape, dtype)):
        if tile is not None:
            pto.set_vec_tile_shapes(*tile)
        values, indices = pto.topk(x, k, dim, largest)
        return values, indices
    return tk


def expected(x, k, largest):
    """numpy's stable order, written independently: a key per element, ties by position."""
    rows = x.reshape(-1, x.shape[-1])
    vals, idxs = [], []
    for row in rows:
        pos = list(range(row.size))
        nan = [bool(np.isnan(v)) if np.issubdtype(row.dtype, np.floating) else False for v in row]
        if largest:     # NaN first, then descending; equal values keep the lower index first
            key = lambda j: (0 if nan[j] else 1, 0 if nan[j] else -float(row[j]), j)  # noqa: E731
        else:           # ascending, NaN last
            key = lambda j: (1 if nan[j] else 0, 0 if nan[j] else float(row[j]), j)  # noqa: E731
        order = sorted(pos, key=key)[:k]
        vals.append(row[order])
        idxs.append(order)
    shape = x.shape[:-1] + (k,)
    return np.array(vals, dtype=x.dtype).reshape(shape), np.array(idxs, dtype=np.int32).reshape(shape)


def check(fn, x, k, largest):
    v, i = fn(x)
    ev, ei = expected(x, k, largest)
    assert i.dtype == np.int32 and v.dtype == x.dtype and v.shape == ev.shape
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_array_equal(v, ev)     # NaN positions equal too


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape,k,tile", [((5, 40), 3, None), ((37, 50), 7, (8, 50)), ((16, 1), 1, None),
                                          ((9, 33), 33, (4, 33))])
def test_topk_f32(backend, largest, shape, k, tile):
    x = np.random.default_rng(shape[0] * shape[1]).standard_normal(shape).astype(np.float32)
    check(topk_fn(shape, k, largest, tile=tile, backend=backend), x, k, largest)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_ties_nan_and_infinities(backend, largest):
    inf, nan = np.inf, np.nan
    x = np.array([[1, 3, 3, 1, 3, 0],
                  [nan, 2, nan, -inf, 2, inf],
                  [-inf, -inf, 5, -inf, nan, -inf],
                  [0.0, -0.0, 0.0, -0.0, 1, -1],
                  [inf, inf, -inf, -inf, nan, nan],
                  [7, 7, 7, 7, 7, 7]], dtype=np.float32)
    fn = topk_fn(x.shape, 5, largest, backend=backend)
    check(fn, x, 5, largest)
    # a hand-computed row: ties keep the lower index first
    v, i = fn(x)
    assert list(i[0]) == ([1, 2, 4, 0, 3] if largest else [5, 0, 3, 1, 2])
    # -0 and +0 are equal: in index order, each keeping its sign bit
    assert list(i[3][:4]) == ([4, 0, 1, 2] if largest else [5, 0, 1, 2])
    assert np.signbit(v[3]).tolist()[:4] == ([False, False, True, False] if largest else [True, False, True, False])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_int32_with_extremes(backend, largest):
    lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    rng = np.random.default_rng(3)
    x = rng.integers(-5, 5, (13, 24)).astype(np.int32)
    x[0, :4] = [lo, lo, hi, hi]
    x[1, :] = lo
    x[2, :] = hi
    check(topk_fn(x.shape, 6, largest, dtype=pto.DT_INT32, tile=(4, 24), backend=backend), x, 6, largest)


@pytest.mark.parametrize("backend", BACKENDS)
def test_topk_three_d_and_stages(backend):
    x = np.random.default_rng(5).standard_normal((3, 7, 20)).astype(np.float32)
    fn = topk_fn(x.shape, 4, True, backend=backend)
    check(fn, x, 4, True)
    stages = fn.stages(x)
    (kernel,) = stages.partition.kernels()
    assert kernel.mode == "topk" and [t.name for t in kernel.writes] == ["values", "indices"]
    # largest first in f32: sorted (TSORT32, one multi-list TMRGSORT of the 32-record runs)
    assert "tsort32" in stages.kernels and "trowargmax" not in stages.kernels
    assert "0 merge passes, 1 runs merged to the best 4" in str(stages.tile_graph)
    stages.check()
    low = topk_fn(x.shape, 4, False, backend=backend)       # smallest first: selection passes
    check(low, x, 4, False)
    assert "trowargmax" in low.stages(x).kernels and "4 selection passes" in str(low.stages(x).tile_graph)


def test_topk_kernel_checks_on_an_aligned_profile():
    """a3 rounds rows up to 32 bytes: the kernel must still verify and compute the valid columns."""
    x = np.random.default_rng(9).standard_normal((20, 30)).astype(np.float32)
    fn = topk_fn(x.shape, 5, False, tile=(8, 30), profile="a3")
    pto_core.check(pto_core.parse(fn.stages(x).kernels), "a3")
    check(fn, x, 5, False)


def test_topk_result_feeds_later_ops():
    @pto.jit(backend="llvm")
    def f(x: pto.Tensor((12, 16), pto.DT_FP32)):
        v, i = pto.topk(x, 2)
        return v * 2.0, i
    x = np.random.default_rng(1).standard_normal((12, 16)).astype(np.float32)
    v, i = f(x)
    ev, ei = expected(x, 2, True)
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_allclose(v, ev * 2)


def test_topk_refusals_name_why():
    x = np.zeros((6, 8), np.float32)
    with pytest.raises(PTOError) as e:
        topk_fn((6, 8), 2, True, dim=0)(x)
    assert e.value.code == "FRONT_UNSUPPORTED_OP" and "last axis" in e.value.message
    assert e.value.location is not None and e.value.location.line > 0

    @pto.jit
    def dyn(x: pto.Tensor((4, pto.DYNAMIC), pto.DT_FP32)):
        return pto.topk(x, 2)
    with pytest.raises(PTOError) as e:
        dyn(np.zeros((4, 9), np.float32))
    assert e.value.code == "FRONT_UNSUPPORTED_OP" and "compile time" in e.value.message


# --------------------------------------------------------------------------------------------
# the sort-based kernel (largest first): every plan shape against the independent order

def _tied(shape, seed, levels=7):
    """Few distinct values (many ties across blocks, runs and chunks), some -inf, NaN and -0."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-levels, levels, shape).astype(np.float32)
    x[rng.random(shape) < 0.05] = -np.inf
    x[rng.random(shape) < 0.02] = np.nan
    x[x == 0] = np.where(rng.random(int((x == 0).sum())) < 0.5, -0.0, 0.0)
    return x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cols,k", [(32, 32), (33, 5), (129, 100), (300, 7), (700, 300)])
def test_topk_sorted_plans(backend, cols, k):
    """Runs of 1..4, 0..2 merge passes, padding of every length; ties, NaN, -inf and -0."""
    if backend == "reference" and cols > 300:
        pytest.skip("the reference merges record by record in Python")
    x = _tied((3, cols), cols)
    fn = topk_fn(x.shape, k, True, backend=backend)
    check(fn, x, k, True)
    v, _ = fn(x)
    ev, _ = expected(x, k, True)
    assert (np.signbit(v) == np.signbit(ev)).all()


@pytest.mark.parametrize("dtype,np_dtype", [(pto.DT_FP16, np.float16), (pto.DT_INT16, np.int16),
                                            (pto.DT_INT32, np.int32)])
def test_topk_sorted_other_dtypes(dtype, np_dtype):
    """f16 / i16 records (4 elements each) and i32, integer minimum as real values and padding."""
    rng = np.random.default_rng(11)
    x = (rng.integers(-4, 4, (4, 150)) if np_dtype != np.float16 else rng.standard_normal((4, 150))).astype(np_dtype)
    if np_dtype != np.float16:
        x[0, ::3] = np.iinfo(np_dtype).min
        x[1, :] = np.iinfo(np_dtype).min
    check(topk_fn(x.shape, 60, True, dtype=dtype, backend="llvm"), x, 60, True)


def test_topk_sorted_chunks_on_a3():
    """a3's 192 KB vector buffer: 3072 positions with k = 2048 sort in two chunks of 2048, the
    second partial, merged after the first; the plan's bytes are what the verifier counts."""
    from openpto.frontend import topksort
    from openpto.isa import dtypes as dt
    from openpto.isa.profiles import get
    a3 = get("a3")
    sp = topksort.plan(3072, 2048, dt.F32, a3.capacity[pto_core.isa.types.Location.VEC], a3.alignment)
    assert (sp.chunks, sp.chunk, sp.passes, sp.runs) == (2, 2048, 2, 4)
    x = _tied((2, 3072), 4, levels=300)
    fn = topk_fn(x.shape, 2048, True, profile="a3", backend="llvm")
    check(fn, x, 2048, True)
    text = fn.stages(x).kernels
    pto_core.check(pto_core.parse(text), "a3")
    tiles = [ln for ln in text.splitlines() if ln.strip().startswith(".tile")]
    declared = sum(int(t.split("<1x")[1].split("x")[0]) * {"f32": 4, "i32": 4, "u32": 4, "u16": 2}[
        t.split("<1x")[1].split("x")[1].split(",")[0].rstrip(">")] for t in tiles)
    assert declared == sp.nbytes(a3.alignment) <= 196608
    # the whole public row (131,072 positions) plans too: 64 chunks of 2048
    assert topksort.plan(131072, 2048, dt.F32, 196608, 32).chunks == 64


def test_topk_sorted_many_chunks_on_a3():
    """Ten chunks (the last one partial) with values repeated across chunks: ties keep the lower
    position through the running merge."""
    x = _tied((3, 20000), 8, levels=40)
    fn = topk_fn(x.shape, 2048, True, profile="a3", backend="llvm")
    assert "10 chunks of 2048" in str(fn.stages(x).tile_graph)
    check(fn, x, 2048, True)


def test_public_lightning_indexer_compiles_on_npu_profiles():
    """The public indexer (131,072 positions per row, top 2048, plain form) is legal on a3 and
    a5 now that topk sorts in chunks (whole rows were refused: 12 x 512 KB working rows)."""
    from openpto.frontend.port import report
    from openpto.operators import lightning_indexer as li
    r = report(li.build("full", quant=False, backend="reference"), profiles=["a3", "a5"])
    assert r.get("a3").legal and r.get("a5").legal
