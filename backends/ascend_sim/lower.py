"""Kernels -> the reference backend's closures, each tile instruction followed by its issue.

Values come from the reference lowering (``backends/reference/lower.py``) unchanged: this module
subclasses it and wraps each tile instruction's step so that, once the instruction has computed
its values in program order, the scalar unit issues an ``engine.Op`` for it: its pipe
(``Instruction.pipe_for``), its cost from the machine (by the op class ``isa.machines.op_class``
gives it) and the byte regions it reads and writes. The sync instructions become flag sets,
waits and barriers by their op class; nothing here is keyed by mnemonic.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from itertools import count
from operator import attrgetter, is_not, itemgetter
from typing import Any, Callable, Mapping

from ...assembler.ir import Kernel, Lit, MemRef, PipeLit, TileOp, Value, View
from ...isa.machines import (PATH_BY_ENDS, PIPE_DEFAULT_PATH, Machine, buffer_name, op_class)
from ...isa.diagnostics import PTOError
from ...isa.spec import Kind, Role
from ...isa.types import Pipe, TileType
from ...isa.values import GlobalRef
from ..reference.lower import Context, KernelLowering
from .engine import BARRIER, BARRIER_ALL, PIPE_INDEX, S, SET, WAIT, WORK, Op
from .hazards import Access
from .placement import at_rows


@dataclass
class SimContext(Context):
    """The reference's per-run state plus where its ops go and the tile placement. ``issuers``:
    (work, set_flag, wait_flag) of the run's engine; or, for a block of a launch, which records
    its ops and has them timed after its values (``replay.FirstPass``), the ops list's append
    three times."""

    issuers: tuple[Callable[[Op], None], ...] = ()
    place: Any = None
    l2: set | None = None       # global windows read so far in this launch (later reads hit L2)


def _sizer() -> Callable[[Any], int]:
    """Bytes of a tile's valid region (its packed size scaled by the valid fraction), with the
    size of the last tile type seen kept: a statement's operands keep their types, and
    ``TileType.nbytes`` is computed anew on every call."""
    last: list[Any] = [None, 0, 1]          # the type (held, so ``is`` is safe), its bytes, its elements

    def valid_bytes(t: Any) -> int:
        tt = t.type
        if tt is not last[0]:
            rows, cols = tt.shape
            last[:] = [tt, tt.nbytes, max(rows * cols, 1)]
        r, c = t.valid
        return last[1] * r * c // last[2]
    return valid_bytes


#: op classes whose values a timing-only run may skip (computing and moving instructions)
_VALUE_FREE = frozenset({"vec_binary", "vec_transcendental", "vec_reduce", "vec_move", "cube", "transfer"})
#: which core kind a pipe's work needs: a block that needs both runs on a MIX group
UNIT_OF_PIPE: dict[Pipe, str] = {Pipe.V: "vector", Pipe.M: "cube", Pipe.MTE1: "cube", Pipe.FIX: "cube"}
UNIT_OF_BUFFER: dict[str, str] = {"UB": "vector", "L1": "cube", "L0A": "cube", "L0B": "cube", "L0C": "cube",
                                  "BT": "cube", "FB": "cube"}


#: the entry of ``SimContext.issuers`` an op class takes (default 0, ``Engine.work``): the
#: engine runs a work op's and a flag's usual case in one call
ISSUER_OF_CLASS: dict[str, int] = {"flag_set": 1, "flag_wait": 2}


class _Fixed:
    """A plan whose op is the same at every execution (a flag with a literal id): the op is
    made once and issued each time (queued as a copy, see ``Op.shared``)."""

    __slots__ = ("op",)

    def __init__(self, op: Op) -> None:
        self.op = op

    def __call__(self, regs: list, ctx: Context) -> Op:
        return self.op


class SimLowering(KernelLowering):
    """The reference lowering with an issue step after every tile instruction."""

    def __init__(self, kernel: Kernel, semantics: Mapping[str, Callable[..., Any]] | None, machine: Machine,
                 values: bool = True) -> None:
        self.machine, self.values = machine, values
        self.manual: set[str] = set()       # tiles placed by TASSIGN
        self.units: set[str] = set()        # "cube" / "vector": the core kinds the kernel's work needs
        super().__init__(kernel, semantics)
        self.global_uses = global_uses(kernel)

    def _tileop(self, s: TileOp, targets: tuple[int, ...]) -> Callable[[list, Context], None]:
        plan = self._plan(s)
        which = ISSUER_OF_CLASS.get(self._class(s), 0)
        if not self.values and self._timing_only(s):
            mnemonic = s.instr.mnemonic

            def skip(regs: list, ctx: Context) -> None:   # timing only: no values, same issue
                ctx.counts[mnemonic] = ctx.counts.get(mnemonic, 0) + 1
                op = plan(regs, ctx)
                if op is not None:
                    ctx.issuers[which](op)      # type: ignore[attr-defined]
            return skip
        value = super()._tileop(s, targets)
        if not targets and self._constant_check(s):
            mnemonic, checked = s.instr.mnemonic, []
            if isinstance(plan, _Fixed):
                fixed = plan.op

                def flag(regs: list, ctx: Context) -> None:   # the same op every time: no plan to run
                    if checked:
                        ctx.counts[mnemonic] = ctx.counts.get(mnemonic, 0) + 1
                    else:
                        value(regs, ctx)
                        checked.append(True)
                    ctx.issuers[which](fixed)      # type: ignore[attr-defined]
                return flag

            def once(regs: list, ctx: Context) -> None:   # the operands' check ran and passed once
                if checked:
                    ctx.counts[mnemonic] = ctx.counts.get(mnemonic, 0) + 1
                else:
                    value(regs, ctx)
                    checked.append(True)
                op = plan(regs, ctx)
                if op is not None:
                    ctx.issuers[which](op)      # type: ignore[attr-defined]
            return once

        def step(regs: list, ctx: Context) -> None:
            value(regs, ctx)
            op = plan(regs, ctx)
            if op is not None:
                ctx.issuers[which](op)      # type: ignore[attr-defined]
        return step

    def _constant_check(self, s: TileOp) -> bool:
        """Whether the instruction's semantics is only a check of literal operands: every operand
        given is a literal (a pipe or a number), it has no results and takes no control state
        (set_flag / wait_flag / pipe_barrier with constant ids). Its verdict cannot change from
        one execution to the next, so after one passing run the semantics need not run again."""
        semantics = self.semantics.get(s.instr.mnemonic, s.instr.semantics)
        if "state" in inspect.signature(semantics).parameters:
            return False
        return all(isinstance(s.args[o.name], (Lit, PipeLit)) and o.role is Role.IN
                   for o in s.instr.operands if s.args.get(o.name) is not None)

    @staticmethod
    def _timing_only(s: TileOp) -> bool:
        """Whether a timing-only run may skip the instruction's values: it computes or moves
        tiles only (no scalar or event result, no control state), so nothing later in the
        program's control flow or addressing can depend on what it computes."""
        instr = s.instr
        if op_class(instr, instr.pipe_for(s.types())) not in _VALUE_FREE:
            return False
        if "state" in inspect.signature(instr.semantics).parameters:
            return False
        return all(o.kind in (Kind.TILE, Kind.GLOBAL) for o in instr.operands if o.role is not Role.IN)

    # ------------------------------------------------------------------ plans
    @staticmethod
    def _class(s: TileOp) -> str:
        return op_class(s.instr, s.instr.pipe_for(s.types()))

    def _plan(self, s: TileOp) -> Callable[[list, Context], Op | None]:
        instr = s.instr
        pipe = instr.pipe_for(s.types())
        cls = op_class(instr, pipe)
        make = getattr(self, "_plan_" + cls, None) or self._plan_work
        return make(s, pipe, cls)

    def _scalar(self, a: Any) -> Callable[[list], Any]:
        return self.read(a) if isinstance(a, (Value, Lit)) else (lambda regs: a)

    def _flag(self, s: TileOp, kind: int) -> Callable[[list, Context], Op]:
        src, dst = (s.args[n].pipe for n in ("src_pipe", "dst_pipe"))   # type: ignore[union-attr]
        if src not in PIPE_INDEX or dst not in PIPE_INDEX:   # ALL: the semantics fault before any issue
            return lambda regs, ctx: None                   # type: ignore[return-value]
        si, di = PIPE_INDEX[src], PIPE_INDEX[dst]
        pipe, name, loc = (si if kind == SET else di), s.instr.mnemonic, s.loc
        arg = s.args["event_id"]
        if isinstance(arg, Lit) and isinstance(arg.value, int) and not isinstance(arg.value, bool):
            return _Fixed(Op(kind, pipe, 0.0, name, loc, flag=(si, di, arg.value), shared=True))   # one op, issued each time
        ev = self._scalar(arg)
        return lambda regs, ctx: Op(kind, pipe, 0.0, name, loc, flag=(si, di, int(ev(regs))))

    def _plan_flag_set(self, s: TileOp, pipe: Pipe, cls: str) -> Callable[[list, Context], Op]:
        return self._flag(s, SET)

    def _plan_flag_wait(self, s: TileOp, pipe: Pipe, cls: str) -> Callable[[list, Context], Op]:
        return self._flag(s, WAIT)

    def _plan_barrier(self, s: TileOp, pipe: Pipe, cls: str) -> Callable[[list, Context], Op]:
        """pipe_barrier / single-pipe tsync: ALL drains every pipe; one pipe is in order already.
        The event form of tsync (and SYNCALL) is taken as a barrier on ALL: it waits for its
        producer, whichever pipe that was."""
        p = s.args.get("pipe")
        target = p.pipe if isinstance(p, PipeLit) else Pipe.ALL
        name, loc = s.instr.mnemonic, s.loc
        if target is Pipe.ALL:
            return lambda regs, ctx: Op(BARRIER_ALL, S, 0.0, name, loc)
        i = PIPE_INDEX[target]
        return lambda regs, ctx: Op(BARRIER, i, 0.0, name, loc)

    _plan_tsync = _plan_barrier

    def _plan_assign(self, s: TileOp, pipe: Pipe, cls: str) -> Callable[[list, Context], Op]:
        """TASSIGN: the tile moves to the address it names (checked against the buffer)."""
        tile = s.args["tile"]
        assert isinstance(tile, Value)
        self.manual.add(tile.name)
        slot, t, addr, loc, name = self.slots[tile.name], tile.type, self._scalar(s.args["addr"]), s.loc, tile.name
        assert isinstance(t, TileType)

        def plan(regs: list, ctx: Context) -> Op:
            ctx.place.place(regs[slot], t, int(addr(regs)), loc, name)   # type: ignore[attr-defined]
            return Op(WORK, S, 0.0, "TASSIGN", loc)
        return plan

    def _plan_work(self, s: TileOp, pipe: Pipe, cls: str) -> Callable[[list, Context], Op]:
        """A computing or moving instruction: its accesses and its cycles from the machine."""
        instr, loc = s.instr, s.loc
        tiles: list[tuple[int, bool, str, TileType]] = []       # slot, writes, name, type
        globals_: list[tuple[int, list[Callable[[list], Any]], bool, str, Any]] = []
        src_end = dst_end = None                                 # source and destination buffers
        for o in instr.operands:
            a = s.args.get(o.name)
            if a is None or o.kind not in (Kind.TILE, Kind.GLOBAL):
                continue
            writes = o.role is not Role.IN
            if isinstance(a, Value) and isinstance(a.type, TileType):
                tiles.append((self.slots[a.name], writes, a.name, a.type))
                end = buffer_name(a.type.loc)       # an inout tile's write covers its read
            elif isinstance(a, MemRef):
                globals_.append((self.slots[a.base.name], list(a.indices), writes, a.base.name, a.base.type))
                end = "GM"
            else:
                continue
            if writes and dst_end is None:
                dst_end = end
            if not writes and src_end is None:
                src_end = end
        pi = PIPE_INDEX.get(pipe, S)
        cost = self._cost(cls, pipe, src_end, dst_end, tiles)
        name = instr.mnemonic
        window_tile = tiles[0][0] if tiles else None
        self.units.update(u for u in (UNIT_OF_PIPE.get(pipe),
                                      *(UNIT_OF_BUFFER.get(buffer_name(t.loc)) for _, _, _, t in tiles)) if u)
        hbm = self._hbm(cls, pipe, src_end, dst_end, tiles, globals_)
        reads_l2 = hbm is not None and dst_end != "GM" and bool(globals_)    # a read whose bytes L2 may hold
        l2_base, l2_tile = (globals_[0][0], tiles[0][0]) if reads_l2 else (0, 0)
        tile_slots = [(slot, w) for slot, w, _, _ in tiles]
        pick = _picker([slot for slot, _, _, _ in tiles])
        indexers = [_indexer([self._index(i) for i in idx]) for _, idx, _, _, _ in globals_]
        gms = [(base, w, gname, gtype, getattr(getattr(gtype, "layout", None), "name", "ND") == "ND")
               for base, _, w, gname, gtype in globals_]
        key = next(_PLAN_KEYS)          # this instruction's entry in a run's ``Placement.memo``
        bases = [base for base, _, _, _, _ in gms]
        one = gms[0] if len(gms) == 1 else None          # the usual case: one global operand

        def statics(regs: list, ctx: Context, tiles_now: tuple[Any, ...], place: Any) -> _Static:
            st = _Static(place.version, tiles_now, tuple(map(_VALID, tiles_now)), cost(regs))
            st.where = tuple(place.where.get(id(t)) for t in tiles_now)
            st.accesses = [place.tile(regs[slot], w) for slot, w in tile_slots] if place.track else None
            st.rows, st.cols = regs[window_tile].valid if window_tile is not None else (1, 1)
            st.moved = hbm(regs, ctx, _NO_INDICES) if hbm is not None and not reads_l2 else 0
            st.size = _valid_bytes(regs[l2_tile]) if reads_l2 else 0
            st.arrays = [regs[base] for base in bases]
            st.geos = [place.geometry(regs[base], st.rows, st.cols) if nd else None
                       for base, _, _, _, nd in gms]
            return st

        fresh = _freshness([slot for slot, _ in tile_slots], bases)

        def elsewhere(st: _Static, tiles_now: tuple[Any, ...], regs: list, place: Any) -> bool:
            """Whether ``st``, kept by another block of the launch (``Placement.shared``: no
            TASSIGN, the same placement count), holds for these tiles: each placed where that
            block's was, with the same valid region, over the same arrays."""
            where = place.where
            for t, at in zip(tiles_now, st.where):
                if at is None or where.get(id(t)) != at:
                    return False
            return (st.valids == tuple(map(_VALID, tiles_now))
                    and all(regs[base] is a for base, a in zip(bases, st.arrays)))

        def plan(regs: list, ctx: Context) -> Op:
            place = ctx.place    # type: ignore[attr-defined]
            st = place.memo.get(key)
            if st is None or st.version != place.version or not fresh(st, regs):
                tiles_now = pick(regs)
                if st is not None and place.shared and st.version == place.version \
                        and elsewhere(st, tiles_now, regs, place):
                    st.tiles = tiles_now        # this block's tiles: its later executions take the quick test
                else:
                    st = place.memo[key] = statics(regs, ctx, tiles_now, place)
            if not indexers:
                return Op(WORK, pi, st.cycles, name, loc, st.accesses, None, st.moved)
            ats = [at(regs) for at in indexers] if one is None else [indexers[0](regs)]
            moved = st.moved
            if reads_l2:                 # a window no block of the launch has read before crosses HBM
                seen = ctx.l2        # type: ignore[attr-defined]
                if seen is None:
                    moved = st.size
                else:
                    got = (id(regs[l2_base]), ats[0], regs[l2_tile].valid)
                    if got not in seen:
                        seen.add(got)
                        moved = st.size
            if not place.track:
                return Op(WORK, pi, st.cycles, name, loc, None, None, moved)
            if one is not None:
                at, geo = ats[0], st.geos[0]
                if geo is not None and len(at) == 2:    # ``at_rows``, inlined (the usual case)
                    base, rmax, cmax, s0, s1, span, pitch, width = geo
                    r0, c0 = at
                    if 0 <= r0 <= rmax and 0 <= c0 <= cmax:
                        lo = base + r0 * s0 + c0 * s1
                        return Op(WORK, pi, st.cycles, name, loc,
                                  [*st.accesses, Access("GM", lo, lo + span, one[1], (one[2], at), pitch, width)],
                                  None, moved)
                return Op(WORK, pi, st.cycles, name, loc,
                          [*st.accesses, self._global(place, regs[one[0]], at, one[3], (st.rows, st.cols), one[1],
                                                      one[2])], None, moved)
            acc = list(st.accesses)
            for (base, w, gname, gtype, _), at, geo in zip(gms, ats, st.geos):
                got = at_rows(geo, at[0], at[1], w, (gname, at)) if geo is not None and len(at) == 2 else None
                acc.append(got if got is not None else
                           self._global(place, regs[base], at, gtype, (st.rows, st.cols), w, gname))
            return Op(WORK, pi, st.cycles, name, loc, acc, None, moved)
        return plan

    def _index(self, v: Any) -> int | Callable[[list], Any]:
        """An index operand: its register slot, or a function giving its value."""
        return self.slots[v.name] if isinstance(v, Value) else self._scalar(v)

    def _hbm(self, cls: str, pipe: Pipe, src: str | None, dst: str | None, tiles: list[tuple[int, bool, str, TileType]],
             globals_: list[Any]) -> Callable[[list, Context, list], int] | None:
        """The bytes a transfer moves across HBM: every write to global memory, and a read of
        a global window no block of the launch has read before (a repeated read is served by
        the L2 cache: see docs/ascend_sim.md, 'Several cores'). The returned function takes
        the global operands' indices, worked out once by the plan."""
        path = self._path(pipe, src, dst) if cls == "transfer" else None
        if path is None or not self.machine.paths[path].hbm or not tiles:
            return None
        slots = [slot for slot, _, _, _ in tiles]
        size = _sizer()
        if dst == "GM" or not globals_:
            return lambda regs, ctx, ats: max(size(regs[i]) for i in slots)
        base = globals_[0][0]
        tile = slots[0]

        def read(regs: list, ctx: Context, ats: list) -> int:
            key = (id(regs[base]), ats[0], regs[tile].valid)
            seen = ctx.l2        # type: ignore[attr-defined]
            if seen is not None:
                if key in seen:
                    return 0
                seen.add(key)
            return size(regs[tile])
        return read

    @staticmethod
    def _path(pipe: Pipe, src: str | None, dst: str | None) -> str:
        return PATH_BY_ENDS.get((src or "", dst or "")) or PIPE_DEFAULT_PATH.get(pipe, "UB->UB")

    @staticmethod
    def _global(place: Any, array: Any, idx: tuple[int, ...], gtype: Any, shape: tuple[int, int], write: bool,
                name: str) -> Access:
        what = f"%{name}[{', '.join(map(str, idx))}]"
        layout = getattr(getattr(gtype, "layout", None), "name", "ND")
        try:
            if layout == "ND" and array.ndim >= 1:
                return place.window(GlobalRef(array, idx).window(*shape), write, what)
        except PTOError:
            pass
        return place.window(array, write, what)            # other layouts: the whole tensor

    def _cost(self, cls: str, pipe: Pipe, src: str | None, dst: str | None,
              tiles: list[tuple[int, bool, str, TileType]]) -> Callable[[list], float]:
        """The instruction's cycles from the machine; vector and transfer costs depend on the
        bytes only, so they are remembered per byte count (the machine does not change)."""
        m = self.machine
        slots = [slot for slot, _, _, _ in tiles]
        if cls.startswith("vec_"):
            return _by_bytes(slots, lambda n: m.vector_cycles(cls, n))
        if cls == "cube":
            left = next((slot for slot, _, _, t in tiles if t.loc.value == "left"), None)
            right = next((slot for slot, _, _, t in tiles if t.loc.value == "right"), None)
            if left is None or right is None:
                return lambda regs: m.cube_issue_cycles

            def cube(regs: list) -> float:
                a, b = regs[left], regs[right]
                (mm, k), n = a.valid, b.valid[1]
                rows, cols = a.type.shape
                return m.cube_cycles(mm, k, n, a.type.nbytes / max(rows * cols, 1))
            return cube
        if cls == "transfer":
            path = self._path(pipe, src, dst)
            moved = [slot for slot, w, _, _ in tiles if w] or slots     # the bytes written (TEXTRACT: the slice)
            return _by_bytes(moved, lambda n: m.transfer_cycles(path, n))
        return lambda regs: 0.0             # scalar work: its issue cycle is all it costs


