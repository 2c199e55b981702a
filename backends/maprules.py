"""Fusable elementwise rules, shared by the code-generating backends (llvm, cupy).

A map rule says how an instruction reads each operand (``Access``) and which element function
combines the values; the backends differ only in what the element function emits (LLVM IR or
C expressions) and in how a check faults, so the rule shapes are declared here once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..assembler.ir import TileOp
from ..isa.families.reduce_expand import src0_expanded


@dataclass(frozen=True)
class Access:
    """How a map rule reads an operand: ``elem`` at (i, j); ``row`` at (i, 0) (a per-row
    value); ``block`` at (i, j mod the operand's valid columns) (a per-row block repeated
    along the row); ``col`` at (0, j); ``scalar`` once. ``what`` names it in RUNTIME_INVALID_READ.
    ``raw``: an ``elem`` read as its stored bits instead of its compute value."""

    operand: str
    kind: str = "elem"
    what: str = ""
    raw: bool = False


@dataclass(frozen=True)
class MapRule:
    """``dst[i, j] = fn(gen, op, values)`` over dst's valid region, values in ``reads`` order
    (compute values, or stored bits for ``raw`` reads); the result is in dst's compute type, or
    its stored bits when ``raw_result`` (selects must copy bits: a trip through f32 would
    quieten or canonicalise NaNs). Consecutive map rules fuse into one loop. ``gen`` is the
    backend's generator and the values its own (LLVM values, C expressions)."""

    reads: tuple[Access, ...]
    fn: Callable[[Any, TileOp, list[Any]], Any]
    dst: str = "dst"
    raw_result: bool = False
    check: Callable[[Any, TileOp], None] | None = None   # extra run-time checks
    # the rule one use of the instruction takes, when its form depends on the operand types
    choose: Callable[[TileOp], "MapRule"] | None = None

    def for_op(self, op: TileOp) -> "MapRule":
        return self.choose(op) if self.choose is not None else self


# the read shapes the elementwise families share (what = how RUNTIME_INVALID_READ names the operand)
MASK = Access("mask", "elem", "mask")
BIN = (Access("src0", "elem", "source 0"), Access("src1", "elem", "source 1"))
UN = (Access("src", "elem", "source 0"),)
TRI = BIN + (Access("src2", "elem", "source 2"),)
SRC_S = (Access("src", "elem", "source 0"), Access("scalar", "scalar", "scalar"))           # tile op scalar
FUSED = (Access("src0", "elem", "source 0"), Access("scalar", "scalar", "scalar"),           # (tile op scalar) op tile
         Access("src1", "elem", "source 1"))
COL_READS = (Access("src0", "elem", "src0"), Access("src1", "col", "per-column source"))     # TCOLEXPAND*


def row_expand_rule(fn: Callable[[Any, TileOp, list[Any]], Any],
                    block_check: Callable[[str], Callable[[Any, TileOp], None]]) -> MapRule:
    """The row-expand binary rule (TROWEXPANDADD ...): one fusable form per (which source is
    the per-row one, one value per row or one 32-byte block per row); ``block_check(operand)``
    is the backend's run-time check of a block-form source's valid columns."""
    forms: dict[tuple[bool, bool], MapRule] = {}
    for first in (False, True):
        vec, full = ("src0", "src1") if first else ("src1", "src0")
        for mode1 in (True, False):
            reads = {full: Access(full, "elem", full),
                     vec: Access(vec, "row" if mode1 else "block", "per-row source")}
            forms[first, mode1] = MapRule((reads["src0"], reads["src1"]), fn,
                                          check=None if mode1 else block_check(vec))

    def choose(op: TileOp) -> MapRule:
        first = src0_expanded({n: op.args[n].type for n in ("dst", "src0")})   # type: ignore[union-attr]
        vec = op.args["src0" if first else "src1"].type   # type: ignore[union-attr]
        return forms[first, vec.valid_cols == 1]
    return MapRule(forms[False, True].reads, fn, choose=choose)
