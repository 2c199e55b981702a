"""The situations L2 must reach by construction (conformance/cases.structured,
values.situation_inputs), the per-pair coverage it records, and its self-check."""
from __future__ import annotations

import math

import numpy as np
import pytest

from openpto.backends.reference import ReferenceBackend
from openpto.conformance import cases as C
from openpto.conformance import coverage as COV
from openpto.conformance import level2
from openpto.conformance import values as V
from openpto.isa import dtypes as dt
from openpto.isa.registry import get
from openpto.isa.families.sync import FMATRIX_FIELDS
from openpto.isa.attrs import IndexMode
from openpto.isa.types import GlobalType, Layout, Pipe, TileType

PROFILE = "cpu"


def base(mnemonic: str, key: str | None = None) -> C.Case:
    bases = C.base_cases(get(mnemonic), PROFILE)
    return next(c for d, c in bases.items() if key is None or C.dtype_key(d) == key)


def valid_regions(case: C.Case) -> dict[str, tuple[int | None, int | None]]:
    return {n: t.valid for n, t in case.types.items() if isinstance(t, TileType)}


def test_tadd_gets_one_column_one_row_and_a_differing_destination() -> None:
    built = C.structured(base("TADD", "f32"))
    assert all(not c.errors() for c in built)
    regions = [set(valid_regions(c).values()) for c in built]
    assert any(len(r) == 1 and next(iter(r))[1] == 1 and next(iter(r))[0] > 1 for r in regions)   # narrow
    assert any(len(r) == 1 and next(iter(r))[0] == 1 and next(iter(r))[1] > 1 for r in regions)   # one row
    assert any(len(r) == 2 for r in regions)                                          # dst differs
    for c in built:
        assert all(t.rows != t.cols for t in c.types.values() if isinstance(t, TileType))
    assert COV.applicable(built, strided=True) >= {"nonsquare", "partial", "one-row", "one-col", "narrow",
                                                   "differ", "joint-specials", "ties"}


def test_a_source_region_differs_before_the_destination() -> None:
    """TINSERT's src may be partial; the construction tries sources first."""
    built = C.structured(base("TINSERT"))
    src = [c.types["src"] for c in built]
    assert any(isinstance(t, TileType) and t.valid != t.shape for t in src)


@pytest.mark.parametrize("mnemonic", ["TLOAD", "TSTORE"])
def test_windowed_globals_take_every_rank_at_non_zero_indices(mnemonic: str) -> None:
    built = C.structured(base(mnemonic, "f32"))
    name, tile = ("src", "dst") if mnemonic == "TLOAD" else ("dst", "src")
    ranks = set()
    for c in built:
        g = c.types[name]
        assert isinstance(g, GlobalType) and not c.errors()
        ranks.add(g.rank)
        assert len(c.offsets[name]) == g.rank and all(i > 0 for i in c.offsets[name])
        assert c.offsets[name][-1] + c.types[tile].valid_cols <= g.shape[-1]      # the window still fits
        assert {"offsets", f"rank-{g.rank}"} <= COV.structural(c)
    assert ranks == {1, 2, 3, 4, 5}
    assert len(built) <= 5                     # ranks ride on the other situations' cases where they can
    assert {f"rank-{r}" for r in range(1, 6)} <= COV.applicable(built, strided=True)


def test_rank_1_global_is_strided_in_the_sweep() -> None:
    (case,) = [c for c in C.structured(base("TLOAD", "f32")) if c.types["src"].rank == 1]
    assert case.types["dst"].valid_rows == 1
    assert not V.situation_inputs(case, "ordinary")["src"].contiguous


def test_tsort32_runs_more_than_one_32_element_block() -> None:
    built = C.structured(base("TSORT32"))
    assert any((c.types["src"].valid_cols or 0) > 32 for c in built)


def test_tgather_mask_form_has_several_rows() -> None:
    masks = [c for c in C.structured(base("TGATHER")) if "idx" not in c.types]
    assert masks and masks[0].types["dst"].valid_rows > 1 and not masks[0].errors()


def test_joint_specials_meet_at_the_same_position() -> None:
    case = base("TADD", "f32")
    inputs = V.situation_inputs(case, "joint-specials")
    a, b = inputs["src0"].ravel(), inputs["src1"].ravel()
    pairs = {(repr(float(x)), repr(float(y))) for x, y in zip(a, b)}
    assert {("nan", "nan"), ("0.0", "-0.0"), ("nan", "1.5"), ("inf", "-inf")} <= pairs