_NO_INDICES: list = []


def global_uses(kernel: Kernel) -> dict[str, frozenset[tuple[int, bool]]] | None:
    """Per global parameter, every (pipe index, writes) a tile instruction of the kernel may
    touch it with (``hazards.Shadow``'s ``uses``); None unless every global operand is a
    parameter whose name nothing defines again (no tensor view): only then does every global
    access lie inside its own parameter's array."""
    params = {p.name for p in kernel.params}
    uses: dict[str, set[tuple[int, bool]]] = {}
    for s in kernel.walk():
        if isinstance(s, View):
            return None
        defined = [getattr(s, n, None) for n in ("result", "value", "iv")]
        defined += [*getattr(s, "results", ()), *getattr(s, "iter_args", ())]
        if any(isinstance(v, Value) and v.name in params for v in defined):
            return None
        if isinstance(s, TileOp):
            pipe = PIPE_INDEX.get(s.instr.pipe_for(s.types()), S)
            for o in s.instr.operands:
                a = s.args.get(o.name)
                if isinstance(a, MemRef):
                    if a.base.name not in params:
                        return None
                    uses.setdefault(a.base.name, set()).add((pipe, o.role is not Role.IN))
    return {name: frozenset(u) for name, u in uses.items()}


def _indexer(idx: list[int | Callable[[list], Any]]) -> Callable[[list], tuple[Any, ...]]:
    """The index tuple of a global operand from the registers: each index a register slot (an
    int) or a function of the registers; unrolled for the usual two slots."""
    if len(idx) == 2 and all(isinstance(i, int) for i in idx):
        a, b = idx
        return lambda regs: (regs[a], regs[b])
    get = [(lambda regs, i=i: regs[i]) if isinstance(i, int) else i for i in idx]
    if len(get) == 2:
        f, g = get
        return lambda regs: (f(regs), g(regs))
    return lambda regs: tuple(f(regs) for f in get)


