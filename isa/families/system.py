"""System scheduling and tile-view instructions of the current public ISA.

* The cube-vector FIFO (TPUSH, TPOP, TALLOC, TFREE): a ``TPipe`` is a ring of ``SlotNum``
  slots named by its ``FlagID``. Functional backends run one program per block in program
  order, so a FIFO is an in-kernel queue in the per-run ``state`` dict (``state["fifo"]``,
  one ``Fifo`` per FlagID); an operation that would wait for ever (pop from an empty FIFO,
  push into a full one) or break the protocol is a RUNTIME_FIFO_* fault instead of a hang.
* SYNCALL and TPREFETCH_ASYNC change no values: they validate their operands.
* TSUBVIEW, TALIAS (views with value semantics, as TRESHAPE: decision 17) and
  TGET_SCALE_ADDR (an address binding, as TASSIGN).
* TRANDOM: the Philox-4x32 counter-based generator, bit-exact on every backend.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from .. import constraints as K
from .. import dtypes as dt
from ..attrs import (AtomicMode, FixpipeLayout, FixpipeQuant, ReluMode, STPhase, SyncAllMode, SyncCoreType,
                     TileSplitAxis)
from ..diagnostics import RuntimeFault
from ..registry import declare
from ..spec import (WHOLE, Attr, Constraint, Domain, EXACT, Example, Family, Instruction, Kind, Operand,
                    Role, ValueRule, same, tuples)
from ..types import Layout, Location, Pipe, TileType, Type
from ..values import GlobalRef, Tile
from ._helpers import global_in, index_in, tile_in, tile_out
from ._prequant import A5_ONLY_MODES, FIXPIPE_MODES, SCALAR, VECTOR, fixpipe_values
from .memory import _whole
from .movement import _check_window

VEC, MAT, ACC, LEFT, RIGHT = Location.VEC, Location.MAT, Location.ACC, Location.LEFT, Location.RIGHT
ANY_LOC = tuple(Location)

# ------------------------------------------------------------------------------ the FIFO

#: the instructions that act on the FIFO state (backends keep one per run)
FIFO_MNEMONICS = ("TPUSH", "TPOP", "TALLOC", "TFREE")
#: the FIFO instructions whose public intrinsics take a trailing ``WaitEvents&...`` pack: written
#: as trailing event operands, they wait on each token before running, one TSYNC per token
#: (decision 'FIFO event results')
WAITING_FIFO = ("TPUSH", "TPOP", "TALLOC")

FLAG_IDS = 16          # FlagID 0..15 (A5 intra-block flags; A2/A3 use 0..7 per pipe type)
MAX_SLOTS = 16         # SlotNum 1..16 (TMPipe depth: up to 8 on A2/A3, 16 on A5)
FIFO_KEY = "fifo"      # state[FIFO_KEY]: FlagID -> Fifo


@dataclass
class Fifo:
    """One TPipe's slots: ``ready`` holds committed entries in order (an ``Entry`` for a pushed
    tile, a (dtype, values) pair standing for an unsplit one, or None for a slot committed
    through the GlobalData flow); ``allocated`` counts
    slots the producer took with TALLOC and has not committed; ``held`` counts slots the
    consumer popped with the GlobalData TPOP and has not freed. Every one of them occupies a
    slot until it is released."""

    slots: int
    ready: deque = field(default_factory=deque)
    allocated: int = 0
    held: int = 0

    @property
    def occupied(self) -> int:
        return len(self.ready) + self.allocated + self.held


def _fifo(state: dict | None, flag_id: int, slot_num: int, mnemonic: str) -> Fifo:
    """The FIFO FlagID names (created empty on first use with SlotNum slots); a later use
    with another SlotNum is RUNTIME_FIFO_CONFIG."""
    fifos = {} if state is None else state.setdefault(FIFO_KEY, {})
    f = fifos.get(flag_id)
    if f is None:
        f = fifos[flag_id] = Fifo(slot_num)
    elif f.slots != slot_num:
        raise RuntimeFault("RUNTIME_FIFO_CONFIG", f"{mnemonic} names FIFO {flag_id} with another SlotNum",
                           expected=f"SlotNum = {f.slots} (its first use)", actual=f"SlotNum = {slot_num}")
    return f


def _need_space(f: Fifo, flag_id: int, what: str) -> None:
    if f.occupied >= f.slots:
        raise RuntimeFault("RUNTIME_FIFO_FULL", f"{what} into FIFO {flag_id} with every slot taken: it "
                           "would wait for ever (nothing else runs until it returns)",
                           expected=f"fewer than {f.slots} occupied slots",
                           actual=f"{len(f.ready)} ready, {f.allocated} allocated, {f.held} held")


def _need_ready(f: Fifo, flag_id: int) -> Any:
    if not f.ready:
        raise RuntimeFault("RUNTIME_FIFO_EMPTY", f"pop from FIFO {flag_id} with no committed slot: it would "
                           "wait for ever (no TPUSH before it)", expected="at least one pushed slot",
                           actual="0 ready")
    return f.ready.popleft()


# ------------------------------------------------------------------------------ split modes
#
# A split tile moves between the cube and two vector sub-blocks: the cube side holds the whole
# tile, each vector sub-block one part. Part 0 (sub-block 0) is always the top-left one: the
# upper rows (TILE_UP_DOWN*) or the left columns (TILE_LEFT_RIGHT*). Functional backends run
# one vector sub-block per block (get_subblock_idx() = 0), so a vector-side TPUSH/TPOP moves
# part 0; the part of sub-block 1 is never pushed and a cube-side TPOP leaves it as it was.

ROWS_SPLITS = (TileSplitAxis.TILE_UP_DOWN, TileSplitAxis.TILE_UP_DOWN_ODD)
ODD_SPLITS = (TileSplitAxis.TILE_UP_DOWN_ODD, TileSplitAxis.TILE_LEFT_RIGHT_ODD)
VECTOR_SIDE = (VEC,)   # TPUSH from / TPOP into a vec tile is the vector side; acc / mat the cube side


def split_part0(split: TileSplitAxis, rows: int, cols: int) -> tuple[int, int]:
    """Part 0's shape for a whole tile of rows x cols (the whole shape when not split)."""
    if split is TileSplitAxis.TILE_NO_SPLIT:
        return rows, cols
    n = rows if split in ROWS_SPLITS else cols
    half = n // 2 + (1 if split in ODD_SPLITS else 0)
    return (half, cols) if split in ROWS_SPLITS else (rows, half)


def split_whole(split: TileSplitAxis, rows: int, cols: int) -> tuple[int, int]:
    """The whole tile's shape given part 0's (rows x cols): the split extent doubled, less one
    for the _ODD forms."""
    if split is TileSplitAxis.TILE_NO_SPLIT:
        return rows, cols
    n = rows if split in ROWS_SPLITS else cols
    whole = 2 * n - (1 if split in ODD_SPLITS else 0)
    return (whole, cols) if split in ROWS_SPLITS else (rows, whole)


