"""Data movement and layout family: every instruction checked against expectations written here
(hand-computed literals, plain numpy index arithmetic, nested loops)."""
from __future__ import annotations

import functools
import math

import ml_dtypes
import numpy as np
import pytest

import openpto.isa as I
from openpto.isa import dtypes as dt
from openpto.isa.attrs import ReluMode
from openpto.isa.constraints import check_all
from openpto.isa.families.movement import layout_offsets
from openpto.isa.spec import Family
from openpto.isa.types import Pipe, TileType, parse_type
from openpto.isa.values import Tile

from tile_support import corner_tile

pytestmark = pytest.mark.filterwarnings("error")   # numpy warnings are failures

MNEMONICS = ("TMOV", "TMOV_FP", "TEXTRACT", "TEXTRACT_FP", "TINSERT", "TINSERT_FP", "TTRANS",
             "TRESHAPE", "TFILLPAD", "TFILLPAD_INPLACE", "TFILLPAD_EXPAND", "TIMG2COL")
BF16 = ml_dtypes.bfloat16
NAN_BITS = 0x7FC01234             # a quiet NaN with a payload


#: a tile of the given type: ``data`` in its top-left corner, 77 everywhere else
tile = functools.partial(corner_tile, fill=77)


def run(mnemonic: str, **kw: object) -> None:
    I.get(mnemonic).execute(**kw)


def fault(mnemonic: str, code: str, **kw: object) -> None:
    with pytest.raises(I.RuntimeFault) as e:
        run(mnemonic, **kw)
    assert e.value.code == code


def rule_codes(mnemonic: str, types: dict[str, str], attrs: dict | None = None) -> set[str]:
    ins = I.get(mnemonic)
    parsed = {n: parse_type(t) for n, t in types.items()}
    return {c.code for c, _ in check_all(ins.constraints, parsed, ins.with_defaults(attrs or {}))}


def allowed(mnemonic: str, profile: str | None, *spellings: str) -> bool:
    return I.get(mnemonic).dtype_rule(profile).allows(tuple(dt.get(s) for s in spellings))


def bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).view(f"u{np.asarray(a).dtype.itemsize}")


def untouched(t: Tile, rows: int, cols: int, fill: float = 77) -> bool:
    """Everything outside the top-left rows x cols block still holds ``fill``."""
    mask = np.ones(t.type.shape, bool)
    mask[:rows, :cols] = False
    return bool((t.data[mask].astype(np.float64) == fill).all())


# ------------------------------------------------------------------------------ declarations


def test_family_members_declared_once() -> None:
    """This module's instructions (the family also holds view, pack and rearrangement ones
    declared in their own modules)."""
    own = [i.mnemonic for i in I.by_family()[Family.MOVEMENT] if i.semantics.__module__.endswith(".movement")]
    assert sorted(own) == sorted(MNEMONICS)


@pytest.mark.parametrize("mnemonic", MNEMONICS)
def test_example_is_legal_and_runs(mnemonic: str) -> None:
    ins = I.get(mnemonic)
    types = {n: parse_type(t) for n, t in ins.example.types.items()}
    attrs = ins.with_defaults(ins.example.attrs)
    assert check_all(ins.constraints, types, attrs) == []
    rule = ins.dtype_rule()
    assert rule.allows(tuple(types[n].dtype for n in rule.operands))
    rng = np.random.default_rng(1)
    tiles = {n: Tile(t, (rng.standard_normal(t.shape) * 3).astype(t.dtype.np_dtype))
             for n, t in types.items() if isinstance(t, TileType)}
    ins.execute(**tiles, **ins.example.scalars, **attrs)


# ------------------------------------------------------------------------------ TMOV


@pytest.mark.parametrize("spelling,values", [
    ("f32", [np.float32(-0.0), np.float32(1e-40), np.uint32(NAN_BITS).view(np.float32), np.inf]),
    ("i16", [-32768, 32767, -1, 0]),
])
def test_tmov_copies_bits_over_src_valid_region(spelling: str, values: list) -> None:
    d = dt.get(spelling).np_dtype
    src_vals = np.resize(np.array(values, dtype=d), (5, 7))
    src = tile(f"!pto.tile<16x16x{spelling}, valid=5x7>", src_vals)
    dst = tile(f"!pto.tile<16x16x{spelling}>")
    run("TMOV", dst=dst, src=src)
    assert (bits(dst.data[:5, :7]) == bits(src_vals)).all()
    assert untouched(dst, 5, 7)


def test_tmov_acc_f32_to_f16_rounds_nearest_even() -> None:
    vals = [1 + 2**-11, 1 + 3 * 2**-11, 65520.0, 65519.0, math.nan, -0.0, 2**-24, 2**-25,
            3 * 2**-26, -70000.0]
    want = [1.0, 1 + 2**-9, math.inf, 65504.0, math.nan, -0.0, 2**-24, 0.0, 2**-24, -math.inf]
    src = tile("!pto.tile<16x16xf32, loc=acc, layout=NZ>", np.resize(vals, (16, 16)))
    dst = tile("!pto.tile<16x16xf16, loc=mat, layout=NZ>")
    run("TMOV", dst=dst, src=src)
    got = dst.data.ravel()[:10].astype(np.float64)
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got[5]) and not np.signbit(got[7])


