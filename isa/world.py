"""The world a communication instruction runs in: which rank it is, how many there are, and
the five operations its semantics reduce to (docs/comm.md, "The world interface").

A symmetric tensor has one instance per rank, all of one shape and element type. A
semantics function names a location in it by a numpy view of *this* rank's instance (the
window its operand addresses); the world finds the same elements in another rank's instance.
That keeps the interface one an MPI window can implement (displacement = the view's byte
offset in its instance), not only threads sharing memory.

``SoloWorld`` is the one-rank world: what a kernel launched without ``ranks`` (and a
semantics function called directly) runs in. Executions of several ranks implement
``World`` themselves (the reference backend's embedded execution, backends/comm_embedded.py).
"""
from __future__ import annotations

import operator
from typing import Callable

import ml_dtypes
import numpy as np

from .attrs import CmpMode, NotifyOp
from .diagnostics import RuntimeFault

#: TWAIT / TTEST comparisons, signal (left) against the compared value (right)
COMPARE: dict[CmpMode, Callable[[np.ndarray, int], np.ndarray]] = {
    CmpMode.EQ: operator.eq, CmpMode.NE: operator.ne, CmpMode.GT: operator.gt,
    CmpMode.GE: operator.ge, CmpMode.LT: operator.lt, CmpMode.LE: operator.le,
}


def satisfied(signals: np.ndarray, cmp: CmpMode, value: int) -> bool:
    """Every signal of the view compares true (an empty view is satisfied)."""
    return bool(np.all(COMPARE[cmp](signals.astype(np.int64), int(value))))


def notified(old: np.ndarray, op: NotifyOp, value: int) -> np.ndarray:
    """The signal after a TNOTIFY: SET stores, ADD adds with 32-bit two's complement wrap."""
    if op is NotifyOp.SET:
        return np.full(old.shape, value, dtype=np.int64).astype(np.int32)
    return (old.astype(np.int64) + int(value)).astype(np.int32)


class World:
    """The interface: ``rank``, ``size`` and five operations on views of symmetric tensors.

    ``get`` / ``put`` move data from / to the same elements of rank ``peer``'s instance
    (``peer`` may be this rank); ``notify`` updates signals of ``peer``; ``wait`` blocks until
    this rank's own signals satisfy a comparison; ``test`` is its non-blocking form. Rank
    and memory checks raise ``RuntimeFault``; ordering faults ``OrderError``."""

    rank: int = 0
    size: int = 1
    #: whether the blocks of this rank may run at once (each on its own thread): a world whose
    #: operations other threads may call while one of them waits (the MPI execution's)
    concurrent_blocks: bool = False

    def check_peer(self, peer: int, what: str) -> int:
        """``peer`` as an int, or RUNTIME_COMM_RANK when no rank has that id."""
        if not 0 <= int(peer) < self.size:
            raise RuntimeFault("RUNTIME_COMM_RANK", f"{what} names rank {int(peer)}, outside the launch",
                               expected=f"a rank id in [0, {self.size})", actual=int(peer))
        return int(peer)

    def get(self, view: np.ndarray, peer: int, what: str) -> np.ndarray:
        raise NotImplementedError

    def put(self, view: np.ndarray, peer: int, values: np.ndarray, what: str, add: bool = False) -> None:
        raise NotImplementedError

    def notify(self, view: np.ndarray, peer: int, value: int, op: NotifyOp, what: str) -> None:
        raise NotImplementedError

    def wait(self, view: np.ndarray, cmp: CmpMode, value: int, what: str) -> None:
        raise NotImplementedError

    def test(self, view: np.ndarray, cmp: CmpMode, value: int, what: str) -> bool:
        raise NotImplementedError

    def access(self, view: np.ndarray, write: bool, what: str) -> None:
        """An ordinary instruction's access to this rank's global memory (TLOAD, TSTORE, ...):
        a world that checks races checks it here; by default nothing to check."""

    def abort(self) -> None:
        """This rank failed: a world whose other ranks run elsewhere ends their waits (so nothing
        hangs); by default nothing to tell."""


def is_float(d: np.dtype) -> bool:
    """Whether ``d`` is a floating type, bf16 and the fp8 formats (ml_dtypes: numpy kind 'V')
    included, which ``np.issubdtype(d, np.floating)`` says are not."""
    try:
        ml_dtypes.finfo(d)
    except ValueError:
        return False
    return True


def accumulate(dst: np.ndarray, values: np.ndarray) -> None:
    """``dst += values`` in dst's type: integers wrap, narrow floats add in f32 and round once."""
    if is_float(dst.dtype) and dst.dtype.itemsize < 4:
        dst[...] = (dst.astype(np.float32) + values.astype(np.float32)).astype(dst.dtype)
    elif dst.dtype == np.bool_:
        dst[...] = dst | values.astype(bool)
    else:
        dst[...] = dst + values.astype(dst.dtype)


class SoloWorld(World):
    """One rank: rank 0 of 1. Every peer but 0 is RUNTIME_COMM_RANK; a wait whose signals do
    not already satisfy it can never be satisfied (no other rank runs): RUNTIME_COMM_DEADLOCK."""

    def get(self, view: np.ndarray, peer: int, what: str) -> np.ndarray:
        self.check_peer(peer, what)
        return np.array(view, copy=True)

    def put(self, view: np.ndarray, peer: int, values: np.ndarray, what: str, add: bool = False) -> None:
        self.check_peer(peer, what)
        if add:
            accumulate(view, values)
        else:
            view[...] = values

    def notify(self, view: np.ndarray, peer: int, value: int, op: NotifyOp, what: str) -> None:
        self.check_peer(peer, what)
        view[...] = notified(view, op, value)

    def wait(self, view: np.ndarray, cmp: CmpMode, value: int, what: str) -> None:
        if not satisfied(view, cmp, value):
            raise RuntimeFault("RUNTIME_COMM_DEADLOCK", f"rank 0 waits on {what} {cmp.name} {int(value)}, "
                               "which no rank can change: it is the only rank",
                               expected=f"signals {cmp.name} {int(value)}",
                               actual=f"signals {np.asarray(view).ravel()[:8].tolist()}")

    def test(self, view: np.ndarray, cmp: CmpMode, value: int, what: str) -> bool:
        return satisfied(view, cmp, value)


SOLO = SoloWorld()
