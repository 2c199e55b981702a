"""What the comm tests share (tests/test_comm_*.py): per-rank zero arrays and the ring-exchange
example, as written or with lines replaced (a fault put in on purpose)."""
from __future__ import annotations

import pathlib
from typing import Any

import numpy as np

COMM = pathlib.Path(__file__).resolve().parents[1] / "examples" / "comm"
#: the ring example's wait: removing it makes the read of y a race
WAIT = "  twait %flag[%c0], %one {cmp = #pto.cmp<EQ>} : (!pto.memref<1xi32>, i32)\n"


def zeros(shape: tuple[int, ...], n: int, dtype: Any = np.float32) -> list[np.ndarray]:
    """One zero array per rank."""
    return [np.zeros(shape, dtype) for _ in range(n)]


def ring_text(**replace: str) -> str:
    """examples/comm/ring_exchange.pto with each ``old`` line replaced by ``new`` (each must occur)."""
    text = (COMM / "ring_exchange.pto").read_text()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    return text


def ring_args(n: int) -> dict[str, list[np.ndarray]]:
    """The ring's arguments for ``n`` ranks: rank r's x is all r + 1."""
    return {"x": [np.full((32, 32), r + 1, np.float32) for r in range(n)], "y": zeros((32, 32), n),
            "flag": zeros((1,), n, np.int32), "z": zeros((32, 32), n)}
