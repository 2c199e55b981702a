"""The llvm backend's elementwise and tile-scalar rules against the reference backend on
hand-picked edge cases (integer wrap and division by zero, remainders, shifts, IEEE
min/max and compares, bit-exact selects, valid regions, error codes), and a fused chain
that must vectorise."""
from __future__ import annotations

import pathlib

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
from llvm_support import run_both
from openpto.backends import llvm
from openpto.backends.llvm import target
from openpto.isa.diagnostics import PTOError

BF16 = ml_dtypes.bfloat16


def _tile(shape: tuple[int, int], d: str, valid: str = "") -> str:
    return f"!pto.tile<{shape[0]}x{shape[1]}x{d}{', valid=' + valid if valid else ''}>"


_run_both = run_both


def _same_bits(a: np.ndarray, b: np.ndarray) -> None:
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize]
    np.testing.assert_array_equal(a.view(u), b.view(u))


def _binary(mn: str, d: str, a: np.ndarray, b: np.ndarray, tmp: pathlib.Path, attrs: str = "") -> None:
    t = _tile(a.shape, d)
    text = (f"kernel @k(%dst : {t}, %a : {t}, %b : {t}) {{\n"
            f"  %dst = {mn} %a, %b {attrs}: ({t}, {t}) -> {t}\n}}\n")
    ref, got = _run_both(text, tmp, dst=np.zeros_like(a), a=a, b=b)
    _same_bits(ref["dst"], got["dst"])


INT_EDGES = {
    "i8": np.array([-128, -1, 0, 1, 127, 5, -7, 100], np.int8),
    "u16": np.array([0, 1, 65535, 32768, 7, 3, 100, 2], np.uint16),
    "i32": np.array([-2**31, -1, 0, 1, 2**31 - 1, 7, -9, 33], np.int32),
}


@pytest.mark.parametrize("mn", ["TADD", "TSUB", "TMUL", "TDIV", "TMIN", "TMAX", "TSHL", "TSHR", "TREM", "TFMOD"])
@pytest.mark.parametrize("d", sorted(INT_EDGES))
def test_integer_edges(mn: str, d: str, tmp_path: pathlib.Path) -> None:
    if mn in ("TREM", "TFMOD") and d == "u16":
        return                                   # signed-only instructions
    v = INT_EDGES[d]
    a = np.repeat(v, len(v)).reshape(8, 8)       # every pair, divisor 0 and -1 included
    b = np.tile(v, len(v)).reshape(8, 8)
    _binary(mn, d, a, b, tmp_path)


FLOATS = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5, 3.0, -3.0, 1e-40, 7.0],
                  np.float32)


@pytest.mark.parametrize("mn", ["TMIN", "TMAX", "TDIV", "TREM", "TFMOD", "TPRELU", "TSUB"])
@pytest.mark.parametrize("d", ["f32", "f16", "bf16"])
def test_float_edges(mn: str, d: str, tmp_path: pathlib.Path) -> None:
    np_d = {"f32": np.float32, "f16": np.float16, "bf16": BF16}[d]
    n = len(FLOATS)
    a = np.repeat(FLOATS, n).reshape(n, n).astype(np_d)
    b = np.tile(FLOATS, n).reshape(n, n).astype(np_d)
    t = _tile(a.shape, d)
    text = (f"kernel @k(%dst : {t}, %a : {t}, %b : {t}) {{\n"
            f"  %dst = {mn.lower()} %a, %b : ({t}, {t}) -> {t}\n}}\n")
    ref, got = _run_both(text, tmp_path, dst=np.zeros_like(a), a=a, b=b)
    r, g = ref["dst"].astype(np.float32), got["dst"].astype(np.float32)
    assert (np.isnan(r) == np.isnan(g)).all()
    ok = ~np.isnan(r)
    _same_bits(r[ok], g[ok])                     # -0 vs +0 counts


@pytest.mark.parametrize("mode", ["EQ", "NE", "LT", "LE", "GT", "GE"])
def test_tcmp_nan_and_zero(mode: str, tmp_path: pathlib.Path) -> None:
    n = len(FLOATS)
    a = np.repeat(FLOATS, n).reshape(n, n)
    b = np.tile(FLOATS, n).reshape(n, n)
    m, t = _tile(a.shape, "i1"), _tile(a.shape, "f32")
    text = (f"kernel @k(%dst : {m}, %a : {t}, %b : {t}) {{\n"
            f"  %dst = tcmp %a, %b {{cmpMode = #pto.cmp<{mode}>}} : ({t}, {t}) -> {m}\n}}\n")
    ref, got = _run_both(text, tmp_path, dst=np.zeros(a.shape, bool), a=a, b=b)
    np.testing.assert_array_equal(ref["dst"], got["dst"])


