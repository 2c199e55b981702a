"""The embedded execution as the reference backend uses it: the machinery lives in
``backends/comm_embedded.py``, shared with the llvm backend; this module keeps the names
importable where they always were."""
from __future__ import annotations

from ..comm_embedded import (MAX_RANKS, Agent, Embedded, accessed, check_instances, check_ranks,
                             split_ranks)

__all__ = ["MAX_RANKS", "Agent", "Embedded", "accessed", "check_instances", "check_ranks", "split_ranks"]
