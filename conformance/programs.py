"""Random multi-instruction programs for conformance level 3, built from the spec.

A kernel walks a tensor in blocks of ``R`` rows (``scf.for`` up to an index parameter,
carrying the rows still to do and a scalar in ``iter_args``). Each block's tiles get a
run-time valid row count (short last block), are loaded from the inputs and go through a
random chain of instructions, one step possibly in both arms of an ``scf.if``; every tile the
chain writes is stored, and a per-column accumulator tile carried across the loop is
stored after it. The instructions come from the declarations: each one's legal base case
(``conformance.cases``) is re-shaped onto the kernel's block so that every tile operand is
a full block (R x C), a per-row vector (R x 1) or a per-column vector (1 x C); what the
checks then accept can be chained. Nothing here names an instruction except the loads and
stores the scaffold needs.

Some kernels are matrix pipelines instead (``matrix_programs``: mat -> left/right -> acc,
accumulating in place over K), and ``programs(require=...)`` draws modules that have a
feature by construction (a pipeline per accumulating form; an in-place elementwise chain),
which level 3 checks in every run before the random ones.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from ..assembler import parse
from ..assembler.ir import (Const, For, If, Kernel, Lit, MemRef, Module, ScalarOp, Stmt, TileDecl, TileOp,
                            Value, Yield, make_lit)
from ..assembler.verifier import verify
from ..isa import dtypes as dt
from ..isa import hifloat8
from ..isa.diagnostics import PTOError
from ..isa.registry import get
from ..isa.spec import Domain, Family, Instruction, Kind, Role
from ..isa.types import INDEX, GlobalLayout, GlobalType, Layout, Location, PadValue, ScalarType, TileType, Type
from . import matrix_programs as MP
from .cases import Case, base_cases, instructions, varied

#: block shapes (rows, columns) a kernel may use; rows stay multiples of 16 so per-row
#: vectors of 2-byte types meet 32-byte alignment
SHAPES = ((16, 16), (16, 32), (32, 16), (32, 32))
#: operands whose values address memory: random data would only test the bounds rules
DATA_AS_INDEX = frozenset({"idx", "offsets"})
#: families whose instructions may write one of their sources (docs/isa/decisions.md,
#: decision 17: in-place use is legal for elementwise instructions)
IN_PLACE = frozenset({Family.ELEMENTWISE, Family.TILE_SCALAR})
MAX_STEPS = 6
#: float types held as codes (``dt.CODED``): value -> code, rounding to nearest
CODECS: dict[dt.DType, Callable[[np.ndarray], np.ndarray]] = {dt.HIF8: hifloat8.encode}

Allow = Callable[[Instruction, Mapping[str, Type]], bool]
I1 = ScalarType("i1")


# --------------------------------------------------------------------------- templates

@dataclass(frozen=True)
class Template:
    """One instruction on a kernel's block shape: operand types fixed, attributes from the
    base case (varied when drawn). The operand lists are worked out once (``of``)."""

    case: Case
    inputs: tuple[tuple[str, TileType], ...]
    output: tuple[str, TileType]
    scalars: tuple[tuple[str, ScalarType], ...]
    indices: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, case: Case) -> "Template":
        ops, types = case.instr.operands, case.types

        def tiles(*roles: Role) -> tuple[tuple[str, TileType], ...]:
            return tuple((o.name, types[o.name]) for o in ops  # type: ignore[misc]
                         if o.role in roles and isinstance(types.get(o.name), TileType))
        return cls(case, tiles(Role.IN), tiles(Role.OUT)[0],
                   tuple((o.name, types[o.name]) for o in ops  # type: ignore[misc]
                         if o.kind is Kind.SCALAR and o.name in types),
                   tuple((o.name, int(case.scalars.get(o.name, 0))) for o in ops
                         if o.kind is Kind.INDEX and o.name in types))

    @property
    def instr(self) -> Instruction:
        return self.case.instr

    @property
    def in_place(self) -> bool:
        return self.instr.family in IN_PLACE


def block_types(rows: int, cols: int, d: dt.DType) -> tuple[TileType, TileType, TileType]:
    """(full block, per-row vector, per-column vector) tile types of a kernel's block."""
    return (TileType(rows, cols, d, valid_rows=None, valid_cols=cols),
            TileType(rows, 1, d, layout=Layout.DN, valid_rows=None, valid_cols=1),
            TileType(1, cols, d))


