"""llvm lowering rules: sync instructions."""
from __future__ import annotations

from typing import Any

RULES: dict[str, Any] = {}
