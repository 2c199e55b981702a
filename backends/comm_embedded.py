"""The embedded execution of a multi-rank launch: N ranks as threads in one process.

Backend-neutral: the reference backend runs its interpreted blocks as these agents, the llvm
backend its native blocks (whose comm instructions call back into the agent's ``World``
methods), so both share one baton, one race detector and one deadlock detector.

Every (rank, block) pair is an *agent* on its own thread, but only the agent holding the
baton runs: it keeps it until it blocks in TWAIT, polls a false TTEST, or ends, and then
hands it to the next agent (in rank-major order) that can proceed. So a run is
deterministic, shared numpy data is never touched by two threads at once, and a wait no
agent can satisfy is found the moment nobody can proceed (RUNTIME_COMM_DEADLOCK naming
every waiting rank and signal) instead of hanging.

Races (decision 'Comm memory model'): each agent has a vector clock; a TNOTIFY releases
the notifier's clock into the signal, a satisfied TWAIT (or true TTEST) acquires the clocks
of the signals it read. Every global element of a symmetric tensor remembers its last
writer and that writer's epoch; an access by another agent whose clock has not reached
that epoch read or overwrote data nothing made visible to it: ORDER_COMM_RACE.
"""
from __future__ import annotations

import operator
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..isa.attrs import CmpMode, NotifyOp
from ..isa.diagnostics import Location, OrderError, PTOError, RuntimeFault
from ..isa.spec import WHOLE
from ..isa.types import GlobalLayout, GlobalType, TileType
from ..isa.values import GlobalRef, Tile
from ..isa.world import World, accumulate, notified, satisfied
from .arrays import describe

#: the most ranks one embedded launch may have (each (rank, block) pair is a thread)
MAX_RANKS = 256
#: the most (rank, block) agents one embedded launch may have: each is a thread holding a vector
#: clock over all of them (memory grows with the square)
MAX_AGENTS = 4096


def check_ranks(ranks: Any) -> int:
    """``ranks`` as an int in [1, MAX_RANKS], else PTO_RANKS."""
    value: int | None = None
    if not isinstance(ranks, bool):
        try:
            value = operator.index(ranks)
        except Exception:                        # noqa: BLE001 - a foreign __index__ may raise anything
            value = None
    if value is None or not 1 <= value <= MAX_RANKS:
        raise PTOError("PTO_RANKS", "ranks must be an integer from 1 to MAX_RANKS",
                       expected=f"an int in [1, {MAX_RANKS}]", actual=(describe(ranks) if value is None
                                                                       else str(value))[:80])
    return value


def split_ranks(kernel: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                ranks: int) -> list[tuple[list[Any], dict[str, Any]]]:
    """Each rank's arguments: an array parameter (global or tile) takes a list or tuple of one
    array per rank (its symmetric instances); a scalar is the same on every rank."""
    params = {p.name: p for p in kernel.params}
    per: list[tuple[list[Any], dict[str, Any]]] = [([], {}) for _ in range(ranks)]
    given = [(name, v, True) for name, v in zip((p.name for p in kernel.params), args)]
    given += [(name, v, False) for name, v in kwargs.items()]
    for name, v, positional in given:
        p = params.get(name)
        if p is not None and isinstance(p.type, (GlobalType, TileType)):
            if not isinstance(v, (list, tuple)) or len(v) != ranks:
                raise RuntimeFault("RUNTIME_ARG_TYPE", f"argument %{name} of a {ranks}-rank launch takes one "
                                   "array per rank (its symmetric instances)", location=Location(kernel=kernel.name),
                                   expected=f"a list of {ranks} arrays",
                                   actual=f"{type(v).__name__}" + (f" of {len(v)}" if isinstance(v, (list, tuple))
                                                                    else ""))
            values = list(v)
        else:
            values = [v] * ranks
        for r in range(ranks):
            if positional:
                per[r][0].append(values[r])
            else:
                per[r][1][name] = values[r]
    return per


