"""Communication across ranks (the public comm ISA): one-sided puts and gets into another
rank's instance of a symmetric tensor, signals, and root-driven collectives.

Every semantics function takes the ``world`` it runs in (isa/world.py): the rank, the rank
count and the get / put / notify / wait / test operations on symmetric tensors. Called
without one (a one-rank launch, a direct call) it runs in ``SoloWorld``. A remote location is
named by this rank's own view of the symmetric tensor plus a rank id (``peer``), where the
public API passes a remote address: decision 'Comm operands: symmetric tensors and a peer'.

Transfer sizes follow one rule: the whole-tensor operand gives the shape, and the indexed
operand's window of that shape at its indices must lie inside its tensor (RUNTIME_OOB
before anything moves). The memory model (when a remote write is visible, what orders it)
is decision 'Comm memory model'.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .. import dtypes as dt
from .. import constraints as K
from ..attrs import AtomicMode, CmpMode, NotifyOp, ReduceOp
from ..diagnostics import RuntimeFault
from ..registry import declare
from ..spec import (ELEMENT, WHOLE, Attr, Domain, EXACT, Example, Family, Instruction, Kind, Numerics, Operand, Role,
                    same, tuples)
from ..types import GlobalType, Pipe, Type
from ..values import GlobalRef
from ..world import SOLO, World, accumulate, is_float
from ._helpers import index_in

#: the profiles whose public headers implement the comm family (include/pto/comm/a2a3, a5),
#: and cpu, where the embedded execution runs it
COMM_PROFILES = ("cpu", "a2", "a3", "a5")
#: data a put, get, broadcast, gather or scatter moves bit for bit
_MOVE = dt.STORABLE
#: data TREDUCE combines (no i1 and no fp8: an 8-bit float sum has no headroom)
_REDUCE = dt.FLOATS + dt.INTS
_MEMREF = "!pto.memref<16x16xf32>"
_SIGNAL = "!pto.memref<4xi32>"
_MODEL = " Visibility and ordering: decision 'Comm memory model' (docs/comm.md)."


# ----------------------------------------------------------------------------- helpers

def _whole(ref: GlobalRef, what: str) -> np.ndarray:
    """A whole-tensor operand: its written indices must be zero."""
    if any(ref.offsets):
        raise RuntimeFault("RUNTIME_GLOBAL_INDEX", f"{what} addresses the whole tensor; write it without "
                           "indices or with zero indices", expected="all indices 0", actual=list(ref.offsets))
    return ref.array


def _window(ref: GlobalRef, shape: tuple[int, ...], what: str) -> np.ndarray:
    """The window of ``shape`` at ``ref``'s indices; RUNTIME_OOB when it leaves the tensor."""
    a = ref.array
    if a.ndim != len(shape):
        raise RuntimeFault("RUNTIME_INDEX_ARITY", f"{what} has rank {a.ndim}, the moved data rank {len(shape)}",
                           expected=len(shape), actual=a.ndim)
    for d, (o, n, ext) in enumerate(zip(ref.offsets, shape, a.shape)):
        if o < 0 or o + n > ext:
            raise RuntimeFault("RUNTIME_OOB", f"{what} accessed out of bounds in dim {d}",
                               expected=f"indices in [0, {ext})", actual=f"[{o}, {o + n})")
    return a[tuple(slice(o, o + n) for o, n in zip(ref.offsets, shape))]


def _rows_axis(a: np.ndarray) -> int:
    """The axis TGATHER_COMM / TSCATTER_COMM concatenate along: rows (DIM_3 of a 5-D tensor)."""
    return max(a.ndim - 2, 0)


def _slab(a: np.ndarray, axis: int, k: int, h: int, shape: tuple[int, ...], what: str) -> np.ndarray:
    """Rows [k*h, (k+1)*h) of ``a`` along ``axis``, every other dim of extent ``shape``'s."""
    ref = GlobalRef(a, tuple(k * h if d == axis else 0 for d in range(a.ndim)))
    return _window(ref, shape, what)


