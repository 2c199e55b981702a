"""Conformance levels 0 and 1: the reference backend passes both for every instruction on
cpu and a3, and each level reports a deliberately broken component failing on the right
instruction (a printer that drops attributes; backends that skip verification, skip one rule,
report the wrong code, reject legal programs or crash) with a reproducer that really is what
the failure message says."""
from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import strategies as st

from openpto.assembler import diagnose, parse, printer
from openpto.backends.reference import ReferenceBackend
from openpto.conformance import cases as C
from openpto.conformance.level0 import explore, run_level0
from openpto.conformance.level1 import mutants, run_level1
from openpto.conformance.outcome import Failure
from openpto.isa import dtypes as dt
from openpto.isa.checks import check_legality, check_structure
from openpto.isa.diagnostics import LegalityError, PTOError
from openpto.isa.profiles import PROFILES
from openpto.isa.registry import get
from openpto.isa.types import SCALAR_NAMES, ScalarType

REFERENCE = ReferenceBackend()


def first_dtypes(instr, profile: str) -> tuple:  # noqa: ANN001
    """The first dtype tuple with a legal case (every instruction has one)."""
    return next(d for d, c in C.base_cases(instr, profile).items() if c is not None)


def reproducer_errors(program: str, profile: str) -> list[str]:
    """What the assembler says about a failure's program text: parse or verifier codes."""
    try:
        return [e.code for e in diagnose(parse(program), profile)]
    except PTOError as e:
        return [e.code]


# --------------------------------------------------------------------------- the reference passes

@pytest.mark.parametrize("profile", ["cpu", "a3"])
def test_reference_passes_levels_0_and_1_for_every_instruction(profile: str) -> None:
    bad = []
    for instr in C.instructions(profile):
        dtypes = first_dtypes(instr, profile)
        for run in (run_level0, run_level1):
            o = run(REFERENCE, profile, instr, dtypes, max_examples=1, seed=0)
            if o.status != "pass" or o.examples < 1 + o.level:   # L1 counts the legal case too
                bad.append((o.level, o.instruction, o.dtypes, o.status, o.reason))
    assert not bad


def test_reference_passes_every_dtype_tuple_of_an_instruction() -> None:
    instr = get("TCVT")
    tuples = C.supported_dtypes(instr, "a3")
    assert len(tuples) > 10
    for d in tuples:
        for run in (run_level0, run_level1):
            o = run(REFERENCE, "a3", instr, d, max_examples=1, seed=1)
            assert (o.status, o.dtypes) == ("pass", C.dtype_key(d)), o.reason


def without_case(monkeypatch: pytest.MonkeyPatch, mnemonic: str, profile: str) -> tuple:
    """Make the case search find no legal case for one legal dtype tuple of ``mnemonic`` on
    ``profile`` (what happens when no re-shaping of the example is legal for it) and return
    that tuple. Which real pairs lack a case changes as examples and rules improve, so the
    report is checked on a pair made untestable here."""
    real = C.base_cases
    gone = list(real(get(mnemonic), profile))[-1]

    def patched(instr, p: str) -> dict:  # noqa: ANN001
        out = dict(real(instr, p))
        if (instr.mnemonic, p) == (mnemonic, profile):
            out[gone] = None
        return out
    monkeypatch.setattr(C, "base_cases", patched)
    return gone


def test_untestable_pairs_are_reported_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = without_case(monkeypatch, "TMATMUL_MX", "a5")
    mx = get("TMATMUL_MX")
    for run in (run_level0, run_level1):
        o = run(REFERENCE, "a5", mx, missing, max_examples=1)
        assert (o.status, o.dtypes) == ("skipped", C.dtype_key(missing)) and "no legal case" in o.reason
        o = run(REFERENCE, "a3", get("TADD"), (dt.I1, dt.I1, dt.I1), max_examples=1)
        assert o.status == "unsupported" and "not legal on profile a3" in o.reason


# --------------------------------------------------------------------------- what L1 generates

@pytest.mark.parametrize("profile, alignment", [("cpu", False), ("a3", True)])
def test_mutants_cover_every_kind_of_illegal_use(profile: str, alignment: bool) -> None:
    """Over all instructions the generic edits produce each diagnostic family the issue
    names; the alignment rule only where the profile enforces it."""
    codes = set()
    for instr in C.instructions(profile):
        ms = mutants(C.base_cases(instr, profile)[first_dtypes(instr, profile)])
        assert ms, instr.mnemonic
        for m in ms:
            codes |= m.codes
    assert {"LEGAL_DTYPE", "LEGAL_LOCATION", "LEGAL_LAYOUT", "LEGAL_CAPACITY", "STRUCT_MISSING_ATTR",
            "STRUCT_UNKNOWN_ATTR", "STRUCT_ATTR_VALUE", "STRUCT_MISSING_OPERAND", "STRUCT_SHAPE",
            "STRUCT_VALID_REGION"} <= codes
    assert ("LEGAL_ALIGNMENT" in codes) is alignment


