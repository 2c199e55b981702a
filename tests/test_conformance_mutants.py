"""The default conformance run fails every deliberately broken backend of the catalogue
(tests/conformance_mutants.py), and passes the reference on the same selection, so each
failure is the mutation's fault.

Each mutant runs as ``pto conformance --backend <mutant> --only <MNEMONIC>:<dtypes>`` would:
``runner.run`` (the CLI's entry point) with the default levels, example counts and seed 0,
one dtype tuple of the mutant's selection at a time until one fails; when none does, L3
(which ``--only`` does not restrict) runs once. Restricting is sound because every level run
seeds hypothesis afresh per instruction x dtype tuple (checked below), so a case the default
full run generates for that tuple is generated here too. Every mutant must be caught: there
is no list of expected misses.
"""
from __future__ import annotations

import fnmatch
from typing import Any

import pytest

from openpto.backends.reference import ReferenceBackend
from openpto.conformance import cases as C
from openpto.conformance.runner import Patterns, Report, run
from openpto.isa.registry import get

from conformance_mutants import BY_NAME, MUTANTS, Mutant

PROFILE = "cpu"
SEED = 0                       # `pto conformance`'s default --seed

def selected_keys(m: Mutant) -> list[str]:
    """The dtype keys of ``m``'s instruction on the profile that its patterns select."""
    return [C.dtype_key(d) for d in C.base_cases(get(m.mnemonic), PROFILE)
            if any(fnmatch.fnmatchcase(C.dtype_key(d), p) for p in m.dtypes)]


def default_run(backend: Any, mnemonic: str, key: str | None) -> Report:
    """``pto conformance`` at its defaults, restricted to one instruction x dtype key (or, with
    ``key`` None, to L3 alone)."""
    if key is None:
        return run(backend, [PROFILE], (3,), only=Patterns(("NO-INSTRUCTION",)), seed=SEED, progress=None)
    return run(backend, [PROFILE], (0, 1, 2), only=Patterns((f"{mnemonic}:{key}",)), seed=SEED,
               progress=None)


def first_failure(backend: Any, m: Mutant) -> tuple[str, Report] | None:
    """The first selected dtype key (or "L3") whose default run fails, with its report."""
    for key in selected_keys(m):
        report = default_run(backend, m.mnemonic, key)
        if not report.ok:
            return key, report
    report = default_run(backend, m.mnemonic, None)
    return ("L3", report) if not report.ok else None


def test_the_catalogue_is_large_and_spans_every_family() -> None:
    assert len(MUTANTS) >= 40
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
    families = {get(m.mnemonic).family.name for m in MUTANTS}
    assert families >= {"ELEMENTWISE", "TILE_SCALAR", "REDUCE_EXPAND", "MEMORY", "MOVEMENT", "MATRIX",
                        "COMPLEX", "SYNC", "MANUAL_SYNC"}
    assert any(m.mnemonic == "TCVT" for m in MUTANTS)
    for m in MUTANTS:
        assert m.bug and selected_keys(m), m.name           # every mutant is run on some dtype tuple


@pytest.mark.parametrize("mutant", [pytest.param(m, id=m.name) for m in MUTANTS])
def test_default_conformance_run_fails_the_mutant(mutant: Mutant) -> None:
    found = first_failure(mutant.backend(), mutant)
    assert found is not None, f"{mutant.name} ({mutant.bug}) passes the default conformance run"
    key, report = found
    crashed = [o.reason for _, o in report.failures() if "TypeError" in o.reason]
    assert not crashed, f"{mutant.name} is caught only by crashing (its signature is out of date): {crashed[0]}"
    failing = {o.instruction for _, o in report.failures()}
    if key != "L3":
        assert failing == {mutant.mnemonic}
        assert default_run(ReferenceBackend(), mutant.mnemonic, key).ok     # the mutation's fault


@pytest.mark.parametrize("name, key", [("tadd-dst-row-stride", "f32"), ("tcvt-dst-row-stride", "f16,f32"),
                                       ("tscatter-idx-src-row-stride", "f32,f32,i32")])
def test_only_operands_of_static_shapes_of_their_own_catch_a_row_stride_mix_up(
        name: str, key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``reshaped`` case (cases.reshaped) is what fails these mutants: without it every
    tile of a case has one static shape and the default run passes them."""
    m = BY_NAME[name]
    assert not default_run(m.backend(), m.mnemonic, key).ok
    monkeypatch.setattr(C, "reshaped", lambda case: None)
    assert default_run(m.backend(), m.mnemonic, key).ok


def test_reference_passes_level_3() -> None:
    """A mutant caught only by L3 fails a run the reference passes (the others check their
    failing run against the reference above)."""
    assert default_run(ReferenceBackend(), "", None).ok


def test_restricting_to_one_instruction_does_not_change_its_cases() -> None:
    """The inputs TADD:f32 sees are the same run alone and after another instruction."""
    seen: list[list[bytes]] = [[], []]

    def recorder(log: list[bytes]) -> ReferenceBackend:
        def tadd(**kw: Any) -> None:
            log.append(kw["src0"].data.tobytes() + kw["src1"].data.tobytes())
            get("TADD").semantics(**kw)
        cls = type("RecordingTADD", (ReferenceBackend,), {"rules": {**ReferenceBackend.rules, "TADD": tadd}})
        return cls()

    run(recorder(seen[0]), [PROFILE], (0, 1, 2), only=Patterns(("TADD:f32",)), seed=SEED, progress=None)
    run(recorder(seen[1]), [PROFILE], (0, 1, 2), only=Patterns(("TSORT32:f32*", "TSUB:f32", "TADD:f32")),
        seed=SEED, progress=None)
    assert len(seen[0]) >= 25 and seen[0] == seen[1]
