"""A call of a compiled function as an MPMD task graph (``runtime.TaskGraph``), run on an executor.

``@jit(executor="sequential")`` (the default) launches the kernels in program order from the
pipeline (frontend/pipeline.py): the least Python per call. Any other executor (``embedded``,
``simulated``, ``dask`` on the default ``distributed`` client, or a ``runtime.Executor``
instance) gets, per call, a task graph with one kernel task per launch of ``merge``
invocations (per iteration of a loop the frontend keeps on the host), bound to numpy views of
the call's arrays, labelled with the frontend's kernel names (semantic labels included) and
typed cube or vector as the partition placed it.

Each task's bindings are narrowed (``regions=``) to the rows, and where a kernel tiles both ways
the columns, that its invocations reach, worked out from the kernel's mode, tile shape and the
places (windows) of its operands; anything not modelled keeps the whole binding, which is
always safe. So tasks of one kernel on different tiles are independent and a consumer waits
only for the producers of the rows it reads.
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from ..isa.diagnostics import FrontendError
from . import graph as g
from .partition import Kernel
from .tiling import Buffer, Place

if TYPE_CHECKING:
    from ..runtime import RunRecord, TaskGraph
    from .pipeline import CompiledFunction, Step

#: the executors ``@jit(executor=...)`` takes by name: the pipeline's own loop, or the runtime's
SEQUENTIAL = "sequential"

#: a task's reach in one buffer's matrix: [r0, r1) x [c0, c1), or None for all of it
Box = Union[tuple[int, int, int, int], None]


def executor_names() -> tuple[str, ...]:
    from ..runtime.executor import EXECUTORS
    return (SEQUENTIAL, *EXECUTORS)


def check_run_options(executor: Any, policy: Any, profile: str | None = None) -> None:
    """``FRONT_OPTION`` for an executor or policy the runtime does not have, or the simulated
    executor on a profile with no machine model (at decoration, not at the first call)."""
    from ..isa.machines import MACHINES
    from ..runtime import Executor
    from ..runtime.scheduler import POLICIES, Policy
    if executor == "simulated" and profile is not None and profile not in MACHINES:
        raise FrontendError("FRONT_OPTION", f"the simulated executor times kernels on a machine profile; "
                            f"these are compiled for {profile!r}, which has none",
                            expected="profile=" + " | ".join(MACHINES), actual=profile,
                            notes=["a kernel compiled for one profile may be illegal on another "
                                   "(cpu's tiles are not a3's), so the simulator is not given it"])
    if not (isinstance(executor, Executor) or executor in executor_names()):
        raise FrontendError("FRONT_OPTION", f"unknown executor {executor!r}",
                            expected=" | ".join(executor_names()) + " or a runtime.Executor", actual=repr(executor))
    if not (isinstance(policy, Policy) or policy in POLICIES):
        raise FrontendError("FRONT_OPTION", f"unknown scheduling policy {policy!r}",
                            expected=" | ".join(POLICIES) + " or a runtime.Policy", actual=repr(policy))


# --------------------------------------------------------------------------------------------
# what one task reaches

def _kernel_box(k: Kernel, first: int, count: int, env: dict[str, int]) -> tuple[int, int, int, int, bool] | None:
    """The rows and columns of the kernel's iteration space that invocations
    ``first .. first+count`` cover, and whether the columns are narrowed; None: not modelled."""
    from .pipeline import _eval
    if k.loop is not None:
        return None                       # the loop index runs inside the kernel: every window
    if k.mode in ("rows", "colloop"):
        tr = k.tile[0]
        return first * tr, (first + count) * tr, 0, _eval(k.cols, env), False
    if k.mode in ("grid", "matmul"):
        if k.mode == "matmul":
            mm = k.nodes[0]
            tr, tc, cols = mm.tile[0], mm.extra["tn"], _eval(mm.cols, env)
        else:
            (tr, tc), cols = k.tile, _eval(k.cols, env)
        nc = _eval(k.grid[1], env)
        last = first + count - 1
        b0, b1 = first // nc, last // nc
        if b0 == b1:
            return b0 * tr, (b1 + 1) * tr, (first % nc) * tc, (last % nc + 1) * tc, True
        return b0 * tr, (b1 + 1) * tr, 0, cols, False
    return None                           # colreduce, transpose: whole bindings


def _place_box(p: Place, box: tuple[int, int, int, int, bool], columns: bool, env: dict[str, int]) -> Box:
    """``box`` (kernel coordinates) moved to the place's window of its buffer; only rows when
    ``columns`` is False (a per-row vector, a broadcast)."""
    from .pipeline import _eval
    r0, r1, c0, c1, narrow = box
    try:
        row0 = _eval(p.row0, env)
        col0 = _eval(p.col0, env)
    except FrontendError:
        return None
    if columns and narrow:
        return row0 + r0, row0 + r1, col0 + c0, col0 + c1
    return row0 + r0, row0 + r1, 0, -1    # -1: every column


#: per kernel: (first, count, run-time values) -> its footprints (warm calls repeat them)
_REACH: "weakref.WeakKeyDictionary[Kernel, dict[tuple, dict[int, Box]]]" = weakref.WeakKeyDictionary()
_REACH_SIZE = 4096


def footprints(k: Kernel, places: dict[g.TensorValue, Place], first: int, count: int,
               env: dict[str, int]) -> dict[int, Box]:
    """Buffer identity -> the box of its matrix the invocations reach (None: all of it)."""
    memo = _REACH.setdefault(k, {})
    key = (first, count, tuple(sorted(env.items())))
    hit = memo.get(key)
    if hit is None:
        if len(memo) >= _REACH_SIZE:
            memo.clear()
        hit = memo[key] = _footprints(k, places, first, count, env)
    return hit


def _footprints(k: Kernel, places: dict[g.TensorValue, Place], first: int, count: int,
                env: dict[str, int]) -> dict[int, Box]:
    box = _kernel_box(k, first, count, env)
    out: dict[int, Box] = {}

    def add(p: Place | None, columns: bool) -> None:
        if p is None:
            return
        b = None if box is None else _place_box(p, box, columns, env)
        key = id(p.buffer)
        if key in out and (out[key] is None or b is None):
            out[key] = None
        elif key in out:
            a = out[key]
            out[key] = (min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]),  # type: ignore[index]
                        -1 if -1 in (a[3], b[3]) else max(a[3], b[3]))      # type: ignore[index]
        else:
            out[key] = b

    for n in k.nodes:
        if n.kind == "matmul":
            pa, pb = places.get(n.inputs[0].value), places.get(n.inputs[1].value)  # type: ignore[arg-type]
            if pb is not None:
                out[id(pb.buffer)] = None                           # every K row of its columns
            if pa is not None and n.extra.get("a_trans"):
                out[id(pa.buffer)] = None
            else:
                add(pa, False)                                      # its rows, every K column
            add(n.extra.get("target") or places.get(n.out), True)
            continue
        if box is None:
            for acc in n.inputs:
                if isinstance(acc.value, g.TensorValue) and acc.value in places:
                    out[id(places[acc.value].buffer)] = None
            p = n.extra.get("target") or places.get(n.out)
            if p is not None:
                out[id(p.buffer)] = None
            continue
        for acc in n.inputs:
            t = acc.value
            if not isinstance(t, g.TensorValue) or t not in places:
                continue
            p = places[t]
            if acc.mode == "col":
                out[id(p.buffer)] = None
            else:
                same = acc.mode == "tile" and not n.is_rowvec and _same_shape(p, n)
                add(p, same)
        add(n.extra.get("target") or places.get(n.out), not n.is_rowvec)
    return out


def _same_shape(p: Place, n: Any) -> bool:
    """Whether an operand's window has the node's own rows and columns (no broadcast)."""
    from .tiling import dims_equal
    return dims_equal(p.rows, n.rows) and dims_equal(p.cols, n.cols)


def _region(view: np.ndarray, box: Box) -> tuple[slice, slice] | None:
    if box is None or view.ndim != 2:
        return None
    r0, r1, c0, c1 = box
    rows, cols = view.shape
    c1 = cols if c1 < 0 else c1
    r0, r1, c0, c1 = max(r0, 0), min(r1, rows), max(c0, 0), min(c1, cols)
    if (r0, r1, c0, c1) == (0, rows, 0, cols) or r0 >= r1 or c0 >= c1:
        return None                        # all of it, or a box the model got wrong: keep it whole
    return slice(r0, r1), slice(c0, c1)


# --------------------------------------------------------------------------------------------
# the graph of one call

def _binding(b: Buffer, env: dict[str, int], roots: dict[int, np.ndarray], views: dict[int, np.ndarray]) -> np.ndarray:
    """The buffer's matrix as a view of the call's array (what the sequential path passes)."""
    from .pipeline import _eval
    v = views.get(id(b))
    if v is None:
        root = roots[id(b.base)]
        if b.transposed:
            v = root.reshape(_eval(b.cols, env), _eval(b.rows, env)).T
        else:
            v = root.reshape(_eval(b.rows, env), _eval(b.cols, env))
        views[id(b)] = v
    return v


def build_graph(cf: "CompiledFunction", env: dict[str, int], roots: dict[int, np.ndarray]) -> "TaskGraph":
    """The call's task graph: a kernel task per launch of up to ``merge`` invocations, per
    iteration of every loop kept on the host, in program order."""
    from ..runtime import TaskGraph
    graph = TaskGraph()
    _add_steps(cf, graph, cf.tasks.steps, env, roots, {}, [])
    return graph


def _add_steps(cf: "CompiledFunction", graph: "TaskGraph", steps: list["Step"], env: dict[str, int],
               roots: dict[int, np.ndarray], views: dict[int, np.ndarray], where: list[str]) -> None:
    from .pipeline import LoopTasks, _eval
    places = cf.stages.tile_graph.places
    merge, blocks = cf.options.merge, cf.options.blocks
    for s in steps:
        if isinstance(s, LoopTasks):
            lp = s.loop
            start, stop, stride = (_eval(d, env) for d in (lp.start, lp.stop, lp.step))
            if stride <= 0:
                raise FrontendError("FRONT_LOOP_STEP", f"loop {lp.name} has a step <= 0",
                                    location=lp.loc.location() if lp.loc else None,
                                    expected="a positive step", actual=stride)
            name = lp.index.name or "?"
            for i in range(start, stop, stride):
                env[name] = i
                _add_steps(cf, graph, s.body, env, roots, views, where + [f"{name}={i}"])
            continue
        k = s.kernel
        buffers = [(p.name, p.buffer) for p in s.params if p.kind == "buffer"]
        args: dict[str, Any] = {p.name: _binding(p.buffer, env, roots, views)  # type: ignore[arg-type]
                                for p in s.params if p.kind == "buffer"}
        for p in s.params:
            if p.kind == "sym":
                args[p.name] = env[p.sym]  # type: ignore[index]
        first_name = next(p.name for p in s.params if p.kind == "first")
        count_name = next(p.name for p in s.params if p.kind == "count")
        total = _eval(s.invocations, env)
        per = merge or max(total, 1)
        for first in range(0, total, per):
            count = min(per, total - first)
            reach = footprints(k, places, first, count, env)
            regions = {}
            for pname, b in buffers:
                r = _region(args[pname], reach.get(id(b)))
                if r is not None:
                    regions[pname] = r
            label = k.name + (f"[{first}:{first + count}]" if count < total else "")
            if where:
                label += " " + " ".join(where)
            graph.task(cf.executable, s.code, {**args, first_name: first, count_name: count}, label=label,
                       core=k.unit, regions=regions, blocks=blocks)


def run_graph(cf: "CompiledFunction", env: dict[str, int], roots: dict[int, np.ndarray], executor: Any,
              policy: Any) -> "RunRecord":
    """Build the call's task graph and run it: an executor by name (``simulated`` on the
    compiled profile) or an ``Executor`` instance."""
    graph = build_graph(cf, env, roots)
    return _executor(executor, cf.profile).run(graph, policy)


_BY_NAME: dict[tuple[str, str], Any] = {}


def _executor(executor: Any, profile: str) -> Any:
    """An executor instance as given, or one by name (built once: they keep no state between runs)."""
    from ..runtime import Executor, get_executor
    if isinstance(executor, Executor):
        return executor
    if executor == "dask":
        return get_executor("dask", client=_dask_client())
    key = (executor, profile)
    exe = _BY_NAME.get(key)
    if exe is None:
        options = {"profile": profile} if executor == "simulated" else {}
        exe = _BY_NAME[key] = get_executor(executor, **options)
    return exe


def _dask_client() -> Any:
    """The process's default ``distributed.Client`` (the last one created), as dask itself uses."""
    from ..isa.diagnostics import PTOError
    try:
        import distributed
    except ImportError:
        raise PTOError("PTO_EXECUTOR", "the dask executor needs dask.distributed, the optional extra",
                       expected="pip install 'openpto[dask]'", actual="distributed is not installed") from None
    try:
        return distributed.default_client()
    except ValueError:
        raise PTOError("PTO_EXECUTOR", "executor='dask' runs on the default dask client, and there is none",
                       expected="distributed.Client(...) created first, or executor=DaskExecutor(client=...)",
                       actual="no client") from None
