"""llvm backend safety (issue #12): generated code never wraps past a check, never hangs and
compiles every integer type the verifier accepts, with the reference backend's meaning.

- windows at offsets near 2^63 (from a scalar argument or an ``index`` constant) and negative
  offsets fail with RUNTIME_OOB instead of wrapping past the bounds check and writing before
  the array;
- ``scf.for`` ends like the reference's ``range(lb, ub, step)`` when the counter would step
  past its type's maximum (it used to loop forever), for every integer counter type;
- ``i8``..``u64`` loop counters, memory-operand indices, dynamic valid extents and index
  operands (TEXTRACT/TINSERT offsets, TTRI's diagonal, event ids) compile and mean what they
  mean on the reference (sign- or zero-extended by their type);
- a fixed-seed fuzz of extreme window starts and sizes through loads, stores, TEXTRACT/TINSERT
  and gathers: the same fault code as the reference or the same bits, and no byte written
  outside the arguments (canary guard zones and strided gaps).

Runs that could crash or hang the process before the fix go through ``llvm_isolated`` (a child
process with a timeout); the reference runs here.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from llvm_isolated import isolated, run_cases

I64_MAX, I64_MIN = 2 ** 63 - 1, -2 ** 63

RANGES = {"index": (I64_MIN, I64_MAX), "i64": (I64_MIN, I64_MAX), "i32": (-2 ** 31, 2 ** 31 - 1),
          "i16": (-2 ** 15, 2 ** 15 - 1), "i8": (-128, 127), "u8": (0, 255), "u16": (0, 2 ** 16 - 1),
          "u32": (0, 2 ** 32 - 1), "u64": (0, 2 ** 64 - 1)}


def pick(rng: np.random.Generator, xs: list[int]) -> int:
    """One of ``xs`` exactly (``rng.choice`` would go through a float array for big ints)."""
    return xs[int(rng.integers(len(xs)))]


def compare(cases: list[tuple[str, dict[str, Any]]], spread: int = 1) -> list[str | None]:
    """Run every case on llvm (isolated, guarded) and on the reference: the same fault code,
    or the same output bits; no llvm write outside an argument. Returns the codes."""
    llvm = isolated(cases, "llvm", spread)
    ref = run_cases(cases, "reference", spread)
    codes = []
    for (text, args), (lc, la, smashed, _), (rc, ra, _, _) in zip(cases, llvm, ref):
        where = {k: v for k, v in args.items() if not isinstance(v, np.ndarray)}
        assert not smashed, f"llvm wrote outside {smashed} with {where}"
        assert lc == rc, f"llvm {lc} vs reference {rc} with {where}"
        if rc is None:
            for k in ra:
                assert la[k].tobytes() == ra[k].tobytes(), f"{k} differs with {where}"
        codes.append(rc)
    return codes


# --------------------------------------------------------------------------- windows near 2^63

STORE = """
kernel @k(%g : !pto.memref<?x?xf32>, %i : index, %j : index) {
  %t = texpands 1.0 : (f32) -> !pto.tile<16x16xf32>
  tstore %g[%i, %j], %t : (!pto.memref<?x?xf32>, !pto.tile<16x16xf32>)
}
"""

LOAD = """
kernel @k(%g : !pto.memref<?x?xf32>, %i : index, %j : index, %out : !pto.tile<16x16xf32>) {
  %out = tload %g[%i, %j] : (!pto.memref<?x?xf32>) -> !pto.tile<16x16xf32>
}
"""

STORE_CONST = """
kernel @k(%g : !pto.memref<?x?xf32>) {
  .const %c0 = 0 : index
  .const %big = 9223372036854775807 : index
  %t = texpands 1.0 : (f32) -> !pto.tile<16x16xf32>
  tstore %g[%big, %c0], %t : (!pto.memref<?x?xf32>, !pto.tile<16x16xf32>)
}
"""

STORE3 = """
kernel @k(%g : !pto.memref<?x?x?xf32>, %a : index, %i : index, %j : index) {
  %t = texpands 1.0 : (f32) -> !pto.tile<8x16xf32>
  tstore %g[%a, %i, %j], %t : (!pto.memref<?x?x?xf32>, !pto.tile<8x16xf32>)
}
"""

EXTREMES = [I64_MAX, I64_MAX - 15, I64_MAX - 16, 2 ** 62, I64_MIN, I64_MIN + 1, -1, -16]


@pytest.mark.parametrize("text", [STORE, LOAD], ids=["tstore", "tload"])
def test_window_near_int64_max_from_a_scalar_is_oob(text: str) -> None:
    g = np.zeros((32, 16), np.float32)
    out = {"out": np.zeros((16, 16), np.float32)} if "out" in text else {}
    cases = [(text, dict(g=g, i=i, j=j, **out)) for v in EXTREMES for i, j in ((v, 0), (0, v), (v, v))]
    assert set(compare(cases)) == {"RUNTIME_OOB"}


def test_window_at_int64_max_from_an_index_constant_is_oob() -> None:
    assert compare([(STORE_CONST, dict(g=np.zeros((32, 16), np.float32)))]) == ["RUNTIME_OOB"]


def test_leading_dimension_index_near_int64_max_is_oob() -> None:
    """A leading index addresses one matrix: index + 1 wraps at 2^63 - 1."""
    g = np.zeros((2, 8, 16), np.float32)
    cases = [(STORE3, dict(g=g, a=a, i=0, j=0)) for a in (I64_MAX, I64_MIN, -1, 2)]
    assert compare(cases) == ["RUNTIME_OOB"] * 4
    assert compare([(STORE3, dict(g=g, a=1, i=0, j=0))]) == [None]


def test_oob_report_gives_the_exact_window_end() -> None:
    """The end of the window is added exactly (in the report, not in i64), as the reference's."""
    (code, _, _, actual), = isolated([(STORE, dict(g=np.zeros((32, 16), np.float32), i=I64_MAX, j=0))])
    assert code == "RUNTIME_OOB" and actual == f"[{I64_MAX}, {I64_MAX + 16})"


