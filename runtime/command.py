"""``pto graph FILE`` (its arguments are declared in cli.py): run a task-graph file (``graphfile.py``) on an executor, print the
summary and the verifier's verdict, write the trace, swimlane and chosen buffers."""
from __future__ import annotations

import argparse
import contextlib
from typing import Any, Iterator

import numpy as np

from ..isa.diagnostics import PTOError
from .executor import run
from .graphfile import load_graph
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
    with contextlib.ExitStack() as stack:
        options: dict[str, Any] = {}
        if args.executor == "embedded":
            options["workers"] = args.workers
        elif args.executor == "simulated":
            options["profile"] = args.sim_profile
        else:
            options["client"] = stack.enter_context(_dask_client(args.scheduler, args.workers))
        rec = run(gf.graph, args.executor, args.policy, **options)
    print(format_summary(rec))
    found = problems(rec)
    print(f"verified: every two tasks touching a common byte (one writing it) are ordered by the graph"
          if not found else f"{len(found)} ordering problem(s):")
    for p in found:
        print(p.render())
    if args.trace:
        write_chrome(args.trace, rec)
    if args.timeline:
        write_swimlane_png(args.timeline, rec)
    for name, path in outs:
        try:
            np.save(path, gf.buffers[name])
        except OSError as e:
            raise PTOError("PTO_FILE", f"cannot write {path}: {e.strerror or e}") from None
    return 1 if found else 0
