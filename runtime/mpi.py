"""The MPI execution of a multi-rank launch: one process per rank under ``mpiexec``
(docs/comm.md, "MPI execution").

``launch`` takes a program and the arguments of an embedded ``run(..., ranks=N)`` (one array
per rank for every array parameter), checks them exactly as the embedded execution does,
writes each rank's arguments to a private temporary directory, runs
``mpiexec -n N python -m mpi4py -m openpto.runtime.mpi_worker DIR`` and reads every rank's
outputs (copied into the caller's arrays, as an embedded run writes them), counters and
kernel times back. The first failing rank's ``PTOError`` is raised as it was raised there
(code, message, location, expected, actual); a process that ends without a result, or a
launch past its ``timeout``, is ``PTO_MPI``. This module does not import mpi4py: the worker
processes do.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..assembler.ir import Module
from ..assembler.loading import parse_bytes, read_bytes
from ..backends import get as get_backend
from ..backends.arguments import bind, written_params
from ..backends.base import Result
from ..backends.blocks import check_block_num
from ..backends.comm_embedded import check_instances, check_ranks, split_ranks
from ..isa import diagnostics as D
from ..isa.diagnostics import Location, PTOError

#: the error classes by code prefix, to raise a rank's error as the class it had
_CLASSES = {c.prefix: c for c in (D.ParseError, D.StructError, D.LegalityError, D.OrderError, D.BytecodeError,
                                  D.RuntimeFault, D.FrontendError, D.SpecError)}
#: the worker module mpiexec starts (through ``python -m mpi4py``: an uncaught error aborts them all)
WORKER = "openpto.runtime.mpi_worker"
#: lines of mpiexec's output a PTO_MPI error quotes
_TAIL = 15


@dataclass
class MPIResult(Result):
    """A ``Result`` (outputs: per parameter the caller's per-rank arrays; counters summed over
    ranks) plus, per rank, the seconds each run of the kernel took (``repeat`` of them), timed
    inside the worker between barriers, and the launch's wall time (processes included)."""

    times: list[list[float]] = field(default_factory=list)
    wall_s: float = 0.0


# ----------------------------------------------------------------------------- errors across processes

def error_record(e: BaseException) -> dict[str, Any]:
    """A PTOError (or any exception, as RUNTIME_INTERNAL) as plain data a file can carry."""
    if not isinstance(e, PTOError):
        e = D.RuntimeFault("RUNTIME_INTERNAL", f"{type(e).__name__}: {e}")
    rec = {"code": e.code, "message": e.message, "location": dataclasses.asdict(e.location),
           "expected": e.expected, "actual": e.actual, "notes": list(e.notes)}
    try:
        pickle.dumps(rec)
    except Exception:                       # noqa: BLE001 - a value pickle cannot carry: its text
        rec["expected"], rec["actual"] = str(e.expected), str(e.actual)
    return rec


def error_from_record(rec: Mapping[str, Any], note: str | None = None) -> PTOError:
    """The error ``error_record`` wrote, of its class again, with ``note`` added."""
    cls = _CLASSES.get(rec["code"].split("_")[0], PTOError)
    return cls(rec["code"], rec["message"], location=Location(**rec["location"]), expected=rec["expected"],
               actual=rec["actual"], notes=list(rec["notes"]) + ([note] if note else []))


# ----------------------------------------------------------------------------- finding MPI

def find_mpiexec() -> str:
    """``mpiexec`` next to this Python (the mpich wheel installs it into the venv), else on
    PATH; PTO_MPI when neither has one, or when mpi4py is missing."""
    if importlib.util.find_spec("mpi4py") is None:
        raise PTOError("PTO_MPI", "the MPI execution needs mpi4py, which is not installed",
                       expected="pip install 'openpto[mpi]' (mpi4py and mpich)", actual="no module mpi4py")
    here = Path(sys.executable).parent / "mpiexec"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    found = shutil.which("mpiexec")
    if found is None:
        raise PTOError("PTO_MPI", "no mpiexec to start the MPI processes with",
                       expected=f"mpiexec in {here.parent} or on PATH (pip install 'openpto[mpi]')",
                       actual="none found")
    return found


# ----------------------------------------------------------------------------- the launcher