# --------------------------------------------------------------------------- loop counters

LOOP = """
kernel @k(%lo : {t}, %hi : {t}, %st : {t}, %out : !pto.tile<1x8xu32>, %lastlo : !pto.tile<1x8xu32>,
          %lasthi : !pto.tile<1x8xu32>) {{
  .const %c0 = 0 : index
  .const %c1 = 1 : index
  .const %c32 = 32 : index
  %n, %l = scf.for %i = %lo to %hi step %st : {t} iter_args(%a = %c0, %b = %lo) -> (index, {t}) {{
    %a2 = arith.addi %a, %c1 : index
    scf.yield %a2, %i : index, {t}
  }}
  %d = arith.subi %l, %lo : {t}
  {cast}
  %n32 = arith.index_cast %n : index to u32
  %lo32 = arith.index_cast %dx : index to u32
  %top = arith.shrui %dx, %c32 : index
  %hi32 = arith.index_cast %top : index to u32
  %out = texpands %n32 : (u32) -> !pto.tile<1x8xu32>
  %lastlo = texpands %lo32 : (u32) -> !pto.tile<1x8xu32>
  %lasthi = texpands %hi32 : (u32) -> !pto.tile<1x8xu32>
}}
"""


def loop_text(t: str) -> str:
    """Counts the iterations and reports last iv - lb (in the counter's type, as two u32
    halves) in three tiles."""
    cast = "%dx = arith.addi %d, %c0 : index" if t == "index" else f"%dx = arith.index_cast %d : {t} to index"
    return LOOP.format(t=t, cast=cast)


