"""cupy lowering rules: TMOV and TEXTRACT between tiles of one dtype (bit copies).

Tiles are row-major in every location, so moving between locations (mat -> left, acc -> vec)
is a copy of the valid region (ReLU'd on the relu attribute). The converting, scaling and dual-vector forms are refused
by the backend's ``unsupported`` (they are not lowered here).
"""
from __future__ import annotations

from typing import Any

from ....assembler.ir import TileOp
from ....isa.attrs import ReluMode
from ..codegen import CTile, Gen


def _moved(g: Gen, op: TileOp, src: CTile, i: str, j: str) -> str:
    """src[i, j]'s bits, ReLU'd when the relu attribute asks (x > 0 or NaN keeps its bits,
    everything else, -0 included, becomes +0; masks pass)."""
    raw = src.at(i, j)
    if g.attrs(op).get("relu", ReluMode.NONE) is not ReluMode.RELU or src.dtype.kind == "bool":
        return raw
    v = src.load(i, j)
    keep = f"({v} > 0.0f || {v} != {v})" if src.dtype.is_float else f"({v} > 0)"
    return f"({keep} ? {raw} : ({type_of(src)})0)"


def type_of(t: CTile) -> str:
    from ..ctypes_ import storage
    return storage(t.dtype)


def _tmov(g: Gen, op: TileOp) -> None:
    """dst[i, j] = src[i, j] over src's valid region, which must fit dst's."""
    dst, src = g.tile(op, "dst"), g.tile(op, "src")
    g.check_write(dst, src.vr, src.vc, "destination")
    if dst.name == src.name and g.attrs(op).get("relu", ReluMode.NONE) is not ReluMode.RELU:
        return
    with g.elements(src.vr, src.vc) as (i, j):
        g.line(f"{dst.at(i, j)} = {_moved(g, op, src, i, j)};")


def _textract(g: Gen, op: TileOp) -> None:
    """dst[i, j] = src[r0 + i, c0 + j] over dst's valid region; the window must lie in src's."""
    dst, src = g.tile(op, "dst"), g.tile(op, "src")
    r0, c0 = g.scalar(op, "r0"), g.scalar(op, "c0")
    r, c = dst.vr, dst.vc
    g.fault(f"{r0} < 0 || {c0} < 0 || {r0} > {src.vr} - ({r}) || {c0} > {src.vc} - ({c})", "RUNTIME_OOB",
            "the window leaves the source's valid region", expected="inside {0}x{1}",
            actual="rows [{2}, {2+4}), cols [{3}, {3+5})", details=[src.vr, src.vc, r0, c0, r, c])   # type: ignore[list-item]
    with g.elements(r, c) as (i, j):
        g.line(f"{dst.at(i, j)} = {_moved(g, op, src, f'{r0} + {i}', f'{c0} + {j}')};")


RULES: dict[str, Any] = {"TMOV": _tmov, "TEXTRACT": _textract}
