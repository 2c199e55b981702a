"""Semantics of isa/families/system.py against hand-computed cases and the public pages.

TRANDOM's goldens are the published Philox-4x32-10 known-answer vectors (Random123's
kat_vectors) and a scalar Philox written here from the algorithm's definition; FIFO cases
follow the public TPUSH/TPOP/TALLOC/TFREE pages' protocol step by step.
"""
from __future__ import annotations

import numpy as np
import pytest

import openpto.isa as I
from openpto.isa import registry
from openpto.isa.types import Location, TileType, parse_type
from openpto.isa.values import GlobalRef, Tile


def run(mnemonic: str, **kw: object) -> None:
    I.get(mnemonic).execute(**kw)


def fault(mnemonic: str, code: str, **kw: object) -> None:
    with pytest.raises(I.RuntimeFault) as e:
        I.get(mnemonic).execute(**kw)
    assert e.value.code == code


def tile(spec: str, data: np.ndarray | None = None, valid: tuple[int, int] | None = None) -> Tile:
    t: TileType = parse_type(spec)   # type: ignore[assignment]
    return Tile(t, None if data is None else np.array(data, dtype=t.dtype.np_dtype), valid)

# ------------------------------------------------------------------------------ public names


@pytest.mark.parametrize("old,new", sorted(registry.RENAMED.items()))
def test_config_instructions_have_their_public_names_and_keep_the_old_ones(old: str, new: str) -> None:
    ins = I.get(new)
    assert ins.mnemonic == new and ins.asm_name == new.lower()
    assert I.get(old) is ins and I.get("pto." + old.lower()) is ins
    assert old in ins.aliases
    assert new in {i.mnemonic for i in I.all_instructions()}
    assert old not in {i.mnemonic for i in I.all_instructions()}

# ------------------------------------------------------------------------------ FIFO


def test_tpush_then_tpop_moves_the_tile_in_order() -> None:
    state: dict = {}
    a = tile("!pto.tile<2x8xf32, loc=acc, layout=NZ>", np.arange(16).reshape(2, 8))
    b = tile("!pto.tile<2x8xf32, loc=acc, layout=NZ>", -np.arange(16).reshape(2, 8))
    run("TPUSH", tile=a, FlagID=0, SlotNum=2, state=state)
    run("TPUSH", tile=b, FlagID=0, SlotNum=2, state=state)
    a.data[:] = 99                       # the slot holds a copy taken at push time
    out = tile("!pto.tile<2x8xf32>")
    run("TPOP", tile=out, FlagID=0, SlotNum=2, state=state)
    np.testing.assert_array_equal(out.data, np.arange(16).reshape(2, 8))
    run("TPOP", tile=out, FlagID=0, SlotNum=2, state=state)
    np.testing.assert_array_equal(out.data, -np.arange(16).reshape(2, 8))
    fault("TPOP", "RUNTIME_FIFO_EMPTY", tile=out, FlagID=0, SlotNum=2, state=state)


def test_the_ring_wraps_and_a_pop_frees_a_slot() -> None:
    state: dict = {}
    t = tile("!pto.tile<1x8xi32>", [[1, 2, 3, 4, 5, 6, 7, 8]])
    out = tile("!pto.tile<1x8xi32>")
    for k in range(5):                   # SlotNum = 1: push, pop, push, pop ...
        t.data[0, 0] = k
        run("TPUSH", tile=t, FlagID=2, SlotNum=1, state=state)
        fault("TPUSH", "RUNTIME_FIFO_FULL", tile=t, FlagID=2, SlotNum=1, state=state)
        run("TPOP", tile=out, FlagID=2, SlotNum=1, state=state)
        assert out.data[0, 0] == k and list(out.data[0, 1:]) == [2, 3, 4, 5, 6, 7, 8]


