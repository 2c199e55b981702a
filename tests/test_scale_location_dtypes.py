"""Scale locations hold scale codes only: a scale_left / scale_right tile of another element type
than u8 / f8e8m0 is LEGAL_DTYPE (expected the two, actual the tile's, at the tile's declaration),
whichever instruction writes it (TMOV, TEXTRACT) and on every profile (decision 'Scale tile
element types')."""
from __future__ import annotations

import pytest

import openpto as pto
from openpto.assembler.verifier import diagnose
from openpto.isa import dtypes as dt
from openpto.isa.profiles import PROFILES
from openpto.isa.types import Location

MX = ("a5", "a6", "cpu")


def _kernel(dtype: str, mnemonic: str) -> str:
    """A mat scale tile moved into scale_left (TMOV) or scale_right (TEXTRACT)."""
    if mnemonic == "tmov":
        src, dst = f"!pto.tile<16x2x{dtype}, loc=mat, layout=ZZ_MX>", f"!pto.tile<16x2x{dtype}, loc=scale_left, layout=ZZ_MX>"
        body = f"  %s = tmov %m : ({src}) -> {dst}\n"
    else:
        src, dst = f"!pto.tile<2x16x{dtype}, loc=mat, layout=NN_MX>", f"!pto.tile<2x16x{dtype}, loc=scale_right, layout=NN_MX>"
        body = f"  %c0 = arith.constant 0 : index\n  %s = textract %m, %c0, %c0 : ({src}, index, index) -> {dst}\n"
    return f"kernel @k(%m : {src}) {{\n{body}}}\n"


def _codes(text: str, profile: str) -> list:
    return [(e.code, e.expected, e.actual, e.location.line if e.location else None)
            for e in diagnose(pto.parse(text), profile) if e.code != "LEGAL_UNSUPPORTED_INSTRUCTION"]


@pytest.mark.parametrize("profile", MX)
@pytest.mark.parametrize("mnemonic", ["tmov", "textract"])
@pytest.mark.parametrize("dtype", ["u8", "f8e8m0"])
def test_scale_codes_are_legal(profile: str, mnemonic: str, dtype: str) -> None:
    assert _codes(_kernel(dtype, mnemonic), profile) == []


@pytest.mark.parametrize("profile", MX)
@pytest.mark.parametrize("mnemonic,where", [("tmov", "scale_left"), ("textract", "scale_right")])
@pytest.mark.parametrize("dtype", ["f16", "i8", "f32", "f8e4m3", "bf16"])
def test_other_element_types_are_legal_dtype(profile: str, mnemonic: str, where: str, dtype: str) -> None:
    text = _kernel(dtype, mnemonic)
    errs = [e for e in diagnose(pto.parse(text), profile) if e.code == "LEGAL_DTYPE"]
    assert len(errs) == 1, errs
    e = errs[0]
    assert (e.expected, e.actual) == ("u8 or f8e8m0", dtype)
    assert where in e.message and "tile %s" in e.message
    assert e.location is not None and e.location.line == text.count("\n") - 1   # the writing statement


def test_a_scale_parameter_is_checked_at_its_declaration() -> None:
    text = ("kernel @k(%s : !pto.tile<16x2xf16, loc=scale_left, layout=ZZ_MX>, "
            "%m : !pto.tile<16x2xf16, loc=mat, layout=ZZ_MX>) {\n"
            "  tmov %s, %m\n}\n")
    errs = [e for e in diagnose(pto.parse(text), "a5") if e.code == "LEGAL_DTYPE"]
    assert [(e.expected, e.actual) for e in errs] == [("u8 or f8e8m0", "f16")]


def test_the_rule_is_profile_data_for_the_scale_locations_only() -> None:
    for p in PROFILES.values():
        assert dict(p.location_dtypes) == {Location.SCALE_LEFT: (dt.U8, dt.E8M0),
                                           Location.SCALE_RIGHT: (dt.U8, dt.E8M0)}
        assert p.dtype_error(Location.VEC, dt.F16) is None and p.dtype_error(Location.SCALE_LEFT, dt.U8) is None
        assert "f32" in (p.dtype_error(Location.SCALE_RIGHT, dt.F32) or "")