def test_a_mutant_differs_from_its_case_by_the_edit_it_names() -> None:
    base = C.base_cases(get("TADD"), "a3")[(dt.F32,) * 3]
    by_change = {m.change: m for m in mutants(base)}
    m = by_change["dtype of src1: f32 -> i32"]
    assert m.codes == {"LEGAL_DTYPE"} and m.case.types["src1"].dtype is dt.I32
    assert {k: v for k, v in m.case.types.items() if k != "src1"} == \
        {k: v for k, v in base.types.items() if k != "src1"}
    # operands need covering valid regions, not equal static shapes: a wider src0 only breaks alignment
    assert by_change["src0.cols plus one"].codes == {"LEGAL_ALIGNMENT"}
    assert by_change["every cols = 16 plus one"].codes == {"LEGAL_ALIGNMENT"}   # 17 x 4 bytes
    assert "LEGAL_CAPACITY" in by_change["every operand scaled 256x1 so dst exceeds vec"].codes
    assert by_change["location of dst: vec -> mat"].codes == {"LEGAL_LOCATION"}
    assert by_change["layout of dst: ND -> NZ"].codes == {"LEGAL_LAYOUT"}           # not in vec on a3
    assert by_change["unknown attribute zz_not_an_attribute"].codes == {"STRUCT_UNKNOWN_ATTR"}
    assert "layout of dst: ND -> DN" not in by_change                              # legal: dropped


# --------------------------------------------------------------------------- broken backends

class NoVerify(ReferenceBackend):
    """Lowers whatever it is given (for some instructions, or all)."""

    name = "no-verify"

    def __init__(self, only: frozenset[str] | None = None) -> None:
        self.only = only

    def compile(self, module, profile=None, **options: Any):  # noqa: ANN001, ANN201
        profile = profile or self.default_profile
        ops = {s.instr.mnemonic for k in module.kernels for s in k.walk() if hasattr(s, "instr")}
        if self.only is not None and not ops & self.only:
            return super().compile(module, profile, **options)
        return self._compile(module, profile, **options)


class IgnoresDtypes(ReferenceBackend):
    """Verifies everything except the dtype tables."""

    name = "ignores-dtypes"

    def compile(self, module, profile=None, **options: Any):  # noqa: ANN001, ANN201
        profile = profile or self.default_profile
        errors = [e for e in diagnose(module, profile) if e.code != "LEGAL_DTYPE"]
        if errors:
            raise errors[0]
        return self._compile(module, profile, **options)


class WrongCode(ReferenceBackend):
    name = "wrong-code"

    def compile(self, module, profile=None, **options: Any):  # noqa: ANN001, ANN201
        try:
            return super().compile(module, profile, **options)
        except PTOError as e:
            raise LegalityError("LEGAL_PROFILE", "rejected", location=e.location) from None


class RejectsAll(ReferenceBackend):
    name = "rejects-all"

    def compile(self, module, profile=None, **options: Any):  # noqa: ANN001, ANN201
        raise LegalityError("LEGAL_LAYOUT", "nothing is legal here")


class Crashes(ReferenceBackend):
    name = "crashes"

    def compile(self, module, profile=None, **options: Any):  # noqa: ANN001, ANN201
        raise RuntimeError("boom")


def test_a_backend_that_skips_verification_fails_level_1_everywhere_with_illegal_reproducers() -> None:
    backend = NoVerify()
    for instr in C.instructions("a3"):
        dtypes = first_dtypes(instr, "a3")
        assert run_level0(backend, "a3", instr, dtypes, max_examples=1).status == "pass"
        o = run_level1(backend, "a3", instr, dtypes, max_examples=1, seed=0)
        assert o.status == "fail", instr.mnemonic
        assert "an illegal program compiled" in o.failure.message
        assert o.failure.program and reproducer_errors(o.failure.program, "a3"), o.failure.program


def test_level_1_names_the_instructions_whose_checks_are_skipped() -> None:
    broken = frozenset({"TADD", "TCMPS"})
    backend = NoVerify(broken)
    failing = set()
    for name in ("TADD", "TSUB", "TMUL", "TCMP", "TCMPS", "TADDS", "TLOAD"):
        o = run_level1(backend, "a3", name, first_dtypes(get(name), "a3"), max_examples=2, seed=0)
        assert o.status in ("pass", "fail")
        if o.status == "fail":
            failing.add(name)
    assert failing == broken


