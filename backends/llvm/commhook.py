"""The comm family on the llvm backend: native code calls back into the Python ``World``.

A communication instruction moves data between ranks, signals and waits: what it does is the
``World`` of the run (isa/world.py) — the embedded execution's agent (backends/comm_embedded.py),
``SoloWorld`` for a run without ranks, or a world the caller gives (``world=``). So the
generated code does not move the data itself: it calls ``@pto_comm_hook(handle, block, desc)``
with a descriptor of the instruction's operands, and the Python side rebuilds numpy views over
the same memory and runs the instruction's own semantics (``isa/families/comm.py``) in the
block's world. Semantics, race and deadlock detection, rank and window errors are therefore the
embedded execution's, not a second copy.

Descriptor (i64 array): ``[statement index, kind, globals..., rest...]``: every global operand
in the declaration's order as its address, shape, element strides and indices; then, for kind
``INSTR`` (run the instruction; TTEST's result is the return value), every input scalar's value;
for kind ``ACCESS`` (report an ordinary instruction's global accesses to the race check), every
tile operand's valid extents, for the windows they give. ``_Plan`` reads it back. The callback returns a negative
number when it raised: the exception is kept for the run (``RunHooks.errors``) and the kernel
returns at once with ``err[0] = ERR_RAISED``.

Compiled code is cached across processes, so no address is baked in: ``install_hooks(loaded)``
points the global ``@pto_comm_hook`` at one process-wide cffi callback (as TPRINT's printer,
rules/complex.py). The kernel call releases the GIL; the callback takes it again.
"""
from __future__ import annotations

import ctypes
import itertools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from llvmlite import ir

from ...assembler.ir import Kernel, MemRef, ScalarOp, TileOp, Value
from ...isa.diagnostics import Location, PTOError, RuntimeFault
from ...isa.dtypes import DType
from ...isa.spec import Family, Kind, Role
from ...isa.types import GlobalType
from ...isa.values import GlobalRef
from ...isa.world import World
from ..comm_embedded import window_accessed
from . import numerics as N
from .codegen import ERR_RAISED, KernelCodegen, widen

I1, I32, I64, PTR = N.I1, N.I32, N.I64, N.PTR
HOOK = "pto_comm_hook"
INSTR, ACCESS = 0, 1
#: the comm argument slots (codegen.COMM_SLOTS): offsets from ``KernelABI.comm``
RANK, RANK_NUM, HANDLE, RACES = 0, 1, 2, 3


def uses_ranks(kernel: Kernel) -> bool:
    """A kernel written for ranks: a comm instruction, get_rank or get_rank_num. Only such a
    kernel's ordinary global accesses are reported to the race check."""
    return any(isinstance(s, TileOp) and s.instr.family is Family.COMM
               or isinstance(s, ScalarOp) and s.op in ("get_rank", "get_rank_num") for s in kernel.walk())


# ----------------------------------------------------------------------------- generated code

def _hook_type() -> ir.FunctionType:
    return ir.FunctionType(I64, [I64, I64, PTR])


def _call(cg: KernelCodegen, op: TileOp, kind: int, values: list[ir.Value]) -> ir.Value:
    """Store the descriptor, call the hook, and leave the kernel when it raised."""
    b = cg.b
    mod = cg.module
    hook = mod.globals.get(HOOK)
    if hook is None:
        hook = ir.GlobalVariable(mod, _hook_type().as_pointer(), HOOK)
        hook.initializer = ir.Constant(_hook_type().as_pointer(), None)
        hook.align = 8
    words = [cg.i64(cg.stmt_index[id(op)]), cg.i64(kind)] + values
    desc = cg.alloca(I64, f"comm.{op.instr.mnemonic.lower()}", size=len(words))
    for k, v in enumerate(words):
        b.store(v, b.gep(desc, [cg.i64(k)], inbounds=True, source_etype=I64))
    fn = b.load(hook, typ=_hook_type().as_pointer())
    ret = b.call(fn, [cg.comm_slot(HANDLE), cg.block_idx, desc])
    fail = b.append_basic_block("comm.raised")
    ok = b.append_basic_block("comm.ok")
    b.cbranch(b.icmp_signed("<", ret, cg.i64(0)), fail, ok)
    b.position_at_end(fail)
    b.store(cg.i64(ERR_RAISED), cg.err_ptr)
    b.ret(ir.Constant(I32, 1))
    b.position_at_end(ok)
    return ret


def _global_words(cg: KernelCodegen, m: MemRef) -> list[ir.Value]:
    t: GlobalType = m.base.type   # type: ignore[assignment]
    addr, shape, strides = cg.global_parts(m.base.name, t)
    return [addr, *shape, *strides, *(cg.index(i) for i in m.indices)]


