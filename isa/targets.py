"""Legality of the newer public targets (a6, kirin9030, kirinX90), read from the public headers.

a2/a3/a5 legality is stated in each declaration (``profiles``, ``profile_dtypes``). The newer
targets implement a subset of the ISA, mostly by reusing the a5 (and some a2/a3) implementation
headers, so their legality is a table here rather than 150 edited declarations: an instruction is
legal on such a target when the target's implementation list provides it, with the dtype rule of
the profile it borrows from (``base``), less the element types the target lacks and, for the
matrix instructions, the accumulator types its cube supports. ``Instruction.supported_on`` and
``Instruction.dtype_rule`` consult this table, and ``Instruction.value_rules`` takes the base
profile's value limits; a declaration may still name a target explicitly (TSYNC's pipes do).

Snapshot: hw-native-sys/pto-isa commit 3186c381bd49e1164092e67ff1b3564302754e76
(2026-08-21). Implementation lists are the instructions whose ``*_IMPL`` the headers included
by ``include/pto/npu/<target>/header.hpp`` define, plus the overloads ``pto_instr.hpp`` builds
on them (TRECIP on TDIVS; the ``_FP`` forms where the target's TSTORE/TEXTRACT/TINSERT/TMOV
take a scaling tile). Header-only helper forms (``*_TILE``, ``*_CONVTILE``) have no openpto
mnemonic. ``kirinDev0000`` (a development target with no L0A/L0C, not in the public docs) is
not modelled.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

SNAPSHOT = "hw-native-sys/pto-isa 3186c381bd49e1164092e67ff1b3564302754e76 (2026-08-21)"

#: Instructions whose operand ``dst`` is the cube accumulator (narrowed by ``acc_dtypes``).
ACCUMULATING = frozenset({"TMATMUL", "TMATMUL_ACC", "TMATMUL_BIAS", "TMATMUL_MX",
                          "TGEMV", "TGEMV_ACC", "TGEMV_BIAS", "TGEMV_MX"})


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True)
class Target:
    """One derived target's legality: what it implements and which element types it lacks."""

    profile: str
    base: str                      # the profile whose per-instruction dtype narrowing applies
    implements: frozenset[str]     # public mnemonics with an implementation on this target
    lacks: frozenset[str]          # dtype names the target has no native type for
    acc_dtypes: frozenset[str]     # dtype names the cube accumulator (L0C) holds
    source: str                    # where the lists were read

    def provides(self, mnemonic: str) -> bool:
        return mnemonic in self.implements

    def narrow(self, mnemonic: str, operands: tuple[str, ...],
               combos: Iterable[tuple]) -> frozenset[tuple]:
        """The dtype tuples of ``base``'s rule this target keeps."""
        acc = operands.index("dst") if mnemonic in ACCUMULATING and "dst" in operands else None
        return frozenset(t for t in combos
                         if not any(d.name in self.lacks for d in t)
                         and (acc is None or t[acc].name in self.acc_dtypes))


# include/pto/npu/a6/header.hpp: a6 TSync, SyncAll, TLoad, TExtract, TMatmul, TReshape, TQuant;
# a5 TAssign, TAdd, TStore. Not wired into pto_instr_impl.hpp yet (bring-up target).
_A6 = Target(
    profile="a6", base="a5",
    implements=_names("SYNCALL TADD TASSIGN TEXTRACT TEXTRACT_FP TGEMV TGEMV_ACC TGEMV_BIAS TGEMV_MX "
                      "TLOAD TMATMUL TMATMUL_ACC TMATMUL_BIAS TMATMUL_MX TQUANT TRESHAPE TSTORE "
                      "TSTORE_FP TSYNC"),
    lacks=frozenset(),                                  # arch_capability.hpp: ArchTraitsFp4Capable
    acc_dtypes=frozenset({"f32", "i32"}),               # AccSupportsFloat, AccSupportsInt32
    source="include/pto/npu/a6/header.hpp, include/pto/common/arch_capability.hpp")

# Both Kirin header sets #define bfloat16_t as half and the fp8/fp4 types (float8_e8m0_t too) as
# integers: no native type. arch_capability.hpp: AccSupportsHalf, AccSupportsInt32.
_KIRIN_LACKS = frozenset({"bf16", "f8e4m3", "f8e5m2", "hifloat8", "f8e8m0", "float4_e2m1x2", "float4_e1m2x2"})
_KIRIN_ACC = frozenset({"f16", "i32"})