def test_tsel_keeps_nan_payloads(tmp_path: pathlib.Path) -> None:
    bits = np.array([0xFFC1, 0x7F81, 0x7FFF, 0x8000, 0x3F80, 0xFF80, 0x0001, 0x7FC0], np.uint16)
    a = np.tile(bits, 8).reshape(8, 8).view(BF16)
    b = a[::-1].copy()
    mask = (np.arange(64).reshape(8, 8) % 3) == 0
    t, m = _tile(a.shape, "bf16"), _tile(a.shape, "i1")
    text = (f"kernel @k(%dst : {t}, %m : {m}, %a : {t}, %b : {t}) {{\n"
            f"  %dst = tsel %m, %a, %b : ({m}, {t}, {t}) -> {t}\n}}\n")
    ref, got = _run_both(text, tmp_path, dst=np.zeros_like(a), m=mask, a=a, b=b)
    _same_bits(ref["dst"], got["dst"])
    text = (f"kernel @k(%dst : {t}, %m : {m}, %a : {t}, %s : bf16) {{\n"
            f"  %dst = tsels %m, %a, %s : ({m}, {t}, bf16) -> {t}\n}}\n")
    ref, got = _run_both(text, tmp_path, dst=np.zeros_like(a), m=mask, a=a, s=-0.0)
    _same_bits(ref["dst"], got["dst"])


def test_selects_fuse_with_arithmetic_and_keep_bits(tmp_path: pathlib.Path) -> None:
    """cmp -> adds -> sel -> sel -> sels in one loop: a select reads a value an earlier member
    computed (as stored, rounded to bf16) and the bits another select wrote (NaN payloads)."""
    bits = np.array([0xFFC1, 0x7F81, 0x7FFF, 0x8000, 0x3F80, 0xFF80, 0x0001, 0x7FC0, 0x4049, 0xC2F7], np.uint16)
    a = np.tile(bits, 8).reshape(8, 10).view(BF16)
    b = np.roll(a, 3, axis=1).copy()
    t, m = _tile(a.shape, "bf16"), _tile(a.shape, "i1")
    text = (f"kernel @k(%d : {t}, %e : {t}, %c : {t}, %m : {m}, %a : {t}, %b : {t}) {{\n"
            f"  %m = tcmp %a, %b {{cmpMode = #pto.cmp<GT>}} : ({t}, {t}) -> {m}\n"
            f"  %c = tadds %a, 1.5 : ({t}, bf16) -> {t}\n"
            f"  %d = tsel %m, %c, %a : ({m}, {t}, {t}) -> {t}\n"
            f"  %e = tsel %m, %b, %d : ({m}, {t}, {t}) -> {t}\n"
            f"  %d = tsels %m, %e, -0.0 : ({m}, {t}, bf16) -> {t}\n}}\n")
    ir_text = llvm.generate(pto.parse(text))[0]
    loops = [ln for ln in ir_text.splitlines() if ln.startswith("c.head")]
    assert loops == ["c.head:"], "the five instructions are not one loop"
    z = np.zeros_like(a)
    ref, got = _run_both(text, tmp_path, d=z, e=z, c=z, m=np.zeros(a.shape, bool), a=a, b=b)
    np.testing.assert_array_equal(ref["m"], got["m"])
    for name in ("d", "e"):                    # selects: every bit, NaN payloads included
        _same_bits(ref[name], got[name])
    nan = np.isnan(ref["c"].astype(np.float32))          # arithmetic: any NaN matches any NaN
    assert np.array_equal(nan, np.isnan(got["c"].astype(np.float32)))
    _same_bits(ref["c"][~nan], got["c"][~nan])


@pytest.mark.parametrize("mn, d, s", [
    ("tadds", "i8", 100), ("tmuls", "u16", 65533), ("tdivs", "i32", 0), ("tshrs", "i16", -1),
    ("tshls", "u8", 7), ("trems", "i32", -3), ("tfmods", "f32", -0.0), ("trems", "f16", 2.5),
    ("tmaxs", "f32", -0.0), ("tmins", "bf16", float("nan")), ("tlrelu", "f16", 0.1),
    ("txors", "i16", -1), ("tdivs", "f16", 1e-3), ("texpands", "bf16", 1.0 / 3.0)])
