"""Kernels -> PTO-AS: one ordinary module holding every distinct kernel of a partition.

Each kernel is written as a person would write it (frontend/emit.py holds the shared parts):
one ``scf.for`` over the kernel's invocations (``%first`` .. ``%first + %count``, dealt out
over ``pto.get_block_idx`` / ``get_block_num``), inside it the tile's or row block's loads,
tile ops and stores. The kernel shapes: row blocks (``rows``: whole rows in one tile; ``grid``:
one tile per invocation; ``colloop``: a column loop whose partial row reductions combine into
accumulators, then the per-row ops), column reductions over a row loop, matrix multiplies
(mat -> left/right -> acc over a K loop, the acc tile stored, or moved to a vector tile for the
row-local ops fused after it), and transposes. A ``pto.loop`` absorbed by the partition is an
``scf.for`` around the invocation loop. The text goes through ``pto.parse`` and ``pto.check``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..isa.dtypes import F32, I1, I32, DType
from ..isa.types import Location as Loc
from . import graph as g
from .lower_sort import SortTopkKernel
from .emit import COL_REDUCE, COMBINE, Block, Emitter, KernelParam, LoweredKernel, _identity, _round_up
from .partition import Kernel, Partition
from .tiling import Place


@dataclass
class Lowered:
    """Every distinct kernel's text, and per kernel of the partition the code it runs."""

    kernels: list[LoweredKernel]
    code: dict[int, LoweredKernel] = field(default_factory=dict)           # Kernel.index -> code
    params: dict[int, list[KernelParam]] = field(default_factory=dict)     # Kernel.index -> arguments

    @property
    def text(self) -> str:
        return "\n\n".join(k.text for k in self.kernels) + "\n"


class RowKernel(Emitter):
    """grid / rows / colloop kernels: vector ops over row blocks."""

    def emit(self) -> LoweredKernel:
        k = self.k
        tr, tc = k.tile
        top: list[str] = []
        body: list[str] = []
        p = "    "
        rows_partial = not (isinstance(k.rows, int) and k.rows % tr == 0)
        cols_partial = not (isinstance(k.cols, int) and k.cols % tc == 0)
        inv = self.open_invocations(top, body)
        rows_v = self.value(k.rows, top)
        cols_v = self.value(k.cols, top)
        bi, bj = self.split(body, p, inv, self.value(k.grid[1], top)) if k.mode == "grid" else (inv, None)
        r = self.fresh("r")
        body.append(f"{p}%{r} = arith.muli {bi}, {self.const(tr)} : index")
        vr = self.extent(body, p, rows_v, "%" + r, tr, "vr") if rows_partial else None
        row = Block("%" + r, vr, "?" if vr else str(tr), self.const(0), None, "1")
        env: dict = {}
        if k.mode in ("grid", "rows"):
            c = self.const(0)
            if k.mode == "grid":
                c = "%" + self.fresh("c")
                body.append(f"{p}{c} = arith.muli {bj}, {self.const(tc)} : index")
            vc = self.extent(body, p, cols_v, c, tc, "vc") if cols_partial else None
            width = str(min(tc, k.cols)) if isinstance(k.cols, int) else str(tc)
            blk = Block(row.r, row.vr, row.vr_s, c, vc, "?" if vc else width)
            for n in k.nodes:
                self.node(n, blk, env, body, p)
            return self.close(top, body)
        # colloop: accumulators per row block, a column loop, then the per-row ops
        for n in k.nodes:
            if n.kind == "reduce":
                self.acc_init(n, row, env, body, p)
        c = self.fresh("c")
        body.append(f"{p}scf.for %{c} = {self.const(0)} to {cols_v} step {self.const(tc)} {{")
        q = p + "  "
        vc = self.extent(body, q, cols_v, "%" + c, tc, "vc") if cols_partial else None
        blk = Block(row.r, row.vr, row.vr_s, "%" + c, vc, "?" if vc else str(tc))
        inner = dict(env)
        for n in k.nodes:
            if n.kind == "reduce":
                self.partial(n, blk, inner, env, body, q)
            elif not n.is_rowvec:
                self.node(n, blk, inner, body, q)
        body.append(f"{p}}}")
        for n in k.nodes:
            if n.kind == "reduce":
                self.finish_reduce(n, row, env, body, p)
            elif n.is_rowvec:
                self.node(n, row, env, body, p)
        return self.close(top, body)


