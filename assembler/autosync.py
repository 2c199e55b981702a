"""Auto-sync: insert the set_flag / wait_flag pairs a program written without flags needs.

Pipes run side by side; only a flag orders one pipe's access before another's. This pass finds
every pair of instructions on different pipes (``Instruction.pipe_for``) touching the same tile or
global tensor, one a write, that nothing orders yet, and adds a pair: ``set_flag`` on the first
pipe after the first, ``wait_flag`` on the second before the second, both in the innermost region
holding the two (a nested loop or ``if`` is passed as a whole). A dependence carried by a loop
(the second comes first in the body) gets a set at the end of the body's producer, a wait before
its consumer, a set before the loop and a drain after it, so every region stays balanced.

Which pairs are needed comes from an abstract run with vector clocks, as the ascend_sim backend
orders accesses: loops are unrolled ``UNROLL`` times (plus the zero-trip path when the trip count
is unknown), both arms of an ``if`` are run and the states merged so that an ordering is claimed
only when it holds on every path. Pairs are added greedily (the latest unordered producer first),
then any pair the others make redundant is dropped, and ids are shared per pipe pair between pairs
whose lifetimes do not overlap. Flags already in the program are honoured and their ids avoided.
With ``double_buffer`` the loops ``double_buffer.py`` can give a second copy of their tiles are
rewritten first; the pairs then found for the ping and the pong copies live at once, so they get
alternating ids and one copy loads while the other is computed and stored.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from ..isa import profiles as P
from ..isa.diagnostics import Location, OrderError
from ..isa.machines import PIPES, op_class
from ..isa.registry import get as instruction
from ..isa.spec import Kind, Role
from ..isa.types import INDEX, Pipe, TileType
from . import double_buffer as _db
from .ir import Const, For, If, Kernel, Lit, MemRef, Module, PipeLit, Stmt, Subset, TileOp, Value, View, walk

UNROLL = 3                      # iterations run per loop in the abstract run
NP = len(PIPES)
PIDX = {p: i for i, p in enumerate(PIPES)}
SYNC_CLASSES = ("flag_set", "flag_wait", "barrier", "tsync", "assign")

Region = tuple[tuple[int, int], ...]        # (statement index, region number) from the kernel body
Addr = tuple[tuple[int, str, int], ...]     # (statement index, "f"/"i"/"s", iteration or arm)


@dataclass(frozen=True)
class Pair:
    """One inserted flag: set after statement ``set_at`` and wait before ``wait_at`` of ``region``;
    a loop-carried pair also sets before loop ``loop`` of ``outer`` and drains after it."""

    src: int
    dst: int
    region: Region
    set_at: int
    wait_at: int
    outer: Region | None = None
    loop: int | None = None
    ident: int = -1


class _Conflict(Exception):
    def __init__(self, producer: Addr, consumer: Addr, src: int, dst: int) -> None:
        self.producer, self.consumer, self.src, self.dst = producer, consumer, src, dst


class _State:
    """Per-path knowledge: each pipe's count of executed instructions, what each pipe knows of the
    others (vector clocks), the flags' pending clocks, and the last read / write per resource."""

    __slots__ = ("cnt", "know", "tokens", "shadow")

    def __init__(self) -> None:
        self.cnt = [0] * NP
        self.know = [[0] * NP for _ in range(NP)]
        self.tokens: dict[tuple[int, int, int], list[list[int]]] = {}
        self.shadow: dict[str, dict[int, list]] = {}     # resource -> pipe -> [write, read] (epoch, seq, addr)

    def copy(self) -> "_State":
        s = _State()
        s.cnt = list(self.cnt)
        s.know = [list(r) for r in self.know]
        s.tokens = {k: [list(t) for t in v] for k, v in self.tokens.items()}
        s.shadow = {r: {p: list(e) for p, e in d.items()} for r, d in self.shadow.items()}
        return s


