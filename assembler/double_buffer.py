"""Double-buffering for auto-sync: a second copy of a loop's tiles, used by every other iteration.

With one tile per value, iteration i + 1 cannot load until iteration i has stored: the pipes take
turns. When no tile value flows from one iteration to the next, odd iterations may use their own
copies ("pong"), and the flags auto-sync then inserts let the load of one copy run while the other
is computed and stored. The loop ``for %i = lb to ub step s { B }`` becomes

    n = max(ceildiv(ub - lb, s), 0); ub2 = lb + (n / 2) * 2s
    for %i = lb to ub2 step 2s { B ; %i' = %i + s ; B' }
    if ub2 < ub { B with %i = ub2 }

where ``B'`` is ``B`` with the pong tiles and fresh scalar names: the same statements in the same
order as before, for any trip count (0, 1, odd, even). The odd iteration left over runs after the
loop rather than behind an ``if`` inside it, so the flags of the ping and the pong copies stay in
one straight body. A loop is left single-buffered, with the reason in its ``LoopNote``, when it
is not plainly independent (iter_args, a nested loop / if, flags, events, declarations or
pto.subset in the body, a tile read before the body writes it, a written
tile used outside the loop or given a new valid shape anywhere, a tile TASSIGN places) or when
the copies do not fit the profile's buffers. A pong copy is declared like its original (same
type, same run-time valid extents). Global memory needs no such care: the program's order is
unchanged, so auto-sync orders any store one iteration makes before a later load of one tensor.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

from ..isa import profiles as P
from ..isa.machines import op_class
from ..isa.spec import Kind, Role
from ..isa.types import INDEX, Location, ScalarType, TileType
from .ir import (Bound, Const, For, If, Kernel, MemRef, Module, ScalarOp, Stmt, Subset, TileDecl, TileOp,
                 Value, View, ViewQuery, Yield, walk)

SUFFIX = "_pong"
FLAGGED = ("flag_set", "flag_wait", "barrier", "tsync", "assign")   # ordering the pass must not rename


@dataclass(frozen=True)
class LoopNote:
    """What double-buffering did with one loop: ``doubled`` and the tiles given a second copy,
    or the reason it was left single-buffered."""

    kernel: str
    loop: str                  # "%iv" and the source line when known
    doubled: bool
    reason: str
    tiles: tuple[str, ...] = ()

    def __str__(self) -> str:
        what = "double-buffered (" + ", ".join("%" + t for t in self.tiles) + ")" if self.doubled \
            else "left single-buffered: " + self.reason
        return f"@{self.kernel} loop {self.loop}: {what}"


def _tile_accesses(s: TileOp) -> Iterator[tuple[str, TileType, bool, bool]]:
    """(tile name, type, reads, writes) per tile operand; an INOUT operand both reads and writes."""
    for o in s.instr.operands:
        a = s.args.get(o.name)
        if o.kind is Kind.TILE and isinstance(a, Value) and isinstance(a.type, TileType):
            yield a.name, a.type, o.role is not Role.OUT, o.role is not Role.IN


def _aligned(n: int, align: int) -> int:
    return -(-n // align) * align


def _usage(kernel: Kernel, prof: P.Profile) -> dict[Location, int]:
    """Bytes per buffer as the simulator's bump allocator lays the tiles out (pto.subset windows
    share their parent's bytes)."""
    windows = {s.result.name for s in walk(kernel.body) if isinstance(s, Subset)}
    used: dict[Location, int] = {}
    for name, t in kernel.tiles().items():
        if name not in windows:
            used[t.loc] = _aligned(used.get(t.loc, 0), prof.address_alignment.get(t.loc, 32)) + t.nbytes
    return used


def _local_tiles(loop: For, outside: set[str], assigned: set[str],
                 windowed: set[str]) -> tuple[dict[str, TileType], str | None]:
    """The tiles the body writes, each written before it is read in every iteration; or why not
    (``windowed``: tiles that are a pto.subset window or a window's parent anywhere in the kernel,
    whose bytes a copy would not share)."""
    if loop.iter_args or loop.results:
        return {}, "it carries iter_args"
    seen: dict[str, TileType] = {}
    read_only: set[str] = set()
    for s in loop.body:
        if isinstance(s, (For, If)):
            return {}, "its body holds a nested loop or if"
        if isinstance(s, (Subset, TileDecl)):
            return {}, "its body declares tiles or pto.subset windows"
        if not isinstance(s, TileOp):
            continue
        if op_class(s.instr, s.instr.pipe_for(s.types())) in FLAGGED:
            return {}, f"its body already orders pipes itself ({s.instr.mnemonic.lower()})"
        if any(o.name in s.args and (o.kind is Kind.EVENT or o.role is not Role.IN and o.kind is not Kind.TILE
                                     and o.kind is not Kind.GLOBAL) for o in s.instr.operands):
            return {}, f"its body has {s.instr.mnemonic.lower()}, which takes events or defines scalars"
        acc = list(_tile_accesses(s))
        for name, _, reads, _ in acc:
            if reads and name not in seen:
                read_only.add(name)
        for name, t, _, writes in acc:
            if not writes or name in seen:
                continue
            if name in read_only:
                return {}, f"%{name} is read before the body writes it (a value carried between iterations)"
            if name in outside:
                return {}, f"%{name} is used outside the loop"
            if t.loc.value in assigned:
                return {}, f"%{name} lives in a buffer TASSIGN places"
            if name in windowed:
                return {}, f"%{name} shares bytes with a pto.subset window (a copy would not)"
            seen[name] = t
    if not seen:
        return {}, "its body writes no tile"
    return seen, None


