"""HiFloat8 (HiF8), the A5 tapered-precision 8-bit float, as uint8 codes.

numpy has no HiF8 type, so tiles of ``hifloat8`` hold the raw codes (uint8) and this module is
the one definition of what a code means. Layout of a code: a sign bit, then a prefix ("dot")
that says how many exponent bits D follow, the exponent in sign-magnitude form with an implicit
leading 1, then the mantissa:

=======  ====  ==================  ============  ==========================
prefix    D    exponent E          mantissa bits  value
=======  ====  ==================  ============  ==========================
``11``    4    ±(8 .. 15)          1             2**E * 1.M
``10``    3    ±(4 .. 7)           2             2**E * 1.M
``01``    2    ±(2 .. 3)           3             2**E * 1.M
``001``   1    ±1                  3             2**E * 1.M
``0001``  0    0                   3             1.M
``0000``  -    -                   3 (M = 1..7)   2**(M - 23) (denormals)
=======  ====  ==================  ============  ==========================

The exponent field's top bit is its sign (set: negative). 0x00 is zero (there is no -0), 0x80
the only NaN, 0x6F / 0xEF (E = 15, M = 1) are ±inf, so the largest finite magnitude is 2**15.
"""
from __future__ import annotations

import numpy as np

MAX = 32768.0            # 2**15 (E = 15, M = 0, code 0x6E)
NAN_CODE = 0x80
INF_CODE = 0x6F          # +inf; -inf is 0xEF
MIN_EXP = -22            # the smallest value is the denormal 2**-22

# (prefix value, prefix length, exponent bits D, mantissa bits) for each normal class
_CLASSES = ((0b11, 2, 4, 1), (0b10, 2, 3, 2), (0b01, 2, 2, 3), (0b001, 3, 1, 3), (0b0001, 4, 0, 3))


def mantissa_bits(e: np.ndarray) -> np.ndarray:
    """Stored mantissa bits of a value whose binary exponent is ``e`` (floor(log2 |x|)): 3 up to
    |e| = 3, 2 up to 7, 1 up to 15; 0 in the denormal range -22 <= e <= -16 (powers of two)."""
    a = np.abs(e)
    return np.where(e <= -16, 0, np.where(a <= 3, 3, np.where(a <= 7, 2, 1)))


def quantum_exponent(e: np.ndarray) -> np.ndarray:
    """k such that a value with exponent ``e`` is rounded to a multiple of 2**k (below 2**-22 the
    grid is {0, 2**-22})."""
    e = np.maximum(e, MIN_EXP)
    return e - mantissa_bits(e)


def _decode_one(code: int) -> float:
    sign = -1.0 if code & 0x80 else 1.0
    p = code & 0x7F
    if p >> 3 == 0:
        if p == 0:
            return float("nan") if code & 0x80 else 0.0
        return sign * 2.0 ** (p - 23)
    for prefix, plen, d, m in _CLASSES:
        if p >> (7 - plen) == prefix:
            rest = p & ((1 << (7 - plen)) - 1)
            field, mant = rest >> m, rest & ((1 << m) - 1)
            e = 0
            if d:
                neg = field >> (d - 1)
                e = (1 << (d - 1)) | (field & ((1 << (d - 1)) - 1))
                e = -e if neg else e
            if d == 4 and e == 15 and mant == 1:
                return sign * float("inf")
            return sign * 2.0 ** e * (1 + mant / (1 << m))
    raise AssertionError(code)   # every 7-bit payload has a prefix


#: code -> value (float64, exact)
DECODE = np.array([_decode_one(c) for c in range(256)], np.float64)
_FINITE = np.array(sorted((c for c in range(128) if np.isfinite(DECODE[c])), key=lambda c: DECODE[c]), np.uint8)
_FINITE_VALUES = DECODE[_FINITE]        # ascending: 0, 2**-22, ..., 2**15


def decode(codes: np.ndarray) -> np.ndarray:
    """HiF8 codes -> float64 values (exact)."""
    return DECODE[np.asarray(codes, np.uint8)]


def encode_exact(values: np.ndarray) -> np.ndarray:
    """float64 values that HiF8 holds exactly (or ±inf, NaN) -> codes; -0 gives 0x00."""
    v = np.asarray(values, np.float64)
    mag = np.abs(v)
    idx = np.clip(np.searchsorted(_FINITE_VALUES, mag), 0, len(_FINITE) - 1)
    codes = _FINITE[idx]
    bad = np.isfinite(v) & (_FINITE_VALUES[idx] != mag)
    if bad.any():
        raise ValueError(f"not a HiF8 value: {v[bad].ravel()[:4]}")
    codes = np.where(np.isinf(v), np.uint8(INF_CODE), codes)
    codes = np.where((v < 0) & (codes != 0), codes | np.uint8(0x80), codes).astype(np.uint8)
    return np.where(np.isnan(v), np.uint8(NAN_CODE), codes).astype(np.uint8)


def encode(values: np.ndarray) -> np.ndarray:
    """float values -> HiF8 codes, rounded to nearest with ties away from zero (what the A5
    conversion does), overflow beyond the rounding range to ±inf, NaN to 0x80."""
    v = np.asarray(values, np.float64)
    mag = np.where(np.isfinite(v), np.abs(v), 0.0)
    e = np.frexp(mag)[1].astype(np.int64) - 1
    k = quantum_exponent(e).astype(np.int32)
    r = np.ldexp(np.floor(np.ldexp(mag, -k) + 0.5), k)      # exact: |x| / 2**k has few bits
    r = np.where(r > MAX, np.inf, r)
    r = np.where(np.isinf(v), np.inf, r)
    return encode_exact(np.where(np.isnan(v), np.nan, np.copysign(r, v)))
