"""Matrix pipelines for level 3: the cube's whole data path in one kernel.

A pipeline kernel loads A and B from global memory into mat tiles, moves them to left and
right tiles (TMOV of a slice loaded per K step, or TEXTRACT of the step's window out of a
whole panel loaded once), opens an acc tile with a plain or bias form for the first K step
and then accumulates in place over the remaining K steps of an ``scf.for``
(``tmatmul_acc %c, %a, %b`` with ``%c`` both accumulator input and destination), and finally
stores the acc tile (converting where the spec allows) and/or moves it to a vec tile and
stores that. Elementwise kernels cannot exercise any of this, and in-place accumulation is
where backends that read an input after writing the destination go wrong.

The matrix forms come from the declarations (matrix-family instructions whose operands are
one left, one right, one acc output and optionally an acc input or a bias row); a form and
dtype triple is used only when every instruction of the pipeline passes the spec's checks on
the profile and the backend's ``allow``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from hypothesis import strategies as st

from ..assembler.ir import Const, For, If, Kernel, MemRef, ScalarOp, Stmt, TileDecl, TileOp, Value
from ..isa import dtypes as dt
from ..isa.registry import get
from ..isa.spec import Domain, Family, Instruction, Kind, Role
from ..isa.types import INDEX, GlobalType, Layout, Location, ScalarType, TileType, Type
from .cases import Case, base_cases, instructions

Allow = Callable[[Instruction, Mapping[str, Type]], bool]

#: K extent of one step (the left tile's columns); i8 needs 32 (whole 16x32 fractals)
K_STEPS = (16, 32)
N_COLS = (16, 32)
#: in-place accumulation steps after the opening step
ACC_STEPS = (2, 3)
I1 = ScalarType("i1")
LOCS = {Location.LEFT: "a", Location.RIGHT: "b", Location.BIAS: "bias"}


@dataclass(frozen=True)
class Form:
    """A matrix instruction and which of its operands is which: ``a`` (left), ``b`` (right),
    ``dst`` and ``acc_in`` (acc), ``bias`` (bias row)."""

    instr: Instruction
    roles: tuple[tuple[str, str], ...]        # (pipeline role, operand name)

    @property
    def accumulates(self) -> bool:
        return any(r == "acc_in" for r, _ in self.roles)

    @property
    def rows(self) -> int | None:
        """M of the form: the left tile's rows (None), or 1 for the vector forms."""
        return None if self.instr.domain is Domain.MATMUL else 1


def form(instr: Instruction) -> Form | None:
    """``instr`` as a pipeline step, or None when its operands are not one left, one right,
    an acc output and at most an acc input and a bias row."""
    if instr.family is not Family.MATRIX:
        return None
    roles: list[tuple[str, str]] = []
    for o in instr.operands:
        locs = o.locations or ()
        if o.kind is not Kind.TILE or len(locs) != 1:
            return None
        if locs[0] is Location.ACC:
            roles.append(("dst" if o.role is Role.OUT else "acc_in", o.name))
        elif locs[0] in LOCS and o.role is Role.IN:
            roles.append((LOCS[locs[0]], o.name))
        else:
            return None
    names = [r for r, _ in roles]
    if sorted(names) not in (["a", "b", "dst"], ["a", "acc_in", "b", "dst"], ["a", "b", "bias", "dst"]):
        return None
    return Form(instr, tuple(roles))


# --------------------------------------------------------------------------- plans

@dataclass(frozen=True)
class Plan:
    """A legal pipeline shape: the accumulating form, the opening forms, the tile types."""

    accumulate: Form
    openings: tuple[Form, ...]
    m: int
    kb: int
    n: int
    a: dt.DType
    b: dt.DType
    c: dt.DType
    stores: tuple[dt.DType, ...]      # global dtypes the acc tile may be stored as
    moves: tuple[dt.DType, ...]       # vec tile dtypes the acc tile may be moved to
    feeds: tuple[tuple[str, tuple[bool, ...]], ...] = ()    # side -> legal ways (True: panel + TEXTRACT)

    def tiles(self) -> dict[str, TileType]:
        return {"a": TileType(self.m, self.kb, self.a, Location.LEFT, Layout.NZ),
                "b": TileType(self.kb, self.n, self.b, Location.RIGHT, Layout.ZN),
                "dst": TileType(self.m, self.n, self.c, Location.ACC, Layout.NZ),
                "acc_in": TileType(self.m, self.n, self.c, Location.ACC, Layout.NZ),
                "bias": TileType(1, self.n, self.c, Location.BIAS)}


