"""openpto.frontend: tensor code in Python, compiled in visible stages to PTO kernels.

``import openpto.frontend as pto`` gives the whole API (docs/frontend.md); the package is also
its own ``frontend`` attribute, so ``pto.frontend.jit`` and ``pto.jit`` are one decorator.
"""
from __future__ import annotations

import sys as _sys

from ..isa.diagnostics import FrontendError
from .api import (DT_BF16, DT_BOOL, DT_FP8E4M3, DT_FP8E5M2, DT_FP16, DT_FP32, DT_INT8, DT_INT16, DT_INT32,
                  DT_INT64, DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64, DTYPES, DYN, DYNAMIC, Tensor,
                  TensorProxy, abs, add, amax, amin, arange, assemble, cast, cube_tile_shapes, div, dynamic, eq, exp,
                  full, function, gather_rows, ge, get_cube_tile_shapes, get_vec_tile_shapes, gt, le, log, loop, lt, matmul,
                  max, maximum, mean, min, minimum, mul, ne, neg, ones, permute, reciprocal, relu, reshape,
                  row_max_single, row_min_single, row_sum_single, rsqrt, semantic_label, set_cube_tile_shapes,
                  set_semantic_label, set_vec_tile_shapes, sqrt, sub, sum, symbolic_scalar, tensor, topk,
                  transpose, unknown_dtype, vec_tile_shapes, view, where, zeros)
from .graph import Function, Sym
from .jit import JitFunction, jit

frontend = _sys.modules[__name__]


def __getattr__(name: str) -> object:
    if name.startswith("DT_"):
        raise unknown_dtype(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
