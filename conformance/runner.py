"""Run the conformance levels against one backend and collect a report.

Per profile, every instruction x legal dtype tuple goes through L0 (program format), L1
(illegal uses rejected), L2 (results within the numerics contract), stopping at the first
level that fails; L3 (whole programs, sync scenarios) runs once per profile. Skip and xfail
lists take ``fnmatch`` patterns over ``MNEMONIC`` or ``MNEMONIC:dtypes``.
"""
from __future__ import annotations

import fnmatch
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterable, TextIO

from ..backends import Backend, get
from ..isa import dtypes as dt
from ..isa.diagnostics import PTOError
from ..isa.registry import get as instruction
from . import cases as C
from .outcome import Outcome

DEFAULT_EXAMPLES = {0: 5, 1: 5, 2: 25, 3: 25}


@dataclass
class Patterns:
    """``TADD``, ``TROW*``, ``TCVT:f32,f16``: one pattern per line, or several separated by
    commas (a comma followed by a lower-case dtype continues a dtype tuple)."""

    items: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> "Patterns":
        items = []
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            for piece in (p.strip() for p in line.split(",")):
                if piece and items and ":" in items[-1] and _is_dtype(piece):
                    items[-1] += "," + piece          # continues a dtype tuple (TCVT:f32,f16)
                elif piece:
                    items.append(piece)
        return cls(tuple(items))

    def match(self, mnemonic: str, dtypes: str | None = None) -> bool:
        """Does a pattern name ``mnemonic`` (and, when given, this dtype key)?"""
        for p in self.items:
            name, _, dts = p.partition(":")
            if fnmatch.fnmatchcase(mnemonic, name.upper()) and (
                    dtypes is None or not dts or fnmatch.fnmatchcase(dtypes, dts)):
                return True
        return False


def _is_dtype(piece: str) -> bool:
    return any(fnmatch.fnmatchcase(d.name, piece) for d in dt.ALL)


@dataclass
class Report:
    backend: str
    seed: int
    levels: tuple[int, ...]
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)     # profile -> outcomes
    seconds: float = 0.0
    spec: str = ""      # how ``pto --backend`` names the backend again (reproducers' run lines)

    def failures(self) -> list[tuple[str, Outcome]]:
        return [(p, o) for p, os in self.outcomes.items() for o in os if o.status == "fail"]

    @property
    def ok(self) -> bool:
        return not self.failures()


def backend_spec(b: Backend) -> str:
    """``package.module:Class`` of a Backend object, so that ``pto run --backend`` can build it
    again (with its default options); its name when its class cannot be imported by name."""
    cls = type(b)
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        return b.name
    return f"{cls.__module__}:{cls.__qualname__}"


def _level_fns() -> dict[int, Callable[..., Any]]:
    from .level0 import run_level0
    from .level1 import run_level1
    from .level2 import run_level2
    return {0: run_level0, 1: run_level1, 2: run_level2}


def _guard(fn: Callable[..., Outcome], level: int, mnemonic: str, key: str, *args: Any, **kw: Any) -> Outcome:
    """A level must report, not crash: anything escaping it becomes a failed outcome."""
    try:
        return fn(*args, **kw)
    except PTOError as e:
        return Outcome(level, mnemonic, key, "fail", reason=f"{e.code}: {e.message}")
    except Exception as e:  # noqa: BLE001 - a broken backend must not stop the suite
        return Outcome(level, mnemonic, key, "fail", reason=f"{type(e).__name__}: {e}")


def _pair(b: Backend, profile: str, mnemonic: str, key: str, levels: tuple[int, ...],
          skips: Patterns | None, xfails: Patterns | None, max_examples: int | None, seed: int
          ) -> tuple[list[Outcome], str]:
    """One instruction x dtype tuple through the levels: its outcomes and its progress mark
    (``.`` pass, ``F`` fail, ``-`` a skipped level, ``s`` skip list, ``u`` unsupported)."""
    instr = instruction(mnemonic)
    dtypes, base = next((d, c) for d, c in C.base_cases(instr, profile).items() if C.dtype_key(d) == key)
    if skips and skips.match(mnemonic, key):
        return [Outcome(min(levels), mnemonic, key, "skipped", reason="in the skip list")], "s"
    if base is not None and b.unsupported(instr, base.types, profile):
        return [Outcome(min(levels), mnemonic, key, "unsupported",
                        reason=b.unsupported(instr, base.types, profile) or "")], "u"
    fns = _level_fns()
    outs: list[Outcome] = []
    mark = "."
    for level in (lv for lv in levels if lv in fns):
        ex = max_examples or DEFAULT_EXAMPLES[level]
        o = _guard(fns[level], level, mnemonic, key, b, profile, instr, dtypes, max_examples=ex, seed=seed)
        if o.status == "fail" and xfails and xfails.match(mnemonic, key):
            o.status, o.reason = "skipped", "expected failure (xfail list): " + (o.reason or "")
        outs.append(o)
        if o.status == "fail":
            return outs, "F"
        if o.status == "skipped" and mark == ".":
            mark = "-"
    return outs, mark