def check_instances(kernel: Any, bound: list[dict[str, Any]]) -> dict[str, list[np.ndarray]]:
    """The symmetric tensors: every rank's instance of a global parameter has one shape and
    is C-contiguous (a remote access is an offset in it); no two ranks share memory for an
    array parameter (global or tile), and no two global parameters share memory on one rank
    (a remote access names its tensor by address, so aliases could not be told apart)."""
    out: dict[str, list[np.ndarray]] = {}
    where = Location(kernel=kernel.name)
    for p in kernel.params:
        if isinstance(p.type, TileType):
            tiles = [np.asarray(b[p.name]) for b in bound]
            for r in range(len(tiles)):
                for q in range(r):
                    if tiles[r].size and np.may_share_memory(tiles[r], tiles[q]):
                        raise RuntimeFault("RUNTIME_ARG_OVERLAP", f"ranks {q} and {r} share memory for tile "
                                           f"%{p.name}", location=where, expected="one array per rank",
                                           actual=f"ranks {q} and {r} overlap")
        if not isinstance(p.type, GlobalType):
            continue
        inst = [b[p.name] for b in bound]
        for r, a in enumerate(inst):
            if a.shape != inst[0].shape:
                raise RuntimeFault("RUNTIME_ARG_SHAPE", f"rank {r}'s instance of symmetric %{p.name} differs "
                                   "in shape from rank 0's", location=where, expected=f"shape {inst[0].shape}",
                                   actual=f"shape {a.shape}")
            if not a.flags.c_contiguous:
                raise RuntimeFault("RUNTIME_ARG_STRIDES", f"rank {r}'s instance of symmetric %{p.name} is not "
                                   "C-contiguous", location=where, expected="a C-contiguous array",
                                   actual=f"strides {a.strides}")
        for r in range(len(inst)):
            for q in range(r):
                if inst[r].size and np.may_share_memory(inst[r], inst[q]):
                    raise RuntimeFault("RUNTIME_ARG_OVERLAP", f"ranks {q} and {r} share memory for symmetric "
                                       f"%{p.name}", location=where, expected="one array per rank",
                                       actual=f"ranks {q} and {r} overlap")
        out[p.name] = inst
    names = list(out)
    for r in range(len(bound)):
        for i, a in enumerate(names):
            for b in names[:i]:
                if out[a][r].size and out[b][r].size and np.may_share_memory(out[a][r], out[b][r]):
                    raise RuntimeFault("RUNTIME_ARG_OVERLAP", f"symmetric %{b} and %{a} share memory on rank {r}: "
                                       "a remote access could not tell them apart", location=where,
                                       expected="separate arrays per symmetric tensor",
                                       actual=f"%{b} and %{a} overlap on rank {r}")
    return out


#: ``_Instance.writer`` of an element last written by several unordered ADD puts
ADDERS = -2


