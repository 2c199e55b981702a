"""Deliberately broken backends for the reproducer tests, importable by name from any
directory as ``openpto.tests.reproducer_backends:ATTR`` (what a ``// run:`` line names)."""
from __future__ import annotations

import numpy as np

from openpto.backends.reference import ReferenceBackend
from openpto.isa import Tile


def rowsum_skips_last_column(dst: Tile, src: Tile, **_: object) -> None:
    """TROWSUM as an off-by-one loop bound would compute it: the last valid column is lost."""
    r, c = src.valid
    total = src.data[:r, :max(c - 1, 0)].astype(np.float64).sum(axis=1, keepdims=True)
    dst.write(total.astype(dst.data.dtype), r, 1)


class RowSumSkipsLastColumn(ReferenceBackend):
    name = "rowsum-skips-last-column"
    rules = dict(ReferenceBackend.rules, TROWSUM=rowsum_skips_last_column)
