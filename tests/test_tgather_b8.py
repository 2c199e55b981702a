"""TGATHER on 8-bit data as a5/TGather.hpp has it: the index form gathers i8/u8 by 16/32-bit
indices and the compare form compares i8/u8 sources, on the reference and the llvm backend
against numpy written here; a2/a3 keep 2- and 4-byte data; the mask form stays 2- or 4-byte."""
from __future__ import annotations

import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError

from llvm_support import run_program

BACKENDS = ("reference", "llvm")


def _index_form(d: str, it: str) -> str:
    t, ti = f"!pto.tile<4x32x{d}>", f"!pto.tile<4x32x{it}>"
    return (f"kernel @k(%dst : {t}, %src : {t}, %idx : {ti}) {{\n"
            f"  %dst = tgather %src, %idx : ({t}, {ti}) -> {t}\n}}\n")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d,np_d,it,np_i", [("i8", np.int8, "i16", np.int16), ("u8", np.uint8, "u32", np.uint32)])
def test_index_form_8bit(backend: str, d: str, np_d: type, it: str, np_i: type) -> None:
    src = (np.arange(128) * 7 - 100).astype(np_d).reshape(4, 32)
    idx = np.array([(127 - 5 * k) % 128 for k in range(128)], np_i).reshape(4, 32)
    code, out = run_program(_index_form(d, it), backend,
                            {"dst": np.zeros((4, 32), np_d), "src": src, "idx": idx})
    assert code is None
    np.testing.assert_array_equal(out["dst"], src.reshape(-1)[idx.astype(np.int64)])


@pytest.mark.parametrize("profile,code", [("a5", None), ("cpu", None), ("a3", "LEGAL_DTYPE"), ("a2", "LEGAL_DTYPE")])
def test_index_form_8bit_legality(profile: str, code: str | None) -> None:
    module = pto.parse(_index_form("i8", "i32"))
    if code is None:
        pto.compile(module, backend="reference", profile=profile)
        return
    with pytest.raises(PTOError) as e:
        pto.compile(module, backend="reference", profile=profile)
    assert e.value.code == code


COMPARE = """kernel @k(%dst : !pto.tile<2x32xu32>, %src : !pto.tile<2x32xu8>, %k : !pto.tile<2x1xu16, layout=DN>, %cdst : !pto.tile<2x1xu32, layout=DN>) {
  %dst, %cdst = tgather %src, %k {cmpMode = #pto.cmp<GT>} : (!pto.tile<2x32xu8>, !pto.tile<2x1xu16, layout=DN>) -> (!pto.tile<2x32xu32>, !pto.tile<2x1xu32, layout=DN>)
}
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_compare_form_u8_source(backend: str) -> None:
    src = np.zeros((2, 32), np.uint8)
    src[0, [3, 10, 31]] = [200, 201, 255]        # row 0: above 199 at columns 3, 10, 31
    src[1, [0, 5]] = [7, 6]                       # row 1: above 6 only at column 0
    k = np.array([[199], [6]], np.uint16)
    code, out = run_program(COMPARE, backend, {"dst": np.zeros((2, 32), np.uint32), "src": src, "k": k,
                                               "cdst": np.zeros((2, 1), np.uint32)})
    assert code is None
    assert out["cdst"][:, 0].tolist() == [3, 1]
    assert out["dst"][0, :3].tolist() == [3, 10, 31] and out["dst"][1, 0] == 32   # row-major positions
