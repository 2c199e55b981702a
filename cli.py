"""The ``pto`` command: a thin layer over the Python API. Errors print as diagnostics, never
as tracebacks."""
from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from typing import Callable, Sequence

from . import check, load
from .assembler.ir import Kernel, Module
from .assembler.format import format_source
from .assembler.loading import decode_text, is_bytecode, read_bytes
from .assembler.parser import parse
from .isa import PTOError
from .isa import docgen, registry
from .isa.profiles import PROFILES
from .isa.types import ScalarType
from .isa.render import instruction_json, spec_json


def _cmd_isa(args: argparse.Namespace) -> int:
    if args.write_docs:
        paths = docgen.write(args.write_docs)
        print(f"wrote {len(paths)} pages to {args.write_docs}")
        return 0
    if args.json:
        data = spec_json() if not args.name else instruction_json(registry.get(args.name))
        print(json.dumps(data, indent=2))
        return 0
    if args.name:
        print(docgen.page(registry.get(args.name)))
        return 0
    rows = []
    for ins in registry.all_instructions():
        if args.family and ins.family.name.lower() != args.family.lower():
            continue
        rule = ins.dtypes
        dts = " ".join(sorted({d.name for t in rule.tuples for d in t})) if rule else "-"
        ops = ", ".join(f"{o.name}:{o.kind.value}" + ("" if o.role.value == "in" else f"({o.role.value})")
                        for o in ins.operands)
        rows.append((ins.mnemonic, ins.family.name.lower(), ops, dts))
    w = [max(len(r[i]) for r in rows) for i in range(2)] if rows else [0, 0]
    for r in rows:
        print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]}  [{r[3]}]")
    print(f"{len(rows)} instructions")
    return 0


def _write(path: str, data: bytes | str) -> None:
    raw = data if isinstance(data, bytes) else data.encode("utf-8")   # not the locale's encoding
    try:
        with open(path, "wb") as f:
            f.write(raw)
    except OSError as e:
        raise PTOError("PTO_FILE", f"cannot write {path}: {e.strerror or e}") from None


def _cmd_asm(args: argparse.Namespace) -> int:
    m = check(load(args.file), args.profile)
    out = args.output or os.path.splitext(args.file)[0] + ".ptobc"
    _write(out, m.to_bytes())
    print(f"wrote {out} ({len(m.kernels)} kernel(s))")
    return 0


def _cmd_dis(args: argparse.Namespace) -> int:
    text = load(args.file).to_text()
    if args.output:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_fmt(args: argparse.Namespace) -> int:
    original = read_bytes(args.file)
    if is_bytecode(original):   # -i would silently turn the bytecode file into text
        raise PTOError("PTO_FILE", f"{args.file} is bytecode; fmt formats PTO-AS text (see pto dis)",
                       expected="PTO-AS text", actual="PTO bytecode")
    source = decode_text(original, args.file)
    text = format_source(parse(source, filename=args.file), source)
    if args.check:
        if original == text.encode():
            return 0
        diff = difflib.unified_diff(source.splitlines(keepends=True), text.splitlines(keepends=True),
                                    f"{args.file} (as written)", f"{args.file} (canonical)")
        sys.stdout.writelines(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                              for line in diff)
        print(f"{args.file}: not in canonical form", file=sys.stderr)
        return 1
    if args.in_place:
        _write(args.file, text)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    m = check(load(args.file), args.profile)
    n = sum(1 for k in m.kernels for _ in k.walk())
    print(f"{args.file}: ok for profile {args.profile} ({len(m.kernels)} kernel(s), {n} statement(s))")
    return 0


def _cmd_sync(args: argparse.Namespace) -> int:
    """The program with the set_flag / wait_flag pairs it lacks (assembler/autosync.py), as PTO-AS."""
    from .assembler.autosync import autosync
    from .assembler.double_buffer import double_buffer
    m = check(load(args.file), args.profile)
    if args.double_buffer:
        m, notes = double_buffer(m, args.profile)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
    text = autosync(m, args.profile).to_text()
    if args.output:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def _backend_row(name: str) -> tuple[str, str, str, str, str]:
    """One line of ``pto backends``; a plug-in that fails to load or to answer shows as
    unavailable with the reason instead of stopping the listing."""
    from .backends import get
    try:
        b = get(name)
        ok, why = b.is_available()
        have, total = b.coverage()
        return name, "yes" if ok else "no", why or "-", " ".join(b.profiles), f"{have}/{total}"
    except PTOError as e:
        return name, "no", e.message, "-", "-"
    except Exception as e:  # noqa: BLE001 - third-party code answering is_available/coverage
        return name, "no", f"{type(e).__name__}: {e}", "-", "-"


