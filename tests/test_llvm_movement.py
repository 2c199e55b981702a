"""The llvm backend's movement rules (TMOV*, TEXTRACT*, TINSERT*, TTRANS, TRESHAPE, TFILLPAD*,
TIMG2COL) give the reference backend's bits and raise its fault codes, on hand-picked cases:
valid regions smaller than the tile, special values, every TRESHAPE copy strategy (memcpy,
element table, byte table, run-time valid region) and out-of-range run-time offsets."""
from __future__ import annotations

import pathlib

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError

rng = np.random.default_rng(11)
SPECIALS = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 70000.0, -3.5, 2.5, 1.0],
                    dtype=np.float32)


def _data(shape: tuple[int, int], dtype: np.dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)
    if dtype.itemsize == 1:                         # fp8: any bit pattern
        return rng.integers(0, 256, shape, dtype=np.uint8).view(dtype)
    v = (rng.standard_normal(shape) * 4).astype(np.float32)
    v[0, 0] = 1.0 if dtype != np.float32 else v[0, 0]
    flat = v.reshape(-1)
    flat[: min(flat.size, SPECIALS.size)] = SPECIALS[: flat.size]
    with np.errstate(over="ignore"):           # 70000 -> f16 is +inf on purpose
        return v.astype(dtype)


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype != np.bool_ else a


def _run(text: str, tmp: pathlib.Path, args: dict, compare: dict[str, tuple[int, int] | None]) -> None:
    """Run ``text`` on both backends and compare the named outputs bit for bit over the given
    region (None = whole array), or the fault codes when the reference raises."""
    module = pto.parse(text)
    results = {}
    for backend, options in (("reference", {}), ("llvm", {"cache_dir": tmp})):
        mine = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
        exe = pto.compile(module, backend, "cpu", **options)
        try:
            exe.run(module.kernels[0].name, **mine)
            results[backend] = mine
        except PTOError as e:
            results[backend] = e.code
    ref, got = results["reference"], results["llvm"]
    if isinstance(ref, str) or isinstance(got, str):
        assert got == ref
        return
    for name, region in compare.items():
        a, b = ref[name], got[name]
        if region is not None:
            a, b = a[: region[0], : region[1]], b[: region[0], : region[1]]
        np.testing.assert_array_equal(_bits(b), _bits(a), err_msg=name)


def _tt(shape: tuple[int, int], d: str, extra: str = "") -> str:
    return f"!pto.tile<{shape[0]}x{shape[1]}x{d}{extra}>"


NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8, "u8": np.uint8,
      "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32, "i64": np.int64, "i1": np.bool_,
      "f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}


