"""Synchronisation, resource binding and control-state instructions.

A functional execution runs in program order, so these change no tile values: their semantics
validate the operands (pipes, event ids, addresses, configuration fields) and raise a
``RuntimeFault`` for bad ones. The Ascend simulator gives flags and barriers their hardware
meaning. Control-state writes (SETFMATRIX, SET_IMG2COL_*, SETHF32MODE, SETTF32MODE;
formerly spelled with a leading T, still accepted: ``registry.RENAMED``) record
their values into the optional ``state`` dict a backend passes in, under the keys in ``STATE_KEYS``.

Pipe operands (kind ``pipe``) take a ``types.Pipe`` member (or its name, ``"V"`` / ``"PIPE_V"``);
event ids are ``index`` operands in 0..7 (8 ids per pipe pair).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from .. import constraints as K
from .. import dtypes as dt
from ..attrs import RoundMode
from ..diagnostics import RuntimeFault
from ..registry import declare, former_names
from ..spec import (Attr, Domain, EXACT, Example, Family, Instruction, Kind, Operand, Role, ValueRule, same)
from ..types import TYPE_ALIASES, Pipe, TileType, Type
from ..values import Tile
from ._helpers import index_in

EVENT_IDS = 8          # event ids per (src pipe, dst pipe) pair
ALIGN = 32             # on-chip buffers are 32-byte aligned
STATE_KEYS = {"SETFMATRIX": "fmatrix", "SET_IMG2COL_RPT": "img2col_rpt",
              "SET_IMG2COL_PADDING": "img2col_padding", "SETHF32MODE": "hf32",
              "SETTF32MODE": "tf32"}

# ------------------------------------------------------------------------------ operand checks


def _pipe(value: object, what: str) -> Pipe:
    """A pipe operand: a Pipe member or its name; RUNTIME_BAD_PIPE for anything else."""
    if isinstance(value, Pipe):
        return value
    name = value.upper().removeprefix("PIPE_") if isinstance(value, str) else None
    if name in Pipe.__members__:
        return Pipe[name]
    raise RuntimeFault("RUNTIME_BAD_PIPE", f"{what} is not a pipe",
                       expected=" ".join(p.value for p in Pipe), actual=repr(value))


def _event_id(value: object) -> int:
    """An event id: an integer in 0..7 (RUNTIME_EVENT_ID otherwise)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) \
            and 0 <= value < EVENT_IDS:
        return int(value)
    raise RuntimeFault("RUNTIME_EVENT_ID", "event id out of range",
                       expected=f"an integer in [0, {EVENT_IDS})", actual=repr(value))


def _flag(src_pipe: object, dst_pipe: object, event_id: object) -> None:
    """A flag joins two different concrete pipes (ALL is only for barriers)."""
    src, dst = _pipe(src_pipe, "src_pipe"), _pipe(dst_pipe, "dst_pipe")
    for what, p in (("src_pipe", src), ("dst_pipe", dst)):
        if p is Pipe.ALL:
            raise RuntimeFault("RUNTIME_BAD_PIPE", f"{what} cannot be ALL in a flag",
                               expected="a single pipe", actual="ALL")
    if src is dst:
        raise RuntimeFault("RUNTIME_SAME_PIPE", "a flag must join two different pipes",
                           expected="src_pipe != dst_pipe", actual=f"{src.value} -> {dst.value}")
    _event_id(event_id)


def _fields(limits: Mapping[str, tuple[int, int]], values: Mapping[str, Any]) -> dict[str, int]:
    """Configuration fields: integers within their register field (RUNTIME_BAD_CONFIG)."""
    out = {}
    for name, (lo, hi) in limits.items():
        v = values[name]
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not lo <= v <= hi:
            raise RuntimeFault("RUNTIME_BAD_CONFIG", f"{name} out of range",
                               expected=f"an integer in [{lo}, {hi}]", actual=repr(v))
        out[name] = int(v)
    return out


def _record(state: dict | None, mnemonic: str, values: dict[str, Any]) -> None:
    if state is not None:
        state[STATE_KEYS[mnemonic]] = values

