"""The 4-bit floats of the A5 MX formats, E2M1 and E1M2, as codes (one per numpy uint8).

The public types ``float4_e2m1x2_t`` / ``float4_e1m2x2_t`` hold two 4-bit values per byte.
openpto counts a tile's columns in 4-bit elements, as the A5 TCVT and the CPU element accessors
do (a row of C elements takes C / 2 bytes of memory: element 2k in the low nibble of byte k,
element 2k + 1 in the high nibble, see ``pack``), and its numpy storage holds one element per
uint8: the code in the low nibble, the high nibble zero.

A code is a sign bit and a magnitude field (exponent, mantissa) with exponent bias 1; an
exponent field of 0 is subnormal (0.M * 2**0). Neither format has an infinity or a NaN:

=======  ==================================  ==========
format   magnitudes (codes 0..7)             largest
=======  ==================================  ==========
E2M1     0, 0.5, 1, 1.5, 2, 3, 4, 6          6
E1M2     0, 0.25, 0.5, 0.75, 1, 1.25, 1.5,   1.75
         1.75
=======  ==================================  ==========

Codes 8..15 are the negatives (8 is -0).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .diagnostics import PTOError


@dataclass(frozen=True)
class Fp4:
    """One 4-bit format: ``exp_bits`` + ``man_bits`` = 3, bias 1."""

    name: str
    exp_bits: int
    man_bits: int

    def magnitude(self, field: int) -> float:
        """The value of a 3-bit magnitude field (exponent, mantissa)."""
        e, m = field >> self.man_bits, field & ((1 << self.man_bits) - 1)
        frac = m / (1 << self.man_bits)
        return frac if e == 0 else 2.0 ** (e - 1) * (1 + frac)

    @property
    def magnitudes(self) -> np.ndarray:
        """The eight magnitudes, ascending (the codes' order)."""
        return np.array([self.magnitude(f) for f in range(8)], np.float64)

    @property
    def max(self) -> float:
        return float(self.magnitudes[-1])

    @property
    def min_exp(self) -> int:
        """Binary exponent of the smallest normal (1.0 in both formats)."""
        return 0

    @property
    def precision(self) -> int:
        """Significand bits with the hidden one."""
        return self.man_bits + 1

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Codes (low nibble) -> float64 values, exact; -0 for code 8."""
        c = np.asarray(codes, np.uint8) & 0xF
        mag = self.magnitudes[c & 7]
        return np.where(c & 8, -mag, mag)

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Values -> codes, rounded to nearest with ties to the even code; beyond the largest
        magnitude (±inf included) saturates to ±max; NaN gives 0 (+0); the sign of zero kept."""
        v = np.asarray(values, np.float64)
        nan = np.isnan(v)
        mag = np.where(nan, 0.0, np.abs(v))
        table = self.magnitudes
        mids = (table[:-1] + table[1:]) / 2
        up = np.zeros(mag.shape, np.uint8)
        for i, mid in enumerate(mids):          # step past midpoint i: above it, or on it to an even code
            even_next = (i + 1) % 2 == 0
            up += ((mag > mid) | ((mag == mid) & even_next)).astype(np.uint8)
        sign = np.signbit(v) & ~nan
        return (up | np.where(sign, np.uint8(8), np.uint8(0))).astype(np.uint8)

    def encode_exact(self, values: np.ndarray) -> np.ndarray:
        """Values the format holds exactly (NaN allowed: gives 0) -> codes; ValueError otherwise."""
        v = np.asarray(values, np.float64)
        codes = self.encode(v)
        back = self.decode(codes)
        bad = ~np.isnan(v) & (back != v)
        if bad.any():
            raise ValueError(f"not a {self.name} value: {v[bad].ravel()[:4]}")
        return codes


E2M1 = Fp4("float4_e2m1x2", 2, 1)
E1M2 = Fp4("float4_e1m2x2", 1, 2)


def pack(codes: np.ndarray) -> np.ndarray:
    """Rows of an even number of 4-bit codes -> their memory bytes: element 2k in the low nibble
    of byte k, element 2k + 1 in the high nibble."""
    c = np.asarray(codes, np.uint8) & 0xF
    if c.ndim == 0 or c.shape[-1] % 2:
        raise PTOError("PTO_ARG", "packed fp4 rows hold an even number of elements",
                       expected="an array whose last dimension is even", actual=f"shape {c.shape}")
    return (c[..., 0::2] | (c[..., 1::2] << 4)).astype(np.uint8)


def unpack(data: np.ndarray) -> np.ndarray:
    """The inverse of ``pack``: bytes -> twice as many codes per row."""
    b = np.asarray(data, np.uint8)
    out = np.empty(b.shape[:-1] + (2 * b.shape[-1],), np.uint8)
    out[..., 0::2], out[..., 1::2] = b & 0xF, b >> 4
    return out