@pytest.mark.parametrize("d", ["f32", "bf16", "i8", "u16", "i1", "f8e5m2", "f8e4m3"])
@pytest.mark.parametrize("relu", [False, True])
def test_tmov_same_dtype(d: str, relu: bool, tmp_path: pathlib.Path) -> None:
    src_t, dst_t = _tt((8, 12), d, ", valid=5x7"), _tt((8, 12), d)
    attr = " {relu = #pto.relu<RELU>}" if relu else ""
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}) {{\n"
            f"  %dst = tmov %src{attr} : ({src_t}) -> {dst_t}\n}}\n")
    _run(text, tmp_path, {"dst": _data((8, 12), NP[d]), "src": _data((8, 12), NP[d])}, {"dst": (5, 7)})


@pytest.mark.parametrize("d", ["f16", "bf16"])
def test_tmov_acc_conversion(d: str, tmp_path: pathlib.Path) -> None:
    src_t = _tt((16, 16), "f32", ", loc=acc, layout=NZ")
    dst_t = _tt((16, 16), d, ", loc=mat, layout=NZ")
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}) {{\n"
            f"  %dst = tmov %src {{relu = #pto.relu<RELU>}} : ({src_t}) -> {dst_t}\n}}\n")
    _run(text, tmp_path, {"dst": _data((16, 16), NP[d]), "src": _data((16, 16), np.float32)}, {"dst": None})


def test_tmov_invalid_write(tmp_path: pathlib.Path) -> None:
    # src's valid region is dynamic (loaded) and larger than dst's: RUNTIME_INVALID_WRITE
    text = """kernel @k(%g : !pto.memref<?x8xf32>, %dst : !pto.tile<8x8xf32, valid=4x8>, %n : index) {
  .const %c0 = 0 : index
  .tile %t valid_row = %n : !pto.tile<8x8xf32, valid=?x8>
  %t = tload %g[%c0, %c0] : (!pto.memref<?x8xf32>) -> !pto.tile<8x8xf32, valid=?x8>
  %dst = tmov %t : (!pto.tile<8x8xf32, valid=?x8>) -> !pto.tile<8x8xf32, valid=4x8>
}
"""
    g = _data((8, 8), np.float32)
    for n in (3, 6):
        _run(text, tmp_path, {"g": g, "dst": np.zeros((8, 8), np.float32), "n": n}, {"dst": (4, 8)})


@pytest.mark.parametrize("mn,src_d,dst_d", [("tmov_fp", "i32", "f16"), ("tmov_fp", "f32", "bf16"),
                                            ("tmov_fp", "f32", "f32")])
def test_tmov_fp(mn: str, src_d: str, dst_d: str, tmp_path: pathlib.Path) -> None:
    src_t = _tt((8, 16), src_d, ", loc=acc, valid=6x13")
    dst_t = _tt((8, 16), dst_d, ", loc=mat")
    fp_t = _tt((1, 16), "f32", ", loc=scaling")
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}, %fp : {fp_t}) {{\n"
            f"  %dst = {mn} %src, %fp {{relu = #pto.relu<RELU>}} : ({src_t}, {fp_t}) -> {dst_t}\n}}\n")
    src = _data((8, 16), NP[src_d])
    fp = _data((1, 16), np.float32)
    _run(text, tmp_path, {"dst": _data((8, 16), NP[dst_d]), "src": src, "fp": fp}, {"dst": (6, 13)})


def test_tmov_fp_scaling_tile_too_narrow(tmp_path: pathlib.Path) -> None:
    src_t, dst_t = _tt((8, 16), "f32", ", loc=acc"), _tt((8, 16), "f16", ", loc=mat")
    fp_t = _tt((1, 16), "f32", ", loc=scaling, valid=1x8")
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}, %fp : {fp_t}) {{\n"
            f"  %dst = tmov_fp %src, %fp : ({src_t}, {fp_t}) -> {dst_t}\n}}\n")
    _run(text, tmp_path, {"dst": _data((8, 16), np.float16), "src": _data((8, 16), np.float32),
                          "fp": _data((1, 16), np.float32)}, {"dst": None})


@pytest.mark.parametrize("r0,c0", [(0, 0), (3, 5), (4, 5), (-1, 0), (0, 7), (1 << 62, 0), (0, -(1 << 62))])
def test_textract_offsets(r0: int, c0: int, tmp_path: pathlib.Path) -> None:
    src_t, dst_t = _tt((12, 16), "f16", ", valid=8x12"), _tt((4, 8), "f16")
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}, %r0 : index, %c0 : index) {{\n"
            f"  %dst = textract %src, %r0, %c0 : ({src_t}, index, index) -> {dst_t}\n}}\n")
    _run(text, tmp_path, {"dst": _data((4, 8), np.float16), "src": _data((12, 16), np.float16),
                          "r0": r0, "c0": c0}, {"dst": None})


def test_textract_fp(tmp_path: pathlib.Path) -> None:
    src_t, dst_t = _tt((32, 32), "i32", ", loc=acc, layout=NZ"), _tt((16, 16), "bf16", ", loc=mat, layout=NZ")
    fp_t = _tt((1, 16), "f32", ", loc=scaling")
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}, %fp : {fp_t}, %r0 : index, %c0 : index) {{\n"
            f"  %dst = textract_fp %src, %fp, %r0, %c0 : ({src_t}, {fp_t}, index, index) -> {dst_t}\n}}\n")
    for r0, c0 in ((16, 3), (17, 0)):
        _run(text, tmp_path, {"dst": _data((16, 16), ml_dtypes.bfloat16), "src": _data((32, 32), np.int32),
                              "fp": _data((1, 16), np.float32), "r0": r0, "c0": c0}, {"dst": None})


@pytest.mark.parametrize("r0,c0", [(0, 0), (2, 9), (3, 9), (-2, 1)])
def test_tinsert(r0: int, c0: int, tmp_path: pathlib.Path) -> None:
    src_t = _tt((4, 8), "f32", ", loc=acc, valid=3x7")
    dst_t = _tt((8, 16), "f16", ", loc=mat, valid=6x16")
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}, %r0 : index, %c0 : index) {{\n"
            f"  tinsert %dst, %src, %r0, %c0 : ({dst_t}, {src_t}, index, index)\n}}\n")
    _run(text, tmp_path, {"dst": _data((8, 16), np.float16), "src": _data((4, 8), np.float32),
                          "r0": r0, "c0": c0}, {"dst": (6, 16)})


def test_tinsert_fp(tmp_path: pathlib.Path) -> None:
    src_t = _tt((4, 8), "f32", ", loc=acc")
    dst_t = _tt((8, 16), "f32", ", loc=vec")
    fp_t = _tt((1, 8), "f32", ", loc=scaling")
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}, %fp : {fp_t}, %r0 : index, %c0 : index) {{\n"
            f"  tinsert_fp %dst, %src, %fp, %r0, %c0 : ({dst_t}, {src_t}, {fp_t}, index, index)\n}}\n")
    _run(text, tmp_path, {"dst": _data((8, 16), np.float32), "src": _data((4, 8), np.float32),
                          "fp": _data((1, 8), np.float32), "r0": 4, "c0": 8}, {"dst": None})


@pytest.mark.parametrize("d,valid", [("i1", "5x3"), ("u16", "8x12"), ("f8e4m3", "2x9")])
def test_ttrans(d: str, valid: str, tmp_path: pathlib.Path) -> None:
    src_t, dst_t = _tt((8, 12), d, f", valid={valid}"), _tt((12, 8), d)
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}) {{\n"
            f"  %dst = ttrans %src : ({src_t}) -> {dst_t}\n}}\n")
    r, c = map(int, valid.split("x"))
    _run(text, tmp_path, {"dst": _data((12, 8), NP[d]), "src": _data((8, 12), NP[d])}, {"dst": (c, r)})


def test_ttrans_invalid_write(tmp_path: pathlib.Path) -> None:
    """src's run-time valid rows exceed dst's valid columns: RUNTIME_INVALID_WRITE."""
    text = """kernel @k(%g : !pto.memref<?x12xf32>, %dst : !pto.tile<12x8xf32, valid=12x7>, %n : index) {
  .const %c0 = 0 : index
  .tile %t valid_row = %n : !pto.tile<8x12xf32, valid=?x12>
  %t = tload %g[%c0, %c0] : (!pto.memref<?x12xf32>) -> !pto.tile<8x12xf32, valid=?x12>
  %dst = ttrans %t : (!pto.tile<8x12xf32, valid=?x12>) -> !pto.tile<12x8xf32, valid=12x7>
}
"""
    for n in (7, 8):
        _run(text, tmp_path, {"g": _data((8, 12), np.float32), "dst": np.zeros((12, 8), np.float32), "n": n},
             {"dst": (12, 7)})


RESHAPES = [
    ("4x8xf32", "", "8x8xf16", "", (8, 8)),                                   # memcpy
    ("4x8xf32", ", valid=3x8", "8x8xf16", "", (6, 8)),                        # memcpy, partial
    ("4x8xf32", ", valid=3x8", "8x8xf16", "", (7, 8)),                        # RUNTIME_INVALID_READ
    ("4x8xf32", ", valid=4x5", "8x8xf16", "", (8, 2)),                        # column check
    ("16x1xf32", ", layout=DN", "1x16xf32", "", (1, 16)),                     # element table
    ("8x4xi8", ", layout=DN", "8x1xi32", "", (8, 1)),                         # byte table
    ("8x4xi8", ", layout=DN, valid=8x3", "8x1xi32", "", (8, 1)),              # RUNTIME_INVALID_READ
    ("16x16xf16", ", layout=NZ", "16x32xi8", ", layout=ZZ", (16, 32)),
    ("16x16xf32", ", loc=acc, layout=NZ", "16x16xi32", ", loc=acc, layout=ZN", (11, 13)),
]


@pytest.mark.parametrize("src,sx,dst,dx,dvalid", RESHAPES)
def test_treshape(src: str, sx: str, dst: str, dx: str, dvalid: tuple[int, int], tmp_path: pathlib.Path) -> None:
    """Static dst (a tile parameter, full valid region) and a run-time valid dst (stored out)."""
    (sr, sc, sd), (dr, dc, dd) = src.split("x"), dst.split("x")
    src_t, dst_t, dyn_t = f"!pto.tile<{src}{sx}>", f"!pto.tile<{dst}{dx}>", f"!pto.tile<{dst}{dx}, valid=?x?>"
    out_t = f"!pto.tile<{dst}>"
    text = f"""kernel @k(%out : {out_t}, %src : {src_t}, %vr : index, %vc : index) {{
  .tile %t valid_row = %vr valid_col = %vc : {dyn_t}
  %t = treshape %src : ({src_t}) -> {dyn_t}
  %out = tmov %t : ({dyn_t}) -> {out_t}
}}
"""
    g = np.zeros((int(dr), int(dc)), NP[dd])
    source = _data((int(sr), int(sc)), NP[sd])
    _run(text, tmp_path, {"out": g, "src": source, "vr": dvalid[0], "vc": dvalid[1]}, {"out": dvalid})
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}) {{\n"
            f"  %dst = treshape %src : ({src_t}) -> {dst_t}\n}}\n")
    _run(text, tmp_path, {"dst": _data(g.shape, NP[dd]), "src": source}, {"dst": None})


@pytest.mark.parametrize("mn,d,pad", [("tfillpad", "f32", "max"), ("tfillpad", "bf16", "min"),
                                      ("tfillpad_expand", "i8", "min"), ("tfillpad_expand", "u32", "max"),
                                      ("tfillpad", "f16", "zero")])
def test_tfillpad(mn: str, d: str, pad: str, tmp_path: pathlib.Path) -> None:
    src_t = _tt((8, 16), d, ", valid=5x9")
    dst_t = _tt((8, 16) if mn == "tfillpad" else (12, 32), d, f", pad={pad}")
    shape = (8, 16) if mn == "tfillpad" else (12, 32)
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}) {{\n"
            f"  %dst = {mn} %src : ({src_t}) -> {dst_t}\n}}\n")
    _run(text, tmp_path, {"dst": _data(shape, NP[d]), "src": _data((8, 16), NP[d])}, {"dst": None})


def test_tfillpad_inplace(tmp_path: pathlib.Path) -> None:
    t = _tt((16, 16), "f16", ", valid=9x5, pad=min")
    text = f"kernel @k(%dst : {t}) {{\n  tfillpad_inplace %dst : ({t})\n}}\n"
    _run(text, tmp_path, {"dst": _data((16, 16), np.float16)}, {"dst": None})


@pytest.mark.parametrize("m0,k0", [(0, 0), (8, 6), (5, 3), (-1, 0), (9, 0), (0, 7), (0, 1 << 62)])
def test_timg2col(m0: int, k0: int, tmp_path: pathlib.Path) -> None:
    dst_t, src_t = _tt((4, 24), "i16", ", loc=left, valid=4x24"), _tt((16, 8), "i16", ", loc=mat, valid=16x5")
    attrs = ("{height = 4, width = 4, kernel_h = 3, kernel_w = 2, stride_h = 1, stride_w = 2, "
             "dilation_h = 1, dilation_w = 2, pad_top = 1, pad_bottom = 1, pad_left = 2, pad_right = 1, "
             "pad_value = -7}")
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}, %m0 : index, %k0 : index) {{\n"
            f"  %dst = timg2col %src, %m0, %k0 {attrs} : ({src_t}, index, index) -> {dst_t}\n}}\n")
    _run(text, tmp_path, {"dst": _data((4, 24), np.int16), "src": _data((16, 8), np.int16),
                          "m0": m0, "k0": k0}, {"dst": None})


def test_timg2col_feature_map_not_valid(tmp_path: pathlib.Path) -> None:
    dst_t, src_t = _tt((16, 144), "f16", ", loc=left"), _tt((16, 16), "f16", ", loc=mat, valid=15x16")
    attrs = "{height = 4, width = 4, kernel_h = 3, kernel_w = 3, pad_top = 1, pad_bottom = 1, pad_left = 1, pad_right = 1}"
    text = (f"kernel @k(%dst : {dst_t}, %src : {src_t}) {{\n"
            f"  %dst = timg2col %src, 0, 0 {attrs} : ({src_t}, index, index) -> {dst_t}\n}}\n")
    _run(text, tmp_path, {"dst": _data((16, 144), np.float16), "src": _data((16, 16), np.float16)}, {"dst": None})


@pytest.mark.parametrize("valid", ["8x8", "6x6"])
def test_ttrans_in_place(valid: str, tmp_path: pathlib.Path) -> None:
    """dst and src the same (square) buffer: numpy's result (it copies overlapping views)."""
    t = _tt((8, 8), "i32", f", valid={valid}")
    text = f"kernel @k(%t : {t}) {{\n  %t = ttrans %t : ({t}) -> {t}\n}}\n"
    r, c = map(int, valid.split("x"))
    _run(text, tmp_path, {"t": _data((8, 8), np.int32)}, {"t": (r, c)})


def test_tmov_tmp_is_never_touched(tmp_path: pathlib.Path) -> None:
    t = _tt((8, 12), "f16")
    text = (f"kernel @k(%dst : {t}, %src : {_tt((8, 12), 'f16', ', valid=5x7')}, %tmp : {t}) {{\n"
            f"  pto.tmov ins(%src, %tmp) outs(%dst) {{relu = #pto.relu<RELU>}}\n}}\n")
    args = dict(dst=np.zeros((8, 12), np.float16), src=_data((8, 12), np.float16), tmp=np.full((8, 12), 3, np.float16))
    _run(text, tmp_path, args, {"dst": (5, 7), "tmp": None})
    module = pto.parse(text)
    mine = {k: v.copy() for k, v in args.items()}
    pto.compile(module, "llvm", "cpu", cache_dir=tmp_path)(**mine)
    assert (mine["tmp"] == 3).all()
    np.testing.assert_array_equal(mine["dst"][:5, :7], np.maximum(args["src"][:5, :7], 0))


@pytest.mark.parametrize("mode,src_t,dst_t,valid", [
    ("DualModeSplitM", (8, 16), (4, 16), "8x16"), ("DualModeSplitM", (8, 16), (4, 16), "6x10"),
    ("DualModeSplitM", (8, 16), (4, 16), "5x16"), ("DualModeSplitN", (4, 64), (4, 32), "4x64"),
    ("DualModeSplitN", (4, 64), (4, 32), "3x32"), ("DualModeSplitN", (4, 64), (4, 32), "4x48"),
    ("SingleModeVec0", (8, 16), (8, 16), "7x9"), ("SingleModeVec1", (8, 16), (8, 16), "8x16")])
@pytest.mark.parametrize("d", ["f32", "i32"])
def test_tmov_acc_to_vec_modes_match_the_reference(mode: str, src_t: tuple, dst_t: tuple, valid: str, d: str,
                                                    tmp_path: pathlib.Path) -> None:
    """Dynamic valid regions (run-time parity and 32-column faults), relu, both dtypes; dst
    inside the domain compares whole (pre-filled identically: unwritten parts must agree)."""
    s, dyn = _tt(src_t, d, ", loc=acc, layout=NZ"), _tt(src_t, d, ", loc=acc, layout=NZ, valid=?x?")
    text = (f"kernel @k(%dst : {_tt(dst_t, d)}, %src : {s}, %r : index, %c : index) {{\n"
            f"  .tile %t valid_row = %r valid_col = %c : {dyn}\n"
            f"  %t = treshape %src : ({s}) -> {dyn}\n"
            f"  %dst = tmov %t {{mode = #pto.acc_to_vec<{mode}>, relu = #pto.relu<RELU>}}\n}}\n")
    r, c = (int(x) for x in valid.split("x"))
    args = dict(dst=_data(dst_t, NP[d]), src=_data(src_t, NP[d]), r=r, c=c)
    _run(text, tmp_path, args, {"dst": (min(dst_t[0], r), min(dst_t[1], c))})   # outside the domain: unspecified


@pytest.mark.parametrize("mode,r0,c0", [("DualModeSplitM", 1, 2), ("DualModeSplitM", 3, 0), ("DualModeSplitN", 0, 0),
                                        ("SingleModeVec0", 2, 3), ("SingleModeVec1", 0, 1)])
def test_tinsert_acc_to_vec_modes_match_the_reference(mode: str, r0: int, c0: int, tmp_path: pathlib.Path) -> None:
    s, d = _tt((6, 64), "f32", ", loc=acc, layout=NZ"), _tt((8, 80), "f32")
    text = (f"kernel @k(%dst : {d}, %src : {s}, %r0 : index, %c0 : index) {{\n"
            f"  pto.tinsert ins(%src, %r0, %c0 : {s}, index, index) outs(%dst : {d}) "
            f"{{mode = #pto.acc_to_vec<{mode}>}}\n}}\n")
    _run(text, tmp_path, dict(dst=_data((8, 80), np.float32), src=_data((6, 64), np.float32), r0=r0, c0=c0),
         {"dst": None})
