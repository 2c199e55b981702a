"""llvm backend: complex instructions (TSORT32, TMRGSORT, TGATHER, TGATHERB, TSCATTER, TCI, TTRI,
TPART*, TQUANT, TPRINT) against the reference backend, bit for bit: sort ties and NaNs, merge
stops, out-of-range run-time indices (which must raise the reference's code, never crash),
scatter collisions, partial regions, quantisation ties and saturation, and printed text."""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import openpto as pto

from llvm_support import executable as _exe, run_program as _run  # noqa: E402


def same(text: str, outs: tuple[str, ...] = ("dst",), **args: Any) -> str | None:
    """Run on both backends: equal fault codes, or equal bits of the written tiles' valid
    regions (the reference poisons the rest; destinations are pre-filled identically, so
    untouched valid elements compare too)."""
    rc, ra = _run(text, "reference", args)
    lc, la = _run(text, "llvm", args)
    assert rc == lc, (rc, lc)
    if rc is None:
        for k in outs:
            r, c = _valid(text, k)
            assert ra[k][:r, :c].tobytes() == la[k][:r, :c].tobytes(), (k, ra[k], la[k])
    return rc


def _valid(text: str, name: str) -> tuple[int, int]:
    t = pto.parse(text).kernels[0].tiles()[name]
    return t.valid_rows, t.valid_cols


def _fill(shape: tuple[int, int], npd: Any, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=shape[0] * shape[1] * np.dtype(npd).itemsize, dtype=np.uint8) \
        .view(npd).reshape(shape).copy()


# --------------------------------------------------------------------------- TSORT32

SORT = """
kernel @k(%dst : !pto.tile<3x{dc}x{d}, valid=2x{dv}>, %src : !pto.tile<3x40x{d}, valid=2x37>,
          %idx : !pto.tile<3x40xu32>) {{
  %dst = tsort32 %src, %idx : (!pto.tile<3x40x{d}, valid=2x37>, !pto.tile<3x40xu32>) -> !pto.tile<3x{dc}x{d}, valid=2x{dv}>
}}
"""


@pytest.mark.parametrize("d,npd,per", [("f32", np.float32, 2), ("f16", np.float16, 4),
                                       ("i16", np.int16, 4), ("i32", np.int32, 2)])
def test_tsort32_ties_nan_partial_block(d: str, npd: Any, per: int) -> None:
    rng = np.random.default_rng(3)
    if d.startswith("f"):
        src = rng.choice(np.array([1.5, -0.0, 0.0, np.inf, -np.inf, np.nan, 2.0, -7.0], npd), size=(3, 40))
        src.view(np.uint32 if d == "f32" else np.uint16)[0, 3] |= 5     # a NaN payload / odd bits
    else:
        src = rng.integers(-3, 3, size=(3, 40)).astype(npd)
    idx = rng.integers(0, 1 << 32, size=(3, 40), dtype=np.uint64).astype(np.uint32)
    dc = 40 * per
    text = SORT.format(d=d, dc=dc, dv=37 * per)
    assert same(text, dst=_fill((3, dc), npd), src=src, idx=idx) is None


#: extreme values of each sortable dtype: signed zeros, infinities, NaNs of either sign and
#: other payloads, the largest and smallest finite and subnormal magnitudes, integer limits
_EXTREMES = {
    "f32": np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,
                     0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x80000001, 0x3F800000], np.uint32).view(np.float32),
    "f16": np.array([0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x7C01, 0x7BFF, 0xFBFF, 0x0001, 0x8001,
                     0x3C00], np.uint16).view(np.float16),
    "i16": np.array([-(1 << 15), -(1 << 15) + 1, -1, 0, 1, (1 << 15) - 1], np.int16),
    "i32": np.array([-(1 << 31), -(1 << 31) + 1, -1, 0, 1, (1 << 31) - 1], np.int32),
}
_SORT_NP = {"f32": np.float32, "f16": np.float16, "i16": np.int16, "i32": np.int32}


@pytest.mark.parametrize("d", sorted(_EXTREMES))
@pytest.mark.parametrize("seed", [0, 1])
def test_tsort32_extremes_and_equal_keys(d: str, seed: int) -> None:
    """Two full blocks and a partial one per row of extreme values with indices from a pool
    of four (0, 1, 2^31, 2^32 - 1), so equal keys with equal indices (and different bits:
    -0 and +0, NaN payloads) are common and only the position orders them."""
    npd = _SORT_NP[d]
    per = 8 // np.dtype(npd).itemsize
    rng = np.random.default_rng(seed)
    src = rng.choice(_EXTREMES[d], size=(3, 80))
    idx = rng.choice(np.array([0, 1, 1 << 31, (1 << 32) - 1], np.uint64), size=(3, 80)).astype(np.uint32)
    text = SORT.format(d=d, dc=80 * per, dv=77 * per).replace("3x40", "3x80").replace("2x37", "2x77")
    assert same(text, dst=_fill((3, 80 * per), npd), src=src, idx=idx) is None


