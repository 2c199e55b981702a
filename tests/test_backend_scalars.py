"""The scalar ops' meaning in the reference backend, against hand-computed values."""
from __future__ import annotations

import math

import pytest

from openpto.backends.reference import scalars as X
from openpto.isa.types import INDEX, ScalarType

I32, U8, I1, F16, F32 = (ScalarType(n) for n in ("i32", "u8", "i1", "f16", "f32"))


@pytest.mark.parametrize("op, t, a, b, want", [
    ("addi", I32, 2**31 - 1, 1, -2**31),            # wraps
    ("muli", U8, 16, 17, 16),                       # 272 mod 256
    ("divsi", I32, -7, 2, -3),                      # truncates
    ("remsi", I32, -7, 2, -1),
    ("floordivsi", INDEX, -7, 2, -4),
    ("ceildivsi", INDEX, 7, 2, 4),
    ("divsi", I32, 5, 0, -1),                       # x / 0 = -1 (all bits), as the tile ISA
    ("divui", U8, 200, 0, 255),
    ("remui", U8, 200, 0, 200),                     # x rem 0 = x
    ("divsi", I32, -2**31, -1, -2**31),             # MIN / -1 wraps
    ("divui", U8, 200, 3, 66),
    ("shli", I32, 1, 31, -2**31),
    ("shli", I32, 1, 32, 0),                        # count >= width shifts everything out
    ("shrsi", I32, -8, 40, -1),                     # ... arithmetic shifts fill with the sign
    ("shrui", I32, -8, 28, 15),
    ("maxui", I32, -1, 1, -1),                      # -1 is the largest unsigned
    ("minsi", I32, -1, 1, -1),
    ("andi", I1, True, False, False),
    ("xori", I1, True, True, False),
])
def test_integer_ops(op: str, t: ScalarType, a: int, b: int, want: int) -> None:
    assert X.int_binary(op, t)(a, b) == want


def test_compares_and_casts() -> None:
    assert X.cmpi("ult", I32)(-1, 1) is False and X.cmpi("slt", I32)(-1, 1) is True
    assert X.cmpf("olt")(math.nan, 1.0) is False and X.cmpf("ult")(math.nan, 1.0) is True
    assert X.cmpf("uno")(math.nan, 0.0) and not X.cmpf("ord")(math.nan, 0.0)
    assert X.cast("fptosi", F32, I32)(math.nan) == 0                # NaN -> 0, saturating
    assert X.cast("fptosi", F32, I32)(1e20) == 2**31 - 1
    assert X.cast("fptoui", F32, U8)(-3.5) == 0
    assert X.cast("sitofp", I1, F32)(True) == -1.0 and X.cast("uitofp", I1, F32)(True) == 1.0
    assert X.cast("index_cast", INDEX, U8)(-1) == 255 and X.cast("extsi", U8, I32)(255) == -1
    assert X.cast("extui", U8, I32)(255) == 255


def test_float_ops_round_to_their_type() -> None:
    assert X.float_binary("addf", F16)(65504.0, 65504.0) == math.inf
    assert X.convert(0.1, F16) == 0.0999755859375
    assert X.float_binary("addf", F32)(0.1, 0.2) == 0.30000001192092896
    assert math.isnan(X.float_binary("maximumf", F32)(math.nan, 1.0))
    assert X.float_binary("maxf", F32)(math.nan, 1.0) == 1.0
    assert math.copysign(1, X.float_binary("minimumf", F32)(0.0, -0.0)) == -1