#: The public IR Level-2 event forms (``pto.record_event[SRC, DST, id]``, ``pto.barrier(OP)``)
#: name operation classes; each class issues on one pipe, so an event is a flag between pipes.
OP_CLASS_PIPE: dict[str, Pipe] = {
    "TLOAD": Pipe.MTE2, "TSTORE_VEC": Pipe.MTE3, "TSTORE_ACC": Pipe.FIX, "TMOV_M2L": Pipe.MTE1,
    "TMOV_M2B": Pipe.MTE1, "TMOV_M2S": Pipe.FIX, "TMOV_V2M": Pipe.FIX, "TMATMUL": Pipe.M, "TVEC": Pipe.V,
}

# ------------------------------------------------------------------------------ manual sync


def _pipe_barrier(pipe: Pipe) -> None:
    _pipe(pipe, "pipe")


_FLAG_OPERANDS = (Operand("src_pipe", Role.IN, Kind.PIPE, "pipe that sets the flag"),
                  Operand("dst_pipe", Role.IN, Kind.PIPE, "pipe that waits on it"),
                  index_in("event_id", "event id, 0..7", bounds=(0, EVENT_IDS - 1)))
_FLAG_SPECIAL = ("event_id outside 0..7: RUNTIME_EVENT_ID; src_pipe == dst_pipe: "
                 "RUNTIME_SAME_PIPE; ALL or a non-pipe: RUNTIME_BAD_PIPE.")
_FLAG_EXAMPLE = Example({"event_id": "index"},
                        scalars={"src_pipe": Pipe.MTE2, "dst_pipe": Pipe.V, "event_id": 0})


def _flag_instr(mnemonic: str, summary: str, doc: str) -> None:
    declare(Instruction(
        mnemonic=mnemonic, family=Family.MANUAL_SYNC, summary=summary, operands=_FLAG_OPERANDS,
        semantics=_flag, dtypes=None, numerics=EXACT, domain=Domain.NONE, pipe=Pipe.S,
        extension=True, special_values=_FLAG_SPECIAL, example=_FLAG_EXAMPLE,
        doc=doc + " Flags are per (src pipe, dst pipe, id) counting semaphores; 8 ids per pipe "
                  "pair (a constant id outside the pair's ids is LEGAL_EVENT_ID at verify time: decision "
                  "'Flag ids per pipe pair'); the pipes must differ and ALL is not allowed. Functional backends run "
                  "in program order and only validate the operands; the Ascend simulator models "
                  "the waiting and reports deadlocks. Issued from the scalar unit (pipe S)."))


_flag_instr("SET_FLAG", "signal a flag from one pipe to another",
            "set_flag(src_pipe, dst_pipe, event_id): once every instruction issued on src_pipe "
            "before it has completed, the flag (src_pipe, dst_pipe, event_id) is set (counted).")
_flag_instr("WAIT_FLAG", "wait for a flag set by another pipe",
            "wait_flag(src_pipe, dst_pipe, event_id): dst_pipe issues nothing further until the "
            "flag has been set, then consumes one set.")

declare(Instruction(
    mnemonic="PIPE_BARRIER", family=Family.MANUAL_SYNC, summary="order a pipe against itself",
    operands=(Operand("pipe", Role.IN, Kind.PIPE, "pipe to drain, or ALL"),),
    semantics=_pipe_barrier, dtypes=None, numerics=EXACT, domain=Domain.NONE, pipe=Pipe.S,
    extension=True, special_values="A non-pipe raises RUNTIME_BAD_PIPE.",
    doc="pipe_barrier(pipe): instructions on `pipe` issued after the barrier start only once "
        "those issued before it have completed (ALL: every pipe). On A2/A3 dependent vector "
        "instructions need pipe_barrier(V) between them. Functional backends only validate it.",
    example=Example({}, scalars={"pipe": Pipe.V})))

# ------------------------------------------------------------------------------ TSYNC, TASSIGN


def _tsync(event: object = None, pipe: object = None) -> None:
    if (event is None) == (pipe is None):
        raise RuntimeFault("RUNTIME_SYNC_FORM", "tsync takes either an event or a pipe",
                           expected="exactly one of event, pipe",
                           actual="both" if event is not None else "neither")
    if pipe is not None:
        _pipe(pipe, "pipe")