def test_fifos_are_separate_per_flag_id_and_keep_their_slot_count() -> None:
    state: dict = {}
    t = tile("!pto.tile<1x8xf16>", np.ones((1, 8)))
    run("TPUSH", tile=t, FlagID=0, SlotNum=2, state=state)
    fault("TPOP", "RUNTIME_FIFO_EMPTY", tile=tile("!pto.tile<1x8xf16>"), FlagID=1, SlotNum=2, state=state)
    fault("TPUSH", "RUNTIME_FIFO_CONFIG", tile=t, FlagID=0, SlotNum=4, state=state)


def test_tpop_checks_dtype_and_valid_shape() -> None:
    state: dict = {}
    run("TPUSH", tile=tile("!pto.tile<4x8xf32, valid=2x8>", np.ones((4, 8))), FlagID=5, state=state)
    fault("TPOP", "RUNTIME_FIFO_MISMATCH", tile=tile("!pto.tile<4x8xf32>"), FlagID=5, state=dict(
        {"fifo": {5: type(state["fifo"][5])(2, ready=state["fifo"][5].ready.copy())}}))
    fault("TPOP", "RUNTIME_FIFO_MISMATCH", tile=tile("!pto.tile<2x16xf16>", valid=(2, 8)), FlagID=5,
          state={"fifo": {5: type(state["fifo"][5])(2, ready=state["fifo"][5].ready.copy())}})
    out = tile("!pto.tile<4x8xf32, loc=mat, layout=NZ>", valid=(2, 8))
    run("TPOP", tile=out, FlagID=5, state=state)
    np.testing.assert_array_equal(out.data[:2], np.ones((2, 8)))


def test_globaldata_flow_talloc_tpush_tpop_tfree() -> None:
    """The public 'Allocate, Store, Commit' and 'GlobalData Slot Pop' examples, with 2 slots."""
    state: dict = {}
    g = GlobalRef(np.zeros((16, 16), np.float32))
    kw = dict(FlagID=0, SlotNum=2, state=state)
    fault("TPUSH", "RUNTIME_FIFO_STATE", gmTensor=g, **kw)        # commit before TALLOC
    run("TALLOC", gmTensor=g, **kw)
    run("TALLOC", gmTensor=g, **kw)
    fault("TALLOC", "RUNTIME_FIFO_FULL", gmTensor=g, **kw)         # both slots allocated
    run("TPUSH", gmTensor=g, **kw)
    fault("TPOP", "RUNTIME_FIFO_MISMATCH", tile=tile("!pto.tile<16x16xf32>"), FlagID=0, SlotNum=2,
          state={"fifo": {0: type(state["fifo"][0])(2, ready=state["fifo"][0].ready.copy())}})
    fault("TFREE", "RUNTIME_FIFO_STATE", gmTensor=g, **kw)         # nothing popped yet
    run("TPOP", gmTensor=g, **kw)
    fault("TPOP", "RUNTIME_FIFO_EMPTY", gmTensor=g, **kw)          # the second slot is not committed
    fault("TALLOC", "RUNTIME_FIFO_FULL", gmTensor=g, **kw)         # one allocated, one held
    run("TFREE", gmTensor=g, **kw)
    run("TALLOC", gmTensor=g, **kw)                                # the freed slot is reusable
    run("TFREE", **kw)                                             # TileData form: no effect
    assert g.array.sum() == 0                                      # the slot view is never written


def test_fifo_globals_address_the_whole_tensor() -> None:
    fault("TALLOC", "RUNTIME_GLOBAL_INDEX", gmTensor=GlobalRef(np.zeros((4, 8), np.float32), (1, 0)))


def test_fifo_attributes_and_forms_are_checked_statically() -> None:
    from openpto.isa import checks
    push = I.get("TPUSH")
    t = {"tile": parse_type("!pto.tile<16x16xf32, loc=acc, layout=NZ>")}
    assert checks.check_structure(push, t, {"FlagID": 0}) == []
    codes = [e.code for e in checks.check_structure(push, t, {"FlagID": 16})]
    assert codes == ["STRUCT_ATTR_VALUE"]
    codes = [e.code for e in checks.check_structure(push, t, {"SlotNum": 0})]
    assert codes == ["STRUCT_ATTR_VALUE"]
    codes = [e.code for e in checks.check_structure(push, {}, {})]
    assert codes == ["STRUCT_OPERAND_FORM"]
    both = dict(t, gmTensor=parse_type("!pto.memref<16x16xf32>"))
    assert [e.code for e in checks.check_structure(push, both, {})] == ["STRUCT_OPERAND_FORM"]
    pop = I.get("TPOP")
    assert pop.operand("tile").locations == (Location.VEC, Location.MAT)
    assert push.operand("tile").locations == (Location.ACC, Location.VEC)