class _Names:
    """Fresh names: never one the kernel already has."""

    def __init__(self, kernel: Kernel) -> None:
        self.taken = {p.name for p in kernel.params} | set(kernel.tiles())
        for s in walk(kernel.body):
            for v in _defined(s):
                self.taken.add(v.name)

    def fresh(self, base: str) -> str:
        name, n = base, 1
        while name in self.taken:
            n += 1
            name = f"{base}{n}"
        self.taken.add(name)
        return name


def _defined(s: Stmt) -> tuple[Value, ...]:
    if isinstance(s, (Const, View, ViewQuery, Subset)):
        return (s.result,)
    if isinstance(s, ScalarOp):
        return s.results
    if isinstance(s, For):
        return (s.iv, *s.iter_args, *s.results)
    if isinstance(s, If):
        return s.results
    if isinstance(s, TileDecl):
        return (s.value,)
    return ()


def _rename(s: Stmt, names: dict[str, str]) -> Stmt:
    """``s`` with every value named in ``names`` (defined or used) renamed."""
    def v(x: Value) -> Value:
        return Value(names[x.name], x.type) if x.name in names else x

    def b(x: Bound) -> Bound:
        return v(x) if isinstance(x, Value) else x

    if isinstance(s, TileOp):
        args = {k: v(a) if isinstance(a, Value) else
                MemRef(v(a.base), tuple(b(i) for i in a.indices)) if isinstance(a, MemRef) else a
                for k, a in s.args.items()}
        return replace(s, args=args)
    if isinstance(s, ScalarOp):
        return replace(s, result=v(s.result), operands=tuple(map(v, s.operands)),
                       second=v(s.second) if s.second is not None else None)
    if isinstance(s, Const):
        return Const(v(s.result), s.value, loc=s.loc)
    if isinstance(s, View):
        return replace(s, result=v(s.result), source=v(s.source), offsets=tuple(map(b, s.offsets)),
                       sizes=tuple(map(b, s.sizes)), strides=tuple(map(b, s.strides)))
    if isinstance(s, ViewQuery):
        return replace(s, result=v(s.result), source=v(s.source), dim=b(s.dim))
    return s


def _index(names: _Names, base: str, x: Bound, pre: list[Stmt]) -> Value:
    """``x`` as an index value (a constant defined before the loop when ``x`` is a number)."""
    if isinstance(x, Value):
        return x
    c = Value(names.fresh(base), INDEX)
    pre.append(Const(c, x))
    return c


def _double(loop: For, tiles: dict[str, TileType], names: _Names) -> tuple[list[Stmt], list[Stmt], dict[str, str]]:
    """(the pair loop and what it needs before it, the remainder after it, tile -> pong copy)."""
    iv = loop.iv.name
    pong = {t: names.fresh(t + SUFFIX) for t in tiles}
    body = [s for s in loop.body if not isinstance(s, Yield)]
    defined = [d.name for s in body for d in _defined(s)]
    ren = dict(pong) | {d: names.fresh(d + SUFFIX) for d in defined} | {iv: names.fresh(iv + SUFFIX)}
    pre: list[Stmt] = []

    def op(name: str, what: str, *args: Value) -> Value:
        v = Value(names.fresh(f"{iv}_{name}"), INDEX)
        pre.append(ScalarOp(what, v, args))
        return v
    lb, ub, step = (_index(names, f"{iv}_{n}", x, pre) for n, x in (("lb", loop.lb), ("ub", loop.ub),
                                                                      ("step", loop.step)))
    zero, two = (_index(names, f"{iv}_c{n}", n, pre) for n in (0, 2))
    # a step <= 0 divides by 1 here and reaches the loop, which reports it as the original would
    by = op("by", "maxsi", step, _index(names, f"{iv}_c1", 1, pre)) if isinstance(loop.step, Value) else step
    trips = op("trips", "maxsi", op("ceil", "ceildivsi", op("span", "subi", ub, lb), by), zero)
    step2 = op("step2", "muli", step, two)
    ub2 = op("ub2", "addi", lb, op("len2", "muli", op("pairs", "divsi", trips, two), step2))
    nxt = Value(ren[iv], INDEX)
    pairs = replace(loop, lb=lb, ub=ub2, step=step2,
                    body=(*body, ScalarOp("addi", nxt, (loop.iv, step)), *(_rename(s, ren) for s in body)))
    last = {d: names.fresh(d + "_last") for d in defined} | {iv: ub2.name}
    more = Value(names.fresh(f"{iv}_more"), ScalarType("i1"))
    tail = [ScalarOp("cmpi", more, (ub2, ub), "slt"), If(more, tuple(_rename(s, last) for s in body))]
    return [*pre, pairs], tail, pong