def test_int_extremes_meet_in_every_combination() -> None:
    case = base("TADD", "i16")
    inputs = V.situation_inputs(case, "int-extremes")
    a, b = inputs["src0"].ravel().astype(int), inputs["src1"].ravel().astype(int)
    lo, hi = int(dt.I16.min), int(dt.I16.max)
    assert {(lo, lo), (hi, hi), (lo, hi), (hi, lo)} <= set(zip(a, b))


def test_overflow_only_where_the_accumulation_type_is_wider() -> None:
    assert "overflow" in COV.value_situations(base("TROWSUM", "f16"))
    assert "overflow" not in COV.value_situations(base("TROWSUM", "f32"))
    x = V.situation_inputs(base("TROWSUM", "f16"), "overflow")["src"].astype(np.float64)
    row = x[0]
    with np.errstate(over="ignore"):
        assert math.isinf(float(np.float16(row[0]) + np.float16(row[1])))  # an f16 partial sum overflows
    assert np.isfinite(row.sum())


def test_reference_covers_every_admitted_situation() -> None:
    dtypes = next(d for d in C.base_cases(get("TROWSUM"), PROFILE) if C.dtype_key(d) == "f16")
    out = level2.run_level2(ReferenceBackend(), PROFILE, "TROWSUM", dtypes, max_examples=3, seed=0)
    assert out.status == "pass", out.reason
    assert out.coverage and all(out.coverage.values())
    assert {"overflow", "narrow", "partial"} <= set(out.coverage)


def test_self_check_fails_when_a_situation_never_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(level2, "_situation_sweep", lambda *a, **k: (0, None))
    dtypes = next(d for d in C.base_cases(get("TADD"), PROFILE) if C.dtype_key(d) == "f32")
    out = level2.run_level2(ReferenceBackend(), PROFILE, "TADD", dtypes, max_examples=2, seed=0)
    assert out.status == "fail" and out.reason.startswith("self-check")
    missed = [s for s, seen in out.coverage.items() if not seen]
    assert missed and all(s in out.reason for s in missed)
    assert "TADD [f32]" in COV.markdown([out])


def test_acc_in_is_dst_in_place() -> None:
    """The in-place case passes one buffer: the kernel has no acc_in parameter, and the inputs
    give acc_in the destination's contents (the oracle computes the in-place result)."""
    (case,) = [c for c in C.structured(base("TMATMUL_ACC")) if c.aliases]
    assert dict(case.aliases) == {"acc_in": "dst"}
    kernel = case.module().kernels[0]
    assert [p.name for p in kernel.params] == ["dst", "a", "b"]
    inputs = V.situation_inputs(case, "ordinary")
    assert inputs["acc_in"] is inputs["dst"]
    args, written = level2.arguments(case, inputs)
    assert "acc_in" not in args and set(written) == {"dst"}
    assert "in-place" in COV.structural(case)


def test_the_markdown_report_shows_the_coverage_table() -> None:
    from openpto.conformance.report import to_markdown
    from openpto.conformance.runner import Patterns, run

    report = run(ReferenceBackend(), [PROFILE], (2,), only=Patterns(("TADD:f32",)), max_examples=2, progress=None)
    text = to_markdown(report)
    assert "### Situations reached" in text
    assert "| in-place | " + COV.SITUATIONS["in-place"] + " | 1 | 1 |" in text


def test_edges_reach_both_ends_of_every_declared_range_and_every_pipe() -> None:
    """SET_FLAG: event ids -1, 0, 7, 8 at run time, src_pipe == dst_pipe, ALL; a flag whose
    run-time values fault stands alone, so a fault is its own and not its partner's; one whose
    values run has its wait after it (a lone wait would never end on ascend_sim): two programs."""
    built = C.edges(base("SET_FLAG"))
    ids = {c.scalars["event_id"] for c in built if c.scalars["src_pipe"] is Pipe.MTE2
           and c.scalars["dst_pipe"] is Pipe.V}
    assert ids == {-1, 0, 7, 8}
    assert all(c.runtime == {"event_id"} for c in built)
    assert any(c.scalars["src_pipe"] is c.scalars["dst_pipe"] for c in built)
    assert {Pipe.ALL} <= {c.scalars["src_pipe"] for c in built} & {c.scalars["dst_pipe"] for c in built}
    for c in built:
        (kernel,) = c.module().kernels
        faults = c.scalars["event_id"] in (-1, 8) or c.scalars["src_pipe"] is c.scalars["dst_pipe"] \
            or Pipe.ALL in (c.scalars["src_pipe"], c.scalars["dst_pipe"])
        assert [s.instr.mnemonic for s in kernel.body] == (["SET_FLAG"] if faults else ["SET_FLAG", "WAIT_FLAG"])
        assert "event_id" in [p.name for p in kernel.params]
    assert len({c.module().to_text() for c in built if c.scalars["src_pipe"] is Pipe.MTE2
                and c.scalars["dst_pipe"] is Pipe.V}) == 2
    assert any("edges" in COV.structural(c) for c in built)