def test_tile_scalar(mn: str, d: str, s: float, tmp_path: pathlib.Path) -> None:
    rng = np.random.default_rng(1)
    np_d = {"f32": np.float32, "f16": np.float16, "bf16": BF16}.get(d, d.replace("i", "int").replace("u", "uint")
                                                                   if d[0] == "i" else "uint" + d[1:])
    if d in ("f32", "f16", "bf16"):
        a = np.concatenate([FLOATS, rng.standard_normal(52).astype(np.float32) * 8]).reshape(8, 8).astype(np_d)
    else:
        info = np.iinfo(np_d)
        a = rng.integers(info.min, info.max, (8, 8), endpoint=True).astype(np_d)
        a.flat[:3] = [info.min, 0, info.max]
    t = _tile((8, 8), d, "6x7")
    if mn == "texpands":
        text = f"kernel @k(%dst : {t}, %s : {d}) {{\n  %dst = texpands %s : ({d}) -> {t}\n}}\n"
        ref, got = _run_both(text, tmp_path, dst=np.zeros_like(a), s=s)
    else:
        text = f"kernel @k(%dst : {t}, %a : {t}, %s : {d}) {{\n  %dst = {mn} %a, %s : ({t}, {d}) -> {t}\n}}\n"
        ref, got = _run_both(text, tmp_path, dst=np.zeros_like(a), a=a, s=s)
    r, g = ref["dst"][:6, :7], got["dst"][:6, :7]
    if a.dtype.kind in "iu":
        np.testing.assert_array_equal(r, g)
    else:
        r, g = r.astype(np.float32), g.astype(np.float32)
        assert (np.isnan(r) == np.isnan(g)).all()
        _same_bits(r[~np.isnan(r)], g[~np.isnan(r)])


def test_tdivs_reverse(tmp_path: pathlib.Path) -> None:
    a = np.array([[0, 1, -1, 3, -4, 7, -2**31, 2**31 - 1]], np.int32).repeat(2, 0)
    t = _tile(a.shape, "i32")
    text = (f"kernel @k(%dst : {t}, %a : {t}, %s : i32) {{\n"
            f"  %dst = tdivs %a, %s {{reverse = true}} : ({t}, i32) -> {t}\n}}\n")
    ref, got = _run_both(text, tmp_path, dst=np.zeros_like(a), a=a, s=-7)
    np.testing.assert_array_equal(ref["dst"], got["dst"])


@pytest.mark.parametrize("rows", [8, 5])
def test_dynamic_valid_region_and_invalid_read(rows: int, tmp_path: pathlib.Path) -> None:
    """A local tile with a run-time valid row count: computed on its valid rows only, and read
    by a full-tile op as source 1: RUNTIME_INVALID_READ when it has fewer rows, as the reference."""
    big, dyn = _tile((8, 8), "f32"), _tile((8, 8), "f32", "?x8")
    text = (f"kernel @k(%dst : {big}, %a : {big}, %vr : index) {{\n"
            f"  .tile %t valid_row = %vr : {dyn}\n"
            f"  %t = tsub %a, %a : ({big}, {big}) -> {dyn}\n"
            f"  %dst = tadd %a, %t : ({big}, {dyn}) -> {big}\n}}\n")
    module = pto.parse(text)
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    results = []
    for backend, options in (("reference", {}), ("llvm", {"cache_dir": tmp_path})):
        dst = np.zeros((8, 8), np.float32)
        try:
            pto.compile(module, backend, "cpu", **options)(dst=dst, a=a.copy(), vr=rows)
            results.append(("ok", dst.tobytes()))
        except PTOError as e:
            results.append((e.code, "source 1 is read outside its valid region" in str(e)))
    assert results[0] == results[1]
    assert results[1][0] == ("ok" if rows == 8 else "RUNTIME_INVALID_READ")


def test_chain_fuses_and_vectorises(tmp_path: pathlib.Path) -> None:
    t = _tile((32, 1024), "f32")
    text = (f"kernel @k(%y : {t}, %a : {t}, %b : {t}, %c : {t}) {{\n"
            f"  %y = tmul %a, %b : ({t}, {t}) -> {t}\n"
            f"  %y = tadd %y, %c : ({t}, {t}) -> {t}\n"
            f"  %y = tmax %y, %a : ({t}, {t}) -> {t}\n}}\n")
    module = pto.parse(text)
    asm = target.assembly(llvm.generate(module)[0])
    assert "zmm" in asm or "ymm" in asm
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal((32, 1024)).astype(np.float32) for _ in range(3))
    y = np.zeros_like(a)
    pto.compile(module, "llvm", "cpu", cache_dir=tmp_path)(y=y, a=a, b=b, c=c)
    np.testing.assert_array_equal(y, np.maximum(a * b + c, a))


@pytest.mark.parametrize("mn, arity", [("tdiv", 2), ("trem", 2), ("tfmod", 2), ("texp", 1), ("tlog", 1),
                                       ("tsqrt", 1), ("trsqrt", 1), ("trecip", 1)])
