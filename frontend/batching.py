"""Batch loops: N-D broadcasts and batched matmuls rewritten as loops over 2-D problems.

The tiler sees a tensor as a matrix of rows (frontend/tiling.py), so an elementwise operand can
only be read whole, per row (``[..., 1]``) or per column (``[1, ..., C]``), and a matmul is
``[M, K] @ [K, N]``. Anything else numpy allows is a batch of such problems over the leading
dims: this pass, run on the tensor graph before tiling, wraps the op in a ``pto.loop`` over
those dims (one loop per dim that is not 1) whose body views each operand's slice of the batch,
computes one 2-D problem and assembles it into the result's window. The existing pipeline
does the rest: the views and assembles are places (no copies), every iteration is the same
kernel, and a loop whose body is one kernel runs inside it (decision 'Frontend tiling and
partition'). The tensor graph the user sees and the interpreter runs stay as captured.
"""
from __future__ import annotations

import dataclasses

from ..isa.diagnostics import FrontendError
from . import graph as g
from .graph import Dim, Sym
from .tiling import ELEMENTWISE, broadcast_mode, dims_equal, kind_of


def expand_batches(fn: g.Function) -> g.Function:
    """``fn`` with every N-D broadcast and batched matmul as a loop over 2-D ones (the same
    object when it has none)."""
    rw = _Rewriter(fn)
    body = rw.nodes(fn.body)
    if not rw.changed:
        return fn
    symbols = dict(fn.symbols)
    symbols.update({name: None for name in rw.indices})
    return dataclasses.replace(fn, body=body, symbols=symbols)


def tileable(shapes: list[tuple[Dim, ...]], out_shape: tuple[Dim, ...], op: g.Op) -> bool:
    """Whether operands of these shapes all have a tile form for a result of ``out_shape``."""
    try:
        for s in shapes:
            broadcast_mode(s, out_shape, op)
    except FrontendError:
        return False
    return True


def _shapes(op: g.Op) -> list[tuple[Dim, ...]]:
    return [i.shape for i in op.inputs if isinstance(i, g.TensorValue)]


def _padded(shape: tuple[Dim, ...], rank: int) -> tuple[Dim, ...]:
    return (1,) * (rank - len(shape)) + tuple(shape)


