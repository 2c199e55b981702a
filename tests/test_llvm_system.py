"""The llvm backend's FIFO, SYNCALL, TPREFETCH_ASYNC, view and TRANDOM rules against the
reference backend and hand-computed results: FIFO order, wrap-around and every protocol
fault, views of dynamic windows, Philox known answers and counter carries."""
from __future__ import annotations

import numpy as np
import pytest

from llvm_support import run_program

BACKENDS = ("reference", "llvm")


def both(text: str, **args: object) -> tuple[str | None, dict]:
    """Run on both backends; they must agree (fault code, or every array bit for bit)."""
    (c1, o1), (c2, o2) = (run_program(text, b, args) for b in BACKENDS)
    assert c1 == c2, (c1, c2)
    for k in o1:
        np.testing.assert_array_equal(o1[k].view(np.uint8), o2[k].view(np.uint8), err_msg=k)
    return c2, o2

# --------------------------------------------------------------------------- FIFO


FIFO = """
kernel @k(%x : !pto.memref<4x16xf32>, %y : !pto.memref<4x16xf32>, %n : index) {
  .tile %a : !pto.tile<1x16xf32>
  .tile %v : !pto.tile<1x16xf32>
  scf.for %i = 0 to %n step 1 {
    %a = tload %x[%i, 0] : (!pto.memref<4x16xf32>) -> !pto.tile<1x16xf32>
    tpush %a {FlagID = 1, SlotNum = 3}
  }
  scf.for %i = 0 to %n step 1 {
    %v = tpop {FlagID = 1, SlotNum = 3} : () -> !pto.tile<1x16xf32>
    tstore %y[%i, 0], %v
  }
}
"""


def test_fifo_keeps_order_and_faults_when_full() -> None:
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    for n in (0, 1, 3):
        code, out = both(FIFO, x=x, y=np.zeros((4, 16), np.float32), n=n)
        assert code is None
        np.testing.assert_array_equal(out["y"][:n], x[:n])
        assert not out["y"][n:].any()
    assert both(FIFO, x=x, y=np.zeros((4, 16), np.float32), n=4)[0] == "RUNTIME_FIFO_FULL"


RING = """
kernel @k(%x : !pto.memref<8x8xi16>, %y : !pto.memref<8x8xi16>) {
  .tile %t : !pto.tile<1x16xi16, valid=1x8>
  .tile %u : !pto.tile<1x16xi16, valid=1x8>
  scf.for %i = 0 to 8 step 1 {
    %t = tload %x[%i, 0] : (!pto.memref<8x8xi16>) -> !pto.tile<1x16xi16, valid=1x8>
    tpush %t {FlagID = 7, SlotNum = 2}
    %u = tpop {FlagID = 7, SlotNum = 2} : () -> !pto.tile<1x16xi16, valid=1x8>
    tstore %y[%i, 0], %u
  }
}
"""


def test_the_ring_wraps_around() -> None:
    x = (np.arange(64, dtype=np.int16) * 511 - 9000).reshape(8, 8)
    code, out = both(RING, x=x, y=np.zeros((8, 8), np.int16))
    assert code is None
    np.testing.assert_array_equal(out["y"], x)


def _fifo_program(body: str) -> str:
    return ("kernel @k(%g : !pto.memref<16x16xf32>, %h : !pto.memref<16x16xf16>, %z : index) {\n"
            "  .tile %a : !pto.tile<16x16xf32>\n  .tile %b : !pto.tile<16x16xf16>\n"
            "  %a = tload %g[0, 0] : (!pto.memref<16x16xf32>) -> !pto.tile<16x16xf32>\n"
            + body + "\n  tstore %g[0, 0], %a\n}\n")


