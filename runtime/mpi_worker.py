"""One rank of an MPI launch: ``mpiexec -n N python -m mpi4py -m openpto.runtime.mpi_worker DIR``
(what ``runtime.mpi.launch`` runs; docs/comm.md, "MPI execution").

``DIR/launch.pkl`` holds the launch (program, kernel, backend, block_num, timeouts, repeat),
``DIR/rank{r}.pkl`` rank r's arguments; the worker writes ``DIR/out{r}.pkl``: the written
arrays, counters, the kernel's run times, and its error (with ``primary`` set on the rank
whose failure came first). ``run_rank`` is the part a benchmark can reuse inside its own
MPI program. Every step that may fail on one rank only is followed by a collective check,
so the ranks take the same collective steps and none is left waiting in one.
"""
from __future__ import annotations

import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from mpi4py import MPI

from ..assembler.loading import parse_bytes
from ..backends.arguments import bind, written_params
from ..isa.diagnostics import PTOError, RuntimeFault
from ..isa.types import GlobalType
from .mpi import error_record
from .mpi_world import MPIWorld


def run_rank(spec: Mapping[str, Any], args: Mapping[str, Any], comm: Any) -> dict[str, Any]:
    """This process's rank of the launch ``spec`` (``runtime.mpi.make_spec``) on ``args`` (its
    arguments by parameter name, arrays written in place); collective over ``comm``, whose size
    must be the spec's ranks. Returns the outcome ``out{r}.pkl`` holds: outputs, counters, times
    (seconds per run of the kernel), error (``error_record``) and primary."""
    from .. import compile as compile_module

    rank = comm.Get_rank()
    out: dict[str, Any] = {"rank": rank, "outputs": {}, "counters": {}, "times": [], "error": None,
                           "primary": False}
    err: BaseException | None = None
    try:
        if comm.Get_size() != spec["ranks"]:
            raise PTOError("PTO_MPI", "mpiexec started another number of processes than the launch has ranks",
                           expected=spec["ranks"], actual=comm.Get_size())
        module = parse_bytes(spec["data"], spec["filename"])
        exe = compile_module(module, spec["backend"], spec["profile"], **spec["options"])
        kernel = module.kernel(spec["kernel"])
        values = bind(kernel, (), args)
    except BaseException as e:          # noqa: BLE001 - reported once every rank knows
        err = e
    failed = comm.allgather(err is not None)
    if any(failed):
        if err is not None:
            out["error"], out["primary"] = error_record(err), rank == failed.index(True)
        return out
    try:
        world = MPIWorld(comm, {p.name: values[p.name] for p in kernel.params if isinstance(p.type, GlobalType)},
                         spec["wait_timeout"])
    except PTOError as e:               # raised alike on every rank (checked on every rank's data)
        out["error"], out["primary"] = error_record(e), rank == 0
        return out
    pristine = ({n: np.array(v, copy=True) for n, v in values.items() if isinstance(v, np.ndarray)}
                if spec["repeat"] > 1 else {})
    try:
        for i in range(spec["repeat"]):
            for n, a in pristine.items() if i else ():
                np.copyto(values[n], a)
            comm.Barrier()
            start = time.perf_counter()
            try:
                res = exe.run(kernel.name, block_num=spec["block_num"], world=world, **values)
            except BaseException as e:  # noqa: BLE001 - this rank failed: stop the others' waits
                err = e
                world.abort()
            out["times"].append(time.perf_counter() - start)
            if comm.allreduce(err is not None, op=MPI.LOR):
                break
    finally:
        world.close()
    if err is not None:
        out["error"], out["primary"] = error_record(err), world.first_failure == rank
        return out
    out["outputs"] = {n: values[n] for n in written_params(kernel)}
    out["counters"] = dict(res.counters)
    return out


def main(argv: list[str] | None = None) -> int:
    """Read this rank's launch from DIR, run it, write DIR/out{rank}.pkl (written atomically)."""
    d = Path((argv if argv is not None else sys.argv[1:])[0])
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    (d / f"pid{rank}").write_text(str(os.getpid()))      # names this rank in mpiexec's report of a crash
    spec = pickle.loads((d / "launch.pkl").read_bytes())
    args = pickle.loads((d / f"rank{rank}.pkl").read_bytes()) if (d / f"rank{rank}.pkl").exists() else {}
    try:
        out = run_rank(spec, args, comm)
    except BaseException as e:          # noqa: BLE001 - an error outside the kernel run: still reported
        out = {"rank": rank, "outputs": {}, "counters": {}, "times": [], "error": error_record(
            e if isinstance(e, PTOError) else RuntimeFault("RUNTIME_INTERNAL", f"{type(e).__name__}: {e}")),
            "primary": False}
    tmp = d / f"out{rank}.pkl.part"
    tmp.write_bytes(pickle.dumps(out, protocol=5))
    tmp.rename(d / f"out{rank}.pkl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
