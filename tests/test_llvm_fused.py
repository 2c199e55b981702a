"""The llvm backend's fused-family rules against hand-computed results and the reference backend:
fused multiply-adds that must round once (in place and inside a fused chain), ReLU and
saturating narrowing, pair sums over odd widths and in place, IEEE pow special values and
wrapping integer powers over every pair of edge values."""
from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
import pytest

from tests.llvm_support import run_program

NAN, INF = float("nan"), float("inf")
E20 = 1.0 + 2.0 ** -20
NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8, "u8": np.uint8,
      "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32}


def _t(n: int, d: str, rows: int = 1, valid: str = "") -> str:
    return f"!pto.tile<{rows}x{n}x{d}{', valid=' + valid if valid else ''}>"


def _both(text: str, valid: dict[str, tuple[int, int]] | None = None, **args: object) -> dict[str, np.ndarray]:
    """Run on llvm and reference; both must succeed with the same bits (NaN: any NaN) inside each
    array's ``valid`` block (default: all of it; outside, the reference writes poison); llvm's arrays."""
    code_l, got = run_program(text, "llvm", args)
    code_r, want = run_program(text, "reference", args)
    assert code_l is None and code_r is None, (code_l, code_r)
    for k, w in want.items():
        g = got[k]
        if valid and k in valid:
            r, c = valid[k]
            g, w = g[:r, :c], w[:r, :c]
        if w.dtype.kind == "f" or w.dtype == ml_dtypes.bfloat16:
            gw, ww = g.astype(np.float64), w.astype(np.float64)
            nan = np.isnan(ww)
            assert (np.isnan(gw) == nan).all(), k
            u = {1: np.uint8, 2: np.uint16, 4: np.uint32}[w.itemsize]
            np.testing.assert_array_equal(g.view(u)[~nan], w.view(u)[~nan], err_msg=k)
        else:
            np.testing.assert_array_equal(g, w, err_msg=k)
    return got


def _same(got: np.ndarray, want: list) -> None:
    for i, (g, w) in enumerate(zip(np.asarray(got, dtype=np.float64).reshape(-1), want)):
        ok = (math.isnan(g) and math.isnan(w)) or (g == w and math.copysign(1, g) == math.copysign(1, w))
        assert ok, f"element {i}: got {g!r}, want {w!r}"


def _row(values: list, d: str) -> np.ndarray:
    return np.array(values, dtype=np.float64 if d[0] in "fb" else object).astype(NP[d]).reshape(1, -1)


def _ternary(mn: str, d: str, n: int) -> str:
    t = _t(n, d)
    return f"kernel @k(%d : {t}, %a : {t}, %b : {t}) {{\n  {mn} %d, %a, %b\n}}\n"


# ----------------------------------------------------------------------------- multiply-add


def test_fused_multiply_adds_round_once() -> None:
    a = [2, E20, 2.0 ** -24 + 2.0 ** -42, 0.0, INF, -0.0, 2]
    d = [1, E20, 1 - 2.0 ** -18, INF, 1, 1, 3]
    b = [1, -(1 + 2.0 ** -19), 1 + 2.0 ** -23, 1, -INF, 0.0, -6]
    out = _both(_ternary("tfusedmuladd", "f32", 7), d=_row(d, "f32"), a=_row(a, "f32"), b=_row(b, "f32"))
    _same(out["d"], [3, 2.0 ** -40, 1 + 2.0 ** -23, NAN, NAN, 0.0, 0.0])
    out = _both(_ternary("tmuladddst", "f32", 7), d=_row(b, "f32"), a=_row(a, "f32"), b=_row(d, "f32"))
    _same(out["d"], [3, 2.0 ** -40, 1 + 2.0 ** -23, NAN, NAN, 0.0, 0.0])
    out = _both(_ternary("tfusedmuladdrelu", "f32", 7), d=_row(d, "f32"), a=_row(a, "f32"),
                b=_row([-3, -(1 + 2.0 ** -19), -2, 1, 1, -0.0, -7], "f32"))
    _same(out["d"], [0.0, 2.0 ** -40, 0.0, NAN, INF, 0.0, 0.0])


