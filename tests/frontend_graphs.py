"""Tensor graphs built directly with frontend/graph.py, for the pipeline's tests (no capture).

``Builder`` records ops the way capture does: a result TensorValue per op, the tile shapes in
force, user names. Output shapes are given or follow numpy's broadcasting of static dims.
"""
from __future__ import annotations

import numpy as np

from openpto.frontend import graph as g
from openpto.frontend.ops import broadcast
from openpto.isa.dtypes import F32, DType

I1_OPS = ("eq", "ne", "lt", "le", "gt", "ge")


class Builder:
    def __init__(self, name: str) -> None:
        self.name = name
        self.params: list[g.Param] = []
        self.body: list[g.Node] = []
        self.stack: list[list[g.Node]] = [self.body]
        self.results: list[g.TensorValue] = []
        self.symbols: dict[str, tuple[str, int] | None] = {}
        self.vec: tuple[int, ...] | None = None
        self.cube: g.CubeTiles | None = None
        self.label: str | None = None

    def tensor(self, name: str, shape: tuple, dtype: DType = F32, kind: str = "input") -> g.TensorValue:
        shape = tuple(shape)
        t = g.TensorValue(name, shape, dtype, kind)
        self.params.append(g.Param(name, t))
        for axis, d in enumerate(shape):
            if isinstance(d, g.Sym) and d.op == "var" and d.name not in self.symbols:
                self.symbols[d.name] = (name, axis)
        return t

    def op(self, name: str, *inputs, shape: tuple | None = None, dtype: DType | None = None,
           out: str | None = None, outputs: tuple = (), **attrs) -> g.TensorValue:
        tensors = [i for i in inputs if isinstance(i, g.TensorValue)]
        if outputs:
            res = None
            outs = tuple(outputs)
        else:
            if shape is None:
                shape = broadcast([t.shape for t in tensors])
            if dtype is None:
                values = [i for i in inputs[1:] if isinstance(i, g.TensorValue)] if name == "where" else tensors
                dtype = _i1() if name in I1_OPS else (values or tensors)[0].dtype
            res = g.TensorValue(out or f"{name}_{len(self.body)}", tuple(shape), dtype)
            outs = (res,)
        if name in ("view", "reshape", "full"):       # the op table's attrs carry the shape
            attrs.setdefault("shape", tuple(shape))
        if name == "full":
            attrs.setdefault("dtype", dtype)
        attrs.pop("shape_attr", None)
        op = g.Op(name, tuple(inputs), outs, dict(attrs), g.TileConfig(self.vec, self.cube), self.label)
        self.stack[-1].append(op)
        return res  # type: ignore[return-value]

    def loop(self, name: str, start, stop, step=1, idx: str = "idx") -> g.Sym:
        i = g.Sym.var(idx)
        lp = g.Loop(i, start, stop, step, name)
        self.stack[-1].append(lp)
        self.stack.append(lp.body)
        self.symbols[idx] = None
        return i

    def end_loop(self) -> None:
        self.stack.pop()

    def ret(self, *ts: g.TensorValue) -> None:
        for t in ts:
            t.kind = "output"
            self.results.append(t)

    def function(self) -> g.Function:
        return g.Function(self.name, self.params, self.body, self.results, self.symbols)


def _i1() -> DType:
    from openpto.isa.dtypes import I1
    return I1


def softmax(M, N, tile=(32, 32)) -> g.Function:
    """The first seed program's tensor graph (amax, sub, exp, sum, div; the result returned)."""
    b = Builder("test_softmax")
    x = b.tensor("input", (M, N))
    b.vec = tile
    rowmax = b.op("amax", x, shape=(M, 1), out="rowmax", axis=1, keepdim=True)
    sub = b.op("sub", x, rowmax, out="sub_res")
    ex = b.op("exp", sub, out="exp_res")
    es = b.op("sum", ex, shape=(M, 1), out="esum", axis=1, keepdim=True)
    out = b.op("div", ex, es, out="output")
    b.ret(out)
    return b.function()


def np_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)
