"""4-bit element types count as half a byte in every size rule the verifier applies: the
per-buffer totals of a kernel, a constant TASSIGN / alloc_tile placement, and pto.subset's
boxes (decision "4-bit moves and sizes"). The byte numbers below are worked out by hand."""
from __future__ import annotations

import pytest

import openpto.assembler as asm
from openpto.isa import dtypes as dt
from openpto.isa.types import parse_type

FP4 = "float4_e2m1x2"


def codes(text: str, profile: str) -> list:
    return asm.diagnose(asm.parse(text, filename="k.pto"), profile)


def tiles(n: int, spelling: str) -> str:
    return "\n".join(f".tile %t{k} : {spelling}" for k in range(n)) + "\n"


def test_memory_bytes_by_hand() -> None:
    assert dt.memory_bytes(dt.FP4_E2M1, 64) == 32 and dt.memory_bytes(dt.FP4_E1M2, 3) == 2   # odd: rounded up
    assert dt.memory_bytes(dt.I4, 1) == 1 and dt.memory_bytes(dt.I4, 0) == 0
    assert dt.memory_bytes(dt.F32, 10) == 40 and dt.memory_bytes(dt.I1, 10) == 10
    assert dt.memory_bytes(dt.HIF8, 7) == 7
    assert parse_type(f"!pto.tile<256x512x{FP4}>").nbytes == 65536          # 131072 elements / 2
    assert parse_type("!pto.tile<16x64xi4>").nbytes == 512


@pytest.mark.parametrize("spelling", [f"!pto.tile<256x512x{FP4}>", "!pto.tile<256x512xfloat4_e1m2x2>",
                                      "!pto.tile<256x512xhifloat4x2>"])
def test_kernel_total_fits_only_packed(spelling: str) -> None:
    # three 64 KiB tiles (128 KiB each at a byte per element): 196608 <= a5's 262144-byte UB
    assert codes(tiles(3, spelling), "a5") == []
    # five: 327680 bytes even packed
    errs = codes(tiles(5, spelling), "a5")
    assert [e.code for e in errs] == ["LEGAL_CAPACITY"]
    assert "take 327680 bytes, more than a5's 262144" in errs[0].message
    assert errs[0].expected == "<= 262144 bytes" and errs[0].actual == "327680 bytes"


def test_i4_total_on_a3() -> None:
    # a3's UB is 196608 bytes; a 256x512 i4 tile takes 65536: three fit exactly, four do not
    spelling = "!pto.tile<256x512xi4>"
    assert codes(tiles(3, spelling), "a3") == []
    errs = codes(tiles(4, spelling), "a3")
    assert [e.code for e in errs] == ["LEGAL_CAPACITY"] and errs[0].actual == "262144 bytes"
    # the same three tiles in u8 take twice the bytes: 393216
    assert [e.actual for e in codes(tiles(3, "!pto.tile<256x512xu8>"), "a3")] == ["393216 bytes"]


def test_mixed_total_counts_each_tile_in_its_own_size() -> None:
    # 128 KiB of f32 + two 64 KiB packed fp4 tiles = 262144: exactly a5's UB; one more: 327680
    body = ".tile %f : !pto.tile<128x256xf32>\n" + tiles(2, f"!pto.tile<256x512x{FP4}>")
    assert codes(body, "a5") == []
    over = body + f".tile %x : !pto.tile<256x512x{FP4}>\n"
    errs = codes(over, "a5")
    assert [e.code for e in errs] == ["LEGAL_CAPACITY"] and errs[0].actual == "327680 bytes"


PLACED = """kernel @k() {{
  .const %a = {addr} : index
  .tile %t addr = %a : !pto.tile<64x64x{d}>
}}
"""


@pytest.mark.parametrize("d, profile, cap", [(FP4, "a5", 262144), ("i4", "a3", 196608)])
def test_constant_placement_counts_packed_bytes(d: str, profile: str, cap: int) -> None:
    # 64x64 4-bit elements: 2048 bytes, so the last address that fits is cap - 2048
    assert codes(PLACED.format(d=d, addr=cap - 2048), profile) == []
    errs = codes(PLACED.format(d=d, addr=cap - 2016), profile)
    assert [e.code for e in errs] == ["LEGAL_CAPACITY"]
    assert errs[0].actual == f"{cap - 2016} + 2048 = {cap + 32}" and errs[0].expected == f"address + 2048 <= {cap}"
    assert (errs[0].location.line, errs[0].location.kernel) == (3, "k")
    assert codes(PLACED.format(d="u8", addr=cap - 2048), profile)[0].actual == f"{cap - 2048} + 4096 = {cap + 2048}"


def test_tassign_placements() -> None:
    text = """kernel @k(%a : index) {
  .const %end = 196608 : index
  .const %last = 195584 : index
  .tile %u addr = %last : !pto.tile<16x16xf32>
  .tile %v addr = %end : !pto.tile<16x16xf32>
  .tile %t : !pto.tile<16x16xf32>
  %t = tassign %a : (index) -> !pto.tile<16x16xf32>
  %t = tassign 195584 : (index) -> !pto.tile<16x16xf32>
  %t = tassign 195616 : (index) -> !pto.tile<16x16xf32>
  %t = tassign %end : (index) -> !pto.tile<16x16xf32>
}
"""
    errs = codes(text, "a3")      # 1024 bytes: 195584 + 1024 ends exactly at the end of a3's UB
    assert [(e.code, e.location.line, e.actual) for e in errs] == [
        ("LEGAL_CAPACITY", 5, "196608 + 1024 = 197632"), ("LEGAL_CAPACITY", 9, "195616 + 1024 = 196640"),
        ("LEGAL_CAPACITY", 10, "196608 + 1024 = 197632")]
    assert codes(text, "cpu") == []                      # a run-time address (%a) is not checked here


def _subset_codes(d: str, off: int, n: int) -> list[str]:
    text = (f"kernel @k(%g : !pto.memref<16x{n}x{d}>) {{\n  .tile %p : !pto.tile<16x128x{d}, loc=mat, layout=NZ>\n"
            f"  %w = pto.subset %p[0, {off}] sizes [16, {n}] : !pto.tile<16x128x{d}, loc=mat, layout=NZ>\n}}\n")
    return [e.code for e in asm.diagnose(asm.parse(text), "cpu")]


def test_subset_boxes_of_a_4bit_boxed_tile_are_64_wide() -> None:
    # a 32-byte box row holds 64 four-bit elements (32 u8 ones): splits at 64 columns only
    assert _subset_codes(FP4, 64, 64) == []
    assert _subset_codes(FP4, 32, 32) == ["STRUCT_LAYOUT"]
    assert _subset_codes("u8", 32, 32) == []
