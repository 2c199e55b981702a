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


# --------------------------------------------------------------------- the newer public targets
# Expected numbers are the public buffer_limits.hpp values, written out here (bytes / KB).

@pytest.mark.parametrize("name,vec,mat,l0,acc,bias,fbuf", [
    ("a6", 256, 512, 64, 256, 4, 4), ("kirin9030", 128, 512, 32, 64, 1, 7),
    ("kirinX90", 128, 1024, 64, 128, 1, 6)])
def test_newer_target_capacities(name: str, vec: int, mat: int, l0: int, acc: int, bias: int,
                                 fbuf: int) -> None:
    p = profiles.get(name)
    got = {loc: p.capacity[loc] // KB for loc in (Location.VEC, Location.MAT, Location.LEFT,
                                                   Location.RIGHT, Location.ACC, Location.BIAS,
                                                   Location.SCALING)}
    assert list(got.values()) == [vec, mat, l0, l0, acc, bias, fbuf]
    assert p.alignment == 32 and p.enforce_row_alignment
    assert p.layouts[Location.LEFT] == (Layout.NZ,) and p.layouts[Location.RIGHT] == (Layout.ZN,)


def test_target_table_names_a_snapshot_and_only_declared_mnemonics() -> None:
    from openpto.isa import targets
    assert "3186c381bd49e1164092e67ff1b3564302754e76" in targets.SNAPSHOT
    assert set(targets.TARGETS) <= set(profiles.PROFILES)
    declared = {i.mnemonic for i in isa.all_instructions()}
    for t in targets.TARGETS.values():
        assert t.implements <= declared, (t.profile, sorted(t.implements - declared))
        assert t.base in profiles.PROFILES and t.base not in targets.TARGETS


def test_a6_is_the_bring_up_subset() -> None:
    legal = {i.mnemonic for i in isa.all_instructions() if i.supported_on("a6")}
    assert legal == {"SYNCALL", "TADD", "TASSIGN", "TEXTRACT", "TEXTRACT_FP", "TGEMV", "TGEMV_ACC",
                     "TGEMV_BIAS", "TGEMV_MX", "TLOAD", "TMATMUL", "TMATMUL_ACC", "TMATMUL_BIAS",
                     "TMATMUL_MX", "TMATMUL_MX_HIF4", "TQUANT", "TQUANT_HIF4", "TRESHAPE", "TSTORE",
                     "TSTORE_FP", "TSYNC"}
    tadd = {t[0].name for t in isa.get("TADD").dtype_rule("a6").tuples}
    assert tadd == {"i32", "u32", "f32", "i16", "u16", "f16", "bf16", "u8", "i8"}   # a5's TADD table


@pytest.mark.parametrize("name", ["kirin9030", "kirinX90"])
def test_kirin_targets_lack_bf16_fp8_and_f32_accumulators(name: str) -> None:
    tadd = {t[0].name for t in isa.get("TADD").dtype_rule(name).tuples}
    assert tadd == {"i32", "u32", "f32", "i16", "u16", "f16", "u8", "i8"}
    mm = isa.get("TMATMUL").dtype_rule(name)
    assert mm.tuples and {t[0].name for t in mm.tuples} == {"i32"}
    assert all(t[1].name == "i8" for t in mm.tuples)
    assert not isa.get("TMATMUL_MX").supported_on(name)          # fp8 inputs, f32 accumulator
    cvt = isa.get("TCVT").dtype_rule(name)
    assert not any(d.name in ("bf16", "f8e4m3", "f8e5m2") for t in cvt.tuples for d in t)
    fp4 = {"float4_e2m1x2", "float4_e1m2x2"}           # header.hpp #defines both as int64_t
    for mover in ("TMOV", "TLOAD", "TEXTRACT", "TINSERT"):
        assert isa.get(mover).dtype_rule("a5").tuples and not any(
            d.name in fp4 for t in isa.get(mover).dtype_rule(name).tuples for d in t), mover
    for absent in ("TPUSH", "TPOP", "TPREFETCH", "TPRINT", "MGATHER", "TFUSEDMULADD", "TRANDOM"):
        assert not isa.get(absent).supported_on(name), absent
    for present in ("TSORT32", "TROWSUM", "TGATHER", "TCOLEXPAND", "TROWPROD", "TLOAD", "TSTORE"):
        assert isa.get(present).supported_on(name), present


def test_kirin_implementation_lists_differ_where_the_headers_do() -> None:
    assert isa.get("TREM").supported_on("kirin9030") and not isa.get("TREM").supported_on("kirinX90")
    assert isa.get("THISTOGRAM").supported_on("kirin9030") and not isa.get("THISTOGRAM").supported_on("kirinX90")
    assert isa.get("TIMG2COL").supported_on("kirinX90") and not isa.get("TIMG2COL").supported_on("kirin9030")
    assert isa.get("TMOV_FP").supported_on("kirinX90") and not isa.get("TMOV_FP").supported_on("kirin9030")


def test_newer_targets_reject_illegal_programs_with_legal_codes() -> None:
    from openpto.isa import checks
    from openpto.isa.types import parse_type
    types = {k: parse_type("!pto.tile<16x16xbf16>") for k in ("dst", "src0", "src1")}
    assert [e.code for e in checks.check_legality(isa.get("TADD"), types, {}, profiles.get("kirin9030"))] \
        == ["LEGAL_DTYPE"]
    assert checks.check_legality(isa.get("TADD"), types, {}, profiles.get("a6")) == []
    f32 = {k: parse_type("!pto.tile<16x16xf32>") for k in ("dst", "src")}
    errs = checks.check_legality(isa.get("TEXP"), f32, {}, profiles.get("a6"))
    assert [e.code for e in errs] == ["LEGAL_UNSUPPORTED_INSTRUCTION"]
    assert "kirin9030" in str(errs[0].expected) and "a6" not in str(errs[0].expected).split(", ")


