"""The ``ascend_sim`` backend: values, cycles, races and deadlocks of one run on a modelled AI core.

Values are the reference backend's (its lowering of the ``isa/`` semantics, in program order);
timing comes from ``engine.Engine`` over the profile's ``isa.machines.Machine``; hazards from
``hazards.Shadow``. Options: ``hazards`` ("collect", the default: races and flags left set are
listed in ``Result.hazards``; "raise": the first is raised as an ``OrderError``; "off": no
access tracking) and ``strict`` (the reference's uninitialised-read and poison checks). A
deadlock is always raised (``ORDER_DEADLOCK``): on hardware the kernel would never end.
Each block of a launch runs on a core of its own from cycle 0 (multi-core placement with shared
HBM is not modelled yet); see docs/ascend_sim.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ...assembler.ir import Module
from ...isa.diagnostics import Location, OrderError, PTOError
from ...isa.machines import BOUND_NAMES, MACHINES, PIPES, Machine
from ...isa.types import TileType
from ..arguments import bind, written_params
from ..base import Backend, Executable, Result, flag_option
from ..reference import ReferenceBackend, ReferenceExecutable
from .engine import Engine
from .hazards import Hazard, Shadow
from .lower import SimContext, SimLowering
from .placement import Placement

HAZARD_MODES = ("collect", "raise", "off")


@dataclass
class SimResult(Result):
    """A run's outputs and counters plus its timing: total cycles and microseconds (the slowest
    block), busy cycles and utilisation per pipe (summed over blocks), the bound (the pipe with
    the most busy cycles), and the hazards found."""

    machine: str = ""
    cycles: float = 0.0
    time_us: float = 0.0
    busy: dict[str, float] = field(default_factory=dict)
    utilisation: dict[str, float] = field(default_factory=dict)
    bound: str = ""
    hazards: list[Hazard] = field(default_factory=list)


class AscendSimExecutable(Executable):
    def __init__(self, module: Module, profile: str, machine: Machine, strict: bool, hazards: str,
                 semantics: Mapping[str, Any]) -> None:
        super().__init__(module, profile)
        self.machine, self.strict, self.hazards = machine, strict, hazards
        self._kernels = {k.name: (k, SimLowering(k, semantics, machine), sorted(written_params(k)))
                         for k in module.kernels}

    def run(self, kernel: str, *args: Any, block_num: int = 1, trace: bool = False, **kwargs: Any) -> Result:
        block_num = self._check_launch(kernel, block_num)
        k, low, outs = self._kernels[kernel]
        values = bind(k, args, kwargs)
        events: list[dict[str, Any]] | None = [] if trace else None
        counts: dict[str, int] = {}
        busy = [0.0] * len(PIPES)
        cycles = 0.0
        found: list[Hazard] = []
        for b in range(block_num):
            eng, ctx = self._block(k, low, values, b, block_num, events)
            for name, n in ctx.counts.items():
                counts[name] = counts.get(name, 0) + n
            busy = [x + y for x, y in zip(busy, eng.busy)]
            cycles = max(cycles, eng.cycles())
            found.extend(eng.shadow.hazards)
        counts["instructions"] = sum(counts.values())
        counts["cycles"] = int(round(cycles))
        counts["races"] = sum(1 for h in found if h.code == "ORDER_RACE")
        span = max(cycles * block_num, 1e-9)
        work = max(((v, i) for i, v in enumerate(busy) if PIPES[i].value != "S"), default=(0.0, 0))
        bound = BOUND_NAMES[PIPES[work[1]]] if work[0] > 0 else "Scalar"
        return SimResult({n: values[n] for n in outs}, counts, events, machine=self.machine.name, cycles=cycles,
                         time_us=cycles / self.machine.clock_mhz,
                         busy={p.value: v for p, v in zip(PIPES, busy)},
                         utilisation={p.value: v / span for p, v in zip(PIPES, busy)}, bound=bound, hazards=found)

    def _block(self, k: Any, low: SimLowering, values: dict[str, Any], b: int, block_num: int,
               events: list[dict[str, Any]] | None) -> tuple[Engine, SimContext]:
        regs = ReferenceExecutable._registers(low, k, values)     # the reference's registers and tiles
        slot_names = {i: n for n, i in low.slots.items()}
        named: list[tuple[str, TileType, Any]] = [(p.name, p.type, regs[low.slots[p.name]]) for p in k.params
                                                  if isinstance(p.type, TileType)]
        named += [(slot_names[i], t, regs[i]) for i, t in low.tiles.items()]
        globals_ = {p.name: values[p.name] for p in k.params
                    if isinstance(values[p.name], np.ndarray) and not isinstance(p.type, TileType)}
        place = Placement(self.machine, k.name, named, low.manual, globals_, track=self.hazards != "off")
        shadow = Shadow(k.name, self.hazards, place.describe)
        eng = Engine(self.machine, k.name, shadow, events, b)
        ctx = SimContext(strict=self.strict, block_idx=b, block_num=block_num, sim=eng, place=place)
        with np.errstate(all="ignore"):
            for step in low.body:
                step(regs, ctx)
        pending = eng.finish()
        for text in pending:
            if self.hazards == "raise":
                raise OrderError("ORDER_FLAG_PENDING", text, location=Location(kernel=k.name),
                                 expected="every flag set consumed by a wait", actual=text)
            if self.hazards == "collect":
                shadow.hazards.append(Hazard("ORDER_FLAG_PENDING", text, Location(kernel=k.name)))
        return eng, ctx


class AscendSimBackend(Backend):
    """Every instruction the reference runs (its values are the reference's), on the profiles
    that have a machine model (``isa.machines.MACHINES``)."""

    name = "ascend_sim"
    default_profile = "a3"
    profiles = tuple(MACHINES)
    rules: Mapping[str, Any] = ReferenceBackend.rules

    def _compile(self, module: Module, profile: str, strict: bool = True, hazards: str = "collect",
                 **options: Any) -> Executable:
        """``hazards``: "collect" (default), "raise" or "off"; ``strict``: the reference's checks."""
        if options:
            raise PTOError("PTO_OPTION", f"unknown ascend_sim backend option(s): {', '.join(options)}",
                           expected="strict, hazards", actual=", ".join(options))
        flag_option("strict", strict)
        if hazards not in HAZARD_MODES:
            raise PTOError("PTO_OPTION", "hazards must be one of " + ", ".join(HAZARD_MODES),
                           expected=" | ".join(HAZARD_MODES), actual=repr(hazards))
        return AscendSimExecutable(module, profile, MACHINES[profile], strict, hazards, self.rules)
