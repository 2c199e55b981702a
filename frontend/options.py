"""The pipeline's knobs: what the user may steer between the tensor graph and the kernels.

One dataclass, one table of documented fields; ``Options.from_dict`` turns the ``@jit``
keyword options into it and refuses unknown or ill-typed knobs with ``FRONT_OPTION`` (a
misspelt knob that silently did nothing would be the kind of trap this frontend avoids).
docs/frontend.md ("Knobs") describes each with what it changes in the kernels.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from ..isa.diagnostics import FrontendError

#: knob -> (accepted Python types, one line saying what it changes); the docs table mirrors it
KNOBS: dict[str, tuple[tuple[type, ...], str]] = {
    "merge": ((int, type(None)), "isomorphic invocations one task covers (None: all of a kernel's "
                                  "invocations in one task; 1: one task per tile)"),
    "fuse": ((bool,), "fuse row-local chains of vector ops into one kernel (False: one kernel per op)"),
    "coalesce": ((bool,), "widen a fused kernel's tiles to whole rows when a row reduction feeds "
                          "later ops of the same kernel and the rows fit the vector buffer "
                          "(False: split the kernel there instead)"),
    "blocks": ((int,), "block_num of every launch (SPMD blocks that share a task's invocations)"),
    "tile_budget": ((int, type(None)), "bytes of vector buffer one default tile may take (None: "
                                       "a quarter of the profile's vector capacity, at most 64 KB)"),
}


@dataclass(frozen=True)
class Options:
    """The pipeline knobs (see ``KNOBS``); hashable, so they key the compile cache."""

    merge: int | None = None
    fuse: bool = True
    coalesce: bool = True
    blocks: int = 1
    tile_budget: int | None = None

    @staticmethod
    def from_dict(options: Mapping[str, Any] | None) -> "Options":
        """Checked knobs from a dict (``FRONT_OPTION`` for an unknown name or a bad value)."""
        options = dict(options or {})
        known = {f.name for f in fields(Options)}
        for name, value in options.items():
            if name not in known:
                raise FrontendError("FRONT_OPTION", f"unknown pipeline option {name!r}",
                                    expected=", ".join(sorted(known)), actual=name)
            types, _ = KNOBS[name]
            ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
            if ok and isinstance(value, int) and not isinstance(value, bool) and value < 1:
                ok = False
            if not ok:
                raise FrontendError("FRONT_OPTION", f"pipeline option {name!r} has a bad value",
                                    expected=" or ".join(t.__name__ for t in types) + " (>= 1 for ints)",
                                    actual=repr(value))
        return Options(**options)

    def vec_budget(self, capacity: int) -> int:
        """Bytes one default vector tile may take on a target with ``capacity`` bytes of UB."""
        if self.tile_budget is not None:
            return self.tile_budget
        return min(capacity // 4, 64 * 1024)
