"""Tensor views (pto.make_tensor_view, partition_view, tensor_view_addr, get_tensor_view_dim/
stride) and pto.alloc_tile addr = %a: parse, verify, print and bytecode round trips, runs on
the reference and llvm backends against numpy slicing written here, and located diagnostics."""
from __future__ import annotations

import numpy as np
import pytest

import openpto
from openpto.assembler.bytecode import load_bytes
from openpto.assembler.ir import Subset, View, ViewQuery
from openpto.isa.diagnostics import PTOError

BACKENDS = ("reference", "llvm")


def _round_trips(m: openpto.Module) -> str:
    """``m`` checks, and its canonical text and bytecode give ``m`` back; that text."""
    openpto.check(m)
    text = m.to_text()
    assert openpto.parse(text) == m and openpto.parse(text).to_text() == text
    assert load_bytes(m.to_bytes()) == m
    return text


def _fails_check_at(text: str, code: str, line: int) -> None:
    """Checking ``text`` reports ``code``, and every report of it is at ``line``."""
    with pytest.raises(PTOError) as e:
        openpto.check(openpto.parse(text))
    errs = getattr(e.value, "errors", [e.value])
    assert code in [x.code for x in errs], [str(x) for x in errs]
    assert all(x.location.line == line for x in errs if x.code == code)

# a rows x cols matrix over a pointer; the 8x16 window at (%r, %c) copied out through views,
# and the view's dims, strides and a pointer taken from the window written to %info
WINDOW = """
kernel @k(%p : !pto.ptr<f32, gm>, %q : !pto.ptr<f32, gm>, %info : !pto.memref<8x8xi32>,
          %m : index, %n : index, %r : index, %c : index) {
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %a = 4096 : i64
  %tv = pto.make_tensor_view %p, shape = [%m, %n], strides = [%n, %c1] : !pto.tensor_view<?x?xf32>
  %pv = pto.partition_view %tv, offsets = [%r, %c], sizes = [8, 16]
      : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
  %t = pto.alloc_tile addr = %a : !pto.tile_buf<vec, 8x16xf32>
  pto.tload ins(%pv[%c0, %c0] : !pto.partition_tensor_view<8x16xf32>) outs(%t : !pto.tile_buf<vec, 8x16xf32>)
  %ov = pto.make_tensor_view %q, shape = [8, 16], strides = [16, 1] : !pto.tensor_view<8x16xf32>
  pto.tstore ins(%t) outs(%ov[%c0, %c0])
  %d0 = pto.get_tensor_view_dim %tv, %c0 : !pto.tensor_view<?x?xf32> -> index
  %d1 = pto.get_tensor_view_dim %pv, 1
  %s0 = pto.get_tensor_view_stride %pv, 0
  %s1 = pto.get_tensor_view_stride %tv, %c1 : !pto.tensor_view<?x?xf32> -> index
  %b = pto.tensor_view_addr %pv : !pto.partition_tensor_view<8x16xf32> -> !pto.ptr<f32, gm>
  %len = pto.get_tensor_view_dim %b, 0
  %x0 = arith.index_cast %d0 : index to i32
  %x1 = arith.index_cast %d1 : index to i32
  %x2 = arith.index_cast %s0 : index to i32
  %x3 = arith.index_cast %s1 : index to i32
  %x4 = arith.index_cast %len : index to i32
  %i = texpands %x0 : (i32) -> !pto.tile<1x8xi32>
  %j = texpands %x1 : (i32) -> !pto.tile<1x8xi32>
  %k = texpands %x2 : (i32) -> !pto.tile<1x8xi32>
  %l = texpands %x3 : (i32) -> !pto.tile<1x8xi32>
  %e = texpands %x4 : (i32) -> !pto.tile<1x8xi32>
  tstore %info[%c0, %c0], %i
  tstore %info[1, %c0], %j
  tstore %info[2, %c0], %k
  tstore %info[3, %c0], %l
  tstore %info[4, %c0], %e
}
"""


