"""Conformance level 3: random programs and sync scenarios pass on the reference backend,
and backends broken in ways only whole programs show (an inexact adder, a loop that stops
one block early, a store that drops a row, loads hoisted above the stores they wait for)
are caught, with a reproducer that still fails when re-run."""
from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from openpto.assembler import load_bytes, parse
from openpto.assembler.ir import For, If, Module, ScalarOp, Stmt, TileOp, Value
from openpto.backends import get
from openpto.backends.reference import ReferenceBackend, ReferenceExecutable
from openpto.isa.types import INDEX
from openpto.isa.values import Tile
from openpto.assembler import verify
from openpto.conformance import level3 as L3
from openpto.conformance import scenario_forms
from openpto.conformance.level3 import (PINNED_EXAMPLES, SCENARIOS, SYNC_DTYPES, first_difference, run_level3,
                                        scenario_outcome)
from openpto.conformance.programs import programs, templates
from openpto.conformance.runner import DEFAULT_EXAMPLES
from openpto.isa.registry import get as openpto_get
from openpto.isa.spec import Family

from conformance_mutants import BY_NAME

RULES = ReferenceBackend.rules
SYNC = {sc.name for sc in SCENARIOS}


def _by_name(outs: list[Any]) -> dict[tuple[str, str], Any]:
    return {(o.instruction, o.dtypes): o for o in outs}


# --------------------------------------------------------------------------- broken backends

def _sloppy_add(dst: Tile, src0: Tile, src1: Tile) -> None:
    """TADD, then every sixth element off: by one for integers, in the 9th bit for floats."""
    RULES["TADD"](dst=dst, src0=src0, src1=src1)
    r, c = dst.valid
    part = dst.data[:r:2, :c:3]
    if dst.dtype.is_float:
        part[...] = (part.astype(np.float64) * (1 + 2.0 ** -9)).astype(part.dtype)
    else:
        part[...] = part + np.ones((), part.dtype)


class SloppyAdd(ReferenceBackend):
    name = "sloppy-add"
    rules = dict(RULES, TADD=_sloppy_add)


class SmallSloppyAdd(SloppyAdd):
    """A young backend: only a handful of instructions, so programs use TADD often."""

    name = "small-sloppy-add"
    rules = {k: v for k, v in SloppyAdd.rules.items()
             if k in ("TLOAD", "TSTORE", "TADD", "TMUL", "TCOLSUM", "TROWMAX", "TROWEXPANDSUB", "TCVT")}


def _store_but_last_row(dst: Any, src: Tile, **kw: Any) -> None:
    r, c = src.valid      # kw: atomic and the pre-quantising form's operands, passed on as they are
    RULES["TSTORE"](dst=dst, src=Tile(src.type, src.data, (max(r - 1, 0), c)), **kw)


class DropsLastRow(ReferenceBackend):
    name = "drops-last-row"
    rules = dict(RULES, TSTORE=_store_but_last_row)


