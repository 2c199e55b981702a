"""Conformance level 2: the reference backend passes it, deliberately broken backends fail it
on exactly the instruction they break, legitimate implementation freedom (f32 accumulation,
a libm exp) passes, and the contracts and value strategies behave as documented."""
from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

from openpto.backends import get as get_backend
from openpto.backends.reference import ReferenceBackend
from openpto.conformance import cases as C
from openpto.conformance import contracts as K
from openpto.conformance import values as V
from openpto.conformance.level2 import run_level2, run_level2_all
from openpto.isa import dtypes as dt
from openpto.isa.attrs import RoundMode
from openpto.isa.diagnostics import RuntimeFault
from openpto.isa.registry import get
from openpto.isa.values import GlobalRef, Tile

REFERENCE = get_backend("reference")
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def with_rule(mnemonic: str, fn, name: str = "patched") -> ReferenceBackend:  # noqa: ANN001
    """The reference backend running ``fn`` for one instruction."""
    cls = type(f"Patched{mnemonic}", (ReferenceBackend,),
               {"name": name, "rules": {**ReferenceBackend.rules, mnemonic: fn}})
    return cls()


def first_dtypes(mnemonic: str, profile: str = "cpu") -> C.DTypeTuple:
    return C.supported_dtypes(get(mnemonic), profile)[0]


# --------------------------------------------------------------------------- reference passes

@pytest.mark.parametrize("profile", ["cpu", "a3"])
def test_reference_passes_every_instruction_first_dtypes(profile: str) -> None:
    outs = [run_level2(REFERENCE, profile, instr, first_dtypes(instr.mnemonic, profile), max_examples=3)
            for instr in C.instructions(profile)]
    bad = [(o.instruction, o.dtypes, o.status, o.reason) for o in outs if o.status != "pass"]
    assert bad == []
    assert all(o.examples >= 3 for o in outs)