def lower(cg: KernelCodegen, op: TileOp) -> None:
    """The rule of every comm instruction: one call into the block's world."""
    words: list[ir.Value] = []
    result: Value | None = None
    for o in op.instr.operands:
        if isinstance(a := op.args.get(o.name), MemRef):
            words += _global_words(cg, a)
    for o in op.instr.operands:
        a = op.args.get(o.name)
        if a is None or isinstance(a, MemRef):
            continue
        if o.kind in (Kind.SCALAR, Kind.INDEX) and o.role is Role.IN:
            v = cg.scalar(op, o.name)
            words.append(v if o.kind is Kind.INDEX else widen(cg.b, v, a.type))   # type: ignore[arg-type, union-attr]
        elif o.kind is Kind.SCALAR and o.role is Role.OUT and isinstance(a, Value):
            result = a
    ret = _call(cg, op, INSTR, words)
    if result is not None:
        cg.set_var(result.name, result.type, cg.b.trunc(ret, I1))   # type: ignore[arg-type]


def access(cg: KernelCodegen, op: TileOp) -> None:
    """Before an ordinary instruction with global operands, in a kernel written for ranks:
    report its accesses to the race check when the run checks races (an embedded launch)."""
    if op.instr.family is Family.COMM:
        return
    mems = [a for o in op.instr.operands if o.kind is Kind.GLOBAL and isinstance(a := op.args.get(o.name), MemRef)]
    if not mems:
        return
    b = cg.b
    with cg.if_then(b.icmp_signed("!=", cg.comm_slot(RACES), cg.i64(0))):
        words: list[ir.Value] = []
        for m in mems:
            words += _global_words(cg, m)
        for o in op.instr.operands:
            a = op.args.get(o.name)
            if o.kind is Kind.TILE and isinstance(a, Value):
                t = cg.tile(a)
                words += [t.vrows, t.vcols]
        _call(cg, op, ACCESS, words)


# ----------------------------------------------------------------------------- the Python side

def _array(addr: int, shape: list[int], strides: list[int], d: DType) -> np.ndarray:
    """A numpy view of the elements at ``addr`` (element strides), no copy."""
    item = d.itemsize
    if 0 in shape:
        return np.empty(shape, d.np_dtype)
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    buf = (ctypes.c_char * ((hi - lo + 1) * item)).from_address((addr + lo * item) % (1 << 64))
    return np.ndarray(tuple(shape), d.np_dtype, buffer=buf, offset=-lo * item,
                      strides=tuple(s * item for s in strides))


@dataclass(frozen=True)
class _Global:
    name: str
    at: int               # first descriptor word: address, then shape, strides, indices
    type: GlobalType

    def ref(self, words: list[int]) -> GlobalRef:
        t, at, r = self.type, self.at, self.type.rank
        shape, strides = words[at + 1:at + 1 + r], words[at + 1 + r:at + 1 + 2 * r]
        return GlobalRef(_array(words[at], shape, strides, t.dtype), tuple(words[at + 1 + 2 * r:at + 1 + 3 * r]),
                         t.layout, t.dtype)


@dataclass(frozen=True)
class _Plan:
    """How to read one statement's descriptor (the order ``lower`` / ``access`` write it)."""

    op: TileOp
    size: int
    globals: tuple[_Global, ...]
    scalars: tuple[tuple[str, int], ...]           # input scalar -> its word
    valid: tuple[tuple[str, int], ...]             # ACCESS: tile operand -> its valid extents' words
    fixed: dict[str, Any]                          # INSTR: attributes with their defaults

    @staticmethod
    def of(op: TileOp, kind: int) -> "_Plan":
        at = 2
        globs: list[_Global] = []
        scalars: list[tuple[str, int]] = []
        valid: list[tuple[str, int]] = []
        for o in op.instr.operands:
            a = op.args.get(o.name)
            if isinstance(a, MemRef):
                globs.append(_Global(o.name, at, a.base.type))   # type: ignore[arg-type]
                at += 1 + 3 * a.base.type.rank   # type: ignore[union-attr]
        for o in op.instr.operands:
            a = op.args.get(o.name)
            if kind == INSTR and o.kind in (Kind.SCALAR, Kind.INDEX) and o.role is Role.IN and a is not None:
                scalars.append((o.name, at))
                at += 1
            elif kind == ACCESS and o.kind is Kind.TILE and isinstance(a, Value):
                valid.append((o.name, at))
                at += 2
        fixed = dict(op.instr.with_defaults(op.attrs)) if kind == INSTR else {}
        return _Plan(op, at, tuple(globs), tuple(scalars), tuple(valid), fixed)


def _located(e: PTOError, op: TileOp, kernel: str, index: int) -> PTOError:
    """The reference backend's placing of an error raised by an instruction's semantics."""
    if e.location.line is not None or op.loc is None and e.location.kernel is not None:
        return e
    return type(e)(e.code, f"{op.instr.mnemonic}: {e.message}", location=_where(op, kernel, index),
                   expected=e.expected, actual=e.actual, notes=e.notes)