def _same_rank(x: str, y: str) -> K.Constraint:
    def check(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
        a, b = types.get(x), types.get(y)
        if isinstance(a, GlobalType) and isinstance(b, GlobalType) and a.rank != b.rank:
            return f"{x} has rank {a.rank}, {y} rank {b.rank}: the window of one is the shape of the other"
        return None
    return K.custom(f"{x} and {y} have the same rank", check, "STRUCT_SHAPE")


def _atomic_none_add(types: Mapping[str, Type], attrs: Mapping[str, Any]) -> str | None:
    a = attrs.get("atomicType", AtomicMode.NONE)
    return None if a in (AtomicMode.NONE, AtomicMode.ADD) else f"atomicType = {a.name}: a put takes NONE or ADD"


def _peer() -> Operand:
    return index_in("peer", "the rank id of the other side of the transfer (this rank's own id is allowed)",
                    bounds=(0, None))


def _w(world: World | None) -> World:
    return SOLO if world is None else world


# ----------------------------------------------------------------------------- point to point

def _tput(dst: GlobalRef, src: GlobalRef, peer: int, atomicType: AtomicMode = AtomicMode.NONE,
          world: World | None = None) -> None:
    w = _w(world)
    p = w.check_peer(peer, "TPUT peer")
    data = _whole(src, "TPUT source")
    window = _window(dst, data.shape, "TPUT destination")
    w.put(window, p, w.get(data, w.rank, "TPUT source"), "TPUT destination", add=atomicType is AtomicMode.ADD)


def _tget(dst: GlobalRef, src: GlobalRef, peer: int, world: World | None = None) -> None:
    w = _w(world)
    p = w.check_peer(peer, "TGET peer")
    local = _whole(dst, "TGET destination")
    window = _window(src, local.shape, "TGET source")
    w.put(local, w.rank, w.get(window, p, "TGET source"), "TGET destination")


_PUT_OPS = (Operand("dst", Role.OUT, Kind.GLOBAL, "the destination, named by this rank's instance of a "
                    "symmetric tensor at the window origin; written in rank peer's instance", window="src"),
            Operand("src", Role.IN, Kind.GLOBAL, "the local data: the whole tensor (or view), whose shape is "
                    "the transfer's", window=WHOLE),
            _peer())
_GET_OPS = (Operand("dst", Role.OUT, Kind.GLOBAL, "the local destination: the whole tensor (or view), whose "
                    "shape is the transfer's", window=WHOLE),
            Operand("src", Role.IN, Kind.GLOBAL, "the source, named by this rank's instance of a symmetric "
                    "tensor at the window origin; read from rank peer's instance", window="dst"),
            _peer())
_ASYNC_EVENT = Operand("event", Role.OUT, Kind.EVENT, "the AsyncEvent token (`%e = tput_async ...`); a later "
                       "`tsync %e` waits for the transfer", optional=True)
_PUT_DOC = ("dst^(peer)[o + i] = src[i] for every index i of src (o: dst's indices): the whole local src "
            "lands in rank peer's instance of the symmetric tensor dst, at the window of src's shape whose "
            "origin is dst's indices (dst and src have the same rank). With atomicType = ADD each element is "
            "added to the destination instead (integers wrap; f16/bf16 add in f32 and round once), atomically "
            "with respect to other ADD puts. The public form takes a UB staging tile (or ping/pong tiles) "
            "and chunks large tensors through it; here the transfer is one instruction and lowering owns the "
            "staging (decision 'Comm operands: symmetric tensors and a peer').")
_GET_DOC = ("dst[i] = src^(peer)[o + i] for every index i of dst (o: src's indices): the window of dst's "
            "shape at src's indices in rank peer's instance of the symmetric tensor src is copied into the "
            "whole local dst. The public staging tiles are lowering's business, as for TPUT.")
_OOB = ("A window past the end of the (remote) tensor: RUNTIME_OOB, checked before anything moves; a peer "
        "outside [0, ranks): RUNTIME_COMM_RANK; a remote address in a tensor that is not symmetric: "
        "RUNTIME_COMM_SYMMETRIC. Bits are moved (NaN payloads, -0 kept).")
_ASYNC_DOC = (" Asynchronous form: the transfer starts and the instruction returns its AsyncEvent; the data is "
              "only guaranteed at the destination once the event has been waited on (`tsync %e`). Functional "
              "backends complete the transfer as it is issued, which is one schedule the model allows. The "
              "public session (SDMA/URMA/RDMA workspace, scratch tile) carries no values and is not an operand.")


def _pair_example() -> Example:
    return Example({"dst": _MEMREF, "src": _MEMREF, "peer": "index"}, scalars={"peer": 0})


declare(Instruction(
    mnemonic="TPUT", family=Family.COMM, summary="write local data into another rank's symmetric tensor",
    operands=_PUT_OPS, attrs=(Attr("atomicType", AtomicMode, AtomicMode.NONE, "NONE (store) or ADD (atomic add)"),),
    semantics=_tput, dtypes=same(("dst", "src"), _MOVE), numerics=EXACT, domain=Domain.NONE, pipe=Pipe.ALL,
    profiles=COMM_PROFILES, doc=_PUT_DOC + _MODEL,
    special_values=_OOB + " ADD on i1 or fp8 data: LEGAL_DTYPE.",
    example=_pair_example(),
    more_examples=(Example({"dst": _MEMREF, "src": _MEMREF, "peer": "index"}, {"atomicType": AtomicMode.ADD},
                           scalars={"peer": 0}),),
    constraints=(_same_rank("dst", "src"),
                 K.custom("atomicType is NONE or ADD", _atomic_none_add, "STRUCT_ATTR_VALUE"),
                 K.custom("ADD needs an arithmetic element type",
                          lambda t, a: "an atomic ADD put takes f16 bf16 f32 or an integer type"
                          if a.get("atomicType") is AtomicMode.ADD and isinstance(t.get("src"), GlobalType)
                          and t["src"].dtype not in _REDUCE else None, "LEGAL_DTYPE"))))

declare(Instruction(
    mnemonic="TGET", family=Family.COMM, summary="read another rank's symmetric tensor into local memory",
    operands=_GET_OPS, semantics=_tget, dtypes=same(("dst", "src"), _MOVE), numerics=EXACT, domain=Domain.NONE,
    pipe=Pipe.ALL, profiles=COMM_PROFILES, doc=_GET_DOC + _MODEL, special_values=_OOB,
    example=_pair_example(), constraints=(_same_rank("dst", "src"),)))


def _tput_async(dst: GlobalRef, src: GlobalRef, peer: int, world: World | None = None) -> None:
    _tput(dst, src, peer, AtomicMode.NONE, world)


def _tget_async(dst: GlobalRef, src: GlobalRef, peer: int, world: World | None = None) -> None:
    _tget(dst, src, peer, world)


declare(Instruction(
    mnemonic="TPUT_ASYNC", family=Family.COMM, summary="start a put; its event says when it is complete",
    operands=_PUT_OPS + (_ASYNC_EVENT,), semantics=_tput_async, dtypes=same(("dst", "src"), _MOVE),
    numerics=EXACT, domain=Domain.NONE, pipe=Pipe.S, profiles=COMM_PROFILES,
    doc=_PUT_DOC.split(" With atomicType")[0] + _ASYNC_DOC + _MODEL, special_values=_OOB,
    example=_pair_example(), constraints=(_same_rank("dst", "src"),)))

declare(Instruction(
    mnemonic="TGET_ASYNC", family=Family.COMM, summary="start a get; its event says when it is complete",
    operands=_GET_OPS + (_ASYNC_EVENT,), semantics=_tget_async, dtypes=same(("dst", "src"), _MOVE),
    numerics=EXACT, domain=Domain.NONE, pipe=Pipe.S, profiles=COMM_PROFILES,
    doc=_GET_DOC.split(" The public")[0] + _ASYNC_DOC + _MODEL, special_values=_OOB,
    example=_pair_example(), constraints=(_same_rank("dst", "src"),)))


# ----------------------------------------------------------------------------- signals

def _tnotify(signal: GlobalRef, value: int, peer: int, op: NotifyOp, world: World | None = None) -> None:
    w = _w(world)
    p = w.check_peer(peer, "TNOTIFY peer")
    w.notify(_window(signal, (1,) * signal.array.ndim, "TNOTIFY signal"), p, int(value), op, "TNOTIFY signal")


def _twait(signal: GlobalRef, cmpValue: int, cmp: CmpMode, world: World | None = None) -> None:
    _w(world).wait(_whole(signal, "TWAIT signal"), cmp, int(cmpValue), "TWAIT signal")


def _ttest(signal: GlobalRef, cmpValue: int, cmp: CmpMode, world: World | None = None, result: Any = None) -> bool:
    """``result`` (the output's earlier value, when a caller passes every operand) is not read."""
    return _w(world).test(_whole(signal, "TTEST signal"), cmp, int(cmpValue), "TTEST signal")


_CMP_ATTR = Attr("cmp", CmpMode, None, "the comparison, signal against cmpValue: EQ NE GT GE LT LE")
_WAIT_OPS = (Operand("signal", Role.IN, Kind.GLOBAL, "this rank's own signals: one i32 (a one-element tensor) "
                     "or a signal tensor, every element of which must satisfy the comparison", window=WHOLE),
             Operand("cmpValue", Role.IN, Kind.SCALAR, "the i32 value compared with"))

declare(Instruction(
    mnemonic="TNOTIFY", family=Family.COMM, summary="set or add to a signal of another rank",
    operands=(Operand("signal", Role.INOUT, Kind.GLOBAL, "the i32 signal at the indices, named by this rank's "
                      "instance of a symmetric signal tensor; updated in rank peer's instance", window=ELEMENT),
              Operand("value", Role.IN, Kind.SCALAR, "the i32 value stored or added"), _peer()),
    attrs=(Attr("op", NotifyOp, None, "SET (store) or ADD (atomic add; public AtomicAdd)"),),
    semantics=_tnotify, dtypes=tuples(("signal", "value"), [(dt.I32, dt.I32)]), numerics=EXACT,
    domain=Domain.NONE, pipe=Pipe.S, profiles=COMM_PROFILES,
    doc="signal^(peer)[o] = value (SET) or signal^(peer)[o] += value (ADD, atomic, 32-bit two's complement "
        "wrap), for the one signal at the indices o. A notify is a release: every put, get and store this "
        "rank issued before it (asynchronous transfers once their event was waited on) is visible to a rank "
        "whose TWAIT or true TTEST observes the value it wrote." + _MODEL,
    special_values="A peer outside [0, ranks): RUNTIME_COMM_RANK; indices outside the signal tensor: RUNTIME_OOB; "
                   "a signal tensor that is not symmetric (with ranks > 1): RUNTIME_COMM_SYMMETRIC.",
    example=Example({"signal": _SIGNAL, "value": "i32", "peer": "index"}, {"op": NotifyOp.SET},
                    scalars={"value": 1, "peer": 0}),
    more_examples=(Example({"signal": _SIGNAL, "value": "i32", "peer": "index"}, {"op": NotifyOp.ADD},
                           scalars={"value": 1, "peer": 0}),)))

declare(Instruction(
    mnemonic="TWAIT", family=Family.COMM, summary="wait until this rank's signals satisfy a comparison",
    operands=_WAIT_OPS, attrs=(_CMP_ATTR,), semantics=_twait,
    dtypes=tuples(("signal", "cmpValue"), [(dt.I32, dt.I32)]), numerics=EXACT, domain=Domain.NONE, pipe=Pipe.S,
    profiles=COMM_PROFILES,
    doc="Blocks until every element s of the (local) signal tensor satisfies s cmp cmpValue. A satisfied "
        "wait is an acquire: what the notifies whose values it observed released is visible to this rank "
        "after it." + _MODEL,
    special_values="A wait no rank can ever satisfy (every unfinished rank waits, none can change a signal): "
                   "RUNTIME_COMM_DEADLOCK naming each waiting rank and its signal, never a hang.",
    example=Example({"signal": _SIGNAL, "cmpValue": "i32"}, {"cmp": CmpMode.GE}, scalars={"cmpValue": -2147483648})))

declare(Instruction(
    mnemonic="TTEST", family=Family.COMM, summary="test, without blocking, whether this rank's signals "
                                                  "satisfy a comparison",
    operands=_WAIT_OPS + (Operand("result", Role.OUT, Kind.SCALAR, "i1: true when every signal satisfies it"),),
    attrs=(_CMP_ATTR,), semantics=_ttest,
    dtypes=tuples(("signal", "cmpValue", "result"), [(dt.I32, dt.I32, dt.I1)]), numerics=EXACT,
    domain=Domain.NONE, pipe=Pipe.S, profiles=COMM_PROFILES,
    doc="`%r = ttest %signal, %v {cmp}`: %r = AND over the signal tensor's elements s of (s cmp cmpValue), "
        "read at once. A true result is an acquire, as a satisfied TWAIT; a false one orders nothing. In "
        "an execution that runs ranks in turn (the embedded one), a false TTEST lets the other ranks run "
        "before the next instruction, so a polling loop makes progress." + _MODEL,
    special_values="None: a test never blocks and never fails on the signal values.",
    example=Example({"signal": _SIGNAL, "cmpValue": "i32", "result": "i1"}, {"cmp": CmpMode.EQ},
                    scalars={"cmpValue": 0, "result": False})))


# ----------------------------------------------------------------------------- collectives

def _tbroadcast(group: GlobalRef, src: GlobalRef, world: World | None = None) -> None:
    w = _w(world)
    data = _whole(src, "TBROADCAST source")
    window = _window(GlobalRef(_whole(group, "TBROADCAST group")), data.shape, "TBROADCAST group")
    values = w.get(data, w.rank, "TBROADCAST source")
    for k in range(w.size):
        w.put(window, k, values, "TBROADCAST group")


def _reduce(op: ReduceOp, acc: np.ndarray, x: np.ndarray) -> np.ndarray:
    if op is ReduceOp.MAX:
        return np.maximum(acc, x)
    if op is ReduceOp.MIN:
        return np.minimum(acc, x)
    return acc + x


def _treduce(dst: GlobalRef, group: GlobalRef, op: ReduceOp, world: World | None = None) -> None:
    w = _w(world)
    local = _whole(dst, "TREDUCE destination")
    window = _window(GlobalRef(_whole(group, "TREDUCE group")), local.shape, "TREDUCE group")
    wide = np.float64 if is_float(local.dtype) else local.dtype     # ints wrap in their type; bf16 is a float
    acc: np.ndarray | None = None
    for k in range(w.size):
        x = w.get(window, k, "TREDUCE group").astype(wide)
        acc = x if acc is None else _reduce(op, acc, x)
    w.put(local, w.rank, np.asarray(acc).astype(local.dtype), "TREDUCE destination")


def _tgather_comm(dst: GlobalRef, group: GlobalRef, world: World | None = None) -> None:
    w = _w(world)
    part = _whole(group, "TGATHER_COMM group")
    local = _whole(dst, "TGATHER_COMM destination")
    axis = _rows_axis(part)
    h = part.shape[axis] if part.ndim else 1
    slabs = [_slab(local, axis, k, h, part.shape, "TGATHER_COMM destination") for k in range(w.size)]
    for k, s in enumerate(slabs):
        w.put(s, w.rank, w.get(part, k, "TGATHER_COMM group"), "TGATHER_COMM destination")


def _tscatter_comm(group: GlobalRef, src: GlobalRef, world: World | None = None) -> None:
    w = _w(world)
    part = _whole(group, "TSCATTER_COMM group")
    local = _whole(src, "TSCATTER_COMM source")
    axis = _rows_axis(part)
    h = part.shape[axis] if part.ndim else 1
    slabs = [_slab(local, axis, k, h, part.shape, "TSCATTER_COMM source") for k in range(w.size)]
    for k, s in enumerate(slabs):
        w.put(part, k, w.get(s, w.rank, "TSCATTER_COMM source"), "TSCATTER_COMM group")


def _group(role: Role, doc: str) -> Operand:
    return Operand("group", role, Kind.GLOBAL, "the parallel group: a symmetric tensor, rank k's instance "
                   f"{doc}", window=WHOLE)


_ROOT = (" Only the root (the calling rank) executes it; the other ranks' buffers must stay allocated and "
         "must not be accessed by them until the root signals completion (decision 'Comm collectives: "
         "root-driven, one instance per rank').")
_COLL_OOB = ("A local tensor too small for the ranks' data: RUNTIME_OOB before anything moves; a group tensor "
             "that is not symmetric (with ranks > 1): RUNTIME_COMM_SYMMETRIC.")

declare(Instruction(
    mnemonic="TBROADCAST", family=Family.COMM, summary="copy the root's data into every rank's instance",
    operands=(_group(Role.OUT, "being rank k's destination"),
              Operand("src", Role.IN, Kind.GLOBAL, "the root's local data: the whole tensor", window=WHOLE)),
    semantics=_tbroadcast, dtypes=same(("group", "src"), _MOVE), numerics=EXACT, domain=Domain.NONE,
    pipe=Pipe.ALL, profiles=COMM_PROFILES,
    doc="group^(k)[i] = src[i] for every rank k (the root's own instance included) and every index i of src "
        "(the window of src's shape at group's origin; same rank)." + _ROOT + _MODEL,
    special_values=_COLL_OOB, example=Example({"group": _MEMREF, "src": _MEMREF}),
    constraints=(_same_rank("group", "src"),)))

declare(Instruction(
    mnemonic="TREDUCE", family=Family.COMM, summary="reduce every rank's instance into the root's tensor",
    operands=(Operand("dst", Role.OUT, Kind.GLOBAL, "the root's local result: the whole tensor", window=WHOLE),
              _group(Role.IN, "being rank k's contribution")),
    attrs=(Attr("op", ReduceOp, None, "SUM, MAX or MIN (public Sum, Max, Min)"),),
    semantics=_treduce, dtypes=same(("dst", "group"), _REDUCE),
    numerics=Numerics("sum", note="MAX and MIN are exact: the result is one rank's value (NaN when any is "
                                  "NaN); integer SUM wraps"),
    domain=Domain.NONE, pipe=Pipe.ALL, profiles=COMM_PROFILES,
    doc="dst[i] = op over k in [0, ranks) of group^(k)[i], for every index i of dst (the window of dst's "
        "shape at group's origin). SUM of floats is the sum contract (f16/bf16 accumulate wider and round "
        "once); the public ReduceOp has no product, so neither does TREDUCE." + _ROOT + _MODEL,
    special_values=_COLL_OOB + " NaN in any rank's element gives NaN (SUM, MAX and MIN); inf + -inf = NaN.",
    example=Example({"dst": _MEMREF, "group": _MEMREF}, {"op": ReduceOp.SUM}),
    more_examples=(Example({"dst": _MEMREF, "group": _MEMREF}, {"op": ReduceOp.MAX}),),
    constraints=(_same_rank("dst", "group"),)))

declare(Instruction(
    mnemonic="TGATHER_COMM", family=Family.COMM, summary="gather every rank's instance into the root's rows",
    operands=(Operand("dst", Role.OUT, Kind.GLOBAL, "the root's local result, ranks x H rows", window=WHOLE),
              _group(Role.IN, "being rank k's H rows")),
    semantics=_tgather_comm, dtypes=same(("dst", "group"), _MOVE), numerics=EXACT, domain=Domain.NONE,
    pipe=Pipe.ALL, profiles=COMM_PROFILES,
    doc="The public collective TGATHER (`comm::TGATHER`), renamed because TGATHER is the tile gather "
        "(decision 'Comm collectives: root-driven, one instance per rank'). With H the group tensor's extent "
        "along its rows axis (the second-to-last; the only one of a rank-1 tensor): dst rows [k*H, (k+1)*H) = "
        "group^(k), other dims at the group's extents; rows of dst past ranks*H are left as they were."
        + _ROOT + _MODEL,
    special_values=_COLL_OOB, example=Example({"dst": "!pto.memref<16x16xf32>", "group": "!pto.memref<16x16xf32>"}),
    constraints=(_same_rank("dst", "group"),)))

declare(Instruction(
    mnemonic="TSCATTER_COMM", family=Family.COMM, summary="scatter the root's rows over every rank's instance",
    operands=(_group(Role.OUT, "receiving H rows"),
              Operand("src", Role.IN, Kind.GLOBAL, "the root's local data, ranks x H rows", window=WHOLE)),
    semantics=_tscatter_comm, dtypes=same(("group", "src"), _MOVE), numerics=EXACT, domain=Domain.NONE,
    pipe=Pipe.ALL, profiles=COMM_PROFILES,
    doc="The public collective TSCATTER (`comm::TSCATTER`), renamed as TGATHER_COMM. group^(k) = src rows "
        "[k*H, (k+1)*H) for every rank k, H being the group tensor's rows extent; src rows past ranks*H are "
        "not read." + _ROOT + _MODEL,
    special_values=_COLL_OOB, example=Example({"group": "!pto.memref<16x16xf32>", "src": "!pto.memref<16x16xf32>"}),
    constraints=(_same_rank("group", "src"),)))
