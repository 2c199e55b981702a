"""The reference backend as a user meets it: control flow and scalars, several kernels and
block ids, argument checking, and each strict check with its exact diagnostic code."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto
from openpto.backends import Result
from openpto.isa import PTOError

T = "!pto.tile<4x8xf32>"
G = "!pto.memref<16x8xf32>"


def run(text: str, *args, kernel: str | None = None, strict: bool = True, profile: str = "cpu", **kw) -> Result:
    exe = pto.compile(pto.parse(text, filename="t.pto"), "reference", profile, strict=strict)
    return exe.run(kernel, *args, **kw) if kernel else exe(*args, **kw)


def code_of(text: str, *args, **kw) -> PTOError:
    with pytest.raises(PTOError) as e:
        run(text, *args, **kw)
    return e.value


SCALE_ROWS = f"""
kernel @scale(%x : {G}, %y : {G}, %n : index, %s : f32) {{
  .tile %t : {T}
  scf.for %i = 0 to %n step 4 {{
    %t = tload %x[%i, 0] : ({G}) -> {T}
    %f = arith.index_cast %i : index to i32
    %g = arith.sitofp %f : i32 to f32
    %h = arith.addf %g, %s : f32
    %t = tmuls %t, %h : ({T}, f32) -> {T}
    tstore %y[%i, 0], %t : ({G}, {T})
  }}
}}
"""


def test_loop_with_scalar_arithmetic_matches_numpy() -> None:
    x = np.arange(128, dtype=np.float32).reshape(16, 8)
    y = np.zeros_like(x)
    res = run(SCALE_ROWS, x, y, 12, 0.5)
    want = np.zeros_like(x)
    for i in range(0, 12, 4):
        want[i:i + 4] = x[i:i + 4] * np.float32(i + 0.5)
    np.testing.assert_array_equal(y, want)
    assert res.outputs == {"y": y} and res["y"] is y
    assert res.counters["TLOAD"] == 3 and res.counters["instructions"] == 9


def test_arguments_by_name_and_errors() -> None:
    x = np.ones((16, 8), np.float32)
    y = np.zeros_like(x)
    run(SCALE_ROWS, x, y=y, n=4, s=2.0)
    assert (y[:4] == 2.0).all() and (y[4:] == 0).all()
    cases = {
        "RUNTIME_ARG_DTYPE": ((x.astype(np.float64), y, 4, 1.0), {}),
        "RUNTIME_ARG_SHAPE": ((x[:8], y, 4, 1.0), {}),
        "RUNTIME_ARG_MISSING": ((x, y, 4), {}),
        "RUNTIME_ARG_UNKNOWN": ((x, y, 4, 1.0), {"z": 1}),
        "RUNTIME_ARG_DUPLICATE": ((x, y, 4, 1.0), {"n": 1}),
        "RUNTIME_ARG_COUNT": ((x, y, 4, 1.0, 5), {}),
        "RUNTIME_ARG_TYPE": ((x, y, 4.5, 1.0), {}),
    }
    for code, (args, kw) in cases.items():
        assert code_of(SCALE_ROWS, *args, **kw).code == code, code
    ro = y.copy()
    ro.flags.writeable = False
    assert code_of(SCALE_ROWS, x, ro, 4, 1.0).code == "RUNTIME_ARG_READONLY"


def test_array_interface_and_dlpack_objects_are_used_in_place() -> None:
    class Wrapped:
        def __init__(self, a: np.ndarray) -> None:
            self.a = a
            self.__array_interface__ = a.__array_interface__

    x = np.ones((16, 8), np.float32)
    y = np.zeros_like(x)
    run(SCALE_ROWS, Wrapped(x), Wrapped(y), 16, 1.0)
    assert (y == x * np.repeat(np.arange(0, 16, 4) + 1, 4)[:, None]).all()
    y2 = np.zeros_like(x)
    run(SCALE_ROWS, x, y2, 16, 1.0)
    np.testing.assert_array_equal(y, y2)


def test_iter_args_if_else_and_results() -> None:
    # sum over i < n of (i odd ? i * 3 : -i), carried as an index through iter_args
    text = """
