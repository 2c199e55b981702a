"""TSCATTER's index form with dst, src and idx of static shapes of their own (the public kernels
read idx at its own row stride): each tile is addressed through its own strides on the reference
and llvm backends, checked against a scatter written here in plain numpy."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import openpto as pto
import scale_support
from openpto.conformance import cases as C
from openpto.isa import get
from openpto.isa.types import TileType

BACKENDS = ("reference", "llvm")

PROGRAM = """
kernel @k(%dst : !pto.tile<{dst}>, %src : !pto.tile<{src}>, %idx : !pto.tile<{idx}>) {{
  %dst = tscatter %src, %idx : !pto.tile<{src}>, !pto.tile<{idx}> -> !pto.tile<{dst}>
}}
"""


def scatter(backend: str, tmp: Any, types: dict[str, str], dst: np.ndarray, src: np.ndarray,
            idx: np.ndarray, profile: str = "a3") -> np.ndarray:
    args = {"dst": dst.copy(), "src": src.copy(), "idx": idx.copy()}
    options = {"cache_dir": tmp} if backend == "llvm" else {}
    pto.compile(pto.parse(PROGRAM.format(**types)), backend, profile, **options)(**args)
    return args["dst"]


def numpy_scatter(dst: np.ndarray, src: np.ndarray, idx: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """dst's static tile, flattened row-major, receives src[i, j] at idx[i, j] for the rows x cols
    corner of src (the later writer wins); both arrays are indexed by (i, j), never by offset."""
    out = dst.copy().reshape(-1)
    for i in range(rows):
        for j in range(cols):
            out[int(idx[i, j])] = src[i, j]
    return out.reshape(dst.shape)


@pytest.mark.parametrize("backend", BACKENDS)
def test_wider_idx_and_taller_src_at_their_own_strides(backend: str, tmp_path: Any) -> None:
    """src 8x16 (valid 3x5), idx 4x32 (valid 3x5), dst 6x8: an implementation that read idx at
    src's row stride (16) or src at idx's (32) would pick other elements."""
    rng = np.random.default_rng(7)
    types = {"dst": "6x8xf32", "src": "8x16xf32, valid=3x5", "idx": "4x32xi32, valid=3x5"}
    src = rng.standard_normal((8, 16)).astype(np.float32)
    idx = rng.integers(0, 48, size=(4, 32)).astype(np.int32)
    idx[:3, :5] = rng.permutation(48)[:15].reshape(3, 5)          # distinct targets in the region
    dst = np.full((6, 8), -7.0, np.float32)
    out = scatter(backend, tmp_path, types, dst, src, idx)
    want = numpy_scatter(dst, src, idx, 3, 5)
    np.testing.assert_array_equal(out, want)
    assert (out != -7.0).sum() == 15                               # exactly the region's 15 targets


@pytest.mark.parametrize("backend", BACKENDS)
def test_narrow_idx_tile_taller_than_src(backend: str, tmp_path: Any) -> None:
    """A 2-byte scatter whose idx is statically taller and narrower than src and dst, with
    collisions: the last element in row-major order wins."""
    types = {"dst": "4x32xf16", "src": "2x64xf16, valid=2x16", "idx": "8x16xu16, valid=4x16"}
    src = (np.arange(128).reshape(2, 64) + 1).astype(np.float16)
    idx = np.zeros((8, 16), np.uint16)
    idx[:2] = np.array([[3 * j for j in range(16)], [127 - 5 * j for j in range(16)]], np.uint16)
    idx[1, 15] = 3                                                  # collides with idx[0, 1] = 3
    dst = np.zeros((4, 32), np.float16)
    out = scatter(backend, tmp_path, types, dst, src, idx)
    want = numpy_scatter(dst, src, idx, 2, 16)
    assert want.reshape(-1)[3] == src[1, 15]                        # the later writer
    np.testing.assert_array_equal(out, want)


def test_shapes_of_their_own_verify_and_idx_still_covers_src() -> None:
    def codes(types: dict[str, str]) -> list[str]:
        return scale_support.codes(PROGRAM.format(**types), "a3")

    assert codes({"dst": "16x16xf32", "src": "16x16xf32", "idx": "32x32xi32, valid=16x16"}) == []
    assert codes({"dst": "8x8xf32", "src": "16x32xf32, valid=8x8", "idx": "8x8xi32"}) == []
    assert codes({"dst": "16x16xf32", "src": "16x16xf32", "idx": "32x32xi32, valid=16x8"}) == ["STRUCT_VALID_REGION"]


def test_conformance_reshaped_grows_src_and_idx() -> None:
    """The conformance suite's 'reshaped' situation now gives src and idx static shapes of their
    own (before, only dst could grow)."""
    for profile in ("cpu", "a3", "a5"):
        base = next(c for c in C.base_cases(get("TSCATTER"), profile).values() if c is not None)
        ns = C.nonsquare(base)
        grown = C.reshaped(ns)
        assert grown is not None
        shapes = {n: t.shape for n, t in grown.types.items() if isinstance(t, TileType)}
        assert shapes["src"] != ns.types["src"].shape and shapes["idx"] != ns.types["idx"].shape, shapes
        assert shapes["src"] != shapes["idx"], shapes
        assert not grown.errors()
