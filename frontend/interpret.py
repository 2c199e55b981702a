"""The tensor-graph interpreter: runs a captured Function on numpy arrays, op by op.

It gives every op the meaning the op table states (frontend/ops.py) and nothing else, so it is
the oracle the pipeline's stages and every backend's results are checked against. Loops run
their body once per index value; locals are allocated when first written and start as NaN
(floats), so a read of an element nothing wrote shows up in the result.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..isa.diagnostics import FrontendError
from .codes import front_error, has_location, relocated
from .graph import Function, Loop, Node, Op, Sym, TensorValue, evaluate_dim
from .ops import OPS


def bind_symbols(fn: Function, arrays: Mapping[str, np.ndarray],
                 symbols: Mapping[str, int] | None = None) -> dict[str, int]:
    """Every run-time dimension's value: given in ``symbols``, else read off its parameter's array."""
    env = {k: int(v) for k, v in (symbols or {}).items()}
    for name, source in fn.symbols.items():
        if source is not None and name not in env and source[0] in arrays:
            param, axis = source
            env[name] = int(np.shape(arrays[param])[axis])
    return env


def _value(x: object, env: dict[str, int]) -> object:
    """Run-time values in an operand or attribute replaced by their ints (recursively)."""
    if isinstance(x, Sym):
        return x.evaluate(env)
    if isinstance(x, (tuple, list)):
        return type(x)(_value(v, env) for v in x)
    return x


class _Run:
    def __init__(self, fn: Function, env: dict[str, int]) -> None:
        self.fn = fn
        self.env = env
        self.arrays: dict[int, np.ndarray] = {}

    def shape(self, t: TensorValue) -> tuple[int, ...]:
        return tuple(evaluate_dim(d, self.env) for d in t.shape)

    def get(self, t: TensorValue, op: Op) -> np.ndarray:
        if t.id not in self.arrays:
            raise front_error("FRONT_UNWRITTEN_READ", f"{t.name} is read before anything wrote it",
                              location=op.loc.location() if op.loc else None,
                              expected=f"a value for {t.name}", actual="nothing written")
        return self.arrays[t.id]

    def destination(self, t: TensorValue) -> np.ndarray:
        """The array an in-place op writes: allocated (NaN-filled for floats) at its first write."""
        shape = self.shape(t)
        arr = self.arrays.get(t.id)
        if arr is None or arr.shape != shape:
            fill = np.nan if t.dtype.is_float else 0
            arr = np.full(shape, fill).astype(t.dtype.np_dtype)
            self.arrays[t.id] = arr
        return arr

    def run(self, nodes: list[Node]) -> None:
        for node in nodes:
            if isinstance(node, Loop):
                start, stop, step = (evaluate_dim(d, self.env) for d in (node.start, node.stop, node.step))
                if step <= 0:
                    raise front_error("FRONT_LOOP", f"loop {node.name} has a step that is not positive",
                                      location=node.loc.location() if node.loc else None,
                                      expected="a positive step", actual=step)
                for i in range(start, stop, step):
                    self.env[node.index.name or "?"] = i
                    self.run(node.body)
            else:
                try:
                    self.op(node)
                except FrontendError as err:
                    if has_location(err) or node.loc is None:
                        raise
                    raise relocated(err, node.loc.location()) from None

    def op(self, op: Op) -> None:
        spec = OPS[op.name]
        args = [self.get(x, op) if isinstance(x, TensorValue) else _value(x, self.env) for x in op.inputs]
        if spec.writes:
            args += [self.destination(o) for o in op.outputs]
        attrs = {k: _value(v, self.env) for k, v in op.attrs.items()}
        results = spec.numpy(args, attrs, tuple(o.dtype for o in op.outputs))
        if not spec.writes:
            for out, arr in zip(op.outputs, results):
                self.arrays[out.id] = arr


def interpret(fn: Function, arrays: Mapping[str, np.ndarray],
              symbols: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
    """Run ``fn``: ``arrays`` holds every tensor parameter by name (written in place when the
    function writes it) and, optionally, arrays for results by result name (filled in place).
    Returns the arrays of every tensor parameter and result, by name."""
    env = bind_symbols(fn, arrays, symbols)
    run = _Run(fn, env)
    out: dict[str, np.ndarray] = {}
    for p in fn.params:
        if p.tensor is None:
            continue
        if p.name not in arrays:
            raise front_error("FRONT_ARG_COUNT", f"no array for parameter {p.name}",
                              expected=f"arrays for {', '.join(q.name for q in fn.params if q.tensor)}",
                              actual=", ".join(arrays) or "none")
        arr = np.asarray(arrays[p.name])
        if arr.shape != run.shape(p.tensor):
            raise front_error("FRONT_ARG_SHAPE", f"the array for {p.name} has another shape",
                              expected=list(run.shape(p.tensor)), actual=list(arr.shape))
        if arr.dtype != p.tensor.dtype.np_dtype:
            raise front_error("FRONT_ARG_DTYPE", f"the array for {p.name} has another element type",
                              expected=p.tensor.dtype.name, actual=str(arr.dtype))
        run.arrays[p.tensor.id] = arr
        out[p.name] = arr
    with np.errstate(all="ignore"):
        run.run(fn.body)
    for r in fn.results:
        value = run.arrays[r.id]
        if r.name in arrays:
            np.copyto(arrays[r.name], value)
            out[r.name] = arrays[r.name]
        else:
            out[r.name] = np.array(value)
    return out
