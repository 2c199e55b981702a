"""Per-profile attribute and pipe values (``Instruction.profile_values``): the verifier refuses
what a profile's headers do not accept, with the rule's code, and the programs they unlock run
on both backends against expectations computed here; the pages and the conformance generator
follow the same rules."""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import openpto as pto
import openpto.isa as isa
from openpto.assembler.bytecode import load_bytes
from openpto.conformance import cases as C
from openpto.conformance import level1 as L1
from openpto.isa import checks, docgen, profiles, render
from openpto.isa.attrs import AtomicMode, MaskPattern
from openpto.isa.types import Pipe, parse_type

BACKENDS = ("reference", "llvm")


def diagnose(text: str, profile: str) -> list[Any]:
    """Every diagnostic ``pto.check`` gives ``text`` on ``profile`` (empty: accepted)."""
    try:
        pto.check(pto.parse(text), profile=profile)
    except pto.PTOError as e:
        return list(getattr(e, "errors", [e]))
    return []


def run(text: str, backend: str, profile: str, tmp: Any, **args: np.ndarray) -> dict[str, np.ndarray]:
    arrays = {k: v.copy() for k, v in args.items()}
    options = {"cache_dir": tmp} if backend == "llvm" else {}
    pto.compile(pto.parse(text), backend, profile, **options)(**arrays)
    return arrays


# ----------------------------------------------------------------------------- TSYNC pipes

TSYNC = "kernel @k() {{\n  tsync #pto.pipe<{p}>\n}}\n"
HEADER_PIPES = {"a2": "S V M MTE1 MTE2 MTE3 FIX ALL", "a3": "S V M MTE1 MTE2 MTE3 FIX ALL",
                "a5": "MTE2 MTE3 ALL", "a6": "MTE2 MTE3 ALL",
                "kirin9030": "M MTE1 MTE2 MTE3 FIX ALL", "kirinX90": "M MTE1 MTE2 MTE3 FIX ALL",
                "cpu": "S V M MTE1 MTE2 MTE3 FIX ALL"}


@pytest.mark.parametrize("profile", sorted(HEADER_PIPES))
@pytest.mark.parametrize("pipe", [p.name for p in Pipe])
def test_tsync_pipes_per_profile(profile: str, pipe: str) -> None:
    errs = diagnose(TSYNC.format(p=pipe), profile)
    if pipe in HEADER_PIPES[profile].split():
        assert errs == []
    else:
        assert [e.code for e in errs] == ["LEGAL_ATTR"]


def test_tsync_v_on_a5_names_the_allowed_pipes() -> None:
    (e,) = diagnose(TSYNC.format(p="V"), "a5")
    assert e.code == "LEGAL_ATTR"
    assert "pipe = V" in e.message and "a5" in e.message
    assert e.expected == "pipe: MTE2 MTE3 ALL" and e.actual == "pipe = V"
    assert (e.location.line, e.location.col) == (2, 3)


def test_each_statement_is_judged_by_its_own_pipe() -> None:
    """The verifier shares verdicts between statements of one signature: the pipe is part of it."""
    text = "kernel @k() {\n  tsync #pto.pipe<MTE2>\n  tsync #pto.pipe<V>\n  tsync #pto.pipe<MTE2>\n  tsync #pto.pipe<V>\n}\n"
    assert [(e.code, e.location.line) for e in diagnose(text, "a5")] == [("LEGAL_ATTR", 3), ("LEGAL_ATTR", 5)]


def test_tsync_op_class_resolves_to_its_pipe_before_the_rule() -> None:
    """The public op-class spelling names TADD's pipe (V): a5's TSync.hpp refuses it."""
    text = "kernel @k() {\n  tsync #pto.op<TADD>\n}\n"
    assert [e.code for e in diagnose(text, "a5")] == ["LEGAL_ATTR"]
    assert diagnose(text, "a2") == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_tsync_pipe_refused_from_bytecode_at_compile(backend: str) -> None:
    module = load_bytes(pto.parse(TSYNC.format(p="S")).to_bytes())
    with pytest.raises(pto.PTOError) as e:
        pto.compile(module, backend, "a5")
    assert e.value.code == "LEGAL_ATTR"


# ----------------------------------------------------------------------------- MSCATTER atomics

SCATTER = """
kernel @k(%g : !pto.memref<64x{d}>, %src : !pto.tile<4x32x{d}>, %idx : !pto.tile<4x32xi32>) {{
  mscatter %g[0], %src, %idx {{atomic = #pto.atomic<{at}>}} : (!pto.memref<64x{d}>, !pto.tile<4x32x{d}>, !pto.tile<4x32xi32>)
}}
"""


