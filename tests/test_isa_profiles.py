"""Profiles carry the public hardware facts; legality narrows per profile."""
from __future__ import annotations

import pytest

import openpto.isa as isa
from openpto.isa import profiles
from openpto.isa.types import Layout, Location

KB = 1024


@pytest.mark.parametrize("name,vec,acc,bias", [("a2", 192, 128, 1), ("a3", 192, 128, 1), ("a5", 256, 256, 4)])
def test_public_capacities(name: str, vec: int, acc: int, bias: int) -> None:
    p = profiles.get(name)
    assert p.capacity[Location.VEC] == vec * KB
    assert p.capacity[Location.MAT] == 512 * KB
    assert p.capacity[Location.LEFT] == p.capacity[Location.RIGHT] == 64 * KB
    assert p.capacity[Location.ACC] == acc * KB
    assert p.capacity[Location.BIAS] == bias * KB
    assert p.alignment == 32 and p.event_ids == 8


def test_unknown_profile() -> None:
    with pytest.raises(isa.SpecError) as e:
        profiles.get("a9")
    assert e.value.code == "SPEC_UNKNOWN_PROFILE" and "cpu" in str(e.value.expected)


@pytest.mark.parametrize("layout,itemsize,loc,box", [
    (Layout.NZ, 2, Location.LEFT, (16, 16)), (Layout.NZ, 4, Location.MAT, (16, 8)),
    (Layout.NZ, 1, Location.MAT, (16, 32)), (Layout.ZN, 2, Location.RIGHT, (16, 16)),
    (Layout.ZN, 1, Location.RIGHT, (32, 16)), (Layout.NZ, 4, Location.ACC, (16, 16)),
])
def test_fractal_boxes(layout: Layout, itemsize: int, loc: Location, box: tuple[int, int]) -> None:
    assert profiles.fractal_box(layout, itemsize, loc) == box


def test_row_alignment_rule() -> None:
    a3, cpu = profiles.get("a3"), profiles.get("cpu")
    assert a3.row_alignment_error(16, 8, 4, Layout.ND, Location.VEC) is None      # 32 B rows
    assert a3.row_alignment_error(16, 4, 4, Layout.ND, Location.VEC) is not None  # 16 B rows
    assert a3.row_alignment_error(8, 1, 4, Layout.DN, Location.VEC) is None       # 8 x f32 column
    assert a3.row_alignment_error(4, 1, 4, Layout.DN, Location.VEC) is not None
    assert a3.row_alignment_error(1, 4, 4, Layout.ND, Location.VEC) is not None   # no single-row exemption
    assert a3.row_alignment_error(32, 24, 2, Layout.NZ, Location.MAT) is not None  # 24 % 16 != 0
    assert cpu.row_alignment_error(3, 3, 4, Layout.ND, Location.VEC) is None


def test_a3_equals_a2_legality() -> None:
    for instr in isa.all_instructions():
        assert instr.dtype_rule("a2") == instr.dtype_rule("a3"), instr.mnemonic
        assert instr.supported_on("a2") == instr.supported_on("a3"), instr.mnemonic


def test_npu_profiles_narrow_public_tables() -> None:
    tadd = isa.get("TADD")
    a3 = {t[0].name for t in tadd.dtype_rule("a3").tuples}
    a5 = {t[0].name for t in tadd.dtype_rule("a5").tuples}
    assert a3 == {"i32", "i16", "f16", "f32"}
    assert a5 == {"i32", "u32", "f32", "i16", "u16", "f16", "bf16", "u8", "i8"}
    assert not isa.get("TADDC").supported_on("a3") and isa.get("TADDC").supported_on("cpu")