def _reshaped(t: TileType, big: tuple[int, int], rows: int, cols: int) -> TileType | None:
    """``t`` moved onto the block: full, per-row or per-column by its shape in the case."""
    if t.loc is not Location.VEC:
        return None
    if t.shape == big:
        return dataclasses.replace(t, rows=rows, cols=cols, valid_rows=None if rows > 1 else 1, valid_cols=cols)
    if t.cols == 1 and t.rows == big[0]:
        return dataclasses.replace(t, rows=rows, cols=1, valid_rows=None, valid_cols=1)
    if t.rows == 1 and t.cols == big[1]:
        return dataclasses.replace(t, rows=1, cols=cols, valid_rows=1, valid_cols=cols)
    return None


def _storable(t: TileType) -> bool:
    """Full blocks and column vectors are row-major, row vectors either layout."""
    return t.pad is PadValue.NULL and (t.layout is Layout.ND or t.cols == 1)


def _template(instr: Instruction, case: Case, rows: int, cols: int, vector: bool) -> Template | None:
    """``case`` on the block; ``vector``: an all-full-tile case on column vectors instead
    (so column vectors can be combined, e.g. into the loop-carried accumulator)."""
    tiles = {n: t for n, t in case.types.items() if isinstance(t, TileType)}
    big = (max(t.rows for t in tiles.values()), max(t.cols for t in tiles.values()))
    types = dict(case.types)
    for o in instr.operands:
        if o.optional and o.role is Role.IN and o.name in types:
            del types[o.name]          # scratch operands: a backend's business
    for n in list(types):
        if n in tiles:
            if vector and tiles[n].shape != big:
                return None
            t = _reshaped(tiles[n], big, 1 if vector else rows, cols)
            if t is None or not _storable(t):
                return None
            types[n] = t
    shaped = dataclasses.replace(case, types=types)
    if shaped.errors():
        return None
    tpl = Template.of(shaped)
    if instr.domain is Domain.DST and tpl.output[1].valid_rows is not None \
            and any(t.valid_rows is None for _, t in tpl.inputs):
        return None     # a fixed destination region read from a block's (maybe short) rows
    return tpl


def _usable(instr: Instruction) -> bool:
    """Instructions a chain can use: they compute one destination tile over a valid
    region, with a tested numerics contract, from tiles and scalars only."""
    kinds = {o.kind for o in instr.operands}
    written = [o.role for o in instr.operands if o.kind is Kind.TILE and o.role is not Role.IN]
    return (instr.domain in (Domain.DST, Domain.SRC) and instr.numerics.kind != "unspecified"
            and kinds <= {Kind.TILE, Kind.SCALAR, Kind.INDEX} and written == [Role.OUT]
            and not DATA_AS_INDEX & {o.name for o in instr.operands})


@functools.lru_cache(maxsize=None)
def templates(profile: str, rows: int, cols: int) -> tuple[Template, ...]:
    """Every instruction x dtype tuple of the profile usable on an ``rows x cols`` block."""
    out = []
    for instr in instructions(profile):
        if not _usable(instr):
            continue
        for case in base_cases(instr, profile).values():
            if case is None or not any(isinstance(t, TileType) for t in case.types.values()):
                continue
            for vector in (False, True):
                t = _template(instr, case, rows, cols, vector)
                if t is not None:
                    out.append(t)
    return tuple(out)


class Library:
    """The templates a backend allows on one block shape, grouped by the tile types they
    read so a step finds its candidates without testing every template."""

    def __init__(self, profile: str, rows: int, cols: int, allow: Allow | None) -> None:
        self.templates = [t for t in templates(profile, rows, cols)
                          if allow is None or allow(t.instr, t.case.types)]
        self.groups: dict[frozenset[TileType], list[Template]] = {}
        for t in self.templates:
            self.groups.setdefault(frozenset(ty for _, ty in t.inputs), []).append(t)

    def candidates(self, have: set[TileType], output: TileType | None = None) -> list[Template]:
        """Templates whose inputs are all among ``have`` (writing ``output`` when given)."""
        return [t for needs, ts in self.groups.items() if needs <= have for t in ts
                if output is None or t.output[1] == output]


