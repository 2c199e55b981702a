"""The llvm backend: every kernel compiled by llvmlite into one native, vectorised function.

``compile`` generates LLVM IR per kernel (``codegen``: tiles as aligned buffers, loops with
static trip counts over valid regions, fused elementwise chains), optimises it for the host
CPU and links it in memory; the object code is cached on disk (``cache``) so a second
process skips LLVM entirely. Runs call the native code through cffi, which releases the
GIL, so ``block_num`` blocks can run on ``threads`` cores at once. Faults found by checks in
the generated code (out-of-bounds indices, reads outside valid regions ...) come back as the
same ``RuntimeFault`` codes the reference backend raises.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import struct
import threading
import time
from typing import Any, Mapping, NamedTuple

import numpy as np

from ...assembler.ir import Module
from ...isa.diagnostics import Location, PTOError, RuntimeFault
from ...isa.types import GlobalType, ScalarType, TileType
from ...isa.world import SOLO, World
from ..arguments import Binder, written_params
from ..base import Backend, Executable, Result, flag_option, thread_count_option
from ..blocks import MAX_BLOCK_NUM, run_blocks, run_world_blocks
from ..comm_embedded import Agent, Embedded, check_instances, check_ranks, split_ranks
from .cache import DiskCache, key as cache_key
from .codegen import COMM_SLOTS, ERR_RAISED, ERR_SLOTS, FaultSite, KernelABI, abi_for, format_details
from .commhook import RunHooks, Sites, install_hooks as install_comm_hooks, uses_ranks

_OPTIONS = ("threads", "cache", "cache_dir", "checked")


def _available() -> tuple[bool, str]:
    try:
        import cffi  # noqa: F401  (pyflakes: imported to test availability)
        import llvmlite.binding  # noqa: F401
    except ImportError as e:      # pragma: no cover - both are dependencies
        return False, f"{e.name} is not installed"
    return True, ""


def _rules() -> Mapping[str, Any]:
    from .rules import RULES
    return RULES


class _LazyRules(Mapping):
    """The rule table, imported on first use (so listing backends does not import llvmlite)."""

    def __getitem__(self, k: str) -> Any:
        return _rules()[k]

    def __iter__(self):  # noqa: ANN204
        return iter(_rules())

    def __len__(self) -> int:
        return len(_rules())


def _site_to_json(s: FaultSite) -> dict[str, Any]:
    loc = s.location
    return {"code": s.code, "message": s.message, "expected": s.expected, "actual": s.actual,
            "loc": [loc.file, loc.line, loc.col, loc.kernel, loc.index, loc.source_line]}


def _site_from_json(d: dict[str, Any], statements: list[Any]) -> FaultSite:
    """A cached fault site, its location taken from this module's statement (cached code is
    shared by modules that differ only in source positions)."""
    file, line, col, kernel, index, source = d["loc"]
    loc = getattr(statements[index], "loc", None) if index is not None and index < len(statements) else None
    if loc is not None:
        file, line, col, source = loc.file, loc.line, loc.col, loc.source_line
    elif index is not None:
        line = col = source = None
    return FaultSite(d["code"], d["message"], Location(file, line, col, kernel, index, source),
                     d["expected"], d["actual"])


def generate(module: Module, filename: str | None = None,
             checked: bool = False) -> tuple[str, dict[str, KernelABI], dict[str, list[FaultSite]]]:
    """LLVM IR text for every kernel of ``module`` plus each kernel's ABI and fault sites;
    ``checked``: with run-time tile initialisation checks (``checked.py``)."""
    from llvmlite import ir

    from .codegen import KernelCodegen
    if checked:
        from .checked import CheckedCodegen as KernelCodegen  # type: ignore[assignment]
    mod = ir.Module(name="openpto")
    abis: dict[str, KernelABI] = {}
    faults: dict[str, list[FaultSite]] = {}
    rules = _rules()
    for n, k in enumerate(module.kernels):
        abi = abi_for(k, f"pto_kernel_{n}")
        cg = KernelCodegen(mod, k, abi, rules, filename)
        abis[k.name], faults[k.name] = cg.generate(), cg.faults
    return str(mod), abis, faults


_F64, _F64_BITS = struct.Struct("<d"), struct.Struct("<q")   # a float scalar's slot: its f64 bits


def _i64(n: int) -> int:
    """An address or integer scalar as the C ABI's i64 slot holds it (two's complement)."""
    return n - (1 << 64) if n >= 1 << 63 else n


def _slot_kind(t: Any) -> str:
    """How a parameter fills its slots: a global's address, shape and element strides; a tile's
    address; a float scalar's f64 bits or an integer; an event: nothing."""
    if isinstance(t, GlobalType):
        return "global"
    if isinstance(t, TileType):
        return "tile"
    if isinstance(t, ScalarType):
        return "float" if t.is_float else "int"
    return "none"


