"""llvm backend: memory (TLOAD/TSTORE/TSTORE_FP/TPREFETCH/MGATHER/MSCATTER) and sync/config
instructions against the reference backend: strided and contiguous windows, conversions and
atomics on store, every oobMode / indexMode, and fuzzed out-of-range indices that must raise
the reference's fault code (never crash)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import openpto as pto
from openpto.isa.diagnostics import PTOError

from llvm_support import executable as _exe, run_program as _run  # noqa: E402


def same(text: str, valid: tuple[int, int] = (3, 7), **args: Any) -> str | None:
    """Run on both backends; equal fault codes, or equal bits of the outputs (an ``out`` tile
    over its ``valid`` region: the reference poisons the rest)."""
    rc, ra = _run(text, "reference", args)
    lc, la = _run(text, "llvm", args)
    assert rc == lc, (rc, lc)
    assert rc is None or not rc.startswith("PARSE"), rc
    if rc is None:
        for k in ra:
            if k in ("g", "dst") or k.startswith("out"):
                r, x = ra[k], la[k]
                if k.startswith("out"):
                    r, x = r[:valid[0], :valid[1]], x[:valid[0], :valid[1]]
                assert r.tobytes() == x.tobytes(), (k, r, x)
    return rc


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint8)


# --------------------------------------------------------------------------- TLOAD / TSTORE

COPY = """
kernel @k(%src : !pto.memref<?x?x{d}>, %g : !pto.memref<?x?x{d}>, %i : index, %j : index,
          %o : index, %p : index) {{
  %t = tload %src[%i, %j] : (!pto.memref<?x?x{d}>) -> !pto.tile<8x16x{d}, valid=5x11>
  tstore %g[%o, %p], %t : (!pto.memref<?x?x{d}>, !pto.tile<8x16x{d}, valid=5x11>)
}}
"""


@pytest.mark.parametrize("d,npd", [("f32", np.float32), ("f16", np.float16), ("i8", np.int8),
                                   ("i64", np.int64), ("i1", np.bool_)])
def test_load_store_contiguous_and_strided(d: str, npd: Any) -> None:
    rng = np.random.default_rng(1)
    base = (rng.standard_normal((20, 30)) * 100).astype(npd)
    if d == "f32":
        base.view(np.uint32)[0, 0] = 0x7FC01234      # NaN payload survives the copy
    text = COPY.format(d=d)
    for src in (base, base.T, base[::2, ::2]):        # contiguous, transposed, strided
        g = np.zeros((12, 40), npd)
        for gg in (g, np.zeros((40, 12), npd).T):
            assert same(text, src=src, g=gg, i=1, j=2, o=3, p=4) is None
    # the valid region is 5x11: the last valid row/col must fit, one more must not
    assert same(text, src=base, g=np.zeros((8, 15), npd), i=0, j=0, o=3, p=4) is None
    assert same(text, src=base, g=np.zeros((8, 15), npd), i=0, j=0, o=4, p=4) == "RUNTIME_OOB"
    assert same(text, src=base, g=np.zeros((8, 15), npd), i=0, j=0, o=0, p=5) == "RUNTIME_OOB"


WIDE = """
kernel @k(%src : !pto.memref<?x?x{d}>, %g : !pto.memref<?x?x{d}>, %i : index, %j : index) {{
  %t = tload %src[%i, %j] : (!pto.memref<?x?x{d}>) -> !pto.tile<24x48x{d}, valid={r}x37>
  tstore %g[%i, %j], %t : (!pto.memref<?x?x{d}>, !pto.tile<24x48x{d}, valid={r}x37>)
}}
"""


@pytest.mark.parametrize("d,npd", [("f32", np.float32), ("f16", np.float16), ("i8", np.int8)])
@pytest.mark.parametrize("rows", [21, 16, 1])
def test_load_from_column_major_window_in_row_blocks(d: str, npd: Any, rows: int) -> None:
    """A transposed source (row stride 1) loads in blocks of 8 rows: whole blocks, a partial
    last one, a single row; bits equal the reference's at an offset window."""
    rng = np.random.default_rng(rows)
    base = (rng.standard_normal((50, 30)) * 100).astype(npd)
    text = WIDE.format(d=d, r=rows)
    g = np.zeros((30, 50), npd)
    assert same(text, valid=(rows, 37), src=base.T, g=g, i=2, j=5) is None
    _, la = _run(text, "llvm", {"src": base.T, "g": g.copy(), "i": 2, "j": 5})
    assert la["g"][2:2 + rows, 5:42].tobytes() == base.T[2:2 + rows, 5:42].tobytes()