class _Rewriting(ReferenceBackend):
    """A backend that transforms each region's statements before running them."""

    def region(self, body: tuple[Stmt, ...]) -> list[Stmt]:
        raise NotImplementedError

    def walk(self, body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for s in self.region(body):
            if isinstance(s, For):
                s = dataclasses.replace(s, body=self.walk(s.body))
            elif isinstance(s, If):
                s = dataclasses.replace(s, then_body=self.walk(s.then_body), else_body=self.walk(s.else_body))
            out.append(s)
        return tuple(out)

    def _compile(self, module: Module, profile: str, **options: Any) -> ReferenceExecutable:
        kernels = tuple(dataclasses.replace(k, body=self.walk(k.body)) for k in module.kernels)
        return ReferenceExecutable(Module(kernels), profile, True, self.rules)


class LoopOneShort(_Rewriting):
    """Every scf.for stops one step early (upper bound - step)."""

    name = "loop-one-short"

    def region(self, body: tuple[Stmt, ...]) -> list[Stmt]:
        out: list[Stmt] = []
        for s in body:
            if isinstance(s, For) and isinstance(s.ub, Value) and isinstance(s.step, Value):
                ub = Value(f"{s.iv.name}_short_ub", INDEX)
                out.append(ScalarOp("subi", ub, (s.ub, s.step)))
                s = dataclasses.replace(s, ub=ub)
            out.append(s)
        return out


class HoistsLoads(_Rewriting):
    """Issues each region's loads ahead of its stores, ignoring the flags between them."""

    name = "hoists-loads"

    def region(self, body: tuple[Stmt, ...]) -> list[Stmt]:
        out = list(body)
        stores = [i for i, s in enumerate(out) if isinstance(s, TileOp) and s.instr.mnemonic == "TSTORE"]
        if stores:
            first = stores[0]
            loads = [s for s in out[first:] if isinstance(s, TileOp) and s.instr.mnemonic == "TLOAD"]
            rest = [s for s in out[first:] if s not in loads]
            out = out[:first] + loads + rest
        return out


def _replays(backend: Any, outcome: Any, profile: str) -> bool:
    """The recorded counterexample, re-run from its text and inputs, still differs."""
    f = outcome.failure
    module = load_bytes(parse(f.program).to_bytes())
    got, want = dict(f.inputs), dict(f.inputs)
    got = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in got.items()}
    want = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in want.items()}
    backend.compile(module, profile).run(f.kernel, **got)
    get("reference").compile(module, profile).run(f.kernel, **want)
    return first_difference(got, want, 0.0) is not None


# --------------------------------------------------------------------------- the reference passes

@pytest.mark.parametrize("profile", ["cpu", "a3"])
def test_reference_backend_passes_level3(profile: str) -> None:
    outs = run_level3(get("reference"), profile, max_examples=8, seed=0)
    names = {o.instruction for o in outs}
    assert names == {"L3:programs"} | SYNC
    assert [(o.instruction, o.dtypes, o.reason) for o in outs if o.status != "pass"] == []
    assert all(o.examples > 0 and o.level == 3 for o in outs)


# --------------------------------------------------------------------------- broken backends are caught

def test_inexact_adder_is_caught_with_a_replayable_reproducer() -> None:
    outs = _by_name(run_level3(SmallSloppyAdd(), "cpu", max_examples=15, seed=0))
    bad = outs["L3:programs", "mixed"]
    assert bad.status == "fail", bad.reason
    assert "tadd" in bad.failure.program and bad.failure.difference is not None
    assert _replays(SmallSloppyAdd(), bad, "cpu")
    # the sync scenarios need TMULS and TADDS, which this backend lacks
    assert {o.status for (name, _), o in outs.items() if name in SYNC} == {"unsupported"}


def test_loop_that_stops_one_block_early_is_caught() -> None:
    outs = _by_name(run_level3(LoopOneShort(), "cpu", max_examples=5, seed=0))
    assert outs["L3:programs", "mixed"].status == "fail"
    assert all(o.status == "fail" for (name, _), o in outs.items() if name in SYNC)
    f = outs["L3:programs", "mixed"].failure
    assert f.program.count("kernel @") == 1 and "scf.for" in f.program     # shrunk to one kernel


def test_store_that_drops_a_row_fails_every_scenario() -> None:
    outs = _by_name(run_level3(DropsLastRow(), "a3", max_examples=3, seed=0))
    assert {o.status for o in outs.values()} == {"fail"}
    sync = outs["L3:sync-store-load", "f32"].failure
    assert sync.difference.operand in ("mid", "y") and sync.difference.expected != sync.difference.actual


def test_loads_hoisted_above_flagged_stores_fail_the_store_load_scenario() -> None:
    outs = _by_name(run_level3(HoistsLoads(), "cpu", max_examples=3, seed=0))
    assert outs["L3:sync-store-load", "f32"].status == "fail"
    assert outs["L3:sync-store-load", "f32"].failure.difference.operand == "y"
    # kernels that only load first and store last are unaffected
    assert outs["L3:programs", "mixed"].status == "pass"
    assert outs["L3:sync-producer-consumer", "f32"].status == "pass"


