"""``!pto.tpipe<...>``: the public TPipe, a cube-vector FIFO's compile-time configuration.

The public pages type a pipe operand of TPUSH / TPOP (and, in C++, TALLOC / TFREE) as
``!pto.tpipe<...>`` without spelling its body; openpto's body is the C++ template's
parameters in order: ``FlagID, Dir, SlotSize, SlotNum[, LocalSlotNum[, IsNoSplit[,
EnUnitFlag]]]`` (each may also be written ``name=value``). A pipe is not a run-time value:
the assembler maps every use onto the FIFO attributes FlagID and SlotNum the instructions
declare (decision "The !pto.tpipe spelling"), so this module only reads the type and says
which FIFO a push or pop of a given side names.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .diagnostics import ParseError
from .families.system import FLAG_IDS, MAX_SLOTS

FLAGS_PER_WAY = 2        # a direction uses FlagID (data ready) and FlagID + 1 (slot free)


class PipeDir(enum.IntEnum):
    """The header's Direction values (the *_GM forms are A5's GM-backed paths)."""

    DIR_C2V = 1
    DIR_V2C = 2
    DIR_BOTH = 3
    DIR_V2C_CTRL = 4
    DIR_C2V_GM = 5
    DIR_V2C_GM = 6
    DIR_BOTH_GM = 7


class Way(enum.Enum):
    """One direction of traffic through a pipe."""

    C2V = "cube -> vector"
    V2C = "vector -> cube"


WAYS: dict[PipeDir, tuple[Way, ...]] = {
    PipeDir.DIR_C2V: (Way.C2V,), PipeDir.DIR_C2V_GM: (Way.C2V,),
    PipeDir.DIR_V2C: (Way.V2C,), PipeDir.DIR_V2C_GM: (Way.V2C,),
    PipeDir.DIR_BOTH: (Way.C2V, Way.V2C), PipeDir.DIR_BOTH_GM: (Way.C2V, Way.V2C),
}

_NAMES = {  # accepted parameter names (compared without case or '_') -> field
    "flagid": "flag_id", "flag": "flag_id", "dir": "dir", "dirtype": "dir", "direction": "dir",
    "slotsize": "slot_size", "slotnum": "slot_num", "localslotnum": "local_slot_num",
    "isnosplit": "no_split", "nosplit": "no_split", "enunitflag": "unit_flag", "unitflag": "unit_flag",
}
_ORDER = ("flag_id", "dir", "slot_size", "slot_num", "local_slot_num", "no_split", "unit_flag")
_FORM = "!pto.tpipe<FlagID, Dir, SlotSize, SlotNum[, LocalSlotNum[, IsNoSplit[, EnUnitFlag]]]>"


@dataclass(frozen=True)
class PipeType:
    """A TPipe's parameters; ``flags`` are the hardware flags it claims."""

    flag_id: int
    dir: PipeDir
    slot_size: int
    slot_num: int
    local_slot_num: int = 2
    no_split: bool = False
    unit_flag: bool = False

    @property
    def ways(self) -> tuple[Way, ...]:
        return WAYS[self.dir]

    @property
    def flags(self) -> range:
        return range(self.flag_id, self.flag_id + FLAGS_PER_WAY * len(self.ways))

    def fifo(self, way: Way) -> int:
        """The FlagID attribute of this pipe's FIFO for ``way``: a bidirectional pipe's
        vector -> cube FIFO is FlagID + 2, as the headers' second flag pair."""
        return self.flag_id + (FLAGS_PER_WAY if way is Way.V2C and len(self.ways) == 2 else 0)

    def spell(self) -> str:
        extra = [str(self.local_slot_num), str(self.no_split).lower(), str(self.unit_flag).lower()]
        while extra and extra[-1] == ("2", "false", "false")[len(extra) - 1]:
            extra.pop()
        return (f"!pto.tpipe<{self.flag_id}, {self.dir.name}, {self.slot_size}, {self.slot_num}"
                + "".join(", " + e for e in extra) + ">")

    def __str__(self) -> str:
        return self.spell()


def _fail(text: str, msg: str, expected: object = _FORM) -> ParseError:
    return ParseError("PARSE_TYPE", f"{msg} in type '{text}'", expected=expected)