def test_load_store_nan_payload_bits() -> None:
    text = COPY.format(d="f32")
    src = np.zeros((8, 16), np.float32)
    src.view(np.uint32)[:] = 0x7F800001            # signalling NaN
    g = np.zeros((8, 16), np.float32)
    exe = _exe(text, "llvm")
    exe(src=src, g=g, i=0, j=0, o=0, p=0)
    assert (g.view(np.uint32)[:5, :11] == 0x7F800001).all() and (g[5:] == 0).all() and (g[:, 11:] == 0).all()


STORE_ACC = """
kernel @k(%g : !pto.memref<8x16x{o}>, %t : !pto.tile<8x16xf32, loc=acc, layout=NZ, valid=6x13>) {{
  tstore %g[0, 0], %t {{atomic = #pto.atomic<{a}>}} : (!pto.memref<8x16x{o}>, !pto.tile<8x16xf32, loc=acc, layout=NZ, valid=6x13>)
}}
"""


@pytest.mark.parametrize("o,npo", [("f16", np.float16), ("f32", np.float32)])
@pytest.mark.parametrize("a", ["NONE", "ADD"])
def test_store_acc_converts_and_atomic_add(o: str, npo: Any, a: str) -> None:
    rng = np.random.default_rng(2)
    t = (rng.standard_normal((8, 16)) * 3e4).astype(np.float32)
    t[0, :4] = [np.inf, -np.inf, np.nan, 65520.0]       # 65520 rounds to inf in f16
    t[1, :3] = [1 + 2 ** -11, 2 ** -25, -0.0]
    g = rng.standard_normal((8, 16)).astype(npo)
    g[0, 0] = -np.inf
    assert same(STORE_ACC.format(o=o, a=a), g=g, t=t) is None


STORE_INT = """
kernel @k(%g : !pto.memref<?x?xi16>, %t : !pto.tile<4x8xi16>) {
  tstore %g[1, 2], %t {atomic = #pto.atomic<ADD>} : (!pto.memref<?x?xi16>, !pto.tile<4x8xi16>)
}
"""


def test_store_atomic_add_integers_wrap_strided() -> None:
    t = np.full((4, 8), 30000, np.int16)
    for g in (np.full((6, 12), 5000, np.int16), np.full((12, 6), 5000, np.int16).T):
        assert same(STORE_INT, g=g, t=t) is None


STORE_FP = """
kernel @k(%g : !pto.memref<?x?x{o}>, %t : !pto.tile<4x8x{a}, loc=acc, layout=NZ>,
          %fp : !pto.tile<1x8xf32, loc=scaling, valid=1x{fc}>) {{
  tstore_fp %g[0, 0], %t, %fp {{atomic = #pto.atomic<{m}>}} : (!pto.memref<?x?x{o}>, !pto.tile<4x8x{a}, loc=acc, layout=NZ>, !pto.tile<1x8xf32, loc=scaling, valid=1x{fc}>)
}}
"""


@pytest.mark.parametrize("o,npo", [("i8", np.int8), ("f16", np.float16), ("bf16", None), ("f32", np.float32)])
@pytest.mark.parametrize("a,npa", [("f32", np.float32), ("i32", np.int32)])
@pytest.mark.parametrize("m", ["NONE", "ADD"])
def test_tstore_fp_scale_round_saturate(o: str, npo: Any, a: str, npa: Any, m: str) -> None:
    if npo is None:
        import ml_dtypes
        npo = ml_dtypes.bfloat16
    rng = np.random.default_rng(3)
    t = (rng.standard_normal((4, 8)) * 200).astype(npa)
    if a == "f32":
        t[0, :4] = [np.nan, np.inf, -np.inf, 2.5]
        t[1, :2] = [0.5, -1.5]                               # ties to even
    fp = np.array([[1, 0.5, 3, -2, 1e30, 0, 1, 0.25]], np.float32)
    g = (rng.standard_normal((6, 9)) * 10).astype(npo)
    text = STORE_FP.format(o=o, a=a, m=m, fc=8)
    assert same(text, g=g, t=t, fp=fp) is None
    assert same(STORE_FP.format(o=o, a=a, m=m, fc=7), g=g, t=t, fp=fp) in ("RUNTIME_INVALID_READ", "STRUCT_VALID_REGION")