CASES = [
    ("%a = tpop {FlagID = 0}", "RUNTIME_FIFO_EMPTY"),
    ("tpush %a {FlagID = 0}\n  %b = tpop {FlagID = 0} : () -> !pto.tile<16x16xf16>", "RUNTIME_FIFO_MISMATCH"),
    ("tpush %a {FlagID = 0, SlotNum = 2}\n  tpush %a {FlagID = 0, SlotNum = 3}", "RUNTIME_FIFO_CONFIG"),
    ("tpush %a {FlagID = 0, SlotNum = 1}\n  talloc %g[0, 0] {FlagID = 0, SlotNum = 1}", "RUNTIME_FIFO_FULL"),
    ("tpush %g[0, 0] {FlagID = 0}", "RUNTIME_FIFO_STATE"),
    ("tfree %g[0, 0] {FlagID = 0}", "RUNTIME_FIFO_STATE"),
    ("talloc %g[0, 0] {FlagID = 2}\n  tpush %g[0, 0] {FlagID = 2}\n  %a = tpop {FlagID = 2}",
     "RUNTIME_FIFO_MISMATCH"),
    ("talloc %g[0, 0] {FlagID = 2}\n  tpush %g[0, 0] {FlagID = 2}\n  tpop %g[0, 0] {FlagID = 2}\n"
     "  tfree %g[0, 0] {FlagID = 2}\n  tfree {FlagID = 2}", None),
    ("tpush %a {FlagID = 4}\n  tpop %g[0, 0] {FlagID = 4}\n  tfree %g[0, 0] {FlagID = 4}\n"
     "  tfree %g[0, 0] {FlagID = 4}", "RUNTIME_FIFO_STATE"),
    ("talloc %g[%z, 0] {FlagID = 0}", "RUNTIME_GLOBAL_INDEX"),
    ("tpush %a {FlagID = 0}\n  tpush %a {FlagID = 1}\n  %a = tpop {FlagID = 0}\n  %a = tpop {FlagID = 1}", None),
]


@pytest.mark.parametrize("body,code", CASES)
def test_fifo_protocol_faults_agree(body: str, code: str | None) -> None:
    g = np.random.default_rng(1).random((16, 16)).astype(np.float32)
    got, out = both(_fifo_program(body), g=g, h=np.zeros((16, 16), np.float16), z=1)
    assert got == code
    if code is None:
        np.testing.assert_array_equal(out["g"], g)

# --------------------------------------------------------------------------- SYNCALL, TPREFETCH_ASYNC


HINTS = """
kernel @k(%w : !pto.memref<8xi32>, %s : !pto.memref<4x16xf16>, %c : index, %z : index) {
  syncall
  syncall %w[%z], %c {Mode = #pto.syncall_mode<SOFT>, CoreType = #pto.sync_core<MIX>}
  tprefetch_async %s[0, %z]
}
"""


@pytest.mark.parametrize("c,z,code", [(0, 0, None), (5, 0, None), (-1, 0, "RUNTIME_BAD_CONFIG"),
                                      (0, 1, "RUNTIME_GLOBAL_INDEX")])
def test_syncall_and_prefetch_validate_only(c: int, z: int, code: str | None) -> None:
    w = np.arange(8, dtype=np.int32)
    s = np.ones((4, 16), np.float16)
    got, out = both(HINTS, w=w, s=s, c=c, z=z)
    assert got == code
    if code is None:
        np.testing.assert_array_equal(out["w"], w)
        np.testing.assert_array_equal(out["s"], s)

# --------------------------------------------------------------------------- views


VIEW = """
kernel @k(%x : !pto.memref<4x64xf32>, %y : !pto.memref<4x64xf32>, %r : index, %c : index) {
  .tile %s : !pto.tile<4x64xf32>
  .tile %d : !pto.tile<4x64xf32, valid=2x32>
  .tile %e : !pto.tile<4x64xf32, valid=2x32>
  %s = tload %x[0, 0] : (!pto.memref<4x64xf32>) -> !pto.tile<4x64xf32>
  %d = tsubview %s, %r, %c : (!pto.tile<4x64xf32>, index, index) -> !pto.tile<4x64xf32, valid=2x32>
  %e = talias %d : (!pto.tile<4x64xf32, valid=2x32>) -> !pto.tile<4x64xf32, valid=2x32>
  tstore %y[0, 0], %e
}
"""


@pytest.mark.parametrize("r,c,code", [(0, 0, None), (2, 32, None), (1, 7, None), (3, 0, "RUNTIME_OOB"),
                                      (0, 33, "RUNTIME_OOB"), (-1, 0, "RUNTIME_OOB")])
