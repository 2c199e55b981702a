"""``pto.subset`` in generated code (decision "pto.subset").

A child tile keeps its own contiguous workspace buffer, so every lowering rule (several read a
tile as flat bytes) works on it unchanged, and the window's aliasing is made explicit: before
an instruction that names the child, the window is copied from the tile owning the storage
(the root: a subset of a subset names a window of the root); after an instruction that writes
the child, the window is copied back. Both copies take the whole static window, so what the
instruction leaves alone keeps the parent's values, and between instructions the parent holds
every element: writes through either are seen by the other, as the reference's numpy view
shows them. The copies are explicit loads and stores of each tile, so the per-tile alias
scopes stay true.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...assembler.ir import Subset
from ...isa.types import TileType
from . import numerics as N

if TYPE_CHECKING:
    from .codegen import KernelCodegen, TileRef

I64 = N.I64


def define(cg: "KernelCodegen", s: Subset) -> None:
    """Check the window against the parent's static shape (RUNTIME_OOB, in the reference's
    order), store the child's valid region and its offsets in the root."""
    b = cg.b
    parent: TileType = s.source.type   # type: ignore[assignment]
    child: TileType = s.result.type    # type: ignore[assignment]
    offs = [cg.index(o) for o in s.offsets]
    zero = cg.i64(0)
    for d, (o, n, ext) in enumerate(zip(offs, child.shape, parent.shape)):
        bad = b.or_(b.icmp_signed("<", o, zero), b.icmp_signed(">", o, cg.i64(ext - n)))
        cg.fault(bad, "RUNTIME_OOB", f"pto.subset %{s.result.name}: the window is outside the parent in dim {d}",
                 expected=f"offset >= 0, offset + {n} <= {ext}", actual="offset {0}", details=[o])
    src = cg.tile(s.source)
    valid = []
    for o, n, pv in zip(offs, child.shape, (src.vrows, src.vcols)):
        left = b.sub(pv, o)
        left = b.select(b.icmp_signed("<", left, zero), zero, left)
        valid.append(b.select(b.icmp_signed("<", left, cg.i64(n)), left, cg.i64(n)))
    name = s.result.name
    if name in cg._dyn_valid:
        for v, slot in zip(valid, cg._dyn_valid[name]):
            b.store(v, slot)
    root, base = cg.windows.get(s.source.name, (s.source.name, None))
    if name not in cg.window_slots:
        cg.window_slots[name] = (cg.alloca(I64, name + ".r0"), cg.alloca(I64, name + ".c0"))
    for d, slot in enumerate(cg.window_slots[name]):
        o = offs[d] if base is None else b.add(offs[d], b.load(cg.window_slots[base][d], typ=I64))
        b.store(o, slot)
    cg.windows[name] = (root, name)


def _pairs(cg: "KernelCodegen", name: str) -> tuple["TileRef", "TileRef", list]:
    root, _ = cg.windows[name]
    offs = [cg.b.load(slot, typ=I64) for slot in cg.window_slots[name]]
    return cg.tiles[name], cg.tiles[root], offs


def copy_in(cg: "KernelCodegen", name: str) -> None:
    """The child's buffer := its window of the root."""
    child, root, (r0, c0) = _pairs(cg, name)
    b = cg.b
    with cg.loop(0, child.rows, name="sub.r") as i:
        with cg.loop(0, child.cols, name="sub.c") as j:
            v = root.load_raw(b, b.add(i, r0), b.add(j, c0))
            child.store_raw(b, i, j, v)


def copy_out(cg: "KernelCodegen", name: str) -> None:
    """The root's window := the child's buffer."""
    child, root, (r0, c0) = _pairs(cg, name)
    b = cg.b
    with cg.loop(0, child.rows, name="sub.r") as i:
        with cg.loop(0, child.cols, name="sub.c") as j:
            root.store_raw(b, b.add(i, r0), b.add(j, c0), child.load_raw(b, i, j))