class _Kernel:
    """What a launch of one kernel needs, worked out once: its argument checks, where each
    parameter goes in the slots, which values are its outputs and which may need staging."""

    def __init__(self, kernel: Any, abi: KernelABI, faults: list[FaultSite], fn: Any) -> None:
        self.kernel, self.abi, self.faults, self.fn = kernel, abi, faults, fn
        self.writes = frozenset(written_params(kernel))
        self.binder = Binder(kernel, self.writes)
        self.outputs = sorted(self.writes)
        names = [p.name for p in kernel.params]
        #: (name, position in the bound values) of every output, by name as Result lists them
        self.out_index = [(n, names.index(n)) for n in self.outputs]
        #: (position, written) of every tile parameter: what ``_stage`` looks at
        self.tile_index = [(i, p.name in self.writes) for i, p in enumerate(kernel.params)
                           if isinstance(p.type, TileType)]
        #: per parameter (first slot, kind), in parameter order: what ``_slots`` writes where
        self.plan = [(abi.slots[p.name], _slot_kind(p.type)) for p in kernel.params]
        self.counter_names = tuple(abi.counters)
        #: a kernel written for ranks calls back into its world (commhook.py)
        self.sites = Sites(kernel) if uses_ranks(kernel) else None


class _Workspace(NamedTuple):
    """A block's scratch memory: the array, its 64-byte aligned start as the kernel's pointer
    argument, the counters at that start (a view), and the block's error record (a cffi array
    kept zeroed between launches: the kernel writes it only when it fails, and a failure read
    back is cleared)."""

    array: np.ndarray
    pointer: Any
    counts: np.ndarray
    err: Any
    errors: np.ndarray         # ``err`` as a numpy view


_NO_ERROR = np.zeros(ERR_SLOTS, dtype=np.int64)
_NO_ERROR.flags.writeable = False


class _Block(NamedTuple):
    rc: int
    err: np.ndarray
    start: int
    end: int
    counts: np.ndarray


