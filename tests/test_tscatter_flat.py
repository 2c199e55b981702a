"""TSCATTER's index form reads idx as flat element offsets into dst's static tile (the public
implementations' reading): golden cases built from the public page's example shapes, each
expectation computed here with plain numpy, on the reference and llvm backends."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import openpto as pto

BACKENDS = ("reference", "llvm")

# the page's example: 16x16 data and a 16x16 index tile (its u16 index goes with 2-byte data)
PROGRAM = """
kernel @k(%dst : !pto.tile<{r}x{c}x{d}{v}>, %src : !pto.tile<16x16x{d}>, %idx : !pto.tile<16x16x{i}>) {{
  %dst = tscatter %src, %idx : !pto.tile<16x16x{d}>, !pto.tile<16x16x{i}> -> !pto.tile<{r}x{c}x{d}{v}>
}}
"""


def scatter(backend: str, tmp: Any, dst: np.ndarray, src: np.ndarray, idx: np.ndarray, d: str, i: str,
            profile: str = "a2", valid: str = "") -> dict[str, np.ndarray]:
    text = PROGRAM.format(r=dst.shape[0], c=dst.shape[1], d=d, i=i, v=valid)
    args = {"dst": dst.copy(), "src": src.copy(), "idx": idx.copy()}
    options = {"cache_dir": tmp} if backend == "llvm" else {}
    pto.compile(pto.parse(text), backend, profile, **options)(**args)
    return args


def expected(dst: np.ndarray, src: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """dst_flat[idx[i, j]] = src[i, j] in row-major order: later elements overwrite earlier ones."""
    out = dst.copy().reshape(-1)
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            out[int(idx[i, j])] = src[i, j]
    return out.reshape(dst.shape)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d,npd,i,npi", [("f32", np.float32, "u32", np.uint32), ("f16", np.float16, "u16", np.uint16),
                                          ("i32", np.int32, "i32", np.int32), ("i8", np.int8, "i16", np.int16)])
def test_permutation_is_a_flat_scatter(backend: str, d: str, npd: Any, i: str, npi: Any, tmp_path: Any) -> None:
    rng = np.random.default_rng(1)
    src = (rng.standard_normal((16, 16)) * 30).astype(npd)
    perm = rng.permutation(256)
    idx = perm.reshape(16, 16).astype(npi)
    dst = np.zeros((16, 16), npd)
    out = scatter(backend, tmp_path, dst, src, idx, d, i, profile="cpu" if d == "i8" else "a2")   # 16 B i8 rows
    want = np.empty(256, npd)
    want[perm] = src.reshape(-1)                 # a permutation: every element written exactly once
    np.testing.assert_array_equal(out["dst"].reshape(-1), want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_row_indices_recalculated_as_offsets(backend: str, tmp_path: Any) -> None:
    """The public CPU test turns row selectors r into offsets r * cols + col; the scatter then puts
    src[i, j] at dst[r, j], which is what the old row reading meant."""
    rng = np.random.default_rng(2)
    rows = rng.permutation(16)[:, None].repeat(16, axis=1)            # one destination row per src row
    idx = (rows * 16 + np.arange(16)[None, :]).astype(np.int32)
    src = rng.standard_normal((16, 16)).astype(np.float32)
    out = scatter(backend, tmp_path, np.zeros((16, 16), np.float32), src, idx, "f32", "i32")
    want = np.zeros((16, 16), np.float32)
    want[rows[:, 0]] = src
    np.testing.assert_array_equal(out["dst"], want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_duplicates_last_writer_wins_and_untargeted_untouched(backend: str, tmp_path: Any) -> None:
    src = np.arange(256, dtype=np.float32).reshape(16, 16) + 1
    idx = (np.arange(256).reshape(16, 16) % 7 * 3).astype(np.int32)   # offsets 0, 3, ..., 18, many times
    dst = np.full((16, 16), -5, np.float32)
    out = scatter(backend, tmp_path, dst, src, idx, "f32", "i32", profile="cpu")
    want = expected(dst, src, idx)
    assert want.reshape(-1)[18] == 252.0                               # element 251 is the last to hit 18
    targeted = np.zeros(256, bool)
    targeted[idx.reshape(-1)] = True
    np.testing.assert_array_equal(out["dst"].reshape(-1)[targeted], want.reshape(-1)[targeted])
    if backend == "reference":                                          # the reference leaves the rest
        np.testing.assert_array_equal(out["dst"], want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_offsets_address_the_static_tile_not_the_valid_region(backend: str, tmp_path: Any) -> None:
    """A 16x32 dst: offset k lands at row k // 32, column k % 32 (its static column count)."""
    src = np.arange(256, dtype=np.float32).reshape(16, 16)
    idx = (np.arange(256).reshape(16, 16) * 2).astype(np.int32)       # every other element of the first 16 rows
    out = scatter(backend, tmp_path, np.zeros((16, 32), np.float32), src, idx, "f32", "i32", profile="cpu")
    want = np.zeros((16, 32), np.float32)
    want[:, 0::2] = src
    np.testing.assert_array_equal(out["dst"], want)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bad", [256, -1])
def test_offset_outside_the_static_tile_faults(backend: str, bad: int, tmp_path: Any) -> None:
    idx = np.zeros((16, 16), np.int32)
    idx[3, 5] = bad
    with pytest.raises(pto.PTOError) as e:
        scatter(backend, tmp_path, np.zeros((16, 16), np.float32), np.ones((16, 16), np.float32), idx, "f32", "i32",
                profile="cpu")
    assert e.value.code == "RUNTIME_OOB"


def test_a_narrower_dst_valid_region_is_legal() -> None:
    """Offsets, not (row, column) pairs: dst's valid columns need not cover src's."""
    text = PROGRAM.format(r=16, c=16, d="f32", i="i32", v=", valid=16x8")
    pto.check(pto.parse(text), profile="a2")