def _run(backend: str, m: int, n: int, r: int, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(m * 100 + n)
    p = rng.standard_normal(m * n).astype(np.float32)
    q = np.zeros(128, np.float32)
    info = np.zeros((8, 8), np.int32)
    exe = openpto.compile(openpto.parse(WINDOW), backend=backend, profile="cpu")
    exe(p, q, info, m, n, r, c)
    return p, q, info


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("m,n,r,c", [(24, 20, 1, 0), (8, 16, 0, 0), (40, 33, 32, 17)])
def test_window_through_views_matches_numpy(backend: str, m: int, n: int, r: int, c: int) -> None:
    p, q, info = _run(backend, m, n, r, c)
    want = p.reshape(m, n)[r:r + 8, c:c + 16]
    np.testing.assert_array_equal(q.reshape(8, 16), want)
    # dim 0 of the view, dim 1 of the window, strides (n and 1), footprint 7 * n + 16
    assert list(info[:5, 0]) == [m, 16, n, 1, 7 * n + 16]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("m,n,r,c", [(24, 20, 17, 0), (24, 20, 0, 5), (24, 20, -1, 0)])
def test_window_outside_the_view_is_runtime_oob(backend: str, m: int, n: int, r: int, c: int) -> None:
    with pytest.raises(PTOError) as e:
        _run(backend, m, n, r, c)
    assert e.value.code == "RUNTIME_OOB" and "partition_view" in str(e.value)
    assert e.value.location.line == 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_view_larger_than_its_pointer_is_runtime_oob(backend: str) -> None:
    exe = openpto.compile(openpto.parse(WINDOW), backend=backend, profile="cpu")
    p = np.zeros(24 * 20, np.float32)
    with pytest.raises(PTOError) as e:
        exe(p, np.zeros(128, np.float32), np.zeros((8, 8), np.int32), 25, 20, 0, 0)
    assert e.value.code == "RUNTIME_OOB" and e.value.location.line == 7


STRIDED = """
kernel @k(%p : !pto.ptr<f32, gm>, %q : !pto.memref<4x4xf32>, %s0 : index, %s1 : index) {
  %tv = pto.make_tensor_view %p, shape = [4, 4], strides = [%s0, %s1] : !pto.tensor_view<4x4xf32>
  %t = tload %tv[0, 0] : (!pto.tensor_view<4x4xf32>) -> !pto.tile<4x4xf32>
  tstore %q[0, 0], %t
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("s0,s1", [(1, 4), (5, 1), (0, 1), (2, 3)])
def test_strided_views_read_the_elements_numpy_picks(backend: str, s0: int, s1: int) -> None:
    p = np.arange(64, dtype=np.float32)
    q = np.zeros((4, 4), np.float32)
    openpto.compile(openpto.parse(STRIDED), backend=backend, profile="cpu")(p, q, s0, s1)
    want = np.array([[p[i * s0 + j * s1] for j in range(4)] for i in range(4)], np.float32)
    np.testing.assert_array_equal(q, want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("s0,s1,code", [(-1, 1, "RUNTIME_VIEW_SHAPE"), (1, -4, "RUNTIME_VIEW_SHAPE"),
                                        (21, 1, "RUNTIME_OOB"), (2 ** 62, 1, "RUNTIME_OOB")])
def test_bad_strides_fault_on_both_backends(backend: str, s0: int, s1: int, code: str) -> None:
    exe = openpto.compile(openpto.parse(STRIDED), backend=backend, profile="cpu")
    with pytest.raises(PTOError) as e:
        exe(np.zeros(64, np.float32), np.zeros((4, 4), np.float32), s0, s1)
    assert e.value.code == code and e.value.location.line == 3, str(e.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_run_time_size_differing_from_the_type_is_view_shape(backend: str) -> None:
    text = STRIDED.replace("shape = [4, 4]", "shape = [4, %s0]").replace("strides = [%s0, %s1]",
                                                                         "strides = [4, %s1]")
    exe = openpto.compile(openpto.parse(text), backend=backend, profile="cpu")
    with pytest.raises(PTOError) as e:
        exe(np.zeros(64, np.float32), np.zeros((4, 4), np.float32), 3, 1)
    assert e.value.code == "RUNTIME_VIEW_SHAPE"


@pytest.mark.parametrize("backend", BACKENDS)
def test_dimension_query_outside_the_rank_is_runtime_oob(backend: str) -> None:
    text = """
kernel @k(%p : !pto.ptr<f32, gm>, %q : !pto.memref<1x8xi32>, %k : index) {
  %d = pto.get_tensor_view_stride %p, %k
  %x = arith.index_cast %d : index to i32
  %t = texpands %x : (i32) -> !pto.tile<1x8xi32>
  tstore %q[0, 0], %t
}
"""
    exe = openpto.compile(openpto.parse(text), backend=backend, profile="cpu")
    q = np.zeros((1, 8), np.int32)
    exe(np.zeros(8, np.float32), q, 0)
    assert q[0, 0] == 1
    with pytest.raises(PTOError) as e:
        exe(np.zeros(8, np.float32), q, 1)
    assert e.value.code == "RUNTIME_OOB" and e.value.location.line == 3


def test_round_trips_through_text_and_bytecode() -> None:
    m = openpto.parse(WINDOW)
    text = _round_trips(m)
    assert "pto.partition_view %tv, offsets = [%r, %c], sizes = [8, 16]" in text
    assert ".tile %t addr = %a : !pto.tile<8x16xf32>" in text
    kinds = [type(s) for s in m.kernels[0].body]
    assert kinds.count(View) == 4 and kinds.count(ViewQuery) == 5


@pytest.mark.parametrize("line,code", [
    # a view over something that is not a pointer
    ("%v = pto.make_tensor_view %g, shape = [4], strides = [1] : !pto.tensor_view<4xf32>", "STRUCT_TYPE_MISMATCH"),
    ("%v = pto.make_tensor_view %p, shape = [4, 4], strides = [1] : !pto.tensor_view<4x4xf32>", "STRUCT_INDEX"),
    ("%v = pto.make_tensor_view %p, shape = [4], strides = [1] : !pto.tensor_view<4xf16>", "STRUCT_TYPE_MISMATCH"),
    ("%v = pto.make_tensor_view %p, shape = [4], strides = [-1] : !pto.tensor_view<4xf32>", "STRUCT_OOB"),
    ("%v = pto.make_tensor_view %p, shape = [3], strides = [1] : !pto.tensor_view<4xf32>", "STRUCT_TYPE_MISMATCH"),
    ("%v = pto.partition_view %g, offsets = [60, 0], sizes = [8, 16] : !pto.memref<64x32xf32> -> "
     "!pto.memref<8x16xf32>", "STRUCT_OOB"),
    ("%v = pto.partition_view %g, offsets = [0], sizes = [8] : !pto.memref<64x32xf32> -> "
     "!pto.memref<8xf32>", "STRUCT_INDEX"),
    ("%v = pto.get_tensor_view_dim %g, 2", "STRUCT_OOB"),
    ("%v = pto.get_tensor_view_dim %g, %f", "STRUCT_INDEX"),
    ("%v = pto.tensor_view_addr %g : !pto.memref<64x32xf32> -> !pto.memref<2x2xf32>", "STRUCT_TYPE_MISMATCH"),
    ("%t = pto.alloc_tile addr = %f : !pto.tile<8x8xf32>", "STRUCT_INDEX"),
    ("%v = pto.make_tensor_view %p, shape = [4], strides = [1]", "PARSE_MISSING_TYPE"),
    ("%v = pto.get_tensor_view_dim %t8, 0", "STRUCT_OPERAND_KIND"),
    ("%v = pto.make_tensor_vew %p", "PARSE_UNKNOWN_MNEMONIC"),
])
def test_bad_views_are_located_diagnostics(line: str, code: str) -> None:
    text = ("kernel @k(%p : !pto.ptr<f32, gm>, %g : !pto.memref<64x32xf32>, %f : f32,"
            " %t8 : !pto.tile<8x8xf32>) {\n  " + line + "\n}\n")
    _fails_check_at(text, code, 2)


def test_static_pointer_extent_bounds_the_view() -> None:
    ok = ("kernel @k(%p : !pto.memref<64xf32>) {\n"
          "  %v = pto.make_tensor_view %p, shape = [8, 8], strides = [8, 1] : !pto.tensor_view<8x8xf32>\n}\n")
    openpto.check(openpto.parse(ok))
    with pytest.raises(PTOError) as e:
        openpto.check(openpto.parse(ok.replace("[8, 1]", "[9, 1]")))
    assert e.value.code == "STRUCT_OOB" and "spans 71 elements" in str(e.value)


# --------------------------------------------------------------------------- pto.subset

SUB_BACKENDS = [("reference", {}), ("llvm", {}), ("llvm", {"checked": True})]

# a parent loaded from %g; a 4x8 child at (%i, %j) doubled in place (a fused elementwise op),
# a 2x8 grandchild inside it at child row 1 set to -1 (a fill), the child's row sums taken
# (a reduction reading it) and the parent stored
SUBSET = """
kernel @k(%g : !pto.memref<8x16xf32>, %o : !pto.memref<8x16xf32>, %s : !pto.memref<4x1xf32>,
          %i : index, %j : index) {
  .tile %p : !pto.tile<8x16xf32>
  %p = tload %g[0, 0] : (!pto.memref<8x16xf32>) -> !pto.tile<8x16xf32>
  %c = pto.subset %p[%i, %j] sizes [4, 8] : !pto.tile<8x16xf32>
  %c = tadd %c, %c : (!pto.tile<4x8xf32, valid=?x?>, !pto.tile<4x8xf32, valid=?x?>) -> !pto.tile<4x8xf32, valid=?x?>
  %gc = pto.subset %c[1, 0] sizes [2, 8] : !pto.tile<4x8xf32, valid=?x?>
  %gc = texpands -1.0 : (f32) -> !pto.tile<2x8xf32, valid=?x?>
  .tile %r : !pto.tile<4x1xf32, valid=?x1>
  %r = trowsum %c : (!pto.tile<4x8xf32, valid=?x?>) -> !pto.tile<4x1xf32, valid=?x1>
  tstore %s[0, 0], %r
  tstore %o[0, 0], %p
}
"""


def _subset_expected(g: np.ndarray, i: int, j: int) -> tuple[np.ndarray, np.ndarray]:
    want = g.copy()
    want[i:i + 4, j:j + 8] *= 2
    want[i + 1:i + 3, j:j + 8] = -1
    return want, want[i:i + 4, j:j + 8].sum(axis=1, keepdims=True)


@pytest.mark.parametrize("backend,options", SUB_BACKENDS)
@pytest.mark.parametrize("i,j", [(0, 0), (3, 5), (4, 8)])
def test_writes_through_a_subset_are_the_parents(backend: str, options: dict, i: int, j: int) -> None:
    g = np.random.default_rng(i * 16 + j).standard_normal((8, 16)).astype(np.float32)
    o, s = np.zeros_like(g), np.zeros((4, 1), np.float32)
    exe = openpto.compile(openpto.parse(SUBSET), backend=backend, profile="cpu", **options)
    exe(g, o, s, i, j)
    want, sums = _subset_expected(g, i, j)
    np.testing.assert_array_equal(o, want)
    np.testing.assert_allclose(s, sums, rtol=1e-6)


# the parent's valid region has %n rows: the child at row 2 sees rows 2 .. %n - 1 of it (at most 4)
SUBSET_VALID = """
kernel @k(%g : !pto.memref<8x16xf32>, %o : !pto.memref<8x16xf32>, %n : index) {
  .tile %p valid_row = %n : !pto.tile<8x16xf32, valid=?x16>
  %p = tload %g[0, 0] : (!pto.memref<8x16xf32>) -> !pto.tile<8x16xf32, valid=?x16>
  %c = pto.subset %p[2, 0] sizes [4, 16] : !pto.tile<8x16xf32, valid=?x16>
  %c = texpands 7.0 : (f32) -> !pto.tile<4x16xf32, valid=?x16>
  %c = tmuls %p, 1.0 : (!pto.tile<8x16xf32, valid=?x16>, f32) -> !pto.tile<8x16xf32, valid=?x16>
}
"""


@pytest.mark.parametrize("backend,options", SUB_BACKENDS)
@pytest.mark.parametrize("n", [8, 5, 2])
def test_a_subset_covers_the_part_of_the_parents_valid_region_in_its_window(backend: str, options: dict,
                                                                             n: int) -> None:
    text = SUBSET_VALID.replace("  %c = tmuls %p, 1.0 : (!pto.tile<8x16xf32, valid=?x16>, f32) -> "
                                "!pto.tile<8x16xf32, valid=?x16>\n", "  tstore %o[0, 0], %p\n")
    g = np.arange(128, dtype=np.float32).reshape(8, 16)
    o = np.full_like(g, -5)
    openpto.compile(openpto.parse(text), backend=backend, profile="cpu", **options)(g, o, n)
    want = np.full_like(g, -5)
    want[:n] = g[:n]
    want[2:min(6, n)] = 7       # rows 2 .. 5 of the window, only those inside the valid rows
    np.testing.assert_array_equal(o, want)


@pytest.mark.parametrize("backend,options", SUB_BACKENDS)
@pytest.mark.parametrize("i,j", [(5, 0), (0, 9), (-1, 0)])
def test_a_window_outside_the_parent_is_runtime_oob(backend: str, options: dict, i: int, j: int) -> None:
    g = np.zeros((8, 16), np.float32)
    exe = openpto.compile(openpto.parse(SUBSET), backend=backend, profile="cpu", **options)
    with pytest.raises(PTOError) as e:
        exe(g, np.zeros_like(g), np.zeros((4, 1), np.float32), i, j)
    assert e.value.code == "RUNTIME_OOB" and e.value.location.line == 6


# rows 0..3 written through %top; %bottom (rows 4..7) is read before anything writes it
SUBSET_UNINIT = """
kernel @k(%g : !pto.memref<8x16xf32>, %o : !pto.memref<8x16xf32>, %k : index) {
  .tile %p : !pto.tile<8x16xf32>
  %top = pto.subset %p[0, 0] sizes [4, 16] : !pto.tile<8x16xf32>
  %bottom = pto.subset %p[%k, 0] sizes [4, 16] : !pto.tile<8x16xf32>
  %top = tload %g[0, 0] : (!pto.memref<8x16xf32>) -> !pto.tile<4x16xf32>
  %bottom = tmuls %bottom, 2.0 : (!pto.tile<4x16xf32, valid=?x16>, f32) -> !pto.tile<4x16xf32, valid=?x16>
  tstore %o[0, 0], %p
}
"""


@pytest.mark.parametrize("backend,options", [("reference", {}), ("llvm", {"checked": True})])
def test_reading_a_never_written_part_through_a_subset_faults(backend: str, options: dict) -> None:
    exe = openpto.compile(openpto.parse(SUBSET_UNINIT), backend=backend, profile="cpu", **options)
    g = np.ones((8, 16), np.float32)
    with pytest.raises(PTOError) as e:
        exe(g, np.zeros_like(g), 4)
    assert e.value.code == "RUNTIME_UNINIT_READ" and e.value.location.line == 7
    o = np.zeros_like(g)
    with pytest.raises(PTOError) as e:     # the store reads rows 4..7 of the parent, never written
        exe(g, o, 0)
    assert e.value.code == "RUNTIME_UNINIT_READ" and e.value.location.line == 8


# the two column halves written through two children: the parent is fully written
HALVES = """
kernel @k(%g : !pto.memref<8x16xf32>, %o : !pto.memref<8x16xf32>) {
  .tile %p : !pto.tile<8x16xf32>
  %a = pto.subset %p[0, 0] sizes [8, 8] : !pto.tile<8x16xf32>
  %b = pto.subset %p[0, 8] sizes [8, 8] : !pto.tile<8x16xf32>
  %a = tload %g[0, 0] : (!pto.memref<8x16xf32>) -> !pto.tile<8x8xf32>
  %b = tload %g[0, 8] : (!pto.memref<8x16xf32>) -> !pto.tile<8x8xf32>
  %q = tmuls %p, 3.0 : (!pto.tile<8x16xf32>, f32) -> !pto.tile<8x16xf32>
  tstore %o[0, 0], %q
}
"""


@pytest.mark.parametrize("backend,options", SUB_BACKENDS)
def test_a_parent_written_in_parts_through_children_reads_cleanly(backend: str, options: dict) -> None:
    g = np.arange(128, dtype=np.float32).reshape(8, 16)
    o = np.zeros_like(g)
    openpto.compile(openpto.parse(HALVES), backend=backend, profile="cpu", **options)(g, o)
    np.testing.assert_array_equal(o, 3 * g)


def test_the_never_written_analysis_counts_writes_through_children() -> None:
    openpto.check(openpto.parse(HALVES))      # %p read after writes through %a and %b only
    never = HALVES.replace("  %a = tload %g[0, 0] : (!pto.memref<8x16xf32>) -> !pto.tile<8x8xf32>\n", "") \
        .replace("  %b = tload %g[0, 8] : (!pto.memref<8x16xf32>) -> !pto.tile<8x8xf32>\n", "")
    with pytest.raises(PTOError) as e:
        openpto.check(openpto.parse(never))
    assert e.value.code == "STRUCT_UNINIT_READ"
    child_read = ("kernel @k(%o : !pto.memref<4x4xf32>) {\n  .tile %p : !pto.tile<8x8xf32>\n"
                  "  %c = pto.subset %p[4, 4] sizes [4, 4] : !pto.tile<8x8xf32>\n  tstore %o[0, 0], %c\n}\n")
    with pytest.raises(PTOError) as e:
        openpto.check(openpto.parse(child_read))
    assert e.value.code == "STRUCT_UNINIT_READ" and e.value.location.line == 4


def test_subsets_round_trip_through_text_and_bytecode() -> None:
    m = openpto.parse(SUBSET)
    text = _round_trips(m)
    assert "%c = pto.subset %p[%i, %j] sizes [4, 8] : !pto.tile<8x16xf32>" in text
    assert "%gc = pto.subset %c[1, 0] sizes [2, 8] : !pto.tile<4x8xf32, valid=?x?>" in text
    assert sum(isinstance(s, Subset) for s in m.kernels[0].body) == 2
    stated = SUBSET.replace("sizes [2, 8] : !pto.tile<4x8xf32, valid=?x?>",
                            "sizes [2, 8] : !pto.tile<4x8xf32, valid=?x?> -> !pto.tile<2x8xf32, valid=?x?>")
    assert openpto.parse(stated) == m


def test_a_subsets_type_comes_from_its_parent() -> None:
    m = openpto.parse("kernel @k(%i : index) {\n  .tile %p : !pto.tile<16x32xf16, loc=mat, valid=10x?>\n"
                      "  %a = pto.subset %p[8, 0] sizes [8, 16] : !pto.tile<16x32xf16, loc=mat, valid=10x?>\n"
                      "  %b = pto.subset %p[%i, 0] sizes [4, 32] : !pto.tile<16x32xf16, loc=mat, valid=10x?>\n}\n")
    a, b = (s.result.type for s in m.kernels[0].body if isinstance(s, Subset))
    assert (a.shape, a.valid, a.loc.value, a.dtype.name) == ((8, 16), (2, None), "mat", "f16")
    assert (b.shape, b.valid) == ((4, 32), (None, None))


@pytest.mark.parametrize("line,code", [
    ("%c = pto.subset %p[12, 0] sizes [8, 8] : !pto.tile<16x16xf32>", "STRUCT_OOB"),
    ("%c = pto.subset %p[0, -1] sizes [8, 8] : !pto.tile<16x16xf32>", "STRUCT_OOB"),
    ("%c = pto.subset %p[0, 0] sizes [0, 8] : !pto.tile<16x16xf32>", "STRUCT_OOB"),
    ("%c = pto.subset %p[0, 0] sizes [8, 17] : !pto.tile<16x16xf32>", "STRUCT_OOB"),
    ("%c = pto.subset %p[%f, 0] sizes [8, 8] : !pto.tile<16x16xf32>", "STRUCT_INDEX"),
    ("%c = pto.subset %g[0, 0] sizes [8, 8]", "STRUCT_OPERAND_KIND"),
    ("%c = pto.subset %p[0, 0] sizes [8, 8] : !pto.tile<16x16xf16>", "STRUCT_TYPE_MISMATCH"),
    ("%c = pto.subset %p[0, 0] sizes [8, 8] : !pto.tile<16x16xf32> -> !pto.tile<8x8xf16>", "STRUCT_TYPE_MISMATCH"),
    ("%c = pto.subset %p[0, 0] sizes [8, %i] : !pto.tile<16x16xf32>", "PARSE_TOKEN"),
    # boxed parents: NZ keeps every row, ZN/ZZ every column; whole 16 x 32-byte boxes
    ("%c = pto.subset %z[0, 0] sizes [16, 32] : !pto.tile<32x64xf16, loc=mat, layout=NZ>", "STRUCT_LAYOUT"),
    ("%c = pto.subset %z[0, 8] sizes [32, 8] : !pto.tile<32x64xf16, loc=mat, layout=NZ>", "STRUCT_LAYOUT"),
    ("%c = pto.subset %z[0, %i] sizes [32, 16] : !pto.tile<32x64xf16, loc=mat, layout=NZ>", "STRUCT_LAYOUT"),
    ("%c = pto.subset %y[8, 0] sizes [16, 64] : !pto.tile<32x64xf16, loc=mat, layout=ZZ>", "STRUCT_LAYOUT"),
    ("%c = pto.tile_buf_addr %p : !pto.tile<16x16xf32> -> !pto.ptr<f32, ub>", "PARSE_VECSCOPE"),
    ("%c = tile_buf_addr %p", "PARSE_VECSCOPE"),
])
def test_bad_subsets_are_located_diagnostics(line: str, code: str) -> None:
    text = ("kernel @k(%g : !pto.memref<64x32xf32>, %f : f32, %i : index) {\n  " + line + "\n"
            "  .tile %p : !pto.tile<16x16xf32>\n  .tile %z : !pto.tile<32x64xf16, loc=mat, layout=NZ>\n"
            "  .tile %y : !pto.tile<32x64xf16, loc=mat, layout=ZZ>\n}\n")
    # the tiles are declared after the line in the text above; move them first
    head, rest = text.split("\n", 1)
    body = rest.split("\n")
    _fails_check_at("\n".join([head, *body[1:4], body[0], *body[4:]]), code, 5)


def test_boxed_subsets_that_keep_whole_boxes_are_accepted() -> None:
    openpto.check(openpto.parse(
        "kernel @k() {\n  .tile %z : !pto.tile<32x64xf16, loc=mat, layout=NZ>\n"
        "  .tile %y : !pto.tile<32x64xf16, loc=mat, layout=ZZ>\n"
        "  %a = pto.subset %z[0, 16] sizes [32, 32] : !pto.tile<32x64xf16, loc=mat, layout=NZ>\n"
        "  %b = pto.subset %y[16, 0] sizes [16, 64] : !pto.tile<32x64xf16, loc=mat, layout=ZZ>\n}\n"))


# --------------------------------------------------------------------------- make_tensor_view layout

DN_COPY = """
kernel @k(%p : !pto.ptr<f32, gm>, %q : !pto.ptr<f32, gm>) {
  .const %c0 = 0 : index
  %tv = pto.make_tensor_view %p, shape = [16, 8], strides = [1, 16], layout = dn : !pto.tensor_view<16x8xf32>
  %t = tload %tv[%c0, %c0] : (!pto.tensor_view<16x8xf32, layout=DN>) -> !pto.tile<16x8xf32, layout=DN>
  %ov = pto.make_tensor_view %q, shape = [16, 8], strides = [1, 16] {layout = #pto.layout<DN>} : !pto.tensor_view<16x8xf32>
  tstore %ov[%c0, %c0], %t
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_layout_hint_is_the_views_layout(backend: str) -> None:
    m = openpto.parse(DN_COPY)
    views = [s for s in m.kernels[0].body if isinstance(s, View)]
    assert [v.result.type.layout.value for v in views] == ["DN", "DN"]
    text = m.to_text()
    assert "strides = [1, 16] : !pto.memref<16x8xf32, layout=DN>" in text
    assert openpto.parse(text) == m and load_bytes(m.to_bytes()) == m
    p, q = np.arange(128, dtype=np.float32), np.zeros(128, np.float32)
    openpto.compile(m, backend=backend, profile="cpu")(p, q)
    # the tile holds the 16x8 column-major matrix; stored back the same way, the bytes come back
    np.testing.assert_array_equal(q, p)


@pytest.mark.parametrize("hint", ["layout = nd", "layout = ND", '{layout = "nd"}', "{layout = #pto.layout<nd>}"])
def test_layout_hint_spellings(hint: str) -> None:
    text = ("kernel @k(%p : !pto.ptr<f32, gm>) {\n  %v = pto.make_tensor_view %p, shape = [4, 4], "
            f"strides = [4, 1]{'' if hint.startswith('{') else ','} {hint} : !pto.tensor_view<4x4xf32>\n}}\n")
    (v,) = openpto.parse(text).kernels[0].body
    assert v.result.type.layout.value == "ND"


@pytest.mark.parametrize("tail", [
    ", layout = dn : !pto.tensor_view<4x4xf32>",                     # strides [4, 1] are row-major
    ", layout = xy : !pto.tensor_view<4x4xf32>",                     # no such layout
    ", layout = nz : !pto.tensor_view<4x4xf32, layout=DN>",          # the type says otherwise
    " {layout = 3} : !pto.tensor_view<4x4xf32>",
])
def test_bad_layout_hints_are_parse_attr(tail: str) -> None:
    text = ("kernel @k(%p : !pto.ptr<f32, gm>) {\n  %v = pto.make_tensor_view %p, shape = [4, 4], "
            "strides = [4, 1]" + tail + "\n}\n")
    with pytest.raises(PTOError) as e:
        openpto.parse(text)
    assert e.value.code in ("PARSE_ATTR", "PARSE_TOKEN") and e.value.location.line == 2


# a child of a tile parameter updated in a loop: the caller's tile changes in the window only
PARAM_CHILD = """
kernel @k(%p : !pto.tile<8x16xf32>, %i : index) {
  %c = pto.subset %p[%i, 4] sizes [2, 8] : !pto.tile<8x16xf32>
  scf.for %r = 0 to 3 step 1 {
    %c = tadds %c, 1.0 : (!pto.tile<2x8xf32, valid=?x8>, f32) -> !pto.tile<2x8xf32, valid=?x8>
  }
}
"""


@pytest.mark.parametrize("backend,options", SUB_BACKENDS)
@pytest.mark.parametrize("i", [0, 3, 6])
def test_a_child_of_a_tile_parameter_writes_the_callers_tile(backend: str, options: dict, i: int) -> None:
    p = np.arange(128, dtype=np.float32).reshape(8, 16)
    res = openpto.compile(openpto.parse(PARAM_CHILD), backend=backend, profile="cpu", **options)(p.copy(), i)
    want = p.copy()
    want[i:i + 2, 4:12] += 3
    np.testing.assert_array_equal(res["p"], want)


@pytest.mark.parametrize("body", [
    "  %c = pto.subset %p[0, 0] sizes [4, 4] : !pto.tile<8x8xf32>\n  .tile %c : !pto.tile<4x4xf32>\n",
    "  .tile %c : !pto.tile<4x4xf32>\n  %c = pto.subset %p[0, 0] sizes [4, 4] : !pto.tile<8x8xf32>\n",
    "  %c = pto.subset %p[0, 0] sizes [4, 4] : !pto.tile<8x8xf32>\n"
    "  %c = pto.subset %p[4, 4] sizes [4, 4] : !pto.tile<8x8xf32>\n",
])
def test_a_subset_name_names_one_window(body: str) -> None:
    text = "kernel @k(%p : !pto.tile<8x8xf32>) {\n" + body + "}\n"
    with pytest.raises(PTOError) as e:
        openpto.check(openpto.parse(text))
    assert (e.value.code, e.value.location.line) == ("STRUCT_REDEFINED", 3)
    # the same statement run again in a loop is the same window, moved
    openpto.check(openpto.parse("kernel @k(%p : !pto.tile<8x8xf32>) {\n  scf.for %r = 0 to 2 step 1 {\n"
                                "    %c = pto.subset %p[%r, 0] sizes [4, 4] : !pto.tile<8x8xf32>\n  }\n}\n"))
