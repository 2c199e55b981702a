"""cupy lowering rules: TLOAD and TSTORE between global tensors and tiles.

The window is checked against the tensor's shape before any element moves (RUNTIME_OOB, as the
reference's); the elements are then spread over the block's threads (consecutive threads take
consecutive columns, so a contiguous row is read and written coalesced on the GPU). Plain
global layouts only (ND, DN, NZ: a strided matrix); a store converts between float dtypes
(one rounding) and otherwise copies bits. ``unsupported`` (backend) refuses the other forms.
"""
from __future__ import annotations

from typing import Any

from ....assembler.ir import TileOp
from .. import ctypes_ as C
from ..codegen import Gen


def _tload(g: Gen, op: TileOp) -> None:
    """Bit-exact copy of dst's valid region from the window."""
    dst, src = g.tile(op, "dst"), g.glob(op, "src")
    o, rs, cs = g.window(src, dst.vr, dst.vc, "TLOAD source")
    with g.elements(dst.vr, dst.vc) as (i, j):
        g.line(f"{dst.at(i, j)} = {o}[({i}) * {rs} + ({j}) * {cs}];")


def _tstore(g: Gen, op: TileOp) -> None:
    """src's valid region into the window: bits when the dtypes agree, else converted once."""
    src, dst = g.tile(op, "src"), g.glob(op, "dst")
    o, rs, cs = g.window(dst, src.vr, src.vc, "TSTORE destination")
    with g.elements(src.vr, src.vc) as (i, j):
        v = src.at(i, j) if src.dtype == dst.dtype else C.store(dst.dtype, src.load(i, j))
        g.line(f"{o}[({i}) * {rs} + ({j}) * {cs}] = {v};")


RULES: dict[str, Any] = {"TLOAD": _tload, "TSTORE": _tstore}
