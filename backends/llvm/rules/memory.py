"""llvm lowering rules: memory instructions (global tensors <-> tiles)."""
from __future__ import annotations

from typing import Any

from ....assembler.ir import TileOp
from .. import numerics as N
from ..codegen import KernelCodegen


def _tload(cg: KernelCodegen, op: TileOp) -> None:
    dst = cg.tile(op, "dst")
    src = cg.glob(op, "src")
    origin, rs, cs = src.window(cg, dst.vrows, dst.vcols, "TLOAD source")
    b = cg.b
    with cg.loop(0, dst.vrows, name="r") as i:
        with cg.loop(0, dst.vcols, name="c") as j:
            raw = b.load(src.element(b, origin, rs, cs, i, j), typ=src.elem)
            dst.store_raw(b, i, j, raw)


def _tstore(cg: KernelCodegen, op: TileOp) -> None:
    src = cg.tile(op, "src")
    dst = cg.glob(op, "dst")
    origin, rs, cs = dst.window(cg, src.vrows, src.vcols, "TSTORE destination")
    b = cg.b
    with cg.loop(0, src.vrows, name="r") as i:
        with cg.loop(0, src.vcols, name="c") as j:
            v = src.load(b, i, j)
            b.store(N.store(b, dst.dtype, v), dst.element(b, origin, rs, cs, i, j))


RULES: dict[str, Any] = {"TLOAD": _tload, "TSTORE": _tstore}
