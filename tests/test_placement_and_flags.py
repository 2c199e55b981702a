"""Verify-time checks of constant sync and placement operands against profile data: a constant
TASSIGN / alloc_tile address off its buffer's alignment (LEGAL_ALIGNMENT), a constant flag id
past the ids a profile has for its (src pipe, dst pipe) pair (LEGAL_EVENT_ID); the same values
given at run time still fault on the reference and llvm backends."""
from __future__ import annotations

import pathlib

import pytest

import openpto as pto
from openpto import assembler as asm
from openpto.isa.diagnostics import PTOError

BACKENDS = ("reference", "llvm")


def codes(text: str, profile: str) -> list:
    return asm.diagnose(asm.parse(text), profile)


ASSIGN = """kernel @k() {{
  .const %a = {addr} : index
  %t = tassign %a : (index) -> !pto.tile<16x16xf32{loc}>
}}
"""


@pytest.mark.parametrize("profile", ["cpu", "a3", "a5"])
@pytest.mark.parametrize("loc", ["", ", loc=mat, layout=NZ", ", loc=acc, layout=NZ"])
def test_misaligned_constant_tassign_is_rejected_at_verify_time(profile: str, loc: str) -> None:
    assert codes(ASSIGN.format(addr=4096, loc=loc), profile) == []
    errs = codes(ASSIGN.format(addr=4112, loc=loc), profile)      # 4112 = 128 * 32 + 16
    assert [e.code for e in errs] == ["LEGAL_ALIGNMENT"]
    e = errs[0]
    assert e.expected == "an address that is a multiple of 32" and e.actual == "4112 (4112 % 32 = 16)"
    assert (e.location.line, e.location.kernel) == (3, "k")


def test_misaligned_alloc_tile_address_and_both_faults_reported() -> None:
    text = """kernel @k() {
  .const %a = 196600 : index
  .tile %u addr = %a : !pto.tile<16x16xf32>
}
"""
    # 196600 is 8 bytes off 32 and 1024 bytes from it run past a3's 196608-byte UB: both said
    assert sorted(e.code for e in codes(text, "a3")) == ["LEGAL_ALIGNMENT", "LEGAL_CAPACITY"]
    assert [e.code for e in codes(text, "cpu")] == ["LEGAL_ALIGNMENT"]


def test_negative_and_runtime_addresses_are_left_to_the_run() -> None:
    assert codes(ASSIGN.format(addr=-16, loc=""), "a3") == []     # RUNTIME_BAD_ADDRESS when it runs
    text = "kernel @k(%a : index) {\n  %t = tassign %a : (index) -> !pto.tile<16x16xf32>\n}\n"
    assert codes(text, "a3") == []


def run_code(text: str, backend: str, tmp_path: pathlib.Path, **args: object) -> str | None:
    """The code of the PTOError running kernel @k of ``text`` on a3 raises (None: it ran)."""
    opts = {"cache_dir": tmp_path} if backend == "llvm" else {}
    exe = pto.compile(pto.parse(text), backend, "a3", **opts)
    try:
        exe.run("k", **args)
    except PTOError as e:
        return e.code
    return None


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("addr,code", [(64, None), (80, "RUNTIME_MISALIGNED"), (-32, "RUNTIME_BAD_ADDRESS")])
def test_runtime_tassign_addresses_fault_on_both_backends(backend: str, addr: int, code: str | None,
                                                         tmp_path: pathlib.Path) -> None:
    text = "kernel @k(%a : index) {\n  %t = tassign %a : (index) -> !pto.tile<16x16xf32>\n}\n"
    assert run_code(text, backend, tmp_path, a=addr) == code


FLAGS = """kernel @k(%i : index) {{
  .const %c = {eid} : index
  set_flag #pto.pipe<{src}>, #pto.pipe<{dst}>, {lit}
  wait_flag #pto.pipe<{src}>, #pto.pipe<{dst}>, {lit}
  pto.record_event[{a}, {b}, %c]
  pto.wait_event[{a}, {b}, %c]
}}
"""


@pytest.mark.parametrize("profile", ["cpu", "a2", "a3", "a5"])
@pytest.mark.parametrize("src,dst,a,b", [("MTE2", "V", "TLOAD", "TVEC"), ("V", "MTE3", "TVEC", "TSTORE_VEC"),
                                         ("M", "FIX", "TMATMUL", "TSTORE_ACC")])
def test_constant_flag_ids_past_the_pairs_range(profile: str, src: str, dst: str, a: str, b: str) -> None:
    ok = FLAGS.format(eid=7, lit=0, src=src, dst=dst, a=a, b=b)
    assert codes(ok, profile) == []
    errs = codes(FLAGS.format(eid=8, lit=9, src=src, dst=dst, a=a, b=b), profile)
    assert [(e.code, e.location.line) for e in errs] == [("LEGAL_EVENT_ID", n) for n in (3, 4, 5, 6)]
    assert errs[0].expected == "an id in [0, 8)" and errs[0].actual == "9" and errs[2].actual == "8"
    assert f"{src} -> {dst}" in errs[0].message


def test_negative_constant_flag_id_and_profile_table() -> None:
    from openpto.isa.profiles import get as profile
    from openpto.isa.types import Pipe
    assert [e.code for e in codes(FLAGS.format(eid=-1, lit=0, src="MTE2", dst="V", a="TLOAD", b="TVEC"), "a3")] \
        == ["LEGAL_EVENT_ID", "LEGAL_EVENT_ID"]
    a3 = profile("a3")
    assert a3.flag_ids(Pipe.MTE2, Pipe.V) == 8 and a3.flag_ids(Pipe.FIX, Pipe.MTE2) == 8
    assert a3.flag_ids(Pipe.V, Pipe.V) is None and a3.flag_ids(Pipe.ALL, Pipe.V) is None


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("eid,code", [(7, None), (8, "RUNTIME_EVENT_ID"), (-1, "RUNTIME_EVENT_ID")])
def test_runtime_flag_ids_fault_on_both_backends(backend: str, eid: int, code: str | None,
                                                 tmp_path: pathlib.Path) -> None:
    text = ("kernel @k(%i : index) {\n  set_flag #pto.pipe<MTE2>, #pto.pipe<V>, %i\n"
            "  wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, %i\n}\n")
    assert run_code(text, backend, tmp_path, i=eid) == code
