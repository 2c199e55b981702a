"""Whole-spec properties: every declaration is complete, self-consistent and documented."""
from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import openpto.isa as isa
from openpto.isa import checks, docgen, dtypes as dt, profiles
from openpto.isa.render import example_statement, spec_json
from openpto.isa.spec import Kind, Role
from openpto.isa.types import parse_type

ROOT = Path(__file__).resolve().parents[1]
ALL = isa.all_instructions()
IDS = [i.mnemonic for i in ALL]

PUBLIC_INVENTORY = """
TSYNC TASSIGN TSETFMATRIX TSET_IMG2COL_RPT TSET_IMG2COL_PADDING
TADD TSUB TMUL TDIV TMIN TMAX TAND TOR TXOR TSHL TSHR TNOT TABS TNEG TEXP TLOG TSQRT TRSQRT TRECIP
TRELU TPRELU TREM TFMOD TADDC TSUBC TCMP TSEL TCVT
TADDS TSUBS TMULS TDIVS TMAXS TMINS TANDS TORS TXORS TSHLS TSHRS TREMS TFMODS TLRELU TADDSC TSUBSC
TEXPANDS TCMPS TSELS
TROWSUM TROWMAX TROWMIN TROWPROD TCOLSUM TCOLMAX TCOLMIN TCOLPROD TROWEXPAND TCOLEXPAND
TROWEXPANDADD TROWEXPANDSUB TROWEXPANDMUL TROWEXPANDDIV TROWEXPANDMAX TROWEXPANDMIN TROWEXPANDEXPDIF
TCOLEXPANDADD TCOLEXPANDSUB TCOLEXPANDMUL TCOLEXPANDDIV TCOLEXPANDMAX TCOLEXPANDMIN TCOLEXPANDEXPDIF
TLOAD TSTORE TSTORE_FP TPREFETCH MGATHER MSCATTER
TMATMUL TMATMUL_ACC TMATMUL_BIAS TMATMUL_MX TGEMV TGEMV_ACC TGEMV_BIAS TGEMV_MX
TMOV TMOV_FP TEXTRACT TEXTRACT_FP TINSERT TINSERT_FP TTRANS TRESHAPE TFILLPAD TFILLPAD_INPLACE
TFILLPAD_EXPAND TIMG2COL
TSORT32 TMRGSORT TGATHER TGATHERB TSCATTER TCI TTRI TPARTADD TPARTMUL TPARTMAX TPARTMIN TQUANT TPRINT
""".split()


def test_public_inventory_is_declared() -> None:
    assert len(PUBLIC_INVENTORY) == 115
    missing = [m for m in PUBLIC_INVENTORY if isa.lookup(m) is None]
    assert not missing
    assert len(ALL) >= 110


def test_every_family_is_populated() -> None:
    for fam, instrs in isa.by_family().items():
        assert instrs, fam


def test_lookup_accepts_public_spellings() -> None:
    assert isa.get("pto.tadd") is isa.get("TADD") is isa.get("tadd")
    with pytest.raises(isa.SpecError) as e:
        isa.get("TNOPE")
    assert e.value.code == "SPEC_UNKNOWN_INSTRUCTION"


@pytest.mark.parametrize("instr", ALL, ids=IDS)
def test_declaration_is_complete(instr: isa.Instruction) -> None:
    assert callable(instr.semantics)
    assert instr.summary and instr.doc and len(instr.doc) > 20
    assert instr.numerics.kind in {"exact", "rounded", "ulp", "sum", "unspecified"}
    if instr.numerics.kind == "ulp":
        assert instr.numerics.ulp > 0
    names = [o.name for o in instr.operands]
    assert len(names) == len(set(names))
    has_typed = any(o.kind in (Kind.TILE, Kind.GLOBAL) for o in instr.operands)
    if has_typed:
        assert instr.dtypes is not None and instr.dtypes.tuples
    if instr.dtypes is not None:
        assert set(instr.dtypes.operands) <= set(names)
    for p in profiles.PROFILES:
        narrowed = instr.profile_dtypes.get(p)
        if narrowed is not None:
            assert narrowed.operands == instr.dtypes.operands
            assert narrowed.tuples <= instr.dtypes.tuples, f"{p} allows more than the architecture"
            assert narrowed.tuples, f"{p}: empty dtype rule; use profiles= instead"
    assert instr.supported_on("cpu")


