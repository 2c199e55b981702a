"""TPACK: integer narrowing by truncation, on the reference semantics (hand-computed bit
patterns) and on llvm against the reference."""
from __future__ import annotations

import numpy as np
import pytest

from llvm_support import run_program

from openpto.isa import checks, profiles
from openpto.isa.registry import get
from openpto.isa.types import parse_type
from openpto.isa.values import Tile


def _tile(spec: str, data: object = None, valid: tuple[int, int] | None = None) -> Tile:
    t = parse_type(spec)
    arr = np.zeros(t.shape, t.dtype.np_dtype) if data is None else np.asarray(data).astype(t.dtype.np_dtype)
    return Tile(t, arr, valid or t.valid)


def test_keeps_the_low_bits() -> None:
    src = _tile("!pto.tile<1x8xi32>", [[0x12345678, -1, 0x7FFF8000, -0x80000000, 255, 256, -129, 0x10000]])
    dst = _tile("!pto.tile<1x8xi16>")
    get("TPACK").semantics(dst=dst, src=src)
    assert dst.data.view(np.uint16).tolist() == [[0x5678, 0xFFFF, 0x8000, 0x0000, 0x00FF, 0x0100, 0xFF7F, 0]]
    u8 = _tile("!pto.tile<1x8xu8>")
    get("TPACK").semantics(dst=u8, src=src)
    assert u8.data.tolist() == [[0x78, 0xFF, 0x00, 0x00, 0xFF, 0x00, 0x7F, 0x00]]


def test_only_dst_valid_region_is_written_and_read() -> None:
    src = _tile("!pto.tile<2x8xi16>", np.full((2, 8), 0x1FF), valid=(2, 4))
    dst = _tile("!pto.tile<2x8xi8>", valid=(1, 3))
    get("TPACK").semantics(dst=dst, src=src)
    assert dst.data[0, :3].tolist() == [-1, -1, -1]
    with pytest.raises(Exception) as e:
        get("TPACK").semantics(dst=_tile("!pto.tile<2x8xi8>"), src=src)
    assert getattr(e.value, "code", None) == "RUNTIME_INVALID_READ"


@pytest.mark.parametrize("dst, src, ok", [("i16", "i32", True), ("u8", "i16", True), ("i8", "u32", True),
                                          ("i32", "i16", False), ("i16", "i16", False), ("f16", "f32", False)])
def test_only_narrowing_integer_pairs_are_legal(dst: str, src: str, ok: bool) -> None:
    types = {"dst": parse_type(f"!pto.tile<16x32x{dst}>"), "src": parse_type(f"!pto.tile<16x32x{src}>")}
    instr = get("TPACK")
    errors = checks.check_structure(instr, types, {}) + checks.check_legality(instr, types, {}, profiles.get("cpu"))
    assert (not errors) is ok, errors


PROGRAM = """
kernel @k(%x : !pto.memref<4x32x{s}>, %y : !pto.memref<4x32x{d}>) {{
  .tile %a : !pto.tile<4x32x{s}>
  .tile %b : !pto.tile<4x32x{d}, valid=3x29>
  %a = tload %x[0, 0] : (!pto.memref<4x32x{s}>) -> !pto.tile<4x32x{s}>
  %b = tpack %a : (!pto.tile<4x32x{s}>) -> !pto.tile<4x32x{d}, valid=3x29>
  tstore %y[0, 0], %b
}}
"""


@pytest.mark.parametrize("d, s", [("i8", "i32"), ("u16", "i32"), ("i8", "u16"), ("u8", "i16")])
def test_llvm_matches_a_numpy_truncation(d: str, s: str) -> None:
    rng = np.random.default_rng(3)
    info = np.iinfo(np.dtype({"i32": np.int32, "i16": np.int16, "u16": np.uint16}[s]))
    x = rng.integers(info.min, info.max, size=(4, 32), endpoint=True).astype(info.dtype)
    want = x[:3, :29].astype(np.int64) % (1 << np.dtype(np.dtype(d.replace("i", "int").replace("u", "uint")
                                                                  .replace("uintnt", "uint"))).itemsize * 8)
    for backend in ("reference", "llvm"):
        ydt = {"i8": np.int8, "u16": np.uint16, "u8": np.uint8}[d]
        code, out = run_program(PROGRAM.format(s=s, d=d), backend, {"x": x, "y": np.zeros((4, 32), ydt)})
        assert code is None
        got = out["y"][:3, :29].astype(np.int64) % (1 << (np.dtype(ydt).itemsize * 8))
        np.testing.assert_array_equal(got, want, err_msg=backend)