def _selected_keys(profile: str, mnemonic: str, only: Patterns | None) -> list[str]:
    keys = [C.dtype_key(d) for d in C.base_cases(instruction(mnemonic), profile)]
    return [k for k in keys if only is None or not only.items or only.match(mnemonic, k)]


def _level3(b: Backend, profile: str, max_examples: int | None, seed: int, mpi: bool = False) -> list[Outcome]:
    from .level3 import run_level3
    from .level3_comm import run_level3_comm
    try:
        return (run_level3(b, profile, max_examples or DEFAULT_EXAMPLES[3], seed)
                + run_level3_comm(b, profile, seed, mpi=mpi))
    except Exception as e:  # noqa: BLE001 - reported, not raised
        return [Outcome(3, "L3", "mixed", "fail", reason=f"{type(e).__name__}: {e}")]


_WORKER_BACKEND: dict[str, Backend] = {}


def _in_worker(task: tuple[Any, ...]) -> Any:
    """One task in a worker process: the backend is built once per process from its spec."""
    spec, kind, args = task
    b = _WORKER_BACKEND.get(spec) or _WORKER_BACKEND.setdefault(spec, get(spec))
    return _pair(b, *args) if kind == "pair" else _level3(b, *args)


#: pairs a worker process checks before a fresh one replaces it (bounds a long run's memory)
WORKER_TASKS = 200


def _pool(jobs: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))


def _pooled(jobs: int, tasks: list[tuple]) -> Generator[Any, None, None]:
    """``_in_worker`` over ``tasks`` in order, in ``jobs`` worker processes that are replaced every
    ``WORKER_TASKS`` tasks each: what a backend keeps per compiled program (JIT modules, caches)
    would otherwise grow with the run until it fills the machine (a fresh pool per chunk, since
    Python 3.11's ``max_tasks_per_child`` can leave the pool without workers)."""
    chunk = WORKER_TASKS * jobs
    for start in range(0, len(tasks), chunk):
        pool = _pool(jobs)
        try:
            yield from pool.map(_in_worker, tasks[start:start + chunk])
        finally:                # closed early (a failure, Ctrl-C): queued pairs are not run
            pool.shutdown(cancel_futures=True)


def default_jobs() -> int:
    """Worker processes for a command-line run: one per CPU this process may use."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:                      # not on Linux
        return os.cpu_count() or 1


def run(backend: str | Backend, profiles: Iterable[str] = ("cpu",), levels: Iterable[int] = (0, 1, 2, 3),
        only: Patterns | None = None, skips: Patterns | None = None, xfails: Patterns | None = None,
        max_examples: int | None = None, seed: int = 0, progress: TextIO | None = sys.stderr,
        jobs: int = 1, mpi: bool = False) -> Report:
    """The levels over every selected instruction x dtype tuple of each profile. ``jobs`` > 1
    runs the pairs (and L3) in that many worker processes when the backend is named by a
    string (workers build it again from the name); outcomes are the same as a serial run's,
    because every check seeds hypothesis afresh per instruction x dtype tuple. ``mpi``: L3's
    multi-rank scenarios are also launched under MPI and compared with the embedded execution."""
    b = get(backend)
    levels = tuple(sorted(set(levels)))
    report = Report(b.name, seed, levels, spec=backend if isinstance(backend, str) else backend_spec(b))
    start = time.perf_counter()
    parallel = jobs > 1 and isinstance(backend, str)
    l3_pool = _pool(1) if parallel and 3 in levels else None     # L3 beside the pairs' workers
    try:
        for profile in profiles:
            instrs = [i.mnemonic for i in C.instructions(profile)
                      if only is None or not only.items or only.match(i.mnemonic)]
            keys = {m: _selected_keys(profile, m, only) for m in instrs}
            args = [(profile, m, k, levels, skips, xfails, max_examples, seed) for m in instrs for k in keys[m]]
            l3_args = (profile, max_examples, seed, mpi)
            if parallel:
                l3 = l3_pool.submit(_in_worker, (backend, "l3", l3_args)) if l3_pool is not None else None
                results = _pooled(jobs, [(backend, "pair", a) for a in args])
            else:
                l3 = None
                results = (_pair(b, *a) for a in args)
            outs: list[Outcome] = []
            try:
                for n, mnemonic in enumerate(instrs, 1):
                    line = ""
                    for _ in keys[mnemonic]:
                        pair_outs, mark = next(results)
                        outs += pair_outs
                        line += mark
                    if progress is not None:
                        progress.write(f"[{profile} {n:>3}/{len(instrs)}] {mnemonic:<18} {line}\n")
                        progress.flush()
            finally:
                results.close()                         # shuts the chunk's workers down
            if 3 in levels:
                l3_outs = l3.result() if l3 is not None else _level3(b, *l3_args)
                outs += l3_outs
                if progress is not None:
                    progress.write(f"[{profile} L3] " + " ".join(f"{o.instruction}:{o.status}" for o in l3_outs) + "\n")
            report.outcomes[profile] = outs
    finally:
        if l3_pool is not None:
            l3_pool.shutdown(cancel_futures=True)
    report.seconds = time.perf_counter() - start
    return report
