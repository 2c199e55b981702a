"""A module -> one CUDA C++ translation unit (compiled by NVRTC, or by g++ for host emulation).

Per kernel ``n`` the unit holds a body function written against ``runtime.cuh``::

    PTO_FN int pto_body_n(const int64_t* args, unsigned char* ws, int64_t bid, int64_t bnum,
                          int64_t* err, int64_t* counts)

``args`` holds the same i64 slots as the llvm backend's ABI (a global tensor: address, shape,
element strides; a tile parameter: its address; a scalar: an integer or the f64 bits of a
float). Local tiles live in ``ws`` (the block's shared memory on the GPU) at offsets fixed
here. Every thread of a block runs the body: scalars and control flow are computed by all of
them alike (block-uniform), while each tile instruction spreads the elements of its loop over
the threads and ends with ``PTO_SYNC()``. A failed check writes the fault record
(``pto_fail``) and returns 1; checks depend only on block-uniform values, so the whole block
returns together.

Two thin wrappers follow the bodies: an ``extern "C" __global__`` kernel (one thread block per
SPMD block, dynamic shared memory as the workspace) for the GPU, and an ``extern "C"`` host
entry running the blocks one after another (host emulation).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from ..maprules import MapRule
from ...assembler import scalar_ops as S
from ...assembler.ir import Const, For, If, Kernel, Lit, MemRef, Module, ScalarOp, Stmt, TileDecl, TileOp, Value, Yield
from ...isa import dtypes as dt
from ...isa.diagnostics import Location
from ...isa.spec import Kind
from ...isa.types import INDEX, EventType, GlobalType, ScalarType, TileType
from . import ctypes_ as C

WORKSPACE_ALIGN = 64
ERR_SLOTS = 8            # err[0] = site, err[1:8] = details; err[8] claim flag, err[9] failing block
ERR_WORDS = ERR_SLOTS + 2
MAX_DETAILS = 7


# --------------------------------------------------------------------------- ABI and faults

@dataclass(frozen=True)
class KernelABI:
    symbol: str                       # the __global__ kernel; the host entry is symbol + "_host"
    slots: Mapping[str, int]          # parameter name -> first argument slot
    nslots: int
    tile_offsets: Mapping[str, int]   # local tile name -> byte offset in the workspace
    workspace: int                    # bytes of shared memory per block
    counters: tuple[str, ...] = ()    # mnemonics counted, in the order of the counts array


@dataclass(frozen=True)
class FaultSite:
    """A check in generated code; ``expected``/``actual`` are ``str.format`` templates over the
    detail values (``{0}`` ...; ``{1+2}`` sums two: ``llvm.codegen.format_details``)."""

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
    params = {p.name for p in kernel.params}
    offsets: dict[str, int] = {}
    size = 0
    for name, t in kernel.tiles().items():
        if name in params:
            continue
        offsets[name] = size
        size += -(-max(t.rows * t.cols * t.dtype.itemsize, 1) // WORKSPACE_ALIGN) * WORKSPACE_ALIGN
    return KernelABI(symbol, slots, max(n, 1), offsets, size, counters)


# --------------------------------------------------------------------------- operands

class CTile:
    """A tile buffer in generated code: row-major storage of its static shape; ``vr``/``vc``
    are C expressions of its valid extents (literals when static)."""

    def __init__(self, name: str, type: TileType, ptr: str, vr: str, vc: str) -> None:
        self.name, self.type, self.ptr, self.vr, self.vc = name, type, ptr, vr, vc
        self.dtype: dt.DType = type.dtype
        self.rows, self.cols = type.shape

    def at(self, i: str, j: str) -> str:
        """The stored element (i, j) as an lvalue."""
        return f"{self.ptr}[({i}) * {self.cols} + ({j})]"

    def load(self, i: str, j: str) -> str:
        return C.load(self.dtype, self.at(i, j))

    def store(self, i: str, j: str, value: str) -> str:
        """A statement storing a compute value at (i, j), rounded once."""
        return f"{self.at(i, j)} = {C.store(self.dtype, value)};"


@dataclass(frozen=True)
class CGlobal:
    """A global tensor at an instruction's indices: address, shape, strides, offsets (C expressions)."""

    name: str
    type: GlobalType
    ptr: str
    shape: tuple[str, ...]
    strides: tuple[str, ...]
    offsets: tuple[str, ...]

    @property
    def dtype(self) -> dt.DType:
        return self.type.dtype