def _split_extent_ok(split: TileSplitAxis, rows: int, cols: int) -> bool:
    """The whole tile's split extent is even (odd for the _ODD forms, and at least 1)."""
    if split is TileSplitAxis.TILE_NO_SPLIT:
        return True
    n = rows if split in ROWS_SPLITS else cols
    return n % 2 == 1 if split in ODD_SPLITS else n % 2 == 0


@dataclass
class Entry:
    """A committed slot pushed from a tile: the whole tile's dtype, values (whole shape; part 1's
    elements meaningless unless ``both``), its split, whether both parts were pushed, and for an
    acc push the layout the fixpipe wrote and whether it went to sub-block 1 alone."""

    dtype: dt.DType
    values: np.ndarray
    split: TileSplitAxis = TileSplitAxis.TILE_NO_SPLIT
    both: bool = True
    layout: Layout | None = None      # an acc push: the layout its fixpipe wrote (the popping vec tile's)
    sub1: bool = False                # an acc push to vector sub-block 1 only (SubBlockId = 1)


def _as_entry(e: Any) -> Entry | None:
    """A ready-queue item as an Entry (a (dtype, values) pair is a whole, unsplit tile)."""
    return Entry(*e) if isinstance(e, tuple) else e


#: FixpipeParams LayoutMode -> the layout of the slot it writes, which the popping vec tile has
FIXPIPE_LAYOUT = {FixpipeLayout.NZ2ND: Layout.ND, FixpipeLayout.NZ2DN: Layout.DN, FixpipeLayout.NZ2NZ: Layout.NZ}
#: FixpipeParams SubBlockId (A5's AccToVecMode) -> the split a dual mode gives the pushed acc tile
DUAL_SUBBLOCK = {2: TileSplitAxis.TILE_UP_DOWN, 3: TileSplitAxis.TILE_LEFT_RIGHT}
SUBBLOCK_IDS = 4       # SubBlockId 0..3: SingleModeVec0, SingleModeVec1, DualModeSplitM, DualModeSplitN


def _split_parity(split: TileSplitAxis, r: int, c: int, what: str) -> None:
    """RUNTIME_VALID_REGION unless the whole tile's split extent has the split's parity."""
    if not _split_extent_ok(split, r, c):
        axis = "rows" if split in ROWS_SPLITS else "columns"
        raise RuntimeFault("RUNTIME_VALID_REGION", f"{what} splits the tile's valid {axis}",
                           expected=f"an {'odd' if split in ODD_SPLITS else 'even'} number of {axis}",
                           actual=f"valid region {r}x{c}")


def _tpush(tile: Tile | None = None, gmTensor: GlobalRef | None = None, FlagID: int = 0,
           SlotNum: int = 2, Split: TileSplitAxis = TileSplitAxis.TILE_NO_SPLIT,
           Quant: FixpipeQuant = FixpipeQuant.NoQuant, LayoutMode: FixpipeLayout = FixpipeLayout.NZ2ND,
           Relu: ReluMode = ReluMode.NONE, Phase: STPhase = STPhase.Unspecified, SubBlockId: int = 0,
           AtomicT: AtomicMode = AtomicMode.NONE, state: dict | None = None) -> None:
    if gmTensor is not None:
        _whole(gmTensor, "TPUSH gmTensor")
    f = _fifo(state, FlagID, SlotNum, "TPUSH")
    if tile is not None and tile.type.loc is ACC:        # the cube side: through the fixpipe
        _need_space(f, FlagID, "TPUSH")
        values = fixpipe_values(tile.region(), Quant, state,
                                lambda fp, cols: fp.read(1, cols, "fp").astype(np.float32),
                                relu_pre=Relu is ReluMode.RELU)
        split = DUAL_SUBBLOCK.get(SubBlockId, Split)
        what = f"SubBlockId = {SubBlockId}" if SubBlockId in DUAL_SUBBLOCK else split.name
        _split_parity(split, *values.shape, what)
        d = tile.dtype if Quant is FixpipeQuant.NoQuant else FIXPIPE_MODES[Quant][1]
        f.ready.append(Entry(d, np.array(values, copy=True), split, layout=FIXPIPE_LAYOUT[LayoutMode],
                             sub1=SubBlockId == 1))
        return
    if tile is not None:
        _need_space(f, FlagID, "TPUSH")
        r, c = tile.valid
        if Split is not TileSplitAxis.TILE_NO_SPLIT:     # sub-block 0's part of a whole tile
            wr, wc = split_whole(Split, r, c)
            if min(wr, wc) < 0 or split_part0(Split, wr, wc) != (r, c):
                raise RuntimeFault("RUNTIME_VALID_REGION", f"TPUSH of sub-block 0's part with {Split.name} "
                                   "from an empty tile", expected="at least one row and column",
                                   actual=f"{r}x{c}")
            values = np.zeros((wr, wc), tile.data.dtype)
            values[:r, :c] = tile.region()
            f.ready.append(Entry(tile.dtype, values, Split, both=False))
            return
        f.ready.append(Entry(tile.dtype, tile.region().copy(), Split))
        return
    if f.allocated == 0:
        raise RuntimeFault("RUNTIME_FIFO_STATE", f"TPUSH commits a slot of FIFO {FlagID} that TALLOC did not "
                           "allocate", expected="a TALLOC before each GlobalData TPUSH",
                           actual="no allocated slot")
    f.allocated -= 1
    f.ready.append(None)


def _tpop(tile: Tile | None = None, gmTensor: GlobalRef | None = None, FlagID: int = 0,
          SlotNum: int = 2, Split: TileSplitAxis = TileSplitAxis.TILE_NO_SPLIT,
          state: dict | None = None) -> None:
    if gmTensor is not None:
        _whole(gmTensor, "TPOP gmTensor")
    f = _fifo(state, FlagID, SlotNum, "TPOP")
    entry = _as_entry(_need_ready(f, FlagID))
    if tile is None:
        f.held += 1
        return
    if entry is None:
        raise RuntimeFault("RUNTIME_FIFO_MISMATCH", f"TPOP into a tile from FIFO {FlagID}, whose slot was "
                           "committed without a tile (TALLOC + TPUSH of a global)",
                           expected="a slot pushed from a tile", actual="a GlobalData slot")
    if entry.split is not Split:
        raise RuntimeFault("RUNTIME_FIFO_MISMATCH", f"TPOP from FIFO {FlagID} with another split than the push",
                           expected=f"Split = {entry.split.name} (as pushed)", actual=f"Split = {Split.name}")
    wr, wc = entry.values.shape
    part = tile.type.loc in VECTOR_SIDE
    if part and entry.sub1:
        raise RuntimeFault("RUNTIME_FIFO_MISMATCH", f"TPOP from FIFO {FlagID} of a slot pushed to vector sub-block 1 "
                           "(SubBlockId = 1), which a functional run does not execute",
                           expected="a slot pushed to sub-block 0 (SubBlockId 0, 2 or 3)", actual="SubBlockId = 1")
    if part and entry.layout is not None and tile.type.layout is not entry.layout:
        raise RuntimeFault("RUNTIME_FIFO_MISMATCH", f"TPOP from FIFO {FlagID} into a tile of another layout than "
                           "the fixpipe wrote", expected=f"layout {entry.layout.value} (the push's LayoutMode)",
                           actual=f"layout {tile.type.layout.value}")
    r, c = split_part0(Split, wr, wc) if part else (wr, wc)
    if entry.dtype != tile.dtype or (r, c) != tile.valid:
        what = "sub-block 0's part" if part and Split is not TileSplitAxis.TILE_NO_SPLIT else "as pushed"
        raise RuntimeFault("RUNTIME_FIFO_MISMATCH", f"TPOP from FIFO {FlagID} into a tile of another type",
                           expected=f"{r}x{c} {entry.dtype} ({what})",
                           actual=f"{tile.valid[0]}x{tile.valid[1]} {tile.dtype} (the valid region)")
    if part or entry.both:
        tile.write(entry.values[:r, :c])
        return
    pr, pc = split_part0(Split, wr, wc)                 # only sub-block 0's part was pushed
    tile.write(entry.values[:pr, :pc])


