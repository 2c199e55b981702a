"""Enumerated instruction attributes and their PTO-AS spelling (``#pto.cmp<GT>``)."""
from __future__ import annotations

import enum


class CmpMode(enum.Enum):
    EQ = 0
    NE = 1
    LT = 2
    LE = 3
    GT = 4
    GE = 5


class RoundMode(enum.Enum):
    """TCVT rounding: RINT = nearest-even, ROUND = nearest ties-away, ODD = round-to-odd."""

    NONE = 0
    RINT = 1
    ROUND = 2
    FLOOR = 3
    CEIL = 4
    TRUNC = 5
    ODD = 6


class SatMode(enum.Enum):
    """TCVT to integers: ON clamps to the target range, OFF keeps the low bits (wraps)."""

    ON = 0
    OFF = 1


class MaskPattern(enum.Enum):
    """TGATHER column patterns, read right to left (bit 0 = column 0 of each group)."""

    P0101 = 1
    P1010 = 2
    P0001 = 3
    P0010 = 4
    P0100 = 5
    P1000 = 6
    P1111 = 7


class AtomicMode(enum.Enum):
    NONE = 0
    ADD = 1
    MAX = 2
    MIN = 3


class OobMode(enum.Enum):
    """Indexed memory access out of range: ERROR (RUNTIME_OOB), CLAMP, WRAP, ZERO/SKIP."""

    ERROR = 0
    CLAMP = 1
    WRAP = 2
    ZERO = 3   # gather reads 0; scatter skips the element


class IndexMode(enum.Enum):
    """MGATHER/MSCATTER: ELEMENT indexes single elements, ROW indexes whole rows."""

    ELEMENT = 0
    ROW = 1


class ReluMode(enum.Enum):
    NONE = 0
    RELU = 1


class QuantType(enum.Enum):
    INT8_SYM = 0
    INT8_ASYM = 1


class Precision(enum.Enum):
    """The public ``PrecisionType`` template argument (DivAlgorithm, ExpAlgorithm, ...): which
    algorithm a target uses; openpto holds both values to the instruction's one contract."""

    DEFAULT = 0
    HIGH_PRECISION = 1


class QuantOutType(enum.Enum):
    """SET_QUANT_SCALAR's ``OutType``: the element type the pre-quantising move produces."""

    I8 = 0
    U8 = 1
    I16 = 2
    F16 = 3
    BF16 = 4


class FixpipeQuant(enum.Enum):
    """TPUSH's ``Quant``: the public FixpipeParams quant mode (QuantMode_t) of a pushed acc tile,
    which fixes the type the consumer pops: cast modes convert, scalar modes scale by the
    SET_QUANT_SCALAR register, vector (V...) modes per column by the SET_QUANT_VECTOR tile."""

    NoQuant = 0
    F322F16 = 1
    F322BF16 = 2
    QF322B8_PRE = 3
    QF322F16_PRE = 4
    QF322BF16_PRE = 5
    QF322FP8_PRE = 6
    REQ8 = 7
    DEQF16 = 8
    QS322BF16_PRE = 9
    VQF322B8_PRE = 10
    VREQ8 = 11
    VDEQF16 = 12
    VQS322BF16_PRE = 13
    QF322HIF8_PRE = 14


class FixpipeLayout(enum.Enum):
    """TPUSH's ``Layout``: the FixpipeParams LayoutMode_t, the layout the fixpipe writes an acc
    (NZ) tile's slot in, hence the layout of the tile that pops it: ND, DN or NZ."""

    NZ2NZ = 0
    NZ2ND = 1
    NZ2DN = 2


class STPhase(enum.Enum):
    """TPUSH's ``Phase``: the FixpipeParams STPhase of a unit-flag aware acc store (the public
    values 0, 2 and 3); it orders the store against the matmul and changes no value."""

    Unspecified = 0
    Partial = 2
    Final = 3


class MxQuantAlg(enum.Enum):
    """TQUANT_DN's ``mx_alg``: destination format and shared-scale algorithm (OCP or NV)."""

    OcpMxFp8E4M3 = 0
    NvMxFp8E4M3 = 1
    OcpMxFp4E2M1 = 2
    NvMxFp4E2M1 = 3