# --------------------------------------------------------------------------- the generator

class Gen:
    """Generates one kernel's body. Rules use ``line``/``block`` to emit C, ``tile``/``glob``/
    ``scalar``/``attrs`` for operands, ``fault``/``check_read``/``check_write`` for checks,
    ``elements``/``rows`` for thread-spread loops and ``fresh`` for names."""

    def __init__(self, kernel: Kernel, abi: KernelABI, rules: Mapping[str, Any], index: int,
                 filename: str | None = None) -> None:
        self.kernel, self.abi, self.rules, self.number = kernel, abi, rules, index
        self.filename = filename
        self.faults: list[FaultSite] = []
        self.lines: list[str] = []
        self.depth = 1
        self.decls: dict[str, str] = {}                 # C variable -> C type (declared up front)
        self.vars: dict[str, tuple[str, ScalarType]] = {}
        self.tiles: dict[str, CTile] = {}
        self.stmt_index = {id(s): i for i, s in enumerate(kernel.walk())}
        self.current: Stmt | None = None
        self._n = 0
        self._cnames: dict[str, str] = {}
        self._taken: set[str] = set()
        self.pre: list[str] = []
        self.counter_index = {m: k for k, m in enumerate(abi.counters)}

    # ------------------------------------------------------------------ emission
    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    @contextlib.contextmanager
    def block(self, head: str) -> Iterator[None]:
        self.line(head + " {")
        self.depth += 1
        yield
        self.depth -= 1
        self.line("}")

    def fresh(self, stem: str = "t") -> str:
        self._n += 1
        return f"{stem}{self._n}"

    def sync(self) -> None:
        self.line("PTO_SYNC();")

    @contextlib.contextmanager
    def elements(self, rows: str, cols: str) -> Iterator[tuple[str, str]]:
        """A loop over rows x cols elements spread over the block's threads; yields (i, j)."""
        e, n, c, i, j = (self.fresh(s) for s in ("e", "n", "c", "i", "j"))
        self.line(f"const int64_t {c} = {cols}, {n} = ({rows}) * {c};")
        with self.block(f"for (int64_t {e} = PTO_TID; {e} < {n}; {e} += PTO_NT)"):
            self.line(f"const int64_t {i} = {e} / {c}, {j} = {e} - {i} * {c};")
            yield i, j

    # ------------------------------------------------------------------ scalars
    def cvar(self, name: str) -> str:
        """The C identifier of PTO value ``name`` (deterministic, distinct per name)."""
        known = self._cnames.get(name)
        if known is None:
            stem = "v_" + "".join(ch if ch.isalnum() else "_" for ch in name)
            known = stem if stem not in self._taken else f"{stem}_{len(self._cnames)}"
            self._cnames[name] = known
            self._taken.add(known)
        return known

    def set_var(self, name: str, t: ScalarType, expr: str) -> None:
        if name not in self.vars:
            cv = self.cvar(name)
            self.vars[name] = (cv, t)
            self.decls[cv] = C.scalar(t)
        self.line(f"{self.vars[name][0]} = {expr};")

    def get_var(self, name: str) -> str:
        return self.vars[name][0]

    def value(self, v: Value | Lit | int, t: ScalarType = INDEX) -> str:
        if isinstance(v, Lit):
            return C.literal(v.value, v.type)
        if isinstance(v, int):
            return C.literal(v, t)
        return self.get_var(v.name)

    def index(self, v: Value | Lit | int) -> str:
        """An index-like operand of any integer type as its int64_t value (a u64 above
        2^63 - 1 saturates, as the llvm backend reads it)."""
        t = v.type if isinstance(v, (Value, Lit)) and isinstance(v.type, ScalarType) else INDEX
        x = self.value(v, t)
        if t.name == "u64":
            return f"((int64_t)({x}) < 0 ? (int64_t)0x7fffffffffffffffLL : (int64_t)({x}))"
        return f"(int64_t)({x})"

    def scalar(self, op: TileOp, name: str) -> str | None:
        a = op.args.get(name)
        if a is None:
            return None
        if op.instr.operand(name).kind is Kind.INDEX:
            return self.index(a)   # type: ignore[arg-type]
        return self.value(a)   # type: ignore[arg-type]

    @staticmethod
    def attrs(op: TileOp) -> dict[str, Any]:
        return op.instr.with_defaults(op.attrs)

    # ------------------------------------------------------------------ tiles and globals
    def tile(self, v: Value | TileOp, name: str | None = None) -> CTile:
        if isinstance(v, TileOp):
            v = v.args[name]   # type: ignore[assignment,index]
        return self.tiles[v.name]   # type: ignore[union-attr]

    def glob(self, op: TileOp, name: str) -> CGlobal:
        m: MemRef = op.args[name]   # type: ignore[assignment]
        t: GlobalType = m.base.type   # type: ignore[assignment]
        s = self.abi.slots[m.base.name]
        ptr = f"(({C.storage(t.dtype)}*)(uintptr_t)args[{s}])"
        shape = tuple(f"args[{s + 1 + d}]" for d in range(t.rank))
        strides = tuple(f"args[{s + 1 + t.rank + d}]" for d in range(t.rank))
        return CGlobal(m.base.name, t, ptr, shape, strides, tuple(self.index(i) for i in m.indices))

    def window(self, g: CGlobal, rows: str, cols: str, what: str) -> tuple[str, str, str]:
        """Check that a rows x cols window at the offsets fits (RUNTIME_OOB, as the reference's
        ``GlobalRef.window``); returns C names of (origin pointer, row stride, col stride)."""
        if g.type.rank == 1:
            shape, strides, offs = ("1",) + g.shape, ("0",) + g.strides, ("0",) + g.offsets
        else:
            shape, strides, offs = g.shape, g.strides, g.offsets
        n = len(shape)
        for d in range(n):
            extent = rows if d == n - 2 else cols if d == n - 1 else "1"
            dim = d if g.type.rank > 1 else d - 1
            self.fault(f"pto_outside({offs[d]}, {extent}, {shape[d]})", "RUNTIME_OOB",
                       f"{what} accessed out of bounds in dim {max(dim, 0)}",
                       expected="indices in [0, {0})", actual="[{1}, {1+2})", details=[shape[d], offs[d], extent])
        flat = " + ".join(f"({offs[d]}) * ({strides[d]})" for d in range(n))
        o, rs, cs = self.fresh("g"), self.fresh("rs"), self.fresh("cs")
        self.line(f"{C.storage(g.dtype)}* const {o} = {g.ptr} + ({flat});")
        self.line(f"const int64_t {rs} = {strides[n - 2]}, {cs} = {strides[n - 1]};")
        return o, rs, cs

    # ------------------------------------------------------------------ checks
    def location(self) -> Location:
        s = self.current
        loc = getattr(s, "loc", None)
        index = self.stmt_index.get(id(s)) if s is not None else None
        if loc is None:
            return Location(self.filename, None, None, self.kernel.name, index)
        return Location(loc.file, loc.line, loc.col, self.kernel.name, index, loc.source_line)

    def fault(self, cond: str, code: str, message: str, expected: str | None = None,
              actual: str | None = None, details: Sequence[str] = ()) -> None:
        """When ``cond`` (a block-uniform C condition) holds, stop the block with this fault."""
        mnemonic = self.current.instr.mnemonic if isinstance(self.current, TileOp) else None
        text = f"{mnemonic}: {message}" if mnemonic and not message.startswith(mnemonic) else message
        self.faults.append(FaultSite(code, text, self.location(), expected, actual))
        ds = [f"(int64_t)({d})" for d in details[:MAX_DETAILS]] + ["0"] * (MAX_DETAILS - len(details[:MAX_DETAILS]))
        with self.block(f"if ({cond})"):
            self.line(f"pto_fail(err, bid, {len(self.faults)}, {', '.join(ds)});")
            self.line("return 1;")

    def check_read(self, t: CTile, rows: str, cols: str, what: str) -> None:
        """RUNTIME_INVALID_READ unless the rows x cols prefix lies in ``t``'s valid region."""
        self.fault(f"({rows}) > {t.vr} || ({cols}) > {t.vc}", "RUNTIME_INVALID_READ",
                   f"{what} is read outside its valid region",
                   expected="domain {0}x{1} inside the valid region", actual="valid region {2}x{3}",
                   details=[rows, cols, t.vr, t.vc])

    def check_write(self, t: CTile, rows: str, cols: str, what: str) -> None:
        self.fault(f"({rows}) > {t.vr} || ({cols}) > {t.vc}", "RUNTIME_INVALID_WRITE",
                   f"{what} is written outside its valid region",
                   expected="a {0}x{1} block inside the valid region", actual="valid region {2}x{3}",
                   details=[rows, cols, t.vr, t.vc])

    # ------------------------------------------------------------------ driving
    def generate(self) -> str:
        """The body function's C source."""
        self._setup()
        self.run_block(self.kernel.body, ())
        self.line(f"pto_count(counts, cnt, {max(len(self.abi.counters), 1)});")
        self.line("return 0;")
        head = [f"PTO_FN int pto_body_{self.number}(const int64_t* args, unsigned char* ws, int64_t bid, "
                "int64_t bnum, int64_t* err, int64_t* counts) {",
                f"    int64_t cnt[{max(len(self.abi.counters), 1)}] = {{0}};",
                "    (void)ws; (void)bnum;"]
        head += [f"    {ty} {cv} = 0;" for cv, ty in self.decls.items()]
        return "\n".join(head + self.pre + self.lines + ["}"])

    def _setup(self) -> None:
        pre: list[str] = []
        params = {p.name for p in self.kernel.params}
        for p in self.kernel.params:
            t, s = p.type, self.abi.slots[p.name]
            if isinstance(t, TileType):
                self.tiles[p.name] = self._tile_ref(p.name, t, f"(({C.storage(t.dtype)}*)(uintptr_t)args[{s}])", pre)
            elif isinstance(t, ScalarType):
                cv = self.cvar(p.name)
                self.vars[p.name] = (cv, t)
                self.decls[cv] = C.scalar(t)
                if t.is_float:
                    expr = f"(float)pto_u2d((uint64_t)args[{s}])"
                elif t.name == "i1":
                    expr = f"(args[{s}] != 0)"
                else:
                    expr = f"({C.scalar(t)})args[{s}]"
                pre.append(f"    {cv} = {expr};")
            elif isinstance(t, EventType):
                continue
        for name, t in self.kernel.tiles().items():
            if name in params:
                continue
            ptr = f"(({C.storage(t.dtype)}*)(ws + {self.abi.tile_offsets[name]}))"
            self.tiles[name] = self._tile_ref(name, t, ptr, pre)
        self.pre = pre

    def _tile_ref(self, name: str, t: TileType, ptr: str, pre: list[str]) -> CTile:
        cp = "tp_" + self.cvar("tile." + name)[2:]
        pre.append(f"    {C.storage(t.dtype)}* const {cp} = {ptr};")
        pre.append(f"    (void){cp};")
        if t.dynamic or any(isinstance(s, TileDecl) and s.keep and s.value.name == name for s in self.kernel.walk()):
            vr, vc = cp + "_vr", cp + "_vc"
            self.decls[vr] = self.decls[vc] = "int64_t"
            pre.append(f"    {vr} = {t.rows if t.valid_rows is None else t.valid_rows};")
            pre.append(f"    {vc} = {t.cols if t.valid_cols is None else t.valid_cols};")
            return CTile(name, t, cp, vr, vc)
        return CTile(name, t, cp, str(t.valid_rows), str(t.valid_cols))

    def run_block(self, body: Sequence[Stmt], targets: Sequence[Value]) -> None:
        pending: list[TileOp] = []
        for s in body:
            rule = self.rules.get(s.instr.mnemonic) if isinstance(s, TileOp) else None
            if isinstance(rule, MapRule):
                if pending and not fusable(pending, s, self.rules):
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
        self.set_var(s.result.name, s.result.type, C.literal(s.value, s.result.type))   # type: ignore[arg-type]

    def _tiledecl(self, s: TileDecl, targets: Sequence[Value]) -> None:
        t: TileType = s.value.type   # type: ignore[assignment]
        ref = self.tiles[s.value.name]
        if ref.vr.isdigit():
            return
        r = self.index(s.valid_rows) if s.valid_rows is not None else str(t.rows if t.valid_rows is None else t.valid_rows)
        c = self.index(s.valid_cols) if s.valid_cols is not None else str(t.cols if t.valid_cols is None else t.valid_cols)
        rv, cv = self.fresh("vr"), self.fresh("vc")
        self.line(f"const int64_t {rv} = {r}, {cv} = {c};")
        self.fault(f"{rv} < 0 || {rv} > {t.rows} || {cv} < 0 || {cv} > {t.cols}", "RUNTIME_VALID_REGION",
                   f"valid region of %{s.value.name} exceeds the tile", expected=f"<= {t.rows}x{t.cols}",
                   actual="{0}x{1}", details=[rv, cv])
        self.line(f"{ref.vr} = {rv}; {ref.vc} = {cv};")

    def _scalarop(self, s: ScalarOp, targets: Sequence[Value]) -> None:
        from .scalars import scalar_op
        rt: ScalarType = s.result.type   # type: ignore[assignment]
        spec = S.SCALAR_OPS[s.op]
        if spec.cls == "block":
            v = {"get_block_idx": "bid", "get_block_num": "bnum", "get_subblock_idx": "(int64_t)0",
                 "get_subblock_num": "(int64_t)1"}[s.op]
        else:
            v = scalar_op(self, s, [self.get_var(o.name) for o in s.operands])
        self.set_var(s.result.name, rt, v)

    def _yield(self, s: Yield, targets: Sequence[Value]) -> None:
        tmps = []
        for t, v in zip(targets, s.values):      # every value read before any target is written
            tv = self.fresh("y")
            self.line(f"const {C.scalar(t.type)} {tv} = {self.value(v)};")   # type: ignore[arg-type]
            tmps.append(tv)
        for t, tv in zip(targets, tmps):
            self.set_var(t.name, t.type, tv)   # type: ignore[arg-type]

    def _for(self, s: For, targets: Sequence[Value]) -> None:
        t: ScalarType = s.iv.type   # type: ignore[assignment]
        ct = C.scalar(t)
        lo, hi, step = (self.fresh(n) for n in ("lo", "hi", "st"))
        self.line(f"const {ct} {lo} = {self.value(s.lb, t)}, {hi} = {self.value(s.ub, t)}, "
                  f"{step} = {self.value(s.step, t)};")
        signed = C.is_signed(t)
        self.fault(f"{step} <= 0" if signed else f"{step} == 0", "RUNTIME_LOOP_STEP", "loop step must be positive",
                   expected="step > 0", actual="{0}", details=[step])
        inits = [self.value(v) for v in s.inits]
        tmps = []
        for a, v in zip(s.iter_args, inits):
            tv = self.fresh("in")
            self.line(f"const {C.scalar(a.type)} {tv} = {v};")   # type: ignore[arg-type]
            tmps.append(tv)
        for a, tv in zip(s.iter_args, tmps):
            self.set_var(a.name, a.type, tv)   # type: ignore[arg-type]
        iv = self.fresh("iv")
        # the latch never forms a value past hi: continue while step < hi - iv (unsigned)
        with self.block(f"if ({lo} < {hi})"):
            with self.block(f"for ({ct} {iv} = {lo};;)"):
                self.set_var(s.iv.name, t, iv)
                self.run_block(s.body, s.iter_args)
                self.line(f"if (!((uint64_t)({step}) < (uint64_t)({hi}) - (uint64_t)({iv}))) break;")
                self.line(f"{iv} = ({ct})({iv} + {step});")
        for r, a in zip(s.results, s.iter_args):
            self.set_var(r.name, r.type, self.get_var(a.name))   # type: ignore[arg-type]

    def _if(self, s: If, targets: Sequence[Value]) -> None:
        with self.block(f"if ({self.get_var(s.cond.name)})"):
            self.run_block(s.then_body, s.results)
        with self.block("else"):
            self.run_block(s.else_body, s.results)

    def _tileop(self, s: TileOp, targets: Sequence[Value]) -> None:
        self.count(s)
        with self.block(""):
            self.rules[s.instr.mnemonic](self, s)
        self.sync()

    def count(self, s: TileOp) -> None:
        self.line(f"cnt[{self.counter_index[s.instr.mnemonic]}] += 1;")

    # ------------------------------------------------------------------ fused elementwise groups
    def _maps(self, ops: list[TileOp]) -> None:
        rules = [self.rules[o.instr.mnemonic].for_op(o) for o in ops]
        with self.block(""):
            for op in ops:
                self.count(op)
            dst0 = self.tile(ops[0], rules[0].dst)
            r, c = dst0.vr, dst0.vc
            for op, rule in zip(ops, rules):        # every check before any element is computed
                self.current = op
                for acc in rule.reads:
                    if acc.kind == "scalar" or acc.operand not in op.args:
                        continue
                    t = self.tile(op, acc.operand)
                    need_r = r if acc.kind != "col" else f"({r} < 1 ? {r} : 1)"
                    need_c = c if acc.kind not in ("row", "block") else f"({c} < 1 ? {c} : 1)"
                    self.check_read(t, need_r, need_c, acc.what or acc.operand)
                if rule.check is not None:
                    rule.check(self, op)
            scalars = []
            for op, rule in zip(ops, rules):
                row = []
                for a in rule.reads:
                    if a.kind == "scalar":
                        sv = self.fresh("s")
                        ty = self.value_type(op, a.operand)
                        self.line(f"const {ty} {sv} = {self.scalar(op, a.operand)};")
                        row.append(sv)
                    else:
                        row.append(None)
                scalars.append(row)
            with self.elements(r, c) as (i, j):
                current: dict[str, tuple[str, str]] = {}     # tile -> (stored bits, compute value)
                for k, (op, rule) in enumerate(zip(ops, rules)):
                    self.current = op
                    vals: list[Any] = []
                    for a, sv in zip(rule.reads, scalars[k]):
                        if a.kind == "scalar":
                            vals.append(sv)
                            continue
                        if a.operand not in op.args:
                            vals.append(None)
                            continue
                        t = self.tile(op, a.operand)
                        if a.kind == "elem":
                            fwd = current.get(t.name)
                            if fwd is not None:
                                vals.append(fwd[0] if a.raw else fwd[1])
                            else:
                                vals.append(t.at(i, j) if a.raw else t.load(i, j))
                        elif a.kind == "row":
                            vals.append(t.load(i, "0"))
                        elif a.kind == "block":
                            vals.append(t.load(i, f"({j}) % {t.vc}"))
                        else:
                            vals.append(t.load("0", j))
                    out = rule.fn(self, op, vals)
                    d = self.tile(op, rule.dst)
                    bits, val = self.fresh("b"), self.fresh("v")
                    self.line(f"const {C.storage(d.dtype)} {bits} = "
                              f"{out if rule.raw_result else C.store(d.dtype, out)};")
                    self.line(f"{d.at(i, j)} = {bits};")
                    self.line(f"const {C.compute(d.dtype)} {val} = {C.load(d.dtype, bits)}; (void){val};")
                    current[d.name] = (bits, val)
        self.sync()

    def value_type(self, op: TileOp, name: str) -> str:
        """The C type ``scalar(op, name)`` has."""
        if op.instr.operand(name).kind is Kind.INDEX:
            return "int64_t"
        a = op.args[name]
        return C.scalar(a.type)   # type: ignore[union-attr,arg-type]


