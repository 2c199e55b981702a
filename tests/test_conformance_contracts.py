"""Every numerics contract rejects a minimal deliberate violation and accepts an honest result.

Each test takes a real instruction case, runs the reference semantics (the oracle), then
judges a hand-made "backend" result with ``contracts.compare``. The violations are the ones a
real backend makes: an f16 accumulator, an overflow to inf where the exact sum is finite,
1 ulp off under an exact contract, 3 ulp off under a 2-ulp bound, a wrong NaN-ness, a zero of
the wrong sign. The honest results are computed independently (f32 accumulation in several
orders), not copied from the oracle.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from openpto.conformance import cases as C
from openpto.conformance import contracts as K
from openpto.isa import dtypes as dt
from openpto.isa.registry import get
from openpto.isa.types import TileType

F16_MAX = 65504.0


def _case(mnemonic: str, dtypes: tuple[dt.DType, ...], **types: TileType) -> C.Case:
    case = C.base_cases(get(mnemonic), "cpu")[dtypes]
    return dataclasses.replace(case, types={**case.types, **types}) if types else case


def _inputs(case: C.Case, **arrays: Any) -> dict[str, np.ndarray]:
    """Zeros for every tile operand, the given rows written into the top-left corner."""
    out: dict[str, np.ndarray] = {}
    for name, t in case.types.items():
        a = np.zeros(t.shape, t.dtype.np_dtype)
        if name in arrays:
            v = np.atleast_2d(np.asarray(arrays[name], dtype=t.dtype.np_dtype))
            a[:v.shape[0], :v.shape[1]] = v
        out[name] = a
    return out


def _judge(case: C.Case, inputs: dict[str, np.ndarray], name: str, got: np.ndarray) -> K.Difference | None:
    want = K.oracle(case, inputs)
    return K.compare(case.instr, case, {**want, name: got}, want, inputs)


def _with(case: C.Case, inputs: dict[str, np.ndarray], name: str, at: tuple[int, int], value: Any) -> np.ndarray:
    """The oracle's output with one element replaced (by a value or, for ``bits``, a bit pattern)."""
    got = K.oracle(case, inputs)[name].copy()
    got[at] = value
    return got


def _ulps(a: np.ndarray, at: tuple[int, int], k: int) -> np.ndarray:
    b = a.copy()
    u = b.view(np.uint32) if b.itemsize == 4 else b.view(np.uint16)
    u[at] = int(u[at]) + k
    return b


def _acc(terms: np.ndarray, acc: type, out: type) -> Any:
    """A sequential accumulation in ``acc`` precision, rounded once to ``out``."""
    s = acc(0)
    with np.errstate(over="ignore"):
        for t in terms:
            s = acc(s + acc(t))
        return out(s)


def _bits(value: int, width: type = np.uint32) -> Any:
    return np.array([value], width).view(np.float32 if width is np.uint32 else np.float16)[0]


# --------------------------------------------------------------------------- sum: accumulation precision

ROW_F16 = {"src": TileType(16, 64, dt.F16, valid_rows=12, valid_cols=64)}


def _drifting_row() -> np.ndarray:
    """1.0 and 63 halves of f16's step at 1: every f16 addition ties back to 1.0 (drift
    63 * 2**-11 ~ 0.03), while f32 holds the exact 1.0308 and rounds once."""
    return np.array([1.0] + [2.0 ** -11] * 63, np.float16)


def test_sum_rejects_an_f16_accumulator_where_the_spec_requires_f32() -> None:
    case = _case("TROWSUM", (dt.F16, dt.F16), **ROW_F16)
    row = _drifting_row()
    inputs = _inputs(case, src=row)
    f16_acc = _acc(row, np.float16, np.float16)
    assert f16_acc == 1.0                                        # the drift is real
    diff = _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), f16_acc))
    assert diff is not None and diff.index == (0, 0) and "exact 1.03076171875" in diff.expected


@pytest.mark.parametrize("order", ["forward", "reverse", "pairwise"])
def test_sum_accepts_f32_accumulation_in_any_order(order: str) -> None:
    case = _case("TROWSUM", (dt.F16, dt.F16), **ROW_F16)
    rng = np.random.default_rng(7)
    rows = np.concatenate([_drifting_row()[None], rng.standard_normal((11, 64)).astype(np.float16) * 300])
    inputs = _inputs(case, src=rows)
    got = K.oracle(case, inputs)["dst"].copy()
    for i, r in enumerate(rows.astype(np.float32)):
        if order == "pairwise":
            while len(r) > 1:
                r = (r[0::2] + r[1::2]).astype(np.float32)
            got[i, 0] = np.float16(r[0])
        else:
            got[i, 0] = _acc(r if order == "forward" else r[::-1], np.float32, np.float16)
    assert _judge(case, inputs, "dst", got) is None


