"""The llvm backend's machinery: registration, the disk cache (a warm start never runs LLVM),
run-time faults with source locations, blocks on threads, scalar ops and control flow
against the reference backend, and generated code that vectorises."""
from __future__ import annotations

import pathlib
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import openpto as pto
from openpto.backends import get
from openpto.isa import Family, all_instructions, by_family
from openpto.backends.llvm import LLVMBackend, cache as llvm_cache, generate, target

ROOT = pathlib.Path(__file__).resolve().parent.parent

COPY = """
kernel @copy(%x : !pto.memref<?x64xf32>, %y : !pto.memref<?x64xf32>, %r0 : index, %rows : index) {
  .const %c0 = 0 : index
  .const %c8 = 8 : index
  .tile %t : !pto.tile<8x64xf32>
  scf.for %r = %r0 to %rows step %c8 {
    %t = tload %x[%r, %c0] : (!pto.memref<?x64xf32>) -> !pto.tile<8x64xf32>
    tstore %y[%r, %c0], %t : (!pto.memref<?x64xf32>, !pto.tile<8x64xf32>)
  }
}
"""


def test_registered_and_covers_every_instruction() -> None:
    b = get("llvm")
    assert isinstance(b, LLVMBackend) and b.is_available() == (True, "")
    # every instruction, the communication family included (its rules call back into the
    # run's World, backends/llvm/commhook.py)
    missing = {i.mnemonic for i in all_instructions() if i.mnemonic not in b.rules}
    assert missing == set()
    assert {i.mnemonic for i in by_family()[Family.COMM]} <= set(b.rules)
    have, total = b.coverage()
    assert have == total