PREFETCH = """
kernel @k(%t : !pto.tile<4x8xf32>, %src : !pto.memref<?x?xf32>, %i : index, %j : index) {
  %t = tprefetch %src[%i, %j] : (!pto.memref<?x?xf32>) -> !pto.tile<4x8xf32>
}
"""


def test_tprefetch_checks_window_only() -> None:
    src = np.zeros((6, 10), np.float32)
    t = np.ones((4, 8), np.float32)
    assert same(PREFETCH, t=t, src=src, i=2, j=2) is None
    assert same(PREFETCH, t=t, src=src, i=3, j=0) == "RUNTIME_OOB"
    assert same(PREFETCH, t=t, src=src, i=0, j=-1) == "RUNTIME_OOB"


# --------------------------------------------------------------------------- MGATHER / MSCATTER

GATHER = """
kernel @k(%out : !pto.tile<4x8x{d}, valid=3x7>, %src : !pto.memref<?x?x{d}>, %idx : !pto.tile<4x8x{it}>, %z : index) {{
  %out = mgather %src[%z, 0], %idx {{indexMode = #pto.index_mode<{im}>, oobMode = #pto.oob<{oob}>}} : (!pto.memref<?x?x{d}>, !pto.tile<4x8x{it}>) -> !pto.tile<4x8x{d}, valid=3x7>
}}
"""

SCATTER = """
kernel @k(%g : !pto.memref<?x?x{d}>, %src : !pto.tile<4x8x{d}, valid=3x7>, %idx : !pto.tile<4x8x{it}>, %z : index) {{
  mscatter %g[%z, 0], %src, %idx {{indexMode = #pto.index_mode<{im}>, oobMode = #pto.oob<{oob}>, atomic = #pto.atomic<{at}>}} : (!pto.memref<?x?x{d}>, !pto.tile<4x8x{d}, valid=3x7>, !pto.tile<4x8x{it}>)
}}
"""

OOBS = ("ERROR", "CLAMP", "WRAP", "ZERO")


def _tables(rng: np.random.Generator, npd: Any) -> list[np.ndarray]:
    a = (rng.standard_normal((5, 9)) * 50).astype(npd)
    return [a, np.ascontiguousarray(a.T).T, (rng.standard_normal((10, 18)) * 50).astype(npd)[::2, ::2]]


@pytest.mark.parametrize("im", ["ELEMENT", "ROW"])
@pytest.mark.parametrize("oob", OOBS)
def test_mgather_modes(im: str, oob: str) -> None:
    rng = np.random.default_rng(4)
    for it, npi in (("i32", np.int32), ("u32", np.uint32)):
        text = GATHER.format(d="f32", it=it, im=im, oob=oob)
        for src in _tables(rng, np.float32):
            n = src.size if im == "ELEMENT" else src.shape[0]
            good = rng.integers(0, n, (4, 8)).astype(npi)
            out = np.zeros((4, 8), np.float32)
            assert same(text, out=out, src=src, idx=good, z=0) is None
            assert same(text, out=out, src=src, idx=good, z=1) == "RUNTIME_GLOBAL_INDEX"
            wild = rng.integers(-3 * n, 3 * n, (4, 8)).astype(np.int64).astype(npi)
            same(text, out=out, src=src, idx=wild, z=0)