# ------------------------------------------------------------------------------ SYNCALL, TPREFETCH_ASYNC


def test_syncall_validates_and_changes_nothing() -> None:
    from openpto.isa.attrs import SyncAllMode, SyncCoreType
    ws = GlobalRef(np.zeros(8, np.int32))
    run("SYNCALL")
    run("SYNCALL", CoreType=SyncCoreType.MIX)
    run("SYNCALL", gmWorkspace=ws, usedCores=3, Mode=SyncAllMode.SOFT)
    assert not ws.array.any()
    fault("SYNCALL", "RUNTIME_BAD_CONFIG", Mode=SyncAllMode.SOFT)
    fault("SYNCALL", "RUNTIME_BAD_CONFIG", gmWorkspace=ws, usedCores=-1, Mode=SyncAllMode.SOFT)
    fault("SYNCALL", "RUNTIME_GLOBAL_INDEX", gmWorkspace=GlobalRef(ws.array, (2,)), Mode=SyncAllMode.SOFT)


def test_tprefetch_async_is_a_hint() -> None:
    a = np.arange(32, dtype=np.float16).reshape(2, 16)
    run("TPREFETCH_ASYNC", src=GlobalRef(a))
    np.testing.assert_array_equal(a, np.arange(32, dtype=np.float16).reshape(2, 16))
    fault("TPREFETCH_ASYNC", "RUNTIME_GLOBAL_INDEX", src=GlobalRef(a, (0, 1)))

# ------------------------------------------------------------------------------ views


def test_tsubview_splits_a_tile_as_the_public_example() -> None:
    """The public example: a 4x64 f32 tile split into four 2x32 sub-tiles."""
    src = tile("!pto.tile<4x64xf32>", np.arange(256).reshape(4, 64))
    for r0, c0 in ((0, 0), (0, 32), (2, 0), (2, 32)):
        dst = tile("!pto.tile<4x64xf32, valid=2x32>")
        run("TSUBVIEW", dst=dst, src=src, rowIdx=r0, colIdx=c0)
        want = np.array([[64 * (r0 + i) + c0 + j for j in range(32)] for i in range(2)], np.float32)
        np.testing.assert_array_equal(dst.data[:2, :32], want)


def test_tsubview_window_must_stay_inside_the_source() -> None:
    src = tile("!pto.tile<4x64xf32>", valid=(4, 40))
    dst = tile("!pto.tile<4x64xf32, valid=2x32>")
    fault("TSUBVIEW", "RUNTIME_OOB", dst=dst, src=src, rowIdx=0, colIdx=9)
    fault("TSUBVIEW", "RUNTIME_OOB", dst=dst, src=src, rowIdx=3, colIdx=0)
    fault("TSUBVIEW", "RUNTIME_OOB", dst=dst, src=src, rowIdx=-1, colIdx=0)
    run("TSUBVIEW", dst=dst, src=src, rowIdx=2, colIdx=8)


def test_tsubview_and_talias_copy_bits() -> None:
    bits = np.array([[0x7FC01234, 0x80000000, 0x7F800000, 1] * 2], np.uint32).view(np.float32)
    src = tile("!pto.tile<1x8xf32>", bits)
    a = tile("!pto.tile<1x8xf32>")
    run("TALIAS", dst=a, src=src)
    assert a.data.view(np.uint32).tolist() == bits.view(np.uint32).tolist()
    s = tile("!pto.tile<1x8xf32, valid=1x4>")
    run("TSUBVIEW", dst=s, src=src, rowIdx=0, colIdx=1)
    assert s.data[0, :4].view(np.uint32).tolist() == [0x80000000, 0x7F800000, 1, 0x7FC01234]