def only_dtype_is_wrong(instr, profile: str) -> bool:  # noqa: ANN001
    """Whether retyping one dtype-rule operand of the base case can break the dtype table
    and nothing else, judged by the isa checks directly."""
    rule = instr.dtype_rule(profile)
    base = C.base_cases(instr, profile)[first_dtypes(instr, profile)]
    for name in rule.operands if rule else ():
        if name not in base.types:            # an optional operand the example leaves out
            continue
        t = base.types[name]
        for d in dt.ALL:
            if isinstance(t, ScalarType):
                if d.name not in SCALAR_NAMES:
                    continue
                types = {**base.types, name: ScalarType(d.name)}
            else:
                types = {**base.types, name: dataclasses.replace(t, dtype=d)}
            errs = check_structure(instr, types, base.attrs) or \
                check_legality(instr, types, base.attrs, PROFILES[profile])
            if {e.code for e in errs} == {"LEGAL_DTYPE"}:
                return True
    return False


def test_a_backend_without_dtype_checks_fails_where_only_the_dtype_table_is_broken() -> None:
    backend = IgnoresDtypes()
    wrong = []
    for instr in C.instructions("cpu"):
        o = run_level1(backend, "cpu", instr, first_dtypes(instr, "cpu"), max_examples=1, seed=0)
        if (o.status == "fail") != only_dtype_is_wrong(instr, "cpu"):
            wrong.append((instr.mnemonic, o.status, o.reason))
        elif o.status == "fail":
            assert o.failure.message.startswith("dtype of "), o.failure.message
            assert set(reproducer_errors(o.failure.program, "cpu")) == {"LEGAL_DTYPE"}
    assert not wrong


def test_a_wrong_code_is_a_failure() -> None:
    o = run_level1(WrongCode(), "a3", "TADD", (dt.F32,) * 3, max_examples=1)
    assert o.status == "fail"
    assert o.failure.message == ("dtype of dst: f32 -> f16: rejected with LEGAL_PROFILE, "
                                 "the spec expects LEGAL_DTYPE")


def test_rejecting_legal_programs_crashing_and_not_supporting_are_reported() -> None:
    o = run_level1(RejectsAll(), "cpu", "TADD", (dt.F32,) * 3, max_examples=1)
    assert o.status == "fail" and o.failure.message.startswith("a legal program was rejected with LEGAL_LAYOUT")
    assert "tadd" in o.failure.program
    o = run_level1(Crashes(), "cpu", "TADD", (dt.F32,) * 3, max_examples=1)
    assert o.status == "fail" and "RuntimeError: boom" in o.failure.message

    class NoTadd(ReferenceBackend):
        name = "no-tadd"
        rules = {k: v for k, v in ReferenceBackend.rules.items() if k != "TADD"}

    o = run_level1(NoTadd(), "cpu", "TADD", (dt.F32,) * 3, max_examples=1)
    assert o.status == "unsupported" and "no lowering for TADD" in o.reason
    assert run_level1(NoTadd(), "cpu", "TSUB", (dt.F32,) * 3, max_examples=1).status == "pass"


# --------------------------------------------------------------------------- broken printer

def test_level_0_catches_a_printer_that_drops_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(printer, "_attrs", lambda instr, attrs: "")
    o = run_level0(REFERENCE, "cpu", "TCMP", first_dtypes(get("TCMP"), "cpu"), max_examples=3, seed=0)
    assert o.status == "fail" and "cmpMode" not in o.failure.program and "tcmp" in o.failure.program
    assert run_level0(REFERENCE, "cpu", "TADD", (dt.F32,) * 3, max_examples=3, seed=0).status == "pass"


# --------------------------------------------------------------------------- the exploration loop

def test_explore_reports_the_shrunk_counterexample() -> None:
    n, failure = explore(st.integers(0, 10_000), lambda x: Failure(str(x)) if x >= 37 else None, 100, seed=5)
    assert failure is not None and failure.message == "37" and n > 1
    n, failure = explore(st.integers(0, 10), lambda x: None, 7, seed=None)
    assert failure is None and 1 <= n <= 7


def test_explore_turns_a_crashing_check_into_a_failure() -> None:
    def check(x: int) -> Failure | None:
        raise ZeroDivisionError("inside the check")
    _, failure = explore(st.integers(), check, 5, seed=0)
    assert failure is not None and "ZeroDivisionError" in failure.message