def _pipes(names: str) -> tuple[ValueRule, ...]:
    return (ValueRule("pipe", {Pipe[n]: None for n in names.split()}),)


#: The pipes each target's single-pipe TSYNC asserts (<target>/TSync.hpp); kirinX90 includes
#: kirin9030's TSync.hpp. cpu takes every pipe.
_TSYNC_PIPES = {"a2": _pipes("S V M MTE1 MTE2 MTE3 FIX ALL"), "a3": _pipes("S V M MTE1 MTE2 MTE3 FIX ALL"),
                "a5": _pipes("MTE2 MTE3 ALL"), "a6": _pipes("MTE2 MTE3 ALL"),
                "kirin9030": _pipes("M MTE1 MTE2 MTE3 FIX ALL"), "kirinX90": _pipes("M MTE1 MTE2 MTE3 FIX ALL")}

declare(Instruction(
    mnemonic="TSYNC", family=Family.SYNC, summary="wait on an event, or barrier a pipe",
    operands=(Operand("event", Role.IN, Kind.EVENT, "event token to wait on", optional=True),
              Operand("pipe", Role.IN, Kind.PIPE, "pipe to barrier", optional=True)),
    semantics=_tsync, dtypes=None, numerics=EXACT, domain=Domain.NONE, pipe=Pipe.S,
    doc="Two forms: `tsync %e` waits on the event token (the flag recorded by its producer, as "
        "WAIT_FLAG); `tsync` with a pipe is a single-pipe barrier (PIPE_BARRIER). The public "
        "`tsync.op #pto.op<TADD>` names an op class; its pipe is the pipe operand here. The "
        "single-pipe form takes the pipes each target's header asserts (Values per profile: "
        "A2/A3 S, V, M, MTE1, MTE2, MTE3, FIX or ALL; A5 and A6 MTE2, MTE3 or ALL; the Kirin "
        "parts M, MTE1, MTE2, MTE3, FIX or ALL; cpu any pipe); another pipe is LEGAL_ATTR. "
        "Functional backends do not inspect the token and only validate the form.",
    special_values="Both or neither operand: RUNTIME_SYNC_FORM; a non-pipe: RUNTIME_BAD_PIPE.",
    profile_values=_TSYNC_PIPES,
    example=Example({}, scalars={"pipe": Pipe.MTE2})))


def _tassign(tile: Tile, addr: int) -> None:
    if not isinstance(addr, (int, np.integer)) or isinstance(addr, bool) or addr < 0:
        raise RuntimeFault("RUNTIME_BAD_ADDRESS", "tile address must be a non-negative integer",
                           expected="an integer >= 0", actual=repr(addr))
    if addr % ALIGN:
        raise RuntimeFault("RUNTIME_MISALIGNED", "tile address is not 32-byte aligned",
                           expected=f"a multiple of {ALIGN}", actual=int(addr))


declare(Instruction(
    mnemonic="TASSIGN", family=Family.SYNC, summary="bind a tile to an on-chip address",
    operands=(Operand("tile", Role.OUT, Kind.TILE, "tile to bind (any location)"),
              index_in("addr", "byte address in the tile's on-chip buffer", bounds=(0, None), multiple=ALIGN)),
    semantics=_tassign, dtypes=same(("tile",), dt.STORABLE), numerics=EXACT,
    domain=Domain.NONE, pipe=Pipe.S,
    doc="Manual placement: the tile's storage becomes the bytes at `addr` of its location's "
        "buffer (UB, L1, L0A/B/C, bias, fixpipe). The semantics check only 32-byte alignment; "
        "that addr + the tile's bytes fits the buffer is a profile fact (capacity) checked by "
        "the verifier for constant addresses and by the Ascend simulator. A constant address "
        "off the buffer's alignment (32 bytes) is LEGAL_ALIGNMENT at verify time (decision "
        "'Misaligned constant addresses'). The tile is an output "
        "with no domain: its contents after binding are unspecified (functional backends keep "
        "them, the reference may poison them), so write a bound tile before reading it. Auto "
        "mode and the public CPU simulator treat TASSIGN as a no-op.",
    special_values="A negative or non-integer address: RUNTIME_BAD_ADDRESS; not a multiple of "
                   "32: RUNTIME_MISALIGNED.",
    example=Example({"tile": "!pto.tile<16x16xf32>", "addr": "index"}, scalars={"addr": 4096})))