def mat(rows: int, cols: int, d: dt.DType, layout: Layout = Layout.NZ) -> TileType:
    return TileType(rows, cols, d, Location.MAT, layout)


def _global(d: dt.DType, dims: tuple[int | None, ...] = (None, None)) -> GlobalType:
    return GlobalType(dims, d)


class _Legal:
    """Whether one instruction on given operand types passes the checks and ``allow``."""

    def __init__(self, profile: str, allow: Allow | None) -> None:
        self.profile, self.allow = profile, allow

    def __call__(self, mnemonic: str | Instruction, types: Mapping[str, Type]) -> bool:
        instr = get(mnemonic) if isinstance(mnemonic, str) else mnemonic
        types = dict(types)
        for o in instr.operands:
            if o.kind is Kind.INDEX:
                types.setdefault(o.name, INDEX)
        return not Case(instr, self.profile, types).errors() and (self.allow is None or self.allow(instr, types))

    def form(self, f: Form, tiles: Mapping[str, TileType]) -> bool:
        return self(f.instr, {name: tiles[role] for role, name in f.roles})

    def moves(self, src: TileType, dst: TileType, window: bool) -> bool:
        """TMOV (whole tile) or TEXTRACT (a window) from ``src`` to ``dst``."""
        return self("TEXTRACT" if window else "TMOV", {"dst": dst, "src": src})


def _triples(f: Form, profile: str) -> list[tuple[dt.DType, dt.DType, dt.DType]]:
    """The (a, b, c) dtype triples ``f`` accepts on ``profile`` (from its base cases)."""
    names = dict(f.roles)
    out = []
    for case in base_cases(f.instr, profile).values():
        if case is not None:
            t = [case.types[names[r]] for r in ("a", "b", "dst")]
            out.append(tuple(x.dtype for x in t))  # type: ignore[union-attr]
    return out  # type: ignore[return-value]


def plans(profile: str, allow: Allow | None = None) -> list[Plan]:
    """Every pipeline shape legal on ``profile`` whose instructions ``allow`` admits: an
    accumulating form with an opening form of the same M, a dtype triple, K step and N for
    which loads, moves, both forms and at least one way out of the acc tile check."""
    legal = _Legal(profile, allow)
    forms = [f for f in (form(i) for i in instructions(profile)) if f is not None]
    out = []
    for acc in (f for f in forms if f.accumulates):
        for a, b, c in _triples(acc, profile):
            for kb in K_STEPS:
                for n in N_COLS:
                    m = acc.rows or 16
                    plan = Plan(acc, (), m, kb, n, a, b, c, (), ())
                    tiles = plan.tiles()
                    openings = tuple(f for f in forms if not f.accumulates and f.rows == acc.rows
                                     and legal.form(f, tiles))
                    feeds = _feeds(legal, plan, tiles)
                    if not openings or not legal.form(acc, tiles) or not all(w for _, w in feeds):
                        continue
                    row = mat(1, n, c, Layout.ND)
                    if not (legal("TLOAD", {"dst": row, "src": _global(c)})
                            and legal("TMOV", {"dst": tiles["bias"], "src": row})):
                        openings = tuple(f for f in openings if "bias" not in dict(f.roles))
                    stores = tuple(d for d in dt.ALL if legal("TSTORE", {"dst": _global(d), "src": tiles["dst"]}))
                    moves = tuple(d for d in dt.ALL if legal("TMOV", {"dst": TileType(m, n, d), "src": tiles["dst"]})
                                  and legal("TSTORE", {"dst": _global(d), "src": TileType(m, n, d)}))
                    if openings and (stores or moves):
                        out.append(Plan(acc, openings, m, kb, n, a, b, c, stores, moves, feeds))
    return out