def _int(text: str, name: str, tok: str) -> int:
    t = tok.strip()
    try:
        return int(t, 0) if t.lstrip("-").isalnum() and len(t) <= 20 else int("x")
    except ValueError:
        raise _fail(text, f"{name} '{t}' is not an integer", expected="an integer") from None


def _dir(text: str, tok: str) -> PipeDir:
    t = tok.strip().rpartition("::")[2]
    if t.isdigit() and int(t) in PipeDir._value2member_map_:
        return PipeDir(int(t))
    key = t.upper() if t.upper().startswith("DIR_") else "DIR_" + t.upper()
    if key not in PipeDir.__members__:
        raise _fail(text, f"unknown direction '{tok.strip()}'", expected=", ".join(PipeDir.__members__))
    return PipeDir[key]


def _bool(text: str, name: str, tok: str) -> bool:
    t = tok.strip().lower()
    if t not in ("true", "false", "0", "1"):
        raise _fail(text, f"{name} '{tok.strip()}' is not a boolean", expected="true, false, 0 or 1")
    return t in ("true", "1")


def parse_tpipe(text: str) -> PipeType:
    """Read ``!pto.tpipe<...>``; PARSE_TYPE for a malformed body or a parameter out of range."""
    t = text.strip()
    if not (t.startswith("!pto.tpipe<") and t.endswith(">")):
        raise _fail(t, "not a pipe type")
    body = t[len("!pto.tpipe<"):-1].strip()
    parts = [p.strip() for p in body.split(",")] if body else []
    got: dict[str, str] = {}
    named = False
    for k, p in enumerate(parts):
        name, eq, value = p.partition("=")
        if eq:
            named = True
            field_ = _NAMES.get(name.strip().lower().replace("_", ""))
            if field_ is None:
                raise _fail(t, f"unknown pipe parameter '{name.strip()}'", expected=", ".join(_ORDER))
        elif named or k >= len(_ORDER):
            raise _fail(t, "a positional parameter after a named one, or too many parameters")
        else:
            field_, value = _ORDER[k], p
        if field_ in got:
            raise _fail(t, f"pipe parameter {field_} given twice", expected="each parameter once")
        if not value.strip():
            raise _fail(t, f"empty pipe parameter {field_}")
        got[field_] = value
    missing = [f for f in _ORDER[:4] if f not in got]
    if missing:
        raise _fail(t, f"missing pipe parameter(s) {', '.join(missing)}")
    d = _dir(t, got["dir"])
    pipe = PipeType(_int(t, "FlagID", got["flag_id"]), d, _int(t, "SlotSize", got["slot_size"]),
                    _int(t, "SlotNum", got["slot_num"]), _int(t, "LocalSlotNum", got.get("local_slot_num", "2")),
                    _bool(t, "IsNoSplit", got.get("no_split", "false")),
                    _bool(t, "EnUnitFlag", got.get("unit_flag", "false")))
    if d is PipeDir.DIR_V2C_CTRL:
        raise _fail(t, "DIR_V2C_CTRL carries a 32-bit control signal, not a tile; openpto's FIFO instructions "
                    "move tiles", expected="DIR_C2V, DIR_V2C, DIR_BOTH or a *_GM direction")
    if pipe.flag_id < 0 or pipe.flags.stop > FLAG_IDS:
        raise _fail(t, f"FlagID {pipe.flag_id} with {d.name} claims flags {pipe.flags.start}.."
                    f"{pipe.flags.stop - 1}", expected=f"flags within 0..{FLAG_IDS - 1} (FlagID + "
                    f"{pipe.flags.stop - pipe.flag_id - 1} < {FLAG_IDS})")
    if not 1 <= pipe.slot_num <= MAX_SLOTS:
        raise _fail(t, f"SlotNum {pipe.slot_num} out of range", expected=f"1..{MAX_SLOTS}")
    if pipe.slot_size < 1 or pipe.local_slot_num < 1:
        raise _fail(t, "SlotSize and LocalSlotNum must be positive",
                    expected="SlotSize >= 1 byte, LocalSlotNum >= 1")
    return pipe
