"""Shape rules as the public kernels have them: elementwise, tile-scalar and column-expand
operands need covering valid regions, not equal static shapes, and a column reduction may
write into a statically taller dst. Each case runs on the reference and the llvm backend and
is compared with numpy written here; the rules that stay stricter still report their codes."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError

from llvm_support import run_program

BACKENDS = ("reference", "llvm")


def _kernel(params: dict[str, str], line: str) -> str:
    head = ", ".join(f"%{n} : {t}" for n, t in params.items())
    return f"kernel @k({head}) {{\n  {line}\n}}\n"


def _run(text: str, backend: str, args: dict[str, Any]) -> dict[str, np.ndarray]:
    code, out = run_program(text, backend, args)
    assert code is None, f"{backend}: {code}"
    return out


def _arr(shape: tuple[int, int], seed: int, d: Any = np.float32, lo: int = -9, hi: int = 9) -> np.ndarray:
    return np.random.default_rng(seed).integers(lo, hi, size=shape).astype(d)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tadd_sources_of_other_static_shapes(backend: str) -> None:
    d, a, b = "!pto.tile<8x16xf32, valid=8x8>", "!pto.tile<16x8xf32>", "!pto.tile<8x32xf32, valid=8x8>"
    text = _kernel({"dst": d, "a": a, "b": b}, f"%dst = tadd %a, %b : ({a}, {b}) -> {d}")
    x, y = _arr((16, 8), 1), _arr((8, 32), 2)
    out = _run(text, backend, {"dst": np.zeros((8, 16), np.float32), "a": x, "b": y})
    np.testing.assert_array_equal(out["dst"][:, :8], x[:8, :8] + y[:, :8])


@pytest.mark.parametrize("backend", BACKENDS)
def test_unary_into_a_wider_dst(backend: str) -> None:
    d, s = "!pto.tile<4x32xf32, valid=4x8>", "!pto.tile<8x8xf32>"
    text = _kernel({"dst": d, "src": s}, f"%dst = tabs %src : ({s}) -> {d}")
    x = _arr((8, 8), 3)
    out = _run(text, backend, {"dst": np.zeros((4, 32), np.float32), "src": x})
    np.testing.assert_array_equal(out["dst"][:, :8], np.abs(x[:4]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_tadds_and_trems_across_static_shapes(backend: str) -> None:
    d, s = "!pto.tile<16x16xf32, valid=4x8>", "!pto.tile<4x8xf32>"
    text = _kernel({"dst": d, "src": s, "s": "f32"}, f"%dst = tadds %src, %s : ({s}, f32) -> {d}")
    x = _arr((4, 8), 4)
    out = _run(text, backend, {"dst": np.zeros((16, 16), np.float32), "src": x, "s": 1.5})
    np.testing.assert_array_equal(out["dst"][:4, :8], x + np.float32(1.5))
    d, s = "!pto.tile<8x8xi32>", "!pto.tile<8x16xi32, valid=8x8>"
    text = _kernel({"dst": d, "src": s, "s": "i32"}, f"%dst = trems %src, %s : ({s}, i32) -> {d}")
    x = _arr((8, 16), 5, np.int32, -20, 20)
    out = _run(text, backend, {"dst": np.zeros((8, 8), np.int32), "src": x, "s": 3})
    # floored: the result takes the divisor's sign (-7 rem 3 = 2)
    want = x[:, :8] - np.floor(x[:, :8] / 3).astype(np.int32) * 3
    np.testing.assert_array_equal(out["dst"], want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_colexpand_full_operand_of_another_shape(backend: str) -> None:
    d, a, v = "!pto.tile<4x8xf32>", "!pto.tile<8x16xf32, valid=4x8>", "!pto.tile<1x8xf32>"
    text = _kernel({"dst": d, "a": a, "v": v}, f"%dst = tcolexpandmul %a, %v : ({a}, {v}) -> {d}")
    x, y = _arr((8, 16), 6), _arr((1, 8), 7)
    out = _run(text, backend, {"dst": np.zeros((4, 8), np.float32), "a": x, "v": y})
    np.testing.assert_array_equal(out["dst"], x[:4, :8] * y)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op,fn", [("tcolsum", np.sum), ("tcolmax", np.max)])
def test_column_reduction_into_a_taller_dst(backend: str, op: str, fn: Any) -> None:
    d, s = "!pto.tile<4x16xf32, valid=1x16>", "!pto.tile<8x16xf32, valid=6x16>"
    text = _kernel({"dst": d, "src": s}, f"%dst = {op} %src : ({s}) -> {d}")
    x = _arr((8, 16), 8)
    out = _run(text, backend, {"dst": np.zeros((4, 16), np.float32), "src": x})
    np.testing.assert_array_equal(out["dst"][0], fn(x[:6], axis=0))


@pytest.mark.parametrize("text,code", [
    # a column reduction's valid region is still exactly 1 x C
    (_kernel({"dst": "!pto.tile<4x16xf32, valid=2x16>", "src": "!pto.tile<8x16xf32>"},
             "%dst = tcolsum %src : (!pto.tile<8x16xf32>) -> !pto.tile<4x16xf32, valid=2x16>"),
     "STRUCT_VALID_REGION"),
    # sources still cover dst's valid region
    (_kernel({"dst": "!pto.tile<8x16xf32>", "src": "!pto.tile<4x16xf32>"},
             "%dst = texp %src : (!pto.tile<4x16xf32>) -> !pto.tile<8x16xf32>"), "STRUCT_VALID_REGION"),
    # a mask of another static shape must still cover dst's valid region
    (_kernel({"dst": "!pto.tile<8x16xf32>", "m": "!pto.tile<8x32xi1, valid=8x8>", "a": "!pto.tile<8x16xf32>",
              "b": "!pto.tile<8x16xf32>"},
             "%dst = tsel %m, %a, %b : (!pto.tile<8x32xi1, valid=8x8>, !pto.tile<8x16xf32>, "
             "!pto.tile<8x16xf32>) -> !pto.tile<8x16xf32>"), "STRUCT_VALID_REGION"),
])
def test_rules_that_stay(text: str, code: str) -> None:
    with pytest.raises(PTOError) as e:
        pto.compile(pto.parse(text), backend="reference", profile="cpu")
    assert e.value.code == code
