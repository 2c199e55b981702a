"""Which situations a conformance run exercised, per instruction x dtype tuple.

A situation is a kind of case where backends go wrong (a one-column valid region, operands
whose valid regions differ, a NaN in both operands at the same position ...). Which ones an
instruction admits follows from its declaration: structural ones are those for which
``cases.structured`` built a case the spec's checks accept, value ones from the operands'
dtypes and the numerics contract (``applicable``). Level 2 records what each checked case
really had (``exercised`` looks at the case; value recipes are recorded by name) and fails
its own self-check when an applicable situation was never run: a generator change that stops
reaching one is caught, not hidden.
"""
from __future__ import annotations

import functools
from collections import defaultdict
from typing import Any, Iterable, Mapping

import ml_dtypes
import numpy as np

from ..isa import dtypes as dt
from ..isa.spec import WHOLE, Kind, Role
from ..isa.registry import get
from ..isa.types import GlobalType, Layout, Pipe, ScalarType, TileType, parse_type
from .cases import Case, ranged_operands

#: situation -> what it means (the report's legend; the order is the report's column order)
SITUATIONS: dict[str, str] = {
    "nonsquare": "every static tile has rows != cols (swapped axes show)",
    "partial": "a tile whose valid region is smaller than its shape",
    "one-row": "a tile with 1 valid row out of several",
    "one-col": "a tile with 1 valid column out of several",
    "narrow": "a tile whose valid width is smaller than its valid height",
    "differ": "two tile operands of one shape whose valid regions differ",
    "reshaped": "a tile operand of a static shape of its own: out of proportion with the other tiles' "
                "as every declared example has them (more rows or columns, the valid region as before)",
    "offsets": "a global addressed at a non-zero index on every dimension (a view into a larger array)",
    **{f"rank-{r}": f"a windowed global of rank {r} addressed at a non-zero index on every dimension"
       for r in range(1, 6)},
    "strided": "a global passed as a non-contiguous view",
    "in-place": "an input tile that is the output tile (dst == src, acc_in == dst)",
    "layouts": "a tile operand in another layout of ND/DN than the declaration's examples give it, or a "
               "per-row vector in the wide ND form (static width > 1, one valid column)",
    "edges": "an index operand at and just past the ends of its declared range or off its alignment; "
             "every pipe for a pipe operand (two pipe operands equal, ALL)",
    "joint-specials": "special values at the same position of two float operands (+0/-0, NaN/NaN, NaN/number)",
    "ties": "exact rounding ties of narrower floats and of the integers (int -> float ties too)",
    "int-extremes": "integer min/max/-1/0/1 in every integer operand, at every position",
    "overflow": "sums whose partial sums overflow the input type but not the accumulation type",
}

#: value situations: each is one input recipe of ``values.situation_inputs``
VALUE_SITUATIONS = ("joint-specials", "ties", "int-extremes", "overflow")
#: level 3: features of whole programs (conformance/features.py), recorded on L3:programs
PROGRAM_FEATURES: dict[str, str] = {
    "matrix-pipeline": "L3: a kernel loads into mat, moves to left/right, multiplies into acc, stores or moves the acc tile",
    "acc-in-place": "L3: tmatmul_acc / tgemv_acc with acc_in == dst in a loop over K of at least 2 steps",
    "in-place-chain": "L3: two or more elementwise steps in a row that each write the tile they read",
}
STRUCTURAL = tuple(s for s in SITUATIONS if s not in VALUE_SITUATIONS and s != "strided")

_F32_MAX = float(np.finfo(np.float32).max)


def _tiles(case: Case) -> dict[str, TileType]:
    return {n: t for n, t in case.types.items() if isinstance(t, TileType) and not t.dynamic}


