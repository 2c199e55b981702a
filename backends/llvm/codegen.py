"""A kernel -> one LLVM function.

ABI of every generated kernel (``KernelABI`` says where each parameter lives)::

    i32 @<symbol>(ptr %args, ptr %workspace, i64 %block_idx, i64 %block_num, ptr %err)

``args`` is an array of i64 slots: a global tensor takes 1 + 2 * rank slots (address, shape,
element strides), a tile parameter one (its address), a scalar one (integers as two's
complement, floats as f64 bits); ``COMM_SLOTS`` more follow (``KernelABI.comm``: the rank, the
rank count and the handle the comm family's callbacks name the run by). Local tiles live in ``workspace`` at offsets fixed here,
after one i64 per mnemonic the kernel uses (``KernelABI.counters``): how often each ran,
written when the kernel returns normally (the ``Result`` counters). The function returns 0,
or 1 after writing ``err[0] = fault site + 1`` and the site's detail values to ``err[1:]``;
the runtime turns that into the site's ``RuntimeFault`` (``err[0] = ERR_RAISED``: a callback
into Python raised, and the run re-raises its exception).

Scalars live in stack slots (LLVM promotes them to registers), so structured control flow
needs no phi bookkeeping. Tile instructions go through ``rules`` (mnemonic -> rule); rules
that are ``MapRule`` (elementwise over the destination's valid region) are fused when
consecutive: one loop nest computes them all, values passing between them in registers.
"""
from __future__ import annotations

import contextlib
import dataclasses
import string
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

from llvmlite import ir

from ..maprules import MapRule
from ...assembler import scalar_ops as S
from ...assembler.ir import (Const, For, If, Kernel, Lit, MemRef, ScalarOp, Stmt, Subset, TileDecl, TileOp,
                             Value, View, ViewQuery, Yield)
from ...isa import dtypes as dt
from ...isa.diagnostics import Location
from ...isa.spec import Kind, Role
from ...isa.types import INDEX, EventType, GlobalType, ScalarType, TileType
from . import numerics as N
from .scalars import is_signed

I1, I8, I32, I64, F32, F64, PTR = N.I1, N.I8, N.I32, N.I64, N.F32, N.F64, N.PTR
ERR_SLOTS = 8          # err[0] = site + 1, err[1:] = details
#: err[0] when a callback into Python (the comm family, commhook.py) raised: the exception is
#: kept on the Python side and re-raised by the run
ERR_RAISED = -1
#: argument slots after the parameters': rank, rank count, run handle of the comm callback,
#: 1 when ordinary global accesses are race-checked (commhook.py)
COMM_SLOTS = 4
WORKSPACE_ALIGN = 64


# --------------------------------------------------------------------------- ABI and faults

@dataclass(frozen=True)
class KernelABI:
    symbol: str
    slots: Mapping[str, int]          # parameter name -> first argument slot
    nslots: int
    tile_offsets: Mapping[str, int]   # local tile name -> byte offset in the workspace
    workspace: int                    # bytes per block
    counters: tuple[str, ...] = ()    # mnemonics whose execution counts (i64) open the workspace
    comm: int = 0                     # first of the COMM_SLOTS argument slots


@dataclass(frozen=True)
class FaultSite:
    """A check in generated code; ``expected``/``actual`` are format strings over the
    detail values (``{0}``, ``{1}``, ..., and sums such as ``{1+2}``: ``format_details``)."""

    code: str
    message: str
    location: Location
    expected: str | None = None
    actual: str | None = None


