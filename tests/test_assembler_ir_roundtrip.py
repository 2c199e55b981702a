"""Modules built directly as IR (not from text): random kernels with parameters, constants,
scalar ops, tile ops with legal and illegal-but-representable operands and attribute values
of every kind, for/if regions, and names that are plain, odd or unwritable. For each:

* printing either refuses (``STRUCT_NAME``) or gives text; text that does not parse back to
  the module belongs to a module the verifier rejects;
* a module the verifier accepts prints as text that parses back to it, and through bytecode;
* bytecode holds exactly the modules whose text reads back: ``load_bytes(dump(m))`` succeeds
  iff ``parse(print(m)) == m``, and then gives ``m``.
"""
from __future__ import annotations

import math

from hypothesis import given, seed, settings, strategies as st

import openpto.assembler as asm
from openpto.assembler import ir
from openpto.assembler.operands import ENUM_KINDS
from openpto.assembler.scalar_ops import SCALAR_OPS
from openpto.isa import BytecodeError, PTOError, get
from openpto.isa.spec import Kind
from openpto.isa.types import Pipe, ScalarType, parse_type

SCALARS = [ScalarType(n) for n in ("index", "i1", "i32", "f32", "f16")]
TILES = [parse_type(t) for t in ("!pto.tile<16x16xf32>", "!pto.tile<16x16xf16>", "!pto.tile<16x16xi1>")]
GLOBAL = parse_type("!pto.memref<64x64xf32>")
INSTRS = [get(m) for m in ("TADD", "TEXP", "TADDS", "TCMP", "TCVT", "TLOAD", "TSTORE", "SET_FLAG",
                           "PIPE_BARRIER", "TSEL", "TROWSUM")]
PLAIN = ["a", "b", "x", "t0", "acc", "s", "n", "c1"]
ODD = ["0", "x.1", "$a", "-a", "a-b", "1e5", "nan", "main", "i32", "a$.-_"]
UNWRITABLE = ["", "a b", "\u00fc", "a%b", "#", "x,y"]
NUMBERS = st.one_of(st.booleans(), st.integers(-3, 3), st.sampled_from([2**63 - 1, -2**63, 2**64, 2**200,
                                                                       2**247, 2**248, -2**300]),
                    st.sampled_from([0.0, -0.0, 1.5, 1e-310, math.inf, -math.inf, math.nan]))
ENUM_VALUES = [m for cls in ENUM_KINDS.values() for m in cls]


