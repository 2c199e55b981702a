"""Tensor graph -> running kernels: ``compile_function`` and the ``CompiledFunction`` it returns.

All the Python-level work (tiling, partition, lowering, parsing, checking, the backend's
compile) happens once in ``compile_function``; a call only evaluates the run-time sizes,
allocates the workspace (intermediate tensors a kernel boundary puts in global memory) and
launches the tasks in dependency order (program order: each kernel's inputs are written by
earlier tasks). A task is up to ``merge`` invocations of one kernel in one launch.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from ..isa.diagnostics import FrontendError, PTOError
from . import graph as g
from .blame import blamed
from .graph import Dim
from .lower import KernelParam, Lowered, lower
from .options import Options
from .partition import Kernel, KernelLoop, Partition, partition
from .tiling import Buffer, TileGraph, tile_function


@dataclass
class Launch:
    """Run one kernel over all its invocations (as tasks of ``merge`` invocations each)."""

    kernel: Kernel
    code: str                       # the kernel name in the module (shared by isomorphic kernels)
    params: list[KernelParam]
    invocations: Dim


@dataclass
class LoopTasks:
    loop: g.Loop
    body: list["Step"]


Step = Union[Launch, LoopTasks]


@dataclass
class TaskList:
    """The task graph handed to the runtime: launches in dependency order, loops kept."""

    steps: list[Step]
    merge: int | None
    blocks: int

    def __str__(self) -> str:
        lines = [f"tasks (merge={self.merge}, block_num={self.blocks}), in program order: each after "
                 "the ones whose outputs it reads"]

        def rec(steps: list[Step], depth: int) -> None:
            pad = "  " * depth
            for s in steps:
                if isinstance(s, LoopTasks):
                    lp = s.loop
                    lines.append(f"{pad}for {lp.index} in range({lp.start}, {lp.stop}, {lp.step}):  # {lp.name}")
                    rec(s.body, depth + 1)
                    continue
                args = ", ".join(f"{p.name}={_arg_str(p)}" for p in s.params if p.kind not in ("first", "count"))
                inv = s.invocations
                tasks = ("1 task" if not self.merge else
                         f"{-(-inv // self.merge)} task(s) of up to {self.merge}" if isinstance(inv, int) else
                         f"ceil({inv} / {self.merge}) tasks of up to {self.merge}")
                lp = s.kernel.loop
                inner = (f" per {lp.index} in {lp.start}..{lp.stop} (loop {lp.name} inside the kernel)"
                         if lp is not None else "")
                lines.append(f"{pad}launch @{s.code}({args}): {inv} invocation(s){inner} in {tasks}"
                             + (f"  [kernel {s.kernel.name}, isomorphic]" if s.code != s.kernel.name else ""))
        rec(self.steps, 1)
        return "\n".join(lines)


def _arg_str(p: KernelParam) -> str:
    if p.kind == "buffer":
        b = p.buffer
        assert b is not None
        return f"{b.name}({b.kind})"
    if p.kind == "sym":
        return str(p.sym)
    return "first"


def _steps(part: Partition, low: Lowered) -> list[Step]:
    def rec(items: list) -> list[Step]:
        out: list[Step] = []
        for it in items:
            if isinstance(it, KernelLoop):
                out.append(LoopTasks(it.loop, rec(it.body)))
            else:
                code = low.code[it.index]     # an isomorphic kernel's code: its parameter names
                params = [KernelParam(cp.name, own.kind, own.buffer, own.sym)
                          for cp, own in zip(code.params, low.params[it.index])]
                out.append(Launch(it, code.name, params, it.invocations))
        return out
    return rec(part.items)


@dataclass
class _Prepared:
    """A launch with its argument getters resolved (what a warm call runs)."""

    code: str
    buffers: list[tuple[str, Buffer]]
    syms: list[tuple[str, str]]
    first: str
    count: str
    invocations: Dim


@dataclass
class _Resolved:
    """A launch with every size worked out for one set of run-time symbols: its buffers as
    (parameter, id of the buffer, id of its root, view shape, transposed), its symbol
    arguments and its tasks as (first, count)."""

    code: str
    buffers: list[tuple[str, int, int, tuple[int, int], bool]]
    syms: list[tuple[str, int]]
    first: str
    count: str
    tasks: list[tuple[int, int]]


def _resolve(step: _Prepared, env: dict[str, int], merge: int | None) -> _Resolved:
    bufs = [(pname, id(b), id(b.base), (_eval(b.cols, env), _eval(b.rows, env)) if b.transposed
             else (_eval(b.rows, env), _eval(b.cols, env)), b.transposed) for pname, b in step.buffers]
    syms = [(pname, env[sym]) for pname, sym in step.syms]
    total = _eval(step.invocations, env)
    per = merge or max(total, 1)
    tasks = [(first, min(per, total - first)) for first in range(0, total, per)]
    return _Resolved(step.code, bufs, syms, step.first, step.count, tasks)


#: sets of run-time symbols whose resolved plan a compiled function keeps (the oldest goes first)
_RESOLVED_KEPT = 16


class CompiledFunction:
    """A compiled ``@jit`` function: call it with arrays and run-time symbols."""

    def __init__(self, fn: g.Function, backend: str, profile: str, options: Options,
                 tile_graph: TileGraph, part: Partition, low: Lowered, module: Any, exe: Any) -> None:
        self.fn = fn
        self.backend = backend
        self.profile = profile
        self.options = options
        self.executable = exe
        self.module = module
        self.tasks = TaskList(_steps(part, low), options.merge, options.blocks)
        from .stages import Stages
        self.stages = Stages(fn, tile_graph, part, low, self.tasks, self)
        self._plan = self._prepare(self.tasks.steps)
        roots: dict[int, Buffer] = {}
        for b in tile_graph.buffers:
            roots.setdefault(id(b.base), b.base)
        self._workspace = [b for b in roots.values() if b.kind == "workspace"
                           and self._used(b, self.tasks.steps)]
        #: symbol values -> (workspace shapes, the plan with its top-level launches resolved):
        #: a warm call with sizes seen before evaluates no size expression
        self._resolved: dict[tuple, tuple[list[tuple[int, tuple[int, ...], Any]], list]] = {}

    def _used(self, b: Buffer, steps: list[Step]) -> bool:
        for s in steps:
            if isinstance(s, LoopTasks):
                if self._used(b, s.body):
                    return True
            elif any(p.buffer is not None and p.buffer.base is b for p in s.params):
                return True
        return False

    def _prepare(self, steps: list[Step]) -> list:
        out: list = []
        for s in steps:
            if isinstance(s, LoopTasks):
                out.append((s.loop, self._prepare(s.body)))
                continue
            bufs = [(p.name, p.buffer) for p in s.params if p.kind == "buffer"]
            syms = [(p.name, p.sym) for p in s.params if p.kind == "sym"]
            first = next(p.name for p in s.params if p.kind == "first")
            count = next(p.name for p in s.params if p.kind == "count")
            out.append(_Prepared(s.code, bufs, syms, first, count, s.invocations))  # type: ignore[arg-type]
        return out

    def __call__(self, arrays: dict[str, np.ndarray], symbols: dict[str, int] | None = None,
                 executor: Any = "sequential", policy: Any = "fifo") -> Any:
        """Run the function: ``arrays`` by parameter and result name (outputs written in place),
        ``symbols`` the values of the run-time dims and scalar parameters. ``executor``
        "sequential" launches in program order here (returns None); any other runs the call as
        a runtime task graph (frontend/tasks.py) and returns its ``RunRecord``."""
        env: dict[str, int] = dict(symbols or {})
        roots: dict[int, np.ndarray] = {}
        writeback: list[tuple[np.ndarray, np.ndarray]] = []
        for p in self.fn.params:
            if p.tensor is not None:
                roots[id(self.stages.buffer_of(p.tensor))] = self._array(p.name, arrays, writeback)
        for r in self.fn.results:
            b = self.stages.buffer_of(r)
            if id(b) not in roots:
                roots[id(b)] = self._array(r.name, arrays, writeback)
        spaces, plan = self._resolved_plan(env)
        for key, shape, dtype in spaces:
            roots[key] = np.empty(shape, dtype=dtype)
        record = None
        if executor == "sequential":
            self._run(plan, env, roots, {})
        else:
            from .tasks import run_graph
            record = run_graph(self, env, roots, executor, policy)
        for orig, staged in writeback:
            orig[...] = staged
        return record

    def _resolved_plan(self, env: dict[str, int]) -> tuple[list[tuple[int, tuple[int, ...], Any]], list]:
        """The workspace shapes and the plan, its top-level launches resolved for ``env`` (kept
        per set of symbol values; a loop's body is resolved per iteration, as its index changes)."""
        key: tuple | None = tuple(sorted(env.items()))
        try:
            hit = self._resolved.get(key)  # type: ignore[arg-type]
        except TypeError:                  # an unhashable symbol value: resolved for this call only
            key, hit = None, None
        if hit is None:
            spaces = [(id(b), tuple(_eval(d, env) for d in b.tensor.shape), b.dtype.np_dtype)
                      for b in self._workspace]
            merge = self.options.merge
            plan = [_resolve(s, env, merge) if isinstance(s, _Prepared) else s for s in self._plan]
            hit = (spaces, plan)
            if key is not None:
                if len(self._resolved) >= _RESOLVED_KEPT:
                    self._resolved.pop(next(iter(self._resolved), None), None)
                self._resolved[key] = hit
        return hit

    def _array(self, name: str, arrays: dict[str, np.ndarray], writeback: list) -> np.ndarray:
        if name not in arrays:
            raise FrontendError("FRONT_RUN_ARGUMENT", f"no array for {name!r}",
                                expected="an array for every tensor parameter and result",
                                actual=", ".join(sorted(arrays)) or "none")
        a = arrays[name]
        if not isinstance(a, np.ndarray):
            a = np.asarray(a)
        if not a.flags.c_contiguous:
            c = np.ascontiguousarray(a)
            writeback.append((a, c))
            return c
        return a

    def _run(self, plan: list, env: dict[str, int], roots: dict[int, np.ndarray],
             views: dict[int, np.ndarray]) -> None:
        merge = self.options.merge
        for step in plan:
            if isinstance(step, tuple):
                loop, body = step
                start, stop, stride = (_eval(d, env) for d in (loop.start, loop.stop, loop.step))
                if stride <= 0:
                    raise FrontendError("FRONT_LOOP_STEP", f"loop {loop.name} has a step <= 0",
                                        location=loop.loc.location() if loop.loc else None,
                                        expected="a positive step", actual=stride)
                for i in range(start, stop, stride):
                    env[loop.index.name or "?"] = i
                    self._run(body, env, roots, views)
                continue
            self._launch(step if isinstance(step, _Resolved) else _resolve(step, env, merge), roots, views)

    def _launch(self, step: _Resolved, roots: dict[int, np.ndarray], views: dict[int, np.ndarray]) -> None:
        """Run one launch's tasks; a buffer's view is made once per call (``views``)."""
        kwargs: dict[str, Any] = {}
        for pname, key, root, shape, transposed in step.buffers:
            v = views.get(key)
            if v is None:
                v = roots[root].reshape(shape)
                v = views[key] = v.T if transposed else v
            kwargs[pname] = v
        kwargs.update(step.syms)
        run, blocks = self.executable.run, self.options.blocks
        for first, count in step.tasks:
            kwargs[step.first] = first
            kwargs[step.count] = count
            try:
                run(step.code, block_num=blocks, **kwargs)
            except FrontendError:
                raise
            except PTOError as e:
                raise blamed(e, self.stages.lowered, run=True, fn=self.fn) from None


def _eval(d: Dim, env: dict[str, int]) -> int:
    if isinstance(d, int):
        return d
    try:
        return d.evaluate(env)
    except KeyError as e:
        raise FrontendError("FRONT_RUN_ARGUMENT", f"no value for the run-time size {e.args[0]!r}",
                            expected="a value for every dynamic dim and scalar parameter",
                            actual=", ".join(sorted(env)) or "none") from None


#: compiled modules by (text, backend, profile): a function compiled again (another static
#: signature that lowers to the same kernels, a second decorator) reuses the executable
_EXECUTABLES: "OrderedDict[tuple[str, str, str], tuple[Any, Any]]" = OrderedDict()
_CACHE_SIZE = 64


def _compile_module(text: str, name: str, backend: str, profile: str) -> tuple[Any, Any]:
    import openpto as pto
    key = (text, backend, profile)
    hit = _EXECUTABLES.get(key)
    if hit is not None:
        _EXECUTABLES.move_to_end(key)
        return hit
    module = pto.parse(text, filename=f"<frontend {name}>")
    exe = pto.compile(module, backend=backend, profile=profile)
    _EXECUTABLES[key] = (module, exe)
    if len(_EXECUTABLES) > _CACHE_SIZE:
        _EXECUTABLES.popitem(last=False)
    return module, exe


def lower_function(fn: g.Function, profile: str, opts: Options) -> tuple[TileGraph, Partition, Lowered]:
    """Tile, partition and lower ``fn`` for ``profile``: the kernels a compile checks (shared
    with the portability report, frontend/port.py, so both judge the same text)."""
    tg = tile_function(fn, profile, opts)
    part = partition(tg, opts)
    return tg, part, lower(part)


def compile_function(fn: g.Function, *, backend: str = "reference", profile: str = "cpu",
                     options: dict | Options | None = None) -> CompiledFunction:
    """Tile, partition, lower, check and compile ``fn`` for ``backend`` on ``profile``
    (``pto.compile`` verifies the module for the profile first)."""
    opts = options if isinstance(options, Options) else Options.from_dict(options)
    tg, part, low = lower_function(fn, profile, opts)
    try:
        module, exe = _compile_module(low.text, fn.name, backend, profile)
    except PTOError as e:
        raise blamed(e, low, run=False, fn=fn) from None
    return CompiledFunction(fn, backend, profile, opts, tg, part, low, module, exe)