def _domain_key(op: TileOp, rule: MapRule) -> tuple[Any, Any]:
    v = op.args[rule.dst]
    t: TileType = v.type   # type: ignore[union-attr]
    return (t.valid_rows if t.valid_rows is not None else ("dyn", v.name),   # type: ignore[union-attr]
            t.valid_cols if t.valid_cols is not None else ("dyn", v.name))   # type: ignore[union-attr]


def fusable(group: list[TileOp], op: TileOp, rules: Mapping[str, Any]) -> bool:
    """May ``op`` join the fused loop of ``group``? Same domain; no per-row/per-column operand of
    the group or of op is written by op; and op reads no tile a member writes other than at its
    own element (threads share the loop: another element may not have been computed yet)."""
    rule: MapRule = rules[op.instr.mnemonic].for_op(op)
    first = group[0]
    if _domain_key(first, rules[first.instr.mnemonic].for_op(first)) != _domain_key(op, rule):
        return False
    written = op.args[rule.dst].name   # type: ignore[union-attr]
    for g in (*group, op):
        for a in rules[g.instr.mnemonic].for_op(g).reads:
            if a.kind in ("row", "col", "block") and getattr(g.args.get(a.operand), "name", None) == written:
                return False
    earlier = {g.args[rules[g.instr.mnemonic].for_op(g).dst].name for g in group}   # type: ignore[union-attr]
    for a in rule.reads:
        if a.kind in ("row", "col", "block") and getattr(op.args.get(a.operand), "name", None) in earlier:
            return False
    return True