class ColReduceKernel(Emitter):
    """One column block per invocation: partial column reductions over the row tiles. A reduction
    over a middle axis has ``groups`` such matrices stacked in its (groups x length) x inner view;
    invocation i then takes group i // column blocks."""

    def emit(self) -> LoweredKernel:
        k = self.k
        n = k.nodes[0]
        src = n.inputs[0].value
        assert isinstance(src, g.TensorValue)
        src_place, out_place = n.extra.get("src_place") or self.places[src], n.extra.get("out_place") or self.places[n.out]
        grouped = "groups" in n.extra
        tr, tc = k.tile
        top: list[str] = []
        body: list[str] = []
        p, q = "    ", "      "
        inv = self.open_invocations(top, body)
        rows_v, cols_v = self.value(k.rows, top), self.value(k.cols, top)
        if grouped:
            grp, cb = self.split(body, p, inv, self.value(k.grid[1], top))
            base = "%" + self.fresh("g0")
            body.append(f"{p}{base} = arith.muli {grp}, {rows_v} : index")
        else:
            grp, cb, base = self.const(0), inv, self.const(0)
        c = "%" + self.fresh("c")
        body.append(f"{p}{c} = arith.muli {cb}, {self.const(tc)} : index")
        vc = self.extent(body, p, cols_v, c, tc, "vc") if not (isinstance(k.cols, int) and k.cols % tc == 0) else None
        colblk = Block(self.const(0), None, "1", c, vc, "?" if vc else str(tc))
        dt = n.out.dtype
        acc = self.declare(body, p, n.out.name, self.colvec_type(dt, colblk), None, vc)
        body.append(f"{p}{acc} = texpands {_identity(n.reduce, dt)}")  # type: ignore[arg-type]
        r = "%" + self.fresh("r")
        body.append(f"{p}scf.for {r} = {self.const(0)} to {rows_v} step {self.const(tr)} {{")
        vr = self.extent(body, q, rows_v, r, tr, "vr") if not (isinstance(k.rows, int) and k.rows % tr == 0) else None
        blk = Block(r, vr, "?" if vr else str(tr), c, vc, colblk.vc_s)
        tile = self.declare(body, q, src.name, self.wide_type(src.dtype, blk), vr, vc)
        body.append(f"{q}{tile} = tload {self.gindex(src_place, self.add(base, r, body, q), c, body, q)}")
        part = self.declare(body, q, n.out.name + "_part", self.colvec_type(dt, blk), None, vc)
        body.append(f"{q}{part} = {COL_REDUCE[n.reduce]} {tile}")  # type: ignore[index]
        body.append(f"{q}{acc} = {COMBINE[n.reduce]} {acc}, {part}")  # type: ignore[index]
        body.append(f"{p}}}")
        self.scale_mean(n, acc, body, p)
        body.append(f"{p}tstore {self.gindex(out_place, grp, c, body, p)}, {acc}")
        return self.close(top, body)


