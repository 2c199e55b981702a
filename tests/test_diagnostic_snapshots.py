"""The exact code and wording of one diagnostic per class. A change here is a change users
see (and may match on): update the snapshot deliberately, never to make a test pass."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto

T = "!pto.tile<16x16xf32>"


def rendered(text: str, profile: str | None = "a3") -> str:
    with pytest.raises(pto.PTOError) as e:
        pto.check(pto.parse(text, filename="k.pto"), profile)
    return e.value.render()


def test_parse() -> None:
    assert rendered(f".arg %a : {T}\n%d = tadd %a, %a : ({T}) -> {T}\n") == (
        "k.pto:2:18: PARSE_SIGNATURE: the signature lists 1 type(s) for 2 operands\n"
        "  expected: 2\n"
        "  actual:   1\n"
        f"  %d = tadd %a, %a : ({T}) -> {T}\n"
        "                   ^")


def test_struct() -> None:
    assert rendered(f".arg %a : {T}\n%d = tadd %a, %b : ({T}, {T}) -> {T}\n") == (
        "k.pto:2:15: STRUCT_UNDEFINED: use of undefined value %b\n"
        "  expected: a value defined earlier in a visible scope\n"
        "  actual:   %b\n"
        f"  %d = tadd %a, %b : ({T}, {T}) -> {T}\n"
        "                ^")


def test_legal() -> None:
    i8 = "!pto.tile<16x32xi8>"
    assert rendered(f".arg %a : {i8}\n%d = tadd %a, %a : ({i8}, {i8}) -> {i8}\n") == (
        "k.pto:2:6: LEGAL_DTYPE: TADD does not accept dtypes (dst, src0, src1) = (i8, i8, i8) on a3\n"
        "  expected: (f32, f32, f32); (f16, f16, f16); (i16, i16, i16); (i32, i32, i32)\n"
        "  actual:   (i8, i8, i8)\n"
        f"  %d = tadd %a, %a : ({i8}, {i8}) -> {i8}\n"
        "       ^")


def test_order() -> None:
    text = "set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0\nwait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 1\n" \
           "wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 0\n"
    assert rendered(text) == (
        "k.pto:2:1: ORDER_WAIT_UNSET: wait_flag (MTE2 -> V, id 1) has no set_flag before it in program "
        "order: run in order, it waits forever\n"
        "  expected: a set_flag with the same pipes and id earlier\n"
        "  actual:   none pending\n"
        "  wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, 1\n"
        "  ^")


def test_bcode() -> None:
    with pytest.raises(pto.PTOError) as e:
        from openpto.assembler import load_bytes
        load_bytes(b"PTOBC\0\x01", "k.ptobc")
    assert e.value.code.startswith("BCODE_")
    assert e.value.render().startswith(f"k.ptobc: {e.value.code}: ")


def test_runtime() -> None:
    text = ".arg %g : !pto.memref<32x16xf32>\n.arg %r : index\n" \
           f".tile %t : {T}\n%t = tload %g[%r, 0] : (!pto.memref<32x16xf32>) -> {T}\n"
    exe = pto.compile(pto.parse(text, filename="k.pto"), "reference")
    with pytest.raises(pto.PTOError) as e:
        exe(np.zeros((32, 16), np.float32), 20)
    assert e.value.render() == (
        "k.pto:4:6: RUNTIME_OOB: TLOAD: TLOAD source accessed out of bounds in dim 0\n"
        "  expected: indices in [0, 32)\n"
        "  actual:   [20, 36)\n"
        f"  %t = tload %g[%r, 0] : (!pto.memref<32x16xf32>) -> {T}\n"
        "       ^")


def test_order_inside_regions() -> None:
    text = "scf.for %i = 0 to 4 step 1 {\n  set_flag #pto.pipe<MTE2>, #pto.pipe<V>, 2\n}\n"
    with pytest.raises(pto.PTOError) as e:
        pto.check(pto.parse(text, filename="k.pto"))
    codes = [x.code for x in getattr(e.value, "errors", [e.value])]
    assert codes == ["ORDER_LOOP_UNBALANCED", "ORDER_FLAG_PENDING"]
    assert e.value.location.line == 1
