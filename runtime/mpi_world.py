"""The MPI execution's ``World``: this process is one rank of a multi-rank launch, and the
other ranks' instances of the symmetric tensors are reached through MPI one-sided RMA.

Every symmetric tensor (global parameter) gets one RMA window over this rank's own numpy
buffer; a view of it is addressed by its byte offset in the instance (the displacement) and
an MPI datatype with its strides. Every access is a passive-target epoch (lock, operation,
unlock), so no rank has to take part in another's transfer:

- get / put: ``Get`` / ``Put`` of bytes (bits move unchanged, whatever the element type);
- an ADD put: ``Accumulate(SUM)`` under a shared lock for the types MPI sums (f32, f64,
  integers); f16 / bf16 (and anything else) read, add in f32 and write back under an
  exclusive lock, rounding once as the embedded execution's ``accumulate`` does;
- TNOTIFY: an atomic ``Accumulate`` on the i32 signal (REPLACE for Set, SUM for AtomicAdd);
- TWAIT / TTEST: atomic reads of this rank's own signals (``Get_accumulate(NO_OP)``), TWAIT
  polling with a growing pause until they compare true, until the launch is aborted, or
  until ``wait_timeout`` seconds pass (RUNTIME_COMM_DEADLOCK naming rank, signal, value).

A notify is a release and a satisfied wait an acquire (decision 'Comm memory model'): both
synchronise this rank's window copies (``Win.Sync``), so local TLOAD/TSTORE and remote RMA
see each other's bytes. One more window holds an i32 *abort* word per rank: a rank that fails
claims rank 0's word (compare-and-swap: the first failure wins) and writes the first failing
rank into every rank's word, which every wait and test polls (RUNTIME_COMM_ABORTED).

MPI calls are serialised by one lock per process, so blocks of this rank may run as threads
when MPI's thread level is at least SERIALIZED (``concurrent_blocks``).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
from mpi4py import MPI

from ..isa.attrs import CmpMode, NotifyOp
from ..isa.diagnostics import RuntimeFault
from ..isa.world import COMPARE, World, accumulate, notified, satisfied

#: element types MPI's Accumulate(SUM) adds natively (others: read, add, write back)
_SUMMABLE: dict[np.dtype, Any] = {
    np.dtype(np.float32): MPI.FLOAT, np.dtype(np.float64): MPI.DOUBLE,
    np.dtype(np.int8): MPI.INT8_T, np.dtype(np.int16): MPI.INT16_T, np.dtype(np.int32): MPI.INT32_T,
    np.dtype(np.int64): MPI.INT64_T, np.dtype(np.uint8): MPI.UINT8_T, np.dtype(np.uint16): MPI.UINT16_T,
    np.dtype(np.uint32): MPI.UINT32_T, np.dtype(np.uint64): MPI.UINT64_T,
}
#: TNOTIFY's op -> the atomic accumulate it is
_NOTIFY_OP = {NotifyOp.SET: MPI.REPLACE, NotifyOp.ADD: MPI.SUM}
#: the wait's pause between polls: from the first to the last, doubling
_PAUSE = (5e-6, 2e-4)


@dataclass
class _Window:
    """One rank's instance of one symmetric tensor and its RMA window."""

    name: str
    array: np.ndarray
    start: int
    win: Any


