"""Assembler throughput: parse + verify (profile a3) of a generated N-statement PTO-AS module.

Run from the repository root (or anywhere, with openpto installed)::

    python benchmarks/bench_assembler.py            # N = 100,000 statements
    python benchmarks/bench_assembler.py --n 20000 --repeat 3
    python benchmarks/bench_assembler.py --cprofile # where the time goes

The target is 100,000 statements per second for parse + verify. The module is not one line
repeated: kernels of about 1,000 statements each draw a dozen-odd instruction *variants*
(every a3 instruction's declared example, re-shaped, re-typed and with other attribute
values, each variant checked to verify on its own before use) and mix them with scalar
``arith`` ops, constants, tile declarations, ``scf.for`` loops with ``iter_args``,
``scf.if`` with ``else``, ops written without a signature, literal scalar operands,
in-place updates and comments. The output says how many distinct instruction signatures
the module holds, so per-signature caching can be judged against it.
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import re
import sys
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # the shared benchmarks/machine.py
from machine import calibration, machine  # noqa: E402
from openpto import assembler as asm
from openpto.assembler import ir
from openpto.isa import PTOError, all_instructions
from openpto.isa import attrs as A
from openpto.isa import profiles
from openpto.isa.spec import Instruction, Kind, Role
from openpto.isa.types import Pipe, TileType, parse_type

TARGET = 100_000          # statements per second, parse + verify
PROFILE = "a3"
KERNEL_SIZE = 1_000       # statements per kernel, about
MIN_N = 100               # a kernel's declarations take a dozen statements
SHAPES = ("16x16", "32x32", "16x64", "64x16", "8x32", "32x128")
DTYPES = {"f32": ("f32", "f16", "bf16"), "i32": ("i32", "i16"), "f16": ("f16", "f32"),
          "i16": ("i16", "i32")}
FLOATS = ("f32", "f16", "bf16")


# --------------------------------------------------------------------------- instruction variants

@dataclass
class Variant:
    """One instruction with concrete operand types and attributes: a statement template."""

    instr: Instruction
    types: dict[str, str]                 # operand name -> type spelling (as in the example)
    attrs: dict[str, object]
    scalars: dict[str, object]            # example values of pipe/scalar operands
    in_place: bool = field(default=False)  # result type == first tile operand type

    @property
    def results(self) -> list[str]:
        return [o.name for o in self.instr.operands
                if o.role is Role.OUT and o.kind is Kind.TILE and o.name in self.types]

    def params(self) -> list[str]:
        """Operands a kernel receives as parameters (everything read by name)."""
        return [o.name for o in self.instr.operands if o.name in self.types and o.name not in self.results]

    def tile_bytes(self) -> dict[object, int]:
        used: dict[object, int] = {}
        for spelling in self.types.values():
            t = parse_type(spelling)
            if isinstance(t, TileType):
                used[t.loc] = used.get(t.loc, 0) + t.nbytes
        return used


def _retype(spelling: str, shape: str, old: str, new: str) -> str:
    """The example's 16x16 tiles become ``shape``; dtype ``old`` becomes ``new`` (tiles and scalars)."""
    if spelling == old:
        return new
    if not spelling.startswith("!pto.tile<"):
        return spelling
    s = spelling.replace("<16x16x", f"<{shape}x", 1)
    return re.sub(rf"^(!pto\.tile<\d+x\d+x){old}\b", rf"\g<1>{new}", s)


def _variant(instr: Instruction, rng: random.Random, plain: bool) -> Variant:
    """The declared example (``plain``), or it re-shaped, re-typed and with other attribute values."""
    ex = instr.example
    shape = "16x16" if plain else rng.choice(SHAPES)
    dtypes = [t.rpartition("x")[2].partition(",")[0].rstrip(">") for t in ex.types.values()
              if t.startswith("!pto.tile<")]
    old = dtypes[0] if dtypes else ""
    new = old if plain else rng.choice(DTYPES.get(old, (old,)))
    types = {k: _retype(v, shape, old, new) for k, v in ex.types.items()} if old else dict(ex.types)
    attrs = {}
    for a in instr.attrs:
        if a.name in ex.attrs:
            v = ex.attrs[a.name]
            if not plain and a.type in A.ENUM_SPELLING and rng.random() < 0.5:
                v = rng.choice(list(a.type))
            attrs[a.name] = v
    v = Variant(instr, types, attrs, dict(ex.scalars))
    res = v.results
    firsts = [n for n in v.params() if v.instr.operand(n).kind is Kind.TILE]
    v.in_place = bool(res and firsts and types[res[0]] == types[firsts[0]])
    return v


