"""Every declared dtype tuple gets a legal case, also one only another form of the instruction
takes (conformance/cases.py, ``derive``): the scalar pre-quantising moves exist only with an f32
preQuantScalar, which the plain example lacks."""
from __future__ import annotations

import dataclasses

import pytest

from openpto.conformance import cases as C
from openpto.isa import dtypes as dt
from openpto.isa.registry import get
from openpto.isa.types import ScalarType

SCALE = "preQuantScalar"


@pytest.mark.parametrize("profile", ["cpu", "a2", "a5"])
@pytest.mark.parametrize("mnemonic", ["TMOV", "TEXTRACT", "TINSERT", "TSTORE"])
def test_every_declared_pair_gets_a_legal_case(mnemonic: str, profile: str) -> None:
    bases = C.base_cases(get(mnemonic), profile)
    assert bases
    missing = [C.dtype_key(d) for d, c in bases.items() if c is None]
    assert not missing
    assert all(not c.errors() for c in bases.values())


def test_the_acc_i32_to_f16_move_takes_an_f32_scale() -> None:
    case = C.base_cases(get("TMOV"), "cpu")[(dt.F16, dt.I32)]
    assert case is not None and not case.errors()
    assert case.types[SCALE] == ScalarType("f32")      # not re-typed after the i32 source
    assert isinstance(case.scalars[SCALE], float)


def test_an_optional_operand_no_example_has_is_filled_in() -> None:
    """Without the example that shows the scaled form, the search fills preQuantScalar in (an
    f32 scalar at 1) for the pairs only that form converts; the plain pairs keep the plain form."""
    tmov = get("TMOV")
    plain = dataclasses.replace(tmov, more_examples=tuple(e for e in tmov.more_examples if SCALE not in e.types))
    assert not any(SCALE in e.types for e in (plain.example,) + plain.more_examples)
    bases = C.derive(plain, "a5")
    for pair in [(dt.F16, dt.I32), (dt.BF16, dt.I32), (dt.I8, dt.I32), (dt.U8, dt.I32)]:
        case = bases[pair]
        assert case is not None and not case.errors(), pair
        assert case.types[SCALE] == ScalarType("f32") and case.scalars[SCALE] == 1.0
    assert all(c is not None for c in bases.values())
    assert bases[(dt.F32, dt.F32)] is not None and SCALE not in bases[(dt.F32, dt.F32)].types   # plain form kept