def test_tsort32_least_key_keeps_positions_by_hand() -> None:
    """i32 minimum values with index 2^32 - 1 (the least record there is) keep their order;
    -0.0/+0.0 with one index keep theirs too, below 1.0 and above -inf (hand-written)."""
    text = SORT.format(d="i32", dc=80, dv=74)
    src = np.full((3, 40), -(1 << 31), np.int32)
    src[:, ::5] = 7
    idx = np.full((3, 40), (1 << 32) - 1, np.uint32)
    idx[:, ::5] = np.arange(8, dtype=np.uint32)[::-1]
    _, got = _run(text, "llvm", {"dst": np.zeros((3, 80), np.int32), "src": src, "idx": idx})
    rec = got["dst"].view(np.uint32)
    # block 0 (columns 0-31): the sevens of columns 0, 5, .. 30 (indices 7 .. 1) by index, then the rest
    assert got["dst"][0, 0:64:2].tolist() == [7] * 7 + [-(1 << 31)] * 25
    assert rec[0, 1:64:2].tolist() == [1, 2, 3, 4, 5, 6, 7] + [(1 << 32) - 1] * 25
    assert got["dst"][1, 64:74:2].tolist() == [7, -(1 << 31), -(1 << 31), -(1 << 31), -(1 << 31)]

    text = SORT.format(d="f32", dc=80, dv=74)
    src = np.zeros((3, 40), np.float32)
    src[:, :6] = [-0.0, 1.0, 0.0, -np.inf, -0.0, 0.0]
    idx = np.full((3, 40), 9, np.uint32)
    _, got = _run(text, "llvm", {"dst": np.zeros((3, 80), np.float32), "src": src, "idx": idx})
    head = got["dst"][0, 0:64:2]
    bits = head.view(np.uint32).tolist()
    assert head[0] == 1.0 and head[-1] == -np.inf
    # the zeros in source order: -0 (col 0), +0 (2), -0 (4), +0 (5), then the 26 zero pads
    assert bits[1:5] == [0x80000000, 0, 0x80000000, 0]


MERGE4_TYPED = """
kernel @k(%dst : !pto.tile<1x64x{d}, valid=1x{dv}>, %executed : !pto.tile<1x16xu16, valid=1x4>,
          %a : !pto.tile<1x16x{d}>, %b : !pto.tile<1x16x{d}, valid=1x{vb}>, %c : !pto.tile<1x16x{d}>,
          %e : !pto.tile<1x16x{d}>) {{
  %dst, %executed = tmrgsort %a, %b, %c, %e {{exhausted = {ex}}} : (!pto.tile<1x16x{d}>, !pto.tile<1x16x{d}, valid=1x{vb}>, !pto.tile<1x16x{d}>, !pto.tile<1x16x{d}>) -> (!pto.tile<1x64x{d}, valid=1x{dv}>, !pto.tile<1x16xu16, valid=1x4>)
}}
"""