def _talloc(gmTensor: GlobalRef, FlagID: int = 0, SlotNum: int = 2, state: dict | None = None) -> None:
    _whole(gmTensor, "TALLOC gmTensor")
    f = _fifo(state, FlagID, SlotNum, "TALLOC")
    _need_space(f, FlagID, "TALLOC")
    f.allocated += 1


def _tfree(gmTensor: GlobalRef | None = None, FlagID: int = 0, SlotNum: int = 2,
           state: dict | None = None) -> None:
    if gmTensor is not None:
        _whole(gmTensor, "TFREE gmTensor")
    f = _fifo(state, FlagID, SlotNum, "TFREE")
    if gmTensor is None:
        return
    if f.held == 0:
        raise RuntimeFault("RUNTIME_FIFO_STATE", f"TFREE of a slot of FIFO {FlagID} that no GlobalData TPOP "
                           "holds", expected="a GlobalData TPOP before each TFREE of a global",
                           actual="no held slot")
    f.held -= 1


def _fifo_attrs_ok(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    fid, n = attrs.get("FlagID", 0), attrs.get("SlotNum", 2)
    if not 0 <= fid < FLAG_IDS:
        return f"FlagID = {fid}, must be in [0, {FLAG_IDS})"
    if not 1 <= n <= MAX_SLOTS:
        return f"SlotNum = {n}, must be in [1, {MAX_SLOTS}]"
    return None


def _one_form(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    if ("tile" in types) == ("gmTensor" in types):
        return "give exactly one of tile (TileData form) and gmTensor (GlobalData form)"
    return None


_FIFO_ATTRS = (Attr("FlagID", int, 0, "the TPipe's flag id, 0..15: names the FIFO"),
               Attr("SlotNum", int, 2, "the TPipe's slot count, 1..16; every use of one FlagID gives the same"))
_FIFO_RULES = (K.custom(f"0 <= FlagID < {FLAG_IDS} and 1 <= SlotNum <= {MAX_SLOTS}", _fifo_attrs_ok,
                        "STRUCT_ATTR_VALUE"),)
_FORM_RULE = K.custom("exactly one of tile, gmTensor", _one_form, "STRUCT_OPERAND_FORM")
_GM = "a FIFO slot view in global memory (GlobalData form): selects the form; never read or written"
_FIFO_DOC = (" The FIFO is named by FlagID and has SlotNum slots (a TPipe<FlagID, Dir, SlotSize, SlotNum>; "
             "the first use of a FlagID in a run fixes its SlotNum, another SlotNum later is "
             "RUNTIME_FIFO_CONFIG). Functional backends keep one FIFO per FlagID per block, empty when the "
             "block starts, and run the producer and consumer sides in program order: where hardware would "
             "wait (for a free slot, for data) nothing else could make progress, so that is a fault. A "
             "slot is occupied from its allocation (TPUSH of a tile, TALLOC) until it is released (TPOP of "
             "a tile, TFREE of a global). Entries left at the end of a run are dropped. The public pipe operand "
             "(`%p` of type `!pto.tpipe<FlagID, Dir, SlotSize, SlotNum>`, declared by `%p = pto.initialize_pipe : "
             "!pto.tpipe<...>`, written as an operand or as `pipe(%p : ...)`) is read onto FlagID and SlotNum, "
             "its direction and slot size checked (decision 'The !pto.tpipe spelling').")
_SPLIT_DOC = (" Split (TileSplitAxis, #pto.split<...>, default TILE_NO_SPLIT): the cube side (an acc tile "
              "pushed, a mat tile popped) holds the whole tile, each vector sub-block one part: sub-block 0 "
              "the upper rows (TILE_UP_DOWN: R / 2 of an even R; TILE_UP_DOWN_ODD: R // 2 + 1 of an odd R) or "
              "the left columns (TILE_LEFT_RIGHT, TILE_LEFT_RIGHT_ODD alike), sub-block 1 the rest. Functional "
              "backends run vector sub-block 0 only (get_subblock_idx() = 0): a vec tile pushed or popped with "
              "a split is sub-block 0's part; a cube-side TPUSH whose valid extent has the wrong parity is "
              "RUNTIME_VALID_REGION; a TPOP must name the Split its slot was pushed with, and its valid region "
              "must be the part (vector side) or the whole (cube side), else RUNTIME_FIFO_MISMATCH; a cube-side "
              "TPOP of a slot only sub-block 0 pushed writes that part and leaves sub-block 1's rows (columns) "
              "as they were. The GlobalData forms move no data: Split is accepted and has no effect.")
_SPLIT_ATTR = Attr("Split", TileSplitAxis, TileSplitAxis.TILE_NO_SPLIT,
                   "TileSplitAxis: the whole tile or one vector sub-block's row/column part")
_FIFO_FAULTS = ("Full FIFO on TPUSH/TALLOC: RUNTIME_FIFO_FULL; ")
_QUANT_ATTR = Attr("Quant", FixpipeQuant, FixpipeQuant.NoQuant,
                   "the FixpipeParams quant mode of an acc push: the type the consumer pops and the scale")


def _quant_ok(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    """A quant mode converts an unsplit acc tile of its source dtype (the TConfig overload)."""
    mode = attrs.get("Quant", FixpipeQuant.NoQuant)
    if mode is FixpipeQuant.NoQuant:
        return None
    t = types.get("tile")
    if not isinstance(t, TileType):
        return f"Quant = {mode.name} converts a pushed tile, not a GlobalData slot"
    if t.dtype is not FIXPIPE_MODES[mode][0]:
        return f"Quant = {mode.name} reads a {FIXPIPE_MODES[mode][0]} acc tile, the tile is {t.dtype}"
    return None


#: the FixpipeParams fields as TPUSH attributes, with their defaults (the plain push's behaviour)
FIXPIPE_FIELDS = {"Quant": FixpipeQuant.NoQuant, "LayoutMode": FixpipeLayout.NZ2ND, "Relu": ReluMode.NONE,
                  "Phase": STPhase.Unspecified, "SubBlockId": 0, "AtomicT": AtomicMode.NONE}


def _fixpipe_set(attrs: Mapping[str, Any]) -> list[str]:
    return [f"{k} = {getattr(attrs[k], 'name', attrs[k])}" for k, v in FIXPIPE_FIELDS.items()
            if k in attrs and attrs[k] != v]


def _fixpipe_acc(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    """The TConfig overload pushes an acc tile through the fixpipe: its fields need one."""
    t, given = types.get("tile"), _fixpipe_set(attrs)
    if given and isinstance(t, TileType) and t.loc is not ACC:   # (a GlobalData form: _fixpipe_form)
        return f"{', '.join(given)} configure the fixpipe of an acc push, the tile is in {t.loc.value}"
    return None


def _fixpipe_form(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    given = _fixpipe_set(attrs)
    fields = [g for g in given if not g.startswith("Quant ")]     # a Quant there is _quant_ok's
    if fields and "tile" not in types and "gmTensor" in types:
        return f"{', '.join(fields)} configure a pushed tile, not a GlobalData slot"
    if given and attrs.get("Split", TileSplitAxis.TILE_NO_SPLIT) is not TileSplitAxis.TILE_NO_SPLIT:
        return f"the fixpipe push ({', '.join(given)}) moves the whole tile: Split must be TILE_NO_SPLIT"
    sub = attrs.get("SubBlockId", 0)
    if not 0 <= sub < SUBBLOCK_IDS:
        return f"SubBlockId = {sub}, must be in [0, {SUBBLOCK_IDS}) (an AccToVecMode)"
    if sub in DUAL_SUBBLOCK and attrs.get("Quant", FixpipeQuant.NoQuant) is not FixpipeQuant.NoQuant:
        return f"SubBlockId = {sub} splits the tile between both sub-blocks, which takes no Quant"
    if sub in DUAL_SUBBLOCK and attrs.get("LayoutMode") is FixpipeLayout.NZ2DN:
        return f"SubBlockId = {sub} splits the tile between both sub-blocks, which takes no NZ2DN layout"
    return None


def _atomic(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    a = attrs.get("AtomicT", AtomicMode.NONE)
    if a is not AtomicMode.NONE:
        return (f"AtomicT = {a.name}: a FIFO push adds onto no modelled slot memory (decision 'TPUSH "
                "FixpipeParams fields'); only NONE")
    return None


_QUANT_RULES = (K.custom("Quant converts a tile of the mode's source dtype", _quant_ok, "LEGAL_DTYPE"),
                K.custom("FixpipeParams fields only with an acc tile", _fixpipe_acc, "LEGAL_LOCATION"),
                K.custom("FixpipeParams fields only on an unsplit tile push, SubBlockId in 0..3, the dual "
                         "SubBlockIds without Quant or NZ2DN", _fixpipe_form, "STRUCT_ATTR_VALUE"),
                K.custom("AtomicT = NONE", _atomic, "LEGAL_MODE"))
_FIXPIPE_ATTRS = (Attr("LayoutMode", FixpipeLayout, FixpipeLayout.NZ2ND,
                       "FixpipeParams LayoutMode of an acc push: the layout (ND, DN, NZ) the slot is written "
                       "in, which the popping vec tile has"),
                  Attr("Relu", ReluMode, ReluMode.NONE, "FixpipeParams ReluMode of an acc push: ReLU after "
                       "the scaling, before the conversion"),
                  Attr("Phase", STPhase, STPhase.Unspecified, "FixpipeParams Phase (unit-flag store phase): "
                       "changes no value"),
                  Attr("SubBlockId", int, 0, "FixpipeParams SubBlockId of an acc push (A5 AccToVecMode): 0 "
                       "sub-block 0, 1 sub-block 1, 2 / 3 split by rows / columns"),
                  Attr("AtomicT", AtomicMode, AtomicMode.NONE, "FixpipeParams AtomicT: NONE only"))
_A2_MODES = {m: None for m in FixpipeQuant if m not in A5_ONLY_MODES}
_A2_FIXPIPE = (ValueRule("Quant", _A2_MODES, "tile"), ValueRule("SubBlockId", {0: None}))
_QUANT_VALUES = {"a2": _A2_FIXPIPE, "a3": _A2_FIXPIPE}
_MODE_NAMES = {kind: " ".join(m.name for m, (_, _, k) in FIXPIPE_MODES.items() if k == kind)
               for kind in ("cast", SCALAR, VECTOR)}
_QUANT_DOC = (" Quant (FixpipeQuant, #pto.fixpipe_quant<...>, default NoQuant) is the public TPUSH<Pipe, "
              "TileProd, TConfig> overload's FixpipeParams quant mode: an acc tile of the mode's source dtype "
              "is pushed converted, so the slot holds, and the consumer pops, the mode's type (decision "
              "'Pre-quantising TPUSH'). f32 -> f16/bf16 cast modes (" + _MODE_NAMES["cast"] + ") round "
              "nearest-even. Scalar modes (" + _MODE_NAMES[SCALAR] + ") multiply every value, taken to f32 "
              "(i32 rounds nearest-even), in f32 by the scale the last SET_QUANT_SCALAR of the run recorded, "
              "read when the push runs; the i8 modes (QF322B8_PRE, REQ8) need that SET_QUANT_SCALAR's OutType to "
              "be I8 (the register's sign flag). Vector modes (" + _MODE_NAMES[VECTOR] + ") multiply column "
              "j by fp[0, j] of the tile the last SET_QUANT_VECTOR recorded, its values read when the push "
              "runs (outside fp's valid region: RUNTIME_INVALID_READ). Then the product is converted as the "
              "pre-quantising moves do: f16/bf16 nearest-even (overflow ±inf), i8 nearest-even and saturated "
              "(NaN -> 0), f8e4m3 nearest-even saturated to ±448 (NaN -> 0x7F), hifloat8 (QF322HIF8_PRE) "
              "nearest with ties away (overflow ±inf). A scalar or vector mode with "
              "no such state set earlier in the run (or a scalar i8 mode whose OutType is not I8) is "
              "RUNTIME_QUANT_STATE. The tile must be acc and unsplit; a2/a3 lack QF322FP8_PRE, QF322HIF8_PRE, "
              "QS322BF16_PRE and VQS322BF16_PRE (LEGAL_ATTR).")
_FIXPIPE_DOC = (" The other FixpipeParams fields of an acc push (decision 'TPUSH FixpipeParams fields'): "
                "LayoutMode (#pto.fixpipe_layout<...>, default NZ2ND) is the layout the fixpipe writes the "
                "slot in, so the vec tile that pops it must have layout ND (NZ2ND), DN (NZ2DN) or NZ (NZ2NZ), "
                "else RUNTIME_FIFO_MISMATCH; Relu (#pto.relu<RELU>) zeroes every value that is not > 0 "
                "(NaN kept, -0 -> +0) after the scaling and before the conversion; Phase "
                "(#pto.st_phase<...>) orders the store against a unit-flag matmul and changes no value; "
                "SubBlockId (A5's AccToVecMode; a2/a3 take only 0, LEGAL_ATTR) 0 pushes to vector sub-block "
                "0, 1 to sub-block 1 alone (a functional run executes sub-block 0, so popping that slot into "
                "a vec tile is RUNTIME_FIFO_MISMATCH), 2 and 3 split the tile by rows or columns as "
                "TILE_UP_DOWN and TILE_LEFT_RIGHT (the TPOP names that Split; an odd extent is "
                "RUNTIME_VALID_REGION; no Quant and no NZ2DN with them, STRUCT_ATTR_VALUE); AtomicT takes "
                "only NONE (LEGAL_MODE). Any field but its default needs an unsplit acc tile "
                "(LEGAL_LOCATION, STRUCT_ATTR_VALUE). ClipReluMode and IsChannelSplit are read by no TPUSH "
                "path and are not attributes.")
_SLOT = "!pto.memref<16x16xf32>"


def _event(what: str) -> Operand:
    """The public RecordEvent a push or pop returns, as an optional event result (decision 'FIFO
    event results'); functional backends record a token and never wait."""
    return Operand("event", Role.OUT, Kind.EVENT, f"the RecordEvent token of the {what} (`%e = t{what} ...`), "
                   "which a later `tsync %e` waits on", optional=True)
_WAIT_DOC = (" Wait events (the public trailing WaitEvents): event tokens written after the operand "
             "(`tpush %tile, %e0, %e1 {...}`, `%tile = tpop %e0 {...}`, `pto.tpush %tile, %pipe, %e0`, "
             "`pto.tpop %pipe, %tile, %e0`) are waited on before the instruction runs: the statement is one "
             "`tsync %e` per token, in order, then the instruction (the canonical text prints that; decision "
             "'FIFO event results').")
#: a hifloat8 slot comes only from an A5 QF322HIF8_PRE push: the a2/a3 TPOP takes none
_NO_HIF8 = {"a2": same(("tile",), dt.STORABLE), "a3": same(("tile",), dt.STORABLE)}


def _with(flag_id: int, **kw: Any) -> dict:
    """An example's state: FIFO ``flag_id`` (2 slots) holding ``kw`` (ready entries, counts)."""
    return {FIFO_KEY: {flag_id: Fifo(2, **kw)}}


_ONE_TILE = _with(0, ready=deque([(dt.F32, np.arange(256, dtype=np.float32).reshape(16, 16))]))

declare(Instruction(
    mnemonic="TPUSH", family=Family.SYNC, summary="push a tile into a cube-vector FIFO",
    operands=(tile_in("tile", "producer tile (acc for cube->vector, vec for vector->cube)", optional=True,
                      locations=(ACC, VEC)),
              Operand("gmTensor", Role.IN, Kind.GLOBAL, _GM, optional=True, window=WHOLE), _event("push")),
    attrs=_FIFO_ATTRS + (_SPLIT_ATTR, _QUANT_ATTR) + _FIXPIPE_ATTRS, semantics=_tpush, dtypes=same(("tile",), dt.STORABLE),
    numerics=EXACT, domain=Domain.NONE, pipe=lambda types: Pipe.FIX if getattr(types.get("tile"), "loc", None) is ACC
    else Pipe.MTE3, profile_values=_QUANT_VALUES,
    doc="TileData form `tpush %tile {FlagID, SlotNum}`: takes a free slot and stores a copy of the tile's "
        "valid region (its dtype and valid shape) in it, committed to the consumer. GlobalData form "
        "`tpush %slot[0, 0]`: commits the slot the producer's earlier TALLOC allocated (the data was "
        "written to global memory by the program; the operand is not read)." + _FIFO_DOC + _SPLIT_DOC
        + _QUANT_DOC + _FIXPIPE_DOC + _WAIT_DOC,
    special_values=_FIFO_FAULTS + "a GlobalData TPUSH with no TALLOC'd slot: RUNTIME_FIFO_STATE; a "
                   "quantising push without its SET_QUANT_* state: RUNTIME_QUANT_STATE; a bad "
                   "FlagID/SlotNum or both/neither operand: rejected by the verifier.",
    example=Example({"tile": "!pto.tile<16x16xf32, loc=acc, layout=NZ>"}, {"FlagID": 0, "SlotNum": 2}),
    more_examples=(Example({"gmTensor": _SLOT}, {"FlagID": 1}, state=_with(1, allocated=1)),
                   Example({"tile": "!pto.tile<16x16xi32, loc=acc, layout=NZ>"},
                           {"FlagID": 2, "Quant": FixpipeQuant.VREQ8},
                           state={"quant_vector": {"fp": Tile(TileType(1, 16, dt.F32, loc=Location.SCALING),
                                                              np.full((1, 16), 0.25, np.float32))}}),
                   Example({"tile": "!pto.tile<16x16xf32, loc=acc, layout=NZ>"},
                           {"FlagID": 0, "Quant": FixpipeQuant.F322BF16}),
                   Example({"tile": "!pto.tile<16x16xf32, loc=acc, layout=NZ>"},
                           {"FlagID": 3, "LayoutMode": FixpipeLayout.NZ2DN, "Relu": ReluMode.RELU,
                            "Phase": STPhase.Final})),
    constraints=_FIFO_RULES + (_FORM_RULE,) + _QUANT_RULES))

declare(Instruction(
    mnemonic="TPOP", family=Family.SYNC, summary="pop a tile from a cube-vector FIFO",
    operands=(tile_out("tile", "consumer tile (vec for cube->vector, mat for vector->cube)", optional=True,
                       locations=(VEC, MAT)),
              Operand("gmTensor", Role.IN, Kind.GLOBAL, _GM, optional=True, window=WHOLE), _event("pop")),
    attrs=_FIFO_ATTRS + (_SPLIT_ATTR,), semantics=_tpop, dtypes=same(("tile",), dt.STORABLE + (dt.HIF8,)),
    numerics=EXACT, domain=Domain.DST, pipe=Pipe.MTE2, profile_dtypes=_NO_HIF8,
    doc="TileData form `%tile = tpop {FlagID, SlotNum}`: takes the oldest committed slot, writes it into "
        "the tile and frees the slot (tile[i, j] = pushed[i, j]; the slot must have been pushed from a "
        "tile of the same dtype whose valid region has the shape of this tile's valid region; a vec tile "
        "popping an acc push has the layout of the push's LayoutMode, and hifloat8, on a5 and cpu, is "
        "the type of a QF322HIF8_PRE push). "
        "GlobalData form `tpop %slot[0, 0]`: takes the oldest committed slot without loading anything "
        "(the program reads global memory itself) and holds it until TFREE of a global." + _FIFO_DOC
        + _SPLIT_DOC + _WAIT_DOC,
    special_values="Empty FIFO: RUNTIME_FIFO_EMPTY; a tile popped from a slot of another dtype or valid "
                   "shape, or from one committed without a tile: RUNTIME_FIFO_MISMATCH.",
    example=Example({"tile": "!pto.tile<16x16xf32>"}, {"FlagID": 0, "SlotNum": 2}, state=_ONE_TILE),
    more_examples=(Example({"gmTensor": _SLOT}, {"FlagID": 1}, state=_with(1, ready=deque([None]))),),
    constraints=_FIFO_RULES + (_FORM_RULE,)))

declare(Instruction(
    mnemonic="TALLOC", family=Family.SYNC, summary="allocate a producer FIFO slot (GlobalData flow)",
    operands=(Operand("gmTensor", Role.IN, Kind.GLOBAL, "the slot view the program then writes with TSTORE; "
                      "not read or written by TALLOC", window=WHOLE), _event("alloc")),
    attrs=_FIFO_ATTRS, semantics=_talloc, dtypes=same(("gmTensor",), dt.STORABLE), numerics=EXACT,
    domain=Domain.NONE, pipe=Pipe.S,
    doc="Takes a free slot for the producer without writing data or notifying the consumer; the program "
        "writes the slot's data to global memory and commits it with the GlobalData TPUSH." + _FIFO_DOC
        + _WAIT_DOC.replace("(`tpush %tile, %e0, %e1 {...}`", "(`talloc %slot[0, 0], %e0 {...}`, `tpush %tile, %e0, %e1 {...}`"),
    special_values=_FIFO_FAULTS.rstrip("; ") + ".",
    example=Example({"gmTensor": _SLOT}, {"FlagID": 0, "SlotNum": 2}),
    constraints=_FIFO_RULES))

declare(Instruction(
    mnemonic="TFREE", family=Family.SYNC, summary="release a consumer FIFO slot",
    operands=(Operand("gmTensor", Role.IN, Kind.GLOBAL, "the slot view a GlobalData TPOP returned; absent "
                      "for the TileData form", optional=True, window=WHOLE),),
    attrs=_FIFO_ATTRS, semantics=_tfree, dtypes=same(("gmTensor",), dt.STORABLE), numerics=EXACT,
    domain=Domain.NONE, pipe=Pipe.S,
    doc="GlobalData form `tfree %slot[0, 0]`: releases the oldest slot a GlobalData TPOP holds, so the "
        "producer can reuse it. TileData form `tfree {FlagID}`: no effect (TPOP of a tile already freed "
        "its slot), as on the public A2/A3 implementation." + _FIFO_DOC,
    special_values="A GlobalData TFREE with no held slot: RUNTIME_FIFO_STATE.",
    example=Example({"gmTensor": _SLOT}, {"FlagID": 0, "SlotNum": 2}, state=_with(0, held=1)),
    more_examples=(Example({}, {"FlagID": 0}),),
    constraints=_FIFO_RULES))

# ------------------------------------------------------------------------------ SYNCALL, TPREFETCH_ASYNC


def _syncall(gmWorkspace: GlobalRef | None = None, usedCores: int | None = None,
             Mode: SyncAllMode = SyncAllMode.HARD, CoreType: SyncCoreType = SyncCoreType.AIV_ONLY) -> None:
    if gmWorkspace is not None:
        _whole(gmWorkspace, "SYNCALL gmWorkspace")
    if Mode is SyncAllMode.SOFT and gmWorkspace is None:
        raise RuntimeFault("RUNTIME_BAD_CONFIG", "a Soft SYNCALL needs its gmWorkspace counter",
                           expected="gmWorkspace given", actual="absent")
    if usedCores is not None and usedCores < 0:
        raise RuntimeFault("RUNTIME_BAD_CONFIG", "usedCores out of range", expected="an integer >= 0",
                           actual=int(usedCores))


declare(Instruction(
    mnemonic="SYNCALL", family=Family.SYNC, summary="barrier across the cores (blocks) of a launch",
    operands=(Operand("gmWorkspace", Role.IN, Kind.GLOBAL, "Soft mode's arrival counter (its first i32, "
                      "zero before first use); not read or written by functional backends",
                      optional=True, window=WHOLE),
              Operand("usedCores", Role.IN, Kind.INDEX, "participating cores, 0 = all of the launch",
                      optional=True, bounds=(0, None))),
    attrs=(Attr("Mode", SyncAllMode, SyncAllMode.HARD, "HARD (hardware flags) or SOFT (GM counter)"),
           Attr("CoreType", SyncCoreType, SyncCoreType.AIV_ONLY, "participants: AIV_ONLY, AIC_ONLY or MIX")),
    semantics=_syncall, dtypes=same(("gmWorkspace",), (dt.I32,)), numerics=EXACT, domain=Domain.NONE,
    pipe=Pipe.ALL,
    doc="Once every participating core has reached the barrier any may proceed; it orders nothing else "
        "(no wait for earlier stores, no cache flush). Functional backends run each block's program to "
        "its end without interleaving blocks at barriers, so SYNCALL validates its operands and has no "
        "effect, like the public auto build: a program that passes data between blocks across a SYNCALL "
        "through global memory is not portable to them (its result depends on block order). Soft mode "
        "needs gmWorkspace; Hard ignores gmWorkspace and usedCores. usedCores is not compared with the "
        "launch's block count: semantics do not see the launch (decision 'SYNCALL usedCores and the launch').",
    special_values="Soft mode without gmWorkspace, or usedCores < 0: RUNTIME_BAD_CONFIG.",
    example=Example({}, {}),
    more_examples=(Example({"gmWorkspace": "!pto.memref<8xi32>", "usedCores": "index"},
                           {"Mode": SyncAllMode.SOFT, "CoreType": SyncCoreType.MIX}, scalars={"usedCores": 0}),),
    constraints=(K.custom("usedCores only with gmWorkspace",
                          lambda t, a: "usedCores needs gmWorkspace" if "usedCores" in t and "gmWorkspace"
                          not in t else None, "STRUCT_OPERAND_FORM"),)))


def _tprefetch_async(src: GlobalRef) -> None:
    """A cache hint on the whole tensor: only its indices are checked (all zero)."""
    _whole(src, "TPREFETCH_ASYNC source")


declare(Instruction(
    mnemonic="TPREFETCH_ASYNC", family=Family.MEMORY, summary="warm the L2 cache with a global tensor",
    operands=(global_in("src", "the whole global tensor to prefetch into L2", window=WHOLE),),
    semantics=_tprefetch_async, dtypes=same(("src",), dt.STORABLE), numerics=EXACT, domain=Domain.NONE,
    pipe=Pipe.S,
    doc="Asks the SDMA engine to bring the whole tensor into the L2 cache, so later TLOADs hit there; no "
        "tile or memory value changes. Functional backends have no L2: it is a no-op, as on the public "
        "CPU simulator. The public form returns an AsyncEvent and takes a PrefetchAsyncContext (the SDMA "
        "workspace); neither carries values here, so the instruction takes only the tensor.",
    special_values="None: no values are read or written.",
    example=Example({"src": "!pto.memref<16x256xf16>"})))

# ------------------------------------------------------------------------------ views and addresses


def _tsubview(dst: Tile, src: Tile, rowIdx: int, colIdx: int) -> None:
    r, c = dst.valid
    _check_window(src, rowIdx, colIdx, r, c, "source")
    dst.write(src.data[rowIdx:rowIdx + r, colIdx:colIdx + c])


def _talias(dst: Tile, src: Tile) -> None:
    dst.write(src.read(*dst.valid, "TALIAS source"))


def _same(attr: str, code: str) -> Constraint:
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        s, d = types.get("src"), types.get("dst")
        if isinstance(s, TileType) and isinstance(d, TileType) and getattr(s, attr) != getattr(d, attr):
            return f"src.{attr} = {getattr(s, attr)}, dst.{attr} = {getattr(d, attr)}: must be equal"
        return None
    return K.custom(f"dst.{attr} == src.{attr}", check, code)


_SAME_LOC, _SAME_LAYOUT = _same("loc", "LEGAL_LOCATION"), _same("layout", "LEGAL_LAYOUT")
_PAIRS = tuples(("dst", "src"), [(d, d) for d in dt.STORABLE])

declare(Instruction(
    mnemonic="TSUBVIEW", family=Family.MOVEMENT, summary="a sub-tile view of another tile",
    operands=(tile_out("dst", "the sub-tile", locations=ANY_LOC), tile_in("src", "the tile viewed",
                                                                          locations=ANY_LOC),
              index_in("rowIdx", "first source row of the view", bounds=(0, None)),
              index_in("colIdx", "first source column", bounds=(0, None))),
    semantics=_tsubview, dtypes=_PAIRS, numerics=EXACT, domain=Domain.DST, pipe=Pipe.S,
    doc="dst[i, j] = src[rowIdx + i, colIdx + j] over dst's valid region; the window "
        "[rowIdx, rowIdx + dst.valid_rows) x [colIdx, colIdx + dst.valid_cols) must lie inside src's "
        "valid region. Both tiles have one location, layout and dtype. Hardware makes dst a view of "
        "src's storage; openpto gives it value semantics (a bit copy taken when TSUBVIEW runs, as "
        "TRESHAPE), so a later write to either tile is not seen through the other.",
    special_values="A window leaving src's valid region (negative offsets included): RUNTIME_OOB. Bits are "
                   "copied: NaN payloads and -0 kept.",
    example=Example({"dst": "!pto.tile<4x64xf32, valid=2x32>", "src": "!pto.tile<4x64xf32>",
                     "rowIdx": "index", "colIdx": "index"}, scalars={"rowIdx": 2, "colIdx": 32}),
    constraints=(_SAME_LOC, _SAME_LAYOUT)))

declare(Instruction(
    mnemonic="TALIAS", family=Family.MOVEMENT, summary="a second view of a tile's storage",
    operands=(tile_out("dst", "the alias", locations=ANY_LOC), tile_in("src", "the tile aliased",
                                                                       locations=ANY_LOC)),
    semantics=_talias, dtypes=_PAIRS, numerics=EXACT, domain=Domain.DST, pipe=Pipe.S,
    doc="dst[i, j] = src[i, j] over dst's valid region, which must lie inside src's. Both tiles have "
        "one static shape, location, layout and dtype; the alias may have a smaller valid region. On "
        "hardware both names share storage; openpto gives the alias value semantics (a bit copy taken "
        "when TALIAS runs, as TRESHAPE and TSUBVIEW): a program that writes one name and reads the "
        "other expecting to see the write is not portable.",
    special_values="dst's valid region leaving src's: RUNTIME_INVALID_READ. Bits are copied.",
    example=Example({"dst": "!pto.tile<16x16xf16>", "src": "!pto.tile<16x16xf16>"}),
    constraints=(_SAME_LOC, _SAME_LAYOUT, K.equal("dst", "rows", "src", "rows"),
                 K.equal("dst", "cols", "src", "cols"))))

SHIFT_MX_ADDR = 4      # the A5 scale address is the data address >> 4 (include/pto/npu/a5/utils.hpp)


def _tget_scale_addr(dst: Tile, src: Tile) -> None:
    """An address binding: no element of either tile is read or written."""


def _scale_shape(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    s, d = types.get("src"), types.get("dst")
    if not (isinstance(s, TileType) and isinstance(d, TileType)):
        return None
    k_axis = "cols" if s.loc is LEFT else "rows"
    other = "rows" if k_axis == "cols" else "cols"
    if getattr(d, other) != getattr(s, other):
        return f"dst.{other} = {getattr(d, other)}, src.{other} = {getattr(s, other)}: must be equal"
    if getattr(d, k_axis) * 32 < getattr(s, k_axis):
        return f"dst.{k_axis} = {getattr(d, k_axis)} holds fewer than {getattr(s, k_axis)}/32 block scales"
    return None


declare(Instruction(
    mnemonic="TGET_SCALE_ADDR", family=Family.SYNC, summary="bind an MX scale tile next to its data tile",
    operands=(tile_out("dst", "the scale tile (u8 E8M0 exponents)", locations=(LEFT, RIGHT)),
              tile_in("src", "the fp8 data tile the scales belong to", locations=(LEFT, RIGHT))),
    semantics=_tget_scale_addr, dtypes=tuples(("dst", "src"), [(dt.U8, d) for d in dt.FP8]), numerics=EXACT,
    domain=Domain.NONE, pipe=Pipe.S, profiles=("cpu", "a5"),
    doc=f"Address(dst) = Address(src) >> {SHIFT_MX_ADDR}: the scale tile of an MX operand lives at the "
        "scaled address of its data tile in the same buffer (left: one scale per 32 columns of A, right: "
        "one per 32 rows of B). An address binding, like TASSIGN: no element is read or written, and "
        "dst's contents afterwards are unspecified (write them, e.g. with TLOAD, before TMATMUL_MX reads "
        "them). A5 only (no A2/A3 implementation); cpu is permissive.",
    special_values="None: no values are read or written.",
    example=Example({"dst": "!pto.tile<16x2xu8, loc=left>", "src": "!pto.tile<16x64xf8e4m3, loc=left, "
                                                                    "layout=NZ>"}),
    constraints=(_SAME_LOC, K.custom("the scale tile covers src's K axis in blocks of 32", _scale_shape))))

# ------------------------------------------------------------------------------ TRANDOM

PHILOX_M = (0xD2511F53, 0xCD9E8D57)     # round multipliers
PHILOX_W = (0x9E3779B9, 0xBB67AE85)     # key schedule increments (Weyl sequence)
_M32 = 0xFFFFFFFF


def philox4x32(counters: np.ndarray, key: tuple[int, int], rounds: int) -> np.ndarray:
    """Philox-4x32-``rounds`` of each row of ``counters`` (n x 4 uint32, word 0 least significant)
    under ``key``; returns n x 4 uint32 words."""
    c = [counters[:, w].astype(np.uint64) for w in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    m0, m1, mask = np.uint64(PHILOX_M[0]), np.uint64(PHILOX_M[1]), np.uint64(_M32)
    for _ in range(rounds):
        p0, p1 = c[0] * m0, c[2] * m1
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & mask, p1 & mask,
             ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & mask, p0 & mask]
        k0, k1 = (k0 + np.uint64(PHILOX_W[0])) & mask, (k1 + np.uint64(PHILOX_W[1])) & mask
    return np.stack(c, axis=1).astype(np.uint32)


def _trandom(dst: Tile, key: Tile, counter: Tile, Rounds: int = 10) -> None:
    k = key.read(1, 2, "TRANDOM key").view(np.uint32)[0]
    ctr = counter.read(1, 4, "TRANDOM counter").view(np.uint32)[0]
    r, c = dst.valid
    n = r * c
    base = sum(int(w) << (32 * i) for i, w in enumerate(ctr))
    blocks = np.array([[((base + b) >> (32 * w)) & _M32 for w in range(4)] for b in range(-(-n // 4))],
                      dtype=np.uint64).reshape(-1, 4)
    words = philox4x32(blocks, (int(k[0]), int(k[1])), Rounds).reshape(-1)[:n]
    dst.write(words.view(dst.dtype.np_dtype).reshape(r, c))


def _rounds_ok(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    n = attrs.get("Rounds", 10)
    return None if n in (7, 10) else f"Rounds = {n}, must be 7 or 10"


def _key_counter(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    for name, n in (("key", 2), ("counter", 4)):
        t = types.get(name)
        if isinstance(t, TileType) and t.valid_cols is not None and t.valid_cols < n:
            return f"{name}.valid_cols = {t.valid_cols}, needs >= {n}"
        if isinstance(t, TileType) and t.valid_rows == 0:
            return f"{name} has no valid row"
    return None


_RANDOM_TYPES = tuples(("dst", "key", "counter"), [(d, dt.U32, dt.U32) for d in (dt.I32, dt.U32)])

declare(Instruction(
    mnemonic="TRANDOM", family=Family.COMPLEX, summary="counter-based random numbers (Philox-4x32)",
    operands=(tile_out("dst", "random words (i32 or u32, row-major)"),
              tile_in("key", "the 64-bit key: key[0, 0], key[0, 1] (u32 words)"),
              tile_in("counter", "the 128-bit counter: counter[0, 0..3], word 0 least significant")),
    attrs=(Attr("Rounds", int, 10, "Philox rounds: 7 or 10"),),
    semantics=_trandom, dtypes=_RANDOM_TYPES, numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    profiles=("cpu", "a5"),
    doc="Philox-4x32-R (Salmon et al. 2011) with key (k0, k1) = key[0, 0..1] and the 128-bit counter C = "
        "counter[0, 0] + 2**32 counter[0, 1] + 2**64 counter[0, 2] + 2**96 counter[0, 3]. One round maps "
        "(x0, x1, x2, x3) with p = x0 * 0xD2511F53 and q = x2 * 0xCD9E8D57 (64-bit products) to "
        "(hi(q) ^ x1 ^ k0, lo(q), hi(p) ^ x3 ^ k1, lo(p)), then k0 += 0x9E3779B9 and k1 += 0xBB67AE85 "
        "(mod 2**32); Rounds rounds (7 or 10) make one 4-word block. The valid region is filled in "
        "row-major order as one stream: element k = i * dst.valid_cols + j gets word k mod 4 of the block "
        "of counter C + floor(k / 4) (mod 2**128); i32 takes the word's bits. The counter tile is not "
        "advanced: pass a new counter (e.g. C + ceil(n / 4)) for fresh numbers. This is the public A5 "
        "order when valid_cols is a multiple of 256; for other widths the A5 kernel and the CPU simulator "
        "skip or reuse counters per row in hardware-specific ways, which openpto does not copy.",
    special_values="None: integer words, identical on every backend.",
    example=Example({"dst": "!pto.tile<16x16xu32>", "key": "!pto.tile<1x8xu32>",
                     "counter": "!pto.tile<1x8xu32>"}, {"Rounds": 10}),
    constraints=(K.layout_in("dst", Layout.ND), K.custom("Rounds in {7, 10}", _rounds_ok, "LEGAL_ATTR"),
                 K.custom("key.valid_cols >= 2, counter.valid_cols >= 4, one valid row each", _key_counter,
                          "STRUCT_VALID_REGION"))))

# ------------------------------------------------------------------------------ TPACK


def _tpack(dst: Tile, src: Tile) -> None:
    """Each element keeps its low dst-width bits (two's complement wrap, as a C cast)."""
    dst.write(src.read(*dst.valid, "TPACK source").astype(dst.data.dtype))


_PACK_PAIRS = tuples(("dst", "src"), [(d, s) for s in dt.INTS_32 for d in dt.INTS_32 if d.bits < s.bits])

declare(Instruction(
    mnemonic="TPACK", family=Family.MOVEMENT, summary="narrow integer elements by truncation",
    operands=(tile_out("dst", "the narrower elements"), tile_in("src", "the wider integer elements")),
    semantics=_tpack, dtypes=_PACK_PAIRS, numerics=EXACT, domain=Domain.DST, pipe=Pipe.V,
    profiles=("cpu", "a5"),
    doc="dst[i, j] = src[i, j] truncated to dst's width over dst's valid region, which must lie inside "
        "src's: the low dst-width bits of the two's complement value are kept (i32 0x12345678 packs to "
        "i16 0x5678, i16 -1 to u8 255), the vector unit's pack-by-truncation applied element by element. "
        "Both tiles are vec tiles of one static shape and layout ND; dst's element width is smaller than "
        "src's (8 <- 16/32, 16 <- 32 bits, either signedness). The public manual names TPACK as a "
        "narrowing move without further semantics; openpto specifies the truncating form (decision "
        "'TPACK'). Float narrowing is TCVT.",
    special_values="None: integer bits. dst's valid region leaving src's: RUNTIME_INVALID_READ.",
    example=Example({"dst": "!pto.tile<16x32xi16>", "src": "!pto.tile<16x32xi32>"}),
    constraints=(K.layout_in("dst", Layout.ND), K.layout_in("src", Layout.ND),
                 K.equal("dst", "rows", "src", "rows"), K.equal("dst", "cols", "src", "cols"))))