# --------------------------------------------------------------------------- the unit

def generate(module: Module, rules: Mapping[str, Any], filename: str | None = None
             ) -> tuple[str, dict[str, KernelABI], dict[str, list[FaultSite]]]:
    """The CUDA C++ source of every kernel of ``module``, each kernel's ABI and fault sites."""
    parts = ['#include "runtime.cuh"', ""]
    abis: dict[str, KernelABI] = {}
    faults: dict[str, list[FaultSite]] = {}
    for n, k in enumerate(module.kernels):
        abi = abi_for(k, f"pto_kernel_{n}")
        g = Gen(k, abi, rules, n, filename)
        parts.append(f"// @{k.name}")
        parts.append(g.generate())
        parts.append(_wrappers(n, abi))
        abis[k.name], faults[k.name] = abi, g.faults
    return "\n".join(parts) + "\n", abis, faults


def _wrappers(n: int, abi: KernelABI) -> str:
    return f"""
#ifdef PTO_HOST
extern "C" int {abi.symbol}_host(const int64_t* args, unsigned char* ws, int64_t first, int64_t count,
                                 int64_t bnum, int64_t* err, int64_t* counts) {{
    for (int64_t b = first; b < first + count; ++b)
        if (pto_body_{n}(args, ws, b, bnum, err, counts)) return 1;
    return 0;
}}
#else
extern "C" __global__ void {abi.symbol}(const int64_t* args, int64_t first, int64_t bnum, int64_t* err,
                                       int64_t* counts) {{
    extern __shared__ __align__(64) unsigned char pto_ws[];
    pto_body_{n}(args, pto_ws, first + (int64_t)blockIdx.x, bnum, err, counts);
}}
#endif
"""
