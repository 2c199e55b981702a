"""llvm backend: TMATMUL / TGEMV forms against the reference backend on hand-picked cases.

Shapes are picked to hit every path of the f32 micro-kernel (8-row blocks, single rows,
3-vector and 1-vector column blocks, the generic < 16-column edge), of the same micro-kernel on
i32 accumulators (i8 -> i32, wrapping) and the generic f64 path (fp8, MX scales); dynamic
valid regions check the
RUNTIME_INVALID_READ faults the reference semantics raise.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import RuntimeFault

NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8, "i32": np.int32,
      "u8": np.uint8, "f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}
LOC = {"dst": "acc", "acc_in": "acc", "a": "left", "b": "right", "bias": "bias", "scale_a": "left",
       "scale_b": "right"}


def _ty(shape: tuple[int, int], d: str, name: str, valid: tuple[int, int] | None = None) -> str:
    layout = {"a": ", layout=NZ", "b": ", layout=ZN", "dst": ", layout=ND", "acc_in": ", layout=ND"}.get(name, "")
    v = f", valid={valid[0]}x{valid[1]}" if valid is not None and tuple(valid) != tuple(shape) else ""
    return f"!pto.tile<{shape[0]}x{shape[1]}x{d}, loc={LOC[name]}{layout}{v}>"


def _pad(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """``x`` in the top-left corner of a rows x cols array (the rest zero)."""
    out = np.zeros((rows, cols), x.dtype)
    out[:x.shape[0], :x.shape[1]] = x
    return out


def _run_both(mnemonic: str, arrays: dict[str, np.ndarray], dtypes: dict[str, str],
              valid: dict[str, tuple[int, int]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Run ``dst = mnemonic(operands...)`` with every operand a tile parameter (static valid
    regions from ``valid``) on the reference and llvm backends; return both dst arrays."""
    valid = valid or {}
    ins = [n for n in ("acc_in", "a", "scale_a", "b", "scale_b", "bias") if n in arrays]
    if "acc_in" in ins and mnemonic.endswith("_ACC"):
        ins = ["acc_in", "a", "b"]
    params = ", ".join(f"%{n} : {_ty(arrays[n].shape, dtypes[n], n, valid.get(n))}" for n in ["dst"] + ins)
    sig = ", ".join(_ty(arrays[n].shape, dtypes[n], n, valid.get(n)) for n in ins)
    text = (f"kernel @k({params}) {{\n  %dst = {mnemonic.lower()} {', '.join('%' + n for n in ins)} : "
            f"({sig}) -> {_ty(arrays['dst'].shape, dtypes['dst'], 'dst', valid.get('dst'))}\n}}\n")
    m = pto.parse(text)
    out = []
    for backend in ("reference", "llvm"):
        vals = {n: a.copy() for n, a in arrays.items()}
        pto.compile(m, backend=backend, profile="cpu")(*[vals[n] for n in ["dst"] + ins])
        out.append(vals["dst"])
    return out[0], out[1]


def _close(want: np.ndarray, got: np.ndarray, m: int, n: int, bound: np.ndarray | None = None) -> None:
    w, g = want[:m, :n].astype(np.float64), got[:m, :n].astype(np.float64)
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(g, w)
        return
    assert (np.isnan(w) == np.isnan(g)).all()
    ok = ~np.isnan(w)
    tol = bound[:m, :n][ok] if bound is not None else 1e-5 * (1 + np.abs(w[ok]))
    with np.errstate(invalid="ignore"):
        diff = np.where(w[ok] == g[ok], 0.0, np.abs(w[ok] - g[ok]))
    assert (diff <= tol).all(), np.max(diff)


def _rand(rng: np.random.Generator, shape: tuple[int, int], d: str) -> np.ndarray:
    if d in ("i8",):
        return rng.integers(-128, 128, shape).astype(np.int8)
    if d == "i32":
        return rng.integers(-1000, 1000, shape).astype(np.int32)
    return rng.uniform(-2, 2, shape).astype(NP[d])


@pytest.mark.parametrize("m,k,n,d", [(16, 16, 16, "f32"), (40, 37, 50, "f32"), (17, 20, 35, "f32"),
                                     (24, 64, 80, "f32"), (9, 5, 128, "f32"), (3, 4, 7, "f32"),
                                     (40, 37, 50, "f16"), (17, 20, 80, "bf16")])