@pytest.mark.parametrize("im", ["ELEMENT", "ROW"])
@pytest.mark.parametrize("oob", OOBS)
@pytest.mark.parametrize("at", ["NONE", "ADD", "MAX", "MIN"])
def test_mscatter_modes_duplicates(im: str, oob: str, at: str) -> None:
    rng = np.random.default_rng(5)
    for d, npd in (("f16", np.float16), ("i32", np.int32)):
        text = SCATTER.format(d=d, it="i32", im=im, oob=oob, at=at)
        src = (rng.standard_normal((4, 8)) * 40).astype(npd)
        for g in _tables(rng, npd):
            n = g.size if im == "ELEMENT" else g.shape[0]
            dup = rng.integers(0, min(n, 4), (4, 8)).astype(np.int32)     # many duplicates
            assert same(text, g=g, src=src, idx=dup, z=0) is None
            wild = rng.integers(-2 * n, 2 * n, (4, 8)).astype(np.int32)
            code = same(text, g=g, src=src, idx=wild, z=0)
            assert code in (None, "RUNTIME_OOB")


def test_mscatter_error_writes_nothing() -> None:
    text = SCATTER.format(d="f32", it="i32", im="ELEMENT", oob="ERROR", at="NONE")
    g = np.zeros((5, 9), np.float32)
    idx = np.zeros((4, 8), np.int32)
    idx[2, 6] = 45                     # the last element of the domain is out of range
    with pytest.raises(PTOError) as e:
        _exe(text, "llvm")(g=g, src=np.ones((4, 8), np.float32), idx=idx, z=0)
    assert e.value.code == "RUNTIME_OOB" and not g.any()


def test_row_mode_tile_wider_than_row() -> None:
    text = GATHER.format(d="f32", it="i32", im="ROW", oob="CLAMP")
    src = np.zeros((5, 6), np.float32)
    assert same(text, out=np.zeros((4, 8), np.float32), src=src, idx=np.zeros((4, 8), np.int32), z=0) == "RUNTIME_OOB"


def test_empty_table_clamp_and_wrap_fault() -> None:
    for oob in ("CLAMP", "WRAP", "ZERO", "ERROR"):
        text = GATHER.format(d="i8", it="i32", im="ELEMENT", oob=oob)
        code = same(text, out=np.zeros((4, 8), np.int8), src=np.zeros((0, 4), np.int8),
                    idx=np.zeros((4, 8), np.int32), z=0)
        assert code == (None if oob == "ZERO" else "RUNTIME_OOB")


IDX_VALID = """
kernel @k(%out : !pto.tile<4x8xf32>, %src : !pto.memref<64xf32>, %gi : !pto.memref<4x8xi32>, %vc : index) {
  .tile %ix valid_col = %vc : !pto.tile<4x8xi32, valid=4x?>
  %ix = tload %gi[0, 0] : (!pto.memref<4x8xi32>) -> !pto.tile<4x8xi32, valid=4x?>
  %out = mgather %src[0], %ix : (!pto.memref<64xf32>, !pto.tile<4x8xi32, valid=4x?>) -> !pto.tile<4x8xf32>
}
"""


def test_index_tile_valid_region_checked() -> None:
    args = dict(src=np.arange(64, dtype=np.float32), gi=np.arange(32, dtype=np.int32).reshape(4, 8))
    assert same(IDX_VALID, valid=(4, 8), out=np.zeros((4, 8), np.float32), vc=8, **args) is None
    assert same(IDX_VALID, out=np.zeros((4, 8), np.float32), vc=7, **args) == "RUNTIME_INVALID_READ"


# --------------------------------------------------------------------------- fuzz: never crash