def _cmd_backends(args: argparse.Namespace) -> int:
    from .backends import names
    rows = [_backend_row(name) for name in names()]
    head = ("backend", "available", "reason", "profiles", "instructions")
    w = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
    for r in [head] + rows:
        print("  ".join(f"{c:<{w[i]}}" for i, c in enumerate(r)).rstrip())
    return 0


def _kernel(m: Module, name: str | None) -> Kernel:
    """The kernel ``pto run`` runs: the named one, or the module's only one."""
    return m.kernel(name, "choose one with --kernel")


def _require_arguments(kernel: Kernel, given: dict[str, object]) -> None:
    """Every parameter needs a value: running on arrays nobody asked for would print
    numbers computed from zeros. ``--random`` or ``--zeros`` fill the rest on request."""
    missing = [p for p in kernel.params if p.name not in given]
    if not missing:
        return
    how = [f"--arg {p.name}=" + ("VALUE" if isinstance(p.type, ScalarType) else "FILE.npy") for p in missing]
    raise PTOError("PTO_ARG", f"@{kernel.name}: no value for " + ", ".join(f"%{p.name}" for p in missing),
                   expected=" ".join(how), actual="no --arg for " + ", ".join(p.name for p in missing),
                   notes=["or fill the arrays not given with --random [--seed N] or --zeros "
                          "(with --shape NAME=AxB for dynamic dims); scalars always need --arg"])


def _check_outs(outs: list[tuple[str, str]], values: dict[str, object]) -> None:
    for name, _ in outs:   # before the run, so a typo does not cost one
        if name not in values:
            raise PTOError("PTO_ARG", f"--out names no parameter %{name}", expected=", ".join(values),
                           actual=name)


def _fill_shared(kernels: list[Kernel], given: dict[str, object], shapes: dict[str, tuple[int, ...]],
                 args: argparse.Namespace) -> dict[str, object]:
    """Values for several kernels run in order: a parameter name is one buffer or scalar for
    every kernel that has it (given, or filled for the first kernel that needs it)."""
    from .backends.inputs import fill
    known = {p.name for k in kernels for p in k.params}
    for what, names in (("--arg", given), ("--shape", shapes)):
        unknown = sorted(set(names) - known)
        if unknown:
            raise PTOError("PTO_ARG", f"{what} names no parameter of the kernels run: %{unknown[0]}",
                           expected=", ".join(sorted(known)), actual=", ".join(unknown))
    values = dict(given)
    for i, k in enumerate(kernels):
        if not (args.random or args.zeros):
            _require_arguments(k, values)
        mine = {n: s for n, s in shapes.items() if any(p.name == n for p in k.params)}
        values = fill(k, values, mine, args.seed + i if args.random else None)
    return values


