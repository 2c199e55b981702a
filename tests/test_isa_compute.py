"""Shared numeric helpers at widths no instruction reaches yet (i64), against hand values."""
import numpy as np
import pytest

from openpto.isa.compute import int_div, int_rem


@pytest.mark.parametrize("t", [np.int8, np.int16, np.int32, np.int64])
def test_int_div_truncates_and_is_total(t) -> None:  # noqa: ANN001
    m = int(np.iinfo(t).min)
    a = np.array([7, -7, 7, -7, m, m, m, 5, 0], t)
    b = np.array([2, 2, -2, -2, -1, 2, 1, 0, 3], t)
    assert int_div(a, b).tolist() == [3, -3, -3, 3, m, m // 2, m, -1, 0]


def test_int_div_unsigned_by_zero_is_all_ones() -> None:
    assert int_div(np.array([7, 0], np.uint64), np.array([2, 0], np.uint64)).tolist() == [3, 2**64 - 1]


def test_int_rem_floor_and_trunc() -> None:
    a, b = np.array([7, -7, 7, -7, 5], np.int64), np.array([3, 3, -3, -3, 0], np.int64)
    assert int_rem(a, b, floor=True).tolist() == [1, 2, -2, -1, 5]
    assert int_rem(a, b, floor=False).tolist() == [1, -1, 1, -1, 5]
