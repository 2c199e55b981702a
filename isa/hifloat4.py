"""HiFloat4 (HiF4): bf16 rows quantised to 4-bit E1M2 codes under a three-level shared exponent.

The one numpy definition of the A6 ``TQUANT<1, MxQuantAlg::Hif4>`` algorithm (TQUANT_HIF4), kept
apart from the declaration so tests and backends can name its pieces. A row is cut into blocks
of 64 consecutive elements; each block carries 32 bits of scale metadata:

* Ea, one byte per block: an e6m2 mini-float (6 exponent bits biased by 48, 2 mantissa bits,
  code 0 meaning zero) close to max|block| / 7;
* Eb, one bit per 8 elements: set when the octet's maximum, divided by Ea, is at least 4;
* Ec, one bit per 4 elements: set when the quad's maximum, divided by Ea and 2**Eb, is at least 2.

Every element is divided by Ea * 2**Eb * 2**Ec (multiplied by bf16 reciprocals, each step rounded
to bf16) and rounded to the nearest E1M2 code (ties to the even code, beyond 1.75 saturating).
openpto's scale record (``record``) holds a block's metadata as four bytes: Ea, the Eb byte (bit
k: octet k), then the Ec bits of quads 0..7 and of quads 8..15 (bit q of each byte: quad q).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from . import fp4

BLOCK = 64               # elements sharing one Ea
OCTET = 8                # elements sharing one Eb bit
QUAD = 4                 # elements sharing one Ec bit
RECORD = 4               # scale bytes per block
E6M2_BIAS = 48
E6M2_MIN_EXP, E6M2_MAX_EXP = -48, 15
E6M2_TOP = 0xFE          # the largest code written: 1.5 * 2**15 (0xFF is never produced)
#: the bf16 the public algorithm multiplies a block maximum by (1/7 rounded to bf16)
INV7 = np.float32(ml_dtypes.bfloat16(1.0 / 7.0))
#: bf16 reciprocals of the e6m2 significands 1, 1.25, 1.5, 1.75 (f64 -> f32 -> bf16, as the golden)
RECIP_SIGNIFICAND = tuple(float(np.float32(np.float32(1.0 / (1 + m / 4)).astype(ml_dtypes.bfloat16)))
                          for m in range(4))


def bf16(x: np.ndarray) -> np.ndarray:
    """Round f32 values to bf16 (nearest even) and widen back to f32."""
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def e6m2_encode(sf: np.ndarray) -> np.ndarray:
    """Non-negative f32 values (bf16-exact) -> e6m2 codes: round to 3 significant bits (nearest
    even), exponent biased by 48; below 2**-48 after rounding (zero included) gives code 0; above
    1.5 * 2**15 (infinity included) gives 0xFE."""
    v = np.nan_to_num(np.asarray(sf, np.float32), nan=0.0, posinf=np.float32(np.finfo(np.float32).max))
    bits = v.view(np.uint32).astype(np.uint64)
    lsb = (bits >> 21) & 1
    rounded = (bits + 0xFFFFF + lsb) & ~np.uint64(0x1FFFFF)        # RNE to 2 mantissa bits
    exp = (rounded >> 23).astype(np.int64) - 127
    mant = ((rounded >> 21) & 3).astype(np.int64)
    code = ((exp + E6M2_BIAS) << 2) | mant
    code = np.where(exp < E6M2_MIN_EXP, 0, code)
    code = np.where((exp > E6M2_MAX_EXP) | (code > E6M2_TOP), E6M2_TOP, code)
    return code.astype(np.uint8)


def e6m2_value(codes: np.ndarray) -> np.ndarray:
    """e6m2 codes -> exact float64 values (code 0 is zero)."""
    c = np.asarray(codes, np.int64)
    val = (1 + (c & 3) / 4) * np.ldexp(1.0, (c >> 2) - E6M2_BIAS)
    return np.where(c == 0, 0.0, val)


def e6m2_reciprocal(codes: np.ndarray) -> np.ndarray:
    """The bf16 (as f32) the algorithm multiplies by for each code: the significand's bf16
    reciprocal times 2**(48 - exponent field), i.e. 2**-e (exact); 0 for code 0."""
    c = np.asarray(codes, np.int64)
    sig = np.array(RECIP_SIGNIFICAND, np.float64)[c & 3]
    return np.where(c == 0, 0.0, sig * np.ldexp(1.0, E6M2_BIAS - (c >> 2))).astype(np.float32)


def _group_max(a: np.ndarray, size: int) -> np.ndarray:
    return a.reshape(a.shape[0], -1, size).max(axis=2)


def quantise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """bf16 values (an R x C f32 array, C a multiple of 64) -> (R x C E1M2 codes, R x C/16 scale
    records). NaN is read as 0 by the maxima and encodes as +0; ±inf counts as the largest value
    (Ea 0xFE) and saturates; zero (either sign) encodes as +0."""
    x = np.asarray(x, np.float32)
    rows, cols = x.shape
    a = np.where(np.isnan(x), np.float32(0), np.abs(x))
    mc, mb, ma = _group_max(a, QUAD), _group_max(a, OCTET), _group_max(a, BLOCK)
    with np.errstate(all="ignore"):
        ea = e6m2_encode(bf16(ma * INV7))
        rec = e6m2_reciprocal(ea)
        eb = bf16(mb * np.repeat(rec, BLOCK // OCTET, axis=1)) >= 4
        eb_rec = np.where(eb, np.float32(0.5), np.float32(1))
        ec0 = bf16(mc * np.repeat(rec, BLOCK // QUAD, axis=1))
        ec = bf16(ec0 * np.repeat(eb_rec, OCTET // QUAD, axis=1)) >= 2
        ec_rec = np.where(ec, np.float32(0.5), np.float32(1))
        scale = bf16(np.repeat(rec, BLOCK // QUAD, axis=1) * (np.repeat(eb_rec, OCTET // QUAD, axis=1) * ec_rec))
        scaled = bf16(x * np.repeat(scale, QUAD, axis=1))
    codes = fp4.E1M2.encode(scaled)
    codes = np.where(scaled == 0, np.uint8(0), codes).astype(np.uint8)
    return codes, record(ea, eb, ec)


def _bits(flags: np.ndarray, per_byte: int = 8) -> np.ndarray:
    """Boolean flags (R x N, N a multiple of 8) -> bytes, flag k of a byte in bit k."""
    f = flags.reshape(flags.shape[0], -1, per_byte).astype(np.uint16)
    return (f << np.arange(per_byte, dtype=np.uint16)).sum(axis=2).astype(np.uint8)


def record(ea: np.ndarray, eb: np.ndarray, ec: np.ndarray) -> np.ndarray:
    """Per-block metadata (R x G codes, R x 8G and R x 16G flags) -> R x 4G record bytes."""
    rows, groups = ea.shape
    out = np.empty((rows, groups, RECORD), np.uint8)
    out[:, :, 0] = ea
    out[:, :, 1] = _bits(eb)
    ec_bytes = _bits(ec).reshape(rows, groups, 2)
    out[:, :, 2:] = ec_bytes
    return out.reshape(rows, groups * RECORD)


def dequantise(codes: np.ndarray, records: np.ndarray) -> np.ndarray:
    """The values codes + records stand for, exactly (float64): E1M2 value * Ea * 2**(Eb + Ec)."""
    c = np.asarray(codes, np.uint8)
    r = np.asarray(records, np.uint8).reshape(c.shape[0], -1, RECORD)
    ea = np.repeat(e6m2_value(r[:, :, 0]), BLOCK, axis=1)
    k = np.arange(c.shape[1])
    octet, quad = (k % BLOCK) // OCTET, (k % BLOCK) // QUAD
    eb = (r[:, k // BLOCK, 1] >> octet) & 1
    ec = (r[:, k // BLOCK, 2 + quad // 8] >> (quad % 8)) & 1
    return fp4.E1M2.decode(c) * ea * np.ldexp(1.0, (eb + ec).astype(np.int64))