def _merge(states: list[_State]) -> _State:
    """What holds on every path. Each path's clocks are first shifted, per pipe, so that its last
    instruction gets the merged count (a shift keeps every "entry <= knowledge" of that path as it
    was); then an entry is the latest of the paths' and a pipe's knowledge the least, so an access
    counts as ordered only where it is ordered on every path."""
    if len(states) == 1:
        return states[0]
    out = _State()
    out.cnt = [max(s.cnt[p] for s in states) for p in range(NP)]
    shift = [[out.cnt[p] - s.cnt[p] for p in range(NP)] for s in states]

    def moved(i: int, row: list[int]) -> list[int]:
        return [v + d for v, d in zip(row, shift[i])]
    out.know = [[min(v) for v in zip(*(moved(i, s.know[q]) for i, s in enumerate(states)))] for q in range(NP)]
    for key in set.intersection(*(set(s.tokens) for s in states)):
        n = min(len(s.tokens[key]) for s in states)
        out.tokens[key] = [[min(v) for v in zip(*(moved(i, s.tokens[key][j]) for i, s in enumerate(states)))]
                           for j in range(n)]
    for i, s in enumerate(states):
        for res, per in s.shadow.items():
            mine = out.shadow.setdefault(res, {})
            for p, (w, r) in per.items():
                cur = mine.setdefault(p, [None, None])
                for slot, e in ((0, w), (1, r)):
                    if e is None:
                        continue
                    e = (e[0] + shift[i][p], e[1], e[2])
                    if cur[slot] is None or e[:2] > cur[slot][:2]:
                        cur[slot] = e
    return out


def _resources(kernel: Kernel) -> dict[str, str]:
    """Name -> the resource its accesses touch: a subset is its root tile, a view its root tensor;
    every tile of a buffer some TASSIGN places is the whole buffer (addresses may alias)."""
    root: dict[str, str] = {}
    assigned: set[str] = set()
    for s in walk(kernel.body):
        if isinstance(s, (Subset, View)):
            root[s.result.name] = root.get(s.source.name, s.source.name)
        elif isinstance(s, TileOp) and s.instr.mnemonic == "TASSIGN":
            t = s.args.get("tile")
            if isinstance(t, Value) and isinstance(t.type, TileType):
                assigned.add(t.type.loc.value)
    out: dict[str, str] = {}
    for name, t in kernel.tiles().items():
        base = root.get(name, name)
        out[name] = f"buffer {t.loc.value}" if t.loc.value in assigned else f"tile %{base}"
    return out | {n: f"global %{r}" for n, r in root.items() if n not in out}


def _accesses(s: TileOp, res: dict[str, str]) -> list[tuple[str, bool]]:
    """(resource, writes) per tile / global operand, as the simulator records them."""
    out = []
    for o in s.instr.operands:
        a = s.args.get(o.name)
        if a is None or o.kind not in (Kind.TILE, Kind.GLOBAL):
            continue
        writes = o.role is not Role.IN
        if isinstance(a, Value) and isinstance(a.type, TileType):
            out.append((res.get(a.name, f"tile %{a.name}"), writes))
        elif isinstance(a, MemRef):
            out.append((res.get(a.base.name, f"global %{a.base.name}"), writes))
    return out


def _flag_key(s: TileOp, consts: dict[str, int]) -> tuple[int, int, int] | None:
    """(src, dst, id) of a flag whose pipes and id are known before the run (a literal or a
    ``.const`` id); None for a run-time id."""
    src, dst, ev = (s.args.get(n) for n in ("src_pipe", "dst_pipe", "event_id"))
    ident = ev.value if isinstance(ev, Lit) else consts.get(ev.name) if isinstance(ev, Value) else None
    if isinstance(src, PipeLit) and isinstance(dst, PipeLit) and src.pipe in PIDX and dst.pipe in PIDX \
            and isinstance(ident, int) and not isinstance(ident, bool):
        return (PIDX[src.pipe], PIDX[dst.pipe], int(ident))
    return None