def test_tsubview_and_talias(r: int, c: int, code: str | None) -> None:
    x = np.arange(256, dtype=np.float32).reshape(4, 64)
    x[0, 0] = -0.0
    got, out = both(VIEW, x=x, y=np.zeros((4, 64), np.float32), r=r, c=c)
    assert got == code
    if code is None:
        np.testing.assert_array_equal(out["y"][:2, :32].view(np.uint32), x[r:r + 2, c:c + 32].view(np.uint32))

# --------------------------------------------------------------------------- TRANDOM


RANDOM = """
kernel @k(%kc : !pto.memref<2x8xu32>, %y : !pto.memref<4x32x{d}>, %vr : index, %vc : index) {{
  .tile %key : !pto.tile<1x8xu32>
  .tile %ctr : !pto.tile<1x8xu32>
  .tile %r : !pto.tile<4x32x{d}>
  %key = tload %kc[0, 0] : (!pto.memref<2x8xu32>) -> !pto.tile<1x8xu32>
  %ctr = tload %kc[1, 0] : (!pto.memref<2x8xu32>) -> !pto.tile<1x8xu32>
  pto.alloc_tile valid_row = %vr valid_col = %vc : !pto.tile<4x32x{d}, valid=?x?>
  %r = trandom %key, %ctr {{Rounds = {n}}} : (!pto.tile<1x8xu32>, !pto.tile<1x8xu32>) -> !pto.tile<4x32x{d}>
  tstore %y[0, 0], %r
}}
"""


def _philox(ctr: int, key: tuple[int, int], rounds: int) -> list[int]:
    x = [(ctr >> (32 * w)) & 0xFFFFFFFF for w in range(4)]
    k0, k1 = key
    for _ in range(rounds):
        p, q = x[0] * 0xD2511F53, x[2] * 0xCD9E8D57
        x = [(q >> 32) ^ x[1] ^ k0, q & 0xFFFFFFFF, (p >> 32) ^ x[3] ^ k1, p & 0xFFFFFFFF]
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return x