def test_tmov_acc_f32_to_bf16_rounds_nearest_even() -> None:
    vals = [1 + 2**-8, 1 + 3 * 2**-8, float(np.finfo(np.float32).max), -2.5]
    src = tile("!pto.tile<16x16xf32, loc=acc, layout=NZ>", np.resize(vals, (16, 16)))
    dst = tile("!pto.tile<16x16xbf16, loc=vec>")
    run("TMOV", dst=dst, src=src)
    np.testing.assert_array_equal(dst.data.ravel()[:4].astype(np.float64),
                                  [1.0, 1 + 2**-6, math.inf, -2.5])


def test_tmov_relu_floats_and_ints() -> None:
    tiny = 2.0**-149                                  # the smallest f32 denormal
    src = tile("!pto.tile<1x8xf32>", [[-1, 2, -0.0, math.nan, -math.inf, math.inf, tiny, -tiny]])
    dst = tile("!pto.tile<1x8xf32>")
    run("TMOV", dst=dst, src=src, relu=ReluMode.RELU)
    got = dst.data[0]
    np.testing.assert_array_equal(got, [0, 2, 0, math.nan, 0, math.inf, tiny, 0])
    assert not np.signbit(got[2]) and not np.signbit(got[7])
    isrc = tile("!pto.tile<1x8xi32>", [[-5, 7, -2**31, 2**31 - 1, 0, -1, 1, 3]])
    idst = tile("!pto.tile<1x8xi32>")
    run("TMOV", dst=idst, src=isrc, relu=ReluMode.RELU)
    assert idst.data[0].tolist() == [0, 7, 0, 2**31 - 1, 0, 0, 1, 3]


def test_tmov_relu_then_convert() -> None:
    src = tile("!pto.tile<16x16xf32, loc=acc, layout=NZ>", [[-3.0, 1 + 2**-11, -0.0, 7e4]])
    dst = tile("!pto.tile<16x16xf16, loc=vec>")
    run("TMOV", dst=dst, src=src, relu=ReluMode.RELU)
    np.testing.assert_array_equal(dst.data[0, :4].astype(np.float64), [0.0, 1.0, 0.0, math.inf])


def test_tmov_writing_past_dst_valid_region_faults() -> None:
    src = tile("!pto.tile<16x16xf32>")
    dst = tile("!pto.tile<16x16xf32, valid=?x?>", valid=(4, 16))
    fault("TMOV", "RUNTIME_INVALID_WRITE", dst=dst, src=src)


def test_tmov_rules_pipes_and_profiles() -> None:
    vec32, vec16 = "!pto.tile<16x16xf32>", "!pto.tile<16x16xf16>"
    assert "LEGAL_DTYPE" in rule_codes("TMOV", {"dst": vec16, "src": vec32})
    assert "LEGAL_LOCATION" in rule_codes("TMOV", {"dst": "!pto.tile<16x16xf32, loc=left>",
                                                   "src": vec32})
    assert "STRUCT_VALID_REGION" in rule_codes("TMOV", {"dst": "!pto.tile<16x16xf32, valid=8x16>",
                                                        "src": vec32})
    assert "STRUCT_SHAPE" in rule_codes("TMOV", {"dst": "!pto.tile<16x32xf32>", "src": vec32})
    pipe = I.get("TMOV").pipe_for
    for src_loc, dst_loc, want in (("mat", "left", Pipe.MTE1), ("mat", "bias", Pipe.MTE1),
                                   ("acc", "vec", Pipe.FIX), ("vec", "vec", Pipe.V),
                                   ("mat", "scaling", Pipe.FIX)):
        assert pipe({"src": parse_type(f"!pto.tile<16x16xf32, loc={src_loc}>"),
                     "dst": parse_type(f"!pto.tile<16x16xf32, loc={dst_loc}>")}) is want
    assert allowed("TMOV", "a5", "f8e4m3", "f8e4m3")
    assert not allowed("TMOV", "a2", "f8e4m3", "f8e4m3")
    assert allowed("TMOV", None, "bf16", "f32") and not allowed("TMOV", None, "f32", "f16")


# ------------------------------------------------------------------------------ TMOV_FP


def test_tmov_fp_scales_per_column_then_relu_then_converts() -> None:
    scale = np.array([[0.5, -1.0, 2.0**-30, 3.0]], np.float32)
    src = tile("!pto.tile<16x16xi32, loc=acc, layout=NZ>",
               [[7, -3, 2**30, -5], [16777217, 1, 0, 2]], valid=(2, 4))
    fp = tile("!pto.tile<1x16xf32, loc=scaling>", scale)
    dst = tile("!pto.tile<16x16xf32, loc=vec>")
    run("TMOV_FP", dst=dst, src=src, fp=fp, relu=ReluMode.RELU)
    # -3 * -1 = 3 survives the ReLU only because scaling comes first; 16777217 -> f32 16777216.
    np.testing.assert_array_equal(dst.data[:2, :4],
                                  [[3.5, 3.0, 1.0, 0.0], [8388608.0, 0.0, 0.0, 6.0]])
    assert untouched(dst, 2, 4)
    dst16 = tile("!pto.tile<16x16xf16, loc=mat, layout=NZ>")
    big = tile("!pto.tile<1x16xf32, loc=scaling>", [[1e5, 1, 1, 1]])
    run("TMOV_FP", dst=dst16, src=src, fp=big)
    assert dst16.data[0, 0] == np.inf and dst16.data[0, 1] == -3


