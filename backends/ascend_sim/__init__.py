"""The ``ascend_sim`` backend: values, cycles, races and deadlocks of one run on a modelled AI core.

Values are the reference backend's (its lowering of the ``isa/`` semantics, in program order);
timing comes from ``engine.Engine`` over the profile's ``isa.machines.Machine``; hazards from
``hazards.Shadow`` (each block's pipes) and ``global_races`` (the blocks of a launch on global memory). Options: ``hazards`` ("collect", the default: races and flags left set are
listed in ``Result.hazards``; "raise": the first is raised as an ``OrderError``; "off": no
access tracking) and ``strict`` (the reference's uninitialised-read and poison checks). A
deadlock is always raised (``ORDER_DEADLOCK``): on hardware the kernel would never end.
Option ``values`` (default True): False skips the tile instructions' values (timing only).
The blocks of a launch are placed on the machine's AIV / AIC cores or MIX groups, in waves when
there are more blocks than cores, with HBM bandwidth shared among them (``multicore``); see
docs/ascend_sim.md.
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
from .global_races import GlobalAccesses
from .hazards import Hazard, Shadow
from .lower import SimContext, SimLowering
from .multicore import Launch, core_kind, core_name, schedule
from .placement import LaunchShare, Placement, spans
from .replay import EachBlock, FirstPass, Replayer

HAZARD_MODES = ("collect", "raise", "off")


@dataclass
class SimResult(Result):
    """A run's outputs and counters plus its timing: total cycles and microseconds (when the last
    core finishes), busy cycles per pipe (summed over blocks) and utilisation (over the cores
    used for the whole run), the bound (the pipe with the most busy cycles), the hazards found,
    and the launch: the core kind (AIV, AIC or MIX), each core's finishing cycle, each block's
    (block, core, start, end) and the bytes moved across HBM with their mean rate (GB/s).
    A timing-only run (``values=False``) has no outputs."""

    machine: str = ""
    cycles: float = 0.0
    time_us: float = 0.0
    busy: dict[str, float] = field(default_factory=dict)
    utilisation: dict[str, float] = field(default_factory=dict)
    bound: str = ""
    hazards: list[Hazard] = field(default_factory=list)
    core_kind: str = "AIV"
    core_cycles: dict[str, float] = field(default_factory=dict)
    blocks: list[tuple[int, str, float, float]] = field(default_factory=list)
    hbm_bytes: int = 0
    hbm_gbps: float = 0.0


class AscendSimExecutable(Executable):
    simulates = True

    def __init__(self, module: Module, profile: str, machine: Machine, strict: bool, hazards: str,
                 semantics: Mapping[str, Any], values: bool = True) -> None:
        super().__init__(module, profile)
        self.machine, self.strict, self.hazards, self.values = machine, strict, hazards, values
        self._kernels = {k.name: (k, SimLowering(k, semantics, machine, values), sorted(written_params(k)))
                         for k in module.kernels}

    def run(self, kernel: str, *args: Any, block_num: int = 1, trace: bool = False, **kwargs: Any) -> Result:
        block_num = self._check_launch(kernel, block_num)
        k, low, outs = self._kernels[kernel]
        values = bind(k, args, kwargs)
        if block_num == 1:
            eng, ctx, found = self._block(k, low, values, [] if trace else None)
            kind = core_kind(low.units)
            launch = Launch([eng], [core_name(kind, 0)], kind)
            for e in eng.trace or ():
                e["core"] = launch.cores[0]
            return self._result(k, values, outs, ctx.counts, found, launch, eng.trace)
        counts: dict[str, int] = {}
        found = []
        l2: set = set()
        first: list[Any] = []
        timer = FirstPass(self.machine, k.name)
        arrays = self._arrays(k, values)
        shared = GlobalAccesses(k.name, [(lo, hi) for lo, hi, _ in arrays]) if self.hazards != "off" else None
        share = LaunchShare(not low.manual)     # what the blocks' placements share
        for b in range(block_num):
            timed, ctx, hazards = self._launched_block(k, low, values, b, block_num, l2, timer, arrays, share)
            for name, n in ctx.counts.items():
                counts[name] = counts.get(name, 0) + n
            first.append(timed)
            found.extend(hazards)
            if shared is not None:
                shared.add_block(b, timed.ops, ctx.place.describe, timer.like[b])
        if shared is not None:                # races between blocks on global memory
            found.extend(shared.races(self.hazards))
        kind = core_kind(low.units)
        traces: dict[int, list[dict[str, Any]]] = {}

        def replay(b: int, start: float, core: str, stretch: dict[int, float]) -> Engine:
            events: list[dict[str, Any]] | None = [] if trace else None
            eng = Engine(self.machine, k.name, None, events, b, start=start, core=core, stretch=stretch)
            for op in first[b].ops or ():
                eng.issue(op)
            eng.finish()
            if events is not None:
                traces[b] = events
            return eng
        launch = schedule(self.machine, kind, first, EachBlock(replay, first) if trace else
                          Replayer(self.machine, k.name, first, timer.shape))
        if trace and not traces:          # placed without a replay: time each block where it runs
            for b, eng in enumerate(launch.engines):
                replay(b, eng.start, launch.cores[b], {})
        events = [e for b in sorted(traces) for e in traces[b]] if trace else None
        return self._result(k, values, outs, counts, found, launch, events)

    def _result(self, k: Any, values: dict[str, Any], outs: list[str], counts: dict[str, int], found: list[Hazard],
                launch: Launch, events: list[dict[str, Any]] | None) -> SimResult:
        engines = launch.engines
        cycles = max(eng.cycles() for eng in engines)
        busy = [sum(col) for col in zip(*(eng.busy for eng in engines))]
        per_core: dict[str, float] = {}
        for eng, core in zip(engines, launch.cores):
            per_core[core] = max(per_core.get(core, 0.0), eng.cycles())
        moved = sum(eng.hbm_bytes() for eng in engines)
        counts["instructions"] = sum(counts.values())
        counts["cycles"] = int(round(cycles))
        counts["races"] = sum(1 for h in found if h.code == "ORDER_RACE")
        span = max(cycles * len(per_core), 1e-9)
        work = max(((v, i) for i, v in enumerate(busy) if PIPES[i].value != "S"), default=(0.0, 0))
        bound = BOUND_NAMES[PIPES[work[1]]] if work[0] > 0 else "Scalar"
        time_us = cycles / self.machine.clock_mhz
        return SimResult({n: values[n] for n in outs} if self.values else {}, counts, events,
                         machine=self.machine.name, cycles=cycles, time_us=time_us,
                         busy={p.value: v for p, v in zip(PIPES, busy)},
                         utilisation={p.value: v / span for p, v in zip(PIPES, busy)}, bound=bound, hazards=found,
                         core_kind=launch.kind, core_cycles=per_core,
                         blocks=[(b, core, eng.start, eng.cycles()) for b, (eng, core)
                                 in enumerate(zip(engines, launch.cores))],
                         hbm_bytes=moved, hbm_gbps=moved / max(time_us * 1e3, 1e-9))

    def _setup(self, k: Any, low: SimLowering, values: dict[str, Any], b: int, block_num: int,
               l2: set | None, arrays: list[tuple[int, int, str]],
               share: LaunchShare | None = None) -> tuple[list[Any], Shadow, SimContext]:
        """A block's registers (the reference's), tile placement, race shadow and context;
        ``arrays``: the global arguments' byte ranges (``placement.spans``); ``share``: what the
        blocks of the launch share (``placement.LaunchShare``)."""
        regs = ReferenceExecutable._registers(low, k, values)     # the reference's registers and tiles
        slot_names = {i: n for n, i in low.slots.items()}
        named: list[tuple[str, TileType, Any]] = [(p.name, p.type, regs[low.slots[p.name]]) for p in k.params
                                                  if isinstance(p.type, TileType)]
        named += [(slot_names[i], t, regs[i]) for i, t in low.tiles.items()]
        place = Placement(self.machine, k.name, named, low.manual, arrays, track=self.hazards != "off",
                          share=share)
        uses = low.global_uses
        if uses is not None and set(uses) <= {name for _, _, name in arrays}:   # every global a caller array
            known = [uses.get(name, frozenset()) for _, _, name in arrays]
        else:
            known = None
        shadow = Shadow(k.name, self.hazards, place.describe, [(lo, hi) for lo, hi, _ in arrays], known)
        ctx = SimContext(strict=self.strict and self.values, block_idx=b, block_num=block_num, place=place, l2=l2)
        return regs, shadow, ctx

    def _block(self, k: Any, low: SimLowering, values: dict[str, Any],
               events: list[dict[str, Any]] | None) -> tuple[Engine, SimContext, list[Hazard]]:
        """A kernel run on one core: each instruction issued to the engine as it is reached."""
        regs, shadow, ctx = self._setup(k, low, values, 0, 1, None, self._arrays(k, values))
        eng = Engine(self.machine, k.name, shadow, events, 0)
        ctx.issuers = (eng.work, eng.set_flag, eng.wait_flag)
        with np.errstate(all="ignore"):
            for step in low.body:
                step(regs, ctx)
        return eng, ctx, self._pending(k, shadow, eng.finish())

    def _arrays(self, k: Any, values: dict[str, Any]) -> list[tuple[int, int, str]]:
        return spans({p.name: values[p.name] for p in k.params
                      if isinstance(values[p.name], np.ndarray) and not isinstance(p.type, TileType)})

    def _launched_block(self, k: Any, low: SimLowering, values: dict[str, Any], b: int, block_num: int,
                        l2: set, timer: FirstPass, arrays: list[tuple[int, int, str]],
                        share: LaunchShare) -> tuple[Any, SimContext, list[Hazard]]:
        """Block ``b`` of a launch: its values first, its ops recorded, then timed by ``timer``
        (once per distinct op stream). When the values fail, the ops issued before the failure
        are timed first, so a race or deadlock among them is raised before it, as when each
        instruction is issued as it is reached."""
        regs, shadow, ctx = self._setup(k, low, values, b, block_num, l2, arrays, share)
        ops: list[Any] = []
        ctx.issuers = (ops.append,) * 3
        failed = None
        try:
            with np.errstate(all="ignore"):
                for step in low.body:
                    step(regs, ctx)
        except PTOError as e:
            failed = e
        if failed is not None:
            eng = Engine(self.machine, k.name, shadow, None, b)
            for op in ops:
                eng.issue(op)
            raise failed
        timed, pending = timer.time(b, ops, shadow)
        return timed, ctx, self._pending(k, shadow, pending)

    def _pending(self, k: Any, shadow: Shadow, pending: list[str]) -> list[Hazard]:
        """The shadow's races, then the flags left set (raised in "raise" mode)."""
        for text in pending:
            if self.hazards == "raise":
                raise OrderError("ORDER_FLAG_PENDING", text, location=Location(kernel=k.name),
                                 expected="every flag set consumed by a wait", actual=text)
            if self.hazards == "collect":
                shadow.hazards.append(Hazard("ORDER_FLAG_PENDING", text, Location(kernel=k.name)))
        return shadow.hazards


class AscendSimBackend(Backend):
    """Every instruction the reference runs (its values are the reference's), on the profiles
    that have a machine model (``isa.machines.MACHINES``)."""

    name = "ascend_sim"
    default_profile = "a3"
    profiles = tuple(MACHINES)
    rules: Mapping[str, Any] = ReferenceBackend.rules

    def _compile(self, module: Module, profile: str, strict: bool = True, hazards: str = "collect",
                 values: bool = True, **options: Any) -> Executable:
        """``hazards``: "collect" (default), "raise" or "off"; ``strict``: the reference's checks;
        ``values``: False times the program without computing tile values (timing only)."""
        if options:
            raise PTOError("PTO_OPTION", f"unknown ascend_sim backend option(s): {', '.join(options)}",
                           expected="strict, hazards, values", actual=", ".join(options))
        flag_option("strict", strict)
        flag_option("values", values)
        if hazards not in HAZARD_MODES:
            raise PTOError("PTO_OPTION", "hazards must be one of " + ", ".join(HAZARD_MODES),
                           expected=" | ".join(HAZARD_MODES), actual=repr(hazards))
        return AscendSimExecutable(module, profile, MACHINES[profile], strict, hazards, self.rules, values)