def test_reference_passes_a_sample_of_other_dtypes(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = [(i, d) for i in C.instructions("cpu") for d in C.supported_dtypes(i, "cpu")[1:]]
    outs = run_level2_all(REFERENCE, "cpu", only="TQUANT,TEXTRACT", max_examples=2)
    outs += [run_level2(REFERENCE, "cpu", i, d, max_examples=2) for i, d in pairs[::13]]
    bad = [(o.instruction, o.dtypes, o.status, o.reason) for o in outs if o.status != "pass"]
    assert bad == []
    passed = {(o.instruction, o.dtypes) for o in outs}
    assert ("TEXTRACT", "f16,f32") in passed and ("TQUANT", "u8,f32,f32") in passed   # from more_examples
    # a pair with no derivable legal case is reported, not hidden: one is made so here, as
    # which real pairs lack one changes whenever examples and rules improve
    mx = get("TMATMUL_MX")
    real = C.base_cases
    missing = list(real(mx, "a5"))[-1]
    monkeypatch.setattr(C, "base_cases", lambda i, p: {**real(i, p), **({missing: None} if (i.mnemonic, p) == ("TMATMUL_MX", "a5") else {})})
    o = run_level2(REFERENCE, "a5", mx, missing, max_examples=1)
    assert (o.status, o.dtypes) == ("skipped", C.dtype_key(missing)) and "no legal case" in o.reason


def test_run_level2_all_selects_and_reports_progress() -> None:
    seen = []
    outs = run_level2_all(REFERENCE, "cpu", only=["TADD", "TROW*"], max_examples=1, progress=seen.append)
    names = {o.instruction for o in outs}
    assert "TADD" in names and "TROWSUM" in names and "TROWEXPANDMAX" in names
    assert "TSUB" not in names and "TCOLSUM" not in names
    assert seen == outs
    assert len([o for o in outs if o.instruction == "TADD"]) == len(C.supported_dtypes(get("TADD"), "cpu"))


# --------------------------------------------------------------------------- broken backends

def rowsum_skips_last_column(dst: Tile, src: Tile, **_: object) -> None:
    r, c = src.valid
    total = src.data[:r, :max(c - 1, 0)].astype(np.float64).sum(axis=1, keepdims=True)
    dst.write(total.astype(dst.data.dtype), r, 1)


def cvt_rint_ties_away(dst: Tile, src: Tile, roundMode: RoundMode, satMode: object) -> None:  # noqa: N803
    mode = RoundMode.ROUND if roundMode in (RoundMode.RINT, RoundMode.NONE) else roundMode
    get("TCVT").semantics(dst, src, mode, satMode)


def sel_inverted_mask(dst: Tile, mask: Tile, src0: Tile, src1: Tile, **rest: object) -> None:
    flipped = Tile(mask.type, ~mask.data, mask.valid)
    get("TSEL").semantics(dst, flipped, src0, src1, **rest)


def load_ignoring_row_stride(dst: Tile, src: GlobalRef) -> None:
    """Reads the tensor as if it were contiguous row-major, whatever its strides."""
    a = src.array
    raw = a.view(_UINT[a.itemsize] if a.dtype != np.bool_ else np.uint8)
    dense = tuple(int(np.prod(a.shape[k + 1:])) * a.itemsize for k in range(a.ndim))
    as_if = np.lib.stride_tricks.as_strided(raw, a.shape, dense).view(a.dtype)
    get("TLOAD").semantics(dst, GlobalRef(as_if, src.offsets))


def exp_to_1e3(dst: Tile, src: Tile, **attrs: object) -> None:
    get("TEXP").semantics(dst=dst, src=src, **attrs)
    r, c = dst.valid
    dst.data[:r, :c] = (dst.data[:r, :c].astype(np.float64) * (1 + 9e-4)).astype(dst.data.dtype)


BROKEN = {
    "TROWSUM": (rowsum_skips_last_column, (dt.F32, dt.F32), ("TCOLSUM", "TROWMAX")),
    "TCVT": (cvt_rint_ties_away, (dt.F16, dt.F32), ("TMOV", "TADD")),
    "TSEL": (sel_inverted_mask, (dt.F32, dt.I1, dt.F32, dt.F32), ("TSELS", "TCMP")),
    "TLOAD": (load_ignoring_row_stride, (dt.F32, dt.F32), ("TSTORE", "MGATHER")),
    "TEXP": (exp_to_1e3, (dt.F32, dt.F32), ("TLOG", "TROWEXPANDEXPDIF")),
}


@pytest.mark.parametrize("seed", [None, 0])
@pytest.mark.parametrize("mnemonic", sorted(BROKEN))
def test_broken_backend_fails_exactly_the_instruction_it_breaks(mnemonic: str, seed: int | None) -> None:
    fn, dtypes, others = BROKEN[mnemonic]
    backend = with_rule(mnemonic, fn, f"broken-{mnemonic.lower()}")
    o = run_level2(backend, "cpu", mnemonic, dtypes, seed=seed)
    assert o.status == "fail", o
    f = o.failure
    assert f is not None and f.difference is not None and f.program is not None
    assert mnemonic.lower() in f.program and f.difference.operand == "dst"
    assert f.difference.expected.split(" ")[0] != f.difference.actual.split(" ")[0]
    assert set(f.inputs) >= {op.name for op in get(mnemonic).inputs if op.name in ("src", "src0", "mask")}
    for other in others:
        ok = run_level2(backend, "cpu", other, first_dtypes(other), max_examples=4, seed=seed)
        assert ok.status == "pass", ok


def test_broken_tload_failure_shows_the_strided_tensor() -> None:
    o = run_level2(with_rule("TLOAD", load_ignoring_row_stride), "cpu", "TLOAD", (dt.F32, dt.F32))
    src = o.failure.inputs["src"]
    assert src.strides[0] != src.shape[1] * src.itemsize        # only a strided view exposes the bug
    assert o.failure.difference.index[0] >= 1                    # row 0 is right either way


def test_exp_within_1e3_passes_f16_where_its_contract_is_that_loose() -> None:
    backend = with_rule("TEXP", exp_to_1e3)
    assert run_level2(backend, "cpu", "TEXP", (dt.BF16, dt.BF16), max_examples=4).status == "pass"


# --------------------------------------------------------------------------- legitimate freedom

def rowsum_f32_sequential(dst: Tile, src: Tile, **_: object) -> None:
    if not src.dtype.is_float:
        return get("TROWSUM").semantics(dst=dst, src=src)
    r, c = src.valid
    acc = np.zeros(r, dtype=np.float32)
    with np.errstate(all="ignore"):
        for j in reversed(range(c)):
            acc += src.data[:r, j].astype(np.float32)
    dst.write(acc.reshape(r, 1).astype(dst.data.dtype), r, 1)


def matmul_f32(dst: Tile, a: Tile, b: Tile) -> None:
    if not dst.dtype.is_float:
        return get("TMATMUL").semantics(dst=dst, a=a, b=b)
    m, k = a.valid
    n = b.valid[1]
    with np.errstate(all="ignore"):
        dst.write(np.matmul(a.data[:m, :k].astype(np.float32), b.data[:k, :n].astype(np.float32)), m, n)


def exp_f32_libm(dst: Tile, src: Tile, **attrs: object) -> None:   # either precision: libm meets both
    r, c = dst.valid
    with np.errstate(all="ignore"):
        dst.write(np.exp(src.data[:r, :c].astype(np.float32)).astype(dst.data.dtype), r, c)


@pytest.mark.parametrize("mnemonic, fn", [("TROWSUM", rowsum_f32_sequential), ("TMATMUL", matmul_f32),
                                          ("TEXP", exp_f32_libm)])
def test_legitimate_implementations_pass(mnemonic: str, fn) -> None:  # noqa: ANN001
    backend = with_rule(mnemonic, fn)
    for dtypes in C.supported_dtypes(get(mnemonic), "cpu")[:3]:
        o = run_level2(backend, "cpu", mnemonic, dtypes, max_examples=20, seed=1)
        assert o.status == "pass", o


# --------------------------------------------------------------------------- backend errors

def test_error_codes_must_agree_and_crashes_are_failures() -> None:
    def wrong_code(**kw: object) -> None:
        raise RuntimeFault("RUNTIME_OOB", "made up")

    o = run_level2(with_rule("TADD", wrong_code), "cpu", "TADD", first_dtypes("TADD"), max_examples=2)
    assert o.status == "fail" and "RUNTIME_OOB" in o.reason

    def arithmetic_bug(**kw: object) -> None:
        raise ZeroDivisionError("boom")

    o = run_level2(with_rule("TADD", arithmetic_bug), "cpu", "TADD", first_dtypes("TADD"), max_examples=2)
    assert o.status == "fail" and "RUNTIME_INTERNAL" in o.reason      # the reference reports it as a fault

    def crash(**kw: object) -> None:
        raise KeyError("escapes the interpreter")

    o = run_level2(with_rule("TADD", crash), "cpu", "TADD", first_dtypes("TADD"), max_examples=2)
    assert o.status == "fail" and "KeyError" in o.reason

    class CompileCrash(ReferenceBackend):
        name = "compile-crash"

        def _compile(self, module, profile, **options):  # noqa: ANN001, ANN202
            raise MemoryError("out of registers")

    o = run_level2(CompileCrash(), "cpu", "TADD", first_dtypes("TADD"), max_examples=2)
    assert o.status == "fail" and "MemoryError" in o.reason


def test_a_precondition_error_must_be_raised_by_the_backend() -> None:
    """TGATHER's semantics raise RUNTIME_OOB for an index out of range; a backend that
    clamps instead (as the public CPU simulator returns 0) fails."""
    def clamping_gather(dst: Tile, src: Tile, idx: Tile, **_: object) -> None:
        r, c = dst.valid
        flat = src.data.reshape(-1)
        dst.write(flat[np.clip(idx.data[:r, :c].astype(np.int64), 0, flat.size - 1)], r, c)

    o = run_level2(with_rule("TGATHER", clamping_gather), "cpu", "TGATHER", first_dtypes("TGATHER"))
    assert o.status == "fail" and "RUNTIME_OOB" in o.reason


def test_unsupported_and_skipped_outcomes() -> None:
    class NoAdd(ReferenceBackend):
        name = "no-add"
        rules = {k: v for k, v in ReferenceBackend.rules.items() if k != "TADD"}

    o = run_level2(NoAdd(), "cpu", "TADD", first_dtypes("TADD"))
    assert o.status == "unsupported" and "TADD" in o.reason
    assert run_level2(REFERENCE, "a3", "TMATMUL_MX", first_dtypes("TMATMUL_MX")).status == "unsupported"
    o = run_level2(REFERENCE, "cpu", "TEXTRACT", (dt.F16, dt.F32))
    assert o.status == "pass"           # the acc -> mat conversion example makes the tuple testable


# --------------------------------------------------------------------------- contracts

def _f32(*bits: int) -> np.ndarray:
    return np.array(bits, dtype=np.uint32).view(np.float32)


def test_ulp_and_rounded_contracts_on_neighbouring_floats() -> None:
    want = np.array([1.0, 3.0, -2.5], dtype=np.float32)
    one_ulp = np.nextafter(want, np.float32(np.inf))
    three = want.view(np.uint32) + np.uint32(3)
    assert not K.ulp_bad(one_ulp, want, 2).any()
    assert K.rounded_bad(one_ulp, want).all()
    assert K.ulp_bad(three.view(np.float32), want, 2).all()
    assert not K.ulp_bad(want, want, 0).any()


def _bound(want: np.ndarray, s: float) -> K.SumBound:
    """The sum bound of a 1-term reduction whose exact result is ``want`` and sum|terms| ``s``."""
    x = want.astype(np.float64)
    if want.dtype.kind != "f":
        return K.SumBound(x, x * 0, x * 0, x != x)
    return K.sum_bound(x, np.full(x.shape, s), 1, want.dtype)


def test_nan_against_a_number_fails_every_contract() -> None:
    want, got = np.array([1.5], np.float32), np.array([np.nan], np.float32)
    for bad in (K.exact_bad(got, want), K.rounded_bad(got, want), K.ulp_bad(got, want, 4),
                K.sum_bad(got, want, _bound(want, 1e30)), K.ulp_bad(want, got, 4)):
        assert bad.all()
    assert K.sum_bad(want, got, _bound(got, np.inf)).all()      # NaN expected: unbounded or not


def test_nan_payloads_count_only_under_exact() -> None:
    quiet, payload = _f32(0x7FC00000), _f32(0x7FC00001)
    assert K.exact_bad(payload, quiet).all()
    assert not K.rounded_bad(payload, quiet).any()
    assert not K.ulp_bad(payload, quiet, 1).any()


def test_signed_zeros() -> None:
    pos, neg = np.array([0.0], np.float32), np.array([-0.0], np.float32)
    assert K.exact_bad(neg, pos).all() and K.rounded_bad(neg, pos).all() and K.ulp_bad(neg, pos, 2).all()
    assert not K.sum_bad(neg, pos, _bound(pos, 0.0)).any()      # the sign of a zero sum is unspecified


def test_infinities_under_ulp_are_exact() -> None:
    inf, big = np.array([np.inf], np.float32), np.array([np.finfo(np.float32).max], np.float32)
    assert K.ulp_bad(big, inf, 2).all()
    assert not K.ulp_bad(inf, inf, 0).any()


def test_integers_are_exact_under_every_contract() -> None:
    want, got = np.array([5, -7], np.int32), np.array([5, -6], np.int32)
    for bad in (K.rounded_bad(got, want), K.ulp_bad(got, want, 8), K.sum_bad(got, want, _bound(want, 9.0))):
        assert bad.tolist() == [False, True]


def _rowsum_case() -> C.Case:
    return C.base_cases(get("TROWSUM"), "cpu")[(dt.F32, dt.F32)]


def test_sum_tolerance_comes_from_the_absolute_values_of_the_terms() -> None:
    case = _rowsum_case()
    src = np.zeros((16, 16), np.float32)
    src[:, :3] = [1e6, -1e6, 1.0]                    # sum 1, sum|terms| ~2e6: cancellation allowed
    inputs = {"dst": np.zeros((16, 1), np.float32), "src": src, "tmp": np.zeros((16, 16), np.float32)}
    want = K.oracle(case, inputs)
    n = K.reduction_length(case)
    assert n >= 10 and want["dst"][0, 0] == 1.0           # 10 valid columns at least
    slack = (n + 2) * 2.0 ** -24 * 2e6                   # f32 accumulation of 2e6 worth of terms
    near, far = want["dst"].copy(), want["dst"].copy()
    near[0, 0] += np.float32(0.9 * slack)
    far[0, 0] += np.float32(1.1 * slack)
    assert K.compare(case.instr, case, {"dst": near}, want, inputs) is None
    diff = K.compare(case.instr, case, {"dst": far}, want, inputs)
    assert diff is not None and diff.operand == "dst" and diff.index == (0, 0)
    assert diff.expected.startswith("1.0 (0x3f800000 f32) (exact 1.0 ± ")


def test_only_the_valid_region_is_compared() -> None:
    case = _rowsum_case()                                 # dst valid 12x1 of 16x1
    rng = np.random.default_rng(0)
    inputs = {"dst": np.zeros((16, 1), np.float32), "src": rng.standard_normal((16, 16)).astype(np.float32),
              "tmp": np.zeros((16, 16), np.float32)}
    want = K.oracle(case, inputs)
    got = want["dst"].copy()
    got[12:] = 42.0
    assert K.compare(case.instr, case, {"dst": got}, want, inputs) is None
    got[11, 0] = 42.0
    assert K.compare(case.instr, case, {"dst": got}, want, inputs).index == (11, 0)


def test_row0_domain_compares_only_the_first_row() -> None:
    case = C.base_cases(get("TCI"), "cpu")[first_dtypes("TCI")]
    t = case.types["dst"]
    inputs = {"dst": np.zeros(t.shape, t.dtype.np_dtype), "start": 5}
    want = K.oracle(case, inputs)
    got = want["dst"].copy()
    got[1:] += 1
    assert K.compare(case.instr, case, {"dst": got}, want, inputs) is None
    got[0, t.valid_cols - 1] += 1
    assert K.compare(case.instr, case, {"dst": got}, want, inputs).index == (0, t.valid_cols - 1)


def test_static_dst_domain_compares_the_padding() -> None:
    case = C.base_cases(get("TFILLPAD"), "cpu")[(dt.F32, dt.F32)]
    inputs = {"dst": np.zeros((16, 16), np.float32), "src": np.ones((16, 16), np.float32)}
    want = K.oracle(case, inputs)
    got = want["dst"].copy()
    got[15, 15] = 0.0                                     # outside src's valid region: a pad element
    assert K.compare(case.instr, case, {"dst": got}, want, inputs).index == (15, 15)


def test_elements_the_semantics_leave_untouched_are_not_compared() -> None:
    """TSCATTER leaves dst rows no index targets unspecified: a backend zeroing dst first passes."""
    case = C.base_cases(get("TSCATTER"), "cpu")[first_dtypes("TSCATTER")]
    shape = case.types["dst"].shape
    idx = np.zeros(case.types["idx"].shape, case.types["idx"].dtype.np_dtype)   # every element -> row 0
    inputs = {"dst": np.full(shape, 7, case.types["dst"].dtype.np_dtype),
              "src": np.arange(np.prod(case.types["src"].shape)).reshape(case.types["src"].shape)
              .astype(case.types["src"].dtype.np_dtype), "idx": idx}
    want = K.oracle(case, inputs)
    zeroed = np.zeros_like(want["dst"])
    zeroed[0] = want["dst"][0]
    assert K.compare(case.instr, case, {"dst": zeroed}, want, inputs) is None
    zeroed[0, 0] += 1
    assert K.compare(case.instr, case, {"dst": zeroed}, want, inputs).index == (0, 0)


def test_writes_around_a_strided_global_view_are_caught() -> None:
    case = C.base_cases(get("TSTORE"), "cpu")[(dt.F32, dt.F32)]
    g = case.types["dst"]
    shape = tuple(g.shape)
    strides, size = V._layout(g, shape, 3)
    arg = V.GlobalArg(np.zeros(size + 3, np.float32), 0, shape, strides)
    t = case.types["src"]
    inputs = {"dst": arg, "src": np.ones(t.shape, np.float32)}
    want = K.oracle(case, inputs)
    got = want["dst"].fresh()
    assert K.compare(case.instr, case, {"dst": got}, want, inputs) is None
    got.parent[shape[-1]] = 9.0                            # the padding after row 0
    diff = K.compare(case.instr, case, {"dst": got}, want, inputs)
    assert diff is not None and "around the view" in diff.operand


def test_show_gives_value_and_bits() -> None:
    assert K.show(_f32(0xBF800000), (0,)) == "-1.0 (0xbf800000 f32)"
    assert K.show(np.array([np.nan], ml_dtypes.bfloat16), (0,)).endswith("(0x7fc0 bf16)")
    assert K.show(np.array([-3], np.int8), (0,)) == "-3 (i8)"
    assert K.show(np.array([True]), (0,)) == "true"


# --------------------------------------------------------------------------- values

@pytest.mark.parametrize("d", [x for x in dt.ALL if x.is_float], ids=str)
def test_float_specials_cover_the_awkward_values(d: dt.DType) -> None:
    s = V.float_specials(d)
    with np.errstate(invalid="ignore"):
        wide = s.astype(np.float64)
    f = ml_dtypes.finfo(d.np_dtype)
    bits = set(s.view(_UINT[d.itemsize]).tolist())
    nans = {b for b, w in zip(s.view(_UINT[d.itemsize]).tolist(), wide) if w != w}
    assert len(nans) >= (2 if d is dt.F8E4M3 else 4)            # payloads and signs
    assert 0 in bits and (1 << (d.bits - 1)) in bits              # +0 and -0
    assert float(f.smallest_subnormal) in wide and float(f.max) in wide and -float(f.max) in wide
    assert (np.isinf(wide).sum() == 2) == (d is not dt.F8E4M3)    # e4m3fn has no infinities


def test_boundary_values_are_ties_of_the_narrower_formats() -> None:
    a = V.build(dt.F32, (4096,), "boundary", 7).astype(np.float64)
    f16 = a.astype(np.float16).astype(np.float64)
    lo = np.abs(a - f16)
    # an f16 tie lies exactly half an f16 ulp from its rounding
    spacing = np.spacing(np.abs(a).astype(np.float16)).astype(np.float64)
    normal = (np.abs(a) > 1e-4) & (np.abs(a) < 6e4)
    assert np.any(normal & (lo == spacing / 2))
    assert np.any((a % 1 == 0.5) & (np.abs(a) < 1e4))              # integer ties


def test_integer_specials_and_small_mode() -> None:
    assert set(V.int_specials(dt.I8).tolist()) >= {-128, 127, -1, 0, 1}
    assert set(V.int_specials(dt.U32).tolist()) >= {0, 1, 2**32 - 1}
    small = V.build(dt.I32, (1000,), "small", 3, bound=5)
    assert small.min() >= 0 and small.max() < 5
    ties = V.build(dt.I32, (4096,), "boundary", 3).astype(np.int64)
    exact = ties.astype(np.float32).astype(np.int64) == ties
    assert not exact.all()                                        # some need rounding to reach f32


def test_builds_are_deterministic_and_most_elements_ordinary() -> None:
    a = V.build(dt.F16, (64, 64), "specials", 11)
    assert np.array_equal(a.view(np.uint16), V.build(dt.F16, (64, 64), "specials", 11).view(np.uint16))
    assert np.isfinite(a.astype(np.float32)).mean() > 0.7


@given(st.data())
def test_inputs_cover_every_parameter(data: st.DataObject) -> None:
    case = C.base_cases(get("TADDS"), "cpu")[(dt.F16,) * 3]
    ins = V.draw_inputs(data.draw, case)
    assert set(ins) == {p.name for p in case.module().kernels[0].params}
    assert ins["src"].shape == case.types["src"].shape and ins["src"].dtype == np.float16
    assert isinstance(ins["scalar"], float)


def test_globals_are_strided_in_some_draws() -> None:
    case = C.base_cases(get("TLOAD"), "cpu")[(dt.F32, dt.F32)]
    seen = set()

    @given(st.data())
    def draw(data: st.DataObject) -> None:
        seen.add(V.draw_inputs(data.draw, case)["src"].contiguous)

    draw()
    assert seen == {True, False}


def test_scalar_example_is_wrapped_into_the_operand_type() -> None:
    case = C.base_cases(get("TANDS"), "cpu")[(dt.I8,) * 3]
    ins = V.recipe_inputs(case, "ordinary", "ordinary", "random", 0, False)
    assert -128 <= ins["scalar"] <= 127 and ins["scalar"] == ((4080 + 128) % 256) - 128


def test_varied_index_literals_keep_the_case_otherwise() -> None:
    base = C.base_cases(get("TEXTRACT"), "cpu")[first_dtypes("TEXTRACT")]
    seen = set()

    @given(st.data())
    def draw(data: st.DataObject) -> None:
        c = V.draw_index_literals(data.draw, base)
        assert dataclasses.replace(c, scalars=base.scalars) == base
        seen.add((c.scalars["r0"], c.scalars["c0"]))

    draw()
    assert (base.scalars["r0"], base.scalars["c0"]) in seen and len(seen) > 1


def test_global_offsets_are_varied_and_a_load_ignoring_them_is_caught() -> None:
    from openpto.isa import GlobalRef

    def tload_at_origin(dst: Tile, src: GlobalRef) -> None:
        get("TLOAD").semantics(dst, GlobalRef(src.array))

    o = run_level2(with_rule("TLOAD", tload_at_origin, "broken-offsets"), "cpu", "TLOAD", (dt.F32, dt.F32))
    assert o.status == "fail" and o.failure is not None and o.failure.program is not None
    assert "%src[%c0, %c0]" not in o.failure.program          # the shrunk case still has an offset