def test_tmov_fp_scaling_tile_must_cover_the_columns() -> None:
    src = tile("!pto.tile<16x16xf32, loc=acc, layout=NZ>")
    fp = tile("!pto.tile<1x16xf32, loc=scaling, valid=1x?>", valid=(1, 8))
    fault("TMOV_FP", "RUNTIME_INVALID_READ", dst=tile("!pto.tile<16x16xf16, loc=vec>"), src=src,
          fp=fp)
    assert I.get("TMOV_FP").profiles is None      # a2/a3 and a5 TMov take the scaling tile


# ------------------------------------------------------------------------------ TEXTRACT


@pytest.mark.parametrize("spelling", ["f16", "i8"])
def test_textract_window(spelling: str) -> None:
    src_vals = np.arange(32 * 32).reshape(32, 32) % 100 - 50
    src = tile(f"!pto.tile<32x32x{spelling}, loc=mat, layout=NZ>", src_vals)
    dst = tile(f"!pto.tile<16x16x{spelling}, loc=left, layout=NZ>")
    run("TEXTRACT", dst=dst, src=src, r0=16, c0=3)
    np.testing.assert_array_equal(dst.data.astype(np.int64), src_vals[16:32, 3:19])


def test_textract_partial_dst_and_conversion() -> None:
    src_vals = np.arange(32 * 32, dtype=np.float64).reshape(32, 32) + 2**-11
    src = tile("!pto.tile<32x32xf32, loc=acc, layout=NZ>", src_vals)
    dst = tile("!pto.tile<16x16xf16, loc=mat, layout=NZ, valid=5x3>")
    run("TEXTRACT", dst=dst, src=src, r0=1, c0=2)
    # k + 2^-11 rounds to k (tie or below half an ulp) for every k < 1024 in f16.
    np.testing.assert_array_equal(dst.data[:5, :3], np.floor(src_vals[1:6, 2:5]))
    assert untouched(dst, 5, 3)


@pytest.mark.parametrize("r0,c0,valid", [(17, 0, (32, 32)), (0, -1, (32, 32)), (8, 0, (20, 32)),
                                         (0, 17, (32, 32))])
def test_textract_out_of_window_faults(r0: int, c0: int, valid: tuple[int, int]) -> None:
    src = tile("!pto.tile<32x32xf16, loc=mat, layout=NZ, valid=?x?>", valid=valid)
    dst = tile("!pto.tile<16x16xf16, loc=left, layout=NZ>")
    fault("TEXTRACT", "RUNTIME_OOB", dst=dst, src=src, r0=r0, c0=c0)


def test_textract_rules() -> None:
    assert "STRUCT_VALID_REGION" in rule_codes("TEXTRACT", {
        "dst": "!pto.tile<16x16xf16, loc=left>",
        "src": "!pto.tile<32x32xf16, loc=mat, valid=8x32>"})
    assert "LEGAL_LOCATION" in rule_codes("TEXTRACT", {
        "dst": "!pto.tile<16x16xf16, loc=vec>", "src": "!pto.tile<32x32xf16, loc=mat>"})
    assert allowed("TEXTRACT", "a2", "i8", "i8") and not allowed("TEXTRACT", "a2", "i32", "i32")


def test_textract_fp_scales_by_dst_column() -> None:
    src_vals = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    src = tile("!pto.tile<32x32xf32, loc=acc, layout=NZ>", src_vals)
    scale = np.arange(1, 17, dtype=np.float32).reshape(1, 16) / 4
    dst = tile("!pto.tile<16x16xbf16, loc=mat, layout=NZ>")
    run("TEXTRACT_FP", dst=dst, src=src, fp=tile("!pto.tile<1x16xf32, loc=scaling>", scale),
        r0=0, c0=16)
    want = np.array([[float(src_vals[i, 16 + j]) * (j + 1) / 4 for j in range(16)]
                     for i in range(16)])
    # bf16 keeps 8 significant bits: compare with the exact product rounded to 8 bits.
    np.testing.assert_array_equal(dst.data.astype(np.float64), want.astype(np.float32).astype(BF16))
    fault("TEXTRACT_FP", "RUNTIME_OOB", dst=dst, src=src,
          fp=tile("!pto.tile<1x16xf32, loc=scaling>"), r0=0, c0=20)


# ------------------------------------------------------------------------------ TINSERT


@pytest.mark.parametrize("spelling", ["i32", "f32"])
def test_tinsert_writes_window_and_keeps_the_rest(spelling: str) -> None:
    src_vals = np.arange(15).reshape(3, 5) - 7
    src = tile(f"!pto.tile<8x8x{spelling}, valid=3x5>", src_vals)
    dst = tile(f"!pto.tile<32x32x{spelling}>")
    run("TINSERT", dst=dst, src=src, r0=2, c0=4)
    assert (dst.data[2:5, 4:9] == src_vals).all()
    mask = np.ones((32, 32), bool)
    mask[2:5, 4:9] = False
    assert (dst.data[mask] == 77).all()


def test_tinsert_acc_to_mat_converts() -> None:
    src = tile("!pto.tile<16x16xf32, loc=acc, layout=NZ>", [[1 + 2**-8, math.nan, -0.0]],
               valid=(1, 3))
    dst = tile("!pto.tile<32x32xbf16, loc=mat, layout=NZ>")
    run("TINSERT", dst=dst, src=src, r0=16, c0=16)
    got = dst.data[16, 16:19].astype(np.float64)
    assert got[0] == 1.0 and math.isnan(got[1]) and got[2] == 0 and np.signbit(got[2])