@pytest.mark.parametrize("d", sorted(_EXTREMES))
@pytest.mark.parametrize("ex", ["false", "true"])
@pytest.mark.parametrize("vb,dv", [(16, 64), (0, 64), (16, 24)])
def test_tmrgsort_extremes_every_dtype(d: str, ex: str, vb: int, dv: int) -> None:
    """Four lists of each sortable dtype's extreme values (sorted by the reference's order,
    and one left unsorted), equal values across lists; an empty list, a short dst."""
    npd = _SORT_NP[d]
    per = 8 // np.dtype(npd).itemsize
    rng = np.random.default_rng(vb + dv)
    lists = []
    for m in range(4):
        vals = rng.choice(_EXTREMES[d], size=16 // per)
        if m != 2:
            with np.errstate(invalid="ignore"):     # signalling NaNs widen quietly
                wide = vals.astype(np.float64)
            vals = vals[np.lexsort((-wide, ~np.isnan(wide)))]
        recs = _fill((1, 16), npd, seed=m)
        recs[0, ::per] = vals
        lists.append(recs)
    text = MERGE4_TYPED.format(d=d, dv=dv, vb=vb, ex=ex)
    assert same(text, ("dst", "executed"), dst=_fill((1, 64), npd), executed=np.zeros((1, 16), np.uint16),
                a=lists[0], b=lists[1], c=lists[2], e=lists[3]) is None


# --------------------------------------------------------------------------- TMRGSORT

MERGE = """
kernel @k(%dst : !pto.tile<1x{dc}xf32, valid=1x{dv}>, %executed : !pto.tile<1x16xu16, valid=1x4>,
          %a : !pto.tile<1x16xf32, valid=1x{va}>, %b : !pto.tile<1x16xf32>, %c : !pto.tile<1x8xf32>) {{
  %dst, %executed = tmrgsort %a, %b, %c {{exhausted = {ex}}} : (!pto.tile<1x16xf32, valid=1x{va}>, !pto.tile<1x16xf32>, !pto.tile<1x8xf32>) -> (!pto.tile<1x{dc}xf32, valid=1x{dv}>, !pto.tile<1x16xu16, valid=1x4>)
}}
"""


def _recs(values: list[float], start: int) -> np.ndarray:
    out = np.zeros((1, 2 * len(values)), np.float32)
    out[0, ::2] = values
    out.view(np.uint32)[0, 1::2] = np.arange(start, start + len(values))
    return out


@pytest.mark.parametrize("ex", ["false", "true"])
@pytest.mark.parametrize("dv,va", [(40, 16), (10, 16), (40, 0), (40, 6)])
def test_tmrgsort_ties_nan_and_stops(ex: str, dv: int, va: int) -> None:
    a = _recs([np.nan, 5, 3, 3, 0.0, -1, -np.inf, -9], 0)
    b = _recs([np.nan, 5, 3, -0.0, -0.0, -2, -3, -4], 100)
    c = _recs([7, 3, 1, 0], 200)
    text = MERGE.format(dc=48, dv=dv, va=va, ex=ex)
    same(text, ("dst", "executed"), dst=_fill((1, 48), np.float32), executed=np.zeros((1, 16), np.uint16),
         a=a, b=b, c=c)


def test_tmrgsort_dst_aliases_a_source() -> None:
    text = """
kernel @k(%a : !pto.tile<1x16xf32>, %executed : !pto.tile<1x16xu16, valid=1x4>, %b : !pto.tile<1x16xf32>) {
  %a, %executed = tmrgsort %a, %b : (!pto.tile<1x16xf32>, !pto.tile<1x16xf32>) -> (!pto.tile<1x16xf32>, !pto.tile<1x16xu16, valid=1x4>)
}
"""
    same(text, ("a", "executed"), a=_recs([9, 4, 2, 1, 0, -1, -2, -3], 0),
         executed=np.zeros((1, 16), np.uint16), b=_recs([8, 7, 6, 5, 3, -5, -6, -7], 50))


MERGE4 = """
kernel @k(%dst : !pto.tile<1x{dc}xf32, valid=1x{dv}>, %executed : !pto.tile<1x16xu16, valid=1x4>,
          %a : !pto.tile<1x16xf32>, %b : !pto.tile<1x16xf32, valid=1x{vb}>, %c : !pto.tile<1x16xf32>,
          %d : !pto.tile<1x16xf32>) {{
  %dst, %executed = tmrgsort %a, %b, %c, %d {{exhausted = {ex}}} : (!pto.tile<1x16xf32>, !pto.tile<1x16xf32, valid=1x{vb}>, !pto.tile<1x16xf32>, !pto.tile<1x16xf32>) -> (!pto.tile<1x{dc}xf32, valid=1x{dv}>, !pto.tile<1x16xu16, valid=1x4>)
}}
"""


@pytest.mark.parametrize("ex", ["false", "true"])
@pytest.mark.parametrize("seed,vb,dv", [(1, 16, 64), (2, 0, 64), (3, 6, 64), (4, 16, 20), (5, 16, 64)])
def test_tmrgsort_four_lists_tournament(ex: str, seed: int, vb: int, dv: int) -> None:
    """Four lists (the heads compared pairwise, then the winners): ties across all four go to
    the earliest list, NaN and signed zeros, an empty or short second list, unsorted lists
    (the head rule without error), a dst that fills first."""
    rng = np.random.default_rng(seed)
    pool = [np.nan, 4, 4, 1, -0.0, 0.0, -np.inf, 2]
    lists = [_recs(sorted(rng.choice(pool, 8), key=lambda v: -np.inf if v != v else -v)
                   if seed != 5 else list(rng.choice(pool, 8)), 10 * m) for m in range(4)]
    text = MERGE4.format(dc=64, dv=dv, vb=vb, ex=ex)
    same(text, ("dst", "executed"), dst=_fill((1, 64), np.float32), executed=np.zeros((1, 16), np.uint16),
         a=lists[0], b=lists[1], c=lists[2], d=lists[3])


MERGE1 = """
kernel @k(%dst : !pto.tile<1x1024x{d}, valid=1x{dv}>, %src : !pto.tile<1x1024x{d}, valid=1x{sv}>, %n : index) {{
  %dst = tmrgsort %src, %n : (!pto.tile<1x1024x{d}, valid=1x{sv}>, index) -> !pto.tile<1x1024x{d}, valid=1x{dv}>
}}
"""


@pytest.mark.parametrize("d,npd", [("f32", np.float32), ("f16", np.float16), ("i32", np.int32), ("i16", np.int16)])
@pytest.mark.parametrize("n,sv,dv", [(64, 1024, 1024), (128, 1024, 1024), (256, 1024, 1024), (64, 512, 1024),
                                     (64, 768, 768), (128, 768, 768), (32, 1024, 1024), (96, 1024, 1024), (512, 1024, 1024),
                                     (64, 1024, 512), (128, 0, 1024)])
def test_tmrgsort_single_list_against_reference(d: str, npd: Any, n: int, sv: int, dv: int) -> None:
    """Few distinct values (ties across blocks), NaNs and signed zeros in the float types; the
    fault cases (blockLen not a multiple of 64, columns not whole groups, dst too small) too."""
    rng = np.random.default_rng(n + sv)
    src = _fill((1, 1024), npd, seed=sv)
    per = 8 // np.dtype(npd).itemsize
    pool = np.array([np.nan, 3, -0.0, 0.0, -1, 7, np.inf], npd) if d[0] == "f" else np.array([3, -1, 0, 7], npd)
    src[0, ::per] = rng.choice(pool, size=1024 // per)
    code = same(MERGE1.format(d=d, dv=dv, sv=sv), dst=_fill((1, 1024), npd, seed=1), src=src, n=n)
    want = ("RUNTIME_BAD_CONFIG" if n % 64 else "RUNTIME_VALID_REGION" if sv % (4 * n)
            else "RUNTIME_INVALID_WRITE" if dv < sv else None)
    assert code == want


def test_tmrgsort_single_list_sorts_blocks_by_hand() -> None:
    """Four sorted blocks of 32 f32 records whose values interleave: the merge is 127 .. 0."""
    src = np.zeros((1, 256), np.float32)
    src[0, ::2] = [4 * (31 - r) + (3 - b) for b in range(4) for r in range(32)]
    src.view(np.uint32)[0, 1::2] = np.arange(128)
    text = MERGE1.format(d="f32", dv=256, sv=256).replace("1024", "256")
    _, got = _run(text, "llvm", {"dst": np.zeros((1, 256), np.float32), "src": src, "n": 64})
    assert got["dst"][0, ::2].tolist() == list(range(127, -1, -1))
    assert got["dst"].view(np.uint32)[0, 1::2].tolist() == [32 * b + r for r in range(32) for b in range(4)]


# --------------------------------------------------------------------------- TGATHER

GATHER = """
kernel @k(%dst : !pto.tile<4x8xf32, valid=3x7>, %src : !pto.tile<5x6xf32>, %idx : !pto.tile<4x8x{i}>) {{
  %dst = tgather %src, %idx : (!pto.tile<5x6xf32>, !pto.tile<4x8x{i}>) -> !pto.tile<4x8xf32, valid=3x7>
}}
"""


@pytest.mark.parametrize("i,npi", [("i16", np.int16), ("u16", np.uint16), ("i32", np.int32), ("u32", np.uint32)])
def test_tgather_index_form_and_range(i: str, npi: Any) -> None:
    text = GATHER.format(i=i)
    src = _fill((5, 6), np.float32, 1)
    idx = np.random.default_rng(2).integers(0, 30, size=(4, 8)).astype(npi)
    assert same(text, dst=_fill((4, 8), np.float32), src=src, idx=idx) is None
    idx[3, 7] = 99                       # outside dst's valid region: never read
    assert same(text, dst=_fill((4, 8), np.float32), src=src, idx=idx) is None
    for bad in (30, -1 if i.startswith("i") else np.iinfo(npi).max):
        wrong = idx.copy()
        wrong[2, 5] = bad
        assert same(text, dst=_fill((4, 8), np.float32), src=src, idx=wrong) == "RUNTIME_OOB"


@pytest.mark.parametrize("pattern", ["P0101", "P1010", "P0001", "P0010", "P0100", "P1000", "P1111"])
def test_tgather_mask_form(pattern: str) -> None:
    text = f"""
kernel @k(%dst : !pto.tile<3x4xf16>, %src : !pto.tile<3x16xf16>) {{
  %dst = tgather %src {{maskPattern = #pto.mask_pattern<{pattern}>}} : (!pto.tile<3x16xf16>) -> !pto.tile<3x4xf16>
}}
"""
    assert same(text, dst=_fill((3, 4), np.float16), src=_fill((3, 16), np.float16, 4)) is None


# --------------------------------------------------------------------------- TGATHERB

GATHERB = """
kernel @k(%dst : !pto.tile<2x24x{d}, valid=2x{vc}>, %src : !pto.tile<8x16x{d}, layout={lay}>,
          %offsets : !pto.tile<2x8xu32>) {{
  %dst = tgatherb %src, %offsets : (!pto.tile<8x16x{d}, layout={lay}>, !pto.tile<2x8xu32>) -> !pto.tile<2x24x{d}, valid=2x{vc}>
}}
"""


@pytest.mark.parametrize("d,npd", [("f32", np.float32), ("f16", np.float16), ("i8", np.int8)])
@pytest.mark.parametrize("lay", ["ND", "DN"])
def test_tgatherb_blocks_and_range(d: str, npd: Any, lay: str) -> None:
    size = np.dtype(npd).itemsize
    vc = 24 if size == 4 else 13
    nbytes = 8 * 16 * size
    text = GATHERB.format(d=d, vc=vc, lay=lay)
    offsets = np.random.default_rng(5).integers(0, nbytes - 31, size=(2, 8)).astype(np.uint32)
    args = dict(dst=_fill((2, 24), npd), src=_fill((8, 16), npd, 6))
    assert same(text, offsets=offsets, **args) is None
    offsets[1, 0] = nbytes - 31          # one byte past the last whole block
    assert same(text, offsets=offsets, **args) == "RUNTIME_OOB"


# --------------------------------------------------------------------------- TSCATTER

SCATTER = """
kernel @k(%dst : !pto.tile<6x8xf32, valid=5x8>, %src : !pto.tile<4x8xf32, valid=3x7>, %idx : !pto.tile<4x8xi32>) {
  %dst = tscatter %src, %idx : (!pto.tile<4x8xf32, valid=3x7>, !pto.tile<4x8xi32>) -> !pto.tile<6x8xf32, valid=5x8>
}
"""


def test_tscatter_collisions_and_range() -> None:
    """idx holds flat offsets into dst's 6x8 static tile: 0..47, also past its valid rows."""
    idx = np.random.default_rng(7).integers(0, 3, size=(4, 8)).astype(np.int32)   # many collisions
    idx[0, 3], idx[2, 6] = 47, 41           # the last row, outside dst's valid region: written, not compared
    idx[3, :] = 77                          # outside src's valid region: never read
    args = dict(dst=_fill((6, 8), np.float32), src=_fill((4, 8), np.float32, 8))
    assert same(SCATTER, idx=idx, **args) is None
    for bad in (48, -1):
        wrong = idx.copy()
        wrong[1, 2] = bad
        assert same(SCATTER, idx=wrong, **args) == "RUNTIME_OOB"


# --------------------------------------------------------------------------- TGATHER / TSCATTER forms (issue 14)

@pytest.mark.parametrize("pattern", ["P0101", "P1010", "P0001", "P0010", "P0100", "P1000", "P1111"])
def test_tgather_column_direction(pattern: str) -> None:
    text = f"""
kernel @k(%dst : !pto.tile<3x5xi16, valid=3x4>, %src : !pto.tile<12x5xi16, valid=12x4>) {{
  %dst = tgather %src {{maskPattern = #pto.mask_pattern<{pattern}>, gatherType = #pto.gather_axis<GATHER_COL>}} : (!pto.tile<12x5xi16, valid=12x4>) -> !pto.tile<3x5xi16, valid=3x4>
}}
"""
    src = _fill((12, 5), np.int16, 9)
    assert same(text, dst=_fill((3, 5), np.int16), src=src) is None
    _, out = _run(text, "llvm", dict(dst=_fill((3, 5), np.int16), src=src))
    step, first = {"P0101": (2, 0), "P1010": (2, 1), "P0001": (4, 0), "P0010": (4, 1), "P0100": (4, 2),
                   "P1000": (4, 3), "P1111": (1, 0)}[pattern]
    assert out["dst"][:3, :4].tolist() == src[[first, first + step, first + 2 * step], :4].tolist()


COMPARE = """
kernel @k(%dst : !pto.tile<4x40xu32>, %cnt : !pto.tile<4x1xu32, layout=DN>, %src : !pto.tile<4x40x{d}, valid=3x37>,
          %k : !pto.tile<4x1x{kd}, layout=DN>, %tmp : !pto.tile<4x8xu32>, %off : index) {{
  %dst, %cnt = tgather %src, %k, %tmp, %off {{cmpMode = #pto.cmp<{mode}>}} : (!pto.tile<4x40x{d}, valid=3x37>, !pto.tile<4x1x{kd}, layout=DN>, !pto.tile<4x8xu32>, index) -> (!pto.tile<4x40xu32>, !pto.tile<4x1xu32, layout=DN>)
}}
"""


@pytest.mark.parametrize("d,npd,kd,npk", [("f32", np.float32, "i32", np.int32), ("f16", np.float16, "u32", np.uint32),
                                           ("i32", np.int32, "i32", np.int32), ("u16", np.uint16, "u16", np.uint16),
                                           ("i16", np.int16, "u32", np.uint32)])
@pytest.mark.parametrize("mode", ["GT", "EQ"])
def test_tgather_compare_form_against_reference_and_numpy(d: str, npd: Any, kd: str, npk: Any, mode: str) -> None:
    rng = np.random.default_rng(11)
    if d.startswith("f"):
        src = rng.choice(np.array([1.0, 2.0, 3.0, -0.0, 0.0, np.nan, np.inf, 2049.0], npd), size=(4, 40))
        k = np.array([[2], [0], [2049], [7]], npk)
    else:
        src = rng.integers(0, 4, size=(4, 40)).astype(npd)
        src[1, 5] = np.iinfo(npd).max
        k = np.array([[1], [np.iinfo(npk).max], [2], [9]], npk)
    text = COMPARE.format(d=d, kd=kd, mode=mode)
    tmp = _fill((4, 8), np.uint32)
    args = dict(dst=_fill((4, 40), np.uint32), cnt=_fill((4, 1), np.uint32), src=src, k=k, tmp=tmp.copy(),
                off=2**32 - 5)
    assert same(text, ("dst", "cnt"), **args) is None
    _, out = _run(text, "llvm", args)
    for i in range(3):                       # numpy golden, written independently of the semantics
        row = src[i, :37]
        if d.startswith("f"):
            thr = np.array(float(k[i, 0])).astype(npd)
        else:
            thr = np.array(int(k[i, 0]) % 2 ** (8 * np.dtype(npd).itemsize)).astype(np.uint64).astype(npd)
        hits = np.nonzero(row > thr if mode == "GT" else row == thr)[0]
        want = [(2**32 - 5 + 40 * i + j) % 2**32 for j in hits]
        assert out["cnt"][i, 0] == len(hits)
        assert out["dst"][i, :len(hits)].tolist() == want
    assert out["cnt"][3, 0] == args["cnt"][3, 0]   # beyond src's valid rows: untouched
    assert out["tmp"].tolist() == tmp.tolist()     # the scratch operand is never written


def test_tgather_compare_literal_offset_and_faults() -> None:
    text = """
kernel @k(%dst : !pto.tile<4x8xi32, valid=4x{dv}>, %cnt : !pto.tile<4x1xi32, layout=DN>, %src : !pto.tile<4x8xi32>,
          %k : !pto.tile<4x1xi32, layout=DN>) {{
  %dst, %cnt = tgather %src, %k, 7 {{cmpMode = #pto.cmp<EQ>}} : (!pto.tile<4x8xi32>, !pto.tile<4x1xi32, layout=DN>, index) -> (!pto.tile<4x8xi32, valid=4x{dv}>, !pto.tile<4x1xi32, layout=DN>)
}}
"""
    src = np.array([[1, 0, 1, 0, 1, 0, 1, 0]] * 4, np.int32)
    args = dict(dst=np.full((4, 8), -1, np.int32), cnt=np.full((4, 1), -1, np.int32), src=src,
                k=np.array([[1], [0], [5], [1]], np.int32))
    assert same(text.format(dv=8), ("dst", "cnt"), **args) is None
    _, out = _run(text.format(dv=8), "llvm", args)
    assert out["cnt"][:, 0].tolist() == [4, 4, 0, 4]
    assert out["dst"][:2].tolist() == [[7, 9, 11, 13, -1, -1, -1, -1], [16, 18, 20, 22, -1, -1, -1, -1]]
    assert out["dst"][3, :4].tolist() == [31, 33, 35, 37]


@pytest.mark.parametrize("pattern,factor", [("P0101", 2), ("P1010", 2), ("P0001", 4), ("P0010", 4),
                                            ("P0100", 4), ("P1000", 4), ("P1111", 1)])
@pytest.mark.parametrize("axis", ["SCATTER_ROW", "SCATTER_COL"])
def test_tscatter_mask_forms(pattern: str, factor: int, axis: str) -> None:
    sr, sc = 3, 5
    dr, dc = (sr, sc * factor) if axis == "SCATTER_ROW" else (sr * factor, sc)
    text = f"""
kernel @k(%dst : !pto.tile<{dr + 1}x{dc + 3}xbf16, valid={dr}x{dc}>, %src : !pto.tile<4x8xbf16, valid={sr}x{sc}>) {{
  %dst = tscatter %src {{maskPattern = #pto.mask_pattern<{pattern}>, scatterType = #pto.scatter_axis<{axis}>}} : (!pto.tile<4x8xbf16, valid={sr}x{sc}>) -> !pto.tile<{dr + 1}x{dc + 3}xbf16, valid={dr}x{dc}>
}}
"""
    src = _fill((4, 8), np.uint16, 3).view(ml_dtypes.bfloat16)
    dst = _fill((dr + 1, dc + 3), np.uint16, 4).view(ml_dtypes.bfloat16)
    assert same(text, dst=dst, src=src) is None
    _, out = _run(text, "llvm", dict(dst=dst, src=src))
    first = {"P0101": 0, "P1010": 1, "P0001": 0, "P0010": 1, "P0100": 2, "P1000": 3, "P1111": 0}[pattern]
    want = np.zeros((dr, dc), np.uint16)
    bits = src.view(np.uint16)[:sr, :sc]
    if axis == "SCATTER_ROW":
        want[:, first::factor] = bits
    else:
        want[first::factor, :] = bits
    assert out["dst"].view(np.uint16)[:dr, :dc].tolist() == want.tolist()


# --------------------------------------------------------------------------- TCI / TTRI

@pytest.mark.parametrize("d,start", [("u16", 65534), ("i16", -32767), ("i32", 2147483646), ("u32", 3)])
@pytest.mark.parametrize("desc", ["false", "true"])
def test_tci_wraps(d: str, start: int, desc: str) -> None:
    text = f"""
kernel @k(%dst : !pto.tile<2x8x{d}, valid=2x6>, %start : {d}) {{
  %dst = tci %start {{descending = {desc}}} : ({d}) -> !pto.tile<2x8x{d}, valid=2x6>
}}
"""
    npd = {"u16": np.uint16, "i16": np.int16, "i32": np.int32, "u32": np.uint32}[d]
    assert same(text, dst=_fill((2, 8), npd), start=start) is None


@pytest.mark.parametrize("diag", [0, 2, -3, 1 << 62, -(1 << 62)])
@pytest.mark.parametrize("upper", ["false", "true"])
@pytest.mark.parametrize("d,npd", [("f16", np.float16), ("i32", np.int32)])
def test_ttri(diag: int, upper: str, d: str, npd: Any) -> None:
    text = f"""
kernel @k(%dst : !pto.tile<6x9x{d}, valid=5x7>, %d : index) {{
  %dst = ttri %d {{upper = {upper}}} : (index) -> !pto.tile<6x9x{d}, valid=5x7>
}}
"""
    assert same(text, dst=_fill((6, 9), npd), d=diag) is None


# --------------------------------------------------------------------------- TPART*

PART = """
kernel @k(%dst : !pto.tile<6x8x{d}, valid=5x7>, %src0 : !pto.tile<6x8x{d}, valid=3x7>,
          %src1 : !pto.tile<6x8x{d}, valid=5x4>) {{
  %dst = {op} %src0, %src1 : (!pto.tile<6x8x{d}, valid=3x7>, !pto.tile<6x8x{d}, valid=5x4>) -> !pto.tile<6x8x{d}, valid=5x7>
}}
"""


@pytest.mark.parametrize("op", ["tpartadd", "tpartmul", "tpartmax", "tpartmin"])
@pytest.mark.parametrize("d,npd", [("f32", np.float32), ("f16", np.float16), ("bf16", ml_dtypes.bfloat16),
                                   ("i8", np.int8), ("u16", np.uint16), ("i32", np.int32)])
def test_tpart_regions_and_specials(op: str, d: str, npd: Any) -> None:
    rng = np.random.default_rng(9)
    if np.dtype(npd).kind == "f" or d == "bf16":
        pool = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.5, -2.25, 3.0], np.float32)
        a, b = (rng.choice(pool, size=(6, 8)).astype(npd) for _ in range(2))
        bits = np.uint32 if d == "f32" else np.uint16
        a.view(bits)[0, 0] = 0x7FC01234 if d == "f32" else 0x7E05     # NaN payloads
    else:
        a, b = _fill((6, 8), npd, 10), _fill((6, 8), npd, 11)
    text = PART.format(d=d, op=op)
    if op in ("tpartadd", "tpartmul") and d in ("f32", "f16", "bf16"):    # any NaN matches any NaN
        ra, la = (_run(text, be, dict(dst=_fill((6, 8), npd), src0=a, src1=b))[1]["dst"][:5, :7]
                  for be in ("reference", "llvm"))
        rf, lf = ra.astype(np.float32), la.astype(np.float32)
        assert np.array_equal(np.isnan(rf), np.isnan(lf))
        ok = ~np.isnan(rf)
        assert ra[ok].tobytes() == la[ok].tobytes()
        return
    assert same(text, dst=_fill((6, 8), npd), src0=a, src1=b) is None