def test_talias_valid_region_and_value_semantics() -> None:
    src = tile("!pto.tile<2x8xi16>", np.arange(16).reshape(2, 8), valid=(1, 8))
    dst = tile("!pto.tile<2x8xi16>", valid=(1, 4))
    run("TALIAS", dst=dst, src=src)
    assert dst.data[0, :4].tolist() == [0, 1, 2, 3]
    src.data[0, 0] = 42                          # value semantics: the alias keeps its copy
    assert dst.data[0, 0] == 0
    fault("TALIAS", "RUNTIME_INVALID_READ", dst=tile("!pto.tile<2x8xi16>"), src=src)


def test_view_constraints() -> None:
    from openpto.isa import checks, profiles
    ins = I.get("TSUBVIEW")
    types = {"dst": parse_type("!pto.tile<16x16xf16, loc=mat, layout=NZ>"), "src": parse_type("!pto.tile<16x16xf16>"),
             "rowIdx": parse_type("index"), "colIdx": parse_type("index")}
    codes = {e.code for e in checks.check_legality(ins, types, {}, profiles.get("cpu"))}
    assert "LEGAL_LOCATION" in codes and "LEGAL_LAYOUT" in codes
    al = I.get("TALIAS")
    types = {"dst": parse_type("!pto.tile<16x32xf16>"), "src": parse_type("!pto.tile<16x16xf16>")}
    assert [e.code for e in checks.check_structure(al, types, {})] == ["STRUCT_SHAPE"]


def test_tget_scale_addr_binds_and_moves_nothing() -> None:
    src = tile("!pto.tile<16x64xf8e4m3, loc=left, layout=NZ>")
    dst = tile("!pto.tile<16x2xu8, loc=left>", np.full((16, 2), 7))
    run("TGET_SCALE_ADDR", dst=dst, src=src)
    assert (dst.data == 7).all()
    ins = I.get("TGET_SCALE_ADDR")
    assert not ins.supported_on("a3") and ins.supported_on("a5")
    from openpto.isa import checks
    short = {"dst": parse_type("!pto.tile<16x1xu8, loc=left>"), "src": src.type}
    assert [e.code for e in checks.check_structure(ins, short, {})] == ["STRUCT_SHAPE"]
    right = {"dst": parse_type("!pto.tile<2x16xu8, loc=right>"),
             "src": parse_type("!pto.tile<64x16xf8e4m3, loc=right, layout=ZN>")}
    assert checks.check_structure(ins, right, {}) == []

# ------------------------------------------------------------------------------ TRANDOM


def philox_scalar(ctr: list[int], key: list[int], rounds: int) -> list[int]:
    """Philox-4x32 written out with Python integers, from the algorithm's definition."""
    x, k = list(ctr), list(key)
    for _ in range(rounds):
        p, q = x[0] * 0xD2511F53, x[2] * 0xCD9E8D57
        x = [(q >> 32) ^ x[1] ^ k[0], q & 0xFFFFFFFF, (p >> 32) ^ x[3] ^ k[1], p & 0xFFFFFFFF]
        k = [(k[0] + 0x9E3779B9) & 0xFFFFFFFF, (k[1] + 0xBB67AE85) & 0xFFFFFFFF]
    return x


KAT = [  # Random123 kat_vectors, philox4x32 10 rounds: counter, key, result
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, [0xFFFFFFFF] * 2, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]


def random_tile(dtype: str, ctr: list[int], key: list[int], valid: tuple[int, int] | None = None,
                rounds: int = 10) -> Tile:
    dst = tile(f"!pto.tile<4x8x{dtype}>", valid=valid)
    k = tile("!pto.tile<1x8xu32>", [key + [0] * 6])
    c = tile("!pto.tile<1x8xu32>", [ctr + [0] * 4])
    run("TRANDOM", dst=dst, key=k, counter=c, Rounds=rounds)
    return dst


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_trandom_first_block_is_the_philox_known_answer(ctr: list[int], key: list[int], want: list[int]) -> None:
    assert philox_scalar(ctr, key, 10) == want          # the test's own Philox agrees with the KAT
    dst = random_tile("u32", ctr, key, valid=(1, 4))
    assert dst.data[0, :4].tolist() == want