def test_a_backend_raising_a_foreign_exception_is_a_failure_not_a_crash() -> None:
    def crash(**kw: Any) -> None:
        raise RuntimeError("boom")

    class Crashes(ReferenceBackend):
        name = "crashes"
        rules = dict(RULES, TSTORE=crash)

    outs = run_level3(Crashes(), "cpu", max_examples=2, seed=0)
    assert {o.status for o in outs} == {"fail"}
    assert all("RuntimeError" in o.reason or "RUNTIME_INTERNAL" in o.reason for o in outs)


# --------------------------------------------------------------------------- scenarios per profile

def _scenarios(backend: Any, profile: str) -> dict[tuple[str, str], Any]:
    return _by_name([scenario_outcome(backend, profile, sc, d, i)
                     for i, sc in enumerate(SCENARIOS) for d in SYNC_DTYPES])


def _scenario(name: str) -> Any:
    return next(sc for sc in SCENARIOS if sc.name == name)


@pytest.mark.parametrize("backend", ["reference", "llvm"])
@pytest.mark.parametrize("profile", ["a6", "kirin9030"])
def test_every_scenario_runs_and_passes_on_profiles_without_flags(backend: str, profile: str) -> None:
    """a6 (no TMULS / TADDS, no flags) and kirin9030 (no flags) run every scenario, every
    size: none is unsupported."""
    outs = _scenarios(get(backend), profile)
    assert {name for name, _ in outs} == SYNC
    assert [(k, o.status, o.reason) for k, o in outs.items() if o.status != "pass"] == []
    assert all(o.examples == len(_scenario(name).sizes) for (name, _), o in outs.items())


def _between(text: str, first: str, last: str) -> list[str]:
    lines = [ln.strip() for ln in text.splitlines()]
    return lines[lines.index(first) + 1:lines.index(last)]


@pytest.mark.parametrize("profile, compute, order", [
    ("a5", ["tmuls", "tadds"], ["set_flag #pto.pipe<MTE3>, #pto.pipe<MTE2>, 0",
                                "wait_flag #pto.pipe<MTE3>, #pto.pipe<MTE2>, 0"]),
    ("kirin9030", ["tmuls", "tadds"], ["tsync #pto.pipe<ALL>"]),
    ("kirinX90", ["tmuls", "tadds"], ["tsync #pto.pipe<ALL>"]),
    ("a6", ["tadd", "tadd"], ["tsync #pto.pipe<ALL>"]),
])
def test_store_load_orders_the_store_before_the_load_in_the_profiles_forms(
        profile: str, compute: list[str], order: list[str]) -> None:
    """Between the store to mid and the load back sits the profile's ordering (a flag pair,
    or TSYNC's all-pipe barrier where there are no flags), never nothing."""
    forms = scenario_forms.plan(profile, "f32")
    text = _scenario("L3:sync-store-load").text("f32", 16, forms)
    verify(parse(text), profile)
    assert _between(text, "tstore %mid[%r, %c0], %t", "%u = tload %mid[%r, %c0]") == order
    ops = re.findall(r"= (t[a-z]+) %[tu], ", text)
    assert ops == compute, ops
    ping = _scenario("L3:sync-ping-pong").text("f32", 16, forms)
    assert ping.count(order[-1].split(" #")[0]) >= 7          # one wait (or barrier) per hand-over


def test_a6_scenarios_compute_what_their_tadds_give() -> None:
    """On a6 the scale step is x + x and the shift step mid + x: mid = 2x and y = 3x (exact
    for these values), computed here by hand for a short last block."""
    x = np.array([[0.5, -1.25, 1.75, -0.375]] * 5, np.float32).repeat(4, axis=1)
    args = {"x": x.copy(), "mid": np.full_like(x, np.nan), "y": np.full_like(x, np.nan),
            "a": 1.5, "b": -0.25, "rows": 5}
    module = load_bytes(parse(_scenario("L3:sync-store-load").text("f32", 16,
                                                                    scenario_forms.plan("a6", "f32"))).to_bytes())
    get("reference").compile(module, "a6").run("roundtrip", **args)
    assert np.array_equal(args["mid"], x * 2) and np.array_equal(args["y"], x * 3)