@dataclass
class _Instance:
    """One rank's instance of one symmetric tensor, with its race shadow (per element: the
    last writing agent, -1 for none, ``ADDERS`` for several unordered ADD puts, that agent's
    epoch then, and whether that write was an ADD put). ADD puts are atomic with respect to
    each other (decision 'Comm memory model'), so they do not race among themselves; an
    element they reached unordered keeps every adder and its epoch in ``adders`` (by flat
    index), so a later access must be ordered after each of them."""

    name: str
    rank: int
    array: np.ndarray
    start: int
    end: int
    writer: np.ndarray = field(init=False)
    epoch: np.ndarray = field(init=False)
    added: np.ndarray = field(init=False)
    flat: np.ndarray = field(init=False)
    adders: dict[int, dict[int, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.writer = np.full(self.array.shape, -1, dtype=np.int32)
        self.epoch = np.zeros(self.array.shape, dtype=np.int64)
        self.added = np.zeros(self.array.shape, dtype=bool)
        self.flat = np.arange(self.array.size, dtype=np.int64).reshape(self.array.shape)

    def shadow(self, view: np.ndarray, table: np.ndarray) -> np.ndarray:
        """``table``'s elements at the places of ``view`` (a view into this instance)."""
        item = self.array.itemsize
        off = (view.__array_interface__["data"][0] - self.start) // item
        strides = tuple(s // item * table.itemsize for s in view.strides)
        return np.ndarray(view.shape, table.dtype, buffer=table, offset=off * table.itemsize, strides=strides)

    def translate(self, view: np.ndarray, other: "_Instance") -> np.ndarray:
        """The same elements in ``other``, another rank's instance of this tensor."""
        off = view.__array_interface__["data"][0] - self.start
        return np.ndarray(view.shape, view.dtype, buffer=other.array.reshape(-1), offset=off,
                          strides=view.strides)


class _Abort(BaseException):
    """Ends an agent's thread quietly after another agent failed (not a PTOError: never reported)."""


class Embedded:
    """The shared state of one launch: the instances, the baton and the clocks."""

    def __init__(self, ranks: int, block_num: int, instances: Mapping[str, list[np.ndarray]]) -> None:
        if ranks * block_num > MAX_AGENTS:
            raise PTOError("PTO_RANKS", "an embedded multi-rank launch runs every (rank, block) pair as a thread "
                           "of its own: too many", expected=f"ranks x block_num <= {MAX_AGENTS}",
                           actual=f"{ranks} x {block_num} = {ranks * block_num}")
        self.size = ranks
        self.block_num = block_num
        self.tables: list[_Instance] = []
        for name, per in instances.items():
            for r, a in enumerate(per):
                start = a.__array_interface__["data"][0]
                self.tables.append(_Instance(name, r, a, start, start + a.nbytes))
        self.by_name = {(t.name, t.rank): t for t in self.tables}
        n = ranks * block_num
        self.agents = [Agent(self, i // block_num, i % block_num, i, n) for i in range(n)]
        self.cv = threading.Condition()
        self.current: int | None = 0
        self.failed: BaseException | None = None
        self.signal_clocks: dict[tuple[str, int, int], np.ndarray] = {}

    # ------------------------------------------------------------------ memory
    def locate(self, view: np.ndarray, rank: int) -> _Instance | None:
        """The instance of ``rank`` holding ``view`` (None: not a symmetric tensor's memory)."""
        if view.size == 0:
            return None
        at = view.__array_interface__["data"][0]
        for t in self.tables:
            if t.rank == rank and t.start <= at < t.end:
                return t
        return None

    def remote(self, view: np.ndarray, rank: int, peer: int, what: str) -> tuple[np.ndarray, _Instance | None]:
        """``view`` (into ``rank``'s memory) as the same elements of ``peer``'s instance."""
        if view.size == 0:
            return view, None
        t = self.locate(view, rank)
        if t is None:
            if peer == rank:
                return view, None
            raise RuntimeFault("RUNTIME_COMM_SYMMETRIC", f"{what} is not in a symmetric tensor, so it has no "
                               f"instance on rank {peer}", expected="a view of a global parameter of the launch",
                               actual=f"an array of shape {view.shape}")
        if peer == rank:
            return view, t
        other = self.by_name[(t.name, peer)]
        return t.translate(view, other), other

    # ------------------------------------------------------------------ the baton
    def run_agent(self, agent: "Agent", body: Callable[["Agent"], Any]) -> Any:
        """``body(agent)`` on the calling thread once the baton reaches it; passes it on at the end."""
        try:
            with self.cv:
                self._await(agent)
            return body(agent)
        except _Abort:
            return None
        except BaseException as e:     # noqa: BLE001 - the first failure ends the launch
            with self.cv:
                if self.failed is None:
                    self.failed = e
            return None
        finally:
            with self.cv:
                agent.state = "done"
                if self.current == agent.index:
                    self._pass(agent.index)
                self.cv.notify_all()

    def _await(self, agent: "Agent") -> None:
        """Block until ``agent`` holds the baton; _Abort once another agent has failed."""
        while self.current != agent.index:
            if self.failed is not None:
                raise _Abort()
            self.cv.wait()

    def _pass(self, after: int) -> None:
        """Give the baton to the next agent that can run; on none, report the deadlock (or end)."""
        n = len(self.agents)
        if self.failed is not None:
            self.current = None
            self.cv.notify_all()
            return
        for step in range(1, n + 1):
            a = self.agents[(after + step) % n]
            if a.state == "ready" or (a.state == "waiting" and a.can_go()):
                self.current = a.index
                self.cv.notify_all()
                return
        waiting = [a for a in self.agents if a.state == "waiting"]
        if not waiting:
            self.current = None
            self.cv.notify_all()
            return
        lines = [a.describe_wait() for a in waiting]
        first = waiting[0]
        first.deadlock = RuntimeFault(
            "RUNTIME_COMM_DEADLOCK", f"{lines[0]}, and no rank can change it: every unfinished rank waits",
            expected="a TNOTIFY that satisfies the wait, from a rank still running",
            actual="; ".join(lines))
        self.current = first.index
        self.cv.notify_all()


@dataclass
class _Wait:
    view: np.ndarray
    cmp: CmpMode
    value: int
    what: str


class Agent(World):
    """One (rank, block) of the launch: the ``World`` its comm instructions run in."""

    def __init__(self, shared: Embedded, rank: int, block: int, index: int, agents: int) -> None:
        self.E = shared
        self.rank, self.size, self.block, self.index = rank, shared.size, block, index
        self.clock = np.zeros(agents, dtype=np.int64)
        self.clock[index] = 1
        self.state = "ready"
        self.waiting: _Wait | None = None
        self.deadlock: RuntimeFault | None = None

    # ------------------------------------------------------------------ races
    def _check(self, view: np.ndarray, t: _Instance | None, what: str, write: bool, add: bool = False) -> None:
        """ORDER_COMM_RACE when an element of ``view`` was last written by another agent at an
        epoch this agent's clock has not reached (an ADD put ``add`` is not ordered against
        earlier ADD puts: they are atomic with respect to each other); a write then records
        this agent's epoch."""
        if t is None or view.size == 0:
            return
        writer, epoch, added = t.shadow(view, t.writer), t.shadow(view, t.epoch), t.shadow(view, t.added)
        other = (writer >= 0) & (writer != self.index)
        late = np.zeros(view.shape, dtype=bool)
        if other.any():
            late[other] = self.clock[writer[other]] < epoch[other]
            excused = late & added if add else None
            bad = late & ~added if add else late
            if bad.any():
                at = tuple(int(i) for i in np.argwhere(bad)[0])
                self._race(t, what, write, at, int(writer[at]), int(epoch[at]))
        else:
            excused = None
        several = writer == ADDERS
        if several.any():
            flats = t.shadow(view, t.flat)
            for at in map(tuple, np.argwhere(several)):
                for agent, ep in t.adders[int(flats[at])].items():
                    if agent != self.index and self.clock[agent] < ep and not add:
                        self._race(t, what, write, tuple(int(i) for i in at), agent, ep)
        if not write:
            return
        flats = t.shadow(view, t.flat) if (several.any() or (excused is not None and excused.any())) else None
        if add and flats is not None:
            # unordered ADD puts meet: the element keeps every adder not yet ordered
            join = several | (excused if excused is not None else False)
            for at in map(tuple, np.argwhere(join)):
                key = int(flats[at])
                prev = t.adders.pop(key, None) or {int(writer[at]): int(epoch[at])}
                keep = {a: e for a, e in prev.items() if a != self.index and self.clock[a] < e}
                keep[self.index] = int(self.clock[self.index])
                t.adders[key] = keep
            mine = ~join
            writer[mine], epoch[mine] = self.index, self.clock[self.index]
            writer[join] = ADDERS
            added[...] = True
            return
        if flats is not None:
            for key in flats[several].tolist():
                t.adders.pop(int(key), None)
        writer[...] = self.index
        epoch[...] = self.clock[self.index]
        added[...] = add

    def _race(self, t: _Instance, what: str, write: bool, at: tuple[int, ...], culprit: int, ep: int) -> None:
        src = self.E.agents[culprit]
        raise OrderError("ORDER_COMM_RACE", f"rank {self.rank}{self._blk(self)} {'writes' if write else 'reads'} {what} "
                         f"(%{t.name} of rank {t.rank}, element {list(at)}), which rank {src.rank}"
                         f"{self._blk(src)} wrote and no TWAIT or TTEST made visible to it",
                         expected=f"a TNOTIFY by rank {src.rank} after the write, observed by a TWAIT of "
                                  f"rank {self.rank} before this access",
                         actual=f"no such notify and wait (clock {int(self.clock[culprit])} < epoch {ep})")

    def _blk(self, a: "Agent") -> str:
        return f" (block {a.block})" if self.E.block_num > 1 else ""

    def access(self, view: np.ndarray, write: bool, what: str) -> None:
        """An ordinary instruction's access to this rank's global memory (TLOAD, TSTORE, ...)."""
        self._check(view, self.E.locate(view, self.rank), what, write)

    # ------------------------------------------------------------------ World
    def get(self, view: np.ndarray, peer: int, what: str) -> np.ndarray:
        p = self.check_peer(peer, what)
        there, t = self.E.remote(view, self.rank, p, what)
        self._check(there, t, what, write=False)
        return np.array(there, copy=True)

    def put(self, view: np.ndarray, peer: int, values: np.ndarray, what: str, add: bool = False) -> None:
        p = self.check_peer(peer, what)
        there, t = self.E.remote(view, self.rank, p, what)
        self._check(there, t, what, write=True, add=add)
        if add:
            accumulate(there, values)
        else:
            there[...] = values

    def _signal_key(self, view: np.ndarray, t: _Instance | None) -> tuple[str, int, int]:
        at = view.__array_interface__["data"][0]
        return (t.name, t.rank, at - t.start) if t is not None else ("", -1, at)

    def notify(self, view: np.ndarray, peer: int, value: int, op: NotifyOp, what: str) -> None:
        p = self.check_peer(peer, what)
        there, t = self.E.remote(view, self.rank, p, what)
        there[...] = notified(there, op, value)
        key = self._signal_key(there, t)
        old = self.E.signal_clocks.get(key)
        self.E.signal_clocks[key] = self.clock.copy() if old is None else np.maximum(old, self.clock)
        self.clock[self.index] += 1         # later writes are not released by this notify

    def _acquire(self, view: np.ndarray) -> None:
        t = self.E.locate(view, self.rank)
        flat = view.reshape(-1) if view.flags.c_contiguous else None
        items = [view[idx] for idx in np.ndindex(view.shape)] if flat is None else [flat[i:i + 1] for i in
                                                                                   range(flat.size)]
        for item in items:
            key = self._signal_key(np.asarray(item), t)
            c = self.E.signal_clocks.get(key)
            if c is not None:
                np.maximum(self.clock, c, out=self.clock)

    def wait(self, view: np.ndarray, cmp: CmpMode, value: int, what: str) -> None:
        if satisfied(view, cmp, value):
            self._acquire(view)
            return
        self.waiting = _Wait(view, cmp, value, what)
        with self.E.cv:
            self.state = "waiting"
            self.E._pass(self.index)
            self.E._await(self)
            self.state = "ready"
        self.waiting = None
        if self.deadlock is not None:
            raise self.deadlock
        self._acquire(view)

    def test(self, view: np.ndarray, cmp: CmpMode, value: int, what: str) -> bool:
        if satisfied(view, cmp, value):
            self._acquire(view)
            return True
        with self.E.cv:                 # let the others run before this agent polls again
            self.E._pass(self.index)
            self.E._await(self)
        return False

    def can_go(self) -> bool:
        w = self.waiting
        return w is None or satisfied(w.view, w.cmp, w.value)

    def describe_wait(self) -> str:
        w = self.waiting
        assert w is not None
        t = self.E.locate(w.view, self.rank)
        name = f"%{t.name}" if t is not None else "a signal"
        now = np.asarray(w.view).ravel()[:8].tolist()
        return (f"rank {self.rank}{self._blk(self)} waits on {w.what} {name} until {w.cmp.name} {w.value} "
                f"(now {now})")


def accessed(kw: Mapping[str, Any], name: str, window: str | None) -> np.ndarray | None:
    """The part of global operand ``name`` an ordinary instruction touches: its tile window,
    or the whole tensor (indexed gathers, scale and convolution layouts: all of it, to be safe)."""
    ref = kw.get(name)
    if not isinstance(ref, GlobalRef):
        return None
    tile = kw.get(window) if window not in (None, WHOLE) else None
    return window_accessed(ref, window, tile.valid if isinstance(tile, Tile) else None)


def window_accessed(ref: GlobalRef, window: str | None, valid: tuple[int, int] | None) -> np.ndarray | None:
    """``accessed`` given the window tile's valid extents (None: no tile operand names it), for
    a backend that has the extents but no ``Tile`` (the llvm backend's callback)."""
    if window in (None, WHOLE) or ref.layout not in (GlobalLayout.ND, GlobalLayout.DN) or valid is None:
        return ref.array
    try:
        return ref.window(*valid)
    except PTOError:
        return None                         # the semantics report the bad window themselves