def test_disk_cache_warm_start_skips_llvm(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = pto.parse(COPY)
    cold = pto.compile(m, "llvm", cache_dir=tmp_path)
    assert cold.compiled and list(tmp_path.rglob("*.o"))

    def no_llvm(*a: object, **k: object) -> bytes:
        raise AssertionError("LLVM ran on a warm start")
    monkeypatch.setattr(target, "compile_object", no_llvm)
    warm = pto.compile(m, "llvm", cache_dir=tmp_path)
    assert not warm.compiled
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    y = np.zeros_like(x)
    warm(x, y, 0, 16)
    assert np.array_equal(x, y)


def test_corrupt_cache_entry_is_a_miss(tmp_path: pathlib.Path) -> None:
    m = pto.parse(COPY)
    pto.compile(m, "llvm", cache_dir=tmp_path)
    (entry,) = tmp_path.rglob("*.o")
    data = bytearray(entry.read_bytes())
    data[-10] ^= 0xFF
    entry.write_bytes(bytes(data))
    again = pto.compile(m, "llvm", cache_dir=tmp_path)
    assert again.compiled                # recompiled rather than running damaged code
    assert pto.compile(m, "llvm", cache_dir=tmp_path).compiled is False


def test_cache_key_depends_on_profile_and_host() -> None:
    blob = pto.parse(COPY).to_bytes()
    keys = {llvm_cache.key(blob, p, {}, h) for p in ("cpu", "a3") for h in ("hostA", "hostB")}
    assert len(keys) == 4


def test_cache_off_and_default_dir(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPTO_CACHE_DIR", str(tmp_path))
    assert llvm_cache.default_dir() == tmp_path / "llvm"
    pto.compile(pto.parse(COPY), "llvm", cache=False)
    assert not list(tmp_path.rglob("*.o"))


def test_out_of_bounds_load_is_a_located_fault(tmp_path: pathlib.Path) -> None:
    exe = pto.compile(pto.parse(COPY, filename="copy.pto"), "llvm", cache_dir=tmp_path)
    x = np.zeros((20, 64), np.float32)
    with pytest.raises(pto.PTOError) as e:
        exe(x, np.zeros_like(x), 0, 20)              # rows 16..23 of a 20-row tensor
    err = e.value
    assert err.code == "RUNTIME_OOB" and err.location.line == 7 and err.location.file == "copy.pto"
    assert "[16, 24)" in str(err) and "[0, 20)" in str(err)
    with pytest.raises(pto.PTOError) as e:
        exe(x, np.zeros_like(x), -8, 8)              # a negative start
    assert e.value.code == "RUNTIME_OOB"
    # the warm (cached) executable reports the same place
    warm = pto.compile(pto.parse(COPY, filename="copy.pto"), "llvm", cache_dir=tmp_path)
    with pytest.raises(pto.PTOError) as e:
        warm(x, np.zeros_like(x), 0, 20)
    assert e.value.location.line == 7


def test_loop_step_and_dynamic_valid_region_faults() -> None:
    src = """
kernel @k(%x : !pto.memref<?x16xf32>, %step : index, %v : index) {
  .const %c0 = 0 : index
  .const %c4 = 4 : index
  .tile %t valid_row = %v : !pto.tile<8x16xf32, valid=?x16>
  scf.for %r = %c0 to %c4 step %step {
    %t = tload %x[%c0, %c0] : (!pto.memref<?x16xf32>) -> !pto.tile<8x16xf32, valid=?x16>
  }
}
"""
    m = pto.parse(src)
    exe = pto.compile(m, "llvm", cache=False)
    x = np.zeros((8, 16), np.float32)
    with pytest.raises(pto.PTOError) as e:
        exe(x, 0, 4)
    assert e.value.code == "RUNTIME_LOOP_STEP"
    with pytest.raises(pto.PTOError) as e:
        exe(x, 1, 9)
    assert e.value.code == "RUNTIME_VALID_REGION"
    exe(x, 1, 3)


def test_blocks_on_threads_and_concurrent_launches(tmp_path: pathlib.Path) -> None:
    m = pto.load(ROOT / "examples" / "vector_add.pto")
    exe = pto.compile(m, "llvm", cache_dir=tmp_path, threads=4)
    a = np.random.default_rng(0).standard_normal((32 * 37, 1024)).astype(np.float32)
    b = np.ones_like(a)
    c = np.zeros_like(a)
    exe.run("vector_add", a, b, c, a.shape[0], block_num=7)
    assert np.array_equal(c, a + b)
    # two Python threads launching at once both complete with their own results
    outs = [np.zeros_like(a), np.zeros_like(a)]
    ts = [threading.Thread(target=exe.run, args=("vector_add", a, b, o, a.shape[0])) for o in outs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(np.array_equal(o, a + b) for o in outs)


def test_unknown_option_and_bad_threads() -> None:
    m = pto.parse(COPY)
    with pytest.raises(pto.PTOError) as e:
        pto.compile(m, "llvm", fast=True)
    assert e.value.code == "PTO_OPTION"
    with pytest.raises(pto.PTOError):
        pto.compile(m, "llvm", threads=0)


# --------------------------------------------------------------------------- scalars vs reference

INT_OPS = ["addi", "subi", "muli", "divsi", "divui", "remsi", "remui", "floordivsi", "ceildivsi", "andi", "ori",
           "xori", "shli", "shrsi", "shrui", "maxsi", "minsi", "maxui", "minui"]
FLOAT_OPS = ["addf", "subf", "mulf", "divf", "maxf", "minf", "maximumf", "minimumf"]


def _scalar_program(op: str, t: str, tile_dtype: str) -> str:
    return f"""
kernel @k(%out : !pto.memref<1x8x{tile_dtype}>, %a : {t}, %b : {t}) {{
  .const %c0 = 0 : index
  .tile %o : !pto.tile<1x8x{tile_dtype}>
  %r = arith.{op} %a, %b : {t}
  %o = texpands %r : ({t}) -> !pto.tile<1x8x{tile_dtype}>
  tstore %out[%c0, %c0], %o : (!pto.memref<1x8x{tile_dtype}>, !pto.tile<1x8x{tile_dtype}>)
}}
"""


def _both(src: str, tile_dtype: np.dtype, *args: object) -> tuple[np.ndarray, np.ndarray]:
    m = pto.parse(src)
    outs = []
    for backend, opts in (("reference", {}), ("llvm", {"cache": False})):
        o = np.zeros((1, 8), tile_dtype)
        pto.compile(m, backend, **opts)(o, *args)
        outs.append(o)
    return outs[0], outs[1]


_COMPILED: dict[str, object] = {}


@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from(INT_OPS), t=st.sampled_from(["i32", "i16", "u8"]), data=st.data())
def test_integer_scalar_ops_match_reference(op: str, t: str, data: st.DataObject) -> None:
    d = np.dtype({"i32": np.int32, "i16": np.int16, "u8": np.uint8}[t])
    info = np.iinfo(d)
    edge = st.sampled_from([0, 1, -1, info.min, info.max, info.bits - 1, info.bits, 3]).filter(
        lambda v: info.min <= v <= info.max)
    a = data.draw(st.one_of(edge, st.integers(int(info.min), int(info.max))))
    b = data.draw(st.one_of(edge, st.integers(int(info.min), int(info.max))))
    want, got = _both(_scalar_program(op, t, t), d, a, b)
    assert np.array_equal(want, got), (op, t, a, b, want[0, 0], got[0, 0])


@settings(max_examples=20, deadline=None)
@given(op=st.sampled_from(FLOAT_OPS), t=st.sampled_from(["f32", "f16"]),
       a=st.sampled_from([0.0, -0.0, 1.5, -2.25, float("nan"), float("inf"), 1e-3, 65504.0]),
       b=st.sampled_from([0.0, -0.0, 3.0, float("nan"), -float("inf"), 7e-5]))
def test_float_scalar_ops_match_reference(op: str, t: str, a: float, b: float) -> None:
    d = np.dtype(np.float32 if t == "f32" else np.float16)
    want, got = _both(_scalar_program(op, t, t), d, a, b)
    assert np.array_equal(want, got, equal_nan=True) and np.array_equal(np.signbit(want), np.signbit(got))


def test_control_flow_matches_reference() -> None:
    src = """
kernel @k(%out : !pto.memref<1x8xi32>, %n : index) {
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %z = 0 : i32
  .const %three = 3 : i32
  .tile %o : !pto.tile<1x8xi32>
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (i32) {
    %ii = arith.index_cast %i : index to i32
    %odd = arith.remsi %ii, %three : i32
    %c = arith.cmpi eq, %odd, %z : i32
    %next = scf.if %c -> (i32) {
      %x = arith.addi %acc, %ii : i32
      scf.yield %x : i32
    } else {
      %y = arith.subi %acc, %three : i32
      scf.yield %y : i32
    }
    scf.yield %next : i32
  }
  %o = texpands %s : (i32) -> !pto.tile<1x8xi32>
  tstore %out[%c0, %c0], %o : (!pto.memref<1x8xi32>, !pto.tile<1x8xi32>)
}
"""
    for n in (0, 1, 7, 100):
        want, got = _both(src, np.dtype(np.int32), n)
        assert np.array_equal(want, got), n


def test_generated_code_vectorises() -> None:
    ir_text = generate(pto.load(ROOT / "examples" / "softmax.pto"))[0]
    asm = target.assembly(ir_text)
    assert "zmm" in asm or "ymm" in asm