class MatmulKernel(Emitter):
    """One output tile per invocation: load A and B panels into mat tiles, move them into the
    cube's left/right tiles, multiply-accumulate over K into the acc tile, store it; vector ops
    fused after it (one-core profiles) run on the acc tile moved to a vector tile."""

    def layout(self, loc: Loc, prefer: str) -> str:
        allowed = [lay.name for lay in self.prof.layouts.get(loc, ())]
        return prefer if prefer in allowed or not allowed else allowed[0]

    def emit(self) -> LoweredKernel:
        k = self.k
        n = k.nodes[0]
        a, b = n.inputs[0].value, n.inputs[1].value
        assert isinstance(a, g.TensorValue) and isinstance(b, g.TensorValue)
        tm, tk, tn = n.tile[0], n.extra["tk"], n.extra["tn"]
        dt = a.dtype
        acc_dt = F32 if dt.is_float else I32     # the cube accumulates in f32 / i32; TSTORE narrows
        c0 = max(1, 32 // dt.itemsize)
        tms, tks, tns = _round_up(tm, 16), _round_up(tk, max(16, c0)), _round_up(tn, 16)
        top: list[str] = []
        body: list[str] = []
        p, q = "    ", "      "
        inv = self.open_invocations(top, body)
        mv, kv, nv = (self.value(d, top) for d in (n.rows, n.extra["k"], n.cols))
        bi, bj = self.split(body, p, inv, self.value(k.grid[1], top))
        r, c = "%" + self.fresh("r"), "%" + self.fresh("c")
        body += [f"{p}{r} = arith.muli {bi}, {self.const(tm)} : index",
                 f"{p}{c} = arith.muli {bj}, {self.const(tn)} : index"]
        vr, vc = self.extent(body, p, mv, r, tm, "vr"), self.extent(body, p, nv, c, tn, "vc")
        left, right, accl = self.layout(Loc.LEFT, "NZ"), self.layout(Loc.RIGHT, "ZN"), self.layout(Loc.ACC, "NZ")
        acc = self.declare(body, p, n.out.name + "_acc",
                           f"!pto.tile<{tms}x{tns}x{acc_dt.name}, loc=acc, layout={accl}, valid=?x?>", vr, vc)
        kx = "%" + self.fresh("k")
        body.append(f"{p}scf.for {kx} = {self.const(0)} to {kv} step {self.const(tk)} {{")
        vk = self.extent(body, q, kv, kx, tk, "vk")
        a_t, b_t = n.extra.get("a_trans"), n.extra.get("b_trans")
        am = self.declare(body, q, a.name + "_mat",
                          f"!pto.tile<{tms}x{tks}x{dt.name}, loc=mat, layout={'ZN' if a_t else 'NZ'}, valid=?x?>",
                          vr, vk)
        bm = self.declare(body, q, b.name + "_mat",
                          f"!pto.tile<{tks}x{tns}x{dt.name}, loc=mat, layout={'ZN' if b_t else 'NZ'}, valid=?x?>",
                          vk, vc)
        lt = self.declare(body, q, a.name + "_left",
                          f"!pto.tile<{tms}x{tks}x{dt.name}, loc=left, layout={left}, valid=?x?>", vr, vk)
        rt = self.declare(body, q, b.name + "_right",
                          f"!pto.tile<{tks}x{tns}x{dt.name}, loc=right, layout={right}, valid=?x?>", vk, vc)
        pa, pb = self.places[a], self.places[b]
        if a_t:      # A stored K x M: its transpose, read column-major (DN -> ZN mat)
            pa = Place(pa.buffer.transpose(), 0, 0, pa.cols, pa.rows)
        if b_t:
            pb = Place(pb.buffer.transpose(), 0, 0, pb.cols, pb.rows)
        body.append(f"{q}{am} = tload {self.gindex(pa, r, kx, body, q)}")
        body.append(f"{q}{bm} = tload {self.gindex(pb, kx, c, body, q)}")
        body += [f"{q}{lt} = tmov {am}", f"{q}{rt} = tmov {bm}"]
        fresh = self.fresh("fresh")
        body += [f"{q}%{fresh} = arith.cmpi eq, {kx}, {self.const(0)} : index",
                 f"{q}scf.if %{fresh} {{", f"{q}  {acc} = tmatmul {lt}, {rt}",
                 f"{q}}} else {{", f"{q}  {acc} = tmatmul_acc {acc}, {lt}, {rt}", f"{q}}}",
                 f"{p}}}"]
        if n.out in k.writes:
            body.append(f"{p}tstore {self.gindex(self.places[n.out], r, c, body, p)}, {acc}")
        if len(k.nodes) > 1:    # vector ops on the output tile (one core: acc -> vec)
            blk = Block(r, vr, "?", c, vc, "?")
            vec = self.declare(body, p, n.out.name, self.wide_type(n.out.dtype, blk), vr, vc)
            body.append(f"{p}{vec} = tmov {acc}")
            env: dict = {n.out: vec}
            for m in k.nodes[1:]:
                self.node(m, blk, env, body, p)
        return self.close(top, body)


class TransposeKernel(Emitter):
    """One tile per invocation: load tile (i, j), TTRANS it, store it at (j, i)."""

    def emit(self) -> LoweredKernel:
        k = self.k
        n = k.nodes[0]
        src = n.inputs[0].value
        assert isinstance(src, g.TensorValue)
        tr, tc = k.tile
        al = self.align(src.dtype)
        trs, tcs = _round_up(tr, al), _round_up(tc, al)
        top: list[str] = []
        body: list[str] = []
        p = "    "
        inv = self.open_invocations(top, body)
        rv, cv = self.value(k.rows, top), self.value(k.cols, top)
        bi, bj = self.split(body, p, inv, self.value(k.grid[1], top))
        r, c = "%" + self.fresh("r"), "%" + self.fresh("c")
        body += [f"{p}{r} = arith.muli {bi}, {self.const(tr)} : index",
                 f"{p}{c} = arith.muli {bj}, {self.const(tc)} : index"]
        vr, vc = self.extent(body, p, rv, r, tr, "vr"), self.extent(body, p, cv, c, tc, "vc")
        dt = src.dtype.name
        a = self.declare(body, p, src.name, f"!pto.tile<{trs}x{tcs}x{dt}, valid=?x?>", vr, vc)
        t = self.declare(body, p, n.out.name, f"!pto.tile<{tcs}x{trs}x{dt}, valid=?x?>", vc, vr)
        body.append(f"{p}{a} = tload {self.gindex(self.places[src], r, c, body, p)}")
        body.append(f"{p}{t} = ttrans {a}")
        body.append(f"{p}tstore {self.gindex(self.places[n.out], c, r, body, p)}, {t}")
        return self.close(top, body)


class TopkKernel(Emitter):
    """A sort plan's kernel (frontend/lower_sort.py) where the tiling made one; otherwise one row
    block of whole rows per invocation and k selection passes, each picking per row the
    best available element (the op table's order: NaN first when largest, last otherwise; equal
    values by the lower index), storing its value and index at column j and marking it taken."""

    def emit(self) -> LoweredKernel:
        k = self.k
        n = k.nodes[0]
        if n.extra.get("sort") is not None:     # planned onto TSORT32 / TMRGSORT (frontend/topksort.py)
            return SortTopkKernel(k, self.part).emit()
        src = n.inputs[0].value
        assert isinstance(src, g.TensorValue)
        idxs: g.TensorValue = n.extra["indices"]
        dt, largest, is_float = src.dtype, n.extra["largest"], src.dtype.is_float
        tr, tc = k.tile
        top: list[str] = []
        body: list[str] = []
        p, q = "    ", "      "
        inv = self.open_invocations(top, body)
        rows_v = self.value(k.rows, top)
        r = "%" + self.fresh("r")
        body.append(f"{p}{r} = arith.muli {inv}, {self.const(tr)} : index")
        vr = self.extent(body, p, rows_v, r, tr, "vr") if not (isinstance(k.rows, int) and k.rows % tr == 0) else None
        vr_s = "?" if vr else str(tr)

        def wide(name: str, d: DType) -> str:
            return self.declare(body, p, name, self.tile_type(tr, tc, d, vr_s, str(tc)), vr, None)

        def rowvec(name: str, d: DType) -> str:
            return self.declare(body, p, name, self.tile_type(tr, 1, d, vr_s, "1"), vr, None)

        x = wide(src.name, dt)
        body.append(f"{p}{x} = tload {self.gindex(self.places[src], r, self.const(0), body, p)}")
        ci = self.declare(body, p, "col", self.tile_type(1, tc, I32, "1", str(tc)), None, None)
        body.append(f"{p}{ci} = tci 0 {{descending = false}}")
        cix, av, zero = wide("colidx", I32), wide("avail", I32), wide("zero", I32)
        body += [f"{p}{cix} = tcolexpand {ci}", f"{p}{av} = texpands 1", f"{p}{zero} = texpands 0"]
        sent, low = wide("sentinel", dt), wide("lowest", dt)
        body += [f"{p}{sent} = texpands {_identity('max' if largest else 'min', dt)}",
                 f"{p}{low} = texpands {_identity('max', dt)}"]
        nan = wide("isnan", I1) if is_float else None
        if nan is not None:
            body.append(f"{p}{nan} = tcmp {x}, {x} {{cmpMode = #pto.cmp<NE>}}")
        avn = wide("avail_num", I32) if is_float else av
        man, cand, mx, e, pp = (wide("usable", I1), wide("cand", dt), wide("best_row", dt), wide("ties", I1),
                                wide("first_of", I32))
        best, anyp, idxp = rowvec("best", dt), rowvec("any_num", I32), rowvec("idx_num", I32)
        ix, oh, v, val = wide("pick_row", I32), wide("pick", I1), wide("picked", dt), rowvec("value", dt)
        if is_float:
            qq, anyq, idxq = wide("nan_of", I32), rowvec("any_nan", I32), rowvec("idx_nan", I32)
            use, idx = rowvec("use", I1), rowvec("index", I32)
        j = "%" + self.fresh("j")
        body.append(f"{p}scf.for {j} = {self.const(0)} to {self.const(n.extra['k'])} step {self.const(1)} {{")
        if is_float:      # NaNs take no part in the numeric choice
            body.append(f"{q}{avn} = tsel {nan}, {zero}, {av}")
        body += [f"{q}{man} = tcmps {avn}, 0 {{cmpMode = #pto.cmp<NE>}}",
                 f"{q}{cand} = tsel {man}, {x}, {sent}",
                 f"{q}{best} = {'trowmax' if largest else 'trowmin'} {cand}",
                 f"{q}{mx} = trowexpand {best}",
                 f"{q}{e} = tcmp {cand}, {mx} {{cmpMode = #pto.cmp<EQ>}}",
                 f"{q}{pp} = tsel {e}, {avn}, {zero}",
                 f"{q}{anyp}, {idxp} = trowargmax {pp}"]          # the first available best value
        if is_float:
            body += [f"{q}{qq} = tsel {nan}, {av}, {zero}",
                     f"{q}{anyq}, {idxq} = trowargmax {qq}"]      # the first available NaN
            body += ([f"{q}{use} = tcmps {anyq}, 0 {{cmpMode = #pto.cmp<NE>}}", f"{q}{idx} = tsel {use}, {idxq}, {idxp}"]
                     if largest else
                     [f"{q}{use} = tcmps {anyp}, 0 {{cmpMode = #pto.cmp<NE>}}", f"{q}{idx} = tsel {use}, {idxp}, {idxq}"])
        else:
            idx = idxp
        body += [f"{q}{ix} = trowexpand {idx}",
                 f"{q}{oh} = tcmp {cix}, {ix} {{cmpMode = #pto.cmp<EQ>}}",
                 f"{q}{v} = tsel {oh}, {x}, {low}",
                 f"{q}{val} = trowmax {v}",                       # the picked element, bit for bit
                 f"{q}{av} = tsel {oh}, {zero}, {av}",
                 f"{q}tstore {self.gindex(self.places[n.out], r, j, body, q)}, {val}",
                 f"{q}tstore {self.gindex(self.places[idxs], r, j, body, q)}, {idx}",
                 f"{p}}}"]
        return self.close(top, body)


class GatherKernel(Emitter):
    """One block of output rows per invocation: the index row's slice loaded as a 1 x rows tile,
    MGATHER in ROW mode picks those table rows into a tile (an index outside the table reads
    zeros: oobMode ZERO), the tile is stored."""

    def emit(self) -> LoweredKernel:
        k = self.k
        n = k.nodes[0]
        table, index = (a.value for a in n.inputs)
        assert isinstance(table, g.TensorValue) and isinstance(index, g.TensorValue)
        tr, tc = k.tile
        top: list[str] = []
        body: list[str] = []
        p = "    "
        inv = self.open_invocations(top, body)
        rows_v = self.value(k.rows, top)
        r = "%" + self.fresh("r")
        body.append(f"{p}{r} = arith.muli {inv}, {self.const(tr)} : index")
        vr = self.extent(body, p, rows_v, r, tr, "vr") if not (isinstance(k.rows, int) and k.rows % tr == 0) else None
        vr_s = "?" if vr else str(tr)
        idx = self.declare(body, p, index.name, self.tile_type(1, tr, I32, "1", vr_s), None, vr)
        body.append(f"{p}{idx} = tload {self.gindex(self.places[index], self.const(0), r, body, p)}")
        dst = self.declare(body, p, n.out.name, self.tile_type(tr, tc, n.out.dtype, vr_s, str(tc)), vr, None)
        c0 = self.const(0)
        body.append(f"{p}{dst} = mgather {self.buffer(self.places[table].buffer)}[{c0}, {c0}], {idx} "
                    "{indexMode = #pto.index_mode<ROW>, oobMode = #pto.oob<ZERO>}")
        body.append(f"{p}tstore {self.gindex(self.places[n.out], r, c0, body, p)}, {dst}")
        return self.close(top, body)


KERNELS = {"topk": TopkKernel, "grid": RowKernel, "rows": RowKernel, "colloop": RowKernel, "colreduce": ColReduceKernel,
           "matmul": MatmulKernel, "transpose": TransposeKernel, "gather": GatherKernel}


def lower_kernel(k: Kernel, part: Partition) -> LoweredKernel:
    """One kernel's PTO-AS text and parameters."""
    return KERNELS[k.mode](k, part).emit()


def lower(part: Partition) -> Lowered:
    """Every distinct kernel of ``part`` as PTO-AS; an isomorphic kernel runs the code of the
    first of its kind with its own arguments (``Lowered.code`` maps each kernel to its code and
    ``Lowered.params`` to the arguments it passes)."""
    out = Lowered([])
    for k in part.kernels():
        lk = lower_kernel(k, part)
        out.params[k.index] = lk.params
        if k.shares is not None:
            shared = out.code[k.shares.index]
            if len(shared.params) != len(lk.params):   # pragma: no cover - the hash covers the params
                raise AssertionError(f"{k.name} is not isomorphic to {shared.name}")
            out.code[k.index] = shared
            continue
        out.kernels.append(lk)
        out.code[k.index] = lk
    return out