def test_a_profile_without_any_ordering_form_reports_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the profile has none of the forms a step needs, the scenario says which."""
    monkeypatch.setattr(scenario_forms, "SYNCS", scenario_forms.SYNCS[:1])       # flags only
    o = scenario_outcome(get("reference"), "a6", _scenario("L3:sync-store-load"), "f32", 0)
    assert o.status == "unsupported" and o.reason == "a6 lacks an ordering (a flag pair or an all-pipe TSYNC)"
    assert scenario_outcome(get("reference"), "a5", _scenario("L3:sync-store-load"), "f32", 0).status == "pass"
    monkeypatch.setattr(scenario_forms, "SCALE_STEPS", scenario_forms.SCALE_STEPS[:1])   # TMULS only
    o = scenario_outcome(get("reference"), "a6", _scenario("L3:views"), "f16", 0)
    assert o.status == "unsupported" and o.reason.startswith("a6 lacks the scale step on f16 (TMULS)")


@pytest.mark.parametrize("profile", ["a6", "kirin9030"])
def test_loads_hoisted_above_the_barrier_fail_the_store_load_scenario(profile: str) -> None:
    outs = _scenarios(HoistsLoads(), profile)
    for d in SYNC_DTYPES:
        assert outs["L3:sync-store-load", d].status == "fail"
        assert outs["L3:sync-store-load", d].failure.difference.operand == "y"
    assert outs["L3:sync-producer-consumer", "f32"].status == "pass"


def _first_addend_twice(dst: Tile, src0: Tile, src1: Tile) -> None:
    RULES["TADD"](dst=dst, src0=src0, src1=src0)


class DropsSecondAddend(ReferenceBackend):
    name = "drops-second-addend"
    rules = dict(RULES, TADD=_first_addend_twice)


def test_wrong_adders_fail_every_a6_scenario() -> None:
    """a6 computes every scenario with TADD: an adder that reads src0 twice fails all of them,
    the sloppy adder (off in the 9th bit, beyond the f32 budget) every f32 one, and a store
    that drops a row fails them too."""
    assert {o.status for o in _scenarios(DropsSecondAddend(), "a6").values()} == {"fail"}
    assert {o.status for (_, d), o in _scenarios(SloppyAdd(), "a6").items() if d == "f32"} == {"fail"}
    assert {o.status for o in _scenarios(DropsLastRow(), "a6").values()} == {"fail"}
    assert {o.status for o in _scenarios(DropsLastRow(), "kirin9030").values()} == {"fail"}


# --------------------------------------------------------------------------- the generator

def test_templates_come_from_the_spec() -> None:
    names = {t.instr.mnemonic for t in templates("cpu", 16, 32)}
    assert {"TADD", "TCVT", "TCMP", "TSEL", "TADDS", "TROWSUM", "TCOLMAX", "TROWEXPANDADD"} <= names
    assert not names & {"TLOAD", "TMATMUL", "TGATHER", "TPRINT"}   # memory, cube, index data, no result


def test_generated_programs_have_the_level3_features() -> None:
    seen: dict[str, int] = {}

    @settings(max_examples=30, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs("a3"))
    def prop(p: Any) -> None:
        module = parse(p.text)
        assert load_bytes(module.to_bytes()) == module
        assert [k.name for k in module.kernels] == [ka.kernel for ka in p.kernels]
        for ka in p.kernels:
            first, again = ka.make(), ka.make()
            assert set(first) == {v.name for v in module.kernel(ka.kernel).params}
            assert all(np.array_equal(first[n], again[n], equal_nan=True) for n in first
                       if isinstance(first[n], np.ndarray))
            assert first.get("rows", first.get("kdim")) == ka.rows      # the loop's bound
        for feature, present in (("several kernels", len(p.kernels) > 1), ("scf.if", "scf.if" in p.text),
                                 ("dynamic valid rows", "valid_row = %vr" in p.text),
                                 ("loop-carried tile", "%acc_out" in p.text),
                                 ("short last block", any(k.rows % k.block for k in p.kernels)),
                                 ("matrix pipeline", "loc=acc" in p.text)):
            seen[feature] = seen.get(feature, 0) + present
        texts = [Module((k,)).to_text() for k in module.kernels]
        assert all(("iter_args(%left = %rows, %s = %s0)" in t) != ("loc=acc" in t) for t in texts)

    prop()
    assert all(seen.values()) and len(seen) == 6, seen


# --------------------------------------------------------------------------- matrix tiles, in place

ACC_IN_PLACE = re.compile(r"scf\.for %(\w+) = %(\w+) to %kdim step %cK .*?%(\w+) = t(?:matmul|gemv)_acc %\3, ", re.S)
IN_PLACE_STEP = re.compile(r"^ *%(\w+) = t\w+ %\1[,: ]", re.M)


def _pipeline_ok(text: str, args: dict[str, Any], block: int) -> bool:
    """Read independently of conformance/features.py: a load into mat, a move from mat into
    left and right, an acc tile written in place in a K loop of at least 2 steps after the
    opening step (kdim >= 3 steps), and the acc tile stored or moved to a vec tile."""
    return (re.search(r"= tload .*loc=mat", text) is not None
            and re.search(r"= t(mov|extract) .*loc=mat.*-> !pto\.tile<[^>]*loc=left", text) is not None
            and re.search(r"= t(mov|extract) .*loc=mat.*-> !pto\.tile<[^>]*loc=right", text) is not None
            and ACC_IN_PLACE.search(text) is not None and args["kdim"] >= 3 * block
            and (re.search(r"tstore .*loc=acc", text) is not None
                 or re.search(r"= tmov %acc : \(!pto\.tile<[^>]*loc=acc[^)]*\) -> !pto\.tile<\d+x\d+x\w+>", text)
                 is not None))


def _in_place_chain(text: str) -> bool:
    """Two lines in a row of the form ``%t = tOP %t, ...`` (the destination read too)."""
    lines = [ln for ln in text.splitlines() if re.match(r" *%\w+ = t", ln)]
    return any(IN_PLACE_STEP.match(a) and IN_PLACE_STEP.match(b)
               and IN_PLACE_STEP.match(a).group(1) == IN_PLACE_STEP.match(b).group(1)  # type: ignore[union-attr]
               for a, b in zip(lines, lines[1:]))


@pytest.mark.parametrize("profile", ["cpu", "a2", "a3", "a5", "a6"])
def test_pinned_families_have_their_feature_in_every_draw(profile: str) -> None:
    """programs(require=...) builds the feature into every program, one pipeline per
    accumulating form, legal on the profile (the generator verifies each module)."""
    counts = {"matrix": 0, "in-place": 0}
    for require in counts:
        @settings(max_examples=12, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(programs(profile, require=require))
        def prop(p: Any) -> None:
            verify(parse(p.text), profile)
            counts[require] += 1
            if require == "in-place":
                assert len(p.kernels) == 1 and _in_place_chain(p.text), p.text
                return
            module = parse(p.text)
            forms = set()
            for ka in p.kernels:
                text = Module((module.kernel(ka.kernel),)).to_text()
                assert _pipeline_ok(text, ka.make(), ka.block), text
                forms |= set(re.findall(r"= (tmatmul_acc|tgemv_acc) ", text))
            assert forms == {"tmatmul_acc", "tgemv_acc"}
        prop()
    assert counts == {"matrix": 12, "in-place": 12}


@pytest.mark.parametrize("profile", ["cpu", "a3"])
def test_every_default_run_has_a_matrix_pipeline_and_in_place_programs(profile: str) -> None:
    """The default L3 run (default example count, a few seeds): every feature covered, and
    the programs that carry them really were run (the reference counts its matrix calls)."""
    calls: list[bool] = []

    def acc(**kw: Any) -> None:
        calls.append(np.shares_memory(kw["acc_in"].data, kw["dst"].data))
        RULES["TMATMUL_ACC"](**kw)

    class Counting(ReferenceBackend):
        name = "counting"
        rules = dict(RULES, TMATMUL_ACC=acc)

    for seed in (0, 1, 7):
        calls.clear()
        o = _by_name(run_level3(Counting(), profile, DEFAULT_EXAMPLES[3], seed))["L3:programs", "mixed"]
        assert o.status == "pass", o.reason
        assert o.coverage == {"matrix-pipeline": True, "acc-in-place": True, "in-place-chain": True}
        assert o.examples >= DEFAULT_EXAMPLES[3] + 2 * PINNED_EXAMPLES
        assert sum(calls) >= 2 * PINNED_EXAMPLES * 2        # two K steps in place per pinned pipeline


def test_self_check_fails_when_the_generator_stops_producing_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A generator whose pinned matrix family lost its pipelines (and whose random programs
    have no matrix kernel) fails the run with the self-check, naming what is missing."""
    real = L3.programs

    def no_matrix(instr: Any, types: Any) -> bool:
        return instr.family is not Family.MATRIX

    def broken(profile: str, allow: Any = None, require: str | None = None) -> Any:
        both = (lambda i, t: no_matrix(i, t) and (allow is None or allow(i, t)))
        return real(profile, both, "in-place" if require == "matrix" else require)

    monkeypatch.setattr(L3, "programs", broken)
    o = _by_name(run_level3(get("reference"), "cpu", 6, 0))["L3:programs", "mixed"]
    assert o.status == "fail" and o.reason.startswith("self-check")
    assert "matrix-pipeline" in o.reason and "acc-in-place" in o.reason and "in-place-chain" not in o.reason
    assert o.coverage == {"matrix-pipeline": False, "acc-in-place": False, "in-place-chain": True}