def _cmd_run(args: argparse.Namespace) -> int:
    import copy
    import time

    import numpy as np

    from . import compile as compile_module
    from .backends.compare import compare, error_budget
    from .backends.inputs import fill, literal, parse_assignment, parse_shape, save

    m = load(args.file)
    options = {"strict": False} if args.relaxed else {}
    checked = {"checked": True} if args.checked else {}     # this backend's only (llvm's option)
    exe = compile_module(m, args.backend, args.profile, **options, **checked)
    if args.report and not exe.simulates:     # before the run, so the run is not wasted
        raise PTOError("PTO_OPTION", f"--report needs a simulating backend; {args.backend} reports no cycles",
                       expected="--backend ascend_sim", actual=args.backend)
    kernels = [_kernel(m, name) for name in (args.kernel or [None])]
    if args.ranks is not None or args.mpi:       # a multi-rank launch: embedded, or MPI processes
        from .runtime.ranks_command import run_ranks
        return run_ranks(args, exe, kernels)
    given = {n: literal(v) for n, v in map(parse_assignment, args.arg)}
    shapes = {n: parse_shape(v) for n, v in map(parse_assignment, args.shape)}
    outs = list(map(parse_assignment, args.out))
    if len(kernels) > 1 or args.executor:       # a task graph: the kernels in order on shared buffers
        from .runtime.command import run_kernels
        values = _fill_shared(kernels, given, shapes, args)
        _check_outs(outs, values)
        rc = run_kernels(args, exe, kernels, values)
        for name, path in outs:
            save(path, values[name])
        return rc
    kernel = kernels[0]
    if not (args.random or args.zeros):
        _require_arguments(kernel, given)
    values = fill(kernel, given, shapes, args.seed if args.random else None)
    _check_outs(outs, values)
    pristine = copy.deepcopy(values) if args.compare_with else None
    start = time.perf_counter()
    res = exe.run(kernel.name, block_num=args.block_num, trace=bool(args.trace or args.timeline), **values)
    took = time.perf_counter() - start
    print(f"@{kernel.name} on {args.backend} (profile {exe.profile}): {res.counters.get('instructions', 0)} "
          f"instruction(s) in {took * 1e3:.2f} ms")
    for name, arr in res.outputs.items():
        a = np.asarray(arr)
        print(f"  {name}: {a.shape} {a.dtype}")
    if exe.simulates:      # a simulating backend's timing and hazards (ascend_sim)
        print(f"  simulated on {res.machine}: {res.cycles:.0f} cycles ({res.time_us:.3f} us), bound {res.bound}; "
              f"{len(res.hazards)} hazard(s)")
        for h in res.hazards[:5]:
            print(f"    {h.code}: {h.message}")
        if args.report:
            from .backends.ascend_sim.report import report_table
            print(report_table(res, kernel.name))
    for name, path in outs:
        save(path, values[name])
    if args.trace:
        from .backends.trace import write_chrome_trace
        write_chrome_trace(args.trace, res.trace or [], args.backend)
        print(f"  trace: {args.trace}")
    if args.timeline:
        from .backends.timeline import write_timeline_png
        write_timeline_png(args.timeline, res.trace or [], f"@{kernel.name} on {args.backend} ({exe.profile})")
        print(f"  timeline: {args.timeline}")
    if args.compare_with:
        other = compile_module(m, args.compare_with, exe.profile, **options)
        theirs = other.run(kernel.name, block_num=args.block_num, **pristine)
        budget = error_budget(kernel)
        print(f"compared with {args.compare_with} on the same inputs (got: {args.backend}, want: {args.compare_with})")
        print(f"  error budget: {budget:g} eps, the numerics contracts of @{kernel.name}'s tile instructions "
              "added up (exact 0, rounded 1, ulp n, sums their length)")
        diffs = [compare(n, np.asarray(res.outputs[n]), np.asarray(theirs.outputs[n]), budget)
                 for n in res.outputs]
        for d in diffs:
            print("\n".join("  " + line for line in d.row().splitlines()))
        return 0 if all(d.ok for d in diffs) else 1
    return 0