@pytest.mark.parametrize("d", ["f16", "bf16"])
def test_narrow_multiply_add_matches_reference(d: str) -> None:
    vals = [0.1, 3.0, 1000.0, -0.0, 65504.0, 1e-7, -2.5, 7.0]
    pairs = list(itertools.product(vals, repeat=3))
    a, x, y = (_row([p[k] for p in pairs], d) for k in range(3))
    _both(_ternary("tmuladddst", d, len(pairs)), d=y, a=a, b=x)
    _both(_ternary("tfusedmuladd", d, len(pairs)), d=y, a=a, b=x)


def test_taxpy_widening_and_in_place() -> None:
    t32, t16 = _t(3, "f32"), _t(3, "f16")
    text = (f"kernel @k(%d : {t32}, %a : {t16}, %s : f16) {{\n  taxpy %d, %a, %s\n}}\n")
    out = _both(text, d=_row([1.0, 0.0, -1.0], "f32"), a=_row([0.1, 1.0, 2.0], "f16"), s=0.1)
    h = float(np.float16(0.1))
    _same(out["d"], [float(np.float32(h * h + 1)), h, float(np.float32(2 * h - 1))])
    inplace = (f"kernel @k(%d : {t32}, %s : f32) {{\n  taxpy %d, %d, %s\n}}\n")   # dst = s * dst + dst
    out = _both(inplace, d=_row([1.0, -2.0, E20], "f32"), s=3.0)
    _same(out["d"], [4.0, -8.0, float(np.float32(4 * E20))])


def test_in_place_source_and_fused_chain() -> None:
    t = _t(4, "f32")
    text = (f"kernel @k(%d : {t}, %b : {t}, %e : {t}) {{\n"
            f"  tfusedmuladd %d, %d, %b\n"                       # d = d * d + b
            f"  tmuladddst %e, %d, %b\n"                         # e = d * b + e
            f"  %e = tsubrelu %e, %b : ({t}, {t}) -> {t}\n"
            f"}}\n")
    out = _both(text, d=_row([1, 2, 3, E20], "f32"), b=_row([1, -1, 2, -(1 + 2.0 ** -19)], "f32"),
                e=_row([0, 0, 100, 0], "f32"))
    _same(out["d"], [2, 3, 11, 2.0 ** -40])
    _same(out["e"], [1, 0, 120, 1 + 2.0 ** -19])     # 2*1+0-1; relu(-3-0+1); 22+100-2; -tiny+1+2**-19


# ----------------------------------------------------------------------------- ReLU and narrowing


def test_taddreluconv_pairs() -> None:
    def run(src: str, dst: str, a: list, b: list) -> np.ndarray:
        ts, td = _t(len(a), src), _t(len(a), dst)
        text = (f"kernel @k(%d : {td}, %a : {ts}, %b : {ts}) {{\n"
                f"  %d = taddreluconv %a, %b : ({ts}, {ts}) -> {td}\n}}\n")
        return _both(text, d=np.zeros((1, len(a)), NP[dst]), a=_row(a, src), b=_row(b, src))["d"]

    _same(run("f32", "f16", [1.5, -3, 70000, INF, NAN, 65519, 2049, -0.0, 1e-9],
              [1, 1, 1, 0, 0, 0, 0, 0.0, 0]), [2.5, 0, 65504, INF, NAN, 65504, 2048, 0.0, 0.0])
    assert list(run("f16", "i8", [1.5, 3.5, 200, -5, NAN, INF, 0.5, -INF], [1, 0, 0, 0, 0, 0, 0, 0])[0]) \
        == [2, 4, 127, 0, 0, 127, 0, 0]
    assert list(run("i16", "i8", [30000, 100, 100, -1, -32768, 127], [30000, 27, 28, 0, -1, 0])[0]) \
        == [0, 127, 127, 0, 127, 127]                        # sums wrap: -32768 - 1 = 32767


