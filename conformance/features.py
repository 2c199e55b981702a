"""What a level-3 program really exercises, read from its IR and call arguments (not from
what the generator meant to build), so that the L3 coverage record cannot claim a feature a
changed generator stopped producing.

- ``matrix-pipeline``: one kernel loads into a mat tile, moves mat to left or right, writes
  an acc tile with a matrix instruction and takes the acc tile out (a store, or a move to a
  vec tile);
- ``acc-in-place``: a matrix instruction whose acc input is its destination, inside a loop
  that runs at least twice;
- ``in-place-chain``: two or more consecutive elementwise steps of one region, each writing
  a tile it reads.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..assembler.ir import Const, For, If, Kernel, MemRef, Module, Stmt, TileOp, Value
from ..isa.spec import Family, Kind, Role
from ..isa.types import Location, TileType
from .coverage import PROGRAM_FEATURES

#: the features, in report order (their legend is coverage.PROGRAM_FEATURES)
FEATURES = tuple(PROGRAM_FEATURES)
ELEMENTWISE = frozenset({Family.ELEMENTWISE, Family.TILE_SCALAR})


def _inputs(op: TileOp) -> list[Value]:
    return [v for o in op.instr.operands if o.role is Role.IN and o.kind is Kind.TILE
            for v in [op.args.get(o.name)] if isinstance(v, Value)]


def _loc(v: Any) -> Location | None:
    return v.type.loc if isinstance(v, Value) and isinstance(v.type, TileType) else None


def _in_place(op: TileOp) -> bool:
    return any(r in _inputs(op) for r in op.results)


class _Scalars:
    """Index values known before a run: constants and parameters called with fixed values."""

    def __init__(self, kernel: Kernel, values: Mapping[str, Any]) -> None:
        self.known = {s.result.name: s.value for s in kernel.walk() if isinstance(s, Const)}
        self.known.update({k: v for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool)})

    def __call__(self, b: Any) -> int | None:
        if isinstance(b, int):
            return b
        v = self.known.get(b.name) if isinstance(b, Value) else None
        return int(v) if isinstance(v, (int, float)) else None

    def trips(self, loop: For) -> int:
        lb, ub, step = (self(x) for x in (loop.lb, loop.ub, loop.step))
        if lb is None or ub is None or not step or step < 0:
            return 0
        return max(0, -(-(ub - lb) // step))


def kernel_features(kernel: Kernel, values: Mapping[str, Any]) -> set[str]:
    """The features of one kernel called with ``values`` (its fixed scalar arguments)."""
    scalars = _Scalars(kernel, values)
    out: set[str] = set()
    seen = {"load-mat": False, "to-left-right": False, "into-acc": False, "out-of-acc": False}

    def region(body: Iterable[Stmt], trips: int) -> None:
        run = 0
        for s in body:
            if isinstance(s, For):
                region(s.body, trips * scalars.trips(s))
            elif isinstance(s, If):
                region(s.then_body, trips)
                region(s.else_body, trips)
            if not isinstance(s, TileOp):
                run = 0 if isinstance(s, (For, If)) else run
                continue
            ins, outs = _inputs(s), s.results
            mem = [a for a in s.args.values() if isinstance(a, MemRef)]
            seen["load-mat"] |= bool(mem) and any(_loc(r) is Location.MAT for r in outs)
            seen["to-left-right"] |= any(_loc(v) is Location.MAT for v in ins) and any(
                _loc(r) in (Location.LEFT, Location.RIGHT) for r in outs)
            matrix = s.instr.family is Family.MATRIX and any(_loc(r) is Location.ACC for r in outs)
            seen["into-acc"] |= matrix
            seen["out-of-acc"] |= any(_loc(v) is Location.ACC for v in ins) and (
                bool(mem) or any(_loc(r) is Location.VEC for r in outs))
            if matrix and _in_place(s) and trips >= 2:
                out.add("acc-in-place")
            run = run + 1 if s.instr.family in ELEMENTWISE and _in_place(s) else 0
            if run >= 2:
                out.add("in-place-chain")

    region(kernel.body, 1)
    if all(seen.values()):
        out.add("matrix-pipeline")
    return out


def program_features(module: Module, calls: Iterable[tuple[str, Mapping[str, Any]]]) -> set[str]:
    """The features of a module's kernels, each called as ``calls`` gives (kernel name, its
    fixed scalar arguments)."""
    out: set[str] = set()
    for name, values in calls:
        out |= kernel_features(module.kernel(name), values)
    return out