def structural(case: Case) -> set[str]:
    """The structural situations ``case`` itself is in (read from its types and offsets)."""
    out: set[str] = set()
    tiles = _tiles(case)
    if tiles and all(t.rows != t.cols for t in tiles.values()):
        out.add("nonsquare")
    for t in tiles.values():
        vr, vc = int(t.valid_rows or 0), int(t.valid_cols or 0)
        if (vr, vc) != (t.rows, t.cols):
            out.add("partial")
        if vr == 1 and t.rows > 1:
            out.add("one-row")
        if vc == 1 and t.cols > 1:
            out.add("one-col")
        if 0 < vc < vr:
            out.add("narrow")
    shapes: dict[tuple[int, int], set[Any]] = defaultdict(set)
    for t in tiles.values():
        shapes[t.shape].add(t.valid)
    if any(len(v) > 1 for v in shapes.values()):
        out.add("differ")
    if _out_of_proportion(case, tiles):
        out.add("reshaped")
    if case.aliases:
        out.add("in-place")
    if _at_edge(case):
        out.add("edges")
    if _other_layout(case, tiles):
        out.add("layouts")
    for name, t in case.types.items():
        at = case.offsets.get(name)
        if isinstance(t, GlobalType) and at and all(i > 0 for i in at):
            out.add("offsets")
            if case.instr.operand(name).window != WHOLE:
                out.add(f"rank-{t.rank}")
    return out


@functools.lru_cache(maxsize=None)
def _example_tiles(mnemonic: str) -> dict[str, TileType]:
    """Each tile operand's type in the declaration's example (where base cases start)."""
    types = {n: parse_type(s) for n, s in get(mnemonic).example.types.items()}
    return {n: t for n, t in types.items() if isinstance(t, TileType)}


@functools.lru_cache(maxsize=None)
def _example_shapes(mnemonic: str) -> tuple[dict[str, tuple[int, int]], ...]:
    """Each declared example's static tile shapes by operand."""
    instr = get(mnemonic)
    return tuple({n: t.shape for n, s in ex.types.items() for t in [parse_type(s)] if isinstance(t, TileType)}
                 for ex in (instr.example,) + instr.more_examples)


def _out_of_proportion(case: Case, tiles: Mapping[str, TileType]) -> bool:
    """No declared example has ``case``'s tiles in the same proportions (the shapes of a whole-case
    scaling of it): some operand has a static shape of its own (what ``cases.reshaped`` builds;
    the wide per-row form of ``layouts`` is one too). The examples of the case's form (the same
    tile operands) are compared, else those sharing at least two tile operands with it."""
    examples = _example_shapes(case.instr.mnemonic)
    same_form = [s for s in examples if set(s) == set(tiles)]
    compared = False
    for shapes in same_form or examples:
        names = [n for n in tiles if n in shapes]
        if len(names) < 2:
            continue
        compared = True
        (r0, c0), (e0, f0) = tiles[names[0]].shape, shapes[names[0]]
        if all(t.rows * e0 == r0 * e and t.cols * f0 == c0 * f
               for n in names[1:] for t, (e, f) in [(tiles[n], shapes[n])]):
            return False
    return compared


def _other_layout(case: Case, tiles: Mapping[str, TileType]) -> bool:
    """A tile operand in another layout than the declaration's example gives it, or in the wide
    ND per-row form where the example has one static column (what ``cases.structured`` folds in)."""
    example = _example_tiles(case.instr.mnemonic)
    for n, t in tiles.items():
        e = example.get(n)
        if e is not None and (e.layout is not t.layout or (
                t.layout is Layout.ND and t.cols > 1 and t.valid_cols == 1 and e.cols == 1)):
            return True
    return False


def _at_edge(case: Case) -> bool:
    """An index operand outside its declared range or alignment, or a pipe operand that is ALL
    or equal to another pipe operand (what ``cases.edges`` builds)."""
    pipes = []
    for op in ranged_operands(case.instr):
        v = case.scalars.get(op.name)
        if op.kind is Kind.PIPE:
            pipes.append(v)
            continue
        if not isinstance(v, int) or isinstance(v, bool):
            continue
        lo, hi = op.bounds if op.bounds is not None else (None, None)
        if (lo is not None and v < lo) or (hi is not None and v > hi) or (op.multiple and v % op.multiple):
            return True
    named = [p for p in pipes if p is not None]
    return Pipe.ALL in named or len(set(named)) < len(named)


