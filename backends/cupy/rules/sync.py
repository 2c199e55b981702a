"""cupy lowering rules: flags, barriers and tsync.

A block's threads run the program in order and join at ``PTO_SYNC()`` after every tile
instruction, so these only validate their operands with the reference's fault codes
(``isa/families/sync.py``): pipes are literal (checked here, faulting when reached), event ids
may be run-time values and are checked in the generated code.
"""
from __future__ import annotations

from typing import Any

from ....assembler.ir import PipeLit, TileOp
from ....isa.families.sync import EVENT_IDS
from ....isa.types import Pipe
from ..codegen import Gen


def _always(g: Gen, code: str, message: str, expected: str, actual: str) -> None:
    """A fault the operands make certain: raised when the kernel reaches it."""
    esc = (lambda s: s.replace("{", "{{").replace("}", "}}"))
    g.fault("true", code, message, expected=esc(expected), actual=esc(actual))


def _pipe(g: Gen, op: TileOp, name: str) -> Pipe | None:
    a = op.args.get(name)
    if isinstance(a, PipeLit) and isinstance(a.pipe, Pipe):
        return a.pipe
    _always(g, "RUNTIME_BAD_PIPE", f"{name} is not a pipe", " ".join(p.value for p in Pipe), repr(a))
    return None


def _event_id(g: Gen, op: TileOp) -> None:
    v = g.scalar(op, "event_id")
    if v is None:
        _always(g, "RUNTIME_EVENT_ID", "event id out of range", f"an integer in [0, {EVENT_IDS})", "None")
        return
    g.fault(f"{v} < 0 || {v} >= {EVENT_IDS}", "RUNTIME_EVENT_ID", "event id out of range",
            expected=f"an integer in [0, {EVENT_IDS})", actual="{0}", details=[v])


def _flag(g: Gen, op: TileOp) -> None:
    """SET_FLAG / WAIT_FLAG: two different concrete pipes and an event id in 0..7."""
    src, dst = _pipe(g, op, "src_pipe"), _pipe(g, op, "dst_pipe")
    if src is None or dst is None:
        return
    for what, p in (("src_pipe", src), ("dst_pipe", dst)):
        if p is Pipe.ALL:
            _always(g, "RUNTIME_BAD_PIPE", f"{what} cannot be ALL in a flag", "a single pipe", "ALL")
            return
    if src is dst:
        _always(g, "RUNTIME_SAME_PIPE", "a flag must join two different pipes", "src_pipe != dst_pipe",
                f"{src.value} -> {dst.value}")
        return
    _event_id(g, op)


def _pipe_barrier(g: Gen, op: TileOp) -> None:
    _pipe(g, op, "pipe")


def _tsync(g: Gen, op: TileOp) -> None:
    event, pipe = op.args.get("event"), op.args.get("pipe")
    if (event is None) == (pipe is None):
        _always(g, "RUNTIME_SYNC_FORM", "tsync takes either an event or a pipe", "exactly one of event, pipe",
                "both" if event is not None else "neither")
        return
    if pipe is not None:
        _pipe(g, op, "pipe")


RULES: dict[str, Any] = {"SET_FLAG": _flag, "WAIT_FLAG": _flag, "PIPE_BARRIER": _pipe_barrier, "TSYNC": _tsync}
