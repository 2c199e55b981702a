"""``pto graph FILE`` and ``pto run FILE --kernel a --kernel b`` (their arguments are declared in
cli.py): run a task-graph file (``graphfile.py``), or a module's kernels in order on shared
buffers, on an executor; print the summary and the verifier's verdict, write the trace,
swimlane and chosen buffers."""
from __future__ import annotations

import argparse
import contextlib
from typing import Any, Iterator

import numpy as np

from ..isa.diagnostics import PTOError
from .executor import run
from .graph import TaskGraph
from .graphfile import load_graph
from .record import RunRecord
from .summary import format_summary
from .traces import write_chrome, write_swimlane_png
from .verify import problems


@contextlib.contextmanager
def _dask_client(address: str | None, workers: int | None) -> Iterator[Any]:
    try:
        import distributed
    except ImportError:
        raise PTOError("PTO_EXECUTOR", "the dask executor needs dask.distributed, the optional extra",
                       expected="pip install 'openpto[dask]'", actual="distributed is not installed") from None
    if address:
        with distributed.Client(address) as client:
            yield client
        return
    with distributed.LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


def graph_command(args: argparse.Namespace) -> int:
    outs = []
    for item in args.out:
        name, sep, path = item.partition("=")
        if not sep or not path:
            raise PTOError("PTO_ARG", f"--out {item!r} is not BUFFER=FILE.npy", expected="BUFFER=FILE.npy", actual=item)
        outs.append((name, path))
    gf = load_graph(args.file, backend=args.backend, profile=args.profile, seed=args.seed)
    for name, _ in outs:
        if name not in gf.buffers:
            raise PTOError("PTO_ARG", f"--out names {name!r}, not a buffer of the graph",
                           expected=", ".join(gf.buffers), actual=name)
    rec = run_on(gf.graph, args, args.sim_profile)
    found = report(rec, args.trace, args.timeline)
    for name, path in outs:
        try:
            np.save(path, gf.buffers[name])
        except OSError as e:
            raise PTOError("PTO_FILE", f"cannot write {path}: {e.strerror or e}") from None
    return 1 if found else 0


def run_on(graph: TaskGraph, args: argparse.Namespace, sim_profile: str) -> RunRecord:
    """Run ``graph`` on the command line's ``--executor`` (``--workers``, ``--scheduler``) and
    ``--policy``; a dask run without ``--scheduler`` starts a local cluster for the run."""
    if args.workers is not None and args.executor not in ("embedded", "dask"):
        raise PTOError("PTO_ARG", f"--workers sets embedded threads or local dask processes, not the {args.executor} "
                       "executor's cores", expected="--executor embedded | dask, or no --workers",
                       actual=f"--executor {args.executor} --workers {args.workers}")
    if args.workers is not None and args.executor == "dask" and args.scheduler:
        raise PTOError("PTO_ARG", "--workers starts a local dask cluster; with --scheduler the cluster has its own",
                       expected="--workers or --scheduler", actual=f"--scheduler {args.scheduler} --workers {args.workers}")
    with contextlib.ExitStack() as stack:
        options: dict[str, Any] = {}
        if args.executor == "embedded":
            options["workers"] = args.workers
        elif args.executor == "simulated":
            options["profile"] = sim_profile
        elif args.executor == "dask":
            options["client"] = stack.enter_context(_dask_client(args.scheduler, args.workers))
        return run(graph, args.executor, args.policy, **options)


def report(rec: RunRecord, trace: str | None, timeline: str | None) -> int:
    """Print the summary and the verifier's verdict, write the trace and swimlane asked for;
    the number of ordering problems found."""
    print(format_summary(rec))
    found = problems(rec)
    print(f"verified: every two tasks touching a common byte (one writing it) are ordered by the graph"
          if not found else f"{len(found)} ordering problem(s):")
    for p in found:
        print(p.render())
    if trace:
        write_chrome(trace, rec)
    if timeline:
        write_swimlane_png(timeline, rec)
    return len(found)


def run_kernels(args: argparse.Namespace, exe: Any, kernels: list[Any], values: dict[str, Any]) -> int:
    """``pto run FILE --kernel a --kernel b ...``: one task per kernel, in the order given, each
    bound by parameter name to the shared ``values`` (a buffer or scalar of one name is the
    same for every kernel that has it), so dependencies follow the buffers the kernels share."""
    from ..isa.machines import MACHINES
    for flag, given in (("--compare-with", args.compare_with), ("--report", args.report)):
        if given:
            raise PTOError("PTO_ARG", f"{flag} compares or reports one kernel's run, not a task graph's",
                           expected="one --kernel and no --executor", actual=f"{len(kernels)} kernel(s), "
                           f"executor {args.executor or 'embedded'}")
    graph = TaskGraph()
    names = [k.name for k in kernels]
    for i, k in enumerate(kernels):
        label = k.name if names.count(k.name) == 1 else f"{k.name}#{names[:i + 1].count(k.name)}"
        graph.task(exe, k.name, {p.name: values[p.name] for p in k.params}, label=label, blocks=args.block_num)
    args.executor = args.executor or "embedded"
    rec = run_on(graph, args, args.sim_profile or (exe.profile if exe.profile in MACHINES else "a3"))
    return 1 if report(rec, args.trace, args.timeline) else 0
