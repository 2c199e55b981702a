"""llvm lowering rules: elementwise tile-tile instructions (fusable map rules)."""
from __future__ import annotations

from typing import Any

from llvmlite import ir

from ..codegen import Access, MapRule

BIN = (Access("src0", "elem", "source 0"), Access("src1", "elem", "source 1"))


def _is_float(v: ir.Value) -> bool:
    return isinstance(v.type, ir.FloatType)


RULES: dict[str, Any] = {
    "TADD": MapRule(BIN, lambda cg, op, v: cg.b.fadd(*v) if _is_float(v[0]) else cg.b.add(*v)),
}