# ------------------------------------------------------------------------------ control state

_U8, _U16 = (0, 0xFF), (0, 0xFFFF)
FMATRIX_FIELDS = {"fmap_h": (1, 0xFFFF), "fmap_w": (1, 0xFFFF), "pad_left": _U8,
                  "pad_right": _U8, "pad_top": _U8, "pad_bottom": _U8}
RPT_FIELDS = {"repeat_stride": _U16, "repeat_time": _U8, "repeat_mode": _U8}


#: The config tile of the public forms (``pto.setfmatrix %cfg``; decision "Config tiles"): row 0
#: holds every IMG2COL field, one per column in this order, so one tile feeds all three writers.
CONFIG_COLUMNS = (*FMATRIX_FIELDS, *RPT_FIELDS, "pad_value")
CONFIG_DTYPES = (dt.F32, dt.I32)
CONFIG_TYPE = TYPE_ALIASES["!pto.fmatrix_config"]
#: an example config tile: a 4 x 4 map padded by 1, repeat stride/time/mode 1, 1, 0, pad value 0
CONFIG_EXAMPLE = Example({"cfg": CONFIG_TYPE}, contents={"cfg": (4, 4, 1, 1, 1, 1, 1, 1, 0, 0.0)})


def _from_config(cfg: Tile, names: tuple[str, ...]) -> dict[str, Any]:
    """The fields ``names`` read from row 0 of a config tile: RUNTIME_INVALID_READ unless every
    config column is in its valid region; integer fields must hold integers (RUNTIME_BAD_CONFIG)."""
    row = cfg.read(1, len(CONFIG_COLUMNS), "the config tile")[0]
    out: dict[str, Any] = {}
    for name in names:
        v = row[CONFIG_COLUMNS.index(name)].item()
        if name != "pad_value" and isinstance(v, float):
            if not v.is_integer():
                raise RuntimeFault("RUNTIME_BAD_CONFIG", f"{name} out of range", expected="an integer",
                                   actual=repr(v))
            v = int(v)
        out[name] = v
    return out


def _configured(limits: Mapping[str, tuple[int, int]], cfg: Tile | None, fields: Mapping[str, Any]) -> dict[str, int]:
    return _fields(limits, _from_config(cfg, tuple(limits)) if cfg is not None else fields)


def _tsetfmatrix(cfg: Tile | None = None, state: dict | None = None, **fields: int) -> None:
    _record(state, "SETFMATRIX", _configured(FMATRIX_FIELDS, cfg, fields))


def _tset_img2col_rpt(cfg: Tile | None = None, state: dict | None = None, **fields: int) -> None:
    _record(state, "SET_IMG2COL_RPT", _configured(RPT_FIELDS, cfg, fields))


def _tset_img2col_padding(pad_value: float | None = None, cfg: Tile | None = None,
                          state: dict | None = None) -> None:
    if cfg is not None:
        pad_value = _from_config(cfg, ("pad_value",))["pad_value"]
    _record(state, "SET_IMG2COL_PADDING", {"pad_value": pad_value})


