"""The reference backend: a numpy interpreter over the ``isa/`` semantics.

It is the executable meaning of the ISA that every other backend is judged against, so it
is strict by default: global accesses are bounds-checked, reads of never-written tile
elements fail, and every write poisons the destination outside its valid region.
``strict=False`` turns the last two off.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping

import numpy as np

from ...assembler.ir import Module
from ...isa.diagnostics import PTOError
from ...isa.registry import all_instructions
from ...isa.world import World
from ...isa.types import TileType
from ..arguments import bind, written_params
from ..base import Backend, Executable, Result, flag_option, thread_count_option
from ..blocks import run_blocks, run_world_blocks
from ..comm_embedded import Agent, Embedded, check_instances, check_ranks, split_ranks
from .lower import Context, KernelLowering
from .tiles import RefTile


class ReferenceExecutable(Executable):
    def __init__(self, module: Module, profile: str, strict: bool = True,
                 semantics: Mapping[str, Callable[..., Any]] | None = None, threads: int | None = None) -> None:
        super().__init__(module, profile)
        self.strict = strict
        self.threads = max(1, threads or 1)
        self._kernels = {k.name: (k, KernelLowering(k, semantics), sorted(written_params(k)))
                         for k in module.kernels}

    def run(self, kernel: str, *args: Any, block_num: int = 1, trace: bool = False,
            ranks: int | None = None, world: World | None = None, **kwargs: Any) -> Result:
        """``ranks=N``: the embedded execution of N ranks (docs/comm.md): every array argument
        is a list of one array per rank, and the outputs are such lists. ``world=w``: this
        process runs rank ``w.rank`` of ``w.size`` whose other ranks run elsewhere (the MPI
        execution): the arguments are this rank's, its blocks run as ``run_world_blocks`` says."""
        block_num = self._check_launch(kernel, block_num)
        if ranks is not None and world is not None:
            raise PTOError("PTO_RANKS", "ranks= (the embedded execution of every rank) and world= (one rank of "
                           "a launch run elsewhere) exclude each other", expected="one of them",
                           actual=f"ranks={ranks!r} and a world")
        if ranks is not None:
            return self._run_ranks(kernel, args, kwargs, block_num, trace, check_ranks(ranks))
        if world is not None and not isinstance(world, World):
            raise PTOError("PTO_API_TYPE", "world= takes an isa.world.World", expected="a World",
                           actual=type(world).__name__)
        k, low, outs = self._kernels[kernel]
        values = bind(k, args, kwargs)
        t0 = time.perf_counter_ns()
        place = {} if world is None else {"rank": world.rank, "rank_num": world.size, "world": world}

        def block(b: int) -> Context:
            ctx = Context(strict=self.strict, block_idx=b, block_num=block_num,
                          trace=[] if trace else None, t0=t0, **place)
            with np.errstate(all="ignore"):      # thread-local: set in every worker
                regs = self._registers(low, k, values)
                for step in low.body:
                    step(regs, ctx)
            return ctx

        # blocks are independent cores: with threads > 1 they run side by side (numpy releases
        # the GIL); either way lazily, in block order, the lowest failing block's error raised
        counts: dict[str, int] = {}
        events: list[dict[str, Any]] | None = [] if trace else None
        contexts = (run_world_blocks(block, block_num, world) if world is not None
                    else run_blocks(block, block_num, min(block_num, self.threads)))
        for ctx in contexts:
            for name, n in ctx.counts.items():
                counts[name] = counts.get(name, 0) + n
            if events is not None:
                events.extend(ctx.trace or [])
        counts["instructions"] = sum(counts.values())
        return Result({n: values[n] for n in outs}, counts, events)

    def _run_ranks(self, kernel: str, args: tuple, kwargs: dict[str, Any], block_num: int, trace: bool,
                   ranks: int) -> Result:
        """Every (rank, block) on a thread of its own, one at a time (backends/comm_embedded.py)."""
        k, low, outs = self._kernels[kernel]
        bound = [bind(k, a, kw) for a, kw in split_ranks(k, args, kwargs, ranks)]
        world = Embedded(ranks, block_num, check_instances(k, bound))
        t0 = time.perf_counter_ns()
        contexts: list[Context | None] = [None] * len(world.agents)

        def body(agent: Agent) -> None:
            ctx = Context(strict=self.strict, block_idx=agent.block, block_num=block_num,
                          trace=[] if trace else None, t0=t0, rank=agent.rank, rank_num=ranks, world=agent)
            contexts[agent.index] = ctx
            with np.errstate(all="ignore"):
                regs = self._registers(low, k, bound[agent.rank])
                for step in low.body:
                    step(regs, ctx)

        threads = [threading.Thread(target=world.run_agent, args=(a, body), name=f"pto-rank{a.rank}-b{a.block}",
                                    daemon=True) for a in world.agents]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if world.failed is not None:
            raise world.failed
        counts: dict[str, int] = {}
        events: list[dict[str, Any]] | None = [] if trace else None
        for ctx in contexts:
            for name, n in (ctx.counts if ctx else {}).items():
                counts[name] = counts.get(name, 0) + n
            if events is not None and ctx is not None:
                events.extend(dict(e, rank=ctx.rank) for e in ctx.trace or [])
        counts["instructions"] = sum(counts.values())
        return Result({n: [b[n] for b in bound] for n in outs}, counts, events)

    @staticmethod
    def _registers(low: KernelLowering, k: Any, values: dict[str, Any]) -> list[Any]:
        regs: list[Any] = [None] * len(low.slots)
        for p in k.params:
            v = values[p.name]
            regs[low.slots[p.name]] = RefTile.wrap(p.type, v) if isinstance(p.type, TileType) else v
        for i, t in low.tiles.items():
            regs[i] = RefTile(t)
        return regs


class ReferenceBackend(Backend):
    """Runs every instruction of the spec on every profile. ``rules`` maps each mnemonic to
    the semantics it runs: a subclass may replace entries (a backend that differs in one
    instruction, as the conformance suite's deliberately broken backends do)."""

    name = "reference"
    default_profile = "cpu"
    multi_rank = True
    rules: Mapping[str, Callable[..., Any]] = {ins.mnemonic: ins.semantics for ins in all_instructions()}

    def _compile(self, module: Module, profile: str, strict: bool = True, threads: int | None = None,
                 **options: Any) -> Executable:
        """``strict``: the uninitialised-read and poison checks; ``threads``: how many blocks of
        a ``block_num`` launch run at once (default 1: in order; numpy releases the GIL only
        inside each operation, so on tile-sized work threads measured slower, not faster)."""
        if options:
            raise PTOError("PTO_OPTION", f"unknown reference backend option(s): {', '.join(options)}",
                           expected="strict, threads", actual=", ".join(options))
        threads = thread_count_option(threads)
        flag_option("strict", strict)
        return ReferenceExecutable(module, profile, strict, self.rules, threads)
