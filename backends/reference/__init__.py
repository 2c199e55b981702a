"""The reference backend: a numpy interpreter over the ``isa/`` semantics.

It is the executable meaning of the ISA that every other backend is judged against, so it
is strict by default: global accesses are bounds-checked, reads of never-written tile
elements fail, and every write poisons the destination outside its valid region.
``strict=False`` turns the last two off.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Mapping

import numpy as np

from ...assembler.ir import Module
from ...isa.diagnostics import PTOError
from ...isa.registry import all_instructions
from ...isa.types import TileType
from ..arguments import bind, written_params
from ..base import Backend, Executable, Result
from .lower import Context, KernelLowering
from .tiles import RefTile


class ReferenceExecutable(Executable):
    def __init__(self, module: Module, profile: str, strict: bool = True,
                 semantics: Mapping[str, Callable[..., Any]] | None = None) -> None:
        super().__init__(module, profile)
        self.strict = strict
        self._kernels = {k.name: (k, KernelLowering(k, semantics), sorted(written_params(k)))
                         for k in module.kernels}

    def run(self, kernel: str, *args: Any, block_num: int = 1, trace: bool = False,
            **kwargs: Any) -> Result:
        if kernel not in self._kernels:
            raise PTOError("PTO_KERNEL", f"no kernel @{kernel} in the module",
                           expected=", ".join(self.kernels), actual=kernel)
        if not isinstance(block_num, int) or isinstance(block_num, bool) or block_num < 1:
            raise PTOError("PTO_BLOCK_NUM", "block_num must be a positive integer", expected=">= 1",
                           actual=repr(block_num))
        k, low, outs = self._kernels[kernel]
        values = bind(k, args, kwargs)
        ctx = Context(strict=self.strict, block_num=block_num, trace=[] if trace else None,
                      t0=time.perf_counter_ns())
        with np.errstate(all="ignore"):
            for block in range(block_num):
                ctx.block_idx = block
                regs = self._registers(low, k, values)
                for step in low.body:
                    step(regs, ctx)
        counts = dict(ctx.counts)
        counts["instructions"] = sum(ctx.counts.values())
        return Result({n: values[n] for n in outs}, counts, ctx.trace)

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
    rules: Mapping[str, Callable[..., Any]] = {ins.mnemonic: ins.semantics for ins in all_instructions()}

    def _compile(self, module: Module, profile: str, strict: bool = True, **options: Any) -> Executable:
        if options:
            raise PTOError("PTO_OPTION", f"unknown reference backend option(s): {', '.join(options)}",
                           expected="strict", actual=", ".join(options))
        return ReferenceExecutable(module, profile, strict, self.rules)