def _value_for(op, t, ex, rng):  # noqa: ANN001, ANN202
    if op.kind is Kind.TILE:
        tile = isa.Tile.empty(t)
        d = t.dtype
        if d.kind == "bool":
            tile.data[...] = rng.random(t.shape) < 0.5
        elif d.is_float:
            tile.data[...] = rng.uniform(0.5, 2.0, t.shape).astype(d.np_dtype)
        else:
            tile.data[...] = rng.integers(0, 4, t.shape).astype(d.np_dtype)
        if op.name in ex.contents:                  # configuration values the example states
            row = np.asarray(ex.contents[op.name])
            tile.data[0, :row.size] = row.astype(d.np_dtype)
        return tile
    if op.kind is Kind.GLOBAL:
        shape = tuple(64 if s is None else s for s in t.shape)
        arr = (rng.uniform(0.5, 2.0, shape) if t.dtype.is_float else rng.integers(0, 4, shape))
        return isa.GlobalRef(arr.astype(t.dtype.np_dtype), layout=t.layout)
    return ex.scalars.get(op.name, 0 if op.kind is Kind.INDEX else 1)


@pytest.mark.parametrize("instr", ALL, ids=IDS)
def test_example_is_legal_and_runs(instr: isa.Instruction) -> None:
    for ex in (instr.example,) + instr.more_examples:
        _example_is_legal_and_runs(instr, ex)


def _example_is_legal_and_runs(instr: isa.Instruction, ex: isa.spec.Example) -> None:
    types = {n: parse_type(s) for n, s in ex.types.items()}
    errs = checks.check_structure(instr, types, ex.attrs)
    assert not errs, [e.render() for e in errs]
    errs = checks.check_legality(instr, types, ex.attrs, profiles.get("cpu"))
    assert not errs, [e.render() for e in errs]
    rng = np.random.default_rng(0)
    kwargs = {}
    for op in instr.operands:
        if op.name in types:
            kwargs[op.name] = _value_for(op, types[op.name], ex, rng)
        elif op.name in ex.scalars:
            kwargs[op.name] = ex.scalars[op.name]
    before = {n: v.data.copy() for n, v in kwargs.items() if isinstance(v, isa.Tile)}
    if ex.state is not None:
        kwargs["state"] = copy.deepcopy(dict(ex.state))
    with np.errstate(all="raise"):
        instr.execute(**kwargs, **ex.attrs)
    for op in instr.operands:
        v = kwargs.get(op.name)
        if isinstance(v, isa.Tile):
            assert v.data.dtype == v.type.dtype.np_dtype
            if op.role is Role.IN:
                np.testing.assert_array_equal(v.data, before[op.name], err_msg=f"{op.name} is an input")


@pytest.mark.parametrize("instr", ALL, ids=IDS)
def test_example_statement_mentions_every_present_operand(instr: isa.Instruction) -> None:
    text = example_statement(instr)
    m = re.match(r"^(?:%\w+(?:, %\w+)* = )?(\S+)", text)
    assert m and m.group(1) == instr.asm_name
    for op in instr.operands:
        if op.name in instr.example.types:
            assert f"%{op.name}" in text