def test_matmul_rejects_an_f16_accumulator_for_f16_inputs() -> None:
    case = _case("TMATMUL", (dt.F32, dt.F16, dt.F16))
    a = np.array([[1.0] + [2.0 ** -11] * 15], np.float16)            # K = 16
    inputs = _inputs(case, a=a, b=np.ones((16, 16), np.float16))
    f16_acc = np.float32(_acc(a[0], np.float16, np.float16))
    f32_acc = _acc(a[0], np.float32, np.float32)
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), f32_acc)) is None
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), f16_acc)).index == (0, 0)


def test_sum_bound_is_the_f32_one_not_the_output_dtypes() -> None:
    """Independent expectation: for f32 terms the slack is (n + 2) * 2**-24 * S plus half an
    f32 step; twice that is rejected, half of it accepted (cancellation: S >> |sum|)."""
    case = _case("TROWSUM", (dt.F32, dt.F32))
    inputs = _inputs(case, src=[[1e6, -1e6, 1.0]])
    n = K.reduction_length(case)
    slack = (n + 2) * 2.0 ** -24 * (2e6 + 1)
    ok, bad = (_with(case, inputs, "dst", (0, 0), np.float32(1 + f * slack)) for f in (0.5, 2.0))
    assert _judge(case, inputs, "dst", ok) is None
    assert _judge(case, inputs, "dst", bad) is not None


# --------------------------------------------------------------------------- sum: range

def test_sum_rejects_inf_where_the_exact_sum_is_finite() -> None:
    """sum|terms| = 180000 overflows f16 (the old bound went infinite there); the exact 60000
    does not, and an f16 accumulator's inf is a violation."""
    case = _case("TROWSUM", (dt.F16, dt.F16))
    row = np.array([60000, 60000, -60000], np.float16)
    inputs = _inputs(case, src=row)
    assert np.isinf(_acc(row, np.float16, np.float16))
    for wrong in (np.inf, np.nan, -np.inf):
        assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), wrong)).index == (0, 0)
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), _acc(row, np.float32, np.float16))) is None


def test_sum_requires_inf_where_the_rounded_exact_sum_overflows() -> None:
    case = _case("TROWSUM", (dt.F16, dt.F16))
    inputs = _inputs(case, src=[[60000, 60000], [F16_MAX, 15.0]])     # 120000; 65519 (< 65520: finite)
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), F16_MAX)).index == (0, 0)
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), -np.inf)).index == (0, 0)
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), np.inf)) is None
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (1, 0), np.inf)).index == (1, 0)
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (1, 0), F16_MAX)) is None


def test_sum_leaves_f32_intermediate_overflow_to_the_order_but_not_nan() -> None:
    """S beyond f32's range: some orders overflow legitimately; NaN is still owed to NaN."""
    case = _case("TROWSUM", (dt.F32, dt.F32))
    inputs = _inputs(case, src=[[3e38, 3e38, -3e38], [3e38, 3e38, np.nan]])
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), np.inf)) is None
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (1, 0), np.inf)).index == (1, 0)


def test_sum_with_an_infinite_term_owes_that_infinity() -> None:
    case = _case("TROWSUM", (dt.F16, dt.F16))
    inputs = _inputs(case, src=[[np.inf, -60000, -60000]])            # no order reaches -inf in f32
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), np.nan)).index == (0, 0)
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), F16_MAX)).index == (0, 0)


def test_sum_leaves_the_sign_of_a_zero_sum_free_and_integers_exact() -> None:
    case = _case("TROWSUM", (dt.F32, dt.F32))
    inputs = _inputs(case, src=[[1.5, -1.5]])
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), -0.0)) is None
    icase = _case("TROWSUM", (dt.I32, dt.I32))
    iinputs = _inputs(icase, src=[[2**31 - 1, 1]])                    # wraps to -2**31
    assert _judge(icase, iinputs, "dst", _with(icase, iinputs, "dst", (0, 0), -2**31 + 1)).index == (0, 0)


# --------------------------------------------------------------------------- products

def test_product_bound_is_relative_to_the_exact_product() -> None:
    case = _case("TROWPROD", (dt.F32, dt.F32))
    inputs = _inputs(case, src=np.full((12, 10), 1.0) * [[1.1, 0.9, 3.0] + [1.0] * 7])
    want = K.oracle(case, inputs)["dst"]
    assert _judge(case, inputs, "dst", _ulps(want, (0, 0), 2)) is None      # a few f32 roundings
    assert _judge(case, inputs, "dst", _ulps(want, (0, 0), 64)).index == (0, 0)