@pytest.mark.parametrize("profile,d,at,ok", [
    ("a2", "f32", "ADD", True), ("a2", "i8", "ADD", True), ("a2", "u32", "NONE", True),
    ("a2", "f32", "MAX", False), ("a2", "f32", "MIN", False), ("a2", "u32", "ADD", False),
    ("a3", "i16", "ADD", True), ("a3", "i32", "MAX", False),
    ("a5", "u32", "ADD", True), ("a5", "f32", "MAX", True), ("a5", "u32", "MIN", True),
    ("a5", "i16", "ADD", False), ("a5", "f16", "MAX", False), ("a5", "i8", "NONE", True),
    ("cpu", "i16", "MAX", True), ("cpu", "u8", "ADD", True),
])
def test_mscatter_atomics_per_profile(profile: str, d: str, at: str, ok: bool) -> None:
    errs = diagnose(SCATTER.format(d=d, at=at), profile)
    assert [e.code for e in errs] == ([] if ok else ["LEGAL_MODE"])


def test_a2_mscatter_max_message() -> None:
    (e,) = diagnose(SCATTER.format(d="f32", at="MAX"), "a2")
    assert "atomic = MAX is not one of NONE ADD" in e.message
    (e,) = diagnose(SCATTER.format(d="u32", at="ADD"), "a2")
    assert "takes dst of f32 i32 f16 bf16 i16 i8, got u32" in e.message


@pytest.mark.parametrize("backend", BACKENDS)
def test_a2_mscatter_atomic_add_f32_runs(backend: str, tmp_path: Any) -> None:
    rng = np.random.default_rng(11)
    g = rng.standard_normal(64).astype(np.float32)
    src = rng.standard_normal((4, 32)).astype(np.float32)
    idx = rng.integers(0, 6, (4, 32)).astype(np.int32)        # many duplicates
    want = g.astype(np.float64).copy()
    for i in range(4):
        for j in range(32):                                     # sequential adds, rounded to f32 each time
            want[idx[i, j]] = np.float32(np.float32(want[idx[i, j]]) + src[i, j])
    out = run(SCATTER.format(d="f32", at="ADD"), backend, "a2", tmp_path, g=g, src=src, idx=idx)
    np.testing.assert_array_equal(out["g"], want.astype(np.float32))


# ----------------------------------------------------------------------------- fp8 / hifloat8 gathers