def test_fuzz_out_of_range_indices_fault_like_the_reference() -> None:
    """Random (often wild) window offsets and index values: the llvm backend raises exactly the
    reference's fault (RUNTIME_OOB ...) or matches its results, and the process survives."""
    rng = np.random.default_rng(6)
    huge = [2 ** 31 - 1, -2 ** 31, 2 ** 40, -2 ** 62, 2 ** 63 - 1, -1]
    text = COPY.format(d="f32")
    src = rng.standard_normal((20, 30)).astype(np.float32)
    for _ in range(60):
        offs = [int(rng.choice(huge)) if rng.random() < 0.3 else int(rng.integers(-5, 30)) for _ in range(4)]
        g = np.zeros((12, 20), np.float32)
        same(text, src=src, g=g, i=offs[0], j=offs[1], o=offs[2], p=offs[3])
    vals = np.array(huge + [0, 1, 44, 45, 46], np.int64)
    for oob in OOBS:
        for im in ("ELEMENT", "ROW"):
            gt = GATHER.format(d="f32", it="i32", im=im, oob=oob)
            st = SCATTER.format(d="f32", it="u32", im=im, oob=oob, at="ADD")
            for _ in range(6):
                idx = rng.choice(vals, (4, 8)).astype(np.int32)
                code = same(gt, out=np.zeros((4, 8), np.float32), src=src[:5, :9], idx=idx, z=0)
                assert code in (None, "RUNTIME_OOB")
                code = same(st, g=np.zeros((5, 9), np.float32), src=np.ones((4, 8), np.float32),
                            idx=idx.view(np.uint32), z=int(rng.choice([0, 0, 0, 1, -1])))
                assert code in (None, "RUNTIME_OOB", "RUNTIME_GLOBAL_INDEX")


# --------------------------------------------------------------------------- sync / config

SYNC = """
kernel @k(%e : index, %a : index, %h : index, %p : f32, %t : !pto.tile<16x16xf32>) {
  set_flag #pto.pipe<MTE2>, #pto.pipe<V>, %e : (index)
  wait_flag #pto.pipe<MTE2>, #pto.pipe<V>, %e : (index)
  pipe_barrier #pto.pipe<ALL>
  tsync #pto.pipe<V>
  %t = tassign %a : (index) -> !pto.tile<16x16xf32>
  tsetfmatrix %h, 4, 1, 1, 1, 255 : (index, index, index, index, index, index)
  tset_img2col_rpt 16, 1, 0 : (index, index, index)
  tset_img2col_padding %p : (f32)
  tsethf32mode {enable = true, mode = #pto.round<ROUND>}
  tsettf32mode {enable = false}
}
"""


@pytest.mark.parametrize("e,a,h,code", [
    (0, 0, 1, None), (7, 4096, 65535, None),
    (8, 0, 1, "RUNTIME_EVENT_ID"), (-1, 0, 1, "RUNTIME_EVENT_ID"),
    (0, -32, 1, "RUNTIME_BAD_ADDRESS"), (0, 48, 1, "RUNTIME_MISALIGNED"),
    (0, 0, 0, "RUNTIME_BAD_CONFIG"), (0, 0, 65536, "RUNTIME_BAD_CONFIG"),
])
def test_sync_and_config_checks(e: int, a: int, h: int, code: str | None) -> None:
    assert same(SYNC, e=e, a=a, h=h, p=1.5, t=np.zeros((16, 16), np.float32)) == code


@pytest.mark.parametrize("line,code", [
    ("set_flag #pto.pipe<V>, #pto.pipe<V>, 0 : (index)\n  wait_flag #pto.pipe<V>, #pto.pipe<V>, 0 : (index)",
     "RUNTIME_SAME_PIPE"),
    ("set_flag #pto.pipe<ALL>, #pto.pipe<V>, 0 : (index)\n  wait_flag #pto.pipe<ALL>, #pto.pipe<V>, 0 : (index)",
     "RUNTIME_BAD_PIPE"),
])
def test_literal_pipe_faults(line: str, code: str) -> None:
    text = "kernel @k() {\n  " + line + "\n}\n"
    try:
        m = pto.parse(text)
    except PTOError:
        pytest.skip("rejected before run time")
    for backend in ("reference", "llvm"):
        with pytest.raises(PTOError) as err:
            pto.compile(m, backend=backend, profile="cpu")()
        assert err.value.code == code


def test_config_state_keys_match_reference() -> None:
    from openpto.backends.llvm.rules import sync as S
    from openpto.isa.families.sync import STATE_KEYS
    assert S.FMATRIX_KEY == STATE_KEYS["SETFMATRIX"] == "fmatrix"
    assert S.IMG2COL_RPT_KEY == "img2col_rpt" and S.IMG2COL_PADDING_KEY == "img2col_padding"
