"""The llvm backend's axis reduce / expand rules against the reference backend: special
values (NaN payloads, signed zeros, infinities), integer wrap, narrow floats, valid regions
smaller than the tile, the run-time faults the reference raises, and row reductions that
compile to vector code."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
from openpto.backends.llvm import generate, target

NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8, "u8": np.uint8,
      "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32}


def _values(d: str, shape: tuple[int, int], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if d in ("f32", "f16", "bf16"):
        x = (rng.standard_normal(shape) * 4).astype(np.float32)
        flat = x.reshape(-1)
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30], np.float32)
        hit = rng.random(flat.size) < 0.15
        flat[hit] = specials[rng.integers(0, specials.size, int(hit.sum()))]
        with np.errstate(over="ignore"):
            out = x.astype(NP[d])
        if d == "f32":                                   # a payload NaN and a signalling NaN
            out.view(np.uint32)[0, 0] = 0xFFC00005
            out.view(np.uint32)[-1, -1] = 0x7F800003
        return out
    info = np.iinfo(NP[d])
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(NP[d])


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def _same_rounded(w: np.ndarray, g: np.ndarray) -> bool:
    """The ``rounded`` contract: every bit (zero signs included), except that any NaN
    matches any NaN."""
    nan_w, nan_g = np.isnan(w.astype(np.float32)), np.isnan(g.astype(np.float32))
    return bool(np.array_equal(nan_w, nan_g) and np.array_equal(_bits(w)[~nan_w], _bits(g)[~nan_g]))


def _run_both(text: str, args: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    m = pto.parse(text)
    out = []
    for backend in ("reference", "llvm"):
        copies = {k: v.copy() for k, v in args.items()}
        pto.compile(m, backend, **({"cache": False} if backend == "llvm" else {}))(**copies)
        out.append(copies)
    return out[0], out[1]


def _reduce_text(op: str, d: str, rows: int, cols: int, vr: int, vc: int) -> str:
    src = f"!pto.tile<{rows}x{cols}x{d}, valid={vr}x{vc}>"
    if op.startswith("TROW"):
        dst = f"!pto.tile<{rows}x1x{d}, layout=DN, valid={vr}x1>"
    else:
        dst = f"!pto.tile<1x{cols}x{d}, valid=1x{vc}>"
    return (f"kernel @k(%dst : {dst}, %src : {src}) {{\n"
            f"  %dst = {op.lower()} %src : ({src}) -> {dst}\n}}\n")


@pytest.mark.parametrize("op", ["TROWSUM", "TROWMAX", "TROWMIN", "TROWPROD",
                                "TCOLSUM", "TCOLMAX", "TCOLMIN", "TCOLPROD"])
@pytest.mark.parametrize("d", ["f32", "f16", "bf16", "i8", "u32"])
def test_reductions_match_reference(op: str, d: str) -> None:
    rows, cols, vr, vc = 8, 40, 7, 37                    # a valid region smaller than the tile
    text = _reduce_text(op, d, rows, cols, vr, vc)
    dshape = (rows, 1) if op.startswith("TROW") else (1, cols)
    args = {"dst": np.zeros(dshape, NP[d]), "src": _values(d, (rows, cols), sum(map(ord, op)))}
    want, got = _run_both(text, args)
    region = (slice(0, vr), slice(0, 1)) if op.startswith("TROW") else (slice(0, 1), slice(0, vc))
    w, g = want["dst"][region], got["dst"][region]
    if d.startswith("f") or d == "bf16":
        if op.endswith(("MAX", "MIN")):
            assert _same_rounded(w, g)
        else:
            w64, g64 = w.astype(np.float64), g.astype(np.float64)
            assert np.array_equal(np.isnan(w64), np.isnan(g64))
            # the order-independent sum contract: n * eps * (the same reduction of |x|)
            axis = 1 if op.startswith("TROW") else 0
            x = np.abs(args["src"][:vr, :vc].astype(np.float64))
            with np.errstate(all="ignore"):              # inf - inf and overflowing products are expected
                mag = x.sum(axis=axis, keepdims=True) if op.endswith("SUM") else x.prod(axis=axis, keepdims=True)
                tol = max(vr, vc) * float(ml_dtypes.finfo(NP[d]).eps) * mag
                ok = np.isfinite(w64) & np.isfinite(tol)
                assert (np.abs(g64 - w64)[ok] <= tol[ok]).all()
    else:
        assert np.array_equal(w, g)                      # integers wrap identically


def test_row_max_nan_and_signed_zero() -> None:
    text = _reduce_text("TROWMAX", "f32", 4, 40, 4, 40)
    src = np.ones((4, 40), np.float32)
    src[0, :] = -0.0
    src[0, 7] = 0.0                                        # +0 > -0
    src.view(np.uint32)[1, 35] = 0x7FC00011                # one NaN near the row's end
    src.view(np.uint32)[2, 3] = 0xFFC00001                 # two NaNs of opposite signs
    src.view(np.uint32)[2, 38] = 0x7FC00002
    src[3, :] = -np.inf
    want, got = _run_both(text, {"dst": np.zeros((4, 1), np.float32), "src": src})
    assert _same_rounded(want["dst"], got["dst"])
    assert got["dst"][0, 0] == 0 and not np.signbit(got["dst"][0, 0])
    assert np.isnan(got["dst"][1:3, 0]).all() and got["dst"][3, 0] == -np.inf


def test_empty_lines_give_the_identity() -> None:
    text = _reduce_text("TROWMIN", "i16", 4, 8, 4, 0)
    want, got = _run_both(text, {"dst": np.zeros((4, 1), np.int16), "src": np.ones((4, 8), np.int16)})
    assert np.array_equal(want["dst"], got["dst"]) and got["dst"][0, 0] == np.iinfo(np.int16).max


@pytest.mark.parametrize("axis", ["ROW", "COL"])
@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV", "MAX", "MIN", "EXPDIF", ""])
@pytest.mark.parametrize("d", ["f32", "bf16", "i32"])
def test_expands_match_reference(axis: str, op: str, d: str) -> None:
    if op == "EXPDIF" and d not in ("f32", "bf16"):
        return
    rows, cols, vr, vc = 8, 24, 6, 21
    full = f"!pto.tile<{rows}x{cols}x{d}, valid={vr}x{vc}>"
    vec = (f"!pto.tile<{rows}x1x{d}, layout=DN, valid={vr}x1>" if axis == "ROW"
           else f"!pto.tile<1x{cols}x{d}, valid=1x{vc}>")
    vshape = (rows, 1) if axis == "ROW" else (1, cols)
    if op:
        text = (f"kernel @k(%dst : {full}, %a : {full}, %s : {vec}) {{\n"
                f"  %dst = t{axis.lower()}expand{op.lower()} %a, %s : ({full}, {vec}) -> {full}\n}}\n")
        args = {"dst": np.zeros((rows, cols), NP[d]), "a": _values(d, (rows, cols), 1),
                "s": _values(d, vshape, 2)}
    else:
        text = (f"kernel @k(%dst : {full}, %s : {vec}) {{\n"
                f"  %dst = t{axis.lower()}expand %s : ({vec}) -> {full}\n}}\n")
        args = {"dst": np.zeros((rows, cols), NP[d]), "s": _values(d, vshape, 2)}
    want, got = _run_both(text, args)
    w, g = want["dst"][:vr, :vc], got["dst"][:vr, :vc]
    if op == "EXPDIF":
        w64, g64 = w.astype(np.float64), g.astype(np.float64)
        assert np.array_equal(np.isnan(w64), np.isnan(g64))
        assert np.allclose(g64, w64, rtol=1e-5, equal_nan=True)
    elif d in ("f32", "bf16") and op:
        assert _same_rounded(w, g)
    else:
        assert np.array_equal(_bits(w), _bits(g))


DYN = """
kernel @k(%dst : !pto.tile<8x16xf32>, %a : !pto.tile<8x16xf32>, %v : index) {
  .tile %s valid_row = %v : !pto.tile<8x1xf32, layout=DN, valid=?x1>
  %s = trowsum %a : (!pto.tile<8x16xf32>) -> !pto.tile<8x1xf32, layout=DN, valid=?x1>
  %dst = trowexpandsub %a, %s : (!pto.tile<8x16xf32>, !pto.tile<8x1xf32, layout=DN, valid=?x1>) -> !pto.tile<8x16xf32>
}
"""


def test_faults_match_reference() -> None:
    """A reduction whose dst valid region is not the result: RUNTIME_VALID_REGION (v = 5);
    a valid one then fused with a row expand reads fine (v = 8)."""
    m = pto.parse(DYN)
    a = np.arange(128, dtype=np.float32).reshape(8, 16)
    for backend in ("reference", "llvm"):
        exe = pto.compile(m, backend, **({"cache": False} if backend == "llvm" else {}))
        with pytest.raises(pto.PTOError) as e:
            exe(np.zeros_like(a), a, 5)
        assert e.value.code == "RUNTIME_VALID_REGION"
        out = np.zeros_like(a)
        exe(out, a, 8)
        assert np.allclose(out, a - a.sum(axis=1, keepdims=True))


INVALID_READ = """
kernel @k(%dst : !pto.tile<8x16xf32>, %a : !pto.tile<8x16xf32>, %s0 : !pto.tile<8x1xf32, layout=DN>, %v : index) {
  .tile %s valid_row = %v : !pto.tile<8x1xf32, layout=DN, valid=?x1>
  %s = trowexpand %s0 : (!pto.tile<8x1xf32, layout=DN>) -> !pto.tile<8x1xf32, layout=DN, valid=?x1>
  %dst = trowexpandmul %a, %s : (!pto.tile<8x16xf32>, !pto.tile<8x1xf32, layout=DN, valid=?x1>) -> !pto.tile<8x16xf32>
}
"""


def test_invalid_read_of_the_per_row_operand() -> None:
    m = pto.parse(INVALID_READ)
    a = np.ones((8, 16), np.float32)
    s0 = np.full((8, 1), 2, np.float32)
    for backend in ("reference", "llvm"):
        exe = pto.compile(m, backend, **({"cache": False} if backend == "llvm" else {}))
        with pytest.raises(pto.PTOError) as e:
            exe(np.zeros_like(a), a, s0, 6)
        assert e.value.code == "RUNTIME_INVALID_READ" and "per-row source" in str(e.value)


@pytest.mark.parametrize("op, insn", [("trowsum", "vaddps"), ("trowmax", "vmaxps")])
def test_row_reductions_vectorise(op: str, insn: str) -> None:
    src = "!pto.tile<32x1024xf32>"
    dst = "!pto.tile<32x1xf32, layout=DN>"
    text = f"kernel @k(%dst : {dst}, %src : {src}) {{\n  %dst = {op} %src : ({src}) -> {dst}\n}}\n"
    asm = target.assembly(generate(pto.parse(text))[0])
    assert re.search(rf"\b{insn}\s+[^\n]*%(zmm|ymm)", asm), f"{op} did not vectorise"


# --------------------------------------------------------------------------- row-expand forms (issue 14)

def _row_form_text(op: str, d: str, t0: str, t1: str, dst: str, tmp: str | None = None) -> str:
    ins = "%a, %s" + (", %t" if tmp else "")
    types = f"{t0}, {t1}" + (f", {tmp}" if tmp else "")
    params = f"%dst : {dst}, %a : {t0}, %s : {t1}" + (f", %t : {tmp}" if tmp else "")
    return (f"kernel @k({params}) {{\n"
            f"  %dst = trowexpand{op.lower()} {ins} : ({types}) -> {dst}\n}}\n")


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV", "MAX", "MIN", "EXPDIF"])
@pytest.mark.parametrize("form", ["src0-mode1", "src0-mode2", "src1-mode2"])
@pytest.mark.parametrize("d", ["f32", "f16", "i16"])
def test_row_expand_forms_match_reference(op: str, form: str, d: str) -> None:
    """Either operand expanded, Mode 1 and Mode 2 (a 32-byte block per row), against the
    reference, with a valid region smaller than the tile."""
    if op == "EXPDIF" and d == "i16":
        return
    rows, cols, vr, vc = 8, 48, 6, 37
    w = 32 // np.dtype(NP[d]).itemsize
    full = f"!pto.tile<{rows}x{cols}x{d}, valid={vr}x{vc}>"
    vec = (f"!pto.tile<{rows}x1x{d}, layout=DN, valid={vr}x1>" if form.endswith("mode1")
           else f"!pto.tile<{rows}x{w}x{d}, valid={vr}x{w}>")
    vshape = (rows, 1) if form.endswith("mode1") else (rows, w)
    first = form.startswith("src0")
    t0, t1 = (vec, full) if first else (full, vec)
    text = _row_form_text(op, d, t0, t1, full)
    a, s = _values(d, (rows, cols), 3), _values(d, vshape, 4)
    args = {"dst": np.zeros((rows, cols), NP[d]), "a": s if first else a, "s": a if first else s}
    want, got = _run_both(text, args)
    wv, gv = want["dst"][:vr, :vc], got["dst"][:vr, :vc]
    if op == "EXPDIF":
        w64, g64 = wv.astype(np.float64), gv.astype(np.float64)
        assert np.array_equal(np.isnan(w64), np.isnan(g64))
        assert np.allclose(g64, w64, rtol=2e-3 if d == "f16" else 1e-5, equal_nan=True)
    elif d.startswith("f"):
        assert _same_rounded(wv, gv)
    else:
        assert np.array_equal(wv, gv)


def test_row_expand_mode2_src0_hand_case() -> None:
    """dst[i, j] = b_i[j mod 8] - src1[i, j] with src0 the expanded f32 block: hand-computed."""
    blk = "!pto.tile<2x8xf32>"
    full = "!pto.tile<2x16xf32>"
    text = _row_form_text("SUB", "f32", blk, full, full)
    b = np.array([[1, 2, 3, 4, 5, 6, 7, 8], [10, 20, 30, 40, 50, 60, 70, 80]], np.float32)
    x = np.arange(32, dtype=np.float32).reshape(2, 16)
    want = np.array([[1, 1, 1, 1, 1, 1, 1, 1, -7, -7, -7, -7, -7, -7, -7, -7],
                     [-6, 3, 12, 21, 30, 39, 48, 57, -14, -5, 4, 13, 22, 31, 40, 49]], np.float32)
    for backend in ("reference", "llvm"):
        out = np.zeros((2, 16), np.float32)
        pto.compile(pto.parse(text), backend, **({"cache": False} if backend == "llvm" else {}))(out, b, x)
        assert np.array_equal(out, want), backend


def test_row_expand_tmp_is_accepted_and_untouched() -> None:
    full = "!pto.tile<4x16xf32>"
    vec = "!pto.tile<4x1xf32, layout=DN>"
    text = _row_form_text("MUL", "f32", full, vec, full, tmp=full)
    a = np.arange(64, dtype=np.float32).reshape(4, 16)
    s = np.array([[2], [-1], [0.5], [0]], np.float32)
    for backend in ("reference", "llvm"):
        out, tmp = np.zeros_like(a), np.full_like(a, 7.0)
        pto.compile(pto.parse(text), backend, **({"cache": False} if backend == "llvm" else {}))(out, a, s, tmp)
        assert np.array_equal(out, a * s) and (tmp == 7.0).all(), backend


DYN_BLOCK = """
kernel @k(%dst : !pto.tile<4x16xf32>, %a : !pto.tile<4x16xf32>, %b0 : !pto.tile<4x8xf32>, %v : index) {
  .tile %b valid_col = %v : !pto.tile<4x8xf32, valid=4x?>
  %b = tmuls %b0, 1.0 : (!pto.tile<4x8xf32>, f32) -> !pto.tile<4x8xf32, valid=4x?>
  %dst = trowexpandadd %a, %b : (!pto.tile<4x16xf32>, !pto.tile<4x8xf32, valid=4x?>) -> !pto.tile<4x16xf32>
}
"""


@pytest.mark.parametrize("v, ok", [(1, True), (8, True), (4, False)])
def test_row_expand_dynamic_block_width(v: int, ok: bool) -> None:
    """A dynamic valid column count of the expanded operand: 1 (Mode 1) and 8 (Mode 2, f32)
    run; anything else is RUNTIME_VALID_REGION on both backends."""
    a = np.arange(64, dtype=np.float32).reshape(4, 16)
    b0 = np.arange(32, dtype=np.float32).reshape(4, 8) * 100
    want = a + (b0[:, :1] if v == 1 else np.tile(b0, (1, 2)))
    for backend in ("reference", "llvm"):
        exe = pto.compile(pto.parse(DYN_BLOCK), backend, **({"cache": False} if backend == "llvm" else {}))
        out = np.zeros_like(a)
        if ok:
            exe(out, a, b0, v)
            assert np.array_equal(out, want), backend
        else:
            with pytest.raises(pto.PTOError) as e:
                exe(out, a, b0, v)
            assert e.value.code == "RUNTIME_VALID_REGION", backend