@pytest.mark.parametrize("d,n", [("u32", 10), ("i32", 10), ("u32", 7)])
def test_trandom_matches_philox(d: str, n: int) -> None:
    text = RANDOM.format(d=d, n=n).replace(
        "  pto.alloc_tile valid_row = %vr valid_col = %vc : !pto.tile<4x32x" + d + ", valid=?x?>\n", "")
    kc = np.zeros((2, 8), np.uint32)
    kc[0, :2] = [0x243F6A88, 0x85A308D3]
    kc[1, :4] = [0xFFFFFFF0, 0xFFFFFFFF, 0xFFFFFFFF, 3]     # carries across three words
    got, out = both(text, kc=kc, y=np.zeros((4, 32), np.dtype(d.replace("u", "uint").replace("i3", "int3"))),
                    vr=4, vc=32)
    assert got is None
    base = 0xFFFFFFF0 + (0xFFFFFFFF << 32) + (0xFFFFFFFF << 64) + (3 << 96)
    flat = out["y"].view(np.uint32).reshape(-1).tolist()
    want = [_philox(base + k // 4, (0x243F6A88, 0x85A308D3), n)[k % 4] for k in range(128)]
    assert flat == want


def test_trandom_known_answer() -> None:
    text = RANDOM.format(d="u32", n=10).replace(
        "  pto.alloc_tile valid_row = %vr valid_col = %vc : !pto.tile<4x32xu32, valid=?x?>\n", "")
    got, out = both(text, kc=np.zeros((2, 8), np.uint32), y=np.zeros((4, 32), np.uint32), vr=4, vc=32)
    assert got is None
    assert out["y"][0, :4].tolist() == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]

# --------------------------------------------------------------------------- FIFO split modes


def both_in(text: str, regions: dict[str, tuple[int, int]], **args: object) -> tuple[str | None, dict]:
    """Run on both backends: the same fault code, or the same bits inside each output's valid
    region (outside it the backends may differ)."""
    (c1, o1), (c2, o2) = (run_program(text, b, args) for b in BACKENDS)
    assert c1 == c2, (c1, c2)
    for k, (r, c) in regions.items():
        if o1:
            np.testing.assert_array_equal(o1[k][:r, :c].view(np.uint8), o2[k][:r, :c].view(np.uint8), err_msg=k)
    return c2, o2

C2V = """
kernel @k(%a : !pto.tile<{R}x{C}xf32, loc=acc, layout=NZ, valid={vr}x{C}>, %v : !pto.tile<{R}x{C}xf32, valid={pr}x{pc}>) {{
  tpush %a {{FlagID = 2, Split = #pto.split<{split}>}}
  %v = tpop {{FlagID = 2, Split = #pto.split<{pop}>}} : () -> !pto.tile<{R}x{C}xf32, valid={pr}x{pc}>
}}
"""


@pytest.mark.parametrize("split, vr, part, code", [
    ("TILE_NO_SPLIT", 5, (5, 8), None),
    ("TILE_UP_DOWN_ODD", 5, (3, 8), None),
    ("TILE_LEFT_RIGHT", 5, (5, 4), None),
    ("TILE_UP_DOWN", 4, (2, 8), None),
    ("TILE_LEFT_RIGHT_ODD", 5, (5, 4), "RUNTIME_VALID_REGION"),     # 8 columns are not odd
    ("TILE_UP_DOWN", 5, (2, 8), "RUNTIME_VALID_REGION"),            # 5 rows are not even
    ("TILE_UP_DOWN_ODD", 5, (5, 8), "RUNTIME_FIFO_MISMATCH"),       # the vector part is 3 rows
])
def test_c2v_split_against_reference_and_hand(split: str, vr: int, part: tuple[int, int], code: str | None) -> None:
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    text = C2V.format(R=8, C=8, vr=vr, pr=part[0], pc=part[1], split=split, pop=split)
    got_code, out = both_in(text, {"v": part}, a=a, v=np.zeros((8, 8), np.float32))
    assert got_code == code
    if code is None:
        np.testing.assert_array_equal(out["v"][:part[0], :part[1]], a[:part[0], :part[1]])


def test_pop_with_another_split_is_a_mismatch() -> None:
    text = C2V.format(R=8, C=8, vr=4, pr=2, pc=8, split="TILE_UP_DOWN", pop="TILE_LEFT_RIGHT")
    assert both_in(text, {}, a=np.ones((8, 8), np.float32), v=np.zeros((8, 8), np.float32))[0] == \
        "RUNTIME_FIFO_MISMATCH"


V2C = """
kernel @k(%p : !pto.tile<4x16xf32, valid=2x{pc}>, %m : !pto.tile<4x16xf32, loc=mat, layout=NZ, valid={wr}x{wc}>) {{
  tpush %p {{FlagID = 4, SlotNum = 1, Split = #pto.split<{split}>}}
  %m = tpop {{FlagID = 4, SlotNum = 1, Split = #pto.split<{split}>}} : () -> !pto.tile<4x16xf32, loc=mat, layout=NZ, valid={wr}x{wc}>
}}
"""


@pytest.mark.parametrize("split, pc, whole", [("TILE_UP_DOWN", 16, (4, 16)), ("TILE_UP_DOWN_ODD", 16, (3, 16)),
                                              ("TILE_LEFT_RIGHT", 8, (2, 16)), ("TILE_LEFT_RIGHT_ODD", 8, (2, 15))])
def test_v2c_split_writes_sub_block_0s_part(split: str, pc: int, whole: tuple[int, int]) -> None:
    p = np.arange(64, dtype=np.float32).reshape(4, 16)
    m = np.full((4, 16), -1, np.float32)
    text = V2C.format(pc=pc, wr=whole[0], wc=whole[1], split=split)
    code, out = both_in(text, {"m": whole}, p=p, m=m)
    assert code is None
    np.testing.assert_array_equal(out["m"][:2, :pc], p[:2, :pc])              # part 0
    rest = np.ones((4, 16), bool)
    rest[:2, :pc] = False
    rest[whole[0]:, :] = False
    rest[:, whole[1]:] = False
    assert (out["m"][rest] == -1).all()                                       # sub-block 1's part untouched
    assert rest.any()