def _feeds(legal: _Legal, p: Plan, tiles: Mapping[str, TileType]) -> tuple[tuple[str, tuple[bool, ...]], ...]:
    """The ways of feeding left ("a") and right ("b") that check: a step's slice loaded and
    moved (TLOAD + TMOV: False), a panel loaded once and windowed (TLOAD + TEXTRACT: True)."""
    k_all = p.kb * (1 + max(ACC_STEPS))
    out = []
    for side, step, panel in (("a", mat(p.m, p.kb, p.a), mat(p.m, k_all, p.a)),
                              ("b", mat(p.kb, p.n, p.b), mat(k_all, p.n, p.b))):
        ways = tuple(resident for resident, t in ((False, step), (True, panel))
                     if legal("TLOAD", {"dst": t, "src": _global(tiles[side].dtype)})
                     and legal.moves(t, tiles[side], resident))
        out.append((side, ways))
    return tuple(out)


# --------------------------------------------------------------------------- the kernel

class _Builder:
    """One pipeline kernel drawn from a plan: statements and (name, kind, dtype, shape)."""

    def __init__(self, draw: st.DrawFn, name: str, plan: Plan) -> None:
        self.draw, self.name, self.p = draw, name, plan
        self.params: list[Value] = []
        self.args: list[tuple[str, str, str, tuple[int, ...], Any]] = []
        self.top: list[Stmt] = []
        self.c0 = self.const("c0", 0)
        self.cK = self.const("cK", plan.kb)

    def const(self, name: str, value: int) -> Value:
        v = Value(name, INDEX)
        self.top.append(Const(v, value))
        return v

    def param(self, name: str, t: Type, kind: str, dtype: str, shape: tuple[int, ...] = (), value: Any = None) -> Value:
        v = Value(name, t)
        self.params.append(v)
        self.args.append((name, kind, dtype, shape, value))
        return v

    def tile(self, name: str, t: TileType) -> Value:
        v = Value(name, t)
        self.top.append(TileDecl(v))
        return v

    def feed(self, side: str, g: Value, k_all: int) -> tuple[Value, list[Stmt], Callable[[Value | None], list[Stmt]]]:
        """The left (``side`` "a") or right ("b") tile, statements before the loop and a
        function giving one K step's statements (at the step's K offset, None for the first
        step): a panel loaded once + TEXTRACT at the offset, or a step's slice + TMOV."""
        p, tiles = self.p, self.p.tiles()
        dst = self.tile("left" if side == "a" else "right", tiles[side])
        resident = self.draw(st.sampled_from(dict(p.feeds)[side]))
        if side == "a":
            shape, at = ((p.m, k_all) if resident else (p.m, p.kb)), (lambda k: (self.c0, k))
        else:
            shape, at = ((k_all, p.n) if resident else (p.kb, p.n)), (lambda k: (k, self.c0))
        src = self.tile(f"{side}mat", mat(*shape, tiles[side].dtype))
        if resident:
            before: list[Stmt] = [TileOp(get("TLOAD"), {"dst": src, "src": MemRef(g, (self.c0, self.c0))})]

            def step(k: Value | None) -> list[Stmt]:
                r0, c0 = at(k or self.c0)
                return [TileOp(get("TEXTRACT"), {"dst": dst, "src": src, "r0": r0, "c0": c0})]
            return dst, before, step

        def load(k: Value | None) -> list[Stmt]:
            return [TileOp(get("TLOAD"), {"dst": src, "src": MemRef(g, at(k or self.c0))}),
                    TileOp(get("TMOV"), {"dst": dst, "src": src})]
        return dst, [], load

    def matmul(self, f: Form, tiles: Mapping[str, Value]) -> TileOp:
        return TileOp(f.instr, {name: tiles[role] for role, name in f.roles})

    def build(self) -> tuple[Kernel, dict[str, Any]]:
        draw, p = self.draw, self.p
        steps = draw(st.sampled_from(ACC_STEPS))
        k_all = p.kb * (1 + steps)
        ga = self.param("a", _global(p.a), "in", p.a.name, (p.m, k_all))
        gb = self.param("b", _global(p.b), "in", p.b.name, (k_all, p.n))
        opening = draw(st.sampled_from(p.openings))
        tiles: dict[str, Value] = {}
        before: list[Stmt] = []
        if "bias" in dict(opening.roles):
            gbias = self.param("bias", _global(p.c), "in", p.c.name, (1, p.n))
            bmat, bias = self.tile("biasmat", mat(1, p.n, p.c, Layout.ND)), self.tile("biasrow", p.tiles()["bias"])
            before += [TileOp(get("TLOAD"), {"dst": bmat, "src": MemRef(gbias, (self.c0, self.c0))}),
                       TileOp(get("TMOV"), {"dst": bias, "src": bmat})]
            tiles["bias"] = bias
        left, pre_a, step_a = self.feed("a", ga, k_all)
        right, pre_b, step_b = self.feed("b", gb, k_all)
        acc = self.tile("acc", p.tiles()["dst"])
        tiles.update(a=left, b=right, dst=acc, acc_in=acc)
        k = Value("k", INDEX)
        kdim = Value("kdim", INDEX)
        accumulate = self.matmul(p.accumulate, tiles)     # acc_in and dst: the same tile
        peeled = draw(st.booleans())
        if peeled:      # the first K step before the loop, the loop from the second
            before += pre_a + pre_b + step_a(None) + step_b(None) + [self.matmul(opening, tiles)]
            body: list[Stmt] = [*step_a(k), *step_b(k), accumulate]
            loop = For(k, self.cK, kdim, self.cK, tuple(body))
        else:           # one loop from 0: the first iteration opens, the others accumulate
            first = Value("first", I1)
            before += pre_a + pre_b
            body = [*step_a(k), *step_b(k), ScalarOp("cmpi", first, (k, self.c0), "eq"),
                    If(first, (self.matmul(opening, tiles),), (accumulate,))]
            loop = For(k, self.c0, kdim, self.cK, tuple(body))
        after = self.outputs(acc)
        self.param("kdim", INDEX, "scalar", "index", value=k_all)
        kernel = Kernel(self.name, tuple(self.params), tuple(self.top) + tuple(before) + (loop,) + tuple(after))
        return kernel, {"args": self.args, "rows": k_all, "block": p.kb}

    def outputs(self, acc: Value) -> list[Stmt]:
        """The acc tile stored (as a dtype the store may convert to) and/or moved to a vec
        tile that is stored."""
        p, draw = self.p, self.draw
        ways = [w for w, ok in (("store", p.stores), ("move", p.moves)) if ok]
        chosen = draw(st.sampled_from([(w,) for w in ways] + ([tuple(ways)] if len(ways) > 1 else [])))
        out: list[Stmt] = []
        if "store" in chosen:
            d = draw(st.sampled_from(p.stores))
            g = self.param("c_out", _global(d), "out", d.name, (p.m, p.n))
            out.append(TileOp(get("TSTORE"), {"dst": MemRef(g, (self.c0, self.c0)), "src": acc}))
        if "move" in chosen:
            d = draw(st.sampled_from(p.moves))
            v = self.tile("cvec", TileType(p.m, p.n, d))
            g = self.param("v_out", _global(d), "out", d.name, (p.m, p.n))
            out += [TileOp(get("TMOV"), {"dst": v, "src": acc}),
                    TileOp(get("TSTORE"), {"dst": MemRef(g, (self.c0, self.c0)), "src": v})]
        return out


def pipeline(draw: st.DrawFn, name: str, options: list[Plan]) -> tuple[Kernel, dict[str, Any]]:
    """A pipeline kernel ``name`` from one of ``options`` (``plans``): the kernel and its
    arguments as (name, kind, dtype, shape, fixed value) rows, the K loop's bound and step."""
    return _Builder(draw, name, draw(st.sampled_from(options))).build()