class Build:
    """Draws one module; ``vals`` are the values visible so far (mostly used, sometimes not)."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.fresh = 0

    def name(self) -> str:
        d = self.draw
        kind = d(st.sampled_from(["plain"] * 8 + ["odd"] * 3 + ["bad"]))
        base = d(st.sampled_from({"plain": PLAIN, "odd": ODD, "bad": UNWRITABLE}[kind]))
        if kind != "bad" and d(st.booleans()):
            self.fresh += 1
            base += str(self.fresh)
        return base

    def value(self, vals: list[ir.Value], types: list) -> ir.Value:
        pool = [v for v in vals if v.type in types]
        if pool and self.draw(st.integers(0, 5)):
            return self.draw(st.sampled_from(pool))
        return ir.Value(self.name(), self.draw(st.sampled_from(types)))

    def number_for(self, t: ScalarType) -> ir.Lit:
        d = self.draw
        if d(st.integers(0, 3)):                  # mostly one that fits
            v = d(st.booleans()) if t.name == "i1" else d(st.floats(-8, 8)) if t.is_float else d(st.integers(-8, 8))
            return ir.make_lit(v, t)
        return ir.Lit(d(NUMBERS), t)

    def attr(self, decl_type: type) -> object:
        d = self.draw
        choice = d(st.integers(0, 5))
        if choice == 0:
            return d(st.sampled_from(ENUM_VALUES))         # any kind, pipes included
        if choice == 1:
            return d(NUMBERS)
        if isinstance(decl_type, type) and issubclass(decl_type, tuple(ENUM_KINDS.values())):
            return d(st.sampled_from(list(decl_type)))
        return d(st.booleans()) if decl_type is bool else d(st.integers(-4, 4))

    def tile_op(self, vals: list[ir.Value]) -> ir.TileOp:
        d = self.draw
        instr = d(st.sampled_from(INSTRS))
        args: dict[str, object] = {}
        for o in instr.operands:
            if o.optional and d(st.booleans()):
                continue
            if o.kind is Kind.TILE:
                args[o.name] = self.value(vals, TILES)
            elif o.kind is Kind.GLOBAL:
                base = self.value(vals, [GLOBAL])
                args[o.name] = ir.MemRef(base, tuple(d(st.one_of(st.integers(0, 3), st.just(None)))
                                                     or self.value(vals, [SCALARS[0]]) for _ in range(2)))
            elif o.kind is Kind.PIPE:
                args[o.name] = ir.PipeLit(d(st.sampled_from(list(Pipe))))
            elif o.kind is Kind.EVENT or d(st.booleans()):
                args[o.name] = self.value(vals, SCALARS)
            else:
                args[o.name] = self.number_for(d(st.sampled_from(SCALARS)))
        attrs = {a.name: self.attr(a.type) for a in instr.attrs if d(st.booleans())}
        return ir.TileOp(instr, args, attrs)

    def scalar_op(self, vals: list[ir.Value]) -> ir.ScalarOp:
        d = self.draw
        spec = d(st.sampled_from(list(SCALAR_OPS.values())))
        ops = tuple(self.value(vals, SCALARS) for _ in range(spec.arity))
        pred = d(st.sampled_from(spec.predicates)) if spec.predicates else None
        t = SCALARS[0] if spec.cls == "block" else ScalarType("i1") if spec.cls in ("cmpi", "cmpf") \
            else ops[-1].type if ops else SCALARS[0]
        if spec.cls == "cast" or not d(st.integers(0, 4)):
            t = d(st.sampled_from(SCALARS))
        second = None
        if (spec.cls == "extended") != (not d(st.integers(0, 9))):     # mostly as declared
            second = ir.Value(self.name(), d(st.sampled_from([ScalarType("i1"), t, *SCALARS])))
        return ir.ScalarOp(spec.name, ir.Value(self.name(), t), ops, pred, second)

    def body(self, vals: list[ir.Value], depth: int, yields: tuple = ()) -> tuple:
        d = self.draw
        vals = list(vals)
        out: list = []
        for _ in range(d(st.integers(0, 4))):
            kind = d(st.sampled_from(["tile", "tile", "scalar", "const", "decl"] + (["for", "if"] if depth < 2 else [])))
            if kind == "tile":
                s = self.tile_op(vals)
                vals += [a for a in s.args.values() if isinstance(a, ir.Value)]
            elif kind == "scalar":
                s = self.scalar_op(vals)
                vals.append(s.result)
            elif kind == "const":
                t = d(st.sampled_from(SCALARS))
                s = ir.Const(ir.Value(self.name(), t), self.number_for(t).value)
                vals.append(s.result)
            elif kind == "decl":
                s = ir.TileDecl(ir.Value(self.name(), d(st.sampled_from(TILES))))
                vals.append(s.value)
            elif kind == "for":
                iters = tuple(ir.Value(self.name(), d(st.sampled_from(SCALARS))) for _ in range(d(st.integers(0, 2))))
                inits = tuple(self.value(vals, [a.type]) if d(st.booleans()) else self.number_for(a.type)
                              for a in iters)
                iv = ir.Value(self.name(), d(st.sampled_from([SCALARS[0], SCALARS[0], ScalarType("i32")])))
                bound = st.one_of(st.integers(-2, 8), st.just(None))
                lb, ub, step = ((d(bound) if d(st.booleans()) else None) for _ in range(3))
                lb, ub, step = (b if b is not None else self.value(vals, [iv.type]) for b in (lb, ub, step))
                body = self.body(vals + [iv, *iters], depth + 1, iters)
                results = tuple(ir.Value(self.name(), a.type) for a in iters) if d(st.booleans()) else ()
                s = ir.For(iv, lb, ub, step, body, iters, inits, results)
                vals += results
            else:
                rtypes = tuple(d(st.sampled_from(SCALARS)) for _ in range(d(st.integers(0, 1))))
                cond = self.value(vals, [ScalarType("i1")])
                ys = tuple(ir.Value("y", t) for t in rtypes)
                then = self.body(vals, depth + 1, ys)
                orelse = self.body(vals, depth + 1, ys) if rtypes or d(st.booleans()) else ()
                results = tuple(ir.Value(self.name(), t) for t in rtypes)
                s = ir.If(cond, then, orelse, results)
                vals += results
            out.append(s)
        if yields:
            out.append(ir.Yield(tuple(self.value(vals, [y.type]) for y in yields)))
        return tuple(out)


@st.composite
def modules(draw: st.DrawFn) -> ir.Module:
    b = Build(draw)
    kernels = []
    for _ in range(draw(st.integers(1, 2))):
        params = tuple(ir.Value(b.name(), draw(st.sampled_from(SCALARS + TILES + [GLOBAL])))
                       for _ in range(draw(st.integers(0, 4))))
        kernels.append(ir.Kernel(b.name(), params, b.body(list(params), 0)))
    return ir.Module(tuple(kernels))


def check(m: ir.Module) -> str:
    """The outcome class (for the statistics below); asserts the properties of the docstring."""
    errs = asm.diagnose(m, None)
    try:
        text = m.to_text()
    except PTOError as e:
        assert e.code == "STRUCT_NAME", e
        try:
            asm.dump(m)
        except BytecodeError as be:
            assert be.code == "BCODE_ENCODE"
        else:
            raise AssertionError("dump wrote a module the printer refuses")
        return "unprintable"
    try:
        back = asm.parse(text)
    except PTOError:
        back = None
    same = back == m
    if same:
        assert back.to_text() == text
    else:
        assert errs, "a module the verifier accepts does not read back:\n" + text
    try:
        data = asm.dump(m)
    except BytecodeError as e:
        assert e.code == "BCODE_ENCODE" and not same, e      # only what text cannot hold either
        return "no bytecode"
    try:
        loaded = asm.load_bytes(data)
    except BytecodeError as e:
        assert not same and e.code in ("BCODE_TEXT", "BCODE_NAME"), e   # BCODE_NAME: a kernel twice
        return "refused"
    assert same and loaded == m and asm.parse(loaded.to_text()) == loaded
    return "round trip, " + ("invalid" if errs else "valid")


@settings(max_examples=300, deadline=None)
@given(modules())
def test_generated_modules_print_parse_and_load_back_consistently(m: ir.Module) -> None:
    check(m)


def test_the_generator_reaches_every_outcome() -> None:
    """The property above is not vacuous: fixed seeds give valid and invalid modules that round
    trip, modules bytecode refuses and modules the printer refuses. Several fixed seeds are tried
    in turn (the ISA's growth shifts what one seed draws); every outcome must appear within them."""
    wanted = {"unprintable", "refused", "round trip, invalid", "round trip, valid"}
    seen: set[str] = set()

    def collect(m: ir.Module) -> None:
        seen.add(check(m))
    for k in range(6):
        seed(k)(settings(max_examples=150, database=None, deadline=None, derandomize=False)(given(modules())(collect)))()
        if wanted <= seen:
            break
    assert wanted <= seen, seen