def test_tpart_in_place() -> None:
    text = """
kernel @k(%src0 : !pto.tile<6x8xf32, valid=5x7>, %src1 : !pto.tile<6x8xf32, valid=3x4>) {
  %src0 = tpartmax %src0, %src1 : (!pto.tile<6x8xf32, valid=5x7>, !pto.tile<6x8xf32, valid=3x4>) -> !pto.tile<6x8xf32, valid=5x7>
}
"""
    a, b = (np.arange(48, dtype=np.float32).reshape(6, 8) * k for k in (1, -2))
    b[0, 0] = 99
    assert same(text, ("src0",), src0=a, src1=b) is None


# --------------------------------------------------------------------------- TQUANT

def test_tquant_ties_saturation_nan() -> None:
    src = np.array([[0.5, 1.5, 2.5, -0.5, -2.5, 127.5, 128.0, -129.0],
                    [np.nan, np.inf, -np.inf, 1e30, -1e30, 3.49999, 0.0, -0.0]], np.float32)
    src = np.concatenate([src, src[::-1] * 0.7]).astype(np.float32)
    scale = np.array([[1.0], [1.0], [2.0], [np.inf]], np.float32)
    offset = np.array([[0.5], [128.0], [-0.5], [1.0]], np.float32)
    sym = """
kernel @k(%dst : !pto.tile<4x8xi8>, %src : !pto.tile<4x8xf32>, %scale : !pto.tile<4x1xf32, layout=DN>) {
  %dst = tquant %src, %scale {quantType = #pto.quant<INT8_SYM>} : (!pto.tile<4x8xf32>, !pto.tile<4x1xf32, layout=DN>) -> !pto.tile<4x8xi8>
}
"""
    assert same(sym, dst=_fill((4, 8), np.int8), src=src, scale=scale) is None
    asym = """
kernel @k(%dst : !pto.tile<4x8xu8>, %src : !pto.tile<4x8xf32>, %scale : !pto.tile<4x1xf32, layout=DN>, %offset : !pto.tile<4x1xf32, layout=DN>) {
  %dst = tquant %src, %scale, %offset {quantType = #pto.quant<INT8_ASYM>} : (!pto.tile<4x8xf32>, !pto.tile<4x1xf32, layout=DN>, !pto.tile<4x1xf32, layout=DN>) -> !pto.tile<4x8xu8>
}
"""
    assert same(asym, dst=_fill((4, 8), np.uint8), src=src, scale=scale, offset=offset) is None