def move_cases(profile: str, d: dt.DType, rows: int, cols: int) -> list[Case]:
    """The loads and stores a kernel's scaffold uses on ``d``: full blocks and column
    vectors in, full blocks and both vectors out."""
    g, gv = GlobalType((None, cols), d), GlobalType((None, 1), d, layout=GlobalLayout.DN)
    full, row, col = block_types(rows, cols, d)
    return ([Case(get("TLOAD"), profile, {"dst": t, "src": g}) for t in (full, col)]
            + [Case(get("TSTORE"), profile, {"dst": gl, "src": t}) for gl, t in ((g, full), (gv, row), (g, col))])


@functools.lru_cache(maxsize=None)
def kernel_dtypes(profile: str, rows: int, cols: int) -> tuple[dt.DType, ...]:
    """Element types a kernel's inputs may have: loadable, storable, and read as full
    blocks by some template (f32 first, so shrinking goes there)."""
    full_inputs = {t.dtype for tpl in templates(profile, rows, cols) for _, t in tpl.inputs
                   if t.shape == (rows, cols)}
    order = {d: i for i, d in enumerate(dt.ALL + dt.CODED)}
    found = [d for d in full_inputs if d.kind != "bool"
             and not any(c.errors() for c in move_cases(profile, d, rows, cols))]
    return tuple(sorted(found, key=lambda d: (d is not dt.F32, order[d])))


def block_options(profile: str, allow: Allow | None = None) -> list[tuple[int, int, dt.DType]]:
    """(rows, cols, dtype) a kernel may use on ``profile`` whose loads and stores ``allow``
    admits; empty when a backend cannot run the scaffold at all."""
    return [(r, c, d) for r, c in SHAPES for d in kernel_dtypes(profile, r, c)
            if allow is None or all(allow(m.instr, m.types) for m in move_cases(profile, d, r, c))]


# --------------------------------------------------------------------------- arguments

@dataclass(frozen=True)
class Argument:
    """One kernel parameter's value: an input array (random), an output array (filled with
    a sentinel), or a scalar (random, or ``value`` when fixed)."""

    name: str
    kind: str                         # "in" | "out" | "scalar"
    dtype: str
    shape: tuple[int, ...] = ()
    value: Any = None


