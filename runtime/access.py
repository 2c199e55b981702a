"""What a task touches: which kernel parameters it reads and writes (from the instructions'
operand roles in ``isa/``), the absolute address ranges its array bindings cover,
and the core type its kernel needs (from the pipes and tile locations it uses).

Dependencies between tasks come from these ranges, so two tasks on two halves of one tensor
are independent while two tasks on the same bytes are ordered.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.lib.array_utils import byte_bounds

from ..assembler.ir import Kernel, MemRef, Subset, TileOp, View
from ..backends.arguments import written_params
from ..backends.ascend_sim.lower import UNIT_OF_BUFFER, UNIT_OF_PIPE
from ..isa.machines import buffer_name
from ..isa.spec import Kind, Role
from ..isa.types import TileType

#: the core types a task may ask for; "host" runs a Python callable on the host
CORE_TYPES: tuple[str, ...] = ("cube", "vector", "host")
#: how hard ``np.shares_memory`` may work on two strided views before they count as overlapping
SHARES_MEMORY_WORK = 100_000


@dataclass(frozen=True)
class Span:
    """Bytes ``[lo, hi)`` of the process's memory (absolute addresses: two bindings reaching one
    buffer through different Python objects, ``np.frombuffer`` twice or ``as_strided``, still
    meet), ``name`` how a report shows the binding. ``view`` is the array itself: it keeps the
    memory alive (so its addresses are not reused while the graph holds the task), and where
    its bytes have gaps (``dense`` false: a strided view) two views whose ranges interleave
    without sharing an element (column blocks of one matrix) are told apart exactly."""

    lo: int
    hi: int
    name: str
    dense: bool = True
    view: Any = field(default=None, compare=False, repr=False)

    def overlaps(self, other: "Span") -> bool:
        if not (self.lo < other.hi and other.lo < self.hi):
            return False
        if self.dense and other.dense:
            return True
        try:
            return bool(np.shares_memory(self.view, other.view, max_work=SHARES_MEMORY_WORK))
        except np.exceptions.TooHardError:          # undecided within the budget: ordered, to be safe
            return True

    def covers(self, other: "Span") -> bool:
        """Every byte of ``other`` is one of this span's (only a dense span can say so cheaply)."""
        return self.dense and self.lo <= other.lo and other.hi <= self.hi


def read_params(kernel: Kernel) -> set[str]:
    """Parameters some instruction reads: an ``in`` or ``inout`` global or tile operand whose
    memory is the parameter's (directly, or through a tensor view or tile subset)."""
    params = {p.name for p in kernel.params}
    out: set[str] = set()
    roots: dict[str, set[str]] = {}
    for s in kernel.walk():
        if isinstance(s, (View, Subset)):
            roots.setdefault(s.result.name, set()).update(roots.get(s.source.name, {s.source.name}))
        elif isinstance(s, TileOp):
            for o in s.instr.operands:
                a = s.args.get(o.name)
                if o.role is Role.OUT or a is None or o.kind not in (Kind.GLOBAL, Kind.TILE):
                    continue
                name = a.base.name if isinstance(a, MemRef) else getattr(a, "name", None)
                out |= roots.get(name, {name}) & params  # type: ignore[arg-type]
    return out


#: per kernel (by identity, the kernel kept with its answer): (reads, writes, core type). A graph
#: built per call (the frontend's) adds the same few kernels again and again; walking each
#: kernel once keeps adding a task cheap
_PER_KERNEL: dict[int, tuple[Kernel, tuple[frozenset[str], frozenset[str], str]]] = {}
_PER_KERNEL_SIZE = 512


def _analysed(kernel: Kernel) -> tuple[frozenset[str], frozenset[str], str]:
    hit = _PER_KERNEL.get(id(kernel))
    if hit is not None and hit[0] is kernel:
        return hit[1]
    found = (frozenset(read_params(kernel)), frozenset(written_params(kernel)), _core_type(kernel))
    if len(_PER_KERNEL) >= _PER_KERNEL_SIZE:
        _PER_KERNEL.pop(next(iter(_PER_KERNEL)))
    _PER_KERNEL[id(kernel)] = (kernel, found)
    return found


def kernel_access(kernel: Kernel) -> tuple[frozenset[str], frozenset[str]]:
    """(parameters read, parameters written), both derived from the declarations' roles."""
    r, w, _ = _analysed(kernel)
    return r, w


def kernel_core_type(kernel: Kernel) -> str:
    """"cube" when any instruction runs on a cube pipe (M, MTE1, FIX) or uses a cube-side tile
    (L1, L0A/B/C, bias, scaling), else "vector": the simulator's own classification."""
    return _analysed(kernel)[2]


def _core_type(kernel: Kernel) -> str:
    for s in kernel.walk():
        if not isinstance(s, TileOp):
            continue
        types = s.types()
        if UNIT_OF_PIPE.get(s.instr.pipe_for(types)) == "cube":
            return "cube"
        if any(isinstance(t, TileType) and UNIT_OF_BUFFER.get(buffer_name(t.loc)) == "cube" for t in types.values()):
            return "cube"
    return "vector"


def root_buffer(a: np.ndarray) -> Any:
    """The object owning a view's memory: the end of its ``.base`` chain."""
    root: Any = a
    while isinstance(root, np.ndarray) and root.base is not None:
        root = root.base
    return root


def array_span(a: np.ndarray, name: str) -> Span:
    """The absolute addresses an array (or view) spans: from its lowest to one past its highest
    addressed byte (a strided view's gaps included, ``dense`` false then)."""
    lo, hi = byte_bounds(a) if a.size else (a.ctypes.data, a.ctypes.data)
    return Span(int(lo), int(hi), name, not a.size or hi - lo == a.size * a.itemsize, a)


def is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray)