def _where(op: TileOp, kernel: str, index: int) -> Location:
    loc = op.loc
    return (Location(loc.file, loc.line, loc.col, kernel, index, loc.source_line) if loc is not None
            else Location(kernel=kernel, index=index))


class Sites:
    """A kernel's statements, as the descriptors' statement indices name them, and their plans."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.stmts = list(kernel.walk())
        self._plans: dict[tuple[int, int], _Plan] = {}

    def run(self, words_at: Any, world: World) -> int:
        """Decode the descriptor at ``words_at`` (an ``int64_t*``) and run it in ``world``."""
        key = (words_at[0], words_at[1])
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _Plan.of(self.stmts[key[0]], key[1])   # type: ignore[arg-type]
        words = _HOOKS["ffi"].unpack(words_at, plan.size)
        try:
            with np.errstate(all="ignore"):      # as the reference runs every semantics
                return self._instr(plan, words, world) if key[1] == INSTR else self._access(plan, words, world)
        except PTOError as e:
            raise _located(e, plan.op, self.kernel.name, key[0]) from None
        except Exception as e:    # noqa: BLE001 - a semantics bug: reported, never a traceback
            raise RuntimeFault("RUNTIME_INTERNAL", f"{plan.op.instr.mnemonic} failed inside its semantics: "
                               f"{type(e).__name__}: {e}", location=_where(plan.op, self.kernel.name, key[0])) from None

    @staticmethod
    def _instr(plan: _Plan, words: list[int], world: World) -> int:
        kw = dict(plan.fixed)
        for g in plan.globals:
            kw[g.name] = g.ref(words)
        for name, at in plan.scalars:
            kw[name] = words[at]
        got = plan.op.instr.semantics(**kw, world=world)
        return int(bool(got)) if got is not None else 0

    @staticmethod
    def _access(plan: _Plan, words: list[int], world: World) -> int:
        op = plan.op
        valid = {name: (words[at], words[at + 1]) for name, at in plan.valid}
        for g in plan.globals:
            o = op.instr.operand(g.name)
            view = window_accessed(g.ref(words), o.window, valid.get(o.window))   # type: ignore[arg-type]
            if view is not None:
                world.access(view, o.role is not Role.IN, f"{op.instr.mnemonic} operand '{o.name}'")
        return 0


class RunHooks:
    """One run as the callback sees it: the kernel's sites and each block's world. Use as a
    context manager around the native calls; ``handle`` goes into the comm argument slot, and
    ``errors[block]`` holds what a callback of that block raised."""

    _ids = itertools.count(1)

    def __init__(self, sites: Sites, world_of: Callable[[int], World]) -> None:
        self.sites, self.world_of = sites, world_of
        self.errors: dict[int, BaseException] = {}
        self.handle = next(self._ids)

    def __enter__(self) -> "RunHooks":
        _RUNS[self.handle] = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _RUNS.pop(self.handle, None)

    def take_error(self, block: int) -> BaseException:
        """What block ``block``'s callback raised (RUNTIME_INTERNAL if nothing was kept)."""
        e = self.errors.pop(block, None)
        if e is None:
            return RuntimeFault("RUNTIME_INTERNAL", "a comm callback failed without an error",
                                location=Location(kernel=self.sites.kernel.name))
        return e


_RUNS: dict[int, RunHooks] = {}
_HOOKS: dict[str, Any] = {}


def _callback() -> int:
    """The process-wide cffi callback behind ``@pto_comm_hook`` (created once, kept alive)."""
    if "hook" not in _HOOKS:
        from cffi import FFI
        ffi = FFI()

        def hook(handle: int, block: int, desc: Any) -> int:
            run = _RUNS.get(handle)
            if run is None:
                return -1
            try:
                return run.sites.run(desc, run.world_of(block))
            except BaseException as e:      # noqa: BLE001 - kept for the run, never lost in cffi
                run.errors[block] = e
                return -1

        _HOOKS["ffi"] = ffi
        _HOOKS["hook"] = ffi.callback("int64_t(int64_t, int64_t, int64_t*)", hook, onerror=lambda *a: -1)
        _HOOKS["address"] = int(ffi.cast("intptr_t", _HOOKS["hook"]))
    return _HOOKS["address"]


def install_hooks(loaded: Any) -> None:
    """Point ``@pto_comm_hook`` of freshly linked code (a ``target.Loaded``) at the callback;
    code without comm instructions has no such global and is left alone."""
    addr = loaded._engine.get_global_value_address(HOOK)
    if addr:
        ctypes.c_void_p.from_address(addr).value = _callback()
