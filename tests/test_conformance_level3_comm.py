"""Level 3 with several ranks (conformance/level3_comm.py): the reference backend passes every
scenario on every NPU-like and CPU profile, and backends broken in the ways a communication
lowering goes wrong are caught — a put to the wrong rank, a wait that returns at once, an
all-reduce whose notifies set instead of add, a race the execution does not report."""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from openpto.backends import get
from openpto.backends.reference import ReferenceBackend
from openpto.conformance.level3_comm import DTYPES, SCENARIOS, comm_outcome, run_level3_comm
from openpto.isa.attrs import NotifyOp

RULES = ReferenceBackend.rules
NAMES = {sc.name for sc in SCENARIOS}


def _by_name(outs: list[Any]) -> dict[tuple[str, str], Any]:
    return {(o.instruction, o.dtypes): o for o in outs}


@pytest.mark.parametrize("profile", ["cpu", "a3", "a5"])
def test_reference_backend_passes_every_comm_scenario(profile: str) -> None:
    outs = run_level3_comm(get("reference"), profile, seed=0)
    assert {o.instruction for o in outs} == NAMES and {o.dtypes for o in outs} == set(DTYPES)
    # a3 has no bf16 TADD: those are unsupported, with the verifier's reason; the rest pass
    lacking = {(o.instruction, o.dtypes) for o in outs if o.status == "unsupported" and "LEGAL_DTYPE" in o.reason
               and o.dtypes == "bf16" and profile == "a3"}
    assert [(o.instruction, o.dtypes, o.reason) for o in outs
            if o.status != "pass" and (o.instruction, o.dtypes) not in lacking] == []
    assert all(o.examples == 12 and o.level == 3 for o in outs if o.status == "pass")   # 3 sizes x 1-4 ranks


def test_a_put_to_the_wrong_rank_is_caught() -> None:
    def put_here(dst: Any, src: Any, peer: int, atomicType: Any = None, world: Any = None, **kw: Any) -> None:
        RULES["TPUT"](dst, src, world.rank if world is not None else peer, world=world,
                      **({"atomicType": atomicType} if atomicType is not None else {}))

    class PutsLocally(ReferenceBackend):
        name = "puts-locally"
        rules = dict(RULES, TPUT=put_here)

    outs = _by_name(run_level3_comm(PutsLocally(), "cpu"))
    ring = outs["L3:comm-ring", "f32"]
    assert ring.status == "fail"
    # with one rank the put is right; the first wrong case is two ranks, a deadlock or wrong y
    assert "2 ranks" in ring.reason and "ring" in ring.failure.program


def test_a_wait_that_returns_at_once_is_caught_as_a_race() -> None:
    class NoWait(ReferenceBackend):
        name = "no-wait"
        rules = dict(RULES, TWAIT=lambda *a, **kw: None)

    outs = _by_name(run_level3_comm(NoWait(), "cpu"))
    for name in ("L3:comm-ring", "L3:comm-allreduce"):
        o = outs[name, "f16"]
        assert o.status == "fail" and "ORDER_COMM_RACE" in o.reason, (name, o.reason)
    # rank 0 reads y before the root (the last rank) broadcasts: a read before the write,
    # which the execution does not flag (docs/comm.md), so the values are what is wrong
    o = outs["L3:comm-broadcast", "f16"]
    assert o.status == "fail" and "z[rank 0] differs" in o.reason and o.failure.difference is not None
    assert outs["L3:comm-missing-wait", "f16"].status == "pass"      # that one must race anyway


def test_notifies_that_set_instead_of_add_break_the_all_reduce() -> None:
    def set_only(signal: Any, value: int, peer: int, op: Any = None, world: Any = None) -> None:
        RULES["TNOTIFY"](signal, value, peer, op=NotifyOp.SET, world=world)

    class SetNotify(ReferenceBackend):
        name = "set-notify"
        rules = dict(RULES, TNOTIFY=set_only)

    outs = _by_name(run_level3_comm(SetNotify(), "cpu"))
    bad = outs["L3:comm-allreduce", "i32"]
    assert bad.status == "fail" and "RUNTIME_COMM_DEADLOCK" in bad.reason and "2 ranks" in bad.reason
    assert outs["L3:comm-ring", "i32"].status == "pass"            # SET is what the ring uses


def test_an_execution_that_misses_the_race_fails_the_missing_wait_scenario() -> None:
    from openpto.isa.world import World

    class Quiet(ReferenceBackend):
        """Runs the embedded execution with its race check switched off."""
        name = "quiet"

    import openpto.backends.reference.comm as comm
    agent = comm.Agent
    original = agent.access
    try:
        agent.access = lambda self, *a, **kw: None               # type: ignore[method-assign]
        o = comm_outcome(Quiet(), "cpu", next(s for s in SCENARIOS if s.error), "f32", 0)
    finally:
        agent.access = original                                  # type: ignore[method-assign]
    assert o.status == "fail" and "instead of raising ORDER_COMM_RACE" in o.reason
    assert issubclass(agent, World)


def test_a_one_rank_backend_is_unsupported_not_failed() -> None:
    class OneRank(ReferenceBackend):
        name = "one-rank"
        multi_rank = False

    outs = run_level3_comm(OneRank(), "cpu")
    assert {o.status for o in outs} == {"unsupported"} and "one rank" in outs[0].reason



def test_mpi_launches_equal_the_embedded_execution(mpiexec: str) -> None:
    """--mpi: 2 and 4 MPI processes per size, every rank's arrays equal to the embedded run's."""
    sc = next(s for s in SCENARIOS if s.name == "L3:comm-ring")
    o = comm_outcome(get("reference"), "cpu", sc, "f32", 0, mpi=True)
    assert o.status == "pass", o.reason
    assert o.examples == 12 + 2 * 3                    # embedded 3 sizes x 4 rank counts, MPI 3 x 2


def test_a_backend_that_differs_under_mpi_is_caught(mpiexec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import pathlib
    import sys

    tests = str(pathlib.Path(__file__).resolve().parent)
    monkeypatch.setenv("PYTHONPATH", tests + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.syspath_prepend(tests)
    from mpi_faults import MPIDiffersBackend

    sc = next(s for s in SCENARIOS if s.name == "L3:comm-ring")
    o = comm_outcome(MPIDiffersBackend(), "cpu", sc, "i32", 0, mpi=True)
    assert o.status == "fail" and "differs between the MPI and the embedded execution" in o.reason
    assert "2 ranks" in o.reason and sys.modules["mpi_faults"] is not None