def test_trandom_fills_the_valid_region_as_one_stream_of_counters() -> None:
    ctr, key = [0xFFFFFFFE, 0xFFFFFFFF, 7, 0], [0x01234, 0x56789]   # the public example's key
    dst = random_tile("u32", ctr, key, valid=(3, 6))
    base = ctr[0] + (ctr[1] << 32) + (ctr[2] << 64)
    for i in range(3):
        for j in range(6):
            k = i * 6 + j
            c = base + k // 4                             # carries into the third word
            words = philox_scalar([(c >> (32 * w)) & 0xFFFFFFFF for w in range(4)], key, 10)
            assert dst.data[i, j] == words[k % 4], (i, j)


def test_trandom_rounds_and_i32_bits() -> None:
    ctr, key = [5, 0, 0, 0], [1, 2]
    seven = random_tile("u32", ctr, key, valid=(1, 4), rounds=7)
    assert seven.data[0, :4].tolist() == philox_scalar(ctr, key, 7)
    signed = random_tile("i32", ctr, key, valid=(1, 4))
    assert signed.data[0, :4].view(np.uint32).tolist() == philox_scalar(ctr, key, 10)
    counter_wraps = random_tile("u32", [0xFFFFFFFF] * 4, [0, 0], valid=(1, 8))
    assert counter_wraps.data[0, 4:].tolist() == philox_scalar([0, 0, 0, 0], [0, 0], 10)


def test_trandom_reads_two_key_and_four_counter_words() -> None:
    dst = tile("!pto.tile<4x8xu32>")
    fault("TRANDOM", "RUNTIME_INVALID_READ", dst=dst, key=tile("!pto.tile<1x8xu32>", valid=(1, 1)),
          counter=tile("!pto.tile<1x8xu32>"))
    fault("TRANDOM", "RUNTIME_INVALID_READ", dst=dst, key=tile("!pto.tile<1x8xu32>"),
          counter=tile("!pto.tile<1x8xu32>", valid=(1, 3)))
    from openpto.isa import checks
    ins = I.get("TRANDOM")
    types = {"dst": parse_type("!pto.tile<16x16xu32>"), "key": parse_type("!pto.tile<1x8xu32>"),
             "counter": parse_type("!pto.tile<1x8xu32>")}
    assert [e.code for e in checks.check_legality(ins, types, {"Rounds": 8}, I.profiles.get("cpu"))] == \
        ["LEGAL_ATTR"]
    assert not ins.supported_on("a2") and ins.supported_on("a5")


# ------------------------------------------------------------------------------ FIFO split modes

from openpto.isa.attrs import TileSplitAxis as S  # noqa: E402


def test_c2v_split_gives_sub_block_0_its_part() -> None:
    """The cube pushes a whole 5x4 acc tile; the vector side (sub-block 0, the only one a functional
    backend runs) pops the upper rows / left columns (the extra one for the _ODD forms)."""
    whole = np.arange(20).reshape(5, 4)
    cases = [(S.TILE_UP_DOWN_ODD, "!pto.tile<5x4xf32, loc=acc, layout=NZ>", whole, (3, 4), whole[:3]),
             (S.TILE_LEFT_RIGHT, "!pto.tile<5x4xf32, loc=acc, layout=NZ>", whole, (5, 2), whole[:, :2]),
             (S.TILE_UP_DOWN, "!pto.tile<4x4xf32, loc=acc, layout=NZ>", whole[:4], (2, 4), whole[:2]),
             (S.TILE_LEFT_RIGHT_ODD, "!pto.tile<4x3xf32, loc=acc, layout=NZ>", whole[:4, :3], (4, 2),
              whole[:4, :2])]
    for split, spec, values, part, want in cases:
        state: dict = {}
        run("TPUSH", tile=tile(spec, values), FlagID=3, Split=split, state=state)
        out = tile(f"!pto.tile<{part[0]}x{part[1]}xf32>")
        run("TPOP", tile=out, FlagID=3, Split=split, state=state)
        np.testing.assert_array_equal(out.data, want)