class LLVMExecutable(Executable):
    def __init__(self, module: Module, profile: str, obj: bytes, abis: Mapping[str, KernelABI],
                 faults: Mapping[str, list[FaultSite]], threads: int, compiled: bool) -> None:
        from cffi import FFI

        from .target import Loaded
        super().__init__(module, profile)
        self.threads = threads
        self.compiled = compiled              # False: loaded from the disk cache
        self._loaded = Loaded(obj)
        from .rules.complex import install_hooks
        install_hooks(self._loaded)            # TPRINT's callback into Python
        install_comm_hooks(self._loaded)       # the comm family's callback into the run's World
        self._ffi = ffi = FFI()
        ffi.cdef("typedef int32_t (*pto_kernel)(int64_t*, void*, int64_t, int64_t, int64_t*);")
        self._uintptr = ffi.typeof("uintptr_t")     # parsed once: _address runs per array per launch
        self._kernels: dict[str, _Kernel] = {}
        self._spaces = threading.local()        # per thread: kernel symbol -> its workspace
        for k in module.kernels:
            abi = abis[k.name]
            fn = ffi.cast("pto_kernel", self._loaded.address(abi.symbol))
            self._kernels[k.name] = _Kernel(k, abi, list(faults[k.name]), fn)

    def _address(self, a: np.ndarray) -> int:
        """An array's address as its i64 slot holds it. cffi's view of a C-contiguous array's
        buffer gives it about 3x quicker than numpy's ``ctypes.data``, which other layouts use."""
        if a.flags.c_contiguous:
            try:
                return _i64(int(self._ffi.cast(self._uintptr, self._ffi.from_buffer(a))))
            except (TypeError, ValueError, BufferError):     # pragma: no cover - numpy exports them all
                pass
        return _i64(a.ctypes.data)

    def _slots(self, kr: _Kernel, values: list[Any], rank: int = 0, rank_num: int = 1,
               hooks: RunHooks | None = None, races: bool = False) -> Any:
        """The kernel's ``args``: a cffi int64 array, filled as Python ints and made in one call
        (the kernel's pointer argument as it is)."""
        slots = [0] * kr.abi.nslots
        address = self._address
        for (s, kind), v in zip(kr.plan, values):
            if kind == "global":
                a: np.ndarray = v
                n, size = a.ndim, a.itemsize
                slots[s] = address(a)            # bind checked whole-element strides and an i64 span
                slots[s + 1:s + 1 + n] = a.shape
                slots[s + 1 + n:s + 1 + 2 * n] = [st // size for st in a.strides]
            elif kind == "tile":
                slots[s] = address(v)
            elif kind == "float":
                slots[s] = _F64_BITS.unpack(_F64.pack(v))[0]
            elif kind == "int":
                slots[s] = _i64(int(v))
        c = kr.abi.comm
        slots[c:c + COMM_SLOTS] = [rank, rank_num, hooks.handle if hooks is not None else 0, int(races)]
        return self._ffi.new("int64_t[]", slots)

    @staticmethod
    def _stage(kr: _Kernel, values: list[Any]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Tile parameters must be C-contiguous: others are replaced by a contiguous copy in
        ``values``; the (caller's, copy) pairs the kernel may write are returned for copying back."""
        staged: list[tuple[np.ndarray, np.ndarray]] = []
        for i, written in kr.tile_index:
            v = values[i]
            if not v.flags.c_contiguous:
                c = np.ascontiguousarray(v)
                if written:     # only what the kernel may write is copied back
                    staged.append((v, c))
                values[i] = c
        return staged

    def _call(self, kr: _Kernel, args_p: Any, ws: "_Workspace", b: int, block_num: int) -> _Block:
        """One block on the calling thread, in workspace ``ws`` (GIL released while it runs)."""
        start = time.perf_counter_ns()
        rc = kr.fn(args_p, ws.pointer, b, block_num, ws.err)
        end = time.perf_counter_ns()
        return _Block(rc, self._errors(ws) if rc else _NO_ERROR, start, end, ws.counts.copy())

    @staticmethod
    def _errors(ws: "_Workspace") -> np.ndarray:
        """A failed block's error record, copied; the workspace's is zeroed for its next launch."""
        errors = ws.errors.copy()
        ws.errors[:] = 0
        return errors

    def _thread_workspace(self, kr: _Kernel) -> "_Workspace":
        """The calling thread's workspace for ``kr``, kept between launches (a thread runs one
        block at a time; the kernel sets every counter it reads before its first use)."""
        spaces = getattr(self._spaces, "by_kernel", None)
        if spaces is None:
            spaces = self._spaces.by_kernel = {}
        ws = spaces.get(kr.abi.symbol)
        if ws is None:
            ws = spaces[kr.abi.symbol] = self._workspace(kr)
        return ws

    def _workspace(self, kr: _Kernel) -> "_Workspace":
        a = np.empty(kr.abi.workspace + 64, dtype=np.uint8)
        base = a.ctypes.data
        offset = -base % 64
        err = self._ffi.new("int64_t[]", ERR_SLOTS)        # zeroed
        return _Workspace(a, self._ffi.cast("void*", base + offset),
                          np.frombuffer(a, np.int64, len(kr.abi.counters), offset),
                          err, np.frombuffer(self._ffi.buffer(err), np.int64))

    def run(self, kernel: str, *args: Any, block_num: int = 1, trace: bool = False, ranks: int | None = None,
            world: World | None = None, **kwargs: Any) -> Result:
        """``ranks=N``: the embedded execution of N ranks (docs/comm.md), every array argument a
        list of one array per rank; ``world=``: this process is ``world.rank`` of ``world.size``
        (an execution of ranks across processes), its blocks run in block order in that world."""
        if not (type(kernel) is str and kernel in self._kernels and type(block_num) is int
                and 1 <= block_num <= MAX_BLOCK_NUM):
            block_num = self._check_launch(kernel, block_num)    # PTO_KERNEL, PTO_BLOCK_NUM
        if ranks is not None and world is not None:
            raise PTOError("PTO_RANKS", "ranks= (the embedded execution of every rank) and world= (one rank of "
                           "a launch run elsewhere) exclude each other", expected="one of them",
                           actual=f"ranks={ranks!r} and a world")
        if world is not None and not isinstance(world, World):
            raise PTOError("PTO_API_TYPE", "world= takes an isa.world.World", expected="a World",
                           actual=type(world).__name__)
        if ranks is not None:
            return self._run_ranks(kernel, args, kwargs, block_num, trace, check_ranks(ranks))
        kr = self._kernels[kernel]
        values = kr.binder.values(args, kwargs)
        staged = self._stage(kr, values) if kr.tile_index else []
        if world is None and kr.sites is None and block_num == 1:
            return self._run_one(kr, self._slots(kr, values), values, staged, trace)
        w = SOLO if world is None else world
        hooks = RunHooks(kr.sites, lambda b: w) if kr.sites is not None else None
        # a caller's world that checks ordinary accesses (overrides World.access) is told of them
        races = world is not None and type(world).access is not World.access
        args_p = self._slots(kr, values, w.rank, w.size, hooks, races)
        t0 = time.perf_counter_ns()

        def block(b: int) -> _Block:
            return self._call(kr, args_p, self._thread_workspace(kr), b, block_num)

        def world_block(b: int) -> _Block:
            r = block(b)
            if r.rc:
                raise self._fault(kr, r.err, hooks, b)
            return r

        total = np.zeros(len(kr.abi.counters), np.int64)
        events: list[dict[str, Any]] | None = [] if trace else None
        failure: BaseException | None = None

        def finished(b: int, r: _Block) -> None:
            nonlocal total
            total += r.counts
            if events is not None:
                events.append({"name": f"@{kernel}", "pipe": "V", "block": b, "ts_ns": r.start - t0,
                               "dur_ns": r.end - r.start, "line": None})

        done: list[_Block] = []
        with hooks if hooks is not None else contextlib.nullcontext():
            if world is None:
                # lazily, in block order, at most 2 * threads in flight; the lowest failing block's
                # fault; closing(): every block still in flight has finished before the copy-back.
                # Each block is counted as it comes back (memory stays bounded by the threads)
                with contextlib.closing(run_blocks(block, block_num, min(block_num, self.threads),
                                                   failed=lambda r: bool(r.rc))) as results:
                    for b, r in enumerate(results):
                        if r.rc:
                            failure = self._fault(kr, r.err, hooks, b)
                            break
                        finished(b, r)
            else:
                # as the reference: blocks as threads when the world allows, else in order; a
                # failing block aborts the world so no other rank waits for it for ever
                try:
                    done = run_world_blocks(world_block, block_num, world)
                except BaseException as e:     # noqa: BLE001 - raised after the copy-back below
                    failure, done = e, []
        for b, r in enumerate(done):
            finished(b, r)
        for (v, c) in staged:
            v[...] = c
        if failure is not None:
            raise failure
        return Result({n: values[i] for n, i in kr.out_index}, self._counters(kr, total.tolist()), events)

    def _run_one(self, kr: _Kernel, args_p: Any, values: list[Any], staged: list[tuple[np.ndarray, np.ndarray]],
                 trace: bool) -> Result:
        """A one-block launch of a kernel that makes no comm callbacks, on the calling thread
        without the block machinery (no generator, closures or per-block record): what
        ``run_blocks`` gives for one block, the same fault, copy-back, counters and trace."""
        ws = self._thread_workspace(kr)
        t0 = start = end = 0
        if trace:
            t0 = start = time.perf_counter_ns()
        rc = kr.fn(args_p, ws.pointer, 0, 1, ws.err)
        if trace:
            end = time.perf_counter_ns()
        failure = self._fault(kr, self._errors(ws)) if rc else None
        counts = ws.counts.tolist()          # read now: the thread's next launch reuses them
        for (v, c) in staged:
            v[...] = c
        if failure is not None:
            raise failure
        events = [{"name": f"@{kr.kernel.name}", "pipe": "V", "block": 0, "ts_ns": start - t0,
                   "dur_ns": end - start, "line": None}] if trace else None
        return Result({n: values[i] for n, i in kr.out_index}, self._counters(kr, counts), events)

    def _run_ranks(self, kernel: str, args: tuple, kwargs: dict[str, Any], block_num: int, trace: bool,
                   ranks: int) -> Result:
        """The embedded execution (backends/comm_embedded.py): every (rank, block) an agent on a
        thread of its own, one holding the baton at a time; the native block calls back into its
        agent for comm instructions and, in a kernel written for ranks, for the race check."""
        kr = self._kernels[kernel]
        k = kr.kernel
        bound = [kr.binder.values(a, kw) for a, kw in split_ranks(k, args, kwargs, ranks)]
        shared = Embedded(ranks, block_num, check_instances(k, [dict(zip(kr.binder.names, v)) for v in bound]))
        staged = [self._stage(kr, v) for v in bound]
        hooks = [RunHooks(kr.sites, lambda b, r=r: shared.agents[r * block_num + b])
                 if kr.sites is not None else None for r in range(ranks)]
        slots = [self._slots(kr, bound[r], r, ranks, hooks[r], races=True) for r in range(ranks)]
        args_p = slots
        t0 = time.perf_counter_ns()
        done: list[_Block | None] = [None] * len(shared.agents)

        def body(agent: Agent) -> None:
            r = self._call(kr, args_p[agent.rank], self._workspace(kr), agent.block, block_num)
            if r.rc:
                raise self._fault(kr, r.err, hooks[agent.rank], agent.block)
            done[agent.index] = r

        with contextlib.ExitStack() as stack:
            for h in hooks:
                if h is not None:
                    stack.enter_context(h)
            threads = [threading.Thread(target=shared.run_agent, args=(a, body), daemon=True,
                                        name=f"pto-rank{a.rank}-b{a.block}") for a in shared.agents]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        for pairs in staged:
            for (v, c) in pairs:
                v[...] = c
        if shared.failed is not None:
            raise shared.failed
        total = np.zeros(len(kr.abi.counters), np.int64)
        events: list[dict[str, Any]] | None = [] if trace else None
        for a, r in zip(shared.agents, done):
            if r is None:
                continue
            total += r.counts
            if events is not None:
                events.append({"name": f"@{kernel}", "pipe": "V", "block": a.block, "rank": a.rank,
                               "ts_ns": r.start - t0, "dur_ns": r.end - r.start, "line": None})
        return Result({n: [v[i] for v in bound] for n, i in kr.out_index}, self._counters(kr, total.tolist()), events)

    @staticmethod
    def _counters(kr: _Kernel, total: list[int]) -> dict[str, int]:
        counters = {m: n for m, n in zip(kr.counter_names, total) if n}
        counters["instructions"] = sum(counters.values())
        return counters

    @staticmethod
    def _fault(kr: _Kernel, err: np.ndarray, hooks: RunHooks | None = None, block: int = 0) -> BaseException:
        site_no = int(err[0])
        if site_no == ERR_RAISED and hooks is not None:
            return hooks.take_error(block)         # what the comm callback raised, as it was
        if not 1 <= site_no <= len(kr.faults):
            return RuntimeFault("RUNTIME_INTERNAL", "generated code reported an unknown fault",
                                location=Location(kernel=kr.kernel.name), actual=site_no)
        site = kr.faults[site_no - 1]
        details = [int(x) for x in err[1:]]
        fmt = (lambda s: format_details(s, details))
        return RuntimeFault(site.code, site.message, location=site.location,
                            expected=fmt(site.expected), actual=fmt(site.actual))


class LLVMBackend(Backend):
    """Native code for the host CPU through llvmlite. Options: ``threads`` (blocks of a
    ``block_num`` launch run at once; default: one per core), ``cache`` (default True),
    ``cache_dir`` (where compiled code is kept) and ``checked`` (default False: reads of
    never-written tile elements fail with RUNTIME_UNINIT_READ, as on the reference)."""

    name = "llvm"
    default_profile = "cpu"
    multi_rank = True
    rules: Mapping[str, Any] = _LazyRules()

    def is_available(self) -> tuple[bool, str]:
        return _available()

    def _compile(self, module: Module, profile: str, threads: int | None = None, cache: bool = True,
                 cache_dir: str | os.PathLike | None = None, checked: bool = False, **options: Any) -> Executable:
        if options:
            raise PTOError("PTO_OPTION", f"unknown llvm backend option(s): {', '.join(options)}",
                           expected=", ".join(_OPTIONS), actual=", ".join(options))
        threads = thread_count_option(threads) or os.cpu_count() or 1
        flag_option("checked", checked)
        flag_option("cache", cache)
        from . import target
        blob = module.to_bytes()
        k = cache_key(blob, profile, {"checked": True} if checked else {}, target.fingerprint())
        store = DiskCache(cache_dir) if cache else None
        hit = store.get(k) if store is not None else None
        if hit is not None:
            obj, meta = hit
            abis = {kk.name: dataclasses.replace(abi_for(kk, f"pto_kernel_{n}"),
                                                 workspace=meta["workspace"].get(kk.name, 0))
                    for n, kk in enumerate(module.kernels)}
            walks = {kk.name: list(kk.walk()) for kk in module.kernels}
            faults = {name: [_site_from_json(d, walks.get(name, [])) for d in sites]
                      for name, sites in meta["faults"].items()}
            if set(faults) == set(abis) == set(meta["workspace"]):
                return LLVMExecutable(module, profile, obj, abis, faults, threads, compiled=False)
        ir_text, abis, faults = generate(module, checked=checked)
        obj = target.compile_object(ir_text)
        if store is not None:
            store.put(k, obj, {"faults": {n: [_site_to_json(s) for s in f] for n, f in faults.items()},
                               "workspace": {n: a.workspace for n, a in abis.items()},
                               "ir_sha256": hashlib.sha256(ir_text.encode()).hexdigest()})
        return LLVMExecutable(module, profile, obj, abis, faults, threads, compiled=True)
