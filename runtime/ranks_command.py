"""``pto run FILE --ranks N [--mpi]``: one kernel on N ranks, embedded (threads in this
process) or as N MPI processes (``runtime.mpi.launch``); the same arguments, outputs and errors
either way (docs/comm.md).

Every array parameter has one instance per rank. ``--arg NAME=FILE`` gives every rank a copy of
the file's array; a path containing ``{rank}`` is read once per rank with the rank id put in
(``--arg x=x{rank}.npy``). ``--random`` fills rank r's arrays from seed + r, ``--zeros`` with
zeros; scalars are the same on every rank. ``--out NAME=FILE`` needs ``{rank}`` in the path
(one file per rank) when there are several ranks.
"""
from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from ..assembler.ir import Kernel
from ..backends import get as get_backend
from ..backends.base import Executable
from ..backends.comm_embedded import check_ranks
from ..backends.inputs import fill, literal, parse_assignment, parse_shape, save
from ..isa.diagnostics import PTOError
from ..isa.types import ScalarType

#: pto run options that a multi-rank run does not take (their one-rank meanings have no rank axis)
_ONE_RANK_ONLY = {"compare_with": "--compare-with", "trace": "--trace", "timeline": "--timeline",
                  "report": "--report", "executor": "--executor"}


def _refuse_one_rank_options(args: argparse.Namespace, kernels: list[Kernel]) -> None:
    for attr, flag in _ONE_RANK_ONLY.items():
        if getattr(args, attr, None):
            raise PTOError("PTO_OPTION", f"{flag} runs one rank; it does not combine with --ranks",
                           expected=f"--ranks without {flag}", actual=flag)
    if len(kernels) > 1:
        raise PTOError("PTO_OPTION", "--ranks runs one kernel", expected="one --kernel",
                       actual=f"{len(kernels)} kernels")


def rank_values(kernel: Kernel, args: argparse.Namespace, ranks: int) -> list[dict[str, Any]]:
    """Each rank's values: --arg files (``{rank}`` replaced), the rest filled per rank."""
    scalars = {p.name for p in kernel.params if isinstance(p.type, ScalarType)}
    raw = [parse_assignment(a) for a in args.arg]
    shapes = {n: parse_shape(v) for n, v in map(parse_assignment, args.shape)}
    for name, text in raw:
        if name in scalars and "{rank}" in text:
            raise PTOError("PTO_ARG", f"scalar %{name} is the same on every rank; {{rank}} is for array files",
                           expected="a number", actual=text)
    per: list[dict[str, Any]] = []
    for r in range(ranks):
        given = {n: literal(v.replace("{rank}", str(r))) for n, v in raw}
        if not (args.random or args.zeros):
            missing = [p.name for p in kernel.params if p.name not in given]
            if missing:
                raise PTOError("PTO_ARG", f"@{kernel.name}: no value for " + ", ".join(f"%{m}" for m in missing),
                               expected=" ".join(f"--arg {m}=..." for m in missing),
                               actual="no --arg for " + ", ".join(missing),
                               notes=["or fill the arrays not given with --random [--seed N] or --zeros"])
        per.append(fill(kernel, given, shapes, args.seed + r if args.random else None))
    return per


def _out_paths(outs: list[tuple[str, str]], ranks: int, names: set[str]) -> None:
    for name, path in outs:
        if name not in names:
            raise PTOError("PTO_ARG", f"--out names no parameter %{name}", expected=", ".join(sorted(names)),
                           actual=name)
        if ranks > 1 and "{rank}" not in path:
            raise PTOError("PTO_ARG", f"--out {name}=... of a {ranks}-rank run needs {{rank}} in the path "
                           "(one file per rank)", expected=f"e.g. {name}{{rank}}.npy", actual=path)


def run_ranks(args: argparse.Namespace, exe: Executable, kernels: list[Kernel]) -> int:
    """Run ``kernels[0]`` on ``args.ranks`` ranks; print what it wrote and how long it took."""
    _refuse_one_rank_options(args, kernels)
    if args.ranks is None:
        raise PTOError("PTO_OPTION", "--mpi runs a multi-rank launch: give its --ranks N",
                       expected="--ranks N with --mpi", actual="no --ranks")
    n = check_ranks(args.ranks)
    if not get_backend(args.backend).multi_rank:
        raise PTOError("PTO_RANKS", f"backend {args.backend!r} runs one rank only: --ranks needs one that runs "
                       "ranks=N", expected="--backend reference or llvm", actual=args.backend)
    kernel = kernels[0]
    per = rank_values(kernel, args, n)
    outs = [parse_assignment(o) for o in args.out]
    _out_paths(outs, n, {p.name for p in kernel.params})
    arrays = {p.name for p in kernel.params if not isinstance(p.type, ScalarType)}
    values = {name: ([per[r][name] for r in range(n)] if name in arrays else per[0][name]) for name in per[0]}
    start = time.perf_counter()
    if args.mpi:
        from .mpi import launch
        options = {**({"strict": False} if args.relaxed else {}), **({"checked": True} if args.checked else {})}
        res = launch(args.file, kernel.name, values, ranks=n, backend=args.backend, profile=exe.profile,
                     block_num=args.block_num, options=options, wait_timeout=args.wait_timeout,
                     timeout=args.mpi_timeout)
        how = f"{n} MPI processes"
    else:
        res = exe.run(kernel.name, block_num=args.block_num, ranks=n, **values)
        how = f"{n} ranks embedded"
    took = time.perf_counter() - start
    print(f"@{kernel.name} on {args.backend} (profile {exe.profile}), {how}: "
          f"{res.counters.get('instructions', 0)} instruction(s) in {took * 1e3:.2f} ms")
    if args.mpi:
        print("  kernel time per rank: " + ", ".join(f"{t[-1] * 1e3:.2f} ms" for t in res.times))
    for name, arrs in res.outputs.items():
        a = np.asarray(arrs[0])
        print(f"  {name}: {n} x {a.shape} {a.dtype}")
    for name, path in outs:
        for r in range(n):
            save(path.replace("{rank}", str(r)), values[name][r] if name in arrays else values[name])
    return 0
