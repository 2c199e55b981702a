"""Tensor views (pto.make_tensor_view, partition_view, tensor_view_addr, get_tensor_view_dim/
stride) and pto.alloc_tile addr = %a: parse, verify, print and bytecode round trips, runs on
the reference and llvm backends against numpy slicing written here, and located diagnostics."""
from __future__ import annotations

import numpy as np
import pytest

import openpto
from openpto.assembler.bytecode import load_bytes
from openpto.assembler.ir import View, ViewQuery
from openpto.isa.diagnostics import PTOError

BACKENDS = ("reference", "llvm")

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
    openpto.check(m)
    text = m.to_text()
    assert "pto.partition_view %tv, offsets = [%r, %c], sizes = [8, 16]" in text
    assert ".tile %t addr = %a : !pto.tile<8x16xf32>" in text
    assert openpto.parse(text) == m and openpto.parse(text).to_text() == text
    assert load_bytes(m.to_bytes()) == m
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
    with pytest.raises(PTOError) as e:
        openpto.check(openpto.parse(text))
    errs = getattr(e.value, "errors", [e.value])
    assert code in [x.code for x in errs], [str(x) for x in errs]
    assert all(x.location.line == 2 for x in errs if x.code == code)


def test_static_pointer_extent_bounds_the_view() -> None:
    ok = ("kernel @k(%p : !pto.memref<64xf32>) {\n"
          "  %v = pto.make_tensor_view %p, shape = [8, 8], strides = [8, 1] : !pto.tensor_view<8x8xf32>\n}\n")
    openpto.check(openpto.parse(ok))
    with pytest.raises(PTOError) as e:
        openpto.check(openpto.parse(ok.replace("[8, 1]", "[9, 1]")))
    assert e.value.code == "STRUCT_OOB" and "spans 71 elements" in str(e.value)