def _outside_uses(kernel: Kernel, loop: For) -> set[str]:
    """Tiles any instruction outside ``loop`` accesses, and every tile pto.set_validshape changes."""
    inner = {id(s) for s in walk(loop.body)}
    return {n for s in walk(kernel.body) if isinstance(s, TileOp) and id(s) not in inner
            for n, _, _, _ in _tile_accesses(s)} | \
        {s.value.name for s in walk(kernel.body) if isinstance(s, TileDecl) and s.keep}


def double_buffer_kernel(kernel: Kernel, profile: str | P.Profile = "a3") -> tuple[Kernel, list[LoopNote]]:
    """``kernel`` with each independent loop double-buffered where the copies fit, and a note per loop."""
    prof = P.get(profile) if isinstance(profile, str) else profile
    assigned = {s.args["tile"].type.loc.value for s in walk(kernel.body)          # type: ignore[union-attr]
                if isinstance(s, TileOp) and s.instr.mnemonic == "TASSIGN"
                and isinstance(s.args.get("tile"), Value) and isinstance(s.args["tile"].type, TileType)}
    windowed = {n for s in walk(kernel.body) if isinstance(s, Subset) for n in (s.result.name, s.source.name)}
    names = _Names(kernel)
    notes: list[LoopNote] = []
    used = _usage(kernel, prof)
    pongs: dict[str, str] = {}

    def where(loop: For) -> str:
        line = getattr(loop.loc, "line", None)
        return f"%{loop.iv.name}" + (f" (line {line})" if line else "")

    def region(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for s in body:
            if isinstance(s, If):
                s = replace(s, then_body=region(s.then_body), else_body=region(s.else_body))
            elif isinstance(s, For):
                tiles, why = _local_tiles(s, _outside_uses(kernel, s), assigned, windowed)
                if why is None:
                    extra: dict[Location, int] = {}
                    for t in tiles.values():
                        align = prof.address_alignment.get(t.loc, 32)
                        extra[t.loc] = _aligned(extra.get(t.loc, 0) + used.get(t.loc, 0), align) \
                            + t.nbytes - used.get(t.loc, 0)
                    over = [(loc, used.get(loc, 0) + n, prof.capacity.get(loc)) for loc, n in extra.items()
                            if prof.capacity.get(loc) is not None and used.get(loc, 0) + n > prof.capacity[loc]]
                    if over:
                        loc, need, cap = over[0]
                        why = (f"two copies of {', '.join('%' + n for n in tiles)} need {need} bytes of "
                               f"{loc.value}, more than {prof.name}'s {cap}")
                if why is not None:
                    notes.append(LoopNote(kernel.name, where(s), False, why))
                    out.append(replace(s, body=region(s.body)))
                    continue
                for loc, n in extra.items():
                    used[loc] = used.get(loc, 0) + n
                head, tail, pong = _double(s, tiles, names)
                pongs.update(pong)
                notes.append(LoopNote(kernel.name, where(s), True, "", tuple(tiles)))
                out += [*head, *tail]
                continue
            out.append(s)
        return tuple(out)

    body = region(kernel.body)
    if not pongs:
        return kernel, notes
    return replace(kernel, body=_declare(body, pongs)), notes


def _declare(body: tuple[Stmt, ...], pongs: dict[str, str]) -> tuple[Stmt, ...]:
    """A ``.tile`` declaration for each pong copy, right after its original's (a tile first
    declared by being written has its copy declared the same way, in the pong iteration)."""
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, For):
            s = replace(s, body=_declare(s.body, pongs))
        elif isinstance(s, If):
            s = replace(s, then_body=_declare(s.then_body, pongs), else_body=_declare(s.else_body, pongs))
        out.append(s)
        if isinstance(s, TileDecl) and not s.keep and s.value.name in pongs:
            out.append(TileDecl(Value(pongs.pop(s.value.name), s.value.type), s.valid_rows, s.valid_cols))
    return tuple(out)


def double_buffer(module: Module, profile: str | P.Profile = "a3") -> tuple[Module, list[LoopNote]]:
    """Every kernel of ``module`` double-buffered where it can be, and a note per loop looked at."""
    out, notes = [], []
    for k in module.kernels:
        nk, n = double_buffer_kernel(k, profile)
        out.append(nk)
        notes += n
    return Module(tuple(out)), notes