def abi_for(kernel: Kernel, symbol: str) -> KernelABI:
    slots: dict[str, int] = {}
    n = 0
    for p in kernel.params:
        slots[p.name] = n
        n += 1 + 2 * p.type.rank if isinstance(p.type, GlobalType) else 1
    counters = tuple(sorted({st.instr.mnemonic for st in kernel.walk() if isinstance(st, TileOp)}))
    offsets: dict[str, int] = {}
    size = -(-8 * len(counters) // WORKSPACE_ALIGN) * WORKSPACE_ALIGN
    params = {p.name for p in kernel.params}
    for name, t in kernel.tiles().items():
        if name in params:
            continue
        offsets[name] = size
        storage = t.rows * t.cols * t.dtype.itemsize     # the array: one uint8 per 4-bit element, not t.nbytes
        size += -(-max(storage, 1) // WORKSPACE_ALIGN) * WORKSPACE_ALIGN
    return KernelABI(symbol, slots, n + COMM_SLOTS, offsets, size, counters, n)


# --------------------------------------------------------------------------- operands

class TileRef:
    """A tile buffer in generated code: row-major storage of its static shape, valid extents
    as i64 values (constants when static)."""

    def __init__(self, name: str, type: TileType, ptr: ir.Value, vrows: ir.Value, vcols: ir.Value,
                 static_valid: tuple[int | None, int | None]) -> None:
        self.name, self.type, self.ptr = name, type, ptr
        self.vrows, self.vcols = vrows, vcols
        self.static_valid = static_valid
        self.dtype: dt.DType = type.dtype
        self.rows, self.cols = type.shape
        self.elem = N.storage(type.dtype)
        self.alias: tuple[Any, Any] | None = None    # (alias.scope, noalias) metadata of a local tile

    def _tag(self, instr: Any) -> Any:
        if self.alias is not None:
            instr.set_metadata("alias.scope", self.alias[0])
            instr.set_metadata("noalias", self.alias[1])
        return instr

    def addr(self, b: ir.IRBuilder, i: ir.Value, j: ir.Value) -> ir.Value:
        flat = b.add(b.mul(i, ir.Constant(I64, self.cols), flags=["nsw", "nuw"]), j, flags=["nsw", "nuw"])
        return b.gep(self.ptr, [flat], inbounds=True, source_etype=self.elem)

    def flat_addr(self, b: ir.IRBuilder, k: ir.Value) -> ir.Value:
        return b.gep(self.ptr, [k], inbounds=True, source_etype=self.elem)

    def load_raw(self, b: ir.IRBuilder, i: ir.Value, j: ir.Value) -> ir.Value:
        return self._tag(b.load(self.addr(b, i, j), typ=self.elem))

    def store_raw(self, b: ir.IRBuilder, i: ir.Value, j: ir.Value, v: ir.Value) -> None:
        self._tag(b.store(v, self.addr(b, i, j)))

    def load(self, b: ir.IRBuilder, i: ir.Value, j: ir.Value) -> ir.Value:
        """Element (i, j) in its compute type (f32 for every float dtype)."""
        return N.load(b, self.dtype, self.load_raw(b, i, j))

    def store(self, b: ir.IRBuilder, i: ir.Value, j: ir.Value, v: ir.Value) -> None:
        """Store a compute value at (i, j), rounding once to the storage dtype."""
        self.store_raw(b, i, j, N.store(b, self.dtype, v))


class GlobalView:
    """A global tensor argument addressed at the instruction's indices."""

    def __init__(self, name: str, type: GlobalType, ptr: ir.Value, shape: list[ir.Value],
                 strides: list[ir.Value], offsets: list[ir.Value]) -> None:
        self.name, self.type, self.ptr = name, type, ptr
        self.shape, self.strides, self.offsets = shape, strides, offsets
        self.dtype: dt.DType = type.dtype
        self.elem = N.storage(type.dtype)
        self.rank = type.rank

    def window(self, cg: "KernelCodegen", rows: ir.Value, cols: ir.Value,
               what: str = "global tensor") -> tuple[ir.Value, ir.Value, ir.Value]:
        """Check that a rows x cols window at the offsets fits (RUNTIME_OOB, as
        ``GlobalRef.window``) and return (address of its origin, row stride, col stride)
        in elements. A rank-1 tensor is a single row."""
        b = cg.b
        zero = ir.Constant(I64, 0)
        if self.rank == 1:
            shape, strides, offs = [ir.Constant(I64, 1)] + self.shape, [zero] + self.strides, [zero] + self.offsets
        else:
            shape, strides, offs = self.shape, self.strides, self.offsets
        n = len(shape)
        one = ir.Constant(I64, 1)
        for d in range(n):
            extent = rows if d == n - 2 else cols if d == n - 1 else one
            start = offs[d]
            dim = d if self.rank > 1 else d - 1
            cg.fault(span_outside(b, start, extent, shape[d]), "RUNTIME_OOB",
                     f"{what} accessed out of bounds in dim {max(dim, 0)}",
                     expected="indices in [0, {0})", actual="[{1}, {1+2})", details=[shape[d], start, extent])
        flat = zero
        for d in range(n):
            flat = b.add(flat, b.mul(offs[d], strides[d]))
        origin = b.gep(self.ptr, [flat], source_etype=self.elem)
        return origin, strides[n - 2], strides[n - 1]

    def element(self, b: ir.IRBuilder, origin: ir.Value, rs: ir.Value, cs: ir.Value,
                i: ir.Value, j: ir.Value) -> ir.Value:
        """Address of element (i, j) of a window."""
        return b.gep(origin, [b.add(b.mul(i, rs), b.mul(j, cs))], source_etype=self.elem)


# --------------------------------------------------------------------------- integer operands and overflow-safe checks

def _type_of(v: Value | Lit | int) -> ScalarType:
    t = v.type if isinstance(v, (Value, Lit)) else INDEX
    return t if isinstance(t, ScalarType) else INDEX


def widen(b: ir.IRBuilder, v: ir.Value, t: ScalarType) -> ir.Value:
    """An integer value of type ``t`` as the i64 of its natural value (modulo 2^64)."""
    if not isinstance(v.type, ir.IntType) or v.type.width == 64:
        return v
    return b.sext(v, I64) if is_signed(t) else b.zext(v, I64)


def span_outside(b: ir.IRBuilder, start: ir.Value, extent: ir.Value, limit: ir.Value) -> ir.Value:
    """i1: ``[start, start + extent)`` is not inside ``[0, limit)`` (i64 operands, ``extent``
    and ``limit`` >= 0). Never forms ``start + extent``, which wraps for a start near 2^63 and
    would let a wild window pass: ``start <=u limit`` (a negative start is a huge unsigned
    number) and then ``extent <=u limit - start``."""
    return b.or_(b.icmp_unsigned(">", start, limit), b.icmp_unsigned(">", extent, b.sub(limit, start)))


class _DetailFormatter(string.Formatter):
    """``str.format`` over a fault's detail values, where a field may also be a sum of detail
    indices (``{1+2}``): generated code reports a window's start and extent and the end is
    added here, in Python integers, so it is exact where ``start + extent`` overflows i64."""

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if isinstance(key, str) and "+" in key:
            return sum(args[int(k)] for k in key.split("+"))
        return super().get_value(key, args, kwargs)


_DETAILS = _DetailFormatter()


def format_details(template: str | None, details: Sequence[int]) -> str | None:
    """A fault site's ``expected``/``actual`` template filled with the run's detail values."""
    return None if template is None else _DETAILS.format(template, *details)


# --------------------------------------------------------------------------- fusable rules

Rule = Callable[["KernelCodegen", TileOp], None]


# --------------------------------------------------------------------------- the code generator

class KernelCodegen:
    """Generates one kernel. Rules use: ``b`` (the IR builder), ``tile``/``glob``/``scalar``/
    ``attrs`` to read operands, ``loop``/``while_``/``if_then`` for control flow, ``fault``,
    ``check_read`` and ``check_write`` for checks, ``intrinsic`` and ``helper`` for calls,
    ``alloca``/``scratch``/``state`` for storage."""

    def __init__(self, module: ir.Module, kernel: Kernel, abi: KernelABI, rules: Mapping[str, Any],
                 filename: str | None = None) -> None:
        self.module, self.kernel, self.abi, self.rules = module, kernel, abi, rules
        self.filename = filename
        self.faults: list[FaultSite] = []
        fnty = ir.FunctionType(I32, [PTR, PTR, I64, I64, PTR])
        self.fn = ir.Function(module, fnty, abi.symbol)
        self.fn.attributes.add("nounwind")
        self.args_ptr, self.ws_ptr, self.block_idx, self.block_num, self.err_ptr = self.fn.args
        for a in (self.args_ptr, self.ws_ptr, self.err_ptr):
            a.add_attribute("noalias")
        self.entry = self.fn.append_basic_block("entry")
        body = self.fn.append_basic_block("body")
        self.b = ir.IRBuilder(body)
        self._alloca_builder = ir.IRBuilder(self.entry)
        self.vars: dict[str, ir.Value] = {}            # scalar name -> stack slot
        self.var_types: dict[str, ScalarType] = {}
        self.tiles: dict[str, TileRef] = {}
        self._dyn_valid: dict[str, tuple[ir.Value, ir.Value]] = {}
        self.views: dict[str, tuple[ir.Value, list[ir.Value], list[ir.Value]]] = {}   # views.py: stack slots
        self.windows: dict[str, tuple[str, str]] = {}      # subset.py: child -> (root tile, itself)
        self.window_slots: dict[str, tuple[ir.Value, ir.Value]] = {}   # ... its offsets in the root
        self.stmt_index: dict[int, int] = {id(s): i for i, s in enumerate(kernel.walk())}
        self.current: Stmt | None = None
        self._state: dict[str, ir.Value] = {}
        self._scratch = 0
        # execution counts per mnemonic: stack slots (registers after mem2reg), written to the
        # head of the workspace when the kernel returns normally
        self._counts = {m: self.alloca(I64, "count." + m) for m in abi.counters}
        for slot in self._counts.values():
            self._alloca_builder.store(self.i64(0), slot)
        self._setup_params()
        #: a kernel written for ranks (a comm instruction, get_rank or get_rank_num): its
        #: ordinary global accesses report to the embedded execution's race check
        from .commhook import uses_ranks
        self.comm_kernel = uses_ranks(kernel)

    # ------------------------------------------------------------------ basics
    @staticmethod
    def i64(v: int | ir.Value) -> ir.Value:
        return v if isinstance(v, ir.Value) else ir.Constant(I64, int(v))

    def alloca(self, ty: ir.Type, name: str = "", size: int | None = None) -> ir.Value:
        """A stack slot (``size`` elements of ``ty`` when given) in the entry block."""
        return self._alloca_builder.alloca(ty, size=None if size is None else self.i64(size), name=name)

    def _slot(self, index: int) -> ir.Value:
        p = self.b.gep(self.args_ptr, [self.i64(index)], inbounds=True, source_etype=I64)
        return self.b.load(p, typ=I64)

    def comm_slot(self, k: int) -> ir.Value:
        """Comm argument slot ``k`` (the rank, the rank count, ...: ``commhook``)."""
        return self._slot(self.abi.comm + k)

    def _setup_params(self) -> None:
        b = self.b
        reshaped = {s.value.name for s in self.kernel.walk() if isinstance(s, TileDecl) and s.keep}
        for p in self.kernel.params:
            s = self.abi.slots[p.name]
            t = p.type
            if isinstance(t, TileType):
                ptr = b.inttoptr(self._slot(s), PTR)
                vr = t.rows if t.valid_rows is None else t.valid_rows
                vc = t.cols if t.valid_cols is None else t.valid_cols
                if p.name in reshaped:      # pto.set_validshape moves its region at run time
                    slots = (self.alloca(I64, f"{p.name}.vr"), self.alloca(I64, f"{p.name}.vc"))
                    self._alloca_builder.store(self.i64(vr), slots[0])
                    self._alloca_builder.store(self.i64(vc), slots[1])
                    self._dyn_valid[p.name] = slots
                    self.tiles[p.name] = TileRef(p.name, t, ptr, None, None, t.valid)   # type: ignore[arg-type]
                    continue
                self.tiles[p.name] = TileRef(p.name, t, ptr, self.i64(vr), self.i64(vc), (vr, vc))
            elif isinstance(t, ScalarType):
                raw = self._slot(s)
                ty = N.scalar_type(t.name)
                if t.is_float:
                    v = b.fptrunc(b.bitcast(raw, F64), F32)
                elif ty.width < 64:
                    v = b.trunc(raw, ty)
                else:
                    v = raw
                self.set_var(p.name, t, v)
            elif isinstance(t, EventType):
                continue
        params = {p.name for p in self.kernel.params}
        scopes = self._alias_scopes([n for n in self.kernel.tiles() if n not in params])
        for name, t in self.kernel.tiles().items():
            if name in params:
                continue
            ptr = b.gep(self.ws_ptr, [self.i64(self.abi.tile_offsets[name])], inbounds=True, source_etype=I8)
            if t.dynamic:
                slots = (self.alloca(I64, f"{name}.vr"), self.alloca(I64, f"{name}.vc"))
                self._alloca_builder.store(self.i64(t.rows if t.valid_rows is None else t.valid_rows), slots[0])
                self._alloca_builder.store(self.i64(t.cols if t.valid_cols is None else t.valid_cols), slots[1])
                self._dyn_valid[name] = slots
                self.tiles[name] = TileRef(name, t, ptr, None, None, t.valid)   # type: ignore[arg-type]
            else:
                self.tiles[name] = TileRef(name, t, ptr, self.i64(t.valid_rows), self.i64(t.valid_cols), t.valid)
            self.tiles[name].alias = scopes[name]

    def _alias_scopes(self, names: list[str]) -> dict[str, tuple[Any, Any]]:
        """Local tiles are disjoint slices of the workspace: give each its own alias scope,
        so LLVM knows a store to one tile never changes another (loads hoist, loops vectorise
        without run-time overlap checks)."""
        m = self.module
        domain = m.add_metadata([ir.MetaDataString(m, f"openpto.{self.abi.symbol}.tiles")])
        scope = {n: m.add_metadata([ir.MetaDataString(m, f"openpto.{self.abi.symbol}.tile.{n}"), domain])
                 for n in names}
        return {n: (m.add_metadata([scope[n]]), m.add_metadata([scope[o] for o in names if o != n]))
                for n in names}

    # ------------------------------------------------------------------ operand access
    def set_var(self, name: str, t: ScalarType, v: ir.Value) -> None:
        if name not in self.vars:
            self.vars[name] = self.alloca(N.scalar_type(t.name), name)
            self.var_types[name] = t
        self.b.store(v, self.vars[name])

    def get_var(self, name: str) -> ir.Value:
        t = self.var_types[name]
        return self.b.load(self.vars[name], typ=N.scalar_type(t.name))

    def constant(self, value: Any, t: ScalarType) -> ir.Value:
        from ..reference.scalars import convert
        v = convert(value, t)
        ty = N.scalar_type(t.name)
        if isinstance(ty, ir.IntType):
            v = int(v) & ((1 << ty.width) - 1)
            if ty.width > 1 and v >> (ty.width - 1):
                v -= 1 << ty.width
        return ir.Constant(ty, v)

    def value(self, v: Value | Lit | int, t: ScalarType = INDEX) -> ir.Value:
        """A scalar operand (a named value, a literal, or a bare integer of type ``t``)."""
        if isinstance(v, Lit):
            return self.constant(v.value, v.type)
        if isinstance(v, int):
            return self.constant(v, t)
        return self.get_var(v.name)

    def index(self, v: Value | Lit | int) -> ir.Value:
        """An index-like operand (an offset, an extent, a count) of any integer type as its
        i64 value: sign- or zero-extended by the type, as the reference reads it (``i8`` -1 is
        -1, ``u16`` 65535 is 65535). A ``u64`` above 2^63 - 1 saturates to 2^63 - 1: every
        check and clamp treats it as the huge positive number it is (no extent, offset or
        diagonal reaches either), where its bits would read as a negative i64."""
        t = _type_of(v)
        x = widen(self.b, self.value(v), t)
        if t.name == "u64":
            x = self.b.select(self.b.icmp_signed("<", x, self.i64(0)), self.i64(2 ** 63 - 1), x)
        return x

    def scalar(self, op: TileOp, name: str) -> ir.Value | None:
        """Operand ``name`` of ``op``: in its own type, or as an i64 (``index``) for an index
        operand (``index_in`` in the spec: offsets, ids, sizes of any integer type)."""
        a = op.args.get(name)
        if a is None:
            return None
        if op.instr.operand(name).kind is Kind.INDEX:
            return self.index(a)   # type: ignore[arg-type]
        return self.value(a)  # type: ignore[arg-type]

    def tile(self, v: Value | TileOp, name: str | None = None) -> TileRef:
        """The tile a value names (or operand ``name`` of ``op``), with current valid extents."""
        if isinstance(v, TileOp):
            v = v.args[name]   # type: ignore[assignment,index]
        ref = self.tiles[v.name]   # type: ignore[union-attr]
        if ref.name in self._dyn_valid:
            r, c = self._dyn_valid[ref.name]
            alias = ref.alias
            ref = TileRef(ref.name, ref.type, ref.ptr, self.b.load(r, typ=I64), self.b.load(c, typ=I64),
                          ref.static_valid)
            ref.alias = alias
        return ref

    def glob(self, op: TileOp, name: str) -> GlobalView:
        m: MemRef = op.args[name]   # type: ignore[assignment]
        t: GlobalType = m.base.type   # type: ignore[assignment]
        addr, shape, strides = self.global_parts(m.base.name, t)
        offsets = [self.index(i) for i in m.indices]
        return GlobalView(m.base.name, t, self.b.inttoptr(addr, PTR), shape, strides, offsets)

    def global_parts(self, name: str, t: GlobalType) -> tuple[ir.Value, list[ir.Value], list[ir.Value]]:
        """A global's address (i64), extents and element strides: a parameter's from its argument
        slots, a tensor view's (``views.py``) from its stack slots."""
        if name in self.views:
            a, ns, ss = self.views[name]
            return (self.b.load(a, typ=I64), [self.b.load(x, typ=I64) for x in ns],
                    [self.b.load(x, typ=I64) for x in ss])
        s = self.abi.slots[name]
        return (self._slot(s), [self._slot(s + 1 + d) for d in range(t.rank)],
                [self._slot(s + 1 + t.rank + d) for d in range(t.rank)])

    @staticmethod
    def attrs(op: TileOp) -> dict[str, Any]:
        return op.instr.with_defaults(op.attrs)

    # ------------------------------------------------------------------ control flow helpers
    @contextlib.contextmanager
    def loop(self, start: int | ir.Value, stop: int | ir.Value, step: int | ir.Value = 1,
             name: str = "i") -> Iterator[ir.Value]:
        """``for i in range(start, stop, step)`` (step > 0) with an i64 induction variable, for
        the loops of tile rules, whose bounds are tile extents: ``stop + step`` must not
        overflow (loops over run-time values use ``counted_loop``)."""
        b = self.b
        start, stop, step = self.i64(start), self.i64(stop), self.i64(step)
        pre = b.block
        header = b.append_basic_block(name + ".head")
        body = b.append_basic_block(name + ".body")
        done = b.append_basic_block(name + ".done")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64, name=name)
        i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", i, stop), body, done)
        b.position_at_end(body)
        yield i
        nxt = b.add(i, step, flags=["nsw"])
        i.add_incoming(nxt, b.block)
        b.branch(header)
        b.position_at_end(done)

    @contextlib.contextmanager
    def counted_loop(self, lo: ir.Value, hi: ir.Value, step: ir.Value, signed: bool,
                     name: str = "for") -> Iterator[ir.Value]:
        """``for iv in range(lo, hi, step)`` over the mathematical integers, for operands of any
        integer type (``step`` > 0 already checked) with the induction variable in that type:
        the exit test never forms a value past ``hi``, so it cannot be defeated by wrap-around
        near the type's maximum. Entry tests ``lo < hi``; the latch continues while
        ``step <u hi - iv`` (``hi - iv`` is exact as an unsigned number because iv < hi)."""
        b = self.b
        ty = lo.type
        body = b.append_basic_block(name + ".body")
        done = b.append_basic_block(name + ".done")
        pre = b.block
        b.cbranch((b.icmp_signed if signed else b.icmp_unsigned)("<", lo, hi), body, done)
        b.position_at_end(body)
        iv = b.phi(ty, name=name)
        iv.add_incoming(lo, pre)
        yield iv
        if isinstance(step, ir.Constant) and step.constant == 1:
            nxt = b.add(iv, step, flags=["nsw" if signed else "nuw"])    # iv < hi: never wraps
            more = (b.icmp_signed if signed else b.icmp_unsigned)("<", nxt, hi)
        else:
            nxt = b.add(iv, step)
            more = b.icmp_unsigned("<", step, b.sub(hi, iv))
        iv.add_incoming(nxt, b.block)
        b.cbranch(more, body, done)
        b.position_at_end(done)

    @contextlib.contextmanager
    def while_(self, cond: Callable[[], ir.Value], name: str = "w") -> Iterator[None]:
        """``while cond(): body``; ``cond`` emits its code in the loop header."""
        b = self.b
        head = b.append_basic_block(name + ".head")
        body = b.append_basic_block(name + ".body")
        done = b.append_basic_block(name + ".done")
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(cond(), body, done)
        b.position_at_end(body)
        yield
        b.branch(head)
        b.position_at_end(done)

    def if_then(self, cond: ir.Value) -> Any:
        return self.b.if_then(cond)

    def if_else(self, cond: ir.Value) -> Any:
        return self.b.if_else(cond)

    def location(self) -> Location:
        s = self.current
        loc = getattr(s, "loc", None)
        index = self.stmt_index.get(id(s)) if s is not None else None
        if loc is None:
            return Location(self.filename, None, None, self.kernel.name, index)
        return Location(loc.file, loc.line, loc.col, self.kernel.name, index, loc.source_line)

    def fault(self, cond: ir.Value, code: str, message: str, expected: str | None = None,
              actual: str | None = None, details: Sequence[ir.Value] = ()) -> None:
        """When ``cond`` (i1) holds at run time, stop the kernel with this fault."""
        if isinstance(cond, ir.Constant) and cond.constant == 0:
            return
        mnemonic = self.current.instr.mnemonic if isinstance(self.current, TileOp) else None
        text = f"{mnemonic}: {message}" if mnemonic and not message.startswith(mnemonic) else message
        self.faults.append(FaultSite(code, text, self.location(), expected, actual))
        site = len(self.faults)
        b = self.b
        fail = b.append_basic_block("fault")
        ok = b.append_basic_block("ok")
        b.cbranch(cond, fail, ok)
        b.position_at_end(fail)
        b.store(self.i64(site), self.err_ptr)
        for k, d in enumerate(details[:ERR_SLOTS - 1]):
            if d.type != I64:
                d = b.sext(d, I64) if isinstance(d.type, ir.IntType) else b.bitcast(b.fpext(d, F64), I64)
            b.store(d, b.gep(self.err_ptr, [self.i64(k + 1)], source_etype=I64))
        b.ret(ir.Constant(I32, 1))
        b.position_at_end(ok)

    def check_read(self, t: "TileRef", rows: ir.Value, cols: ir.Value, what: str) -> None:
        """RUNTIME_INVALID_READ unless the rows x cols prefix lies in ``t``'s valid region
        (the reference's ``Tile.read``)."""
        b = self.b
        bad = b.or_(b.icmp_signed(">", rows, t.vrows), b.icmp_signed(">", cols, t.vcols))
        self.fault(bad, "RUNTIME_INVALID_READ", f"{what} is read outside its valid region",
                   expected="domain {0}x{1} inside the valid region", actual="valid region {2}x{3}",
                   details=[rows, cols, t.vrows, t.vcols])

    def check_write(self, t: "TileRef", rows: ir.Value, cols: ir.Value, what: str) -> None:
        """RUNTIME_INVALID_WRITE unless a rows x cols block fits ``t``'s valid region."""
        b = self.b
        bad = b.or_(b.icmp_signed(">", rows, t.vrows), b.icmp_signed(">", cols, t.vcols))
        self.fault(bad, "RUNTIME_INVALID_WRITE", f"{what} is written outside its valid region",
                   expected="a {0}x{1} block inside the valid region", actual="valid region {2}x{3}",
                   details=[rows, cols, t.vrows, t.vcols])

    def intrinsic(self, name: str, ret: ir.Type, args: Sequence[ir.Value]) -> ir.Value:
        """Call an LLVM intrinsic (``llvm.fabs.f32`` ...) or libm function by name."""
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, [a.type for a in args]), name)
        return self.b.call(fn, list(args))

    def scratch(self, nbytes: int) -> ir.Value:
        """A private buffer of ``nbytes`` in the block's workspace (for copies too large for
        the stack); the workspace grows to hold it (``abi`` is updated by ``generate``)."""
        offset = self.abi.workspace + self._scratch
        self._scratch += -(-max(nbytes, 1) // WORKSPACE_ALIGN) * WORKSPACE_ALIGN
        return self._alloca_builder.gep(self.ws_ptr, [self.i64(offset)], inbounds=True, source_etype=I8)

    def state(self, key: str, ty: ir.Type, init: ir.Constant) -> ir.Value:
        """A per-run control register (TSETFMATRIX's fmatrix, the img2col settings ...): a
        stack slot set to ``init`` at kernel entry; load and store it with ``b``."""
        if key not in self._state:
            slot = self.alloca(ty, "state." + key)
            self._alloca_builder.store(init, slot)
            self._state[key] = slot
        return self._state[key]

    def helper(self, name: str, build: Callable[[ir.Module], ir.Function]) -> ir.Function:
        """A module-level helper function, built once per module by ``build``."""
        fn = self.module.globals.get(name)
        return fn if fn is not None else build(self.module)

    # ------------------------------------------------------------------ driving
    def generate(self) -> KernelABI:
        """Emit the kernel; returns its ABI with the workspace grown by any scratch buffers."""
        self.block(self.kernel.body, ())
        for k, slot in enumerate(self._counts.values()):
            at = self.b.gep(self.ws_ptr, [self.i64(8 * k)], inbounds=True, source_etype=I8)
            self.b.store(self.b.load(slot, typ=I64), at)
        self.b.ret(ir.Constant(I32, 0))
        self._alloca_builder.branch(self.fn.blocks[1])
        return dataclasses.replace(self.abi, workspace=self.abi.workspace + self._scratch)

    def block(self, body: Sequence[Stmt], targets: Sequence[Value]) -> None:
        pending: list[TileOp] = []
        for s in body:
            rule = self.rules.get(s.instr.mnemonic) if isinstance(s, TileOp) else None
            if isinstance(rule, MapRule) and self.windows and self._windows_of(s)[0]:
                if pending:                   # a subset operand: alone, between its copies
                    self._maps(pending)
                    pending = []
                self.current = s
                self._through_windows(s, lambda: self._maps([s]))   # type: ignore[list-item]
                continue
            if isinstance(rule, MapRule):
                if pending and not _fusable(pending, s, self.rules):
                    self._maps(pending)
                    pending = []
                pending.append(s)
                continue
            if pending:
                self._maps(pending)
                pending = []
            self.current = s
            getattr(self, "_" + type(s).__name__.lower())(s, targets)
        if pending:
            self._maps(pending)

    # ------------------------------------------------------------------ statements
    def _const(self, s: Const, targets: Sequence[Value]) -> None:
        self.set_var(s.result.name, s.result.type, self.constant(s.value, s.result.type))  # type: ignore[arg-type]

    def _tiledecl(self, s: TileDecl, targets: Sequence[Value]) -> None:
        t: TileType = s.value.type   # type: ignore[assignment]
        if s.value.name not in self._dyn_valid:
            return
        r = self.index(s.valid_rows) if s.valid_rows is not None else self.i64(t.rows if t.valid_rows is None
                                                                                  else t.valid_rows)
        c = self.index(s.valid_cols) if s.valid_cols is not None else self.i64(t.cols if t.valid_cols is None
                                                                                  else t.valid_cols)
        b = self.b
        zero = self.i64(0)
        bad = b.or_(b.or_(b.icmp_signed("<", r, zero), b.icmp_signed(">", r, self.i64(t.rows))),
                    b.or_(b.icmp_signed("<", c, zero), b.icmp_signed(">", c, self.i64(t.cols))))
        self.fault(bad, "RUNTIME_VALID_REGION", f"valid region of %{s.value.name} exceeds the tile",
                   expected=f"<= {t.rows}x{t.cols}", actual="{0}x{1}", details=[r, c])
        vr, vc = self._dyn_valid[s.value.name]
        b.store(r, vr)
        b.store(c, vc)

    def _view(self, s: View, targets: Sequence[Value]) -> None:
        from .views import BUILDERS
        BUILDERS[s.op](self, s)

    def _subset(self, s: Subset, targets: Sequence[Value]) -> None:
        from .subset import define
        define(self, s)

    def _windows_of(self, op: TileOp) -> tuple[list[str], list[str]]:
        """The subset tiles ``op`` names, and those it writes."""
        named, written = [], []
        for o in op.instr.operands:
            a = op.args.get(o.name)
            if o.kind is Kind.TILE and isinstance(a, Value) and a.name in self.windows:
                if a.name not in named:
                    named.append(a.name)
                if o.role is not Role.IN and a.name not in written:
                    written.append(a.name)
        return named, written

    def _through_windows(self, op: TileOp, emit: Callable[[], None]) -> None:
        """``emit`` with each subset operand copied in from its root before, and each written
        one copied back after (``subset.py``)."""
        from .subset import copy_in, copy_out
        named, written = self._windows_of(op)
        for name in named:
            copy_in(self, name)
        emit()
        for name in written:
            copy_out(self, name)

    def _viewquery(self, s: ViewQuery, targets: Sequence[Value]) -> None:
        from .views import query
        query(self, s)

    def _scalarop(self, s: ScalarOp, targets: Sequence[Value]) -> None:
        from .scalars import scalar_op
        rt: ScalarType = s.result.type   # type: ignore[assignment]
        spec = S.SCALAR_OPS[s.op]
        if spec.cls == "extended":
            from .scalars import extended_op
            lo, hi = extended_op(self, s, [self.get_var(o.name) for o in s.operands])
            self.set_var(s.result.name, rt, lo)
            self.set_var(s.second.name, s.second.type, hi)   # type: ignore[union-attr, arg-type]
            return
        if spec.cls == "block":
            v = {"get_block_idx": lambda: self.block_idx, "get_block_num": lambda: self.block_num,
                 "get_subblock_idx": lambda: self.i64(0), "get_subblock_num": lambda: self.i64(1),
                 "get_rank": lambda: self.comm_slot(0), "get_rank_num": lambda: self.comm_slot(1)}[s.op]()
        else:
            v = scalar_op(self, s, [self.get_var(o.name) for o in s.operands])
        self.set_var(s.result.name, rt, v)

    def _yield(self, s: Yield, targets: Sequence[Value]) -> None:
        values = [self.value(v) for v in s.values]
        for t, v in zip(targets, values):
            self.set_var(t.name, t.type, v)   # type: ignore[arg-type]

    def _for(self, s: For, targets: Sequence[Value]) -> None:
        t: ScalarType = s.iv.type   # type: ignore[assignment]
        lo, hi, step = (self.value(v, t) for v in (s.lb, s.ub, s.step))
        signed = is_signed(t)
        zero = ir.Constant(step.type, 0)
        nonpositive = self.b.icmp_signed("<=", step, zero) if signed else self.b.icmp_unsigned("==", step, zero)
        self.fault(nonpositive, "RUNTIME_LOOP_STEP", "loop step must be positive",
                   expected="step > 0", actual="{0}", details=[widen(self.b, step, t)])
        inits = [self.value(v) for v in s.inits]
        for a, v in zip(s.iter_args, inits):
            self.set_var(a.name, a.type, v)   # type: ignore[arg-type]
        with self.counted_loop(lo, hi, step, signed, name="for") as iv:
            self.set_var(s.iv.name, s.iv.type, iv)   # type: ignore[arg-type]
            self.block(s.body, s.iter_args)
        for r, a in zip(s.results, s.iter_args):
            self.set_var(r.name, r.type, self.get_var(a.name))   # type: ignore[arg-type]

    def _if(self, s: If, targets: Sequence[Value]) -> None:
        cond = self.get_var(s.cond.name)
        with self.b.if_else(cond) as (then, other):
            with then:
                self.block(s.then_body, s.results)
            with other:
                self.block(s.else_body, s.results)

    def _tileop(self, s: TileOp, targets: Sequence[Value]) -> None:
        self._count(s)
        if self.comm_kernel:
            from .commhook import access
            access(self, s)        # the embedded execution's race check of a global access
        self._tracked(s)
        if self.windows and self._windows_of(s)[0]:
            self._through_windows(s, lambda: self.rules[s.instr.mnemonic](self, s))
        else:
            self.rules[s.instr.mnemonic](self, s)

    def _tracked(self, op: TileOp) -> None:
        """Runs before each tile instruction's checks: nothing here; checked mode
        (``checked.py``) checks and records tile initialisation."""

    def _count(self, s: TileOp) -> None:
        slot = self._counts[s.instr.mnemonic]
        self.b.store(self.b.add(self.b.load(slot, typ=I64), self.i64(1)), slot)

    # ------------------------------------------------------------------ fused elementwise groups
    def _maps(self, ops: list[TileOp]) -> None:
        b = self.b
        first = ops[0]
        rules: list[MapRule] = [self.rules[o.instr.mnemonic].for_op(o) for o in ops]
        for op in ops:
            self._count(op)
        dst0 = self.tile(first, rules[0].dst)
        r, c = dst0.vrows, dst0.vcols
        for op, rule in zip(ops, rules):          # every check before any element is computed
            self.current = op
            self._tracked(op)
            for acc in rule.reads:
                if acc.kind == "scalar" or acc.operand not in op.args:
                    continue
                t = self.tile(op, acc.operand)
                need_r = r if acc.kind != "col" else _min1(b, r)
                need_c = c if acc.kind not in ("row", "block") else _min1(b, c)
                self.check_read(t, need_r, need_c, acc.what or acc.operand)
            if rule.check is not None:
                rule.check(self, op)
        scalars = [[self.scalar(op, a.operand) if a.kind == "scalar" else None for a in rule.reads]
                   for op, rule in zip(ops, rules)]
        tiles = [{a.operand: self.tile(op, a.operand) for a in rule.reads if a.kind != "scalar"
                  and a.operand in op.args} for op, rule in zip(ops, rules)]
        dsts = [self.tile(op, rule.dst) for op, rule in zip(ops, rules)]
        zero = self.i64(0)
        written = {d.name for d in dsts}
        with self.loop(0, r, name="r") as i:
            # per-row operands no member writes are loaded once per row
            row_vals = [{a.operand: tiles[k][a.operand].load(b, i, zero) for a in rule.reads
                         if a.kind == "row" and a.operand in tiles[k] and tiles[k][a.operand].name not in written}
                        for k, rule in enumerate(rules)]
            with self.loop(0, c, name="c") as j:
                # what earlier members wrote at (i, j): tile name -> (stored bits, compute value)
                current: dict[str, tuple[ir.Value, ir.Value]] = {}
                for k, (op, rule) in enumerate(zip(ops, rules)):
                    self.current = op
                    vals = []
                    for a, sv in zip(rule.reads, scalars[k]):
                        if a.kind == "scalar":
                            vals.append(sv)
                            continue
                        if a.operand not in op.args:
                            vals.append(None)
                            continue
                        t = tiles[k][a.operand]
                        if a.kind == "elem":
                            fwd = current.get(t.name)
                            if fwd is not None:
                                vals.append(fwd[0] if a.raw else fwd[1])
                            else:
                                vals.append(t.load_raw(b, i, j) if a.raw else t.load(b, i, j))
                        elif a.kind == "row":
                            v = row_vals[k].get(a.operand)
                            vals.append(v if v is not None else t.load(b, i, zero))
                        elif a.kind == "block":
                            vals.append(t.load(b, i, b.urem(j, t.vcols)))
                        else:
                            vals.append(t.load(b, zero, j))
                    out = rule.fn(self, op, vals)
                    d = dsts[k]
                    bits = out if rule.raw_result else N.store(b, d.dtype, out)
                    d.store_raw(b, i, j, bits)
                    current[d.name] = (bits, N.load(b, d.dtype, bits))   # the value as stored


def _min1(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    one = ir.Constant(I64, 1)
    return b.select(b.icmp_signed("<", v, one), v, one)


def _domain_key(op: TileOp, rule: MapRule) -> tuple[Any, Any]:
    v = op.args[rule.dst]
    t: TileType = v.type   # type: ignore[union-attr]
    return (t.valid_rows if t.valid_rows is not None else ("dyn", v.name),   # type: ignore[union-attr]
            t.valid_cols if t.valid_cols is not None else ("dyn", v.name))   # type: ignore[union-attr]


def _fusable(group: list[TileOp], op: TileOp, rules: Mapping[str, Any]) -> bool:
    """May ``op`` join the fused loop of ``group``? Same domain, and no per-row/per-column
    operand of the group (or of op) is written by op (it would change under later reads)."""
    rule: MapRule = rules[op.instr.mnemonic].for_op(op)
    first = group[0]
    if _domain_key(first, rules[first.instr.mnemonic].for_op(first)) != _domain_key(op, rule):
        return False
    written = op.args[rule.dst].name   # type: ignore[union-attr]
    for g in (*group, op):
        for a in rules[g.instr.mnemonic].for_op(g).reads:
            if a.kind in ("row", "col", "block") and getattr(g.args.get(a.operand), "name", None) == written:
                return False
    return True
