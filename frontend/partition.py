"""Tile graph -> kernels: subgraphs whose inputs and outputs are in global memory.

Consecutive vector nodes that tile the same rows the same way and are connected by data fuse
into one kernel (a row block's chain stays in tiles); a matrix multiply is a kernel of its own
on a profile with separate cube and vector cores (a2, a3, a5), and on the others too, because
its output tiles are laid out for the cube. A kernel's *invocations* are its isomorphic tile
subgraphs (one per tile, or per row block when a row reduction or a broadcast of one joins
the columns); they are one kernel, and the merge knob decides how many of them one task runs.
Kernels of the same structure elsewhere in the function (a structural hash) share one
compiled kernel. Every decision is kept as a sentence in ``Kernel.why``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Iterator, Union

from ..isa import profiles
from ..isa.types import Location as Loc
from . import graph as g
from .graph import Dim, Sym
from .options import Options
from .tiling import (ELEMENTWISE, Item, TileGraph, TileLoop, TileNode, ceil_div, dim_key, dims_equal,
                     same_place)


def separate_cores(profile: str) -> bool:
    """Whether ``profile`` has separate cube and vector cores (its machine counts them)."""
    return profiles.get(profile).cube_cores is not None


@dataclass(eq=False)
class Kernel:
    """One kernel: the nodes it runs, how they are tiled, how often it is invoked."""

    index: int
    nodes: list[TileNode]
    unit: str                                 # vector / cube
    mode: str                                 # grid / rows / colloop / colreduce / matmul / transpose / topk / gather
    tile: tuple[int, int]
    rows: Dim
    cols: Dim
    why: list[str] = field(default_factory=list)
    reads: list[g.TensorValue] = field(default_factory=list)     # global inputs, first use order
    writes: list[g.TensorValue] = field(default_factory=list)    # global outputs
    signature: str = ""
    shares: "Kernel | None" = None            # an isomorphic kernel whose code this one runs
    loop: g.Loop | None = None                # a pto.loop run inside the kernel (scf.for)

    @property
    def name(self) -> str:
        labels = [n.op.label for n in self.nodes if n.op.label]
        core = labels[0] if labels else "_".join(dict.fromkeys(n.name for n in self.nodes))
        out = self.writes[-1].name if self.writes else "k"
        return _ident(f"k{self.index}_{core}_{out}")

    @property
    def vtile(self) -> tuple[int, int]:
        """The shape of the vector tiles (a matmul kernel's: its output tiles)."""
        if self.mode == "matmul":
            mm = self.nodes[0]
            return mm.tile[0], mm.extra["tn"]
        return self.tile

    @property
    def grid(self) -> tuple[Dim, Dim]:
        if self.mode == "matmul":
            return self.nodes[0].grid
        return ceil_div(self.rows, self.tile[0]), ceil_div(self.cols, self.tile[1])

    @property
    def invocations(self) -> Dim:
        nr, nc = self.grid
        if self.mode in ("grid", "matmul", "transpose"):
            return g.sym_binop("mul", nr, nc)
        if self.mode == "colreduce":       # per column block, in every group of a middle-axis reduction
            return g.sym_binop("mul", nc, self.nodes[0].extra.get("groups", 1))
        return nr

    def describe(self) -> str:
        ops = " + ".join(n.name for n in self.nodes)
        tr, tc = self.tile
        inv = self.invocations
        head = (f"kernel {self.name} [{self.unit}] {ops}: invoked {inv} time{'s' if inv != 1 else ''}"
                f" ({self.mode}, {tr}x{tc} tiles)")
        lines = [head]
        if self.shares is not None:
            lines.append(f"    isomorphic to {self.shares.name}: shares its code")
        if self.loop is not None:
            lp = self.loop
            lines.append(f"    runs loop {lp.name} ({lp.index} in {lp.start}..{lp.stop} step {lp.step}) "
                         "inside the kernel: its body is this one kernel")
        lines.append("    reads " + (", ".join(str(t) for t in self.reads) or "nothing")
                     + "; writes " + (", ".join(str(t) for t in self.writes) or "nothing"))
        for n in self.nodes:
            lines.append(f"    {n.out} = {n.name}  <- {n.op.loc or 'no source line'}")
        for w in self.why:
            lines.append(f"    why: {w}")
        return "\n".join(lines)


@dataclass(eq=False)
class KernelLoop:
    loop: g.Loop
    body: list["PItem"]


PItem = Union[Kernel, KernelLoop]


@dataclass(eq=False)
class Partition:
    graph: TileGraph
    items: list[PItem]
    separate: bool
    options: Options

    def kernels(self) -> Iterator[Kernel]:
        def rec(items: list[PItem]) -> Iterator[Kernel]:
            for it in items:
                if isinstance(it, KernelLoop):
                    yield from rec(it.body)
                else:
                    yield it
        return rec(self.items)

    def __str__(self) -> str:
        ks = list(self.kernels())
        distinct = sum(1 for k in ks if k.shares is None)
        lines = [f"partition {self.graph.fn.name} (profile {self.graph.profile}; cube and vector "
                 f"{'on separate cores' if self.separate else 'on one core'}): {len(ks)} kernel(s), "
                 f"{distinct} distinct; merge={self.options.merge}"]

        def rec(items: list[PItem], depth: int) -> None:
            pad = "  " * depth
            for it in items:
                if isinstance(it, KernelLoop):
                    lp = it.loop
                    lines.append(f"{pad}for {lp.index} in loop({lp.start}, {lp.stop}, {lp.step})  # {lp.name}")
                    rec(it.body, depth + 1)
                else:
                    lines.extend(pad + ln for ln in it.describe().splitlines())
        rec(self.items, 1)
        return "\n".join(lines)


def _ident(s: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in s)


class _Partitioner:
    def __init__(self, tg: TileGraph, options: Options) -> None:
        self.tg = tg
        self.options = options
        self.separate = separate_cores(tg.profile)
        self.prof = profiles.get(tg.profile)
        self.count = 0
        self.refusal = ""

    def run(self) -> Partition:
        items = self._body(self.tg.items)
        part = Partition(self.tg, items, self.separate, self.options)
        self._boundaries(part)
        by_sig: dict[str, Kernel] = {}
        for k in part.kernels():
            k.signature = _signature(k, self.tg.places)
            if k.signature in by_sig:
                k.shares = by_sig[k.signature]
            else:
                by_sig[k.signature] = k
        return part

    def _body(self, items: list[Item]) -> list[PItem]:
        out: list[PItem] = []
        cur: Kernel | None = None
        for it in items:
            if isinstance(it, TileLoop):
                cur = None
                body = self._body(it.body)
                k = body[0] if len(body) == 1 else None
                if (isinstance(k, Kernel) and k.loop is None and self.options.merge is None
                        and self.options.blocks == 1 and it.loop.index.name not in _vars(k.invocations)):
                    k.loop = it.loop      # one launch runs every iteration, in the same order
                    out.append(k)
                else:
                    out.append(KernelLoop(it.loop, body))
                continue
            if cur is not None and self._join(cur, it):
                continue
            cur = self._new(it)
            out.append(cur)
        return out

    def _new(self, n: TileNode) -> Kernel:
        k = Kernel(self.count, [n], n.unit, "", n.tile, n.rows, n.cols)
        self.count += 1
        if n.kind == "matmul":
            k.mode = "matmul"
            k.why.append("a matrix multiply runs on the cube: "
                         + ("cube and vector cores are separate on this profile"
                            if self.separate else "its tiles live in the cube's buffers"))
        elif n.kind == "transpose":
            k.mode = "transpose"
            k.why.append("a transpose moves tile (i, j) to (j, i): a kernel of its own")
        elif n.kind == "topk":
            k.mode = "topk"
            k.why.append(f"topk selects {n.extra['k']} values per row over whole rows: a kernel of its own")
        elif n.kind == "gather":
            k.mode = "gather"
            k.why.append("a row gather reads rows picked at run time (MGATHER): a kernel of its own")
        elif n.kind == "reduce" and n.reduce_axis == "col":
            k.mode = "colreduce"
            k.why.append("a column reduction walks the row tiles of each column block: a kernel of its own")
        else:
            plan = self._plan(k.nodes)
            assert plan is not None
            k.mode, k.tile, note = plan
            if note:
                k.why.append(note)
        return k

    def _join(self, k: Kernel, n: TileNode) -> bool:
        if not self.options.fuse:
            return False
        produced = {m.out for m in k.nodes}
        sibling = not any(t in produced for t in n.tensor_inputs())
        if sibling and not self._sibling(k, n):
            return False
        written = {id(self.tg.places[m.out].buffer.base) for m in k.nodes}
        for t in n.tensor_inputs():
            if t not in produced and id(self.tg.places[t].buffer.base) in written:
                k.why.append(f"{n.out} = {n.name} starts another kernel: it reads {t}, a window of "
                             "memory this kernel writes (other invocations may not have written it yet)")
                return False
        clash = self._overwrites(k, n, produced)
        if clash:
            k.why.append(f"{n.out} = {n.name} starts another kernel: it writes {clash}, which this "
                         "kernel reads elsewhere (every read must happen before the write lands)")
            return False
        if k.mode == "matmul":
            return self._join_cube(k, n)
        if k.mode in ("colreduce", "transpose", "topk", "gather") or n.kind in ("matmul", "transpose", "topk",
                                                                                  "gather") or (
                n.kind == "reduce" and n.reduce_axis == "col"):
            return False
        base = k.nodes[0]
        if not dims_equal(n.rows, base.rows) or n.tile[0] != base.tile[0]:
            k.why.append(f"{n.out} = {n.name} starts another kernel: it tiles other rows "
                         f"({n.rows} in {n.tile[0]}-row tiles, not {base.rows} in {base.tile[0]})")
            return False
        plan = self._plan(k.nodes + [n])
        if plan is None:
            k.why.append(f"{n.out} = {n.name} starts another kernel: it needs a whole row reduced "
                         f"earlier in this kernel and the rows cannot be widened ({self.refusal})")
            return False
        k.nodes.append(n)
        k.mode, k.tile, note = plan
        wide = [m for m in k.nodes if not (m.is_rowvec and m.kind != "reduce")]
        if wide:            # a kernel begun by a per-row op spans the columns of the wide ops joining it
            k.cols = wide[0].cols
        k.why = [w for w in k.why if not w.startswith("coalesced")]
        if note:
            k.why.append(note)
        if sibling and not any(w.startswith("siblings") for w in k.why):
            k.why.append("siblings: ops reading nothing made here joined it, on the same whole-row tiles")
        return True

    def _sibling(self, k: Kernel, n: TileNode) -> bool:
        """An elementwise op that reads nothing the kernel makes joins it when it walks the same
        whole-row tiles of the same rows and columns (``x1 * c - x2 * s``: both products in one launch);
        the checks of ``_join`` on what it reads and writes still apply."""
        base = k.nodes[0]
        # whole-row tiles only: a task of the kernel then reaches its own rows of every buffer (in a
        # grid the bounding box of two column windows of one buffer would join the column tasks)
        if not (k.mode == "rows" and n.kind in ELEMENTWISE and not n.is_rowvec
                and not any(m.is_rowvec for m in k.nodes) and n.tile == base.tile
                and dims_equal(n.rows, base.rows) and dims_equal(n.cols, base.cols)):
            return False
        # every tensor the kernel reads or makes is a tile of its own: a sibling joins only while
        # they all still fit the vector buffer (a producer's consumer is not held to this)
        nodes = k.nodes + [n]
        tensors = {m.out for m in nodes} | {t for m in nodes for t in m.tensor_inputs()}
        need = sum(n.tile[0] * n.tile[1] * t.dtype.itemsize for t in tensors)
        return need <= self.prof.capacity[Loc.VEC]

    def _overwrites(self, k: Kernel, n: TileNode, produced: set[g.TensorValue]) -> str:
        """The memory ``n`` would write that the kernel already reads at other elements (a
        read of the very element ``n`` writes, tile for tile by an elementwise op or a row
        reduction, is safe: it happens before the write in the same invocation); "" if none."""
        dst = n.extra.get("target") or self.tg.places[n.out]
        for m in k.nodes:
            same_ok = m.kind in ELEMENTWISE or (m.kind == "reduce" and m.reduce_axis == "row")
            for a in m.inputs:
                t = a.value
                if not isinstance(t, g.TensorValue) or t in produced:
                    continue
                p = self.tg.places[t]
                if p.buffer.base is dst.buffer.base and not (same_ok and a.mode == "tile"
                                                             and same_place(p, dst)):
                    return str(dst)
        return ""

    def _join_cube(self, k: Kernel, n: TileNode) -> bool:
        """On a profile whose cube and vector units share a core, vector ops on whole rows of a
        matmul's output tiles run in the matmul's kernel (the acc tile moves to a vector tile)."""
        mm = k.nodes[0]
        if self.separate:
            if len(k.why) == 1:
                k.why.append(f"{n.out} = {n.name} reads the matmul's output but runs on a vector core: "
                             "another kernel, the tensor goes through global memory")
            return False
        if n.kind not in ("binary", "unary", "compare", "select", "cast") and not (
                n.kind == "reduce" and n.reduce_axis == "row"):
            return False
        nn = mm.grid[1]
        if not (isinstance(nn, int) and nn == 1) or not dims_equal(n.rows, mm.rows):
            k.why.append(f"{n.out} = {n.name} stays in another kernel: the matmul's tiles do not hold "
                         "whole rows of its output")
            return False
        wide = [m for m in k.nodes[1:] + [n] if not (m.is_rowvec and m.kind != "reduce")]
        if any(not dims_equal(m.cols, mm.cols) for m in wide):
            return False
        k.nodes.append(n)
        k.why.append(f"{n.out} = {n.name} runs on the matmul's {mm.tile[0]}x{mm.extra['tn']} output "
                     "tiles in the same kernel: cube and vector share one core on this profile")
        return True

    def _plan(self, nodes: list[TileNode]) -> tuple[str, tuple[int, int], str] | None:
        """(mode, tile, note) for these nodes in one kernel, or None when they cannot share one."""
        tr = nodes[0].tile[0]
        wide = [n for n in nodes if not (n.is_rowvec and n.kind != "reduce")]
        if not wide:
            return "rows", (tr, 1), ""
        spaces = {(dim_key(n.cols), n.tile[1]) for n in wide}
        cols = wide[0].cols
        rowvec_out = {n.out for n in nodes if n.is_rowvec}
        needs_whole = any(a.value in rowvec_out for n in wide for a in n.inputs)
        has_rowvec = any(n.is_rowvec for n in nodes)
        if len(spaces) == 1:
            tc = wide[0].tile[1]
            single = isinstance(cols, int) and tc >= cols
            if single:
                return "rows", (tr, tc), ""
            if not needs_whole:
                if not has_rowvec:
                    return "grid", (tr, tc), ""
                return "colloop", (tr, tc), ""
        if not self.options.coalesce:
            self.refusal = "coalescing is off"
            return None
        if not all(isinstance(n.cols, int) and dims_equal(n.cols, cols) for n in wide):
            self.refusal = "the row length is a run-time value" if any(isinstance(n.cols, Sym) for n in wide) \
                else "its ops have rows of different lengths"
            return None
        c = int(cols)  # type: ignore[arg-type]
        tensors = {n.out for n in wide} | {t for n in wide for t in n.tensor_inputs()}
        item = max(n.out.dtype.itemsize for n in wide)
        row_bytes = c * item * max(len(tensors), 1)
        cap = min(self.prof.capacity[Loc.VEC], 8 * 1024 * 1024)
        fit = cap // row_bytes
        if fit < 1:
            self.refusal = f"one row of its {len(tensors)} tiles does not fit the vector buffer"
            return None
        rows = min(tr, fit)
        if rows >= 8:
            rows -= rows % 8
        note = (f"coalesced the column tiles into whole {c}-column rows ({rows}x{c} tiles): "
                "a row reduction in this kernel feeds later ops of the same rows")
        if rows != tr:
            note += f"; {rows} rows per tile so {len(tensors)} such tiles fit the vector buffer"
        return "rows", (rows, c), note

    def _boundaries(self, part: Partition) -> None:
        """Which tensors each kernel reads from and writes to global memory."""
        ks = list(part.kernels())
        fn = self.tg.fn
        keep = {p.tensor for p in fn.params if p.tensor is not None} | set(fn.results)
        readers: dict[g.TensorValue, set[int]] = {}
        for k in ks:
            for n in k.nodes:
                for t in n.tensor_inputs():
                    readers.setdefault(t, set()).add(k.index)
        aliased = {t for t, p in self.tg.places.items() if not p.buffer.kind == "workspace"}
        read_bases: dict[int, set[int]] = {}    # buffers read through views, by the kernels reading
        for k in ks:
            for n in k.nodes:
                for t in n.tensor_inputs():
                    read_bases.setdefault(id(self.tg.places[t].buffer.base), set()).add(k.index)
        for k in ks:
            produced = {n.out: n for n in k.nodes}
            for n in k.nodes:
                for t in n.tensor_inputs():
                    if t not in produced and t not in k.reads:
                        k.reads.append(t)
            for n in k.nodes:
                t = n.out
                outside = (readers.get(t, set()) | read_bases.get(id(self.tg.places[t].buffer.base), set())) \
                    - {k.index}
                if n.kind == "copy" or outside or t in keep or t in aliased:
                    if t not in k.writes:
                        k.writes.append(t)
                if n.kind == "topk":            # both results leave the kernel
                    for t in (n.out, n.extra["indices"]):
                        if t not in k.writes:
                            k.writes.append(t)


def _vars(d: Dim) -> set[str]:
    return d.variables() if isinstance(d, Sym) else set()


def _signature(k: Kernel, places: dict) -> str:
    """A structural hash: equal for kernels that differ only in which tensors they touch."""
    index: dict[object, int] = {}

    def ref(v: object) -> str:
        if isinstance(v, g.TensorValue):
            key = ("t", v.id)
            if key not in index:
                index[key] = len(index)
            return f"t{index[key]}:{v.dtype.name}[{','.join(str(dim_key(d)) for d in v.shape)}]"
        if isinstance(v, Sym):
            return f"s{v.key()}"
        return repr(v)

    parts = [k.unit, k.mode, str(k.tile), str(dim_key(k.rows)), str(dim_key(k.cols))]
    if k.loop is not None:
        lp = k.loop
        parts.append(f"loop:{lp.index.name}:{dim_key(lp.start)}:{dim_key(lp.stop)}:{dim_key(lp.step)}")
    for n in k.nodes:
        attrs = sorted((a, str(b)) for a, b in n.op.attrs.items() if a not in ("spelling",))
        parts.append(f"{n.name}|{n.kind}|{n.tile}|{attrs}|{ref(n.out)}|"
                     + ",".join(f"{a.mode}:{ref(a.value)}" for a in n.inputs))
        if "target" in n.extra:
            p = n.extra["target"]
            parts.append(f"target:{dim_key(p.row0)}:{dim_key(p.col0)}")
    for t in k.reads + k.writes:
        p = places.get(t)
        if p is not None:
            parts.append(f"p:{dim_key(p.buffer.rows)}:{dim_key(p.buffer.cols)}:{dim_key(p.row0)}:"
                         f"{dim_key(p.col0)}:{dim_key(p.rows)}:{dim_key(p.cols)}")
    parts.append("w:" + ",".join(ref(t) for t in k.writes))
    parts.append("r:" + ",".join(ref(t) for t in k.reads))
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()[:16]


def partition(tg: TileGraph, options: Options | None = None) -> Partition:
    """The kernels of a tile graph (see the module docstring for the rules)."""
    return _Partitioner(tg, options or Options()).run()