class MPIWorld(World):
    """One rank of an MPI launch over ``comm`` (collective: every rank constructs it with its
    instances of the same symmetric tensors, by parameter name; ``close`` frees it)."""

    def __init__(self, comm: Any, instances: Mapping[str, np.ndarray], wait_timeout: float = 60.0) -> None:
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.wait_timeout = float(wait_timeout)
        self.concurrent_blocks = MPI.Query_thread() >= MPI.THREAD_SERIALIZED
        self.lock = threading.RLock()
        self.first_failure: int | None = None
        self._types: dict[tuple, Any] = {}
        self._check_symmetric(instances)
        self.windows: list[_Window] = []
        for name, a in instances.items():
            self.windows.append(_Window(name, a, a.__array_interface__["data"][0],
                                        MPI.Win.Create(a, disp_unit=1, comm=comm)))
        self._flag = np.zeros(1, np.int32)
        self._flag_win = MPI.Win.Create(self._flag, disp_unit=1, comm=comm)

    # ------------------------------------------------------------------ set up and tear down
    def _check_symmetric(self, instances: Mapping[str, np.ndarray]) -> None:
        """Every rank's instances: the same names, shapes and element types, C-contiguous.
        Checked on all ranks' data at once, so every rank raises the same error (or none)."""
        mine = ([(n, str(a.shape), a.dtype.str) for n, a in instances.items()], [n for n, a in instances.items() if not a.flags.c_contiguous])
        every = self.comm.allgather(mine)
        for r, (shapes, strided) in enumerate(every):
            if strided:
                raise RuntimeFault("RUNTIME_ARG_STRIDES", f"rank {r}'s instance of symmetric %{strided[0]} is not "
                                   "C-contiguous", expected="a C-contiguous array", actual="a strided view")
            for (n, s, d), (n0, s0, d0) in zip(shapes, every[0][0]):
                if (n, s, d) != (n0, s0, d0):
                    raise RuntimeFault("RUNTIME_ARG_SHAPE", f"rank {r}'s instance of symmetric %{n} differs from "
                                       "rank 0's", expected=f"shape {s0} {np.dtype(d0)}",
                                       actual=f"shape {s} {np.dtype(d)}")

    def close(self) -> None:
        """Collective: every rank has finished with every window; free them."""
        self.comm.Barrier()
        for w in self.windows:
            w.win.Free()
        self._flag_win.Free()
        for t in self._types.values():
            t.Free()
        self.windows, self._types = [], {}

    # ------------------------------------------------------------------ addressing
    def _locate(self, view: np.ndarray, what: str) -> tuple[_Window, int] | None:
        """The window holding ``view`` and the view's displacement in it (None: not in a
        symmetric tensor); RUNTIME_OOB when the view starts inside but runs past the end."""
        at = view.__array_interface__["data"][0]
        for w in self.windows:
            end = w.start + w.array.nbytes
            if w.start <= at < end:
                lo = at + sum(min(0, (n - 1) * s) for n, s in zip(view.shape, view.strides))
                hi = at + sum(max(0, (n - 1) * s) for n, s in zip(view.shape, view.strides)) + view.itemsize
                if lo < w.start or hi > end:
                    raise RuntimeFault("RUNTIME_OOB", f"{what} reaches past the end of %{w.name}",
                                       expected=f"bytes [0, {w.array.nbytes}) of the instance",
                                       actual=f"bytes [{lo - w.start}, {hi - w.start})")
                return w, at - w.start
        return None

    def _where(self, view: np.ndarray, peer: int, what: str) -> tuple[_Window, int] | None:
        """``_locate``, or RUNTIME_COMM_SYMMETRIC for a remote access outside every window."""
        found = self._locate(view, what) if view.size else None
        if found is None and peer != self.rank and view.size:
            raise RuntimeFault("RUNTIME_COMM_SYMMETRIC", f"{what} is not in a symmetric tensor, so it has no "
                               f"instance on rank {peer}", expected="a view of a global parameter of the launch",
                               actual=f"an array of shape {view.shape}")
        return found

    def _datatype(self, view: np.ndarray, base: Any) -> Any:
        """The committed MPI datatype of ``view``'s elements at their strides, ``base`` (a
        predefined type, or MPI.BYTE for raw moves) per element."""
        key = (view.shape, view.strides, view.itemsize, base.handle)
        t = self._types.get(key)
        if t is not None:
            return t
        elem = base if base != MPI.BYTE else MPI.BYTE.Create_contiguous(view.itemsize)
        made = [] if elem is base else [elem]
        if view.flags.c_contiguous:
            made.append(elem.Create_contiguous(view.size))
        else:
            for n, s in reversed([(n, s) for n, s in zip(view.shape, view.strides) if n != 1]):
                made.append((made[-1] if made else elem).Create_hvector(n, 1, s))
        t = made[-1].Commit()
        for m in made[:-1]:
            m.Free()
        self._types[key] = t
        return t

    # ------------------------------------------------------------------ World
    def get(self, view: np.ndarray, peer: int, what: str) -> np.ndarray:
        p = self.check_peer(peer, what)
        out = np.empty(view.shape, view.dtype)
        found = self._where(view, p, what)
        if found is None:
            out[...] = view
            return out
        w, disp = found
        with self.lock:
            w.win.Lock(p, MPI.LOCK_SHARED)
            w.win.Get([out, out.nbytes, MPI.BYTE], p, (disp, 1, self._datatype(view, MPI.BYTE)))
            w.win.Unlock(p)
        return out

    def put(self, view: np.ndarray, peer: int, values: np.ndarray, what: str, add: bool = False) -> None:
        p = self.check_peer(peer, what)
        data = np.ascontiguousarray(np.broadcast_to(np.asarray(values).astype(view.dtype, copy=False), view.shape))
        found = self._where(view, p, what)
        if found is None:
            if add:
                accumulate(view, data)
            else:
                view[...] = data
            return
        w, disp = found
        summable = _SUMMABLE.get(view.dtype)
        with self.lock:
            if not add:
                w.win.Lock(p, MPI.LOCK_SHARED)
                w.win.Put([data, data.nbytes, MPI.BYTE], p, (disp, 1, self._datatype(view, MPI.BYTE)))
            elif summable is not None:
                w.win.Lock(p, MPI.LOCK_SHARED)
                w.win.Accumulate([data, data.size, summable], p, (disp, 1, self._datatype(view, summable)), MPI.SUM)
            else:           # narrow floats: add in f32, round once, under an exclusive lock
                target = (disp, 1, self._datatype(view, MPI.BYTE))
                old = np.empty(view.shape, view.dtype)
                w.win.Lock(p, MPI.LOCK_EXCLUSIVE)
                w.win.Get([old, old.nbytes, MPI.BYTE], p, target)
                w.win.Flush(p)
                accumulate(old, data)
                w.win.Put([old, old.nbytes, MPI.BYTE], p, target)
            w.win.Unlock(p)

    def notify(self, view: np.ndarray, peer: int, value: int, op: NotifyOp, what: str) -> None:
        p = self.check_peer(peer, what)
        found = self._where(view, p, what)
        with self.lock:
            self._sync()                             # release: this rank's stores before the signal
            if found is None:
                view[...] = notified(view, op, value)
                return
            w, disp = found
            one = np.array([value], np.int64).astype(np.int32)
            w.win.Lock(p, MPI.LOCK_SHARED)
            w.win.Accumulate([one, 1, MPI.INT32_T], p, (disp, 1, MPI.INT32_T), _NOTIFY_OP[op])
            w.win.Unlock(p)

    def wait(self, view: np.ndarray, cmp: CmpMode, value: int, what: str) -> None:
        start = time.monotonic()
        pause = _PAUSE[0]
        while True:
            now = self._poll(view, what)
            if satisfied(now, cmp, value):
                with self.lock:
                    self._sync()                     # acquire: the notifiers' writes are visible
                return
            waited = time.monotonic() - start
            if waited > self.wait_timeout:
                raise self._deadlock(view, now, cmp, value, what, waited)
            time.sleep(pause)
            pause = min(pause * 2, _PAUSE[1])

    def test(self, view: np.ndarray, cmp: CmpMode, value: int, what: str) -> bool:
        if satisfied(self._poll(view, what), cmp, value):
            with self.lock:
                self._sync()
            return True
        return False

    def abort(self) -> None:
        """This rank failed: claim rank 0's abort word if nobody has (the first failure), then
        write the first failing rank into every rank's word. Idempotent."""
        with self.lock:
            if self.first_failure is not None:
                return
            mine = np.array([self.rank + 1], np.int32)
            seen = np.zeros(1, np.int32)
            w = self._flag_win
            w.Lock(0, MPI.LOCK_SHARED)
            w.Compare_and_swap([mine, MPI.INT32_T], [np.zeros(1, np.int32), MPI.INT32_T],
                               [seen, MPI.INT32_T], 0, 0)
            w.Unlock(0)
            first = mine if seen[0] == 0 else seen
            self.first_failure = int(first[0]) - 1
            for p in range(1, self.size):
                w.Lock(p, MPI.LOCK_SHARED)
                w.Accumulate([first, 1, MPI.INT32_T], p, (0, 1, MPI.INT32_T), MPI.REPLACE)
                w.Unlock(p)

    # ------------------------------------------------------------------ signals
    def _poll(self, view: np.ndarray, what: str) -> np.ndarray:
        """This rank's signals at ``view``, read atomically; RUNTIME_COMM_ABORTED once another
        rank failed."""
        found = self._locate(view, what) if view.size else None
        out = np.empty(view.shape, np.int32)
        flag = np.zeros(1, np.int32)
        with self.lock:
            fw = self._flag_win
            fw.Lock(self.rank, MPI.LOCK_SHARED)
            fw.Get_accumulate([np.zeros(1, np.int32), 1, MPI.INT32_T], [flag, 1, MPI.INT32_T], self.rank,
                              (0, 1, MPI.INT32_T), MPI.NO_OP)
            fw.Unlock(self.rank)
            if flag[0]:
                failed = int(flag[0]) - 1
                raise RuntimeFault("RUNTIME_COMM_ABORTED", f"rank {self.rank}'s {what.split()[0]} stops: rank "
                                   f"{failed} of the launch failed", expected="every rank of the launch running",
                                   actual=f"rank {failed} failed")
            if found is None:
                out[...] = view
                return out
            w, disp = found
            w.win.Lock(self.rank, MPI.LOCK_SHARED)
            w.win.Get_accumulate([np.zeros(view.shape, np.int32), view.size, MPI.INT32_T],
                                 [out, view.size, MPI.INT32_T], self.rank,
                                 (disp, 1, self._datatype(view, MPI.INT32_T)), MPI.NO_OP)
            w.win.Unlock(self.rank)
        return out

    def _sync(self) -> None:
        """Synchronise this rank's window copies with its memory (unified model: a barrier)."""
        for w in self.windows:
            w.win.Lock(self.rank, MPI.LOCK_SHARED)
            w.win.Sync()
            w.win.Unlock(self.rank)

    def _deadlock(self, view: np.ndarray, now: np.ndarray, cmp: CmpMode, value: int, what: str,
                  waited: float) -> RuntimeFault:
        found = self._locate(view, what) if view.size else None
        bad = np.argwhere(~COMPARE[cmp](now.astype(np.int64), int(value)))
        name = "a signal"
        if found is not None:
            w, disp = found
            first = tuple(int(i) for i in bad[0]) if len(bad) else (0,) * view.ndim
            off = disp + sum(i * s for i, s in zip(first, view.strides))
            index = np.unravel_index(off // view.itemsize, w.array.shape) if w.array.size else ()
            name = f"%{w.name}[{', '.join(str(int(i)) for i in index)}]"
        return RuntimeFault("RUNTIME_COMM_DEADLOCK",
                            f"rank {self.rank} waits on {what} {name} until {cmp.name} {int(value)} (now "
                            f"{now.ravel()[:8].tolist()}): no rank satisfied it in {waited:.3g} s (the MPI "
                            "execution's wait timeout)",
                            expected=f"a TNOTIFY that makes {name} {cmp.name} {int(value)} within "
                                     f"{self.wait_timeout:g} s",
                            actual=f"rank {self.rank}: {name} = {now.ravel()[:8].tolist()}")

