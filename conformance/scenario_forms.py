"""How the L3 synchronisation scenarios are written on a profile: which compute steps and which
ordering statements the profile's ISA has.

A scenario scales a block and shifts it (``x * a + b``) and orders a store before a load with a
flag. Not every profile has those instructions (a6 has no tile-scalar arithmetic; a6 and the
Kirin parts have no SET_FLAG / WAIT_FLAG), so each step is a table of forms in order of
preference and the first one the profile provides (``Instruction.supported_on`` and the dtype
rule, from isa/) is used; each form carries numpy's reading of it, so a scenario's expectation
follows the program it ran. No table here is keyed by profile.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..isa import dtypes as dt
from ..isa.registry import get
from ..isa.types import Pipe

SCALE, SHIFT = 1.5, -0.25


def provides(profile: str, mnemonic: str, dtype: str | None = None) -> bool:
    """``mnemonic`` is legal on ``profile`` (with every typed operand of ``dtype``, if given)."""
    instr = get(mnemonic)
    if not instr.supported_on(profile):
        return False
    rule = instr.dtype_rule(profile)
    if dtype is None or rule is None:
        return True
    return (dt.get(dtype),) * len(rule.operands) in rule.tuples


@dataclass(frozen=True)
class Step:
    """A compute step ``%dst = op %src, OTHER``: OTHER is the scalar parameter ``scalar`` (a
    tile-scalar op) or, with None, a tile the scenario names (the source itself, or the block
    of the input x). ``numpy(v, x)`` is its value on f32 data (v the source, x the input
    block), before the one rounding to the element type."""

    mnemonic: str
    scalar: str | None
    numpy: Callable[[np.ndarray, np.ndarray], np.ndarray]

    def line(self, dst: str, src: str | None = None, other: str | None = None,
             tile_type: str | None = None, d: str | None = None) -> str:
        """The statement on ``%src`` (default ``%dst``: in place) with ``%other`` (default
        ``%src``) as the tile operand, and a signature when ``tile_type`` is given (a subset
        tile, whose type the parser cannot infer)."""
        src = src or dst
        text = f"%{dst} = {self.mnemonic.lower()} %{src}, {self.scalar or '%' + (other or src)}"
        if tile_type is not None:
            text += f" : ({tile_type}, {d if self.scalar else tile_type}) -> {tile_type}"
        return text


#: x * a, else x + x (a profile without TMULS: the TADD of the block with itself doubles it)
SCALE_STEPS = (Step("TMULS", "%a", lambda v, x: v * np.float32(SCALE)),
               Step("TADD", None, lambda v, x: v + v))
#: mid + b, else mid + x (the TADD of two different blocks, so an adder that drops an
#: operand shows)
SHIFT_STEPS = (Step("TADDS", "%b", lambda v, x: v + np.float32(SHIFT)),
               Step("TADD", None, lambda v, x: v + x))


@dataclass(frozen=True)
class Sync:
    """One way to make pipe DST wait for what pipe SRC issued before: ``signal`` where SRC
    is done, ``wait`` before DST's instruction (either may be no statement). ``pipe``: the
    TSYNC pipe value the form uses, which the profile's value rule must allow."""

    needs: tuple[str, ...]
    pipe: Pipe | None
    signal: Callable[[str, str, int], str]
    wait: Callable[[str, str, int], str]

    def available(self, profile: str) -> bool:
        if not all(provides(profile, m) for m in self.needs):
            return False
        rules = [r for m in self.needs for r in get(m).value_rules(profile) if r.name == "pipe"]
        return self.pipe is None or all(self.pipe in r.values for r in rules)

    def waits(self, pairs: list[tuple[str, str, int]], indent: str) -> str:
        """The waits for several flags at one point, each statement once (a barrier covers
        them all)."""
        lines = dict.fromkeys(self.wait(s, e, i) for s, e, i in pairs)
        return "".join(f"{indent}{ln}\n" for ln in lines if ln)

    def signals(self, pairs: list[tuple[str, str, int]], indent: str) -> str:
        lines = dict.fromkeys(self.signal(s, e, i) for s, e, i in pairs)
        return "".join(f"{indent}{ln}\n" for ln in lines if ln)


def _flag(verb: str) -> Callable[[str, str, int], str]:
    return lambda s, e, i: f"{verb} #pto.pipe<{s}>, #pto.pipe<{e}>, {i}"


#: a flag per (SRC, DST, id); else TSYNC's all-pipe barrier at the wait, as the a6 event header
#: does for a pipe pair its flags cannot join (decision "L3 scenarios per profile")
SYNCS = (Sync(("SET_FLAG", "WAIT_FLAG"), None, _flag("set_flag"), _flag("wait_flag")),
         Sync(("TSYNC",), Pipe.ALL, lambda s, e, i: "", lambda s, e, i: "tsync #pto.pipe<ALL>"))


@dataclass(frozen=True)
class Plan:
    """The forms one scenario run uses on a profile and dtype."""

    scale: Step
    shift: Step
    sync: Sync


def plan(profile: str, dtype: str) -> Plan | str:
    """The first form of each table the profile provides, or why there is none."""
    scale = next((s for s in SCALE_STEPS if provides(profile, s.mnemonic, dtype)), None)
    shift = next((s for s in SHIFT_STEPS if provides(profile, s.mnemonic, dtype)), None)
    sync = next((s for s in SYNCS if s.available(profile)), None)
    missing = [f"the {what} step on {dtype} ({' or '.join(s.mnemonic for s in table)})"
               for what, got, table in (("scale", scale, SCALE_STEPS), ("shift", shift, SHIFT_STEPS))
               if got is None]
    if sync is None:
        missing.append("an ordering (a flag pair or an all-pipe TSYNC)")
    if missing:
        return f"{profile} lacks " + "; ".join(missing)
    return Plan(scale, shift, sync)        # type: ignore[arg-type]


def affine(x: np.ndarray, d: str, p: Plan) -> dict[str, np.ndarray]:
    """mid = scale(x), y = shift(mid, x), each rounded once to the element type (f32 holds
    the exact product and sum of two f16 values, so rounding the f32 result is rounding once)."""
    t, x32 = dt.get(d).np_dtype, x.astype(np.float32)
    mid = p.scale.numpy(x32, x32).astype(t)
    y = p.shift.numpy(mid.astype(np.float32), x32).astype(t)
    return {"mid": mid, "y": y}


__all__ = ["Plan", "SCALE_STEPS", "SHIFT_STEPS", "SYNCS", "Step", "Sync", "affine", "plan", "provides"]