kernel @k(%n : index, %out : !pto.memref<1x8xi32>) {
  .tile %t : !pto.tile<1x8xi32>
  %acc = scf.for %i = 0 to %n step 1 iter_args(%a = 0) -> (index) {
    %two = arith.constant 2 : index
    %r = arith.remsi %i, %two : index
    %zero = arith.constant 0 : index
    %odd = arith.cmpi ne, %r, %zero : index
    %v = scf.if %odd -> (index) {
      %three = arith.constant 3 : index
      %m = arith.muli %i, %three : index
      scf.yield %m : index
    } else {
      %m2 = arith.subi %zero, %i : index
      scf.yield %m2 : index
    }
    %a2 = arith.addi %a, %v : index
    scf.yield %a2 : index
  }
  %c = arith.index_cast %acc : index to i32
  %t = texpands %c : (i32) -> !pto.tile<1x8xi32>
  .const %c0 = 0 : index
  tstore %out[%c0, %c0], %t : (!pto.memref<1x8xi32>, !pto.tile<1x8xi32>)
}
"""
    for n in (0, 1, 7):
        out = np.zeros((1, 8), np.int32)
        run(text, n, out)
        assert (out == sum(i * 3 if i % 2 else -i for i in range(n))).all()


def test_several_kernels_and_block_ids() -> None:
    text = f"""
kernel @fill(%y : {G}) {{
  %b = pto.get_block_idx
  %nb = pto.get_block_num
  %row = arith.muli %b, %four : index
  .const %four = 4 : index
  %bi = arith.index_cast %nb : index to i32
  %f = arith.sitofp %bi : i32 to f32
  .tile %t : {T}
  %t = texpands %f : (f32) -> {T}
  tstore %y[%row, 0], %t : ({G}, {T})
}}
kernel @copy(%x : {G}, %y : {G}) {{
  .tile %t : {T}
  %t = tload %x[0, 0] : ({G}) -> {T}
  tstore %y[0, 0], %t : ({G}, {T})
}}
"""
    with pytest.raises(PTOError):   # %four is used before it is defined
        pto.parse(text)
    text = text.replace("  %row = arith.muli %b, %four : index\n  .const %four = 4 : index\n",
                        "  .const %four = 4 : index\n  %row = arith.muli %b, %four : index\n")
    exe = pto.compile(pto.parse(text), "reference")
    y = np.zeros((16, 8), np.float32)
    exe.run("fill", y, block_num=3)
    assert (y[:12] == 3.0).all() and (y[12:] == 0).all()
    x = np.full((16, 8), 7, np.float32)
    exe.run("copy", x, y)
    assert (y[:4] == 7).all() and (y[4:12] == 3).all()
    with pytest.raises(PTOError) as e:
        exe(y)
    assert e.value.code == "PTO_KERNEL"
    with pytest.raises(PTOError) as e:
        exe.run("nope")
    assert e.value.code == "PTO_KERNEL"
    with pytest.raises(PTOError) as e:
        exe.run("fill", y, block_num=0)
    assert e.value.code == "PTO_BLOCK_NUM"


# ----------------------------------------------------------------------------- strict checks

def test_out_of_bounds_load_names_instruction_and_line() -> None:
    x = np.ones((16, 8), np.float32)
    e = code_of(SCALE_ROWS, x, np.zeros_like(x), 20, 1.0)
    assert e.code == "RUNTIME_OOB"
    assert e.location.line == 5 and "TLOAD" in e.message
    assert "[16, 20)" in str(e.actual)


def test_over_capacity_is_rejected_at_compile_time() -> None:
    text = """
