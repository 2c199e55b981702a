"""Run a tile graph tile by tile in numpy, so the tiling itself can be checked.

Every node's grid is walked; each tile is computed from its operands' tiles (per-row and
per-column broadcasts sliced as the kernels read them), row and column reductions as partial
results combined over the tiles, into buffers laid out as the kernels' global memory (views and
assembles are the same places). Comparing this with the tensor-graph interpreter checks the
grids, edge tiles, broadcasts, combines and places without any kernel.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from . import graph as g
from .graph import Dim
from .ops import OPS
from .tiling import Buffer, Place, TileGraph, TileLoop, TileNode

_COMBINE = {"sum": np.add, "max": np.maximum, "min": np.minimum}
_PARTIAL = {"sum": np.sum, "max": np.max, "min": np.min}


def _eval(d: Dim, env: Mapping[str, int]) -> int:
    return d if isinstance(d, int) else d.evaluate(dict(env))


class _Run:
    def __init__(self, tg: TileGraph, roots: dict[int, np.ndarray], env: dict[str, int]) -> None:
        self.tg = tg
        self.roots = roots
        self.env = env

    def matrix(self, p: Place) -> np.ndarray:
        b: Buffer = p.buffer
        root = self.roots[id(b.base)]
        if b.transposed:
            m = root.reshape(_eval(b.cols, self.env), _eval(b.rows, self.env)).T
        else:
            m = root.reshape(_eval(b.rows, self.env), _eval(b.cols, self.env))
        r0, c0 = _eval(p.row0, self.env), _eval(p.col0, self.env)
        return m[r0:r0 + _eval(p.rows, self.env), c0:c0 + _eval(p.cols, self.env)]

    def of(self, t: g.TensorValue) -> np.ndarray:
        return self.matrix(self.tg.places[t])

    def rows_view(self, t: g.TensorValue) -> np.ndarray:
        """A per-row vector as an R x 1 matrix (a reduction result without its kept dim is
        a whole buffer of one value per source row, so the reshape is a view)."""
        m = self.of(t)
        if m.shape[1] == 1:
            return m
        out = m.reshape(-1, 1)
        assert np.shares_memory(out, m), "a per-row vector in a window (the tiler never places one)"
        return out

    def run(self, items: list) -> None:
        for it in items:
            if isinstance(it, TileLoop):
                lp = it.loop
                for i in range(_eval(lp.start, self.env), _eval(lp.stop, self.env), _eval(lp.step, self.env)):
                    self.env[lp.index.name or "?"] = i
                    self.run(it.body)
            else:
                getattr(self, "_" + it.kind, self._elementwise)(it)

    def tiles(self, n: TileNode, rows: int, cols: int):
        tr, tc = n.tile
        for i in range(0, rows, tr):
            for j in range(0, cols, tc):
                yield slice(i, min(i + tr, rows)), slice(j, min(j + tc, cols))

    def _elementwise(self, n: TileNode) -> None:
        out = self.of(n.out) if n.kind != "copy" else self.matrix(n.extra["target"])
        rows, cols = out.shape
        spec = OPS.get(n.name)
        attrs = {k: (_eval(v, self.env) if isinstance(v, g.Sym) else v) for k, v in n.op.attrs.items()}
        for rs, cs in self.tiles(n, rows, cols):
            args = []
            for a in n.inputs:
                v = a.value
                if isinstance(v, g.TensorValue):
                    m = self.rows_view(v) if a.mode == "row" else self.of(v)
                    args.append(m[rs, 0:1] if a.mode == "row" else m[0:1, cs] if a.mode == "col" else m[rs, cs])
                else:
                    args.append(_eval(v, self.env) if isinstance(v, g.Sym) else v)
            if n.kind == "copy":
                out[rs, cs] = args[0]
                continue
            if n.name == "arange":
                out[rs, cs] = np.arange(cs.start, cs.stop, dtype=out.dtype)[None, :]
                continue
            if n.kind == "full":
                out[rs, cs] = np.asarray(attrs.get("value", 0)).astype(out.dtype)
                continue
            (res,) = spec.numpy(args, attrs, (n.out.dtype,))[:1]
            out[rs, cs] = np.broadcast_to(res, out[rs, cs].shape)

    def _reduce(self, n: TileNode) -> None:
        if "groups" in n.extra:         # a middle axis: each group's column reduction on its own
            src, out = self.matrix(n.extra["src_place"]), self.matrix(n.extra["out_place"])
            length = _eval(n.rows, self.env)
            for grp in range(out.shape[0]):
                out[grp:grp + 1] = self._columns(n, src[grp * length:(grp + 1) * length])
            return
        src = self.of(n.inputs[0].value)  # type: ignore[arg-type]
        if n.extra["axis_kind"] == "col":
            self.of(n.out).reshape(1, -1)[...] = self._columns(n, src)
            return
        rows, cols = src.shape
        red = n.reduce
        row = n.extra["axis_kind"] == "row"
        acc = np.full((rows, 1) if row else (1, cols), np.nan)
        seen = np.zeros(acc.shape, bool)
        for rs, cs in self.tiles(n, rows, cols):
            tile = src[rs, cs].astype(np.float64)
            part = _PARTIAL[red](tile, axis=1 if row else 0, keepdims=True)  # type: ignore[index]
            where = (rs, slice(0, 1)) if row else (slice(0, 1), cs)
            acc[where] = np.where(seen[where], _COMBINE[red](acc[where], part), part)  # type: ignore[index]
            seen[where] = True
        if n.extra.get("mean"):
            acc = acc / _eval(n.extra["length"], self.env)
        out = self.rows_view(n.out) if row else self.of(n.out).reshape(1, -1)
        out[...] = acc.astype(out.dtype)

    def _columns(self, n: TileNode, src: np.ndarray) -> np.ndarray:
        """Partial column reductions per tile, combined over the row tiles (1 x cols)."""
        red = n.reduce
        acc = None
        for rs, cs in self.tiles(n, *src.shape):
            part = _PARTIAL[red](src[rs, cs].astype(np.float64), axis=0, keepdims=True)  # type: ignore[index]
            if acc is None:
                acc = np.full((1, src.shape[1]), np.nan)
                seen = np.zeros(acc.shape, bool)
            acc[:, cs] = np.where(seen[:, cs], _COMBINE[red](acc[:, cs], part), part)  # type: ignore[index]
            seen[:, cs] = True
        if n.extra.get("mean"):
            acc = acc / _eval(n.extra["length"], self.env)
        return acc.astype(n.out.dtype.np_dtype)

    def _matmul(self, n: TileNode) -> None:
        a, b = (self.of(x.value) for x in n.inputs)  # type: ignore[arg-type]
        if n.extra.get("a_trans"):
            a = a.T
        if n.extra.get("b_trans"):
            b = b.T
        out = self.of(n.out)
        tm, tk, tn = n.tile[0], n.extra["tk"], n.extra["tn"]
        m, k = a.shape
        nn = b.shape[1]
        for i in range(0, m, tm):
            for j in range(0, nn, tn):
                acc = np.zeros((min(tm, m - i), min(tn, nn - j)))
                for kk in range(0, k, tk):
                    acc += a[i:i + tm, kk:kk + tk].astype(np.float64) @ b[kk:kk + tk, j:j + tn].astype(np.float64)
                out[i:i + tm, j:j + tn] = acc.astype(out.dtype)

    def _topk(self, n: TileNode) -> None:
        """Each row block selects on its own whole rows (the kernel's invocation)."""
        src = self.of(n.inputs[0].value)  # type: ignore[arg-type]
        vals, idxs = self.of(n.out), self.of(n.extra["indices"])
        attrs = {"k": n.extra["k"], "axis": 1, "largest": n.extra["largest"]}
        for rs, _ in self.tiles(n, *src.shape):
            v, i = OPS["topk"].numpy([src[rs]], attrs, (n.out.dtype, n.extra["indices"].dtype))
            vals[rs], idxs[rs] = v, i

    def _gather(self, n: TileNode) -> None:
        """Each block of output rows picks its table rows through its slice of the index."""
        table, index = (self.of(a.value) for a in n.inputs)  # type: ignore[arg-type]
        out = self.of(n.out)
        for rs, _ in self.tiles(n, *out.shape):
            (out[rs],) = OPS["gather_rows"].numpy([table, index.reshape(-1)[rs]], {}, (n.out.dtype,))

    def _transpose(self, n: TileNode) -> None:
        src, out = self.of(n.inputs[0].value), self.of(n.out)  # type: ignore[arg-type]
        for rs, cs in self.tiles(n, *src.shape):
            out[cs, rs] = src[rs, cs].T


def evaluate(tg: TileGraph, arrays: Mapping[str, np.ndarray], symbols: Mapping[str, int] | None = None
             ) -> dict[str, np.ndarray]:
    """The tile graph's results on copies of ``arrays`` (by parameter and result name): every
    tensor parameter and result, by name."""
    env = dict(symbols or {})
    roots: dict[int, np.ndarray] = {}
    names: dict[str, int] = {}
    fn = tg.fn
    for b in tg.buffers:
        base = b.base
        if id(base) in roots:
            continue
        shape = tuple(_eval(d, env) for d in base.tensor.shape)
        if base.kind in ("param", "result") and base.tensor.name in arrays:
            roots[id(base)] = np.array(arrays[base.tensor.name], copy=True)
        else:
            roots[id(base)] = np.zeros(shape, base.dtype.np_dtype)
        names[base.tensor.name] = id(base)
    with np.errstate(all="ignore"):
        _Run(tg, roots, env).run(tg.items)
    out = {p.name: roots[id(tg.places[p.tensor].buffer.base)] for p in fn.params if p.tensor is not None}
    out.update({r.name: roots[id(tg.places[r].buffer.base)] for r in fn.results})
    return out
