"""TSORT32 tie-breaking: equal values go in ascending order of their idx value (the public page's
"ties broken by smaller index first" and the CPU simulator's comparator), not in column order.
Expected records are literals worked out by hand; both backends must produce them."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import openpto.isa as isa

from llvm_support import run_program as _run  # noqa: E402

# Row 0: the 3.0s carry indices 9, 2, 5 in column order, the NaNs 8 and 1, the zeros
# (-0 then +0) 7 and 3. Descending with smaller index first on ties:
#   NaN(1) NaN(8) 3(2) 3(5) 3(9) -0/+0 by index: +0(3) -0(7) -1(4)
VALUES = [3.0, np.nan, 3.0, -0.0, np.nan, 3.0, 0.0, -1.0]
INDEX = [9, 8, 2, 7, 1, 5, 3, 4]
WANT_INDEX = [1, 8, 2, 5, 9, 3, 7, 4]
WANT_VALUE_BITS = [0x7FC00000, 0x7FC00000, 0x40400000, 0x40400000, 0x40400000, 0x00000000,
                   0x80000000, 0xBF800000]
# unsigned comparison: 0xFFFFFFFF is the largest index, so it goes last among the 2.0s
VALUES_U = [2.0, 2.0, 2.0]
INDEX_U = [0xFFFFFFFF, 0x80000000, 6]
WANT_U = [6, 0x80000000, 0xFFFFFFFF]


def _records(dst: np.ndarray, n: int) -> tuple[list[int], list[int]]:
    rec = np.ascontiguousarray(dst[0, :2 * n]).view(np.uint32).reshape(n, 2)
    return rec[:, 0].tolist(), rec[:, 1].tolist()


def _reference(values: list[float], index: list[int]) -> np.ndarray:
    n = len(values)
    dst = isa.Tile.of(np.zeros((1, 2 * n), np.float32))
    isa.get("TSORT32").execute(dst=dst, src=isa.Tile.of(np.array([values], np.float32)),
                               idx=isa.Tile.of(np.array([index], np.uint32)))
    return dst.data


def test_reference_breaks_ties_by_smaller_index() -> None:
    bits, ids = _records(_reference(VALUES, INDEX), len(VALUES))
    assert ids == WANT_INDEX
    assert bits == WANT_VALUE_BITS


def test_reference_compares_indices_unsigned() -> None:
    _, ids = _records(_reference(VALUES_U, INDEX_U), 3)
    assert ids == WANT_U


def test_ties_are_per_block() -> None:
    """A tie across the 32-element block boundary is no tie: each block sorts alone."""
    values = [1.0] * 33
    index = list(range(40, 7, -1))      # 40 .. 8: descending, so each block reverses
    bits, ids = _records(_reference(values, index), 33)
    assert ids == list(range(9, 41)) + [8]


KERNEL = """
kernel @k(%dst : !pto.tile<1x{dc}xf32>, %src : !pto.tile<1x{n}xf32>, %idx : !pto.tile<1x{n}xu32>) {{
  %dst = tsort32 %src, %idx : (!pto.tile<1x{n}xf32>, !pto.tile<1x{n}xu32>) -> !pto.tile<1x{dc}xf32>
}}
"""


@pytest.mark.parametrize("values,index,want", [(VALUES, INDEX, WANT_INDEX), (VALUES_U, INDEX_U, WANT_U)])
def test_llvm_breaks_ties_like_the_hand_results(values: list[float], index: list[int], want: list[int]) -> None:
    n = len(values)
    args: dict[str, Any] = {"dst": np.zeros((1, 2 * n), np.float32), "src": np.array([values], np.float32),
                            "idx": np.array([index], np.uint32)}
    code, out = _run(KERNEL.format(n=n, dc=2 * n), "llvm", args)
    assert code is None
    _, ids = _records(out["dst"], n)
    assert ids == want