def _config_form(fields: tuple[str, ...]) -> Callable[[Mapping[str, Type], Mapping[str, Any]], str | None]:
    """Exactly one form: the field operands or the config tile."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        if ("cfg" in types) == any(f in types for f in fields):
            return f"give either the fields ({', '.join(fields)}) or the config tile cfg"
        return None
    return check


def _every_field(fields: tuple[str, ...]) -> Callable[[Mapping[str, Type], Mapping[str, Any]], str | None]:
    """The field form names every field (the text cannot leave out one in the middle either)."""
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        missing = [f for f in fields if f not in types]
        if "cfg" not in types and missing and len(missing) < len(fields):
            return f"the field form needs every field: {', '.join(missing)} missing"
        return None
    return check


def _config_tile(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    t = types.get("cfg")
    if isinstance(t, TileType) and ((t.valid_rows is not None and t.valid_rows < 1)
                                    or (t.valid_cols is not None and t.valid_cols < len(CONFIG_COLUMNS))):
        return f"a config tile holds its {len(CONFIG_COLUMNS)} fields in row 0: valid region >= 1x{len(CONFIG_COLUMNS)}"
    return None


def _config_dtype(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    t = types.get("cfg")
    if isinstance(t, TileType) and t.dtype not in CONFIG_DTYPES:
        return f"a config tile is {' or '.join(d.name for d in CONFIG_DTYPES)}, not {t.dtype.name}"
    return None


def _config_rules(fields: tuple[str, ...], dtype: bool = False) -> tuple[Any, ...]:
    """The form and config-tile rules; ``dtype``: also cfg's dtype, for an instruction whose
    dtype rule covers its scalar form instead (SET_IMG2COL_PADDING)."""
    rules = (K.custom("either the fields or the config tile cfg", _config_form(fields), "STRUCT_OPERAND_FORM"),
             K.custom("the field form names every field", _every_field(fields), "STRUCT_MISSING_OPERAND"),
             K.custom(f"cfg's valid region holds the {len(CONFIG_COLUMNS)} config columns", _config_tile,
                      "STRUCT_VALID_REGION"))
    return rules + ((K.custom("cfg is f32 or i32", _config_dtype, "LEGAL_DTYPE"),) if dtype else ())


_CFG = Operand("cfg", Role.IN, Kind.TILE, "config tile (the public form; !pto.fmatrix_config): row 0 holds "
               + ", ".join(CONFIG_COLUMNS) + " in that order", optional=True)
_CFG_DOC = (" The public form names a config tile instead (`pto.setfmatrix %cfg : !pto.fmatrix_config`, "
            "a 1x16 f32 tile; an f32 or i32 tile whose row 0 holds " + ", ".join(CONFIG_COLUMNS)
            + " in that order): the same fields read from it, integer fields holding integers.")


_STATE_DOC = " The semantics record {fields} into state[{key!r}] when a `state` dict is passed; "
_IMG2COL_NOTE = ("backends that model the IMG2COL unit read it. TIMG2COL carries its own geometry "
                 "in attributes, so this state never changes its values.")

declare(Instruction(
    mnemonic="SETFMATRIX", family=Family.SYNC, aliases=former_names("SETFMATRIX"),
    summary="set the IMG2COL feature-map registers",
    operands=tuple(index_in(n, f"feature-map {n.replace('_', ' ')}", bounds=FMATRIX_FIELDS[n], optional=True)
                   for n in FMATRIX_FIELDS) + (_CFG,),
    semantics=_tsetfmatrix, dtypes=same(("cfg",), CONFIG_DTYPES), numerics=EXACT, domain=Domain.NONE,
    pipe=Pipe.S, constraints=_config_rules(tuple(FMATRIX_FIELDS)),
    doc="Writes the FMATRIX register: feature-map height and width (1..65535) and the pad list "
        "left, right, top, bottom (0..255 each), the public Img2colTileConfig fields."
        + _STATE_DOC.format(fields="the six fields", key="fmatrix") + _IMG2COL_NOTE + _CFG_DOC,
    special_values="A field outside its range (or not an integer): RUNTIME_BAD_CONFIG.",
    example=Example({k: "index" for k in FMATRIX_FIELDS},
                    scalars={"fmap_h": 4, "fmap_w": 4, "pad_left": 1, "pad_right": 1,
                             "pad_top": 1, "pad_bottom": 1}),
    more_examples=(CONFIG_EXAMPLE,)))

declare(Instruction(
    mnemonic="SET_IMG2COL_RPT", family=Family.SYNC, aliases=former_names("SET_IMG2COL_RPT"),
    summary="set the IMG2COL repeat registers",
    operands=tuple(index_in(n, n.replace("_", " "), bounds=RPT_FIELDS[n], optional=True) for n in RPT_FIELDS)
    + (_CFG,),
    semantics=_tset_img2col_rpt, dtypes=same(("cfg",), CONFIG_DTYPES), numerics=EXACT, domain=Domain.NONE,
    pipe=Pipe.S, constraints=_config_rules(tuple(RPT_FIELDS)),
    doc="Writes the IMG2COL repeat configuration: repeat_stride (0..65535), repeat_time and "
        "repeat_mode (0..255 each), the public ConvTile repeat fields."
        + _STATE_DOC.format(fields="the three fields", key="img2col_rpt") + _IMG2COL_NOTE + _CFG_DOC,
    special_values="A field outside its range (or not an integer): RUNTIME_BAD_CONFIG.",
    example=Example({k: "index" for k in RPT_FIELDS},
                    scalars={"repeat_stride": 16, "repeat_time": 1, "repeat_mode": 0}),
    more_examples=(CONFIG_EXAMPLE,)))

declare(Instruction(
    mnemonic="SET_IMG2COL_PADDING", family=Family.SYNC, aliases=former_names("SET_IMG2COL_PADDING"),
    summary="set the IMG2COL pad value",
    operands=(Operand("pad_value", Role.IN, Kind.SCALAR, "value IMG2COL reads at padded positions",
                      optional=True), _CFG),
    semantics=_tset_img2col_padding, constraints=_config_rules(("pad_value",), dtype=True),
    dtypes=same(("pad_value",), dt.FLOATS + dt.INTS_32), numerics=EXACT, domain=Domain.NONE,
    pipe=Pipe.S,
    doc="Writes the value IMG2COL produces at padded positions (the config's padValue); the "
        "consumer converts it to the feature-map dtype."
        + _STATE_DOC.format(fields="{'pad_value': value}", key="img2col_padding")
        + _IMG2COL_NOTE + _CFG_DOC,
    special_values="Any value of the scalar type is accepted and recorded as given.",
    example=Example({"pad_value": "f16"}, scalars={"pad_value": 0.0}),
    more_examples=(CONFIG_EXAMPLE,)))


def _set_mode(mnemonic: str) -> Callable[..., None]:
    def semantics(enable: bool, mode: RoundMode = RoundMode.RINT,
                  state: dict | None = None) -> None:
        _record(state, mnemonic, {"enable": bool(enable), "mode": mode})
    return semantics


def _round_modes(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    mode = attrs.get("mode", RoundMode.RINT)
    return None if mode in (RoundMode.RINT, RoundMode.ROUND) else \
        f"mode {getattr(mode, 'name', mode)} is not RINT or ROUND"


def _mode_instr(mnemonic: str, fmt: str, profiles: tuple[str, ...], where: str) -> None:
    declare(Instruction(
        mnemonic=mnemonic, family=Family.SYNC, aliases=former_names(mnemonic),
        summary=f"set the {fmt.split()[0]} matmul mode",
        operands=(),
        attrs=(Attr("enable", bool, None, f"round f32 matmul inputs to {fmt}"),
               Attr("mode", RoundMode, RoundMode.RINT, "rounding of the inputs: RINT or ROUND")),
        semantics=_set_mode(mnemonic), dtypes=None, numerics=EXACT, domain=Domain.NONE,
        pipe=Pipe.S, profiles=profiles,
        doc=f"When enabled, later f32 x f32 matmuls first round their inputs to {fmt} with "
            f"`mode` (RINT nearest-even or ROUND nearest-away; the public Tile::SetMadTF32Mode "
            f"accepts only these). This is the {where} precision mode (the public code calls "
            "the A2/A3 1-8-11 format TF32; it is HF32), so the other NPU profile lacks it."
            + _STATE_DOC.format(fields="{'enable': bool, 'mode': RoundMode}",
                                key=STATE_KEYS[mnemonic])
            + "matrix semantics that honour the mode read it there.",
        special_values="No values are computed.",
        example=Example({}, {"enable": True, "mode": RoundMode.RINT}),
        constraints=(K.custom("mode is RINT or ROUND", _round_modes, "LEGAL_ATTR"),)))


_mode_instr("SETHF32MODE", "HF32 (1-8-11)", ("cpu", "a2", "a3"), "A2/A3")
_mode_instr("SETTF32MODE", "TF32 (1-8-10)", ("cpu", "a5"), "A5")