# --------------------------------------------------------------------- a2/a3/a5 as the current headers have them
# Expected sets are written out from the headers' static_asserts (include/pto/npu/a2a3, .../a5).

def _names_on(mnemonic: str, profile: str, operand: int = 0) -> set[str]:
    return {t[operand].name for t in isa.get(mnemonic).dtype_rule(profile).tuples}


@pytest.mark.parametrize("mnemonic,profile,expected", [
    # a2/a3 TRowReduceCheck and a5 TRowSum/TRowProd: half, float, int32, int16; a5 max/min add int8/uint8
    ("TROWSUM", "a3", {"f16", "f32", "i16", "i32"}), ("TROWSUM", "a5", {"f16", "f32", "i16", "i32"}),
    ("TROWMAX", "a2", {"f16", "f32", "i16", "i32"}), ("TROWMAX", "a5", {"f16", "f32", "i16", "i32", "i8", "u8"}),
    ("TROWMIN", "a5", {"f16", "f32", "i16", "i32", "i8", "u8"}),
    ("TROWPROD", "a3", {"f16", "f32", "i16", "i32"}), ("TROWPROD", "a5", {"f16", "f32", "i16", "i32"}),
    # TColExpand: any 1-, 2- or 4-byte element type on a2/a3 and a5
    ("TCOLEXPAND", "a2", {"f32", "f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32"}),
    ("TCOLEXPAND", "a5", {"f32", "f16", "bf16", "i8", "u8", "i16", "u16", "i32", "u32"}),
    # a2/a3 TRem: float, int32; TFmod: float; a5 TRem/TFMod: half, float, (u)int16, (u)int32
    ("TREM", "a3", {"f32", "i32"}), ("TFMOD", "a2", {"f32"}),
    ("TREM", "a5", {"f16", "f32", "i16", "i32"}), ("TFMOD", "a5", {"f16", "f32", "i16", "i32"}),
    # a2/a3 TRemS: float, int32; TFmodS: float; a5: any 2- or 4-byte type
    ("TREMS", "a2", {"f32", "i32"}), ("TFMODS", "a3", {"f32"}),
    ("TREMS", "a5", {"f32", "f16", "bf16", "i16", "i32"}), ("TFMODS", "a5", {"f32", "f16", "bf16", "i16", "i32"}),
])
def test_npu_dtype_sets_follow_the_current_headers(mnemonic: str, profile: str, expected: set[str]) -> None:
    assert isa.get(mnemonic).supported_on(profile)
    assert _names_on(mnemonic, profile) == expected


def test_trowprod_and_tcolexpand_are_legal_on_every_npu_profile() -> None:
    for p in ("a2", "a3", "a5"):
        assert isa.get("TROWPROD").supported_on(p) and isa.get("TCOLEXPAND").supported_on(p), p


A2_STORE = {("i8", "f32"), ("u8", "f32"), ("i8", "i32"), ("u8", "i32"), ("f16", "i32")}
A5_SCALED = {("i8", "f32"), ("u8", "f32"), ("f16", "f32"), ("bf16", "f32"),
             ("i8", "i32"), ("u8", "i32"), ("f16", "i32"), ("bf16", "i32"), ("f8e4m3", "f32")}


@pytest.mark.parametrize("mnemonic,profile,expected", [
    # GetVectorPreQuantMode (a2a3/common.hpp, a5/common.hpp) and the stores' asserts: the (dst, acc)
    # pairs a scaling tile scales. a2/a3 moves take f32 -> i8 only from f32; the a5 store also maps
    # f32 -> f32 to a scaling mode; the a5 move and store also write hifloat8 (VQF322HIF8_PRE).
    ("TSTORE_FP", "a2", A2_STORE),
    ("TSTORE_FP", "a3", A2_STORE),
    ("TSTORE_FP", "a5", A5_SCALED | {("f32", "f32"), ("hifloat8", "f32")}),
    ("TMOV_FP", "a3", {("i8", "f32"), ("i8", "i32"), ("u8", "i32"), ("f16", "i32")}),
    ("TMOV_FP", "a5", A5_SCALED | {("hifloat8", "f32")}),
])
def test_scaled_acc_moves_on_npu_profiles(mnemonic: str, profile: str, expected: set[tuple[str, str]]) -> None:
    instr = isa.get(mnemonic)
    assert instr.supported_on(profile)
    rule = instr.dtype_rule(profile)
    assert {(t[0].name, t[1].name) for t in rule.tuples} == expected
    assert {t[2].name for t in rule.tuples} == {"f32"}
    f32s = tuple(isa.dtypes.get(n) for n in ("f32", "f32", "f32"))
    assert rule.allows(f32s) == (("f32", "f32") in expected)
    assert instr.dtype_rule("cpu").allows(f32s)


def test_ttri_types_per_profile() -> None:
    # a2/a3 TTri.hpp: (u)int32, (u)int16, half, float; a5 TTri.hpp also (u)int8 and bfloat16
    a2 = {"i32", "u32", "i16", "u16", "f16", "f32"}
    assert _names_on("TTRI", "a3") == a2
    assert _names_on("TTRI", "a5") == a2 | {"i8", "u8", "bf16"}