def exercised(case: Case, inputs: Mapping[str, Any], recipe: str | None = None) -> set[str]:
    """Every situation one checked example was in: its structure, a strided global among its
    inputs, and the value recipe it was built with (None for hypothesis' own draws)."""
    out = structural(case)
    if any(not getattr(v, "contiguous", True) for v in inputs.values()):
        out.add("strided")
    if recipe is not None:
        out.add(recipe)
    return out


def _input_dtypes(case: Case) -> list[Any]:
    """The dtypes of the operands the instruction reads (tiles, globals, scalar parameters)."""
    out = []
    for op in case.instr.operands:
        t = case.types.get(op.name)
        if op.role is not Role.OUT and (isinstance(t, (TileType, GlobalType)) or (
                op.kind is Kind.SCALAR and isinstance(t, ScalarType) and t.name != "index")):
            out.append(t.dtype)
    return out


def _output_dtypes(case: Case) -> list[Any]:
    return [t.dtype for op in case.instr.operands if op.role is not Role.IN
            for t in [case.types.get(op.name)] if isinstance(t, (TileType, GlobalType))]


def value_situations(case: Case) -> set[str]:
    """The value situations the declaration admits for ``case``'s operands."""
    ins = _input_dtypes(case)
    floats = [d for d in ins if d.is_float]
    out: set[str] = set()
    if len(floats) >= 2:
        out.add("joint-specials")
    if floats or (any(d.is_int for d in ins) and any(d.is_float for d in _output_dtypes(case))):
        out.add("ties")
    if any(d.is_int for d in ins):
        out.add("int-extremes")
    if case.instr.numerics.kind == "sum" and any(
            float(ml_dtypes.finfo(d.np_dtype).max) * 2**20 < _F32_MAX
            for d in floats if d not in dt.CODED):   # coded floats are drawn as raw codes
        out.add("overflow")
    return out


def applicable(built: Iterable[Case], strided: bool) -> set[str]:
    """Situations the run must reach: everything the built cases are in, the value
    situations of their operands, ``edges`` when the declaration has ranged index or pipe
    operands, and ``strided`` when a global operand exists."""
    out: set[str] = set()
    for c in built:
        out |= structural(c) | value_situations(c)
        if any(op.name in c.scalars for op in ranged_operands(c.instr)):
            out.add("edges")                 # admitted by the declaration, built or not
        if strided and any(isinstance(t, GlobalType) for t in c.types.values()):
            out.add("strided")
    return out


def summary(outcomes: Iterable[Any]) -> dict[str, dict[str, int]]:
    """situation -> {"applicable": pairs that admit it, "exercised": pairs that ran it}."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: {"applicable": 0, "exercised": 0})
    for o in outcomes:
        for s, seen in getattr(o, "coverage", {}).items():
            out[s]["applicable"] += 1
            out[s]["exercised"] += int(bool(seen))
    return {s: dict(out[s]) for s in {**SITUATIONS, **PROGRAM_FEATURES} if s in out}


def markdown(outcomes: Iterable[Any]) -> str:
    """The coverage table of a report: per situation, how many instruction x dtype pairs admit
    it and how many ran it; then every pair that missed one (the self-check's failures)."""
    outcomes = [o for o in outcomes if getattr(o, "coverage", None)]
    lines = ["| situation | meaning | pairs admitting it | pairs exercising it |", "|---|---|---:|---:|"]
    for s, n in summary(outcomes).items():
        lines.append(f"| {s} | {SITUATIONS.get(s) or PROGRAM_FEATURES[s]} | {n['applicable']} | {n['exercised']} |")
    missed = [(o, [s for s, seen in o.coverage.items() if not seen]) for o in outcomes]
    missed = [(o, m) for o, m in missed if m]
    if missed:
        lines += ["", "Never generated although the spec allows it:", ""]
        lines += [f"- {o.instruction} [{o.dtypes}]: {', '.join(m)}" for o, m in missed]
    return "\n".join(lines) + "\n"