# --------------------------------------------------------------------------- TPRINT

@pytest.mark.parametrize("d,npd", [("f32", np.float32), ("bf16", ml_dtypes.bfloat16), ("i16", np.int16),
                                   ("i1", np.bool_)])
def test_tprint_prints_what_the_reference_prints(d: str, npd: Any, capsys: pytest.CaptureFixture) -> None:
    from openpto.backends.llvm.rules.complex import install_hooks
    text = f"""
kernel @k(%src : !pto.tile<3x5x{d}, valid=2x4>) {{
  tprint %src : (!pto.tile<3x5x{d}, valid=2x4>)
}}
"""
    vals = np.array([[1, -0.0, np.nan, np.inf, 2.5], [3, -4, 1e-3, 7, 8], [9, 9, 9, 9, 9]])
    src = (vals if d.startswith(("f", "b")) else np.nan_to_num(vals, posinf=-7)).astype(npd)
    _exe(text, "reference")(src=src)
    want = capsys.readouterr().out
    assert want.startswith(f"tprint 3x5x{d} valid=2x4\n")
    exe = _exe(text, "llvm")
    install_hooks(exe._loaded)
    exe(src=src)
    assert capsys.readouterr().out == want


# --------------------------------------------------------------------------- optional scratch operands

def test_scratch_tmp_operands_match_the_reference_and_stay_untouched() -> None:
    text = """
kernel @k(%dst : !pto.tile<2x80xf32>, %src : !pto.tile<2x40xf32, valid=2x37>, %idx : !pto.tile<2x40xu32>,
          %t : !pto.tile<2x80xf32>, %c : !pto.tile<1x16xi32>, %ct : !pto.tile<1x16xi32>, %g : !pto.memref<2x40xf32>) {
  %dst = tsort32 %src, %idx, %t
  %c = tci 7, %ct {descending = true}
  tprint %src, %g[0, 0]
}
"""
    rng = np.random.default_rng(5)
    args = dict(dst=_fill((2, 80), np.float32), src=rng.standard_normal((2, 40)).astype(np.float32),
                idx=np.arange(80, dtype=np.uint32).reshape(2, 40), t=np.full((2, 80), 9, np.float32),
                c=np.zeros((1, 16), np.int32), ct=np.full((1, 16), 4, np.int32), g=np.full((2, 40), 5, np.float32))
    assert same(text, ("dst", "c"), **args) is None
    _, got = _run(text, "llvm", args)
    assert got["c"].tolist() == [list(range(7, -9, -1))]
    assert (got["t"] == 9).all() and (got["ct"] == 4).all() and (got["g"] == 5).all()