@pytest.mark.parametrize("r0,c0,dst_valid", [(30, 0, (32, 32)), (0, 0, (2, 32)), (-1, 0, (32, 32))])
def test_tinsert_out_of_window_faults(r0: int, c0: int, dst_valid: tuple[int, int]) -> None:
    src = tile("!pto.tile<8x8xi32, valid=3x5>")
    dst = tile("!pto.tile<32x32xi32, valid=?x?>", valid=dst_valid)
    fault("TINSERT", "RUNTIME_OOB", dst=dst, src=src, r0=r0, c0=c0)


def test_tinsert_fp_scales_by_src_column() -> None:
    src = tile("!pto.tile<16x16xf32, loc=acc, layout=NZ>", [[2.0, 3.0, -4.0], [1.0, 1.0, 1.0]],
               valid=(2, 3))
    fp = tile("!pto.tile<1x16xf32, loc=scaling>", [[0.5, 10.0, math.inf]])
    dst = tile("!pto.tile<32x32xf16, loc=mat, layout=NZ>")
    run("TINSERT_FP", dst=dst, src=src, fp=fp, r0=4, c0=8)
    np.testing.assert_array_equal(dst.data[4:6, 8:11].astype(np.float64),
                                  [[1.0, 30.0, -math.inf], [0.5, 10.0, math.inf]])
    mask = np.ones((32, 32), bool)
    mask[4:6, 8:11] = False
    assert (dst.data[mask] == 77).all()


# ------------------------------------------------------------------------------ TTRANS


@pytest.mark.parametrize("spelling", ["f32", "u8", "i1"])
def test_ttrans_transposes_src_valid_region(spelling: str) -> None:
    src_vals = (np.arange(8 * 16).reshape(8, 16) * 7) % 5
    src = tile(f"!pto.tile<8x16x{spelling}, valid=5x3>", src_vals, fill=1)
    dst = tile(f"!pto.tile<16x8x{spelling}>", fill=0)
    run("TTRANS", dst=dst, src=src)
    want = np.array([[src_vals[i, j] for i in range(5)] for j in range(3)])
    want = want.astype(dst.dtype.np_dtype)
    assert (dst.data[:3, :5] == want).all()
    assert untouched(dst, 3, 5, fill=0)


def test_ttrans_faults_and_rules() -> None:
    src = tile("!pto.tile<8x16xf32>")
    dst = tile("!pto.tile<16x8xf32, valid=?x?>", valid=(16, 4))
    fault("TTRANS", "RUNTIME_INVALID_WRITE", dst=dst, src=src)
    assert "STRUCT_SHAPE" in rule_codes("TTRANS", {"dst": "!pto.tile<8x16xf32>",
                                                   "src": "!pto.tile<8x16xf32>"})
    assert not allowed("TTRANS", "a5", "i1", "i1") and allowed("TTRANS", "a5", "bf16", "bf16")


# ------------------------------------------------------------------------------ TRESHAPE

# Physical element order of each layout written independently of the module's offset formulas:
# the tile split into its fractal boxes with reshape/transpose.