# include/pto/npu/kirin9030/header.hpp: its own TCvt, TExtract, TGather, TInsert, TLoad, TMatmul,
# TMov, TQuant, TStore, TSubS, TSync, TRem, TRemS; the rest from a5 headers.
_KIRIN9030 = Target(
    profile="kirin9030", base="a5",
    implements=_names(
        "SETFMATRIX SETTF32MODE SET_QUANT_SCALAR SET_QUANT_VECTOR TABS TADD TADDS TAND TANDS TASSIGN "
        "TAXPY TCI TCMP TCMPS TCOLARGMAX TCOLARGMIN TCOLEXPAND TCOLEXPANDADD TCOLEXPANDDIV "
        "TCOLEXPANDEXPDIF TCOLEXPANDMAX TCOLEXPANDMIN TCOLEXPANDMUL TCOLEXPANDSUB TCOLMAX TCOLMIN "
        "TCOLPROD TCOLSUM TCONCAT TCVT TDEQUANT TDIV TDIVS TEXP TEXPANDS TEXTRACT TFILLPAD "
        "TFILLPAD_EXPAND TFILLPAD_INPLACE TFMOD TFMODS TGATHER TGATHERB TGEMV TGEMV_ACC TGEMV_BIAS "
        "TGET_SCALE_ADDR THISTOGRAM TINSERT TLOAD TLOG TLRELU TMATMUL TMATMUL_ACC TMATMUL_BIAS "
        "TMATMUL_MX TMAX TMAXS TMIN TMINS TMOV TMRGSORT TMUL TMULS TNEG TNOT TOR TORS TPARTADD "
        "TPARTARGMAX TPARTARGMIN TPARTMAX TPARTMIN TPARTMUL TPOW TPOWS TPRELU TQUANT TRECIP TRELU "
        "TREM TREMS TRESHAPE TROWARGMAX TROWARGMIN TROWEXPAND TROWEXPANDADD TROWEXPANDDIV "
        "TROWEXPANDEXPDIF TROWEXPANDMAX TROWEXPANDMIN TROWEXPANDMUL TROWEXPANDSUB TROWMAX TROWMIN "
        "TROWPROD TROWSUM TRSQRT TSCATTER TSEL TSELS TSHL TSHLS TSHR TSHRS TSORT32 TSQRT TSTORE "
        "TSTORE_FP TSUB TSUBS TSUBVIEW TSYNC TTRANS TTRI TXOR TXORS"),
    lacks=_KIRIN_LACKS,
    acc_dtypes=_KIRIN_ACC,
    source="include/pto/npu/kirin9030/header.hpp, include/pto/common/arch_capability.hpp")

# include/pto/npu/kirinX90/header.hpp: its own TLoad, TStore, TExtract, TInsert, TMov, TCvt; the
# a2/a3 TSubView, TImg2col and img2col config; kirin9030 TSync, TMatmul, TGather, TQuant; a5 rest.
_KIRINX90 = Target(
    profile="kirinX90", base="a5",
    implements=_names(
        "SETFMATRIX SETTF32MODE SET_IMG2COL_PADDING SET_IMG2COL_RPT TABS TADD TADDS TAND TANDS TASSIGN "
        "TAXPY TCI TCMP TCMPS TCOLARGMAX TCOLARGMIN TCOLEXPAND TCOLEXPANDADD TCOLEXPANDDIV "
        "TCOLEXPANDEXPDIF TCOLEXPANDMAX TCOLEXPANDMIN TCOLEXPANDMUL TCOLEXPANDSUB TCOLMAX TCOLMIN "
        "TCOLPROD TCOLSUM TCONCAT TCVT TDIV TDIVS TEXP TEXPANDS TEXTRACT TEXTRACT_FP TFILLPAD "
        "TFILLPAD_EXPAND TFILLPAD_INPLACE TFMOD TFMODS TGATHER TGATHERB TGEMV TGEMV_ACC TGEMV_BIAS "
        "TIMG2COL TINSERT TINSERT_FP TLOAD TLOG TLRELU TMATMUL TMATMUL_ACC TMATMUL_BIAS TMATMUL_MX "
        "TMAX TMAXS TMIN TMINS TMOV TMOV_FP TMRGSORT TMUL TMULS TNEG TNOT TOR TORS TPARTADD "
        "TPARTARGMAX TPARTARGMIN TPARTMAX TPARTMIN TPARTMUL TPOW TPOWS TPRELU TQUANT TRECIP TRELU "
        "TRESHAPE TROWARGMAX TROWARGMIN TROWEXPAND TROWEXPANDADD TROWEXPANDDIV TROWEXPANDEXPDIF "
        "TROWEXPANDMAX TROWEXPANDMIN TROWEXPANDMUL TROWEXPANDSUB TROWMAX TROWMIN TROWPROD TROWSUM "
        "TRSQRT TSCATTER TSEL TSELS TSHL TSHLS TSHR TSHRS TSORT32 TSQRT TSTORE TSTORE_FP TSUB TSUBS "
        "TSUBVIEW TSYNC TTRANS TTRI TXOR TXORS"),
    lacks=_KIRIN_LACKS,
    acc_dtypes=_KIRIN_ACC,
    source="include/pto/npu/kirinX90/header.hpp, include/pto/common/arch_capability.hpp")

TARGETS: dict[str, Target] = {t.profile: t for t in (_A6, _KIRIN9030, _KIRINX90)}
