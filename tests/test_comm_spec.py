"""The comm family's declarations (isa/families/comm.py): text and bytecode forms, the
verifier's checks, legality per profile, and the semantics in the one-rank world checked
against numpy written here."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto
from openpto import isa
from openpto.isa.attrs import AtomicMode, CmpMode, NotifyOp, ReduceOp
from openpto.isa.values import GlobalRef
from openpto.isa.world import SOLO

COMM = ["TPUT", "TGET", "TPUT_ASYNC", "TGET_ASYNC", "TNOTIFY", "TWAIT", "TTEST", "TBROADCAST", "TREDUCE",
        "TGATHER_COMM", "TSCATTER_COMM"]

PROGRAM = """
kernel @k(%x : !pto.memref<4x8xf32>, %y : !pto.memref<?x8xf32>, %s : !pto.memref<2xi32>, %peer : index) {
  .const %c0 = 0 : index
  .const %one = 1 : i32
  tput %y[%c0, %c0], %x[%c0, %c0], %peer {atomicType = #pto.atomic<ADD>} : (!pto.memref<?x8xf32>, !pto.memref<4x8xf32>, index)
  tget %x[%c0, %c0], %y[%c0, %c0], %peer : (!pto.memref<4x8xf32>, !pto.memref<?x8xf32>, index)
  %e = tput_async %y[%c0, %c0], %x[%c0, %c0], %peer : (!pto.memref<?x8xf32>, !pto.memref<4x8xf32>, index)
  tsync %e
  tnotify %s[%c0], %one, %peer {op = #pto.notify_op<AtomicAdd>} : (!pto.memref<2xi32>, i32, index)
  %r = ttest %s[%c0], %one {cmp = #pto.cmp<GE>} : (!pto.memref<2xi32>, i32)
  twait %s[%c0], %one {cmp = #pto.cmp<GE>} : (!pto.memref<2xi32>, i32)
  treduce %x[%c0, %c0], %y[%c0, %c0] {op = #pto.reduce_op<Sum>} : (!pto.memref<4x8xf32>, !pto.memref<?x8xf32>)
  tbroadcast %y[%c0, %c0], %x[%c0, %c0] : (!pto.memref<?x8xf32>, !pto.memref<4x8xf32>)
  tgather_comm %y[%c0, %c0], %x[%c0, %c0] : (!pto.memref<?x8xf32>, !pto.memref<4x8xf32>)
  tscatter_comm %x[%c0, %c0], %y[%c0, %c0] : (!pto.memref<4x8xf32>, !pto.memref<?x8xf32>)
  %me = pto.get_rank
  %n = pto.get_rank_num
}
"""


def test_every_comm_instruction_is_declared_once_in_its_family() -> None:
    fam = [i.mnemonic for i in isa.all_instructions() if i.family is isa.Family.COMM]
    assert fam == COMM
    for name in COMM:
        ins = isa.get(name)
        assert ins.profiles == ("cpu", "a2", "a3", "a5") and "world" in ins.semantics.__code__.co_varnames
    assert isa.get("TGATHER").family is not isa.Family.COMM       # the tile gather keeps its name


def test_text_and_bytecode_round_trip_with_public_spellings() -> None:
    m = pto.parse(PROGRAM)
    text = m.to_text()
    assert "{op = #pto.notify_op<ADD>}" in text and "{op = #pto.reduce_op<SUM>}" in text
    assert "%r = ttest %s[%c0], %one {cmp = #pto.cmp<GE>} : (!pto.memref<2xi32>, i32) -> i1" in text
    assert "%me = pto.get_rank" in text and "%n = pto.get_rank_num" in text
    assert pto.parse(text) == m
    from openpto import assembler as asm
    assert asm.load_bytes(m.to_bytes()) == m
    pto.check(m, profile="a3")
    pto.check(m, profile="a5")


def _check_codes(text: str, profile: str = "cpu") -> list[str]:
    try:
        pto.check(pto.parse(text), profile=profile)
    except pto.PTOError as e:
        return [x.code for x in getattr(e, "errors", [e])]
    return []


def test_the_verifier_refuses_what_the_declarations_refuse() -> None:
    assert set(_check_codes(PROGRAM, "a6")) == {"LEGAL_UNSUPPORTED_INSTRUCTION"}
    put = ("kernel @k(%x : !pto.memref<4x8x{t}>, %y : !pto.memref<{s}x{t}>, %p : index) {{\n  .const %c0 = 0 : index\n"
           "  tput %y[{i}], %x[%c0, %c0], %p {a} : (!pto.memref<{s}x{t}>, !pto.memref<4x8x{t}>, index)\n}}\n")
    ok = put.format(t="f32", s="4x8", i="%c0, %c0", a="")
    assert _check_codes(ok) == []
    assert "STRUCT_ATTR_VALUE" in _check_codes(put.format(t="f32", s="4x8", i="%c0, %c0",
                                                          a="{atomicType = #pto.atomic<MAX>}"))
    assert "LEGAL_DTYPE" in _check_codes(put.format(t="i1", s="4x8", i="%c0, %c0", a="{atomicType = #pto.atomic<ADD>}"))
    assert "STRUCT_SHAPE" in _check_codes(put.format(t="f32", s="32", i="%c0", a=""))
    wait = ("kernel @k(%s : !pto.memref<2xf32>) {\n  .const %c0 = 0 : index\n  .const %one = 1.0 : f32\n"
            "  twait %s[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<2xf32>, f32)\n}\n")
    assert _check_codes(wait) == ["LEGAL_DTYPE"]                      # signals are i32
    assert _check_codes(wait.replace(" {cmp = #pto.cmp<EQ>}", "")) == ["STRUCT_MISSING_ATTR"]


def test_legal_on_the_profiles_with_comm_headers_only() -> None:
    for name in COMM:
        ins = isa.get(name)
        assert [p for p in ("cpu", "a2", "a3", "a5", "a6", "kirin9030", "kirinX90") if ins.supported_on(p)] \
            == ["cpu", "a2", "a3", "a5"]


def _ref(a: np.ndarray, *offsets: int) -> GlobalRef:
    return GlobalRef(a, tuple(offsets) or (0,) * a.ndim)


def test_solo_semantics_against_numpy() -> None:
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    y = np.zeros((6, 8), np.float32)
    isa.get("TPUT").execute(dst=_ref(y, 2, 0), src=_ref(x), peer=0)
    np.testing.assert_array_equal(y[2:], x)
    assert not y[:2].any()
    isa.get("TPUT").execute(dst=_ref(y, 2, 0), src=_ref(x), peer=0, atomicType=AtomicMode.ADD)
    np.testing.assert_array_equal(y[2:], 2 * x)
    out = np.zeros((2, 8), np.float32)
    isa.get("TGET").execute(dst=_ref(out), src=_ref(y, 3, 0), peer=0)
    np.testing.assert_array_equal(out, 2 * x[1:3])
    h = np.array([[1.0, 65504.0]], np.float16)
    acc = np.array([[1.0, 65504.0]], np.float16)
    isa.get("TPUT").execute(dst=_ref(acc), src=_ref(h), peer=0, atomicType=AtomicMode.ADD)
    assert acc[0, 0] == 2 and np.isinf(acc[0, 1])                    # f16 add in f32, one rounding


def test_solo_signals_and_collectives() -> None:
    s = np.array([5, -1], np.int32)
    isa.get("TNOTIFY").execute(signal=_ref(s, 1), value=2**31 - 1, peer=0, op=NotifyOp.ADD)
    assert s.tolist() == [5, 2**31 - 2]                               # 32-bit wrap
    isa.get("TNOTIFY").execute(signal=_ref(s), value=7, peer=0, op=NotifyOp.SET)
    assert s.tolist() == [7, 2**31 - 2]
    assert isa.get("TTEST").execute(signal=_ref(s), cmpValue=7, cmp=CmpMode.GE) is True
    assert isa.get("TTEST").execute(signal=_ref(s), cmpValue=7, cmp=CmpMode.EQ) is False
    isa.get("TWAIT").execute(signal=_ref(s), cmpValue=6, cmp=CmpMode.GT)
    with pytest.raises(isa.PTOError) as e:
        isa.get("TWAIT").execute(signal=_ref(s), cmpValue=7, cmp=CmpMode.EQ)
    assert e.value.code == "RUNTIME_COMM_DEADLOCK"
    g = np.array([[1.5, np.nan, -3.0]], np.float32)
    d = np.zeros((1, 3), np.float32)
    isa.get("TREDUCE").execute(dst=_ref(d), group=_ref(g), op=ReduceOp.MAX)
    np.testing.assert_array_equal(d, g)
    big = np.zeros((9, 3), np.float32)
    isa.get("TGATHER_COMM").execute(dst=_ref(big), group=_ref(g))
    np.testing.assert_array_equal(big[0], g[0])


def test_faults_before_anything_moves() -> None:
    x = np.ones((4, 8), np.float32)
    y = np.zeros((4, 8), np.float32)
    for kw, code in ((dict(dst=_ref(y, 1, 0), src=_ref(x), peer=0), "RUNTIME_OOB"),
                     (dict(dst=_ref(y), src=_ref(x), peer=1), "RUNTIME_COMM_RANK"),
                     (dict(dst=_ref(y), src=_ref(x, 0, 1), peer=0), "RUNTIME_GLOBAL_INDEX")):
        with pytest.raises(isa.PTOError) as e:
            isa.get("TPUT").execute(**kw)
        assert e.value.code == code
        assert not y.any()
    with pytest.raises(isa.PTOError) as e:
        isa.get("TGATHER_COMM").execute(dst=_ref(np.zeros((3, 8), np.float32)), group=_ref(x))
    assert e.value.code == "RUNTIME_OOB"
    assert SOLO.rank == 0 and SOLO.size == 1


def test_a_remote_window_known_to_leave_its_tensor_is_refused_by_the_verifier() -> None:
    """TPUT's remote window has src's shape at dst's indices; TNOTIFY's is one element."""
    src = """kernel @k(%a : !pto.memref<8x16xf32>, %b : !pto.memref<4x16xf32>, %s : !pto.memref<4xi32>) {
  .const %c0 = 0 : index
  .const %c4 = 4 : index
  .const %c6 = 6 : index
  .const %c1 = 1 : index
  .const %c3 = 3 : index
  .const %c9 = 9 : index
  .const %one = 1 : i32
  tput %a[%c4, %c0], %b[%c0, %c0], %c1
  tnotify %s[%c3], %one, %c1 {op = #pto.notify_op<SET>}
  tput %a[%c6, %c0], %b[%c0, %c0], %c1
  tnotify %s[%c9], %one, %c1 {op = #pto.notify_op<SET>}
}"""
    with pytest.raises(pto.PTOError) as e:
        pto.check(pto.parse(src), "cpu")
    errs = getattr(e.value, "errors", [e.value])
    assert [(x.code, x.location.line, x.actual) for x in errs] == \
        [("STRUCT_OOB", 11, "[6, 10)"), ("STRUCT_OOB", 12, "[9, 10)")]
