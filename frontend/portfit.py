"""Tile shapes that clear a profile's capacity blockers, found by compiling again.

The knobs are the user's own: each ``set_vec_tile_shapes`` / ``set_cube_tile_shapes`` call (its
line and value) whose ops run in a kernel that overflows a buffer. A candidate changes the
values those calls set in the captured graph and goes through the same lowering and verifier as
the report (port.judge): it *fits* when no capacity blocker is left and no blocker appears that
the original compile did not have. The search first halves the largest extent until a
candidate fits, then tries the larger shapes in between, largest (most elements) first, so the
shapes reported are the largest that fit among power-of-two shrinks of the user's (every
reported shape was compiled and verified). One knob at a time first; when no single knob is
enough, all the blocked kernels' knobs shrink together.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

from . import graph as g
from .options import Options
from .port import Blocker, Verdict, judge

#: most candidate compiles of one refinement (the halving steps come on top: log2 per extent)
REFINE_LIMIT = 48
#: most equally large fitting shapes reported per search
TIES = 3
#: shrinks enumerated for the refinement at most (more extents: the halving's shape alone)
SPACE_LIMIT = 20000


@dataclass(frozen=True)
class Knob:
    """One tile-shape setting of the program: ``kind`` "vec" or "cube", the value it sets and
    the line that sets it (None: the line is unknown). ``default``: a matmul recorded without
    cube tile shapes (``value`` the tiles the pipeline chose, ``where`` the matmul's line): the
    setting the user could add before it."""

    kind: str
    value: object                        # tuple[int, ...] (vec) or graph.CubeTiles (cube)
    where: g.SourceLoc | None
    default: bool = False

    def key(self) -> tuple:
        at = (self.where.file, self.where.line, self.where.col) if self.where is not None else None
        return (self.kind, None if self.default else self.value, at, self.default)

    def governs(self, op: g.Op, value: object = None) -> bool:
        """Whether ``op`` is tiled by this setting: recorded under it (with its value, or the
        candidate ``value`` when the pipeline copied the op while it was set)."""
        if _kind(op) != self.kind:
            return False
        t = op.tiles
        if self.default:
            return t.cube in (None, value) and _same_line(op.loc, self.where)
        got, loc = (t.vec, t.vec_loc) if self.kind == "vec" else (t.cube, t.cube_loc)
        return got is not None and got in (self.value, value) and _same_line(loc, self.where)

    def dims(self) -> tuple[int, ...]:
        """The extents the search shrinks: a vector tile's sizes, a cube tile's L0 m, k, n."""
        if self.kind == "vec":
            return tuple(self.value)  # type: ignore[arg-type]
        c = self.value
        return (c.m[0], c.k[0], c.n[0])  # type: ignore[attr-defined]

    def with_dims(self, dims: tuple[int, ...]) -> object:
        """The value setting ``dims`` (a cube pair keeps its L1 size unless it equalled L0)."""
        if self.kind == "vec":
            return tuple(dims)
        c = self.value

        def pair(old: tuple[int, int], new: int) -> tuple[int, int]:
            return (new, new) if old[0] == old[1] else (new, max(old[1], new))
        return replace(c, m=pair(c.m, dims[0]), k=pair(c.k, dims[1]), n=pair(c.n, dims[2]))  # type: ignore

    def call(self, value: object = None) -> str:
        """The API call that sets ``value`` (default: the current one), as the user writes it;
        for a default knob the scoped ``pto.cube_tile_shapes(...)`` to wrap the matmul in."""
        v = self.value if value is None else value
        if self.kind == "vec":
            return f"pto.set_vec_tile_shapes({', '.join(map(str, v))})"  # type: ignore[call-overload]

        if self.default and value is None:
            return f"now the pipeline's default {v.m[0]} x {v.k[0]} x {v.n[0]}"  # type: ignore[attr-defined]

        def one(p: tuple[int, int]) -> str:
            return str(p[0]) if p[0] == p[1] else f"[{p[0]}, {p[1]}]"
        split = ", enable_split_k=True" if v.split_k else ""  # type: ignore[attr-defined]
        name = "cube_tile_shapes" if self.default else "set_cube_tile_shapes"
        return f"pto.{name}({one(v.m)}, {one(v.k)}, {one(v.n)}{split})"  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Fit:
    """Tile shapes that clear every capacity blocker of ``profile``: each knob with its new
    value; compiled and verified with those values."""

    profile: str
    changes: tuple[tuple[Knob, object], ...]



def _same_line(a: g.SourceLoc | None, b: g.SourceLoc | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.file, a.line, a.col) == (b.file, b.line, b.col)


def knobs_of(nodes: list[Any]) -> list[Knob]:
    """The distinct tile-shape settings the tiled ops (tiling.TileNode) were recorded under;
    a matmul without cube tile shapes is a knob of its own (its default tiles)."""
    out: dict[tuple, Knob] = {}
    for n in nodes:
        op, t = n.op, n.op.tiles
        kind = _kind(op)
        value, loc = (t.vec, t.vec_loc) if kind == "vec" else (t.cube, t.cube_loc)
        if value is not None:
            k = Knob(kind, value, loc)
        elif kind == "cube" and n.kind == "matmul" and op.loc is not None:
            (tm, tk), tn = n.tile, n.extra["tn"]
            k = Knob("cube", g.CubeTiles((tm, tm), (tk, tk), (tn, tn)), op.loc, default=True)
        else:
            continue
        out.setdefault(k.key(), k)
    return list(out.values())


def _kind(op: g.Op) -> str:
    """Which setting tiles ``op``: the cube tile shapes a matmul, the vector ones the rest."""
    return "cube" if op.name == "matmul" else "vec"


def _apply(fn: g.Function, changes: tuple[tuple[Knob, object], ...]) -> list[tuple[g.Op, g.TileConfig]]:
    """Set the new values on the ops each knob governs; returns what to restore."""
    saved = []
    for op in fn.walk():
        new = op.tiles
        for knob, value in changes:
            if knob.governs(op):
                new = replace(new, **{knob.kind: value})
        if new is not op.tiles:
            saved.append((op, op.tiles))
            op.tiles = new
    return saved


def _verdict(fn: g.Function, opts: Options, profile: str,
             changes: tuple[tuple[Knob, object], ...]) -> Verdict:
    """The compile's verdict with ``changes`` set (the graph is restored after)."""
    saved = _apply(fn, changes)
    try:
        return judge(fn, profile, opts)
    finally:
        for op, t in saved:
            op.tiles = t


def _cleared(v: Verdict, baseline: set[tuple], changes: tuple[tuple[Knob, object], ...],
             only_theirs: bool) -> bool:
    """No blocker the original compile did not have, and no capacity blocker left: none at
    all, or (``only_theirs``) none in a kernel running an op recorded under the changed knobs."""
    for b in v.blockers:
        if b.kind != "capacity":
            if b.key() not in baseline:
                return False
            continue
        if not only_theirs:
            return False
        if any(k.governs(op, value) for op in v.ops(b.kernel) for k, value in changes):
            return False
    return True


def _below(d: int) -> Iterator[int]:
    """``d`` and the powers of two under it, largest first."""
    yield d
    p = 1 << (max(d - 1, 1).bit_length() - 1)
    while p >= 1:
        if p < d:
            yield p
        p //= 2


def _halve(d: int) -> int:
    return next(itertools.islice(_below(d), 1, None), 1)


def _search(knobs: list[Knob], ok: Callable[[tuple[tuple[Knob, object], ...]], bool],
            profile: str) -> list[Fit]:
    """The largest fitting shapes for ``knobs`` shrunk together (empty: none fits)."""
    start = [k.dims() for k in knobs]
    flat = [d for ds in start for d in ds]

    def changes(v: list[int]) -> tuple[tuple[Knob, object], ...]:
        out, i = [], 0
        for k, ds in zip(knobs, start):
            out.append((k, k.with_dims(tuple(v[i:i + len(ds)]))))
            i += len(ds)
        return tuple(out)

    cur = list(flat)
    while True:                          # halve the largest extent (the first of equals) until it fits
        big = max(range(len(cur)), key=lambda i: (cur[i], -i))
        if cur[big] <= 1:
            return []
        cur[big] = _halve(cur[big])
        if ok(changes(cur)):
            break
    floor = math.prod(cur)
    choices = [list(_below(d)) for d in flat]
    space = math.prod(len(c) for c in choices)
    between = [c for c in itertools.product(*choices) if math.prod(c) >= floor and list(c) not in (flat, cur)] \
        if space <= SPACE_LIMIT else []
    order = (lambda c: (-math.prod(c), tuple(-x for x in reversed(c))))
    between.sort(key=order)
    found: list[tuple[int, ...]] = []
    for c in between[:REFINE_LIMIT]:
        if len(found) >= TIES or (found and math.prod(c) < math.prod(found[0])):
            break
        if ok(changes(list(c))):
            found.append(c)
    if not found or (math.prod(found[0]) == floor and len(found) < TIES):
        found.append(tuple(cur))                # the halving's own shape (known to fit)
    best = sorted(found, key=order)
    return [Fit(profile, changes(list(c))) for c in best]


def fits_for(fn: g.Function, verdict: Verdict, opts: Options) -> list[Fit]:
    """Tile shapes clearing ``verdict``'s capacity blockers. Each knob of the blocked kernels
    is searched alone (clearing the blockers of the kernels its ops run in); one knob gives its
    largest fitting shapes, several give one fit setting each knob's largest, checked together.
    When that does not clear every capacity blocker, the knobs shrink together."""
    blocked: list[Blocker] = [b for b in verdict.blockers if b.kind == "capacity"]
    nodes = [n for b in blocked for n in verdict.kernel_nodes.get(b.kernel or "", [])]
    knobs = knobs_of(nodes)
    if not knobs:
        return []
    baseline = {b.key() for b in verdict.blockers if b.kind != "capacity"}
    profile = verdict.profile
    overflows = _overflows(verdict)
    # a knob that changes no overflow even at its smallest (every extent 1) is not searched
    knobs = [k for k in knobs
             if _overflows(_verdict(fn, opts, profile, ((k, k.with_dims((1,) * len(k.dims()))),))) != overflows]
    if not knobs:
        return []

    def ok(only_theirs: bool) -> Callable[[tuple[tuple[Knob, object], ...]], bool]:
        return lambda changes: _cleared(_verdict(fn, opts, profile, changes), baseline, changes, only_theirs)
    alone = [_search([k], ok(True), profile) for k in knobs]
    if all(alone):
        if len(knobs) == 1:
            fits = alone[0]
        else:
            fits = [Fit(profile, tuple(f[0].changes[0] for f in alone))]
        if ok(False)(fits[0].changes):
            return fits
    return _search(knobs, ok(False), profile) if len(knobs) > 1 else []


def _overflows(v: Verdict) -> set[tuple]:
    """The capacity blockers of a verdict, as (kernel, buffer, bytes needed)."""
    return {(b.kernel, b.buffer, b.needed) for b in v.blockers if b.kind == "capacity"}
