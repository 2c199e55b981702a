"""Backends that break one MPI process on purpose (tests/test_comm_mpi.py): rank 1 is killed in
its first TNOTIFY (a hard crash, no error reported), or sleeps in it (a process that never ends).
Loaded by ``mpi_faults:CrashBackend`` in the launcher and in every worker (PYTHONPATH)."""
from __future__ import annotations

import os
import signal as signals
import time
from typing import Any

from openpto.backends.reference import ReferenceBackend
from openpto.isa.registry import get

_NOTIFY = get("TNOTIFY").semantics


def _crash(signal: Any, value: int, peer: int, op: Any, world: Any = None) -> None:
    if world is not None and world.rank == 1:
        os.kill(os.getpid(), signals.SIGKILL)
    _NOTIFY(signal, value, peer, op, world=world)


def _stall(signal: Any, value: int, peer: int, op: Any, world: Any = None) -> None:
    if world is not None and world.rank == 1:
        time.sleep(3600)
    _NOTIFY(signal, value, peer, op, world=world)


class CrashBackend(ReferenceBackend):
    name = "mpi_crash"
    rules = {**ReferenceBackend.rules, "TNOTIFY": _crash}


class StallBackend(ReferenceBackend):
    name = "mpi_stall"
    rules = {**ReferenceBackend.rules, "TNOTIFY": _stall}


_PUT = get("TPUT").semantics


def _put_zeros_under_mpi(dst: Any, src: Any, peer: int, atomicType: Any = None, world: Any = None) -> None:
    """TPUT as specified in one process, zeros over MPI: what conformance --mpi must catch."""
    if world is not None and type(world).__name__ == "MPIWorld":
        src.array[...] = 0
    _PUT(dst, src, peer, **({"atomicType": atomicType} if atomicType is not None else {}), world=world)


class MPIDiffersBackend(ReferenceBackend):
    name = "mpi_differs"
    rules = dict(ReferenceBackend.rules, TPUT=_put_zeros_under_mpi)