.tile %a : !pto.tile<256x256xf32>
.tile %b : !pto.tile<256x256xf32>
%a = texpands 1.0 : (f32) -> !pto.tile<256x256xf32>
%b = tadds %a, 1.0 : (!pto.tile<256x256xf32>, f32) -> !pto.tile<256x256xf32>
"""
    with pytest.raises(PTOError) as e:
        pto.compile(pto.parse(text), "reference", "a3")
    assert e.value.code == "LEGAL_CAPACITY"
    pto.compile(pto.parse(text), "reference", "cpu")     # the generic cpu profile has room


# %u is written only in a loop that runs no iterations: the verifier cannot rule the write
# out (STRUCT_UNINIT_READ is for tiles no path writes), the run finds it never happened
UNINIT = f"""
kernel @k(%y : {G}) {{
  .tile %t : {T}
  .tile %u : {T}
  %t = texpands 1.0 : (f32) -> {T}
  scf.for %i = 0 to 0 step 1 {{
    %u = texpands 2.0 : (f32) -> {T}
  }}
  %u = tadd %t, %u : ({T}, {T}) -> {T}
  tstore %y[0, 0], %u : ({G}, {T})
}}
"""


def test_reading_a_never_written_tile_is_reported_unless_relaxed() -> None:
    y = np.zeros((16, 8), np.float32)
    e = code_of(UNINIT, y)
    assert e.code == "RUNTIME_UNINIT_READ" and "%u" in e.message and e.location.line == 9
    run(UNINIT, y, strict=False)        # relaxed: runs, reading poison (NaN) for the unwritten tile
    assert np.isnan(y[:4]).all()


def test_reads_outside_a_valid_region_fail_and_poison_is_what_lies_there() -> None:
    # %t's valid region is 2x8 at run time; a 4x8 TEXTRACT window would read past it (the
    # verifier cannot see it: the extent is dynamic), which the semantics refuse
    text = f"""
kernel @k(%x : {G}, %y : {G}, %r : index, %p : !pto.tile<4x8xf32, valid=2x8>) {{
  .tile %t valid_row = %r : !pto.tile<4x8xf32, valid=?x8>
  .tile %w : {T}
  %t = tload %x[0, 0] : ({G}) -> !pto.tile<4x8xf32, valid=?x8>
  %p = tload %x[0, 0] : ({G}) -> !pto.tile<4x8xf32, valid=2x8>
  .const %c0 = 0 : index
  %w = textract %t, %c0, %c0 : (!pto.tile<4x8xf32, valid=?x8>, index, index) -> {T}
  tstore %y[0, 0], %w : ({G}, {T})
}}
"""
    x = np.ones((16, 8), np.float32)
    y = np.zeros_like(x)
    p = np.zeros((4, 8), np.float32)
    e = code_of(text, x, y, 2, p)
    assert e.code == "RUNTIME_OOB" and e.location.line == 8 and "valid region" in e.message
    # what lies outside a valid region after a write is poison: the caller's tile shows it
    assert (p[:2] == 1).all()
    assert (p[2:].view(np.uint32) == 0xFFFFFFFF).all() and np.isnan(p[2:]).all()
    run(text, x, y, 4, p)        # the whole of %t valid: the window is fine
    assert (y[:4] == 1).all() and (y[4:] == 0).all()
    p[:] = 0
    run(text, x, y, 4, p, strict=False)     # relaxed: no poisoning
    assert (p[2:] == 0).all()


def test_dynamic_valid_region_from_a_runtime_value() -> None:
    text = f"""
kernel @k(%x : {G}, %y : {G}, %r : index) {{
  .tile %t valid_row = %r : !pto.tile<4x8xf32, valid=?x8>
  %t = tload %x[0, 0] : ({G}) -> !pto.tile<4x8xf32, valid=?x8>
  %t = tmuls %t, 2.0 : (!pto.tile<4x8xf32, valid=?x8>, f32) -> !pto.tile<4x8xf32, valid=?x8>
  tstore %y[0, 0], %t : ({G}, !pto.tile<4x8xf32, valid=?x8>)
}}
"""
    x = np.ones((16, 8), np.float32)
    y = np.zeros_like(x)
    run(text, x, y, 3)
    assert (y[:3] == 2).all() and (y[3:] == 0).all()
    assert code_of(text, x, y, 5).code == "RUNTIME_VALID_REGION"


def test_sync_instructions_are_validated() -> None:
    ok = """