def _picker(slots: list[int]) -> Callable[[list], tuple[Any, ...]]:
    """The tiles in ``slots`` as a tuple (C-level ``itemgetter`` for two or more)."""
    if len(slots) > 1:
        return itemgetter(*slots)
    if slots:
        (only,) = slots
        return lambda regs: (regs[only],)
    return lambda regs: ()


_VALID = attrgetter("valid")


def _freshness(tiles: list[int], arrays: list[int]) -> Callable[[Any, list], bool]:
    """Whether a kept ``_Static`` still holds: the same tile objects in ``tiles`` with the same
    valid regions, the same arrays in ``arrays`` (unrolled for the usual operand counts)."""
    if len(tiles) == 1 and len(arrays) == 1:
        (t0,), (g0,) = tiles, arrays
        return lambda st, regs: ((t := regs[t0]) is st.tiles[0] and t.valid == st.valids[0]
                                 and regs[g0] is st.arrays[0])
    if len(tiles) == 2 and not arrays:
        t0, t1 = tiles
        return lambda st, regs: ((a := regs[t0]) is st.tiles[0] and (b := regs[t1]) is st.tiles[1]
                                 and a.valid == st.valids[0] and b.valid == st.valids[1])
    if len(tiles) == 3 and not arrays:
        t0, t1, t2 = tiles
        return lambda st, regs: ((a := regs[t0]) is st.tiles[0] and (b := regs[t1]) is st.tiles[1]
                                 and (c := regs[t2]) is st.tiles[2] and a.valid == st.valids[0]
                                 and b.valid == st.valids[1] and c.valid == st.valids[2])
    pick = itemgetter(*tiles) if len(tiles) > 1 else (lambda regs: (regs[tiles[0]],) if tiles else ())

    def fresh(st: Any, regs: list) -> bool:
        now = pick(regs)
        return (st.tiles == now and st.valids == tuple(map(_VALID, now))
                and not any(map(is_not, st.arrays, map(regs.__getitem__, arrays))))
    return fresh
