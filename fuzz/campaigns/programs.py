"""``programs``: random valid programs on llvm against the reference backend.

A group of inputs shares one program, compiled once per worker; each input runs it on
one argument set (an input = a program + its arguments). Three groups in four are L3
random programs (``conformance.programs``); the fourth is a hand-written stress family:
tile windows at extreme offsets (0, -1, 2^31, 2^63-1, -2^63 ...) or loops whose bounds sit
near INT64_MAX / INT64_MIN. Arrays are views inside canary buffers. Findings: escaping
non-PTOErrors, changed canary bytes, and any disagreement with the reference beyond the
kernel's error budget (``conformance.level3``'s comparison), errors included.
"""
from __future__ import annotations

import dataclasses
import functools
import random
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed as hseed, settings
from hypothesis import strategies as st

from ...assembler import parse
from ...backends import get
from ...backends.compare import error_budget
from ...conformance.level3 import _errors_agree, first_difference
from ...conformance.programs import Argument, KernelArgs, Program, programs
from ...isa.diagnostics import PTOError
from ..canary import Canary
from ..harness import Campaign, Input
from ..outcome import Verdict

PROFILE = "cpu"
BATCH = 8                       # random programs drawn per hypothesis run
I64_MAX, I64_MIN = 2**63 - 1, -2**63
OFFSETS = (0, -1, 1, 15, 16, 17, 2**31, 2**31 - 1, 2**32, I64_MAX, I64_MIN, I64_MAX - 15, -16)
MAX_TRIPS = 64

WINDOW = """kernel @window(%x : !pto.memref<?x16xf32>, %y : !pto.memref<?x16xf32>, %r : index, %c : index, %v : index) {
  .tile %t valid_row = %v : !pto.tile<16x16xf32, valid=?x16>
  %t = tload %x[%r, %c]
  %t = tadds %t, %one
  tstore %y[%r, %c], %t
}
""".replace("%t = tadds %t, %one\n", "")
LOOP = """kernel @loop(%x : !pto.memref<16x16xf32>, %y : !pto.memref<16x16xf32>, %lb : index, %ub : index, %st : index) {
  .const %c0 = 0 : index
  .const %one = 1.0 : f32
  .tile %t : !pto.tile<16x16xf32>
  %t = tload %x[%c0, %c0]
  scf.for %i = %lb to %ub step %st {
    %t = tadds %t, %one
  }
  tstore %y[%c0, %c0], %t
}
"""
STRESS = (WINDOW, LOOP)


@functools.lru_cache(maxsize=4)
def _batch(seed: int, batch: int) -> tuple[Program, ...]:
    """``BATCH`` random programs from one seeded hypothesis run (its first, minimal draw
    skipped so every program is a random one)."""
    drawn: list[Program] = []

    @settings(max_examples=BATCH + 1, database=None, deadline=None, phases=(Phase.generate,),
              suppress_health_check=list(HealthCheck))
    @given(programs(PROFILE, _allow))
    def collect(p: Program) -> None:
        drawn.append(p)

    hseed(seed * 1_000_003 + batch)(collect)()
    return tuple(drawn[1:BATCH + 1]) or tuple(drawn)


def _allow(instr: Any, types: Any) -> bool:
    return get("llvm").unsupported(instr, types, PROFILE) is None