def loop_cases(t: str) -> list[tuple[int, int, int]]:
    lo, hi = RANGES[t]
    cases = [(hi - 5, hi, s) for s in (1, 2, 3, 5, 6, 7)] + [
        (hi - 1, hi, 1), (lo, lo + 3, 1), (lo, hi, hi), (lo + 1, hi, hi), (0, 10, 3), (5, 5, 1), (7, 3, 1),
        (0, 4, 0)]
    if lo < 0:
        cases += [(lo, hi, hi - 1), (-3, 3, -1), (lo, lo + 2, 1), (-5, 0, 2)]
    else:
        cases += [(0, hi, hi - 1), (0, hi, (hi + 1) // 2 + 1)]
    return cases


@pytest.mark.parametrize("t", list(RANGES))
def test_loop_counter_ends_like_the_reference_near_its_maximum(t: str) -> None:
    """``scf.for`` runs ``range(lb, ub, step)`` of the counter's natural values: the last
    iteration is the last value below ub, even when adding the step would pass the type's
    maximum (llvm used to wrap and loop forever; narrow counters did not compile). Checked
    against the reference and against Python's ``range``."""
    text = loop_text(t)
    bounds = loop_cases(t)
    cases = [(text, dict(lo=lo, hi=hi, st=st, **{k: np.zeros((1, 8), np.uint32) for k in ("out", "lastlo", "lasthi")}))
             for lo, hi, st in bounds]
    expect = [None if st > 0 else "RUNTIME_LOOP_STEP" for _, _, st in bounds]
    assert compare(cases) == expect
    width = 64 if t in ("index", "i64", "u64") else int(t[1:])
    for (lo, hi, st), (code, arrays, _, _) in zip(bounds, isolated(cases)):
        if st > 0:
            r = range(lo, hi, st)
            assert arrays["out"][0, 0] == len(r), (lo, hi, st)
            if len(r):
                last = int(arrays["lastlo"][0, 0]) | int(arrays["lasthi"][0, 0]) << 32
                assert last % 2 ** width == (r[-1] - lo) % 2 ** width, (lo, hi, st)


# --------------------------------------------------------------------------- integer-typed operands

WINDOW_TYPED = """
kernel @k(%src : !pto.memref<?x?xf32>, %dst : !pto.memref<?x?xf32>, %i : {a}, %j : {b}, %o : {b}, %p : {a},
          %vr : {a}, %vc : {b}) {{
  .tile %t valid_row = %vr valid_col = %vc : !pto.tile<8x16xf32, valid=?x?>
  %t = tload %src[%i, %j] : (!pto.memref<?x?xf32>) -> !pto.tile<8x16xf32, valid=?x?>
  tstore %dst[%o, %p], %t : (!pto.memref<?x?xf32>, !pto.tile<8x16xf32, valid=?x?>)
}}
"""


def _typed_values(t: str) -> list[int]:
    lo, hi = RANGES[t]
    return sorted({lo, hi, 0, 1, 3, min(hi, 200), max(lo, -1), hi // 2})


@pytest.mark.parametrize("a,b", [("i8", "u16"), ("u8", "i32"), ("i16", "u32"), ("u64", "i64"), ("index", "u8")])
def test_memory_indices_and_valid_extents_of_any_integer_type(a: str, b: str) -> None:
    """Indices and dynamic extents read as their type's natural value (i8 -1 is -1, u8 200
    is 200): the reference's result, or its fault, on llvm too."""
    rng = np.random.default_rng(7)
    src = rng.standard_normal((260, 260)).astype(np.float32)
    text = WINDOW_TYPED.format(a=a, b=b)
    va, vb = _typed_values(a), _typed_values(b)
    cases = []
    for _ in range(40):
        cases.append((text, dict(src=src, dst=np.zeros((260, 260), np.float32),
                                 i=pick(rng, va), j=pick(rng, vb), o=pick(rng, vb),
                                 p=pick(rng, va), vr=pick(rng, va + [8, 5]),
                                 vc=pick(rng, vb + [16, 11]))))
    codes = compare(cases)
    assert None in codes and "RUNTIME_OOB" in codes or "RUNTIME_VALID_REGION" in codes


INDEX_OPERANDS = """
kernel @k(%src : !pto.tile<16x16xf32>, %mid : !pto.tile<8x8xf32>, %big : !pto.tile<16x16xf32>,
          %tri : !pto.tile<16x16xf32>, %r0 : {t}, %c0 : {t}, %d : {t}, %e : {t}, %a : {t}) {{
  .tile %s : !pto.tile<16x16xf32>
  %mid = textract %src, %r0, %c0 : (!pto.tile<16x16xf32>, {t}, {t}) -> !pto.tile<8x8xf32>
  tinsert %big, %mid, %c0, %r0 : (!pto.tile<16x16xf32>, !pto.tile<8x8xf32>, {t}, {t})
  %tri = ttri %d {{upper = false}} : ({t}) -> !pto.tile<16x16xf32>
  set_flag #pto.pipe<MTE2>, #pto.pipe<V>, %e : ({t})
  wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, %e : ({t})
  %s = tassign %a : ({t}) -> !pto.tile<16x16xf32>
}}
"""


@pytest.mark.parametrize("t", ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "index"])
def test_index_operands_of_any_integer_type(t: str) -> None:
    """TEXTRACT/TINSERT offsets, TTRI's diagonal, event ids and TASSIGN's address of every
    integer type, at the type's extremes: the reference's fault or result. The diagonal
    against numpy too: sign- or zero-extended by the type (u8 255 and u64 2^64 - 1 are far
    diagonals, all ones below them; i8 -1 the one under the main diagonal)."""
    text = INDEX_OPERANDS.format(t=t)
    src = np.arange(256, dtype=np.float32).reshape(16, 16)
    lo, hi = RANGES[t]
    vals = sorted({lo, hi, hi // 2, hi - 31, max(lo, -1), 0, 1, 2, 7, 8, 9, 32, min(hi, 255)})
    rng = np.random.default_rng(len(t))
    tiles = dict(src=src, mid=np.zeros((8, 8), np.float32), big=np.zeros((16, 16), np.float32),
                 tri=np.zeros((16, 16), np.float32))
    cases = [(text, dict(tiles, r0=pick(rng, vals[:-2] + [0, 8] * 3), c0=pick(rng, [0, 3, 8, 9]),
                         d=pick(rng, vals), e=pick(rng, [0, 7, 8, lo, hi]),
                         a=pick(rng, [0, 32, 64, 1, lo, hi, hi - 31])))
             for _ in range(60)]
    codes = compare(cases)
    assert None in codes and "RUNTIME_OOB" in codes
    for d in {max(lo, -1), hi, lo, 3}:
        (code, arrays, _, _), = isolated([(text, dict(tiles, r0=0, c0=0, d=d, e=0, a=0))])
        assert code is None
        assert np.array_equal(arrays["tri"], np.tril(np.ones((16, 16), np.float32), max(-40, min(d, 40))))


def test_docs_loop_with_an_i32_counter_runs() -> None:
    """docs/assembly.md's ``for %k = 0 to 8 step 2 : i32`` (it crashed llvm's code generator)."""
    text = """
kernel @k(%out : !pto.tile<1x8xi32>) {
  .const %z = 0 : i32
  %s = for %k = 0 to 8 step 2 : i32 iter_args(%a = %z) -> (i32) {
    %a2 = arith.addi %a, %k : i32
    scf.yield %a2 : i32
  }
  %out = texpands %s : (i32) -> !pto.tile<1x8xi32>
}
"""
    (code, arrays, _, _), = isolated([(text, dict(out=np.zeros((1, 8), np.int32)))])
    assert code is None and (arrays["out"] == 0 + 2 + 4 + 6).all()


# --------------------------------------------------------------------------- fuzz

FUZZ_WINDOW = """
kernel @k(%src : !pto.memref<?x?xf32>, %dst : !pto.memref<?x?xf32>, %i : index, %j : index, %o : index,
          %p : index, %vr : index, %vc : index, %r0 : index, %c0 : index, %big : !pto.tile<16x16xf32>,
          %small : !pto.tile<4x8xf32>) {
  .tile %t valid_row = %vr valid_col = %vc : !pto.tile<8x16xf32, valid=?x?>
  %t = tload %src[%i, %j] : (!pto.memref<?x?xf32>) -> !pto.tile<8x16xf32, valid=?x?>
  tstore %dst[%o, %p], %t : (!pto.memref<?x?xf32>, !pto.tile<8x16xf32, valid=?x?>)
  %small = textract %big, %r0, %c0 : (!pto.tile<16x16xf32>, index, index) -> !pto.tile<4x8xf32>
  tinsert %big, %small, %c0, %r0 : (!pto.tile<16x16xf32>, !pto.tile<4x8xf32>, index, index)
}
"""

FUZZ_GATHER = """
kernel @k(%g : !pto.memref<?x?xf32>, %idx : !pto.tile<4x8xi32>, %out : !pto.tile<4x8xf32>,
          %t : !pto.tile<16x16xf32>, %o2 : !pto.tile<4x8xf32>) {{
  %out = mgather %g[0, 0], %idx {{indexMode = #pto.index_mode<{im}>, oobMode = #pto.oob<{oob}>}} : (!pto.memref<?x?xf32>, !pto.tile<4x8xi32>) -> !pto.tile<4x8xf32>
  mscatter %g[0, 0], %out, %idx {{indexMode = #pto.index_mode<{im}>, oobMode = #pto.oob<{oob}>}} : (!pto.memref<?x?xf32>, !pto.tile<4x8xf32>, !pto.tile<4x8xi32>)
  %o2 = tgather %t, %idx : (!pto.tile<16x16xf32>, !pto.tile<4x8xi32>) -> !pto.tile<4x8xf32>
}}
"""


def _extreme(rng: np.random.Generator, dim: int) -> int:
    """A start for a window in [0, dim): an extreme of i64 or just past the edge."""
    pool = [-1, 2 ** 31, 2 ** 62, I64_MAX, I64_MIN, dim, dim + 1, I64_MAX - 3, -2 ** 31, I64_MIN + 1]
    return pick(rng, pool)


def _window_args(rng: np.random.Generator) -> dict[str, int]:
    """Fitting values (often exactly at the edge), then one or two replaced by extremes."""
    vr, vc = int(rng.integers(0, 9)), int(rng.integers(0, 17))
    room = dict(i=20 - vr, j=24 - vc, o=12 - vr, p=20 - vc, r0=8, c0=8)    # largest fitting start
    args = {k: pick(rng, [0, top, int(rng.integers(0, top + 1))]) for k, top in room.items()}
    args.update(vr=vr, vc=vc)
    limits = dict(room, vr=8, vc=16)
    for k in rng.choice(sorted(limits), pick(rng, [0, 1, 1, 2]), replace=False):
        args[str(k)] = _extreme(rng, limits[str(k)] + 1)
    return args


@pytest.mark.parametrize("spread", [1, 2])
def test_fuzz_extreme_windows_fault_like_the_reference_and_stay_inside(spread: int) -> None:
    """Fixed seed, 150 runs: random window starts and sizes, many at the extremes, through a
    load, a store, TEXTRACT and TINSERT; contiguous and strided (canary gaps) arrays."""
    rng = np.random.default_rng(12 + spread)
    src = rng.standard_normal((20, 24)).astype(np.float32)
    big = rng.standard_normal((16, 16)).astype(np.float32)
    cases = [(FUZZ_WINDOW, dict(src=src, dst=np.zeros((12, 20), np.float32), big=big,
                                small=np.zeros((4, 8), np.float32), **_window_args(rng))) for _ in range(150)]
    codes = compare(cases, spread)
    assert {None, "RUNTIME_OOB", "RUNTIME_VALID_REGION"} <= set(codes)


def test_fuzz_extreme_gather_indices_fault_like_the_reference_and_stay_inside() -> None:
    rng = np.random.default_rng(21)
    pool = np.array([0, -1, 2 ** 31 - 1, -2 ** 31, 59, 60, 61, 255, 256, 4, 5], np.int64)
    cases = []
    for im in ("ELEMENT", "ROW"):
        for oob in ("ERROR", "CLAMP", "WRAP", "ZERO"):
            text = FUZZ_GATHER.format(im=im, oob=oob)
            for _ in range(8):
                idx = np.where(rng.random((4, 8)) < 0.3, rng.choice(pool, (4, 8)),
                               rng.integers(0, 5, (4, 8))).astype(np.int32)
                cases.append((text, dict(g=rng.standard_normal((5, 12)).astype(np.float32), idx=idx,
                                         out=np.zeros((4, 8), np.float32), o2=np.zeros((4, 8), np.float32),
                                         t=rng.standard_normal((16, 16)).astype(np.float32))))
    codes = compare(cases, spread=2)
    assert None in codes and "RUNTIME_OOB" in codes


# --------------------------------------------------------------------------- one message on both backends

VECTOR_LOAD = """
kernel @k(%g : !pto.memref<?xf32>, %i : index, %t : !pto.tile<1x16xf32>) {
  %t = tload %g[%i] : (!pto.memref<?xf32>) -> !pto.tile<1x16xf32>
}
"""


@pytest.mark.parametrize("i", [-1, 9, I64_MAX])
def test_vector_window_fault_names_the_same_dimension_on_both_backends(i: int) -> None:
    """A 1-D tensor has one dimension, dim 0: both backends say so, with the same window."""
    import openpto as pto
    from openpto.isa.diagnostics import RuntimeFault
    m = pto.parse(VECTOR_LOAD)
    seen = []
    for backend in ("reference", "llvm"):
        with pytest.raises(RuntimeFault) as info:
            pto.compile(m, backend=backend).run("k", np.zeros(24, np.float32), i, np.zeros((1, 16), np.float32))
        e = info.value
        seen.append((e.code, e.message.endswith("out of bounds in dim 0"), e.expected, e.actual))
    assert seen[0] == seen[1] == ("RUNTIME_OOB", True, "indices in [0, 24)", f"[{i}, {i + 16})")