GATHER = """
kernel @k(%out : !pto.tile<4x32x{d}>, %src : !pto.memref<256x{d}>, %idx : !pto.tile<4x32xi32>) {{
  %out = mgather %src[0], %idx : (!pto.memref<256x{d}>, !pto.tile<4x32xi32>) -> !pto.tile<4x32x{d}>
}}
"""
EIGHT_BIT = {"f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2, "hifloat8": np.uint8}


@pytest.mark.parametrize("d", sorted(EIGHT_BIT))
def test_mgather_mscatter_8bit_floats_legal_on_a5_only(d: str) -> None:
    for text in (GATHER.format(d=d), SCATTER.format(d=d, at="NONE")):
        assert diagnose(text, "a5") == []
        assert diagnose(text, "cpu") == []
        assert [e.code for e in diagnose(text, "a2")] == ["LEGAL_DTYPE"]
    assert [e.code for e in diagnose(SCATTER.format(d=d, at="ADD"), "a5")] == ["LEGAL_MODE"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("d", sorted(EIGHT_BIT))
def test_a5_mgather_8bit_floats_copy_bits(backend: str, d: str, tmp_path: Any) -> None:
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 256, 256).astype(np.uint8)        # every kind of code: NaNs, infs, -0
    src = codes.view(EIGHT_BIT[d])
    idx = rng.integers(0, 256, (4, 32)).astype(np.int32)
    out = run(GATHER.format(d=d), backend, "a5", tmp_path, out=np.zeros((4, 32), EIGHT_BIT[d]), src=src, idx=idx)
    np.testing.assert_array_equal(out["out"].view(np.uint8), codes[idx])


# ----------------------------------------------------------------------------- TGATHER mask form data

MASK = """
kernel @k(%dst : !pto.tile<4x32x{d}>, %src : !pto.tile<4x128x{d}>) {{
  %dst = tgather %src {{maskPattern = #pto.mask_pattern<P0010>}} : (!pto.tile<4x128x{d}>) -> !pto.tile<4x32x{d}>
}}
"""


@pytest.mark.parametrize("profile,d,ok", [
    ("a5", "i8", True), ("a5", "u8", True), ("cpu", "i8", True), ("kirin9030", "u8", True),
    ("a2", "i8", False), ("a3", "u8", False), ("a2", "i16", True), ("kirin9030", "f16", True),
])
def test_tgather_mask_form_8bit_per_profile(profile: str, d: str, ok: bool) -> None:
    assert [e.code for e in diagnose(MASK.format(d=d), profile)] == ([] if ok else ["LEGAL_DTYPE"])


def test_tgather_mask_rule_leaves_the_index_form_to_the_dtype_rule() -> None:
    types = {n: parse_type(t) for n, t in
             {"dst": "!pto.tile<16x32xi8>", "src": "!pto.tile<16x32xi8>", "idx": "!pto.tile<16x32xi16>"}.items()}
    errs = checks.check_legality(isa.get("TGATHER"), types, {}, profiles.get("a2"))
    assert [e.code for e in errs] == ["LEGAL_DTYPE"] and "maskPattern" not in errs[0].message


@pytest.mark.parametrize("backend", BACKENDS)
def test_a5_tgather_mask_form_i8_runs(backend: str, tmp_path: Any) -> None:
    src = (np.arange(4 * 128) % 251 - 125).astype(np.int8).reshape(4, 128)
    out = run(MASK.format(d="i8"), backend, "a5", tmp_path, dst=np.zeros((4, 32), np.int8), src=src)
    np.testing.assert_array_equal(out["dst"], src[:, 1::4])     # P0010: every 4th column from 1


# ----------------------------------------------------------------------------- pages, JSON, conformance

def test_pages_list_the_values_per_profile() -> None:
    page = docgen.page(isa.get("TSYNC"))
    assert "## Values per profile" in page
    assert "| a5 | pipe: MTE2 MTE3 ALL (`LEGAL_ATTR`) |" in page
    assert "| cpu | every value |" in page
    page = docgen.page(isa.get("MSCATTER"))
    assert "| a2 | atomic: NONE, ADD (dst: f32 i32 f16 bf16 i16 i8) (`LEGAL_MODE`) |" in page
    assert "## Values per profile" not in docgen.page(isa.get("TADD"))
    j = render.instruction_json(isa.get("MSCATTER"))["values"]
    assert j["a5"][0]["values"]["MAX"] == ["i32", "u32", "f32"] and j["cpu"][0]["values"]["NONE"] is None


def test_newer_targets_borrow_their_base_rule_unless_named() -> None:
    tgather = isa.get("TGATHER")
    assert tgather.value_rules("kirin9030") != tgather.value_rules("a5")          # named
    tsync = isa.get("TSYNC")
    assert tsync.value_rules("a6")[0].values.keys() == {Pipe.MTE2, Pipe.MTE3, Pipe.ALL}
    assert isa.get("TADD").value_rules("a6") == () and tsync.value_rules("cpu") == ()


def test_conformance_cases_use_only_allowed_values() -> None:
    base = C.base_cases(isa.get("TSYNC"), "a5")[()]
    assert base is not None and base.scalars["pipe"] in (Pipe.MTE2, Pipe.MTE3, Pipe.ALL)
    pipes = {c.scalars["pipe"] for c in C.edges(base)} | {base.scalars["pipe"]}
    assert pipes == {Pipe.MTE2, Pipe.MTE3, Pipe.ALL}
    for combo, case in C.base_cases(isa.get("MSCATTER"), "a2").items():
        assert case is not None, combo
        assert case.attrs.get("atomic", AtomicMode.NONE) in (AtomicMode.NONE, AtomicMode.ADD)


def test_level1_mutants_try_refused_values() -> None:
    base = C.base_cases(isa.get("TSYNC"), "a5")[()]
    refused = {m.case.scalars["pipe"]: m.codes for m in L1.mutants(base) if "refused" in m.change}
    assert set(refused) == {Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.FIX}
    assert all(codes == {"LEGAL_ATTR"} for codes in refused.values())
    f32 = next(c for k, c in C.base_cases(isa.get("MSCATTER"), "a2").items() if k[0].name == "f32")
    modes = {m.case.attrs["atomic"]: m.codes for m in L1.mutants(f32) if "refused" in m.change}
    assert modes == {AtomicMode.MAX: {"LEGAL_MODE"}, AtomicMode.MIN: {"LEGAL_MODE"}}


def test_mask_pattern_values_unchanged_elsewhere() -> None:
    """The TGATHER rule lists every pattern: only the data type is limited."""
    (rule,) = isa.get("TGATHER").value_rules("a2")
    assert set(rule.values) == set(MaskPattern) and rule.unless == "idx"
