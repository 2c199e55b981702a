"""Instructions whose legality or shape rules follow the current public a2/a3/a5 headers: the
element types and index layouts they newly accept run on the reference and llvm backends, checked
against hand-written expectations (literal masks, numpy indexing written here)."""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from llvm_support import run_program

BACKENDS = ("reference", "llvm")

# --------------------------------------------------------------------------- TTRI: a5's 8-bit and bf16 types

TTRI = """
kernel @k(%dst : !pto.tile<4x32x{d}, valid=3x4>, %d : index) {{
  %dst = ttri %d {{upper = {upper}}} : (index) -> !pto.tile<4x32x{d}, valid=3x4>
}}
"""

# lower, d = 0: ones on and below the main diagonal; upper, d = 1: ones strictly above it
_LOWER_0 = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]]
_UPPER_1 = [[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1]]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d,npd", [("i8", np.int8), ("u8", np.uint8), ("bf16", ml_dtypes.bfloat16)])
@pytest.mark.parametrize("upper,diag,expected", [("false", 0, _LOWER_0), ("true", 1, _UPPER_1)])
def test_ttri_new_a5_types(backend: str, d: str, npd: Any, upper: str, diag: int,
                           expected: list[list[int]]) -> None:
    code, out = run_program(TTRI.format(d=d, upper=upper), backend,
                            {"dst": np.full((4, 32), 7, dtype=npd), "d": diag})
    assert code is None
    got = out["dst"][:3, :4].astype(np.float32)
    assert np.array_equal(got, np.array(expected, dtype=np.float32))