class _Rewriter:
    def __init__(self, fn: g.Function) -> None:
        self.taken = set(fn.symbols)
        self.indices: list[str] = []
        self.changed = False
        self.body: list[g.Node] = []         # the loop body being built

    def nodes(self, body: list[g.Node]) -> list[g.Node]:
        out: list[g.Node] = []
        for n in body:
            if isinstance(n, g.Loop):
                out.append(dataclasses.replace(n, body=self.nodes(n.body)))
            else:
                out.extend(self.op(n))
        return out

    def op(self, op: g.Op) -> list[g.Node]:
        kind = kind_of(op)
        if kind == "matmul":
            a, b = op.inputs[0], op.inputs[1]
            if isinstance(a, g.TensorValue) and isinstance(b, g.TensorValue) and max(a.rank, b.rank) > 2:
                return self.matmul(op, a, b)
        elif kind in ELEMENTWISE and not tileable(_shapes(op), op.outputs[0].shape, op):
            return self.elementwise(op)
        return [op]

    # ----------------------------------------------------------------------------------------
    def index(self, base: str) -> Sym:
        name, i = base, 1
        while name in self.taken:
            i += 1
            name = f"{base}_{i}"
        self.taken.add(name)
        self.indices.append(name)
        return Sym.var(name)

    def loops(self, op: g.Op, out: g.TensorValue, batch: int) -> tuple[list[Dim], list[g.Loop]]:
        """One loop per leading dim of ``out`` (of the first ``batch``) that is not 1: the index
        of each dim (0 where it is 1) and the loops, outermost first."""
        idx: list[Dim] = []
        loops: list[g.Loop] = []
        for d in range(batch):
            size = out.shape[d]
            if dims_equal(size, 1):
                idx.append(0)
                continue
            i = self.index(f"{out.name}_b{d}")
            loops.append(g.Loop(i, 0, size, 1, f"BATCH_{out.name}_{d}", [], op.loc))
            idx.append(i)
        return idx, loops

    def operand(self, op: g.Op, t: g.TensorValue, rank: int, idx: list[Dim], keep: int) -> g.TensorValue:
        """The slice of ``t`` one iteration reads: ``t`` itself when it does not vary with the
        batch, else a view of its last ``keep`` dims at the batch indices (1 where it broadcasts)."""
        p = _padded(t.shape, rank)
        batch = len(idx)
        moves = [d for d in range(batch) if not dims_equal(p[d], 1)]
        if not moves:
            return t
        offsets = tuple(idx[d] if d in moves else 0 for d in range(batch)) + (0,) * (rank - batch)
        shape = ((1,) * batch + tuple(p[batch:]))[rank - keep:]
        v = g.TensorValue(f"{t.name}_batch", tuple(shape), t.dtype, "temp", op.loc)
        self.body.append(g.Op("view", (t,), (v,), {"shape": tuple(shape), "offsets": offsets,
                                                       "valid_shape": None}, op.tiles, op.label, op.loc))
        return v

    def wrap(self, op: g.Op, loops: list[g.Loop], result: g.TensorValue, out: g.TensorValue,
             offsets: tuple[Dim, ...]) -> list[g.Node]:
        """The body assembled into ``out``'s window and nested in ``loops``."""
        self.body.append(g.Op("assemble", (result,), (out,), {"offsets": offsets}, op.tiles, op.label, op.loc))
        self.changed = True
        if not loops:
            return self.body
        for outer, inner in zip(loops, loops[1:]):
            outer.body.append(inner)
        loops[-1].body.extend(self.body)
        return [loops[0]]

    # ----------------------------------------------------------------------------------------
    def elementwise(self, op: g.Op) -> list[g.Node]:
        """The fewest leading dims of the result iterated as groups so that, within a group,
        every operand is whole, one value per row or one row (always true with all but the last)."""
        out = op.outputs[0]
        r = out.rank
        for batch in range(1, r):
            inner = (1,) * batch + tuple(out.shape[batch:])
            shapes = [(1,) * batch + _padded(s, r)[batch:] for s in _shapes(op)]
            if tileable(shapes, inner, op):
                break
        else:  # pragma: no cover - with all leading dims iterated every operand is a row or a column
            return [op]
        self.body = []
        idx, loops = self.loops(op, out, batch)
        ins = tuple(self.operand(op, i, r, idx, r) if isinstance(i, g.TensorValue) else i for i in op.inputs)
        res = g.TensorValue(f"{out.name}_group", inner, out.dtype, "temp", op.loc)
        self.body.append(dataclasses.replace(op, inputs=ins, outputs=(res,)))
        return self.wrap(op, loops, res, out, tuple(idx) + (0,) * (r - batch))

    def matmul(self, op: g.Op, a: g.TensorValue, b: g.TensorValue) -> list[g.Node]:
        """One 2-D matmul per batch index (numpy's batch broadcasting), into the result's window."""
        out = op.outputs[0]
        r = out.rank
        for t, flag in ((a, "a_trans"), (b, "b_trans")):
            if op.attrs.get(flag) and t.rank > 2 and any(not dims_equal(d, 1) for d in t.shape[:-2]):
                raise FrontendError(
                    "FRONT_MATMUL", f"matmul: {flag} on an operand with a batch has no tile form",
                    location=op.loc.location() if op.loc else None,
                    expected="a transpose flag only on a 2-D operand (shared by the whole batch)",
                    actual=f"{t} is {t.type_str()} with {flag}=True",
                    notes=["the cube reads a transposed operand as a column-major view of a whole "
                           "tensor, and one batch's matrix is a window of it; transpose the batch "
                           "explicitly (pto.transpose on each matrix) or pass it untransposed"])
        self.body = []
        idx, loops = self.loops(op, out, r - 2)
        ins = (self.operand(op, a, r, idx, 2), self.operand(op, b, r, idx, 2))
        ins = tuple(_as_matrix(self, op, t) for t in ins)
        res = g.TensorValue(f"{out.name}_batch", tuple(out.shape[-2:]), out.dtype, "temp", op.loc)
        self.body.append(dataclasses.replace(op, inputs=ins, outputs=(res,)))
        return self.wrap(op, loops, res, out, tuple(idx) + (0, 0))


def _as_matrix(rw: _Rewriter, op: g.Op, t: g.TensorValue) -> g.TensorValue:
    """A whole operand of rank > 2 whose batch dims are all 1, reshaped to its matrix."""
    if t.rank == 2:
        return t
    m = g.TensorValue(f"{t.name}_mat", tuple(t.shape[-2:]), t.dtype, "temp", op.loc)
    rw.body.append(g.Op("reshape", (t,), (m,), {"shape": tuple(t.shape[-2:])}, op.tiles, op.label, op.loc))
    return m