@dataclass(frozen=True)
class KernelArgs:
    """How to call one kernel: its arguments, made afresh from ``seed`` on each call."""

    kernel: str
    args: tuple[Argument, ...]
    seed: int
    rows: int                         # the row-loop bound
    block: int                        # rows per iteration

    @property
    def trips(self) -> int:
        return -(-self.rows // self.block)

    def make(self) -> dict[str, Any]:
        rng = np.random.default_rng(self.seed)
        return {a.name: _argument(a, rng) for a in self.args}


def random_values(shape: tuple[int, ...], d: dt.DType, rng: np.random.Generator) -> np.ndarray:
    """Ordinary finite values: floats of magnitude 1/4..2 with either sign (so sums,
    products and quotients keep meaningful accuracy), small integers, random masks."""
    if d.kind == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if d.is_float:
        mag = rng.uniform(0.25, 2.0, shape)
        values = mag * rng.choice((-1.0, 1.0), shape)
        return CODECS[d](values) if d in CODECS else values.astype(d.np_dtype)
    lo = -20 if d.kind == "int" else 0
    return rng.integers(lo, lo + 41, shape).astype(d.np_dtype)


def _sentinel(shape: tuple[int, ...], d: dt.DType) -> np.ndarray:
    """What outputs hold before a run: NaN for floats, a fixed pattern for integers (and
    for the codes of coded floats)."""
    if d.is_float and d not in dt.CODED:
        return np.full(shape, np.nan, d.np_dtype)
    return np.full(shape, 0x5A if d.kind != "bool" else 0, np.int64).astype(d.np_dtype)


def _argument(a: Argument, rng: np.random.Generator) -> Any:
    d = dt.get(a.dtype) if a.dtype != "index" else dt.I64
    if a.kind == "in":
        return random_values(a.shape, d, rng)
    if a.kind == "out":
        return _sentinel(a.shape, d)
    if a.value is not None:
        return a.value
    if d.kind == "bool":
        return bool(rng.integers(0, 2))
    if d.is_float:
        return float(d.np_dtype.type(rng.uniform(0.5, 2.0) * rng.choice((-1.0, 1.0))))
    return int(rng.integers(1, 6))


@dataclass(frozen=True)
class Program:
    """A generated module (canonical PTO-AS text) and how to call each of its kernels."""

    text: str
    kernels: tuple[KernelArgs, ...]


# --------------------------------------------------------------------------- kernel builder

def _fits(value: Any, t: ScalarType) -> bool:
    try:
        make_lit(value, t)
    except ValueError:
        return False
    return True


class _Kernel:
    """Accumulates one kernel's parameters, declarations and statements while drawing."""

    def __init__(self, draw: st.DrawFn, name: str, rows: int, cols: int, d: dt.DType, library: Library,
                 chain: bool = False) -> None:
        self.draw, self.name, self.chain = draw, name, chain
        self.R, self.C, self.d = rows, cols, d
        self.params: list[Value] = []
        self.args: list[Argument] = []
        self.top: list[Stmt] = []                  # before the loop: consts, static tiles
        self.decls: list[Stmt] = []                # in the loop: dynamic tiles
        self.body: list[Stmt] = []
        self.pool: dict[TileType, list[Value]] = {}
        self.written: list[Value] = []             # tiles the chain wrote (to be stored)
        self.counter = itertools.count()
        self.library = library
        self.templates = library.templates
        self.c0 = self.const("c0", 0, INDEX)
        self.cR = self.const("cR", rows, INDEX)
        self.vr = Value("vr", INDEX)
        self.r = Value("r", INDEX)
        self.left = Value("left", INDEX)
        self.carried = ScalarType(d.name if d.is_int or ScalarType(d.name).is_float else "f32")
        self.s = Value("s", self.carried)

    # ---- names and declarations
    def fresh(self, prefix: str) -> str:
        return f"{prefix}{next(self.counter)}"

    def const(self, name: str, value: Any, t: ScalarType) -> Value:
        v = Value(name, t)
        self.top.append(Const(v, value))
        return v

    def param(self, name: str, t: Type, arg: Argument) -> Value:
        v = Value(name, t)
        self.params.append(v)
        self.args.append(arg)
        return v

    def tile(self, t: TileType) -> Value:
        """A new tile buffer of type ``t``: declared per iteration when its valid rows are
        the block's, once before the loop otherwise."""
        v = Value(self.fresh("t"), t)
        if t.valid_rows is None:
            self.decls.append(TileDecl(v, valid_rows=self.vr))
        else:
            self.top.append(TileDecl(v))
        return v

    def scalar_operand(self, t: ScalarType, case: Case, name: str) -> Value:
        """The loop-carried scalar, a fresh parameter, or the example's constant."""
        choices = ["param"] + (["carried"] if t == self.carried else [])
        if name in case.scalars and not t.is_float and _fits(case.scalars[name], t):
            choices.append("const")     # integer operands (shift counts ...) keep the spec's value
        how = self.draw(st.sampled_from(choices))
        if how == "carried":
            return self.s
        if how == "const":
            return self.const(self.fresh("k"), int(case.scalars[name]), t)
        name = self.fresh("p")
        return self.param(name, t, Argument(name, "scalar", t.name))

    # ---- chain steps
    def candidates(self, output: TileType | None = None) -> list[Template]:
        return self.library.candidates(set(self.pool), output)

    def sources(self, tpl: Template, t: TileType, dst: Value | None) -> list[Value]:
        """Pool tiles of type ``t`` that ``tpl`` may read while writing ``dst`` (latest
        first): only in-place families may read their destination."""
        return [v for v in self.pool.get(t, [])[::-1] if tpl.in_place or v != dst]

    def feasible(self, tpl: Template, dst: Value) -> bool:
        return all(self.sources(tpl, t, dst) for _, t in tpl.inputs)

    def op(self, tpl: Template, dst: Value | None = None, fixed: Mapping[str, Value] | None = None) -> TileOp:
        """``tpl`` with operands ``fixed`` or drawn (tiles from the pool, scalars as
        ``scalar_operand`` says) and a destination: ``dst``, or (in-place families, when
        drawn so) one of its inputs, or a fresh buffer."""
        case = self.draw(varied(tpl.case)) if tpl.instr.attrs else tpl.case
        attrs = dict(case.attrs) if not dataclasses.replace(tpl.case, attrs=case.attrs).errors() \
            else dict(tpl.case.attrs)
        args: dict[str, Any] = dict(fixed or {})
        for name, t in tpl.inputs:
            if name not in args:
                args[name] = self.draw(st.sampled_from(self.sources(tpl, t, dst)))
        for name, t in tpl.scalars:
            if name not in args:
                args[name] = self.scalar_operand(t, tpl.case, name)
        args.update({name: Lit(value, INDEX) for name, value in tpl.indices})
        out_name, out_t = tpl.output
        if dst is None:
            same = [v for v in args.values() if isinstance(v, Value) and v.type == out_t]
            if tpl.in_place and same and self.draw(st.booleans()):
                dst = self.draw(st.sampled_from(same))
            else:
                dst = self.tile(out_t)
        args[out_name] = dst
        return TileOp(tpl.instr, args, attrs)

    def wrote(self, v: Value) -> None:
        self.pool.setdefault(v.type, [])  # type: ignore[arg-type]
        if v not in self.pool[v.type]:  # type: ignore[index]
            self.pool[v.type].append(v)  # type: ignore[index]
        if v not in self.written:
            self.written.append(v)
        self.latest = v

    def pick_template(self, options: list[Template]) -> Template:
        """Mostly an instruction that reads the latest tile (so steps chain), else any; the
        mnemonic first, then its dtype variant, so instructions with many variants do not
        crowd out the rest."""
        chained = [t for t in options if any(ty == self.latest.type for _, ty in t.inputs)]
        if chained and self.draw(st.integers(0, 3)):
            options = chained
        names = sorted({t.instr.mnemonic for t in options})
        name = self.draw(st.sampled_from(names))
        return self.draw(st.sampled_from([t for t in options if t.instr.mnemonic == name]))

    def step(self) -> None:
        """One instruction, or (sometimes) an ``scf.if`` whose arms write the same buffer."""
        options = self.candidates()
        if not options:
            return
        tpl = self.pick_template(options)
        first = self.op(tpl)
        dst = first.args[tpl.output[0]]
        others = [t for t in self.candidates(tpl.output[1]) if self.feasible(t, dst)]
        if others and self.draw(st.integers(0, 3)) == 0:
            second = self.op(self.pick_template(others), dst)
            self.body.append(If(self.condition(), (first,), (second,)))
        else:
            self.body.append(first)
        self.wrote(dst)  # type: ignore[arg-type]

    def in_place_chain(self, full: TileType) -> None:
        """2-3 elementwise steps in a row that each write the tile they read (``%t = tadd
        %t, %u`` ...), on the block loaded last."""
        options = chain_templates(self.library, full)
        v = self.latest
        for _ in range(self.draw(st.integers(2, 3))):
            tpl = self.pick_template(options)
            first = next(n for n, t in tpl.inputs if t == full)
            self.body.append(self.op(tpl, v, {first: v}))
            self.wrote(v)

    def condition(self) -> Value:
        """The ``%pick`` parameter, or "first block" computed in the loop."""
        if self.draw(st.booleans()):
            return self.pick
        c = Value(self.fresh("first"), I1)
        self.body.append(ScalarOp("cmpi", c, (self.r, self.c0), "eq"))
        return c

    # ---- the kernel
    def build(self) -> tuple[Kernel, KernelArgs]:
        draw, R, C, d = self.draw, self.R, self.C, self.d
        rows = draw(st.integers(0, 3 * R))
        blocks = -(-rows // R)
        full, _, col = block_types(R, C, d)
        n_in = draw(st.integers(1, 3))
        ins = [self.param(f"x{i}", GlobalType((None, C), d), Argument(f"x{i}", "in", d.name, (rows, C)))
               for i in range(n_in)]
        self.pick = self.param("pick", I1, Argument("pick", "scalar", "i1", value=draw(st.booleans())))
        s0 = self.param("s0", self.carried, Argument("s0", "scalar", self.carried.name))
        # the accumulator carried across iterations, when some template combines column vectors
        acc = None
        if draw(st.booleans()) and any(t.output[1] == col and any(ty == col for _, ty in t.inputs)
                                       for t in self.templates):
            acc = self.tile(col)
            acc_in = self.param("acc_in", GlobalType((1, C), d), Argument("acc_in", "in", d.name, (1, C)))
            self.top.append(TileOp(get("TLOAD"), {"dst": acc, "src": MemRef(acc_in, (self.c0, self.c0))}))
        # per block: load, chain, combine into the accumulator
        for x in ins:
            t = self.tile(full)
            self.body.append(TileOp(get("TLOAD"), {"dst": t, "src": MemRef(x, (self.r, self.c0))}))
            self.pool.setdefault(full, []).append(t)
            self.latest = t
        if acc is not None:
            self.pool[col] = [acc]
        if self.chain:
            self.in_place_chain(full)
        for _ in range(draw(st.integers(1, MAX_STEPS))):
            self.step()
        if acc is not None:
            self.accumulate(acc, col)
        self.store_written(rows, blocks)
        left2, s2 = Value("left_next", INDEX), Value("s_next", self.carried)
        self.body.append(ScalarOp("subi", left2, (self.left, self.cR)))
        self.body.append(self.advance(s2))
        self.body.append(Yield((left2, s2)))
        s_end = Value("s_end", self.carried)
        rows_v = Value("rows", INDEX)
        body = (ScalarOp("minsi", self.vr, (self.left, self.cR)), *self.decls, *self.body)
        loop = For(self.r, self.c0, rows_v, self.cR, body, (self.left, self.s), (rows_v, s0),
                   (Value("left_end", INDEX), s_end))
        after: list[Stmt] = []
        if acc is not None:
            after += self.finish(acc, col, s_end)
            out = self.param("acc_out", GlobalType((1, C), d), Argument("acc_out", "out", d.name, (1, C)))
            after.append(TileOp(get("TSTORE"), {"dst": MemRef(out, (self.c0, self.c0)), "src": acc}))
        self.param(rows_v.name, INDEX, Argument(rows_v.name, "scalar", "index", value=rows))
        kernel = Kernel(self.name, tuple(self.params), tuple(self.top) + (loop,) + tuple(after))
        seed = draw(st.integers(0, 2**32 - 1))
        return kernel, KernelArgs(self.name, tuple(self.args), seed, rows, R)

    def advance(self, s2: Value) -> ScalarOp:
        """The carried scalar's update: scaled (floats) or counted up (integers)."""
        if self.carried.is_float:
            k = self.const("decay", self.draw(st.sampled_from((0.5, -1.0, 1.5))), self.carried)
            return ScalarOp("mulf", s2, (self.s, k))
        return ScalarOp("addi", s2, (self.s, self.const("one", 1, self.carried)))

    def accumulate(self, acc: Value, col: TileType) -> None:
        """acc = f(acc, v) with v a column vector this iteration wrote (made from a full
        block by a column reduction when the chain wrote none)."""
        fresh = [v for v in self.written if v.type == col and v != acc]
        if not fresh:
            makers = [t for t in self.candidates(col) if all(ty != col for _, ty in t.inputs)]
            if not makers:
                return
            op = self.op(self.draw(st.sampled_from(makers)))
            self.body.append(op)
            self.wrote(op.args[op.instr.outputs[0].name])  # type: ignore[arg-type]
            fresh = [v for v in self.written if v.type == col and v != acc]
        combine = [t for t in self.candidates(col) if t.in_place and sum(ty == col for _, ty in t.inputs) >= 2]
        if not combine:
            return
        tpl = self.draw(st.sampled_from(combine))
        first, second = [n for n, ty in tpl.inputs if ty == col][:2]
        self.body.append(self.op(tpl, acc, {first: acc, second: self.draw(st.sampled_from(fresh))}))

    def finish(self, acc: Value, col: TileType, s_end: Value) -> list[Stmt]:
        """After the loop: fold the carried scalar's final value into the accumulator."""
        fold = [t for t in self.templates if t.in_place and t.output[1] == col
                and [ty for _, ty in t.inputs] == [col] and [ty for _, ty in t.scalars] == [self.carried]]
        if not fold:
            return []
        tpl = self.draw(st.sampled_from(fold))
        return [self.op(tpl, acc, {tpl.inputs[0][0]: acc, tpl.scalars[0][0]: s_end})]

    def store_written(self, rows: int, blocks: int) -> None:
        """Every tile the chain wrote goes to its own output: blocks and row vectors at the
        block's rows, column vectors at the block's index."""
        blk = None
        for v in self.written:
            t: TileType = v.type  # type: ignore[assignment]
            if t.valid_rows is None:
                layout = GlobalLayout.DN if t.layout is Layout.DN else GlobalLayout.ND
                g = GlobalType((None, t.cols), t.dtype, layout=layout)
                shape: tuple[int, ...] = (rows, t.cols)
                at = (self.r, self.c0)
            else:
                if blk is None:
                    blk = Value("blk", INDEX)
                    self.body.append(ScalarOp("divsi", blk, (self.r, self.cR)))
                g, shape, at = GlobalType((None, t.cols), t.dtype), (blocks, t.cols), (blk, self.c0)
            out = self.param(f"o_{v.name}", g, Argument(f"o_{v.name}", "out", t.dtype.name, shape))
            self.body.append(TileOp(get("TSTORE"), {"dst": MemRef(out, at), "src": v}))


def chain_templates(library: Library, full: TileType) -> list[Template]:
    """In-place templates that read and write a full block of type ``full``."""
    return [t for t in library.templates if t.in_place and t.output[1] == full
            and any(ty == full for _, ty in t.inputs) and all(ty == full for _, ty in t.inputs)]


def _pipeline(draw: st.DrawFn, name: str, plans: list[MP.Plan]) -> tuple[Kernel, KernelArgs]:
    """A matrix pipeline kernel (``matrix_programs``) and how to call it."""
    kernel, how = MP.pipeline(draw, name, plans)
    args = tuple(Argument(*row) for row in how["args"])
    return kernel, KernelArgs(name, args, draw(st.integers(0, 2**32 - 1)), how["rows"], how["block"])


#: what ``programs(require=...)`` can force into every program it draws
REQUIRE = ("matrix", "in-place")


def programs(profile: str, allow: Allow | None = None, require: str | None = None) -> st.SearchStrategy[Program]:
    """Modules of 1-3 random kernels that parse and check on ``profile``; a kernel is a
    matrix pipeline (``matrix_programs``) one time in four when the profile and ``allow``
    admit one. ``allow(instr, types)`` narrows the instructions (to what a backend
    supports). ``require`` gives modules that have a feature by construction: "matrix" one
    matrix pipeline accumulating in place over K per accumulating form (TMATMUL_ACC,
    TGEMV_ACC ... as declared), "in-place" one block kernel whose chain starts with
    in-place elementwise steps; nothing when no such kernel is legal."""
    options = block_options(profile, allow)
    plans = MP.plans(profile, allow)
    libraries: dict[tuple[int, int], Library] = {}

    def library(rows: int, cols: int) -> Library:
        if (rows, cols) not in libraries:
            libraries[rows, cols] = Library(profile, rows, cols, allow)
        return libraries[rows, cols]

    if require == "in-place":
        options = [(r, c, d) for r, c, d in options if chain_templates(library(r, c), block_types(r, c, d)[0])]
    if (require == "matrix" and not plans) or (require != "matrix" and not options):
        return st.nothing()

    forms = sorted({p.accumulate.instr.mnemonic for p in plans})

    def kernel(draw: st.DrawFn, i: int) -> tuple[Kernel, KernelArgs]:
        if require == "matrix":
            return _pipeline(draw, f"k{i}", [p for p in plans if p.accumulate.instr.mnemonic == forms[i]])
        if require is None and plans and draw(st.integers(0, 3)) == 0:
            return _pipeline(draw, f"k{i}", plans)
        rows, cols, d = draw(st.sampled_from(options))
        return _Kernel(draw, f"k{i}", rows, cols, d, library(rows, cols), chain=require == "in-place").build()

    @st.composite
    def build(draw: st.DrawFn) -> Program:
        count = len(forms) if require == "matrix" else 1 if require else draw(st.integers(1, 3))
        built = [kernel(draw, i) for i in range(count)]
        text = Module(tuple(k for k, _ in built)).to_text()
        try:
            verify(parse(text), profile)
        except PTOError:
            assume(False)
        return Program(text, tuple(a for _, a in built))
    return build()