def test_v2c_split_fills_sub_block_0s_part_of_the_cube_tile() -> None:
    """Sub-block 0 pushes its 2x8 vec part (upper rows of a 4x8 tile, or left columns of 2x15 with
    _ODD); the cube pops the whole tile: part 0 written, sub-block 1's part left as it was."""
    part = np.arange(16).reshape(2, 8)
    state: dict = {}
    run("TPUSH", tile=tile("!pto.tile<2x8xf32>", part), FlagID=1, Split=S.TILE_UP_DOWN, state=state)
    out = tile("!pto.tile<4x8xf32, loc=mat, layout=NZ>", np.full((4, 8), 7))
    run("TPOP", tile=out, FlagID=1, Split=S.TILE_UP_DOWN, state=state)
    np.testing.assert_array_equal(out.data, np.vstack([part, np.full((2, 8), 7)]))
    run("TPUSH", tile=tile("!pto.tile<2x8xf32>", part), FlagID=1, Split=S.TILE_LEFT_RIGHT_ODD, state=state)
    out = tile("!pto.tile<2x16xf32, loc=mat, layout=NZ>", np.full((2, 16), 7), valid=(2, 15))
    run("TPOP", tile=out, FlagID=1, Split=S.TILE_LEFT_RIGHT_ODD, state=state)
    np.testing.assert_array_equal(out.data[:, :8], part)
    assert (out.data[:, 8:] == 7).all()


def test_split_faults() -> None:
    acc = "!pto.tile<5x4xf32, loc=acc, layout=NZ>"
    # the cube's valid rows must be even for TILE_UP_DOWN, odd for TILE_UP_DOWN_ODD
    fault("TPUSH", "RUNTIME_VALID_REGION", tile=tile(acc, np.zeros((5, 4))), Split=S.TILE_UP_DOWN, state={})
    fault("TPUSH", "RUNTIME_VALID_REGION", tile=tile(acc, np.zeros((5, 4)), valid=(4, 4)),
          Split=S.TILE_UP_DOWN_ODD, state={})
    # an _ODD vector part needs a row
    fault("TPUSH", "RUNTIME_VALID_REGION", tile=tile("!pto.tile<2x8xf32>", valid=(0, 8)),
          Split=S.TILE_UP_DOWN_ODD, state={})
    # the pop names the push's split; the vector side's tile is the part, the cube side's the whole
    for split, spec, code in [(S.TILE_NO_SPLIT, "!pto.tile<3x4xf32>", "RUNTIME_FIFO_MISMATCH"),
                              (S.TILE_UP_DOWN_ODD, "!pto.tile<5x4xf32>", "RUNTIME_FIFO_MISMATCH"),
                              (S.TILE_UP_DOWN_ODD, "!pto.tile<3x4xf32, loc=mat, layout=NZ>",
                               "RUNTIME_FIFO_MISMATCH")]:
        state: dict = {}
        run("TPUSH", tile=tile(acc, np.zeros((5, 4))), Split=S.TILE_UP_DOWN_ODD, state=state)
        fault("TPOP", code, tile=tile(spec), Split=split, state=state)


def test_split_spelling() -> None:
    import openpto as pto
    text = """kernel @k(%a : !pto.tile<16x16xf32, loc=acc, layout=NZ>) {
  tpush %a {FlagID = 0, Split = #pto.split<TILE_UP_DOWN>}
  %v = tpop {FlagID = 0, Split = #pto.split<TILE_UP_DOWN>} : () -> !pto.tile<8x16xf32>
}
"""
    m = pto.parse(text)
    assert m.kernels[0].body[0].attrs["Split"] is S.TILE_UP_DOWN
    assert pto.parse(m.to_text()) == m
    pto.check(m, profile="a3")