set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 3
wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 3
pipe_barrier #pto.pipe<V>
"""
    assert run(ok).counters["SET_FLAG"] == 1
    bad = ".arg %e : index\nset_flag #pto.pipe<MTE2>, #pto.pipe<V>, %e\n"
    assert code_of(bad, 9).code == "RUNTIME_EVENT_ID"


def test_loop_step_must_be_positive() -> None:
    text = ".arg %s : index\nscf.for %i = 0 to 4 step %s {\n}\n"
    assert code_of(text, 0).code == "RUNTIME_LOOP_STEP"
    assert run(text, 2).counters["instructions"] == 0


def test_unknown_option_and_backend() -> None:
    m = pto.parse(UNINIT)
    with pytest.raises(PTOError) as e:
        pto.compile(m, "reference", fast=True)
    assert e.value.code == "PTO_OPTION"
    with pytest.raises(PTOError) as e:
        pto.compile(m, "no-such-backend")
    assert e.value.code == "PTO_UNKNOWN_BACKEND"
    with pytest.raises(PTOError) as e:
        pto.compile(m, "reference", "cuda9")
    assert e.value.code == "LEGAL_PROFILE"


def test_blocks_run_side_by_side_give_what_they_give_in_order() -> None:
    import pathlib
    m = pto.load(pathlib.Path(__file__).resolve().parent.parent / "examples" / "softmax.pto")
    x = np.random.default_rng(3).standard_normal((160, 1024)).astype(np.float32)
    ys = []
    for threads in (1, 3):
        y = np.full_like(x, np.nan)
        res = pto.compile(m, "reference", threads=threads).run("softmax", x, y, 160, block_num=3, trace=True)
        ys.append(y)
        assert res.counters["TLOAD"] == 10 and {e["block"] for e in res.trace} == {0, 1, 2}   # 16-row blocks
    assert np.array_equal(ys[0], ys[1]) and not np.isnan(ys[0]).any()
    bad = np.zeros((40, 1024), np.float32)         # the row blocks at 32 and 48 leave the tensor
    with pytest.raises(PTOError) as e:
        pto.compile(m, "reference", threads=2).run("softmax", bad, np.zeros_like(bad), 64, block_num=2)
    assert e.value.code == "RUNTIME_OOB"
    with pytest.raises(PTOError) as e:
        pto.compile(m, "reference", threads=0)
    assert e.value.code == "PTO_OPTION"


def test_float_scalar_arguments_take_their_type() -> None:
    text = """
kernel @k(%x : f16, %out : !pto.memref<1x16xf32>) {
  .const %h = 0.1 : f16
  %d = arith.subf %x, %h : f16
  %f = arith.extf %d : f16 to f32
  %t = texpands %f : (f32) -> !pto.tile<1x16xf32>
  tstore %out[0, 0], %t : (!pto.memref<1x16xf32>, !pto.tile<1x16xf32>)
}
"""
    out = np.ones((1, 16), np.float32)
    run(text, 0.1, out)                 # 0.1 as an f16 argument is the f16 constant 0.1
    assert (out == 0).all()
    assert code_of(text, 10**400, out).code == "RUNTIME_ARG_VALUE"


def test_a_semantics_bug_is_a_diagnostic_not_a_traceback() -> None:
    from openpto.backends.reference import ReferenceBackend

    def broken(**_: object) -> None:
        raise KeyError("oops")

    class Broken(ReferenceBackend):
        name = "broken"
        rules = dict(ReferenceBackend.rules, TEXPANDS=broken)

    text = ".arg %d : !pto.tile<1x16xf32>\n%d = texpands 1.0 : (f32) -> !pto.tile<1x16xf32>\n"
    with pytest.raises(PTOError) as e:
        Broken().compile(pto.parse(text, filename="b.pto"))(np.zeros((1, 16), np.float32))
    assert e.value.code == "RUNTIME_INTERNAL" and "KeyError" in e.value.message and e.value.location.line == 2