class SyncAllMode(enum.Enum):
    """SYNCALL implementation path: HARD (hardware flags) or SOFT (a shared GM counter)."""

    HARD = 0
    SOFT = 1


class SyncCoreType(enum.Enum):
    """SYNCALL participants: vector cores only, cube cores only, or both (MIX)."""

    AIV_ONLY = 0
    AIC_ONLY = 1
    MIX = 2


class GatherAxis(enum.Enum):
    """TGATHER mask form's ``gatherType`` (the public GatherAxis): GATHER_ROW keeps columns of
    each row, GATHER_COL keeps whole rows."""

    GATHER_ROW = 0
    GATHER_COL = 1


class ScatterAxis(enum.Enum):
    """TSCATTER mask form's ``scatterType`` (the public ScatterAxis): SCATTER_ROW spreads columns
    of each row, SCATTER_COL spreads whole rows."""

    SCATTER_ROW = 0
    SCATTER_COL = 1


class HistByte(enum.Enum):
    """THISTOGRAM's ``byte``: which byte of each element is counted (BYTE_0 = bits 7-0, the
    public HistByte names); the value is the byte's number."""

    BYTE_0 = 0
    BYTE_1 = 1
    BYTE_2 = 2
    BYTE_3 = 3


class AccToVecMode(enum.Enum):
    """TMOV ``mode`` for an acc -> vec move (the public AccToVecMode): the whole tile to vector
    sub-block 0 or 1, or split between both by rows (M) or columns (N)."""

    SingleModeVec0 = 0
    SingleModeVec1 = 1
    DualModeSplitM = 2
    DualModeSplitN = 3


class TileSplitAxis(enum.Enum):
    """TPUSH/TPOP ``Split``: how a tile moving between one cube and two vector sub-blocks is
    divided (the public TileSplitAxis): whole, row halves or column halves; the _ODD forms give
    sub-block 0 the extra row (column) of an odd extent."""

    TILE_NO_SPLIT = 0
    TILE_UP_DOWN = 1
    TILE_LEFT_RIGHT = 2
    TILE_UP_DOWN_ODD = 3
    TILE_LEFT_RIGHT_ODD = 4


class NotifyOp(enum.Enum):
    """TNOTIFY ``op`` (the public comm NotifyOp): store the value into the remote signal, or add
    it atomically (``#pto.notify_op<AtomicAdd>`` names ADD)."""

    SET = 0
    ADD = 1


class ReduceOp(enum.Enum):
    """TREDUCE ``op`` (the public comm ReduceOp): the elementwise combination of the ranks' data."""

    SUM = 0
    MAX = 1
    MIN = 2


# PTO-AS spelling of each enum: ``#pto.<key><VALUE>``.
ENUM_SPELLING: dict[type[enum.Enum], str] = {
    CmpMode: "cmp",
    RoundMode: "round",
    SatMode: "sat",
    MaskPattern: "mask_pattern",
    AtomicMode: "atomic",
    OobMode: "oob",
    IndexMode: "index_mode",
    ReluMode: "relu",
    QuantType: "quant",
    Precision: "precision",
    QuantOutType: "out_type",
    FixpipeQuant: "fixpipe_quant",
    FixpipeLayout: "fixpipe_layout",
    STPhase: "st_phase",
    MxQuantAlg: "mx_alg",
    SyncAllMode: "syncall_mode",
    SyncCoreType: "sync_core",
    HistByte: "hist_byte",
    TileSplitAxis: "split",
    AccToVecMode: "acc_to_vec",
    GatherAxis: "gather_axis",
    ScatterAxis: "scatter_axis",
    NotifyOp: "notify_op",
    ReduceOp: "reduce_op",
}


def spell(value: object) -> str:
    """The PTO-AS text of an attribute value."""
    if isinstance(value, enum.Enum) and type(value) in ENUM_SPELLING:
        return f"#pto.{ENUM_SPELLING[type(value)]}<{value.name}>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)