def physical(a: np.ndarray, layout: str, box: tuple[int, int]) -> np.ndarray:
    (r, c), (ir, ic) = a.shape, box
    return {
        "ND": lambda: a.ravel(),
        "DN": lambda: a.T.ravel(),
        "NZ": lambda: a.reshape(r, c // ic, ic).transpose(1, 0, 2).ravel(),
        "ZN": lambda: a.reshape(r // ir, ir, c // ic, ic).transpose(0, 2, 3, 1).ravel(),
        "ZZ": lambda: a.reshape(r // ir, ir, c // ic, ic).transpose(0, 2, 1, 3).ravel(),
    }[layout]()


def logical(flat: np.ndarray, shape: tuple[int, int], layout: str,
            box: tuple[int, int]) -> np.ndarray:
    (r, c), (ir, ic) = shape, box
    return {
        "ND": lambda: flat.reshape(r, c),
        "DN": lambda: flat.reshape(c, r).T,
        "NZ": lambda: flat.reshape(c // ic, r, ic).transpose(1, 0, 2).reshape(r, c),
        "ZN": lambda: flat.reshape(r // ir, c // ic, ic, ir).transpose(0, 3, 1, 2).reshape(r, c),
        "ZZ": lambda: flat.reshape(r // ir, c // ic, ir, ic).transpose(0, 2, 1, 3).reshape(r, c),
    }[layout]()


def test_layout_offsets_literals() -> None:
    nz = layout_offsets(parse_type("!pto.tile<16x16xf32, loc=mat, layout=NZ>"))    # box 16x8
    assert (nz[0, 8], nz[1, 0], nz[15, 7], nz[3, 9]) == (128, 8, 127, 128 + 3 * 8 + 1)
    zn = layout_offsets(parse_type("!pto.tile<32x32xf16, loc=mat, layout=ZN>"))    # box 16x16
    assert (zn[0, 1], zn[1, 0], zn[0, 16], zn[16, 0]) == (16, 1, 256, 512)
    zz = layout_offsets(parse_type("!pto.tile<32x64xi8, loc=mat, layout=ZZ>"))     # box 16x32
    assert (zz[0, 32], zz[1, 0], zz[16, 0], zz[17, 33]) == (512, 32, 1024, 1024 + 512 + 32 + 1)
    acc = layout_offsets(parse_type("!pto.tile<32x32xf32, loc=acc, layout=NZ>"))   # box 16x16
    assert (acc[0, 16], acc[20, 3]) == (512, 20 * 16 + 3)
    assert layout_offsets(parse_type("!pto.tile<4x8xf32, layout=DN>"))[1, 2] == 2 * 4 + 1


@pytest.mark.parametrize("src_sp,src_lay,src_box,dst_sp,dst_lay,dst_box", [
    ("!pto.tile<16x1xf32, layout=DN>", "DN", (1, 1), "!pto.tile<1x16xf32>", "ND", (1, 1)),
    ("!pto.tile<4x8xf32>", "ND", (1, 1), "!pto.tile<8x4xf32, layout=DN>", "DN", (1, 1)),
    ("!pto.tile<2x8xf32>", "ND", (1, 1), "!pto.tile<2x16xf16>", "ND", (1, 1)),
    ("!pto.tile<32x32xf16, loc=mat, layout=NZ>", "NZ", (16, 16),
     "!pto.tile<32x32xf16, loc=mat, layout=ZN>", "ZN", (16, 16)),
    ("!pto.tile<16x16xf32, loc=mat, layout=ZZ>", "ZZ", (16, 8),
     "!pto.tile<16x32xbf16, loc=mat, layout=NZ>", "NZ", (16, 16)),
    ("!pto.tile<32x32xf32, loc=acc, layout=NZ>", "NZ", (16, 16),
     "!pto.tile<16x64xi32, loc=acc, layout=NZ>", "NZ", (16, 16)),
    ("!pto.tile<8x32xf16, loc=mat, layout=NZ>", "NZ", (16, 16),          # NZ: any row count
     "!pto.tile<16x16xf16, loc=mat, layout=ZZ>", "ZZ", (16, 16)),
])
def test_treshape_reinterprets_physical_bytes(src_sp: str, src_lay: str, src_box: tuple,
                                              dst_sp: str, dst_lay: str, dst_box: tuple) -> None:
    st, dt_ = parse_type(src_sp), parse_type(dst_sp)
    raw = np.random.default_rng(3).integers(0, 2**8, st.nbytes, dtype=np.uint8)
    raw[:4] = np.frombuffer(np.uint32(NAN_BITS).tobytes(), np.uint8)
    src_vals = raw.view(st.dtype.np_dtype).reshape(st.shape)
    src, dst = Tile(st, src_vals.copy()), Tile(dt_, np.zeros(dt_.shape, dt_.dtype.np_dtype))
    run("TRESHAPE", dst=dst, src=src)
    flat = physical(src_vals, src_lay, src_box).view(np.uint8).view(dt_.dtype.np_dtype)
    assert (bits(dst.data) == bits(logical(flat, dt_.shape, dst_lay, dst_box))).all()


def test_treshape_nd_to_dn_is_a_transpose_and_f32_to_i32_keeps_bits() -> None:
    vals = np.arange(32, dtype=np.float32).reshape(4, 8)
    dst = tile("!pto.tile<8x4xf32, layout=DN>")
    run("TRESHAPE", dst=dst, src=tile("!pto.tile<4x8xf32>", vals))
    assert (dst.data == vals.T).all()
    idst = tile("!pto.tile<1x8xi32>")
    fsrc = tile("!pto.tile<1x8xf32>", [[1.0, -0.0, math.inf, -2.0, 0, 0, 0, 0]])
    run("TRESHAPE", dst=idst, src=fsrc)
    assert idst.data[0, :4].tolist() == [0x3F800000, -2**31, 0x7F800000, -0x40000000]


def test_treshape_reading_invalid_bytes_faults() -> None:
    src = tile("!pto.tile<4x8xf32, valid=4x6>")
    fault("TRESHAPE", "RUNTIME_INVALID_READ", dst=tile("!pto.tile<8x4xf32, layout=DN>"), src=src)
    ok = tile("!pto.tile<8x4xf32, layout=DN, valid=6x4>")   # dst rows 0..5 = src columns 0..5
    run("TRESHAPE", dst=ok, src=src)
    assert (ok.data[:6] == 77).all()


@pytest.mark.parametrize("dst,src", [
    ("!pto.tile<1x8xf32>", "!pto.tile<1x16xf32>"),                             # bytes differ
    ("!pto.tile<16x16xf16, loc=mat>", "!pto.tile<16x16xf16>"),                 # locations differ
    ("!pto.tile<16x16xf16, loc=mat>", "!pto.tile<16x16xf16, loc=mat, layout=NZ>"),  # boxed/unboxed
    ("!pto.tile<8x32xf16, loc=mat, layout=ZZ>", "!pto.tile<16x16xf16, loc=mat, layout=ZZ>"),
])
def test_treshape_rules(dst: str, src: str) -> None:
    assert "LEGAL_LAYOUT" in rule_codes("TRESHAPE", {"dst": dst, "src": src})


# ------------------------------------------------------------------------------ TFILLPAD


@pytest.mark.parametrize("spelling,pad,want", [
    ("f32", "max", math.inf), ("f32", "min", -math.inf), ("f32", "zero", 0.0),
    ("bf16", "min", -math.inf), ("i8", "min", -128), ("i8", "max", 127), ("u16", "max", 65535),
    ("u16", "min", 0), ("i32", "max", 2**31 - 1), ("i32", "min", -2**31), ("f16", "max", math.inf),
])
def test_tfillpad_pads_outside_src_valid(spelling: str, pad: str, want: float) -> None:
    src_vals = np.arange(12 * 10).reshape(12, 10) % 50
    src = tile(f"!pto.tile<16x32x{spelling}, valid=12x10>", src_vals, fill=5)
    dst = tile(f"!pto.tile<16x32x{spelling}, pad={pad}>", fill=5)
    run("TFILLPAD", dst=dst, src=src)
    got = dst.data.astype(np.float64)
    assert (got[:12, :10] == src_vals).all()
    mask = np.ones((16, 32), bool)
    mask[:12, :10] = False
    assert (got[mask] == want).all()
    if want == 0.0:
        assert not np.signbit(got[mask]).any()


def test_tfillpad_keeps_nan_bits() -> None:
    src = tile("!pto.tile<8x8xf32, valid=1x1>", np.uint32([[NAN_BITS]]).view(np.float32))
    dst = tile("!pto.tile<8x8xf32, pad=zero>")
    run("TFILLPAD", dst=dst, src=src)
    assert bits(dst.data)[0, 0] == NAN_BITS and (dst.data.ravel()[1:] == 0).all()


def test_tfillpad_expand_and_inplace() -> None:
    src_vals = np.arange(16 * 7).reshape(16, 7) % 100
    dst = tile("!pto.tile<32x64xi8, pad=min>")
    run("TFILLPAD_EXPAND", dst=dst, src=tile("!pto.tile<16x32xi8, valid=16x7>", src_vals))
    want = np.full((32, 64), -128)
    want[:16, :7] = src_vals
    assert (dst.data == want).all()
    t = tile("!pto.tile<16x16xf16, valid=9x5, pad=min>", np.full((16, 16), 2.5))
    run("TFILLPAD_INPLACE", dst=t)
    want16 = np.full((16, 16), -math.inf)
    want16[:9, :5] = 2.5
    assert (t.data.astype(np.float64) == want16).all()


def test_tfillpad_rules_and_pipes() -> None:
    assert "LEGAL_PAD" in rule_codes("TFILLPAD", {"dst": "!pto.tile<16x16xf32>",
                                                  "src": "!pto.tile<16x16xf32>"})
    assert "LEGAL_PAD" in rule_codes("TFILLPAD", {"dst": "!pto.tile<16x16xf32, loc=mat, pad=zero>",
                                                  "src": "!pto.tile<16x16xf32, loc=mat>"})
    assert "LEGAL_PAD" in rule_codes("TFILLPAD_INPLACE", {"dst": "!pto.tile<16x16xf32>"})
    assert "STRUCT_SHAPE" in rule_codes("TFILLPAD", {"dst": "!pto.tile<16x32xf32, pad=max>",
                                                     "src": "!pto.tile<16x16xf32>"})
    assert "STRUCT_SHAPE" in rule_codes("TFILLPAD_EXPAND", {"dst": "!pto.tile<8x32xf32, pad=max>",
                                                            "src": "!pto.tile<16x16xf32>"})
    assert "LEGAL_LOCATION" in rule_codes("TFILLPAD", {
        "dst": "!pto.tile<16x16xf16, loc=mat, layout=NZ, pad=zero>", "src": "!pto.tile<16x16xf16>"})
    mat = parse_type("!pto.tile<16x16xf16, loc=mat, layout=NZ, pad=zero>")
    assert rule_codes("TFILLPAD", {"dst": str(mat), "src": str(mat)}) == set()
    assert I.get("TFILLPAD").pipe_for({"dst": mat}) is Pipe.MTE2
    assert I.get("TFILLPAD").pipe_for({"dst": parse_type("!pto.tile<16x16xf16>")}) is Pipe.V
    assert not allowed("TFILLPAD", None, "i64", "i64") and allowed("TFILLPAD", None, "u8", "u8")


# ------------------------------------------------------------------------------ TIMG2COL

GEOM = dict(stride_h=1, stride_w=1, dilation_h=1, dilation_w=1, pad_top=0, pad_bottom=0,
            pad_left=0, pad_right=0, pad_value=0)


def im2col_by_loops(fmap: np.ndarray, kh_: int, kw_: int, g: dict) -> np.ndarray:
    """Textbook im2col over an H x W x C array: rows (oh, ow), columns (kh, kw, c)."""
    h, w, ch = fmap.shape
    span_h, span_w = g["dilation_h"] * (kh_ - 1) + 1, g["dilation_w"] * (kw_ - 1) + 1
    oh_n = (h + g["pad_top"] + g["pad_bottom"] - span_h) // g["stride_h"] + 1
    ow_n = (w + g["pad_left"] + g["pad_right"] - span_w) // g["stride_w"] + 1
    rows = []
    for oh in range(oh_n):
        for ow in range(ow_n):
            row = []
            for kh in range(kh_):
                for kw in range(kw_):
                    ih = oh * g["stride_h"] - g["pad_top"] + kh * g["dilation_h"]
                    iw = ow * g["stride_w"] - g["pad_left"] + kw * g["dilation_w"]
                    for c in range(ch):
                        inside = 0 <= ih < h and 0 <= iw < w
                        row.append(fmap[ih, iw, c] if inside else g["pad_value"])
            rows.append(row)
    return np.array(rows, dtype=np.float64)


def test_timg2col_3x3_same_padding_f16() -> None:
    fmap = (np.arange(4 * 4 * 16).reshape(4, 4, 16) % 37 - 18).astype(np.float64)
    src = tile("!pto.tile<16x16xf16, loc=mat>", fmap.reshape(16, 16))
    dst = tile("!pto.tile<16x144xf16, loc=left>")
    g = dict(GEOM, pad_top=1, pad_bottom=1, pad_left=1, pad_right=1)
    run("TIMG2COL", dst=dst, src=src, m0=0, k0=0, height=4, width=4, kernel_h=3, kernel_w=3,
        **g)
    assert (dst.data.astype(np.float64) == im2col_by_loops(fmap, 3, 3, g)).all()


@pytest.mark.parametrize("spelling,pad_value", [("f32", 7), ("i8", -128), ("bf16", -3)])
def test_timg2col_strides_dilation_pads_and_window(spelling: str, pad_value: int) -> None:
    fmap = (np.arange(5 * 6 * 3).reshape(5, 6, 3) % 23 - 11).astype(np.float64)
    src = tile(f"!pto.tile<32x32x{spelling}, loc=mat, valid=30x3>", fmap.reshape(30, 3))
    g = dict(GEOM, stride_h=2, dilation_w=2, pad_top=1, pad_bottom=0, pad_left=2, pad_right=1,
             pad_value=pad_value)
    full = im2col_by_loops(fmap, 2, 3, g)             # 3 x 5 outputs = 15 rows, 18 columns
    assert full.shape == (15, 18)
    dst = tile(f"!pto.tile<16x32x{spelling}, loc=left, valid=10x7>")
    run("TIMG2COL", dst=dst, src=src, m0=2, k0=5, height=5, width=6, kernel_h=2, kernel_w=3, **g)
    assert (dst.data[:10, :7].astype(np.float64) == full[2:12, 5:12]).all()
    assert untouched(dst, 10, 7)


@pytest.mark.parametrize("m0,k0", [(10, 0), (0, 12), (-1, 0)])
def test_timg2col_window_outside_matrix_faults(m0: int, k0: int) -> None:
    src = tile("!pto.tile<16x8xf16, loc=mat, valid=16x2>")      # 4x4 map, C = 2, 3x3 kernel: 4x18
    dst = tile("!pto.tile<16x16xf16, loc=left, valid=?x?>", valid=(4 if m0 < 10 else 8, 8))
    fault("TIMG2COL", "RUNTIME_OOB", dst=dst, src=src, m0=m0, k0=k0, height=4, width=4,
          kernel_h=3, kernel_w=3, **GEOM)


@pytest.mark.parametrize("attrs,src", [
    (dict(height=2, width=2, kernel_h=3, kernel_w=3), "!pto.tile<16x16xf16, loc=mat>"),
    (dict(height=8, width=8, kernel_h=1, kernel_w=1), "!pto.tile<16x16xf16, loc=mat>"),
    (dict(height=4, width=4, kernel_h=1, kernel_w=1, stride_h=0), "!pto.tile<16x16xf16, loc=mat>"),
    (dict(height=4, width=4, kernel_h=1, kernel_w=1, pad_value=300),
     "!pto.tile<16x32xi8, loc=mat>"),
])
def test_timg2col_rules(attrs: dict, src: str) -> None:
    dst = src.replace("loc=mat", "loc=left")
    assert "STRUCT_ATTR" in rule_codes("TIMG2COL", {"dst": dst, "src": src}, attrs)


def test_tmov_tmp_is_accepted_and_never_touched() -> None:
    src = tile("!pto.tile<4x4xf32>", [[1, -2], [3, -4]], valid=(2, 2))
    dst = tile("!pto.tile<4x4xf32>", fill=0)
    tmp = tile("!pto.tile<4x4xf32>", fill=9)
    run("TMOV", dst=dst, src=src, tmp=tmp, relu=ReluMode.RELU)
    assert dst.data[:2, :2].tolist() == [[1, 0], [3, 0]] and (tmp.data == 9).all()
    assert rule_codes("TMOV", {"dst": "!pto.tile<16x16xf32>", "src": "!pto.tile<16x16xf32>",
                               "tmp": "!pto.tile<16x16xf32>"}) == set()


# ----------------------------------------------------------------------------- TMOV acc -> vec modes

from openpto.isa.attrs import AccToVecMode  # noqa: E402

ACC44 = "!pto.tile<4x4xf32, loc=acc, layout=NZ>"
ACC_VALUES = [[1, -2, 3, -4], [5, 6, -7, 8], [9, 10, 11, 12], [-13, 14, 15, 16]]


def test_tmov_split_m_gives_sub_block_0_the_upper_rows() -> None:
    src, dst = tile(ACC44, ACC_VALUES), tile("!pto.tile<2x4xf32>", fill=0)
    run("TMOV", dst=dst, src=src, mode=AccToVecMode.DualModeSplitM, relu=ReluMode.RELU)
    assert dst.data.tolist() == [[1, 0, 3, 0], [5, 6, 0, 8]]


def test_tmov_split_n_gives_sub_block_0_the_left_columns() -> None:
    values = np.arange(128).reshape(2, 64) - 40
    src, dst = tile("!pto.tile<2x64xi32, loc=acc, layout=NZ>", values), tile("!pto.tile<2x32xi32>", fill=0)
    run("TMOV", dst=dst, src=src, mode=AccToVecMode.DualModeSplitN)
    assert dst.data.tolist() == [list(range(-40, -8)), list(range(24, 56))]


def test_tmov_single_modes() -> None:
    src = tile(ACC44, ACC_VALUES)
    dst = tile("!pto.tile<4x4xf32>", fill=0)
    run("TMOV", dst=dst, src=src, mode=AccToVecMode.SingleModeVec0)
    assert dst.data.tolist() == ACC_VALUES
    dst = tile("!pto.tile<4x4xf32>", fill=77)
    run("TMOV", dst=dst, src=src, mode=AccToVecMode.SingleModeVec1)     # lands in sub-block 1
    assert (dst.data == 77).all()
    fault("TMOV", "RUNTIME_INVALID_WRITE", dst=tile("!pto.tile<4x4xf32>", valid=(3, 4)), src=src,
          mode=AccToVecMode.SingleModeVec1)


def test_tmov_dual_mode_run_time_faults() -> None:
    src = tile(ACC44, ACC_VALUES, valid=(3, 4))
    fault("TMOV", "RUNTIME_VALID_REGION", dst=tile("!pto.tile<2x4xf32>"), src=src, mode=AccToVecMode.DualModeSplitM)
    src = tile("!pto.tile<2x64xf32, loc=acc, layout=NZ>", valid=(2, 48))     # even, not a multiple of 32
    fault("TMOV", "RUNTIME_VALID_REGION", dst=tile("!pto.tile<2x32xf32>"), src=src, mode=AccToVecMode.DualModeSplitN)
    fault("TMOV", "RUNTIME_INVALID_WRITE", dst=tile("!pto.tile<2x4xf32>", valid=(1, 4)), src=tile(ACC44, ACC_VALUES),
          mode=AccToVecMode.DualModeSplitM)


def test_tmov_mode_static_rules() -> None:
    split_m = {"mode": AccToVecMode.DualModeSplitM}
    assert rule_codes("TMOV", {"dst": "!pto.tile<2x4xf32>", "src": ACC44}, split_m) == set()
    assert rule_codes("TMOV", {"dst": "!pto.tile<4x4xf32>", "src": "!pto.tile<4x4xf32>"},
                      {"mode": AccToVecMode.SingleModeVec1}) == {"STRUCT_ATTR_VALUE"}
    assert rule_codes("TMOV", {"dst": "!pto.tile<2x4xf16>", "src": ACC44}, split_m) == {"STRUCT_ATTR_VALUE"}
    assert rule_codes("TMOV", {"dst": "!pto.tile<2x4xf32, layout=DN>", "src": ACC44}, split_m) \
        == {"STRUCT_ATTR_VALUE"}
    assert rule_codes("TMOV", {"dst": "!pto.tile<4x4xf32>", "src": ACC44}, split_m) == {"STRUCT_SHAPE"}
    assert rule_codes("TMOV", {"dst": "!pto.tile<2x4xf32>", "src": ACC44.replace(">", ", valid=3x4>")},
                      split_m) == {"STRUCT_VALID_REGION"}
    assert rule_codes("TMOV", {"dst": "!pto.tile<4x2xf32>", "src": ACC44},
                      {"mode": AccToVecMode.DualModeSplitN}) == {"STRUCT_VALID_REGION"}   # 4 cols, f32
    assert rule_codes("TMOV", {"dst": "!pto.tile<4x4xf32>", "src": ACC44},
                      {"mode": AccToVecMode.SingleModeVec1}) == set()


def test_tinsert_acc_to_vec_modes() -> None:
    src = tile(ACC44, ACC_VALUES)
    dst = tile("!pto.tile<4x8xf32>", fill=0)
    run("TINSERT", dst=dst, src=src, r0=1, c0=3, mode=AccToVecMode.DualModeSplitM)
    want = np.zeros((4, 8))
    want[1:3, 3:7] = [[1, -2, 3, -4], [5, 6, -7, 8]]
    assert dst.data.tolist() == want.tolist()
    dst = tile("!pto.tile<4x8xf32>", fill=0)
    run("TINSERT", dst=dst, src=src, r0=0, c0=4, mode=AccToVecMode.SingleModeVec0)
    assert dst.data[:, 4:].tolist() == ACC_VALUES and (dst.data[:, :4] == 0).all()
    dst = tile("!pto.tile<4x8xf32>", fill=5)
    run("TINSERT", dst=dst, src=src, r0=0, c0=4, mode=AccToVecMode.SingleModeVec1)
    assert (dst.data == 5).all()
    fault("TINSERT", "RUNTIME_OOB", dst=tile("!pto.tile<4x8xf32>"), src=src, r0=3, c0=0,
          mode=AccToVecMode.DualModeSplitM)                      # the 2-row half at row 3 leaves dst
    assert rule_codes("TINSERT", {"dst": "!pto.tile<2x4xf32>", "src": ACC44, "r0": "index", "c0": "index"},
                      {"mode": AccToVecMode.DualModeSplitM}) == set()
    assert rule_codes("TINSERT", {"dst": "!pto.tile<4x4xf32>", "src": "!pto.tile<4x4xf32>", "r0": "index",
                                  "c0": "index"}, {"mode": AccToVecMode.DualModeSplitM}) == {"STRUCT_ATTR_VALUE"}
