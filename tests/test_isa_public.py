"""Every tile-level instruction of the public PTO ISA manual is an openpto instruction.

The list is the public manual's instruction pages (``docs/isa/*.md`` of the hw-native-sys/pto-isa
snapshot named in docs/isa/README.md, plus the grouped pages of SETHF32MODE, SETTF32MODE, TALIAS and
TPACK); communication instructions are a separate family and not listed here."""
from __future__ import annotations

import pytest

from openpto.isa import registry

PUBLIC_MNEMONICS = (
    "MGATHER", "MSCATTER", "SETFMATRIX", "SETHF32MODE", "SETTF32MODE", "SET_IMG2COL_PADDING",
    "SET_IMG2COL_RPT", "SET_QUANT_SCALAR", "SET_QUANT_VECTOR", "SYNCALL", "TABS", "TADD", "TADDC",
    "TADDDEQRELU", "TADDRELUCONV", "TADDS", "TADDSC", "TALIAS", "TALLOC", "TAND", "TANDS", "TASSIGN", "TAXPY",
    "TCI", "TCMP", "TCMPS", "TCOLARGMAX", "TCOLARGMIN", "TCOLEXPAND", "TCOLEXPANDADD", "TCOLEXPANDDIV",
    "TCOLEXPANDEXPDIF", "TCOLEXPANDMAX", "TCOLEXPANDMIN", "TCOLEXPANDMUL", "TCOLEXPANDSUB", "TCOLMAX",
    "TCOLMIN", "TCOLPROD", "TCOLSUM", "TCONCAT", "TCVT", "TDEINTERLEAVE", "TDEQUANT", "TDIV", "TDIVS", "TEXP",
    "TEXPANDS", "TEXTRACT", "TEXTRACT_FP", "TFILLPAD", "TFILLPAD_EXPAND", "TFILLPAD_INPLACE", "TFMOD",
    "TFMODS", "TFREE", "TFUSEDMULADD", "TFUSEDMULADDRELU", "TGATHER", "TGATHERB", "TGEMV", "TGEMV_ACC",
    "TGEMV_BIAS", "TGEMV_MX", "TGET_SCALE_ADDR", "THISTOGRAM", "TIMG2COL", "TINSERT", "TINSERT_FP",
    "TINTERLEAVE", "TLOAD", "TLOG", "TLRELU", "TMATMUL", "TMATMUL_ACC", "TMATMUL_BIAS", "TMATMUL_MX",
    "TMATMUL_MX_HIF4", "TMAX", "TMAXS", "TMIN", "TMINS", "TMOV", "TMOV_FP", "TMRGSORT", "TMUL", "TMULADDDST",
    "TMULS", "TNEG", "TNOT", "TOR", "TORS", "TPACK", "TPAIRREDUCESUM", "TPARTADD", "TPARTARGMAX",
    "TPARTARGMIN", "TPARTMAX", "TPARTMIN", "TPARTMUL", "TPOP", "TPOW", "TPOWS", "TPREFETCH",
    "TPREFETCH_ASYNC", "TPRELU", "TPRINT", "TPUSH", "TQUANT", "TQUANT_DN", "TQUANT_HIF4", "TRANDOM", "TRECIP",
    "TRELU", "TREM", "TREMS", "TRESHAPE", "TROWARGMAX", "TROWARGMIN", "TROWEXPAND", "TROWEXPANDADD",
    "TROWEXPANDDIV", "TROWEXPANDEXPDIF", "TROWEXPANDMAX", "TROWEXPANDMIN", "TROWEXPANDMUL", "TROWEXPANDSUB",
    "TROWMAX", "TROWMIN", "TROWPROD", "TROWSUM", "TRSQRT", "TSCATTER", "TSEL", "TSELS", "TSHL", "TSHLS",
    "TSHR", "TSHRS", "TSORT32", "TSQRT", "TSTORE", "TSTORE_FP", "TSUB", "TSUBC", "TSUBRELU", "TSUBS",
    "TSUBSC", "TSUBVIEW", "TSYNC", "TTRANS", "TTRI", "TXOR", "TXORS",
)


def test_the_list_is_the_whole_manual() -> None:
    assert len(PUBLIC_MNEMONICS) == len(set(PUBLIC_MNEMONICS)) == 154


@pytest.mark.parametrize("mnemonic", PUBLIC_MNEMONICS)
def test_public_mnemonic_is_declared(mnemonic: str) -> None:
    instr = registry.lookup(mnemonic)
    assert instr is not None, f"{mnemonic} is in the public manual but not in openpto"
    assert instr.mnemonic == mnemonic, f"{mnemonic} is listed by `pto isa` as {instr.mnemonic}"
