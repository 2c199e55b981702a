"""Transcendental functions on f32 compute values, written so loops over them vectorise.

The spec bounds TEXP / TLOG (and the EXPDIF forms) to 2 ulp of the correctly rounded result
with exact special values. (First version: LLVM intrinsics, which call libm per element.)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from . import numerics as N

if TYPE_CHECKING:
    from .codegen import KernelCodegen


def exp(cg: "KernelCodegen", x: ir.Value) -> ir.Value:
    return cg.intrinsic("llvm.exp.f32", N.F32, [x])


def log(cg: "KernelCodegen", x: ir.Value) -> ir.Value:
    return cg.intrinsic("llvm.log.f32", N.F32, [x])