def test_tadddeqrelu() -> None:
    t32, t16 = _t(6, "i32"), _t(6, "f16")
    text = (f"kernel @k(%d : {t16}, %a : {t32}, %b : {t32}, %s : f32) {{\n"
            f"  %d = tadddeqrelu %a, %b, %s : ({t32}, {t32}, f32) -> {t16}\n}}\n")
    a, b = _row([2, -3, 2 ** 31 - 1, 1000, 16777217, 3], "i32"), _row([10, 1, 1, 0, 0, 0], "i32")
    out = _both(text, d=np.zeros((1, 6), np.float16), a=a, b=b, s=0.5)
    _same(out["d"], [6, 0, 0, 500, 65504, 1.5])
    out = _both(text, d=np.zeros((1, 6), np.float16), a=a, b=b, s=INF)
    _same(out["d"], [INF, 0, 0, INF, INF, INF])
    out = _both(text, d=np.zeros((1, 6), np.float16), a=_row([0, 0, 0, 0, 0, 0], "i32"), b=b * 0, s=INF)
    assert np.isnan(out["d"].astype(np.float32)).all()        # 0 * inf


# ----------------------------------------------------------------------------- TPAIRREDUCESUM


@pytest.mark.parametrize("row,want", [([1, 2, 3, 4, 5], [3, 7, 5, 0, 0]), ([1, 2, 3, 4], [3, 7, 0, 0]),
                                      ([-0.0], [0.0]), ([-0.0, -0.0, 2], [-0.0, 2, 0])])
def test_tpairreducesum(row: list, want: list) -> None:
    t = _t(len(row), "f32")
    text = f"kernel @k(%d : {t}, %a : {t}) {{\n  %d = tpairreducesum %a : {t} -> {t}\n}}\n"
    _same(_both(text, d=np.full((1, len(row)), 9, np.float32), a=_row(row, "f32"))["d"], want)
    inplace = f"kernel @k(%a : {t}) {{\n  %a = tpairreducesum %a : {t} -> {t}\n}}\n"
    _same(_both(inplace, a=_row(row, "f32"))["a"], want)


def test_tpairreducesum_valid_region_and_f16() -> None:
    src, dst = _t(4, "f16", rows=2), _t(4, "f16", rows=2, valid="2x3")
    text = f"kernel @k(%d : {dst}, %a : {src}) {{\n  %d = tpairreducesum %a : {src} -> {dst}\n}}\n"
    a = np.array([[1, 2, 3, 100], [65504, 65504, 1, 2.0 ** -11]], np.float16)
    out = _both(text, valid={"d": (2, 3)}, d=np.full((2, 4), 9, np.float16), a=a)["d"]
    _same(out[:, :3], [3, 3, 0, INF, 1.0, 0])


# ----------------------------------------------------------------------------- TPOW / TPOWS

FLOAT_EDGES = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, 1 / 3, 10.0, -8.0, 1e-40, 100.0]


@pytest.mark.parametrize("d", ["f32", "f16", "bf16"])
def test_tpow_float_grid(d: str) -> None:
    n = len(FLOAT_EDGES)
    t = _t(n * n, d)
    text = f"kernel @k(%d : {t}, %a : {t}, %b : {t}) {{\n  %d = tpow %a, %b : ({t}, {t}) -> {t}\n}}\n"
    base = _row([x for x in FLOAT_EDGES for _ in FLOAT_EDGES], d)
    exp = _row([y for _ in FLOAT_EDGES for y in FLOAT_EDGES], d)
    code, got = run_program(text, "llvm", {"d": np.zeros_like(base), "a": base, "b": exp})
    code_r, want = run_program(text, "reference", {"d": np.zeros_like(base), "a": base, "b": exp})
    assert code is None and code_r is None
    g, w = got["d"].astype(np.float64), want["d"].astype(np.float64)
    assert (np.isnan(g) == np.isnan(w)).all()
    special = np.isinf(w) | (w == 0)
    assert (g[special] == w[special]).all() and (np.signbit(g[special]) == np.signbit(w[special])).all()
    if d == "f32":
        ok = ~np.isnan(w)
        np.testing.assert_array_equal(got["d"][ok], want["d"][ok])   # libm pow in f64, rounded once
    else:                                                            # f64 -> f32 -> narrow: within 1 ulp
        finite = np.isfinite(w) & (w != 0)
        assert (np.abs(g[finite] - w[finite]) <= np.abs(w[finite]) * 2.0 ** -7).all()