class _Run:
    """One abstract run of a kernel with the insertions ``ins`` (region, junction) -> flag ops."""

    def __init__(self, kernel: Kernel, ins: dict[tuple[Region, int], list[tuple[bool, tuple[int, int, int]]]],
                 consts: dict[str, int], res: dict[str, str]) -> None:
        self.k, self.ins, self.consts, self.res = kernel, ins, consts, res
        self.seq = 0

    def run(self) -> None:
        self.body(self.k.body, (), (), _State())

    def flag(self, st: _State, is_set: bool, key: tuple[int, int, int]) -> None:
        src, dst, _ = key
        if is_set:
            st.tokens.setdefault(key, []).append(list(st.know[src]))
        elif st.tokens.get(key):
            tok = st.tokens[key].pop(0)
            st.know[dst] = [max(a, b) for a, b in zip(st.know[dst], tok)]

    def junction(self, st: _State, region: Region, j: int) -> None:
        for is_set, key in self.ins.get((region, j), ()):
            self.flag(st, is_set, key)

    def body(self, stmts: tuple[Stmt, ...], region: Region, addr: Addr, st: _State) -> _State:
        for j, s in enumerate(stmts):
            self.junction(st, region, j)
            if isinstance(s, TileOp):
                self.op(s, addr + ((j, "s", 0),), st)
            elif isinstance(s, For):
                st = self.loop(s, region + ((j, 0),), addr, j, st)
            elif isinstance(s, If):
                arms = [self.body(b, region + ((j, i),), addr + ((j, "i", i),), st.copy())
                        for i, b in enumerate((s.then_body, s.else_body))]
                st = _merge(arms)
        self.junction(st, region, len(stmts))
        return st

    def trips(self, s: For) -> int | None:
        b = [x if isinstance(x, int) else self.consts.get(x.name) for x in (s.lb, s.ub, s.step)]
        if any(v is None for v in b) or b[2] <= 0:     # type: ignore[operator]
            return None
        return max(0, -(-(b[1] - b[0]) // b[2]))       # type: ignore[operator]

    def loop(self, s: For, region: Region, addr: Addr, j: int, st: _State) -> _State:
        n = self.trips(s)
        paths = [st] if n is None or n == 0 else []
        cur = st
        for it in range(1, min(UNROLL, UNROLL if n is None else n) + 1):
            cur = self.body(s.body, region, addr + ((j, "f", it),), cur.copy())
            if n is None:
                paths.append(cur)
        if n:
            paths.append(cur)
        return _merge(paths)

    def op(self, s: TileOp, addr: Addr, st: _State) -> None:
        pipe = s.instr.pipe_for(s.types())
        cls = op_class(s.instr, pipe)
        if cls in ("flag_set", "flag_wait"):
            key = _flag_key(s, self.consts)
            if key is not None:
                self.flag(st, cls == "flag_set", key)
            return
        if cls in ("barrier", "tsync"):
            target = s.args.get("pipe")
            if not isinstance(target, PipeLit) or target.pipe is Pipe.ALL:
                joined = [max(col) for col in zip(*st.know)]
                st.know = [list(joined) for _ in range(NP)]
            return
        if cls == "assign":
            return
        p = PIDX.get(pipe, 0)
        acc = _accesses(s, self.res)
        worst = None
        for r, w in acc:
            for q, (we, re_) in st.shadow.get(r, {}).items():
                if q == p:
                    continue
                for e in (we, re_ if w else None):
                    if e is not None and e[0] > st.know[p][q] and (worst is None or e[1] > worst[0][1]):
                        worst = (e, q)
        if worst is not None:
            raise _Conflict(worst[0][2], addr, worst[1], p)
        self.seq += 1
        st.cnt[p] += 1
        st.know[p][p] = st.cnt[p]
        for r, w in acc:
            slot = st.shadow.setdefault(r, {}).setdefault(p, [None, None])
            slot[0 if w else 1] = (st.cnt[p], self.seq, addr)


def _place(c: _Conflict, ident: int) -> Pair:
    """The pair ordering ``c``'s producer before its consumer, in their innermost common region."""
    pa, ca = c.producer, c.consumer
    region: Region = ()
    for i, (pe, ce) in enumerate(zip(pa, ca)):
        if pe[0] != ce[0]:
            return Pair(c.src, c.dst, region, pe[0], ce[0], ident=ident)
        if pe != ce:            # one loop, two iterations: the body's statements decide
            assert ce[1] == "f", "an if's two arms never meet on one path"
            body = region + ((ce[0], 0),)
            sp, sc = pa[i + 1][0], ca[i + 1][0]
            if sp < sc:
                return Pair(c.src, c.dst, body, sp, sc, ident=ident)
            return Pair(c.src, c.dst, body, sp, sc, region, ce[0], ident)
        region = region + ((ce[0], ce[2] if ce[1] == "i" else 0),)
    raise AssertionError("a conflict between an instruction and itself")


def _insertions(pairs: Iterable[Pair]) -> dict[tuple[Region, int], list[tuple[bool, tuple[int, int, int]]]]:
    """(region, junction) -> the flag ops there: sets first (they never block), then waits."""
    ins: dict[tuple[Region, int], list[tuple[bool, tuple[int, int, int]]]] = {}
    for p in pairs:
        key = (p.src, p.dst, p.ident)
        ins.setdefault((p.region, p.set_at + 1), []).append((True, key))
        ins.setdefault((p.region, p.wait_at), []).append((False, key))
        if p.outer is not None:
            ins.setdefault((p.outer, p.loop), []).append((True, key))          # type: ignore[arg-type]
            ins.setdefault((p.outer, p.loop + 1), []).append((False, key))    # type: ignore[operator]
    return {k: sorted(v, key=lambda op: not op[0]) for k, v in ins.items()}


def _positions(body: tuple[Stmt, ...], region: Region, out: dict[tuple[Region, int], int]) -> None:
    """Every junction's place in the text, pre-order (a pair's lifetime is a span of them)."""
    for j, s in enumerate(body):
        out[(region, j)] = len(out)
        if isinstance(s, For):
            _positions(s.body, region + ((j, 0),), out)
        elif isinstance(s, If):
            _positions(s.then_body, region + ((j, 0),), out)
            _positions(s.else_body, region + ((j, 1),), out)
    out[(region, len(body))] = len(out)


def _number(kernel: Kernel, pairs: list[Pair], profile: P.Profile, consts: dict[str, int]) -> list[Pair]:
    """Final ids: per pipe pair, the lowest id the program does not use itself and no pair with
    an overlapping lifetime holds; ORDER_FLAG_IDS when the profile's ids run out."""
    pos: dict[tuple[Region, int], int] = {}
    _positions(kernel.body, (), pos)
    used: dict[tuple[int, int], set[int]] = {}
    run_time: dict[tuple[int, int], TileOp] = {}      # pipe pairs the program flags with run-time ids
    for s in walk(kernel.body):
        if isinstance(s, TileOp) and (key := _flag_key(s, consts)) is not None:
            used.setdefault(key[:2], set()).add(key[2])
        elif isinstance(s, TileOp) and op_class(s.instr, s.instr.pipe_for(s.types())) in SYNC_CLASSES:
            src, dst = s.args.get("src_pipe"), s.args.get("dst_pipe")
            if isinstance(src, PipeLit) and isinstance(dst, PipeLit) and src.pipe in PIDX and dst.pipe in PIDX:
                run_time.setdefault((PIDX[src.pipe], PIDX[dst.pipe]), s)

    def span(p: Pair) -> tuple[int, int]:
        if p.outer is not None:
            return pos[(p.outer, p.loop)], pos[(p.outer, p.loop + 1)]     # type: ignore[operator]
        return pos[(p.region, p.set_at + 1)], pos[(p.region, p.wait_at)]

    def fifo(p: Pair, q: Pair) -> bool:
        """Two straight pairs of one region whose sets and waits come in the same order: with
        counting flags the k-th wait takes the k-th set, so they may share an id."""
        return p.outer is None and q.outer is None and p.region == q.region \
            and (p.set_at - q.set_at) * (p.wait_at - q.wait_at) > 0

    done: list[tuple[Pair, tuple[int, int]]] = []
    for p in sorted(pairs, key=span):
        if (known := run_time.get((p.src, p.dst))) is not None:
            raise OrderError("ORDER_FLAG_IDS", f"@{kernel.name} flags {PIPES[p.src].value} -> "
                             f"{PIPES[p.dst].value} with an id known only at run time, so no id the pass "
                             "could add there is sure to be free", location=known.loc or kernel.loc
                             or Location(kernel=kernel.name), expected="constant flag ids on a pipe pair "
                             "the pass adds flags to", actual=f"{known.instr.mnemonic.lower()} with a run-time id")
        lo, hi = span(p)
        live = [q for q, (a, b) in done if (q.src, q.dst) == (p.src, p.dst) and not (b < lo or hi < a)]
        mine = used.get((p.src, p.dst), set())
        have = profile.flag_ids(PIPES[p.src], PIPES[p.dst]) or 0
        free = next((i for i in range(have) if i not in mine and all(q.ident != i for q in live)), None)
        if free is None:
            free = next((i for i in range(have) if i not in mine
                         and all(q.ident != i or fifo(p, q) for q in live)), None)
        if free is None:
            raise OrderError("ORDER_FLAG_IDS", f"@{kernel.name} needs more {PIPES[p.src].value} -> "
                             f"{PIPES[p.dst].value} flags live at once than {profile.name} has",
                             location=kernel.loc or Location(kernel=kernel.name),
                             expected=f"at most {have} ids live per pipe pair",
                             actual=f"{len(live) + len(mine) + 1} needed")
        done.append((replace(p, ident=free), (lo, hi)))
    return [p for p, _ in done]


def _flag_op(is_set: bool, key: tuple[int, int, int]) -> TileOp:
    src, dst, ev = key
    return TileOp(instruction("SET_FLAG" if is_set else "WAIT_FLAG"),
                  {"src_pipe": PipeLit(PIPES[src]), "dst_pipe": PipeLit(PIPES[dst]), "event_id": Lit(ev, INDEX)})


def _rebuild(body: tuple[Stmt, ...], region: Region, ins: dict) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for j, s in enumerate(body):
        out += [_flag_op(*op) for op in ins.get((region, j), ())]
        if isinstance(s, For):
            s = replace(s, body=_rebuild(s.body, region + ((j, 0),), ins))
        elif isinstance(s, If):
            s = replace(s, then_body=_rebuild(s.then_body, region + ((j, 0),), ins),
                        else_body=_rebuild(s.else_body, region + ((j, 1),), ins))
        out.append(s)
    out += [_flag_op(*op) for op in ins.get((region, len(body)), ())]
    return tuple(out)


def sync_pairs(kernel: Kernel, profile: str | P.Profile = "a3") -> list[Pair]:
    """The flag pairs ``kernel`` lacks, with their final ids (empty when it is ordered already)."""
    prof = P.get(profile) if isinstance(profile, str) else profile
    consts = {s.result.name: s.value for s in walk(kernel.body) if isinstance(s, Const)
              and isinstance(s.value, int) and not isinstance(s.value, bool)}
    res = _resources(kernel)

    def conflict(pairs: list[Pair]) -> _Conflict | None:
        try:
            _Run(kernel, _insertions(pairs), consts, res).run()
        except _Conflict as c:
            return c
        return None

    pairs: list[Pair] = []
    while (c := conflict(pairs)) is not None:
        pair = _place(c, 1000 + len(pairs))
        if pair in pairs or len(pairs) > 64 * NP:
            raise OrderError("ORDER_FLAG_IDS", f"auto-sync cannot order @{kernel.name}'s accesses with flags",
                           location=kernel.loc or Location(kernel=kernel.name),
                           expected="a flag pair per unordered dependence", actual="the same dependence twice")
        pairs.append(pair)
    for p in reversed(list(pairs)):          # drop what the others already order
        rest = [q for q in pairs if q is not p]
        if conflict(rest) is None:
            pairs = rest
    final = _number(kernel, pairs, prof, consts)
    if (c := conflict(final)) is not None:        # ids shared when they ran short broke an ordering
        raise OrderError("ORDER_FLAG_IDS", f"auto-sync cannot order @{kernel.name}'s accesses within "
                         f"{prof.name}'s flag ids ({PIPES[c.src].value} -> {PIPES[c.dst].value} shared an id "
                         "two orderings needed apart)", location=kernel.loc or Location(kernel=kernel.name),
                         expected="distinct ids for overlapping pairs", actual="a shared id")
    return final


def with_pairs(kernel: Kernel, pairs: Iterable[Pair]) -> Kernel:
    """``kernel`` with the flag statements of ``pairs`` written in."""
    pairs = list(pairs)
    return replace(kernel, body=_rebuild(kernel.body, (), _insertions(pairs))) if pairs else kernel


def autosync(module: Module, profile: str | P.Profile = "a3", double_buffer: bool = False) -> Module:
    """``module`` with the set_flag / wait_flag pairs each kernel needs to run race-free on
    ``profile``'s pipes; a kernel that needs none is returned as it was. With ``double_buffer``
    each independent loop first gets a second copy of its tiles where they fit
    (``double_buffer.double_buffer``, whose notes say which loops did and why others did not)."""
    if double_buffer:
        module = _db.double_buffer(module, profile)[0]
    return Module(tuple(with_pairs(k, sync_pairs(k, profile)) for k in module.kernels))
