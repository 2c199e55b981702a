"""The ``reshaped`` situation (conformance/cases.reshaped, coverage.SITUATIONS): operands of
static shapes of their own around valid regions that still cover dst's, built wherever the
checks accept them (the relaxed shape rules), and nowhere they require equal shapes."""
from __future__ import annotations

import pytest

from openpto.assembler.verifier import verify
from openpto.backends.reference import ReferenceBackend
from openpto.conformance import cases as C
from openpto.conformance import coverage as COV
from openpto.conformance import level2
from openpto.isa.registry import get
from openpto.isa.types import TileType

PROFILE = "cpu"


def base(mnemonic: str, key: str | None = None, profile: str = PROFILE) -> C.Case:
    bases = C.base_cases(get(mnemonic), profile)
    return next(c for d, c in bases.items() if c is not None and (key is None or C.dtype_key(d) == key))


def tiles(case: C.Case) -> dict[str, TileType]:
    return {n: t for n, t in case.types.items() if isinstance(t, TileType)}


def the_reshaped(case: C.Case) -> C.Case:
    (found,) = [c for c in C.structured(case) if "reshaped" in COV.structural(c)]
    return found


@pytest.mark.parametrize(("mnemonic", "key"), [("TADD", "f32"), ("TCVT", "f16,f32"), ("TCMP", None), ("TPOW", "f32"),
                                               ("TFUSEDMULADD", None), ("TSELS", None), ("TPAIRREDUCESUM", None),
                                               ("TMOV", "f16,f32"), ("TCOLSUM", "f32")])
def test_relaxed_instructions_get_operands_of_their_own_static_shape(mnemonic: str, key: str | None) -> None:
    ns = C.nonsquare(base(mnemonic, key))
    case = the_reshaped(ns)
    assert not case.errors()
    verify(case.module(), PROFILE)                      # the whole verifier (capacity included) takes it
    before, after = tiles(ns), tiles(case)
    for n, t in after.items():                          # grown, never shrunk; valid regions kept
        assert t.rows >= before[n].rows and t.cols >= before[n].cols and t.valid == before[n].valid
    grown = [n for n in after if after[n].shape != before[n].shape]
    assert grown
    # no two tiles grown by the same factors: each operand's row stride is its own
    factors = {n: (after[n].rows // before[n].rows, after[n].cols // before[n].cols) for n in after}
    assert len(set(factors.values())) == len(factors)


def test_tadd_operands_have_three_row_strides_and_one_valid_region() -> None:
    case = the_reshaped(C.nonsquare(base("TADD", "f32")))
    ts = tiles(case)
    assert len({t.cols for t in ts.values()}) == 3
    assert len({t.valid for t in ts.values()}) == 1


@pytest.mark.parametrize("mnemonic", ["TMATMUL", "TLOAD", "TSTORE"])
def test_no_reshaped_case_where_the_checks_require_the_shapes_or_one_tile_is_all(mnemonic: str) -> None:
    """TMATMUL's operands follow M, K, N (a grown operand breaks them); a single-tile instruction
    has nothing to be out of proportion with."""
    built = C.structured(base(mnemonic, "f32" if mnemonic != "TMATMUL" else None))
    assert C.reshaped(C.nonsquare(base(mnemonic, "f32" if mnemonic != "TMATMUL" else None))) is None
    assert "reshaped" not in COV.applicable(built, strided=True)


def test_whole_case_scalings_are_not_reshaped() -> None:
    ns = C.nonsquare(base("TADD", "f32"))
    assert "reshaped" not in COV.structural(ns)
    assert "reshaped" not in COV.structural(base("TADD", "f32"))


def test_the_reference_runs_the_reshaped_case() -> None:
    dtypes = next(d for d in C.base_cases(get("TCVT"), PROFILE) if C.dtype_key(d) == "f16,f32")
    out = level2.run_level2(ReferenceBackend(), PROFILE, "TCVT", dtypes, max_examples=3, seed=0)
    assert out.status == "pass", out.reason
    assert out.coverage.get("reshaped") is True


def test_self_check_fails_when_the_reshaped_case_never_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    real = level2._situation_sweep

    def without(runner: object, built: list, variants: list, *a: object, **k: object) -> object:
        def keep(cs: list) -> list:
            return [c for c in cs if "reshaped" not in COV.structural(c)]
        return real(runner, keep(built), keep(variants), *a, **k)
    monkeypatch.setattr(level2, "_situation_sweep", without)
    dtypes = next(d for d in C.base_cases(get("TADD"), PROFILE) if C.dtype_key(d) == "f32")
    out = level2.run_level2(ReferenceBackend(), PROFILE, "TADD", dtypes, max_examples=2, seed=0)
    assert out.status == "fail" and out.reason.startswith("self-check") and "reshaped" in out.reason
    assert out.coverage["reshaped"] is False
