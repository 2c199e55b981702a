"""llvm lowering rules: axis reduce and expand instructions."""
from __future__ import annotations

from typing import Any

from ..codegen import Access, MapRule

ROW = (Access("src0", "elem", "source 0"), Access("src1", "row", "per-row source"))

RULES: dict[str, Any] = {
    "TROWEXPANDDIV": MapRule(ROW, lambda cg, op, v: cg.b.fdiv(*v)),
}