def _program(program: str | os.PathLike[str] | Module) -> tuple[bytes, str | None]:
    """The program as (bytes the worker parses, file name for locations)."""
    if isinstance(program, Module):
        return program.to_bytes(), None
    if isinstance(program, os.PathLike) or (isinstance(program, str) and "\n" not in program
                                            and os.path.exists(program)):
        return read_bytes(program), os.fspath(program)
    if isinstance(program, str) and "\n" not in program and program.strip().endswith((".pto", ".ptobc")):
        raise PTOError("PTO_FILE", f"no such program file: {program}", expected="an existing file",
                       actual=program)
    if isinstance(program, str):
        return program.encode(), None
    raise PTOError("PTO_API_TYPE", "launch takes a path, PTO-AS text or a Module",
                   expected="str | PathLike | Module", actual=type(program).__name__)


def seconds(value: Any, what: str) -> float:
    """A timeout: a finite number of seconds above zero, else PTO_OPTION (NaN would never expire)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(value, bool) or not math.isfinite(v) or v <= 0:
        raise PTOError("PTO_OPTION", f"{what} is a number of seconds", expected="a finite number > 0",
                       actual=repr(value)[:80])
    return v


def make_spec(data: bytes, filename: str | None, kernel: str, ranks: int, *, backend: str = "reference",
              profile: str | None = None, options: Mapping[str, Any] | None = None, block_num: int = 1,
              wait_timeout: float = 60.0, repeat: int = 1) -> dict[str, Any]:
    """The launch description every worker reads (``mpi_worker.run_rank``'s ``spec``): the program
    as bytes (text or bytecode) and its file name, the kernel, the rank count, backend, profile,
    compile options, blocks per rank, the wait timeout in seconds and the runs per process. A
    program that runs ``run_rank`` inside its own MPI job (a benchmark) builds it here."""
    return {"data": data, "filename": filename, "kernel": kernel, "ranks": ranks, "backend": backend,
            "profile": profile, "options": dict(options or {}), "block_num": block_num,
            "wait_timeout": float(wait_timeout), "repeat": repeat}


def launch(program: str | os.PathLike[str] | Module, kernel: str | None = None,
           args: Mapping[str, Any] | None = None, *, ranks: int, backend: str = "reference",
           profile: str | None = None, block_num: int = 1, options: Mapping[str, Any] | None = None,
           wait_timeout: float = 60.0, timeout: float = 600.0, repeat: int = 1) -> MPIResult:
    """Run ``kernel`` of ``program`` on ``ranks`` MPI processes, one rank each.

    ``args``: as ``run(..., ranks=N)`` takes them: per array parameter a list of one array per
    rank, scalars once. ``wait_timeout``: seconds a TWAIT may wait before it is
    RUNTIME_COMM_DEADLOCK; ``timeout``: seconds the whole launch may take (PTO_MPI after, every
    process killed); ``repeat``: runs of the kernel per process, each on the original inputs,
    all timed (benchmarks); the outputs are the last run's."""
    from .. import compile as compile_module

    n = check_ranks(ranks)
    block_num = check_block_num(block_num)
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise PTOError("PTO_OPTION", "repeat is the number of kernel runs per process", expected="an int >= 1",
                       actual=repr(repeat))
    wait_timeout, timeout = seconds(wait_timeout, "wait_timeout"), seconds(timeout, "timeout")
    if args is not None and not isinstance(args, Mapping):
        raise PTOError("PTO_API_TYPE", "launch's args map parameter names to values",
                       expected="a mapping (dict)", actual=type(args).__name__)
    if not get_backend(backend).multi_rank:
        raise PTOError("PTO_RANKS", f"backend {backend!r} runs one rank only: it cannot run an MPI launch",
                       expected="a backend that runs ranks=N (reference, llvm)", actual=backend)
    data, filename = _program(program)
    module = parse_bytes(data, filename)
    k = module.kernel(kernel, "choose one with kernel=")
    options = dict(options or {})
    compile_module(module, backend, profile, **options)      # compile errors before any process starts
    bound = [bind(k, a, kw) for a, kw in split_ranks(k, (), dict(args or {}), n)]
    check_instances(k, bound)
    mpiexec = find_mpiexec()
    spec = make_spec(data, filename, k.name, n, backend=backend, profile=profile, options=options,
                     block_num=block_num, wait_timeout=wait_timeout, repeat=repeat)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pto-mpi-") as tmp:
        d = Path(tmp)
        (d / "launch.pkl").write_bytes(pickle.dumps(spec))
        for r in range(n):
            (d / f"rank{r}.pkl").write_bytes(pickle.dumps(bound[r], protocol=5))
        rc, output = _mpiexec([mpiexec, "-n", str(n), sys.executable, "-m", "mpi4py", "-m", WORKER, tmp], timeout, n)
        outs: list[dict[str, Any] | None] = []
        pids: dict[int, int] = {}
        for r in range(n):
            f, pid = d / f"out{r}.pkl", d / f"pid{r}"
            outs.append(pickle.loads(f.read_bytes()) if f.exists() else None)
            if pid.exists():
                pids[int(pid.read_text())] = r
    wall = time.perf_counter() - start
    _raise_failure(outs, rc, output, n, pids)
    writes = sorted(written_params(k))
    counts: dict[str, int] = {}
    for r, o in enumerate(outs):
        assert o is not None
        for name in writes:
            dst, got = bound[r][name], o["outputs"][name]
            if dst is not got:
                dst[...] = got
        for name, c in o["counters"].items():
            if name != "instructions":
                counts[name] = counts.get(name, 0) + c
    counts["instructions"] = sum(counts.values())
    return MPIResult({name: [b[name] for b in bound] for name in writes}, counts, None,
                     times=[list(o["times"]) for o in outs if o is not None], wall_s=wall)


def _mpiexec(cmd: list[str], timeout: float, n: int) -> tuple[int, str]:
    """Run mpiexec in a session of its own; past ``timeout`` kill the session (mpiexec and every
    rank it started) and raise PTO_MPI."""
    env = dict(os.environ)
    env.setdefault("UCX_LOG_LEVEL", "error")       # the UCX transport's shutdown warnings are noise here
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            env=env)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        out, _ = proc.communicate()
        raise PTOError("PTO_MPI", f"the MPI launch of {n} processes ran past its timeout; every process was "
                       "killed", expected=f"done within timeout={timeout:g} s", actual="still running",
                       notes=_tail(out)) from None
    return proc.returncode, out.decode(errors="replace")