def test_product_zero_has_the_exact_products_sign() -> None:
    case = _case("TROWPROD", (dt.F32, dt.F32))
    inputs = _inputs(case, src=np.full((12, 10), 1.0) * [[-2.0, 0.0] + [1.0] * 8])    # -0
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), 0.0)).index == (0, 0)
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), -0.0)) is None


def test_product_whose_partial_products_may_leave_f32_is_order_dependent() -> None:
    case = _case("TROWPROD", (dt.F32, dt.F32))
    src = np.ones((12, 10))
    src[0, :4] = [1e30, 1e30, 1e-30, 1e-30]              # exact 1; 1e30 * 1e30 overflows f32
    src[1, :3] = [1e30, 1e-30, 0.5]                      # no order leaves f32's range
    inputs = _inputs(case, src=src)
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), np.inf)) is None
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (1, 0), np.inf)).index == (1, 0)


# --------------------------------------------------------------------------- exact

def test_exact_rejects_one_ulp_and_a_different_nan_payload() -> None:
    case = _case("TNEG", (dt.F32, dt.F32))
    inputs = _inputs(case, src=[[1.5, _bits(0x7FC00001)]])
    want = K.oracle(case, inputs)["dst"]
    assert _judge(case, inputs, "dst", -inputs["src"]) is None         # numpy's negation: honest
    assert _judge(case, inputs, "dst", _ulps(want, (0, 0), 1)).index == (0, 0)
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 1), _bits(0xFFC00000))).index == (0, 1)


# --------------------------------------------------------------------------- rounded

def test_rounded_rejects_one_ulp_and_a_wrong_zero_sign_but_not_a_nan_payload() -> None:
    case = _case("TADD", (dt.F32, dt.F32, dt.F32))
    inputs = _inputs(case, src0=[[0.1, 2.5, np.inf]], src1=[[0.2, -2.5, -np.inf]])
    want = K.oracle(case, inputs)["dst"]
    with np.errstate(invalid="ignore"):
        honest = inputs["src0"] + inputs["src1"]
    assert _judge(case, inputs, "dst", honest) is None
    assert _judge(case, inputs, "dst", _ulps(want, (0, 0), 1)).index == (0, 0)
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 1), -0.0)).index == (0, 1)  # RNE: +0
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 2), _bits(0x7FC00123))) is None
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 2), 0.0)).index == (0, 2)


def test_minmax_rejects_a_wrong_nan_ness_and_a_wrong_zero() -> None:
    case = _case("TMAX", (dt.F32, dt.F32, dt.F32))
    inputs = _inputs(case, src0=[[np.nan, 0.0, 1.0]], src1=[[1.0, -0.0, np.nan]])
    for at, wrong in (((0, 0), 1.0), ((0, 1), -0.0), ((0, 2), 1.0)):
        assert _judge(case, inputs, "dst", _with(case, inputs, "dst", at, wrong)).index == at
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 0), _bits(0xFFC00000))) is None


# --------------------------------------------------------------------------- ulp

def test_ulp_rejects_three_ulp_under_a_two_ulp_bound() -> None:
    case = _case("TEXP", (dt.F32, dt.F32))
    inputs = _inputs(case, src=[[0.5, -3.25, np.inf, -np.inf, 100.0]])
    want = K.oracle(case, inputs)["dst"]
    assert _judge(case, inputs, "dst", _ulps(want, (0, 1), 2)) is None
    assert _judge(case, inputs, "dst", _ulps(want, (0, 1), 3)).index == (0, 1)
    assert _judge(case, inputs, "dst", _ulps(want, (0, 0), -3)).index == (0, 0)
    for at, wrong in (((0, 2), np.float32(3.4028235e38)), ((0, 3), -0.0), ((0, 4), np.nan)):
        assert _judge(case, inputs, "dst", _with(case, inputs, "dst", at, wrong)).index == at


# --------------------------------------------------------------------------- conversions

def test_conversion_rejects_one_ulp_and_wrong_integers_but_frees_nan_payloads() -> None:
    case = _case("TCVT", (dt.F16, dt.F32), dst=TileType(16, 16, dt.F16))
    inputs = _inputs(case, src=[[0.1, np.nan, 70000.0]])
    want = K.oracle(case, inputs)["dst"]
    assert _judge(case, inputs, "dst", _ulps(want, (0, 0), 1)).index == (0, 0)
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 1), _bits(0xFE01, np.uint16))) is None
    assert _judge(case, inputs, "dst", _with(case, inputs, "dst", (0, 2), F16_MAX)).index == (0, 2)
    icase = _case("TCVT", (dt.I32, dt.F32), dst=TileType(16, 16, dt.I32))
    iinputs = _inputs(icase, src=[[2.5, -2.5]])                      # ROUND: half away from zero
    assert _judge(icase, iinputs, "dst", _with(icase, iinputs, "dst", (0, 0), 2)).index == (0, 0)