class VariantPool:
    """Variants drawn at random and kept only when they verify on their own (memoised)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.instrs = [i for i in all_instructions() if i.supported_on(PROFILE)]
        self.ok: dict[str, Variant] = {}
        self.bad: set[str] = set()

    def draw(self) -> Variant:
        while True:
            instr = self.rng.choice(self.instrs)
            v = _variant(instr, self.rng, plain=self.rng.random() < 0.3)
            key = render_statement(v, "_0", {}, True, None)
            if key in self.ok:
                return self.ok[key]
            if key in self.bad:
                continue
            params = "\n".join(f".arg %{n}_0 : {v.types[n]}" for n in v.params())
            try:
                asm.verify(asm.parse(params + "\n.const %c0 = 0 : index\n" + key + "\n"), PROFILE)
            except PTOError:
                self.bad.add(key)
                continue
            self.ok[key] = v
            return v


def _literal(type_name: str, rng: random.Random) -> str:
    if type_name in FLOATS:
        return rng.choice(["0.5", "-1.25", "2.0", "1e-3", "3.0"])
    return str(rng.choice([1, 2, 3, 7]))


def render_statement(v: Variant, suffix: str, index_of: dict[str, str], signature: bool,
                     rng: random.Random | None, in_place: bool = False) -> str:
    """The variant as a synchronous statement, operands renamed ``%name{suffix}``.

    ``index_of`` picks index values for index operands and memref indices; with ``rng`` some
    scalar operands become literals; ``in_place`` reads the result buffer as the first tile."""
    ex_types = v.types
    results = v.results
    operands, in_types = [], []
    first_tile = True
    for op in v.instr.operands:
        if op.name not in ex_types and op.name not in v.scalars:
            continue
        if op.kind is Kind.PIPE:
            p = v.scalars[op.name]
            operands.append(f"#pto.pipe<{p.value if isinstance(p, Pipe) else p}>")
            continue
        if op.name in results:
            continue
        t = ex_types[op.name]
        if op.kind is Kind.GLOBAL:
            rank = t.partition(",")[0].count("x")
            idx = [index_of.get(str(k), "%c0") for k in range(rank)]
            operands.append(f"%{op.name}{suffix}[" + ", ".join(idx) + "]")
        elif op.kind is Kind.TILE and first_tile and in_place:
            operands.append(f"%{results[0]}{suffix}")
        elif op.kind is Kind.INDEX and op.name in index_of:
            operands.append(index_of[op.name])
        elif op.kind is Kind.SCALAR and signature and rng is not None and rng.random() < 0.4:
            operands.append(_literal(t, rng))
        else:
            operands.append(f"%{op.name}{suffix}")
        first_tile = first_tile and op.kind is not Kind.TILE
        in_types.append(t)
    text = (", ".join(f"%{r}{suffix}" for r in results) + " = " if results else "") + v.instr.asm_name
    if operands:
        text += " " + ", ".join(operands)
    if v.attrs:
        text += " {" + ", ".join(f"{k} = {A.spell(x)}" for k, x in v.attrs.items()) + "}"
    out_types = [ex_types[r] for r in results]
    if signature and (in_types or out_types):
        sig = "(" + ", ".join(in_types) + ")"
        if out_types:
            sig += " -> " + (out_types[0] if len(out_types) == 1 else "(" + ", ".join(out_types) + ")")
        text += " : " + sig
    return text


# --------------------------------------------------------------------------- kernels

class KernelGen:
    """One kernel: a dozen-odd variants under the a3 capacities, then a statement mix."""

    def __init__(self, name: str, size: int, pool: VariantPool, rng: random.Random) -> None:
        self.name, self.size, self.rng = name, size, rng
        self.lines: list[str] = []
        self.count = 0
        self.fresh = 0
        cap = profiles.get(PROFILE).capacity
        used: dict[object, int] = {}
        self.variants: list[tuple[Variant, str]] = []
        for _ in range(rng.randint(8, 20) * 3):     # up to 20 variants that fit the capacities
            if len(self.variants) >= 20:
                break
            v = pool.draw()
            need = v.tile_bytes()
            if all(used.get(loc, 0) + b <= cap[loc] * 0.9 for loc, b in need.items()):
                for loc, b in need.items():
                    used[loc] = used.get(loc, 0) + b
                self.variants.append((v, f"_{len(self.variants)}"))
        self.defined: set[str] = set()   # result buffers declared or written so far (kernel-wide)
        self.written: set[str] = set()   # ... written on the way here: only these are read in place

    def new(self, prefix: str) -> str:
        self.fresh += 1
        return f"%{prefix}{self.fresh}"

    def emit(self, depth: int, text: str, counts: bool = True) -> None:
        self.lines.append("  " * depth + text)
        self.count += counts

    def header(self) -> None:
        params = ["%n : index", "%alpha : f32", "%flag : i32"]
        for v, sfx in self.variants:
            params += [f"%{p}{sfx} : {v.types[p]}" for p in v.params()]
        self.lines.append(f"kernel @{self.name}(" + ",\n    ".join(params) + ") {")
        for c in (0, 1, 4, 16):
            self.emit(1, f".const %c{c} = {c} : index")
        for v, sfx in self.variants:          # some result buffers declared up front
            for r in v.results:
                if self.rng.random() < 0.3:
                    self.emit(1, f".tile %{r}{sfx} : {v.types[r]}")
                    self.defined.add(r + sfx)

    def tile_op(self, depth: int, idx: list[str]) -> None:
        v, sfx = self.rng.choice(self.variants)
        # index operands: zero or a run-time value, so none is statically outside what its operand
        # takes (flag ids: the profile's 8 per pipe pair; TASSIGN addresses: 32-byte aligned)
        index_of = {o.name: self.rng.choice(["%c0", "%n"]) for o in v.instr.operands
                    if o.kind is Kind.INDEX and o.name in v.types and self.rng.random() < 0.5}
        # memory operand indices: the origin or a run-time value, so no window is statically outside
        # its tensor (the verifier reports constant out-of-bounds windows as STRUCT_OOB)
        index_of.update({str(k): self.rng.choice(["%c0", "%n"]) for k in range(5)})
        known = all(r + sfx in self.defined for r in v.results)
        signature = not (known and v.results and self.rng.random() < 0.3)
        in_place = (known and v.in_place and self.rng.random() < 0.3
                    and all(r + sfx in self.written for r in v.results))   # no STRUCT_UNINIT_READ
        self.emit(depth, render_statement(v, sfx, index_of, signature, self.rng, in_place))
        self.defined.update(r + sfx for r in v.results)
        self.written.update(r + sfx for r in v.results)

    def scalar_ops(self, depth: int, idx: list[str], flt: list[str]) -> None:
        r = self.rng.random()
        if r < 0.5:
            a, b = self.rng.choice(idx), self.rng.choice(idx)
            name = self.new("s")
            op = self.rng.choice(["addi", "muli", "subi", "maxsi", "remsi"])
            self.emit(depth, f"{name} = arith.{op} {a}, {b} : index")
            idx.append(name)
        elif r < 0.8:
            a, b = self.rng.choice(flt), self.rng.choice(flt)
            name = self.new("f")
            self.emit(depth, f"{name} = arith.{self.rng.choice(['addf', 'mulf', 'maxf'])} {a}, {b} : f32")
            flt.append(name)
        elif r < 0.9:
            name = self.new("k")
            if self.rng.random() < 0.5:
                self.emit(depth, f".const {name} = {self.rng.randint(0, 64)} : index")
                idx.append(name)
            else:
                self.emit(depth, f"{name} = arith.constant {self.rng.choice(['0.5', '2.0', '-1.0'])} : f32")
                flt.append(name)
        else:
            i32 = self.new("w")
            self.emit(depth, f"{i32} = arith.index_cast {self.rng.choice(idx)} : index to i32")
            name = self.new("f")
            self.emit(depth, f"{name} = arith.sitofp {i32} : i32 to f32")
            flt.append(name)

    def loop(self, depth: int, idx: list[str], flt: list[str], budget: int) -> None:
        iv, acc, facc = self.new("i"), self.new("a"), self.new("x")
        res, fres = self.new("r"), self.new("y")
        self.emit(depth, f"{res}, {fres} = scf.for {iv} = %c0 to {self.rng.choice(['%n', '%c16', '8'])} "
                  f"step {self.rng.choice(['%c1', '1', '%c4'])} iter_args({acc} = %c0, {facc} = "
                  f"{self.rng.choice(flt)}) -> (index, f32) {{")
        inner_idx, inner_flt = idx + [iv, acc], flt + [facc]
        self.body(depth + 1, inner_idx, inner_flt, budget - 4)
        nxt, fnxt = self.new("s"), self.new("f")
        self.emit(depth + 1, f"{nxt} = arith.addi {acc}, {iv} : index")
        self.emit(depth + 1, f"{fnxt} = arith.addf {facc}, {self.rng.choice(inner_flt)} : f32")
        self.emit(depth + 1, f"scf.yield {nxt}, {fnxt} : index, f32")
        self.emit(depth, "}", counts=False)
        idx.append(res)
        flt.append(fres)

    def branch(self, depth: int, idx: list[str], flt: list[str], budget: int) -> None:
        cond, res = self.new("p"), self.new("f")
        self.emit(depth, f"{cond} = arith.cmpi slt, {self.rng.choice(idx)}, {self.rng.choice(idx)} : index")
        self.emit(depth, f"{res} = scf.if {cond} -> (f32) {{")
        half = max((budget - 4) // 2, 1)
        before, after = set(self.written), set()
        for part in range(2):
            self.written = set(before)          # what one branch writes, the other has not
            self.body(depth + 1, list(idx), list(flt), half)
            after |= self.written
            self.emit(depth + 1, f"scf.yield {self.rng.choice(flt)} : f32")
            self.emit(depth, "} else {" if part == 0 else "}", counts=False)
        self.written = after
        flt.append(res)

    def body(self, depth: int, idx: list[str], flt: list[str], budget: int) -> None:
        """Statements until ``budget`` of them (at least one) are emitted here."""
        stop = self.count + max(budget, 1)
        while self.count < stop:
            left = stop - self.count
            r = self.rng.random()
            if r < 0.04 and depth < 3 and left >= 12:
                self.loop(depth, idx, flt, self.rng.randint(8, min(left, 40)))
            elif r < 0.055 and depth < 3 and left >= 10:
                self.branch(depth, idx, flt, self.rng.randint(8, min(left, 20)))
            elif r < 0.22 and left >= 2:
                self.scalar_ops(depth, idx, flt)
            elif r < 0.225:
                self.emit(depth, "// " + self.rng.choice(["next stage", "accumulate", "TODO: fuse"]), False)
            else:
                self.tile_op(depth, idx)

    def generate(self) -> list[str]:
        self.header()
        self.body(1, ["%c0", "%c1", "%c4", "%c16", "%n"], ["%alpha"], self.size - self.count)
        self.lines.append("}")
        return self.lines


def generate(n: int, seed: int = 0) -> str:
    """A module of exactly ``n`` (>= MIN_N) statements: constants, declarations, tile and
    scalar ops, loops, branches and yields each count one; kernels of about KERNEL_SIZE."""
    if n < MIN_N:
        raise ValueError(f"n must be at least {MIN_N}")
    rng = random.Random(seed)
    pool = VariantPool(rng)
    kernels = max(1, round(n / KERNEL_SIZE))
    out: list[str] = []
    for k in range(kernels):
        out += KernelGen(f"k{k}", n // kernels + (k < n % kernels), pool, rng).generate()
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- measuring

def statements(m: ir.Module) -> list[ir.Stmt]:
    return [s for k in m.kernels for s in k.walk()]


def signatures(m: ir.Module) -> set[tuple]:
    """Distinct (instruction, operand types, attributes) of the module's tile ops."""
    return {(s.instr.mnemonic, tuple(sorted((n, str(t)) for n, t in s.types().items())),
             tuple(sorted((n, repr(v)) for n, v in s.attrs.items())))
            for s in statements(m) if isinstance(s, ir.TileOp)}