_PLAN_KEYS = count()


def _valid_bytes(t: Any) -> int:
    """Bytes of a tile's valid region (its packed size scaled by the valid fraction)."""
    rows, cols = t.type.shape
    r, c = t.valid
    return t.type.nbytes * r * c // max(rows * cols, 1)


class _Static:
    """What one tile instruction issues that stays put while its tiles, their valid regions, its
    global arrays and the placement do (kept per run in ``Placement.memo``, or per launch when
    its blocks share it): cycles, the tiles' regions, the window shape and its geometry over each
    array, the HBM bytes of a write (or the tile bytes of a read, L2 permitting), and where each
    tile was placed (for another block's check)."""

    __slots__ = ("version", "tiles", "valids", "cycles", "accesses", "rows", "cols", "moved", "size", "arrays", "geos",
                 "where")

    def __init__(self, version: int, tiles: tuple[Any, ...], valids: tuple[Any, ...], cycles: float) -> None:
        self.version, self.tiles, self.valids, self.cycles = version, tiles, valids, cycles


def _by_bytes(slots: list[int], cycles: Callable[[int], float]) -> Callable[[list], float]:
    """``cycles`` of the largest valid region among the tiles in ``slots``, remembered per size."""
    memo: dict[int, float] = {}
    size = _sizer()
    if len(slots) == 1:
        (only,) = slots

        def one(regs: list) -> float:
            n = size(regs[only])
            c = memo.get(n)
            if c is None:
                c = memo[n] = cycles(n)
            return c
        return one

    def cost(regs: list) -> float:
        n = max((size(regs[i]) for i in slots), default=0)
        c = memo.get(n)
        if c is None:
            c = memo[n] = cycles(n)
        return c
    return cost