def _trips(lb: int, ub: int, st: int) -> int:
    return max(0, -(-(ub - lb) // st)) if st > 0 else 0


def _stress_args(kind: int, rng: random.Random, index: int) -> tuple[KernelArgs, ...]:
    """One argument set of a stress kernel: extreme offsets, or loop bounds near the ends
    of int64 (at most MAX_TRIPS iterations, or a non-positive step)."""
    seed = rng.randrange(2**32)
    if kind == 0:
        rows = rng.choice((0, 1, 16, 40))
        r = rng.choice(OFFSETS) if rng.random() < 0.7 else rng.randrange(0, max(rows, 1))
        c = rng.choice(OFFSETS) if rng.random() < 0.3 else 0
        v = rng.choice((0, 1, 16, 17, -1, I64_MAX, I64_MIN)) if rng.random() < 0.3 else min(16, max(rows - r, 0))
        args = (Argument("x", "in", "f32", (rows, 16)), Argument("y", "out", "f32", (rows, 16)),
                Argument("r", "scalar", "index", value=r), Argument("c", "scalar", "index", value=c),
                Argument("v", "scalar", "index", value=v))
        return (KernelArgs("window", args, seed, 16, 16),)
    while True:
        edge = rng.choice((I64_MAX, I64_MIN, 2**31, 0))
        lb = edge + rng.randint(-40, 40)
        ub = rng.choice((edge + rng.randint(-40, 40), I64_MAX, I64_MIN, lb))
        st = rng.choice((1, 2, 3, 7, 16, 2**62, I64_MAX)) if rng.random() < 0.95 else rng.choice((0, -1, I64_MIN))
        lb, ub = (max(I64_MIN, min(I64_MAX, x)) for x in (lb, ub))
        if _trips(lb, ub, st) <= MAX_TRIPS:
            break
    args = (Argument("x", "in", "f32", (16, 16)), Argument("y", "out", "f32", (16, 16)),
            Argument("lb", "scalar", "index", value=lb), Argument("ub", "scalar", "index", value=ub),
            Argument("st", "scalar", "index", value=st))
    return (KernelArgs("loop", args, seed, 16, 16),)


def _scalar_extremes(ka: KernelArgs, rng: random.Random) -> KernelArgs:
    """Some argument sets give the free scalar parameters edge values of their type."""
    args = []
    for a in ka.args:
        if a.kind == "scalar" and a.value is None and a.dtype not in ("i1", "index"):
            if a.dtype.startswith(("f", "bf")):
                a = dataclasses.replace(a, value=rng.choice((0.0, -0.0, 1e-30, 65504.0, 3e38, -3e38)))
            else:
                bits = int("".join(ch for ch in a.dtype if ch.isdigit()) or 32)
                lo, hi = (0, 2**bits - 1) if a.dtype.startswith("u") else (-2**(bits - 1), 2**(bits - 1) - 1)
                a = dataclasses.replace(a, value=rng.choice((lo, hi, 0, -1 if lo < 0 else 1)))
        args.append(a)
    return dataclasses.replace(ka, args=tuple(args))


class ProgramsCampaign(Campaign):
    name = "programs"
    timeout = 30.0
    setup_timeout = 240.0           # generating and compiling a new program

    def __init__(self, runs_per_program: int = 100) -> None:
        self.runs = runs_per_program
        self._cache: tuple[Any, Any] | None = None

    def __getstate__(self) -> dict:
        return {"runs": self.runs}

    def __setstate__(self, state: dict) -> None:
        self.runs, self._cache = state["runs"], None

    def group_of(self, index: int) -> int:
        return index // self.runs

    def program(self, seed: int, group: int) -> tuple[str, tuple[KernelArgs, ...] | int]:
        """A group's module text, and its kernels' arguments (random programs) or the stress
        family number."""
        if group % 4 == 3:
            kind = (group // 4) % len(STRESS)
            return STRESS[kind], kind
        n = group - group // 4
        p = _batch(seed, n // BATCH)[n % BATCH % max(len(_batch(seed, n // BATCH)), 1)]
        return p.text, p.kernels

    def make(self, seed: int, index: int) -> Input:
        group = self.group_of(index)
        text, kernels = self.program(seed, group)
        rng = random.Random(f"programs:{seed}:{index}")
        if isinstance(kernels, int):
            calls = _stress_args(kernels, rng, index)
        else:
            calls = tuple(dataclasses.replace(ka, seed=rng.randrange(2**32)) for ka in kernels)
            if index % 5 == 4:
                calls = tuple(_scalar_extremes(ka, rng) for ka in calls)
        return Input(index, (text, calls), group=group, seed=seed)

    def _compiled(self, group: int, text: str) -> tuple[Any, Any]:
        if self._cache is None or self._cache[0] != (group, text):
            m = parse(text)
            self._cache = ((group, text), (get("reference").compile(m, PROFILE),
                                           get("llvm").compile(m, PROFILE, cache=False, threads=1)))
        return self._cache[1]

    def execute(self, inp: Input) -> Verdict | None:
        text, calls = inp.payload
        ref, llvm = self._compiled(inp.group, text)
        module = ref.module
        for ka in calls:
            want = ka.make()
            canary = Canary()
            got = {n: canary.view(n, v) if isinstance(v, np.ndarray) else v for n, v in ka.make().items()}
            want_err = _run(ref, ka.kernel, want, "reference")
            got_err = _run(llvm, ka.kernel, got, "llvm")
            oob = canary.check()
            if oob:
                return Verdict("oob", detail=f"llvm @{ka.kernel}: {oob}")
            why = _errors_agree(got_err, want_err)
            if why is not None:
                return Verdict("mismatch", detail=f"llvm @{ka.kernel} {why}")
            if want_err is not None:
                raise want_err
            budget = error_budget(module.kernel(ka.kernel)) * max(ka.trips, 1)
            diff = first_difference(got, want, budget)
            if diff is not None:
                return Verdict("mismatch", detail=f"llvm @{ka.kernel}: {diff} (budget {budget:g} eps)")
        return None

    def reproduce(self, inp: Input) -> dict[str, str | bytes]:
        text, calls = inp.payload
        return {".pto": text,
                ".py": ("# replays the input through the campaign's own code (needs the same openpto)\n"
                        "from openpto.fuzz.campaigns.programs import ProgramsCampaign\n"
                        "from openpto.fuzz.harness import classify\n"
                        f"print(classify(ProgramsCampaign({self.runs}), {inp.seed}, {inp.index}))\n"
                        + "".join(f"# @{ka.kernel}: {ka!r}\n" for ka in calls))}


def _run(exe: Any, kernel: str, args: dict[str, Any], backend: str) -> PTOError | None:
    try:
        exe.run(kernel, **args)
    except PTOError as e:
        e.render()
        return e
    except BaseException as e:
        e.add_note(f"raised by the {backend} backend")
        raise
    return None