def _timed(fn):  # noqa: ANN001, ANN202
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def run_once(text: str) -> tuple[ir.Module, dict[str, float]]:
    """Parse, verify and print once from a clean heap (so runs do not pay each other's
    garbage collection); the collector otherwise runs as it would in any program."""
    gc.collect()
    m, parse_s = _timed(lambda: asm.parse(text, filename="bench.pto"))
    _, verify_s = _timed(lambda: asm.verify(m, PROFILE))
    _, text_s = _timed(m.to_text)
    return m, {"parse": parse_s, "verify": verify_s, "total": parse_s + verify_s, "to_text": text_s}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="statements in the module (default 100000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs; the one with the best parse + verify is shown")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cprofile", action="store_true", help="print a cProfile of one parse + verify")
    args = ap.parse_args(argv)
    if args.n < MIN_N:
        ap.error(f"--n must be at least {MIN_N}")

    text, gen_s = _timed(lambda: generate(args.n, args.seed))
    if args.cprofile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        asm.verify(asm.parse(text), PROFILE)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return 0
    runs, m = [], None
    calm = calibration()
    for _ in range(max(args.repeat, 1)):
        m = None                            # free the last run's module first
        m, t = run_once(text)
        runs.append(t)
    best = min(runs, key=lambda r: r["total"])
    median = sorted(r["total"] for r in runs)[len(runs) // 2]
    _, full_gc = _timed(gc.collect)
    stmts = statements(m)
    kinds: dict[str, int] = {}
    for s in stmts:
        kinds[type(s).__name__] = kinds.get(type(s).__name__, 0) + 1
    sigs = signatures(m)
    rate = len(stmts) / best["total"]
    print(f"machine   {machine()}; calibration loop {calm * 1e3:.1f} ms (before) / "
          f"{calibration() * 1e3:.1f} ms (after)")
    print(f"module    N = {len(stmts):,} statements in {len(m.kernels)} kernels, {len(text) / 1e6:.1f} MB, "
          f"{len(text.splitlines()):,} lines (generated in {gen_s:.1f} s, seed {args.seed})")
    print("          " + ", ".join(f"{v:,} {k}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])))
    print(f"          {len(sigs):,} distinct tile-op signatures over {len({s[0] for s in sigs})} instructions, "
          f"{len(set(text.splitlines())):,} distinct lines")
    print(f"runs      {len(runs)}; best parse + verify shown, median total {median:.3f} s")
    print(f"parse     {best['parse']:.3f} s")
    print(f"verify    {best['verify']:.3f} s  (profile {PROFILE})")
    print(f"total     {best['total']:.3f} s  ->  {rate:,.0f} statements/s = {rate / TARGET:.2f}x the "
          f"{TARGET:,}/s target")
    print(f"to_text   {best['to_text']:.3f} s")
    print(f"gc        a full collection with the module alive takes {full_gc:.3f} s (paid whenever one runs)")
    print()
    print("| machine | N | parse s | verify s | total s | stmts/s | vs target | to_text s |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {machine()} | {len(stmts)} | {best['parse']:.3f} | {best['verify']:.3f} | {best['total']:.3f} | "
          f"{rate:,.0f} | {rate / TARGET:.2f}x | {best['to_text']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