def test_matmul_every_blocking_path(m: int, k: int, n: int, d: str) -> None:
    rng = np.random.default_rng(m * 1000 + n)
    a, b = _rand(rng, (m, k), d), _rand(rng, (k, n), d)
    mp, kp, np_ = -(-m // 16) * 16, -(-k // 16) * 16, -(-n // 16) * 16
    arrays = {"dst": np.zeros((mp, np_), np.float32), "a": _pad(a, mp, kp), "b": _pad(b, kp, np_)}
    want, got = _run_both("TMATMUL", arrays, {"dst": "f32", "a": d, "b": d},
                          {"dst": (m, n), "a": (m, k), "b": (k, n)})
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    bound = k * np.finfo(np.float32).eps * (np.abs(a64) @ np.abs(b64)) + 1e-30
    _close(want, got, m, n, bound)
    _close(a64 @ b64, got, m, n, bound)


def test_f32_acc_in_place_and_bias() -> None:
    rng = np.random.default_rng(1)
    m, k, n = 32, 32, 64
    a, b = _rand(rng, (m, k), "f32"), _rand(rng, (k, n), "f32")
    c = _rand(rng, (m, n), "f32")
    f32 = {"dst": "f32", "acc_in": "f32", "a": "f32", "b": "f32", "bias": "f32"}
    want, got = _run_both("TMATMUL_ACC", {"dst": c, "acc_in": c, "a": a, "b": b}, f32)
    _close(want, got, m, n)
    bias = _rand(rng, (1, n), "f32")
    want, got = _run_both("TMATMUL_BIAS", {"dst": np.zeros((m, n), np.float32), "a": a, "b": b, "bias": bias}, f32)
    _close(want, got, m, n)
    _close(a.astype(np.float64) @ b + bias, got, m, n)


def test_f32_special_values_propagate() -> None:
    m, k, n = 16, 8, 48
    a = np.ones((m, k), np.float32)
    b = np.ones((k, n), np.float32)
    a[0, 0] = np.nan            # row 0 all NaN
    a[1, 0] = np.inf            # row 1: inf * 1 + ... = inf, but inf * 0 = NaN in column 3
    b[0, 3] = 0
    a[2, 0], a[2, 1] = np.inf, -np.inf     # inf - inf = NaN
    want, got = _run_both("TMATMUL", {"dst": np.zeros((m, n), np.float32), "a": a, "b": b},
                          {"dst": "f32", "a": "f32", "b": "f32"})
    assert np.isnan(got[0]).all() and np.isnan(got[1, 3]) and np.isinf(got[1, 0]) and np.isnan(got[2]).all()
    _close(want, got, m, n)


def test_f32_big_terms_round_once_to_inf() -> None:
    a = np.full((16, 8), 3e38, np.float32)
    b = np.full((8, 16), 2.0, np.float32)
    _, got = _run_both("TMATMUL", {"dst": np.zeros((16, 16), np.float32), "a": a, "b": b},
                       {"dst": "f32", "a": "f32", "b": "f32"})
    assert np.isinf(got).all() and (got > 0).all()


@pytest.mark.parametrize("d", ["f16", "bf16", "f8e4m3", "f8e5m2"])
def test_narrow_float_inputs(d: str) -> None:
    rng = np.random.default_rng(2)
    m, k, n = 16, 32, 32
    a, b = _rand(rng, (m, k), d), _rand(rng, (k, n), d)
    want, got = _run_both("TMATMUL", {"dst": np.zeros((m, n), np.float32), "a": a, "b": b},
                          {"dst": "f32", "a": d, "b": d})
    _close(want, got, m, n)


def test_i8_accumulates_in_i32_and_wraps() -> None:
    m, k, n = 16, 32, 16
    a = np.full((m, k), -128, np.int8)
    b = np.full((k, n), -128, np.int8)
    acc = np.full((m, n), 2**31 - 100, np.int32)
    i32 = {"dst": "i32", "acc_in": "i32", "a": "i8", "b": "i8", "bias": "i32"}
    want, got = _run_both("TMATMUL_ACC", {"dst": acc, "acc_in": acc, "a": a, "b": b}, i32)
    assert got[0, 0] == np.int32(np.int64(2**31 - 100 + 32 * 16384) - 2**32)
    _close(want, got, m, n)
    rng = np.random.default_rng(3)
    a, b, bias = _rand(rng, (m, k), "i8"), _rand(rng, (k, n), "i8"), _rand(rng, (1, n), "i32")
    want, got = _run_both("TMATMUL_BIAS", {"dst": np.zeros((m, n), np.int32), "a": a, "b": b, "bias": bias}, i32)
    _close(want, got, m, n)


@pytest.mark.parametrize("m,k,n", [(16, 16, 16), (40, 37, 50), (17, 20, 35), (24, 64, 80), (9, 5, 128),
                                   (3, 4, 7), (10, 600, 48), (16, 1100, 16)])
def test_i8_every_blocking_path_is_exact(m: int, k: int, n: int) -> None:
    """The integer micro-kernel's blocks and edges equal the exact (wrapping) int64 product."""
    rng = np.random.default_rng(m * 100 + n)
    a, b = _rand(rng, (m, k), "i8"), _rand(rng, (k, n), "i8")
    mp, kp, np_ = -(-m // 16) * 16, -(-k // 32) * 32, -(-n // 32) * 32
    arrays = {"dst": np.zeros((mp, np_), np.int32), "a": _pad(a, mp, kp), "b": _pad(b, kp, np_)}
    want, got = _run_both("TMATMUL", arrays, {"dst": "i32", "a": "i8", "b": "i8"},
                          {"dst": (m, n), "a": (m, k), "b": (k, n)})
    _close(want, got, m, n)
    _close((a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), got, m, n)


def test_i8_sums_past_f32_integers_stay_exact() -> None:
    """-127 * -127 over K = 1041 is 16,790,289: odd and above 2**24, where f32 holds only even
    integers; the kernel's K chunks keep it exact."""
    m, k, n = 16, 1041, 16
    a = np.full((m, 1056), 0, np.int8)
    b = np.full((1056, 32), 0, np.int8)
    a[:, :k], b[:k, :n] = -127, -127
    want, got = _run_both("TMATMUL", {"dst": np.zeros((m, 32), np.int32), "a": a, "b": b},
                          {"dst": "i32", "a": "i8", "b": "i8"}, {"dst": (m, n), "a": (m, k), "b": (k, n)})
    assert (got[:m, :n] == 16129 * k).all()
    _close(want, got, m, n)


@pytest.mark.parametrize("form", ["TGEMV", "TGEMV_ACC", "TGEMV_BIAS"])
@pytest.mark.parametrize("d", ["f32", "f16"])
def test_gemv_forms(form: str, d: str) -> None:
    rng = np.random.default_rng(4)
    k, n = 48, 64
    arrays = {"dst": np.zeros((1, n), np.float32), "a": _rand(rng, (1, k), d), "b": _rand(rng, (k, n), d)}
    if form == "TGEMV_ACC":
        arrays["acc_in"] = arrays["dst"] = _rand(rng, (1, n), "f32")
    if form == "TGEMV_BIAS":
        arrays["bias"] = _rand(rng, (1, n), "f32")
    want, got = _run_both(form, arrays, {"dst": "f32", "acc_in": "f32", "bias": "f32", "a": d, "b": d})
    _close(want, got, 1, n)


@pytest.mark.parametrize("form", ["TMATMUL_MX", "TGEMV_MX"])
def test_mx_scales_including_nan_and_tiny(form: str) -> None:
    rng = np.random.default_rng(5)
    m, k, n = (1 if form == "TGEMV_MX" else 16), 64, 16
    a, b = _rand(rng, (m, k), "f8e4m3"), _rand(rng, (k, n), "f8e5m2")
    sa = rng.integers(100, 150, (m, 2)).astype(np.uint8)
    sb = rng.integers(100, 150, (2, n)).astype(np.uint8)
    sa[0, 1] = 255                 # NaN scale: row 0 is NaN everywhere
    sb[0, 3] = 0                   # 2**-127, applied exactly
    sb[1, 3] = 254                 # 2**127
    arrays = {"dst": np.zeros((m, n), np.float32), "a": a, "scale_a": sa, "b": b, "scale_b": sb}
    want, got = _run_both(form, arrays, {"dst": "f32", "a": "f8e4m3", "scale_a": "u8", "b": "f8e5m2",
                                         "scale_b": "u8"})
    assert np.isnan(got[0]).all()
    _close(want, got, m, n)


def _dynamic_kernel(extra: str = "") -> str:
    """b's valid rows come from %kb at run time, A's valid cols from %ka."""
    L = "!pto.tile<16x32xf32, loc=left, layout=NZ, valid=16x?>"
    R = "!pto.tile<32x16xf32, loc=right, layout=ZN, valid=?x16>"
    M = "!pto.tile<16x32xf32, loc=mat, layout=NZ, valid=16x?>"
    MB = "!pto.tile<32x16xf32, loc=mat, layout=NZ, valid=?x16>"
    C = "!pto.tile<16x16xf32, loc=acc, layout=NZ>"
    G = "!pto.memref<?x?xf32>"
    return f"""
kernel @k(%x : {G}, %y : {G}, %z : {G}, %ka : index, %kb : index) {{
  .tile %am valid_col = %ka : {M}
  .tile %bm valid_row = %kb : {MB}
  .tile %l valid_col = %ka : {L}
  .tile %r valid_row = %kb : {R}
  .tile %c : {C}
  %am = tload %x[0, 0] : ({G}) -> {M}
  %bm = tload %y[0, 0] : ({G}) -> {MB}
  %l = tmov %am : ({M}) -> {L}
  %r = tmov %bm : ({MB}) -> {R}
  %c = tmatmul %l, %r : ({L}, {R}) -> {C}
  tstore %z[0, 0], %c : ({G}, {C})
}}
"""


def test_dynamic_k_and_invalid_read_of_b() -> None:
    m = pto.parse(_dynamic_kernel())
    rng = np.random.default_rng(6)
    x, y = _rand(rng, (16, 32), "f32"), _rand(rng, (32, 16), "f32")
    exe = pto.compile(m, backend="llvm", profile="cpu")
    for ka in (0, 5, 32):
        z = np.zeros((16, 16), np.float32)
        exe(x, y, z, ka, 32)
        _close(x[:, :ka].astype(np.float64) @ y[:ka], z, 16, 16)
    errs = []
    for backend in ("reference", "llvm"):
        with pytest.raises(RuntimeFault) as e:
            pto.compile(m, backend=backend, profile="cpu")(x, y, np.zeros((16, 16), np.float32), 20, 10)
        errs.append(e.value)
    assert errs[1].code == errs[0].code == "RUNTIME_INVALID_READ"
    assert "b is read outside its valid region" in errs[1].message
    assert errs[1].expected == errs[0].expected and errs[1].actual == errs[0].actual