@pytest.mark.parametrize("mode", ["DEFAULT", "HIGH_PRECISION"])
def test_precision_attribute(mn: str, arity: int, mode: str, tmp_path: pathlib.Path) -> None:
    """The PrecisionType attribute parses and both values meet the same contract as the
    reference: bits for the correctly rounded ones, 2 ulp for exp/log/rsqrt."""
    rng = np.random.default_rng(5)
    a = np.concatenate([FLOATS, rng.standard_normal(52).astype(np.float32) * 8]).reshape(8, 8)
    b = np.concatenate([FLOATS[::-1], rng.standard_normal(52).astype(np.float32) * 3]).reshape(8, 8)
    t = _tile(a.shape, "f32")
    ins, types = ("%a, %b", f"{t}, {t}") if arity == 2 else ("%a", t)
    text = (f"kernel @k(%dst : {t}, %a : {t}, %b : {t}) {{\n"
            f"  %dst = {mn} {ins} {{PrecisionType = #pto.precision<{mode}>}} : ({types}) -> {t}\n}}\n")
    assert f"#pto.precision<{mode}>" in pto.parse(text).to_text() or mode == "DEFAULT"
    ref, got = _run_both(text, tmp_path, dst=np.zeros_like(a), a=a, b=b)
    r, g = ref["dst"], got["dst"]
    assert (np.isnan(r) == np.isnan(g)).all()
    if mn in ("texp", "tlog", "trsqrt"):
        ok = ~np.isnan(r)
        ulp = np.abs(r[ok].view(np.int32).astype(np.int64) - g[ok].view(np.int32).astype(np.int64))
        assert (ulp <= 2).all()
    else:
        _same_bits(r[~np.isnan(r)], g[~np.isnan(r)])


def test_tdivs_precision_and_reverse(tmp_path: pathlib.Path) -> None:
    a = np.array([[3.0, -0.0, 0.5, 7.0]], np.float32).repeat(2, 0)
    t = _tile(a.shape, "f32")
    text = (f"kernel @k(%dst : {t}, %a : {t}, %s : f32) {{\n"
            f"  %dst = tdivs %a, %s {{reverse = true, PrecisionType = #pto.precision<HIGH_PRECISION>}}"
            f" : ({t}, f32) -> {t}\n}}\n")
    ref, got = _run_both(text, tmp_path, dst=np.zeros_like(a), a=a, s=1.0)
    _same_bits(ref["dst"], got["dst"])
    assert got["dst"][0].tolist() == [float(np.float32(1) / np.float32(3)), -np.inf, 2.0, float(np.float32(1 / 7))]


@pytest.mark.parametrize("mn, d, n", [("txor", "i32", 2), ("tprelu", "f32", 2), ("trem", "f32", 2),
                                      ("trsqrt", "f32", 1), ("trems", "f32", 1), ("txors", "i16", 1)])
def test_scratch_tmp_is_accepted_and_untouched(mn: str, d: str, n: int, tmp_path: pathlib.Path) -> None:
    np_d = {"i32": np.int32, "f32": np.float32, "i16": np.int16}[d]
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((4, 8)) * 50).astype(np_d)
    b = (rng.standard_normal((4, 8)) * 9 + 0.5).astype(np_d)
    if mn == "trsqrt":
        a = np.abs(a)
    t = _tile(a.shape, d)
    if mn in ("trems", "txors"):
        s = 3 if d == "i16" else 2.5
        text = (f"kernel @k(%dst : {t}, %a : {t}, %s : {d}, %t : {t}) {{\n"
                f"  %dst = {mn} %a, %s, %t : ({t}, {d}, {t}) -> {t}\n}}\n")
        ref, got = _run_both(text, tmp_path, dst=np.zeros_like(a), a=a, s=s, t=np.full_like(a, 3))
    else:
        ins, types = ("%a, %b, %t", f"{t}, {t}, {t}") if n == 2 else ("%a, %t", f"{t}, {t}")
        text = (f"kernel @k(%dst : {t}, %a : {t}, %b : {t}, %t : {t}) {{\n"
                f"  %dst = {mn} {ins} : ({types}) -> {t}\n}}\n")
        ref, got = _run_both(text, tmp_path, dst=np.zeros_like(a), a=a, b=b, t=np.full_like(a, 3))
    if mn == "trsqrt":                     # the 2 ulp contract
        assert (np.abs(ref["dst"].view(np.int32).astype(np.int64) - got["dst"].view(np.int32)) <= 2).all()
    else:
        _same_bits(ref["dst"], got["dst"])
    assert (got["t"] == 3).all() and (ref["t"] == 3).all()