def test_tpow_float_hand_cases() -> None:
    base = [2, 2, -8, -2, 0.0, -0.0, -0.0, NAN, 1, -1, 0.5, 2, INF, -INF]
    exp = [10, 0.5, 1 / 3, 3, -1, -1, 3, 0.0, NAN, INF, INF, -INF, -1, 3]
    t = _t(len(base), "f32")
    text = f"kernel @k(%d : {t}, %a : {t}, %b : {t}) {{\n  %d = tpow %a, %b, %d : ({t}, {t}, {t}) -> {t}\n}}\n"
    out = _both(text, d=np.zeros((1, len(base)), np.float32), a=_row(base, "f32"), b=_row(exp, "f32"))
    _same(out["d"], [1024, float(np.float32(math.sqrt(2))), NAN, -8, INF, -INF, -0.0, 1, 1, 1, 0.0, 0.0,
                     0.0, -INF])


INT_EDGES = {"i8": [-128, -3, -2, -1, 0, 1, 2, 3, 7, 127], "u8": [0, 1, 2, 3, 5, 128, 200, 255],
             "i16": [-32768, -3, -1, 0, 1, 2, 3, 15, 16, 32767], "u16": [0, 1, 3, 16, 65535],
             "i32": [-2 ** 31, -7, -1, 0, 1, 2, 3, 31, 40, 2 ** 31 - 1], "u32": [0, 1, 3, 31, 2 ** 32 - 1]}


@pytest.mark.parametrize("d", sorted(INT_EDGES))
def test_tpow_integer_grid(d: str) -> None:
    v = INT_EDGES[d]
    pairs = list(itertools.product(v, repeat=2))
    t = _t(len(pairs), d)
    text = f"kernel @k(%d : {t}, %a : {t}, %b : {t}) {{\n  %d = tpow %a, %b : ({t}, {t}) -> {t}\n}}\n"
    base, exp = _row([p[0] for p in pairs], d), _row([p[1] for p in pairs], d)
    out = _both(text, d=np.zeros_like(base), a=base, b=exp)["d"][0]
    bits = np.dtype(NP[d]).itemsize * 8
    for (x, e), g in zip(pairs, out):                       # independent expectation with Python ints
        if e >= 0:
            want = pow(x, e, 2 ** bits)
        else:
            want = 1 if x == 1 else (-1 if e % 2 else 1) if x == -1 else 0
        assert int(g) % 2 ** bits == want % 2 ** bits, (x, e, g)


def test_tpows_scalar_exponent() -> None:
    t = _t(4, "i16")
    text = f"kernel @k(%d : {t}, %a : {t}, %s : i16) {{\n  %d = tpows %a, %s : ({t}, i16) -> {t}\n}}\n"
    out = _both(text, d=np.zeros((1, 4), np.int16), a=_row([2, -3, 40, 0], "i16"), s=3)
    assert list(out["d"][0]) == [8, -27, 64000 - 65536, 0]
    tf = _t(4, "f32")
    text = f"kernel @k(%d : {tf}, %a : {tf}, %s : f32) {{\n  %d = tpows %a, %s : ({tf}, f32) -> {tf}\n}}\n"
    out = _both(text, d=np.zeros((1, 4), np.float32), a=_row([4, 9, -8, 0.0], "f32"), s=0.5)
    _same(out["d"], [2, 3, NAN, 0.0])
