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
from typing import Callable, Iterator

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
    the line that sets it (None: the line is unknown)."""

    kind: str
    value: object                        # tuple[int, ...] (vec) or graph.CubeTiles (cube)
    where: g.SourceLoc | None

    def key(self) -> tuple:
        at = (self.where.file, self.where.line, self.where.col) if self.where is not None else None
        return (self.kind, self.value, at)

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
        """The API call that sets ``value`` (default: the current one), as the user writes it."""
        v = self.value if value is None else value
        if self.kind == "vec":
            return f"pto.set_vec_tile_shapes({', '.join(map(str, v))})"  # type: ignore[call-overload]

        def one(p: tuple[int, int]) -> str:
            return str(p[0]) if p[0] == p[1] else f"[{p[0]}, {p[1]}]"
        split = ", enable_split_k=True" if v.split_k else ""  # type: ignore[attr-defined]
        return f"pto.set_cube_tile_shapes({one(v.m)}, {one(v.k)}, {one(v.n)}{split})"  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Fit:
    """Tile shapes that clear every capacity blocker of ``profile``: each knob with its new
    value; compiled and verified with those values."""

    profile: str
    changes: tuple[tuple[Knob, object], ...]



def knobs_of(ops: list[g.Op]) -> list[Knob]:
    """The distinct tile-shape settings the ops were recorded under (defaults are no knob)."""
    out: dict[tuple, Knob] = {}
    for op in ops:
        t = op.tiles
        kind = _kind(op)
        value, loc = (t.vec, t.vec_loc) if kind == "vec" else (t.cube, t.cube_loc)
        if value is not None:
            k = Knob(kind, value, loc)
            out.setdefault(k.key(), k)
    return list(out.values())


def _kind(op: g.Op) -> str:
    """Which setting tiles ``op``: the cube tile shapes a matmul, the vector ones the rest."""
    return "cube" if op.name == "matmul" else "vec"


def _apply(fn: g.Function, changes: dict[tuple, tuple[Knob, object]]) -> list[tuple[g.Op, g.TileConfig]]:
    """Set the new values on the ops recorded under each knob; returns what to restore."""
    saved = []
    for op in fn.walk():
        t = op.tiles
        new = t
        for kind, value, loc in (("vec", t.vec, t.vec_loc), ("cube", t.cube, t.cube_loc)):
            if value is None:
                continue
            hit = changes.get(Knob(kind, value, loc).key())
            if hit is not None:
                new = replace(new, **{kind: hit[1]})
        if new is not t:
            saved.append((op, t))
            op.tiles = new
    return saved


def _verdict(fn: g.Function, opts: Options, profile: str,
             changes: tuple[tuple[Knob, object], ...]) -> Verdict:
    """The compile's verdict with ``changes`` set (the graph is restored after)."""
    saved = _apply(fn, {k.key(): (k, v) for k, v in changes})
    try:
        return judge(fn, profile, opts)
    finally:
        for op, t in saved:
            op.tiles = t


def _under(op: g.Op, knob: Knob, value: object) -> bool:
    """Whether ``op`` was recorded under ``knob``: it has the knob's line and its value, or
    the candidate ``value`` (ops the pipeline made from the graph's while it was changed)."""
    if _kind(op) != knob.kind:
        return False
    t = op.tiles
    got, loc = (t.vec, t.vec_loc) if knob.kind == "vec" else (t.cube, t.cube_loc)
    return got in (knob.value, value) and Knob(knob.kind, got, loc).key()[2] == knob.key()[2]


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
        ops = v.kernel_ops.get(b.kernel or "", [])
        if any(_under(op, k, value) for op in ops for k, value in changes):
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
    ops = [op for b in blocked for op in verdict.kernel_ops.get(b.kernel or "", [])]
    knobs = knobs_of(ops)
    if not knobs:
        return []
    baseline = {b.key() for b in verdict.blockers if b.kind != "capacity"}
    profile = verdict.profile

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