def test_in_place_accumulation_bug_is_caught_by_level3() -> None:
    """TMATMUL_ACC that ignores acc_in when it is dst (the catalogued mutant): L3 alone fails
    it, on a shrunk one-kernel matrix pipeline that still fails when re-run."""
    backend = BY_NAME["tmatmul-acc-in-place-ignored"].backend()
    for profile in ("cpu", "a3"):
        bad = _by_name(run_level3(backend, profile, DEFAULT_EXAMPLES[3], 0))["L3:programs", "mixed"]
        assert bad.status == "fail", bad.reason
        f = bad.failure
        assert f.program.count("kernel @") == 1 and re.search(r"%acc = tmatmul_acc %acc, ", f.program)
        assert f.difference is not None and f.difference.operand in ("c_out", "v_out")
        assert _replays(backend, bad, profile)


def _clears_destination(mnemonic: str) -> Any:
    """The reference rule after clearing dst, as a backend that zero-fills its output buffer
    first would: right unless dst is also a source."""
    def rule(**kw: Any) -> None:
        dst = kw["dst"]
        dst.data[...] = 0
        RULES[mnemonic](**kw)
    return rule


class ClearsDestination(ReferenceBackend):
    name = "clears-destination"
    rules = dict(RULES, **{m: _clears_destination(m) for m in RULES
                           if openpto_get(m).family in (Family.ELEMENTWISE, Family.TILE_SCALAR)})


def test_in_place_elementwise_bug_is_caught_by_level3() -> None:
    bad = _by_name(run_level3(ClearsDestination(), "cpu", DEFAULT_EXAMPLES[3], 0))["L3:programs", "mixed"]
    assert bad.status == "fail", bad.reason
    assert _in_place_chain(bad.failure.program) or IN_PLACE_STEP.search(bad.failure.program)
    assert _replays(ClearsDestination(), bad, "cpu")