def test_edges_come_from_the_declared_tables() -> None:
    addrs = {c.scalars["addr"] for c in C.edges(base("TASSIGN", "f32"))}
    assert addrs == {-1, 0, 16, 48}           # below 0, 0, half a 32-byte step off, and past 32
    fields = C.edges(base("TSETFMATRIX"))
    for name, (lo, hi) in FMATRIX_FIELDS.items():
        assert {lo - 1, lo, hi, hi + 1} <= {c.scalars[name] for c in fields}
    offsets = {(c.scalars["r0"], c.scalars["c0"]) for c in C.edges(base("TEXTRACT"))}
    assert any(r < 0 for r, _ in offsets) and any(c < 0 for _, c in offsets)


def test_edges_are_admitted_by_the_declaration_alone() -> None:
    assert "edges" in COV.applicable([base("TSYNC")], strided=True)
    assert "edges" in COV.applicable([base("TEXTRACT")], strided=True)
    assert "edges" not in COV.applicable([base("TADD", "f32")], strided=True)
    assert not C.edges(base("TADD", "f32"))


def test_reference_reaches_edges_with_the_semantics_codes() -> None:
    for mnemonic in ("WAIT_FLAG", "TASSIGN"):
        dtypes = next(iter(C.base_cases(get(mnemonic), PROFILE)))
        out = level2.run_level2(ReferenceBackend(), PROFILE, mnemonic, dtypes, max_examples=2, seed=0)
        assert out.status == "pass", out.reason
        assert out.coverage.get("edges") is True


def test_self_check_fails_when_edges_are_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(C, "edges", lambda case: [])
    out = level2.run_level2(ReferenceBackend(), PROFILE, "SET_FLAG", (), max_examples=2, seed=0)
    assert out.status == "fail" and "edges" in out.reason


@pytest.mark.parametrize(("mnemonic", "vector"), [("TROWSUM", "dst"), ("TROWEXPANDADD", "src1")])
def test_per_row_vectors_take_the_other_layout_and_the_wide_nd_form(mnemonic: str, vector: str) -> None:
    """The example's DN R x 1 vector also runs as ND R x 1 and as the legacy ND form: a static
    width of one 32-byte block with one valid column."""
    built = C.structured(base(mnemonic, "f32"))
    forms = {(c.types[vector].layout, c.types[vector].cols, c.types[vector].valid_cols) for c in built}
    assert (Layout.ND, 1, 1) in forms and (Layout.ND, 8, 1) in forms
    assert all(not c.errors() for c in built)
    assert sum("layouts" in COV.structural(c) for c in built) >= 2
    assert len(built) <= len(C.structured(base("TADD", "f32"))) + 1      # folded, not one case each


def test_per_column_vector_runs_in_dn() -> None:
    built = C.structured(base("TCOLSUM", "f32"))
    assert any(c.types["dst"].layout is Layout.DN and c.types["dst"].rows == 1 for c in built)
    assert "layouts" in COV.applicable(built, strided=True)


def test_a_layout_blind_instruction_gets_no_layout_cases() -> None:
    assert "layouts" not in COV.applicable(C.structured(base("TADD", "f32")), strided=True)


@pytest.mark.parametrize("mnemonic", ["MGATHER", "MSCATTER"])
def test_row_mode_runs_with_several_rows(mnemonic: str) -> None:
    rows = [c.types["idx"].valid_rows for s in C.structured(base(mnemonic)) for c in level2.sweep_cases(s)
            if c.attrs.get("indexMode") is IndexMode.ROW and not c.errors()]
    assert rows and max(rows) >= 2