def _cmd_conformance(args: argparse.Namespace) -> int:
    from .conformance import report as R
    from .conformance.runner import Patterns, run

    def patterns(path: str | None) -> Patterns | None:
        if path is None:
            return None
        try:
            with open(path, encoding="utf-8") as f:
                return Patterns.parse(f.read())
        except OSError as e:
            raise PTOError("PTO_FILE", f"cannot read {path}: {e.strerror or e}") from None

    levels = range(0, args.level + 1)
    if args.jobs is None:
        from .conformance.runner import default_jobs
        args.jobs = default_jobs()
    if args.jobs < 1:
        raise PTOError("PTO_ARG", "--jobs must be at least 1", expected="an integer >= 1", actual=str(args.jobs))
    result = run(args.backend, args.profile or ["cpu"], levels, Patterns.parse(args.only or ""),
                 patterns(args.skips), patterns(args.xfails), args.max_examples, args.seed,
                 None if args.quiet else sys.stderr, jobs=args.jobs, mpi=args.mpi)
    R.write(result, args.report, args.markdown, args.reproducers)
    for profile, outcomes in result.outcomes.items():
        counts = R.to_json(result)["profiles"][profile]["summary"]
        print(f"{result.backend} on {profile}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    for profile, o in result.failures():
        print(f"FAIL {profile} {o.instruction} [{o.dtypes}] L{o.level}: {o.reason or (o.failure and o.failure.message)}")
    print(f"{len(result.failures())} failure(s) in {result.seconds:.0f} s")
    return 0 if result.ok else 1


def _cmd_graph(args: argparse.Namespace) -> int:
    from .runtime.command import graph_command
    return graph_command(args)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pto", description="openpto: tools for the PTO virtual ISA")
    sub = p.add_subparsers(dest="command", required=True)
    isa = sub.add_parser("isa", help="list, show or export the instruction set")
    isa.add_argument("name", nargs="?", help="one instruction to show (e.g. TROWSUM)")
    isa.add_argument("--json", action="store_true", help="dump the spec (or one instruction) as JSON")
    isa.add_argument("--write-docs", metavar="DIR", help="generate the reference pages into DIR")
    isa.add_argument("--family", help="only list one family (e.g. elementwise)")
    isa.set_defaults(run=_cmd_isa)

    profiles = sorted(PROFILES)
    asm = sub.add_parser("asm", help="assemble PTO-AS text into bytecode (checks it first)")
    asm.add_argument("file", help="a .pto file (or .ptobc)")
    asm.add_argument("-o", "--output", help="output path (default: FILE with .ptobc)")
    asm.add_argument("--profile", choices=profiles, default=None,
                     help="also check legality for this profile (default: structure only)")
    asm.set_defaults(run=_cmd_asm)

    dis = sub.add_parser("dis", help="print a bytecode (or text) program as canonical PTO-AS")
    dis.add_argument("file")
    dis.add_argument("-o", "--output", help="write the text here instead of stdout")
    dis.set_defaults(run=_cmd_dis)

    fmt = sub.add_parser("fmt", help="print a program in canonical form")
    fmt.add_argument("file")
    mode = fmt.add_mutually_exclusive_group()
    mode.add_argument("-i", "--in-place", action="store_true", help="rewrite the file")
    mode.add_argument("--check", action="store_true", help="exit 1 when the file is not canonical")
    fmt.set_defaults(run=_cmd_fmt)

    chk = sub.add_parser("check", help="verify structure and legality for a profile")
    chk.add_argument("file")
    chk.add_argument("--profile", choices=profiles, default="cpu")
    chk.set_defaults(run=_cmd_check)

    syn = sub.add_parser("sync", help="insert the set_flag / wait_flag pairs a program lacks; print PTO-AS")
    syn.add_argument("file")
    syn.add_argument("--profile", choices=profiles, default="a3", help="whose flag ids to use (default a3)")
    syn.add_argument("-o", "--output", help="write the text here instead of stdout")
    syn.add_argument("--double-buffer", action="store_true",
                     help="give independent loops a second copy of their tiles where they fit (a note "
                          "per loop on stderr says which did and why the others did not)")
    syn.set_defaults(run=_cmd_sync)

    bk = sub.add_parser("backends", help="list backends: availability, profiles, instruction coverage")
    bk.set_defaults(run=_cmd_backends)

    run = sub.add_parser("run", help="run a kernel on a backend, or several in order as a task graph")
    run.add_argument("file")
    run.add_argument("--backend", default="reference", help="name or package.module:attr")
    run.add_argument("--profile", choices=profiles, default=None)
    run.add_argument("--kernel", action="append", default=None,
                     help="kernel to run (needed when the module has several); repeated: run the kernels in "
                          "this order as a task graph, parameters of one name sharing one buffer or scalar")
    run.add_argument("--executor", default=None,
                     help="run as a task graph on embedded (the default with several --kernel), simulated or "
                          "dask; --trace/--timeline then draw its tasks per core")
    run.add_argument("--policy", default="fifo", help="task graph: ready-queue order fifo (default), lifo, critical")
    run.add_argument("--workers", type=int, default=None,
                     help="task graph: embedded worker threads (default: CPUs) or dask local processes (2)")
    run.add_argument("--sim-profile", default=None,
                     help="task graph, simulated: whose cores and cycle estimates (default: --profile if it has "
                          "a machine model, else a3)")
    run.add_argument("--scheduler", metavar="ADDRESS", help="task graph, dask: a running scheduler (default: local)")
    run.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                     help="an argument: an array file (NAME.<dtype>.npy, e.g. x.bf16.npy holding raw bits; "
                          "a strided view as NAME.<dtype>.npz; any other .npy as saved), true/false, "
                          "an integer or a float")
    run.add_argument("--shape", action="append", default=[], metavar="NAME=AxB",
                     help="the shape of an array parameter not given (dynamic dims)")
    run.add_argument("--out", action="append", default=[], metavar="NAME=FILE.npy",
                     help="save an array parameter after the run (bf16/fp8 need NAME.<dtype>.npy)")
    fill_mode = run.add_mutually_exclusive_group()
    fill_mode.add_argument("--random", action="store_true",
                           help="fill array parameters not given with random values")
    fill_mode.add_argument("--zeros", action="store_true",
                           help="fill array parameters not given with zeros "
                                "(without --random or --zeros every parameter needs --arg)")
    run.add_argument("--seed", type=int, default=0, help="the seed --random draws from (default 0)")
    run.add_argument("--block-num", type=int, default=1, help="run block indices 0..N-1")
    run.add_argument("--ranks", type=int, default=None,
                     help="run on N ranks (docs/comm.md): every array parameter has one instance per rank "
                          "(--arg NAME=FILE for all, a path with {rank} per rank; --out paths need {rank})")
    run.add_argument("--mpi", action="store_true", help="with --ranks: one MPI process per rank (mpiexec) "
                     "instead of the embedded execution (threads in this process)")
    run.add_argument("--wait-timeout", type=float, default=60.0, metavar="SECONDS",
                     help="--mpi: a TWAIT waiting longer is RUNTIME_COMM_DEADLOCK (default 60)")
    run.add_argument("--mpi-timeout", type=float, default=600.0, metavar="SECONDS",
                     help="--mpi: the whole launch's limit; past it every process is killed (default 600)")
    run.add_argument("--relaxed", action="store_true", help="reference: no run-time uninitialised-read or poison checks")
    run.add_argument("--checked", action="store_true",
                     help="llvm: report reads of never-written tile elements (RUNTIME_UNINIT_READ)")
    run.add_argument("--compare-with", metavar="BACKEND",
                     help="run a second backend on the same inputs and report the differences")
    run.add_argument("--trace", metavar="FILE.json", help="write a Chrome/Perfetto trace of the run")
    run.add_argument("--timeline", metavar="FILE.png", help="draw the run's timeline (lanes per core and pipe)")
    run.add_argument("--report", action="store_true",
                     help="a simulating backend (ascend_sim): the per-pipe table (busy cycles, utilisation, bound)")
    run.set_defaults(run=_cmd_run)

    graph = sub.add_parser("graph", help="run a task graph (kernels, buffers, tasks) from a JSON file on an executor")
    graph.add_argument("file", help="a task-graph file (JSON; the format is in docs/runtime.md)")
    graph.add_argument("--executor", default="embedded", help="embedded (default), simulated or dask")
    graph.add_argument("--policy", default="fifo", help="ready-queue order: fifo (default), lifo or critical")
    graph.add_argument("--backend", default="reference", help="backend of kernels the file gives none (default reference)")
    graph.add_argument("--profile", default=None, help="profile kernels are compiled for (default: the backend's)")
    graph.add_argument("--workers", type=int, default=None,
                       help="embedded: worker threads (default: CPU count); dask without --scheduler: local workers (2)")
    graph.add_argument("--sim-profile", default="a3", help="simulated: whose cores and cycle estimates (default a3)")
    graph.add_argument("--scheduler", metavar="ADDRESS", help="dask: a running scheduler (default: a local cluster)")
    graph.add_argument("--seed", type=int, default=0, help="the seed random buffers draw from (default 0)")
    graph.add_argument("--trace", metavar="FILE.json", help="write the run as Chrome/Perfetto JSON")
    graph.add_argument("--timeline", metavar="FILE.png", help="draw the run's swimlane")
    graph.add_argument("--out", action="append", default=[], metavar="BUFFER=FILE.npy", help="save a buffer after the run")
    graph.set_defaults(run=_cmd_graph)

    from .frontend.command import add_parser as frontend_parser
    frontend_parser(sub)
    from .frontend.portcmd import add_parser as port_parser
    port_parser(sub)

    conf = sub.add_parser("conformance", help="run the conformance suite against a backend")
    conf.add_argument("--backend", default="reference", help="name or package.module:attr")
    conf.add_argument("--profile", action="append", choices=profiles,
                      help="profile to test (repeatable; default cpu)")
    conf.add_argument("--level", type=int, choices=range(4), default=3, help="highest level to run (0-3)")
    conf.add_argument("--only", help="comma-separated instruction patterns, e.g. TADD,TROW*")
    conf.add_argument("--max-examples", type=int, help="hypothesis examples per check (default per level)")
    conf.add_argument("--seed", type=int, default=0)
    conf.add_argument("--skips", help="file of patterns to skip (MNEMONIC or MNEMONIC:dtypes)")
    conf.add_argument("--xfails", help="file of patterns expected to fail")
    conf.add_argument("--report", help="write the JSON report here")
    conf.add_argument("--markdown", help="write the Markdown report here")
    conf.add_argument("--reproducers", default="pto-conformance-failures",
                      help="directory for failing programs and their inputs")
    conf.add_argument("-j", "--jobs", type=int, default=None,
                      help="worker processes (default: one per CPU; 1 runs in this process)")
    conf.add_argument("--mpi", action="store_true",
                      help="also launch L3's multi-rank scenarios on 2 and 4 MPI processes (the mpi extra) "
                           "and compare them with the embedded execution")
    conf.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    conf.set_defaults(run=_cmd_conformance)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except PTOError as e:
        print(e.render(), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