def test_checks_report_stable_codes() -> None:
    tadd = isa.get("TADD")
    t = lambda s: parse_type(s)  # noqa: E731
    ok = {"dst": t("!pto.tile<16x16xf32>"), "src0": t("!pto.tile<16x16xf32>"), "src1": t("!pto.tile<16x16xf32>")}
    assert not checks.check_structure(tadd, ok, {})
    assert not checks.check_legality(tadd, ok, {}, profiles.get("a3"))

    def codes(types, attrs=None, profile=None):  # noqa: ANN001, ANN202
        errs = checks.check_structure(tadd if "cmp" not in str(attrs) else isa.get("TCMP"), types, attrs or {})
        if profile:
            errs += checks.check_legality(tadd, types, attrs or {}, profiles.get(profile))
        return [e.code for e in errs]

    # static shapes may differ (the public kernels compare valid regions only)
    assert codes({**ok, "src1": t("!pto.tile<16x32xf32>")}) == []
    assert codes({**ok, "src1": t("!pto.tile<8x32xf32>")}) == ["STRUCT_VALID_REGION"]
    sel = {"dst": ok["dst"], "mask": t("!pto.tile<16x32xi1>"), "src0": ok["src0"], "src1": ok["src1"]}
    assert [e.code for e in checks.check_structure(isa.get("TSEL"), sel, {})] == []   # the mask's own shape
    sel = {**sel, "src1": t("!pto.tile<16x32xf32>")}    # data operands: one public tile type
    assert [e.code for e in checks.check_structure(isa.get("TSEL"), sel, {})] == ["STRUCT_SHAPE"]
    assert codes({**ok, "src1": t("!pto.tile<16x16xf32, valid=8x16>")}) == ["STRUCT_VALID_REGION"]
    assert codes({**ok, "src1": t("!pto.memref<16x16xf32>")}) == ["STRUCT_OPERAND_KIND"]
    assert codes({k: v for k, v in ok.items() if k != "src1"}) == ["STRUCT_MISSING_OPERAND"]
    assert codes(ok, {"bogus": 1}) == ["STRUCT_UNKNOWN_ATTR"]
    u8 = {k: t("!pto.tile<16x32xu8>") for k in ok}
    assert codes(u8, profile="cpu") == []
    assert codes(u8, profile="a3") == ["LEGAL_DTYPE"]
    assert codes({k: t("!pto.tile<16x16xf32, loc=mat>") for k in ok}, profile="cpu") == ["LEGAL_LOCATION"] * 3
    assert codes({k: t("!pto.tile<16x4xf32>") for k in ok}, profile="a3") == ["LEGAL_ALIGNMENT"] * 3
    assert codes({k: t("!pto.tile<512x128xf32>") for k in ok}, profile="a3") == ["LEGAL_CAPACITY"] * 3
    tcmp = isa.get("TCMP")
    mask = {"dst": t("!pto.tile<16x16xi1>"), "src0": ok["src0"], "src1": ok["src1"]}
    assert [e.code for e in checks.check_structure(tcmp, mask, {})] == ["STRUCT_MISSING_ATTR"]
    assert [e.code for e in checks.check_structure(tcmp, mask, {"cmpMode": "GT"})] == ["STRUCT_ATTR_VALUE"]
    e = checks.check_legality(tadd, u8, {}, profiles.get("a3"))[0]
    assert "u8" in str(e.actual) and "f32" in str(e.expected)


def test_docs_are_up_to_date() -> None:
    committed = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "isa").glob("*.md")}
    generated = docgen.generate()
    stale = sorted(n for n in set(committed) | set(generated) if committed.get(n) != generated.get(n))
    assert not stale, f"run 'pto isa --write-docs docs/isa': stale pages {stale[:10]}"


def test_every_instruction_has_a_page() -> None:
    files = docgen.generate()
    for i in ALL:
        assert f"{i.mnemonic}.md" in files
        assert f"[{i.mnemonic}]({i.mnemonic}.md)" in files["README.md"]


def test_json_dump_is_complete() -> None:
    data = json.loads(json.dumps(spec_json()))
    assert len(data["instructions"]) == len(ALL) >= 110
    assert {d["name"] for d in data["dtypes"]} == set(dt.BY_NAME)
    for ins in data["instructions"]:
        assert ins["has_semantics"] and ins["numerics"]["text"]
        assert set(ins["dtypes"]) == set(profiles.PROFILES)
    assert len(data["decisions"]) >= 17


def test_cli_isa_commands(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "openpto.cli", *args], capture_output=True, text=True)

    r = run("isa")
    assert r.returncode == 0 and "TROWSUM" in r.stdout and f"{len(ALL)} instructions" in r.stdout
    r = run("isa", "trowsum")
    assert r.returncode == 0 and r.stdout.startswith("# TROWSUM")
    r = run("isa", "--json")
    assert len(json.loads(r.stdout)["instructions"]) == len(ALL)
    r = run("isa", "--write-docs", str(tmp_path))
    assert r.returncode == 0 and (tmp_path / "TADD.md").exists()
    r = run("isa", "TNOPE")
    assert r.returncode == 2 and "SPEC_UNKNOWN_INSTRUCTION" in r.stderr and "Traceback" not in r.stderr
