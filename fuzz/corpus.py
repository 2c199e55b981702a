"""Seed programs for the mutation campaigns: the shipped examples, the benchmark kernels
and one small module per instruction built from its declaration's example."""
from __future__ import annotations

import functools
import os

from ..isa.registry import all_instructions
from ..isa.render import example_statement
from ..isa.spec import Kind, Role

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED_DIRS = ("examples", os.path.join("benchmarks", "kernels"))


def declarations(instr) -> list[str]:  # noqa: ANN001 - an isa Instruction
    """``.arg`` lines for every operand the example statement reads (and ``%c0`` for indices)."""
    ex = instr.example
    lines, needs_c0 = [], False
    for op in instr.operands:
        if (op.role is Role.OUT and op.kind is Kind.TILE) or op.name not in ex.types:
            continue
        needs_c0 |= op.kind is Kind.GLOBAL
        lines.append(f".arg %{op.name} : {ex.types[op.name]}")
    return lines + ([".const %c0 = 0 : index"] if needs_c0 else [])


def instruction_program(instr) -> str:  # noqa: ANN001 - an isa Instruction
    """``.arg`` lines for what the example reads, then the example statement."""
    return "\n".join(declarations(instr) + [example_statement(instr)]) + "\n"


@functools.lru_cache(maxsize=None)
def seeds() -> tuple[str, ...]:
    """Every seed text, files first (sorted, so a seed index means the same in every run)."""
    out = []
    for d in SEED_DIRS:
        path = os.path.join(ROOT, d)
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                if name.endswith(".pto"):
                    with open(os.path.join(path, name), encoding="utf-8") as f:
                        out.append(f.read())
    out += [instruction_program(i) for i in all_instructions()]
    return tuple(out)