def _kill(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(2)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(output: bytes | str | None) -> list[str]:
    text = output.decode(errors="replace") if isinstance(output, bytes) else (output or "")
    lines = [ln for ln in text.splitlines() if ln.strip()][-_TAIL:]
    return ["mpiexec's output ends: " + " | ".join(lines)] if lines else []


def _crashed(output: str, pids: Mapping[int, int]) -> tuple[int, str] | None:
    """The rank and exit whose bad termination mpiexec reported first (its report names the pid)."""
    m = re.search(r"PID (\d+) RUNNING AT .*?EXIT CODE: (\d+)", output, re.S)
    if m is None or int(m.group(1)) not in pids:
        return None
    return pids[int(m.group(1))], m.group(2)


def _raise_failure(outs: list[dict[str, Any] | None], rc: int, output: str, n: int,
                   pids: Mapping[int, int]) -> None:
    """The error a failed launch reports: the first failing rank's (the one whose failure
    aborted the others), else a process that ended without a result (PTO_MPI: the one mpiexec
    reports, else the first), else the first rank's error in rank order that is not merely
    RUNTIME_COMM_ABORTED."""
    failed = [(r, o) for r, o in enumerate(outs) if o is not None and o["error"] is not None]
    for r, o in failed:
        if o["primary"]:
            raise error_from_record(o["error"], f"on rank {r} of {n} MPI processes")
    missing = [r for r, o in enumerate(outs) if o is None]
    if missing:
        crash = _crashed(output, pids)
        who = f"the MPI process of rank {crash[0]}" if crash else "an MPI process of the launch"
        how = f"exit code {crash[1]}" if crash else f"mpiexec exit status {rc}"
        raise PTOError("PTO_MPI", f"{who} ended without a result (crashed or killed); mpiexec ended the others",
                       expected="every rank writes its outputs or its error",
                       actual=f"{how}; no result from rank(s) {missing}", notes=_tail(output))
    causes = [(r, o) for r, o in failed if o["error"]["code"] != "RUNTIME_COMM_ABORTED"] or failed
    if causes:
        r, o = causes[0]
        raise error_from_record(o["error"], f"on rank {r} of {n} MPI processes")
